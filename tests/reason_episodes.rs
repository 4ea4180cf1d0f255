//! Episodes that ended, problems that name nothing, and Services a problem names: what a
//! termination's own reason says over its exit code, a failure over since its pods came back, a
//! claim about an object that was not found, and the Service in front of a workload by name.

use chrono::{DateTime, Duration, Utc};
use sitrep::model::{
    Alert, Category, CheckStatus, ContainerFacts, DeploymentFacts, K8sEventFacts, LogLine,
    NodeFacts, PodFacts, ServiceFacts, SymptomState,
};
use sitrep::reason::{Observations, analyze};
use std::collections::BTreeMap;

const NS: &str = "atlas";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-02T09:15:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn ago(minutes: i64) -> DateTime<Utc> {
    now() - Duration::minutes(minutes)
}

/// A Running, Ready pod of `app` whose container was last terminated `last` (reason, exit code,
/// minutes ago), with `restarts` restarts.
fn pod(name: &str, app: &str, restarts: u32, last: Option<(&str, i32, i64)>) -> PodFacts {
    PodFacts {
        name: name.into(),
        namespace: NS.into(),
        phase: "Running".into(),
        node: Some("node-1".into()),
        created_at: Some(ago(600)),
        owner: Some(format!("ReplicaSet/{app}-5d8f9")),
        labels: BTreeMap::from([("app".to_string(), app.to_string())]),
        conditions: BTreeMap::from([("Ready".into(), "True".into())]),
        containers: vec![ContainerFacts {
            name: app.into(),
            image: format!("registry.local/{app}:1.0"),
            ready: true,
            state: "running".into(),
            restart_count: restarts,
            last_reason: last.map(|(r, _, _)| r.to_string()),
            last_exit_code: last.map(|(_, c, _)| c),
            last_finished_at: last.map(|(_, _, m)| ago(m)),
            memory_limit: Some("512Mi".into()),
            ..ContainerFacts::default()
        }],
        ..PodFacts::default()
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
        selector: BTreeMap::from([("app".to_string(), name.to_string())]),
        ..DeploymentFacts::default()
    }
}

fn warning(reason: &str, object: &str, message: &str, from: i64, to: i64) -> K8sEventFacts {
    K8sEventFacts {
        event_type: "Warning".into(),
        reason: reason.into(),
        message: message.into(),
        object: object.into(),
        namespace: NS.into(),
        count: 6,
        first_seen: Some(ago(from)),
        last_seen: Some(ago(to)),
    }
}

fn world() -> Observations {
    let evidence = ["kubernetes/pods", "kubernetes/events", "kubernetes/nodes"]
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), vec![format!("ev-{i}")]))
        .collect();
    Observations {
        now: now(),
        nodes: vec![NodeFacts {
            name: "node-1".into(),
            conditions: BTreeMap::from([("Ready".to_string(), "True".to_string())]),
            ..NodeFacts::default()
        }],
        evidence,
        ..Observations::default()
    }
}

/// A warning-event alert about `app`, whose pods were each terminated `last` and probed
/// unhealthy from 70 to 62 minutes ago, Running and Ready since.
fn burst_world(last: (&str, i32, i64)) -> Observations {
    let mut obs = world();
    let mut labels = BTreeMap::from([
        (
            "alertname".to_string(),
            "KubernetesWarningEvent".to_string(),
        ),
        ("namespace".to_string(), NS.to_string()),
        ("reason".to_string(), "Unhealthy".to_string()),
    ]);
    labels.insert("severity".into(), "warning".into());
    obs.alert = Some(Alert {
        labels,
        annotations: BTreeMap::from([(
            "summary".to_string(),
            "Warning events for atlas/tiles".to_string(),
        )]),
        starts_at: Some(ago(70)),
        ..Alert::default()
    });
    obs.deployments = vec![deployment("tiles", 2, 2)];
    for sfx in ["aaaaa", "bbbbb"] {
        let name = format!("tiles-5d8f9-{sfx}");
        obs.pods.push(pod(&name, "tiles", 1, Some(last)));
        obs.events.push(warning(
            "Unhealthy",
            &format!("Pod/{name}"),
            "Readiness probe failed: HTTP probe failed with statuscode: 503",
            70,
            62,
        ));
    }
    obs
}

#[test]
fn an_exit_137_whose_reason_is_not_oom_is_not_called_an_oom_kill() {
    let a = analyze(&burst_world(("Error", 137, 63)));
    assert!(
        !a.checks
            .iter()
            .any(|c| c.detail.contains("OOMKilled") && c.status == CheckStatus::Failing),
        "{:#?}",
        a.checks
    );
    assert_ne!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
}

