//! Export and import throughput and peak memory (`spec/export-v1.md`), measured on the
//! `memoree` binary of this build as a child process, against the floor of a plain recursive
//! copy of the same data directory:
//!
//! 1. **store10k** — 10 000 artifacts of ~2 KB (inline) plus 1 000 cited claims, like the
//!    `admin` bench: `memoree export --all` (daemon not running) and
//!    `memoree import --data-dir NEW`; MB/s over the data directory's size, the ratio to the
//!    copy, and each process's peak RSS (`wait4` `ru_maxrss`).
//! 2. **store1gib** — a 1 GiB store (512 artifacts of 2 MiB in the CAS plus 10 000 small
//!    inline ones): the same measurements; the target is peak RSS under 64 MiB for both
//!    directions, whatever the store's size.
//!
//! `cargo bench --bench portable -- store10k` runs one section. `MEMOREE_BENCH_ARTIFACTS`
//! overrides the 10k section's artifact count; `MEMOREE_BENCH_ITERATIONS` the number of timed
//! runs (the best is reported).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/targets.rs"]
mod targets;

#[path = "support/sections.rs"]
mod sections;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memoree::fsutil;
use memoree::protocol::claim::ClaimType;
use memoree::service::Service;
use memoree::store::artifact::{self, BlobRef, NewRevision};
use memoree::store::claim::{self, EvidenceRef, NewClaimRevision};
use memoree::store::scope::Owner;

const BATCH: usize = 500;
const RSS_TARGET_MIB: f64 = 64.0;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn owner() -> Owner {
    Owner {
        workspace_id: "wsp_bench".to_owned(),
        project_id: "prj_bench".to_owned(),
        task_id: None,
        component: None,
    }
}

