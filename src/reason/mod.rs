//! Deterministic reasoning: analyzers that turn observations into findings, and their ranking.

use crate::model::{
    Action, Alert, AlertInfo, AlertStatus, Category, Change, Check, DeploymentFacts, EvidenceId,
    Finding, Hypothesis, K8sEventFacts, LogLine, NodeFacts, PgFact, PodFacts, RuleInfo, RuledOut,
    Series, SubjectObject, Symptom, WorkloadFacts,
};
use chrono::{DateTime, Utc};
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// How many of the subject's latest log lines are read for the names of its dependencies.
const RELATION_LINES: usize = 5000;

mod actions;
mod checks;
pub mod conventions;
mod coverage;
pub mod discover;
pub mod promql;
mod rank;
mod steps;
mod templates;
pub use checks::cloud;
use checks::{
    changes, config, database, dependencies, logs, metrics, nodes, pods, recovery, rollout,
    scheduling, storm,
};
pub(crate) use steps::subject::workload_keys;
use steps::{subject, symptom, verdict, walk};

/// Everything the Gather stage learned, as typed facts, plus which evidence items hold them.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    /// The alert that triggered the investigation, if any.
    pub alert: Option<Alert>,
    /// The operator's problem statement, when started from a description.
    pub problem: Option<String>,
    /// The alert rule expression investigated when no alert carries one (problem mode).
    pub expr: Option<String>,
    /// The world's clock (a case's `now`, or the real time).
    pub now: DateTime<Utc>,
    pub pods: Vec<PodFacts>,
    pub events: Vec<K8sEventFacts>,
    pub deployments: Vec<DeploymentFacts>,
    /// ReplicaSets, in the same shape as deployments (name, replicas, ready, images, revision, labels).
    pub replica_sets: Vec<DeploymentFacts>,
    /// ControllerRevisions (StatefulSet and DaemonSet rollout history), in the same shape.
    pub controller_revisions: Vec<DeploymentFacts>,
    /// StatefulSets, DaemonSets, Jobs and CronJobs.
    pub workloads: Vec<WorkloadFacts>,
    pub nodes: Vec<NodeFacts>,
    /// Services with their selectors, ports and what their Endpoints list.
    pub services: Vec<crate::model::ServiceFacts>,
    /// Ingresses read on their own (`kubernetes.ingresses`).
    pub ingresses: Vec<crate::model::IngressFacts>,
    /// The cluster's IngressClasses; `None` when they were not read.
    pub ingress_classes: Option<Vec<crate::model::IngressClassFacts>>,
    /// Namespace -> the names of the Secrets listed there (metadata only, never values); a
    /// namespace absent here was not listed.
    pub secrets: BTreeMap<String, Vec<String>>,
    /// Container logs; `labels` carry `pod` and `container` (and `previous` = `true` for the last run).
    pub pod_logs: Vec<LogLine>,
    /// Aggregated logs (Loki).
    pub logs: Vec<LogLine>,
    pub metrics: Vec<Series>,
    pub rules: Vec<RuleInfo>,
    pub alerts: Vec<AlertInfo>,
    pub changes: Vec<Change>,
    /// PostgreSQL rows: backends (activity, lock chains), connections, statements, replicas, databases.
    pub postgres: Vec<PgFact>,
    /// AWS reads: RDS instances and events, CloudWatch series, Performance Insights load.
    pub cloud: Vec<crate::model::CloudFact>,
    /// Evidence kind (`kubernetes/pods`, `metrics`, ...) -> ids of the evidence items of that kind.
    pub evidence: BTreeMap<String, Vec<EvidenceId>>,
    /// Per integration: configured, how many calls answered, failed or came back empty.
    /// Empty when unknown (observations built by hand), which the analyzers do not hold against anyone.
    pub coverage: BTreeMap<String, Coverage>,
}

/// What one integration gave the investigation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    pub configured: bool,
    pub answered: u32,
    /// Answers that held nothing (0 pods, 0 series, ...).
    pub empty: u32,
    pub failed: u32,
    /// The first failure, one line.
    pub error: Option<String>,
}

impl Coverage {
    /// `absent`, `failed`, `answered`, `empty` or `not asked`.
    pub fn status(&self) -> &'static str {
        if !self.configured {
            "absent"
        } else if self.answered > self.empty {
            "answered"
        } else if self.failed > 0 {
            "failed"
        } else if self.answered > 0 {
            "empty"
        } else {
            "not asked"
        }
    }
}

impl Observations {
    /// Evidence ids of one kind (empty when none was gathered).
    pub fn evidence_of(&self, kind: &str) -> Vec<EvidenceId> {
        self.evidence.get(kind).cloned().unwrap_or_default()
    }

