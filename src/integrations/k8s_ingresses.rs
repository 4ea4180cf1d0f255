//! Ingresses and IngressClasses as facts: each Ingress's class, hosts, rules and backends, TLS
//! entries and load-balancer addresses; each class's controller and whether it is the default.

use super::kubernetes::time;
use crate::model::{IngressBackendRef, IngressClassFacts, IngressFacts, IngressRule, IngressTls};
use k8s_openapi::api::networking::v1::{Ingress, IngressBackend, IngressClass};

/// The annotation older Ingresses name their class by.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// The annotation that makes an IngressClass take the Ingresses naming none.
const DEFAULT_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";

/// A backend that names a Service, with the port asked of it; `None` for a resource backend.
fn backend_ref(b: &IngressBackend) -> Option<IngressBackendRef> {
    let svc = b.service.as_ref()?;
    let port = svc
        .port
        .as_ref()
        .and_then(|p| p.number.map(|n| n.to_string()).or_else(|| p.name.clone()))
        .unwrap_or_default();
    Some(IngressBackendRef {
        service: svc.name.clone(),
        port,
    })
}

/// One Ingress as facts.
pub fn ingress_facts(ing: &Ingress) -> IngressFacts {
    let meta = &ing.metadata;
    let spec = ing.spec.as_ref();
    let class = spec
        .and_then(|s| s.ingress_class_name.clone())
        .or_else(|| {
            meta.annotations
                .as_ref()
                .and_then(|a| a.get(CLASS_ANNOTATION).cloned())
        })
        .filter(|c| !c.trim().is_empty());
    let mut hosts: Vec<String> = Vec::new();
    let mut rules = Vec::new();
    for rule in spec.and_then(|s| s.rules.as_ref()).into_iter().flatten() {
        let host = rule.host.clone().filter(|h| !h.is_empty());
        if let Some(h) = &host
            && !hosts.contains(h)
        {
            hosts.push(h.clone());
        }
        for p in rule.http.iter().flat_map(|h| h.paths.iter()) {
            let Some(backend) = backend_ref(&p.backend) else {
                continue;
            };
            rules.push(IngressRule {
                host: host.clone(),
                path: p.path.clone().unwrap_or_else(|| "/".into()),
                backend,
            });
        }
    }
    let tls = spec
        .and_then(|s| s.tls.as_ref())
        .into_iter()
        .flatten()
        .map(|t| IngressTls {
            hosts: t.hosts.clone().unwrap_or_default(),
            secret_name: t.secret_name.clone().unwrap_or_default(),
        })
        .collect();
    let addresses = ing
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|a| a.ip.clone().or_else(|| a.hostname.clone()))
        .collect();
    let created_at = meta.creation_timestamp.as_ref().and_then(time);
    // The status a controller writes is not a change to what the Ingress asks for.
    let changed_at = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|f| f.subresource.as_deref() != Some("status"))
        .filter_map(|f| f.time.as_ref().and_then(time))
        .max()
        .filter(|t| created_at.is_none_or(|c| *t > c));
    IngressFacts {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        class,
        hosts,
        rules,
        default_backend: spec
            .and_then(|s| s.default_backend.as_ref())
            .and_then(backend_ref),
        tls,
        addresses,
        created_at,
        changed_at,
    }
}

