//! `memoree search`, `memoree recall`, `memoree retrieve`, `memoree probe` and `memoree
//! context build`: the retrieval wrappers. Query words are joined with single spaces;
//! `--no-recency` turns the bounded recency rerank off for one request. Each sends the
//! ambient context like every horizon read.

use clap::Args;

use super::HorizonFlags;
use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::protocol::Response;
use crate::protocol::agent::{
    MAX_PROBE_LEADS, MAX_RETRIEVE_EVIDENCE_BYTES, MAX_RETRIEVE_LEADS, ProbeInput, RetrieveInput,
};
use crate::protocol::retrieval::{ContextBuildInput, RecallInput, RecencyInput, SearchInput};

/// Flags every retrieval wrapper shares besides the horizon.
#[derive(Debug, Args)]
struct Freshness {
    /// Fail with INDEX_NOT_READY unless the store has reached this commit sequence.
    #[arg(long)]
    min_commit_seq: Option<i64>,
    /// Rank by lexical score only (no bounded recency rerank).
    #[arg(long)]
    no_recency: bool,
}

impl Freshness {
    fn recency(&self) -> RecencyInput {
        RecencyInput {
            enabled: !self.no_recency,
        }
    }
}

/// The bounds of recall's qualified answer, shared by `recall` and `retrieve`.
#[derive(Debug, Args)]
struct RecallBounds {
    /// Maximum claims (1 to 10).
    #[arg(long, default_value_t = 5)]
    max_claims: i64,
    /// Maximum artifact references (1 to 20).
    #[arg(long, default_value_t = 3)]
    max_artifact_refs: i64,
    /// Byte cap per excerpt (1 to 1024).
    #[arg(long, default_value_t = 320)]
    max_excerpt_bytes: i64,
}

/// Full-text search over artifacts and claims in the ambient scope.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree search storage engine --limit 5\n  \
                        memoree search retry policy --horizon workspace --reason 'team-wide convention'")]
pub struct SearchArgs {
    /// The query words.
    #[arg(required = true)]
    query: Vec<String>,
    #[command(flatten)]
    horizon: HorizonFlags,
    /// Maximum hits (1 to 100).
    #[arg(long, default_value_t = 10)]
    limit: i64,
    /// Also return old revisions and terminal, future or expired claims.
    #[arg(long)]
    include_historical: bool,
    #[command(flatten)]
    freshness: Freshness,
}

/// Recall current claims (with evidence) and artifact references for a question.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree recall how are requests framed --max-claims 3")]
pub struct RecallArgs {
    /// The query words.
    #[arg(required = true)]
    query: Vec<String>,
    #[command(flatten)]
    horizon: HorizonFlags,
    #[command(flatten)]
    bounds: RecallBounds,
    /// Unqualified claim candidates to show apart from the claims (0 to 16; suggestions only).
    #[arg(long, default_value_t = 0)]
    max_candidate_claims: i64,
    /// Unqualified artifact candidates to show apart from the references (0 to 16).
    #[arg(long, default_value_t = 0)]
    max_candidate_artifact_refs: i64,
    #[command(flatten)]
    freshness: Freshness,
}

/// Recall, plus exact unqualified evidence to check when no claim qualified (never an answer).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree retrieve how are requests framed\n  \
                        memoree retrieve why did the deploy fail --reformulation 'deploy failure cause' --max-recovery-bytes 4096")]
pub struct RetrieveArgs {
    /// The query words (the question; only these qualify an answer).
    #[arg(required = true)]
    query: Vec<String>,
    /// One rewording of the question that routes recovery only (never qualifies).
    #[arg(long)]
    reformulation: Option<String>,
    #[command(flatten)]
    horizon: HorizonFlags,
    #[command(flatten)]
    bounds: RecallBounds,
    /// Leads recovery follows (1 to 8).
    #[arg(long, default_value_t = MAX_RETRIEVE_LEADS)]
    max_recovery_leads: i64,
    /// Byte budget of the recovery evidence (1 to 12288).
    #[arg(long, default_value_t = MAX_RETRIEVE_EVIDENCE_BYTES)]
    max_recovery_bytes: i64,
    #[command(flatten)]
    freshness: Freshness,
    /// Add stage durations and counts (never content).
    #[arg(long)]
    profile: bool,
}

