//! Services and their Endpoints, joined into what backs each Service: its selector, its ports and
//! the pods its Endpoints list as ready or not.

use crate::model::ServiceFacts;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

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
                endpoints_read: endpoints.is_some(),
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
