//! A generator of recorded worlds (case directories) from failure class × subject kind ×
//! distractor × integrations present, in the real APIs' JSON shapes, to measure whether the
//! diagnosis rules are general rather than tuned to the built-in cases.
//!
//! Everything is deterministic: names, ids and variants come from a stable hash of the world's
//! index, never from a random source.

pub mod alerts;
pub mod classes;
pub mod distractors;
pub mod k8s;
pub mod runner;
pub mod workload;

use alerts::{LabelStyle, Rule, Shape, Target};
use chrono::{DateTime, Utc};
use k8s::{NodeHealth, hash, list};
use serde_json::{Value, json};
use sitrep::model::Category;
use std::path::Path;
use workload::{Objects, Style, Workload};

/// The subject's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Pod,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Deployment,
        Kind::StatefulSet,
        Kind::DaemonSet,
        Kind::Job,
        Kind::CronJob,
        Kind::Pod,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Deployment => "deployment",
            Kind::StatefulSet => "statefulset",
            Kind::DaemonSet => "daemonset",
            Kind::Job => "job",
            Kind::CronJob => "cronjob",
            Kind::Pod => "pod",
        }
    }

    pub fn is_batch(self) -> bool {
        matches!(self, Kind::Job | Kind::CronJob)
    }
}

/// The failure classes, each with the category the product's taxonomy gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Oom,
    ImagePull,
    VolumeMissing,
    EnvRefMissing,
    InitFailure,
    MissingExecutable,
    CrashAfterRelease,
    CrashNoTermination,
    UnschedulableSelector,
    UnschedulableResources,
    ProbeMisconfigured,
    DependencyRefused,
    NotReadyDependency,
    QuotaExceeded,
    DnsUnresolvable,
    JobScriptError,
    NodeNotReady,
    RecoveredFlap,
    LatencyUnmeasurable,
    LatencySlowDependency,
    ErrorsAfterRelease,
    Watchdog,
}

use Kind::{CronJob, DaemonSet, Deployment, Job, Pod, StatefulSet};

impl Class {
    pub const ALL: [Class; 22] = [
        Class::Oom,
        Class::ImagePull,
        Class::VolumeMissing,
        Class::EnvRefMissing,
        Class::InitFailure,
        Class::MissingExecutable,
        Class::CrashAfterRelease,
        Class::CrashNoTermination,
        Class::UnschedulableSelector,
        Class::UnschedulableResources,
        Class::ProbeMisconfigured,
        Class::DependencyRefused,
        Class::NotReadyDependency,
        Class::QuotaExceeded,
        Class::DnsUnresolvable,
        Class::JobScriptError,
        Class::NodeNotReady,
        Class::RecoveredFlap,
        Class::LatencyUnmeasurable,
        Class::LatencySlowDependency,
        Class::ErrorsAfterRelease,
        Class::Watchdog,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Oom => "oom",
            Class::ImagePull => "image_pull",
            Class::VolumeMissing => "volume_missing",
            Class::EnvRefMissing => "env_ref_missing",
            Class::InitFailure => "init_failure",
            Class::MissingExecutable => "missing_executable",
            Class::CrashAfterRelease => "crash_after_release",
            Class::CrashNoTermination => "crash_no_termination",
            Class::UnschedulableSelector => "unschedulable_selector",
            Class::UnschedulableResources => "unschedulable_resources",
            Class::ProbeMisconfigured => "probe_misconfigured",
            Class::DependencyRefused => "dependency_refused",
            Class::NotReadyDependency => "not_ready_dependency",
            Class::QuotaExceeded => "quota_exceeded",
            Class::DnsUnresolvable => "dns_unresolvable",
            Class::JobScriptError => "job_script_error",
            Class::NodeNotReady => "node_not_ready",
            Class::RecoveredFlap => "recovered_flap",
            Class::LatencyUnmeasurable => "latency_unmeasurable",
            Class::LatencySlowDependency => "latency_slow_dependency",
            Class::ErrorsAfterRelease => "errors_after_release",
            Class::Watchdog => "watchdog",
        }
    }

    /// The subject kinds the class applies to.
    pub fn kinds(self) -> &'static [Kind] {
        match self {
            Class::ImagePull | Class::VolumeMissing | Class::EnvRefMissing => {
                &[Deployment, StatefulSet, DaemonSet, Job, CronJob]
            }
            Class::CrashAfterRelease
            | Class::NotReadyDependency
            | Class::QuotaExceeded
            | Class::InitFailure
            | Class::ErrorsAfterRelease => &[Deployment, StatefulSet, DaemonSet],
            // A DaemonSet's pods are placed per node: a selector nobody matches places none.
            Class::UnschedulableSelector => &[Deployment, StatefulSet, Job, CronJob, Pod],
            Class::ProbeMisconfigured
            | Class::RecoveredFlap
            | Class::LatencyUnmeasurable
            | Class::LatencySlowDependency => &[Deployment, StatefulSet, DaemonSet, Pod],
            Class::DnsUnresolvable => &[Deployment, Job, CronJob],
            Class::JobScriptError => &[Job, CronJob],
            _ => &Kind::ALL,
        }
    }

    /// The integrations a world of this class may have.
    pub fn integrations(self) -> &'static [Integrations] {
        match self {
            // Unmeasurable by construction: no Prometheus at all.
            Class::LatencyUnmeasurable => &[Integrations::K, Integrations::KL],
            _ => &[Integrations::K, Integrations::KL, Integrations::KP],
        }
    }
}

