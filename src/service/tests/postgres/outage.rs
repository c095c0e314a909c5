//! A PostgreSQL store through an outage, one test per class of outage: the server stopped,
//! the server restarting (refusing new connections while it shuts down or starts up), the
//! connection killed mid-transaction, and the server frozen. Every failure caused by the
//! database carries `details.reason: "store_unavailable"` with `retryable: true` and a hint;
//! `doctor` answers within a second whatever the database does; an internal bug does not get
//! that reason; and once the server is back the same requests are served.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::protocol::{ErrorBody, ErrorCode};
use crate::service::{STORE_UNAVAILABLE_REASON, Service, error_body};
use crate::store::StoreError;
use crate::testkit::postgres::FrontEnds;

/// The issue's bound on `doctor` whatever the database does.
const DOCTOR_LIMIT: Duration = Duration::from_secs(1);

use crate::service::tests::support::checked as call;

fn put_request(key: &str) -> Value {
    json!({"request_id": "r", "op": "artifact.put", "idempotency_key": key,
           "context": {"workspace_id": "wsp_out", "project_id": "prj_out"},
           "input": {"kind": "note", "title": "outage", "content": {"type": "text", "data": format!("note {key}")}}})
}

fn search_request() -> Value {
    json!({"request_id": "r", "op": "search", "context": {"workspace_id": "wsp_out", "project_id": "prj_out"},
           "input": {"query": "outage note"}})
}

/// `doctor`, timed.
fn doctor(service: &Service) -> (Value, Duration) {
    let started = Instant::now();
    let response = call(service, json!({"request_id": "r", "op": "doctor", "input": {}}));
    let took = started.elapsed();
    assert!(response.ok, "doctor failed: {:?}", response.error);
    (response.result.unwrap(), took)
}

/// Checks a failure is the documented outage error.
fn assert_store_unavailable(error: &ErrorBody, context: &str) {
    assert_eq!(error.code, ErrorCode::InternalError, "{context}: {error:?}");
    assert!(error.retryable, "{context}: {error:?}");
    let details = &error.details;
    assert_eq!(
        details["reason"],
        json!(STORE_UNAVAILABLE_REASON),
        "{context}: {error:?}"
    );
    assert!(details["retry_after_ms"].as_u64().is_some(), "{context}: {error:?}");
    assert!(
        error.hint.as_deref().is_some_and(|hint| hint.contains("Retry")),
        "{context}: {error:?}"
    );
}

fn assert_request_unavailable(service: &Service, request: Value, context: &str) {
    let started = Instant::now();
    let response = call(service, request);
    assert!(!response.ok, "{context}: served during the outage");
    assert_store_unavailable(response.error.as_ref().unwrap(), context);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{context}: failing took {:?}",
        started.elapsed()
    );
}

/// `doctor` during an outage: fast, ok, `status: store_unavailable` with the outage.
fn assert_doctor_reports_outage(service: &Service, last_commit_seq: i64, context: &str) -> Duration {
    let (result, took) = doctor(service);
    assert!(took < DOCTOR_LIMIT, "{context}: doctor took {took:?}");
    assert_eq!(result["status"], json!(STORE_UNAVAILABLE_REASON), "{context}: {result}");
    let outage = &result["store_outage"];
    assert_eq!(outage["reason"], json!(STORE_UNAVAILABLE_REASON), "{context}: {result}");
    assert!(!outage["message"].as_str().unwrap().is_empty(), "{context}: {result}");
    assert!(outage["since"].as_str().unwrap().ends_with('Z'), "{context}: {result}");
    assert!(outage["duration_ms"].as_u64().is_some(), "{context}: {result}");
    assert_eq!(
        result["last_commit_seq"],
        json!(last_commit_seq),
        "{context}: the last known sequence"
    );
    took
}

/// Puts `key` until it is acknowledged (the retry a client makes); returns how long it took.
fn put_until_served(service: &Service, key: &str) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let response = call(service, put_request(key));
        if response.ok {
            return (response.result.unwrap(), started.elapsed());
        }
        let error = response.error.unwrap();
        assert_store_unavailable(&error, "a retry after the outage");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never served again: {error:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[allow(clippy::print_stderr)] // the measured latencies, for BENCHMARKS.md
fn while_the_server_is_stopped_requests_fail_as_store_unavailable_and_doctor_answers_within_a_second() {
    let Some(f) = FrontEnds::start(1) else { return };
    let service = &f.services[0];
    let first = call(service, put_request("before"));
    assert!(first.ok, "{:?}", first.error);
    let (healthy, _) = doctor(service);
    assert_eq!(healthy["status"], json!("ok"));
    assert!(healthy.get("store_outage").is_none(), "{healthy}");

    f.cluster.stop();
    assert_request_unavailable(service, put_request("during"), "a put while stopped");
    assert_request_unavailable(service, search_request(), "a search while stopped");
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        worst = worst.max(assert_doctor_reports_outage(service, 1, "server stopped"));
    }
    eprintln!("doctor while the server is stopped: worst of 5 = {worst:?}");

    f.cluster.start_again();
    let (during, took) = put_until_served(service, "during");
    eprintln!("first put served {took:?} after pg_ctl start returned");
    assert_eq!(during["commit_seq"], json!(2), "nothing was applied while it failed");
    let replay = call(service, put_request("before"));
    assert_eq!(
        replay.result.unwrap()["commit_seq"],
        json!(1),
        "the acknowledged put survived"
    );
    let (healthy, _) = doctor(service);
    assert_eq!(healthy["status"], json!("ok"), "{healthy}");
    assert_eq!(healthy["last_commit_seq"], json!(2));
}

