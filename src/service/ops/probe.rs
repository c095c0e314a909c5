//! `memory.probe`: one bounded candidate-routing step after a weak recall. The unqualified
//! candidates of a claim search and an artifact search become *leads*: a source revision,
//! its untrusted title and exact locators into it, never content. Nothing here qualifies:
//! the qualified hits are recall's, and a probe shows only what did not qualify.
//!
//! Leads follow the reference's order (facts v0.7 §3): the two near-miss partitions are
//! interleaved claim first; claims are grouped by their first evidence revision and
//! artifacts by revision, the first candidate of a group winning; an artifact lead whose
//! cited bytes (its passage, or the whole of a short text) overlap a claim lead's evidence
//! in the same revision is dropped; then up to
//! `max_leads - 2` claim leads, up to two artifact leads, and the rest of each side.
//!
//! Every locator and title is read through the grant: evidence in a workspace outside it
//! contributes nothing, not even its title.

use std::collections::HashSet;

use super::candidates::Examined;
use super::search::{
    Kinds, SearchRequest, Source, Unqualified, artifact_citation, artifact_excerpt, evidence_citation,
};
use crate::protocol::agent::{
    LocatorOrigin, MAX_LEAD_SOURCE_BYTES, MAX_LEAD_SOURCES, MAX_PROBE_LEADS, MAX_PROBE_TITLE_BYTES, ProbeInput,
    ProbeLead, ProbeResult, ProbeSource,
};
use crate::protocol::candidates::UNQUALIFIED_CANDIDATE;
use crate::protocol::retrieval::SearchInput;
use crate::protocol::{AmbientContext, limits};
use crate::retrieval::Plan;
use crate::retrieval::snippet::truncate_to_char_boundary;
use crate::service::convert::evidence_locator;
use crate::service::grant::Reach;
use crate::service::{Call, Output, Service, ServiceError, validate};
use crate::store::claim::{self as store_claim, EvidenceRef};
use crate::store::search as store_search;
use crate::store::{Db, StoreResult};

/// Candidates each search keeps per partition; one more tells that it overflowed.
const PARTITION: usize = 16;
/// Qualified hits each search looks for before its near misses (they are not leads).
const SEARCH_LIMIT: usize = 8;
/// Artifact leads emitted before the remaining claim leads.
const RAW_SHARE: usize = 2;

pub(super) fn probe(service: &Service, call: &Call, input: ProbeInput) -> Result<Output, ServiceError> {
    let max_leads = validate::limit("max_leads", input.max_leads, MAX_PROBE_LEADS as usize)?;
    validate::optional_bounded(
        "original_query",
        input.original_query.as_deref(),
        limits::MAX_QUERY_BYTES,
    )?;
    let search = probe_search(&input.query, &input, call.context()?)?;
    let leads = service.store().read_db(|conn| {
        store_search::ensure_index_ready(conn, search.min_commit_seq)?;
        let plan = search.plan(service, conn)?;
        leads(service, conn, &search, &plan, max_leads)
    })?;
    let original_query = input.original_query.clone().unwrap_or_else(|| input.query.clone());
    Output::read(ProbeResult {
        content_is_untrusted: true,
        retrieval_tier: UNQUALIFIED_CANDIDATE.to_owned(),
        reformulation_applied: original_query != input.query,
        original_query,
        probe_query: input.query,
        leads: leads.leads,
        available_count: leads.available,
        truncated: leads.truncated,
    })
}

/// The search a probe routes `query` through, at `input`'s horizon and snapshot.
pub(super) fn probe_search(
    query: &str,
    input: &ProbeInput,
    context: &AmbientContext,
) -> Result<SearchRequest, ServiceError> {
    let search = SearchInput {
        query: query.to_owned(),
        horizon: input.horizon,
        reason: input.reason.clone(),
        limit: SEARCH_LIMIT as i64,
        include_historical: false,
        min_commit_seq: input.min_commit_seq,
        recency: input.recency,
    };
    let mut request = SearchRequest::new(&search, context)?;
    // The near misses are the whole answer: top them up even when something qualified.
    request.candidates_asked = true;
    Ok(request)
}

/// A probe's leads, before and after the cut.
pub(super) struct Leads {
    pub leads: Vec<ProbeLead>,
    pub available: u64,
    pub truncated: bool,
}

/// One group of candidates: the first candidate's lead, and where it ranked.
struct Group {
    rank: usize,
    is_claim: bool,
    id: String,
    /// The revision the group stands for: a claim's first evidence revision, an
    /// artifact's revision (the claim id for a claim without evidence).
    key: String,
    lead: ProbeLead,
    /// `(artifact, revision, start, end)` of its ranged sources.
    ranges: Vec<(String, String, u64, u64)>,
}