/// What else is in the world to mislead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Distractor {
    None,
    /// Another workload in the namespace, broken differently (sometimes named `<subject>-worker`).
    Neighbour,
    /// Warning events from two hours ago on pods that are gone or fine now.
    StaleEvents,
    /// A read that fails or has no recording (never the class's decisive one).
    MissingEndpoint,
    /// Another label convention on the alert (Datadog, workload_name/type, pod only) and Helm
    /// labels on the pods.
    Labels,
    /// Pods whose names do not start with their workload's (an adopted ReplicaSet, a bare pod).
    Naming,
}

impl Distractor {
    pub const ALL: [Distractor; 6] = [
        Distractor::None,
        Distractor::Neighbour,
        Distractor::StaleEvents,
        Distractor::MissingEndpoint,
        Distractor::Labels,
        Distractor::Naming,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Distractor::None => "none",
            Distractor::Neighbour => "neighbour",
            Distractor::StaleEvents => "stale_events",
            Distractor::MissingEndpoint => "missing_endpoint",
            Distractor::Labels => "labels",
            Distractor::Naming => "naming",
        }
    }

    fn applies(self, kind: Kind) -> bool {
        self != Distractor::Naming || matches!(kind, Kind::Deployment | Kind::Pod)
    }
}

/// The integrations a world answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Integrations {
    /// Kubernetes only.
    K,
    /// Kubernetes and Loki (the same log lines).
    KL,
    /// Kubernetes and Prometheus (the alert's rule, its alerts and its expression's series).
    KP,
}

impl Integrations {
    pub fn name(self) -> &'static str {
        match self {
            Integrations::K => "k8s",
            Integrations::KL => "k8s+loki",
            Integrations::KP => "k8s+prom",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Integrations::K => "k",
            Integrations::KL => "kl",
            Integrations::KP => "kp",
        }
    }
}

/// One world to generate.
#[derive(Clone, Copy, Debug)]
pub struct Combo {
    pub class: Class,
    pub kind: Kind,
    pub distractor: Distractor,
    pub integrations: Integrations,
    /// Picks the sub-variants (names, message forms, label conventions).
    pub n: usize,
}

impl Combo {
    pub fn id(&self) -> String {
        format!(
            "{}-{}-{}-{}",
            self.class.name(),
            self.kind.name(),
            self.distractor.name().replace('_', ""),
            self.integrations.short()
        )
    }
}

