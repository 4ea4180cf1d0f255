//! Loopback test doubles: fake Kubernetes, Loki and GitHub servers speaking the vendors' wire formats,
//! a fault server, and real Prometheus/Alertmanager processes started on free 127.0.0.1 ports.
#![allow(dead_code)]

pub mod postgres;
pub mod tmux;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Secrets planted in fake responses; none may survive into facts, evidence or recordings.
pub const CANARY_TOKEN: &str = "canary-token-7d1f9a2b44";
pub const CANARY_AWS: &str = "AKIAZZZZCANARY123456";
pub const CANARY_PASSWORD: &str = "canary-pw-5512aa";
pub const CANARY_JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5";
pub const ALL_CANARIES: [&str; 4] = [CANARY_TOKEN, CANARY_AWS, CANARY_PASSWORD, CANARY_JWT];

/// The built-in checkout case, as a `--case` argument, and the Alertmanager payload it is paged
/// with: what the serve tests deliver.
pub fn checkout_case() -> (String, Value) {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let payload: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("alert.json")).expect("alert"))
            .expect("payload");
    (case.to_string_lossy().to_string(), payload)
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// A server on loopback; stops when dropped.
pub struct Server {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn serve(router: Router) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Server {
        url: format!("http://{addr}"),
        task,
    }
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn query_map(uri: &Uri) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(q) = uri.query() {
        for (k, v) in url_pairs(q) {
            out.insert(k, v);
        }
    }
    out
}

fn url_pairs(q: &str) -> Vec<(String, String)> {
    let url = reqwest::Url::parse(&format!("http://x/?{q}")).expect("query");
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A Kubernetes `Status` object, as the API server returns for errors.
pub fn k8s_status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

/// The fake cluster's state: objects as raw JSON, the way the API server stores and returns them.
#[derive(Default)]
pub struct Cluster {
    pub pods: Vec<Value>,
    pub events: Vec<Value>,
    pub deployments: Vec<Value>,
    pub replicasets: Vec<Value>,
    pub nodes: Vec<Value>,
    /// (namespace, pod) -> log text.
    pub logs: BTreeMap<(String, String), String>,
    /// (namespace, pod) -> previous container's log text.
    pub previous_logs: BTreeMap<(String, String), String>,
    /// Bearer token the fake demands, if any.
    pub token: Option<String>,
    /// Names of deployments whose PATCH answers 403 / 409.
    pub forbidden: Vec<String>,
    pub conflict: Vec<String>,
    /// Every request seen: "METHOD path?query".
    pub seen: Vec<String>,
    /// Patches received: (content type, body).
    pub patches: Vec<(String, Value)>,
    /// Every request that is not a GET, as received.
    pub writes: Vec<Write>,
    /// `namespace/name` of pods whose eviction a PodDisruptionBudget refuses (429).
    pub pdb_blocked: Vec<String>,
    /// Whether the StatefulSet, DaemonSet, Job, CronJob and ControllerRevision lists answer
    /// (with `statefulsets` and `controllerrevisions`, and no others); else 404, as a server
    /// without those APIs.
    pub workload_apis: bool,
    /// Whether Services, Endpoints, Secrets, Ingresses, IngressClasses and NetworkPolicies
    /// answer (from the lists below); else 404, as a server without them.
    pub network_apis: bool,
    pub services: Vec<Value>,
    pub endpoints: Vec<Value>,
    pub ingresses: Vec<Value>,
    /// Cluster-scoped.
    pub ingress_classes: Vec<Value>,
    /// Sent whole (with their `data`) unless the request asks for metadata only.
    pub secrets: Vec<Value>,
    pub statefulsets: Vec<Value>,
    pub controllerrevisions: Vec<Value>,
}

/// One mutating request the fake received.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub method: String,
    pub path: String,
    /// The raw query string, if any.
    pub query: Option<String>,
    pub content_type: String,
    /// The body as JSON (`Null` when empty).
    pub body: Value,
}

fn meta_name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
fn meta_ns(v: &Value) -> &str {
    v.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn list(kind: &str, api_version: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": api_version, "kind": format!("{kind}List"),
           "metadata": {"resourceVersion": "100"}, "items": items})
}

/// A `labelSelector` as the API server reads it: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
/// `k in (a,b)`, `k notin (a,b)`, terms joined by commas outside the parentheses.
fn labels_match(v: &Value, selector: Option<&String>) -> bool {
    let Some(sel) = selector else { return true };
    let label = |k: &str| {
        v.pointer(&format!("/metadata/labels/{}", k.trim()))
            .and_then(Value::as_str)
    };
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in sel.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&sel[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&sel[start..]);
    terms.into_iter().map(str::trim).all(|term| {
        let set = |op: &str| {
            term.split_once(op).map(|(k, rest)| {
                let values: Vec<&str> = rest
                    .trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .split(',')
                    .map(str::trim)
                    .collect();
                (k, values)
            })
        };
        if let Some((k, values)) = set(" notin ") {
            label(k).is_none_or(|l| !values.contains(&l))
        } else if let Some((k, values)) = set(" in ") {
            label(k).is_some_and(|l| values.contains(&l))
        } else if let Some((k, want)) = term.split_once("!=") {
            label(k) != Some(want.trim())
        } else if let Some((k, want)) = term.split_once('=') {
            label(k) == Some(want.trim_start_matches('=').trim())
        } else if let Some(k) = term.strip_prefix('!') {
            label(k).is_none()
        } else {
            term.is_empty() || label(term).is_some()
        }
    })
}

