//! Bigger worlds from small cases: a case directory's Kubernetes lists grown with healthy filler
//! (pods of other Deployments, normal events, nodes), the failure in it left as it was. The
//! scale benchmark and the tests that need a cluster of real size build their worlds with it.
//!
//! A server answers selected lists too: for the case's own objects the grown namespace is also
//! recorded as answers to the selected requests a client makes about them (pods by each of the
//! case's controllers' `labelSelector` and by each of its nodes, events by each of its objects'
//! names and by `type=Warning`). Any other selected request falls back to the whole list, which
//! the client filters itself.

use crate::integrations::kubernetes::{label_selector, selector_matches};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// How much filler to add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filler {
    /// Healthy pods of other Deployments, in the case's namespace (and so in the cluster).
    pub pods: usize,
    /// Normal events about those pods.
    pub events: usize,
    /// Ready nodes the filler pods run on.
    pub nodes: usize,
    /// Lists longer than this are recorded as pages of this many items (`limit`/`continue`),
    /// as a server that pages answers them; `None` records every list whole.
    pub page: Option<usize>,
    /// Keep the whole list beside its pages, for clients that do not page.
    pub keep_unpaged: bool,
}

impl Filler {
    /// `n` pods, `n` events and `n / 50` nodes, lists paged by 500.
    pub fn standard(n: usize) -> Filler {
        Filler {
            pods: n,
            events: n,
            nodes: n / 50,
            page: Some(500),
            keep_unpaged: false,
        }
    }
}

/// Pods per filler Deployment.
const PODS_PER_DEPLOYMENT: usize = 10;

/// The case's files with every recordings file (`*.ndjson` whose lines are all recordings, so
/// not a model's recorded exchanges) grown by `filler`; other files are kept as they are. Errors
/// name the file and line.
pub fn inflate(
    files: &BTreeMap<String, String>,
    filler: Filler,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (name, text) in files {
        let grown = if name.ends_with(".ndjson") && is_recordings(text) {
            inflate_recordings(name, text, filler)?
        } else {
            text.clone()
        };
        out.insert(name.clone(), grown);
    }
    Ok(out)
}

/// Whether every line is a recording (names its integration, method and path).
fn is_recordings(text: &str) -> bool {
    text.lines().filter(|l| !l.trim().is_empty()).all(|l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| {
            ["integration", "method", "path"]
                .iter()
                .all(|k| v.get(k).is_some_and(Value::is_string))
        })
    })
}

/// What a list recording is a list of, from its path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Pods,
    Events,
    Nodes,
    Deployments,
    ReplicaSets,
}

fn list_kind(path: &str) -> Option<ListKind> {
    let last = path.rsplit('/').next()?;
    let parent_ok = |n: usize| {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        parts.len() == n
    };
    // /api/v1/pods, /api/v1/namespaces/NS/pods, /apis/apps/v1/namespaces/NS/deployments, ...
    match last {
        "pods" if path.starts_with("/api/v1/") && (parent_ok(3) || parent_ok(5)) => {
            Some(ListKind::Pods)
        }
        "events" if path.starts_with("/api/v1/") && (parent_ok(3) || parent_ok(5)) => {
            Some(ListKind::Events)
        }
        "nodes" if path == "/api/v1/nodes" => Some(ListKind::Nodes),
        "deployments" if path.starts_with("/apis/apps/v1/") && parent_ok(6) => {
            Some(ListKind::Deployments)
        }
        "replicasets" if path.starts_with("/apis/apps/v1/") && parent_ok(6) => {
            Some(ListKind::ReplicaSets)
        }
        _ => None,
    }
}

/// The namespace a list path is scoped to, if any.
fn path_namespace(path: &str) -> Option<&str> {
    let mut parts = path.split('/');
    while let Some(p) = parts.next() {
        if p == "namespaces" {
            return parts.next();
        }
    }
    None
}

