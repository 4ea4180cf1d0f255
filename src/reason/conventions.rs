//! The alert conventions the diagnosis knows: the kubernetes-mixin (kube-prometheus-stack),
//! node-exporter and postgres-exporter defaults, each with the labels its subject comes from,
//! what measures its symptom and the checks that explain it (the table in `docs/diagnosis.md`).

/// One known alert.
pub struct AlertConvention {
    pub alert: &'static str,
    /// The labels the rule carries that name its subject.
    pub labels: &'static [&'static str],
    /// The object kinds the subject resolves to.
    pub subject: &'static str,
    /// What measures the symptom.
    pub symptom: &'static str,
    /// The checks that explain it.
    pub checks: &'static str,
}

const POD_CHECKS: &str = "crash loop (exit code, reason, last log lines), OOM against the memory limit, image pull, container config (status message quoted), probes (live or history), scheduling, node, changes to the owner";
const ROLLOUT_CHECKS: &str = "new versus old ReplicaSet (revision, pod-template-hash), image pull, crash loop, scheduling (the scheduler's reason and the selector quoted), quota and LimitRange, probes, changes";

pub const ALERTS: &[AlertConvention] = &[
    AlertConvention {
        alert: "KubePodCrashLooping",
        labels: &["namespace", "pod", "container"],
        subject: "Pod, its owner through ownerReferences",
        symptom: "container restarts now (CrashLoopBackOff, a restart within 15 min) from the pod status; its expression when Prometheus answers",
        checks: POD_CHECKS,
    },
    AlertConvention {
        alert: "KubePodNotReady",
        labels: &["namespace", "pod"],
        subject: "Pod, its owner",
        symptom: "pod Ready condition",
        checks: POD_CHECKS,
    },
    AlertConvention {
        alert: "KubeContainerWaiting",
        labels: &["namespace", "pod", "container"],
        subject: "Pod, Container, the owner",
        symptom: "container waiting reason",
        checks: POD_CHECKS,
    },
    AlertConvention {
        alert: "KubeDeploymentReplicasMismatch",
        labels: &["namespace", "deployment"],
        subject: "Deployment, its pods by selector and ownerReferences",
        symptom: "ready versus desired replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeDeploymentGenerationMismatch",
        labels: &["namespace", "deployment"],
        subject: "Deployment, its pods",
        symptom: "ready and updated replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeDeploymentRolloutStuck",
        labels: &["namespace", "deployment"],
        subject: "Deployment, its ReplicaSets and pods",
        symptom: "updated versus desired replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeStatefulSetReplicasMismatch",
        labels: &["namespace", "statefulset"],
        subject: "StatefulSet, its pods by ownerReferences and selector",
        symptom: "ready versus desired replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeStatefulSetGenerationMismatch",
        labels: &["namespace", "statefulset"],
        subject: "StatefulSet, its pods",
        symptom: "ready versus desired replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeStatefulSetUpdateNotRolledOut",
        labels: &["namespace", "statefulset"],
        subject: "StatefulSet, its pods",
        symptom: "ready versus desired replicas",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeDaemonSetRolloutStuck",
        labels: &["namespace", "daemonset"],
        subject: "DaemonSet, its pods (one a node)",
        symptom: "ready versus desired scheduled",
        checks: ROLLOUT_CHECKS,
    },
    AlertConvention {
        alert: "KubeDaemonSetNotScheduled",
        labels: &["namespace", "daemonset"],
        subject: "DaemonSet, its pods",
        symptom: "ready versus desired scheduled",
        checks: "scheduling (taints, node selector), node",
    },
    AlertConvention {
        alert: "KubeDaemonSetMisScheduled",
        labels: &["namespace", "daemonset"],
        subject: "DaemonSet, its pods",
        symptom: "ready versus desired scheduled",
        checks: "scheduling (taints, node selector), node",
    },
    AlertConvention {
        alert: "KubeJobNotCompleted",
        labels: &["namespace", "job_name"],
        subject: "Job, its pods by job-name / controller-uid",
        symptom: "the Job's conditions, its pods' phases",
        checks: "the pods' exit codes and last log lines (syntax errors, host:port quoted), image pull, container config, scheduling",
    },
    AlertConvention {
        alert: "KubeJobFailed",
        labels: &["namespace", "job_name"],
        subject: "Job (and its CronJob), its pods by job-name / controller-uid",
        symptom: "the Job's Failed condition (BackoffLimitExceeded, DeadlineExceeded), its pods' phases",
        checks: "the pods' exit codes and last log lines (syntax errors, host:port quoted), image pull, container config, scheduling, dependencies named in the logs",
    },
    AlertConvention {
        alert: "KubeHpaMaxedOut",
        labels: &["namespace", "horizontalpodautoscaler"],
        subject: "HorizontalPodAutoscaler, its target",
        symptom: "its expression (replicas at max)",
        checks: "HPA at max, CPU saturation of the target, changes",
    },
    AlertConvention {
        alert: "KubeHpaReplicasMismatch",
        labels: &["namespace", "horizontalpodautoscaler"],
        subject: "HorizontalPodAutoscaler, its target",
        symptom: "its expression",
        checks: "scheduling and quota of the target's new pods",
    },
    AlertConvention {
        alert: "CPUThrottlingHigh",
        labels: &["namespace", "pod", "container"],
        subject: "Pod, Container, the owner",
        symptom: "throttled CPU periods ratio (Prometheus); unmeasurable without it",
        checks: "CPU limit against usage, replicas, probes timing out as its symptom, changes",
    },
    AlertConvention {
        alert: "KubeCPUOvercommit",
        labels: &["cluster"],
        subject: "the cluster's nodes",
        symptom: "its expression",
        checks: "node allocatable against requests, pending pods",
    },
    AlertConvention {
        alert: "KubeMemoryOvercommit",
        labels: &["cluster"],
        subject: "the cluster's nodes",
        symptom: "its expression",
        checks: "node allocatable against requests, pending pods",
    },
    AlertConvention {
        alert: "KubeQuotaExceeded",
        labels: &["namespace", "resourcequota"],
        subject: "ResourceQuota, the namespace",
        symptom: "its expression",
        checks: "exceeded-quota events (the quota quoted), pods not created",
    },
    AlertConvention {
        alert: "KubePersistentVolumeFillingUp",
        labels: &["namespace", "persistentvolumeclaim"],
        subject: "PersistentVolumeClaim, the pods mounting it",
        symptom: "used versus capacity (Prometheus)",
        checks: "volume capacity, the writer, time to full",
    },
    AlertConvention {
        alert: "KubePersistentVolumeErrors",
        labels: &["persistentvolume"],
        subject: "PersistentVolume",
        symptom: "its expression",
        checks: "volume phase, unbound claims and their StorageClass",
    },
    AlertConvention {
        alert: "KubeNodeNotReady",
        labels: &["node"],
        subject: "Node, the pods on it",
        symptom: "the node's Ready condition",
        checks: "node conditions (message quoted), pressure, the pods it hosts, a flap (NotReady then Ready) as history",
    },
    AlertConvention {
        alert: "KubeNodeUnreachable",
        labels: &["node"],
        subject: "Node, the pods on it",
        symptom: "the node's Ready condition and taints",
        checks: "node conditions, taints, pods stuck terminating",
    },
    AlertConvention {
        alert: "KubeletDown",
        labels: &["job", "namespace"],
        subject: "the kubelet scrape target (`job` is the scrape job, not a Job)",
        symptom: "its expression (`up`)",
        checks: "nodes Ready, node conditions",
    },
    AlertConvention {
        alert: "TargetDown",
        labels: &["job", "namespace", "service"],
        subject: "the Service's workload (`job` is the scrape job)",
        symptom: "its expression (`up`); pods Ready do not clear it",
        checks: "the workload's pods, restarts, readiness",
    },
    AlertConvention {
        alert: "Watchdog",
        labels: &[],
        subject: "none: the alerting pipeline",
        symptom: "fires by design (`vector(1)`)",
        checks: "none: healthy by design",
    },
    AlertConvention {
        alert: "InfoInhibitor",
        labels: &["namespace"],
        subject: "none",
        symptom: "fires by design",
        checks: "none: healthy by design",
    },
    AlertConvention {
        alert: "NodeFilesystemSpaceFillingUp",
        labels: &["instance", "device", "mountpoint"],
        subject: "Node when `instance` names one",
        symptom: "its expression (free space and its slope)",
        checks: "node DiskPressure, evictions",
    },
    AlertConvention {
        alert: "NodeFilesystemAlmostOutOfSpace",
        labels: &["instance", "device", "mountpoint"],
        subject: "Node when `instance` names one",
        symptom: "its expression",
        checks: "node DiskPressure, evictions",
    },
    AlertConvention {
        alert: "NodeMemoryHighUtilization",
        labels: &["instance"],
        subject: "Node when `instance` names one",
        symptom: "its expression",
        checks: "node MemoryPressure, OOM kills on it",
    },
    AlertConvention {
        alert: "PostgreSQLDown",
        labels: &["instance", "namespace"],
        subject: "Database",
        symptom: "its expression (`pg_up`)",
        checks: "server reachable, authentication",
    },
    AlertConvention {
        alert: "PostgreSQLMaxConnectionsReached",
        labels: &["instance"],
        subject: "Database",
        symptom: "its expression; connections against max_connections",
        checks: "connections per application and user, idle in transaction",
    },
    AlertConvention {
        alert: "PostgreSQLHighConnections",
        labels: &["instance"],
        subject: "Database",
        symptom: "its expression",
        checks: "connections per application, long transactions",
    },
    AlertConvention {
        alert: "PostgreSQLSlowQueries",
        labels: &["instance", "datname"],
        subject: "Database",
        symptom: "latency (its expression); unmeasurable without Prometheus",
        checks: "lock chains (the root blocker quoted), long-running statements, pg_stat_statements",
    },
    AlertConvention {
        alert: "PostgreSQLReplicationLag",
        labels: &["instance"],
        subject: "Database replica",
        symptom: "its expression",
        checks: "replication lag and its cause, long transactions",
    },
];

