//! Write-path benchmarks: `artifact.put` and `claim.assert` through the service on a temp
//! store, against a floor of a raw rusqlite insert-and-commit of the same bytes with the
//! same durability settings (WAL, `synchronous=FULL`). Prints service/floor ratios.
//!
//! The `single_connection` section (issue 14) measures `claim.assert` and `relation.put`
//! p50 through a daemon on one persistent connection, each call timed alone and
//! interleaved with the raw rusqlite floor (a 1 KiB insert + commit), so machine load hits
//! both alike. Target: p50 <= 3x the floor.
//!
//! The `write_profile` section explains where a write's time goes: per operation, in process,
//! the wall time, the CPU time of all threads (from `/proc/self/task/*/schedstat`) and the
//! bytes written (`wchar` of `/proc/self/io`: WAL frames, checkpoints, CAS files), next to the
//! raw floor's.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/sections.rs"]
mod sections;
#[path = "support/targets.rs"]
mod targets;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use memoree::client::socket::SocketClient;
use memoree::daemon::{self, DaemonConfig};
use memoree::paths::Endpoint;
use memoree::protocol::Request;
use memoree::service::Service;
use sections::selected;
use serde_json::{Value, json};

static KEY: AtomicU64 = AtomicU64::new(0);

fn next_key() -> String {
    format!("bench-{}", KEY.fetch_add(1, Ordering::Relaxed))
}

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
}

fn request(op: &str, input: Value) -> Request {
    serde_json::from_value(json!({
        "request_id": "req_bench", "op": op, "idempotency_key": next_key(), "context": context(), "input": input
    }))
    .unwrap()
}

fn text(size: usize) -> String {
    "memoree keeps sqlite authoritative and the cas holds blobs. "
        .chars()
        .cycle()
        .take(size)
        .collect()
}

fn raw_floor(dir: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(dir.join("floor.sqlite3")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, key TEXT NOT NULL, body BLOB NOT NULL);",
    )
    .unwrap();
    conn
}

