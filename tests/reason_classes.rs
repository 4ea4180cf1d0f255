//! Failure classes on synthetic worlds written for this file (none tuned on a case): scheduling,
//! quotas and limit ranges, image pulls, crash loops, OOM, probes, stuck rollouts, nodes, logs
//! (DNS, refused, timeouts, certificates, configuration, connection pools), metric steps,
//! recovery versus failing now, causal grouping, the alert's subject first, and honest absence.

use chrono::{DateTime, Duration, Utc};
use sitrep::model::{
    Alert, AlertStatus, Category, ContainerFacts, DeploymentFacts, K8sEventFacts, LogLine,
    NodeFacts, PodFacts, Series,
};
use sitrep::reason::{Analysis, Coverage, Observations, analyze};
use std::collections::BTreeMap;

const NS: &str = "ledger";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-08-14T03:30:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn alert(name: &str, labels: &[(&str, &str)]) -> Alert {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert("alertname".into(), name.into());
    l.insert("namespace".into(), NS.into());
    Alert {
        labels: l,
        starts_at: Some(now() - Duration::minutes(8)),
        ..Alert::default()
    }
}

fn container(name: &str, ready: bool) -> ContainerFacts {
    ContainerFacts {
        name: name.into(),
        image: format!("registry.local/{name}:3.2.1"),
        ready,
        state: if ready { "running" } else { "waiting" }.into(),
        ..ContainerFacts::default()
    }
}

fn pod(name: &str, rs: &str, phase: &str, ready: bool) -> PodFacts {
    let app = rs.rsplit_once('-').map(|(d, _)| d).unwrap_or(rs);
    PodFacts {
        name: name.into(),
        namespace: NS.into(),
        phase: phase.into(),
        node: (phase != "Pending").then(|| "worker-a".to_string()),
        created_at: Some(now() - Duration::hours(5)),
        owner: Some(format!("ReplicaSet/{rs}")),
        labels: BTreeMap::from([("app".to_string(), app.to_string())]),
        conditions: BTreeMap::from([("Ready".into(), if ready { "True" } else { "False" }.into())]),
        containers: vec![container(app, ready)],
        ..PodFacts::default()
    }
}

fn node(name: &str, ready: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        conditions: BTreeMap::from([(
            "Ready".to_string(),
            if ready { "True" } else { "Unknown" }.to_string(),
        )]),
        ..NodeFacts::default()
    }
}

fn deployment(name: &str, replicas: u32, ready: u32) -> DeploymentFacts {
    DeploymentFacts {
        name: name.into(),
        namespace: NS.into(),
        replicas,
        ready_replicas: ready,
        updated_replicas: replicas,
        available_replicas: ready,
        unavailable_replicas: replicas - ready,
        ..DeploymentFacts::default()
    }
}

fn warning(reason: &str, object: &str, message: &str, minutes_ago: i64) -> K8sEventFacts {
    K8sEventFacts {
        event_type: "Warning".into(),
        reason: reason.into(),
        message: message.into(),
        object: object.into(),
        namespace: NS.into(),
        count: 4,
        first_seen: Some(now() - Duration::minutes(minutes_ago + 10)),
        last_seen: Some(now() - Duration::minutes(minutes_ago)),
    }
}

fn log(pod: &str, line: &str) -> LogLine {
    LogLine {
        at: Some(now() - Duration::minutes(2)),
        labels: BTreeMap::from([("pod".to_string(), pod.to_string())]),
        line: line.into(),
    }
}

fn world(alert: Alert) -> Observations {
    let evidence = [
        "kubernetes/pods",
        "kubernetes/events",
        "kubernetes/pod_logs",
        "kubernetes/nodes",
        "kubernetes/deployments",
        "metrics",
        "logs",
        "changes",
        "alerts",
    ]
    .iter()
    .enumerate()
    .map(|(i, k)| (k.to_string(), vec![format!("ev-{i}")]))
    .collect();
    Observations {
        alert: Some(alert),
        now: now(),
        nodes: vec![node("worker-a", true), node("worker-b", true)],
        evidence,
        ..Observations::default()
    }
}

