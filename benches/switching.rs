//! Issue 30: `memoree import --from mcp-memory` of a 10 000-item `memory.jsonl` (8 000
//! entities with one to three observations, 2 000 relations between them), measured on the
//! `memoree` binary of this build as a child process against a warm autostarted daemon.
//!
//! Targets: the import finishes in < 10 s and its process stays within 64 MiB peak RSS
//! (`wait4` `ru_maxrss`). Also reported: the daemon's peak RSS (`VmHWM`) after the import,
//! and a second import of the same file (nothing new: the re-run cost).
//!
//! `MEMOREE_BENCH_IMPORT_ITEMS` overrides the item count.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/targets.rs"]
mod targets;

#[path = "support/rng.rs"]
mod rng;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIME_TARGET: Duration = Duration::from_secs(10);
const RSS_TARGET_MIB: f64 = 64.0;

/// A realistic `memory.jsonl`: people, projects and tools with short observations.
fn fixture(items: usize) -> String {
    let mut rng = rng::Rng(30);
    let entities = items * 4 / 5;
    let kinds = ["person", "project", "tool", "organization", "concept"];
    let topics = [
        "Rust",
        "SQLite",
        "the billing service",
        "CI",
        "retrieval",
        "TLS",
        "the inspector",
    ];
    let mut text = String::with_capacity(items * 200);
    for i in 0..entities {
        let kind = kinds[rng.below(kinds.len())];
        let observations: Vec<String> = (0..1 + rng.below(3))
            .map(|j| {
                format!(
                    "{kind} {i} note {j}: works with {} since {} and prefers {}",
                    topics[rng.below(topics.len())],
                    2015 + rng.below(10),
                    topics[rng.below(topics.len())]
                )
            })
            .collect();
        let line = serde_json::json!({"type": "entity", "name": format!("{kind}_{i}"), "entityType": kind, "observations": observations});
        writeln!(text, "{line}").unwrap();
    }
    let names: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let relation_types = ["works_on", "uses", "knowsAbout", "depends on", "owned_by"];
    for _ in entities..items {
        // Two different entities: a relation of an artifact to itself is refused.
        let from = rng.below(names.len());
        let to = (from + 1 + rng.below(names.len() - 1)) % names.len();
        let line = serde_json::json!({
            "type": "relation",
            "from": names[from],
            "to": names[to],
            "relationType": relation_types[rng.below(relation_types.len())],
        });
        writeln!(text, "{line}").unwrap();
    }
    text
}

fn memoree(home: &Path, project: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memoree"));
    for name in [
        "MEMOREE_ENDPOINT",
        "MEMOREE_NO_AUTOSTART",
        "MEMOREE_CONTEXT",
        "MEMOREE_DATA_DIR",
        "MEMOREE_RUNTIME_DIR",
    ] {
        command.env_remove(name);
    }
    command.env("MEMOREE_HOME", home).current_dir(project);
    command
}

/// Runs an import; returns its wall time, peak RSS in MiB and envelope.
// The child is reaped by `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn import(home: &Path, project: &Path, file: &Path) -> (Duration, f64, serde_json::Value) {
    let started = Instant::now();
    let mut child = memoree(home, project)
        .args(["import", "--from", "mcp-memory"])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut envelope = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut envelope).unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid out-pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = started.elapsed();
    assert_eq!(waited, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "import failed: {status}: {envelope}"
    );
    (
        took,
        usage.ru_maxrss as f64 / 1024.0,
        serde_json::from_str(&envelope).unwrap(),
    )
}

fn daemon_peak_mib(home: &Path, project: &Path) -> Option<f64> {
    let output = memoree(home, project).args(["daemon", "status"]).output().ok()?;
    let status: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    let pid = status["result"]["daemon_pid"].as_u64()?;
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let items = std::env::var("MEMOREE_BENCH_IMPORT_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let file = dir.path().join("memory.jsonl");
    std::fs::write(&file, fixture(items)).unwrap();
    assert!(memoree(&home, &project).arg("init").output().unwrap().status.success());
    // A warm daemon: the import measures the import, not the daemon's start.
    assert!(
        memoree(&home, &project)
            .arg("capabilities")
            .output()
            .unwrap()
            .status
            .success()
    );

    let (took, rss, envelope) = import(&home, &project, &file);
    let result = &envelope["result"];
    let daemon = daemon_peak_mib(&home, &project);
    let (again, again_rss, second) = import(&home, &project, &file);
    let _ = memoree(&home, &project).args(["daemon", "stop"]).output();

    println!(
        "import --from mcp-memory, {items} items: {:.2} s, peak RSS {rss:.1} MiB; artifacts {}, claims {}, relations {}",
        took.as_secs_f64(),
        result["artifacts"]["created"],
        result["claims"]["created"],
        result["relations"]["created"]
    );
    println!(
        "re-import of the same file: {:.2} s, peak RSS {again_rss:.1} MiB; new artifacts {}, new claims {}, new relations {}",
        again.as_secs_f64(),
        second["result"]["artifacts"]["created"],
        second["result"]["claims"]["created"],
        second["result"]["relations"]["created"]
    );
    let mutations = ["artifacts", "claims", "relations"]
        .iter()
        .map(|k| result[k]["created"].as_u64().unwrap_or(0))
        .sum::<u64>();
    targets::target(
        30,
        &format!("import --from mcp-memory of {items} items ({mutations} writes), warm daemon"),
        &format!(
            "{:.2} s ({:.0} writes/s)",
            took.as_secs_f64(),
            mutations as f64 / took.as_secs_f64()
        ),
        "-",
        "< 10 s",
        Some(took < TIME_TARGET),
    );
    targets::target(
        30,
        &format!("import --from mcp-memory of {items} items, importer peak RSS"),
        &format!("{rss:.1} MiB"),
        "-",
        "<= 64 MiB",
        Some(rss <= RSS_TARGET_MIB),
    );
    if let Some(daemon) = daemon {
        targets::target(
            30,
            "daemon peak RSS (VmHWM) after that import",
            &format!("{daemon:.1} MiB"),
            "-",
            "reported",
            None,
        );
    }
    targets::target(
        30,
        &format!("re-import of the same {items} items (nothing new)"),
        &format!("{:.2} s", again.as_secs_f64()),
        "-",
        "reported",
        None,
    );
}
