//! The FTS5 query builder. It owns the one rule that keeps user text out of FTS5
//! syntax: every word becomes a quoted phrase, and the phrases are joined with ` OR `.

use crate::protocol::limits::{MAX_QUERY_BYTES, MAX_QUERY_TOKENS};

/// A search query reduced to literal FTS5 terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtsQuery {
    /// The right-hand side of `MATCH`, for example `"sqlite" OR "is_authoritative"`.
    pub match_expr: String,
    /// The words and identifiers, in query order, as the user wrote them.
    pub tokens: Vec<String>,
}

/// Why a search query was rejected. Each one maps to `INVALID_REQUEST`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error("search query must not exceed {MAX_QUERY_BYTES} bytes")]
    TooLong,
    #[error("search query must contain at least one word or identifier")]
    NoTokens,
    #[error("search query must not contain more than {MAX_QUERY_TOKENS} words or identifiers")]
    TooManyTokens,
}

/// Builds the `MATCH` expression for `query`.
///
/// The query is split into maximal runs of Unicode alphanumeric characters or `_`;
/// everything else separates words. Each word is quoted, so operators such as `AND`,
/// `NEAR(…)`, `col:x` or `x*` are searched for as plain words.
pub fn build_fts_query(query: &str) -> Result<FtsQuery, QueryError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(QueryError::TooLong);
    }
    let mut tokens = Vec::new();
    for token in query.split(|c: char| !is_query_char(c)) {
        if token.is_empty() {
            continue;
        }
        if tokens.len() == MAX_QUERY_TOKENS {
            return Err(QueryError::TooManyTokens);
        }
        tokens.push(token.to_owned());
    }
    if tokens.is_empty() {
        return Err(QueryError::NoTokens);
    }
    let match_expr = tokens
        .iter()
        .map(|token| quote_term(token))
        .collect::<Vec<_>>()
        .join(" OR ");
    Ok(FtsQuery { match_expr, tokens })
}

