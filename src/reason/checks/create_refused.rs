//! Pods a controller could not create: a ReplicaSet's, Job's, StatefulSet's or DaemonSet's
//! FailedCreate says why the API refused them (a service account, secret or config map that does
//! not exist, an admission policy). Exceeded quotas and LimitRange bounds have checks of their own.

use super::{Basis, Decl, Role};
use crate::model::Category;
use crate::reason::{Ctx, Signal, object_name};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "create_refused",
    title: "controller refused to create pods",
    concern: "create_refused",
    role: Role::Failure,
    reads: &[],
}];

/// Why the API refused a pod, from a FailedCreate message; None for what other checks read.
fn refusal(message: &str) -> Option<(Category, String)> {
    let m = message.to_lowercase();
    if m.contains("exceeded quota")
        || m.contains("limitrange")
        || m.contains("per container")
        || m.contains("per pod")
    {
        return None;
    }
    let quoted = |what: &str| -> String {
        // `serviceaccount "ghost" not found` -> ghost
        m.split_once(what)
            .and_then(|(_, rest)| rest.trim_start().strip_prefix('"'))
            .and_then(|rest| rest.split_once('"'))
            .map(|(name, _)| name.to_string())
            .unwrap_or_default()
    };
    let missing = [
        ("serviceaccount", "service account"),
        ("service account", "service account"),
        ("secret", "secret"),
        ("configmap", "config map"),
        ("persistentvolumeclaim", "PersistentVolumeClaim"),
        ("priorityclass", "PriorityClass"),
    ];
    if m.contains("not found") || m.contains("does not exist") {
        for (key, noun) in missing {
            if m.contains(key) {
                let name = quoted(key);
                let named = if name.is_empty() {
                    String::new()
                } else {
                    format!(" {name}")
                };
                return Some((
                    Category::ConfigurationError,
                    format!("the {noun}{named} its pod template names does not exist"),
                ));
            }
        }
    }
    // The API could not ask an admission webhook at all: the webhook's own backend is down (no
    // endpoints, refused, timed out), a cluster component every pod creation waits on.
    if m.contains("failed calling webhook") {
        let webhook = quoted("webhook");
        let service = quoted("no endpoints available for service");
        let down = if !service.is_empty() {
            format!("its Service {service} has no ready endpoints")
        } else if m.contains("connection refused") {
            "it refuses connections".to_string()
        } else if m.contains("timeout") || m.contains("deadline exceeded") {
            "it does not answer in time".to_string()
        } else {
            "it cannot be reached".to_string()
        };
        return Some((
            Category::Infrastructure,
            format!(
                "the admission webhook {webhook} the API server must call for every pod is down ({down}); restore the webhook's pods, or relax its failurePolicy, and the controller creates the pods"
            ),
        ));
    }
    if m.contains("podsecurity") || m.contains("admission webhook") || m.contains("denied") {
        return Some((
            Category::ConfigurationError,
            "an admission policy refuses its pod template".into(),
        ));
    }
    if m.contains("forbidden") || m.contains("invalid") {
        return Some((
            Category::ConfigurationError,
            "the API refuses its pod template".into(),
        ));
    }
    None
}

/// The Service a webhook call could not reach, with its namespace, from the API server's words:
/// `no endpoints available for service "kyverno-svc"` and the URL `https://kyverno-svc.kyverno.svc`.
pub(crate) fn webhook_service(message: &str) -> Option<(String, String)> {
    let name = message
        .split("no endpoints available for service \"")
        .nth(1)?
        .split('"')
        .next()?
        .to_string();
    let host = format!("{name}.");
    let ns = message
        .split("://")
        .skip(1)
        .filter_map(|rest| rest.strip_prefix(&host))
        .find_map(|rest| rest.split(['.', ':', '/']).next())
        .filter(|n| !n.is_empty())?
        .to_string();
    Some((ns, name))
}

/// What the pods behind a Service fail of, as a dependency's own failure is read.
fn backing_failure(ctx: &Ctx, ns: &str, service: &str) -> Option<(Category, String)> {
    let svc = ctx
        .obs
        .services
        .iter()
        .find(|s| s.name == service && s.namespace == ns && !s.selector.is_empty())?;
    let pods: Vec<&crate::model::PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| {
            p.namespace == ns
                && crate::reason::subject::selector_matches(&svc.selector, &[], &p.labels)
        })
        .collect();
    super::dependencies::own_failure_of(ctx, &pods)
}

