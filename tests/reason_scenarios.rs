//! End-to-end reasoning over hand-built observations: category, root cause, evidence, ruled out, actions.

use chrono::{DateTime, Duration, Utc};
use sitrep::model::{
    Alert, AlertStatus, Category, Change, ContainerFacts, DeploymentFacts, K8sEventFacts, LogLine,
    NodeFacts, PodFacts, Risk, RuleInfo, Series,
};
use sitrep::reason::{Analysis, Observations, analyze};
use std::collections::BTreeMap;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-01T12:00:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn alert(name: &str, labels: &[(&str, &str)]) -> Alert {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert("alertname".into(), name.into());
    Alert {
        labels: l,
        starts_at: Some(now() - Duration::minutes(10)),
        ..Alert::default()
    }
}

fn pod(name: &str, rs: &str, node: &str, ready: bool) -> PodFacts {
    PodFacts {
        name: name.into(),
        namespace: "shop".into(),
        phase: "Running".into(),
        node: Some(node.into()),
        created_at: Some(now() - Duration::days(2)),
        owner: Some(format!("ReplicaSet/{rs}")),
        conditions: BTreeMap::from([("Ready".into(), if ready { "True" } else { "False" }.into())]),
        containers: vec![ContainerFacts {
            name: "app".into(),
            image: "shop:1.4".into(),
            ready,
            state: "running".into(),
            ..ContainerFacts::default()
        }],
        ..PodFacts::default()
    }
}

fn node(name: &str) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        conditions: BTreeMap::from([("Ready".into(), "True".into())]),
        ..NodeFacts::default()
    }
}

fn deployment(name: &str, replicas: u32, ready: u32) -> DeploymentFacts {
    DeploymentFacts {
        name: name.into(),
        namespace: "shop".into(),
        replicas,
        ready_replicas: ready,
        updated_replicas: replicas,
        available_replicas: ready,
        unavailable_replicas: replicas - ready,
        ..DeploymentFacts::default()
    }
}

fn event(reason: &str, object: &str, message: &str) -> K8sEventFacts {
    K8sEventFacts {
        event_type: "Warning".into(),
        reason: reason.into(),
        message: message.into(),
        object: object.into(),
        namespace: "shop".into(),
        count: 5,
        first_seen: Some(now() - Duration::minutes(20)),
        last_seen: Some(now() - Duration::minutes(1)),
    }
}

