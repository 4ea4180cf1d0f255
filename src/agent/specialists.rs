//! Gather specialists (kubernetes, metrics, logs, changes): each plans its own tool calls from the
//! scope, runs them through a [`Caller`] that turns every call into events and evidence, and
//! returns the typed facts it learned.

use super::evidence::{self, Chart};
use super::journal::Journal;
use super::selection;
use super::tools::{Params, ToolOutput, Tools, params, s};
use crate::model::{
    Alert, Change, ChangeKind, DeploymentFacts, Event, EvidenceId, LogLine, Marker, PodFacts,
};
use crate::reason::Observations;
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use regex::Regex;
use serde_json::json;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

/// What the investigation is about, as Triage worked it out.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub alert: Option<Alert>,
    pub problem: Option<String>,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub pod: Option<String>,
    pub node: Option<String>,
    pub repo: Option<String>,
    /// The alert's own PromQL expression (generator URL or its rule).
    pub expr: Option<String>,
    /// The Kubernetes cluster the alert names (`cluster`, `cluster_name`, `kube_cluster_name`,
    /// `k8s_cluster_name`), or the one `--context` picks.
    pub cluster: Option<String>,
    pub now: DateTime<Utc>,
    pub onset: DateTime<Utc>,
}

/// Words of a sentence or of a symptom's description that are never an object's name in a
/// problem statement ("the namespace is down", "Service Availability").
fn common_word(w: &str) -> bool {
    const WORDS: &[&str] = &[
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "in",
        "on",
        "of",
        "for",
        "to",
        "and",
        "or",
        "not",
        "no",
        "my",
        "our",
        "this",
        "that",
        "its",
        "it",
        "with",
        "from",
        "down",
        "up",
        "slow",
        "failing",
        "failed",
        "broken",
        "degraded",
        "unavailable",
        "unreachable",
        "availability",
        "unavailability",
        "unreachability",
        "reachability",
        "latency",
        "errors",
        "error",
        "outage",
        "health",
        "healthy",
        "unhealthy",
        "issue",
        "issues",
        "problem",
        "problems",
        "performance",
        "degradation",
        "timeout",
        "timeouts",
        "crash",
        "crashes",
        "crashing",
        "restarts",
        "restarting",
        "pending",
        "high",
        "low",
        "which",
        "what",
        "why",
        "how",
        "default-namespace",
        "kubernetes",
        "k8s",
        "cluster",
        "whole",
        "entire",
        "every",
        "all",
        "some",
        "any",
        "new",
        "old",
        "main",
        "web",
    ];
    WORDS.contains(&w.to_ascii_lowercase().as_str())
}

/// A word that is not a namespace's name even where the grammar puts one ("the whole
/// namespace"). Names teams give namespaces ("web", "main") stay: a namespace read from the words
/// is checked against the cluster, which lists its pods or none.
fn common_namespace_word(w: &str) -> bool {
    common_word(w)
        && !matches!(
            w.to_ascii_lowercase().as_str(),
            "web" | "main" | "new" | "old"
        )
}

pub use crate::model::CLUSTER_KEYS;

fn first_of(map: &std::collections::BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| map.get(*k).filter(|v| !v.is_empty()).cloned())
}

fn word_after(text: &str, re: &Regex) -> Option<String> {
    re.captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|_| unreachable!("static pattern")))
}

impl Scope {
    pub fn from_alert(alert: &Alert, now: DateTime<Utc>) -> Scope {
        let l = &alert.labels;
        let a = &alert.annotations;
        let namespace = first_of(l, &["namespace", "kube_namespace", "exported_namespace"])
            .or_else(|| first_of(a, &["kube_namespace", "namespace"]));
        let keys: Vec<&str> = crate::reason::workload_keys().collect();
        let workload = first_of(l, &keys)
            .or_else(|| first_of(a, &["kube_deployment", "deployment", "workload"]));
        let pod = first_of(l, &["pod", "kube_pod", "pod_name"])
            .or_else(|| first_of(a, &["kube_pod", "pod"]));
        let node = first_of(l, &["node", "kubernetes_node", "instance_node"])
            .or_else(|| first_of(a, &["node", "kube_node"]));
        let repo = first_of(l, &["repo", "repository", "github_repo"])
            .or_else(|| first_of(a, &["repo", "repository", "github_repo"]));
        let onset = alert
            .starts_at
            .filter(|t| t.timestamp() > 0 && *t <= now + ChronoDuration::hours(1))
            .unwrap_or(now - ChronoDuration::minutes(30));
        Scope {
            alert: Some(alert.clone()),
            problem: None,
            namespace,
            workload,
            pod,
            node,
            repo,
            expr: alert.expr().filter(|e| !e.trim().is_empty()),
            cluster: first_of(l, CLUSTER_KEYS).or_else(|| first_of(a, CLUSTER_KEYS)),
            now,
            onset,
        }
    }

    pub fn from_problem(text: &str, now: DateTime<Utc>) -> Scope {
        static NS: OnceLock<Regex> = OnceLock::new();
        static DEP: OnceLock<Regex> = OnceLock::new();
        static NODE: OnceLock<Regex> = OnceLock::new();
        static REPO: OnceLock<Regex> = OnceLock::new();
        let ns = regex(
            &NS,
            r"(?i)\b(?:namespace|ns)[\s=:/]+([a-z0-9]([-a-z0-9]*[a-z0-9])?)",
        );
        let dep = regex(
            &DEP,
            r"(?i)\b(?:deployment|deploy|service|app)[\s=:/]+([a-z0-9]([-a-z0-9]*[a-z0-9])?)",
        );
        let node = regex(&NODE, r"(?i)\bnode[\s=:/]+([a-z0-9]([-.a-z0-9]*[a-z0-9])?)");
        let repo = regex(&REPO, r"\b([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\b");
        static NS_BEFORE: OnceLock<Regex> = OnceLock::new();
        static DEP_BEFORE: OnceLock<Regex> = OnceLock::new();
        let ns_before = regex(
            &NS_BEFORE,
            r"(?i)\b([a-z0-9]([-a-z0-9]*[a-z0-9])?)\s+(?:namespace|ns)\b",
        );
        let dep_before = regex(
            &DEP_BEFORE,
            r"(?i)\b([a-z0-9]([-a-z0-9]*[a-z0-9])?)\s+(?:deployment|statefulset|daemonset|service|app|job|cronjob)\b",
        );
        // "namespace payments", "the payments namespace" (its name before the noun when an
        // article leads it); never a word of the sentence itself.
        let named = |after: &Regex, before: &Regex, common: fn(&str) -> bool| {
            let before_word = before
                .captures_iter(text)
                .filter_map(|c| c.get(1).map(|m| (m.start(), m.as_str())))
                .find(|(at, w)| {
                    !common(w) && text[..*at].trim_end().to_lowercase().ends_with("the")
                })
                .map(|(_, w)| w.to_string());
            before_word
                .or_else(|| word_after(text, after).filter(|w| !common(w)))
                .or_else(|| word_after(text, before).filter(|w| !common(w)))
        };
        Scope {
            alert: None,
            problem: Some(text.to_string()),
            namespace: named(ns, ns_before, common_namespace_word),
            workload: named(dep, dep_before, common_word),
            pod: None,
            node: word_after(text, node),
            repo: word_after(text, repo).filter(|r| !r.starts_with("ns/")),
            expr: None,
            cluster: None,
            now,
            onset: now - ChronoDuration::minutes(30),
        }
    }

    /// Whether a pod belongs to the workload under investigation (any pod when none is known).
    pub fn owns_pod(&self, pod: &PodFacts) -> bool {
        match &self.workload {
            None => true,
            // A bare pod is its own workload.
            Some(w) => {
                pod.name == *w
                    || pod
                        .name
                        .strip_prefix(w.as_str())
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(controller_suffix)
                    || pod.labels.get("app").is_some_and(|a| a == w)
                    || pod
                        .labels
                        .get("app.kubernetes.io/name")
                        .is_some_and(|a| a == w)
            }
        }
    }
}

