//! Node analyzers: NotReady (kubelet heartbeat lost), memory/disk/PID pressure, and a drain that
//! a PodDisruptionBudget holds.

use super::{Basis, Decl, Role};
use crate::model::{Category, NodeFacts, PodFacts};
use crate::reason::{Ctx, Signal, actions, list_names, object_name};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "node_not_ready",
        title: "node not Ready",
        concern: "nodes",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "node_pressure",
        title: "node under memory, disk or PID pressure",
        concern: "nodes",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "node_agent",
        title: "the node's own agents run where the subject fails",
        concern: "nodes",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "drain_blocked",
        title: "node drains",
        concern: "nodes",
        role: Role::Failure,
        reads: &[],
    },
];

const PRESSURES: [&str; 3] = ["MemoryPressure", "DiskPressure", "PIDPressure"];

fn unique_nodes<'a>(ctx: &Ctx<'a>) -> Vec<&'a NodeFacts> {
    let mut out: Vec<&NodeFacts> = Vec::with_capacity(ctx.obs.nodes.len());
    let mut at: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(ctx.obs.nodes.len());
    for n in &ctx.obs.nodes {
        match at.get(n.name.as_str()) {
            Some(&i) => out[i] = n,
            None => {
                at.insert(n.name.as_str(), out.len());
                out.push(n);
            }
        }
    }
    out
}

fn pods_on<'a>(ctx: &Ctx<'a>, node: &str) -> Vec<&'a PodFacts> {
    ctx.pods_on(node)
}

fn pressures(n: &NodeFacts) -> Vec<&'static str> {
    PRESSURES
        .iter()
        .copied()
        .filter(|p| n.conditions.get(*p).is_some_and(|s| s == "True"))
        .collect()
}

/// Nodes whose Ready condition is False or Unknown.
pub(crate) fn node_not_ready(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for n in unique_nodes(ctx).into_iter().filter(|n| !n.ready()) {
        let status = n
            .conditions
            .get("Ready")
            .cloned()
            .unwrap_or_else(|| "Unknown".into());
        let why = n
            .condition_messages
            .get("Ready")
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        let pods = pods_on(ctx, &n.name);
        // The workload each belongs to, by its owner links (what the page is about): read from
        // the controllers, which the check then cites.
        let mut owners_read = false;
        let affected: Vec<String> = pods
            .iter()
            .filter(|p| !p.ready())
            .map(|p| match ctx.workload_of(p) {
                Some((kind, name)) => {
                    owners_read = true;
                    format!(
                        "{} ({} {name}, phase {})",
                        p.name,
                        kind.to_lowercase(),
                        p.phase
                    )
                }
                None => format!("{} (phase {})", p.name, p.phase),
            })
            .collect();
        let in_scope =
            ctx.focus_nodes.contains(&n.name) || pods.iter().any(|p| ctx.pod_in_scope(p));
        let heartbeat = if status == "Unknown" || why.to_lowercase().contains("kubelet") {
            "the kubelet stopped posting node status (heartbeat lost), so the control plane no longer knows the state of its pods"
        } else {
            "the kubelet reports the node unhealthy"
        };
        let press = pressures(n);
        let press_txt = if press.is_empty() {
            String::new()
        } else {
            format!("; it also reports {}", press.join(", "))
        };
        let evictions = ctx
            .events_for(&n.name)
            .iter()
            .any(|e| e.reason.contains("Eviction") || e.message.contains("Marking for deletion"));
        let evict_txt = if evictions {
            "; the node controller is evicting its pods"
        } else {
            ""
        };
        let healthy: Vec<String> = unique_nodes(ctx)
            .into_iter()
            .filter(|m| m.ready())
            .map(|m| m.name.clone())
            .collect();
        let elsewhere = if healthy.is_empty() {
            String::new()
        } else {
            format!(
                "; pods on the other node(s) ({}) are unaffected",
                list_names(&healthy, 2)
            )
        };
        let affected_txt = if affected.is_empty() {
            String::new()
        } else {
            format!("; pods on it are unreachable: {}", list_names(&affected, 3))
        };
        // The condition's own transition time is the onset (the kubelet's last heartbeat lost).
        let since = n.condition_since.get("Ready").copied();
        let since_txt = since
            .map(|t| format!(" since {}", t.format("%H:%M UTC")))
            .unwrap_or_default();
        let mut evidence = ctx.ev(&["kubernetes/nodes", "kubernetes/pods", "kubernetes/events"]);
        if owners_read {
            evidence.extend(ctx.ev(&["kubernetes/deployments", "kubernetes/workloads"]));
        }
        let mut sig = Signal {
            analyzer: "node_not_ready",
            summary: format!("node {} is NotReady (Ready={status}{why})", n.name),
            detail: format!("{} pod(s) scheduled there", pods.len()),
            category: Category::Infrastructure,
            basis: if in_scope {
                Basis::Stated
            } else {
                Basis::Timed
            },
            links: if in_scope { 2 } else { 1 },
            evidence: evidence.clone(),
            cause: Some(format!(
                "Node {} is NotReady{since_txt} (Ready={status}{why}): {heartbeat}{press_txt}{affected_txt}{evict_txt}{elsewhere}",
                n.name
            )),
            since,
            objects: vec![format!("node/{}", n.name)],
            ..Signal::default()
        };
        sig.actions.push(actions::cordon(
            &n.name,
            format!(
                "node {} lost its kubelet heartbeat; stop scheduling new pods onto it",
                n.name
            ),
            evidence.clone(),
        ));
        for p in pods.iter().filter(|p| !p.ready() && !p.deleting) {
            let ns = crate::reason::namespace_or_default(&p.namespace);
            sig.actions.push(actions::delete_pod(
                ns,
                &p.name,
                format!("{} is stuck on the unreachable node; deleting it lets its controller reschedule it on a Ready node", p.name),
                evidence.clone(),
            ));
        }
        sig.actions.push(actions::drain(
            &n.name,
            format!(
                "move every remaining workload off node {} before it is repaired or replaced",
                n.name
            ),
            evidence,
        ));
        out.push(sig);
    }
    out
}

