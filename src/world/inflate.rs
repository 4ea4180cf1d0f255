//! Bigger worlds from small cases: a case directory's Kubernetes lists grown with healthy filler
//! (pods of other Deployments, normal events, nodes), the failure in it left as it was. The
//! scale benchmark and the tests that need a cluster of real size build their worlds with it.

use serde_json::{Value, json};
use std::collections::BTreeMap;

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
    let mut out = String::with_capacity(text.len());
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
        } else {
            push_line(&mut out, &rec)?;
        }
    }
    Ok(out)
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
        let mut query = serde_json::Map::new();
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
        assert_eq!(recs.len(), 5);
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
