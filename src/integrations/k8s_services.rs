//! Services and their Endpoints, joined into what backs each Service: its selector, its ports,
//! the pods its Endpoints list as ready or not, the Ingress rules that route to it and the
//! NetworkPolicies that shut its pods off.

use crate::model::{IngressRoute, ServiceFacts};
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressBackend, NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// What was read around the Services; `None` for a list that could not be read.
#[derive(Default)]
pub struct Around<'a> {
    pub endpoints: Option<&'a [Endpoints]>,
    pub ingresses: Option<&'a [Ingress]>,
    pub policies: Option<&'a [NetworkPolicy]>,
    /// The cluster's IngressClass names, when they could be read.
    pub classes: Option<&'a [String]>,
}

/// The IngressClass an Ingress names, by field or by the older annotation.
fn class_of(ing: &Ingress) -> Option<String> {
    ing.spec
        .as_ref()
        .and_then(|s| s.ingress_class_name.clone())
        .or_else(|| {
            ing.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/ingress.class").cloned())
        })
        .filter(|c| !c.is_empty())
}

/// Each Service with its Endpoints, the Ingress rules routing to it and the policies denying its
/// pods all ingress; an Ingress backend naming no Service becomes a `missing` one. One pass over
/// each list.
pub fn network_facts(services: &[Service], around: &Around) -> Vec<ServiceFacts> {
    let mut out = service_facts(services, around.endpoints);
    let mut at: BTreeMap<(String, String), usize> = out
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.namespace.clone(), s.name.clone()), i))
        .collect();
    for ing in around.ingresses.into_iter().flatten() {
        let ns = ing.metadata.namespace.clone().unwrap_or_default();
        let name = ing.metadata.name.clone().unwrap_or_default();
        let unknown_class =
            class_of(ing).filter(|c| around.classes.is_some_and(|all| !all.contains(c)));
        for (rule, backend) in backends(ing) {
            let Some(svc) = backend.service.as_ref() else {
                continue;
            };
            let port = svc
                .port
                .as_ref()
                .and_then(|p| p.number.map(|n| n.to_string()).or_else(|| p.name.clone()))
                .unwrap_or_default();
            let key = (ns.clone(), svc.name.clone());
            let i = *at.entry(key).or_insert_with(|| {
                out.push(ServiceFacts {
                    name: svc.name.clone(),
                    namespace: ns.clone(),
                    missing: true,
                    ..ServiceFacts::default()
                });
                out.len() - 1
            });
            out[i].routes.push(IngressRoute {
                ingress: name.clone(),
                rule,
                port,
                unknown_class: unknown_class.clone(),
            });
        }
    }
    // Policies add up: a pod is shut off only when a policy isolates it for ingress and none
    // that selects it admits anything. A selector this does not judge (expressions) may admit.
    let policies: Vec<Isolation> = around
        .policies
        .into_iter()
        .flatten()
        .filter_map(isolation)
        .collect();
    let egress: Vec<Egress> = around
        .policies
        .into_iter()
        .flatten()
        .filter_map(egress_of)
        .collect();
    for svc in out
        .iter_mut()
        .filter(|s| !s.missing && !s.selector.is_empty())
    {
        // The Service's selector is what its pods carry: a policy whose labels are all among
        // them selects those pods.
        // A policy that selects by expressions is not judged: it may take them, so it counts
        // as admitting.
        let mut denying = Vec::new();
        let mut admitted = false;
        for p in policies.iter().filter(|p| p.on.takes(svc) != Some(false)) {
            if p.admits || p.on.labels.is_none() {
                admitted = true;
            } else {
                denying.push(p.on.name.clone());
            }
        }
        if !admitted {
            svc.denied_by = denying;
        }
        // Ingress admitted only from pods with given labels: every selecting policy that admits
        // anything does so by pod labels alone, so pods without them are dropped.
        let admitting: Vec<&Isolation> = policies
            .iter()
            .filter(|p| p.on.takes(svc) == Some(true) && p.admits)
            .collect();
        if !admitting.is_empty() && admitting.iter().all(|p| p.from.is_some()) {
            svc.ingress_limited_by = admitting.iter().map(|p| p.on.name.clone()).collect();
            let mut from: Vec<String> = admitting
                .iter()
                .flat_map(|p| p.from.iter().flatten())
                .map(|labels| {
                    labels
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            from.sort();
            from.dedup();
            svc.ingress_from = from;
        }
        // Egress: the ports the pods may reach, when every selecting policy limits them by port.
        let limiting: Vec<&Egress> = egress
            .iter()
            .filter(|p| p.on.takes(svc) == Some(true))
            .collect();
        if !limiting.is_empty() && limiting.iter().all(|p| p.ports.is_some()) {
            svc.egress_limited_by = limiting.iter().map(|p| p.on.name.clone()).collect();
            let mut ports: Vec<u16> = limiting
                .iter()
                .flat_map(|p| p.ports.iter().flatten().copied())
                .collect();
            ports.sort_unstable();
            ports.dedup();
            svc.egress_ports = ports;
        }
    }
    out
}

/// What one NetworkPolicy does to egress for the pods it selects.
struct Egress {
    on: Selection,
    /// The only ports its rules let the pods connect to; `None` when a rule leaves ports open
    /// (no `ports`, or a named port this does not resolve).
    ports: Option<Vec<u16>>,
}

/// A policy that applies to egress, with the ports it allows; `None` for one that governs
/// ingress only.
fn egress_of(np: &NetworkPolicy) -> Option<Egress> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let spec = np.spec.as_ref()?;
    if !spec
        .policy_types
        .as_ref()
        .is_some_and(|t| t.iter().any(|t| t == "Egress"))
    {
        return None;
    }
    let mut ports: Option<Vec<u16>> = Some(Vec::new());
    for rule in spec.egress.iter().flatten() {
        match &rule.ports {
            Some(list) if !list.is_empty() => {
                for p in list {
                    match &p.port {
                        Some(IntOrString::Int(n)) => {
                            if let (Some(v), Ok(n)) = (ports.as_mut(), u16::try_from(*n)) {
                                v.push(n);
                            }
                        }
                        _ => ports = None,
                    }
                }
            }
            _ => ports = None,
        }
    }
    Some(Egress {
        on: Selection::of(np, spec),
        ports,
    })
}

