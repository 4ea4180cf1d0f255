//! The Kubernetes specialist: the subject's controllers, pods and events (by selector where it can),
//! its Services and Ingresses, and the logs of the pods the verdict will be about.

use super::{Caller, Scope};
use crate::agent::evidence::Chart;
use crate::agent::selection;
use crate::agent::tools::{Params, ToolOutput, params, s};
use crate::model::{EvidenceId, PodFacts};
use crate::reason::Observations;
use serde_json::json;
use std::sync::Mutex;

/// The subject's pods, resolved by the diagnosis's own rules from what the lane has listed so
/// far (its observations carry the alert and problem, see [`kubernetes`]), so that Gather reads
/// the logs of the pods the verdict will be about. None when unresolved.
fn subject_pods(obs: &Mutex<Observations>) -> Option<Vec<String>> {
    crate::reason::subject_pods(&obs.lock().unwrap_or_else(|e| e.into_inner()))
}

/// How many workloads' logs are read when nothing names the subject and nothing is in trouble.
const SWEEP: usize = 16;

/// One running pod of each workload (the first listed), at most [`SWEEP`]: what an engineer
/// tails when nothing says where to look. When every running pod fits in that bound, all of
/// them: a fault of one replica (its node's clock, its own state) shows only in its own lines.
fn one_per_owner<'a>(pods: impl Iterator<Item = &'a PodFacts>) -> Vec<&'a PodFacts> {
    let running: Vec<&PodFacts> = pods
        .filter(|p| p.phase == "Running" && !p.deleting)
        .collect();
    if running.len() <= SWEEP {
        return running;
    }
    let mut owners: Vec<&str> = Vec::new();
    running
        .into_iter()
        .filter(|p| {
            let owner = p.owner.as_deref().unwrap_or(p.name.as_str());
            let fresh = !owners.contains(&owner);
            if fresh {
                owners.push(owner);
            }
            fresh
        })
        .take(SWEEP)
        .collect()
}

/// Whether a pod deserves a look at its logs.
fn troubled(p: &PodFacts) -> bool {
    p.restarts() > 0
        || !p.ready() && p.phase != "Succeeded"
        || p.containers
            .iter()
            .any(|c| c.reason.is_some() || c.last_reason.is_some())
}

/// The workload controllers besides Deployments (StatefulSets, DaemonSets, Jobs, CronJobs) in the
/// namespace pods are read from (all namespaces when none is known), in parallel. Each read that
/// fails (a cluster without the API, a case without a recording) is one failed step, no more;
/// true when every one answered.
async fn workloads(c: &Caller, ns: Option<&str>, obs: &Mutex<Observations>) -> bool {
    let none = Chart::default();
    let scoped = || params([("namespace", ns.and_then(s))]);
    let (a, b, c2, d) = futures::join!(
        c.call("kubernetes.statefulsets", scoped(), &none, obs),
        c.call("kubernetes.daemonsets", scoped(), &none, obs),
        c.call("kubernetes.jobs", scoped(), &none, obs),
        c.call("kubernetes.cronjobs", scoped(), &none, obs),
    );
    a.is_some() && b.is_some() && c2.is_some() && d.is_some()
}

