//! `memoree import --from FORMAT PATH…`: bringing memory kept by other tools into Memoree.
//!
//! Each format module turns its files into [`Source`]: items (one artifact each, with the
//! claims that cite exact byte spans of it) and relations between items, plus [`Issue`]s for
//! whatever is malformed, with file and line. Nothing in a format module talks to the daemon;
//! [`driver`] sends the items through the public typed client ([`crate::client`] transports),
//! one item at a time, with idempotency keys derived from the item's source key and content
//! hash, so a re-run creates nothing new and a changed source becomes `artifact.revise`.

pub mod basic_memory;
pub mod driver;
pub mod markdown;
pub mod mcp_memory;
pub mod mem0;
pub(crate) mod text;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::protocol::AmbientContext;
use crate::protocol::claim::ClaimType;
pub use crate::protocol::local::ImportIssue as Issue;

crate::wire_enum! {
    /// A foreign memory format `memoree import --from` reads.
    pub enum Format {
        /// `CLAUDE.md`, `AGENTS.md`, `MEMORY.md`, `.cursor/rules/*.mdc` or any Markdown.
        Markdown = "markdown",
        /// The MCP reference memory server's JSON Lines (`memory.jsonl`).
        McpMemory = "mcp-memory",
        /// A Mem0 export: a JSON array or `{"results": […]}`.
        Mem0 = "mem0",
        /// A basic-memory directory of Markdown notes.
        BasicMemory = "basic-memory",
    }
}

crate::wire_enum! {
    /// Which Markdown structure becomes claims (`--claims`).
    pub enum MarkdownClaims {
        Headings = "headings",
        Bullets = "bullets",
    }
}

/// How to read the sources.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// `--claims` for Markdown.
    pub markdown_claims: Option<MarkdownClaims>,
    /// `--map-user-to-project` for Mem0: each memory goes to project `user_id` of the
    /// workspace the import writes to.
    pub map_user_to_project: bool,
}

/// One claim to assert about an item, quoting it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimSpec {
    pub claim_type: ClaimType,
    /// The statement: verbatim text of the source, never paraphrased.
    pub statement: String,
    /// The cited byte span of the item's content; `None` cites the whole revision.
    pub span: Option<(u64, u64)>,
}

/// One source item: it becomes one artifact.
#[derive(Clone, Debug)]
pub struct Item {
    /// Stable identity across runs: format, canonical path and the item's id in the file.
    pub key: String,
    /// Names other items' relations may use for this one (entity name, title, permalink…).
    pub aliases: Vec<String>,
    /// The file and line the item starts at, for issues.
    pub file: String,
    pub line: u64,
    pub kind: String,
    pub title: String,
    pub media_type: String,
    /// The exact bytes of the artifact.
    pub content: String,
    pub provenance: Map<String, Value>,
    pub claims: Vec<ClaimSpec>,
    /// A scope other than the import's (Mem0 `--map-user-to-project`): the project id.
    pub project: Option<String>,
}

/// A relation between two items, by alias.
#[derive(Clone, Debug)]
pub struct RelationSpec {
    pub from: String,
    pub to: String,
    /// The type as the source spells it.
    pub relation_type: String,
    pub file: String,
    pub line: u64,
}

/// Everything read from the sources.
#[derive(Debug, Default)]
pub struct Source {
    pub items: Vec<Item>,
    pub relations: Vec<RelationSpec>,
    pub issues: Vec<Issue>,
}

impl Issue {
    pub fn at(file: &str, line: Option<u64>, message: impl Into<String>) -> Issue {
        Issue {
            file: file.to_owned(),
            line,
            message: message.into(),
        }
    }
}

/// Reads every path in `format`. Unreadable paths and malformed items are issues; what is
/// well-formed is returned.
pub fn read(format: Format, paths: &[PathBuf], options: &ReadOptions) -> Source {
    let mut source = Source::default();
    for path in paths {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if !path.exists() {
            source.issues.push(Issue::at(
                &path.display().to_string(),
                None,
                "no such file or directory",
            ));
            continue;
        }
        match format {
            Format::Markdown => markdown::read(&path, options, &mut source),
            Format::McpMemory => each_file(&path, &mut source, mcp_memory::read),
            Format::Mem0 => each_file(&path, &mut source, |file, bytes, source| {
                mem0::read(file, bytes, options, source)
            }),
            Format::BasicMemory => basic_memory::read(&path, &mut source),
        }
    }
    source
}

/// Runs `read` on a file, or on every regular file directly inside a directory.
fn each_file(path: &Path, source: &mut Source, mut read: impl FnMut(&str, &[u8], &mut Source)) {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    for file in files {
        let name = file.display().to_string();
        match std::fs::read(&file) {
            Ok(bytes) => read(&name, &bytes, source),
            Err(e) => source.issues.push(Issue::at(&name, None, format!("cannot read: {e}"))),
        }
    }
}

/// The provenance every imported item carries.
pub(crate) fn base_provenance(format: Format, file: &str, line: u64) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("source_format".to_owned(), Value::from(format.as_str()));
    map.insert("source_path".to_owned(), Value::from(file));
    map.insert("source_line".to_owned(), Value::from(line));
    map
}

/// The scope of an item sent to `project` instead of the import's project.
pub(crate) fn scope_for(base: &AmbientContext, project: Option<&str>) -> AmbientContext {
    match project {
        Some(project) => AmbientContext::project(base.workspace_id.clone(), project),
        None => base.clone(),
    }
}

/// The files a directory `path` holds (found by `walk`, sorted), or `path` itself, with the
/// directory their relative names start from.
fn files_under(path: &Path, walk: fn(&Path, &mut Vec<PathBuf>)) -> (Vec<PathBuf>, &Path) {
    if path.is_dir() {
        let mut files = Vec::new();
        walk(path, &mut files);
        files.sort();
        (files, path)
    } else {
        (vec![path.to_path_buf()], path.parent().unwrap_or(path))
    }
}
