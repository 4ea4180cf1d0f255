//! The Ingress a problem is about: one its words name (by its name, its name's words in a row, or
//! one of its hosts), or, when they name no workload but speak of a website, a URL or an HTTP
//! error, the one Ingress of the namespace whose words they share. Its backend Services and the
//! workloads behind them join the subject.

use super::subject::{Subject, mentions, selector_matches, workload_of};
use crate::model::{IngressFacts, SubjectObject};
use crate::reason::Observations;

/// Words that say the problem is seen from outside, through a URL.
const WEB_WORDS: &[&str] = &[
    "website",
    "site",
    "portal",
    "url",
    "page",
    "502",
    "503",
    "504",
    "404",
    "certificate",
    "cert",
    "tls",
    "https",
    "ssl",
];

/// Words too common to tie a problem to an Ingress by themselves.
const COMMON: &[&str] = &[
    "www", "com", "net", "org", "io", "example", "api", "app", "web", "the", "ingress",
];

/// The problem's (or the alert's) words, lowercased, split at anything but letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// How the text names an Ingress: its whole name, its name's words in a row (two or more: "docs
/// portal" for `docs-portal`), or one of its hosts; `None` when it does not.
fn named_by(ing: &IngressFacts, text: &str, said: &[String]) -> Option<String> {
    if mentions(text, &ing.name) {
        return Some("named in the text".into());
    }
    if let Some(h) = ing.hosts.iter().find(|h| mentions(text, h)) {
        return Some(format!("its host {h} named in the text"));
    }
    let parts: Vec<&str> = ing
        .name
        .split(['-', '_', '.'])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() >= 2
        && said
            .windows(parts.len())
            .any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
    {
        return Some(format!(
            "its name's words ({}) in the text",
            parts.join(" ")
        ));
    }
    None
}

/// Whether the text names an Ingress's host outright (`www.acme-shop.com`): a host is more exact
/// than any word a workload's name shares with the text, so words are not matched to workloads
/// then.
pub(crate) fn host_named(obs: &Observations, text: &str) -> bool {
    obs.ingresses
        .iter()
        .any(|i| i.hosts.iter().any(|h| h.contains('.') && mentions(text, h)))
}

/// Whether the text shares a telling word with the Ingress's name or hosts.
fn shares_words(ing: &IngressFacts, said: &[String]) -> bool {
    let mut own: Vec<String> = words(&ing.name);
    for h in &ing.hosts {
        own.extend(words(h));
    }
    own.iter()
        .filter(|w| w.len() >= 3 && !COMMON.contains(&w.as_str()))
        .any(|w| said.contains(w))
}

