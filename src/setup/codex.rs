//! Codex's `config.toml`: `[mcp_servers.memoree]` with `command` and `args = ["mcp"]`, set
//! with `toml_edit` so every other table, comment and blank line stays as written.

use toml_edit::{Array, DocumentMut, Item, Table, value};

/// `text` with the memoree server entry set (other keys of the entry, such as `env`, kept).
pub fn merge(text: &str, command: &str) -> Result<String, String> {
    let mut document: DocumentMut = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    let servers = document
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or("`mcp_servers` is not a table")?;
    let server = servers
        .entry("memoree")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or("`mcp_servers.memoree` is not a table")?;
    if server.get("command").and_then(Item::as_str) != Some(command) {
        server["command"] = value(command);
    }
    let args_are_mcp = server
        .get("args")
        .and_then(Item::as_array)
        .is_some_and(|args| args.len() == 1 && args.get(0).and_then(|a| a.as_str()) == Some("mcp"));
    if !args_are_mcp {
        server["args"] = value(Array::from_iter(["mcp"]));
    }
    Ok(document.to_string())
}

/// The snippet `--print` shows: the entry alone.
pub fn snippet(command: &str) -> String {
    merge("", command).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_is_added_without_touching_comments_or_other_servers() {
        let text = "# my settings\nmodel = \"o3\"  # keep\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let merged = merge(text, "/usr/bin/memoree").unwrap();
        assert!(merged.starts_with(text), "{merged}");
        assert!(merged.contains("[mcp_servers.memoree]\ncommand = \"/usr/bin/memoree\"\nargs = [\"mcp\"]\n"));
        assert_eq!(merge(&merged, "/usr/bin/memoree").unwrap(), merged);
        assert_eq!(
            toml::from_str::<toml::Table>(&snippet("/a b/memoree")).unwrap()["mcp_servers"]["memoree"]["command"]
                .as_str(),
            Some("/a b/memoree")
        );
    }
}