fn inflate_recordings(file: &str, text: &str, filler: Filler) -> Result<String, String> {
    let mut recs: Vec<Value> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{file}:{}: {e}", i + 1))?;
        recs.push(v);
    }
    // The namespace the filler goes to: the one the case's namespaced pod list reads.
    let namespace = recs
        .iter()
        .filter_map(|r| r.get("path").and_then(Value::as_str))
        .filter(|p| list_kind(p) == Some(ListKind::Pods))
        .find_map(path_namespace)
        .unwrap_or("default")
        .to_string();
    let world = FillerWorld::new(&namespace, filler, &recs);
    let own = OwnObjects::new(&namespace, &recs);
    let mut out = String::with_capacity(text.len());
    // The grown namespaced pod and event lists, the selected answers' source.
    let (mut grown_pods, mut grown_events): (Option<Value>, Option<Value>) = (None, None);
    for mut rec in recs {
        let kind = match (
            rec.get("integration").and_then(Value::as_str),
            rec.get("method").and_then(Value::as_str),
            rec.get("path").and_then(Value::as_str),
        ) {
            (Some("kubernetes"), Some(m), Some(p)) if m.eq_ignore_ascii_case("GET") => {
                list_kind(p).map(|k| (k, path_namespace(p).map(str::to_string)))
            }
            _ => None,
        };
        let unpaged = rec
            .get("query")
            .and_then(Value::as_object)
            .is_none_or(|q| q.is_empty());
        if let Some((kind, ns)) = kind.filter(|_| unpaged) {
            let in_scope = ns.as_deref().is_none_or(|n| n == namespace);
            if let Some(items) = rec.pointer_mut("/body/items").and_then(Value::as_array_mut)
                && (in_scope || kind == ListKind::Nodes)
            {
                items.extend(world.items(kind));
            }
            let paged = match filler.page.filter(|l| *l > 0) {
                Some(limit) => pages(&rec, limit),
                None => Vec::new(),
            };
            if paged.is_empty() || filler.keep_unpaged {
                push_line(&mut out, &rec)?;
            }
            for page in &paged {
                push_line(&mut out, page)?;
            }
            if ns.as_deref() == Some(namespace.as_str()) {
                match kind {
                    ListKind::Pods => grown_pods = Some(rec),
                    ListKind::Events => grown_events = Some(rec),
                    _ => {}
                }
            }
        } else {
            push_line(&mut out, &rec)?;
        }
    }
    for rec in own.selected(grown_pods.as_ref(), grown_events.as_ref(), filler.page) {
        push_line(&mut out, &rec)?;
    }
    Ok(out)
}

/// What the case itself holds in the filler's namespace, before any filler: its controllers'
/// selectors, its nodes, and the names of its objects.
struct OwnObjects {
    selectors: BTreeSet<String>,
    nodes: BTreeSet<String>,
    names: BTreeSet<String>,
}

impl OwnObjects {
    fn new(namespace: &str, recs: &[Value]) -> OwnObjects {
        let mut own = OwnObjects {
            selectors: BTreeSet::new(),
            nodes: BTreeSet::new(),
            names: BTreeSet::new(),
        };
        let lists = recs.iter().filter(|r| {
            r.get("integration").and_then(Value::as_str) == Some("kubernetes")
                && r.get("query")
                    .and_then(Value::as_object)
                    .is_none_or(|q| q.is_empty())
        });
        for rec in lists {
            let path = rec.get("path").and_then(Value::as_str).unwrap_or_default();
            if path_namespace(path) != Some(namespace) && path != "/api/v1/nodes" {
                continue;
            }
            let resource = path.rsplit('/').next().unwrap_or_default();
            let items = rec.pointer("/body/items").and_then(Value::as_array);
            for item in items.into_iter().flatten() {
                let name = item.pointer("/metadata/name").and_then(Value::as_str);
                match resource {
                    "nodes" => own.nodes.extend(name.map(str::to_string)),
                    "events" => own.names.extend(
                        item.pointer("/involvedObject/name")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    ),
                    "deployments" | "statefulsets" | "daemonsets" | "jobs" => {
                        own.names.extend(name.map(str::to_string));
                        own.selectors.extend(selector_of(item));
                    }
                    _ => own.names.extend(name.map(str::to_string)),
                }
            }
        }
        own
    }

