//! Alert storms: many alerts at once are grouped into one finding, and called spurious when the subject is demonstrably healthy.

use super::{Basis, Decl, Role};
use crate::model::{AlertInfo, Category, RuledOut};
use crate::reason::{Ctx, Signal, list_names};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "alert_storm",
    title: "many alerts at once",
    concern: "storm",
    role: Role::Context,
    reads: &[],
}];

/// Fewer firing alerts than this is not a storm.
const STORM: usize = 5;

pub(crate) fn storm(ctx: &Ctx) -> Vec<Signal> {
    let mut firing: Vec<&AlertInfo> = Vec::new();
    for a in ctx
        .obs
        .alerts
        .iter()
        .filter(|a| matches!(a.state.as_str(), "active" | "firing"))
    {
        if !firing.iter().any(|b| b.labels == a.labels) {
            firing.push(a);
        }
    }
    if firing.len() < STORM {
        return Vec::new();
    }
    let mut names: Vec<(String, usize)> = Vec::new();
    for a in &firing {
        match names.iter_mut().find(|(n, _)| *n == a.name) {
            Some(slot) => slot.1 += 1,
            None => names.push((a.name.clone(), 1)),
        }
    }
    names.sort_by_key(|n| std::cmp::Reverse(n.1));
    let started: Vec<_> = firing.iter().filter_map(|a| a.active_at).collect();
    let span = match (started.iter().min(), started.iter().max()) {
        (Some(a), Some(b)) => format!(
            " within {:.0} min ({}–{})",
            (*b - *a).num_seconds() as f64 / 60.0,
            a.format("%H:%M"),
            b.format("%H:%M")
        ),
        _ => String::new(),
    };
    let listed: Vec<String> = names.iter().map(|(n, c)| format!("{n} x{c}")).collect();
    let evidence = ctx.ev(&["alerts"]);
    let pods: Vec<_> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting)
        .collect();
    let healthy = !pods.is_empty()
        && pods.iter().all(|p| p.ready())
        && ctx.obs.nodes.iter().all(|n| n.ready())
        && pods.iter().all(|p| {
            p.containers
                .iter()
                .filter_map(|c| c.last_finished_at)
                .all(|t| ctx.minutes_ago(t) > 30.0)
        });
    let summary = format!(
        "alert storm: {} alerts firing{span} ({})",
        firing.len(),
        list_names(&listed, 4)
    );
    if !healthy {
        // Context: the storm is a set of symptoms; the ranked cause explains it.
        return vec![Signal {
            analyzer: "alert_storm",
            summary,
            detail: "many alerts at once usually share one cause; they are grouped here, not diagnosed one by one".into(),
            category: Category::Unknown,
            basis: Basis::Context,
            links: 1,
            evidence,
            ..Signal::default()
        }];
    }
    let scope = ctx.scope_name("the workload");
    let pod_names: Vec<String> = pods.iter().map(|p| p.name.clone()).collect();
    vec![Signal {
        analyzer: "alert_storm",
        summary: summary.clone(),
        category: Category::Healthy,
        // The firing alerts counted against the pods' own state: one more link than a log line.
        basis: Basis::Logged,
        links: 1,
        evidence: ctx.ev(&["alerts", "kubernetes/pods", "kubernetes/nodes"]),
        benign: true,
        cause: Some(format!(
            "Spurious alert storm: {} alerts fired{span} ({}) while {scope}'s {} pod(s) ({}) are Running and Ready with no restart in the last 30 minutes and every node is Ready; no user impact found, the alert rules are noisier than the service",
            firing.len(),
            list_names(&listed, 4),
            pods.len(),
            list_names(&pod_names, 3)
        )),
        ruled_out: vec![RuledOut {
            statement: "A real outage behind the alert storm".into(),
            reason: format!(
                "pods Ready throughout: {} Running and Ready, no recent restart",
                list_names(&pod_names, 3)
            ),
            evidence: ctx.ev(&["kubernetes/pods"]),
        }],
        ..Signal::default()
    }]
}