/// Every backend of an Ingress with the rule it serves: `host/path`, `*` for the default.
fn backends(ing: &Ingress) -> Vec<(String, &IngressBackend)> {
    let Some(spec) = ing.spec.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<(String, &IngressBackend)> = Vec::new();
    if let Some(b) = &spec.default_backend {
        out.push(("*".to_string(), b));
    }
    for rule in spec.rules.iter().flatten() {
        let host = rule.host.clone().unwrap_or_else(|| "*".into());
        for p in rule.http.iter().flat_map(|h| h.paths.iter()) {
            let path = p.path.clone().unwrap_or_else(|| "/".into());
            out.push((format!("{host}{path}"), &p.backend));
        }
    }
    out
}

/// Which pods a NetworkPolicy selects: its namespace, its name and the labels it selects by
/// (empty: every pod; `None` for a selector with expressions, which this does not judge).
struct Selection {
    namespace: String,
    name: String,
    labels: Option<BTreeMap<String, String>>,
}

impl Selection {
    fn of(np: &NetworkPolicy, spec: &NetworkPolicySpec) -> Self {
        let selector = spec.pod_selector.as_ref();
        let expressions = selector
            .and_then(|s| s.match_expressions.as_ref())
            .is_some_and(|e| !e.is_empty());
        Selection {
            namespace: np.metadata.namespace.clone().unwrap_or_default(),
            name: np.metadata.name.clone().unwrap_or_default(),
            labels: (!expressions).then(|| {
                selector
                    .and_then(|s| s.match_labels.clone())
                    .unwrap_or_default()
            }),
        }
    }

    /// Whether it selects the pods behind a Service: the Service's selector is what its pods
    /// carry, so a policy whose labels are all among them selects them. `None` for one that
    /// selects by expressions in the Service's namespace.
    fn takes(&self, svc: &ServiceFacts) -> Option<bool> {
        if self.namespace != svc.namespace {
            return Some(false);
        }
        let labels = self.labels.as_ref()?;
        Some(labels.iter().all(|(k, v)| svc.selector.get(k) == Some(v)))
    }
}

