//! The isolation sweep (issue 28): no byte of a foreign workspace reaches a credential
//! limited to other workspaces.
//!
//! [`plant`] writes, through an unrestricted (admin) exchange, an own workspace
//! ([`OWN_WORKSPACE`]) and a foreign one ([`FOREIGN_WORKSPACE`]) holding the [`CANARIES`]: a
//! title, a content word, a claim statement, a purge reason and a provenance value, plus one
//! claim of the own workspace that cites a foreign artifact revision (evidence is the only
//! link that may cross workspaces). [`sweep`] then runs, through the restricted exchange,
//! the requests [`requests`] derives for every operation of [`Operation::ALL`] (an exhaustive
//! `match`, so a new operation joins by construction): reads, browses, recall, context.build
//! and search with the canary words, foreign ids, foreign pins and foreign evidence spans as
//! inputs, writes aimed at foreign entities, and the store-wide operations. It asserts that
//! no response contains a canary or a foreign id that its request did not already carry (the
//! locator of the cited revision is part of the visible claim), and never `INTERNAL_ERROR`.
//!
//! The exchanges are closures over a whole envelope, so the same sweep runs in process
//! (`Service::with_grant`, on SQLite and PostgreSQL) and over `tls://` with real
//! certificates (`tests/remote.rs`).

use serde_json::{Value, json};

use crate::protocol::Operation;

/// The workspace the restricted credential may use.
pub const OWN_WORKSPACE: &str = "wsp_a";
/// The workspace only the admin may use.
pub const FOREIGN_WORKSPACE: &str = "wsp_b";

/// Words stored only in the foreign workspace: title, content word, statement word, purge
/// reason word, provenance value.
pub const CANARIES: [&str; 5] = [
    "quokkatitlecanary",
    "xylophonecontentcanary",
    "zeppelinstatementcanary",
    "narwhalpurgecanary",
    "wombatprovenancecanary",
];

/// An envelope in, an envelope out (as JSON).
pub type Exchange<'a> = &'a dyn Fn(&Value) -> Value;

/// The ids [`plant`] wrote.
#[derive(Clone, Debug)]
pub struct Planted {
    /// Own workspace: an artifact and a claim.
    pub own_artifact: String,
    pub own_claim: String,
    /// The own claim that cites [`Planted::cited_artifact`] (a foreign revision).
    pub citing_claim: String,
    /// The foreign artifact the citing claim cites, and its revision: the locator is the
    /// only thing of it a restricted response may carry.
    pub cited_artifact: String,
    pub cited_revision: String,
    /// Foreign ids no restricted response may carry unless its request did.
    pub foreign_ids: Vec<String>,
    /// A foreign artifact that was purged, and its revision.
    pub purged_artifact: String,
    pub purged_revision: String,
    /// A foreign claim and its revision.
    pub foreign_claim: String,
    pub foreign_claim_revision: String,
}

pub fn own_context() -> Value {
    json!({"workspace_id": OWN_WORKSPACE, "project_id": "prj_a"})
}

pub fn foreign_context() -> Value {
    json!({"workspace_id": FOREIGN_WORKSPACE, "project_id": "prj_b"})
}

fn mutation(op: &str, key: &str, context: &Value, input: Value) -> Value {
    json!({"v": 1, "request_id": "req_iso", "op": op, "idempotency_key": key, "context": context, "input": input})
}

fn read(op: &str, context: &Value, input: Value) -> Value {
    json!({"v": 1, "request_id": "req_iso", "op": op, "context": context, "input": input})
}

fn ok(exchange: Exchange<'_>, request: &Value) -> Value {
    let response = exchange(request);
    assert_eq!(response["ok"], true, "{request}\n{response}");
    response["result"].clone()
}

fn text(title: &str, data: &str) -> Value {
    json!({"kind": "note", "title": title, "content": {"type": "text", "data": data}})
}

