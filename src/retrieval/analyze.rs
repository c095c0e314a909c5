//! Query analysis: a query becomes *content units*. Function and question words
//! (`lexicon`) never count as units on their own; identifiers (`OPS-RUNBOOK-42`,
//! `snake_case`, `dotted.names`, `v0.2.0`), numbers (with a unit: `750ms`, `2.1 TB`),
//! hyphenated compounds (`on-call`) and double-quoted phrases are one exact unit each;
//! every other word is a word unit, and inflections of one word count once.

use std::collections::HashSet;

use super::lexicon::lexicon;
use super::query::{QueryError, build_fts_query};
use super::stem::stem;
use super::text::{fold, folded_words, is_word_char};

/// What a unit is; it decides how the unit may match and how much it weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnitKind {
    /// A plain word: exact, inflected, and (when absent from the vocabulary) corrected.
    Word,
    /// Words joined by hyphens (`on-call`): an exact phrase of ordinary weight.
    Compound,
    /// An identifier: an exact phrase that is distinctive on its own.
    Identifier,
    /// A number, with its unit when it has one: exact; distinctive when it has a unit, a
    /// fraction, or at least three digits.
    Number,
    /// A double-quoted phrase: exact and distinctive.
    Phrase,
}

impl UnitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UnitKind::Word => "word",
            UnitKind::Compound => "compound",
            UnitKind::Identifier => "identifier",
            UnitKind::Number => "number",
            UnitKind::Phrase => "phrase",
        }
    }
}

/// One content unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// As written in the query (quotes removed).
    pub text: String,
    pub kind: UnitKind,
    /// The folded words the index sees, in order (one for a word unit).
    pub words: Vec<String>,
    /// On the generic-word list (word units only).
    pub generic: bool,
    /// An identifier, quoted phrase or distinctive number.
    pub distinctive: bool,
}

/// The analysed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    pub units: Vec<Unit>,
    /// Folded function and question words that were left out, in query order.
    pub ignored: Vec<String>,
    /// The query asks a question (a question word, or a trailing `?`).
    pub question: bool,
    /// Every word was a function or question word; the units are those words instead.
    pub stop_words_only: bool,
}

/// Units a number may carry right after it (`10 GB`, `30 s`).
const NUMBER_UNITS: &[&str] = &[
    "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour",
    "hours", "day", "days", "week", "weeks", "b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "percent",
    "rps", "qps", "x",
];

/// Analyses `query`. The v1 limits apply first: the same errors for an over-long query, no
/// word at all, or more than 48 words.
pub fn analyze(query: &str) -> Result<Analysis, QueryError> {
    build_fts_query(query)?;
    let lexicon = lexicon();
    let mut units: Vec<Unit> = Vec::new();
    let mut ignored = Vec::new();
    let mut dropped_words: Vec<String> = Vec::new();
    let mut question = query.trim_end().ends_with('?');
    let (phrases, rest) = split_quoted(query);
    for phrase in phrases {
        let words = folded_words(&phrase);
        if !words.is_empty() {
            units.push(Unit {
                text: phrase.trim().to_owned(),
                kind: UnitKind::Phrase,
                words,
                generic: false,
                distinctive: true,
            });
        }
    }
    let chunks: Vec<&str> = rest
        .split_whitespace()
        .map(|chunk| chunk.trim_matches(|c: char| !is_word_char(c)))
        .filter(|chunk| !chunk.is_empty())
        .collect();
    if let Some(first) = chunks.first().and_then(|c| folded_words(c).into_iter().next())
        && lexicon.is_starter(&first)
    {
        question = true;
    }
    let mut previous: Option<String> = None;
    let mut index = 0;
    while index < chunks.len() {
        let chunk = chunks[index];
        index += 1;
        if let Some(kind) = exact_kind(chunk) {
            let mut text = chunk.to_owned();
            let mut words = folded_words(chunk);
            let mut distinctive = kind != UnitKind::Compound;
            if kind == UnitKind::Number {
                let unit_word = chunks.get(index).map(|next| fold(next));
                if let Some(unit_word) = unit_word.filter(|w| NUMBER_UNITS.contains(&w.as_str()) || w == "%") {
                    text = format!("{chunk} {}", chunks[index]);
                    words.push(unit_word);
                    index += 1;
                } else {
                    let digits = chunk.chars().filter(char::is_ascii_digit).count();
                    distinctive = digits >= 3 || chunk.contains('.');
                }
            }
            units.push(Unit {
                text,
                kind,
                words,
                generic: false,
                distinctive,
            });
            previous = None;
            continue;
        }
        // A plain chunk: one or more words (`team's` is `team` and `s`).
        for word in folded_words(chunk) {
            let framed = previous.as_deref().is_some_and(|p| lexicon.is_frame(p, &word));
            if lexicon.is_question(&word) || framed {
                question = true;
                ignored.push(word.clone());
                dropped_words.push(word.clone());
            } else if lexicon.is_stop(&word) || is_single_letter(&word) {
                ignored.push(word.clone());
                dropped_words.push(word.clone());
            } else {
                units.push(Unit {
                    text: word.clone(),
                    kind: UnitKind::Word,
                    generic: lexicon.is_generic(&word),
                    words: vec![word.clone()],
                    distinctive: false,
                });
            }
            previous = Some(word);
        }
    }
    let stop_words_only = units.is_empty();
    if stop_words_only {
        ignored.clear();
        units = dropped_words
            .into_iter()
            .map(|word| Unit {
                text: word.clone(),
                kind: UnitKind::Word,
                words: vec![word],
                generic: false,
                distinctive: false,
            })
            .collect();
    }
    Ok(Analysis {
        units: dedupe(units),
        ignored,
        question,
        stop_words_only,
    })
}

