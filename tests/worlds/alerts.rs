//! Alerts as kube-prometheus-stack (the kubernetes-mixin) sends them: rule names, expressions,
//! labels (with the kube-state-metrics scrape labels where the expression keeps them), rendered
//! annotations, the Alertmanager v4 webhook, and Prometheus' `/api/v1/rules`, `/api/v1/alerts`
//! and `query_range` answers.

use super::Kind;
use super::k8s::{hash, ts};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One alerting rule of the mixin (or the latency rule an application team writes).
#[derive(Clone, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub expr: String,
    pub for_secs: i64,
    pub severity: &'static str,
    pub summary: &'static str,
    pub group: &'static str,
    /// The expression keeps the kube-state-metrics series' own labels (`job`, `service`, ...).
    pub scrape_labels: bool,
    /// What the expression (without its threshold) returns over time.
    pub series: Series,
}

/// How a rule's expression reads, normal and breached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Series {
    /// A value that is `normal` until the breach, then `breached` (`kube_job_failed`, `== 0`).
    Indicator { normal: f64, breached: f64 },
    /// A comparison of two series (`spec_replicas > available`): no sample unless breached,
    /// then the left-hand side's value.
    Gated(f64),
    /// `time() - start`: seconds since the Job started, while it runs (12 h at the breach).
    Age,
}

const KSM: &str = r#"job="kube-state-metrics", namespace=~".*""#;

