//! Client behaviour against scripted fake servers: every way of not getting a response is
//! a retryable `TRANSPORT_ERROR`, busy envelopes are retried, sessions reconnect once.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::daemon::busy_error_body;
use crate::frame::{self, MAX_FRAME_BYTES};
use crate::protocol::ErrorCode;
use crate::protocol::Response;

struct FakeServer {
    _dir: tempfile::TempDir,
    endpoint: Endpoint,
    accepted: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Serves `connections` connections, each with `script`.
    fn start(connections: usize, script: impl Fn(UnixStream) + Send + Sync + 'static) -> FakeServer {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming().take(connections) {
                counter.fetch_add(1, Ordering::SeqCst);
                script(stream.unwrap());
            }
        });
        FakeServer {
            _dir: dir,
            endpoint: Endpoint::Unix(path),
            accepted,
            thread: Some(thread),
        }
    }

    fn client(&self) -> SocketClient {
        SocketClient::new(self.endpoint.clone()).with_timeouts(fast())
    }

    fn join(mut self) -> usize {
        self.thread.take().unwrap().join().unwrap();
        self.accepted.load(Ordering::SeqCst)
    }
}

fn fast() -> ClientTimeouts {
    ClientTimeouts {
        connect: Duration::from_millis(500),
        write: Duration::from_millis(500),
        read: Duration::from_millis(300),
        exchange: Duration::from_secs(2),
        busy_retry: Duration::from_millis(200),
    }
}

fn request() -> Value {
    json!({"request_id": "req_client", "op": "capabilities", "input": {}})
}

fn read_request(stream: &mut UnixStream) -> Option<Vec<u8>> {
    frame::blocking::read(stream, MAX_FRAME_BYTES).unwrap()
}

fn reply(stream: &mut UnixStream, response: &Response) {
    let bytes = serde_json::to_vec(response).unwrap();
    frame::blocking::write(stream, &bytes, MAX_FRAME_BYTES).unwrap();
}

fn transport_message(result: Result<Response, ClientError>) -> String {
    match result {
        Err(ClientError::Transport(message)) => message,
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[test]
fn a_missing_socket_is_a_retryable_transport_error() {
    let dir = tempfile::tempdir().unwrap();
    let client = SocketClient::new(Endpoint::Unix(dir.path().join("absent.sock")));
    let error = client.exchange_json(&request()).unwrap_err();
    assert_eq!(error.code(), ErrorCode::TransportError);
    assert!(error.code().default_retryable());
    assert!(error.to_string().contains("cannot connect to unix://"), "{error}");
}

#[test]
fn a_socket_path_too_long_for_the_platform_is_a_configuration_error() {
    let path = std::path::PathBuf::from(format!("/tmp/{}.sock", "x".repeat(200)));
    let error = SocketClient::new(Endpoint::Unix(path))
        .exchange_json(&request())
        .unwrap_err();
    assert!(matches!(error, ClientError::Config(_)), "{error:?}");
    assert!(error.to_string().contains("not a usable Unix socket path"), "{error}");
}

#[test]
fn a_reply_is_read_after_the_request_and_the_write_side_is_closed() {
    let server = FakeServer::start(1, |mut stream| {
        let body = read_request(&mut stream).unwrap();
        let request: Value = serde_json::from_slice(&body).unwrap();
        // A one-shot client half-closes after its request.
        assert!(read_request(&mut stream).is_none());
        reply(
            &mut stream,
            &Response::success(request["request_id"].as_str().unwrap(), json!({"echo": true})),
        );
    });
    let response = server.client().exchange_json(&request()).unwrap();
    assert_eq!(response.request_id, "req_client");
    assert_eq!(response.result, Some(json!({"echo": true})));
    assert_eq!(server.join(), 1);
}

#[test]
fn a_server_closing_without_a_reply_is_a_transport_error_not_an_internal_one() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
    });
    let message = transport_message(server.client().exchange_json(&request()));
    assert_eq!(message, "the daemon closed the connection before replying");
    server.join();
}

#[test]
fn a_server_that_never_replies_times_out_with_a_transport_error() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        std::thread::sleep(Duration::from_millis(600));
    });
    let message = transport_message(server.client().exchange_json(&request()));
    assert_eq!(message, "frame read timed out after 300 ms");
    server.join();
}

#[test]
fn the_whole_exchange_has_its_own_deadline() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        std::thread::sleep(Duration::from_millis(600));
    });
    let timeouts = ClientTimeouts {
        read: Duration::from_secs(1),
        exchange: Duration::from_millis(400),
        ..fast()
    };
    let client = SocketClient::new(server.endpoint.clone()).with_timeouts(timeouts);
    let message = transport_message(client.exchange_json(&request()));
    assert_eq!(message, "request timed out after 400 ms");
    server.join();
}

