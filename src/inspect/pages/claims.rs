//! Claims: a filtered list, and each claim with its evidence (the cited revision with the
//! exact `[start, end)` span highlighted) and its revision timeline.

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::Value;

use super::{Page, Problem, Request, older_link};
use crate::inspect::links;
use crate::inspect::memory::{ClaimQuery, Memory, Scope};
use crate::inspect::view::source;
use crate::inspect::view::text::{clip, untrusted};
use crate::inspect::view::widgets::{self, list, n, opt, s};
use crate::protocol::browse::{ClaimStatus, TemporalState};
use crate::protocol::claim::ClaimType;
use crate::retrieval::risk::risk_signals;
use crate::timefmt;

/// Claims per list page.
const PAGE: u32 = 50;
/// Revisions shown in a timeline.
const HISTORY: u32 = 100;

/// A `<select>` of `options` named `name` with `current` selected and an "any" choice.
pub fn select(name: &str, label: &str, options: &[&str], current: Option<&str>) -> Markup {
    html! {
        label {
            (label) " "
            select name=(name) {
                option value="" selected[current.is_none()] { "any" }
                @for option in options {
                    option value=(option) selected[current == Some(*option)] { (option) }
                }
            }
        }
    }
}

/// Keeps a filter value only when it is one of `allowed`.
fn allowed<'a>(value: Option<&'a str>, allowed: &[&str]) -> Option<&'a str> {
    value.filter(|v| allowed.contains(v))
}

pub fn list_page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let types: Vec<&str> = ClaimType::ALL.iter().map(|t| t.as_str()).collect();
    let statuses: Vec<&str> = ClaimStatus::ALL.iter().map(|s| s.as_str()).collect();
    let states: Vec<&str> = TemporalState::ALL.iter().map(|s| s.as_str()).collect();
    let claim_type = allowed(request.params.get("type"), &types);
    let status = allowed(request.params.get("status"), &statuses);
    let validity = allowed(request.params.get("validity"), &states);
    let query = ClaimQuery {
        claim_type,
        status,
        temporal_state: validity,
        limit: PAGE,
        before_commit_seq: request.params.cursor("before"),
        ..ClaimQuery::default()
    };
    let result = memory.claim_list(scope, &query)?;
    let claims = list(&result, "claims");
    let next = result
        .get("next_before_commit_seq")
        .and_then(Value::as_i64)
        .map(|next| {
            let next = next.to_string();
            links::href(
                "/claims",
                scope,
                &[
                    ("type", claim_type.unwrap_or("")),
                    ("status", status.unwrap_or("")),
                    ("validity", validity.unwrap_or("")),
                    ("before", &next),
                ],
            )
        });
    let body = html! {
        form.filters method="get" action="/claims" {
            (select("type", "Type", &types, claim_type))
            (select("status", "Status", &statuses, status))
            (select("validity", "Validity", &states, validity))
            (hidden_scope(scope))
            button type="submit" { "Filter" }
        }
        p.count { (n(&result, "total")) " claims match" }
        @if claims.is_empty() {
            @if let Some(hint) = opt(&result, "broaden_hint") { p.hint { (hint) } }
        } @else {
            table.claims {
                thead { tr { th { "statement" } th { "type" } th { "status" } th { "validity" } th { "rev" } th { "evidence" } th { "revised" } } }
                tbody {
                    @for claim in claims {
                        @let statement = s(claim, "statement");
                        tr {
                            td {
                                a href=(links::claim(scope, s(claim, "claim_id"), None)) { (untrusted(&clip(statement, 240))) }
                                " " (widgets::risks(&risk_signals("", statement)))
                            }
                            td { (s(claim, "claim_type")) }
                            td { (widgets::status(s(claim, "status"))) }
                            td { (widgets::status(s(claim, "temporal_state"))) }
                            td { (n(claim, "revision_number")) }
                            td { (list(claim, "evidence").len()) }
                            td { (widgets::when(s(claim, "revision_created_at"))) }
                        }
                    }
                }
            }
        }
        (older_link(next))
    };
    Ok(Page::new("Claims", body))
}

/// Hidden inputs carrying the horizon into a page's own filter form.
pub fn hidden_scope(scope: &Scope) -> Markup {
    html! {
        @if scope.horizon.is_broad() {
            input type="hidden" name="horizon" value=(scope.horizon.as_str());
            input type="hidden" name="reason" value=(scope.reason.as_deref().unwrap_or(""));
        }
    }
}

