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
    let Some((e, (category, why))) = found.into_iter().next() else {
        return Vec::new();
    };
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
        cause: Some(format!(
            "{summary}, so no pod of it runs; create the missing object or correct the template"
        )),
        objects: vec![e.object.to_lowercase()],
        since: e.first_seen.or(e.last_seen),
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

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
