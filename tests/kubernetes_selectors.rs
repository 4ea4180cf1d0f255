//! A known subject is read by selector: its pods by its controller's `labelSelector`
//! (matchLabels and matchExpressions), its objects' events by `fieldSelector`, against a fake API
//! server on loopback; `--record` keeps the selected requests, and a recording made without
//! selectors still answers them, filtered here as the server would have. A dependency the subject's
//! lines name and that is down has its own logs read; with nothing named and nothing in trouble,
//! one pod of each workload is.

mod support;

use serde_json::{Value, json};
use sitrep::integrations::transport::{Body, Recording, ReplayTransport, Transport};
use sitrep::world::{Mode, World};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::Cluster;

/// `payments` with a canary pod its Deployment's selector leaves out (`track notin (canary)`),
/// a healthy neighbour Deployment with its own pods and events, and every workload API.
fn cluster() -> Cluster {
    let mut c = Cluster::payments();
    c.workload_apis = true;
    c.deployments[0]["spec"]["selector"] = json!({
        "matchLabels": {"app": "payments-api"},
        "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
    });
    let mut canary = c.pods[1].clone();
    canary["metadata"]["name"] = json!("payments-api-canary-q1w2e");
    canary["metadata"]["labels"]["track"] = json!("canary");
    c.pods.push(canary);
    for i in 0..3 {
        let mut web = c.pods[1].clone();
        web["metadata"]["name"] = json!(format!("web-5b6c7d8f9-w{i}"));
        web["metadata"]["labels"] = json!({"app": "web"});
        web["metadata"]["ownerReferences"][0]["name"] = json!("web-5b6c7d8f9");
        c.pods.push(web);
        c.events.push(json!({
            "metadata": {"name": format!("w{i}"), "namespace": "payments"},
            "involvedObject": {"kind": "Pod", "name": format!("web-5b6c7d8f9-w{i}"), "namespace": "payments"},
            "reason": "Pulled", "message": "Container image already present", "type": "Normal",
            "count": 1, "firstTimestamp": "2026-04-18T10:20:00Z", "lastTimestamp": "2026-04-18T10:20:00Z"
        }));
    }
    let mut web = c.deployments[0].clone();
    web["metadata"]["name"] = json!("web");
    web["spec"]["selector"] = json!({"matchLabels": {"app": "web"}});
    web["status"] = json!({"observedGeneration": 4, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3});
    c.deployments.push(web);
    c
}

/// (path, query) of every GET the fake saw.
fn gets(cluster: &Mutex<Cluster>) -> Vec<(String, BTreeMap<String, String>)> {
    let seen = cluster.lock().map(|c| c.seen.clone()).unwrap_or_default();
    seen.iter()
        .filter_map(|s| s.strip_prefix("GET "))
        .map(|target| {
            let url = reqwest::Url::parse(&format!("http://x{target}")).expect("a request target");
            let query = url.query_pairs().into_owned().collect();
            (url.path().to_string(), query)
        })
        .collect()
}

/// Runs `sitrep investigate` (see [`support::investigate`]).
fn run(args: &[&str], config: &Path, data: &Path) -> Vec<Value> {
    support::investigate(args, config, data).1
}

/// The evidence added, without run-specific ids, sorted (specialists finish in any order).
fn evidence(records: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = records
        .iter()
        .filter(|r| r["event"]["type"] == "evidence_added")
        .map(|r| {
            let mut e = r["event"]["evidence"].clone();
            if let Some(fields) = e.as_object_mut() {
                fields.remove("id");
                fields.remove("call_id");
            }
            e
        })
        .collect();
    out.sort_by_key(|v| v.to_string());
    out
}

