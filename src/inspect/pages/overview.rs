//! Overview: what the horizon holds (counts that link to filtered lists), the store's health
//! (`doctor`, and `verify` on request since it re-reads every blob) and recent events.

use maud::{Markup, html};
use serde_json::Value;

use super::{Page, Problem, Request, older_link};
use crate::inspect::links;
use crate::inspect::memory::{ArtifactQuery, ClaimQuery, Memory, Scope};
use crate::inspect::view::text::{bytes, untrusted};
use crate::inspect::view::widgets::{self, list, n, opt, s};
use crate::protocol::browse::{ClaimStatus, TemporalState};

/// Recent events shown per page.
const EVENTS: u32 = 25;

fn total(result: &Value) -> u64 {
    result.get("total").and_then(Value::as_u64).unwrap_or(0)
}

pub fn page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let artifacts = |status: Option<&str>| {
        memory
            .artifact_list(
                scope,
                &ArtifactQuery {
                    status,
                    limit: 1,
                    ..ArtifactQuery::default()
                },
            )
            .map(|r| total(&r))
    };
    let claims = |query: ClaimQuery<'_>| {
        memory
            .claim_list(scope, &ClaimQuery { limit: 1, ..query })
            .map(|r| total(&r))
    };
    let artifact_total = artifacts(None)?;
    let forgotten = artifacts(Some("forgotten"))?;
    let claim_total = claims(ClaimQuery::default())?;
    let mut by_status = Vec::new();
    for status in ClaimStatus::ALL {
        by_status.push((
            status.as_str(),
            claims(ClaimQuery {
                status: Some(status.as_str()),
                ..ClaimQuery::default()
            })?,
        ));
    }
    let mut by_validity = Vec::new();
    for state in TemporalState::ALL {
        let query = ClaimQuery {
            temporal_state: Some(state.as_str()),
            ..ClaimQuery::default()
        };
        by_validity.push((state.as_str(), claims(query)?));
    }
    let conflicts = memory.conflict_list(scope, false, None)?;
    let open_cases = list(&conflicts, "conflicts").len();
    let more_cases = conflicts.get("truncated").and_then(Value::as_bool).unwrap_or(false);
    let events = memory.event_list(scope, None, EVENTS, request.params.cursor("events_before"))?;
    let doctor = memory.doctor();
    let verify = request.params.get("verify").map(|_| memory.verify());

    let claims_link = |key: &str, value: &str| links::href("/claims", scope, &[(key, value)]);
    let body = html! {
        section.cards {
            div.card {
                h2 { "Artifacts" }
                p.big { a href=(links::href("/artifacts", scope, &[])) { (artifact_total) } }
                p { (artifact_total - forgotten) " active · "
                    a href=(links::href("/artifacts", scope, &[("status", "forgotten")])) { (forgotten) " forgotten" } }
            }
            div.card {
                h2 { "Claims" }
                p.big { a href=(links::href("/claims", scope, &[])) { (claim_total) } }
                p { @for (index, (status, count)) in by_status.iter().enumerate() {
                    @if index > 0 { " · " }
                    a href=(claims_link("status", status)) { (count) " " (status) }
                } }
                p { @for (index, (state, count)) in by_validity.iter().enumerate() {
                    @if index > 0 { " · " }
                    a href=(claims_link("validity", state)) { (count) " " (state) }
                } }
            }
            div.card {
                h2 { "Open conflicts" }
                p.big { a href=(links::href("/conflicts", scope, &[])) { (open_cases) @if more_cases { "+" } } }
                p { "contradiction cases over current revisions" }
            }
        }
        section {
            h2 { "Store health" }
            (health(doctor, verify, scope))
        }
        section {
            h2 { "Recent events" }
            (events_table(&events, scope))
            (older_link(events.get("next_before_commit_seq").and_then(Value::as_i64).map(|next| {
                links::href("/", scope, &[("events_before", &next.to_string())])
            })))
        }
    };
    Ok(Page::new("Overview", body))
}

