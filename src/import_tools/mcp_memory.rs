//! The MCP reference memory server's `memory.jsonl`: one JSON object per line, either
//! `{"type":"entity","name","entityType","observations":[…]}` or
//! `{"type":"relation","from","to","relationType"}`.
//!
//! An entity becomes an artifact whose content is its observations, one per line, and each
//! observation a `fact` claim citing exactly its line. A relation becomes a relation between
//! the two entities' artifacts (see the driver for the type mapping).

use serde::Deserialize;
use serde_json::Value;

use super::{ClaimSpec, Format, Issue, Item, RelationSpec, Source, base_provenance, text};
use crate::protocol::claim::ClaimType;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entity {
    name: String,
    entity_type: String,
    observations: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Relation {
    from: String,
    to: String,
    relation_type: String,
}

/// Reads one `memory.jsonl`.
pub fn read(file: &str, bytes: &[u8], source: &mut Source) {
    let mut seen = std::collections::HashSet::new();
    // Invalid UTF-8 spoils only its own line.
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let number = index as u64 + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let issue = |message: String| Issue::at(file, Some(number), message);
        let line = match std::str::from_utf8(raw) {
            Ok(line) => line,
            Err(e) => {
                source
                    .issues
                    .push(issue(format!("invalid UTF-8 at column {}", e.valid_up_to() + 1)));
                continue;
            }
        };
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(e) => {
                source.issues.push(issue(format!("bad JSON: {e}")));
                continue;
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some("entity") => match serde_json::from_value::<Entity>(value) {
                Ok(entity) if !seen.insert(entity.name.clone()) => {
                    source.issues.push(issue(format!("duplicate entity {:?}", entity.name)));
                }
                Ok(entity) => source.items.push(item(file, number, entity)),
                Err(e) => source.issues.push(issue(format!("entity: {e}"))),
            },
            Some("relation") => match serde_json::from_value::<Relation>(value) {
                Ok(relation) => source.relations.push(RelationSpec {
                    from: relation.from,
                    to: relation.to,
                    relation_type: relation.relation_type,
                    file: file.to_owned(),
                    line: number,
                }),
                Err(e) => source.issues.push(issue(format!("relation: {e}"))),
            },
            Some(other) => source.issues.push(issue(format!("unknown type {other:?}"))),
            None => source.issues.push(issue("missing field `type`".to_owned())),
        }
    }
}

fn item(file: &str, line: u64, entity: Entity) -> Item {
    let mut content = String::new();
    let mut claims = Vec::with_capacity(entity.observations.len());
    for observation in &entity.observations {
        let start = content.len() as u64;
        content.push_str(observation);
        if !observation.trim().is_empty() {
            claims.push(ClaimSpec {
                claim_type: ClaimType::Fact,
                statement: observation.clone(),
                span: Some((start, content.len() as u64)),
            });
        }
        content.push('\n');
    }
    let mut provenance = base_provenance(Format::McpMemory, file, line);
    provenance.insert("source_id".to_owned(), Value::from(entity.name.as_str()));
    provenance.insert("entity_type".to_owned(), Value::from(entity.entity_type.as_str()));
    Item {
        key: format!("{}:{file}#{}", Format::McpMemory, entity.name),
        aliases: vec![entity.name.clone()],
        file: file.to_owned(),
        line,
        kind: "entity".to_owned(),
        title: text::short_title(&entity.name, 512),
        media_type: "text/plain; charset=utf-8".to_owned(),
        content,
        provenance,
        claims,
        project: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_become_lines_and_each_observation_cites_its_line() {
        let jsonl = concat!(
            r#"{"type":"entity","name":"Ada","entityType":"person","observations":["Writes Rust","Lives in Zürich"]}"#,
            "\n",
            r#"{"type":"relation","from":"Ada","to":"Memoree","relationType":"works_on"}"#,
            "\n\n{bad json\n",
            r#"{"type":"entity","name":"X","observations":[]}"#,
            "\n"
        );
        let mut source = Source::default();
        read("m.jsonl", jsonl.as_bytes(), &mut source);
        assert_eq!(source.items.len(), 1);
        let ada = &source.items[0];
        assert_eq!(ada.content, "Writes Rust\nLives in Zürich\n");
        for claim in &ada.claims {
            let (start, end) = claim.span.unwrap();
            assert_eq!(&ada.content[start as usize..end as usize], claim.statement);
        }
        assert_eq!(source.relations[0].relation_type, "works_on");
        let lines: Vec<_> = source.issues.iter().map(|i| i.line).collect();
        assert_eq!(lines, [Some(4), Some(5)]);
        assert!(source.issues[1].message.contains("entityType"), "{:?}", source.issues);
    }
}
