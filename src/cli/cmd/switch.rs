//! Switching to Memoree: `memoree import --from FORMAT PATH…` (the flags live here, on the
//! `import` command of `portable.rs`), `memoree setup HOST`, `memoree completions SHELL` and
//! `memoree man`.
//!
//! The import reads with [`crate::import_tools`] and writes through one kept-alive connection
//! to the daemon (autostarted like every other command). The envelope is `ok` whenever the
//! daemon was reachable; the exit status is [`SKIPPED_EXIT`] when anything was skipped.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, ValueEnum};

use crate::cli::error::{CliError, CliResult};
use crate::cli::request::actor_from_env;
use crate::cli::{Cli, GlobalArgs, Outcome, output, transport};
use crate::import_tools::{self, Format, MarkdownClaims, ReadOptions, driver};
use crate::progress::Progress;
use crate::protocol::{AmbientContext, ContextSource, Operation, RequestId, Response};

/// The exit status of an import that skipped malformed or unresolved items (its envelope is
/// `ok` and lists them under `issues` and `unresolved`).
pub const SKIPPED_EXIT: u8 = 8;

/// Connections an import writes over at once: below the daemon's limit of four
/// (`protocol::limits::MAX_CONCURRENT_CONNECTIONS`), so other clients still get in, and
/// enough for its group commit to batch the import's writes.
const IMPORT_CONNECTIONS: usize = 3;

/// The flags of `memoree import --from`.
#[derive(Debug, Args)]
pub struct FromArgs {
    /// Import files of another tool instead of an archive: markdown, mcp-memory, mem0 or
    /// basic-memory.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with_all = ["into_empty", "merge", "data_dir", "store"])]
    pub(crate) from: Option<Format>,
    /// Markdown: also assert one quoted claim per list item (`bullets`) or heading section
    /// (`headings`), each citing its byte span.
    #[arg(long, value_enum, requires = "from")]
    claims: Option<MarkdownClaims>,
    /// Mem0: import each memory into the project named by its `user_id` (in the target
    /// workspace).
    #[arg(long, requires = "from")]
    map_user_to_project: bool,
    /// Read and compare, write nothing: counts and the first few items.
    #[arg(long, requires = "from")]
    dry_run: bool,
    /// Import into this workspace (with --project) instead of the ambient context.
    #[arg(long, requires_all = ["from", "project"], value_name = "ID")]
    workspace: Option<String>,
    /// Import into this project instead of the ambient one (its workspace: --workspace, else
    /// the ambient workspace).
    #[arg(long, requires = "from", value_name = "ID")]
    project: Option<String>,
}

/// `memoree import --from FORMAT PATH…`: prints the summary and exits [`SKIPPED_EXIT`] when
/// anything was skipped.
pub(crate) fn import(args: FromArgs, paths: Vec<PathBuf>, global: &GlobalArgs) -> Outcome {
    match import_inner(args, paths, global) {
        Ok((response, skipped)) => {
            output::emit(&response, global.pretty);
            if skipped {
                Outcome::Exit(ExitCode::from(SKIPPED_EXIT))
            } else {
                Outcome::Exit(ExitCode::SUCCESS)
            }
        }
        Err(failure) => Outcome::from(CliResult::<Response>::Err(failure)),
    }
}

fn import_inner(args: FromArgs, paths: Vec<PathBuf>, global: &GlobalArgs) -> CliResult<(Response, bool)> {
    let request_id = RequestId::generate();
    let at = |e: CliError| e.at(request_id.clone());
    let Some(format) = args.from else {
        return Err(at(CliError::Internal("import --from without a format".to_owned())));
    };
    let (context, context_source) = target(args.workspace, args.project).map_err(at)?;
    let paths = paths
        .iter()
        .map(|p| super::portable::absolute(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(at)?;
    let read = ReadOptions {
        markdown_claims: args.claims,
        map_user_to_project: args.map_user_to_project,
    };
    let source = import_tools::read(format, &paths, &read);
    let options = driver::Options {
        format,
        sources: paths.iter().map(|p| p.display().to_string()).collect(),
        context,
        context_source,
        actor: actor_from_env().map_err(at)?,
        dry_run: args.dry_run,
    };
    let transports = (0..IMPORT_CONNECTIONS)
        .map(|_| transport::select_persistent(global))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| at(e.into()))?;
    let mut progress = Progress::new("import", source.items.len() as u64);
    let result = driver::run(&transports, source, &options, &mut progress).map_err(|failed| match failed {
        driver::Failed::Client(error) => at(error.into()),
        driver::Failed::Refused(body) => at(CliError::Envelope(Box::new(Response::failure(
            request_id.clone(),
            body,
        )))),
    })?;
    progress.finish();
    let skipped = result.skipped > 0;
    let value = serde_json::to_value(&result)
        .map_err(|e| at(CliError::Internal(format!("the result cannot be encoded: {e}"))))?;
    Ok((Response::success(request_id, value), skipped))
}

/// The scope an import writes to: --workspace/--project, else the ambient context.
fn target(workspace: Option<String>, project: Option<String>) -> Result<(AmbientContext, ContextSource), CliError> {
    match (workspace, project) {
        (Some(workspace), Some(project)) => Ok((AmbientContext::project(workspace, project), ContextSource::Explicit)),
        (None, Some(project)) => {
            let (ambient, _) = transport::resolve(Operation::ArtifactPut)?;
            Ok((
                AmbientContext::project(ambient.workspace_id, project),
                ContextSource::Explicit,
            ))
        }
        _ => transport::resolve(Operation::ArtifactPut),
    }
}

/// Print a shell completion script on stdout.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree completions bash > ~/.local/share/bash-completion/completions/memoree\n  \
                        memoree completions zsh > \"${fpath[1]}/_memoree\"\n  \
                        memoree completions fish > ~/.config/fish/completions/memoree.fish"
)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    shell: Shell,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// Print the man page (roff) on stdout.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree man > ~/.local/share/man/man1/memoree.1")]
pub struct ManArgs {}

/// `memoree completions SHELL`: the script, not an envelope.
pub(crate) fn completions(args: &CompletionsArgs) -> ExitCode {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Powershell => S::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "memoree", &mut script);
    output::emit_text(&String::from_utf8_lossy(&script));
    ExitCode::SUCCESS
}

/// `memoree man`: the roff page, not an envelope.
pub(crate) fn man(_args: &ManArgs) -> ExitCode {
    let mut page = Vec::new();
    match clap_mangen::Man::new(Cli::command()).render(&mut page) {
        Ok(()) => {
            output::emit_text(&String::from_utf8_lossy(&page));
            ExitCode::SUCCESS
        }
        Err(e) => {
            let failure = CliError::io("rendering the man page", e).at(crate::protocol::CLI_REQUEST_ID);
            output::emit(&failure.into_response(), false);
            ExitCode::from(1)
        }
    }
}
