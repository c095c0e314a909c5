//! The hostile input sweep: generated invalid requests for every operation, each of which
//! must get its documented error code, a schema-valid envelope echoing the right
//! `request_id`, never `INTERNAL_ERROR`, never a panic, and never a partial write.
//!
//! The cases are derived, not listed: [`inputs`] walks every operation's published input
//! schema, [`envelope`] walks the request schema, and the byte limits come from
//! [`crate::protocol::limits`]. Only the rules a schema cannot express (cross-field rules,
//! content sizes, backup destinations, raw bytes) are tables, and those are small.
//!
//! One service instance serves the whole sweep; the 8 MiB cases run once each.

mod backup;
mod content;
mod cross;
mod envelope;
mod inputs;
mod raw;
mod recency;
mod spans;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Value, json};

use crate::protocol::{ErrorCode, Operation, Response, TRANSPORT_REQUEST_ID, limits, schema};
use crate::service::Service;

/// What a generated request must get back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A failure with exactly this code.
    Fail(ErrorCode),
    /// A value one byte over a byte limit: this code, and a message that names the limit.
    Oversize(ErrorCode),
    /// A value exactly at a limit: success, or a failure for some other reason than size.
    AtLimit,
    /// Whatever the operation decides, except `INTERNAL_ERROR`.
    NoInternal,
    /// The same outcome (success, or the same code) as the operation's base request.
    LikeBase,
    /// Success.
    Success,
}

/// The outcome of a base request: `None` for success.
type Outcome = Option<ErrorCode>;

/// Seeded entities the base requests point at.
pub(crate) struct Seeds {
    pub artifact_id: String,
    pub artifact_revision: String,
    /// Byte length of the seeded artifact's content.
    pub artifact_size: u64,
    pub claim_id: String,
    pub claim_revision: String,
}

/// Ids that never exist, so mutations of existing entities fail with `NOT_FOUND` after
/// validation instead of changing the store.
pub(crate) const MISSING_ARTIFACT: &str = "art_00000000000000000000SWEEP";
pub(crate) const MISSING_CLAIM: &str = "clm_00000000000000000000SWEEP";

