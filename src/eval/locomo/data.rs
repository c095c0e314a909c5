//! Reading LoCoMo-format files: conversations, their dialogue turns as they are stored, and
//! their questions with evidence.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::eval::EvalError;

/// One dialogue turn as it is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// `D<session>:<n>`.
    pub dia_id: String,
    pub title: String,
    pub text: String,
}

/// One question with its evidence turns.
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub text: String,
    pub category: u8,
    /// Evidence `dia_id`s that name a turn of the conversation.
    pub evidence: Vec<String>,
}

/// One conversation file.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// The file stem (`26` for `26.json`).
    pub name: String,
    pub turns: Vec<Turn>,
    /// Answerable questions: categories 1–4 with at least one evidence turn.
    pub questions: Vec<Question>,
    /// Questions of categories 1–4 left out because no evidence id names a turn.
    pub without_evidence: usize,
}

/// The LoCoMo question categories.
pub fn category_name(category: u8) -> &'static str {
    match category {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "other",
    }
}

/// Loads every `*.json` conversation in `dir`, in file-name order.
pub fn load(dir: &Path) -> Result<Vec<Conversation>, EvalError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| EvalError::Corpus(format!("{}: {e}", dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(EvalError::Corpus(format!(
            "{}: no LoCoMo conversation (*.json) found",
            dir.display()
        )));
    }
    files.iter().map(|path| load_file(path)).collect()
}

fn load_file(path: &Path) -> Result<Conversation, EvalError> {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |message: String| EvalError::Corpus(format!("{}: {message}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    // The published file wraps each sample's turns in `conversation`; the dev half is flat.
    let conversation = document.get("conversation").unwrap_or(&document);
    let object = conversation
        .as_object()
        .ok_or_else(|| fail("not a JSON object".to_owned()))?;
    let mut sessions: Vec<(u32, &Vec<Value>)> = object
        .iter()
        .filter_map(|(key, value)| {
            let number = key.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((number, value.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(number, _)| *number);
    let mut turns = Vec::new();
    for (number, list) in sessions {
        let date = object
            .get(&format!("session_{number}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("undated");
        for turn in list {
            let field = |key: &str| turn.get(key).and_then(Value::as_str);
            let (Some(speaker), Some(dia_id)) = (field("speaker"), field("dia_id")) else {
                return Err(fail(format!("session {number}: a turn without speaker or dia_id")));
            };
            let mut text = format!("{speaker}: {}", field("text").unwrap_or_default());
            if let Some(caption) = field("blip_caption") {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            turns.push(Turn {
                dia_id: dia_id.to_owned(),
                title: format!("{speaker}, session {number} ({date})"),
                text,
            });
        }
    }
    if turns.is_empty() {
        return Err(fail("no session_N turn list".to_owned()));
    }
    let known: std::collections::HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
    let qa = document
        .get("qa")
        .and_then(Value::as_array)
        .ok_or_else(|| fail("no qa list".to_owned()))?;
    let mut questions = Vec::new();
    let mut without_evidence = 0;
    for item in qa {
        let category = item.get("category").and_then(Value::as_u64).unwrap_or(0);
        if !(1..=4).contains(&category) {
            continue;
        }
        let Some(text) = item.get("question").and_then(Value::as_str) else {
            return Err(fail("a question without text".to_owned()));
        };
        // Evidence lists are hand-made: `"D8:6; D9:17"` names two turns.
        let mut evidence: Vec<String> = Vec::new();
        for id in item
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .flat_map(|s| s.split([';', ',', ' ']))
            .map(str::trim)
        {
            if known.contains(id) && !evidence.iter().any(|e| e == id) {
                evidence.push(id.to_owned());
            }
        }
        if evidence.is_empty() {
            without_evidence += 1;
            continue;
        }
        questions.push(Question {
            text: text.to_owned(),
            category: category as u8,
            evidence,
        });
    }
    Ok(Conversation {
        name,
        turns,
        questions,
        without_evidence,
    })
}
