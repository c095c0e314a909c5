//! `memoree call`: one JSON request on stdin, one envelope on stdout. Never invents an
//! idempotency key; never prompts.

use std::io::Read;

use serde_json::Value;

use super::{GlobalArgs, cli_failure};
use crate::protocol::document::{self, Document};
use crate::protocol::{CLI_REQUEST_ID, ErrorBody, ErrorCode, Response, TRANSPORT_REQUEST_ID, limits};

/// Reads stdin (bounded by the frame limit) and parses it as one JSON document.
pub(crate) fn read_request() -> Result<Value, Response> {
    let mut bytes = Vec::new();
    let limit = limits::MAX_FRAME_BYTES as u64 + 1;
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut bytes) {
        return Err(cli_failure(
            ErrorCode::InvalidRequest,
            format!("invalid request: could not read stdin: {e}"),
        ));
    }
    if bytes.len() > limits::MAX_FRAME_BYTES {
        return Err(cli_failure(
            ErrorCode::ContentTooLarge,
            format!(
                "content exceeds the configured size limit: the request exceeds {} bytes",
                limits::MAX_FRAME_BYTES
            ),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(cli_failure(
            ErrorCode::InvalidRequest,
            "invalid request: stdin is empty; send exactly one JSON request object",
        ));
    }
    let invalid = |request_id: &str, problem: String| {
        Response::failure(
            request_id,
            ErrorBody::new(
                ErrorCode::InvalidRequest,
                format!("invalid request: stdin is not a valid request: {problem}"),
            ),
        )
    };
    match document::parse(&bytes) {
        Ok(Document { value, duplicate: None }) => Ok(value),
        Ok(Document {
            value,
            duplicate: Some(duplicate),
        }) => {
            let request_id = if duplicate.is_request_id() {
                CLI_REQUEST_ID
            } else {
                crate::service::request_id_of(&value, CLI_REQUEST_ID)
            };
            Err(invalid(request_id, duplicate.to_string()))
        }
        Err(e) => Err(invalid(CLI_REQUEST_ID, e.to_string())),
    }
}

pub(crate) fn run(global: &GlobalArgs) -> Response {
    let mut request = match read_request() {
        Ok(request) => request,
        Err(response) => return response,
    };
    let own_id = request
        .get("request_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && id.len() <= crate::protocol::limits::MAX_REQUEST_ID_BYTES);
    let request_id = own_id.unwrap_or(CLI_REQUEST_ID).to_owned();
    let has_own_id = own_id.is_some();
    if let Err(response) = super::transport::attach_context(&mut request, &request_id) {
        return response;
    }
    let transport = match super::transport::select(global) {
        Ok(transport) => transport,
        Err(error) => return error.to_response(&request_id),
    };
    match transport.exchange(&request) {
        // The CLI is the party that received a request without a usable id, so the
        // fallback it reports is its own, whichever transport served it.
        Ok(mut response) if !has_own_id && response.request_id == TRANSPORT_REQUEST_ID => {
            response.request_id = CLI_REQUEST_ID.to_owned();
            response
        }
        Ok(response) => response,
        Err(error) => error.to_response(&request_id),
    }
}