/// Runs both searches in `conn`'s snapshot and builds at most `max_leads` leads.
pub(super) fn leads(
    service: &Service,
    conn: Db<'_>,
    search: &SearchRequest,
    plan: &Plan,
    max_leads: usize,
) -> StoreResult<Leads> {
    let claims = search
        .run(service, conn, plan, Kinds::Claims, CLAIM_CANDIDATES)?
        .unqualified;
    leads_from(service, conn, plan, max_leads, claims, |count| {
        Ok(search.run(service, conn, plan, Kinds::Artifacts, count)?.unqualified)
    })
}

/// Unqualified claim candidates a probe asks for: a partition, and one to tell it overflowed.
pub(super) const CLAIM_CANDIDATES: usize = PARTITION + 1;

/// Builds at most `max_leads` leads from a claim search's unqualified candidates (up to
/// [`CLAIM_CANDIDATES`]) and `artifacts(count)`, an artifact search's best `count`
/// unqualified candidates.
pub(super) fn leads_from(
    service: &Service,
    conn: Db<'_>,
    plan: &Plan,
    max_leads: usize,
    claims: Unqualified,
    artifacts: impl FnOnce(usize) -> StoreResult<Unqualified>,
) -> StoreResult<Leads> {
    let claim_side = claims.shown.iter().take(PARTITION);
    let mut groups: Vec<Group> = Vec::new();
    let mut seen: HashSet<(bool, String)> = HashSet::new();
    for (index, examined) in claim_side.enumerate() {
        if let Some(group) = claim_group(service, conn, 2 * index, examined)?
            && seen.insert((true, group.key.clone()))
        {
            groups.push(group);
        }
    }
    // Artifact leads only fill the slots claim leads leave (at least two): examine no more
    // artifact candidates than those slots, and one to tell that more exist.
    let raw_slots = max_leads - groups.len().min(max_leads - RAW_SHARE.min(max_leads));
    let raw_partition = raw_slots.min(PARTITION);
    let artifacts = artifacts(raw_partition + 1)?;
    let overflowed = claims.examined > PARTITION || artifacts.examined > raw_partition;
    let artifact_side = artifacts.shown.iter().take(raw_partition);
    for (index, examined) in artifact_side.enumerate() {
        if let Some(group) = artifact_group(plan, 2 * index + 1, examined)
            && seen.insert((false, group.key.clone()))
        {
            groups.push(group);
        }
    }
    groups.sort_by(|a, b| {
        a.rank
            .cmp(&b.rank)
            .then(b.is_claim.cmp(&a.is_claim))
            .then(a.id.cmp(&b.id))
    });
    let claim_ranges: Vec<(String, String, u64, u64)> = groups
        .iter()
        .filter(|g| g.is_claim)
        .flat_map(|g| g.ranges.iter().cloned())
        .collect();
    groups.retain(|g| {
        g.is_claim
            || !g.ranges.iter().any(|(artifact, revision, start, end)| {
                claim_ranges
                    .iter()
                    .any(|(a, r, s, e)| a == artifact && r == revision && start < e && s < end)
            })
    });
    let available = groups.len();
    let (claim_leads, raw_leads): (Vec<Group>, Vec<Group>) = groups.into_iter().partition(|g| g.is_claim);
    Ok(Leads {
        leads: emit(claim_leads, raw_leads, max_leads),
        available: available as u64,
        truncated: overflowed || available > max_leads,
    })
}

/// Claim leads first, up to `max_leads - 2`, then up to two artifact leads, then the rest
/// of the claims and of the artifacts; a short side lends its share to the other.
fn emit(claims: Vec<Group>, raws: Vec<Group>, max_leads: usize) -> Vec<ProbeLead> {
    let raw_quota = RAW_SHARE.min(max_leads);
    let first_claims = claims.len().min(max_leads - raw_quota);
    let first_raws = raws.len().min(raw_quota);
    let mut spare = max_leads - first_claims - first_raws;
    let more_claims = (claims.len() - first_claims).min(spare);
    spare -= more_claims;
    let more_raws = (raws.len() - first_raws).min(spare);
    let mut claims = claims.into_iter().map(|g| g.lead);
    let mut raws = raws.into_iter().map(|g| g.lead);
    let mut leads: Vec<ProbeLead> = claims.by_ref().take(first_claims).collect();
    leads.extend(raws.by_ref().take(first_raws));
    leads.extend(claims.take(more_claims));
    leads.extend(raws.take(more_raws));
    leads
}

/// A title cut to 45 bytes and an ellipsis when longer than 48.
fn lead_title(title: &str) -> String {
    if title.len() <= MAX_PROBE_TITLE_BYTES {
        title.to_owned()
    } else {
        format!("{}…", truncate_to_char_boundary(title, MAX_PROBE_TITLE_BYTES - 3))
    }
}

