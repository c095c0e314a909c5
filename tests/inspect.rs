//! `memoree inspect` over real HTTP: access control (token, cookie, Host, Origin, methods),
//! every page of a store seeded from the golden corpora, exact evidence highlighting, and
//! hostile content that stays text.

use scraper::{Html, Selector};
use serde_json::{Value, json};

use crate::inspect_fixture::{HOSTILE_STATEMENT, HOSTILE_TEXT, HOSTILE_TITLE, Inspector, SPAN_TEXT, SPANS, span_of};
use crate::support::{TempHome, envelope};

fn select(html: &Html, selector: &str) -> Vec<String> {
    let selector = Selector::parse(selector).unwrap();
    html.select(&selector).map(|e| e.text().collect::<String>()).collect()
}

fn last_commit_seq(inspector: &Inspector) -> i64 {
    inspector.read("doctor", json!({}))["last_commit_seq"].as_i64().unwrap()
}

#[test]
fn the_token_is_required_and_exchanged_once_for_a_strict_http_only_cookie() {
    let inspector = Inspector::start();
    let host = inspector.host();
    let bare = inspector.send("GET", "/", &[("host", &host)]);
    assert_eq!(bare.status, 403, "{}", bare.body);
    let wrong = inspector.send("GET", "/?token=0123", &[("host", &host)]);
    assert_eq!(wrong.status, 403);
    let guessed = format!("/claims?token={}", "0".repeat(64));
    assert_eq!(inspector.send("GET", &guessed, &[("host", &host)]).status, 403);

    let first = inspector.send(
        "GET",
        &format!("/claims?type=fact&token={}", inspector.token),
        &[("host", &host)],
    );
    assert_eq!(first.status, 200, "{}", first.body);
    let cookie = first.header("set-cookie");
    assert_eq!(
        cookie,
        format!("{}; Path=/; HttpOnly; SameSite=Strict", inspector.cookie())
    );
    // The follow-up drops the token from the address bar and history.
    let html = Html::parse_document(&first.body);
    let refresh = Selector::parse("meta[http-equiv=refresh]").unwrap();
    let content = html.select(&refresh).next().unwrap().value().attr("content").unwrap();
    assert_eq!(content, "0;url=/claims?type=fact");

    assert_eq!(inspector.get("/claims?type=fact").status, 200);
    // A cookie of another run, or one carrying the token itself, is no session of this one.
    let (name, _) = memoree::inspect::guard::session_cookie(&inspector.token);
    for stale in [
        format!("memoree_inspect_{}={}", inspector.addr.port(), "f".repeat(64)),
        format!("memoree_inspect_{}={}", inspector.addr.port(), inspector.token),
        format!("{name}={}", inspector.token),
    ] {
        let reply = inspector.send("GET", "/", &[("host", &host), ("cookie", &stale)]);
        assert_eq!(reply.status, 403, "{stale}");
    }
    // A token exchange at a path that a browser reads as another host stays on this origin.
    let hostile = inspector.send(
        "GET",
        &format!("//evil.example/?token={}", inspector.token),
        &[("host", &host)],
    );
    assert_eq!(hostile.status, 200, "{}", hostile.body);
    let html = Html::parse_document(&hostile.body);
    let content = html.select(&refresh).next().unwrap().value().attr("content").unwrap();
    assert_eq!(content, "0;url=/evil.example/");
    // Static files need the cookie too.
    assert_eq!(
        inspector.send("GET", "/static/inspect.js", &[("host", &host)]).status,
        403
    );
    assert_eq!(inspector.get("/static/inspect.js").status, 200);
}

