//! Retrieval latency: `search`, `memory.recall` and `context.build` through the service
//! over seeded corpora (1k, 10k and 100k artifacts plus one claim per ten artifacts), with
//! the bare FTS5 `MATCH … ORDER BY bm25 LIMIT` on the same database as the floor. The
//! percentiles behind the targets run the floor and the operations interleaved, query by
//! query, so all of them see the same cache and machine conditions; criterion's
//! `fts5_floor` also times the floor alone, in a tight loop with its pages hot, which is
//! about half the interleaved figure. Also measures what FTS upkeep adds to `artifact.put`,
//! the one-time vocabulary build and the vocabulary refresh after a put.
//!
//! Query classes (issue 13), each drawn from one stored document so it has an answer:
//! - rare-term: two of the document's topic words (`kasolo tevima`);
//! - common-word: a question around them with two of the document's common words and
//!   English function words (`what is the cka of the kasolo tevima and how does it cmi?`);
//! - typo: the rare-term query with one topic word's inner letters swapped.
//!
//! The floor is the bare FTS5 query of the rare-term words.
//!
//! Corpora are seeded through the store's own mutation functions in large transactions
//! (the same SQL a put runs, without one fsync per document) and cached under
//! `target/retrieval-bench/` keyed by size and generator version. Documents use a
//! synthetic vocabulary: English function words, 300 common words (starting with `c`) that
//! occur everywhere, and `n/5` topic words (starting with other letters) drawn ten per
//! document. `MEMOREE_BENCH_SIZES=1000,10000` picks the sizes (default: all three).
//!
//! The put comparison runs the same `artifact.put` requests against two fresh stores; in
//! the second, `artifact_fts` is replaced by a view whose `INSTEAD OF INSERT` trigger does
//! nothing, so everything but the FTS insert is identical.
//!
//! `citation.get` is timed on each corpus too (`retrieval/citation.rs`, issue 29).
//!
//! With `../shared/models/potion-base-8M` beside the project it also times the model load,
//! the resident memory the model adds and `memory.recall` with semantics (issue 27).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[path = "retrieval/agent.rs"]
mod agent;
#[path = "retrieval/citation.rs"]
mod citation;
#[path = "retrieval/corpus.rs"]
mod corpus;
#[path = "retrieval/disk.rs"]
mod disk;
#[path = "support/rng.rs"]
mod rng;
#[path = "retrieval/semantic.rs"]
mod semantic;
#[path = "support/targets.rs"]
mod targets;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use corpus::{FUNCTION_WORDS, TOPIC_WORDS_PER_DOC, Vocabulary, corpus};
use criterion::{BenchmarkId, Criterion};
use memoree::protocol::Request;
use memoree::service::{Runtime, Service};
use memoree::store::Store;
use memoree::store::artifact;
use rng::Rng;
use serde_json::{Value, json};

const QUERIES: usize = 64;
const PERCENTILE_ROUNDS: usize = 4;

static KEY: AtomicU64 = AtomicU64::new(0);

fn context() -> Value {
    json!({"workspace_id": "wsp_bench", "project_id": "prj_bench"})
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
        "memory.recall" | "memory.retrieve" => json!({"query": query}),
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

/// The three query classes, drawn from the same stored documents.
struct Queries {
    rare: Vec<String>,
    common: Vec<String>,
    typo: Vec<String>,
}

impl Queries {
    /// Each rare-term query's counterpart in `class` (the same document's query of that
    /// class), so an interleaved measurement can derive every class from the rare one.
    fn by_rare<'a>(&'a self, class: &'a [String]) -> std::collections::HashMap<&'a str, &'a str> {
        self.rare
            .iter()
            .zip(class)
            .map(|(r, c)| (r.as_str(), c.as_str()))
            .collect()
    }
}

