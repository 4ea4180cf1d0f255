//! Subject kinds: a workload (Deployment, StatefulSet, DaemonSet, Job, CronJob or a bare Pod) and
//! its pods, linked the way the controllers link them: ownerReferences, selectors and the labels
//! each controller stamps (`pod-template-hash`, `controller-revision-hash`, `job-name`,
//! `controller-uid`), never only by name.

use super::Kind;
use super::k8s::{self, NODES, hash, owner, suffix, ts, uid};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Which labels the pods carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `app: NAME` (and `app.kubernetes.io/name: NAME`), selected by `app`.
    Classic,
    /// A Helm chart's labels: `app.kubernetes.io/name` is the chart (`server`), the instance is
    /// the workload; no `app` label, so only the selector and ownerReferences lead to the pods.
    Recommended,
}

/// The image of the init containers.
pub const INIT_IMAGE: &str = "docker.io/library/busybox:1.36";

/// One pod template revision.
#[derive(Clone, Debug)]
pub struct Revision {
    pub image: String,
    /// When the revision was rolled out (its ReplicaSet / ControllerRevision created).
    pub at: DateTime<Utc>,
    pub number: u32,
    pub node_selector: Option<(String, String)>,
    pub cpu_request: String,
    pub mem_request: String,
    /// Overrides the workload's memory limit.
    pub mem_limit: Option<String>,
    pub liveness_port: u16,
    pub command: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub env: Vec<(String, String)>,
    /// A ReplicaSet a Deployment of another name created, adopted by this one after a rename.
    pub adopted_from: Option<String>,
    /// An init container: its name and command (busybox).
    pub init: Option<(String, Vec<String>)>,
}

impl Revision {
    pub fn new(image: &str, at: DateTime<Utc>, number: u32) -> Revision {
        Revision {
            image: image.to_string(),
            at,
            number,
            node_selector: None,
            cpu_request: "250m".into(),
            mem_request: "256Mi".into(),
            mem_limit: None,
            liveness_port: 8080,
            command: None,
            args: None,
            env: Vec::new(),
            adopted_from: None,
            init: None,
        }
    }
}

/// One pod as its status reads now.
#[derive(Clone, Debug)]
pub struct PodState {
    /// Index into [`Workload::revisions`].
    pub rev: usize,
    /// Job run (CronJob: 0 is the latest Job, 1 the one before).
    pub run: usize,
    /// Index into [`NODES`]; `None` when not scheduled.
    pub node: Option<usize>,
    pub phase: &'static str,
    pub ready: bool,
    /// `containerStatuses[0].state` (`Null` for a pod not scheduled).
    pub state: Value,
    pub last_state: Value,
    pub restarts: u32,
    pub created: DateTime<Utc>,
    /// Ready condition's lastTransitionTime.
    pub ready_at: DateTime<Utc>,
    /// The Ready condition's (reason, message) when not ready; default ContainersNotReady.
    pub not_ready: Option<(String, String)>,
    /// PodScheduled=False message (reason Unschedulable).
    pub unschedulable: Option<String>,
    pub deleting: Option<DateTime<Utc>>,
    /// Whether the image was ever pulled (imageID known).
    pub pulled: bool,
    /// The init container's (state, last state, restarts) while it holds the pod back; `None`
    /// when it completed (or the revision has none).
    pub init: Option<(Value, Value, u32)>,
}

impl PodState {
    /// Running and Ready since `since`.
    pub fn healthy(rev: usize, node: usize, since: DateTime<Utc>) -> PodState {
        PodState {
            rev,
            run: 0,
            node: Some(node),
            phase: "Running",
            ready: true,
            state: k8s::running(since + k8s::seconds(4)),
            last_state: json!({}),
            restarts: 0,
            created: since,
            ready_at: since + k8s::seconds(11),
            not_ready: None,
            unschedulable: None,
            deleting: None,
            pulled: true,
            init: None,
        }
    }

