//! The daemon binary end to end: framing errors, the connection limit, locks and stale
//! sockets, signals, autostart, `daemon status|stop|restart`, and durability under kill -9.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memoree::client::socket::{ClientTimeouts, SocketClient, is_busy};
use memoree::client::{ClientError, Transport};
use memoree::paths::Endpoint;
use memoree::protocol::{ErrorCode, Response};
use memoree::service::Service;
use serde_json::{Value, json};

use crate::support::daemon::DaemonHome as TempHome;
use crate::support::daemon::{TestDaemon, context, put, read_frame, request, send_frame, wait_child};

mod impostor;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

fn code_of(envelope: &Value) -> &str {
    envelope["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not a failure: {envelope}"))
}

fn error_code(response: &Response) -> ErrorCode {
    response
        .error_code()
        .unwrap_or_else(|| panic!("not a failure: {response:?}"))
}

/// Runs `command` to completion, failing the test if it takes more than 20 s.
fn finish(command: &mut Command) -> (Option<i32>, Value, String) {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_child(&mut child, Duration::from_secs(20)).expect("the command did not finish");
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let envelope = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (status.code(), envelope, stderr)
}

#[test]
fn the_default_endpoint_is_an_owner_only_socket_in_a_private_runtime_dir() {
    let home = TempHome::new();
    let daemon = TestDaemon::in_home(&home);
    assert!(
        std::fs::symlink_metadata(daemon.socket())
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert_eq!(mode(daemon.socket()), 0o600);
    assert_eq!(mode(&home.runtime_dir()), 0o700);
    assert_eq!(mode(&home.data_dir()), 0o700);
    assert_eq!(mode(&home.data_dir().join("memoreed.lock")), 0o600);
    assert_eq!(mode(&home.runtime_dir().join("memoree.sock.lock")), 0o600);
}

#[test]
fn socket_and_in_process_transports_give_identical_envelopes() {
    let daemon = TestDaemon::start();
    let scratch = tempfile::tempdir().unwrap();
    let service = Service::open(&scratch.path().join("data")).unwrap();
    let cases = [
        request("capabilities", json!({})),
        request("capabilities", json!({"unexpected": 1})),
        request("capabilities", Value::Null),
        json!({"v": 2, "request_id": "req_v2", "op": "capabilities", "input": {}}),
        json!({"request_id": "req_unknown", "op": "no.such.op", "input": {}}),
        request("artifact.get", json!({"artifact_id": "art_01J0000000000000000000000"})),
        json!({"request_id": "req_nokey", "op": "artifact.put", "context": context(), "input": {}}),
        json!({"request_id": "req_noctx", "op": "search", "input": {"query": "x"}}),
    ];
    let client = daemon.client();
    for case in cases {
        let over_socket = client.exchange_json(&case).unwrap();
        let in_process = service.handle_value(case.clone(), "req_transport");
        assert_eq!(over_socket, in_process, "{case}");
    }
    let garbage = client.exchange_raw(b"{\"request_id\": \"req_garbage\",").unwrap();
    assert_eq!(
        garbage,
        service.handle_json(b"{\"request_id\": \"req_garbage\",", "req_transport")
    );
    assert_eq!(garbage.request_id, "req_transport");
}

#[test]
fn one_request_per_connection_clients_and_multi_request_connections_both_work() {
    let daemon = TestDaemon::start();
    // A reference-style client: connect, one frame each way, close.
    for i in 0..3 {
        let mut stream = daemon.raw();
        send_frame(
            &mut stream,
            &serde_json::to_vec(&request("capabilities", json!({}))).unwrap(),
        );
        assert!(read_frame(&mut stream).unwrap().ok, "attempt {i}");
        drop(stream);
        // Let the daemon notice the close before the next connection.
        std::thread::sleep(Duration::from_millis(20));
    }
    // Several requests in sequence on one connection.
    let mut stream = daemon.raw();
    for id in ["req_1", "req_2", "req_3"] {
        let body = json!({"request_id": id, "op": "doctor", "input": {}});
        send_frame(&mut stream, &serde_json::to_vec(&body).unwrap());
        assert_eq!(read_frame(&mut stream).unwrap().request_id, id);
    }
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(read_frame(&mut stream).is_none());
}

#[test]
fn a_pipelining_client_gets_every_reply_in_order_and_a_replay_creates_nothing() {
    let daemon = TestDaemon::start();
    let capabilities = daemon
        .client()
        .exchange_json(&request("capabilities", json!({})))
        .unwrap();
    let extensions = capabilities.result.unwrap()["extensions"].clone();
    assert!(extensions.as_array().unwrap().contains(&json!("pipelined_requests")));
    // Three windows and a bit, on one kept connection.
    let bodies: Vec<Vec<u8>> = (0..27)
        .map(|n| serde_json::to_vec(&put(&format!("pipe_{n}"))).unwrap())
        .collect();
    let client = daemon.client().keep_alive();
    for (round, created) in [(0, true), (1, false)] {
        let responses = client.exchange_pipelined(&bodies).unwrap();
        assert_eq!(responses.len(), bodies.len());
        for (n, response) in responses.iter().enumerate() {
            assert_eq!(
                response.request_id.to_string(),
                format!("req_pipe_{n}"),
                "round {round}"
            );
            let result = response.result.as_ref().unwrap_or_else(|| panic!("{response:?}"));
            assert_eq!(result["created"], json!(created), "round {round}");
        }
    }
    let listed = client
        .exchange_json(&json!({"request_id": "req_list", "op": "artifact.list", "context": context(), "input": {}}))
        .unwrap();
    assert_eq!(listed.result.unwrap()["total"], json!(27));
}

#[test]
fn oversized_and_garbage_frames_get_error_envelopes_and_the_daemon_keeps_serving() {
    let daemon = TestDaemon::start();
    let mut stream = daemon.raw();
    use std::io::Write;
    stream.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let response = read_frame(&mut stream).unwrap();
    assert_eq!(error_code(&response), ErrorCode::ContentTooLarge);
    assert_eq!(response.request_id, "req_transport");

    drop(stream);

    // One byte over the limit, with the body on its way.
    let mut stream = daemon.raw();
    stream.write_all(&(25_165_824u32 + 1).to_be_bytes()).unwrap();
    let _ = stream.write_all(&vec![b' '; 1 << 20]);
    assert_eq!(
        error_code(&read_frame(&mut stream).unwrap()),
        ErrorCode::ContentTooLarge
    );
    drop(stream);

    // Each garbage frame on its own connection (the client retries while closed
    // connections are still releasing their slots).
    let client = daemon.client();
    for garbage in [
        &b"not json at all"[..],
        b"",
        b"[1,2",
        b"\xff\xfe\x00",
        b"42",
        b"{\"op\":\"capabilities\"}",
    ] {
        let response = client.exchange_raw(garbage).unwrap();
        assert_eq!(error_code(&response), ErrorCode::InvalidRequest, "{garbage:?}");
        assert_eq!(response.request_id, "req_transport");
    }
    assert!(client.exchange_json(&request("capabilities", json!({}))).unwrap().ok);
}

/// A connection that has been served once and stays open (and so keeps its slot). A
/// connection closed just before may not have released its slot yet: retry while busy.
fn hold_connection(daemon: &TestDaemon, i: usize) -> std::os::unix::net::UnixStream {
    let body = json!({"request_id": format!("req_held_{i}"), "op": "capabilities", "input": {}});
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut stream = daemon.raw();
        send_frame(&mut stream, &serde_json::to_vec(&body).unwrap());
        let response = read_frame(&mut stream).unwrap();
        if response.ok {
            return stream;
        }
        assert!(is_busy(&response) && Instant::now() < deadline, "{response:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_fifth_connection_gets_a_busy_envelope_and_the_client_retries_until_a_slot_frees() {
    let daemon = TestDaemon::start();
    let mut held: Vec<_> = (0..4).map(|i| hold_connection(&daemon, i)).collect();
    let mut fifth = daemon.raw();
    send_frame(
        &mut fifth,
        &serde_json::to_vec(&request("capabilities", json!({}))).unwrap(),
    );
    let busy = read_frame(&mut fifth).unwrap();
    assert!(is_busy(&busy), "{busy:?}");
    let error = busy.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::TransportError);
    assert!(error.retryable);
    assert_eq!(
        error.details,
        json!({"reason": "connection_limit", "max_connections": 4})
    );

    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        held.pop();
        held
    });
    let started = Instant::now();
    let response = daemon
        .client()
        .exchange_json(&request("capabilities", json!({})))
        .unwrap();
    assert!(response.ok, "{response:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    drop(release.join().unwrap());
}

