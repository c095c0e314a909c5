//! The optional parts of the test suite: programs and files that live outside the repository.
//!
//! `cargo test --locked` passes on a machine that has only Rust, a C compiler and Python. A test
//! that needs one of the parts below looks for it; when the part is missing it prints a visible
//! `SKIPPED` line with the reason and the install command, records the skip, and returns. The
//! `parts` test target, which runs after every other test binary of the run, prints one summary
//! line naming every part that was skipped.
//!
//! **Strict mode.** Under `CI=true` (any non-empty `CI` other than `false`/`0`) or
//! `MEMOREE_REQUIRE_TEST_PARTS=1`, a missing part is a test failure, as CI requires every part.
//!
//! The skip notice is written straight to the process's standard error, not through
//! `eprintln!`, so the test harness's output capture does not swallow it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// One external part a test can need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The PostgreSQL server binaries (`initdb`, `pg_ctl`): throw-away clusters.
    Postgres,
    /// Headless Chromium: the inspector's browser test.
    Chromium,
    /// The official Python MCP SDK in a venv: the second MCP client.
    PythonMcp,
    /// The project's shared inputs beside the repository (`../shared`): the protocol text, the
    /// reference's facts sheet and schema bundle, the benchmark data.
    Shared,
}

/// Every part, in the order the summary names them.
pub const ALL: [Part; 4] = [Part::Postgres, Part::Chromium, Part::PythonMcp, Part::Shared];

/// The one command that installs every part a package manager provides (the same one
/// `.ci/run` uses).
pub const INSTALL_ALL: &str = "bash .ci/install-test-parts";

impl Part {
    /// The short name used in notices, records and the summary.
    pub fn name(self) -> &'static str {
        match self {
            Part::Postgres => "postgresql",
            Part::Chromium => "chromium",
            Part::PythonMcp => "python-mcp",
            Part::Shared => "shared",
        }
    }

    /// How to get the part.
    pub fn install_hint(self) -> &'static str {
        match self {
            Part::Postgres => {
                "apt-get install postgresql (or set MEMOREE_PG_BIN to the directory holding initdb and pg_ctl)"
            }
            Part::Chromium => "apt-get install chromium (or set MEMOREE_CHROMIUM to a Chromium binary)",
            Part::PythonMcp => {
                "python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install -r tests/mcp_python/requirements.txt \
                 (or set MEMOREE_MCP_PYTHON)"
            }
            Part::Shared => "check out the project's shared/ directory beside the repository (../shared)",
        }
    }

    fn from_name(name: &str) -> Option<Part> {
        ALL.into_iter().find(|part| part.name() == name)
    }
}

/// Whether a missing part fails the run: under CI or `MEMOREE_REQUIRE_TEST_PARTS=1`.
pub fn strict() -> bool {
    let set = |name: &str| {
        std::env::var(name)
            .map(|value| !value.is_empty() && value != "false" && value != "0")
            .unwrap_or(false)
    };
    set("CI") || set("MEMOREE_REQUIRE_TEST_PARTS")
}

/// The name of the running test: libtest names each test's thread after it.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .unwrap_or("a test")
        .to_owned()
}

/// Reports that `test` cannot run because `part` is missing (`why` says what was looked for).
/// Under [`strict`] mode this panics; elsewhere it prints the notice, records the skip for the
/// run's summary and returns, and the caller returns without asserting anything.
pub fn skip(part: Part, test: &str, why: &str) {
    if strict() {
        panic!(
            "MISSING TEST PART: {test} needs {} ({why}), and CI or MEMOREE_REQUIRE_TEST_PARTS=1 requires \
             every test part; install: {}",
            part.name(),
            part.install_hint()
        );
    }
    let notice = format!(
        "SKIPPED {test}: needs {} ({why}); install: {}",
        part.name(),
        part.install_hint()
    );
    let _ = writeln!(std::io::stderr(), "{notice}");
    record(part, test);
}

/// Says visibly, past libtest's capture, that `test` skipped part of its work for a reason
/// that is no missing part (not being root, say); never fails and records nothing.
pub fn notice(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// A file under `../shared` beside the repository, or `None` after [`skip`] when it is absent.
pub fn shared_file(relative: &str, test: &str) -> Option<PathBuf> {
    let path = shared_dir().join(relative);
    if path.is_file() {
        return Some(path);
    }
    skip(Part::Shared, test, &format!("{} is absent", path.display()));
    None
}

/// `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// Where this run's skips are recorded: one directory per `cargo test` invocation, named by
/// the pid of the process that started the test binaries (cargo), under the build profile's
/// directory that every test binary of the run shares.
fn run_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // <target>/<profile>/deps/<binary>
    let profile = exe.parent()?.parent()?;
    let parent = rustix::process::getppid()?.as_raw_nonzero().get();
    Some(profile.join("test-parts").join(parent.to_string()))
}

fn record(part: Part, test: &str) {
    let Some(dir) = run_dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let line = format!("{}\t{}\n", part.name(), test.replace(['\t', '\n'], " "));
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("skipped"))
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// The run's summary line; removes the run's records.
pub fn take_summary() -> String {
    let Some(dir) = run_dir() else {
        return "test parts: no record of this run's skips could be kept".to_owned();
    };
    let text = std::fs::read_to_string(dir.join("skipped")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    summarize(&text)
}

/// The summary line for the recorded skips (`part<TAB>test` lines).
pub fn summarize(records: &str) -> String {
    let mut counts: Vec<(Part, usize)> = Vec::new();
    for part in records
        .lines()
        .filter_map(|line| line.split('\t').next())
        .filter_map(Part::from_name)
    {
        match counts.iter_mut().find(|(p, _)| *p == part) {
            Some((_, count)) => *count += 1,
            None => counts.push((part, 1)),
        }
    }
    if counts.is_empty() {
        return "test parts: every optional part was present; nothing was skipped".to_owned();
    }
    counts.sort_by_key(|(part, _)| ALL.iter().position(|p| p == part));
    let listed: Vec<String> = counts
        .iter()
        .map(|(part, count)| format!("{} ({count} test{})", part.name(), if *count == 1 { "" } else { "s" }))
        .collect();
    format!(
        "test parts: SKIPPED for want of {}; install them all with `{INSTALL_ALL}`",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_each_part_once_in_a_fixed_order() {
        let records = "shared\tlint/a\npostgresql\tstore::x\npostgresql\tstore::y\nbogus\tz\n";
        assert_eq!(
            summarize(records),
            format!(
                "test parts: SKIPPED for want of postgresql (2 tests), shared (1 test); install them all with `{INSTALL_ALL}`"
            )
        );
    }

    #[test]
    fn an_empty_record_says_nothing_was_skipped() {
        assert_eq!(
            summarize(""),
            "test parts: every optional part was present; nothing was skipped"
        );
    }
}
