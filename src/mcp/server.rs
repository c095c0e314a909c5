//! The MCP request handler: tools, citation resources and the session's roots.
//!
//! A tool call is decoded here (tool name, arguments, `idempotency_key`), then everything
//! that blocks — context resolution (file reads) and the daemon exchange — runs on a
//! blocking thread while the handler waits for it or for the host's cancellation.
//!
//! **Invariant:** a tool call always ends in a tool result: a failed operation, bad
//! arguments or an unreachable daemon is `isError` with a v1 failure envelope. Only an
//! unknown tool or cursor is a JSON-RPC error, as MCP specifies.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode as McpErrorCode, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use super::context::{self as ambient_context, root_path};
use super::daemon::{Daemon, LINGER};
use super::idempotency::AutoKeys;
use super::resources::Citation;
use super::result::{local_failure, tool_result};
use super::tools::{self, IDEMPOTENCY_KEY, ToolSpec};
use crate::protocol::{ErrorBody, ErrorCode, Request, RequestId, Response};

/// How long to wait for the host to list its roots.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// The state of one MCP session (one server process).
pub struct Server {
    daemon: Arc<Daemon>,
    keys: Arc<AutoKeys>,
    /// Counts finished requests, so a deferred trim runs only when nothing followed.
    activity: Arc<AtomicU64>,
    instructions: String,
    /// The host's roots as local directories, once asked for (`None` until then, and again
    /// after the host says they changed).
    roots: Mutex<Option<Arc<Vec<PathBuf>>>>,
}

impl Server {
    pub fn new(daemon: Daemon, retry_window: Duration) -> Server {
        Server {
            daemon: Arc::new(daemon),
            keys: Arc::new(AutoKeys::new(retry_window)),
            activity: Arc::new(AtomicU64::new(0)),
            instructions: super::instructions::text(retry_window),
            roots: Mutex::new(None),
        }
    }

