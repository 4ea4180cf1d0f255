//! Triage of a described problem: the firing alert the operator is describing, matched by the
//! words of the problem, and the scope it gives.

use super::{Caller, Scope};
use crate::agent::evidence::Chart;
use crate::agent::tools::{Params, ToolOutput};
use crate::model::{Alert, EvidenceId};
use crate::reason::Observations;
use std::sync::Mutex;

/// Words of a problem statement that can name something (lowercase, 3+ characters, no filler).
pub(super) fn problem_words(text: &str) -> Vec<String> {
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
