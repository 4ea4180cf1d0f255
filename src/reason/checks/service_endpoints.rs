//! The Services in front of the subject: a Service that selects no pod (its Endpoints empty, its
//! selector matching nothing) or sends traffic to a port its pods do not declare serves nobody,
//! however healthy the pods behind it look.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts, ServiceFacts};
use crate::reason::logs::{self, Sig};
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
    if crate::reason::is_ipv4(host) {
        return ctx
            .obs
            .services
            .iter()
            .find(|s| s.cluster_ip.as_deref() == Some(host) && !s.missing);
    }
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
    if !ctx.subject.resolved || ctx.obs.services.is_empty() {
        return Vec::new();
    }
    let home = home_of(ctx);
    let who = ctx
        .subject
        .workloads
        .first()
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| "the subject".into());
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (h, target, svc, port) in dialled(ctx, &home) {
        if let Some((_, to)) = svc.ports.iter().find(|(p, _)| *p == port) {
            out.extend(listening_elsewhere(ctx, svc, port, to, h, &who));
            continue;
        }
        if svc.ports.is_empty() || svc.ready.is_empty() || seen.contains(&target) {
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
    out
}

/// The Services (by name, cluster DNS name or cluster IP) at the `host:port` targets of the
/// subject's refused, unreachable, reset or timed-out calls, with the hits and ports.
fn dialled<'c, 'a>(
    ctx: &'c Ctx<'a>,
    home: &str,
) -> Vec<(&'c logs::Hits, String, &'a ServiceFacts, u16)> {
    let mut out = Vec::new();
    for h in ctx.subject_hits().iter().filter(|h| {
        matches!(
            h.sig,
            Sig::ConnRefused | Sig::Unreachable | Sig::Timeout | Sig::Reset
        )
    }) {
        for target in &h.targets {
            // `carts:80`, or a bare `carts`: its Service's first port is what was dialled.
            let (host, port) = match target.rsplit_once(':') {
                Some((host, port)) => match port.parse::<u16>() {
                    Ok(port) => (host, Some(port)),
                    Err(_) => continue,
                },
                None => (target.as_str(), None),
            };
            if let Some(svc) = service_of_host(ctx, host, home)
                && let Some(port) = port.or_else(|| svc.ports.first().map(|(p, _)| *p))
            {
                out.push((h, target.clone(), svc, port));
            }
        }
    }
    out
}

/// Whether the subject's refused, unreachable, reset or timed-out calls dial Service `name`.
pub(crate) fn dialled_by_subject(ctx: &Ctx, name: &str) -> bool {
    ctx.dialled_services().iter().any(|n| n == name)
}

/// The names of the Services the subject's failing calls dial (for [`Ctx::dialled_services`]).
pub(crate) fn dialled_names(ctx: &Ctx) -> Vec<String> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let mut names: Vec<String> = dialled(ctx, &home_of(ctx))
        .into_iter()
        .map(|(_, _, svc, _)| svc.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The subject's namespace, as its first pod's.
fn home_of(ctx: &Ctx) -> String {
    ctx.pods()
        .into_iter()
        .find(|p| ctx.subject.has_pod(p))
        .map(|p| p.namespace.clone())
        .unwrap_or_default()
}

/// The Services the subject's failing calls dial whose pods were not listed, as (namespace,
/// label selector `k=v,k=v`): listing them shows what those pods declare and run.
pub(crate) fn dialled_unlisted(ctx: &Ctx) -> Vec<(String, String)> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let pods = ctx.pods();
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, _, svc, _) in dialled(ctx, &home_of(ctx)) {
        if svc.selector.is_empty() || pods.iter().any(|p| selects(svc, p)) {
            continue;
        }
        let wanted = (svc.namespace.clone(), selector_text(svc));
        if !out.contains(&wanted) {
            out.push(wanted);
        }
    }
    out.truncate(2);
    out
}

/// The pods behind the Services the subject's failing calls dial, Ready and listed, one per
/// Service: their own lines say which port their process listens on.
pub(crate) fn dialled_pods(ctx: &Ctx) -> Vec<String> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let home = home_of(ctx);
    let mut out: Vec<String> = Vec::new();
    for (_, _, svc, _) in dialled(ctx, &home) {
        if let Some(p) = ctx
            .pods()
            .into_iter()
            .find(|p| selects(svc, p) && p.ready() && !ctx.subject.has_pod(p))
            && !out.contains(&p.name)
        {
            out.push(p.name.clone());
        }
    }
    out.truncate(2);
    out
}

