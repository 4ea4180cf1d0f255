//! Every change is a change: rollouts and rollbacks, scaling and HPA resizes read from the
//! controllers' own events and ReplicaSet revisions, beside the changes the integrations listed.

use super::Observations;
use crate::model::{Change, ChangeKind, DeploymentFacts};
use regex::Regex;
use std::sync::LazyLock;

static SCALED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"Scaled (up|down) replica set ([a-z0-9][a-z0-9.-]*)(?: \(\S+\))? (?:to|from \d+ to) (\d+)",
    )
    .ok()
});

fn revision(r: &DeploymentFacts) -> i64 {
    r.revision
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Changes the observations show but no integration listed as such.
pub(crate) fn derived(obs: &Observations) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for e in &obs.events {
        let at = e.last_seen.or(e.first_seen);
        let (kind, name) = e.object.split_once('/').unwrap_or(("", e.object.as_str()));
        let target = format!("{}/{name}", e.namespace);
        match e.reason.as_str() {
            "DeploymentRollback" => out.push(Change {
                kind: ChangeKind::Rollout,
                at,
                id: "rollback".into(),
                title: format!("rollback of deployment {name}: {}", e.message),
                target,
                ..Change::default()
            }),
            "ScalingReplicaSet" if kind == "Deployment" => {
                let Some(caps) = SCALED.as_ref().and_then(|re| re.captures(&e.message)) else {
                    continue;
                };
                let dir = caps.get(1).map(|m| m.as_str()).unwrap_or_default();
                let rs = caps.get(2).map(|m| m.as_str()).unwrap_or_default();
                let to = caps.get(3).map(|m| m.as_str()).unwrap_or_default();
                // Scaling up a ReplicaSet older than another of the same Deployment brings an
                // earlier template back: a rollback.
                let sets: Vec<&DeploymentFacts> = obs
                    .replica_sets
                    .iter()
                    .filter(|r| {
                        r.owner.as_deref() == Some(&format!("Deployment/{name}"))
                            || r.labels
                                .get("pod-template-hash")
                                .is_some_and(|h| r.name == format!("{name}-{h}"))
                    })
                    .collect();
                let this = sets.iter().find(|r| r.name == rs);
                let older = this.is_some_and(|t| {
                    sets.iter()
                        .any(|o| o.name != t.name && o.created_at > t.created_at)
                });
                // Otherwise, with several ReplicaSets, scaling is a rollout's own steps: the
                // rollout is the change (from the new ReplicaSet), not each step.
                if !(dir == "up" && older) && sets.len() > 1 {
                    continue;
                }
                let (id, title) = if dir == "up" && older {
                    let images = this.map(|t| t.images.join(", ")).unwrap_or_default();
                    (
                        "rollback".to_string(),
                        format!(
                            "deployment {name} rolled back to ReplicaSet {rs} ({images}), scaled up to {to}"
                        ),
                    )
                } else {
                    (
                        format!("scale {dir}"),
                        format!("deployment {name}: {}", e.message),
                    )
                };
                if !out.iter().any(|c| c.title == title && c.at == at) {
                    out.push(Change {
                        kind: ChangeKind::Rollout,
                        at,
                        id,
                        title,
                        target,
                        ..Change::default()
                    });
                }
            }
            "SuccessfulRescale" => out.push(Change {
                kind: ChangeKind::Rollout,
                at,
                id: "rescale".into(),
                title: format!("{} {name}: {}", kind.to_lowercase(), e.message),
                target,
                ..Change::default()
            }),
            _ => {}
        }
    }
    // A ReplicaSet at the Deployment's highest revision but created before another one: the
    // revision moved back to an older template (a rollback), even with no event left.
    for d in &obs.deployments {
        let sets: Vec<&DeploymentFacts> = obs
            .replica_sets
            .iter()
            .filter(|r| r.owner.as_deref() == Some(&format!("Deployment/{}", d.name)))
            .collect();
        let Some(current) = sets.iter().max_by_key(|r| revision(r)) else {
            continue;
        };
        let newer: Vec<&&DeploymentFacts> = sets
            .iter()
            .filter(|o| o.name != current.name && o.created_at > current.created_at)
            .collect();
        if let Some(undone) = newer.iter().max_by_key(|o| o.created_at)
            && !out
                .iter()
                .any(|c| c.id == "rollback" && c.target.ends_with(&d.name))
        {
            out.push(Change {
                kind: ChangeKind::Rollout,
                at: None,
                id: "rollback".into(),
                title: format!(
                    "deployment {} rolled back from ReplicaSet {} ({}) to ReplicaSet {} ({}), now revision {}",
                    d.name,
                    undone.name,
                    undone.images.join(", "),
                    current.name,
                    current.images.join(", "),
                    current.revision.as_deref().unwrap_or("?")
                ),
                target: format!("{}/{}", d.namespace, d.name),
                ..Change::default()
            });
        }
    }
    out.retain(|c| {
        !obs.changes
            .iter()
            .any(|o| o.title == c.title && o.at == c.at)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::K8sEventFacts;
    use chrono::{Duration, Utc};

    #[test]
    fn scaling_an_older_replica_set_back_up_is_a_rollback() {
        let now = Utc::now();
        let rs = |name: &str, rev: &str, age: i64, image: &str| DeploymentFacts {
            name: name.into(),
            namespace: "shop".into(),
            revision: Some(rev.into()),
            created_at: Some(now - Duration::minutes(age)),
            images: vec![image.into()],
            owner: Some("Deployment/cart".into()),
            ..DeploymentFacts::default()
        };
        let obs = Observations {
            now,
            replica_sets: vec![
                rs("cart-aaa", "3", 600, "cart:1.0"),
                rs("cart-bbb", "2", 30, "cart:1.1"),
            ],
            events: vec![K8sEventFacts {
                reason: "ScalingReplicaSet".into(),
                object: "Deployment/cart".into(),
                namespace: "shop".into(),
                message: "Scaled up replica set cart-aaa to 3".into(),
                last_seen: Some(now - Duration::minutes(5)),
                ..K8sEventFacts::default()
            }],
            ..Observations::default()
        };
        let ch = derived(&obs);
        assert!(
            ch.iter()
                .any(|c| c.id == "rollback" && c.title.contains("cart:1.0") && c.at.is_some()),
            "{ch:?}"
        );
    }
}
