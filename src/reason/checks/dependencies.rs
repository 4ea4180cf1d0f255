//! Neighbours along evidenced edges: a workload the subject's logs or its alert name, audited for
//! readiness, with the decisive detail of why its pods are down quoted.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts};
use crate::reason::logs::{self, Sig};
use crate::reason::{Ctx, Signal, actions, list_names, subject};
use chrono::{DateTime, Utc};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "dependency_down",
    title: "dependency down",
    concern: "dependencies",
    role: Role::Failure,
    reads: &[],
}];

/// What keeps a pod from running, quoted from its own status and events: a container's waiting
/// reason and message, its last termination, the scheduler's reason.
pub(crate) fn pod_trouble(ctx: &Ctx, pod: &PodFacts) -> Option<String> {
    for c in &pod.containers {
        if let Some(reason) = c.reason.as_deref().filter(|r| *r != "ContainerCreating") {
            let last = match (c.last_reason.as_deref(), c.last_exit_code) {
                (Some(r), Some(code)) => format!(", last exit {r} (code {code})"),
                (None, Some(code)) => format!(", last exit code {code}"),
                _ => String::new(),
            };
            let message = c
                .message
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| format!(": \"{}\"", logs::short(m)))
                .unwrap_or_default();
            return Some(format!("{} {reason}{message}{last}", c.name));
        }
    }
    if pod.phase == "Pending"
        && let Some(msg) = pod.condition_messages.get("PodScheduled")
    {
        return Some(format!("Pending: \"{}\"", logs::short(msg)));
    }
    let warning = ctx
        .events_for(&pod.name)
        .into_iter()
        .filter(|e| e.event_type == "Warning")
        .max_by_key(|e| e.last_seen.or(e.first_seen))?;
    Some(format!(
        "{}: \"{}\"",
        warning.reason,
        logs::short(&warning.message)
    ))
}

/// When the pods' trouble began: the first warning event on them.
fn trouble_since(ctx: &Ctx, pods: &[&PodFacts]) -> Option<DateTime<Utc>> {
    pods.iter()
        .flat_map(|p| ctx.events_for(&p.name))
        .filter(|e| e.event_type == "Warning")
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min()
}

/// A workload the subject depends on (its logs or its alert name it) that has fewer replicas
/// ready than it wants.
pub(crate) struct Down<'a> {
    kind: String,
    name: String,
    namespace: String,
    ready: u32,
    desired: u32,
    /// The subject's latest line that names it, when its logs do.
    named_by: Option<&'a crate::model::LogLine>,
    pods: Vec<&'a PodFacts>,
}

impl Down<'_> {
    /// The names of its pods that are not ready.
    pub(crate) fn pods_not_ready(&self) -> Vec<String> {
        self.pods
            .iter()
            .filter(|p| !p.ready())
            .map(|p| p.name.clone())
            .collect()
    }
}

/// The down dependencies along evidenced edges: every Deployment, StatefulSet or DaemonSet short
/// of ready that the subject's recent lines or its alert name.
pub(crate) fn down<'a>(ctx: &Ctx<'a>) -> Vec<Down<'a>> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let alert_text = ctx.alert_names();
    let mut candidates: Vec<(String, String, String, u32, u32)> = ctx
        .obs
        .deployments
        .iter()
        .map(|d| {
            (
                "Deployment".to_string(),
                d.name.clone(),
                d.namespace.clone(),
                d.ready_replicas,
                d.replicas,
            )
        })
        .collect();
    candidates.extend(
        ctx.obs
            .workloads
            .iter()
            .filter(|w| matches!(w.kind.as_str(), "StatefulSet" | "DaemonSet"))
            .map(|w| {
                (
                    w.kind.clone(),
                    w.name.clone(),
                    w.namespace.clone(),
                    w.ready,
                    w.desired,
                )
            }),
    );
    let mut out = Vec::new();
    for (kind, name, namespace, ready, desired) in candidates {
        if ctx.subject.covers(&format!("{kind}/{name}")) || desired == 0 || ready >= desired {
            continue;
        }
        let named_by = ctx
            .recent_subject_lines()
            .iter()
            .find(|l| subject::line_names(&l.line, &name))
            .copied();
        if named_by.is_none() && !subject::mentions(alert_text, &name) {
            continue;
        }
        let pods: Vec<&PodFacts> = ctx
            .pods()
            .into_iter()
            .filter(|p| !p.deleting && subject::pod_belongs(ctx.owners(), ctx.obs, p, &kind, &name))
            .collect();
        out.push(Down {
            kind,
            name,
            namespace,
            ready,
            desired,
            named_by,
            pods,
        });
    }
    out
}