#[test]
fn a_burst_that_ended_with_everything_ready_since_is_healthy_and_its_oom_kill_history() {
    let a = analyze(&burst_world(("OOMKilled", 137, 63)));
    assert_eq!(a.symptom.state, SymptomState::Cleared, "{:?}", a.symptom);
    assert_eq!(a.category, Category::Healthy, "{}", a.root_cause);
    let oom: Vec<_> = a
        .checks
        .iter()
        .filter(|c| c.detail.contains("OOMKilled"))
        .collect();
    assert!(!oom.is_empty(), "{:#?}", a.checks);
    assert!(
        oom.iter().all(|c| c.status == CheckStatus::History),
        "{oom:#?}"
    );
}

#[test]
fn an_oom_kill_minutes_ago_is_still_live() {
    // The same pods, killed 4 minutes ago: not long enough to call the episode over.
    let mut obs = burst_world(("OOMKilled", 137, 4));
    for e in &mut obs.events {
        e.last_seen = Some(ago(3));
    }
    let a = analyze(&obs);
    assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
}

#[test]
fn a_problem_naming_nothing_that_was_read_is_not_measured_on_the_rest_of_the_cluster() {
    let mut obs = world();
    obs.problem = Some("storefront is down".into());
    obs.deployments = vec![deployment("ledger", 2, 2)];
    obs.pods = vec![
        pod("ledger-5d8f9-aaaaa", "ledger", 0, None),
        pod("ledger-5d8f9-bbbbb", "ledger", 0, None),
    ];
    let a = analyze(&obs);
    assert_eq!(
        a.symptom.state,
        SymptomState::Unmeasurable,
        "{:?}",
        a.symptom
    );
    assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
}

#[test]
fn a_problem_naming_a_namespace_is_measured_on_its_pods() {
    let mut obs = world();
    obs.problem = Some("pods in atlas keep restarting".into());
    obs.deployments = vec![deployment("ledger", 2, 2)];
    obs.pods = vec![pod("ledger-5d8f9-aaaaa", "ledger", 0, None)];
    let a = analyze(&obs);
    assert_ne!(
        a.symptom.state,
        SymptomState::Unmeasurable,
        "{:?}",
        a.symptom
    );
}

#[test]
fn the_service_a_problem_names_selecting_no_pod_is_the_cause() {
    let mut obs = world();
    obs.problem = Some("users get 503 from the storefront service".into());
    let mut d = deployment("storefront", 2, 2);
    d.selector = BTreeMap::from([("app".to_string(), "storefront-v2".to_string())]);
    obs.deployments = vec![d];
    for sfx in ["aaaaa", "bbbbb"] {
        let mut p = pod(&format!("storefront-5d8f9-{sfx}"), "storefront", 0, None);
        p.labels
            .insert("app".to_string(), "storefront-v2".to_string());
        obs.pods.push(p);
    }
    obs.services = vec![ServiceFacts {
        name: "storefront".into(),
        namespace: NS.into(),
        selector: BTreeMap::from([("app".to_string(), "storefront".to_string())]),
        ports: vec![(80, "8080".into())],
        endpoints_read: true,
        ..ServiceFacts::default()
    }];
    obs.evidence
        .insert("kubernetes/services".into(), vec!["ev-9".into()]);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("selects app=storefront"),
        "{}",
        a.root_cause
    );
    let check = a
        .checks
        .iter()
        .find(|c| c.object == "service/storefront")
        .expect("the Service's check");
    assert_ne!(check.relation, "no evidenced edge", "{check:?}");
}

fn log(pod: &str, minutes_ago: i64, line: &str) -> sitrep::model::LogLine {
    sitrep::model::LogLine {
        at: Some(ago(minutes_ago)),
        labels: BTreeMap::from([("pod".to_string(), pod.to_string())]),
        line: line.into(),
    }
}

/// `contacts` crash-looping on connections to `contacts-db:5433`, whose Service exposes `port`.
fn dialled_world(port: u16) -> Observations {
    let mut obs = world();
    obs.problem = Some("contacts keeps crashing".into());
    obs.deployments = vec![deployment("contacts", 1, 0)];
    let mut p = pod("contacts-5d8f9-aaaaa", "contacts", 6, Some(("Error", 1, 1)));
    p.conditions.insert("Ready".into(), "False".into());
    p.containers[0].ready = false;
    p.containers[0].state = "waiting".into();
    p.containers[0].reason = Some("CrashLoopBackOff".into());
    obs.pods.push(p);
    for m in [3, 2, 1] {
        obs.logs.push(log(
            "contacts-5d8f9-aaaaa",
            m,
            "org.postgresql.util.PSQLException: Connection to contacts-db:5433 refused. Check that the hostname and port are correct.",
        ));
    }
    obs.services = vec![ServiceFacts {
        name: "contacts-db".into(),
        namespace: NS.into(),
        selector: BTreeMap::from([("app".to_string(), "contacts-db".to_string())]),
        ports: vec![(port, port.to_string())],
        ready: vec!["contacts-db-0".into()],
        endpoints_read: true,
        ..ServiceFacts::default()
    }];
    for k in ["kubernetes/services", "kubernetes/pod_logs"] {
        obs.evidence.insert(k.into(), vec![format!("ev-{k}")]);
    }
    obs
}

