//! `artifact.purge` and `claim.purge` on a PostgreSQL store, through the protocol on two front
//! ends (two `Service`s on one database of a real cluster): the erased bytes leave every
//! table and every file of the database, history stays dense, a re-purge acknowledges the
//! original from either front end, and reads on the other front end honour the purge at once.

use std::path::Path;

use postgres::{Client, NoTls};
use serde_json::{Value, json};

use crate::protocol::{ErrorCode, Response};
use crate::service::Service;
use crate::service::tests::support::{checked, envelope, result_of, warning_codes};
use crate::store::Store;
use crate::testkit::postgres::FrontEnds;

/// Lowercase and alphanumeric, so the full-text projection keeps it as one lexeme.
const SECRET: &str = "zq7secrettokenc0ffee9d2b71e4a5f";

fn call_keyed(service: &Service, op: &str, key: Option<&str>, input: Value) -> Response {
    let context = json!({"workspace_id": "wsp_purge", "project_id": "prj_purge"});
    checked(service, envelope(op, input, Some(&context), key))
}

fn ok_keyed(service: &Service, op: &str, key: Option<&str>, input: Value) -> (Value, Vec<String>) {
    let request = json!({"op": op, "input": input});
    let response = call_keyed(service, op, key, input);
    let codes = warning_codes(&response);
    (result_of(response, &request), codes)
}

fn ok(service: &Service, op: &str, input: Value) -> (Value, Vec<String>) {
    ok_keyed(service, op, None, input)
}

