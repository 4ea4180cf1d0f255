//! Pod analyzers: CrashLoopBackOff, failed runs, containers that cannot be created or started,
//! probe failures; OOM kills (`memory`) and image pulls (`image`) beside them.

mod image;
mod memory;
pub(crate) use image::image_pull;
pub(crate) use memory::oom_killed;

use super::{Basis, Decl, Role};
use crate::model::{Category, ContainerFacts, PodFacts};
use crate::reason::logs::{self, Sig};
use crate::reason::{Ctx, Signal, actions, pod_deployment};
use regex::Regex;
use std::sync::LazyLock;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "crash_loop",
        title: "container restarting with back-off",
        concern: "pods",
        role: Role::Effect,
        reads: &[],
    },
    Decl {
        id: "failed_run",
        title: "run exited with an error",
        concern: "pods",
        role: Role::Effect,
        reads: &[],
    },
    Decl {
        id: "oom_killed",
        title: "container killed out of memory",
        concern: "pods",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "image_pull",
        title: "image cannot be pulled",
        concern: "pods",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "container_config",
        title: "container cannot be created from its spec",
        concern: "pods",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "start_blocked",
        title: "pod stuck before its containers start",
        concern: "pods",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "probe_failure",
        title: "liveness or readiness probe failing",
        concern: "pods",
        role: Role::Effect,
        reads: &[],
    },
    Decl {
        id: "probe_history",
        title: "probe failures that ended",
        concern: "pods",
        role: Role::Clearance,
        reads: &[],
    },
];

static TERMINATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)reason[=:]\s*([A-Za-z]+),?\s*exit[_ ]code[=:]\s*(-?\d+)").ok()
});
/// How a container last ended: (reason, exit code), from its status, else from status or event messages.
pub(crate) fn last_termination(
    ctx: &Ctx,
    pod: &PodFacts,
    c: &ContainerFacts,
) -> (Option<String>, Option<i32>) {
    let mut reason = c.last_reason.clone();
    let mut code = c.last_exit_code;
    if c.state == "terminated" {
        reason = reason.or_else(|| c.reason.clone());
        code = code.or(c.exit_code);
    }
    if reason.is_none() || code.is_none() {
        let texts = c.message.iter().cloned().chain(
            ctx.events_for(&pod.name)
                .into_iter()
                .map(|e| e.message.clone()),
        );
        for t in texts {
            if let Some(caps) = TERMINATION.as_ref().and_then(|re| re.captures(&t)) {
                reason = reason.or_else(|| caps.get(1).map(|m| m.as_str().to_string()));
                code = code.or_else(|| caps.get(2).and_then(|m| m.as_str().parse().ok()));
                break;
            }
        }
    }
    (reason, code)
}

/// The pod's events that belong to this pod and this episode: not an earlier pod's of the same
/// name (a StatefulSet's, a recreated bare pod's), not from long ago.
fn current_events<'a>(ctx: &Ctx<'a>, pod: &PodFacts) -> Vec<&'a crate::model::K8sEventFacts> {
    ctx.events_for(&pod.name)
        .into_iter()
        .filter(|e| {
            e.last_seen.or(e.first_seen).is_none_or(|t| {
                ctx.minutes_ago(t) < STALE_EVENT_MINUTES && pod.created_at.is_none_or(|c| t >= c)
            })
        })
        .collect()
}

/// Whether kubelet killed this pod's containers for failing a liveness probe.
fn probe_killed(ctx: &Ctx, pod: &PodFacts) -> bool {
    current_events(ctx, pod).iter().any(|e| {
        let m = e.message.to_lowercase();
        (e.reason == "Killing" && m.contains("liveness"))
            || (e.reason == "Unhealthy" && m.contains("liveness probe failed"))
    })
}

pub(crate) fn is_oom(ctx: &Ctx, pod: &PodFacts, c: &ContainerFacts) -> bool {
    // An evicted pod's containers were killed by kubelet reclaiming a resource (see eviction).
    if pod.status_reason.as_deref() == Some("Evicted") {
        return false;
    }
    let (reason, code) = last_termination(ctx, pod, c);
    let oom_reason =
        reason.as_deref() == Some("OOMKilled") || c.reason.as_deref() == Some("OOMKilled");
    let oom_log = logs::pod_lines(ctx, &pod.name)
        .iter()
        .any(|l| logs::classify(&l.line).contains(&Sig::Oom));
    // Exit code 137 is a SIGKILL: the OOM killer's when kubelet gives no other reason; a reason
    // it does give ("Error": the grace period ran out) is believed over the code.
    let other_reason = reason
        .as_deref()
        .is_some_and(|r| !r.is_empty() && r != "OOMKilled");
    oom_reason || (code == Some(137) && (oom_log || (!other_reason && !probe_killed(ctx, pod))))
}

pub(super) fn namespace(pod: &PodFacts) -> &str {
    crate::reason::namespace_or_default(&pod.namespace)
}

pub(super) fn owner_phrase(pod: &PodFacts) -> String {
    match pod_deployment(pod) {
        Some(d) => format!("pod {} (deployment {d})", pod.name),
        None => format!("pod {}", pod.name),
    }
}

/// Pods in scope, live (not being deleted).
/// `init container` or `container`, so a statement says which kind failed.
fn role(c: &ContainerFacts) -> &'static str {
    if c.init {
        "init container"
    } else {
        "container"
    }
}

pub(super) fn live_pods<'a>(ctx: &Ctx<'a>) -> Vec<&'a PodFacts> {
    ctx.pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting)
        .collect()
}

/// Restarts that keep a rhythm: the container restarted at least [`RECURRING_RESTARTS`] times
/// over its pod's life and its last restart is more recent than twice their mean interval, so
/// Ready now is a pause before the next one, not a recovery.
pub(crate) fn restarts_recur(ctx: &Ctx, pod: &PodFacts, c: &ContainerFacts) -> Option<Rhythm> {
    let (last, since) = (c.last_finished_at?, pod.created_at?);
    if c.restart_count < RECURRING_RESTARTS || last <= since {
        return None;
    }
    let every_minutes = (last - since).num_seconds() as f64 / 60.0 / f64::from(c.restart_count);
    (ctx.minutes_ago(last) < 2.0 * every_minutes).then_some(Rhythm {
        since,
        last,
        every_minutes,
    })
}

/// Restarts that keep a rhythm: since when (the pod's creation), the last one, and their mean
/// interval.
pub(crate) struct Rhythm {
    pub since: chrono::DateTime<chrono::Utc>,
    pub last: chrono::DateTime<chrono::Utc>,
    pub every_minutes: f64,
}

/// Restarts of one container that make a rhythm: fewer are a start-up stumble.
const RECURRING_RESTARTS: u32 = 3;

/// Why a pod's containers last stopped (OOMKilled, Error, ...), for those that restarted.
fn failure_reasons(pod: &PodFacts) -> Vec<&str> {
    pod.containers
        .iter()
        .filter(|c| c.restart_count > 0)
        .filter_map(|c| c.last_reason.as_deref().or(c.reason.as_deref()))
        .collect()
}

