//! Runbook steps: a runbook's gather calls, its diagnose findings and its action proposals,
//! rendered against the template context (scope, facts, diagnosis).

use super::evidence::Chart;
use super::specialists::{Caller, Scope};
use crate::model::{Action, Category, Event, Finding, PodFacts, catalog};
use crate::reason::{Analysis, Observations};
use crate::runbook::{self, Runbook, Step};
use serde_json::json;
use std::sync::Mutex;

/// The warning for a step that could not run (bad condition or template).
pub fn step_warning(rb: &Runbook, n: usize, e: &str) -> String {
    format!("runbook {} step {} skipped: {e}", rb.name, n + 1)
}

/// Whether a step's `when` holds; a broken condition is a warning and skips the step.
fn holds(rb: &Runbook, n: usize, when: &str, ctx: &serde_json::Value) -> Result<bool, String> {
    runbook::eval_when(when, ctx).map_err(|e| step_warning(rb, n, &e))
}

/// Run the runbook's gather steps as one more lane of the Gather stage.
pub async fn gather(rb: &Runbook, caller: &Caller, scope: &Scope) -> Observations {
    let obs = Mutex::new(Observations::default());
    let caller = caller.for_specialist(&format!("runbook:{}", rb.name));
    let ctx = context(scope, &Observations::default(), None);
    let warn = |message: String| caller.emit(Event::Warning { message });
    for (n, step) in rb.steps.iter().enumerate() {
        let Step::Gather(g) = step else { continue };
        if let Some(w) = &g.when {
            match holds(rb, n, &w.value, &ctx) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    warn(e);
                    continue;
                }
            }
        }
        match runbook::render_params(&g.params, &ctx) {
            Ok(p) => {
                caller.call(&g.tool.value, p, &Chart::default(), &obs).await;
            }
            Err(e) => warn(step_warning(rb, n, &e)),
        }
    }
    obs.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The runbook's diagnose steps whose condition holds, as findings, in step order; a step that
/// cannot be evaluated is an `Err` warning in its place.
pub fn findings(
    rb: &Runbook,
    ctx: &serde_json::Value,
    obs: &Observations,
) -> Vec<Result<Finding, String>> {
    let mut out = Vec::new();
    for (n, step) in rb.steps.iter().enumerate() {
        let Step::Diagnose(d) = step else { continue };
        match holds(rb, n, &d.when.value, ctx) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        }
        out.push(match runbook::render(&d.summary.value, ctx) {
            Ok(summary) => Ok(Finding {
                analyzer: format!("runbook:{}", rb.name),
                summary,
                detail: String::new(),
                category: Category::parse(&d.category.value).unwrap_or_default(),
                confidence: d.confidence.unwrap_or(0.6),
                evidence: obs.evidence_of_kinds(&["kubernetes/pods", "kubernetes/nodes"]),
            }),
            Err(e) => Err(step_warning(rb, n, &e)),
        });
    }
    out
}

/// The runbook's action steps whose condition holds, rendered (ids and operation text are the
/// Recommend stage's); a step that cannot be rendered is an `Err` warning in its place.
pub fn actions(
    rb: &Runbook,
    ctx: &serde_json::Value,
    obs: &Observations,
) -> Vec<Result<Action, String>> {
    let mut out = Vec::new();
    for (n, step) in rb.steps.iter().enumerate() {
        let Step::Action(a) = step else { continue };
        if let Some(w) = &a.when {
            match holds(rb, n, &w.value, ctx) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            }
        }
        let rendered = (|| -> Result<Action, String> {
            let mut params = runbook::render_params(&a.params, ctx)?;
            let target = runbook::render(&a.target.value, ctx)?;
            catalog::admit(&a.tool.value, &target, &mut params)?;
            let rationale = runbook::render(&a.rationale.value, ctx)?;
            let blast_radius = runbook::render(&a.blast_radius, ctx)?;
            Ok(Action {
                id: String::new(),
                kind: a.tool.value.clone(),
                operation: catalog::operation(&a.tool.value, &target, &params),
                target,
                params,
                risk: Runbook::risk_of(a),
                rationale: format!("{rationale} (runbook {})", rb.name),
                blast_radius,
                evidence: obs.evidence_of_kinds(&[
                    "kubernetes/pods",
                    "kubernetes/deployments",
                    "kubernetes/nodes",
                    "metrics",
                    "logs",
                    "changes",
                ]),
            })
        })();
        out.push(rendered.map_err(|e| step_warning(rb, n, &e)));
    }
    out
}