/// Whether what follows `<workload>-` in a pod name is what a controller appends: a ReplicaSet's
/// template hash and the pod's random suffix, a DaemonSet's or Job's suffix, a StatefulSet's
/// ordinal, a CronJob's schedule time and suffix. So `checkout` takes `checkout-7d9f8c6b5-x2k4p`
/// but not `checkout-worker-7d9f8c6b5-x2k4p` nor `checkout-worker-x2k4p`, a neighbour's: a hash
/// uses the API server's alphabet (no vowels, no 0, 1 or 3), which no word of a name fits.
fn controller_suffix(rest: &str) -> bool {
    const GENERATED: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let part = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
    let hash = |s: &str| {
        s.len() >= 5
            && (s.bytes().all(|b| GENERATED.contains(&b)) || s.bytes().all(|b| b.is_ascii_digit()))
    };
    match rest.split('-').collect::<Vec<_>>().as_slice() {
        [one] => part(one),
        [first, suffix] => hash(first) && part(suffix),
        _ => false,
    }
}

pub use crate::reason::promql::Threshold;

/// Split a PromQL alert expression into the measured expression and its threshold:
/// `rate(x[5m]) > 0.05` -> (`rate(x[5m])`, Some(> 0.05)). PromQL goes through the parser;
/// other query languages (a vendor monitor's text) fall back to a trailing comparison.
pub fn split_threshold(expr: &str) -> (String, Option<Threshold>) {
    if let Ok(e) = crate::reason::promql::parse(expr) {
        return (e.base, e.threshold);
    }
    static CMP: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &CMP,
        r"^(?s)(.*?)\s*(>=|<=|>|<|==|!=)\s*(?:bool\s+)?([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*$",
    );
    let whole = (expr.trim().to_string(), None);
    let Some(c) = re.captures(expr.trim()) else {
        return whole;
    };
    let base = c.get(1).map(|m| m.as_str().trim()).unwrap_or("");
    let op = match c.get(2).map(|m| m.as_str()) {
        Some(">=") => ">=",
        Some("<=") => "<=",
        Some(">") => ">",
        Some("<") => "<",
        Some("==") => "==",
        _ => "!=",
    };
    match c.get(3).and_then(|m| m.as_str().parse().ok()) {
        Some(value) if !base.is_empty() => (base.to_string(), Some(Threshold { op, value })),
        _ => whole,
    }
}

/// Runs tool calls for one specialist: events, timeout, evidence.
#[derive(Clone)]
pub struct Caller {
    pub tools: Arc<dyn Tools>,
    pub journal: Arc<Mutex<Journal>>,
    pub timeout: Duration,
    pub specialist: String,
    /// Calls already made in this phase (tool + params), so two lanes never ask twice.
    pub seen: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Credential approvals of this run, shared with the command dispatcher.
    pub credentials: Arc<super::credentials::CredentialGate>,
    /// The cluster every Kubernetes call of this run names, when several are configured.
    pub cluster: Option<String>,
}

/// Lock the journal; a panic elsewhere must not silence the session log.
pub fn lock(j: &Mutex<Journal>) -> MutexGuard<'_, Journal> {
    j.lock().unwrap_or_else(|e| e.into_inner())
}

impl Caller {
    /// The same caller with a fresh memory of calls made (verification re-queries on purpose).
    pub fn fresh(&self, name: &str) -> Caller {
        Caller {
            specialist: name.to_string(),
            seen: Arc::default(),
            ..self.clone()
        }
    }

    pub fn for_specialist(&self, name: &str) -> Caller {
        Caller {
            specialist: name.to_string(),
            ..self.clone()
        }
    }

    pub fn emit(&self, event: Event) {
        lock(&self.journal).emit(event);
    }

    /// Call a tool; on success add its evidence and fold the facts into `obs`.
    /// A failure is an event, and `None`: the investigation goes on without it.
    pub async fn call(
        &self,
        tool: &str,
        params: Params,
        chart: &Chart,
        obs: &Mutex<Observations>,
    ) -> Option<(ToolOutput, EvidenceId)> {
        let key = format!(
            "{tool} {}",
            serde_json::Value::from(
                params
                    .clone()
                    .into_iter()
                    .collect::<serde_json::Map<_, _>>()
            )
        );
        if !self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key)
        {
            return None;
        }
        let integration = tool.split('.').next().unwrap_or(tool);
        // Every Kubernetes read names the cluster it asks, in its params (and so in the session).
        let mut params = params;
        if integration == "kubernetes"
            && let Some(c) = &self.cluster
        {
            params
                .entry("cluster".to_string())
                .or_insert_with(|| serde_json::Value::String(c.clone()));
        }
        let refused = self.credentials_for(integration).await.err();
        let call_id = {
            let mut j = lock(&self.journal);
            let call_id = j.next_id("call");
            j.emit(Event::ToolCalled {
                call_id: call_id.clone(),
                tool: tool.to_string(),
                specialist: Some(self.specialist.clone()),
                params: params.clone(),
            });
            call_id
        };
        if let Some(error) = refused {
            self.emit(Event::ToolFailed {
                call_id,
                duration_ms: 0,
                error,
            });
            return None;
        }
        let started = Instant::now();
        let result = tokio::time::timeout(self.timeout, self.tools.call(tool, &params)).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let output = match result {
            Ok(Ok(out)) => out,
            Ok(Err(error)) => {
                self.emit(Event::ToolFailed {
                    call_id,
                    duration_ms,
                    error,
                });
                return None;
            }
            Err(_) => {
                self.emit(Event::ToolFailed {
                    call_id,
                    duration_ms,
                    error: format!("{tool} timed out after {:.0?}", self.timeout),
                });
                return None;
            }
        };
        let draft = evidence::build(tool, &params, &output, chart);
        let id = {
            let mut j = lock(&self.journal);
            j.emit(Event::ToolSucceeded {
                call_id: call_id.clone(),
                duration_ms,
                summary: output.summary(),
            });
            let id = j.next_id("ev");
            j.emit(Event::EvidenceAdded {
                evidence: crate::model::Evidence {
                    id: id.clone(),
                    kind: draft.kind.clone(),
                    title: draft.title,
                    source: tool.to_string(),
                    call_id: Some(call_id.clone()),
                    body: draft.body,
                },
            });
            j.emit(Event::Observed {
                evidence_id: id.clone(),
                kind: draft.kind.clone(),
                facts: output.clone(),
            });
            id
        };
        absorb(
            &mut obs.lock().unwrap_or_else(|e| e.into_inner()),
            tool,
            &params,
            &output,
            &draft.kind,
            &id,
        );
        // Rollout history is a change record too: show it where changes are looked for.
        if tool == "kubernetes.replica_sets"
            && let ToolOutput::Deployments(rs) = &output
        {
            let changes = rollout_changes(rs);
            if !changes.is_empty() {
                let out = ToolOutput::Changes(changes.clone());
                let draft = evidence::build(tool, &params, &out, chart);
                let cid = {
                    let mut j = lock(&self.journal);
                    let cid = j.next_id("ev");
                    j.emit(Event::EvidenceAdded {
                        evidence: crate::model::Evidence {
                            id: cid.clone(),
                            kind: "changes".into(),
                            title: "Rollout history".into(),
                            source: tool.to_string(),
                            call_id: Some(call_id),
                            body: draft.body,
                        },
                    });
                    j.emit(Event::Observed {
                        evidence_id: cid.clone(),
                        kind: "changes".into(),
                        facts: out.clone(),
                    });
                    cid
                };
                let mut o = obs.lock().unwrap_or_else(|e| e.into_inner());
                o.changes.extend(changes);
                o.evidence.entry("changes".into()).or_default().push(cid);
            }
        }
        Some((output, id))
    }
}

/// ReplicaSets as rollout changes, newest first, so a deploy can be lined up with an onset.
impl Caller {
    /// Asks for every credential of `integration` still waiting for a decision (an AWS key ID and
    /// its secret are two references), one after another; the first refusal stops the call.
    pub(super) async fn credentials_for(&self, integration: &str) -> Result<(), String> {
        let mut asked: Vec<String> = Vec::new();
        while let Some(reference) = self.tools.pending_credential(integration) {
            // A decision the world did not take up would be asked for forever.
            if asked.contains(&reference) {
                return Err(format!(
                    "credential {reference} is still waiting for a decision"
                ));
            }
            self.credential(integration, &reference).await?;
            asked.push(reference);
        }
        Ok(())
    }

