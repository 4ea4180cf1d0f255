//! A StatefulSet's rollout history is read from its ControllerRevisions, against a fake API
//! server on loopback: the changes an investigation lists include its latest revision, titled
//! with the image it brought; `--record` keeps the read, the recording replays it, and a case
//! recorded without it still investigates, that one read failing.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::Cluster;

const NEW_REVISION: &str =
    "StatefulSet billing-pg revision 4 (postgres:16.3): image postgres:16.2 → postgres:16.3";

/// A ControllerRevision as the StatefulSet controller writes it: the whole pod template as a
/// patch that replaces the old one, env values among it.
fn revision(n: i64, image: &str, created: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("billing-pg-6d5f8c7b{n}"), "namespace": "billing",
            "creationTimestamp": created,
            "labels": {"app": "billing-pg", "controller.kubernetes.io/hash": format!("6d5f8c7b{n}")},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "billing-pg",
                "uid": "sts-uid", "controller": true, "blockOwnerDeletion": true}]},
        "revision": n,
        "data": {"spec": {"template": {"$patch": "replace",
            "metadata": {"labels": {"app": "billing-pg"}},
            "spec": {"containers": [{"name": "postgres", "image": image,
                "env": [{"name": "POSTGRES_PASSWORD", "value": "revision-env-hunter2"}]}]}}}}
    })
}

/// `billing`: a StatefulSet whose two pods crash-loop on `postgres:16.3`, its revision 4
/// (`postgres:16.3`) and revision 3 before it (`postgres:16.2`).
fn cluster() -> Cluster {
    let pod = |i: u32| {
        json!({
            "metadata": {"name": format!("billing-pg-{i}"), "namespace": "billing", "uid": format!("uid-pg-{i}"),
                "creationTimestamp": "2026-04-18T10:12:30Z",
                "labels": {"app": "billing-pg", "controller-revision-hash": "billing-pg-6d5f8c7b4"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "billing-pg",
                    "uid": "sts-uid", "controller": true}]},
            "spec": {"nodeName": "ip-10-0-1-42", "containers": [{"name": "postgres", "image": "postgres:16.3"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                "containerStatuses": [{"name": "postgres", "ready": false, "restartCount": 6,
                    "image": "postgres:16.3", "imageID": "",
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s restarting failed container"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1,
                        "finishedAt": "2026-04-18T10:40:00Z"}}}]}
        })
    };
    Cluster {
        pods: vec![pod(0), pod(1)],
        workload_apis: true,
        statefulsets: vec![json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "billing-pg", "namespace": "billing", "uid": "sts-uid", "generation": 4,
                "labels": {"app": "billing-pg"}, "creationTimestamp": "2026-03-01T00:00:00Z"},
            "spec": {"replicas": 2, "serviceName": "billing-pg",
                "selector": {"matchLabels": {"app": "billing-pg"}},
                "template": {"metadata": {"labels": {"app": "billing-pg"}},
                    "spec": {"containers": [{"name": "postgres", "image": "postgres:16.3"}]}}},
            "status": {"observedGeneration": 4, "replicas": 2, "readyReplicas": 0, "currentReplicas": 2,
                "updatedReplicas": 2, "currentRevision": "billing-pg-6d5f8c7b4",
                "updateRevision": "billing-pg-6d5f8c7b4"}
        })],
        controllerrevisions: vec![
            revision(3, "postgres:16.2", "2026-04-10T08:00:00Z"),
            revision(4, "postgres:16.3", "2026-04-18T10:12:00Z"),
        ],
        ..Cluster::default()
    }
}

/// Runs `sitrep investigate` (see [`support::investigate`]).
fn run(args: &[&str], config: &Path, data: &Path) -> Vec<Value> {
    support::investigate(args, config, data).1
}

/// The titles of the changes the run observed.
fn observed_changes(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["event"]["type"] == "observed")
        .filter(|r| r["event"]["facts"]["type"] == "changes")
        .filter_map(|r| r["event"]["facts"]["items"].as_array())
        .flatten()
        .filter_map(|c| c["title"].as_str().map(str::to_string))
        .collect()
}

