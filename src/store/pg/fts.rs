//! Full-text search on PostgreSQL, fed by the same words and the same candidate expressions
//! as the SQLite index, so the retrieval pipeline above the candidate query is one.
//!
//! Documents: the caller folds a text into words exactly as the FTS5 tokenizer does (the
//! retrieval pipeline's one definition of a word) and [`document`] turns the fields' words
//! into a `tsvector` literal with positions, so PostgreSQL never re-tokenizes (no text
//! search configuration, stemmer or stop list is involved). Fields are separated by a gap of
//! one position, so a phrase never matches across a field boundary (FTS5 columns behave the
//! same). Queries: [`tsquery`] translates the FTS5 subset the retrieval planner emits —
//! double-quoted words or phrases joined by `AND`, `OR` and parentheses — into a `tsquery`
//! literal (`'w'`, `'a' <-> 'b'`, `&`, `|`); both literals are bound as parameters and cast.
//!
//! The search rows themselves are written only by [`crate::store::fts`] (with [`document`]):
//! the write path, imports and `reindex` all index a revision through it, so they index
//! exactly the same text.
//!
//! **Invariants:** no caller text reaches SQL: lexemes are single-quoted with quotes and
//! backslashes escaped; an expression outside the planner's grammar is an error, never a
//! guess.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::store::error::{StoreError, StoreResult};

/// PostgreSQL's largest lexeme position; later words share it.
pub const MAX_POSITION: usize = 16_383;
/// PostgreSQL keeps at most this many positions per lexeme.
pub const MAX_POSITIONS_PER_LEXEME: usize = 256;
/// PostgreSQL's lexeme size limit in bytes; longer words are not indexed.
pub const MAX_LEXEME_BYTES: usize = 2047;

/// A `tsvector` literal for `fields`, each a weight label (`'A'`..`'D'`) and its folded words.
pub fn document<'w>(fields: &[(char, &[&'w str])]) -> String {
    let mut lexemes: BTreeMap<&'w str, Vec<(usize, char)>> = BTreeMap::new();
    let mut position = 0usize;
    for (weight, words) in fields {
        if position > 0 {
            position += 1;
        }
        for word in words.iter() {
            position += 1;
            if word.is_empty() || word.len() > MAX_LEXEME_BYTES {
                continue;
            }
            let positions = lexemes.entry(word).or_default();
            if positions.len() < MAX_POSITIONS_PER_LEXEME {
                positions.push((position.min(MAX_POSITION), *weight));
            }
        }
    }
    let mut out = String::new();
    for (lexeme, positions) in lexemes {
        if !out.is_empty() {
            out.push(' ');
        }
        quote_into(&mut out, lexeme);
        let mut last = 0;
        let mut first = true;
        for (position, weight) in positions {
            if position == last {
                continue;
            }
            last = position;
            out.push(if first { ':' } else { ',' });
            first = false;
            let _ = write!(out, "{position}");
            if weight != 'D' {
                out.push(weight);
            }
        }
    }
    out
}

/// A lexeme no document holds (documents hold only folded alphanumeric words): stands in
/// for a query word too long to be indexed, which therefore matches nothing, as on SQLite.
const NEVER_INDEXED: &str = "-";

/// Appends `word` as a single-quoted query lexeme.
fn quote_query_into(out: &mut String, word: &str) {
    if word.len() > MAX_LEXEME_BYTES {
        quote_into(out, NEVER_INDEXED);
    } else {
        quote_into(out, word);
    }
}

/// Appends `word` as a single-quoted lexeme.
fn quote_into(out: &mut String, word: &str) {
    out.push('\'');
    for c in word.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

#[derive(Debug, PartialEq)]
enum Token {
    Phrase(Vec<String>),
    And,
    Or,
    Open,
    Close,
}

fn tokens(expr: &str) -> StoreResult<Vec<Token>> {
    let invalid = |why: &str| StoreError::Internal(format!("not a planner FTS expression ({why}): {expr:?}"));
    let mut out = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {}
            '(' => out.push(Token::Open),
            ')' => out.push(Token::Close),
            '"' => {
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            text.push('"');
                        }
                        Some('"') => break,
                        Some(c) => text.push(c),
                        None => return Err(invalid("unterminated quote")),
                    }
                }
                let words: Vec<String> = text.split(' ').filter(|w| !w.is_empty()).map(str::to_owned).collect();
                if words.is_empty() {
                    return Err(invalid("empty phrase"));
                }
                out.push(Token::Phrase(words));
            }
            'A' | 'O' => {
                let mut word = String::from(c);
                while let Some(c) = chars.peek().copied().filter(char::is_ascii_uppercase) {
                    word.push(c);
                    chars.next();
                }
                match word.as_str() {
                    "AND" => out.push(Token::And),
                    "OR" => out.push(Token::Or),
                    _ => return Err(invalid("unknown operator")),
                }
            }
            _ => return Err(invalid("unexpected character")),
        }
    }
    Ok(out)
}

