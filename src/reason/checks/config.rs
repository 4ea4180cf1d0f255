//! Configuration changes of the failing workload: the ConfigMaps and Secrets its pod template reads
//! (when each was last written) and pod-template annotation changes between ReplicaSet revisions.

use super::{Basis, Decl, Role};
use crate::model::{Category, Change, ChangeKind, DeploymentFacts};
use crate::reason::{Ctx, Signal, rs_deployment};
use chrono::{DateTime, Utc};
use std::collections::BTreeSet;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "config_change",
    title: "configuration changed before the onset",
    concern: "config",
    role: Role::Change,
    reads: &[],
}];

/// How long before the onset a configuration change is still a suspect.
const WINDOW_MINUTES: f64 = 30.0;

/// Deployments the investigation is about and their ReplicaSets (all of them when no focus).
fn workloads<'a>(ctx: &Ctx<'a>) -> Vec<(&'a DeploymentFacts, Vec<&'a DeploymentFacts>)> {
    let mut names: Vec<(String, String)> = ctx
        .obs
        .deployments
        .iter()
        .filter(|d| ctx.focus_deployment.as_ref().is_none_or(|f| f == &d.name))
        .map(|d| (d.namespace.clone(), d.name.clone()))
        .collect();
    if names.is_empty()
        && let Some(f) = &ctx.focus_deployment
    {
        // Only ReplicaSets were read: they still name the deployment.
        names.extend(
            ctx.obs
                .replica_sets
                .iter()
                .filter(|r| rs_deployment(&r.name).as_deref() == Some(f.as_str()))
                .map(|r| (r.namespace.clone(), f.clone()))
                .take(1),
        );
    }
    names.dedup();
    names
        .into_iter()
        .filter_map(|(ns, name)| {
            let rs: Vec<&DeploymentFacts> = ctx
                .obs
                .replica_sets
                .iter()
                .filter(|r| r.namespace == ns && owned_by(r, &name))
                .collect();
            let dep = ctx
                .obs
                .deployments
                .iter()
                .find(|d| d.name == name && d.namespace == ns)
                .or_else(|| rs.first().copied())?;
            Some((dep, rs))
        })
        .collect()
}

fn owned_by(rs: &DeploymentFacts, deployment: &str) -> bool {
    rs_deployment(&rs.name).as_deref() == Some(deployment)
        || rs.labels.get("app").is_some_and(|a| a == deployment)
            && rs.name.starts_with(&format!("{deployment}-"))
}