/// Every (class, kind) pair with every distractor that applies; the integrations rotate over the
/// distractors (shifted per kind), so every (kind, integrations) and (distractor, integrations)
/// pair occurs without running the full product.
pub fn plan() -> Vec<Combo> {
    let mut out = Vec::new();
    for class in Class::ALL {
        for (ki, &kind) in class.kinds().iter().enumerate() {
            for (di, &distractor) in Distractor::ALL.iter().enumerate() {
                if !distractor.applies(kind) {
                    continue;
                }
                let integ = class.integrations();
                out.push(Combo {
                    class,
                    kind,
                    distractor,
                    integrations: integ[(ki + di) % integ.len()],
                    n: out.len(),
                });
            }
        }
    }
    out
}

/// The world's clock.
pub fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-11T14:32:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("clock: {e}"))
}

/// What a world is built from, before the class fills it in.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub combo: Combo,
    pub now: DateTime<Utc>,
    pub ns: String,
    /// The subject's controller name (a bare pod's `app`).
    pub name: String,
    pub style: Style,
    pub alert_style: LabelStyle,
    /// Deployment: ReplicaSets older than two days were created under this name and adopted.
    pub adopted_from: Option<String>,
    /// Bare pod: its name, when it is not the `app` label.
    pub pod_name: Option<String>,
}

/// `SITREP_WORLDS_SEED`: another seed picks other names, literals, message forms and label
/// conventions for the same plan, to check on worlds no rule was written against.
pub fn seed() -> String {
    std::env::var("SITREP_WORLDS_SEED").unwrap_or_default()
}

const NAMES: [&str; 8] = [
    "checkout", "ledger", "invoicer", "catalog", "shipping", "search", "payments", "reports",
];
const NAMESPACES: [&str; 4] = ["shop", "finance", "platform", "data"];

impl Ctx {
    /// A deterministic choice among `n` for this world and `salt`.
    pub fn pick(&self, salt: &str, n: usize) -> usize {
        let key = format!("{}/{}/{salt}", seed(), self.combo.n);
        (hash(&key) % n.max(1) as u64) as usize
    }

    pub fn new(combo: Combo) -> Ctx {
        let mut ctx = Ctx {
            combo,
            now: now(),
            ns: String::new(),
            name: String::new(),
            style: Style::Classic,
            alert_style: LabelStyle::Mixin,
            adopted_from: None,
            pod_name: None,
        };
        ctx.ns = NAMESPACES[ctx.pick("ns", NAMESPACES.len())].to_string();
        let base = NAMES[ctx.pick("name", NAMES.len())];
        ctx.name = match combo.kind {
            Kind::Job => format!("{base}-migrate"),
            Kind::CronJob => format!("{base}-nightly"),
            Kind::DaemonSet => format!("{base}-agent"),
            _ => base.to_string(),
        };
        ctx
    }

    pub fn kind(&self) -> Kind {
        self.combo.kind
    }

    pub fn image(&self, tag: &str) -> String {
        format!("registry.example.com/{}/{}:{tag}", self.ns, self.name)
    }
}

/// A log body for one pod: lines with their times, or the API's error.
#[derive(Clone, Debug)]
pub enum LogBody {
    Lines(Vec<(DateTime<Utc>, String)>),
    Error(u16, String),
}

/// The logs a pod answers with: its current container, and its previous run.
#[derive(Clone, Debug)]
pub struct PodLog {
    pub pod: String,
    pub app: String,
    pub container: String,
    pub current: LogBody,
    pub previous: LogBody,
}

/// Reads that fail or have no recording.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// The ReplicaSet list answers 403.
    pub replicasets_forbidden: bool,
    /// No recordings for StatefulSets, DaemonSets, Jobs and CronJobs.
    pub no_workload_lists: bool,
    /// Loki answers 503.
    pub loki_down: bool,
}

/// What the verdict must be, derived from the class alone (never from sitrep's wording).
#[derive(Clone, Debug)]
pub struct Expectation {
    pub category: Category,
    pub forbidden_categories: Vec<Category>,
    /// Literals of the world a correct report names (checked against the whole report).
    pub required: Vec<String>,
    /// The symptom is present now, or cannot be measured: `healthy` is wrong.
    pub symptom_present: bool,
}