    /// Asks the operator (once per reference and session) whether `integration` may read its
    /// credential; waits for the recorded decision and hands it to the world.
    pub(super) async fn credential(
        &self,
        integration: &str,
        reference: &str,
    ) -> Result<(), String> {
        use super::credentials::Ask;
        let decided = match self.credentials.ask(reference) {
            Ask::First => {
                self.emit(Event::CredentialRequested {
                    reference: reference.to_string(),
                    integration: integration.to_string(),
                    specialist: Some(self.specialist.clone()),
                });
                self.credentials.wait(reference).await
            }
            Ask::Wait => self.credentials.wait(reference).await,
            Ask::Decided { approved: true, .. } => Ok(()),
            Ask::Decided { reason, .. } => Err(reason),
        };
        match decided {
            Ok(()) => {
                self.tools.decide_credential(reference, true, "");
                Ok(())
            }
            Err(reason) => {
                self.tools.decide_credential(reference, false, &reason);
                let why = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                Err(format!(
                    "{integration}: not asked: the credential {reference} was not approved for this session{why}"
                ))
            }
        }
    }
}

pub fn rollout_changes(rs: &[DeploymentFacts]) -> Vec<Change> {
    let mut out: Vec<Change> = rs
        .iter()
        .map(|r| {
            let owner = r
                .labels
                .get("app")
                .cloned()
                .unwrap_or_else(|| r.name.clone());
            Change {
                kind: ChangeKind::Rollout,
                at: r.created_at,
                id: r
                    .revision
                    .as_ref()
                    .map(|v| format!("revision {v}"))
                    .unwrap_or_else(|| r.name.clone()),
                title: format!(
                    "ReplicaSet {} ({}), {}/{} ready",
                    r.name,
                    r.images.join(", "),
                    r.ready_replicas,
                    r.replicas
                ),
                author: None,
                target: format!("{}/{owner}", r.namespace),
                url: None,
            }
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    out
}

/// Fold one tool output into the observations and index its evidence by kind.
pub fn absorb(
    obs: &mut Observations,
    tool: &str,
    params: &Params,
    output: &ToolOutput,
    kind: &str,
    id: &EvidenceId,
) {
    obs.evidence
        .entry(kind.to_string())
        .or_default()
        .push(id.clone());
    match output {
        ToolOutput::Pods(v) => {
            merge_by(&mut obs.pods, v, |p| (p.namespace.clone(), p.name.clone()))
        }
        // The same event read twice (the namespace's Warnings, then its object's own) is one.
        ToolOutput::Events(v) => merge_by(&mut obs.events, v, |e| {
            (
                e.namespace.clone(),
                e.object.clone(),
                e.reason.clone(),
                e.message.clone(),
                e.event_type.clone(),
                e.first_seen,
                e.last_seen,
                e.count,
            )
        }),
        ToolOutput::Deployments(v) if tool.ends_with("replica_sets") => {
            merge_by(&mut obs.replica_sets, v, |d| {
                (d.namespace.clone(), d.name.clone())
            })
        }
        ToolOutput::Deployments(v) => merge_by(&mut obs.deployments, v, |d| {
            (d.namespace.clone(), d.name.clone())
        }),
        ToolOutput::Nodes(v) => merge_by(&mut obs.nodes, v, |n| (String::new(), n.name.clone())),
        ToolOutput::Services(v) => merge_by(&mut obs.services, v, |s| {
            (s.namespace.clone(), s.name.clone())
        }),
        ToolOutput::Workloads(v) => merge_by(&mut obs.workloads, v, |w| {
            (format!("{}/{}", w.kind, w.namespace), w.name.clone())
        }),
        ToolOutput::Logs(v) if tool.starts_with("kubernetes.") => {
            let pod = super::tools::p_str(params, "pod").unwrap_or("").to_string();
            let container = super::tools::p_str(params, "container").map(str::to_string);
            let previous = super::tools::p_bool(params, "previous") == Some(true);
            obs.pod_logs.extend(v.iter().map(|l| {
                let mut l: LogLine = l.clone();
                l.labels.entry("pod".into()).or_insert_with(|| pod.clone());
                if let Some(c) = &container {
                    l.labels
                        .entry("container".into())
                        .or_insert_with(|| c.clone());
                }
                if previous {
                    l.labels.insert("previous".into(), "true".into());
                }
                l
            }));
        }
        ToolOutput::Logs(v) => obs.logs.extend(v.iter().cloned()),
        // Discovered names and metadata plan queries; they are not measurements.
        ToolOutput::Series(_) if is_discovery(tool) => {}
        ToolOutput::Series(v) => merge_series(&mut obs.metrics, v),
        ToolOutput::Rules(v) => merge_by(&mut obs.rules, v, |r| (r.group.clone(), r.name.clone())),
        ToolOutput::Alerts(v) => obs.alerts.extend(v.iter().cloned()),
        ToolOutput::Changes(v) => obs.changes.extend(v.iter().cloned()),
        ToolOutput::Text(_) | ToolOutput::Other => {}
        ToolOutput::Postgres(v) => obs.postgres.extend(v.iter().cloned()),
        ToolOutput::Cloud(v) => obs.cloud.extend(v.iter().cloned()),
    }
}

/// Reads that discover what Prometheus has rather than measure it.
pub fn is_discovery(tool: &str) -> bool {
    matches!(tool, "prometheus.series" | "prometheus.metadata")
}

/// The same series read over two windows is one series: points are unioned by timestamp.
fn merge_series(into: &mut Vec<crate::model::Series>, items: &[crate::model::Series]) {
    for item in items {
        match into
            .iter_mut()
            .find(|s| s.name == item.name && s.labels == item.labels)
        {
            Some(slot) => {
                slot.points.extend(item.points.iter().copied());
                slot.points.sort_by(|a, b| a.0.total_cmp(&b.0));
                slot.points.dedup_by(|a, b| a.0 == b.0);
            }
            None => into.push(item.clone()),
        }
    }
}

/// Add items, replacing ones with the same key (a later read of the same object wins). One pass
/// over each list: the keys already held are indexed once, not searched per item.
fn merge_by<T: Clone, K: Eq + std::hash::Hash>(
    into: &mut Vec<T>,
    items: &[T],
    key: impl Fn(&T) -> K,
) {
    if items.is_empty() {
        return;
    }
    let mut at: std::collections::HashMap<K, usize> =
        std::collections::HashMap::with_capacity(into.len() + items.len());
    for (i, x) in into.iter().enumerate() {
        at.entry(key(x)).or_insert(i);
    }
    for item in items {
        let k = key(item);
        match at.get(&k) {
            Some(&i) => into[i] = item.clone(),
            None => {
                at.insert(k, into.len());
                into.push(item.clone());
            }
        }
    }
}

/// Combine what two lanes learned.
pub fn merge(into: &mut Observations, from: Observations) {
    merge_by(&mut into.pods, &from.pods, |p| {
        (p.namespace.clone(), p.name.clone())
    });
    into.events.extend(from.events);
    merge_by(&mut into.deployments, &from.deployments, |d| {
        (d.namespace.clone(), d.name.clone())
    });
    merge_by(&mut into.replica_sets, &from.replica_sets, |d| {
        (d.namespace.clone(), d.name.clone())
    });
    merge_by(&mut into.workloads, &from.workloads, |w| {
        (w.kind.clone(), w.namespace.clone(), w.name.clone())
    });
    merge_by(&mut into.nodes, &from.nodes, |n| n.name.clone());
    merge_by(&mut into.services, &from.services, |s| {
        (s.namespace.clone(), s.name.clone())
    });
    into.pod_logs.extend(from.pod_logs);
    into.logs.extend(from.logs);
    merge_series(&mut into.metrics, &from.metrics);
    merge_by(&mut into.rules, &from.rules, |r| {
        (r.group.clone(), r.name.clone())
    });
    into.alerts.extend(from.alerts);
    into.changes.extend(from.changes);
    into.postgres.extend(from.postgres);
    into.cloud.extend(from.cloud);
    if into.expr.is_none() {
        into.expr = from.expr;
    }
    for (k, ids) in from.evidence {
        let slot = into.evidence.entry(k).or_default();
        for id in ids {
            if !slot.contains(&id) {
                slot.push(id);
            }
        }
    }
}

/// The specialists available for a world with these integrations: [`pick`], plus the database
/// specialist when PostgreSQL is configured and either the investigation started from a described
/// problem (whose words say little about where the cause sits, so every configured source is
/// asked) or the alert points at a database or at what a database in trouble looks like from
/// its clients.
pub fn pick_for(tools: &dyn Tools, scope: &Scope) -> Vec<&'static str> {
    let mut out = pick(tools);
    if tools.has("postgres") && (scope.problem.is_some() || points_at_database(scope)) {
        out.push("database");
    }
    if tools.has("aws") && super::cloud::points_at_rds(scope) {
        out.push("cloud");
    }
    out
}

/// Whether the alert or problem is about a database: a PostgreSQL exporter alert or metric, a
/// database word, a PostgreSQL port, or the symptoms clients of a stuck database show
/// (latency, timeouts, refused or exhausted connections).
pub fn points_at_database(scope: &Scope) -> bool {
    static WORDS: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &WORDS,
        r"(?ix)
        \b(postgres(ql)?|pg_[a-z_]+|pgbouncer|database|db|sql|deadlocks?|locks?|lock[_\ ]wait
          |replication|wraparound|vacuum|connection[_\ ]pool|too[_\ ]many[_\ ]connections|too\ many\ clients
          |latency|slow|timeouts?|timed\ out|time\ out|deadline\ exceeded|connection\ refused|connection\ reset
          |idle\ in\ transaction)\b
        | :(5432|6432)\b
        ",
    );
    let mut texts: Vec<String> = Vec::new();
    if let Some(a) = &scope.alert {
        for (k, v) in a.labels.iter().chain(a.annotations.iter()) {
            texts.push(k.clone());
            texts.push(v.clone());
        }
        texts.push(a.generator_url.clone());
    }
    if let Some(e) = &scope.expr {
        texts.push(e.clone());
    }
    if let Some(p) = &scope.problem {
        texts.push(p.clone());
    }
    texts.iter().any(|t| {
        // CamelCase alert names (`PostgreSQLTooManyConnections`, `HighLatency`) read as words.
        let spaced = crate::reason::conventions::camel_words(t);
        re.is_match(t) || re.is_match(&spaced)
    })
}

