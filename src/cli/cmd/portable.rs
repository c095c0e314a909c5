//! Data ownership: `memoree export`, `memoree import`, and `artifact purge` / `claim purge`.
//!
//! `export` runs in this process on a read snapshot of the data directory (it works while
//! a daemon serves the store, and shows progress on stderr when that is a terminal).
//! `import` sends the `import` extension to the daemon, except with `--data-dir`, which
//! builds a new store in an absent or empty directory locally, like `backup restore`.
//! The purges send the `artifact.purge` / `claim.purge` extensions.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value, json};

use super::HorizonArg;
use crate::cli::GlobalArgs;
use crate::cli::request::{Call, insert_actor, invalid, io_failure, new_request_id, settle};
use crate::paths::Paths;
use crate::protocol::purge::ImportMode;
use crate::protocol::{ErrorBody, Horizon, Operation, Response};
use crate::service::{ServiceError, error_body};
use crate::store::portable::{Scope, export, fresh};

/// Erase an artifact's content for good (every revision), leaving a tombstone.
///
/// Removes the bytes, titles and provenance of every revision from the database, its WAL,
/// the full-text index and the CAS. Backups and exports made earlier still hold them.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree artifact purge art_01J... --reason 'leaked credential'")]
pub struct ArtifactPurgeArgs {
    artifact_id: String,
    #[command(flatten)]
    flags: PurgeFlags,
}

/// Erase a claim's statement for good (every revision), leaving a tombstone.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree claim purge clm_01J... --reason 'quoted personal data'")]
pub struct ClaimPurgeArgs {
    claim_id: String,
    #[command(flatten)]
    flags: PurgeFlags,
}

