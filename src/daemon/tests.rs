//! The daemon library over real sockets with short timeouts: framing errors are answered,
//! the connection limit is explicit, locks and stale sockets behave, shutdown cleans up.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::frame::blocking;
use crate::protocol::Response;

struct Fixture {
    dir: tempfile::TempDir,
    daemon: Option<DaemonHandle>,
}

fn quick() -> ServerTimeouts {
    ServerTimeouts {
        read: Duration::from_secs(1),
        handshake: Duration::from_secs(1),
        write: Duration::from_secs(2),
        idle: Duration::from_millis(500),
        linger: Duration::from_millis(300),
        shutdown_grace: Duration::from_secs(2),
    }
}

impl Fixture {
    fn config(dir: &tempfile::TempDir) -> DaemonConfig {
        let mut config = DaemonConfig::new(Endpoint::Unix(dir.path().join("d.sock")), dir.path().join("data"));
        config.timeouts = quick();
        config
    }

    fn start() -> Fixture {
        Fixture::start_with(|_| {})
    }

    fn start_with(adjust: impl FnOnce(&mut DaemonConfig)) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Fixture::config(&dir);
        adjust(&mut config);
        let daemon = start(config).unwrap();
        Fixture {
            dir,
            daemon: Some(daemon),
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("d.sock")
    }

    fn endpoint(&self) -> Endpoint {
        self.daemon.as_ref().unwrap().endpoint().clone()
    }

    /// One request on a fresh connection, retried briefly while the daemon says busy.
    fn exchange(&self, request: &Value) -> Response {
        exchange(&self.endpoint(), request)
    }

    fn raw(&self) -> UnixStream {
        let stream = UnixStream::connect(self.socket()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream
    }

    fn stop(&mut self) {
        self.daemon.take().unwrap().shutdown().unwrap();
    }
}

fn capabilities(id: &str) -> Value {
    json!({"request_id": id, "op": "capabilities", "input": {}})
}

fn send(stream: &mut UnixStream, body: &[u8]) {
    blocking::write(stream, body, usize::MAX).unwrap();
}

fn receive(stream: &mut UnixStream) -> Option<Response> {
    blocking::read(stream, MAX_FRAME_BYTES)
        .unwrap()
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
}

fn is_busy(response: &Response) -> bool {
    response.error.as_ref().is_some_and(ErrorBody::is_connection_limit)
}

/// One request on a fresh connection (the daemon tests speak frames directly, without the
/// client), retried for up to a second while the daemon answers with its busy envelope.
fn exchange(endpoint: &Endpoint, request: &Value) -> Response {
    let body = serde_json::to_vec(request).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        let response = match endpoint {
            Endpoint::Unix(path) => {
                let mut stream = UnixStream::connect(path).unwrap();
                send(&mut stream, &body);
                receive(&mut stream).unwrap()
            }
            Endpoint::Tcp(addr) => {
                let mut stream = std::net::TcpStream::connect(addr).unwrap();
                blocking::write(&mut stream, &body, usize::MAX).unwrap();
                let bytes = blocking::read(&mut stream, MAX_FRAME_BYTES).unwrap().unwrap();
                serde_json::from_slice(&bytes).unwrap()
            }
            Endpoint::Tls(addr) => panic!("the daemon unit tests speak no TLS (tls://{addr}); see tests/remote.rs"),
        };
        if !is_busy(&response) || std::time::Instant::now() > deadline {
            return response;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn code(response: &Response) -> ErrorCode {
    response
        .error_code()
        .unwrap_or_else(|| panic!("expected a failure: {response:?}"))
}

#[test]
fn the_socket_is_owner_only_and_serves_the_same_envelopes_as_the_service() {
    let fixture = Fixture::start();
    let meta = std::fs::symlink_metadata(fixture.socket()).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let over_socket = fixture.exchange(&capabilities("req_same"));
    let service = Service::open(&fixture.dir.path().join("other")).unwrap();
    let in_process = service.handle_value(capabilities("req_same"), "req_transport");
    assert_eq!(over_socket, in_process);
}

#[test]
fn a_connection_carries_several_requests_and_closes_when_idle() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    for id in ["req_a", "req_b", "req_c"] {
        send(&mut stream, &serde_json::to_vec(&capabilities(id)).unwrap());
        assert_eq!(receive(&mut stream).unwrap().request_id, id);
    }
    // The idle timeout (500 ms) closes the connection cleanly.
    assert!(receive(&mut stream).is_none());
}

#[test]
fn a_connection_that_never_sends_is_closed_after_the_read_timeout() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    let started = std::time::Instant::now();
    assert!(receive(&mut stream).is_none());
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[test]
fn a_stalled_body_gets_a_retryable_transport_error_envelope() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    stream.write_all(&100u32.to_be_bytes()).unwrap();
    stream.write_all(b"{\"request_id\":").unwrap();
    let response = receive(&mut stream).unwrap();
    assert_eq!(code(&response), ErrorCode::TransportError);
    let error = response.error.unwrap();
    assert!(error.retryable);
    assert_eq!(error.message, "transport error: frame read timed out after 1 second");
}

#[test]
fn an_oversized_header_gets_content_too_large_and_the_daemon_keeps_serving() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    let len = MAX_FRAME_BYTES as u32 + 1;
    stream.write_all(&len.to_be_bytes()).unwrap();
    stream.write_all(&[b'x'; 4096]).unwrap();
    let response = receive(&mut stream).unwrap();
    assert_eq!(response.request_id, "req_transport");
    assert_eq!(code(&response), ErrorCode::ContentTooLarge);
    let error = response.error.unwrap();
    assert!(!error.retryable);
    assert_eq!(
        error.details,
        json!({"frame_bytes": len, "max_frame_bytes": MAX_FRAME_BYTES})
    );
    assert!(
        error.message.starts_with("content exceeds the configured size limit"),
        "{}",
        error.message
    );
    // The server half-closed after replying.
    assert!(receive(&mut stream).is_none());
    assert!(fixture.exchange(&capabilities("req_after")).ok);
}

