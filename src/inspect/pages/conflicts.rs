//! Conflicts: open contradiction cases (and stale ones on request), each with both sides'
//! frozen revision next to the claim's current revision.

use maud::{Markup, html};
use serde_json::Value;

use super::claims::hidden_scope;
use super::{Page, Problem, Request, older_link};
use crate::inspect::links;
use crate::inspect::memory::{Memory, Scope};
use crate::inspect::view::text::untrusted;
use crate::inspect::view::widgets::{self, list, n, opt, s};
use crate::retrieval::risk::risk_signals;

pub fn page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let stale = request.params.get("stale").is_some();
    let result = memory.conflict_list(scope, stale, request.params.cursor("before"))?;
    let cases = list(&result, "conflicts");
    let next = result
        .get("next_before_case_sequence")
        .and_then(Value::as_i64)
        .map(|next| {
            let next = next.to_string();
            links::href(
                "/conflicts",
                scope,
                &[("stale", if stale { "1" } else { "" }), ("before", &next)],
            )
        });
    let body = html! {
        form.filters method="get" action="/conflicts" {
            label { input type="checkbox" name="stale" value="1" checked[stale]; " include stale cases" }
            (hidden_scope(scope))
            button type="submit" { "Show" }
        }
        @if cases.is_empty() {
            p.muted { "No " @if stale { "open or stale" } @else { "open" } " conflict cases at this horizon." }
            @if let Some(hint) = opt(&result, "broaden_hint") { p.hint { (hint) } }
        }
        @for case in cases { (case_card(scope, case)) }
        (older_link(next))
    };
    Ok(Page::new("Conflicts", body))
}

fn case_card(scope: &Scope, case: &Value) -> Markup {
    let source = case.get("source").unwrap_or(&Value::Null);
    let target = case.get("target").unwrap_or(&Value::Null);
    html! {
        article.case {
            header {
                (widgets::status(s(case, "state"))) " "
                code { (s(case, "case_id")) } " · case " (n(case, "case_sequence"))
                " · opened " (widgets::when(s(case, "opened_at"))) " at commit " code { (n(case, "opened_commit_seq")) }
                @if let Some(reason) = opt(case, "state_reason") { " · " (untrusted(reason)) }
            }
            p.muted {
                "relation " a href=(links::relations(scope, "claim", s(source, "claim_id"))) { code { (s(case, "relation_id")) } }
                " · " (s(source, "claim_id")) " contradicts " (s(target, "claim_id"))
            }
            @if case.get("metadata").and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
                div { "metadata: " (widgets::value(case.get("metadata").unwrap_or(&Value::Null))) }
            }
            div.sides {
                (side(scope, "Source", source))
                (side(scope, "Target", target))
            }
        }
    }
}

/// One side of a case: the frozen revision and, when it moved on, the current one.
fn side(scope: &Scope, label: &str, side: &Value) -> Markup {
    let frozen = side.get("frozen").unwrap_or(&Value::Null);
    let current = side.get("current").unwrap_or(&Value::Null);
    let claim_id = s(side, "claim_id");
    let moved = side.get("frozen_is_current").and_then(Value::as_bool) == Some(false);
    html! {
        div.side {
            h3 { (label) " · " a href=(links::claim(scope, claim_id, None)) { code { (claim_id) } } }
            div.frozen {
                p.badges { span.badge.plain { "frozen r" (n(frozen, "revision_number")) } " " (widgets::status(s(frozen, "status")))
                    " " (widgets::risks(&risk_signals("", s(frozen, "statement")))) }
                blockquote { a href=(links::claim(scope, claim_id, Some(s(frozen, "revision_id")))) { (untrusted(s(frozen, "statement"))) } }
            }
            div.current {
                @if moved {
                    p.badges { span.badge.warn { "current r" (n(current, "revision_number")) ", revised since" } " " (widgets::status(s(current, "status")))
                        " " (widgets::risks(&risk_signals("", s(current, "statement")))) }
                    blockquote { (untrusted(s(current, "statement"))) }
                } @else {
                    p.muted { "The frozen revision is still current." }
                }
            }
        }
    }
}
