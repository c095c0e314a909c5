//! The in-tree-only transport: `memoree::service::Service` opened on a temporary directory,
//! called directly (`handle_value`, or `handle_json` for `$raw` steps). The kit never uses it:
//! it would test this crate rather than the implementation named on the command line.

use serde_json::Value;

use memoree::service::Service;

use crate::engine::transport::{NO_FRAMES, Outgoing, Session, TRANSPORT_REQUEST_ID, Transport, temp_dir};

/// The service, called directly in this process.
#[derive(Debug, Default)]
pub struct InProcess;

struct InProcessSession {
    // Declared first so the store closes before its directory is removed.
    service: Service,
    _dir: tempfile::TempDir,
}

impl Transport for InProcess {
    fn name(&self) -> &'static str {
        "inprocess"
    }

    fn fallback_request_id(&self) -> &'static str {
        TRANSPORT_REQUEST_ID
    }

    fn start(&self) -> Result<Box<dyn Session>, String> {
        let dir = temp_dir()?;
        let service = Service::open(&dir.path().join("data")).map_err(|e| format!("cannot open the store: {e}"))?;
        Ok(Box::new(InProcessSession { service, _dir: dir }))
    }
}

impl Session for InProcessSession {
    fn exchange(&mut self, request: &Outgoing) -> Result<Value, String> {
        let response = match request {
            Outgoing::Json(value) => self.service.handle_value(value.clone(), TRANSPORT_REQUEST_ID),
            Outgoing::Raw(text) => self.service.handle_json(text.as_bytes(), TRANSPORT_REQUEST_ID),
            Outgoing::FrameHeader(_) => return Err(NO_FRAMES.to_owned()),
        };
        serde_json::to_value(&response).map_err(|e| format!("cannot encode the response: {e}"))
    }
}
