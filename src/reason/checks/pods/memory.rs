//! Memory: a container OOMKilled against its memory limit (read from its spec, else as logged),
//! the peak it reached, and a runtime heap flag that sizes the heap past the limit.

use super::{
    healthy_siblings, is_oom, last_termination, live_pods, namespace, owner_phrase, restarts_recur,
};
use crate::model::{Category, ContainerFacts, PodFacts};
use crate::reason::checks::Basis;
use crate::reason::logs;
use crate::reason::{Ctx, Signal, actions, format_bytes, list_names, parse_bytes, pod_deployment};
use regex::Regex;
use std::sync::LazyLock;

static LIMIT_IN_LOG: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:memory[_ ]limit[=: ]+|/\s*)(\d+(?:\.\d+)?(?:Ki|Mi|Gi|Ti))\b").ok()
});
static USAGE_IN_LOG: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(\d+(?:\.\d+)?(?:Ki|Mi|Gi))\s*/\s*(\d+(?:\.\d+)?(?:Ki|Mi|Gi))").ok()
});

/// The bytes a memory-sizing flag (as read into `memory_flags`) lets the runtime's heap grow to:
/// the JVM's `-Xmx4g` (k, m, g, t: binary), Node's `--max-old-space-size` (MiB), Go's
/// `GOMEMLIMIT` (B, KiB, MiB, GiB, TiB).
pub(super) fn flag_bytes(flag: &str) -> Option<f64> {
    // `NAME: token` or `args: token`; GOMEMLIMIT is kept as `GOMEMLIMIT=value`.
    let token = flag.rsplit(' ').next().unwrap_or(flag);
    let (value, default_unit) = match token.strip_prefix("GOMEMLIMIT=") {
        Some(v) => (v.trim_end_matches('B'), 1.0),
        None => crate::model::HEAP_FLAGS
            .iter()
            .find_map(|(p, unit)| Some((token.strip_prefix(p)?, *unit)))?,
    };
    let at = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let n: f64 = value[..at].parse().ok()?;
    let mult = match value[at..].to_ascii_uppercase().trim_end_matches('I') {
        "" => default_unit,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024f64.powi(3),
        "T" => 1024f64.powi(4),
        _ => return None,
    };
    Some(n * mult)
}

