use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::import::Mode;
use super::*;
use crate::protocol::ErrorCode;
use crate::service::Service;
use crate::store::StoreError;

/// A service on a store in a temporary directory, with a request helper per context.
struct Fixture {
    dir: tempfile::TempDir,
    service: Service,
    next: u64,
}

fn ctx(project: &str) -> Value {
    json!({"workspace_id": "wsp_port", "project_id": project})
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let service = Service::open(&dir.path().join("data")).unwrap();
        Fixture { dir, service, next: 0 }
    }

    fn send(&mut self, op: &str, context: &Value, input: Value) -> crate::protocol::Response {
        self.next += 1;
        let request = json!({"v": 1, "request_id": format!("r{}", self.next), "op": op,
                             "idempotency_key": format!("k{}", self.next), "context": context, "input": input});
        self.service.handle_value(request, "req_transport")
    }

    fn ok(&mut self, op: &str, context: &Value, input: Value) -> Value {
        let response = self.send(op, context, input);
        assert!(response.ok, "{op}: {:?}", response.error);
        response.result.unwrap()
    }

    fn put(&mut self, project: &str, title: &str, text: &str) -> (String, String) {
        let result = self.ok(
            "artifact.put",
            &ctx(project),
            json!({"kind": "note", "title": title, "content": {"type": "text", "data": text}}),
        );
        (
            result["artifact_id"].as_str().unwrap().to_owned(),
            result["revision_id"].as_str().unwrap().to_owned(),
        )
    }

    fn assert_claim(&mut self, project: &str, statement: &str, cites: &(String, String)) -> (String, String) {
        let evidence = json!([{"artifact_id": cites.0, "revision_id": cites.1, "start_byte": 0, "end_byte": 4}]);
        let result = self.ok(
            "claim.assert",
            &ctx(project),
            json!({"claim_type": "fact", "statement": statement, "evidence": evidence}),
        );
        (
            result["claim_id"].as_str().unwrap().to_owned(),
            result["revision_id"].as_str().unwrap().to_owned(),
        )
    }

    fn relate(&mut self, project: &str, source: &str, relation: &str, target: &str) {
        let kind = |id: &str| if id.starts_with("art_") { "artifact" } else { "claim" };
        self.ok(
            "relation.put",
            &ctx(project),
            json!({"source_type": kind(source), "source_id": source, "relation": relation,
                   "target_type": kind(target), "target_id": target}),
        );
    }

    /// A project's memory: artifacts inline and in the CAS, a revision, cited claims, a
    /// contradiction with a revised side (stale and open cases), a support edge, a forget.
    fn project(&mut self, project: &str) -> Vec<String> {
        let a = self.put(
            project,
            &format!("{project} design"),
            &format!("{project} keeps sqlite authoritative"),
        );
        let big = self.put(
            project,
            &format!("{project} log"),
            &format!("{project} log line\n").repeat(2_000),
        );
        let revised = self.ok(
            "artifact.revise",
            &ctx(project),
            json!({"artifact_id": a.0, "if_revision": a.1, "content": {"type": "text", "data": format!("{project} v2")}}),
        );
        let c1 = self.assert_claim(project, &format!("{project} uses sqlite"), &a);
        let c2 = self.assert_claim(project, &format!("{project} avoids sqlite"), &big);
        self.relate(project, &c1.0, "contradicts", &c2.0);
        self.ok(
            "claim.revise",
            &ctx(project),
            json!({"claim_id": c1.0, "if_revision": c1.1, "statement": format!("{project} still uses sqlite")}),
        );
        self.relate(project, &c2.0, "supports", &big.0);
        self.ok(
            "artifact.forget",
            &ctx(project),
            json!({"artifact_id": big.0, "reason": "rotated"}),
        );
        vec![
            a.0,
            big.0,
            c1.0,
            c2.0,
            revised["revision_id"].as_str().unwrap().to_owned(),
        ]
    }

    fn data(&self) -> PathBuf {
        self.service.store().data_dir().to_path_buf()
    }

    fn export(&self, name: &str, scope: &Scope) -> PathBuf {
        let dest = self.dir.path().join(name);
        export::export(&self.data(), &dest, scope, false).unwrap();
        dest
    }

    fn last_commit_seq(&self) -> i64 {
        self.service.store().last_commit_seq().unwrap()
    }

    /// Every file of a full export, for "nothing changed" comparisons (manifest time aside).
    fn fingerprint(&self) -> Vec<(String, Vec<u8>)> {
        let scratch = tempfile::tempdir().unwrap();
        let dest = scratch.path().join("x");
        export::export(&self.data(), &dest, &Scope::All, false).unwrap();
        let mut files = Vec::new();
        collect(&dest, &dest, &mut files);
        files.retain(|(name, _)| name != MANIFEST_FILE);
        let mut cas = Vec::new();
        collect(&self.data().join("blobs"), &self.data().join("blobs"), &mut cas);
        files.extend(cas.into_iter().filter(|(name, _)| !name.starts_with(".tmp")));
        files
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.service.store().shutdown();
    }
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let name = path.strip_prefix(root).unwrap().display().to_string();
            out.push((name, fs::read(&path).unwrap()));
        }
    }
}

