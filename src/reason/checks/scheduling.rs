//! Scheduling analyzers: FailedScheduling (insufficient cpu/memory, taints, affinity) and exceeded quotas.

use super::{Basis, Decl, Role};
use crate::model::{Category, ContainerFacts, NodeFacts, PodFacts};
use crate::reason::{Ctx, Signal, actions, list_names, object_name, parse_bytes, rs_deployment};
use regex::Regex;
use std::sync::LazyLock;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "failed_scheduling",
        title: "pod cannot be scheduled",
        concern: "scheduling",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "quota_exceeded",
        title: "resource quota refuses pods",
        concern: "scheduling",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "limit_range",
        title: "limit range refuses pods",
        concern: "scheduling",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "scheduling_recovered",
        title: "scheduling failures that ended",
        concern: "scheduling",
        role: Role::Clearance,
        reads: &[],
    },
];

static INSUFFICIENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"Insufficient ([A-Za-z0-9./_-]+)").ok());
static QUOTA: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"exceeded quota: ([A-Za-z0-9._-]+)(?:, requested: (.+?), used: (.+?), limited: (.+?))?\s*$").ok()
});

/// Why the scheduler rejected a pod, from a FailedScheduling message.
fn classify(msg: &str) -> (Category, String) {
    let m = msg.to_lowercase();
    let resources: Vec<String> = INSUFFICIENT
        .as_ref()
        .map(|re| {
            re.captures_iter(msg)
                .filter_map(|c| c.get(1))
                .map(|x| x.as_str().trim_end_matches(['.', ',']).to_string())
                .collect()
        })
        .unwrap_or_default();
    if !resources.is_empty() {
        let mut r = resources;
        r.dedup();
        return (
            Category::ResourceExhaustion,
            format!(
                "no node has enough allocatable {} left for the pod's requests (Insufficient {})",
                r.join(" and "),
                r.join(", Insufficient ")
            ),
        );
    }
    if m.contains("too many pods") {
        return (
            Category::ResourceExhaustion,
            "every node is at its pod limit (Too many pods)".into(),
        );
    }
    if m.contains("taint") {
        if m.contains("not-ready") || m.contains("unreachable") {
            return (
                Category::Infrastructure,
                "the nodes are tainted not-ready/unreachable, so nothing can be scheduled on them"
                    .into(),
            );
        }
        return (
            Category::ConfigurationError,
            "the nodes carry taints the pod does not tolerate (untolerated taint)".into(),
        );
    }
    if m.contains("affinity") || m.contains("selector") {
        return (
            Category::ConfigurationError,
            "no node matches the pod's node affinity / nodeSelector".into(),
        );
    }
    if m.contains("persistentvolumeclaim") || m.contains("volume") {
        return (
            Category::ConfigurationError,
            "the pod's PersistentVolumeClaim cannot be bound".into(),
        );
    }
    (
        Category::Unknown,
        "the scheduler found no feasible node".into(),
    )
}

/// The scheduler's per-node reasons: `0/5 nodes are available: 2 node(s) had untolerated taint
/// {gpu: present}, 3 Insufficient cpu. preemption: ...` -> [(2, "node(s) had untolerated taint
/// {gpu: present}"), (3, "Insufficient cpu")].
fn node_reasons(msg: &str) -> Vec<(u32, String)> {
    let Some((_, rest)) = msg.split_once("nodes are available: ") else {
        return Vec::new();
    };
    let rest = rest.split(". preemption:").next().unwrap_or(rest);
    rest.trim_end_matches('.')
        .split(", ")
        .filter_map(|item| {
            let (n, reason) = item.trim().split_once(' ')?;
            Some((n.parse().ok()?, reason.trim().to_string()))
        })
        .collect()
}

/// Whether every pod is a DaemonSet's (and there is one).
fn daemon_pods(pods: &[&PodFacts]) -> bool {
    !pods.is_empty()
        && pods.iter().all(|p| {
            p.owner
                .as_deref()
                .is_some_and(|o| o.starts_with("DaemonSet/"))
        })
}