/// A world as the class and the distractor built it.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub subject: Workload,
    /// Other workloads in the namespace (a dependency, a neighbour).
    pub others: Vec<Workload>,
    pub events: Vec<Value>,
    /// Events about nodes (in `/api/v1/events` only).
    pub node_events: Vec<Value>,
    pub logs: Vec<PodLog>,
    pub nodes: [NodeHealth; 3],
    pub rule: Rule,
    pub target: Target,
    pub alert_style: LabelStyle,
    pub starts: DateTime<Utc>,
    /// The alert expression's series over six hours (Prometheus worlds).
    pub shape: Shape,
    /// The rule is firing now in Prometheus.
    pub rule_active: bool,
    pub expect: Expectation,
    pub faults: Faults,
    /// Text a verdict must not name: the neighbour, stale evidence.
    pub verdict_forbidden: Vec<String>,
    /// The class's decisive literal, to see whether the verdict sentence itself quotes it.
    pub decisive: Vec<String>,
}

/// One generated world.
#[derive(Clone, Debug)]
pub struct World {
    pub combo: Combo,
    pub id: String,
    pub scenario: Scenario,
}

pub fn generate(combo: Combo) -> World {
    let mut ctx = Ctx::new(combo);
    distractors::prepare(&mut ctx);
    let mut scenario = classes::build(&ctx);
    distractors::apply(&ctx, &mut scenario);
    World {
        combo,
        id: combo.id(),
        scenario,
    }
}

/// One line of recordings.ndjson.
pub fn rec(integration: &str, path: &str, status: u16, body: Value) -> Value {
    json!({"integration": integration, "method": "GET", "path": path, "query": {}, "status": status, "body": body})
}

fn lines_text(lines: &[(DateTime<Utc>, String)]) -> String {
    lines
        .iter()
        .map(|(t, l)| format!("{} {l}\n", t.format("%Y-%m-%dT%H:%M:%S%.9fZ")))
        .collect()
}

impl World {
    pub fn ns(&self) -> &str {
        &self.scenario.subject.ns
    }

    fn objects(&self) -> Objects {
        let mut o = self.scenario.subject.objects();
        for w in &self.scenario.others {
            o.extend(w.objects());
        }
        o
    }

    /// The labels on the alert the webhook delivers (in the world's label convention).
    fn alert_labels(&self) -> std::collections::BTreeMap<String, String> {
        let s = &self.scenario;
        alerts::labels(&s.rule, &s.target, s.alert_style)
    }

    /// The labels Prometheus itself gives the rule's alert: always the mixin's.
    fn prometheus_labels(&self) -> std::collections::BTreeMap<String, String> {
        let s = &self.scenario;
        alerts::labels(&s.rule, &s.target, LabelStyle::Mixin)
    }

