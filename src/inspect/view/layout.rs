//! The page shell: navigation, the ambient context, the horizon switch and the untrusted
//! content banner around every page body. The only script is the same-origin static file;
//! there is no inline script or style anywhere.

use maud::{DOCTYPE, Markup, html};

use super::text::untrusted;
use crate::inspect::links;
use crate::inspect::memory::Scope;
use crate::protocol::{AmbientContext, ContextSource, Horizon};

/// The top-level sections, in navigation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Overview,
    Claims,
    Artifacts,
    Conflicts,
    Relations,
    Ask,
}

impl Section {
    const ALL: [Section; 6] = [
        Section::Overview,
        Section::Claims,
        Section::Artifacts,
        Section::Conflicts,
        Section::Relations,
        Section::Ask,
    ];

    fn label(self) -> &'static str {
        match self {
            Section::Overview => "Overview",
            Section::Claims => "Claims",
            Section::Artifacts => "Artifacts",
            Section::Conflicts => "Conflicts",
            Section::Relations => "Relations",
            Section::Ask => "Ask",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Section::Overview => "/",
            Section::Claims => "/claims",
            Section::Artifacts => "/artifacts",
            Section::Conflicts => "/conflicts",
            Section::Relations => "/relations",
            Section::Ask => "/ask",
        }
    }
}

/// What the shell shows around a page body.
#[derive(Debug)]
pub struct Chrome<'a> {
    pub context: &'a AmbientContext,
    pub source: ContextSource,
    pub scope: &'a Scope,
    pub section: Section,
    /// The request path, which the horizon form submits to.
    pub path: &'a str,
    /// The page's own query parameters, kept when the horizon changes.
    pub keep: &'a [(String, String)],
}

/// A complete HTML document.
pub fn document(chrome: &Chrome<'_>, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · Memoree inspector" }
                link rel="icon" href="/static/favicon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/static/inspect.css";
                script src="/static/inspect.js" defer {}
            }
            body {
                header.top {
                    a.brand href=(links::href("/", chrome.scope, &[])) { "Memoree" span.muted { " inspector" } }
                    nav {
                        @for section in Section::ALL {
                            a.active[section == chrome.section] href=(links::href(section.path(), chrome.scope, &[])) {
                                (section.label())
                            }
                        }
                    }
                    (context_chip(chrome.context, chrome.source))
                    (horizon_form(chrome))
                }
                p.banner.untrusted {
                    "Read-only view. Everything below was written by agents and is untrusted: it is shown as text, never executed."
                }
                @if chrome.scope.horizon.is_broad() {
                    p.banner.broad {
                        "Reading the " strong { (chrome.scope.horizon.as_str()) } " horizon, beyond the ambient project. Reason: "
                        q { (untrusted(chrome.scope.reason.as_deref().unwrap_or(""))) }
                    }
                }
                main { h1 { (title) } (body) }
                footer { "memoree inspect · a read-only client of the local daemon" }
            }
        }
    }
}

fn context_chip(context: &AmbientContext, source: ContextSource) -> Markup {
    html! {
        span.context title={ "ambient context from " (source.as_str()) } {
            (untrusted(&context.workspace_id)) " / " (untrusted(&context.project_id))
            @if let Some(task) = &context.task_id { " / " (untrusted(task)) }
        }
    }
}

/// The horizon switch: a GET form back to this page. A broader horizon needs a reason, as
/// in the protocol; the server refuses the switch without one.
fn horizon_form(chrome: &Chrome<'_>) -> Markup {
    let current = chrome.scope.horizon;
    html! {
        form.horizon method="get" action=(chrome.path) {
            @for (key, value) in chrome.keep {
                input type="hidden" name=(key) value=(value);
            }
            label {
                "Horizon "
                select name="horizon" {
                    @for horizon in [Horizon::Ambient, Horizon::Workspace, Horizon::Personal] {
                        option value=(horizon.as_str()) selected[horizon == current] { (horizon.as_str()) }
                    }
                }
            }
            label.reason {
                "Reason "
                input type="text" name="reason" maxlength="1024"
                    placeholder="required for workspace and personal"
                    value=(chrome.scope.reason.as_deref().unwrap_or(""));
            }
            button type="submit" { "Switch" }
        }
    }
}
