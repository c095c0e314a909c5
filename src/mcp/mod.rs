//! `memoree mcp`: a Model Context Protocol server on stdio, built on the official Rust SDK
//! (`rmcp`), that forwards every tool call to the daemon.
//!
//! The server holds no store: like the CLI it is a client of the one daemon (started on
//! demand), so any number of MCP sessions share a single writer. Stdout carries only
//! JSON-RPC messages (`transport.rs` is its only writer); logs go to stderr.
//!
//! - `tools.rs` — the twenty-one tools, schemas derived from `spec/v1/schema/`, annotations.
//! - `server.rs` — the rmcp `ServerHandler`: tools, resources, roots, cancellation.
//! - `daemon.rs` — the one seam to the daemon client (pooled sessions, autostart).
//! - `context.rs` — ambient context: `MEMOREE_CONTEXT`, host roots, working directory.
//! - `idempotency.rs` — automatic keys that make host retries replay.
//! - `result.rs` — envelopes as tool results; `resources.rs` — citations as resources.
//! - `instructions.rs` — the agent instructions trimmed for MCP.
//! - `transport.rs` — newline-delimited JSON-RPC with parse and invalid-request errors.

mod context;
mod daemon;
pub mod idempotency;
pub mod instructions;
mod resources;
mod result;
mod server;
pub mod tools;
mod transport;

use std::process::ExitCode;
use std::time::Duration;

use rmcp::ServiceExt;

pub use idempotency::DEFAULT_WINDOW;

/// How `memoree mcp` reaches the daemon and keys retries.
#[derive(Clone, Debug)]
pub struct Options {
    /// An explicit daemon endpoint (never autostarted).
    pub endpoint: Option<String>,
    /// Never start the default daemon.
    pub no_autostart: bool,
    /// How long an identical key-less write of this session replays the first.
    pub retry_window: Duration,
}

/// Blocking threads for daemon exchanges (concurrent tool calls of one session).
const MAX_BLOCKING_THREADS: usize = 8;

/// Serves MCP on stdin/stdout until the host closes stdin. Exit status 0 on a clean end,
/// 1 when the runtime or the transport fails.
pub fn run(options: Options) -> ExitCode {
    crate::sys::tune_allocator();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_name("memoree-mcp")
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the MCP server runtime");
            return ExitCode::FAILURE;
        }
    };
    let status = runtime.block_on(serve(options));
    // A call still blocked on a hung daemon must not keep the process alive once the host
    // has gone; what it sent carries an idempotency key, so a retry is safe.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    status
}

/// How long blocking calls may finish after the session ends.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

async fn serve(options: Options) -> ExitCode {
    let daemon = daemon::Daemon::select(options.endpoint.as_deref(), options.no_autostart);
    let handler = server::Server::new(daemon, options.retry_window);
    // What parsing the command line left on the heap goes back to the system.
    crate::sys::release_free_memory();
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let transport = transport::LineTransport::new(stdin, stdout);
    match handler.serve(transport).await {
        Ok(running) => match running.waiting().await {
            Ok(reason) => {
                tracing::debug!(?reason, "the MCP session ended");
                ExitCode::SUCCESS
            }
            Err(error) => {
                tracing::error!(%error, "the MCP session failed");
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            tracing::warn!(%error, "the MCP session did not start");
            ExitCode::FAILURE
        }
    }
}
