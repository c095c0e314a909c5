//! The browse listings (`artifact.list`, `claim.list`, `event.list`) on PostgreSQL: the same
//! sequence of writes applied to an embedded store and to a PostgreSQL store lists the same
//! items, in the same order, with the same totals, cursors, filters, horizons and limits.
//!
//! Identifiers and timestamps differ between the two stores, so results are compared after
//! renaming every identifier by its first appearance and blanking every `*_at` field.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use crate::protocol::{Response, schema};
use crate::service::{Runtime, Service};
use crate::store::Store;
use crate::testkit::postgres::TestCluster;

static ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([a-z]+)_[0-9A-HJKMNP-TV-Z]{26}\b").unwrap());

/// One store and what its earlier writes answered.
struct Side {
    service: Service,
    results: RefCell<HashMap<String, Value>>,
    ids: RefCell<HashMap<String, String>>,
}

impl Side {
    fn new(service: Service) -> Side {
        Side {
            service,
            results: RefCell::default(),
            ids: RefCell::default(),
        }
    }

    /// Field `field` of the earlier result named `name`.
    fn of(&self, name: &str, field: &str) -> Value {
        self.results.borrow()[name][field].clone()
    }

    fn call(&self, request: Value) -> Response {
        let response = self.service.handle_value(request, "req_transport");
        let envelope = serde_json::to_value(&response).unwrap();
        schema::validate_response(&envelope)
            .unwrap_or_else(|v| panic!("response violates the schema: {v}\n{envelope}"));
        response
    }