/// The `key=value` terms of a `fieldSelector`.
fn field_terms(q: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    q.get("fieldSelector")
        .map(|f| {
            f.split(',')
                .filter_map(|t| t.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// RFC 7386 merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// RFC 6902, the `replace`/`add` operations kubectl's rollout undo uses.
fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    for op in ops.as_array().ok_or("json patch is not an array")? {
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or("op without path")?;
        let value = op.get("value").cloned().ok_or("op without value")?;
        match op.get("op").and_then(Value::as_str) {
            Some("replace") | Some("add") => {
                let slot = target.pointer_mut(path).ok_or(format!("no {path}"))?;
                *slot = value;
            }
            other => return Err(format!("unsupported op {other:?}")),
        }
    }
    Ok(())
}

/// RFC 6902-free strategic merge patch, as the API server applies it to the fields kubectl patches:
/// objects merge like a merge patch, and lists of objects merge element-wise by their `name` key.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else if let Some(slot) = t.get_mut(k) {
                    strategic_merge_patch(slot, v);
                } else {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
        (Value::Array(t), Value::Array(p))
            if p.iter()
                .all(|e| e.get("name").is_some_and(Value::is_string)) =>
        {
            for element in p {
                let name = element.get("name");
                match t.iter_mut().find(|e| e.get("name") == name) {
                    Some(existing) => strategic_merge_patch(existing, element),
                    None => t.push(element.clone()),
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// Applies a patch of the given content type; `Err` is the API server's 415/422 message.
fn apply_patch(target: &mut Value, content_type: &str, patch: &Value) -> Result<(), String> {
    match content_type {
        "application/merge-patch+json" => {
            merge_patch(target, patch);
            Ok(())
        }
        "application/strategic-merge-patch+json" => {
            strategic_merge_patch(target, patch);
            Ok(())
        }
        "application/json-patch+json" => json_patch(target, patch),
        other => Err(format!("unsupported content type {other:?}")),
    }
}

impl Cluster {
    /// `payments` plus what a node drain meets on `ip-10-0-1-42`: a DaemonSet pod, a mirror pod, a
    /// pod a PodDisruptionBudget protects, a bare pod, a finished bare pod, and a pod on another node.
    pub fn payments_with_node_workloads() -> Cluster {
        let mut c = Cluster::payments();
        let pod = |ns: &str, name: &str, node: &str, owner: Option<(&str, &str)>, phase: &str| {
            let mut meta = json!({"name": name, "namespace": ns, "uid": format!("uid-{name}"),
                                  "labels": {"app": name}});
            if let Some((kind, owner)) = owner {
                meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind, "name": owner,
                                                  "uid": format!("uid-{owner}"), "controller": true}]);
            }
            json!({"metadata": meta,
                   "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry/x:1"}]},
                   "status": {"phase": phase}})
        };
        c.pods.push(pod(
            "kube-system",
            "node-exporter-q8x2z",
            "ip-10-0-1-42",
            Some(("DaemonSet", "node-exporter")),
            "Running",
        ));
        let mut mirror = pod(
            "kube-system",
            "kube-proxy-ip-10-0-1-42",
            "ip-10-0-1-42",
            Some(("Node", "ip-10-0-1-42")),
            "Running",
        );
        mirror["metadata"]["annotations"] =
            json!({"kubernetes.io/config.mirror": "3f1c2d", "kubernetes.io/config.source": "file"});
        c.pods.push(mirror);
        c.pods.push(pod(
            "payments",
            "ledger-0",
            "ip-10-0-1-42",
            Some(("StatefulSet", "ledger")),
            "Running",
        ));
        c.pods.push(pod(
            "payments",
            "debug-shell",
            "ip-10-0-1-42",
            None,
            "Running",
        ));
        c.pods.push(pod(
            "payments",
            "migrate-once",
            "ip-10-0-1-42",
            None,
            "Succeeded",
        ));
        c.pods.push(pod(
            "payments",
            "ledger-1",
            "ip-10-0-2-17",
            Some(("StatefulSet", "ledger")),
            "Running",
        ));
        c.pdb_blocked.push("payments/ledger-0".into());
        c
    }

    /// A small `payments` namespace: one pod OOM-killed in a crash loop, one healthy, a deployment at
    /// revision 2 whose previous revision ran `v1`, a node, events and logs, with canary secrets planted.
    pub fn payments() -> Cluster {
        let pod = |name: &str, rs: &str, crash: bool| {
            let status = if crash {
                json!({"name": "api", "ready": false, "restartCount": 8, "image": "registry/payments-api:v2", "imageID": "",
                       "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
                       "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                                    "finishedAt": "2026-04-18T10:45:30Z"}}})
            } else {
                json!({"name": "api", "ready": true, "restartCount": 0, "image": "registry/payments-api:v2", "imageID": "",
                       "state": {"running": {"startedAt": "2026-04-18T09:00:00Z"}}})
            };
            json!({
                "metadata": {"name": name, "namespace": "payments", "uid": format!("uid-{name}"),
                             "creationTimestamp": "2026-04-18T09:00:00Z",
                             "labels": {"app": "payments-api", "pod-template-hash": rs},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                  "name": format!("payments-api-{rs}"), "uid": "rs", "controller": true}]},
                "spec": {"nodeName": "ip-10-0-1-42", "containers": [{
                    "name": "api", "image": "registry/payments-api:v2",
                    "env": [{"name": "DB_DSN", "value": format!("postgres://app:{CANARY_PASSWORD}@db:5432/pay")},
                            {"name": "AWS_ACCESS_KEY_ID", "value": CANARY_AWS}],
                    "resources": {"limits": {"memory": "512Mi", "cpu": "500m"}, "requests": {"memory": "256Mi", "cpu": "250m"}},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}
                }]},
                "status": {"phase": "Running",
                           "conditions": [{"type": "Ready", "status": if crash {"False"} else {"True"},
                                           "reason": if crash {"ContainersNotReady"} else {""},
                                           "message": if crash {"containers with unready status: [api]"} else {""}}],
                           "containerStatuses": [status]}
            })
        };
        let template = |image: &str, hash: &str| {
            json!({"metadata": {"labels": {"app": "payments-api", "pod-template-hash": hash}},
                   "spec": {"containers": [{"name": "api", "image": image}]}})
        };
        let rs = |hash: &str, revision: &str, image: &str, replicas: i64| {
            json!({"metadata": {"name": format!("payments-api-{hash}"), "namespace": "payments",
                                "annotations": {"deployment.kubernetes.io/revision": revision},
                                "labels": {"app": "payments-api"},
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "payments-api", "uid": "d"}]},
                   "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "payments-api"}},
                            "template": template(image, hash)},
                   "status": {"replicas": replicas, "readyReplicas": replicas}})
        };
        let event = |name: &str, obj: &str, reason: &str, kind: &str, message: String| {
            json!({"metadata": {"name": name, "namespace": "payments"},
                   "involvedObject": {"kind": "Pod", "name": obj, "namespace": "payments"},
                   "reason": reason, "message": message, "type": kind, "count": 8,
                   "firstTimestamp": "2026-04-18T10:20:00Z", "lastTimestamp": "2026-04-18T10:45:30Z"})
        };
        let mut c = Cluster {
            pods: vec![
                pod("payments-api-7f9dd8b6c4-x7gr9", "7f9dd8b6c4", true),
                pod("payments-api-7f9dd8b6c4-k2m4p", "7f9dd8b6c4", false),
            ],
            events: vec![
                event(
                    "e1",
                    "payments-api-7f9dd8b6c4-x7gr9",
                    "BackOff",
                    "Warning",
                    "Back-off restarting failed container api".into(),
                ),
                event(
                    "e2",
                    "payments-api-7f9dd8b6c4-x7gr9",
                    "Killing",
                    "Normal",
                    format!("Container api exceeded memory; auth header was Bearer {CANARY_TOKEN}"),
                ),
                event(
                    "e3",
                    "payments-api-7f9dd8b6c4-k2m4p",
                    "Pulled",
                    "Normal",
                    "Container image already present".into(),
                ),
            ],
            deployments: vec![json!({
                "metadata": {"name": "payments-api", "namespace": "payments", "generation": 4,
                             "annotations": {"deployment.kubernetes.io/revision": "2"},
                             "labels": {"app": "payments-api"}, "creationTimestamp": "2026-04-01T00:00:00Z"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "payments-api"}},
                         "template": template("registry/payments-api:v2", "7f9dd8b6c4")},
                "status": {"observedGeneration": 4, "replicas": 2, "readyReplicas": 1, "updatedReplicas": 2,
                           "availableReplicas": 1, "unavailableReplicas": 1,
                           "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
                                           "message": "Deployment does not have minimum availability."}]}
            })],
            replicasets: vec![
                rs("6c4ab5d9c", "1", "registry/payments-api:v1", 0),
                rs("7f9dd8b6c4", "2", "registry/payments-api:v2", 2),
            ],
            nodes: vec![json!({
                "metadata": {"name": "ip-10-0-1-42", "labels": {"kubernetes.io/hostname": "ip-10-0-1-42"}},
                "spec": {"taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
                                          {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"}],
                           "allocatable": {"cpu": "3920m", "memory": "15Gi"}}
            })],
            ..Cluster::default()
        };
        c.logs.insert(
            ("payments".into(), "payments-api-7f9dd8b6c4-x7gr9".into()),
            format!(
                "2026-04-18T10:44:58Z INFO startup complete memory_limit=512Mi\n\
                 2026-04-18T10:45:02Z INFO connecting with token={CANARY_TOKEN}\n\
                 2026-04-18T10:45:20Z WARN heap at 497Mi of 512Mi\n\
                 2026-04-18T10:45:29Z ERROR session jwt {CANARY_JWT} rejected\n"
            ),
        );
        c.previous_logs.insert(
            ("payments".into(), "payments-api-7f9dd8b6c4-x7gr9".into()),
            "2026-04-18T10:40:00Z ERROR java.lang.OutOfMemoryError: Java heap space\n".into(),
        );
        c
    }

    fn handle(&mut self, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
        self.seen.push(format!(
            "{method} {}",
            uri.path_and_query().map(|p| p.as_str()).unwrap_or("")
        ));
        if let Some(token) = &self.token {
            let want = format!("Bearer {token}");
            if headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                != Some(want.as_str())
            {
                return json_response(
                    StatusCode::UNAUTHORIZED,
                    &k8s_status(401, "Unauthorized", "Unauthorized"),
                );
            }
        }
        // What `doctor` asks first: the server's version, then what this account may do (all).
        if uri.path() == "/version" {
            return json_response(
                StatusCode::OK,
                &json!({"major": "1", "minor": "30", "gitVersion": "v1.30.2"}),
            );
        }
        if uri.path() == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
            let mut review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            review["status"] = json!({"allowed": true});
            return json_response(StatusCode::CREATED, &review);
        }
        let ctype = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if method != Method::GET {
            self.writes.push(Write {
                method: method.to_string(),
                path: uri.path().to_string(),
                query: uri.query().map(str::to_string),
                content_type: ctype.clone(),
                body: serde_json::from_slice(body).unwrap_or(Value::Null),
            });
        }
        let q = query_map(uri);
        let on_node = |p: &Value| match q
            .get("fieldSelector")
            .and_then(|f| f.strip_prefix("spec.nodeName="))
        {
            Some(node) => p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node),
            None => true,
        };
        let parts: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
        let not_found = |what: &str, name: &str| {
            json_response(
                StatusCode::NOT_FOUND,
                &k8s_status(404, "NotFound", &format!("{what} \"{name}\" not found")),
            )
        };
        match (method.as_str(), parts.as_slice()) {
            ("GET", ["api", "v1", "pods"]) => {
                let items = self
                    .pods
                    .iter()
                    .filter(|p| labels_match(p, q.get("labelSelector")) && on_node(p))
                    .cloned()
                    .collect();
                json_response(StatusCode::OK, &list("Pod", "v1", items))
            }
            ("GET", ["api", "v1", "namespaces", ns, "pods"]) => {
                let items = self
                    .pods
                    .iter()
                    .filter(|p| {
                        meta_ns(p) == *ns && labels_match(p, q.get("labelSelector")) && on_node(p)
                    })
                    .cloned()
                    .collect();
                json_response(StatusCode::OK, &list("Pod", "v1", items))
            }
            ("GET", ["api", "v1", "namespaces", ns, "pods", name]) => {
                match self
                    .pods
                    .iter()
                    .find(|p| meta_ns(p) == *ns && meta_name(p) == *name)
                {
                    Some(p) => {
                        let mut p = p.clone();
                        p["apiVersion"] = json!("v1");
                        p["kind"] = json!("Pod");
                        json_response(StatusCode::OK, &p)
                    }
                    None => not_found("pods", name),
                }
            }
            ("DELETE", ["api", "v1", "namespaces", ns, "pods", name]) => {
                match self
                    .pods
                    .iter()
                    .position(|p| meta_ns(p) == *ns && meta_name(p) == *name)
                {
                    Some(i) => {
                        let p = self.pods.remove(i);
                        json_response(StatusCode::OK, &p)
                    }
                    None => not_found("pods", name),
                }
            }
            ("GET", ["api", "v1", "namespaces", ns, "pods", name, "log"]) => {
                let key = (ns.to_string(), name.to_string());
                let src = if q.get("previous").map(String::as_str) == Some("true") {
                    &self.previous_logs
                } else {
                    &self.logs
                };
                match src.get(&key) {
                    Some(text) => {
                        let lines: Vec<&str> = text.lines().collect();
                        let tail = q
                            .get("tailLines")
                            .and_then(|t| t.parse::<usize>().ok())
                            .unwrap_or(lines.len());
                        let mut out = lines[lines.len().saturating_sub(tail)..].join("\n");
                        out.push('\n');
                        (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], out)
                            .into_response()
                    }
                    None => not_found("pods", name),
                }
            }
            ("GET", ["api", "v1", "events"])
            | ("GET", ["api", "v1", "namespaces", _, "events"]) => {
                let ns = if parts.len() == 5 {
                    Some(parts[3])
                } else {
                    None
                };
                let fields = field_terms(&q);
                let items = self
                    .events
                    .iter()
                    .filter(|e| ns.is_none_or(|ns| meta_ns(e) == ns))
                    .filter(|e| {
                        fields.iter().all(|(k, want)| match k.as_str() {
                            "involvedObject.name" => {
                                e.pointer("/involvedObject/name").and_then(Value::as_str)
                                    == Some(want.as_str())
                            }
                            "type" => e.get("type").and_then(Value::as_str) == Some(want.as_str()),
                            _ => false,
                        })
                    })
                    .cloned()
                    .collect();
                json_response(StatusCode::OK, &list("Event", "v1", items))
            }
            ("GET", ["apis", "apps" | "batch", "v1", "namespaces", ns, kind])
                if self.workload_apis
                    && [
                        "statefulsets",
                        "daemonsets",
                        "jobs",
                        "cronjobs",
                        "controllerrevisions",
                    ]
                    .contains(kind) =>
            {
                let (kind, held) = match *kind {
                    "statefulsets" => ("StatefulSet", &self.statefulsets),
                    "controllerrevisions" => ("ControllerRevision", &self.controllerrevisions),
                    "daemonsets" => ("DaemonSet", &Vec::new()),
                    "jobs" => ("Job", &Vec::new()),
                    _ => ("CronJob", &Vec::new()),
                };
                let items = held.iter().filter(|o| meta_ns(o) == *ns).cloned().collect();
                json_response(StatusCode::OK, &list(kind, "v1", items))
            }
            ("GET", ["api", "v1", "namespaces", ns, kind])
                if self.network_apis && ["services", "endpoints", "secrets"].contains(kind) =>
            {
                let (kind, all) = match *kind {
                    "services" => ("Service", &self.services),
                    "endpoints" => ("Endpoints", &self.endpoints),
                    _ => ("Secret", &self.secrets),
                };
                let metadata_only = headers
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|a| a.contains("as=PartialObjectMetadataList"));
                let items = all
                    .iter()
                    .filter(|o| meta_ns(o) == *ns)
                    .map(|o| {
                        if metadata_only {
                            json!({"metadata": o["metadata"].clone()})
                        } else {
                            o.clone()
                        }
                    })
                    .collect();
                json_response(StatusCode::OK, &list(kind, "v1", items))
            }
            ("GET", ["apis", "networking.k8s.io", "v1", "ingressclasses"]) if self.network_apis => {
                let items = self.ingress_classes.clone();
                json_response(
                    StatusCode::OK,
                    &list("IngressClass", "networking.k8s.io/v1", items),
                )
            }
            ("GET", ["apis", "networking.k8s.io", "v1", "ingresses"]) if self.network_apis => {
                let items = self.ingresses.clone();
                json_response(
                    StatusCode::OK,
                    &list("Ingress", "networking.k8s.io/v1", items),
                )
            }
            ("GET", ["apis", "networking.k8s.io", "v1", "namespaces", ns, kind])
                if self.network_apis && ["ingresses", "networkpolicies"].contains(kind) =>
            {
                let (kind, items) = if *kind == "ingresses" {
                    let items = self
                        .ingresses
                        .iter()
                        .filter(|o| meta_ns(o) == *ns)
                        .cloned()
                        .collect();
                    ("Ingress", items)
                } else {
                    ("NetworkPolicy", Vec::new())
                };
                json_response(StatusCode::OK, &list(kind, "networking.k8s.io/v1", items))
            }
            ("GET", ["apis", "apps", "v1", "deployments"]) => {
                let items = self.deployments.to_vec();
                json_response(StatusCode::OK, &list("Deployment", "apps/v1", items))
            }
            ("GET", ["apis", "apps", "v1", "namespaces", ns, "deployments"]) => {
                let items = self
                    .deployments
                    .iter()
                    .filter(|d| meta_ns(d) == *ns)
                    .cloned()
                    .collect();
                json_response(StatusCode::OK, &list("Deployment", "apps/v1", items))
            }
            ("GET", ["apis", "apps", "v1", "namespaces", ns, "replicasets"]) => {
                let items = self
                    .replicasets
                    .iter()
                    .filter(|d| meta_ns(d) == *ns)
                    .cloned()
                    .collect();
                json_response(StatusCode::OK, &list("ReplicaSet", "apps/v1", items))
            }
            ("GET", ["apis", "apps", "v1", "namespaces", ns, "deployments", name]) => {
                match self
                    .deployments
                    .iter()
                    .find(|d| meta_ns(d) == *ns && meta_name(d) == *name)
                {
                    Some(d) => json_response(StatusCode::OK, d),
                    None => not_found("deployments.apps", name),
                }
            }
            ("PATCH", ["apis", "apps", "v1", "namespaces", ns, "deployments", name]) => {
                if self.forbidden.iter().any(|f| f == name) {
                    let msg = format!(
                        "deployments.apps \"{name}\" is forbidden: User \"sitrep\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"{ns}\""
                    );
                    return json_response(
                        StatusCode::FORBIDDEN,
                        &k8s_status(403, "Forbidden", &msg),
                    );
                }
                if self.conflict.iter().any(|f| f == name) {
                    let msg = format!(
                        "Operation cannot be fulfilled on deployments.apps \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
                    );
                    return json_response(StatusCode::CONFLICT, &k8s_status(409, "Conflict", &msg));
                }
                let Ok(patch) = serde_json::from_slice::<Value>(body) else {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &k8s_status(400, "BadRequest", "patch is not JSON"),
                    );
                };
                self.patches.push((ctype.clone(), patch.clone()));
                let Some(d) = self
                    .deployments
                    .iter_mut()
                    .find(|d| meta_ns(d) == *ns && meta_name(d) == *name)
                else {
                    return not_found("deployments.apps", name);
                };
                let result = apply_patch(d, &ctype, &patch);
                match result {
                    Ok(()) => {
                        let generation = d
                            .pointer("/metadata/generation")
                            .and_then(Value::as_i64)
                            .unwrap_or(0)
                            + 1;
                        d["metadata"]["generation"] = json!(generation);
                        json_response(StatusCode::OK, d)
                    }
                    Err(m) => json_response(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        &k8s_status(422, "Invalid", &m),
                    ),
                }
            }
            ("GET", ["api", "v1", "nodes"]) => {
                json_response(StatusCode::OK, &list("Node", "v1", self.nodes.clone()))
            }
            ("GET", ["api", "v1", "nodes", name]) => {
                match self.nodes.iter().find(|n| meta_name(n) == *name) {
                    Some(n) => json_response(StatusCode::OK, n),
                    None => not_found("nodes", name),
                }
            }
            ("PATCH", ["api", "v1", "nodes", name]) => {
                let Ok(patch) = serde_json::from_slice::<Value>(body) else {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &k8s_status(400, "BadRequest", "patch is not JSON"),
                    );
                };
                let Some(n) = self.nodes.iter_mut().find(|n| meta_name(n) == *name) else {
                    return not_found("nodes", name);
                };
                match apply_patch(n, &ctype, &patch) {
                    Ok(()) => json_response(StatusCode::OK, n),
                    Err(m) => json_response(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        &k8s_status(415, "UnsupportedMediaType", &m),
                    ),
                }
            }
            ("POST", ["api", "v1", "namespaces", ns, "pods", name, "eviction"]) => {
                let eviction: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let well_formed = eviction["apiVersion"] == "policy/v1"
                    && eviction["kind"] == "Eviction"
                    && eviction.pointer("/metadata/name").and_then(Value::as_str) == Some(*name)
                    && eviction
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        == Some(*ns);
                if ctype != "application/json" || !well_formed {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &k8s_status(400, "BadRequest", "not a policy/v1 Eviction for this pod"),
                    );
                }
                let Some(i) = self
                    .pods
                    .iter()
                    .position(|p| meta_ns(p) == *ns && meta_name(p) == *name)
                else {
                    return not_found("pods", name);
                };
                if self
                    .pdb_blocked
                    .iter()
                    .any(|b| *b == format!("{ns}/{name}"))
                {
                    let mut status = k8s_status(
                        429,
                        "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    );
                    status["details"] = json!({"causes": [{"reason": "DisruptionBudget",
                        "message": "The disruption budget ledger-pdb needs 2 healthy pods and has 2 currently"}]});
                    return json_response(StatusCode::TOO_MANY_REQUESTS, &status);
                }
                self.pods.remove(i);
                json_response(
                    StatusCode::CREATED,
                    &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
                )
            }
            _ => json_response(
                StatusCode::NOT_FOUND,
                &k8s_status(
                    404,
                    "NotFound",
                    &format!(
                        "the server could not find the requested resource ({method} {})",
                        uri.path()
                    ),
                ),
            ),
        }
    }
}

