//! Typed observations that integrations parse out of raw API responses and analyzers reason over.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One container's state inside a pod.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct ContainerFacts {
    pub name: String,
    pub image: String,
    pub ready: bool,
    pub restart_count: u32,
    /// `running`, `waiting`, `terminated` or `unknown`.
    pub state: String,
    /// Reason of the current state (`CrashLoopBackOff`, `ImagePullBackOff`, `OOMKilled`, ...).
    pub reason: Option<String>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    /// The previous termination (`lastState.terminated`).
    pub last_reason: Option<String>,
    pub last_exit_code: Option<i32>,
    pub last_finished_at: Option<DateTime<Utc>>,
    /// The previous termination's message (a `StartError` names the missing executable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    pub memory_limit: Option<String>,
    pub memory_request: Option<String>,
    pub cpu_limit: Option<String>,
    pub cpu_request: Option<String>,
    pub has_liveness_probe: bool,
    pub has_readiness_probe: bool,
    /// The ports the container declares (`containerPort`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<u16>,
    /// Declared ports by name (`http` -> 8080), for probes that name their port.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub port_names: BTreeMap<String, u16>,
    /// The port each probe targets (`liveness`, `readiness`, `startup` -> `8080` or `http`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probe_ports: BTreeMap<String, String>,
    /// The path each HTTP probe asks for (`readiness` -> `/ready`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probe_paths: BTreeMap<String, String>,
    /// `hostPort`s its ports bind on the node: one pod per node may hold each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_ports: Vec<u16>,
    /// Its memory limit was not in its spec but set by the namespace's LimitRange default (the
    /// pod's `kubernetes.io/limit-ranger` annotation says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memory_limit_defaulted: bool,
    /// An init container (runs to completion before the others start); only unfinished or failed ones are listed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub init: bool,
    /// Flags that size the runtime's memory (`-Xmx3g`, `--max-old-space-size=4096`,
    /// `GOMEMLIMIT=3GiB`), each with where it was set (`NODE_OPTIONS: ...`, `args: ...`); only
    /// those tokens are kept from the environment and the command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_flags: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
    pub phase: String,
    pub node: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    /// Set when the pod is being deleted.
    pub deleting: bool,
    pub labels: BTreeMap<String, String>,
    /// Owner as `Kind/name`, e.g. `ReplicaSet/payments-api-7f9dd8b6c4`.
    pub owner: Option<String>,
    /// Pod conditions, type -> status ("True"/"False"/"Unknown"), with reason/message when false.
    pub conditions: BTreeMap<String, String>,
    pub condition_messages: BTreeMap<String, String>,
    pub containers: Vec<ContainerFacts>,
    /// The pod's `metadata.uid`, which its controller's selector (`controller-uid`) names.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// `spec.nodeSelector`: labels a node must carry for the pod to be placed there.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// `status.reason` and `status.message`: why the whole pod ended (`Evicted`, with the
    /// resource kubelet reclaimed; `NodeLost`; `DeadlineExceeded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The PersistentVolumeClaims its volumes mount, with what the API says of each when it was
    /// read (for pods that are not running).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimFacts>,
}

/// A PersistentVolumeClaim a pod mounts: whether it exists, its phase, and whether the
/// StorageClass it asks for exists. `read` is false when only the pod's reference is known.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct ClaimFacts {
    pub name: String,
    pub read: bool,
    /// Read and not listed in its namespace.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// `Pending`, `Bound` or `Lost`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Whether the cluster has that StorageClass; `None` when the classes could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_exists: Option<bool>,
    /// The PersistentVolume it is bound to, when bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// Where that volume can be used: its required node affinity, one `key in (values)` a term
    /// (a zone, a node); empty when it can go anywhere or was not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_affinity: Vec<String>,
}

