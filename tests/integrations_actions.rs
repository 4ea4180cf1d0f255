//! Kubernetes actions beyond restart/undo/scale/delete: the exact requests `set_resources`, `cordon`
//! and `drain` put on the wire, and that every action kind the analyzers and runbooks propose is
//! either carried out or answered as a manual step.

mod support;

use serde_json::{Value, json};
use sitrep::integrations::{Endpoint, ErrorKind, LiveTransport, Transport};
use sitrep::model::{Action, catalog};
use sitrep::world::{self, Mode, World};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use support::{Cluster, Write};

fn world_over(url: Option<&str>) -> World {
    let mut live = LiveTransport::new().expect("client");
    if let Some(url) = url {
        live = live.with_endpoint("kubernetes", Endpoint::new(url));
    }
    let transport: Arc<dyn Transport> = Arc::new(live);
    World::with_transport(
        transport,
        Mode::Live,
        "payments",
        Some("acme/payments".into()),
    )
}

fn action(kind: &str, target: &str, params: Value) -> Action {
    Action {
        id: "a1".into(),
        kind: kind.into(),
        target: target.into(),
        params: serde_json::from_value::<BTreeMap<String, Value>>(params).unwrap_or_default(),
        risk: sitrep::model::Risk::High,
        rationale: "test".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    }
}

fn writes(cluster: &Arc<Mutex<Cluster>>) -> Vec<Write> {
    cluster.lock().expect("lock").writes.clone()
}

fn eviction(ns: &str, name: &str) -> Write {
    Write {
        method: "POST".into(),
        path: format!("/api/v1/namespaces/{ns}/pods/{name}/eviction"),
        query: None,
        content_type: "application/json".into(),
        body: json!({"apiVersion": "policy/v1", "kind": "Eviction",
                     "metadata": {"name": name, "namespace": ns}}),
    }
}

fn cordon_write(node: &str) -> Write {
    Write {
        method: "PATCH".into(),
        path: format!("/api/v1/nodes/{node}"),
        query: None,
        content_type: "application/merge-patch+json".into(),
        body: json!({"spec": {"unschedulable": true}}),
    }
}

#[tokio::test]
async fn set_resources_sends_the_strategic_merge_patch_kubectl_would() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));

    // Exactly the params the OOM analyzer proposes.
    let msg = world
        .execute(&action(
            "kubernetes.set_resources",
            "deployment/payments-api",
            json!({"namespace": "payments", "deployment": "payments-api",
                   "container": "api", "memory_limit": "1Gi"}),
        ))
        .await
        .expect("set_resources");
    assert!(msg.contains("container api limits memory=1Gi"), "{msg}");
    assert_eq!(
        writes(&cluster),
        vec![Write {
            method: "PATCH".into(),
            path: "/apis/apps/v1/namespaces/payments/deployments/payments-api".into(),
            query: None,
            content_type: "application/strategic-merge-patch+json".into(),
            body: json!({"spec": {"template": {"spec": {"containers": [
                {"name": "api", "resources": {"limits": {"memory": "1Gi"}}}
            ]}}}}),
        }]
    );
    {
        let c = cluster.lock().expect("lock");
        // The container was looked up before patching.
        assert!(
            c.seen
                .contains(&"GET /apis/apps/v1/namespaces/payments/deployments/payments-api".into())
        );
        let container = &c.deployments[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["resources"]["limits"]["memory"], json!("1Gi"));
        assert_eq!(container["image"], json!("registry/payments-api:v2"));
    }

    // Requests and limits together, the container implied because the template has only one.
    world
        .execute(&action(
            "kubernetes.set_resources",
            "deployment/payments-api",
            json!({"cpu_request": "250m", "limits": {"cpu": "1", "memory": "1536Mi"}}),
        ))
        .await
        .expect("set_resources without container");
    let last = writes(&cluster).pop().expect("a write");
    assert_eq!(
        last.body,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "api", "resources": {"limits": {"cpu": "1", "memory": "1536Mi"},
                                          "requests": {"cpu": "250m"}}}
        ]}}}})
    );
    let c = cluster.lock().expect("lock");
    let res = &c.deployments[0]["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(
        res,
        &json!({"limits": {"cpu": "1", "memory": "1536Mi"}, "requests": {"cpu": "250m"}})
    );
}

