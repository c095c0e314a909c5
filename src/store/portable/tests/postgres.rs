//! Export, import, backup and verify across the two backends, against a real PostgreSQL.

use super::*;
use crate::service::Runtime;
use crate::store::Store;
use crate::store::verify::kind;
use crate::testkit::postgres::TestCluster;

/// A PostgreSQL store on a fresh database of `cluster`, with its database name.
fn pg_store(cluster: &TestCluster, front_end: &Path) -> (Store, String) {
    let url = cluster.create_database();
    let name = url.split("@/").nth(1).unwrap().split('?').next().unwrap().to_owned();
    (Store::open_postgres(&url, front_end).unwrap(), name)
}

fn pg_export(store: &Store, dest: &Path) {
    pg_export_scoped(store, dest, &Scope::All);
}

fn pg_export_scoped(store: &Store, dest: &Path, scope: &Scope) {
    let crate::store::Backend::Postgres(pg) = &store.inner.backend else {
        panic!("not a PostgreSQL store");
    };
    export::export_postgres(pg, dest, scope, false).unwrap();
}

/// Every file of an archive; the manifest with its `created_at` blanked.
fn archive_files(archive: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect(archive, archive, &mut files);
    for (name, bytes) in &mut files {
        if name == MANIFEST_FILE {
            let mut manifest: Value = serde_json::from_slice(bytes).unwrap();
            manifest["created_at"] = Value::Null;
            *bytes = serde_json::to_vec(&manifest).unwrap();
        }
    }
    files
}

/// The seeded embedded store: a project's memory (inline and >16 KiB external content,
/// revisions, cited claims, a contradiction with stale and open cases, a support edge, a
/// forget) and a replayed idempotent put.
fn seeded() -> (Fixture, Vec<String>) {
    let mut fixture = Fixture::new();
    let ids = fixture.project("alpha");
    let request = json!({"v": 1, "request_id": "r_replay", "op": "artifact.put", "idempotency_key": "replayed",
                         "context": ctx("alpha"),
                         "input": {"kind": "note", "title": "replayed", "content": {"type": "text", "data": "once"}}});
    let first = fixture.service.handle_value(request.clone(), "t");
    let second = fixture.service.handle_value(request, "t");
    assert!(first.ok && second.ok);
    assert_eq!(
        first.result.unwrap()["artifact_id"],
        second.result.unwrap()["artifact_id"]
    );
    (fixture, ids)
}

#[test]
fn an_embedded_export_imported_into_postgres_exports_again_to_identical_record_files() {
    let (fixture, _) = seeded();
    let archive = fixture.export("from-sqlite", &Scope::All);
    let big = lines(&archive, "artifact_revisions.jsonl")
        .iter()
        .any(|r| r["size_bytes"].as_u64().unwrap() > 16 * 1024);
    assert!(big, "the seed holds an external blob");
    let Some(cluster) = TestCluster::start() else { return };
    let front_end = tempfile::tempdir().unwrap();
    let (store, _) = pg_store(&cluster, front_end.path());
    let report = store.import(&archive, Mode::IntoEmpty, false).unwrap();
    assert_eq!(report.last_commit_seq, fixture.last_commit_seq());
    let verified = store.verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);
    assert!(verified.checked_external_blobs >= 1);
    let again = fixture.dir.path().join("from-postgres");
    pg_export(&store, &again);
    assert_eq!(archive_files(&archive), archive_files(&again));
    // A merge of the same archive changes nothing.
    let merged = store.import(&archive, Mode::Merge, false).unwrap();
    assert_eq!(merged.imported, [0; RECORD_FILES.len()]);
    assert_eq!(merged.last_commit_seq, report.last_commit_seq);
    store.shutdown();
}

