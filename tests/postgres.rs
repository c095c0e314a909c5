//! Several `memoree serve` front ends on one real PostgreSQL database (`--store`): what one
//! writes the other reads, and neither a front end killed mid-write nor the database
//! restarted without a clean shutdown loses or duplicates an acknowledged mutation. Clients
//! retry a refused or unanswered request with the same key, on the other front end when
//! theirs is gone, as the protocol tells them to. And `memoree import --store` /
//! `memoree export --store` move an embedded store's memory into PostgreSQL and back.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memoree::client::socket::SocketClient;
use memoree::paths::Endpoint;
use memoree::testkit::postgres::TestCluster;
use memoree::transport::Exchange;
use serde_json::{Value, json};

use crate::support::daemon::TestDaemon;

fn put_request(key: &str, text: &str) -> Value {
    json!({"v": 1, "request_id": "req_pg", "op": "artifact.put", "idempotency_key": key,
           "context": {"workspace_id": "wsp_pg", "project_id": "prj_pg"},
           "input": {"kind": "note", "title": "front ends", "content": {"type": "text", "data": text}}})
}

/// Sends the put to the front ends in turn, starting at `first`, until one acknowledges it.
fn put_until_acknowledged(clients: &[SocketClient], first: usize, key: &str, text: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut attempt = first;
    loop {
        match clients[attempt % clients.len()].send_value(&put_request(key, text)) {
            Ok(response) if response.ok => return serde_json::to_value(response.result).unwrap(),
            Ok(response) => {
                let error = response.error.unwrap();
                assert!(error.retryable, "{key}: a non-retryable refusal: {error:?}");
            }
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "{key} was never acknowledged");
        attempt += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Checks the database against the acknowledgements: every acknowledged key is stored once,
/// at the commit sequence and artifact it was acknowledged with; the sequence has no gaps;
/// one event per applied mutation.
fn check_against(cluster: &TestCluster, database: &str, acknowledged: &HashMap<String, Value>) {
    let rows = cluster.psql_in(
        database,
        "SELECT scoped_key || ' ' || commit_seq FROM idempotency ORDER BY commit_seq",
    );
    let stored: Vec<(String, i64)> = rows
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let (key, seq) = line.rsplit_once(' ').unwrap();
            (
                key.rsplit_once(':').map_or(key, |(_, k)| k).to_owned(),
                seq.parse().unwrap(),
            )
        })
        .collect();
    let by_key: HashMap<&str, i64> = stored.iter().map(|(k, s)| (k.as_str(), *s)).collect();
    assert_eq!(by_key.len(), stored.len(), "a key was applied twice");
    for (key, ack) in acknowledged {
        assert_eq!(by_key.get(key.as_str()).copied(), ack["commit_seq"].as_i64(), "{key}");
    }
    let seqs: BTreeSet<i64> = stored.iter().map(|(_, s)| *s).collect();
    assert_eq!(seqs, (1..=stored.len() as i64).collect(), "commit_seq has gaps");
    let events: i64 = cluster
        .psql_in(database, "SELECT count(*) FROM events")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(events, stored.len() as i64, "one event per applied mutation");
    let artifacts: i64 = cluster
        .psql_in(database, "SELECT count(*) FROM artifacts")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(artifacts, stored.len() as i64);
}

fn database_name(url: &str) -> String {
    url.split('/').nth(3).unwrap().split('?').next().unwrap().to_owned()
}

