use super::*;
use crate::retrieval::analyze::analyze;
use crate::retrieval::qualify::{PolicyVersion, qualify};
use crate::retrieval::text::words;

fn vocabulary(terms: &[(&str, u32)], rows: u64) -> Vocabulary {
    let mut vocabulary = Vocabulary::new();
    for (term, df) in terms {
        vocabulary.add_term(term, *df);
    }
    vocabulary.add_rows(rows);
    vocabulary
}

fn plan(query: &str, v: &Vocabulary) -> Plan {
    Plan::new(analyze(query).unwrap(), v)
}

fn qualifies(plan: &Plan, text: &str) -> bool {
    let matched = plan.match_words(&words(text));
    qualify(&plan.units, &plan.policy, &matched).qualified
}

fn store_vocabulary() -> Vocabulary {
    vocabulary(
        &[
            ("release", 5),
            ("releases", 2),
            ("keys", 2),
            ("key", 3),
            ("signed", 2),
            ("signs", 1),
            ("vendor", 1),
            ("status", 40),
            ("plan", 3),
            ("tenants", 3),
            ("retention", 4),
            ("policy", 6),
            ("ops", 1),
            ("runbook", 2),
            ("42", 1),
        ],
        100,
    )
}

#[test]
fn one_shared_word_never_qualifies_a_multi_word_question() {
    let v = store_vocabulary();
    let query = "Which vendor signs the release keys?";
    let v1 = Plan::with_policy(PolicyVersion::V1, analyze(query).unwrap(), &v);
    assert_eq!(v1.policy.required, 3.0);
    let v2 = plan(query, &v);
    assert_eq!(v2.policy.required, (v2.policy.total * 0.45 * 100.0).round() / 100.0);
    for p in [v1, v2] {
        assert!(!qualifies(&p, "Release builds are tagged from main."));
        assert!(!qualifies(&p, "The vendor contract renews in May."));
        assert!(qualifies(&p, "The release keys are signed by the build vendor."));
    }
}

#[test]
fn a_question_with_one_plain_content_word_qualifies_nothing() {
    let v = store_vocabulary();
    let p = plan("how many tenants do we have", &v);
    assert!(p.qualifying_expr.is_none());
    assert!(!qualifies(&p, "Tenants above the quota are rejected."));
    // As a bare keyword it does.
    assert!(qualifies(&plan("tenants", &v), "Tenants above the quota are rejected."));
}

#[test]
fn a_generic_unit_never_qualifies_alone() {
    let v = store_vocabulary();
    assert!(
        qualifies(&plan("status", &v), "The status of the work."),
        "a bare keyword asks for it"
    );
    assert!(!qualifies(&plan("status tenants", &v), "The status of the work."));
    assert!(!qualifies(&plan("what is the plan?", &v), "We went over the plan."));
}

#[test]
fn a_distinctive_unit_qualifies_on_its_own() {
    let v = store_vocabulary();
    let p = plan("what does OPS-RUNBOOK-42 say about announcing?", &v);
    assert!(qualifies(&p, "OPS-RUNBOOK-42: rolling back a deployment"));
    assert!(!qualifies(&p, "Announce a rollback only after every check passes"));
}

#[test]
fn corrected_units_count_for_typo_queries() {
    let v = store_vocabulary();
    let p = plan("retnetion polcy", &v);
    let matched = p.match_words(&words("Data retention policy"));
    let outcome = qualify(&p.units, &p.policy, &matched);
    assert!(outcome.qualified);
    assert!(outcome.corrected_only);
}

#[test]
fn the_qualifying_expression_requires_enough_units_together() {
    let v = store_vocabulary();
    let p = plan("release keys vendor", &v);
    let expr = p.qualifying_expr.unwrap();
    assert!(expr.contains(" AND "), "{expr}");
    assert!(!expr.contains("NEAR"), "{expr}");
    let any = p.any_expr.unwrap();
    assert!(any.contains(" OR ") && !any.contains(" AND "), "{any}");
}

