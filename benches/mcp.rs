//! `memoree mcp` benchmarks (release binary, a warm daemon on a temp socket):
//!
//! 1. **Tool-call overhead** (`overhead`): a `recall` tool call through `memoree mcp`
//!    (JSON-RPC line out, reply line back) against the floor, the same v1 `memory.recall`
//!    request sent by an already-running client over a reused socket connection (what
//!    `memoree call` does once it has a connection). The two are interleaved sample by
//!    sample so machine noise hits both. Target: p50(MCP) − p50(floor) ≤ 1 ms.
//! 2. **Idle RSS** (`rss`): RSS of the `memoree mcp` process after the handshake, and again
//!    idle after a session's worth of tool calls (every read tool, a write, a failure, a
//!    citation), with its anonymous and file-backed parts. Target: ≤ 10 MiB.
//!
//! `cargo bench --bench mcp -- rss` runs one section.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/rng.rs"]
mod rng;
#[path = "support/sections.rs"]
mod sections;
#[path = "support/targets.rs"]
mod targets;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use memoree::client::socket::{SocketClient, SocketSession};
use memoree::paths::Endpoint;
use rng::Rng;
use sections::selected;
use serde_json::{Value, json};
use targets::target;

const ISSUE: u32 = 15;
const SAMPLES: usize = 400;
const WARMUP: usize = 40;
const DOCUMENTS: usize = 300;
const WORDS: [&str; 24] = [
    "deploy", "freeze", "backup", "nightly", "schema", "index", "latency", "budget", "cache", "retry", "policy",
    "owner", "review", "release", "rollback", "token", "quota", "alert", "metric", "shard", "replica", "failover",
    "audit", "window",
];

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
}

