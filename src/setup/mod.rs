//! `memoree setup HOST`: the MCP server entry for `memoree mcp` in an MCP host's config file,
//! merged into what is there (one file per host family: [`json`] for the JSON hosts, [`codex`]
//! for Codex's TOML), plus the agent-instructions block of `--instructions`.
//!
//! Where each file lives comes from [`HostEnv`] (`HOME`, `XDG_CONFIG_HOME`, `APPDATA`,
//! `CODEX_HOME`), so tests point it at a temporary home; `--config` names the file outright.
//! Nothing here talks to the daemon: the CLI (`cli/cmd/setup.rs`) fetches the instructions.

pub mod codex;
pub mod json;

use std::path::{Path, PathBuf};

use self::json::Json;

crate::wire_enum! {
    /// An MCP host `memoree setup` configures.
    pub enum Host {
        ClaudeCode = "claude-code",
        Cursor = "cursor",
        Codex = "codex",
        Vscode = "vscode",
        ClaudeDesktop = "claude-desktop",
    }
}

/// The environment that locates the hosts' files.
#[derive(Clone, Debug, Default)]
pub struct HostEnv {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub appdata: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
}

impl HostEnv {
    pub fn from_process() -> HostEnv {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        HostEnv {
            home: var("HOME").or_else(|| var("USERPROFILE")),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            appdata: var("APPDATA"),
            codex_home: var("CODEX_HOME"),
        }
    }

    fn home(&self) -> Result<&Path, String> {
        self.home
            .as_deref()
            .ok_or_else(|| "HOME is not set; pass --config PATH".to_owned())
    }
}

impl Host {
    /// Whether the host's file belongs to a project (and `--user` moves it to the user's).
    pub fn project_scoped(self, user: bool) -> bool {
        !user && matches!(self, Host::ClaudeCode | Host::Cursor | Host::Vscode)
    }

    /// The instructions file `--instructions` writes, and the `instructions` format for it.
    pub fn instructions(self) -> (&'static str, crate::protocol::admin::InstructionsFormat) {
        use crate::protocol::admin::InstructionsFormat;
        match self {
            Host::ClaudeCode | Host::ClaudeDesktop => ("CLAUDE.md", InstructionsFormat::ClaudeMd),
            Host::Cursor | Host::Codex | Host::Vscode => ("AGENTS.md", InstructionsFormat::AgentsMd),
        }
    }

    /// The config file for this host.
    pub fn config_path(self, user: bool, project: &Path, env: &HostEnv) -> Result<PathBuf, String> {
        Ok(match (self, user) {
            (Host::ClaudeCode, false) => project.join(".mcp.json"),
            (Host::ClaudeCode, true) => env.home()?.join(".claude.json"),
            (Host::Cursor, false) => project.join(".cursor/mcp.json"),
            (Host::Cursor, true) => env.home()?.join(".cursor/mcp.json"),
            (Host::Vscode, false) => project.join(".vscode/mcp.json"),
            (Host::Vscode, true) => {
                return Err("VS Code keeps user-level MCP servers in its profile; run without --user".to_owned());
            }
            (Host::Codex, _) => match &env.codex_home {
                Some(dir) => dir.join("config.toml"),
                None => env.home()?.join(".codex/config.toml"),
            },
            (Host::ClaudeDesktop, _) => claude_desktop_dir(env)?.join("claude_desktop_config.json"),
        })
    }
}

/// Claude Desktop's configuration directory on this OS.
fn claude_desktop_dir(env: &HostEnv) -> Result<PathBuf, String> {
    if cfg!(target_os = "macos") {
        Ok(env.home()?.join("Library/Application Support/Claude"))
    } else if cfg!(windows) {
        env.appdata
            .as_ref()
            .map(|dir| dir.join("Claude"))
            .ok_or_else(|| "APPDATA is not set; pass --config PATH".to_owned())
    } else {
        match &env.xdg_config_home {
            Some(dir) => Ok(dir.join("Claude")),
            None => Ok(env.home()?.join(".config/Claude")),
        }
    }
}

/// What setup would write: the file's text before and after, and the entry alone.
#[derive(Clone, Debug)]
pub struct Plan {
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: String,
    pub snippet: String,
}

impl Plan {
    pub fn changes(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }
}

