//! The Services in front of the subject: a Service that selects no pod (its Endpoints empty, its
//! selector matching nothing) or sends traffic to a port its pods do not declare serves nobody,
//! however healthy the pods behind it look.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts, ServiceFacts};
use crate::reason::{Ctx, Signal, subject};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "service_selector",
        title: "Service selects no pod",
        concern: "service_endpoints",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "service_port",
        title: "Service port matches no container port",
        concern: "service_endpoints",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "dialled_port",
        title: "the port the subject dials is one its Service exposes",
        concern: "service_endpoints",
        role: Role::Failure,
        reads: &[],
    },
];

/// The Service a dialled host names: `name`, `name.ns`, `name.ns.svc[.cluster.local]`, in the
/// subject's namespace when the host gives none.
fn service_of_host<'a>(ctx: &Ctx<'a>, host: &str, home: &str) -> Option<&'a ServiceFacts> {
    let mut parts = host.split('.');
    let name = parts.next()?;
    let ns = parts.next().filter(|n| *n != "svc").unwrap_or(home);
    ctx.obs
        .services
        .iter()
        .find(|s| s.name == name && (s.namespace == ns || s.namespace.is_empty()) && !s.missing)
}

/// Check: is every `host:port` the subject's own lines fail to reach a port its Service exposes?
/// Failing when the host is a Service of the cluster, with ready endpoints, that exposes other
/// ports only: the address in the subject's configuration is wrong, not the dependency.
pub(crate) fn dialled_ports(ctx: &Ctx) -> Vec<Signal> {
    use crate::reason::logs::{self, Sig};
    if !ctx.subject.resolved || ctx.obs.services.is_empty() {
        return Vec::new();
    }
    let home = ctx
        .pods()
        .into_iter()
        .find(|p| ctx.subject.has_pod(p))
        .map(|p| p.namespace.clone())
        .unwrap_or_default();
    let who = ctx
        .subject
        .workloads
        .first()
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| "the subject".into());
    let hits = ctx.subject_hits();
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for h in hits.iter().filter(|h| {
        matches!(
            h.sig,
            Sig::ConnRefused | Sig::Unreachable | Sig::Timeout | Sig::Reset
        )
    }) {
        for target in &h.targets {
            let Some((host, port)) = target.rsplit_once(':') else {
                continue;
            };
            let Ok(port) = port.parse::<u16>() else {
                continue;
            };
            let Some(svc) = service_of_host(ctx, host, &home) else {
                continue;
            };
            if svc.ports.is_empty()
                || svc.ports.iter().any(|(p, _)| *p == port)
                || svc.ready.is_empty()
                || seen.contains(target)
            {
                continue;
            }
            seen.push(target.clone());
            let exposed: Vec<String> = svc.ports.iter().map(|(p, _)| p.to_string()).collect();
            let summary = format!(
                "{who} dials {target}, but Service {} exposes port {} only ({} ready endpoint(s))",
                svc.name,
                exposed.join(", "),
                svc.ready.len()
            );
            out.push(Signal {
                analyzer: "dialled_port",
                summary: summary.clone(),
                detail: format!("{} {}: \"{}\"", h.count, h.sig.label(), logs::short(&h.example)),
                category: Category::ConfigurationError,
                basis: Basis::Measured,
                // The Service's ports and its endpoints, read beside the lines that dial it.
                links: 2,
                evidence: ctx.ev(&["kubernetes/services", "kubernetes/pod_logs", "logs"]),
                cause: Some(format!(
                    "{summary}, so its connections to port {port} are refused ({} {}, e.g. \"{}\"); the port in its configuration is wrong, the dependency itself is serving",
                    h.count,
                    h.sig.label(),
                    logs::short(&h.example)
                )),
                objects: vec![format!("service/{}", svc.name)],
                ..Signal::default()
            });
        }
    }
    out
}

/// Whether the alert, the problem or the subject names the Service (a backend of the subject's
/// Ingress is one of its objects).
pub(crate) fn named(ctx: &Ctx, svc: &ServiceFacts) -> bool {
    super::network::named(ctx, &svc.name)
        || ctx.subject.workloads.iter().any(|(_, n)| *n == svc.name)
        || ctx
            .subject
            .objects
            .iter()
            .any(|o| o.kind == "Service" && o.name == svc.name && o.namespace == svc.namespace)
}