/// A fake Kubernetes API server over `cluster`.
pub async fn kubernetes(cluster: Arc<Mutex<Cluster>>) -> Server {
    let router = Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let cluster = cluster.clone();
            async move {
                match cluster.lock() {
                    Ok(mut c) => c.handle(&method, &uri, &headers, &body),
                    Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }
        },
    );
    serve(router).await
}

// ---------------------------------------------------------------------------------------------
// Loki

/// A fake Loki: `query_range` answers streams; the last query's parameters are kept for assertions.
pub async fn loki(seen: Arc<Mutex<Vec<BTreeMap<String, String>>>>) -> Server {
    let router = Router::new().fallback(move |uri: Uri| {
        let seen = seen.clone();
        async move {
            if uri.path() != "/loki/api/v1/query_range" {
                return json_response(StatusCode::NOT_FOUND, &json!({"message": "not found"}));
            }
            let q = query_map(&uri);
            if let Ok(mut s) = seen.lock() {
                s.push(q.clone());
            }
            let Some(query) = q.get("query") else {
                return (StatusCode::BAD_REQUEST, "parse error: query is required").into_response();
            };
            let v = json!({"status": "success", "data": {"resultType": "streams", "result": [
                {"stream": {"namespace": "payments", "app": "payments-api", "level": "error"},
                 "values": [["1776509129000000000", format!("ERROR OOM while processing batch; db password={CANARY_PASSWORD}")],
                            ["1776509100000000000", "ERROR heap usage 98%".to_string()]]},
                {"stream": {"namespace": "payments", "app": "payments-api", "level": "info"},
                 "values": [["1776509110000000000", format!("INFO query was {query}")],
                            ["1776509090000000000", format!("INFO aws key {CANARY_AWS} loaded")]]}
            ]}, "stats": {}});
            json_response(StatusCode::OK, &v)
        }
    });
    serve(router).await
}