#[test]
fn a_port_its_service_does_not_expose_is_the_callers_configuration() {
    let a = analyze(&dialled_world(5432));
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("contacts-db:5433") && a.root_cause.contains("5432"),
        "{}",
        a.root_cause
    );
    // The same refusals on the port the Service does expose: the dependency refuses.
    let a = analyze(&dialled_world(5433));
    assert_eq!(a.category, Category::DependencyFailure, "{}", a.root_cause);
}

#[test]
fn an_eviction_at_the_pods_own_limit_is_resource_exhaustion_and_not_a_crash() {
    let mut obs = world();
    obs.problem = Some("imgcache pods keep getting evicted".into());
    obs.deployments = vec![deployment("imgcache", 2, 1)];
    obs.pods
        .push(pod("imgcache-5d8f9-aaaaa", "imgcache", 0, None));
    let mut gone = pod("imgcache-5d8f9-bbbbb", "imgcache", 0, None);
    gone.phase = "Failed".into();
    gone.conditions.insert("Ready".into(), "False".into());
    gone.containers[0].ready = false;
    gone.containers[0].state = "terminated".into();
    gone.containers[0].exit_code = Some(137);
    gone.status_reason = Some("Evicted".into());
    gone.status_message = Some(
        "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ".into(),
    );
    obs.pods.push(gone);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("ephemeral local storage"),
        "{}",
        a.root_cause
    );
    assert!(
        !a.root_cause.contains("exited with code 137"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_stack_trace_reporting_a_heap_exhausted_is_memory_not_code() {
    let mut obs = world();
    obs.problem = Some("indexer restarts every half hour".into());
    obs.deployments = vec![deployment("indexer", 1, 1)];
    obs.pods.push(pod(
        "indexer-5d8f9-aaaaa",
        "indexer",
        3,
        Some(("Error", 1, 6)),
    ));
    for m in [8, 7] {
        obs.logs.push(log(
            "indexer-5d8f9-aaaaa",
            m,
            "Exception in thread \"worker-1\" java.lang.OutOfMemoryError: Java heap space",
        ));
    }
    obs.evidence
        .insert("kubernetes/pod_logs".into(), vec!["ev-logs".into()]);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("OutOfMemoryError"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_claim_pending_on_a_class_the_cluster_lacks_holds_the_pod_without_any_event() {
    let mut obs = world();
    obs.problem = Some("ledger-db has been down since this morning".into());
    let mut p = pod("ledger-db-0", "ledger-db", 0, None);
    p.owner = Some("StatefulSet/ledger-db".into());
    p.phase = "Pending".into();
    p.node = None;
    p.conditions = BTreeMap::from([("PodScheduled".into(), "False".into())]);
    p.containers.clear();
    p.claims = vec![sitrep::model::ClaimFacts {
        name: "data-ledger-db-0".into(),
        read: true,
        phase: "Pending".into(),
        storage_class: Some("premium-rwo".into()),
        class_exists: Some(false),
        ..Default::default()
    }];
    obs.pods.push(p);
    obs.workloads.push(sitrep::model::WorkloadFacts {
        kind: "StatefulSet".into(),
        name: "ledger-db".into(),
        namespace: NS.into(),
        desired: 1,
        ..Default::default()
    });
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(a.root_cause.contains("premium-rwo"), "{}", a.root_cause);
}

#[test]
fn a_replica_failure_condition_tells_the_refusal_its_expired_events_told() {
    let mut obs = world();
    let labels = BTreeMap::from([
        (
            "alertname".to_string(),
            "KubeDeploymentReplicasMismatch".to_string(),
        ),
        ("namespace".to_string(), NS.to_string()),
        ("deployment".to_string(), "renderer".to_string()),
    ]);
    obs.alert = Some(Alert {
        labels,
        starts_at: Some(ago(150)),
        ..Alert::default()
    });
    let mut d = deployment("renderer", 5, 2);
    d.conditions.insert(
        "ReplicaFailure".into(),
        (
            "True".into(),
            "FailedCreate".into(),
            "pods \"renderer-5d8f9-x7k2m\" is forbidden: exceeded quota: compute-quota, requested: requests.cpu=2, used: requests.cpu=15, limited: requests.cpu=16".into(),
        ),
    );
    obs.deployments = vec![d];
    obs.pods = vec![
        pod("renderer-5d8f9-aaaaa", "renderer", 0, None),
        pod("renderer-5d8f9-bbbbb", "renderer", 0, None),
    ];
    obs.evidence
        .insert("kubernetes/deployments".into(), vec!["ev-deploy".into()]);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(a.root_cause.contains("compute-quota"), "{}", a.root_cause);
}

#[test]
fn kills_that_keep_a_rhythm_are_not_over_because_the_pods_are_ready_between_them() {
    // Created ten hours ago, killed eleven times, the last 23 minutes ago: about once an hour,
    // so Ready now is the pause before the next kill, and the symptom is present.
    let mut obs = world();
    obs.problem = Some("tiles pods keep getting OOMKilled every hour or so".into());
    obs.deployments = vec![deployment("tiles", 2, 2)];
    for sfx in ["aaaaa", "bbbbb"] {
        obs.pods.push(pod(
            &format!("tiles-5d8f9-{sfx}"),
            "tiles",
            11,
            Some(("OOMKilled", 137, 23)),
        ));
    }
    let a = analyze(&obs);
    assert_eq!(a.symptom.state, SymptomState::Confirmed, "{:?}", a.symptom);
    assert!(
        a.symptom.detail.contains("restarts recur"),
        "{:?}",
        a.symptom
    );
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        !a.checks.iter().any(|c| c.status == CheckStatus::History),
        "{:#?}",
        a.checks
    );
    // Once, a day ago: a stumble that is over.
    for p in &mut obs.pods {
        p.containers[0].restart_count = 1;
        p.containers[0].last_finished_at = Some(ago(590));
    }
    let a = analyze(&obs);
    assert_eq!(a.symptom.state, SymptomState::Cleared, "{:?}", a.symptom);
}

/// `ledger` crash-looping on refused connections to `ledger-db:5432`, a StatefulSet with none of
/// its one replica ready, whose own pod logged `db_lines` (and restarted when `db_died`).
fn dependency_world(db_lines: &[&str], db_died: bool) -> Observations {
    let mut obs = world();
    obs.problem = Some("ledger keeps crashing".into());
    obs.deployments = vec![deployment("ledger", 1, 0)];
    let mut p = pod("ledger-5d8f9-aaaaa", "ledger", 6, Some(("Error", 1, 1)));
    p.conditions.insert("Ready".into(), "False".into());
    p.containers[0].ready = false;
    p.containers[0].reason = Some("CrashLoopBackOff".into());
    obs.pods.push(p);
    for m in [3, 2, 1] {
        obs.pod_logs.push(log(
            "ledger-5d8f9-aaaaa",
            m,
            "FATAL: could not connect to ledger-db:5432: connection refused",
        ));
    }
    obs.workloads = vec![sitrep::model::WorkloadFacts {
        kind: "StatefulSet".into(),
        name: "ledger-db".into(),
        namespace: NS.into(),
        desired: 1,
        ready: 0,
        selector: BTreeMap::from([("app".to_string(), "ledger-db".to_string())]),
        ..Default::default()
    }];
    let mut db = pod(
        "ledger-db-0",
        "ledger-db",
        u32::from(db_died) * 9,
        db_died.then_some(("Error", 1, 2)),
    );
    db.owner = Some("StatefulSet/ledger-db".into());
    db.conditions.insert("Ready".into(), "False".into());
    db.containers[0].ready = false;
    if db_died {
        db.containers[0].reason = Some("CrashLoopBackOff".into());
    }
    obs.pods.push(db);
    for (i, line) in db_lines.iter().enumerate() {
        obs.pod_logs.push(log("ledger-db-0", 5 - i as i64, line));
    }
    obs.evidence
        .insert("kubernetes/pod_logs".into(), vec!["ev-logs".into()]);
    obs.evidence
        .insert("kubernetes/workloads".into(), vec!["ev-workloads".into()]);
    obs
}

#[test]
fn a_dependency_that_died_of_its_own_cause_is_diagnosed_from_its_own_logs() {
    let disk_full = [
        "LOG:  starting PostgreSQL 16.3",
        "PANIC:  could not write to file \"pg_wal/xlogtemp.88\": No space left on device",
        "LOG:  database system is shut down",
    ];
    let a = analyze(&dependency_world(&disk_full, true));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("ledger-db") && a.root_cause.contains("No space left on device"),
        "{}",
        a.root_cause
    );
    // Its own logs say nothing telling: the dependency being down is the cause.
    let a = analyze(&dependency_world(&["LOG:  database system is ready"], true));
    assert_eq!(a.category, Category::DependencyFailure, "{}", a.root_cause);
    assert!(a.root_cause.contains("ledger-db"), "{}", a.root_cause);
}

#[test]
fn a_running_dependency_is_not_judged_by_the_warnings_it_logs_about_its_state() {
    let busy = ["level=warn msg=\"worker pool exhausted\" busy=64/64"];
    let a = analyze(&dependency_world(&busy, false));
    assert_eq!(a.category, Category::DependencyFailure, "{}", a.root_cause);
    // The same pod logging the same at error level is failing of its own cause.
    let failing = ["level=error msg=\"too many connections\" busy=64/64"];
    let a = analyze(&dependency_world(&failing, false));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
}

/// `mailer` (Running, Ready) logging `lines`, beside the StatefulSet `broker` (image `image`)
/// with none of its one replica ready, its pod last OOMKilled; `others` more StatefulSets down
/// beside them.
fn unnamed_peer_world(lines: &[&str], image: &str, others: usize) -> Observations {
    let mut obs = world();
    obs.problem = Some("mailer stopped sending".into());
    obs.deployments = vec![deployment("mailer", 1, 1)];
    obs.pods.push(pod("mailer-5d8f9-aaaaa", "mailer", 0, None));
    for (i, l) in lines.iter().enumerate() {
        obs.pod_logs
            .push(log("mailer-5d8f9-aaaaa", 5 - i as i64, l));
    }
    for (k, name) in std::iter::once("broker")
        .chain(["cache", "search"].into_iter().take(others))
        .enumerate()
    {
        obs.workloads.push(sitrep::model::WorkloadFacts {
            kind: "StatefulSet".into(),
            name: name.into(),
            namespace: NS.into(),
            desired: 1,
            ready: 0,
            selector: BTreeMap::from([("app".to_string(), name.to_string())]),
            ..Default::default()
        });
        let mut p = pod(&format!("{name}-0"), name, 9, Some(("OOMKilled", 137, 3)));
        p.owner = Some(format!("StatefulSet/{name}"));
        p.conditions.insert("Ready".into(), "False".into());
        p.containers[0].ready = false;
        p.containers[0].reason = Some("CrashLoopBackOff".into());
        p.containers[0].image = if k == 0 {
            image.to_string()
        } else {
            format!("registry.local/{name}:1")
        };
        obs.pods.push(p);
    }
    for k in ["kubernetes/pod_logs", "kubernetes/workloads"] {
        obs.evidence.insert(k.into(), vec![format!("ev-{k}")]);
    }
    obs
}

#[test]
fn a_peer_no_line_names_is_found_by_the_protocol_its_calls_speak_or_as_the_one_down() {
    let amqp = [
        "ERROR pika.adapters.utils.connection_workflow: AMQPConnector - reporting failure: ConnectionRefusedError(111, 'Connection refused')",
        "ERROR pika.adapters.utils.connection_workflow: AMQPConnector - reporting failure: ConnectionRefusedError(111, 'Connection refused')",
    ];
    // The failing calls speak AMQP and the down StatefulSet runs RabbitMQ, killed at its limit,
    // even with other workloads down beside it.
    let a = analyze(&unnamed_peer_world(
        &amqp,
        "docker.io/bitnami/rabbitmq:3.12",
        2,
    ));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("broker") && a.root_cause.contains("OOMKilled"),
        "{}",
        a.root_cause
    );
    // Calls that name no peer and no protocol: the one workload down beside it.
    let plain = [
        "ERROR send failed: connection refused",
        "ERROR send failed: connection refused",
    ];
    let a = analyze(&unnamed_peer_world(&plain, "registry.local/broker:1", 0));
    assert!(a.root_cause.contains("broker"), "{}", a.root_cause);
    // With three down and nothing to tell them apart, none is taken for the peer.
    let a = analyze(&unnamed_peer_world(&plain, "registry.local/broker:1", 2));
    assert!(
        a.category != Category::ResourceExhaustion && !a.root_cause.contains("broker-0"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_service_address_in_a_line_names_the_workload_behind_it() {
    let line = "Error: connect ECONNREFUSED 10.96.51.181:5432";
    let mut obs = unnamed_peer_world(&[line, line], "registry.local/broker:1", 2);
    obs.services = vec![ServiceFacts {
        name: "broker".into(),
        namespace: NS.into(),
        selector: BTreeMap::from([("app".to_string(), "broker".to_string())]),
        ports: vec![(5432, "5432".into())],
        cluster_ip: Some("10.96.51.181".into()),
        endpoints_read: true,
        ..ServiceFacts::default()
    }];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(a.root_cause.contains("broker"), "{}", a.root_cause);
}

/// `imgcache` pods evicted from `node-1` under MemoryPressure, beside `tenants` other running
/// pods on it that set no memory limit (the rest of its pods are bounded).
fn memory_pressure_world(tenants: usize) -> Observations {
    let mut obs = world();
    obs.problem = Some("imgcache pods keep getting evicted".into());
    obs.nodes[0]
        .conditions
        .insert("MemoryPressure".into(), "True".into());
    obs.deployments = vec![deployment("imgcache", 2, 1)];
    obs.pods
        .push(pod("imgcache-5d8f9-aaaaa", "imgcache", 0, None));
    let mut gone = pod("imgcache-5d8f9-bbbbb", "imgcache", 0, None);
    gone.phase = "Failed".into();
    gone.conditions.insert("Ready".into(), "False".into());
    gone.containers[0].ready = false;
    gone.status_reason = Some("Evicted".into());
    gone.status_message = Some("The node was low on resource: memory. Threshold quantity: 100Mi, available: 89212Ki. Container imgcache was using 488Mi, request is 256Mi, has larger consumption of request. ".into());
    obs.pods.push(gone);
    for i in 0..tenants {
        let mut t = pod(&format!("batch-{i}"), "batch", 0, None);
        t.owner = None;
        t.containers[0].memory_limit = None;
        t.containers[0].memory_request = Some("1Gi".into());
        obs.pods.push(t);
    }
    obs
}

#[test]
fn memory_reclaimed_from_the_subject_names_the_one_unbounded_tenant_of_its_node() {
    let a = analyze(&memory_pressure_world(1));
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(a.root_cause.contains("batch-0"), "{}", a.root_cause);
    // Two pods free to grow: neither is named, the node's shortage stays the cause.
    let a = analyze(&memory_pressure_world(2));
    assert!(
        !a.root_cause.contains("batch-0") && !a.root_cause.contains("batch-1"),
        "{}",
        a.root_cause
    );
}

#[test]
fn a_webhook_down_because_its_own_pods_are_killed_for_memory_is_that_exhaustion() {
    let mut obs = world();
    obs.problem = Some("ledger deploys create no pods".into());
    obs.deployments = vec![deployment("ledger", 2, 2)];
    obs.pods.push(pod("ledger-5d8f9-aaaaa", "ledger", 0, None));
    obs.events.push(warning(
        "FailedCreate",
        "ReplicaSet/ledger-5d8f9",
        r#"Error creating: Internal error occurred: failed calling webhook "validate.policy.svc": failed to call webhook: Post "https://policy-svc.policy.svc:443/validate?timeout=10s": no endpoints available for service "policy-svc""#,
        20,
        1,
    ));
    let mut hook = pod(
        "policy-6c7d8-bbbbb",
        "policy",
        9,
        Some(("OOMKilled", 137, 2)),
    );
    hook.namespace = "policy".into();
    hook.conditions.insert("Ready".into(), "False".into());
    hook.containers[0].ready = false;
    hook.containers[0].reason = Some("CrashLoopBackOff".into());
    obs.pods.push(hook);
    obs.services = vec![ServiceFacts {
        name: "policy-svc".into(),
        namespace: "policy".into(),
        selector: BTreeMap::from([("app".to_string(), "policy".to_string())]),
        endpoints_read: true,
        ..ServiceFacts::default()
    }];
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ResourceExhaustion, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("policy-svc") && a.root_cause.contains("OOMKilled"),
        "{}",
        a.root_cause
    );
    // Without its pods failing, the webhook being unreachable is the cluster's.
    obs.pods.pop();
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Infrastructure, "{}", a.root_cause);
}

/// `picker` with one pod not ready on `node-1` and one Ready on `node-2`, beside the network
/// agent `calico-node` of `kube-system` on `node-1`, ready or not.
fn one_node_world(agent_ready: bool) -> Observations {
    let mut obs = world();
    obs.problem = Some("one picker pod cannot reach the database".into());
    obs.nodes.push(NodeFacts {
        name: "node-2".into(),
        conditions: BTreeMap::from([("Ready".to_string(), "True".to_string())]),
        ..NodeFacts::default()
    });
    obs.deployments = vec![deployment("picker", 2, 1)];
    let mut bad = pod("picker-5d8f9-aaaaa", "picker", 0, None);
    bad.conditions.insert("Ready".into(), "False".into());
    bad.containers[0].ready = false;
    obs.pods.push(bad);
    let mut good = pod("picker-5d8f9-bbbbb", "picker", 0, None);
    good.node = Some("node-2".into());
    obs.pods.push(good);
    let mut agent = pod("calico-node-x1", "calico-node", 0, None);
    agent.namespace = "kube-system".into();
    agent.owner = Some("DaemonSet/calico-node".into());
    if !agent_ready {
        agent.conditions.insert("Ready".into(), "False".into());
        agent.containers[0].ready = false;
    }
    obs.pods.push(agent);
    obs
}

#[test]
fn a_subject_failing_on_one_node_whose_network_agent_is_down_is_the_nodes_fault() {
    let a = analyze(&one_node_world(false));
    assert_eq!(a.category, Category::Infrastructure, "{}", a.root_cause);
    assert!(
        a.root_cause.contains("calico-node-x1") && a.root_cause.contains("node-1"),
        "{}",
        a.root_cause
    );
    let a = analyze(&one_node_world(true));
    assert!(!a.root_cause.contains("calico-node"), "{}", a.root_cause);
}

/// A blackbox probe of `storefront`'s Service failing, its one pod Ready, its lines refusing
/// connections to the address of `catalog`'s Service, and `catalog` scaled to 0 replicas
/// (`catalog_replicas`) 20 minutes ago.
fn probe_world(catalog_replicas: u32) -> Observations {
    let mut obs = world();
    obs.alert = Some(Alert {
        labels: BTreeMap::from([
            (
                "alertname".to_string(),
                "StorefrontProbeFailing".to_string(),
            ),
            ("namespace".to_string(), NS.to_string()),
            (
                "instance".to_string(),
                format!("http://storefront.{NS}.svc.cluster.local/"),
            ),
            ("job".to_string(), "blackbox-http".to_string()),
        ]),
        starts_at: Some(ago(15)),
        ..Alert::default()
    });
    obs.deployments = vec![
        deployment("storefront", 1, 1),
        deployment("catalog", catalog_replicas, catalog_replicas),
        deployment("basket", 1, 1),
    ];
    obs.pods = vec![
        pod("storefront-5d8f9-aaaaa", "storefront", 0, None),
        pod("basket-5d8f9-aaaaa", "basket", 0, None),
    ];
    if catalog_replicas > 0 {
        obs.pods
            .push(pod("catalog-5d8f9-aaaaa", "catalog", 0, None));
    }
    obs.services = ["storefront", "catalog", "basket"]
        .iter()
        .enumerate()
        .map(|(i, name)| ServiceFacts {
            name: name.to_string(),
            namespace: NS.into(),
            selector: BTreeMap::from([("app".to_string(), name.to_string())]),
            ports: vec![(3550, "3550".into())],
            cluster_ip: Some(format!("10.96.7.{}", 10 + i)),
            endpoints_read: true,
            ..ServiceFacts::default()
        })
        .collect();
    obs.events.push(K8sEventFacts {
        event_type: "Normal".into(),
        reason: "ScalingReplicaSet".into(),
        message: "Scaled down replica set catalog-5d8f9 to 0 from 1".into(),
        object: "Deployment/catalog".into(),
        namespace: NS.into(),
        count: 1,
        first_seen: Some(ago(20)),
        last_seen: Some(ago(20)),
    });
    for m in [12, 8, 4, 1] {
        obs.pod_logs.push(LogLine {
            at: Some(ago(m)),
            labels: BTreeMap::from([("pod".to_string(), "storefront-5d8f9-aaaaa".to_string())]),
            line: "could not retrieve products: rpc error: code = Unavailable desc = dial tcp 10.96.7.11:3550: connect: connection refused".into(),
        });
    }
    obs
}

#[test]
fn a_probed_service_refused_by_a_dependency_scaled_to_zero_is_that_scale_down() {
    let a = analyze(&probe_world(0));
    // The probe's target names the Service, and so the workload behind it.
    assert!(
        a.subject
            .iter()
            .any(|o| o.kind == "Deployment" && o.name == "storefront"),
        "{:?}",
        a.subject
    );
    // Ready pods whose own lines refused calls a minute ago have not recovered.
    assert_eq!(
        a.symptom.state,
        SymptomState::Confirmed,
        "{}",
        a.symptom.detail
    );
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause.starts_with("catalog is scaled to 0 replicas"),
        "{}",
        a.root_cause
    );
    // Running, the same peer is no cause of its own: the refusals stay the caller's finding.
    let a = analyze(&probe_world(1));
    assert!(!a.root_cause.contains("scaled to 0"), "{}", a.root_cause);
    assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
}

#[test]
fn a_dialled_service_whose_pods_listen_on_another_port_is_that_mismatch() {
    let mut obs = probe_world(1);
    obs.pod_logs.push(LogLine {
        at: Some(ago(30)),
        labels: BTreeMap::from([("pod".to_string(), "catalog-5d8f9-aaaaa".to_string())]),
        line: "level=info msg=\"listening on :7070\"".into(),
    });
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause
            .contains("Service catalog sends port 3550 to targetPort 3550, but the process in its pods listens on 7070"),
        "{}",
        a.root_cause
    );
    // Saying it listens on the targetPort, it is no mismatch.
    if let Some(l) = obs.pod_logs.last_mut() {
        l.line = "Listening on :3550".into();
    }
    let a = analyze(&obs);
    assert!(!a.root_cause.contains("listens on"), "{}", a.root_cause);
}

