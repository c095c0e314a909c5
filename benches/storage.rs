//! Storage and resource report (issue 9):
//!
//! 1. **Storage amplification**: for realistic text artifacts of 1 KiB to 1 MiB, the bytes on
//!    disk (database + WAL after a checkpoint, plus the apparent size of every CAS object)
//!    divided by the raw content bytes stored. The floor of this ratio is 1.0 (the raw bytes
//!    themselves). Text is pseudo-English: Zipf-distributed words from a 5,000-word
//!    vocabulary in sentences and paragraphs. Every put goes through the service (idempotency
//!    key, FTS, events), four writers at a time so group commit applies as in real use.
//! 2. **Daemon RSS**: the daemon users get by default, started by the autostart launcher from
//!    the release `memoree` (so the slim `memoree-daemon` beside it) on a temp socket; `VmRSS` idle after
//!    start (target <= 10 MiB), then `VmRSS` and `VmHWM` (peak) after a load of puts,
//!    searches, recalls, builds and an 8 MiB artifact written and read back; and (section
//!    `rss_loaded`) `VmRSS` after 10,000 artifacts were put through one connection, plus a
//!    few reads (target <= 16 MiB).
//! 3. **Cold call latency**: spawning `memoree call` with a capabilities request against the
//!    warm daemon, 200 times; the floor is spawning `/bin/true` the same way.
//!
//! `MEMOREE_BENCH_AMP_BYTES` sets the raw bytes stored per size (default 8 MiB);
//! `MEMOREE_BENCH_SPAWNS` the number of cold calls. A first argument filters sections
//! (`amplification`, `rss`, `rss_loaded`, `cold_call`). `MEMOREE_BENCH_LOADED_ARTIFACTS`
//! sets the artifacts of `rss_loaded` (default 10,000).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/rng.rs"]
mod rng;
#[path = "support/sections.rs"]
mod sections;
#[path = "support/targets.rs"]
mod targets;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memoree::client::autostart::Launcher;
use memoree::client::socket::SocketClient;
use memoree::paths::{BLOBS_DIR, BLOBS_TMP_DIR, DB_FILE, DB_WAL_FILE, Endpoint};
use memoree::protocol::Request;
use memoree::service::Service;
use rng::Rng;
use sections::selected;
use serde_json::{Value, json};
use targets::target;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const VOCABULARY: usize = 5000;