    /// The selected answers, each asked as a paging client asks (with `limit`), so it is more
    /// specific than the whole list's first page.
    fn selected(
        &self,
        pods: Option<&Value>,
        events: Option<&Value>,
        page: Option<usize>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut answer = |list: &Value, query: (&str, String), keep: &dyn Fn(&Value) -> bool| {
            let mut rec = list.clone();
            let items: Vec<Value> = list
                .pointer("/body/items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|i| keep(i))
                .cloned()
                .collect();
            rec["body"]["items"] = Value::Array(items);
            let mut q = serde_json::Map::new();
            q.insert(query.0.into(), json!(query.1));
            if let Some(limit) = page.filter(|l| *l > 0) {
                q.insert("limit".into(), json!(limit.to_string()));
            }
            rec["query"] = Value::Object(q);
            let paged = page
                .filter(|l| *l > 0)
                .map(|l| pages(&rec, l))
                .unwrap_or_default();
            if paged.is_empty() {
                out.push(rec);
            } else {
                out.extend(paged);
            }
        };
        let labels = |i: &Value| -> BTreeMap<String, String> {
            i.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(pods) = pods {
            for sel in &self.selectors {
                answer(pods, ("labelSelector", sel.clone()), &|i| {
                    selector_matches(sel, &labels(i))
                });
            }
            for node in &self.nodes {
                answer(
                    pods,
                    ("fieldSelector", format!("spec.nodeName={node}")),
                    &|i| i.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node.as_str()),
                );
            }
        }
        if let Some(events) = events {
            for name in &self.names {
                answer(
                    events,
                    ("fieldSelector", format!("involvedObject.name={name}")),
                    &|i| {
                        i.pointer("/involvedObject/name").and_then(Value::as_str)
                            == Some(name.as_str())
                    },
                );
            }
            answer(events, ("fieldSelector", "type=Warning".into()), &|i| {
                i.get("type").and_then(Value::as_str) == Some("Warning")
            });
        }
        out
    }
}

/// A controller's `spec.selector` as a `labelSelector`.
fn selector_of(item: &Value) -> Option<String> {
    let sel = item.pointer("/spec/selector")?;
    let match_labels: BTreeMap<String, String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let expressions: Vec<String> = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if values.is_empty() {
                format!("{key} {op}")
            } else {
                format!("{key} {op} ({})", values.join(","))
            }
        })
        .collect();
    label_selector(&match_labels, &expressions)
}

fn push_line(out: &mut String, v: &Value) -> Result<(), String> {
    out.push_str(&serde_json::to_string(v).map_err(|e| e.to_string())?);
    out.push('\n');
    Ok(())
}

/// A list recording cut into pages of `limit` items: the first answers `limit=L`, the next
/// `limit=L&continue=TOKEN` of the page before. A list that fits one page gets none (its
/// unpaged recording answers the paged request too).
fn pages(rec: &Value, limit: usize) -> Vec<Value> {
    let Some(items) = rec.pointer("/body/items").and_then(Value::as_array) else {
        return Vec::new();
    };
    if items.len() <= limit {
        return Vec::new();
    }
    let chunks: Vec<&[Value]> = items.chunks(limit).collect();
    let mut out = Vec::with_capacity(chunks.len());
    let mut seen = 0usize;
    for (k, chunk) in chunks.iter().enumerate() {
        seen += chunk.len();
        let mut page = rec.clone();
        // A selected list's pages keep its selector.
        let mut query = rec
            .get("query")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        query.insert("limit".into(), json!(limit.to_string()));
        if k > 0 {
            query.insert("continue".into(), json!(token(k)));
        }
        page["query"] = Value::Object(query);
        page["body"]["items"] = Value::Array(chunk.to_vec());
        let meta = page["body"]
            .as_object_mut()
            .map(|b| b.entry("metadata").or_insert_with(|| json!({})));
        if let Some(meta) = meta.and_then(Value::as_object_mut) {
            if k + 1 < chunks.len() {
                meta.insert("continue".into(), json!(token(k + 1)));
                meta.insert(
                    "remainingItemCount".into(),
                    json!(items.len().saturating_sub(seen)),
                );
            } else {
                meta.remove("continue");
                meta.remove("remainingItemCount");
            }
        }
        out.push(page);
    }
    out
}