/// Pod names in the facts the run observed.
fn observed_pods(records: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = records
        .iter()
        .filter(|r| r["event"]["type"] == "observed")
        .filter(|r| r["event"]["facts"]["type"] == "pods")
        .filter_map(|r| r["event"]["facts"]["items"].as_array())
        .flatten()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_subject_is_listed_by_its_selectors_and_replays_from_the_recording() {
    let shared = Arc::new(Mutex::new(cluster()));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("payments"));
    let alert = tmp.path().join("alert.json");
    std::fs::write(
        &alert,
        json!({
            "version": "4", "status": "firing", "receiver": "sitrep",
            "alerts": [{"status": "firing",
                        "labels": {"alertname": "KubeDeploymentReplicasMismatch", "namespace": "payments",
                                   "deployment": "payments-api", "severity": "warning"},
                        "annotations": {"summary": "payments-api has 1 of 2 replicas available"}}]
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

    let gets = gets(&shared);
    let pods: Vec<&BTreeMap<String, String>> = gets
        .iter()
        .filter(|(p, _)| p == "/api/v1/namespaces/payments/pods")
        .map(|(_, q)| q)
        .collect();
    assert!(
        pods.iter()
            .any(|q| q.get("labelSelector").map(String::as_str)
                == Some("app=payments-api,track notin (canary)")),
        "the subject's pods are asked for by its selector: {pods:?}"
    );
    assert!(
        pods.iter()
            .all(|q| q.contains_key("labelSelector") || q.contains_key("fieldSelector")),
        "no pod list of the whole namespace: {pods:?}"
    );
    let events: Vec<Option<&str>> = gets
        .iter()
        .filter(|(p, _)| p == "/api/v1/namespaces/payments/events")
        .map(|(_, q)| q.get("fieldSelector").map(String::as_str))
        .collect();
    for want in [
        "involvedObject.name=payments-api",
        "involvedObject.name=payments-api-7f9dd8b6c4-x7gr9",
        "involvedObject.name=payments-api-7f9dd8b6c4-k2m4p",
        "involvedObject.name=payments-api-7f9dd8b6c4",
        "type=Warning",
    ] {
        assert!(
            events.contains(&Some(want)),
            "events asked with {want}: {events:?}"
        );
    }
    assert!(
        events.iter().all(Option::is_some),
        "no event list of the whole namespace: {events:?} {:?}",
        live.iter()
            .filter(|r| r["event"]["type"] == "tool_called")
            .map(|r| r["event"].to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        observed_pods(&live),
        [
            "payments-api-7f9dd8b6c4-k2m4p",
            "payments-api-7f9dd8b6c4-x7gr9"
        ],
        "neither the canary the selector leaves out nor the healthy neighbour's pods"
    );
    let diagnosis = live
        .iter()
        .find(|r| r["event"]["type"] == "diagnosis")
        .expect("a diagnosis");
    assert_eq!(
        diagnosis["event"]["category"], "resource_exhaustion",
        "{diagnosis}"
    );

    // The recording holds the selected requests, and replays with nothing live.
    let recorded = std::fs::read_to_string(case.join("recordings.ndjson")).expect("recordings");
    assert!(
        recorded.lines().any(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|r| {
                r["query"]["labelSelector"] == "app=payments-api,track notin (canary)"
            })
        }),
        "the recording keeps the selector"
    );
    drop(k8s);
    let replayed = tokio::task::spawn_blocking(move || {
        run(&["--case", &case.display().to_string()], &config, &data)
    })
    .await
    .expect("replay run");
    assert_eq!(evidence(&live), evidence(&replayed));
}

fn recording(path: &str, items: Vec<Value>, kind: &str) -> Recording {
    Recording {
        integration: "kubernetes".into(),
        method: "GET".into(),
        path: path.into(),
        query: BTreeMap::new(),
        status: 200,
        body: Body::Json(json!({"kind": format!("{kind}List"), "metadata": {}, "items": items})),
        latency_ms: None,
    }
}

#[tokio::test]
async fn a_recording_made_without_selectors_answers_them_as_the_server_would() {
    let c = cluster();
    let replay = Arc::new(ReplayTransport::new(vec![
        recording("/api/v1/namespaces/payments/pods", c.pods.clone(), "Pod"),
        recording(
            "/api/v1/namespaces/payments/events",
            c.events.clone(),
            "Event",
        ),
    ]));
    let transport: Arc<dyn Transport> = replay.clone();
    let w = World::with_transport(transport, Mode::Replay, "payments", None);
    let k = w.kubernetes();
    let pods = k
        .list_pods("payments", Some("app=payments-api,track notin (canary)"))
        .await
        .expect("pods");
    let mut names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "payments-api-7f9dd8b6c4-k2m4p",
            "payments-api-7f9dd8b6c4-x7gr9"
        ]
    );
    let canary = k
        .list_pods("payments", Some("track in (canary)"))
        .await
        .expect("pods");
    assert_eq!(canary.len(), 1);
    let on_node = k
        .list_pods_on("payments", None, Some("ip-10-0-1-99"))
        .await
        .expect("pods");
    assert!(on_node.is_empty(), "no pod runs on another node");
    let warnings = k
        .events(
            "payments",
            Some("payments-api-7f9dd8b6c4-x7gr9"),
            Some("Warning"),
        )
        .await
        .expect("events");
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason, "BackOff");
    let about = k
        .events("payments", Some("payments-api-7f9dd8b6c4-x7gr9"), None)
        .await
        .expect("events");
    assert_eq!(about.len(), 2, "{about:?}");
    let bad = k.events("payments", None, Some("Warning,x=y")).await;
    assert!(bad.is_err(), "a type that is not a word is refused");
}

