//! Kubernetes, Loki and GitHub clients against loopback fakes that speak the vendors' wire formats.

mod support;

use chrono::{DateTime, TimeZone, Utc};
use secrecy::SecretString;
use serde_json::json;
use sitrep::config::ResolvedAuth;
use sitrep::integrations::{Direction, Endpoint, ErrorKind, LiveTransport, Transport};
use sitrep::model::Action;
use sitrep::world::{Mode, World};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use support::Cluster;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|d| d.with_timezone(&Utc))
        .expect("time literal")
}

fn world_over(endpoints: &[(&str, Endpoint)]) -> World {
    let mut live = LiveTransport::new().expect("client");
    for (name, ep) in endpoints {
        live = live.with_endpoint(name, ep.clone());
    }
    let transport: Arc<dyn Transport> = Arc::new(live);
    World::with_transport(
        transport,
        Mode::Live,
        "payments",
        Some("acme/payments".into()),
    )
}

fn action(kind: &str, target: &str, params: serde_json::Value) -> Action {
    Action {
        id: "a1".into(),
        kind: kind.into(),
        target: target.into(),
        params: serde_json::from_value::<BTreeMap<String, serde_json::Value>>(params)
            .unwrap_or_default(),
        risk: sitrep::model::Risk::Medium,
        rationale: "test".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    }
}

#[tokio::test]
async fn kubernetes_reads_parse_into_facts() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(&[("kubernetes", Endpoint::new(&server.url))]);
    let k = world.kubernetes();

    let pods = k
        .list_pods("payments", Some("app=payments-api"))
        .await
        .expect("pods");
    assert_eq!(pods.len(), 2);
    let crashing = pods
        .iter()
        .find(|p| p.name.ends_with("x7gr9"))
        .expect("crashing pod");
    assert!(!crashing.ready());
    assert_eq!(crashing.restarts(), 8);
    let c = &crashing.containers[0];
    assert_eq!(c.state, "waiting");
    assert_eq!(c.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(c.last_reason.as_deref(), Some("OOMKilled"));
    assert_eq!(c.last_exit_code, Some(137));
    assert_eq!(c.memory_limit.as_deref(), Some("512Mi"));
    assert!(c.has_liveness_probe && !c.has_readiness_probe);
    assert_eq!(
        crashing.owner.as_deref(),
        Some("ReplicaSet/payments-api-7f9dd8b6c4")
    );
    assert_eq!(crashing.node.as_deref(), Some("ip-10-0-1-42"));
    assert!(crashing.condition_messages["Ready"].contains("unready"));

    assert!(
        k.list_pods("payments", Some("app=other"))
            .await
            .expect("pods")
            .is_empty()
    );
    assert_eq!(k.list_pods(None, None).await.expect("all pods").len(), 2);

    let pod = k
        .get_pod("payments", "payments-api-7f9dd8b6c4-k2m4p")
        .await
        .expect("pod");
    assert!(pod.ready());
    assert_eq!(pod.containers[0].state, "running");

    let logs = k
        .pod_logs(
            "payments",
            "payments-api-7f9dd8b6c4-x7gr9",
            Some("api"),
            false,
            Some(2),
        )
        .await
        .expect("logs");
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0].at, Some(t("2026-04-18T10:45:20Z")));
    assert!(logs[0].line.starts_with("WARN heap"));
    assert_eq!(
        logs[0].labels.get("container").map(String::as_str),
        Some("api")
    );
    let previous = k
        .pod_logs(
            "payments",
            "payments-api-7f9dd8b6c4-x7gr9",
            None,
            true,
            None,
        )
        .await
        .expect("previous logs");
    assert!(previous[0].line.contains("OutOfMemoryError"));
    let seen = cluster.lock().expect("lock").seen.clone();
    assert!(
        seen.iter().any(|s| s.contains("/log?")
            && s.contains("tailLines=2")
            && s.contains("container=api"))
    );
    assert!(seen.iter().any(|s| s.contains("previous=true")));

    let events = k
        .events("payments", Some("payments-api-7f9dd8b6c4-x7gr9"), None)
        .await
        .expect("events");
    assert_eq!(events.len(), 2);
    assert!(
        events
            .iter()
            .all(|e| e.object == "Pod/payments-api-7f9dd8b6c4-x7gr9")
    );
    let backoff = events
        .iter()
        .find(|e| e.reason == "BackOff")
        .expect("backoff");
    assert_eq!(backoff.event_type, "Warning");
    assert_eq!(backoff.count, 8);
    assert_eq!(backoff.last_seen, Some(t("2026-04-18T10:45:30Z")));
    assert_eq!(
        k.events(None, None, None).await.expect("all events").len(),
        3
    );

    let deployments = k.deployments("payments").await.expect("deployments");
    let d = &deployments[0];
    assert_eq!(
        (d.replicas, d.ready_replicas, d.unavailable_replicas),
        (2, 1, 1)
    );
    assert_eq!(d.revision.as_deref(), Some("2"));
    assert_eq!(d.images, vec!["registry/payments-api:v2".to_string()]);
    assert_eq!(d.conditions["Available"].1, "MinimumReplicasUnavailable");

    let sets = k.replica_sets("payments").await.expect("replica sets");
    assert_eq!(sets.len(), 2);
    assert!(sets.iter().any(|s| s.revision.as_deref() == Some("1") && s.images == ["registry/payments-api:v1"]));

    let nodes = k.nodes().await.expect("nodes");
    assert!(nodes[0].ready());
    assert_eq!(
        nodes[0].taints,
        vec!["dedicated=payments:NoSchedule".to_string()]
    );
    assert_eq!(nodes[0].allocatable_memory.as_deref(), Some("15Gi"));
}