impl PodFacts {
    pub fn ready(&self) -> bool {
        self.conditions
            .get("Ready")
            .map(|s| s == "True")
            .unwrap_or(false)
    }
    pub fn restarts(&self) -> u32 {
        self.containers.iter().map(|c| c.restart_count).sum()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct K8sEventFacts {
    /// `Normal` or `Warning`.
    pub event_type: String,
    pub reason: String,
    pub message: String,
    /// `Kind/name` of the involved object.
    pub object: String,
    pub namespace: String,
    pub count: u32,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct DeploymentFacts {
    pub name: String,
    pub namespace: String,
    pub replicas: u32,
    pub ready_replicas: u32,
    pub updated_replicas: u32,
    pub available_replicas: u32,
    pub unavailable_replicas: u32,
    pub generation: i64,
    pub observed_generation: i64,
    /// `deployment.kubernetes.io/revision`.
    pub revision: Option<String>,
    pub images: Vec<String>,
    /// Condition type -> (status, reason, message).
    pub conditions: BTreeMap<String, (String, String, String)>,
    pub labels: BTreeMap<String, String>,
    pub created_at: Option<DateTime<Utc>>,
    /// ConfigMaps and Secrets the pod template reads (env, envFrom, volumes): `configmap/NAME`,
    /// `secret/NAME`. Names only: a Secret's values are never read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_refs: Vec<String>,
    /// The literal environment values its pod template sets (`DB_HOST` -> `orders-pg`), those
    /// whose names say they are secret left out: a changed value between two revisions is a
    /// configuration change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub template_env: BTreeMap<String, String>,
    /// The pod template's own annotations (a config checksum, `restartedAt`), to tell what a
    /// new revision changed when its images did not.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub template_annotations: BTreeMap<String, String>,
    /// `spec.selector.matchLabels` (a ReplicaSet's includes its `pod-template-hash`): which pods
    /// are this object's, by the API's own link rather than by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub selector: BTreeMap<String, String>,
    /// `spec.selector.matchExpressions`, each as `key In (a,b)`, `key NotIn (a)`, `key Exists`,
    /// `key DoesNotExist`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selector_expressions: Vec<String>,
    /// The controlling owner as `Kind/name` (a ReplicaSet's Deployment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The pod template's `spec.nodeSelector`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// The HorizontalPodAutoscaler that scales it, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaler: Option<AutoscalerFacts>,
    /// `spec.paused`: the controller rolls out no change to its template while set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
}

impl DeploymentFacts {
    /// The literal environment values `newer`'s template sets differently from this one's:
    /// `DB_HOST orders-pg → orders-pg-ro`, `FLAG=on added`, `OLD removed`, by name.
    pub fn env_changes(&self, newer: &DeploymentFacts) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> = self
            .template_env
            .keys()
            .chain(newer.template_env.keys())
            .collect();
        names
            .into_iter()
            .filter_map(
                |k| match (self.template_env.get(k), newer.template_env.get(k)) {
                    (Some(a), Some(b)) if a != b => Some(format!("{k} {a} → {b}")),
                    (None, Some(b)) => Some(format!("{k}={b} added")),
                    (Some(_), None) => Some(format!("{k} removed")),
                    _ => None,
                },
            )
            .collect()
    }
}

/// A HorizontalPodAutoscaler: its bounds, where it stands and what its conditions say.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct AutoscalerFacts {
    pub name: String,
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub current_replicas: u32,
    pub desired_replicas: u32,
    /// Condition type (`AbleToScale`, `ScalingActive`, `ScalingLimited`) -> (status, reason,
    /// message).
    pub conditions: BTreeMap<String, (String, String, String)>,
    /// When its `ScalingActive` or `ScalingLimited` condition last changed.
    pub since: Option<DateTime<Utc>>,
}

/// A workload controller other than a Deployment or ReplicaSet: a StatefulSet, DaemonSet, Job or
/// CronJob, reduced to what subject resolution and the checks need.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct WorkloadFacts {
    /// `StatefulSet`, `DaemonSet`, `Job` or `CronJob`.
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub created_at: Option<DateTime<Utc>>,
    /// The controlling owner as `Kind/name` (a Job's CronJob).
    pub owner: Option<String>,
    /// `spec.selector.matchLabels` (a Job's carries `controller-uid` or `batch.kubernetes.io/controller-uid`).
    pub selector: BTreeMap<String, String>,
    /// `spec.selector.matchExpressions`, formatted as on [`DeploymentFacts::selector_expressions`].
    pub selector_expressions: Vec<String>,
    pub images: Vec<String>,
    /// The pod template's `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// StatefulSet `replicas`, DaemonSet `desiredNumberScheduled`, Job `completions` (or parallelism).
    pub desired: u32,
    /// StatefulSet `readyReplicas`, DaemonSet `numberReady`, Job `ready` (pods ready now).
    pub ready: u32,
    /// StatefulSet `updatedReplicas`, DaemonSet `updatedNumberScheduled`.
    pub updated: u32,
    /// StatefulSet `availableReplicas`, DaemonSet `numberAvailable`.
    pub available: u32,
    /// DaemonSet `numberUnavailable`, StatefulSet `replicas - availableReplicas`.
    pub unavailable: u32,
    /// DaemonSet `numberMisscheduled`.
    pub misscheduled: u32,
    /// StatefulSet `currentRevision`; DaemonSet `observedGeneration` as text.
    pub current_revision: Option<String>,
    /// StatefulSet `updateRevision`.
    pub update_revision: Option<String>,
    pub generation: i64,
    pub observed_generation: i64,
    /// Job: pods running, succeeded and failed; `backoffLimit`.
    pub active: u32,
    pub succeeded: u32,
    pub failed: u32,
    pub backoff_limit: Option<u32>,
    pub start_time: Option<DateTime<Utc>>,
    pub completion_time: Option<DateTime<Utc>>,
    /// CronJob: `schedule`, `suspend`, `lastScheduleTime`, `lastSuccessfulTime`, active Jobs.
    pub schedule: Option<String>,
    pub suspend: bool,
    pub last_schedule: Option<DateTime<Utc>>,
    pub last_success: Option<DateTime<Utc>>,
    pub active_jobs: Vec<String>,
    /// Condition type -> (status, reason, message): a Job's `Failed` with `BackoffLimitExceeded`.
    pub conditions: BTreeMap<String, (String, String, String)>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct NodeFacts {
    pub name: String,
    /// Condition type -> status, e.g. `Ready` -> `False`, `MemoryPressure` -> `True`.
    pub conditions: BTreeMap<String, String>,
    pub condition_messages: BTreeMap<String, String>,
    /// Condition type -> when it last changed status (its `lastTransitionTime`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub condition_since: BTreeMap<String, DateTime<Utc>>,
    pub unschedulable: bool,
    pub taints: Vec<String>,
    pub allocatable_cpu: Option<String>,
    pub allocatable_memory: Option<String>,
    pub labels: BTreeMap<String, String>,
}

impl NodeFacts {
    pub fn ready(&self) -> bool {
        self.conditions
            .get("Ready")
            .map(|s| s == "True")
            .unwrap_or(false)
    }
}

/// One log line from Kubernetes pod logs or Loki.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct LogLine {
    pub at: Option<DateTime<Utc>>,
    /// Stream labels or the pod/container it came from.
    pub labels: BTreeMap<String, String>,
    pub line: String,
}