#[test]
fn a_stale_socket_left_by_a_killed_daemon_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = TestDaemon::start_in(dir.path());
    first.kill9();
    assert!(first.socket().exists(), "kill -9 leaves the socket behind");
    let second = TestDaemon::start_in(dir.path());
    assert!(second.client().exchange_json(&request("doctor", json!({}))).unwrap().ok);
}

#[test]
fn a_second_daemon_on_the_same_data_dir_exits_with_a_transport_error() {
    let daemon = TestDaemon::start();
    let other_socket = daemon.data_dir().parent().unwrap().join("other.sock");
    let (code, envelope, _) = finish(
        Command::new(crate::support::BIN)
            .arg("serve")
            .arg("--listen")
            .arg(format!("unix://{}", other_socket.display()))
            .arg("--data-dir")
            .arg(daemon.data_dir()),
    );
    assert_eq!(code, Some(1));
    assert_eq!(code_of(&envelope), "TRANSPORT_ERROR");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("another Memoree daemon owns") && message.contains("memoreed.lock"),
        "{message}"
    );
    assert!(!other_socket.exists());

    // The same socket with another data dir is refused by the endpoint lock.
    let other_data = daemon.data_dir().parent().unwrap().join("other-data");
    let (code, envelope, _) = finish(
        Command::new(crate::support::BIN)
            .arg("serve")
            .arg("--listen")
            .arg(daemon.endpoint_arg())
            .arg("--data-dir")
            .arg(&other_data),
    );
    assert_eq!(code, Some(1));
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another daemon owns Unix endpoint")
    );
    assert!(daemon.client().exchange_json(&request("doctor", json!({}))).unwrap().ok);
}

