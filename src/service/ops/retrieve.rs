//! `memory.retrieve`: the reference's v0.7 agent path. A recall supplies presence, claims,
//! conflicts and artifact references, qualified as always by the caller's own question.
//! Only when no claim qualified (and the question is not about the live source) does one
//! probe follow, routed by the caller's reformulation when there is one, and its claim
//! leads' exact evidence is fetched into one bounded recovery packet: at most 8 leads, 9
//! spans and 12 KiB, every item labelled `unqualified_evidence`.
//!
//! A fetched span is returned only when it shares a word (by lemma and stem) with the
//! question or the routed query (`recovery_lexical_relation_v1`); the rest are counted in
//! `suppressed_references`, never shown. Recovery never changes presence, never adds a
//! claim and never reaches `context.build`.

use std::time::Instant;

use super::citation;
use super::probe::{self, Leads};
use super::recall::{Examination, Keep, RecallRun, recall_run_then};
use super::search::{Kinds, SearchRequest};
use crate::protocol::agent::{
    LocatorOrigin, MAX_RECOVERY_FETCH_BYTES, MAX_RETRIEVE_EVIDENCE_BYTES, MAX_RETRIEVE_LEADS, MAX_RETRIEVE_REFERENCES,
    ProbeInput, RecoveryEvidence, RetrieveArtifactReference, RetrieveAuthority, RetrieveClaim, RetrieveInput,
    RetrieveNextAction, RetrieveProfile, RetrieveRecovery, RetrieveResult, UNQUALIFIED_EVIDENCE,
};
use crate::protocol::citation::CitationGetInput;
use crate::protocol::citation::{MAX_CITATION_FETCH_BYTES, MIN_CITATION_FETCH_BYTES};
use crate::protocol::limits;
use crate::protocol::retrieval::{RecallInput, RecallPresence};
use crate::retrieval::analyze::lemma_stem;
use crate::retrieval::profile::{self, Intent};
use crate::retrieval::text::folded_words;
use crate::retrieval::{Analysis, analyze};
use crate::service::{Call, Output, Service, ServiceError, validate};
use crate::store::search as store_search;
use crate::store::{Db, StoreError, StoreResult};
use crate::timefmt;

/// `authority.qualification_policy`: only qualified retrieval decides presence and claims.
pub const QUALIFICATION_POLICY: &str = "deterministic_authority_only_v1";
/// `authority.recovery_policy`.
pub const RECOVERY_POLICY: &str = "unqualified_exact_evidence_v1";
/// `recovery.relevance_policy`.
pub const RELEVANCE_POLICY: &str = "recovery_lexical_relation_v1";
/// `next_action.policy_version`.
pub const NEXT_ACTION_POLICY: &str = "retrieval_next_action_v1";
/// `profile.policy_version`.
pub const TIMING_POLICY: &str = "content_free_retrieval_profile_v2";

const CURRENT_SOURCE_RULE: &str = "Memory holds what was recorded, as recorded. For the current state of code, \
     configuration or any live system, the live source is authoritative: check it before acting on memory.";
const NEXT_ACTION_DETAIL: &str = "No claim qualified for this question. Ask again with the words memory uses as \
     the query itself (not as a reformulation): only the query can qualify an answer, and a reformulation only \
     routes recovery.";
const RECOVERY_WARNING: &str = "Unqualified evidence: exact stored bytes reached through candidates that matched \
     part of the question but did not qualify as an answer. They may be unrelated; check each span against the \
     question before relying on it, and never treat it as remembered fact.";