fn health(
    doctor: Result<Value, crate::protocol::ErrorBody>,
    verify: Option<Result<Value, crate::protocol::ErrorBody>>,
    scope: &Scope,
) -> Markup {
    const DOCTOR_FIELDS: [&str; 12] = [
        "status",
        "running",
        "daemon_pid",
        "last_commit_seq",
        "schema_version",
        "database_bytes",
        "blob_bytes",
        "blob_count",
        "disk_free_bytes",
        "version",
        "data_dir",
        "retrieval_mode",
    ];
    html! {
        @match &doctor {
            Ok(doctor) => {
                dl.meta {
                    dt { "doctor" } dd { (widgets::status(s(doctor, "status"))) }
                    dt { "last commit_seq" } dd { code { (n(doctor, "last_commit_seq")) } }
                    dt { "daemon pid" } dd { (n(doctor, "daemon_pid")) }
                    dt { "schema version" } dd { (n(doctor, "schema_version")) }
                    dt { "database" } dd { (size(doctor, "database_bytes")) }
                    dt { "blobs" } dd { (n(doctor, "blob_count")) " in CAS, " (size(doctor, "blob_bytes")) }
                    dt { "disk free" } dd { (size(doctor, "disk_free_bytes")) }
                    dt { "version" } dd { (s(doctor, "version")) }
                    dt { "data directory" } dd { code { (untrusted(s(doctor, "data_dir"))) } }
                    dt { "retrieval" } dd { (s(doctor, "retrieval_mode")) " over " (s(doctor, "authoritative_store")) }
                }
                (widgets::rest(doctor, &[&DOCTOR_FIELDS[..], &["authoritative_store"]].concat()))
            }
            Err(error) => (widgets::failure(error)),
        }
        @match &verify {
            None => p { a.button href=(links::href("/", scope, &[("verify", "1")])) { "Run verify" }
                        span.muted { " re-reads and re-hashes every revision and blob" } },
            Some(Err(error)) => (widgets::failure(error)),
            Some(Ok(report)) => {
                @let ok = report.get("ok").and_then(Value::as_bool).unwrap_or(false);
                p { "verify: " (widgets::status(if ok { "ok" } else { "issues" }))
                    " " (n(report, "checked_artifact_revisions")) " artifact revisions, "
                    (n(report, "checked_claim_revisions")) " claim revisions and "
                    (n(report, "checked_external_blobs")) " external blobs checked" }
                @let issues = list(report, "issues");
                @if !issues.is_empty() {
                    ul.issues { @for issue in issues { li { (widgets::value(issue)) } } }
                }
                @let warnings = list(report, "warnings");
                @if !warnings.is_empty() {
                    ul.warnings { @for warning in warnings { li { (widgets::value(warning)) } } }
                }
            }
        }
    }
}

fn size(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_u64)
        .map(bytes)
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A table of `event.list` events.
pub fn events_table(events: &Value, scope: &Scope) -> Markup {
    let items = list(events, "events");
    html! {
        @if items.is_empty() {
            p.muted { "No events are visible at this horizon." }
            @if let Some(hint) = opt(events, "broaden_hint") { p.hint { (hint) } }
        } @else {
            table.events {
                thead { tr { th { "commit" } th { "when" } th { "event" } th { "entity" } th { "actor" } th { "details" } } }
                tbody {
                    @for event in items {
                        tr {
                            td { code { (n(event, "commit_seq")) } }
                            td { (widgets::when(s(event, "created_at"))) }
                            td { (s(event, "event_type")) }
                            td { (event_entity(event, scope)) }
                            td { (untrusted(opt(event, "actor").unwrap_or("—"))) }
                            td { (event_details(event, scope)) }
                        }
                    }
                }
            }
        }
    }
}

/// The entity an event is about; a relation event links to the relations of its source.
fn event_entity(event: &Value, scope: &Scope) -> Markup {
    let entity_id = s(event, "entity_id");
    match s(event, "entity_type") {
        "relation" => {
            let payload = event.get("payload").unwrap_or(&Value::Null);
            let href = links::relations(scope, s(payload, "source_type"), s(payload, "source_id"));
            html! { a.entity href=(href) { (widgets::id(entity_id)) } }
        }
        entity_type => widgets::entity(scope, entity_type, entity_id, None),
    }
}

/// What an event's payload adds: the edge of a relation event, a reason, a previous revision.
fn event_details(event: &Value, scope: &Scope) -> Markup {
    let payload = event.get("payload").unwrap_or(&Value::Null);
    if s(event, "event_type") == "relation.put" {
        let end = |side: &str| {
            let (entity_type, entity_id) = (s(payload, &format!("{side}_type")), s(payload, &format!("{side}_id")));
            html! { (entity_type) " " (widgets::entity(scope, entity_type, entity_id, None)) }
        };
        let metadata = payload
            .get("metadata")
            .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()));
        return html! {
            (end("source")) " —" strong { (s(payload, "relation")) } "→ " (end("target"))
            @if let Some(metadata) = metadata { div { "metadata: " (widgets::value(metadata)) } }
        };
    }
    match payload.as_object() {
        Some(map) if map.is_empty() => html! { span.muted { "—" } },
        _ => widgets::value(payload),
    }
}