pub(super) async fn kubernetes(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    // What the subject is resolved from besides the listed objects; lane merges ignore them.
    {
        let mut o = obs.lock().unwrap_or_else(|e| e.into_inner());
        o.alert = scope.alert.clone();
        o.problem = scope.problem.clone();
        o.now = scope.now;
    }
    let ns = scope.namespace.clone();
    let none = Chart::default();
    let in_ns = || params([("namespace", ns.clone().and_then(s))]);
    // An alert naming a workload in a namespace: its controllers are read first, so that its
    // pods and their events can be asked for by selector (see [`crate::agent::selection`]).
    let pods = if scope.alert.is_some() && ns.is_some() && scope.workload.is_some() {
        let (deployments, _, all_workloads) = futures::join!(
            c.call("kubernetes.deployments", in_ns(), &none, obs),
            c.call("kubernetes.nodes", Params::new(), &none, obs),
            workloads(c, ns.as_deref(), obs),
        );
        // Which neighbours are in trouble is read off every controller list: one missing, and
        // the namespace is read whole.
        let plan = (deployments.is_some() && all_workloads)
            .then(|| selection::pod_plan(scope, &obs.lock().unwrap_or_else(|e| e.into_inner())))
            .flatten();
        match plan {
            Some(plan) => selected(c, scope, &plan, obs).await,
            None => whole_namespace(c, scope, obs).await,
        }
    } else {
        let (pods, _, _, _, _) = futures::join!(
            c.call("kubernetes.pods", in_ns(), &none, obs),
            c.call("kubernetes.events", in_ns(), &none, obs),
            // Every namespace's when none is known: the problem's words may name one of them.
            c.call("kubernetes.deployments", in_ns(), &none, obs),
            c.call("kubernetes.nodes", Params::new(), &none, obs),
            workloads(c, ns.as_deref(), obs),
        );
        // A namespace read from a problem's words must be one the cluster has: none of its pods
        // listed there, every namespace's are read instead.
        let listed_none =
            matches!(&pods, Some((ToolOutput::Pods(p), _)) if p.is_empty()) || pods.is_none();
        let pods = if listed_none && scope.alert.is_none() && ns.is_some() {
            c.call("kubernetes.pods", Params::new(), &none, obs).await
        } else {
            pods
        };
        pods_of(pods)
    };
    let Some(pods) = pods else {
        return;
    };
    // A problem that names no namespace may name a website ("the docs portal", a host): every
    // namespace's Ingresses say which one it is about, before the subject is resolved, since a
    // host named outright is more exact than any word a workload's name shares with the text.
    let mut ingresses_read = false;
    if ns.is_none() && scope.problem.is_some() {
        ingresses_read = c
            .call("kubernetes.ingresses", Params::new(), &none, obs)
            .await
            .is_some();
    }
    // Logs of the subject's pods, as the diagnosis resolves the subject from what was listed:
    // those in trouble first, then Running ones, since a latency or error-rate page on Ready
    // pods shows its cause in their own log (an upstream timing out, errors it serves). At most
    // three, to keep Gather quick.
    let subject = subject_pods(obs);
    let owns = |p: &PodFacts| match &subject {
        Some(names) => names.contains(&p.name),
        None => scope.owns_pod(p),
    };
    let mut picked: Vec<&PodFacts> = pods.iter().filter(|p| troubled(p) && owns(p)).collect();
    if picked.len() < 3 && (subject.is_some() || scope.workload.is_some()) {
        let running = pods
            .iter()
            .filter(|p| owns(p) && p.phase == "Running" && !troubled(p))
            .take(2);
        picked.extend(running);
    }
    // An application (a subject of several workloads) with none of its pods in trouble: the
    // failure shows in one of its services' own logs, not necessarily the first two listed, so
    // one running pod of each of its workloads is read.
    let mut sweeping = false;
    if subject.is_some() && !picked.iter().any(|p| troubled(p)) {
        let every = one_per_owner(pods.iter().filter(|p| owns(p)));
        if every.len() > 2 {
            picked = every;
            sweeping = true;
        }
    }
    if picked.is_empty() {
        picked = pods.iter().filter(|p| troubled(p)).collect();
    }
    // Nothing resolved and nothing in trouble: what fails shows only in someone's own log, so
    // one running pod of each workload is read, as an engineer tails each service in turn.
    if picked.is_empty() && subject.is_none() && scope.workload.is_none() {
        picked = one_per_owner(pods.iter());
        sweeping = true;
    }
    if let Some(named) = &scope.pod
        && let Some(p) = pods.iter().find(|p| &p.name == named)
        && !picked.iter().any(|q| q.name == *named)
    {
        picked.insert(0, p);
    }
    // The Services in front of the subject (and what their Endpoints list), in its namespace.
    let mut service_ns = ns.clone().or_else(|| {
        let names = subject.as_ref()?;
        pods.iter()
            .find(|p| names.contains(&p.name))
            .map(|p| p.namespace.clone())
    });
    if service_ns.is_none() && ingresses_read {
        service_ns =
            crate::reason::subject_namespace(&obs.lock().unwrap_or_else(|e| e.into_inner()));
    }
    let services = async {
        if let Some(service_ns) = &service_ns {
            let in_service_ns = || params([("namespace", s(service_ns))]);
            futures::join!(
                c.call("kubernetes.services", in_service_ns(), &none, obs),
                // A namespace found from the subject, not given: the changes specialist could not
                // read its rollout history, so it is read here ("since this afternoon's release").
                async {
                    if ns.is_none() {
                        c.call("kubernetes.replica_sets", in_service_ns(), &none, obs)
                            .await;
                    }
                },
                async {
                    if !ingresses_read {
                        c.call("kubernetes.ingresses", in_service_ns(), &none, obs)
                            .await;
                    }
                },
            );
            // Whether an Ingress's certificate Secret exists is read from the names of the
            // namespace's Secrets (metadata only), and only when an Ingress there has TLS.
            let wants_tls = obs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .ingresses
                .iter()
                .any(|i| {
                    &i.namespace == service_ns && i.tls.iter().any(|t| !t.secret_name.is_empty())
                });
            if wants_tls {
                c.call("kubernetes.secrets", in_service_ns(), &none, obs)
                    .await;
            }
        }
    };
    picked.sort_by_key(|p| std::cmp::Reverse(p.restarts()));
    picked.truncate(if sweeping || subject.is_none() {
        SWEEP
    } else {
        3
    });
    let calls = picked.iter().map(|p| pod_logs(c, p, obs));
    futures::join!(futures::future::join_all(calls), services);
    // A dependency the subject's lines name and that is down says why in its own logs (a
    // database out of disk, a broker that cannot parse its configuration): read them too, at
    // most two of its pods, once the subject's lines have told which dependency it is.
    let read: Vec<&str> = picked.iter().map(|p| p.name.as_str()).collect();
    // The pods behind a Service the failing calls dial, when they were not listed: what they
    // declare and run is what the Service is checked against.
    let unlisted = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        crate::reason::dialled_unlisted(&o)
    };
    let listings = unlisted.iter().map(|(namespace, selector)| {
        c.call(
            "kubernetes.pods",
            params([("namespace", s(namespace)), ("label_selector", s(selector))]),
            &none,
            obs,
        )
    });
    let listed: Vec<PodFacts> = futures::future::join_all(listings)
        .await
        .into_iter()
        .filter_map(pods_of)
        .flatten()
        .collect();
    let dependencies = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        crate::reason::dependency_pods(&o)
    };
    let more = pods
        .iter()
        .chain(listed.iter())
        .filter(|p| dependencies.contains(&p.name) && !read.contains(&p.name.as_str()))
        .take(2)
        .map(|p| pod_logs(c, p, obs));
    futures::future::join_all(more).await;
    // The subject failing on one node only while its pods elsewhere are fine: that node's own
    // agents (its network plugin, its proxy) in every namespace, and the logs of those not ready.
    let confined = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        crate::reason::confined_node(&o)
    };
    if let Some(node) = confined {
        let on_node = c
            .call("kubernetes.pods", params([("node", s(&node))]), &none, obs)
            .await;
        if let Some(there) = pods_of(on_node) {
            let agents = there
                .iter()
                .filter(|p| crate::reason::daemonset_of(p).is_some())
                .filter(|p| !p.ready() && service_ns.as_deref() != Some(p.namespace.as_str()))
                .take(2)
                .map(|p| pod_logs(c, p, obs));
            futures::future::join_all(agents).await;
        }
    }
    // A controller refused its pods because an admission webhook's Service has no endpoints:
    // that Service and its pods, in the webhook's namespace, say why it is down.
    let webhook = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        crate::reason::webhook_down(&o)
    };
    if let Some(webhook_ns) = webhook.filter(|n| Some(n) != service_ns.as_ref()) {
        let in_webhook_ns = || params([("namespace", s(&webhook_ns))]);
        futures::join!(
            c.call("kubernetes.services", in_webhook_ns(), &none, obs),
            c.call("kubernetes.pods", in_webhook_ns(), &none, obs),
        );
    }
}

