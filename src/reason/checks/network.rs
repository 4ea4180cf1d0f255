//! The network around the subject: a NetworkPolicy that selects the pods behind a Service and
//! allows them no ingress drops every request however healthy the pods look; one that limits the
//! subject's own egress to other ports drops every connection it opens. (Ingresses are the
//! `ingress` concern's.)

use super::{Basis, Decl, Role};
use crate::model::{Category, ServiceFacts};
use crate::reason::rank::relation;
use crate::reason::{Ctx, Signal, list_names, subject};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "network_policy",
        title: "NetworkPolicy allows the pods no ingress",
        concern: "network",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "egress_policy",
        title: "NetworkPolicy lets the subject reach the ports it dials",
        concern: "network",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "ingress_policy",
        title: "NetworkPolicy admits the subject to the Service it dials",
        concern: "network",
        role: Role::Failure,
        reads: &[],
    },
];

/// Whether the alert (its labels, its expression or its annotations) or the problem names `name`
/// (an Ingress, a host, a Service).
pub(crate) fn named(ctx: &Ctx, name: &str) -> bool {
    subject::mentions(ctx.alert_names(), name)
        || ctx
            .obs
            .alert
            .as_ref()
            .is_some_and(|a| a.annotations.values().any(|v| subject::mentions(v, name)))
        || ctx
            .obs
            .problem
            .as_deref()
            .is_some_and(|p| subject::mentions(p, name))
}

/// Whether a Service is the subject's way in, or something the subject or the alert names.
fn concerns_subject(ctx: &Ctx, svc: &ServiceFacts) -> bool {
    super::service_endpoints::named(ctx, svc)
        || svc
            .routes
            .iter()
            .any(|r| named(ctx, &r.ingress) || named(ctx, r.rule.split('/').next().unwrap_or("")))
        || relation(ctx, &format!("service/{}", svc.name)).is_some_and(|r| r != "subject")
}

/// Check: may traffic reach the pods behind each Service in front of the subject? Failing when a
/// NetworkPolicy selects them and allows no ingress at all.
pub(crate) fn network_policies(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let evidence = ctx.ev(&["kubernetes/services"]);
    for svc in ctx.obs.services.iter().filter(|s| !s.denied_by.is_empty()) {
        let fronts_subject = relation(ctx, &format!("service/{}", svc.name)).is_some();
        if !fronts_subject && !concerns_subject(ctx, svc) {
            continue;
        }
        let selector: Vec<String> = svc
            .selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let summary = format!(
            "NetworkPolicy {} selects the pods behind Service {} ({}) and allows them no ingress",
            list_names(&svc.denied_by, 3),
            svc.name,
            selector.join(",")
        );
        out.push(Signal {
            analyzer: "network_policy",
            summary: summary.clone(),
            detail: "a policy that applies to ingress with no ingress rule drops every connection to the pods it selects".into(),
            category: Category::ConfigurationError,
            basis: Basis::Measured,
            evidence: evidence.clone(),
            cause: Some(format!(
                "{summary}, so every connection to {} is dropped (callers time out) although its pods are up; the policy needs a rule admitting its callers",
                svc.name
            )),
            objects: vec![format!("service/{}", svc.name)],
            ..Signal::default()
        });
    }
    out
}