    /// `value` with identifiers renamed in order of first appearance and times blanked.
    fn normalized(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => {
                let mut ids = self.ids.borrow_mut();
                let renamed = ID.replace_all(text, |c: &regex::Captures<'_>| {
                    let next = ids.len();
                    ids.entry(c[0].to_owned())
                        .or_insert_with(|| format!("{}#{next}", &c[1]))
                        .clone()
                });
                Value::String(renamed.into_owned())
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.normalized(v)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let v = if k.ends_with("_at") {
                            json!("<time>")
                        } else {
                            self.normalized(v)
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// An embedded store and a PostgreSQL store receiving the same requests.
struct Pair {
    _cluster: TestCluster,
    _dirs: [tempfile::TempDir; 2],
    sides: [Side; 2],
    next_key: RefCell<u64>,
}

/// `None` after reporting the test skipped when PostgreSQL is missing.
fn pair() -> Option<Pair> {
    let cluster = TestCluster::start()?;
    let url = cluster.create_database();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let sqlite = Service::open(&dirs[0].path().join("data")).unwrap();
    let postgres = Service::new(Store::open_postgres(&url, dirs[1].path()).unwrap(), Runtime::default());
    Some(Pair {
        _cluster: cluster,
        _dirs: dirs,
        sides: [Side::new(sqlite), Side::new(postgres)],
        next_key: RefCell::new(0),
    })
}

fn ctx(project: &str, task: Option<&str>) -> Value {
    let mut context = json!({"workspace_id": "wsp_test", "project_id": project});
    if let Some(task) = task {
        context["task_id"] = json!(task);
    }
    context
}

impl Pair {
    /// Runs `request` (built per side) on both stores, asserts their normalized answers are
    /// equal, and returns that answer and each side's raw result.
    fn both_raw(&self, request: impl Fn(&Side) -> Value) -> (Value, Vec<Option<Value>>) {
        let answers: Vec<(Option<Value>, Value)> = self
            .sides
            .iter()
            .map(|side| {
                let response = side.call(request(side));
                let normalized = side.normalized(&serde_json::to_value(&response).unwrap());
                (response.result.map(|r| serde_json::to_value(r).unwrap()), normalized)
            })
            .collect();
        assert_eq!(
            answers[0].1,
            answers[1].1,
            "SQLite and PostgreSQL answer differently to {}",
            request(&self.sides[0])
        );
        let answer = answers[0].1.clone();
        (answer, answers.into_iter().map(|(raw, _)| raw).collect())
    }

    fn both(&self, request: impl Fn(&Side) -> Value) -> Value {
        self.both_raw(request).0
    }

    /// A mutation on both stores, each side's result remembered as `name`.
    fn write(&self, name: &str, context: &Value, op: &str, input: impl Fn(&Side) -> Value) {
        let key = {
            let mut next = self.next_key.borrow_mut();
            *next += 1;
            format!("key-{next}")
        };
        let (answer, raw) = self.both_raw(|side| {
            json!({"request_id": "req_m", "op": op, "idempotency_key": key, "context": context, "input": input(side)})
        });
        assert_eq!(answer["ok"], true, "{op} failed: {answer}");
        for (side, result) in self.sides.iter().zip(raw) {
            side.results.borrow_mut().insert(name.to_owned(), result.unwrap());
        }
    }

    /// A listing on both stores; returns its normalized result (or error) envelope.
    fn list(&self, context: &Value, op: &str, input: impl Fn(&Side) -> Value) -> Value {
        self.both(|side| json!({"request_id": "req_r", "op": op, "context": context, "input": input(side)}))
    }

    /// Every page of a listing of `limit` items, following `next_before_commit_seq`.
    fn walk(&self, context: &Value, op: &str, items: &str, limit: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let page = self.list(context, op, |_| {
                let mut input = json!({"limit": limit});
                if !cursor.is_null() {
                    input["before_commit_seq"] = cursor.clone();
                }
                input
            });
            assert_eq!(page["ok"], true, "{page}");
            let result = &page["result"];
            seen.extend(result[items].as_array().unwrap().iter().cloned());
            match result.get("next_before_commit_seq") {
                Some(next) => cursor = next.clone(),
                None => return seen,
            }
        }
    }
}

/// The shared history: artifacts (one revised, one forgotten, one per task, one in another
/// project), claims (revised with and without evidence, future, expired, retracted,
/// contradicting), and a relation.
fn history(p: &Pair) {
    let main = ctx("prj_main", None);
    let task = ctx("prj_main", Some("tsk_1"));
    let other_task = ctx("prj_main", Some("tsk_2"));
    let elsewhere = ctx("prj_other", None);
    let put = |name: &str, context: &Value, kind: &str, text: &str| {
        let input = json!({"kind": kind, "title": text, "content": {"type": "text", "data": text}});
        p.write(name, context, "artifact.put", |_| input.clone());
    };
    put("note", &main, "note", "The cache TTL is 30 seconds.");
    put("design", &main, "design", "A design");
    put("gone", &main, "note", "Obsolete");
    put("task", &task, "note", "Task one's note");
    put("other_task", &other_task, "note", "Task two's note");
    put("elsewhere", &elsewhere, "note", "Another project");
    p.write("note_v2", &main, "artifact.revise", |s| {
        json!({"artifact_id": s.of("note", "artifact_id"), "if_revision": s.of("note", "revision_id"),
               "content": {"type": "text", "data": "The cache TTL is 45 seconds."}})
    });
    p.write(
        "forget",
        &main,
        "artifact.forget",
        |s| json!({"artifact_id": s.of("gone", "artifact_id"), "reason": "obsolete"}),
    );
    let claim = |name: &str, context: &Value, input: Value| p.write(name, context, "claim.assert", |_| input.clone());
    p.write("citing", &main, "claim.assert", |s| {
        json!({"claim_type": "fact", "statement": "TTL is 30 s",
               "evidence": [{"artifact_id": s.of("note", "artifact_id"), "revision_id": s.of("note", "revision_id"),
                             "start_byte": 4, "end_byte": 13}]})
    });
    p.write("citing_v2", &main, "claim.revise", |s| {
        json!({"claim_id": s.of("citing", "claim_id"), "if_revision": s.of("citing", "revision_id"),
               "statement": "TTL is thirty seconds"})
    });
    claim(
        "future",
        &main,
        json!({"claim_type": "decision", "statement": "future decision",
                                  "valid_from": "2999-01-01T00:00:00Z"}),
    );
    claim(
        "expired",
        &main,
        json!({"claim_type": "fact", "statement": "expired fact",
                                   "valid_until": "2000-01-01T00:00:00Z"}),
    );
    claim(
        "retracted",
        &main,
        json!({"claim_type": "fact", "statement": "retracted fact"}),
    );
    p.write(
        "retract",
        &main,
        "claim.retract",
        |s| json!({"claim_id": s.of("retracted", "claim_id"), "reason": "wrong"}),
    );
    claim("left", &main, json!({"claim_type": "fact", "statement": "left side"}));
    claim("right", &task, json!({"claim_type": "fact", "statement": "right side"}));
    claim(
        "far",
        &elsewhere,
        json!({"claim_type": "fact", "statement": "far away"}),
    );
    p.write("contradiction", &main, "relation.put", |s| {
        json!({"source_type": "claim", "source_id": s.of("left", "claim_id"), "relation": "contradicts",
               "target_type": "claim", "target_id": s.of("right", "claim_id"), "metadata": {}})
    });
}

/// Asserts a listing succeeded and returns its result.
fn ok(answer: Value) -> Value {
    assert_eq!(answer["ok"], true, "{answer}");
    answer["result"].clone()
}

#[test]
fn artifact_list_answers_the_same_on_postgresql_as_on_sqlite_for_every_filter_horizon_and_page() {
    let Some(p) = pair() else { return };
    history(&p);
    let main = ctx("prj_main", None);
    let task = ctx("prj_main", Some("tsk_1"));
    let all = ok(p.list(&main, "artifact.list", |_| json!({})));
    assert_eq!(all["total"], 5);
    for input in [
        json!({"status": "forgotten"}),
        json!({"status": "active", "kind": "note"}),
        json!({"kind": "design"}),
        json!({"kind": "nothing"}),
        json!({"horizon": "workspace", "reason": "audit"}),
        json!({"horizon": "personal", "reason": "audit", "limit": 1}),
    ] {
        p.list(&main, "artifact.list", |_| input.clone());
    }
    let in_task = ok(p.list(&task, "artifact.list", |_| json!({})));
    assert_eq!(in_task["total"], 4, "the other task's note is out of scope: {in_task}");
    let walked = p.walk(&main, "artifact.list", "artifacts", 2);
    assert_eq!(walked, all["artifacts"].as_array().unwrap().clone());
    for refused in [
        json!({"horizon": "workspace"}),
        json!({"limit": 1_000_000}),
        json!({"before_commit_seq": -1}),
    ] {
        assert_eq!(p.list(&main, "artifact.list", |_| refused.clone())["ok"], false);
    }
}

#[test]
fn claim_list_answers_the_same_on_postgresql_as_on_sqlite_for_status_validity_citations_and_pages() {
    let Some(p) = pair() else { return };
    history(&p);
    let main = ctx("prj_main", None);
    let all = ok(p.list(&main, "claim.list", |_| json!({})));
    assert_eq!(all["total"], 6);
    let statuses = ["active", "retracted", "conflicted"];
    for status in statuses {
        let listed = ok(p.list(&main, "claim.list", |_| json!({"status": status})));
        assert!(listed["total"].as_u64().unwrap() > 0, "{status}: {listed}");
    }
    for state in ["current", "future", "expired"] {
        let listed = ok(p.list(&main, "claim.list", |_| json!({"temporal_state": state})));
        assert!(listed["total"].as_u64().unwrap() > 0, "{state}: {listed}");
    }
    p.list(&main, "claim.list", |_| json!({"claim_type": "decision"}));
    let history = ok(p.list(&main, "claim.list", |_| json!({"revisions": "all"})));
    assert_eq!(history["total"], 7);
    let cited = ok(p.list(
        &main,
        "claim.list",
        |s| json!({"cites_revision_id": s.of("note", "revision_id"), "revisions": "all"}),
    ));
    assert_eq!(cited["total"], 1);
    assert_eq!(cited["claims"][0]["is_current_revision"], false);
    let current_citing = ok(p.list(
        &main,
        "claim.list",
        |s| json!({"cites_artifact_id": s.of("note", "artifact_id")}),
    ));
    assert_eq!(current_citing["total"], 0);
    p.list(&main, "claim.list", |s| {
        json!({"cites_artifact_id": s.of("note", "artifact_id"), "cites_revision_id": s.of("note", "revision_id"),
               "revisions": "all"})
    });
    p.list(&ctx("prj_main", Some("tsk_2")), "claim.list", |_| json!({}));
    p.list(
        &main,
        "claim.list",
        |_| json!({"horizon": "workspace", "reason": "audit"}),
    );
    // `evaluated_at` is blanked, so whole pages compare equal across the walk.
    let walked = p.walk(&main, "claim.list", "claims", 4);
    assert_eq!(walked, all["claims"].as_array().unwrap().clone());
}

#[test]
fn event_list_answers_the_same_on_postgresql_as_on_sqlite_for_every_entity_filter_and_page() {
    let Some(p) = pair() else { return };
    history(&p);
    let main = ctx("prj_main", None);
    let all = ok(p.list(&main, "event.list", |_| json!({"limit": 100})));
    let events = all["events"].as_array().unwrap();
    assert_eq!(events[0]["event_type"], "relation.put");
    assert_eq!(
        events.len(),
        16,
        "events of the other project and task are out of scope: {all}"
    );
    for entity_type in ["artifact", "claim", "relation"] {
        p.list(&main, "event.list", |_| json!({"entity_type": entity_type}));
    }
    let about = ok(p.list(
        &main,
        "event.list",
        |s| json!({"entity_id": s.of("citing", "claim_id")}),
    ));
    assert_eq!(about["events"].as_array().unwrap().len(), 2);
    p.list(&ctx("prj_main", Some("tsk_1")), "event.list", |_| json!({}));
    let everywhere = ok(p.list(
        &main,
        "event.list",
        |_| json!({"horizon": "personal", "reason": "audit"}),
    ));
    assert_eq!(everywhere["events"].as_array().unwrap().len(), 18);
    let walked = p.walk(&main, "event.list", "events", 4);
    assert_eq!(&walked, events);
    let empty = ok(p.list(&ctx("prj_none", None), "event.list", |_| json!({})));
    assert!(empty["events"].as_array().unwrap().is_empty());
}