/// The own workspace's rows: the same in every store a score comparison uses. Returns the
/// own artifact and claim ids.
pub fn plant_own(admin: Exchange<'_>) -> (String, String) {
    let own = own_context();
    let artifact = ok(
        admin,
        &mutation(
            "artifact.put",
            "own-1",
            &own,
            text(
                "Billing exporter runbook",
                "The billing exporter deployment uses a blue green rollout. Restart the exporter after a deployment.",
            ),
        ),
    );
    ok(
        admin,
        &mutation(
            "artifact.put",
            "own-2",
            &own,
            text(
                "Exporter metrics",
                "The exporter publishes metrics for billing; a deployment password rotation is documented elsewhere.",
            ),
        ),
    );
    let claim = ok(
        admin,
        &mutation(
            "claim.assert",
            "own-3",
            &own,
            json!({"claim_type": "fact", "statement": "The billing exporter deployment runs nightly"}),
        ),
    );
    ok(
        admin,
        &mutation(
            "claim.assert",
            "own-4",
            &own,
            json!({"claim_type": "fact", "statement": "Exporter restarts follow every deployment"}),
        ),
    );
    (
        artifact["artifact_id"].as_str().unwrap().to_owned(),
        claim["claim_id"].as_str().unwrap().to_owned(),
    )
}

/// Foreign rows that share the own workspace's words (so that store-wide statistics would
/// move the own scores, and make `deployment` a generic word: more than 25 rows), without
/// canaries.
pub fn plant_foreign_noise(admin: Exchange<'_>) -> Vec<String> {
    let foreign = foreign_context();
    let mut ids = Vec::new();
    for n in 0..30 {
        let put = ok(
            admin,
            &mutation(
                "artifact.put",
                &format!("noise-{n}"),
                &foreign,
                text(
                    "Deployment notes",
                    "deployment deployment deployment of the password vault; the exporter is elsewhere",
                ),
            ),
        );
        ids.push(put["artifact_id"].as_str().unwrap().to_owned());
        ids.push(put["revision_id"].as_str().unwrap().to_owned());
    }
    ids
}

/// Plants both workspaces (see the module documentation).
pub fn plant(admin: Exchange<'_>) -> Planted {
    let (own_artifact, own_claim) = plant_own(admin);
    let mut foreign_ids = plant_foreign_noise(admin);
    let foreign = foreign_context();
    let [title, word, statement, reason, provenance] = CANARIES;
    let filler = "The vault keeps other material here. ".repeat(40);
    let cited = ok(
        admin,
        &mutation(
            "artifact.put",
            "foreign-1",
            &foreign,
            json!({"kind": "note", "title": format!("Vault {title}"),
                   "content": {"type": "text", "data": format!("{filler}The billing exporter deployment password is {word}. {filler}")},
                   "provenance": {"source": provenance}}),
        ),
    );
    let cited_artifact = cited["artifact_id"].as_str().unwrap().to_owned();
    let cited_revision = cited["revision_id"].as_str().unwrap().to_owned();
    let foreign_claim = ok(
        admin,
        &mutation(
            "claim.assert",
            "foreign-2",
            &foreign,
            json!({"claim_type": "fact", "statement": format!("The exporter password is {statement}"),
                   "evidence": [{"artifact_id": cited_artifact, "revision_id": cited_revision, "start_byte": 0, "end_byte": 10}]}),
        ),
    );
    let purged = ok(
        admin,
        &mutation(
            "artifact.put",
            "foreign-3",
            &foreign,
            json!({"kind": "note", "title": "Old billing exporter deployment notes",
                   "content": {"type": "text", "data": format!("billing exporter deployment {word}")},
                   "provenance": {"source": provenance}}),
        ),
    );
    let purged_artifact = purged["artifact_id"].as_str().unwrap().to_owned();
    let purged_revision = purged["revision_id"].as_str().unwrap().to_owned();
    ok(
        admin,
        &mutation(
            "artifact.purge",
            "foreign-4",
            &foreign,
            json!({"artifact_id": purged_artifact, "reason": format!("erase {reason}")}),
        ),
    );
    // The own workspace cites the whole foreign revision (only an admin can write this).
    let citing = ok(
        admin,
        &mutation(
            "claim.assert",
            "own-5",
            &own_context(),
            json!({"claim_type": "fact", "statement": "The billing exporter deployment credentials are in the vault",
                   "evidence": [{"artifact_id": cited_artifact, "revision_id": cited_revision}]}),
        ),
    );
    let foreign_claim_id = foreign_claim["claim_id"].as_str().unwrap().to_owned();
    let foreign_claim_revision = foreign_claim["revision_id"].as_str().unwrap().to_owned();
    foreign_ids.extend([
        purged_artifact.clone(),
        purged_revision.clone(),
        foreign_claim_id.clone(),
        foreign_claim_revision.clone(),
    ]);
    Planted {
        own_artifact,
        own_claim,
        citing_claim: citing["claim_id"].as_str().unwrap().to_owned(),
        cited_artifact,
        cited_revision,
        foreign_ids,
        purged_artifact,
        purged_revision,
        foreign_claim: foreign_claim_id,
        foreign_claim_revision,
    }
}