/// A metric time series: labels and (unix seconds, value) points.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Series {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "lenient_points")]
    pub points: Vec<(f64, f64)>,
}

/// JSON has no NaN or infinity (serde_json writes `null`): read those back as NaN rather than
/// failing the whole session line.
fn lenient_points<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
    let raw: Vec<(Option<f64>, Option<f64>)> = Deserialize::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(t, v)| (t.unwrap_or(f64::NAN), v.unwrap_or(f64::NAN)))
        .collect())
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    #[default]
    Deployment,
    Commit,
    PullRequest,
    Rollout,
    /// A ConfigMap or Secret (metadata only) updated, or a pod-template annotation changed.
    Config,
}

impl ChangeKind {
    /// The kind as a word in a sentence ("rollout revision 8").
    pub fn noun(self) -> &'static str {
        match self {
            ChangeKind::Deployment => "deployment",
            ChangeKind::Commit => "commit",
            ChangeKind::PullRequest => "pull request",
            ChangeKind::Rollout => "rollout",
            ChangeKind::Config => "config",
        }
    }
}

/// Something that changed: a deploy, a commit, a merged PR, a rollout.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct Change {
    pub kind: ChangeKind,
    pub at: Option<DateTime<Utc>>,
    /// Short id: sha, PR number, revision.
    pub id: String,
    pub title: String,
    pub author: Option<String>,
    /// Repository or object it applies to.
    pub target: String,
    pub url: Option<String>,
}