// ---------------------------------------------------------------------------------------------
// GitHub

/// GitHub's state for the fake: the base branch head, and what was created.
#[derive(Default)]
pub struct Repo {
    pub head: String,
    pub created_commits: Vec<Value>,
    pub created_refs: Vec<Value>,
    pub created_pulls: Vec<Value>,
    pub token: Option<String>,
}

pub const MERGE_SHA: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
pub const PARENT_SHA: &str = "0000111122223333444455556666777788889999";

/// A fake GitHub REST API for `acme/payments`.
pub async fn github(repo: Arc<Mutex<Repo>>) -> Server {
    let router = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let repo = repo.clone();
        async move {
            let Ok(mut r) = repo.lock() else {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            };
            if let Some(token) = &r.token {
                let want = format!("Bearer {token}");
                if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(want.as_str()) {
                    return json_response(StatusCode::UNAUTHORIZED, &json!({"message": "Bad credentials"}));
                }
            }
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let path = uri.path().to_string();
            let Some(rest) = path.strip_prefix("/repos/acme/payments") else {
                return json_response(StatusCode::NOT_FOUND, &json!({"message": "Not Found"}));
            };
            match (method.as_str(), rest) {
                ("GET", "/deployments") => json_response(StatusCode::OK, &json!([
                    {"id": 11, "sha": MERGE_SHA, "ref": "main", "environment": "production", "description": "",
                     "created_at": "2026-04-18T10:15:00Z", "creator": {"login": "deploy-bot"},
                     "url": "https://api.github.com/repos/acme/payments/deployments/11"},
                    {"id": 10, "sha": PARENT_SHA, "ref": "main", "environment": "production", "description": "weekly release",
                     "created_at": "2026-04-10T10:00:00Z", "creator": {"login": "deploy-bot"}}
                ])),
                ("GET", "/commits") => json_response(StatusCode::OK, &json!([
                    {"sha": MERGE_SHA, "html_url": "https://github.com/acme/payments/commit/a1b2c3d",
                     "commit": {"message": format!("Raise batch size (#42)\n\nuses token={CANARY_TOKEN}"),
                                "author": {"name": "Dana", "date": "2026-04-18T10:05:00Z"},
                                "committer": {"name": "GitHub", "date": "2026-04-18T10:05:00Z"}},
                     "author": {"login": "dana"}}
                ])),
                ("GET", "/pulls") => json_response(StatusCode::OK, &json!([
                    {"number": 42, "title": "Raise batch size", "merged_at": "2026-04-18T10:05:00Z",
                     "html_url": "https://github.com/acme/payments/pull/42", "user": {"login": "dana"},
                     "merge_commit_sha": MERGE_SHA, "base": {"ref": "main"}},
                    {"number": 41, "title": "Closed without merge", "merged_at": null, "user": {"login": "eve"}}
                ])),
                ("GET", "/pulls/42") => json_response(StatusCode::OK, &json!(
                    {"number": 42, "title": "Raise batch size", "merged_at": "2026-04-18T10:05:00Z",
                     "merge_commit_sha": MERGE_SHA, "base": {"ref": "main"}})),
                ("GET", "/git/ref/heads/main") => {
                    json_response(StatusCode::OK, &json!({"ref": "refs/heads/main", "object": {"sha": r.head, "type": "commit"}}))
                }
                ("GET", p) if p.starts_with("/git/commits/") => {
                    let sha = p.trim_start_matches("/git/commits/");
                    if sha == MERGE_SHA {
                        json_response(StatusCode::OK, &json!({"sha": MERGE_SHA, "tree": {"sha": "tree-merge"}, "parents": [{"sha": PARENT_SHA}]}))
                    } else if sha == PARENT_SHA {
                        json_response(StatusCode::OK, &json!({"sha": PARENT_SHA, "tree": {"sha": "tree-parent"}, "parents": []}))
                    } else {
                        json_response(StatusCode::NOT_FOUND, &json!({"message": "Not Found"}))
                    }
                }
                ("POST", "/git/commits") => {
                    r.created_commits.push(body);
                    json_response(StatusCode::CREATED, &json!({"sha": "feedfacefeedfacefeedfacefeedfacefeedface"}))
                }
                ("POST", "/git/refs") => {
                    r.created_refs.push(body.clone());
                    json_response(StatusCode::CREATED, &json!({"ref": body.get("ref"), "object": {"sha": body.get("sha")}}))
                }
                ("POST", "/pulls") => {
                    r.created_pulls.push(body);
                    json_response(StatusCode::CREATED, &json!({"number": 43, "html_url": "https://github.com/acme/payments/pull/43"}))
                }
                _ => json_response(StatusCode::NOT_FOUND, &json!({"message": "Not Found"})),
            }
        }
    });
    serve(router).await
}

