//! `memoree inspect` (issue 19): page render latency over real HTTP and the inspector's
//! memory, with the release binaries (`memoree serve` plus `memoree inspect` talking to it).
//!
//! 1. **Claim page**: `GET /claims/{id}` for a claim citing four spans (of three artifact
//!    revisions), on a keep-alive connection; p50 and p95 over 300 requests. The floor is the
//!    protocol reads the page makes (`claim.get`, `claim.history`, `event.list`, one
//!    `artifact.get` per cited revision and per cited artifact's head) sent directly over one
//!    socket session, interleaved request by request with the page.
//! 2. **Ask page** at 10k artifacts (plus a claim per ten artifacts): `GET /ask?q=…` for 64
//!    four-word queries, several rounds; the floor is `memory.recall`, `context.build` and
//!    `search` for the same query sent directly, interleaved the same way.
//! 3. **Inspector RSS**: `VmRSS` of the `memoree inspect` process idle after start, and
//!    `VmRSS` / `VmHWM` after the load above; the daemon's idle RSS in the same run is shown
//!    for scale.
//!
//! The 10k store is seeded once through ordinary `artifact.put` / `claim.assert` requests to
//! the service (four writers, so group commit applies) and cached under
//! `target/inspect-bench/`. A first argument filters sections (`claim`, `ask`, `rss`).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/rng.rs"]
mod rng;
#[path = "support/sections.rs"]
mod sections;
#[path = "support/targets.rs"]
mod targets;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use memoree::client::socket::{SocketClient, SocketSession};
use memoree::paths::Endpoint;
use memoree::service::Service;
use rng::Rng;
use sections::selected;
use serde_json::{Value, json};
use targets::target;

/// Bump when the generator changes so the cached store is rebuilt.
const STORE_VERSION: u32 = 1;
const ARTIFACTS: usize = 10_000;
const COMMON_WORDS: usize = 300;
const TOPICS: usize = ARTIFACTS / 5;
const QUERIES: usize = 64;
const CLAIM_REQUESTS: usize = 300;
const ASK_ROUNDS: usize = 3;
/// Both page targets: p50 under 50 ms.
const TARGET_MS: f64 = 50.0;

fn word(tier: char, mut i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "fu", "gi", "ho", "ja", "pe", "qu", "zo",
    ];
    let mut out = String::from(tier);
    loop {
        out.push_str(SYLLABLES[i % 16]);
        i /= 16;
        if i == 0 {
            return out;
        }
    }
}

/// `words` words, mostly common ones, with `topics` topic words mixed in.
fn text(rng: &mut Rng, words: usize, topics: usize) -> String {
    let mut out: Vec<String> = (0..words)
        .map(|_| word('c', rng.below(COMMON_WORDS).min(rng.below(COMMON_WORDS))))
        .collect();
    for _ in 0..topics {
        let at = rng.below(out.len());
        out[at] = word('t', rng.below(TOPICS));
    }
    out.join(" ")
}

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
}

fn write_request(key: &str, op: &str, input: Value) -> Value {
    json!({"request_id": format!("req_{key}"), "op": op, "idempotency_key": key, "context": context(), "input": input})
}

fn read_request(op: &str, input: Value) -> Value {
    json!({"request_id": "req_bench", "op": op, "context": context(), "input": input})
}

fn cache_dir() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target
        .join("inspect-bench")
        .join(format!("v{STORE_VERSION}-n{ARTIFACTS}"))
}

/// Seeds 10k artifacts (a claim citing the first 20 bytes of every tenth) through the
/// service, four writers at a time.
fn seed(data: &Path) {
    let service = Service::open(data).unwrap();
    std::thread::scope(|scope| {
        for writer in 0..4 {
            let service = service.clone();
            scope.spawn(move || {
                let mut rng = Rng(0x1919_1919 ^ writer as u64);
                for i in (writer..ARTIFACTS).step_by(4) {
                    let length = 80 + rng.below(120);
                    let body = text(&mut rng, length, 10);
                    let kind = ["note", "decision", "runbook"][i % 3];
                    let put = write_request(
                        &format!("a{i}"),
                        "artifact.put",
                        json!({"kind": kind, "title": text(&mut rng, 5, 1),
                               "media_type": "text/markdown", "content": {"type": "text", "data": body}}),
                    );
                    let response = service.handle_value(put, "req_seed");
                    assert!(response.ok, "{:?}", response.error);
                    if i % 10 == 0 {
                        let result = response.result.unwrap();
                        let claim = write_request(
                            &format!("c{i}"),
                            "claim.assert",
                            json!({"claim_type": "fact", "statement": text(&mut rng, 12, 3),
                                   "evidence": [{"artifact_id": result["artifact_id"], "revision_id": result["revision_id"],
                                                 "start_byte": 0, "end_byte": 20}]}),
                        );
                        assert!(service.handle_value(claim, "req_seed").ok);
                    }
                }
            });
        }
    });
    service.store().shutdown();
}

