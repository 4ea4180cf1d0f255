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
    // The node ran low because the subject's own container used far past what it asked for:
    // the container is what filled it.
    Decl {
        id: "evicted_own_usage",
        title: "pods evicted for their own use of a node's resource",
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

/// kubelet's ranking on a node low on a resource: `Container C was using 31457280Ki, request
/// is 0`. The container, its use and its request, when its use is at least a GiB and ten times
/// what it requested: the tenant that filled the node.
fn hog(message: &str) -> Option<(String, String, String)> {
    static USING: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"Container (\S+) was using (\S+?), request is (\S+?)[,.]").ok()
    });
    let c = USING.as_ref()?.captures(message)?;
    let (name, used, asked) = (c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str());
    let used_bytes = crate::reason::parse_bytes(used)?;
    let asked_bytes = crate::reason::parse_bytes(asked).unwrap_or(0.0);
    (used_bytes >= 1024f64.powi(3) && used_bytes >= 10.0 * asked_bytes)
        .then(|| (name.to_string(), used.to_string(), asked.to_string()))
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
    let hogged = (!own).then(|| hog(&message)).flatten();
    // Memory reclaimed from the subject's pods while another tenant on the node sets no limit.
    let tenant = (!own && hogged.is_none() && message.contains("low on resource: memory"))
        .then(|| {
            first
                .node
                .as_deref()
                .and_then(|n| super::nodes::unbounded_tenant(ctx, n, &names))
        })
        .flatten();
    let whose = if let Some((container, used, asked)) = &hogged {
        format!(
            "its own container {container} was using {} against a request of {asked}, far past what it asked for, so the node's shortage is its doing; bound what it writes (a limit, a volume of its own) or request what it uses",
            crate::reason::format_bytes(crate::reason::parse_bytes(used).unwrap_or_default())
        )
    } else if let (Some(t), Some(n)) = (tenant, &first.node) {
        format!(
            "node {n} ran low on memory and reclaimed it from its pods{}",
            super::nodes::tenant_words(t)
        )
    } else if own {
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
        } else if hogged.is_some() {
            "evicted_own_usage"
        } else {
            "evicted_node_low"
        },
        summary: summary.clone(),
        detail: "kubelet evicts pods to reclaim a resource; the pod's status says which".into(),
        category: if own || hogged.is_some() || tenant.is_some() {
            Category::ResourceExhaustion
        } else {
            Category::Infrastructure
        },
        basis: Basis::Stated,
        // The resource and whose limit it was, named by kubelet.
        links: u8::from(!message.is_empty()) + u8::from(hogged.is_some() || tenant.is_some()),
        evidence: ctx.ev(&["kubernetes/pods", "kubernetes/events"]),
        cause: Some(format!("{summary}: {whose}")),
        objects: names.iter().map(|n| format!("pod/{n}")).collect(),
        since,
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_far_past_its_request_is_the_tenant_that_filled_the_node() {
        let message = "The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 1848552Ki. Container ingest was using 31457280Ki, request is 0, has larger consumption of ephemeral-storage.";
        assert_eq!(
            hog(message),
            Some(("ingest".into(), "31457280Ki".into(), "0".into()))
        );
        // A small user, or one using what it asked for, is not what filled the node.
        assert_eq!(
            hog(
                "The node was low on resource: memory. Container web was using 300Mi, request is 0, has larger consumption of memory."
            ),
            None
        );
        assert_eq!(
            hog(
                "The node was low on resource: memory. Container db was using 6Gi, request is 4Gi, has larger consumption of memory."
            ),
            None
        );
        assert!(!own_limit(message));
    }
}