    /// Evidence ids of several kinds, in order, deduplicated.
    pub fn evidence_of_kinds(&self, kinds: &[&str]) -> Vec<EvidenceId> {
        let mut out: Vec<EvidenceId> = Vec::new();
        for k in kinds {
            for id in self.evidence_of(k) {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    /// Whether the triggering alert is already resolved.
    pub fn alert_resolved(&self) -> bool {
        self.alert
            .as_ref()
            .is_some_and(|a| a.status == AlertStatus::Resolved)
    }
}

/// What the analyzers concluded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Analysis {
    pub findings: Vec<Finding>,
    /// Best first.
    pub hypotheses: Vec<Hypothesis>,
    pub ruled_out: Vec<RuledOut>,
    pub category: Category,
    pub root_cause: String,
    /// 0.0 ..= 1.0
    pub confidence: f32,
    /// Proposed remediations; `id` is empty (the agent assigns ids).
    pub suggested_actions: Vec<Action>,
    /// Diagnosis step 1: what the alert or problem is about.
    pub subject: Vec<SubjectObject>,
    /// Diagnosis step 2: the symptom, measured.
    pub symptom: Symptom,
    /// Diagnosis step 3: the checks, failing first.
    pub checks: Vec<Check>,
}

/// Run every analyzer over the observations and rank what they found.
pub fn analyze(obs: &Observations) -> Analysis {
    let stated = refusals_from_conditions(obs);
    let obs = stated.as_ref().unwrap_or(obs);
    let ctx = Ctx::new(obs);
    let mut signals = Vec::new();
    signals.extend(pods::crash_loop(&ctx));
    signals.extend(pods::failed_runs(&ctx));
    signals.extend(pods::oom_killed(&ctx));
    signals.extend(pods::image_pull(&ctx));
    signals.extend(pods::probe_failures(&ctx));
    signals.extend(scheduling::failed_scheduling(&ctx));
    signals.extend(scheduling::quota_exceeded(&ctx));
    signals.extend(scheduling::limit_range(&ctx));
    signals.extend(scheduling::scheduling_recovered(&ctx));
    signals.extend(pods::container_config(&ctx));
    signals.extend(pods::start_blocked(&ctx));
    signals.extend(nodes::node_not_ready(&ctx));
    signals.extend(nodes::node_pressure(&ctx));
    signals.extend(nodes::drain_blocked(&ctx));
    signals.extend(nodes::node_agents(&ctx));
    signals.extend(rollout::rollout_stuck(&ctx));
    signals.extend(rollout::rollout_paused(&ctx));
    signals.extend(rollout::recent_changes(&ctx));
    signals.extend(config::changed_before_onset(&ctx));
    signals.extend(recovery::recovered(&ctx));
    signals.extend(metrics::threshold_breaches(&ctx));
    signals.extend(metrics::step_changes(&ctx));
    signals.extend(metrics::hpa_at_max(&ctx));
    signals.extend(metrics::at_limit(&ctx));
    signals.extend(logs::signatures(&ctx));
    signals.extend(checks::slow_calls::slow_calls(&ctx));
    signals.extend(checks::cpu_limit::cpu_limit(&ctx));
    signals.extend(checks::create_refused::create_refused(&ctx));
    signals.extend(checks::service_endpoints::service_endpoints(&ctx));
    signals.extend(checks::service_endpoints::dialled_ports(&ctx));
    signals.extend(checks::ingress::backends(&ctx));
    signals.extend(checks::ingress::classes(&ctx));
    signals.extend(checks::ingress::tls(&ctx));
    signals.extend(checks::ingress::routes(&ctx));
    signals.extend(checks::network::network_policies(&ctx));
    signals.extend(checks::network::egress_policies(&ctx));
    signals.extend(checks::network::ingress_policies(&ctx));
    signals.extend(checks::autoscaler::autoscaler(&ctx));
    signals.extend(checks::scaled_to_zero::scaled_to_zero(&ctx));
    signals.extend(checks::cluster_dns::cluster_dns(&ctx));
    signals.extend(checks::volume::volume_filling(&ctx));
    signals.extend(checks::eviction::evictions(&ctx));
    signals.extend(checks::feature_flags::flag_turned_on(&ctx));
    signals.extend(checks::claims::claims(&ctx));
    signals.extend(dependencies::unhealthy(&ctx));
    signals.extend(storm::storm(&ctx));
    signals.extend(database::lock_contention(&ctx));
    signals.extend(database::connection_exhaustion(&ctx));
    signals.extend(database::long_queries(&ctx));
    signals.extend(database::replication_lag(&ctx));
    signals.extend(database::wraparound(&ctx));
    signals.extend(database::unreachable(&ctx));
    signals.extend(cloud::analyze(&ctx));
    signals.extend(coverage::report(&ctx));
    signals.extend(also_noticed(&ctx));
    rank::rank(&ctx, signals)
}

/// A controller's `ReplicaFailure` condition states what its FailedCreate events said (an
/// exceeded quota, a missing service account); those events expire an hour after the last one,
/// the condition stays while the failure does. A condition whose refusal no event tells is read
/// as that event, so every check that reads refusals reads it. `None` when nothing is added.
fn refusals_from_conditions(obs: &Observations) -> Option<Observations> {
    let told = |message: &str| {
        obs.events
            .iter()
            .any(|e| e.reason == "FailedCreate" && e.message.contains(message))
    };
    let stated: Vec<K8sEventFacts> = obs
        .deployments
        .iter()
        .map(|d| ("Deployment", d))
        .chain(obs.replica_sets.iter().map(|r| ("ReplicaSet", r)))
        .filter_map(|(kind, d)| {
            let (status, reason, message) = d.conditions.get("ReplicaFailure")?;
            (status == "True" && reason == "FailedCreate" && !message.is_empty() && !told(message))
                .then(|| K8sEventFacts {
                    event_type: "Warning".into(),
                    reason: "FailedCreate".into(),
                    message: format!("Error creating: {message}"),
                    object: format!("{kind}/{}", d.name),
                    namespace: d.namespace.clone(),
                    count: 1,
                    first_seen: None,
                    last_seen: None,
                })
        })
        .collect();
    if stated.is_empty() {
        return None;
    }
    let mut owned = obs.clone();
    owned.events.extend(stated);
    Some(owned)
}

/// The pods of the subject the alert or problem is about, by the same resolution the diagnosis
/// uses; None when nothing resolves (Gather then reads the pods in trouble).
pub fn subject_pods(obs: &Observations) -> Option<Vec<String>> {
    let s = subject::resolve(obs);
    (s.resolved && !s.pods.is_empty()).then_some(s.pods)
}

/// The namespace of the subject the alert or problem is about, when it resolves to one (a
/// namespace named, or the Ingress its words name); None otherwise.
pub fn subject_namespace(obs: &Observations) -> Option<String> {
    let s = subject::resolve(obs);
    s.resolved.then_some(s.namespace).flatten()
}

/// The pods short of ready of the workloads the subject depends on and that are down (its logs or
/// alert name them), so that Gather reads why they are down from their own logs.
pub fn dependency_pods(obs: &Observations) -> Vec<String> {
    let ctx = Ctx::new(obs);
    let mut pods: Vec<String> = ctx
        .dependencies_down()
        .iter()
        .flat_map(|d| d.pods_not_ready())
        .collect();
    // A Service the failing calls dial whose pods look fine: one of them says what it listens on.
    pods.extend(checks::service_endpoints::dialled_pods(&ctx));
    pods
}

/// The Services the subject's failing calls dial whose pods were not listed: (namespace, label
/// selector), so that Gather lists them.
pub fn dialled_unlisted(obs: &Observations) -> Vec<(String, String)> {
    checks::service_endpoints::dialled_unlisted(&Ctx::new(obs))
}

/// Whether `s` is a dotted IPv4 address (`10.96.8.190`), read as text: the reasoning does no I/O.
pub(crate) fn is_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// The DaemonSet a pod belongs to, by its controlling owner: on a node, its agents (network
/// plugin, proxy) are such pods.
pub fn daemonset_of(pod: &PodFacts) -> Option<&str> {
    pod.owner.as_deref()?.strip_prefix("DaemonSet/")
}

/// The one node the subject fails on while its pods elsewhere are fine, so that Gather lists the
/// node's own agents there.
pub fn confined_node(obs: &Observations) -> Option<String> {
    checks::nodes::confined_node(&Ctx::new(obs)).map(str::to_string)
}

/// The namespace of an admission webhook whose Service has no endpoints, when a controller's
/// refusal to create pods names one, so that Gather reads that Service and its pods.
pub fn webhook_down(obs: &Observations) -> Option<String> {
    obs.events
        .iter()
        .filter(|e| e.reason == "FailedCreate")
        .find_map(|e| checks::create_refused::webhook_service(&e.message))
        .map(|(ns, _)| ns)
}

/// Failures elsewhere in what was gathered, with no evidenced edge to the subject: listed as
/// findings ("also noticed") so the engineer sees them, never ranked as the cause.
fn also_noticed(ctx: &Ctx) -> Vec<Signal> {
    if !ctx.subject.resolved {
        return Vec::new();
    }
    let wide = Ctx::unscoped(ctx.obs);
    let mut found = Vec::new();
    found.extend(pods::crash_loop(&wide));
    found.extend(pods::oom_killed(&wide));
    found.extend(pods::image_pull(&wide));
    found.extend(pods::container_config(&wide));
    found.extend(pods::start_blocked(&wide));
    found.extend(scheduling::failed_scheduling(&wide));
    found
        .into_iter()
        .filter(|s| !s.benign && s.cause.is_some() && !s.objects.is_empty())
        .filter(|s| s.objects.iter().all(|o| rank::relation(ctx, o).is_none()))
        .map(|mut s| {
            s.set_aside();
            s.ruled_out.clear();
            s
        })
        .collect()
}

/// A level shift in a series: the index where it starts and the levels before and after.
pub fn level_shift(points: &[(f64, f64)]) -> Option<(usize, f64, f64)> {
    metrics::step(points)
}

/// One analyzer's conclusion, richer than a [`Finding`]: whether it can be the root cause,
/// what it rules out and what it would do about it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Signal {
    pub analyzer: &'static str,
    pub summary: String,
    pub detail: String,
    pub category: Category,
    /// How the check knows the failure it reports.
    pub basis: checks::Basis,
    /// Details its evidence establishes beyond the basis (a limit read, a refusal the dependency
    /// stated, an onset that lines up with the alarm): each is one more evidenced link.
    pub links: u8,
    /// Derived by the verdict's walk from the links evidenced; never set by a check.
    pub confidence: f32,
    /// Evidenced links the walk counted: the check's own and those between checks.
    pub weight: u8,
    /// Another failing check explains it (it is a link in that check's chain, not its end), or
    /// it is the alert's own condition, which a mechanism found explains.
    pub explained: bool,
    pub evidence: Vec<EvidenceId>,
    /// The root-cause statement when this signal can explain the alert; None for context.
    pub cause: Option<String>,
    /// True when the signal says the alarm is benign (recovered, resolved, expected churn).
    pub benign: bool,
    pub ruled_out: Vec<RuledOut>,
    pub actions: Vec<Action>,
    /// Objects this signal is about (`pod/x`, `node/y`, `deployment/z`), to tell whether it concerns the alert.
    pub objects: Vec<String>,
    /// When another active signal of this category exists, this one is probably its symptom.
    pub symptom_of: Option<Category>,
    /// A failure with no evidenced edge to the subject: reported as "also noticed", never a cause.
    pub unrelated: bool,
    /// When the failure began, when its evidence has a time.
    pub since: Option<DateTime<Utc>>,
    /// When it ended, for a failure that did (history).
    pub until: Option<DateTime<Utc>>,
    /// A failure that already ended (a restart long ago, a flap, a metric back within bounds):
    /// history, not a check that passed.
    pub history: bool,
    /// It reads the alert's own series (or the instance's own CloudWatch metric): what it says
    /// is the symptom step's reading, so the verdict does not say it twice.
    pub reads_symptom: bool,
}

impl Signal {
    /// Report this failure as "also noticed": context, never the cause, nothing proposed for it.
    pub(crate) fn set_aside(&mut self) {
        self.unrelated = true;
        self.cause = None;
        self.actions.clear();
        self.summary = format!(
            "also noticed (no evidenced link to the subject): {}",
            self.summary
        );
    }