/// Translates a planner FTS5 expression into a `tsquery` literal.
pub fn tsquery(expr: &str) -> StoreResult<String> {
    let tokens = tokens(expr)?;
    // Check the shape: operands and binary operators alternate, parentheses balance.
    let mut depth = 0i32;
    let mut expect_operand = true;
    for token in &tokens {
        let ok = match token {
            Token::Phrase(_) => std::mem::replace(&mut expect_operand, false),
            Token::Open => {
                depth += 1;
                expect_operand
            }
            Token::Close => {
                depth -= 1;
                !expect_operand && depth >= 0
            }
            Token::And | Token::Or => !std::mem::replace(&mut expect_operand, true),
        };
        if !ok {
            return Err(StoreError::Internal(format!(
                "not a planner FTS expression (shape): {expr:?}"
            )));
        }
    }
    if depth != 0 || expect_operand {
        return Err(StoreError::Internal(format!(
            "not a planner FTS expression (shape): {expr:?}"
        )));
    }
    let mut out = String::new();
    for token in tokens {
        match token {
            Token::Phrase(words) if words.len() == 1 => quote_query_into(&mut out, &words[0]),
            Token::Phrase(words) => {
                out.push('(');
                for (i, word) in words.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" <-> ");
                    }
                    quote_query_into(&mut out, word);
                }
                out.push(')');
            }
            Token::And => out.push_str(" & "),
            Token::Or => out.push_str(" | "),
            Token::Open => out.push('('),
            Token::Close => out.push(')'),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::fresh_store;
    use super::*;

    #[test]
    fn planner_expressions_become_tsqueries_with_every_lexeme_quoted() {
        assert_eq!(tsquery(r#""sqlite""#).unwrap(), "'sqlite'");
        assert_eq!(
            tsquery(r#"("write" OR "writes") AND "e mail""#).unwrap(),
            "('write' | 'writes') & ('e' <-> 'mail')"
        );
        assert_eq!(
            tsquery(r#""it""s" OR "o'k" OR "a\b""#).unwrap(),
            r#"'it"s' | 'o''k' | 'a\\b'"#
        );
        let long = "a".repeat(MAX_LEXEME_BYTES + 1);
        assert_eq!(tsquery(&format!("\"{long}\" OR \"b\"")).unwrap(), "'-' | 'b'");
        for bad in [
            "",
            "\"a",
            "\"a\" \"b\"",
            "\"a\" AND",
            "(\"a\"",
            "\"a\")",
            "NOT \"a\"",
            "a",
            "\"\"",
        ] {
            assert!(tsquery(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn documents_carry_positions_weights_and_a_gap_between_fields() {
        assert_eq!(
            document(&[('A', &["alpha", "beta"]), ('D', &["beta", "o'k"])]),
            "'alpha':1A 'beta':2A,4 'o''k':5"
        );
        assert_eq!(document(&[]), "");
    }

    /// The translation agrees with FTS5 on which documents match.
    #[test]
    fn postgresql_matches_exactly_the_documents_fts5_matches() {
        let texts: [(&str, &str); 4] = [
            ("Release notes", "the writer commits in groups"),
            ("e mail", "send mail to the team"),
            ("Group commit", "one fsync per group of writes"),
            ("unrelated", "nothing here mentions it"),
        ];
        let expressions = [
            r#""group""#,
            r#""writer" OR "writes""#,
            r#""e mail""#,
            r#""mail" AND "team""#,
            r#"("group" OR "groups") AND ("commit" OR "commits")"#,
            r#""notes the""#,
            r#""it""#,
        ];
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        sqlite
            .execute_batch(
                "CREATE VIRTUAL TABLE f USING fts5 (title, body, tokenize = 'unicode61 remove_diacritics 2');",
            )
            .unwrap();
        for (i, (title, body)) in texts.iter().enumerate() {
            sqlite
                .execute(
                    "INSERT INTO f (rowid, title, body) VALUES (?1, ?2, ?3)",
                    rusqlite::params![i as i64, title, body],
                )
                .unwrap();
        }
        let Some((_cluster, store)) = fresh_store() else { return };
        let conn = store.connection().unwrap();
        conn.batch("CREATE TEMP TABLE f (id BIGINT, document TSVECTOR)")
            .unwrap();
        for (i, (title, body)) in texts.iter().enumerate() {
            let fold = |text: &str| text.to_lowercase();
            let (title, body) = (fold(title), fold(body));
            let title_words: Vec<&str> = title.split(' ').collect();
            let body_words: Vec<&str> = body.split(' ').collect();
            let doc = document(&[('A', &title_words), ('D', &body_words)]);
            conn.execute(
                "INSERT INTO f VALUES (?1, CAST(CAST(?2 AS text) AS tsvector))",
                &[&(i as i64), &doc],
            )
            .unwrap();
        }
        for expr in expressions {
            let mut stmt = sqlite
                .prepare("SELECT rowid FROM f WHERE f MATCH ?1 ORDER BY rowid")
                .unwrap();
            let fts5: Vec<i64> = stmt
                .query_map([expr], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let query = tsquery(expr).unwrap();
            let pg: Vec<i64> = conn
                .query(
                    "SELECT id FROM f WHERE document @@ CAST(CAST(?1 AS text) AS tsquery) ORDER BY id",
                    &[&query],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            assert_eq!(pg, fts5, "{expr} → {query}");
        }
    }
}
