//! Which Kubernetes reads a known subject needs: its pods by its controller's label selector and
//! its objects' events by field selector, instead of every pod and event of its namespace.
//!
//! Selection only narrows what the reasoning would not look at. Neighbours that can take part in
//! a diagnosis are still read: the pods of every controller of the namespace short of ready
//! or of its rollout (a dependency its logs name, a stuck rollout or a failure "also noticed"),
//! and every Warning event of the namespace. Whenever the subject cannot be pinned to one controller with a selector, or
//! selecting would ask more than the whole list does, the namespace is read whole as before.

use super::specialists::Scope;
use crate::integrations::kubernetes::label_selector;
use crate::model::{DeploymentFacts, NodeFacts, PodFacts, WorkloadFacts};
use crate::reason::Observations;

/// Selected pod lists at most (the subject's and its not-ready neighbours'); beyond it the
/// namespace's list in pages is the cheaper read.
pub const MAX_POD_SELECTORS: usize = 8;
/// Objects whose events are asked for one by one at most.
pub const MAX_EVENT_OBJECTS: usize = 12;

/// The pod reads of a known subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodPlan {
    /// The subject controller's `labelSelector`.
    pub subject: String,
    /// Those of the namespace's other controllers short of ready, at most
    /// [`MAX_POD_SELECTORS`] - 1, each once and none the subject's.
    pub neighbours: Vec<String>,
}

fn in_ns(object_ns: &str, ns: &str) -> bool {
    object_ns == ns || object_ns.is_empty() && ns == "default"
}

/// A condition reported false (`Available`, `Progressing`) or failing.
fn condition_bad(
    conditions: &std::collections::BTreeMap<String, (String, String, String)>,
) -> bool {
    conditions
        .iter()
        .any(|(kind, (status, _, _))| match kind.as_str() {
            "Failed" | "ReplicaFailure" => status == "True",
            "Complete" | "Suspended" => false,
            _ => status == "False",
        })
}

/// A Deployment short of ready or of its rollout: fewer ready, updated or available than
/// wanted, some unavailable, a spec not yet observed, or a condition false.
fn deployment_in_trouble(d: &DeploymentFacts) -> bool {
    d.ready_replicas < d.replicas
        || d.updated_replicas < d.replicas
        || d.available_replicas < d.replicas
        || d.unavailable_replicas > 0
        || d.observed_generation < d.generation
        || condition_bad(&d.conditions)
}

/// Any other controller short of ready or of its rollout; a Job short of done (neither
/// complete nor failed) or failed (its pods tell why).
fn workload_in_trouble(w: &WorkloadFacts) -> bool {
    if w.kind == "Job" {
        let done = |c: &str| w.conditions.get(c).is_some_and(|(s, _, _)| s == "True");
        return !done("Complete") && (w.active > w.ready || done("Failed"));
    }
    w.ready < w.desired
        || w.updated < w.desired
        || w.available < w.desired
        || w.unavailable > 0
        || w.misscheduled > 0
        || w.current_revision != w.update_revision && w.update_revision.is_some()
        || w.observed_generation < w.generation
        || condition_bad(&w.conditions)
}

