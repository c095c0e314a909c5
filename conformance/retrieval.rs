//! The retrieval-quality corpora (`golden/v1/retrieval/`, `golden/v2/retrieval/`) as conformance trials: seeds the
//! corpus through the transport's fresh store, runs every judged case through
//! `memory.recall`, `search` and `context.build`, and fails on any hard-gated case failure,
//! invariant violation or metric regression against the checked-in baseline.

use std::path::Path;
use std::sync::Mutex;

use memoree::client::{ClientError, Transport as ClientTransport};
use memoree::protocol::Response;
use serde_json::Value;

use crate::transport::{Outgoing, Session, Transport};

/// Whether a `golden/<version>/<dir>` is an evaluation corpus rather than a transcript.
pub fn is_corpus(dir: &Path) -> bool {
    dir.join("cases.jsonl").is_file() && dir.join("seed.jsonl").is_file()
}

/// Adapts one conformance session to the library's client transport.
struct SessionTransport(Mutex<Box<dyn Session>>);

impl ClientTransport for SessionTransport {
    fn exchange(&self, request: &Value) -> Result<Response, ClientError> {
        let mut session = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let envelope = session
            .exchange(&Outgoing::Json(request.clone()))
            .map_err(ClientError::Transport)?;
        serde_json::from_value(envelope).map_err(|e| ClientError::Transport(format!("undecodable envelope: {e}")))
    }
}

/// Runs the corpus in `dir` over `transport`.
pub fn run(dir: &Path, transport: &dyn Transport) -> Result<(), String> {
    let session = transport.start()?;
    let adapter = SessionTransport(Mutex::new(session));
    let report = memoree::eval::run(dir, &adapter).map_err(|e| format!("retrieval evaluation failed: {e}"))?;
    if report.passed {
        return Ok(());
    }
    let json = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
    Err(format!(
        "retrieval evaluation did not pass: {} hard failure(s), regressions {:?}\n{json}",
        report.hard_failures, report.regressions
    ))
}