#[test]
fn sigterm_and_sigint_shut_down_cleanly_and_remove_the_socket() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::INT] {
        let mut daemon = TestDaemon::start();
        daemon.signal(signal);
        let status = daemon.wait_exit(Duration::from_secs(15));
        assert!(status.success(), "signal {signal:?}: {status}\n{}", daemon.logs());
        assert!(!daemon.socket().exists(), "signal {signal:?}");
        assert!(daemon.data_dir().join("memoreed.lock").exists());
    }
}

#[test]
fn non_loopback_tcp_is_refused_unless_dangerously_allowed() {
    let dir = tempfile::tempdir().unwrap();
    for listen in ["tcp://0.0.0.0:17878", "tcp://[::]:17878"] {
        let (code, envelope, _) = finish(
            Command::new(crate::support::BIN)
                .args(["serve", "--listen", listen, "--data-dir"])
                .arg(dir.path().join("data")),
        );
        assert_eq!(code, Some(2), "{envelope}");
        assert_eq!(code_of(&envelope), "CONFIG_ERROR");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.contains("--dangerously-allow-non-loopback-tcp"), "{message}");
    }
    assert!(!dir.path().join("data").exists());
}

#[test]
fn loopback_tcp_serves_the_cli_through_an_explicit_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = Endpoint::parse(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let mut daemon = TestDaemon::spawn_at(dir.path(), &endpoint, &dir.path().join("data"));
    daemon.wait_ready();
    let home = TempHome::new();
    let body = serde_json::to_vec(&request("doctor", json!({}))).unwrap();
    let output = home.output(
        &mut home.command(&["--endpoint", &endpoint.to_string(), "call"]),
        Some(&body),
    );
    let envelope = crate::support::envelope(&output);
    assert!(output.status.success(), "{envelope}");
    assert_eq!(envelope["result"]["daemon_pid"], json!(daemon.pid()));
    assert!(!home.socket().exists(), "an explicit endpoint never autostarts");
}

