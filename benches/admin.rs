//! Maintenance benchmarks: `verify` and `backup.create` of a store with 10k artifacts of
//! ~2 KB each (~20 MB of content, plus 1k cited claims), measured through the service,
//! against the floor of a plain recursive copy of the same data directory (without and with
//! fsync). Prints seconds, MB/s over the data directory's size, and the ratio to the floor.
//!
//! `MEMOREE_BENCH_ARTIFACTS` overrides the artifact count; `MEMOREE_BENCH_ITERATIONS` the
//! number of timed runs (the best run is reported).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/targets.rs"]
mod targets;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use memoree::fsutil;
use memoree::protocol::claim::ClaimType;
use memoree::service::Service;
use memoree::store::artifact::{self, BlobRef, NewRevision};
use memoree::store::claim::{self, EvidenceRef, NewClaimRevision};
use memoree::store::scope::Owner;
use serde_json::{Value, json};

const CONTENT_BYTES: usize = 2048;
const BATCH: usize = 500;

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

fn content(index: usize) -> Vec<u8> {
    let words = [
        "sqlite",
        "authoritative",
        "blob",
        "cas",
        "revision",
        "claim",
        "evidence",
        "recall",
        "horizon",
        "ambient",
    ];
    let mut text = format!("Artifact {index}. ");
    let mut i = index;
    while text.len() < CONTENT_BYTES {
        text.push_str(words[i % words.len()]);
        text.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    text.truncate(CONTENT_BYTES);
    text.into_bytes()
}

/// Seeds `artifacts` inline artifacts and one cited claim per ten artifacts, in batches of
/// one transaction each (the write path per row, without per-request fsyncs).
fn seed(service: &Service, artifacts: usize) {
    let store = service.store();
    for start in (0..artifacts).step_by(BATCH) {
        let end = (start + BATCH).min(artifacts);
        store
            .write(move |tx| {
                for index in start..end {
                    let bytes = content(index);
                    let new = NewRevision {
                        title: format!("Benchmark note {index}"),
                        media_type: "text/plain; charset=utf-8".to_owned(),
                        blob: BlobRef::inline(&bytes),
                        content: bytes.clone(),
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
}

fn request(op: &str, input: Value) -> Value {
    json!({"request_id": "req_bench", "op": op, "input": input})
}

/// The best of `iterations` runs of `f`; `reset` runs untimed before each.
fn best(iterations: usize, mut reset: impl FnMut(), mut f: impl FnMut()) -> Duration {
    (0..iterations)
        .map(|_| {
            reset();
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap()
}

fn copy_tree(from: &Path, to: &Path, sync: bool) {
    fs::create_dir(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target, sync);
        } else {
            fs::copy(entry.path(), &target).unwrap();
            if sync {
                fs::File::open(&target).unwrap().sync_all().unwrap();
            }
        }
    }
    if sync {
        fsutil::fsync_dir(to).unwrap();
    }
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let artifacts = env_usize("MEMOREE_BENCH_ARTIFACTS", 10_000);
    let iterations = env_usize("MEMOREE_BENCH_ITERATIONS", 3).max(1);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let service = Service::open(&data).unwrap();
    let seeding = Instant::now();
    seed(&service, artifacts);
    let (bytes, files) = fsutil::dir_size(&data).unwrap();
    let mb = bytes as f64 / 1e6;
    println!(
        "seeded {artifacts} artifacts ({:.1} MB of content) in {:.2}s; data directory {mb:.1} MB in {files} files",
        (artifacts * CONTENT_BYTES) as f64 / 1e6,
        seeding.elapsed().as_secs_f64()
    );
    for entry in fs::read_dir(&data).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_file() {
            println!(
                "  {:<24} {:>8.1} MB",
                entry.file_name().to_string_lossy(),
                meta.len() as f64 / 1e6
            );
        }
    }

    let verify = best(
        iterations,
        || {},
        || {
            let response = service.handle_value(request("verify", json!({})), "req_bench");
            let result = response.result.expect("verify succeeds");
            assert_eq!(result["ok"], true, "{result}");
        },
    );
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let target = out.join("target");
    let clear = || {
        let _ = fs::remove_dir_all(&target);
    };
    let backup = best(iterations, clear, || {
        let response = service.handle_value(request("backup.create", json!({"destination": target})), "req_bench");
        assert!(response.ok, "{:?}", response.error);
    });
    let floor = best(iterations, clear, || copy_tree(&data, &target, false));
    let floor_synced = best(iterations, clear, || copy_tree(&data, &target, true));
    clear();

    let rate = |d: Duration| mb / d.as_secs_f64();
    println!(
        "{:<28} {:>9} {:>10} {:>16}",
        "operation", "seconds", "MB/s", "x plain copy"
    );
    for (name, took) in [
        ("verify", verify),
        ("backup.create", backup),
        ("plain copy (floor)", floor),
        ("plain copy + fsync", floor_synced),
    ] {
        println!(
            "{name:<28} {:>9.3} {:>10.1} {:>16.2}",
            took.as_secs_f64(),
            rate(took),
            took.as_secs_f64() / floor.as_secs_f64()
        );
    }
    for (name, took) in [("verify", verify), ("backup.create", backup)] {
        targets::target(
            7,
            &format!("{name} of {artifacts} artifacts ({mb:.1} MB data directory), best of {iterations}"),
            &format!(
                "{:.2} s, {:.1} MB/s ({:.2}x plain copy, {:.2}x copy + fsync)",
                took.as_secs_f64(),
                rate(took),
                took.as_secs_f64() / floor.as_secs_f64(),
                took.as_secs_f64() / floor_synced.as_secs_f64()
            ),
            &format!(
                "plain recursive copy {:.3} s ({:.1} MB/s); with fsync {:.3} s",
                floor.as_secs_f64(),
                rate(floor),
                floor_synced.as_secs_f64()
            ),
            "< 10 s",
            Some(took < Duration::from_secs(10)),
        );
    }
    service.store().shutdown();
}