#[tokio::test]
async fn set_resources_rejects_bad_params_before_patching() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));
    let run = |params: Value| {
        let a = action(
            "kubernetes.set_resources",
            "deployment/payments-api",
            params,
        );
        let world = &world;
        async move { world.execute(&a).await.expect_err("invalid") }
    };

    let e = run(json!({"container": "api"})).await;
    assert!(matches!(e.kind, ErrorKind::Invalid(_)), "{e:?}");
    assert!(e.to_string().contains("memory_limit"), "{e}");

    let e = run(json!({"container": "api", "memory_limit": "lots"})).await;
    assert!(
        e.to_string()
            .contains("memory limit \"lots\" is not a Kubernetes quantity"),
        "{e}"
    );

    let e = run(json!({"container": "sidecar", "memory_limit": "1Gi"})).await;
    assert!(
        e.to_string()
            .contains("deployment/payments-api has no container \"sidecar\" (containers: api)"),
        "{e}"
    );

    let e = world
        .execute(&action(
            "kubernetes.set_resources",
            "node/ip-10-0-1-42",
            json!({"memory_limit": "1Gi"}),
        ))
        .await
        .expect_err("wrong target");
    assert!(e.to_string().contains("targets a deployment"), "{e}");

    assert!(writes(&cluster).is_empty(), "nothing may be patched");
}

#[tokio::test]
async fn cordon_merge_patches_the_node_unschedulable() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));

    let msg = world
        .execute(&action(
            "kubernetes.cordon",
            "node/ip-10-0-1-42",
            json!({"node": "ip-10-0-1-42"}),
        ))
        .await
        .expect("cordon");
    assert_eq!(msg, "node/ip-10-0-1-42 cordoned");
    assert_eq!(writes(&cluster), vec![cordon_write("ip-10-0-1-42")]);
    let nodes = world.kubernetes().nodes().await.expect("nodes");
    assert!(nodes[0].unschedulable);
    // The taint the node already had is untouched.
    assert_eq!(nodes[0].taints, vec!["dedicated=payments:NoSchedule"]);

    // The node may come from the target alone; with neither it is a clear error and nothing is sent.
    world
        .execute(&action("kubernetes.cordon", "node/ip-10-0-1-42", json!({})))
        .await
        .expect("cordon by target");
    let e = world
        .execute(&action("kubernetes.cordon", "", json!({})))
        .await
        .expect_err("no node");
    assert!(matches!(e.kind, ErrorKind::Invalid(_)), "{e:?}");
    assert!(e.to_string().contains("cordon needs a node"), "{e}");
    let e = world
        .execute(&action("kubernetes.cordon", "node/../nodes", json!({})))
        .await
        .expect_err("bad name");
    assert!(e.to_string().contains("bad node name"), "{e}");
    assert_eq!(writes(&cluster).len(), 2);

    let e = world
        .execute(&action("kubernetes.cordon", "node/ip-10-9-9-9", json!({})))
        .await
        .expect_err("unknown node");
    assert_eq!(e.status(), Some(404), "{e}");
}

