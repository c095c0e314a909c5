//! `memoree citation get CITATION`: the exact bytes of a cited range (`citation.get`), sent
//! without context, as exact gets are.

use clap::{Args, Subcommand};

use crate::cli::GlobalArgs;
use crate::cli::error::CliResult;
use crate::cli::request::Call;
use crate::protocol::Response;
use crate::protocol::citation::{CitationGetInput, MAX_CITATION_FETCH_BYTES};

/// Read the exact bytes a citation names (untrusted content, never an answer).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree citation get 'memoree://artifact/art_01J...@arev_01J...#120-480'")]
pub struct CitationArgs {
    #[command(subcommand)]
    command: CitationCommand,
}

#[derive(Debug, Subcommand)]
enum CitationCommand {
    Get(GetArgs),
}

/// Fetch the bytes of `memoree://artifact/ARTIFACT@REVISION#START-END`, narrowed to
/// --max-bytes at a character boundary (the result then names the narrowed range).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  memoree citation get 'memoree://artifact/art_01J...@arev_01J...#0-2048'\n  \
                        memoree citation get 'memoree://artifact/art_01J...@arev_01J...#0-2048' --max-bytes 512"
)]
struct GetArgs {
    /// The citation, exactly as a recall, search or probe result gave it.
    citation: String,
    /// The most bytes to return (4 to 8192).
    #[arg(long, default_value_t = MAX_CITATION_FETCH_BYTES)]
    max_bytes: u64,
}

pub(crate) fn run(args: CitationArgs, global: &GlobalArgs) -> CliResult<Response> {
    match args.command {
        CitationCommand::Get(args) => Call::new(CitationGetInput {
            citation: args.citation,
            max_bytes: args.max_bytes,
        })
        .send(global),
    }
}
