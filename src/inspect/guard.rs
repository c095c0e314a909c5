//! Who may read: the checks every request passes before any page runs, and the security
//! headers every response carries.
//!
//! In order: only `GET` and `HEAD` (anything else is `405`); the `Host` header must name this
//! loopback listener (defeats DNS rebinding); an `Origin`, when sent, must be this listener's
//! origin (defeats cross-site reads); then the caller must prove it knows the token, either
//! in the `token` query parameter (the URL printed at start, exchanged once for a cookie) or
//! in the `HttpOnly; SameSite=Strict` cookie, which is accepted only from same-origin or
//! direct navigations. Everything else is `403`.
//!
//! The cookie is bound to this inspector run: its name and value are both derived from the
//! run's token ([`session_cookie`]), never the token itself, so a cookie of an earlier run or
//! of another inspector is not this run's, two inspectors never overwrite each other's
//! cookie, and the printed token is not handed to other servers.
//!
//! What a cookie on `127.0.0.1` can and cannot protect: cookies ignore ports, so the browser
//! sends this cookie to every server it visits on this host name, whatever the port. It
//! therefore keeps out other sites (SameSite, `Origin`, `Host`, `Sec-Fetch-Site`) and anyone
//! who never had the URL, but not a local process serving another port of `127.0.0.1` that the
//! browser visits: that process receives the session value and can replay it here until the
//! inspector stops. Against local users and processes, the inspector's boundary is the token
//! printed only to the caller (stdout and stderr, or the owner-only file `--open` uses), and
//! its life: it
//! stops with `memoree inspect`, and a new run issues a new token and a new cookie.

use std::net::SocketAddr;

use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};

/// The Content-Security-Policy of every response: only same-origin files, no inline script
/// or style, no framing, forms back to this origin only.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                       form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The query parameter carrying the token on the first visit.
pub const TOKEN_PARAM: &str = "token";

/// A request's fate.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Authorized by the cookie.
    Pass,
    /// Authorized by the token in the URL: set the cookie and continue at `location`.
    Exchange { location: String },
    /// Refused with this status and explanation.
    Refuse(StatusCode, &'static str),
}

/// The session cookie a token grants: `(name, value)`, both derived from the token (BLAKE3
/// in key-derivation mode), so the cookie names this run and never carries the token.
pub fn session_cookie(token: &str) -> (String, String) {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let name = blake3::derive_key("memoree inspect 2026 session cookie name", token.as_bytes());
    let value = blake3::derive_key("memoree inspect 2026 session cookie value", token.as_bytes());
    (format!("memoree_inspect_{}", hex(&name[..8])), hex(&value))
}

/// The path a token exchange continues at: the request's path with any run of leading
/// slashes and backslashes reduced to one `/`, so it stays on this origin (a browser reads
/// `//host/` and `/\host/` as another host).
fn same_origin_path(path: &str) -> String {
    format!("/{}", path.trim_start_matches(['/', '\\']))
}

/// The secrets and names one listener checks against.
#[derive(Debug)]
pub struct Gate {
    token: String,
    cookie_name: String,
    cookie_value: String,
    hosts: Vec<String>,
    origins: Vec<String>,
}