#[tokio::test]
async fn drain_cordons_then_evicts_each_pod_and_reports_budget_refusals_per_pod() {
    let cluster = Arc::new(Mutex::new(Cluster::payments_with_node_workloads()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));

    let report = world
        .kubernetes()
        .drain("ip-10-0-1-42")
        .await
        .expect("drain runs");
    assert_eq!(
        report.evicted,
        vec![
            "payments/payments-api-7f9dd8b6c4-x7gr9",
            "payments/payments-api-7f9dd8b6c4-k2m4p",
            "payments/migrate-once",
        ]
    );
    assert_eq!(
        report.skipped,
        vec![
            (
                "kube-system/node-exporter-q8x2z".to_string(),
                "managed by DaemonSet/node-exporter".to_string()
            ),
            (
                "kube-system/kube-proxy-ip-10-0-1-42".to_string(),
                "mirror pod (managed by the kubelet)".to_string()
            ),
        ]
    );
    assert_eq!(
        report.blocked,
        vec![(
            "payments/ledger-0".to_string(),
            "The disruption budget ledger-pdb needs 2 healthy pods and has 2 currently".to_string()
        )]
    );
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, "payments/debug-shell");
    assert!(report.failed[0].1.contains("not managed by a controller"));
    assert!(!report.complete());

    // On the wire: cordon, the node's pod list, then one Eviction per pod that must leave, in order;
    // the PDB's 429 on ledger-0 did not stop migrate-once from being evicted after it.
    assert_eq!(
        writes(&cluster),
        vec![
            cordon_write("ip-10-0-1-42"),
            eviction("payments", "payments-api-7f9dd8b6c4-x7gr9"),
            eviction("payments", "payments-api-7f9dd8b6c4-k2m4p"),
            eviction("payments", "ledger-0"),
            eviction("payments", "migrate-once"),
        ]
    );
    {
        let c = cluster.lock().expect("lock");
        assert!(
            c.seen
                .contains(&"GET /api/v1/pods?fieldSelector=spec.nodeName%3Dip-10-0-1-42".into()),
            "{:?}",
            c.seen
        );
        let mut left: Vec<String> = c
            .pods
            .iter()
            .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![
                "debug-shell",
                "kube-proxy-ip-10-0-1-42",
                "ledger-0",
                "ledger-1",
                "node-exporter-q8x2z"
            ]
        );
        assert_eq!(c.nodes[0]["spec"]["unschedulable"], json!(true));
    }

    // Through execute, an incomplete drain is an error that still says what moved and what did not.
    let e = world
        .execute(&action(
            "kubernetes.drain",
            "node/ip-10-0-1-42",
            json!({"node": "ip-10-0-1-42"}),
        ))
        .await
        .expect_err("incomplete drain");
    let text = e.to_string();
    assert!(
        text.starts_with(
            "kubernetes: drain node/ip-10-0-1-42: drain incomplete: node/ip-10-0-1-42 cordoned"
        ),
        "{text}"
    );
    assert!(text.contains("blocked by a PodDisruptionBudget (payments/ledger-0: The disruption budget ledger-pdb needs 2 healthy pods"), "{text}");
    assert!(
        text.contains("payments/debug-shell: not managed by a controller"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

#[tokio::test]
async fn a_clean_drain_is_a_success_and_touches_no_other_node() {
    let mut c = Cluster::payments_with_node_workloads();
    c.pdb_blocked.clear();
    c.pods.retain(|p| p["metadata"]["name"] != "debug-shell");
    let cluster = Arc::new(Mutex::new(c));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));

    let msg = world
        .execute(&action("kubernetes.drain", "node/ip-10-0-1-42", json!({})))
        .await
        .expect("drain");
    assert!(
        msg.starts_with("node/ip-10-0-1-42 cordoned, 4 pod(s) evicted ("),
        "{msg}"
    );
    assert!(msg.contains("2 skipped"), "{msg}");
    let evicted: Vec<String> = writes(&cluster)
        .iter()
        .filter(|w| w.path.ends_with("/eviction"))
        .map(|w| w.path.clone())
        .collect();
    assert_eq!(evicted.len(), 4);
    assert!(evicted.iter().all(|p| !p.contains("ledger-1")));
}

#[tokio::test]
async fn drain_stops_when_the_node_cannot_be_cordoned() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));
    let e = world
        .execute(&action("kubernetes.drain", "node/ip-10-9-9-9", json!({})))
        .await
        .expect_err("no such node");
    assert_eq!(
        e.to_string(),
        "kubernetes: PATCH /api/v1/nodes/ip-10-9-9-9: HTTP 404: nodes \"ip-10-9-9-9\" not found"
    );
    // No pod was listed or evicted.
    assert_eq!(writes(&cluster), vec![cordon_write("ip-10-9-9-9")]);
    assert_eq!(cluster.lock().expect("lock").pods.len(), 2);
}

#[tokio::test]
async fn force_delete_sends_the_grace_period_the_runbook_asks_for() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(Some(&server.url));
    // The params as the node-not-ready runbook renders them (strings).
    world
        .execute(&action(
            "kubernetes.delete_pod",
            "pod/payments-api-7f9dd8b6c4-x7gr9",
            json!({"namespace": "payments", "name": "payments-api-7f9dd8b6c4-x7gr9",
                   "force": "true", "grace_period_seconds": "0"}),
        ))
        .await
        .expect("delete");
    let w = writes(&cluster);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].method, "DELETE");
    assert_eq!(
        w[0].path,
        "/api/v1/namespaces/payments/pods/payments-api-7f9dd8b6c4-x7gr9"
    );
    assert_eq!(w[0].query.as_deref(), Some("gracePeriodSeconds=0"));

    let e = world
        .execute(&action(
            "kubernetes.delete_pod",
            "pod/payments-api-7f9dd8b6c4-k2m4p",
            json!({"grace_period_seconds": "soon"}),
        ))
        .await
        .expect_err("bad grace period");
    assert!(e.to_string().contains("grace_period_seconds"), "{e}");
    assert_eq!(writes(&cluster).len(), 1);
}

