//! The Ingress in front of the subject: a rule routing to a Service that does not exist, to a port
//! it does not expose or to one with no ready endpoint; an Ingress no controller serves (its class
//! missing, or none named and no default); a TLS Secret that does not exist, so the controller
//! serves its own self-signed certificate. Read from `kubernetes.ingresses`; Ingresses known
//! only as the routes on a Service (`kubernetes.services`) get the class and backend checks.

use super::{Basis, Decl, Role};
use crate::model::{Category, IngressFacts, RuledOut, ServiceFacts};
use crate::reason::rank::relation;
use crate::reason::{Ctx, Signal, list_names};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "ingress_backend",
        title: "Ingress routes to a Service that exists",
        concern: "ingress",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "ingress_port",
        title: "Ingress routes to a port its Service exposes",
        concern: "ingress",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "ingress_endpoints",
        title: "Ingress backend Service has ready endpoints",
        concern: "ingress",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "ingress_class",
        title: "Ingress names an IngressClass the cluster has",
        concern: "ingress",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "ingress_tls",
        title: "Ingress TLS Secret exists",
        concern: "ingress",
        role: Role::Failure,
        reads: &[],
    },
];

const EVIDENCE: &[&str] = &["kubernetes/ingresses", "kubernetes/services"];

/// Whether an Ingress is what the alert or problem is about: part of the subject (named by its
/// `ingress` label, its name, its name's words or a host in the alert's text or the problem's
/// words). A namespace label that happens to share its name does not make it so.
fn about(ctx: &Ctx, ing: &IngressFacts) -> bool {
    ctx.subject.ingresses.contains(&ing.name)
        && ctx
            .subject
            .namespace
            .as_deref()
            .is_none_or(|n| ing.namespace.is_empty() || ing.namespace == n)
}

/// Whether an Ingress is what the alert or problem is about, or stands in front of the subject
/// (a rule of it routes to the subject's Service): a route to nowhere fails the subject's
/// callers whatever the alert, while a certificate or a class matters to a problem about it.
fn concerns_subject(ctx: &Ctx, ing: &IngressFacts) -> bool {
    about(ctx, ing)
        || ing.backends().iter().any(|(_, b)| {
            matches!(
                relation(ctx, &format!("service/{}", b.service)),
                Some("service of the subject" | "service named for the subject")
            )
        })
}

/// The Services listed in a namespace, when any was: a namespace with none listed cannot tell a
/// missing Service from an unread list.
fn listed_services<'a>(ctx: &Ctx<'a>, ns: &str) -> Option<Vec<&'a ServiceFacts>> {
    let listed: Vec<&ServiceFacts> = ctx
        .obs
        .services
        .iter()
        .filter(|s| !s.missing && (s.namespace == ns || s.namespace.is_empty()))
        .collect();
    (!listed.is_empty()).then_some(listed)
}

/// Levenshtein distance, for names a typo or a rename apart.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The existing names most like `wanted` (one contains the other, or a few edits apart),
/// closest first.
fn similar<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut near: Vec<(usize, &str)> = names
        .filter(|n| *n != wanted)
        .filter_map(|n| {
            let d = distance(wanted, n);
            let close = d <= (wanted.len().max(n.len()) / 3).max(2)
                || (n.len() >= 3 && wanted.contains(n))
                || (wanted.len() >= 3 && n.contains(wanted));
            close.then_some((d, n))
        })
        .collect();
    near.sort();
    near.into_iter().map(|(_, n)| n).collect()
}

/// Whether a Service exposes the port a backend asks for: a number among its ports, or a name
/// one of its ports carries.
fn exposes(svc: &ServiceFacts, port: &str) -> bool {
    match port.parse::<u16>() {
        Ok(n) => svc.ports.iter().any(|(p, _)| *p == n),
        Err(_) => port.is_empty() || svc.port_names.contains_key(port),
    }
}

fn ports_text(svc: &ServiceFacts) -> String {
    let mut shown: Vec<String> = svc.ports.iter().map(|(p, _)| p.to_string()).collect();
    for (name, p) in &svc.port_names {
        if let Some(s) = shown.iter_mut().find(|s| **s == p.to_string()) {
            *s = format!("{p} ({name})");
        }
    }
    if shown.is_empty() {
        "no port".into()
    } else {
        shown.join(", ")
    }
}