/// The cached 10k store's data directory, seeded on first use.
fn store() -> PathBuf {
    let dir = cache_dir();
    if !dir.join("seeded").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        seed(&dir.join("data"));
        std::fs::write(dir.join("seeded"), b"ok").unwrap();
        println!(
            "seeded {ARTIFACTS} artifacts in {:.1}s",
            started.elapsed().as_secs_f64()
        );
    }
    dir.join("data")
}

/// `(VmRSS, VmHWM)` of a process in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A child process stopped with SIGTERM (by its own pid) on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(rustix::process::Pid::from_child(&self.0), rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Setup {
    _home: tempfile::TempDir,
    daemon: Process,
    inspector: Process,
    _stdout: BufReader<ChildStdout>,
    socket: PathBuf,
    addr: SocketAddr,
    cookie: String,
    claim_id: String,
}

fn start(data: &Path) -> Setup {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("m.sock");
    let daemon = Process(
        Command::new(env!("CARGO_BIN_EXE_memoree"))
            .args([
                "serve",
                "--listen",
                &format!("unix://{}", socket.display()),
                "--data-dir",
            ])
            .arg(data)
            .env("MEMOREE_HOME", home.path())
            .env_remove("MEMOREE_ENDPOINT")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let client = SocketClient::new(Endpoint::Unix(socket.clone()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !client
        .exchange_json(&read_request("capabilities", json!({})))
        .is_ok_and(|r| r.ok)
    {
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let claim_id = four_span_claim(&client);
    let mut child = Command::new(env!("CARGO_BIN_EXE_memoree"))
        .args(["inspect", "--endpoint", &format!("unix://{}", socket.display())])
        .env("MEMOREE_HOME", home.path())
        .env("MEMOREE_CONTEXT", context().to_string())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let inspector = Process(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    let addr: SocketAddr = started["result"]["listen"].as_str().unwrap().parse().unwrap();
    let token = started["result"]["url"]
        .as_str()
        .unwrap()
        .rsplit_once("token=")
        .unwrap()
        .1
        .to_owned();
    Setup {
        _home: home,
        daemon,
        inspector,
        _stdout: stdout,
        socket,
        addr,
        cookie: {
            let (name, value) = memoree::inspect::guard::session_cookie(&token);
            format!("{name}={value}")
        },
        claim_id,
    }
}

/// A claim citing four spans: three of one artifact's second revision, one of its first,
/// so the page also reads the artifact's head.
fn four_span_claim(client: &SocketClient) -> String {
    let write = |key: &str, op: &str, input: Value| {
        let response = client.exchange_json(&write_request(key, op, input)).unwrap();
        assert!(response.ok, "{op}: {:?}", response.error);
        response.result.unwrap()
    };
    let body = "Überblick: <Cache> & \"TTL\" — 30 s.\n".repeat(40);
    let put = write(
        "span-put",
        "artifact.put",
        json!({"kind": "design", "title": "Cache TTL", "content": {"type": "text", "data": body}}),
    );
    // Fixed keys: on the cached store these replay the first run's acknowledgements.
    let revised = write(
        "span-revise",
        "artifact.revise",
        json!({"artifact_id": put["artifact_id"], "if_revision": put["revision_id"],
               "content": {"type": "text", "data": format!("{body}one more line\n")}}),
    );
    let span = |revision: &Value, start: usize| json!({"artifact_id": put["artifact_id"], "revision_id": revision, "start_byte": start, "end_byte": start + 15});
    let claim = write(
        "span-claim",
        "claim.assert",
        json!({"claim_type": "fact", "statement": "The cache TTL is thirty seconds.",
               "evidence": [span(&revised["revision_id"], 12), span(&revised["revision_id"], 400),
                            span(&revised["revision_id"], 900), span(&put["revision_id"], 1200)]}),
    );
    claim["claim_id"].as_str().unwrap().to_owned()
}

/// One keep-alive HTTP/1.1 connection to the inspector.
struct Browser {
    runtime: tokio::runtime::Runtime,
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    host: String,
    cookie: String,
}

impl Browser {
    fn connect(setup: &Setup) -> Browser {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let addr = setup.addr;
        let sender = runtime.block_on(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
            tokio::spawn(connection);
            sender
        });
        Browser {
            runtime,
            sender,
            host: addr.to_string(),
            cookie: setup.cookie.clone(),
        }
    }

    /// `GET path`; returns the body length.
    fn get(&mut self, path: &str) -> usize {
        let request = hyper::Request::get(path)
            .header("host", &self.host)
            .header("cookie", &self.cookie)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let sender = &mut self.sender;
        self.runtime.block_on(async move {
            sender.ready().await.unwrap();
            let response = sender.send_request(request).await.unwrap();
            assert_eq!(response.status(), 200, "GET {path}");
            response.into_body().collect().await.unwrap().to_bytes().len()
        })
    }
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn exchange(session: &mut SocketSession, request: Value) -> Value {
    let response = session.exchange_json(&request).unwrap();
    assert!(response.ok, "{:?}", response.error);
    response.result.unwrap()
}

/// The protocol reads the claim page makes, sent directly.
fn claim_floor(session: &mut SocketSession, claim_id: &str) {
    let claim = exchange(session, read_request("claim.get", json!({"claim_id": claim_id})));
    exchange(
        session,
        read_request("claim.history", json!({"claim_id": claim_id, "limit": 100})),
    );
    exchange(
        session,
        read_request(
            "event.list",
            json!({"entity_type": "claim", "entity_id": claim_id, "limit": 100}),
        ),
    );
    let evidence = claim["evidence"].as_array().unwrap();
    exchange(
        session,
        read_request(
            "artifact.get",
            json!({"artifact_id": evidence[0]["artifact_id"], "include_content": false}),
        ),
    );
    for locator in evidence {
        exchange(
            session,
            read_request(
                "artifact.get",
                json!({"artifact_id": locator["artifact_id"], "revision_id": locator["revision_id"]}),
            ),
        );
    }
}

fn claim_page(setup: &Setup) {
    let mut browser = Browser::connect(setup);
    let mut session = SocketClient::new(Endpoint::Unix(setup.socket.clone())).session();
    let path = format!("/claims/{}", setup.claim_id);
    let bytes = browser.get(&path);
    let (mut page, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..CLAIM_REQUESTS {
        let started = Instant::now();
        browser.get(&path);
        page.push(ms(started.elapsed()));
        let started = Instant::now();
        claim_floor(&mut session, &setup.claim_id);
        floor.push(ms(started.elapsed()));
    }
    let (p50, p95) = (percentile(&mut page, 0.5), percentile(&mut page, 0.95));
    let floor50 = percentile(&mut floor, 0.5);
    println!("\n== claim page with 4 evidence spans ({CLAIM_REQUESTS} requests, {bytes} bytes of HTML) ==");
    println!("page p50 {p50:.2} ms, p95 {p95:.2} ms; its 8 protocol reads sent directly p50 {floor50:.2} ms");
    target(
        19,
        "inspect: claim page (4 evidence spans) p50",
        &format!("{p50:.2} ms (p95 {p95:.2} ms)"),
        &format!("{floor50:.2} ms (its 8 protocol reads, direct)"),
        "< 50 ms",
        Some(p50 < TARGET_MS),
    );
}

fn ask_page(setup: &Setup) {
    let mut browser = Browser::connect(setup);
    let mut session = SocketClient::new(Endpoint::Unix(setup.socket.clone())).session();
    let mut rng = Rng(0xa5c0_ffee);
    let queries: Vec<String> = (0..QUERIES)
        .map(|_| {
            (0..4)
                .map(|_| word('t', rng.below(TOPICS)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let (mut page, mut floor) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    for _ in 0..ASK_ROUNDS {
        for query in &queries {
            let path = format!("/ask?q={}", query.replace(' ', "+"));
            let started = Instant::now();
            bytes = bytes.max(browser.get(&path));
            page.push(ms(started.elapsed()));
            let started = Instant::now();
            exchange(&mut session, read_request("memory.recall", json!({"query": query})));
            exchange(&mut session, read_request("context.build", json!({"query": query})));
            exchange(
                &mut session,
                read_request("search", json!({"query": query, "limit": 10})),
            );
            floor.push(ms(started.elapsed()));
        }
    }
    let (p50, p95) = (percentile(&mut page, 0.5), percentile(&mut page, 0.95));
    let floor50 = percentile(&mut floor, 0.5);
    println!(
        "\n== ask page at {ARTIFACTS} artifacts ({} requests, up to {bytes} bytes of HTML) ==",
        page.len()
    );
    println!(
        "page p50 {p50:.2} ms, p95 {p95:.2} ms; recall + context.build + search sent directly p50 {floor50:.2} ms"
    );
    target(
        19,
        "inspect: Ask page at 10k artifacts p50",
        &format!("{p50:.2} ms (p95 {p95:.2} ms)"),
        &format!("{floor50:.2} ms (recall + context.build + search, direct)"),
        "< 50 ms",
        Some(p50 < TARGET_MS),
    );
}

fn main() {
    let data = store();
    let setup = start(&data);
    std::thread::sleep(Duration::from_millis(500));
    let (idle, _) = memory(setup.inspector.0.id());
    let (daemon_idle, _) = memory(setup.daemon.0.id());
    if selected("claim") {
        claim_page(&setup);
    }
    if selected("ask") {
        ask_page(&setup);
    }
    if selected("rss") {
        let (loaded, peak) = memory(setup.inspector.0.id());
        println!("\n== inspector memory (release binary, VmRSS / VmHWM from /proc) ==");
        println!(
            "idle {idle:.1} MiB; after the page load above {loaded:.1} MiB, peak {peak:.1} MiB; daemon idle {daemon_idle:.1} MiB"
        );
        target(
            19,
            "inspect: inspector idle RSS",
            &format!("{idle:.1} MiB (after load {loaded:.1} MiB, peak {peak:.1} MiB)"),
            &format!("{daemon_idle:.1} MiB (the daemon's idle RSS)"),
            "reported",
            None,
        );
    }
}
