//! The Kubernetes check: `GET /version`, then one `SelfSubjectAccessReview` per permission
//! sitrep needs (reads always, the writes of its actions unless they are off), naming each one
//! the account lacks.

use super::credentials::{self, Credential};
use super::{Finding, Options, Planned, request_timeout};
use crate::config::{Config, Kubernetes};
use crate::integrations::transport::{Endpoint, LiveTransport, Request, RequestBody, Transport};
use crate::world::{WorldError, clients};
use serde_json::{Value, json};
use std::time::Duration;

/// One permission: verb, API group, resource (with subresource), namespaced or cluster-wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permission {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    pub namespaced: bool,
}

const fn p(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    namespaced: bool,
) -> Permission {
    Permission {
        verb,
        group,
        resource,
        subresource,
        namespaced,
    }
}

/// What the specialists read.
pub const READS: &[Permission] = &[
    p("get", "", "pods", "", true),
    p("list", "", "pods", "", true),
    p("get", "", "pods", "log", true),
    p("list", "", "events", "", true),
    p("get", "apps", "deployments", "", true),
    p("list", "apps", "deployments", "", true),
    p("list", "apps", "replicasets", "", true),
    p("list", "", "nodes", "", false),
];

/// What Gather reads around the subject when it may (Services and what routes to them, the
/// other controllers and their revision history): denied, the investigation still runs and the
/// checks that need them say they could not look, so doctor names them without failing.
pub const FURTHER_READS: &[Permission] = &[
    p("list", "", "services", "", true),
    p("list", "", "endpoints", "", true),
    p("list", "networking.k8s.io", "ingresses", "", true),
    p("list", "networking.k8s.io", "ingressclasses", "", false),
    p("list", "networking.k8s.io", "networkpolicies", "", true),
    p("list", "apps", "statefulsets", "", true),
    p("list", "apps", "daemonsets", "", true),
    p("list", "apps", "controllerrevisions", "", true),
    p("list", "batch", "jobs", "", true),
    p("list", "batch", "cronjobs", "", true),
];

/// What the actions change: rollouts, scale and resources (patch deployments), deleting a pod,
/// cordon (patch nodes) and drain (evictions).
pub const WRITES: &[Permission] = &[
    p("patch", "apps", "deployments", "", true),
    p("delete", "", "pods", "", true),
    p("patch", "", "nodes", "", false),
    p("create", "", "pods", "eviction", true),
];

impl Permission {
    /// `list pods`, `get pods/log`, `patch deployments.apps`.
    pub fn describe(&self) -> String {
        let mut resource = self.resource.to_string();
        if !self.group.is_empty() {
            resource = format!("{resource}.{}", self.group);
        }
        if !self.subresource.is_empty() {
            resource = format!("{}/{}", self.resource, self.subresource);
        }
        format!("{} {resource}", self.verb)
    }

    /// The review's body, per the `authorization.k8s.io/v1` API reference.
    pub fn review(&self, namespace: &str) -> Value {
        let mut attrs = json!({
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
        });
        if !self.subresource.is_empty() {
            attrs["subresource"] = json!(self.subresource);
        }
        if self.namespaced {
            attrs["namespace"] = json!(namespace);
        }
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        })
    }
}

pub fn plan(config: &Config, options: &Options) -> Vec<Planned> {
    let Some(k) = config.integrations.kubernetes.clone() else {
        return vec![Planned::absent("kubernetes")];
    };
    let config = config.clone();
    let read_only = options.read_only || config.policy.read_only;
    let clusters = k.named_clusters();
    if !clusters.is_empty() {
        // One row per cluster, each checked as if it were the only one.
        return clusters
            .into_iter()
            .map(|c| {
                let one = Kubernetes {
                    url: c.server.clone(),
                    context: c.context.clone(),
                    namespace: c.namespace.clone().or_else(|| k.namespace.clone()),
                    auth: c
                        .token
                        .clone()
                        .map(|token_env| crate::config::Auth::Bearer { token_env }),
                    contexts: Vec::new(),
                    clusters: Vec::new(),
                    ..k.clone()
                };
                let config = config.clone();
                Planned::run(&format!("kubernetes.{}", c.name), async move {
                    let mut f = match check(&config, &one, read_only).await {
                        Ok(f) | Err(f) => f,
                    };
                    // A refused token is this cluster's own `token`, not an `auth` table: say so.
                    if let Some(reference) = &c.token
                        && (f.detail.starts_with("401") || f.detail.starts_with("403"))
                    {
                        f.fix = Some(format!(
                            "the API server refused cluster {}'s token ({reference}): check the token that reference holds, or the cluster's RBAC for it",
                            c.name
                        ));
                    }
                    f
                })
            })
            .collect();
    }
    vec![Planned::run("kubernetes", async move {
        match check(&config, &k, read_only).await {
            Ok(f) | Err(f) => f,
        }
    })]
}