/// The selected reads for the scope, from the controllers listed in its namespace; None when the
/// namespace is to be read whole: no alert naming a namespace and a workload, no single
/// controller of that name with a selector, a neighbour in trouble without one, or too many.
pub fn pod_plan(scope: &Scope, obs: &Observations) -> Option<PodPlan> {
    scope.alert.as_ref()?;
    let ns = scope.namespace.as_deref()?;
    let name = scope.workload.as_deref()?;
    // (name, selector, short of ready) of every controller in the namespace; a CronJob's pods
    // are its Jobs', so it has no selector of its own and is not one.
    let mut controllers: Vec<(&str, Option<String>, bool)> = Vec::new();
    for d in obs.deployments.iter().filter(|d| in_ns(&d.namespace, ns)) {
        controllers.push((
            &d.name,
            label_selector(&d.selector, &d.selector_expressions),
            deployment_in_trouble(d),
        ));
    }
    for w in obs.workloads.iter().filter(|w| in_ns(&w.namespace, ns)) {
        if w.kind == "CronJob" {
            continue;
        }
        let trouble = workload_in_trouble(w);
        controllers.push((
            &w.name,
            label_selector(&w.selector, &w.selector_expressions),
            trouble,
        ));
    }
    let mut named = controllers.iter().filter(|(n, _, _)| *n == name);
    let subject = match (named.next(), named.next()) {
        (Some((_, Some(sel), _)), None) => sel.clone(),
        _ => return None,
    };
    let mut neighbours: Vec<String> = Vec::new();
    for (n, sel, trouble) in &controllers {
        if *n == name || !trouble {
            continue;
        }
        let sel = sel.clone()?;
        if sel != subject && !neighbours.contains(&sel) {
            neighbours.push(sel);
        }
    }
    (neighbours.len() < MAX_POD_SELECTORS).then_some(PodPlan {
        subject,
        neighbours,
    })
}

/// The nodes whose pods in the namespace are read beside the subject's, since a node in trouble
/// takes every pod on it down: the node the alert names, and those of the subject's pods that
/// are not Ready or report a pressure. At most [`MAX_POD_SELECTORS`].
pub fn troubled_nodes(
    scope: &Scope,
    subject_pods: &[PodFacts],
    nodes: &[NodeFacts],
) -> Vec<String> {
    let trouble = |name: &str| {
        nodes.iter().any(|n| {
            n.name == name
                && (!n.ready()
                    || n.unschedulable
                    || n.conditions
                        .iter()
                        .any(|(kind, status)| kind != "Ready" && status == "True"))
        })
    };
    let mut out: Vec<String> = scope.node.iter().cloned().collect();
    for p in subject_pods {
        if let Some(node) = p.node.as_deref()
            && !out.iter().any(|n| n == node)
            && trouble(node)
        {
            out.push(node.to_string());
        }
    }
    out.truncate(MAX_POD_SELECTORS);
    out
}

