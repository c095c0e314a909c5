//! The reaper of clusters a killed test run left behind.
//!
//! A cluster's directory holds `owner.pid`, the id of the test process that started it,
//! written before `initdb` runs. A test process that is killed (a cancelled `cargo test`, a
//! CI timeout) never runs the cluster's `Drop`, so its server would keep running and its
//! directory would stay. The first [`super::TestCluster::start`] of every later process looks
//! at the `memoree-pg-*` directories in the temporary directory: one whose owner no longer
//! exists has its server stopped (`pg_ctl stop -m immediate`) and is removed. Directories of
//! live processes, and any without an owner file, are left alone.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Once;

use rustix::io::Errno;
use rustix::process::Pid;

/// The file in a cluster directory naming the process that owns it.
pub(super) const OWNER_FILE: &str = "owner.pid";

/// The prefix of every cluster directory in the temporary directory.
pub(super) const DIR_PREFIX: &str = "memoree-pg-";

/// Records this process as the owner of the cluster in `dir`.
pub(super) fn record_owner(dir: &Path) {
    std::fs::write(dir.join(OWNER_FILE), std::process::id().to_string())
        .unwrap_or_else(|e| panic!("write {}: {e}", dir.join(OWNER_FILE).display()));
}

/// Reaps orphaned clusters once per process; `stop` stops the server of a data directory.
pub(super) fn reap_once(stop: impl Fn(&Path)) {
    static REAPED: Once = Once::new();
    REAPED.call_once(|| {
        for dir in orphans(&std::env::temp_dir()) {
            stop(&dir.join("data"));
            // Written to stderr directly, so the test harness's capture does not swallow it.
            let note = match std::fs::remove_dir_all(&dir) {
                Ok(()) => format!("note: removed the test cluster {} of a killed test run", dir.display()),
                Err(e) => format!("note: cannot remove the orphaned test cluster {}: {e}", dir.display()),
            };
            let _ = writeln!(std::io::stderr(), "{note}");
        }
    });
}

/// The cluster directories under `tmp` whose owner process is gone.
fn orphans(tmp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(|n| n.starts_with(DIR_PREFIX)))
        .map(|entry| entry.path())
        .filter(|dir| owner(dir).is_some_and(|pid| !is_alive(pid)))
        .collect()
}

fn owner(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join(OWNER_FILE)).ok()?.trim().parse().ok()
}

/// Whether a process `pid` exists (one of another user counts as existing).
fn is_alive(pid: i32) -> bool {
    let Some(pid) = Pid::from_raw(pid) else {
        return false;
    };
    !matches!(rustix::process::test_kill_process(pid), Err(Errno::SRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_of_dead_owners_are_orphans() {
        let tmp = tempfile::tempdir().unwrap();
        let make = |name: &str, owner: Option<String>| {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            if let Some(owner) = owner {
                std::fs::write(dir.join(OWNER_FILE), owner).unwrap();
            }
            dir
        };
        // A process that has exited: a child that was waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id().to_string();
        child.wait().unwrap();
        let orphan = make("memoree-pg-dead", Some(dead));
        make("memoree-pg-live", Some(std::process::id().to_string()));
        make("memoree-pg-unowned", None);
        make("other-dead", Some(i32::MAX.to_string()));
        assert_eq!(orphans(tmp.path()), vec![orphan]);
    }
}
