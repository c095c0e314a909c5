//! The PostgreSQL store (issue 18): `artifact.put` throughput with 1, 2 and 4 front ends on
//! one database, and `memory.recall` latency (p50/p99) at a large corpus, PostgreSQL vs the
//! embedded SQLite store on the same corpus.
//!
//! Each front end is a `Service` with its own store handle (its own writer connection and
//! read pool), as separate `memoree serve` processes would have; two client threads per front
//! end write distinct keys. The floor of the throughput lines is the embedded store with the
//! same clients. Sections: `throughput`, `recall` (`cargo bench --bench postgres -- recall`),
//! `outage` (issue 32: `doctor` latency while the server is stopped and while it is frozen,
//! against the 1 s bound, and the time from the database accepting connections to the first
//! request served, for a running front end and for one started before its database).
//! `MEMOREE_BENCH_RECALL_ARTIFACTS` sets the recall corpus size (default 100000).
//!
//! Needs the PostgreSQL server binaries (see `memoree::testkit::postgres`).

#![allow(clippy::print_stdout)]

#[path = "support/rng.rs"]
mod rng;
#[path = "support/sections.rs"]
mod sections;
#[path = "support/targets.rs"]
mod targets;

use std::sync::Arc;
use std::time::{Duration, Instant};

use memoree::service::Service;
use memoree::testkit::postgres::TestCluster;
use serde_json::{Value, json};

const ISSUE: u32 = 18;
/// Puts per throughput run.
const PUTS: usize = 800;
/// Client threads per front end.
const CLIENTS_PER_FRONT_END: usize = 2;
/// Recall queries per latency run.
const QUERIES: usize = 200;

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
}

fn put(service: &Service, key: &str, text: &str) {
    let response = service.handle_value(
        json!({"request_id": "r", "op": "artifact.put", "idempotency_key": key, "context": context(),
               "input": {"kind": "note", "title": "bench note", "content": {"type": "text", "data": text}}}),
        "req_transport",
    );
    assert!(response.ok, "{:?}", response.error);
}

