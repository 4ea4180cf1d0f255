//! Recovery analyzers: resolved alerts, restarts long ago, old ReplicaSet churn after a finished rollout, all clear.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts, RuledOut};
use crate::reason::{Ctx, Signal, list_names, pod_deployment, pod_rs};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "restart_recovered",
        title: "restarts long past, Ready since",
        concern: "recovery",
        role: Role::Clearance,
        reads: &[],
    },
    Decl {
        id: "old_replicaset_churn",
        title: "old ReplicaSet winding down",
        concern: "recovery",
        role: Role::Clearance,
        reads: &[],
    },
    Decl {
        id: "alert_resolved",
        title: "alert resolved",
        concern: "recovery",
        role: Role::Clearance,
        reads: &[],
    },
    Decl {
        id: "all_clear",
        title: "nothing failing in what was gathered",
        concern: "recovery",
        role: Role::Absence,
        reads: &[],
    },
];

/// Minutes without restart-related warnings after which a pod counts as recovered.
pub(crate) const QUIET_MINUTES: f64 = 15.0;

/// When a pod last restarted or failed, from container status and its warning events.
fn last_trouble(ctx: &Ctx, pod: &PodFacts) -> Option<chrono::DateTime<chrono::Utc>> {
    let from_status = pod
        .containers
        .iter()
        .filter_map(|c| c.last_finished_at)
        .max();
    let from_events = ctx
        .events_for(&pod.name)
        .into_iter()
        .filter(|e| e.event_type == "Warning")
        .filter_map(|e| e.last_seen.or(e.first_seen))
        .max();
    from_status.max(from_events)
}

fn all_clear_pods<'a>(ctx: &Ctx<'a>) -> (Vec<&'a PodFacts>, Vec<&'a PodFacts>) {
    ctx.pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting)
        .partition(|p| p.ready())
}

pub(crate) fn recovered(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    out.extend(resolved_alert(ctx));
    out.extend(restarted_long_ago(ctx));
    out.extend(old_replicaset_churn(ctx));
    out.extend(all_clear(ctx));
    out
}

fn resolved_alert(ctx: &Ctx) -> Option<Signal> {
    let alert = ctx
        .obs
        .alert
        .as_ref()
        .filter(|_| ctx.obs.alert_resolved())?;
    let when = alert
        .ends_at
        .filter(|t| t.timestamp() > 0)
        .map(|t| format!(" at {}", t.format("%H:%M")))
        .unwrap_or_default();
    Some(Signal {
        analyzer: "alert_resolved",
        reads_symptom: true,
        summary: format!("alert {} is already resolved{when}", alert.name()),
        category: Category::Healthy,
        basis: Basis::Timed,
        links: 1,
        evidence: ctx.ev(&["alert", "alerts"]),
        benign: true,
        cause: Some(format!(
            "{} already resolved{when}; the condition cleared on its own",
            alert.name()
        )),
        ..Signal::default()
    })
}

