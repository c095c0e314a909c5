//! Ask: exactly what `memory.recall` and `context.build` return for a question at the page's
//! horizon, with `search`'s ranking explanation of every hit (and any `qualification` object
//! the ranking carries), the rendered bundle as text, and each raw result.
//!
//! Known fields are laid out; every other field of every object is shown generically, so
//! fields a newer daemon adds (such as retrieval v2's `ranking.qualification`) appear without
//! a change here.

use maud::{Markup, html};
use serde_json::Value;

use super::claims::hidden_scope;
use super::{Page, Problem, Request};
use crate::inspect::links;
use crate::inspect::memory::{Memory, Scope};
use crate::inspect::view::text::{bytes, untrusted};
use crate::inspect::view::widgets::{self, list, n, opt, s};

pub fn page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let query = request.params.get("q").unwrap_or("");
    let max_bytes = request.params.get("max_bytes").and_then(|v| v.parse::<u64>().ok());
    let form = html! {
        form.ask method="get" action="/ask" {
            input type="search" name="q" value=(query) size="60" placeholder="Ask what the agents remembered…" autofocus;
            label { " budget " input type="number" name="max_bytes" min="0" value=(max_bytes.map(|b| b.to_string()).unwrap_or_default()) placeholder="16384"; " bytes" }
            (hidden_scope(scope))
            button type="submit" { "Ask" }
        }
    };
    if query.is_empty() {
        let body = html! {
            (form)
            p.muted { "The question goes to memory.recall, context.build and search exactly as an agent would send it, at the horizon above." }
        };
        return Ok(Page::new("Ask", body));
    }
    let recall = memory.recall(scope, query)?;
    let bundle = memory.context_build(scope, query, max_bytes)?;
    let search = memory.search(scope, query)?;
    let body = html! {
        (form)
        section {
            h2 { "memory.recall" }
            (recall_view(scope, &recall))
            (widgets::raw("Raw memory.recall result", &recall))
        }
        section {
            h2 { "Ranking of every hit (search)" }
            (search_view(scope, &search))
            (widgets::raw("Raw search result", &search))
        }
        section {
            h2 { "context.build" }
            (bundle_view(scope, &bundle))
            (widgets::raw("Raw context.build result", &bundle))
        }
    };
    Ok(Page::new(format!("Ask: {query}"), body))
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn hints(value: &Value, keys: &[&str]) -> Markup {
    html! {
        @for key in keys {
            @if let Some(hint) = opt(value, key) { p.hint { strong { (key) ": " } (untrusted(hint)) } }
        }
    }
}

fn matched(value: &Value) -> Markup {
    html! { "score " code { (n(value, "score")) } " · matched by " (widgets::value(value.get("matched_by").unwrap_or(&Value::Null))) }
}

fn recall_view(scope: &Scope, recall: &Value) -> Markup {
    html! {
        p.badges {
            "presence " (widgets::status(s(recall, "presence")))
            " · searched " (widgets::value(recall.get("searched_horizons").unwrap_or(&Value::Null)))
            @if flag(recall, "content_is_untrusted") { " " span.badge.warn { "content_is_untrusted" } }
            @if flag(recall, "claims_truncated") { " " span.badge.plain { "claims truncated" } }
            @if flag(recall, "artifact_refs_truncated") { " " span.badge.plain { "artifact refs truncated" } }
        }
        (hints(recall, &["claims_refine_hint", "artifact_refs_refine_hint"]))
        (widgets::rest(recall, RECALL_FIELDS))
        h3 { "Claims (" (list(recall, "claims").len()) ")" }
        @for (rank, claim) in list(recall, "claims").iter().enumerate() {
            article.hit {
                p.badges { strong { "#" (rank + 1) } " " span.badge.plain { (s(claim, "claim_type")) } " " (widgets::status(s(claim, "status"))) " " (matched(claim)) }
                blockquote { a href=(links::claim(scope, s(claim, "claim_id"), Some(s(claim, "revision_id")))) { (untrusted(s(claim, "statement"))) } }
                p { code.citation { (s(claim, "citation")) } }
                @if !list(claim, "conflict_relation_ids").is_empty() {
                    p { "conflicts: " (widgets::value(claim.get("conflict_relation_ids").unwrap_or(&Value::Null))) }
                }
                @for evidence in list(claim, "evidence") {
                    div.evidence-ref {
                        p { code.citation { (s(evidence, "citation")) } " — " (untrusted(s(evidence, "title")))
                            " " span.badge.plain { (untrusted(s(evidence, "media_type"))) }
                            @if flag(evidence, "excerpt_truncated") { " " span.badge.plain { "excerpt truncated" } } }
                        @if let Some(excerpt) = opt(evidence, "excerpt") { pre.excerpt { (untrusted(excerpt)) } }
                        (widgets::rest(evidence, EVIDENCE_FIELDS))
                    }
                }
                (ranking_if_any(claim))
                (widgets::rest(claim, RECALL_CLAIM_FIELDS))
            }
        }
        h3 { "Artifact references (" (list(recall, "artifact_refs").len()) ")" }
        @for (rank, reference) in list(recall, "artifact_refs").iter().enumerate() {
            article.hit {
                p.badges { strong { "#" (rank + 1) } " " (widgets::status(s(reference, "status"))) " " (matched(reference))
                    " " (widgets::risk_field(reference, "risk_signals")) }
                p { a href=(links::artifact(scope, s(reference, "artifact_id"), Some(s(reference, "revision_id")))) { (untrusted(s(reference, "title"))) }
                    " " code.citation { (s(reference, "citation")) } }
                pre.excerpt { (untrusted(s(reference, "excerpt"))) }
                @if flag(reference, "excerpt_truncated") { p.muted { "excerpt truncated" } }
                (ranking_if_any(reference))
                (widgets::rest(reference, ARTIFACT_REF_FIELDS))
            }
        }
        @if !list(recall, "conflicts").is_empty() {
            h3 { "Conflicts" }
            (widgets::value(recall.get("conflicts").unwrap_or(&Value::Null)))
        }
    }
}

