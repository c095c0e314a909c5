//! Discovery and maintenance wrappers: `capabilities`, `instructions`, `schema`, `doctor`,
//! `verify`, `reindex` and `backup create`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::cli::request::{Call, invalid, io_failure};
use crate::protocol::{CLI_REQUEST_ID, Operation, Response};

/// What this binary implements, its limits and guarantees.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree capabilities --pretty")]
pub struct CapabilitiesArgs {}

/// The agent instructions for using memoree.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree instructions --format json")]
pub struct InstructionsArgs {
    /// `markdown`, `json`, `agents-md` or `claude-md`.
    #[arg(long, default_value = "markdown")]
    format: String,
}

/// The JSON Schema bundle of protocol v1.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree schema | jq '.result.operation_inputs | keys'")]
pub struct SchemaArgs {}

/// Check that the daemon and its store are healthy.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree doctor")]
pub struct DoctorArgs {}

/// Verify the store: SQLite integrity, commit sequence, evidence spans and blob digests.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree verify --pretty")]
pub struct VerifyArgs {}

/// Rebuild the full-text index from the authoritative revisions.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree reindex")]
pub struct ReindexArgs {}

/// Consistent, verified backups of the store.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree backup create ~/backups/memoree-2026-01-31")]
pub struct BackupArgs {
    #[command(subcommand)]
    command: BackupCommand,
}

#[derive(Debug, Subcommand)]
enum BackupCommand {
    Create(CreateArgs),
    Restore(RestoreArgs),
}

/// Restore a backup into an empty data directory (local; no daemon involved).
///
/// The backup is verified before anything is published, and the restored store is verified
/// again. The target must not exist or be empty, so no daemon can be serving it.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  MEMOREE_HOME=~/memoree-restored memoree backup restore ~/backups/memoree-2026-01-31"
)]
struct RestoreArgs {
    /// The backup directory written by `backup create`.
    src: PathBuf,
    /// The data directory to restore into (default: the resolved data directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// Write a verified copy of the store to DEST, which must not exist yet.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree backup create ../backups/today   # sent as <cwd>/../backups/today")]
struct CreateArgs {
    /// The new backup directory; a relative path is joined to the working directory.
    dest: PathBuf,
}

pub(crate) fn capabilities(global: &GlobalArgs) -> Response {
    Call::new(Operation::Capabilities, json!({})).send(global)
}

pub(crate) fn instructions(args: InstructionsArgs, global: &GlobalArgs) -> Response {
    Call::new(Operation::Instructions, json!({"format": args.format})).send(global)
}

pub(crate) fn schema(global: &GlobalArgs) -> Response {
    Call::new(Operation::Schema, json!({})).send(global)
}

pub(crate) fn doctor(global: &GlobalArgs) -> Response {
    Call::new(Operation::Doctor, json!({})).send(global)
}

pub(crate) fn verify(global: &GlobalArgs) -> Response {
    Call::new(Operation::Verify, json!({})).send(global)
}

pub(crate) fn reindex(global: &GlobalArgs) -> Response {
    Call::new(Operation::Reindex, json!({})).send(global)
}

pub(crate) fn backup(args: BackupArgs, global: &GlobalArgs) -> Response {
    let args = match args.command {
        BackupCommand::Create(args) => args,
        BackupCommand::Restore(args) => return restore(args),
    };
    let destination = match absolute(&args.dest) {
        Ok(path) => path,
        Err(e) => return io_failure(CLI_REQUEST_ID, "reading the working directory", e),
    };
    let Some(destination) = destination.to_str() else {
        return invalid(format_args!(
            "backup destination {} is not valid UTF-8",
            destination.display()
        ));
    };
    let input = json!({"destination": destination});
    Call::new(Operation::BackupCreate, input).send(global)
}

/// The daemon runs elsewhere, so a relative path is joined to this process's working
/// directory, without normalizing `..` (which would change meaning across symbolic links).
fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()?.join(path))
}

fn restore(args: RestoreArgs) -> Response {
    let request_id = crate::cli::request::new_request_id();
    let data_dir = match args.data_dir {
        Some(dir) => dir,
        None => match crate::paths::Paths::from_env() {
            Ok(paths) => paths.data_dir,
            Err(e) => return Response::failure(&request_id, crate::protocol::ErrorBody::new(e.code(), e.to_string())),
        },
    };
    let source = match absolute(&args.src) {
        Ok(path) => path,
        Err(e) => return io_failure(&request_id, "reading the working directory", e),
    };
    match crate::store::restore::restore(&source, &data_dir) {
        Ok(report) => Response::success(
            request_id,
            json!({
                "source": source.display().to_string(),
                "data_dir": report.data_dir.display().to_string(),
                "commit_seq": report.commit_seq,
                "artifact_revisions": report.artifact_revisions,
                "claim_revisions": report.claim_revisions,
                "restored_external_blobs": report.restored_external_blobs,
            }),
        ),
        Err(error) => Response::failure(
            request_id,
            crate::service::error_body(&crate::service::ServiceError::Store(error)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_destinations_are_joined_to_the_cwd_without_normalizing() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("../bk1")).unwrap(), cwd.join("../bk1"));
        assert_eq!(absolute(Path::new("/abs/x")).unwrap(), PathBuf::from("/abs/x"));
    }
}
