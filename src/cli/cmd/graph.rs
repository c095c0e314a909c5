//! `memoree link`, `memoree relation put|list` and `memoree conflict list`.
//!
//! Entities are written `artifact:ID` or `claim:ID` (split at the first `:`); relation
//! names are kebab-case on the command line and snake_case on the wire.

use clap::{Args, Subcommand};
use serde_json::Map;

use super::HorizonFlags;
use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::Call;
use crate::protocol::Response;
use crate::protocol::relation::{
    ConflictListInput, EntityType, RelationDirection, RelationListInput, RelationPutInput, RelationType,
};

/// `artifact:ID` or `claim:ID`, split at the first `:`.
fn parse_entity(text: &str) -> Result<(EntityType, String), CliError> {
    let Some((kind, id)) = text.split_once(':') else {
        return Err(CliError::Invalid(format!(
            "entity {text:?} must be written artifact:ID or claim:ID"
        )));
    };
    let Some(kind) = EntityType::parse(kind) else {
        return Err(CliError::Invalid(format!(
            "unknown entity type {kind:?} in {text:?}; use artifact:ID or claim:ID"
        )));
    };
    if id.trim().is_empty() {
        return Err(CliError::Invalid(format!("entity {text:?} has an empty id")));
    }
    Ok((kind, id.to_owned()))
}

/// Relate two entities: SOURCE RELATION TARGET (for `supersedes`, SOURCE is the newer one).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree link claim:clm_NEW supersedes claim:clm_OLD\n  \
                        memoree link claim:clm_01J... derived-from artifact:art_01J...")]
pub struct LinkArgs {
    /// `artifact:ID` or `claim:ID`.
    source: String,
    /// The relation type.
    #[arg(value_enum)]
    relation: RelationType,
    /// `artifact:ID` or `claim:ID`.
    target: String,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// Put and list typed relations between artifacts and claims.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree relation list claim:clm_01J... --direction incoming --relation supports")]
pub struct RelationArgs {
    #[command(subcommand)]
    command: RelationCommand,
}

#[derive(Debug, Subcommand)]
enum RelationCommand {
    /// The same as `memoree link`.
    #[command(after_help = "Example:\n  memoree relation put claim:clm_A contradicts claim:clm_B")]
    Put(LinkArgs),
    List(ListArgs),
}

/// List the relations of one entity, newest first.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  memoree relation list artifact:art_01J... --horizon workspace --reason 'shared ADRs'"
)]
struct ListArgs {
    /// The anchor: `artifact:ID` or `claim:ID`.
    entity: String,
    /// Which edges to list.
    #[arg(long, value_enum, default_value_t = RelationDirection::Both)]
    direction: RelationDirection,
    /// Only this relation type.
    #[arg(long, value_enum)]
    relation: Option<RelationType>,
    #[command(flatten)]
    horizon: HorizonFlags,
    /// Relations per page (1 to 100).
    #[arg(long, default_value_t = 100)]
    limit: i64,
    /// Exclusive cursor over relation commit sequences.
    #[arg(long)]
    before_commit_seq: Option<i64>,
}

/// Inspect contradiction cases.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree conflict list --include-stale")]
pub struct ConflictArgs {
    #[command(subcommand)]
    command: ConflictCommand,
}

#[derive(Debug, Subcommand)]
enum ConflictCommand {
    List(ConflictListArgs),
}

/// List open contradiction cases (and stale ones with --include-stale), newest first.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree conflict list --horizon workspace --reason 'release review' --limit 20")]
struct ConflictListArgs {
    #[command(flatten)]
    horizon: HorizonFlags,
    /// Also list cases made stale by a claim revision.
    #[arg(long)]
    include_stale: bool,
    /// Cases per page (1 to 100).
    #[arg(long, default_value_t = 100)]
    limit: i64,
    /// Exclusive cursor over case sequences.
    #[arg(long)]
    before_case_sequence: Option<i64>,
}

pub(crate) fn link(args: LinkArgs, global: &GlobalArgs) -> CliResult<Response> {
    put(args, global)
}

pub(crate) fn relation(args: RelationArgs, global: &GlobalArgs) -> CliResult<Response> {
    match args.command {
        RelationCommand::Put(args) => put(args, global),
        RelationCommand::List(args) => list(args, global),
    }
}

pub(crate) fn conflict(args: ConflictArgs, global: &GlobalArgs) -> CliResult<Response> {
    let ConflictCommand::List(args) = args.command;
    let input = ConflictListInput {
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        include_stale: args.include_stale,
        limit: args.limit,
        before_case_sequence: args.before_case_sequence,
    };
    Call::new(input).send(global)
}

fn put(args: LinkArgs, global: &GlobalArgs) -> CliResult<Response> {
    let (source_type, source_id) = parse_entity(&args.source)?;
    let (target_type, target_id) = parse_entity(&args.target)?;
    let input = RelationPutInput {
        source_type,
        source_id,
        relation: args.relation,
        target_type,
        target_id,
        metadata: Map::new(),
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn list(args: ListArgs, global: &GlobalArgs) -> CliResult<Response> {
    let (entity_type, entity_id) = parse_entity(&args.entity)?;
    let input = RelationListInput {
        entity_type,
        entity_id,
        direction: args.direction,
        relation: args.relation,
        horizon: args.horizon.horizon,
        reason: args.horizon.reason,
        limit: args.limit,
        before_commit_seq: args.before_commit_seq,
    };
    Call::new(input).send(global)
}

#[cfg(test)]
mod tests {
    use super::*;

    use clap::ValueEnum;

    #[test]
    fn entities_split_at_the_first_colon() {
        assert_eq!(
            parse_entity("claim:clm_1").unwrap(),
            (EntityType::Claim, "clm_1".to_owned())
        );
        assert_eq!(
            parse_entity("artifact:a:b").unwrap(),
            (EntityType::Artifact, "a:b".to_owned())
        );
        for bad in ["clm_1", "note:x", "claim:", "claim: ", ":x", "Claim:x"] {
            let error = parse_entity(bad).unwrap_err().error_body();
            assert_eq!(error.code, crate::protocol::ErrorCode::InvalidRequest, "{bad}");
        }
    }

    #[test]
    fn kebab_case_relations_map_to_snake_case() {
        let names: Vec<String> = RelationType::value_variants()
            .iter()
            .map(|v| v.to_possible_value().unwrap().get_name().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "derived-from",
                "supports",
                "contradicts",
                "supersedes",
                "references",
                "duplicates"
            ]
        );
        assert_eq!(RelationType::DerivedFrom.as_str(), "derived_from");
        assert_eq!(
            RelationType::from_str("derived-from", false).unwrap(),
            RelationType::DerivedFrom
        );
    }
}
