//! Runs the checked-in retrieval corpus in process, and checks corpus validation.

use std::path::{Path, PathBuf};

use super::*;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/v1/retrieval")
}

fn v2_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/v2/retrieval")
}

/// One line per case that did not pass, for a readable failure message.
fn summary(report: &Report) -> String {
    let mut out = String::new();
    for case in report.cases.iter().filter(|c| !c.passed()) {
        out.push_str(&format!(
            "{} [{}] presence {} claims {:?} artifacts {:?}\n",
            case.case_id,
            case.slice.map_or(case.gate.as_str(), Slice::as_str),
            case.presence,
            case.returned_claims,
            case.returned_artifacts
        ));
        for line in case.violations.iter().chain(&case.failures) {
            out.push_str(&format!("    {line}\n"));
        }
    }
    for slice in &report.slices {
        out.push_str(&format!(
            "slice {}: {}/{} (required {:?})\n",
            slice.slice.as_str(),
            slice.passed,
            slice.cases,
            slice.required_rate
        ));
    }
    out.push_str(&format!("regressions {:?}\n", report.regressions));
    out
}

#[test]
fn the_v2_retrieval_corpus_meets_every_gate() {
    let corpus = Corpus::load(&v2_dir()).unwrap();
    assert!(corpus.seed.len() >= 60, "{} seed records", corpus.seed.len());
    assert!(corpus.cases.len() >= 90, "{} cases", corpus.cases.len());
    for slice in Slice::ALL {
        assert!(
            corpus.cases.iter().any(|c| c.slice == Some(slice)),
            "no {} case",
            slice.as_str()
        );
    }
    let unanswerable = corpus
        .cases
        .iter()
        .filter(|c| c.slice == Some(Slice::HonestNone))
        .count();
    assert!(unanswerable >= 20, "{unanswerable} honest-none cases");
    let long: Vec<usize> = corpus
        .seed
        .iter()
        .filter_map(|r| match &r.action {
            corpus::SeedAction::Artifact(a) => a.full_text().map(|t| t.len()),
            _ => None,
        })
        .filter(|len| (50 * 1024..=150 * 1024).contains(len))
        .collect();
    assert!(long.len() >= 4, "long documents: {long:?}");
    let report = run_in_process(&v2_dir()).unwrap();
    assert_eq!(report.false_answers, 0, "{}", summary(&report));
    assert_eq!(report.forbidden_returned, 0, "{}", summary(&report));
    assert_eq!(report.excerpt_citation_violations, 0, "{}", summary(&report));
    assert!(report.passed, "{}", summary(&report));
}

#[test]
fn the_retrieval_corpus_passes_its_hard_gates_and_baseline() {
    let report = run_in_process(&corpus_dir()).unwrap();
    assert!(report.cases.len() >= 40, "{} cases", report.cases.len());
    assert!(report.passed, "{}", summary(&report));
    assert_eq!(report.budget_violations, 0);
    assert_eq!(report.citation_parity_violations, 0);
    assert_eq!(report.scope_violations, 0);
}

/// Runs a corpus against a PostgreSQL-backed service on a throw-away cluster.
/// `None` after reporting the test skipped when PostgreSQL is missing.
fn run_on_postgres(corpus: &Path) -> Option<Report> {
    run_on_postgres_with(corpus, PolicyVersion::default())
}

/// [`run_on_postgres`] under the qualification policy `policy`.
fn run_on_postgres_with(corpus: &Path, policy: PolicyVersion) -> Option<Report> {
    let cluster = crate::testkit::postgres::TestCluster::start()?;
    let front_end = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open_postgres(&cluster.create_database(), front_end.path()).unwrap();
    let runtime = crate::service::Runtime {
        qualification: policy,
        ..crate::service::Runtime::default()
    };
    let service = Service::new(store, runtime);
    let report = run(corpus, &InProcess::new(service.clone())).unwrap();
    service.store().shutdown();
    Some(report)
}

#[test]
fn the_retrieval_corpora_meet_the_same_gates_on_postgresql() {
    let Some(v1) = run_on_postgres(&corpus_dir()) else {
        return;
    };
    assert!(v1.passed, "v1 on PostgreSQL:\n{}", summary(&v1));
    assert_eq!(v1.budget_violations, 0);
    assert_eq!(v1.citation_parity_violations, 0);
    assert_eq!(v1.scope_violations, 0);
    let v2 = run_on_postgres(&v2_dir()).unwrap();
    assert_eq!(v2.false_answers, 0, "v2 on PostgreSQL:\n{}", summary(&v2));
    assert_eq!(v2.forbidden_returned, 0, "v2 on PostgreSQL:\n{}", summary(&v2));
    assert_eq!(v2.excerpt_citation_violations, 0, "v2 on PostgreSQL:\n{}", summary(&v2));
    assert!(v2.passed, "v2 on PostgreSQL:\n{}", summary(&v2));
}

#[test]
fn qualified_units_v1_still_meets_both_corpora_gates_on_sqlite_and_postgresql() {
    for (name, dir) in [("v1", corpus_dir()), ("v2", v2_dir())] {
        let sqlite = run_in_process_with(&dir, PolicyVersion::V1).unwrap();
        // Without PostgreSQL (a visible skip) only the embedded store is checked.
        let postgres = run_on_postgres_with(&dir, PolicyVersion::V1);
        let reports = [("SQLite", Some(&sqlite)), ("PostgreSQL", postgres.as_ref())];
        for (backend, report) in reports.into_iter().filter_map(|(b, r)| Some((b, r?))) {
            assert_eq!(report.false_answers, 0, "{name} on {backend}:\n{}", summary(report));
            assert_eq!(
                report.forbidden_returned,
                0,
                "{name} on {backend}:\n{}",
                summary(report)
            );
            assert!(report.passed, "{name} under v1 on {backend}:\n{}", summary(report));
        }
    }
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