pub fn rule(name: &'static str, ns: &str, service: &str) -> Rule {
    let r = |expr: String, for_secs, severity, summary, group, scrape_labels| Rule {
        name,
        expr,
        for_secs,
        severity,
        summary,
        group,
        scrape_labels,
        series: Series::Indicator {
            normal: 0.0,
            breached: 1.0,
        },
    };
    let mut rule = match name {
        "KubePodCrashLooping" => r(
            format!(
                r#"max_over_time(kube_pod_container_status_waiting_reason{{reason="CrashLoopBackOff", {KSM}}}[5m]) >= 1"#
            ),
            900,
            "warning",
            "Pod is crash looping.",
            "kubernetes-apps",
            true,
        ),
        "KubePodNotReady" => r(
            format!(
                r#"sum by (namespace, pod, cluster) (max by (namespace, pod, cluster) (kube_pod_status_phase{{{KSM}, phase=~"Pending|Unknown|Failed"}}) * on (namespace, pod, cluster) group_left (owner_kind) topk by (namespace, pod, cluster) (1, max by (namespace, pod, owner_kind, cluster) (kube_pod_owner{{owner_kind!="Job"}}))) > 0"#
            ),
            900,
            "warning",
            "Pod has been in a non-ready state for more than 15 minutes.",
            "kubernetes-apps",
            false,
        ),
        "KubeContainerWaiting" => r(
            format!(
                r#"sum by (namespace, pod, container, cluster) (kube_pod_container_status_waiting_reason{{{KSM}}}) > 0"#
            ),
            3600,
            "warning",
            "Pod container waiting longer than 1 hour",
            "kubernetes-apps",
            false,
        ),
        "KubeDeploymentReplicasMismatch" => r(
            format!(
                r#"(kube_deployment_spec_replicas{{{KSM}}} > kube_deployment_status_replicas_available{{{KSM}}}) and (changes(kube_deployment_status_replicas_updated{{{KSM}}}[10m]) == 0)"#
            ),
            900,
            "warning",
            "Deployment has not matched the expected number of replicas.",
            "kubernetes-apps",
            true,
        ),
        "KubeStatefulSetReplicasMismatch" => r(
            format!(
                r#"(kube_statefulset_status_replicas_ready{{{KSM}}} != kube_statefulset_status_replicas{{{KSM}}}) and (changes(kube_statefulset_status_replicas_updated{{{KSM}}}[10m]) == 0)"#
            ),
            900,
            "warning",
            "StatefulSet has not matched the expected number of replicas.",
            "kubernetes-apps",
            true,
        ),
        "KubeDaemonSetRolloutStuck" => r(
            format!(
                r#"((kube_daemonset_status_current_number_scheduled{{{KSM}}} != kube_daemonset_status_desired_number_scheduled{{{KSM}}}) or (kube_daemonset_status_number_misscheduled{{{KSM}}} != 0) or (kube_daemonset_status_updated_number_scheduled{{{KSM}}} != kube_daemonset_status_desired_number_scheduled{{{KSM}}}) or (kube_daemonset_status_number_available{{{KSM}}} != kube_daemonset_status_desired_number_scheduled{{{KSM}}})) and (changes(kube_daemonset_status_updated_number_scheduled{{{KSM}}}[5m]) == 0)"#
            ),
            900,
            "warning",
            "DaemonSet rollout is stuck.",
            "kubernetes-apps",
            true,
        ),
        "KubeJobFailed" => r(
            format!(r#"kube_job_failed{{{KSM}}} > 0"#),
            900,
            "warning",
            "Job failed to complete.",
            "kubernetes-apps",
            true,
        ),
        "KubeJobNotCompleted" => r(
            format!(
                r#"time() - max by (namespace, job_name, cluster) (kube_job_status_start_time{{{KSM}}} and kube_job_status_active{{{KSM}}} > 0) > 43200"#
            ),
            0,
            "warning",
            "Job did not complete in time",
            "kubernetes-apps",
            false,
        ),
        "KubeNodeNotReady" => r(
            r#"kube_node_status_condition{job="kube-state-metrics",condition="Ready",status="true"} == 0"#
                .to_string(),
            900,
            "warning",
            "Node is not ready.",
            "kubernetes-system-kubelet",
            true,
        ),
        "Watchdog" => r(
            "vector(1)".into(),
            0,
            "none",
            "An alert that should always be firing to certify that Alertmanager is working properly.",
            "general.rules",
            false,
        ),
        "HighErrorRate" => r(
            format!(
                r#"sum(rate(http_requests_total{{namespace="{ns}",service="{service}",code=~"5.."}}[5m])) / sum(rate(http_requests_total{{namespace="{ns}",service="{service}"}}[5m])) > 0.05"#
            ),
            300,
            "critical",
            "More than 5% of requests fail with a 5xx",
            "slo-errors",
            false,
        ),
        _ => r(
            format!(
                r#"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{namespace="{ns}",service="{service}"}}[5m]))) > 0.5"#
            ),
            600,
            "warning",
            "p99 request latency above 500ms",
            "slo-latency",
            false,
        ),
    };
    rule.series = match name {
        "KubeDeploymentReplicasMismatch"
        | "KubeStatefulSetReplicasMismatch"
        | "KubeDaemonSetRolloutStuck" => Series::Gated(3.0),
        "KubeJobNotCompleted" => Series::Age,
        "HighErrorRate" => Series::Indicator {
            normal: 0.002,
            breached: 0.21,
        },
        "KubeNodeNotReady" => Series::Indicator {
            normal: 1.0,
            breached: 0.0,
        },
        "Watchdog" => Series::Indicator {
            normal: 1.0,
            breached: 1.0,
        },
        _ => rule.series,
    };
    rule
}

/// How the alert's labels name things.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelStyle {
    /// The mixin's own labels.
    Mixin,
    /// Datadog's tags: `kube_namespace`, `kube_pod`, `kube_deployment`, ...
    Datadog,
    /// `workload_name` + `workload_type`.
    Workload,
    /// Only `namespace` and `pod`: the owner is found through ownerReferences.
    PodOnly,
}

/// What an alert is about.
#[derive(Clone, Debug, Default)]
pub struct Target {
    pub ns: String,
    pub kind: Option<Kind>,
    /// The controller (a bare pod's own name; a CronJob's name for a CronJob).
    pub workload: String,
    /// The Job a job alert names (a CronJob's latest run).
    pub job: String,
    /// The pod a pod-level alert names.
    pub pod: String,
    pub container: String,
    pub node: String,
}

