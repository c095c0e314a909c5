//! A retrieval-quality corpus (`golden/<version>/retrieval/`) as a conformance trial: seeds the
//! corpus through the transport's fresh store, runs every judged case through
//! `memory.recall`, `search` and `context.build` (`memoree::eval`), and fails on any
//! hard-gated case failure, invariant violation or metric regression against the checked-in
//! baseline. The corpus files come from the catalog (embedded in the kit), so they are written
//! to a temporary directory for the evaluator first.

use std::sync::Mutex;

use memoree::client::{ClientError, Transport as ClientTransport};
use memoree::protocol::Response;
use serde_json::Value;

use super::catalog::Catalog;
use super::transport::{Outgoing, Session, Transport, temp_dir};

/// Adapts one conformance session to the library's client transport.
struct SessionTransport(Mutex<Box<dyn Session>>);

impl ClientTransport for SessionTransport {
    fn exchange_raw(&self, body: &[u8]) -> Result<Response, ClientError> {
        let request: Value =
            serde_json::from_slice(body).map_err(|e| ClientError::Transport(format!("unparseable request: {e}")))?;
        let mut session = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let envelope = session
            .exchange(&Outgoing::Json(request))
            .map_err(ClientError::Transport)?;
        serde_json::from_value(envelope).map_err(|e| ClientError::Transport(format!("undecodable envelope: {e}")))
    }
}

/// Runs the corpus in the catalog directory `dir` over `transport`.
pub fn run(catalog: &Catalog, dir: &str, transport: &dyn Transport) -> Result<(), String> {
    // The evaluator reads the corpus version from the parent directory's name, so the files
    // keep their relative path (`golden/v1/retrieval/…`) below the staging directory.
    let staging = temp_dir()?;
    let corpus = staging.path().join(dir);
    std::fs::create_dir_all(&corpus).map_err(|e| format!("cannot stage {dir}: {e}"))?;
    for (name, bytes) in catalog.files_in(dir) {
        std::fs::write(corpus.join(name), bytes).map_err(|e| format!("cannot stage {dir}/{name}: {e}"))?;
    }
    let session = transport.start()?;
    let adapter = SessionTransport(Mutex::new(session));
    let report = memoree::eval::run(&corpus, &adapter).map_err(|e| format!("retrieval evaluation failed: {e}"))?;
    if report.passed {
        return Ok(());
    }
    let json = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
    Err(format!(
        "retrieval evaluation did not pass: {} hard failure(s), regressions {:?}\n{json}",
        report.hard_failures, report.regressions
    ))
}
