//! One case: recall, search and context.build for the same query, judged by label, with
//! the hard invariants checked on every response.

use std::collections::{BTreeSet, HashMap};

use base64::Engine as _;
use serde_json::{Value, json};

use super::corpus::Case;
use super::seed::{Seeded, exchange, owner, wire_context};
use super::{CaseReport, EvalError};
use crate::client::Transport;
use crate::protocol::artifact::ArtifactGetInput;
use crate::protocol::retrieval::{ContextBuildInput, RecallInput, SearchInput};
use crate::protocol::{ContextSource, Horizon, Input, Request};
use crate::store::relation::pin_names_artifact;

/// Failure prefixes counted in the aggregate.
pub const BUDGET: &str = "budget";
pub const PARITY: &str = "citation parity";
pub const SCOPE: &str = "scope";
pub const FORBIDDEN: &str = "forbidden";
pub const FALSE_ANSWER: &str = "false answer";
pub const EXCERPT_CITATION: &str = "excerpt citation";

fn horizon(case: &Case) -> Horizon {
    match case.horizon.as_str() {
        "workspace" => Horizon::Workspace,
        "personal" => Horizon::Personal,
        _ => Horizon::Ambient,
    }
}

/// Replaces `label:<label>` pins with the labelled artifact's id.
fn resolve_pins(case: &Case, seeded: &Seeded) -> Case {
    let mut resolved = case.clone();
    for pin in &mut resolved.context.pins {
        if let Some(label) = pin.strip_prefix("label:")
            && let Some(id) = seeded.artifact_id(label)
        {
            *pin = id.to_owned();
        }
    }
    resolved
}

/// A read of `case`'s query in its context: `input` with the query, horizon and reason set.
fn read<I: Input>(case: &Case, input: I) -> Request<I> {
    Request::new(format!("eval-{}-{}", case.id, I::OP), input)
        .with_context(wire_context(&case.context), ContextSource::Explicit)
}

fn items<'a>(value: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    value[field].as_array().into_iter().flatten()
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Recall over `relevant` given what was `returned`: `None` when nothing is relevant.
fn recall_of(relevant: &[String], returned: &BTreeSet<String>) -> Option<f64> {
    if relevant.is_empty() {
        return None;
    }
    let found = relevant.iter().filter(|l| returned.contains(*l)).count();
    Some(found as f64 / relevant.len() as f64)
}

fn precision_of(relevant: &[String], returned: &BTreeSet<String>) -> f64 {
    if returned.is_empty() {
        return if relevant.is_empty() { 1.0 } else { 0.0 };
    }
    let hits = returned.iter().filter(|l| relevant.contains(l)).count();
    hits as f64 / returned.len() as f64
}

struct Judge<'a> {
    case: &'a Case,
    seeded: &'a Seeded,
    /// Expectation misses (presence, a relevant label, an excerpt), gated by slice.
    failures: Vec<String>,
    /// Invariant violations, which fail the run whatever the case's gate.
    violations: Vec<String>,
}

impl Judge<'_> {
    /// The label of a returned entity; an unseeded id is a failure.
    fn label(&mut self, op: &str, entity_type: &str, entity_id: &Value, revision_id: &Value) -> Option<String> {
        let found = self.seeded.label_of(entity_type, text(entity_id), text(revision_id));
        if found.is_none() {
            self.violations
                .push(format!("{op} returned unseeded {entity_type} {}", text(entity_id)));
        }
        found.map(str::to_owned)
    }

    /// Forbidden labels and labels outside the case's horizon.
    fn admissible(&mut self, op: &str, label: &str) {
        if self.case.forbidden.iter().any(|f| f == label) {
            self.violations
                .push(format!("{FORBIDDEN}: {op} returned forbidden label {label}"));
        }
        self.in_horizon(op, label);
    }

    /// Labels outside the case's horizon (near misses may name forbidden labels, never
    /// invisible ones).
    fn in_horizon(&mut self, op: &str, label: &str) {
        let Some(owner_scope) = self.seeded.owners.get(label) else {
            return;
        };
        let ambient = owner(&self.case.context);
        let pinned = self
            .seeded
            .artifact_id(label)
            .is_some_and(|id| self.case.context.pins.iter().any(|pin| pin_names_artifact(pin, id)));
        if !pinned && !owner_scope.visible_from(&ambient, horizon(self.case)) {
            self.violations.push(format!(
                "{SCOPE}: {op} returned {label} from {} outside the {} horizon",
                owner_scope.describe(),
                self.case.horizon
            ));
        }
    }
}

