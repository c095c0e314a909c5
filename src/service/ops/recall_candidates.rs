//! `memory.recall`'s unqualified candidates (`max_candidate_claims`,
//! `max_candidate_artifact_refs`): the near misses of its claim search and of its artifact
//! search, in the reference's shapes (`protocol::candidates`). They are computed from the
//! same examined candidates as the hits, so everything they show comes from what the grant
//! may read, and they never change `presence` or fill a slot.

use super::candidates::{Body, Examined, lexical_coverage};
use super::search::{Passage, Ranked, Source, artifact_excerpt, claim_citation, excerpt_citation, labels};
use crate::protocol::candidates::{
    CandidateRankingSignals, RecallCandidateArtifactReference, RecallCandidateClaim, UNQUALIFIED_CANDIDATE,
};
use crate::retrieval::Plan;
use crate::retrieval::rank;
use crate::retrieval::risk_signals;
use crate::retrieval::snippet::{Excerpt, SNIPPET_TOKENS, fitted_excerpt, truncate_to_char_boundary};
use crate::store::artifact::ArtifactRow;

/// How many near misses a search is asked for so that one more than `shown` tells whether
/// the list was cut.
pub(super) fn wanted(shown: usize) -> usize {
    if shown == 0 { 0 } else { shown + 1 }
}

/// One search's candidates: what is shown, whether more existed, and what was examined.
pub(super) struct Candidates<T> {
    pub shown: Vec<T>,
    pub truncated: bool,
    pub unqualified: u64,
    pub best_coverage: Option<f64>,
}

impl<T> Candidates<T> {
    /// `shown` of the search's near misses (asked for with [`wanted`]), each made by `make`.
    pub fn of(ranked: &Ranked, shown: usize, mut make: impl FnMut(&Examined) -> Option<T>) -> Candidates<T> {
        let found = &ranked.unqualified;
        Candidates {
            shown: found.shown.iter().take(shown).filter_map(&mut make).collect(),
            truncated: shown > 0 && found.examined > shown,
            unqualified: found.examined as u64,
            best_coverage: found.best_coverage,
        }
    }
}

fn signals(plan: &Plan, examined: &Examined) -> CandidateRankingSignals {
    CandidateRankingSignals {
        lexical_coverage: lexical_coverage(plan, examined),
        trigram_similarity: None,
        semantic_similarity: examined.semantic.map(|(similarity, _)| similarity),
    }
}

/// A claim near miss as a candidate: its statement cut to `max_excerpt` bytes.
pub(super) fn claim(plan: &Plan, examined: &Examined, max_excerpt: usize) -> Option<RecallCandidateClaim> {
    let Source::Claim(row) = &examined.source else {
        return None;
    };
    let statement = truncate_to_char_boundary(&row.statement, max_excerpt);
    Some(RecallCandidateClaim {
        retrieval_tier: UNQUALIFIED_CANDIDATE.into(),
        claim_id: row.claim_id.as_str().into(),
        revision_id: row.revision_id.as_str().into(),
        claim_type: row.claim_type,
        statement_truncated: statement.len() < row.statement.len(),
        statement: statement.to_owned(),
        citation: claim_citation(&row.claim_id, &row.revision_id),
        matched_by: labels(rank::matched_by(false)),
        ranking_signals: signals(plan, examined),
    })
}

/// An artifact near miss as a candidate: its match window cut to `max_excerpt` bytes, with
/// the citation of exactly those bytes.
pub(super) fn artifact(
    plan: &Plan,
    examined: &Examined,
    max_excerpt: usize,
) -> Option<RecallCandidateArtifactReference> {
    let Source::Artifact(row) = &examined.source else {
        return None;
    };
    let shown = artifact_excerpt(plan, row, examined.body.as_ref());
    let risk = labels(risk_signals(&row.title, &shown.excerpt));
    let (excerpt, excerpt_truncated, excerpt_citation) = fit_excerpt(
        row,
        examined.body.as_ref(),
        shown.passage,
        (&shown.excerpt, shown.excerpt_citation.as_ref()),
        &plan.unit_scores(),
        max_excerpt,
    );
    Some(RecallCandidateArtifactReference {
        retrieval_tier: UNQUALIFIED_CANDIDATE.into(),
        artifact_id: row.artifact_id.as_str().into(),
        revision_id: row.revision_id.as_str().into(),
        risk_signals: risk,
        title: row.title.clone(),
        citation: shown.citation,
        excerpt,
        excerpt_truncated,
        excerpt_citation,
        matched_by: labels(rank::matched_by(false)),
        ranking_signals: signals(plan, examined),
    })
}

/// The one-line hint when either search examined unqualified candidates.
pub(super) fn hint(claims: u64, artifacts: u64, asked: bool) -> Option<String> {
    let total = claims + artifacts;
    (total > 0).then(|| {
        let how = if asked {
            "the candidate lists show some of them"
        } else {
            "ask for them with max_candidate_claims / max_candidate_artifact_refs (at most 16 each)"
        };
        format!(
            "{total} unqualified candidate(s) matched part of the query but not enough to answer it; {how}. \
             They are suggestions, not memory: check a candidate's cited source before relying on it."
        )
    })
}

/// An artifact's search excerpt cut to `max_excerpt` bytes: a narrower window around the
/// best matches, with the citation of exactly the bytes shown. Returns the excerpt, whether
/// it was cut, and its citation.
pub(super) fn fit_excerpt(
    row: &ArtifactRow,
    body: Option<&Body>,
    passage: Option<Passage>,
    (shown, shown_citation): (&str, Option<&String>),
    scores: &[usize],
    max_excerpt: usize,
) -> (String, bool, Option<String>) {
    let Some(body) = body.filter(|_| shown.len() > max_excerpt) else {
        return (shown.to_owned(), false, shown_citation.cloned());
    };
    let (mut fitted, truncated) = fitted_excerpt(
        &body.text,
        &body.spans,
        &body.instances,
        scores,
        SNIPPET_TOKENS,
        max_excerpt,
    );
    // A shrunk window that left the cited passage becomes the plain head of the search
    // window, which the passage holds.
    if let Some(passage) = passage
        && (fitted.start < passage.cited.0 || fitted.end > passage.cited.1)
    {
        let (start, end) = passage.window;
        let head = truncate_to_char_boundary(&body.text[start..end], max_excerpt);
        fitted = Excerpt {
            text: head.to_owned(),
            start,
            end: start + head.len(),
        };
    }
    let citation = excerpt_citation(row, body, fitted.start, fitted.end);
    (fitted.text, truncated, citation)
}
