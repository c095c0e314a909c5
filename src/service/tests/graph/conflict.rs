//! Conflict cases: the revision-bound lifecycle, `conflict.list` and the retrieval lookup.

use serde_json::{Value, json};

use super::support::{Fixture, claim, ctx, ids, main_ctx};
use crate::protocol::{ErrorCode, Horizon};
use crate::store::conflict::{OpenConflict, open_conflicts_for_claims};
use crate::store::scope::Owner;

fn case_events(f: &super::support::Fixture) -> Vec<(String, String)> {
    f.service
        .store()
        .read_db(|db| {
            db.query_values(
                "SELECT event_type, reason FROM conflict_events ORDER BY seq",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .unwrap()
}

backend_test!(fn the_full_lifecycle_freezes_stales_reopens_and_resolves(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let a = f.assert_claim(&c, "The cache TTL is 30 seconds.");
    let b = f.assert_claim(&c, "The cache TTL is 60 seconds.");
    let (a_id, b_id) = (a["claim_id"].clone(), b["claim_id"].clone());
    let rel = f.relate(&c, claim(&a_id), "contradicts", claim(&b_id));
    assert_eq!(f.get_claim(&a_id)["status"], json!("conflicted"));
    assert_eq!(f.get_claim(&b_id)["status"], json!("conflicted"));

    let open = f.conflicts(&c, json!({}));
    assert_eq!(open["horizon"], json!("ambient"));
    assert_eq!(open["include_stale"], json!(false));
    assert_eq!(open["truncated"], json!(false));
    let first = &open["conflicts"][0];
    assert_eq!(open["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(first["relation_id"], rel["relation_id"]);
    assert_eq!(first["state"], json!("open"));
    assert_eq!(first["state_reason"], json!("contradiction relation created"));
    assert_eq!(first["opened_commit_seq"], rel["commit_seq"]);
    assert_eq!(first["metadata"], json!({}));
    assert_eq!(first["context"], rel["context"]);
    assert_eq!(first["source"]["claim_id"], a_id);
    assert_eq!(first["source"]["frozen"]["revision_id"], a["revision_id"]);
    assert_eq!(first["source"]["frozen_is_current"], json!(true));
    assert_eq!(first["source"]["frozen"]["status"], json!("conflicted"));
    assert_eq!(first["target"]["current"]["revision_id"], b["revision_id"]);
    let first_case = first["case_id"].clone();

    let a2 = f.revise_claim(&c, &a_id, "The cache TTL is 45 seconds.");
    assert_eq!(a2["status"], json!("conflicted"));
    let reopened = f.conflicts(&c, json!({}));
    assert_eq!(reopened["conflicts"].as_array().unwrap().len(), 1);
    let second = &reopened["conflicts"][0];
    assert_ne!(second["case_id"], first_case);
    assert_eq!(second["relation_id"], rel["relation_id"]);
    assert_eq!(
        second["state_reason"],
        json!("automatically reassessed after claim revision")
    );
    assert_eq!(second["opened_commit_seq"], a2["commit_seq"]);
    assert_eq!(second["source"]["frozen"]["revision_id"], a2["revision_id"]);

    let with_stale = f.conflicts(&c, json!({"include_stale": true}));
    assert_eq!(with_stale["include_stale"], json!(true));
    assert_eq!(
        ids(&with_stale["conflicts"], "case_id"),
        vec![second["case_id"].clone(), first_case.clone()]
    );
    let stale = &with_stale["conflicts"][1];
    assert_eq!(stale["state"], json!("stale"));
    assert_eq!(stale["state_reason"], json!("claim revision changed"));
    assert_eq!(stale["source"]["frozen"]["revision_id"], a["revision_id"]);
    assert_eq!(stale["source"]["current"]["revision_id"], a2["revision_id"]);
    assert_eq!(stale["source"]["frozen_is_current"], json!(false));
    assert_eq!(stale["target"]["frozen_is_current"], json!(true));

    f.retract_claim(&c, &b_id);
    assert_eq!(f.get_claim(&a_id)["status"], json!("active"));
    assert_eq!(f.get_claim(&b_id)["status"], json!("retracted"));
    let after = f.conflicts(&c, json!({}));
    assert_eq!(after["conflicts"], json!([]));
    assert!(after["broaden_hint"].as_str().unwrap().contains("\"workspace\""));
    let history = f.conflicts(&c, json!({"include_stale": true}));
    assert_eq!(ids(&history["conflicts"], "case_id"), vec![first_case]);
    assert_eq!(
        f.count("SELECT count(*) FROM conflict_cases WHERE state = 'resolved' AND state_reason = 'claim retracted'"),
        1
    );
    let events: Vec<(String, String)> = case_events(&f);
    let expected = [
        ("opened", "contradiction relation created"),
        ("stale", "claim revision changed"),
        ("opened", "automatically reassessed after claim revision"),
        ("resolved", "claim retracted"),
    ];
    assert_eq!(events, expected.map(|(t, r)| (t.to_owned(), r.to_owned())).to_vec());
    assert_eq!(
        f.count("SELECT count(*) FROM claims WHERE status NOT IN ('active', 'superseded', 'retracted')"),
        0
    );
});

backend_test!(fn cases_page_by_case_sequence_with_exact_boundaries_and_an_empty_final_page(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let mut relations = Vec::new();
    for n in 0..3 {
        let a = f.assert_claim(&c, &format!("left {n}"))["claim_id"].clone();
        let b = f.assert_claim(&c, &format!("right {n}"))["claim_id"].clone();
        relations.push(f.relate(&c, claim(&a), "contradicts", claim(&b))["relation_id"].clone());
    }
    relations.reverse();
    let exact = f.conflicts(&c, json!({"limit": 3}));
    assert_eq!(ids(&exact["conflicts"], "relation_id"), relations);
    assert_eq!(exact["truncated"], json!(false));
    assert!(exact.get("next_before_case_sequence").is_none());
    let page1 = f.conflicts(&c, json!({"limit": 2}));
    assert_eq!(page1["truncated"], json!(true));
    let cursor = page1["next_before_case_sequence"].clone();
    assert_eq!(cursor, page1["conflicts"][1]["case_sequence"]);
    let page2 = f.conflicts(&c, json!({"limit": 2, "before_case_sequence": cursor}));
    assert_eq!(ids(&page2["conflicts"], "relation_id"), vec![relations[2].clone()]);
    assert_eq!(page2["truncated"], json!(false));
    let last_seq = page2["conflicts"][0]["case_sequence"].clone();
    let empty = f.conflicts(&c, json!({"limit": 2, "before_case_sequence": last_seq}));
    assert_eq!(empty["conflicts"], json!([]));
    assert_eq!(empty["truncated"], json!(false));
});

backend_test!(fn conflict_visibility_follows_the_relation_context_and_broad_horizons_need_a_reason(store) {
    let f = Fixture::on(store);
    let home = main_ctx();
    let other = ctx("prj_other", None);
    let a = f.assert_claim(&other, "a")["claim_id"].clone();
    let b = f.assert_claim(&other, "b")["claim_id"].clone();
    f.relate(&other, claim(&a), "contradicts", claim(&b));
    let ambient = f.conflicts(&home, json!({}));
    assert_eq!(ambient["conflicts"], json!([]));
    assert!(
        ambient["broaden_hint"]
            .as_str()
            .unwrap()
            .contains("horizon \"workspace\"")
    );
    let no_reason = f.err(f.read(&home, "conflict.list", json!({"horizon": "personal"})));
    assert_eq!(no_reason.code, ErrorCode::InvalidRequest);
    assert_eq!(
        no_reason.message,
        "invalid request: workspace and personal horizons require a non-empty reason"
    );
    let response = f.call(f.read(
        &home,
        "conflict.list",
        json!({"horizon": "workspace", "reason": "triage"}),
    ));
    assert_eq!(response.context.as_ref().unwrap().horizon, Horizon::Workspace);
    let result = response.result.unwrap();
    assert_eq!(result["horizon"], json!("workspace"));
    assert_eq!(result["conflicts"].as_array().unwrap().len(), 1);
    assert!(result.get("broaden_hint").is_none());
    let elsewhere = ctx("prj_main", None);
    let mut elsewhere_ws = elsewhere.clone();
    elsewhere_ws["workspace_id"] = json!("wsp_elsewhere");
    let ws_empty = f.conflicts(&elsewhere_ws, json!({"horizon": "workspace", "reason": "triage"}));
    assert!(
        ws_empty["broaden_hint"]
            .as_str()
            .unwrap()
            .contains("horizon \"personal\"")
    );
    let personal = f.conflicts(&elsewhere_ws, json!({"horizon": "personal", "reason": "triage"}));
    assert_eq!(personal["conflicts"].as_array().unwrap().len(), 1);
    assert!(personal.get("broaden_hint").is_none());
    let personal_empty = f.conflicts(
        &elsewhere_ws,
        json!({"horizon": "personal", "reason": "x", "before_case_sequence": 1}),
    );
    assert!(personal_empty.get("broaden_hint").is_none());
});

fn owner(project: &str) -> Owner {
    Owner {
        workspace_id: "wsp_test".into(),
        project_id: project.into(),
        task_id: None,
        component: None,
    }
}

fn lookup(f: &super::support::Fixture, claims: &[&Value], project: &str, horizon: Horizon) -> Vec<OpenConflict> {
    let ids: Vec<String> = claims.iter().map(|c| c.as_str().unwrap().to_owned()).collect();
    f.service
        .store()
        .read_db(|db| open_conflicts_for_claims(db, &ids, &owner(project), horizon))
        .unwrap()
}

backend_test!(fn the_retrieval_lookup_returns_live_cases_once_in_relation_order_within_the_horizon(store) {
    let f = Fixture::on(store);
    let c = main_ctx();
    let a = f.assert_claim(&c, "a")["claim_id"].clone();
    let b = f.assert_claim(&c, "b")["claim_id"].clone();
    let d = f.assert_claim(&c, "d")["claim_id"].clone();
    let ab = f.relate(&c, claim(&a), "contradicts", claim(&b))["relation_id"].clone();
    let da = f.relate(&c, claim(&d), "contradicts", claim(&a))["relation_id"].clone();
    let found = lookup(&f, &[&a, &b], "prj_main", Horizon::Ambient);
    assert_eq!(found.len(), 2);
    assert_eq!(
        (json!(found[0].relation_id), json!(found[0].source_claim_id)),
        (ab.clone(), a.clone())
    );
    assert_eq!(
        (json!(found[1].relation_id), json!(found[1].source_claim_id)),
        (da.clone(), d.clone())
    );
    assert_eq!(lookup(&f, &[&b], "prj_main", Horizon::Ambient).len(), 1);
    assert!(lookup(&f, &[&b], "prj_other", Horizon::Ambient).is_empty());
    assert_eq!(lookup(&f, &[&b], "prj_other", Horizon::Workspace).len(), 1);
    assert!(lookup(&f, &[], "prj_main", Horizon::Ambient).is_empty());
    f.revise_claim(&c, &b, "b2");
    let after_revise = lookup(&f, &[&b], "prj_main", Horizon::Ambient);
    assert_eq!(after_revise.len(), 1);
    assert_ne!(after_revise[0].case_id, found[0].case_id);
    f.retract_claim(&c, &a);
    assert!(lookup(&f, &[&a, &b, &d], "prj_main", Horizon::Ambient).is_empty());
});