/// Quoted phrases and the query with them removed. An unpaired quote is ignored.
fn split_quoted(query: &str) -> (Vec<String>, String) {
    let mut phrases = Vec::new();
    let mut rest = String::with_capacity(query.len());
    let mut parts = query.split('"').peekable();
    let mut inside = false;
    while let Some(part) = parts.next() {
        if inside && parts.peek().is_some() {
            phrases.push(part.to_owned());
            rest.push(' ');
        } else {
            rest.push_str(part);
            rest.push(' ');
        }
        inside = !inside;
    }
    (phrases, rest)
}

/// The exact kind of a chunk, or `None` for plain words.
fn exact_kind(chunk: &str) -> Option<UnitKind> {
    let words = folded_words(chunk);
    let has_digit = chunk.chars().any(|c| c.is_ascii_digit());
    let has_letter = chunk.chars().any(char::is_alphabetic);
    let separators: Vec<char> = chunk.chars().filter(|c| !is_word_char(*c)).collect();
    if has_digit && !has_letter && chunk.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | ',')) {
        return Some(UnitKind::Number);
    }
    if chunk.contains('_') || (has_digit && has_letter) {
        return Some(UnitKind::Identifier);
    }
    if words.len() < 2 {
        return None;
    }
    if separators.iter().all(|c| *c == '-') {
        // `OPS-RUNBOOK`, `X-Request-Id` are identifiers; `on-call` is a compound.
        let upper = chunk.chars().filter(|c| c.is_uppercase()).count();
        return Some(if upper >= 2 {
            UnitKind::Identifier
        } else {
            UnitKind::Compound
        });
    }
    if separators
        .iter()
        .any(|c| matches!(c, '.' | ':' | '/' | '@' | '#' | '='))
    {
        return Some(UnitKind::Identifier);
    }
    // Apostrophes and other joiners: plain words.
    None
}

/// The Porter2 stem of a word's lemma: `went`, `gone` and `goes` share `go`'s.
pub fn lemma_stem(word: &str) -> String {
    stem(lexicon().lemma(word).unwrap_or(word))
}

fn is_single_letter(word: &str) -> bool {
    let mut chars = word.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if c.is_alphabetic())
}

