//! A workload scaled to zero: its spec asks for no replica, so nothing serves it whatever its
//! pods would do; the scale-down event (or the change that recorded it) dates it.

use super::{Basis, Decl, Role};
use crate::model::Category;
use crate::reason::{Ctx, Signal};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "scaled_to_zero",
    title: "workload scaled to zero",
    concern: "scaled_to_zero",
    role: Role::Failure,
    reads: &[],
}];

/// Check: does the subject's Deployment or StatefulSet ask for any replica? Failing when its
/// spec says 0; since the scale-down to 0 when an event or change recorded it.
pub(crate) fn scaled_to_zero(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let zero_deployments = ctx
        .obs
        .deployments
        .iter()
        .filter(|d| d.replicas == 0)
        .map(|d| ("Deployment", d.name.as_str(), d.namespace.as_str()));
    let zero_workloads = ctx
        .obs
        .workloads
        .iter()
        .filter(|w| w.kind == "StatefulSet" && w.desired == 0)
        .map(|w| ("StatefulSet", w.name.as_str(), w.namespace.as_str()));
    for (kind, name, ns) in zero_deployments.chain(zero_workloads) {
        if !ctx
            .subject
            .workloads
            .iter()
            .any(|(k, n)| k == kind && n == name)
        {
            continue;
        }
        let down = scale_down(ctx, name);
        let when = scale_down_text(down);
        let summary = format!(
            "{} {name} in {ns} is scaled to 0 replicas{when}",
            kind.to_lowercase()
        );
        out.push(Signal {
            analyzer: "scaled_to_zero",
            summary: summary.clone(),
            detail: "a workload whose spec asks for no replica runs no pod".into(),
            category: Category::ConfigurationError,
            basis: Basis::Stated,
            evidence: ctx.ev(&["kubernetes/deployments", "kubernetes/workloads", "kubernetes/events"]),
            cause: Some(format!(
                "{summary}, so no pod of it runs and nothing answers for it; scale it back up if that was not intended"
            )),
            objects: vec![format!("{}/{name}", kind.to_lowercase())],
            since: down.and_then(|c| c.at),
            ..Signal::default()
        });
    }
    out
}

/// The change that took workload `name` to zero replicas: its latest scale-down to 0.
pub(crate) fn scale_down<'c>(ctx: &'c Ctx, name: &str) -> Option<&'c crate::model::Change> {
    ctx.changes
        .iter()
        .filter(|c| {
            c.target.rsplit('/').next() == Some(name)
                && (c.id.starts_with("scale") || c.id == "rescale")
                && (c.title.contains(" to 0") || c.title.ends_with(" 0"))
        })
        .max_by_key(|c| c.at)
}

/// ` (<its title> at HH:MM UTC)` for a scale-down, empty without one.
pub(crate) fn scale_down_text(down: Option<&crate::model::Change>) -> String {
    down.map(|c| {
        let at =
            c.at.map(|t| format!(" at {}", t.format("%H:%M UTC")))
                .unwrap_or_default();
        format!(" ({}{at})", c.title)
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, DeploymentFacts, K8sEventFacts};
    use crate::reason::{Observations, analyze};
    use std::collections::BTreeMap;

    #[test]
    fn a_deployment_scaled_to_zero_is_the_cause_with_its_scale_down() {
        let now = chrono::Utc::now();
        let obs = |replicas: u32| Observations {
            now,
            alert: Some(Alert {
                labels: BTreeMap::from([
                    (
                        "alertname".to_string(),
                        "ServiceAvailabilityLow".to_string(),
                    ),
                    ("namespace".to_string(), "shop".to_string()),
                    ("deployment".to_string(), "cart".to_string()),
                ]),
                ..Alert::default()
            }),
            deployments: vec![DeploymentFacts {
                name: "cart".into(),
                namespace: "shop".into(),
                replicas,
                ..DeploymentFacts::default()
            }],
            events: vec![K8sEventFacts {
                event_type: "Normal".into(),
                reason: "ScalingReplicaSet".into(),
                message: "Scaled down replica set cart-5d8f9 to 0 from 3".into(),
                object: "Deployment/cart".into(),
                namespace: "shop".into(),
                count: 1,
                first_seen: Some(now - chrono::Duration::minutes(20)),
                last_seen: Some(now - chrono::Duration::minutes(20)),
            }],
            ..Observations::default()
        };
        let a = analyze(&obs(0));
        assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
        assert!(
            a.root_cause.contains("scaled to 0 replicas"),
            "{}",
            a.root_cause
        );
        assert!(a.root_cause.contains("to 0 from 3"), "{}", a.root_cause);
        let check = a
            .checks
            .iter()
            .find(|c| c.check == "workload scaled to zero");
        assert!(check.is_some_and(|c| c.since.is_some()), "{:?}", a.checks);
        // Asking for replicas: no such claim.
        assert!(scaled_to_zero(&Ctx::new(&obs(3))).is_empty());
    }
}
