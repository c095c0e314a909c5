//! `reindex` on PostgreSQL, against a real, throw-away cluster: the projection is rebuilt
//! to exactly what the write path wrote, damage is repaired, a failure keeps the old rows,
//! and writers on another front end are never interleaved with it.

use serde_json::{Value, json};

use crate::service::{Runtime, Service};
use crate::store::Store;
use crate::testkit::postgres::TestCluster;

struct PgFixture {
    cluster: TestCluster,
    database: String,
    _front_ends: Vec<tempfile::TempDir>,
    services: Vec<Service>,
}

/// `count` front ends on one fresh database.
/// `None` after reporting the test skipped when PostgreSQL is missing.
fn front_ends(count: usize) -> Option<PgFixture> {
    let cluster = TestCluster::start()?;
    let url = cluster.create_database();
    let database = url.split("@/").nth(1).unwrap().split('?').next().unwrap().to_owned();
    let dirs: Vec<tempfile::TempDir> = (0..count).map(|_| tempfile::tempdir().unwrap()).collect();
    let services = dirs
        .iter()
        .map(|dir| Service::new(Store::open_postgres(&url, dir.path()).unwrap(), Runtime::default()))
        .collect();
    Some(PgFixture {
        cluster,
        database,
        _front_ends: dirs,
        services,
    })
}

impl PgFixture {
    fn psql(&self, sql: &str) -> String {
        self.cluster.psql_in(&self.database, sql)
    }

    /// Every search row as `seq document` lines, in order.
    fn projection(&self) -> String {
        self.psql(
            "SELECT 'a ' || seq || ' ' || document::text FROM artifact_search
             UNION ALL SELECT 'c ' || seq || ' ' || document::text FROM claim_search ORDER BY 1",
        )
    }
}

fn ok(service: &Service, op: &str, key: Option<&str>, input: Value) -> Value {
    let mut request = json!({"request_id": "r", "op": op, "input": input,
                             "context": {"workspace_id": "wsp_test", "project_id": "prj_test"}});
    if let Some(key) = key {
        request["idempotency_key"] = json!(key);
    }
    let response = service.handle_value(request, "test");
    assert!(response.ok, "{op}: {:?}", response.error);
    response.result.unwrap()
}

fn put(service: &Service, key: &str, title: &str, text: &str) -> Value {
    ok(
        service,
        "artifact.put",
        Some(key),
        json!({"kind": "note", "title": title, "content": {"type": "text", "data": text}}),
    )
}

/// Three artifact revisions (one with content in the blob tables) and two claims.
fn seed(service: &Service) {
    let first = put(service, "k1", "Group commit", "the writer commits mutations in groups");
    ok(
        service,
        "artifact.revise",
        Some("k2"),
        json!({"artifact_id": first["artifact_id"], "if_revision": first["revision_id"],
               "content": {"type": "text", "data": "the writer commits mutations in groups of many"}}),
    );
    let large = format!("zeppelin {}", "blimp ".repeat(4096));
    put(service, "k3", "Airships", &large);
    for (key, statement) in [("k4", "PostgreSQL serializes writers"), ("k5", "Kestrels hover")] {
        ok(
            service,
            "claim.assert",
            Some(key),
            json!({"claim_type": "fact", "statement": statement}),
        );
    }
}

fn reindex(service: &Service) -> Value {
    ok(service, "reindex", None, json!({}))
}

fn hits(service: &Service, query: &str) -> usize {
    ok(service, "search", None, json!({"query": query}))["hits"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn reindex_on_postgresql_restores_missing_and_corrupted_rows_exactly_as_written_without_a_commit() {
    let Some(f) = front_ends(1) else { return };
    let service = &f.services[0];
    seed(service);
    let written = f.projection();
    let before = service.store().last_commit_seq().unwrap();
    f.psql(
        "DELETE FROM artifact_search WHERE seq = (SELECT min(seq) FROM artifact_search);
         UPDATE claim_search SET document = 'bogus'::tsvector WHERE seq = (SELECT min(seq) FROM claim_search);
         SET session_replication_role = replica;
         INSERT INTO artifact_search (seq, document) VALUES (99999, 'ghost'::tsvector);",
    );
    assert!(!service.store().verify().unwrap().is_ok());
    assert_eq!(hits(service, "serializes"), 0, "the damaged claim row finds nothing");

    let report = reindex(service);
    assert_eq!(report["reindexed_artifact_revisions"], 3);
    assert_eq!(report["reindexed_claim_revisions"], 2);
    assert_eq!(report["removed_orphan_rows"], 1);
    assert_eq!(report["last_commit_seq"], before);
    assert_eq!(service.store().last_commit_seq().unwrap(), before);
    assert_eq!(f.projection(), written, "the rows the write path wrote, no more");
    let verified = service.store().verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);

    assert_eq!(hits(service, "serializes"), 1);
    assert_eq!(hits(service, "kestrels"), 1);
    assert_eq!(hits(service, "zeppelin"), 1);
    let recalled = ok(service, "memory.recall", None, json!({"query": "writer groups"}));
    assert!(
        recalled.to_string().contains("Group commit"),
        "recall finds the restored artifact: {recalled}"
    );
    // Nothing to repair: the same counts, no orphans.
    let again = reindex(service);
    assert_eq!(again["removed_orphan_rows"], 0);
    assert_eq!(again["reindexed_artifact_revisions"], 3);
    assert_eq!(f.projection(), written);
}

#[test]
fn a_blob_that_cannot_be_read_fails_the_postgres_reindex_and_keeps_the_old_projection() {
    let Some(f) = front_ends(1) else { return };
    let service = &f.services[0];
    seed(service);
    f.psql("DELETE FROM claim_search WHERE seq = (SELECT min(seq) FROM claim_search)");
    let damaged = f.projection();
    f.psql(
        "SET session_replication_role = replica;
         UPDATE blob_chunks SET data = overlay(data placing '\\x00'::bytea from 10 for 1)
         WHERE hash = (SELECT min(hash) FROM blobs)",
    );
    let failed = service.store().reindex();
    assert!(failed.is_err(), "{failed:?}");
    let response = service.handle_value(json!({"request_id": "r", "op": "reindex", "input": {}}), "test");
    assert!(!response.ok);
    assert_eq!(f.projection(), damaged, "the old projection is kept");
    // The writer goes on with the next mutation.
    put(service, "k9", "After", "still writable");
    assert_eq!(hits(service, "writable"), 1);
}

#[test]
fn a_postgres_reindex_never_interleaves_with_writes_of_another_front_end() {
    let Some(f) = front_ends(2) else { return };
    seed(&f.services[0]);
    let writer = f.services[1].clone();
    let writes = std::thread::spawn(move || {
        for i in 0..40 {
            put(&writer, &format!("w{i}"), "Concurrent", &format!("note number {i}"));
        }
    });
    for _ in 0..5 {
        let report = reindex(&f.services[0]);
        assert_eq!(report["removed_orphan_rows"], 0);
    }
    writes.join().unwrap();
    let verified = f.services[0].store().verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);
    let report = reindex(&f.services[0]);
    assert_eq!(report["reindexed_artifact_revisions"], 43);
    assert_eq!(report["removed_orphan_rows"], 0);
}