    /// Its declaration: id, title, concern and part in the walk.
    pub(crate) fn decl(&self) -> checks::Decl {
        checks::declared(self.analyzer)
    }

    /// The links its own evidence establishes, before the walk links it to other checks.
    pub(crate) fn own_links(&self) -> u8 {
        self.basis.links() + self.links
    }

    pub(crate) fn finding(&self) -> Finding {
        Finding {
            analyzer: self.analyzer.to_string(),
            summary: self.summary.clone(),
            detail: self.detail.clone(),
            category: self.category,
            confidence: self.confidence,
            evidence: self.evidence.clone(),
        }
    }
}

/// Observations plus what the alert points at, computed once for every analyzer.
pub(crate) struct Ctx<'a> {
    pub obs: &'a Observations,
    /// What the alert or problem is about (diagnosis step 1).
    pub subject: subject::Subject,
    /// Computed once, on first use: see [`Ctx::recent_subject_lines`] and [`Ctx::alert_names`].
    recent_lines: OnceCell<Vec<&'a LogLine>>,
    /// The known failure signatures of the scoped log lines: see [`Ctx::subject_hits`].
    hits: OnceCell<Vec<logs::Hits>>,
    alert_text: OnceCell<String>,
    /// The down dependencies along edges: see [`Ctx::dependencies_down`].
    down: OnceCell<Vec<checks::dependencies::Down<'a>>>,
    /// The Services the subject's failing calls dial, by name: see [`Ctx::dialled_services`].
    dialled: OnceCell<Vec<String>>,
    /// The observations indexed by object, owner and node, built once on first use.
    index: OnceCell<Index<'a>>,
    /// The changes the integrations listed, and those the observations show (rollbacks,
    /// scaling) that no integration listed as such.
    pub changes: Vec<Change>,
    pub focus_pods: Vec<String>,
    pub focus_nodes: Vec<String>,
    pub focus_deployment: Option<String>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(obs: &'a Observations) -> Self {
        let mut text = String::new();
        if let Some(a) = &obs.alert {
            for (k, v) in a.labels.iter().chain(a.annotations.iter()) {
                text.push_str(k);
                text.push('=');
                text.push_str(v);
                text.push('\n');
            }
        }
        if let Some(p) = &obs.problem {
            text.push_str(p);
        }
        let alert_text = text.to_lowercase();
        let subject = subject::resolve(obs);
        let mentioned = |name: &str| subject::mentions(&alert_text, name);
        let mut focus_pods: Vec<String> = obs
            .pods
            .iter()
            .filter(|p| mentioned(&p.name) || subject.named_pods.contains(&p.name))
            .map(|p| p.name.clone())
            .collect();
        focus_pods.dedup();
        let mut focus_nodes: Vec<String> = obs
            .nodes
            .iter()
            .filter(|n| mentioned(&n.name))
            .map(|n| n.name.clone())
            .collect();
        focus_nodes.dedup();
        let label_dep = obs.alert.as_ref().and_then(|a| {
            [
                "deployment",
                "kube_deployment",
                "workload_name",
                "app",
                "service",
            ]
            .iter()
            .find_map(|k| a.labels.get(*k).or_else(|| a.annotations.get(*k)))
            .cloned()
        });
        let subject_deployment = subject
            .workload("Deployment")
            .map(str::to_string)
            .or_else(|| {
                subject.workload("ReplicaSet").and_then(|rs| {
                    obs.replica_sets
                        .iter()
                        .find(|r| r.name == rs)
                        .and_then(|r| r.owner.as_deref())
                        .and_then(|o| o.strip_prefix("Deployment/"))
                        .map(str::to_string)
                })
            });
        // Without a resolved subject, the older guesses: a label, a name in the text, the only one.
        let guessed = || {
            label_dep
                .clone()
                .filter(|d| {
                    obs.deployments.is_empty() || obs.deployments.iter().any(|x| &x.name == d)
                })
                .or_else(|| {
                    let mut names: Vec<&str> = obs
                        .deployments
                        .iter()
                        .map(|d| d.name.as_str())
                        .filter(|n| mentioned(n))
                        .collect();
                    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
                    names.first().map(|s| s.to_string())
                })
                .or_else(|| {
                    focus_pods
                        .first()
                        .and_then(|p| obs.pods.iter().find(|x| &x.name == p))
                        .and_then(pod_deployment)
                })
                .or_else(|| (obs.deployments.len() == 1).then(|| obs.deployments[0].name.clone()))
        };
        let focus_deployment = if subject.resolved {
            subject_deployment
        } else {
            guessed()
        };
        Ctx {
            obs,
            subject,
            changes: all_changes(obs),
            recent_lines: OnceCell::new(),
            hits: OnceCell::new(),
            alert_text: OnceCell::new(),
            down: OnceCell::new(),
            dialled: OnceCell::new(),
            index: OnceCell::new(),
            focus_pods,
            focus_nodes,
            focus_deployment,
        }
    }