fn text(a: &Analysis) -> String {
    format!(
        "{} | {}",
        a.root_cause,
        a.findings
            .iter()
            .map(|f| f.summary.clone())
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

fn pending_world(message: &str, n: usize) -> Observations {
    let mut obs = world(alert(
        "KubeDeploymentReplicasMismatch",
        &[("deployment", "invoice-api")],
    ));
    obs.deployments = vec![deployment("invoice-api", n as u32 + 1, 1)];
    obs.pods.push(pod(
        "invoice-api-6c9f8-aaaaa",
        "invoice-api-6c9f8",
        "Running",
        true,
    ));
    for i in 0..n {
        let name = format!("invoice-api-6c9f8-p{i:03}");
        obs.pods
            .push(pod(&name, "invoice-api-6c9f8", "Pending", false));
        obs.events.push(warning(
            "FailedScheduling",
            &format!("Pod/{name}"),
            message,
            1,
        ));
    }
    obs
}

#[test]
fn scheduling_failures_name_the_constraint() {
    let cases: [(&str, Category, &[&str]); 5] = [
        (
            "0/6 nodes are available: 6 Insufficient memory. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.",
            Category::ResourceExhaustion,
            &["memory"],
        ),
        (
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: batch}.",
            Category::ResourceExhaustion,
            &["cpu"],
        ),
        (
            "0/4 nodes are available: 4 node(s) had untolerated taint {gpu: true}. preemption: not eligible",
            Category::ConfigurationError,
            &["taint", "gpu"],
        ),
        (
            "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.",
            Category::ConfigurationError,
            &["affinity"],
        ),
        (
            "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available",
            Category::ConfigurationError,
            &["PersistentVolumeClaim"],
        ),
    ];
    for (message, category, words) in cases {
        let a = analyze(&pending_world(message, 3));
        assert_eq!(a.category, category, "{message}: {}", text(&a));
        for w in words {
            assert!(a.root_cause.contains(w), "{w} missing: {}", a.root_cause);
        }
    }
}

#[test]
fn forty_pending_pods_from_one_cause_are_one_finding_cause_first() {
    let a = analyze(&pending_world(
        "0/8 nodes are available: 8 Insufficient cpu.",
        40,
    ));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", text(&a));
    let scheduling: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.summary.contains("Pending"))
        .collect();
    assert_eq!(scheduling.len(), 1, "{:#?}", a.findings);
    assert!(
        scheduling[0].summary.starts_with("40 pod(s) Pending"),
        "{}",
        scheduling[0].summary
    );
    assert!(a.root_cause.contains("and 37 more"), "{}", a.root_cause);
}