#[test]
fn a_rebinding_host_a_foreign_origin_or_another_site_is_refused_even_with_the_cookie() {
    let inspector = Inspector::start();
    let (host, cookie) = (inspector.host(), inspector.cookie());
    let port = inspector.addr.port();
    let evil = format!("evil.example:{port}");
    let other_port = format!("127.0.0.1:{}", port.wrapping_add(1));
    for bad_host in [evil.as_str(), other_port.as_str(), "localhost", "127.0.0.1"] {
        let reply = inspector.send("GET", "/", &[("host", bad_host), ("cookie", &cookie)]);
        assert_eq!(reply.status, 403, "Host {bad_host}");
    }
    assert_eq!(
        inspector.send("GET", "/", &[("cookie", &cookie)]).status,
        403,
        "no Host"
    );
    let own_origin = format!("http://{host}");
    let localhost = format!("localhost:{port}");
    for origin in [
        "http://evil.example",
        "null",
        "http://127.0.0.1",
        &format!("https://{host}"),
    ] {
        let reply = inspector.send(
            "GET",
            "/claims",
            &[("host", &host), ("cookie", &cookie), ("origin", origin)],
        );
        assert_eq!(reply.status, 403, "Origin {origin}");
    }
    for site in ["cross-site", "same-site"] {
        let reply = inspector.send(
            "GET",
            "/",
            &[("host", &host), ("cookie", &cookie), ("sec-fetch-site", site)],
        );
        assert_eq!(reply.status, 403, "Sec-Fetch-Site {site}");
    }
    let ok = inspector.send(
        "GET",
        "/claims",
        &[
            ("host", &localhost),
            ("cookie", &cookie),
            ("origin", &own_origin),
            ("sec-fetch-site", "same-origin"),
        ],
    );
    assert_eq!(ok.status, 200);
    // Refusals carry the same hardening headers as pages.
    let refused = inspector.send("GET", "/", &[("host", &evil), ("cookie", &cookie)]);
    assert!(refused.header("content-security-policy").contains("script-src 'self'"));
}

#[test]
fn no_state_changing_method_is_accepted_and_nothing_is_ever_written() {
    let inspector = Inspector::start();
    let before = last_commit_seq(&inspector);
    let (host, cookie) = (inspector.host(), inspector.cookie());
    let claim = format!("/claims/{}", inspector.extras.four_span_claim);
    for path in ["/", "/claims", claim.as_str(), "/ask?q=cache", "/nowhere"] {
        for method in ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"] {
            let target = if method == "CONNECT" { host.as_str() } else { path };
            let reply = inspector.send(method, target, &[("host", &host), ("cookie", &cookie)]);
            assert_eq!(reply.status, 405, "{method} {path}");
            if method != "CONNECT" {
                assert_eq!(reply.header("allow"), "GET, HEAD", "{method} {path}");
            }
        }
        let head = inspector.send("HEAD", path, &[("host", &host), ("cookie", &cookie)]);
        assert!(head.body.is_empty(), "HEAD {path} has a body");
    }
    for (name, path) in inspector.sections().iter() {
        assert_eq!(inspector.get(path).status, 200, "{name}");
    }
    assert_eq!(last_commit_seq(&inspector), before, "the inspector wrote something");
}

#[test]
fn every_page_renders_for_a_store_seeded_from_the_golden_corpora() {
    let inspector = Inspector::start();
    let tour = inspector.tour();
    assert!(
        tour.len() > 60,
        "the corpora seed enough entities to visit: {}",
        tour.len()
    );
    for (name, path) in &tour {
        let reply = inspector.get(path);
        assert_eq!(reply.status, 200, "{name} {path}: {}", reply.body);
        assert_eq!(reply.header("content-type"), "text/html; charset=utf-8");
        let csp = reply.header("content-security-policy");
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        let html = Html::parse_document(&reply.body);
        assert_eq!(select(&html, "main > h1").len(), 1, "{name}");
        assert!(
            select(&html, "div.failure").is_empty(),
            "{name} shows a failure: {}",
            reply.body
        );
        assert_eq!(select(&html, "nav a.active").len(), 1, "{name}");
    }
    // Spot checks that pages show what they promise.
    let overview = Html::parse_document(&inspector.page("/?verify=1"));
    let text = select(&overview, "main").concat();
    assert!(text.contains("verify: ok"), "{text}");
    assert!(select(&overview, "table.events tbody tr").len() == 25);
    let conflicts = Html::parse_document(&inspector.page("/conflicts"));
    assert_eq!(select(&conflicts, "article.case").len(), 3);
    assert_eq!(select(&conflicts, "article.case div.side").len(), 6);
    let graph =
        Html::parse_document(&inspector.page(&format!("/relations?entity=claim:{}", inspector.extras.four_span_claim)));
    assert_eq!(select(&graph, "svg.graph path.edge").len(), 3);
    assert_eq!(select(&graph, "svg.graph g.node").len(), 4);
    assert_eq!(select(&graph, "svg.graph g.node.artifact").len(), 1);
    let diff = Html::parse_document(&inspector.page(&format!("/artifacts/{}/diff", inspector.extras.span_artifact)));
    assert_eq!(
        select(&diff, "table.diff tr.ins")
            .concat()
            .trim_start_matches(char::is_numeric)
            .trim(),
        "+A second revision adds this line."
    );
    let revised = Html::parse_document(&inspector.page(&format!("/artifacts/{}", inspector.extras.span_artifact)));
    // The four-span claim cites both revisions and its rival the first one; the table says
    // which claim cites which revision.
    let citing = |row: usize| {
        select(
            &revised,
            &format!("table.revisions tbody tr:nth-child({row}) ul.citing li"),
        )
    };
    assert_eq!(citing(1).len(), 1, "r2");
    assert_eq!(citing(2).len(), 2, "r1");
}

