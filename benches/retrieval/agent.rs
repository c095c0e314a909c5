//! `memory.retrieve` latency against `memory.recall` of the same question (issue 29),
//! interleaved so both see the same cache and machine, in two classes:
//! - recovery runs: the rare-term questions, whose seeded claims rarely qualify, so a probe
//!   and the evidence fetches follow the recall (target ≤ 2× recall's p50);
//! - recovery does not run: the same questions asked about the current implementation
//!   (`intent_hint` `current_source`), where retrieve is recall plus the query profile
//!   (target: equal, within 10% + 0.05 ms of timer noise).

use std::time::{Duration, Instant};

use memoree::protocol::Request;
use memoree::service::Service;
use serde_json::json;

use super::{PERCENTILE_ROUNDS, percentile, read_request, request, targets};

fn retrieve(query: &str) -> Request {
    retrieve_with(query, false)
}

fn retrieve_with(query: &str, profile: bool) -> Request {
    let mut request = request("memory.retrieve", json!({"query": query, "profile": profile}));
    request.idempotency_key = None;
    request
}

/// The median of each stage of `profile: true` retrieves of `queries`:
/// `(recall, probe, citation fetches)` in milliseconds.
fn stages(service: &Service, queries: &[String]) -> (f64, f64, f64) {
    let mut columns: [Vec<f64>; 3] = Default::default();
    for query in queries {
        let response = service.handle(retrieve_with(query, true));
        let profile = &response.result.as_ref().expect("a retrieve result")["profile"];
        for (column, field) in columns.iter_mut().zip(["recall_ms", "probe_ms", "citation_fetch_ms"]) {
            column.push(profile[field].as_f64().unwrap_or_default());
        }
    }
    let median = |column: &mut Vec<f64>| {
        column.sort_by(f64::total_cmp);
        column.get(column.len() / 2).copied().unwrap_or_default()
    };
    let [recall, probe, fetch] = &mut columns;
    (median(recall), median(probe), median(fetch))
}

/// `(recall p50, retrieve p50, questions whose retrieve ran recovery)` over `queries`.
fn interleaved(service: &Service, queries: &[String]) -> (Duration, Duration, usize) {
    let mut recalls = Vec::new();
    let mut retrieves = Vec::new();
    let mut recovered = 0;
    for round in 0..PERCENTILE_ROUNDS {
        for query in queries {
            let started = Instant::now();
            let response = service.handle(read_request("memory.recall", query));
            recalls.push(started.elapsed());
            assert!(response.ok, "{:?}", response.error);
            let started = Instant::now();
            let response = service.handle(retrieve(query));
            retrieves.push(started.elapsed());
            assert!(response.ok, "{:?}", response.error);
            if round == 0 && response.result.as_ref().is_some_and(|r| r.get("recovery").is_some()) {
                recovered += 1;
            }
        }
    }
    recalls.sort_unstable();
    retrieves.sort_unstable();
    (percentile(&recalls, 0.5), percentile(&retrieves, 0.5), recovered)
}

/// Times both classes and reports them against the targets.
pub fn bench_retrieve(service: &Service, queries: &[String], size: usize) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at_target_size = size == 10_000;
    let (recall, retrieve, recovered) = interleaved(service, queries);
    let (recall_stage, probe_stage, fetch_stage) = stages(service, queries);
    println!(
        "  retrieve (recovery runs for {recovered}/{}) p50 {:>8.3} ms   (recall p50 {:.3} ms; stage medians: \
         recall {recall_stage:.3}, probe {probe_stage:.3}, fetch {fetch_stage:.3} ms)",
        queries.len(),
        ms(retrieve),
        ms(recall)
    );
    targets::target(
        29,
        &format!(
            "memory.retrieve p50 with recovery, {size} artifacts ({recovered}/{} questions recovered)",
            queries.len()
        ),
        &format!("{:.3} ms ({:.2}x recall)", ms(retrieve), ms(retrieve) / ms(recall)),
        &format!("memory.recall of the same questions, interleaved: {:.3} ms", ms(recall)),
        if at_target_size {
            "<= 2x recall"
        } else {
            "report (target applies at 10k)"
        },
        at_target_size.then_some(ms(retrieve) <= 2.0 * ms(recall)),
    );

    let current: Vec<String> = queries
        .iter()
        .map(|q| format!("current implementation of {q}"))
        .collect();
    let (recall, retrieve, recovered) = interleaved(service, &current);
    assert_eq!(recovered, 0, "a current-source question ran recovery");
    println!(
        "  retrieve (no recovery)        p50 {:>8.3} ms   (recall p50 {:.3} ms)",
        ms(retrieve),
        ms(recall)
    );
    targets::target(
        29,
        &format!("memory.retrieve p50 without recovery, {size} artifacts"),
        &format!("{:.3} ms ({:.2}x recall)", ms(retrieve), ms(retrieve) / ms(recall)),
        &format!("memory.recall of the same questions, interleaved: {:.3} ms", ms(recall)),
        if at_target_size {
            "equal to recall (<= 1.1x + 0.05 ms)"
        } else {
            "report (target applies at 10k)"
        },
        at_target_size.then_some(ms(retrieve) <= 1.1 * ms(recall) + 0.05),
    );
}
