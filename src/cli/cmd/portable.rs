//! Data ownership: `memoree export`, `memoree import`, and `artifact purge` / `claim purge`.
//!
//! `export` runs in this process on a read snapshot of the data directory (it works while
//! a daemon serves the store, and shows progress on stderr when that is a terminal), or of
//! the PostgreSQL store named by `--store` (or the config's `[store] url`).
//! `import` sends the `import` extension to the daemon, except with `--data-dir`, which
//! builds a new store in an absent or empty directory locally, like `backup restore`, and
//! with `--store` (or, without `--data-dir` and `--endpoint`, the config's `[store] url`),
//! which imports into that PostgreSQL store from this process.
//! The purges send the `artifact.purge` / `claim.purge` extensions.

use std::path::PathBuf;

use clap::Args;

use crate::cli::error::{CliError, CliResult};
use crate::cli::request::{Call, actor_from_env};
use crate::cli::{GlobalArgs, transport};
use crate::client::socket::ClientTimeouts;
use crate::paths::Paths;
use crate::protocol::local::{ExportBlobs, ExportResult, LocalImportResult};
use crate::protocol::purge::{ArtifactPurgeInput, ClaimPurgeInput, ImportInput, ImportMode};
use crate::protocol::{Horizon, Input, Operation, RequestId, Response};
use crate::service::ServiceError;
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

pub(crate) fn artifact_purge(args: ArtifactPurgeArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ArtifactPurgeInput {
        artifact_id: args.artifact_id.into(),
        reason: args.flags.reason,
        actor: actor_from_env()?,
    };
    send_patiently(Call::new(input).idempotency_key(args.flags.idempotency_key), global)
}

pub(crate) fn claim_purge(args: ClaimPurgeArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ClaimPurgeInput {
        claim_id: args.claim_id.into(),
        reason: args.flags.reason,
        actor: actor_from_env()?,
    };
    send_patiently(Call::new(input).idempotency_key(args.flags.idempotency_key), global)
}

/// How long a purge or an import may take before the client gives up waiting: both rewrite
/// or verify the whole store, which takes time proportional to its size.
const LONG_OPERATION: std::time::Duration = std::time::Duration::from_secs(3600);

/// [`Call::send`] over the usual transport, but with read and exchange timeouts long
/// enough for work proportional to the store's size.
fn send_patiently<I: Input>(call: Call<I>, global: &GlobalArgs) -> CliResult<Response> {
    let timeouts = ClientTimeouts {
        read: LONG_OPERATION,
        exchange: LONG_OPERATION,
        ..ClientTimeouts::default()
    };
    let transport = transport::select_with(global, timeouts).map_err(|e| CliError::from(e).at(call.id().clone()))?;
    call.send_via(transport.as_ref())
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
    horizon: Option<Horizon>,
    /// Why a broader horizon is exported.
    #[arg(long)]
    reason: Option<String>,
    /// The data directory to export (default: the resolved data directory).
    #[arg(long, conflicts_with = "store")]
    data_dir: Option<PathBuf>,
    /// Export the PostgreSQL store at this postgres:// URL instead of the embedded store
    /// (default without --data-dir: `[store] url` of the config file, as `memoree serve`).
    /// No password here: PGPASSWORD, PGPASSFILE (~/.pgpass) or `[store] password_file`.
    #[arg(long)]
    store: Option<String>,
}

pub(crate) fn export(args: ExportArgs, _global: &GlobalArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let at = |e: CliError| e.at(request_id.clone());
    let store_url = store_url(args.store, args.data_dir.is_some()).map_err(at)?;
    let data_dir = match store_url {
        Some(_) => PathBuf::new(),
        None => data_dir(args.data_dir).map_err(at)?,
    };
    let dest = absolute(&args.dest).map_err(at)?;
    let scope = if args.all {
        Scope::All
    } else {
        let horizon = args.horizon.unwrap_or_default();
        if horizon.is_broad() && args.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            return Err(at(CliError::Invalid(
                "workspace and personal horizons require a non-empty --reason".to_owned(),
            )));
        }
        let (context, _) = transport::resolve(Operation::Search).map_err(at)?;
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
    let exported = match store_url {
        Some(url) => crate::store::pg::PgStore::open(&url).and_then(|store| {
            let report = export::export_postgres(&store, &dest, &scope, true);
            store.shutdown();
            report
        }),
        None => export::export(&data_dir, &dest, &scope, true),
    };
    let report = exported.map_err(|e| at(ServiceError::Store(e).into()))?;
    let manifest = report.manifest;
    let result = ExportResult {
        destination: report.destination.display().to_string(),
        format: manifest.format,
        format_version: manifest.format_version,
        scope: manifest.scope,
        source_last_commit_seq: manifest.source_last_commit_seq,
        records: manifest
            .files
            .iter()
            .map(|file| (file.record_type.clone(), file.records))
            .collect(),
        blobs: ExportBlobs {
            count: manifest.blobs.count,
            bytes: manifest.blobs.bytes,
        },
        created_at: manifest.created_at,
    };
    local_success(request_id, &result)
}