fn token(page: usize) -> String {
    format!("page-{page}")
}

/// The filler objects, built once per recordings file from the case's own objects as templates.
struct FillerWorld {
    pods: Vec<Value>,
    events: Vec<Value>,
    nodes: Vec<Value>,
    deployments: Vec<Value>,
    replica_sets: Vec<Value>,
}

impl FillerWorld {
    fn new(namespace: &str, filler: Filler, recs: &[Value]) -> FillerWorld {
        let node_names: Vec<String> = (0..filler.nodes).map(node_name).collect();
        // Without filler nodes the filler pods share the case's own nodes.
        let case_nodes: Vec<String> = recs
            .iter()
            .filter(|r| r.get("path").and_then(Value::as_str) == Some("/api/v1/nodes"))
            .filter_map(|r| r.pointer("/body/items").and_then(Value::as_array))
            .flatten()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let hosts = if node_names.is_empty() {
            case_nodes
        } else {
            node_names.clone()
        };
        let deployments = filler.pods.div_ceil(PODS_PER_DEPLOYMENT);
        let pods: Vec<Value> = (0..filler.pods)
            .map(|i| {
                let d = i / PODS_PER_DEPLOYMENT;
                let host = hosts
                    .get(i % hosts.len().max(1))
                    .cloned()
                    .unwrap_or_else(|| node_name(0));
                pod(namespace, d, i, &host)
            })
            .collect();
        let events = (0..filler.events)
            .map(|i| event(namespace, i, filler.pods))
            .collect();
        FillerWorld {
            pods,
            events,
            nodes: node_names.iter().map(|n| node(n)).collect(),
            deployments: (0..deployments).map(|d| deployment(namespace, d)).collect(),
            replica_sets: (0..deployments)
                .map(|d| replica_set(namespace, d))
                .collect(),
        }
    }

    fn items(&self, kind: ListKind) -> impl Iterator<Item = Value> + '_ {
        match kind {
            ListKind::Pods => self.pods.iter(),
            ListKind::Events => self.events.iter(),
            ListKind::Nodes => self.nodes.iter(),
            ListKind::Deployments => self.deployments.iter(),
            ListKind::ReplicaSets => self.replica_sets.iter(),
        }
        .cloned()
    }
}

const FILLER_CREATED: &str = "2026-02-02T10:00:00Z";

fn app(d: usize) -> String {
    format!("svc-{d:05}")
}

fn hash(d: usize) -> String {
    format!(
        "{:010x}",
        (d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 24
    )
    .chars()
    .take(10)
    .collect()
}

fn node_name(i: usize) -> String {
    format!(
        "ip-10-30-{}-{}.eu-west-1.compute.internal",
        i / 250,
        i % 250 + 1
    )
}

fn pod_name(d: usize, i: usize) -> String {
    format!("{}-{}-p{i:06}", app(d), hash(d))
}

fn pod(namespace: &str, d: usize, i: usize, host: &str) -> Value {
    let app = app(d);
    let hash = hash(d);
    let image = format!("registry.example.com/shop/{app}:v1.4.2");
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(d, i),
            "namespace": namespace,
            "uid": format!("f1110000-0000-4000-8000-{i:012}"),
            "creationTimestamp": FILLER_CREATED,
            "labels": {"app": app, "app.kubernetes.io/name": app, "pod-template-hash": hash},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{hash}"),
                "uid": format!("f2220000-0000-4000-8000-{d:012}"),
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "nodeName": host,
            "containers": [{
                "name": app, "image": image,
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi"},
                              "requests": {"cpu": "100m", "memory": "128Mi"}}
            }],
            "restartPolicy": "Always"
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": FILLER_CREATED},
                {"type": "Ready", "status": "True", "lastTransitionTime": FILLER_CREATED},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": FILLER_CREATED},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": FILLER_CREATED}
            ],
            "startTime": FILLER_CREATED,
            "qosClass": "Burstable",
            "containerStatuses": [{
                "name": app, "image": image, "ready": true, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": FILLER_CREATED}}, "lastState": {}
            }]
        }
    })
}