#[test]
fn the_frame_read_limit_covers_a_whole_trickled_frame() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        for byte in [0u8, 0, 0] {
            std::thread::sleep(Duration::from_millis(120));
            let _ = stream.write_all(&[byte]);
        }
        std::thread::sleep(Duration::from_millis(200));
    });
    let message = transport_message(server.client().exchange_json(&request()));
    assert_eq!(message, "frame read timed out after 300 ms");
    server.join();
}

#[test]
fn a_response_header_over_the_frame_limit_is_refused_before_allocation() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        let _ = stream.write_all(&u32::MAX.to_be_bytes());
    });
    let error = server.client().exchange_json(&request()).unwrap_err();
    assert!(matches!(error, ClientError::TooLarge(_)), "{error:?}");
    assert_eq!(error.code(), ErrorCode::ContentTooLarge);
    server.join();
}

#[test]
fn an_undecodable_response_is_a_transport_error() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        frame::blocking::write(&mut stream, b"not json", 64).unwrap();
    });
    let message = transport_message(server.client().exchange_json(&request()));
    assert!(
        message.starts_with("the daemon sent an invalid response frame"),
        "{message}"
    );
    server.join();
}

#[test]
fn a_request_over_the_frame_limit_is_refused_without_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let client = SocketClient::new(Endpoint::Unix(dir.path().join("absent.sock")));
    let error = client.exchange_raw(&vec![b' '; MAX_FRAME_BYTES + 1]).unwrap_err();
    assert!(matches!(error, ClientError::TooLarge(_)), "{error:?}");
}

#[test]
fn busy_envelopes_are_retried_until_a_slot_frees() {
    let server = FakeServer::start(3, |mut stream| {
        static SEEN: AtomicUsize = AtomicUsize::new(0);
        // The daemon answers busy as soon as it accepts, before reading the request.
        if SEEN.fetch_add(1, Ordering::SeqCst) < 2 {
            reply(&mut stream, &Response::failure("req_transport", busy_error_body(4)));
            let _ = stream.read_to_end(&mut Vec::new());
        } else {
            let _ = read_request(&mut stream);
            reply(&mut stream, &Response::success("req_client", json!({})));
        }
    });
    let response = server.client().exchange_json(&request()).unwrap();
    assert!(response.ok, "{response:?}");
    assert_eq!(server.join(), 3);
}

#[test]
fn a_busy_envelope_that_outlasts_the_budget_is_returned_for_the_callers_request() {
    let server = FakeServer::start(usize::MAX, |mut stream| {
        reply(&mut stream, &Response::failure("req_transport", busy_error_body(4)));
    });
    let client = server.client();
    let response = client.exchange_json(&request()).unwrap();
    assert!(is_busy(&response), "{response:?}");
    assert_eq!(response.request_id, "req_client");
    assert!(server.accepted.load(Ordering::SeqCst) > 1);
}

#[test]
fn a_session_reconnects_once_after_the_server_closed_an_idle_connection() {
    let server = FakeServer::start(2, |mut stream| {
        // Serve one request per connection, then close as an idle timeout would.
        let _ = read_request(&mut stream);
        reply(&mut stream, &Response::success("req_client", json!({})));
    });
    let mut session = server.client().session();
    assert!(session.exchange_json(&request()).unwrap().ok);
    std::thread::sleep(Duration::from_millis(50));
    assert!(session.exchange_json(&request()).unwrap().ok);
    assert_eq!(server.join(), 2);
}

#[test]
fn a_session_reads_the_peer_credentials_of_its_connection() {
    let server = FakeServer::start(1, |mut stream| {
        let _ = read_request(&mut stream);
        reply(&mut stream, &Response::success("req_client", json!({})));
    });
    let mut session = server.client().session();
    session.exchange_json(&request()).unwrap();
    let peer = session.peer_credentials().unwrap().unwrap();
    assert_eq!(peer.uid, net::effective_uid());
    if cfg!(target_os = "linux") {
        assert_eq!(peer.pid, Some(std::process::id()));
    }
    server.join();
}

#[test]
fn a_wedged_listener_makes_connect_time_out() {
    // A listener that never accepts, with its backlog filled by earlier connections.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wedged.sock");
    // A backlog of 1 fills after a couple of connects.
    let listener = net::listen_unix(&path, 0o600, 1).unwrap();
    let mut held = Vec::new();
    let limit = Duration::from_millis(100);
    let error = loop {
        match net::connect_unix(&path, limit) {
            Ok(stream) => held.push(stream),
            Err(error) => break error,
        }
        assert!(held.len() < 64, "the backlog never filled");
    };
    assert_eq!(error.kind(), ErrorKind::TimedOut, "{error}");
    drop(listener);
}
