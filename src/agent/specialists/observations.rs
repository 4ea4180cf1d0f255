//! What lanes learn: one tool output folded into a lane's observations, and two lanes' merged.

use crate::agent::tools::{Params, ToolOutput};
use crate::model::{EvidenceId, LogLine};
use crate::reason::Observations;

/// Fold one tool output into the observations and index its evidence by kind.
pub fn absorb(
    obs: &mut Observations,
    tool: &str,
    params: &Params,
    output: &ToolOutput,
    kind: &str,
    id: &EvidenceId,
) {
    obs.evidence
        .entry(kind.to_string())
        .or_default()
        .push(id.clone());
    match output {
        ToolOutput::Pods(v) => {
            merge_by(&mut obs.pods, v, |p| (p.namespace.clone(), p.name.clone()))
        }
        // The same event read twice (the namespace's Warnings, then its object's own) is one.
        ToolOutput::Events(v) => merge_by(&mut obs.events, v, |e| {
            (
                e.namespace.clone(),
                e.object.clone(),
                e.reason.clone(),
                e.message.clone(),
                e.event_type.clone(),
                e.first_seen,
                e.last_seen,
                e.count,
            )
        }),
        ToolOutput::Deployments(v) if tool.ends_with("replica_sets") => {
            merge_by(&mut obs.replica_sets, v, |d| {
                (d.namespace.clone(), d.name.clone())
            })
        }
        ToolOutput::Deployments(v) if crate::agent::evidence::is_revisions(tool) => {
            merge_by(&mut obs.controller_revisions, v, |d| {
                (d.namespace.clone(), d.name.clone())
            })
        }
        ToolOutput::Deployments(v) => merge_by(&mut obs.deployments, v, |d| {
            (d.namespace.clone(), d.name.clone())
        }),
        ToolOutput::Nodes(v) => merge_by(&mut obs.nodes, v, |n| (String::new(), n.name.clone())),
        ToolOutput::Services(v) => merge_by(&mut obs.services, v, |s| {
            (s.namespace.clone(), s.name.clone())
        }),
        ToolOutput::Ingresses(v) => {
            merge_by(&mut obs.ingresses, &v.ingresses, |i| {
                (i.namespace.clone(), i.name.clone())
            });
            if let Some(classes) = &v.classes {
                merge_by(
                    obs.ingress_classes.get_or_insert_with(Vec::new),
                    classes,
                    |c| c.name.clone(),
                );
            }
        }
        // A Secret list (names only) says which exist in its namespace, beside the changes.
        ToolOutput::Changes(v) if tool == "kubernetes.secrets" => {
            if let Some(ns) = crate::agent::tools::p_str(params, "namespace") {
                let names = obs.secrets.entry(ns.to_string()).or_default();
                for c in v {
                    if !names.contains(&c.id) {
                        names.push(c.id.clone());
                    }
                }
            }
            obs.changes.extend(v.iter().cloned());
        }
        ToolOutput::Workloads(v) => merge_by(&mut obs.workloads, v, |w| {
            (format!("{}/{}", w.kind, w.namespace), w.name.clone())
        }),
        ToolOutput::Logs(v) if tool.starts_with("kubernetes.") => {
            let pod = crate::agent::tools::p_str(params, "pod")
                .unwrap_or("")
                .to_string();
            let container = crate::agent::tools::p_str(params, "container").map(str::to_string);
            let previous = crate::agent::tools::p_bool(params, "previous") == Some(true);
            obs.pod_logs.extend(v.iter().map(|l| {
                let mut l: LogLine = l.clone();
                l.labels.entry("pod".into()).or_insert_with(|| pod.clone());
                if let Some(c) = &container {
                    l.labels
                        .entry("container".into())
                        .or_insert_with(|| c.clone());
                }
                if previous {
                    l.labels.insert("previous".into(), "true".into());
                }
                l
            }));
        }
        ToolOutput::Logs(v) => obs.logs.extend(v.iter().cloned()),
        // Discovered names and metadata plan queries; they are not measurements.
        ToolOutput::Series(_) if is_discovery(tool) => {}
        ToolOutput::Series(v) => merge_series(&mut obs.metrics, v),
        ToolOutput::Rules(v) => merge_by(&mut obs.rules, v, |r| (r.group.clone(), r.name.clone())),
        ToolOutput::Alerts(v) => obs.alerts.extend(v.iter().cloned()),
        ToolOutput::Changes(v) => obs.changes.extend(v.iter().cloned()),
        ToolOutput::Text(_) | ToolOutput::Other => {}
        ToolOutput::Postgres(v) => obs.postgres.extend(v.iter().cloned()),
        ToolOutput::Cloud(v) => obs.cloud.extend(v.iter().cloned()),
    }
}