/// `current`, `future` or `expired` for a claim record's validity window now.
fn temporal_state(claim: &Value) -> &'static str {
    let now = timefmt::now();
    let at = |key: &str| opt(claim, key).and_then(timefmt::parse_rfc3339);
    if at("valid_from").is_some_and(|from| from > now) {
        "future"
    } else if at("valid_until").is_some_and(|until| until <= now) {
        "expired"
    } else {
        "current"
    }
}

pub fn detail_page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let claim_id = request.id.ok_or_else(|| Problem::not_found("No claim id."))?;
    let claim = memory.claim_get(claim_id, request.params.get("revision"))?;
    let history = memory.claim_history(claim_id, HISTORY)?;
    let events = memory
        .event_list(scope, Some(("claim", Some(claim_id))), 100, None)
        .ok();
    let statement = s(&claim, "statement");
    let current_revision = list(&history, "revisions")
        .first()
        .map(|r| s(r, "revision_id"))
        .unwrap_or("");
    let is_current = s(&claim, "revision_id") == current_revision;
    let evidence = list(&claim, "evidence");
    let mut heads: HashMap<&str, Value> = HashMap::new();
    for locator in evidence {
        let artifact_id = s(locator, "artifact_id");
        if !heads.contains_key(artifact_id)
            && let Ok(head) = memory.artifact_get(artifact_id, None, false)
        {
            heads.insert(artifact_id, head);
        }
    }
    let body = html! {
        blockquote.statement { (untrusted(statement)) }
        p.badges {
            span.badge.plain { (s(&claim, "claim_type")) }
            " " (widgets::status(s(&claim, "status")))
            " " (widgets::status(temporal_state(&claim)))
            @if !is_current { " " span.badge.warn { "not the current revision" } }
            " " (widgets::risks(&risk_signals("", statement)))
        }
        dl.meta {
            dt { "claim" } dd {
                (widgets::id(claim_id)) " · " a href=(links::relations(scope, "claim", claim_id)) { "relations" }
                @if s(&claim, "status") == "conflicted" { " · " a href=(links::href("/conflicts", scope, &[])) { "open conflict cases" } }
            }
            dt { "revision" } dd { (widgets::id(s(&claim, "revision_id"))) " · r" (n(&claim, "revision_number"))
                " · commit " code { (n(&claim, "revision_commit_seq")) } }
            dt { "confidence" } dd { (opt_number(&claim, "confidence")) }
            dt { "valid" } dd { (opt(&claim, "valid_from").unwrap_or("always")) " → " (opt(&claim, "valid_until").unwrap_or("open-ended")) }
            dt { "context" } dd { (widgets::value(claim.get("context").unwrap_or(&Value::Null))) }
            dt { "actor" } dd { (untrusted(opt(&claim, "actor").unwrap_or("—"))) }
            dt { "created" } dd { (widgets::when(s(&claim, "created_at"))) " · this revision " (widgets::when(s(&claim, "revision_created_at"))) }
            @if let Some(reason) = opt(&claim, "retraction_reason") { dt { "retracted because" } dd { (untrusted(reason)) } }
        }
        (widgets::rest(&claim, CLAIM_FIELDS))
        section {
            h2 { "Evidence (" (evidence.len()) ")" }
            @if evidence.is_empty() { p.muted { "This revision cites no evidence." } }
            @for (index, locator) in evidence.iter().enumerate() {
                (evidence_item(memory, scope, index, locator, heads.get(s(locator, "artifact_id"))))
            }
        }
        section {
            h2 { "Timeline" }
            (timeline(scope, claim_id, s(&claim, "revision_id"), &history, events.as_ref()))
        }
        (widgets::raw("Raw claim.get result", &claim))
    };
    Ok(Page::new(format!("Claim: {}", clip(statement, 80)), body))
}

const CLAIM_FIELDS: &[&str] = &[
    "claim_id",
    "revision_id",
    "revision_number",
    "claim_type",
    "status",
    "statement",
    "confidence",
    "evidence",
    "valid_from",
    "valid_until",
    "context",
    "actor",
    "created_at",
    "revision_created_at",
    "revision_commit_seq",
    "retraction_reason",
];

fn opt_number(value: &Value, key: &str) -> String {
    value
        .get(key)
        .filter(|v| !v.is_null())
        .map_or_else(|| "—".to_owned(), Value::to_string)
}

/// The citation of an evidence locator.
fn citation(locator: &Value) -> String {
    let base = format!(
        "memoree://artifact/{}@{}",
        s(locator, "artifact_id"),
        s(locator, "revision_id")
    );
    match span(locator) {
        Some((start, end)) => format!("{base}#{start}-{end}"),
        None => base,
    }
}

