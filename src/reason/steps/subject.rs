//! Diagnosis step 1: what the alert or problem is about, resolved into objects through the API's
//! own links (selectors, ownerReferences, job labels), never by name prefixes.

use crate::model::{DeploymentFacts, PodFacts, SubjectObject};
use crate::reason::Observations;
use std::collections::BTreeMap;

/// Label (or annotation) keys naming one kind of object, in every convention in use:
/// kube-state-metrics and the kubernetes-mixin, Datadog's `kube_*` tags, OpenTelemetry's `k8s.*`.
const NAMESPACE_KEYS: &[&str] = &[
    "namespace",
    "kube_namespace",
    "k8s_namespace_name",
    "exported_namespace",
    "namespace_name",
];
const POD_KEYS: &[&str] = &[
    "pod",
    "kube_pod",
    "pod_name",
    "k8s_pod_name",
    "exported_pod",
];
const CONTAINER_KEYS: &[&str] = &[
    "container",
    "kube_container",
    "kube_container_name",
    "container_name",
    "k8s_container_name",
];
const NODE_KEYS: &[&str] = &["node", "kube_node", "k8s_node_name", "nodename", "host"];
/// Keys naming a workload directly, with the kind they name.
const WORKLOAD_KEYS: &[(&str, &str)] = &[
    ("deployment", "Deployment"),
    ("kube_deployment", "Deployment"),
    ("k8s_deployment_name", "Deployment"),
    ("statefulset", "StatefulSet"),
    ("kube_stateful_set", "StatefulSet"),
    ("kube_statefulset", "StatefulSet"),
    ("k8s_statefulset_name", "StatefulSet"),
    ("daemonset", "DaemonSet"),
    ("kube_daemon_set", "DaemonSet"),
    ("kube_daemonset", "DaemonSet"),
    ("k8s_daemonset_name", "DaemonSet"),
    ("job_name", "Job"),
    ("kube_job", "Job"),
    ("k8s_job_name", "Job"),
    ("cronjob", "CronJob"),
    ("kube_cronjob", "CronJob"),
    ("kube_cron_job", "CronJob"),
    ("k8s_cronjob_name", "CronJob"),
    ("replicaset", "ReplicaSet"),
    ("kube_replica_set", "ReplicaSet"),
    ("k8s_replicaset_name", "ReplicaSet"),
];
const OTHER_KEYS: &[(&str, &str)] = &[
    ("horizontalpodautoscaler", "HorizontalPodAutoscaler"),
    ("hpa", "HorizontalPodAutoscaler"),
    ("persistentvolumeclaim", "PersistentVolumeClaim"),
    ("persistentvolume", "PersistentVolume"),
    ("resourcequota", "ResourceQuota"),
    ("kube_persistentvolumeclaim", "PersistentVolumeClaim"),
    ("datname", "Database"),
    ("db_instance_identifier", "Database"),
];
/// Keys that name an application rather than an object: matched against workloads and pod labels.
const APP_KEYS: &[&str] = &[
    "service",
    "kube_service",
    "app",
    "app_kubernetes_io_name",
    "k8s_app",
    "application",
];
/// Keys that name a gRPC service, `package.Service`.
const GRPC_KEYS: &[&str] = &["grpc_service", "rpc_service", "grpc_server_service"];

/// The workload names a gRPC service may go by: its package (`rate` of `rate.Rate`), its service
/// in lower case and in kebab case, with and without a `Service` suffix (`CheckoutService`:
/// `checkoutservice`, `checkout-service`, `checkout`).
fn grpc_names(service: &str) -> Vec<String> {
    let mut parts = service.split('.');
    let package = parts.next().unwrap_or_default();
    let name = service.rsplit('.').next().unwrap_or_default();
    let kebab = |s: &str| {
        crate::reason::conventions::camel_words(s)
            .to_ascii_lowercase()
            .replace(' ', "-")
    };
    let bare = name.strip_suffix("Service").filter(|b| !b.is_empty());
    let mut out = vec![
        package.to_ascii_lowercase(),
        name.to_ascii_lowercase(),
        kebab(name),
    ];
    out.extend(bare.map(kebab));
    out.retain(|n| !n.is_empty());
    out.dedup();
    out
}

/// Pod labels an application name is carried in.
const APP_POD_LABELS: &[&str] = &[
    "app",
    "app.kubernetes.io/name",
    "k8s-app",
    "name",
    "service",
];

/// The label keys that may name an alert's workload: each kind's own keys first, then generic
/// workload and application keys. The agent scopes its reads by the same conventions the verdict
/// resolves the subject with.
pub(crate) fn workload_keys() -> impl Iterator<Item = &'static str> {
    WORKLOAD_KEYS
        .iter()
        .filter(|(_, kind)| *kind != "ReplicaSet")
        .map(|(k, _)| *k)
        .chain(["workload_name", "workload"])
        .chain(APP_KEYS.iter().copied())
}

/// What the investigation is about.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subject {
    pub objects: Vec<SubjectObject>,
    pub namespace: Option<String>,
    /// Workloads (kind, name) the subject is, or the owners of the pods it names.
    pub workloads: Vec<(String, String)>,
    /// Pods that belong to the subject, by name.
    pub pods: Vec<String>,
    /// Pods named by the alert itself.
    pub named_pods: Vec<String>,
    pub nodes: Vec<String>,
    pub containers: Vec<String>,
    /// The namespace named as a whole application, every workload of it the subject.
    pub application: Option<String>,
    /// Ingresses the alert or problem is about (their backends are among `objects`).
    pub ingresses: Vec<String>,
    /// False when nothing could be resolved: then every object is in scope, as an unscoped look.
    pub resolved: bool,
}

impl Subject {
    pub(crate) fn has_pod(&self, pod: &PodFacts) -> bool {
        self.pods.iter().any(|p| p == &pod.name)
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| crate::reason::namespace_or_default(&pod.namespace) == ns)
    }

    /// The first workload of a kind.
    pub(crate) fn workload(&self, kind: &str) -> Option<&str> {
        self.workloads
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, n)| n.as_str())
    }

    /// Whether an object reference (`pod/x`, `deployment/y`, `node/z`) is the subject or part of it.
    pub(crate) fn covers(&self, reference: &str) -> bool {
        let Some((kind, name)) = reference.split_once('/') else {
            return false;
        };
        let kind = kind.to_ascii_lowercase();
        match kind.as_str() {
            "pod" => self.pods.iter().any(|p| p == name),
            "node" => self.nodes.iter().any(|n| n == name),
            _ => {
                self.workloads
                    .iter()
                    .any(|(k, n)| k.eq_ignore_ascii_case(&kind) && n == name)
                    || self
                        .objects
                        .iter()
                        .any(|o| o.kind.eq_ignore_ascii_case(&kind) && o.name == name)
            }
        }
    }
}

fn get<'a>(obs: &'a Observations, keys: &[&'static str]) -> Option<(&'static str, &'a str)> {
    let alert = obs.alert.as_ref()?;
    for k in keys {
        let found = alert
            .labels
            .get(*k)
            .or_else(|| alert.annotations.get(*k))
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty());
        if let Some(v) = found {
            return Some((*k, v));
        }
    }
    None
}

