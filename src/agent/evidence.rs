//! Evidence builders: turn typed facts from a tool call into the display form the console shows.

use super::tools::{Params, ToolOutput, p_str};
use crate::model::{
    AlertInfo, Change, DeploymentFacts, EvidenceBody, K8sEventFacts, LogLine, Marker, NodeFacts,
    PgFact, PodFacts, RuleInfo, Series, WorkloadFacts,
};
use chrono::{DateTime, Utc};

/// Most log lines kept in one evidence item; the tail is what matters in an incident.
const MAX_LOG_LINES: usize = 400;

/// An evidence item before the journal gives it an id.
pub struct Draft {
    pub kind: String,
    pub title: String,
    pub body: EvidenceBody,
}

/// The evidence kind of the alert that started the investigation: what the alert itself says
/// (its status, when it started and ended) is evidence a finding can cite.
pub const TRIGGER_KIND: &str = "alert";

/// The triggering alert as an evidence item: status, times, labels and annotations.
pub fn trigger(alert: &crate::model::Alert) -> Draft {
    let time = |t: Option<DateTime<Utc>>| {
        t.filter(|t| t.timestamp() > 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_else(|| "-".into())
    };
    let status = serde_json::to_value(alert.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut rows = vec![
        vec!["status".to_string(), status],
        vec!["starts_at".to_string(), time(alert.starts_at)],
        vec!["ends_at".to_string(), time(alert.ends_at)],
    ];
    rows.extend(
        alert
            .labels
            .iter()
            .map(|(k, v)| vec![format!("label {k}"), v.clone()]),
    );
    rows.extend(
        alert
            .annotations
            .iter()
            .map(|(k, v)| vec![format!("annotation {k}"), v.clone()]),
    );
    Draft {
        kind: TRIGGER_KIND.to_string(),
        title: format!("Alert {}", alert.name()),
        body: EvidenceBody::Table {
            columns: vec!["field".into(), "value".into()],
            rows,
        },
    }
}

/// Chart decorations for metrics evidence.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub threshold: Option<f64>,
    pub markers: Vec<Marker>,
}

/// The evidence kind a tool's output belongs to.
pub fn kind_of(tool: &str, output: &ToolOutput) -> &'static str {
    match output {
        ToolOutput::Pods(_) => "kubernetes/pods",
        ToolOutput::Events(_) => "kubernetes/events",
        ToolOutput::Deployments(_) if is_revisions(tool) => "kubernetes/revisions",
        ToolOutput::Deployments(_) => "kubernetes/deployments",
        ToolOutput::Nodes(_) => "kubernetes/nodes",
        ToolOutput::Services(_) => "kubernetes/services",
        ToolOutput::Ingresses(_) => "kubernetes/ingresses",
        ToolOutput::Workloads(_) => "kubernetes/workloads",
        ToolOutput::Logs(_) if tool.starts_with("kubernetes.") => "kubernetes/pod_logs",
        ToolOutput::Logs(_) => "logs",
        ToolOutput::Series(_) => "metrics",
        ToolOutput::Rules(_) => "alert_rules",
        ToolOutput::Alerts(_) => "alerts",
        ToolOutput::Changes(_) => "changes",
        ToolOutput::Text(_) => "mcp",
        // Only a session written by a newer build holds these; no tool returns them.
        ToolOutput::Other => "other",
        ToolOutput::Cloud(_) => super::cloud::kind_of(tool),
        ToolOutput::Postgres(_) => match tool {
            "postgres.connections" => "postgres/connections",
            "postgres.locks" => "postgres/locks",
            "postgres.statements" => "postgres/statements",
            "postgres.replication" => "postgres/replication",
            "postgres.databases" => "postgres/databases",
            _ => "postgres/activity",
        },
    }
}

