//! Markdown: `CLAUDE.md`, `AGENTS.md`, `MEMORY.md`, `.cursor/rules/*.mdc`, or any Markdown
//! file or directory. One artifact per file holding its exact bytes; YAML front matter is kept
//! as provenance (`front_matter`). With `--claims bullets` every list item, with
//! `--claims headings` every heading's section, becomes a `fact` quoting its span.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::text::{self, Line};
use super::{ClaimSpec, Format, Issue, Item, MarkdownClaims, ReadOptions, Source, base_provenance};
use crate::protocol::claim::ClaimType;
use crate::protocol::limits::MAX_CLAIM_STATEMENT_BYTES;

/// Extensions a directory walk picks up.
const EXTENSIONS: &[&str] = &["md", "mdc", "markdown"];
/// Directories a walk never enters.
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target", ".venv", "vendor"];

/// Reads a Markdown file, or every Markdown file under a directory.
pub fn read(path: &Path, options: &ReadOptions, source: &mut Source) {
    let (files, root) = super::files_under(path, walk);
    for file in files {
        let name = file.display().to_string();
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                source.issues.push(Issue::at(&name, None, format!("cannot read: {e}")));
                continue;
            }
        };
        let relative = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        match item(&name, &relative, &bytes, options.markdown_claims) {
            Ok(item) => source.items.push(item),
            Err(issue) => source.issues.push(issue),
        }
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            let hidden = name.starts_with('.') && name != ".cursor" && name != "rules";
            if !hidden && !SKIPPED_DIRS.contains(&name.as_ref()) {
                walk(&path, files);
            }
        } else if kind.is_file()
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        {
            files.push(path);
        }
    }
}

/// The artifact kind a file name suggests.
fn kind(relative: &str) -> &'static str {
    let name = Path::new(relative).file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        "CLAUDE.md" | "AGENTS.md" | "CLAUDE.local.md" => "instructions",
        "MEMORY.md" => "memory",
        _ if name.ends_with(".mdc") => "rule",
        _ => "document",
    }
}

pub(crate) fn item(file: &str, relative: &str, bytes: &[u8], claims: Option<MarkdownClaims>) -> Result<Item, Issue> {
    let content = text::utf8(bytes, file)?;
    let front = text::front_matter(content, file)?;
    let mut provenance = base_provenance(Format::Markdown, file, 1);
    if !front.fields.is_empty() {
        provenance.insert("front_matter".to_owned(), Value::Object(front.fields.clone()));
    }
    let body: Vec<Line<'_>> = text::lines(content).filter(|l| l.number >= front.body_line).collect();
    let claims = match claims {
        None => Vec::new(),
        Some(MarkdownClaims::Bullets) => bullets(&body),
        Some(MarkdownClaims::Headings) => sections(content, &body),
    };
    let title = front
        .str("title")
        .or_else(|| front.str("description"))
        .map(|t| text::short_title(t, 512))
        .unwrap_or_else(|| relative.to_owned());
    Ok(Item {
        key: format!("{}:{file}", Format::Markdown),
        aliases: vec![relative.to_owned()],
        file: file.to_owned(),
        line: 1,
        kind: kind(relative).to_owned(),
        title,
        media_type: "text/markdown; charset=utf-8".to_owned(),
        content: content.to_owned(),
        provenance,
        claims,
        project: None,
    })
}

/// Lines outside fenced code blocks.
fn prose<'a, 'b>(body: &'b [Line<'a>]) -> impl Iterator<Item = &'b Line<'a>> {
    let mut fenced = false;
    body.iter().filter(move |line| {
        let trimmed = line.text.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The text of a list item line after its marker (`-`, `*`, `+`, `1.` or `1)`).
pub(crate) fn bullet_text(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let rest = if let Some(rest) = trimmed.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = trimmed.len() - trimmed.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 9 {
            return None;
        }
        trimmed[digits..].strip_prefix(['.', ')'])?
    };
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim();
    (!text.is_empty()).then_some(text)
}

fn bullets(body: &[Line<'_>]) -> Vec<ClaimSpec> {
    prose(body)
        .filter_map(|line| {
            let text = bullet_text(line.text)?;
            Some(ClaimSpec {
                claim_type: ClaimType::Fact,
                statement: text.to_owned(),
                span: Some(line.span_of(text)),
            })
        })
        .collect()
}

/// One claim per heading: the heading line through the line before the next heading.
fn sections(content: &str, body: &[Line<'_>]) -> Vec<ClaimSpec> {
    let headings: Vec<&Line<'_>> = prose(body)
        .filter(|line| {
            let hashes = line.text.len() - line.text.trim_start_matches('#').len();
            (1..=6).contains(&hashes) && line.text[hashes..].starts_with([' ', '\t'])
        })
        .collect();
    let mut claims = Vec::new();
    for (index, heading) in headings.iter().enumerate() {
        let end = headings.get(index + 1).map_or(content.len(), |next| next.start);
        let section = content[heading.start..end].trim_end();
        if section.is_empty() || section.len() > MAX_CLAIM_STATEMENT_BYTES {
            continue;
        }
        claims.push(ClaimSpec {
            claim_type: ClaimType::Fact,
            statement: section.to_owned(),
            span: Some((heading.start as u64, (heading.start + section.len()) as u64)),
        });
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "---\ndescription: Testing rules\nglobs: \"**/*.rs\"\nalwaysApply: false\n---\n\
                        # Tests\n\n- Name tests as sentences.\n* Never sleep in a test\n\n```\n- not a bullet\n```\n\
                        ## Fixtures\n1. Write them by hand\n";

    #[test]
    fn bullets_quote_their_text_and_skip_code_fences() {
        let item = item("/r/t.mdc", "t.mdc", RULE.as_bytes(), Some(MarkdownClaims::Bullets)).unwrap();
        assert_eq!(item.kind, "rule");
        assert_eq!(item.title, "Testing rules");
        assert_eq!(item.provenance["front_matter"]["alwaysApply"], false);
        let statements: Vec<_> = item.claims.iter().map(|c| c.statement.as_str()).collect();
        assert_eq!(
            statements,
            [
                "Name tests as sentences.",
                "Never sleep in a test",
                "Write them by hand"
            ]
        );
        for claim in &item.claims {
            let (s, e) = claim.span.unwrap();
            assert_eq!(&RULE[s as usize..e as usize], claim.statement);
        }
    }

    #[test]
    fn headings_quote_their_whole_section() {
        let item = item("/r/t.mdc", "t.mdc", RULE.as_bytes(), Some(MarkdownClaims::Headings)).unwrap();
        assert_eq!(item.claims.len(), 2);
        assert!(item.claims[0].statement.starts_with("# Tests\n"));
        assert!(item.claims[0].statement.ends_with("```"));
        assert_eq!(item.claims[1].statement, "## Fixtures\n1. Write them by hand");
        for claim in &item.claims {
            let (s, e) = claim.span.unwrap();
            assert_eq!(&RULE[s as usize..e as usize], claim.statement);
        }
    }
}