/// Ready nodes reporting memory, disk or PID pressure (evictions follow).
pub(crate) fn node_pressure(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for n in unique_nodes(ctx).into_iter().filter(|n| n.ready()) {
        let press = pressures(n);
        if press.is_empty() {
            continue;
        }
        let pods = pods_on(ctx, &n.name);
        let in_scope =
            ctx.focus_nodes.contains(&n.name) || pods.iter().any(|p| ctx.pod_in_scope(p));
        let evicted: Vec<String> = ctx
            .events()
            .into_iter()
            .filter(|e| {
                e.reason == "Evicted" && pods.iter().any(|p| p.name == object_name(&e.object))
            })
            .map(|e| object_name(&e.object).to_string())
            .collect();
        let evict_txt = if evicted.is_empty() {
            String::new()
        } else {
            format!("; kubelet evicted {}", list_names(&evicted, 3))
        };
        let msgs: Vec<String> = press
            .iter()
            .filter_map(|p| n.condition_messages.get(*p).cloned())
            .collect();
        let evidence = ctx.ev(&["kubernetes/nodes", "kubernetes/events"]);
        let hog = press
            .contains(&"MemoryPressure")
            .then(|| unbounded_tenant(ctx, &n.name, &evicted))
            .flatten();
        let hog_txt = hog.map(tenant_words).unwrap_or_default();
        out.push(Signal {
            analyzer: "node_pressure",
            summary: format!("node {} reports {}{hog_txt}", n.name, press.join(", ")),
            detail: msgs.join("; "),
            category: if hog.is_some() {
                Category::ResourceExhaustion
            } else {
                Category::Infrastructure
            },
            basis: if in_scope { Basis::Logged } else { Basis::Observed },
            links: if in_scope { 1 } else { 0 },
            evidence: evidence.clone(),
            cause: Some(format!(
                "Node {} is under {}{}: kubelet starts evicting pods and refuses new ones{evict_txt}{hog_txt}",
                n.name,
                press.join(" and "),
                if msgs.is_empty() { String::new() } else { format!(" ({})", msgs.join("; ")) }
            )),
            actions: vec![actions::cordon(&n.name, format!("keep new pods off node {} while it is under pressure", n.name), evidence)],
            // The earliest of the pressures' onsets.
            since: press.iter().filter_map(|p| n.condition_since.get(*p)).min().copied(),
            objects: vec![format!("node/{}", n.name)],
            ..Signal::default()
        });
    }
    out
}