// ---------------------------------------------------------------------------------------------
// Faults

/// A server that misbehaves by path: `/slow` (30 s), `/500`, `/malformed`, `/huge` (50 MB, chunked),
/// `/huge-declared` (50 MB with Content-Length).
pub async fn faults() -> Server {
    const MB: usize = 1 << 20;
    let router = Router::new().fallback(|uri: Uri| async move {
        // Matched by prefix, so a client's base URL can point at one fault and keep its own API path.
        let path = uri.path();
        let fault = ["/slow", "/500", "/malformed", "/huge-declared", "/huge"]
            .into_iter()
            .find(|f| path.starts_with(f))
            .unwrap_or("");
        match fault {
            "/slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                (StatusCode::OK, "late").into_response()
            }
            "/500" => json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"status": "error", "error": "internal failure in storage"}),
            ),
            "/malformed" => (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                "{\"status\": \"success\", \"data\": {\"result",
            )
                .into_response(),
            "/huge" => {
                let chunks = futures::stream::iter(
                    (0..50).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b'a'; MB]))),
                );
                (StatusCode::OK, Body::from_stream(chunks)).into_response()
            }
            "/huge-declared" => (StatusCode::OK, vec![b'a'; 50 * MB]).into_response(),
            _ => (StatusCode::NOT_FOUND, "no").into_response(),
        }
    });
    serve(router).await
}