/// Bytes pglz cannot compress (so a stored copy holds the secret verbatim), with the secret
/// in the middle.
fn incompressible_with_secret(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let at = len / 2;
    bytes[at..at + SECRET.len()].copy_from_slice(SECRET.as_bytes());
    bytes
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn client(url: &str) -> Client {
    Client::connect(url, NoTls).unwrap()
}

/// The tables of the store whose live rows mention `needle` (as text, or as bytea hex).
fn tables_holding(url: &str, needle: &str) -> Vec<String> {
    let mut client = client(url);
    let tables: Vec<String> = client
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let hex: String = needle.bytes().map(|b| format!("{b:02x}")).collect();
    tables
        .into_iter()
        .filter(|table| {
            let sql =
                format!("SELECT count(*) FROM \"{table}\" t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0");
            client.query_one(&sql, &[&needle, &hex]).unwrap().get::<_, i64>(0) > 0
        })
        .collect()
}

/// Every regular file below `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return hits;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            hits.extend(files_holding(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

/// The files of this database's directory (`base/<oid>`) holding the secret, after a
/// checkpoint wrote every dirty buffer out.
fn database_files_holding_secret(f: &FrontEnds) -> Vec<String> {
    let mut client = client(&f.url);
    client.batch_execute("CHECKPOINT").unwrap();
    let oid: u32 = client
        .query_one("SELECT oid FROM pg_database WHERE datname = current_database()", &[])
        .unwrap()
        .get(0);
    files_holding(
        &f.cluster.data_dir().join("base").join(oid.to_string()),
        SECRET.as_bytes(),
    )
}

/// `(events, min commit_seq, max commit_seq, commit_state)`.
fn history(url: &str) -> (i64, i64, i64, i64) {
    let row = client(url)
        .query_one(
            "SELECT count(*), min(commit_seq), max(commit_seq), (SELECT commit_seq FROM commit_state) FROM events",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

#[test]
fn purging_an_artifact_and_a_claim_on_postgresql_erases_their_bytes_from_every_table_and_database_file() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    let (put, _) = ok(
        a,
        "artifact.put",
        json!({"kind": "note", "title": format!("Credentials {SECRET}"),
               "content": {"type": "text", "data": format!("the rotation key is {SECRET} until friday")},
               "provenance": {"source": SECRET}}),
    );
    let artifact = put["artifact_id"].as_str().unwrap().to_owned();
    // A revision above the inline threshold: its bytes live in `blob_chunks` (two chunks).
    let big = incompressible_with_secret(crate::store::pg::blob::CHUNK_BYTES + 4096);
    let (revised, _) = ok(
        b,
        "artifact.revise",
        json!({"artifact_id": artifact, "if_revision": put["revision_id"], "media_type": "application/octet-stream",
               "content": {"type": "base64", "data": base64(&big)}}),
    );
    let (claim, _) = ok(
        b,
        "claim.assert",
        json!({"claim_type": "fact", "statement": format!("The key is {SECRET}"),
               "evidence": [{"artifact_id": artifact, "revision_id": put["revision_id"], "start_byte": 0, "end_byte": 8}]}),
    );
    let claim_id = claim["claim_id"].as_str().unwrap().to_owned();
    ok(
        a,
        "claim.retract",
        json!({"claim_id": claim_id, "reason": format!("leaked {SECRET}")}),
    );
    assert!(!tables_holding(&f.url, SECRET).is_empty());
    assert!(
        !database_files_holding_secret(&f).is_empty(),
        "the file scan finds the planted secret before the purge"
    );
    let (before_seq, ..) = (history(&f.url).3, ());

    let (purged, warnings) = ok(
        a,
        "artifact.purge",
        json!({"artifact_id": artifact, "reason": "leaked key"}),
    );
    assert_eq!(purged["created"], true, "{purged}");
    assert_eq!(purged["erasure_complete"], true, "{purged}");
    assert_eq!(purged["revisions"].as_array().unwrap().len(), 2);
    assert_eq!(purged["erasure"]["removed_blobs"], 1, "{purged}");
    assert_eq!(purged["erasure"]["database_rewritten"], true, "{purged}");
    assert_eq!(purged["citing_claims"][0]["claim_id"], claim_id.as_str());
    assert!(purged["earlier_copies"].as_str().unwrap().contains("write-ahead log"));
    assert!(
        warnings.contains(&"EARLIER_COPIES_RETAIN_CONTENT".to_owned()),
        "{warnings:?}"
    );
    let (claim_purged, _) = ok(
        b,
        "claim.purge",
        json!({"claim_id": claim_id, "reason": "quotes the key"}),
    );
    assert_eq!(claim_purged["erasure_complete"], true, "{claim_purged}");

    assert_eq!(tables_holding(&f.url, SECRET), Vec::<String>::new());
    let big_hash = blake3::hash(&big).to_hex().to_string();
    let chunks: i64 = client(&f.url)
        .query_one(
            "SELECT (SELECT count(*) FROM blob_chunks WHERE hash = $1) + (SELECT count(*) FROM blobs WHERE hash = $1)",
            &[&big_hash],
        )
        .unwrap()
        .get(0);
    assert_eq!(chunks, 0, "the purged blob's row and chunks are deleted");
    assert_eq!(database_files_holding_secret(&f), Vec::<String>::new());
    // History stays: every revision row and event is still there, and the sequence is dense.
    let (events, first, last, state) = history(&f.url);
    assert_eq!((events, first, last), (state, 1, state));
    assert_eq!(state, before_seq + 2, "each purge took exactly one commit_seq");
    assert_eq!(purged["commit_seq"], before_seq + 1);
    let revisions: i64 = client(&f.url)
        .query_one(
            "SELECT (SELECT count(*) FROM artifact_revisions WHERE purged = 1) + (SELECT count(*) FROM claim_revisions WHERE purged = 1)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(revisions, 3, "two artifact revisions and one claim revision, all kept");
    let (verified, _) = ok(b, "verify", json!({}));
    assert_eq!(verified["ok"], true, "{verified}");
    let _ = revised;
}

#[test]
fn a_repurge_under_a_new_key_on_either_front_end_acknowledges_the_original_purge() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    let (put, _) = ok(
        a,
        "artifact.put",
        json!({"kind": "note", "title": "Note", "content": {"type": "text", "data": format!("holds {SECRET}")}}),
    );
    let input = json!({"artifact_id": put["artifact_id"], "reason": "leak"});
    let (first, _) = ok_keyed(a, "artifact.purge", Some("purge-1"), input.clone());
    let (again, _) = ok_keyed(b, "artifact.purge", Some("purge-2"), input.clone());
    assert_eq!(
        (first["created"].as_bool(), again["created"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(again["commit_seq"], first["commit_seq"]);
    assert_eq!(again["purge_commit_seq"], first["purge_commit_seq"]);
    assert_eq!(again["purged_at"], first["purged_at"]);
    let (replayed, _) = ok_keyed(b, "artifact.purge", Some("purge-1"), input);
    assert_eq!(replayed["commit_seq"], first["commit_seq"]);
    let (events, _, last, state) = history(&f.url);
    assert_eq!(
        (events, last),
        (2, 2),
        "a put and one purge: re-purges take no commit_seq"
    );
    assert_eq!(state, 2);
}

#[test]
fn a_purge_on_one_front_end_is_honoured_at_once_by_reads_on_another() {
    let Some(f) = FrontEnds::start(2) else { return };
    let (a, b) = (&f.services[0], &f.services[1]);
    let text = format!("Harbor rotates the signing key {SECRET} weekly.");
    let (put, _) = ok(
        a,
        "artifact.put",
        json!({"kind": "note", "title": "Ledger notes", "content": {"type": "text", "data": text}}),
    );
    let artifact = put["artifact_id"].as_str().unwrap().to_owned();
    let revision = put["revision_id"].as_str().unwrap().to_owned();
    let (claim, _) = ok(
        a,
        "claim.assert",
        json!({"claim_type": "fact", "statement": "Harbor rotates the signing key weekly",
               "evidence": [{"artifact_id": artifact, "revision_id": revision, "start_byte": 0, "end_byte": 6}]}),
    );
    // Front end B reads first: its vocabulary and any per-front-end state are warm.
    let (found, _) = ok(b, "search", json!({"query": SECRET}));
    assert!(found.to_string().contains(&artifact), "{found}");
    ok(b, "memory.recall", json!({"query": "signing key"}));

    ok(
        a,
        "artifact.purge",
        json!({"artifact_id": artifact, "reason": "leaked key"}),
    );

    let gone = call_keyed(
        b,
        "artifact.get",
        None,
        json!({"artifact_id": artifact, "revision_id": revision}),
    );
    let error = gone.error.unwrap();
    assert_eq!(error.code, ErrorCode::NotFound);
    let details = error.details;
    assert_eq!(details["state"], "purged", "{details}");
    assert_eq!(details["reason"], "leaked key", "{details}");
    let (history, warnings) = ok(b, "artifact.history", json!({"artifact_id": artifact}));
    assert!(warnings.contains(&"PURGED".to_owned()), "{warnings:?} {history}");
    let (cited, warnings) = ok(b, "claim.get", json!({"claim_id": claim["claim_id"]}));
    assert!(
        warnings.contains(&"EVIDENCE_SOURCE_PURGED".to_owned()),
        "{warnings:?} {cited}"
    );
    let (search, _) = ok(b, "search", json!({"query": SECRET}));
    assert!(!search.to_string().contains(&artifact), "{search}");
    let df = b
        .store()
        .read_db(|db| b.vocabulary().with_current(b.store(), db, |v| v.df(SECRET)))
        .unwrap();
    assert_eq!(df, 0, "front end B's vocabulary no longer knows the erased term");
}

#[test]
fn an_erasure_held_back_by_an_older_snapshot_is_reported_and_finished_when_a_front_end_opens() {
    let Some(f) = FrontEnds::start(1) else { return };
    let a = &f.services[0];
    let (put, _) = ok(
        a,
        "artifact.put",
        json!({"kind": "note", "title": "Note", "content": {"type": "text", "data": format!("holds {SECRET}")}}),
    );
    let mut reader = client(&f.url);
    let mut snapshot = reader
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .unwrap();
    let _: i64 = snapshot
        .query_one("SELECT count(*) FROM artifacts", &[])
        .unwrap()
        .get(0);
    let (first, warnings) = ok(
        a,
        "artifact.purge",
        json!({"artifact_id": put["artifact_id"], "reason": "leak"}),
    );
    assert_eq!(first["erasure_complete"], false, "{first}");
    assert_eq!(first["erasure"]["older_snapshots_released"], false, "{first}");
    assert!(warnings.contains(&"PURGE_INCOMPLETE".to_owned()), "{warnings:?}");
    let (verified, _) = ok(a, "verify", json!({}));
    assert!(verified.to_string().contains("purge_incomplete"), "{verified}");
    snapshot.commit().unwrap();
    drop(reader);
    let dir = tempfile::tempdir().unwrap();
    let reopened = Store::open_postgres(&f.url, dir.path()).unwrap();
    let erased = reopened
        .read_db(|db| crate::store::tombstone::load(db, put["artifact_id"].as_str().unwrap()))
        .unwrap()
        .unwrap();
    assert!(erased.erased, "{:?}", erased.erasure);
    assert_eq!(database_files_holding_secret(&f), Vec::<String>::new());
}

#[test]
fn a_mutation_citing_content_a_concurrent_purge_erased_stores_the_blob_again() {
    let Some(f) = FrontEnds::start(1) else { return };
    let a = &f.services[0];
    let big = incompressible_with_secret(crate::protocol::limits::INLINE_BLOB_MAX_BYTES * 2);
    let content = json!({"type": "base64", "data": base64(&big)});
    let (first, _) = ok(
        a,
        "artifact.put",
        json!({"kind": "note", "title": "One", "content": content, "media_type": "application/octet-stream"}),
    );
    let hash = blake3::hash(&big).to_hex().to_string();
    ok(
        a,
        "artifact.purge",
        json!({"artifact_id": first["artifact_id"], "reason": "leak"}),
    );
    // The same bytes put again: stored before the transaction (put_blob) and, should a purge
    // have erased them in between, again inside it.
    let store = a.store().clone();
    let digest = crate::blob::Digest::of(&big);
    let new = crate::store::artifact::NewRevision {
        title: "Two".to_owned(),
        media_type: "application/octet-stream".to_owned(),
        blob: crate::store::artifact::BlobRef::external(digest, big.len() as u64),
        content: big.clone(),
        provenance_json: "{}".to_owned(),
        actor: None,
        vectors: None,
    };
    let owner = crate::store::scope::Owner {
        workspace_id: "wsp_purge".to_owned(),
        project_id: "prj_purge".to_owned(),
        task_id: None,
        component: None,
    };
    let (row, _) = store
        .write(move |tx| crate::store::artifact::put(tx, &owner, "note", &new))
        .unwrap();
    let (got, _) = ok(
        a,
        "artifact.get",
        json!({"artifact_id": row.artifact_id, "include_content": true}),
    );
    assert_eq!(got["content"]["data"], base64(&big));
    let blobs: i64 = client(&f.url)
        .query_one("SELECT count(*) FROM blobs WHERE hash = $1", &[&hash])
        .unwrap()
        .get(0);
    assert_eq!(blobs, 1);
}
