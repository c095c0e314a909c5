//! The crash-test harness: a seeded workload of mixed mutations from several clients, a
//! ledger of what the daemon acknowledged, and the checks that compare the ledger with the
//! store after a restart.
//!
//! Only an `ok` envelope puts a mutation in the acknowledged ledger. A request that was in
//! flight when the daemon died is *unknown*: after the restart the harness first looks in
//! the database whether it was applied (completely or not at all, never half), then sends it
//! again with the same key, and the replay's `created` must agree with what the database
//! said.
//!
//! Every client owns the entities it creates and works on them sequentially, so the state
//! it builds its next request from is exact and every generated request is valid: any
//! failure envelope is a bug. Clients share "anchor" claims (never retracted or superseded)
//! as cross-client `contradicts` targets, so conflict cases span clients.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use memoree::client::ClientError;
use memoree::client::socket::{SocketClient, SocketSession};
use memoree::paths::Endpoint;
use memoree::protocol::Response;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Value, json};

/// The explicit context every torture request writes in.
pub fn context() -> Value {
    json!({"workspace_id": "wsp_torture", "project_id": "prj_torture"})
}

/// A mutation request document under `key`.
pub fn mutation_request(op: &str, key: &str, input: Value) -> Value {
    json!({
        "v": 1,
        "request_id": format!("req_{key}"),
        "op": op,
        "idempotency_key": key,
        "context": context(),
        "input": input,
    })
}

/// A read request document.
pub fn read_request(op: &str, input: Value) -> Value {
    json!({"v": 1, "request_id": format!("req_{op}"), "op": op, "context": context(), "input": input})
}

/// A small, seedable PRNG (xorshift64*, seeded through splitmix64): enough for workloads,
/// no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)).max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// An independent generator derived from this one.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// A positive number from the environment, or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a non-negative integer, got {value:?}")),
        Err(_) => default,
    }
}

/// The seed named by `name`, or one derived from the clock (print it to reproduce a run).
pub fn seed_from_env(name: &str) -> u64 {
    let clock = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    env_number(name, clock)
}

const WORDS: &[&str] = &[
    "ledger",
    "durable",
    "socket",
    "frame",
    "commit",
    "journal",
    "replay",
    "evidence",
    "anchor",
    "revision",
    "conflict",
    "storage",
    "writer",
    "group",
    "savepoint",
    "kernel",
    "signal",
    "restart",
    "blob",
    "digest",
];

/// `lo..=hi` bytes of ASCII words starting with `tag` (every byte offset is a valid span
/// boundary).
pub fn text(rng: &mut Rng, tag: &str, lo: usize, hi: usize) -> String {
    let len = rng.between(lo, hi);
    let mut out = String::with_capacity(len + 16);
    out.push_str(tag);
    while out.len() < len {
        out.push(' ');
        out.push_str(WORDS[rng.below(WORDS.len())]);
    }
    out.truncate(len);
    out
}

/// The six mutating operations of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    ArtifactPut,
    ArtifactRevise,
    ClaimAssert,
    ClaimRevise,
    ClaimRetract,
    RelationPut,
}

impl Op {
    pub const ALL: [Op; 6] = [
        Op::ArtifactPut,
        Op::ArtifactRevise,
        Op::ClaimAssert,
        Op::ClaimRevise,
        Op::ClaimRetract,
        Op::RelationPut,
    ];

    pub fn wire(self) -> &'static str {
        match self {
            Op::ArtifactPut => "artifact.put",
            Op::ArtifactRevise => "artifact.revise",
            Op::ClaimAssert => "claim.assert",
            Op::ClaimRevise => "claim.revise",
            Op::ClaimRetract => "claim.retract",
            Op::RelationPut => "relation.put",
        }
    }

    /// Relative frequency in the workload.
    fn weight(self) -> usize {
        match self {
            Op::ArtifactPut => 24,
            Op::ArtifactRevise => 10,
            Op::ClaimAssert => 22,
            Op::ClaimRevise => 14,
            Op::ClaimRetract => 8,
            Op::RelationPut => 22,
        }
    }
}