// ---------------------------------------------------------------------------------------------
// Real Prometheus and Alertmanager

/// A child process killed (and its scratch directory removed) on drop.
pub struct Proc {
    pub url: String,
    child: Child,
    pub dir: tempfile::TempDir,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Stops the process now (the round-trip test proves replay needs nothing running).
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(bin))
            .find(|p| p.is_file())
    })
}

/// Whether the real Prometheus/Alertmanager binaries are installed; prints why a test skips if not.
pub fn have_binaries(bins: &[&str]) -> bool {
    let missing: Vec<&str> = bins
        .iter()
        .copied()
        .filter(|b| which(b).is_none())
        .collect();
    if missing.is_empty() {
        true
    } else {
        eprintln!(
            "SKIP: {} not installed (apt-get install -y prometheus prometheus-alertmanager)",
            missing.join(", ")
        );
        false
    }
}

async fn wait_ready(url: &str, child: &mut Child, what: &str) -> Result<(), String> {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} exited early: {status}"));
        }
        if let Ok(r) = client.get(format!("{url}/-/ready")).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{what} not ready within 30s"))
}

/// The known metric history: `http_errors_ratio{service="payments-api"}` at 0.01 every minute, jumping
/// to 0.25 for the last ten minutes, ending at `end` (unix seconds, minute-aligned).
pub fn metric_history(end: i64) -> (String, Vec<(i64, f64)>) {
    let mut text = String::from(
        "# HELP http_errors_ratio share of failing requests\n# TYPE http_errors_ratio gauge\n",
    );
    let mut points = Vec::new();
    for i in (0..=60).rev() {
        let t = end - i * 60;
        let v = if i <= 10 { 0.25 } else { 0.01 };
        text.push_str(&format!(
            "http_errors_ratio{{service=\"payments-api\",namespace=\"payments\"}} {v} {t}\n"
        ));
        points.push((t, v));
    }
    text.push_str("# EOF\n");
    (text, points)
}