fn text(index: usize, bytes: usize) -> Vec<u8> {
    let words = [
        "sqlite",
        "authoritative",
        "blob",
        "cas",
        "revision",
        "claim",
        "evidence",
        "recall",
        "export",
    ];
    let mut out = format!("Artifact {index}. ");
    let mut i = index;
    while out.len() < bytes {
        out.push_str(words[i % words.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(bytes);
    out.into_bytes()
}

/// `small` inline artifacts of ~2 KB (one cited claim per ten) and `large` CAS artifacts of
/// `large_bytes` each.
fn seed(service: &Service, small: usize, large: usize, large_bytes: usize) {
    let store = service.store();
    for start in (0..small).step_by(BATCH) {
        let end = (start + BATCH).min(small);
        store
            .write(move |tx| {
                for index in start..end {
                    let bytes = text(index, 2048);
                    let new = NewRevision {
                        title: format!("Benchmark note {index}"),
                        media_type: "text/plain; charset=utf-8".to_owned(),
                        blob: BlobRef::inline(&bytes),
                        content: bytes,
                        provenance_json: "{}".to_owned(),
                        actor: None,
                        vectors: None,
                    };
                    let (row, _) = artifact::put(tx, &owner(), "note", &new)?;
                    if index % 10 == 0 {
                        let claim = NewClaimRevision {
                            statement: format!("Note {index} says sqlite is authoritative"),
                            confidence: Some(0.8),
                            evidence: vec![EvidenceRef {
                                artifact_id: row.artifact_id.clone(),
                                revision_id: row.revision_id.clone(),
                                start_byte: Some(0),
                                end_byte: Some(16),
                            }],
                            actor: None,
                            vectors: None,
                        };
                        claim::assert(tx, &owner(), ClaimType::Fact, &claim, None, None)?;
                    }
                }
                Ok(())
            })
            .unwrap();
    }
    for index in 0..large {
        let mut bytes = text(index + 1_000_000, large_bytes);
        // Distinct content per artifact, so the CAS holds `large` objects.
        bytes[..8].copy_from_slice(&(index as u64).to_le_bytes());
        let digest = store.blobs().unwrap().put(&bytes).unwrap();
        let new = NewRevision {
            title: format!("Large benchmark object {index}"),
            media_type: "application/octet-stream".to_owned(),
            blob: BlobRef::external(digest, bytes.len() as u64),
            content: bytes,
            provenance_json: "{}".to_owned(),
            actor: None,
            vectors: None,
        };
        store
            .write(move |tx| artifact::put(tx, &owner(), "blob", &new).map(drop))
            .unwrap();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs the binary with `args`, returning its wall time and peak RSS in MiB (from `wait4`).
// The child is reaped by `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn measured(args: &[&str], home: &Path) -> (Duration, f64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memoree"))
        .args(args)
        .env("MEMOREE_HOME", home)
        .env("MEMOREE_NO_AUTOSTART", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid out-pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = started.elapsed();
    assert_eq!(waited, pid);
    let mut envelope = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut envelope).unwrap();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?} failed: {status}: {envelope}"
    );
    // ru_maxrss is in KiB on Linux.
    (took, usage.ru_maxrss as f64 / 1024.0)
}

/// The best of `iterations` runs: wall time and the largest peak RSS seen.
fn best(iterations: usize, mut reset: impl FnMut(), mut run: impl FnMut() -> (Duration, f64)) -> (Duration, f64) {
    let mut fastest = Duration::MAX;
    let mut peak: f64 = 0.0;
    for _ in 0..iterations {
        reset();
        let (took, rss) = run();
        fastest = fastest.min(took);
        peak = peak.max(rss);
    }
    (fastest, peak)
}

fn section(name: &str, small: usize, large: usize, large_bytes: usize, iterations: usize) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let service = Service::open(&data).unwrap();
    let seeding = Instant::now();
    seed(&service, small, large, large_bytes);
    service.store().shutdown();
    drop(service);
    let (bytes, files) = fsutil::dir_size(&data).unwrap();
    let mb = bytes as f64 / 1e6;
    println!(
        "\n== {name}: {small} inline artifacts + {large} CAS artifacts of {} KiB; data directory {mb:.1} MB in {files} files (seeded in {:.1}s) ==",
        large_bytes / 1024,
        seeding.elapsed().as_secs_f64()
    );
    let home = dir.path().join("home");
    fs::create_dir(&home).unwrap();
    let archive = dir.path().join("archive");
    let imported = dir.path().join("imported");
    let copy = dir.path().join("copy");
    let clear = |path: &Path| {
        let _ = fs::remove_dir_all(path);
    };
    let (export, export_rss) = best(
        iterations,
        || clear(&archive),
        || {
            measured(
                &[
                    "export",
                    "--all",
                    "--data-dir",
                    data.to_str().unwrap(),
                    archive.to_str().unwrap(),
                ],
                &home,
            )
        },
    );
    let (archive_bytes, archive_files) = fsutil::dir_size(&archive).unwrap();
    let (import, import_rss) = best(
        iterations,
        || clear(&imported),
        || {
            measured(
                &[
                    "import",
                    archive.to_str().unwrap(),
                    "--data-dir",
                    imported.to_str().unwrap(),
                ],
                &home,
            )
        },
    );
    let floor = (0..iterations)
        .map(|_| {
            clear(&copy);
            let started = Instant::now();
            copy_tree(&data, &copy);
            started.elapsed()
        })
        .min()
        .unwrap();
    clear(&copy);
    if std::env::var_os("MEMOREE_BENCH_KEEP").is_some() {
        // Keeps the seeded store and its archive, e.g. to profile an import by hand.
        println!("kept {}", dir.keep().display());
        return;
    }
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!(
        "archive: {:.1} MB in {archive_files} files; {:<22} {:>9} {:>10} {:>12} {:>14}",
        archive_bytes as f64 / 1e6,
        "operation",
        "seconds",
        "MB/s",
        "x plain copy",
        "peak RSS MiB"
    );
    for (label, took, rss) in [("export", export, export_rss), ("import", import, import_rss)] {
        println!(
            "{:>48} {label:<22} {:>9.3} {:>10.1} {:>12.2} {rss:>14.1}",
            "",
            took.as_secs_f64(),
            rate(took),
            took.as_secs_f64() / floor.as_secs_f64()
        );
    }
    println!(
        "{:>48} {:<22} {:>9.3} {:>10.1}",
        "",
        "plain copy (floor)",
        floor.as_secs_f64(),
        rate(floor)
    );
    let floor_text = format!(
        "plain recursive copy {:.3} s ({:.1} MB/s)",
        floor.as_secs_f64(),
        rate(floor)
    );
    for (label, took, rss) in [("export", export, export_rss), ("import", import, import_rss)] {
        targets::target(
            17,
            &format!("{label} throughput, {name} ({mb:.1} MB data directory), best of {iterations}"),
            &format!(
                "{:.2} s, {:.1} MB/s ({:.2}x plain copy)",
                took.as_secs_f64(),
                rate(took),
                took.as_secs_f64() / floor.as_secs_f64()
            ),
            &floor_text,
            "reported",
            None,
        );
        targets::target(
            17,
            &format!("{label} peak RSS, {name} ({mb:.1} MB data directory)"),
            &format!("{rss:.1} MiB"),
            "-",
            &format!("< {RSS_TARGET_MIB:.0} MiB"),
            Some(rss < RSS_TARGET_MIB),
        );
    }
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let iterations = env_usize("MEMOREE_BENCH_ITERATIONS", 3).max(1);
    if sections::selected("store10k") {
        let artifacts = env_usize("MEMOREE_BENCH_ARTIFACTS", 10_000);
        section("store10k", artifacts, 0, 0, iterations);
    }
    if sections::selected("store1gib") {
        section("store1gib", 10_000, 512, 2 * 1024 * 1024, 1);
    }
}