#[test]
fn the_qualifying_expression_applies_the_unit_majority_not_only_the_weight() {
    // Two rare words: either one carries more than the required share of the information,
    // but the v2 majority needs both, so the candidate query asks for both (fetching every
    // row with either word and refusing most of them made recall 25x slower at 100k rows).
    let v = vocabulary(&[("kasolo", 3), ("tevima", 3), ("common", 5_000)], 10_000);
    let p = plan("kasolo tevima", &v);
    assert_eq!(p.qualifying_expr.as_deref(), Some(r#"("kasolo" AND "tevima")"#));
    // Every candidate the expression leaves out fails qualification.
    assert!(!qualifies(&p, "kasolo alone"));
    assert!(qualifies(&p, "kasolo and tevima"));
    // A generic unit stays out of the expression (its doclist is a fifth of the store) and
    // counts as matched there, so a candidate lacking it is still fetched and judged.
    let with_generic = plan("kasolo tevima common", &v);
    let expr = with_generic.qualifying_expr.clone().unwrap();
    assert!(!expr.contains("common"), "{expr}");
    assert!(qualifies(&with_generic, "kasolo tevima"), "{expr}");
}

#[test]
fn expressions_are_only_quoted_words_and_operators() {
    let v = store_vocabulary();
    for query in [
        "a AND NOT b* col:x",
        "\"NEAR(x y)\" OR z",
        "x\"y release",
        "^start (release) keys",
    ] {
        let p = plan(query, &v);
        for expr in [p.qualifying_expr.clone(), p.any_expr.clone()].into_iter().flatten() {
            let stripped: String = expr
                .split('"')
                .enumerate()
                .filter(|(i, _)| i % 2 == 0)
                .map(|(_, s)| s)
                .collect();
            for token in stripped.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
                assert!(matches!(token, "" | "AND" | "OR"), "{query}: {expr}");
            }
        }
    }
}

#[test]
fn inflections_match_in_the_text() {
    let v = store_vocabulary();
    let p = plan("signing keys", &v);
    let matched = p.match_words(&words("The release key is signed"));
    assert!(matched.units.iter().all(Option::is_some), "{matched:?}");
}

proptest::proptest! {
    #[test]
    fn any_query_plans_to_expressions_sqlite_accepts(query in proptest::prelude::any::<String>()) {
        let v = store_vocabulary();
        let Ok(analysis) = analyze(&query) else { return Ok(()) };
        let plan = Plan::new(analysis, &v);
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
                          INSERT INTO docs VALUES ('release keys vendor AND NOT near col x');").unwrap();
        for expr in [plan.qualifying_expr.clone(), plan.any_expr.clone()].into_iter().flatten() {
            let stripped: String = expr.split('"').enumerate().filter(|(i, _)| i % 2 == 0).map(|(_, s)| s).collect();
            for token in stripped.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
                proptest::prop_assert!(matches!(token, "" | "AND" | "OR"), "{}", expr);
            }
            let counted: rusqlite::Result<i64> =
                db.query_row("SELECT count(*) FROM docs WHERE docs MATCH ?1", [&expr], |r| r.get(0));
            proptest::prop_assert!(counted.is_ok(), "{} -> {:?}", expr, counted);
        }
    }
}

#[test]
fn a_form_that_does_not_start_with_its_stem_matches_through_the_fallback() {
    // The vocabulary's prefix scan for `hope` cannot list `hoping`.
    let v = vocabulary(&[("hope", 3), ("hoping", 1), ("trip", 2)], 50);
    let p = plan("hope trip", &v);
    assert!(!p.units[0].expansion.terms.iter().any(|(term, _)| term == "hoping"));
    let matched = p.match_words(&words("Still hoping for the trip"));
    let hope = matched.units[0].as_ref().expect("hope matched");
    assert_eq!((hope.kind, hope.term.as_str()), (MatchKind::Inflection, "hoping"));
}

proptest::proptest! {
    #[test]
    fn remembered_stems_change_no_match(
        texts in proptest::collection::vec(
            proptest::collection::vec(
                proptest::sample::select(vec![
                    "hoping", "hoped", "hopes", "hope", "hopeful", "hop", "hopping", "happy", "happiness",
                    "happily", "relational", "relate", "relating", "trips", "tripped", "trip", "tried", "try",
                    "the", "and", "sign", "signing", "signs", "signal",
                ]),
                0..24,
            ),
            1..8,
        ),
    ) {
        let v = vocabulary(&[("hope", 3), ("happiness", 2), ("relate", 2), ("trip", 4), ("sign", 3)], 60);
        let warm = plan("hoping happiness relational trips signing", &v);
        for text in texts.iter().chain(texts.iter()) {
            let text = text.join(" ");
            let fresh = warm.clone();
            let (a, b) = (warm.match_words(&words(&text)), fresh.match_words(&words(&text)));
            proptest::prop_assert_eq!(&a.units, &b.units, "{}", text);
            proptest::prop_assert_eq!(&a.instances, &b.instances, "{}", text);
        }
    }
}

#[test]
fn one_pass_matches_as_match_words_and_highlights_the_function_words() {
    let v = store_vocabulary();
    let p = plan("Which vendor signs the release keys?", &v);
    let text = "The vendor signed the release of the keys, which the vendor keeps.";
    let (matched, highlights) = p.match_and_highlight(&words(text));
    let alone = p.match_words(&words(text));
    assert_eq!((matched.units, matched.instances), (alone.units, alone.instances));
    let text_words = words(text);
    let expected: Vec<(usize, usize, usize)> = (0..text_words.len())
        .filter(|&i| p.analysis.ignored.iter().any(|w| w == text_words.folded(i)))
        .map(|i| {
            let word = text_words.folded(i);
            let first = p.analysis.ignored.iter().position(|w| w == word).unwrap();
            (p.units.len() + first, i, 1)
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(highlights, expected);
    assert_eq!(p.unit_scores().len(), p.units.len() + p.analysis.ignored.len());
}