/// One IngressClass as facts.
pub fn class_facts(c: &IngressClass) -> IngressClassFacts {
    IngressClassFacts {
        name: c.metadata.name.clone().unwrap_or_default(),
        controller: c
            .spec
            .as_ref()
            .and_then(|s| s.controller.clone())
            .unwrap_or_default(),
        is_default: c
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DEFAULT_CLASS))
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_ingress_reads_its_class_rules_tls_and_addresses() {
        let ing: Ingress = serde_json::from_value(json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {
                "name": "shop-web", "namespace": "shop",
                "creationTimestamp": "2026-11-28T10:00:00Z",
                "managedFields": [
                    {"manager": "kubectl", "operation": "Update", "time": "2026-11-28T13:55:00Z",
                     "apiVersion": "networking.k8s.io/v1", "fieldsType": "FieldsV1"},
                    {"manager": "nginx-ingress-controller", "operation": "Update", "subresource": "status",
                     "time": "2026-11-28T14:10:00Z", "apiVersion": "networking.k8s.io/v1", "fieldsType": "FieldsV1"}
                ]
            },
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"service": {"name": "fallback", "port": {"name": "http"}}},
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
                "rules": [
                    {"host": "shop.example.com", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "storefront", "port": {"number": 80}}}},
                        {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "shop-api", "port": {"name": "http"}}}},
                        {"path": "/static", "pathType": "Prefix", "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "assets"}}}
                    ]}},
                    {"http": {"paths": [
                        {"path": "/healthz", "pathType": "Exact", "backend": {"service": {"name": "storefront", "port": {"number": 80}}}}
                    ]}}
                ]
            },
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}, {"hostname": "lb.example.net"}]}}
        }))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let f = ingress_facts(&ing);
        assert_eq!(
            (f.name.as_str(), f.namespace.as_str()),
            ("shop-web", "shop")
        );
        assert_eq!(f.class.as_deref(), Some("nginx"));
        assert_eq!(f.hosts, vec!["shop.example.com".to_string()]);
        let rules: Vec<(Option<&str>, &str, &str, &str)> = f
            .rules
            .iter()
            .map(|r| {
                (
                    r.host.as_deref(),
                    r.path.as_str(),
                    r.backend.service.as_str(),
                    r.backend.port.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rules,
            vec![
                (Some("shop.example.com"), "/", "storefront", "80"),
                (Some("shop.example.com"), "/api", "shop-api", "http"),
                (None, "/healthz", "storefront", "80"),
            ]
        );
        assert_eq!(
            f.default_backend,
            Some(IngressBackendRef {
                service: "fallback".into(),
                port: "http".into()
            })
        );
        assert_eq!(
            f.tls,
            vec![IngressTls {
                hosts: vec!["shop.example.com".into()],
                secret_name: "shop-tls".into()
            }]
        );
        assert_eq!(f.addresses, vec!["203.0.113.10", "lb.example.net"]);
        assert_eq!(
            f.created_at.map(|t| t.to_rfc3339()),
            Some("2026-11-28T10:00:00+00:00".into())
        );
        // The controller's status write is not a change to the Ingress.
        assert_eq!(
            f.since().map(|t| t.to_rfc3339()),
            Some("2026-11-28T13:55:00+00:00".into())
        );
        let backends: Vec<String> = f.backends().iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(
            backends,
            vec![
                "*",
                "shop.example.com/",
                "shop.example.com/api",
                "*/healthz"
            ]
        );
    }

    #[test]
    fn an_older_ingress_names_its_class_by_annotation_and_may_have_no_status() {
        let ing: Ingress = serde_json::from_value(json!({
            "metadata": {"name": "docs-portal", "namespace": "docs",
                         "annotations": {"kubernetes.io/ingress.class": "traefik"}},
            "spec": {"rules": [{"host": "docs.example.com", "http": {"paths": [
                {"backend": {"service": {"name": "docs", "port": {"number": 8080}}}}]}}]}
        }))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let f = ingress_facts(&ing);
        assert_eq!(f.class.as_deref(), Some("traefik"));
        assert_eq!(f.rules[0].path, "/");
        assert!(f.addresses.is_empty() && f.tls.is_empty() && f.created_at.is_none());
        // Neither field nor annotation: no class.
        let bare: Ingress = serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {}}))
            .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(ingress_facts(&bare).class, None);
    }

    #[test]
    fn an_ingress_class_reads_its_controller_and_the_default_annotation() {
        let classes: Vec<IngressClass> = serde_json::from_value(json!([
            {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
             "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
             "spec": {"controller": "k8s.io/ingress-nginx"}},
            {"metadata": {"name": "internal", "annotations": {"ingressclass.kubernetes.io/is-default-class": "false"}},
             "spec": {"controller": "k8s.io/ingress-nginx-internal"}},
            {"metadata": {"name": "bare"}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let facts: Vec<IngressClassFacts> = classes.iter().map(class_facts).collect();
        assert_eq!(
            facts,
            vec![
                IngressClassFacts {
                    name: "nginx".into(),
                    controller: "k8s.io/ingress-nginx".into(),
                    is_default: true
                },
                IngressClassFacts {
                    name: "internal".into(),
                    controller: "k8s.io/ingress-nginx-internal".into(),
                    is_default: false
                },
                IngressClassFacts {
                    name: "bare".into(),
                    controller: String::new(),
                    is_default: false
                },
            ]
        );
    }
}