/// Whether `labels` satisfy a selector's matchLabels and matchExpressions.
pub(crate) fn selector_matches(
    match_labels: &BTreeMap<String, String>,
    expressions: &[String],
    labels: &BTreeMap<String, String>,
) -> bool {
    if match_labels.is_empty() && expressions.is_empty() {
        return false;
    }
    match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && expressions.iter().all(|e| expression_matches(e, labels))
}

fn expression_matches(expr: &str, labels: &BTreeMap<String, String>) -> bool {
    let mut parts = expr.splitn(3, ' ');
    let key = parts.next().unwrap_or_default();
    let op = parts.next().unwrap_or_default();
    let values: Vec<&str> = parts
        .next()
        .unwrap_or_default()
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    let have = labels.get(key).map(String::as_str);
    match op {
        "In" => have.is_some_and(|v| values.contains(&v)),
        "NotIn" => have.is_none_or(|v| !values.contains(&v)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        _ => false,
    }
}

/// Same namespace; one left empty (facts built without it) matches any.
pub(crate) fn same_ns(a: &str, b: &str) -> bool {
    a.is_empty() || b.is_empty() || a == b
}

/// The workload (kind, name) that controls a pod, through ownerReferences: a ReplicaSet's
/// Deployment (from the ReplicaSet's own owner, else the `pod-template-hash` the controller
/// appends to the ReplicaSet's name), a Job's CronJob.
pub(crate) fn workload_of(obs: &Observations, pod: &PodFacts) -> Option<(String, String)> {
    workload_through(obs, pod, |rs| {
        obs.replica_sets
            .iter()
            .find(|r| r.name == rs && same_ns(&r.namespace, &pod.namespace))
    })
}

/// The ReplicaSets and Deployments gathered, by name, so the owners of many pods are found in
/// one pass over each list instead of one per pod.
pub(crate) struct Owners<'a> {
    replica_sets: std::collections::HashMap<&'a str, Vec<&'a DeploymentFacts>>,
    deployments: std::collections::HashMap<&'a str, Vec<&'a DeploymentFacts>>,
}

impl<'a> Owners<'a> {
    pub(crate) fn new(obs: &'a Observations) -> Owners<'a> {
        let by_name = |list: &'a [DeploymentFacts]| {
            let mut map: std::collections::HashMap<&str, Vec<&DeploymentFacts>> =
                std::collections::HashMap::with_capacity(list.len());
            for r in list {
                map.entry(r.name.as_str()).or_default().push(r);
            }
            map
        };
        Owners {
            replica_sets: by_name(&obs.replica_sets),
            deployments: by_name(&obs.deployments),
        }
    }

    /// The first ReplicaSet listed by this name in the pod's namespace.
    fn replica_set(&self, name: &str, pod: &PodFacts) -> Option<&'a DeploymentFacts> {
        self.replica_sets
            .get(name)?
            .iter()
            .copied()
            .find(|r| same_ns(&r.namespace, &pod.namespace))
    }

    /// The first Deployment listed by this name in the pod's namespace.
    fn deployment(&self, name: &str, pod: &PodFacts) -> Option<&'a DeploymentFacts> {
        self.deployments
            .get(name)?
            .iter()
            .copied()
            .find(|d| same_ns(&d.namespace, &pod.namespace))
    }

    /// [`workload_of`], with the ReplicaSet looked up by name.
    pub(crate) fn workload_of(
        &self,
        obs: &Observations,
        pod: &PodFacts,
    ) -> Option<(String, String)> {
        workload_through(obs, pod, |rs| self.replica_set(rs, pod))
    }
}

/// [`workload_of`] with the pod's ReplicaSet found by `replica_set` (by name, in its namespace).
fn workload_through<'a>(
    obs: &Observations,
    pod: &PodFacts,
    replica_set: impl Fn(&str) -> Option<&'a DeploymentFacts>,
) -> Option<(String, String)> {
    let (kind, name) = pod.owner.as_deref()?.split_once('/')?;
    match kind {
        "ReplicaSet" => {
            if let Some(rs) = replica_set(name)
                && let Some((k, n)) = rs.owner.as_deref().and_then(|o| o.split_once('/'))
            {
                return Some((k.to_string(), n.to_string()));
            }
            // The controller names a ReplicaSet `<deployment>-<pod-template-hash>`.
            match pod
                .labels
                .get("pod-template-hash")
                .and_then(|hash| name.strip_suffix(&format!("-{hash}")))
            {
                Some(dep) => Some(("Deployment".to_string(), dep.to_string())),
                // No hash label: a listed Deployment whose controller naming fits; else the
                // ReplicaSet is the owner we know.
                None => match obs.deployments.iter().find(|d| {
                    same_ns(&d.namespace, &pod.namespace)
                        && name
                            .strip_prefix(d.name.as_str())
                            .and_then(|r| r.strip_prefix('-'))
                            .is_some_and(|h| !h.is_empty() && !h.contains('-'))
                }) {
                    Some(d) => Some(("Deployment".to_string(), d.name.clone())),
                    None => Some(("ReplicaSet".to_string(), name.to_string())),
                },
            }
        }
        "Job" => {
            let cron = obs
                .workloads
                .iter()
                .find(|w| {
                    w.kind == "Job" && w.name == name && same_ns(&w.namespace, &pod.namespace)
                })
                .and_then(|w| w.owner.as_deref())
                .and_then(|o| o.split_once('/'))
                .filter(|(k, _)| *k == "CronJob");
            match cron {
                Some((k, n)) => Some((k.to_string(), n.to_string())),
                None => Some(("Job".to_string(), name.to_string())),
            }
        }
        _ => Some((kind.to_string(), name.to_string())),
    }
}

/// Whether a pod belongs to a workload, by the API's links: ownerReferences (through the
/// ReplicaSet or Job), the workload's selector, a Job's `job-name`/`controller-uid` labels.
/// `owners` indexes `obs`'s ReplicaSets and Deployments ([`Owners::new`]).
pub(crate) fn pod_belongs(
    owners: &Owners,
    obs: &Observations,
    pod: &PodFacts,
    kind: &str,
    name: &str,
) -> bool {
    let owner = pod.owner.as_deref().and_then(|o| o.split_once('/'));
    if owner.is_some_and(|(k, n)| k == kind && n == name) {
        return true;
    }
    if let Some((k, n)) = owners.workload_of(obs, pod)
        && k == kind
        && n == name
    {
        return true;
    }
    match kind {
        "Deployment" => {
            let by_selector = owners.deployment(name, pod).is_some_and(|d| {
                owner.is_none_or(|(k, _)| k == "ReplicaSet")
                    && selector_matches(&d.selector, &d.selector_expressions, &pod.labels)
            });
            // Neither the ReplicaSet, nor a template hash, nor a selector was read: the
            // controller's own naming `<deployment>-<hash>` (a hash has no dash), so `checkout`
            // never takes `checkout-worker-5d4c3`'s pods.
            let by_controller_name = !pod.labels.contains_key("pod-template-hash")
                && crate::reason::pod_rs(pod)
                    .map(|rs| {
                        let facts = owners.replica_set(&rs, pod);
                        (rs, facts)
                    })
                    .is_some_and(|(rs, facts)| {
                        facts.is_none_or(|f| f.owner.is_none())
                            && rs
                                .strip_prefix(name)
                                .and_then(|r| r.strip_prefix('-'))
                                .is_some_and(|h| !h.is_empty() && !h.contains('-'))
                    });
            by_selector || by_controller_name
        }
        "ReplicaSet" => owner.is_some_and(|(k, n)| k == "ReplicaSet" && n == name),
        "Job" => {
            let by_label = ["job-name", "batch.kubernetes.io/job-name"]
                .iter()
                .any(|k| pod.labels.get(*k).is_some_and(|v| v == name));
            let uid = obs
                .workloads
                .iter()
                .find(|w| {
                    w.kind == "Job" && w.name == name && same_ns(&w.namespace, &pod.namespace)
                })
                .map(|w| w.uid.as_str())
                .filter(|u| !u.is_empty());
            by_label
                || uid.is_some_and(|u| {
                    ["controller-uid", "batch.kubernetes.io/controller-uid"]
                        .iter()
                        .any(|k| pod.labels.get(*k).is_some_and(|v| v == u))
                })
        }
        "CronJob" => {
            let job = ["job-name", "batch.kubernetes.io/job-name"]
                .iter()
                .find_map(|k| pod.labels.get(*k))
                .or_else(|| {
                    owner
                        .filter(|(k, _)| *k == "Job")
                        .map(|(_, n)| n)
                        .and_then(|n| obs.workloads.iter().find(|w| w.name == n).map(|w| &w.name))
                });
            let Some(job) = job else { return false };
            match obs.workloads.iter().find(|w| {
                w.kind == "Job" && &w.name == job && same_ns(&w.namespace, &pod.namespace)
            }) {
                Some(w) => w.owner.as_deref() == Some(&format!("CronJob/{name}")),
                // The Jobs could not be read: the CronJob controller names its Jobs
                // `<cronjob>-<scheduled minute>`.
                None => job
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())),
            }
        }
        _ => obs
            .workloads
            .iter()
            .find(|w| w.kind == kind && w.name == name && same_ns(&w.namespace, &pod.namespace))
            .is_some_and(|w| selector_matches(&w.selector, &w.selector_expressions, &pod.labels)),
    }
}