/// Check: can the subject's controllers create their pods? Failing on a FailedCreate event of a
/// controller of the subject whose message says the API refused the pod; since its first event.
pub(crate) fn create_refused(ctx: &Ctx) -> Vec<Signal> {
    let mut found = ctx
        .events()
        .into_iter()
        .filter(|e| e.reason == "FailedCreate")
        .filter_map(|e| refusal(&e.message).map(|r| (e, r)))
        .filter(|(e, _)| crate::reason::rank::relation(ctx, &e.object.to_lowercase()).is_some())
        .collect::<Vec<_>>();
    found.sort_by_key(|(e, _)| std::cmp::Reverse(e.last_seen));
    let Some((e, (mut category, mut why))) = found.into_iter().next() else {
        return Vec::new();
    };
    // A webhook down because its own pods fail: their failure is the cause, in its class.
    if let Some((svc_ns, svc)) = webhook_service(&e.message)
        && let Some((class, words)) = backing_failure(ctx, &svc_ns, &svc)
    {
        category = class;
        why = format!("{why}; the webhook's pods behind Service {svc} fail{words}");
    }
    let owner = object_name(&e.object).to_string();
    let kind = e
        .object
        .split('/')
        .next()
        .unwrap_or("controller")
        .to_string();
    let times = if e.count > 1 {
        format!(" x{}", e.count)
    } else {
        String::new()
    };
    let summary = format!(
        "{kind} {owner} cannot create its pods: {why} (FailedCreate{times}: \"{}\")",
        e.message
    );
    vec![Signal {
        analyzer: "create_refused",
        summary: summary.clone(),
        detail: e.message.clone(),
        category,
        basis: Basis::Stated,
        links: 1,
        evidence: ctx.ev(&["kubernetes/events", "kubernetes/deployments"]),
        cause: Some(if category == Category::Infrastructure {
            format!("{summary}, so its pods are not created")
        } else {
            format!(
                "{summary}, so no pod of it runs; create the missing object or correct the template"
            )
        }),
        objects: vec![e.object.to_lowercase()],
        since: e.first_seen.or(e.last_seen),
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhooks_service_is_read_from_the_refusal_with_its_namespace() {
        let message = r#"Error creating: Internal error occurred: failed calling webhook "validate.kyverno.svc-fail": failed to call webhook: Post "https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s": no endpoints available for service "kyverno-svc""#;
        assert_eq!(
            webhook_service(message),
            Some(("kyverno".to_string(), "kyverno-svc".to_string()))
        );
        assert_eq!(webhook_service("Error creating: pods is forbidden"), None);
    }

    #[test]
    fn a_webhook_that_cannot_be_called_is_the_clusters_fault() {
        let (c, why) = refusal(r#"Error creating: Internal error occurred: failed calling webhook "mpod.elbv2.k8s.aws": failed to call webhook: Post "https://aws-load-balancer-webhook-service.kube-system.svc:443/mutate-v1-pod?timeout=10s": no endpoints available for service "aws-load-balancer-webhook-service""#)
            .unwrap_or((Category::Unknown, String::new()));
        assert_eq!(c, Category::Infrastructure);
        assert!(
            why.contains("mpod.elbv2.k8s.aws")
                && why.contains("Service aws-load-balancer-webhook-service has no ready endpoints"),
            "{why}"
        );
        // A webhook that answered and said no is a policy on the template.
        let (c, _) = refusal(r#"Error creating: admission webhook "validate.kyverno.svc" denied the request: policy require-run-as-nonroot"#)
            .unwrap_or((Category::Unknown, String::new()));
        assert_eq!(c, Category::ConfigurationError);
    }

    #[test]
    fn refusals_are_read_and_quotas_left_to_their_check() {
        let (c, why) = refusal(r#"Error creating: pods "api-7d9-" is forbidden: error looking up service account shop/api-runner: serviceaccount "api-runner" not found"#)
            .unwrap_or_else(|| unreachable!());
        assert_eq!(c, Category::ConfigurationError);
        assert!(why.contains("service account api-runner"), "{why}");
        assert!(
            refusal("Error creating: pods \"x\" is forbidden: exceeded quota: q, requested: cpu=1")
                .is_none()
        );
        assert!(refusal("Error creating: pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\"").is_some());
        assert!(refusal("Created pod: x").is_none());
    }
}
