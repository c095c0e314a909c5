//! Picks the transport for daemon-backed commands and attaches the ambient context.
//!
//! An explicit endpoint (`--endpoint` / `MEMOREE_ENDPOINT`) is used as is, never
//! autostarted. Otherwise the default private Unix endpoint is used, and its daemon is
//! started on demand unless `--no-autostart` / `MEMOREE_NO_AUTOSTART=true`.

use std::ffi::OsString;

use serde_json::Value;

use super::GlobalArgs;
use crate::ambient;
use crate::client::autostart::Autostart;
use crate::client::socket::SocketClient;
use crate::client::{ClientError, Transport};
use crate::paths::{Endpoint, Paths};
use crate::protocol::{ErrorBody, ErrorCode, Operation, Response};

fn env_lookup(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The transport for this invocation.
pub(crate) fn select(global: &GlobalArgs) -> Result<Box<dyn Transport>, ClientError> {
    if let Some(text) = &global.endpoint {
        let endpoint = Endpoint::parse(text).map_err(|e| ClientError::Config(e.to_string()))?;
        return Ok(Box::new(SocketClient::new(endpoint)));
    }
    let paths = Paths::from_env().map_err(|e| ClientError::Config(e.to_string()))?;
    if global.no_autostart {
        return Ok(Box::new(SocketClient::new(paths.default_endpoint())));
    }
    Ok(Box::new(Autostart::for_paths(&paths)?))
}

/// Attaches the resolved ambient context to a request whose operation needs one and that
/// carries none; marks an explicit context as such. Failures are envelopes for the
/// request's own `request_id`.
pub(crate) fn attach_context(request: &mut Value, request_id: &str) -> Result<(), Response> {
    let Some(op) = request
        .get("op")
        .and_then(Value::as_str)
        .and_then(Operation::from_wire_name)
    else {
        return Ok(());
    };
    let Some(object) = request.as_object_mut() else {
        return Ok(());
    };
    let has_context = object.get("context").is_some_and(|c| !c.is_null());
    if has_context {
        let source_missing = object.get("context_source").is_none_or(|s| s.is_null() || s == "none");
        if source_missing {
            object.insert("context_source".to_owned(), Value::from("explicit"));
        }
        return Ok(());
    }
    if !op.needs_context() {
        return Ok(());
    }
    let failure = |code: ErrorCode, message: String| Response::failure(request_id, ErrorBody::new(code, message));
    let paths = Paths::from_env().map_err(|e| failure(e.code(), e.to_string()))?;
    let cwd = std::env::current_dir().map_err(|e| {
        failure(
            ErrorCode::InternalError,
            format!("I/O error: cannot read the working directory: {e}"),
        )
    })?;
    let resolution =
        ambient::resolve(None, &env_lookup, &cwd, &paths.config_file).map_err(|e| failure(e.code(), e.to_string()))?;
    let Some(context) = resolution.context else {
        let error = crate::service::error_body(&crate::service::ServiceError::NoAmbientContext(op.wire_name()));
        return Err(Response::failure(request_id, error));
    };
    let context = serde_json::to_value(&context).unwrap_or(Value::Null);
    object.insert("context".to_owned(), context);
    object.insert("context_source".to_owned(), Value::from(resolution.source.as_str()));
    Ok(())
}
