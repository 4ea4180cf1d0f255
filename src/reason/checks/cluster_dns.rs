//! The cluster's DNS: when the subject's own lookups fail and the CoreDNS (kube-dns) pods that
//! answer them are not serving, the resolver is down, a cluster component, and every name the
//! subject resolves fails with it; the lookups are its effect, not a dependency's failure.

use super::{Basis, Decl, Role};
use crate::model::{Category, PodFacts};
use crate::reason::logs::{self, Sig};
use crate::reason::{Ctx, Signal, list_names};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "cluster_dns_down",
    title: "the cluster DNS answers the subject's lookups",
    concern: "cluster_dns",
    role: Role::Failure,
    reads: &[],
}];

/// A pod of the cluster's DNS (CoreDNS or kube-dns), by the labels their manifests give.
pub(crate) fn is_cluster_dns(p: &PodFacts) -> bool {
    ["k8s-app", "app.kubernetes.io/name", "app"]
        .iter()
        .any(|k| {
            p.labels
                .get(*k)
                .is_some_and(|v| v == "kube-dns" || v == "coredns")
        })
}

/// Why a DNS pod does not serve: its waiting reason, else not Ready.
fn state(p: &PodFacts) -> String {
    let waiting = p
        .containers
        .iter()
        .find_map(|c| c.reason.clone().filter(|_| c.state == "waiting"));
    let exit = p
        .containers
        .iter()
        .find_map(|c| {
            c.last_exit_code
                .map(|code| format!(", last exit code {code}"))
        })
        .unwrap_or_default();
    match waiting {
        Some(r) => format!("{} {r}{exit}", p.name),
        None => format!("{} not Ready ({}){exit}", p.name, p.phase),
    }
}

/// Check: do the subject's lookups fail while the cluster DNS pods are down? Failing when its
/// logs show DNS resolution failures and no CoreDNS / kube-dns pod listed is Ready.
pub(crate) fn cluster_dns(ctx: &Ctx) -> Vec<Signal> {
    let dns: Vec<&PodFacts> = ctx
        .obs
        .pods
        .iter()
        .filter(|p| is_cluster_dns(p) && !p.deleting)
        .collect();
    if dns.is_empty() || dns.iter().any(|p| p.ready()) {
        return Vec::new();
    }
    // The subject's own lookups failing, else the problem or alert saying names do not resolve.
    let hits = ctx.subject_hits();
    let lookups = hits.iter().find(|h| h.sig == Sig::Dns);
    let said = said_unresolved(ctx);
    let seen = match (lookups, said) {
        (Some(h), _) => format!(
            "{} {}, e.g. \"{}\"",
            h.count,
            h.sig.label(),
            logs::short(&h.example)
        ),
        (None, Some(words)) => format!("as the report says: \"{words}\""),
        (None, None) => return Vec::new(),
    };
    let who = ctx.scope_name("the subject");
    let down: Vec<String> = dns.iter().map(|p| state(p)).collect();
    // Why its own pods do not serve, from their own last words (a forwarding loop detected).
    let own = super::dependencies::own_failure_of(ctx, &dns)
        .map(|(_, words)| words)
        .unwrap_or_default();
    let summary = format!(
        "the cluster DNS is down: none of its pods is Ready ({})",
        list_names(&down, 3)
    );
    vec![Signal {
        analyzer: "cluster_dns_down",
        summary: summary.clone(),
        detail: format!("lookups failing: {seen}"),
        category: Category::Infrastructure,
        basis: Basis::Stated,
        // The DNS pods' own state, and the subject's lookups failing against them.
        links: 2,
        evidence: ctx.ev(&["kubernetes/pods", "kubernetes/pod_logs", "logs"]),
        cause: Some(format!(
            "The cluster DNS is down: none of its CoreDNS / kube-dns pods is Ready ({}){own}, so every name {who} looks up fails ({seen}); the resolver itself must be restored, the names and the services behind them are not at fault",
            list_names(&down, 3),
        )),
        since: dns
            .iter()
            .flat_map(|p| p.containers.iter())
            .filter_map(|c| c.last_finished_at)
            .min(),
        objects: dns.iter().map(|p| format!("pod/{}", p.name)).collect(),
        ..Signal::default()
    }]
}

/// The words of the problem or the alert that say names do not resolve, if they do.
fn said_unresolved(ctx: &Ctx) -> Option<String> {
    static WORDS: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:dns|resolv\w*|name resolution|nxdomain|servfail|lookups?)\b")
            .ok()
    });
    let re = WORDS.as_ref()?;
    let alert = ctx.obs.alert.as_ref().map(|a| {
        a.annotations
            .values()
            .cloned()
            .chain(a.labels.get("alertname").cloned())
            .collect::<Vec<_>>()
            .join(" ")
    });
    [ctx.obs.problem.clone(), alert]
        .into_iter()
        .flatten()
        .find(|t| re.is_match(t))
        .map(|t| logs::short(&t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContainerFacts, LogLine};
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn pod(name: &str, labels: &[(&str, &str)], ready: bool) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "kube-system".into(),
            phase: "Running".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            conditions: BTreeMap::from([(
                "Ready".to_string(),
                if ready { "True" } else { "False" }.to_string(),
            )]),
            containers: vec![ContainerFacts {
                name: "coredns".into(),
                state: if ready { "running" } else { "waiting" }.into(),
                reason: (!ready).then(|| "CrashLoopBackOff".to_string()),
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    #[test]
    fn lookups_failing_while_the_dns_pods_are_down_blame_the_resolver() {
        let line = "dial tcp: lookup carrier.svc.cluster.local on 10.96.0.10:53: read udp 10.1.1.30:41000->10.96.0.10:53: i/o timeout";
        let mut obs = Observations {
            pods: vec![
                pod("coredns-5d78-7xq4w", &[("k8s-app", "kube-dns")], false),
                pod("coredns-5d78-bk9zt", &[("k8s-app", "kube-dns")], false),
            ],
            logs: vec![LogLine {
                line: line.into(),
                ..LogLine::default()
            }],
            ..Observations::default()
        };
        let sigs = cluster_dns(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::Infrastructure);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("coredns-5d78-7xq4w CrashLoopBackOff")
                && cause.contains("10.96.0.10:53"),
            "{cause}"
        );
        // One DNS pod serving: lookups failing are not the resolver being down.
        obs.pods[1] = pod("coredns-5d78-bk9zt", &[("k8s-app", "kube-dns")], true);
        assert!(cluster_dns(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn a_report_that_names_do_not_resolve_while_the_dns_pods_are_down_blames_the_resolver() {
        let mut obs = Observations {
            pods: vec![pod("coredns-5d78-7xq4w", &[("k8s-app", "kube-dns")], false)],
            problem: Some("services in every namespace suddenly can't resolve hostnames".into()),
            ..Observations::default()
        };
        let sigs = cluster_dns(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(cause.contains("can't resolve hostnames"), "{cause}");
        // A report of something else says nothing of lookups.
        obs.problem = Some("checkout is slow".into());
        assert!(cluster_dns(&Ctx::new(&obs)).is_empty());
    }
}
