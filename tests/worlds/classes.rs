//! The failure classes: each leaves the subject's pods, events and logs as that failure does,
//! picks the mixin alert that fires for it, and says what a correct verdict is (derived from the
//! class alone, never from sitrep's wording).

use super::alerts::{self, Rule, Shape, Target};
use super::k8s::{self, Ev, NODES, NodeHealth, minutes, seconds, suffix};
use super::workload::{PodState, Revision, Run, Workload};
use super::{Class, Ctx, Expectation, Faults, Kind, LogBody, PodLog, Scenario};
use chrono::{DateTime, Duration, Timelike, Utc};
use serde_json::{Value, json};
use sitrep::model::Category as C;

pub fn build(ctx: &Ctx) -> Scenario {
    match ctx.combo.class {
        Class::Oom => oom(ctx),
        Class::ImagePull => image_pull(ctx),
        Class::VolumeMissing => volume_missing(ctx),
        Class::EnvRefMissing => env_ref_missing(ctx),
        Class::InitFailure => init_failure(ctx),
        Class::MissingExecutable => missing_executable(ctx),
        Class::CrashAfterRelease => crash_after_release(ctx),
        Class::CrashNoTermination => crash_no_termination(ctx),
        Class::UnschedulableSelector => unschedulable(ctx, false),
        Class::UnschedulableResources => unschedulable(ctx, true),
        Class::ProbeMisconfigured => probe_misconfigured(ctx),
        Class::DependencyRefused => dependency_refused(ctx),
        Class::NotReadyDependency => not_ready_dependency(ctx),
        Class::QuotaExceeded => quota_exceeded(ctx),
        Class::DnsUnresolvable => dns_unresolvable(ctx),
        Class::JobScriptError => job_script_error(ctx),
        Class::NodeNotReady => node_not_ready(ctx),
        Class::RecoveredFlap => recovered_flap(ctx),
        Class::LatencyUnmeasurable => latency_unmeasurable(ctx),
        Class::LatencySlowDependency => latency_slow_dependency(ctx),
        Class::ErrorsAfterRelease => errors_after_release(ctx),
        Class::Watchdog => watchdog(ctx),
    }
}

pub const STABLE_TAG: &str = "v4.1.3";

// The decisive literals vary per world (picked by its index), so a rule that matches one
// literal rather than the kind of evidence does not pass the class.

fn one_of<T: Copy>(ctx: &Ctx, salt: &str, options: &[T]) -> T {
    options[ctx.pick(salt, options.len())]
}

/// The tag of a release that crashes.
fn release_tag(ctx: &Ctx) -> &'static str {
    one_of(ctx, "release", &["v4.2.0", "v4.1.4", "2026.03.11-1"])
}

/// A tag the registry does not have.
fn bad_tag(ctx: &Ctx) -> &'static str {
    one_of(ctx, "bad-tag", &["v9-bad", "v2.31.0-hotfix", "sha-4f9c2e1"])
}

/// A command that is not in the image.
fn script(ctx: &Ctx) -> &'static str {
    one_of(
        ctx,
        "script",
        &[
            "/app/run.sh",
            "/usr/local/bin/entrypoint.sh",
            "/opt/app/bin/start",
        ],
    )
}

/// A required setting, and the line the application dies with when it is missing.
fn setting(ctx: &Ctx) -> (&'static str, &'static str) {
    one_of(
        ctx,
        "setting",
        &[
            (
                "PAYMENT_URL",
                "FATAL: environment variable PAYMENT_URL is not set",
            ),
            (
                "DATABASE_URL",
                "level=fatal msg=\"invalid configuration\" err=\"required key DATABASE_URL missing value\"",
            ),
            ("KAFKA_BROKERS", "Error: KAFKA_BROKERS must be set"),
        ],
    )
}

/// A node label no node carries (the zone one names a zone the cluster has no node in).
fn selector(ctx: &Ctx) -> (&'static str, &'static str) {
    one_of(
        ctx,
        "selector",
        &[
            ("disktype", "nvme"),
            ("node.example.com/pool", "gpu"),
            ("topology.kubernetes.io/zone", "eu-west-1d"),
        ],
    )
}

/// The port a liveness probe checks where nothing listens.
fn probe_port(ctx: &Ctx) -> u16 {
    one_of(ctx, "probe-port", &[8081, 9090, 8443])
}

/// The database a service depends on: its name and ClusterIP (port 5432).
fn dependency(ctx: &Ctx) -> (&'static str, &'static str) {
    one_of(
        ctx,
        "dependency",
        &[
            ("pg-main", "10.96.4.20"),
            ("orders-db", "10.96.17.3"),
            ("pgsql-ha", "10.96.250.41"),
        ],
    )
}

/// The database's address and how its client says the connection was refused: by the
/// service's name (and whether it was) or by the bare address.
fn refused(ctx: &Ctx) -> (String, String, bool) {
    let (dep, ip) = dependency(ctx);
    let addr = format!("{ip}:5432");
    let by_name = ctx.pick("dep-form", 2) == 1;
    let err = if by_name {
        format!(
            "failed to connect to `host={dep}.{}.svc.cluster.local user=app database=app`: dial error (dial tcp {addr}: connect: connection refused)",
            ctx.ns
        )
    } else {
        format!("dial tcp {addr}: connect: connection refused")
    };
    (addr, err, by_name)
}

/// A host name that resolves nowhere, and how the client says so.
fn bad_host(ctx: &Ctx) -> (&'static str, String) {
    let (host, form) = one_of(
        ctx,
        "bad-host",
        &[
            ("db-primary.prod.svc", 0),
            ("inventory-db.legacy.svc.cluster.local", 1),
            ("warehouse.internal.example", 2),
        ],
    );
    let err = match form {
        0 => format!(
            "could not translate host name \"{host}\" to address: Name or service not known"
        ),
        1 => format!("dial tcp: lookup {host} on 10.96.0.10:53: no such host"),
        _ => format!("java.net.UnknownHostException: {host}: Name or service not known"),
    };
    (host, err)
}

fn days(n: i64) -> Duration {
    Duration::days(n)
}

/// Log lines a few hundred milliseconds apart from `at`.
pub fn lines(at: DateTime<Utc>, texts: &[String]) -> Vec<(DateTime<Utc>, String)> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| (at + Duration::milliseconds(150 * i as i64), t.clone()))
        .collect()
}

/// What a healthy server logs over the last minutes.
pub fn serving(now: DateTime<Utc>, app: &str) -> Vec<(DateTime<Utc>, String)> {
    (0..8)
        .map(|i| {
            let t = now - seconds(40 * (8 - i));
            (
                t,
                format!(
                    "level=info ts={} caller=http/server.go:88 msg=\"request served\" app={app} method=GET path=/api/v1/items status=200",
                    k8s::ts(t)
                ),
            )
        })
        .collect()
}

/// (revision, node, failing) per pod: a rolling update stuck on its new revision's pods, or all
/// pods of one revision of which the first `failing` fail.
fn layout(kind: Kind, rollout: bool, failing: usize) -> Vec<(usize, usize, bool)> {
    match (kind, rollout) {
        (Kind::Deployment, true) => vec![(1, 0, false), (1, 1, false), (1, 2, false), (0, 1, true)],
        (Kind::StatefulSet, true) => vec![(1, 0, false), (1, 1, false), (0, 2, true)],
        (Kind::DaemonSet, true) => vec![(0, 0, true), (1, 1, false), (1, 2, false)],
        (Kind::Deployment | Kind::StatefulSet | Kind::DaemonSet, false) => {
            (0..3).map(|i| (0, i, i < failing)).collect()
        }
        _ => vec![(0, 1, failing > 0)],
    }
}

/// Whether the kind has a rolling update with older pods that stay fine.
fn rolls(kind: Kind) -> bool {
    matches!(kind, Kind::Deployment | Kind::StatefulSet | Kind::DaemonSet)
}

/// A new revision: when it was rolled out, and what it changed.
type Change<'a> = (DateTime<Utc>, &'a dyn Fn(&mut Revision));

/// The pod template's history: with `change`, a new revision at `at` (what it changed applied
/// to a copy of the stable one); without, a template stable for days.
fn history(ctx: &Ctx, change: Option<Change<'_>>) -> Vec<Revision> {
    let now = ctx.now;
    let base = |at, number| Revision::new(&ctx.image(STABLE_TAG), at, number);
    match (ctx.kind(), change) {
        (Kind::Job | Kind::Pod, Some((at, f))) => {
            let mut r = base(at, 1);
            f(&mut r);
            vec![r]
        }
        (Kind::Job | Kind::Pod, None) => vec![base(now - days(4), 1)],
        (Kind::CronJob, Some((at, f))) => {
            let mut r = base(at, 2);
            f(&mut r);
            vec![r, base(now - days(30), 1)]
        }
        (Kind::CronJob, None) => vec![base(now - days(30), 1)],
        (_, Some((at, f))) => {
            let mut r = base(at, 8);
            f(&mut r);
            vec![r, base(now - days(4), 7)]
        }
        (Kind::Deployment, None) => vec![
            base(now - days(4), 7),
            Revision::new(&ctx.image("v4.1.2"), now - days(11), 6),
        ],
        (_, None) => vec![base(now - days(4), 3)],
    }
}

/// The builder every class fills in.
struct B<'a> {
    ctx: &'a Ctx,
    w: Workload,
    events: Vec<Value>,
    node_events: Vec<Value>,
    logs: Vec<PodLog>,
    nodes: [NodeHealth; 3],
    others: Vec<Workload>,
    rule: Rule,
    starts: DateTime<Utc>,
    onset: DateTime<Utc>,
    focus: usize,
}

