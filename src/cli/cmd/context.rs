//! `memoree init`, `memoree context show|explain|resolve|build` and `memoree session exec`.
//!
//! Ambient context is resolved here, on the client, and nowhere else: `init` writes the
//! project marker, `context show`/`explain` report what resolution finds without any
//! daemon, and `session exec` hands a child process a validated task context in
//! `MEMOREE_CONTEXT`, so parallel sessions never share a global "active task".

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::retrieval::{self, BuildArgs};
use crate::ambient::{self, Resolution, SESSION_ENV};
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::cli::{GlobalArgs, Outcome};
use crate::paths::{Endpoint, Paths};
use crate::protocol::local::InitResult;
use crate::protocol::meta::ContextResolveInput;
use crate::protocol::{AmbientContext, ContextSource, Horizon, RequestId, ResolvedContext, Response};
use crate::service::ServiceError;

/// Create the project marker `.memoree.toml` (never replaces an existing one).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree init\n  \
                        memoree init --name billing --workspace wsp_team --directory ~/src/billing")]
pub struct InitArgs {
    /// Project name (default: the directory's base name).
    #[arg(long)]
    name: Option<String>,
    /// Workspace id to join (default: a new `wsp_<ULID>`).
    #[arg(long = "workspace", visible_alias = "workspace-id", value_name = "ID")]
    workspace: Option<String>,
    /// The project directory.
    #[arg(long, default_value = ".")]
    directory: PathBuf,
}

/// Inspect the ambient context, or build a context bundle for a query.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree context show\n  memoree context explain --pretty")]
pub struct ContextArgs {
    #[command(subcommand)]
    command: ContextCommand,
}

#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// Resolve the ambient context locally and print it.
    #[command(
        after_help = "Example:\n  MEMOREE_CONTEXT='{\"workspace_id\":\"w\",\"project_id\":\"p\",\"pins\":[]}' memoree context show"
    )]
    Show,
    /// Say which source (session, marker, personal) the ambient context comes from, and why.
    #[command(after_help = "Example:\n  memoree context explain")]
    Explain,
    /// Ask the daemon to echo the context this client resolves (operation context.resolve).
    #[command(after_help = "Example:\n  memoree context resolve")]
    Resolve,
    Build(BuildArgs),
}

/// Run a command inside a task session.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree session exec --task fix-auth -- codex")]
pub struct SessionArgs {
    #[command(subcommand)]
    command: SessionCommand,
}

#[derive(Debug, Subcommand)]
enum SessionCommand {
    Exec(ExecArgs),
}