/// Starts a real Prometheus on a free port over a TSDB made from `openmetrics` by promtool, with
/// `rules` (a rule file's YAML) loaded.
pub async fn prometheus(openmetrics: &str, rules: &str) -> Result<Proc, String> {
    prometheus_alerting(openmetrics, rules, None).await
}

/// As [`prometheus`], sending its firing alerts to the Alertmanager at `alertmanager` (a URL), and
/// re-sending them every second so a receiver sees repeated deliveries.
pub async fn prometheus_alerting(
    openmetrics: &str,
    rules: &str,
    alertmanager: Option<&str>,
) -> Result<Proc, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("data");
    let om = dir.path().join("history.om");
    std::fs::write(&om, openmetrics).map_err(|e| e.to_string())?;
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om)
        .arg(&data)
        .output()
        .map_err(|e| format!("promtool: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "promtool failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rules_path = dir.path().join("rules.yml");
    std::fs::write(&rules_path, rules).map_err(|e| e.to_string())?;
    let config = dir.path().join("prometheus.yml");
    let mut text = format!(
        "global:\n  evaluation_interval: 1s\nrule_files:\n  - {}\n",
        rules_path.display()
    );
    if let Some(am) = alertmanager {
        let target = am.trim_start_matches("http://");
        text.push_str(&format!(
            "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['{target}']\n"
        ));
    }
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = Command::new("prometheus")
        .arg("--rules.alert.resend-delay=1s")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--storage.tsdb.retention.time=3650d")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("prometheus: {e}"))?;
    wait_ready(&url, &mut child, "prometheus").await?;
    Ok(Proc { url, child, dir })
}

/// Starts a real Alertmanager on a free port, clustering off.
pub async fn alertmanager() -> Result<Proc, String> {
    alertmanager_with("route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n").await
}

/// An Alertmanager configuration that sends every group, quickly and repeatedly, to a webhook
/// receiver at `url` (with `bearer` as its token, when given).
pub fn webhook_config(url: &str, bearer: Option<&str>) -> String {
    let auth = bearer
        .map(|t| {
            format!(
                "        http_config:\n          authorization:\n            credentials: '{t}'\n"
            )
        })
        .unwrap_or_default();
    format!(
        "route:\n  receiver: sitrep\n  group_by: ['alertname']\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 2s\n\
receivers:\n  - name: sitrep\n    webhook_configs:\n      - url: '{url}'\n        send_resolved: true\n{auth}"
    )
}

/// Starts a real Alertmanager on a free port with `config` (its YAML), clustering off.
pub async fn alertmanager_with(config_yaml: &str) -> Result<Proc, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let config = dir.path().join("alertmanager.yml");
    std::fs::write(&config, config_yaml).map_err(|e| e.to_string())?;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = Command::new("prometheus-alertmanager")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--cluster.listen-address=")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("alertmanager: {e}"))?;
    wait_ready(&url, &mut child, "alertmanager").await?;
    Ok(Proc { url, child, dir })
}

/// Recursively lists every string in a JSON value (for canary checks).
pub fn all_text(v: &Value) -> String {
    v.to_string()
}