/// Pods with restarts whose last trouble is long past and that are Ready now.
fn restarted_long_ago(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let (ready, not_ready) = all_clear_pods(ctx);
    if !not_ready.is_empty() {
        return out;
    }
    for pod in ready.into_iter().filter(|p| p.restarts() > 0) {
        let last = last_trouble(ctx, pod);
        let ago = last.map(|t| ctx.minutes_ago(t));
        if ago.is_some_and(|m| m < QUIET_MINUTES) {
            continue;
        }
        if ago.is_none() && pod.restarts() > 3 {
            continue;
        }
        // Restarts that keep a rhythm are paused, not over.
        if pod
            .containers
            .iter()
            .any(|c| crate::reason::checks::pods::restarts_recur(ctx, pod, c).is_some())
        {
            continue;
        }
        let when = match (last, ago) {
            (Some(t), Some(m)) => format!("last at {} ({m:.0} min ago)", t.format("%H:%M")),
            _ => "time unknown".into(),
        };
        let n = pod.restarts();
        let evidence = ctx.ev(&["kubernetes/pods", "kubernetes/events"]);
        out.push(Signal {
            analyzer: "restart_recovered",
            history: true,
            summary: format!("pod {} restarted {n} time(s), {when}; Running and Ready since", pod.name),
            category: Category::Healthy,
            basis: if ago.is_some() { Basis::Measured } else { Basis::Timed },
            links: 1,
            evidence: evidence.clone(),
            benign: true,
            cause: Some(format!(
                "Transient restart, already recovered: pod {} had {n} container restart(s), {when}, and has been Running and Ready since with no further restarts; the alert reports a past event and needs no action",
                pod.name
            )),
            ruled_out: vec![RuledOut {
                statement: "Ongoing crash loop".into(),
                reason: format!(
                    "not currently restarting: pod {} is Running and Ready, {n} restart(s) in total, {when}, and no warning event since",
                    pod.name
                ),
                evidence,
            }],
            objects: vec![format!("pod/{}", pod.name)],
            ..Signal::default()
        });
    }
    out
}

/// Failing pods of a superseded ReplicaSet that are being deleted after the rollout completed.
fn old_replicaset_churn(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for pod in ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.ready())
    {
        let Some(dep_name) = pod_deployment(pod) else {
            continue;
        };
        let current = ctx.current_rs(&dep_name);
        let superseded = current.is_some() && pod_rs(pod) != current;
        if !(pod.deleting || superseded) {
            continue;
        }
        let complete = ctx
            .deployment(&dep_name)
            .map(|d| d.updated_replicas >= d.replicas && d.available_replicas >= d.replicas)
            .unwrap_or(false);
        let new_ready: Vec<String> = ctx
            .pods()
            .into_iter()
            .filter(|p| !p.deleting && pod_rs(p) == current && p.ready())
            .map(|p| p.name.clone())
            .collect();
        if !complete || new_ready.is_empty() {
            continue;
        }
        let old_rs = pod_rs(pod).unwrap_or_else(|| "an old ReplicaSet".into());
        let new_rs = current.unwrap_or_default();
        let state = pod
            .containers
            .iter()
            .find_map(|c| c.reason.clone())
            .unwrap_or_else(|| "not Ready".into());
        let total = ctx
            .deployment(&dep_name)
            .map(|d| d.replicas)
            .unwrap_or(new_ready.len() as u32);
        let terminating = if pod.deleting {
            "is terminating (deletion requested)"
        } else {
            "is left over"
        };
        let evidence = ctx.ev(&[
            "kubernetes/pods",
            "kubernetes/deployments",
            "kubernetes/events",
        ]);
        out.push(Signal {
            analyzer: "old_replicaset_churn",
            history: true,
            summary: format!(
                "pod {} ({state}) belongs to old ReplicaSet {old_rs} and {terminating}; rollout to ReplicaSet {new_rs} is complete",
                pod.name
            ),
            category: Category::Healthy,
            basis: Basis::Stated,
            evidence: evidence.clone(),
            benign: true,
            cause: Some(format!(
                "Expected rollout churn, not a current failure: pod {} of old ReplicaSet {old_rs} {terminating} after deployment {dep_name}'s rollout finished; its {state} is shutdown noise while ReplicaSet {new_rs} serves with {}/{total} replicas Ready ({})",
                pod.name,
                new_ready.len(),
                list_names(&new_ready, 3)
            )),
            ruled_out: vec![RuledOut {
                statement: format!("Failing rollout of deployment {dep_name}"),
                reason: format!(
                    "not a current failure: the alerting pod {} is terminating with old ReplicaSet {old_rs}; new ReplicaSet {new_rs} has {}/{total} pods Running and Ready",
                    pod.name,
                    new_ready.len()
                ),
                evidence,
            }],
            objects: vec![format!("pod/{}", pod.name)],
            ..Signal::default()
        });
    }
    out
}