#[test]
fn autostart_starts_a_private_daemon_from_a_fresh_home_and_daemon_stop_stops_it() {
    let home = TempHome::new();
    let (status, envelope) = home.call(&request("capabilities", json!({})));
    assert!(status.success(), "{envelope}");
    assert_eq!(envelope["request_id"], "req_capabilities");
    assert_eq!(mode(&home.data_dir()), 0o700);
    assert_eq!(mode(&home.runtime_dir()), 0o700);
    assert_eq!(mode(&home.socket()), 0o600);
    assert_eq!(mode(&home.data_dir().join("memoreed.log")), 0o600);

    let (status, running) = home.run_cli(&["daemon", "status"]);
    assert!(status.success(), "{running}");
    let pid = running["result"]["daemon_pid"].as_u64().unwrap();
    assert_eq!(running["result"]["running"], json!(true));
    // /proc/PID/exe names the resolved file; the build directory may be reached through a
    // symbolic link (CI's fresh-machine clone links its target/), so compare resolved paths.
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(),
        std::fs::canonicalize(crate::support::DAEMON_BIN).unwrap(),
        "autostart runs the slim daemon beside memoree"
    );

    let (status, stopped) = home.run_cli(&["daemon", "stop"]);
    assert!(status.success(), "{stopped}");
    assert_eq!(stopped["result"]["stopped_pid"], json!(pid));
    assert_eq!(stopped["result"]["already_stopped"], json!(false));
    assert!(!home.socket().exists());

    let (status, stopped) = home.run_cli(&["daemon", "status"]);
    assert_eq!(status.code(), Some(1));
    assert_eq!(stopped["ok"], json!(true));
    assert_eq!(
        stopped["result"],
        json!({"endpoint": home.default_endpoint(), "running": false, "status": "stopped"})
    );
    let (status, again) = home.run_cli(&["daemon", "stop"]);
    assert!(status.success());
    assert_eq!(again["result"]["already_stopped"], json!(true));
    assert_eq!(again["result"]["stopped_pid"], Value::Null);
}

#[test]
fn doctor_reports_the_binary_version_and_who_owns_the_daemons_lifecycle() {
    // Autostarted by a client: memoree owns it, and it reports this build's version.
    let home = TempHome::new();
    let (status, doctor) = home.call(&request("doctor", json!({})));
    assert!(status.success(), "{doctor}");
    assert_eq!(doctor["result"]["lifecycle_owner"], "memoree", "{doctor}");
    assert_eq!(doctor["result"]["binary_version"], env!("CARGO_PKG_VERSION"));
    let (status, stopped) = home.run_cli(&["daemon", "stop"]);
    assert!(status.success(), "{stopped}");

    // Started by hand and told which version to report (for a client that accepts only its
    // own release): external, and the version it was told.
    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint::Unix(dir.path().join("s.sock"));
    let env = [("MEMOREE_REPORT_BINARY_VERSION", Path::new("0.7.1"))];
    let daemon = TestDaemon::start_at_with_env(dir.path(), &endpoint, &dir.path().join("data"), &env);
    let doctor = daemon.client().exchange_json(&request("doctor", json!({}))).unwrap();
    let result = doctor.result.unwrap();
    assert_eq!(result["lifecycle_owner"], "external");
    assert_eq!(result["binary_version"], "0.7.1");
    assert_eq!(
        result["version"],
        env!("CARGO_PKG_VERSION"),
        "our own version stays truthful"
    );
}

/// The `memoree` under test, linked (or copied) alone into a fresh directory: autostart
/// looks for `memoree-daemon` beside it there.
fn memoree_alone() -> (tempfile::TempDir, std::path::PathBuf) {
    let bin_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let memoree = bin_dir.path().join("memoree");
    if std::fs::hard_link(crate::support::BIN, &memoree).is_err() {
        std::fs::copy(crate::support::BIN, &memoree).unwrap();
    }
    (bin_dir, memoree)
}

#[test]
fn autostart_runs_memoree_serve_when_no_daemon_executable_sits_beside_memoree() {
    let home = TempHome::new();
    // The same `memoree`, linked into a directory without `memoree-daemon`.
    let (_bin_dir, memoree) = memoree_alone();
    let body = serde_json::to_vec(&request("capabilities", json!({}))).unwrap();
    let output = home.output(&mut home.command_of(&memoree, &["call"]), Some(&body));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    let (status, running) = home.run_cli(&["daemon", "status"]);
    assert!(status.success(), "{running}");
    let pid = running["result"]["daemon_pid"].as_u64().unwrap();
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/exe")).unwrap(),
        std::fs::canonicalize(&memoree).unwrap()
    );
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    assert_eq!(args[1], b"serve");
    assert_eq!(args[2], b"--listen");

    let (status, stopped) = home.run_cli(&["daemon", "stop"]);
    assert!(status.success(), "{stopped}");
    assert_eq!(stopped["result"]["stopped_pid"], json!(pid));
}