/// The pod's siblings that are Ready and never failed the way it did: the ones that show a
/// fault is the pod's own. A Ready sibling that was killed for the same reason shares it.
pub(crate) fn unaffected_siblings<'a>(ctx: &Ctx<'a>, pod: &PodFacts) -> Vec<&'a PodFacts> {
    let reasons = failure_reasons(pod);
    ctx.siblings(pod)
        .into_iter()
        .filter(|p| p.ready() && !p.deleting)
        .filter(|p| !failure_reasons(p).iter().any(|r| reasons.contains(r)))
        .collect()
}

/// Sibling pods that are Running and Ready and never failed alike, for "the fault is specific
/// to this pod" reasoning.
pub(super) fn healthy_siblings(ctx: &Ctx, pod: &PodFacts) -> Vec<String> {
    unaffected_siblings(ctx, pod)
        .into_iter()
        .map(|p| p.name.clone())
        .collect()
}

/// Containers the kubelet cannot even create or start: a missing Secret or ConfigMap (key), a bad
/// command or mount. The message names what is missing.
pub(crate) fn container_config(ctx: &Ctx) -> Vec<Signal> {
    const REASONS: [&str; 4] = [
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "InvalidImageName",
    ];
    let mut out = Vec::new();
    for pod in live_pods(ctx) {
        for c in &pod.containers {
            let Some(reason) = c.reason.as_deref().filter(|r| REASONS.contains(r)) else {
                continue;
            };
            let message = c
                .message
                .clone()
                .or_else(|| {
                    ctx.events_for(&pod.name)
                        .into_iter()
                        .filter(|e| e.event_type == "Warning")
                        .max_by_key(|e| e.last_seen)
                        .map(|e| e.message.clone())
                })
                .unwrap_or_else(|| "no message recorded".into());
            let evidence = ctx.ev(&["kubernetes/pods", "kubernetes/events"]);
            out.push(Signal {
                analyzer: "container_config",
                summary: format!(
                    "{}: {} {} is waiting with {reason}: {message}",
                    owner_phrase(pod),
                    role(c),
                    c.name
                ),
                category: Category::ConfigurationError,
                basis: Basis::Stated,
                links: 1,
                evidence,
                cause: Some(format!(
                    "{}: the kubelet cannot start {} {} ({reason}): {message}; the pod spec references something that is missing or invalid",
                    owner_phrase(pod),
                    role(c),
                    c.name
                )),
                objects: vec![format!("pod/{}", pod.name)],
                ..Signal::default()
            });
        }
    }
    out
}

/// Pods held before any container starts: a volume that will not mount or attach (FailedMount,
/// FailedAttachVolume) or a sandbox the node cannot create (FailedCreatePodSandBox). A secret,
/// ConfigMap or claim that does not exist is configuration; a volume the platform cannot attach
/// (held by another node, a driver that times out) or a node whose network plugin or runtime
/// fails is infrastructure.
pub(crate) fn start_blocked(ctx: &Ctx) -> Vec<Signal> {
    const REASONS: [&str; 3] = [
        "FailedMount",
        "FailedAttachVolume",
        "FailedCreatePodSandBox",
    ];
    let mut out = Vec::new();
    // Sandbox and mounts come before any container starts: a pod whose containers ran got past
    // them, and an event older than the pod is about an earlier pod of the same name.
    let not_started = |pod: &PodFacts| {
        pod.containers.iter().all(|c| {
            c.state == "waiting"
                && c.restart_count == 0
                && c.reason
                    .as_deref()
                    .is_none_or(|r| r == "ContainerCreating" || r == "PodInitializing")
        })
    };
    for pod in live_pods(ctx) {
        if pod.ready() || pod.phase == "Succeeded" || !not_started(pod) {
            continue;
        }
        let Some(e) = ctx
            .events_for(&pod.name)
            .into_iter()
            .filter(|e| e.event_type == "Warning" && REASONS.contains(&e.reason.as_str()))
            .filter(|e| match (e.last_seen, pod.created_at) {
                (Some(seen), Some(created)) => seen >= created,
                _ => true,
            })
            .max_by_key(|e| e.last_seen)
        else {
            continue;
        };
        let lower = e.message.to_lowercase();
        let missing = lower.contains("not found") || lower.contains("does not exist");
        // A sandbox killed for memory is the pod's own limit, too small for its runtime to start
        // (its pause or init process is OOM-killed), not the node.
        let sandbox_oom = e.reason == "FailedCreatePodSandBox"
            && (lower.contains("oom")
                || lower.contains("out of memory")
                || lower.contains("memory limit"));
        let tiny = pod
            .containers
            .iter()
            .filter_map(|c| c.memory_limit.as_deref())
            .find(|l| unstartable_limit(l));
        let (category, mechanism) = if sandbox_oom && tiny.is_some() {
            (
                Category::ConfigurationError,
                "the pod's sandbox is killed for memory as it is created (OOMKilled): a memory limit under a MiB leaves no room for any process, so its unit is missing or mistyped",
            )
        } else if sandbox_oom {
            (
                Category::ResourceExhaustion,
                "the pod's sandbox is killed for memory as it is created (OOMKilled): its memory limit is too small for its runtime to start, so no container runs; raise the limit",
            )
        } else if e.reason == "FailedCreatePodSandBox" {
            (
                Category::Infrastructure,
                "the node cannot create the pod's sandbox (its network plugin or container runtime fails), so no container starts; the node, not the workload, needs fixing",
            )
        } else if missing {
            (
                Category::ConfigurationError,
                "the pod mounts an object that does not exist, so the kubelet never starts its containers; create it or fix the name in the pod spec",
            )
        } else {
            (
                Category::Infrastructure,
                "the platform cannot attach or mount the volume, so the kubelet never starts its containers",
            )
        };
        let evidence = ctx.ev(&["kubernetes/events", "kubernetes/pods"]);
        out.push(Signal {
            analyzer: "start_blocked",
            summary: format!(
                "{}: {} x{}: {}",
                owner_phrase(pod),
                e.reason,
                e.count.max(1),
                e.message
            ),
            category,
            basis: Basis::Stated,
            links: 1,
            evidence,
            cause: Some(format!(
                "{} is stuck before start ({} x{}: \"{}\"): {mechanism}",
                owner_phrase(pod),
                e.reason,
                e.count.max(1),
                e.message
            )),
            objects: vec![format!("pod/{}", pod.name)],
            ..Signal::default()
        });
    }
    out
}

/// A memory limit no process can start under (less than a MiB): a unit left off (`512` bytes
/// for `512Mi`) or mistyped, a setting written wrong rather than a workload needing more.
fn unstartable_limit(limit: &str) -> bool {
    crate::reason::parse_bytes(limit).is_some_and(|b| b < 1024.0 * 1024.0)
}