    /// How statements name the subject: its workload, else the pod or node it names, else `fallback`.
    pub(crate) fn scope_name(&self, fallback: &str) -> String {
        self.focus_deployment
            .clone()
            .or_else(|| {
                let space = self.subject.application.as_ref()?;
                Some(format!("the workloads of namespace {space}"))
            })
            .or_else(|| self.subject.workloads.first().map(|(_, n)| n.clone()))
            .or_else(|| self.subject.named_pods.first().cloned())
            .or_else(|| self.subject.nodes.first().cloned())
            .unwrap_or_else(|| fallback.to_string())
    }

    /// The failure signatures of the scoped log lines ([`logs::scoped_lines`], whose indexes
    /// `Hits::lines` holds), scanned once however many checks read them.
    pub(crate) fn dependencies_down(&self) -> &[checks::dependencies::Down<'a>] {
        self.down.get_or_init(|| checks::dependencies::down(self))
    }

    /// The names of the Services the subject's failing calls dial, found once however many
    /// objects ask for their relation.
    pub(crate) fn dialled_services(&self) -> &[String] {
        self.dialled
            .get_or_init(|| checks::service_endpoints::dialled_names(self))
    }

    pub(crate) fn subject_hits(&self) -> &[logs::Hits] {
        self.hits
            .get_or_init(|| logs::scan(logs::scoped_lines(self).iter().copied()))
    }

