//! `daemon status|stop|restart`: find the daemon through a `doctor` probe and manage it.
//!
//! The probe is the only way to learn who serves an endpoint. Stopping signals a process,
//! so `stop` and `restart` work only on the default private Unix endpoint and only after
//! the process has been identified beyond doubt:
//! - the `doctor` reply says `running: true` and names a `daemon_pid` above 1;
//! - the kernel's peer credentials of the very connection that carried that reply name
//!   the same pid (where the platform reports pids) and this user's uid.
//!
//! Anything else is refused with `TRANSPORT_ERROR` before a signal is sent.
//!
//! **Invariant:** no signal is ever sent to a pid that was not both reported by the daemon
//! and confirmed as the socket's peer.

use std::path::Path;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use serde_json::Value;

use super::ClientError;
use super::autostart::{Launcher, retry_started};
use super::socket::{PeerCredentials, SocketClient};
use crate::net;
use crate::paths::{Endpoint, Paths};
use crate::protocol::admin::DoctorInput;
use crate::protocol::local::{DaemonStopResult, DaemonStopped};
use crate::protocol::{ErrorBody, ErrorCode, Request, RequestId, Response};

/// Polls while waiting for a daemon to stop or start: 100 × 50 ms.
const POLLS: u32 = 100;
const POLL_DELAY: Duration = Duration::from_millis(50);

/// The outcome of `daemon status`.
#[derive(Debug)]
pub struct StatusReport {
    /// The daemon's own doctor envelope, or a success envelope saying it is stopped.
    pub response: Response,
    /// Whether anything answered.
    pub running: bool,
}

/// What a `doctor` probe learned.
#[derive(Debug)]
pub struct Probe {
    pub response: Response,
    pub peer: Option<PeerCredentials>,
}

impl Probe {
    /// The pid the daemon reports, when it reports itself running.
    pub fn reported_pid(&self) -> Option<u64> {
        let result = self.response.result.as_ref()?;
        if !self.response.ok || result.get("running") != Some(&Value::Bool(true)) {
            return None;
        }
        result.get("daemon_pid").and_then(Value::as_u64)
    }
}

/// Sends `doctor` on one connection and records who answered it.
pub fn probe(client: &SocketClient, request_id: &RequestId) -> Result<Probe, ClientError> {
    let request = Request::new(request_id.clone(), DoctorInput {});
    let mut session = client.session();
    let response = session.send(&request)?;
    let peer = session.peer_credentials()?;
    Ok(Probe { response, peer })
}

/// `daemon status`: the doctor envelope when something answers, the failure when a TLS
/// endpoint refuses this client or the settings are unusable, otherwise a success envelope
/// `{endpoint, running: false, status: "stopped"}`. Never starts a daemon.
pub fn status(client: &SocketClient) -> StatusReport {
    let request_id = RequestId::generate();
    match probe(client, &request_id) {
        Ok(probe) => StatusReport {
            response: probe.response,
            running: true,
        },
        // A TLS refusal or an unusable setting says nothing about whether a daemon runs.
        Err(error @ (ClientError::Tls { .. } | ClientError::Config(_))) => StatusReport {
            response: Response::failure(request_id, error.error_body()),
            running: false,
        },
        Err(error) => {
            tracing::debug!(%error, "the daemon did not answer the status probe");
            let result = DaemonStopped {
                endpoint: client.endpoint().to_string(),
                running: false,
                status: "stopped".into(),
            };
            StatusReport {
                response: success(request_id, &result),
                running: false,
            }
        }
    }
}

fn success(request_id: RequestId, result: &impl serde::Serialize) -> Response {
    match serde_json::to_value(result) {
        Ok(result) => Response::success(request_id, result),
        Err(e) => Response::failure(request_id, ErrorBody::prefixed(ErrorCode::InternalError, e)),
    }
}

