//! End-to-end checks of the `memoree-conformance` binary, run as trials of the in-tree runner
//! (`kit/…`): it embeds exactly the checkout's cases and scenarios, `--level v1` selects only v1
//! trials, a failing trial makes it exit 1 with the summary line, and its JUnit report parses.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use libtest_mimic::{Failed, Trial};

use crate::engine::case;
use crate::engine::catalog::{Catalog, case_name};

const KIT: &str = env!("CARGO_BIN_EXE_memoree-conformance");
const MEMOREE: &str = env!("CARGO_BIN_EXE_memoree");

fn kit(args: &[&str]) -> Result<(Option<i32>, String), String> {
    let output = Command::new(KIT)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {KIT}: {e}"))?;
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// Items (`v1/…`, `golden/…`) of `--list` output, without the transport.
fn listed_items(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .filter_map(|line| line.split('\t').next())
        .filter_map(|name| name.split_once("::").map(|(item, _)| item.to_owned()))
        .collect()
}

fn embeds_every_item(catalog: &Catalog) -> Result<(), String> {
    let (status, listing) = kit(&["--list", "--binary", MEMOREE])?;
    if status != Some(0) {
        return Err(format!("--list exited with {status:?}"));
    }
    let mut expected: BTreeSet<String> = catalog.case_files().map(|(path, _)| case_name(path)).collect();
    expected.extend(catalog.scenarios().into_iter().map(|s| s.dir));
    // Cases limited to the in-process transport have no kit trial.
    for (path, bytes) in catalog.case_files() {
        if let Ok(case) = case::load(path, bytes)
            && !case.applies_to("binary")
            && !case.applies_to("daemon")
        {
            expected.remove(&case_name(path));
        }
    }
    let listed = listed_items(&listing);
    if listed == expected {
        return Ok(());
    }
    let missing: Vec<_> = expected.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&expected).collect();
    Err(format!(
        "the kit's embedded data differs from the checkout (rebuild it): missing {missing:?}, extra {extra:?}"
    ))
}

fn level_v1_lists_only_v1() -> Result<(), String> {
    let (_, listing) = kit(&["--list", "--binary", MEMOREE, "--level", "v1"])?;
    let trials: Vec<&str> = listing.lines().filter(|l| l.contains("::")).collect();
    if trials.is_empty() {
        return Err("--level v1 lists no trial".to_owned());
    }
    match trials.iter().find(|line| line.split('\t').nth(1) != Some("v1")) {
        Some(line) => Err(format!("--level v1 lists a trial of another level: {line}")),
        None => Ok(()),
    }
}

fn level_v1_7_lists_v1_and_v1_7_trials_only() -> Result<(), String> {
    let (_, listing) = kit(&["--list", "--binary", MEMOREE, "--level", "v1.7"])?;
    let levels: BTreeSet<&str> = listing
        .lines()
        .filter(|l| l.contains("::"))
        .filter_map(|line| line.split('\t').nth(1))
        .collect();
    if levels == BTreeSet::from(["v1", "v1.7"]) {
        Ok(())
    } else {
        Err(format!(
            "--level v1.7 lists trials of the levels {levels:?}, not v1 and v1.7"
        ))
    }
}

fn failure_exits_one_with_summary() -> Result<(), String> {
    let (status, stdout) = kit(&[
        "--daemon-command",
        "exit 3 {endpoint}",
        "--filter",
        "^v1/artifact/put_text::",
    ])?;
    if status != Some(1) || !stdout.lines().any(|l| l == "0 passed, 1 failed, 0 skipped") {
        return Err(format!(
            "expected exit 1 and `0 passed, 1 failed, 0 skipped`, got {status:?}:\n{stdout}"
        ));
    }
    Ok(())
}

fn junit_report_parses(dir: &Path) -> Result<(), String> {
    let report = dir.join("report.xml");
    let report_arg = report.to_string_lossy().into_owned();
    let (status, stdout) = kit(&[
        "--binary",
        MEMOREE,
        "--filter",
        "^v1/envelope/version_defaults_to_one::",
        "--format",
        "junit",
        "--output",
        &report_arg,
    ])?;
    if status != Some(0) || !stdout.contains("2 passed, 0 failed, 0 skipped") {
        return Err(format!("expected two passing trials, got {status:?}:\n{stdout}"));
    }
    let xml = std::fs::read_to_string(&report).map_err(|e| e.to_string())?;
    let document = roxmltree::Document::parse(&xml).map_err(|e| format!("not XML: {e}"))?;
    let cases = document.descendants().filter(|n| n.has_tag_name("testcase")).count();
    if document.root_element().tag_name().name() != "testsuites" || cases != 2 {
        return Err(format!("unexpected JUnit structure:\n{xml}"));
    }
    Ok(())
}

/// The kit trials.
pub fn trials(catalog: Arc<Catalog>) -> Vec<Trial> {
    vec![
        Trial::test("kit/embeds_every_case_and_scenario_of_the_checkout", move || {
            embeds_every_item(&catalog).map_err(Failed::from)
        }),
        Trial::test("kit/level_v1_lists_only_v1_trials", || {
            level_v1_lists_only_v1().map_err(Failed::from)
        }),
        Trial::test("kit/level_v1_7_lists_v1_and_v1_7_trials_only", || {
            level_v1_7_lists_v1_and_v1_7_trials_only().map_err(Failed::from)
        }),
        Trial::test("kit/a_failing_trial_exits_1_with_the_summary_line", || {
            failure_exits_one_with_summary().map_err(Failed::from)
        }),
        Trial::test("kit/junit_report_parses", || {
            let dir = tempfile::tempdir().map_err(|e| Failed::from(e.to_string()))?;
            junit_report_parses(dir.path()).map_err(Failed::from)
        }),
    ]
}