/// Build the evidence for one successful tool call.
pub fn build(tool: &str, params: &Params, output: &ToolOutput, chart: &Chart) -> Draft {
    let mut scope = p_str(params, "namespace")
        .map(|ns| format!(" in {ns}"))
        .unwrap_or_default();
    // With several clusters, every Kubernetes title names the one it came from.
    let on = p_str(params, "cluster")
        .filter(|_| tool.starts_with("kubernetes."))
        .map(|c| format!(" on {c}"))
        .unwrap_or_default();
    scope.push_str(&on);
    let kind = kind_of(tool, output).to_string();
    let (title, body) = match output {
        ToolOutput::Pods(v) => (format!("Pods{scope}"), pods_table(v)),
        ToolOutput::Events(v) => (format!("Events{scope}"), events_table(v)),
        ToolOutput::Deployments(v) if tool.ends_with("replica_sets") => {
            (format!("ReplicaSets{scope}"), deployments_table(v))
        }
        ToolOutput::Deployments(v) if is_revisions(tool) => {
            (format!("ControllerRevisions{scope}"), revisions_table(v))
        }
        ToolOutput::Deployments(v) => (format!("Deployments{scope}"), deployments_table(v)),
        ToolOutput::Nodes(v) => (format!("Nodes{on}"), nodes_table(v)),
        ToolOutput::Services(v) => (format!("Services and Endpoints{scope}"), services_table(v)),
        ToolOutput::Ingresses(v) => (format!("Ingresses{scope}"), ingresses_table(v)),
        ToolOutput::Workloads(v) => {
            let what = match tool {
                "kubernetes.statefulsets" => "StatefulSets",
                "kubernetes.daemonsets" => "DaemonSets",
                "kubernetes.jobs" => "Jobs",
                "kubernetes.cronjobs" => "CronJobs",
                _ => "Workloads",
            };
            (format!("{what}{scope}"), workloads_table(v))
        }
        ToolOutput::Logs(v) => {
            let title = match (p_str(params, "pod"), p_str(params, "query")) {
                (Some(pod), _) => {
                    let prev = if super::tools::p_bool(params, "previous") == Some(true) {
                        " (previous run)"
                    } else {
                        ""
                    };
                    format!("Logs of {pod}{prev}{on}")
                }
                (None, Some(q)) => format!("Logs: {q}"),
                _ => "Logs".to_string(),
            };
            (title, logs_text(v))
        }
        ToolOutput::Series(v) if tool == "prometheus.series" => (
            format!("Series matching {}", p_str(params, "match").unwrap_or("")),
            discovered_table(v),
        ),
        ToolOutput::Series(v) if tool == "prometheus.metadata" => {
            ("Metric metadata".to_string(), discovered_table(v))
        }
        ToolOutput::Changes(v) if tool == "kubernetes.config_maps" => {
            (format!("ConfigMaps{scope}, last written"), changes_table(v))
        }
        ToolOutput::Changes(v) if tool == "kubernetes.secrets" => (
            format!("Secrets{scope}, last written (metadata only)"),
            changes_table(v),
        ),
        ToolOutput::Series(v) => {
            let title = p_str(params, "query")
                .map(|q| format!("Metric: {q}"))
                .unwrap_or_else(|| "Metrics".to_string());
            (title, series_body(v, chart))
        }
        ToolOutput::Rules(v) => ("Alert rules".to_string(), rules_table(v)),
        ToolOutput::Alerts(v) => ("Active alerts".to_string(), alerts_table(v)),
        ToolOutput::Changes(v) => (format!("Recent changes{scope}"), changes_table(v)),
        ToolOutput::Text(t) => (tool.to_string(), external_text(t)),
        ToolOutput::Other => (
            tool.to_string(),
            EvidenceBody::Text {
                language: "text".into(),
                text: "facts of a kind this build does not read".into(),
            },
        ),
        ToolOutput::Postgres(v) => postgres_evidence(tool, v),
        ToolOutput::Cloud(v) => super::cloud::evidence(tool, params, v),
    };
    // Whatever the shape of a Kubernetes answer, its title says which cluster gave it.
    let title = if on.is_empty() || title.ends_with(&on) || title.contains(&format!("{on},")) {
        title
    } else {
        format!("{title}{on}")
    };
    Draft { kind, title, body }
}

/// Text an external tool returned, kept to a size the evidence pane and the session can carry.
fn external_text(t: &str) -> EvidenceBody {
    const MAX: usize = 64 * 1024;
    let total = t.chars().count();
    let mut text: String = t.chars().take(MAX).collect();
    if total > MAX {
        text.push_str(&format!("\n[truncated: {MAX} of {total} characters kept]"));
    }
    let language = if serde_json::from_str::<serde_json::Value>(t).is_ok() {
        "json"
    } else {
        "text"
    };
    EvidenceBody::Text {
        language: language.into(),
        text,
    }
}

/// Discovered series or metadata: names and label sets, no samples.
fn discovered_table(v: &[Series]) -> EvidenceBody {
    let rows = v
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]
        })
        .collect();
    table(&["metric", "labels"], rows)
}