/// Everything in scope looks fine: pods Ready, nodes Ready, no recent warnings.
fn all_clear(ctx: &Ctx) -> Option<Signal> {
    let (ready, not_ready) = all_clear_pods(ctx);
    if !not_ready.is_empty() || ctx.obs.nodes.iter().any(|n| !n.ready()) {
        return None;
    }
    // Health needs positive evidence about the subject: Ready pods of it, or the node it names Ready.
    // Nothing seen is not the same as nothing wrong.
    let named_nodes_ready = !ctx.focus_nodes.is_empty()
        && ctx
            .focus_nodes
            .iter()
            .all(|n| ctx.obs.nodes.iter().any(|m| &m.name == n && m.ready()));
    if ready.is_empty() && !named_nodes_ready {
        return None;
    }
    // A metric alert is healthy on its own expression's word: Ready pods do not say errors stopped.
    if let Some(p) = crate::reason::metrics::parsed_alert(ctx)
        && ctx
            .obs
            .coverage
            .get("prometheus")
            .is_some_and(|c| c.configured)
    {
        let own = crate::reason::metrics::own_series(ctx, &p);
        if own.is_empty() {
            return None;
        }
        if let Some(t) = p.threshold
            && own
                .iter()
                .any(|s| s.points.last().is_some_and(|(_, v)| t.breached(*v)))
        {
            return None;
        }
    }
    let recent_warnings = ctx.events().into_iter().any(|e| {
        e.event_type == "Warning"
            && e.last_seen
                .or(e.first_seen)
                .is_none_or(|t| ctx.minutes_ago(t) < QUIET_MINUTES)
            && ctx
                .pods()
                .iter()
                .find(|p| p.name == crate::reason::object_name(&e.object))
                .is_none_or(|p| !p.deleting && ctx.pod_in_scope(p))
    });
    if recent_warnings {
        return None;
    }
    // Errors that began with the alert are the failure speaking, whatever the pods say.
    if crate::reason::logs::errors_since_onset(ctx) > 0 {
        return None;
    }
    let deps_ok = crate::reason::rollout::deployments_in_scope(ctx)
        .iter()
        .all(|d| d.available_replicas >= d.replicas);
    if !deps_ok {
        return None;
    }
    let firing: Vec<&str> = ctx
        .obs
        .rules
        .iter()
        .filter(|r| r.state.as_deref() == Some("firing"))
        .map(|r| r.name.as_str())
        .collect();
    let scope = ctx.scope_name("the workload");
    let pods = if ready.is_empty() {
        "no pods in scope".to_string()
    } else {
        format!("all {} pods Running and Ready", ready.len())
    };
    let nodes = if ctx.obs.nodes.is_empty() {
        String::new()
    } else {
        format!(
            ", {} node(s) Ready",
            ctx.obs
                .nodes
                .iter()
                .map(|n| &n.name)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        )
    };
    Some(Signal {
        analyzer: "all_clear",
        summary: format!("no failure found for {scope}: {pods}{nodes}, no recent warning events"),
        category: Category::Healthy,
        basis: if firing.is_empty() {
            Basis::Logged
        } else {
            Basis::Observed
        },
        evidence: ctx.ev(&[
            "kubernetes/pods",
            "kubernetes/nodes",
            "kubernetes/events",
            "kubernetes/deployments",
        ]),
        benign: true,
        cause: Some(format!(
            "No failure found: {scope} is operating normally: {pods}{nodes}, no warning events in the last {QUIET_MINUTES:.0} minutes{}",
            if firing.is_empty() {
                ", and no monitor is firing".to_string()
            } else {
                format!("; firing monitors: {}", firing.join(", "))
            }
        )),
        ..Signal::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContainerFacts, DeploymentFacts, K8sEventFacts};
    use crate::reason::Observations;
    use chrono::{Duration, Utc};
    use std::collections::BTreeMap;

    fn pod(name: &str, rs: &str, ready: bool, restarts: u32) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "a".into(),
            phase: "Running".into(),
            owner: Some(format!("ReplicaSet/{rs}")),
            created_at: Some(Utc::now() - Duration::hours(3)),
            conditions: BTreeMap::from([(
                "Ready".into(),
                if ready { "True" } else { "False" }.into(),
            )]),
            containers: vec![ContainerFacts {
                name: "c".into(),
                restart_count: restarts,
                ready,
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    #[test]
    fn old_restart_now_ready_is_recovered() {
        let now = Utc::now();
        let obs = Observations {
            now,
            pods: vec![
                pod("api-aa11-x", "api-aa11", true, 1),
                pod("api-aa11-y", "api-aa11", true, 0),
            ],
            events: vec![K8sEventFacts {
                event_type: "Warning".into(),
                reason: "BackOff".into(),
                object: "Pod/api-aa11-x".into(),
                last_seen: Some(now - Duration::minutes(70)),
                ..K8sEventFacts::default()
            }],
            ..Observations::default()
        };
        let sigs = recovered(&Ctx::new(&obs));
        let r = sigs.iter().find(|s| s.analyzer == "restart_recovered");
        let Some(r) = r else { panic!("{sigs:?}") };
        assert!(r.benign && r.category == Category::Healthy);
        assert!(r.ruled_out[0].reason.contains("not currently restarting"));
        assert!(r.summary.contains("70 min ago"), "{}", r.summary);
    }

    #[test]
    fn recent_restart_is_not_recovered() {
        let now = Utc::now();
        let mut p = pod("api-aa11-x", "api-aa11", true, 2);
        p.containers[0].last_finished_at = Some(now - Duration::minutes(3));
        let obs = Observations {
            now,
            pods: vec![p],
            ..Observations::default()
        };
        assert!(
            recovered(&Ctx::new(&obs))
                .iter()
                .all(|s| s.analyzer != "restart_recovered")
        );
    }

    #[test]
    fn terminating_old_replicaset_pod_after_finished_rollout_is_churn() {
        let mut old = pod("api-old1-z", "api-old1", false, 2);
        old.deleting = true;
        old.created_at = Some(Utc::now() - Duration::days(5));
        let mut fresh: Vec<PodFacts> = (0..2)
            .map(|i| pod(&format!("api-new2-{i}"), "api-new2", true, 0))
            .collect();
        fresh.push(old);
        let obs = Observations {
            now: Utc::now(),
            pods: fresh,
            deployments: vec![DeploymentFacts {
                name: "api".into(),
                replicas: 2,
                updated_replicas: 2,
                ready_replicas: 2,
                available_replicas: 2,
                ..DeploymentFacts::default()
            }],
            ..Observations::default()
        };
        let sigs = recovered(&Ctx::new(&obs));
        let churn = sigs.iter().find(|s| s.analyzer == "old_replicaset_churn");
        let Some(churn) = churn else {
            panic!("{sigs:?}")
        };
        let cause = churn.cause.clone().unwrap_or_default();
        assert!(
            cause.contains("api-old1")
                && cause.contains("api-new2")
                && cause.contains("terminating"),
            "{cause}"
        );
    }

    #[test]
    fn all_clear_needs_everything_ready() {
        let obs = Observations {
            now: Utc::now(),
            pods: vec![pod("a-1-x", "a-1", true, 0)],
            ..Observations::default()
        };
        assert!(
            recovered(&Ctx::new(&obs))
                .iter()
                .any(|s| s.analyzer == "all_clear")
        );
        let obs = Observations {
            now: Utc::now(),
            pods: vec![pod("a-1-x", "a-1", false, 0)],
            ..Observations::default()
        };
        assert!(
            recovered(&Ctx::new(&obs))
                .iter()
                .all(|s| s.analyzer != "all_clear")
        );
    }
}
