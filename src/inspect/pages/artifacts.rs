//! Artifacts: a filtered list; each artifact with its content (text, or media type, size and
//! hex for binary), its revisions and the claims citing each revision; and a diff between
//! two revisions.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde_json::Value;

use super::claims::{hidden_scope, select};
use super::{Page, Problem, Request, older_link};
use crate::inspect::links::{self, segment};
use crate::inspect::memory::{ArtifactQuery, ClaimQuery, Memory, Scope};
use crate::inspect::view::text::{bytes as human_bytes, clip, untrusted};
use crate::inspect::view::widgets::{self, list, n, opt, s};
use crate::inspect::view::{diff, source};
use crate::retrieval::risk::risk_signals;

/// Artifacts per list page.
const PAGE: u32 = 50;
/// Revisions listed on an artifact page.
const HISTORY: u32 = 100;

pub fn list_page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let status = request
        .params
        .get("status")
        .filter(|s| ["active", "forgotten"].contains(s));
    let kind = request.params.get("kind");
    let query = ArtifactQuery {
        kind,
        status,
        limit: PAGE,
        before_commit_seq: request.params.cursor("before"),
    };
    let result = memory.artifact_list(scope, &query)?;
    let artifacts = list(&result, "artifacts");
    let next = result
        .get("next_before_commit_seq")
        .and_then(Value::as_i64)
        .map(|next| {
            let next = next.to_string();
            links::href(
                "/artifacts",
                scope,
                &[
                    ("kind", kind.unwrap_or("")),
                    ("status", status.unwrap_or("")),
                    ("before", &next),
                ],
            )
        });
    let body = html! {
        form.filters method="get" action="/artifacts" {
            label { "Kind " input type="text" name="kind" value=(kind.unwrap_or("")) placeholder="any"; }
            (select("status", "Status", &["active", "forgotten"], status))
            (hidden_scope(scope))
            button type="submit" { "Filter" }
        }
        p.count { (n(&result, "total")) " artifacts match" }
        @if artifacts.is_empty() {
            @if let Some(hint) = opt(&result, "broaden_hint") { p.hint { (hint) } }
        } @else {
            table.artifacts {
                thead { tr { th { "title" } th { "kind" } th { "status" } th { "media type" } th { "size" } th { "rev" } th { "revised" } } }
                tbody {
                    @for artifact in artifacts {
                        tr {
                            td {
                                a href=(links::artifact(scope, s(artifact, "artifact_id"), None)) { (untrusted(&clip(s(artifact, "title"), 200))) }
                                " " (widgets::risks(&risk_signals(s(artifact, "title"), "")))
                            }
                            td { (untrusted(s(artifact, "kind"))) }
                            td { (widgets::status(s(artifact, "status"))) }
                            td { (untrusted(s(artifact, "media_type"))) }
                            td { (size(artifact)) }
                            td { (n(artifact, "revision_number")) }
                            td { (widgets::when(s(artifact, "revision_created_at"))) }
                        }
                    }
                }
            }
        }
        (older_link(next))
    };
    Ok(Page::new("Artifacts", body))
}

fn size(record: &Value) -> String {
    record
        .get("size_bytes")
        .and_then(Value::as_u64)
        .map(human_bytes)
        .unwrap_or_default()
}