/// The words of one stored artifact body (by revision `seq`).
fn body_words(store: &Store, seq: i64) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(store.db_path(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let (hash, size, stored, encoding): (String, i64, Vec<u8>, i64) = conn
        .query_row(
            "SELECT blob_hash, blob_size, inline_blob, inline_encoding FROM artifact_revisions WHERE seq = ?1",
            [seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let digest = memoree::blob::Digest::parse(&hash).unwrap();
    let bytes = artifact::read_inline(&digest, size as u64, &stored, encoding).unwrap();
    String::from_utf8(bytes)
        .unwrap()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Swaps two inner letters (`kasolo` → `kaoslo`): a typo absent from the vocabulary.
fn misspell(word: &str) -> String {
    let mut chars: Vec<char> = word.chars().collect();
    let i = chars.len() / 2;
    if chars[i] == chars[i - 1] {
        chars.insert(i, 'x');
    } else {
        chars.swap(i - 1, i);
    }
    chars.into_iter().collect()
}

fn queries(store: &Store, size: usize) -> Queries {
    let mut rng = Rng(0x5eed ^ size as u64);
    let mut queries = Queries {
        rare: Vec::new(),
        common: Vec::new(),
        typo: Vec::new(),
    };
    let mut attempts = 0;
    while queries.rare.len() < QUERIES {
        attempts += 1;
        assert!(
            attempts < 100 * QUERIES,
            "the {size}-artifact corpus yields no query of every class"
        );
        // Artifact revision seqs are dense: 1..=size.
        let seq = 1 + rng.below(size) as i64;
        let words = body_words(store, seq);
        let mut topics: Vec<&String> = words
            .iter()
            .filter(|w| !w.starts_with('c') && !FUNCTION_WORDS.contains(&w.as_str()) && w.len() >= 5)
            .collect();
        topics.dedup();
        let commons: Vec<&String> = words.iter().filter(|w| w.starts_with('c')).collect();
        if topics.len() < 2 || commons.len() < 2 || topics[0] == topics[1] {
            continue;
        }
        let (t1, t2) = (topics[0], topics[1]);
        let (c1, c2) = (commons[rng.below(commons.len())], commons[rng.below(commons.len())]);
        queries.rare.push(format!("{t1} {t2}"));
        queries
            .common
            .push(format!("what is the {c1} of the {t1} {t2} and how does it {c2}?"));
        queries.typo.push(format!("{} {t2}", misspell(t1)));
    }
    queries
}

fn bench_reads(c: &mut Criterion, size: usize) {
    let store = corpus(size);
    let floor = Floor::open(&store);
    let queries = queries(&store, size);
    let mean_matches = queries.rare.iter().map(|q| floor.matches(q)).sum::<i64>() / QUERIES as i64;
    println!("corpus {size}: {mean_matches} artifacts match a rare-term query's words on average");

    // The one-time vocabulary build on the first query of a fresh service.
    let service = Service::new(store.clone(), Runtime::default());
    let started = Instant::now();
    let first = service.handle(read_request("memory.recall", &queries.rare[0]));
    assert!(first.ok, "{:?}", first.error);
    let build = started.elapsed();
    targets::target(
        13,
        &format!("vocabulary build on the first query after start, {size} artifacts (one-time)"),
        &format!("{:.1} ms", build.as_secs_f64() * 1e3),
        "-",
        "reported",
        None,
    );

    bench_restricted(&service, &queries.rare, "rare-term", size);
    bench_restricted(&service, &queries.common, "common-word", size);
    citation::bench_citation(&service, &queries.rare, size);
    agent::bench_retrieve(&service, &queries.rare, size);

    let serve = |op: &'static str| {
        let service = service.clone();
        move |query: &str| {
            let response = service.handle(read_request(op, query));
            assert!(response.ok, "{:?}", response.error);
        }
    };
    let (mut search, mut recall, mut build) = (serve("search"), serve("memory.recall"), serve("context.build"));
    let (recall_common, recall_typo) = (serve("memory.recall"), serve("memory.recall"));
    let mut floor_run = |q: &str| {
        floor.run(q);
    };
    // Each closure gets the rare-term query of the round and derives its own class.
    let common_of = queries.by_rare(&queries.common);
    let typo_of = queries.by_rare(&queries.typo);
    let mut common_run = |q: &str| recall_common(common_of[q]);
    let mut typo_run = |q: &str| recall_typo(typo_of[q]);
    let measured = latencies(
        &queries.rare,
        &mut [
            ("fts5 floor", &mut floor_run),
            ("search", &mut search),
            ("recall rare", &mut recall),
            ("recall common", &mut common_run),
            ("recall typo", &mut typo_run),
            ("context.build", &mut build),
        ],
    );
    let [
        (floor_p50, _),
        (search_p50, _),
        (recall_p50, recall_p99),
        (common_p50, common_p99),
        (typo_p50, typo_p99),
        (build_p50, _),
    ] = measured[..]
    else {
        unreachable!("six operations were measured")
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at_target_size = size >= 100_000;
    let verdict = |pass: bool| at_target_size.then_some(pass);
    let floor_text = format!(
        "bare FTS5 MATCH ... ORDER BY bm25 LIMIT of the rare-term words, interleaved: {:.3} ms",
        ms(floor_p50)
    );
    let recall_ratio = recall_p50.as_secs_f64() / floor_p50.as_secs_f64();
    // Issue 6 sets the recall target at 100k artifacts; smaller corpora are reported against
    // the same bound without a verdict (their sub-millisecond floors are mostly noise).
    targets::target(
        6,
        &format!("memory.recall p50 at {size} artifacts"),
        &format!("{:.3} ms = {recall_ratio:.2}x floor", ms(recall_p50)),
        &floor_text,
        if at_target_size {
            "<= 3x floor and < 10 ms"
        } else {
            "report (target applies at 100k: <= 3x floor, < 10 ms)"
        },
        verdict(recall_ratio <= 3.0 && ms(recall_p50) < 10.0),
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
    for (class, p50, p99) in [
        ("rare-term", recall_p50, recall_p99),
        ("common-word", common_p50, common_p99),
        ("typo", typo_p50, typo_p99),
    ] {
        let ratio = p50.as_secs_f64() / floor_p50.as_secs_f64();
        targets::target(
            13,
            &format!("memory.recall {class} query p50 at {size} artifacts"),
            &format!("{:.3} ms = {ratio:.2}x floor", ms(p50)),
            &floor_text,
            if at_target_size {
                "<= 3x floor and < 10 ms"
            } else {
                "report (target applies at 100k)"
            },
            verdict(ratio <= 3.0 && ms(p50) < 10.0),
        );
        targets::target(
            13,
            &format!("memory.recall {class} query p99 at {size} artifacts"),
            &format!("{:.3} ms", ms(p99)),
            "-",
            "< 50 ms",
            verdict(ms(p99) < 50.0),
        );
    }
    let common_ratio = common_p50.as_secs_f64() / recall_p50.as_secs_f64();
    targets::target(
        13,
        &format!("memory.recall common-word vs rare-term p50 at {size} artifacts"),
        &format!("{common_ratio:.2}x"),
        &format!("rare-term p50 {:.3} ms", ms(recall_p50)),
        if at_target_size {
            "<= 2x"
        } else {
            "report (target applies at 100k)"
        },
        verdict(common_ratio <= 2.0),
    );
    let typo_extra = ms(typo_p50) - ms(recall_p50);
    targets::target(
        13,
        &format!("typo correction cost (typo p50 - rare-term p50) at {size} artifacts"),
        &format!("{typo_extra:.3} ms"),
        &format!("rare-term p50 {:.3} ms", ms(recall_p50)),
        if at_target_size {
            "<= 2 ms"
        } else {
            "report (target applies at 100k)"
        },
        verdict(typo_extra <= 2.0),
    );
    println!(
        "  recall/floor {recall_ratio:.2}x; common/rare {common_ratio:.2}x; typo +{typo_extra:.3} ms; build/search {build_ratio:.2}x"
    );

    let mut group = c.benchmark_group(format!("retrieval_{size}"));
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut next = 0usize;
    let mut query = move || {
        next = (next + 1) % QUERIES;
        next
    };
    group.bench_function(BenchmarkId::new("fts5_floor", size), |b| {
        b.iter(|| floor.run(&queries.rare[query()]))
    });
    for op in ["search", "memory.recall", "context.build"] {
        let f = serve(op);
        group.bench_function(BenchmarkId::new(op, size), |b| b.iter(|| f(&queries.rare[query()])));
    }
    let f = serve("memory.recall");
    group.bench_function(BenchmarkId::new("memory.recall_common_word", size), |b| {
        b.iter(|| f(&queries.common[query()]))
    });
    group.bench_function(BenchmarkId::new("memory.recall_typo", size), |b| {
        b.iter(|| f(&queries.typo[query()]))
    });
    group.finish();
    if let Some(embedder) = semantic::model() {
        semantic::bench_semantic(&store, &queries, size, embedder);
    }
    store.shutdown();
}

/// Issue 28: a restricted grant plans against its own workspaces' vocabulary (built once by
/// tokenizing their revisions) and scores its newest matches (up to 512 per kind) over its
/// own corpus. Here the grant covers the whole corpus, its worst case: the one-time build,
/// and `memory.recall` p50 restricted vs unrestricted, interleaved query by query.
fn bench_restricted(service: &Service, queries: &[String], class: &str, size: usize) {
    let restricted = service.with_grant(memoree::service::Grant::workspaces("bench", ["wsp_bench"]));
    let started = Instant::now();
    let first = restricted.handle(read_request("memory.recall", &queries[0]));
    assert!(first.ok, "{:?}", first.error);
    let build = started.elapsed();
    let (mut whole, mut scoped) = (Vec::new(), Vec::new());
    for query in queries {
        for (view, out) in [(service, &mut whole), (&restricted, &mut scoped)] {
            let started = Instant::now();
            let response = view.handle(read_request("memory.recall", query));
            assert!(response.ok, "{:?}", response.error);
            out.push(started.elapsed());
        }
    }
    let p50 = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1e3
    };
    let (whole, scoped) = (p50(&mut whole), p50(&mut scoped));
    targets::target(
        28,
        &format!("restricted grant: scoped vocabulary build, {size} artifacts in the grant (one-time; ~0 once built)"),
        &format!("{:.1} ms", build.as_secs_f64() * 1e3),
        "-",
        "reported",
        None,
    );
    targets::target(
        28,
        &format!("restricted grant: memory.recall {class} p50 at {size} artifacts (grant-scoped scores)"),
        &format!("{scoped:.3} ms"),
        &format!("unrestricted {whole:.3} ms"),
        "reported",
        None,
    );
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
    // Interleaved, so both stores see the same machine load. After each put the next read
    // refreshes the in-memory vocabulary with the new revision; that refresh is timed too.
    let refresh = |service: &Service| {
        service
            .store()
            .read_db(|conn| service.vocabulary().with_current(service.store(), conn, |v| v.len()))
            .unwrap()
    };
    refresh(&with);
    let (mut with_samples, mut without_samples, mut refresh_samples) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..PERCENTILE_ROUNDS + 1 {
        for body in &bodies {
            let started = Instant::now();
            put(&with, body);
            let with_time = started.elapsed();
            let started = Instant::now();
            refresh(&with);
            let refresh_time = started.elapsed();
            let started = Instant::now();
            put(&without, body);
            if round > 0 {
                with_samples.push(with_time);
                without_samples.push(started.elapsed());
                refresh_samples.push(refresh_time);
            }
        }
    }
    refresh_samples.sort_unstable();
    targets::target(
        13,
        "vocabulary refresh on the first read after one artifact.put (160-word text), p50",
        &format!("{:.3} ms", percentile(&refresh_samples, 0.5).as_secs_f64() * 1e3),
        "-",
        "reported (artifact.put itself is unchanged: the vocabulary is read-side)",
        None,
    );
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
    semantic::bench_model_load();
    for size in sizes {
        bench_reads(&mut criterion, size);
    }
    bench_put_upkeep(&mut criterion);
    semantic::bench_put_with_semantics();
    criterion.final_summary();
}