/// The template context for runbook steps.
pub fn context(s: &Scope, obs: &Observations, analysis: Option<&Analysis>) -> serde_json::Value {
    let mut scope = serde_json::Map::new();
    for (k, v) in [
        ("namespace", &s.namespace),
        ("workload", &s.workload),
        ("pod", &s.pod),
        ("node", &s.node),
        ("repo", &s.repo),
        ("expr", &s.expr),
    ] {
        if let Some(v) = v {
            scope.insert(k.into(), json!(v));
        }
    }
    scope.insert("now".into(), json!(s.now.to_rfc3339()));
    scope.insert("onset".into(), json!(s.onset.to_rfc3339()));
    let mut ctx = serde_json::Map::new();
    if let Some(a) = &s.alert {
        ctx.insert(
            "alert".into(),
            json!({"name": a.name(), "labels": a.labels, "annotations": a.annotations,
                   "status": a.status}),
        );
    }
    if let Some(p) = &s.problem {
        ctx.insert("problem".into(), json!(p));
    }
    ctx.insert("scope".into(), serde_json::Value::Object(scope));
    ctx.insert("facts".into(), facts(obs, s));
    if let Some(a) = analysis {
        ctx.insert(
            "diagnosis".into(),
            json!({"category": a.category.name(), "root_cause": a.root_cause,
                   "confidence": a.confidence}),
        );
        ctx.insert(
            "findings".into(),
            json!(
                a.findings
                    .iter()
                    .map(|f| f.analyzer.clone())
                    .collect::<Vec<_>>()
            ),
        );
    }
    serde_json::Value::Object(ctx)
}

/// Facts runbook templates and conditions can use.
fn facts(obs: &Observations, scope: &Scope) -> serde_json::Value {
    let not_ready_nodes: Vec<String> = obs
        .nodes
        .iter()
        .filter(|n| !n.ready())
        .map(|n| n.name.clone())
        .collect();
    let on_lost_node = |p: &&PodFacts| p.node.as_ref().is_some_and(|n| not_ready_nodes.contains(n));
    let mut stuck: Vec<&PodFacts> = obs
        .pods
        .iter()
        .filter(on_lost_node)
        .filter(|p| p.deleting || p.phase == "Unknown")
        .collect();
    // A StatefulSet pod is the one that will not come back on its own.
    stuck.sort_by_key(|p| {
        !p.owner
            .as_deref()
            .is_some_and(|o| o.starts_with("StatefulSet/"))
    });
    let reason_pods = |reasons: &[&str]| -> Vec<String> {
        obs.pods
            .iter()
            .filter(|p| {
                p.containers.iter().any(|c| {
                    c.reason.as_deref().is_some_and(|r| reasons.contains(&r))
                        || c.last_reason
                            .as_deref()
                            .is_some_and(|r| reasons.contains(&r))
                })
            })
            .map(|p| p.name.clone())
            .collect()
    };
    let image_pull_deployments: Vec<String> = {
        let mut v: Vec<String> = obs
            .pods
            .iter()
            .filter(|p| {
                p.containers.iter().any(|c| {
                    matches!(
                        c.reason.as_deref(),
                        Some("ImagePullBackOff") | Some("ErrImagePull") | Some("InvalidImageName")
                    )
                })
            })
            .filter_map(|p| p.owner.as_deref()?.strip_prefix("ReplicaSet/"))
            .filter_map(|rs| rs.rsplit_once('-').map(|(d, _)| d.to_string()))
            .collect();
        v.dedup();
        v
    };
    let unready_deployments: Vec<String> = obs
        .deployments
        .iter()
        .filter(|d| d.replicas > 0 && d.ready_replicas == 0)
        .filter(|d| scope.workload.as_deref() != Some(d.name.as_str()))
        .map(|d| d.name.clone())
        .collect();
    let workload_replicas = scope
        .workload
        .as_ref()
        .and_then(|w| obs.deployments.iter().find(|d| &d.name == w))
        .map(|d| d.replicas)
        .unwrap_or(0);
    let mut rollouts: Vec<&crate::model::DeploymentFacts> = obs
        .replica_sets
        .iter()
        .filter(|r| {
            scope
                .workload
                .as_ref()
                .is_none_or(|w| r.name.starts_with(&format!("{w}-")))
        })
        .collect();
    rollouts.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    json!({
        "not_ready_nodes": not_ready_nodes,
        "stuck_pods": stuck.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        "stuck_pod_namespaces": stuck.iter().map(|p| p.namespace.clone()).collect::<Vec<_>>(),
        "oom_killed_pods": reason_pods(&["OOMKilled"]),
        "crashlooping_pods": reason_pods(&["CrashLoopBackOff"]),
        "image_pull_deployments": image_pull_deployments,
        "unready_deployments": unready_deployments,
        "workload_replicas": workload_replicas,
        "rollouts": rollouts.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        "evidence": obs.evidence.keys().collect::<Vec<_>>(),
    })
}