#[tokio::test]
async fn kubernetes_actions_send_the_patches_kubectl_would() {
    let cluster = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(&[("kubernetes", Endpoint::new(&server.url))]);

    let msg = world
        .execute(&action(
            "kubernetes.rollout_restart",
            "deployment/payments-api",
            json!({"namespace": "payments"}),
        ))
        .await
        .expect("restart");
    assert!(msg.contains("restarted"), "{msg}");
    {
        let c = cluster.lock().expect("lock");
        let (ctype, patch) = c.patches.last().expect("a patch");
        assert_eq!(ctype, "application/merge-patch+json");
        assert!(
            patch
                .pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
                .is_some()
        );
        let d = &c.deployments[0];
        assert!(
            d.pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
                .is_some()
        );
    }

    let msg = world
        .execute(&action(
            "kubernetes.rollout_undo",
            "deployment/payments-api",
            json!({}),
        ))
        .await
        .expect("undo");
    assert!(
        msg.contains("revision 1") && msg.contains("payments-api:v1"),
        "{msg}"
    );
    {
        let c = cluster.lock().expect("lock");
        let (ctype, _) = c.patches.last().expect("a patch");
        assert_eq!(ctype, "application/json-patch+json");
        let image = c.deployments[0]
            .pointer("/spec/template/spec/containers/0/image")
            .cloned();
        assert_eq!(image, Some(json!("registry/payments-api:v1")));
        assert!(
            c.deployments[0]
                .pointer("/spec/template/metadata/labels/pod-template-hash")
                .is_none()
        );
    }

    world
        .execute(&action(
            "kubernetes.scale",
            "deployment/payments-api",
            json!({"replicas": 4}),
        ))
        .await
        .expect("scale");
    assert_eq!(
        cluster.lock().expect("lock").deployments[0]["spec"]["replicas"],
        json!(4)
    );

    world
        .execute(&action(
            "kubernetes.delete_pod",
            "pod/payments-api-7f9dd8b6c4-x7gr9",
            json!({}),
        ))
        .await
        .expect("delete");
    assert_eq!(cluster.lock().expect("lock").pods.len(), 1);
}

#[tokio::test]
async fn kubernetes_status_errors_are_clear() {
    let mut c = Cluster::payments();
    c.forbidden.push("payments-api".into());
    let cluster = Arc::new(Mutex::new(c));
    let server = support::kubernetes(cluster.clone()).await;
    let world = world_over(&[("kubernetes", Endpoint::new(&server.url))]);
    let k = world.kubernetes();

    let e = k.get_pod("payments", "nope").await.expect_err("404");
    assert_eq!(e.status(), Some(404));
    assert_eq!(
        e.to_string(),
        "kubernetes: GET /api/v1/namespaces/payments/pods/nope: HTTP 404: pods \"nope\" not found"
    );

    let e = k
        .scale("payments", "payments-api", 1)
        .await
        .expect_err("403");
    assert_eq!(e.status(), Some(403));
    assert!(
        e.to_string()
            .contains("forbidden: User \"sitrep\" cannot patch"),
        "{e}"
    );

    {
        let mut c = cluster.lock().expect("lock");
        c.forbidden.clear();
        c.conflict.push("payments-api".into());
    }
    let e = k
        .scale("payments", "payments-api", 1)
        .await
        .expect_err("409");
    assert_eq!(e.status(), Some(409));
    assert!(
        e.to_string().contains("the object has been modified"),
        "{e}"
    );

    let e = k
        .get_pod("payments", "../../secrets")
        .await
        .expect_err("bad name");
    assert!(matches!(e.kind, ErrorKind::Invalid(_)));

    let e = world
        .execute(&action(
            "kubernetes.scale",
            "deployment/payments-api",
            json!({}),
        ))
        .await
        .expect_err("no replicas");
    assert!(e.to_string().contains("replicas"), "{e}");
}

