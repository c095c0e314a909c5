//! The inspector in a real browser (Debian's Chromium, headless): every page loads with its
//! stylesheet and script and without a console error, hostile content never runs, and the
//! Content-Security-Policy blocks script injected into a page. A screenshot of each page is
//! written to `target/inspect-screenshots/` (kept by CI as an artifact).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::inspect_cdp::Browser;
use crate::inspect_fixture::Inspector;

fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("../inspect-screenshots")
}

#[test]
fn every_page_loads_in_chromium_without_console_errors_and_injected_script_is_blocked_by_the_csp() {
    let Some(mut browser) = Browser::launch() else {
        return;
    };
    let inspector = Inspector::start();
    let mut tab = browser.tab();

    // The printed URL signs the browser in and lands on the overview without the token.
    tab.open(&inspector.url);
    tab.wait_until("location.pathname === '/' && location.search === '' && !!document.querySelector('main h1')");
    assert_eq!(
        tab.eval("document.querySelector('main h1').textContent"),
        json!("Overview")
    );
    assert_eq!(tab.eval("document.cookie"), json!(""), "the cookie is HttpOnly");
    let errors = tab.take_errors();
    assert!(errors.is_empty(), "signing in logged errors: {errors:#?}");

    let dir = screenshot_dir();
    for (index, (name, path)) in inspector.sections().iter().enumerate() {
        tab.open(&inspector.page_url(path));
        let heading = tab.eval("document.querySelector('main h1') && document.querySelector('main h1').textContent");
        assert!(heading.is_string(), "{name}: no heading");
        // The same-origin stylesheet and script are allowed by the CSP and applied.
        assert_eq!(
            tab.eval("getComputedStyle(document.querySelector('header.top')).display"),
            json!("flex"),
            "{name}"
        );
        assert_eq!(
            tab.eval("document.documentElement.classList.contains('js')"),
            json!(true),
            "{name}"
        );
        assert_eq!(tab.eval("document.scripts.length"), json!(1), "{name}");
        assert_eq!(
            tab.eval("typeof window.__pwned"),
            json!("undefined"),
            "{name}: hostile content ran"
        );
        let errors = tab.take_errors();
        assert!(errors.is_empty(), "{name} ({path}) logged errors: {errors:#?}");
        tab.screenshot(&dir.join(format!("{index:02}-{name}.png")));
    }

    // Hostile content is on screen as text, and never ran.
    tab.open(&inspector.page_url(&format!("/artifacts/{}", inspector.extras.hostile_artifact)));
    let shown = tab.eval("document.querySelector('pre.source').textContent");
    assert!(
        shown.as_str().unwrap().contains("<script>window.__pwned = 1</script>"),
        "{shown}"
    );
    assert_eq!(
        tab.eval("document.querySelectorAll('main img, main iframe, main svg').length"),
        json!(0)
    );
    let errors = tab.take_errors();
    assert!(errors.is_empty(), "the hostile artifact logged errors: {errors:#?}");

    // Script injected into the page is refused by the policy: an inline <script>, a
    // javascript: link and an inline event handler.
    tab.eval(
        "window.__violations = [];
         document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.effectiveDirective));
         const script = document.createElement('script');
         script.textContent = 'window.__injected = 1';
         document.body.appendChild(script);
         const link = document.createElement('a');
         link.href = 'javascript:window.__link = 1';
         document.body.appendChild(link);
         link.click();
         const div = document.createElement('div');
         div.setAttribute('onclick', 'window.__handler = 1');
         document.body.appendChild(div);
         div.click();
         true",
    );
    tab.wait_until("window.__violations.length >= 3");
    assert_eq!(
        tab.eval("[typeof window.__injected, typeof window.__link, typeof window.__handler]"),
        json!(["undefined", "undefined", "undefined"])
    );
    let directives = tab.eval("window.__violations.slice().sort()");
    assert_eq!(
        directives,
        json!(["script-src-attr", "script-src-elem", "script-src-elem"]),
        "{directives}"
    );
    let reported = tab.take_errors();
    assert!(
        reported
            .iter()
            .filter(|e| e.contains("Content Security Policy"))
            .count()
            >= 3,
        "the console reports each refusal: {reported:#?}"
    );
}
