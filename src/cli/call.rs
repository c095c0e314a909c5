//! `memoree call`: one JSON request on stdin, one envelope on stdout. Never invents an
//! idempotency key; never prompts. The document is passed on as the caller wrote it, with
//! only the ambient context attached (see `transport::attach_context_to_document`).

use std::io::Read;

use serde_json::Value;

use super::GlobalArgs;
use super::error::{CliError, CliResult};
use crate::protocol::document::{self, Document};
use crate::protocol::{CLI_REQUEST_ID, RequestId, Response, TRANSPORT_REQUEST_ID, limits};
use crate::service::request_id_of;
use crate::transport::Exchange;

/// Reads stdin (bounded by the frame limit) and parses it as one JSON document; a document
/// that repeats a key is refused like the service refuses it.
pub(crate) fn read_request() -> CliResult<Value> {
    let mut bytes = Vec::new();
    let limit = limits::MAX_FRAME_BYTES as u64 + 1;
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut bytes) {
        return Err(CliError::Invalid(format!("could not read stdin: {e}")).into());
    }
    if bytes.len() > limits::MAX_FRAME_BYTES {
        return Err(CliError::TooLarge(format!("the request exceeds {} bytes", limits::MAX_FRAME_BYTES)).into());
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::Invalid("stdin is empty; send exactly one JSON request object".to_owned()).into());
    }
    let invalid = |problem: String| CliError::Invalid(format!("stdin is not a valid request: {problem}"));
    match document::parse(&bytes) {
        Ok(Document { value, duplicate: None }) => Ok(value),
        Ok(Document {
            value,
            duplicate: Some(duplicate),
        }) => {
            let request_id = if duplicate.is_request_id() {
                CLI_REQUEST_ID
            } else {
                request_id_of(&value, CLI_REQUEST_ID)
            };
            Err(invalid(duplicate.to_string()).at(request_id))
        }
        Err(e) => Err(invalid(e.to_string()).into()),
    }
}

pub(crate) fn run(global: &GlobalArgs) -> CliResult<Response> {
    let mut request = read_request()?;
    let has_own_id = !request_id_of(&request, "").is_empty();
    let request_id = RequestId::from(request_id_of(&request, CLI_REQUEST_ID));
    super::transport::attach_context_to_document(&mut request).map_err(|e| e.at(request_id.clone()))?;
    let transport = super::transport::select(global).map_err(|e| CliError::from(e).at(request_id.clone()))?;
    match transport.send_value(&request) {
        // The CLI is the party that received a request without a usable id, so the
        // fallback it reports is its own, whichever transport served it.
        Ok(mut response) if !has_own_id && response.request_id == TRANSPORT_REQUEST_ID => {
            response.request_id = CLI_REQUEST_ID.into();
            Ok(response)
        }
        Ok(response) => Ok(response),
        Err(error) => Err(CliError::from(error).at(request_id)),
    }
}
