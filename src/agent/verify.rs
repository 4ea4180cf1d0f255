//! Verification: after an action ran, re-gather the evidence the diagnosis rested on and re-run
//! the analyzer that found the cause: passed when its condition no longer holds, failed when it
//! still does, unknown when the re-query could not be made.

use super::evidence::Chart;
use super::specialists::{self, Caller, Scope, split_threshold};
use super::tools::{ToolOutput, params, s};
use crate::model::{Action, EvidenceId, Finding, Marker, PodFacts, Verification};
use crate::reason::{Observations, analyze, level_shift};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use serde_json::json;
use std::sync::Mutex;

/// What re-running the cause's analyzer on fresh evidence said.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// The finding's condition is gone; the text says which evidence shows it.
    Cleared(String, Option<EvidenceId>),
    /// It still holds.
    Holds(String, Option<EvidenceId>),
    /// The evidence could not be gathered again.
    Unknown(String),
    /// The diagnosis named no cause to re-check (healthy, or nothing found).
    Nothing,
}

/// The finding the verdict rests on: the most confident one of the verdict's category (the
/// analyzers' own bookkeeping, coverage and change lists, is never the cause).
/// Returned with the verdict's root-cause statement.
pub fn cause_finding(before: &Observations) -> Option<(Finding, String)> {
    let a = analyze(before);
    if matches!(
        a.category,
        crate::model::Category::Healthy | crate::model::Category::Unknown
    ) {
        return None;
    }
    let root = a.root_cause.clone();
    a.findings
        .into_iter()
        .filter(|f| {
            !matches!(
                f.analyzer.as_str(),
                "coverage" | "recent_change" | "config_change"
            )
        })
        .find(|f| f.category == a.category)
        .map(|f| (f, root))
}