fn selects(svc: &ServiceFacts, pod: &PodFacts) -> bool {
    pod.namespace == svc.namespace && subject::selector_matches(&svc.selector, &[], &pod.labels)
}

fn selector_text(svc: &ServiceFacts) -> String {
    svc.selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The labels of the subject's pods, quoted, to set beside a selector that misses them.
fn subject_labels(ctx: &Ctx, keys: &[&String]) -> String {
    let pods: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p))
        .collect();
    let Some(p) = pods.first() else {
        return String::new();
    };
    let shown: Vec<String> = keys
        .iter()
        .filter_map(|k| p.labels.get(*k).map(|v| format!("{k}={v}")))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    format!(
        "; the subject's pods (e.g. {}) carry {}",
        p.name,
        shown.join(",")
    )
}

/// Check: does each Service in front of the subject reach its pods? Failing when one the alert
/// or subject names selects no pod at all, or sends its port to a target its pods do not declare.
pub(crate) fn service_endpoints(ctx: &Ctx) -> Vec<Signal> {
    let pods = ctx.pods();
    let mut out = Vec::new();
    for svc in &ctx.obs.services {
        if svc.selector.is_empty() {
            continue;
        }
        let backing: Vec<&&PodFacts> = pods.iter().filter(|p| selects(svc, p)).collect();
        let fronts_subject = backing.iter().any(|p| ctx.subject.has_pod(p));
        if !fronts_subject && !named(ctx, svc) {
            continue;
        }
        let evidence = ctx.ev(&["kubernetes/services", "kubernetes/pods"]);
        let object = format!("service/{}", svc.name);
        if backing.is_empty() && (svc.ready.is_empty() || !svc.endpoints_read) {
            let keys: Vec<&String> = svc.selector.keys().collect();
            let endpoints = if svc.endpoints_read {
                "its Endpoints list no address"
            } else {
                "no listed pod matches it"
            };
            let summary = format!(
                "Service {} selects {}, which no pod in {} carries: {endpoints}{}",
                svc.name,
                selector_text(svc),
                svc.namespace,
                subject_labels(ctx, &keys)
            );
            out.push(Signal {
                analyzer: "service_selector",
                summary: summary.clone(),
                detail: "a Service routes only to the pods its selector matches".into(),
                category: Category::ConfigurationError,
                basis: Basis::Stated,
                evidence,
                cause: Some(format!(
                    "{summary}, so requests to {} reach no pod; the selector (or the pods' labels) is wrong",
                    svc.name
                )),
                objects: vec![object],
                ..Signal::default()
            });
            continue;
        }
        // Ports: a numeric targetPort no backing container declares, or a name none defines.
        let declaring: Vec<&&&PodFacts> = backing
            .iter()
            .filter(|p| p.containers.iter().any(|c| !c.ports.is_empty()))
            .collect();
        if declaring.is_empty() {
            continue;
        }
        for (port, target) in &svc.ports {
            let served = declaring.iter().any(|p| {
                p.containers.iter().any(|c| match target.parse::<u16>() {
                    Ok(n) => c.ports.contains(&n),
                    Err(_) => c.port_names.contains_key(target),
                })
            });
            if served {
                continue;
            }
            // A named targetPort is matched against the ports' names, so those are what to show.
            let by_name = target.parse::<u16>().is_err();
            let mut declared: Vec<String> = declaring
                .iter()
                .flat_map(|p| p.containers.iter())
                .flat_map(|c| {
                    let named: Vec<String> = c
                        .port_names
                        .iter()
                        .map(|(n, p)| format!("{n} ({p})"))
                        .collect();
                    if by_name && !named.is_empty() {
                        named
                    } else {
                        c.ports.iter().map(u16::to_string).collect()
                    }
                })
                .collect();
            declared.sort();
            declared.dedup();
            let summary = if by_name {
                format!(
                    "Service {} sends port {port} to the port named {target}, which no port of its pods is called (they declare {})",
                    svc.name,
                    declared.join(", ")
                )
            } else {
                format!(
                    "Service {} sends port {port} to targetPort {target}, which its pods do not serve (they declare {})",
                    svc.name,
                    declared.join(", ")
                )
            };
            out.push(Signal {
                analyzer: "service_port",
                summary: summary.clone(),
                detail: "a Service forwards to its targetPort on each selected pod".into(),
                category: Category::ConfigurationError,
                basis: Basis::Measured,
                links: 1,
                evidence: evidence.clone(),
                cause: Some(format!(
                    "{summary}, so connections through it are refused; the Service's targetPort is wrong"
                )),
                objects: vec![object.clone()],
                ..Signal::default()
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, ContainerFacts, DeploymentFacts};
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn pod(name: &str, app: &str, port: u16) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "shop".into(),
            phase: "Running".into(),
            owner: Some("ReplicaSet/checkout-7c9d8".into()),
            labels: BTreeMap::from([
                ("app".into(), app.into()),
                ("pod-template-hash".into(), "7c9d8".into()),
            ]),
            conditions: BTreeMap::from([("Ready".into(), "True".into())]),
            containers: vec![ContainerFacts {
                name: "web".into(),
                ready: true,
                state: "running".into(),
                ports: vec![port],
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    fn service(app: &str, target: &str) -> ServiceFacts {
        ServiceFacts {
            name: "checkout".into(),
            namespace: "shop".into(),
            selector: BTreeMap::from([("app".into(), app.into())]),
            ports: vec![(80, target.into())],
            endpoints_read: true,
            ..ServiceFacts::default()
        }
    }

    fn obs(svc: ServiceFacts, alert_names_it: bool) -> Observations {
        let mut labels = BTreeMap::from([
            ("alertname".to_string(), "ServiceUnreachable".to_string()),
            ("namespace".to_string(), "shop".to_string()),
        ]);
        if alert_names_it {
            labels.insert("service".into(), "checkout".into());
        }
        Observations {
            alert: Some(Alert {
                labels,
                ..Alert::default()
            }),
            pods: vec![pod("checkout-7c9d8-aaaaa", "checkout-v2", 8080)],
            deployments: vec![DeploymentFacts {
                name: "checkout".into(),
                namespace: "shop".into(),
                replicas: 1,
                ready_replicas: 1,
                selector: BTreeMap::from([("app".into(), "checkout-v2".into())]),
                ..DeploymentFacts::default()
            }],
            services: vec![svc],
            ..Observations::default()
        }
    }

    #[test]
    fn a_service_that_selects_no_pod_is_a_configuration_error() {
        let o = obs(service("checkout", "8080"), true);
        let sigs = service_endpoints(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("selects app=checkout, which no pod in shop carries"),
            "{cause}"
        );
        assert!(cause.contains("app=checkout-v2"), "{cause}");
        // Not named by anything and fronting no subject pod: not this incident's business.
        let o = obs(service("checkout", "8080"), false);
        let mut o = o;
        o.services[0].name = "legacy".into();
        assert!(service_endpoints(&Ctx::new(&o)).is_empty());
    }

    #[test]
    fn a_target_port_the_pods_do_not_serve_is_named() {
        let o = obs(service("checkout-v2", "8081"), true);
        let sigs = service_endpoints(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("targetPort 8081, which its pods do not serve (they declare 8080)"),
            "{cause}"
        );
        let o = obs(service("checkout-v2", "8080"), true);
        assert!(service_endpoints(&Ctx::new(&o)).is_empty());
        // A named targetPort is compared with the ports' names, and those are shown.
        let mut o = obs(service("checkout-v2", "http"), true);
        o.pods[0].containers[0]
            .port_names
            .insert("http-web".into(), 8080);
        let sigs = service_endpoints(&Ctx::new(&o));
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("the port named http, which no port of its pods is called (they declare http-web (8080))"),
            "{cause}"
        );
        o.pods[0].containers[0]
            .port_names
            .insert("http".into(), 8080);
        assert!(service_endpoints(&Ctx::new(&o)).is_empty());
    }
}