#[test]
fn highlighted_spans_are_exactly_the_cited_bytes() {
    let inspector = Inspector::start();
    let claims = inspector.read(
        "claim.list",
        json!({"horizon": "personal", "reason": "test", "limit": 100}),
    );
    let mut checked = 0;
    let mut contents: std::collections::HashMap<String, Vec<u8>> = Default::default();
    for claim in claims["claims"].as_array().unwrap() {
        let spans: Vec<&Value> = claim["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e.get("start_byte").is_some())
            .collect();
        if spans.is_empty() {
            continue;
        }
        let html = Html::parse_document(&inspector.page(&format!("/claims/{}", claim["claim_id"].as_str().unwrap())));
        let marks = Selector::parse("mark.cited").unwrap();
        let marks: Vec<_> = html.select(&marks).collect();
        assert_eq!(marks.len(), spans.len(), "{claim}");
        for (mark, locator) in marks.iter().zip(&spans) {
            let revision = locator["revision_id"].as_str().unwrap().to_owned();
            let bytes = contents.entry(revision.clone()).or_insert_with(|| {
                let record = inspector.read(
                    "artifact.get",
                    json!({"artifact_id": locator["artifact_id"], "revision_id": revision}),
                );
                record["content"]["data"].as_str().unwrap().as_bytes().to_vec()
            });
            let (start, end) = (
                locator["start_byte"].as_u64().unwrap() as usize,
                locator["end_byte"].as_u64().unwrap() as usize,
            );
            assert_eq!(mark.value().attr("data-start"), Some(start.to_string().as_str()));
            assert_eq!(mark.value().attr("data-end"), Some(end.to_string().as_str()));
            let shown: String = mark.text().collect();
            assert_eq!(shown.as_bytes(), &bytes[start..end], "claim {}", claim["claim_id"]);
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} spans checked");
    // The four UTF-8 spans of our own claim, in order.
    let html = Html::parse_document(&inspector.page(&format!("/claims/{}", inspector.extras.four_span_claim)));
    let shown = select(&html, "mark.cited");
    assert_eq!(shown, SPANS);
    for needle in SPANS {
        let (start, end) = span_of(SPAN_TEXT, needle);
        assert_eq!(&SPAN_TEXT.as_bytes()[start..end], needle.as_bytes());
    }
    // One span cites the first revision, which is no longer current.
    assert_eq!(select(&html, "article.evidence .badge.warn").len(), 1);
    assert_eq!(select(&html, "ol.timeline li").len(), 1);
}

#[test]
fn hostile_content_is_escaped_everywhere_and_flagged() {
    let inspector = Inspector::start();
    let e = &inspector.extras;
    let pages = [
        format!("/artifacts/{}", e.hostile_artifact),
        format!("/claims/{}", e.hostile_claim),
        "/claims?type=observation".to_owned(),
        "/artifacts?kind=note".to_owned(),
        format!("/relations?entity=claim:{}", e.hostile_claim),
        "/ask?q=ignore%20previous%20instructions%20pwned".to_owned(),
        "/?verify=1".to_owned(),
    ];
    for path in &pages {
        let body = inspector.page(path);
        let html = Html::parse_document(&body);
        let scripts = Selector::parse("script").unwrap();
        let sources: Vec<_> = html.select(&scripts).map(|s| s.value().attr("src")).collect();
        assert_eq!(sources, [Some("/static/inspect.js")], "{path}");
        for element in html.root_element().descendants().filter_map(scraper::ElementRef::wrap) {
            let tag = element.value().name();
            assert!(
                !["img", "iframe", "object", "embed", "style", "base"].contains(&tag),
                "{path}: <{tag}>"
            );
            for (name, value) in element.value().attrs() {
                assert!(!name.starts_with("on"), "{path}: {name}={value} on <{tag}>");
                assert!(
                    !value.trim_start().to_ascii_lowercase().starts_with("javascript:"),
                    "{path}: {name}={value}"
                );
            }
        }
        assert!(!body.contains("<script>window"), "{path}");
    }
    let artifact = Html::parse_document(&inspector.page(&pages[0]));
    let text = select(&artifact, "pre.source").concat();
    assert!(text.contains("<script>window.__pwned = 1</script>"), "{text}");
    assert!(text.contains("⟨U+202E⟩"), "the bidi override is made visible: {text}");
    assert_eq!(select(&artifact, "main > h1"), [format!("Artifact: {HOSTILE_TITLE}")]);
    let risks = select(&artifact, ".badge.risk").concat();
    assert!(
        risks.contains("instruction_override_language") && risks.contains("role_spoofing_language"),
        "{risks}"
    );
    let claim = Html::parse_document(&inspector.page(&pages[1]));
    assert_eq!(select(&claim, "blockquote.statement"), [HOSTILE_STATEMENT]);
    assert_eq!(select(&claim, "mark.cited"), ["<script>window.__pwned = 1</script>"]);
    assert!(HOSTILE_TEXT.contains("javascript:"));
}

#[test]
fn a_broader_horizon_needs_a_reason_and_stays_justified_while_navigating() {
    let inspector = Inspector::start();
    let refused = inspector.get("/claims?horizon=workspace");
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("needs a reason"), "{}", refused.body);
    assert_eq!(inspector.get("/claims?horizon=workspace&reason=%20%20").status, 400);
    let ambient = Html::parse_document(&inspector.page("/claims"));
    let wide = Html::parse_document(&inspector.page("/claims?horizon=workspace&reason=compare%20projects"));
    assert!(select(&wide, "p.banner.broad").concat().contains("compare projects"));
    let count = |html: &Html| select(html, "p.count").concat();
    assert_ne!(
        count(&ambient),
        count(&wide),
        "the workspace shows more claims than the project"
    );
    let links = Selector::parse("main a[href^='/claims/']").unwrap();
    for link in wide.select(&links) {
        let href = link.value().attr("href").unwrap();
        assert!(href.contains("horizon=workspace&reason=compare+projects"), "{href}");
    }
}

#[test]
fn ask_shows_what_recall_and_context_build_return_with_every_ranking() {
    let inspector = Inspector::start();
    let query = "gateway rate limit";
    let html = Html::parse_document(&inspector.page("/ask?q=gateway%20rate%20limit"));
    let recall = inspector.read("memory.recall", json!({"query": query}));
    let search = inspector.read("search", json!({"query": query}));
    let bundle = inspector.read("context.build", json!({"query": query}));
    let sections = Selector::parse("main > section").unwrap();
    let sections: Vec<_> = html.select(&sections).collect();
    assert_eq!(sections.len(), 3);
    let within = |section: usize, selector: &str| {
        let selector = Selector::parse(selector).unwrap();
        sections[section]
            .select(&selector)
            .map(|e| e.text().collect::<String>())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        within(0, "article.hit").len(),
        recall["claims"].as_array().unwrap().len() + recall["artifact_refs"].as_array().unwrap().len()
    );
    let hits = search["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert_eq!(within(1, "div.ranking").len(), hits.len());
    let statements: Vec<String> = recall["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["statement"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(within(0, "blockquote"), statements);
    assert_eq!(
        within(2, "table.manifest tbody tr").len(),
        bundle["manifest"].as_array().unwrap().len()
    );
    let rendered = within(2, "pre.bundle").concat();
    assert_eq!(rendered, bundle["rendered_markdown"].as_str().unwrap());
    assert_eq!(within(0, "details.raw").len(), 1);
}

#[test]
fn the_inspector_starts_only_on_loopback_with_an_ambient_context_and_autostarts_the_daemon() {
    let home = TempHome::new();
    let output = home.cmd(&["inspect", "--listen", "0.0.0.0:0"]).output().unwrap();
    let refused = envelope(&output);
    assert_eq!(refused["error"]["code"], "CONFIG_ERROR", "{refused}");
    assert_eq!(output.status.code(), Some(2));
    let outside = home.cmd(&["inspect"]).current_dir(&home.outside).output().unwrap();
    assert_eq!(envelope(&outside)["error"]["code"], "NO_AMBIENT_CONTEXT");
    assert_eq!(outside.status.code(), Some(5));
    // In the project, with no daemon running, the inspector starts one like any command.
    let mut command = std::process::Command::new(crate::support::BIN);
    command
        .arg("inspect")
        .env("MEMOREE_HOME", &home.home)
        .env_remove("MEMOREE_ENDPOINT")
        .env_remove("MEMOREE_CONTEXT")
        .current_dir(&home.project)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut process = command.spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(process.stdout.take().unwrap()), &mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    let _ = process.kill();
    let _ = process.wait();
    assert_eq!(started["ok"], true, "{started}");
    assert!(
        started["result"]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert!(home.socket().exists(), "the daemon was autostarted");
}
