//! Retrieval latency: `search`, `memory.recall` and `context.build` through the service
//! over seeded corpora (1k, 10k and 100k artifacts plus one claim per ten artifacts), with
//! the bare FTS5 `MATCH … ORDER BY bm25 LIMIT` on the same database as the floor. The
//! percentiles behind the targets run the floor and the three operations interleaved, query
//! by query, so all four see the same cache and machine conditions; criterion's
//! `fts5_floor` also times the floor alone, in a tight loop with its pages hot, which is
//! about half the interleaved figure. Also measures what FTS upkeep adds to `artifact.put`.
//!
//! Corpora are seeded through the store's own mutation functions in large transactions
//! (the same SQL a put runs, without one fsync per document) and cached under
//! `target/retrieval-bench/` keyed by size and generator version. Documents use a
//! synthetic vocabulary: 300 common words that occur everywhere and `n/5` topic words
//! drawn ten per document, so a four-topic-word query matches about two hundred documents
//! at every size. `MEMOREE_BENCH_SIZES=1000,10000` picks the sizes (default: all three).
//!
//! The put comparison runs the same `artifact.put` requests against two fresh stores; in
//! the second, `artifact_fts` is replaced by a view whose `INSTEAD OF INSERT` trigger does
//! nothing, so everything but the FTS insert is identical.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "support/rng.rs"]
mod rng;
#[path = "support/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use memoree::protocol::Request;
use memoree::protocol::claim::ClaimType;
use memoree::service::{Runtime, Service};
use memoree::store::Store;
use memoree::store::artifact::{self, BlobRef, NewRevision};
use memoree::store::claim::{self, EvidenceRef, NewClaimRevision};
use memoree::store::scope::Owner;
use rng::Rng;
use serde_json::{Value, json};

/// Bump when the generator changes so cached corpora are rebuilt.
const CORPUS_VERSION: u32 = 2;
const COMMON_WORDS: usize = 300;
const TOPIC_WORDS_PER_DOC: usize = 10;
const QUERIES: usize = 64;
const PERCENTILE_ROUNDS: usize = 4;

static KEY: AtomicU64 = AtomicU64::new(0);

/// A pronounceable word for index `i` in a tier (`c` common, `t` topic).
fn word(tier: char, mut i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "fu", "gi", "ho", "ja", "pe", "qu", "zo",
    ];
    let mut out = String::new();
    out.push(tier);
    loop {
        out.push_str(SYLLABLES[i % 16]);
        i /= 16;
        if i == 0 {
            break;
        }
    }
    out
}

struct Vocabulary {
    topics: usize,
}

impl Vocabulary {
    fn for_size(size: usize) -> Vocabulary {
        Vocabulary {
            topics: (size / 5).max(200),
        }
    }

    fn common(&self, rng: &mut Rng) -> String {
        // Skewed toward the first words, like function words.
        let i = rng.below(COMMON_WORDS).min(rng.below(COMMON_WORDS));
        word('c', i)
    }

    fn topic(&self, rng: &mut Rng) -> String {
        word('t', rng.below(self.topics))
    }

    /// `words` words: mostly common, with `topics` topic words spread through.
    fn text(&self, rng: &mut Rng, words: usize, topics: usize) -> String {
        let mut out: Vec<String> = (0..words).map(|_| self.common(rng)).collect();
        for _ in 0..topics {
            let at = rng.below(out.len());
            out[at] = self.topic(rng);
        }
        let mut text = out.join(" ");
        text.push('.');
        text
    }

    fn query(&self, rng: &mut Rng) -> String {
        (0..4).map(|_| self.topic(rng)).collect::<Vec<_>>().join(" ")
    }
}

fn owner(project: &str) -> Owner {
    Owner {
        workspace_id: "wsp_bench".to_owned(),
        project_id: project.to_owned(),
        task_id: None,
        component: None,
    }
}

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
}

fn cache_root() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("retrieval-bench")
}

/// Opens the cached corpus of `size` artifacts, seeding it first if needed.
fn corpus(size: usize) -> Store {
    let dir = cache_root().join(format!("v{CORPUS_VERSION}-n{size}"));
    let marker = dir.join("seeded");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        seed(&dir.join("data"), size);
        std::fs::write(&marker, b"ok").unwrap();
        println!("seeded {size} artifacts in {:.1}s", started.elapsed().as_secs_f64());
    }
    Store::open(&dir.join("data")).unwrap()
}

