//! `memoree claim assert|get|revise|retract|history` (and `purge`, in `portable.rs`).
//!
//! Statements are the trailing words joined with single spaces. `--evidence` takes
//! `ARTIFACT_ID@REVISION_ID[#START-END]` (see [`crate::cli::evidence`]) and may repeat.

use clap::{Args, Subcommand};

use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::evidence::parse_locator;
use crate::cli::request::{Call, actor_from_env};
use crate::protocol::Response;
use crate::protocol::claim::{
    ClaimAssertInput, ClaimGetInput, ClaimHistoryInput, ClaimRetractInput, ClaimReviseInput, ClaimType, EvidenceLocator,
};

/// Assert, read, revise and retract claims (typed statements citing exact evidence).
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  memoree claim assert decision 'SQLite is authoritative' --evidence art_01J...@arev_01J...#0-42"
)]
pub struct ClaimArgs {
    #[command(subcommand)]
    command: ClaimCommand,
}

#[derive(Debug, Subcommand)]
enum ClaimCommand {
    Assert(AssertArgs),
    Get(GetArgs),
    Revise(ReviseArgs),
    Retract(RetractArgs),
    History(HistoryArgs),
    Purge(super::portable::ClaimPurgeArgs),
}

/// Evidence and confidence flags shared by assert and revise.
#[derive(Debug, Args)]
struct SupportFlags {
    /// Confidence between 0 and 1.
    #[arg(long)]
    confidence: Option<f64>,
    /// Evidence locator ARTIFACT_ID@REVISION_ID[#START-END]; repeat for several.
    #[arg(long, value_name = "LOCATOR")]
    evidence: Vec<String>,
}

impl SupportFlags {
    /// The confidence (refused here when not finite: JSON cannot carry it) and the parsed
    /// locators.
    fn parse(&self) -> Result<(Option<f64>, Vec<EvidenceLocator>), CliError> {
        if self.confidence.is_some_and(|c| !c.is_finite()) {
            return Err(CliError::Invalid(
                "confidence must be a finite number between 0 and 1".to_owned(),
            ));
        }
        let evidence = self
            .evidence
            .iter()
            .map(|text| parse_locator(text))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((self.confidence, evidence))
    }
}

/// Assert a new claim in the ambient scope.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  memoree claim assert constraint Requests are capped at 24 MiB \\\n    \
                        --evidence art_01J...@arev_01J...#120-168 --confidence 0.9"
)]
struct AssertArgs {
    /// The claim type.
    #[arg(value_enum)]
    claim_type: ClaimType,
    /// The statement (words are joined with single spaces).
    #[arg(required = true)]
    statement: Vec<String>,
    #[command(flatten)]
    support: SupportFlags,
    /// Start of validity (RFC 3339).
    #[arg(long)]
    valid_from: Option<String>,
    /// End of validity, exclusive (RFC 3339).
    #[arg(long)]
    valid_until: Option<String>,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// Read a claim revision (the current one by default).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree claim get clm_01J... --revision crev_01J...")]
struct GetArgs {
    claim_id: String,
    /// An exact revision id.
    #[arg(long)]
    revision: Option<String>,
}

/// Replace a claim's statement, evidence and confidence (omitted ones are cleared).
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  memoree claim revise clm_01J... Requests are capped at 32 MiB --if-revision crev_01J..."
)]
struct ReviseArgs {
    claim_id: String,
    /// The new statement.
    #[arg(required = true)]
    statement: Vec<String>,
    /// The revision you read; a different current revision is REVISION_CONFLICT.
    #[arg(long)]
    if_revision: String,
    #[command(flatten)]
    support: SupportFlags,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// Retract a claim: it is no longer believed.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree claim retract clm_01J... --reason 'measured again: wrong'")]
struct RetractArgs {
    claim_id: String,
    /// Why it is retracted.
    #[arg(long)]
    reason: String,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// List a claim's revisions, newest first.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree claim history clm_01J... --limit 5")]
struct HistoryArgs {
    claim_id: String,
    /// Revisions per page (1 to 100).
    #[arg(long, default_value_t = 50)]
    limit: i64,
    /// Exclusive cursor: only revisions numbered below this.
    #[arg(long)]
    before_revision_number: Option<i64>,
}

pub(crate) fn run(args: ClaimArgs, global: &GlobalArgs) -> CliResult<Response> {
    match args.command {
        ClaimCommand::Assert(args) => assert(args, global),
        ClaimCommand::Get(args) => get(args, global),
        ClaimCommand::Revise(args) => revise(args, global),
        ClaimCommand::Retract(args) => retract(args, global),
        ClaimCommand::History(args) => history(args, global),
        ClaimCommand::Purge(args) => super::portable::claim_purge(args, global),
    }
}

fn assert(args: AssertArgs, global: &GlobalArgs) -> CliResult<Response> {
    let (confidence, evidence) = args.support.parse()?;
    let input = ClaimAssertInput {
        claim_type: args.claim_type,
        statement: args.statement.join(" "),
        confidence,
        evidence,
        valid_from: args.valid_from,
        valid_until: args.valid_until,
        actor: actor_from_env()?,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn get(args: GetArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ClaimGetInput {
        claim_id: args.claim_id.into(),
        revision_id: args.revision.map(Into::into),
    };
    Call::new(input).send(global)
}

fn revise(args: ReviseArgs, global: &GlobalArgs) -> CliResult<Response> {
    let (confidence, evidence) = args.support.parse()?;
    let input = ClaimReviseInput {
        claim_id: args.claim_id.into(),
        if_revision: args.if_revision.into(),
        statement: args.statement.join(" "),
        confidence,
        evidence,
        actor: actor_from_env()?,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn retract(args: RetractArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ClaimRetractInput {
        claim_id: args.claim_id.into(),
        reason: args.reason,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn history(args: HistoryArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ClaimHistoryInput {
        claim_id: args.claim_id.into(),
        limit: args.limit,
        before_revision_number: args.before_revision_number,
    };
    Call::new(input).send(global)
}