/// Runs four clients over `clients` until `stop`; returns every acknowledgement by key.
fn load(clients: Arc<Vec<SocketClient>>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<HashMap<String, Value>> {
    std::thread::spawn(move || {
        let acks = Arc::new(Mutex::new(HashMap::new()));
        let threads: Vec<_> = (0..4)
            .map(|client| {
                let (clients, stop, acks) = (Arc::clone(&clients), Arc::clone(&stop), Arc::clone(&acks));
                std::thread::spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("c{client}-{i}");
                        let ack =
                            put_until_acknowledged(&clients, client, &key, &format!("note {i} of client {client}"));
                        acks.lock().unwrap().insert(key, ack);
                        i += 1;
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        Arc::try_unwrap(acks).unwrap().into_inner().unwrap()
    })
}

#[test]
fn two_front_ends_on_one_database_read_each_others_writes_through_the_binary() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let a = TestDaemon::start_postgres(dirs[0].path(), &url);
    let b = TestDaemon::start_postgres(dirs[1].path(), &url);
    let ack = put_until_acknowledged(&[a.client()], 0, "k", "written through front end A");
    let get = b
        .client()
        .send_value(
            &json!({"v": 1, "request_id": "r", "op": "artifact.get", "input": {"artifact_id": ack["artifact_id"]}}),
        )
        .unwrap();
    assert!(get.ok, "{:?}", get.error);
    assert_eq!(
        get.result.unwrap()["content"]["data"],
        json!("written through front end A")
    );
    let caps = b
        .client()
        .send_value(&json!({"v": 1, "request_id": "r", "op": "capabilities", "input": {}}))
        .unwrap();
    // What answers is named (spec/v1/DIVERGENCES.md, "A PostgreSQL store names itself").
    let caps = serde_json::to_value(caps.result.unwrap()).unwrap();
    assert_eq!(caps["authoritative_store"], json!("postgresql"), "{caps}");
    assert_eq!(caps["blob_store"], json!("postgresql"), "{caps}");
    assert!(
        caps["retrieval"].as_array().unwrap().contains(&json!("postgresql_fts")),
        "{caps}"
    );
    let doctor = b
        .client()
        .send_value(&json!({"v": 1, "request_id": "r", "op": "doctor", "input": {}}))
        .unwrap();
    let doctor = serde_json::to_value(doctor.result.unwrap()).unwrap();
    assert_eq!(doctor["authoritative_store"], json!("postgresql"), "{doctor}");
    assert_eq!(doctor["retrieval_mode"], json!("postgresql_fts"), "{doctor}");
}

#[test]
fn a_front_end_killed_mid_write_loses_and_duplicates_nothing_acknowledged() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut a = TestDaemon::start_postgres(dirs[0].path(), &url);
    let b = TestDaemon::start_postgres(dirs[1].path(), &url);
    let clients = Arc::new(vec![a.client(), b.client()]);
    let stop = Arc::new(AtomicBool::new(false));
    let running = load(Arc::clone(&clients), Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(700));
    a.kill9();
    std::thread::sleep(Duration::from_millis(700));
    stop.store(true, Ordering::Relaxed);
    let acknowledged = running.join().unwrap();
    assert!(acknowledged.len() > 8, "{} acknowledged", acknowledged.len());
    drop(b);
    check_against(&cluster, &database_name(&url), &acknowledged);
}

#[test]
fn an_immediate_database_restart_under_four_clients_loses_and_duplicates_nothing_acknowledged() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let a = TestDaemon::start_postgres(dirs[0].path(), &url);
    let b = TestDaemon::start_postgres(dirs[1].path(), &url);
    let clients = Arc::new(vec![a.client(), b.client()]);
    let stop = Arc::new(AtomicBool::new(false));
    let running = load(Arc::clone(&clients), Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(600));
    cluster.restart_immediate();
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    let acknowledged = running.join().unwrap();
    assert!(acknowledged.len() > 8, "{} acknowledged", acknowledged.len());
    drop((a, b));
    check_against(&cluster, &database_name(&url), &acknowledged);
}