    /// Every recording of the world, one JSON object each.
    pub fn recordings(&self) -> Vec<Value> {
        let s = &self.scenario;
        let ns = self.ns();
        let o = self.objects();
        let nodes: Vec<Value> = (0..3)
            .map(|i| k8s::node(i, s.nodes[i], s.subject.now))
            .collect();
        let mut all_events = s.events.clone();
        all_events.extend(s.node_events.iter().cloned());
        let mut out = vec![
            rec(
                "kubernetes",
                &format!("/api/v1/namespaces/{ns}/pods"),
                200,
                list("Pod", "v1", o.pods.clone()),
            ),
            rec(
                "kubernetes",
                "/api/v1/pods",
                200,
                list("Pod", "v1", o.pods.clone()),
            ),
            rec(
                "kubernetes",
                &format!("/api/v1/namespaces/{ns}/events"),
                200,
                list("Event", "v1", s.events.clone()),
            ),
            rec(
                "kubernetes",
                "/api/v1/events",
                200,
                list("Event", "v1", all_events),
            ),
            rec(
                "kubernetes",
                "/api/v1/nodes",
                200,
                list("Node", "v1", nodes),
            ),
        ];
        let apps = [
            ("deployments", "Deployment", &o.deployments, "apps/v1"),
            ("replicasets", "ReplicaSet", &o.replicasets, "apps/v1"),
            ("statefulsets", "StatefulSet", &o.statefulsets, "apps/v1"),
            ("daemonsets", "DaemonSet", &o.daemonsets, "apps/v1"),
            ("jobs", "Job", &o.jobs, "batch/v1"),
            ("cronjobs", "CronJob", &o.cronjobs, "batch/v1"),
        ];
        for (resource, kind, items, api) in apps {
            let group = format!("/apis/{api}");
            let workload_list = !matches!(resource, "deployments" | "replicasets");
            if workload_list && s.faults.no_workload_lists {
                continue;
            }
            for path in [
                format!("{group}/namespaces/{ns}/{resource}"),
                format!("{group}/{resource}"),
            ] {
                if resource == "replicasets" && s.faults.replicasets_forbidden {
                    let scope = if path.contains("/namespaces/") {
                        format!(" in the namespace \"{ns}\"")
                    } else {
                        " at the cluster scope".to_string()
                    };
                    out.push(rec("kubernetes", &path, 403, k8s::status(403, "Forbidden", &format!(
                        "replicasets.apps is forbidden: User \"system:serviceaccount:sre:sitrep\" cannot list resource \"replicasets\" in API group \"apps\"{scope}"))));
                    continue;
                }
                out.push(rec(
                    "kubernetes",
                    &path,
                    200,
                    list(kind, api, items.clone()),
                ));
            }
            let forbidden = resource == "replicasets" && s.faults.replicasets_forbidden;
            for item in items.iter().filter(|_| !forbidden) {
                if let Some(name) = item["metadata"]["name"].as_str() {
                    out.push(rec(
                        "kubernetes",
                        &format!("{group}/namespaces/{ns}/{resource}/{name}"),
                        200,
                        item.clone(),
                    ));
                }
            }
        }
        for p in &o.pods {
            if let Some(name) = p["metadata"]["name"].as_str() {
                out.push(rec(
                    "kubernetes",
                    &format!("/api/v1/namespaces/{ns}/pods/{name}"),
                    200,
                    p.clone(),
                ));
            }
        }
        for l in &s.logs {
            let path = format!("/api/v1/namespaces/{ns}/pods/{}/log", l.pod);
            for (body, previous) in [(&l.current, false), (&l.previous, true)] {
                let mut r = match body {
                    LogBody::Lines(lines) => {
                        rec("kubernetes", &path, 200, Value::String(lines_text(lines)))
                    }
                    LogBody::Error(code, msg) => rec(
                        "kubernetes",
                        &path,
                        *code,
                        k8s::status(
                            *code,
                            if *code == 400 {
                                "BadRequest"
                            } else {
                                "InternalError"
                            },
                            msg,
                        ),
                    ),
                };
                if previous {
                    r["query"] = json!({"previous": "true"});
                }
                out.push(r);
            }
        }
        match self.combo.integrations {
            Integrations::K => {}
            Integrations::KL => out.push(self.loki()),
            Integrations::KP => {
                let labels = self.prometheus_labels();
                let ann = alerts::annotations(&s.rule, &s.target);
                let active = s.rule_active.then_some(s.starts);
                out.push(rec(
                    "prometheus",
                    "/api/v1/rules",
                    200,
                    alerts::rules_body(&s.rule, &labels, &ann, active, s.subject.now),
                ));
                out.push(rec(
                    "prometheus",
                    "/api/v1/alerts",
                    200,
                    alerts::alerts_body(&s.rule, &labels, &ann, active),
                ));
                // A query answers with the series' own labels: no alert or external labels.
                let mut series = labels;
                series.remove("severity");
                series.remove("prometheus");
                out.push(rec(
                    "prometheus",
                    "/api/v1/query_range",
                    200,
                    alerts::matrix(&s.rule, &series, s.shape, s.subject.now),
                ));
            }
        }
        out
    }