/// Reads a file to string, or empty.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Replays one recording through the client that would have made it, so the production parser reads it.
/// Returns how many facts it produced.
pub async fn exercise(
    world: &sitrep::world::World,
    rec: &sitrep::integrations::Recording,
) -> Result<usize, String> {
    use chrono::Duration as D;
    let now = world.now();
    let parts: Vec<&str> = rec.path.trim_matches('/').split('/').collect();
    let err = |e: sitrep::integrations::IntegrationError| e.to_string();
    let k = world.kubernetes();
    let n = match (rec.integration.as_str(), parts.as_slice()) {
        ("kubernetes", ["api", "v1", "pods"]) => k.list_pods(None, None).await.map_err(err)?.len(),
        ("kubernetes", ["api", "v1", "namespaces", ns, "pods"]) => {
            k.list_pods(*ns, None).await.map_err(err)?.len()
        }
        ("kubernetes", ["api", "v1", "namespaces", ns, "pods", name]) => {
            let p = k.get_pod(ns, name).await.map_err(err)?;
            if p.name != *name {
                return Err(format!("pod {name} parsed as {}", p.name));
            }
            1
        }
        ("kubernetes", ["api", "v1", "namespaces", ns, "pods", name, "log"]) => k
            .pod_logs(ns, name, None, false, None)
            .await
            .map_err(err)?
            .len(),
        ("kubernetes", ["api", "v1", "events"]) => {
            k.events(None, None, None).await.map_err(err)?.len()
        }
        ("kubernetes", ["api", "v1", "namespaces", ns, "events"]) => {
            k.events(*ns, None, None).await.map_err(err)?.len()
        }
        ("kubernetes", ["apis", "apps", "v1", "namespaces", ns, "deployments"]) => {
            k.deployments(*ns).await.map_err(err)?.len()
        }
        ("kubernetes", ["apis", "apps", "v1", "namespaces", ns, "deployments", name]) => {
            k.get_deployment(ns, name).await.map_err(err).map(|_| 1)?
        }
        ("kubernetes", ["apis", "apps", "v1", "namespaces", ns, "replicasets"]) => {
            k.replica_sets(*ns).await.map_err(err)?.len()
        }
        ("kubernetes", ["api", "v1", "nodes"]) => k.nodes().await.map_err(err)?.len(),
        (
            "kubernetes",
            [
                "apis",
                "apps",
                "v1",
                "namespaces",
                ns,
                "controllerrevisions",
            ],
        ) => k.controller_revisions(*ns).await.map_err(err)?.len(),
        ("kubernetes", ["apis", "apps", "v1", "namespaces", ns, "statefulsets"]) => {
            k.statefulsets(*ns).await.map_err(err)?.len()
        }
        ("kubernetes", ["apis", "apps", "v1", "namespaces", ns, "daemonsets"]) => {
            k.daemonsets(*ns).await.map_err(err)?.len()
        }
        ("kubernetes", ["apis", "batch", "v1", "namespaces", ns, "jobs"]) => {
            k.jobs(*ns).await.map_err(err)?.len()
        }
        ("kubernetes", ["apis", "batch", "v1", "namespaces", ns, "cronjobs"]) => {
            k.cronjobs(*ns).await.map_err(err)?.len()
        }
        ("loki", ["loki", "api", "v1", "query_range"]) => {
            let q = rec
                .query
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            world
                .loki()
                .query_range(
                    q,
                    now - D::hours(1),
                    now,
                    5000,
                    sitrep::integrations::Direction::Backward,
                )
                .await
                .map_err(err)?
                .len()
        }
        ("prometheus", ["api", "v1", "rules"]) => {
            world.prometheus().rules().await.map_err(err)?.len()
        }
        ("prometheus", ["api", "v1", "alerts"]) => {
            world.prometheus().alerts().await.map_err(err)?.len()
        }
        ("prometheus", ["api", "v1", "query_range"]) => {
            let q = rec
                .query
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or("up");
            world
                .prometheus()
                .query_range(q, now - D::hours(1), now, 60)
                .await
                .map_err(err)?
                .len()
        }
        ("prometheus", ["api", "v1", "query"]) => {
            let q = rec
                .query
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or("up");
            world.prometheus().query(q, now).await.map_err(err)?.len()
        }
        _ => {
            return Err(format!(
                "no client reads {} {} {}",
                rec.integration, rec.method, rec.path
            ));
        }
    };
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// `sitrep serve`, the real binary

/// A running `sitrep serve`; killed on drop.
pub struct Served {
    pub url: String,
    pub child: Child,
    pub sessions: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `sitrep serve` on a free loopback port and waits until it answers.
pub async fn sitrep_serve(
    port: u16,
    dir: &Path,
    config: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Served {
    let port = if port == 0 { free_port() } else { port };
    let sessions = dir.join("sessions");
    let config_path = dir.join("config.toml");
    std::fs::write(&config_path, config).expect("config");
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitrep"));
    cmd.args(["serve", "--listen", &listen, "--sessions-dir"])
        .arg(&sessions)
        .args(extra)
        .env("SITREP_CONFIG", &config_path)
        .env("SITREP_DATA_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn sitrep serve");
    let url = format!("http://{listen}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("sitrep serve exited early ({status}): {err}");
        }
        if tokio::net::TcpStream::connect(&listen).await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "sitrep serve never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Served {
        url,
        child,
        sessions,
    }
}

pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "ndjson"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Waits (up to 20 s) until `dir` holds `n` session files.
pub async fn wait_for_sessions(dir: &Path, n: usize) -> Vec<PathBuf> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let files = session_files(dir);
        // A session file is created before its header line is written: wait
        // until every one has at least its first whole line.
        let headed = files.iter().all(|f| {
            std::fs::read(f)
                .map(|b| b.contains(&b'\n'))
                .unwrap_or(false)
        });
        if files.len() >= n && headed {
            return files;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} session files",
            files.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends SIGTERM and waits for a clean exit.
pub fn terminate(served: &mut Served) -> std::process::ExitStatus {
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    unsafe {
        libc::kill(served.child.id() as libc::pid_t, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = served.child.try_wait() {
            return status;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `sitrep --headless investigate --diagnosis-only --no-save` with `args` against `config`
/// and `data`, asserting it succeeds: its stdout and the records it printed.
pub fn investigate(args: &[&str], config: &Path, data: &Path) -> (String, Vec<Value>) {
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "investigate", "--diagnosis-only", "--no-save"])
        .args(args)
        .env("SITREP_CONFIG", config)
        .env("SITREP_DATA_DIR", data)
        .stdin(Stdio::null())
        .output()
        .expect("sitrep runs");
    assert!(
        out.status.success(),
        "sitrep {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let records = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    (text, records)
}

/// Writes `dir/config.toml` naming the Kubernetes API at `url` (and its default namespace, when
/// given), and returns its path.
pub fn kube_config(dir: &Path, url: &str, namespace: Option<&str>) -> PathBuf {
    let path = dir.join("config.toml");
    let ns = namespace
        .map(|n| format!("namespace = \"{n}\"\n"))
        .unwrap_or_default();
    std::fs::write(
        &path,
        format!("[integrations.kubernetes]\nurl = \"{url}\"\n{ns}"),
    )
    .expect("write config");
    path
}