#[test]
fn an_unbound_claim_names_its_storage_class() {
    let mut obs = pending_world(
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        1,
    );
    obs.events.push(warning(
        "ProvisioningFailed",
        "PersistentVolumeClaim/invoice-data",
        "storageclass.storage.k8s.io \"fast-ssd\" not found",
        2,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains("fast-ssd") && a.root_cause.contains("invoice-data"),
        "{}",
        a.root_cause
    );
}

#[test]
fn quota_and_limit_range_rejections() {
    let mut obs = world(alert(
        "KubeDeploymentReplicasMismatch",
        &[("deployment", "invoice-api")],
    ));
    obs.deployments = vec![deployment("invoice-api", 4, 2)];
    obs.events.push(warning(
        "FailedCreate",
        "ReplicaSet/invoice-api-6c9f8",
        "Error creating: pods \"invoice-api-6c9f8-zz9\" is forbidden: exceeded quota: ledger-compute, requested: limits.memory=2Gi, used: limits.memory=7Gi, limited: limits.memory=8Gi",
        1,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", text(&a));
    assert!(a.root_cause.contains("ledger-compute"), "{}", a.root_cause);

    let mut obs = world(alert(
        "KubeDeploymentReplicasMismatch",
        &[("deployment", "invoice-api")],
    ));
    obs.deployments = vec![deployment("invoice-api", 2, 0)];
    obs.events.push(warning(
        "FailedCreate",
        "ReplicaSet/invoice-api-6c9f8",
        "Error creating: pods \"invoice-api-6c9f8-q1\" is forbidden: maximum memory usage per Container is 1Gi, but limit is 4Gi",
        1,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains("LimitRange") && a.root_cause.contains("1Gi"),
        "{}",
        a.root_cause
    );
}

#[test]
fn image_pull_names_the_image_and_crash_loop_the_exit_code() {
    let mut obs = world(alert("KubePodNotReady", &[("pod", "fx-rates-77d-k1")]));
    let mut p = pod("fx-rates-77d-k1", "fx-rates-77d", "Pending", false);
    p.containers[0].reason = Some("ImagePullBackOff".into());
    p.containers[0].image = "registry.local/fx-rates:9.9.9-nope".into();
    p.containers[0].message =
        Some("Back-off pulling image \"registry.local/fx-rates:9.9.9-nope\"".into());
    obs.pods.push(p);
    obs.events.push(warning(
        "Failed",
        "Pod/fx-rates-77d-k1",
        "Failed to pull image \"registry.local/fx-rates:9.9.9-nope\": rpc error: code = NotFound desc = manifest unknown",
        1,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(a.root_cause.contains("9.9.9-nope"), "{}", a.root_cause);

    let mut obs = world(alert("KubePodCrashLooping", &[("pod", "fx-rates-77d-k2")]));
    let mut p = pod("fx-rates-77d-k2", "fx-rates-77d", "Running", false);
    p.containers[0].reason = Some("CrashLoopBackOff".into());
    p.containers[0].restart_count = 9;
    p.containers[0].last_reason = Some("Error".into());
    p.containers[0].last_exit_code = Some(3);
    p.containers[0].last_finished_at = Some(now() - Duration::minutes(1));
    obs.pods.push(p);
    obs.pod_logs.push(log(
        "fx-rates-77d-k2",
        "FATAL config: environment variable RATES_API_KEY is not set",
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains("exit code 3") || a.root_cause.contains("RATES_API_KEY"),
        "{}",
        a.root_cause
    );
}

#[test]
fn oom_and_probes() {
    let mut obs = world(alert("KubePodCrashLooping", &[("pod", "ingest-5d4-m1")]));
    let mut p = pod("ingest-5d4-m1", "ingest-5d4", "Running", false);
    p.containers[0].reason = Some("CrashLoopBackOff".into());
    p.containers[0].restart_count = 5;
    p.containers[0].last_reason = Some("OOMKilled".into());
    p.containers[0].last_exit_code = Some(137);
    p.containers[0].memory_limit = Some("256Mi".into());
    p.containers[0].last_finished_at = Some(now() - Duration::minutes(2));
    obs.pods.push(p);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", text(&a));
    assert!(a.root_cause.contains("256Mi"), "{}", a.root_cause);

    let mut obs = world(alert("KubePodCrashLooping", &[("pod", "ingest-5d4-m2")]));
    let mut p = pod("ingest-5d4-m2", "ingest-5d4", "Running", false);
    p.containers[0].restart_count = 6;
    p.containers[0].has_liveness_probe = true;
    p.containers[0].last_reason = Some("Error".into());
    p.containers[0].last_exit_code = Some(143);
    p.containers[0].last_finished_at = Some(now() - Duration::minutes(1));
    obs.pods.push(p);
    obs.events.push(warning(
        "Unhealthy",
        "Pod/ingest-5d4-m2",
        "Liveness probe failed: HTTP probe failed with statuscode: 503",
        1,
    ));
    obs.events.push(warning(
        "Killing",
        "Pod/ingest-5d4-m2",
        "Container ingest failed liveness probe, will be restarted",
        1,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.to_lowercase().contains("liveness"),
        "{}",
        a.root_cause
    );
}

#[test]
fn stuck_rollout_and_lost_node() {
    let mut obs = world(alert(
        "KubeDeploymentRolloutStuck",
        &[("deployment", "statements")],
    ));
    let mut d = deployment("statements", 3, 3);
    d.updated_replicas = 1;
    d.conditions.insert(
        "Progressing".into(),
        (
            "False".into(),
            "ProgressDeadlineExceeded".into(),
            "ReplicaSet \"statements-8f7\" has timed out progressing.".into(),
        ),
    );
    obs.deployments = vec![d];
    let mut bad = pod("statements-8f7-x", "statements-8f7", "Running", false);
    bad.containers[0].reason = Some("CreateContainerConfigError".into());
    bad.containers[0].message = Some("secret \"statements-db\" not found".into());
    obs.pods = vec![
        bad,
        pod("statements-1a2-a", "statements-1a2", "Running", true),
        pod("statements-1a2-b", "statements-1a2", "Running", true),
    ];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(a.root_cause.contains("statements-db"), "{}", a.root_cause);

    let mut obs = world(alert("KubeNodeNotReady", &[("node", "worker-b")]));
    obs.nodes = vec![node("worker-a", true), node("worker-b", false)];
    let mut p = pod("ledger-db-0", "ledger-db", "Running", false);
    p.node = Some("worker-b".into());
    obs.pods = vec![p];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Infrastructure, "{}", text(&a));
    assert!(a.root_cause.contains("worker-b"), "{}", a.root_cause);
}

fn logs_world(lines: &[&str]) -> Observations {
    let mut obs = world(alert("HighErrorRate", &[("deployment", "payout")]));
    obs.deployments = vec![deployment("payout", 2, 2)];
    obs.pods = vec![
        pod("payout-9b8-a", "payout-9b8", "Running", true),
        pod("payout-9b8-b", "payout-9b8", "Running", true),
    ];
    for (i, l) in lines.iter().enumerate() {
        let p = if i % 2 == 0 {
            "payout-9b8-a"
        } else {
            "payout-9b8-b"
        };
        for _ in 0..4 {
            obs.pod_logs.push(log(p, l));
        }
    }
    obs
}

#[test]
fn dependency_signatures_in_logs_name_the_dependency() {
    let cases: [(&[&str], Category, &str); 5] = [
        (
            // A name that resolves nowhere is a configuration error (docs/diagnosis.md).
            &["ERROR dial tcp: lookup ledger-db.ledger.svc.cluster.local: no such host"],
            Category::ConfigurationError,
            "ledger-db",
        ),
        (
            &[
                "level=error msg=\"payment failed\" err=\"dial tcp 10.3.4.5:6379: connect: connection refused\"",
            ],
            Category::DependencyFailure,
            "6379",
        ),
        (
            &["ERROR upstream request to fx-gateway:8443 timed out after 5000ms"],
            Category::DependencyFailure,
            "fx-gateway",
        ),
        (
            &[
                "ERROR x509: certificate has expired or is not yet valid: current time 2026-08-14T03:29:00Z is after 2026-08-13T00:00:00Z (host bank-api.partner.example)",
            ],
            Category::ConfigurationError,
            "certificate",
        ),
        (
            &[
                "ERROR could not acquire connection: pool exhausted (max 20 connections in use)",
                "FATAL: remaining connection slots are reserved for non-replication superuser connections",
            ],
            Category::ResourceExhaustion,
            "connection",
        ),
    ];
    for (lines, category, word) in cases {
        let a = analyze(&logs_world(lines));
        assert_eq!(a.category, category, "{lines:?}: {}", text(&a));
        assert!(a.root_cause.contains(word), "{word}: {}", a.root_cause);
    }
}

#[test]
fn one_dependency_failing_three_services_is_one_cause() {
    let mut obs = world(alert("HighErrorRate", &[("namespace", NS)]));
    for svc in ["payout", "refunds", "statements"] {
        let rs = format!("{svc}-1c2");
        let name = format!("{svc}-1c2-a");
        obs.deployments.push(deployment(svc, 1, 1));
        obs.pods.push(pod(&name, &rs, "Running", true));
        for _ in 0..3 {
            obs.logs.push(LogLine {
                at: Some(now() - Duration::minutes(3)),
                labels: BTreeMap::from([("app".to_string(), svc.to_string())]),
                line: "ERROR dial tcp 10.9.0.12:5432: connect: connection refused (postgres-main:5432)"
                    .into(),
            });
        }
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::DependencyFailure, "{}", text(&a));
    assert!(a.root_cause.contains("5432"), "{}", a.root_cause);
    for svc in ["payout", "refunds", "statements"] {
        assert!(a.root_cause.contains(svc), "{svc}: {}", a.root_cause);
    }
}

fn series(name: &str, labels: &[(&str, &str)], values: &[f64]) -> Series {
    Series {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        points: values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    (now() - Duration::minutes(40)).timestamp() as f64 + 30.0 * i as f64,
                    *v,
                )
            })
            .collect(),
    }
}

#[test]
fn latency_step_without_a_change_is_a_slow_dependency_not_health() {
    let expr = r#"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="payout"}[5m]))) > 1"#;
    let mut a = alert("PayoutSlow", &[("service", "payout")]);
    a.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
    let mut obs = world(a);
    obs.deployments = vec![deployment("payout", 2, 2)];
    obs.pods = vec![
        pod("payout-9b8-a", "payout-9b8", "Running", true),
        pod("payout-9b8-b", "payout-9b8", "Running", true),
    ];
    let base = sitrep::reason::promql::parse(expr)
        .map(|e| e.base)
        .unwrap_or_default();
    let mut values = vec![0.2; 40];
    values.extend(vec![2.4; 40]);
    obs.metrics.push(series(&base, &[], &values));
    let a = analyze(&obs);
    assert_ne!(a.category, Category::Healthy, "{}", text(&a));
    assert_eq!(a.category, Category::DependencyFailure, "{}", text(&a));
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            b' ' => "+".to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[test]
fn recovered_versus_failing_now() {
    // Pending earlier, Running and Ready now: recovered, with its history.
    let mut obs = world(alert("KubePodNotReady", &[("pod", "invoice-api-6c9f8-r1")]));
    obs.deployments = vec![deployment("invoice-api", 1, 1)];
    obs.pods = vec![pod(
        "invoice-api-6c9f8-r1",
        "invoice-api-6c9f8",
        "Running",
        true,
    )];
    obs.events.push(warning(
        "FailedScheduling",
        "Pod/invoice-api-6c9f8-r1",
        "0/3 nodes are available: 3 Insufficient cpu.",
        50,
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy, "{}", text(&a));
    assert!(
        a.root_cause.contains("invoice-api-6c9f8-r1"),
        "{}",
        a.root_cause
    );

    // Resolved alert with the workload Ready: healthy, and it says when it resolved.
    let mut al = alert("KubePodNotReady", &[("deployment", "invoice-api")]);
    al.status = AlertStatus::Resolved;
    al.ends_at = Some(now() - Duration::minutes(4));
    let mut obs = world(al);
    obs.deployments = vec![deployment("invoice-api", 1, 1)];
    obs.pods = vec![pod(
        "invoice-api-6c9f8-r1",
        "invoice-api-6c9f8",
        "Running",
        true,
    )];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy, "{}", text(&a));

    // The same pod still Pending now: failing, not recovered.
    let obs = pending_world("0/3 nodes are available: 3 Insufficient cpu.", 1);
    assert_ne!(analyze(&obs).category, Category::Healthy);
}

#[test]
fn the_alerts_subject_comes_before_a_broken_neighbour() {
    let mut obs = world(alert("KubePodNotReady", &[("pod", "invoice-api-6c9f8-s1")]));
    obs.deployments = vec![
        deployment("invoice-api", 1, 0),
        deployment("archiver", 1, 0),
    ];
    obs.pods = vec![pod(
        "invoice-api-6c9f8-s1",
        "invoice-api-6c9f8",
        "Pending",
        false,
    )];
    obs.events.push(warning(
        "FailedScheduling",
        "Pod/invoice-api-6c9f8-s1",
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        1,
    ));
    let mut neighbour = pod("archiver-44f-n", "archiver-44f", "Running", false);
    neighbour.containers[0].reason = Some("CrashLoopBackOff".into());
    neighbour.containers[0].restart_count = 30;
    neighbour.containers[0].last_reason = Some("OOMKilled".into());
    neighbour.containers[0].last_exit_code = Some(137);
    neighbour.containers[0].last_finished_at = Some(now() - Duration::minutes(1));
    obs.pods.push(neighbour);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains("invoice-api-6c9f8-s1"),
        "{}",
        a.root_cause
    );
    assert!(!a.root_cause.contains("archiver"), "{}", a.root_cause);
}

#[test]
fn missing_or_failed_evidence_is_unknown_never_healthy() {
    let mut obs = world(alert("CheckoutDown", &[("service", "basket")]));
    obs.nodes.clear();
    obs.evidence.clear();
    obs.coverage = ["kubernetes", "prometheus", "alertmanager", "loki", "github"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                Coverage {
                    configured: *n != "github",
                    failed: if *n == "github" { 0 } else { 2 },
                    error: Some("connection refused".into()),
                    ..Coverage::default()
                },
            )
        })
        .collect();
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Unknown, "{}", text(&a));
    assert!(
        a.root_cause.starts_with("insufficient evidence")
            && a.root_cause.contains("kubernetes failed"),
        "{}",
        a.root_cause
    );
    assert!(a.confidence < 0.3);
    assert!(
        a.findings
            .iter()
            .any(|f| f.analyzer == "coverage" && f.summary.contains("github: absent")),
        "{:#?}",
        a.findings
    );

    // Kubernetes answered but nothing of the subject was found: still no evidence of health.
    let mut obs = world(alert("CheckoutDown", &[("service", "basket")]));
    obs.nodes.clear();
    obs.coverage = BTreeMap::from([(
        "kubernetes".to_string(),
        Coverage {
            configured: true,
            answered: 3,
            empty: 3,
            ..Coverage::default()
        },
    )]);
    assert_eq!(analyze(&obs).category, Category::Unknown);
}

#[test]
fn every_ruled_out_hypothesis_names_its_evidence_and_statements_cite_evidence() {
    for obs in [
        pending_world("0/8 nodes are available: 8 Insufficient memory.", 4),
        logs_world(&["ERROR dial tcp 10.3.4.5:6379: connect: connection refused"]),
    ] {
        let a = analyze(&obs);
        for r in &a.ruled_out {
            assert!(!r.evidence.is_empty(), "{r:?}");
            assert!(!r.reason.is_empty(), "{r:?}");
        }
        for h in &a.hypotheses {
            assert!(!h.evidence.is_empty(), "{h:?}");
        }
        for f in a.findings.iter().filter(|f| f.analyzer != "coverage") {
            assert!(!f.evidence.is_empty(), "{f:?}");
        }
    }
}

fn alert_info(name: &str, pod: &str, minutes_ago: i64) -> sitrep::model::AlertInfo {
    sitrep::model::AlertInfo {
        name: name.into(),
        state: "active".into(),
        labels: BTreeMap::from([
            ("alertname".to_string(), name.to_string()),
            ("pod".to_string(), pod.to_string()),
            ("namespace".to_string(), NS.to_string()),
        ]),
        active_at: Some(now() - Duration::minutes(minutes_ago)),
        ..Default::default()
    }
}

#[test]
fn a_storm_over_a_healthy_workload_is_spurious_and_over_a_broken_one_is_grouped() {
    let mut obs = world(alert("KubePodNotReady", &[("deployment", "payout")]));
    obs.deployments = vec![deployment("payout", 7, 7)];
    obs.pods = (0..7)
        .map(|i| pod(&format!("payout-9b8-{i}"), "payout-9b8", "Running", true))
        .collect();
    obs.alerts = (0..7)
        .map(|i| alert_info("KubePodNotReady", &format!("payout-9b8-{i}"), i))
        .chain((0..2).map(|i| alert_info("TargetDown", &format!("payout-9b8-{i}"), i)))
        .collect();
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy, "{}", text(&a));
    assert!(
        a.root_cause.contains("Spurious alert storm"),
        "{}",
        a.root_cause
    );
    assert!(
        a.root_cause.contains("KubePodNotReady x"),
        "{}",
        a.root_cause
    );

    // The same storm over a crash-looping pod is a symptom list: the crash loop is the cause.
    let mut broken = pod("payout-9b8-0", "payout-9b8", "Running", false);
    broken.containers[0].reason = Some("CrashLoopBackOff".into());
    broken.containers[0].restart_count = 12;
    broken.containers[0].last_reason = Some("Error".into());
    broken.containers[0].last_exit_code = Some(2);
    broken.containers[0].last_finished_at = Some(now() - Duration::minutes(1));
    obs.pods[0] = broken;
    let a = analyze(&obs);
    assert_ne!(a.category, Category::Healthy, "{}", text(&a));
    assert!(a.root_cause.contains("payout-9b8-0"), "{}", a.root_cause);
    assert!(
        a.findings
            .iter()
            .any(|f| f.analyzer == "alert_storm" && f.summary.contains("alerts firing")),
        "{:#?}",
        a.findings
    );
}