/// A pod's logs: its last terminated instance's when it restarted (where a crash says why),
/// else the running one's; of the container holding it back (a failing init container first).
async fn pod_logs(c: &Caller, p: &PodFacts, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let restarted = p.restarts() > 0;
    // A container still waiting for the init phase has no logs.
    let container = p
        .containers
        .iter()
        .find(|ct| ct.init && !ct.ready)
        .or_else(|| {
            p.containers
                .iter()
                .find(|ct| !ct.ready && ct.reason.as_deref() != Some("PodInitializing"))
        })
        .or(p.containers.first())
        .map(|ct| ct.name.clone());
    let logs = |previous: bool| {
        params([
            ("namespace", s(&p.namespace)),
            ("pod", s(&p.name)),
            ("container", container.clone().and_then(s)),
            ("previous", Some(json!(previous))),
            ("tail", Some(json!(200))),
        ])
    };
    let got = if restarted {
        c.call("kubernetes.pod_logs", logs(true), &none, obs).await
    } else {
        None
    };
    if got.is_none() {
        c.call("kubernetes.pod_logs", logs(false), &none, obs).await;
    }
}

fn pods_of(out: Option<(ToolOutput, EvidenceId)>) -> Option<Vec<PodFacts>> {
    match out {
        Some((ToolOutput::Pods(p), _)) => Some(p),
        _ => None,
    }
}