/// An alert as Prometheus or Alertmanager reports it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct AlertInfo {
    pub name: String,
    pub state: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub active_at: Option<DateTime<Utc>>,
    pub value: Option<String>,
}

/// An alerting or recording rule from Prometheus `/api/v1/rules`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct RuleInfo {
    pub name: String,
    pub group: String,
    pub query: String,
    /// `alerting` or `recording`.
    pub rule_type: String,
    pub state: Option<String>,
    pub duration_secs: Option<f64>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub health: Option<String>,
}

/// One PostgreSQL client backend (a row of `pg_stat_activity`), with its place in any lock chain.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PgBackend {
    pub pid: i64,
    pub database: String,
    pub usename: String,
    pub application_name: String,
    pub client_addr: Option<String>,
    /// `active`, `idle`, `idle in transaction`, `idle in transaction (aborted)`, `fastpath function call`, `disabled`.
    pub state: String,
    pub wait_event_type: Option<String>,
    pub wait_event: Option<String>,
    /// Seconds since the transaction began (None outside a transaction).
    pub xact_age_secs: Option<f64>,
    /// Seconds since the current (or last) query began.
    pub query_age_secs: Option<f64>,
    /// Seconds in the current state.
    pub state_age_secs: Option<f64>,
    /// The current or last statement, cut short.
    pub query: String,
    /// Pids this backend waits for (`pg_blocking_pids`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<i64>,
    /// The lock mode it waits for (`ShareLock`, `AccessExclusiveLock`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_mode: Option<String>,
    /// Lock modes it holds on relations, and which relations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_modes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
}

/// Command-line flags that size a runtime's heap, each with the unit a bare number is in: the
/// JVM's `-Xmx` and `MaxHeapSize` (bytes), Node's `--max-old-space-size` (MiB). Read into
/// [`ContainerFacts::memory_flags`] and weighed against the memory limit from the same table.
pub const HEAP_FLAGS: &[(&str, f64)] = &[
    ("-Xmx", 1.0),
    ("-XX:MaxHeapSize=", 1.0),
    ("--max-old-space-size=", 1024.0 * 1024.0),
    ("--max_old_space_size=", 1024.0 * 1024.0),
];

/// `45s`, `5m12s`, `2h03m`, `3d4h`: a duration as an operator reads it.
pub fn human_duration(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "?".into();
    }
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3600),
    }
}

impl PgBackend {
    pub fn idle_in_transaction(&self) -> bool {
        self.state.starts_with("idle in transaction")
    }
}

/// Connections held by one application and user, against the server's limit.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PgConnections {
    pub application_name: String,
    pub usename: String,
    pub count: i64,
    pub active: i64,
    pub idle: i64,
    pub idle_in_transaction: i64,
    /// `max_connections` of the server.
    pub max_connections: i64,
    /// `superuser_reserved_connections` (+ `reserved_connections` where the server has it).
    pub reserved: i64,
    /// Client backends in all, every application.
    pub total: i64,
}