/// A release-binary daemon on a temp socket; killed (by its own pid) on drop.
struct Daemon {
    child: Child,
    socket: PathBuf,
    _home: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Daemon {
    fn spawn() -> Daemon {
        let home = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let socket = home.path().join("m.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_memoree"))
            .args([
                "serve",
                "--listen",
                &format!("unix://{}", socket.display()),
                "--data-dir",
            ])
            .arg(data.path().join("data"))
            .env("MEMOREE_HOME", home.path())
            .env_remove("MEMOREE_ENDPOINT")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let daemon = Daemon {
            child,
            socket,
            _home: home,
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let probe = json!({"request_id": "ready", "op": "capabilities", "input": {}});
        while !daemon.client().exchange_json(&probe).is_ok_and(|r| r.ok) {
            assert!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    fn client(&self) -> SocketClient {
        SocketClient::new(Endpoint::Unix(self.socket.clone()))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::TERM,
        );
        let _ = self.child.wait();
    }
}

/// Seeds artifacts with claims citing them, so recall ranks real candidates.
fn seed(session: &mut SocketSession) {
    let mut rng = Rng(0x15_0015);
    for i in 0..DOCUMENTS {
        let text: Vec<&str> = (0..40).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let text = text.join(" ");
        let put = session
            .exchange_json(&json!({
                "request_id": format!("seed_put_{i}"), "op": "artifact.put", "idempotency_key": format!("seed-put-{i}"),
                "context": context(), "context_source": "session",
                "input": {"kind": "note", "title": format!("note {i}"), "content": {"type": "text", "data": text}},
            }))
            .unwrap();
        assert!(put.ok, "{:?}", put.error);
        let result = put.result.unwrap();
        let claim = session
            .exchange_json(&json!({
                "request_id": format!("seed_claim_{i}"), "op": "claim.assert", "idempotency_key": format!("seed-claim-{i}"),
                "context": context(), "context_source": "session",
                "input": {"claim_type": "fact", "statement": text.split(' ').take(12).collect::<Vec<_>>().join(" "),
                          "evidence": [{"artifact_id": result["artifact_id"], "revision_id": result["revision_id"], "start_byte": 0, "end_byte": 20}]},
            }))
            .unwrap();
        assert!(claim.ok, "{:?}", claim.error);
    }
}

/// A `memoree mcp` child (release) driven by JSON-RPC lines.
struct McpServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl McpServer {
    fn spawn(endpoint: &str) -> McpServer {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_memoree"))
            .args(["mcp", "--endpoint", endpoint])
            .current_dir(dir.path())
            .env("MEMOREE_HOME", dir.path())
            .env("MEMOREE_CONTEXT", context().to_string())
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = McpServer {
            child,
            stdin,
            stdout,
            next_id: 0,
            _dir: dir,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "memoree mcp closed stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn recall(&mut self, query: &str) -> Value {
        let reply = self.request("tools/call", json!({"name": "recall", "arguments": {"query": query}}));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        reply
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn overhead(daemon: &Daemon) {
    let mut session = daemon.client().session();
    let mut server = McpServer::spawn(&daemon.endpoint());
    let mut rng = Rng(0x0015_beef);
    let mut floor = Vec::with_capacity(SAMPLES);
    let mut mcp = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        let query = format!("{} {}", WORDS[rng.below(WORDS.len())], WORDS[rng.below(WORDS.len())]);
        let request = json!({
            "v": 1, "request_id": format!("req_floor_{i}"), "op": "memory.recall",
            "context": context(), "context_source": "session", "input": {"query": query},
        });
        let start = Instant::now();
        let response = session.exchange_json(&request).unwrap();
        let floor_time = start.elapsed();
        assert!(response.ok, "{:?}", response.error);
        let start = Instant::now();
        server.recall(&query);
        let mcp_time = start.elapsed();
        if i >= WARMUP {
            floor.push(floor_time);
            mcp.push(mcp_time);
        }
    }
    let (floor_p50, mcp_p50) = (percentile(&mut floor, 0.5), percentile(&mut mcp, 0.5));
    let (floor_p90, mcp_p90) = (percentile(&mut floor, 0.9), percentile(&mut mcp, 0.9));
    let added = mcp_p50.saturating_sub(floor_p50);
    println!(
        "\n== recall tool call vs memory.recall over a reused connection ({SAMPLES} interleaved samples, {DOCUMENTS} artifacts + claims) =="
    );
    println!(
        "floor (reused socket session): p50 {:.3} ms, p90 {:.3} ms",
        ms(floor_p50),
        ms(floor_p90)
    );
    println!(
        "memoree mcp tools/call recall: p50 {:.3} ms, p90 {:.3} ms",
        ms(mcp_p50),
        ms(mcp_p90)
    );
    target(
        ISSUE,
        "MCP recall tool call: added p50 over the same request on a reused connection (warm daemon)",
        &format!("+{:.3} ms ({:.3} ms)", ms(added), ms(mcp_p50)),
        &format!("{:.3} ms", ms(floor_p50)),
        "<= 1 ms added",
        Some(added <= Duration::from_millis(1)),
    );
}

/// `VmRSS` and its anonymous and file-backed parts (`smaps_rollup`), in KiB.
fn memory(pid: u32) -> (u64, u64, u64) {
    let rollup = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let field = |name: &str| {
        rollup
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let rss = field("Rss:");
    let anonymous = field("Anonymous:");
    (rss, anonymous, rss.saturating_sub(anonymous))
}

fn rss(daemon: &Daemon) {
    let mut server = McpServer::spawn(&daemon.endpoint());
    std::thread::sleep(Duration::from_millis(500));
    let started = memory(server.child.id());
    // A session's worth of use: the tool list, every read tool, a write, a failure, a citation.
    server.request("tools/list", json!({}));
    for word in WORDS {
        server.recall(word);
    }
    let put = server.request(
        "tools/call",
        json!({"name": "artifact_put", "arguments": {"kind": "note", "title": "rss", "content": {"type": "text", "data": "resident set size"}}}),
    );
    let artifact = put["result"]["structuredContent"].clone();
    let (art, rev) = (
        artifact["artifact_id"].as_str().unwrap(),
        artifact["revision_id"].as_str().unwrap(),
    );
    for (tool, arguments) in [
        ("search", json!({"query": "deploy"})),
        ("context_build", json!({"query": "backup policy", "max_bytes": 8192})),
        ("artifact_get", json!({"artifact_id": art})),
        ("artifact_history", json!({"artifact_id": art})),
        ("relation_list", json!({"entity_type": "artifact", "entity_id": art})),
        ("conflict_list", json!({})),
        ("capabilities", json!({})),
        ("doctor", json!({})),
        ("artifact_get", json!({"artifact_id": "art_missing"})),
    ] {
        server.request("tools/call", json!({"name": tool, "arguments": arguments}));
    }
    server.request(
        "resources/read",
        json!({"uri": format!("memoree://artifact/{art}@{rev}#0-8")}),
    );
    // Idle: the daemon connection lingers 1 s, then closes and the heap is trimmed.
    std::thread::sleep(Duration::from_millis(2000));
    let idle = memory(server.child.id());
    let mib = |kib: u64| kib as f64 / 1024.0;
    let show = |(rss, anonymous, file): (u64, u64, u64)| {
        format!(
            "{:.1} MiB (anonymous {:.1}, file-backed {:.1})",
            mib(rss),
            mib(anonymous),
            mib(file)
        )
    };
    println!("\n== memoree mcp memory (release binary, /proc/PID/smaps_rollup) ==");
    println!("after the handshake: {}", show(started));
    println!(
        "idle after tools/list, 24 recalls, every other read tool, a put, a failure and a citation: {}",
        show(idle)
    );
    let worst = started.0.max(idle.0);
    target(
        ISSUE,
        "MCP server idle RSS (after the handshake; idle after a session's worth of tool calls)",
        &format!("{:.1} MiB; {:.1} MiB", mib(started.0), mib(idle.0)),
        "-",
        "<= 10 MiB",
        Some(mib(worst) <= 10.0),
    );
}

fn main() {
    let daemon = Daemon::spawn();
    seed(&mut daemon.client().session());
    if selected("overhead") {
        overhead(&daemon);
    }
    if selected("rss") {
        rss(&daemon);
    }
}