const RECALL_FIELDS: &[&str] = &[
    "content_is_untrusted",
    "query",
    "searched_horizons",
    "presence",
    "claims",
    "conflicts",
    "artifact_refs",
    "claims_truncated",
    "artifact_refs_truncated",
    "claims_refine_hint",
    "artifact_refs_refine_hint",
];
const RECALL_CLAIM_FIELDS: &[&str] = &[
    "claim_id",
    "revision_id",
    "claim_type",
    "status",
    "statement",
    "citation",
    "evidence",
    "conflict_relation_ids",
    "score",
    "matched_by",
    "ranking",
];
const EVIDENCE_FIELDS: &[&str] = &[
    "artifact_id",
    "revision_id",
    "citation",
    "start_byte",
    "end_byte",
    "title",
    "media_type",
    "excerpt",
    "excerpt_truncated",
];
const ARTIFACT_REF_FIELDS: &[&str] = &[
    "artifact_id",
    "revision_id",
    "citation",
    "title",
    "status",
    "excerpt",
    "excerpt_truncated",
    "score",
    "matched_by",
    "risk_signals",
    "ranking",
];

fn search_view(scope: &Scope, search: &Value) -> Markup {
    let hits = list(search, "hits");
    html! {
        p.badges { (hits.len()) " hits · " (s(search, "retrieval_mode"))
            @if flag(search, "truncated") { " " span.badge.plain { "truncated" } } }
        (hints(search, &["refine_hint", "broaden_hint"]))
        (widgets::rest(search, &["query", "horizon", "retrieval_mode", "hits", "truncated", "refine_hint", "broaden_hint"]))
        @for hit in hits {
            @let ranking = hit.get("ranking").unwrap_or(&Value::Null);
            article.hit {
                p.badges {
                    strong { "#" (n(ranking, "final_position")) } " "
                    span.badge.plain { (s(hit, "entity_type")) } " " (widgets::status(s(hit, "status")))
                    " " (matched(hit))
                }
                p { (widgets::entity(scope, s(hit, "entity_type"), s(hit, "entity_id"), Some(s(hit, "title"))))
                    " " code.citation { (s(hit, "citation")) } }
                pre.excerpt { (untrusted(s(hit, "excerpt"))) }
                (ranking_view(ranking))
                (widgets::rest(hit, &["entity_type", "entity_id", "revision_id", "status", "title", "excerpt", "citation",
                    "context", "score", "ranking", "matched_by", "provenance"]))
                details { summary { "provenance" } (widgets::value(hit.get("provenance").unwrap_or(&Value::Null))) }
            }
        }
    }
}

/// The ranking explanation of a recall item, when the daemon reports one.
fn ranking_if_any(item: &Value) -> Markup {
    html! {
        @if let Some(ranking) = item.get("ranking").filter(|r| r.is_object()) {
            (ranking_view(ranking))
        }
    }
}