fn signal(ctx: &Ctx, ing: &IngressFacts, analyzer: &'static str) -> Signal {
    Signal {
        analyzer,
        category: Category::ConfigurationError,
        basis: Basis::Measured,
        links: 1,
        evidence: ctx.ev(EVIDENCE),
        since: ing.since(),
        objects: vec![format!("ingress/{}", ing.name)],
        ..Signal::default()
    }
}

/// Check: does every backend of each Ingress in front of the subject name an existing Service, a
/// port it exposes, and have ready endpoints? Failing for each backend Service that does not.
pub(crate) fn backends(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let endpoint_findings = super::service_endpoints::service_endpoints(ctx);
    for ing in ctx
        .obs
        .ingresses
        .iter()
        .filter(|i| concerns_subject(ctx, i))
    {
        let Some(listed) = listed_services(ctx, &ing.namespace) else {
            continue;
        };
        let mut seen: Vec<&str> = Vec::new();
        for (rule, b) in ing.backends() {
            if seen.contains(&b.service.as_str()) {
                continue;
            }
            let Some(svc) = listed.iter().find(|s| s.name == b.service) else {
                seen.push(&b.service);
                let near = similar(&b.service, listed.iter().map(|s| s.name.as_str()));
                let hint = match near.first() {
                    Some(n) => format!("; the closest existing Service is {n}"),
                    None => String::new(),
                };
                let summary = format!(
                    "Ingress {} routes {rule} to Service {}, which does not exist in {}",
                    ing.name, b.service, ing.namespace
                );
                let mut s = signal(ctx, ing, "ingress_backend");
                s.summary = summary.clone();
                s.detail = format!(
                    "Services in {}: {}",
                    ing.namespace,
                    list_names(&listed.iter().map(|s| &s.name).collect::<Vec<_>>(), 6)
                );
                s.cause = Some(format!(
                    "{summary}, so the ingress controller has no backend for these requests and answers them with 503{hint}; the backend names a Service that was never created or was renamed"
                ));
                s.objects.push(format!("service/{}", b.service));
                out.push(s);
                continue;
            };
            if !exposes(svc, &b.port) {
                seen.push(&b.service);
                let summary = format!(
                    "Ingress {} routes {rule} to port {} of Service {}, which exposes only {}",
                    ing.name,
                    b.port,
                    svc.name,
                    ports_text(svc)
                );
                let mut s = signal(ctx, ing, "ingress_port");
                s.summary = summary.clone();
                s.detail = "an Ingress backend must name a port the Service exposes, by number or by the port's name".into();
                s.cause = Some(format!(
                    "{summary}, so the ingress controller has no backend for these requests and answers them with errors (503); the backend's port is not one the Service exposes"
                ));
                s.objects.push(format!("service/{}", svc.name));
                out.push(s);
                continue;
            }
            // A workload that is the subject itself has its own checks say why it is not
            // ready; this one speaks for an Ingress the problem is about.
            if !svc.endpoints_read || !svc.ready.is_empty() || !about(ctx, ing) {
                continue;
            }
            seen.push(&b.service);
            // Why the Service has none (a selector matching no pod, a wrong targetPort) is the
            // endpoint check's to say; this one only ties the Ingress to it.
            let object = format!("service/{}", svc.name);
            if endpoint_findings
                .iter()
                .any(|f| f.objects.contains(&object))
            {
                continue;
            }
            let summary = format!(
                "Ingress {} routes {rule} to Service {}, which has no ready endpoint ({} not ready: {})",
                ing.name,
                svc.name,
                svc.not_ready.len(),
                if svc.not_ready.is_empty() {
                    "none listed".to_string()
                } else {
                    list_names(&svc.not_ready, 3)
                }
            );
            let mut s = signal(ctx, ing, "ingress_endpoints");
            s.summary = summary.clone();
            s.detail = "a Service without a ready endpoint leaves the controller nothing to send requests to".into();
            s.category = Category::DependencyFailure;
            // Seen in the Endpoints; why its pods are not ready is for the checks on them.
            s.basis = Basis::Observed;
            s.links = 0;
            s.cause = Some(format!(
                "{summary}, so the ingress controller answers its requests with 503 until {}'s pods are ready",
                svc.name
            ));
            s.evidence = ctx.ev(&[
                "kubernetes/ingresses",
                "kubernetes/services",
                "kubernetes/pods",
            ]);
            s.objects.push(object);
            out.push(s);
        }
    }
    out
}