fn when(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn table(columns: &[&str], rows: Vec<Vec<String>>) -> EvidenceBody {
    EvidenceBody::Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

/// Most rows one table keeps: a namespace of thousands of pods is read whole (the analysis sees
/// every one), but shown as the rows that matter.
pub const MAX_TABLE_ROWS: usize = 200;

/// Keeps at most [`MAX_TABLE_ROWS`] rows: every notable one first (as many as fit), then the
/// others, in their order; what is left out is counted in a last row ("… and N more pods, all
/// Running and Ready"), never dropped silently.
fn capped(columns: &[&str], rows: Vec<(bool, Vec<String>)>, more: &str) -> EvidenceBody {
    if rows.len() <= MAX_TABLE_ROWS {
        return table(columns, rows.into_iter().map(|(_, r)| r).collect());
    }
    let notable = rows.iter().filter(|(n, _)| *n).count();
    let mut room_for_others = MAX_TABLE_ROWS.saturating_sub(notable);
    let mut room_for_notable = MAX_TABLE_ROWS.min(notable);
    let (mut left_notable, mut left_others) = (0usize, 0usize);
    let mut kept = Vec::with_capacity(MAX_TABLE_ROWS + 1);
    for (n, row) in rows {
        let room = if n {
            &mut room_for_notable
        } else {
            &mut room_for_others
        };
        if *room > 0 {
            *room -= 1;
            kept.push(row);
        } else if n {
            left_notable += 1;
        } else {
            left_others += 1;
        }
    }
    let left = left_notable + left_others;
    let mut last = vec![String::new(); columns.len().max(1)];
    last[0] = if left_notable == 0 {
        format!("… and {left} more {more}")
    } else {
        format!("… and {left} more ({left_notable} of them not shown although notable)")
    };
    kept.push(last);
    table(columns, kept)
}

pub fn pods_table(pods: &[PodFacts]) -> EvidenceBody {
    let rows = pods
        .iter()
        .map(|p| {
            let ready = p.containers.iter().filter(|c| c.ready).count();
            let status = p
                .containers
                .iter()
                .find_map(|c| c.reason.clone())
                .unwrap_or_else(|| p.phase.clone());
            let last = p
                .containers
                .iter()
                .find_map(|c| {
                    c.last_reason.as_ref().map(|r| match c.last_exit_code {
                        Some(code) => format!("{r} (exit {code})"),
                        None => r.clone(),
                    })
                })
                .unwrap_or_default();
            let limits = p
                .containers
                .iter()
                .filter_map(|c| c.memory_limit.clone())
                .collect::<Vec<_>>()
                .join(",");
            let notable = ready < p.containers.len()
                || !matches!(status.as_str(), "Running" | "Succeeded")
                || p.restarts() > 0
                || !last.is_empty();
            let row = vec![
                p.namespace.clone(),
                p.name.clone(),
                format!("{ready}/{}", p.containers.len()),
                status,
                p.restarts().to_string(),
                last,
                limits,
                p.node.clone().unwrap_or_default(),
            ];
            (notable, row)
        })
        .collect();
    capped(
        &[
            "namespace",
            "pod",
            "ready",
            "status",
            "restarts",
            "last termination",
            "memory limit",
            "node",
        ],
        rows,
        "pods, all running, ready and never restarted",
    )
}

pub fn events_table(events: &[K8sEventFacts]) -> EvidenceBody {
    let mut events: Vec<&K8sEventFacts> = events.iter().collect();
    events.sort_by_key(|e| std::cmp::Reverse(e.last_seen.or(e.first_seen)));
    let rows = events
        .iter()
        .map(|e| {
            let row = vec![
                when(e.last_seen.or(e.first_seen)),
                e.event_type.clone(),
                e.reason.clone(),
                e.object.clone(),
                e.count.to_string(),
                e.message.clone(),
            ];
            (e.event_type != "Normal", row)
        })
        .collect();
    capped(
        &["last seen", "type", "reason", "object", "count", "message"],
        rows,
        "events, all Normal",
    )
}

pub fn deployments_table(deps: &[DeploymentFacts]) -> EvidenceBody {
    let rows = deps
        .iter()
        .map(|d| {
            let bad: Vec<String> = d
                .conditions
                .iter()
                .filter(|(k, (status, _, _))| {
                    (k.as_str() == "Available" && status != "True")
                        || (k.as_str() == "Progressing" && status == "False")
                        || (k.as_str() == "ReplicaFailure" && status == "True")
                })
                .map(|(k, (_, reason, _))| format!("{k}: {reason}"))
                .collect();
            let notable = d.ready_replicas != d.replicas || !bad.is_empty();
            let row = vec![
                d.namespace.clone(),
                d.name.clone(),
                format!("{}/{}", d.ready_replicas, d.replicas),
                d.updated_replicas.to_string(),
                d.revision.clone().unwrap_or_default(),
                d.images.join(", "),
                bad.join("; "),
                when(d.created_at),
            ];
            (notable, row)
        })
        .collect();
    capped(
        &[
            "namespace",
            "name",
            "ready",
            "up-to-date",
            "revision",
            "images",
            "conditions",
            "created",
        ],
        rows,
        "of this kind, all ready with no failing condition",
    )
}

/// Whether a tool's Deployment-shaped facts are ControllerRevisions (StatefulSet and DaemonSet
/// rollout history) rather than Deployments or ReplicaSets.
pub fn is_revisions(tool: &str) -> bool {
    tool.ends_with("controller_revisions")
}

/// ControllerRevisions, newest first: which workload each belongs to, its revision, when it was
/// made and the images its template runs. A revision has no replicas of its own to be ready.
pub fn revisions_table(v: &[DeploymentFacts]) -> EvidenceBody {
    let mut sorted: Vec<&DeploymentFacts> = v.iter().collect();
    sorted.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    let rows = sorted
        .into_iter()
        .map(|r| {
            let row = vec![
                r.namespace.clone(),
                r.owner.clone().unwrap_or_default(),
                r.name.clone(),
                r.revision.clone().unwrap_or_default(),
                r.images.join(", "),
                r.config_refs.join(", "),
                when(r.created_at),
            ];
            (false, row)
        })
        .collect();
    capped(
        &[
            "namespace",
            "owner",
            "name",
            "revision",
            "images",
            "config",
            "created",
        ],
        rows,
        "older revisions",
    )
}

/// StatefulSets, DaemonSets, Jobs and CronJobs, one row each: how many pods are ready of how
/// many wanted (a Job's completions), what is off (revisions apart, pods unavailable or
/// misscheduled, failures against the backoff limit, a suspended or late CronJob) and the
/// conditions that say why.
pub fn workloads_table(v: &[WorkloadFacts]) -> EvidenceBody {
    let rows = v
        .iter()
        .map(|w| {
            let mut status: Vec<String> = Vec::new();
            let ready = match w.kind.as_str() {
                "Job" => format!("{}/{}", w.succeeded, w.desired),
                "CronJob" => String::new(),
                _ => format!("{}/{}", w.ready, w.desired),
            };
            match w.kind.as_str() {
                "StatefulSet" => {
                    if w.updated < w.desired {
                        status.push(format!("updated {}", w.updated));
                    }
                    if let (Some(cur), Some(upd)) = (&w.current_revision, &w.update_revision)
                        && cur != upd
                    {
                        status.push(format!("revision {cur} -> {upd}"));
                    }
                }
                "DaemonSet" => {
                    if w.updated < w.desired {
                        status.push(format!("updated {}", w.updated));
                    }
                    if w.unavailable > 0 {
                        status.push(format!("unavailable {}", w.unavailable));
                    }
                    if w.misscheduled > 0 {
                        status.push(format!("misscheduled {}", w.misscheduled));
                    }
                }
                "Job" => {
                    if w.active > 0 {
                        status.push(format!("active {}", w.active));
                    }
                    if w.failed > 0 {
                        status.push(match w.backoff_limit {
                            Some(limit) => format!("failed {} (backoff limit {limit})", w.failed),
                            None => format!("failed {}", w.failed),
                        });
                    }
                    if w.suspend {
                        status.push("suspended".into());
                    }
                }
                "CronJob" => {
                    if let Some(s) = &w.schedule {
                        status.push(format!("schedule {s}"));
                    }
                    if w.suspend {
                        status.push("suspended".into());
                    }
                    if w.last_schedule.is_some() {
                        status.push(format!("last run {}", when(w.last_schedule)));
                    }
                    status.push(match w.last_success {
                        Some(_) => format!("last success {}", when(w.last_success)),
                        None => "never succeeded".into(),
                    });
                    if !w.active_jobs.is_empty() {
                        status.push(format!("running {}", w.active_jobs.join(", ")));
                    }
                }
                _ => {}
            }
            if w.unavailable > 0 && w.kind == "StatefulSet" {
                status.push(format!("unavailable {}", w.unavailable));
            }
            // A Job's Complete/Failed are news when true; other kinds' conditions when not.
            let conditions: Vec<String> = w
                .conditions
                .iter()
                .filter(|(k, (st, _, _))| {
                    if w.kind == "Job" {
                        st == "True" && matches!(k.as_str(), "Complete" | "Failed" | "Suspended")
                    } else {
                        (st != "True") != (k.as_str() == "ReplicaFailure")
                    }
                })
                .map(|(k, (_, reason, _))| {
                    if reason.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}: {reason}")
                    }
                })
                .collect();
            vec![
                w.namespace.clone(),
                w.kind.clone(),
                w.name.clone(),
                ready,
                status.join(", "),
                conditions.join("; "),
                w.images.join(", "),
                when(w.created_at),
            ]
        })
        .collect();
    table(
        &[
            "namespace",
            "kind",
            "name",
            "ready",
            "status",
            "conditions",
            "images",
            "created",
        ],
        rows,
    )
}