#[tokio::test]
async fn kubernetes_bearer_token_is_sent_and_401_is_clear() {
    let mut c = Cluster::payments();
    c.token = Some("sekret-token-123".into());
    let cluster = Arc::new(Mutex::new(c));
    let server = support::kubernetes(cluster).await;

    let anonymous = world_over(&[("kubernetes", Endpoint::new(&server.url))]);
    let e = anonymous.kubernetes().nodes().await.expect_err("401");
    assert_eq!(e.status(), Some(401));

    let auth = ResolvedAuth::Bearer(SecretString::from("sekret-token-123".to_string()));
    let authed = world_over(&[("kubernetes", Endpoint::new(&server.url).auth(Some(auth)))]);
    assert_eq!(authed.kubernetes().nodes().await.expect("nodes").len(), 1);
}

#[tokio::test]
async fn loki_streams_honour_limit_and_direction() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = support::loki(seen.clone()).await;
    let world = world_over(&[("loki", Endpoint::new(&server.url))]);
    let start = Utc.timestamp_opt(1_776_505_000, 0).single().expect("start");
    let end = Utc.timestamp_opt(1_776_510_000, 0).single().expect("end");

    let lines = world
        .loki()
        .query_range(
            "{app=\"payments-api\"} |= \"ERROR\"",
            start,
            end,
            3,
            Direction::Forward,
        )
        .await
        .expect("loki");
    assert_eq!(lines.len(), 3);
    assert!(
        lines.windows(2).all(|w| w[0].at <= w[1].at),
        "forward is oldest first"
    );
    assert_eq!(
        lines[0].labels.get("level").map(String::as_str),
        Some("info")
    );

    let back = world
        .loki()
        .query_range(
            "{app=\"payments-api\"}",
            start,
            end,
            10,
            Direction::Backward,
        )
        .await
        .expect("loki");
    assert_eq!(back.len(), 4);
    assert!(
        back.windows(2).all(|w| w[0].at >= w[1].at),
        "backward is newest first"
    );

    let q = seen.lock().expect("lock")[0].clone();
    assert_eq!(q.get("limit").map(String::as_str), Some("3"));
    assert_eq!(q.get("direction").map(String::as_str), Some("forward"));
    assert_eq!(
        q.get("start").map(String::as_str),
        Some("1776505000000000000")
    );
}

#[tokio::test]
async fn github_changes_in_a_window_and_a_revert_pr() {
    let repo = Arc::new(Mutex::new(support::Repo {
        head: support::MERGE_SHA.into(),
        ..Default::default()
    }));
    let server = support::github(repo.clone()).await;
    let world = world_over(&[("github", Endpoint::new(&server.url))]);
    let gh = world.github();
    let (since, until) = (t("2026-04-18T09:00:00Z"), t("2026-04-18T11:00:00Z"));

    let deployments = gh
        .deployments("acme/payments", since, until)
        .await
        .expect("deployments");
    assert_eq!(
        deployments.len(),
        1,
        "the April 10th deploy is outside the window"
    );
    assert_eq!(deployments[0].id, "a1b2c3d");
    assert_eq!(deployments[0].title, "deploy main to production");
    assert_eq!(deployments[0].author.as_deref(), Some("deploy-bot"));

    let commits = gh
        .commits("acme/payments", since, until)
        .await
        .expect("commits");
    assert_eq!(commits[0].title, "Raise batch size (#42)");
    assert_eq!(commits[0].author.as_deref(), Some("dana"));

    let pulls = gh
        .merged_pulls("acme/payments", since, until)
        .await
        .expect("pulls");
    assert_eq!(pulls.len(), 1, "unmerged PRs are left out");
    assert_eq!(pulls[0].id, "#42");
    assert_eq!(pulls[0].kind, sitrep::model::ChangeKind::PullRequest);

    let msg = world
        .execute(&action("github.revert_pr", "#42", json!({})))
        .await
        .expect("revert");
    assert!(
        msg.ends_with("https://github.com/acme/payments/pull/43"),
        "{msg}"
    );
    {
        let r = repo.lock().expect("lock");
        assert_eq!(r.created_commits[0]["tree"], json!("tree-parent"));
        assert_eq!(r.created_commits[0]["parents"], json!([support::MERGE_SHA]));
        assert_eq!(
            r.created_refs[0]["ref"],
            json!("refs/heads/revert-42-a1b2c3d")
        );
        assert_eq!(r.created_pulls[0]["base"], json!("main"));
    }

    repo.lock().expect("lock").head = "somethingnewer".into();
    let e = gh
        .revert_pr("acme/payments", 42)
        .await
        .expect_err("moved base");
    assert!(e.to_string().contains("has moved past the merge"), "{e}");

    let e = gh
        .deployments("acme/nope", since, until)
        .await
        .expect_err("404");
    assert_eq!(e.status(), Some(404));
    assert!(e.to_string().ends_with("HTTP 404: Not Found"), "{e}");
}