/// Check: may the subject's pods open the connections their logs fail on? Failing when egress
/// NetworkPolicies select them (through a Service in front of them) and allow only other ports,
/// while their lines time out or are refused dialling a port outside that list.
pub(crate) fn egress_policies(ctx: &Ctx) -> Vec<Signal> {
    use crate::reason::logs::{self, Sig};
    let limited: Vec<&ServiceFacts> = ctx
        .obs
        .services
        .iter()
        .filter(|s| !s.egress_limited_by.is_empty())
        .filter(|s| relation(ctx, &format!("service/{}", s.name)) == Some("service of the subject"))
        .collect();
    let Some(svc) = limited.first() else {
        return Vec::new();
    };
    let hits = ctx.subject_hits();
    let blocked: Vec<(String, &logs::Hits)> = hits
        .iter()
        .filter(|h| {
            matches!(
                h.sig,
                Sig::Timeout | Sig::Unreachable | Sig::ConnRefused | Sig::Dns
            )
        })
        .flat_map(|h| h.targets.iter().map(move |t| (t, h)))
        .filter_map(|(t, h)| {
            // `db:5432`, or a name with the resolver that timed out: `db.svc (10.96.0.10:53)`.
            let port: u16 = t.trim_end_matches(')').rsplit_once(':')?.1.parse().ok()?;
            (!svc.egress_ports.contains(&port)).then(|| (t.clone(), h))
        })
        .collect();
    let Some((target, hit)) = blocked.first() else {
        return Vec::new();
    };
    let allowed = if svc.egress_ports.is_empty() {
        "no egress at all".to_string()
    } else {
        format!(
            "egress only to port {}",
            svc.egress_ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let who = ctx.scope_name("the subject");
    let summary = format!(
        "NetworkPolicy {} selects {who}'s pods (behind Service {}) and allows them {allowed}, but they dial {target}",
        list_names(&svc.egress_limited_by, 3),
        svc.name
    );
    vec![policy_drops(
        ctx,
        "egress_policy",
        summary,
        hit,
        "the dependency is not at fault: the policy needs an egress rule for it".into(),
        &svc.name,
    )]
}

/// A NetworkPolicy found dropping the subject's connections (`summary` says which and how), with
/// the failing lines that show it and what is not at fault.
fn policy_drops(
    ctx: &Ctx,
    analyzer: &'static str,
    summary: String,
    hit: &crate::reason::logs::Hits,
    remedy: String,
    service: &str,
) -> Signal {
    let lines = format!(
        "{} {}, e.g. \"{}\"",
        hit.count,
        hit.sig.label(),
        crate::reason::logs::short(&hit.example)
    );
    Signal {
        analyzer,
        detail: lines.clone(),
        category: Category::ConfigurationError,
        basis: Basis::Measured,
        // The policy's rules read from the API, against the pods and the port the lines dial.
        links: 2,
        evidence: ctx.ev(&[
            "kubernetes/services",
            "kubernetes/pods",
            "kubernetes/pod_logs",
            "logs",
        ]),
        cause: Some(format!(
            "{summary}, so the policy drops those connections ({lines}); {remedy}"
        )),
        summary,
        objects: vec![format!("service/{service}")],
        ..Signal::default()
    }
}

/// A Service the subject's failing calls go to, whose pods admit ingress (by NetworkPolicy) only
/// from pods carrying labels the subject's own pods do not carry: the policy drops the subject's
/// connections, so they time out or are refused.
pub(crate) fn ingress_policies(ctx: &Ctx) -> Vec<Signal> {
    use crate::reason::logs::Sig;
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let mine: Vec<&crate::model::PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.subject.has_pod(p) && !p.deleting)
        .collect();
    // A peer's namespace is its `kubernetes.io/metadata.name` label.
    let admitted = |set: &str| {
        mine.iter().any(|p| {
            set.split(',').all(|kv| match kv.split_once('=') {
                Some(("kubernetes.io/metadata.name", ns)) => p.namespace == ns,
                Some((k, v)) => p.labels.get(k).is_some_and(|x| x == v),
                None => false,
            })
        })
    };
    let hits = ctx.subject_hits();
    let mut out = Vec::new();
    for svc in ctx
        .obs
        .services
        .iter()
        .filter(|s| !s.ingress_limited_by.is_empty())
    {
        if mine.is_empty()
            || relation(ctx, &format!("service/{}", svc.name)) == Some("service of the subject")
            || svc.ingress_from.iter().any(|set| admitted(set))
        {
            continue;
        }
        let addresses: Vec<&str> = std::iter::once(svc.name.as_str())
            .chain(svc.cluster_ip.as_deref())
            .collect();
        let Some((target, hit)) = hits
            .iter()
            .filter(|h| {
                matches!(
                    h.sig,
                    Sig::Timeout | Sig::Unreachable | Sig::ConnRefused | Sig::Reset
                )
            })
            .flat_map(|h| h.targets.iter().map(move |t| (t, h)))
            .find(|(t, _)| {
                addresses.iter().any(|a| {
                    t.as_str() == *a
                        || t.starts_with(&format!("{a}:"))
                        || t.starts_with(&format!("{a}."))
                })
            })
        else {
            continue;
        };
        let who = ctx.scope_name("the subject");
        let summary = format!(
            "NetworkPolicy {} admits ingress to Service {}'s pods only from pods labelled {}; {who}'s pods carry none of them, yet dial {target}",
            list_names(&svc.ingress_limited_by, 3),
            svc.name,
            svc.ingress_from.join(" or ")
        );
        out.push(policy_drops(
            ctx,
            "ingress_policy",
            summary,
            hit,
            format!(
                "{} is not at fault: the policy needs to admit {who}",
                svc.name
            ),
            &svc.name,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Alert;
    use crate::reason::{Observations, analyze};
    use std::collections::BTreeMap;

    fn obs(services: Vec<ServiceFacts>) -> Observations {
        let (pod, deployment) = crate::reason::checks::fixtures::serving("web", "shop");
        Observations {
            alert: Some(Alert {
                labels: BTreeMap::from([
                    ("alertname".to_string(), "IngressErrors".to_string()),
                    ("namespace".to_string(), "shop".to_string()),
                    ("deployment".to_string(), "web".to_string()),
                ]),
                ..Alert::default()
            }),
            pods: vec![pod],
            deployments: vec![deployment],
            services,
            evidence: BTreeMap::from([(
                "kubernetes/services".to_string(),
                vec!["ev-1".to_string()],
            )]),
            ..Observations::default()
        }
    }

    fn web(port: u16) -> ServiceFacts {
        ServiceFacts {
            name: "web".into(),
            namespace: "shop".into(),
            selector: BTreeMap::from([("app".into(), "web".into())]),
            ports: vec![(port, "8080".into())],
            endpoints_read: true,
            ready: vec!["web-7c9d8-aaaaa".into()],
            ..ServiceFacts::default()
        }
    }

    #[test]
    fn a_policy_admitting_others_to_the_service_the_subject_dials_is_the_cause() {
        let gateway = |from: &str| ServiceFacts {
            name: "gateway".into(),
            namespace: "shop".into(),
            selector: BTreeMap::from([("app".into(), "gateway".into())]),
            ingress_limited_by: vec!["gateway-ingress".into()],
            ingress_from: vec![from.into()],
            ..ServiceFacts::default()
        };
        let mut o = obs(vec![gateway(
            "app=storefront,kubernetes.io/metadata.name=shop",
        )]);
        o.pod_logs = vec![crate::model::LogLine {
            line: "payment failed: timeout of 5000ms exceeded url=http://gateway.shop.svc.cluster.local/v2/authorize".into(),
            labels: BTreeMap::from([("pod".to_string(), "web-7c9d8-aaaaa".to_string())]),
            ..crate::model::LogLine::default()
        }];
        let sigs = ingress_policies(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("gateway-ingress") && cause.contains("app=storefront"),
            "{cause}"
        );
        // The policy admits the subject's own pods: not its doing.
        o.services = vec![gateway("app=web,kubernetes.io/metadata.name=shop")];
        assert!(ingress_policies(&Ctx::new(&o)).is_empty());
        // Admitted from another namespace only: the subject's namespace is not it.
        o.services = vec![gateway("kubernetes.io/metadata.name=monitoring")];
        assert_eq!(ingress_policies(&Ctx::new(&o)).len(), 1);
    }

    #[test]
    fn an_egress_policy_without_the_port_the_subject_dials_is_the_cause() {
        let mut svc = web(80);
        svc.egress_limited_by = vec!["default-deny-egress".into()];
        svc.egress_ports = vec![53];
        let mut o = obs(vec![svc]);
        o.pod_logs = vec![crate::model::LogLine {
            line: "dial tcp orders-db.shop.svc:5432: i/o timeout".into(),
            labels: BTreeMap::from([("pod".to_string(), "web-7c9d8-aaaaa".to_string())]),
            ..crate::model::LogLine::default()
        }];
        let sigs = egress_policies(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("default-deny-egress")
                && cause.contains("egress only to port 53")
                && cause.contains("orders-db.shop.svc:5432"),
            "{cause}"
        );
        // The port it dials is one the policy lets out: not the policy's doing.
        o.services[0].egress_ports = vec![53, 5432];
        assert!(egress_policies(&Ctx::new(&o)).is_empty());
        // Lookups timing out against the resolver, with port 53 not let out: the policy.
        o.services[0].egress_ports = vec![5432];
        o.pod_logs[0].line = "lookup orders-db.shop.svc.cluster.local on 10.96.0.10:53: read udp 10.1.2.3:41000->10.96.0.10:53: i/o timeout".into();
        let sigs = egress_policies(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("egress only to port 5432") && cause.contains(":53"),
            "{cause}"
        );
    }

    #[test]
    fn a_policy_shutting_off_the_subjects_pods_is_the_cause() {
        let mut shut = web(80);
        shut.denied_by = vec!["default-deny".into()];
        let a = analyze(&obs(vec![shut]));
        assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
        assert!(
            a.root_cause
                .contains("NetworkPolicy default-deny selects the pods behind Service web"),
            "{}",
            a.root_cause
        );
        assert!(network_policies(&Ctx::new(&obs(vec![web(80)]))).is_empty());
    }
}