    /// Scheduled, not ready, in `state`.
    pub fn failing(rev: usize, node: usize, created: DateTime<Utc>, state: Value) -> PodState {
        PodState {
            ready: false,
            state,
            ready_at: created + k8s::seconds(2),
            ..PodState::healthy(rev, node, created)
        }
    }
}

/// One Job run (a Job, or one of a CronJob's Jobs).
#[derive(Clone, Debug)]
pub struct Run {
    pub started: DateTime<Utc>,
    pub finished: Option<DateTime<Utc>>,
    /// `Some((reason, message))` for a Job that failed (`BackoffLimitExceeded`).
    pub failed: Option<(String, String)>,
    pub backoff_limit: u32,
}

/// A workload and its pods.
#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: Kind,
    pub ns: String,
    /// The controller's name (a bare pod's own name).
    pub name: String,
    pub container: String,
    pub style: Style,
    /// Bare pod: a name that is not the `app` label (naming distractor).
    pub pod_name: Option<String>,
    /// `[0]` is the current template.
    pub revisions: Vec<Revision>,
    pub created: DateTime<Utc>,
    pub replicas: u32,
    pub pods: Vec<PodState>,
    pub mem_limit: String,
    pub restart_policy: &'static str,
    /// Job runs: `[0]` the latest.
    pub runs: Vec<Run>,
    pub schedule: String,
    pub port: u16,
    /// The world's clock.
    pub now: DateTime<Utc>,
}

/// The controller objects of a workload, by list endpoint.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    pub pods: Vec<Value>,
    pub deployments: Vec<Value>,
    pub replicasets: Vec<Value>,
    pub statefulsets: Vec<Value>,
    pub daemonsets: Vec<Value>,
    pub jobs: Vec<Value>,
    pub cronjobs: Vec<Value>,
}

impl Objects {
    pub fn extend(&mut self, o: Objects) {
        self.pods.extend(o.pods);
        self.deployments.extend(o.deployments);
        self.replicasets.extend(o.replicasets);
        self.statefulsets.extend(o.statefulsets);
        self.daemonsets.extend(o.daemonsets);
        self.jobs.extend(o.jobs);
        self.cronjobs.extend(o.cronjobs);
    }
}

impl Workload {
    pub fn new(
        kind: Kind,
        ns: &str,
        name: &str,
        revisions: Vec<Revision>,
        now: DateTime<Utc>,
    ) -> Workload {
        let created = revisions.iter().map(|r| r.at).min().unwrap_or(now);
        Workload {
            kind,
            ns: ns.to_string(),
            name: name.to_string(),
            container: name.to_string(),
            style: Style::Classic,
            pod_name: None,
            revisions,
            created: created - chrono::Duration::days(30),
            replicas: 1,
            pods: Vec::new(),
            mem_limit: "512Mi".into(),
            restart_policy: if kind.is_batch() {
                "OnFailure"
            } else {
                "Always"
            },
            runs: Vec::new(),
            schedule: "0 * * * *".into(),
            port: 8080,
            now,
        }
    }

    fn rev_hash(&self, rev: usize) -> String {
        let r = &self.revisions[rev];
        suffix(
            &format!("{}/{}/{}/{}", self.ns, self.name, r.number, r.image),
            10,
        )
    }

    pub fn rs_name(&self, rev: usize) -> String {
        let prefix = self.revisions[rev]
            .adopted_from
            .clone()
            .unwrap_or_else(|| self.name.clone());
        format!("{prefix}-{}", self.rev_hash(rev))
    }

    /// A Job's name: the Job's own, or `<cronjob>-<scheduled minute>` for a CronJob's run.
    pub fn job_name(&self, run: usize) -> String {
        match self.kind {
            Kind::CronJob => format!("{}-{}", self.name, self.runs[run].started.timestamp() / 60),
            _ => self.name.clone(),
        }
    }

