//! Every change is a change: rollouts and rollbacks, scaling and HPA resizes read from the
//! controllers' own events and ReplicaSet revisions, beside the changes the integrations listed.

use crate::model::{Change, ChangeKind, DeploymentFacts};
use crate::reason::Observations;
use regex::Regex;
use std::collections::{HashMap, HashSet};
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

/// The ReplicaSets of each Deployment, by name, in list order: by ownerReference
/// (`owned`), and by ownerReference or the controller's naming `<deployment>-<pod-template-hash>`
/// (`named`). Built in one pass, so no Deployment or event scans the whole list.
struct SetsOf<'a> {
    owned: HashMap<&'a str, Vec<&'a DeploymentFacts>>,
    named: HashMap<&'a str, Vec<&'a DeploymentFacts>>,
}

impl<'a> SetsOf<'a> {
    fn new(obs: &'a Observations) -> SetsOf<'a> {
        let mut owned: HashMap<&str, Vec<&DeploymentFacts>> = HashMap::new();
        let mut named: HashMap<&str, Vec<&DeploymentFacts>> = HashMap::new();
        for r in &obs.replica_sets {
            let by_owner = r
                .owner
                .as_deref()
                .and_then(|o| o.strip_prefix("Deployment/"));
            let by_name = r
                .labels
                .get("pod-template-hash")
                .and_then(|h| r.name.strip_suffix(h.as_str()))
                .and_then(|rest| rest.strip_suffix('-'));
            if let Some(d) = by_owner {
                owned.entry(d).or_default().push(r);
                named.entry(d).or_default().push(r);
            }
            if let Some(d) = by_name.filter(|d| Some(*d) != by_owner) {
                named.entry(d).or_default().push(r);
            }
        }
        SetsOf { owned, named }
    }

    fn get(map: &HashMap<&'a str, Vec<&'a DeploymentFacts>>, d: &str) -> Vec<&'a DeploymentFacts> {
        map.get(d).cloned().unwrap_or_default()
    }
}

/// Changes the observations show but no integration listed as such.
pub(crate) fn derived(obs: &Observations) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let index = SetsOf::new(obs);
    // (title, time) of every change derived so far: a scaling step already listed is not again.
    let mut scaled: HashSet<(String, Option<chrono::DateTime<chrono::Utc>>)> = HashSet::new();
    for e in &obs.events {
        let at = e.last_seen.or(e.first_seen);
        let (kind, name) = e.object.split_once('/').unwrap_or(("", e.object.as_str()));
        let target = format!("{}/{name}", e.namespace);
        match e.reason.as_str() {
            "DeploymentRollback" => {
                let title = format!("deployment {name} rolled back (rollback: {})", e.message);
                scaled.insert((title.clone(), at));
                out.push(Change {
                    kind: ChangeKind::Rollout,
                    at,
                    id: "rollback".into(),
                    title,
                    target,
                    ..Change::default()
                })
            }
            "ScalingReplicaSet" if kind == "Deployment" => {
                let Some(caps) = SCALED.as_ref().and_then(|re| re.captures(&e.message)) else {
                    continue;
                };
                let dir = caps.get(1).map(|m| m.as_str()).unwrap_or_default();
                let rs = caps.get(2).map(|m| m.as_str()).unwrap_or_default();
                let to = caps.get(3).map(|m| m.as_str()).unwrap_or_default();
                // Scaling up a ReplicaSet older than another of the same Deployment brings an
                // earlier template back: a rollback.
                let sets = SetsOf::get(&index.named, name);
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
                if scaled.insert((title.clone(), at)) {
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
            "SuccessfulRescale" => {
                let title = format!("{} {name}: {}", kind.to_lowercase(), e.message);
                scaled.insert((title.clone(), at));
                out.push(Change {
                    kind: ChangeKind::Rollout,
                    at,
                    id: "rescale".into(),
                    title,
                    target,
                    ..Change::default()
                })
            }
            _ => {}
        }
    }
    // A ReplicaSet at the Deployment's highest revision but created before another one: the
    // revision moved back to an older template (a rollback), even with no event left.
    for d in &obs.deployments {
        let sets = SetsOf::get(&index.owned, &d.name);
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
    let listed: HashSet<(&str, Option<chrono::DateTime<chrono::Utc>>)> = obs
        .changes
        .iter()
        .map(|o| (o.title.as_str(), o.at))
        .collect();
    out.retain(|c| !listed.contains(&(c.title.as_str(), c.at)));
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