#[test]
fn a_postgres_backup_restores_into_a_new_local_data_dir_that_verifies_and_answers_the_same() {
    let (fixture, ids) = seeded();
    let archive = fixture.export("seed", &Scope::All);
    let Some(cluster) = TestCluster::start() else { return };
    let front_end = tempfile::tempdir().unwrap();
    let (store, _) = pg_store(&cluster, front_end.path());
    store.import(&archive, Mode::IntoEmpty, false).unwrap();
    let remote = Service::new(store, Runtime::default());
    let backup = fixture.dir.path().join("pg-backup");
    let report = remote.store().backup(&backup).unwrap();
    assert_eq!(report.commit_seq, fixture.last_commit_seq());
    assert!(read_manifest_ok(&backup));
    let existing = remote.store().backup(&backup);
    assert!(
        matches!(existing, Err(StoreError::Invalid(_))),
        "an existing destination is refused"
    );

    let restored_dir = fixture.dir.path().join("restored");
    fresh::import_into_new_data_dir(&backup, &restored_dir, false).unwrap();
    let local = Service::open(&restored_dir).unwrap();
    let verified = local.store().verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);
    let ask = |service: &Service, op: &str, input: Value| {
        let request = json!({"v": 1, "request_id": "r", "op": op, "context": ctx("alpha"), "input": input});
        let response = service.handle_value(request, "t");
        assert!(response.ok, "{op}: {:?}", response.error);
        response.result.unwrap()
    };
    for artifact in &ids[..2] {
        let get = json!({"artifact_id": artifact});
        let (there, here) = (
            ask(&remote, "artifact.get", get.clone()),
            ask(&local, "artifact.get", get),
        );
        for field in ["revision_id", "title", "content", "status"] {
            assert_eq!(there[field], here[field], "{field}");
        }
    }
    // The same hits (the backends' rankings may order ties differently).
    let hits = |service: &Service, query: &str| -> Vec<String> {
        let found = ask(service, "search", json!({"query": query}));
        let mut ids: Vec<String> = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| format!("{} {} {}", hit["id"], hit["artifact_id"], hit["claim_id"]))
            .collect();
        ids.sort();
        ids
    };
    for query in ["sqlite", "design", "replayed"] {
        let remote_hits = hits(&remote, query);
        assert!(!remote_hits.is_empty(), "{query} finds something");
        assert_eq!(remote_hits, hits(&local, query), "{query}");
    }
    local.store().shutdown();
    remote.store().shutdown();
}

fn read_manifest_ok(archive: &Path) -> bool {
    check::check_archive(archive).is_ok()
}

#[test]
fn verify_on_postgres_reports_a_tampered_blob_chunk() {
    let (fixture, _) = seeded();
    let archive = fixture.export("seed", &Scope::All);
    let Some(cluster) = TestCluster::start() else { return };
    let front_end = tempfile::tempdir().unwrap();
    let (store, database) = pg_store(&cluster, front_end.path());
    store.import(&archive, Mode::IntoEmpty, false).unwrap();
    assert!(store.verify().unwrap().is_ok());
    cluster.psql_in(
        &database,
        "SET session_replication_role = replica;
         UPDATE blob_chunks SET data = overlay(data placing '\\x00'::bytea from 10 for 1)
         WHERE hash = (SELECT min(hash) FROM blobs)",
    );
    let report = store.verify().unwrap();
    assert!(report.has(kind::BLOB_CORRUPT), "{:?}", report.issues);
    store.shutdown();
}

#[test]
fn a_failing_import_into_postgres_leaves_it_unchanged() {
    let (fixture, _) = seeded();
    let archive = fixture.export("seed", &Scope::All);
    let mut other = Fixture::new();
    other.project("beta");
    let second = other.export("beta", &Scope::All);
    // Same length, different bytes: only the digest check, after the earlier files were
    // applied in the import's transaction, finds it.
    let replays = second.join("replays.jsonl");
    let mut bytes = fs::read(&replays).unwrap();
    let at = bytes.iter().rposition(|b| *b == b'k').unwrap();
    bytes[at] = b'q';
    fs::write(&replays, bytes).unwrap();

    let Some(cluster) = TestCluster::start() else { return };
    let front_end = tempfile::tempdir().unwrap();
    let (store, database) = pg_store(&cluster, front_end.path());
    store.import(&archive, Mode::IntoEmpty, false).unwrap();
    let before = fixture.dir.path().join("before");
    pg_export(&store, &before);
    let blobs_before = cluster.psql_in(&database, "SELECT count(*) FROM blobs");
    let failed = store.import(&second, Mode::Merge, false);
    assert!(
        matches!(&failed, Err(StoreError::Archive(ArchiveError::Damaged(_)))),
        "{failed:?}"
    );
    let after = fixture.dir.path().join("after");
    pg_export(&store, &after);
    assert_eq!(archive_files(&before), archive_files(&after));
    assert_eq!(cluster.psql_in(&database, "SELECT count(*) FROM blobs"), blobs_before);
    assert!(store.verify().unwrap().is_ok());
    // The store still takes the intact archive afterwards.
    other.export("beta-intact", &Scope::All);
    store
        .import(&other.dir.path().join("beta-intact"), Mode::Merge, false)
        .unwrap();
    assert!(store.verify().unwrap().is_ok());
    store.shutdown();
}

