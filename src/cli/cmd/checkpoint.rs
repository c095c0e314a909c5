//! `memoree checkpoint` and `memoree pending list|show|preview|apply|drop`.
//!
//! Checkpoints are private local notes, one per session, that nothing retrieves. They
//! become memory only through `pending preview`/`apply`, which run the remember flow on the
//! stored text. The local envelopes carry a fresh request id and no context.

use chrono::Utc;
use clap::{Args, Subcommand};

use super::context::require_context;
use super::remember::{self, Mode};
use crate::caller::CallerError;
use crate::caller::checkpoint::{self, CheckpointStore};
use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::paths::Paths;
use crate::protocol::{RequestId, Response};

/// Save a private, unsearchable note for a session (last write wins).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree checkpoint --session s-42 --task fix-auth Tests pass; next: token refresh\n  \
                        printf 'handoff notes' | memoree checkpoint --session s-42 -"
)]
pub struct CheckpointArgs {
    /// The session id (one checkpoint slot per session).
    #[arg(long)]
    session: String,
    /// The task the session works on.
    #[arg(long)]
    task: Option<String>,
    /// The note (words joined with spaces), or `-` to read stdin.
    text: Vec<String>,
}

/// Review pending checkpoints and promote or drop them.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree pending list\n  memoree pending apply s-42")]
pub struct PendingArgs {
    #[command(subcommand)]
    command: PendingCommand,
}

#[derive(Debug, Subcommand)]
enum PendingCommand {
    /// List pending checkpoints, newest first (without their text).
    #[command(after_help = "Example:\n  memoree pending list --all")]
    List {
        /// Include checkpoints past the 14-day review window.
        #[arg(long)]
        all: bool,
    },
    /// Show one checkpoint with its text.
    #[command(after_help = "Example:\n  memoree pending show s-42")]
    Show {
        /// A `cp_…` id or a session id.
        id: String,
    },
    /// Preview remembering a checkpoint (writes nothing).
    #[command(after_help = "Example:\n  memoree pending preview cp_0123456789abcdef0123456789")]
    Preview(PromoteArgs),
    /// Remember a checkpoint: store it as an artifact plus compiled claims.
    #[command(after_help = "Example:\n  memoree pending apply s-42 --idempotency-key handoff-s-42")]
    Apply(PromoteArgs),
    /// Delete a checkpoint for good.
    #[command(after_help = "Example:\n  memoree pending drop s-42")]
    Drop {
        /// A `cp_…` id or a session id.
        id: String,
    },
}

#[derive(Debug, Args)]
struct PromoteArgs {
    /// A `cp_…` id or a session id.
    id: String,
    /// Proceed although the text matches credential patterns.
    #[arg(long)]
    allow_flagged: bool,
    /// Let Codex fall back to an API key for this one invocation (ask the human first).
    #[arg(long)]
    allow_api_key: bool,
    /// Logical idempotency key (default: derived from the checkpoint text).
    #[arg(long)]
    idempotency_key: Option<String>,
}

pub(crate) fn checkpoint(args: CheckpointArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let record = checkpoint::read_checkpoint_text(&args.text, std::io::stdin().lock())
        .and_then(|text| open_store()?.write(&args.session, args.task.as_deref(), &text))
        .map_err(|e| CliError::from(e).at(request_id.clone()))?;
    let mut response = success(request_id, &checkpoint::write_result(&record, Utc::now()))?;
    response.warnings.extend(record.sensitive_warning());
    Ok(response)
}

pub(crate) fn pending(args: PendingArgs, global: &GlobalArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let failed = |e: CallerError| CliError::from(e).at(request_id.clone());
    match args.command {
        PendingCommand::List { all } => {
            let store = open_store().map_err(failed)?;
            let records = store.list(all).map_err(failed)?;
            success(request_id.clone(), &checkpoint::list_result(&records, all, Utc::now()))
        }
        PendingCommand::Show { id } => {
            let record = open_store().and_then(|store| store.show(&id)).map_err(failed)?;
            success(request_id.clone(), &checkpoint::show_result(&record))
        }
        PendingCommand::Drop { id } => {
            let dropped = open_store().and_then(|store| store.drop(&id)).map_err(failed)?;
            success(request_id.clone(), &dropped.result())
        }
        PendingCommand::Preview(args) => promote(&request_id, args, false, global),
        PendingCommand::Apply(args) => promote(&request_id, args, true, global),
    }
}

/// A success envelope for a local result.
fn success(request_id: RequestId, result: &impl serde::Serialize) -> CliResult<Response> {
    match serde_json::to_value(result) {
        Ok(result) => Ok(Response::success(request_id, result)),
        Err(e) => Err(CliError::Internal(e.to_string()).at(request_id)),
    }
}

/// Runs the remember flow on a stored checkpoint (preview, or apply with `apply`).
fn promote(request_id: &RequestId, args: PromoteArgs, apply: bool, global: &GlobalArgs) -> CliResult<Response> {
    let failed = |error: CliError| error.at(request_id.clone());
    let (note, options) = open_store()
        .and_then(|store| store.show(&args.id))
        .and_then(|record| record.remember_input(args.allow_flagged, args.idempotency_key))
        .map_err(|e| failed(e.into()))?;
    let (context, source) = require_context("pending").map_err(failed)?;
    let mode = Mode {
        raw: false,
        allow_api_key: args.allow_api_key,
        apply,
    };
    remember::execute(request_id, (&context, source), note, &options, mode, global)
}

fn open_store() -> Result<CheckpointStore, CallerError> {
    let paths = Paths::from_env().map_err(|e| CallerError::Config(e.to_string()))?;
    CheckpointStore::open(&paths.data_dir)
}