fn span(locator: &Value) -> Option<(u64, u64)> {
    let start = locator.get("start_byte").and_then(Value::as_u64)?;
    let end = locator.get("end_byte").and_then(Value::as_u64)?;
    Some((start, end))
}

/// One evidence locator: the cited revision, with the span highlighted.
fn evidence_item(memory: &Memory, scope: &Scope, index: usize, locator: &Value, head: Option<&Value>) -> Markup {
    let artifact_id = s(locator, "artifact_id");
    let revision_id = s(locator, "revision_id");
    let cited = memory.artifact_get(artifact_id, Some(revision_id), true);
    html! {
        article.evidence id={ "evidence-" (index + 1) } {
            @match &cited {
                Err(error) => {
                    h3 { (index + 1) ". " code { (citation(locator)) } }
                    (widgets::failure(error))
                }
                Ok(record) => {
                    @let bytes = source::content_bytes(record).unwrap_or_default();
                    @let cited_text = span(locator)
                        .and_then(|(a, b)| bytes.get(a as usize..b as usize))
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default();
                    h3 {
                        (index + 1) ". "
                        a href=(links::artifact(scope, artifact_id, Some(revision_id))) { (untrusted(s(record, "title"))) }
                        " r" (n(record, "revision_number"))
                    }
                    p.badges {
                        code.citation { (citation(locator)) }
                        " " span.badge.plain { (s(record, "media_type")) }
                        @if let Some((start, end)) = span(locator) { " " span.badge.plain { (end - start) " bytes cited" } }
                        @if s(record, "status") == "forgotten" { " " (widgets::status("forgotten")) }
                        @if let Some(head) = head && s(head, "revision_id") != revision_id {
                            " " span.badge.warn { "older revision; current is r" (n(head, "revision_number")) }
                        }
                        " " (widgets::risks(&risk_signals(s(record, "title"), &cited_text)))
                    }
                    (source::evidence(&bytes, span(locator)))
                }
            }
        }
    }
}

/// Revisions and lifecycle events in commit order, oldest first.
fn timeline(scope: &Scope, claim_id: &str, shown: &str, history: &Value, events: Option<&Value>) -> Markup {
    let mut revisions: Vec<&Value> = list(history, "revisions").iter().collect();
    revisions.reverse();
    let kinds: HashMap<&str, &str> = events
        .map(|e| list(e, "events"))
        .unwrap_or_default()
        .iter()
        .filter_map(|e| Some((opt(e, "revision_id")?, s(e, "event_type"))))
        .filter(|(_, kind)| *kind != "claim.retract")
        .collect();
    let lifecycle: Vec<&Value> = events
        .map(|e| list(e, "events"))
        .unwrap_or_default()
        .iter()
        .filter(|e| s(e, "event_type") == "claim.retract")
        .collect();
    html! {
        ol.timeline {
            @for revision in &revisions {
                @let revision_id = s(revision, "revision_id");
                @let kind = kinds.get(revision_id).copied().unwrap_or(
                    if revision.get("revision_number").and_then(Value::as_i64) == Some(1) { "claim.assert" } else { "claim.revise" });
                li.shown[revision_id == shown] {
                    div.when { "commit " code { (n(revision, "revision_commit_seq")) } " · " (widgets::when(s(revision, "revision_created_at"))) }
                    div {
                        a href=(links::claim(scope, claim_id, Some(revision_id))) { "r" (n(revision, "revision_number")) }
                        " " strong { (kind) } " by " (untrusted(opt(revision, "actor").unwrap_or("—")))
                        @if revision_id == shown { " " span.badge.plain { "shown above" } }
                    }
                    blockquote { (untrusted(&clip(s(revision, "statement"), 600))) }
                    p.muted { "confidence " (opt_number(revision, "confidence")) " · "
                        (list(revision, "evidence").len()) " evidence: "
                        @for (i, locator) in list(revision, "evidence").iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (citation(locator)) }
                        }
                    }
                }
            }
            @for event in lifecycle {
                li.lifecycle {
                    div.when { "commit " code { (n(event, "commit_seq")) } " · " (widgets::when(s(event, "created_at"))) }
                    div { strong { (s(event, "event_type")) } " by " (untrusted(opt(event, "actor").unwrap_or("—"))) }
                    (widgets::value(event.get("payload").unwrap_or(&Value::Null)))
                }
            }
        }
        @if history.get("truncated").and_then(Value::as_bool) == Some(true) {
            p.muted { "Older revisions exist beyond the newest " (HISTORY) "." }
        }
    }
}
