//! Tests of the snippet emulation, including a differential check against SQLite's own
//! FTS5 `snippet()`.

use super::*;
use crate::retrieval::query::build_fts_query;
use proptest::prelude::*;

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// What SQLite itself returns for `body` and the query words `tokens`.
fn sqlite_snippet(body: &str, tokens: &[String], max_tokens: usize) -> String {
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch("CREATE VIRTUAL TABLE docs USING fts5(title, body);")
        .unwrap();
    // The title holds every query word, so the row always matches.
    db.execute("INSERT INTO docs VALUES (?1, ?2)", [tokens.join(" "), body.to_owned()])
        .unwrap();
    let query = build_fts_query(&tokens.join(" ")).unwrap();
    db.query_row(
        "SELECT snippet(docs, 1, '‹', '›', ' … ', ?2) FROM docs WHERE docs MATCH ?1",
        rusqlite::params![query.match_expr, max_tokens as i64],
        |row| row.get(0),
    )
    .unwrap()
}

#[test]
fn an_empty_body_gives_an_empty_snippet() {
    assert_eq!(snippet("", &words(&["a"]), 36), "");
}

#[test]
fn a_short_body_is_returned_whole_with_matches_highlighted() {
    assert_eq!(
        snippet("SQLite is authoritative.", &words(&["sqlite"]), 36),
        "‹SQLite› is authoritative."
    );
}

#[test]
fn without_a_match_the_start_of_the_body_is_returned() {
    let body = "one two three four five";
    assert_eq!(snippet(body, &words(&["zzz"]), 3), "one two three … ");
    assert_eq!(snippet(body, &words(&["zzz"]), 5), body);
}

#[test]
fn a_body_without_words_is_returned_whole() {
    assert_eq!(snippet("?! --", &words(&["a"]), 36), "?! --");
}

#[test]
fn a_window_inside_the_body_gets_ellipses_on_both_sides() {
    let body = "w0 w1 w2 w3 w4 target w6 w7 w8 w9 w10";
    assert_eq!(snippet(body, &words(&["target"]), 3), " … w4 ‹target› w6 … ");
}

#[test]
fn matching_ignores_case() {
    assert_eq!(snippet("ÉCOLE", &words(&["école"]), 36), "‹ÉCOLE›");
}

#[test]
fn underscore_words_match_as_phrases() {
    assert_eq!(
        snippet("set max bytes here, max alone", &words(&["max_bytes"]), 36),
        "set ‹max bytes› here, max alone"
    );
}

#[test]
fn a_zero_token_window_gives_an_empty_snippet() {
    assert_eq!(snippet("a b c", &words(&["a"]), 0), "");
}

#[test]
fn the_window_moves_back_to_the_start_of_the_sentence() {
    let body = "w0 w1 w2 w3 w4 w5. Start of sentence target here and more words follow on";
    let ours = snippet(body, &words(&["target"]), 6);
    assert_eq!(ours, " … Start of sentence ‹target› here and … ");
    assert_eq!(ours, sqlite_snippet(body, &words(&["target"]), 6));
}

#[test]
fn known_cases_agree_with_sqlite() {
    let cases: [(&str, &[&str], usize); 6] = [
        (
            "SQLite is authoritative; the filesystem CAS stores blobs.",
            &["cas", "blobs"],
            36,
        ),
        ("alpha beta gamma delta epsilon zeta eta theta", &["zeta"], 4),
        ("a b a b a b a b a b c", &["a", "c"], 3),
        ("x_y x y x-y", &["x_y"], 36),
        ("no match here at all, really none", &["zzz"], 4),
        ("one. two: three.four five", &["five"], 2),
    ];
    for (body, tokens, max) in cases {
        let tokens = words(tokens);
        assert_eq!(
            snippet(body, &tokens, max),
            sqlite_snippet(body, &tokens, max),
            "{body:?} {tokens:?}"
        );
    }
}