/// CrashLoopBackOff whose cause is not a more specific analyzer's (OOM, liveness kill).
/// The runtime's message when a container cannot even start (its command or entrypoint is
/// missing or not executable), from its current or previous state.
fn start_failure(c: &ContainerFacts) -> Option<String> {
    const REASONS: [&str; 3] = ["StartError", "ContainerCannotRun", "RunContainerError"];
    let said = |m: &str| {
        let m = m.to_lowercase();
        [
            "executable file not found",
            "no such file or directory",
            "exec format error",
            "permission denied",
            "exec:",
        ]
        .iter()
        .any(|k| m.contains(k))
    };
    let current = c
        .message
        .as_deref()
        .filter(|m| said(m) || c.reason.as_deref().is_some_and(|r| REASONS.contains(&r)));
    let last = c.last_message.as_deref().filter(|m| {
        said(m)
            || c.last_reason
                .as_deref()
                .is_some_and(|r| REASONS.contains(&r))
    });
    current.or(last).map(logs::short)
}

pub(crate) fn crash_loop(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for pod in live_pods(ctx) {
        for c in &pod.containers {
            let looping = c.reason.as_deref() == Some("CrashLoopBackOff")
                || (c.restart_count >= 3 && !c.ready && c.state != "running");
            if !looping {
                continue;
            }
            let (reason, code) = last_termination(ctx, pod, c);
            let how = match (&reason, code) {
                (Some(r), Some(n)) => format!("exit code {n} (reason {r})"),
                (None, Some(n)) => format!("exit code {n}"),
                (Some(r), None) => format!("reason {r}"),
                (None, None) => "an unknown exit".into(),
            };
            let summary = format!(
                "{} is in CrashLoopBackOff: {} {} restarted {} times, last {how}",
                owner_phrase(pod),
                role(c),
                c.name,
                c.restart_count
            );
            let evidence = ctx.ev(&[
                "kubernetes/pods",
                "kubernetes/events",
                "kubernetes/pod_logs",
            ]);
            let specific = is_oom(ctx, pod, c) || probe_killed(ctx, pod);
            let mut sig = Signal {
                analyzer: "crash_loop",
                summary: summary.clone(),
                category: Category::CodeDefect,
                basis: Basis::Observed,
                links: 1,
                evidence,
                objects: vec![format!("pod/{}", pod.name)],
                ..Signal::default()
            };
            let start_failure = start_failure(c);
            let lower = start_failure.as_deref().unwrap_or_default().to_lowercase();
            if let Some(message) = &start_failure
                && (lower.contains("oom") || lower.contains("memory limit"))
            {
                // Killed for memory before it could start: its limit is too small for any
                // process, and one under a MiB is a unit left off or mistyped.
                let limit = c.memory_limit.clone().unwrap_or_else(|| "?".into());
                let (category, why) = if unstartable_limit(&limit) {
                    (
                        Category::ConfigurationError,
                        format!(
                            "its memory limit \"{limit}\" is {} bytes, too small for any process: the unit is missing or mistyped",
                            crate::reason::parse_bytes(&limit).unwrap_or_default()
                        ),
                    )
                } else {
                    (
                        Category::ResourceExhaustion,
                        format!(
                            "its memory limit {limit} is too small for its runtime to start; raise the limit"
                        ),
                    )
                };
                sig.category = category;
                sig.basis = Basis::Stated;
                sig.detail = format!("the runtime cannot start it: \"{message}\"");
                sig.cause = Some(format!(
                    "{} cannot start: {} {} ({}) is OOM-killed as it starts, with {how}: \"{message}\"; {why} (kubelet retries with back-off, {} restarts)",
                    owner_phrase(pod),
                    role(c),
                    c.name,
                    c.image,
                    c.restart_count
                ));
            } else if let Some(message) = &start_failure {
                sig.category = Category::ConfigurationError;
                sig.basis = Basis::Stated;
                sig.detail = format!("the runtime cannot start it: \"{message}\"");
                sig.cause = Some(format!(
                    "{} cannot start: {} {} ({}) fails to start with {how}: \"{message}\"; the command or entrypoint in its spec names something the image does not have, and kubelet retries with back-off ({} restarts)",
                    owner_phrase(pod),
                    role(c),
                    c.name,
                    c.image,
                    c.restart_count
                ));
            }
            if !specific && start_failure.is_none() {
                let lines = logs::pod_lines(ctx, &pod.name);
                let hits = logs::scan(lines.iter().copied());
                let last_line = lines
                    .iter()
                    .rev()
                    .find(|l| !l.line.trim().is_empty())
                    .map(|l| logs::short(&l.line));
                let (category, mechanism) = match logs::decisive(&lines, &hits) {
                    Some(h) => logs::mechanism(h),
                    None => (
                        if code == Some(0) {
                            Category::ConfigurationError
                        } else {
                            Category::CodeDefect
                        },
                        match &last_line {
                            Some(l) => format!("its last log line before exiting is \"{l}\""),
                            None => "no log explains the exit".into(),
                        },
                    ),
                };
                sig.category = category;
                (sig.basis, sig.links) = if hits.is_empty() {
                    (Basis::Observed, 1)
                } else {
                    (Basis::Logged, 1)
                };
                sig.detail = mechanism.clone();
                sig.cause = Some(format!(
                    "{} crash-loops: {} {} ({}) exits with {how} on start and kubelet restarts it with back-off ({} restarts); {mechanism}{}",
                    owner_phrase(pod),
                    role(c),
                    c.name,
                    c.image,
                    c.restart_count,
                    if c.init {
                        "; the pod's other containers cannot start until this init container succeeds"
                    } else {
                        ""
                    }
                ));
                if let Some(d) = pod_deployment(pod) {
                    if ctx
                        .changes
                        .iter()
                        .any(|ch| ch.at.is_some_and(|t| ctx.minutes_ago(t) < 240.0))
                    {
                        sig.actions.push(actions::rollout_undo(
                            namespace(pod),
                            &d,
                            format!("the crash started after a recent change; roll deployment/{d} back to the last working revision"),
                            sig.evidence.clone(),
                        ));
                    }
                    sig.actions.push(actions::delete_pod(
                        namespace(pod),
                        &pod.name,
                        format!(
                            "recreate {} to rule out a bad local state; the controller replaces it",
                            pod.name
                        ),
                        sig.evidence.clone(),
                    ));
                }
            }
            out.push(sig);
        }
    }
    out
}