#[test]
fn the_cli_imports_an_embedded_export_into_postgresql_and_exports_it_back_identically() {
    use crate::support::{TempHome, archive_files, field};
    let home = TempHome::new();
    let ok = |args: &[&str]| {
        let (status, envelope) = home.run_cli(args);
        assert_eq!((status, &envelope["ok"]), (0, &json!(true)), "{args:?}: {envelope}");
        envelope
    };
    let design = home.write_file("design.md", "# Design\nPostgreSQL is shared by the front ends.\n");
    let put = ok(&["artifact", "put", design.to_str().unwrap(), "--kind", "design"]);
    let big = home.write_file("log.txt", "a log line long enough for the blob tables\n".repeat(600));
    ok(&["artifact", "put", big.to_str().unwrap()]);
    let locator = format!("{}@{}#2-8", field(&put, "artifact_id"), field(&put, "revision_id"));
    ok(&[
        "claim",
        "assert",
        "decision",
        "PostgreSQL is shared",
        "--evidence",
        &locator,
    ]);
    let archive = home.root.join("embedded");
    let exported = ok(&["export", "--all", archive.to_str().unwrap()]);
    let scoped = home.root.join("embedded-scoped");
    ok(&["export", scoped.to_str().unwrap()]);

    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let imported = ok(&["import", archive.to_str().unwrap(), "--store", &url]);
    assert_eq!(imported["result"]["mode"], "into_empty", "{imported}");
    assert_eq!(imported["result"]["imported"]["artifact"], 2, "{imported}");
    assert_eq!(
        imported["result"]["last_commit_seq"],
        exported["result"]["source_last_commit_seq"]
    );
    assert!(
        imported["result"].get("data_dir").is_none(),
        "the import op's result: {imported}"
    );

    let again = home.root.join("postgres");
    ok(&["export", "--all", again.to_str().unwrap(), "--store", &url]);
    assert!(
        archive_files(&archive) == archive_files(&again),
        "the re-export differs"
    );
    let again_scoped = home.root.join("postgres-scoped");
    ok(&["export", again_scoped.to_str().unwrap(), "--store", &url]);
    assert!(
        archive_files(&scoped) == archive_files(&again_scoped),
        "the scoped re-export differs"
    );

    // Into-empty refuses a store with memory; a merge through the config's `[store] url`
    // changes nothing.
    let (status, refused) = home.run_cli(&["import", archive.to_str().unwrap(), "--store", &url]);
    assert_eq!(
        (status, crate::support::code(&refused)),
        (2, "INVALID_REQUEST"),
        "{refused}"
    );
    home.write_config(&format!("[store]\nurl = \"{url}\"\n"));
    let merged = ok(&["import", archive.to_str().unwrap(), "--merge"]);
    assert_eq!(merged["result"]["imported"]["event"], 0, "{merged}");
    assert_eq!(
        merged["result"]["last_commit_seq"],
        imported["result"]["last_commit_seq"]
    );
}

/// `memoree serve` for a front end in `dir` serving `url`, waiting up to `wait_secs` for it.
fn waiting_front_end(dir: &std::path::Path, url: &str, wait_secs: u64) -> (std::process::Command, Endpoint) {
    let socket = dir.join("s.sock");
    let mut command = std::process::Command::new(crate::support::BIN);
    command
        .arg("serve")
        .arg("--listen")
        .arg(format!("unix://{}", socket.display()))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--store")
        .arg(url)
        .arg("--store-wait")
        .arg(wait_secs.to_string());
    (command, Endpoint::Unix(socket))
}

fn doctor_of(client: &SocketClient) -> (Value, Duration) {
    let started = Instant::now();
    let response = client
        .send_value(&json!({"v": 1, "request_id": "r", "op": "doctor", "input": {}}))
        .unwrap();
    let took = started.elapsed();
    assert!(response.ok, "{:?}", response.error);
    (serde_json::to_value(response.result.unwrap()).unwrap(), took)
}

