//! The strict output contract of the claim compiler and the Rust-side check that turns a
//! proposal into claims with exact byte spans.
//!
//! The compiler proposes `{claims:[{claim_type, statement, evidence_quotes:[…]}]}` and
//! nothing else. Structural violations fail the whole compilation; a quote that cannot be
//! pinned to exactly one place in the source only rejects its own claim.
//!
//! This deliberately differs from the reference implementation, which fails the whole
//! compilation on any unlocatable quote: here a missing, ambiguous or out-of-bounds quote
//! rejects only its claim, the rejection becomes a `REMEMBER_QUOTE_REJECTED` finding, and the
//! remaining claims stay in the plan.
//!
//! **Invariant:** every accepted span satisfies `&source[start..end] == quote`, lies on
//! character boundaries and was found exactly once, counting overlapping occurrences.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::protocol::limits::MAX_CLAIM_STATEMENT_BYTES;

/// Version of the remember compilation contract, reported in plans and provenance.
pub const REMEMBER_SCHEMA_VERSION: u32 = 2;
/// Claims one proposal may carry.
pub const MAX_PROPOSED_CLAIMS: usize = 12;
/// Evidence quotes one claim may carry (at least one is required).
pub const MAX_QUOTES_PER_CLAIM: usize = 4;
/// Bytes of one evidence quote.
pub const MAX_QUOTE_BYTES: usize = 16 * 1024;

/// The six claim types a compiler may propose: the protocol's claim types.
pub use crate::protocol::claim::ClaimType;

/// A compiler's whole answer. Unknown fields anywhere are rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    pub claims: Vec<ProposedClaim>,
}

/// One proposed claim: a typed statement and the exact source text supporting it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposedClaim {
    pub claim_type: ClaimType,
    pub statement: String,
    pub evidence_quotes: Vec<String>,
}

impl Proposal {
    /// Parses compiler output strictly: invalid JSON, a missing field or an unknown field is
    /// a contract violation.
    pub fn parse(bytes: &[u8]) -> Result<Proposal, ProposalError> {
        serde_json::from_slice(bytes)
            .map_err(|e| ProposalError(format!("compiler output is not a valid claim proposal: {e}")))
    }
}

/// The JSON Schema handed to the compiler as its output schema. It is strict in the sense
/// structured-output APIs require: every property required, no additional properties.
pub fn proposal_schema() -> Value {
    let types = ClaimType::NAMES;
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["claims"],
        "properties": {
            "claims": {
                "type": "array",
                "maxItems": MAX_PROPOSED_CLAIMS,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["claim_type", "statement", "evidence_quotes"],
                    "properties": {
                        "claim_type": { "type": "string", "enum": types },
                        "statement": { "type": "string" },
                        "evidence_quotes": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_QUOTES_PER_CLAIM,
                            "items": { "type": "string" }
                        }
                    }
                }
            }
        }
    })
}

/// [`proposal_schema`] pretty-printed, as written to the compiler's schema file.
pub fn proposal_schema_text() -> String {
    serde_json::to_string_pretty(&proposal_schema()).expect("a JSON value always serializes")
}

/// A structural contract violation. It fails the whole compilation and is not retryable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProposalError(pub String);

/// One evidence span, in bytes of the source: `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvidenceSpan {
    pub quote: String,
    pub start: usize,
    pub end: usize,
}

/// A claim whose every quote was located exactly once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedClaim {
    /// 1-based position in the compiler's proposal.
    pub proposal_index: usize,
    pub claim_type: ClaimType,
    /// The statement with whitespace runs collapsed to single spaces.
    pub statement: String,
    /// Spans sorted by `(start, end)`, without repeats.
    pub evidence: Vec<EvidenceSpan>,
}

/// Why a quote could not be pinned to the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuoteRejection {
    /// The quote does not occur in the source.
    Missing,
    /// The quote occurs more than once (overlapping occurrences count).
    Ambiguous,
    /// The quote is longer than the whole source, so it cannot lie within it.
    OutOfBounds,
}

impl QuoteRejection {
    pub fn describe(self) -> &'static str {
        match self {
            QuoteRejection::Missing => "does not occur in the source",
            QuoteRejection::Ambiguous => "occurs more than once in the source",
            QuoteRejection::OutOfBounds => "is longer than the source itself",
        }
    }
}

/// A claim left out of the plan because of its quotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectedClaim {
    /// 1-based position in the compiler's proposal.
    pub proposal_index: usize,
    pub claim_type: ClaimType,
    pub statement: String,
    /// `(1-based quote number, reason)` for every quote that failed.
    pub failures: Vec<(usize, QuoteRejection)>,
}