    /// The subject's latest log lines, newest first: what it talks to now, where the names of
    /// its dependencies are read. Bounded, so million-line logs stay cheap.
    pub(crate) fn recent_subject_lines(&self) -> &[&'a LogLine] {
        self.recent_lines.get_or_init(|| {
            let mut lines = logs::scoped_lines(self);
            lines.reverse();
            lines.truncate(RELATION_LINES);
            lines
        })
    }

    /// The values of the alert's labels and its expression (`upstream="fraud-check"`), which
    /// name what it depends on.
    pub(crate) fn alert_names(&self) -> &str {
        self.alert_text.get_or_init(|| {
            let mut text = String::new();
            if let Some(a) = &self.obs.alert {
                for v in a.labels.values() {
                    text.push_str(v);
                    text.push(' ');
                }
            }
            if let Some(e) = metrics::alert_expr(self) {
                text.push_str(&e);
            }
            text
        })
    }

    /// A context with no subject: every object in scope, for the "also noticed" look.
    pub(crate) fn unscoped(obs: &'a Observations) -> Self {
        Ctx {
            obs,
            subject: subject::Subject::default(),
            changes: all_changes(obs),
            recent_lines: OnceCell::new(),
            hits: OnceCell::new(),
            alert_text: OnceCell::new(),
            down: OnceCell::new(),
            dialled: OnceCell::new(),
            index: OnceCell::new(),
            focus_pods: Vec::new(),
            focus_nodes: Vec::new(),
            focus_deployment: None,
        }
    }