#[derive(Debug, Args)]
struct PurgeFlags {
    /// Why the content is erased (required; kept in the tombstone).
    #[arg(long)]
    reason: String,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

pub(crate) fn artifact_purge(args: ArtifactPurgeArgs, global: &GlobalArgs) -> Response {
    purge(
        Operation::ArtifactPurge,
        "artifact_id",
        args.artifact_id,
        args.flags,
        global,
    )
}

pub(crate) fn claim_purge(args: ClaimPurgeArgs, global: &GlobalArgs) -> Response {
    purge(Operation::ClaimPurge, "claim_id", args.claim_id, args.flags, global)
}

fn purge(op: Operation, field: &str, id: String, flags: PurgeFlags, global: &GlobalArgs) -> Response {
    settle((|| {
        let mut input = Map::new();
        input.insert(field.to_owned(), Value::from(id));
        input.insert("reason".to_owned(), Value::from(flags.reason));
        insert_actor(&mut input)?;
        let call = Call::new(op, Value::Object(input)).idempotency_key(flags.idempotency_key);
        Ok(send_patiently(&call, global))
    })())
}

/// How long a purge or an import may take before the client gives up waiting: both rewrite
/// or verify the whole store, which takes time proportional to its size.
const LONG_OPERATION: std::time::Duration = std::time::Duration::from_secs(3600);

/// [`Call::send`] over the usual transport, but with read and exchange timeouts long
/// enough for work proportional to the store's size.
fn send_patiently(call: &Call, global: &GlobalArgs) -> Response {
    use crate::client::autostart::{Autostart, Launcher};
    use crate::client::socket::{ClientTimeouts, SocketClient};
    use crate::client::{ClientError, Transport};
    let timeouts = ClientTimeouts {
        read: LONG_OPERATION,
        exchange: LONG_OPERATION,
        ..ClientTimeouts::default()
    };
    let transport = (|| -> Result<Box<dyn Transport>, ClientError> {
        if let Some(text) = &global.endpoint {
            let endpoint = crate::paths::Endpoint::parse(text).map_err(|e| ClientError::Config(e.to_string()))?;
            return Ok(Box::new(SocketClient::new(endpoint).with_timeouts(timeouts)));
        }
        let paths = Paths::from_env().map_err(|e| ClientError::Config(e.to_string()))?;
        if global.no_autostart {
            return Ok(Box::new(
                SocketClient::new(paths.default_endpoint()).with_timeouts(timeouts),
            ));
        }
        let launcher = Launcher::for_paths(&paths)?;
        let client = SocketClient::new(launcher.endpoint.clone()).with_timeouts(timeouts);
        Ok(Box::new(Autostart::new(client, launcher)))
    })();
    match transport {
        Ok(transport) => call.send_via(transport.as_ref()),
        Err(error) => error.to_response(call.to_value()["request_id"].as_str().unwrap_or_default()),
    }
}

/// Write a portable, verified-on-import archive of the store (spec/export-v1.md).
///
/// JSON Lines of every entity, revision, relation, conflict case, event, replay record and
/// tombstone, blobs as content-addressed files, and a manifest with counts and BLAKE3
/// digests. Reads one consistent snapshot; the daemon may keep running. Without --all, the
/// export holds what the ambient context sees at --horizon, plus everything it references.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree export --all ~/memoree-export\n  \
                        memoree export --horizon workspace --reason 'hand over' ../team-memory")]
pub struct ExportArgs {
    /// The new archive directory (must not exist).
    dest: PathBuf,
    /// Export the whole store instead of the ambient scope.
    #[arg(long, conflicts_with_all = ["horizon", "reason"])]
    all: bool,
    /// How far to look from the ambient context; `workspace` and `personal` need --reason.
    #[arg(long, value_enum)]
    horizon: Option<HorizonArg>,
    /// Why a broader horizon is exported.
    #[arg(long)]
    reason: Option<String>,
    /// The data directory to export (default: the resolved data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

pub(crate) fn export(args: ExportArgs, _global: &GlobalArgs) -> Response {
    let request_id = new_request_id();
    settle((|| {
        let data_dir = data_dir(args.data_dir, &request_id)?;
        let dest = absolute(&args.dest, &request_id)?;
        let scope = if args.all {
            Scope::All
        } else {
            let horizon = match args.horizon.unwrap_or_default() {
                HorizonArg::Ambient => Horizon::Ambient,
                HorizonArg::Workspace => Horizon::Workspace,
                HorizonArg::Personal => Horizon::Personal,
            };
            if horizon.is_broad() && args.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err(invalid("workspace and personal horizons require a non-empty --reason"));
            }
            let context = ambient_context(&request_id)?;
            Scope::Visible {
                ambient: crate::store::scope::Owner {
                    workspace_id: context.workspace_id,
                    project_id: context.project_id,
                    task_id: context.task_id,
                    component: context.component,
                },
                horizon,
                reason: args.reason,
            }
        };
        let report = export::export(&data_dir, &dest, &scope, true).map_err(|e| failure(&request_id, e))?;
        let manifest = &report.manifest;
        let records: Map<String, Value> = manifest
            .files
            .iter()
            .map(|file| (file.record_type.clone(), Value::from(file.records)))
            .collect();
        Ok(Response::success(
            request_id.clone(),
            json!({
                "destination": report.destination.display().to_string(),
                "format": manifest.format,
                "format_version": manifest.format_version,
                "scope": manifest.scope,
                "source_last_commit_seq": manifest.source_last_commit_seq,
                "records": records,
                "blobs": {"count": manifest.blobs.count, "bytes": manifest.blobs.bytes},
                "created_at": manifest.created_at,
            }),
        ))
    })())
}

/// Replay an archive written by `memoree export` into a store.
///
/// Into an empty store (the default) it reproduces every id, revision, relation, conflict
/// case and commit_seq; --merge adds what is new to a store that holds memory, skips
/// identical records and refuses ids that exist with different content. Everything is
/// verified before it becomes visible; a failed import leaves the store unchanged.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree import ~/memoree-export --merge\n  \
                        memoree import ~/memoree-export --data-dir ~/new-memoree-data")]
pub struct ImportArgs {
    /// The archive directory written by `memoree export`.
    src: PathBuf,
    /// The target must hold no memory (the default).
    #[arg(long, conflicts_with = "merge")]
    into_empty: bool,
    /// Bring the archive into a store that already holds memory.
    #[arg(long)]
    merge: bool,
    /// Build a new store in this absent or empty directory, locally (no daemon).
    #[arg(long, conflicts_with = "merge")]
    data_dir: Option<PathBuf>,
}

pub(crate) fn import(args: ImportArgs, global: &GlobalArgs) -> Response {
    let request_id = new_request_id();
    settle((|| {
        let source = absolute(&args.src, &request_id)?;
        let mode = if args.merge {
            ImportMode::Merge
        } else {
            ImportMode::IntoEmpty
        };
        let Some(data_dir) = args.data_dir else {
            let Some(source) = source.to_str() else {
                return Err(invalid(format_args!(
                    "import source {} is not valid UTF-8",
                    source.display()
                )));
            };
            let input = json!({"source": source, "mode": mode});
            return Ok(send_patiently(&Call::new(Operation::Import, input), global));
        };
        let report = fresh::import_into_new_data_dir(&source, &data_dir, true).map_err(|e| failure(&request_id, e))?;
        let mut result = crate::service::to_value(crate::service::import_result(
            &source.display().to_string(),
            mode,
            &report,
        ))
        .map_err(|e| Response::failure(&request_id, error_body(&e)))?;
        result["data_dir"] = Value::from(data_dir.display().to_string());
        Ok(Response::success(request_id.clone(), result))
    })())
}

fn failure(request_id: &str, error: crate::store::StoreError) -> Response {
    Response::failure(request_id, error_body(&ServiceError::Store(error)))
}

fn data_dir(explicit: Option<PathBuf>, request_id: &str) -> Result<PathBuf, Response> {
    match explicit {
        Some(dir) => Ok(dir),
        None => Paths::from_env()
            .map(|paths| paths.data_dir)
            .map_err(|e| Response::failure(request_id, ErrorBody::new(e.code(), e.to_string()))),
    }
}

fn absolute(path: &std::path::Path, request_id: &str) -> Result<PathBuf, Response> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| io_failure(request_id, "reading the working directory", e))
}

/// The ambient context resolved like every command's (explicit env, marker, personal).
fn ambient_context(request_id: &str) -> Result<crate::protocol::AmbientContext, Response> {
    let mut request = json!({"op": Operation::Search.wire_name()});
    crate::cli::transport::attach_context(&mut request, request_id)?;
    serde_json::from_value(request["context"].clone()).map_err(|e| {
        Response::failure(
            request_id,
            ErrorBody::new(
                crate::protocol::ErrorCode::InternalError,
                format!("resolved context: {e}"),
            ),
        )
    })
}
