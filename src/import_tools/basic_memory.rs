//! basic-memory: a directory of Markdown notes with front matter (`title`, `type`,
//! `permalink`, `tags`). Observations are list items `- [category] text #tag`; relations are
//! list items `- relation_type [[Target]]`.
//!
//! A note becomes an artifact (its exact bytes), each observation a claim citing its line
//! (the category picks the claim type), and each relation a relation between the notes'
//! artifacts. A target no note answers to (by title, permalink or file name) is reported.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::markdown::bullet_text;
use super::{ClaimSpec, Format, Issue, Item, RelationSpec, Source, base_provenance, text};
use crate::protocol::claim::ClaimType;

/// Reads every note under `path` (or the one note `path` names).
pub fn read(path: &Path, source: &mut Source) {
    let (files, root) = super::files_under(path, walk);
    for file in files {
        let name = file.display().to_string();
        let relative = file.strip_prefix(root).unwrap_or(&file).with_extension("");
        match std::fs::read(&file) {
            Ok(bytes) => note(&name, &relative.display().to_string(), &bytes, source),
            Err(e) => source.issues.push(Issue::at(&name, None, format!("cannot read: {e}"))),
        }
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        match entry.file_type() {
            Ok(kind) if kind.is_dir() && !hidden => walk(&path, files),
            Ok(kind) if kind.is_file() && path.extension().is_some_and(|e| e == "md") => files.push(path),
            _ => {}
        }
    }
}

/// The claim type of an observation category.
fn claim_type(category: &str) -> ClaimType {
    match category.to_ascii_lowercase().as_str() {
        "fact" | "facts" => ClaimType::Fact,
        "decision" | "decisions" => ClaimType::Decision,
        "constraint" | "requirement" | "rule" => ClaimType::Constraint,
        "preference" | "preferences" => ClaimType::Preference,
        "procedure" | "howto" | "how-to" | "technique" | "method" => ClaimType::Procedure,
        _ => ClaimType::Observation,
    }
}

fn note(file: &str, relative: &str, bytes: &[u8], source: &mut Source) {
    let content = match text::utf8(bytes, file) {
        Ok(content) => content,
        Err(issue) => return source.issues.push(issue),
    };
    let front = match text::front_matter(content, file) {
        Ok(front) => front,
        Err(issue) => return source.issues.push(issue),
    };
    let stem = Path::new(relative)
        .file_name()
        .map_or(relative.to_owned(), |n| n.to_string_lossy().into_owned());
    let title = front.str("title").map_or_else(|| stem.clone(), str::to_owned);
    let mut aliases = vec![title.clone(), stem, relative.to_owned()];
    if let Some(permalink) = front.str("permalink") {
        aliases.push(permalink.to_owned());
    }
    let mut claims = Vec::new();
    let mut fenced = false;
    for line in text::lines(content).filter(|l| l.number >= front.body_line) {
        if line.text.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(item) = bullet_text(line.text).filter(|_| !fenced) else {
            continue;
        };
        if let Some(rest) = item.strip_prefix('[')
            && let Some((category, statement)) = rest.split_once(']')
            && !statement.trim().is_empty()
        {
            claims.push(ClaimSpec {
                claim_type: claim_type(category.trim()),
                statement: statement.trim().to_owned(),
                span: Some(line.span()),
            });
        } else if let Some((relation_type, target)) = item.split_once(' ')
            && let Some(target) = target.trim().strip_prefix("[[").and_then(|t| t.split_once("]]"))
        {
            source.relations.push(RelationSpec {
                from: title.clone(),
                to: target.0.trim().to_owned(),
                relation_type: relation_type.to_owned(),
                file: file.to_owned(),
                line: line.number,
            });
        }
    }
    let mut provenance = base_provenance(Format::BasicMemory, file, 1);
    if let Some(permalink) = front.str("permalink") {
        provenance.insert("source_id".to_owned(), Value::from(permalink));
    }
    if !front.fields.is_empty() {
        provenance.insert("front_matter".to_owned(), Value::Object(front.fields.clone()));
    }
    source.items.push(Item {
        key: format!("{}:{file}", Format::BasicMemory),
        aliases,
        file: file.to_owned(),
        line: 1,
        kind: front.str("type").unwrap_or("note").chars().take(64).collect(),
        title: text::short_title(&title, 512),
        media_type: "text/markdown; charset=utf-8".to_owned(),
        content: content.to_owned(),
        provenance,
        claims,
        project: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_become_claims_on_their_line_and_wikilinks_relations() {
        let note_text = "---\ntitle: Search Design\ntype: note\npermalink: search-design\ntags: [search]\n---\n\
                         # Search Design\n\n## Observations\n- [decision] Use BM25 with recency #search\n\
                         - [idea] Try typo correction\n\n## Relations\n- implements [[Search Spec]]\n\
                         - relates_to [[Ranking]]\n";
        let mut source = Source::default();
        note("/n/search.md", "search", note_text.as_bytes(), &mut source);
        let item = &source.items[0];
        assert_eq!(item.title, "Search Design");
        assert!(item.aliases.contains(&"search-design".to_owned()));
        assert_eq!(item.claims.len(), 2);
        assert_eq!(item.claims[0].claim_type, ClaimType::Decision);
        assert_eq!(item.claims[0].statement, "Use BM25 with recency #search");
        let (s, e) = item.claims[0].span.unwrap();
        assert_eq!(
            &note_text[s as usize..e as usize],
            "- [decision] Use BM25 with recency #search"
        );
        assert_eq!(item.claims[1].claim_type, ClaimType::Observation);
        assert_eq!(source.relations.len(), 2);
        assert_eq!(source.relations[0].to, "Search Spec");
        assert_eq!(source.relations[1].relation_type, "relates_to");
        assert_eq!(source.relations[1].line, 15);
    }
}
