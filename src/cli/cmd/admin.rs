//! Discovery and maintenance wrappers: `capabilities`, `instructions`, `schema`, `doctor`,
//! `verify`, `reindex` and `backup create`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::protocol::admin::{
    BackupCreateInput, DoctorInput, InstructionsFormat, InstructionsInput, ReindexInput, VerifyInput,
};
use crate::protocol::local::RestoreResult;
use crate::protocol::meta::{CapabilitiesInput, SchemaInput};
use crate::protocol::{RequestId, Response};

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

pub(crate) fn capabilities(global: &GlobalArgs) -> CliResult<Response> {
    Call::new(CapabilitiesInput {}).send(global)
}

pub(crate) fn instructions(args: InstructionsArgs, global: &GlobalArgs) -> CliResult<Response> {
    let format: InstructionsFormat = args
        .format
        .parse()
        .map_err(|e| CliError::Invalid(format!("invalid input for instructions: format: {e}")))?;
    Call::new(InstructionsInput { format }).send(global)
}

pub(crate) fn schema(global: &GlobalArgs) -> CliResult<Response> {
    Call::new(SchemaInput {}).send(global)
}

pub(crate) fn doctor(global: &GlobalArgs) -> CliResult<Response> {
    Call::new(DoctorInput {}).send(global)
}

pub(crate) fn verify(global: &GlobalArgs) -> CliResult<Response> {
    Call::new(VerifyInput {}).send(global)
}

pub(crate) fn reindex(global: &GlobalArgs) -> CliResult<Response> {
    Call::new(ReindexInput {}).send(global)
}

pub(crate) fn backup(args: BackupArgs, global: &GlobalArgs) -> CliResult<Response> {
    let args = match args.command {
        BackupCommand::Create(args) => args,
        BackupCommand::Restore(args) => return restore(args),
    };
    let destination = absolute(&args.dest).map_err(|e| CliError::io("reading the working directory", e))?;
    let Some(destination) = destination.to_str() else {
        return Err(CliError::Invalid(format!(
            "backup destination {} is not valid UTF-8",
            destination.display()
        ))
        .into());
    };
    let input = BackupCreateInput {
        destination: destination.to_owned(),
    };
    Call::new(input).send(global)
}

/// The daemon runs elsewhere, so a relative path is joined to this process's working
/// directory, without normalizing `..` (which would change meaning across symbolic links).
fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()?.join(path))
}

fn restore(args: RestoreArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let failed = |error: CliError| error.at(request_id.clone());
    let data_dir = match args.data_dir {
        Some(dir) => dir,
        None => crate::paths::Paths::from_env().map_err(|e| failed(e.into()))?.data_dir,
    };
    let source = absolute(&args.src).map_err(|e| failed(CliError::io("reading the working directory", e)))?;
    let report = crate::store::restore::restore(&source, &data_dir)
        .map_err(|e| failed(crate::service::ServiceError::Store(e).into()))?;
    let result = RestoreResult {
        source: source.display().to_string(),
        data_dir: report.data_dir.display().to_string(),
        commit_seq: report.commit_seq,
        artifact_revisions: report.artifact_revisions,
        claim_revisions: report.claim_revisions,
        restored_external_blobs: report.restored_external_blobs,
    };
    let result = serde_json::to_value(result).map_err(|e| failed(CliError::Internal(e.to_string())))?;
    Ok(Response::success(request_id, result))
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