/// `payments-api` crashing on refused connections to `ledger`, a Deployment of its own whose one
/// pod crash-loops, and why only its own previous log says.
fn dependent_cluster() -> Cluster {
    let mut c = Cluster::payments();
    c.workload_apis = true;
    let crashing = "payments-api-7f9dd8b6c4-x7gr9";
    c.pods[0]["status"]["containerStatuses"][0]["lastState"] = json!({"terminated": {
        "reason": "Error", "exitCode": 1, "finishedAt": "2026-04-18T10:45:30Z"}});
    c.previous_logs.insert(
        ("payments".into(), crashing.into()),
        "2026-04-18T10:45:29Z ERROR could not connect to ledger:5432: connection refused\n".into(),
    );
    let mut ledger = c.pods[0].clone();
    ledger["metadata"]["name"] = json!("ledger-6b7c8d9f5-l1d9r");
    ledger["metadata"]["labels"] = json!({"app": "ledger", "pod-template-hash": "6b7c8d9f5"});
    ledger["metadata"]["ownerReferences"][0]["name"] = json!("ledger-6b7c8d9f5");
    c.pods.push(ledger);
    c.previous_logs.insert(
        ("payments".into(), "ledger-6b7c8d9f5-l1d9r".into()),
        "2026-04-18T10:44:01Z LOG:  starting PostgreSQL 16.3\n\
         2026-04-18T10:44:02Z FATAL:  could not write lock file \"postmaster.pid\": No space left on device\n"
            .into(),
    );
    let mut deployment = c.deployments[0].clone();
    deployment["metadata"]["name"] = json!("ledger");
    deployment["spec"]["replicas"] = json!(1);
    deployment["spec"]["selector"] = json!({"matchLabels": {"app": "ledger"}});
    deployment["status"] = json!({"observedGeneration": 4, "replicas": 1, "readyReplicas": 0,
                                  "updatedReplicas": 1, "unavailableReplicas": 1});
    c.deployments.push(deployment);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_down_is_read_from_its_own_logs() {
    let shared = Arc::new(Mutex::new(dependent_cluster()));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("payments"));
    let data = tmp.path().join("data");
    let live = tokio::task::spawn_blocking(move || {
        run(
            &["--problem", "payments-api keeps crashing"],
            &config,
            &data,
        )
    })
    .await
    .expect("live run");
    let logs_read: Vec<String> = gets(&shared)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.ends_with("/log"))
        .collect();
    assert!(
        logs_read
            .iter()
            .any(|p| p == "/api/v1/namespaces/payments/pods/ledger-6b7c8d9f5-l1d9r/log"),
        "the dependency's own logs are read: {logs_read:?}"
    );
    let diagnosis = live
        .iter()
        .find(|r| r["event"]["type"] == "diagnosis")
        .expect("a diagnosis");
    let cause = diagnosis["event"]["root_cause"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        diagnosis["event"]["category"], "resource_exhaustion",
        "{diagnosis}"
    );
    assert!(
        cause.contains("ledger") && cause.contains("No space left on device"),
        "{cause}"
    );
}