fn evidence() -> BTreeMap<String, Vec<String>> {
    [
        ("kubernetes/pods", "ev-pods"),
        ("kubernetes/events", "ev-events"),
        ("kubernetes/pod_logs", "ev-podlogs"),
        ("kubernetes/nodes", "ev-nodes"),
        ("kubernetes/deployments", "ev-deploys"),
        ("metrics", "ev-metrics"),
        ("logs", "ev-logs"),
        ("changes", "ev-changes"),
        ("alert_rules", "ev-rules"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
    .collect()
}

fn base(alert: Alert) -> Observations {
    Observations {
        alert: Some(alert),
        now: now(),
        pods: vec![
            pod("cart-5f6d7-a", "cart-5f6d7", "n1", true),
            pod("cart-5f6d7-b", "cart-5f6d7", "n2", true),
        ],
        nodes: vec![node("n1"), node("n2")],
        deployments: vec![deployment("cart", 2, 2)],
        evidence: evidence(),
        ..Observations::default()
    }
}

fn ruled_text(a: &Analysis) -> String {
    a.ruled_out
        .iter()
        .map(|r| format!("{}: {}\n", r.statement, r.reason))
        .collect()
}

#[test]
fn unreachable_dependency_in_logs_is_a_dependency_failure() {
    let mut obs = base(alert("CartLatencyHigh", &[("deployment", "cart")]));
    obs.pod_logs = (0..6)
        .map(|i| LogLine {
            at: Some(now() - Duration::minutes(i)),
            labels: BTreeMap::from([("pod".into(), "cart-5f6d7-a".into())]),
            line: format!(
                "ERROR checkout {i}: dial tcp inventory.shop.svc:8080: connect: connection refused"
            ),
        })
        .collect();
    let a = analyze(&obs);
    assert_eq!(a.category, Category::DependencyFailure, "{a:#?}");
    assert!(
        a.root_cause.contains("inventory.shop.svc:8080"),
        "{}",
        a.root_cause
    );
    assert!(a.hypotheses[0].evidence.contains(&"ev-podlogs".to_string()));
    let text = ruled_text(&a);
    assert!(
        text.contains("not OOMKilled")
            && text.contains("node Ready")
            && text.contains("no recent deploy"),
        "{text}"
    );
}

#[test]
fn error_rate_step_right_after_a_deploy_blames_the_deploy() {
    let mut al = alert("CartErrors", &[("deployment", "cart")]);
    al.generator_url = "http://prom/graph?g0.expr=cart_error_ratio+%3E+0.05".into();
    let mut obs = base(al);
    let start = (now() - Duration::minutes(30)).timestamp() as f64;
    let values = [0.01, 0.012, 0.011, 0.01, 0.011, 0.3, 0.31, 0.29, 0.3, 0.32];
    obs.metrics = vec![Series {
        name: "cart_error_ratio".into(),
        labels: BTreeMap::new(),
        points: values
            .iter()
            .enumerate()
            .map(|(i, v)| (start + 180.0 * i as f64, *v))
            .collect(),
    }];
    obs.changes = vec![Change {
        id: "PR-412".into(),
        title: "Switch cart pricing to the new rules engine".into(),
        at: DateTime::from_timestamp(start as i64 + 180 * 5 - 60, 0),
        target: "org/cart".into(),
        ..Change::default()
    }];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::CodeDefect, "{a:#?}");
    assert!(a.root_cause.contains("PR-412"), "{}", a.root_cause);
    let undo = a
        .suggested_actions
        .iter()
        .find(|x| x.kind == "kubernetes.rollout_undo");
    let Some(undo) = undo else {
        panic!("no rollback suggested: {:?}", a.suggested_actions)
    };
    assert_eq!(undo.risk, Risk::High);
    assert_eq!(undo.target, "deployment/cart");
    assert!(undo.operation.contains("rollout undo deployment/cart"));
    assert!(!ruled_text(&a).contains("no recent deploy"));
}

#[test]
fn exceeded_quota_is_resource_exhaustion() {
    let mut obs = base(alert(
        "KubeDeploymentReplicasMismatch",
        &[("deployment", "cart")],
    ));
    obs.deployments = vec![deployment("cart", 4, 2)];
    obs.events = vec![event(
        "FailedCreate",
        "ReplicaSet/cart-5f6d7",
        "Error creating: pods \"cart-5f6d7-zz\" is forbidden: exceeded quota: shop-compute, requested: requests.cpu=500m, used: requests.cpu=2, limited: requests.cpu=2",
    )];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{a:#?}");
    assert!(a.root_cause.contains("shop-compute") && a.root_cause.contains("exceeded quota"));
    assert!(a.hypotheses[0].evidence.contains(&"ev-events".to_string()));
}

#[test]
fn untolerated_taint_is_a_configuration_error() {
    let mut obs = base(alert("KubePodNotScheduled", &[("deployment", "cart")]));
    let mut pending = pod("cart-5f6d7-c", "cart-5f6d7", "", false);
    pending.phase = "Pending".into();
    pending.node = None;
    obs.pods.push(pending);
    obs.events = vec![event(
        "FailedScheduling",
        "Pod/cart-5f6d7-c",
        "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: batch}. preemption: not eligible",
    )];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{a:#?}");
    assert!(a.root_cause.contains("untolerated taint") && a.root_cause.contains("cart-5f6d7-c"));
}

#[test]
fn disk_pressure_under_the_alerting_pod_is_infrastructure() {
    let mut obs = base(alert("KubePodEvicted", &[("pod", "cart-5f6d7-a")]));
    obs.nodes[0]
        .conditions
        .insert("DiskPressure".into(), "True".into());
    obs.events = vec![event(
        "Evicted",
        "Pod/cart-5f6d7-a",
        "The node was low on resource: ephemeral-storage.",
    )];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Infrastructure, "{a:#?}");
    assert!(a.root_cause.contains("DiskPressure") && a.root_cause.contains("n1"));
    assert!(
        a.suggested_actions
            .iter()
            .any(|x| x.kind == "kubernetes.cordon" && x.risk == Risk::High)
    );
}

#[test]
fn resolved_alert_with_everything_ready_is_healthy_and_not_silenced() {
    let mut al = alert("CartLatencyHigh", &[("deployment", "cart")]);
    al.status = AlertStatus::Resolved;
    let mut obs = base(al);
    obs.rules = vec![RuleInfo {
        name: "CartLatencyHigh".into(),
        rule_type: "alerting".into(),
        state: Some("inactive".into()),
        ..RuleInfo::default()
    }];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy);
    assert!(
        a.suggested_actions
            .iter()
            .all(|x| x.kind != "alertmanager.silence")
    );
    assert!(ruled_text(&a).contains("monitors are OK"));
}

#[test]
fn firing_alert_on_a_recovered_pod_suggests_a_medium_risk_silence() {
    let mut obs = base(alert(
        "KubePodRestarted",
        &[("pod", "cart-5f6d7-a"), ("namespace", "shop")],
    ));
    obs.pods[0].containers[0].restart_count = 1;
    obs.pods[0].containers[0].last_finished_at = Some(now() - Duration::minutes(90));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Healthy, "{a:#?}");
    assert!(a.root_cause.contains("cart-5f6d7-a") && a.root_cause.contains("restart"));
    let silence = a
        .suggested_actions
        .iter()
        .find(|x| x.kind == "alertmanager.silence");
    assert_eq!(silence.map(|s| s.risk), Some(Risk::Medium));
    assert!(ruled_text(&a).contains("not currently restarting"));
}

#[test]
fn a_problem_statement_focuses_like_an_alert() {
    let mut obs = base(alert("x", &[]));
    obs.alert = None;
    obs.problem = Some("cart-5f6d7-b keeps crashing".into());
    obs.pods[1].containers[0] = ContainerFacts {
        name: "app".into(),
        state: "waiting".into(),
        reason: Some("CrashLoopBackOff".into()),
        last_reason: Some("Error".into()),
        last_exit_code: Some(1),
        restart_count: 9,
        ..ContainerFacts::default()
    };
    obs.pods[1]
        .conditions
        .insert("Ready".into(), "False".into());
    obs.pod_logs = vec![LogLine {
        at: None,
        labels: BTreeMap::from([("pod".into(), "cart-5f6d7-b".into())]),
        line: "Error: missing required environment variable PRICING_URL".into(),
    }];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{a:#?}");
    assert!(a.root_cause.contains("cart-5f6d7-b") && a.root_cause.contains("exit code 1"));
    assert!(ruled_text(&a).contains("sibling pods healthy"));
}

#[test]
fn empty_observations_do_not_panic() {
    let a = analyze(&Observations::default());
    assert!(matches!(a.category, Category::Healthy | Category::Unknown));
    assert!(!a.root_cause.is_empty());
}
