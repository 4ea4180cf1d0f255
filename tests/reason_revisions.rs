//! A StatefulSet's ControllerRevisions as its rollouts, on a synthetic world written for this
//! file: pods that start crashing right after a new revision are lined up with that revision,
//! as a Deployment's are with its new ReplicaSet.

use chrono::{DateTime, Duration, Utc};
use sitrep::agent::specialists::rollout_changes;
use sitrep::model::{Alert, ContainerFacts, DeploymentFacts, LogLine, PodFacts, WorkloadFacts};
use sitrep::reason::{Analysis, Observations, analyze};
use std::collections::BTreeMap;

const NS: &str = "ledger";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-12T09:30:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn onset() -> DateTime<Utc> {
    now() - Duration::minutes(20)
}

/// A revision of StatefulSet `journal` as the client reads it.
fn revision(n: i64, image: &str, at: DateTime<Utc>) -> DeploymentFacts {
    DeploymentFacts {
        name: format!("journal-5b8c9d{n}f7"),
        namespace: NS.into(),
        revision: Some(n.to_string()),
        owner: Some("StatefulSet/journal".into()),
        labels: BTreeMap::from([("app".to_string(), "journal".to_string())]),
        images: vec![image.into()],
        created_at: Some(at),
        ..DeploymentFacts::default()
    }
}

fn pod(i: u32) -> PodFacts {
    PodFacts {
        name: format!("journal-{i}"),
        namespace: NS.into(),
        phase: "Running".into(),
        owner: Some("StatefulSet/journal".into()),
        labels: BTreeMap::from([("app".to_string(), "journal".to_string())]),
        conditions: BTreeMap::from([("Ready".to_string(), "False".to_string())]),
        created_at: Some(onset() - Duration::minutes(1)),
        containers: vec![ContainerFacts {
            name: "journal".into(),
            image: "registry.local/journal:3.2.0".into(),
            restart_count: 7,
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("Error".into()),
            last_exit_code: Some(2),
            last_finished_at: Some(now() - Duration::minutes(2)),
            ..ContainerFacts::default()
        }],
        ..PodFacts::default()
    }
}

/// `journal` crash-looping since the onset, with `revisions` read as the changes specialist
/// reads them.
fn world(revisions: Vec<DeploymentFacts>) -> Observations {
    let labels = BTreeMap::from([
        (
            "alertname".to_string(),
            "KubeStatefulSetReplicasMismatch".to_string(),
        ),
        ("namespace".to_string(), NS.to_string()),
        ("statefulset".to_string(), "journal".to_string()),
        ("severity".to_string(), "page".to_string()),
    ]);
    let mut pod_logs = Vec::new();
    for m in -20i64..20 {
        for (i, p) in ["journal-0", "journal-1"].iter().enumerate() {
            let line = if m < 0 {
                format!(
                    "INFO appended entry {} to segment 41",
                    7000 + m * 2 + i as i64
                )
            } else {
                "panic: runtime error: index out of range [3] with length 3".to_string()
            };
            pod_logs.push(LogLine {
                at: Some(onset() + Duration::minutes(m)),
                labels: BTreeMap::from([("pod".to_string(), p.to_string())]),
                line,
            });
        }
    }
    Observations {
        alert: Some(Alert {
            labels,
            starts_at: Some(onset()),
            ..Alert::default()
        }),
        now: now(),
        workloads: vec![WorkloadFacts {
            kind: "StatefulSet".into(),
            name: "journal".into(),
            namespace: NS.into(),
            selector: BTreeMap::from([("app".to_string(), "journal".to_string())]),
            images: vec!["registry.local/journal:3.2.0".into()],
            desired: 2,
            updated: 2,
            unavailable: 2,
            ..WorkloadFacts::default()
        }],
        pods: vec![pod(0), pod(1)],
        pod_logs,
        changes: rollout_changes(&revisions),
        controller_revisions: revisions,
        evidence: BTreeMap::from([
            ("kubernetes/pods".to_string(), vec!["ev-pods".to_string()]),
            (
                "kubernetes/pod_logs".to_string(),
                vec!["ev-logs".to_string()],
            ),
            ("changes".to_string(), vec!["ev-changes".to_string()]),
        ]),
        ..Observations::default()
    }
}

fn text(a: &Analysis) -> String {
    format!(
        "{:?} | {} | {}",
        a.category,
        a.root_cause,
        a.findings
            .iter()
            .map(|f| f.summary.clone())
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

#[test]
fn pods_crashing_right_after_a_new_revision_name_that_revision() {
    let a = analyze(&world(vec![
        revision(3, "registry.local/journal:3.1.4", now() - Duration::days(6)),
        revision(
            4,
            "registry.local/journal:3.2.0",
            onset() - Duration::minutes(2),
        ),
    ]));
    let all = text(&a);
    assert!(
        all.contains(
            "StatefulSet journal revision 4 (registry.local/journal:3.2.0): image registry.local/journal:3.1.4 → registry.local/journal:3.2.0"
        ),
        "{all}"
    );
    assert!(a.root_cause.contains("revision 4"), "{all}");
    assert!(a.root_cause.contains("regression to roll back"), "{all}");
}

#[test]
fn a_revision_long_before_the_crashes_is_not_their_release() {
    let a = analyze(&world(vec![revision(
        4,
        "registry.local/journal:3.2.0",
        now() - Duration::days(3),
    )]));
    let all = text(&a);
    assert!(!a.root_cause.contains("revision 4"), "{all}");
    assert!(!a.root_cause.contains("regression to roll back"), "{all}");
}
