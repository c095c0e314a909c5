//! The clap surface: parses arguments, builds requests, sends them through a transport and
//! prints exactly one envelope. Usage errors print clap's text on stderr with exit 2 and
//! leave stdout empty.

mod call;
mod daemon_cmd;
mod demo;
pub mod exit;
pub mod output;
mod serve;
mod transport;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::protocol::{CLI_REQUEST_ID, ErrorBody, ErrorCode, Response};

/// Memoree: durable, cited, scoped memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "memoree", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted by every command.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Daemon endpoint (`unix://PATH` or `tcp://IP:PORT`); disables autostart.
    #[arg(long, global = true, env = "MEMOREE_ENDPOINT")]
    pub endpoint: Option<String>,
    /// Pretty-print the JSON envelope (2-space indentation).
    #[arg(long, global = true)]
    pub pretty: bool,
    /// Never start a daemon automatically.
    #[arg(long, global = true, env = "MEMOREE_NO_AUTOSTART")]
    pub no_autostart: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read exactly one JSON request on stdin and write exactly one envelope on stdout.
    ///
    /// Example: echo '{"request_id":"r1","op":"capabilities","input":{}}' | memoree call
    Call,
    /// Run an end-to-end session in a throw-away home and print what happened.
    ///
    /// Example: memoree demo --pretty
    Demo,
    /// Run the daemon in the foreground until SIGINT or SIGTERM.
    ///
    /// Example: memoree serve --listen tcp://127.0.0.1:17878
    Serve(serve::ServeArgs),
    /// Show, stop or restart the local daemon.
    ///
    /// Example: memoree daemon status
    Daemon {
        #[command(subcommand)]
        command: daemon_cmd::DaemonCommand,
    },
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    init_logging();
    match Cli::try_parse() {
        Ok(cli) => run(cli),
        Err(error) => {
            use clap::error::ErrorKind;
            match error.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    output::emit_text(&error.render().to_string());
                    ExitCode::SUCCESS
                }
                _ => {
                    let _ = error.print();
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let response = match cli.command {
        Command::Call => call::run(&cli.global),
        Command::Demo => demo::run(),
        Command::Serve(args) => return serve::run(&args, cli.global.pretty),
        Command::Daemon { command } => return daemon_cmd::run(&cli.global, command),
    };
    output::emit(&response, cli.global.pretty);
    exit::for_response(&response)
}

/// Logs go to stderr only; `RUST_LOG` overrides the default `memoree=warn`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("memoree=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// A CLI-side failure before any request existed.
pub(crate) fn cli_failure(code: ErrorCode, message: impl Into<String>) -> Response {
    Response::failure(CLI_REQUEST_ID, ErrorBody::new(code, message))
}