/// The edit of `path` (read if it exists) that registers `command mcp` for `host`.
pub fn plan(host: Host, path: &Path, command: &str) -> Result<Plan, String> {
    let before = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if host == Host::Codex {
        let after = codex::merge(before.as_deref().unwrap_or(""), command)?;
        return Ok(Plan {
            path: path.to_path_buf(),
            before,
            after,
            snippet: codex::snippet(command),
        });
    }
    let (section, entry) = json_entry(host, command);
    let mut root = match before.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(text) => {
            serde_json::from_str::<Json>(text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?
        }
        None => Json::Object(Vec::new()),
    };
    let mut alone = Json::Object(Vec::new());
    json::merge_server(&mut alone, section, entry.clone())?;
    json::merge_server(&mut root, section, entry)?;
    let mut after = root.to_pretty();
    // Unchanged content keeps the file byte for byte (its own indentation included).
    if let Some(text) = &before
        && serde_json::from_str::<Json>(text).is_ok_and(|old| old == root)
    {
        after = text.clone();
    }
    Ok(Plan {
        path: path.to_path_buf(),
        before,
        after,
        snippet: alone.to_pretty(),
    })
}

/// The top-level section and the server entry of a JSON host.
fn json_entry(host: Host, command: &str) -> (&'static str, Vec<(String, Json)>) {
    let args = ("args".to_owned(), Json::Array(vec![Json::String("mcp".to_owned())]));
    let command = ("command".to_owned(), Json::String(command.to_owned()));
    match host {
        Host::Vscode => (
            "servers",
            vec![("type".to_owned(), Json::String("stdio".to_owned())), command, args],
        ),
        _ => ("mcpServers", vec![command, args]),
    }
}

/// Writes the plan's text, keeping an existing file's permissions.
pub fn write(plan: &Plan) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", plan.path.display());
    if let Some(parent) = plan.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
    }
    let permissions = std::fs::metadata(&plan.path).ok().map(|m| m.permissions());
    crate::fsutil::write_atomic_default_mode(&plan.path, plan.after.as_bytes(), true).map_err(|e| fail(&e))?;
    if let Some(permissions) = permissions {
        std::fs::set_permissions(&plan.path, permissions).map_err(|e| fail(&e))?;
    }
    Ok(())
}

/// The markers around the instructions block `--instructions` maintains.
pub const BEGIN_MARKER: &str = "<!-- memoree:instructions:begin (managed by `memoree setup --instructions`) -->";
pub const END_MARKER: &str = "<!-- memoree:instructions:end -->";

/// `existing` with the block between the markers replaced by `instructions`, or the block
/// appended when there is none.
pub fn splice_instructions(existing: Option<&str>, instructions: &str) -> String {
    let block = format!("{BEGIN_MARKER}\n{}\n{END_MARKER}\n", instructions.trim_end());
    let Some(existing) = existing.filter(|t| !t.is_empty()) else {
        return block;
    };
    if let Some(start) = existing.find(BEGIN_MARKER)
        && let Some(end) = existing[start..].find(END_MARKER).map(|e| start + e + END_MARKER.len())
    {
        let rest = existing[end..].strip_prefix('\n').unwrap_or(&existing[end..]);
        return format!("{}{block}{rest}", &existing[..start]);
    }
    let separator = if existing.ends_with("\n\n") {
        ""
    } else if existing.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{existing}{separator}{block}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_appended_once_and_replaced_on_rerun() {
        let first = splice_instructions(Some("# Project\n"), "v1");
        assert_eq!(first, format!("# Project\n\n{BEGIN_MARKER}\nv1\n{END_MARKER}\n"));
        let edited = format!("{first}\n## Mine\n");
        let second = splice_instructions(Some(&edited), "v2\n");
        assert_eq!(
            second,
            format!("# Project\n\n{BEGIN_MARKER}\nv2\n{END_MARKER}\n\n## Mine\n")
        );
        assert_eq!(splice_instructions(Some(&second), "v2"), second);
    }

    #[test]
    fn each_host_has_its_file() {
        let env = HostEnv {
            home: Some(PathBuf::from("/h")),
            xdg_config_home: None,
            appdata: None,
            codex_home: None,
        };
        let p = Path::new("/p");
        assert_eq!(
            Host::ClaudeCode.config_path(false, p, &env).unwrap(),
            Path::new("/p/.mcp.json")
        );
        assert_eq!(
            Host::ClaudeCode.config_path(true, p, &env).unwrap(),
            Path::new("/h/.claude.json")
        );
        assert_eq!(
            Host::Cursor.config_path(false, p, &env).unwrap(),
            Path::new("/p/.cursor/mcp.json")
        );
        assert_eq!(
            Host::Vscode.config_path(false, p, &env).unwrap(),
            Path::new("/p/.vscode/mcp.json")
        );
        assert_eq!(
            Host::Codex.config_path(false, p, &env).unwrap(),
            Path::new("/h/.codex/config.toml")
        );
        if cfg!(target_os = "linux") {
            assert_eq!(
                Host::ClaudeDesktop.config_path(false, p, &env).unwrap(),
                Path::new("/h/.config/Claude/claude_desktop_config.json")
            );
        }
    }
}
