//! `memoree claim assert|get|revise|retract|history` (and `purge`, in `portable.rs`).
//!
//! Statements are the trailing words joined with single spaces. `--evidence` takes
//! `ARTIFACT_ID@REVISION_ID[#START-END]` (see [`crate::cli::evidence`]) and may repeat.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};

use crate::cli::GlobalArgs;
use crate::cli::evidence::parse_locator;
use crate::cli::request::{Call, insert_actor, insert_opt, invalid, settle};
use crate::protocol::claim::ClaimType;
use crate::protocol::{Operation, Response};

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

/// The six claim types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ClaimTypeArg {
    Fact,
    Decision,
    Constraint,
    Preference,
    Procedure,
    Observation,
}

impl ClaimTypeArg {
    fn wire(self) -> ClaimType {
        match self {
            ClaimTypeArg::Fact => ClaimType::Fact,
            ClaimTypeArg::Decision => ClaimType::Decision,
            ClaimTypeArg::Constraint => ClaimType::Constraint,
            ClaimTypeArg::Preference => ClaimType::Preference,
            ClaimTypeArg::Procedure => ClaimType::Procedure,
            ClaimTypeArg::Observation => ClaimType::Observation,
        }
    }
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
    fn insert_into(&self, input: &mut Map<String, Value>) -> Result<(), Response> {
        if let Some(confidence) = self.confidence {
            if !confidence.is_finite() {
                return Err(invalid("confidence must be a finite number between 0 and 1"));
            }
            input.insert("confidence".to_owned(), json!(confidence));
        }
        let evidence = self
            .evidence
            .iter()
            .map(|text| parse_locator(text).map_err(invalid))
            .collect::<Result<Vec<_>, _>>()?;
        input.insert("evidence".to_owned(), json!(evidence));
        Ok(())
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
    claim_type: ClaimTypeArg,
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

pub(crate) fn run(args: ClaimArgs, global: &GlobalArgs) -> Response {
    settle(match args.command {
        ClaimCommand::Assert(args) => assert(args, global),
        ClaimCommand::Get(args) => Ok(get(args, global)),
        ClaimCommand::Revise(args) => revise(args, global),
        ClaimCommand::Retract(args) => Ok(retract(args, global)),
        ClaimCommand::History(args) => Ok(history(args, global)),
        ClaimCommand::Purge(args) => Ok(super::portable::claim_purge(args, global)),
    })
}

fn assert(args: AssertArgs, global: &GlobalArgs) -> Result<Response, Response> {
    let mut input = Map::new();
    input.insert("claim_type".to_owned(), Value::from(args.claim_type.wire().as_str()));
    input.insert("statement".to_owned(), Value::from(args.statement.join(" ")));
    args.support.insert_into(&mut input)?;
    insert_opt(&mut input, "valid_from", args.valid_from);
    insert_opt(&mut input, "valid_until", args.valid_until);
    insert_actor(&mut input)?;
    Ok(Call::new(Operation::ClaimAssert, input)
        .idempotency_key(args.idempotency_key)
        .send(global))
}

fn get(args: GetArgs, global: &GlobalArgs) -> Response {
    let mut input = Map::new();
    input.insert("claim_id".to_owned(), Value::from(args.claim_id));
    insert_opt(&mut input, "revision_id", args.revision);
    Call::new(Operation::ClaimGet, input).send(global)
}

fn revise(args: ReviseArgs, global: &GlobalArgs) -> Result<Response, Response> {
    let mut input = Map::new();
    input.insert("claim_id".to_owned(), Value::from(args.claim_id));
    input.insert("if_revision".to_owned(), Value::from(args.if_revision));
    input.insert("statement".to_owned(), Value::from(args.statement.join(" ")));
    args.support.insert_into(&mut input)?;
    insert_actor(&mut input)?;
    Ok(Call::new(Operation::ClaimRevise, input)
        .idempotency_key(args.idempotency_key)
        .send(global))
}

fn retract(args: RetractArgs, global: &GlobalArgs) -> Response {
    let input = json!({"claim_id": args.claim_id, "reason": args.reason});
    Call::new(Operation::ClaimRetract, input)
        .idempotency_key(args.idempotency_key)
        .send(global)
}

fn history(args: HistoryArgs, global: &GlobalArgs) -> Response {
    let mut input = Map::new();
    input.insert("claim_id".to_owned(), Value::from(args.claim_id));
    input.insert("limit".to_owned(), Value::from(args.limit));
    insert_opt(&mut input, "before_revision_number", args.before_revision_number);
    Call::new(Operation::ClaimHistory, input).send(global)
}
