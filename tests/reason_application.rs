//! A whole application as the subject ("the sock shop hangs at checkout"), every pod Running and
//! Ready: its lines speak for the workload that logged them, a service failing on its own (out
//! of disk) explains its callers' timed-out calls, and a server logging the same refusal as its
//! client is named as the client's peer. Worlds written for this file.

use chrono::{DateTime, Duration, Utc};
use sitrep::model::{Category, ContainerFacts, DeploymentFacts, LogLine, NodeFacts, PodFacts};
use sitrep::reason::{Observations, analyze};
use std::collections::BTreeMap;

const NS: &str = "parcel-depot";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-02T10:00:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn pod(app: &str, image: &str) -> PodFacts {
    let rs = format!("{app}-5c9d");
    PodFacts {
        name: format!("{rs}-x1"),
        namespace: NS.into(),
        phase: "Running".into(),
        node: Some("worker-a".into()),
        created_at: Some(now() - Duration::days(2)),
        owner: Some(format!("ReplicaSet/{rs}")),
        labels: BTreeMap::from([("app".to_string(), app.to_string())]),
        conditions: BTreeMap::from([("Ready".into(), "True".into())]),
        containers: vec![ContainerFacts {
            name: app.into(),
            image: image.into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        }],
        ..PodFacts::default()
    }
}

fn deployment(name: &str) -> DeploymentFacts {
    DeploymentFacts {
        name: name.into(),
        namespace: NS.into(),
        replicas: 1,
        ready_replicas: 1,
        updated_replicas: 1,
        available_replicas: 1,
        ..DeploymentFacts::default()
    }
}

fn log(app: &str, minutes_ago: i64, line: &str) -> LogLine {
    LogLine {
        at: Some(now() - Duration::minutes(minutes_ago)),
        labels: BTreeMap::from([("pod".to_string(), format!("{app}-5c9d-x1"))]),
        line: line.into(),
    }
}

/// The parcel depot application: every workload Running and Ready, the problem naming the
/// application by its namespace's words.
fn depot(apps: &[(&str, &str)], problem: &str) -> Observations {
    let evidence = ["kubernetes/pods", "kubernetes/pod_logs", "kubernetes/nodes"]
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), vec![format!("ev-{i}")]))
        .collect();
    Observations {
        problem: Some(problem.into()),
        now: now(),
        nodes: vec![NodeFacts {
            name: "worker-a".into(),
            conditions: BTreeMap::from([("Ready".to_string(), "True".to_string())]),
            ..NodeFacts::default()
        }],
        deployments: apps.iter().map(|(a, _)| deployment(a)).collect(),
        pods: apps.iter().map(|(a, i)| pod(a, i)).collect(),
        evidence,
        ..Observations::default()
    }
}

const APPS: &[(&str, &str)] = &[
    ("storefront", "registry.local/storefront:2.1"),
    ("dispatch", "registry.local/dispatch:4.0"),
    ("labels", "registry.local/labels:1.9"),
    ("broker", "docker.io/library/rabbitmq:3.13-management"),
    ("ledger-db", "docker.io/library/mongo:7.0"),
];

#[test]
fn a_service_out_of_disk_explains_its_callers_timeouts_and_is_named() {
    let mut obs = depot(APPS, "the parcel depot hangs when a label is printed");
    for m in [9, 7, 5, 3] {
        obs.pod_logs.push(log(
            "dispatch",
            m,
            "WARN  Failed to create label: upstream request timed out after 30s",
        ));
        obs.pod_logs.push(log(
            "labels",
            m,
            "ERROR publish failed: org.springframework.amqp.AmqpTimeoutException: java.util.concurrent.TimeoutException",
        ));
    }
    for (m, line) in [
        (
            40,
            "Disk free space insufficient. Free bytes:48213504 Limit:50000000",
        ),
        (
            39,
            "disk resource limit alarm set on node rabbit@broker-5c9d-x1.",
        ),
        (
            20,
            "connection <0.1843.0> (10.1.3.88:48122 -> 10.1.1.61:5672): blocked (disk alarm)",
        ),
    ] {
        obs.pod_logs.push(log("broker", m, line));
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(a.root_cause.starts_with("broker "), "{}", a.root_cause);
    assert!(a.root_cause.contains("disk"), "{}", a.root_cause);
    // Without the broker's own lines the callers' timeouts are what is left, and they are not
    // explained away.
    obs.pod_logs
        .retain(|l| !l.labels["pod"].starts_with("broker"));
    let a = analyze(&obs);
    assert_eq!(a.category, Category::DependencyFailure, "{}", a.root_cause);
}

#[test]
fn a_server_logging_the_same_refusal_is_the_callers_peer() {
    let mut obs = depot(APPS, "the parcel depot cannot save new parcels");
    for m in [8, 6, 4, 2] {
        obs.pod_logs.push(log(
            "dispatch",
            m,
            "Error: Failed to insert parcel to MongoDB: not authorized on parcels to execute command { insert: \"parcels\" }",
        ));
        obs.pod_logs.push(log(
            "ledger-db",
            m,
            "{\"s\":\"I\",\"c\":\"ACCESS\",\"msg\":\"Checking authorization failed\",\"attr\":{\"error\":{\"code\":13,\"codeName\":\"Unauthorized\",\"errmsg\":\"not authorized on parcels to execute command\"}}}",
        ));
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause
            .starts_with("dispatch is refused by a dependency (ledger-db)"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_count_over_a_window_is_not_how_slow_the_application_is() {
    let mut obs = depot(APPS, "the parcel depot is slow");
    for m in [6, 4, 2] {
        obs.pod_logs.push(log(
            "storefront",
            m,
            "1:M 02 May 2026 09:58:00.000 * 100 changes in 300 seconds. Saving...",
        ));
    }
    let a = analyze(&obs);
    assert!(!a.symptom.detail.contains("300"), "{}", a.symptom.detail);
}

#[test]
fn a_service_of_the_application_sending_to_a_port_none_serves_explains_the_refused_calls() {
    let world = |target: &str| {
        let mut obs = depot(APPS, "the parcel depot fails to print labels");
        for p in obs.pods.iter_mut().filter(|p| p.name.starts_with("labels")) {
            for c in &mut p.containers {
                c.ports = vec![8080];
            }
        }
        obs.services = vec![sitrep::model::ServiceFacts {
            name: "labels".into(),
            namespace: NS.into(),
            selector: BTreeMap::from([("app".to_string(), "labels".to_string())]),
            ports: vec![(8080, target.into())],
            ready: vec!["labels-5c9d-x1".into()],
            endpoints_read: true,
            ..sitrep::model::ServiceFacts::default()
        }];
        obs.evidence
            .insert("kubernetes/services".into(), vec!["ev-9".into()]);
        // The callers dial an address that is not matched to the Service.
        for m in [9, 7, 5, 3] {
            obs.pod_logs.push(log(
                "dispatch",
                m,
                "ERROR print failed: dial tcp 10.96.40.7:8080: connect: connection refused",
            ));
        }
        obs
    };
    let a = analyze(&world("9999"));
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(a.root_cause.contains("targetPort 9999"), "{}", a.root_cause);
    // The Service sending where its pods listen: the refusals stand as they are.
    let a = analyze(&world("8080"));
    assert_eq!(a.category, Category::DependencyFailure, "{}", a.root_cause);
}
