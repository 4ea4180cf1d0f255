//! Evictions: kubelet ended the subject's pods to reclaim a resource. The pod's own status says
//! which (`Evicted`: "The node was low on resource: memory", "Pod ephemeral local storage usage
//! exceeds the total limit of containers 2Gi"), and that decides whose limit was reached.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts};
use crate::reason::{Ctx, Signal, list_names, object_name};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "evicted_at_own_limit",
        title: "pods evicted at their own limit",
        concern: "eviction",
        role: Role::Failure,
        reads: &[],
    },
    // The node's shortage is the failure (its pressure condition, when still reported); the
    // evictions are what it did to the subject.
    Decl {
        id: "evicted_node_low",
        title: "pods evicted by a node low on a resource",
        concern: "eviction",
        role: Role::Effect,
        reads: &[],
    },
];

/// Why kubelet evicted a pod: its status message, else its `Evicted` event's.
fn eviction_message(ctx: &Ctx, pod: &PodFacts) -> Option<String> {
    if pod.status_reason.as_deref() == Some("Evicted") {
        return Some(pod.status_message.clone().unwrap_or_default());
    }
    ctx.events_for(&pod.name)
        .into_iter()
        .find(|e| e.reason == "Evicted")
        .map(|e| e.message.clone())
}

/// Whose limit the message says was reached: the pod's own (its containers' ephemeral-storage or
/// memory limit), or the node's (it ran low and reclaimed from whoever used most).
fn own_limit(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("exceeds the total limit")
        || m.contains("exceeded its local ephemeral storage limit")
        || m.contains("exceeds the container's limit")
        || m.contains("usage exceeds the limit")
        || m.contains("exceeded its limit")
}

/// Check: were the subject's pods evicted? Failing when kubelet evicted one or more of them; the
/// message names the resource, and whose limit it was.
pub(crate) fn evictions(ctx: &Ctx) -> Vec<Signal> {
    let evicted: Vec<(&PodFacts, String)> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.resolved && ctx.subject.has_pod(p))
        .filter_map(|p| eviction_message(ctx, p).map(|m| (p, m)))
        .collect();
    let Some((first, message)) = evicted.first() else {
        return Vec::new();
    };
    let names: Vec<String> = evicted.iter().map(|(p, _)| p.name.clone()).collect();
    let message = message.trim().trim_end_matches('.').to_string();
    let own = own_limit(&message);
    let since = ctx
        .events()
        .into_iter()
        .filter(|e| e.reason == "Evicted" && names.iter().any(|n| n == object_name(&e.object)))
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min();
    let summary = format!(
        "kubelet evicted {} pod(s) of the subject ({}): \"{message}\"",
        names.len(),
        list_names(&names, 3)
    );
    let whose = if own {
        "its containers reached their own storage or memory limit; raise the limit or have it write less"
            .to_string()
    } else {
        match &first.node {
            Some(n) => format!(
                "node {n} ran low on that resource and reclaimed it from its pods; the node's capacity or its other tenants are the cause"
            ),
            None => "its node ran low on that resource and reclaimed it from its pods".to_string(),
        }
    };
    vec![Signal {
        analyzer: if own {
            "evicted_at_own_limit"
        } else {
            "evicted_node_low"
        },
        summary: summary.clone(),
        detail: "kubelet evicts pods to reclaim a resource; the pod's status says which".into(),
        category: if own {
            Category::ResourceExhaustion
        } else {
            Category::Infrastructure
        },
        basis: Basis::Stated,
        // The resource and whose limit it was, named by kubelet.
        links: u8::from(!message.is_empty()),
        evidence: ctx.ev(&["kubernetes/pods", "kubernetes/events"]),
        cause: Some(format!("{summary}: {whose}")),
        objects: names.iter().map(|n| format!("pod/{n}")).collect(),
        since,
        ..Signal::default()
    }]
}