#[tokio::test]
async fn unconfigured_integrations_say_so() {
    let world = world_over(&[]);
    assert!(!world.has("prometheus"));
    let e = world
        .prometheus()
        .rules()
        .await
        .expect_err("not configured");
    assert_eq!(
        e.to_string(),
        "prometheus: GET /api/v1/rules: not configured"
    );
}

#[tokio::test]
async fn live_kubernetes_goes_through_kube_with_kubeconfig_and_context() {
    let mut c = Cluster::payments();
    c.token = Some("kubeconfig-token-42".into());
    let cluster = Arc::new(Mutex::new(c));
    let server = support::kubernetes(cluster.clone()).await;
    let dead = format!("http://127.0.0.1:{}", support::free_port());
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\n\
             clusters:\n- name: fake\n  cluster:\n    server: {}\n- name: dead\n  cluster:\n    server: {dead}\n\
             users:\n- name: sre\n  user:\n    token: kubeconfig-token-42\n\
             contexts:\n- name: elsewhere\n  context:\n    cluster: dead\n    user: sre\n\
             - name: payments-prod\n  context:\n    cluster: fake\n    user: sre\n    namespace: payments\n",
            server.url
        ),
    )
    .expect("write kubeconfig");
    let config = sitrep::config::Config::parse(
        &format!(
            "[integrations.kubernetes]\nkubeconfig = \"{}\"\ncontext = \"payments-prod\"\ntimeout_secs = 5\n",
            kubeconfig.display()
        ),
        std::path::Path::new("test.toml"),
    )
    .expect("config");
    let world = World::live(&config).await.expect("live world");
    assert!(world.has("kubernetes"));
    assert_eq!(
        world.kubernetes().default_namespace(),
        "payments",
        "namespace from the context"
    );
    let pods = world
        .kubernetes()
        .list_pods("payments", None)
        .await
        .expect("pods via kube");
    assert_eq!(pods.len(), 2);
    let logs = world
        .kubernetes()
        .pod_logs(
            "payments",
            "payments-api-7f9dd8b6c4-x7gr9",
            None,
            false,
            Some(1),
        )
        .await
        .expect("logs via kube");
    assert_eq!(logs.len(), 1);
    let e = world
        .kubernetes()
        .get_pod("payments", "nope")
        .await
        .expect_err("404 via kube");
    assert_eq!(e.status(), Some(404));
    assert!(
        cluster
            .lock()
            .expect("lock")
            .seen
            .iter()
            .any(|s| s.contains("/pods"))
    );
}

