//! `citation.get` latency (issue 29): the ranged `excerpt_citation` of each rare-term
//! query's first artifact hit, fetched through the service, interleaved with an `artifact.get`
//! of the same revision (the exact get it narrows) so both see the same cache and machine.

use std::time::Instant;

use memoree::protocol::Request;
use memoree::service::Service;
use serde_json::{Value, json};

use super::{PERCENTILE_ROUNDS, percentile, read_request, targets};

fn context_free(op: &str, input: Value) -> Request {
    serde_json::from_value(json!({"request_id": "req_bench", "op": op, "input": input})).unwrap()
}

/// Times `citation.get` over the citations the searches for `queries` return.
pub fn bench_citation(service: &Service, queries: &[String], size: usize) {
    let citations: Vec<(String, Value)> = queries
        .iter()
        .filter_map(|query| {
            let response = service.handle(read_request("search", query));
            let hits = response.result?.get("hits")?.as_array()?.clone();
            let hit = hits
                .into_iter()
                .find(|hit| hit["entity_type"] == "artifact" && hit["excerpt_citation"].is_string())?;
            let citation = hit["excerpt_citation"].as_str()?.to_owned();
            let get = json!({"artifact_id": hit["entity_id"], "revision_id": hit["revision_id"]});
            Some((citation, get))
        })
        .collect();
    assert!(
        citations.len() * 2 >= queries.len(),
        "too few searches gave a ranged citation"
    );
    let mut fetch = Vec::new();
    let mut exact = Vec::new();
    for _ in 0..PERCENTILE_ROUNDS {
        for (citation, get) in &citations {
            let started = Instant::now();
            let response = service.handle(context_free("citation.get", json!({"citation": citation})));
            fetch.push(started.elapsed());
            assert!(response.ok, "{:?}", response.error);
            let started = Instant::now();
            let response = service.handle(context_free("artifact.get", get.clone()));
            exact.push(started.elapsed());
            assert!(response.ok, "{:?}", response.error);
        }
    }
    fetch.sort_unstable();
    exact.sort_unstable();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let (p50, p99, exact_p50) = (
        percentile(&fetch, 0.5),
        percentile(&fetch, 0.99),
        percentile(&exact, 0.5),
    );
    println!(
        "  citation.get   p50 {:>8.3} ms   p99 {:>8.3} ms   (artifact.get p50 {:.3} ms)",
        ms(p50),
        ms(p99),
        ms(exact_p50)
    );
    let at_target_size = size == 10_000;
    targets::target(
        29,
        &format!("citation.get p50 at {size} artifacts"),
        &format!("{:.3} ms", ms(p50)),
        &format!(
            "artifact.get of the same revision, interleaved: {:.3} ms",
            ms(exact_p50)
        ),
        if at_target_size {
            "<= 0.5 ms"
        } else {
            "report (target applies at 10k)"
        },
        at_target_size.then_some(ms(p50) <= 0.5),
    );
}