/// CPU cores of a quantity (`500m`, `2`, `3920m`).
fn cores(q: &str) -> Option<f64> {
    match q.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok().map(|m| m / 1000.0),
        None => q.parse().ok(),
    }
}

/// The zone a node is in, from its well-known topology label.
fn zone(n: &NodeFacts) -> Option<&str> {
    n.labels
        .get("topology.kubernetes.io/zone")
        .or_else(|| n.labels.get("failure-domain.beta.kubernetes.io/zone"))
        .map(String::as_str)
}

/// What the scheduler's reasons say beyond their first word, read against the pods and nodes:
/// nodes that would fit but for a taint the pod does not tolerate, a request no node could ever
/// hold, a bound volume pinned where no node is. `None` when the message says no more.
fn refine(ctx: &Ctx, pods: &[String], msg: &str) -> Option<(Category, String)> {
    let pending: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| pods.contains(&p.name))
        .collect();
    // A DaemonSet's pod is pinned to its own node: every other node "didn't match Pod's node
    // affinity/selector" by design, and the reason its own node gives is the one that counts.
    let daemon = daemon_pods(&pending);
    let reasons: Vec<(u32, String)> = node_reasons(msg)
        .into_iter()
        .filter(|(_, r)| !(daemon && r.contains("node affinity/selector")))
        .collect();
    if reasons
        .iter()
        .any(|(_, r)| r.contains("volume node affinity conflict"))
    {
        let pinned: Vec<String> = pending
            .iter()
            .flat_map(|p| p.claims.iter())
            .filter(|c| !c.volume_affinity.is_empty())
            .map(|c| {
                format!(
                    "claim {}'s volume {} may only be used where {}",
                    c.name,
                    c.volume.as_deref().unwrap_or("?"),
                    c.volume_affinity.join(" and ")
                )
            })
            .collect();
        let mut zones: Vec<&str> = ctx
            .obs
            .nodes
            .iter()
            .filter(|n| n.ready() && !n.unschedulable)
            .filter_map(zone)
            .collect();
        zones.sort_unstable();
        zones.dedup();
        let nodes_at = if zones.is_empty() {
            String::new()
        } else {
            format!("; the schedulable nodes are in {}", zones.join(", "))
        };
        let pinned = if pinned.is_empty() {
            String::new()
        } else {
            format!(": {}", list_names(&pinned, 2))
        };
        return Some((
            Category::Infrastructure,
            format!(
                "its bound PersistentVolume is pinned (node affinity, a zone) to where no schedulable node runs{pinned}{nodes_at}; a node there is needed, or the volume moved"
            ),
        ));
    }
    // Every node short of a free host port: the pod asks to bind a hostPort on its node that
    // other pods already hold there (often a DaemonSet on every node).
    if !reasons.is_empty() && reasons.iter().all(|(_, r)| r.contains("free ports")) {
        let mut wanted: Vec<u16> = pending
            .iter()
            .flat_map(|p| p.containers.iter())
            .flat_map(|c| c.host_ports.iter().copied())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut holders: Vec<String> = ctx
            .obs
            .pods
            .iter()
            .filter(|p| !pods.contains(&p.name) && p.node.is_some())
            .filter(|p| {
                p.containers
                    .iter()
                    .any(|c| c.host_ports.iter().any(|h| wanted.contains(h)))
            })
            .map(|p| match ctx.workload_of(p) {
                Some((kind, name)) => format!("{} {name}", kind.to_lowercase()),
                None => format!("pod {}", p.name),
            })
            .collect();
        holders.sort();
        holders.dedup();
        let ports = wanted
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let held = if holders.is_empty() {
            String::new()
        } else {
            format!(", already held on the nodes by {}", list_names(&holders, 3))
        };
        let asks = if wanted.is_empty() {
            "a hostPort".to_string()
        } else {
            format!("hostPort {ports}")
        };
        return Some((
            Category::ConfigurationError,
            format!(
                "the pod asks for {asks} on its node{held}: one pod per node can bind a host port, so no node has it free; drop the hostPort or use another"
            ),
        ));
    }
    // Nodes tainted for the very resource the others lack (`nvidia.com/gpu` on the GPU nodes,
    // while the rest have Insufficient nvidia.com/gpu) would run the pod with a toleration: the
    // missing toleration decides. A taint for something else (`dedicated: batch`, a node
    // condition's) keeps the pod off nodes it is not meant for, and the shortage stays the cause.
    let short: Vec<&str> = reasons
        .iter()
        .filter_map(|(_, r)| r.strip_prefix("Insufficient "))
        .collect();
    let tainted = reasons.iter().find_map(|(n, r)| {
        let taint = r.split_once("untolerated taint")?.1.trim();
        let key = taint.trim_start_matches('{').split(':').next()?.trim();
        short.contains(&key).then_some((n, taint))
    });
    if let Some((n, taint)) = tainted {
        return Some((
            Category::ConfigurationError,
            format!(
                "the {n} node(s) that could hold it carry taint {taint}, which the pod does not tolerate, and the others lack capacity ({}); the pod needs a toleration for that taint",
                reasons
                    .iter()
                    .filter(|(_, o)| o.starts_with("Insufficient"))
                    .map(|(k, o)| format!("{k} {o}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    // Insufficient cpu or memory on every node, for a request larger than any node's whole
    // allocatable: no amount of waiting or evicting fits it, a larger node or request must.
    let all_short =
        !reasons.is_empty() && reasons.iter().all(|(_, r)| r.starts_with("Insufficient"));
    if !all_short || ctx.obs.nodes.is_empty() {
        return None;
    }
    ["cpu", "memory"]
        .into_iter()
        .filter(|r| {
            reasons
                .iter()
                .any(|(_, x)| *x == format!("Insufficient {r}"))
        })
        .find_map(|r| beyond_every_node(ctx, &pending, r))
        // Still capacity the cluster lacks for what is asked, as the scheduler counts it; the
        // mechanism says which side to change.
        .map(|m| (Category::ResourceExhaustion, m))
}

/// A pending pod's request of `resource` (`cpu`, `memory`) larger than the largest node's whole
/// allocatable, told with both quantities as written.
fn beyond_every_node(ctx: &Ctx, pending: &[&PodFacts], resource: &str) -> Option<String> {
    let parse = |q: &str| match resource {
        "cpu" => cores(q),
        _ => parse_bytes(q),
    };
    let request = |c: &ContainerFacts| match resource {
        "cpu" => c.cpu_request.clone(),
        _ => c.memory_request.clone(),
    };
    let allocatable = |n: &NodeFacts| match resource {
        "cpu" => n.allocatable_cpu.clone(),
        _ => n.allocatable_memory.clone(),
    };
    let (node_text, node_max) = ctx
        .obs
        .nodes
        .iter()
        .filter_map(|n| {
            let a = allocatable(n)?;
            let v = parse(&a)?;
            Some((a, v))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (total, text) = pending
        .iter()
        .map(|p| {
            let asked: Vec<String> = p
                .containers
                .iter()
                .filter(|c| !c.init)
                .filter_map(request)
                .collect();
            let total: f64 = asked.iter().filter_map(|q| parse(q)).sum();
            (total, asked.join(" + "))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (total > node_max).then(|| {
        format!(
            "the pod requests {text} {resource}, more than the largest node's whole allocatable {resource} ({node_text}): no node can ever hold it, so the request is wrong or a larger node type is needed (Insufficient {resource})"
        )
    })
}

/// The nodeSelector labels of the pending pods that no node carries, quoted.
fn selector_detail(ctx: &Ctx, pods: &[String]) -> String {
    let mut wanted: Vec<(String, String)> = Vec::new();
    for p in ctx.pods().into_iter().filter(|p| pods.contains(&p.name)) {
        for (k, v) in &p.node_selector {
            if !wanted.iter().any(|(a, b)| a == k && b == v) {
                wanted.push((k.clone(), v.clone()));
            }
        }
    }
    if wanted.is_empty() {
        return String::new();
    }
    let nodes = &ctx.obs.nodes;
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(k, v)| !nodes.iter().any(|n| n.labels.get(k) == Some(v)))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let all: Vec<String> = wanted.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if nodes.is_empty() {
        format!(
            "; its nodeSelector asks for {} (the nodes could not be read to compare)",
            all.join(", ")
        )
    } else if missing.is_empty() {
        format!(
            "; its nodeSelector {} matches some node, so affinity, taints or capacity exclude them",
            all.join(", ")
        )
    } else {
        format!(
            "; its nodeSelector {} matches no node: none of the {} nodes carries that label",
            missing.join(", "),
            nodes.len()
        )
    }
}

/// FailedScheduling events for pods in scope.
pub(crate) fn failed_scheduling(ctx: &Ctx) -> Vec<Signal> {
    let pods = ctx.pods();
    let events: Vec<_> = ctx
        .events()
        .into_iter()
        .filter(|e| e.reason == "FailedScheduling")
        .filter(|e| {
            let name = object_name(&e.object);
            match ctx.pod_named(name) {
                Some(p) => ctx.pod_in_scope(p) && !p.deleting && p.phase != "Running",
                // A pod no longer listed: the subject names it, or (unresolved) the old guess.
                None if ctx.subject.resolved => {
                    crate::reason::subject::unlisted_pod_of_subject(ctx.obs, &ctx.subject, name)
                }
                None => ctx
                    .focus_deployment
                    .as_ref()
                    .is_none_or(|d| name.starts_with(d.as_str())),
            }
        })
        .collect();
    // Events expire (one hour by default); the pod's PodScheduled condition keeps the scheduler's word.
    let from_conditions: Vec<crate::model::K8sEventFacts> = pods
        .iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting && p.phase == "Pending")
        .filter(|p| {
            p.conditions
                .get("PodScheduled")
                .is_some_and(|s| s == "False")
        })
        .filter(|p| !events.iter().any(|e| object_name(&e.object) == p.name))
        .filter_map(|p| {
            let text = p.condition_messages.get("PodScheduled")?;
            let message = text
                .split_once(": ")
                .map(|(_, m)| m)
                .unwrap_or(text)
                .to_string();
            Some(crate::model::K8sEventFacts {
                event_type: "Warning".into(),
                reason: "FailedScheduling".into(),
                message,
                object: format!("Pod/{}", p.name),
                namespace: p.namespace.clone(),
                count: 1,
                first_seen: p.created_at,
                last_seen: p.created_at,
            })
        })
        .collect();
    let mut events = events;
    events.extend(from_conditions.iter());
    let Some(latest) = events.iter().max_by_key(|e| e.last_seen) else {
        return Vec::new();
    };
    let names: Vec<String> = {
        let mut n: Vec<String> = events
            .iter()
            .map(|e| object_name(&e.object).to_string())
            .collect();
        n.dedup();
        n
    };
    let (category, mut mechanism) =
        refine(ctx, &names, &latest.message).unwrap_or_else(|| classify(&latest.message));
    if latest
        .message
        .to_lowercase()
        .contains("persistentvolumeclaim")
    {
        mechanism.push_str(&claim_detail(ctx));
    }
    let lower = latest.message.to_lowercase();
    let pending: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| names.contains(&p.name))
        .collect();
    if (lower.contains("affinity") || lower.contains("selector")) && !daemon_pods(&pending) {
        mechanism.push_str(&selector_detail(ctx, &names));
    }
    let attempts: u32 = events.iter().map(|e| e.count.max(1)).sum();
    let evidence = ctx.ev(&["kubernetes/events", "kubernetes/pods", "kubernetes/nodes"]);
    let mut sig = Signal {
        analyzer: "failed_scheduling",
        summary: format!(
            "{} pod(s) Pending: FailedScheduling x{attempts}: {}",
            names.len(),
            latest.message
        ),
        category,
        basis: if category == Category::Unknown {
            Basis::Observed
        } else {
            Basis::Stated
        },
        links: 1,
        evidence: evidence.clone(),
        cause: Some(format!(
            "Pods {} stay Pending because {mechanism}; the scheduler reports \"{}\"",
            list_names(&names, 3),
            latest.message
        )),
        objects: names.iter().map(|n| format!("pod/{n}")).collect(),
        ..Signal::default()
    };
    if let Some(d) = ctx
        .focus_deployment
        .as_deref()
        .and_then(|d| ctx.deployment(d))
        && category == Category::ResourceExhaustion
        && d.ready_replicas > 0
        && d.ready_replicas < d.replicas
    {
        sig.actions.push(actions::scale(
            &d.namespace,
            &d.name,
            d.ready_replicas,
            format!(
                "the cluster cannot fit {} replicas; scaling to the {} that run stops the Pending churn until node capacity is added",
                d.replicas, d.ready_replicas
            ),
            evidence,
        ));
    }
    vec![sig]
}

/// Why a claim stays unbound, from the PersistentVolumeClaim's own events (the StorageClass, the provisioner).
fn claim_detail(ctx: &Ctx) -> String {
    let claims: Vec<String> = ctx
        .events()
        .into_iter()
        .filter(|e| e.object.starts_with("PersistentVolumeClaim/") && e.event_type == "Warning")
        .map(|e| {
            format!(
                "PersistentVolumeClaim {} is unbound: {} ({})",
                object_name(&e.object),
                e.message,
                e.reason
            )
        })
        .collect();
    // The claims themselves, as read from the API: what they say when their events expired.
    let mut claims = claims;
    for p in ctx.pods().into_iter().filter(|p| ctx.pod_in_scope(p)) {
        for c in &p.claims {
            // A claim its own events already explain is told once.
            if claims.iter().any(|x| x.contains(&c.name)) {
                continue;
            }
            if let Some((_, _, statement)) = super::claims::fault(c) {
                claims.push(statement);
            }
        }
    }
    if claims.is_empty() {
        String::new()
    } else {
        format!("; {}", claims.join("; "))
    }
}

/// FailedCreate forbidden by a LimitRange: the pod's requests or limits fall outside the namespace's bounds.
pub(crate) fn limit_range(ctx: &Ctx) -> Vec<Signal> {
    let Some(e) = ctx
        .events()
        .into_iter()
        .filter(|e| e.reason == "FailedCreate" || e.message.contains("forbidden"))
        .filter(|e| {
            let m = e.message.to_lowercase();
            (m.contains("maximum") || m.contains("minimum")) && m.contains("per container")
                || m.contains("per pod")
                || m.contains("limitrange")
        })
        .filter(|e| {
            let owner = object_name(&e.object);
            ctx.focus_deployment
                .as_ref()
                .is_none_or(|d| rs_deployment(owner).as_deref() == Some(d.as_str()) || owner == d)
        })
        .max_by_key(|e| e.last_seen)
    else {
        return Vec::new();
    };
    let bound = e
        .message
        .split_once("forbidden: ")
        .map(|(_, b)| b.to_string())
        .unwrap_or_else(|| e.message.clone());
    let owner = object_name(&e.object).to_string();
    vec![Signal {
        analyzer: "limit_range",
        summary: format!("FailedCreate on {owner}: {bound}"),
        detail: e.message.clone(),
        category: Category::ConfigurationError,
        basis: Basis::Stated,
        links: 1,
        evidence: ctx.ev(&["kubernetes/events", "kubernetes/deployments"]),
        cause: Some(format!(
            "A LimitRange in namespace {} rejects {owner}'s pods: {bound}; the pod template's resources must fit the namespace's LimitRange",
            e.namespace
        )),
        objects: vec![format!("replicaset/{owner}")],
        ..Signal::default()
    }]
}

/// Pods the scheduler once could not place that are Running and Ready now: recovered, with when.
pub(crate) fn scheduling_recovered(ctx: &Ctx) -> Vec<Signal> {
    let pods = ctx.pods();
    let mut placed: Vec<(String, String, Option<chrono::DateTime<chrono::Utc>>)> = Vec::new();
    for e in ctx
        .events()
        .into_iter()
        .filter(|e| e.reason == "FailedScheduling")
    {
        let name = object_name(&e.object);
        if let Some(p) = ctx.pod_named(name)
            && ctx.pod_in_scope(p)
            && p.phase == "Running"
            && p.ready()
            && !placed.iter().any(|(n, _, _)| n == name)
        {
            placed.push((name.to_string(), e.message.clone(), e.last_seen));
        }
    }
    let still_pending = pods
        .iter()
        .any(|p| ctx.pod_in_scope(p) && p.phase == "Pending" && !p.deleting);
    if placed.is_empty() || still_pending {
        return Vec::new();
    }
    let names: Vec<String> = placed.iter().map(|(n, _, _)| n.clone()).collect();
    let last = placed.iter().filter_map(|(_, _, t)| *t).max();
    let when = last
        .map(|t| {
            format!(
                "last at {} ({:.0} min ago)",
                t.format("%H:%M"),
                ctx.minutes_ago(t)
            )
        })
        .unwrap_or_else(|| "time unknown".into());
    let evidence = ctx.ev(&["kubernetes/events", "kubernetes/pods"]);
    vec![Signal {
        analyzer: "scheduling_recovered",
        history: true,
        summary: format!(
            "{} pod(s) were Pending (FailedScheduling, {when}) and are Running and Ready now",
            names.len()
        ),
        category: Category::Healthy,
        basis: if last.is_some_and(|t| ctx.minutes_ago(t) >= 5.0) {
            Basis::Measured
        } else {
            Basis::Observed
        },
        links: if last.is_some_and(|t| ctx.minutes_ago(t) >= 5.0) {
            0
        } else {
            1
        },
        evidence: evidence.clone(),
        benign: true,
        cause: Some(format!(
            "Recovered: pod(s) {} could not be scheduled earlier (\"{}\", {when}) and have been Running and Ready since; nothing is Pending now",
            list_names(&names, 3),
            placed[0].1
        )),
        ruled_out: vec![crate::model::RuledOut {
            statement: "Pods still unschedulable".into(),
            reason: format!(
                "scheduled since: {} Running and Ready, no pod of the workload Pending",
                list_names(&names, 3)
            ),
            evidence,
        }],
        objects: names.iter().map(|n| format!("pod/{n}")).collect(),
        ..Signal::default()
    }]
}

/// FailedCreate with "exceeded quota": a ResourceQuota stops the controller creating pods.
pub(crate) fn quota_exceeded(ctx: &Ctx) -> Vec<Signal> {
    let events: Vec<_> = ctx
        .events()
        .into_iter()
        .filter(|e| e.message.contains("exceeded quota"))
        .filter(|e| {
            let owner = object_name(&e.object);
            ctx.focus_deployment
                .as_ref()
                .is_none_or(|d| rs_deployment(owner).as_deref() == Some(d.as_str()) || owner == d)
        })
        .collect();
    let Some(e) = events.iter().max_by_key(|e| e.last_seen) else {
        return Vec::new();
    };
    let caps = QUOTA.as_ref().and_then(|re| re.captures(&e.message));
    let part = |i: usize| {
        caps.as_ref()
            .and_then(|c| c.get(i))
            .map(|m| m.as_str().trim().to_string())
    };
    let quota = part(1).unwrap_or_else(|| "a ResourceQuota".into());
    let numbers = match (part(2), part(3), part(4)) {
        (Some(r), Some(u), Some(l)) => format!(" (requested {r}, used {u}, limited {l})"),
        _ => String::new(),
    };
    let owner = object_name(&e.object).to_string();
    let evidence = ctx.ev(&["kubernetes/events", "kubernetes/deployments"]);
    vec![Signal {
        analyzer: "quota_exceeded",
        summary: format!("FailedCreate on {owner}: exceeded quota {quota}{numbers}"),
        detail: e.message.clone(),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        links: 1,
        evidence,
        cause: Some(format!(
            "ResourceQuota {quota} in namespace {} is exhausted{numbers}: {owner} gets FailedCreate (\"exceeded quota\") and cannot create the missing pods",
            e.namespace
        )),
        objects: vec![format!("replicaset/{owner}")],
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::K8sEventFacts;
    use crate::reason::Observations;

    fn ev(reason: &str, object: &str, msg: &str) -> K8sEventFacts {
        K8sEventFacts {
            event_type: "Warning".into(),
            reason: reason.into(),
            message: msg.into(),
            object: object.into(),
            namespace: "ml".into(),
            count: 3,
            ..K8sEventFacts::default()
        }
    }

    #[test]
    fn insufficient_memory_is_resource_exhaustion() {
        let obs = Observations {
            events: vec![ev(
                "FailedScheduling",
                "Pod/trainer-5d6f7-abc",
                "0/4 nodes are available: 4 Insufficient memory. preemption: 0/4 nodes are available",
            )],
            ..Observations::default()
        };
        let sigs = failed_scheduling(&Ctx::new(&obs));
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
        assert!(
            sigs[0]
                .cause
                .as_deref()
                .unwrap_or("")
                .contains("Insufficient memory")
        );
    }

    fn pending(name: &str, cpu: &str, claim: Option<crate::model::ClaimFacts>) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "ml".into(),
            phase: "Pending".into(),
            containers: vec![ContainerFacts {
                name: "app".into(),
                cpu_request: Some(cpu.into()),
                ..ContainerFacts::default()
            }],
            claims: claim.into_iter().collect(),
            ..PodFacts::default()
        }
    }

    fn node(name: &str, cpu: &str, zone: &str) -> NodeFacts {
        NodeFacts {
            name: name.into(),
            conditions: [("Ready".to_string(), "True".to_string())].into(),
            allocatable_cpu: Some(cpu.into()),
            labels: [("topology.kubernetes.io/zone".to_string(), zone.to_string())].into(),
            ..NodeFacts::default()
        }
    }

    fn scheduled(pod: PodFacts, msg: &str) -> Signal {
        let obs = Observations {
            events: vec![ev("FailedScheduling", &format!("Pod/{}", pod.name), msg)],
            pods: vec![pod],
            nodes: vec![
                node("n1", "3920m", "eu-west-1b"),
                node("n2", "3920m", "eu-west-1c"),
            ],
            ..Observations::default()
        };
        let mut sigs = failed_scheduling(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        sigs.remove(0)
    }

    /// A running node-exporter pod on `n1` holding hostPort 9100.
    fn port_9100_holder() -> PodFacts {
        let mut holder = pending("exporter-abcde", "10m", None);
        holder.phase = "Running".into();
        holder.node = Some("n1".into());
        holder.owner = Some("DaemonSet/node-exporter".into());
        holder.containers[0].host_ports = vec![9100];
        holder
    }

    #[test]
    fn a_host_port_every_node_has_taken_names_the_port_and_who_holds_it() {
        let mut p = pending("bridge-1", "100m", None);
        p.containers[0].host_ports = vec![9100];
        let holder = port_9100_holder();
        let msg = "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
        let obs = Observations {
            events: vec![ev("FailedScheduling", "Pod/bridge-1", msg)],
            pods: vec![p, holder],
            nodes: vec![node("n1", "4", "a"), node("n2", "4", "b")],
            ..Observations::default()
        };
        let sigs = failed_scheduling(&Ctx::new(&obs));
        let s = sigs.iter().find(|s| s.cause.is_some()).expect("a cause");
        assert_eq!(s.category, Category::ConfigurationError);
        let cause = s.cause.clone().unwrap_or_default();
        assert!(
            cause.contains("hostPort 9100") && cause.contains("node-exporter"),
            "{cause}"
        );
    }

    #[test]
    fn a_daemonset_pod_is_judged_by_its_own_nodes_reason_not_the_others_affinity() {
        let mut p = pending("agent-x4r8p", "10m", None);
        p.owner = Some("DaemonSet/agent".into());
        p.containers[0].host_ports = vec![9100];
        let holder = port_9100_holder();
        let msg = "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.";
        let mut obs = Observations {
            events: vec![ev("FailedScheduling", "Pod/agent-x4r8p", msg)],
            pods: vec![p, holder],
            nodes: vec![
                node("n1", "4", "a"),
                node("n2", "4", "b"),
                node("n3", "4", "c"),
            ],
            ..Observations::default()
        };
        let cause = |obs: &Observations| {
            failed_scheduling(&Ctx::new(obs))
                .iter()
                .find_map(|s| s.cause.clone())
                .unwrap_or_default()
        };
        let said = cause(&obs);
        assert!(
            said.contains("hostPort 9100") && !said.contains("no node matches"),
            "{said}"
        );
        // A Deployment's pod that matches two nodes' selector nowhere is about its selector.
        obs.pods[0].owner = Some("ReplicaSet/agent-5d8f9".into());
        assert!(!cause(&obs).contains("hostPort 9100"), "{}", cause(&obs));
    }

    #[test]
    fn the_schedulers_reasons_are_read_against_the_pods_and_nodes() {
        assert_eq!(
            node_reasons(
                "0/5 nodes are available: 2 node(s) had untolerated taint {gpu: present}, 3 Insufficient cpu. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."
            ),
            vec![
                (
                    2,
                    "node(s) had untolerated taint {gpu: present}".to_string()
                ),
                (3, "Insufficient cpu".to_string())
            ]
        );
        // Nodes that fit but for a taint: the missing toleration decides.
        let s = scheduled(
            pending("asr-1", "1", None),
            "0/5 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: present}, 3 Insufficient nvidia.com/gpu.",
        );
        assert_eq!(s.category, Category::ConfigurationError);
        assert!(
            s.cause
                .unwrap_or_default()
                .contains("toleration for that taint")
        );
        // A node condition's taint is the node's state, not the pod's configuration.
        let s = scheduled(
            pending("asr-1", "1", None),
            "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu.",
        );
        assert!(!s.cause.unwrap_or_default().contains("toleration"));
        // A request no node could ever hold is named with both quantities.
        let s = scheduled(
            pending("tiles-1", "6", None),
            "0/2 nodes are available: 2 Insufficient cpu.",
        );
        assert_eq!(s.category, Category::ResourceExhaustion);
        let cause = s.cause.unwrap_or_default();
        assert!(
            cause.contains("requests 6 cpu") && cause.contains("(3920m)"),
            "{cause}"
        );
        let s = scheduled(
            pending("tiles-1", "2", None),
            "0/2 nodes are available: 2 Insufficient cpu.",
        );
        assert!(!s.cause.unwrap_or_default().contains("can ever hold"));
        // A volume pinned to a zone no node is in.
        let claim = crate::model::ClaimFacts {
            name: "data-kafka-0".into(),
            read: true,
            phase: "Bound".into(),
            volume: Some("pvc-3333".into()),
            volume_affinity: vec!["topology.kubernetes.io/zone in (eu-west-1a)".into()],
            ..crate::model::ClaimFacts::default()
        };
        let s = scheduled(
            pending("kafka-0", "1", Some(claim)),
            "0/2 nodes are available: 2 node(s) had volume node affinity conflict.",
        );
        assert_eq!(s.category, Category::Infrastructure);
        let cause = s.cause.unwrap_or_default();
        assert!(
            cause.contains("zone in (eu-west-1a)") && cause.contains("eu-west-1b, eu-west-1c"),
            "{cause}"
        );
    }

    #[test]
    fn taints_and_affinity_are_configuration() {
        let (c, _) =
            classify("0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}");
        assert_eq!(c, Category::ConfigurationError);
        let (c, _) = classify(
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector",
        );
        assert_eq!(c, Category::ConfigurationError);
        let (c, m) = classify("0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory");
        assert_eq!(c, Category::ResourceExhaustion);
        assert!(m.contains("cpu and memory"), "{m}");
    }

    #[test]
    fn quota_exceeded_names_quota_and_numbers() {
        let obs = Observations {
            events: vec![ev(
                "FailedCreate",
                "ReplicaSet/api-6b7c8",
                "Error creating: pods \"api-6b7c8-xx\" is forbidden: exceeded quota: team-quota, requested: limits.memory=2Gi, used: limits.memory=8Gi, limited: limits.memory=8Gi",
            )],
            ..Observations::default()
        };
        let sigs = quota_exceeded(&Ctx::new(&obs));
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("team-quota") && cause.contains("limited limits.memory=8Gi"),
            "{cause}"
        );
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
    }
}