    /// Loki's `query_range`: the same lines the pods log, one stream per pod and container.
    fn loki(&self) -> Value {
        let s = &self.scenario;
        if s.faults.loki_down {
            return rec(
                "loki",
                "/loki/api/v1/query_range",
                503,
                Value::String("Service Unavailable\n".into()),
            );
        }
        let mut streams = Vec::new();
        for l in &s.logs {
            let mut lines: Vec<(DateTime<Utc>, String)> = Vec::new();
            for body in [&l.previous, &l.current] {
                if let LogBody::Lines(v) = body {
                    for line in v {
                        if !lines.contains(line) {
                            lines.push(line.clone());
                        }
                    }
                }
            }
            if lines.is_empty() {
                continue;
            }
            lines.sort_by_key(|l| std::cmp::Reverse(l.0));
            let values: Vec<Value> = lines
                .iter()
                .map(|(t, line)| json!([t.timestamp_nanos_opt().unwrap_or(0).to_string(), line]))
                .collect();
            streams.push(json!({
                "stream": {"namespace": self.ns(), "pod": l.pod, "container": l.container, "app": l.app,
                           "job": format!("{}/{}", self.ns(), l.app), "stream": "stderr"},
                "values": values,
            }));
        }
        rec(
            "loki",
            "/loki/api/v1/query_range",
            200,
            json!({"status": "success", "data": {
                "resultType": "streams", "result": streams,
                "stats": {"summary": {"bytesProcessedPerSecond": 5123456, "execTime": 0.041}},
            }}),
        )
    }

    pub fn expect(&self) -> sitrep::world::Expect {
        let e = &self.scenario.expect;
        sitrep::world::Expect {
            category: Some(e.category),
            required_keywords: e.required.clone(),
            // Keywords are checked against the whole report (findings, hypotheses, timeline, the
            // alert's labels), so a neighbour rightly listed as "also noticed" would trip a
            // report-wide forbidden keyword: the neighbour is checked on the verdict sentence
            // instead (`world.toml` `verdict_forbidden`, see runner.rs).
            forbidden_keywords: Vec::new(),
            forbidden_categories: e.forbidden_categories.clone(),
            forbidden_cause_keywords: Vec::new(),
            required_evidence: Vec::new(),
            ruling_out_keywords: Vec::new(),
        }
    }

    /// Writes the case directory `dir/<id>`.
    pub fn write(&self, root: &Path) -> std::path::PathBuf {
        let s = &self.scenario;
        let dir = root.join(&self.id);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let write = |file: &str, text: String| {
            std::fs::write(dir.join(file), text)
                .unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
        };
        // No title: the case takes the alert's own (`alertname: summary`), as a recorded one does.
        write(
            "case.toml",
            format!(
                "id = {:?}\nnow = \"{}\"\nsource = \"tests/worlds generator\"\n",
                self.id,
                k8s::ts(s.subject.now)
            ),
        );
        let labels = self.alert_labels();
        let ann = alerts::annotations(&s.rule, &s.target);
        let payload = alerts::webhook(&s.rule, &labels, &ann, s.starts);
        write(
            "alert.json",
            serde_json::to_string_pretty(&payload).unwrap_or_else(|e| panic!("alert: {e}")),
        );
        let mut text = String::new();
        for r in self.recordings() {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        write("recordings.ndjson", text);
        write(
            "expect.toml",
            toml::to_string(&self.expect()).unwrap_or_else(|e| panic!("expect: {e}")),
        );
        let meta = json!({
            "class": self.combo.class.name(), "kind": self.combo.kind.name(),
            "distractor": self.combo.distractor.name(), "integrations": self.combo.integrations.name(),
            "symptom_present": s.expect.symptom_present,
            "verdict_forbidden": s.verdict_forbidden, "decisive": s.decisive,
        });
        let meta: toml::Value =
            serde_json::from_value(meta).unwrap_or_else(|e| panic!("world.toml: {e}"));
        write(
            "world.toml",
            format!(
                "# What generated this world (tests/worlds); not read by sitrep.\n{}",
                toml::to_string(&meta).unwrap_or_else(|e| panic!("world.toml: {e}"))
            ),
        );
        dir
    }
}