/// Add the Ingress the text is about to the subject, with its backend Services and the workloads
/// their selectors take. `text` is the alert's summary and the problem's words.
pub(crate) fn resolve(obs: &Observations, s: &mut Subject, text: &str, label: Option<&str>) {
    let in_scope: Vec<&IngressFacts> = obs
        .ingresses
        .iter()
        .filter(|i| {
            s.namespace
                .as_deref()
                .is_none_or(|n| i.namespace.is_empty() || i.namespace == n)
        })
        .collect();
    if in_scope.is_empty() {
        return;
    }
    let said = words(text);
    let mut chosen: Vec<(&IngressFacts, String)> = in_scope
        .iter()
        .filter_map(|i| {
            if label == Some(i.name.as_str()) {
                return Some((*i, format!("label ingress={}", i.name)));
            }
            named_by(i, text, &said).map(|how| (*i, how))
        })
        .collect();
    // Seen from outside, naming no workload: the one Ingress whose words the problem shares.
    if chosen.is_empty()
        && s.workloads.is_empty()
        && s.named_pods.is_empty()
        && said.iter().any(|w| WEB_WORDS.contains(&w.as_str()))
    {
        let plausible: Vec<&&IngressFacts> =
            in_scope.iter().filter(|i| shares_words(i, &said)).collect();
        if let [only] = plausible.as_slice() {
            chosen.push((
                only,
                "the one Ingress whose words the problem shares, for a problem seen through its URL"
                    .into(),
            ));
        }
    }
    // Seen from outside, naming a workload: the Ingresses in front of it are what is seen.
    if chosen.is_empty()
        && !s.workloads.is_empty()
        && said.iter().any(|w| WEB_WORDS.contains(&w.as_str()))
    {
        for ing in &in_scope {
            let fronts = ing.backends().iter().any(|(_, b)| {
                obs.services
                    .iter()
                    .filter(|v| v.name == b.service && v.namespace == ing.namespace)
                    .filter(|v| !v.missing && !v.selector.is_empty())
                    .any(|v| {
                        obs.pods.iter().any(|p| {
                            p.namespace == ing.namespace
                                && selector_matches(&v.selector, &[], &p.labels)
                                && workload_of(obs, p).is_some_and(|w| s.workloads.contains(&w))
                        })
                    })
            });
            if fronts {
                chosen.push((
                    ing,
                    "in front of the workload, for a problem seen through its URL".into(),
                ));
            }
        }
    }
    for (ing, how) in chosen {
        add(s, "Ingress", &ing.name, &ing.namespace, how);
        if s.namespace.is_none() && !ing.namespace.is_empty() {
            s.namespace = Some(ing.namespace.clone());
        }
        if !s.ingresses.contains(&ing.name) {
            s.ingresses.push(ing.name.clone());
        }
        let mut backends: Vec<&str> = ing
            .backends()
            .iter()
            .map(|(_, b)| b.service.as_str())
            .collect();
        backends.sort_unstable();
        backends.dedup();
        for name in backends {
            add(
                s,
                "Service",
                name,
                &ing.namespace,
                format!("backend of Ingress {}", ing.name),
            );
            let Some(svc) = obs
                .services
                .iter()
                .find(|v| v.name == name && v.namespace == ing.namespace && !v.missing)
            else {
                continue;
            };
            if svc.selector.is_empty() {
                continue;
            }
            for p in obs.pods.iter().filter(|p| {
                p.namespace == ing.namespace && selector_matches(&svc.selector, &[], &p.labels)
            }) {
                if let Some(w) = workload_of(obs, p)
                    && !s.workloads.contains(&w)
                {
                    add(
                        s,
                        &w.0,
                        &w.1,
                        &ing.namespace,
                        format!("behind Service {name}, a backend of Ingress {}", ing.name),
                    );
                    s.workloads.push(w);
                }
            }
        }
    }
}