/// What a sweep request must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Success.
    Ok,
    /// `SCOPE_VIOLATION` (outside the credential's workspaces).
    Refused,
    /// Anything but `INTERNAL_ERROR`.
    Any,
}

/// The queries the retrieval operations run: the canary words, foreign ids, and a query
/// that reaches the own claim citing foreign evidence with the foreign content's words.
pub fn queries(p: &Planted) -> Vec<String> {
    let mut queries: Vec<String> = CANARIES.iter().map(|c| (*c).to_owned()).collect();
    // Near-misses of the canaries (typo correction must not reveal the foreign spelling).
    queries.extend(CANARIES.iter().map(|c| c[..c.len() - 1].to_owned()));
    queries.push(format!("billing exporter deployment password {}", CANARIES[1]));
    queries.push("billing exporter deployment password vault".to_owned());
    queries.push(p.purged_revision.clone());
    queries.push(p.purged_artifact.clone());
    queries.push(format!("{} {}", p.foreign_claim, p.cited_artifact));
    queries
}

/// The sweep's requests for one operation. Exhaustive: a new operation must say here what a
/// restricted credential may do with it.
pub fn requests(op: Operation, p: &Planted) -> Vec<(Value, Expect)> {
    let own = own_context();
    let foreign = foreign_context();
    let key = |n: usize| format!("sweep-{}-{n}", op.as_str());
    let pinned = |pin: String| json!({"workspace_id": OWN_WORKSPACE, "project_id": "prj_a", "pins": [pin]});
    let foreign_pins = [
        pinned(p.cited_artifact.clone()),
        pinned(format!(
            "memoree://artifact/{}@{}",
            p.purged_artifact, p.purged_revision
        )),
    ];
    let name = op.as_str();
    let retrieval = |extra: Value| -> Vec<(Value, Expect)> {
        let mut out = Vec::new();
        for query in queries(p) {
            let mut input = json!({"query": query, "horizon": "workspace", "reason": "isolation sweep"});
            if let (Value::Object(map), Value::Object(more)) = (&mut input, &extra) {
                map.extend(more.clone());
            }
            out.push((read(name, &own, input.clone()), Expect::Ok));
            for context in &foreign_pins {
                out.push((read(name, context, input.clone()), Expect::Refused));
            }
        }
        out.push((read(name, &foreign, json!({"query": CANARIES[0]})), Expect::Refused));
        out.push((
            read(
                name,
                &own,
                json!({"query": CANARIES[0], "horizon": "personal", "reason": "sweep"}),
            ),
            Expect::Refused,
        ));
        out
    };
    let foreign_artifacts = [&p.cited_artifact, &p.purged_artifact];
    match op {
        Operation::ContextResolve | Operation::Capabilities | Operation::Instructions | Operation::Schema => {
            vec![(read(name, &own, json!({})), Expect::Ok)]
        }
        Operation::Doctor | Operation::Verify | Operation::Reindex => {
            vec![(read(name, &own, json!({})), Expect::Refused)]
        }
        Operation::BackupCreate => vec![(
            read(name, &own, json!({"destination": "/nonexistent/isolation-backup"})),
            Expect::Refused,
        )],
        Operation::Import => vec![(
            mutation(
                name,
                &key(0),
                &own,
                json!({"source": "/nonexistent/archive", "mode": "merge"}),
            ),
            Expect::Refused,
        )],
        Operation::ArtifactPut => vec![
            (
                mutation(name, &key(0), &own, text("Sweep note", "a note of the own workspace")),
                Expect::Ok,
            ),
            (
                mutation(name, &key(1), &foreign, text("x", "y")),
                Expect::Refused,
            ),
            (
                mutation(name, &key(2), &foreign_pins[0], text("x", "y")),
                Expect::Refused,
            ),
        ],
        Operation::ArtifactGet => {
            let mut out = vec![(
                read(name, &own, json!({"artifact_id": p.own_artifact, "include_content": true})),
                Expect::Ok,
            )];
            for artifact in foreign_artifacts {
                out.push((
                    read(name, &own, json!({"artifact_id": artifact, "include_content": true})),
                    Expect::Refused,
                ));
            }
            out.push((
                read(name, &own, json!({"artifact_id": p.cited_artifact, "revision_id": p.cited_revision})),
                Expect::Refused,
            ));
            out.push((
                read(name, &own, json!({"artifact_id": p.purged_artifact, "revision_id": p.purged_revision})),
                Expect::Refused,
            ));
            out
        }
        Operation::CitationGet => {
            let cite = |artifact: &str, revision: &str, range: &str| {
                read(name, &own, json!({"citation": format!("memoree://artifact/{artifact}@{revision}{range}")}))
            };
            vec![
                // The own artifact with a revision that does not exist: a citation error.
                (cite(&p.own_artifact, "arev_missing", "#0-4"), Expect::Any),
                // A foreign revision, ranged or not, existing, purged or made up: refused
                // before anything of it (media type, size, purge state) is read.
                (cite(&p.cited_artifact, &p.cited_revision, "#0-4"), Expect::Refused),
                (cite(&p.cited_artifact, &p.cited_revision, ""), Expect::Refused),
                (cite(&p.cited_artifact, &p.cited_revision, "#0-999999"), Expect::Refused),
                (cite(&p.cited_artifact, "arev_missing", "#0-4"), Expect::Refused),
                (cite(&p.purged_artifact, &p.purged_revision, "#0-4"), Expect::Refused),
            ]
        }
        Operation::ArtifactHistory => foreign_artifacts
            .iter()
            .map(|a| (read(name, &own, json!({"artifact_id": a})), Expect::Refused))
            .collect(),
        Operation::ArtifactRevise => foreign_artifacts
            .iter()
            .enumerate()
            .map(|(n, a)| {
                (
                    mutation(
                        name,
                        &key(n),
                        &own,
                        json!({"artifact_id": a, "if_revision": p.cited_revision, "content": {"type": "text", "data": "x"}}),
                    ),
                    Expect::Refused,
                )
            })
            .collect(),
        Operation::ArtifactForget | Operation::ArtifactPurge => foreign_artifacts
            .iter()
            .enumerate()
            .map(|(n, a)| {
                (
                    mutation(name, &key(n), &own, json!({"artifact_id": a, "reason": "sweep"})),
                    Expect::Refused,
                )
            })
            .collect(),
        Operation::ClaimAssert => vec![
            (
                mutation(
                    name,
                    &key(0),
                    &own,
                    json!({"claim_type": "fact", "statement": "a claim of the own workspace"}),
                ),
                Expect::Ok,
            ),
            (
                mutation(
                    name,
                    &key(1),
                    &own,
                    json!({"claim_type": "fact", "statement": "x",
                           "evidence": [{"artifact_id": p.cited_artifact, "revision_id": p.cited_revision, "start_byte": 0, "end_byte": 4}]}),
                ),
                Expect::Refused,
            ),
            (
                mutation(
                    name,
                    &key(2),
                    &own,
                    json!({"claim_type": "fact", "statement": "x",
                           "evidence": [{"artifact_id": p.purged_artifact, "revision_id": p.purged_revision}]}),
                ),
                Expect::Refused,
            ),
        ],
        Operation::ClaimGet => vec![
            (read(name, &own, json!({"claim_id": p.own_claim})), Expect::Ok),
            (read(name, &own, json!({"claim_id": p.citing_claim})), Expect::Ok),
            (read(name, &own, json!({"claim_id": p.foreign_claim})), Expect::Refused),
            (
                read(
                    name,
                    &own,
                    json!({"claim_id": p.foreign_claim, "revision_id": p.foreign_claim_revision}),
                ),
                Expect::Refused,
            ),
        ],
        Operation::ClaimHistory => vec![
            (read(name, &own, json!({"claim_id": p.citing_claim})), Expect::Ok),
            (read(name, &own, json!({"claim_id": p.foreign_claim})), Expect::Refused),
        ],
        Operation::ClaimRevise => vec![(
            mutation(
                name,
                &key(0),
                &own,
                json!({"claim_id": p.foreign_claim, "if_revision": p.foreign_claim_revision, "statement": "x"}),
            ),
            Expect::Refused,
        )],
        Operation::ClaimRetract | Operation::ClaimPurge => vec![(
            mutation(name, &key(0), &own, json!({"claim_id": p.foreign_claim, "reason": "sweep"})),
            Expect::Refused,
        )],
        Operation::RelationPut => vec![(
            mutation(
                name,
                &key(0),
                &own,
                json!({"source_type": "claim", "source_id": p.own_claim, "relation": "supports",
                       "target_type": "claim", "target_id": p.foreign_claim}),
            ),
            Expect::Refused,
        )],
        Operation::RelationList => vec![
            (
                read(
                    name,
                    &own,
                    json!({"entity_type": "claim", "entity_id": p.citing_claim, "horizon": "workspace", "reason": "sweep"}),
                ),
                Expect::Ok,
            ),
            (
                read(
                    name,
                    &own,
                    json!({"entity_type": "artifact", "entity_id": p.cited_artifact, "horizon": "workspace", "reason": "sweep"}),
                ),
                Expect::Any,
            ),
        ],
        Operation::ConflictList => vec![(
            read(name, &own, json!({"horizon": "workspace", "reason": "sweep", "include_stale": true})),
            Expect::Ok,
        )],
        Operation::Search => retrieval(json!({"include_historical": true})),
        Operation::MemoryRecall => retrieval(json!({"max_excerpt_bytes": 256})),
        Operation::MemoryProbe => retrieval(json!({"max_leads": 8})),
        Operation::MemoryRetrieve => retrieval(json!({"max_claims": 1, "profile": true})),
        Operation::ContextBuild => retrieval(json!({})),
        Operation::ArtifactList => vec![(
            read(name, &own, json!({"horizon": "workspace", "reason": "sweep"})),
            Expect::Ok,
        )],
        Operation::ClaimList => vec![
            (
                read(name, &own, json!({"horizon": "workspace", "reason": "sweep", "revisions": "all"})),
                Expect::Any,
            ),
            (
                read(
                    name,
                    &own,
                    json!({"horizon": "workspace", "reason": "sweep", "cites_artifact_id": p.cited_artifact}),
                ),
                Expect::Ok,
            ),
            (
                read(
                    name,
                    &own,
                    json!({"horizon": "workspace", "reason": "sweep", "cites_artifact_id": p.purged_artifact}),
                ),
                Expect::Ok,
            ),
        ],
        Operation::EventList => vec![
            (read(name, &own, json!({"horizon": "workspace", "reason": "sweep"})), Expect::Ok),
            (
                read(
                    name,
                    &own,
                    json!({"horizon": "workspace", "reason": "sweep", "entity_type": "artifact", "entity_id": p.purged_artifact}),
                ),
                Expect::Any,
            ),
        ],
    }
}