fn lines(archive: &Path, file: &str) -> Vec<Value> {
    fs::read_to_string(archive.join(file))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("spec/export-v1/{name}.schema.json"));
    let schema: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

#[test]
fn every_exported_record_and_the_manifest_match_their_published_schemas() {
    let mut f = Fixture::new();
    f.project("prj_a");
    let doomed = f.put("prj_a", "doomed", "doomed secret text");
    f.ok(
        "artifact.purge",
        &ctx("prj_a"),
        json!({"artifact_id": doomed.0, "reason": "leak"}),
    );
    let archive = f.export("archive", &Scope::All);
    let manifest: Value = serde_json::from_str(&fs::read_to_string(archive.join(MANIFEST_FILE)).unwrap()).unwrap();
    let validator = schema("manifest");
    assert!(
        validator.is_valid(&manifest),
        "{:?}",
        validator.iter_errors(&manifest).next().map(|e| e.to_string())
    );
    for file in &RECORD_FILES {
        let validator = schema(file.record_type);
        let records = lines(&archive, file.name);
        assert!(
            !records.is_empty(),
            "{} is empty: the fixture should cover every record type",
            file.name
        );
        for record in records {
            let error = validator.iter_errors(&record).next().map(|e| e.to_string());
            assert!(error.is_none(), "{}: {record}: {error:?}", file.name);
        }
    }
}

#[test]
fn merging_two_projects_into_a_third_store_keeps_their_ids_and_a_rerun_changes_nothing() {
    let mut a = Fixture::new();
    let ids_a = a.project("prj_a");
    let mut b = Fixture::new();
    let ids_b = b.project("prj_b");
    let mut c = Fixture::new();
    c.project("prj_c");
    let (archive_a, archive_b) = (a.export("a", &Scope::All), b.export("b", &Scope::All));
    let before = c.last_commit_seq();
    let report = c.service.store().import(&archive_a, Mode::Merge, false).unwrap();
    assert_eq!(
        report.imported[0] as i64,
        a.last_commit_seq(),
        "every event of A is new here"
    );
    assert_eq!(report.last_commit_seq, before + a.last_commit_seq());
    c.service.store().import(&archive_b, Mode::Merge, false).unwrap();
    assert_eq!(c.last_commit_seq(), before + a.last_commit_seq() + b.last_commit_seq());
    assert!(c.service.store().verify().unwrap().is_ok());
    for (source, id) in ids_a.iter().map(|id| (&a, id)).chain(ids_b.iter().map(|id| (&b, id))) {
        let op = if id.starts_with("art_") {
            "artifact.history"
        } else {
            "claim.history"
        };
        let field = if id.starts_with("art_") {
            "artifact_id"
        } else {
            "claim_id"
        };
        if id.starts_with("arev_") {
            continue;
        }
        let strip = |mut value: Value| {
            for revision in value["revisions"].as_array_mut().unwrap() {
                revision.as_object_mut().unwrap().remove("revision_commit_seq");
            }
            value
        };
        let request = json!({"request_id": "h", "op": op, "input": {field: id}});
        let theirs = source.service.handle_value(request.clone(), "t").result.unwrap();
        let ours = c.service.handle_value(request, "t").result.unwrap();
        assert_eq!(strip(theirs), strip(ours), "{id}");
    }
    let settled = c.fingerprint();
    let last = c.last_commit_seq();
    for archive in [&archive_a, &archive_b] {
        let again = c.service.store().import(archive, Mode::Merge, false).unwrap();
        assert!(again.imported.iter().all(|n| *n == 0), "{again:?}");
        assert_eq!(again.last_commit_seq, last);
    }
    assert_eq!(c.last_commit_seq(), last);
    assert!(c.fingerprint() == settled, "a second merge changed the store");
}