/// Check: will a controller serve each Ingress the alert or problem is about? Failing when the class
/// it names is not one the cluster has, or it names none and no class is the default, while no
/// controller has given it an address.
pub(crate) fn classes(ctx: &Ctx) -> Vec<Signal> {
    let Some(classes) = ctx.obs.ingress_classes.as_ref() else {
        return Vec::new();
    };
    let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
    let have = if names.is_empty() {
        "the cluster has no IngressClass".to_string()
    } else {
        format!("the cluster's classes are {}", list_names(&names, 5))
    };
    let mut out = Vec::new();
    for ing in ctx.obs.ingresses.iter().filter(|i| about(ctx, i)) {
        // A controller wrote an address into its status: something serves it.
        if !ing.addresses.is_empty() {
            continue;
        }
        let summary = match &ing.class {
            Some(c) if !names.contains(&c.as_str()) => format!(
                "Ingress {} names IngressClass \"{c}\", which the cluster does not have ({have})",
                ing.name
            ),
            None if !classes.iter().any(|c| c.is_default) => format!(
                "Ingress {} names no IngressClass and no class is marked default ({have})",
                ing.name
            ),
            _ => continue,
        };
        let mut s = signal(ctx, ing, "ingress_class");
        s.summary = summary.clone();
        s.detail = "its status has no load-balancer address: no controller has taken it".into();
        // The class list and the empty status agree.
        s.links = 2;
        s.cause = Some(format!(
            "{summary}, so no controller will serve it and requests for {} reach nothing; name an existing class (or mark one default)",
            if ing.hosts.is_empty() {
                "its rules".to_string()
            } else {
                list_names(&ing.hosts, 3)
            }
        ));
        out.push(s);
    }
    out
}

/// Check: does the Secret each TLS entry of an Ingress the alert or problem is about names exist?
/// Failing when the namespace's Secrets (names only) do not include it.
pub(crate) fn tls(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for ing in ctx.obs.ingresses.iter().filter(|i| about(ctx, i)) {
        // A namespace whose Secrets were not listed, or listed none, cannot tell a missing one.
        let Some(secrets) = ctx
            .obs
            .secrets
            .get(&ing.namespace)
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        for t in ing.tls.iter().filter(|t| !t.secret_name.is_empty()) {
            if secrets.contains(&t.secret_name) {
                continue;
            }
            let near = similar(&t.secret_name, secrets.iter().map(String::as_str));
            let summary = format!(
                "Ingress {} wants TLS Secret {} for {}, which does not exist in {}",
                ing.name,
                t.secret_name,
                if t.hosts.is_empty() {
                    "its hosts".to_string()
                } else {
                    list_names(&t.hosts, 3)
                },
                ing.namespace
            );
            let mut s = signal(ctx, ing, "ingress_tls");
            s.summary = summary.clone();
            s.detail = if near.is_empty() {
                format!("no Secret of a similar name among {}", secrets.len())
            } else {
                format!("similar Secrets: {}", list_names(&near, 3))
            };
            s.evidence = ctx.ev(&["kubernetes/ingresses", "changes"]);
            s.cause = Some(format!(
                "{summary}, so the controller serves its default, self-signed certificate and browsers warn{}; create the Secret or fix its name",
                match near.first() {
                    Some(n) => format!(" (a Secret named {n} exists)"),
                    None => String::new(),
                }
            ));
            s.objects.push(format!("secret/{}", t.secret_name));
            out.push(s);
        }
    }
    out
}

/// What the Ingress checks found in order, for the subject's Ingresses with nothing failing.
pub(crate) fn ruled_out(ctx: &Ctx, failing: &[Signal]) -> Vec<RuledOut> {
    let mut out = Vec::new();
    for ing in ctx
        .obs
        .ingresses
        .iter()
        .filter(|i| ctx.subject.ingresses.contains(&i.name))
    {
        let object = format!("ingress/{}", ing.name);
        if failing.iter().any(|s| s.objects.contains(&object)) {
            continue;
        }
        if listed_services(ctx, &ing.namespace).is_none() {
            continue;
        }
        let backends: Vec<String> = ing
            .backends()
            .iter()
            .map(|(r, b)| format!("{r} -> {}:{}", b.service, b.port))
            .collect();
        out.push(RuledOut {
            statement: format!("Ingress {} misrouted", ing.name),
            reason: format!(
                "every backend names an existing Service, a port it exposes and has ready endpoints ({}){}",
                list_names(&backends, 4),
                if ing.addresses.is_empty() {
                    String::new()
                } else {
                    format!("; a controller serves it at {}", ing.addresses.join(", "))
                }
            ),
            evidence: ctx.ev(EVIDENCE),
        });
    }
    out
}

