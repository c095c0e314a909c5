//! Property: under any sequence of contradict/revise/retract/supersede over a few claims,
//! there is at most one open case per relation, every open case references the current
//! revisions of two non-terminal claims, every live contradiction has exactly one open
//! case, and a claim presents `conflicted` exactly when it is in a live contradiction.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::support::{Fixture, claim, fixture, main_ctx};
use crate::protocol::ErrorCode;

const CLAIMS: usize = 4;

#[derive(Clone, Copy, Debug)]
enum Step {
    Contradict(usize, usize),
    Revise(usize),
    Retract(usize),
    Supersede(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..CLAIMS, 0..CLAIMS).prop_map(|(a, b)| Step::Contradict(a, b)),
        4 => (0..CLAIMS).prop_map(Step::Revise),
        1 => (0..CLAIMS).prop_map(Step::Retract),
        1 => (0..CLAIMS, 0..CLAIMS).prop_map(|(a, b)| Step::Supersede(a, b)),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    Active,
    Superseded,
    Retracted,
}

/// What the store should look like, tracked independently of it.
struct Model {
    life: [Life; CLAIMS],
    contradictions: Vec<(usize, usize, Value)>,
    supersessions: Vec<(usize, usize)>,
}

impl Model {
    fn active(&self, i: usize) -> bool {
        self.life[i] == Life::Active
    }

    /// Whether the step should succeed, applying it to the model if so.
    fn apply(&mut self, step: Step) -> bool {
        match step {
            Step::Contradict(a, b) => {
                a != b
                    && (self.contradictions.iter().any(|(x, y, _)| (*x, *y) == (a, b))
                        || (self.active(a) && self.active(b)))
            }
            Step::Supersede(a, b) => {
                if a == b {
                    return false;
                }
                if self.supersessions.contains(&(a, b)) {
                    return true;
                }
                let ok = self.active(a) && self.active(b);
                if ok {
                    self.supersessions.push((a, b));
                    self.life[b] = Life::Superseded;
                }
                ok
            }
            Step::Revise(i) => self.active(i),
            Step::Retract(i) => {
                let ok = self.life[i] != Life::Retracted;
                if ok {
                    self.life[i] = Life::Retracted;
                }
                ok
            }
        }
    }

    fn in_live_contradiction(&self, i: usize) -> bool {
        self.contradictions
            .iter()
            .any(|(a, b, _)| (*a == i || *b == i) && self.active(*a) && self.active(*b))
    }
}

fn run_step(f: &Fixture, ids: &[Value], step: Step) -> Value {
    let c = main_ctx();
    let request = match step {
        Step::Contradict(a, b) => f.relate_request(&c, claim(&ids[a]), "contradicts", claim(&ids[b]), json!({})),
        Step::Supersede(a, b) => f.relate_request(&c, claim(&ids[a]), "supersedes", claim(&ids[b]), json!({})),
        Step::Revise(i) => {
            let current = f.get_claim(&ids[i]);
            f.mutation(
                &c,
                "claim.revise",
                json!({"claim_id": ids[i], "if_revision": current["revision_id"], "statement": "revised"}),
            )
        }
        Step::Retract(i) => f.mutation(&c, "claim.retract", json!({"claim_id": ids[i], "reason": "r"})),
    };
    let response = f.call(request);
    match response.error {
        None => response.result.unwrap(),
        Some(error) => {
            assert_eq!(error.code, ErrorCode::InvalidRequest, "{step:?}: {}", error.message);
            Value::Null
        }
    }
}

fn check_invariants(f: &Fixture, ids: &[Value], model: &Model) {
    let duplicated = f.count(
        "SELECT count(*) FROM (SELECT relation_id FROM conflict_cases WHERE state = 'open'
         GROUP BY relation_id HAVING count(*) > 1)",
    );
    assert_eq!(duplicated, 0, "a relation has more than one open case");
    let stale_open = f.count(
        "SELECT count(*) FROM conflict_cases cc
         JOIN claims s ON s.id = cc.source_claim_id JOIN claims t ON t.id = cc.target_claim_id
         WHERE cc.state = 'open' AND (s.status <> 'active' OR t.status <> 'active'
            OR s.current_revision_id <> cc.source_revision_id OR t.current_revision_id <> cc.target_revision_id)",
    );
    assert_eq!(
        stale_open, 0,
        "an open case references a non-current revision or a terminal claim"
    );
    for (a, b, relation_id) in &model.contradictions {
        let open = f.count(&format!(
            "SELECT count(*) FROM conflict_cases WHERE state = 'open' AND relation_id = '{}'",
            relation_id.as_str().unwrap()
        ));
        let live = model.active(*a) && model.active(*b);
        assert_eq!(open, i64::from(live), "relation {relation_id} ({a} contradicts {b})");
    }
    for (i, id) in ids.iter().enumerate() {
        let status = f.get_claim(id)["status"].as_str().unwrap().to_owned();
        let expected = match model.life[i] {
            Life::Active if model.in_live_contradiction(i) => "conflicted",
            Life::Active => "active",
            Life::Superseded => "superseded",
            Life::Retracted => "retracted",
        };
        assert_eq!(status, expected, "claim {i}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn open_cases_always_track_current_revisions_of_live_contradictions(
        steps in proptest::collection::vec(step(), 1..14)
    ) {
        let f = fixture();
        let c = main_ctx();
        let ids: Vec<Value> = (0..CLAIMS)
            .map(|n| f.assert_claim(&c, &format!("claim {n}"))["claim_id"].clone())
            .collect();
        let mut model = Model { life: [Life::Active; CLAIMS], contradictions: Vec::new(), supersessions: Vec::new() };
        for step in steps {
            let known = matches!(step, Step::Contradict(a, b)
                if model.contradictions.iter().any(|(x, y, _)| (*x, *y) == (a, b)));
            let expect_ok = model.apply(step);
            let result = run_step(&f, &ids, step);
            prop_assert_eq!(!result.is_null(), expect_ok, "{:?}", step);
            if let (Step::Contradict(a, b), true, false) = (step, expect_ok, known) {
                prop_assert_eq!(&result["created"], &json!(true));
                model.contradictions.push((a, b, result["relation_id"].clone()));
            }
            check_invariants(&f, &ids, &model);
        }
    }
}