/// Containers that ran to a failed end and are not restarted (a Job's pods under
/// `restartPolicy: Never`, a failed bare pod): the exit, the Job's verdict and the line that says why.
pub(crate) fn failed_runs(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    // An evicted pod's containers were ended by kubelet, not by their code (see eviction).
    for pod in live_pods(ctx)
        .into_iter()
        .filter(|p| p.status_reason.as_deref() != Some("Evicted"))
    {
        for c in &pod.containers {
            let failed = c.state == "terminated" && c.exit_code.is_some_and(|e| e != 0);
            if !failed || c.reason.as_deref() == Some("OOMKilled") {
                continue;
            }
            let code = c.exit_code.unwrap_or_default();
            let lines = logs::pod_lines(ctx, &pod.name);
            let hits = logs::scan(lines.iter().copied());
            let telling = lines
                .iter()
                .rev()
                .find(|l| {
                    let m = l.line.to_lowercase();
                    [
                        "syntax error",
                        "error",
                        "exception",
                        "traceback",
                        "fatal",
                        "panic",
                        "not found",
                        "failed",
                        "cannot",
                        "unable",
                    ]
                    .iter()
                    .any(|k| m.contains(k))
                })
                .or_else(|| lines.iter().rev().find(|l| !l.line.trim().is_empty()))
                .map(|l| logs::short(&l.line));
            let (category, mechanism) = match logs::decisive(&lines, &hits) {
                Some(h) => logs::mechanism(h),
                None => (
                    Category::CodeDefect,
                    match &telling {
                        Some(l) => format!("its own code fails: \"{l}\""),
                        None => "no log line explains the exit".to_string(),
                    },
                ),
            };
            let job = ctx
                .workload_of(pod)
                .filter(|(k, _)| k == "Job" || k == "CronJob");
            let verdict = job
                .as_ref()
                .and_then(|(_, n)| {
                    ctx.obs.workloads.iter().find(|w| {
                        w.kind == "Job"
                            && (&w.name == n || w.owner.as_deref() == Some(&format!("CronJob/{n}")))
                    })
                })
                .and_then(|w| {
                    w.conditions
                        .get("Failed")
                        .filter(|c| c.0 == "True")
                        .map(|c| (w.name.clone(), c.1.clone()))
                })
                .map(|(name, reason)| format!("; job {name} failed ({reason})"))
                .unwrap_or_default();
            let owner = match &job {
                Some((k, n)) => format!("{} {n}'s pod {}", k.to_lowercase(), pod.name),
                None => format!("pod {}", pod.name),
            };
            let evidence = ctx.ev(&[
                "kubernetes/pods",
                "kubernetes/workloads",
                "kubernetes/pod_logs",
                "logs",
            ]);
            out.push(Signal {
                analyzer: "failed_run",
                summary: format!(
                    "{owner}: {} {} ({}) exited with code {code}",
                    role(c),
                    c.name,
                    c.image
                ),
                detail: mechanism.clone(),
                category,
                basis: if hits.is_empty() && telling.is_none() {
                    Basis::Observed
                } else {
                    Basis::Measured
                },
                links: 1,
                evidence,
                cause: Some(format!(
                    "{owner} failed: {} {} ({}) exited with code {code}{verdict}; {mechanism}",
                    role(c),
                    c.name,
                    c.image
                )),
                objects: vec![format!("pod/{}", pod.name)],
                ..Signal::default()
            });
        }
    }
    out
}

/// Liveness / readiness / startup probe failures (Unhealthy events, kubelet restarts).
/// Warning events older than this are another episode's.
const STALE_EVENT_MINUTES: f64 = 60.0;

/// Minutes after which a failure that has not recurred is history, not the present.
const HISTORY_MINUTES: f64 = 15.0;

/// Probe failures that ended: the last one long ago, the pod Ready since and no restart after.
/// Said as history ("failed 4 times, last 25 min ago while its node was NotReady; Ready since").
fn probe_history(
    ctx: &Ctx,
    pod: &PodFacts,
    unhealthy: &[&&crate::model::K8sEventFacts],
    kills: &[&&crate::model::K8sEventFacts],
) -> Option<Signal> {
    let last = unhealthy
        .iter()
        .chain(kills.iter())
        .map(|e| e.last_seen.or(e.first_seen))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()?;
    let first = unhealthy
        .iter()
        .chain(kills.iter())
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min()
        .unwrap_or(last);
    let restarted_since = pod
        .containers
        .iter()
        .any(|c| c.last_finished_at.is_some_and(|t| t > last) || c.state != "running");
    if !pod.ready() || restarted_since || ctx.minutes_ago(last) < HISTORY_MINUTES {
        return None;
    }
    let failures: u32 = unhealthy.iter().map(|e| e.count.max(1)).sum();
    let lasted = (last - first).num_seconds().max(0);
    let node = pod.node.as_deref().and_then(|n| {
        ctx.events_for(n).into_iter().find(|e| {
            (e.reason == "NodeNotReady" || e.message.contains("NotReady"))
                && e.last_seen.or(e.first_seen).is_some_and(|t| {
                    (t - last).num_minutes().abs() <= 5 || (t - first).num_minutes().abs() <= 5
                })
        })?;
        Some(format!(" while its node {n} was NotReady"))
    });
    let when = format!(
        "{failures} probe failure(s) over {lasted} s, last at {} ({:.0} min ago){}",
        last.format("%H:%M UTC"),
        ctx.minutes_ago(last),
        node.unwrap_or_default()
    );
    let evidence = ctx.ev(&["kubernetes/events", "kubernetes/pods"]);
    Some(Signal {
        analyzer: "probe_history",
        history: true,
        since: Some(first),
        until: Some(last),
        summary: format!("pod {}: {when}; Ready since, no restart after", pod.name),
        category: Category::Healthy,
        basis: Basis::Measured,
        evidence: evidence.clone(),
        benign: true,
        cause: Some(format!(
            "History, not a live failure: pod {} flapped ({when}) and has been Running and Ready since, with no warning or restart after",
            pod.name
        )),
        ruled_out: vec![crate::model::RuledOut {
            statement: "Live probe misconfiguration".into(),
            reason: format!(
                "not a current failure: the probe failures on {} ended at {} and the pod has passed its probes since",
                pod.name,
                last.format("%H:%M UTC")
            ),
            evidence,
        }],
        objects: vec![format!("pod/{}", pod.name)],
        ..Signal::default()
    })
}

static PROBE_URL_PORT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:https?://)?[0-9a-zA-Z.\[\]:-]+?:([0-9]{2,5})(?:/|\x22|\s|$)").ok()
});

/// A probe aimed at a port its container does not declare: the probe's own port (a number or a
/// name) against the container's ports, or the port a refused probe dialled. None when the
/// container declares no ports (declaring them is optional, so nothing can be compared).
/// An HTTP probe answered 404: the app does not serve the path the probe asks for. Its own lines
/// may name the health paths it does serve (`"readiness": "/readyz"`), which are quoted.
fn probe_path_missing(
    pod: &PodFacts,
    kind: &str,
    messages: &[&str],
    lines: &[&crate::model::LogLine],
) -> Option<String> {
    static PATH: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(/[A-Za-z0-9_\-/]*(?:ready|live|health|status|ping)[A-Za-z0-9_\-]*)")
            .ok()
    });
    if !messages.iter().any(|m| m.contains("statuscode: 404")) {
        return None;
    }
    let path = pod
        .containers
        .iter()
        .find_map(|c| c.probe_paths.get(kind))?;
    // The probe's own word (`ready` for readiness) picks among the paths a line names.
    let stem = &kind[..kind.len().min(4)];
    let named: Vec<(String, String)> = lines
        .iter()
        .filter(|l| !l.line.contains("kube-probe"))
        .flat_map(|l| {
            PATH.as_ref()
                .into_iter()
                .flat_map(|re| re.find_iter(&l.line))
                .map(|m| (m.as_str().to_string(), logs::short(&l.line)))
                .collect::<Vec<_>>()
        })
        .filter(|(p, _)| p != path)
        .collect();
    let served = named
        .iter()
        .find(|(p, _)| p.contains(stem))
        .or_else(|| named.first())
        .cloned();
    let theirs = served
        .map(|(p, line)| format!("; its own lines name {p} (\"{line}\")"))
        .unwrap_or_default();
    Some(format!(
        "the {kind} probe asks for {path}, which the app answers with 404: it does not serve that path{theirs}"
    ))
}

