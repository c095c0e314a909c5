//! Lints over the conformance data, run as trials of the in-tree runner (`lint/…`):
//!
//! * every case and golden scenario declares a level and a basis in the right shape;
//! * every `protocol:`/`facts:` basis is a real quote of `../shared/spec/machine-protocol-v1.txt`
//!   or `../shared/spec/reference-facts.md` (compared with whitespace collapsed and Markdown
//!   `*`/`` ` `` marks removed);
//! * every `divergence:` basis names a `### ` entry of `spec/v1/DIVERGENCES.md`, and every entry
//!   there is checked by at least one `memoree`-level case or scenario, unless the entry states
//!   that it is not observable through protocol requests (a line starting with
//!   [`NOT_OBSERVABLE`], naming the tests that check it) or is not a divergence at all
//!   ([`NOT_A_DIVERGENCE`]: a reference rule documented in detail);
//! * every v1 operation, every error code a request can provoke and every limit has a v1 case,
//!   and no v1 case relies on an operation outside the 23 (an extension).

use memoree::testkit::parts::{self, Part};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::engine::case;
use crate::engine::catalog::{Catalog, case_name};
use crate::engine::golden;
use crate::engine::level::{Basis, Level, Source};

/// The marker of a DIVERGENCES.md entry that no protocol request can observe.
pub const NOT_OBSERVABLE: &str = "Conformance: not observable through protocol requests";
/// The marker of an entry that documents a reference rule in detail (v1-level cases check it).
pub const NOT_A_DIVERGENCE: &str = "Conformance: not a divergence";

/// The 23 protocol v1 operations (the facts sheet's capabilities order).
const V1_OPERATIONS: [&str; 23] = [
    "context.resolve",
    "capabilities",
    "instructions",
    "schema",
    "artifact.put",
    "artifact.get",
    "artifact.revise",
    "artifact.history",
    "artifact.forget",
    "claim.assert",
    "claim.get",
    "claim.history",
    "claim.revise",
    "claim.retract",
    "relation.put",
    "relation.list",
    "conflict.list",
    "search",
    "memory.recall",
    "context.build",
    "doctor",
    "verify",
    "backup.create",
];

/// Every error code a request to a healthy store can provoke; each needs a v1 case.
const REACHABLE_CODES: [&str; 9] = [
    "NO_AMBIENT_CONTEXT",
    "INVALID_REQUEST",
    "NOT_FOUND",
    "REVISION_CONFLICT",
    "IDEMPOTENCY_CONFLICT",
    "INDEX_NOT_READY",
    "SCOPE_VIOLATION",
    "CONTENT_TOO_LARGE",
    "UNSUPPORTED_VERSION",
];

/// Codes no case file can provoke, and why (they are still in the v1 code table that the
/// `binary` transport checks exit statuses against).
const UNREACHABLE_CODES: [(&str, &str); 5] = [
    (
        "CONFIG_ERROR",
        "server configuration or a backup destination created concurrently at publish time",
    ),
    (
        "INTEGRITY_ERROR",
        "a corrupted store; the protocol offers no request that corrupts one",
    ),
    (
        "TRANSPORT_ERROR",
        "client-side connection failures, outside any request document",
    ),
    ("REASONER_ERROR", "caller-side remember, never a daemon operation"),
    ("INTERNAL_ERROR", "I/O and storage failures of the implementation"),
];