    /// The host's roots, asked for once per change, and only when the host declared them
    /// on a session that allows server-to-client requests.
    #[allow(deprecated)]
    async fn roots(&self, request: &RequestContext<RoleServer>) -> Arc<Vec<PathBuf>> {
        let mut cached = self.roots.lock().await;
        if let Some(roots) = cached.as_ref() {
            return roots.clone();
        }
        // Roots exist only on sessions that began with `initialize` (SEP-2577 deprecates
        // them, and 2026-07-28 forbids server-to-client requests).
        let offered = request
            .protocol_version()
            .is_some_and(|version| version.has_initialize())
            && request.client_capabilities().is_some_and(|caps| caps.roots.is_some());
        let roots = if offered {
            let listed = tokio::time::timeout(ROOTS_TIMEOUT, request.peer.list_roots()).await;
            match listed {
                Ok(Ok(listed)) => listed.roots.iter().filter_map(|root| root_path(&root.uri)).collect(),
                Ok(Err(error)) => {
                    tracing::warn!(%error, "the MCP host did not list its roots");
                    Vec::new()
                }
                Err(_) => {
                    tracing::warn!("the MCP host did not list its roots in time");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let roots = Arc::new(roots);
        *cached = Some(roots.clone());
        roots
    }

    /// Runs `work` on a blocking thread unless the host cancels first; afterwards closes
    /// daemon sessions left idle for [`LINGER`].
    async fn blocking<T: Send + 'static>(
        &self,
        request: &RequestContext<RoleServer>,
        work: impl FnOnce(&Daemon) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let daemon = self.daemon.clone();
        let task = tokio::task::spawn_blocking(move || work(&daemon));
        let outcome = tokio::select! {
            joined = task => joined.map_err(|e| McpError::internal_error(format!("the call failed: {e}"), None)),
            () = request.ct.cancelled() => Err(McpError::new(McpErrorCode::INTERNAL_ERROR, "cancelled by the client", None)),
        };
        self.settle_later();
        outcome
    }

    /// Once nothing has happened for [`LINGER`]: closes idle daemon sessions and returns
    /// free heap to the system, so an idle server stays small.
    fn settle_later(&self) {
        let seen = self.activity.fetch_add(1, Ordering::Relaxed) + 1;
        let (daemon, activity) = (self.daemon.clone(), self.activity.clone());
        tokio::spawn(async move {
            tokio::time::sleep(LINGER).await;
            daemon.close_idle();
            if activity.load(Ordering::Relaxed) == seen {
                let _ = tokio::task::spawn_blocking(crate::sys::release_free_memory).await;
            }
        });
    }
}

/// Splits the tool arguments into the operation input and the idempotency key.
fn split_arguments(
    spec: &ToolSpec,
    arguments: Option<Map<String, Value>>,
) -> Result<(Value, Option<String>), ErrorBody> {
    let mut input = arguments.unwrap_or_default();
    let key = match input.remove(IDEMPOTENCY_KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) if spec.op.is_mutating() => Some(key),
        Some(Value::String(_)) => {
            return Err(ErrorBody::prefixed(
                ErrorCode::InvalidRequest,
                format_args!("{} is read-only and takes no idempotency_key", spec.name),
            ));
        }
        Some(other) => {
            return Err(ErrorBody::prefixed(
                ErrorCode::InvalidRequest,
                format_args!("idempotency_key: {other} is not of type \"string\""),
            ));
        }
    };
    Ok((Value::Object(input), key))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(
                Implementation::new("memoree", env!("CARGO_PKG_VERSION"))
                    .with_title("Memoree")
                    .with_description("Durable, cited, scoped local memory for agents"),
            )
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            return Err(McpError::invalid_params(
                format!("unknown cursor {cursor:?}: tools/list returns every tool on one page"),
                None,
            ));
        }
        let listed = ListToolsResult::with_all_items(tools::definitions(self.keys.window().as_secs()));
        self.settle_later();
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(spec) = tools::find(&request.name) else {
            return Err(McpError::invalid_params(
                format!("unknown tool {:?}", request.name),
                Some(json!({"tools": tools::TOOLS.iter().map(|t| t.name).collect::<Vec<_>>()})),
            ));
        };
        let request_id = RequestId::generate();
        let argument_bytes = request
            .arguments
            .as_ref()
            .and_then(|arguments| serde_json::to_vec(arguments).ok())
            .map_or(0, |bytes| bytes.len());
        let (input, explicit_key) = match split_arguments(spec, request.arguments) {
            Ok(split) => split,
            Err(error) => return Ok(local_failure(spec, &Response::failure(request_id, error)).into()),
        };
        let roots = if spec.op.needs_context() {
            self.roots(&context).await
        } else {
            Arc::new(Vec::new())
        };
        let keys = self.keys.clone();
        let spec_copy = *spec;
        let issued = Instant::now();
        let (response, key) = self
            .blocking(&context, move |daemon| {
                // The tool's arguments are forwarded as the request's input document: the
                // daemon validates them against the operation's schema, exactly as for any
                // other client, so its error names the offending argument.
                let mut request = Request::raw(request_id, spec_copy.op, input);
                if spec_copy.op.needs_context() {
                    match ambient_context::resolve(spec_copy.op, &roots) {
                        Ok((found, source)) => request = request.with_context(found, source),
                        Err(error) => return (Response::failure(request.request_id, error), None),
                    }
                }
                if spec_copy.op.is_mutating() {
                    let key = explicit_key.unwrap_or_else(|| {
                        keys.key_for(spec_copy.name, &request.input, request.context.as_ref(), issued)
                    });
                    request.idempotency_key = Some(key);
                }
                (daemon.send(&request), request.idempotency_key)
            })
            .await?;
        let result = tool_result(spec, &response, key.as_deref());
        // Names, ids and sizes only: arguments and results are memory content.
        tracing::debug!(
            tool = spec.name,
            request_id = %response.request_id,
            ok = response.ok,
            error_code = response.error.as_ref().map(|e| e.code.as_str()),
            argument_bytes,
            result_bytes = serde_json::to_vec(&result).map_or(0, |bytes| bytes.len()),
            elapsed_ms = issued.elapsed().as_millis() as u64,
            "tool call"
        );
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Citations are not enumerable; they come from tool results (see the templates).
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            super::resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let citation = Citation::parse(&uri).map_err(|bad| McpError::invalid_params(bad.0, None))?;
        let read = citation.clone();
        let response = self.blocking(&context, move |daemon| read.read(daemon)).await?;
        let outcome = match (&response.error, &response.result) {
            (None, Some(result)) => citation.contents(&uri, result),
            (Some(error), _) => Err(error.clone()),
            (None, None) => Err(ErrorBody::prefixed(ErrorCode::InternalError, "no result")),
        };
        match outcome {
            Ok(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Err(error) => {
                let data = serde_json::to_value(Response::failure(response.request_id.clone(), error.clone())).ok();
                let code = match error.code {
                    ErrorCode::NotFound => McpErrorCode::RESOURCE_NOT_FOUND,
                    ErrorCode::InvalidRequest => McpErrorCode::INVALID_PARAMS,
                    _ => McpErrorCode::INTERNAL_ERROR,
                };
                Err(McpError::new(
                    code,
                    format!("{uri}: {}: {}", error.code.as_str(), error.message),
                    data,
                ))
            }
        }
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        *self.roots.lock().await = None;
    }
}