pub fn nodes_table(nodes: &[NodeFacts]) -> EvidenceBody {
    let rows = nodes
        .iter()
        .map(|n| {
            let pressure: Vec<&str> = n
                .conditions
                .iter()
                .filter(|(k, v)| k.as_str() != "Ready" && v.as_str() == "True")
                .map(|(k, _)| k.as_str())
                .collect();
            let ready = n.conditions.get("Ready").cloned().unwrap_or_default();
            let message = n
                .condition_messages
                .get("Ready")
                .cloned()
                .unwrap_or_default();
            let notable =
                ready != "True" || !pressure.is_empty() || n.unschedulable || !n.taints.is_empty();
            let row = vec![
                n.name.clone(),
                if ready == "True" {
                    "Ready".to_string()
                } else {
                    format!("NotReady ({ready})")
                },
                pressure.join(", "),
                if n.unschedulable { "yes" } else { "" }.to_string(),
                n.taints.join(", "),
                message,
            ];
            (notable, row)
        })
        .collect();
    capped(
        &[
            "node", "status", "pressure", "cordoned", "taints", "message",
        ],
        rows,
        "nodes, all Ready, schedulable, untainted and under no pressure",
    )
}

pub fn services_table(services: &[crate::model::ServiceFacts]) -> EvidenceBody {
    let rows = services
        .iter()
        .map(|s| {
            let selector: Vec<String> =
                s.selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let ports: Vec<String> = s.ports.iter().map(|(p, t)| format!("{p}->{t}")).collect();
            let backed = if s.missing {
                "does not exist".to_string()
            } else if !s.endpoints_read {
                "endpoints not read".to_string()
            } else {
                format!("{} ready, {} not ready", s.ready.len(), s.not_ready.len())
            };
            let routes: Vec<String> = s
                .routes
                .iter()
                .map(|r| format!("{} {} -> {}", r.ingress, r.rule, r.port))
                .collect();
            vec![
                format!("{}/{}", s.namespace, s.name),
                selector.join(","),
                ports.join(", "),
                backed,
                s.ready
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                routes.join("; "),
                if s.denied_by.is_empty() {
                    String::new()
                } else {
                    format!("no ingress: {}", s.denied_by.join(", "))
                },
            ]
        })
        .collect();
    table(
        &[
            "service",
            "selector",
            "ports",
            "endpoints",
            "ready pods",
            "ingress routes",
            "network policy",
        ],
        rows,
    )
}