/// A CamelCase alert name read as words (`PostgreSQLTooManyConnections` → `PostgreSQL Too Many
/// Connections`), so word rules match the names rules are given.
pub fn camel_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::ALERTS;
    use crate::model::{Alert, Category, NodeFacts};
    use crate::reason::symptom::{self, Claim};
    use crate::reason::{Ctx, Observations};

    /// Every known alert resolves its subject from its own labels and has a claim that fits it.
    #[test]
    fn every_known_alert_resolves_its_subject_and_claim() {
        for conv in ALERTS {
            let mut alert = Alert::default();
            alert.labels.insert("alertname".into(), conv.alert.into());
            for l in conv.labels {
                alert.labels.insert(l.to_string(), format!("{l}-x"));
            }
            let obs = Observations {
                alert: Some(alert),
                nodes: vec![NodeFacts {
                    name: "instance-x".into(),
                    ..NodeFacts::default()
                }],
                ..Observations::default()
            };
            let ctx = Ctx::new(&obs);
            let kinds: Vec<&str> = ctx
                .subject
                .objects
                .iter()
                .map(|o| o.kind.as_str())
                .collect();
            let want = |k: &str| conv.subject.contains(k);
            for (label, kind) in [
                ("pod", "Pod"),
                ("deployment", "Deployment"),
                ("statefulset", "StatefulSet"),
                ("daemonset", "DaemonSet"),
                ("job_name", "Job"),
                ("node", "Node"),
                ("horizontalpodautoscaler", "HorizontalPodAutoscaler"),
                ("persistentvolumeclaim", "PersistentVolumeClaim"),
                ("resourcequota", "ResourceQuota"),
            ] {
                if conv.labels.contains(&label) {
                    assert!(want(kind), "{}: table says {}", conv.alert, conv.subject);
                    assert!(
                        kinds.contains(&kind),
                        "{}: subject {kinds:?} lacks {kind}",
                        conv.alert
                    );
                }
            }
            // `job` on these rules is Prometheus's scrape job, never a Job.
            if conv.labels.contains(&"job") {
                assert!(!kinds.contains(&"Job"), "{}: {kinds:?}", conv.alert);
            }
            let claim = symptom::claim(&ctx);
            let by_design = symptom::by_design(&ctx);
            let expected = if conv.symptom.contains("fires by design") {
                assert!(by_design, "{}", conv.alert);
                continue;
            } else if conv.symptom.starts_with("its expression") {
                // Measured by its expression only: never by pods being Ready.
                assert!(
                    !matches!(
                        claim,
                        Claim::Restarts | Claim::Availability | Claim::JobFailed
                    ),
                    "{}: {claim:?}",
                    conv.alert
                );
                continue;
            } else if conv.symptom.contains("restarts") {
                Claim::Restarts
            } else if conv.symptom.contains("Ready condition") && conv.subject.starts_with("Node") {
                Claim::NodeReady
            } else if conv.symptom.contains("Job's") {
                Claim::JobFailed
            } else if conv.symptom.contains("replicas")
                || conv.symptom.contains("Ready condition")
                || conv.symptom.contains("waiting")
                || conv.symptom.contains("scheduled")
            {
                Claim::Availability
            } else {
                // Measured by its expression only: never by pods being Ready.
                assert!(
                    !matches!(
                        claim,
                        Claim::Restarts | Claim::Availability | Claim::JobFailed
                    ),
                    "{}: {claim:?}",
                    conv.alert
                );
                continue;
            };
            assert!(!by_design, "{}", conv.alert);
            assert_eq!(claim, expected, "{}", conv.alert);
        }
    }

    /// `docs/diagnosis.md` is the written form of the taxonomy and the alert table: it lists every
    /// category with its rule and every known alert.
    #[test]
    fn the_document_lists_every_category_and_alert() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/diagnosis.md");
        let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for c in Category::ALL {
            assert!(doc.contains(&format!("`{}`", c.name())), "{}", c.name());
            assert!(doc.contains(c.rule()), "rule of {}", c.name());
            assert!(doc.contains(c.example()), "example of {}", c.name());
        }
        for a in ALERTS {
            assert!(doc.contains(&format!("| `{}` |", a.alert)), "{}", a.alert);
        }
    }
}