/// Equal-length comparison whose time does not depend on where the inputs differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Gate {
    /// The gate of a listener bound to `addr` with `token`.
    pub fn new(addr: SocketAddr, token: String) -> Gate {
        let port = addr.port();
        let ip = match addr {
            SocketAddr::V4(v4) => v4.ip().to_string(),
            SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
        };
        let mut hosts = vec![format!("{ip}:{port}"), format!("localhost:{port}")];
        if port == 80 {
            hosts.extend([ip, "localhost".to_owned()]);
        }
        let origins = hosts.iter().map(|host| format!("http://{host}")).collect();
        let (cookie_name, cookie_value) = session_cookie(&token);
        Gate {
            token,
            cookie_name,
            cookie_value,
            hosts,
            origins,
        }
    }

    /// A fresh 256-bit token in hex.
    pub fn new_token() -> Result<String, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The `Set-Cookie` value granting access after a token exchange.
    pub fn cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.cookie_value
        )
    }

    /// Decides a request from its method, headers, path and query.
    pub fn check(&self, method: &Method, headers: &HeaderMap, path: &str, query: Option<&str>) -> Verdict {
        if method != Method::GET && method != Method::HEAD {
            return Verdict::Refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "The inspector is read-only: only GET and HEAD are accepted.",
            );
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !host.is_some_and(|host| self.hosts.contains(&host)) {
            return Verdict::Refuse(
                StatusCode::FORBIDDEN,
                "Unexpected Host header: open the inspector through the URL it printed.",
            );
        }
        for origin in headers.get_all(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.origins.contains(&origin) {
                return Verdict::Refuse(StatusCode::FORBIDDEN, "Cross-origin requests are refused.");
            }
        }
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if let Some((_, token)) = pairs.iter().find(|(k, _)| k == TOKEN_PARAM) {
            if !same_secret(token, &self.token) {
                return Verdict::Refuse(StatusCode::FORBIDDEN, "Wrong token: use the URL the inspector printed.");
            }
            let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != TOKEN_PARAM).collect();
            let query = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(rest)
                .finish();
            let path = same_origin_path(path);
            let location = if query.is_empty() {
                path
            } else {
                format!("{path}?{query}")
            };
            return Verdict::Exchange { location };
        }
        if !self.has_cookie(headers) {
            return Verdict::Refuse(
                StatusCode::FORBIDDEN,
                "Not authorized: open the inspector through the URL it printed.",
            );
        }
        // The cookie is SameSite=Strict; refusing other-site fetches too is defence in depth
        // (a page on another localhost port is "same-site").
        let site = headers.get("sec-fetch-site").and_then(|h| h.to_str().ok());
        if site.is_some_and(|site| site != "same-origin" && site != "none") {
            return Verdict::Refuse(StatusCode::FORBIDDEN, "Requests started by other sites are refused.");
        }
        Verdict::Pass
    }

    fn has_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie_name && same_secret(value, &self.cookie_value))
    }
}