/// Check, for Ingresses known only as routes on the Services read (not read on their own): does
/// each rule in front of the subject reach a port of an existing Service, under a class the
/// cluster has?
pub(crate) fn routes(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    let evidence = ctx.ev(&["kubernetes/services"]);
    let read_on_its_own = |svc: &ServiceFacts, name: &str| {
        ctx.obs
            .ingresses
            .iter()
            .any(|i| i.name == name && i.namespace == svc.namespace)
    };
    for svc in ctx.obs.services.iter().filter(|s| !s.routes.is_empty()) {
        let routes: Vec<_> = svc
            .routes
            .iter()
            .filter(|r| !read_on_its_own(svc, &r.ingress))
            .collect();
        let concerned = super::service_endpoints::named(ctx, svc)
            || routes.iter().any(|r| {
                super::network::named(ctx, &r.ingress)
                    || super::network::named(ctx, r.rule.split('/').next().unwrap_or(""))
            })
            || relation(ctx, &format!("service/{}", svc.name)).is_some_and(|r| r != "subject");
        if routes.is_empty() || !concerned {
            continue;
        }
        // An Ingress whose class no controller has: none of its rules is served at all.
        if let Some(r) = routes.iter().find(|r| r.unknown_class.is_some()) {
            let class = r.unknown_class.clone().unwrap_or_default();
            let summary = format!(
                "Ingress {} names IngressClass \"{class}\", which the cluster does not have",
                r.ingress
            );
            out.push(Signal {
                analyzer: "ingress_class",
                summary: summary.clone(),
                detail: format!("its rule {} routes to Service {}", r.rule, svc.name),
                category: Category::ConfigurationError,
                basis: Basis::Measured,
                links: 1,
                evidence: evidence.clone(),
                cause: Some(format!(
                    "{summary}, so no ingress controller serves its rules and requests for {} never reach Service {}; name an existing class",
                    r.rule, svc.name
                )),
                objects: vec![format!("ingress/{}", r.ingress), format!("service/{}", svc.name)],
                ..Signal::default()
            });
            continue;
        }
        let exposed: Vec<String> = svc.ports.iter().map(|(p, _)| p.to_string()).collect();
        let bad: Vec<_> = routes
            .iter()
            .filter(|r| {
                svc.missing || (r.port.parse::<u16>().is_ok() && !exposed.contains(&r.port))
            })
            .collect();
        let Some(first) = bad.first() else {
            continue;
        };
        let rules: Vec<String> = bad
            .iter()
            .map(|r| format!("{} ({})", r.ingress, r.rule))
            .collect();
        let (analyzer, summary, why) = if svc.missing {
            (
                "ingress_backend",
                format!(
                    "Ingress {} routes {} to Service {}, which does not exist in {}",
                    first.ingress, first.rule, svc.name, svc.namespace
                ),
                "the backend names a Service that was never created or was renamed",
            )
        } else {
            (
                "ingress_port",
                format!(
                    "Ingress {} routes {} to port {} of Service {}, which exposes only {}",
                    first.ingress,
                    first.rule,
                    first.port,
                    svc.name,
                    if exposed.is_empty() {
                        "no port".to_string()
                    } else {
                        exposed.join(", ")
                    }
                ),
                "the backend's port is not one the Service exposes",
            )
        };
        out.push(Signal {
            analyzer,
            summary: summary.clone(),
            detail: format!("rules: {}", list_names(&rules, 4)),
            category: Category::ConfigurationError,
            basis: Basis::Measured,
            links: 1,
            evidence: evidence.clone(),
            cause: Some(format!(
                "{summary}, so the ingress controller has no backend for these requests and answers them with errors (503); {why}"
            )),
            // The Ingress is what the alert names; the Service is what stands in front of the pods.
            objects: vec![
                format!("ingress/{}", first.ingress),
                format!("service/{}", svc.name),
            ],
            ..Signal::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        IngressBackendRef, IngressClassFacts, IngressRoute, IngressRule, IngressTls,
    };
    use crate::reason::{Observations, analyze};
    use std::collections::BTreeMap;

    fn storefront() -> ServiceFacts {
        ServiceFacts {
            name: "storefront".into(),
            namespace: "shop".into(),
            selector: BTreeMap::from([("app".into(), "storefront".into())]),
            ports: vec![(80, "8080".into())],
            port_names: BTreeMap::from([("http".into(), 80)]),
            endpoints_read: true,
            ready: vec!["storefront-7c9d8-aaaaa".into()],
            ..ServiceFacts::default()
        }
    }

    fn shop_ingress(service: &str, port: &str) -> IngressFacts {
        IngressFacts {
            name: "shop".into(),
            namespace: "shop".into(),
            class: Some("nginx".into()),
            hosts: vec!["shop.example.com".into()],
            rules: vec![IngressRule {
                host: Some("shop.example.com".into()),
                path: "/".into(),
                backend: IngressBackendRef {
                    service: service.into(),
                    port: port.into(),
                },
            }],
            tls: vec![IngressTls {
                hosts: vec!["shop.example.com".into()],
                secret_name: "shop-tls".into(),
            }],
            addresses: vec!["203.0.113.10".into()],
            created_at: "2026-11-28T13:50:00Z".parse().ok(),
            ..IngressFacts::default()
        }
    }

    /// A shop whose website is served by Ingress `shop` -> Service `storefront` -> its pods, all
    /// in order, with the problem said in the on-call engineer's words.
    fn world(ing: IngressFacts) -> Observations {
        let (pod, deployment) = crate::reason::checks::fixtures::serving("storefront", "shop");
        Observations {
            problem: Some("the shop website returns 503".into()),
            pods: vec![pod],
            deployments: vec![deployment],
            services: vec![storefront()],
            ingresses: vec![ing],
            ingress_classes: Some(vec![IngressClassFacts {
                name: "nginx".into(),
                controller: "k8s.io/ingress-nginx".into(),
                is_default: true,
            }]),
            secrets: BTreeMap::from([("shop".into(), vec!["shop-tls".into()])]),
            evidence: BTreeMap::from([
                ("kubernetes/ingresses".to_string(), vec!["ev-1".to_string()]),
                ("kubernetes/services".to_string(), vec!["ev-2".to_string()]),
                ("changes".to_string(), vec!["ev-3".to_string()]),
            ]),
            ..Observations::default()
        }
    }

    fn all(o: &Observations) -> Vec<Signal> {
        let ctx = Ctx::new(o);
        let mut out = backends(&ctx);
        out.extend(classes(&ctx));
        out.extend(tls(&ctx));
        out.extend(routes(&ctx));
        out
    }

    #[test]
    fn a_correct_ingress_fails_no_check_and_is_ruled_out() {
        let o = world(shop_ingress("storefront", "80"));
        assert!(all(&o).is_empty(), "{:?}", all(&o));
        // By the port's name too.
        assert!(all(&world(shop_ingress("storefront", "http"))).is_empty());
        let a = analyze(&o);
        assert!(
            a.ruled_out
                .iter()
                .any(|r| r.statement == "Ingress shop misrouted"
                    && r.reason.contains("shop.example.com/ -> storefront:80")),
            "{:?}",
            a.ruled_out
        );
        assert!(
            a.checks
                .iter()
                .all(|c| c.status != crate::model::CheckStatus::Failing
                    || !c.check.starts_with("Ingress"))
        );
    }

    #[test]
    fn a_backend_service_that_does_not_exist_is_the_cause_with_the_closest_name() {
        let o = world(shop_ingress("storefront-svc", "80"));
        let a = analyze(&o);
        assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
        assert!(
            a.root_cause.contains(
                "Ingress shop routes shop.example.com/ to Service storefront-svc, which does not exist in shop"
            ) && a.root_cause.contains("the closest existing Service is storefront"),
            "{}",
            a.root_cause
        );
        let failing = a
            .checks
            .iter()
            .find(|c| c.status == crate::model::CheckStatus::Failing)
            .map(|c| (c.check.clone(), c.since));
        assert_eq!(
            failing,
            Some((
                "Ingress routes to a Service that exists".to_string(),
                "2026-11-28T13:50:00Z".parse().ok()
            ))
        );
        // No Service listed in the namespace: a missing one cannot be told from an unread list.
        let mut unread = world(shop_ingress("storefront-svc", "80"));
        unread.services.clear();
        assert!(backends(&Ctx::new(&unread)).is_empty());
    }

    #[test]
    fn a_backend_port_the_service_does_not_expose_is_a_configuration_error() {
        for port in ["8080", "https"] {
            let sigs = backends(&Ctx::new(&world(shop_ingress("storefront", port))));
            assert_eq!(sigs.len(), 1, "{sigs:?}");
            assert_eq!(sigs[0].analyzer, "ingress_port");
            assert_eq!(sigs[0].category, Category::ConfigurationError);
            assert!(
                sigs[0].summary.contains(&format!(
                    "to port {port} of Service storefront, which exposes only 80 (http)"
                )),
                "{}",
                sigs[0].summary
            );
        }
    }

    #[test]
    fn a_backend_without_ready_endpoints_points_to_its_service_unless_the_endpoint_check_says_why()
    {
        let mut o = world(shop_ingress("storefront", "80"));
        o.services[0].ready.clear();
        o.services[0].not_ready = vec!["storefront-7c9d8-aaaaa".into()];
        let sigs = backends(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].analyzer, "ingress_endpoints");
        assert_eq!(sigs[0].category, Category::DependencyFailure);
        assert!(sigs[0].objects.contains(&"service/storefront".to_string()));
        assert!(
            sigs[0]
                .summary
                .contains("no ready endpoint (1 not ready: storefront-7c9d8-aaaaa)")
        );
        // A selector no pod carries: the endpoint check names that, this one stays quiet.
        o.services[0].selector = BTreeMap::from([("app".into(), "store-front".into())]);
        o.services[0].not_ready.clear();
        assert!(backends(&Ctx::new(&o)).is_empty());
        let a = analyze(&o);
        assert!(
            a.root_cause
                .contains("Service storefront selects app=store-front"),
            "{}",
            a.root_cause
        );
    }

    #[test]
    fn an_ingress_no_controller_serves_is_a_configuration_error() {
        // A class the cluster lacks, and no address in its status.
        let mut ing = shop_ingress("storefront", "80");
        ing.class = Some("nginx-internal".into());
        ing.addresses.clear();
        let a = analyze(&world(ing.clone()));
        assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
        assert!(
            a.root_cause.contains(
                "names IngressClass \"nginx-internal\", which the cluster does not have (the cluster's classes are nginx)"
            ) && a.root_cause.contains("no controller will serve it"),
            "{}",
            a.root_cause
        );
        // No class named and none marked default.
        let mut o = world(ing.clone());
        o.ingresses[0].class = None;
        if let Some(c) = o.ingress_classes.as_mut() {
            c[0].is_default = false;
        }
        let sigs = classes(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert!(
            sigs[0]
                .summary
                .contains("names no IngressClass and no class is marked default")
        );
        // A default class takes it.
        if let Some(c) = o.ingress_classes.as_mut() {
            c[0].is_default = true;
        }
        assert!(classes(&Ctx::new(&o)).is_empty());
        // A controller gave it an address: something serves it.
        let mut served = world(ing.clone());
        served.ingresses[0].addresses = vec!["203.0.113.10".into()];
        assert!(classes(&Ctx::new(&served)).is_empty());
        // The classes were not read: not judged.
        let mut unread = world(ing);
        unread.ingress_classes = None;
        assert!(classes(&Ctx::new(&unread)).is_empty());
    }

    #[test]
    fn a_tls_secret_that_does_not_exist_names_the_similar_ones() {
        let mut o = world(shop_ingress("storefront", "80"));
        o.problem = Some("the shop website shows a certificate warning".into());
        o.secrets = BTreeMap::from([(
            "shop".into(),
            vec!["shop-tls-2026".into(), "db-password".into()],
        )]);
        let sigs = tls(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        assert!(
            sigs[0].summary
                == "Ingress shop wants TLS Secret shop-tls for shop.example.com, which does not exist in shop"
                && sigs[0].detail == "similar Secrets: shop-tls-2026",
            "{sigs:?}"
        );
        let a = analyze(&o);
        assert!(
            a.root_cause.contains("self-signed certificate"),
            "{}",
            a.root_cause
        );
        // The namespace's Secrets not listed: not judged.
        o.secrets.clear();
        assert!(tls(&Ctx::new(&o)).is_empty());
    }

    #[test]
    fn an_ingress_known_only_as_routes_on_services_is_still_checked() {
        let route = |port: &str, class: Option<&str>| IngressRoute {
            ingress: "shop".into(),
            rule: "shop.example.com/".into(),
            port: port.into(),
            unknown_class: class.map(str::to_string),
        };
        let mut o = world(shop_ingress("storefront", "80"));
        o.ingresses.clear();
        o.problem = Some("Ingress shop returns 503".into());
        o.services.push(ServiceFacts {
            name: "web-svc".into(),
            namespace: "shop".into(),
            missing: true,
            routes: vec![route("80", None)],
            ..ServiceFacts::default()
        });
        let a = analyze(&o);
        assert_eq!(a.category, Category::ConfigurationError, "{}", a.root_cause);
        assert!(
            a.root_cause
                .contains("routes shop.example.com/ to Service web-svc, which does not exist"),
            "{}",
            a.root_cause
        );
        let mut wrong = world(shop_ingress("storefront", "80"));
        wrong.ingresses.clear();
        wrong.problem = Some("Ingress shop returns 503".into());
        wrong.services[0].routes = vec![route("8081", None)];
        let sigs = routes(&Ctx::new(&wrong));
        assert!(
            sigs.len() == 1
                && sigs[0]
                    .summary
                    .contains("to port 8081 of Service storefront, which exposes only 80"),
            "{sigs:?}"
        );
        wrong.services[0].routes = vec![route("80", Some("nginx-internal"))];
        let sigs = routes(&Ctx::new(&wrong));
        assert!(
            sigs.len() == 1
                && sigs[0]
                    .summary
                    .contains("names IngressClass \"nginx-internal\""),
            "{sigs:?}"
        );
        // A route to an exposed port is fine; one read on its own is left to the other checks.
        wrong.services[0].routes = vec![route("80", None)];
        assert!(routes(&Ctx::new(&wrong)).is_empty());
        let mut both = world(shop_ingress("storefront", "80"));
        both.services[0].routes = vec![route("8081", None)];
        assert!(routes(&Ctx::new(&both)).is_empty());
    }

    #[test]
    fn an_alert_about_the_workload_checks_only_the_routes_of_the_ingress_in_front_of_it() {
        let mut ing = shop_ingress("storefront", "80");
        ing.class = Some("nginx-internal".into());
        ing.addresses.clear();
        let mut o = world(ing);
        o.problem = None;
        o.alert = Some(crate::model::Alert {
            labels: BTreeMap::from([
                ("alertname".into(), "KubeDeploymentReplicasMismatch".into()),
                ("namespace".into(), "shop".into()),
                ("deployment".into(), "storefront".into()),
            ]),
            ..crate::model::Alert::default()
        });
        o.secrets = BTreeMap::from([("shop".into(), vec!["other".into()])]);
        o.services[0].ready.clear();
        // Its class, its certificate and its endpoints are not what the alert is about.
        assert!(all(&o).is_empty(), "{:?}", all(&o));
        // A route to a Service that does not exist stands in front of the subject all the same.
        o.ingresses[0].rules.push(IngressRule {
            host: Some("shop.example.com".into()),
            path: "/api".into(),
            backend: IngressBackendRef {
                service: "storefront-api".into(),
                port: "80".into(),
            },
        });
        let sigs = backends(&Ctx::new(&o));
        assert!(
            sigs.len() == 1
                && sigs[0]
                    .summary
                    .contains("Service storefront-api, which does not exist"),
            "{sigs:?}"
        );
    }

    #[test]
    fn names_a_few_edits_apart_are_similar() {
        assert_eq!(distance("storefront", "storefront-svc"), 4);
        assert_eq!(
            similar(
                "storefront-svc",
                ["storefront", "payments", "store"].into_iter()
            ),
            vec!["storefront", "store"]
        );
        assert!(similar("docs", ["payments"].into_iter()).is_empty());
    }
}