/// Drops repeated units: equal words, and word units with the same stem (`frames frame`).
fn dedupe(units: Vec<Unit>) -> Vec<Unit> {
    let mut seen: HashSet<(UnitKind, Vec<String>)> = HashSet::new();
    let mut stems: HashSet<String> = HashSet::new();
    let mut kept = Vec::new();
    for unit in units {
        if !seen.insert((unit.kind, unit.words.clone())) {
            continue;
        }
        if unit.kind == UnitKind::Word && !stems.insert(lemma_stem(&unit.words[0])) {
            continue;
        }
        kept.push(unit);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(query: &str) -> Vec<(String, UnitKind)> {
        analyze(query)
            .unwrap()
            .units
            .into_iter()
            .map(|u| (u.text, u.kind))
            .collect()
    }

    fn texts(query: &str) -> Vec<String> {
        units(query).into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn function_and_question_words_are_not_units() {
        let analysis = analyze("Which vendor signs the release keys?").unwrap();
        assert_eq!(
            texts("Which vendor signs the release keys?"),
            ["vendor", "signs", "release", "keys"]
        );
        assert!(analysis.question);
        assert_eq!(analysis.ignored, ["which", "the"]);
        assert!(!analyze("release keys").unwrap().question);
        assert!(analyze("are backups encrypted at rest").unwrap().question);
        assert!(!analyze("backups are encrypted").unwrap().question);
    }

    #[test]
    fn question_frames_drop_their_second_word_only_after_the_first() {
        assert_eq!(
            texts("how long do gateway restarts take"),
            ["gateway", "restarts", "take"]
        );
        assert_eq!(texts("long gateway restarts"), ["long", "gateway", "restarts"]);
    }

    #[test]
    fn identifiers_numbers_compounds_and_phrases_are_one_exact_unit_each() {
        assert_eq!(
            units("OPS-RUNBOOK-42 snake_case dotted.names v0.2.0 750ms on-call \"rebalancing storm\""),
            [
                ("rebalancing storm".to_owned(), UnitKind::Phrase),
                ("OPS-RUNBOOK-42".to_owned(), UnitKind::Identifier),
                ("snake_case".to_owned(), UnitKind::Identifier),
                ("dotted.names".to_owned(), UnitKind::Identifier),
                ("v0.2.0".to_owned(), UnitKind::Identifier),
                ("750ms".to_owned(), UnitKind::Identifier),
                ("on-call".to_owned(), UnitKind::Compound),
            ]
        );
        let analysis = analyze("growth of 2.1 TB per week").unwrap();
        assert_eq!(analysis.units[1].text, "2.1 TB");
        assert_eq!(analysis.units[1].words, ["2", "1", "tb"]);
        assert!(analysis.units[1].distinctive);
        assert!(!analyze("severity 1").unwrap().units[1].distinctive);
        assert!(analyze("10,000 rows").unwrap().units[0].distinctive);
    }

    #[test]
    fn inflections_of_one_word_count_once() {
        assert_eq!(texts("frames frame capped"), ["frames", "capped"]);
        assert_eq!(texts("went going gone go museum"), ["went", "museum"]);
    }

    #[test]
    fn a_query_of_stop_words_only_searches_those_words_and_says_so() {
        let analysis = analyze("what is it").unwrap();
        assert!(analysis.stop_words_only);
        assert_eq!(texts("what is it"), ["what", "is", "it"]);
        assert!(analysis.ignored.is_empty());
    }

    #[test]
    fn hostile_syntax_becomes_plain_units() {
        assert_eq!(
            texts("SQLite* AND NOT (authoritative) NEAR col:x"),
            ["sqlite", "authoritative", "col:x"]
        );
        assert_eq!(texts("\"unpaired quote"), ["unpaired", "quote"]);
    }

    #[test]
    fn the_v1_limits_still_apply() {
        assert_eq!(analyze("?!").unwrap_err(), QueryError::NoTokens);
        assert_eq!(analyze(&"a ".repeat(49)).unwrap_err(), QueryError::TooManyTokens);
    }

    #[test]
    fn generic_words_are_marked() {
        let analysis = analyze("current status of the retention plan").unwrap();
        let generic: Vec<bool> = analysis.units.iter().map(|u| u.generic).collect();
        assert_eq!(generic, [true, true, false, true]);
    }
}