/// What one NetworkPolicy does to ingress for the pods it selects.
struct Isolation {
    on: Selection,
    /// Whether it admits some ingress (it has an ingress rule).
    admits: bool,
    /// The pod labels its rules admit from, one set a peer, the peer's namespace as its
    /// `kubernetes.io/metadata.name` label; `None` when a rule admits more than this judges
    /// (any source, an ipBlock, namespaces chosen by other labels, expressions).
    from: Option<Vec<BTreeMap<String, String>>>,
}

/// A policy that applies to ingress, with what it selects and whether it admits anything; `None`
/// for one that governs egress only.
fn isolation(np: &NetworkPolicy) -> Option<Isolation> {
    let spec = np.spec.as_ref()?;
    let types = spec.policy_types.clone().unwrap_or_default();
    // Without policyTypes a policy applies to ingress.
    if !(types.is_empty() || types.iter().any(|t| t == "Ingress")) {
        return None;
    }
    // Each peer as the labels its pods carry, the namespace as its `kubernetes.io/metadata.name`
    // label: pods of the policy's own namespace by podSelector, or of a namespace named by
    // that label.
    const NAME: &str = "kubernetes.io/metadata.name";
    let own_ns = np.metadata.namespace.clone().unwrap_or_default();
    let plain = |s: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector| {
        s.match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
            .then(|| s.match_labels.clone().unwrap_or_default())
    };
    let mut from: Option<Vec<BTreeMap<String, String>>> = Some(Vec::new());
    for rule in spec.ingress.iter().flatten() {
        let peers = rule.from.as_deref().unwrap_or_default();
        if peers.is_empty() {
            from = None;
        }
        for peer in peers {
            let pods = match &peer.pod_selector {
                Some(sel) => plain(sel),
                None => Some(BTreeMap::new()),
            };
            let namespace = match &peer.namespace_selector {
                None => Some(own_ns.clone()),
                Some(sel) => plain(sel)
                    .filter(|l| l.len() == 1)
                    .and_then(|l| l.get(NAME).cloned()),
            };
            match (pods, namespace, &peer.ip_block) {
                (Some(mut labels), Some(ns), None) => {
                    labels.insert(NAME.to_string(), ns);
                    if let Some(v) = from.as_mut() {
                        v.push(labels);
                    }
                }
                _ => from = None,
            }
        }
    }
    Some(Isolation {
        on: Selection::of(np, spec),
        admits: spec.ingress.as_ref().is_some_and(|r| !r.is_empty()),
        from,
    })
}

