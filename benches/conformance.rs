//! The conformance kit's own overhead (issue 16): the full v1 suite over the daemon transport
//! (`memoree-conformance --binary memoree --level v1 --filter '::daemon$' --jobs 2`, a fresh
//! store and daemon per trial) must finish in under 60 s on two cores.
//!
//! Floor: the part no runner can avoid — starting one `memoree serve` per trial on a fresh data
//! directory, waiting for its first `capabilities` reply and stopping it, two at a time. The
//! rest is the trials' own requests and the kit (rendering, matching, reports).
//!
//! `MEMOREE_BENCH_ITERATIONS` (default 1) repeats the suite; the fastest run counts.

#![allow(clippy::print_stdout)]

#[path = "support/targets.rs"]
mod targets;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const KIT: &str = env!("CARGO_BIN_EXE_memoree-conformance");
const MEMOREE: &str = env!("CARGO_BIN_EXE_memoree");
const JOBS: usize = 2;
const TARGET_SECONDS: f64 = 60.0;

/// The number of v1 daemon trials, from the kit's own listing.
fn trial_count() -> usize {
    let output = Command::new(KIT)
        .args(["--list", "--binary", MEMOREE, "--level", "v1", "--filter", "::daemon$"])
        .output()
        .expect("run the kit");
    assert!(output.status.success(), "memoree-conformance --list failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains("::daemon\t"))
        .count()
}

/// Runs the v1 daemon suite once; panics unless every trial passes.
fn suite() -> Duration {
    let started = Instant::now();
    let output = Command::new(KIT)
        .args(["--binary", MEMOREE, "--level", "v1", "--filter", "::daemon$", "--jobs"])
        .arg(JOBS.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run the kit");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the v1 suite failed:\n{stdout}");
    elapsed
}

/// One daemon start, first reply and stop on a fresh data directory.
fn start_and_stop(dir: &Path) {
    let socket = dir.join("m.sock");
    let mut child = Command::new(MEMOREE)
        .arg("serve")
        .arg("--listen")
        .arg(format!("unix://{}", socket.display()))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("MEMOREE_HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn memoree serve");
    let request = br#"{"request_id":"floor","op":"capabilities","input":{}}"#;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut stream) = UnixStream::connect(&socket) {
            let mut frame = (request.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(request);
            let mut header = [0u8; 4];
            if stream.write_all(&frame).is_ok() && stream.read_exact(&mut header).is_ok() {
                let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
                if stream.read_exact(&mut body).is_ok() {
                    break;
                }
            }
        }
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::TERM);
    child.wait().expect("wait for the daemon");
}

/// `count` daemon start/stop cycles, `JOBS` at a time.
fn floor(count: usize) -> Duration {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..JOBS {
            scope.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < count {
                    let dir = tempfile::tempdir().expect("temporary directory");
                    start_and_stop(dir.path());
                }
            });
        }
    });
    started.elapsed()
}

fn main() {
    // `cargo bench` passes `--bench`; there are no criterion groups here.
    let iterations = std::env::var("MEMOREE_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let trials = trial_count();
    let floor = floor(trials);
    let best = (0..iterations).map(|_| suite()).min().expect("one iteration");
    let seconds = best.as_secs_f64();
    println!(
        "conformance: {trials} v1 daemon trials, --jobs {JOBS}: {seconds:.1} s (floor {:.1} s)",
        floor.as_secs_f64()
    );
    targets::target(
        16,
        &format!("full v1 suite over the daemon transport ({trials} trials, --jobs {JOBS})"),
        &format!("{seconds:.1} s"),
        &format!("{:.1} s (a daemon start+stop per trial)", floor.as_secs_f64()),
        &format!("< {TARGET_SECONDS:.0} s"),
        Some(seconds < TARGET_SECONDS),
    );
}