/// A port a process says it listens on (`Listening on :8083`, `Read target port: 8083`,
/// `Tomcat started on port(s): 8080`, `Now listening on: http://[::]:80`).
pub(crate) fn listen_port(line: &str) -> Option<u16> {
    static LISTEN: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(?:\b(?:listen(?:s|ing)?|serving|server (?:started|running)|started server|starting server|target port)\b|\bstarted on port\(s\))(?:\s+(?:on|at))?(?:\s+port)?:?\s*(?:(?:https?|tcp|grpc)://)?(?:(?:\[[0-9a-f:]*\]|[0-9a-z.\-]*):)?(\d{2,5})\b",
        )
        .ok()
    });
    LISTEN
        .as_ref()?
        .captures(line)?
        .get(1)?
        .as_str()
        .parse()
        .ok()
}

/// Check: does the process behind a Service the subject dials listen on the Service's
/// targetPort? Failing when every port its pods' own lines say they listen on is another one:
/// the pods run something other than what the Service expects (another program, another
/// configuration), so connections to the targetPort are refused however Ready they look.
fn listening_elsewhere(
    ctx: &Ctx,
    svc: &ServiceFacts,
    port: u16,
    target_port: &str,
    h: &logs::Hits,
    who: &str,
) -> Option<Signal> {
    let target: u16 = target_port.parse().ok()?;
    let backing: Vec<&PodFacts> = ctx.pods().into_iter().filter(|p| selects(svc, p)).collect();
    let stated: Vec<(u16, &crate::model::LogLine)> = ctx
        .obs
        .pod_logs
        .iter()
        .filter(|l| {
            l.labels
                .get("pod")
                .is_some_and(|n| backing.iter().any(|p| &p.name == n))
        })
        .filter_map(|l| listen_port(&l.line).map(|p| (p, l)))
        .collect();
    if stated.is_empty() || stated.iter().any(|(p, _)| *p == target) {
        return None;
    }
    let (listens, line) = stated.last()?;
    let pod = line.labels.get("pod").cloned().unwrap_or_default();
    let summary = format!(
        "Service {} sends port {port} to targetPort {target}, but the process in its pods listens on {listens} ({pod}: \"{}\")",
        svc.name,
        logs::short(&line.line)
    );
    Some(Signal {
        analyzer: "service_port",
        summary: summary.clone(),
        detail: format!(
            "{} {}: \"{}\"",
            h.count,
            h.sig.label(),
            logs::short(&h.example)
        ),
        category: Category::ConfigurationError,
        basis: Basis::Stated,
        // The Service's ports, its pods' own words, and the caller's refused lines.
        links: 2,
        evidence: ctx.ev(&["kubernetes/services", "kubernetes/pod_logs", "logs"]),
        cause: Some(format!(
            "{summary}, so {who}'s connections to it are refused ({} {}); the pods run another program or configuration than the Service expects",
            h.count,
            h.sig.label()
        )),
        objects: vec![format!("service/{}", svc.name)],
        ..Signal::default()
    })
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
        if !fronts_subject && !named(ctx, svc) && !dialled_by_subject(ctx, &svc.name) {
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
        // A Service only dialled (not in front of the subject, not named): its pods not all Ready
        // explain the refusals themselves, and a container that declares no port may listen on
        // any, so the ports are judged only when every container declares its own.
        let dialled_only = !fronts_subject && !named(ctx, svc);
        if dialled_only
            && (backing.iter().any(|p| !p.ready())
                || backing
                    .iter()
                    .flat_map(|p| p.containers.iter())
                    .any(|c| !c.init && c.ports.is_empty()))
        {
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
    fn the_port_a_process_says_it_listens_on() {
        for (line, port) in [
            (
                "INF cmd/geo/main.go:52 > Read target port: 8083",
                Some(8083),
            ),
            ("Listening on port 8083", Some(8083)),
            ("level=info msg=\"listening on :9090\"", Some(9090)),
            ("Now listening on: http://[::]:80", Some(80)),
            (
                "Tomcat started on port(s): 8080 (http) with context path ''",
                Some(8080),
            ),
            ("Server listening at http://0.0.0.0:3000", Some(3000)),
            ("request served in 80 ms", None),
            ("connected to postgres:5432", None),
        ] {
            assert_eq!(listen_port(line), port, "{line}");
        }
        assert!(crate::reason::is_ipv4("10.96.8.190"));
        for not in ["10.96.8", "carts.shop", "10.96.8.256", "1.2.3.4.5"] {
            assert!(!crate::reason::is_ipv4(not), "{not}");
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
