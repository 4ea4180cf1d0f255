//! Kubernetes objects in the API server's own JSON shapes: `v1` Pod, Node, Event and Status,
//! `apps/v1` Deployment, ReplicaSet, StatefulSet and DaemonSet, `batch/v1` Job and CronJob, and
//! the `*List` envelopes the list endpoints answer with.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// RFC 3339 in seconds, as the API server writes timestamps.
pub fn ts(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn minutes(n: i64) -> Duration {
    Duration::minutes(n)
}

pub fn seconds(n: i64) -> Duration {
    Duration::seconds(n)
}

/// FNV-1a: a stable hash (std's is seeded per process) for names and ids that look real.
pub fn hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The alphabet of generated name suffixes (`k8s.io/apimachinery/pkg/util/rand`).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A `n`-character suffix like the ones controllers append (`-x2k9q`, pod-template-hash).
pub fn suffix(seed: &str, n: usize) -> String {
    let mut h = hash(seed);
    let mut out = String::with_capacity(n);
    for i in 0..n {
        if h == 0 {
            h = hash(&format!("{seed}/{i}"));
        }
        out.push(ALPHABET[(h % ALPHABET.len() as u64) as usize] as char);
        h /= ALPHABET.len() as u64;
    }
    out
}

/// A version-4-looking UID.
pub fn uid(seed: &str) -> String {
    let a = hash(seed);
    let b = hash(&format!("{seed}#uid"));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `{"apiVersion": .., "kind": "<Kind>List", "items": [..]}`.
pub fn list(kind: &str, api_version: &str, items: Vec<Value>) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": format!("{kind}List"),
        "metadata": {"resourceVersion": "48211734"},
        "items": items,
    })
}

/// A `v1` Status, the body of every API error.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
}

pub fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true,
    }])
}

// ------------------------------------------------------------------ container states

pub fn running(since: DateTime<Utc>) -> Value {
    json!({"running": {"startedAt": ts(since)}})
}

pub fn waiting(reason: &str, message: Option<&str>) -> Value {
    match message {
        Some(m) => json!({"waiting": {"reason": reason, "message": m}}),
        None => json!({"waiting": {"reason": reason}}),
    }
}

/// A terminated state; `message` is what the runtime reported (StartError), if anything.
pub fn terminated(
    reason: &str,
    exit: i32,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    message: Option<&str>,
) -> Value {
    let mut t = json!({
        "exitCode": exit, "reason": reason,
        "startedAt": ts(started), "finishedAt": ts(finished),
        "containerID": format!("containerd://{:016x}{:016x}", hash(&ts(started)), hash(reason)),
    });
    if let Some(m) = message {
        t["message"] = json!(m);
    }
    json!({ "terminated": t })
}

// ------------------------------------------------------------------ nodes

/// The cluster's three nodes: name, zone, host IP.
pub const NODES: [(&str, &str, &str); 3] = [
    (
        "ip-10-20-1-17.eu-west-1.compute.internal",
        "eu-west-1a",
        "10.20.1.17",
    ),
    (
        "ip-10-20-2-88.eu-west-1.compute.internal",
        "eu-west-1b",
        "10.20.2.88",
    ),
    (
        "ip-10-20-3-41.eu-west-1.compute.internal",
        "eu-west-1c",
        "10.20.3.41",
    ),
];

/// How a node's Ready condition reads now.
#[derive(Clone, Copy, Debug)]
pub enum NodeHealth {
    Ready,
    /// Ready since this moment (it was not ready for a short while before).
    ReadySince(DateTime<Utc>),
    /// Ready=Unknown since this moment: the kubelet stopped posting status.
    Lost(DateTime<Utc>),
}