fn probe_port_mismatch(pod: &PodFacts, kind: &str, messages: &[&str]) -> Option<String> {
    let declared = |c: &ContainerFacts| {
        let mut ports: Vec<String> = c.ports.iter().map(u16::to_string).collect();
        ports.sort();
        ports.dedup();
        ports.join(", ")
    };
    for c in pod
        .containers
        .iter()
        .filter(|c| !c.init && !c.ports.is_empty())
    {
        let Some(port) = c.probe_ports.get(kind) else {
            continue;
        };
        let missing = match port.parse::<u16>() {
            Ok(n) => !c.ports.contains(&n),
            Err(_) => !c.port_names.contains_key(port),
        };
        if missing {
            return Some(format!(
                "the {kind} probe of container {} targets port {port}, which the container does not listen on (it declares {}), so the probe can never pass",
                c.name,
                declared(c)
            ));
        }
    }
    // The probe's spec was not read, but kubelet's message names the port it dialled.
    let refused = messages
        .iter()
        .filter(|m| m.to_lowercase().contains("refused"))
        .filter_map(|m| {
            PROBE_URL_PORT
                .as_ref()?
                .captures(m)?
                .get(1)?
                .as_str()
                .parse::<u16>()
                .ok()
        })
        .next()?;
    let c = pod
        .containers
        .iter()
        .find(|c| !c.init && !c.ports.is_empty())?;
    (!pod.containers.iter().any(|c| c.ports.contains(&refused))).then(|| {
        format!(
            "kubelet's {kind} probe to port {refused} is refused and no container declares that port (container {} declares {}), so the probe is aimed at the wrong port",
            c.name,
            declared(c)
        )
    })
}