/// A statement from `pg_stat_statements`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PgStatement {
    pub query: String,
    pub calls: i64,
    pub total_ms: f64,
    pub mean_ms: f64,
    pub rows: i64,
}

/// A standby as the primary sees it (`pg_stat_replication`), or this server's own replay lag when
/// it is a standby.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PgReplica {
    /// `standby` (a row of the primary's view) or `self` (this server is the standby).
    pub role: String,
    pub application_name: String,
    pub client_addr: Option<String>,
    pub state: String,
    pub replay_lag_secs: Option<f64>,
    pub lag_bytes: Option<f64>,
}

/// One database: size, transaction-ID age, connections.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct PgDatabase {
    pub name: String,
    pub size_bytes: f64,
    /// `age(datfrozenxid)`: transactions since the oldest unfrozen one.
    pub xid_age: i64,
    /// `autovacuum_freeze_max_age` of the server.
    pub freeze_max_age: i64,
    pub backends: i64,
}

/// What one PostgreSQL read returned.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PgFact {
    Backend(Box<PgBackend>),
    Connections(PgConnections),
    Statement(PgStatement),
    Replica(PgReplica),
    Database(PgDatabase),
    /// A kind this build does not know (written by a newer one).
    #[serde(other)]
    Other,
}

/// A Service and what backs it: its selector, its ports and the addresses its Endpoints list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct ServiceFacts {
    pub name: String,
    pub namespace: String,
    /// `spec.selector`; empty for a Service without one (its endpoints are managed by hand).
    pub selector: BTreeMap<String, String>,
    /// `port -> targetPort` (a number or a container port's name), one entry a port.
    pub ports: Vec<(u16, String)>,
    /// The ports that carry a name, by name (what an Ingress backend may ask for instead of a
    /// number).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub port_names: BTreeMap<String, u16>,
    /// Ready addresses in its Endpoints, by pod name where the address names one.
    pub ready: Vec<String>,
    /// Addresses listed as not ready.
    pub not_ready: Vec<String>,
    /// Whether its Endpoints object was read at all (an unread one says nothing).
    pub endpoints_read: bool,
    /// `spec.clusterIP`, the address clients dial (none for a headless Service).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_ip: Option<String>,
    /// Ingress rules that send traffic to it: `NAME host/path`, with the port each asks for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<IngressRoute>,
    /// A Service an Ingress routes to that does not exist (only its name and routes are known).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// NetworkPolicies that select the pods its selector takes and allow them no ingress.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied_by: Vec<String>,
    /// Egress NetworkPolicies that select the pods its selector takes, when every rule of theirs
    /// names its ports: the policies and the only ports those pods may connect to (none: no
    /// egress at all). Empty when nothing limits them by port.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub egress_limited_by: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub egress_ports: Vec<u16>,
    /// Ingress NetworkPolicies that select its pods and admit only pods carrying given labels:
    /// the policies, and the label sets admitted, the namespace as its
    /// `kubernetes.io/metadata.name` label (`app=storefront,kubernetes.io/metadata.name=shop`).
    /// Empty when any selecting policy admits more widely.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_limited_by: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_from: Vec<String>,
}

/// One Ingress rule's backend: which Ingress, for which host and path, to which port.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressRoute {
    pub ingress: String,
    /// `host/path`, or `*` for the default backend.
    pub rule: String,
    /// The Service port it asks for: a number, or a port's name.
    pub port: String,
    /// The IngressClass its Ingress names (`spec.ingressClassName`, or the older
    /// `kubernetes.io/ingress.class` annotation) when the cluster's classes were read and none
    /// has that name: no controller serves the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_class: Option<String>,
}