/// A runtime heap flag that leaves the process no room under its memory limit: the heap may
/// grow to 90% of the limit or more, so the kernel kills it before the runtime collects.
fn heap_over_limit<'a>(c: &'a ContainerFacts, limit: Option<&str>) -> Option<(&'a str, f64)> {
    let limit = parse_bytes(limit?)?;
    c.memory_flags
        .iter()
        .filter_map(|f| Some((f.as_str(), flag_bytes(f)?)))
        .filter(|(_, b)| *b >= 0.9 * limit)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The memory limit in force, from the container spec, else as logged by the process.
fn memory_limit(ctx: &Ctx, pod: &PodFacts, c: &ContainerFacts) -> Option<String> {
    c.memory_limit.clone().or_else(|| {
        let re = LIMIT_IN_LOG.as_ref()?;
        logs::pod_lines(ctx, &pod.name).iter().find_map(|l| {
            re.captures(&l.line)
                .and_then(|cap| cap.get(1))
                .map(|m| m.as_str().to_string())
        })
    })
}

/// Peak "used / limit" reported in the logs, e.g. `496Mi / 512Mi`.
fn peak_usage(ctx: &Ctx, pod: &PodFacts) -> Option<String> {
    let re = USAGE_IN_LOG.as_ref()?;
    logs::pod_lines(ctx, &pod.name)
        .iter()
        .filter_map(|l| {
            let caps = re.captures(&l.line)?;
            let used = caps.get(1)?.as_str();
            Some((
                parse_bytes(used)?,
                format!("{used} / {}", caps.get(2)?.as_str()),
            ))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, s)| s)
}

/// OOMKilled (exit code 137) against the container's memory limit.
pub(crate) fn oom_killed(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for pod in live_pods(ctx) {
        for c in &pod.containers {
            if !is_oom(ctx, pod, c) {
                continue;
            }
            let (_, code) = last_termination(ctx, pod, c);
            let code = code.unwrap_or(137);
            let limit = memory_limit(ctx, pod, c);
            let limit_txt = limit
                .as_deref()
                .map(|l| format!("its memory limit of {l}"))
                .unwrap_or("its memory limit".into());
            let usage = peak_usage(ctx, pod)
                .map(|u| format!(" (memory use reached {u} just before the kill)"))
                .unwrap_or_default();
            let siblings = healthy_siblings(ctx, pod);
            let heap = heap_over_limit(c, limit.as_deref());
            // A limit the workload never set, defaulted by the namespace's LimitRange: the
            // workload's spec is what is missing.
            let defaulted = c.memory_limit_defaulted && heap.is_none();
            let scope = if defaulted {
                format!(
                    "; the workload sets no memory limit of its own: {limit_txt} is the namespace's LimitRange default (kubernetes.io/limit-ranger), so its resources must be set to what it needs"
                )
            } else if let Some((flag, bytes)) = heap {
                format!(
                    "; its runtime is told its heap may grow to {} ({flag}), which leaves it no room under {limit_txt}: the heap setting is wrong for the limit, and raising the limit alone moves the kill",
                    format_bytes(bytes)
                )
            } else if siblings.is_empty() {
                String::new()
            } else {
                format!(
                    "; sibling pods {} stay Ready, so the workload on this replica needs more memory than the limit allows",
                    list_names(&siblings, 3)
                )
            };
            let evidence = ctx.ev(&[
                "kubernetes/pods",
                "kubernetes/events",
                "kubernetes/pod_logs",
            ]);
            let mut sig = Signal {
                analyzer: "oom_killed",
                summary: format!(
                    "{} container {} was OOMKilled (exit code {code}) at {limit_txt}; {} restarts",
                    owner_phrase(pod),
                    c.name,
                    c.restart_count
                ),
                detail: format!(
                    "the kernel cgroup OOM killer sent SIGKILL (exit code {code}){usage}"
                ),
                category: if heap.is_some() || defaulted {
                    Category::ConfigurationError
                } else {
                    Category::ResourceExhaustion
                },
                basis: Basis::Stated,
                // The limit it hit, read from the spec, is two more links: what and why.
                links: if limit.is_some() { 2 } else { 0 },
                evidence: evidence.clone(),
                cause: Some(format!(
                    "{}: container {} of {} is OOMKilled with exit code {code} when its memory use hits {limit_txt}{usage}; the kernel kills the process and kubelet restarts it into CrashLoopBackOff ({} restarts){scope}",
                    if heap.is_some() {
                        "Heap sized past the memory limit"
                    } else if defaulted {
                        "Memory limit left to a LimitRange default"
                    } else {
                        "Memory exhaustion"
                    },
                    c.name,
                    owner_phrase(pod),
                    c.restart_count
                )),
                objects: vec![format!("pod/{}", pod.name)],
                // Running and Ready again since the kill: the episode ended with it, unless
                // the kills keep a rhythm and the next one is due.
                until: c.last_finished_at.filter(|_| {
                    c.ready && c.state == "running" && restarts_recur(ctx, pod, c).is_none()
                }),
                ..Signal::default()
            };
            if let Some(d) = pod_deployment(pod) {
                let new_limit = limit
                    .as_deref()
                    .and_then(parse_bytes)
                    .map(|b| format_bytes(b * 2.0))
                    .unwrap_or_else(|| "1Gi".into());
                sig.actions.push(actions::set_memory_limit(
                    namespace(pod),
                    &d,
                    &c.name,
                    &new_limit,
                    format!(
                        "{} is killed at {limit_txt}; raising the limit to {new_limit} gives the process headroom while the memory growth is investigated",
                        c.name
                    ),
                    evidence.clone(),
                ));
                sig.actions.push(actions::rollout_restart(
                    namespace(pod),
                    &d,
                    format!("restart deployment/{d} pods to clear the crash-loop back-off once the new limit is set"),
                    evidence,
                ));
            }
            out.push(sig);
        }
    }
    out
}
