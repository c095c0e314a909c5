use super::*;
use crate::retrieval::analyze::analyze;

fn vocabulary(terms: &[(&str, u32)]) -> Vocabulary {
    let mut vocabulary = Vocabulary::new();
    for (term, df) in terms {
        vocabulary.add_term(term, *df);
    }
    vocabulary.add_rows(100);
    vocabulary
}

fn expand(vocabulary: &Vocabulary, query: &str) -> Vec<(String, MatchKind)> {
    let analysis = analyze(query).unwrap();
    vocabulary.expand(&analysis.units[0]).terms
}

#[test]
fn inflections_of_a_present_word_are_found_and_nothing_is_corrected() {
    let v = vocabulary(&[
        ("log", 3),
        ("logs", 5),
        ("logged", 1),
        ("logging", 2),
        ("logic", 4),
        ("login", 2),
    ]);
    let terms = expand(&v, "logging");
    assert_eq!(
        terms,
        [
            ("logging".to_owned(), MatchKind::Exact),
            ("logs".to_owned(), MatchKind::Inflection),
            ("log".to_owned(), MatchKind::Inflection),
            ("logged".to_owned(), MatchKind::Inflection),
        ]
    );
}

#[test]
fn comparatives_of_listed_adjectives_are_inflections() {
    let v = vocabulary(&[("larger", 2), ("router", 1), ("route", 1)]);
    assert!(expand(&v, "large").contains(&("larger".to_owned(), MatchKind::Inflection)));
    assert_eq!(expand(&v, "route"), [("route".to_owned(), MatchKind::Exact)]);
}

#[test]
fn an_absent_word_is_corrected_within_its_edit_budget() {
    let v = vocabulary(&[
        ("retention", 4),
        ("policy", 9),
        ("police", 1),
        ("deployment", 3),
        ("rollback", 2),
    ]);
    assert!(expand(&v, "retnetion").contains(&("retention".to_owned(), MatchKind::Fuzzy)));
    let polcy = expand(&v, "polcy");
    assert!(polcy.contains(&("policy".to_owned(), MatchKind::Fuzzy)), "{polcy:?}");
    assert!(!polcy.iter().any(|(t, _)| t == "police"), "two edits away: {polcy:?}");
    assert!(expand(&v, "deploymnt").contains(&("deployment".to_owned(), MatchKind::Fuzzy)));
    assert!(expand(&v, "rollbak").contains(&("rollback".to_owned(), MatchKind::Fuzzy)));
}

#[test]
fn short_units_complete_as_prefixes_and_abbreviations() {
    let v = vocabulary(&[
        ("project", 5),
        ("projection", 1),
        ("config", 3),
        ("configuration", 4),
        ("dashboard", 2),
    ]);
    let proj = expand(&v, "proj");
    assert!(proj.contains(&("project".to_owned(), MatchKind::Prefix)), "{proj:?}");
    assert!(expand(&v, "cfg").contains(&("config".to_owned(), MatchKind::Abbreviation)));
    assert!(expand(&v, "dashbd").contains(&("dashboard".to_owned(), MatchKind::Abbreviation)));
    assert_eq!(expand(&v, "zz").len(), 1, "two letters are never expanded");
}

#[test]
fn corrections_are_bounded() {
    let many: Vec<(String, u32)> = (0..50).map(|i| (format!("prefix{i:02}"), i)).collect();
    let refs: Vec<(&str, u32)> = many.iter().map(|(t, d)| (t.as_str(), *d)).collect();
    let v = vocabulary(&refs);
    let terms = expand(&v, "prefi");
    assert!(terms.len() <= 1 + MAX_CORRECTIONS, "{}", terms.len());
}

#[test]
fn identifiers_and_phrases_never_expand() {
    let v = vocabulary(&[("ops", 1), ("runbook", 1), ("42", 1)]);
    let analysis = analyze("OPS-RUNBOK-42 \"rolbak plan\"").unwrap();
    for unit in &analysis.units {
        assert!(v.expand(unit).terms.is_empty(), "{unit:?}");
    }
}

#[test]
fn edit_distance_counts_a_transposition_once() {
    let a: Vec<char> = "retnetion".chars().collect();
    assert_eq!(bounded_distance(&a, "retention", 2), Some(1));
    assert_eq!(bounded_distance(&a, "retentions", 2), Some(2));
    assert_eq!(bounded_distance(&a, "detention", 1), None);
    assert_eq!(max_edits(4), 0);
    assert_eq!(max_edits(5), 1);
    assert_eq!(max_edits(9), 2);
}

#[test]
fn an_irregular_form_and_its_lemma_expand_to_each_other() {
    let v = vocabulary(&[
        ("go", 4),
        ("goes", 2),
        ("going", 3),
        ("went", 5),
        ("gone", 1),
        ("good", 9),
    ]);
    let mut from_past: Vec<String> = expand(&v, "went").into_iter().map(|(t, _)| t).collect();
    from_past.sort();
    assert_eq!(from_past, ["go", "goes", "going", "gone", "went"]);
    let from_lemma = expand(&v, "go");
    assert!(
        from_lemma.contains(&("went".to_owned(), MatchKind::Inflection)),
        "{from_lemma:?}"
    );
    assert!(
        from_lemma.contains(&("gone".to_owned(), MatchKind::Inflection)),
        "{from_lemma:?}"
    );
    assert!(!from_lemma.iter().any(|(t, _)| t == "good"));
    let bought = expand(&vocabulary(&[("buy", 2), ("bought", 3)]), "buy");
    assert_eq!(
        bought,
        [
            ("buy".to_owned(), MatchKind::Exact),
            ("bought".to_owned(), MatchKind::Inflection)
        ]
    );
}