fn bench_writes(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    let floor = raw_floor(dir.path());
    let mut group = c.benchmark_group("write");
    group.sample_size(30);
    for size in [1024usize, 64 * 1024] {
        let body = text(size);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("artifact_put", size), &body, |b, body| {
            b.iter(|| {
                let response = service.handle(request(
                    "artifact.put",
                    json!({"kind": "note", "title": "bench", "content": {"type": "text", "data": body}}),
                ));
                assert!(response.ok);
            })
        });
        group.bench_with_input(BenchmarkId::new("raw_sqlite_floor", size), &body, |b, body| {
            b.iter(|| {
                let tx = floor.unchecked_transaction().unwrap();
                tx.execute(
                    "INSERT INTO rows (key, body) VALUES (?1, ?2)",
                    (next_key(), body.as_bytes()),
                )
                .unwrap();
                tx.commit().unwrap();
            })
        });
    }
    let put = service.handle(request(
        "artifact.put",
        json!({"kind": "note", "title": "evidence", "content": {"type": "text", "data": text(1024)}}),
    ));
    let put = put.result.unwrap();
    group.throughput(Throughput::Elements(1));
    group.bench_function("claim_assert", |b| {
        b.iter(|| {
            let response = service.handle(request(
                "claim.assert",
                json!({"claim_type": "fact", "statement": "SQLite is authoritative.",
                       "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 16}]}),
            ));
            assert!(response.ok);
        })
    });
    group.finish();
}

/// Reads a criterion point estimate (ns) from this run's output directory.
fn estimate(path: &str) -> Option<f64> {
    let dir = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let text = std::fs::read_to_string(format!("{dir}/criterion/{path}/new/estimates.json")).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value["median"]["point_estimate"].as_f64()
}

fn report() {
    for size in [1024, 65536] {
        if let (Some(service), Some(floor)) = (
            estimate(&format!("write/artifact_put/{size}")),
            estimate(&format!("write/raw_sqlite_floor/{size}")),
        ) {
            println!(
                "artifact.put {size} B: service {:.1} µs, raw rusqlite floor {:.1} µs, ratio {:.2}x",
                service / 1e3,
                floor / 1e3,
                service / floor
            );
            targets::target(
                2,
                &format!("artifact.put {size} B (service, in process), median"),
                &format!("{:.1} µs = {:.2}x floor", service / 1e3, service / floor),
                &format!(
                    "raw rusqlite insert + commit of the same bytes, WAL + synchronous=FULL: {:.1} µs",
                    floor / 1e3
                ),
                "ratio to the floor (reported)",
                None,
            );
        }
    }
    if let (Some(claim), Some(floor)) = (estimate("write/claim_assert"), estimate("write/raw_sqlite_floor/1024")) {
        println!(
            "claim.assert: service {:.1} µs, raw rusqlite floor (1 KiB) {:.1} µs, ratio {:.2}x",
            claim / 1e3,
            floor / 1e3,
            claim / floor
        );
        targets::target(
            2,
            "claim.assert with one evidence span (service, in process), median",
            &format!("{:.1} µs = {:.2}x floor", claim / 1e3, claim / floor),
            &format!("raw rusqlite insert + commit of 1 KiB: {:.1} µs", floor / 1e3),
            "ratio to the floor (reported)",
            None,
        );
    }
}

fn full_run() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

/// `claim.assert` and `relation.put` through a daemon on one persistent connection, each
/// call timed alone and interleaved with the raw rusqlite floor.
fn single_connection() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let handle = daemon::start(DaemonConfig::new(
        Endpoint::Unix(socket.clone()),
        dir.path().join("data"),
    ))
    .unwrap();
    let client = SocketClient::new(Endpoint::Unix(socket));
    let mut session = client.session();
    let floor = raw_floor(dir.path());
    let body = text(1024);
    let mut send = |op: &str, input: Value| -> Value {
        let request = serde_json::to_value(request(op, input)).unwrap();
        let response = session.exchange_json(&request).unwrap();
        assert!(response.ok, "{op}: {:?}", response.error);
        response.result.unwrap()
    };
    let put = send(
        "artifact.put",
        json!({"kind": "note", "title": "evidence", "content": {"type": "text", "data": text(1024)}}),
    );
    let rounds = if full_run() { 400 } else { 20 };
    let warmup = rounds / 10;
    let (mut floors, mut asserts, mut relations) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds + warmup {
        let started = Instant::now();
        let tx = floor.unchecked_transaction().unwrap();
        tx.execute(
            "INSERT INTO rows (key, body) VALUES (?1, ?2)",
            (next_key(), body.as_bytes()),
        )
        .unwrap();
        tx.commit().unwrap();
        let floor_time = started.elapsed();
        let started = Instant::now();
        let claim = send(
            "claim.assert",
            json!({"claim_type": "fact", "statement": format!("SQLite is authoritative, round {round}."),
                   "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 16}]}),
        );
        let assert_time = started.elapsed();
        let started = Instant::now();
        send(
            "relation.put",
            json!({"source_type": "claim", "source_id": claim["claim_id"], "relation": "supports",
                   "target_type": "artifact", "target_id": put["artifact_id"]}),
        );
        let relation_time = started.elapsed();
        if round >= warmup {
            floors.push(floor_time);
            asserts.push(assert_time);
            relations.push(relation_time);
        }
    }
    drop(session);
    handle.shutdown().unwrap();
    let floor_p50 = percentile(&mut floors, 0.5);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("\n== single connection through the daemon, {rounds} interleaved rounds ==");
    println!(
        "raw rusqlite floor (1 KiB insert + commit): p50 {:.1} µs",
        us(floor_p50)
    );
    for (op, samples) in [("claim.assert", &mut asserts), ("relation.put", &mut relations)] {
        let p50 = percentile(samples, 0.5);
        let p95 = percentile(samples, 0.95);
        let ratio = p50.as_secs_f64() / floor_p50.as_secs_f64();
        println!("{op}: p50 {:.1} µs ({ratio:.2}x floor), p95 {:.1} µs", us(p50), us(p95));
        targets::target(
            14,
            &format!("{op} p50, one persistent connection through the daemon"),
            &format!("{:.1} µs = {ratio:.2}x floor (p95 {:.1} µs)", us(p50), us(p95)),
            &format!(
                "raw rusqlite insert + commit of 1 KiB, WAL + synchronous=FULL, interleaved: {:.1} µs",
                us(floor_p50)
            ),
            "<= 3x floor",
            Some(ratio <= 3.0),
        );
    }
}

/// Nanoseconds all threads of this process have run on a CPU.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
                .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// Bytes this process has passed to write-like system calls.
fn written_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Wall, CPU and bytes written per call of `op` over `rounds` calls.
fn profile(rounds: usize, mut op: impl FnMut(usize)) -> (Duration, f64, f64) {
    let mut walls = Vec::with_capacity(rounds);
    let (cpu, bytes) = (cpu_ns(), written_bytes());
    for round in 0..rounds {
        let started = Instant::now();
        op(round);
        walls.push(started.elapsed());
    }
    let per = |total: u64| total as f64 / rounds as f64;
    (
        percentile(&mut walls, 0.5),
        per(cpu_ns() - cpu),
        per(written_bytes() - bytes),
    )
}

/// Where the time of a write goes, in process: wall p50, CPU and bytes written per call.
/// `MEMOREE_BENCH_WRITE_REPEAT=N` repeats the `claim.assert` rounds N times afterwards (for
/// a profiler attached to the process).
fn write_profile() {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    let floor = raw_floor(dir.path());
    let rounds = if full_run() { 300 } else { 20 };
    let body = text(1024);
    let put = service.handle(request(
        "artifact.put",
        json!({"kind": "note", "title": "evidence", "content": {"type": "text", "data": body}}),
    ));
    let put = put.result.unwrap();
    let mut claims = Vec::new();
    let floor_row = profile(rounds, |_| {
        let tx = floor.unchecked_transaction().unwrap();
        tx.execute(
            "INSERT INTO rows (key, body) VALUES (?1, ?2)",
            (next_key(), body.as_bytes()),
        )
        .unwrap();
        tx.commit().unwrap();
    });
    let put_row = profile(rounds, |round| {
        let response = service.handle(request(
            "artifact.put",
            json!({"kind": "note", "title": format!("note {round}"), "content": {"type": "text", "data": body}}),
        ));
        assert!(response.ok);
    });
    let assert_row = profile(rounds, |round| {
        let response = service.handle(request(
            "claim.assert",
            json!({"claim_type": "fact", "statement": format!("SQLite is authoritative, round {round}."),
                   "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 16}]}),
        ));
        assert!(response.ok);
        claims.push(response.result.unwrap()["claim_id"].clone());
    });
    let repeat: usize = std::env::var("MEMOREE_BENCH_WRITE_REPEAT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    for pass in 0..repeat {
        for round in 0..rounds {
            let response = service.handle(request(
                "claim.assert",
                json!({"claim_type": "fact", "statement": format!("SQLite is authoritative, pass {pass} round {round}."),
                       "evidence": [{"artifact_id": put["artifact_id"], "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 16}]}),
            ));
            assert!(response.ok);
        }
    }
    let relation_row = profile(rounds, |round| {
        let response = service.handle(request(
            "relation.put",
            json!({"source_type": "claim", "source_id": claims[round], "relation": "supports",
                   "target_type": "artifact", "target_id": put["artifact_id"]}),
        ));
        assert!(response.ok);
    });
    println!(
        "\n== write profile, in process, {rounds} calls each (per call: wall p50, CPU of all threads, bytes written) =="
    );
    for (name, (wall, cpu, bytes)) in [
        ("raw rusqlite floor (1 KiB)", floor_row),
        ("artifact.put 1 KiB", put_row),
        ("claim.assert", assert_row),
        ("relation.put", relation_row),
    ] {
        println!(
            "{name:<28} wall {:>8.1} µs   cpu {:>8.1} µs   written {:>9.0} B",
            wall.as_secs_f64() * 1e6,
            cpu / 1e3,
            bytes
        );
    }
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    if selected("write") {
        let mut criterion = Criterion::default().configure_from_args();
        bench_writes(&mut criterion);
        criterion.final_summary();
        report();
    }
    if selected("single_connection") {
        single_connection();
    }
    if selected("write_profile") {
        write_profile();
    }
}