/// Whether `name` appears in `text` as a whole name (not as part of a longer one), ignoring case.
pub(crate) fn mentions(text: &str, name: &str) -> bool {
    whole_name_in(&text.to_lowercase(), &name.to_lowercase())
}

/// Whether a log line names an object: Kubernetes names are lowercase, so they are matched as
/// written, without copying the line.
pub(crate) fn line_names(line: &str, name: &str) -> bool {
    whole_name_in(line, name)
}

fn whole_name_in(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    let mut start = 0;
    while let Some(i) = text[start..].find(name) {
        let at = start + i;
        let end = at + name.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        // A trailing dot ends a sentence, not a name; a Service's cluster DNS name
        // (`name.namespace.svc.cluster.local`) names the Service.
        let after_ok = match after {
            None => true,
            Some('.') => {
                let rest = &text[end + 1..];
                let host: &str = rest
                    .find(|c: char| !is_name_char(c))
                    .map_or(rest, |i| &rest[..i]);
                host.is_empty() || host.split('.').nth(1) == Some("svc")
            }
            Some(c) => !is_name_char(c),
        };
        if before.is_none_or(|c| !is_name_char(c)) && after_ok {
            return true;
        }
        start = end;
        if start >= text.len() {
            break;
        }
    }
    false
}

/// A namespace the text calls one (`in namespace shop`, `the shop namespace`), when the cluster
/// has it: a word next to "namespace" that names none is not taken for one.
fn namespace_said(obs: &Observations, text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':' | '"' | '\'' | '`' | '(' | ')')
        })
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let exists = |n: &str| {
        obs.pods.iter().any(|p| p.namespace == n)
            || obs.deployments.iter().any(|d| d.namespace == n)
            || obs.workloads.iter().any(|w| w.namespace == n)
    };
    words.iter().enumerate().find_map(|(i, w)| {
        if !matches!(w.as_str(), "namespace" | "ns") {
            return None;
        }
        [
            words.get(i + 1),
            i.checked_sub(1).and_then(|j| words.get(j)),
        ]
        .into_iter()
        .flatten()
        .find(|n| exists(n))
        .cloned()
    })
}

/// The namespace of a listed pod or controller whose name's words (split at `-`) the text says
/// as a run of two or more consecutive words, with the run's length; the longest run wins, and a
/// tie between namespaces names neither.
fn namespace_phrase(obs: &Observations, text: &str) -> Option<(String, usize)> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut spaces: Vec<&str> = obs
        .pods
        .iter()
        .map(|p| p.namespace.as_str())
        .chain(obs.deployments.iter().map(|d| d.namespace.as_str()))
        .filter(|n| !n.is_empty())
        .collect();
    spaces.sort_unstable();
    spaces.dedup();
    let mut best: Option<(&str, usize)> = None;
    let mut tied = false;
    for space in spaces {
        let parts: Vec<&str> = space.split('-').filter(|p| !p.is_empty()).collect();
        let mut run = 0;
        for start in 0..parts.len() {
            for (i, _) in words.iter().enumerate() {
                let n = parts[start..]
                    .iter()
                    .zip(&words[i..])
                    .take_while(|(p, w)| **p == w.as_str())
                    .count();
                run = run.max(n);
            }
        }
        if run < 2 {
            continue;
        }
        match best {
            Some((_, b)) if b > run => {}
            Some((_, b)) if b == run => tied = true,
            _ => {
                best = Some((space, run));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(s, n)| (s.to_string(), n))
}

/// Words of workload names that say what kind of thing it is, not which one.
const GENERIC_WORDS: &[&str] = &[
    "service",
    "svc",
    "api",
    "app",
    "server",
    "srv",
    "web",
    "worker",
    "deployment",
    "deploy",
    "main",
    "backend",
    "daemon",
    "job",
    "cron",
    "controller",
    "operator",
    "pod",
    "v1",
    "v2",
];

/// The workload the text names by its distinctive words when it does not name one whole: "stock
/// updates failing" for `stock-service`, "the docs portal" for `docs-portal`, "the nightly ledger
/// export" for the CronJob `ledger-export`. A text word matches a name word as written or either
/// with a plural `s` dropped. Each distinctive word matched counts two, a generic one one, and
/// none is taken on generic words alone; the one workload with the highest count is taken, with
/// the words; a tie names none, so a word two workloads share decides nothing.
fn by_words(
    obs: &Observations,
    text: &str,
    namespace: Option<&str>,
    in_ns: &dyn Fn(&str) -> bool,
) -> Option<(String, String, String)> {
    // The known namespace's own words ("pods in namespace media") name the namespace, not the
    // one workload of it that shares a word with it.
    let ns_words: Vec<&str> = namespace
        .map(|n| n.split(['-', '_', '.']).collect())
        .unwrap_or_default();
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_ascii_lowercase)
        .collect();
    // Singular or plural on either side: "order" says `orders-operator`, "reservations" says
    // `reservation-api`.
    let stem = |w: &str| w.strip_suffix('s').unwrap_or(w).to_string();
    let said = |part: &str| words.iter().any(|w| w == part || stem(w) == stem(part));
    let candidates = obs
        .deployments
        .iter()
        .filter(|d| in_ns(&d.namespace))
        .map(|d| ("Deployment", d.name.as_str()))
        .chain(
            obs.workloads
                .iter()
                .filter(|w| in_ns(&w.namespace) && w.kind != "Job")
                .map(|w| (w.kind.as_str(), w.name.as_str())),
        );
    // (matched words, kind, name, the words).
    type Match<'o> = (usize, &'o str, &'o str, Vec<&'o str>);
    let mut best: Option<Match> = None;
    let mut tied = false;
    for (kind, name) in candidates {
        let matched: Vec<&str> = name
            .split(['-', '_', '.'])
            .filter(|p| p.len() >= 3 && !p.bytes().all(|b| b.is_ascii_digit()))
            .filter(|p| said(p))
            .collect();
        // A generic word (`operator`, `api`) tells two otherwise alike apart, but names nothing
        // on its own: it counts half a distinctive word.
        let distinctive = matched
            .iter()
            .filter(|p| !GENERIC_WORDS.contains(p) && !ns_words.contains(p))
            .count();
        if distinctive == 0 {
            continue;
        }
        let score = 2 * distinctive + (matched.len() - distinctive);
        match &best {
            Some((b, _, n, _)) if *b > score || *n == name => {}
            Some((b, ..)) if *b == score => tied = true,
            _ => {
                best = Some((score, kind, name, matched));
                tied = false;
            }
        }
    }
    let (_, kind, name, matched) = best.filter(|_| !tied)?;
    Some((kind.to_string(), name.to_string(), matched.join(" ")))
}

