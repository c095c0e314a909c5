//! The axum application: routes, the guard middleware, static files, and the glue that runs
//! a synchronous page on a blocking thread and wraps it in the layout.
//!
//! HTTP parsing is hyper's; this module only maps routes to pages.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::html;

use super::guard::{Gate, Verdict, harden};
use super::memory::{Memory, Scope};
use super::pages::{self, Handler, Params, Problem};
use super::view::layout::{Chrome, Section, document};

/// What every handler shares.
#[derive(Debug)]
pub struct App {
    pub memory: Memory,
    pub gate: Gate,
}

const CSS: &str = include_str!("static/inspect.css");
const JS: &str = include_str!("static/inspect.js");
const FAVICON: &str = include_str!("static/favicon.svg");

/// A page route without (`page!(section, handler)`) or with (`page!(id, …)`) an `{id}`
/// path segment.
macro_rules! page {
    ($section:expr, $handler:path) => {
        get(|State(app): State<Arc<App>>, uri: Uri, RawQuery(query): RawQuery| {
            page(app, uri, query, None, $section, $handler)
        })
    };
    (id, $section:expr, $handler:path) => {
        get(
            |State(app): State<Arc<App>>, uri: Uri, RawQuery(query): RawQuery, Path(id): Path<String>| {
                page(app, uri, query, Some(id), $section, $handler)
            },
        )
    };
}

/// The router over `app`.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", page!(Section::Overview, pages::overview::page))
        .route("/claims", page!(Section::Claims, pages::claims::list_page))
        .route("/claims/{id}", page!(id, Section::Claims, pages::claims::detail_page))
        .route("/artifacts", page!(Section::Artifacts, pages::artifacts::list_page))
        .route(
            "/artifacts/{id}",
            page!(id, Section::Artifacts, pages::artifacts::detail_page),
        )
        .route(
            "/artifacts/{id}/diff",
            page!(id, Section::Artifacts, pages::artifacts::diff_page),
        )
        .route("/conflicts", page!(Section::Conflicts, pages::conflicts::page))
        .route("/relations", page!(Section::Relations, pages::relations::page))
        .route("/ask", page!(Section::Ask, pages::ask::page))
        .route(
            "/static/inspect.css",
            get(|| async { asset("text/css; charset=utf-8", CSS) }),
        )
        .route(
            "/static/inspect.js",
            get(|| async { asset("text/javascript; charset=utf-8", JS) }),
        )
        .route("/static/favicon.svg", get(|| async { asset("image/svg+xml", FAVICON) }))
        .route("/favicon.ico", get(|| async { asset("image/svg+xml", FAVICON) }))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .layer(middleware::map_response(|mut response: Response| async move {
            harden(response.headers_mut());
            response
        }))
        .with_state(app)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static(content_type))], body).into_response()
}

fn html_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

/// A small page outside the layout (refusals, the token exchange); `head` adds to its head.
fn bare(title: &str, head: maud::Markup, body: maud::Markup) -> String {
    html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="referrer" content="no-referrer";
                (head)
                title { (title) " · Memoree inspector" }
                link rel="icon" href="/static/favicon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/static/inspect.css";
            }
            body { main { h1 { (title) } (body) } }
        }
    }
    .into_string()
}

async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let verdict = app.gate.check(
        request.method(),
        request.headers(),
        request.uri().path(),
        request.uri().query(),
    );
    match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::Exchange { location } => {
            // A meta refresh rather than a redirect: the follow-up navigation starts from this
            // origin, so the SameSite=Strict cookie goes with it even when the printed URL was
            // opened from another site (a cross-site redirect chain would drop it).
            let head = html! { meta http-equiv="refresh" content={ "0;url=" (location) }; };
            let body = html! { p { "Signed in to this inspector. " a href=(location) { "Continue" } } };
            let mut response = html_response(StatusCode::OK, bare("Signed in", head, body));
            if let Ok(cookie) = HeaderValue::from_str(&app.gate.cookie()) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Verdict::Refuse(status, message) => {
            let mut response = html_response(
                status,
                bare(
                    status.canonical_reason().unwrap_or("Refused"),
                    html! {},
                    html! { p { (message) } },
                ),
            );
            if status == StatusCode::METHOD_NOT_ALLOWED {
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            response
        }
    }
}

async fn not_found() -> Response {
    html_response(
        StatusCode::NOT_FOUND,
        bare(
            "Not found",
            html! {},
            html! { p { a href="/" { "Back to the overview" } } },
        ),
    )
}

/// Runs `handler` on a blocking thread (it talks to the daemon synchronously) and lays the
/// result out.
async fn page(
    app: Arc<App>,
    uri: Uri,
    query: Option<String>,
    id: Option<String>,
    section: Section,
    handler: Handler,
) -> Response {
    let path = uri.path().to_owned();
    let rendered =
        tokio::task::spawn_blocking(move || render(&app, &path, query.as_deref(), id.as_deref(), section, handler))
            .await;
    match rendered {
        Ok((status, body)) => html_response(status, body),
        Err(_) => html_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            bare(
                "Internal error",
                html! {},
                html! { p { "Rendering this page failed; see the inspector's log." } },
            ),
        ),
    }
}

/// One page as a complete document: `(status, html)`.
pub fn render(
    app: &App,
    path: &str,
    query: Option<&str>,
    id: Option<&str>,
    section: Section,
    handler: Handler,
) -> (StatusCode, String) {
    let params = Params::parse(query);
    let keep = params.page_pairs();
    let (scope, outcome) = match params.scope() {
        Ok(scope) => {
            let request = pages::Request {
                id,
                params: &params,
                scope: &scope,
            };
            let outcome = handler(&app.memory, &request);
            (scope, outcome)
        }
        Err(problem) => (Scope::default(), Err(problem)),
    };
    let chrome = Chrome {
        context: app.memory.context(),
        source: app.memory.context_source(),
        scope: &scope,
        section,
        path,
        keep: &keep,
    };
    let (status, title, body) = match outcome {
        Ok(page) => (200, page.title, page.body),
        Err(Problem { status, title, body }) => (status, title, body),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, document(&chrome, &title, body).into_string())
}