    pub(crate) fn ev(&self, kinds: &[&str]) -> Vec<EvidenceId> {
        self.obs.evidence_of_kinds(kinds)
    }

    /// Whether a pod is what the alert is about (or the alert names no pod and the pod belongs to its deployment).
    pub(crate) fn pod_in_scope(&self, pod: &PodFacts) -> bool {
        if self.focus_pods.iter().any(|p| p == &pod.name) {
            return true;
        }
        let s = &self.subject;
        if s.resolved && (!s.pods.is_empty() || !s.workloads.is_empty()) {
            return s.has_pod(pod);
        }
        if s.resolved && !s.nodes.is_empty() {
            return pod.node.as_ref().is_some_and(|n| s.nodes.contains(n));
        }
        match (&self.focus_deployment, pod_deployment(pod)) {
            (Some(d), Some(pd)) => d == &pd,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// Pods of the same owner as `pod`, excluding itself.
    pub(crate) fn siblings(&self, pod: &PodFacts) -> Vec<&'a PodFacts> {
        let Some(owner) = self.workload_of(pod) else {
            return Vec::new();
        };
        let index = self.index();
        let Some(&wid) = index.owner_ids.get(&owner) else {
            return Vec::new();
        };
        index
            .by_workload
            .get(&(pod.namespace.as_str(), wid))
            .map(|pods| {
                pods.iter()
                    .copied()
                    .filter(|p| p.name != pod.name)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The workload (kind, name) that controls a pod (see [`subject::workload_of`]), from the
    /// index when the pod is one of those gathered.
    pub(crate) fn workload_of(&self, pod: &PodFacts) -> Option<(String, String)> {
        let index = self.index();
        match index.workloads.get(&std::ptr::from_ref(pod)) {
            Some(Some(wid)) => index.owners.get(*wid).cloned(),
            Some(None) => None,
            None => subject::workload_of(self.obs, pod),
        }
    }

    /// Unique pods (lists gathered more than once may repeat a pod), later entries win.
    pub(crate) fn pods(&self) -> Vec<&'a PodFacts> {
        self.index().pods.clone()
    }

    /// The first unique pod of this name (in any namespace).
    pub(crate) fn pod_named(&self, name: &str) -> Option<&'a PodFacts> {
        self.index().by_name.get(name).copied()
    }

    /// Unique pods scheduled to a node.
    pub(crate) fn pods_on(&self, node: &str) -> Vec<&'a PodFacts> {
        self.index().by_node.get(node).cloned().unwrap_or_default()
    }

    /// Unique events (the same event listed by several calls counts once).
    pub(crate) fn events(&self) -> Vec<&'a K8sEventFacts> {
        self.index().events.clone()
    }