pub(crate) fn probe_failures(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for pod in live_pods(ctx) {
        // Events of an earlier pod of the same name (a StatefulSet's, a recreated bare pod's)
        // or from long ago say nothing about this one.
        let events = current_events(ctx, pod);
        let unhealthy: Vec<_> = events
            .iter()
            .filter(|e| {
                e.reason == "Unhealthy" || e.message.to_lowercase().contains("probe failed")
            })
            .collect();
        let kills: Vec<_> = events
            .iter()
            .filter(|e| e.reason == "Killing" && e.message.to_lowercase().contains("probe"))
            .collect();
        if unhealthy.is_empty() && kills.is_empty() {
            continue;
        }
        if let Some(history) = probe_history(ctx, pod, &unhealthy, &kills) {
            out.push(history);
            continue;
        }
        let liveness = unhealthy
            .iter()
            .chain(kills.iter())
            .any(|e| e.message.to_lowercase().contains("liveness"));
        let kind = if liveness {
            "Liveness"
        } else if unhealthy
            .iter()
            .any(|e| e.message.to_lowercase().contains("startup"))
        {
            "Startup"
        } else {
            "Readiness"
        };
        let failures: u32 = unhealthy.iter().map(|e| e.count.max(1)).sum();
        let example = unhealthy
            .first()
            .or(kills.first())
            .map(|e| logs::short(&e.message))
            .unwrap_or_default();
        let restarts = pod.restarts();
        let exit = pod
            .containers
            .iter()
            .find_map(|c| last_termination(ctx, pod, c).1)
            .map(|n| {
                let meaning = match n {
                    0 => "a clean shutdown after kubelet's SIGTERM, not a crash",
                    143 => "SIGTERM from kubelet, not a crash",
                    137 => "SIGKILL after the grace period",
                    _ => "an application error",
                };
                format!("; the container exits with exit code {n} ({meaning})")
            })
            .unwrap_or_default();
        let lines = logs::pod_lines(ctx, &pod.name);
        let hits = logs::scan(lines.iter().copied());
        let dep_hit = hits
            .iter()
            .find(|h| h.sig.category() == Category::DependencyFailure);
        // A probe that times out is often the symptom of a slow, saturated app rather than a bad probe.
        let timed_out = unhealthy.iter().any(|e| {
            let m = e.message.to_lowercase();
            m.contains("deadline exceeded") || m.contains("timeout") || m.contains("timed out")
        });
        let until = if liveness { " up to each restart" } else { "" };
        let messages: Vec<&str> = unhealthy.iter().map(|e| e.message.as_str()).collect();
        let wrong_port = probe_port_mismatch(pod, &kind.to_lowercase(), &messages)
            .or_else(|| probe_path_missing(pod, &kind.to_lowercase(), &messages, &lines));
        let (category, mechanism, (basis, links)) = match dep_hit {
            _ if wrong_port.is_some() => (
                Category::ConfigurationError,
                wrong_port.clone().unwrap_or_default(),
                (Basis::Stated, 1),
            ),
            Some(h) => (
                Category::DependencyFailure,
                format!("the health endpoint fails because a dependency is unreachable ({}: \"{}\")", h.sig.label(), h.example),
                (Basis::Measured, 0),
            ),
            None if timed_out => (
                Category::ConfigurationError,
                "the probe times out: either the app answers too slowly (saturated) or the probe's timeoutSeconds is too tight".to_string(),
                (Basis::Observed, 1),
            ),
            // Only say the logs are clean when they were read and are: no error line, no failure signature.
            None if !lines.is_empty()
                && hits.is_empty()
                && !lines.iter().any(|l| logs::is_error(l)) =>
            {
                (
                    Category::ConfigurationError,
                    format!("the application's {} log lines show no errors{until}, so the probe itself (endpoint, port, timeout or threshold) is misconfigured for this app", lines.len()),
                    (Basis::Stated, 0),
                )
            }
            None if !lines.is_empty() => {
                let errors: Vec<&&crate::model::LogLine> =
                    lines.iter().filter(|l| logs::is_error(l)).collect();
                let example = errors
                    .first()
                    .map(|l| logs::short(&l.line))
                    .or_else(|| hits.first().map(|h| h.example.clone()))
                    .unwrap_or_default();
                (
                    Category::ConfigurationError,
                    format!("the application logs {} error line(s) (e.g. \"{example}\"), so the probe may be reporting a real application fault or be misconfigured", errors.len().max(hits.len())),
                    (Basis::Timed, 1),
                )
            }
            None => (
                Category::ConfigurationError,
                "no application error explains it, which points at the probe configuration (endpoint, port, timeout or threshold)".to_string(),
                (Basis::Logged, 1),
            ),
        };
        let effect = if liveness && restarts > 0 {
            format!(
                "kubelet kills and restarts the container after repeated failures ({restarts} restarts)"
            )
        } else if liveness {
            "kubelet restarts the container once the failure threshold is reached (no restart recorded yet)".to_string()
        } else {
            "the pod is kept out of the Service endpoints (not Ready)".to_string()
        };
        let evidence = ctx.ev(&[
            "kubernetes/events",
            "kubernetes/pods",
            "kubernetes/pod_logs",
        ]);
        let mut sig = Signal {
            analyzer: "probe_failure",
            summary: format!(
                "{kind} probe failing on pod {}: {failures} failures, {restarts} restarts by kubelet",
                pod.name
            ),
            detail: example.clone(),
            category,
            basis,
            links,
            evidence: evidence.clone(),
            cause: Some(format!(
                "{kind} probe failures on {}: \"{example}\"; {effect}{exit}; {mechanism}",
                owner_phrase(pod)
            )),
            objects: vec![format!("pod/{}", pod.name)],
            symptom_of: timed_out.then_some(Category::ResourceExhaustion),
            ..Signal::default()
        };
        if let Some(d) = pod_deployment(pod) {
            sig.actions.push(actions::rollout_undo(
                namespace(pod),
                &d,
                format!("restore deployment/{d}'s previous pod template, whose {} probe passed, then fix the probe settings", kind.to_lowercase()),
                evidence.clone(),
            ));
        }
        out.push(sig);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::image::pull_mechanism;
    use super::memory::flag_bytes;
    use super::*;
    use crate::model::{K8sEventFacts, LogLine};
    use crate::reason::Observations;
    use chrono::Utc;
    use std::collections::BTreeMap;

    #[test]
    fn a_probe_answered_404_names_its_path_and_the_one_the_app_serves() {
        let pod = PodFacts {
            containers: vec![ContainerFacts {
                probe_paths: BTreeMap::from([("readiness".to_string(), "/ready".to_string())]),
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        };
        let line = |t: &str| LogLine {
            line: t.into(),
            ..LogLine::default()
        };
        let lines = [
            line(r#"{"msg":"health endpoints","liveness":"/livez","readiness":"/readyz"}"#),
            line(r#"{"msg":"request","path":"/ready","status":404,"ua":"kube-probe/1.33"}"#),
        ];
        let refs: Vec<&LogLine> = lines.iter().collect();
        let said = probe_path_missing(
            &pod,
            "readiness",
            &["Readiness probe failed: HTTP probe failed with statuscode: 404"],
            &refs,
        )
        .unwrap_or_default();
        assert!(
            said.contains("asks for /ready, which the app answers with 404")
                && said.contains("its own lines name /readyz"),
            "{said}"
        );
        // Another status is not a missing path.
        assert!(
            probe_path_missing(
                &pod,
                "readiness",
                &["Readiness probe failed: HTTP probe failed with statuscode: 503"],
                &refs
            )
            .is_none()
        );
    }

    pub(crate) fn pod(name: &str, rs: &str, ready: bool, c: ContainerFacts) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "shop".into(),
            phase: "Running".into(),
            owner: Some(format!("ReplicaSet/{rs}")),
            labels: BTreeMap::from([(
                "pod-template-hash".into(),
                rs.rsplit('-').next().unwrap_or("").into(),
            )]),
            conditions: BTreeMap::from([(
                "Ready".into(),
                if ready { "True" } else { "False" }.into(),
            )]),
            containers: vec![c],
            ..PodFacts::default()
        }
    }

    fn running(image: &str) -> ContainerFacts {
        ContainerFacts {
            name: "app".into(),
            image: image.into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        }
    }

    fn ev(reason: &str, object: &str, msg: &str, count: u32) -> K8sEventFacts {
        K8sEventFacts {
            event_type: "Warning".into(),
            reason: reason.into(),
            message: msg.into(),
            object: format!("Pod/{object}"),
            namespace: "shop".into(),
            count,
            ..K8sEventFacts::default()
        }
    }

    fn evidence() -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([
            ("kubernetes/pods".to_string(), vec!["e1".to_string()]),
            ("kubernetes/events".to_string(), vec!["e2".to_string()]),
        ])
    }

    fn creating() -> ContainerFacts {
        ContainerFacts {
            name: "app".into(),
            image: "shop:1".into(),
            state: "waiting".into(),
            reason: Some("ContainerCreating".into()),
            ..ContainerFacts::default()
        }
    }

    #[test]
    fn a_pod_held_before_start_is_explained() {
        let missing = r#"MountVolume.SetUp failed for volume "tls" : secret "shop-tls" not found"#;
        let attach = r#"Multi-Attach error for volume "pvc-0a1b" Volume is already exclusively attached to one node and can't be attached to another"#;
        let sandbox = r#"Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "4f1c": plugin type="calico" failed (add): error getting ClusterInformation: connection is unauthorized"#;
        for (message, reason, category) in [
            (missing, "FailedMount", Category::ConfigurationError),
            (attach, "FailedAttachVolume", Category::Infrastructure),
            (sandbox, "FailedCreatePodSandBox", Category::Infrastructure),
            (
                "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container task: OOMKilled: container init was OOM-killed (memory limit too low?)",
                "FailedCreatePodSandBox",
                Category::ResourceExhaustion,
            ),
        ] {
            let mut stuck = pod("cart-abc12-x1", "cart-abc12", false, creating());
            stuck.phase = "Pending".into();
            let obs = Observations {
                pods: vec![
                    stuck,
                    pod("cart-abc12-x2", "cart-abc12", true, running("shop:1")),
                ],
                events: vec![ev(reason, "cart-abc12-x1", message, 7)],
                evidence: evidence(),
                ..Observations::default()
            };
            let sigs = start_blocked(&Ctx::new(&obs));
            assert_eq!(sigs.len(), 1, "{sigs:?}");
            assert_eq!(sigs[0].category, category);
            let cause = sigs[0].cause.clone().unwrap_or_default();
            assert!(
                cause.contains(message) && cause.contains("cart-abc12-x1"),
                "{cause}"
            );
            assert_eq!(sigs[0].objects, vec!["pod/cart-abc12-x1".to_string()]);
        }
        // A pod that mounted and now crashes: its containers started, so the mount is history.
        let crashing = ContainerFacts {
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            restart_count: 4,
            ..creating()
        };
        let obs = Observations {
            pods: vec![pod("cart-abc12-x1", "cart-abc12", false, crashing)],
            events: vec![ev("FailedMount", "cart-abc12-x1", missing, 2)],
            evidence: evidence(),
            ..Observations::default()
        };
        assert!(start_blocked(&Ctx::new(&obs)).is_empty());
        // A pod that mounted in the end and runs: the old event is history, not a cause.
        let obs = Observations {
            pods: vec![pod("cart-abc12-x2", "cart-abc12", true, running("shop:1"))],
            events: vec![ev("FailedMount", "cart-abc12-x2", missing, 2)],
            evidence: evidence(),
            ..Observations::default()
        };
        assert!(start_blocked(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn oom_kill_names_exit_code_and_limit() {
        let bad = ContainerFacts {
            name: "app".into(),
            image: "shop:1".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("OOMKilled".into()),
            last_exit_code: Some(137),
            restart_count: 5,
            memory_limit: Some("256Mi".into()),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![
                pod("cart-abc12-x1", "cart-abc12", false, bad),
                pod("cart-abc12-x2", "cart-abc12", true, running("shop:1")),
            ],
            evidence: evidence(),
            ..Observations::default()
        };
        let ctx = Ctx::new(&obs);
        let sigs = oom_killed(&ctx);
        assert_eq!(sigs.len(), 1);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("exit code 137")
                && cause.contains("256Mi")
                && cause.contains("cart-abc12-x1"),
            "{cause}"
        );
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
        assert_eq!(
            sigs[0].actions[0].params.get("memory_limit"),
            Some(&serde_json::json!("512Mi"))
        );
        // The crash-loop analyzer defers to the OOM one.
        assert!(crash_loop(&ctx).iter().all(|s| s.cause.is_none()));
    }

    #[test]
    fn heap_flags_are_read_in_their_runtime_units() {
        let gi = 1024f64.powi(3);
        for (flag, bytes) in [
            ("NODE_OPTIONS: --max-old-space-size=4096", 4.0 * gi),
            ("JAVA_OPTS: -Xmx3g", 3.0 * gi),
            ("args: -Xmx1536M", 1.5 * gi),
            ("args: -XX:MaxHeapSize=2G", 2.0 * gi),
            ("GOMEMLIMIT=3GiB", 3.0 * gi),
            ("GOMEMLIMIT=1073741824", gi),
        ] {
            assert_eq!(flag_bytes(flag), Some(bytes), "{flag}");
        }
        assert_eq!(flag_bytes("JAVA_OPTS: -Xmxlots"), None);
    }

    #[test]
    fn a_heap_set_past_the_limit_is_the_configuration_and_siblings_killed_alike_share_it() {
        let started = Utc::now() - chrono::Duration::hours(33);
        let killed = |flags: &[&str]| ContainerFacts {
            name: "app".into(),
            image: "shop:1".into(),
            ready: true,
            state: "running".into(),
            last_reason: Some("OOMKilled".into()),
            last_exit_code: Some(137),
            last_finished_at: Some(Utc::now() - chrono::Duration::minutes(23)),
            restart_count: 11,
            memory_limit: Some("2Gi".into()),
            memory_flags: flags.iter().map(|f| f.to_string()).collect(),
            ..ContainerFacts::default()
        };
        let mut pods = vec![
            pod(
                "cart-abc12-x1",
                "cart-abc12",
                true,
                killed(&["NODE_OPTIONS: --max-old-space-size=4096"]),
            ),
            pod(
                "cart-abc12-x2",
                "cart-abc12",
                true,
                killed(&["NODE_OPTIONS: --max-old-space-size=4096"]),
            ),
        ];
        for p in &mut pods {
            p.created_at = Some(started);
        }
        let obs = Observations {
            now: Utc::now(),
            pods,
            evidence: evidence(),
            ..Observations::default()
        };
        let ctx = Ctx::new(&obs);
        let sigs = oom_killed(&ctx);
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("--max-old-space-size=4096") && cause.contains("4Gi"),
            "{cause}"
        );
        // Killed every three hours, the last 23 minutes ago: the next is due, nothing ended.
        assert!(sigs[0].until.is_none());
        assert!(restarts_recur(&ctx, &obs.pods[0], &obs.pods[0].containers[0]).is_some());
        // The sibling was OOMKilled too: it does not show the fault is this pod's own.
        assert!(unaffected_siblings(&ctx, &obs.pods[0]).is_empty());
        // A heap well under the limit leaves the limit as what was exhausted.
        let mut obs = obs.clone();
        obs.pods[0].containers[0].memory_flags = vec!["JAVA_OPTS: -Xmx1g".into()];
        let sigs = oom_killed(&Ctx::new(&obs));
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
    }

    #[test]
    fn oom_limit_is_read_from_logs_when_spec_lacks_it() {
        let bad = ContainerFacts {
            name: "app".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            message: Some("last terminated: reason=OOMKilled, exit_code=137".into()),
            restart_count: 3,
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![pod("api-1a2b3-q", "api-1a2b3", false, bad)],
            pod_logs: vec![
                LogLine {
                    line: "starting memory_limit=1Gi".into(),
                    ..LogLine::default()
                },
                LogLine {
                    line: "heap 990Mi / 1Gi".into(),
                    ..LogLine::default()
                },
            ],
            ..Observations::default()
        };
        let sigs = oom_killed(&Ctx::new(&obs));
        let cause = sigs
            .first()
            .and_then(|s| s.cause.clone())
            .unwrap_or_default();
        assert!(
            cause.contains("1Gi") && cause.contains("990Mi / 1Gi"),
            "{cause}"
        );
    }

    #[test]
    fn a_container_killed_for_memory_as_it_starts_names_its_limit_and_a_missing_unit() {
        let starting = |limit: &str| {
            ContainerFacts {
            name: "app".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("StartError".into()),
            last_exit_code: Some(128),
            last_message: Some("OCI runtime create failed: runc create failed: unable to start container process: container init was OOM-killed (memory limit too low?): unknown".into()),
            memory_limit: Some(limit.into()),
            restart_count: 8,
            ..ContainerFacts::default()
        }
        };
        let verdict = |limit: &str| {
            let obs = Observations {
                pods: vec![pod("web-9f8e7-a", "web-9f8e7", false, starting(limit))],
                ..Observations::default()
            };
            let sigs = crash_loop(&Ctx::new(&obs));
            (sigs[0].category, sigs[0].cause.clone().unwrap_or_default())
        };
        let (category, cause) = verdict("512");
        assert_eq!(category, Category::ConfigurationError, "{cause}");
        assert!(
            cause.contains("\"512\"") && cause.contains("unit"),
            "{cause}"
        );
        let (category, cause) = verdict("16Mi");
        assert_eq!(category, Category::ResourceExhaustion, "{cause}");
        assert!(cause.contains("16Mi"), "{cause}");
    }

    #[test]
    fn an_oom_kill_at_a_limit_the_workload_never_set_is_its_configuration() {
        let killed = |defaulted: bool| ContainerFacts {
            name: "app".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("OOMKilled".into()),
            last_exit_code: Some(137),
            memory_limit: Some("256Mi".into()),
            memory_limit_defaulted: defaulted,
            restart_count: 12,
            ..ContainerFacts::default()
        };
        for (defaulted, want) in [
            (true, Category::ConfigurationError),
            (false, Category::ResourceExhaustion),
        ] {
            let obs = Observations {
                pods: vec![pod("sync-9f8e7-a", "sync-9f8e7", false, killed(defaulted))],
                ..Observations::default()
            };
            let sigs = oom_killed(&Ctx::new(&obs));
            let cause = sigs[0].cause.clone().unwrap_or_default();
            assert_eq!(sigs[0].category, want, "{cause}");
            assert_eq!(cause.contains("LimitRange"), defaulted, "{cause}");
        }
    }

    #[test]
    fn crash_loop_with_panic_is_a_code_defect() {
        let bad = ContainerFacts {
            name: "app".into(),
            state: "waiting".into(),
            reason: Some("CrashLoopBackOff".into()),
            last_reason: Some("Error".into()),
            last_exit_code: Some(2),
            restart_count: 7,
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![pod("web-9f8e7-a", "web-9f8e7", false, bad)],
            pod_logs: vec![LogLine {
                line: "panic: runtime error: invalid memory address or nil pointer dereference"
                    .into(),
                ..LogLine::default()
            }],
            ..Observations::default()
        };
        let sigs = crash_loop(&Ctx::new(&obs));
        assert_eq!(sigs[0].category, Category::CodeDefect);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("exit code 2") && cause.contains("panic"),
            "{cause}"
        );
        assert!(oom_killed(&Ctx::new(&obs)).is_empty());
    }

    #[test]
    fn a_rate_limited_registry_is_told_apart_from_a_wrong_reference() {
        let limited = "Failed to pull image \"nginx:1.27\": 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit.";
        assert!(pull_mechanism(limited).contains("rate-limits"));
        assert!(pull_mechanism("manifest unknown").contains("does not exist"));
        // A build for another CPU architecture is not a missing tag.
        let platform =
            "Failed to pull image \"svc:0.9\": no match for platform in manifest: not found";
        assert!(pull_mechanism(platform).contains("architecture"));
    }

    #[test]
    fn image_pull_backoff_names_image_and_registry_answer() {
        let bad = ContainerFacts {
            name: "app".into(),
            image: "shop:9.9.9".into(),
            state: "waiting".into(),
            reason: Some("ImagePullBackOff".into()),
            message: Some("Back-off pulling image \"shop:9.9.9\": manifest unknown".into()),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![
                pod("cart-new11-a", "cart-new11", false, bad),
                pod("cart-old22-b", "cart-old22", true, running("shop:1.0")),
            ],
            events: vec![ev(
                "Failed",
                "cart-new11-a",
                "Failed to pull image \"shop:9.9.9\": not found: manifest unknown",
                4,
            )],
            evidence: evidence(),
            ..Observations::default()
        };
        let sigs = image_pull(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1);
        let s = &sigs[0];
        assert_eq!(s.category, Category::ConfigurationError);
        let cause = s.cause.clone().unwrap_or_default();
        assert!(
            cause.contains("ImagePullBackOff")
                && cause.contains("shop:9.9.9")
                && cause.contains("manifest unknown"),
            "{cause}"
        );
        assert!(cause.contains("old ReplicaSet"), "{cause}");
        assert_eq!(s.actions[0].kind, "kubernetes.rollout_undo");
        assert_eq!(s.evidence, vec!["e1".to_string(), "e2".to_string()]);
    }

    #[test]
    fn liveness_failures_with_clean_exit_are_probe_configuration() {
        let c = ContainerFacts {
            name: "app".into(),
            state: "running".into(),
            last_reason: Some("Completed".into()),
            last_exit_code: Some(0),
            restart_count: 4,
            has_liveness_probe: true,
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![pod("api-77aa1-z", "api-77aa1", false, c)],
            events: vec![
                ev(
                    "Unhealthy",
                    "api-77aa1-z",
                    "Liveness probe failed: Get \"http://10.0.0.9:8080/health\": context deadline exceeded",
                    12,
                ),
                ev(
                    "Killing",
                    "api-77aa1-z",
                    "Container app failed liveness probe, will be restarted",
                    4,
                ),
            ],
            pod_logs: vec![LogLine {
                line: "INFO GET /orders 200 12ms".into(),
                ..LogLine::default()
            }],
            ..Observations::default()
        };
        let ctx = Ctx::new(&obs);
        let sigs = probe_failures(&ctx);
        assert_eq!(sigs.len(), 1);
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let cause = sigs[0].cause.clone().unwrap_or_default();
        assert!(
            cause.contains("Liveness probe") && cause.contains("exit code 0"),
            "{cause}"
        );
        assert!(oom_killed(&ctx).is_empty());
    }

    #[test]
    fn a_probe_aimed_at_a_port_the_container_does_not_declare_is_named() {
        let container = |probe: &str| ContainerFacts {
            name: "app".into(),
            state: "running".into(),
            restart_count: 5,
            has_liveness_probe: true,
            ports: vec![8080],
            port_names: [("http".to_string(), 8080)].into_iter().collect(),
            probe_ports: [("liveness".to_string(), probe.to_string())]
                .into_iter()
                .collect(),
            ..ContainerFacts::default()
        };
        let refused = |port: u16| {
            format!(
                "Liveness probe failed: Get \"http://10.0.0.9:{port}/healthz\": dial tcp 10.0.0.9:{port}: connect: connection refused"
            )
        };
        for (probe, dialled, wrong) in [
            ("8081", 8081, true),
            ("metrics", 9090, true),
            ("http", 8080, false),
            ("8080", 8080, false),
        ] {
            let obs = Observations {
                pods: vec![pod("api-77aa1-z", "api-77aa1", false, container(probe))],
                events: vec![ev("Unhealthy", "api-77aa1-z", &refused(dialled), 12)],
                ..Observations::default()
            };
            let sigs = probe_failures(&Ctx::new(&obs));
            assert_eq!(sigs.len(), 1);
            let cause = sigs[0].cause.clone().unwrap_or_default();
            assert_eq!(
                cause.contains(&format!("targets port {probe}, which the container does not listen on (it declares 8080)")),
                wrong,
                "{probe}: {cause}"
            );
            assert_eq!(sigs[0].category, Category::ConfigurationError);
        }
        // The probe's spec unread, kubelet's message names the port it dialled.
        let mut unread = container("8081");
        unread.probe_ports.clear();
        let obs = Observations {
            pods: vec![pod("api-77aa1-z", "api-77aa1", false, unread)],
            events: vec![ev("Unhealthy", "api-77aa1-z", &refused(8081), 12)],
            ..Observations::default()
        };
        let cause = probe_failures(&Ctx::new(&obs))[0]
            .cause
            .clone()
            .unwrap_or_default();
        assert!(
            cause.contains("probe to port 8081 is refused and no container declares that port"),
            "{cause}"
        );
        // No ports declared: nothing to compare, no claim about ports.
        let mut bare = container("8081");
        bare.ports.clear();
        bare.port_names.clear();
        let obs = Observations {
            pods: vec![pod("api-77aa1-z", "api-77aa1", false, bare)],
            events: vec![ev("Unhealthy", "api-77aa1-z", &refused(8081), 12)],
            ..Observations::default()
        };
        let cause = probe_failures(&Ctx::new(&obs))[0]
            .cause
            .clone()
            .unwrap_or_default();
        assert!(
            !cause.contains("does not listen") && !cause.contains("no container declares"),
            "{cause}"
        );
    }

    #[test]
    fn readiness_failure_from_unreachable_dependency() {
        let c = ContainerFacts {
            name: "app".into(),
            state: "running".into(),
            ..ContainerFacts::default()
        };
        let obs = Observations {
            pods: vec![pod("api-77aa1-z", "api-77aa1", false, c)],
            events: vec![ev(
                "Unhealthy",
                "api-77aa1-z",
                "Readiness probe failed: HTTP probe failed with statuscode: 503",
                30,
            )],
            pod_logs: vec![LogLine {
                line: "ERROR dial tcp redis.cache:6379: connect: connection refused".into(),
                ..LogLine::default()
            }],
            ..Observations::default()
        };
        let sigs = probe_failures(&Ctx::new(&obs));
        assert_eq!(sigs[0].category, Category::DependencyFailure);
        assert!(sigs[0].summary.starts_with("Readiness"));
    }
}