pub(super) fn retrieve(service: &Service, call: &Call, input: RetrieveInput) -> Result<Output, ServiceError> {
    let started = Instant::now();
    let max_leads = validate::limit(
        "max_recovery_leads",
        input.max_recovery_leads,
        MAX_RETRIEVE_LEADS as usize,
    )?;
    let budget = validate::limit(
        "max_recovery_bytes",
        input.max_recovery_bytes,
        MAX_RETRIEVE_EVIDENCE_BYTES as usize,
    )?;
    if let Some(reformulation) = &input.reformulation {
        validate::bounded("reformulation", reformulation, limits::MAX_QUERY_BYTES)?;
        if *reformulation == input.query {
            return Err(ServiceError::invalid(
                "reformulation must differ from query; leave it out to route recovery by the query",
            ));
        }
    }
    let routed = input.reformulation.clone().unwrap_or_else(|| input.query.clone());
    let probe_input = ProbeInput {
        query: routed.clone(),
        original_query: input.reformulation.as_ref().map(|_| input.query.clone()),
        horizon: input.horizon,
        reason: input.reason.clone(),
        max_leads: max_leads as i64,
        min_commit_seq: input.min_commit_seq,
        recency: input.recency,
    };
    // Built first so that a bad reformulation is refused before anything runs.
    let probe_search = probe::probe_search(&routed, &probe_input, call.context()?)?;

    let recall = RecallInput {
        query: input.query.clone(),
        horizon: input.horizon,
        reason: input.reason.clone(),
        max_claims: input.max_claims,
        max_artifact_refs: input.max_artifact_refs,
        max_excerpt_bytes: input.max_excerpt_bytes,
        min_commit_seq: input.min_commit_seq,
        recency: input.recency,
        max_candidate_claims: 0,
        max_candidate_artifact_refs: 0,
    };
    // Without a reformulation the probe routes the question itself: it runs in the recall's
    // snapshot, on what the recall's own searches examined.
    let mut probe_ms = 0.0;
    let same_query = input.reformulation.is_none();
    // Only a question that may recover keeps the recall's candidates for the probe.
    let may_recover = profile::profile(&probe_search.analysis).intent != Intent::CurrentSource;
    let keep = (same_query && may_recover).then_some(Keep {
        claim_rows: probe::CLAIM_CANDIDATES,
    });
    let (run, early_leads) = recall_run_then(service, call, &recall, keep, |conn, examined, result| {
        if keep.is_none() || !wants_recovery(result) {
            return Ok(None);
        }
        let probe_started = Instant::now();
        let leads = probe_of_recall(service, conn, examined, max_leads)?;
        probe_ms = millis(probe_started);
        Ok(Some(leads))
    })?;
    let recall_ms = millis(started) - probe_ms;
    let no_claims = run.result.claims.is_empty();
    let mut fetch_ms = 0.0;
    let leads = match early_leads {
        Some(leads) => Some(leads),
        None if wants_recovery(&run.result) => {
            let probe_started = Instant::now();
            let leads = service.store().read_db(|conn| {
                store_search::ensure_index_ready(conn, probe_search.min_commit_seq)?;
                let plan = probe_search.plan(service, conn)?;
                probe::leads(service, conn, &probe_search, &plan, max_leads)
            })?;
            probe_ms = millis(probe_started);
            Some(leads)
        }
        None => None,
    };
    let recovery = match leads {
        Some(leads) => {
            let fetch_started = Instant::now();
            // The question's words and the routed query's (the same analysis without a
            // reformulation).
            let relation = match &input.reformulation {
                Some(_) => {
                    let asked = analyze(&input.query).map_err(|e| ServiceError::invalid(e.to_string()))?;
                    Relation::new(&[&asked, &probe_search.analysis])
                }
                None => Relation::new(&[&probe_search.analysis]),
            };
            let recovery = recover(service, &leads, &relation, budget as u64, &input);
            fetch_ms = millis(fetch_started);
            recovery
        }
        None => None,
    };
    let next_action = no_claims.then(|| RetrieveNextAction {
        policy_version: NEXT_ACTION_POLICY.to_owned(),
        reason: if run.result.presence == RecallPresence::None {
            "no_qualified_match"
        } else {
            "artifacts_without_claims"
        }
        .to_owned(),
        action: "requery_with_stored_vocabulary".to_owned(),
        detail: NEXT_ACTION_DETAIL.to_owned(),
        unmatched_units: run.result.query_analysis.content_units.clone(),
        stored_vocabulary: Vec::new(),
    });
    let RecallRun {
        result,
        warnings,
        commit_seq,
    } = run;
    let profile = input.profile.then(|| RetrieveProfile {
        policy_version: TIMING_POLICY.to_owned(),
        total_ms: millis(started),
        recall_ms,
        probe_ms,
        citation_fetch_ms: fetch_ms,
        qualified_claim_count: result.claims.len() as u64,
        qualified_artifact_count: result.artifact_refs.len() as u64,
        recovery_reference_count: recovery.as_ref().map_or(0, |r| r.returned_references),
    });
    let mut output = Output::read(RetrieveResult {
        content_is_untrusted: true,
        presence: result.presence,
        searched_horizon: input.horizon,
        query_analysis: result.query_analysis,
        authority: RetrieveAuthority {
            memory_snapshot_commit_seq: commit_seq,
            retrieved_at: timefmt::to_wire(&timefmt::now()),
            qualification_policy: QUALIFICATION_POLICY.to_owned(),
            recovery_policy: RECOVERY_POLICY.to_owned(),
            current_source_rule: CURRENT_SOURCE_RULE.to_owned(),
        },
        claims: result
            .claims
            .into_iter()
            .map(|c| RetrieveClaim {
                claim_id: c.claim_id,
                revision_id: c.revision_id,
                claim_type: c.claim_type,
                status: c.status,
                statement: c.statement,
                citation: c.citation,
                evidence: c.evidence,
                conflict_relation_ids: c.conflict_relation_ids,
            })
            .collect(),
        conflicts: result.conflicts,
        artifact_refs: result
            .artifact_refs
            .into_iter()
            .map(|r| RetrieveArtifactReference {
                artifact_id: r.artifact_id,
                revision_id: r.revision_id,
                title: r.title,
                citation: r.citation,
                excerpt: r.excerpt,
                excerpt_truncated: r.excerpt_truncated,
                excerpt_citation: r.excerpt_citation,
                risk_signals: r.risk_signals,
            })
            .collect(),
        claims_truncated: result.claims_truncated,
        next_action,
        recovery,
        profile,
    })?;
    output.warnings.extend(warnings);
    Ok(output)
}