pub fn pick(tools: &dyn Tools) -> Vec<&'static str> {
    let mut out = Vec::new();
    if tools.has("kubernetes") {
        out.push("kubernetes");
    }
    if tools.has("prometheus") {
        out.push("metrics");
    }
    if tools.has("alertmanager") {
        out.push("alerts");
    }
    if tools.has("loki") {
        out.push("logs");
    }
    if tools.has("kubernetes") || tools.has("github") {
        out.push("changes");
    }
    if tools.has("datadog") {
        out.push("datadog");
    }
    out
}

/// The integrations an investigation can draw on, in the order they are reported.
pub const INTEGRATIONS: [&str; 8] = [
    "kubernetes",
    "prometheus",
    "alertmanager",
    "loki",
    "github",
    "postgres",
    "aws",
    "datadog",
];

/// Integrations reported in coverage only when configured: their absence says nothing about a
/// Kubernetes workload.
const OPTIONAL_INTEGRATIONS: [&str; 3] = ["postgres", "aws", "datadog"];

/// Per integration, what the calls of this investigation got: configured, answered, empty, failed.
pub fn coverage(
    configured: &[String],
    calls: &[crate::model::ToolCallState],
) -> std::collections::BTreeMap<String, crate::reason::Coverage> {
    let mut out = std::collections::BTreeMap::new();
    for name in INTEGRATIONS {
        let mut c = crate::reason::Coverage {
            configured: configured.iter().any(|c| c == name),
            ..Default::default()
        };
        if !c.configured && OPTIONAL_INTEGRATIONS.contains(&name) {
            continue;
        }
        for call in calls
            .iter()
            .filter(|t| t.tool.split('.').next() == Some(name))
        {
            match &call.outcome {
                Some(Ok(summary)) => {
                    c.answered += 1;
                    if summary.starts_with("0 ") {
                        c.empty += 1;
                    }
                }
                Some(Err(e)) => {
                    c.failed += 1;
                    if c.error.is_none() {
                        c.error = Some(e.lines().next().unwrap_or("").chars().take(160).collect());
                    }
                }
                None => {}
            }
        }
        out.insert(name.to_string(), c);
    }
    out
}