pub fn detail_page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let artifact_id = request.id.ok_or_else(|| Problem::not_found("No artifact id."))?;
    let record = memory.artifact_get(artifact_id, request.params.get("revision"), true)?;
    let history = memory.artifact_history(artifact_id, HISTORY)?;
    let citing = memory.claim_list(
        scope,
        &ClaimQuery {
            cites_artifact_id: Some(artifact_id),
            all_revisions: true,
            limit: 100,
            ..ClaimQuery::default()
        },
    )?;
    let revisions = list(&history, "revisions");
    let current = revisions.first().map(|r| s(r, "revision_id")).unwrap_or("");
    let shown = s(&record, "revision_id");
    let bytes = source::content_bytes(&record).unwrap_or_default();
    let is_text = record.pointer("/content/type").and_then(Value::as_str) == Some("text");
    let text = if is_text {
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        String::new()
    };
    // Artifact revision id → the claim revisions citing it.
    let mut cited_by: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for claim in list(&citing, "claims") {
        for locator in list(claim, "evidence")
            .iter()
            .filter(|l| s(l, "artifact_id") == artifact_id)
        {
            let entry = cited_by.entry(s(locator, "revision_id")).or_default();
            if !entry.iter().any(|c| s(c, "revision_id") == s(claim, "revision_id")) {
                entry.push(claim);
            }
        }
    }
    let title = s(&record, "title");
    let body = html! {
        p.badges {
            span.badge.plain { (untrusted(s(&record, "kind"))) }
            " " (widgets::status(s(&record, "status")))
            @if shown != current { " " span.badge.warn { "older revision" } }
            " " span.badge.plain { (untrusted(s(&record, "media_type"))) }
            " " span.badge.plain { (size(&record)) }
            " " (widgets::risks(&risk_signals(title, &text)))
        }
        dl.meta {
            dt { "artifact" } dd { (widgets::id(artifact_id)) " · " a href=(links::relations(scope, "artifact", artifact_id)) { "relations" } }
            dt { "revision" } dd { (widgets::id(shown)) " · r" (n(&record, "revision_number")) " of " (revisions.len())
                " · commit " code { (n(&record, "revision_commit_seq")) } }
            dt { "blob" } dd { code { (s(&record, "blob_hash")) } }
            dt { "context" } dd { (widgets::value(record.get("context").unwrap_or(&Value::Null))) }
            dt { "provenance" } dd { (widgets::value(record.get("provenance").unwrap_or(&Value::Null))) }
            dt { "actor" } dd { (untrusted(opt(&record, "actor").unwrap_or("—"))) }
            dt { "created" } dd { (widgets::when(s(&record, "created_at"))) " · this revision " (widgets::when(s(&record, "revision_created_at"))) }
            @if let Some(reason) = opt(&record, "forgotten_reason") { dt { "forgotten because" } dd { (untrusted(reason)) } }
        }
        (widgets::rest(&record, ARTIFACT_FIELDS))
        section {
            h2 { "Content" }
            @if is_text {
                (source::whole(&bytes))
            } @else {
                p.note { "Binary content: " (untrusted(s(&record, "media_type"))) ", " (size(&record)) ". The first bytes as hex:" }
                (source::hex_dump(&bytes))
            }
        }
        section {
            h2 { "Revisions" }
            (diff_form(scope, artifact_id, revisions, shown))
            table.revisions {
                thead { tr { th { "rev" } th { "created" } th { "actor" } th { "title" } th { "size" } th { "cited by" } } }
                tbody {
                    @for revision in revisions {
                        @let revision_id = s(revision, "revision_id");
                        tr.shown[revision_id == shown] {
                            td { a href=(links::artifact(scope, artifact_id, Some(revision_id))) { "r" (n(revision, "revision_number")) }
                                 br; code.small { (revision_id) } }
                            td { (widgets::when(s(revision, "revision_created_at"))) }
                            td { (untrusted(opt(revision, "actor").unwrap_or("—"))) }
                            td { (untrusted(&clip(s(revision, "title"), 120))) }
                            td { (size(revision)) }
                            td { (citations(scope, cited_by.get(revision_id).map(Vec::as_slice).unwrap_or_default())) }
                        }
                    }
                }
            }
            @if history.get("truncated").and_then(Value::as_bool) == Some(true) {
                p.muted { "Older revisions exist beyond the newest " (HISTORY) "." }
            }
        }
        (widgets::raw("Raw artifact.get result", &record))
    };
    Ok(Page::new(format!("Artifact: {}", clip(title, 80)), body))
}

const ARTIFACT_FIELDS: &[&str] = &[
    "artifact_id",
    "revision_id",
    "revision_number",
    "kind",
    "title",
    "media_type",
    "content",
    "blob_hash",
    "size_bytes",
    "status",
    "context",
    "provenance",
    "actor",
    "created_at",
    "revision_created_at",
    "revision_commit_seq",
    "forgotten_reason",
];