#[test]
fn a_flapping_metric_is_called_flapping_not_an_outage() {
    let expr = r#"sum(rate(queue_rejected_total{service="payout"}[1m])) > 5"#;
    let mut al = alert("PayoutQueueRejects", &[("service", "payout")]);
    al.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
    let mut obs = world(al);
    obs.deployments = vec![deployment("payout", 2, 2)];
    obs.pods = vec![
        pod("payout-9b8-a", "payout-9b8", "Running", true),
        pod("payout-9b8-b", "payout-9b8", "Running", true),
    ];
    let base = sitrep::reason::promql::parse(expr)
        .map(|e| e.base)
        .unwrap_or_default();
    let mut values = Vec::new();
    for i in 0..60 {
        values.push(if i % 12 == 5 {
            7.5
        } else {
            1.0 + (i % 3) as f64 * 0.3
        });
    }
    obs.metrics.push(series(&base, &[], &values));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy, "{}", text(&a));
    assert!(
        a.root_cause.starts_with("Flapping alert"),
        "{}",
        a.root_cause
    );
}

#[test]
fn probe_statements_are_checked_against_the_data() {
    // A liveness probe failing with no restart yet and error lines in the logs: neither
    // "restarts" nor "normal handling" may be claimed.
    let mut obs = world(alert("KubePodNotReady", &[("pod", "ingest-5d4-z1")]));
    let mut p = pod("ingest-5d4-z1", "ingest-5d4", "Running", false);
    p.containers[0].has_liveness_probe = true;
    obs.pods.push(p);
    obs.events.push(warning(
        "Unhealthy",
        "Pod/ingest-5d4-z1",
        "Liveness probe failed: HTTP probe failed with statuscode: 500",
        1,
    ));
    obs.pod_logs.push(log(
        "ingest-5d4-z1",
        "ERROR handler /healthz: schema version mismatch",
    ));
    let a = analyze(&obs);
    assert!(!a.root_cause.contains("normal"), "{}", a.root_cause);
    assert!(
        a.root_cause.contains("no restart recorded yet"),
        "{}",
        a.root_cause
    );
    assert!(
        a.root_cause.contains("schema version mismatch"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_failing_init_container_is_evidence_like_the_main_one() {
    // Parsed from the API server's own JSON, so the parser's handling of init containers is under test.
    let raw = serde_json::json!({
        "metadata": {"name": "payout-9b8-i1", "namespace": NS, "labels": {"app": "payout"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "payout-9b8", "uid": "u1"}]},
        "spec": {
            "initContainers": [
                {"name": "wait-for-db", "image": "busybox:1.36"},
                {"name": "copy-config", "image": "busybox:1.36"}
            ],
            "containers": [{"name": "payout", "image": "registry.local/payout:3.2.1"}]
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
            "initContainerStatuses": [
                {"name": "copy-config", "ready": true, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "wait-for-db", "ready": false, "restartCount": 6, "image": "busybox:1.36", "imageID": "",
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-08-14T03:28:00Z"}}}
            ],
            "containerStatuses": [
                {"name": "payout", "ready": false, "restartCount": 0, "image": "registry.local/payout:3.2.1", "imageID": "",
                 "state": {"waiting": {"reason": "PodInitializing"}}}
            ]
        }
    });
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(raw).expect("a Pod");
    let facts = sitrep::integrations::kubernetes::pod_facts(&pod);
    let init: Vec<&ContainerFacts> = facts.containers.iter().filter(|c| c.init).collect();
    assert_eq!(
        init.len(),
        1,
        "only the unfinished init container: {facts:#?}"
    );
    assert_eq!(init[0].last_exit_code, Some(1));

    let mut obs = world(alert("KubePodNotReady", &[("pod", "payout-9b8-i1")]));
    obs.pods.push(facts);
    for _ in 0..3 {
        let mut l = log(
            "payout-9b8-i1",
            "waiting for db: dial tcp ledger-pg.ledger.svc:5432: connect: connection refused",
        );
        l.labels.insert("container".into(), "wait-for-db".into());
        obs.pod_logs.push(l);
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::DependencyFailure, "{}", text(&a));
    assert!(
        a.root_cause.contains("init container wait-for-db")
            && a.root_cause.contains("exit code 1")
            && a.root_cause.contains("ledger-pg.ledger.svc:5432"),
        "{}",
        a.root_cause
    );
}

#[test]
fn pending_pods_are_explained_by_their_condition_when_events_expired() {
    let mut obs = world(alert(
        "KubeDeploymentReplicasMismatch",
        &[("deployment", "invoice-api")],
    ));
    obs.deployments = vec![deployment("invoice-api", 2, 0)];
    for i in 0..2 {
        let mut p = pod(
            &format!("invoice-api-6c9f8-c{i}"),
            "invoice-api-6c9f8",
            "Pending",
            false,
        );
        p.conditions.insert("PodScheduled".into(), "False".into());
        p.condition_messages.insert(
            "PodScheduled".into(),
            "Unschedulable: 0/5 nodes are available: 5 node(s) had untolerated taint {dedicated: ml}."
                .into(),
        );
        obs.pods.push(p);
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(
        a.root_cause.contains("taint") && a.root_cause.contains("dedicated: ml"),
        "{}",
        a.root_cause
    );
    assert!(
        !a.ruled_out
            .iter()
            .any(|r| r.reason.contains("every pod was scheduled")),
        "{:#?}",
        a.ruled_out
    );
}

#[test]
fn latency_with_the_autoscaler_at_its_ceiling_is_capacity_not_a_dependency() {
    let expr = r#"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="ledger",service="payout"}[5m]))) > 0.5"#;
    let mut al = alert("PayoutSlow", &[("service", "payout")]);
    al.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
    let mut obs = world(al);
    obs.deployments = vec![deployment("payout", 10, 10)];
    obs.pods = vec![pod("payout-9b8-a", "payout-9b8", "Running", true)];
    let parsed = sitrep::reason::promql::parse(expr).expect("PromQL");
    obs.metrics.push(series(&parsed.base, &[], &[0.9; 20]));
    let hpa = [("namespace", NS), ("horizontalpodautoscaler", "payout")];
    let mut replicas = vec![6.0; 8];
    replicas.extend(vec![10.0; 12]);
    obs.metrics.push(series(
        "kube_horizontalpodautoscaler_status_current_replicas",
        &hpa,
        &replicas,
    ));
    obs.metrics.push(series(
        "kube_horizontalpodautoscaler_spec_max_replicas",
        &hpa,
        &[10.0; 20],
    ));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", text(&a));
    assert!(
        a.root_cause.contains("maxReplicas of 10"),
        "{}",
        a.root_cause
    );

    // The sibling queries that fetch those series are derived from the alert's own expression.
    let queries: Vec<String> = sitrep::reason::promql::siblings(&parsed)
        .into_iter()
        .map(|(_, q)| q)
        .collect();
    assert!(
        queries
            .iter()
            .any(|q| q.starts_with("kube_horizontalpodautoscaler_spec_max_replicas")),
        "{queries:#?}"
    );
}

#[test]
fn a_sibling_answering_with_the_alerts_own_series_is_not_evidence() {
    let expr = r#"sum(rate(http_requests_total{namespace="ledger",service="payout",code=~"5.."}[5m])) / sum(rate(http_requests_total{namespace="ledger",service="payout"}[5m])) > 0.05"#;
    let mut al = alert("PayoutErrors", &[("service", "payout")]);
    al.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
    let mut obs = world(al);
    obs.deployments = vec![deployment("payout", 2, 2)];
    obs.pods = vec![pod("payout-9b8-a", "payout-9b8", "Running", true)];
    let parsed = sitrep::reason::promql::parse(expr).expect("PromQL");
    let mut values = vec![0.002; 30];
    values.extend(vec![0.2; 30]);
    let own = series(&parsed.base, &[], &values);
    // Each sibling query is answered with the later part of the very same samples.
    for (_, q) in sitrep::reason::promql::siblings(&parsed) {
        obs.metrics.push(Series {
            name: q,
            labels: BTreeMap::new(),
            points: own.points[20..].to_vec(),
        });
    }
    obs.metrics.push(own);
    let a = analyze(&obs);
    let steps: Vec<&str> = a
        .findings
        .iter()
        .filter(|f| f.analyzer == "metric_step")
        .map(|f| f.summary.as_str())
        .collect();
    assert_eq!(steps.len(), 1, "{steps:#?}");
    assert!(steps[0].starts_with("5xx ratio 0.2% → 20%"), "{steps:#?}");
    assert!(!a.findings.iter().any(|f| f.analyzer == "hpa_at_max"));
}

fn prometheus_answered() -> BTreeMap<String, Coverage> {
    ["kubernetes", "prometheus"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                Coverage {
                    configured: true,
                    answered: 3,
                    ..Coverage::default()
                },
            )
        })
        .collect()
}

#[test]
fn a_metric_alert_is_healthy_only_on_its_own_expressions_word() {
    let make = |expr: &str| {
        let mut al = alert("LedgerApiDown", &[("job", "ledger-api")]);
        al.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
        let mut obs = world(al);
        obs.deployments = vec![deployment("ledger-api", 2, 2)];
        obs.pods = vec![
            pod("ledger-api-71c-a", "ledger-api-71c", "Running", true),
            pod("ledger-api-71c-b", "ledger-api-71c", "Running", true),
        ];
        obs.coverage = prometheus_answered();
        obs
    };
    // Breaching now, with no known mechanism: a live failure, never healthy.
    let mut obs = make(r#"up{job="ledger-api"} == 0"#);
    obs.metrics.push(series(
        "up",
        &[("job", "ledger-api"), ("instance", "10.0.0.7:8080")],
        &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
    ));
    let a = analyze(&obs);
    assert_ne!(a.category, Category::Healthy, "{}", text(&a));
    assert!(a.root_cause.contains("breaching now"), "{}", a.root_cause);

    // The expression returned nothing: Ready pods do not prove the errors stopped.
    let expr = r#"sum(rate(http_requests_total{job="ledger-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="ledger-api"}[5m])) > 0.05"#;
    let obs = make(expr);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Unknown, "{}", text(&a));
    assert!(
        a.root_cause
            .contains("the alert's own expression returned no data"),
        "{}",
        a.root_cause
    );

    // Under the threshold throughout, pods Ready: healthy.
    let mut obs = make(expr);
    let base = sitrep::reason::promql::parse(expr)
        .map(|e| e.base)
        .unwrap_or_default();
    obs.metrics.push(series(&base, &[], &[0.01; 12]));
    assert_eq!(analyze(&obs).category, Category::Healthy);
}

#[test]
fn a_problem_without_a_firing_alert_is_checked_against_the_services_own_rule() {
    let expr = r#"sum(rate(http_requests_total{job="ledger-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="ledger-api"}[5m])) > 0.05"#;
    let base = sitrep::reason::promql::parse(expr)
        .map(|e| e.base)
        .unwrap_or_default();
    let make = |values: &[f64]| Observations {
        problem: Some("ledger-api is returning errors".into()),
        expr: Some(expr.into()),
        now: now(),
        metrics: vec![series(&base, &[], values)],
        coverage: BTreeMap::from([(
            "prometheus".to_string(),
            Coverage {
                configured: true,
                answered: 4,
                ..Coverage::default()
            },
        )]),
        evidence: BTreeMap::from([("metrics".to_string(), vec!["ev-m".to_string()])]),
        ..Observations::default()
    };
    let a = analyze(&make(&[0.004; 20]));
    assert_eq!(a.category, Category::Healthy, "{}", text(&a));
    assert!(
        a.root_cause.contains("No sign of the reported problem"),
        "{}",
        a.root_cause
    );

    let mut values = vec![0.004; 10];
    values.extend(vec![0.3; 10]);
    let a = analyze(&make(&values));
    assert_eq!(a.category, Category::CodeDefect, "{}", text(&a));
    assert!(a.root_cause.contains("5xx ratio"), "{}", a.root_cause);
}

/// `billing` whose 5xx ratio steps from 1% to 60% midway, its pods logging `lines`, with
/// `change` (a rollout of a neighbour) at the step when given.
fn error_step_world(lines: &[&str], change: bool) -> Observations {
    let expr = r#"sum(rate(http_requests_total{service="billing",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="billing"}[5m])) > 0.05"#;
    let mut a = alert("BillingErrors", &[("service", "billing")]);
    a.generator_url = format!("http://prom:9090/graph?g0.expr={}", url_escape(expr));
    let mut obs = world(a);
    obs.deployments = vec![deployment("billing", 2, 2)];
    obs.pods = vec![
        pod("billing-9b8-a", "billing-9b8", "Running", true),
        pod("billing-9b8-b", "billing-9b8", "Running", true),
    ];
    let base = sitrep::reason::promql::parse(expr)
        .map(|e| e.base)
        .unwrap_or_default();
    let mut values = vec![0.01; 40];
    values.extend(vec![0.6; 40]);
    obs.metrics.push(series(&base, &[], &values));
    for l in lines {
        obs.pod_logs.push(log("billing-9b8-a", l));
    }
    if change {
        obs.changes.push(sitrep::model::Change {
            kind: sitrep::model::ChangeKind::Rollout,
            at: Some(now() - Duration::minutes(20)),
            id: "revision 2".into(),
            title: "ReplicaSet exporter-5d8b (exporter:1.3.0), 8/8 ready".into(),
            target: "default/billing".into(),
            ..Default::default()
        });
    }
    obs
}

#[test]
fn an_error_step_is_what_the_failing_requests_logged_not_a_code_defect_by_default() {
    let auth = [
        "ERROR charge failed: com.stripe.exception.AuthenticationException: Invalid API Key provided",
        "ERROR charge failed: com.stripe.exception.AuthenticationException: Invalid API Key provided",
    ];
    let a = analyze(&error_step_world(&auth, false));
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    // A change at the step set off what the lines say: connections used up.
    let clients = [
        "ERROR FATAL: sorry, too many clients already",
        "ERROR FATAL: sorry, too many clients already",
    ];
    let a = analyze(&error_step_world(&clients, true));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", text(&a));
    assert!(a.root_cause.contains("too many clients"), "{}", text(&a));
    // The same change with nothing logged is the regression it always was.
    let a = analyze(&error_step_world(&[], true));
    assert_eq!(a.category, Category::CodeDefect, "{}", text(&a));
}