/// Each limit and the v1 cases that probe it at (and, where it has one, just over) the bound.
const LIMIT_CASES: [(&str, &[&str]); 30] = [
    (
        "max_concurrent_connections",
        &["v1/limits/fifth_concurrent_connection_is_refused"],
    ),
    ("max_frame_bytes", &["v1/limits/oversized_frame_is_never_read"]),
    (
        "max_artifact_bytes",
        &[
            "v1/limits/text_exactly_8mib",
            "v1/limits/text_8mib_plus_one",
            "v1/limits/base64_exactly_8mib",
            "v1/limits/base64_8mib_plus_one",
        ],
    ),
    ("max_encoded_content_bytes", &["v1/limits/encoded_content_over_12mib"]),
    ("max_query_bytes", &["v1/search/query_byte_limit"]),
    ("query words (48)", &["v1/search/query_word_limit"]),
    (
        "max_title_bytes",
        &["v1/limits/title_bytes", "v1/limits/multibyte_title_counts_bytes"],
    ),
    ("max_claim_statement_bytes", &["v1/limits/claim_statement_bytes"]),
    (
        "max_metadata_bytes",
        &[
            "v1/limits/provenance_bytes",
            "v1/limits/metadata_bytes",
            "v1/relation/metadata_over_limit_is_invalid",
        ],
    ),
    ("max_evidence_items", &["v1/limits/evidence_items"]),
    ("max_search_items", &["v1/search/limit_bounds"]),
    ("search default limit (10)", &["v1/search/default_limit_is_ten"]),
    ("max_recall_claims", &["v1/recall/bounds"]),
    ("max_recall_artifact_refs", &["v1/recall/bounds"]),
    (
        "max_recall_excerpt_bytes",
        &["v1/recall/bounds", "v1/recall/excerpts_are_cut_to_max_excerpt_bytes"],
    ),
    (
        "max_recall_evidence_excerpts_per_claim",
        &["v1/recall/evidence_previews_are_bounded"],
    ),
    (
        "max_history_items",
        &[
            "v1/limits/history_limit_max",
            "v1/artifact/history_bounds",
            "v1/claim/history_edges",
        ],
    ),
    ("history default page (50)", &["v1/limits/history_default_is_fifty"]),
    (
        "max_relation_list_items",
        &["v1/limits/list_limits", "v1/relation/list_anchor_and_bounds"],
    ),
    ("max_conflict_list_items", &["v1/limits/list_limits"]),
    ("kind (128 bytes)", &["v1/limits/kind_bytes"]),
    ("media_type (512 bytes)", &["v1/limits/media_type_bytes"]),
    ("actor (1024 bytes)", &["v1/limits/actor_bytes"]),
    (
        "reason (64 KiB)",
        &[
            "v1/limits/forget_reason_bytes",
            "v1/limits/retract_reason_bytes",
            "v1/limits/broad_reason_bytes",
        ],
    ),
    (
        "request_id (1..=256 bytes)",
        &["v1/limits/request_id_bytes", "v1/envelope/empty_request_id"],
    ),
    ("idempotency_key (512 bytes)", &["v1/limits/idempotency_key_bytes"]),
    ("context ids (256 bytes)", &["v1/limits/context_id_bytes"]),
    ("pins (128 × 512 bytes)", &["v1/limits/pins"]),
    ("evidence ids (256 bytes)", &["v1/limits/evidence_ids"]),
    (
        "context.build max_bytes",
        &["v1/context_build/small_budget_stays_within_max_bytes"],
    ),
];

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The text a quote is compared in: Markdown emphasis and code marks removed, whitespace collapsed.
pub fn comparable(text: &str) -> String {
    text.replace(['*', '`'], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `### ` headings of DIVERGENCES.md, each with whether it is marked not observable.
pub fn divergence_entries(markdown: &str) -> BTreeMap<String, bool> {
    let mut entries = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            current = Some(heading.trim().to_owned());
            entries.insert(heading.trim().to_owned(), false);
        } else if line.starts_with("## ") || line.starts_with("# ") {
            current = None;
        } else if let Some(heading) = &current
            && (line.trim_start().starts_with(NOT_OBSERVABLE) || line.trim_start().starts_with(NOT_A_DIVERGENCE))
        {
            entries.insert(heading.clone(), true);
        }
    }
    entries
}

/// Every loaded case and scenario: name, level, citations and its steps as (request, expected
/// response) pairs (`Null` for a `$raw` request).
struct Item {
    name: String,
    level: Level,
    citations: Vec<Basis>,
    steps: Vec<(Value, Value)>,
}

