//! Relations: the one-hop graph around an artifact or claim (`?entity=claim:ID`) as an SVG,
//! with the edge table; without an entity, a picker and the most recent relation events.

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::Value;

use super::claims::hidden_scope;
use super::overview::events_table;
use super::{Page, Problem, Request};
use crate::inspect::links;
use crate::inspect::memory::{Memory, Scope};
use crate::inspect::view::graph::{self, Edge, Node};
use crate::inspect::view::text::clip;
use crate::inspect::view::widgets::{self, list, n, opt, s};

/// Neighbours whose labels are fetched (the rest show their id).
const LABELLED: usize = 40;

/// `claim:ID`, `artifact:ID`, or a bare id with its `clm_` / `art_` prefix.
fn parse_entity(text: &str) -> Option<(&'static str, &str)> {
    let text = text.trim();
    if let Some(id) = text.strip_prefix("claim:") {
        return Some(("claim", id.trim()));
    }
    if let Some(id) = text.strip_prefix("artifact:") {
        return Some(("artifact", id.trim()));
    }
    if text.starts_with("clm_") {
        return Some(("claim", text));
    }
    if text.starts_with("art_") {
        return Some(("artifact", text));
    }
    None
}

/// A short label for an entity: a claim's statement or an artifact's title.
fn label(memory: &Memory, entity_type: &str, entity_id: &str) -> Option<String> {
    let record = match entity_type {
        "claim" => memory.claim_get(entity_id, None).ok()?,
        _ => memory.artifact_get(entity_id, None, false).ok()?,
    };
    let text = if entity_type == "claim" {
        s(&record, "statement")
    } else {
        s(&record, "title")
    };
    Some(text.to_owned())
}

pub fn page(memory: &Memory, request: &Request<'_>) -> Result<Page, Problem> {
    let scope = request.scope;
    let Some(entity) = request.params.get("entity") else {
        let events = memory.event_list(scope, Some(("relation", None)), 20, None)?;
        let body = html! {
            (picker(scope, ""))
            h2 { "Recent relations" }
            (events_table(&events, scope))
        };
        return Ok(Page::new("Relations", body));
    };
    let (entity_type, entity_id) = parse_entity(entity)
        .ok_or_else(|| Problem::bad_request("Name the entity as claim:ID or artifact:ID (or a clm_… / art_… id)."))?;
    let result = memory.relation_list(scope, entity_type, entity_id)?;
    let relations = list(&result, "relations");
    let anchor_label = label(memory, entity_type, entity_id).unwrap_or_else(|| entity_id.to_owned());
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut neighbors: Vec<Node> = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    for relation in relations {
        let outgoing = s(relation, "source_type") == entity_type && s(relation, "source_id") == entity_id;
        let side = if outgoing { "target" } else { "source" };
        let key = (
            s(relation, &format!("{side}_type")).to_owned(),
            s(relation, &format!("{side}_id")).to_owned(),
        );
        let next = neighbors.len();
        let at = *index.entry(key.clone()).or_insert(next);
        if at == next {
            let fetched = if next < LABELLED {
                label(memory, &key.0, &key.1)
            } else {
                None
            };
            neighbors.push(Node {
                href: links::relations(scope, &key.0, &key.1),
                label: fetched.unwrap_or_else(|| key.1.clone()),
                entity_type: key.0,
                entity_id: key.1,
            });
        }
        edges.push(Edge {
            relation: s(relation, "relation").to_owned(),
            outgoing,
            neighbor: at,
        });
    }
    let anchor = Node {
        entity_type: entity_type.to_owned(),
        entity_id: entity_id.to_owned(),
        href: links::entity(scope, entity_type, entity_id),
        label: anchor_label.clone(),
    };
    let labels: HashMap<&str, &str> = neighbors
        .iter()
        .map(|n| (n.entity_id.as_str(), n.label.as_str()))
        .collect();
    let body = html! {
        (picker(scope, entity))
        p { (entity_type) " " (widgets::entity(scope, entity_type, entity_id, Some(&clip(&anchor_label, 200))))
            " · " (relations.len()) " relations" @if result.get("truncated").and_then(Value::as_bool) == Some(true) { " (first page)" } }
        @if relations.is_empty() {
            p.muted { "No relations of this entity are visible at this horizon." }
            @if let Some(hint) = opt(&result, "broaden_hint") { p.hint { (hint) } }
        } @else {
            figure.graph { (graph::svg(&anchor, &neighbors, &edges)) figcaption { "Click a node to centre the graph on it." } }
            table.relations {
                thead { tr { th { "direction" } th { "relation" } th { "other end" } th { "metadata" } th { "created" } } }
                tbody {
                    @for (relation, edge) in relations.iter().zip(&edges) {
                        @let other = &neighbors[edge.neighbor];
                        tr {
                            td { @if edge.outgoing { "→ out" } @else { "← in" } }
                            td { (s(relation, "relation")) }
                            td { (other.entity_type) " "
                                (widgets::entity(scope, &other.entity_type, &other.entity_id,
                                    labels.get(other.entity_id.as_str()).map(|l| clip(l, 120)).as_deref())) }
                            td { (widgets::value(relation.get("metadata").unwrap_or(&Value::Null))) }
                            td { (widgets::when(s(relation, "created_at"))) " · commit " code { (n(relation, "relation_commit_seq")) } }
                        }
                    }
                }
            }
        }
    };
    Ok(Page::new("Relations", body))
}

fn picker(scope: &Scope, current: &str) -> Markup {
    html! {
        form.filters method="get" action="/relations" {
            label { "Entity " input type="text" name="entity" value=(current) size="48"
                placeholder="claim:clm_… or artifact:art_…"; }
            (hidden_scope(scope))
            button type="submit" { "Show" }
        }
        @if current.is_empty() { p.muted { "Or open a claim or an artifact and follow its “relations” link." } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_named_with_a_type_or_a_prefixed_id() {
        assert_eq!(parse_entity("claim:clm_1"), Some(("claim", "clm_1")));
        assert_eq!(parse_entity(" artifact: art_2 "), Some(("artifact", "art_2")));
        assert_eq!(parse_entity("clm_3"), Some(("claim", "clm_3")));
        assert_eq!(parse_entity("rel_4"), None);
    }
}