/// StatefulSets, DaemonSets, Jobs and CronJobs as the API server lists them, namespaced and
/// cluster-wide; an API group the cluster does not serve is a 404 the caller sees as one.
#[tokio::test]
async fn kubernetes_workload_lists_parse_into_facts() {
    use axum::http::{StatusCode, Uri};
    use axum::response::IntoResponse;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let router = axum::Router::new().fallback(move |uri: Uri| {
        let log = log.clone();
        async move {
            let path = uri.path().to_string();
            log.lock().unwrap_or_else(|e| e.into_inner()).push(path.clone());
            let list = |kind: &str, items: serde_json::Value| {
                json!({"apiVersion": "v1", "kind": format!("{kind}List"),
                       "metadata": {"resourceVersion": "4242"}, "items": items})
            };
            let body = match path.as_str() {
                "/apis/apps/v1/namespaces/orders/statefulsets" => list("StatefulSet", json!([{
                    "metadata": {"name": "orders-db", "namespace": "orders", "uid": "ss-1"},
                    "spec": {"replicas": 3, "serviceName": "orders-db",
                        "selector": {"matchLabels": {"app": "orders-db"}},
                        "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16.2"}]}}},
                    "status": {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 3,
                        "currentRevision": "orders-db-5c8d", "updateRevision": "orders-db-5c8d"}
                }])),
                "/apis/apps/v1/daemonsets" => list("DaemonSet", json!([{
                    "metadata": {"name": "node-exporter", "namespace": "monitoring"},
                    "spec": {"selector": {"matchLabels": {"app": "node-exporter"}}, "template": {}},
                    "status": {"currentNumberScheduled": 4, "desiredNumberScheduled": 4,
                        "numberMisscheduled": 0, "numberReady": 3, "numberUnavailable": 1,
                        "numberAvailable": 3, "updatedNumberScheduled": 4}
                }])),
                "/apis/batch/v1/namespaces/orders/jobs" => list("Job", json!([{
                    "metadata": {"name": "orders-migrate", "namespace": "orders", "uid": "job-1",
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                            "name": "orders-nightly", "uid": "cj-1", "controller": true}]},
                    "spec": {"backoffLimit": 2, "completions": 1,
                        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "job-1"}},
                        "template": {}},
                    "status": {"failed": 3, "startTime": "2026-03-11T02:00:00Z",
                        "conditions": [{"type": "Failed", "status": "True",
                            "reason": "BackoffLimitExceeded",
                            "message": "Job has reached the specified backoff limit"}]}
                }])),
                "/apis/batch/v1/namespaces/orders/cronjobs" => list("CronJob", json!([{
                    "metadata": {"name": "orders-nightly", "namespace": "orders"},
                    "spec": {"schedule": "0 2 * * *", "jobTemplate": {}},
                    "status": {"lastScheduleTime": "2026-03-11T02:00:00Z",
                        "lastSuccessfulTime": "2026-03-10T02:03:00Z"}
                }])),
                _ => {
                    let status = support::k8s_status(404, "NotFound", "the server could not find the requested resource");
                    return (StatusCode::NOT_FOUND, axum::Json(status)).into_response();
                }
            };
            axum::Json(body).into_response()
        }
    });
    let server = support::serve(router).await;
    let world = world_over(&[("kubernetes", Endpoint::new(&server.url))]);
    let k = world.kubernetes();

    let sets = k.statefulsets("orders").await.expect("statefulsets");
    assert_eq!(sets.len(), 1);
    assert_eq!(
        (
            sets[0].kind.as_str(),
            sets[0].desired,
            sets[0].ready,
            sets[0].unavailable
        ),
        ("StatefulSet", 3, 2, 1)
    );
    assert_eq!(sets[0].current_revision, sets[0].update_revision);

    let daemons = k.daemonsets(None).await.expect("all daemonsets");
    assert_eq!(daemons[0].namespace, "monitoring");
    assert_eq!((daemons[0].desired, daemons[0].unavailable), (4, 1));

    let jobs = k.jobs("orders").await.expect("jobs");
    assert_eq!(jobs[0].owner.as_deref(), Some("CronJob/orders-nightly"));
    assert_eq!(jobs[0].conditions["Failed"].1, "BackoffLimitExceeded");
    assert_eq!((jobs[0].failed, jobs[0].backoff_limit), (3, Some(2)));

    let crons = k.cronjobs("orders").await.expect("cronjobs");
    assert_eq!(crons[0].schedule.as_deref(), Some("0 2 * * *"));
    assert_eq!(crons[0].last_schedule, Some(t("2026-03-11T02:00:00Z")));
    assert_eq!(crons[0].last_success, Some(t("2026-03-10T02:03:00Z")));

    // A cluster without the objects (or the API) answers 404: an error, not an empty list.
    let e = k.cronjobs("shop").await.expect_err("404");
    assert_eq!(e.status(), Some(404));
    // A bad namespace never becomes a request.
    assert!(k.jobs("../secrets").await.is_err());
    let paths = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(paths.iter().all(|p| !p.contains("secrets")), "{paths:?}");
    assert!(
        paths.contains(&"/apis/apps/v1/daemonsets".to_string()),
        "{paths:?}"
    );
}
