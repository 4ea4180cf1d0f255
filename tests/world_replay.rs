//! A replaying world: the case clock, `has`, and actions that apply `effects.toml` so verification sees
//! the world after the fix.

use serde_json::json;
use sitrep::model::{Action, Risk};
use sitrep::world::World;
use std::collections::BTreeMap;

fn deployments(ready: u32) -> String {
    let body = json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": [{
        "metadata": {"name": "payments-api", "namespace": "payments", "annotations": {"deployment.kubernetes.io/revision": "2"}},
        "spec": {"replicas": 3, "selector": {}, "template": {"spec": {"containers": [{"name": "api", "image": "api:v2"}]}}},
        "status": {"replicas": 3, "readyReplicas": ready}
    }]});
    json!({"integration": "kubernetes", "method": "GET", "path": "/apis/apps/v1/namespaces/payments/deployments",
           "query": {}, "status": 200, "body": body})
    .to_string()
}

fn case_files() -> Vec<(String, String)> {
    vec![
        (
            "demo/rollback/case.toml".into(),
            "id = \"rollback\"\ntitle = \"Bad deploy\"\nnow = \"2026-04-18T10:47:00Z\"\ndifficulty = 2\n".into(),
        ),
        ("demo/rollback/recordings.ndjson".into(), format!("{}\n", deployments(1))),
        ("demo/rollback/after-rollback.ndjson".into(), format!("{}\n", deployments(3))),
        (
            "demo/rollback/effects.toml".into(),
            "[[effect]]\naction = \"kubernetes.rollout_undo\"\ntarget = \"deployment/payments-api\"\nrecordings = \"after-rollback.ndjson\"\n".into(),
        ),
        (
            "demo/rollback/expect.toml".into(),
            "category = \"code_defect\"\nrequired_keywords = [\"rollback\"]\nforbidden_categories = [\"healthy\"]\nrequired_evidence = [\"kubernetes/deployments\"]\n".into(),
        ),
    ]
}

fn action(kind: &str, target: &str) -> Action {
    Action {
        id: "a1".into(),
        kind: kind.into(),
        target: target.into(),
        params: BTreeMap::from([("namespace".to_string(), json!("payments"))]),
        risk: Risk::High,
        rationale: "roll back the bad deploy".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    }
}

#[tokio::test]
async fn an_action_in_replay_applies_its_effects() {
    let world = World::from_case_files("demo/rollback", case_files()).expect("case loads");
    let case = world.case().expect("case");
    assert_eq!(case.id, "rollback");
    assert_eq!(case.difficulty, Some(2));
    assert_eq!(world.now().to_rfc3339(), "2026-04-18T10:47:00+00:00");
    let expect = case.expect.as_ref().expect("expect.toml");
    assert_eq!(expect.category, Some(sitrep::model::Category::CodeDefect));
    assert_eq!(
        expect.required_evidence,
        vec!["kubernetes/deployments".to_string()]
    );
    assert!(world.has("kubernetes"));
    assert!(!world.has("prometheus"));

    let before = world
        .kubernetes()
        .deployments("payments")
        .await
        .expect("before");
    assert_eq!(before[0].ready_replicas, 1);

    // Another target does not trigger the effect.
    let msg = world
        .execute(&action("kubernetes.rollout_undo", "deployment/other"))
        .await
        .expect("simulated");
    assert!(!msg.contains("after-rollback"), "{msg}");
    assert_eq!(
        world
            .kubernetes()
            .deployments("payments")
            .await
            .expect("still before")[0]
            .ready_replicas,
        1
    );

    let msg = world
        .execute(&action(
            "kubernetes.rollout_undo",
            "deployment/payments-api",
        ))
        .await
        .expect("simulated");
    // Which recordings the world follows is internal: the effect shows in what is read next,
    // never in the operator-facing result.
    assert!(
        msg.contains("simulated (replay)") && !msg.contains("after-rollback"),
        "{msg}"
    );
    let after = world
        .kubernetes()
        .deployments("payments")
        .await
        .expect("after");
    assert_eq!(
        after[0].ready_replicas, 3,
        "verification sees the world after the fix"
    );

    let e = world
        .execute(&action("kubernetes.teleport", "x"))
        .await
        .expect_err("unknown kind");
    assert!(e.is_manual(), "{e}");
    assert!(
        e.to_string()
            .contains("manual step: carry out kubernetes.teleport on x by hand"),
        "{e}"
    );
}

#[tokio::test]
async fn node_and_resource_actions_are_simulated_in_replay() {
    let world = World::from_case_files("demo/rollback", case_files()).expect("case loads");
    for (kind, target) in [
        ("kubernetes.cordon", "node/ip-10-0-1-42"),
        ("kubernetes.drain", "node/ip-10-0-1-42"),
    ] {
        let msg = world
            .execute(&action(kind, target))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(msg, format!("{kind} {target}: simulated (replay)"));
    }
    let mut set = action("kubernetes.set_resources", "deployment/payments-api");
    set.params.insert("memory_limit".into(), json!("1Gi"));
    let msg = world.execute(&set).await.expect("set_resources");
    assert!(msg.ends_with("simulated (replay)"), "{msg}");
    // A parameter error is still an error in replay, not a simulated success.
    let e = world
        .execute(&action(
            "kubernetes.set_resources",
            "deployment/payments-api",
        ))
        .await
        .expect_err("no resources given");
    assert!(e.to_string().contains("memory_limit"), "{e}");
}

#[test]
fn embedded_case_errors_name_the_case_file() {
    let mut files = case_files();
    files[3].1 = "[[effect]]\naction = 3\n".into();
    let err = World::from_case_files("demo/rollback", files)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.starts_with("demo/rollback/effects.toml:2:"), "{err}");
}
