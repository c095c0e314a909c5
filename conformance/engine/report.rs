//! Run reports: `text` (a line per trial, then every failure), `junit` (JUnit XML that CI
//! systems render: one `<testsuite>` per transport, validated by `conformance/junit.xsd`),
//! `tap` (TAP version 13) and `json`. Every format ends in, or is accompanied by, the summary
//! line `N passed, M failed, K skipped`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::plan::Trial;
use super::runner::{Outcome, Status};

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Junit,
    Tap,
    Json,
}

impl Format {
    pub fn parse(text: &str) -> Result<Format, String> {
        match text {
            "text" => Ok(Format::Text),
            "junit" => Ok(Format::Junit),
            "tap" => Ok(Format::Tap),
            "json" => Ok(Format::Json),
            other => Err(format!("--format must be text, junit, tap or json, not {other:?}")),
        }
    }
}

/// One finished trial, as reported.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub item: String,
    pub transport: String,
    pub level: String,
    pub basis: Vec<String>,
    pub status: Status,
    pub duration: Duration,
}

impl Entry {
    pub fn new(trial: &Trial, outcome: &Outcome) -> Entry {
        Entry {
            name: trial.name.clone(),
            item: trial.item.clone(),
            transport: trial.transport_name.to_owned(),
            level: trial.level.map_or("unknown", |l| l.as_str()).to_owned(),
            basis: trial.basis.clone(),
            status: outcome.status.clone(),
            duration: outcome.duration,
        }
    }
}

/// Counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Summary {
        let mut summary = Summary::default();
        for entry in entries {
            match entry.status {
                Status::Passed => summary.passed += 1,
                Status::Failed(_) => summary.failed += 1,
                Status::Skipped(_) => summary.skipped += 1,
            }
        }
        summary
    }

    pub fn total(self) -> usize {
        self.passed + self.failed + self.skipped
    }

    /// `N passed, M failed, K skipped`.
    pub fn line(self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// The report in `format`.
pub fn render(format: Format, entries: &[Entry], elapsed: Duration) -> String {
    match format {
        Format::Text => text(entries, elapsed),
        Format::Junit => junit(entries, elapsed),
        Format::Tap => tap(entries),
        Format::Json => serde_json::to_string_pretty(&json_report(entries, elapsed)).unwrap_or_default() + "\n",
    }
}

/// The one-line progress mark of a finished trial (text format).
pub fn progress_line(entry: &Entry) -> String {
    let mark = match entry.status {
        Status::Passed => "ok     ",
        Status::Failed(_) => "FAILED ",
        Status::Skipped(_) => "skipped",
    };
    format!(
        "{mark} {} [{}] ({:.2}s)",
        entry.name,
        entry.level,
        entry.duration.as_secs_f64()
    )
}

/// Trials per transport and level: `daemon: 262 v1, 60 memoree`.
pub fn counts_by_transport(entries: &[Entry]) -> String {
    let mut counts: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for entry in entries {
        *counts
            .entry(entry.transport.as_str())
            .or_default()
            .entry(entry.level.as_str())
            .or_default() += 1;
    }
    counts
        .iter()
        .map(|(transport, levels)| {
            let levels: Vec<String> = levels.iter().map(|(level, n)| format!("{n} {level}")).collect();
            format!("{transport}: {}", levels.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn text(entries: &[Entry], elapsed: Duration) -> String {
    let mut out = String::new();
    for entry in entries {
        writeln!(out, "{}", progress_line(entry)).ok();
    }
    let failures: Vec<&Entry> = entries
        .iter()
        .filter(|e| matches!(e.status, Status::Failed(_)))
        .collect();
    if !failures.is_empty() {
        writeln!(out, "\nfailures:").ok();
        for entry in failures {
            if let Status::Failed(message) = &entry.status {
                writeln!(out, "\n---- {} [{}] ----\n{message}", entry.name, entry.level).ok();
                for basis in &entry.basis {
                    writeln!(out, "  basis: {basis}").ok();
                }
            }
        }
        writeln!(out).ok();
    }
    writeln!(out, "trials by transport: {}", counts_by_transport(entries)).ok();
    writeln!(out, "finished in {:.1}s", elapsed.as_secs_f64()).ok();
    writeln!(out, "{}", Summary::of(entries).line()).ok();
    out
}

/// Escapes text for XML attributes and content; characters XML 1.0 forbids become U+FFFD.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn seconds(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64())
}

fn junit(entries: &[Entry], elapsed: Duration) -> String {
    let mut suites: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for entry in entries {
        suites.entry(entry.transport.as_str()).or_default().push(entry);
    }
    let total = Summary::of(entries);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    writeln!(
        out,
        "<testsuites name=\"memoree-conformance\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\">",
        total.total(),
        total.failed,
        total.skipped,
        seconds(elapsed)
    )
    .ok();
    for (transport, members) in suites {
        let summary = Summary::of(members.iter().copied());
        let time: Duration = members.iter().map(|e| e.duration).sum();
        writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\">",
            xml_escape(transport),
            summary.total(),
            summary.failed,
            summary.skipped,
            seconds(time)
        )
        .ok();
        for entry in members {
            write!(
                out,
                "    <testcase name=\"{}\" classname=\"conformance.{}.{}\" time=\"{}\">",
                xml_escape(&entry.item),
                xml_escape(&entry.level),
                xml_escape(transport),
                seconds(entry.duration)
            )
            .ok();
            match &entry.status {
                Status::Passed => {}
                Status::Failed(message) => {
                    let first = message.lines().next().unwrap_or_default();
                    write!(
                        out,
                        "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
                        xml_escape(first),
                        xml_escape(&entry.level),
                        xml_escape(message)
                    )
                    .ok();
                }
                Status::Skipped(reason) => {
                    write!(out, "\n      <skipped message=\"{}\"/>", xml_escape(reason)).ok();
                }
            }
            let basis: Vec<String> = entry.basis.iter().map(|b| format!("basis: {b}")).collect();
            write!(
                out,
                "\n      <system-out>level: {}\n{}</system-out>\n    </testcase>\n",
                xml_escape(&entry.level),
                xml_escape(&basis.join("\n"))
            )
            .ok();
        }
        writeln!(out, "  </testsuite>").ok();
    }
    writeln!(out, "</testsuites>").ok();
    out
}

/// One-line YAML-safe text for TAP diagnostics.
fn tap(entries: &[Entry]) -> String {
    let mut out = format!("TAP version 13\n1..{}\n", entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let number = index + 1;
        match &entry.status {
            Status::Passed => writeln!(out, "ok {number} - {} [{}]", entry.name, entry.level).ok(),
            Status::Skipped(reason) => writeln!(
                out,
                "ok {number} - {} [{}] # SKIP {}",
                entry.name,
                entry.level,
                reason.replace('\n', " ")
            )
            .ok(),
            Status::Failed(message) => {
                writeln!(out, "not ok {number} - {} [{}]", entry.name, entry.level).ok();
                writeln!(out, "  ---\n  level: {}\n  message: |", entry.level).ok();
                for line in message.lines() {
                    writeln!(out, "    {line}").ok();
                }
                writeln!(out, "  ...").ok()
            }
        };
    }
    out
}

fn json_report(entries: &[Entry], elapsed: Duration) -> Value {
    let summary = Summary::of(entries);
    let trials: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let (status, message) = match &entry.status {
                Status::Passed => ("passed", None),
                Status::Failed(m) => ("failed", Some(m.clone())),
                Status::Skipped(m) => ("skipped", Some(m.clone())),
            };
            json!({
                "name": entry.name,
                "item": entry.item,
                "transport": entry.transport,
                "level": entry.level,
                "basis": entry.basis,
                "status": status,
                "message": message,
                "duration_ms": entry.duration.as_millis() as u64,
            })
        })
        .collect();
    json!({
        "summary": {
            "passed": summary.passed,
            "failed": summary.failed,
            "skipped": summary.skipped,
            "elapsed_ms": elapsed.as_millis() as u64,
        },
        "trials": trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, transport: &str, status: Status) -> Entry {
        Entry {
            name: format!("{name}::{transport}"),
            item: name.to_owned(),
            transport: transport.to_owned(),
            level: "v1".to_owned(),
            basis: vec!["protocol: v is the protocol version & <defaults> to 1".to_owned()],
            status,
            duration: Duration::from_millis(12),
        }
    }

    fn sample() -> Vec<Entry> {
        vec![
            entry("v1/a/passes", "daemon", Status::Passed),
            entry(
                "v1/a/fails",
                "daemon",
                Status::Failed("at $.error: expected \"<x>\" & got \u{1}\nsecond line".to_owned()),
            ),
            entry(
                "v1/a/skipped",
                "endpoint",
                Status::Skipped("needs a fresh store".to_owned()),
            ),
        ]
    }

    #[test]
    fn the_summary_line_counts_passed_failed_and_skipped() {
        assert_eq!(Summary::of(&sample()).line(), "1 passed, 1 failed, 1 skipped");
        assert!(render(Format::Text, &sample(), Duration::ZERO).ends_with("1 passed, 1 failed, 1 skipped\n"));
    }

    /// The JUnit report is well-formed XML with the element and attribute structure of
    /// `conformance/junit.xsd` (CI also validates it against that XSD with xmllint).
    #[test]
    fn junit_output_parses_and_follows_the_junit_schema() {
        let xml = render(Format::Junit, &sample(), Duration::from_secs(1));
        let document = roxmltree::Document::parse(&xml).expect("well-formed XML");
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        for attribute in ["name", "tests", "failures", "errors", "skipped", "time"] {
            assert!(root.attribute(attribute).is_some(), "testsuites@{attribute}");
        }
        assert_eq!(root.attribute("tests"), Some("3"));
        let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
        assert_eq!(suites.len(), 2);
        let mut cases = 0;
        for suite in suites {
            assert_eq!(suite.tag_name().name(), "testsuite");
            for attribute in ["name", "tests", "failures", "errors", "skipped", "time"] {
                assert!(suite.attribute(attribute).is_some(), "testsuite@{attribute}");
            }
            for case in suite.children().filter(|n| n.is_element()) {
                cases += 1;
                assert_eq!(case.tag_name().name(), "testcase");
                for attribute in ["name", "classname", "time"] {
                    assert!(case.attribute(attribute).is_some(), "testcase@{attribute}");
                }
                for child in case.children().filter(|n| n.is_element()) {
                    assert!(["failure", "skipped", "system-out"].contains(&child.tag_name().name()));
                }
            }
        }
        assert_eq!(cases, 3);
        let failure = document
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .expect("a failure element");
        assert_eq!(
            failure.attribute("message"),
            Some("at $.error: expected \"<x>\" & got \u{FFFD}")
        );
        assert!(failure.text().unwrap_or_default().contains("second line"));
    }

    #[test]
    fn tap_output_numbers_every_trial_and_marks_skips() {
        let tap = render(Format::Tap, &sample(), Duration::ZERO);
        assert!(tap.starts_with("TAP version 13\n1..3\n"));
        assert!(tap.contains("ok 1 - v1/a/passes::daemon"));
        assert!(tap.contains("not ok 2 - v1/a/fails::daemon"));
        assert!(tap.contains("ok 3 - v1/a/skipped::endpoint [v1] # SKIP needs a fresh store"));
    }

    #[test]
    fn json_output_carries_the_summary_and_every_trial() {
        let json: Value = serde_json::from_str(&render(Format::Json, &sample(), Duration::ZERO)).unwrap();
        assert_eq!(json["summary"]["failed"], 1);
        assert_eq!(json["trials"].as_array().map(Vec::len), Some(3));
        assert_eq!(json["trials"][1]["status"], "failed");
    }
}
