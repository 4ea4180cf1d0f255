//! Rollout analyzers: stuck rollouts (ProgressDeadlineExceeded, new vs old ReplicaSet) and recent changes.

use super::{Basis, Decl, Role};
use crate::model::{Category, DeploymentFacts, PodFacts};
use crate::reason::{Ctx, Signal, actions, list_names, pod_deployment, pod_rs};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "rollout_stuck",
        title: "rollout not progressing",
        concern: "rollout",
        role: Role::Effect,
        reads: &[],
    },
    Decl {
        id: "rollout_paused",
        title: "rollout paused",
        concern: "rollout",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "recent_change",
        title: "change to the subject before the onset",
        concern: "rollout",
        role: Role::Change,
        reads: &[],
    },
];

/// Deployments the alert is about (all of them when it names none).
pub(crate) fn deployments_in_scope<'a>(ctx: &Ctx<'a>) -> Vec<&'a DeploymentFacts> {
    ctx.obs
        .deployments
        .iter()
        .filter(|d| ctx.focus_deployment.as_ref().is_none_or(|f| f == &d.name))
        .fold(Vec::new(), |mut acc: Vec<&DeploymentFacts>, d| {
            if !acc
                .iter()
                .any(|x| x.name == d.name && x.namespace == d.namespace)
            {
                acc.push(d);
            }
            acc
        })
}

/// A rollout that is not progressing: ProgressDeadlineExceeded, or new replicas that never become available.
pub(crate) fn rollout_stuck(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for d in deployments_in_scope(ctx) {
        let deadline = d
            .conditions
            .get("Progressing")
            .filter(|(status, reason, _)| status == "False" || reason == "ProgressDeadlineExceeded")
            .map(|(_, reason, msg)| format!("{reason}: {msg}"));
        let lagging = d.updated_replicas < d.replicas && d.unavailable_replicas > 0;
        if deadline.is_none() && !lagging {
            continue;
        }
        let new_rs = ctx.current_rs(&d.name);
        let pods: Vec<_> = ctx
            .pods()
            .into_iter()
            .filter(|p| !p.deleting && pod_deployment(p).as_deref() == Some(d.name.as_str()))
            .collect();
        let (new_pods, old_pods): (Vec<&PodFacts>, Vec<&PodFacts>) =
            pods.iter().partition(|p| pod_rs(p) == new_rs);
        let new_bad: Vec<String> = new_pods
            .iter()
            .filter(|p| !p.ready())
            .map(|p| crate::reason::not_ready_label(p))
            .collect();
        let old_ok: Vec<String> = old_pods
            .iter()
            .filter(|p| p.ready())
            .map(|p| p.name.clone())
            .collect();
        let explained = new_bad.iter().any(|s| {
            [
                "ImagePull",
                "ErrImage",
                "CrashLoopBackOff",
                "OOMKilled",
                "CreateContainer",
            ]
            .iter()
            .any(|k| s.contains(k))
        });
        let rs_txt = match &new_rs {
            Some(r) => format!("new ReplicaSet {r}"),
            None => "the new ReplicaSet".into(),
        };
        let mut summary = format!(
            "rollout of deployment {} is stuck: {}/{} updated, {} available, {} unavailable",
            d.name, d.updated_replicas, d.replicas, d.available_replicas, d.unavailable_replicas
        );
        if let Some(x) = &deadline {
            summary.push_str(&format!(" ({x})"));
        }
        let mut detail = String::new();
        if !new_bad.is_empty() {
            detail.push_str(&format!(
                "{rs_txt} pods not Ready: {}",
                list_names(&new_bad, 3)
            ));
        }
        if !old_ok.is_empty() {
            detail.push_str(&format!(
                "; old ReplicaSet pods still serving: {}",
                list_names(&old_ok, 3)
            ));
        }
        let evidence = ctx.ev(&["kubernetes/deployments", "kubernetes/pods"]);
        let ns = crate::reason::namespace_or_default(&d.namespace);
        let action = actions::rollout_undo(
            ns,
            &d.name,
            format!(
                "the rollout of deployment/{} is not progressing; undo returns to the previous ReplicaSet that was serving",
                d.name
            ),
            evidence.clone(),
        );
        out.push(Signal {
            analyzer: "rollout_stuck",
            summary,
            detail: detail.clone(),
            category: Category::CodeDefect,
            basis: if explained { Basis::Observed } else { Basis::Timed },
            links: if explained { 0 } else { 1 },
            evidence,
            // Pod-level analyzers name the mechanism when the new pods show one.
            cause: (!explained).then(|| {
                format!(
                    "The rollout of deployment {} is stuck: {rs_txt} never becomes available ({}){}",
                    d.name,
                    deadline.clone().unwrap_or_else(|| format!("{} of {} replicas unavailable", d.unavailable_replicas, d.replicas)),
                    if detail.is_empty() { String::new() } else { format!("; {detail}") }
                )
            }),
            actions: vec![action],
            objects: vec![format!("deployment/{}", d.name)],
            ..Signal::default()
        });
    }
    out
}