async fn check(config: &Config, k: &Kubernetes, read_only: bool) -> Result<Finding, Finding> {
    let timeout = request_timeout(k.timeout_secs);
    let (transport, where_, mut namespace, reference) = match &k.url {
        Some(url) => {
            let credential =
                credentials::of(config, "integrations.kubernetes.auth", k.auth.as_ref()).await?;
            let (auth, reference) = match credential {
                Credential::None => (None, None),
                Credential::Resolved(a) => (Some(a), None),
                Credential::Reference { reference, note } => {
                    (None, Some(format!("{note}, {reference} not read")))
                }
            };
            let ep = Endpoint::new(url.trim_end_matches('/'))
                .timeout(timeout)
                .auth(auth);
            let t = LiveTransport::new()
                .map_err(|e| Finding::failed(e.to_string(), ""))?
                .with_endpoint("kubernetes", ep);
            (t, url.clone(), "default".to_string(), reference)
        }
        None => {
            let client = kube_client(k, timeout).await?;
            let ns = client.default_namespace().to_string();
            let t = LiveTransport::new()
                .map_err(|e| Finding::failed(e.to_string(), ""))?
                .with_kube(client, timeout);
            let where_ = k
                .context
                .as_deref()
                .map(|c| format!("context {c}"))
                .unwrap_or_else(|| "the kubeconfig's cluster".into());
            (t, where_, ns, None)
        }
    };
    if let Some(ns) = &k.namespace {
        namespace = ns.clone();
    }
    let req = Request::get("kubernetes", "/version");
    let version = transport
        .send(&req)
        .await
        .and_then(|r| r.json(&req))
        .map_err(|e| Finding::from_error(&e, &where_))?;
    let version = version
        .get("gitVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(reference) = reference {
        // Without its credential the account's permissions cannot be asked about.
        return Ok(Finding::ok(
            version,
            format!("permissions not checked, {reference}"),
        ));
    }
    let mut wanted: Vec<Permission> = READS.to_vec();
    wanted.extend_from_slice(FURTHER_READS);
    if !read_only {
        wanted.extend_from_slice(WRITES);
    }
    let reviews = wanted.iter().map(|perm| {
        let transport = &transport;
        let namespace = namespace.as_str();
        async move {
            let req = Request::new(
                "kubernetes",
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            )
            .body(RequestBody::Json(perm.review(namespace)));
            let answer = transport.send(&req).await.and_then(|r| r.json(&req));
            (*perm, answer)
        }
    });
    let answers = futures::future::join_all(reviews).await;
    let mut denied = Vec::new();
    let mut without = Vec::new();
    for (perm, answer) in answers {
        match answer {
            Err(e) => return Err(Finding::from_error(&e, &where_).with_version(version)),
            Ok(v) => {
                if v.pointer("/status/allowed") != Some(&Value::Bool(true)) {
                    if FURTHER_READS.contains(&perm) {
                        without.push(perm.describe());
                    } else {
                        denied.push(perm);
                    }
                }
            }
        }
    }
    if denied.is_empty() {
        let what = if read_only {
            "reads allowed"
        } else {
            "reads and actions allowed"
        };
        let partial = if without.is_empty() {
            String::new()
        } else {
            format!(
                "; not allowed, so the checks that need them cannot look: {}",
                without.join(", ")
            )
        };
        return Ok(Finding::ok(
            version,
            format!("{what} in namespace {namespace}{partial}"),
        ));
    }
    let names: Vec<String> = denied.iter().map(Permission::describe).collect();
    let scope = if denied.iter().any(|p| p.namespaced) {
        format!(" in namespace {namespace}")
    } else {
        String::new()
    };
    let reads_denied = denied.iter().any(|p| READS.contains(p));
    let fix = if reads_denied {
        "bind the account a Role/ClusterRole granting these verbs (e.g. the built-in `view` plus nodes)"
    } else {
        "grant these verbs for the actions, or run with --read-only"
    };
    Err(
        Finding::failed(format!("cannot {}{scope}", names.join(", cannot ")), fix)
            .with_version(version),
    )
}

/// The world's kube client; a kubeconfig that cannot be read is a failed finding naming it.
async fn kube_client(k: &Kubernetes, timeout: Duration) -> Result<kube::Client, Finding> {
    clients::kube_client(k, timeout).await.map_err(|e| {
        let detail = match e {
            WorldError::Kube(m) => m,
            other => other.to_string(),
        };
        Finding::failed(
            format!("kubeconfig: {detail}"),
            "check `kubeconfig`/`context` in [integrations.kubernetes], or set `url`",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_read_as_kubectl_says_them() {
        assert_eq!(READS[1].describe(), "list pods");
        assert_eq!(READS[2].describe(), "get pods/log");
        assert_eq!(READS[6].describe(), "list replicasets.apps");
        let review = READS[7].review("payments");
        assert!(
            review
                .pointer("/spec/resourceAttributes/namespace")
                .is_none()
        );
        let review = READS[2].review("payments");
        assert_eq!(
            review.pointer("/spec/resourceAttributes/subresource"),
            Some(&json!("log"))
        );
    }
}