/// Each Service with its Endpoints (same namespace and name), in one pass over each list.
pub fn service_facts(services: &[Service], endpoints: Option<&[Endpoints]>) -> Vec<ServiceFacts> {
    let mut by_name: BTreeMap<(&str, &str), &Endpoints> = BTreeMap::new();
    for e in endpoints.into_iter().flatten() {
        let ns = e.metadata.namespace.as_deref().unwrap_or_default();
        let name = e.metadata.name.as_deref().unwrap_or_default();
        by_name.insert((ns, name), e);
    }
    services
        .iter()
        .map(|s| {
            let ns = s.metadata.namespace.as_deref().unwrap_or_default();
            let name = s.metadata.name.as_deref().unwrap_or_default();
            let spec = s.spec.as_ref();
            let mut facts = ServiceFacts {
                name: name.to_string(),
                namespace: ns.to_string(),
                selector: spec.and_then(|x| x.selector.clone()).unwrap_or_default(),
                ports: spec
                    .and_then(|x| x.ports.as_ref())
                    .into_iter()
                    .flatten()
                    .filter_map(|p| {
                        let port = u16::try_from(p.port).ok()?;
                        let target = match &p.target_port {
                            Some(IntOrString::Int(n)) => n.to_string(),
                            Some(IntOrString::String(s)) => s.clone(),
                            None => port.to_string(),
                        };
                        Some((port, target))
                    })
                    .collect(),
                port_names: spec
                    .and_then(|x| x.ports.as_ref())
                    .into_iter()
                    .flatten()
                    .filter_map(|p| Some((p.name.clone()?, u16::try_from(p.port).ok()?)))
                    .collect(),
                endpoints_read: endpoints.is_some(),
                // `None` (headless) is no address a client dials.
                cluster_ip: spec
                    .and_then(|x| x.cluster_ip.clone())
                    .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok()),
                ..ServiceFacts::default()
            };
            if let Some(e) = by_name.get(&(ns, name)) {
                for subset in e.subsets.iter().flatten() {
                    let who = |a: &k8s_openapi::api::core::v1::EndpointAddress| {
                        a.target_ref
                            .as_ref()
                            .and_then(|t| t.name.clone())
                            .unwrap_or_else(|| a.ip.clone())
                    };
                    facts
                        .ready
                        .extend(subset.addresses.iter().flatten().map(who));
                    facts
                        .not_ready
                        .extend(subset.not_ready_addresses.iter().flatten().map(who));
                }
            }
            facts
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ingress_backends_and_deny_all_policies_are_joined_to_services() {
        let services: Vec<Service> = serde_json::from_value(json!([
            {"metadata": {"name": "web", "namespace": "shop"},
             "spec": {"selector": {"app": "web", "tier": "front"}, "ports": [{"port": 80}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let ingresses: Vec<Ingress> = serde_json::from_value(json!([
            {"metadata": {"name": "shop", "namespace": "shop"},
             "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 8080}}}},
                {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"name": "http"}}}}
             ]}}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let policies: Vec<NetworkPolicy> = serde_json::from_value(json!([
            {"metadata": {"name": "deny-web", "namespace": "shop"},
             "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]}},
            {"metadata": {"name": "allow-admin", "namespace": "shop"},
             "spec": {"podSelector": {"matchLabels": {"app": "admin"}}, "ingress": [{"from": [{"podSelector": {}}]}]}},
            {"metadata": {"name": "egress-only", "namespace": "shop"},
             "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let facts = network_facts(
            &services,
            &Around {
                ingresses: Some(&ingresses),
                policies: Some(&policies),
                ..Around::default()
            },
        );
        assert_eq!(facts.len(), 2, "{facts:?}");
        let web = &facts[0];
        assert_eq!(web.denied_by, vec!["deny-web".to_string()]);
        // An egress policy with no rule lets the pods reach nothing; one allowing DNS only
        // lets them reach port 53; a rule with no ports leaves them unlimited by port.
        assert_eq!(web.egress_limited_by, vec!["egress-only".to_string()]);
        assert!(web.egress_ports.is_empty());
        let mut dns_only = policies.clone();
        dns_only[2].spec = serde_json::from_value(json!({"podSelector": {}, "policyTypes": ["Egress"],
            "egress": [{"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]}))
        .ok();
        let with = |p: &[NetworkPolicy]| {
            network_facts(
                &services,
                &Around {
                    policies: Some(p),
                    ..Around::default()
                },
            )
        };
        assert_eq!(with(&dns_only)[0].egress_ports, vec![53]);
        let mut open = policies.clone();
        open[2].spec = serde_json::from_value(
            json!({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}),
        )
        .ok();
        assert!(with(&open)[0].egress_limited_by.is_empty());
        // A policy admitting ingress to the same pods lifts the isolation.
        let mut admitted = policies.clone();
        admitted[1].spec = serde_json::from_value(
            json!({"podSelector": {"matchLabels": {"tier": "front"}}, "ingress": [{}]}),
        )
        .ok();
        let lifted = network_facts(
            &services,
            &Around {
                policies: Some(&admitted),
                ..Around::default()
            },
        );
        assert!(lifted[0].denied_by.is_empty(), "{lifted:?}");
        assert_eq!(web.routes.len(), 1);
        assert_eq!(web.routes[0].port, "8080");
        assert_eq!(web.routes[0].rule, "shop.example.com/");
        let api = &facts[1];
        assert!(api.missing && api.name == "api", "{api:?}");
        assert_eq!(api.routes[0].port, "http");
        assert_eq!(web.routes[0].unknown_class, None);
    }

    #[test]
    fn ingress_admitted_only_from_named_peers_is_read_with_their_namespaces() {
        let services: Vec<Service> = serde_json::from_value(json!([
            {"metadata": {"name": "gateway", "namespace": "shop"},
             "spec": {"selector": {"app": "gateway"}, "ports": [{"port": 80}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let policy = |from: serde_json::Value| -> Vec<NetworkPolicy> {
            serde_json::from_value(json!([
                {"metadata": {"name": "gateway-ingress", "namespace": "shop"},
                 "spec": {"podSelector": {"matchLabels": {"app": "gateway"}}, "policyTypes": ["Ingress"],
                          "ingress": [{"from": from, "ports": [{"port": 8080}]}]}}
            ]))
            .unwrap_or_else(|e| unreachable!("{e}"))
        };
        let facts = |p: &[NetworkPolicy]| {
            network_facts(
                &services,
                &Around {
                    policies: Some(p),
                    ..Around::default()
                },
            )
            .remove(0)
        };
        let limited = facts(&policy(json!([
            {"podSelector": {"matchLabels": {"app": "storefront"}}},
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ])));
        assert_eq!(
            limited.ingress_limited_by,
            vec!["gateway-ingress".to_string()]
        );
        assert_eq!(
            limited.ingress_from,
            vec![
                "app=storefront,kubernetes.io/metadata.name=shop".to_string(),
                "kubernetes.io/metadata.name=monitoring".to_string()
            ]
        );
        // Sources this does not judge (an address block, namespaces by other labels) may admit
        // anyone: no limit is claimed.
        for from in [
            json!([{"ipBlock": {"cidr": "10.0.0.0/8"}}]),
            json!([{"namespaceSelector": {"matchLabels": {"team": "payments"}}}]),
            json!([]),
        ] {
            assert!(facts(&policy(from)).ingress_limited_by.is_empty());
        }
    }

    #[test]
    fn an_ingress_names_a_class_the_cluster_lacks_only_when_classes_were_read() {
        let services: Vec<Service> = serde_json::from_value(json!([
            {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"ports": [{"port": 80}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let ingresses: Vec<Ingress> = serde_json::from_value(json!([
            {"metadata": {"name": "shop", "namespace": "shop"},
             "spec": {"ingressClassName": "nginx-internal", "rules": [{"host": "shop.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
            {"metadata": {"name": "old", "namespace": "shop", "annotations": {"kubernetes.io/ingress.class": "nginx"}},
             "spec": {"rules": [{"host": "old.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let classes = vec!["nginx".to_string()];
        let read = network_facts(
            &services,
            &Around {
                ingresses: Some(&ingresses),
                classes: Some(&classes),
                ..Around::default()
            },
        );
        let class_of = |facts: &[ServiceFacts], ingress: &str| {
            facts[0]
                .routes
                .iter()
                .find(|r| r.ingress == ingress)
                .and_then(|r| r.unknown_class.clone())
        };
        assert_eq!(class_of(&read, "shop").as_deref(), Some("nginx-internal"));
        assert_eq!(class_of(&read, "old"), None);
        let unread = network_facts(
            &services,
            &Around {
                ingresses: Some(&ingresses),
                ..Around::default()
            },
        );
        assert_eq!(class_of(&unread, "shop"), None);
    }

    #[test]
    fn services_are_joined_to_their_endpoints() {
        let services: Vec<Service> = serde_json::from_value(json!([
            {"metadata": {"name": "web", "namespace": "shop"},
             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}},
            {"metadata": {"name": "db", "namespace": "shop"},
             "spec": {"selector": {"app": "pg"}, "ports": [{"port": 5432}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let endpoints: Vec<Endpoints> = serde_json::from_value(json!([
            {"metadata": {"name": "web", "namespace": "shop"},
             "subsets": [{"addresses": [{"ip": "10.0.0.7", "targetRef": {"kind": "Pod", "name": "web-1"}}],
                          "notReadyAddresses": [{"ip": "10.0.0.8"}]}]}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let got = service_facts(&services, Some(&endpoints));
        assert_eq!(got[0].ready, vec!["web-1".to_string()]);
        assert_eq!(got[0].not_ready, vec!["10.0.0.8".to_string()]);
        assert_eq!(got[0].ports, vec![(80, "http".to_string())]);
        assert!(got[1].ready.is_empty() && got[1].endpoints_read);
        assert_eq!(got[1].ports, vec![(5432, "5432".to_string())]);
        assert!(!service_facts(&services, None)[0].endpoints_read);
    }
}