/// An Ingress as read from `networking.k8s.io/v1`: what it routes, to which Services, with which
/// certificates, and whether a controller has taken it (its load-balancer addresses).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressFacts {
    pub name: String,
    pub namespace: String,
    /// `spec.ingressClassName`, else the older `kubernetes.io/ingress.class` annotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The hosts its rules name, in order, without repeats.
    pub hosts: Vec<String>,
    pub rules: Vec<IngressRule>,
    /// `spec.defaultBackend`, when it names a Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_backend: Option<IngressBackendRef>,
    pub tls: Vec<IngressTls>,
    /// `status.loadBalancer.ingress`: the IPs or hostnames a controller gave it.
    pub addresses: Vec<String>,
    pub created_at: Option<DateTime<Utc>>,
    /// The last write to it after its creation (its managed fields), when later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<DateTime<Utc>>,
}

impl IngressFacts {
    /// Every backend with the rule it serves: `host/path`, `*` for the default backend.
    pub fn backends(&self) -> Vec<(String, &IngressBackendRef)> {
        let mut out: Vec<(String, &IngressBackendRef)> = Vec::new();
        if let Some(b) = &self.default_backend {
            out.push(("*".to_string(), b));
        }
        for r in &self.rules {
            let host = r.host.as_deref().unwrap_or("*");
            out.push((format!("{host}{}", r.path), &r.backend));
        }
        out
    }

    /// When it last took its present form: its last change, else its creation.
    pub fn since(&self) -> Option<DateTime<Utc>> {
        self.changed_at.or(self.created_at)
    }
}

/// One path of an Ingress rule and the Service it sends to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressRule {
    /// `None` for a rule that matches every host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub path: String,
    pub backend: IngressBackendRef,
}

/// A backend Service and the port asked of it: a number, or a port's name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressBackendRef {
    pub service: String,
    pub port: String,
}

/// A TLS entry of an Ingress: the hosts it covers and the Secret holding their certificate.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressTls {
    pub hosts: Vec<String>,
    /// Empty when the entry names none (the controller's default certificate serves it). Named
    /// as the API names it: a field called `secret` would be masked as a secret's value.
    pub secret_name: String,
}

/// An IngressClass: the controller that serves the Ingresses naming it, and whether it takes
/// those naming no class (`ingressclass.kubernetes.io/is-default-class`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressClassFacts {
    pub name: String,
    pub controller: String,
    pub is_default: bool,
}

/// What `kubernetes.ingresses` read: the Ingresses, and the cluster's IngressClasses (`None`
/// when they could not be read, which says nothing about them).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct IngressList {
    pub ingresses: Vec<IngressFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<IngressClassFacts>>,
}

/// What one read returned, parsed: the typed facts a specialist learned from one evidence item,
/// and what every tool call hands back. Written to the session (`Event::Observed`) so the
/// reasoning's inputs are a fold of the log.
#[derive(Clone, Debug, PartialEq)]
pub enum Facts {
    Pods(Vec<PodFacts>),
    Events(Vec<K8sEventFacts>),
    /// Deployments, or ReplicaSets in the same shape (the tool that produced them tells).
    Deployments(Vec<DeploymentFacts>),
    /// StatefulSets, DaemonSets, Jobs or CronJobs.
    Workloads(Vec<WorkloadFacts>),
    Nodes(Vec<NodeFacts>),
    Services(Vec<ServiceFacts>),
    /// Ingresses and the cluster's IngressClasses.
    Ingresses(IngressList),
    /// Pod logs (`kubernetes.pod_logs`) or log queries (`loki.query_range`).
    Logs(Vec<LogLine>),
    Series(Vec<Series>),
    Rules(Vec<RuleInfo>),
    Alerts(Vec<AlertInfo>),
    Changes(Vec<Change>),
    /// PostgreSQL reads: backends, connections, statements, replicas, databases.
    Postgres(Vec<PgFact>),
    /// AWS reads: RDS instances and events, CloudWatch series, Performance Insights load.
    Cloud(Vec<super::cloud::CloudFact>),
    /// Text from a tool outside the built-in table (an MCP server's tool). It has no typed facts:
    /// the session records it as `other`, the (redacted) evidence body carries the text.
    Text(String),
    /// A kind of facts this build does not know (written by a newer one): skipped, not an error.
    Other,
}