/// Run CMD with `MEMOREE_CONTEXT` set to the ambient context narrowed to task NAME.
///
/// The task id is derived from the workspace, project and NAME, so the same name always
/// names the same task. The command's own output and exit status pass through. Everything
/// from the first word that is not a `session exec` flag on (or everything after `--`)
/// is the command and its arguments, flags included.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree session exec --task fix-auth -- sh -c 'memoree context show'\n  \
                        memoree session exec --task fix-auth codex --model o3"
)]
struct ExecArgs {
    /// The task name.
    #[arg(long)]
    task: String,
    /// The command and its arguments (optionally after `--`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

pub(crate) fn init(args: &InitArgs) -> CliResult<Response> {
    let request_id = RequestId::generate();
    let outcome = ambient::init_marker(&args.directory, args.name.as_deref(), args.workspace.as_deref())
        .map_err(|e| CliError::from(e).at(request_id.clone()))?;
    let result = InitResult {
        marker: outcome.marker.display().to_string(),
        context: outcome.context,
        created: true,
    };
    success(request_id, &result)
}

/// A success envelope for a local result.
fn success(request_id: RequestId, result: &impl serde::Serialize) -> CliResult<Response> {
    match serde_json::to_value(result) {
        Ok(result) => Ok(Response::success(request_id, result)),
        Err(e) => Err(CliError::Internal(e.to_string()).at(request_id)),
    }
}

pub(crate) fn run(args: ContextArgs, global: &GlobalArgs) -> CliResult<Response> {
    match args.command {
        ContextCommand::Show => show(),
        ContextCommand::Explain => explain(),
        ContextCommand::Resolve => Call::new(ContextResolveInput {}).send(global),
        ContextCommand::Build(args) => retrieval::build(args, global),
    }
}

fn show() -> CliResult<Response> {
    let request_id = RequestId::generate();
    let (context, source) = require_context("context show").map_err(|e| e.at(request_id.clone()))?;
    let mut response = success(request_id, &context)?;
    response.context = Some(ResolvedContext::new(&context, source, Horizon::Ambient));
    Ok(response)
}

fn explain() -> CliResult<Response> {
    let request_id = RequestId::generate();
    let explained =
        local_inputs().and_then(|(paths, cwd)| Ok(ambient::explain(&env_lookup, &cwd, &paths.config_file)?));
    let explanation = explained.map_err(|e| e.at(request_id.clone()))?;
    Ok(Response::success(request_id, explanation.to_json()))
}

pub(crate) fn session(args: SessionArgs, global: &GlobalArgs) -> Outcome {
    let request_id = RequestId::generate();
    match exec(args, global) {
        Ok(code) => Outcome::Exit(code),
        Err(error) => Outcome::from(Response::failure(request_id, error.error_body())),
    }
}

/// Runs the command of `session exec` and returns its exit status.
fn exec(args: SessionArgs, global: &GlobalArgs) -> Result<ExitCode, CliError> {
    let SessionCommand::Exec(args) = args.command;
    let (context, _) = require_context("session exec")?;
    let context = ambient::session_context_for_task(&context, &args.task)?;
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut child = std::process::Command::new(program);
    child
        .args(rest)
        .env(SESSION_ENV, ambient::encode_session_context(&context));
    if let Some(endpoint) = &global.endpoint {
        let endpoint = Endpoint::parse(endpoint).map_err(|e| CliError::Config(e.to_string()))?;
        child.env("MEMOREE_ENDPOINT", endpoint.to_string());
    }
    if global.no_autostart {
        child.env("MEMOREE_NO_AUTOSTART", "true");
    }
    let status = child
        .status()
        .map_err(|e| CliError::io(format_args!("failed to run {}", program.to_string_lossy()), e))?;
    // A child killed by a signal has no code; report a plain failure.
    Ok(ExitCode::from(
        status.code().and_then(|code| u8::try_from(code).ok()).unwrap_or(1),
    ))
}

fn env_lookup(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The resolved paths and the working directory, the inputs of local resolution.
fn local_inputs() -> Result<(Paths, PathBuf), CliError> {
    let paths = Paths::from_env()?;
    let cwd = std::env::current_dir().map_err(|e| CliError::io("cannot read the working directory", e))?;
    Ok((paths, cwd))
}

/// Resolves the ambient context the way every daemon-backed command does (session, then
/// marker, then personal fallback).
pub(crate) fn resolve_ambient() -> Result<Resolution, CliError> {
    let (paths, cwd) = local_inputs()?;
    Ok(ambient::resolve(None, &env_lookup, &cwd, &paths.config_file)?)
}

/// The resolved context, or `NO_AMBIENT_CONTEXT` naming `what` needed it.
pub(crate) fn require_context(what: &'static str) -> Result<(AmbientContext, ContextSource), CliError> {
    let resolution = resolve_ambient()?;
    match resolution.context {
        Some(context) => Ok((context, resolution.source)),
        None => Err(ServiceError::NoAmbientContext(what).into()),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn exec_command(args: &[&str]) -> Vec<String> {
        let cli = Cli::try_parse_from(["memoree", "session", "exec"].iter().chain(args))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let Command::Session(SessionArgs {
            command: SessionCommand::Exec(exec),
        }) = cli.command
        else {
            panic!("{args:?} did not parse as session exec");
        };
        exec.command.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn session_exec_takes_the_command_with_or_without_a_double_dash() {
        assert_eq!(exec_command(&["--task", "t", "true"]), ["true"]);
        assert_eq!(exec_command(&["--task", "t", "--", "true"]), ["true"]);
        assert_eq!(
            exec_command(&["--task", "t", "sh", "-c", "echo --task x"]),
            ["sh", "-c", "echo --task x"]
        );
        // Flags after the command belong to the command, even memoree's own.
        assert_eq!(
            exec_command(&["--task", "t", "codex", "--task", "b", "--pretty", "-x"]),
            ["codex", "--task", "b", "--pretty", "-x"]
        );
        // A nested session keeps its own `--`.
        assert_eq!(
            exec_command(&[
                "--task", "a", "--", "memoree", "session", "exec", "--task", "b", "--", "cmd"
            ]),
            ["memoree", "session", "exec", "--task", "b", "--", "cmd"]
        );
        assert_eq!(
            exec_command(&["--task", "a", "memoree", "session", "exec", "--task", "b", "--", "cmd"]),
            ["memoree", "session", "exec", "--task", "b", "--", "cmd"]
        );
        assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t"]).is_err());
        assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t", "--"]).is_err());
        assert!(Cli::try_parse_from(["memoree", "session", "exec", "true"]).is_err());
    }
}