/// The alert (one of `options`, picked per world) and when it started firing.
fn timing(ctx: &Ctx, options: &[&'static str]) -> (Rule, DateTime<Utc>, DateTime<Utc>) {
    let name = options[ctx.pick("rule", options.len())];
    let rule = alerts::rule(name, &ctx.ns, &ctx.name);
    let starts = ctx.now - minutes(9);
    let onset = starts - seconds(rule.for_secs.max(60));
    (rule, starts, onset)
}

impl<'a> B<'a> {
    fn new(
        ctx: &'a Ctx,
        options: &[&'static str],
        revisions: impl FnOnce(DateTime<Utc>) -> Vec<Revision>,
    ) -> B<'a> {
        let (rule, starts, onset) = timing(ctx, options);
        let mut w = Workload::new(ctx.kind(), &ctx.ns, &ctx.name, revisions(onset), ctx.now);
        w.style = ctx.style;
        w.pod_name = ctx.pod_name.clone();
        if let Some(old) = &ctx.adopted_from {
            for r in &mut w.revisions {
                if r.at < ctx.now - days(2) {
                    r.adopted_from = Some(old.clone());
                }
            }
        }
        w.replicas = if rolls(ctx.kind()) { 3 } else { 1 };
        B {
            ctx,
            w,
            events: Vec::new(),
            node_events: Vec::new(),
            logs: Vec::new(),
            nodes: [NodeHealth::Ready; 3],
            others: Vec::new(),
            rule,
            starts,
            onset,
            focus: 0,
        }
    }

    fn kind(&self) -> Kind {
        self.ctx.kind()
    }

    /// Job runs: the latest from `started`; a CronJob also has the run an hour before, which
    /// completed on the template of its time.
    fn runs(
        &mut self,
        started: DateTime<Utc>,
        finished: Option<DateTime<Utc>>,
        failed: bool,
        backoff: u32,
    ) {
        if !self.kind().is_batch() {
            return;
        }
        self.w.runs = vec![Run {
            started,
            finished,
            failed: failed.then(|| {
                (
                    "BackoffLimitExceeded".to_string(),
                    "Job has reached the specified backoff limit".to_string(),
                )
            }),
            backoff_limit: backoff,
        }];
        if self.kind() == Kind::CronJob {
            // Hourly, at the minute the latest run was scheduled.
            self.w.schedule = format!("{} * * * *", started.minute());
            let prev = started - minutes(60);
            self.w.runs.push(Run {
                started: prev,
                finished: Some(prev + minutes(4)),
                failed: None,
                backoff_limit: backoff,
            });
        }
    }

    /// Places the pods (see [`layout`]); failing ones get a placeholder state for the class to
    /// fill in. Returns the failing pods' indices.
    fn place(&mut self, rollout: bool, failing: usize, new_at: DateTime<Utc>) -> Vec<usize> {
        let rollout = rollout && rolls(self.kind());
        let mut out = Vec::new();
        for (rev, node, fails) in layout(self.kind(), rollout, failing) {
            let created = if self.kind().is_batch() {
                self.w.runs[0].started + seconds(2)
            } else if rev == 0 && (rollout || self.kind() == Kind::Pod) {
                new_at
            } else {
                self.w.revisions[rev].at + seconds(40 + node as i64 * 13)
            };
            let p = if fails {
                out.push(self.w.pods.len());
                PodState::failing(rev, node, created, k8s::waiting("ContainerCreating", None))
            } else {
                PodState::healthy(rev, node, created)
            };
            self.w.pods.push(p);
        }
        self.focus = out.first().copied().unwrap_or(0);
        out
    }

    fn img(&self, i: usize) -> String {
        self.w.revisions[self.w.pods[i].rev].image.clone()
    }

    /// The scheduler's event placing pod `i` on its node at `at`.
    fn scheduled(&mut self, i: usize, at: DateTime<Utc>) {
        let msg = format!(
            "Successfully assigned {}/{} to {}",
            self.ctx.ns,
            self.w.pod_name(i),
            self.w.node_of(i).unwrap_or("")
        );
        self.pod_event(
            i,
            "Scheduled",
            &msg,
            (at, at, 1),
            false,
            "default-scheduler",
        );
    }

    fn pod_event(
        &mut self,
        i: usize,
        reason: &str,
        msg: &str,
        span: (DateTime<Utc>, DateTime<Utc>, u32),
        warning: bool,
        component: &str,
    ) {
        let name = self.w.pod_name(i);
        self.events.push(
            Ev {
                ns: &self.ctx.ns,
                kind: "Pod",
                name: &name,
                reason,
                message: msg,
                first: span.0,
                last: span.1,
                count: span.2,
                warning,
                component,
            }
            .json(),
        );
    }

    fn obj_event(
        &mut self,
        kind: &str,
        name: &str,
        reason: &str,
        msg: &str,
        at: DateTime<Utc>,
        component: &str,
    ) {
        self.events.push(
            Ev {
                ns: &self.ctx.ns,
                kind,
                name,
                reason,
                message: msg,
                first: at,
                last: at,
                count: 1,
                warning: false,
                component,
            }
            .json(),
        );
    }

    /// The kubelet's Pulled/Created/Started events of a container that was started `n` times.
    fn started_events(&mut self, i: usize, first: DateTime<Utc>, n: u32) {
        let img = self.img(i);
        let c = self.w.container.clone();
        let last = self.ctx.now - seconds(100);
        self.pod_event(
            i,
            "Pulled",
            &format!("Container image \"{img}\" already present on machine"),
            (first, last, n),
            false,
            "kubelet",
        );
        self.pod_event(
            i,
            "Created",
            &format!("Created container: {c}"),
            (first, last, n),
            false,
            "kubelet",
        );
        self.pod_event(
            i,
            "Started",
            &format!("Started container {c}"),
            (first, last, n),
            false,
            "kubelet",
        );
    }

    fn backoff_event(&mut self, i: usize, first: DateTime<Utc>, count: u32) {
        let msg = format!(
            "Back-off restarting failed container {} in pod {}_{}({})",
            self.w.container,
            self.w.pod_name(i),
            self.ctx.ns,
            self.w.pod_uid(i)
        );
        self.pod_event(
            i,
            "BackOff",
            &msg,
            (first, self.ctx.now - seconds(30), count),
            true,
            "kubelet",
        );
    }

    /// A container in CrashLoopBackOff after `restarts` runs, its last one ended as `last`.
    fn crashloop(&mut self, i: usize, restarts: u32, last: Value) {
        let msg = self.w.backoff_message(i);
        let onset = self.onset;
        let p = &mut self.w.pods[i];
        p.phase = "Running";
        p.ready = false;
        p.ready_at = onset;
        p.restarts = restarts;
        p.state = k8s::waiting("CrashLoopBackOff", Some(&msg));
        p.last_state = last;
    }

    /// The last run's termination: started two and a half minutes ago, ended after `secs`.
    fn last_run(&self, reason: &str, exit: i32, secs: i64, message: Option<&str>) -> Value {
        let started = self.ctx.now - seconds(150);
        k8s::terminated(reason, exit, started, started + seconds(secs), message)
    }

    fn log(&mut self, i: usize, current: LogBody, previous: LogBody) {
        let pod = self.w.pod_name(i);
        self.logs.retain(|l| l.pod != pod);
        self.logs.push(PodLog {
            pod,
            app: self.w.name.clone(),
            container: self.w.container.clone(),
            current,
            previous,
        });
    }

    /// The same lines as the current and the previous run's log (a crashed container's
    /// current log is its last run's).
    fn crash_log(&mut self, i: usize, l: Vec<(DateTime<Utc>, String)>) {
        self.log(i, LogBody::Lines(l.clone()), LogBody::Lines(l));
    }

    fn no_previous(&self, i: usize) -> LogBody {
        LogBody::Error(
            400,
            format!(
                "previous terminated container \"{}\" in pod \"{}\" not found",
                self.w.container,
                self.w.pod_name(i)
            ),
        )
    }

    fn waiting_to_start(&self, i: usize, why: &str) -> LogBody {
        LogBody::Error(
            400,
            format!(
                "container \"{}\" in pod \"{}\" is waiting to start: {why}",
                self.w.container,
                self.w.pod_name(i)
            ),
        )
    }

    /// The controllers' events for the pods of a new revision (and the Jobs of a run).
    fn rollout_events(&mut self, at: DateTime<Utc>, new_pods: &[usize]) {
        let ns = self.ctx.ns.clone();
        let name = self.w.name.clone();
        // No new revision, no rollout to report (the events of days ago have expired).
        if rolls(self.kind()) && new_pods.is_empty() {
            return;
        }
        match self.kind() {
            Kind::Deployment => {
                let rs = self.w.rs_name(0);
                self.obj_event(
                    "Deployment",
                    &name,
                    "ScalingReplicaSet",
                    &format!("Scaled up replica set {rs} from 0 to 1"),
                    at,
                    "deployment-controller",
                );
                for &i in new_pods {
                    let p = self.w.pod_name(i);
                    self.obj_event(
                        "ReplicaSet",
                        &rs,
                        "SuccessfulCreate",
                        &format!("Created pod: {p}"),
                        at + seconds(1),
                        "replicaset-controller",
                    );
                }
            }
            Kind::StatefulSet => {
                for &i in new_pods {
                    let p = self.w.pod_name(i);
                    self.obj_event(
                        "StatefulSet",
                        &name,
                        "SuccessfulDelete",
                        &format!("delete Pod {p} in StatefulSet {name} successful"),
                        at,
                        "statefulset-controller",
                    );
                    self.obj_event(
                        "StatefulSet",
                        &name,
                        "SuccessfulCreate",
                        &format!("create Pod {p} in StatefulSet {name} successful"),
                        at + seconds(3),
                        "statefulset-controller",
                    );
                }
            }
            Kind::DaemonSet => {
                for &i in new_pods {
                    let old = format!("{name}-{}", suffix(&format!("{ns}/{name}/old/{i}"), 5));
                    let p = self.w.pod_name(i);
                    self.obj_event(
                        "DaemonSet",
                        &name,
                        "SuccessfulDelete",
                        &format!("Deleted pod: {old}"),
                        at,
                        "daemonset-controller",
                    );
                    self.obj_event(
                        "DaemonSet",
                        &name,
                        "SuccessfulCreate",
                        &format!("Created pod: {p}"),
                        at + seconds(3),
                        "daemonset-controller",
                    );
                }
            }
            Kind::Job | Kind::CronJob => {
                for run in 0..self.w.runs.len() {
                    let job = self.w.job_name(run);
                    let started = self.w.runs[run].started;
                    if self.kind() == Kind::CronJob {
                        self.obj_event(
                            "CronJob",
                            &name,
                            "SuccessfulCreate",
                            &format!("Created job {job}"),
                            started,
                            "cronjob-controller",
                        );
                    }
                    let pods: Vec<(usize, DateTime<Utc>)> = (0..self.w.pods.len())
                        .filter(|&i| self.w.pods[i].run == run)
                        .map(|i| (i, self.w.pods[i].created))
                        .collect();
                    for (i, created) in pods {
                        let p = self.w.pod_name(i);
                        self.obj_event(
                            "Job",
                            &job,
                            "SuccessfulCreate",
                            &format!("Created pod: {p}"),
                            created,
                            "job-controller",
                        );
                    }
                    if let Some(done) = self.w.runs[run].finished {
                        match &self.w.runs[run].failed {
                            Some((reason, msg)) => {
                                let (reason, msg) = (reason.clone(), msg.clone());
                                self.events.push(
                                    Ev {
                                        ns: &ns,
                                        kind: "Job",
                                        name: &job,
                                        reason: &reason,
                                        message: &msg,
                                        first: done,
                                        last: done,
                                        count: 1,
                                        warning: true,
                                        component: "job-controller",
                                    }
                                    .json(),
                                );
                            }
                            None => {
                                self.obj_event(
                                    "Job",
                                    &job,
                                    "Completed",
                                    "Job completed",
                                    done,
                                    "job-controller",
                                );
                                if self.kind() == Kind::CronJob {
                                    self.obj_event(
                                        "CronJob",
                                        &name,
                                        "SawCompletedJob",
                                        &format!("Saw completed job: {job}, condition: Complete"),
                                        done + seconds(1),
                                        "cronjob-controller",
                                    );
                                }
                            }
                        }
                    }
                }
            }
            Kind::Pod => {}
        }
    }

    /// A CronJob's earlier run: one pod that completed.
    fn cron_history(&mut self) {
        if self.kind() != Kind::CronJob || self.w.runs.len() < 2 {
            return;
        }
        let run = self.w.runs[1].clone();
        let done = run.finished.unwrap_or(run.started + minutes(4));
        let rev = self.w.revisions.len() - 1;
        let mut p = PodState::healthy(rev, 0, run.started + seconds(1));
        p.phase = "Succeeded";
        p.ready = false;
        p.ready_at = done;
        p.run = 1;
        p.state = k8s::terminated("Completed", 0, run.started + seconds(3), done, None);
        self.w.pods.push(p);
    }

    /// Logs for every pod the class did not give any.
    fn fill_logs(&mut self) {
        for i in 0..self.w.pods.len() {
            let name = self.w.pod_name(i);
            if self.logs.iter().any(|l| l.pod == name) {
                continue;
            }
            let p = &self.w.pods[i];
            let current = match p.phase {
                "Succeeded" => {
                    let done = p.ready_at;
                    LogBody::Lines(lines(
                        done - seconds(200),
                        &[
                            format!("level=info msg=\"run started\" job={}", self.w.name),
                            "level=info msg=\"batch committed\" rows=18233".to_string(),
                            "level=info msg=\"run finished\" status=ok".to_string(),
                        ],
                    ))
                }
                _ if p.node.is_none() => {
                    LogBody::Error(400, format!("pod {name} does not have a host assigned"))
                }
                _ => LogBody::Lines(serving(self.ctx.now, &self.w.name)),
            };
            let previous = self.no_previous(i);
            self.log(i, current, previous);
        }
    }

    fn subject_name(&self) -> String {
        match self.kind() {
            Kind::Pod => self.w.pod_name(0),
            _ => self.w.name.clone(),
        }
    }

    fn finish(
        mut self,
        expect: Expectation,
        decisive: Vec<String>,
        shape: Shape,
        rule_active: bool,
    ) -> Scenario {
        self.fill_logs();
        let i = self.focus.min(self.w.pods.len().saturating_sub(1));
        let lost = self
            .nodes
            .iter()
            .position(|n| matches!(n, NodeHealth::Lost(_)));
        let target = Target {
            ns: self.ctx.ns.clone(),
            kind: Some(self.kind()),
            workload: if self.kind() == Kind::Pod {
                self.w.pod_name(0)
            } else {
                self.w.name.clone()
            },
            job: if self.kind().is_batch() {
                self.w.job_name(0)
            } else {
                String::new()
            },
            pod: self.w.pod_name(i),
            container: self.w.container.clone(),
            node: lost
                .map(|n| NODES[n].0.to_string())
                .or_else(|| self.w.node_of(i).map(str::to_string))
                .unwrap_or_default(),
        };
        Scenario {
            subject: self.w,
            others: self.others,
            events: self.events,
            node_events: self.node_events,
            logs: self.logs,
            nodes: self.nodes,
            rule: self.rule,
            target,
            alert_style: self.ctx.alert_style,
            starts: self.starts,
            shape,
            rule_active,
            expect,
            faults: Faults::default(),
            verdict_forbidden: Vec::new(),
            decisive,
        }
    }
}

fn expect(
    category: C,
    forbidden: &[C],
    required: Vec<String>,
    symptom_present: bool,
) -> Expectation {
    Expectation {
        category,
        forbidden_categories: forbidden.to_vec(),
        required,
        symptom_present,
    }
}

/// The alert's condition has held since `at`.
fn appeared(at: DateTime<Utc>) -> Shape {
    Shape::Since(at)
}

fn controller_rule(kind: Kind) -> &'static str {
    match kind {
        Kind::Deployment => "KubeDeploymentReplicasMismatch",
        Kind::StatefulSet => "KubeStatefulSetReplicasMismatch",
        Kind::DaemonSet => "KubeDaemonSetRolloutStuck",
        _ => "KubePodCrashLooping",
    }
}