/// Why the dependency's own pods fail, as their own logs say: the decisive signature of the
/// lines read from its pods that are not ready (a database out of disk, a broker out of memory,
/// a server that cannot parse its configuration). A process that died is read from its last
/// telling line, as a crash is; one still running but not ready only from lines it logged as
/// errors, since its warnings describe the state it is in (busy, waiting), not why.
fn own_failure(ctx: &Ctx, dep: &Down) -> Option<logs::Hits> {
    dep.pods.iter().filter(|p| !p.ready()).find_map(|p| {
        let died = p.restarts() > 0;
        let lines: Vec<_> = logs::pod_lines(ctx, &p.name)
            .into_iter()
            .filter(|l| died || logs::is_error(l))
            .collect();
        let hits = logs::scan(lines.iter().copied());
        logs::decisive(&lines, &hits).cloned()
    })
}

pub(crate) fn unhealthy(ctx: &Ctx) -> Vec<Signal> {
    let hits = ctx.subject_hits();
    let refused: Vec<&logs::Hits> = hits
        .iter()
        .filter(|h| {
            matches!(
                h.sig,
                Sig::ConnRefused
                    | Sig::Unreachable
                    | Sig::Timeout
                    | Sig::Dns
                    | Sig::Reset
                    | Sig::Http5xx
            )
        })
        .collect();
    let subject_name = ctx
        .subject
        .workloads
        .first()
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| "the subject".into());
    let mut out = Vec::new();
    for dep in down(ctx) {
        let own = own_failure(ctx, &dep);
        let Down {
            ref kind,
            ref name,
            ref namespace,
            ready,
            desired,
            named_by,
            ref pods,
        } = dep;
        let in_logs = named_by;
        let troubles: Vec<String> = pods
            .iter()
            .filter(|p| !p.ready())
            .filter_map(|p| pod_trouble(ctx, p).map(|t| format!("{}: {t}", p.name)))
            .collect();
        let since = trouble_since(ctx, pods);
        let target = refused
            .iter()
            .flat_map(|h| h.targets.iter())
            .find(|t| {
                in_logs.is_some_and(|l| l.line.contains(t.as_str())) || t.contains(name.as_str())
            })
            .or_else(|| refused.iter().flat_map(|h| h.targets.iter()).next())
            .cloned();
        let how = refused
            .first()
            .map(|h| h.sig.label().to_string())
            .unwrap_or_else(|| "errors".into());
        let why = if troubles.is_empty() {
            String::new()
        } else {
            format!(" ({})", list_names(&troubles, 2))
        };
        let when = since
            .map(|t| format!(" since {}", t.format("%H:%M UTC")))
            .unwrap_or_default();
        let calls = match &target {
            Some(t) => format!("{subject_name}'s calls to {t} fail ({how})"),
            None if !refused.is_empty() => format!("{subject_name}'s calls to it fail ({how})"),
            None => format!("{subject_name}, which depends on it, is affected"),
        };
        let edge = if in_logs.is_some() {
            format!(
                "{subject_name}'s logs name it: \"{}\"",
                logs::short(&in_logs.map(|l| l.line.clone()).unwrap_or_default())
            )
        } else {
            format!("the alert names it as {subject_name}'s dependency")
        };
        // Its own lines say why it is down: that is the cause, and its category is theirs.
        let (category, own_words) = match &own {
            Some(h) => (
                h.sig.category(),
                format!(": its own logs show {} (\"{}\")", h.sig.label(), h.example),
            ),
            None => (Category::DependencyFailure, String::new()),
        };
        let lower = kind.to_lowercase();
        let evidence = ctx.ev(&[
            "kubernetes/deployments",
            "kubernetes/workloads",
            "kubernetes/pods",
            "kubernetes/events",
            "kubernetes/pod_logs",
            "logs",
        ]);
        let mut sig = Signal {
            analyzer: "dependency_down",
            summary: format!(
                "dependency {lower} {name} has {ready} of {desired} replicas ready{why}"
            ),
            detail: format!("{edge}{own_words}"),
            category,
            basis: if refused.is_empty() {
                Basis::Logged
            } else {
                Basis::Stated
            },
            links: u8::from(!refused.is_empty()) + u8::from(own.is_some()),
            evidence: evidence.clone(),
            cause: Some(format!(
                "{name} has {ready} of {desired} replicas ready{why}{when}{own_words}, so {calls}"
            )),
            objects: vec![format!("{lower}/{name}")],
            ..Signal::default()
        };
        if kind == "Deployment" {
            sig.actions.push(actions::rollout_restart(
                crate::reason::namespace_or_default(namespace),
                name,
                format!(
                    "{name} has no ready replica to serve {subject_name}; restarting its pods clears a stuck state once the reason above is addressed"
                ),
                evidence,
            ));
        }
        out.push(sig);
    }
    out
}
