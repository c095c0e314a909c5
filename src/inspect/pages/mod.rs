//! One file per page. A page is a synchronous function from the request (path id, query
//! parameters, horizon) to a title and a body, reading memory only through [`Memory`]; the
//! server runs it on a blocking thread and wraps it in the layout.

pub mod artifacts;
pub mod ask;
pub mod claims;
pub mod conflicts;
pub mod overview;
pub mod relations;

use maud::{Markup, html};

use super::memory::{Failure, Memory, Scope};
use super::view::widgets;
use crate::protocol::{ErrorCode, Horizon, limits};

/// Query parameters in order, as decoded from the URL.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

/// Parameters that belong to the shell or the guard, not to a page.
const SHELL_PARAMS: [&str; 3] = ["horizon", "reason", "token"];

impl Params {
    /// Decodes `a=1&b=2` (absent query: no parameters).
    pub fn parse(query: Option<&str>) -> Params {
        let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Params { pairs }
    }

    /// The first non-blank value of `key`, trimmed.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
            .find(|v| !v.is_empty())
    }

    /// A positive integer parameter (a cursor).
    pub fn cursor(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.parse().ok()).filter(|v: &i64| *v >= 1)
    }

    /// The page's own non-blank parameters (for the horizon form to keep).
    pub fn page_pairs(&self) -> Vec<(String, String)> {
        self.pairs
            .iter()
            .filter(|(k, v)| !SHELL_PARAMS.contains(&k.as_str()) && !v.trim().is_empty())
            .cloned()
            .collect()
    }

    /// The horizon the page reads at. A broader horizon needs a non-blank reason, exactly as
    /// the protocol requires.
    pub fn scope(&self) -> Result<Scope, Problem> {
        let horizon = match self.get("horizon") {
            None | Some("ambient") => Horizon::Ambient,
            Some("workspace") => Horizon::Workspace,
            Some("personal") => Horizon::Personal,
            Some(_) => {
                return Err(Problem::bad_request(
                    "The horizon must be ambient, workspace or personal.",
                ));
            }
        };
        let reason = self.get("reason").map(str::to_owned);
        if horizon.is_broad() && reason.is_none() {
            return Err(Problem::bad_request(&format!(
                "Looking at the {} horizon needs a reason, as in the protocol: say why you look \
                 beyond the ambient project, then switch again.",
                horizon.as_str()
            )));
        }
        if reason.as_ref().is_some_and(|r| r.len() > limits::MAX_REASON_BYTES) {
            return Err(Problem::bad_request("The reason is too long."));
        }
        Ok(Scope {
            horizon,
            reason: if horizon.is_broad() { reason } else { None },
        })
    }
}

/// What a page handler receives.
#[derive(Debug)]
pub struct Request<'a> {
    /// The `{id}` path segment, decoded, for detail pages.
    pub id: Option<&'a str>,
    pub params: &'a Params,
    pub scope: &'a Scope,
}

/// A rendered page body.
#[derive(Debug)]
pub struct Page {
    pub title: String,
    pub body: Markup,
}

impl Page {
    pub fn new(title: impl Into<String>, body: Markup) -> Page {
        Page {
            title: title.into(),
            body,
        }
    }
}

/// A page that could not be rendered: an HTTP status and an explanation.
#[derive(Debug)]
pub struct Problem {
    pub status: u16,
    pub title: String,
    pub body: Markup,
}

impl Problem {
    pub fn bad_request(message: &str) -> Problem {
        Problem {
            status: 400,
            title: "Cannot show this page".to_owned(),
            body: html! { div.failure role="alert" { p { (message) } } },
        }
    }

    pub fn not_found(what: &str) -> Problem {
        Problem {
            status: 404,
            title: "Not found".to_owned(),
            body: html! { div.failure role="alert" { p { (what) } } },
        }
    }
}

impl From<Failure> for Problem {
    fn from(error: Failure) -> Problem {
        let status = match error.code {
            ErrorCode::NotFound => 404,
            ErrorCode::InvalidRequest | ErrorCode::ScopeViolation | ErrorCode::NoAmbientContext => 400,
            ErrorCode::TransportError => 502,
            ErrorCode::IndexNotReady => 503,
            _ => 500,
        };
        let title = match error.code {
            ErrorCode::NotFound => "Not found",
            ErrorCode::TransportError => "The daemon did not answer",
            _ => "The daemon refused this read",
        };
        Problem {
            status,
            title: title.to_owned(),
            body: widgets::failure(&error),
        }
    }
}

/// The signature every page shares.
pub type Handler = fn(&Memory, &Request<'_>) -> Result<Page, Problem>;

/// A "next page" link when a listing was truncated.
pub fn older_link(href: Option<String>) -> Markup {
    html! {
        @if let Some(href) = href {
            p.pager { a href=(href) { "Older →" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broad_horizon_without_a_reason_is_refused_like_the_protocol_does() {
        let params = Params::parse(Some("horizon=workspace&reason=+++"));
        let problem = params.scope().unwrap_err();
        assert_eq!(problem.status, 400);
        assert!(problem.body.into_string().contains("needs a reason"));
        let scope = Params::parse(Some("horizon=personal&reason=audit")).scope().unwrap();
        assert_eq!(
            (scope.horizon, scope.reason.as_deref()),
            (Horizon::Personal, Some("audit"))
        );
        let ambient = Params::parse(Some("reason=ignored")).scope().unwrap();
        assert_eq!(ambient, Scope::default());
        assert_eq!(Params::parse(Some("horizon=galaxy")).scope().unwrap_err().status, 400);
    }

    #[test]
    fn page_pairs_leave_out_the_shell_parameters() {
        let params = Params::parse(Some("type=fact&horizon=workspace&reason=x&token=t&status="));
        assert_eq!(params.page_pairs(), vec![("type".to_owned(), "fact".to_owned())]);
        assert_eq!(params.get("type"), Some("fact"));
        assert_eq!(Params::parse(Some("before=0")).cursor("before"), None);
        assert_eq!(Params::parse(Some("before=12")).cursor("before"), Some(12));
    }
}