/// The one running pod on a node that sets no memory limit of its own (the evicted `except`
/// aside): under memory pressure, the pod free to grow until the node has none left, while the
/// others are bounded. None when no pod, or several, are unbounded.
pub(crate) fn unbounded_tenant<'a>(
    ctx: &Ctx<'a>,
    node: &str,
    except: &[String],
) -> Option<&'a PodFacts> {
    let unbounded: Vec<&PodFacts> = pods_on(ctx, node)
        .into_iter()
        .filter(|p| p.phase == "Running" && !p.deleting && !except.contains(&p.name))
        .filter(|p| {
            p.containers
                .iter()
                .any(|c| !c.init && c.memory_limit.is_none())
        })
        .collect();
    match unbounded.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// How an unbounded tenant is named in a cause: its pod, its request, why it is the one.
pub(crate) fn tenant_words(p: &PodFacts) -> String {
    let request = p
        .containers
        .iter()
        .filter_map(|c| c.memory_request.as_deref())
        .collect::<Vec<_>>()
        .join(", ");
    let request = if request.is_empty() {
        "no request either".to_string()
    } else {
        format!("a request of {request}")
    };
    format!(
        "; pod {} on it sets no memory limit ({request}), the one pod there free to grow until the node has no memory left: the likely tenant that filled it",
        p.name
    )
}

/// The one node the subject fails on while its pods on other nodes are fine: its not-ready pods
/// all run there, and a Ready one runs elsewhere.
pub(crate) fn confined_node<'a>(ctx: &Ctx<'a>) -> Option<&'a str> {
    if !ctx.subject.resolved {
        return None;
    }
    let mine: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p) && !p.deleting && p.phase == "Running")
        .collect();
    let failing: Vec<&str> = mine
        .iter()
        .filter(|p| !p.ready())
        .filter_map(|p| p.node.as_deref())
        .collect();
    let node = *failing.first()?;
    let confined = failing.iter().all(|n| *n == node)
        && mine
            .iter()
            .any(|p| p.ready() && p.node.as_deref().is_some_and(|n| n != node));
    confined.then_some(node)
}

/// Check: do the node's own agents (DaemonSet pods of other namespaces: its network plugin, its
/// proxy) run where the subject fails? Failing when the subject fails only on one node and an
/// agent there is not ready: the node, not the workload, is at fault.
pub(crate) fn node_agents(ctx: &Ctx) -> Vec<Signal> {
    let Some(node) = confined_node(ctx) else {
        return Vec::new();
    };
    let mine: Vec<&str> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p))
        .map(|p| p.namespace.as_str())
        .collect();
    let agents: Vec<&PodFacts> = pods_on(ctx, node)
        .into_iter()
        .filter(|p| crate::reason::daemonset_of(p).is_some())
        .filter(|p| !mine.contains(&p.namespace.as_str()) && !p.ready() && !p.deleting)
        .collect();
    let Some(agent) = agents.first() else {
        return Vec::new();
    };
    let failing: Vec<String> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p) && !p.ready() && p.node.as_deref() == Some(node))
        .map(|p| p.name.clone())
        .collect();
    let daemonset = crate::reason::daemonset_of(agent).unwrap_or_default();
    let why = super::dependencies::pod_trouble(ctx, agent)
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let own = super::dependencies::own_failure_of(ctx, &[*agent])
        .map(|(_, words)| words)
        .unwrap_or_default();
    let who = ctx.scope_name("the subject");
    let summary = format!(
        "{who} fails only on node {node} ({}), and the node's agent {} (DaemonSet {daemonset} in {}) is not ready there{why}",
        list_names(&failing, 3),
        agent.name,
        agent.namespace
    );
    let since = ctx
        .events_for(&agent.name)
        .into_iter()
        .filter(|e| e.event_type == "Warning")
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min();
    vec![Signal {
        analyzer: "node_agent",
        summary: summary.clone(),
        detail: format!("its pods on other nodes are Ready{own}"),
        category: Category::Infrastructure,
        basis: Basis::Stated,
        // Confined to the node, and the node's agent down there.
        links: 2,
        evidence: ctx.ev(&[
            "kubernetes/pods",
            "kubernetes/events",
            "kubernetes/pod_logs",
        ]),
        cause: Some(format!(
            "{summary}{own}, while its pods on other nodes are fine: the node's networking or runtime, not {who}, is at fault; restore the agent or move the pods off node {node}"
        )),
        objects: vec![format!("node/{node}")],
        since,
        ..Signal::default()
    }]
}