#[test]
fn a_client_waits_for_a_daemon_that_is_still_opening_its_store_past_the_usual_three_seconds() {
    // A daemon binds its endpoint only once its store is open, and migrating a large store
    // (a full-text rebuild) takes seconds. Stand-in: a `memoree-daemon` beside `memoree` that
    // takes four seconds before it runs the real one.
    let home = TempHome::new();
    let (bin_dir, memoree) = memoree_alone();
    let slow = bin_dir.path().join("memoree-daemon");
    let real = std::fs::canonicalize(crate::support::DAEMON_BIN).unwrap();
    std::fs::write(&slow, format!("#!/bin/sh\nsleep 4\nexec '{}' \"$@\"\n", real.display())).unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let body = serde_json::to_vec(&request("capabilities", json!({}))).unwrap();
    let output = home.output(&mut home.command_of(&memoree, &["call"]), Some(&body));
    let envelope = crate::support::envelope(&output);
    assert!(output.status.success(), "{envelope}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(4));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("still opening its store"),
        "the wait is explained on stderr"
    );

    // `daemon restart` waits the same way.
    let output = home.output(&mut home.command_of(&memoree, &["daemon", "restart"]), None);
    let restarted = crate::support::envelope(&output);
    assert!(output.status.success(), "{restarted}");
    let (status, stopped) = home.run_cli(&["daemon", "stop"]);
    assert!(status.success(), "{stopped}");
}

#[test]
fn memoree_daemon_takes_the_serve_flags_and_refuses_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let (code, envelope, _) = finish(
        Command::new(crate::support::DAEMON_BIN)
            .args(["--listen", "tcp://0.0.0.0:17878", "--data-dir"])
            .arg(dir.path().join("data")),
    );
    assert_eq!(code, Some(2), "{envelope}");
    assert_eq!(code_of(&envelope), "CONFIG_ERROR");
    assert!(!dir.path().join("data").exists());

    let output = Command::new(crate::support::DAEMON_BIN).arg("call").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let help = Command::new(crate::support::DAEMON_BIN).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--listen")
            && help.contains("--data-dir")
            && help.contains("--dangerously-allow-non-loopback-tcp"),
        "{help}"
    );
}

#[test]
fn concurrent_first_calls_in_a_fresh_home_all_succeed_with_one_daemon() {
    let home = TempHome::new();
    let outputs: Vec<_> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| home.call(&request("doctor", json!({})))))
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    });
    let pids: Vec<_> = outputs
        .iter()
        .map(|(status, envelope)| {
            assert!(status.success(), "{envelope}");
            envelope["result"]["daemon_pid"].as_u64().unwrap()
        })
        .collect();
    assert!(pids.windows(2).all(|w| w[0] == w[1]), "{pids:?}");
}

#[test]
fn no_autostart_and_explicit_endpoints_never_start_a_daemon() {
    let home = TempHome::new();
    let body = serde_json::to_vec(&request("capabilities", json!({}))).unwrap();
    let runs = [
        home.output(&mut home.command(&["--no-autostart", "call"]), Some(&body)),
        home.output(home.command(&["call"]).env("MEMOREE_NO_AUTOSTART", "true"), Some(&body)),
        home.output(
            home.command(&["call"]).env("MEMOREE_ENDPOINT", home.default_endpoint()),
            Some(&body),
        ),
        home.output(
            &mut home.command(&["--endpoint", &home.default_endpoint(), "call"]),
            Some(&body),
        ),
    ];
    for output in runs {
        let envelope = crate::support::envelope(&output);
        assert_eq!(output.status.code(), Some(1), "{envelope}");
        assert_eq!(code_of(&envelope), "TRANSPORT_ERROR");
        assert_eq!(envelope["error"]["retryable"], json!(true));
        assert_eq!(envelope["request_id"], "req_capabilities");
    }
    assert!(!home.socket().exists());
    assert!(!home.data_dir().join("memoreed.log").exists());
}