/// Evaluates one case.
pub fn evaluate(case: &Case, seeded: &Seeded, transport: &dyn Transport) -> Result<CaseReport, EvalError> {
    let case = &resolve_pins(case, seeded);
    let mut judge = Judge {
        case,
        seeded,
        failures: Vec::new(),
        violations: Vec::new(),
    };
    let (horizon, reason) = (horizon(case), case.reason.clone());
    let recall = RecallInput {
        horizon,
        reason: reason.clone(),
        max_claims: case.max_claims as i64,
        max_artifact_refs: case.max_artifact_refs as i64,
        max_excerpt_bytes: case.max_excerpt_bytes as i64,
        ..RecallInput::new(case.query.clone())
    };
    let recall = exchange(transport, &read(case, recall))?;
    let search = SearchInput {
        horizon,
        reason: reason.clone(),
        limit: 100,
        ..SearchInput::new(case.query.clone())
    };
    let search = exchange(transport, &read(case, search))?;
    let bundle = ContextBuildInput {
        horizon,
        reason,
        limit: (case.max_claims + case.max_artifact_refs).min(100) as i64,
        max_bytes: case.max_context_bytes as u64,
        ..ContextBuildInput::new(case.query.clone())
    };
    let bundle = exchange(transport, &read(case, bundle))?;
    let (recall, search, bundle) = match (recall, search, bundle) {
        (Ok(r), Ok(s), Ok(b)) => (r, s, b),
        (r, s, b) => {
            for (op, outcome) in [("memory.recall", r), ("search", s), ("context.build", b)] {
                if let Err(error) = outcome {
                    judge
                        .failures
                        .push(format!("{op} failed: {} {}", error.code.as_str(), error.message));
                }
            }
            return Ok(report(case, judge, "error", BTreeSet::new(), BTreeSet::new(), 0));
        }
    };

    // Recall: presence, horizons, labels.
    let presence = text(&recall["presence"]).to_owned();
    if presence != case.presence {
        judge
            .failures
            .push(format!("presence is {presence}, expected {}", case.presence));
    }
    if recall["searched_horizons"] != json!([case.horizon]) {
        judge.violations.push(format!(
            "searched_horizons is {}, expected [{}]",
            recall["searched_horizons"], case.horizon
        ));
    }
    let mut claims = BTreeSet::new();
    for claim in items(&recall, "claims") {
        if let Some(label) = judge.label("memory.recall", "claim", &claim["claim_id"], &claim["revision_id"]) {
            judge.admissible("memory.recall", &label);
            claims.insert(label);
        }
    }
    let mut artifacts = BTreeSet::new();
    for reference in items(&recall, "artifact_refs") {
        let label = judge.label(
            "memory.recall",
            "artifact",
            &reference["artifact_id"],
            &reference["revision_id"],
        );
        if let Some(label) = label {
            judge.admissible("memory.recall", &label);
            artifacts.insert(label);
        }
    }
    if case.presence != "claims" && !claims.is_empty() {
        judge.violations.push(format!(
            "{FALSE_ANSWER}: recall returned claims {claims:?} for a question memory cannot answer"
        ));
    }
    if case.gate == super::Gate::Hard || case.slice.is_some() {
        for label in case.relevant_claims.iter().filter(|l| !claims.contains(*l)) {
            judge.failures.push(format!("relevant claim {label} is missing"));
        }
        for label in case.relevant_artifacts.iter().filter(|l| !artifacts.contains(*l)) {
            judge.failures.push(format!("relevant artifact {label} is missing"));
        }
    }
    for [left, right] in &case.conflicts {
        let (Some(a), Some(b)) = (seeded.claim_id(left), seeded.claim_id(right)) else {
            judge.failures.push(format!("conflict {left}/{right} names non-claims"));
            continue;
        };
        let surfaced = items(&recall, "conflicts").any(|c| {
            let (l, r) = (text(&c["left_id"]), text(&c["right_id"]));
            (l == a && r == b) || (l == b && r == a)
        });
        if !surfaced {
            judge
                .failures
                .push(format!("conflict between {left} and {right} is not surfaced"));
        }
    }

    // Search: the broadening hint, labels, and recall citations must be search citations.
    let empty_ambient = items(&search, "hits").next().is_none() && case.horizon == "ambient";
    if search.get("broaden_hint").is_some_and(Value::is_string) != empty_ambient {
        judge
            .violations
            .push("search broaden_hint must appear exactly on an empty ambient result".to_owned());
    }
    if recall.get("broaden_hint").is_some() {
        judge.violations.push("recall must never suggest broadening".to_owned());
    }
    let citations: BTreeSet<&str> = items(&search, "hits").map(|h| text(&h["citation"])).collect();
    for hit in items(&search, "hits") {
        let entity_type = text(&hit["entity_type"]).to_owned();
        if let Some(label) = judge.label("search", &entity_type, &hit["entity_id"], &hit["revision_id"]) {
            judge.admissible("search", &label);
        }
    }
    for (op, result) in [("search", &search), ("memory.recall", &recall)] {
        for miss in items(result, "near_misses") {
            let entity_type = text(&miss["entity_type"]).to_owned();
            if let Some(label) = judge.label(op, &entity_type, &miss["entity_id"], &miss["revision_id"]) {
                judge.in_horizon(&format!("{op} near_misses"), &label);
            }
            if miss["qualification"]["qualified"] != json!(false) {
                judge.violations.push(format!("{op} reported a qualified near miss"));
            }
        }
    }
    check_excerpts(&mut judge, &search, &recall);
    let recalled = items(&recall, "claims").chain(items(&recall, "artifact_refs"));
    for citation in recalled.map(|item| text(&item["citation"])) {
        if !citations.contains(citation) {
            judge
                .violations
                .push(format!("{PARITY}: recall citation {citation} is not a search citation"));
        }
    }
    let mut contents = Contents::default();
    check_evidence(&mut judge, &recall, transport, &mut contents)?;
    check_excerpt_citations(&mut judge, &[&search, &recall, &bundle], transport, &mut contents)?;

    // Context bundle: budget, labels, evidence citations in the Markdown.
    let used = bundle["used_bytes"].as_u64().unwrap_or(u64::MAX);
    let markdown = text(&bundle["rendered_markdown"]);
    if used > case.max_context_bytes as u64
        || bundle["max_bytes"].as_u64() != Some(case.max_context_bytes as u64)
        || markdown.len() as u64 != used
    {
        judge.violations.push(format!(
            "{BUDGET}: used {used} bytes ({} rendered) of max_bytes {} (requested {})",
            markdown.len(),
            bundle["max_bytes"],
            case.max_context_bytes
        ));
    }
    for item in items(&bundle, "manifest") {
        let entity_type = text(&item["entity_type"]).to_owned();
        if let Some(label) = judge.label("context.build", &entity_type, &item["entity_id"], &item["revision_id"]) {
            judge.admissible("context.build", &label);
        }
        if entity_type == "claim" {
            for locator in items(&item["provenance"], "evidence") {
                let mut citation = format!(
                    "memoree://artifact/{}@{}",
                    text(&locator["artifact_id"]),
                    text(&locator["revision_id"])
                );
                if let (Some(s), Some(e)) = (locator["start_byte"].as_u64(), locator["end_byte"].as_u64()) {
                    citation.push_str(&format!("#{s}-{e}"));
                }
                if !markdown.contains(&citation) {
                    judge
                        .violations
                        .push(format!("rendered Markdown lacks evidence citation {citation}"));
                }
            }
        }
    }
    Ok(report(case, judge, &presence, claims, artifacts, used))
}