/// A claim near miss as a lead: its evidence locators the grant may read, sorted, at most
/// three and 4 KiB of ranged bytes; the title of the first one's revision.
fn claim_group(service: &Service, conn: Db<'_>, rank: usize, examined: &Examined) -> StoreResult<Option<Group>> {
    let Source::Claim(row) = &examined.source else {
        return Ok(None);
    };
    let mut locators: Vec<EvidenceRef> = store_claim::evidence_from_json(&row.evidence_json).unwrap_or_default();
    let key = locators.first().map_or_else(
        || row.claim_id.to_string(),
        |first| format!("{}@{}", first.artifact_id, first.revision_id),
    );
    let first = locators.first().cloned();
    locators.sort_by(|a, b| {
        (&a.artifact_id, &a.revision_id, a.start_byte, a.end_byte).cmp(&(
            &b.artifact_id,
            &b.revision_id,
            b.start_byte,
            b.end_byte,
        ))
    });
    locators.dedup();
    // One grant-checked read per distinct revision: its visibility and its title.
    let mut revisions: Vec<(EvidenceRef, Option<String>)> = Vec::new();
    let mut visible_title = |locator: &EvidenceRef| -> StoreResult<Option<String>> {
        let same = |(seen, _): &&(EvidenceRef, Option<String>)| {
            seen.artifact_id == locator.artifact_id && seen.revision_id == locator.revision_id
        };
        if let Some((_, title)) = revisions.iter().find(same) {
            return Ok(title.clone());
        }
        let title = match service.grant().evidence(conn, locator)? {
            Some(Reach::Visible(artifact)) => Some(artifact.title),
            _ => None,
        };
        revisions.push((locator.clone(), title.clone()));
        Ok(title)
    };
    let first_title = match &first {
        Some(first) => visible_title(first)?,
        None => None,
    };
    let mut sources = Vec::new();
    let mut ranges = Vec::new();
    let mut ranged_bytes = 0;
    let mut complete = true;
    for locator in &locators {
        if visible_title(locator)?.is_none() {
            continue;
        }
        let span = locator.start_byte.zip(locator.end_byte);
        let bytes = span.map_or(0, |(start, end)| end.saturating_sub(start));
        if sources.len() == MAX_LEAD_SOURCES || ranged_bytes + bytes > MAX_LEAD_SOURCE_BYTES {
            complete = false;
            break;
        }
        ranged_bytes += bytes;
        if let Some((start, end)) = span {
            ranges.push((
                locator.artifact_id.to_string(),
                locator.revision_id.to_string(),
                start,
                end,
            ));
        }
        sources.push(ProbeSource {
            citation: evidence_citation(&evidence_locator(locator)),
            locator_origin: if span.is_some() {
                LocatorOrigin::ClaimExact
            } else {
                LocatorOrigin::RevisionOnly
            },
            locator_policy_version: None,
            source_revision_hash: None,
            parent_citation: None,
        });
    }
    let title = first_title.unwrap_or_else(|| row.statement.clone());
    Ok(Some(Group {
        rank,
        is_claim: true,
        id: row.claim_id.to_string(),
        key,
        lead: ProbeLead {
            title: lead_title(&title),
            sources,
            evidence_locator_set_complete: complete,
        },
        ranges,
    }))
}

/// An artifact near miss as a lead: the exact bytes its match lies in (`artifact_exact`):
/// the cited passage of a long text, the whole text of a short one (what the reference's
/// one-chunk citation names); a body that is not exact text is only its revision
/// (`revision_only`).
fn artifact_group(plan: &Plan, rank: usize, examined: &Examined) -> Option<Group> {
    let Source::Artifact(row) = &examined.source else {
        return None;
    };
    let shown = artifact_excerpt(plan, row, examined.body.as_ref());
    let whole_text = examined
        .body
        .as_ref()
        .filter(|body| body.exact_bytes && !body.text.is_empty())
        .map(|body| (0, body.text.len()));
    let range = shown.passage.map(|p| p.cited).or(whole_text);
    let revision = artifact_citation(&row.artifact_id, &row.revision_id);
    let (citation, locator_origin) = match range {
        Some((start, end)) => (format!("{revision}#{start}-{end}"), LocatorOrigin::ArtifactExact),
        None => (revision, LocatorOrigin::RevisionOnly),
    };
    let ranges = range
        .map(|(start, end)| {
            vec![(
                row.artifact_id.to_string(),
                row.revision_id.to_string(),
                start as u64,
                end as u64,
            )]
        })
        .unwrap_or_default();
    Some(Group {
        rank,
        is_claim: false,
        id: row.artifact_id.to_string(),
        key: format!("{}@{}", row.artifact_id, row.revision_id),
        lead: ProbeLead {
            title: lead_title(&row.title),
            sources: vec![ProbeSource {
                citation,
                locator_origin,
                locator_policy_version: None,
                source_revision_hash: None,
                parent_citation: None,
            }],
            evidence_locator_set_complete: true,
        },
        ranges,
    })
}