#[test]
fn memoree_no_autostart_accepts_only_true_or_false() {
    let home = TempHome::new();
    for value in ["1", "yes", "0", ""] {
        let output = home.output(
            home.command(&["daemon", "status"]).env("MEMOREE_NO_AUTOSTART", value),
            None,
        );
        assert_eq!(output.status.code(), Some(2), "{value:?}");
        assert!(output.stdout.is_empty(), "{value:?}");
    }
}

#[test]
fn daemon_stop_and_restart_refuse_a_non_default_endpoint() {
    let daemon = TestDaemon::start();
    let home = TempHome::new();
    for verb in ["stop", "restart"] {
        let (status, envelope) = home.run_cli(&["--endpoint", &daemon.endpoint_arg(), "daemon", verb]);
        assert_eq!(status.code(), Some(2), "{envelope}");
        assert_eq!(code_of(&envelope), "INVALID_REQUEST");
    }
    // `status` works on any endpoint and the daemon is untouched.
    let (status, envelope) = home.run_cli(&["--endpoint", &daemon.endpoint_arg(), "daemon", "status"]);
    assert!(status.success(), "{envelope}");
    assert_eq!(envelope["result"]["daemon_pid"], json!(daemon.pid()));
}

#[test]
fn daemon_restart_replaces_the_running_daemon() {
    let home = TempHome::new();
    let (_, first) = home.call(&request("doctor", json!({})));
    let first_pid = first["result"]["daemon_pid"].as_u64().unwrap();
    let (status, restarted) = home.run_cli(&["daemon", "restart"]);
    assert!(status.success(), "{restarted}");
    assert_eq!(restarted["result"]["running"], json!(true));
    let second_pid = restarted["result"]["daemon_pid"].as_u64().unwrap();
    assert_ne!(first_pid, second_pid);
    let (_, status_now) = home.run_cli(&["daemon", "status"]);
    assert_eq!(status_now["result"]["daemon_pid"], json!(second_pid));
}

#[test]
fn acknowledged_writes_survive_kill_9_of_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = TestDaemon::start_in(dir.path());
    let acked = Arc::new(Mutex::new(Vec::<(String, i64)>::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let client = daemon.client_with(ClientTimeouts {
        busy_retry: Duration::from_secs(2),
        ..ClientTimeouts::default()
    });
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let (client, acked, count) = (client.clone(), Arc::clone(&acked), Arc::clone(&count));
            std::thread::spawn(move || {
                for i in 0.. {
                    match client.exchange_json(&put(&format!("kill9-{writer}-{i}"))) {
                        Ok(response) if response.ok => {
                            let id = response.result.as_ref().unwrap()["artifact_id"]
                                .as_str()
                                .unwrap()
                                .to_owned();
                            acked.lock().unwrap().push((id, response.commit_seq.unwrap()));
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(response) => panic!("a write failed: {response:?}"),
                        Err(ClientError::Transport(_)) => return,
                        Err(other) => panic!("unexpected client error: {other:?}"),
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while count.load(Ordering::SeqCst) < 40 {
        assert!(Instant::now() < deadline, "writes are too slow\n{}", daemon.logs());
        std::thread::sleep(Duration::from_millis(5));
    }
    daemon.kill9();
    for writer in writers {
        writer.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let restarted = TestDaemon::start_in(dir.path());
    let client = restarted.client();
    let doctor = client.exchange_json(&request("doctor", json!({}))).unwrap();
    let last = doctor.result.unwrap()["last_commit_seq"].as_i64().unwrap();
    assert!(last >= acked.iter().map(|(_, seq)| *seq).max().unwrap());
    let mut session = client.session();
    for (id, _) in &acked {
        let get = json!({"request_id": "req_get", "op": "artifact.get", "input": {"artifact_id": id}});
        let response = session.exchange_json(&get).unwrap();
        assert!(response.ok, "acknowledged artifact {id} is missing: {response:?}");
    }
}

#[test]
fn the_socket_client_maps_a_missing_daemon_to_a_retryable_transport_error() {
    let dir = tempfile::tempdir().unwrap();
    let client = SocketClient::new(Endpoint::Unix(dir.path().join("none.sock")));
    let error = client.exchange_json(&request("capabilities", json!({}))).unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error}");
    assert_eq!(error.code(), ErrorCode::TransportError);
    assert!(error.code().default_retryable());
}