fn items(catalog: &Catalog) -> Result<Vec<Item>, Vec<String>> {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for (path, bytes) in catalog.case_files() {
        match case::load(path, bytes) {
            Ok(case) => items.push(Item {
                name: case_name(path),
                level: case.level,
                citations: case.citations.clone(),
                steps: case
                    .steps
                    .iter()
                    .map(|s| (s.request.clone().unwrap_or(Value::Null), s.expect.clone()))
                    .collect(),
            }),
            Err(e) => errors.push(e),
        }
    }
    for scenario in catalog.scenarios() {
        match golden::load_meta(catalog, &scenario.dir) {
            Ok(meta) => {
                let mut pairs: BTreeMap<&str, (Value, Value)> = BTreeMap::new();
                for (name, bytes) in catalog.files_in(&scenario.dir) {
                    let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                    if let Some(number) = name.strip_suffix(".request.json") {
                        pairs.entry(number).or_insert((Value::Null, Value::Null)).0 = value;
                    } else if let Some(number) = name.strip_suffix(".response.json") {
                        pairs.entry(number).or_insert((Value::Null, Value::Null)).1 = value;
                    }
                }
                items.push(Item {
                    name: scenario.dir.clone(),
                    level: meta.level,
                    citations: meta.citations,
                    steps: pairs.into_values().collect(),
                });
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(items) } else { Err(errors) }
}

fn check_levels(catalog: &Catalog) -> Result<(), String> {
    items(catalog).map(|_| ()).map_err(|errors| errors.join("\n"))
}

fn check_quotes(catalog: &Catalog, shared: &Path) -> Result<(), String> {
    let items = items(catalog).map_err(|e| e.join("\n"))?;
    // The quoted documents live outside the repository (`../shared`): without them the check
    // is skipped visibly, and fails in strict mode (CI).
    let test = "lint/v1_bases_are_real_quotes_of_the_protocol_or_the_facts_sheet";
    for document in [
        "machine-protocol-v1.txt",
        "reference-facts.md",
        "reference-facts-v0.7.md",
    ] {
        let path = shared.join(document);
        if !path.is_file() {
            parts::skip(Part::Shared, test, &format!("{} is absent", path.display()));
            return Ok(());
        }
    }
    let protocol = comparable(&read(&shared.join("machine-protocol-v1.txt"))?);
    let facts = comparable(&read(&shared.join("reference-facts.md"))?);
    let later_facts = comparable(&read(&shared.join("reference-facts-v0.7.md"))?);
    let mut problems = Vec::new();
    for item in &items {
        for basis in &item.citations {
            let (document, name) = match basis.source {
                Source::Protocol => (&protocol, "machine-protocol-v1.txt"),
                Source::Facts => (&facts, "reference-facts.md"),
                Source::FactsV07 => (&later_facts, "reference-facts-v0.7.md"),
                Source::Divergence => continue,
            };
            if !document.contains(&comparable(&basis.text)) {
                problems.push(format!("{}: not a quote of {name}: {:?}", item.name, basis.text));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn check_divergences(catalog: &Catalog, divergences: &Path) -> Result<(), String> {
    let items = items(catalog).map_err(|e| e.join("\n"))?;
    let entries = divergence_entries(&read(divergences)?);
    let mut cited: BTreeSet<&str> = BTreeSet::new();
    let mut problems = Vec::new();
    for item in &items {
        for basis in item.citations.iter().filter(|b| b.source == Source::Divergence) {
            if entries.contains_key(&basis.text) {
                cited.insert(&basis.text);
            } else {
                problems.push(format!(
                    "{}: cites {:?}, which is not a `### ` heading of {}",
                    item.name,
                    basis.text,
                    divergences.display()
                ));
            }
        }
    }
    for (heading, not_observable) in &entries {
        if !not_observable && !cited.contains(heading.as_str()) {
            problems.push(format!(
                "DIVERGENCES.md entry {heading:?} has no memoree-level case; add one, or state \
                 `{NOT_OBSERVABLE}; checked by …` in the entry"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Every string value of `"code"` keys in `value`.
fn codes(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "code"
                    && let Some(code) = v.as_str()
                {
                    out.insert(code.to_owned());
                }
                codes(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| codes(v, out)),
        _ => {}
    }
}

fn check_coverage(catalog: &Catalog) -> Result<(), String> {
    let items = items(catalog).map_err(|e| e.join("\n"))?;
    let v1: Vec<&Item> = items.iter().filter(|i| i.level == Level::V1).collect();
    let mut problems = Vec::new();
    // An extension (say `reindex`) is no part of v1: a v1 case may send it only to see it refused.
    for item in &v1 {
        for (request, expect) in &item.steps {
            let op = request.get("op").and_then(Value::as_str);
            let expects_failure = expect.get("ok") == Some(&Value::Bool(false));
            if let Some(op) = op.filter(|op| !V1_OPERATIONS.contains(op) && !expects_failure) {
                problems.push(format!(
                    "{}: v1 case relies on {op}, which is not a v1 operation",
                    item.name
                ));
            }
        }
    }
    let ops: BTreeSet<&str> = v1
        .iter()
        .flat_map(|i| i.steps.iter().filter_map(|(r, _)| r.get("op").and_then(Value::as_str)))
        .collect();
    for op in V1_OPERATIONS {
        if !ops.contains(op) {
            problems.push(format!("operation {op} has no v1 case"));
        }
    }
    let all_codes: BTreeSet<&str> = REACHABLE_CODES
        .into_iter()
        .chain(UNREACHABLE_CODES.iter().map(|(code, _)| *code))
        .collect();
    if all_codes.len() != 14 {
        problems.push("the reachable and unreachable code lists must cover the 14 v1 error codes once".to_owned());
    }
    let mut seen = BTreeSet::new();
    for item in &v1 {
        item.steps.iter().for_each(|(_, e)| codes(e, &mut seen));
    }
    for code in REACHABLE_CODES {
        if !seen.contains(code) {
            problems.push(format!("error code {code} has no v1 case"));
        }
    }
    let names: BTreeMap<&str, Level> = items.iter().map(|i| (i.name.as_str(), i.level)).collect();
    for (limit, cases) in LIMIT_CASES {
        if cases.is_empty() {
            problems.push(format!("limit {limit} lists no case"));
        }
        for case in cases {
            match names.get(case) {
                Some(Level::V1) => {}
                Some(Level::Memoree | Level::V17) => problems.push(format!("limit {limit}: {case} is not a v1 case")),
                None => problems.push(format!("limit {limit}: no case {case}")),
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The lint trials.
pub fn trials(root: &Path, catalog: Arc<Catalog>) -> Vec<Trial> {
    let shared: PathBuf = root.join("../shared/spec");
    let divergences = root.join("spec/v1/DIVERGENCES.md");
    let lint = |name: &str, check: Box<dyn FnOnce() -> Result<(), String> + Send>| {
        Trial::test(format!("lint/{name}"), move || check().map_err(Failed::from))
    };
    let (c1, c2, c3, c4) = (catalog.clone(), catalog.clone(), catalog.clone(), catalog);
    vec![
        lint(
            "every_case_and_scenario_declares_a_level_and_a_basis",
            Box::new(move || check_levels(&c1)),
        ),
        lint(
            "v1_bases_are_real_quotes_of_the_protocol_or_the_facts_sheet",
            Box::new(move || check_quotes(&c2, &shared)),
        ),
        lint(
            "every_divergence_has_a_memoree_case_and_every_cited_divergence_exists",
            Box::new(move || check_divergences(&c3, &divergences)),
        ),
        lint(
            "every_operation_reachable_error_code_and_limit_has_a_v1_case",
            Box::new(move || check_coverage(&c4)),
        ),
    ]
}