/// The evidence kinds a finding cites, looked up in the observations that hold its ids.
fn kinds_of(before: &Observations, f: &Finding) -> Vec<String> {
    before
        .evidence
        .iter()
        .filter(|(_, ids)| ids.iter().any(|id| f.evidence.contains(id)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Re-gather what the cause's finding was based on and re-run its analyzer.
///
/// `target` is the object the action acted on (`pod/db-0`): when the cause named it and no longer
/// does (the pod moved off a node that stays down), the action's part of the cause is gone.
pub async fn recheck(
    caller: &Caller,
    scope: &Scope,
    before: &Observations,
    acted_at: DateTime<Utc>,
    target: &str,
) -> Condition {
    let Some((finding, root)) = cause_finding(before) else {
        return Condition::Nothing;
    };
    let tools = caller.tools.clone();
    let now = tools.now();
    let kinds = kinds_of(before, &finding);
    let wants = |prefix: &str| kinds.iter().any(|k| k.starts_with(prefix));
    let fresh = Scope {
        now,
        ..scope.clone()
    };

    // A level shift stays in a metric's history after it is fixed: the question is where the
    // measured series is now, against its levels before and after the step.
    if finding.analyzer == "metric_step" {
        return recheck_step(caller, before, &finding, now).await;
    }

    let mut lanes: Vec<&str> = Vec::new();
    if wants("kubernetes/") && tools.has("kubernetes") {
        lanes.push("kubernetes");
    }
    if (wants("metrics") || wants("alert_rules")) && tools.has("prometheus") {
        lanes.push("metrics");
    }
    if wants("logs") && tools.has("loki") {
        lanes.push("logs");
    }
    if lanes.is_empty() {
        return Condition::Unknown(format!(
            "the evidence behind \"{}\" ({}) cannot be gathered again here",
            finding.summary,
            if kinds.is_empty() {
                "no evidence kind".to_string()
            } else {
                kinds.join(", ")
            }
        ));
    }
    let gathered = futures::future::join_all(
        lanes
            .iter()
            .map(|l| specialists::run(l, caller.fresh("verify"), &fresh)),
    )
    .await;
    let mut after = Observations::default();
    for o in gathered {
        specialists::merge(&mut after, o);
    }
    // Only logs written since the action say whether the failure still speaks.
    after
        .pod_logs
        .retain(|l| l.at.is_some_and(|t| t >= acted_at));
    after.logs.retain(|l| l.at.is_some_and(|t| t >= acted_at));
    // The cause is re-judged only on the same kinds of evidence it was found in.
    // (Logs are read only from pods still in trouble, so a fixed workload has none: their
    // absence counts only against a cause found in logs.)
    let log_based = finding.analyzer.starts_with("log_");
    let missing: Vec<&String> = kinds
        .iter()
        .filter(|k| log_based || !matches!(k.as_str(), "kubernetes/pod_logs" | "logs"))
        .filter(|k| after.evidence_of(k).is_empty())
        .collect();
    if !missing.is_empty() {
        return Condition::Unknown(format!(
            "{} could not be read again, so \"{}\" cannot be re-checked",
            missing
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            finding.summary
        ));
    }
    if log_based && after.pod_logs.is_empty() && after.logs.is_empty() {
        return Condition::Unknown(format!(
            "no fresh evidence for \"{}\" since the action",
            finding.summary
        ));
    }
    after.alert = before.alert.clone();
    after.problem = before.problem.clone();
    after.expr = before.expr.clone();
    after.now = now;
    let again = analyze(&after);
    let cite = |f: &Finding| f.evidence.last().cloned();
    // Still the cause: the same analyzer finds it, and it still explains something (a node that
    // stays down with none of the subject's pods on it is context, no longer the cause).
    let still_a_cause = again
        .hypotheses
        .iter()
        .any(|h| h.category == finding.category);
    match again
        .findings
        .iter()
        .find(|f| f.analyzer == finding.analyzer && f.category == finding.category)
        .filter(|_| still_a_cause)
    {
        Some(f) => {
            let name = target.rsplit('/').next().unwrap_or("");
            let moved_off = !name.is_empty()
                && root.contains(name)
                && !again
                    .hypotheses
                    .iter()
                    .any(|h| h.category == finding.category && h.statement.contains(name));
            if moved_off {
                Condition::Cleared(
                    format!(
                        "{} still finds \"{}\", but it no longer involves {target}",
                        finding.analyzer, f.summary
                    ),
                    cite(f),
                )
            } else {
                Condition::Holds(
                    format!("{} still finds: {}", finding.analyzer, f.summary),
                    cite(f),
                )
            }
        }
        None => {
            let shown = kinds
                .iter()
                .flat_map(|k| after.evidence_of(k))
                .collect::<Vec<_>>();
            Condition::Cleared(
                format!(
                    "{} no longer finds \"{}\" in {}",
                    finding.analyzer,
                    finding.summary,
                    if shown.is_empty() {
                        "the fresh evidence".to_string()
                    } else {
                        shown.join(", ")
                    }
                ),
                shown.last().cloned(),
            )
        }
    }
}

/// Re-query the series whose step was the cause and compare its latest value with its levels.
async fn recheck_step(
    caller: &Caller,
    before: &Observations,
    finding: &Finding,
    now: DateTime<Utc>,
) -> Condition {
    // The stepped series that got worse, the one the finding is about: its query is its name.
    let stepped: Vec<(&crate::model::Series, f64, f64)> = before
        .metrics
        .iter()
        .filter_map(|s| level_shift(&s.points).map(|(_, b, a)| (s, b, a)))
        .filter(|(s, _, _)| !s.name.ends_with("_build_info"))
        .collect();
    let Some((series, lo, hi)) = stepped
        .iter()
        .find(|(s, _, _)| finding.summary.contains(&s.name))
        .or_else(|| stepped.iter().find(|(_, b, a)| a > b))
        .copied()
    else {
        return Condition::Unknown("the stepped series is not in the gathered metrics".into());
    };
    // The series is asked again of the source it came from.
    let (tool, source) = if series.labels.contains_key(DATADOG_METRIC) {
        ("datadog.metrics.query", "datadog")
    } else {
        ("prometheus.query_range", "prometheus")
    };
    if !caller.tools.has(source) {
        return Condition::Unknown(format!(
            "{source} is not configured, so the step cannot be re-measured"
        ));
    }
    let mut p = params([
        ("query", s(&series.name)),
        (
            "start",
            s((now - ChronoDuration::minutes(30))
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        ),
        (
            "end",
            s(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        ),
    ]);
    if source == "prometheus" {
        p.insert("step".into(), json!(30));
    }
    let after = Mutex::new(Observations::default());
    let c = caller.fresh("verify");
    let got = c.call(tool, p, &Chart::default(), &after).await;
    let Some((ToolOutput::Series(v), id)) = got else {
        return Condition::Unknown(format!("re-query of {} failed", series.name));
    };
    let last = v
        .iter()
        .find(|x| x.labels == series.labels)
        .or(v.first())
        .and_then(|x| x.points.iter().rev().find(|p| p.1.is_finite()))
        .map(|p| p.1);
    let Some(last) = last else {
        return Condition::Unknown(format!("re-query of {} returned no samples", series.name));
    };
    let fmt = |x: f64| {
        format!("{x:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    if (last - lo).abs() < (last - hi).abs() {
        Condition::Cleared(
            format!(
                "{} is back to {} (was {} before the step, {} after)",
                short(&series.name),
                fmt(last),
                fmt(lo),
                fmt(hi)
            ),
            Some(id),
        )
    } else {
        Condition::Holds(
            format!(
                "{} is still at {} (step {} → {})",
                short(&series.name),
                fmt(last),
                fmt(lo),
                fmt(hi)
            ),
            Some(id),
        )
    }
}

/// The label a series read from Datadog carries its metric in.
const DATADOG_METRIC: &str = "datadog_metric";

fn short(q: &str) -> String {
    if q.chars().count() > 90 {
        format!("{}…", q.chars().take(87).collect::<String>())
    } else {
        q.to_string()
    }
}

/// Re-query what the action should have fixed and compare with before.
pub async fn verify(
    caller: &Caller,
    scope: &Scope,
    action: &Action,
    before: &Observations,
) -> Verification {
    let tools = caller.tools.clone();
    let acted_at = tools.now();
    let caller = caller.fresh("verify");
    let after = Mutex::new(Observations::default());
    let ns = action
        .params
        .get("namespace")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .or_else(|| scope.namespace.clone());
    let (target_kind, target_name) = action
        .target
        .split_once('/')
        .map(|(k, n)| (k.to_string(), n.to_string()))
        .unwrap_or_default();
    let mut checks: Vec<(bool, String)> = Vec::new();
    let mut before_id = None;
    let mut after_id = None;
    let action_marker = Marker {
        at: tools.now().timestamp() as f64,
        label: format!("{} ({})", action.kind, action.id),
    };

    if action.kind.starts_with("kubernetes.") && tools.has("kubernetes") {
        before_id = before.evidence_of("kubernetes/pods").last().cloned();
        let got = caller
            .call(
                "kubernetes.pods",
                params([("namespace", ns.clone().and_then(s))]),
                &Chart::default(),
                &after,
            )
            .await;
        if let Some((ToolOutput::Pods(pods), id)) = got {
            after_id = Some(id);
            let owner = if target_kind == "deployment" {
                Some(target_name.clone())
            } else {
                scope.workload.clone()
            };
            let scope = Scope {
                workload: owner,
                ..scope.clone()
            };
            let mine: Vec<&PodFacts> = pods
                .iter()
                .filter(|p| scope.owns_pod(p) && !p.deleting)
                .collect();
            let mine: Vec<&PodFacts> = if target_kind == "pod" {
                pods.iter()
                    .filter(|p| p.name == target_name && !p.deleting)
                    .collect()
            } else {
                mine
            };
            let bad: Vec<String> = mine
                .iter()
                .filter(|p| !healthy_pod(p))
                .map(|p| p.name.clone())
                .collect();
            checks.push(match (mine.len(), bad.is_empty()) {
                (0, _) => (false, format!("no running pod for {}", action.target)),
                (n, true) => (
                    true,
                    format!("{n} pod(s) of {} running and ready", action.target),
                ),
                (n, false) => (
                    false,
                    format!(
                        "{} of {n} pod(s) still unhealthy: {}",
                        bad.len(),
                        bad.join(", ")
                    ),
                ),
            });
        }
        if target_kind == "deployment"
            && let Some(ns) = &ns
        {
            let got = caller
                .call(
                    "kubernetes.deployments",
                    params([("namespace", s(ns))]),
                    &Chart::default(),
                    &after,
                )
                .await;
            if let Some((ToolOutput::Deployments(deps), _)) = got
                && let Some(d) = deps.iter().find(|d| d.name == target_name)
            {
                let want = action
                    .params
                    .get("replicas")
                    .and_then(|v| v.as_u64())
                    .map(|r| r as u32)
                    .unwrap_or(d.replicas);
                let ok = d.ready_replicas >= want && d.replicas >= want && want > 0;
                checks.push((
                    ok,
                    format!(
                        "deployment {} {}/{} ready (want {want})",
                        d.name, d.ready_replicas, d.replicas
                    ),
                ));
            }
        }
    }

    if action.kind.starts_with("postgres.") && tools.has("postgres") {
        before_id = before.evidence_of("postgres/locks").last().cloned();
        let got = caller
            .call(
                "postgres.locks",
                super::tools::Params::new(),
                &Chart::default(),
                &after,
            )
            .await;
        if let Some((ToolOutput::Postgres(rows), id)) = got {
            after_id = Some(id);
            checks.push(pg_check(action, &target_name, &rows));
        }
    }

    // The alert's own expression, asked again of where it lives: a Datadog monitor's metric
    // query of Datadog, PromQL of Prometheus.
    let monitor = scope.alert.as_ref().and_then(|a| a.monitor_query());
    let requery = match (&scope.expr, monitor) {
        (Some(expr), Some(_)) if tools.has("datadog") => {
            crate::integrations::datadog::metric_query(expr)
                .map(|q| (expr, q, "datadog.metrics.query"))
        }
        (Some(expr), None) if tools.has("prometheus") => {
            Some((expr, split_threshold(expr).0, "prometheus.query_range"))
        }
        _ => None,
    };
    if let Some((expr, base, tool)) = requery {
        let threshold = split_threshold(expr).1;
        let chart = Chart {
            threshold: threshold.map(|t| t.value),
            markers: vec![action_marker],
        };
        let now = tools.now();
        let mut p = params([
            ("query", s(&base)),
            (
                "start",
                s((now - ChronoDuration::minutes(30))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            ),
            (
                "end",
                s((now + ChronoDuration::minutes(15))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            ),
        ]);
        if tool.starts_with("prometheus.") {
            p.insert("step".into(), json!(30));
        }
        let got = caller.call(tool, p, &chart, &after).await;
        if let (Some((ToolOutput::Series(series), id)), Some(t)) = (got, threshold) {
            if before_id.is_none() {
                before_id = before.evidence_of("metrics").first().cloned();
            }
            if after_id.is_none() {
                after_id = Some(id);
            }
            let last: Vec<f64> = series
                .iter()
                .filter_map(|s| s.points.last().map(|p| p.1))
                .collect();
            let firing: Vec<f64> = last.iter().copied().filter(|v| t.breached(*v)).collect();
            if !last.is_empty() {
                checks.push(match firing.first() {
                    None => (
                        true,
                        format!(
                            "alert expression back within {} {} (now {})",
                            t.op,
                            t.value,
                            last.iter()
                                .map(|v| format!("{v:.3}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ),
                    Some(v) => (
                        false,
                        format!("alert expression still firing: {v:.3} {} {}", t.op, t.value),
                    ),
                });
            }
        }
    }

    // The cause's own condition decides; the checks above say what else was seen.
    let condition = recheck(&caller, scope, before, acted_at, &action.target).await;
    let (verdict, lead) = match &condition {
        Condition::Cleared(text, id) => {
            if let Some(id) = id {
                after_id = Some(id.clone());
            }
            (Some(true), format!("ok: {text}"))
        }
        Condition::Holds(text, id) => {
            if let Some(id) = id {
                after_id = Some(id.clone());
            }
            (Some(false), format!("FAILED: {text}"))
        }
        Condition::Unknown(text) => (None, format!("unknown: {text}")),
        Condition::Nothing => (None, String::new()),
    };
    let checks_ok = checks.iter().all(|(ok, _)| *ok);
    let (passed, unknown) = match (verdict, &condition) {
        (Some(cleared), _) => (cleared && checks_ok, false),
        // No cause to re-check (a healthy verdict's silence): the direct checks decide.
        (None, Condition::Nothing) if !checks.is_empty() => (checks_ok, false),
        (None, _) if !checks_ok => (false, false),
        (None, _) => (false, true),
    };
    let mut parts: Vec<String> = Vec::new();
    if !lead.is_empty() {
        parts.push(lead);
    }
    parts.extend(
        checks
            .into_iter()
            .map(|(ok, s)| format!("{} {s}", if ok { "ok:" } else { "FAILED:" })),
    );
    if parts.is_empty() {
        parts.push(format!(
            "unknown: {} reported success, and nothing could be re-queried to confirm it",
            action.kind
        ));
    }
    Verification {
        action_id: Some(action.id.clone()),
        passed,
        unknown,
        summary: parts.join("; "),
        before: before_id,
        after: after_id,
    }
}

/// After a cancel or terminate: the backend blocks nobody any more (and, terminated, is gone).
fn pg_check(action: &Action, pid: &str, rows: &[crate::model::PgFact]) -> (bool, String) {
    let pid: i64 = pid.trim().parse().unwrap_or(0);
    let backends: Vec<&crate::model::PgBackend> = rows
        .iter()
        .filter_map(|f| match f {
            crate::model::PgFact::Backend(b) => Some(b.as_ref()),
            _ => None,
        })
        .collect();
    let blocked: Vec<i64> = backends
        .iter()
        .filter(|b| b.blocked_by.contains(&pid))
        .map(|b| b.pid)
        .collect();
    let waiting = backends.iter().filter(|b| !b.blocked_by.is_empty()).count();
    let still_there = backends.iter().any(|b| b.pid == pid);
    if !blocked.is_empty() {
        return (
            false,
            format!(
                "backend {pid} still blocks {} session(s) ({})",
                blocked.len(),
                blocked
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    if action.kind == "postgres.terminate_backend" && still_there {
        return (false, format!("backend {pid} is still in a lock chain"));
    }
    (
        true,
        format!("backend {pid} blocks nobody now; {waiting} session(s) wait on locks"),
    )
}

fn healthy_pod(p: &PodFacts) -> bool {
    (p.phase == "Running" && p.ready())
        && p.containers
            .iter()
            .all(|c| c.ready && c.reason.is_none() && c.state == "running")
}

#[cfg(test)]
mod tests {
    use super::super::journal::{Journal, Sink};
    use super::super::tools::{Params, Tools};
    use super::*;
    use crate::model::{Alert, ContainerFacts, DeploymentFacts, Risk, Series};
    use futures::future::BoxFuture;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-07-01T09:00:00Z")
            .map(|d| d.to_utc())
            .unwrap_or_default()
    }

    /// A world after the action: pods as given (or failing reads), one query answer.
    struct After {
        pods: Option<Vec<PodFacts>>,
        series: Option<Vec<Series>>,
    }

    impl Tools for After {
        fn now(&self) -> DateTime<Utc> {
            now()
        }
        fn has(&self, i: &str) -> bool {
            matches!(i, "kubernetes" | "prometheus")
        }
        fn call<'a>(
            &'a self,
            tool: &'a str,
            _: &'a Params,
        ) -> BoxFuture<'a, Result<ToolOutput, String>> {
            let out = match tool {
                "kubernetes.pods" => self.pods.clone().map(ToolOutput::Pods),
                "kubernetes.deployments" | "kubernetes.replica_sets" => {
                    Some(ToolOutput::Deployments(vec![DeploymentFacts {
                        name: "api".into(),
                        namespace: "web".into(),
                        replicas: 1,
                        ready_replicas: 1,
                        available_replicas: 1,
                        updated_replicas: 1,
                        ..DeploymentFacts::default()
                    }]))
                }
                "kubernetes.events" => Some(ToolOutput::Events(Vec::new())),
                "kubernetes.nodes" => Some(ToolOutput::Nodes(Vec::new())),
                "kubernetes.pod_logs" => Some(ToolOutput::Logs(Vec::new())),
                "prometheus.query_range" => self.series.clone().map(ToolOutput::Series),
                _ => None,
            };
            Box::pin(async move { out.ok_or_else(|| format!("{tool}: connection refused")) })
        }
        fn execute<'a>(&'a self, _: &'a Action) -> BoxFuture<'a, Result<String, String>> {
            Box::pin(async { Ok("done".into()) })
        }
    }

    fn caller(after: After) -> Caller {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        Caller {
            tools: Arc::new(after),
            journal: Arc::new(std::sync::Mutex::new(Journal::new(Sink::None, tx))),
            timeout: std::time::Duration::from_secs(5),
            specialist: "verify".into(),
            seen: Arc::default(),
            credentials: Arc::new(crate::agent::credentials::CredentialGate::new(
                std::time::Duration::from_secs(1),
            )),
            cluster: None,
        }
    }

    fn pod(crashing: bool) -> PodFacts {
        PodFacts {
            name: "api-6d8-x".into(),
            namespace: "web".into(),
            phase: "Running".into(),
            owner: Some("ReplicaSet/api-6d8".into()),
            labels: BTreeMap::from([
                ("app".to_string(), "api".to_string()),
                ("pod-template-hash".to_string(), "6d8".to_string()),
            ]),
            conditions: BTreeMap::from([(
                "Ready".to_string(),
                if crashing { "False" } else { "True" }.to_string(),
            )]),
            containers: vec![ContainerFacts {
                name: "api".into(),
                ready: !crashing,
                state: if crashing { "waiting" } else { "running" }.into(),
                reason: crashing.then(|| "CrashLoopBackOff".to_string()),
                restart_count: if crashing { 9 } else { 0 },
                last_reason: crashing.then(|| "Error".to_string()),
                last_exit_code: crashing.then_some(2),
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    fn alert() -> Alert {
        Alert {
            labels: BTreeMap::from([
                ("alertname".to_string(), "ApiDown".to_string()),
                ("namespace".to_string(), "web".to_string()),
                ("deployment".to_string(), "api".to_string()),
            ]),
            starts_at: Some(now() - ChronoDuration::minutes(20)),
            ..Alert::default()
        }
    }

    fn crash_loop_before() -> Observations {
        Observations {
            alert: Some(alert()),
            now: now(),
            pods: vec![pod(true)],
            evidence: BTreeMap::from([("kubernetes/pods".to_string(), vec!["ev-1".to_string()])]),
            ..Observations::default()
        }
    }

    fn undo() -> Action {
        Action {
            id: "act-1".into(),
            kind: "kubernetes.rollout_undo".into(),
            target: "deployment/api".into(),
            params: BTreeMap::from([("namespace".to_string(), json!("web"))]),
            risk: Risk::High,
            rationale: String::new(),
            operation: String::new(),
            blast_radius: String::new(),
            evidence: Vec::new(),
        }
    }

    fn scope() -> Scope {
        Scope::from_alert(&alert(), now())
    }

    #[tokio::test]
    async fn the_cause_gone_passes_citing_the_fresh_evidence() {
        let before = crash_loop_before();
        let (f, _) = cause_finding(&before).expect("a cause");
        assert_eq!(f.analyzer, "crash_loop");
        let after = After {
            pods: Some(vec![pod(false)]),
            series: None,
        };
        let v = verify(&caller(after), &scope(), &undo(), &before).await;
        assert!(v.passed && !v.unknown, "{v:?}");
        assert!(
            v.summary.starts_with("ok: crash_loop no longer finds"),
            "{}",
            v.summary
        );
        assert!(
            v.after.as_deref().is_some_and(|id| id.starts_with("ev")),
            "{v:?}"
        );
    }

    #[tokio::test]
    async fn the_cause_still_there_fails() {
        let before = crash_loop_before();
        let after = After {
            pods: Some(vec![pod(true)]),
            series: None,
        };
        let v = verify(&caller(after), &scope(), &undo(), &before).await;
        assert!(!v.passed && !v.unknown, "{v:?}");
        assert!(
            v.summary.contains("FAILED: crash_loop still finds"),
            "{}",
            v.summary
        );
    }

    #[tokio::test]
    async fn a_re_query_that_cannot_be_made_is_unknown() {
        let before = crash_loop_before();
        let after = After {
            pods: None,
            series: None,
        };
        let v = verify(&caller(after), &scope(), &undo(), &before).await;
        assert!(!v.passed && v.unknown, "{v:?}");
        assert!(
            v.summary
                .starts_with("unknown: kubernetes/pods could not be read again"),
            "{}",
            v.summary
        );
    }

    fn stepped(values: &[f64]) -> Series {
        Series {
            name: r#"sum(rate(req_total{code=~"5..",job="api"}[5m])) / sum(rate(req_total{job="api"}[5m]))"#.into(),
            labels: BTreeMap::new(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        (now() - ChronoDuration::minutes(60)).timestamp() as f64 + 60.0 * i as f64,
                        *v,
                    )
                })
                .collect(),
        }
    }

    #[tokio::test]
    async fn a_metric_step_is_re_measured_against_its_levels() {
        let mut values = vec![0.002; 30];
        values.extend(vec![0.2; 30]);
        let before = Observations {
            now: now(),
            problem: Some("api is returning errors".into()),
            metrics: vec![stepped(&values)],
            evidence: BTreeMap::from([("metrics".to_string(), vec!["ev-2".to_string()])]),
            ..Observations::default()
        };
        let (f, _) = cause_finding(&before).expect("a cause");
        assert_eq!(f.analyzer, "metric_step");
        let scope = Scope::from_problem("api is returning errors", now());
        let run = |tail: f64| {
            let mut after = vec![0.2; 20];
            after.extend(vec![tail; 10]);
            After {
                pods: None,
                series: Some(vec![stepped(&after)]),
            }
        };
        let v = verify(&caller(run(0.003)), &scope, &undo(), &before).await;
        assert!(v.summary.starts_with("ok: "), "{}", v.summary);
        assert!(v.summary.contains("back to 0.003"), "{}", v.summary);
        let v = verify(&caller(run(0.19)), &scope, &undo(), &before).await;
        assert!(
            !v.passed && v.summary.contains("still at 0.19"),
            "{}",
            v.summary
        );
        let v = verify(
            &caller(After {
                pods: None,
                series: None,
            }),
            &scope,
            &undo(),
            &before,
        )
        .await;
        assert!(v.unknown && !v.passed, "{v:?}");
    }
}