#[test]
fn a_question_whether_a_workload_is_still_broken_is_answered_by_its_events_and_pods() {
    let mut obs = burst_world(("Error", 1, 65));
    obs.alert = None;
    obs.problem = Some("got paged about tiles an hour ago, is it still broken?".into());
    let a = analyze(&obs);
    assert_eq!(
        a.symptom.state,
        SymptomState::Cleared,
        "{}",
        a.symptom.detail
    );
    assert!(a.symptom.detail.contains("ended"), "{}", a.symptom.detail);
    assert_eq!(a.category, Category::Healthy, "{}", a.root_cause);
    // Probes failing a minute ago: the episode goes on.
    for e in &mut obs.events {
        e.last_seen = Some(ago(1));
    }
    let a = analyze(&obs);
    assert_eq!(
        a.symptom.state,
        SymptomState::Confirmed,
        "{}",
        a.symptom.detail
    );
    assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
    // Ended, but a replica is missing: not cleared.
    for e in &mut obs.events {
        e.last_seen = Some(ago(62));
    }
    obs.deployments[0].ready_replicas = 1;
    obs.deployments[0].available_replicas = 1;
    let a = analyze(&obs);
    assert_ne!(
        a.symptom.state,
        SymptomState::Cleared,
        "{}",
        a.symptom.detail
    );
    assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
}