/// A ranking explanation: position changes, scores, recency, and any further objects such
/// as a qualification, shown whole.
pub fn ranking_view(ranking: &Value) -> Markup {
    const KNOWN: [&str; 12] = [
        "policy_version",
        "recency_enabled",
        "recency_eligible",
        "lexical_score",
        "recency_bonus",
        "lexical_position",
        "final_position",
        "max_promotion",
        "effective_at",
        "effective_at_basis",
        "evaluated_at",
        "decay_class",
    ];
    html! {
        div.ranking {
            p {
                "lexical #" (n(ranking, "lexical_position")) " → final #" (n(ranking, "final_position"))
                " · lexical score " code { (n(ranking, "lexical_score")) }
                " + recency bonus " code { (n(ranking, "recency_bonus")) }
                " (" (s(ranking, "policy_version")) ", " (s(ranking, "decay_class"))
                ", recency " @if flag(ranking, "recency_enabled") { "on" } @else { "off" }
                @if !flag(ranking, "recency_eligible") { ", not eligible" }
                ", at most " (n(ranking, "max_promotion")) " places)"
            }
            p.muted { "effective at " (s(ranking, "effective_at")) " (" (s(ranking, "effective_at_basis")) "), evaluated at " (s(ranking, "evaluated_at")) }
            @if let Some(qualification) = ranking.get("qualification") {
                div.qualification { h4 { "qualification" } (widgets::value(qualification)) }
            }
            (widgets::rest(ranking, &[&KNOWN[..], &["qualification"]].concat()))
        }
    }
}

fn bundle_view(scope: &Scope, bundle: &Value) -> Markup {
    let used = bundle.get("used_bytes").and_then(Value::as_u64).unwrap_or(0);
    html! {
        p.badges {
            (bytes(used)) " of " (n(bundle, "max_bytes")) " bytes · " (list(bundle, "manifest").len()) " items · "
            (n(bundle, "omitted_count")) " omitted by the budget"
            @if flag(bundle, "retrieval_truncated") { " " span.badge.plain { "retrieval truncated" } }
            @if flag(bundle, "content_is_untrusted") { " " span.badge.warn { "content_is_untrusted" } }
        }
        (hints(bundle, &["refine_hint", "broaden_hint"]))
        (widgets::rest(bundle, &["content_is_untrusted", "query", "max_bytes", "used_bytes", "rendered_markdown",
            "manifest", "retrieval_truncated", "refine_hint", "broaden_hint", "omitted_count", "conflicts"]))
        @if !list(bundle, "conflicts").is_empty() {
            p { "conflicts: " (widgets::value(bundle.get("conflicts").unwrap_or(&Value::Null))) }
        }
        table.manifest {
            thead { tr { th { "item" } th { "status" } th { "why" } th { "bytes" } th { "risk" } th { "other fields" } } }
            tbody {
                @for item in list(bundle, "manifest") {
                    tr {
                        td { (widgets::entity(scope, s(item, "entity_type"), s(item, "entity_id"), None)) br; code.citation { (s(item, "citation")) } }
                        td { (widgets::status(s(item, "status"))) }
                        td { (untrusted(s(item, "reason"))) }
                        td { (n(item, "included_bytes")) " / " (n(item, "source_excerpt_bytes"))
                            @if flag(item, "excerpt_truncated") { " (truncated)" }
                            @if !flag(item, "excerpt_available") { " (no excerpt)" } }
                        td { (widgets::risk_field(item, "risk_signals")) }
                        td { (widgets::rest(item, &["citation", "entity_type", "entity_id", "revision_id", "status", "context",
                            "provenance", "risk_signals", "source_excerpt_bytes", "included_bytes", "excerpt_available",
                            "excerpt_truncated", "reason"])) }
                    }
                }
            }
        }
        h3 { "Rendered bundle (as the agent receives it, shown as text)" }
        pre.bundle { (untrusted(s(bundle, "rendered_markdown"))) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_qualification_in_a_ranking_is_shown_whole_and_escaped() {
        let ranking = json!({
            "policy_version": "bounded_recency_v1", "lexical_position": 2, "final_position": 1,
            "qualification": {"policy_version": "q1", "units": ["cache", "<ttl>"], "required": 2,
                              "matched": [{"unit": "cache", "how": "exact"}]},
            "future_field": "shown too",
        });
        let html = ranking_view(&ranking).into_string();
        assert!(
            html.contains("<div class=\"qualification\"><h4>qualification</h4>"),
            "{html}"
        );
        assert!(html.contains("&lt;ttl&gt;") && html.contains("exact") && html.contains("future_field"));
        let recalled = json!({"claim_id": "clm_1", "ranking": ranking});
        assert!(ranking_if_any(&recalled).into_string().contains("qualification"));
        assert!(ranking_if_any(&json!({"claim_id": "clm_1"})).into_string().is_empty());
    }
}
