//! Write scope: the five scoped mutations refuse entities outside the ambient
//! project/task with SCOPE_VIOLATION; exact gets and pins stay read-only.
//!
//! The rule tested here (see `spec/v1/DIVERGENCES.md`, "Write scope and task contexts"): a
//! project-level ambient may maintain every task's entities in its project, a task context
//! may maintain project-level entities, and nobody maintains a sibling task's or another
//! project's entities.

use serde_json::{Value, json};

use super::support::{Fixture, artifact, claim, ctx};
use crate::protocol::ErrorCode;

const SECRET: &str = "the deploy password is hunter2";

struct Owned {
    art: Value,
    art_rev: Value,
    clm: Value,
    clm_rev: Value,
}

fn seed(f: &Fixture, context: &Value) -> Owned {
    let art = f.put_artifact(context, SECRET);
    let clm = f.assert_claim(context, SECRET);
    Owned {
        art: art["artifact_id"].clone(),
        art_rev: art["revision_id"].clone(),
        clm: clm["claim_id"].clone(),
        clm_rev: clm["revision_id"].clone(),
    }
}

/// Every scoped mutation of `target`'s entities from `ambient`, relating to `local` ones.
fn scoped_mutations(f: &Fixture, ambient: &Value, target: &Owned, local: &Owned) -> Vec<(&'static str, Value)> {
    vec![
        (
            "artifact.revise",
            f.mutation(
                ambient,
                "artifact.revise",
                json!({"artifact_id": target.art, "if_revision": target.art_rev, "content": {"type": "text", "data": "x"}}),
            ),
        ),
        (
            "artifact.forget",
            f.mutation(ambient, "artifact.forget", json!({"artifact_id": target.art, "reason": "x"})),
        ),
        (
            "claim.revise",
            f.mutation(
                ambient,
                "claim.revise",
                json!({"claim_id": target.clm, "if_revision": target.clm_rev, "statement": "x"}),
            ),
        ),
        (
            "claim.retract",
            f.mutation(ambient, "claim.retract", json!({"claim_id": target.clm, "reason": "x"})),
        ),
        (
            "relation.put (foreign source)",
            f.relate_request(ambient, claim(&target.clm), "supports", claim(&local.clm), json!({})),
        ),
        (
            "relation.put (foreign target)",
            f.relate_request(ambient, artifact(&local.art), "references", artifact(&target.art), json!({})),
        ),
        (
            "relation.put contradicts",
            f.relate_request(ambient, claim(&local.clm), "contradicts", claim(&target.clm), json!({})),
        ),
        (
            "relation.put supersedes",
            f.relate_request(ambient, claim(&local.clm), "supersedes", claim(&target.clm), json!({})),
        ),
    ]
}

fn assert_all_refused(f: &Fixture, ambient: &Value, target: &Owned, local: &Owned, owner: &str, scope: &str) {
    let before = f.last_commit_seq();
    for (name, request) in scoped_mutations(f, ambient, target, local) {
        let error = f.err(request);
        assert_eq!(error.code, ErrorCode::ScopeViolation, "{name}: {}", error.message);
        assert!(!error.retryable, "{name}");
        assert!(error.hint.is_some(), "{name}");
        assert!(
            error.message.contains(&format!("belongs to {owner}")),
            "{name}: {}",
            error.message
        );
        assert!(
            error.message.contains(&format!("ambient write scope is {scope}")),
            "{name}: {}",
            error.message
        );
        assert!(!error.message.contains("hunter2"), "{name} leaked content");
    }
    assert_eq!(f.last_commit_seq(), before, "a refused write changed the store");
    assert_eq!(f.count("SELECT count(*) FROM relations"), 0);
    assert_eq!(f.count("SELECT count(*) FROM claims WHERE status <> 'active'"), 0);
}