fn scrape() -> [(&'static str, &'static str); 5] {
    [
        ("job", "kube-state-metrics"),
        ("service", "kube-prometheus-stack-kube-state-metrics"),
        ("endpoint", "http"),
        ("instance", "10.20.2.9:8080"),
        ("prometheus", "monitoring/kube-prometheus-stack-prometheus"),
    ]
}

/// The alert's labels (without `alertname`).
pub fn labels(rule: &Rule, t: &Target, style: LabelStyle) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        l.insert(k.to_string(), v.to_string());
    };
    put("severity", rule.severity);
    if rule.name == "Watchdog" {
        put("prometheus", "monitoring/kube-prometheus-stack-prometheus");
        return l;
    }
    let node_alert = rule.name == "KubeNodeNotReady";
    match style {
        LabelStyle::Mixin => {
            if rule.scrape_labels {
                for (k, v) in scrape() {
                    put(k, v);
                }
            }
            if !node_alert {
                put("namespace", &t.ns);
            }
            match rule.name {
                "KubePodCrashLooping" => {
                    put("pod", &t.pod);
                    put("container", &t.container);
                    put("reason", "CrashLoopBackOff");
                    put("uid", &super::k8s::uid(&format!("pod/{}/{}", t.ns, t.pod)));
                }
                "KubePodNotReady" => put("pod", &t.pod),
                "KubeContainerWaiting" => {
                    put("pod", &t.pod);
                    put("container", &t.container);
                }
                "KubeDeploymentReplicasMismatch" => put("deployment", &t.workload),
                "KubeStatefulSetReplicasMismatch" => put("statefulset", &t.workload),
                "KubeDaemonSetRolloutStuck" => put("daemonset", &t.workload),
                "KubeJobFailed" => {
                    put("job_name", &t.job);
                    put("condition", "true");
                }
                "KubeJobNotCompleted" => put("job_name", &t.job),
                "KubeNodeNotReady" => {
                    put("node", &t.node);
                    put("condition", "Ready");
                    put("status", "true");
                }
                _ => put("service", &t.workload),
            }
        }
        LabelStyle::Datadog => {
            put("kube_cluster_name", "prod-eu-west-1");
            if node_alert {
                put("host", &t.node);
                return l;
            }
            put("kube_namespace", &t.ns);
            if !t.pod.is_empty() && rule.name.contains("Pod") || rule.name == "KubeContainerWaiting"
            {
                put("kube_pod", &t.pod);
                put("kube_container_name", &t.container);
            }
            match t.kind {
                Some(Kind::Deployment) => put("kube_deployment", &t.workload),
                Some(Kind::StatefulSet) => put("kube_stateful_set", &t.workload),
                Some(Kind::DaemonSet) => put("kube_daemon_set", &t.workload),
                Some(Kind::Job) => put("kube_job", &t.job),
                Some(Kind::CronJob) => {
                    put("kube_cronjob", &t.workload);
                    put("kube_job", &t.job);
                }
                Some(Kind::Pod) => put("kube_pod", &t.pod),
                None => {}
            }
            if rule.group.starts_with("slo-") {
                put("kube_service", &t.workload);
            }
        }
        LabelStyle::Workload => {
            if node_alert {
                put("node", &t.node);
                return l;
            }
            put("namespace", &t.ns);
            let (name, kind) = match t.kind {
                Some(Kind::Job) => (t.job.as_str(), "job"),
                Some(Kind::Pod) => (t.pod.as_str(), "pod"),
                Some(k) => (t.workload.as_str(), k.name()),
                None => (t.workload.as_str(), ""),
            };
            put("workload_name", name);
            put("workload_type", kind);
        }
        LabelStyle::PodOnly => {
            if node_alert {
                put("node", &t.node);
                return l;
            }
            put("namespace", &t.ns);
            put("pod", &t.pod);
        }
    }
    l
}