fn revision(r: &DeploymentFacts) -> i64 {
    r.revision
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `ns/configmap/name` (how the integration names a config object) -> `configmap/name`.
fn object_ref(c: &Change) -> Option<String> {
    let mut parts = c.target.splitn(3, '/');
    let (_, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
    matches!(kind, "configmap" | "secret").then(|| format!("{kind}/{name}"))
}

/// Configuration changes that touch the workload under investigation, retargeted to it
/// (`ns/deployment`) so change correlation ranks them as touching the failing service: updates
/// of the ConfigMaps/Secrets its template reads, and pod-template annotation changes.
pub(crate) fn changes(ctx: &Ctx) -> Vec<Change> {
    let mut out = Vec::new();
    for (dep, rs) in workloads(ctx) {
        let mut refs: BTreeSet<&str> = dep.config_refs.iter().map(String::as_str).collect();
        refs.extend(
            rs.iter()
                .flat_map(|r| r.config_refs.iter().map(String::as_str)),
        );
        let target = format!("{}/{}", dep.namespace, dep.name);
        for c in &ctx.changes {
            if c.kind == ChangeKind::Config
                && let Some(r) = object_ref(c)
                && refs.contains(r.as_str())
                && !out
                    .iter()
                    .any(|o: &Change| o.title == c.title && o.at == c.at)
            {
                out.push(Change {
                    target: target.clone(),
                    ..c.clone()
                });
            }
        }
        out.extend(template_changes(&target, &rs));
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    out
}

/// What each new revision changed in the pod template besides images: annotations added, removed
/// or changed (a config checksum, `restartedAt`), ConfigMaps/Secrets referenced or dropped, and
/// literal environment values.
fn template_changes(target: &str, rs: &[&DeploymentFacts]) -> Vec<Change> {
    let mut sorted: Vec<&&DeploymentFacts> = rs.iter().filter(|r| r.revision.is_some()).collect();
    sorted.sort_by_key(|r| revision(r));
    let mut out = Vec::new();
    for pair in sorted.windows(2) {
        let (old, new) = (pair[0], pair[1]);
        let mut what: Vec<String> = Vec::new();
        let keys: BTreeSet<&String> = old
            .template_annotations
            .keys()
            .chain(new.template_annotations.keys())
            .collect();
        for k in keys {
            match (
                old.template_annotations.get(k),
                new.template_annotations.get(k),
            ) {
                (Some(a), Some(b)) if a != b => {
                    what.push(format!("annotation {k} {} → {}", short(a), short(b)))
                }
                (None, Some(b)) => what.push(format!("annotation {k} added ({})", short(b))),
                (Some(_), None) => what.push(format!("annotation {k} removed")),
                _ => {}
            }
        }
        for r in new
            .config_refs
            .iter()
            .filter(|r| !old.config_refs.contains(r))
        {
            what.push(format!("now reads {r}"));
        }
        for r in old
            .config_refs
            .iter()
            .filter(|r| !new.config_refs.contains(r))
        {
            what.push(format!("no longer reads {r}"));
        }
        what.extend(old.env_changes(new).into_iter().map(|e| format!("env {e}")));
        if what.is_empty() {
            continue;
        }
        out.push(Change {
            kind: ChangeKind::Config,
            at: new.created_at,
            id: format!("revision {}", revision(new)),
            title: format!(
                "pod template of revision {} ({}): {}",
                revision(new),
                new.name,
                what.join(", ")
            ),
            author: None,
            target: target.to_string(),
            url: None,
        });
    }
    out
}

fn short(v: &str) -> String {
    if v.chars().count() > 24 {
        format!("{}…", v.chars().take(12).collect::<String>())
    } else {
        v.to_string()
    }
}

/// The onset to line configuration changes up with: the alert's start.
pub(crate) fn onset(ctx: &Ctx) -> Option<DateTime<Utc>> {
    ctx.obs
        .alert
        .as_ref()
        .and_then(|a| a.starts_at)
        .filter(|t| t.timestamp() > 0 && *t <= ctx.obs.now)
}

/// "config-map checkout-config updated 14:01:30, 30 s before the onset".
pub(crate) fn describe(c: &Change, lead_secs: f64) -> String {
    let at =
        c.at.map(|t| t.format("%H:%M:%S").to_string())
            .unwrap_or_default();
    let by = c
        .author
        .as_deref()
        .map(|a| format!(" by {a}"))
        .unwrap_or_default();
    let lead = match lead_secs {
        l if l < 0.0 => format!("{:.0} s after the onset", -l),
        l if l < 120.0 => format!("{l:.0} s before the onset"),
        l => format!("{:.0} min before the onset", l / 60.0),
    };
    if c.title.starts_with("pod template") {
        format!("{} at {at}, {lead}", c.title)
    } else {
        format!("{} {at}{by}, {lead}", c.title)
    }
}

/// The configuration changes of the workload in the half hour before `at`, closest first, with
/// their lead in seconds.
pub(crate) fn before(ctx: &Ctx, at: DateTime<Utc>) -> Vec<(Change, f64)> {
    let mut out: Vec<(Change, f64)> = changes(ctx)
        .into_iter()
        .filter_map(|c| {
            let lead = (at - c.at?).num_seconds() as f64;
            (0.0..=WINDOW_MINUTES * 60.0)
                .contains(&lead)
                .then_some((c, lead))
        })
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

/// Configuration of the alert's workload changed shortly before the onset: context that lends
/// weight to configuration errors found elsewhere, never a cause on its own.
pub(crate) fn changed_before_onset(ctx: &Ctx) -> Vec<Signal> {
    let Some(at) = onset(ctx) else {
        return Vec::new();
    };
    let found = before(ctx, at);
    let Some((first, lead)) = found.first() else {
        return Vec::new();
    };
    vec![Signal {
        analyzer: "config_change",
        summary: describe(first, *lead),
        detail: found
            .iter()
            .skip(1)
            .take(4)
            .map(|(c, l)| describe(c, *l))
            .collect::<Vec<_>>()
            .join("; "),
        category: Category::ConfigurationError,
        basis: Basis::Context,
        links: 1,
        since: first.at,
        evidence: ctx.ev(&["changes", "kubernetes/deployments"]),
        ..Signal::default()
    }]
}