#[test]
fn while_the_server_is_restarting_new_connections_are_refused_and_requests_fail_as_store_unavailable() {
    let Some(f) = FrontEnds::start(1) else { return };
    let service = &f.services[0];
    assert!(call(service, put_request("before")).ok);
    doctor(service);
    // A session of our own keeps a smart shutdown from finishing: until it ends the server
    // refuses every new connection with "the database system is shutting down" (57P03, the
    // SQLSTATE it also gives while starting up).
    let mut held = postgres::Client::connect(&f.url, postgres::NoTls).unwrap();
    f.cluster.begin_smart_shutdown();
    held.batch_execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .unwrap();
    assert_request_unavailable(service, put_request("during"), "a put while restarting");
    assert_request_unavailable(service, search_request(), "a search while restarting");
    assert_doctor_reports_outage(service, 1, "server restarting");
    let (result, _) = doctor(service);
    let message = result["store_outage"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("shutting down"), "{message}");
    drop(held);
    f.cluster.wait_stopped();
    f.cluster.start_again();
    let (during, _) = put_until_served(service, "during");
    assert_eq!(during["commit_seq"], json!(2));
}

#[test]
fn a_connection_killed_mid_transaction_fails_its_mutation_as_store_unavailable_and_the_next_one_is_served() {
    let Some(f) = FrontEnds::start(1) else { return };
    let service = &f.services[0];
    assert!(call(service, put_request("before")).ok);
    // A mutation whose session is terminated (pg_terminate_backend) inside its transaction:
    // the closure kills every backend of the database, its own included, then goes on.
    let url = f.url.clone();
    let killed = service.store().write(move |tx| {
        let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        admin
            .batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                  WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
            .unwrap();
        tx.db().execute("SELECT 1", &[])?;
        Ok(())
    });
    let error = killed.expect_err("the terminated session cannot commit");
    assert!(error.is_store_unavailable(), "{error}");
    assert_store_unavailable(&error_body(&error.into()), "a killed transaction");
    // The pooled read connections were terminated too: the next requests reconnect.
    let response = call(service, search_request());
    assert!(response.ok, "{:?}", response.error);
    let again = call(service, put_request("after"));
    assert!(again.ok, "{:?}", again.error);
    assert_eq!(
        again.result.unwrap()["commit_seq"],
        json!(2),
        "nothing of the killed one committed"
    );
}

#[test]
fn an_internal_failure_is_not_reported_as_store_unavailable() {
    let Some(f) = FrontEnds::start(1) else { return };
    let service = &f.services[0];
    let broken = service.store().write(|tx| {
        tx.db()
            .execute("SELECT no_such_column FROM commit_state", &[])
            .map(drop)
    });
    let error = broken.expect_err("the statement is wrong");
    assert!(!error.is_store_unavailable(), "{error}");
    for body in [
        error_body(&error.into()),
        error_body(&StoreError::Internal("a bug".to_owned()).into()),
    ] {
        assert_eq!(body.code, ErrorCode::InternalError);
        assert!(body.details.get("reason").is_none(), "{body:?}");
    }
}

#[test]
#[allow(clippy::print_stderr)] // the measured latencies, for BENCHMARKS.md
fn doctor_answers_within_a_second_while_the_server_is_frozen_and_recovers_when_it_resumes() {
    use rustix::process::{Pid, Signal, kill_process};
    let Some(f) = FrontEnds::start(1) else { return };
    let service = &f.services[0];
    assert!(call(service, put_request("before")).ok);
    doctor(service);
    let pids = f.cluster.server_pids();
    assert!(pids.len() > 1, "{pids:?}");
    let signal_all = |signal| {
        for pid in &pids {
            let _ = kill_process(Pid::from_raw(*pid).unwrap(), signal);
        }
    };
    signal_all(Signal::STOP);
    let mut worst = Duration::ZERO;
    for _ in 0..3 {
        worst = worst.max(assert_doctor_reports_outage(service, 1, "server frozen"));
    }
    signal_all(Signal::CONT);
    eprintln!("doctor while the server is frozen: worst of 3 = {worst:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (result, took) = doctor(service);
        assert!(took < DOCTOR_LIMIT, "doctor took {took:?}");
        if result["status"] == json!("ok") {
            break;
        }
        assert!(Instant::now() < deadline, "doctor never recovered: {result}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