/// The state of a pod that an alert's name or words name (`evicted`, `OOMKilled`, crash-looping,
/// image pulls, `Pending`), when this pod is in it.
fn state_named(text: &str, pod: &PodFacts) -> Option<&'static str> {
    let words = text.to_ascii_lowercase().replace([' ', '-', '_'], "");
    let container = |reasons: &[&str]| {
        pod.containers.iter().any(|c| {
            [&c.reason, &c.last_reason]
                .into_iter()
                .flatten()
                .any(|r| reasons.contains(&r.as_str()))
        })
    };
    if words.contains("evict") && pod.status_reason.as_deref() == Some("Evicted") {
        Some("Evicted")
    } else if words.contains("oomkill") && container(&["OOMKilled"]) {
        Some("OOMKilled")
    } else if words.contains("crashloop") && container(&["CrashLoopBackOff"]) {
        Some("CrashLoopBackOff")
    } else if (words.contains("imagepull") || words.contains("errimage"))
        && container(&["ImagePullBackOff", "ErrImagePull"])
    {
        Some("ImagePullBackOff")
    } else if words.contains("pending") && pod.phase == "Pending" {
        Some("Pending")
    } else {
        None
    }
}

/// Resolve the subject of the alert or problem.
pub(crate) fn resolve(obs: &Observations) -> Subject {
    let mut s = Subject::default();
    let add = |s: &mut Subject, kind: &str, name: &str, ns: &str, how: String| {
        if !s.objects.iter().any(|o| o.kind == kind && o.name == name) {
            s.objects.push(SubjectObject {
                kind: kind.to_string(),
                name: name.to_string(),
                namespace: ns.to_string(),
                how,
            });
        }
    };
    if let Some((key, ns)) = get(obs, NAMESPACE_KEYS) {
        s.namespace = Some(ns.to_string());
        add(&mut s, "Namespace", ns, "", format!("label {key}={ns}"));
    } else if let Some(ns) = obs.problem.as_deref().and_then(|p| namespace_said(obs, p)) {
        add(
            &mut s,
            "Namespace",
            &ns,
            "",
            format!("\"namespace {ns}\" in the problem"),
        );
        s.namespace = Some(ns);
    }
    let ns = s.namespace.clone().unwrap_or_default();
    let scope_ns = s.namespace.clone();
    let in_ns = |n: &str| scope_ns.as_deref().is_none_or(|x| same_ns(x, n));
    let pods: Vec<&PodFacts> = obs.pods.iter().filter(|p| in_ns(&p.namespace)).collect();

    // Workloads named by a label.
    let alert = obs.alert.as_ref();
    let value = |k: &str| {
        alert.and_then(|a| {
            a.labels
                .get(k)
                .or_else(|| a.annotations.get(k))
                .filter(|v| !v.trim().is_empty())
        })
    };
    for (key, kind) in WORKLOAD_KEYS {
        if let Some(v) = value(key) {
            s.workloads.push((kind.to_string(), v.clone()));
            add(&mut s, kind, v, &ns, format!("label {key}={v}"));
        }
    }
    if let (Some(kind), Some(name)) = (value("workload_type"), value("workload_name")) {
        let kind = canonical_kind(kind);
        if kind == "Pod" {
            // A bare pod named as the workload: the pod itself is the subject.
            if !s.named_pods.contains(name) {
                s.named_pods.push(name.clone());
                add(
                    &mut s,
                    "Pod",
                    name,
                    &ns,
                    format!("labels workload_type=pod, workload_name={name}"),
                );
            }
        } else if !s.workloads.iter().any(|(k, n)| k == &kind && n == name) {
            s.workloads.push((kind.clone(), name.clone()));
            add(
                &mut s,
                &kind,
                name,
                &ns,
                format!("labels workload_type, workload_name={name}"),
            );
        }
    }
    // `job` is also Prometheus's scrape job (`kube-state-metrics`): a Job only when one by that
    // name exists, or pods carry it as their `job-name`.
    if let Some(v) = value("job")
        && !s.workloads.iter().any(|(k, _)| k == "Job")
        && (obs
            .workloads
            .iter()
            .any(|w| w.kind == "Job" && &w.name == v)
            || pods
                .iter()
                .any(|p| p.labels.get("job-name").is_some_and(|j| j == v)))
    {
        s.workloads.push(("Job".to_string(), v.clone()));
        add(&mut s, "Job", v, &ns, format!("label job={v} names a Job"));
    }
    for (key, kind) in OTHER_KEYS {
        if let Some(v) = value(key) {
            add(&mut s, kind, v, &ns, format!("label {key}={v}"));
            // A claim is what its pods write to: the pods mounting it are the subject too, by
            // their volumes or, for a StatefulSet's, its claim naming `<template>-<pod>`.
            if *kind == "PersistentVolumeClaim" {
                let mounts = |p: &PodFacts| {
                    p.claims.iter().any(|c| &c.name == v)
                        || (p
                            .owner
                            .as_deref()
                            .is_some_and(|o| o.starts_with("StatefulSet/"))
                            && v.ends_with(&format!("-{}", p.name)))
                };
                for p in pods.iter().filter(|p| mounts(p)) {
                    if !s.named_pods.contains(&p.name) {
                        s.named_pods.push(p.name.clone());
                        add(&mut s, "Pod", &p.name, &ns, format!("mounts claim {v}"));
                    }
                }
            }
        }
    }
    if let Some((key, c)) = get(obs, CONTAINER_KEYS) {
        s.containers.push(c.to_string());
        add(&mut s, "Container", c, &ns, format!("label {key}={c}"));
    }
    // Pods named by a label.
    if let Some((key, p)) = get(obs, POD_KEYS) {
        s.named_pods.push(p.to_string());
        add(&mut s, "Pod", p, &ns, format!("label {key}={p}"));
    }
    // Nodes: by label, or an `instance` that is a node's name (with its port dropped).
    if let Some((key, n)) = get(obs, NODE_KEYS) {
        s.nodes.push(n.to_string());
        add(&mut s, "Node", n, "", format!("label {key}={n}"));
    }
    if let Some(inst) = value("instance") {
        let host = inst.rsplit_once(':').map(|(h, _)| h).unwrap_or(inst);
        if let Some(node) = obs.nodes.iter().find(|n| n.name == host || n.name == *inst) {
            s.nodes.push(node.name.clone());
            add(
                &mut s,
                "Node",
                &node.name,
                "",
                format!("label instance={inst} is a node"),
            );
        }
    }
    // A probe's target (`instance="http://frontend.shop.svc.cluster.local/"`): the Service its
    // host names, and what runs behind it.
    if s.workloads.is_empty()
        && s.named_pods.is_empty()
        && let Some((svc, how)) =
            value("instance").and_then(|i| probed_service(obs, i, &s.namespace))
        && let Some((kind, name)) = behind_service(obs, &svc, &s.namespace)
    {
        add(&mut s, &kind, &name, &ns, how);
        s.workloads.push((kind, name));
    }
    // An application name: a workload of that name, else the pods labelled with it.
    if s.workloads.is_empty() && s.named_pods.is_empty() {
        for key in APP_KEYS {
            let Some(app) = value(key) else { continue };
            if let Some((kind, name)) = workload_named(obs, app, &s.namespace) {
                s.workloads.push((kind.clone(), name.clone()));
                add(
                    &mut s,
                    &kind,
                    &name,
                    &ns,
                    format!("label {key}={app} names the {kind}"),
                );
                break;
            }
            let labelled: Vec<&PodFacts> = pods
                .iter()
                .copied()
                .filter(|p| APP_POD_LABELS.iter().any(|l| p.labels.get(*l) == Some(app)))
                .collect();
            if !labelled.is_empty() {
                for p in labelled {
                    if let Some(w) = workload_of(obs, p)
                        && !s.workloads.contains(&w)
                    {
                        add(
                            &mut s,
                            &w.0,
                            &w.1,
                            &ns,
                            format!("its pods carry the label {key}={app}"),
                        );
                        s.workloads.push(w);
                    }
                    if !s.pods.contains(&p.name) {
                        s.pods.push(p.name.clone());
                    }
                }
                break;
            }
        }
    }
    // A gRPC service (`rate.Rate`, `oteldemo.CheckoutService`): the workload its package or its
    // service's name names.
    if s.workloads.is_empty() && s.named_pods.is_empty() {
        for key in GRPC_KEYS {
            let Some(service) = value(key) else { continue };
            if let Some((kind, name)) = grpc_names(service)
                .iter()
                .find_map(|n| workload_named(obs, n, &s.namespace))
            {
                add(
                    &mut s,
                    &kind,
                    &name,
                    &ns,
                    format!("label {key}={service} names the {kind}"),
                );
                s.workloads.push((kind, name));
                break;
            }
        }
    }
    // Names in the alert's text or the problem's words, longest first so `checkout-worker` is not
    // taken for `checkout`.
    let mut text = String::new();
    if let Some(a) = alert {
        for (k, v) in &a.annotations {
            if ["summary", "description", "message", "title"].contains(&k.as_str()) {
                text.push_str(v);
                text.push('\n');
            }
        }
    }
    if let Some(p) = &obs.problem {
        text.push_str(p);
    }
    if s.workloads.is_empty() && s.named_pods.is_empty() {
        let mut named: Vec<(String, String)> = obs
            .deployments
            .iter()
            .filter(|d| in_ns(&d.namespace))
            .map(|d| ("Deployment".to_string(), d.name.clone()))
            .chain(
                obs.workloads
                    .iter()
                    .filter(|w| in_ns(&w.namespace))
                    .map(|w| (w.kind.clone(), w.name.clone())),
            )
            .filter(|(_, n)| mentions(&text, n))
            .collect();
        named.sort_by_key(|(_, n)| std::cmp::Reverse(n.len()));
        // An application named by its namespace's words ("the hotel reservation app" for
        // `test-hotel-reservation`): a phrase longer than any workload name the words also
        // match makes the whole namespace the subject, so one of its words is not taken for
        // the one workload that shares it.
        let phrase = if s.namespace.is_none() {
            namespace_phrase(obs, &text)
        } else {
            None
        };
        let longest_workload = named
            .iter()
            .map(|(_, n)| n.split(['-', '_', '.']).count())
            .max()
            .unwrap_or(0);
        if let Some((space, words)) = phrase.filter(|(_, w)| *w > longest_workload) {
            add(
                &mut s,
                "Namespace",
                &space,
                "",
                format!("{words} words of its name, in a row, in the text"),
            );
            let every: Vec<(String, String)> = obs
                .deployments
                .iter()
                .filter(|d| d.namespace == space)
                .map(|d| ("Deployment".to_string(), d.name.clone()))
                .chain(
                    obs.workloads
                        .iter()
                        .filter(|w| w.namespace == space && w.kind != "Job")
                        .map(|w| (w.kind.clone(), w.name.clone())),
                )
                .collect();
            s.namespace = Some(space.clone());
            s.application = Some(space);
            for w in every {
                if !s.workloads.contains(&w) {
                    s.workloads.push(w);
                }
            }
        } else if let Some((kind, name)) = named.first().cloned() {
            let how = if obs.problem.is_some() {
                "named in the problem"
            } else {
                "named in the alert's text"
            };
            add(&mut s, &kind, &name, &ns, how.to_string());
            s.workloads.push((kind, name));
        } else if let Some((kind, name, words)) = (APP_KEYS.iter().all(|k| value(k).is_none())
            && !super::ingress_subject::host_named(obs, &text))
        .then(|| by_words(obs, &text, s.namespace.as_deref(), &in_ns))
        .flatten()
        {
            // An application label names what the alert is about: words that merely share a
            // part of it are not taken for it.
            add(
                &mut s,
                &kind,
                &name,
                &ns,
                format!("the words \"{words}\" of its name in the text"),
            );
            s.workloads.push((kind, name));
        } else if let Some(n) = obs.nodes.iter().find(|n| mentions(&text, &n.name)) {
            // A node the words name, when they name no workload: the node is the subject.
            if !s.nodes.contains(&n.name) {
                s.nodes.push(n.name.clone());
                add(&mut s, "Node", &n.name, "", "named in the text".to_string());
            }
        } else if let Some(p) = pods
            .iter()
            .filter(|p| mentions(&text, &p.name))
            .max_by_key(|p| p.name.len())
        {
            s.named_pods.push(p.name.clone());
            add(
                &mut s,
                "Pod",
                &p.name,
                &ns,
                "named in the alert's text".to_string(),
            );
        } else if s.namespace.is_some() {
            // An alert about a state of pods ("pods are being evicted", KubePodCrashLooping) in a
            // namespace, naming none: the pods in that state are what it is about.
            let said = format!(
                "{} {text}",
                value("alertname").map(String::as_str).unwrap_or_default()
            );
            for (p, state) in pods
                .iter()
                .filter_map(|p| Some((p, state_named(&said, p)?)))
            {
                s.named_pods.push(p.name.clone());
                add(
                    &mut s,
                    "Pod",
                    &p.name,
                    &ns,
                    format!("{state}, the state the alert names"),
                );
            }
        }
    }
    // An Ingress named (or the one a website problem is about) and its backends, before the
    // workloads' pods are gathered below.
    super::ingress_subject::resolve(obs, &mut s, &text, value("ingress").map(String::as_str));
    // A named pod's owner joins the subject, found through its ownerReferences.
    for name in s.named_pods.clone() {
        if let Some(p) = pods.iter().find(|p| p.name == name) {
            if !s.pods.contains(&p.name) {
                s.pods.push(p.name.clone());
            }
            if let Some(w) = workload_of(obs, p)
                && !s.workloads.contains(&w)
            {
                let how = format!("owner of pod {} (ownerReferences)", p.name);
                add(&mut s, &w.0, &w.1, &ns, how);
                s.workloads.push(w);
            }
        } else {
            // Named but no longer listed (replaced since the alert fired): keep it, it is still
            // what the alert is about, and find its owner among the controllers that name their
            // pods `<owner>-<suffix>` with the owner's exact, hashed name.
            if let Some(w) = owner_of_unlisted(obs, &name, &scope_ns)
                && !s.workloads.contains(&w)
            {
                let how = format!("owner of the replaced pod {name} (the controller's pod naming)");
                add(&mut s, &w.0, &w.1, &ns, how);
                s.workloads.push(w);
            }
            if !s.pods.contains(&name) {
                s.pods.push(name);
            }
        }
    }
    // The workloads' pods, by their links.
    let owners = Owners::new(obs);
    let mut taken: std::collections::HashSet<String> = s.pods.iter().cloned().collect();
    for (kind, name) in s.workloads.clone() {
        let how = match kind.as_str() {
            "Job" => "job-name / controller-uid labels, ownerReferences",
            "CronJob" => "ownerReferences through its Jobs",
            _ => "selector and ownerReferences",
        };
        for p in &pods {
            let in_scope = s
                .namespace
                .as_deref()
                .is_none_or(|n| same_ns(n, &p.namespace));
            if in_scope && !taken.contains(&p.name) && pod_belongs(&owners, obs, p, &kind, &name) {
                taken.insert(p.name.clone());
                s.pods.push(p.name.clone());
                add(
                    &mut s,
                    "Pod",
                    &p.name,
                    &p.namespace,
                    format!("{kind}/{name}: {how}"),
                );
            }
        }
    }
    // The nodes the subject's pods run on are neighbours along an evidenced edge.
    for p in &pods {
        if taken.contains(&p.name)
            && let Some(n) = &p.node
            && !s.nodes.contains(n)
        {
            s.nodes.push(n.clone());
        }
    }
    // A configured database that answered is part of what is looked at: its sessions are
    // where a hang or a lock chain shows.
    if !obs.postgres.is_empty() && !s.objects.iter().any(|o| o.kind == "Database") {
        let mut names: Vec<&str> = obs
            .postgres
            .iter()
            .filter_map(|f| match f {
                crate::model::PgFact::Backend(b) if !b.database.is_empty() => {
                    Some(b.database.as_str())
                }
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        let name = if names.is_empty() {
            "postgres".to_string()
        } else {
            names.join(",")
        };
        add(
            &mut s,
            "Database",
            &name,
            "",
            "the configured database, consulted".to_string(),
        );
    }
    s.resolved = !s.workloads.is_empty()
        || !s.pods.is_empty()
        || !s.nodes.is_empty()
        || !s.ingresses.is_empty();
    if let Some(instance) = crate::reason::cloud::subject(obs) {
        // The label that named it also reads as a database; the instance is the one object.
        s.objects
            .retain(|o| !(o.kind == "Database" && o.name == instance.name));
        s.objects.push(instance);
        s.resolved = true;
    }
    s
}

/// Whether a pod that is no longer listed (an event still names it) belonged to the subject: its
/// name is one the subject's controllers give (a ReplicaSet's hashed name, a StatefulSet's
/// ordinal, a Job's suffix).
pub(crate) fn unlisted_pod_of_subject(obs: &Observations, s: &Subject, pod: &str) -> bool {
    if s.pods.iter().any(|p| p == pod) {
        return true;
    }
    if obs.pods.iter().any(|p| p.name == pod) {
        return false;
    }
    owner_of_unlisted(obs, pod, &s.namespace)
        .is_some_and(|(kind, name)| s.workloads.iter().any(|(k, n)| *k == kind && *n == name))
}

/// The workload a pod that is no longer listed belonged to: a ReplicaSet (hashed name) plus a
/// 5-character suffix, a StatefulSet plus an ordinal, a Job or DaemonSet plus a 5-character suffix.
fn owner_of_unlisted(
    obs: &Observations,
    pod: &str,
    ns: &Option<String>,
) -> Option<(String, String)> {
    let in_ns = |n: &str| ns.as_deref().is_none_or(|x| same_ns(x, n));
    let suffix = |owner: &str| {
        pod.strip_prefix(owner)
            .and_then(|r| r.strip_prefix('-'))
            .map(str::to_string)
    };
    let random = |r: &str| r.len() == 5 && r.chars().all(|c| c.is_ascii_alphanumeric());
    for rs in obs.replica_sets.iter().filter(|r| in_ns(&r.namespace)) {
        if suffix(&rs.name).is_some_and(|r| random(&r)) {
            return match rs.owner.as_deref().and_then(|o| o.split_once('/')) {
                Some((k, n)) => Some((k.to_string(), n.to_string())),
                None => Some(("ReplicaSet".to_string(), rs.name.clone())),
            };
        }
    }
    // Listed pods of one ReplicaSet share its hashed name as their prefix.
    for p in obs.pods.iter().filter(|p| in_ns(&p.namespace)) {
        if let Some(rs) = crate::reason::pod_rs(p)
            && suffix(&rs).is_some_and(|r| random(&r))
        {
            return workload_of(obs, p);
        }
    }
    for w in obs.workloads.iter().filter(|w| in_ns(&w.namespace)) {
        let fits = match w.kind.as_str() {
            "StatefulSet" => suffix(&w.name)
                .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit())),
            "DaemonSet" | "Job" => suffix(&w.name).is_some_and(|r| random(&r)),
            _ => false,
        };
        if fits {
            return Some((w.kind.clone(), w.name.clone()));
        }
    }
    None
}