pub fn node(i: usize, health: NodeHealth, now: DateTime<Utc>) -> Value {
    let (name, zone, ip) = NODES[i];
    let settled = "2026-01-14T06:02:11Z".to_string();
    let (ready, pressure, taints) = match health {
        NodeHealth::Ready | NodeHealth::ReadySince(_) => {
            let since = match health {
                NodeHealth::ReadySince(t) => ts(t),
                _ => settled.clone(),
            };
            let hb = ts(now - seconds(17));
            let pressure: Vec<Value> = [
                ("MemoryPressure", "Memory"),
                ("DiskPressure", "Disk"),
                ("PIDPressure", "PID"),
            ]
            .iter()
            .map(|(t, r)| {
                json!({"type": t, "status": "False", "reason": format!("KubeletHasSufficient{r}"),
                       "message": format!("kubelet has sufficient {} available", r.to_lowercase()),
                       "lastHeartbeatTime": hb, "lastTransitionTime": settled})
            })
            .collect();
            (
                json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
                       "message": "kubelet is posting ready status", "lastHeartbeatTime": hb,
                       "lastTransitionTime": since}),
                pressure,
                Value::Null,
            )
        }
        NodeHealth::Lost(since) => {
            let hb = ts(since - seconds(40));
            let unknown = |t: &str| {
                json!({"type": t, "status": "Unknown", "reason": "NodeStatusUnknown",
                       "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": hb,
                       "lastTransitionTime": ts(since)})
            };
            (
                unknown("Ready"),
                vec![
                    unknown("MemoryPressure"),
                    unknown("DiskPressure"),
                    unknown("PIDPressure"),
                ],
                json!([
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(since)},
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(since + seconds(5))},
                ]),
            )
        }
    };
    let mut conditions = pressure;
    conditions.push(ready);
    let mut spec = json!({"providerID": format!("aws:///{zone}/i-0{:016x}", hash(name))});
    if !taints.is_null() {
        spec["taints"] = taints;
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "uid": uid(name), "creationTimestamp": "2026-01-14T06:01:02Z",
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "eu-west-1",
                "node.kubernetes.io/instance-type": "m6i.xlarge", "eks.amazonaws.com/nodegroup": "general",
            },
        },
        "spec": spec,
        "status": {
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "allocatable": {"cpu": "3920m", "memory": "14933020Ki", "pods": "58", "ephemeral-storage": "76224326324"},
            "capacity": {"cpu": "4", "memory": "16012828Ki", "pods": "58", "ephemeral-storage": "83873772Ki"},
            "nodeInfo": {"kubeletVersion": "v1.33.4-eks-3a0f1b2", "osImage": "Amazon Linux 2023",
                         "containerRuntimeVersion": "containerd://1.7.27", "architecture": "amd64",
                         "operatingSystem": "linux"},
        },
    })
}

// ------------------------------------------------------------------ events

/// One core/v1 Event.
pub struct Ev<'a> {
    pub ns: &'a str,
    /// `Pod`, `Node`, `ReplicaSet`, ...
    pub kind: &'a str,
    pub name: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    pub first: DateTime<Utc>,
    pub last: DateTime<Utc>,
    pub count: u32,
    pub warning: bool,
    pub component: &'a str,
}

impl Ev<'_> {
    pub fn json(&self) -> Value {
        let api = match self.kind {
            "Pod" | "Node" => "v1",
            "Job" | "CronJob" => "batch/v1",
            _ => "apps/v1",
        };
        let ns = if self.kind == "Node" {
            "default"
        } else {
            self.ns
        };
        let mut involved = json!({"kind": self.kind, "name": self.name, "apiVersion": api});
        if self.kind != "Node" {
            involved["namespace"] = json!(self.ns);
            involved["uid"] = json!(uid(&format!("{}/{}", self.ns, self.name)));
        } else {
            involved["uid"] = json!(self.name);
        }
        let seed = format!(
            "{}/{}/{}/{}",
            self.name,
            self.reason,
            self.message,
            ts(self.first)
        );
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{}.{:016x}", self.name, hash(&seed)), "namespace": ns,
                         "uid": uid(&seed), "creationTimestamp": ts(self.first)},
            "involvedObject": involved,
            "reason": self.reason, "message": self.message,
            "type": if self.warning { "Warning" } else { "Normal" },
            "count": self.count,
            "firstTimestamp": ts(self.first), "lastTimestamp": ts(self.last),
            "source": {"component": self.component},
            "reportingComponent": self.component, "reportingInstance": "",
        })
    }
}
