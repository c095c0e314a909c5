//! Small typed readers over a parsed TOML table, shared by the marker and config parsers.
//! Each returns a message fragment that the caller prefixes with the file it was reading.

use toml::{Table, Value};

/// Rejects any key not in `known`.
pub(super) fn reject_unknown_keys(table: &Table, known: &[&str]) -> Result<(), String> {
    match table.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!("unknown key `{key}`")),
        None => Ok(()),
    }
}

/// Checks the optional `schema` key: absent or `1` is accepted; anything else is returned
/// as its TOML spelling.
pub(super) fn unsupported_schema(table: &Table) -> Option<String> {
    match table.get("schema") {
        None | Some(Value::Integer(1)) => None,
        Some(other) => Some(other.to_string()),
    }
}

/// A required string that must not be blank.
pub(super) fn required_text(table: &Table, key: &str) -> Result<String, String> {
    match table.get(key) {
        None => Err(format!("missing `{key}`")),
        Some(Value::String(text)) if text.trim().is_empty() => Err(format!("`{key}` must not be blank")),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// An optional array of strings; absent means empty.
pub(super) fn string_list(table: &Table, key: &str) -> Result<Vec<String>, String> {
    match table.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                _ => Err(format!("`{key}` must be an array of strings")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an array of strings")),
    }
}

/// A TOML basic or literal string literal for `text`, for writing files by hand.
pub(super) fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}
