//! Verification: after an action ran, re-query what it should have fixed and compare with the
//! evidence the diagnosis rested on.

use super::evidence::Chart;
use super::specialists::{Caller, Scope, split_threshold};
use super::tools::{ToolOutput, params, s};
use crate::model::{Action, Marker, PodFacts, Verification};
use crate::reason::Observations;
use chrono::Duration as ChronoDuration;
use serde_json::json;
use std::sync::Mutex;

/// Re-query what the action should have fixed and compare with before.
pub async fn verify(
    caller: &Caller,
    scope: &Scope,
    action: &Action,
    before: &Observations,
) -> Verification {
    let tools = caller.tools.clone();
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

    if let Some(expr) = &scope.expr
        && tools.has("prometheus")
    {
        let (base, threshold) = split_threshold(expr);
        let chart = Chart {
            threshold: threshold.map(|t| t.value),
            markers: vec![action_marker],
        };
        let now = tools.now();
        let got = caller
            .call(
                "prometheus.query_range",
                params([
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
                    ("step", Some(json!(30))),
                ]),
                &chart,
                &after,
            )
            .await;
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

    if checks.is_empty() {
        checks.push((
            true,
            format!(
                "{} reported success; nothing further to re-query",
                action.kind
            ),
        ));
    }
    let passed = checks.iter().all(|(ok, _)| *ok);
    Verification {
        action_id: Some(action.id.clone()),
        passed,
        summary: checks
            .into_iter()
            .map(|(ok, s)| format!("{} {s}", if ok { "ok:" } else { "FAILED:" }))
            .collect::<Vec<_>>()
            .join("; "),
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
