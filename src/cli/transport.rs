//! Picks the transport for daemon-backed commands and attaches the ambient context.
//!
//! An explicit endpoint (`--endpoint` / `MEMOREE_ENDPOINT`) is used as is, never
//! autostarted. Otherwise the default private Unix endpoint is used, and its daemon is
//! started on demand unless `--no-autostart` / `MEMOREE_NO_AUTOSTART=true`.
//!
//! The context rule is the same for a typed request ([`attach_context`]) and a raw
//! document from `memoree call` ([`attach_context_to_document`]): a request that carries a
//! context is marked `explicit` unless it names its source; one that needs a context and
//! carries none gets the resolved ambient context; anything else is left alone.

use std::ffi::OsString;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::GlobalArgs;
use super::error::CliError;
use crate::ambient;
use crate::client::autostart::{Autostart, Launcher};
use crate::client::socket::{ClientTimeouts, SocketClient};
use crate::client::{ClientError, Transport};
use crate::paths::{Endpoint, Paths};
use crate::protocol::{AmbientContext, ContextSource, Operation, Request};
use crate::service::ServiceError;

fn env_lookup(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The transport for this invocation.
pub(crate) fn select(global: &GlobalArgs) -> Result<Box<dyn Transport>, ClientError> {
    select_with(global, ClientTimeouts::default())
}

/// [`select`] with other client timeouts (operations whose work grows with the store).
pub(crate) fn select_with(global: &GlobalArgs, timeouts: ClientTimeouts) -> Result<Box<dyn Transport>, ClientError> {
    build(global, timeouts, false)
}

/// [`select`] over one connection kept open for every exchange, for bulk work that runs
/// several of these at once (`import --from`): the replies are awaited without polling
/// ([`SocketClient::without_reply_spin`]).
pub(crate) fn select_persistent(global: &GlobalArgs) -> Result<Box<dyn Transport>, ClientError> {
    build(global, ClientTimeouts::default(), true)
}

/// The explicit `--endpoint`, else the default endpoint without autostart, else the
/// autostarting default; `persistent` keeps a connection open and waits without polling.
fn build(global: &GlobalArgs, timeouts: ClientTimeouts, persistent: bool) -> Result<Box<dyn Transport>, ClientError> {
    let client = |endpoint: Endpoint| {
        let client = SocketClient::new(endpoint).with_timeouts(timeouts);
        if persistent {
            client.without_reply_spin()
        } else {
            client
        }
    };
    let kept = |client: SocketClient| if persistent { client.keep_alive() } else { client };
    if let Some(text) = &global.endpoint {
        let endpoint = Endpoint::parse(text).map_err(|e| ClientError::Config(e.to_string()))?;
        return Ok(Box::new(kept(client(endpoint))));
    }
    let paths = Paths::from_env().map_err(|e| ClientError::Config(e.to_string()))?;
    if global.no_autostart {
        return Ok(Box::new(kept(client(paths.default_endpoint()))));
    }
    let launcher = Launcher::for_paths(&paths)?;
    let autostart = Autostart::new(client(launcher.endpoint.clone()), launcher);
    Ok(Box::new(if persistent { autostart.keep_alive() } else { autostart }))
}

/// The ambient context resolved on this machine for an operation that needs one.
pub(crate) fn resolve(op: Operation) -> Result<(AmbientContext, ContextSource), CliError> {
    ambient()?.ok_or_else(|| ServiceError::NoAmbientContext(op.wire_name()).into())
}

/// The ambient context resolved on this machine, if there is one.
fn ambient() -> Result<Option<(AmbientContext, ContextSource)>, CliError> {
    let paths = Paths::from_env()?;
    let cwd = std::env::current_dir().map_err(|e| CliError::io("cannot read the working directory", e))?;
    let resolution = ambient::resolve(None, &env_lookup, &cwd, &paths.config_file)?;
    Ok(resolution.context.map(|context| (context, resolution.source)))
}

/// Attaches the resolved ambient context to a typed request whose operation needs one and
/// that carries none; marks an explicit context as such.
pub(crate) fn attach_context<I>(request: &mut Request<I>) -> Result<(), CliError> {
    if request.context.is_some() {
        if request.context_source.is_none() {
            request.context_source = ContextSource::Explicit;
        }
    } else if request.op.needs_context() {
        let (context, source) = resolve(request.op)?;
        request.context = Some(context);
        request.context_source = source;
    }
    Ok(())
}

/// What [`attach_context_to_document`] reads of a raw request; everything else is
/// passed through untouched, and a field of the wrong type is left for the service to
/// report.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Envelope {
    op: Option<Value>,
    context: Option<IgnoredAny>,
    context_source: Option<Value>,
}

/// [`attach_context`] for a raw request document (`memoree call`). A document that is not
/// an object, or has no operation name, is sent as it is. An operation this binary does not
/// know (a newer daemon's, such as `memory.retrieve` of reference v0.7.1) gets the ambient
/// context when one resolves and goes without it otherwise: the daemon knows whether it
/// needs one.
pub(crate) fn attach_context_to_document(document: &mut Value) -> Result<(), CliError> {
    let Ok(envelope) = Envelope::deserialize(&*document) else {
        return Ok(());
    };
    let Some(name) = envelope.op.as_ref().and_then(Value::as_str) else {
        return Ok(());
    };
    let op = Operation::parse(name);
    let Some(object) = document.as_object_mut() else {
        return Ok(());
    };
    if envelope.context.is_some() {
        let source_missing = envelope
            .context_source
            .as_ref()
            .is_none_or(|source| source.is_null() || source == ContextSource::None.as_str());
        if source_missing {
            object.insert(
                "context_source".to_owned(),
                Value::from(ContextSource::Explicit.as_str()),
            );
        }
        return Ok(());
    }
    let (context, source) = match op {
        Some(op) if !op.needs_context() => return Ok(()),
        Some(op) => resolve(op)?,
        None => match ambient()? {
            Some(resolved) => resolved,
            None => return Ok(()),
        },
    };
    let context = serde_json::to_value(&context).map_err(|e| CliError::Internal(e.to_string()))?;
    object.insert("context".to_owned(), context);
    object.insert("context_source".to_owned(), Value::from(source.as_str()));
    Ok(())
}