/// The probe of a question that routes itself: the recall's claim and artifact searches
/// are the probe's, so their examined candidates are topped up as a probe's are instead of
/// searching again.
fn probe_of_recall(service: &Service, conn: Db<'_>, examined: Examination<'_>, max_leads: usize) -> StoreResult<Leads> {
    let (Some(claims), Some(artifacts)) = (examined.claims, examined.artifacts) else {
        return Err(StoreError::Internal(
            "a recall kept no candidates for its probe".to_owned(),
        ));
    };
    let plan = examined.plan;
    let topped_up = |search: &SearchRequest| {
        let mut search = search.with_limit(search.limit);
        search.candidates_asked = true;
        search
    };
    let claim_search = topped_up(examined.claim_search);
    let artifact_search = topped_up(examined.artifact_search);
    let claims = claim_search.near_miss_candidates(
        service,
        conn,
        plan,
        Kinds::Claims,
        claims.unqualified,
        &claims.known,
        probe::CLAIM_CANDIDATES,
        examined.any_unit,
    )?;
    probe::leads_from(service, conn, plan, max_leads, claims, |count| {
        artifact_search.near_miss_candidates(
            service,
            conn,
            plan,
            Kinds::Artifacts,
            artifacts.unqualified,
            &artifacts.known,
            count,
            examined.any_unit,
        )
    })
}

/// Recovery runs when no claim qualified and the question is not about the live source.
fn wants_recovery(result: &crate::protocol::retrieval::RecallResult) -> bool {
    result.claims.is_empty() && result.query_analysis.retrieval_profile.intent_hint != Intent::CurrentSource.as_str()
}

fn millis(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

/// `recovery_lexical_relation_v1`: the lemma stems of the question's and the routed
/// query's units. A span relates when one of its words shares one.
struct Relation {
    stems: Vec<String>,
}

impl Relation {
    fn new(analyses: &[&Analysis]) -> Relation {
        let mut stems: Vec<String> = analyses
            .iter()
            .flat_map(|a| a.units.iter())
            .flat_map(|u| u.words.iter())
            .map(|w| lemma_stem(w))
            .collect();
        stems.sort();
        stems.dedup();
        Relation { stems }
    }

    /// An empty vocabulary keeps everything (a query of function words only).
    fn relates(&self, text: &str) -> bool {
        self.stems.is_empty()
            || folded_words(text)
                .iter()
                .any(|w| self.stems.binary_search(&lemma_stem(w)).is_ok())
    }
}

/// Fetches the first exact claim evidence of each lead, in lead order, within the budget.
/// `None` when the probe found no lead.
fn recover(
    service: &Service,
    leads: &Leads,
    relation: &Relation,
    budget: u64,
    input: &RetrieveInput,
) -> Option<RetrieveRecovery> {
    if leads.available == 0 {
        return None;
    }
    let mut evidence = Vec::new();
    let mut fetched = 0u64;
    let mut remaining = budget;
    let mut left_unfetched = false;
    for lead in &leads.leads {
        let fetchable: Vec<_> = lead
            .sources
            .iter()
            .filter(|s| {
                matches!(
                    s.locator_origin,
                    LocatorOrigin::ClaimExact | LocatorOrigin::SemanticResolved
                )
            })
            .collect();
        if fetchable.is_empty() {
            continue;
        }
        let cap = remaining.min(MAX_RECOVERY_FETCH_BYTES).min(MAX_CITATION_FETCH_BYTES);
        if evidence.len() >= MAX_RETRIEVE_REFERENCES || cap < MIN_CITATION_FETCH_BYTES {
            left_unfetched = true;
            break;
        }
        // The first source that can be read; a purged or foreign one is passed over.
        let got = fetchable.iter().find_map(|source| {
            citation::fetch(
                service,
                CitationGetInput {
                    citation: source.citation.clone(),
                    max_bytes: cap,
                },
            )
            .ok()
        });
        let Some(got) = got else { continue };
        fetched += 1;
        if !relation.relates(&got.content) {
            continue;
        }
        remaining -= got.byte_count;
        evidence.push(RecoveryEvidence {
            retrieval_tier: UNQUALIFIED_EVIDENCE.to_owned(),
            title: lead.title.clone(),
            citation: got.citation,
            content: got.content,
            media_type: got.media_type,
            truncated: got.truncated,
        });
    }
    let returned_content_bytes = evidence.iter().map(|e| e.content.len() as u64).sum();
    Some(RetrieveRecovery {
        retrieval_tier: UNQUALIFIED_EVIDENCE.to_owned(),
        original_query_preserved: true,
        reformulation_applied: input.reformulation.is_some(),
        available_leads: leads.available,
        returned_references: evidence.len() as u64,
        returned_content_bytes,
        references_truncated: leads.truncated || left_unfetched || evidence.len() >= MAX_RETRIEVE_REFERENCES,
        relevance_policy: RELEVANCE_POLICY.to_owned(),
        suppressed_references: fetched - evidence.len() as u64,
        anchor_routed_references: 0,
        evidence,
        warning: RECOVERY_WARNING.to_owned(),
    })
}