/// Tools whose call failed, by the `tool_called` each `tool_failed` answers.
fn failed_tools(records: &[Value]) -> Vec<String> {
    let called: std::collections::BTreeMap<String, String> = records
        .iter()
        .filter(|r| r["event"]["type"] == "tool_called")
        .filter_map(|r| {
            Some((
                r["event"]["call_id"].as_str()?.to_string(),
                r["event"]["tool"].as_str()?.to_string(),
            ))
        })
        .collect();
    records
        .iter()
        .filter(|r| r["event"]["type"] == "tool_failed")
        .filter_map(|r| called.get(r["event"]["call_id"].as_str()?).cloned())
        .collect()
}

fn has_diagnosis(records: &[Value]) -> bool {
    records.iter().any(|r| r["event"]["type"] == "diagnosis")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statefulsets_new_revision_is_among_the_changes_live_and_replayed() {
    let shared = Arc::new(Mutex::new(cluster()));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("billing"));
    let alert = tmp.path().join("alert.json");
    std::fs::write(
        &alert,
        json!({
            "version": "4", "status": "firing", "receiver": "sitrep",
            "alerts": [{"status": "firing",
                        "labels": {"alertname": "KubeStatefulSetReplicasMismatch", "namespace": "billing",
                                   "statefulset": "billing-pg", "severity": "warning"},
                        "annotations": {"summary": "billing-pg has 0 of 2 replicas ready"}}]
        })
        .to_string(),
    )
    .expect("write alert");
    let case = tmp.path().join("recorded");
    let data = tmp.path().join("data");
    let args = [
        "--alert".to_string(),
        alert.display().to_string(),
        "--record".to_string(),
        case.display().to_string(),
    ];
    let (config_c, data_c) = (config.clone(), data.clone());
    let live = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args, &config_c, &data_c)
    })
    .await
    .expect("live run");

    let seen = shared.lock().map(|c| c.seen.clone()).unwrap_or_default();
    assert!(
        seen.iter()
            .any(|s| s.starts_with("GET /apis/apps/v1/namespaces/billing/controllerrevisions")),
        "the revisions are listed in the alert's namespace: {seen:?}"
    );
    let changes = observed_changes(&live);
    assert!(
        changes.iter().any(|t| t == NEW_REVISION),
        "the new revision is a change, with the image it brought: {changes:?}"
    );
    assert!(
        changes
            .iter()
            .any(|t| t == "StatefulSet billing-pg revision 3 (postgres:16.2)"),
        "{changes:?}"
    );
    let history = live
        .iter()
        .filter(|r| r["event"]["type"] == "evidence_added")
        .map(|r| &r["event"]["evidence"])
        .find(|e| e["source"] == "kubernetes.controller_revisions" && e["kind"] == "changes")
        .expect("the rollout history as evidence");
    assert!(history.to_string().contains(NEW_REVISION), "{history}");
    let text = live.iter().map(Value::to_string).collect::<String>();
    assert!(
        !text.contains("revision-env-hunter2"),
        "a template's env values are not kept"
    );
    assert!(has_diagnosis(&live));
    assert!(
        !failed_tools(&live).contains(&"kubernetes.controller_revisions".to_string()),
        "{:?}",
        failed_tools(&live)
    );

    // The recording answers the read with nothing live.
    drop(k8s);
    let recorded = std::fs::read_to_string(case.join("recordings.ndjson")).expect("recordings");
    assert!(
        recorded.contains("/controllerrevisions"),
        "the read is recorded"
    );
    let (case_c, config_c, data_c) = (case.clone(), config.clone(), data.clone());
    let replayed = tokio::task::spawn_blocking(move || {
        run(
            &["--case", &case_c.display().to_string()],
            &config_c,
            &data_c,
        )
    })
    .await
    .expect("replay run");
    assert!(
        observed_changes(&replayed)
            .iter()
            .any(|t| t == NEW_REVISION),
        "{:?}",
        observed_changes(&replayed)
    );

    // A case recorded without the revisions still investigates; that one read fails.
    let without: String = recorded
        .lines()
        .filter(|l| !l.contains("/controllerrevisions"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(case.join("recordings.ndjson"), without).expect("rewrite recordings");
    let older = tokio::task::spawn_blocking(move || {
        run(&["--case", &case.display().to_string()], &config, &data)
    })
    .await
    .expect("run without the revisions");
    assert!(has_diagnosis(&older));
    assert_eq!(
        failed_tools(&older)
            .iter()
            .filter(|t| *t == "kubernetes.controller_revisions")
            .count(),
        1,
        "{:?}",
        failed_tools(&older)
    );
    assert!(
        observed_changes(&older)
            .iter()
            .all(|t| !t.starts_with("StatefulSet")),
        "no revision without its recording"
    );
}

/// Across all namespaces, in pages: a StatefulSet's revision and a DaemonSet's, each read as a
/// change to its own owner; a bad namespace name is refused before any request.
#[tokio::test]
async fn revisions_of_every_namespace_are_read_page_by_page() {
    use axum::extract::RawQuery;
    use axum::http::Uri;
    use sitrep::integrations::{Endpoint, LiveTransport, Transport};
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let router = axum::Router::new().fallback(move |uri: Uri, RawQuery(q): RawQuery| {
        let log = log.clone();
        async move {
            let q = q.unwrap_or_default();
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("{}?{q}", uri.path()));
            let mut agent = revision(7, "agent:2.4", "2026-04-18T09:00:00Z");
            agent["metadata"]["namespace"] = json!("monitoring");
            agent["metadata"]["name"] = json!("node-agent-8f9c7d6b5");
            agent["metadata"]["ownerReferences"][0]["kind"] = json!("DaemonSet");
            agent["metadata"]["ownerReferences"][0]["name"] = json!("node-agent");
            let (items, next) = if q.contains("continue=p2") {
                (vec![agent], None)
            } else {
                (
                    vec![revision(4, "postgres:16.3", "2026-04-18T10:12:00Z")],
                    Some("p2"),
                )
            };
            let mut meta = json!({"resourceVersion": "77"});
            if let Some(t) = next {
                meta["continue"] = json!(t);
            }
            axum::Json(
                json!({"apiVersion": "apps/v1", "kind": "ControllerRevisionList",
                              "metadata": meta, "items": items}),
            )
        }
    });
    let server = support::serve(router).await;
    let live = LiveTransport::new()
        .expect("client")
        .with_endpoint("kubernetes", Endpoint::new(&server.url));
    let transport: Arc<dyn Transport> = Arc::new(live);
    let world =
        sitrep::world::World::with_transport(transport, sitrep::world::Mode::Live, "billing", None);
    let k = world.kubernetes();
    let all = k.controller_revisions(None).await.expect("all revisions");
    let owners: Vec<Option<&str>> = all.iter().map(|r| r.owner.as_deref()).collect();
    assert_eq!(
        owners,
        [Some("StatefulSet/billing-pg"), Some("DaemonSet/node-agent")]
    );
    let asked = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked
            .iter()
            .all(|a| a.starts_with("/apis/apps/v1/controllerrevisions?") && a.contains("limit=")),
        "{asked:?}"
    );
    let changes = sitrep::agent::specialists::rollout_changes(&all);
    let targets: Vec<&str> = changes.iter().map(|c| c.target.as_str()).collect();
    assert_eq!(targets, ["billing/billing-pg", "monitoring/node-agent"]);
    assert_eq!(
        changes[1].title,
        "DaemonSet node-agent revision 7 (agent:2.4)"
    );

    let bad = k.controller_revisions("../secrets").await;
    assert!(bad.is_err(), "{bad:?}");
    assert_eq!(seen.lock().map(|s| s.len()).unwrap_or_default(), 2);
}
