//! A Mem0 export: a JSON array, or `{"results": […]}`, of
//! `{"id","memory","hash","metadata","created_at","updated_at","user_id","agent_id","run_id"}`.
//!
//! Each memory becomes an artifact holding the memory text and one `fact` claim citing the
//! whole revision. The ids and timestamps go into provenance.

use serde_json::Value;

use super::{ClaimSpec, Format, Issue, Item, ReadOptions, Source, base_provenance, text};
use crate::protocol::claim::ClaimType;

/// Provenance fields copied as they are.
const KEPT: &[&str] = &["hash", "metadata", "user_id", "agent_id", "run_id", "categories"];

/// Reads one export file.
pub fn read(file: &str, bytes: &[u8], options: &ReadOptions, source: &mut Source) {
    let text = match text::utf8(bytes, file) {
        Ok(text) => text,
        Err(issue) => return source.issues.push(issue),
    };
    let document: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return source
                .issues
                .push(Issue::at(file, Some(e.line() as u64), format!("bad JSON: {e}")));
        }
    };
    let (memories, nested) = match document {
        Value::Array(items) => (items, false),
        Value::Object(mut object) => match object.remove("results") {
            Some(Value::Array(items)) => (items, true),
            _ => {
                return source
                    .issues
                    .push(Issue::at(file, Some(1), "expected an array or {\"results\": [...]}"));
            }
        },
        _ => {
            return source
                .issues
                .push(Issue::at(file, Some(1), "expected an array or {\"results\": [...]}"));
        }
    };
    let starts = element_lines(text, nested);
    for (index, memory) in memories.into_iter().enumerate() {
        let line = starts.get(index).copied().unwrap_or(1);
        match item(file, line, memory, options) {
            Ok(item) => source.items.push(item),
            Err(message) => {
                source
                    .issues
                    .push(Issue::at(file, Some(line), format!("memory #{}: {message}", index + 1)))
            }
        }
    }
}

fn item(file: &str, line: u64, memory: Value, options: &ReadOptions) -> Result<Item, String> {
    let Value::Object(memory) = memory else {
        return Err("not an object".to_owned());
    };
    let id = match memory.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("missing field `id`".to_owned()),
    };
    let Some(text) = memory.get("memory").and_then(Value::as_str) else {
        return Err("missing field `memory`".to_owned());
    };
    if text.trim().is_empty() {
        return Err("empty `memory`".to_owned());
    }
    let mut provenance = base_provenance(Format::Mem0, file, line);
    provenance.insert("source_id".to_owned(), Value::from(id.as_str()));
    for (from, to) in [("created_at", "source_created_at"), ("updated_at", "source_updated_at")] {
        if let Some(value) = memory.get(from).filter(|v| !v.is_null()) {
            provenance.insert(to.to_owned(), value.clone());
        }
    }
    for key in KEPT {
        if let Some(value) = memory.get(*key).filter(|v| !v.is_null()) {
            provenance.insert((*key).to_owned(), value.clone());
        }
    }
    let project = match memory.get("user_id").and_then(Value::as_str) {
        Some(user) if options.map_user_to_project && !user.is_empty() => Some(user.to_owned()),
        _ => None,
    };
    Ok(Item {
        key: format!("{}:{file}#{id}", Format::Mem0),
        aliases: vec![id],
        file: file.to_owned(),
        line,
        kind: "memory".to_owned(),
        title: text::short_title(text, 120),
        media_type: "text/plain; charset=utf-8".to_owned(),
        content: text.to_owned(),
        provenance,
        claims: vec![ClaimSpec {
            claim_type: ClaimType::Fact,
            statement: text.to_owned(),
            span: None,
        }],
        project,
    })
}

/// The 1-based line on which each element of the top-level array (or of the array of the
/// top-level object, when `nested`) starts.
fn element_lines(text: &str, nested: bool) -> Vec<u64> {
    let target_depth = if nested { 2 } else { 1 };
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1u64, false, false);
    let mut expecting = false;
    let mut starts = Vec::new();
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if expecting && !c.is_whitespace() && c != ']' {
            starts.push(line);
            expecting = false;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if c == '[' && depth == target_depth {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == target_depth => expecting = true,
            _ => {}
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_memory_is_one_artifact_with_a_whole_revision_fact() {
        let json = r#"{"results": [
  {"id": "m1", "memory": "Prefers dark mode", "user_id": "alice", "created_at": "2025-01-02T03:04:05Z"},
  {"id": "m2", "hash": "h"},
  {"id": "m3", "memory": "Uses \"vim\" [really]", "user_id": "bob"}
]}"#;
        let mut source = Source::default();
        let options = ReadOptions {
            map_user_to_project: true,
            ..ReadOptions::default()
        };
        read("mem0.json", json.as_bytes(), &options, &mut source);
        assert_eq!(source.items.len(), 2);
        assert_eq!(source.items[0].provenance["user_id"], "alice");
        assert_eq!(source.items[0].provenance["source_created_at"], "2025-01-02T03:04:05Z");
        assert_eq!(source.items[1].project.as_deref(), Some("bob"));
        assert_eq!(source.items[1].line, 4);
        assert_eq!(source.issues.len(), 1);
        assert_eq!(source.issues[0].line, Some(3));
        assert!(source.issues[0].message.contains("memory"));
    }
}