/// Artifact revision contents fetched by exact get, once each.
#[derive(Default)]
struct Contents(HashMap<(String, String), Option<Vec<u8>>>);

impl Contents {
    fn get(&mut self, transport: &dyn Transport, artifact: &str, revision: &str) -> Result<Option<&[u8]>, EvalError> {
        let key = (artifact.to_owned(), revision.to_owned());
        if !self.0.contains_key(&key) {
            let get = ArtifactGetInput {
                revision_id: Some(revision.into()),
                ..ArtifactGetInput::current(artifact)
            };
            let bytes = exchange(transport, &Request::new("eval-evidence", get))?
                .ok()
                .and_then(|record| decode(&record["content"]));
            self.0.insert(key.clone(), bytes);
        }
        Ok(self.0[&key].as_deref())
    }
}

/// `memoree://artifact/ID@REV#START-END` → its parts.
fn parse_excerpt_citation(citation: &str) -> Option<(&str, &str, usize, usize)> {
    let rest = citation.strip_prefix("memoree://artifact/")?;
    let (artifact, rest) = rest.split_once('@')?;
    let (revision, span) = rest.split_once('#')?;
    let (start, end) = span.split_once('-')?;
    Some((artifact, revision, start.parse().ok()?, end.parse().ok()?))
}