/// Reads that discover what Prometheus has rather than measure it.
pub fn is_discovery(tool: &str) -> bool {
    matches!(tool, "prometheus.series" | "prometheus.metadata")
}

/// The same series read over two windows is one series: points are unioned by timestamp.
fn merge_series(into: &mut Vec<crate::model::Series>, items: &[crate::model::Series]) {
    for item in items {
        match into
            .iter_mut()
            .find(|s| s.name == item.name && s.labels == item.labels)
        {
            Some(slot) => {
                slot.points.extend(item.points.iter().copied());
                slot.points.sort_by(|a, b| a.0.total_cmp(&b.0));
                slot.points.dedup_by(|a, b| a.0 == b.0);
            }
            None => into.push(item.clone()),
        }
    }
}

/// Add items, replacing ones with the same key (a later read of the same object wins). One pass
/// over each list: the keys already held are indexed once, not searched per item.
fn merge_by<T: Clone, K: Eq + std::hash::Hash>(
    into: &mut Vec<T>,
    items: &[T],
    key: impl Fn(&T) -> K,
) {
    if items.is_empty() {
        return;
    }
    let mut at: std::collections::HashMap<K, usize> =
        std::collections::HashMap::with_capacity(into.len() + items.len());
    for (i, x) in into.iter().enumerate() {
        at.entry(key(x)).or_insert(i);
    }
    for item in items {
        let k = key(item);
        match at.get(&k) {
            Some(&i) => into[i] = item.clone(),
            None => {
                at.insert(k, into.len());
                into.push(item.clone());
            }
        }
    }
}