fn seed(data: &Path, size: usize) {
    let store = Store::open(data).unwrap();
    let vocabulary = Vocabulary::for_size(size);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ size as u64);
    const BATCH: usize = 5000;
    let mut done = 0;
    while done < size {
        let count = BATCH.min(size - done);
        let docs: Vec<(String, NewRevision, Vec<NewClaimRevision>, &'static str)> = (0..count)
            .map(|i| {
                let title = vocabulary.text(&mut rng, 5, 1);
                let length = 80 + rng.below(120);
                let body = vocabulary.text(&mut rng, length, TOPIC_WORDS_PER_DOC);
                let kind = ["note", "decision", "runbook", "session-log"][rng.below(4)];
                let project = if (done + i) % 10 == 9 {
                    "prj_sibling"
                } else {
                    "prj_bench"
                };
                let claims = if (done + i) % 10 == 0 {
                    vec![NewClaimRevision {
                        statement: vocabulary.text(&mut rng, 12, 3),
                        confidence: None,
                        evidence: Vec::new(),
                        actor: None,
                    }]
                } else {
                    Vec::new()
                };
                let bytes = body.into_bytes();
                let new = NewRevision {
                    title,
                    media_type: "text/markdown".to_owned(),
                    blob: BlobRef::inline(&bytes),
                    content: bytes,
                    provenance_json: "{}".to_owned(),
                    actor: None,
                };
                (kind.to_owned(), new, claims, project)
            })
            .collect();
        store
            .write(move |tx| {
                for (kind, new, claims, project) in docs {
                    let (row, _) = artifact::put(tx, &owner(project), &kind, &new)?;
                    for mut new_claim in claims {
                        new_claim.evidence = vec![EvidenceRef {
                            artifact_id: row.artifact_id.clone(),
                            revision_id: row.revision_id.clone(),
                            start_byte: Some(0),
                            end_byte: Some(20),
                        }];
                        claim::assert(tx, &owner(project), ClaimType::Fact, &new_claim, None, None)?;
                    }
                }
                Ok(())
            })
            .unwrap();
        done += count;
    }
    store
        .exclusive(|conn| Ok(conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;")?))
        .unwrap();
    store.shutdown();
}

fn request(op: &str, input: Value) -> Request {
    serde_json::from_value(json!({
        "request_id": "req_bench", "op": op, "context": context(), "input": input,
        "idempotency_key": format!("bench-{}", KEY.fetch_add(1, Ordering::Relaxed)),
    }))
    .unwrap()
}

/// The read requests of one operation for a query.
fn read_request(op: &str, query: &str) -> Request {
    let input = match op {
        "search" => json!({"query": query, "limit": 10}),
        "memory.recall" => json!({"query": query}),
        "context.build" => json!({"query": query, "limit": 10, "max_bytes": 16384}),
        _ => unreachable!(),
    };
    let mut request = request(op, input);
    request.idempotency_key = None;
    request
}

/// The floor: the bare FTS5 query, on its own read connection to the same database.
struct Floor {
    conn: rusqlite::Connection,
}

impl Floor {
    fn open(store: &Store) -> Floor {
        let conn =
            rusqlite::Connection::open_with_flags(store.db_path(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        Floor { conn }
    }

    fn run(&self, query: &str) -> usize {
        let expr = memoree::retrieval::build_fts_query(query).unwrap().match_expr;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT rowid, bm25(artifact_fts, 5.0, 1.0) AS s FROM artifact_fts WHERE artifact_fts MATCH ?1
                 ORDER BY s LIMIT ?2",
            )
            .unwrap();
        let rows = stmt
            .query_map((expr, 22), |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)))
            .unwrap();
        rows.count()
    }

    fn matches(&self, query: &str) -> i64 {
        let expr = memoree::retrieval::build_fts_query(query).unwrap().match_expr;
        self.conn
            .query_row(
                "SELECT count(*) FROM artifact_fts WHERE artifact_fts MATCH ?1",
                [expr],
                |r| r.get(0),
            )
            .unwrap()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Times `f` over every query a few times and prints p50/p99 in milliseconds.
/// A labelled operation run once per query.
type Measured<'a> = (&'a str, &'a mut dyn FnMut(&str));

/// p50 and p99 of each operation over every query. The operations are interleaved (each
/// query runs through all of them before the next query), so drift in the machine's speed
/// during the measurement falls on the floor and on the operations alike.
fn latencies(queries: &[String], ops: &mut [Measured<'_>]) -> Vec<(Duration, Duration)> {
    for query in queries {
        for (_, f) in ops.iter_mut() {
            f(query);
        }
    }
    let mut samples = vec![Vec::with_capacity(queries.len() * PERCENTILE_ROUNDS); ops.len()];
    for _ in 0..PERCENTILE_ROUNDS {
        for query in queries {
            for ((_, f), samples) in ops.iter_mut().zip(samples.iter_mut()) {
                let started = Instant::now();
                f(query);
                samples.push(started.elapsed());
            }
        }
    }
    ops.iter()
        .zip(samples.iter_mut())
        .map(|((label, _), samples)| {
            samples.sort_unstable();
            let (p50, p99) = (percentile(samples, 0.50), percentile(samples, 0.99));
            println!(
                "  {label:<14} p50 {:>8.3} ms   p99 {:>8.3} ms",
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3
            );
            (p50, p99)
        })
        .collect()
}

fn bench_reads(c: &mut Criterion, size: usize) {
    let store = corpus(size);
    let service = Service::new(store.clone(), Runtime::default());
    let floor = Floor::open(&store);
    let vocabulary = Vocabulary::for_size(size);
    let mut rng = Rng(0x5eed ^ size as u64);
    let queries: Vec<String> = (0..QUERIES).map(|_| vocabulary.query(&mut rng)).collect();
    let mean_matches = queries.iter().map(|q| floor.matches(q)).sum::<i64>() / QUERIES as i64;
    println!("corpus {size}: {mean_matches} matching artifacts per query on average");

    let serve = |op: &'static str| {
        let service = service.clone();
        move |query: &str| {
            let response = service.handle(read_request(op, query));
            assert!(response.ok, "{:?}", response.error);
        }
    };
    let (mut search, mut recall, mut build) = (serve("search"), serve("memory.recall"), serve("context.build"));
    let mut floor_run = |q: &str| {
        floor.run(q);
    };
    let measured = latencies(
        &queries,
        &mut [
            ("fts5 floor", &mut floor_run),
            ("search", &mut search),
            ("memory.recall", &mut recall),
            ("context.build", &mut build),
        ],
    );
    let [
        (floor_p50, _),
        (search_p50, _),
        (recall_p50, recall_p99),
        (build_p50, _),
    ] = measured[..]
    else {
        unreachable!("four operations were measured")
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let recall_ratio = recall_p50.as_secs_f64() / floor_p50.as_secs_f64();
    // Issue 6 sets the recall target at 100k artifacts; smaller corpora are reported against
    // the same bound without a verdict (their sub-millisecond floors are mostly noise).
    let (recall_target, recall_verdict) = if size >= 100_000 {
        (
            "<= 3x floor and < 10 ms",
            Some(recall_ratio <= 3.0 && ms(recall_p50) < 10.0),
        )
    } else {
        ("report (target applies at 100k: <= 3x floor, < 10 ms)", None)
    };
    targets::target(
        6,
        &format!("memory.recall p50 at {size} artifacts"),
        &format!("{:.3} ms = {recall_ratio:.2}x floor", ms(recall_p50)),
        &format!(
            "bare FTS5 MATCH ... ORDER BY bm25 LIMIT, interleaved with the operations: {:.3} ms (criterion's fts5_floor times it alone)",
            ms(floor_p50)
        ),
        recall_target,
        recall_verdict,
    );
    targets::target(
        6,
        &format!("memory.recall p99 at {size} artifacts"),
        &format!("{:.3} ms", ms(recall_p99)),
        "-",
        "< 50 ms",
        Some(ms(recall_p99) < 50.0),
    );
    let build_ratio = build_p50.as_secs_f64() / search_p50.as_secs_f64();
    targets::target(
        6,
        &format!("context.build (16 KiB budget) p50 at {size} artifacts"),
        &format!("{:.3} ms = {build_ratio:.2}x search", ms(build_p50)),
        &format!("search p50 {:.3} ms", ms(search_p50)),
        "<= 2x search",
        Some(build_ratio <= 2.0),
    );
    println!(
        "  recall/floor {:.2}x (target ≤ 3x, p50 < 10 ms, p99 < 50 ms: {:.2} / {:.2} ms); build/search {:.2}x (target ≤ 2x)",
        recall_p50.as_secs_f64() / floor_p50.as_secs_f64(),
        recall_p50.as_secs_f64() * 1e3,
        recall_p99.as_secs_f64() * 1e3,
        build_p50.as_secs_f64() / search_p50.as_secs_f64(),
    );

    let mut group = c.benchmark_group(format!("retrieval_{size}"));
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut next = 0usize;
    let mut query = move || {
        next = (next + 1) % QUERIES;
        next
    };
    group.bench_function(BenchmarkId::new("fts5_floor", size), |b| {
        b.iter(|| floor.run(&queries[query()]))
    });
    for op in ["search", "memory.recall", "context.build"] {
        let f = serve(op);
        group.bench_function(BenchmarkId::new(op, size), |b| b.iter(|| f(&queries[query()])));
    }
    group.finish();
    store.shutdown();
}

/// Replaces `artifact_fts` with a view that swallows inserts, leaving every other write.
fn without_fts(store: &Store) {
    store
        .exclusive(|conn| {
            Ok(conn.execute_batch(
                "DROP TABLE artifact_fts;
                 CREATE VIEW artifact_fts (rowid, title, body) AS SELECT 0, '', '';
                 CREATE TRIGGER artifact_fts_noop INSTEAD OF INSERT ON artifact_fts BEGIN SELECT 1; END;",
            )?)
        })
        .unwrap();
}

fn bench_put_upkeep(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let with = Service::open(&dir.path().join("with")).unwrap();
    let without = Service::open(&dir.path().join("without")).unwrap();
    without_fts(without.store());
    let vocabulary = Vocabulary::for_size(10_000);
    let mut rng = Rng(42);
    let bodies: Vec<String> = (0..64)
        .map(|_| vocabulary.text(&mut rng, 160, TOPIC_WORDS_PER_DOC))
        .collect();
    let put = |service: &Service, body: &str| {
        let response = service.handle(request(
            "artifact.put",
            json!({"kind": "note", "title": "upkeep", "media_type": "text/markdown", "content": {"type": "text", "data": body}}),
        ));
        assert!(response.ok, "{:?}", response.error);
    };
    // Interleaved, so both stores see the same machine load.
    let (mut with_samples, mut without_samples) = (Vec::new(), Vec::new());
    for round in 0..PERCENTILE_ROUNDS + 1 {
        for body in &bodies {
            let started = Instant::now();
            put(&with, body);
            let with_time = started.elapsed();
            let started = Instant::now();
            put(&without, body);
            if round > 0 {
                with_samples.push(with_time);
                without_samples.push(started.elapsed());
            }
        }
    }
    with_samples.sort_unstable();
    without_samples.sort_unstable();
    let (with_p50, without_p50) = (percentile(&with_samples, 0.5), percentile(&without_samples, 0.5));
    let upkeep = with_p50.as_secs_f64() / without_p50.as_secs_f64();
    targets::target(
        6,
        "artifact.put p50 with FTS upkeep (160-word text)",
        &format!("{:.3} ms = {upkeep:.2}x", with_p50.as_secs_f64() * 1e3),
        &format!(
            "the same put without the FTS insert: {:.3} ms",
            without_p50.as_secs_f64() * 1e3
        ),
        "<= 2x",
        Some(upkeep <= 2.0),
    );
    println!(
        "  artifact.put p50 with FTS {:.3} ms, without {:.3} ms: upkeep {:.2}x (target ≤ 2x); p99 {:.3} / {:.3} ms",
        with_p50.as_secs_f64() * 1e3,
        without_p50.as_secs_f64() * 1e3,
        with_p50.as_secs_f64() / without_p50.as_secs_f64(),
        percentile(&with_samples, 0.99).as_secs_f64() * 1e3,
        percentile(&without_samples, 0.99).as_secs_f64() * 1e3,
    );
    let mut group = c.benchmark_group("put_upkeep");
    group.sample_size(30);
    let mut i = 0;
    group.bench_function("artifact_put_with_fts", |b| {
        b.iter(|| {
            i += 1;
            put(&with, &bodies[i % bodies.len()])
        })
    });
    group.bench_function("artifact_put_without_fts", |b| {
        b.iter(|| {
            i += 1;
            put(&without, &bodies[i % bodies.len()])
        })
    });
    group.finish();
}

fn main() {
    let sizes: Vec<usize> = std::env::var("MEMOREE_BENCH_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut criterion = Criterion::default().configure_from_args();
    for size in sizes {
        bench_reads(&mut criterion, size);
    }
    bench_put_upkeep(&mut criterion);
    criterion.final_summary();
}
