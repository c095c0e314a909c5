//! Export round trips (`spec/export-v1.md`) over the golden data and a generated store, run
//! in process against this crate only (trials `…::export_roundtrip`):
//!
//! 1. build store A (replay a transcript, seed the retrieval corpus, or generate a store of
//!    `MEMOREE_ROUNDTRIP_ARTIFACTS` artifacts, 10 000 by default);
//! 2. export A, import the archive into a new, empty data directory (store B);
//! 3. `verify` is clean on both, and every read request (each read of the transcript or
//!    corpus, a get of every revision of every entity with its content, the history of
//!    every entity with a lifecycle, relation listings, every page of `conflict.list`) gets
//!    a byte-identical response from A and B after redacting only the operations' own
//!    `evaluated_at` timestamps;
//! 4. exporting B gives byte-identical files, and a manifest that differs only in
//!    `created_at`.

use std::path::Path;

use memoree::service::{InProcess, Service};
use memoree::store::portable::{self, Scope, export, fresh};
use serde_json::{Value, json};

use crate::engine::normalize::{IdMap, normalize};

/// The in-process request every read goes through.
fn call(service: &Service, request: &Value) -> Value {
    let response = service.handle_value(request.clone(), "req_transport");
    serde_json::to_value(&response).unwrap_or(Value::Null)
}

/// Redacts the values of `evaluated_at` (the reading operation's own clock) and nothing else.
fn redact_operation_time(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "evaluated_at" {
                    *item = Value::String("<evaluated_at>".to_owned());
                } else {
                    redact_operation_time(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_operation_time),
        _ => {}
    }
}

/// Sends `request` to both stores and requires byte-identical responses.
fn same(a: &Service, b: &Service, request: &Value) -> Result<(), String> {
    let (mut left, mut right) = (call(a, request), call(b, request));
    redact_operation_time(&mut left);
    redact_operation_time(&mut right);
    let (left, right) = (left.to_string(), right.to_string());
    if left != right {
        return Err(format!("{request}\n  before the round trip: {left}\n  after: {right}"));
    }
    Ok(())
}

fn read(op: &str, context: Option<&Value>, input: Value) -> Value {
    let mut request = json!({"v": 1, "request_id": "req_roundtrip", "op": op, "input": input});
    if let Some(context) = context {
        request["context"] = context.clone();
    }
    request
}