/// The claims of a plan: the ones to assert, and the ones rejected with a reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanClaims {
    pub accepted: Vec<PlannedClaim>,
    pub rejected: Vec<RejectedClaim>,
}

/// Collapses every whitespace run to one space and trims both ends.
pub fn normalize_statement(statement: &str) -> String {
    statement.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Checks a proposal against its source and computes every evidence span.
pub fn compile_plan(source: &str, proposal: &Proposal) -> Result<PlanClaims, ProposalError> {
    check_structure(proposal)?;
    let mut plan = PlanClaims::default();
    for (i, claim) in proposal.claims.iter().enumerate() {
        let index = i + 1;
        let statement = normalize_statement(&claim.statement);
        let mut evidence = Vec::with_capacity(claim.evidence_quotes.len());
        let mut failures = Vec::new();
        for (q, quote) in claim.evidence_quotes.iter().enumerate() {
            match locate_unique(source, quote) {
                Ok(start) => evidence.push(EvidenceSpan {
                    quote: quote.clone(),
                    start,
                    end: start + quote.len(),
                }),
                Err(reason) => failures.push((q + 1, reason)),
            }
        }
        if !failures.is_empty() {
            plan.rejected.push(RejectedClaim {
                proposal_index: index,
                claim_type: claim.claim_type,
                statement,
                failures,
            });
            continue;
        }
        evidence.sort_by_key(|span| (span.start, span.end));
        if let Some(pair) = evidence
            .windows(2)
            .find(|w| (w[0].start, w[0].end) == (w[1].start, w[1].end))
        {
            return Err(ProposalError(format!(
                "claim {index} repeats evidence span {}-{}",
                pair[0].start, pair[0].end
            )));
        }
        plan.accepted.push(PlannedClaim {
            proposal_index: index,
            claim_type: claim.claim_type,
            statement,
            evidence,
        });
    }
    Ok(plan)
}

fn check_structure(proposal: &Proposal) -> Result<(), ProposalError> {
    let fail = |message: String| Err(ProposalError(message));
    if proposal.claims.len() > MAX_PROPOSED_CLAIMS {
        return fail(format!(
            "the proposal has {} claims; at most {MAX_PROPOSED_CLAIMS} are allowed",
            proposal.claims.len()
        ));
    }
    let mut seen: Vec<String> = Vec::with_capacity(proposal.claims.len());
    for (i, claim) in proposal.claims.iter().enumerate() {
        let index = i + 1;
        let statement = normalize_statement(&claim.statement);
        if statement.is_empty() {
            return fail(format!("claim {index} has an empty statement"));
        }
        if statement.len() > MAX_CLAIM_STATEMENT_BYTES {
            return fail(format!(
                "claim {index} statement exceeds {MAX_CLAIM_STATEMENT_BYTES} bytes"
            ));
        }
        let folded = statement.to_lowercase();
        if let Some(first) = seen.iter().position(|s| *s == folded) {
            return fail(format!("claim {index} repeats the statement of claim {}", first + 1));
        }
        seen.push(folded);
        let quotes = claim.evidence_quotes.len();
        if !(1..=MAX_QUOTES_PER_CLAIM).contains(&quotes) {
            return fail(format!(
                "claim {index} has {quotes} evidence quotes; 1 to {MAX_QUOTES_PER_CLAIM} are required"
            ));
        }
        for (q, quote) in claim.evidence_quotes.iter().enumerate() {
            if quote.is_empty() {
                return fail(format!("claim {index} evidence quote {} is empty", q + 1));
            }
            if quote.len() > MAX_QUOTE_BYTES {
                return fail(format!(
                    "claim {index} evidence quote {} exceeds {MAX_QUOTE_BYTES} bytes",
                    q + 1
                ));
            }
        }
    }
    Ok(())
}

/// Finds the only occurrence of a non-empty `quote`. After a match the search resumes one
/// character later, so overlapping repeats (`aa` in `aaa`) make the quote ambiguous.
fn locate_unique(source: &str, quote: &str) -> Result<usize, QuoteRejection> {
    if quote.len() > source.len() {
        return Err(QuoteRejection::OutOfBounds);
    }
    let first = source.find(quote).ok_or(QuoteRejection::Missing)?;
    let step = source[first..].chars().next().map_or(1, char::len_utf8);
    match source[first + step..].find(quote) {
        Some(_) => Err(QuoteRejection::Ambiguous),
        None => Ok(first),
    }
}

#[cfg(test)]
mod tests;
