//! `memoree semantic install|status|remove`: the optional local embedding model, managed in
//! the data directory (local; no daemon involved). A running daemon keeps the model it
//! loaded until it restarts; every result says so.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::error::{CliError, CliResult};
use crate::protocol::{RequestId, Response};
use crate::semantic::{self, SemanticError};

/// The optional local semantic model (Model2Vec format); nothing is ever downloaded.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree semantic install ../shared/models/potion-base-8M\n  memoree semantic status\n  memoree semantic remove"
)]
pub struct SemanticArgs {
    #[command(subcommand)]
    command: SemanticCommand,
    /// The data directory (default: the resolved data directory).
    #[arg(long, value_name = "DIR", global = true)]
    data_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum SemanticCommand {
    /// Check a model directory (`config.json`, `model.safetensors`, `tokenizer.json`) and
    /// install a copy into the data directory, recording its digest.
    #[command(after_help = "Example:\n  memoree semantic install ../shared/models/potion-base-8M")]
    Install {
        /// The model directory.
        dir: PathBuf,
        /// Refuse the model unless its digest is this (`blake3:<hex>`, as `status` prints it).
        #[arg(long, value_name = "DIGEST")]
        digest: Option<String>,
    },
    /// The installed model, and whether it loads.
    #[command(after_help = "Example:\n  memoree semantic status --pretty")]
    Status,
    /// Remove the installed model; retrieval answers lexically again.
    #[command(after_help = "Example:\n  memoree semantic remove")]
    Remove,
}

const TAKES_EFFECT: &str = "when the daemon next starts (memoree daemon restart)";

pub(crate) fn run(args: SemanticArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let failed = |error: CliError| error.at(request_id.clone());
    let data_dir = match args.data_dir {
        Some(dir) => dir,
        None => crate::paths::Paths::from_env().map_err(|e| failed(e.into()))?.data_dir,
    };
    let result = match args.command {
        SemanticCommand::Install { dir, digest } => {
            let dir =
                std::path::absolute(&dir).map_err(|e| failed(CliError::io("reading the working directory", e)))?;
            let report = semantic::install(&data_dir, &dir, digest.as_deref()).map_err(|e| failed(cli_error(e)))?;
            json!({
                "installed": true,
                "model_digest": report.manifest.model_digest,
                "dimensions": report.manifest.dimensions,
                "bytes": report.manifest.bytes,
                "source": report.manifest.source,
                "path": report.path,
                "replaced_digest": report.replaced,
                "takes_effect": TAKES_EFFECT,
            })
        }
        SemanticCommand::Status => {
            let manifest = semantic::status(&data_dir).map_err(|e| failed(cli_error(e)))?;
            let state = semantic::State::load(&data_dir);
            json!({
                "installed": manifest.is_some(),
                "manifest": manifest,
                "loads": state.embedder().is_some(),
                "state": state.describe(),
            })
        }
        SemanticCommand::Remove => {
            let removed = semantic::remove(&data_dir).map_err(|e| failed(cli_error(e)))?;
            json!({
                "removed": removed.is_some(),
                "model_digest": removed.flatten(),
                "takes_effect": TAKES_EFFECT,
            })
        }
    };
    Ok(Response::success(request_id, result))
}

fn cli_error(error: SemanticError) -> CliError {
    if error.is_invalid_request() {
        CliError::Invalid(error.to_string())
    } else {
        CliError::Internal(error.to_string())
    }
}
