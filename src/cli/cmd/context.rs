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
use serde_json::json;

use super::retrieval::{self, BuildArgs};
use crate::ambient::{self, AmbientError, Resolution, SESSION_ENV};
use crate::cli::request::{Call, new_request_id};
use crate::cli::{GlobalArgs, Outcome};
use crate::paths::{Endpoint, Paths};
use crate::protocol::{
    AmbientContext, ContextSource, ErrorBody, ErrorCode, Horizon, Operation, ResolvedContext, Response,
};
use crate::service::{ServiceError, error_body};

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

pub(crate) fn init(args: &InitArgs) -> Response {
    let request_id = new_request_id();
    match ambient::init_marker(&args.directory, args.name.as_deref(), args.workspace.as_deref()) {
        Ok(outcome) => Response::success(
            request_id,
            json!({
                "marker": outcome.marker.display().to_string(),
                "context": outcome.context,
                "created": true,
            }),
        ),
        Err(error) => Response::failure(request_id, ambient_error(&error)),
    }
}

pub(crate) fn run(args: ContextArgs, global: &GlobalArgs) -> Response {
    match args.command {
        ContextCommand::Show => show(),
        ContextCommand::Explain => explain(),
        ContextCommand::Resolve => Call::new(Operation::ContextResolve, json!({})).send(global),
        ContextCommand::Build(args) => retrieval::build(args, global),
    }
}

fn show() -> Response {
    let request_id = new_request_id();
    match require_context("context show") {
        Ok((context, source)) => {
            let mut response = Response::success(request_id, json!(context));
            response.context = Some(ResolvedContext::new(&context, source, Horizon::Ambient));
            response
        }
        Err(body) => Response::failure(request_id, body),
    }
}

fn explain() -> Response {
    let request_id = new_request_id();
    let explained = local_inputs().and_then(|(paths, cwd)| {
        ambient::explain(&env_lookup, &cwd, &paths.config_file).map_err(|e| ambient_error(&e))
    });
    match explained {
        Ok(explanation) => Response::success(request_id, explanation.to_json()),
        Err(body) => Response::failure(request_id, body),
    }
}

pub(crate) fn session(args: SessionArgs, global: &GlobalArgs) -> Outcome {
    let SessionCommand::Exec(args) = args.command;
    let request_id = new_request_id();
    let fail = |body: ErrorBody| Outcome::from(Response::failure(&request_id, body));
    let context = match require_context("session exec")
        .and_then(|(context, _)| ambient::session_context_for_task(&context, &args.task).map_err(|e| ambient_error(&e)))
    {
        Ok(context) => context,
        Err(body) => return fail(body),
    };
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut child = std::process::Command::new(program);
    child
        .args(rest)
        .env(SESSION_ENV, ambient::encode_session_context(&context));
    if let Some(endpoint) = &global.endpoint {
        match Endpoint::parse(endpoint) {
            Ok(endpoint) => child.env("MEMOREE_ENDPOINT", endpoint.to_string()),
            Err(e) => return fail(ErrorBody::new(e.code(), format!("configuration error: {e}"))),
        };
    }
    if global.no_autostart {
        child.env("MEMOREE_NO_AUTOSTART", "true");
    }
    match child.status() {
        // A child killed by a signal has no code; report a plain failure.
        Ok(status) => Outcome::Exit(ExitCode::from(
            status.code().and_then(|code| u8::try_from(code).ok()).unwrap_or(1),
        )),
        Err(e) => fail(ErrorBody::new(
            ErrorCode::InternalError,
            format!("I/O error: failed to run {}: {e}", program.to_string_lossy()),
        )),
    }
}

fn env_lookup(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The resolved paths and the working directory, the inputs of local resolution.
fn local_inputs() -> Result<(Paths, PathBuf), ErrorBody> {
    let paths = Paths::from_env().map_err(|e| ErrorBody::new(e.code(), e.to_string()))?;
    let cwd = std::env::current_dir().map_err(|e| {
        ErrorBody::new(
            ErrorCode::InternalError,
            format!("I/O error: cannot read the working directory: {e}"),
        )
    })?;
    Ok((paths, cwd))
}

/// Resolves the ambient context the way every daemon-backed command does (session, then
/// marker, then personal fallback).
pub(crate) fn resolve_ambient() -> Result<Resolution, ErrorBody> {
    let (paths, cwd) = local_inputs()?;
    ambient::resolve(None, &env_lookup, &cwd, &paths.config_file).map_err(|e| ambient_error(&e))
}

/// The resolved context, or `NO_AMBIENT_CONTEXT` naming `what` needed it.
pub(crate) fn require_context(what: &'static str) -> Result<(AmbientContext, ContextSource), ErrorBody> {
    let resolution = resolve_ambient()?;
    match resolution.context {
        Some(context) => Ok((context, resolution.source)),
        None => Err(error_body(&ServiceError::NoAmbientContext(what))),
    }
}

/// The error body for an ambient failure; the message is the error's complete text.
pub(crate) fn ambient_error(error: &AmbientError) -> ErrorBody {
    ErrorBody::new(error.code(), error.to_string())
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