fn event(namespace: &str, i: usize, pods: usize) -> Value {
    let p = if pods == 0 { i } else { i % pods };
    let d = p / PODS_PER_DEPLOYMENT;
    let name = pod_name(d, p);
    let (reason, message) = match i % 3 {
        0 => (
            "Scheduled",
            format!("Successfully assigned {namespace}/{name}"),
        ),
        1 => (
            "Pulled",
            "Container image already present on machine".to_string(),
        ),
        _ => ("Started", format!("Started container {}", app(d))),
    };
    // Spread over the two hours before the case's window, all long settled.
    let at = format!(
        "2026-03-11T{:02}:{:02}:{:02}Z",
        11 + (i / 3600) % 2,
        (i / 60) % 60,
        i % 60
    );
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.{i:016x}"), "namespace": namespace,
                     "creationTimestamp": at},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": name, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "type": "Normal",
        "count": 1,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "source": {"component": "kubelet"}
    })
}

fn node(name: &str) -> Value {
    let cond = |t: &str, s: &str, r: &str| {
        json!({"type": t, "status": s, "reason": r, "message": r,
               "lastHeartbeatTime": "2026-03-11T14:31:40Z",
               "lastTransitionTime": "2026-01-14T06:02:11Z"})
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": "eu-west-1a",
            "node.kubernetes.io/instance-type": "m6i.xlarge",
            "eks.amazonaws.com/nodegroup": "general"}},
        "spec": {},
        "status": {
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID"),
                cond("Ready", "True", "KubeletReady")
            ],
            "allocatable": {"cpu": "3920m", "memory": "14933020Ki", "pods": "58"},
            "capacity": {"cpu": "4", "memory": "16012828Ki", "pods": "58"},
            "nodeInfo": {"kubeletVersion": "v1.33.4-eks-3a0f1b2", "osImage": "Amazon Linux 2023",
                         "containerRuntimeVersion": "containerd://1.7.27"}
        }
    })
}

fn template(app: &str, hash: Option<&str>) -> Value {
    let mut labels = json!({"app": app, "app.kubernetes.io/name": app});
    if let Some(h) = hash {
        labels["pod-template-hash"] = json!(h);
    }
    json!({
        "metadata": {"labels": labels},
        "spec": {"containers": [{
            "name": app, "image": format!("registry.example.com/shop/{app}:v1.4.2"),
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}
        }]}
    })
}

fn deployment(namespace: &str, d: usize) -> Value {
    let app = app(d);
    let n = PODS_PER_DEPLOYMENT;
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": namespace, "generation": 3,
                     "uid": format!("f3330000-0000-4000-8000-{d:012}"),
                     "creationTimestamp": FILLER_CREATED,
                     "annotations": {"deployment.kubernetes.io/revision": "3"},
                     "labels": {"app": app}},
        "spec": {"replicas": n, "selector": {"matchLabels": {"app": app}},
                 "template": template(&app, None)},
        "status": {"observedGeneration": 3, "replicas": n, "updatedReplicas": n,
                   "readyReplicas": n, "availableReplicas": n,
                   "conditions": [
                       {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                        "lastUpdateTime": FILLER_CREATED, "lastTransitionTime": FILLER_CREATED},
                       {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                        "lastUpdateTime": FILLER_CREATED, "lastTransitionTime": FILLER_CREATED}]}
    })
}