#[test]
fn scoped_exports_of_an_embedded_and_a_postgres_store_holding_the_same_memory_are_identical() {
    let (mut fixture, _) = seeded();
    // Several projects and tasks, evidence across projects, a relation naming another task's
    // claim: every rule of the closure has something to select or leave out.
    fixture.project("beta");
    let foreign = fixture.put("gamma", "gamma source", "gamma keeps a cited source");
    fixture.put("delta", "delta secret", "nothing to do with alpha");
    let sibling = fixture.ok(
        "claim.assert",
        &json!({"workspace_id": "wsp_port", "project_id": "alpha", "task_id": "t2"}),
        json!({"claim_type": "fact", "statement": "t2 works alone"}),
    )["claim_id"]
        .as_str()
        .unwrap()
        .to_owned();
    fixture.ok(
        "claim.assert",
        &json!({"workspace_id": "wsp_port", "project_id": "alpha", "task_id": "t2"}),
        json!({"claim_type": "fact", "statement": "t2 keeps this to itself"}),
    );
    let citing = fixture.assert_claim("alpha", "alpha cites gamma", &foreign);
    fixture.relate("alpha", &citing.0, "supports", &sibling);
    fixture.ok(
        "artifact.put",
        &json!({"workspace_id": "wsp_other", "project_id": "alpha"}),
        json!({"kind": "note", "title": "other workspace", "content": {"type": "text", "data": "elsewhere"}}),
    );

    let archive = fixture.export("all", &Scope::All);
    let Some(cluster) = TestCluster::start() else { return };
    let front_end = tempfile::tempdir().unwrap();
    let (store, _) = pg_store(&cluster, front_end.path());
    store.import(&archive, Mode::IntoEmpty, false).unwrap();

    let owner = |task: Option<&str>| crate::store::scope::Owner {
        workspace_id: "wsp_port".to_owned(),
        project_id: "alpha".to_owned(),
        task_id: task.map(str::to_owned),
        component: None,
    };
    let scopes = [
        (None, crate::protocol::Horizon::Ambient, None),
        (Some("t1"), crate::protocol::Horizon::Ambient, None),
        (None, crate::protocol::Horizon::Workspace, Some("hand over")),
        (None, crate::protocol::Horizon::Personal, Some("move machines")),
    ];
    for (i, (task, horizon, reason)) in scopes.into_iter().enumerate() {
        let scope = Scope::Visible {
            ambient: owner(task),
            horizon,
            reason: reason.map(str::to_owned),
        };
        let embedded = fixture.export(&format!("embedded-{i}"), &scope);
        let postgres = fixture.dir.path().join(format!("postgres-{i}"));
        pg_export_scoped(&store, &postgres, &scope);
        let records = lines(&embedded, "artifacts.jsonl").len();
        assert!(records > 0, "{scope:?} selects something");
        assert_eq!(archive_files(&embedded), archive_files(&postgres), "{scope:?}");
    }
    // The ambient project's scope leaves other projects out but follows the cited evidence.
    let narrow = fixture.dir.path().join("postgres-0");
    let titles: Vec<String> = lines(&narrow, "artifact_revisions.jsonl")
        .iter()
        .map(|r| r["title"].as_str().unwrap().to_owned())
        .collect();
    assert!(titles.iter().any(|t| t == "gamma source"), "{titles:?}");
    assert!(
        !titles.iter().any(|t| t.starts_with("beta") || t.starts_with("delta")),
        "{titles:?}"
    );
    // Nothing of the selection is left behind in the database.
    let verified = store.verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);
    store.shutdown();
}