/// The pod logs a problem naming nothing reads over `extra_web` more healthy `web` pods.
async fn logs_read_naming_nothing(extra_web: usize) -> Vec<String> {
    let mut c = cluster();
    for i in 0..extra_web {
        let mut web = c.pods[c.pods.len() - 1].clone();
        web["metadata"]["name"] = json!(format!("web-5b6c7d8f9-x{i}"));
        c.pods.push(web);
    }
    // Every pod Running and Ready: nothing in trouble to start from.
    let healthy = c.pods[1]["status"].clone();
    for p in &mut c.pods {
        p["status"] = healthy.clone();
    }
    let shared = Arc::new(Mutex::new(c));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("payments"));
    let data = tmp.path().join("data");
    tokio::task::spawn_blocking(move || {
        run(&["--problem", "logins fail for some users"], &config, &data)
    })
    .await
    .expect("live run");
    gets(&shared)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.ends_with("/log"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_problem_naming_nothing_over_healthy_pods_reads_one_pod_of_each_workload() {
    let of = |logs: &[String], prefix: &str| {
        logs.iter()
            .filter(|p| p.contains(&format!("/pods/{prefix}")))
            .count()
    };
    // Few pods: every one is read, since a fault of one replica shows only in its own lines.
    let few = logs_read_naming_nothing(0).await;
    assert!(
        of(&few, "web-") == 3 && of(&few, "payments-api-") >= 2,
        "every pod is read: {few:?}"
    );
    // More than the sweep reads: one pod of each workload.
    let many = logs_read_naming_nothing(20).await;
    assert!(
        of(&many, "web-") >= 1 && of(&many, "payments-api-") >= 1,
        "one pod of each workload is read: {many:?}"
    );
    assert!(
        of(&many, "web-") <= 2,
        "not every pod of one workload: {many:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_failing_on_one_node_has_that_nodes_agents_listed_and_read() {
    let mut c = Cluster::payments();
    c.workload_apis = true;
    // The Ready replica runs on another node; the crashing one stays on ip-10-0-1-42.
    c.pods[1]["spec"]["nodeName"] = json!("ip-10-0-2-7");
    let mut other = c.nodes[0].clone();
    other["metadata"]["name"] = json!("ip-10-0-2-7");
    c.nodes.push(other);
    let mut agent = c.pods[1].clone();
    agent["metadata"]["name"] = json!("calico-node-abcde");
    agent["metadata"]["namespace"] = json!("kube-system");
    agent["metadata"]["labels"] = json!({"k8s-app": "calico-node"});
    agent["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "name": "calico-node", "uid": "ds", "controller": true}]);
    agent["spec"]["nodeName"] = json!("ip-10-0-1-42");
    agent["status"]["conditions"][0]["status"] = json!("False");
    agent["status"]["containerStatuses"][0]["ready"] = json!(false);
    c.pods.push(agent);
    let shared = Arc::new(Mutex::new(c));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, Some("payments"));
    let data = tmp.path().join("data");
    tokio::task::spawn_blocking(move || {
        run(&["--problem", "payments-api keeps failing"], &config, &data)
    })
    .await
    .expect("live run");
    let gets = gets(&shared);
    assert!(
        gets.iter().any(|(p, q)| p == "/api/v1/pods"
            && q.get("fieldSelector").map(String::as_str) == Some("spec.nodeName=ip-10-0-1-42")),
        "the failing node's pods are listed in every namespace: {gets:?}"
    );
    assert!(
        gets.iter()
            .any(|(p, _)| p.ends_with("/pods/calico-node-abcde/log")),
        "the node's agent that is not ready has its logs read: {gets:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_problem_naming_no_namespace_has_its_subjects_rollout_history_read() {
    let shared = Arc::new(Mutex::new(cluster()));
    let k8s = support::kubernetes(shared.clone()).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = support::kube_config(tmp.path(), &k8s.url, None);
    let data = tmp.path().join("data");
    tokio::task::spawn_blocking(move || {
        run(
            &["--problem", "payments-api keeps failing since the release"],
            &config,
            &data,
        )
    })
    .await
    .expect("live run");
    let gets = gets(&shared);
    assert!(
        gets.iter()
            .any(|(p, _)| p == "/apis/apps/v1/namespaces/payments/replicasets"),
        "the subject's namespace's ReplicaSets are read: {gets:?}"
    );
}