fn replica_set(namespace: &str, d: usize) -> Value {
    let app = app(d);
    let hash = hash(d);
    let n = PODS_PER_DEPLOYMENT;
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": format!("{app}-{hash}"), "namespace": namespace,
                     "creationTimestamp": FILLER_CREATED,
                     "uid": format!("f2220000-0000-4000-8000-{d:012}"),
                     "labels": {"app": app, "pod-template-hash": hash},
                     "annotations": {"deployment.kubernetes.io/revision": "3"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "name": app, "uid": format!("f3330000-0000-4000-8000-{d:012}"),
                        "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": n,
                 "selector": {"matchLabels": {"app": app, "pod-template-hash": hash}},
                 "template": template(&app, Some(&hash))},
        "status": {"replicas": n, "readyReplicas": n, "availableReplicas": n,
                   "fullyLabeledReplicas": n, "observedGeneration": 1}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> BTreeMap<String, String> {
        let rec = |path: &str, items: Value| {
            json!({"integration": "kubernetes", "method": "GET", "path": path, "query": {},
                   "status": 200, "body": {"kind": "List", "metadata": {}, "items": items}})
            .to_string()
        };
        let lines = [
            rec(
                "/api/v1/namespaces/shop/pods",
                json!([{"metadata": {"name": "a"}}]),
            ),
            rec("/api/v1/pods", json!([{"metadata": {"name": "a"}}])),
            rec("/api/v1/namespaces/other/pods", json!([])),
            rec("/api/v1/nodes", json!([{"metadata": {"name": "n1"}}])),
            rec("/api/v1/namespaces/shop/pods/a", json!([])),
        ];
        BTreeMap::from([
            ("recordings.ndjson".to_string(), lines.join("\n")),
            ("case.toml".to_string(), "id = \"x\"".to_string()),
            ("llm.ndjson".to_string(), "{\"request\": {}}\n".to_string()),
        ])
    }

    fn lines(files: &BTreeMap<String, String>) -> Vec<Value> {
        files["recordings.ndjson"]
            .lines()
            .map(|l| serde_json::from_str(l).expect("a recording line"))
            .collect()
    }

    fn count(v: &Value) -> usize {
        v.pointer("/body/items")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }

    #[test]
    fn filler_goes_to_the_cases_namespace_and_the_cluster_lists_only() {
        let filler = Filler {
            page: None,
            ..Filler::standard(100)
        };
        let out = inflate(&case(), filler).expect("inflates");
        let recs = lines(&out);
        // The case's five, then pods as asked for by the case's node.
        assert_eq!(recs.len(), 6);
        assert_eq!(
            recs[5]["query"],
            json!({"fieldSelector": "spec.nodeName=n1"})
        );
        assert_eq!(count(&recs[0]), 101);
        assert_eq!(count(&recs[1]), 101);
        assert_eq!(count(&recs[2]), 0, "another namespace gets none");
        assert_eq!(count(&recs[3]), 3, "100 / 50 nodes beside the case's own");
        assert_eq!(out["case.toml"], "id = \"x\"");
        assert_eq!(
            out["llm.ndjson"], "{\"request\": {}}\n",
            "not recordings: kept"
        );
        let filler_pod = &recs[0]["body"]["items"][1];
        let host = filler_pod["spec"]["nodeName"].as_str().expect("a node");
        assert!(
            recs[3]["body"]["items"]
                .as_array()
                .expect("nodes")
                .iter()
                .any(|n| n["metadata"]["name"] == host),
            "filler pods run on filler nodes"
        );
    }

    #[test]
    fn the_cases_own_objects_are_answered_by_selector_as_a_server_would() {
        let rec = |path: &str, items: Value| {
            json!({"integration": "kubernetes", "method": "GET", "path": path, "query": {},
                   "status": 200, "body": {"kind": "List", "metadata": {}, "items": items}})
            .to_string()
        };
        let lines_in = [
            rec(
                "/api/v1/namespaces/shop/pods",
                json!([{"metadata": {"name": "web-1", "labels": {"app": "web", "track": "stable"}}},
                       {"metadata": {"name": "web-c", "labels": {"app": "web", "track": "canary"}}}]),
            ),
            rec(
                "/apis/apps/v1/namespaces/shop/deployments",
                json!([{"metadata": {"name": "web"},
                        "spec": {"selector": {"matchLabels": {"app": "web"},
                                 "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}]}}}]),
            ),
            rec(
                "/api/v1/namespaces/shop/events",
                json!([{"involvedObject": {"name": "web-1"}, "type": "Warning", "reason": "BackOff"}]),
            ),
        ];
        let files = BTreeMap::from([("recordings.ndjson".to_string(), lines_in.join("\n"))]);
        let recs = lines(&inflate(&files, Filler::standard(1000)).expect("inflates"));
        let find = |k: &str, v: &str| {
            recs.iter()
                .find(|r| r["query"][k] == v)
                .unwrap_or_else(|| panic!("no answer for {k}={v}"))
        };
        let web = find("labelSelector", "app=web,track notin (canary)");
        assert_eq!(web["query"]["limit"], "500");
        assert_eq!(
            count(web),
            1,
            "only web-1: the canary and the filler are not selected"
        );
        assert_eq!(count(find("fieldSelector", "involvedObject.name=web-1")), 1);
        assert_eq!(count(find("fieldSelector", "involvedObject.name=web")), 0);
        assert_eq!(
            count(find("fieldSelector", "type=Warning")),
            1,
            "filler events are Normal"
        );
        // The whole namespace is still there, in pages, for any other request.
        let whole: usize = recs
            .iter()
            .filter(|r| {
                r["path"] == "/api/v1/namespaces/shop/pods"
                    && r["query"].get("labelSelector").is_none()
                    && r["query"].get("fieldSelector").is_none()
            })
            .map(count)
            .sum();
        assert_eq!(whole, 1002);
    }

    #[test]
    fn big_lists_are_recorded_in_pages_that_chain() {
        let filler = Filler {
            page: Some(40),
            keep_unpaged: true,
            ..Filler::standard(100)
        };
        let recs = lines(&inflate(&case(), filler).expect("inflates"));
        let shop: Vec<&Value> = recs
            .iter()
            .filter(|r| r["path"] == "/api/v1/namespaces/shop/pods")
            .filter(|r| r["query"].get("fieldSelector").is_none())
            .collect();
        // The unpaged answer, then pages of 40, 40 and 21.
        assert_eq!(shop.len(), 4);
        assert_eq!(count(shop[0]), 101);
        assert_eq!(shop[1]["query"], json!({"limit": "40"}));
        assert_eq!(shop[1]["body"]["metadata"]["continue"], "page-1");
        assert_eq!(shop[1]["body"]["metadata"]["remainingItemCount"], 61);
        assert_eq!(
            shop[2]["query"],
            json!({"limit": "40", "continue": "page-1"})
        );
        assert_eq!(count(shop[3]), 21);
        assert!(shop[3]["body"]["metadata"].get("continue").is_none());
        let total: usize = shop[1..].iter().map(|r| count(r)).sum();
        assert_eq!(total, 101);
        // Without the whole list, only the pages; a list that fits one page stays whole.
        let filler = Filler {
            page: Some(40),
            ..Filler::standard(100)
        };
        let recs = lines(&inflate(&case(), filler).expect("inflates"));
        let shop: Vec<&Value> = recs
            .iter()
            .filter(|r| r["path"] == "/api/v1/namespaces/shop/pods")
            .filter(|r| r["query"].get("fieldSelector").is_none())
            .collect();
        assert_eq!(shop.len(), 3);
        assert!(shop.iter().all(|r| r["query"]["limit"] == "40"));
        let nodes: Vec<&Value> = recs
            .iter()
            .filter(|r| r["path"] == "/api/v1/nodes")
            .collect();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0]["query"], json!({}));
    }
}