#[test]
fn malformed_json_gets_invalid_request_and_the_connection_stays_usable() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    send(&mut stream, b"{not json");
    let response = receive(&mut stream).unwrap();
    assert_eq!(response.request_id, "req_transport");
    assert_eq!(code(&response), ErrorCode::InvalidRequest);
    assert!(
        response
            .error
            .unwrap()
            .message
            .starts_with("invalid request: invalid request JSON: ")
    );
    send(&mut stream, &[0xff, 0xfe]);
    assert_eq!(code(&receive(&mut stream).unwrap()), ErrorCode::InvalidRequest);
    send(&mut stream, &serde_json::to_vec(&capabilities("req_ok")).unwrap());
    assert!(receive(&mut stream).unwrap().ok);
}

fn put(id: &str, text: &str) -> Value {
    json!({
        "request_id": id,
        "idempotency_key": format!("key_{id}"),
        "op": "artifact.put",
        "context": {"workspace_id": "ws_pipe", "project_id": "pr_pipe"},
        "input": {"kind": "note", "title": id, "media_type": "text/plain", "content": {"type": "text", "data": text}},
    })
}

#[test]
fn pipelined_requests_are_served_concurrently_and_answered_in_request_order() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    // Three times the pipeline depth, written before any reply is read: writes, reads and
    // a malformed frame mixed.
    let count = 3 * connection::PIPELINE_DEPTH;
    let mut expected = Vec::new();
    for n in 0..count {
        let id = format!("req_pipe_{n}");
        let body = match n % 3 {
            0 => serde_json::to_vec(&put(&id, &format!("pipelined note {n}"))).unwrap(),
            1 => serde_json::to_vec(&capabilities(&id)).unwrap(),
            _ => b"{not json".to_vec(),
        };
        send(&mut stream, &body);
        expected.push(if n % 3 == 2 { "req_transport".to_owned() } else { id });
    }
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let responses: Vec<Response> = (0..count).map(|_| receive(&mut stream).unwrap()).collect();
    let answered: Vec<String> = responses.iter().map(|r| r.request_id.to_string()).collect();
    assert_eq!(answered, expected);
    for (n, response) in responses.iter().enumerate() {
        assert_eq!(response.ok, n % 3 != 2, "{response:?}");
    }
    // Every reply owed was written before the connection closed.
    assert!(receive(&mut stream).is_none());
    let list = json!({
        "request_id": "req_list",
        "op": "artifact.list",
        "context": {"workspace_id": "ws_pipe", "project_id": "pr_pipe"},
        "input": {},
    });
    let listed = fixture.exchange(&list);
    assert!(listed.ok, "{listed:?}");
    assert_eq!(listed.result.unwrap()["total"], json!(count / 3));
}