/// Every `excerpt_citation` in search hits, near misses, recall references, evidence and
/// the bundle manifest names existing bytes, and (where the excerpt is at hand) exactly
/// the excerpt's bytes.
fn check_excerpt_citations(
    judge: &mut Judge<'_>,
    results: &[&Value],
    transport: &dyn Transport,
    contents: &mut Contents,
) -> Result<(), EvalError> {
    let mut shown: Vec<(String, Option<String>)> = Vec::new();
    let (search, recall, bundle) = (results[0], results[1], results[2]);
    for item in items(search, "hits")
        .chain(items(search, "near_misses"))
        .chain(items(recall, "artifact_refs"))
        .chain(items(recall, "near_misses"))
        .chain(items(recall, "claims").flat_map(|c| items(c, "evidence")))
    {
        if let Some(citation) = item["excerpt_citation"].as_str() {
            shown.push((citation.to_owned(), item["excerpt"].as_str().map(str::to_owned)));
        } else if item["entity_type"] == json!("artifact") && !text(&item["excerpt"]).is_empty() {
            judge.violations.push(format!(
                "{EXCERPT_CITATION}: an artifact excerpt of {} has no citation",
                text(&item["citation"])
            ));
        }
    }
    for item in items(bundle, "manifest") {
        if let Some(citation) = item["excerpt_citation"].as_str() {
            shown.push((citation.to_owned(), None));
        }
    }
    for (citation, excerpt) in shown {
        let Some((artifact, revision, start, end)) = parse_excerpt_citation(&citation) else {
            judge
                .violations
                .push(format!("{EXCERPT_CITATION}: {citation} does not parse"));
            continue;
        };
        let Some(bytes) = contents.get(transport, artifact, revision)? else {
            judge
                .violations
                .push(format!("{EXCERPT_CITATION}: {citation} does not resolve"));
            continue;
        };
        let exact = match &excerpt {
            Some(excerpt) => crate::retrieval::snippet::excerpt_round_trips(excerpt, bytes, start, end),
            None => start < end && end <= bytes.len(),
        };
        if !exact {
            judge.violations.push(format!(
                "{EXCERPT_CITATION}: {citation} does not round-trip to its excerpt"
            ));
        }
    }
    Ok(())
}

/// The case's excerpt expectations: the labelled artifact's search hit (and recall
/// reference, when returned) shows the given text.
fn check_excerpts(judge: &mut Judge<'_>, search: &Value, recall: &Value) {
    use crate::retrieval::snippet::{HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN};
    let plain = |s: &str| s.replace(HIGHLIGHT_OPEN, "").replace(HIGHLIGHT_CLOSE, "");
    for (label, needle) in &judge.case.excerpts.clone() {
        let Some(id) = judge.seeded.artifact_id(label).map(str::to_owned) else {
            continue;
        };
        let hit = items(search, "hits").find(|h| text(&h["entity_id"]) == id);
        match hit {
            Some(hit) if plain(text(&hit["excerpt"])).contains(needle.as_str()) => {}
            Some(hit) => judge.failures.push(format!(
                "the search excerpt of {label} does not show {needle:?}: {:?}",
                text(&hit["excerpt"])
            )),
            None => judge
                .failures
                .push(format!("search did not return {label} to show {needle:?}")),
        }
        if let Some(reference) = items(recall, "artifact_refs").find(|r| text(&r["artifact_id"]) == id)
            && !plain(text(&reference["excerpt"])).contains(needle.as_str())
        {
            judge.failures.push(format!(
                "the recall excerpt of {label} does not show {needle:?}: {:?}",
                text(&reference["excerpt"])
            ));
        }
    }
}