/// The sweep: one service, a sandbox for filesystem cases, and the tally.
pub(crate) struct Sweep {
    pub root: PathBuf,
    pub data_dir: PathBuf,
    pub service: Service,
    pub seeds: Seeds,
    base_outcomes: BTreeMap<&'static str, Outcome>,
    counts: BTreeMap<&'static str, usize>,
    problems: Vec<String>,
    timings: Vec<(&'static str, std::time::Duration)>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

/// The ambient context of every base request.
pub(crate) fn main_context() -> Value {
    json!({"workspace_id": "wsp_sweep", "project_id": "prj_sweep"})
}

impl Sweep {
    fn new() -> Sweep {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let data_dir = root.join("data");
        let service = Service::open(&data_dir).unwrap();
        let mut sweep = Sweep {
            root,
            data_dir,
            service,
            seeds: Seeds {
                artifact_id: String::new(),
                artifact_revision: String::new(),
                artifact_size: 0,
                claim_id: String::new(),
                claim_revision: String::new(),
            },
            base_outcomes: BTreeMap::new(),
            counts: BTreeMap::new(),
            problems: Vec::new(),
            timings: Vec::new(),
            next_id: 0,
            _dir: dir,
        };
        sweep.seed();
        sweep
    }

    fn seed(&mut self) {
        let body = "The sweep artifact: hostile inputs must get documented codes.";
        let put = self.expect_ok(
            Operation::ArtifactPut,
            json!({"kind": "note", "title": "Sweep seed", "content": {"type": "text", "data": body}}),
        );
        self.seeds.artifact_id = put["artifact_id"].as_str().unwrap().to_owned();
        self.seeds.artifact_revision = put["revision_id"].as_str().unwrap().to_owned();
        self.seeds.artifact_size = body.len() as u64;
        let claim = self.expect_ok(
            Operation::ClaimAssert,
            json!({"claim_type": "fact", "statement": "The sweep seed claim exists"}),
        );
        self.seeds.claim_id = claim["claim_id"].as_str().unwrap().to_owned();
        self.seeds.claim_revision = claim["revision_id"].as_str().unwrap().to_owned();
        crate::store::portable::export::export(
            &self.data_dir,
            &self.archive(),
            &crate::store::portable::Scope::All,
            false,
        )
        .unwrap();
    }

    /// An export of the seeded store, the source of the base `import` request.
    pub fn archive(&self) -> PathBuf {
        self.root.join("seed-archive")
    }

    /// A fresh request id.
    pub fn request_id(&mut self) -> String {
        self.next_id += 1;
        format!("sweep-{}", self.next_id)
    }

    /// A well-formed envelope for `op` with a fresh request id (and key, for mutations)
    /// and the main context.
    pub fn envelope(&mut self, op: Operation, input: Value) -> Value {
        let request_id = self.request_id();
        let mut envelope = json!({
            "v": 1, "request_id": request_id, "op": op.wire_name(), "context": main_context(), "input": input,
        });
        if op.is_mutating() {
            envelope["idempotency_key"] = json!(format!("key-{request_id}"));
        }
        envelope
    }

    /// Serves a request that must succeed and returns its result.
    pub fn expect_ok(&mut self, op: Operation, input: Value) -> Value {
        let envelope = self.envelope(op, input);
        let response = self.service.handle_value(envelope.clone(), TRANSPORT_REQUEST_ID);
        assert!(response.ok, "{envelope} failed: {:?}", response.error);
        response.result.unwrap()
    }

    /// A base input for `op` that passes validation. Mutations of existing entities point
    /// at missing ids, so their base outcome is `NOT_FOUND` and nothing is written.
    pub fn base_input(&mut self, op: Operation) -> Value {
        let s = &self.seeds;
        let span =
            json!({"artifact_id": s.artifact_id, "revision_id": s.artifact_revision, "start_byte": 0, "end_byte": 5});
        match op {
            Operation::ContextResolve
            | Operation::Capabilities
            | Operation::Schema
            | Operation::Doctor
            | Operation::Verify
            | Operation::Reindex => json!({}),
            Operation::Instructions => json!({"format": "markdown"}),
            Operation::ArtifactPut => json!({
                "kind": "note", "title": "Swept", "media_type": "text/plain",
                "content": {"type": "text", "data": "hello sweep"}, "provenance": {"source": "sweep"}, "actor": "sweeper",
            }),
            Operation::ArtifactGet => json!({
                "artifact_id": s.artifact_id, "revision_id": s.artifact_revision, "include_content": true,
            }),
            Operation::CitationGet => json!({
                "citation": format!("memoree://artifact/{}@{}#0-5", s.artifact_id, s.artifact_revision), "max_bytes": 8192,
            }),
            Operation::ArtifactRevise => json!({
                "artifact_id": MISSING_ARTIFACT, "if_revision": "arev_sweep", "title": "Swept", "media_type": "text/plain",
                "content": {"type": "text", "data": "hello again"}, "provenance": {}, "actor": "sweeper",
            }),
            Operation::ArtifactHistory => {
                json!({"artifact_id": s.artifact_id, "limit": 10, "before_revision_number": 5})
            }
            Operation::ArtifactForget => json!({"artifact_id": MISSING_ARTIFACT, "reason": "sweep"}),
            Operation::ClaimAssert => json!({
                "claim_type": "fact", "statement": "Swept statement", "confidence": 0.5, "evidence": [span],
                "valid_from": "2020-01-01T00:00:00Z", "valid_until": "2099-01-01T00:00:00Z", "actor": "sweeper",
            }),
            Operation::ClaimGet => json!({"claim_id": s.claim_id, "revision_id": s.claim_revision}),
            Operation::ClaimHistory => json!({"claim_id": s.claim_id, "limit": 10, "before_revision_number": 3}),
            Operation::ClaimRevise => json!({
                "claim_id": MISSING_CLAIM, "if_revision": "crev_sweep", "statement": "Swept again", "confidence": 0.5,
                "evidence": [span], "actor": "sweeper",
            }),
            Operation::ClaimRetract => json!({"claim_id": MISSING_CLAIM, "reason": "sweep"}),
            Operation::RelationPut => json!({
                "source_type": "claim", "source_id": MISSING_CLAIM, "relation": "supports",
                "target_type": "artifact", "target_id": MISSING_ARTIFACT, "metadata": {"why": "sweep"},
            }),
            Operation::RelationList => json!({
                "entity_type": "artifact", "entity_id": s.artifact_id, "direction": "both", "relation": "supports",
                "horizon": "ambient", "reason": "sweep", "limit": 10, "before_commit_seq": 100,
            }),
            Operation::ConflictList => json!({
                "horizon": "ambient", "reason": "sweep", "include_stale": false, "limit": 10, "before_case_sequence": 5,
            }),
            Operation::Search => json!({
                "query": "sweep hostile", "horizon": "ambient", "reason": "sweep", "limit": 5, "include_historical": false,
                "min_commit_seq": 0, "recency": {"enabled": true},
            }),
            Operation::MemoryRecall => json!({
                "query": "sweep hostile", "horizon": "ambient", "reason": "sweep", "max_claims": 3, "max_artifact_refs": 3,
                "max_excerpt_bytes": 100, "min_commit_seq": 0, "recency": {"enabled": true},
            }),
            Operation::MemoryProbe => json!({
                "query": "sweep hostile", "original_query": "sweep hostile?", "horizon": "ambient", "reason": "sweep",
                "max_leads": 8, "min_commit_seq": 0, "recency": {"enabled": true},
            }),
            Operation::MemoryRetrieve => json!({
                "query": "sweep hostile", "reformulation": "hostile sweep words", "horizon": "ambient", "reason": "sweep",
                "max_claims": 3, "max_artifact_refs": 3, "max_excerpt_bytes": 100, "max_recovery_leads": 8,
                "max_recovery_bytes": 4096, "min_commit_seq": 0, "recency": {"enabled": true}, "profile": true,
            }),
            Operation::ContextBuild => json!({
                "query": "sweep hostile", "horizon": "ambient", "reason": "sweep", "limit": 5, "include_historical": false,
                "min_commit_seq": 0, "recency": {"enabled": true}, "max_bytes": 4096,
            }),
            Operation::ArtifactList => json!({
                "horizon": "ambient", "reason": "sweep", "kind": "note", "status": "active", "limit": 10,
                "before_commit_seq": 100,
            }),
            Operation::ClaimList => json!({
                "horizon": "ambient", "reason": "sweep", "claim_type": "fact", "status": "active",
                "temporal_state": "current", "cites_artifact_id": s.artifact_id, "cites_revision_id": s.artifact_revision,
                "revisions": "all", "limit": 10, "before_commit_seq": 100,
            }),
            Operation::EventList => json!({
                "horizon": "ambient", "reason": "sweep", "entity_type": "claim", "entity_id": s.claim_id, "limit": 10,
                "before_commit_seq": 100,
            }),
            Operation::BackupCreate => {
                let n = self.next_id + 1;
                json!({"destination": self.root.join("backups").join(format!("base-{n}")).to_str().unwrap()})
            }
            Operation::ArtifactPurge => json!({"artifact_id": MISSING_ARTIFACT, "reason": "sweep", "actor": "sweeper"}),
            Operation::ClaimPurge => json!({"claim_id": MISSING_CLAIM, "reason": "sweep", "actor": "sweeper"}),
            // Merging an export of the seeded store into itself changes nothing.
            Operation::Import => json!({"source": self.archive().to_str().unwrap(), "mode": "merge"}),
        }
    }

    /// Runs every base request once, records its outcome, and checks that no base fails
    /// validation (otherwise an expected `INVALID_REQUEST` would prove nothing).
    fn record_base_outcomes(&mut self) {
        for op in Operation::ALL {
            let input = self.base_input(op);
            let envelope = self.envelope(op, input);
            let response = self.service.handle_value(envelope.clone(), TRANSPORT_REQUEST_ID);
            let outcome = response.error_code();
            assert!(
                !matches!(outcome, Some(ErrorCode::InvalidRequest | ErrorCode::InternalError)),
                "the base request of {op} must pass validation: {envelope} -> {:?}",
                response.error
            );
            self.base_outcomes.insert(op.wire_name(), outcome);
        }
    }

    fn base_outcome(&self, envelope: &Value) -> Option<Outcome> {
        let op = envelope.get("op")?.as_str()?;
        self.base_outcomes.get(op).copied()
    }

    fn counters(&self) -> (i64, i64) {
        self.service
            .store()
            .read(|conn| {
                let seq = crate::store::last_commit_seq(conn)?;
                let keys: i64 = conn.query_row("SELECT count(*) FROM idempotency", [], |r| r.get(0))?;
                Ok((seq, keys))
            })
            .unwrap()
    }

    /// Serves one generated request given as a JSON value and checks it.
    pub fn check(&mut self, category: &'static str, label: &str, envelope: Value, expect: Expect) -> Response {
        let expected_id = expected_request_id(&envelope);
        let base = self.base_outcome(&envelope);
        let op = envelope
            .get("op")
            .and_then(Value::as_str)
            .and_then(Operation::from_wire_name);
        let service = &self.service;
        let before = self.counters();
        let served = catch_unwind(AssertUnwindSafe(|| {
            service.handle_value(envelope, TRANSPORT_REQUEST_ID)
        }));
        self.judge(category, label, op, served, &expected_id, expect, base, before)
    }

    /// Serves one generated request given as raw bytes and checks it.
    pub fn check_bytes(&mut self, category: &'static str, label: &str, bytes: &[u8], expect: Expect) -> Response {
        let document = crate::protocol::document::parse(bytes).ok();
        let expected_id = match &document {
            Some(document) if !document.duplicate.as_ref().is_some_and(|d| d.is_request_id()) => {
                expected_request_id(&document.value)
            }
            _ => TRANSPORT_REQUEST_ID.to_owned(),
        };
        let parsed: Option<Value> = document.map(|document| document.value);
        let op = parsed
            .as_ref()
            .and_then(|v| v.get("op"))
            .and_then(Value::as_str)
            .and_then(Operation::from_wire_name);
        let service = &self.service;
        let before = self.counters();
        let served = catch_unwind(AssertUnwindSafe(|| service.handle_json(bytes, TRANSPORT_REQUEST_ID)));
        self.judge(category, label, op, served, &expected_id, expect, None, before)
    }

    #[allow(clippy::too_many_arguments)]
    fn judge(
        &mut self,
        category: &'static str,
        label: &str,
        op: Option<Operation>,
        served: std::thread::Result<Response>,
        expected_id: &str,
        expect: Expect,
        base: Option<Outcome>,
        before: (i64, i64),
    ) -> Response {
        *self.counts.entry(category).or_default() += 1;
        let Ok(response) = served else {
            self.problems.push(format!("[{category}] {label}: PANICKED"));
            return Response::failure(
                expected_id,
                crate::protocol::ErrorBody::new(ErrorCode::InternalError, "panic"),
            );
        };
        let mut problems = Vec::new();
        if response.request_id != expected_id {
            problems.push(format!(
                "request_id {:?}, expected {expected_id:?}",
                response.request_id
            ));
        }
        let wire = serde_json::to_value(&response).unwrap();
        if let Err(violation) = schema::validate_response(&wire) {
            problems.push(format!("response violates the schema: {violation}"));
        }
        if let (Some(op), Some(result)) = (op, &response.result)
            && let Err(violation) = schema::validate_result(op, result)
        {
            problems.push(format!("{op} result violates the schema: {violation}"));
        }
        let code = response.error_code();
        let message = response.error.as_ref().map_or("", |e| e.message.as_str());
        if code == Some(ErrorCode::InternalError) {
            problems.push(format!("INTERNAL_ERROR: {message}"));
        }
        match expect {
            Expect::Fail(wanted) if code != Some(wanted) => {
                problems.push(format!("expected {wanted:?}, got {code:?}: {message}"));
            }
            Expect::Oversize(wanted) if code != Some(wanted) || !is_size_message(message) => {
                problems.push(format!("expected {wanted:?} naming the limit, got {code:?}: {message}"));
            }
            Expect::AtLimit if code.is_some() && is_size_message(message) => {
                problems.push(format!("a value at the limit was refused for its size: {message}"));
            }
            Expect::LikeBase => match base {
                Some(base) if base != code => {
                    problems.push(format!("expected the base outcome {base:?}, got {code:?}: {message}"));
                }
                None => problems.push("no base outcome for this request".to_owned()),
                _ => {}
            },
            Expect::Success if code.is_some() => problems.push(format!("expected success, got {code:?}: {message}")),
            _ => {}
        }
        let after = self.counters();
        let wrote = response.ok && op.is_some_and(Operation::is_mutating);
        if !wrote && after != before {
            problems.push(format!(
                "(commit_seq, idempotency keys) moved from {before:?} to {after:?} without a successful mutation"
            ));
        }
        for problem in problems {
            self.problems.push(format!("[{category}] {label}: {problem}"));
        }
        response
    }

    fn finish(self, started: Instant) {
        let report = self.service.store().verify().unwrap();
        assert!(report.is_ok(), "verify after the sweep: {:?}", report.issues);
        let total: usize = self.counts.values().sum();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "hostile input sweep: {total} requests in {:.2?}; per category: {:?}; phases: {:?}",
                started.elapsed(),
                self.counts,
                self.timings
            );
            if let Some(path) = std::env::var_os("MEMOREE_SWEEP_PROBLEMS") {
                std::fs::write(path, self.problems.join("\n")).unwrap();
            }
        }
        assert!(
            self.problems.is_empty(),
            "{} of {total} hostile requests misbehaved:\n{}",
            self.problems.len(),
            self.problems.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
        );
        assert!(total >= 2000, "the sweep tried only {total} requests");
    }
}