#[test]
fn an_oversized_frame_behind_pipelined_requests_is_refused_after_their_replies() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    send(&mut stream, &serde_json::to_vec(&capabilities("req_first")).unwrap());
    send(&mut stream, &serde_json::to_vec(&capabilities("req_second")).unwrap());
    stream.write_all(&(MAX_FRAME_BYTES as u32 + 1).to_be_bytes()).unwrap();
    assert_eq!(receive(&mut stream).unwrap().request_id, "req_first");
    assert_eq!(receive(&mut stream).unwrap().request_id, "req_second");
    assert_eq!(code(&receive(&mut stream).unwrap()), ErrorCode::ContentTooLarge);
    assert!(receive(&mut stream).is_none());
}

#[test]
fn a_truncated_frame_closes_only_that_connection() {
    let fixture = Fixture::start();
    let mut stream = fixture.raw();
    stream.write_all(&[0, 0]).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(receive(&mut stream).is_none());
    assert!(fixture.exchange(&capabilities("req_after")).ok);
}

#[test]
fn a_response_over_the_frame_limit_is_replaced_by_content_too_large() {
    let fixture = Fixture::start_with(|config| config.max_frame_bytes = 700);
    let response = fixture.exchange(&capabilities("req_big"));
    assert_eq!(response.request_id, "req_big");
    assert_eq!(code(&response), ErrorCode::ContentTooLarge);
}

#[test]
fn the_connection_over_the_limit_gets_a_retryable_busy_envelope() {
    let fixture = Fixture::start_with(|config| config.timeouts.idle = Duration::from_secs(5));
    let mut held: Vec<UnixStream> = (0..4).map(|_| fixture.raw()).collect();
    for (i, stream) in held.iter_mut().enumerate() {
        send(stream, &serde_json::to_vec(&capabilities(&format!("req_{i}"))).unwrap());
        assert!(receive(stream).unwrap().ok);
    }
    let mut fifth = fixture.raw();
    send(&mut fifth, &serde_json::to_vec(&capabilities("req_5")).unwrap());
    let response = receive(&mut fifth).unwrap();
    assert!(is_busy(&response), "{response:?}");
    let error = response.error.unwrap();
    assert_eq!(
        error.details,
        json!({"reason": "connection_limit", "max_connections": 4})
    );
    assert!(receive(&mut fifth).is_none());
    // A freed slot is usable again.
    drop(held.pop());
    let response = fixture.exchange(&capabilities("req_6"));
    assert!(response.ok, "{response:?}");
}

#[test]
fn connections_beyond_the_lingering_refusals_still_get_the_busy_envelope() {
    let fixture = Fixture::start_with(|config| {
        config.timeouts.idle = Duration::from_secs(10);
        config.timeouts.linger = Duration::from_secs(10);
    });
    let mut held: Vec<UnixStream> = (0..4).map(|_| fixture.raw()).collect();
    for (i, stream) in held.iter_mut().enumerate() {
        send(stream, &serde_json::to_vec(&capabilities(&format!("req_{i}"))).unwrap());
        assert!(receive(stream).unwrap().ok);
    }
    // Every refused connection stays open, so the first 64 refusals linger and the rest
    // overflow the refusal backlog.
    let mut refused = Vec::new();
    for i in 0..MAX_PENDING_REFUSALS + 16 {
        let mut stream = fixture.raw();
        let response = receive(&mut stream).unwrap_or_else(|| panic!("refused connection {i} got no reply"));
        assert!(is_busy(&response), "connection {i}: {response:?}");
        assert_eq!(response.request_id, TRANSPORT_REQUEST_ID);
        refused.push(stream);
    }
    assert!(
        receive(refused.last_mut().unwrap()).is_none(),
        "the overflow reply is the last frame"
    );
}