    /// Events about one object (`Kind/name` or bare name).
    pub(crate) fn events_for(&self, name: &str) -> Vec<&'a K8sEventFacts> {
        let index = self.index();
        index
            .events_by_name
            .get(name)
            .map(|ids| ids.iter().map(|&i| index.events[i]).collect())
            .unwrap_or_default()
    }

    /// The ReplicaSets and Deployments gathered, by name.
    pub(crate) fn owners(&self) -> &subject::Owners<'a> {
        &self.index().links
    }

    fn index(&self) -> &Index<'a> {
        self.index.get_or_init(|| Index::new(self.obs))
    }

    /// Minutes between `t` and the world's clock.
    pub(crate) fn minutes_ago(&self, t: DateTime<Utc>) -> f64 {
        (self.obs.now - t).num_seconds() as f64 / 60.0
    }

    /// The ReplicaSet (by name) that a deployment is rolling to: the highest revision when
    /// ReplicaSets were gathered, else the owner of its most recently created live pod.
    pub(crate) fn current_rs(&self, deployment: &str) -> Option<String> {
        let rs: Vec<&DeploymentFacts> = self
            .obs
            .replica_sets
            .iter()
            .filter(|r| match r.owner.as_deref() {
                Some(owner) => owner == format!("Deployment/{deployment}"),
                // No owner read: the controller names it `<deployment>-<pod-template-hash>`.
                None => r
                    .labels
                    .get("pod-template-hash")
                    .is_some_and(|h| r.name == format!("{deployment}-{h}")),
            })
            .collect();
        if let Some(best) = rs.iter().max_by_key(|r| {
            (
                r.revision
                    .as_deref()
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0),
                r.created_at,
            )
        }) {
            return Some(best.name.clone());
        }
        self.pods()
            .into_iter()
            .filter(|p| {
                !p.deleting
                    && self
                        .workload_of(p)
                        .is_some_and(|(k, n)| k == "Deployment" && n == deployment)
            })
            .max_by_key(|p| p.created_at)
            .and_then(pod_rs)
    }

    pub(crate) fn deployment(&self, name: &str) -> Option<&'a DeploymentFacts> {
        self.obs.deployments.iter().find(|d| d.name == name)
    }
}

/// What the analyzers look up again and again, each built in one pass over the observations.
struct Index<'a> {
    /// Unique pods, each where it was first listed, its latest listing winning.
    pods: Vec<&'a PodFacts>,
    /// The first of `pods` by each name.
    by_name: HashMap<&'a str, &'a PodFacts>,
    /// Unique pods by the node they run on, in the order of `pods`.
    by_node: HashMap<&'a str, Vec<&'a PodFacts>>,
    /// Unique events, first listing kept.
    events: Vec<&'a K8sEventFacts>,
    /// Involved object's name -> positions in `events`, in order.
    events_by_name: HashMap<&'a str, Vec<usize>>,
    /// The controlling workloads (kind, name) of the pods, each once.
    owners: Vec<(String, String)>,
    owner_ids: HashMap<(String, String), usize>,
    /// Each pod listing (by address) -> its controlling workload in `owners`.
    workloads: HashMap<*const PodFacts, Option<usize>>,
    /// (namespace, workload) -> every listing of its pods, in order (repeats kept).
    by_workload: HashMap<(&'a str, usize), Vec<&'a PodFacts>>,
    links: subject::Owners<'a>,
}