/// Every evidence reference resolves by exact get, its span lies inside the revision, and
/// its preview equals the cited bytes (or a prefix of them when truncated).
fn check_evidence(
    judge: &mut Judge<'_>,
    recall: &Value,
    transport: &dyn Transport,
    contents: &mut Contents,
) -> Result<(), EvalError> {
    for reference in items(recall, "claims").flat_map(|c| items(c, "evidence")) {
        let Some(bytes) = contents.get(
            transport,
            text(&reference["artifact_id"]),
            text(&reference["revision_id"]),
        )?
        else {
            judge
                .violations
                .push(format!("evidence {} does not resolve", text(&reference["citation"])));
            continue;
        };
        let span = match (reference["start_byte"].as_u64(), reference["end_byte"].as_u64()) {
            (Some(s), Some(e)) => Some((s as usize, e as usize)),
            (None, None) => None,
            _ => {
                judge
                    .violations
                    .push(format!("evidence {} has half a span", text(&reference["citation"])));
                continue;
            }
        };
        let (start, end) = span.unwrap_or((0, bytes.len()));
        if start > end || end > bytes.len() || (span.is_some() && start == end) {
            judge
                .violations
                .push(format!("evidence {} is out of bounds", text(&reference["citation"])));
            continue;
        }
        if let Some(excerpt) = reference["excerpt"].as_str() {
            let cited = String::from_utf8_lossy(&bytes[start..end]);
            let truncated = reference["excerpt_truncated"].as_bool() == Some(true);
            // A truncated preview is a window inside the cited bytes; its own
            // excerpt_citation (checked separately) names exactly where.
            let inside = match reference["excerpt_citation"].as_str().and_then(parse_excerpt_citation) {
                Some((_, _, from, to)) => start <= from && to <= end,
                None => cited.starts_with(excerpt),
            };
            let exact = if truncated {
                inside && cited.contains(excerpt) && excerpt.len() <= judge.case.max_excerpt_bytes
            } else {
                cited == excerpt
            };
            if !exact {
                judge.violations.push(format!(
                    "evidence excerpt of {} does not round-trip to the cited bytes",
                    text(&reference["citation"])
                ));
            }
        }
    }
    Ok(())
}

fn decode(content: &Value) -> Option<Vec<u8>> {
    let data = content["data"].as_str()?;
    match content["type"].as_str()? {
        "text" => Some(data.as_bytes().to_vec()),
        "base64" => base64::engine::general_purpose::STANDARD.decode(data).ok(),
        _ => None,
    }
}

fn report(
    case: &Case,
    judge: Judge<'_>,
    presence: &str,
    claims: BTreeSet<String>,
    artifacts: BTreeSet<String>,
    used: u64,
) -> CaseReport {
    CaseReport {
        case_id: case.id.clone(),
        gate: case.gate,
        slice: case.slice,
        presence: presence.to_owned(),
        claim_recall: recall_of(&case.relevant_claims, &claims),
        claim_precision: precision_of(&case.relevant_claims, &claims),
        artifact_recall: recall_of(&case.relevant_artifacts, &artifacts),
        artifact_precision: precision_of(&case.relevant_artifacts, &artifacts),
        returned_claims: claims.into_iter().collect(),
        returned_artifacts: artifacts.into_iter().collect(),
        context_used_bytes: used,
        context_max_bytes: case.max_context_bytes as u64,
        failures: judge.failures,
        violations: judge.violations,
    }
}