#[test]
fn shutdown_removes_the_socket_and_keeps_the_lock_files() {
    let mut fixture = Fixture::start();
    fixture.stop();
    assert!(!fixture.socket().exists());
    assert!(fixture.dir.path().join("d.sock.lock").exists());
    assert!(fixture.dir.path().join("data/memoreed.lock").exists());
    // The locks were released: the same config starts again.
    let again = start(Fixture::config(&fixture.dir)).unwrap();
    again.shutdown().unwrap();
}

#[test]
fn a_second_daemon_on_the_same_data_dir_is_refused() {
    let fixture = Fixture::start();
    let mut config = Fixture::config(&fixture.dir);
    config.listen = Endpoint::Unix(fixture.dir.path().join("other.sock"));
    let error = start(config).unwrap_err();
    assert!(matches!(error, DaemonError::DataDirLocked { .. }), "{error}");
    assert_eq!(error.code(), ErrorCode::TransportError);
    assert!(error.to_string().starts_with("another Memoree daemon owns "), "{error}");
    assert!(!fixture.dir.path().join("other.sock").exists());
}

#[test]
fn a_second_daemon_on_the_same_socket_is_refused_and_the_first_keeps_serving() {
    let fixture = Fixture::start();
    let mut config = Fixture::config(&fixture.dir);
    config.data_dir = fixture.dir.path().join("other-data");
    let error = start(config).unwrap_err();
    assert!(matches!(error, DaemonError::EndpointLocked { .. }), "{error}");
    assert!(fixture.exchange(&capabilities("req_still")).ok);
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let daemon = start(Fixture::config(&dir)).unwrap();
    assert!(exchange(daemon.endpoint(), &capabilities("req_x")).ok);
}

#[test]
fn a_live_socket_of_another_process_is_not_stolen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sock");
    let live = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let error = start(Fixture::config(&dir)).unwrap_err();
    assert!(matches!(error, DaemonError::AlreadyServing { .. }), "{error}");
    assert!(path.exists());
    drop(live);
}

#[test]
fn a_file_that_is_not_a_socket_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sock");
    std::fs::write(&path, b"precious").unwrap();
    let error = start(Fixture::config(&dir)).unwrap_err();
    assert!(matches!(error, DaemonError::NotASocket { .. }), "{error}");
    assert_eq!(error.code(), ErrorCode::ConfigError);
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn non_loopback_tcp_is_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Fixture::config(&dir);
    config.listen = Endpoint::parse("tcp://0.0.0.0:17878").unwrap();
    let error = start(config).unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConfigError);
    assert!(
        error.to_string().contains("--dangerously-allow-non-loopback-tcp"),
        "{error}"
    );
    assert!(!dir.path().join("data").exists());
}

#[test]
fn loopback_tcp_serves_and_reports_the_chosen_port() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Fixture::config(&dir);
    config.listen = Endpoint::parse("tcp://127.0.0.1:0").unwrap();
    let daemon = start(config).unwrap();
    let Endpoint::Tcp(addr) = daemon.endpoint() else {
        panic!("not tcp")
    };
    assert_ne!(addr.port(), 0);
    assert!(exchange(daemon.endpoint(), &capabilities("req_tcp")).ok);
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(&(MAX_FRAME_BYTES as u32 + 1).to_be_bytes()).unwrap();
    // Keep writing while the reply is pending: the linger drain keeps it from being reset.
    let _ = stream.write_all(&vec![b'x'; 256 * 1024]);
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let response: Response = serde_json::from_slice(crate::frame::body_of(&reply)).unwrap();
    assert_eq!(code(&response), ErrorCode::ContentTooLarge);
}

#[test]
fn the_doctor_probe_reports_this_process_as_the_daemon() {
    let fixture = Fixture::start();
    let doctor = json!({"request_id": "req_doc", "op": "doctor", "input": {}});
    let response = fixture.exchange(&doctor);
    let result = response.result.unwrap();
    assert_eq!(result["running"], json!(true));
    assert_eq!(result["daemon_pid"], json!(std::process::id()));
    assert_eq!(result["last_commit_seq"], json!(0));
}