impl Facts {
    /// A one-line summary for `ToolSucceeded`.
    pub fn summary(&self) -> String {
        let (n, what) = match self {
            Facts::Text(t) => (t.chars().count(), "characters"),
            Facts::Pods(v) => (v.len(), "pods"),
            Facts::Events(v) => (v.len(), "events"),
            Facts::Deployments(v) => (v.len(), "deployments"),
            Facts::Workloads(v) => (v.len(), "workloads"),
            Facts::Nodes(v) => (v.len(), "nodes"),
            Facts::Services(v) => (v.len(), "services"),
            Facts::Ingresses(v) => (v.ingresses.len(), "ingresses"),
            Facts::Logs(v) => (v.len(), "log lines"),
            Facts::Series(v) => (v.len(), "series"),
            Facts::Rules(v) => (v.len(), "rules"),
            Facts::Alerts(v) => (v.len(), "alerts"),
            Facts::Changes(v) => (v.len(), "changes"),
            Facts::Postgres(v) => (v.len(), "rows"),
            Facts::Cloud(v) => (v.len(), "records"),
            Facts::Other => return "facts of an unknown kind".to_string(),
        };
        format!("{n} {what}")
    }
}

// By hand, in serde's adjacently tagged shape (`{"type": kind, "items": [...]}`, a bare
// `{"type": "other"}` for facts without items): `Text` is written as `other`, so tool text never
// lands in the session twice and older builds read the file unchanged.
impl Serialize for Facts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        fn tagged<S: serde::Serializer, T: Serialize>(
            s: S,
            kind: &'static str,
            items: &T,
        ) -> Result<S::Ok, S::Error> {
            let mut st = s.serialize_struct("Facts", 2)?;
            st.serialize_field("type", kind)?;
            st.serialize_field("items", items)?;
            st.end()
        }
        match self {
            Facts::Pods(v) => tagged(s, "pods", v),
            Facts::Events(v) => tagged(s, "events", v),
            Facts::Deployments(v) => tagged(s, "deployments", v),
            Facts::Workloads(v) => tagged(s, "workloads", v),
            Facts::Nodes(v) => tagged(s, "nodes", v),
            Facts::Services(v) => tagged(s, "services", v),
            Facts::Ingresses(v) => tagged(s, "ingresses", v),
            Facts::Logs(v) => tagged(s, "logs", v),
            Facts::Series(v) => tagged(s, "series", v),
            Facts::Rules(v) => tagged(s, "rules", v),
            Facts::Alerts(v) => tagged(s, "alerts", v),
            Facts::Changes(v) => tagged(s, "changes", v),
            Facts::Postgres(v) => tagged(s, "postgres", v),
            Facts::Cloud(v) => tagged(s, "cloud", v),
            Facts::Text(_) | Facts::Other => {
                let mut st = s.serialize_struct("Facts", 1)?;
                st.serialize_field("type", "other")?;
                st.end()
            }
        }
    }
}