/// Every pod and event of the scope's namespace, as the lane reads them when no selector can
/// narrow them.
async fn whole_namespace(
    c: &Caller,
    scope: &Scope,
    obs: &Mutex<Observations>,
) -> Option<Vec<PodFacts>> {
    let none = Chart::default();
    let in_ns = || params([("namespace", scope.namespace.clone().and_then(s))]);
    let (pods, _) = futures::join!(
        c.call("kubernetes.pods", in_ns(), &none, obs),
        c.call("kubernetes.events", in_ns(), &none, obs),
    );
    pods_of(pods)
}

/// The subject's pods by its controller's label selector (and those of its neighbours short of
/// ready), then the events of the subject's objects by field selector beside the namespace's
/// Warning events. The alert's own pod must be among them, else the namespace is read whole.
async fn selected(
    c: &Caller,
    scope: &Scope,
    plan: &selection::PodPlan,
    obs: &Mutex<Observations>,
) -> Option<Vec<PodFacts>> {
    let (Some(ns), Some(workload)) = (scope.namespace.as_deref(), scope.workload.as_deref()) else {
        return whole_namespace(c, scope, obs).await;
    };
    let none = Chart::default();
    let by = |selector: &str| params([("namespace", s(ns)), ("label_selector", s(selector))]);
    let (subject, neighbours) = futures::join!(
        c.call("kubernetes.pods", by(&plan.subject), &none, obs),
        futures::future::join_all(plan.neighbours.iter().map(|sel| c.call(
            "kubernetes.pods",
            by(sel),
            &none,
            obs
        ))),
    );
    let Some(subject) = pods_of(subject) else {
        return whole_namespace(c, scope, obs).await;
    };
    let nodes = {
        let o = obs.lock().unwrap_or_else(|e| e.into_inner());
        selection::troubled_nodes(scope, &subject, &o.nodes)
    };
    let on_nodes = futures::future::join_all(nodes.iter().map(|node| {
        c.call(
            "kubernetes.pods",
            params([("namespace", s(ns)), ("node", s(node))]),
            &none,
            obs,
        )
    }))
    .await;
    let mut pods = subject.clone();
    let mut listed: std::collections::HashSet<String> =
        subject.iter().map(|p| p.name.clone()).collect();
    for more in neighbours.into_iter().chain(on_nodes).filter_map(pods_of) {
        pods.extend(more.into_iter().filter(|p| listed.insert(p.name.clone())));
    }
    if scope
        .pod
        .as_ref()
        .is_some_and(|named| !pods.iter().any(|p| &p.name == named))
    {
        return whole_namespace(c, scope, obs).await;
    }
    let mine: Vec<&PodFacts> = subject.iter().collect();
    match selection::event_objects(workload, &mine) {
        Some(names) => {
            let about = |name: &str| params([("namespace", s(ns)), ("involved", s(name))]);
            futures::join!(
                c.call(
                    "kubernetes.events",
                    params([("namespace", s(ns)), ("type", s("Warning"))]),
                    &none,
                    obs
                ),
                futures::future::join_all(names.iter().map(|n| c.call(
                    "kubernetes.events",
                    about(n),
                    &none,
                    obs
                ))),
            );
        }
        None => {
            c.call(
                "kubernetes.events",
                params([("namespace", s(ns))]),
                &none,
                obs,
            )
            .await;
        }
    }
    Some(pods)
}
