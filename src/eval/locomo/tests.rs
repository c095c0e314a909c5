//! The LoCoMo evaluator on two tiny conversations checked in as data, and (when the shared
//! development half is present) the issue-27 gates on it.

use std::path::{Path, PathBuf};

use super::*;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/eval/locomo/fixture")
}

#[test]
fn turns_are_seeded_as_speaker_lines_titled_by_session_and_date() {
    let conversations = load(&fixture()).unwrap();
    assert_eq!(conversations.len(), 2);
    let a = &conversations[0];
    assert_eq!(a.name, "a");
    assert_eq!(a.turns.len(), 5);
    assert_eq!(a.turns[0].title, "Ada, session 1 (1:56 pm on 8 May, 2023)");
    assert_eq!(
        a.turns[0].text,
        "Ada: Hey Brook! I finally finished the pottery class at the community studio."
    );
    assert_eq!(
        a.turns[2].text,
        "Ada: A blue vase for my grandmother. [shares a photo: a photo of a blue ceramic vase on a table]"
    );
    assert_eq!(a.turns[3].title, "Brook, session 2 (9:12 am on 20 May, 2023)");
    // The wrapped layout of the published file reads the same way.
    assert_eq!(
        conversations[1].turns[0].text,
        "Cyrus: I adopted a greyhound named Pixel last weekend."
    );
}

#[test]
fn only_answerable_questions_count_and_evidence_lists_are_split_and_checked() {
    let a = &load(&fixture()).unwrap()[0];
    let asked: Vec<(&str, u8, Vec<&str>)> = a
        .questions
        .iter()
        .map(|q| {
            (
                q.text.as_str(),
                q.category,
                q.evidence.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("What did Ada make in her pottery class?", 4, vec!["D1:1", "D1:3"]),
            ("Which museum did Brook visit with the kids?", 2, vec!["D2:1"]),
        ]
    );
    assert_eq!(
        a.without_evidence, 1,
        "the open-domain question without evidence is left out"
    );
}

#[test]
fn a_tally_measures_recall_hits_and_empty_answers_at_each_cutoff() {
    let mut tally = Tally::default();
    let ids = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let ranked = ids(&["x", "e1", "y", "z", "w", "e2"]);
    tally.add(&ranked, &ids(&["e1", "e2"]));
    tally.add(&[], &ids(&["e3"]));
    assert_eq!(tally.questions, 2);
    assert_eq!(tally.recall_at(1), 0.0);
    assert_eq!(tally.recall_at(5), 0.25);
    assert_eq!(tally.recall_at(10), 0.5);
    assert_eq!(tally.hit_at(5), 0.5);
    assert_eq!(tally.empty_share(), 0.5);
}

#[test]
fn the_fixture_conversations_are_answered_from_their_own_turns_only() {
    // Under v1, which answers the fixture's breed question (v2 refuses it: see the next test).
    let options = Options {
        qualification: PolicyVersion::V1,
        ..Options::default()
    };
    let report = run(&fixture(), &options).unwrap();
    assert_eq!(report.turns, 7);
    let search = report.overall(Method::Search);
    assert_eq!(search.questions, 3);
    assert_eq!(search.hit_at(5), 1.0, "{}", report.to_table());
    assert_eq!(report.overall(Method::Bm25).hit_at(5), 1.0, "{}", report.to_table());
    assert_eq!(report.unanswerable.asked, 3);
    assert_eq!(report.unanswerable.answered_by_search, 0, "{}", report.to_table());
    assert_eq!(report.unanswerable.answered_by_recall, 0, "{}", report.to_table());
    assert!(report.gates.is_empty() && report.passed());
    let json = report.to_json();
    assert_eq!(json["answerable_questions"], 3);
    assert_eq!(json["methods"]["search"]["4_single-hop"]["questions"], 1);
    assert_eq!(report, run(&fixture(), &options).unwrap(), "two runs measure the same");
}

#[test]
fn gates_fail_a_run_that_falls_short() {
    let mut report = run(&fixture(), &Options::default()).unwrap();
    report.apply_gates(&Gates {
        min_search_recall_at_5: 1.01,
        ..Gates::LEXICAL
    });
    assert!(!report.passed());
    let failed: Vec<&str> = report.gates.iter().filter(|g| !g.passed()).map(|g| g.name).collect();
    assert_eq!(failed, ["search_recall_at_5"]);
    let table = report.to_table();
    let line = table
        .lines()
        .find(|l| l.starts_with("gate search_recall_at_5:"))
        .unwrap();
    assert!(line.ends_with(">= 1.01 — FAIL"), "{line}");
}

#[test]
fn a_directory_without_conversations_is_refused() {
    let empty = tempfile::tempdir().unwrap();
    let error = run(empty.path(), &Options::default()).unwrap_err().to_string();
    assert!(error.contains("no LoCoMo conversation"), "{error}");
}

#[test]
fn the_stores_answer_under_the_qualification_policy_the_run_names() {
    let report = run(&fixture(), &Options::default()).unwrap();
    assert_eq!(report.to_json()["qualification_policy"], "qualified_units_v2");
    assert!(
        report
            .to_table()
            .starts_with("LoCoMo retrieval (qualified_units_v2, lexical only)")
    );
    // In a two-turn store `breed`, in no turn, outweighs everything the turns share with
    // "What breed is Pixel, the dog Cyrus adopted?": v2 refuses it (a near miss), the
    // questions of the other conversation likewise.
    let by_category = &report.tallies[&Method::Search];
    assert_eq!(by_category[&1].hit_at(5), 0.0, "{}", report.to_table());
    assert_eq!(by_category[&2].hit_at(5), 1.0, "{}", report.to_table());
    assert_eq!(by_category[&4].hit_at(5), 1.0, "{}", report.to_table());
    assert_eq!(report.overall(Method::SearchWithNearMisses).hit_at(5), 1.0);
    assert_eq!(report.unanswerable.answered_by_search, 0, "{}", report.to_table());
    let options = Options {
        qualification: PolicyVersion::V1,
        ..Options::default()
    };
    let v1 = run(&fixture(), &options).unwrap();
    assert_eq!(v1.to_json()["qualification_policy"], "qualified_units_v1");
}
