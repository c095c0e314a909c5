//! Running one compiler process: its own process group, a cleared environment, stdin fed
//! from a thread, stdout and stderr read to a cap, and a hard deadline that kills the whole
//! group. Also the private scratch directory a compilation runs in.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How often a running child is polled for exit.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// What one process run needs.
pub(crate) struct Invocation<'a> {
    pub program: &'a str,
    pub args: &'a [OsString],
    pub cwd: &'a Path,
    pub env: &'a [(String, OsString)],
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Bytes of stdout and of stderr kept; the rest is drained and counted.
    pub capture_cap: usize,
}

/// A stream read to its end, keeping at most the cap.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub bytes: Vec<u8>,
    /// Every byte the process wrote, kept or not.
    pub total: usize,
}

/// A process that exited before the deadline.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Whether the whole stdin was delivered.
    pub stdin: io::Result<()>,
}

#[derive(Debug)]
pub(crate) enum RunError {
    Spawn(io::Error),
    Wait(io::Error),
    TimedOut,
}

enum Done {
    Stdin(io::Result<()>),
    Stdout(Captured),
    Stderr(Captured),
}

/// Runs the invocation to completion or to its deadline, whichever comes first.
pub(crate) fn run(invocation: Invocation<'_>) -> Result<Finished, RunError> {
    let deadline = Instant::now() + invocation.timeout;
    let mut child = Command::new(invocation.program)
        .args(invocation.args)
        .current_dir(invocation.cwd)
        .env_clear()
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(RunError::Spawn)?;
    let group = child.id();
    let (tx, rx) = mpsc::channel();
    if let Some(mut stdin) = child.stdin.take() {
        let (tx, input) = (tx.clone(), invocation.stdin);
        thread::spawn(move || tx.send(Done::Stdin(stdin.write_all(&input))));
    }
    if let Some(stdout) = child.stdout.take() {
        let (tx, cap) = (tx.clone(), invocation.capture_cap);
        thread::spawn(move || tx.send(Done::Stdout(read_capped(stdout, cap))));
    }
    if let Some(stderr) = child.stderr.take() {
        let (tx, cap) = (tx.clone(), invocation.capture_cap);
        thread::spawn(move || tx.send(Done::Stderr(read_capped(stderr, cap))));
    }
    drop(tx);

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_group(group);
                let _ = child.wait();
                return Err(RunError::TimedOut);
            }
            Ok(None) => thread::sleep(POLL_INTERVAL),
            Err(error) => {
                kill_group(group);
                let _ = child.wait();
                return Err(RunError::Wait(error));
            }
        }
    };

    // The child has exited; a descendant may still hold the pipes open. Give the helper
    // threads until the deadline, then kill whatever is left of the group.
    let mut finished = Finished {
        status,
        stdout: Captured::default(),
        stderr: Captured::default(),
        stdin: Ok(()),
    };
    for _ in 0..3 {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(remaining) {
            Ok(Done::Stdin(result)) => finished.stdin = result,
            Ok(Done::Stdout(captured)) => finished.stdout = captured,
            Ok(Done::Stderr(captured)) => finished.stderr = captured,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                kill_group(group);
                return Err(RunError::TimedOut);
            }
        }
    }
    Ok(finished)
}

fn read_capped(mut reader: impl Read, cap: usize) -> Captured {
    let mut captured = Captured::default();
    let mut chunk = [0u8; 8192];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                captured.total += n;
                let keep = n.min(cap.saturating_sub(captured.bytes.len()));
                captured.bytes.extend_from_slice(&chunk[..keep]);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    captured
}

/// Sends SIGKILL to every process in the group the child leads.
fn kill_group(group: u32) {
    let Some(pgid) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) else {
        return;
    };
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
}

/// A private (0700) temporary directory removed, with its contents, on drop.
pub(crate) struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    pub fn create(prefix: &str) -> io::Result<ScratchDir> {
        let path = std::env::temp_dir().join(format!("{prefix}{}", ulid::Ulid::new()));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(ScratchDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, stdin: &[u8], timeout: Duration) -> Result<Finished, RunError> {
        let args = [OsString::from("-c"), OsString::from(script)];
        let env = [("PATH".to_owned(), std::env::var_os("PATH").unwrap_or_default())];
        run(Invocation {
            program: "/bin/sh",
            args: &args,
            cwd: Path::new("/"),
            env: &env,
            stdin: stdin.to_vec(),
            timeout,
            capture_cap: 16,
        })
    }

    #[test]
    fn output_beyond_the_cap_is_counted_but_not_kept() {
        let finished = sh("cat; printf 0123456789abcdefXYZ >&2", b"hello", Duration::from_secs(10)).unwrap();
        assert!(finished.status.success());
        assert_eq!(finished.stdout.bytes, b"hello");
        assert_eq!(finished.stderr.bytes, b"0123456789abcdef");
        assert_eq!(finished.stderr.total, 19);
        assert!(finished.stdin.is_ok());
    }

    #[test]
    fn a_process_group_past_its_deadline_is_killed() {
        let started = Instant::now();
        let result = sh("sleep 30 & sleep 30", b"", Duration::from_millis(200));
        assert!(matches!(result, Err(RunError::TimedOut)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_missing_program_is_a_spawn_failure() {
        let result = run(Invocation {
            program: "/nonexistent/memoree-compiler",
            args: &[],
            cwd: Path::new("/"),
            env: &[],
            stdin: Vec::new(),
            timeout: Duration::from_secs(1),
            capture_cap: 16,
        });
        assert!(matches!(result, Err(RunError::Spawn(_))));
    }

    #[test]
    fn scratch_dirs_are_private_and_removed_on_drop() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = ScratchDir::create("memoree-test-").unwrap();
        let path = scratch.path().to_owned();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(scratch);
        assert!(!path.exists());
    }
}