/// Each Ingress (its class, hosts, rules to `service:port`, TLS secrets, addresses), then the
/// cluster's IngressClasses, one row each.
pub fn ingresses_table(list: &crate::model::IngressList) -> EvidenceBody {
    let mut rows: Vec<Vec<String>> = list
        .ingresses
        .iter()
        .map(|i| {
            let rules: Vec<String> = i
                .backends()
                .iter()
                .map(|(rule, b)| format!("{rule} -> {}:{}", b.service, b.port))
                .collect();
            let tls: Vec<String> = i
                .tls
                .iter()
                .map(|t| {
                    let secret = if t.secret_name.is_empty() {
                        "(no secret)"
                    } else {
                        t.secret_name.as_str()
                    };
                    format!("{secret} for {}", t.hosts.join(","))
                })
                .collect();
            vec![
                format!("Ingress {}/{}", i.namespace, i.name),
                i.class.clone().unwrap_or_else(|| "(none named)".into()),
                i.hosts.join(", "),
                rules.join("; "),
                tls.join("; "),
                if i.addresses.is_empty() {
                    "none".to_string()
                } else {
                    i.addresses.join(", ")
                },
            ]
        })
        .collect();
    match &list.classes {
        Some(classes) => rows.extend(classes.iter().map(|c| {
            vec![
                format!("IngressClass {}", c.name),
                if c.is_default {
                    format!("{} (default)", c.controller)
                } else {
                    c.controller.clone()
                },
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]
        })),
        None => rows.push(vec![
            "IngressClasses".into(),
            "could not be read".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]),
    }
    table(
        &[
            "object",
            "class or controller",
            "hosts",
            "rules",
            "tls",
            "address",
        ],
        rows,
    )
}

