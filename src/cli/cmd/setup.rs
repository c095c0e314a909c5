//! `memoree setup HOST`: registers `memoree mcp` with an MCP host (see [`crate::setup`]),
//! runs `memoree init` when the project has no marker, and with `--instructions` keeps
//! Memoree's agent instructions (the `instructions` operation) in `AGENTS.md` / `CLAUDE.md`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::ambient;
use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::protocol::admin::{InstructionsContent, InstructionsInput, InstructionsResult};
use crate::protocol::local::{InitResult, SetupInstructions, SetupResult};
use crate::protocol::{RequestId, Response};
use crate::setup::{self, Host, HostEnv};

/// Register `memoree mcp` with an MCP host: claude-code, cursor, codex, vscode or
/// claude-desktop.
///
/// Merges the server entry into the host's config file (other entries and, for TOML,
/// comments and layout untouched), with the absolute path of this binary. Idempotent. Runs
/// `memoree init` first when the project has no marker (project-level hosts).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree setup claude-code --instructions\n  \
                        memoree setup codex --print\n  memoree setup cursor --directory ~/src/app")]
pub struct SetupArgs {
    #[arg(value_enum)]
    host: Host,
    /// Claude Code / Cursor: the user-level file instead of the project's.
    #[arg(long)]
    user: bool,
    /// Only show the entry (and the file it belongs in); write nothing.
    #[arg(long)]
    print: bool,
    /// The config file to edit instead of the host's usual one.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Also keep Memoree's agent instructions in AGENTS.md (CLAUDE.md for Claude hosts)
    /// between markers a re-run replaces.
    #[arg(long)]
    instructions: bool,
    /// The project directory (default: the directory of the nearest `.memoree.toml`, else
    /// the working directory).
    #[arg(long, value_name = "DIR")]
    directory: Option<PathBuf>,
}

pub(crate) fn run(args: SetupArgs, global: &GlobalArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let at = |e: CliError| e.at(request_id.clone());
    let invalid = |message: String| at(CliError::Invalid(message));
    let cwd = std::env::current_dir().map_err(|e| at(CliError::io("reading the working directory", e)))?;
    let project = match &args.directory {
        Some(dir) => super::portable::absolute(dir).map_err(at)?,
        None => ambient::find_marker(&cwd)
            .map_err(|e| at(e.into()))?
            .and_then(|marker| marker.parent().map(Path::to_path_buf))
            .unwrap_or(cwd),
    };
    let command = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| at(CliError::io("locating the memoree binary", e)))?
        .display()
        .to_string();
    let path = match &args.config {
        Some(path) => super::portable::absolute(path).map_err(at)?,
        None => args
            .host
            .config_path(args.user, &project, &HostEnv::from_process())
            .map_err(invalid)?,
    };
    let plan = setup::plan(args.host, &path, &command).map_err(invalid)?;
    let mut result = SetupResult {
        host: args.host.to_string(),
        config_path: path.display().to_string(),
        action: "printed".to_owned(),
        snippet: plan.snippet.clone(),
        command,
        args: vec!["mcp".to_owned()],
        init: None,
        instructions: None,
    };
    if args.print {
        return success(request_id, &result);
    }
    if args.host.project_scoped(args.user) && ambient::find_marker(&project).map_err(|e| at(e.into()))?.is_none() {
        let outcome = ambient::init_marker(&project, None, None).map_err(|e| at(e.into()))?;
        result.init = Some(InitResult {
            marker: outcome.marker.display().to_string(),
            context: outcome.context,
            created: true,
        });
    }
    result.action = match (&plan.before, plan.changes()) {
        (None, _) => "created",
        (Some(_), true) => "updated",
        (Some(_), false) => "unchanged",
    }
    .to_owned();
    if plan.changes() {
        setup::write(&plan).map_err(|e| at(CliError::Invalid(e)))?;
    }
    if args.instructions {
        result.instructions = Some(instructions(args.host, &project, global).map_err(|e| e.at(request_id.clone()))?);
    }
    success(request_id, &result)
}

/// Fetches the host's instructions from the daemon and splices them into its file.
fn instructions(host: Host, project: &Path, global: &GlobalArgs) -> Result<SetupInstructions, CliError> {
    let (file, format) = host.instructions();
    let response = Call::new(InstructionsInput { format })
        .send(global)
        .map_err(|failure| CliError::Envelope(Box::new(failure.into_response())))?;
    if !response.ok {
        return Err(CliError::Envelope(Box::new(response)));
    }
    let result: InstructionsResult = response
        .decode()
        .ok()
        .and_then(|r| r.result)
        .ok_or_else(|| CliError::Internal("instructions returned no result".to_owned()))?;
    let InstructionsContent::Markdown(text) = result.content else {
        return Err(CliError::Internal(
            "instructions returned a document, not Markdown".to_owned(),
        ));
    };
    let path = project.join(file);
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(CliError::io(format_args!("reading {}", path.display()), e)),
    };
    let after = setup::splice_instructions(before.as_deref(), &text);
    let action = match &before {
        None => "created",
        Some(old) if *old == after => "unchanged",
        Some(_) => "updated",
    };
    if action != "unchanged" {
        let plan = setup::Plan {
            path: path.clone(),
            before,
            after,
            snippet: String::new(),
        };
        setup::write(&plan).map_err(CliError::Invalid)?;
    }
    Ok(SetupInstructions {
        path: path.display().to_string(),
        action: action.to_owned(),
    })
}

fn success(request_id: RequestId, result: &SetupResult) -> CliResult<Response> {
    match serde_json::to_value(result) {
        Ok(value) => Ok(Response::success(request_id, value)),
        Err(e) => Err(CliError::Internal(e.to_string()).at(request_id)),
    }
}