/// Combine what two lanes learned.
pub fn merge(into: &mut Observations, from: Observations) {
    merge_by(&mut into.pods, &from.pods, |p| {
        (p.namespace.clone(), p.name.clone())
    });
    into.events.extend(from.events);
    merge_by(&mut into.deployments, &from.deployments, |d| {
        (d.namespace.clone(), d.name.clone())
    });
    merge_by(&mut into.replica_sets, &from.replica_sets, |d| {
        (d.namespace.clone(), d.name.clone())
    });
    merge_by(
        &mut into.controller_revisions,
        &from.controller_revisions,
        |d| (d.namespace.clone(), d.name.clone()),
    );
    merge_by(&mut into.workloads, &from.workloads, |w| {
        (w.kind.clone(), w.namespace.clone(), w.name.clone())
    });
    merge_by(&mut into.nodes, &from.nodes, |n| n.name.clone());
    merge_by(&mut into.services, &from.services, |s| {
        (s.namespace.clone(), s.name.clone())
    });
    merge_by(&mut into.ingresses, &from.ingresses, |i| {
        (i.namespace.clone(), i.name.clone())
    });
    if let Some(classes) = from.ingress_classes {
        merge_by(
            into.ingress_classes.get_or_insert_with(Vec::new),
            &classes,
            |c| c.name.clone(),
        );
    }
    for (ns, names) in from.secrets {
        let slot = into.secrets.entry(ns).or_default();
        for n in names {
            if !slot.contains(&n) {
                slot.push(n);
            }
        }
    }
    into.pod_logs.extend(from.pod_logs);
    into.logs.extend(from.logs);
    merge_series(&mut into.metrics, &from.metrics);
    merge_by(&mut into.rules, &from.rules, |r| {
        (r.group.clone(), r.name.clone())
    });
    into.alerts.extend(from.alerts);
    into.changes.extend(from.changes);
    into.postgres.extend(from.postgres);
    into.cloud.extend(from.cloud);
    if into.expr.is_none() {
        into.expr = from.expr;
    }
    for (k, ids) in from.evidence {
        let slot = into.evidence.entry(k).or_default();
        for id in ids {
            if !slot.contains(&id) {
                slot.push(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_merge_workloads_by_kind_namespace_and_name() {
        let w = |kind: &str, name: &str, ready: u32| crate::model::WorkloadFacts {
            kind: kind.into(),
            name: name.into(),
            namespace: "orders".into(),
            ready,
            ..Default::default()
        };
        let mut into = Observations {
            workloads: vec![w("StatefulSet", "db", 1)],
            ..Observations::default()
        };
        let from = Observations {
            workloads: vec![w("StatefulSet", "db", 3), w("Job", "db", 0)],
            ..Observations::default()
        };
        merge(&mut into, from);
        assert_eq!(into.workloads.len(), 2);
        assert_eq!(into.workloads[0].ready, 3);
    }

    #[test]
    fn secret_names_and_ingresses_are_kept_by_namespace_and_merged() {
        use crate::model::{Change, IngressClassFacts, IngressFacts, IngressList};
        let secret = |name: &str| Change {
            id: name.into(),
            title: format!("secret {name} created"),
            target: format!("shop/secret/{name}"),
            ..Change::default()
        };
        let in_shop = crate::agent::tools::params([("namespace", crate::agent::tools::s("shop"))]);
        let mut obs = Observations::default();
        absorb(
            &mut obs,
            "kubernetes.secrets",
            &in_shop,
            &ToolOutput::Changes(vec![secret("shop-tls")]),
            "changes",
            &"ev-1".to_string(),
        );
        assert_eq!(obs.secrets.get("shop"), Some(&vec!["shop-tls".to_string()]));
        assert_eq!(obs.changes.len(), 1);
        // A ConfigMap list is not a list of Secrets.
        absorb(
            &mut obs,
            "kubernetes.config_maps",
            &in_shop,
            &ToolOutput::Changes(vec![secret("settings")]),
            "changes",
            &"ev-2".to_string(),
        );
        assert_eq!(obs.secrets.get("shop").map(Vec::len), Some(1));
        let ing = |name: &str| IngressFacts {
            name: name.into(),
            namespace: "shop".into(),
            ..IngressFacts::default()
        };
        // Classes not read stay unknown.
        absorb(
            &mut obs,
            "kubernetes.ingresses",
            &in_shop,
            &ToolOutput::Ingresses(IngressList {
                ingresses: vec![ing("shop")],
                classes: None,
            }),
            "kubernetes/ingresses",
            &"ev-3".to_string(),
        );
        assert!(obs.ingress_classes.is_none());
        let from = Observations {
            ingresses: vec![ing("shop"), ing("docs")],
            ingress_classes: Some(vec![IngressClassFacts {
                name: "nginx".into(),
                ..IngressClassFacts::default()
            }]),
            secrets: std::collections::BTreeMap::from([(
                "shop".to_string(),
                vec!["shop-tls".to_string(), "other".to_string()],
            )]),
            ..Observations::default()
        };
        merge(&mut obs, from);
        assert_eq!(obs.ingresses.len(), 2);
        assert_eq!(obs.ingress_classes.map(|c| c.len()), Some(1));
        assert_eq!(
            obs.secrets.get("shop"),
            Some(&vec!["shop-tls".to_string(), "other".to_string()])
        );
    }
}
