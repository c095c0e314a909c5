//! `memoree remember`: compile a note into quoted claims, preview the plan, and with
//! `--apply` store it as ordinary `artifact.put` and `claim.assert` mutations.
//!
//! The ambient context is resolved before anything else, even for a preview. A preview
//! writes nothing. An apply submits the plan in order over one transport and stops at the
//! first failed envelope, which is printed as it came back (the artifact may already be
//! stored then; re-running the same command replays it, because every key is derived from
//! the exact note).

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::context::require_context;
use crate::ambient::load_settings;
use crate::caller::CallerError;
use crate::caller::compiler::{Compiler, CompilerSpec};
use crate::caller::remember::{self, Planned, RememberOptions, RememberPlan, RememberSource};
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::cli::{GlobalArgs, transport};
use crate::paths::Paths;
use crate::protocol::{AmbientContext, ContextSource, Horizon, Input, RequestId, ResolvedContext, Response};
use crate::transport::Transport;

/// Turn a note into a stored artifact plus claims citing exact spans of it.
///
/// Without --apply this only previews the plan. The claim compiler is `MEMOREE_COMPILER`,
/// else config.toml `[remember] compiler`, else the Codex CLI; --raw skips it.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree remember We chose SQLite WAL because restores must be exact.\n  \
                        memoree remember --file notes/meeting.md --apply\n  \
                        git show -s HEAD | memoree remember - --raw --apply"
)]
pub struct RememberArgs {
    /// The note (words joined with spaces), or `-` to read stdin.
    #[arg(conflicts_with = "file")]
    text: Vec<String>,
    /// Read the note from a file (recorded as a file snapshot).
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Store the note without compiling claims.
    #[arg(long)]
    raw: bool,
    /// Let Codex fall back to an API key for this one invocation (ask the human first).
    #[arg(long, conflicts_with = "raw")]
    allow_api_key: bool,
    /// Store the plan; without this nothing is written.
    #[arg(long)]
    apply: bool,
    /// Artifact title (default: the note's first sentence).
    #[arg(long)]
    title: Option<String>,
    /// Artifact kind.
    #[arg(long, default_value = remember::DEFAULT_KIND)]
    kind: String,
    /// Logical idempotency key (default: derived from the exact note, title and kind).
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// How a remember run proceeds once the note is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mode {
    pub raw: bool,
    pub allow_api_key: bool,
    pub apply: bool,
}

pub(crate) fn run(args: RememberArgs, global: &GlobalArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let failed = |error: CliError| error.at(request_id.clone());
    let (context, source) = require_context("remember").map_err(failed)?;
    let note = RememberSource::load(&args.text, args.file.as_deref(), std::io::stdin().lock())
        .map_err(|e| failed(e.into()))?;
    let options = RememberOptions {
        title: args.title,
        kind: Some(args.kind),
        idempotency_key: args.idempotency_key,
    };
    let mode = Mode {
        raw: args.raw,
        allow_api_key: args.allow_api_key,
        apply: args.apply,
    };
    execute(&request_id, (&context, source), note, &options, mode, global)
}

/// Plans `note` and previews or applies it. `request_id` names the printed envelope.
pub(crate) fn execute(
    request_id: &RequestId,
    (context, source): (&AmbientContext, ContextSource),
    note: RememberSource,
    options: &RememberOptions,
    mode: Mode,
    global: &GlobalArgs,
) -> CliResult<Response> {
    let plan = compile(note, options, mode).map_err(|e| CliError::from(e).at(request_id.clone()))?;
    let mut response = if mode.apply {
        apply(&plan, context, source, request_id, global)?
    } else {
        success(request_id, &plan.preview_result())?
    };
    response.context = Some(ResolvedContext::new(context, source, Horizon::Ambient));
    response.warnings = plan.warnings();
    Ok(response)
}

fn compile(note: RememberSource, options: &RememberOptions, mode: Mode) -> Result<RememberPlan, CallerError> {
    if mode.raw {
        return remember::plan(note, options, None);
    }
    let paths = Paths::from_env().map_err(|e| CallerError::Config(e.to_string()))?;
    let settings = load_settings(&paths.config_file).map_err(|e| CallerError::Config(e.to_string()))?;
    let spec = CompilerSpec::resolve(settings.remember_compiler.as_deref(), mode.allow_api_key)?;
    remember::plan(note, options, Some(&Compiler::new(spec)))
}

/// Submits one planned mutation; a failure envelope stops the apply and is printed as it
/// came back.
fn submit<I: Input>(
    planned: Planned<I>,
    (context, source): (&AmbientContext, ContextSource),
    transport: &dyn Transport,
) -> CliResult<(Value, Option<i64>)> {
    let response = Call::new(planned.input)
        .idempotency_key(Some(planned.idempotency_key))
        .context(context, source)
        .send_via(transport)?;
    match response {
        Response {
            ok: true,
            result: Some(result),
            commit_seq,
            ..
        } => Ok((result, commit_seq)),
        failed => Err(CliError::Envelope(Box::new(failed)).into()),
    }
}

/// Submits the planned mutations in order; the first failed envelope is the error.
fn apply(
    plan: &RememberPlan,
    context: &AmbientContext,
    source: ContextSource,
    request_id: &RequestId,
    global: &GlobalArgs,
) -> CliResult<Response> {
    let failed = |error: CliError| error.at(request_id.clone());
    let actor = remember::actor_from_env().map_err(|e| failed(e.into()))?;
    let transport = transport::select(global).map_err(|e| failed(e.into()))?;
    let transport = transport.as_ref();
    let (artifact, mut commit_seq) = submit(plan.artifact_put(&actor), (context, source), transport)?;
    let text = |key: &str| artifact.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (artifact_id, revision_id) = (text("artifact_id"), text("revision_id"));
    let mut stored_claims = Vec::new();
    for planned in plan.claim_asserts(&artifact_id, &revision_id, &actor) {
        let (claim, seq) = submit(planned, (context, source), transport)?;
        stored_claims.push(claim);
        commit_seq = seq;
    }
    let mut response = success(request_id, &plan.applied_result(artifact, stored_claims))?;
    response.commit_seq = commit_seq;
    Ok(response)
}

/// A success envelope for a remember result.
fn success(request_id: &RequestId, result: &impl serde::Serialize) -> CliResult<Response> {
    match serde_json::to_value(result) {
        Ok(result) => Ok(Response::success(request_id.clone(), result)),
        Err(e) => Err(CliError::Internal(e.to_string()).at(request_id.clone())),
    }
}
