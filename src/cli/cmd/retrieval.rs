//! `memoree search`, `memoree recall` and `memoree context build`: the three retrieval
//! wrappers. Query words are joined with single spaces; `--no-recency` turns the bounded
//! recency rerank off for one request.

use clap::Args;
use serde_json::{Map, Value, json};

use super::HorizonFlags;
use crate::cli::GlobalArgs;
use crate::cli::request::{Call, insert_opt};
use crate::protocol::{Operation, Response};

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
    fn insert_into(&self, input: &mut Map<String, Value>) {
        insert_opt(input, "min_commit_seq", self.min_commit_seq);
        input.insert("recency".to_owned(), json!({"enabled": !self.no_recency}));
    }
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
    /// Maximum claims (1 to 10).
    #[arg(long, default_value_t = 5)]
    max_claims: i64,
    /// Maximum artifact references (1 to 20).
    #[arg(long, default_value_t = 3)]
    max_artifact_refs: i64,
    /// Byte cap per excerpt (1 to 1024).
    #[arg(long, default_value_t = 320)]
    max_excerpt_bytes: i64,
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

/// The fields the three retrieval reads share: the query words joined by spaces and the
/// horizon flags.
fn query_input(query: &[String], horizon: &HorizonFlags) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("query".to_owned(), Value::from(query.join(" ")));
    horizon.insert_into(&mut input);
    input
}

pub(crate) fn search(args: SearchArgs, global: &GlobalArgs) -> Response {
    let mut input = query_input(&args.query, &args.horizon);
    input.insert("limit".to_owned(), Value::from(args.limit));
    input.insert("include_historical".to_owned(), Value::Bool(args.include_historical));
    args.freshness.insert_into(&mut input);
    Call::new(Operation::Search, input).send(global)
}

pub(crate) fn recall(args: RecallArgs, global: &GlobalArgs) -> Response {
    let mut input = query_input(&args.query, &args.horizon);
    input.insert("max_claims".to_owned(), Value::from(args.max_claims));
    input.insert("max_artifact_refs".to_owned(), Value::from(args.max_artifact_refs));
    input.insert("max_excerpt_bytes".to_owned(), Value::from(args.max_excerpt_bytes));
    args.freshness.insert_into(&mut input);
    Call::new(Operation::MemoryRecall, input).send(global)
}

pub(crate) fn build(args: BuildArgs, global: &GlobalArgs) -> Response {
    let mut input = query_input(&args.query, &args.horizon);
    input.insert("limit".to_owned(), Value::from(args.limit));
    input.insert("include_historical".to_owned(), Value::Bool(args.include_historical));
    input.insert("max_bytes".to_owned(), Value::from(args.max_bytes));
    args.freshness.insert_into(&mut input);
    Call::new(Operation::ContextBuild, input).send(global)
}
