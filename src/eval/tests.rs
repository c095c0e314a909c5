//! Runs the checked-in retrieval corpus in process, and checks corpus validation.

use std::path::{Path, PathBuf};

use super::*;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/v1/retrieval")
}

#[test]
fn the_retrieval_corpus_passes_its_hard_gates_and_baseline() {
    let report = run_in_process(&corpus_dir()).unwrap();
    let json = report.to_json();
    assert!(report.cases.len() >= 40, "{} cases", report.cases.len());
    assert!(report.passed, "{json:#}");
    assert_eq!(report.budget_violations, 0);
    assert_eq!(report.citation_parity_violations, 0);
    assert_eq!(report.scope_violations, 0);
}

#[test]
fn two_runs_report_identically() {
    let first = run_in_process(&corpus_dir()).unwrap().to_json();
    let second = run_in_process(&corpus_dir()).unwrap().to_json();
    assert_eq!(first, second);
}

/// Copies the corpus into a temporary `v1/retrieval` and applies `edit` to one file.
fn broken(file: &str, edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("v1/retrieval");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["seed.jsonl", "cases.jsonl", "baseline.json"] {
        let text = std::fs::read_to_string(corpus_dir().join(name)).unwrap();
        let text = if name == file { edit(text) } else { text };
        std::fs::write(dir.join(name), text).unwrap();
    }
    (root, dir)
}

#[test]
fn invalid_corpora_are_rejected_before_any_request() {
    type Edit = fn(String) -> String;
    let cases: [(&str, Edit, &str); 4] = [
        (
            "seed.jsonl",
            |t| {
                let first = t.lines().next().unwrap().to_owned();
                format!("{t}{first}\n")
            },
            "duplicate seed label",
        ),
        (
            "cases.jsonl",
            |t| {
                t.replacen(
                    "\"relevant_claims\": [\"c_sqlite\"]",
                    "\"relevant_claims\": [\"nope\"]",
                    1,
                )
            },
            "unknown label nope",
        ),
        (
            "cases.jsonl",
            |t| {
                t.replacen(
                    "\"reason\": \"no precedent in the ambient project\"",
                    "\"reason\": \" \"",
                    1,
                )
            },
            "needs a reason",
        ),
        ("baseline.json", |t| t.replace("\"v1\"", "\"v9\""), "corpus_version"),
    ];
    for (file, edit, message) in cases {
        let (_root, dir) = broken(file, edit);
        let error = Corpus::load(&dir).unwrap_err().to_string();
        assert!(error.contains(message), "{file}: {error}");
    }
}