/// Whether an event says an eviction was refused for a PodDisruptionBudget (the eviction API's
/// 429, kubectl's and the autoscalers' words for it).
fn budget_refusal(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("disruption budget")
        || (m.contains("pdb") && (m.contains("prevents") || m.contains("evict")))
}

/// Check: does each node of the subject drain? Failing when an eviction from it is refused for a
/// PodDisruptionBudget: the node stays cordoned, waiting on a pod its budget will not let go.
pub(crate) fn drain_blocked(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for n in unique_nodes(ctx)
        .into_iter()
        .filter(|n| ctx.focus_nodes.contains(&n.name) || ctx.subject.nodes.contains(&n.name))
    {
        let on_node = pods_on(ctx, &n.name);
        let refusals: Vec<_> = ctx
            .events()
            .into_iter()
            .filter(|e| budget_refusal(&e.message))
            .filter(|e| {
                let name = object_name(&e.object);
                name == n.name || on_node.iter().any(|p| p.name == name)
            })
            .collect();
        let Some(latest) = refusals.iter().max_by_key(|e| e.last_seen) else {
            continue;
        };
        let held: Vec<String> = refusals
            .iter()
            .filter(|e| e.object.starts_with("Pod/"))
            .map(|e| object_name(&e.object).to_string())
            .collect();
        let cordoned = if n.unschedulable { "cordoned, " } else { "" };
        let draining = ctx
            .events_for(&n.name)
            .into_iter()
            .find(|e| e.reason.contains("Drain") || e.message.contains("drain"))
            .map(|e| format!(" (\"{}\")", e.message))
            .unwrap_or_default();
        let summary = format!(
            "node {} is {cordoned}waiting to drain{draining}: a PodDisruptionBudget refuses to let {} go (\"{}\")",
            n.name,
            if held.is_empty() {
                "its pods".to_string()
            } else {
                list_names(&held, 3)
            },
            latest.message
        );
        out.push(Signal {
            analyzer: "drain_blocked",
            summary: summary.clone(),
            detail: "an eviction that would leave fewer pods than the budget allows is refused, and the drain retries it forever".into(),
            category: Category::ConfigurationError,
            basis: Basis::Stated,
            links: 2,
            evidence: ctx.ev(&["kubernetes/events", "kubernetes/nodes", "kubernetes/pods"]),
            cause: Some(format!(
                "{summary}; the budget admits no disruption with the replicas the workload runs, so the drain never finishes: relax the PodDisruptionBudget (or add a replica) and the eviction goes through"
            )),
            since: refusals.iter().filter_map(|e| e.first_seen.or(e.last_seen)).min(),
            objects: vec![format!("node/{}", n.name)],
            ..Signal::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn node(name: &str, ready: &str, extra: &[(&str, &str)]) -> NodeFacts {
        let mut conditions = BTreeMap::from([("Ready".to_string(), ready.to_string())]);
        for (k, v) in extra {
            conditions.insert(k.to_string(), v.to_string());
        }
        NodeFacts {
            name: name.into(),
            conditions,
            ..NodeFacts::default()
        }
    }

    #[test]
    fn a_drain_held_by_a_disruption_budget_names_the_pod_and_the_budget() {
        let mut cordoned = node("worker-c", "True", &[]);
        cordoned.unschedulable = true;
        let ev = |object: &str, reason: &str, message: &str| crate::model::K8sEventFacts {
            event_type: "Warning".into(),
            reason: reason.into(),
            message: message.into(),
            object: object.into(),
            namespace: "treasury".into(),
            count: 9,
            ..crate::model::K8sEventFacts::default()
        };
        let mut obs = Observations {
            problem: Some("node worker-c never finishes draining".into()),
            nodes: vec![cordoned, node("worker-a", "True", &[])],
            pods: vec![PodFacts {
                name: "fx-7f-p0o9i".into(),
                namespace: "treasury".into(),
                phase: "Running".into(),
                node: Some("worker-c".into()),
                ..PodFacts::default()
            }],
            events: vec![
                ev(
                    "Node/worker-c",
                    "FailedDraining",
                    "Failed to drain node, 1 pods are waiting to be evicted",
                ),
                ev(
                    "Pod/fx-7f-p0o9i",
                    "DisruptionBlocked",
                    "Cannot disrupt Node: pdb \"treasury/fx\" prevents pod evictions",
                ),
            ],
            ..Observations::default()
        };
        let sigs = drain_blocked(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("cordoned")
                && cause.contains("fx-7f-p0o9i")
                && cause.contains("treasury/fx"),
            "{cause}"
        );
        // No refusal: the drain is not held by a budget.
        obs.events.pop();
        assert!(drain_blocked(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn unknown_ready_is_lost_kubelet() {
        let mut bad = node("worker-b", "Unknown", &[("MemoryPressure", "True")]);
        bad.condition_messages.insert(
            "Ready".into(),
            "Kubelet stopped posting node status.".into(),
        );
        let lost = chrono::Utc::now() - chrono::Duration::minutes(12);
        bad.condition_since.insert("Ready".into(), lost);
        let obs = Observations {
            nodes: vec![node("worker-a", "True", &[]), bad],
            pods: vec![PodFacts {
                name: "db-0".into(),
                namespace: "data".into(),
                phase: "Unknown".into(),
                node: Some("worker-b".into()),
                ..PodFacts::default()
            }],
            evidence: BTreeMap::from([("kubernetes/nodes".to_string(), vec!["n1".to_string()])]),
            ..Observations::default()
        };
        let sigs = node_not_ready(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("Ready=Unknown") && cause.contains("kubelet") && cause.contains("db-0"),
            "{cause}"
        );
        assert!(cause.contains("worker-a"), "{cause}");
        // The onset is the Ready condition's own transition.
        assert_eq!(sigs[0].since, Some(lost));
        assert!(
            cause.contains(&format!("NotReady since {}", lost.format("%H:%M UTC"))),
            "{cause}"
        );
        assert_eq!(sigs[0].category, Category::Infrastructure);
        let kinds: Vec<&str> = sigs[0].actions.iter().map(|a| a.kind.as_str()).collect();
        assert_eq!(
            kinds,
            vec![
                "kubernetes.cordon",
                "kubernetes.delete_pod",
                "kubernetes.drain"
            ]
        );
        // A NotReady node is not also reported as mere pressure.
        assert!(node_pressure(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn disk_pressure_on_ready_node() {
        let obs = Observations {
            nodes: vec![node("worker-c", "True", &[("DiskPressure", "True")])],
            ..Observations::default()
        };
        let sigs = node_pressure(&Ctx::new(&obs));
        assert!(sigs[0].summary.contains("DiskPressure"));
    }
}
