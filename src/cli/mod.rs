//! The clap surface: parses arguments, builds requests, sends them through a transport and
//! prints exactly one envelope. Usage errors print clap's text on stderr with exit 2 and
//! leave stdout empty; `session exec` is the one command that prints nothing itself.
//!
//! One file per command family lives in `cmd/`; `request.rs` builds and sends the typed
//! requests of the human wrappers; `evidence.rs` parses `--evidence` locators; `error.rs`
//! is the one place a failure becomes an envelope.

mod call;
mod cmd;
mod daemon_cmd;
mod demo;
pub mod error;
mod eval;
pub mod evidence;
pub mod exit;
mod inspect;
mod mcp;
pub mod output;
mod request;
mod serve;
mod store_url;
mod transport;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use self::error::CliResult;
use crate::protocol::Response;

/// Memoree: durable, cited, scoped memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "memoree", version, about, long_about = None)]
#[command(after_help = "Example:\n  memoree init && memoree artifact put notes.md --kind design --pretty")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted by every command.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Daemon endpoint (`unix://PATH`, `tcp://IP:PORT` or `tls://HOST:PORT` with the
    /// `MEMOREE_TLS_*` / `[tls]` credentials); disables autostart.
    #[arg(long, global = true, env = "MEMOREE_ENDPOINT")]
    pub endpoint: Option<String>,
    /// Pretty-print the JSON envelope (2-space indentation).
    #[arg(long, global = true)]
    pub pretty: bool,
    /// Never start a daemon automatically.
    #[arg(long, global = true, env = "MEMOREE_NO_AUTOSTART")]
    pub no_autostart: bool,
}

/// Every top-level command. Each variant's help text and example live on its argument type
/// in `cmd/`.
#[derive(Debug, Subcommand)]
pub enum Command {
    Init(cmd::context::InitArgs),
    Context(cmd::context::ContextArgs),
    Session(cmd::context::SessionArgs),
    /// Read exactly one JSON request on stdin and write exactly one envelope on stdout.
    #[command(
        after_help = "Example:\n  echo '{\"request_id\":\"r1\",\"op\":\"capabilities\",\"input\":{}}' | memoree call"
    )]
    Call,
    Artifact(cmd::artifact::ArtifactArgs),
    Citation(cmd::citation::CitationArgs),
    Claim(cmd::claim::ClaimArgs),
    Link(cmd::graph::LinkArgs),
    Relation(cmd::graph::RelationArgs),
    Conflict(cmd::graph::ConflictArgs),
    Search(cmd::retrieval::SearchArgs),
    Recall(cmd::retrieval::RecallArgs),
    Retrieve(cmd::retrieval::RetrieveArgs),
    Probe(cmd::retrieval::ProbeArgs),
    Remember(cmd::remember::RememberArgs),
    Checkpoint(cmd::checkpoint::CheckpointArgs),
    Pending(cmd::checkpoint::PendingArgs),
    Capabilities(cmd::admin::CapabilitiesArgs),
    Instructions(cmd::admin::InstructionsArgs),
    Schema(cmd::admin::SchemaArgs),
    Doctor(cmd::admin::DoctorArgs),
    Verify(cmd::admin::VerifyArgs),
    Reindex(cmd::admin::ReindexArgs),
    Backup(cmd::admin::BackupArgs),
    Export(cmd::portable::ExportArgs),
    Import(cmd::portable::ImportArgs),
    /// Run an end-to-end session in a throw-away home and print what happened.
    #[command(after_help = "Example:\n  memoree demo --pretty")]
    Demo,
    Eval(eval::EvalArgs),
    Semantic(cmd::semantic::SemanticArgs),
    /// Run the daemon in the foreground until SIGINT or SIGTERM.
    #[command(after_help = "Example:\n  memoree serve --listen tcp://127.0.0.1:17878")]
    Serve(serve::ServeArgs),
    Inspect(inspect::InspectArgs),
    /// Show, stop or restart the local daemon.
    #[command(after_help = "Example:\n  memoree daemon status")]
    Daemon {
        #[command(subcommand)]
        command: daemon_cmd::DaemonCommand,
    },
    Mcp(mcp::McpArgs),
    Setup(cmd::setup::SetupArgs),
    Completions(cmd::switch::CompletionsArgs),
    Man(cmd::switch::ManArgs),
}

/// What a command produced: one envelope to print, or (for `session exec`) only an exit
/// status because the child process owned stdout.
pub(crate) enum Outcome {
    Envelope(Box<Response>),
    Exit(ExitCode),
}

impl From<Response> for Outcome {
    fn from(response: Response) -> Outcome {
        Outcome::Envelope(Box::new(response))
    }
}

impl From<CliResult<Response>> for Outcome {
    /// A failure becomes its envelope here, once.
    fn from(result: CliResult<Response>) -> Outcome {
        Outcome::from(result.unwrap_or_else(|failure| failure.into_response()))
    }
}

/// `memoree serve` as autostart launches it (`serve` first), parsed without building every
/// other command's flags: a daemon then never runs, and never keeps resident, the argument
/// code of the rest of the CLI. Anything else (help, a usage error) goes to the full parser.
#[derive(Debug, Parser)]
#[command(name = "memoree")]
struct ServeOnly {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: ServeCommand,
}

#[derive(Debug, Subcommand)]
enum ServeCommand {
    Serve(serve::ServeArgs),
}