impl<'a> Index<'a> {
    fn new(obs: &'a Observations) -> Index<'a> {
        let mut pods: Vec<&PodFacts> = Vec::with_capacity(obs.pods.len());
        let mut slot: HashMap<(&str, &str), usize> = HashMap::with_capacity(obs.pods.len());
        for p in &obs.pods {
            match slot.get(&(p.name.as_str(), p.namespace.as_str())) {
                Some(&i) => pods[i] = p,
                None => {
                    slot.insert((p.name.as_str(), p.namespace.as_str()), pods.len());
                    pods.push(p);
                }
            }
        }
        let mut by_node: HashMap<&str, Vec<&PodFacts>> = HashMap::new();
        let mut by_name: HashMap<&str, &PodFacts> = HashMap::with_capacity(pods.len());
        for &p in &pods {
            by_name.entry(p.name.as_str()).or_insert(p);
            if let Some(n) = p.node.as_deref() {
                by_node.entry(n).or_default().push(p);
            }
        }
        let mut events: Vec<&K8sEventFacts> = Vec::with_capacity(obs.events.len());
        let mut seen: HashSet<(&str, &str, &str)> = HashSet::with_capacity(obs.events.len());
        let mut events_by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for e in &obs.events {
            if seen.insert((e.reason.as_str(), e.object.as_str(), e.message.as_str())) {
                events_by_name
                    .entry(object_name(&e.object))
                    .or_default()
                    .push(events.len());
                events.push(e);
            }
        }
        let links = subject::Owners::new(obs);
        let mut owners: Vec<(String, String)> = Vec::new();
        let mut owner_ids: HashMap<(String, String), usize> = HashMap::new();
        let mut workloads = HashMap::with_capacity(obs.pods.len());
        let mut by_workload: HashMap<(&str, usize), Vec<&PodFacts>> = HashMap::new();
        for p in &obs.pods {
            let wid = links.workload_of(obs, p).map(|w| {
                *owner_ids.entry(w.clone()).or_insert_with(|| {
                    owners.push(w);
                    owners.len() - 1
                })
            });
            workloads.insert(std::ptr::from_ref(p), wid);
            if let Some(wid) = wid {
                by_workload
                    .entry((p.namespace.as_str(), wid))
                    .or_default()
                    .push(p);
            }
        }
        Index {
            pods,
            by_name,
            by_node,
            events,
            events_by_name,
            owners,
            owner_ids,
            workloads,
            by_workload,
            links,
        }
    }
}

/// The changes listed by the integrations, then those derived from the observations.
fn all_changes(obs: &Observations) -> Vec<Change> {
    let mut all = obs.changes.clone();
    all.extend(changes::derived(obs));
    all
}

/// `Kind/name` -> `name`.
/// The namespace an object lives in; Kubernetes leaves it empty for `default`.
pub(crate) fn namespace_or_default(namespace: &str) -> &str {
    if namespace.is_empty() {
        "default"
    } else {
        namespace
    }
}

pub(crate) fn object_name(object: &str) -> &str {
    object.rsplit_once('/').map(|(_, n)| n).unwrap_or(object)
}

/// The ReplicaSet that owns a pod.
pub(crate) fn pod_rs(pod: &PodFacts) -> Option<String> {
    let owner = pod.owner.as_deref()?;
    let (kind, name) = owner.split_once('/')?;
    (kind == "ReplicaSet").then(|| name.to_string())
}

/// The deployment a ReplicaSet name belongs to (`name-<hash>` -> `name`).
pub(crate) fn rs_deployment(rs: &str) -> Option<String> {
    rs.rsplit_once('-').map(|(d, _)| d.to_string())
}

/// The deployment that owns a pod, through its ReplicaSet.
pub(crate) fn pod_deployment(pod: &PodFacts) -> Option<String> {
    if let Some(rs) = pod_rs(pod) {
        if let Some(hash) = pod.labels.get("pod-template-hash")
            && let Some(d) = rs.strip_suffix(&format!("-{hash}"))
        {
            return Some(d.to_string());
        }
        return rs_deployment(&rs);
    }
    None
}

/// Parses a Kubernetes memory quantity (`512Mi`, `1G`, `536870912`) into bytes.
pub(crate) fn parse_bytes(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (num, unit) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    Some(n * mult)
}

/// Formats bytes the way Kubernetes would write them (`512Mi`, `1Gi`).
pub(crate) fn format_bytes(b: f64) -> String {
    let gi = 1024.0 * 1024.0 * 1024.0;
    let mi = 1024.0 * 1024.0;
    if b >= gi && (b / gi).fract() == 0.0 {
        format!("{}Gi", b / gi)
    } else {
        format!("{}Mi", (b / mi).round())
    }
}

/// A pod that is not ready, with why: `name (ImagePullBackOff)`, else its phase.
pub(crate) fn not_ready_label(p: &PodFacts) -> String {
    let why = p
        .containers
        .iter()
        .find_map(|c| c.reason.clone())
        .unwrap_or_else(|| p.phase.clone());
    format!("{} ({why})", p.name)
}

/// Lists at most `n` names, then "and N more".
pub(crate) fn list_names<S: AsRef<str>>(names: &[S], n: usize) -> String {
    let shown: Vec<&str> = names.iter().take(n).map(|s| s.as_ref()).collect();
    let mut out = shown.join(", ");
    if names.len() > n {
        out.push_str(&format!(" and {} more", names.len() - n));
    }
    out
}