#[test]
fn a_dialled_service_whose_target_port_its_pods_do_not_declare_is_that_port() {
    let mut obs = probe_world(1);
    if let Some(p) = obs.pods.iter_mut().find(|p| p.name.starts_with("catalog-")) {
        p.containers[0].ports = vec![7070];
    }
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
    assert!(
        a.root_cause.contains(
            "Service catalog sends port 3550 to targetPort 3550, which its pods do not serve (they declare 7070)"
        ),
        "{}",
        a.root_cause
    );
    // Its pod not Ready: that explains the refusals, the ports are not judged.
    if let Some(p) = obs.pods.iter_mut().find(|p| p.name.starts_with("catalog-")) {
        p.conditions.insert("Ready".into(), "False".into());
        p.containers[0].ready = false;
    }
    let a = analyze(&obs);
    assert!(!a.root_cause.contains("targetPort"), "{}", a.root_cause);
}

/// KubePodCrashLooping on pod `crashing`, whose series was last scraped `last_minutes` ago.
fn crash_series_world(crashing: &str, last_minutes: i64) -> Observations {
    const EXPR: &str = r#"max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff",job="kube-state-metrics"}[5m]) >= 1"#;
    let base = sitrep::reason::promql::parse(EXPR)
        .map(|e| e.base)
        .unwrap_or_default();
    let mut obs = world();
    obs.alert = Some(Alert {
        labels: BTreeMap::from([
            ("alertname".to_string(), "KubePodCrashLooping".to_string()),
            ("namespace".to_string(), NS.to_string()),
            ("pod".to_string(), crashing.to_string()),
        ]),
        starts_at: Some(ago(60)),
        generator_url: format!(
            "http://prom/graph?g0.expr={}",
            EXPR.replace(' ', "+").replace('"', "%22")
        ),
        ..Alert::default()
    });
    obs.metrics = vec![sitrep::model::Series {
        name: base,
        labels: BTreeMap::from([("pod".to_string(), crashing.to_string())]),
        points: (last_minutes..=70)
            .rev()
            .map(|m| (ago(m).timestamp() as f64, 1.0))
            .collect(),
    }];
    obs
}

#[test]
fn a_series_that_ended_with_its_deleted_pod_has_cleared_and_one_still_read_has_not() {
    // The crashing pod was replaced 30 minutes ago: its series stopped with it.
    let a = analyze(&crash_series_world("api-5d7f9-gone1", 30));
    assert_eq!(
        a.symptom.state,
        SymptomState::Cleared,
        "{}",
        a.symptom.detail
    );
    assert!(
        a.symptom.detail.contains("no longer exists"),
        "{}",
        a.symptom.detail
    );

    // The same series still read a minute ago is the condition holding.
    let a = analyze(&crash_series_world("api-5d7f9-gone1", 1));
    assert_eq!(
        a.symptom.state,
        SymptomState::Confirmed,
        "{}",
        a.symptom.detail
    );
}