/// The names whose events are asked for one by one: the subject controller, its pods and their
/// owners (a Deployment's ReplicaSets). None when there are more than [`MAX_EVENT_OBJECTS`].
pub fn event_objects(controller: &str, subject_pods: &[&PodFacts]) -> Option<Vec<String>> {
    let mut names = vec![controller.to_string()];
    let mut add = |n: &str| {
        if !n.is_empty() && !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    for p in subject_pods {
        add(&p.name);
        if let Some((_, owner)) = p.owner.as_deref().and_then(|o| o.split_once('/')) {
            add(owner);
        }
    }
    (names.len() <= MAX_EVENT_OBJECTS).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Alert;
    use std::collections::BTreeMap;

    fn scope(workload: &str) -> Scope {
        Scope {
            alert: Some(Alert::default()),
            namespace: Some("shop".into()),
            workload: Some(workload.into()),
            ..Scope::default()
        }
    }

    fn deployment(name: &str, ready: u32) -> DeploymentFacts {
        DeploymentFacts {
            name: name.into(),
            namespace: "shop".into(),
            replicas: 3,
            ready_replicas: ready,
            updated_replicas: 3,
            available_replicas: ready,
            selector: BTreeMap::from([("app".to_string(), name.to_string())]),
            ..DeploymentFacts::default()
        }
    }

    #[test]
    fn a_named_controller_is_read_by_its_selector_with_its_troubled_neighbours() {
        let obs = Observations {
            deployments: vec![
                deployment("checkout", 1),
                deployment("payments", 2),
                deployment("catalog", 3),
                // Every replica ready, but a rollout stuck behind them.
                DeploymentFacts {
                    updated_replicas: 1,
                    ..deployment("search", 3)
                },
            ],
            workloads: vec![WorkloadFacts {
                kind: "StatefulSet".into(),
                name: "db".into(),
                namespace: "shop".into(),
                desired: 1,
                ready: 1,
                updated: 1,
                available: 1,
                selector: BTreeMap::from([("app".to_string(), "db".to_string())]),
                selector_expressions: vec!["tier In (data)".into()],
                ..WorkloadFacts::default()
            }],
            ..Observations::default()
        };
        assert_eq!(
            pod_plan(&scope("checkout"), &obs),
            Some(PodPlan {
                subject: "app=checkout".into(),
                neighbours: vec!["app=payments".into(), "app=search".into()],
            })
        );
        assert_eq!(
            pod_plan(&scope("db"), &obs).map(|p| p.subject),
            Some("app=db,tier in (data)".into())
        );
    }

    #[test]
    fn the_namespace_is_read_whole_when_the_subject_is_not_one_selectable_controller() {
        let mut obs = Observations {
            deployments: vec![deployment("checkout", 3)],
            ..Observations::default()
        };
        assert_eq!(pod_plan(&scope("missing"), &obs), None);
        let mut problem = scope("checkout");
        problem.alert = None;
        assert_eq!(pod_plan(&problem, &obs), None, "a problem's words");
        obs.workloads.push(WorkloadFacts {
            kind: "StatefulSet".into(),
            name: "checkout".into(),
            namespace: "shop".into(),
            selector: BTreeMap::from([("app".to_string(), "checkout-db".to_string())]),
            ..WorkloadFacts::default()
        });
        assert_eq!(pod_plan(&scope("checkout"), &obs), None, "two of that name");
        obs.workloads.clear();
        obs.deployments[0].selector.clear();
        assert_eq!(pod_plan(&scope("checkout"), &obs), None, "no selector");
        obs.deployments = (0..10).map(|i| deployment(&format!("d{i}"), 0)).collect();
        assert_eq!(pod_plan(&scope("d0"), &obs), None, "too many in trouble");
    }

    #[test]
    fn events_are_asked_of_the_controller_its_pods_and_their_owners() {
        let pod = |name: &str, owner: &str| PodFacts {
            name: name.into(),
            owner: Some(format!("ReplicaSet/{owner}")),
            ..PodFacts::default()
        };
        let (a, b) = (pod("web-1-a", "web-1"), pod("web-1-b", "web-1"));
        assert_eq!(
            event_objects("web", &[&a, &b]),
            Some(vec![
                "web".to_string(),
                "web-1-a".into(),
                "web-1".into(),
                "web-1-b".into()
            ])
        );
        let many: Vec<PodFacts> = (0..20).map(|i| pod(&format!("p{i}"), "rs")).collect();
        let refs: Vec<&PodFacts> = many.iter().collect();
        assert_eq!(event_objects("web", &refs), None);
    }

    #[test]
    fn pods_on_a_node_in_trouble_are_read_too() {
        let node = |name: &str, ready: &str, pressure: &str| NodeFacts {
            name: name.into(),
            conditions: BTreeMap::from([
                ("Ready".to_string(), ready.to_string()),
                ("MemoryPressure".to_string(), pressure.to_string()),
            ]),
            ..NodeFacts::default()
        };
        let nodes = [
            node("n1", "True", "False"),
            node("n2", "Unknown", "False"),
            node("n3", "True", "True"),
        ];
        let on = |n: &str| PodFacts {
            name: format!("p-{n}"),
            node: Some(n.into()),
            ..PodFacts::default()
        };
        let pods = [on("n1"), on("n2"), on("n3"), on("n2")];
        assert_eq!(troubled_nodes(&scope("web"), &pods, &nodes), ["n2", "n3"]);
        let mut named = scope("web");
        named.node = Some("n1".into());
        assert_eq!(troubled_nodes(&named, &pods[..1], &nodes), ["n1"]);
    }
}