/// A relation edge as the unique 5-tuple minus the endpoint types (fixed per relation here).
type Edge = (String, &'static str, String);

/// What applying a mutation does to its client's view.
#[derive(Clone, Debug)]
enum Effect {
    NewArtifact { len: usize },
    ReviseArtifact { index: usize, len: usize },
    NewClaim { anchor: bool },
    ReviseClaim { index: usize },
    RetractClaim { index: usize },
    NewEdge { edge: Edge, superseded: Option<usize> },
}

/// One logical mutation: its key, its request document and what it means.
#[derive(Clone, Debug)]
pub struct Mutation {
    pub key: String,
    pub op: Op,
    pub request: Value,
    /// The artifact text a put or revise sends.
    pub content: Option<String>,
    effect: Effect,
}

/// An acknowledged mutation with the envelope that acknowledged it.
#[derive(Clone, Debug)]
pub struct Ack {
    pub mutation: Mutation,
    pub response: Response,
}

impl Ack {
    pub fn result(&self) -> &Value {
        self.response
            .result
            .as_ref()
            .expect("an ok mutation envelope has a result")
    }

    pub fn commit_seq(&self) -> i64 {
        self.result()["commit_seq"].as_i64().expect("commit_seq")
    }

    /// The revision (or relation) the idempotency record must name.
    pub fn produced_id(&self) -> &str {
        let field = match self.mutation.op {
            Op::RelationPut => "relation_id",
            _ => "revision_id",
        };
        self.result()[field].as_str().expect("produced id")
    }

    /// The id of the logical entity the mutation created or changed.
    pub fn entity_id(&self) -> &str {
        let field = match self.mutation.op {
            Op::ArtifactPut | Op::ArtifactRevise => "artifact_id",
            Op::ClaimAssert | Op::ClaimRevise | Op::ClaimRetract => "claim_id",
            Op::RelationPut => "relation_id",
        };
        self.result()[field].as_str().expect("entity id")
    }
}

#[derive(Clone, Debug)]
struct ArtifactView {
    id: String,
    revision: String,
    len: usize,
}

#[derive(Clone, Debug)]
struct ClaimView {
    id: String,
    revision: String,
    terminal: bool,
    anchor: bool,
}

/// Claims any client may target with `contradicts`: never retracted or superseded.
pub type Anchors = Arc<Mutex<Vec<String>>>;

/// One client's view of the entities it owns, built only from acknowledgements.
#[derive(Clone, Debug)]
pub struct Client {
    pub index: usize,
    seq: u64,
    artifacts: Vec<ArtifactView>,
    claims: Vec<ClaimView>,
    edges: HashSet<Edge>,
    /// Recent external contents, re-put now and then to exercise CAS reuse.
    externals: Vec<String>,
}

impl Client {
    pub fn new(index: usize) -> Client {
        Client {
            index,
            seq: 0,
            artifacts: Vec::new(),
            claims: Vec::new(),
            edges: HashSet::new(),
            externals: Vec::new(),
        }
    }

    /// The next valid mutation for the current view.
    pub fn next(&mut self, rng: &mut Rng, anchors: &[String]) -> Mutation {
        let total: usize = Op::ALL.iter().map(|op| op.weight()).sum();
        loop {
            let mut pick = rng.below(total);
            let op = *Op::ALL
                .iter()
                .find(|op| {
                    if pick < op.weight() {
                        true
                    } else {
                        pick -= op.weight();
                        false
                    }
                })
                .expect("weights cover the range");
            self.seq += 1;
            let key = format!("t{}-{}", self.index, self.seq);
            if let Some(mutation) = self.build(op, key, rng, anchors) {
                return mutation;
            }
        }
    }

    fn content(&mut self, rng: &mut Rng, key: &str, external_percent: usize) -> String {
        if rng.chance(external_percent) {
            if !self.externals.is_empty() && rng.chance(15) {
                return self.externals[rng.below(self.externals.len())].clone();
            }
            let content = text(rng, key, 16 * 1024 + 1, 24 * 1024);
            if self.externals.len() >= 8 {
                self.externals.remove(0);
            }
            self.externals.push(content.clone());
            content
        } else {
            text(rng, key, 40, 3000)
        }
    }

    fn evidence(&self, rng: &mut Rng) -> Option<Value> {
        if self.artifacts.is_empty() {
            return None;
        }
        let artifact = &self.artifacts[rng.below(self.artifacts.len())];
        let start = rng.below(artifact.len);
        let end = (start + rng.between(1, 200)).min(artifact.len);
        Some(json!({
            "artifact_id": artifact.id, "revision_id": artifact.revision, "start_byte": start, "end_byte": end,
        }))
    }

    fn live_claims(&self, anchors_too: bool) -> Vec<usize> {
        (0..self.claims.len())
            .filter(|&i| !self.claims[i].terminal && (anchors_too || !self.claims[i].anchor))
            .collect()
    }

    fn build(&mut self, op: Op, key: String, rng: &mut Rng, anchors: &[String]) -> Option<Mutation> {
        let (input, content, effect) = match op {
            Op::ArtifactPut => {
                let content = self.content(rng, &key, 30);
                let input = json!({
                    "kind": "note", "title": format!("note {key}"), "media_type": "text/plain",
                    "content": {"type": "text", "data": content},
                });
                let effect = Effect::NewArtifact { len: content.len() };
                (input, Some(content), effect)
            }
            Op::ArtifactRevise => {
                if self.artifacts.is_empty() {
                    return None;
                }
                let index = rng.below(self.artifacts.len());
                let content = self.content(rng, &key, 20);
                let artifact = &self.artifacts[index];
                let input = json!({
                    "artifact_id": artifact.id, "if_revision": artifact.revision,
                    "content": {"type": "text", "data": content},
                });
                let effect = Effect::ReviseArtifact {
                    index,
                    len: content.len(),
                };
                (input, Some(content), effect)
            }
            Op::ClaimAssert => {
                let evidence = self.evidence(rng)?;
                let kinds = ["fact", "decision", "constraint", "observation"];
                let input = json!({
                    "claim_type": kinds[rng.below(kinds.len())],
                    "statement": text(rng, &format!("claim {key}"), 30, 200),
                    "confidence": 0.5,
                    "evidence": [evidence],
                });
                (input, None, Effect::NewClaim { anchor: rng.chance(25) })
            }
            Op::ClaimRevise => {
                let live = self.live_claims(true);
                if live.is_empty() {
                    return None;
                }
                let index = live[rng.below(live.len())];
                let evidence = self.evidence(rng)?;
                let claim = &self.claims[index];
                let input = json!({
                    "claim_id": claim.id, "if_revision": claim.revision,
                    "statement": text(rng, &format!("revised {key}"), 30, 200),
                    "evidence": [evidence],
                });
                (input, None, Effect::ReviseClaim { index })
            }
            Op::ClaimRetract => {
                let live = self.live_claims(false);
                if live.is_empty() {
                    return None;
                }
                let index = live[rng.below(live.len())];
                let input = json!({"claim_id": self.claims[index].id, "reason": format!("retracted by {key}")});
                (input, None, Effect::RetractClaim { index })
            }
            Op::RelationPut => {
                let (input, effect) = self.relation(rng, anchors)?;
                (input, None, effect)
            }
        };
        Some(Mutation {
            request: mutation_request(op.wire(), &key, input),
            key,
            op,
            content,
            effect,
        })
    }

    fn relation(&self, rng: &mut Rng, anchors: &[String]) -> Option<(Value, Effect)> {
        for _ in 0..8 {
            let roll = rng.below(100);
            let live = self.live_claims(true);
            let (source_type, source, relation, target_type, target, superseded) = if roll < 45 {
                // A contradiction with an own claim or another client's anchor.
                if live.is_empty() {
                    continue;
                }
                let source = self.claims[live[rng.below(live.len())]].id.clone();
                let target = if !anchors.is_empty() && rng.chance(40) {
                    anchors[rng.below(anchors.len())].clone()
                } else {
                    self.claims[live[rng.below(live.len())]].id.clone()
                };
                ("claim", source, "contradicts", "claim", target, None)
            } else if roll < 60 {
                let targets = self.live_claims(false);
                if live.is_empty() || targets.is_empty() {
                    continue;
                }
                let target = targets[rng.below(targets.len())];
                let source = self.claims[live[rng.below(live.len())]].id.clone();
                (
                    "claim",
                    source,
                    "supersedes",
                    "claim",
                    self.claims[target].id.clone(),
                    Some(target),
                )
            } else if roll < 80 {
                if self.claims.is_empty() || self.artifacts.is_empty() {
                    continue;
                }
                let source = self.claims[rng.below(self.claims.len())].id.clone();
                let target = self.artifacts[rng.below(self.artifacts.len())].id.clone();
                ("claim", source, "supports", "artifact", target, None)
            } else {
                if self.artifacts.len() < 2 {
                    continue;
                }
                let source = self.artifacts[rng.below(self.artifacts.len())].id.clone();
                let target = self.artifacts[rng.below(self.artifacts.len())].id.clone();
                ("artifact", source, "derived_from", "artifact", target, None)
            };
            let edge = (source.clone(), relation, target.clone());
            if source == target || self.edges.contains(&edge) {
                continue;
            }
            let input = json!({
                "source_type": source_type, "source_id": source, "relation": relation,
                "target_type": target_type, "target_id": target, "metadata": {"by": self.index},
            });
            return Some((input, Effect::NewEdge { edge, superseded }));
        }
        None
    }

    /// Applies an acknowledged mutation (or a resolved unknown one) to the view.
    pub fn apply(&mut self, mutation: &Mutation, result: &Value, anchors: &Anchors) {
        let text = |field: &str| result[field].as_str().expect(field).to_owned();
        match &mutation.effect {
            Effect::NewArtifact { len } => self.artifacts.push(ArtifactView {
                id: text("artifact_id"),
                revision: text("revision_id"),
                len: *len,
            }),
            Effect::ReviseArtifact { index, len } => {
                self.artifacts[*index].revision = text("revision_id");
                self.artifacts[*index].len = *len;
            }
            Effect::NewClaim { anchor } => {
                let id = text("claim_id");
                if *anchor {
                    anchors.lock().unwrap().push(id.clone());
                }
                self.claims.push(ClaimView {
                    id,
                    revision: text("revision_id"),
                    terminal: false,
                    anchor: *anchor,
                });
            }
            Effect::ReviseClaim { index } => self.claims[*index].revision = text("revision_id"),
            Effect::RetractClaim { index } => self.claims[*index].terminal = true,
            Effect::NewEdge { edge, superseded } => {
                self.edges.insert(edge.clone());
                if let Some(index) = superseded {
                    self.claims[*index].terminal = true;
                }
            }
        }
    }
}

/// What one client did during one load phase.
pub struct LoadOutcome {
    pub client: Client,
    pub rng: Rng,
    pub acks: Vec<Ack>,
    /// The request in flight when the connection broke.
    pub unknown: Option<Mutation>,
}

/// Sends valid mutations in sequence until the daemon stops answering.
pub fn drive(mut client: Client, mut rng: Rng, endpoint: Endpoint, anchors: Anchors) -> LoadOutcome {
    let mut session = SocketClient::new(endpoint).session();
    let mut acks = Vec::new();
    loop {
        let snapshot = anchors.lock().unwrap().clone();
        let mutation = client.next(&mut rng, &snapshot);
        match session.exchange_json(&mutation.request) {
            Ok(response) if response.ok => {
                client.apply(&mutation, response.result.as_ref().unwrap(), &anchors);
                acks.push(Ack { mutation, response });
            }
            Ok(response) => panic!(
                "client {}: the valid mutation {} was refused: {}\nrequest: {}",
                client.index,
                mutation.key,
                serde_json::to_string(&response).unwrap(),
                abbreviate(&mutation.request)
            ),
            Err(ClientError::Transport(_)) => {
                return LoadOutcome {
                    client,
                    rng,
                    acks,
                    unknown: Some(mutation),
                };
            }
            Err(error) => panic!("client {}: {} failed locally: {error}", client.index, mutation.key),
        }
    }
}

/// A request for messages, with long content cut.
pub fn abbreviate(request: &Value) -> String {
    let mut text = request.to_string();
    if text.len() > 600 {
        let mut cut = 600;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The result of a mutation envelope without `created`, for replay comparisons.
pub fn without_created(response: &Response) -> Value {
    let mut result = response.result.clone().unwrap_or(Value::Null);
    if let Some(object) = result.as_object_mut() {
        object.remove("created");
    }
    result
}

/// Checks that `replay` is the replay of the acknowledgement `original`.
pub fn check_replay(original: &Response, replay: &Response, key: &str) -> Result<(), String> {
    if !replay.ok {
        return Err(format!(
            "{key}: replay failed: {}",
            serde_json::to_string(replay).unwrap()
        ));
    }
    let created = replay
        .result
        .as_ref()
        .and_then(|r| r.get("created"))
        .and_then(Value::as_bool);
    if created != Some(false) {
        return Err(format!("{key}: replay reports created {created:?}"));
    }
    if replay.commit_seq != original.commit_seq {
        return Err(format!(
            "{key}: replay envelope commit_seq {:?}, original {:?}",
            replay.commit_seq, original.commit_seq
        ));
    }
    let (now, then) = (without_created(replay), without_created(original));
    if now != then {
        return Err(format!(
            "{key}: replay result differs\n  original: {then}\n  replay:   {now}"
        ));
    }
    Ok(())
}

/// Sends `request` and returns the envelope; transport failures are test failures here.
pub fn call(session: &mut SocketSession, request: &Value) -> Response {
    session
        .exchange_json(request)
        .unwrap_or_else(|e| panic!("{} failed: {e}", abbreviate(request)))
}

/// One idempotency record, by caller key.
#[derive(Clone, Debug)]
pub struct Record {
    pub operation: String,
    pub commit_seq: i64,
    /// The revision or relation id the compact replay recipe names.
    pub produced: Option<String>,
}

/// Row counts of the tables a mutation writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub artifacts: i64,
    pub artifact_revisions: i64,
    pub claims: i64,
    pub claim_revisions: i64,
    pub relations: i64,
    pub events: i64,
    pub commit_seq: i64,
    pub idempotency: i64,
}

impl Counts {
    /// What the store must hold for these idempotency records (or acknowledgements),
    /// given how many of each operation there are: every workload mutation writes exactly
    /// one event and one record, and these entity rows.
    pub fn expected(ops: &HashMap<Op, i64>) -> Counts {
        let n = |op| ops.get(&op).copied().unwrap_or(0);
        let total: i64 = ops.values().sum();
        Counts {
            artifacts: n(Op::ArtifactPut),
            artifact_revisions: n(Op::ArtifactPut) + n(Op::ArtifactRevise),
            claims: n(Op::ClaimAssert),
            claim_revisions: n(Op::ClaimAssert) + n(Op::ClaimRevise),
            relations: n(Op::RelationPut),
            events: total,
            commit_seq: total,
            idempotency: total,
        }
    }

    /// Rows beyond `expected`, summed over the entity tables.
    pub fn excess_over(&self, expected: &Counts) -> i64 {
        [
            self.artifacts - expected.artifacts,
            self.artifact_revisions - expected.artifact_revisions,
            self.claims - expected.claims,
            self.claim_revisions - expected.claim_revisions,
            self.relations - expected.relations,
        ]
        .iter()
        .map(|d| (*d).max(0))
        .sum()
    }
}

/// A query-only connection to a store's database, safe while the daemon runs (WAL).
pub struct Db(Connection);

impl Db {
    pub fn open(data_dir: &Path) -> Db {
        let conn = Connection::open_with_flags(
            data_dir.join("memoree.sqlite3"),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        conn.execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED;").unwrap();
        Db(conn)
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.0.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    pub fn counts(&self) -> Counts {
        let c = |table: &str| self.count(&format!("SELECT count(*) FROM {table}"));
        Counts {
            artifacts: c("artifacts"),
            artifact_revisions: c("artifact_revisions"),
            claims: c("claims"),
            claim_revisions: c("claim_revisions"),
            relations: c("relations"),
            events: c("events"),
            commit_seq: self.count("SELECT commit_seq FROM commit_state WHERE id = 1"),
            idempotency: c("idempotency"),
        }
    }

    /// Every idempotency record, by the caller's key (the part after the namespace).
    pub fn records(&self) -> HashMap<String, Record> {
        let mut stmt = self
            .0
            .prepare("SELECT scoped_key, operation, commit_seq, replay_json FROM idempotency")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        let mut records = HashMap::new();
        for (scoped, operation, commit_seq, replay) in rows {
            let key = scoped
                .split_once(':')
                .map_or(scoped.as_str(), |(_, key)| key)
                .to_owned();
            let recipe: Value = serde_json::from_str(&replay).unwrap_or(Value::Null);
            let produced = ["artifact_revision", "claim_revision", "relation"]
                .iter()
                .find_map(|field| recipe.get(*field).and_then(Value::as_str))
                .map(str::to_owned);
            let previous = records.insert(
                key.clone(),
                Record {
                    operation,
                    commit_seq,
                    produced,
                },
            );
            assert!(previous.is_none(), "two idempotency records for caller key {key}");
        }
        records
    }

    /// The event row at `commit_seq`: (entity_id, revision_id).
    pub fn event(&self, commit_seq: i64) -> Option<(String, Option<String>)> {
        self.0
            .query_row(
                "SELECT entity_id, revision_id FROM events WHERE commit_seq = ?1",
                [commit_seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .unwrap()
    }

    /// Whether the revision or relation `produced` exists and belongs to `entity`.
    pub fn holds(&self, op: Op, entity: &str, produced: &str) -> bool {
        let sql = match op {
            Op::ArtifactPut | Op::ArtifactRevise => {
                "SELECT count(*) FROM artifact_revisions WHERE artifact_id = ?1 AND id = ?2"
            }
            Op::ClaimAssert | Op::ClaimRevise | Op::ClaimRetract => {
                "SELECT count(*) FROM claim_revisions WHERE claim_id = ?1 AND id = ?2"
            }
            Op::RelationPut => "SELECT count(*) FROM relations WHERE id = ?1 AND id = ?2",
        };
        self.0
            .query_row(sql, [entity, produced], |r| r.get::<_, i64>(0))
            .unwrap()
            == 1
    }

    /// Violations of the conflict-case invariants, checked independently of `verify`.
    pub fn conflict_violations(&self) -> Vec<String> {
        let rules: &[(&str, &str)] = &[
            (
                "more than one open case for relation",
                "SELECT relation_id FROM conflict_cases WHERE state = 'open' GROUP BY relation_id HAVING count(*) > 1",
            ),
            (
                "open case not on the current revisions of two active claims",
                "SELECT cc.case_id FROM conflict_cases cc
                 JOIN claims s ON s.id = cc.source_claim_id JOIN claims t ON t.id = cc.target_claim_id
                 WHERE cc.state = 'open' AND (s.status != 'active' OR t.status != 'active'
                    OR s.current_revision_id != cc.source_revision_id OR t.current_revision_id != cc.target_revision_id)",
            ),
            (
                "live contradiction without an open case",
                "SELECT rel.id FROM relations rel JOIN claims s ON s.id = rel.source_id JOIN claims t ON t.id = rel.target_id
                 WHERE rel.relation = 'contradicts' AND s.status = 'active' AND t.status = 'active'
                   AND NOT EXISTS (SELECT 1 FROM conflict_cases cc WHERE cc.relation_id = rel.id AND cc.state = 'open')",
            ),
            (
                "case of a relation that is not a contradiction",
                "SELECT cc.case_id FROM conflict_cases cc JOIN relations rel ON rel.id = cc.relation_id
                 WHERE rel.relation != 'contradicts'",
            ),
        ];
        let mut found = Vec::new();
        for (what, sql) in rules {
            let mut stmt = self.0.prepare(sql).unwrap();
            let ids = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            found.extend(ids.into_iter().map(|id| format!("{what}: {id}")));
        }
        found
    }

    /// `(case_id, state)` of every open or stale case.
    pub fn listed_cases(&self) -> HashSet<(String, String)> {
        let mut stmt = self
            .0
            .prepare("SELECT case_id, state FROM conflict_cases WHERE state IN ('open', 'stale')")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<HashSet<_>>>()
            .unwrap()
    }
}

/// Every `(case_id, state)` that `conflict.list` with `include_stale` returns, all pages.
pub fn conflict_list(session: &mut SocketSession) -> HashSet<(String, String)> {
    let mut cases = HashSet::new();
    let mut before: Option<i64> = None;
    loop {
        let response = call(
            session,
            &read_request(
                "conflict.list",
                json!({"include_stale": true, "limit": 100, "before_case_sequence": before}),
            ),
        );
        assert!(response.ok, "conflict.list failed: {response:?}");
        let result = response.result.unwrap();
        for case in result["conflicts"].as_array().unwrap() {
            cases.insert((
                case["case_id"].as_str().unwrap().to_owned(),
                case["state"].as_str().unwrap().to_owned(),
            ));
        }
        match result["next_before_case_sequence"].as_i64() {
            Some(next) if result["truncated"] == true => before = Some(next),
            _ => return cases,
        }
    }
}

/// Runs `verify` and returns its issue lines (empty when clean).
pub fn verify_issues(session: &mut SocketSession) -> Vec<String> {
    let response = call(session, &read_request("verify", json!({})));
    assert!(response.ok, "verify failed: {response:?}");
    let result = response.result.unwrap();
    let issues: Vec<String> = result["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|issue| issue.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(result["ok"], issues.is_empty(), "{result}");
    issues
}

/// Reads back what `ack` wrote: the exact revision (with its content for artifacts) or the
/// relation from its source's side.
pub fn read_back(session: &mut SocketSession, ack: &Ack) -> Result<(), String> {
    let key = &ack.mutation.key;
    let result = ack.result();
    match ack.mutation.op {
        Op::ArtifactPut | Op::ArtifactRevise => {
            let response = call(
                session,
                &read_request(
                    "artifact.get",
                    json!({"artifact_id": ack.entity_id(), "revision_id": ack.produced_id(), "include_content": true}),
                ),
            );
            let got = response.result.as_ref().filter(|_| response.ok);
            let data = got.and_then(|r| r["content"]["data"].as_str());
            if data != ack.mutation.content.as_deref() {
                return Err(format!(
                    "{key}: artifact.get does not return the acknowledged content: {response:?}"
                ));
            }
        }
        Op::ClaimAssert | Op::ClaimRevise | Op::ClaimRetract => {
            let response = call(
                session,
                &read_request(
                    "claim.get",
                    json!({"claim_id": ack.entity_id(), "revision_id": ack.produced_id()}),
                ),
            );
            let got = response.result.as_ref().filter(|_| response.ok);
            if got.map(|r| &r["statement"]) != Some(&result["statement"]) {
                return Err(format!(
                    "{key}: claim.get does not return the acknowledged revision: {response:?}"
                ));
            }
        }
        Op::RelationPut => {
            let relation = result["relation"].as_str().unwrap();
            let mut before: Option<i64> = None;
            loop {
                let response = call(
                    session,
                    &read_request(
                        "relation.list",
                        json!({
                            "entity_type": result["source_type"], "entity_id": result["source_id"],
                            "direction": "outgoing", "relation": relation, "limit": 100,
                            "before_commit_seq": before,
                        }),
                    ),
                );
                let page = response
                    .result
                    .as_ref()
                    .filter(|_| response.ok)
                    .ok_or_else(|| format!("{key}: relation.list failed: {response:?}"))?;
                let listed = page["relations"].as_array().unwrap();
                let matching = listed
                    .iter()
                    .filter(|r| r["relation_id"] == result["relation_id"])
                    .count();
                if matching == 1 {
                    break;
                }
                match page["next_before_commit_seq"].as_i64() {
                    Some(next) if page["truncated"] == true => before = Some(next),
                    _ => return Err(format!("{key}: relation.list does not list {}", ack.produced_id())),
                }
            }
        }
    }
    Ok(())
}
