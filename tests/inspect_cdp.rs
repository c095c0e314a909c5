//! A minimal Chrome DevTools Protocol client for the browser test: Debian's `chromium`
//! headless, driven over `--remote-debugging-pipe` (NUL-delimited JSON on file descriptors
//! 3 and 4, the transport Playwright uses), so no WebSocket stack or CDP crate is compiled.
//!
//! The browser is an optional test part (`memoree::testkit::parts`): when it cannot be found
//! the test reports itself skipped, and fails under CI (which installs it with `apt-get install
//! -y chromium`); `MEMOREE_CHROMIUM` overrides the path. A browser that is found but does not
//! start fails the test loudly.

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// How long one protocol exchange or wait may take (a loaded CI machine is slow).
const TIMEOUT: Duration = Duration::from_secs(60);

fn executable() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MEMOREE_CHROMIUM") {
        return Some(PathBuf::from(path)).filter(|path| path.is_file());
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|candidate| candidate.is_file())
}

/// A headless Chromium and its protocol pipe.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// Events received while waiting for replies, oldest first.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium with a fresh profile and every background service off, or reports the
    /// running test skipped and returns `None` when there is no Chromium (a failure under CI).
    pub fn launch() -> Option<Browser> {
        let Some(chromium) = executable() else {
            memoree::testkit::parts::skip(
                memoree::testkit::parts::Part::Chromium,
                &memoree::testkit::parts::current_test(),
                "no MEMOREE_CHROMIUM, /usr/bin/chromium or /usr/bin/chromium-browser",
            );
            return None;
        };
        let profile = tempfile::tempdir().unwrap();
        // The shell moves our pipes to the descriptors Chromium reads (3) and writes (4).
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>/dev/null")
            .arg(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--mute-audio",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", chromium.display()));
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 64 * 1024];
            loop {
                let read = match output.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buffer.extend_from_slice(&chunk[..read]);
                while let Some(end) = buffer.iter().position(|&b| b == 0) {
                    let message: Vec<u8> = buffer.drain(..=end).collect();
                    if let Ok(value) = serde_json::from_slice::<Value>(&message[..end])
                        && sender.send(value).is_err()
                    {
                        return;
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            input,
            messages,
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
        };
        let version = browser.call(None, "Browser.getVersion", json!({}));
        assert!(
            version["product"].as_str().is_some_and(|p| p.contains("Chrom")),
            "unexpected browser: {version}"
        );
        Some(browser)
    }

    fn receive(&mut self, deadline: Instant) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.messages.recv_timeout(left) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("Chromium did not answer in time"),
            Err(RecvTimeoutError::Disconnected) => panic!("Chromium exited: {:?}", self.child.try_wait()),
        }
    }

    /// Sends one command and waits for its result; events arriving meanwhile are kept.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.input.write_all(&bytes).unwrap();
        self.input.flush().unwrap();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.receive(deadline);
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {error}");
                }
                return message["result"].clone();
            }
            self.events.push(message);
        }
    }

    /// Opens a tab with a 1280×900 viewport and console, log and page events on.
    pub fn tab(&mut self) -> Tab<'_> {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        let session = attached["sessionId"].as_str().unwrap().to_owned();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            self.call(Some(&session), domain, json!({}));
        }
        self.call(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        Tab { browser: self, session }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let mut bytes = serde_json::to_vec(&json!({"id": 0, "method": "Browser.close"})).unwrap();
        bytes.push(0);
        let _ = self.input.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One page target.
pub struct Tab<'a> {
    browser: &'a mut Browser,
    session: String,
}

impl Tab<'_> {
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.browser.call(Some(&session), method, params)
    }

    /// Evaluates `expression` in the page and returns its value (awaiting promises).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        result["result"].get("value").cloned().unwrap_or(Value::Null)
    }

    /// Polls `condition` (a JavaScript expression) until it is true.
    pub fn wait_until(&mut self, condition: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval(condition) != json!(true) {
            assert!(Instant::now() < deadline, "timed out waiting for {condition}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Navigates and waits until the new document (not the one being left) has loaded
    /// completely.
    pub fn open(&mut self, url: &str) {
        self.eval("window.__leaving = true");
        let navigated = self.call("Page.navigate", json!({"url": url}));
        if let Some(error) = navigated.get("errorText") {
            panic!("navigating to {url} failed: {error}");
        }
        self.wait_until("window.__leaving !== true && document.readyState === 'complete'");
    }

    /// Console errors, uncaught exceptions and error-level log entries (failed loads, CSP
    /// violations) of this tab since the last call.
    pub fn take_errors(&mut self) -> Vec<String> {
        let session = self.session.clone();
        let mut errors = Vec::new();
        self.browser.events.retain(|event| {
            if event.get("sessionId").and_then(Value::as_str) != Some(session.as_str()) {
                return true;
            }
            let params = &event["params"];
            match event["method"].as_str().unwrap_or("") {
                "Runtime.consoleAPICalled" if matches!(params["type"].as_str(), Some("error" | "assert")) => {
                    errors.push(format!("console.{}: {}", params["type"], params["args"]));
                }
                "Runtime.exceptionThrown" => errors.push(format!("exception: {}", params["exceptionDetails"])),
                "Log.entryAdded" if params["entry"]["level"] == "error" => {
                    errors.push(format!("log: {} {}", params["entry"]["text"], params["entry"]["url"]));
                }
                _ => {}
            }
            false
        });
        errors
    }

    /// Writes a PNG of the whole page (at most 2400 px tall) to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", json!({}));
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(900.0)
            .clamp(900.0, 2400.0);
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}
