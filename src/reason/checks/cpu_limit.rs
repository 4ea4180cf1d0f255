//! CPU limit against a throttling claim: a container is throttled only at its CFS quota, so when
//! the alert says it is throttled and the spec gives it a limit, the limit is what it runs into.

use super::{Basis, Decl, Role};
use crate::model::{AlertStatus, Category};
use crate::reason::{Ctx, Signal, list_names, metrics};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "cpu_limit",
    title: "CPU limit throttling",
    concern: "cpu_limit",
    role: Role::Failure,
    reads: &[],
}];

/// Whether the alert is about CPU throttling (its name, summary or expression says so).
fn throttling_claim(ctx: &Ctx) -> Option<String> {
    let a = ctx.obs.alert.as_ref()?;
    if a.status == AlertStatus::Resolved {
        return None;
    }
    let mut text = a.name().to_string();
    for k in ["summary", "description", "message"] {
        if let Some(v) = a.annotations.get(k) {
            text.push(' ');
            text.push_str(v);
        }
    }
    let expr = metrics::alert_expr(ctx).unwrap_or_default();
    let about = format!("{text} {expr}").to_lowercase();
    (about.contains("throttl") || about.contains("cfs_throttled")).then(|| {
        a.annotations
            .get("description")
            .or_else(|| a.annotations.get("summary"))
            .or_else(|| a.annotations.get("message"))
            .cloned()
            .unwrap_or_else(|| a.name().to_string())
    })
}

/// Check: is a subject container's CPU limit what the throttling runs into? Failing for each
/// container the alert names (or each of the subject's, when it names none) that has a limit,
/// while the alert fires; Prometheus's own series, when read, are the symptom step's.
pub(crate) fn cpu_limit(ctx: &Ctx) -> Vec<Signal> {
    let Some(claim) = throttling_claim(ctx) else {
        return Vec::new();
    };
    let named = &ctx.subject.containers;
    let mut limited: Vec<String> = Vec::new();
    let mut objects: Vec<String> = Vec::new();
    for p in ctx.pods() {
        if !ctx.pod_in_scope(p) || p.deleting {
            continue;
        }
        for c in p.containers.iter().filter(|c| !c.init) {
            if !named.is_empty() && !named.contains(&c.name) {
                continue;
            }
            let Some(limit) = &c.cpu_limit else {
                continue;
            };
            let request = c
                .cpu_request
                .as_ref()
                .map(|r| format!(", request {r}"))
                .unwrap_or_default();
            let text = format!(
                "container {} of pod {} (CPU limit {limit}{request})",
                c.name, p.name
            );
            if !limited.contains(&text) {
                limited.push(text);
                objects.push(format!("pod/{}", p.name));
            }
        }
    }
    if limited.is_empty() {
        return Vec::new();
    }
    let since = ctx.obs.alert.as_ref().and_then(|a| a.starts_at);
    let what = list_names(&limited, 3);
    let summary = format!("{what} is throttled at its CPU limit: \"{claim}\"");
    vec![Signal {
        analyzer: "cpu_limit",
        summary: summary.clone(),
        detail: "the CFS quota a CPU limit sets is the only thing that throttles a container"
            .into(),
        category: Category::ResourceExhaustion,
        basis: Basis::Logged,
        evidence: ctx.ev(&["alert", "kubernetes/pods"]),
        cause: Some(format!(
            "{summary}; the work it is given needs more CPU than the limit allows, so it is throttled and slows down: raise the limit or spread the load"
        )),
        objects,
        since,
        ..Signal::default()
    }]
}