static KEY: AtomicU64 = AtomicU64::new(0);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Pseudo-English: a fixed vocabulary drawn with Zipf weights (1/rank).
struct Text {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Text {
    fn new() -> Text {
        const SYLLABLES: [&str; 30] = [
            "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "fu", "gi", "ho", "ja", "pe", "qu", "zo", "an", "er",
            "in", "th", "st", "re", "on", "al", "ing", "tion", "ment", "ou", "ea", "ch",
        ];
        let mut rng = Rng(0x00c0_ffee_d00d_f00d);
        let mut words = Vec::with_capacity(VOCABULARY);
        let mut seen = std::collections::HashSet::new();
        while words.len() < VOCABULARY {
            // Short words are the common ones, as in English.
            let syllables = 1 + (rng.below(4)).min(rng.below(5)) + usize::from(words.len() > 200);
            let word: String = (0..syllables).map(|_| SYLLABLES[rng.below(SYLLABLES.len())]).collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (0..VOCABULARY)
            .map(|rank| {
                total += 1.0 / (rank + 1) as f64;
                total
            })
            .collect();
        Text { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let total = *self.cumulative.last().unwrap();
        let at = rng.unit() * total;
        let index = self.cumulative.partition_point(|&c| c < at).min(VOCABULARY - 1);
        &self.words[index]
    }

    /// `bytes` bytes of sentences and paragraphs.
    fn generate(&self, rng: &mut Rng, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes + 256);
        while out.len() < bytes {
            let count = 6 + rng.below(15);
            for i in 0..count {
                let word = self.word(rng);
                if i == 0 {
                    let mut chars = word.chars();
                    out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
                    out.push_str(chars.as_str());
                } else {
                    out.push(' ');
                    out.push_str(word);
                }
            }
            out.push_str(if rng.below(100) < 8 { ", " } else { ". " });
            if rng.below(100) < 15 {
                out.push_str("\n\n");
            }
        }
        out.truncate(bytes);
        out
    }
}

fn put_request(title: &str, body: &str) -> Value {
    let key = KEY.fetch_add(1, Ordering::Relaxed);
    json!({
        "request_id": format!("req_storage_{key}"),
        "op": "artifact.put",
        "idempotency_key": format!("bench-storage-{key}"),
        "context": {"workspace_id": "wsp_bench", "project_id": "prj_bench"},
        "input": {
            "kind": "note",
            "title": title,
            "media_type": "text/markdown",
            "content": {"type": "text", "data": body},
        },
    })
}

fn read_request(op: &str, input: Value) -> Value {
    json!({
        "request_id": "req_storage_read", "op": op,
        "context": {"workspace_id": "wsp_bench", "project_id": "prj_bench"},
        "input": input,
    })
}

/// Apparent and allocated bytes of the regular files under `dir`, skipping `.tmp`.
fn tree_bytes(dir: &Path) -> (u64, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut apparent, mut allocated, mut files) = (0, 0, 0);
    let Ok(entries) = fs::read_dir(dir) else {
        return (0, 0, 0);
    };
    for entry in entries {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            if entry.file_name() != BLOBS_TMP_DIR {
                let (a, b, c) = tree_bytes(&entry.path());
                apparent += a;
                allocated += b;
                files += c;
            }
        } else {
            apparent += meta.len();
            allocated += meta.blocks() * 512;
            files += 1;
        }
    }
    (apparent, allocated, files)
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

struct Amplification {
    size: usize,
    docs: usize,
    raw: u64,
    db: u64,
    cas: u64,
    cas_allocated: u64,
    tables: Vec<(String, u64)>,
}

impl Amplification {
    fn ratio(&self) -> f64 {
        (self.db + self.cas) as f64 / self.raw as f64
    }
}

fn measure_amplification(text: &Text, size: usize, budget: usize) -> Amplification {
    const WRITERS: usize = 4;
    let docs = (budget / size).max(8);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = dir.path().join("data");
    let service = Service::open(&data).unwrap();
    let raw = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let service = service.clone();
                scope.spawn(move || {
                    let mut rng = Rng(0x5107_a6e0 ^ ((size as u64) << 8) ^ writer as u64);
                    let mut raw = 0u64;
                    for _ in (writer..docs).step_by(WRITERS) {
                        let body = text.generate(&mut rng, size);
                        let title = text.generate(&mut rng, 40);
                        raw += body.len() as u64;
                        let request: Request = serde_json::from_value(put_request(title.trim(), &body)).unwrap();
                        let response = service.handle(request);
                        assert!(response.ok, "{:?}", response.error);
                    }
                    raw
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    let store = service.store().clone();
    store
        .exclusive(|conn| Ok(conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?))
        .unwrap();
    let tables = store
        .read(|conn| {
            let mut stmt =
                conn.prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .unwrap_or_default();
    store.shutdown();
    drop(service);
    drop(store);
    let db = file_len(&data.join(DB_FILE)) + file_len(&data.join(DB_WAL_FILE));
    let (cas, cas_allocated, _) = tree_bytes(&data.join(BLOBS_DIR));
    Amplification {
        size,
        docs,
        raw,
        db,
        cas,
        cas_allocated,
        tables,
    }
}

fn size_label(size: usize) -> String {
    if size >= MIB {
        format!("{} MiB", size / MIB)
    } else if size.is_multiple_of(KIB) {
        format!("{} KiB", size / KIB)
    } else {
        format!("{:.1} KiB", size as f64 / KIB as f64)
    }
}

fn amplification() {
    let budget = env_usize("MEMOREE_BENCH_AMP_BYTES", 8 * MIB);
    let text = Text::new();
    let sizes = [KIB, 3 * KIB / 2, 2 * KIB, 4 * KIB, 16 * KIB, 64 * KIB, MIB];
    println!(
        "\n== storage amplification: realistic text, {:.0} MiB per size; floor = the raw content bytes (1.00x) ==",
        budget as f64 / MIB as f64
    );
    println!(
        "{:>9} {:>6} {:>10} {:>10} {:>10} {:>12} {:>7}",
        "size", "docs", "raw MiB", "db MiB", "cas MiB", "cas alloc MiB", "ratio"
    );
    let mut rows = Vec::new();
    for size in sizes {
        let started = Instant::now();
        let row = measure_amplification(&text, size, budget);
        let mib = |b: u64| b as f64 / MIB as f64;
        println!(
            "{:>9} {:>6} {:>10.2} {:>10.2} {:>10.2} {:>12.2} {:>6.2}x   ({:.1}s)",
            size_label(size),
            row.docs,
            mib(row.raw),
            mib(row.db),
            mib(row.cas),
            mib(row.cas_allocated),
            row.ratio(),
            started.elapsed().as_secs_f64()
        );
        rows.push(row);
    }
    for row in &rows {
        let measured = format!("{:.2}x", row.ratio());
        let metric = format!("storage amplification, {} text artifacts", size_label(row.size));
        let pass = (row.size > KIB).then_some(row.ratio() < 2.0);
        let goal = if row.size > KIB {
            "< 2x (text over 1 KiB)"
        } else {
            "report (not over 1 KiB)"
        };
        target(9, &metric, &measured, "raw content bytes (1.00x)", goal, pass);
    }
    println!("\nper-artifact bytes by table or index (dbstat pgsize / artifacts):");
    for row in rows.iter().filter(|r| r.size <= 16 * KIB) {
        let shown: Vec<String> = row
            .tables
            .iter()
            .filter(|(_, bytes)| *bytes as f64 / row.docs as f64 >= 8.0)
            .map(|(name, bytes)| format!("{name} {:.0}", *bytes as f64 / row.docs as f64))
            .collect();
        println!("  {:>9}: {}", size_label(row.size), shown.join(", "));
    }
}

/// The daemon users get by default, on a temp socket: started by the autostart launcher
/// from the release `memoree` executable (so `memoree-daemon` beside it, exactly as
/// `memoree call` would start it); stopped (by its own pid) on drop.
struct Daemon {
    pid: rustix::process::Pid,
    socket: PathBuf,
    home: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Daemon {
    fn spawn() -> Daemon {
        // Socket paths are length-limited: the home (and socket) lives in /tmp, the data on
        // the target disk.
        let home = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let socket = home.path().join("m.sock");
        let launcher = Launcher {
            exe: PathBuf::from(env!("CARGO_BIN_EXE_memoree")),
            endpoint: Endpoint::Unix(socket.clone()),
            data_dir: data.path().join("data"),
            runtime_dir: None,
        };
        let pid = launcher.spawn().unwrap();
        let exe = fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert!(
            exe.file_name()
                .is_some_and(|name| name == memoree::client::autostart::DAEMON_EXE),
            "autostart ran {} instead of the daemon executable",
            exe.display()
        );
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        let daemon = Daemon {
            pid,
            socket,
            home,
            _data: data,
        };
        let client = daemon.client();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(response) = client.exchange_json(&read_request("capabilities", json!({})))
                && response.ok
            {
                break;
            }
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

    /// `(VmRSS, VmHWM)` in KiB.
    fn memory(&self) -> (u64, u64) {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid.as_raw_nonzero())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Whether the daemon (this bench's child) has exited; reaps it if so.
    fn exited(&self) -> bool {
        use rustix::process::{WaitOptions, waitpid};
        !matches!(waitpid(Some(self.pid), WaitOptions::NOHANG), Ok(None))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        use rustix::process::{Signal, kill_process};
        // Signals only the daemon this bench started, by its own pid.
        let _ = kill_process(self.pid, Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.exited() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = kill_process(self.pid, Signal::KILL);
        let _ = self.exited();
    }
}

fn mib_of_kib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn rss() {
    let daemon = Daemon::spawn();
    std::thread::sleep(Duration::from_millis(500));
    let (idle, _) = daemon.memory();
    let client = daemon.client();
    let mut session = client.session();
    let text = Text::new();
    let mut rng = Rng(0x0715);
    let mut ids = Vec::new();
    for i in 0..200 {
        let body = text.generate(&mut rng, 4 * KIB);
        let response = session
            .exchange_json(&put_request(&format!("note {i}"), &body))
            .unwrap();
        assert!(response.ok, "{:?}", response.error);
        ids.push(response.result.unwrap()["artifact_id"].as_str().unwrap().to_owned());
    }
    let big = text.generate(&mut rng, memoree::protocol::limits::MAX_ARTIFACT_BYTES);
    let response = session.exchange_json(&put_request("eight mebibytes", &big)).unwrap();
    assert!(response.ok, "{:?}", response.error);
    let big_id = response.result.unwrap()["artifact_id"].as_str().unwrap().to_owned();
    drop(big);
    let got = session
        .exchange_json(&read_request(
            "artifact.get",
            json!({"artifact_id": big_id, "include_content": true}),
        ))
        .unwrap();
    assert!(got.ok, "{:?}", got.error);
    drop(got);
    for i in 0..100 {
        let query = format!("{} {}", text.word(&mut rng), text.word(&mut rng));
        let op = ["search", "memory.recall", "context.build", "search"][i % 4];
        let input = match op {
            "context.build" => json!({"query": query, "max_bytes": 16384}),
            _ => json!({"query": query}),
        };
        let response = session.exchange_json(&read_request(op, input)).unwrap();
        assert!(response.ok, "{op}: {:?}", response.error);
    }
    for id in ids.iter().take(50) {
        let response = session
            .exchange_json(&read_request(
                "artifact.get",
                json!({"artifact_id": id, "include_content": true}),
            ))
            .unwrap();
        assert!(response.ok, "{:?}", response.error);
    }
    drop(session);
    let (after, peak) = daemon.memory();
    std::thread::sleep(Duration::from_secs(1));
    let (settled, _) = daemon.memory();
    println!("\n== daemon memory (the autostarted release `memoree-daemon`, VmRSS / VmHWM from /proc) ==");
    println!("idle after start: {:.1} MiB", mib_of_kib(idle));
    println!(
        "after load (200 x 4 KiB puts, 8 MiB put + get, 100 reads, 50 gets): VmRSS {:.1} MiB, peak VmHWM {:.1} MiB, 1 s later {:.1} MiB",
        mib_of_kib(after),
        mib_of_kib(peak),
        mib_of_kib(settled)
    );
    target(
        14,
        "daemon idle RSS (the autostarted `memoree-daemon`)",
        &format!("{:.1} MiB", mib_of_kib(idle)),
        "-",
        "<= 10 MiB",
        Some(mib_of_kib(idle) <= 10.0),
    );
    target(
        9,
        "daemon peak RSS (VmHWM) after puts, reads and an 8 MiB artifact",
        &format!(
            "{:.1} MiB (VmRSS after load {:.1} MiB)",
            mib_of_kib(peak),
            mib_of_kib(after)
        ),
        "8 MiB artifact",
        "report",
        None,
    );
}

/// The daemon's resident memory once it holds a 10k-artifact store: puts through one
/// connection, then a few searches and gets, as an agent session would.
fn rss_loaded() {
    let artifacts = env_usize("MEMOREE_BENCH_LOADED_ARTIFACTS", 10_000);
    let daemon = Daemon::spawn();
    std::thread::sleep(Duration::from_millis(500));
    let (idle, _) = daemon.memory();
    let client = daemon.client();
    let mut session = client.session();
    let text = Text::new();
    let mut rng = Rng(0x1014);
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..artifacts {
        let size = KIB + rng.below(2 * KIB);
        let body = text.generate(&mut rng, size);
        let response = session
            .exchange_json(&put_request(&format!("note {i}"), &body))
            .unwrap();
        assert!(response.ok, "{:?}", response.error);
        if i % 100 == 0 {
            ids.push(response.result.unwrap()["artifact_id"].as_str().unwrap().to_owned());
        }
    }
    let load_seconds = started.elapsed().as_secs_f64();
    for i in 0..50 {
        let query = format!("{} {}", text.word(&mut rng), text.word(&mut rng));
        let op = ["search", "memory.recall", "context.build"][i % 3];
        let response = session
            .exchange_json(&read_request(op, json!({"query": query})))
            .unwrap();
        assert!(response.ok, "{op}: {:?}", response.error);
    }
    for id in &ids {
        let response = session
            .exchange_json(&read_request("artifact.get", json!({"artifact_id": id})))
            .unwrap();
        assert!(response.ok, "{:?}", response.error);
    }
    drop(session);
    let (loaded, peak) = daemon.memory();
    std::thread::sleep(Duration::from_secs(1));
    let (settled, _) = daemon.memory();
    println!(
        "\n== daemon memory with a loaded store (the autostarted release `memoree-daemon`, VmRSS / VmHWM from /proc) =="
    );
    println!(
        "idle {:.1} MiB; after {artifacts} puts ({load_seconds:.1} s, {:.0}/s), 50 reads and {} gets: VmRSS {:.1} MiB, peak {:.1} MiB, 1 s later {:.1} MiB",
        mib_of_kib(idle),
        artifacts as f64 / load_seconds,
        ids.len(),
        mib_of_kib(loaded),
        mib_of_kib(peak),
        mib_of_kib(settled)
    );
    target(
        14,
        &format!(
            "daemon RSS after loading {artifacts} artifacts (1-3 KiB) through one connection (the autostarted `memoree-daemon`)"
        ),
        &format!("{:.1} MiB (peak {:.1} MiB)", mib_of_kib(loaded), mib_of_kib(peak)),
        &format!("idle {:.1} MiB", mib_of_kib(idle)),
        "<= 16 MiB",
        Some(mib_of_kib(loaded) <= 16.0),
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Spawns `command` `n` times, writing `stdin` to it, and returns the sorted wall times.
fn spawn_times(n: usize, stdin: &[u8], mut command: impl FnMut() -> Command, check: impl Fn(&[u8])) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let mut child = command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // `/bin/true` may exit before reading: a broken pipe is expected there.
        let _ = child.stdin.take().unwrap().write_all(stdin);
        let output = child.wait_with_output().unwrap();
        samples.push(started.elapsed());
        check(&output.stdout);
    }
    samples.sort_unstable();
    samples
}

fn cold_call() {
    let spawns = env_usize("MEMOREE_BENCH_SPAWNS", 200).max(2);
    let daemon = Daemon::spawn();
    let request = br#"{"request_id":"req_cold","op":"capabilities","input":{}}"#;
    let endpoint = daemon.endpoint();
    let memoree = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_memoree"));
        command
            .args(["--endpoint", &endpoint, "--no-autostart", "call"])
            .env("MEMOREE_HOME", daemon.home.path())
            .env_remove("MEMOREE_CONTEXT")
            .current_dir(daemon.home.path());
        command
    };
    let check = |stdout: &[u8]| {
        let value: Value = serde_json::from_slice(stdout).expect("one JSON envelope");
        assert_eq!(value["ok"], true, "{value}");
    };
    // Warm the page cache for the binary first.
    spawn_times(5, request, memoree, check);
    let calls = spawn_times(spawns, request, memoree, check);
    let floor = spawn_times(spawns, request, || Command::new("/bin/true"), |_| {});
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (p50, p95) = (percentile(&calls, 0.5), percentile(&calls, 0.95));
    let (f50, f95) = (percentile(&floor, 0.5), percentile(&floor, 0.95));
    println!("\n== cold `memoree call` (capabilities) against a warm daemon, {spawns} spawns ==");
    println!("memoree call: p50 {:.2} ms, p95 {:.2} ms", ms(p50), ms(p95));
    println!(
        "/bin/true    : p50 {:.2} ms, p95 {:.2} ms (spawn floor)",
        ms(f50),
        ms(f95)
    );
    target(
        9,
        "cold `memoree call capabilities` p50, warm daemon",
        &format!("{:.2} ms (p95 {:.2} ms)", ms(p50), ms(p95)),
        &format!("spawn /bin/true p50 {:.2} ms (p95 {:.2} ms)", ms(f50), ms(f95)),
        "< 15 ms",
        Some(ms(p50) < 15.0),
    );
}

/// Encode and decode speed of the blob codec on the same text (the CPU a put and a read add).
fn codec() {
    use memoree::blob::codec;
    let text = Text::new();
    let mut rng = Rng(0xc0dec);
    println!("\n== blob codec on realistic text (stored/raw, encode and decode time per blob) ==");
    for size in [3 * KIB / 2, 4 * KIB, 16 * KIB, 64 * KIB, MIB] {
        let raw = text.generate(&mut rng, size).into_bytes();
        let rounds = (64 * MIB / size).clamp(8, 4000);
        let (encoding, stored) = codec::encode(&raw);
        let stored = stored.into_owned();
        let started = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(codec::encode(std::hint::black_box(&raw)));
        }
        let encode = started.elapsed() / rounds as u32;
        let started = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(codec::decode(encoding, &stored, raw.len() as u64).unwrap());
        }
        let decode = started.elapsed() / rounds as u32;
        let rate = |d: Duration| size as f64 / MIB as f64 / d.as_secs_f64();
        println!(
            "{:>9}: {encoding:?} {:.3} of raw; encode {encode:>10.1?} ({:.0} MiB/s), decode {decode:>10.1?} ({:.0} MiB/s)",
            size_label(size),
            stored.len() as f64 / size as f64,
            rate(encode),
            rate(decode)
        );
    }
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    if selected("codec") {
        codec();
    }
    if selected("amplification") {
        amplification();
    }
    if selected("rss") {
        rss();
    }
    if selected("rss_loaded") {
        rss_loaded();
    }
    if selected("cold_call") {
        cold_call();
    }
}