    fn job_uid(&self, run: usize) -> String {
        uid(&format!("job/{}/{}", self.ns, self.job_name(run)))
    }

    fn own_uid(&self) -> String {
        uid(&format!("{}/{}/{}", self.kind.name(), self.ns, self.name))
    }

    pub fn pod_name(&self, i: usize) -> String {
        let p = &self.pods[i];
        let sfx = |base: &str| suffix(&format!("{base}/{i}"), 5);
        match self.kind {
            Kind::Deployment => {
                let rs = self.rs_name(p.rev);
                format!("{rs}-{}", sfx(&rs))
            }
            Kind::StatefulSet => format!("{}-{i}", self.name),
            Kind::DaemonSet => format!("{}-{}", self.name, sfx(&self.name)),
            Kind::Job | Kind::CronJob => {
                let job = self.job_name(p.run);
                format!("{job}-{}", sfx(&job))
            }
            Kind::Pod => self.pod_name.clone().unwrap_or_else(|| self.name.clone()),
        }
    }

    pub fn pod_uid(&self, i: usize) -> String {
        uid(&format!("pod/{}/{}", self.ns, self.pod_name(i)))
    }

    pub fn pod_ip(&self, i: usize) -> String {
        match self.pods[i].node {
            Some(n) => format!("10.20.{}.{}", n + 1, 20 + hash(&self.pod_name(i)) % 200),
            None => String::new(),
        }
    }