/// `daemon stop` on the default endpoint of `paths`.
pub fn stop(paths: &Paths, endpoint: &Endpoint) -> Response {
    let request_id = RequestId::generate();
    if let Err(error) = require_default(paths, endpoint, "stop") {
        return Response::failure(request_id, error);
    }
    let client = SocketClient::new(endpoint.clone());
    match stop_daemon(&client, &request_id) {
        Ok(stopped_pid) => {
            let result = DaemonStopResult {
                already_stopped: stopped_pid.is_none(),
                endpoint: endpoint.to_string(),
                running: false,
                status: "stopped".into(),
                stopped_pid,
            };
            success(request_id, &result)
        }
        Err(error) => Response::failure(request_id, error),
    }
}

/// `daemon restart` on the default endpoint of `paths`: stop, start with `launcher`, and
/// return the new daemon's doctor envelope.
pub fn restart(paths: &Paths, endpoint: &Endpoint, launcher: &Launcher) -> Response {
    let request_id = RequestId::generate();
    if let Err(error) = require_default(paths, endpoint, "restart") {
        return Response::failure(request_id, error);
    }
    let client = SocketClient::new(endpoint.clone());
    if let Err(error) = stop_daemon(&client, &request_id) {
        return Response::failure(request_id, error);
    }
    let pid = match launcher.spawn() {
        Ok(pid) => pid,
        Err(error) => return Response::failure(request_id, ErrorBody::new(error.code(), error.to_string())),
    };
    // Waits as a client that started it would: longer while it is still opening its store.
    let answered = retry_started(pid, || match probe(&client, &request_id) {
        Ok(probe) if probe.reported_pid().is_some() => Ok(probe.response),
        _ => Err(ClientError::Transport("no answer yet".to_owned())),
    });
    answered.unwrap_or_else(|_| {
        Response::failure(
            request_id,
            transport("the restarted daemon did not answer (its log in the data directory says why)".to_owned()),
        )
    })
}

fn require_default(paths: &Paths, endpoint: &Endpoint, verb: &str) -> Result<(), ErrorBody> {
    let default = paths.default_endpoint();
    if *endpoint == default {
        return Ok(());
    }
    Err(ErrorBody::prefixed(
        ErrorCode::InvalidRequest,
        format_args!("daemon {verb} manages only the default endpoint {default}, not {endpoint}"),
    ))
}

fn transport(message: String) -> ErrorBody {
    ErrorBody::prefixed(ErrorCode::TransportError, message)
}

/// Stops the daemon answering on `client`'s endpoint. `Ok(None)` when nothing answered.
fn stop_daemon(client: &SocketClient, request_id: &RequestId) -> Result<Option<u32>, ErrorBody> {
    let first = match probe(client, request_id) {
        Ok(probe) => probe,
        Err(_) => return Ok(None),
    };
    let pid = owned_pid(&first)?;
    signal_terminate(pid)?;
    for _ in 0..POLLS {
        std::thread::sleep(POLL_DELAY);
        match probe(client, request_id) {
            Ok(probe) => {
                if let Some(other) = probe.reported_pid().filter(|p| *p != u64::from(pid)) {
                    return Err(transport(format!(
                        "daemon process {pid} was signalled but process {other} now answers"
                    )));
                }
            }
            Err(_) if process_gone(pid) => return Ok(Some(pid)),
            Err(_) => {}
        }
    }
    Err(transport(format!("daemon process {pid} did not stop within 5 seconds")))
}

/// The pid to signal, after every ownership check has passed.
fn owned_pid(probe: &Probe) -> Result<u32, ErrorBody> {
    let unsafe_pid = |why: String| transport(format!("refusing to signal the daemon: unsafe process id ({why})"));
    let reported = probe
        .reported_pid()
        .ok_or_else(|| unsafe_pid("the doctor reply does not report a running daemon with a pid".to_owned()))?;
    let pid = u32::try_from(reported)
        .ok()
        .filter(|pid| *pid > 1 && i32::try_from(*pid).is_ok())
        .ok_or_else(|| unsafe_pid(format!("reported pid {reported}")))?;
    let peer = probe
        .peer
        .ok_or_else(|| unsafe_pid("the endpoint is not a Unix socket".to_owned()))?;
    let me = net::effective_uid();
    if peer.uid != me {
        return Err(unsafe_pid(format!(
            "the socket's peer runs as uid {}, not as this user ({me})",
            peer.uid
        )));
    }
    if let Some(peer_pid) = peer.pid
        && peer_pid != pid
    {
        return Err(unsafe_pid(format!(
            "the daemon reports pid {pid} but the socket's peer is process {peer_pid}"
        )));
    }
    Ok(pid)
}