/// Replay an archive written by `memoree export` into a store.
///
/// Into an empty store (the default) it reproduces every id, revision, relation, conflict
/// case and commit_seq; --merge adds what is new to a store that holds memory, skips
/// identical records and refuses ids that exist with different content. Everything is
/// verified before it becomes visible; a failed import leaves the store unchanged.
#[derive(Debug, Args)]
///
/// With --from FORMAT it instead imports memory kept by other tools (Markdown instruction and
/// rule files, the MCP memory server's JSON Lines, Mem0 exports, basic-memory notes) through
/// the daemon: see `memoree import --help` and the README, "Switching to Memoree".
#[command(after_help = "Examples:\n  memoree import ~/memoree-export --merge\n  \
                        memoree import ~/memoree-export --data-dir ~/new-memoree-data\n  \
                        memoree import ~/memoree-export --store postgres://memoree@db/memoree\n  \
                        memoree import --from markdown CLAUDE.md AGENTS.md .cursor/rules --claims bullets\n  \
                        memoree import --from mcp-memory ~/.local/share/memory.jsonl --dry-run")]
pub struct ImportArgs {
    /// The archive directory written by `memoree export`; with --from, the files or
    /// directories to import.
    #[arg(required = true, num_args = 1..)]
    src: Vec<PathBuf>,
    #[command(flatten)]
    foreign: super::switch::FromArgs,
    /// The target must hold no memory (the default).
    #[arg(long, conflicts_with = "merge")]
    into_empty: bool,
    /// Bring the archive into a store that already holds memory.
    #[arg(long)]
    merge: bool,
    /// Build a new store in this absent or empty directory, locally (no daemon).
    #[arg(long, conflicts_with_all = ["merge", "store", "from"])]
    data_dir: Option<PathBuf>,
    /// Import into the PostgreSQL store at this postgres:// URL from this process (default
    /// without --data-dir and --endpoint: `[store] url` of the config file, as `memoree serve`).
    /// No password here: PGPASSWORD, PGPASSFILE (~/.pgpass) or `[store] password_file`.
    #[arg(long)]
    store: Option<String>,
}

pub(crate) fn import(args: ImportArgs, global: &GlobalArgs) -> crate::cli::Outcome {
    if args.foreign.from.is_some() {
        return super::switch::import(args.foreign, args.src, global);
    }
    import_archive(args, global).into()
}

/// `memoree import ARCHIVE`: the archive import, unchanged by `--from`.
fn import_archive(args: ImportArgs, global: &GlobalArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let at = |e: CliError| e.at(request_id.clone());
    let [src] = args.src.as_slice() else {
        return Err(at(CliError::Invalid(
            "give exactly one archive directory (or --from FORMAT to import other tools' files)".to_owned(),
        )));
    };
    let source = absolute(src).map_err(at)?;
    let mode = if args.merge {
        ImportMode::Merge
    } else {
        ImportMode::IntoEmpty
    };
    let store_url = store_url(args.store, args.data_dir.is_some() || global.endpoint.is_some()).map_err(at)?;
    if let Some(url) = store_url {
        // The store's own front end for the length of the import; it keeps nothing locally.
        let imported = crate::store::Store::open_postgres(&url, std::path::Path::new("")).and_then(|store| {
            let report = store.import(&source, mode, true);
            store.shutdown();
            report
        });
        let report = imported.map_err(|e| at(ServiceError::Store(e).into()))?;
        let result = crate::service::import_result(&source.display().to_string(), mode, &report);
        return local_success(request_id, &result);
    }
    let Some(data_dir) = args.data_dir else {
        let Some(text) = source.to_str() else {
            return Err(at(CliError::Invalid(format!(
                "import source {} is not valid UTF-8",
                source.display()
            ))));
        };
        let input = ImportInput {
            source: text.to_owned(),
            mode,
        };
        return send_patiently(Call::new(input), global);
    };
    let report =
        fresh::import_into_new_data_dir(&source, &data_dir, true).map_err(|e| at(ServiceError::Store(e).into()))?;
    let result = LocalImportResult {
        import: crate::service::import_result(&source.display().to_string(), mode, &report),
        data_dir: data_dir.display().to_string(),
    };
    local_success(request_id, &result)
}

/// A success envelope for a result computed here.
fn local_success<T: serde::Serialize>(request_id: RequestId, result: &T) -> CliResult<Response> {
    let value = serde_json::to_value(result)
        .map_err(|e| CliError::Internal(format!("the result cannot be encoded: {e}")).at(request_id.clone()))?;
    Ok(Response::success(request_id, value))
}

/// The PostgreSQL store to export or import into: `--store`, else (unless `elsewhere`: a
/// `--data-dir` or, for import, an endpoint was given) the config file's `[store] url`, else
/// none (the embedded store, or the daemon).
fn store_url(explicit: Option<String>, elsewhere: bool) -> Result<Option<String>, CliError> {
    match explicit {
        Some(url) if !crate::store::pg::is_postgres_url(&url) => Err(CliError::Invalid(
            "--store must be a postgres:// or postgresql:// URL".to_owned(),
        )),
        explicit => Ok(crate::cli::store_url::choose(explicit, elsewhere)?.map(|url| url.0)),
    }
}

fn data_dir(explicit: Option<PathBuf>) -> Result<PathBuf, CliError> {
    match explicit {
        Some(dir) => Ok(dir),
        None => Ok(Paths::from_env()?.data_dir),
    }
}

pub(crate) fn absolute(path: &std::path::Path) -> Result<PathBuf, CliError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| CliError::io("reading the working directory", e))
}