/// A crash loop is alerted on the pod, or (for a controller) on its replicas.
fn crash_rules(kind: Kind) -> Vec<&'static str> {
    if rolls(kind) {
        vec!["KubePodCrashLooping", controller_rule(kind)]
    } else {
        vec!["KubePodCrashLooping"]
    }
}

/// The rules that fire for containers that never start: the controller's (when it rolls out)
/// and KubeContainerWaiting.
fn waiting_rules(kind: Kind) -> Vec<&'static str> {
    if rolls(kind) {
        vec![controller_rule(kind), "KubeContainerWaiting"]
    } else {
        vec!["KubeContainerWaiting"]
    }
}

// ------------------------------------------------------------------ 1. oom

fn oom(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let mut b = B::new(ctx, &crash_rules(kind), |_| history(ctx, None));
    let started = b.onset - minutes(20);
    b.runs(started, None, false, 6);
    b.w.mem_limit = "256Mi".into();
    let failing = b.place(false, 2, b.onset - minutes(20));
    b.cron_history();
    for (k, &i) in failing.iter().enumerate() {
        let last = b.last_run("OOMKilled", 137, 70, None);
        b.crashloop(i, 9 + k as u32, last);
        let onset = b.onset;
        b.backoff_event(i, onset, 31 + k as u32);
        b.started_events(i, onset - minutes(20), 10 + k as u32);
        let at = ctx.now - seconds(150);
        let app = b.w.name.clone();
        let l = lines(
            at,
            &[
                format!("level=info msg=\"starting {app}\" version={STABLE_TAG} heap_limit=256Mi"),
                "level=info msg=\"warming cache\" entries=0".to_string(),
                "level=info msg=\"warming cache\" entries=120000 rss_mb=141".to_string(),
                "level=info msg=\"warming cache\" entries=240000 rss_mb=233".to_string(),
            ],
        );
        b.crash_log(i, l);
    }
    // The others got there too, less often.
    for i in 0..b.w.pods.len() {
        if !failing.contains(&i) && b.w.pods[i].phase == "Running" {
            let started = ctx.now - minutes(30);
            b.w.pods[i].restarts = 3;
            b.w.pods[i].last_state =
                k8s::terminated("OOMKilled", 137, started - minutes(40), started, None);
        }
    }
    b.rollout_events(b.onset, &[]);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ResourceExhaustion,
            &[
                C::Healthy,
                C::CodeDefect,
                C::DependencyFailure,
                C::Infrastructure,
            ],
            vec![name, "OOMKilled".into()],
            true,
        ),
        vec!["OOMKilled".into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 2. image_pull

fn image_pull(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules = waiting_rules(kind);
    let bad_tag = bad_tag(ctx);
    let bad = ctx.image(bad_tag);
    let set_bad = |r: &mut Revision| r.image = bad.clone();
    let mut b = B::new(ctx, &rules, |onset| {
        history(ctx, Some((onset - minutes(1), &set_bad)))
    });
    let rolled = b.onset - minutes(1);
    b.runs(rolled + seconds(30), None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    let docker = ctx.pick("pull-form", 2) == 1;
    let err = if docker {
        format!(
            "rpc error: code = Unknown desc = Error response from daemon: manifest for {bad} not found: manifest unknown: manifest unknown"
        )
    } else {
        format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{bad}\": failed to resolve reference \"{bad}\": {bad}: not found"
        )
    };
    let back_off = ctx.pick("pull-state", 2) == 1;
    for &i in &failing {
        let p = &mut b.w.pods[i];
        p.phase = "Pending";
        p.pulled = false;
        p.state = if back_off {
            k8s::waiting(
                "ImagePullBackOff",
                Some(&format!("Back-off pulling image \"{bad}\"")),
            )
        } else {
            k8s::waiting("ErrImagePull", Some(&err))
        };
        let first = p.created + seconds(2);
        let last = ctx.now - seconds(70);
        b.scheduled(i, first);
        b.pod_event(
            i,
            "Pulling",
            &format!("Pulling image \"{bad}\""),
            (first, last, 9),
            false,
            "kubelet",
        );
        b.pod_event(
            i,
            "Failed",
            &format!("Failed to pull image \"{bad}\": {err}"),
            (first, last, 9),
            true,
            "kubelet",
        );
        b.pod_event(
            i,
            "Failed",
            "Error: ErrImagePull",
            (first, last, 9),
            true,
            "kubelet",
        );
        b.pod_event(
            i,
            "BackOff",
            &format!("Back-off pulling image \"{bad}\""),
            (first + seconds(20), ctx.now - seconds(20), 87),
            false,
            "kubelet",
        );
        b.pod_event(
            i,
            "Failed",
            "Error: ImagePullBackOff",
            (first + seconds(20), ctx.now - seconds(20), 87),
            true,
            "kubelet",
        );
        let cur = b.waiting_to_start(i, "trying and failing to pull image");
        let prev = b.no_previous(i);
        b.log(i, cur, prev);
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::CodeDefect,
                C::Infrastructure,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![name, bad_tag.into()],
            true,
        ),
        vec![bad_tag.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 2b. volume_missing

/// A release mounts a Secret or ConfigMap that does not exist: the kubelet never starts the
/// containers, and FailedMount repeats.
fn volume_missing(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules = waiting_rules(kind);
    let object = one_of(ctx, "volume-object", &["secret", "configmap"]);
    let missing = one_of(
        ctx,
        "volume-name",
        &["payments-tls", "feature-flags-v2", "vault-agent-config"],
    );
    let volume = one_of(ctx, "volume", &["tls", "config", "flags"]);
    let release = ctx.image(release_tag(ctx));
    let set_release = |r: &mut Revision| r.image = release.clone();
    let mut b = B::new(ctx, &rules, |onset| {
        history(ctx, Some((onset - minutes(1), &set_release)))
    });
    let rolled = b.onset - minutes(1);
    b.runs(rolled + seconds(30), None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    let message = format!(
        "MountVolume.SetUp failed for volume \"{volume}\" : {object} \"{missing}\" not found"
    );
    for &i in &failing {
        let p = &mut b.w.pods[i];
        p.phase = "Pending";
        p.pulled = false;
        p.state = k8s::waiting("ContainerCreating", None);
        let first = p.created + seconds(2);
        b.scheduled(i, first);
        b.pod_event(
            i,
            "FailedMount",
            &message,
            (first + seconds(1), ctx.now - seconds(40), 14),
            true,
            "kubelet",
        );
        let cur = b.waiting_to_start(i, "ContainerCreating");
        let prev = b.no_previous(i);
        b.log(i, cur, prev);
    }
    missing_after_release(b, rolled, &failing, missing)
}

/// The end of a release whose pods reference an object that does not exist: the rollout's
/// events, and a configuration error that names the subject and the missing object.
fn missing_after_release(
    mut b: B,
    rolled: DateTime<Utc>,
    failing: &[usize],
    missing: &str,
) -> Scenario {
    b.rollout_events(rolled, failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![name, missing.into()],
            true,
        ),
        vec![missing.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 2c. env_ref_missing

/// A release reads an environment variable from a Secret or ConfigMap (or a key of one) that does
/// not exist: the image is pulled, the kubelet cannot build the container's environment.
fn env_ref_missing(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules = waiting_rules(kind);
    let object = one_of(ctx, "env-object", &["Secret", "ConfigMap"]);
    let missing = one_of(
        ctx,
        "env-name",
        &["payments-db-creds", "ledger-api-keys", "rollout-flags"],
    );
    let key = one_of(ctx, "env-key", &["DB_PASSWORD", "API_TOKEN", "FLAGS_URL"]);
    let message = match ctx.pick("env-form", 2) {
        0 => format!("{} \"{missing}\" not found", object.to_lowercase()),
        _ => format!("couldn't find key {key} in {object} {}/{missing}", ctx.ns),
    };
    let release = ctx.image(release_tag(ctx));
    let set_release = |r: &mut Revision| r.image = release.clone();
    let mut b = B::new(ctx, &rules, |onset| {
        history(ctx, Some((onset - minutes(1), &set_release)))
    });
    let rolled = b.onset - minutes(1);
    b.runs(rolled + seconds(30), None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    for &i in &failing {
        let p = &mut b.w.pods[i];
        p.phase = "Pending";
        p.state = k8s::waiting("CreateContainerConfigError", Some(&message));
        let first = p.created + seconds(2);
        let last = ctx.now - seconds(30);
        b.scheduled(i, first);
        b.pod_event(
            i,
            "Pulled",
            &format!("Container image \"{release}\" already present on machine"),
            (first, last, 11),
            false,
            "kubelet",
        );
        b.pod_event(
            i,
            "Failed",
            &format!("Error: {message}"),
            (first, last, 11),
            true,
            "kubelet",
        );
        let cur = b.waiting_to_start(i, "CreateContainerConfigError");
        let prev = b.no_previous(i);
        b.log(i, cur, prev);
    }
    missing_after_release(b, rolled, &failing, missing)
}

// ------------------------------------------------------------------ 2d. init_failure

/// A release adds an init container that renders the configuration from a template the image
/// does not have: it exits 1 on every try, the pod never gets past Init, the app container waits
/// in PodInitializing. Only the init container's log says why.
fn init_failure(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules = waiting_rules(kind);
    let init = one_of(
        ctx,
        "init-name",
        &["render-config", "init-templates", "prepare"],
    );
    let path = one_of(
        ctx,
        "init-path",
        &[
            "/templates/app.yaml",
            "/etc/app/config.tmpl",
            "/opt/render/settings.json",
        ],
    );
    let command = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("cp {path} /config/ && echo rendered"),
    ];
    let release = ctx.image(release_tag(ctx));
    let set_release = |r: &mut Revision| {
        r.image = release.clone();
        r.init = Some((init.to_string(), command.clone()));
    };
    let mut b = B::new(ctx, &rules, |onset| {
        history(ctx, Some((onset - minutes(1), &set_release)))
    });
    let rolled = b.onset - minutes(1);
    let failing = b.place(true, 1, rolled + seconds(2));
    let error = match ctx.pick("init-form", 2) {
        0 => format!("cp: can't stat '{path}': No such file or directory"),
        _ => format!("cp: cannot stat '{path}': No such file or directory"),
    };
    let onset = b.onset;
    for (k, &i) in failing.iter().enumerate() {
        let created = b.w.pods[i].created;
        let restarts = 5 + k as u32;
        let last_end = ctx.now - seconds(75);
        let pod = b.w.pod_name(i);
        let p = &mut b.w.pods[i];
        p.phase = "Pending";
        p.state = k8s::waiting("PodInitializing", None);
        p.init = Some((
            k8s::waiting(
                "CrashLoopBackOff",
                Some(&format!(
                    "back-off 2m40s restarting failed container={init} pod={pod}"
                )),
            ),
            k8s::terminated("Error", 1, last_end - seconds(1), last_end, None),
            restarts,
        ));
        b.scheduled(i, created + seconds(1));
        let msg = format!(
            "Back-off restarting failed container {init} in pod {}_{}({})",
            b.w.pod_name(i),
            ctx.ns,
            b.w.pod_uid(i)
        );
        b.pod_event(
            i,
            "BackOff",
            &msg,
            (onset, ctx.now - seconds(30), 24 + k as u32),
            true,
            "kubelet",
        );
        let run = lines(last_end - seconds(1), std::slice::from_ref(&error));
        b.logs.retain(|l| l.pod != pod);
        b.logs.push(PodLog {
            pod,
            app: b.w.name.clone(),
            container: init.to_string(),
            current: LogBody::Lines(run.clone()),
            previous: LogBody::Lines(run),
        });
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::ResourceExhaustion,
                C::DependencyFailure,
                C::Infrastructure,
            ],
            vec![name, path.into()],
            true,
        ),
        vec![path.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 3. missing_executable

fn missing_executable(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let form = ctx.pick("exec-form", 3);
    let rules = if form == 2 {
        crash_rules(kind)
    } else {
        waiting_rules(kind)
    };
    let script = script(ctx);
    let set_cmd = |r: &mut Revision| r.command = Some(vec![script.to_string()]);
    let mut b = B::new(ctx, &rules, |onset| {
        history(ctx, Some((onset - minutes(1), &set_cmd)))
    });
    let rolled = b.onset - minutes(1);
    b.runs(rolled + seconds(30), None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    let oci = format!(
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"{script}\": stat {script}: no such file or directory: unknown"
    );
    for &i in &failing {
        let first = b.w.pods[i].created + seconds(3);
        let cid = format!("{:012x}", k8s::hash(&b.w.pod_name(i)) & 0xffff_ffff_ffff);
        match form {
            0 => {
                let p = &mut b.w.pods[i];
                p.phase = "Pending";
                p.state = k8s::waiting("CreateContainerError", Some(&oci));
                b.pod_event(
                    i,
                    "Failed",
                    &format!("Error: {oci}"),
                    (first, ctx.now - seconds(50), 14),
                    true,
                    "kubelet",
                );
                let cur = b.waiting_to_start(i, "CreateContainerError");
                let prev = b.no_previous(i);
                b.log(i, cur, prev);
            }
            1 => {
                let msg = format!(
                    "failed to start container \"{cid}\": Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"{script}\": stat {script}: no such file or directory: unknown"
                );
                let p = &mut b.w.pods[i];
                p.phase = "Pending";
                p.state = k8s::waiting("RunContainerError", Some(&msg));
                b.pod_event(
                    i,
                    "Failed",
                    &format!("Error: {msg}"),
                    (first, ctx.now - seconds(50), 14),
                    true,
                    "kubelet",
                );
                let cur = b.waiting_to_start(i, "RunContainerError");
                let prev = b.no_previous(i);
                b.log(i, cur, prev);
            }
            _ => {
                let last = b.last_run("StartError", 128, 0, Some(&oci));
                b.crashloop(i, 5, last);
                b.pod_event(
                    i,
                    "Failed",
                    &format!("Error: {oci}"),
                    (first, ctx.now - seconds(50), 6),
                    true,
                    "kubelet",
                );
                let onset = b.onset;
                b.backoff_event(i, onset, 24);
                b.log(i, LogBody::Lines(Vec::new()), LogBody::Lines(Vec::new()));
            }
        }
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::ResourceExhaustion,
                C::Infrastructure,
                C::DependencyFailure,
            ],
            vec![name, script.into()],
            true,
        ),
        vec![script.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 4. crash_after_release

fn crash_after_release(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let release_tag = release_tag(ctx);
    let release = ctx.image(release_tag);
    let set = |r: &mut Revision| r.image = release.clone();
    let mut b = B::new(ctx, &crash_rules(kind), |onset| {
        history(ctx, Some((onset - minutes(3), &set)))
    });
    let rolled = b.onset - minutes(3);
    let failing = b.place(true, 1, rolled + seconds(2));
    let go = ctx.pick("lang", 2) == 0;
    let app = b.w.name.clone();
    for &i in &failing {
        let last = b.last_run("Error", if go { 2 } else { 1 }, 3, None);
        b.crashloop(i, 8, last);
        let at = ctx.now - seconds(150);
        let text: Vec<String> = if go {
            vec![
                format!(
                    "{{\"level\":\"info\",\"msg\":\"starting {app}\",\"version\":\"{release_tag}\"}}"
                ),
                "{\"level\":\"info\",\"msg\":\"loaded pricing rules\",\"count\":412}".into(),
                "{\"level\":\"info\",\"msg\":\"http server listening\",\"addr\":\":8080\"}".into(),
                "panic: runtime error: invalid memory address or nil pointer dereference".into(),
                "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x9c4f2a]".into(),
                "".into(),
                "goroutine 1 [running]:".into(),
                format!("example.com/{app}/internal/pricing.(*Engine).Apply(0x0, 0xc0001a2000)"),
                "\t/src/internal/pricing/engine.go:214 +0x2a".into(),
                "main.main()".into(),
                format!("\t/src/cmd/{app}/main.go:88 +0x3c5"),
            ]
        } else {
            vec![
                format!("INFO:{app}:starting {app} {release_tag}"),
                "Traceback (most recent call last):".into(),
                "  File \"/app/server.py\", line 41, in <module>".into(),
                "    app = create_app()".into(),
                format!("  File \"/app/{app}/app.py\", line 88, in create_app"),
                "    rules = pricing.load_rules(settings)".into(),
                format!("  File \"/app/{app}/pricing.py\", line 214, in load_rules"),
                "    return {r.id: r for r in rules.items()}".into(),
                "AttributeError: 'NoneType' object has no attribute 'items'".into(),
            ]
        };
        let text: Vec<String> = text.into_iter().filter(|l| !l.is_empty()).collect();
        b.crash_log(i, lines(at, &text));
        let onset = b.onset;
        b.backoff_event(i, onset, 40);
        b.started_events(i, rolled + seconds(3), 9);
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::CodeDefect,
            &[
                C::Healthy,
                C::Infrastructure,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![name, release_tag.into()],
            true,
        ),
        vec![release_tag.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 5. crash_no_termination

fn crash_no_termination(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let (setting, fatal) = setting(ctx);
    let drop_env = |r: &mut Revision| {
        r.env = vec![
            ("LOG_LEVEL".into(), "info".into()),
            ("HTTP_PORT".into(), "8080".into()),
        ]
    };
    let mut b = B::new(ctx, &crash_rules(kind), |onset| {
        let mut h = history(ctx, Some((onset - minutes(2), &drop_env)));
        for r in h.iter_mut().skip(1) {
            r.env = vec![
                ("LOG_LEVEL".into(), "info".into()),
                ("HTTP_PORT".into(), "8080".into()),
                (setting.into(), "http://payment-gateway:8443".into()),
            ];
        }
        h
    });
    let rolled = b.onset - minutes(2);
    b.runs(rolled + seconds(30), None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    let app = b.w.name.clone();
    for &i in &failing {
        b.crashloop(i, 6, json!({}));
        let at = ctx.now - seconds(150);
        b.crash_log(
            i,
            lines(
                at,
                &[
                    format!("level=info msg=\"starting {app}\" version={STABLE_TAG}"),
                    "level=info msg=\"reading configuration from environment\"".into(),
                    fatal.into(),
                ],
            ),
        );
        let onset = b.onset;
        b.backoff_event(i, onset, 25);
        b.started_events(i, rolled + seconds(3), 7);
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::ResourceExhaustion,
                C::Infrastructure,
                C::DependencyFailure,
            ],
            vec![name, setting.into()],
            true,
        ),
        vec![setting.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 6./7. unschedulable

fn unschedulable(ctx: &Ctx, resources: bool) -> Scenario {
    let kind = ctx.kind();
    let rule = match kind {
        Kind::Job | Kind::CronJob => "KubeJobNotCompleted",
        Kind::Pod => "KubePodNotReady",
        k => controller_rule(k),
    };
    // More CPU or memory than any node has; or a node label no node carries.
    let memory = ctx.pick("resource", 2) == 1;
    let resource = if memory { "memory" } else { "cpu" };
    let (key, value) = selector(ctx);
    let change = |r: &mut Revision| {
        if !resources {
            r.node_selector = Some((key.into(), value.into()));
        } else if memory {
            r.mem_request = "24Gi".into();
            r.mem_limit = Some("24Gi".into());
        } else {
            r.cpu_request = "6".into();
        }
    };
    // A Job waits twelve hours before its alert; the others fifteen minutes.
    let mut b = B::new(ctx, &[rule], |onset| {
        let at = if kind.is_batch() {
            onset - Duration::hours(12)
        } else {
            onset - minutes(1)
        };
        history(ctx, Some((at - minutes(1), &change)))
    });
    if kind.is_batch() {
        b.onset -= Duration::hours(12);
    }
    let rolled = b.onset - minutes(1);
    b.runs(rolled, None, false, 6);
    let failing = b.place(true, 1, rolled + seconds(2));
    b.cron_history();
    let preemption = ctx.pick("sched-form", 2) == 1;
    let msg = match (resources, kind, preemption) {
        (true, Kind::DaemonSet, _) => format!(
            "0/3 nodes are available: 1 Insufficient {resource}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
        ),
        (true, _, true) => format!(
            "0/3 nodes are available: 3 Insufficient {resource}. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        ),
        (true, _, false) => format!("0/3 nodes are available: 3 Insufficient {resource}."),
        (false, _, true) => "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.".to_string(),
        (false, _, false) => {
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.".to_string()
        }
    };
    for &i in &failing {
        let p = &mut b.w.pods[i];
        p.node = None;
        p.phase = "Pending";
        p.state = Value::Null;
        p.unschedulable = Some(msg.clone());
        let first = p.created + seconds(1);
        b.pod_event(
            i,
            "FailedScheduling",
            &msg,
            (first, ctx.now - seconds(45), 48),
            true,
            "default-scheduler",
        );
        let name = b.w.pod_name(i);
        let err = LogBody::Error(400, format!("pod {name} does not have a host assigned"));
        b.log(i, err.clone(), err);
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    let (category, forbidden, detail) = if resources {
        (
            C::ResourceExhaustion,
            vec![C::Healthy, C::CodeDefect, C::DependencyFailure],
            vec![format!("Insufficient {resource}")],
        )
    } else {
        (
            C::ConfigurationError,
            vec![
                C::Healthy,
                C::CodeDefect,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![key.to_string(), value.to_string()],
        )
    };
    let mut required = vec![name];
    required.extend(detail.iter().cloned());
    b.finish(
        expect(category, &forbidden, required, true),
        detail,
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 8. probe_misconfigured

fn probe_misconfigured(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let port = probe_port(ctx);
    let set = |r: &mut Revision| r.liveness_port = port;
    let mut b = B::new(ctx, &crash_rules(kind), |onset| {
        history(ctx, Some((onset - minutes(2), &set)))
    });
    let rolled = b.onset - minutes(2);
    let failing = b.place(true, 1, rolled + seconds(2));
    let graceful = ctx.pick("sigterm", 2) == 1;
    for &i in &failing {
        let last = if graceful {
            b.last_run("Completed", 0, 31, None)
        } else {
            b.last_run("Error", 143, 31, None)
        };
        b.crashloop(i, 7, last);
        let ip = b.w.pod_ip(i);
        let c = b.w.container.clone();
        let first = rolled + seconds(15);
        let last_seen = ctx.now - seconds(40);
        b.pod_event(i, "Unhealthy", &format!("Liveness probe failed: Get \"http://{ip}:{port}/healthz\": dial tcp {ip}:{port}: connect: connection refused"), (first, last_seen, 21), true, "kubelet");
        b.pod_event(
            i,
            "Killing",
            &format!("Container {c} failed liveness probe, will be restarted"),
            (first + seconds(20), last_seen, 7),
            false,
            "kubelet",
        );
        let onset = b.onset;
        b.backoff_event(i, onset, 12);
        b.started_events(i, rolled + seconds(3), 8);
        let at = ctx.now - seconds(150);
        let app = b.w.name.clone();
        let run = lines(at, &[
            format!("{{\"level\":\"info\",\"msg\":\"starting {app}\",\"version\":\"{STABLE_TAG}\"}}"),
            "{\"level\":\"info\",\"msg\":\"http server listening\",\"addr\":\":8080\"}".into(),
            "{\"level\":\"info\",\"msg\":\"request served\",\"path\":\"/api/v1/quotes\",\"status\":200}".into(),
            "{\"level\":\"info\",\"msg\":\"request served\",\"path\":\"/ready\",\"status\":200}".into(),
            "{\"level\":\"info\",\"msg\":\"received SIGTERM, shutting down\"}".into(),
        ]);
        b.crash_log(i, run);
    }
    b.rollout_events(rolled, &failing);
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ResourceExhaustion,
                C::DependencyFailure,
                C::Infrastructure,
            ],
            vec![name, port.to_string()],
            true,
        ),
        vec![port.to_string()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 9. dependency_refused

/// The database the subject needs: a StatefulSet whose only pod is not ready (recovering), so
/// its Service has no endpoints and connections to it are refused.
fn database(ctx: &Ctx, onset: DateTime<Utc>) -> (Workload, Vec<Value>, PodLog) {
    let (dep, _) = dependency(ctx);
    let mut w = Workload::new(
        Kind::StatefulSet,
        &ctx.ns,
        dep,
        vec![Revision::new(
            "docker.io/library/postgres:16.4",
            ctx.now - days(20),
            2,
        )],
        ctx.now,
    );
    w.container = "postgres".into();
    w.port = 5432;
    let mut p = PodState::healthy(0, 2, ctx.now - days(6));
    p.ready = false;
    p.ready_at = onset - minutes(1);
    w.pods.push(p);
    let name = w.pod_name(0);
    let ev = Ev {
        ns: &ctx.ns,
        kind: "Pod",
        name: &name,
        reason: "Unhealthy",
        message: "Readiness probe failed: HTTP probe failed with statuscode: 503",
        first: onset - minutes(1),
        last: ctx.now - seconds(20),
        count: 93,
        warning: true,
        component: "kubelet",
    }
    .json();
    let at = onset - minutes(2);
    let log = PodLog {
        pod: name,
        app: dep.into(),
        container: "postgres".into(),
        current: LogBody::Lines(lines(
            at,
            &[
                "LOG:  database system was interrupted; last known up at 2026-03-11 13:55:02 UTC"
                    .into(),
                "LOG:  starting archive recovery".into(),
                "LOG:  redo starts at 0/3A000028".into(),
                "LOG:  waiting for WAL segment 00000001000000000000003B from archive".into(),
            ],
        )),
        previous: LogBody::Error(
            400,
            format!("previous terminated container \"postgres\" in pod \"{dep}-0\" not found"),
        ),
    };
    (w, vec![ev], log)
}

fn dependency_refused(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let mut b = B::new(ctx, &crash_rules(kind), |_| history(ctx, None));
    let started = b.onset - minutes(3);
    b.runs(started, None, false, 6);
    let failing = b.place(false, 3, b.onset - minutes(20));
    b.cron_history();
    let (dep, _) = dependency(ctx);
    let (addr, err, by_name) = refused(ctx);
    let ns = ctx.ns.clone();
    for (k, &i) in failing.iter().enumerate() {
        let last = b.last_run("Error", 1, 9, None);
        b.crashloop(i, 5 + k as u32, last);
        let target = if by_name {
            format!("host={dep}.{ns}.svc.cluster.local port=5432")
        } else {
            format!("addr={addr}")
        };
        let at = ctx.now - seconds(150);
        b.crash_log(
            i,
            lines(
                at,
                &[
                    format!("level=info msg=\"connecting to database\" {target}"),
                    format!("level=error msg=\"database ping failed\" attempt=1 err=\"{err}\""),
                    format!("level=error msg=\"database ping failed\" attempt=2 err=\"{err}\""),
                    format!("level=error msg=\"database ping failed\" attempt=3 err=\"{err}\""),
                    format!("level=fatal msg=\"cannot start without the database\" err=\"{err}\""),
                ],
            ),
        );
        let onset = b.onset;
        b.backoff_event(i, onset, 20 + k as u32);
        b.started_events(i, onset - minutes(1), 6 + k as u32);
    }
    database_refuses(b, ctx, started, addr)
}

/// The end of a world whose database refuses connections: the database itself (not ready), and a
/// dependency failure that names the subject and the address refused.
fn database_refuses(mut b: B, ctx: &Ctx, started: DateTime<Utc>, addr: String) -> Scenario {
    let onset = b.onset;
    let (db, events, log) = database(ctx, onset);
    b.others.push(db);
    b.events.extend(events);
    b.logs.push(log);
    b.rollout_events(started, &[]);
    let name = b.subject_name();
    b.finish(
        expect(
            C::DependencyFailure,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ResourceExhaustion,
                C::ConfigurationError,
            ],
            vec![name, addr.clone()],
            true,
        ),
        vec![addr],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 9b. not_ready_dependency

/// The database behind a workload stops answering: its pods keep running (the process does not
/// exit) but fail their readiness checks, so the controller's replicas fall short; no restart,
/// no release. The application's log says what its readiness check cannot reach.
fn not_ready_dependency(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let mut b = B::new(ctx, &[controller_rule(kind)], |_| history(ctx, None));
    let started = b.onset - minutes(3);
    b.runs(started, None, false, 6);
    let failing = b.place(false, 3, b.onset - minutes(20));
    let (addr, err, _) = refused(ctx);
    let probe = if ctx.pick("probe-form", 2) == 1 {
        "Readiness probe failed: HTTP probe failed with statuscode: 503".to_string()
    } else {
        "Readiness probe failed: HTTP probe failed with statuscode: 500".to_string()
    };
    let onset = b.onset;
    let c = b.w.container.clone();
    for (k, &i) in failing.iter().enumerate() {
        let p = &mut b.w.pods[i];
        let since = p.created;
        p.state = k8s::running(since + seconds(4));
        p.phase = "Running";
        p.ready = false;
        p.ready_at = onset - minutes(1);
        p.not_ready = Some((
            "ContainersNotReady".into(),
            format!("containers with unready status: [{c}]"),
        ));
        b.pod_event(
            i,
            "Unhealthy",
            &probe,
            (onset - minutes(1), ctx.now - seconds(15), 60 + k as u32),
            true,
            "kubelet",
        );
        let at = ctx.now - seconds(90);
        // Inside a JSON string the client's quotes become single ones.
        let quoted = err.replace(['"', '`'], "'");
        let served = lines(
            onset - minutes(30),
            &["{\"level\":\"info\",\"msg\":\"request served\",\"path\":\"/api/v1/orders\",\"status\":200}".to_string()],
        );
        let failing_lines = lines(
            at,
            &[
                format!(
                    "{{\"level\":\"error\",\"msg\":\"readiness check failed\",\"check\":\"database\",\"err\":\"{}\"}}",
                    quoted
                ),
                format!(
                    "{{\"level\":\"error\",\"msg\":\"request failed\",\"path\":\"/api/v1/orders\",\"status\":503,\"err\":\"{}\"}}",
                    quoted
                ),
                format!(
                    "{{\"level\":\"error\",\"msg\":\"readiness check failed\",\"check\":\"database\",\"err\":\"{}\"}}",
                    quoted
                ),
            ],
        );
        let mut all = served;
        all.extend(failing_lines);
        let prev = b.no_previous(i);
        b.log(i, LogBody::Lines(all), prev);
    }
    database_refuses(b, ctx, started, addr)
}

// ------------------------------------------------------------------ 9c. quota_exceeded

/// A release raises the pods' memory: the namespace's ResourceQuota has no room for the new pod,
/// so the controller cannot create it (FailedCreate, "exceeded quota") and the rollout stalls
/// with the old pods still serving. Nothing crashes, nothing is pending: the pod never exists.
fn quota_exceeded(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let quota = one_of(
        ctx,
        "quota",
        &["compute-quota", "team-payments-rq", "ns-limits"],
    );
    let set = |r: &mut Revision| {
        r.mem_request = "1536Mi".into();
        r.mem_limit = Some("1536Mi".into());
    };
    let mut b = B::new(ctx, &[controller_rule(kind)], |onset| {
        history(ctx, Some((onset - minutes(2), &set)))
    });
    let rolled = b.onset - minutes(2);
    let failing = b.place(true, 1, rolled + seconds(2));
    // The new revision's pod was never created: only its name (the one the controller tried).
    let tried = b.w.pod_name(failing[0]);
    b.w.pods.remove(failing[0]);
    b.focus = 0;
    let (used, limited) = one_of(
        ctx,
        "quota-numbers",
        &[("7Gi", "8Gi"), ("15872Mi", "16Gi"), ("3584Mi", "4Gi")],
    );
    let forbidden = format!(
        "pods \"{tried}\" is forbidden: exceeded quota: {quota}, requested: requests.memory=1536Mi, used: requests.memory={used}, limited: requests.memory={limited}"
    );
    let (object_kind, object, message) = match kind {
        Kind::StatefulSet => (
            "StatefulSet",
            b.w.name.clone(),
            format!(
                "create Pod {tried} in StatefulSet {} failed error: {forbidden}",
                b.w.name
            ),
        ),
        Kind::DaemonSet => (
            "DaemonSet",
            b.w.name.clone(),
            format!("Error creating: {forbidden}"),
        ),
        _ => (
            "ReplicaSet",
            b.w.rs_name(0),
            format!("Error creating: {forbidden}"),
        ),
    };
    let ns = ctx.ns.clone();
    b.events.push(
        k8s::Ev {
            ns: &ns,
            kind: object_kind,
            name: &object,
            reason: "FailedCreate",
            message: &message,
            first: rolled + seconds(1),
            last: ctx.now - seconds(25),
            count: 17,
            warning: true,
            component: if kind == Kind::StatefulSet {
                "statefulset-controller"
            } else if kind == Kind::DaemonSet {
                "daemonset-controller"
            } else {
                "replicaset-controller"
            },
        }
        .json(),
    );
    if kind == Kind::Deployment {
        let name = b.w.name.clone();
        let rs = b.w.rs_name(0);
        b.obj_event(
            "Deployment",
            &name,
            "ScalingReplicaSet",
            &format!("Scaled up replica set {rs} to 1"),
            rolled,
            "deployment-controller",
        );
    }
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ResourceExhaustion,
            &[
                C::Healthy,
                C::CodeDefect,
                C::DependencyFailure,
                C::Infrastructure,
            ],
            vec![name, quota.into()],
            true,
        ),
        vec![quota.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 10./11. batch failures

/// A Job (or a CronJob's latest run) whose pods each failed with exit code `exit`, printing
/// `out`, until the backoff limit: `KubeJobFailed`.
fn batch_failure<'a>(
    ctx: &'a Ctx,
    change: &dyn Fn(&mut Revision),
    exit: i32,
    out: Vec<String>,
) -> B<'a> {
    // The template changed between the last good run (an hour before) and this one.
    let mut b = B::new(ctx, &["KubeJobFailed"], |onset| {
        history(ctx, Some((onset - minutes(30), change)))
    });
    let started = b.onset - minutes(3);
    let backoff = 2;
    b.w.restart_policy = "Never";
    b.runs(started, Some(b.onset), true, backoff);
    // One pod per attempt, each after the back-off delay (10 s, 20 s, ...).
    let mut at = started + seconds(1);
    for attempt in 0..=backoff {
        let mut p = PodState::failing(0, (attempt as usize) % 3, at, Value::Null);
        let finished = at + seconds(4);
        p.phase = "Failed";
        p.state = k8s::terminated("Error", exit, at + seconds(2), finished, None);
        p.ready_at = finished;
        p.not_ready = Some(("PodFailed".into(), String::new()));
        b.w.pods.push(p);
        let i = b.w.pods.len() - 1;
        b.log(
            i,
            LogBody::Lines(lines(at + seconds(2), &out)),
            LogBody::Error(
                400,
                format!(
                    "previous terminated container \"{}\" in pod \"{}\" not found",
                    b.w.container,
                    b.w.pod_name(i)
                ),
            ),
        );
        at = finished + seconds(10 << attempt);
    }
    b.focus = b.w.pods.len() - 1;
    b.cron_history();
    b.rollout_events(started, &[]);
    b
}

fn dns_unresolvable(ctx: &Ctx) -> Scenario {
    let (host, err) = bad_host(ctx);
    let (dep, _) = dependency(ctx);
    let set_host = |r: &mut Revision| {
        r.env = vec![
            ("DB_HOST".into(), host.into()),
            ("DB_NAME".into(), "app".into()),
        ];
    };
    let forbidden = [
        C::Healthy,
        C::CodeDefect,
        C::ResourceExhaustion,
        C::DependencyFailure,
    ];
    let b = if ctx.kind().is_batch() {
        let out = if err.starts_with("could not translate") {
            vec![
                format!(
                    "+ psql -h {host} -U app -d app -c '\\copy (select * from orders_daily) to stdout'"
                ),
                format!("psql: error: {err}"),
            ]
        } else {
            vec![
                "level=info msg=\"exporting orders_daily\"".to_string(),
                format!("level=fatal msg=\"export failed\" err=\"{err}\""),
            ]
        };
        let mut b = batch_failure(ctx, &set_host, 2, out);
        for r in b.w.revisions.iter_mut().skip(1) {
            r.env = vec![
                ("DB_HOST".into(), format!("{dep}.{}.svc", ctx.ns)),
                ("DB_NAME".into(), "app".into()),
            ];
        }
        b
    } else {
        let mut b = B::new(ctx, &crash_rules(ctx.kind()), |onset| {
            history(ctx, Some((onset - minutes(2), &set_host)))
        });
        let rolled = b.onset - minutes(2);
        let failing = b.place(true, 1, rolled + seconds(2));
        for &i in &failing {
            let last = b.last_run("Error", 1, 2, None);
            b.crashloop(i, 6, last);
            let app = b.w.name.clone();
            let quoted = err.replace('"', "\\\"");
            b.crash_log(
                i,
                lines(
                    ctx.now - seconds(150),
                    &[
                        format!("level=info msg=\"starting {app}\" version={STABLE_TAG}"),
                        format!(
                            "level=fatal msg=\"could not connect to database\" err=\"{quoted}\""
                        ),
                    ],
                ),
            );
            let onset = b.onset;
            b.backoff_event(i, onset, 22);
        }
        b.rollout_events(rolled, &failing);
        b
    };
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::ConfigurationError,
            &forbidden,
            vec![name, host.into()],
            true,
        ),
        vec![host.into()],
        appeared(onset),
        true,
    )
}

/// A shell script with a syntax error, the shell that runs it, and what the shell says.
fn broken_script(ctx: &Ctx) -> (&'static str, &'static str, Vec<String>) {
    match ctx.pick("shell", 3) {
        0 => (
            "/bin/sh",
            "set -e\necho \"exporting ledger for $(date +%F)\"\nfi\n/app/export --since=24h\n",
            vec![
                "exporting ledger for 2026-03-11".to_string(),
                "/bin/sh: line 3: syntax error near unexpected token `fi'".to_string(),
                "/bin/sh: line 3: `fi'".to_string(),
            ],
        ),
        1 => (
            "/bin/sh",
            "set -e\nif [ -n \"$FULL\" ]; then\n  /app/export --full\nelse\n  /app/export --since=24h\n",
            vec!["/bin/sh: 5: Syntax error: end of file unexpected (expecting \"fi\")".to_string()],
        ),
        _ => (
            "/bin/bash",
            "set -euo pipefail\necho \"rotating partitions\"\n/app/rotate --keep=30 --label=\"nightly\n",
            vec![
                "/bin/bash: -c: line 4: unexpected EOF while looking for matching `\"'".to_string(),
                "/bin/bash: -c: line 5: syntax error: unexpected end of file".to_string(),
            ],
        ),
    }
}

fn job_script_error(ctx: &Ctx) -> Scenario {
    let (shell, script, out) = broken_script(ctx);
    let set = |r: &mut Revision| {
        r.command = Some(vec![shell.into(), "-c".into()]);
        r.args = Some(vec![script.into()]);
    };
    let mut b = batch_failure(ctx, &set, 2, out);
    for r in b.w.revisions.iter_mut().skip(1) {
        r.command = Some(vec![shell.into(), "-c".into()]);
        r.args = Some(vec!["set -e\n/app/export --since=24h\n".into()]);
    }
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::CodeDefect,
            &[
                C::Healthy,
                C::Infrastructure,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![name, "syntax error".into()],
            true,
        ),
        vec!["syntax error".into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 12. node_not_ready

fn node_not_ready(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules: Vec<&'static str> = match kind {
        Kind::Deployment => vec!["KubePodNotReady", "KubeNodeNotReady"],
        Kind::StatefulSet => vec!["KubeStatefulSetReplicasMismatch", "KubePodNotReady"],
        Kind::DaemonSet => vec!["KubeDaemonSetRolloutStuck", "KubeNodeNotReady"],
        Kind::Job | Kind::CronJob => vec!["KubeNodeNotReady"],
        Kind::Pod => vec!["KubePodNotReady", "KubeNodeNotReady"],
    };
    let mut b = B::new(ctx, &rules, |_| history(ctx, None));
    let lost = ctx.pick("lost-node", NODES.len());
    let down = b.onset;
    b.runs(down - minutes(25), None, false, 6);
    b.place(false, 0, down - minutes(30));
    // Every pod the subject has runs on the node that stopped reporting (a bare pod or a Job's
    // one pod too); a Deployment's got a replacement elsewhere.
    let on_lost: Vec<usize> = match kind {
        // One pod per node (see `layout`): the one on the lost node.
        Kind::Deployment | Kind::StatefulSet | Kind::DaemonSet => vec![lost],
        _ => vec![0],
    };
    for &i in &on_lost {
        let p = &mut b.w.pods[i];
        p.node = Some(lost);
        p.ready = false;
        p.ready_at = down + seconds(40);
        p.not_ready = Some((String::new(), String::new()));
        if kind != Kind::DaemonSet {
            p.deleting = Some(down + seconds(340));
        }
        let name = b.w.pod_name(i);
        let (ns, c, host) = (ctx.ns.clone(), b.w.container.clone(), NODES[lost].2);
        let err = LogBody::Error(
            500,
            format!(
                "Get \"https://{host}:10250/containerLogs/{ns}/{name}/{c}?tailLines=200&timestamps=true\": dial tcp {host}:10250: i/o timeout"
            ),
        );
        b.log(i, err.clone(), err);
        b.pod_event(
            i,
            "NodeNotReady",
            "Node is not ready",
            (down + seconds(40), down + seconds(40), 1),
            true,
            "node-controller",
        );
        if kind != Kind::DaemonSet {
            let msg = format!("Marking for deletion Pod {ns}/{name}");
            b.pod_event(
                i,
                "TaintManagerEviction",
                &msg,
                (down + seconds(340), down + seconds(340), 1),
                false,
                "taint-eviction-controller",
            );
        }
    }
    b.focus = on_lost[0];
    if kind == Kind::Deployment {
        let mut p = PodState::healthy(0, (lost + 1) % NODES.len(), down + seconds(341));
        p.ready_at = down + seconds(370);
        b.w.pods.push(p);
        let i = b.w.pods.len() - 1;
        let (rs, name) = (b.w.rs_name(0), b.w.pod_name(i));
        b.obj_event(
            "ReplicaSet",
            &rs,
            "SuccessfulCreate",
            &format!("Created pod: {name}"),
            down + seconds(341),
            "replicaset-controller",
        );
    }
    b.nodes[lost] = NodeHealth::Lost(down);
    let node = NODES[lost].0;
    b.node_events.push(
        Ev {
            ns: "",
            kind: "Node",
            name: node,
            reason: "NodeNotReady",
            message: &format!("Node {node} status is now: NodeNotReady"),
            first: down,
            last: down,
            count: 1,
            warning: false,
            component: "node-controller",
        }
        .json(),
    );
    b.rollout_events(down - minutes(25), &[]);
    let mut required = vec![node.to_string()];
    if b.rule.name != "KubeNodeNotReady" {
        required.insert(0, b.subject_name());
    }
    let shape = appeared(down);
    b.finish(
        expect(
            C::Infrastructure,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ConfigurationError,
                C::DependencyFailure,
            ],
            required,
            true,
        ),
        vec![node.to_string()],
        shape,
        true,
    )
}

// ------------------------------------------------------------------ 13. recovered_flap

fn recovered_flap(ctx: &Ctx) -> Scenario {
    let kind = ctx.kind();
    let rules: Vec<&'static str> = if rolls(kind) {
        vec!["KubePodNotReady", controller_rule(kind)]
    } else {
        vec!["KubePodNotReady"]
    };
    let mut b = B::new(ctx, &rules, |_| history(ctx, None));
    let flap = ctx.now - minutes(25);
    b.starts = flap + seconds(15);
    b.onset = flap;
    b.place(false, 0, ctx.now - days(4));
    let node = 1;
    let affected: Vec<usize> = (0..b.w.pods.len())
        .filter(|&i| b.w.pods[i].node == Some(node) || b.kind() == Kind::Pod)
        .collect();
    for &i in &affected {
        b.w.pods[i].node = Some(node);
        b.w.pods[i].ready_at = flap + seconds(60);
        let ip = b.w.pod_ip(i);
        b.pod_event(
            i,
            "NodeNotReady",
            "Node is not ready",
            (flap + seconds(10), flap + seconds(10), 1),
            true,
            "node-controller",
        );
        b.pod_event(i, "Unhealthy", &format!("Readiness probe failed: Get \"http://{ip}:8080/ready\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"), (flap, flap + seconds(20), 3), true, "kubelet");
    }
    b.focus = affected.first().copied().unwrap_or(0);
    b.nodes[node] = NodeHealth::ReadySince(flap + seconds(30));
    let n = NODES[node].0;
    for (reason, at) in [("NodeNotReady", flap), ("NodeReady", flap + seconds(30))] {
        b.node_events.push(
            Ev {
                ns: "",
                kind: "Node",
                name: n,
                reason,
                message: &format!("Node {n} status is now: {reason}"),
                first: at,
                last: at,
                count: 1,
                warning: false,
                component: "node-controller",
            }
            .json(),
        );
    }
    let name = b.subject_name();
    b.finish(
        expect(
            C::Healthy,
            &[
                C::CodeDefect,
                C::ConfigurationError,
                C::ResourceExhaustion,
                C::DependencyFailure,
            ],
            vec![name],
            false,
        ),
        Vec::new(),
        Shape::Window(flap, 30),
        false,
    )
}

// ------------------------------------------------------------------ 14. latency_unmeasurable

fn latency_unmeasurable(ctx: &Ctx) -> Scenario {
    let mut b = B::new(ctx, &["HighRequestLatency"], |_| history(ctx, None));
    b.place(false, 0, ctx.now - days(4));
    let name = b.subject_name();
    let onset = b.onset;
    b.finish(
        expect(
            C::Unknown,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ConfigurationError,
                C::ResourceExhaustion,
                C::Infrastructure,
                C::DependencyFailure,
            ],
            vec![name],
            true,
        ),
        Vec::new(),
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 14b. latency_slow_dependency

/// Requests are slow because a downstream service is: every pod is Running and Ready, nothing
/// restarts, and the latency page is real; the application's log times out calling one upstream.
fn latency_slow_dependency(ctx: &Ctx) -> Scenario {
    let mut b = B::new(ctx, &["HighRequestLatency"], |_| history(ctx, None));
    b.place(false, 0, ctx.now - days(4));
    let upstream = one_of(
        ctx,
        "upstream",
        &[
            "payments-gateway.billing.svc.cluster.local:8443",
            "inventory-api.stock.svc:9090",
            "api.partner-rates.example.com:443",
        ],
    );
    let form = ctx.pick("timeout-form", 3);
    let onset = b.onset;
    let app = b.w.name.clone();
    for i in 0..b.w.pods.len() {
        let at = ctx.now - seconds(200);
        let mut out = Vec::new();
        for k in 0..6 {
            let t = at + seconds(30 * k);
            let line = match form {
                0 => format!(
                    "level=error ts={} caller=client/upstream.go:57 msg=\"upstream call failed\" app={app} err=\"Get \\\"https://{upstream}/v2/quote\\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\"",
                    k8s::ts(t)
                ),
                1 => format!(
                    "{{\"level\":\"warn\",\"ts\":\"{}\",\"msg\":\"slow upstream\",\"upstream\":\"{upstream}\",\"duration_ms\":{},\"err\":\"read tcp 10.244.1.7:51234->{upstream}: i/o timeout\"}}",
                    k8s::ts(t),
                    2900 + 37 * k
                ),
                _ => format!(
                    "{} ERROR [http-nio-8080-exec-{k}] c.e.client.UpstreamClient - call to {upstream} failed: java.net.SocketTimeoutException: Read timed out",
                    k8s::ts(t)
                ),
            };
            out.push((t, line));
        }
        let mut all = serving(onset - minutes(20), &app);
        all.extend(out);
        let prev = b.no_previous(i);
        b.log(i, LogBody::Lines(all), prev);
    }
    let host = upstream.split(':').next().unwrap_or(upstream).to_string();
    let name = b.subject_name();
    b.finish(
        expect(
            C::DependencyFailure,
            &[
                C::Healthy,
                C::CodeDefect,
                C::ConfigurationError,
                C::Infrastructure,
            ],
            vec![name, host.clone()],
            true,
        ),
        vec![host],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 14c. errors_after_release

/// A release serves errors: every pod of the new revision is Running and Ready and nothing
/// restarts (the framework catches the exception and answers 500), but the 5xx ratio pages
/// minutes after the rollout. The logs show the exception; the cause is the release.
fn errors_after_release(ctx: &Ctx) -> Scenario {
    let tag = release_tag(ctx);
    let release = ctx.image(tag);
    let set_release = |r: &mut Revision| r.image = release.clone();
    let mut b = B::new(ctx, &["HighErrorRate"], |onset| {
        history(ctx, Some((onset - minutes(6), &set_release)))
    });
    b.place(false, 0, ctx.now - days(4));
    let onset = b.onset;
    let app = b.w.name.clone();
    let form = ctx.pick("exception-form", 3);
    for i in 0..b.w.pods.len() {
        let mut out = serving(onset - minutes(12), &app);
        for k in 0..5 {
            let t = ctx.now - seconds(240) + seconds(40 * k);
            let error = match form {
                0 => format!(
                    "{} ERROR 1 --- [nio-8080-exec-{k}] c.e.checkout.PriceController : Request processing failed: java.lang.NullPointerException: Cannot invoke \"java.math.BigDecimal.multiply(java.math.BigDecimal)\" because \"discount\" is null",
                    k8s::ts(t)
                ),
                1 => format!(
                    "[{}] ERROR in app: Exception on /api/v1/quote [POST] KeyError: 'currency'",
                    k8s::ts(t)
                ),
                _ => format!(
                    "level=error ts={} caller=middleware/recover.go:41 msg=\"panic recovered\" err=\"runtime error: invalid memory address or nil pointer dereference\" path=/api/v1/cart",
                    k8s::ts(t)
                ),
            };
            out.push((t, error));
            out.push((
                t + seconds(1),
                format!(
                    "level=info ts={} caller=http/server.go:88 msg=\"request served\" app={app} method=POST path=/api/v1/cart status=500",
                    k8s::ts(t + seconds(1))
                ),
            ));
        }
        let prev = b.no_previous(i);
        b.log(i, LogBody::Lines(out), prev);
    }
    b.rollout_events(onset - minutes(6), &[]);
    let name = b.subject_name();
    b.finish(
        expect(
            C::CodeDefect,
            &[
                C::Healthy,
                C::ConfigurationError,
                C::ResourceExhaustion,
                C::Infrastructure,
                C::DependencyFailure,
            ],
            vec![name],
            true,
        ),
        vec![tag.into()],
        appeared(onset),
        true,
    )
}

// ------------------------------------------------------------------ 15. watchdog

fn watchdog(ctx: &Ctx) -> Scenario {
    let mut b = B::new(ctx, &["Watchdog"], |_| history(ctx, None));
    b.starts = ctx.now - days(3);
    b.onset = b.starts;
    let started = ctx.now - minutes(20);
    b.runs(started, None, false, 6);
    b.place(false, 0, ctx.now - days(4));
    b.cron_history();
    b.rollout_events(started, &[]);
    b.finish(
        expect(
            C::Healthy,
            &[
                C::CodeDefect,
                C::ConfigurationError,
                C::ResourceExhaustion,
                C::Infrastructure,
                C::DependencyFailure,
            ],
            Vec::new(),
            false,
        ),
        Vec::new(),
        Shape::Always,
        true,
    )
}