/// A Deployment whose rollout is paused (`spec.paused`) while its pods do not run its template:
/// the change made to it is not rolled out, and nothing will roll it out until it is resumed.
pub(crate) fn rollout_paused(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for d in deployments_in_scope(ctx).into_iter().filter(|d| d.paused) {
        let pods: Vec<&PodFacts> = ctx
            .pods()
            .into_iter()
            .filter(|p| !p.deleting && pod_deployment(p).as_deref() == Some(d.name.as_str()))
            .collect();
        let running: Vec<String> = {
            let mut v: Vec<String> = pods
                .iter()
                .flat_map(|p| p.containers.iter().filter(|c| !c.init))
                .map(|c| c.image.clone())
                .filter(|i| !i.is_empty())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let stale = running.iter().any(|i| !d.images.contains(i));
        if d.updated_replicas >= d.replicas && !stale {
            continue;
        }
        let condition = d
            .conditions
            .get("Progressing")
            .filter(|(_, reason, _)| reason == "DeploymentPaused")
            .map(|(status, reason, msg)| format!("; Progressing={status}: {reason} \"{msg}\""))
            .unwrap_or_default();
        let pods_run = if stale {
            format!(", its pods run {}", list_names(&running, 3))
        } else {
            String::new()
        };
        let summary = format!(
            "deployment {} is paused: {} of {} replicas run its template ({}){pods_run}",
            d.name,
            d.updated_replicas,
            d.replicas,
            d.images.join(", ")
        );
        out.push(Signal {
            analyzer: "rollout_paused",
            summary: summary.clone(),
            detail: format!("spec.paused is true{condition}"),
            category: Category::ConfigurationError,
            basis: Basis::Stated,
            evidence: ctx.ev(&["kubernetes/deployments", "kubernetes/pods"]),
            cause: Some(format!(
                "Deployment {} is paused (spec.paused: true{condition}), so the controller rolls out none of its template: {} of {} replicas run {}{pods_run}; resuming the rollout (kubectl rollout resume deployment/{}) lets it proceed",
                d.name,
                d.updated_replicas,
                d.replicas,
                d.images.join(", "),
                d.name
            )),
            objects: vec![format!("deployment/{}", d.name)],
            ..Signal::default()
        });
    }
    out
}

/// Changes (deploys, merges) in the day before the world's clock, newest first, as context.
pub(crate) fn recent_changes(ctx: &Ctx) -> Vec<Signal> {
    let mut recent: Vec<_> = ctx
        .changes
        .iter()
        .filter(|c| {
            c.at.is_some_and(|t| (0.0..=24.0 * 60.0).contains(&ctx.minutes_ago(t)))
        })
        .collect();
    recent.sort_by_key(|c| std::cmp::Reverse(c.at));
    let Some(latest) = recent.first() else {
        return Vec::new();
    };
    let describe = |c: &&crate::model::Change| {
        let when =
            c.at.map(|t| format!("{} ({:.0} min ago)", t.format("%H:%M"), ctx.minutes_ago(t)))
                .unwrap_or_default();
        format!(
            "{} {} \"{}\" on {} at {when}",
            c.kind.noun(),
            c.id,
            c.title,
            c.target
        )
    };
    vec![Signal {
        analyzer: "recent_change",
        summary: format!(
            "{} change(s) in the last 24h; latest: {}",
            recent.len(),
            describe(latest)
        ),
        detail: recent
            .iter()
            .skip(1)
            .take(4)
            .map(describe)
            .collect::<Vec<_>>()
            .join("; "),
        category: Category::Unknown,
        basis: Basis::Context,
        since: latest.at,
        evidence: ctx.ev(&["changes"]),
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Change, ContainerFacts, PodFacts};
    use crate::reason::Observations;
    use chrono::{Duration, Utc};
    use std::collections::BTreeMap;

    fn pod(name: &str, rs: &str, ready: bool, reason: Option<&str>, age_min: i64) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "web".into(),
            phase: "Running".into(),
            owner: Some(format!("ReplicaSet/{rs}")),
            created_at: Some(Utc::now() - Duration::minutes(age_min)),
            conditions: BTreeMap::from([(
                "Ready".into(),
                if ready { "True" } else { "False" }.into(),
            )]),
            containers: vec![ContainerFacts {
                name: "app".into(),
                reason: reason.map(Into::into),
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    #[test]
    fn progress_deadline_names_new_and_old_replicasets() {
        let dep = DeploymentFacts {
            name: "shop".into(),
            namespace: "web".into(),
            replicas: 3,
            updated_replicas: 1,
            available_replicas: 2,
            unavailable_replicas: 1,
            conditions: BTreeMap::from([(
                "Progressing".into(),
                (
                    "False".into(),
                    "ProgressDeadlineExceeded".into(),
                    "ReplicaSet \"shop-new1\" has timed out progressing.".into(),
                ),
            )]),
            ..DeploymentFacts::default()
        };
        let obs = Observations {
            now: Utc::now(),
            deployments: vec![dep],
            pods: vec![
                pod("shop-new1-a", "shop-new1", false, None, 5),
                pod("shop-old2-b", "shop-old2", true, None, 600),
            ],
            ..Observations::default()
        };
        let sigs = rollout_stuck(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("ProgressDeadlineExceeded")
                && cause.contains("shop-new1")
                && cause.contains("shop-old2-b"),
            "{cause}"
        );
        assert_eq!(sigs[0].actions[0].kind, "kubernetes.rollout_undo");
    }

    #[test]
    fn a_paused_rollout_whose_pods_run_an_older_image_is_the_cause() {
        let dep = |paused: bool| DeploymentFacts {
            name: "push".into(),
            namespace: "web".into(),
            replicas: 2,
            updated_replicas: 0,
            images: vec!["push:4.2.0".into()],
            paused,
            ..DeploymentFacts::default()
        };
        let mut p = pod("push-old1-a", "push-old1", true, None, 600);
        p.containers[0].image = "push:4.1.9".into();
        let mut obs = Observations {
            now: Utc::now(),
            deployments: vec![dep(true)],
            pods: vec![p],
            ..Observations::default()
        };
        let sigs = rollout_paused(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("paused")
                && cause.contains("push:4.1.9")
                && cause.contains("push:4.2.0"),
            "{cause}"
        );
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        // Not paused: nothing to say here.
        obs.deployments = vec![dep(false)];
        assert!(rollout_paused(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn explained_stuck_rollout_is_context_only() {
        let dep = DeploymentFacts {
            name: "shop".into(),
            replicas: 2,
            updated_replicas: 1,
            unavailable_replicas: 1,
            ..DeploymentFacts::default()
        };
        let obs = Observations {
            now: Utc::now(),
            deployments: vec![dep],
            pods: vec![pod(
                "shop-new1-a",
                "shop-new1",
                false,
                Some("ImagePullBackOff"),
                5,
            )],
            ..Observations::default()
        };
        let sigs = rollout_stuck(&Ctx::new(&obs));
        assert!(sigs[0].cause.is_none());
    }

    #[test]
    fn recent_changes_are_listed_newest_first() {
        let now = Utc::now();
        let ch = |id: &str, mins: i64| Change {
            id: id.into(),
            title: "t".into(),
            at: Some(now - Duration::minutes(mins)),
            ..Change::default()
        };
        let obs = Observations {
            now,
            changes: vec![ch("old", 300), ch("new", 10), ch("ancient", 5000)],
            ..Observations::default()
        };
        let sigs = recent_changes(&Ctx::new(&obs));
        assert!(
            sigs[0].summary.starts_with("2 change(s)") && sigs[0].summary.contains("new"),
            "{}",
            sigs[0].summary
        );
    }
}