/// Checks one response: its expectation, and no canary or foreign id that the request did
/// not carry.
pub fn check(request: &Value, response: &Value, expect: Expect, p: &Planted) {
    let code = response["error"]["code"].as_str().unwrap_or("");
    assert_ne!(code, "INTERNAL_ERROR", "{request}\n{response}");
    match expect {
        Expect::Ok => assert_eq!(response["ok"], true, "{request}\n{response}"),
        Expect::Refused => assert_eq!(code, "SCOPE_VIOLATION", "{request}\n{response}"),
        Expect::Any => {}
    }
    check_text(&request.to_string(), &response.to_string(), p);
}

/// No canary or foreign id in `answered` unless `asked` carried it (for any response: an
/// envelope, an inspector page).
pub fn check_text(asked: &str, answered: &str, p: &Planted) {
    let secrets = CANARIES
        .iter()
        .map(|c| (*c).to_owned())
        .chain(p.foreign_ids.iter().cloned())
        .chain(["wsp_b".to_owned(), "prj_b".to_owned()]);
    for secret in secrets {
        if !asked.contains(&secret) {
            assert!(
                !answered.contains(&secret),
                "{secret:?} leaked\nasked: {asked}\nanswered: {answered}"
            );
        }
    }
}

/// Runs every request of every operation through `restricted` and checks each response.
/// Returns how many requests ran.
pub fn sweep(restricted: Exchange<'_>, p: &Planted) -> usize {
    let mut ran = 0;
    for op in Operation::ALL {
        for (request, expect) in requests(op, p) {
            let response = restricted(&request);
            check(&request, &response, expect, p);
            ran += 1;
        }
    }
    ran
}