#[test]
fn an_id_that_exists_with_different_content_refuses_the_whole_merge() {
    let mut a = Fixture::new();
    let ids = a.project("prj_a");
    let first = a.export("first", &Scope::All);
    let c = Fixture::new();
    c.service.store().import(&first, Mode::Merge, false).unwrap();
    // A revises its artifact again: the same artifact id now holds other history.
    let current = ids[4].clone();
    a.ok(
        "artifact.revise",
        &ctx("prj_a"),
        json!({"artifact_id": ids[0], "if_revision": current, "content": {"type": "text", "data": "v3"}}),
    );
    let second = a.export("second", &Scope::All);
    let settled = c.fingerprint();
    let error = c.service.store().import(&second, Mode::Merge, false).unwrap_err();
    let StoreError::Archive(ArchiveError::Collision { count, first }) = &error else {
        panic!("{error}");
    };
    assert!(*count >= 1 && first.iter().any(|c| c.contains(&ids[0])), "{error}");
    assert!(c.fingerprint() == settled, "a refused merge changed the store");
    let body = crate::service::error_body(&crate::service::ServiceError::Store(error));
    assert_eq!(body.code, ErrorCode::InvalidRequest);
    assert_eq!(body.details["reason"], "import_collision");
}

#[test]
fn into_empty_refuses_a_store_that_holds_memory() {
    let mut a = Fixture::new();
    a.project("prj_a");
    let archive = a.export("a", &Scope::All);
    let error = a.service.store().import(&archive, Mode::IntoEmpty, false).unwrap_err();
    assert!(
        matches!(error, StoreError::Archive(ArchiveError::TargetNotEmpty(_))),
        "{error}"
    );
}

/// Copies an archive so each damage case starts from a good one.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn first_blob(archive: &Path) -> PathBuf {
    let dir = fs::read_dir(archive.join(BLOBS_DIR))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    fs::read_dir(dir).unwrap().flatten().next().unwrap().path()
}