/// The rule's description, rendered for the target.
pub fn description(rule: &Rule, t: &Target) -> String {
    let (ns, pod) = (&t.ns, &t.pod);
    match rule.name {
        "KubePodCrashLooping" => format!(
            "Pod {ns}/{pod} ({}) is in waiting state (reason: \"CrashLoopBackOff\") on cluster prod-eu-west-1.",
            t.container
        ),
        "KubePodNotReady" => format!(
            "Pod {ns}/{pod} has been in a non-ready state for longer than 15 minutes on cluster prod-eu-west-1."
        ),
        "KubeContainerWaiting" => format!(
            "pod/{pod} in namespace {ns} on container {} has been in waiting state for longer than 1 hour. on cluster prod-eu-west-1.",
            t.container
        ),
        "KubeDeploymentReplicasMismatch" => format!(
            "Deployment {ns}/{} has not matched the expected number of replicas for longer than 15 minutes on cluster prod-eu-west-1.",
            t.workload
        ),
        "KubeStatefulSetReplicasMismatch" => format!(
            "StatefulSet {ns}/{} has not matched the expected number of replicas for longer than 15 minutes on cluster prod-eu-west-1.",
            t.workload
        ),
        "KubeDaemonSetRolloutStuck" => format!(
            "DaemonSet {ns}/{} has not finished or progressed for at least 15m on cluster prod-eu-west-1.",
            t.workload
        ),
        "KubeJobFailed" => format!(
            "Job {ns}/{} failed to complete. Removing failed job after investigation should clear this alert on cluster prod-eu-west-1.",
            t.job
        ),
        "KubeJobNotCompleted" => format!(
            "Job {ns}/{} is taking more than 12h 0m 0s to complete on cluster prod-eu-west-1.",
            t.job
        ),
        "KubeNodeNotReady" => format!(
            "{} has been unready for more than 15 minutes on cluster prod-eu-west-1.",
            t.node
        ),
        "Watchdog" => "This is an alert meant to ensure that the entire alerting pipeline is functional.\nThis alert is always firing, therefore it should always be firing in Alertmanager\nand always fire against a receiver. There are integrations with various notification\nmechanisms that send a notification when this alert is not firing. For example the\n\"DeadMansSnitch\" integration in PagerDuty.\n".into(),
        "HighErrorRate" => format!(
            "More than 5% of the requests to {ns}/{} fail with a 5xx status.",
            t.workload
        ),
        _ => format!(
            "The 99th percentile of request latency of {ns}/{} is above 500ms.",
            t.workload
        ),
    }
}

pub fn annotations(rule: &Rule, t: &Target) -> BTreeMap<String, String> {
    let mut a = BTreeMap::new();
    a.insert("summary".to_string(), rule.summary.to_string());
    a.insert("description".to_string(), description(rule, t));
    let runbook = if rule.name == "Watchdog" {
        "https://runbooks.prometheus-operator.dev/runbooks/general/watchdog".to_string()
    } else if let Some(slo) = rule.group.strip_prefix("slo-") {
        format!("https://runbooks.example.com/slo/{slo}")
    } else {
        format!(
            "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/{}",
            rule.name.to_lowercase()
        )
    };
    a.insert("runbook_url".to_string(), runbook);
    a
}