/// Every `score` in a result, in document order, with the title or statement next to it
/// (ids differ between stores; the planted texts do not), and every `query_analysis` and
/// `qualification` (unit weights, generic words, corrections).
pub fn scores(result: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                // What the plan made of the query: unit weights, `generic`, corrections.
                for key in ["query_analysis", "qualification"] {
                    if let Some(found) = map.get(key) {
                        out.push((key.to_owned(), found.to_string()));
                    }
                }
                if let Some(score) = map.get("score") {
                    let label = map
                        .get("title")
                        .or_else(|| map.get("statement"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    out.push((label, score.to_string()));
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(result, &mut out);
    out
}

/// The own-workspace retrieval results whose scores must not depend on foreign rows:
/// search, recall and context.build for queries over the own workspace's words.
pub fn own_scores(restricted: Exchange<'_>) -> Vec<(String, String)> {
    let own = own_context();
    let mut out = Vec::new();
    for query in [
        "billing exporter deployment",
        "deployment password",
        "exporter",
        "deployment restart",
        // `vault` and `deployment` are frequent only in the foreign rows, `vaultt` a typo of
        // a word only they hold.
        "vaultt password",
        "deployment vault exporter",
    ] {
        for op in ["search", "memory.recall", "context.build"] {
            let result = ok(
                restricted,
                &read(
                    op,
                    &own,
                    // Without the recency bonus, which moves with the seconds between write and read.
                    json!({"query": query, "horizon": "workspace", "reason": "scores", "recency": {"enabled": false}}),
                ),
            );
            out.push((format!("{op} {query}"), String::new()));
            out.extend(scores(&result));
        }
    }
    out
}