backend_test!(fn a_sibling_project_is_a_scope_violation_for_every_scoped_mutation(store) {
    let f = Fixture::on(store);
    let home = ctx("prj_home", None);
    let sibling = ctx("prj_sibling", None);
    let local = seed(&f, &home);
    let foreign = seed(&f, &sibling);
    assert_all_refused(
        &f,
        &home,
        &foreign,
        &local,
        "workspace=wsp_test/project=prj_sibling/task=<project>",
        "workspace=wsp_test/project=prj_home/task=<project>",
    );
});

backend_test!(fn a_sibling_task_is_a_scope_violation_for_every_scoped_mutation(store) {
    let f = Fixture::on(store);
    let t1 = ctx("prj_home", Some("tsk_1"));
    let t2 = ctx("prj_home", Some("tsk_2"));
    let local = seed(&f, &t1);
    let sibling = seed(&f, &t2);
    assert_all_refused(
        &f,
        &t1,
        &sibling,
        &local,
        "workspace=wsp_test/project=prj_home/task=tsk_2",
        "workspace=wsp_test/project=prj_home/task=tsk_1",
    );
});

backend_test!(fn a_project_context_maintains_task_entities_and_a_task_maintains_project_entities(store) {
    let f = Fixture::on(store);
    let project = ctx("prj_home", None);
    let task = ctx("prj_home", Some("tsk_1"));
    let task_owned = seed(&f, &task);
    let project_owned = seed(&f, &project);
    // Project-level ambient → task-owned entities.
    for (_, request) in scoped_mutations(&f, &project, &task_owned, &project_owned)
        .into_iter()
        .filter(|(name, _)| !name.contains("retract"))
    {
        f.ok(request);
    }
    // Task ambient → project-level entities (fresh seeds so revisions are current).
    let task_local = seed(&f, &task);
    let project_target = seed(&f, &project);
    for (_, request) in scoped_mutations(&f, &task, &project_target, &task_local)
        .into_iter()
        .filter(|(name, _)| !name.contains("contradicts") && !name.contains("supersedes"))
    {
        f.ok(request);
    }
    assert_eq!(f.get_claim(&project_target.clm)["status"], json!("retracted"));
    assert_eq!(f.get_claim(&task_owned.clm)["status"], json!("superseded"));
});

backend_test!(fn exact_gets_are_global_and_pins_never_grant_write_scope(store) {
    let f = Fixture::on(store);
    let home = ctx("prj_home", None);
    let foreign = seed(&f, &ctx("prj_other", None));
    let local = seed(&f, &home);
    let get = f.ok(json!({"request_id": "r", "op": "artifact.get", "input": {"artifact_id": foreign.art}}));
    assert_eq!(get["content"]["data"], json!(SECRET));
    assert_eq!(f.get_claim(&foreign.clm)["statement"], json!(SECRET));
    let mut pinned = home.clone();
    let art = foreign.art.as_str().unwrap();
    let rev = foreign.art_rev.as_str().unwrap();
    pinned["pins"] = json!([art, format!("{art}@{rev}"), format!("memoree://artifact/{art}@{rev}")]);
    let revise = f.mutation(
        &pinned,
        "artifact.revise",
        json!({"artifact_id": foreign.art, "if_revision": foreign.art_rev, "content": {"type": "text", "data": "x"}}),
    );
    assert_eq!(f.err(revise).code, ErrorCode::ScopeViolation);
    let relate = f.relate_request(
        &pinned,
        claim(&local.clm),
        "derived_from",
        artifact(&foreign.art),
        json!({}),
    );
    assert_eq!(f.err(relate).code, ErrorCode::ScopeViolation);
});

backend_test!(fn a_missing_endpoint_is_not_found_even_when_the_other_is_foreign(store) {
    let f = Fixture::on(store);
    let home = ctx("prj_home", None);
    let foreign = seed(&f, &ctx("prj_other", None));
    let request = f.relate_request(
        &home,
        claim(&foreign.clm),
        "supports",
        claim(&json!("clm_nope")),
        json!({}),
    );
    let error = f.err(request);
    assert_eq!(error.code, ErrorCode::NotFound);
    assert_eq!(error.message, "not found: claim clm_nope");
});
