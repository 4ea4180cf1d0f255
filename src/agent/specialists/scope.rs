//! What an investigation is about: the scope Triage reads from an alert or a described problem,
//! and the alert expression split from its threshold.

use crate::model::{Alert, PodFacts};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use regex::Regex;
use std::sync::OnceLock;

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

pub(super) fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
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
}
