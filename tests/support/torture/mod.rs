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
//! This module is the workload and the ledger; `check` reads the store back and compares.
//!
//! Every client owns the entities it creates and works on them sequentially, so the state
//! it builds its next request from is exact and every generated request is valid: any
//! failure envelope is a bug. Clients share "anchor" claims (never retracted or superseded)
//! as cross-client `contradicts` targets, so conflict cases span clients.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use memoree::client::ClientError;
use memoree::client::socket::{SocketClient, SocketSession};
use memoree::paths::Endpoint;
use memoree::protocol::Response;
use serde_json::{Value, json};

mod check;

pub use check::*;

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