fn add(s: &mut Subject, kind: &str, name: &str, ns: &str, how: String) {
    if !s.objects.iter().any(|o| o.kind == kind && o.name == name) {
        s.objects.push(SubjectObject {
            kind: kind.to_string(),
            name: name.to_string(),
            namespace: ns.to_string(),
            how,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IngressBackendRef, IngressRule};

    fn ing(name: &str, host: &str, svc: &str) -> IngressFacts {
        IngressFacts {
            name: name.into(),
            namespace: "web".into(),
            hosts: vec![host.into()],
            rules: vec![IngressRule {
                host: Some(host.into()),
                path: "/".into(),
                backend: IngressBackendRef {
                    service: svc.into(),
                    port: "80".into(),
                },
            }],
            ..IngressFacts::default()
        }
    }

    fn subject_of(problem: &str, ingresses: Vec<IngressFacts>) -> Subject {
        let obs = Observations {
            problem: Some(problem.into()),
            ingresses,
            ..Observations::default()
        };
        let mut s = Subject::default();
        resolve(&obs, &mut s, problem, None);
        s
    }

    #[test]
    fn an_ingress_is_named_by_its_name_its_words_or_its_host() {
        let all = || {
            vec![
                ing("docs-portal", "docs.example.com", "docs"),
                ing("shop", "shop.example.com", "storefront"),
            ]
        };
        let s = subject_of("the docs portal is unreachable", all());
        assert_eq!(s.ingresses, vec!["docs-portal"]);
        assert!(
            s.objects
                .iter()
                .any(|o| o.kind == "Service" && o.name == "docs"),
            "{:?}",
            s.objects
        );
        let s = subject_of("https://shop.example.com/cart times out", all());
        assert_eq!(s.ingresses, vec!["shop"]);
        // Words that name neither, nor speak of a website, take none.
        assert!(
            subject_of("the checkout job failed", all())
                .ingresses
                .is_empty()
        );
    }

    #[test]
    fn the_named_ingress_brings_its_services_workloads_and_pods_into_the_subject() {
        use crate::model::{DeploymentFacts, PodFacts, ServiceFacts};
        use std::collections::BTreeMap;
        let app = BTreeMap::from([("app".to_string(), "docs".to_string())]);
        let obs = Observations {
            problem: Some("the docs portal is unreachable".into()),
            ingresses: vec![ing("docs-portal", "docs.example.com", "docs-svc")],
            services: vec![ServiceFacts {
                name: "docs-svc".into(),
                namespace: "web".into(),
                selector: app.clone(),
                ..ServiceFacts::default()
            }],
            deployments: vec![DeploymentFacts {
                name: "docs-server".into(),
                namespace: "web".into(),
                selector: app.clone(),
                ..DeploymentFacts::default()
            }],
            pods: vec![PodFacts {
                name: "docs-server-6f7d8-x1".into(),
                namespace: "web".into(),
                owner: Some("ReplicaSet/docs-server-6f7d8".into()),
                labels: BTreeMap::from([
                    ("app".to_string(), "docs".to_string()),
                    ("pod-template-hash".to_string(), "6f7d8".to_string()),
                ]),
                ..PodFacts::default()
            }],
            ..Observations::default()
        };
        let s = super::super::subject::resolve(&obs);
        assert!(s.resolved);
        assert_eq!(s.namespace.as_deref(), Some("web"));
        assert_eq!(s.ingresses, vec!["docs-portal"]);
        assert_eq!(
            s.workloads,
            vec![("Deployment".to_string(), "docs-server".to_string())]
        );
        assert_eq!(s.pods, vec!["docs-server-6f7d8-x1"]);
        // A workload named with words of the web: the Ingress in front of it is seen too.
        let mut named = obs.clone();
        named.ingresses[0].name = "public".into();
        named.ingresses[0].hosts = vec!["handbook.example.com".into()];
        named.problem = Some("docs-server shows a certificate warning".into());
        assert_eq!(
            super::super::subject::resolve(&named).ingresses,
            vec!["public"]
        );
        named.problem = Some("docs-server is slow".into());
        assert!(super::super::subject::resolve(&named).ingresses.is_empty());
        // Without the Ingress read, no Ingress or backend Service is part of the subject.
        let mut none = obs.clone();
        none.ingresses.clear();
        let s = super::super::subject::resolve(&none);
        assert!(
            s.ingresses.is_empty() && !s.objects.iter().any(|o| o.kind == "Service"),
            "{:?}",
            s.objects
        );
    }

    #[test]
    fn a_website_problem_takes_the_one_ingress_sharing_its_words() {
        let all = || {
            vec![
                ing("storefront", "shop.example.com", "storefront"),
                ing("docs-portal", "docs.example.com", "docs"),
            ]
        };
        let s = subject_of("the shop website shows 503s", all());
        assert_eq!(s.ingresses, vec!["storefront"]);
        // Without a word of the web, a shared word is not enough.
        assert!(subject_of("shop is slow", all()).ingresses.is_empty());
        // Two Ingresses sharing the words: neither is preferred.
        let mut two = all();
        two.push(ing("shop-admin", "admin.shop.example.com", "admin"));
        assert!(
            subject_of("the shop website shows 503s", two)
                .ingresses
                .is_empty()
        );
    }
}