/// The claim revisions citing one artifact revision.
fn citations(scope: &Scope, claims: &[&Value]) -> Markup {
    html! {
        @if claims.is_empty() { span.muted { "—" } }
        ul.citing {
            @for claim in claims {
                li {
                    a href=(links::claim(scope, s(claim, "claim_id"), Some(s(claim, "revision_id")))) {
                        (untrusted(&clip(s(claim, "statement"), 120)))
                    }
                    " r" (n(claim, "revision_number")) " " (widgets::status(s(claim, "status")))
                    @if claim.get("is_current_revision").and_then(Value::as_bool) == Some(false) {
                        " " span.badge.muted { "old claim revision" }
                    }
                }
            }
        }
    }
}

fn diff_form(scope: &Scope, artifact_id: &str, revisions: &[Value], shown: &str) -> Markup {
    let options = |selected: &str| {
        html! {
            @for revision in revisions {
                @let id = s(revision, "revision_id");
                option value=(id) selected[id == selected] { "r" (n(revision, "revision_number")) }
            }
        }
    };
    let older = revisions
        .iter()
        .position(|r| s(r, "revision_id") == shown)
        .and_then(|i| revisions.get(i + 1))
        .map(|r| s(r, "revision_id"))
        .unwrap_or(shown);
    html! {
        @if revisions.len() > 1 {
            form.filters method="get" action={ "/artifacts/" (segment(artifact_id)) "/diff" } {
                label { "Diff from " select name="from" { (options(older)) } }
                label { " to " select name="to" { (options(shown)) } }
                (hidden_scope(scope))
                button type="submit" { "Diff" }
            }
        }
    }
}

pub fn diff_page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let artifact_id = request.id.ok_or_else(|| Problem::not_found("No artifact id."))?;
    let (from, to) = match (request.params.get("from"), request.params.get("to")) {
        (Some(from), Some(to)) => (from.to_owned(), to.to_owned()),
        _ => {
            let history = memory.artifact_history(artifact_id, 2)?;
            let ids: Vec<String> = list(&history, "revisions")
                .iter()
                .map(|r| s(r, "revision_id").to_owned())
                .collect();
            match ids.as_slice() {
                [newest, previous, ..] => (previous.clone(), newest.clone()),
                _ => {
                    return Err(Problem::bad_request(
                        "This artifact has a single revision; there is nothing to diff.",
                    ));
                }
            }
        }
    };
    let old = memory.artifact_get(artifact_id, Some(&from), true)?;
    let new = memory.artifact_get(artifact_id, Some(&to), true)?;
    let text = |record: &Value| {
        (record.pointer("/content/type").and_then(Value::as_str) == Some("text"))
            .then(|| source::content_bytes(record).map(|b| String::from_utf8_lossy(&b).into_owned()))
            .flatten()
    };
    let changed = |key: &str| s(&old, key) != s(&new, key);
    let body = html! {
        p {
            a href=(links::artifact(scope, artifact_id, None)) { (untrusted(s(&new, "title"))) }
            " · from " a href=(links::artifact(scope, artifact_id, Some(&from))) { "r" (n(&old, "revision_number")) }
            " to " a href=(links::artifact(scope, artifact_id, Some(&to))) { "r" (n(&new, "revision_number")) }
        }
        dl.meta {
            @for key in ["title", "media_type", "blob_hash"] {
                dt { (key) }
                dd {
                    @if changed(key) { del { (untrusted(s(&old, key))) } " → " ins { (untrusted(s(&new, key))) } }
                    @else { (untrusted(s(&new, key))) span.muted { " (unchanged)" } }
                }
            }
            dt { "size" } dd { (size(&old)) " → " (size(&new)) }
        }
        @match (text(&old), text(&new)) {
            (Some(old_text), Some(new_text)) => (diff::lines(&old_text, &new_text)),
            _ => p.note { "At least one revision is binary: compare the sizes and digests above." },
        }
    };
    Ok(Page::new(format!("Diff: {}", clip(s(&new, "title"), 80)), body))
}