/// The `request_id` a response must carry: the request's own when it is a string of
/// 1..=256 bytes in an object, the transport fallback otherwise.
fn expected_request_id(envelope: &Value) -> String {
    envelope
        .get("request_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty() && id.len() <= limits::MAX_REQUEST_ID_BYTES)
        .unwrap_or(TRANSPORT_REQUEST_ID)
        .to_owned()
}

/// Whether a failure message is about a size limit.
fn is_size_message(message: &str) -> bool {
    message.contains("exceed")
}

/// Builds a string of exactly `bytes` bytes that starts with `prefix`. `multibyte` fills
/// with 2-, 3- and 4-byte letters, so a limit counted in characters would let it through.
pub(crate) fn sized(prefix: &str, bytes: usize, multibyte: bool) -> String {
    let mut out = String::with_capacity(bytes);
    out.push_str(&prefix[..prefix.floor_char_boundary(bytes)]);
    if multibyte {
        for c in ['é', '東', '𝔘'].into_iter().cycle() {
            if out.len() + c.len_utf8() > bytes {
                break;
            }
            out.push(c);
        }
    }
    while out.len() < bytes {
        out.push('a');
    }
    out
}

#[test]
fn hostile_inputs_get_their_documented_codes() {
    let started = Instant::now();
    let mut sweep = Sweep::new();
    sweep.record_base_outcomes();
    type Phase = (&'static str, fn(&mut Sweep));
    let phases: [Phase; 6] = [
        ("envelope", envelope::sweep),
        ("inputs", inputs::sweep),
        ("cross-field", cross::sweep),
        ("raw", raw::sweep),
        ("backup", backup::sweep),
        ("content", content::sweep),
    ];
    for (name, phase) in phases {
        let at = Instant::now();
        phase(&mut sweep);
        sweep.timings.push((name, at.elapsed()));
    }
    sweep.finish(started);
}

#[test]
fn sized_strings_have_exact_byte_lengths() {
    for bytes in [0, 1, 2, 3, 7, 256, 257, 4097] {
        for multibyte in [false, true] {
            let s = sized("text/", bytes, multibyte);
            assert_eq!(s.len(), bytes);
            if multibyte && bytes > 16 {
                assert!(s.chars().count() < bytes);
            }
        }
    }
}