/// Leads to the unqualified candidates of a query: titles and exact citations, no content.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree probe deploy failure cause\n  \
                        memoree probe deploy failure cause --original-query 'why did the deploy fail' --max-leads 4")]
pub struct ProbeArgs {
    /// The query words the candidates are routed by.
    #[arg(required = true)]
    query: Vec<String>,
    /// The question the query rewords, when it does.
    #[arg(long)]
    original_query: Option<String>,
    #[command(flatten)]
    horizon: HorizonFlags,
    /// Maximum leads (1 to 8).
    #[arg(long, default_value_t = MAX_PROBE_LEADS)]
    max_leads: i64,
    #[command(flatten)]
    freshness: Freshness,
}

/// Render retrieved material as Markdown within an exact byte budget.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree context build storage design --max-bytes 4096")]
pub struct BuildArgs {
    /// The query words.
    #[arg(required = true)]
    query: Vec<String>,
    #[command(flatten)]
    horizon: HorizonFlags,
    /// Maximum hits considered (1 to 100).
    #[arg(long, default_value_t = 10)]
    limit: i64,
    /// Byte budget of the rendered Markdown.
    #[arg(long, default_value_t = 16384)]
    max_bytes: i64,
    /// Also consider old revisions and terminal, future or expired claims.
    #[arg(long)]
    include_historical: bool,
    #[command(flatten)]
    freshness: Freshness,
}

pub(crate) fn search(args: SearchArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = SearchInput {
        query: args.query.join(" "),
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        limit: args.limit,
        include_historical: args.include_historical,
        min_commit_seq: args.freshness.min_commit_seq,
        recency: args.freshness.recency(),
    };
    Call::new(input).send(global)
}

pub(crate) fn recall(args: RecallArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = RecallInput {
        query: args.query.join(" "),
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        max_claims: args.bounds.max_claims,
        max_artifact_refs: args.bounds.max_artifact_refs,
        max_excerpt_bytes: args.bounds.max_excerpt_bytes,
        min_commit_seq: args.freshness.min_commit_seq,
        recency: args.freshness.recency(),
        max_candidate_claims: args.max_candidate_claims,
        max_candidate_artifact_refs: args.max_candidate_artifact_refs,
    };
    Call::new(input).send(global)
}

pub(crate) fn retrieve(args: RetrieveArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = RetrieveInput {
        query: args.query.join(" "),
        reformulation: args.reformulation,
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        max_claims: args.bounds.max_claims,
        max_artifact_refs: args.bounds.max_artifact_refs,
        max_excerpt_bytes: args.bounds.max_excerpt_bytes,
        max_recovery_leads: args.max_recovery_leads,
        max_recovery_bytes: args.max_recovery_bytes,
        min_commit_seq: args.freshness.min_commit_seq,
        recency: args.freshness.recency(),
        profile: args.profile,
    };
    Call::new(input).send(global)
}

pub(crate) fn probe(args: ProbeArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ProbeInput {
        query: args.query.join(" "),
        original_query: args.original_query,
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        max_leads: args.max_leads,
        min_commit_seq: args.freshness.min_commit_seq,
        recency: args.freshness.recency(),
    };
    Call::new(input).send(global)
}

pub(crate) fn build(args: BuildArgs, global: &GlobalArgs) -> CliResult<Response> {
    let max_bytes = u64::try_from(args.max_bytes).map_err(|_| {
        CliError::Invalid(format!(
            "invalid input for context.build: max_bytes: {} is less than the minimum of 0",
            args.max_bytes
        ))
    })?;
    let input = ContextBuildInput {
        query: args.query.join(" "),
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        limit: args.limit,
        include_historical: args.include_historical,
        min_commit_seq: args.freshness.min_commit_seq,
        recency: args.freshness.recency(),
        max_bytes,
    };
    Call::new(input).send(global)
}