// By hand: serde's `other` cannot keep an unknown kind's items, and a session written by a newer
// build must still read.
impl<'de> Deserialize<'de> for Facts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            items: serde_json::Value,
        }
        fn items<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            v: serde_json::Value,
        ) -> Result<Vec<T>, E> {
            if v.is_null() {
                return Ok(Vec::new());
            }
            serde_json::from_value(v).map_err(E::custom)
        }
        let raw = Raw::deserialize(d)?;
        Ok(match raw.kind.as_str() {
            "pods" => Facts::Pods(items(raw.items)?),
            "events" => Facts::Events(items(raw.items)?),
            "deployments" => Facts::Deployments(items(raw.items)?),
            "workloads" => Facts::Workloads(items(raw.items)?),
            "nodes" => Facts::Nodes(items(raw.items)?),
            "services" => Facts::Services(items(raw.items)?),
            "ingresses" if raw.items.is_null() => Facts::Ingresses(IngressList::default()),
            "ingresses" => Facts::Ingresses(
                serde_json::from_value(raw.items).map_err(serde::de::Error::custom)?,
            ),
            "logs" => Facts::Logs(items(raw.items)?),
            "series" => Facts::Series(items(raw.items)?),
            "rules" => Facts::Rules(items(raw.items)?),
            "alerts" => Facts::Alerts(items(raw.items)?),
            "changes" => Facts::Changes(items(raw.items)?),
            "postgres" => Facts::Postgres(items(raw.items)?),
            "cloud" => Facts::Cloud(items(raw.items)?),
            _ => Facts::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn environment_changes_between_revisions_are_named_with_both_values() {
        let of = |pairs: &[(&str, &str)]| super::DeploymentFacts {
            template_env: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..super::DeploymentFacts::default()
        };
        let old = of(&[("DB_HOST", "pg-rw"), ("LEVEL", "info"), ("GONE", "x")]);
        let new = of(&[("DB_HOST", "pg-ro"), ("LEVEL", "info"), ("FLAG", "on")]);
        assert_eq!(
            old.env_changes(&new),
            ["DB_HOST pg-rw → pg-ro", "FLAG=on added", "GONE removed"]
        );
        assert!(old.env_changes(&old).is_empty());
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn facts_keep_the_adjacently_tagged_session_shape() {
        let pods = Facts::Pods(vec![PodFacts {
            name: "web-1".into(),
            ..PodFacts::default()
        }]);
        let v = serde_json::to_value(&pods).expect("pods serialize");
        assert_eq!(v["type"], "pods");
        assert_eq!(v["items"][0]["name"], "web-1");
        assert_eq!(v.as_object().map(|o| o.len()), Some(2));
        assert_eq!(
            serde_json::to_value(Facts::Changes(Vec::new())).expect("changes serialize"),
            json!({"type": "changes", "items": []})
        );
        assert_eq!(
            serde_json::to_value(Facts::Other).expect("other serializes"),
            json!({"type": "other"})
        );
        let back: Facts = serde_json::from_value(v).expect("pods read back");
        assert_eq!(back, pods);
    }

    #[test]
    fn ingresses_keep_their_classes_in_the_session_shape() {
        let read = Facts::Ingresses(IngressList {
            ingresses: vec![IngressFacts {
                name: "shop".into(),
                hosts: vec!["shop.example.com".into()],
                ..IngressFacts::default()
            }],
            classes: Some(vec![IngressClassFacts {
                name: "nginx".into(),
                controller: "k8s.io/ingress-nginx".into(),
                is_default: true,
            }]),
        });
        assert_eq!(read.summary(), "1 ingresses");
        let v = serde_json::to_value(&read).expect("ingresses serialize");
        assert_eq!(v["type"], "ingresses");
        assert_eq!(v["items"]["classes"][0]["is_default"], true);
        let back: Facts = serde_json::from_value(v).expect("ingresses read back");
        assert_eq!(back, read);
        // Unread classes stay unknown, not an empty list.
        let bare: Facts =
            serde_json::from_value(json!({"type": "ingresses", "items": {"ingresses": []}}))
                .expect("reads");
        assert_eq!(bare, Facts::Ingresses(IngressList::default()));
    }

    #[test]
    fn tool_text_is_recorded_as_other_without_its_text() {
        let text = Facts::Text("token=s3cr3t rows: 4".into());
        assert_eq!(text.summary(), "20 characters");
        let line = serde_json::to_string(&text).expect("text serializes");
        assert_eq!(line, r#"{"type":"other"}"#);
        let back: Facts = serde_json::from_str(&line).expect("reads back");
        assert_eq!(back, Facts::Other);
    }
}