#[test]
#[allow(clippy::print_stderr)] // the measured latencies, for BENCHMARKS.md
fn a_front_end_started_before_its_database_serves_within_two_seconds_of_it_and_loses_nothing_acknowledged() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    let mut acknowledged = HashMap::new();
    // Writes acknowledged before the outage, through a front end that is then gone.
    {
        let dir = tempfile::tempdir().unwrap();
        let first = TestDaemon::start_postgres(dir.path(), &url);
        for i in 0..10 {
            let key = format!("before-{i}");
            let ack = put_until_acknowledged(&[first.client()], 0, &key, &format!("note {i} before"));
            acknowledged.insert(key, ack);
        }
    }
    cluster.stop();

    // The front end starts while the database is down: it binds, answers doctor at once with
    // the outage, and refuses the rest as store_unavailable.
    let dir = tempfile::tempdir().unwrap();
    let (command, endpoint) = waiting_front_end(dir.path(), &url, 60);
    let mut front = TestDaemon::start_command(command, dir.path(), endpoint, &dir.path().join("data"));
    let client = front.client();
    let mut worst = Duration::ZERO;
    for _ in 0..10 {
        let (doctor, took) = doctor_of(&client);
        assert_eq!(doctor["status"], json!("store_unavailable"), "{doctor}");
        assert_eq!(doctor["store_outage"]["reason"], json!("store_unavailable"), "{doctor}");
        worst = worst.max(took);
    }
    assert!(worst < Duration::from_secs(1), "doctor took {worst:?}");
    eprintln!("doctor of a front end waiting for its database: worst of 10 = {worst:?}");
    let refused = client
        .send_value(&put_request("during", "a note during the outage"))
        .unwrap();
    let error = refused.error.unwrap();
    assert!(error.retryable, "{error:?}");
    assert_eq!(error.details["reason"], json!("store_unavailable"), "{error:?}");
    assert!(front.is_running());

    // Start the database; note when it first accepts a connection and when the front end
    // first serves a put.
    let (accepted, served) = std::thread::scope(|scope| {
        scope.spawn(|| cluster.start_again());
        let accepted = scope.spawn(|| {
            loop {
                if postgres::Client::connect(&url, postgres::NoTls).is_ok() {
                    return Instant::now();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let served = loop {
            let response = client
                .send_value(&put_request("during", "a note during the outage"))
                .unwrap();
            if response.ok {
                acknowledged.insert("during".to_owned(), serde_json::to_value(response.result).unwrap());
                break Instant::now();
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        (accepted.join().unwrap(), served)
    });
    let delay = served.saturating_duration_since(accepted);
    eprintln!("database accepting -> first served put: {delay:?}");
    assert!(
        delay < Duration::from_secs(2),
        "served {delay:?} after the database accepted"
    );
    let (doctor, _) = doctor_of(&client);
    assert_eq!(doctor["status"], json!("ok"), "{doctor}");
    assert!(doctor.get("store_outage").is_none(), "{doctor}");

    // More writes, an immediate restart, more writes: every acknowledgement is stored once.
    for i in 0..10 {
        let key = format!("after-{i}");
        let ack = put_until_acknowledged(&[front.client()], 0, &key, &format!("note {i} after"));
        acknowledged.insert(key, ack);
    }
    cluster.restart_immediate();
    for i in 0..10 {
        let key = format!("restarted-{i}");
        let ack = put_until_acknowledged(&[front.client()], 0, &key, &format!("note {i} restarted"));
        acknowledged.insert(key, ack);
    }
    assert!(front.is_running());
    drop(front);
    check_against(&cluster, &database_name(&url), &acknowledged);
}

#[test]
fn a_front_end_whose_database_never_comes_exits_non_zero_after_its_store_wait_logging_each_attempt() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    cluster.stop();
    let dir = tempfile::tempdir().unwrap();
    let (mut command, _) = waiting_front_end(dir.path(), &url, 2);
    let started = Instant::now();
    let output = command.output().unwrap();
    let took = started.elapsed();
    assert!(!output.status.success(), "{:?}", output.status);
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "exited after {took:?}"
    );
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(envelope["ok"], json!(false), "{envelope}");
    assert_eq!(
        envelope["error"]["details"]["reason"],
        json!("store_unavailable"),
        "{envelope}"
    );
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not accept connections within 2 s"),
        "{envelope}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let attempts = stderr.matches("not reachable yet; retrying").count();
    assert!(attempts >= 3, "each attempt is logged:\n{stderr}");
}

#[test]
fn a_front_end_waiting_for_its_database_stops_cleanly_on_sigterm() {
    let Some(cluster) = TestCluster::start() else { return };
    let url = cluster.create_database();
    cluster.stop();
    let dir = tempfile::tempdir().unwrap();
    let (mut command, endpoint) = waiting_front_end(dir.path(), &url, 60);
    let Endpoint::Unix(socket) = endpoint else {
        unreachable!()
    };
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the front end never bound its socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still waiting for the database after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket is removed on shutdown");
}
