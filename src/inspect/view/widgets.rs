//! Small shared pieces of markup: badges, links to entities, the generic JSON renderer that
//! shows fields no page knows about, raw JSON, and error panels.

use maud::{Markup, html};
use serde_json::Value;

use super::text::untrusted;
use crate::inspect::links;
use crate::inspect::memory::Scope;
use crate::protocol::ErrorBody;

/// The string at `key`, or `""`.
pub fn s<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The optional string at `key` (absent, null and empty are `None`).
pub fn opt<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The array at `key`, or an empty slice.
pub fn list<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The integer at `key` as text, or `""`.
pub fn n(value: &Value, key: &str) -> String {
    value.get(key).map(|v| v.to_string()).unwrap_or_default()
}

/// A lifecycle, validity or presence badge; the class follows the value.
pub fn status(text: &str) -> Markup {
    let tone = match text {
        "active" | "current" | "open" | "claims" | "ok" => "good",
        "conflicted" | "disputed" | "future" | "stale" | "artifacts_only" => "warn",
        "retracted" | "forgotten" | "superseded" | "expired" | "resolved" | "none" => "muted",
        "issues" | "degraded" | "error" => "bad",
        _ => "plain",
    };
    html! { span class={ "badge " (tone) } { (text) } }
}

/// Risk signals as badges; an empty list says so without implying safety.
pub fn risks<S: AsRef<str>>(signals: &[S]) -> Markup {
    html! {
        @for signal in signals {
            span.badge.risk title="risk signal: a hint, never a verdict" { "⚠ " (signal.as_ref()) }
        }
    }
}

/// Risk signals from a JSON array field.
pub fn risk_field(value: &Value, key: &str) -> Markup {
    let signals: Vec<&str> = list(value, key).iter().filter_map(Value::as_str).collect();
    risks(&signals)
}

/// An id in monospace.
pub fn id(text: &str) -> Markup {
    html! { code.id { (text) } }
}

/// A link to an artifact or claim page showing its id (or `label`).
pub fn entity(scope: &Scope, entity_type: &str, entity_id: &str, label: Option<&str>) -> Markup {
    html! {
        a.entity href=(links::entity(scope, entity_type, entity_id)) {
            @match label {
                Some(label) => (untrusted(label)),
                None => (id(entity_id)),
            }
        }
    }
}

/// A timestamp as sent on the wire.
pub fn when(text: &str) -> Markup {
    html! { time datetime=(text) { (text.replace('T', " ")) } }
}

/// Any JSON value: objects as definition lists, arrays as lists, strings as untrusted text.
pub fn value(v: &Value) -> Markup {
    match v {
        Value::Object(map) if map.is_empty() => html! { span.muted { "{}" } },
        Value::Object(map) => html! {
            dl.kv {
                @for (key, item) in map {
                    dt { (key) }
                    dd { (value(item)) }
                }
            }
        },
        Value::Array(items) if items.is_empty() => html! { span.muted { "[]" } },
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => html! {
            @for (index, item) in items.iter().enumerate() {
                @if index > 0 { ", " }
                (value(item))
            }
        },
        Value::Array(items) => html! {
            ol.items { @for item in items { li { (value(item)) } } }
        },
        Value::String(text) => html! { span.str { (untrusted(text)) } },
        Value::Null => html! { code.muted { "null" } },
        other => html! { code { (other.to_string()) } },
    }
}

/// The fields of `object` not in `known`, generically; nothing when there are none.
pub fn rest(object: &Value, known: &[&str]) -> Markup {
    let Some(map) = object.as_object() else {
        return html! {};
    };
    let extra: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| !known.contains(&k.as_str())).collect();
    html! {
        @if !extra.is_empty() {
            dl.kv.extra {
                @for (key, item) in extra {
                    dt { (key) }
                    dd { (value(item)) }
                }
            }
        }
    }
}

/// A collapsed, pretty-printed copy of a response result.
pub fn raw(title: &str, v: &Value) -> Markup {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    html! {
        details.raw {
            summary { (title) }
            pre.json { (untrusted(&text)) }
        }
    }
}

/// A daemon refusal or failure, with its stable code and hint.
pub fn failure(error: &ErrorBody) -> Markup {
    html! {
        div.failure role="alert" {
            p { strong { (error.code.as_str()) } " — " (untrusted(&error.message)) }
            @if let Some(hint) = &error.hint { p.hint { (untrusted(hint)) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generic_values_escape_strings_and_keep_structure() {
        let html = value(&json!({"a": ["x", 1], "b": {"c": "<i>"}, "d": null})).into_string();
        assert_eq!(
            html,
            "<dl class=\"kv\"><dt>a</dt><dd><span class=\"str\">x</span>, <code>1</code></dd>\
             <dt>b</dt><dd><dl class=\"kv\"><dt>c</dt><dd><span class=\"str\">&lt;i&gt;</span></dd></dl></dd>\
             <dt>d</dt><dd><code class=\"muted\">null</code></dd></dl>"
        );
    }

    #[test]
    fn rest_shows_only_unknown_fields_such_as_a_future_qualification() {
        let hit = json!({"score": 1.0, "qualification": {"units": ["cache"]}});
        let html = rest(&hit, &["score"]).into_string();
        assert!(html.contains("qualification") && html.contains("cache") && !html.contains("score"));
        assert!(rest(&hit, &["score", "qualification"]).into_string().is_empty());
    }
}