#[test]
fn truncation_never_cuts_inside_a_character() {
    assert_eq!(truncate_to_char_boundary("aé", 2), "a");
    assert_eq!(truncate_to_char_boundary("aé", 3), "aé");
    assert_eq!(truncate_to_char_boundary("aé", 100), "aé");
    assert_eq!(truncate_to_char_boundary("東", 0), "");
}

#[test]
fn lossy_spans_check_their_bounds() {
    let bytes = "aé".as_bytes();
    assert_eq!(lossy_span(bytes, 0, 3).as_deref(), Some("aé"));
    assert_eq!(lossy_span(bytes, 0, 2).as_deref(), Some("a\u{fffd}"));
    assert_eq!(lossy_span(bytes, 3, 3).as_deref(), Some(""));
    assert_eq!(lossy_span(bytes, 2, 1), None);
    assert_eq!(lossy_span(bytes, 0, 4), None);
}

/// Bodies over a tiny vocabulary with sentence punctuation, so windows, repeats and
/// sentence starts all occur.
fn ascii_body() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec!["a", "b", "c", "d", "Alpha", "beta", "x1"]);
    let gap = prop::sample::select(vec![" ", " ", ". ", ": ", ", ", "\n", "_", "-", " . "]);
    (
        prop::sample::select(vec!["", " ", ". "]),
        prop::collection::vec((word, gap), 0..60),
    )
        .prop_map(|(lead, parts)| {
            let mut body = lead.to_owned();
            for (word, gap) in parts {
                body.push_str(word);
                body.push_str(gap);
            }
            body
        })
}

fn query_words() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "B", "c", "alpha", "zz", "a_b", "beta_a", "x1"]),
        1..4,
    )
    .prop_map(|list| list.into_iter().map(str::to_owned).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn snippets_agree_with_sqlite_on_ascii_text(
        body in ascii_body(),
        tokens in query_words(),
        max in 1usize..12,
    ) {
        prop_assert_eq!(snippet(&body, &tokens, max), sqlite_snippet(&body, &tokens, max));
    }
}

proptest! {
    #[test]
    fn snippet_never_panics_on_arbitrary_text(
        body in any::<String>(),
        tokens in prop::collection::vec(any::<String>(), 0..4),
        max in 0usize..80,
    ) {
        let out = snippet(&body, &tokens, max);
        prop_assert!(out.len() <= body.len() + 2 * ELLIPSIS.len()
            + out.matches(HIGHLIGHT_OPEN).count() * (HIGHLIGHT_OPEN.len() + HIGHLIGHT_CLOSE.len()));
    }

    #[test]
    fn snippet_matches_words_taken_from_the_body(body in "\\PC{0,200}", pick in any::<prop::sample::Index>()) {
        // A window holding a highlight character itself is shown without highlights.
        prop_assume!(!body.contains(HIGHLIGHT_OPEN) && !body.contains(HIGHLIGHT_CLOSE));
        let spans = word_spans(&body);
        if !spans.is_empty() {
            let (start, end) = spans[pick.index(spans.len())];
            let out = snippet(&body, &[body[start..end].to_owned()], SNIPPET_TOKENS);
            prop_assert!(out.contains(HIGHLIGHT_OPEN), "{out:?}");
        }
    }

    #[test]
    fn truncation_stays_within_the_budget(text in any::<String>(), max in 0usize..64) {
        let cut = truncate_to_char_boundary(&text, max);
        prop_assert!(cut.len() <= max);
        prop_assert!(text.starts_with(cut));
        prop_assert!(cut.len() + 4 > max.min(text.len()));
    }
}

proptest! {
    #[test]
    fn lossy_spans_never_panic_and_cut_exactly_the_requested_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        start in prop_oneof![0usize..80, Just(usize::MAX), Just(usize::MAX - 1)],
        end in prop_oneof![0usize..80, Just(usize::MAX)],
    ) {
        match lossy_span(&bytes, start, end) {
            Some(text) => {
                prop_assert!(start <= end && end <= bytes.len());
                prop_assert_eq!(text, String::from_utf8_lossy(&bytes[start..end]).into_owned());
            }
            None => prop_assert!(start > end || end > bytes.len()),
        }
    }
}