fn is_query_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Wraps a term in double quotes, doubling any quote inside it. The split above never
/// lets a quote through; this is defence in depth.
fn quote_term(token: &str) -> String {
    format!("\"{}\"", token.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn words_are_quoted_and_joined_with_or() {
        let query = build_fts_query("Why is SQLite authoritative?").unwrap();
        assert_eq!(query.match_expr, r#""Why" OR "is" OR "SQLite" OR "authoritative""#);
        assert_eq!(query.tokens, ["Why", "is", "SQLite", "authoritative"]);
    }

    #[test]
    fn underscores_stay_inside_identifiers() {
        let query = build_fts_query("max_bytes-limit").unwrap();
        assert_eq!(query.tokens, ["max_bytes", "limit"]);
    }

    #[test]
    fn unicode_letters_and_digits_form_words() {
        let query = build_fts_query("café·東京 v2").unwrap();
        assert_eq!(query.tokens, ["café", "東京", "v2"]);
    }

    #[test]
    fn operators_become_literal_words() {
        let query = build_fts_query("a AND NOT b* col:x").unwrap();
        assert_eq!(query.match_expr, r#""a" OR "AND" OR "NOT" OR "b" OR "col" OR "x""#);
    }

    #[test]
    fn a_query_of_exactly_the_byte_limit_is_accepted() {
        assert!(build_fts_query(&"a".repeat(MAX_QUERY_BYTES)).is_ok());
    }

    #[test]
    fn a_query_over_the_byte_limit_is_rejected() {
        let error = build_fts_query(&"a".repeat(MAX_QUERY_BYTES + 1)).unwrap_err();
        assert_eq!(error, QueryError::TooLong);
        assert_eq!(error.to_string(), "search query must not exceed 8192 bytes");
    }

    #[test]
    fn a_query_without_words_is_rejected() {
        for query in ["", "   ", "?!*()\"", "—…"] {
            let error = build_fts_query(query).unwrap_err();
            assert_eq!(error, QueryError::NoTokens);
        }
        assert_eq!(
            QueryError::NoTokens.to_string(),
            "search query must contain at least one word or identifier"
        );
    }

    #[test]
    fn forty_eight_words_are_accepted_and_forty_nine_are_not() {
        let words = |n: usize| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>();
        assert_eq!(build_fts_query(&words(48).join(" ")).unwrap().tokens.len(), 48);
        let error = build_fts_query(&words(49).join(" ")).unwrap_err();
        assert_eq!(error, QueryError::TooManyTokens);
        assert_eq!(
            error.to_string(),
            "search query must not contain more than 48 words or identifiers"
        );
    }

    #[test]
    fn embedded_quotes_would_be_doubled() {
        assert_eq!(quote_term(r#"a"b"#), r#""a""b""#);
    }

    /// Checks that `expr` is `"tok"` terms joined by ` OR `, each tok a word character run.
    fn is_only_quoted_words(expr: &str) -> bool {
        expr.split(" OR ").all(|term| {
            term.len() >= 2
                && term.starts_with('"')
                && term.ends_with('"')
                && !term[1..term.len() - 1].is_empty()
                && term[1..term.len() - 1].chars().all(is_query_char)
        })
    }

    proptest! {
        #[test]
        fn any_input_yields_an_error_or_only_quoted_words(query in any::<String>()) {
            if let Ok(built) = build_fts_query(&query) {
                prop_assert!(is_only_quoted_words(&built.match_expr), "{}", built.match_expr);
                prop_assert!(!built.tokens.is_empty());
                prop_assert!(built.tokens.len() <= MAX_QUERY_TOKENS);
            }
        }

        #[test]
        fn hostile_punctuation_yields_an_error_or_only_quoted_words(
            query in r#"[ a-zA-Z0-9_"*:()\-^+{}.,é東]{0,80}"#
        ) {
            if let Ok(built) = build_fts_query(&query) {
                prop_assert!(is_only_quoted_words(&built.match_expr), "{}", built.match_expr);
            }
        }
    }

    #[test]
    fn hostile_queries_never_cause_an_sqlite_error() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE docs USING fts5(title, body);
             INSERT INTO docs VALUES ('NEAR rules', 'a AND b OR NOT c col x _under_score');
             INSERT INTO docs VALUES ('quotes', 'she said \"hi\" to x*');",
        )
        .unwrap();
        let hostile = [
            "\"",
            "\"\"\"",
            "say \"hi",
            "x*",
            "*",
            "NEAR(a b)",
            "NEAR(a b, 3)",
            "-x",
            "col:x",
            "title:NEAR",
            "body : x",
            "(a OR b",
            "a) OR (b",
            "AND OR NOT",
            "AND",
            "NOT a",
            "^start",
            "a + b",
            "{title body}: x",
            "_",
            "___",
            "_under_score",
            "a_",
            "\u{0}x",
            "é東京",
        ];
        let mut statement = db.prepare("SELECT count(*) FROM docs WHERE docs MATCH ?1").unwrap();
        for query in hostile {
            let built = match build_fts_query(query) {
                Ok(built) => built,
                // Rejected before SQLite sees it, which is just as safe.
                Err(QueryError::NoTokens) => continue,
                Err(error) => panic!("{query:?}: {error}"),
            };
            let result: rusqlite::Result<i64> = statement.query_row([&built.match_expr], |row| row.get(0));
            assert!(result.is_ok(), "{query:?} → {}: {result:?}", built.match_expr);
        }
    }

    #[test]
    fn quoted_operator_words_match_literally() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE docs USING fts5(body);
             INSERT INTO docs VALUES ('nothing special here');
             INSERT INTO docs VALUES ('the NEAR operator');",
        )
        .unwrap();
        let built = build_fts_query("NEAR(").unwrap();
        let count: i64 = db
            .query_row(
                "SELECT count(*) FROM docs WHERE docs MATCH ?1",
                [&built.match_expr],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(count, 1);
    }
}