/// `quote_plus`: what Prometheus' UI puts in `g0.expr`.
pub fn quote_plus(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The Alertmanager webhook (version 4) for one firing alert.
pub fn webhook(
    rule: &Rule,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    starts: DateTime<Utc>,
) -> Value {
    let mut full = labels.clone();
    full.insert("alertname".into(), rule.name.into());
    let generator = format!(
        "http://prometheus.monitoring.svc:9090/graph?g0.expr={}&g0.tab=1",
        quote_plus(&rule.expr)
    );
    let fp = format!("{:016x}", hash(&format!("{full:?}")));
    json!({
        "version": "4", "groupKey": format!("{{}}:{{alertname=\"{}\"}}", rule.name),
        "truncatedAlerts": 0, "status": "firing", "receiver": "sitrep",
        "groupLabels": {"alertname": rule.name}, "commonLabels": full, "commonAnnotations": annotations,
        "externalURL": "http://alertmanager.monitoring.svc:9093",
        "alerts": [{
            "status": "firing", "labels": full, "annotations": annotations,
            "startsAt": ts(starts), "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": generator, "fingerprint": fp,
        }],
    })
}

/// `/api/v1/rules` with the alert's rule in its group, `state` firing or inactive.
pub fn rules_body(
    rule: &Rule,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    active: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Value {
    let mut full = labels.clone();
    full.insert("alertname".into(), rule.name.into());
    let alerts: Vec<Value> = active
        .map(|at| {
            vec![
                json!({"labels": full, "annotations": annotations, "state": "firing",
                        "activeAt": ts(at), "value": "1e+00"}),
            ]
        })
        .unwrap_or_default();
    let eval = ts(now - Duration::seconds(12));
    json!({"status": "success", "data": {"groups": [{
        "name": rule.group,
        "file": format!("/etc/prometheus/rules/prometheus-kube-prometheus-stack-prometheus-rulefiles-0/monitoring-kube-prometheus-stack-{}.yaml", rule.group.replace('.', "-")),
        "interval": 30, "limit": 0,
        "rules": [{
            "state": if active.is_some() { "firing" } else { "inactive" },
            "name": rule.name, "query": rule.expr, "duration": rule.for_secs, "keepFiringFor": 0,
            "labels": {"severity": rule.severity},
            "annotations": {"summary": rule.summary},
            "alerts": alerts, "health": "ok", "evaluationTime": 0.0017,
            "lastEvaluation": eval, "type": "alerting",
        }],
        "evaluationTime": 0.0021, "lastEvaluation": eval,
    }]}})
}

/// `/api/v1/alerts`: the rule's alert when it is active.
pub fn alerts_body(
    rule: &Rule,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    active: Option<DateTime<Utc>>,
) -> Value {
    let mut full = labels.clone();
    full.insert("alertname".into(), rule.name.into());
    let alerts: Vec<Value> = active
        .map(|at| {
            vec![
                json!({"labels": full, "annotations": annotations, "state": "firing",
                        "activeAt": ts(at), "value": "1e+00"}),
            ]
        })
        .unwrap_or_default();
    json!({"status": "success", "data": {"alerts": alerts}})
}

/// When the alert's condition held over the last six hours.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Since this moment, still now.
    Since(DateTime<Utc>),
    /// For `secs` from this moment only.
    Window(DateTime<Utc>, i64),
    Always,
}

/// A `query_range` matrix for the rule's expression: one series with `labels`, every 120 s over
/// the six hours before `now`, as the expression reads normal and breached.
pub fn matrix(
    rule: &Rule,
    labels: &BTreeMap<String, String>,
    shape: Shape,
    now: DateTime<Utc>,
) -> Value {
    let step = 120;
    let mut values = Vec::new();
    let mut t = now - Duration::hours(6);
    while t <= now {
        let breached = match shape {
            Shape::Since(at) => t >= at,
            Shape::Window(at, secs) => t >= at && t < at + Duration::seconds(secs.max(step)),
            Shape::Always => true,
        };
        let v = match (rule.series, shape) {
            (
                Series::Indicator {
                    normal,
                    breached: b,
                },
                _,
            ) => Some(if breached { b } else { normal }),
            (Series::Gated(v), _) => breached.then_some(v),
            (Series::Age, Shape::Since(at)) => {
                let start = at - Duration::hours(12);
                (t >= start).then(|| (t - start).num_seconds() as f64)
            }
            (Series::Age, _) => None,
        };
        if let Some(v) = v {
            values.push(json!([t.timestamp() as f64, format!("{v}")]));
        }
        t += Duration::seconds(step);
    }
    let result = if values.is_empty() {
        json!([])
    } else {
        json!([{"metric": labels, "values": values}])
    };
    json!({"status": "success", "data": {"resultType": "matrix", "result": result}})
}