/// Puts per second with `services` as the front ends and two clients each.
fn throughput(services: &[Service]) -> f64 {
    let clients = services.len() * CLIENTS_PER_FRONT_END;
    let per_client = PUTS / clients;
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let service = services[client % services.len()].clone();
            std::thread::spawn(move || {
                for i in 0..per_client {
                    put(
                        &service,
                        &format!("c{client}-{i}"),
                        &format!("note {i} from client {client}"),
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    (per_client * clients) as f64 / started.elapsed().as_secs_f64()
}

fn postgres_front_ends(cluster: &TestCluster, count: usize) -> (Vec<Service>, Vec<tempfile::TempDir>) {
    memoree::testkit::postgres::services(&cluster.create_database(), count)
}

fn throughput_section(cluster: &TestCluster) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Service::open(&dir.path().join("data")).unwrap();
    for front_ends in [1usize, 2, 4] {
        let floor = throughput(&vec![sqlite.clone(); front_ends]);
        let (services, _dirs) = postgres_front_ends(cluster, front_ends);
        let measured = throughput(&services);
        println!(
            "throughput: {front_ends} front end(s), {} clients: PostgreSQL {measured:.0} puts/s; embedded SQLite (one daemon, same clients) {floor:.0} puts/s",
            front_ends * CLIENTS_PER_FRONT_END
        );
        targets::target(
            ISSUE,
            &format!("artifact.put throughput, {front_ends} front end(s) on one PostgreSQL database"),
            &format!("{measured:.0} puts/s"),
            &format!("{floor:.0} puts/s (embedded SQLite)"),
            "-",
            None,
        );
        for service in services {
            service.store().shutdown();
        }
    }
}

/// A corpus note: a few common words and a rarer topic word per artifact.
fn note(rng: &mut rng::Rng, i: usize) -> String {
    const TOPICS: [&str; 8] = [
        "deploy", "backup", "latency", "schema", "billing", "cache", "index", "release",
    ];
    const WORDS: [&str; 12] = [
        "the", "service", "team", "runs", "weekly", "checks", "on", "every", "host", "and", "reports", "status",
    ];
    let mut text = format!("Note {i} about {} {}:", TOPICS[i % TOPICS.len()], rng.next() % 5000);
    for _ in 0..12 {
        text.push(' ');
        text.push_str(WORDS[rng.below(WORDS.len())]);
    }
    text
}

fn seed(service: &Service, artifacts: usize) {
    let mut rng = rng::Rng(18);
    let clients = 4;
    let texts: Vec<String> = (0..artifacts).map(|i| note(&mut rng, i)).collect();
    let texts = Arc::new(texts);
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let (service, texts) = (service.clone(), Arc::clone(&texts));
            std::thread::spawn(move || {
                for i in (client..texts.len()).step_by(clients) {
                    put(&service, &format!("seed-{i}"), &texts[i]);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// p50 and p99 of `memory.recall` over topic queries.
fn recall_latency(service: &Service) -> (Duration, Duration) {
    const QUERIES_TEXT: [&str; 6] = [
        "how often do we deploy",
        "backup checks",
        "latency reports on every host",
        "billing status",
        "cache weekly",
        "release team",
    ];
    let mut samples: Vec<Duration> = (0..QUERIES)
        .map(|i| {
            let started = Instant::now();
            let response = service.handle_value(
                json!({"request_id": "r", "op": "memory.recall", "context": context(),
                       "input": {"query": QUERIES_TEXT[i % QUERIES_TEXT.len()]}}),
                "req_transport",
            );
            assert!(response.ok, "{:?}", response.error);
            started.elapsed()
        })
        .collect();
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() * 99 / 100])
}

fn recall_section(cluster: &TestCluster) {
    let artifacts: usize = std::env::var("MEMOREE_BENCH_RECALL_ARTIFACTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Service::open(&dir.path().join("data")).unwrap();
    let (postgres, _dirs) = postgres_front_ends(cluster, 1);
    let started = Instant::now();
    seed(&sqlite, artifacts);
    let sqlite_seed = started.elapsed();
    let started = Instant::now();
    seed(&postgres[0], artifacts);
    let postgres_seed = started.elapsed();
    // Warm both vocabularies and caches once.
    recall_latency(&sqlite);
    recall_latency(&postgres[0]);
    let (sqlite_p50, sqlite_p99) = recall_latency(&sqlite);
    let (pg_p50, pg_p99) = recall_latency(&postgres[0]);
    println!(
        "recall at {artifacts} artifacts (seeded in {sqlite_seed:.1?} on SQLite, {postgres_seed:.1?} on PostgreSQL): \
         PostgreSQL p50 {pg_p50:.2?} p99 {pg_p99:.2?}; SQLite p50 {sqlite_p50:.2?} p99 {sqlite_p99:.2?}"
    );
    for (quantile, measured, floor) in [("p50", pg_p50, sqlite_p50), ("p99", pg_p99, sqlite_p99)] {
        targets::target(
            ISSUE,
            &format!("memory.recall {quantile} at {artifacts} artifacts, PostgreSQL vs embedded SQLite"),
            &format!("{:.2} ms", measured.as_secs_f64() * 1e3),
            &format!("{:.2} ms (SQLite)", floor.as_secs_f64() * 1e3),
            "-",
            None,
        );
    }
}

/// `doctor` on `service`, timed; returns its `status` too.
fn timed_doctor(service: &Service) -> (Duration, String) {
    let started = Instant::now();
    let response = service.handle_value(json!({"request_id": "r", "op": "doctor", "input": {}}), "req_transport");
    let took = started.elapsed();
    assert!(response.ok, "{:?}", response.error);
    (took, response.result.unwrap()["status"].as_str().unwrap().to_owned())
}

/// Starts the stopped `cluster`; returns when it first accepted a connection and when
/// `service` first acknowledged a put, as the gap between them.
fn accept_to_served(cluster: &TestCluster, url: &str, service: &Service, key: &str) -> Duration {
    std::thread::scope(|scope| {
        scope.spawn(|| cluster.start_again());
        let accepted = scope.spawn(|| {
            loop {
                if postgres::Client::connect(url, postgres::NoTls).is_ok() {
                    return Instant::now();
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let served = loop {
            let response = service.handle_value(
                json!({"request_id": "r", "op": "artifact.put", "idempotency_key": key, "context": context(),
                       "input": {"kind": "note", "title": "outage", "content": {"type": "text", "data": key}}}),
                "req_transport",
            );
            if response.ok {
                break Instant::now();
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        served.saturating_duration_since(accepted.join().unwrap())
    })
}

fn outage_section(cluster: &TestCluster) {
    const ISSUE_OUTAGE: u32 = 32;
    let bound = Duration::from_secs(1);
    let url = cluster.create_database();
    let (services, _dirs) = memoree::testkit::postgres::services(&url, 1);
    let service = &services[0];
    put(service, "warm", "before the outage");
    timed_doctor(service);

    cluster.stop();
    let mut stopped: Vec<Duration> = (0..50)
        .map(|_| {
            let (took, status) = timed_doctor(service);
            assert_eq!(status, "store_unavailable");
            took
        })
        .collect();
    stopped.sort();
    let running = accept_to_served(cluster, &url, service, "after-stop");

    let pids = cluster.server_pids();
    let signal_all = |signal| {
        for pid in &pids {
            let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(*pid).unwrap(), signal);
        }
    };
    signal_all(rustix::process::Signal::STOP);
    let mut frozen: Vec<Duration> = (0..5).map(|_| timed_doctor(service).0).collect();
    signal_all(rustix::process::Signal::CONT);
    frozen.sort();
    service.store().shutdown();

    // Front ends started while the database is down, as `memoree serve` starts them.
    let mut startup = Vec::new();
    for round in 0..5 {
        cluster.stop();
        let dir = tempfile::tempdir().unwrap();
        let store = memoree::store::Store::start_postgres(&url, dir.path(), Duration::from_secs(60)).unwrap();
        let waiting = Service::new(store, memoree::service::Runtime::default());
        let (took, status) = timed_doctor(&waiting);
        assert_eq!(status, "store_unavailable");
        stopped.push(took);
        startup.push(accept_to_served(cluster, &url, &waiting, &format!("startup-{round}")));
        waiting.store().shutdown();
    }
    stopped.sort();
    startup.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    let worst_stopped = *stopped.last().unwrap();
    let worst_frozen = *frozen.last().unwrap();
    println!(
        "outage: doctor while stopped p50 {} max {} ({} calls); while frozen max {}; accepting -> first served put: running front end {}, started before the database median {} max {}",
        ms(stopped[stopped.len() / 2]),
        ms(worst_stopped),
        stopped.len(),
        ms(worst_frozen),
        ms(running),
        ms(startup[startup.len() / 2]),
        ms(*startup.last().unwrap()),
    );
    for (metric, measured) in [
        ("doctor latency while PostgreSQL is stopped (max)", worst_stopped),
        ("doctor latency while PostgreSQL is frozen (SIGSTOP, max)", worst_frozen),
    ] {
        targets::target(
            ISSUE_OUTAGE,
            metric,
            &ms(measured),
            "-",
            "<= 1000 ms",
            Some(measured <= bound),
        );
    }
    for (metric, measured) in [
        ("database accepting -> first served put, running front end", running),
        (
            "database accepting -> first served put, front end started before the database (max of 5)",
            *startup.last().unwrap(),
        ),
    ] {
        targets::target(
            ISSUE_OUTAGE,
            metric,
            &ms(measured),
            "-",
            "<= 2000 ms",
            Some(measured <= Duration::from_secs(2)),
        );
    }
}

fn main() {
    let cluster = TestCluster::start_required();
    if sections::selected("throughput") {
        throughput_section(&cluster);
    }
    if sections::selected("recall") {
        recall_section(&cluster);
    }
    if sections::selected("outage") {
        outage_section(&cluster);
    }
}