#[test]
fn damaged_future_and_foreign_archives_are_refused_and_leave_the_target_unchanged() {
    let mut a = Fixture::new();
    a.project("prj_a");
    let good = a.export("good", &Scope::All);
    let mut c = Fixture::new();
    c.project("prj_c");
    let settled = c.fingerprint();
    type Damage = fn(&Path);
    let cases: Vec<(&str, Damage, ErrorCode)> = vec![
        (
            "truncated",
            |p| {
                let path = p.join("artifact_revisions.jsonl");
                let bytes = fs::read(&path).unwrap();
                fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            },
            ErrorCode::IntegrityError,
        ),
        (
            "tampered record, same size",
            |p| {
                let path = p.join("claim_revisions.jsonl");
                let text = fs::read_to_string(&path).unwrap().replacen("sqlite", "SQLITE", 1);
                fs::write(&path, text).unwrap();
            },
            ErrorCode::IntegrityError,
        ),
        (
            "tampered blob",
            |p| {
                let path = first_blob(p);
                let mut bytes = fs::read(&path).unwrap();
                bytes[0] ^= 1;
                fs::write(&path, bytes).unwrap();
            },
            ErrorCode::IntegrityError,
        ),
        (
            "missing blob",
            |p| fs::remove_file(first_blob(p)).unwrap(),
            ErrorCode::IntegrityError,
        ),
        (
            "future version",
            |p| {
                let path = p.join(MANIFEST_FILE);
                let text = fs::read_to_string(&path)
                    .unwrap()
                    .replace("\"format_version\": 1", "\"format_version\": 2");
                fs::write(&path, text).unwrap();
            },
            ErrorCode::UnsupportedVersion,
        ),
        (
            "no manifest",
            |p| fs::remove_file(p.join(MANIFEST_FILE)).unwrap(),
            ErrorCode::InvalidRequest,
        ),
        (
            "a record the format does not know",
            |p| {
                let path = p.join("events.jsonl");
                let text = fs::read_to_string(&path).unwrap().replacen("\"actor\"", "\"who\"", 1);
                fs::write(&path, text).unwrap();
                // Rewrite the manifest to match, so only the record is wrong.
                let bytes = fs::read(&path).unwrap();
                let mut manifest: Value = serde_json::from_slice(&fs::read(p.join(MANIFEST_FILE)).unwrap()).unwrap();
                manifest["files"][0]["blake3"] = json!(blake3::hash(&bytes).to_hex().to_string());
                manifest["files"][0]["bytes"] = json!(bytes.len());
                fs::write(p.join(MANIFEST_FILE), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
            },
            ErrorCode::InvalidRequest,
        ),
    ];
    for (label, damage, code) in cases {
        let broken = c.dir.path().join(label.replace(' ', "_"));
        copy_dir(&good, &broken);
        damage(&broken);
        let error = c.service.store().import(&broken, Mode::Merge, false).unwrap_err();
        let body = crate::service::error_body(&crate::service::ServiceError::Store(error));
        assert_eq!(body.code, code, "{label}: {}", body.message);
        assert!(
            c.fingerprint() == settled,
            "{label}: the refused import changed the store"
        );
        let target = c.dir.path().join(format!("fresh-{}", label.replace(' ', "_")));
        let error = fresh::import_into_new_data_dir(&broken, &target, false).unwrap_err();
        let body = crate::service::error_body(&crate::service::ServiceError::Store(error));
        assert_eq!(body.code, code, "{label} into a new directory: {}", body.message);
        assert!(!target.exists(), "{label}: the refused import created the target");
        let staging = fs::read_dir(c.dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(fresh::STAGING_PREFIX));
        assert!(!staging, "{label}: a staging directory was left behind");
    }
}

fn task_ctx(task: &str) -> Value {
    json!({"workspace_id": "wsp_port", "project_id": "prj_a", "task_id": task})
}

#[test]
fn a_scoped_export_holds_the_visible_scope_and_everything_it_references() {
    let mut f = Fixture::new();
    // Evidence may cite any project; a relation made at project level may name any task's claim.
    let foreign = f.put("prj_b", "b source", "b keeps a cited source");
    let unrelated = f.put("prj_c", "c secret", "nothing to do with a");
    let sibling = f.ok(
        "claim.assert",
        &task_ctx("t2"),
        json!({"claim_type": "fact", "statement": "t2 works alone"}),
    )["claim_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let hidden = f.ok(
        "claim.assert",
        &task_ctx("t2"),
        json!({"claim_type": "fact", "statement": "t2 keeps this to itself"}),
    )["claim_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let own = f.put("prj_a", "a source", "a keeps its own source");
    let claim = f.assert_claim("prj_a", "a cites b", &foreign);
    f.relate("prj_a", &claim.0, "supports", &sibling);
    f.assert_claim("prj_a", "a cites itself", &own);
    let scope = Scope::Visible {
        ambient: crate::store::scope::Owner {
            workspace_id: "wsp_port".to_owned(),
            project_id: "prj_a".to_owned(),
            task_id: Some("t1".to_owned()),
            component: None,
        },
        horizon: crate::protocol::Horizon::Ambient,
        reason: None,
    };
    let archive = f.export("scoped", &scope);
    let ids = |file: &str, key: &str| -> Vec<String> {
        lines(&archive, file)
            .iter()
            .map(|r| r[key].as_str().unwrap().to_owned())
            .collect()
    };
    let artifacts = ids("artifacts.jsonl", "artifact_id");
    assert!(
        artifacts.contains(&own.0) && artifacts.contains(&foreign.0),
        "{artifacts:?}"
    );
    assert!(!artifacts.contains(&unrelated.0));
    let claims = ids("claims.jsonl", "claim_id");
    assert_eq!(
        claims.len(),
        3,
        "a's two claims and the sibling task's claim its relation names: {claims:?}"
    );
    assert!(claims.contains(&sibling) && !claims.contains(&hidden));
    let target = f.dir.path().join("scoped-store");
    let report = fresh::import_into_new_data_dir(&archive, &target, false).unwrap();
    let events = lines(&archive, "events.jsonl").len() as i64;
    assert_eq!(report.last_commit_seq, events, "commit_seq is renumbered densely");
    let store = crate::store::Store::open(&target).unwrap();
    assert!(store.verify().unwrap().is_ok());
    store.shutdown();
}

#[test]
fn an_export_never_holds_purged_content_but_carries_the_tombstone_into_the_import() {
    let mut f = Fixture::new();
    let secret = "sk-live-7f3e9a0c55d1b2e4";
    let doomed = f.put("prj_a", "credentials", &format!("key = {secret}\n").repeat(3_000));
    let cited = f.assert_claim("prj_a", &format!("the key is {secret}"), &doomed);
    f.ok(
        "artifact.purge",
        &ctx("prj_a"),
        json!({"artifact_id": doomed.0, "reason": "leak"}),
    );
    f.ok(
        "claim.purge",
        &ctx("prj_a"),
        json!({"claim_id": cited.0, "reason": "leak"}),
    );
    let archive = f.export("after-purge", &Scope::All);
    let mut files = Vec::new();
    collect(&archive, &archive, &mut files);
    for (name, bytes) in &files {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{name} holds the secret"
        );
    }
    assert_eq!(lines(&archive, "tombstones.jsonl").len(), 2);
    let target = f.dir.path().join("imported");
    fresh::import_into_new_data_dir(&archive, &target, false).unwrap();
    let imported = Service::open(&target).unwrap();
    let response = imported.handle_value(
        json!({"request_id": "g", "op": "artifact.get", "input": {"artifact_id": doomed.0}}),
        "t",
    );
    let error = response.error.unwrap();
    assert_eq!(
        (error.code, error.details["state"].as_str()),
        (ErrorCode::NotFound, Some("purged"))
    );
    assert!(imported.store().has_purges());
    assert!(imported.store().verify().unwrap().is_ok());
    imported.store().shutdown();
}

mod postgres;