/// Adds the security headers to a response.
pub fn harden(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, "content-security-policy", CSP);
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "x-frame-options", "DENY");
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "cache-control", "no-store");
    set(headers, "cross-origin-opener-policy", "same-origin");
    set(headers, "cross-origin-resource-policy", "same-origin");
    set(
        headers,
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new("127.0.0.1:4321".parse().unwrap(), "a".repeat(64))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn check(pairs: &[(&'static str, &str)], query: Option<&str>) -> Verdict {
        gate().check(&Method::GET, &headers(pairs), "/claims", query)
    }

    static COOKIE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let (name, value) = session_cookie(&"a".repeat(64));
        format!("other=1; {name}={value}")
    });

    #[test]
    fn the_token_is_exchanged_for_a_cookie_and_stripped_from_the_url() {
        let token = "a".repeat(64);
        let verdict = check(&[("host", "127.0.0.1:4321")], Some(&format!("type=fact&token={token}")));
        assert_eq!(
            verdict,
            Verdict::Exchange {
                location: "/claims?type=fact".to_owned()
            }
        );
        assert_eq!(
            check(&[("host", "localhost:4321"), ("cookie", COOKIE.as_str())], None),
            Verdict::Pass
        );
        assert!(gate().cookie().ends_with("; Path=/; HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn the_exchange_never_continues_off_this_origin() {
        let token = "a".repeat(64);
        for (path, expected) in [
            ("//evil.example/", "/evil.example/"),
            ("///evil.example", "/evil.example"),
            ("/\\evil.example/x", "/evil.example/x"),
            ("/\\/evil.example", "/evil.example"),
            ("/", "/"),
            ("/claims", "/claims"),
        ] {
            let verdict = gate().check(
                &Method::GET,
                &headers(&[("host", "127.0.0.1:4321")]),
                path,
                Some(&format!("token={token}")),
            );
            assert_eq!(
                verdict,
                Verdict::Exchange {
                    location: expected.to_owned()
                },
                "{path}"
            );
        }
    }

    #[test]
    fn the_cookie_is_derived_from_this_runs_token_and_never_carries_it() {
        let token = "a".repeat(64);
        let cookie = gate().cookie();
        assert!(!cookie.contains(&token), "{cookie}");
        let (name, value) = session_cookie(&token);
        assert!(cookie.starts_with(&format!("{name}={value};")), "{cookie}");
        // Another run (another token) has another name and value; the token itself, or a
        // cookie named after the port, is not a session.
        let (other_name, other_value) = session_cookie(&"b".repeat(64));
        assert_ne!((&name, &value), (&other_name, &other_value));
        let forbidden = |cookie: &str| {
            matches!(
                check(&[("host", "127.0.0.1:4321"), ("cookie", cookie)], None),
                Verdict::Refuse(StatusCode::FORBIDDEN, _)
            )
        };
        assert!(forbidden(&format!("memoree_inspect_4321={token}")));
        assert!(forbidden(&format!("{name}={token}")));
        assert!(forbidden(&format!("{other_name}={other_value}")));
        assert!(forbidden(&format!("{name}={other_value}")));
    }

    #[test]
    fn no_token_a_wrong_token_or_a_wrong_cookie_is_forbidden() {
        let forbidden = |v: Verdict| matches!(v, Verdict::Refuse(StatusCode::FORBIDDEN, _));
        assert!(forbidden(check(&[("host", "127.0.0.1:4321")], None)));
        assert!(forbidden(check(&[("host", "127.0.0.1:4321")], Some("token=guess"))));
        let (name, value) = session_cookie(&"a".repeat(64));
        assert_ne!(value, "0".repeat(64));
        let wrong = format!("{name}={}", "0".repeat(64));
        assert!(forbidden(check(
            &[("host", "127.0.0.1:4321"), ("cookie", &wrong)],
            None
        )));
    }

    #[test]
    fn rebinding_hosts_foreign_origins_and_other_sites_are_forbidden() {
        let forbidden = |v: Verdict| matches!(v, Verdict::Refuse(StatusCode::FORBIDDEN, _));
        assert!(forbidden(check(
            &[("host", "evil.example:4321"), ("cookie", COOKIE.as_str())],
            None
        )));
        assert!(forbidden(check(
            &[("host", "127.0.0.1:9999"), ("cookie", COOKIE.as_str())],
            None
        )));
        assert!(forbidden(check(&[("cookie", COOKIE.as_str())], None)));
        let origin = [
            ("host", "127.0.0.1:4321"),
            ("cookie", COOKIE.as_str()),
            ("origin", "http://evil.example"),
        ];
        assert!(forbidden(check(&origin, None)));
        let null = [
            ("host", "127.0.0.1:4321"),
            ("cookie", COOKIE.as_str()),
            ("origin", "null"),
        ];
        assert!(forbidden(check(&null, None)));
        let same_site = [
            ("host", "127.0.0.1:4321"),
            ("cookie", COOKIE.as_str()),
            ("sec-fetch-site", "same-site"),
        ];
        assert!(forbidden(check(&same_site, None)));
        let own = [
            ("host", "127.0.0.1:4321"),
            ("cookie", COOKIE.as_str()),
            ("origin", "http://127.0.0.1:4321"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert_eq!(check(&own, None), Verdict::Pass);
    }

    #[test]
    fn only_get_and_head_are_accepted() {
        for method in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            let verdict = gate().check(
                &method,
                &headers(&[("host", "127.0.0.1:4321"), ("cookie", COOKIE.as_str())]),
                "/",
                None,
            );
            assert!(
                matches!(verdict, Verdict::Refuse(StatusCode::METHOD_NOT_ALLOWED, _)),
                "{method}"
            );
        }
        let head = gate().check(
            &Method::HEAD,
            &headers(&[("host", "127.0.0.1:4321"), ("cookie", COOKIE.as_str())]),
            "/",
            None,
        );
        assert_eq!(head, Verdict::Pass);
    }

    #[test]
    fn tokens_are_long_random_and_distinct() {
        let (a, b) = (Gate::new_token().unwrap(), Gate::new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