fn ids(service: &Service, sql: &str) -> Result<Vec<(String, String)>, String> {
    service
        .store()
        .read(|conn| {
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .map_err(|e| e.to_string())
}

/// Every revision's get (content included), the current get and the history of every
/// entity whose history is more than its creation (revised, forgotten, retracted,
/// superseded or purged) and of every tenth other entity, the relation listing of every
/// relation endpoint and of every fiftieth other entity, every page of `conflict.list`, and
/// `verify`. Returns the number of reads compared.
fn read_everything(a: &Service, b: &Service) -> Result<usize, String> {
    let context = json!({"workspace_id": "wsp_roundtrip", "project_id": "prj_roundtrip"});
    let mut requests = vec![read("verify", None, json!({})), read("capabilities", None, json!({}))];
    for (artifact, revision) in ids(a, "SELECT artifact_id, id FROM artifact_revisions ORDER BY seq")? {
        requests.push(read(
            "artifact.get",
            None,
            json!({"artifact_id": artifact, "revision_id": revision, "include_content": true}),
        ));
    }
    for (claim, revision) in ids(a, "SELECT claim_id, id FROM claim_revisions ORDER BY seq")? {
        requests.push(read(
            "claim.get",
            None,
            json!({"claim_id": claim, "revision_id": revision}),
        ));
    }
    let storied = ids(
        a,
        "SELECT 'artifact', a.id FROM artifacts a
         WHERE a.status != 'active' OR a.rowid % 10 = 0 OR (SELECT count(*) FROM artifact_revisions r WHERE r.artifact_id = a.id) > 1
         UNION ALL
         SELECT 'claim', c.id FROM claims c
         WHERE c.status != 'active' OR c.rowid % 10 = 0 OR (SELECT count(*) FROM claim_revisions r WHERE r.claim_id = c.id) > 1
         ORDER BY 2",
    )?;
    for (kind, id) in &storied {
        requests.push(read(&format!("{kind}.get"), None, json!({format!("{kind}_id"): id})));
    }
    let mut checked = requests.len();
    for request in &requests {
        same(a, b, request)?;
    }
    for (kind, id) in &storied {
        let input = json!({format!("{kind}_id"): id, "limit": 100});
        checked += pages(
            a,
            b,
            &read(&format!("{kind}.history"), None, input),
            "before_revision_number",
            "next_before_revision_number",
        )?;
    }
    let related = ids(
        a,
        "SELECT source_type, source_id FROM relations UNION SELECT target_type, target_id FROM relations
         UNION SELECT 'artifact', id FROM artifacts WHERE rowid % 50 = 0
         UNION SELECT 'claim', id FROM claims WHERE rowid % 50 = 0 ORDER BY 2",
    )?;
    for (kind, id) in &related {
        let input = json!({"entity_type": kind, "entity_id": id, "direction": "both", "horizon": "personal",
                           "reason": "export round trip", "limit": 100});
        checked += pages(
            a,
            b,
            &read("relation.list", Some(&context), input),
            "before_commit_seq",
            "next_before_commit_seq",
        )?;
    }
    let input = json!({"horizon": "personal", "reason": "export round trip", "include_stale": true, "limit": 100});
    checked += pages(
        a,
        b,
        &read("conflict.list", Some(&context), input),
        "before_case_sequence",
        "next_before_case_sequence",
    )?;
    Ok(checked)
}

/// Compares every page of a paginated read, following `next` into `cursor`.
fn pages(a: &Service, b: &Service, first: &Value, cursor: &str, next: &str) -> Result<usize, String> {
    let mut request = first.clone();
    let mut count = 0;
    loop {
        same(a, b, &request)?;
        count += 1;
        let response = call(a, &request);
        match response["result"].get(next).and_then(Value::as_i64) {
            Some(value) if response["result"]["truncated"] == true => request["input"][cursor] = json!(value),
            _ => return Ok(count),
        }
    }
}

/// Exports A, imports it into a new store B, checks both and compares them; `extra` reads
/// are compared too. Returns a one-line summary.
pub fn round_trip(a: &Service, extra: &[Value]) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let first = dir.path().join("first");
    let scope = Scope::All;
    let exported = export::export(a.store().data_dir(), &first, &scope, false).map_err(|e| format!("export: {e}"))?;
    let data = dir.path().join("imported");
    fresh::import_into_new_data_dir(&first, &data, false).map_err(|e| format!("import: {e}"))?;
    let b = Service::open(&data).map_err(|e| e.to_string())?;
    let outcome = (|| {
        for service in [a, &b] {
            let verify = call(service, &read("verify", None, json!({})));
            if verify["result"]["ok"] != true {
                return Err(format!("verify is not clean: {verify}"));
            }
        }
        let mut checked = read_everything(a, &b)?;
        for request in extra {
            same(a, &b, request)?;
            checked += 1;
        }
        let second = dir.path().join("second");
        export::export(&data, &second, &scope, false).map_err(|e| format!("re-export: {e}"))?;
        compare_archives(&first, &second)?;
        Ok(format!(
            "{checked} reads identical; {} records, {} blobs re-exported identically",
            exported.manifest.files.iter().map(|f| f.records).sum::<u64>(),
            exported.manifest.blobs.count
        ))
    })();
    b.store().shutdown();
    outcome
}

/// Every file of two archives is byte-identical, except the manifests' `created_at`.
fn compare_archives(first: &Path, second: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    list(first, first, &mut files)?;
    let mut other = Vec::new();
    list(second, second, &mut other)?;
    if files != other {
        return Err("the re-export holds different file names".to_owned());
    }
    for name in files {
        let (x, y) = (std::fs::read(first.join(&name)), std::fs::read(second.join(&name)));
        let (x, y) = (x.map_err(|e| e.to_string())?, y.map_err(|e| e.to_string())?);
        if name == portable::MANIFEST_FILE {
            let parse = |bytes: &[u8]| -> Result<Value, String> {
                let mut value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
                value["created_at"] = Value::Null;
                Ok(value)
            };
            if parse(&x)? != parse(&y)? {
                return Err("the re-exported manifest differs beyond created_at".to_owned());
            }
        } else if x != y {
            return Err(format!("the re-exported {name} differs"));
        }
    }
    Ok(())
}

fn list(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            list(root, &path, out)?;
        } else {
            out.push(path.strip_prefix(root).unwrap_or(&path).display().to_string());
        }
    }
    Ok(())
}

/// A golden transcript: replayed in process, then round-tripped; its read requests are
/// sent again to both stores.
pub fn transcript(dir: &Path) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a = Service::open(&home.path().join("data")).map_err(|e| e.to_string())?;
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".request.json"))
        .collect();
    names.sort();
    let mut ids = IdMap::default();
    let mut reads = Vec::new();
    for path in names {
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let recorded: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let request = ids.resolve(&recorded)?;
        let response = call(&a, &request);
        normalize(&response, &mut ids);
        let op = request["op"]
            .as_str()
            .and_then(memoree::protocol::Operation::from_wire_name);
        if op.is_some_and(|op| !op.is_side_effecting() && op.wire_name() != "doctor") {
            reads.push(request);
        }
    }
    let outcome = round_trip(&a, &reads);
    a.store().shutdown();
    outcome.map(drop)
}

/// The retrieval corpus: seeded and evaluated on A, round-tripped; every case's recall,
/// search and context.build (lexical order, no recency) are compared.
pub fn corpus(dir: &Path) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a = Service::open(&home.path().join("data")).map_err(|e| e.to_string())?;
    let transport = InProcess::new(a.clone());
    memoree::eval::run(dir, &transport).map_err(|e| format!("seeding the corpus: {e}"))?;
    let corpus = memoree::eval::Corpus::load(dir).map_err(|e| e.to_string())?;
    let mut reads = Vec::new();
    for case in &corpus.cases {
        // Pins name corpus labels; the reads here need none.
        let context = json!({"workspace_id": case.context.workspace_id, "project_id": case.context.project_id,
                             "task_id": case.context.task_id});
        let mut base = json!({"query": case.query, "horizon": case.horizon});
        if let Some(reason) = &case.reason {
            base["reason"] = json!(reason);
        }
        let mut recall = base.clone();
        recall["recency"] = json!({"enabled": false});
        reads.push(read("memory.recall", Some(&context), recall.clone()));
        let mut search = recall.clone();
        search["limit"] = json!(100);
        reads.push(read("search", Some(&context), search.clone()));
        reads.push(read("context.build", Some(&context), search));
    }
    let outcome = round_trip(&a, &reads);
    a.store().shutdown();
    outcome.map(drop)
}