/// A workload whose name is exactly `name` (deployments first).
fn workload_named(obs: &Observations, name: &str, ns: &Option<String>) -> Option<(String, String)> {
    let in_ns = |n: &str| ns.as_deref().is_none_or(|x| same_ns(x, n));
    obs.deployments
        .iter()
        .find(|d| d.name == name && in_ns(&d.namespace))
        .map(|d| ("Deployment".to_string(), d.name.clone()))
        .or_else(|| {
            obs.workloads
                .iter()
                .find(|w| w.name == name && in_ns(&w.namespace))
                .map(|w| (w.kind.clone(), w.name.clone()))
        })
}

/// The Service a probe's target names by its host (`http://frontend.shop.svc.cluster.local/`,
/// `frontend.shop:8080`, `frontend`), in the alert's namespace when the host does not say one,
/// with how it was found.
fn probed_service(
    obs: &Observations,
    instance: &str,
    ns: &Option<String>,
) -> Option<(String, String)> {
    let rest = instance.split_once("://").map_or(instance, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    let mut parts = host.split('.');
    let name = parts.next().filter(|n| !n.is_empty())?;
    let space = parts.next();
    // A host of many labels that is not a cluster name is a machine, not a Service.
    let cluster = host.contains(".svc") || host.matches('.').count() <= 1;
    if !cluster || crate::reason::is_ipv4(host) || name.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let in_ns = |n: &str| match (space, ns.as_deref()) {
        (Some(sp), _) if host.matches('.').count() >= 1 => same_ns(sp, n),
        (_, Some(x)) => same_ns(x, n),
        _ => true,
    };
    let listed = obs
        .services
        .iter()
        .any(|v| v.name == name && in_ns(&v.namespace) && !v.missing);
    let runs = obs
        .deployments
        .iter()
        .any(|d| d.name == name && in_ns(&d.namespace))
        || obs
            .workloads
            .iter()
            .any(|w| w.name == name && in_ns(&w.namespace));
    (listed || runs).then(|| {
        (
            name.to_string(),
            format!("label instance={instance} probes Service {name}"),
        )
    })
}

/// The workload behind Service `svc`: the owner of the pods its selector takes, else the
/// workload of its name.
fn behind_service(obs: &Observations, svc: &str, ns: &Option<String>) -> Option<(String, String)> {
    let in_ns = |n: &str| ns.as_deref().is_none_or(|x| same_ns(x, n));
    obs.services
        .iter()
        .filter(|v| v.name == svc && in_ns(&v.namespace) && !v.selector.is_empty())
        .flat_map(|v| {
            obs.pods.iter().filter(move |p| {
                p.namespace == v.namespace && selector_matches(&v.selector, &[], &p.labels)
            })
        })
        .find_map(|p| workload_of(obs, p))
        .or_else(|| workload_named(obs, svc, ns))
}

/// `deployment` -> `Deployment`, `statefulset` -> `StatefulSet`, ...
fn canonical_kind(kind: &str) -> String {
    match kind.to_ascii_lowercase().replace(['_', '-'], "").as_str() {
        "deployment" => "Deployment",
        "statefulset" => "StatefulSet",
        "daemonset" => "DaemonSet",
        "job" => "Job",
        "cronjob" => "CronJob",
        "replicaset" => "ReplicaSet",
        "pod" => "Pod",
        _ => return kind.to_string(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, WorkloadFacts};

    fn pod(name: &str, owner: &str, labels: &[(&str, &str)]) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "shop".into(),
            owner: (!owner.is_empty()).then(|| owner.to_string()),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..PodFacts::default()
        }
    }

    fn alert(labels: &[(&str, &str)]) -> Alert {
        Alert {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Alert::default()
        }
    }

    #[test]
    fn a_namespace_the_problem_names_is_one_the_cluster_has() {
        let obs = Observations {
            pods: vec![pod("web-1", "", &[])],
            ..Observations::default()
        };
        assert_eq!(
            namespace_said(&obs, "orders failed in namespace shop. Still?").as_deref(),
            Some("shop")
        );
        assert_eq!(
            namespace_said(&obs, "the shop namespace is slow").as_deref(),
            Some("shop")
        );
        // The word after "namespace" that names none is not taken for one.
        assert_eq!(namespace_said(&obs, "namespace quotas are fine"), None);
    }

    #[test]
    fn a_grpc_service_names_the_workload_by_its_package_or_its_service() {
        assert_eq!(grpc_names("rate.Rate"), vec!["rate".to_string()]);
        assert_eq!(
            grpc_names("oteldemo.CheckoutService"),
            vec![
                "oteldemo".to_string(),
                "checkoutservice".to_string(),
                "checkout-service".to_string(),
                "checkout".to_string()
            ]
        );
        let obs = Observations {
            alert: Some(alert(&[
                ("namespace", "shop"),
                ("grpc_service", "oteldemo.CheckoutService"),
            ])),
            deployments: vec![DeploymentFacts {
                name: "checkout".into(),
                namespace: "shop".into(),
                ..DeploymentFacts::default()
            }],
            ..Observations::default()
        };
        assert_eq!(
            resolve(&obs).workloads,
            vec![("Deployment".to_string(), "checkout".to_string())]
        );
    }

    #[test]
    fn an_alert_about_a_state_of_pods_in_a_namespace_is_about_the_pods_in_that_state() {
        let mut evicted = pod("thumbs-7d9-a1b2c", "", &[("app", "thumbs")]);
        evicted.status_reason = Some("Evicted".into());
        evicted.phase = "Failed".into();
        let running = pod("shop-api-5c4-d3e4f", "", &[("app", "shop-api")]);
        let mut a = alert(&[("alertname", "KubePodsEvicted"), ("namespace", "shop")]);
        a.annotations.insert(
            "description".into(),
            "3 pods in namespace shop were evicted by the kubelet".into(),
        );
        let obs = Observations {
            alert: Some(a),
            pods: vec![evicted, running],
            deployments: vec![DeploymentFacts {
                name: "shop-api".into(),
                namespace: "shop".into(),
                ..DeploymentFacts::default()
            }],
            ..Observations::default()
        };
        let s = resolve(&obs);
        // The namespace's own word in the text does not name `shop-api`.
        assert!(!s.workloads.iter().any(|(_, n)| n == "shop-api"), "{s:?}");
        assert_eq!(s.pods, vec!["thumbs-7d9-a1b2c".to_string()], "{s:?}");

        // Words that name no state the pods are in name none of them.
        let mut quiet = obs.clone();
        if let Some(a) = quiet.alert.as_mut() {
            a.labels
                .insert("alertname".into(), "KubePodCrashLooping".into());
            a.annotations.clear();
        }
        assert!(resolve(&quiet).pods.is_empty());
    }

    #[test]
    fn a_deployment_owns_its_pods_by_link_not_by_name_prefix() {
        let obs = Observations {
            alert: Some(alert(&[("namespace", "shop"), ("deployment", "checkout")])),
            pods: vec![
                pod(
                    "checkout-6f7c9-abcde",
                    "ReplicaSet/checkout-6f7c9",
                    &[("app", "checkout"), ("pod-template-hash", "6f7c9")],
                ),
                pod(
                    "checkout-worker-5d4c3-zzzzz",
                    "ReplicaSet/checkout-worker-5d4c3",
                    &[("app", "checkout-worker"), ("pod-template-hash", "5d4c3")],
                ),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(s.pods, vec!["checkout-6f7c9-abcde".to_string()]);
        assert!(s.covers("deployment/checkout") && !s.covers("pod/checkout-worker-5d4c3-zzzzz"));
    }

    #[test]
    fn an_application_named_by_its_namespace_words_is_every_workload_of_it() {
        use crate::model::DeploymentFacts;
        let dep = |name: &str, ns: &str| DeploymentFacts {
            name: name.into(),
            namespace: ns.into(),
            selector: BTreeMap::from([("app".to_string(), name.to_string())]),
            ..DeploymentFacts::default()
        };
        let in_ns = |name: &str, ns: &str| {
            let mut p = pod(
                &format!("{name}-6f7c9-abcde"),
                &format!("ReplicaSet/{name}-6f7c9"),
                &[("app", name), ("pod-template-hash", "6f7c9")],
            );
            p.namespace = ns.into();
            p
        };
        let mut obs = Observations {
            problem: Some("The hotel reservation application returns errors to users".into()),
            pods: vec![
                in_ns("frontend", "test-hotel-reservation"),
                in_ns("reservation", "test-hotel-reservation"),
                in_ns("reservation", "staging"),
            ],
            deployments: vec![
                dep("frontend", "test-hotel-reservation"),
                dep("reservation", "test-hotel-reservation"),
                dep("reservation", "staging"),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(s.application.as_deref(), Some("test-hotel-reservation"));
        assert_eq!(s.workloads.len(), 2, "{:?}", s.workloads);
        assert!(s.covers("deployment/frontend") && s.covers("deployment/reservation"));
        assert_eq!(s.pods.len(), 2, "{:?}", s.pods);
        // One word of the namespace is no phrase: the workload it names is the subject.
        obs.problem = Some("The reservation service returns errors".into());
        let s = resolve(&obs);
        assert!(s.application.is_none());
        assert_eq!(
            s.workloads,
            vec![("Deployment".to_string(), "reservation".to_string())]
        );
        // A workload name as long as the phrase wins over the namespace.
        obs.problem = Some("hotel-reservation errors".into());
        obs.deployments
            .push(dep("hotel-reservation", "test-hotel-reservation"));
        let s = resolve(&obs);
        assert!(s.application.is_none());
        assert!(s.covers("deployment/hotel-reservation"));
    }

    #[test]
    fn a_workload_is_named_by_its_distinctive_words_and_a_shared_word_names_none() {
        use crate::model::{DeploymentFacts, WorkloadFacts};
        let dep = |name: &str| DeploymentFacts {
            name: name.into(),
            namespace: "shop".into(),
            ..DeploymentFacts::default()
        };
        let mut obs = Observations {
            problem: Some("stock updates failing since the release, reads work".into()),
            deployments: vec![
                dep("stock-service"),
                dep("warehouse-sync"),
                dep("customer-portal"),
                dep("portal-bff"),
            ],
            workloads: vec![WorkloadFacts {
                kind: "CronJob".into(),
                name: "ledger-export".into(),
                namespace: "shop".into(),
                ..WorkloadFacts::default()
            }],
            ..Observations::default()
        };
        assert_eq!(
            resolve(&obs).workloads,
            vec![("Deployment".to_string(), "stock-service".to_string())]
        );
        obs.problem = Some("the nightly ledger exports did not land".into());
        assert_eq!(
            resolve(&obs).workloads,
            vec![("CronJob".to_string(), "ledger-export".to_string())]
        );
        // A generic word tells apart two that share a distinctive one, whatever their plurals.
        obs.deployments.push(dep("orders-operator"));
        obs.deployments.push(dep("order-api"));
        obs.problem = Some("order resources sit in Pending; the operator pod does nothing".into());
        assert_eq!(
            resolve(&obs).workloads,
            vec![("Deployment".to_string(), "orders-operator".to_string())]
        );
        // "portal" is a word of two workloads: neither is taken for it.
        obs.problem = Some("the portal shows a certificate warning".into());
        assert!(!resolve(&obs).resolved);
        // A generic word ("service") names nothing.
        obs.problem = Some("the service is slow".into());
        assert!(!resolve(&obs).resolved);
        // An alert whose application label names something else is not taken for a workload
        // sharing one of its words.
        obs.problem = None;
        obs.alert = Some(alert(&[("alertname", "HighLatency"), ("service", "stock")]));
        if let Some(a) = obs.alert.as_mut() {
            a.annotations
                .insert("summary".into(), "stock latency above 500ms".into());
        }
        assert!(!resolve(&obs).covers("deployment/stock-service"));
    }

    #[test]
    fn kube_state_metrics_scrape_job_is_not_a_job_but_job_name_is() {
        let obs = Observations {
            alert: Some(alert(&[
                ("namespace", "shop"),
                ("job", "kube-state-metrics"),
                ("job_name", "nightly-import"),
            ])),
            pods: vec![
                pod(
                    "nightly-import-x7k2p",
                    "Job/nightly-import",
                    &[("job-name", "nightly-import")],
                ),
                pod("web-1", "ReplicaSet/web-7c", &[("pod-template-hash", "7c")]),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(
            s.workloads,
            vec![("Job".to_string(), "nightly-import".to_string())]
        );
        assert_eq!(s.pods, vec!["nightly-import-x7k2p".to_string()]);
    }

    #[test]
    fn a_cronjob_reaches_its_pods_through_its_jobs() {
        let obs = Observations {
            alert: Some(alert(&[("namespace", "shop"), ("cronjob", "report")])),
            workloads: vec![WorkloadFacts {
                kind: "Job".into(),
                name: "report-29100".into(),
                namespace: "shop".into(),
                owner: Some("CronJob/report".into()),
                ..WorkloadFacts::default()
            }],
            pods: vec![
                pod(
                    "report-29100-abcde",
                    "Job/report-29100",
                    &[("job-name", "report-29100")],
                ),
                pod("reporter-1", "", &[]),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(s.pods, vec!["report-29100-abcde".to_string()]);
    }

    #[test]
    fn a_named_pod_brings_its_owner_and_siblings() {
        let obs = Observations {
            alert: Some(alert(&[("namespace", "shop"), ("pod", "db-0")])),
            pods: vec![
                pod("db-0", "StatefulSet/db", &[("app", "db")]),
                pod("db-1", "StatefulSet/db", &[("app", "db")]),
                pod("web-1", "ReplicaSet/web-7c", &[("pod-template-hash", "7c")]),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(s.workload("StatefulSet"), Some("db"));
        assert_eq!(s.pods, vec!["db-0".to_string(), "db-1".to_string()]);
    }

    #[test]
    fn a_replaced_pod_still_leads_to_its_owner() {
        let obs = Observations {
            alert: Some(alert(&[("namespace", "shop"), ("pod", "cart-7f9d8-abcde")])),
            replica_sets: vec![DeploymentFacts {
                name: "cart-7f9d8".into(),
                namespace: "shop".into(),
                owner: Some("Deployment/cart".into()),
                ..DeploymentFacts::default()
            }],
            pods: vec![
                pod(
                    "cart-7f9d8-zzzzz",
                    "ReplicaSet/cart-7f9d8",
                    &[("pod-template-hash", "7f9d8")],
                ),
                pod(
                    "cart-worker-1a2b3-yyyyy",
                    "ReplicaSet/cart-worker-1a2b3",
                    &[("pod-template-hash", "1a2b3")],
                ),
            ],
            ..Observations::default()
        };
        let s = resolve(&obs);
        assert_eq!(s.workload("Deployment"), Some("cart"));
        assert!(s.pods.contains(&"cart-7f9d8-zzzzz".to_string()));
        assert!(!s.pods.contains(&"cart-worker-1a2b3-yyyyy".to_string()));
    }

    #[test]
    fn a_services_cluster_dns_name_names_it() {
        assert!(line_names(
            "url=http://payments-gateway.shop.svc.cluster.local/v2/authorize",
            "payments-gateway"
        ));
        assert!(line_names("dial tcp redis.cache.svc:6379", "redis"));
        assert!(!line_names(
            "reading payments-gateway.yaml",
            "payments-gateway"
        ));
    }

    #[test]
    fn names_in_text_match_whole_names_only() {
        assert!(mentions("checkout is slow.", "checkout"));
        assert!(!mentions("checkout-worker is slow", "checkout"));
        assert!(mentions("pods of checkout-worker.", "checkout-worker"));
        assert!(!mentions("", "x"));
    }

    #[test]
    fn selector_expressions_are_honoured() {
        let labels: BTreeMap<String, String> = [("tier".to_string(), "web".to_string())]
            .into_iter()
            .collect();
        assert!(selector_matches(
            &BTreeMap::new(),
            &["tier In (web,api)".into()],
            &labels
        ));
        assert!(!selector_matches(
            &BTreeMap::new(),
            &["tier NotIn (web)".into()],
            &labels
        ));
        assert!(!selector_matches(&BTreeMap::new(), &[], &labels));
    }
}