    pub fn node_of(&self, i: usize) -> Option<&'static str> {
        self.pods[i].node.map(|n| NODES[n].0)
    }

    /// The labels the template carries (the selector's and the app's).
    fn app_labels(&self) -> BTreeMap<String, String> {
        match self.style {
            Style::Classic => {
                k8s::labels(&[("app", &self.name), ("app.kubernetes.io/name", &self.name)])
            }
            Style::Recommended => k8s::labels(&[
                ("app.kubernetes.io/name", "server"),
                ("app.kubernetes.io/instance", &self.name),
                ("app.kubernetes.io/part-of", &self.ns),
                ("app.kubernetes.io/managed-by", "Helm"),
                ("helm.sh/chart", "server-1.4.2"),
            ]),
        }
    }

    fn selector_labels(&self) -> BTreeMap<String, String> {
        match self.style {
            Style::Classic => k8s::labels(&[("app", &self.name)]),
            Style::Recommended => k8s::labels(&[
                ("app.kubernetes.io/name", "server"),
                ("app.kubernetes.io/instance", &self.name),
            ]),
        }
    }

    fn job_labels(&self, run: usize) -> BTreeMap<String, String> {
        let (job, u) = (self.job_name(run), self.job_uid(run));
        k8s::labels(&[
            ("batch.kubernetes.io/controller-uid", &u),
            ("batch.kubernetes.io/job-name", &job),
            ("controller-uid", &u),
            ("job-name", &job),
        ])
    }

    fn pod_labels(&self, i: usize) -> BTreeMap<String, String> {
        let p = &self.pods[i];
        let mut l = self.app_labels();
        match self.kind {
            Kind::Deployment => {
                l.insert("pod-template-hash".into(), self.rev_hash(p.rev));
            }
            Kind::StatefulSet => {
                l.insert(
                    "controller-revision-hash".into(),
                    format!("{}-{}", self.name, self.rev_hash(p.rev)),
                );
                l.insert(
                    "statefulset.kubernetes.io/pod-name".into(),
                    self.pod_name(i),
                );
                l.insert("apps.kubernetes.io/pod-index".into(), i.to_string());
            }
            Kind::DaemonSet => {
                l.insert("controller-revision-hash".into(), self.rev_hash(p.rev));
                l.insert(
                    "pod-template-generation".into(),
                    self.revisions[p.rev].number.to_string(),
                );
            }
            Kind::Job | Kind::CronJob => l.extend(self.job_labels(p.run)),
            Kind::Pod => {}
        }
        l
    }

    fn owner_of(&self, i: usize) -> Option<Value> {
        let p = &self.pods[i];
        Some(match self.kind {
            Kind::Deployment => {
                let rs = self.rs_name(p.rev);
                owner(
                    "apps/v1",
                    "ReplicaSet",
                    &rs,
                    &uid(&format!("rs/{}/{rs}", self.ns)),
                )
            }
            Kind::StatefulSet => owner("apps/v1", "StatefulSet", &self.name, &self.own_uid()),
            Kind::DaemonSet => owner("apps/v1", "DaemonSet", &self.name, &self.own_uid()),
            Kind::Job | Kind::CronJob => owner(
                "batch/v1",
                "Job",
                &self.job_name(p.run),
                &self.job_uid(p.run),
            ),
            Kind::Pod => return None,
        })
    }

    fn container_spec(&self, rev: usize) -> Value {
        let r = &self.revisions[rev];
        let mut c = json!({
            "name": self.container, "image": r.image, "imagePullPolicy": "IfNotPresent",
            "resources": {
                "requests": {"cpu": r.cpu_request, "memory": r.mem_request},
                "limits": {"memory": r.mem_limit.as_ref().unwrap_or(&self.mem_limit)},
            },
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        });
        if !self.kind.is_batch() {
            c["ports"] = json!([{"name": "http", "containerPort": self.port, "protocol": "TCP"}]);
            c["livenessProbe"] = json!({
                "httpGet": {"path": "/healthz", "port": r.liveness_port, "scheme": "HTTP"},
                "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1,
                "successThreshold": 1, "failureThreshold": 3,
            });
            c["readinessProbe"] = json!({
                "httpGet": {"path": "/ready", "port": self.port, "scheme": "HTTP"},
                "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3,
            });
        }
        if let Some(cmd) = &r.command {
            c["command"] = json!(cmd);
        }
        if let Some(args) = &r.args {
            c["args"] = json!(args);
        }
        if !r.env.is_empty() {
            c["env"] = Value::Array(
                r.env
                    .iter()
                    .map(|(k, v)| json!({"name": k, "value": v}))
                    .collect(),
            );
        }
        c
    }

    fn pod_spec(&self, rev: usize) -> Value {
        let mut s = json!({
            "containers": [self.container_spec(rev)],
            "restartPolicy": self.restart_policy,
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "schedulerName": "default-scheduler",
            "securityContext": {},
        });
        if let Some((k, v)) = &self.revisions[rev].node_selector {
            s["nodeSelector"] = json!({ k.as_str(): v });
        }
        if let Some((name, command)) = &self.revisions[rev].init {
            s["initContainers"] = json!([{
                "name": name, "image": INIT_IMAGE, "imagePullPolicy": "IfNotPresent",
                "command": command,
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }]);
        }
        s
    }

    fn template(&self, rev: usize, extra: BTreeMap<String, String>) -> Value {
        let mut l = self.app_labels();
        l.extend(extra);
        json!({"metadata": {"labels": l}, "spec": self.pod_spec(rev)})
    }

    fn pod_json(&self, i: usize) -> Value {
        let p = &self.pods[i];
        let name = self.pod_name(i);
        let mut meta = json!({
            "name": name, "namespace": self.ns, "uid": self.pod_uid(i),
            "creationTimestamp": ts(p.created), "labels": self.pod_labels(i),
        });
        if let Some(o) = self.owner_of(i) {
            meta["ownerReferences"] = o;
            if self.kind != Kind::StatefulSet {
                let base = name.rsplit_once('-').map(|(a, _)| a).unwrap_or(&name);
                meta["generateName"] = json!(format!("{base}-"));
            }
        }
        if let Some(t) = p.deleting {
            meta["deletionTimestamp"] = json!(ts(t));
            meta["deletionGracePeriodSeconds"] = json!(30);
        }
        let mut spec = self.pod_spec(p.rev);
        if self.kind == Kind::DaemonSet {
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [NODES[i % NODES.len()].0]}]}]}}});
        }
        spec["tolerations"] = json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ]);
        let mut status = json!({"phase": p.phase, "qosClass": "Burstable"});
        match (p.node, &p.unschedulable) {
            (None, msg) => {
                status["conditions"] = json!([{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": msg.clone().unwrap_or_default(),
                    "lastProbeTime": null, "lastTransitionTime": ts(p.created + k8s::seconds(1)),
                }]);
            }
            (Some(n), _) => {
                spec["nodeName"] = json!(NODES[n].0);
                let ip = self.pod_ip(i);
                let ready = if p.ready { "True" } else { "False" };
                let started = ts(p.created + k8s::seconds(2));
                let mut ready_cond = json!({"type": "Ready", "status": ready, "lastProbeTime": null,
                                            "lastTransitionTime": ts(p.ready_at)});
                if !p.ready {
                    let (reason, message) = match (&p.not_ready, p.phase) {
                        (Some(r), _) => r.clone(),
                        (None, "Succeeded" | "Failed") => ("PodCompleted".into(), String::new()),
                        (None, _) => (
                            "ContainersNotReady".into(),
                            format!("containers with unready status: [{}]", self.container),
                        ),
                    };
                    if !reason.is_empty() {
                        ready_cond["reason"] = json!(reason);
                    }
                    if !message.is_empty() {
                        ready_cond["message"] = json!(message);
                    }
                }
                let mut containers_ready = ready_cond.clone();
                containers_ready["type"] = json!("ContainersReady");
                status["conditions"] = json!([
                    {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": started},
                    {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts(p.created + k8s::seconds(1))},
                    ready_cond,
                    containers_ready,
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": ts(p.created + k8s::seconds(1))},
                ]);
                status["hostIP"] = json!(NODES[n].2);
                status["hostIPs"] = json!([{"ip": NODES[n].2}]);
                status["podIP"] = json!(ip);
                status["podIPs"] = json!([{ "ip": ip }]);
                status["startTime"] = json!(ts(p.created + k8s::seconds(1)));
                let image = &self.revisions[p.rev].image;
                let started_now = p.state.get("running").is_some();
                let mut cs = json!({
                    "name": self.container, "image": image, "ready": p.ready,
                    "restartCount": p.restarts, "started": started_now,
                    "state": p.state, "lastState": p.last_state,
                    "imageID": if p.pulled {
                        format!("{}@sha256:{:016x}{:016x}{:016x}{:016x}",
                                image.split(':').next().unwrap_or(image),
                                hash(image), hash(&format!("{image}1")), hash(&format!("{image}2")), hash(&format!("{image}3")))
                    } else { String::new() },
                });
                if p.state.get("waiting").is_none() || p.restarts > 0 {
                    cs["containerID"] = json!(format!(
                        "containerd://{:016x}{:016x}",
                        hash(&name),
                        p.restarts
                    ));
                }
                status["containerStatuses"] = json!([cs]);
                if let Some((init, _)) = &self.revisions[p.rev].init {
                    let (state, last, restarts, ready) = match &p.init {
                        Some((state, last, restarts)) => {
                            (state.clone(), last.clone(), *restarts, false)
                        }
                        None => (
                            k8s::terminated(
                                "Completed",
                                0,
                                p.created + k8s::seconds(2),
                                p.created + k8s::seconds(3),
                                None,
                            ),
                            json!({}),
                            0,
                            true,
                        ),
                    };
                    status["initContainerStatuses"] = json!([{
                        "name": init, "image": INIT_IMAGE, "ready": ready,
                        "restartCount": restarts, "started": state.get("running").is_some(),
                        "state": state, "lastState": last,
                        "imageID": format!("{INIT_IMAGE}@sha256:{:016x}", hash(INIT_IMAGE)),
                        "containerID": format!("containerd://{:016x}{:016x}", hash(init), restarts),
                    }]);
                    if !ready {
                        status["conditions"][1] = json!({
                            "type": "Initialized", "status": "False",
                            "reason": "ContainersNotInitialized",
                            "message": format!("containers with incomplete status: [{init}]"),
                            "lastProbeTime": null,
                            "lastTransitionTime": ts(p.created + k8s::seconds(1)),
                        });
                    }
                }
            }
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    }

    fn count(&self, f: impl Fn(&PodState) -> bool) -> u32 {
        self.pods.iter().filter(|p| f(p)).count() as u32
    }

    fn deployment_json(&self) -> (Value, Vec<Value>) {
        let r0 = &self.revisions[0];
        let ready = self.count(|p| p.ready && p.deleting.is_none());
        let updated = self.count(|p| p.rev == 0);
        let new_ready = self.count(|p| p.rev == 0 && p.ready);
        let total = self.count(|p| p.deleting.is_none());
        let rs0 = self.rs_name(0);
        let stuck_since = r0.at + k8s::minutes(10);
        let progressing = if new_ready >= self.replicas {
            json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                   "message": format!("ReplicaSet \"{rs0}\" has successfully progressed."),
                   "lastUpdateTime": ts(r0.at + k8s::minutes(1)), "lastTransitionTime": ts(r0.at)})
        } else if stuck_since <= self.now {
            json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                   "message": format!("ReplicaSet \"{rs0}\" has timed out progressing."),
                   "lastUpdateTime": ts(stuck_since), "lastTransitionTime": ts(stuck_since)})
        } else {
            json!({"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                   "message": format!("ReplicaSet \"{rs0}\" is progressing."),
                   "lastUpdateTime": ts(r0.at), "lastTransitionTime": ts(r0.at)})
        };
        let available = ready + self.replicas / 4 >= self.replicas;
        let avail_since = ts(self.created + k8s::minutes(2));
        let mut status = json!({
            "observedGeneration": r0.number + 2, "replicas": total, "updatedReplicas": updated,
            "readyReplicas": ready, "availableReplicas": ready,
            "conditions": [
                {"type": "Available", "status": if available { "True" } else { "False" },
                 "reason": if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                 "message": if available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." },
                 "lastUpdateTime": avail_since, "lastTransitionTime": avail_since},
                progressing,
            ],
        });
        if self.replicas > ready {
            status["unavailableReplicas"] = json!(self.replicas - ready);
        }
        let dep_uid = self.own_uid();
        let dep = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": self.name, "namespace": self.ns, "uid": dep_uid,
                "generation": r0.number + 2, "creationTimestamp": ts(self.created),
                "labels": self.app_labels(),
                "annotations": {"deployment.kubernetes.io/revision": r0.number.to_string()},
            },
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": self.selector_labels()},
                "template": self.template(0, BTreeMap::new()),
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
            },
            "status": status,
        });
        let rsets = (0..self.revisions.len())
            .map(|rev| {
                let r = &self.revisions[rev];
                let h = self.rev_hash(rev);
                let name = self.rs_name(rev);
                let n = self.count(|p| p.rev == rev && p.deleting.is_none());
                let ready = self.count(|p| p.rev == rev && p.ready && p.deleting.is_none());
                let mut sel = self.selector_labels();
                sel.insert("pod-template-hash".into(), h.clone());
                let mut labels = self.app_labels();
                labels.insert("pod-template-hash".into(), h.clone());
                json!({
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {
                        "name": name, "namespace": self.ns, "uid": uid(&format!("rs/{}/{name}", self.ns)),
                        "creationTimestamp": ts(r.at), "generation": 1, "labels": labels,
                        "annotations": {
                            "deployment.kubernetes.io/revision": r.number.to_string(),
                            "deployment.kubernetes.io/desired-replicas": self.replicas.to_string(),
                            "deployment.kubernetes.io/max-replicas": (self.replicas + 1).to_string(),
                        },
                        "ownerReferences": owner("apps/v1", "Deployment", &self.name, &dep_uid),
                    },
                    "spec": {
                        "replicas": n,
                        "selector": {"matchLabels": sel},
                        "template": self.template(rev, k8s::labels(&[("pod-template-hash", &h)])),
                    },
                    "status": {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": ready,
                               "availableReplicas": ready, "observedGeneration": 1},
                })
            })
            .collect();
        (dep, rsets)
    }

    fn statefulset_json(&self) -> Value {
        let r0 = &self.revisions[0];
        let rolling = self.pods.iter().any(|p| p.rev != 0);
        let current = if rolling { 1 } else { 0 };
        let ready = self.count(|p| p.ready && p.deleting.is_none());
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {
                "name": self.name, "namespace": self.ns, "uid": self.own_uid(),
                "generation": r0.number, "creationTimestamp": ts(self.created), "labels": self.app_labels(),
            },
            "spec": {
                "replicas": self.replicas, "serviceName": self.name,
                "selector": {"matchLabels": self.selector_labels()},
                "template": self.template(0, BTreeMap::new()),
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            },
            "status": {
                "observedGeneration": r0.number, "replicas": self.pods.len(),
                "readyReplicas": ready, "availableReplicas": ready,
                "currentReplicas": self.count(|p| p.rev == current),
                "updatedReplicas": self.count(|p| p.rev == 0),
                "currentRevision": format!("{}-{}", self.name, self.rev_hash(current.min(self.revisions.len() - 1))),
                "updateRevision": format!("{}-{}", self.name, self.rev_hash(0)),
                "collisionCount": 0,
            },
        })
    }

    fn daemonset_json(&self) -> Value {
        let r0 = &self.revisions[0];
        let ready = self.count(|p| p.ready);
        let desired = self.pods.len() as u32;
        let mut status = json!({
            "observedGeneration": r0.number,
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": self.count(|p| p.node.is_some()),
            "numberReady": ready, "numberAvailable": ready,
            "numberMisscheduled": 0,
            "updatedNumberScheduled": self.count(|p| p.rev == 0),
        });
        if desired > ready {
            status["numberUnavailable"] = json!(desired - ready);
        }
        json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {
                "name": self.name, "namespace": self.ns, "uid": self.own_uid(),
                "generation": r0.number, "creationTimestamp": ts(self.created), "labels": self.app_labels(),
                "annotations": {"deprecated.daemonset.template.generation": r0.number.to_string()},
            },
            "spec": {
                "selector": {"matchLabels": self.selector_labels()},
                "template": self.template(0, BTreeMap::new()),
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10,
            },
            "status": status,
        })
    }

    fn job_json(&self, run: usize) -> Value {
        let r = &self.runs[run];
        let rev = self
            .pods
            .iter()
            .find(|p| p.run == run)
            .map(|p| p.rev)
            .unwrap_or(0);
        let name = self.job_name(run);
        let u = self.job_uid(run);
        let pods: Vec<&PodState> = self.pods.iter().filter(|p| p.run == run).collect();
        let active = pods
            .iter()
            .filter(|p| !matches!(p.phase, "Succeeded" | "Failed") && p.deleting.is_none())
            .count();
        let failed = pods.iter().filter(|p| p.phase == "Failed").count();
        let succeeded = pods.iter().filter(|p| p.phase == "Succeeded").count();
        let ready = pods.iter().filter(|p| p.ready).count();
        let mut meta = json!({
            "name": name, "namespace": self.ns, "uid": u, "generation": 1,
            "creationTimestamp": ts(r.started),
            "labels": {
                "batch.kubernetes.io/controller-uid": u, "batch.kubernetes.io/job-name": name,
                "controller-uid": u, "job-name": name,
            },
            "annotations": {"batch.kubernetes.io/job-tracking": ""},
        });
        if self.kind == Kind::CronJob {
            meta["ownerReferences"] = owner("batch/v1", "CronJob", &self.name, &self.own_uid());
        }
        let mut status = json!({
            "startTime": ts(r.started), "active": active, "ready": ready,
            "terminating": 0, "uncountedTerminatedPods": {},
        });
        if failed > 0 {
            status["failed"] = json!(failed);
        }
        if succeeded > 0 {
            status["succeeded"] = json!(succeeded);
        }
        match (&r.failed, r.finished) {
            (Some((reason, message)), Some(at)) => {
                status["conditions"] = json!([
                    {"type": "FailureTarget", "status": "True", "reason": reason, "message": message,
                     "lastProbeTime": ts(at), "lastTransitionTime": ts(at)},
                    {"type": "Failed", "status": "True", "reason": reason, "message": message,
                     "lastProbeTime": ts(at), "lastTransitionTime": ts(at)},
                ]);
            }
            (None, Some(at)) => {
                status["completionTime"] = json!(ts(at));
                status["conditions"] = json!([
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": ts(at), "lastTransitionTime": ts(at)},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods",
                     "lastProbeTime": ts(at), "lastTransitionTime": ts(at)},
                ]);
            }
            _ => {}
        }
        let mut template = self.template(rev, self.job_labels(run));
        template["metadata"]["labels"]
            .as_object_mut()
            .map(|m| m.remove("app.kubernetes.io/managed-by"));
        json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": r.backoff_limit,
                "completionMode": "NonIndexed", "suspend": false, "manualSelector": false,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": u}},
                "template": template,
            },
            "status": status,
        })
    }

    fn cronjob_json(&self) -> Value {
        let latest = &self.runs[0];
        let mut status = json!({"lastScheduleTime": ts(latest.started)});
        let active = latest.finished.is_none();
        if active {
            status["active"] = json!([{
                "kind": "Job", "namespace": self.ns, "name": self.job_name(0),
                "uid": self.job_uid(0), "apiVersion": "batch/v1", "resourceVersion": "48211690",
            }]);
        }
        if let Some(ok) = self
            .runs
            .iter()
            .find(|r| r.failed.is_none() && r.finished.is_some())
        {
            status["lastSuccessfulTime"] = json!(ok.finished.map(ts));
        }
        json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {
                "name": self.name, "namespace": self.ns, "uid": self.own_uid(), "generation": self.revisions[0].number,
                "creationTimestamp": ts(self.created), "labels": self.app_labels(),
            },
            "spec": {
                "schedule": self.schedule, "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid", "suspend": false,
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"metadata": {}, "spec": {
                    "backoffLimit": latest.backoff_limit,
                    "template": self.template(0, BTreeMap::new()),
                }},
            },
            "status": status,
        })
    }

    /// Every object of the workload, in the list each endpoint answers with.
    pub fn objects(&self) -> Objects {
        let mut o = Objects {
            pods: (0..self.pods.len()).map(|i| self.pod_json(i)).collect(),
            ..Objects::default()
        };
        match self.kind {
            Kind::Deployment => {
                let (d, rs) = self.deployment_json();
                o.deployments.push(d);
                o.replicasets = rs;
            }
            Kind::StatefulSet => o.statefulsets.push(self.statefulset_json()),
            Kind::DaemonSet => o.daemonsets.push(self.daemonset_json()),
            Kind::Job => o.jobs.push(self.job_json(0)),
            Kind::CronJob => {
                o.cronjobs.push(self.cronjob_json());
                o.jobs = (0..self.runs.len()).map(|r| self.job_json(r)).collect();
            }
            Kind::Pod => {}
        }
        o
    }

    /// `back-off 5m0s restarting failed container=c pod=p_ns(uid)`, as the kubelet words it.
    pub fn backoff_message(&self, i: usize) -> String {
        format!(
            "back-off 5m0s restarting failed container={} pod={}_{}({})",
            self.container,
            self.pod_name(i),
            self.ns,
            self.pod_uid(i)
        )
    }
}