/// The flags of the `memoree-daemon` executable: `memoree serve`'s own, with no subcommand.
#[derive(Debug, Parser)]
#[command(
    name = "memoree-daemon",
    version,
    about = "The Memoree daemon in the foreground until SIGINT or SIGTERM (what `memoree serve` runs; autostart launches it)."
)]
#[command(after_help = "Example:\n  memoree-daemon --listen tcp://127.0.0.1:17878")]
struct DaemonOnly {
    #[command(flatten)]
    serve: serve::ServeArgs,
    /// Pretty-print a startup error envelope (2-space indentation).
    #[arg(long)]
    pretty: bool,
}

/// The `memoree-daemon` executable: parses only the serve flags and runs the daemon. It
/// reaches no other command, so a release build links none of them (see `src/bin/`).
pub fn daemon_main() -> ExitCode {
    init_logging();
    match DaemonOnly::try_parse() {
        Ok(DaemonOnly { serve, pretty }) => serve::run(&serve, pretty),
        Err(error) => usage_error(error),
    }
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    init_logging();
    if std::env::args_os().nth(1).is_some_and(|arg| arg == "serve")
        && let Ok(ServeOnly {
            global,
            command: ServeCommand::Serve(args),
        }) = ServeOnly::try_parse()
    {
        return serve::run(&args, global.pretty);
    }
    match Cli::try_parse() {
        Ok(cli) => run(cli),
        Err(error) => usage_error(error),
    }
}

/// Help and version go to stdout with exit 0; a usage error is clap's text on stderr, exit 2.
fn usage_error(error: clap::Error) -> ExitCode {
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

/// Runs a parsed command line: prints its envelope (if any) and returns the exit status.
pub fn run(cli: Cli) -> ExitCode {
    let pretty = cli.global.pretty;
    match dispatch(cli) {
        Outcome::Envelope(response) => {
            output::emit(&response, pretty);
            exit::for_response(&response)
        }
        Outcome::Exit(code) => code,
    }
}

/// Runs a parsed command line without printing.
pub(crate) fn dispatch(cli: Cli) -> Outcome {
    let global = &cli.global;
    match cli.command {
        Command::Init(args) => cmd::context::init(&args).into(),
        Command::Context(args) => cmd::context::run(args, global).into(),
        Command::Session(args) => cmd::context::session(args, global),
        Command::Call => call::run(global).into(),
        Command::Artifact(args) => cmd::artifact::run(args, global).into(),
        Command::Citation(args) => cmd::citation::run(args, global).into(),
        Command::Claim(args) => cmd::claim::run(args, global).into(),
        Command::Link(args) => cmd::graph::link(args, global).into(),
        Command::Relation(args) => cmd::graph::relation(args, global).into(),
        Command::Conflict(args) => cmd::graph::conflict(args, global).into(),
        Command::Search(args) => cmd::retrieval::search(args, global).into(),
        Command::Recall(args) => cmd::retrieval::recall(args, global).into(),
        Command::Retrieve(args) => cmd::retrieval::retrieve(args, global).into(),
        Command::Probe(args) => cmd::retrieval::probe(args, global).into(),
        Command::Remember(args) => cmd::remember::run(args, global).into(),
        Command::Checkpoint(args) => cmd::checkpoint::checkpoint(args).into(),
        Command::Pending(args) => cmd::checkpoint::pending(args, global).into(),
        Command::Capabilities(_) => cmd::admin::capabilities(global).into(),
        Command::Instructions(args) => cmd::admin::instructions(args, global).into(),
        Command::Schema(_) => cmd::admin::schema(global).into(),
        Command::Doctor(_) => cmd::admin::doctor(global).into(),
        Command::Verify(_) => cmd::admin::verify(global).into(),
        Command::Reindex(_) => cmd::admin::reindex(global).into(),
        Command::Backup(args) => cmd::admin::backup(args, global).into(),
        Command::Export(args) => cmd::portable::export(args, global).into(),
        Command::Import(args) => cmd::portable::import(args, global),
        Command::Demo => demo::run().into(),
        Command::Eval(args) => Outcome::Exit(eval::run(&args, global)),
        Command::Semantic(args) => cmd::semantic::run(args).into(),
        Command::Serve(args) => Outcome::Exit(serve::run(&args, global.pretty)),
        Command::Daemon { command } => Outcome::Exit(daemon_cmd::run(global, command)),
        Command::Inspect(args) => Outcome::Exit(inspect::run(&args, global)),
        Command::Mcp(args) => Outcome::Exit(mcp::run(&args, global)),
        Command::Setup(args) => cmd::setup::run(args, global).into(),
        Command::Completions(args) => Outcome::Exit(cmd::switch::completions(&args)),
        Command::Man(args) => Outcome::Exit(cmd::switch::man(&args)),
    }
}

/// Logs go to stderr only; `RUST_LOG` overrides the default `memoree=warn`.
fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(log_filter(std::env::var("RUST_LOG").ok().as_deref()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Dependencies whose debug logs carry message content: rmcp logs every JSON-RPC request
/// and result whole (tool arguments and results are memory content, which would then outlive
/// a purge in the host's logs). They are capped at `warn` whatever `RUST_LOG` says; our own
/// debug logs name operations, ids and sizes only.
const CONTENT_LOGGING_TARGETS: &[&str] = &["rmcp"];

/// The log filter: `RUST_LOG` (else `memoree=warn`) with [`CONTENT_LOGGING_TARGETS`] capped.
fn log_filter(rust_log: Option<&str>) -> tracing_subscriber::EnvFilter {
    let mut filter = rust_log
        .and_then(|directives| tracing_subscriber::EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("memoree=warn"));
    for target in CONTENT_LOGGING_TARGETS {
        if let Ok(directive) = format!("{target}=warn").parse() {
            filter = filter.add_directive(directive);
        }
    }
    filter
}

#[cfg(test)]
mod tests;