#[tokio::test]
async fn an_unknown_kind_is_a_manual_step_naming_what_to_run() {
    let world = world_over(None);
    let mut a = action(
        "kubernetes.exec",
        "pod/payments-api-7f9dd8b6c4-x7gr9",
        json!({}),
    );
    a.operation = "kubectl -n payments exec payments-api-7f9dd8b6c4-x7gr9 -- kill -QUIT 1".into();
    let e = world.execute(&a).await.expect_err("manual");
    assert!(e.is_manual());
    assert_eq!(
        e.to_string(),
        "kubernetes: kubernetes.exec: manual step: kubectl -n payments exec payments-api-7f9dd8b6c4-x7gr9 -- kill -QUIT 1"
    );
    a.kind = "pagerduty.escalate".into();
    a.operation.clear();
    let e = world.execute(&a).await.expect_err("manual");
    assert_eq!(
        e.kind,
        ErrorKind::Manual(
            "carry out pagerduty.escalate on pod/payments-api-7f9dd8b6c4-x7gr9 by hand".into()
        )
    );
}

/// Kind literals (`"kubernetes.cordon"`) in a source file.
fn kind_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in text.split('"').skip(1).step_by(2) {
        let is_kind = piece.split_once('.').is_some_and(|(i, v)| {
            ["kubernetes", "alertmanager", "github", "prometheus", "loki"].contains(&i)
                && !v.is_empty()
                && v.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        });
        if is_kind && !out.iter().any(|k| k == piece) {
            out.push(piece.to_string());
        }
    }
    out
}

#[tokio::test]
async fn every_kind_analyzers_and_runbooks_propose_is_executable() {
    let root = env!("CARGO_MANIFEST_DIR");
    let actions = std::fs::read_to_string(format!("{root}/src/reason/actions.rs"))
        .expect("src/reason/actions.rs");
    let mut proposed = kind_literals(&actions);
    assert!(
        proposed.len() >= 8,
        "the analyzers' action builders were not found: {proposed:?}"
    );
    // Runbook action steps name their kind as `tool:` right under `- action:`.
    if let Ok(dir) = std::fs::read_dir(format!("{root}/runbooks")) {
        for entry in dir.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let mut in_action = false;
            for line in text.lines() {
                let l = line.trim();
                if l.starts_with("- ") {
                    in_action = l == "- action:";
                } else if in_action && let Some(tool) = l.strip_prefix("tool:") {
                    let tool = tool.trim().trim_matches('"').to_string();
                    if !proposed.contains(&tool) {
                        proposed.push(tool);
                    }
                }
            }
        }
    }
    for kind in &proposed {
        assert!(
            catalog::lookup(kind).is_some_and(|e| e.mutating),
            "{kind} is proposed but is not an action in the catalog"
        );
        assert!(
            world::is_executable(kind),
            "{kind} is proposed but World::execute cannot carry it out"
        );
    }

    // Every catalog action reaches its client: with no integration configured the answer is
    // "not configured", never the manual-step fallback. Params come from the catalog's schema.
    let world = world_over(None);
    let mut executed = 0;
    for entry in catalog::actions() {
        let mut params = serde_json::Map::new();
        for p in entry.params.iter().filter(|p| p.required) {
            let v = match p.ty {
                catalog::ParamType::Integer => json!(3),
                catalog::ParamType::Boolean => json!(true),
                catalog::ParamType::Object => json!({"alertname": "X"}),
                catalog::ParamType::Quantity => json!("1Gi"),
                _ => json!("x1"),
            };
            params.insert(p.name.to_string(), v);
        }
        if entry.name == "kubernetes.set_resources" {
            params.insert("memory_limit".into(), json!("1Gi"));
        }
        let params = serde_json::Value::Object(params);
        let target = catalog::target_of(
            &entry.name,
            &serde_json::from_value(params.clone()).expect("params"),
        )
        .unwrap_or_default();
        assert!(world::is_executable(&entry.name), "{}", entry.name);
        let e = world
            .execute(&action(&entry.name, &target, params))
            .await
            .expect_err("nothing is configured");
        assert_eq!(e.kind, ErrorKind::NotConfigured, "{}: {e}", entry.name);
        executed += 1;
    }
    assert_eq!(executed, catalog::ActionKind::ALL.len());
    // And nothing outside the catalog is executable.
    assert!(!world::is_executable("kubernetes.pods"));
    assert!(!world::is_executable("pagerduty.escalate"));
    assert!(world::is_executable("pagerduty.resolve"));
}