pub fn logs_text(lines: &[LogLine]) -> EvidenceBody {
    let skip = lines.len().saturating_sub(MAX_LOG_LINES);
    let text = lines[skip..]
        .iter()
        .map(|l| {
            let source = l
                .labels
                .get("pod")
                .or_else(|| l.labels.get("app"))
                .map(|p| format!("[{p}] "))
                .unwrap_or_default();
            match l.at {
                // Pod log lines often carry their own timestamp already.
                Some(at) if !l.line.starts_with(&at.format("%Y-%m-%d").to_string()) => {
                    format!("{} {source}{}", at.format("%Y-%m-%dT%H:%M:%SZ"), l.line)
                }
                _ => format!("{source}{}", l.line),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    EvidenceBody::Text {
        language: "log".to_string(),
        text,
    }
}

pub fn series_body(series: &[Series], chart: &Chart) -> EvidenceBody {
    EvidenceBody::TimeSeries {
        series: series.to_vec(),
        threshold: chart.threshold,
        unit: None,
        markers: chart.markers.clone(),
    }
}

pub fn rules_table(rules: &[RuleInfo]) -> EvidenceBody {
    let rows = rules
        .iter()
        .map(|r| {
            vec![
                r.group.clone(),
                r.name.clone(),
                r.rule_type.clone(),
                r.state.clone().unwrap_or_default(),
                r.duration_secs.map(|d| format!("{d}s")).unwrap_or_default(),
                r.query.clone(),
            ]
        })
        .collect();
    table(&["group", "rule", "type", "state", "for", "query"], rows)
}

pub fn alerts_table(alerts: &[AlertInfo]) -> EvidenceBody {
    let rows = alerts
        .iter()
        .map(|a| {
            vec![
                a.name.clone(),
                a.state.clone(),
                when(a.active_at),
                a.value.clone().unwrap_or_default(),
                a.labels
                    .iter()
                    .filter(|(k, _)| k.as_str() != "alertname")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ]
        })
        .collect();
    table(&["alert", "state", "active since", "value", "labels"], rows)
}

pub fn changes_table(changes: &[Change]) -> EvidenceBody {
    let mut changes: Vec<&Change> = changes.iter().collect();
    changes.sort_by_key(|c| std::cmp::Reverse(c.at));
    let rows = changes
        .iter()
        .map(|c| {
            vec![
                when(c.at),
                format!("{:?}", c.kind).to_lowercase(),
                c.id.clone(),
                c.title.clone(),
                c.author.clone().unwrap_or_default(),
                c.target.clone(),
            ]
        })
        .collect();
    table(&["when", "kind", "id", "title", "author", "target"], rows)
}

fn secs(v: Option<f64>) -> String {
    v.map(crate::model::human_duration).unwrap_or_default()
}

/// A table per kind of PostgreSQL rows.
pub fn postgres_evidence(tool: &str, facts: &[PgFact]) -> (String, EvidenceBody) {
    let mut backends = Vec::new();
    let mut conns = Vec::new();
    let mut stmts = Vec::new();
    let mut replicas = Vec::new();
    let mut dbs = Vec::new();
    for f in facts {
        match f {
            PgFact::Backend(b) => backends.push(vec![
                b.pid.to_string(),
                b.application_name.clone(),
                b.usename.clone(),
                b.state.clone(),
                secs(b.xact_age_secs),
                secs(b.state_age_secs),
                b.waiting_mode.clone().unwrap_or_else(|| {
                    b.wait_event_type
                        .iter()
                        .chain(b.wait_event.iter())
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(":")
                }),
                b.blocked_by
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                b.relation.clone().unwrap_or_default(),
                b.query.clone(),
            ]),
            PgFact::Connections(c) => conns.push(vec![
                c.application_name.clone(),
                c.usename.clone(),
                c.count.to_string(),
                c.active.to_string(),
                c.idle.to_string(),
                c.idle_in_transaction.to_string(),
                format!("{}/{}", c.total, c.max_connections),
            ]),
            PgFact::Statement(s) => stmts.push(vec![
                format!("{:.0}", s.total_ms),
                s.calls.to_string(),
                format!("{:.1}", s.mean_ms),
                s.rows.to_string(),
                s.query.clone(),
            ]),
            PgFact::Replica(r) => replicas.push(vec![
                r.role.clone(),
                r.application_name.clone(),
                r.client_addr.clone().unwrap_or_default(),
                r.state.clone(),
                secs(r.replay_lag_secs),
                r.lag_bytes.map(|b| format!("{b:.0}")).unwrap_or_default(),
            ]),
            PgFact::Database(d) => dbs.push(vec![
                d.name.clone(),
                format!("{:.1} MiB", d.size_bytes / (1024.0 * 1024.0)),
                d.xid_age.to_string(),
                d.freeze_max_age.to_string(),
                d.backends.to_string(),
            ]),
            PgFact::Other => {}
        }
    }
    match tool {
        "postgres.connections" => (
            "PostgreSQL connections by application".into(),
            table(
                &[
                    "application",
                    "user",
                    "connections",
                    "active",
                    "idle",
                    "idle in tx",
                    "server total/max",
                ],
                conns,
            ),
        ),
        "postgres.statements" => (
            "PostgreSQL top statements (pg_stat_statements)".into(),
            table(&["total ms", "calls", "mean ms", "rows", "query"], stmts),
        ),
        "postgres.replication" => (
            "PostgreSQL replication".into(),
            table(
                &[
                    "role",
                    "standby",
                    "address",
                    "state",
                    "replay lag",
                    "lag bytes",
                ],
                replicas,
            ),
        ),
        "postgres.databases" => (
            "PostgreSQL databases".into(),
            table(
                &["database", "size", "xid age", "freeze max age", "backends"],
                dbs,
            ),
        ),
        other => (
            match other {
                "postgres.locks" => "PostgreSQL blocking chains",
                "postgres.long_queries" => "PostgreSQL long-running queries",
                _ => "PostgreSQL sessions",
            }
            .into(),
            table(
                &[
                    "pid",
                    "application",
                    "user",
                    "state",
                    "in transaction",
                    "in state",
                    "waits for",
                    "blocked by",
                    "relation",
                    "query",
                ],
                backends,
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::{params, s};

    #[test]
    fn an_ingress_table_shows_rules_tls_addresses_and_the_classes() {
        use crate::model::{
            IngressBackendRef, IngressClassFacts, IngressFacts, IngressList, IngressRule,
            IngressTls,
        };
        let mut list = IngressList {
            ingresses: vec![IngressFacts {
                name: "shop".into(),
                namespace: "shop".into(),
                hosts: vec!["shop.example.com".into()],
                rules: vec![IngressRule {
                    host: Some("shop.example.com".into()),
                    path: "/".into(),
                    backend: IngressBackendRef {
                        service: "storefront".into(),
                        port: "http".into(),
                    },
                }],
                tls: vec![IngressTls {
                    hosts: vec!["shop.example.com".into()],
                    secret_name: "shop-tls".into(),
                }],
                ..IngressFacts::default()
            }],
            classes: Some(vec![IngressClassFacts {
                name: "nginx".into(),
                controller: "k8s.io/ingress-nginx".into(),
                is_default: true,
            }]),
        };
        let EvidenceBody::Table { rows, .. } = ingresses_table(&list) else {
            panic!("a table")
        };
        assert_eq!(
            rows[0],
            vec![
                "Ingress shop/shop",
                "(none named)",
                "shop.example.com",
                "shop.example.com/ -> storefront:http",
                "shop-tls for shop.example.com",
                "none",
            ]
        );
        assert_eq!(
            rows[1][..2],
            ["IngressClass nginx", "k8s.io/ingress-nginx (default)"]
        );
        // Classes that could not be read are said to be so, not left out.
        list.classes = None;
        let EvidenceBody::Table { rows, .. } = ingresses_table(&list) else {
            panic!("a table")
        };
        assert_eq!(rows[1][..2], ["IngressClasses", "could not be read"]);
        let draft = build(
            "kubernetes.ingresses",
            &params([("namespace", s("shop"))]),
            &ToolOutput::Ingresses(list),
            &Chart::default(),
        );
        assert_eq!(
            (draft.kind.as_str(), draft.title.as_str()),
            ("kubernetes/ingresses", "Ingresses in shop")
        );
    }

    #[test]
    fn big_pod_tables_keep_the_troubled_pods_and_count_the_rest() {
        let pod = |i: usize, phase: &str| PodFacts {
            name: format!("p{i}"),
            namespace: "shop".into(),
            phase: phase.into(),
            ..PodFacts::default()
        };
        let mut pods: Vec<PodFacts> = (0..1000).map(|i| pod(i, "Running")).collect();
        pods[700] = pod(700, "Pending");
        let EvidenceBody::Table { rows, .. } = pods_table(&pods) else {
            panic!("a table")
        };
        assert_eq!(rows.len(), MAX_TABLE_ROWS + 1);
        assert!(
            rows.iter().any(|r| r[1] == "p700"),
            "the pending pod is kept"
        );
        assert_eq!(rows[0][1], "p0", "the others in their order");
        let last = &rows[MAX_TABLE_ROWS][0];
        assert!(last.contains("and 800 more pods"), "{last}");
        // A small table is whole, with no count.
        let EvidenceBody::Table { rows, .. } = pods_table(&pods[..3]) else {
            panic!("a table")
        };
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn every_kubernetes_title_names_the_cluster_once() {
        let chart = Chart::default();
        let cases = [
            ("kubernetes.pods", ToolOutput::Pods(vec![])),
            ("kubernetes.events", ToolOutput::Events(vec![])),
            ("kubernetes.deployments", ToolOutput::Deployments(vec![])),
            ("kubernetes.replica_sets", ToolOutput::Deployments(vec![])),
            (
                "kubernetes.controller_revisions",
                ToolOutput::Deployments(vec![]),
            ),
            ("kubernetes.statefulsets", ToolOutput::Workloads(vec![])),
            ("kubernetes.nodes", ToolOutput::Nodes(vec![])),
            ("kubernetes.services", ToolOutput::Services(vec![])),
            (
                "kubernetes.ingresses",
                ToolOutput::Ingresses(crate::model::IngressList::default()),
            ),
            ("kubernetes.pod_logs", ToolOutput::Logs(vec![])),
            ("kubernetes.config_maps", ToolOutput::Changes(vec![])),
            ("kubernetes.secrets", ToolOutput::Changes(vec![])),
            // Outputs of shapes a listing's title does not expect (an MCP tool's text, series,
            // or nothing known) still name the cluster.
            ("kubernetes.daemonsets", ToolOutput::Series(vec![])),
            ("kubernetes.jobs", ToolOutput::Text("kind: Pod".into())),
            ("kubernetes.cronjobs", ToolOutput::Other),
        ];
        for (tool, out) in &cases {
            let p = params([
                ("namespace", s("shop")),
                ("pod", s("api-0")),
                ("cluster", s("prod-eu")),
            ]);
            let title = build(tool, &p, out, &chart).title;
            assert_eq!(title.matches("prod-eu").count(), 1, "{tool}: {title}");
            assert!(title.contains(" on prod-eu"), "{tool}: {title}");
            // With no cluster named, none is claimed.
            let p = params([("namespace", s("shop")), ("pod", s("api-0"))]);
            let title = build(tool, &p, out, &chart).title;
            assert!(!title.contains(" on "), "{tool}: {title}");
        }
        // Other integrations' titles are theirs: a cluster parameter there is not a Kubernetes one.
        let p = params([("query", s("up")), ("cluster", s("prod-eu"))]);
        let title = build(
            "prometheus.query_range",
            &p,
            &ToolOutput::Series(vec![]),
            &chart,
        )
        .title;
        assert!(!title.contains("prod-eu"), "{title}");
    }

    #[test]
    fn metrics_carry_threshold_and_markers() {
        let chart = Chart {
            threshold: Some(0.05),
            markers: vec![Marker {
                at: 100.0,
                label: "rollout_undo".into(),
            }],
        };
        let out = ToolOutput::Series(vec![Series {
            name: "errors".into(),
            labels: Default::default(),
            points: vec![(0.0, 0.1)],
        }]);
        let d = build(
            "prometheus.query_range",
            &params([("query", s("errors"))]),
            &out,
            &chart,
        );
        assert_eq!(d.kind, "metrics");
        match d.body {
            EvidenceBody::TimeSeries {
                threshold, markers, ..
            } => {
                assert_eq!(threshold, Some(0.05));
                assert_eq!(markers.len(), 1);
            }
            other => panic!("not a time series: {other:?}"),
        }
    }

    #[test]
    fn workloads_show_what_is_off_and_why() {
        let job = WorkloadFacts {
            kind: "Job".into(),
            name: "nightly-report-1".into(),
            namespace: "batch".into(),
            desired: 1,
            failed: 7,
            backoff_limit: Some(6),
            conditions: [(
                "Failed".to_string(),
                (
                    "True".to_string(),
                    "BackoffLimitExceeded".to_string(),
                    "Job has reached the specified backoff limit".to_string(),
                ),
            )]
            .into(),
            ..WorkloadFacts::default()
        };
        let ds = WorkloadFacts {
            kind: "DaemonSet".into(),
            name: "node-exporter".into(),
            desired: 5,
            ready: 3,
            updated: 5,
            unavailable: 2,
            misscheduled: 1,
            ..WorkloadFacts::default()
        };
        let d = build(
            "kubernetes.jobs",
            &params([("namespace", s("batch"))]),
            &ToolOutput::Workloads(vec![job, ds]),
            &Chart::default(),
        );
        assert_eq!(d.kind, "kubernetes/workloads");
        assert_eq!(d.title, "Jobs in batch");
        let EvidenceBody::Table { rows, .. } = d.body else {
            panic!("not a table");
        };
        assert_eq!(rows[0][3], "0/1");
        assert_eq!(rows[0][4], "failed 7 (backoff limit 6)");
        assert_eq!(rows[0][5], "Failed: BackoffLimitExceeded");
        assert_eq!(rows[1][3], "3/5");
        assert_eq!(rows[1][4], "unavailable 2, misscheduled 1");
    }

    #[test]
    fn pod_logs_and_loki_logs_are_different_kinds() {
        let out = ToolOutput::Logs(vec![LogLine {
            at: None,
            labels: Default::default(),
            line: "boom".into(),
        }]);
        assert_eq!(kind_of("kubernetes.pod_logs", &out), "kubernetes/pod_logs");
        assert_eq!(kind_of("loki.query_range", &out), "logs");
        match build("loki.query_range", &Params::new(), &out, &Chart::default()).body {
            EvidenceBody::Text { language, text } => {
                assert_eq!(language, "log");
                assert_eq!(text, "boom");
            }
            other => panic!("not text: {other:?}"),
        }
    }
}