/// The pid as a process id (never 0, never a process group: `owned_pid` checked it is a
/// positive `pid_t` above 1).
fn process(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

fn signal_terminate(pid: u32) -> Result<(), ErrorBody> {
    let Some(process) = process(pid) else {
        return Err(transport(format!(
            "refusing to signal the daemon: unsafe process id ({pid})"
        )));
    };
    match rustix::process::kill_process(process, Signal::TERM) {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(error) => Err(transport(format!(
            "cannot signal daemon process {pid}: {}",
            std::io::Error::from(error)
        ))),
    }
}

/// Whether `pid` no longer runs: it does not exist, or it is a zombie waiting to be reaped.
fn process_gone(pid: u32) -> bool {
    let Some(process) = process(pid) else { return true };
    match rustix::process::test_kill_process(process) {
        Err(Errno::SRCH) => true,
        Err(_) => false,
        Ok(()) => is_zombie(pid),
    }
}

fn is_zombie(pid: u32) -> bool {
    let stat = match std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")) {
        Ok(stat) => stat,
        Err(_) => return false,
    };
    // The state follows the parenthesised command name, which may itself contain ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn probe_with(result: Value, peer: Option<PeerCredentials>) -> Probe {
        Probe {
            response: Response::success("req_t", result),
            peer,
        }
    }

    fn me() -> u32 {
        net::effective_uid()
    }

    #[test]
    fn a_pid_confirmed_by_the_peer_credentials_is_accepted() {
        let peer = PeerCredentials {
            uid: me(),
            pid: Some(4242),
        };
        let probe = probe_with(json!({"running": true, "daemon_pid": 4242}), Some(peer));
        assert_eq!(owned_pid(&probe).unwrap(), 4242);
    }

    #[test]
    fn a_pid_the_socket_peer_does_not_confirm_is_refused() {
        let peer = PeerCredentials {
            uid: me(),
            pid: Some(999),
        };
        let probe = probe_with(json!({"running": true, "daemon_pid": 4242}), Some(peer));
        let error = owned_pid(&probe).unwrap_err();
        assert_eq!(error.code, ErrorCode::TransportError);
        assert!(error.message.contains("unsafe process id"), "{}", error.message);
    }

    #[test]
    fn pids_zero_and_one_and_absurd_pids_are_refused() {
        let peer = PeerCredentials { uid: me(), pid: None };
        for pid in [json!(0), json!(1), json!(u64::MAX), json!(-5), json!("12")] {
            let probe = probe_with(json!({"running": true, "daemon_pid": pid}), Some(peer));
            assert!(owned_pid(&probe).is_err(), "{pid}");
        }
    }

    #[test]
    fn a_daemon_that_is_not_running_or_not_ours_is_refused() {
        let mine = PeerCredentials {
            uid: me(),
            pid: Some(4242),
        };
        let not_running = probe_with(json!({"running": false, "daemon_pid": 4242}), Some(mine));
        assert!(owned_pid(&not_running).is_err());
        let foreign = PeerCredentials {
            uid: me().wrapping_add(1),
            pid: Some(4242),
        };
        let probe = probe_with(json!({"running": true, "daemon_pid": 4242}), Some(foreign));
        assert!(owned_pid(&probe).is_err());
        let tcp = probe_with(json!({"running": true, "daemon_pid": 4242}), None);
        assert!(owned_pid(&tcp).is_err());
    }

    #[test]
    fn this_process_is_neither_gone_nor_a_zombie() {
        assert!(!process_gone(std::process::id()));
    }
}