/// Run one specialist by name.
pub async fn run(name: &str, caller: Caller, scope: &Scope) -> Observations {
    let obs = Mutex::new(Observations::default());
    let c = caller.for_specialist(name);
    match name {
        "kubernetes" => kubernetes(&c, scope, &obs).await,
        "metrics" => metrics(&c, scope, &obs).await,
        "logs" => logs(&c, scope, &obs).await,
        "changes" => changes(&c, scope, &obs).await,
        "alerts" => alerts(&c, scope, &obs).await,
        "database" => database(&c, &obs).await,
        "cloud" => super::cloud::specialist(&c, scope, &obs).await,
        "datadog" => super::datadog::specialist(&c, scope, &obs).await,
        other => c.emit(Event::Warning {
            message: format!("unknown specialist {other}"),
        }),
    }
    obs.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The database specialist: PostgreSQL sessions first (which opens the connection, after the
/// credential is approved), then the other reads in parallel.
async fn database(c: &Caller, obs: &Mutex<Observations>) {
    let none = Chart::default();
    if c.call("postgres.activity", Params::new(), &none, obs)
        .await
        .is_none()
    {
        // Not reachable (or not allowed): one clear failure, not seven.
        return;
    }
    futures::join!(
        c.call("postgres.locks", Params::new(), &none, obs),
        c.call("postgres.connections", Params::new(), &none, obs),
        c.call("postgres.long_queries", Params::new(), &none, obs),
        c.call("postgres.statements", Params::new(), &none, obs),
        c.call("postgres.replication", Params::new(), &none, obs),
        c.call("postgres.databases", Params::new(), &none, obs),
    );
}

fn rfc3339(t: DateTime<Utc>) -> Option<serde_json::Value> {
    s(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// Whether a pod deserves a look at its logs.
/// The subject's pods, resolved by the diagnosis's own rules from what the lane has listed so
/// far (its observations carry the alert and problem, see [`kubernetes`]), so that Gather reads
/// the logs of the pods the verdict will be about. None when unresolved.
fn subject_pods(obs: &Mutex<Observations>) -> Option<Vec<String>> {
    crate::reason::subject_pods(&obs.lock().unwrap_or_else(|e| e.into_inner()))
}

fn troubled(p: &PodFacts) -> bool {
    p.restarts() > 0
        || !p.ready() && p.phase != "Succeeded"
        || p.containers
            .iter()
            .any(|c| c.reason.is_some() || c.last_reason.is_some())
}

/// The workload controllers besides Deployments (StatefulSets, DaemonSets, Jobs, CronJobs) in the
/// namespace pods are read from (all namespaces when none is known), in parallel. Each read that
/// fails (a cluster without the API, a case without a recording) is one failed step, no more;
/// true when every one answered.
async fn workloads(c: &Caller, ns: Option<&str>, obs: &Mutex<Observations>) -> bool {
    let none = Chart::default();
    let scoped = || params([("namespace", ns.and_then(s))]);
    let (a, b, c2, d) = futures::join!(
        c.call("kubernetes.statefulsets", scoped(), &none, obs),
        c.call("kubernetes.daemonsets", scoped(), &none, obs),
        c.call("kubernetes.jobs", scoped(), &none, obs),
        c.call("kubernetes.cronjobs", scoped(), &none, obs),
    );
    a.is_some() && b.is_some() && c2.is_some() && d.is_some()
}

async fn kubernetes(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    // What the subject is resolved from besides the listed objects; lane merges ignore them.
    {
        let mut o = obs.lock().unwrap_or_else(|e| e.into_inner());
        o.alert = scope.alert.clone();
        o.problem = scope.problem.clone();
        o.now = scope.now;
    }
    let ns = scope.namespace.clone();
    let none = Chart::default();
    let in_ns = || params([("namespace", ns.clone().and_then(s))]);
    // An alert naming a workload in a namespace: its controllers are read first, so that its
    // pods and their events can be asked for by selector (see [`super::selection`]).
    let pods = if scope.alert.is_some() && ns.is_some() && scope.workload.is_some() {
        let (deployments, _, all_workloads) = futures::join!(
            c.call("kubernetes.deployments", in_ns(), &none, obs),
            c.call("kubernetes.nodes", Params::new(), &none, obs),
            workloads(c, ns.as_deref(), obs),
        );
        // Which neighbours are in trouble is read off every controller list: one missing, and
        // the namespace is read whole.
        let plan = (deployments.is_some() && all_workloads)
            .then(|| selection::pod_plan(scope, &obs.lock().unwrap_or_else(|e| e.into_inner())))
            .flatten();
        match plan {
            Some(plan) => selected(c, scope, &plan, obs).await,
            None => whole_namespace(c, scope, obs).await,
        }
    } else {
        let (pods, _, _, _, _) = futures::join!(
            c.call("kubernetes.pods", in_ns(), &none, obs),
            c.call("kubernetes.events", in_ns(), &none, obs),
            // Every namespace's when none is known: the problem's words may name one of them.
            c.call("kubernetes.deployments", in_ns(), &none, obs),
            c.call("kubernetes.nodes", Params::new(), &none, obs),
            workloads(c, ns.as_deref(), obs),
        );
        // A namespace read from a problem's words must be one the cluster has: none of its pods
        // listed there, every namespace's are read instead.
        let listed_none =
            matches!(&pods, Some((ToolOutput::Pods(p), _)) if p.is_empty()) || pods.is_none();
        let pods = if listed_none && scope.alert.is_none() && ns.is_some() {
            c.call("kubernetes.pods", Params::new(), &none, obs).await
        } else {
            pods
        };
        pods_of(pods)
    };
    let Some(pods) = pods else {
        return;
    };
    // Logs of the subject's pods, as the diagnosis resolves the subject from what was listed:
    // those in trouble first, then Running ones, since a latency or error-rate page on Ready
    // pods shows its cause in their own log (an upstream timing out, errors it serves). At most
    // three, to keep Gather quick.
    let subject = subject_pods(obs);
    let owns = |p: &PodFacts| match &subject {
        Some(names) => names.contains(&p.name),
        None => scope.owns_pod(p),
    };
    let mut picked: Vec<&PodFacts> = pods.iter().filter(|p| troubled(p) && owns(p)).collect();
    if picked.len() < 3 && (subject.is_some() || scope.workload.is_some()) {
        let running = pods
            .iter()
            .filter(|p| owns(p) && p.phase == "Running" && !troubled(p))
            .take(2);
        picked.extend(running);
    }
    if picked.is_empty() {
        picked = pods.iter().filter(|p| troubled(p)).collect();
    }
    if let Some(named) = &scope.pod
        && let Some(p) = pods.iter().find(|p| &p.name == named)
        && !picked.iter().any(|q| q.name == *named)
    {
        picked.insert(0, p);
    }
    // The Services in front of the subject (and what their Endpoints list), in its namespace.
    let service_ns = ns.clone().or_else(|| {
        let names = subject.as_ref()?;
        pods.iter()
            .find(|p| names.contains(&p.name))
            .map(|p| p.namespace.clone())
    });
    let services = async {
        if let Some(service_ns) = &service_ns {
            c.call(
                "kubernetes.services",
                params([("namespace", s(service_ns))]),
                &none,
                obs,
            )
            .await;
        }
    };
    picked.sort_by_key(|p| std::cmp::Reverse(p.restarts()));
    picked.truncate(3);
    let none = &none;
    let calls = picked.iter().map(|p| async move {
        let restarted = p.restarts() > 0;
        // A failing init container holds the pod back: its logs first; a container still
        // waiting for the init phase has none.
        let container = p
            .containers
            .iter()
            .find(|ct| ct.init && !ct.ready)
            .or_else(|| {
                p.containers
                    .iter()
                    .find(|ct| !ct.ready && ct.reason.as_deref() != Some("PodInitializing"))
            })
            .or(p.containers.first())
            .map(|ct| ct.name.clone());
        let logs = |previous: bool| {
            params([
                ("namespace", s(&p.namespace)),
                ("pod", s(&p.name)),
                ("container", container.clone().and_then(s)),
                ("previous", Some(json!(previous))),
                ("tail", Some(json!(200))),
            ])
        };
        let got = if restarted {
            c.call("kubernetes.pod_logs", logs(true), none, obs).await
        } else {
            None
        };
        if got.is_none() {
            c.call("kubernetes.pod_logs", logs(false), none, obs).await;
        }
    });
    futures::join!(futures::future::join_all(calls), services);
}

fn pods_of(out: Option<(ToolOutput, EvidenceId)>) -> Option<Vec<PodFacts>> {
    match out {
        Some((ToolOutput::Pods(p), _)) => Some(p),
        _ => None,
    }
}

/// Every pod and event of the scope's namespace, as the lane reads them when no selector can
/// narrow them.
async fn whole_namespace(
    c: &Caller,
    scope: &Scope,
    obs: &Mutex<Observations>,
) -> Option<Vec<PodFacts>> {
    let none = Chart::default();
    let in_ns = || params([("namespace", scope.namespace.clone().and_then(s))]);
    let (pods, _) = futures::join!(
        c.call("kubernetes.pods", in_ns(), &none, obs),
        c.call("kubernetes.events", in_ns(), &none, obs),
    );
    pods_of(pods)
}

/// The subject's pods by its controller's label selector (and those of its neighbours short of
/// ready), then the events of the subject's objects by field selector beside the namespace's
/// Warning events. The alert's own pod must be among them, else the namespace is read whole.
async fn selected(
    c: &Caller,
    scope: &Scope,
    plan: &selection::PodPlan,
    obs: &Mutex<Observations>,
) -> Option<Vec<PodFacts>> {
    let (Some(ns), Some(workload)) = (scope.namespace.as_deref(), scope.workload.as_deref()) else {
        return whole_namespace(c, scope, obs).await;
    };
    let none = Chart::default();
    let by = |selector: &str| params([("namespace", s(ns)), ("label_selector", s(selector))]);
    let (subject, neighbours) = futures::join!(
        c.call("kubernetes.pods", by(&plan.subject), &none, obs),
        futures::future::join_all(plan.neighbours.iter().map(|sel| c.call(
            "kubernetes.pods",
            by(sel),
            &none,
            obs
        ))),
    );
    let Some(subject) = pods_of(subject) else {
        return whole_namespace(c, scope, obs).await;
    };
    let nodes = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        selection::troubled_nodes(scope, &subject, &o.nodes)
    };
    let on_nodes = futures::future::join_all(nodes.iter().map(|node| {
        c.call(
            "kubernetes.pods",
            params([("namespace", s(ns)), ("node", s(node))]),
            &none,
            obs,
        )
    }))
    .await;
    let mut pods = subject.clone();
    let mut listed: std::collections::HashSet<String> =
        subject.iter().map(|p| p.name.clone()).collect();
    for more in neighbours.into_iter().chain(on_nodes).filter_map(pods_of) {
        pods.extend(more.into_iter().filter(|p| listed.insert(p.name.clone())));
    }
    if scope
        .pod
        .as_ref()
        .is_some_and(|named| !pods.iter().any(|p| &p.name == named))
    {
        return whole_namespace(c, scope, obs).await;
    }
    let mine: Vec<&PodFacts> = subject.iter().collect();
    match selection::event_objects(workload, &mine) {
        Some(names) => {
            let about = |name: &str| params([("namespace", s(ns)), ("involved", s(name))]);
            futures::join!(
                c.call(
                    "kubernetes.events",
                    params([("namespace", s(ns)), ("type", s("Warning"))]),
                    &none,
                    obs
                ),
                futures::future::join_all(names.iter().map(|n| c.call(
                    "kubernetes.events",
                    about(n),
                    &none,
                    obs
                ))),
            );
        }
        None => {
            c.call(
                "kubernetes.events",
                params([("namespace", s(ns))]),
                &none,
                obs,
            )
            .await;
        }
    }
    Some(pods)
}

async fn metrics(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let (rules, _) = futures::join!(
        c.call("prometheus.rules", Params::new(), &none, obs),
        c.call("prometheus.alerts", Params::new(), &none, obs),
    );
    let alertname = scope.alert.as_ref().map(|a| a.name().to_string());
    // A Datadog monitor's query is the Datadog lane's to measure, not PromQL.
    let paged_by_monitor = scope
        .alert
        .as_ref()
        .is_some_and(|a| a.monitor_query().is_some());
    let scope_expr = scope.expr.clone().filter(|_| !paged_by_monitor);
    let expr = scope_expr.or_else(|| match (&rules, &alertname) {
        (Some((ToolOutput::Rules(rules), _)), Some(name)) => rules
            .iter()
            .find(|r| r.rule_type == "alerting" && &r.name == name && !r.query.is_empty())
            .map(|r| r.query.clone()),
        _ => None,
    });
    let Some(expr) = expr else {
        // No alert and no rule: what Prometheus has about the subject the problem names.
        discover(c, scope, None, obs).await;
        return;
    };
    if scope.alert.is_none() {
        obs.lock().unwrap_or_else(|e| e.into_inner()).expr = Some(expr.clone());
    }
    let (base, threshold) = split_threshold(&expr);
    let chart = Chart {
        threshold: threshold.map(|t| t.value),
        markers: vec![Marker {
            at: scope.onset.timestamp() as f64,
            label: "alert fired".into(),
        }],
    };
    // First the alert's own expression around the onset, then the wider picture.
    let start = scope.onset - ChronoDuration::minutes(30);
    let end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let end = if end <= start { scope.now } else { end };
    c.call(
        "prometheus.query_range",
        params([
            ("query", s(&base)),
            ("start", rfc3339(start)),
            ("end", rfc3339(end)),
            ("step", Some(json!(30))),
        ]),
        &chart,
        obs,
    )
    .await;
    c.call(
        "prometheus.query_range",
        params([
            ("query", s(&base)),
            ("start", rfc3339(scope.now - ChronoDuration::hours(6))),
            ("end", rfc3339(scope.now)),
            ("step", Some(json!(300))),
        ]),
        &chart,
        obs,
    )
    .await;
    // Its siblings for the same subject (error ratio, latency, throttling, versions), over a
    // window that starts well before the onset so a step and the change before it both show.
    let Ok(parsed) = crate::reason::promql::parse(&expr) else {
        return;
    };
    discover(c, scope, Some(&parsed), obs).await;
    let start = scope.onset - ChronoDuration::minutes(60);
    let end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let end = if end <= start { scope.now } else { end };
    let marker = Chart {
        threshold: None,
        markers: chart.markers.clone(),
    };
    let queries = crate::reason::promql::siblings(&parsed)
        .into_iter()
        .map(|(_, q)| q);
    range_queries(c, queries, (start, end), &marker, obs).await;
}

/// Run PromQL range queries in parallel at a 30 s step over `window`, each drawn with `chart`.
async fn range_queries(
    c: &Caller,
    queries: impl IntoIterator<Item = String>,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    chart: &Chart,
    obs: &Mutex<Observations>,
) {
    let calls = queries.into_iter().map(|query| async move {
        c.call(
            "prometheus.query_range",
            params([
                ("query", s(query)),
                ("start", rfc3339(start)),
                ("end", rfc3339(end)),
                ("step", Some(json!(30))),
            ]),
            chart,
            obs,
        )
        .await;
    });
    futures::future::join_all(calls).await;
}

/// Discovery: the series Prometheus lists for the subject (the alert expression's subject, else
/// the workload or the words of the problem) and their metadata, then the error-ratio, latency,
/// saturation and version queries built from what was found, over a window that starts well
/// before the onset so a step and the change before it both show.
async fn discover(
    c: &Caller,
    scope: &Scope,
    parsed: Option<&crate::reason::promql::AlertExpr>,
    obs: &Mutex<Observations>,
) {
    use crate::reason::discover;
    let none = Chart::default();
    let candidates: Vec<String> = match (&scope.workload, &scope.problem) {
        (Some(w), _) => vec![w.clone()],
        (None, Some(p)) => problem_words(p),
        (None, None) => Vec::new(),
    };
    let selectors = match parsed {
        Some(p) => discover::subject_selectors(
            &p.subject(),
            scope.namespace.as_deref(),
            scope.workload.as_deref(),
        ),
        None => discover::selectors(&candidates, scope.namespace.as_deref()),
    };
    if selectors.is_empty() {
        return;
    }
    let start = scope.onset - ChronoDuration::minutes(60);
    let end = scope.now;
    let found = c
        .call(
            "prometheus.series",
            params([
                ("match", s(selectors.join("\n"))),
                ("start", rfc3339(start)),
                ("end", rfc3339(end)),
            ]),
            &none,
            obs,
        )
        .await;
    let series = match found {
        Some((ToolOutput::Series(v), _)) if !v.is_empty() => v,
        _ => return,
    };
    let metadata = match c
        .call("prometheus.metadata", Params::new(), &none, obs)
        .await
    {
        Some((ToolOutput::Series(v), _)) => v,
        _ => Vec::new(),
    };
    let subjects = match parsed {
        Some(p) => {
            let mut out = vec![p.subject()];
            if let (Some(ns), Some(w)) = (&scope.namespace, &scope.workload) {
                out.extend(
                    discover::subject(&series, std::slice::from_ref(w), Some(ns))
                        .into_iter()
                        .filter(|m| m.iter().any(|x| x.name == "pod")),
                );
            }
            out
        }
        None => discover::subject(&series, &candidates, scope.namespace.as_deref()),
    };
    let marker = Chart {
        threshold: None,
        markers: vec![Marker {
            at: scope.onset.timestamp() as f64,
            label: if scope.alert.is_some() {
                "alert fired"
            } else {
                "reported"
            }
            .into(),
        }],
    };
    let q_end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let q_end = if q_end <= start { scope.now } else { q_end };
    let queries = discover::plan(&series, &metadata, &subjects)
        .into_iter()
        .map(|(_, q)| q);
    range_queries(c, queries, (start, q_end), &marker, obs).await;
}

/// Firing alerts from Alertmanager: the trigger's own state (still firing, resolved, silenced) and its neighbours.
async fn alerts(c: &Caller, _scope: &Scope, obs: &Mutex<Observations>) {
    c.call("alertmanager.alerts", Params::new(), &Chart::default(), obs)
        .await;
}

/// Words of a problem statement that can name something (lowercase, 3+ characters, no filler).
fn problem_words(text: &str) -> Vec<String> {
    const FILLER: [&str; 24] = [
        "the",
        "and",
        "are",
        "is",
        "was",
        "our",
        "has",
        "have",
        "been",
        "with",
        "for",
        "from",
        "that",
        "this",
        "since",
        "returning",
        "returns",
        "seems",
        "very",
        "some",
        "all",
        "not",
        "any",
        "users",
    ];
    text.to_lowercase()
        .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-' || ch == '_'))
        .filter(|w| w.len() >= 3 && !FILLER.contains(w))
        .map(str::to_string)
        .collect()
}

/// How strongly an alert matches a problem statement: its subject named (label values) and its
/// symptom described (errors, latency, restarts, ...). Zero when the subject is not named.
fn problem_score(words: &[String], labels: &std::collections::BTreeMap<String, String>) -> u32 {
    let subject_keys = [
        "service",
        "app",
        "job",
        "deployment",
        "workload_name",
        "namespace",
        "pod",
        "container",
        "statefulset",
        "node",
    ];
    let mut subject = 0;
    for (k, v) in labels {
        let v = v.to_lowercase();
        if subject_keys.contains(&k.as_str()) && !v.is_empty() && words.contains(&v) {
            subject += if k == "namespace" { 1 } else { 3 };
        }
    }
    if subject == 0 {
        return 0;
    }
    let name = labels
        .get("alertname")
        .map(|n| n.to_lowercase())
        .unwrap_or_default();
    let symptoms: [(&[&str], &[&str]); 5] = [
        (
            &[
                "error", "errors", "5xx", "500", "502", "503", "failing", "fail", "failures",
            ],
            &["error", "5xx", "fail"],
        ),
        (
            &["slow", "latency", "timeout", "timeouts", "timing"],
            &["latency", "duration", "slow"],
        ),
        (
            &["down", "unavailable", "unreachable"],
            &["down", "unavailable", "absent"],
        ),
        (
            &["restarting", "crashing", "crash", "restarts", "crashloop"],
            &["restart", "crash"],
        ),
        (
            &["memory", "oom", "cpu", "throttled", "saturated"],
            &["memory", "oom", "cpu", "throttl"],
        ),
    ];
    let symptom = symptoms
        .iter()
        .filter(|(said, named)| {
            words.iter().any(|w| said.contains(&w.as_str()))
                && named.iter().any(|n| name.contains(n))
        })
        .count() as u32;
    subject + 2 * symptom
}

/// Problem mode: find the firing alert the operator is describing (Alertmanager, Prometheus), and
/// investigate as for that alert, with its rule's expression; otherwise keep the problem's own scope.
pub async fn resolve_problem(caller: &Caller, scope: &Scope) -> Scope {
    let obs = Mutex::new(Observations::default());
    if scope.problem.is_none() || scope.alert.is_some() {
        return scope.clone();
    }
    let c = caller.for_specialist(TRIAGE_LANE);
    let none = Chart::default();
    let has_prom = c.tools.has("prometheus");
    let (am, prom, rules) = futures::join!(
        async {
            if c.tools.has("alertmanager") {
                c.call("alertmanager.alerts", Params::new(), &none, &obs)
                    .await
            } else {
                None
            }
        },
        async {
            if has_prom {
                c.call("prometheus.alerts", Params::new(), &none, &obs)
                    .await
            } else {
                None
            }
        },
        async {
            if has_prom {
                c.call("prometheus.rules", Params::new(), &none, &obs).await
            } else {
                None
            }
        },
    );
    let alerts = |got: Option<(ToolOutput, EvidenceId)>| match got {
        Some((ToolOutput::Alerts(v), _)) => v,
        _ => Vec::new(),
    };
    let rules = match rules {
        Some((ToolOutput::Rules(r), _)) => r,
        _ => Vec::new(),
    };
    match_problem(scope, &[alerts(am), alerts(prom)].concat(), &rules)
}

/// The lane name of the reads Triage makes to match a described problem to a firing alert.
pub const TRIAGE_LANE: &str = "triage";

/// The pure half of [`resolve_problem`]: the scope for a described problem, given the alerts
/// (Alertmanager's, then Prometheus') and rules Triage read. Re-diagnosis runs it on the same
/// facts from the log, so both reach the same scope.
pub fn match_problem(
    scope: &Scope,
    alerts: &[crate::model::AlertInfo],
    rules: &[crate::model::RuleInfo],
) -> Scope {
    let Some(text) = scope.problem.clone().filter(|_| scope.alert.is_none()) else {
        return scope.clone();
    };
    let candidates: Vec<&crate::model::AlertInfo> = alerts
        .iter()
        .filter(|a| matches!(a.state.as_str(), "active" | "firing" | "pending"))
        .collect();
    let words = problem_words(&text);
    let best = candidates
        .iter()
        .map(|a| (problem_score(&words, &a.labels), *a))
        .filter(|(score, _)| *score > 0)
        .max_by_key(|(score, a)| (*score, std::cmp::Reverse(a.active_at)));
    let Some((_, info)) = best else {
        // No alert matches: a word that is a known subject label value names the workload, and
        // that subject's own alert rule (inactive now) is the expression to re-run.
        let mut out = scope.clone();
        if out.expr.is_none() {
            out.expr = rules
                .iter()
                .filter(|r| r.rule_type != "recording" && !r.query.is_empty())
                .map(|r| {
                    let mut labels = r.labels.clone();
                    labels.insert("alertname".into(), r.name.clone());
                    if let Ok(e) = crate::reason::promql::parse(&r.query) {
                        for m in e.subject() {
                            labels.entry(m.name).or_insert(m.value);
                        }
                    }
                    (problem_score(&words, &labels), r)
                })
                .filter(|(score, _)| *score > 0)
                .max_by_key(|(score, _)| *score)
                .map(|(_, r)| r.query.clone());
        }
        if out.workload.is_none() {
            out.workload = rules
                .iter()
                .flat_map(|r| r.labels.iter())
                .chain(candidates.iter().flat_map(|a| a.labels.iter()))
                .filter(|(k, _)| ["service", "app", "job", "deployment"].contains(&k.as_str()))
                .map(|(_, v)| v.to_lowercase())
                .find(|v| words.contains(v));
        }
        return out;
    };
    let alert = Alert {
        status: crate::model::AlertStatus::Firing,
        labels: info.labels.clone(),
        annotations: info.annotations.clone(),
        starts_at: info.active_at,
        ..Alert::default()
    };
    let mut out = Scope::from_alert(&alert, scope.now);
    out.problem = scope.problem.clone();
    if out.expr.is_none() {
        out.expr = rules
            .iter()
            .find(|r| r.name == info.name && !r.query.is_empty() && r.rule_type != "recording")
            .map(|r| r.query.clone());
    }
    out.namespace = out.namespace.or_else(|| scope.namespace.clone());
    out.workload = out.workload.or_else(|| scope.workload.clone());
    out.node = out.node.or_else(|| scope.node.clone());
    out.repo = out.repo.or_else(|| scope.repo.clone());
    out
}

/// The LogQL stream selector for the scope.
pub fn log_selector(scope: &Scope) -> Option<String> {
    let ns = scope.namespace.as_ref()?;
    Some(match &scope.workload {
        Some(w) => format!("{{namespace=\"{ns}\", app=\"{w}\"}}"),
        None => format!("{{namespace=\"{ns}\"}}"),
    })
}

/// The stream selector for the subject when no namespace is known: the names the alert or
/// problem gives (a workload, a pod, or the problem's words), matched against the labels log
/// shippers set (`app`, `container`, `pod`). None when nothing names anything.
fn subject_stream_selector(scope: &Scope) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    names.extend(scope.workload.iter().cloned());
    names.extend(scope.pod.iter().cloned());
    if names.is_empty()
        && let Some(p) = &scope.problem
    {
        names.extend(
            problem_words(p)
                .into_iter()
                .filter(|w| w.contains('-'))
                .take(3),
        );
    }
    names.retain(|n| {
        n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    });
    if names.is_empty() {
        return None;
    }
    let alternatives = names.join("|");
    Some(format!("{{app=~\"{alternatives}\"}}"))
}

async fn logs(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let selector = match (&scope.namespace, subject_stream_selector(scope)) {
        (Some(ns), _) => format!("{{namespace=\"{ns}\"}}"),
        (None, Some(sel)) => sel,
        (None, None) => {
            c.emit(Event::Warning {
                message: "logs: the alert or problem names no namespace and nothing its logs are labelled with, so no log query".into(),
            });
            return;
        }
    };
    let none = Chart::default();
    let around = params([
        (
            "query",
            s(format!(
                "{selector} |~ \"(?i)(error|exception|fatal|panic|timeout|refused|failed)\""
            )),
        ),
        ("start", rfc3339(scope.onset - ChronoDuration::minutes(30))),
        ("end", rfc3339(scope.now)),
        ("limit", Some(json!(500))),
        ("direction", s("backward")),
    ]);
    c.call("loki.query_range", around, &none, obs).await;
    if let Some(sel) = log_selector(scope).filter(|_| scope.workload.is_some()) {
        let wide = params([
            ("query", s(sel)),
            ("start", rfc3339(scope.now - ChronoDuration::hours(2))),
            ("end", rfc3339(scope.now)),
            ("limit", Some(json!(300))),
            ("direction", s("backward")),
        ]);
        c.call("loki.query_range", wide, &none, obs).await;
    }
}

async fn changes(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let k8s = async {
        if let Some(ns) = &scope.namespace
            && c.tools.has("kubernetes")
        {
            let got = c
                .call(
                    "kubernetes.replica_sets",
                    params([("namespace", s(ns))]),
                    &none,
                    obs,
                )
                .await;
            // When the workload reads ConfigMaps or Secrets, when each was last written.
            let refs: Vec<String> = match &got {
                Some((ToolOutput::Deployments(rs), _)) => rs
                    .iter()
                    .filter(|r| {
                        scope.workload.as_ref().is_none_or(|w| {
                            r.name.starts_with(&format!("{w}-"))
                                || r.labels.get("app").is_some_and(|a| a == w)
                        })
                    })
                    .flat_map(|r| r.config_refs.iter().cloned())
                    .collect(),
                _ => Vec::new(),
            };
            let wants = |kind: &str| refs.iter().any(|r| r.starts_with(&format!("{kind}/")));
            futures::join!(
                async {
                    if wants("configmap") {
                        c.call(
                            "kubernetes.config_maps",
                            params([("namespace", s(ns))]),
                            &none,
                            obs,
                        )
                        .await;
                    }
                },
                async {
                    if wants("secret") {
                        c.call(
                            "kubernetes.secrets",
                            params([("namespace", s(ns))]),
                            &none,
                            obs,
                        )
                        .await;
                    }
                },
            );
        }
    };
    let gh = async {
        // Without a repo in the alert, the world's configured repository is used.
        if !c.tools.has("github") {
            return;
        }
        let window = params([
            ("repo", scope.repo.clone().and_then(s)),
            ("since", rfc3339(scope.onset - ChronoDuration::hours(24))),
            ("until", rfc3339(scope.now)),
        ]);
        futures::join!(
            c.call("github.deployments", window.clone(), &none, obs),
            c.call("github.merged_pulls", window.clone(), &none, obs),
        );
    };
    futures::join!(k8s, gh);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_takes_its_controllers_pods_not_a_neighbours() {
        for own in ["7d9f8c6b5-x2k4p", "x2k4p", "0", "12", "28512345-q7wzn"] {
            assert!(controller_suffix(own), "{own}");
        }
        for neighbour in ["worker-7d9f8c6b5-x2k4p", "worker-x2k4p", "db-0"] {
            assert!(!controller_suffix(neighbour), "{neighbour}");
        }
    }

    #[test]
    fn thresholds_split_off_alert_expressions() {
        let (base, t) = split_threshold("rate(x[5m]) > 0.05");
        assert_eq!(base, "rate(x[5m])");
        let t = t.unwrap();
        assert!(t.breached(0.06) && !t.breached(0.05));
        let (base, t) = split_threshold("kube_statefulset_status_replicas_ready{a=\"b\"} < 1");
        assert_eq!(base, "kube_statefulset_status_replicas_ready{a=\"b\"}");
        assert!(t.unwrap().breached(0.0) && !t.unwrap().breached(1.0));
        assert_eq!(split_threshold("up"), ("up".to_string(), None));
    }

    #[test]
    fn problem_text_names_namespace_and_workload() {
        let s = Scope::from_problem(
            "checkout deployment checkout-api in namespace shop returns 502",
            Utc::now(),
        );
        assert_eq!(s.namespace.as_deref(), Some("shop"));
        assert_eq!(s.workload.as_deref(), Some("checkout-api"));
        let s = Scope::from_problem("pods in the payments namespace keep restarting", Utc::now());
        assert_eq!(s.namespace.as_deref(), Some("payments"));
        // Names teams give namespaces are names where the grammar says so, not workloads.
        let s = Scope::from_problem(
            "503s from the storefront service in the web namespace",
            Utc::now(),
        );
        assert_eq!(s.namespace.as_deref(), Some("web"));
        assert_eq!(s.workload.as_deref(), Some("storefront"));
        let s = Scope::from_problem("the web app is slow", Utc::now());
        assert_eq!(s.workload, None);
        let s = Scope::from_problem(
            "namespace is slow: Payments Service Availability",
            Utc::now(),
        );
        assert_eq!(s.namespace, None);
        assert_eq!(s.workload.as_deref(), Some("Payments"));
        let s = Scope::from_problem("Checkout Service Unreachability since 3am", Utc::now());
        assert_eq!(s.workload.as_deref(), Some("Checkout"));
    }

    #[test]
    fn logs_are_asked_for_by_the_subjects_names_when_no_namespace_is_known() {
        let s = Scope::from_problem(
            "Why is there high latency with the customer-orders deployment?",
            Utc::now(),
        );
        assert_eq!(s.namespace, None);
        assert_eq!(
            subject_stream_selector(&s).as_deref(),
            Some("{app=~\"customer-orders\"}")
        );
        assert_eq!(
            subject_stream_selector(&Scope::from_problem("everything is slow", Utc::now())),
            None
        );
    }

    #[test]
    fn alert_labels_and_annotations_give_the_scope() {
        let mut alert = Alert::default();
        alert.labels.insert("namespace".into(), "payments".into());
        alert
            .annotations
            .insert("kube_deployment".into(), "payments-api".into());
        let s = Scope::from_alert(&alert, Utc::now());
        assert_eq!(s.namespace.as_deref(), Some("payments"));
        assert_eq!(s.workload.as_deref(), Some("payments-api"));
    }

    /// A world with these integrations configured; nothing is ever called.
    struct Configured(&'static [&'static str]);

    impl Tools for Configured {
        fn now(&self) -> DateTime<Utc> {
            Utc::now()
        }
        fn has(&self, integration: &str) -> bool {
            self.0.contains(&integration)
        }
        fn call<'a>(
            &'a self,
            tool: &'a str,
            _: &'a Params,
        ) -> futures::future::BoxFuture<'a, Result<ToolOutput, String>> {
            Box::pin(async move { Err(format!("{tool}: not in this test")) })
        }
        fn execute<'a>(
            &'a self,
            _: &'a crate::model::Action,
        ) -> futures::future::BoxFuture<'a, Result<String, String>> {
            Box::pin(async { Err("no actions".to_string()) })
        }
    }

    #[test]
    fn lanes_merge_workloads_by_kind_namespace_and_name() {
        let w = |kind: &str, name: &str, ready: u32| crate::model::WorkloadFacts {
            kind: kind.into(),
            name: name.into(),
            namespace: "orders".into(),
            ready,
            ..Default::default()
        };
        let mut into = Observations {
            workloads: vec![w("StatefulSet", "db", 1)],
            ..Observations::default()
        };
        let from = Observations {
            workloads: vec![w("StatefulSet", "db", 3), w("Job", "db", 0)],
            ..Observations::default()
        };
        merge(&mut into, from);
        assert_eq!(into.workloads.len(), 2);
        assert_eq!(into.workloads[0].ready, 3);
    }

    #[test]
    fn a_described_problem_asks_every_configured_source() {
        let now = Utc::now();
        let hang = Scope::from_problem("checkout requests hang", now);
        // The words say nothing of a database, and still the configured one is asked.
        assert!(!points_at_database(&hang));
        assert_eq!(
            pick_for(&Configured(&["postgres"]), &hang),
            vec!["database"]
        );
        assert_eq!(
            pick_for(
                &Configured(&[
                    "kubernetes",
                    "prometheus",
                    "alertmanager",
                    "loki",
                    "github",
                    "postgres"
                ]),
                &Scope::from_problem("pods crash after the deploy", now)
            ),
            vec![
                "kubernetes",
                "metrics",
                "alerts",
                "logs",
                "changes",
                "database"
            ]
        );
        // A problem matched to a firing alert is still a described problem.
        let mut alert = Alert::default();
        alert
            .labels
            .insert("alertname".into(), "KubePodCrashLooping".into());
        let mut matched = Scope::from_alert(&alert, now);
        matched.problem = Some("checkout requests hang".into());
        assert!(pick_for(&Configured(&["postgres"]), &matched).contains(&"database"));
        // An alert about something else leaves the database alone.
        let crash = Scope::from_alert(&alert, now);
        assert!(!pick_for(&Configured(&["kubernetes", "postgres"]), &crash).contains(&"database"));
        // No PostgreSQL configured, no database specialist.
        assert!(!pick_for(&Configured(&["kubernetes"]), &hang).contains(&"database"));
    }

    #[test]
    fn database_symptoms_and_exporter_alerts_point_at_a_database() {
        let now = Utc::now();
        for text in [
            "checkout requests time out",
            "api latency is high",
            "connection refused to 10.0.0.5:5432",
            "too many clients on the orders db",
            "idle in transaction sessions pile up",
        ] {
            assert!(
                points_at_database(&Scope::from_problem(text, now)),
                "{text}"
            );
        }
        assert!(!points_at_database(&Scope::from_problem(
            "pods crash after the deploy",
            now
        )));
        for (name, expr) in [
            (
                "PostgreSQLTooManyConnections",
                "sum(pg_stat_activity_count) > 90",
            ),
            ("PostgresqlDown", "pg_up == 0"),
        ] {
            let mut labels = std::collections::BTreeMap::new();
            labels.insert("alertname".to_string(), name.to_string());
            let alert = Alert {
                labels,
                generator_url: format!("http://prom/graph?g0.expr={}", expr.replace(' ', "%20")),
                ..Alert::default()
            };
            assert!(
                points_at_database(&Scope::from_alert(&alert, now)),
                "{name}"
            );
        }
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("alertname".to_string(), "KubePodCrashLooping".to_string());
        let alert = Alert {
            labels,
            ..Alert::default()
        };
        assert!(!points_at_database(&Scope::from_alert(&alert, now)));
    }
}
