//! Diagnosis step 2: what the alert claims, measured now and over the window: confirmed,
//! cleared, unmeasurable (naming what is missing), or firing by design.

use crate::model::{AlertStatus, PodFacts, Symptom, SymptomState};
use crate::reason::{Ctx, metrics};
use chrono::{DateTime, Utc};

/// Alerts that fire all the time on purpose: the alerting pipeline's heartbeat.
const BY_DESIGN: &[&str] = &[
    "watchdog",
    "infoinhibitor",
    "deadmansswitch",
    "deadmanswitch",
    "deadmanssnitch",
    "heartbeat",
    "alwaysfiring",
];

/// A restart this recent still counts as the crash loop going on.
const RECENT_RESTART_MINUTES: f64 = 15.0;

/// What kind of thing an alert claims, which decides what can measure it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Containers restarting or crash-looping.
    Restarts,
    /// Pods not ready, replicas missing, a rollout not progressing, containers waiting.
    Availability,
    /// A Job that failed or did not complete.
    JobFailed,
    /// A node not Ready.
    NodeReady,
    /// Latency: only a latency metric measures it.
    Latency,
    /// Errors: only an error metric measures it.
    Errors,
    /// CPU, memory, disk, throttling, saturation.
    Saturation,
    /// A burst of warning events: measured from the events themselves (they happen and end).
    Events,
    /// Anything else: only the alert's own expression measures it.
    Other,
}

impl Claim {
    fn words(self) -> &'static str {
        match self {
            Claim::Restarts => "containers restarting",
            Claim::Availability => "pods not ready",
            Claim::JobFailed => "a failed Job",
            Claim::NodeReady => "a node not Ready",
            Claim::Latency => "latency",
            Claim::Errors => "an error rate",
            Claim::Saturation => "saturation",
            Claim::Events => "warning events",
            Claim::Other => "the alert's condition",
        }
    }
}

/// Whether the alert fires by design (a watchdog).
pub(crate) fn by_design(ctx: &Ctx) -> bool {
    let Some(alert) = ctx.obs.alert.as_ref() else {
        return false;
    };
    let name = alert
        .name()
        .to_lowercase()
        .replace(['_', '-', ' ', '\''], "");
    let expr_always = metrics::alert_expr(ctx).is_some_and(|e| e.replace(' ', "") == "vector(1)");
    BY_DESIGN.contains(&name.as_str()) || expr_always
}

/// The kind of claim, from the alert's name and summary (or the problem's words) and its expression.
pub(crate) fn claim(ctx: &Ctx) -> Claim {
    let mut text = String::new();
    if let Some(a) = &ctx.obs.alert {
        text.push_str(a.name());
        text.push(' ');
        for k in ["summary", "description", "message"] {
            if let Some(v) = a.annotations.get(k) {
                text.push_str(v);
                text.push(' ');
            }
        }
    }
    if let Some(p) = &ctx.obs.problem {
        text.push_str(p);
    }
    let name = ctx
        .obs
        .alert
        .as_ref()
        .map(|a| a.name().to_lowercase())
        .unwrap_or_default();
    let t = text.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
    let name_has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if let Some(p) = metrics::parsed_alert(ctx) {
        if p.measures_latency() {
            return Claim::Latency;
        }
        if p.counts_errors() && !name_has(&["job", "pod", "container"]) {
            return Claim::Errors;
        }
    }
    if name_has(&["job"]) && name_has(&["fail", "notcompleted", "not_completed", "error"]) {
        return Claim::JobFailed;
    }
    if name_has(&["node"]) && name_has(&["notready", "not_ready", "unreachable", "down"]) {
        return Claim::NodeReady;
    }
    if name_has(&["event"]) {
        return Claim::Events;
    }
    // `TargetDown`, `KubeletDown`, `PostgreSQLDown`: a scrape or probe expression says it; pods
    // being Ready do not.
    if name.ends_with("down") {
        return Claim::Other;
    }
    if name_has(&[
        "hpa",
        "maxedout",
        "overcommit",
        "quota",
        "throttl",
        "fillingup",
        "outofspace",
    ]) {
        return Claim::Saturation;
    }
    if name_has(&["liveness"]) {
        return Claim::Restarts;
    }
    if name_has(&["readiness", "probe", "unhealthy"]) {
        return Claim::Availability;
    }
    if name_has(&["crashloop", "restart", "oom"])
        || (name.is_empty() && has(&["crash", "restart", "oom"]))
    {
        return Claim::Restarts;
    }
    if name_has(&[
        "notready",
        "not_ready",
        "nothealthy",
        "replicasmismatch",
        "rollout",
        "rolledout",
        "generationmismatch",
        "unavailable",
        "pending",
        "containerwaiting",
        "imagepull",
        "misscheduled",
        "notscheduled",
        "podnot",
    ]) {
        return Claim::Availability;
    }
    if has(&[
        "latency",
        "slow",
        "duration",
        "response time",
        "p99",
        "p95",
        "hang",
        "timeout",
        "timing out",
    ]) {
        return Claim::Latency;
    }
    if has(&[
        "cpu",
        "throttl",
        "memory",
        "disk",
        "filling",
        "saturat",
        "quota",
        "space",
        "inode",
        "connections",
    ]) {
        return Claim::Saturation;
    }
    if has(&["error", "5xx", "failure rate", "failing requests", "500s"]) {
        return Claim::Errors;
    }
    if has(&["crash", "restart", "oom"]) {
        return Claim::Restarts;
    }
    if has(&[
        "not ready",
        "down",
        "unavailable",
        "pending",
        "imagepull",
        "waiting",
    ]) {
        return Claim::Availability;
    }
    Claim::Other
}

fn hhmm(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

pub(crate) fn from_secs(t: f64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t as i64, 0)
}

/// The onset of a breach still under way: the start of the last run of points over the threshold.
pub(crate) fn breach_onset(
    points: &[(f64, f64)],
    breached: impl Fn(f64) -> bool,
) -> Option<DateTime<Utc>> {
    points
        .iter()
        .rev()
        .take_while(|(_, v)| breached(*v))
        .last()
        .and_then(|(t, _)| from_secs(*t))
}

/// Measure the symptom.
pub(crate) fn measure(ctx: &Ctx) -> Symptom {
    let claim = claim(ctx);
    let claim_text = claim_text(ctx, claim);
    let mut s = Symptom {
        claim: claim_text,
        ..Symptom::default()
    };
    if by_design(ctx) {
        let expr = metrics::alert_expr(ctx).unwrap_or_default();
        s.state = SymptomState::ByDesign;
        s.detail = format!(
            "{} fires by design{}: it is the alerting pipeline's heartbeat, so firing is its normal state",
            ctx.obs
                .alert
                .as_ref()
                .map(|a| a.name())
                .unwrap_or("the alert"),
            if expr.is_empty() {
                String::new()
            } else {
                format!(" (expression {expr})")
            }
        );
        s.evidence = ctx.ev(&["alerts", "alert_rules"]);
        return s;
    }
    if let Some(a) = &ctx.obs.alert
        && a.status == AlertStatus::Resolved
    {
        s.state = SymptomState::Cleared;
        s.cleared_at = a.ends_at.filter(|t| t.timestamp() > 0);
        s.detail = match s.cleared_at {
            Some(t) => format!("the alert resolved at {}", hhmm(t)),
            None => "the alert resolved".to_string(),
        };
        s.onset = a.starts_at.filter(|t| t.timestamp() > 0);
        s.evidence = ctx.ev(&["alerts"]);
        return s;
    }
    if crate::reason::cloud::measure_symptom(ctx, &mut s)
        || crate::reason::checks::monitor::measure_symptom(ctx, &mut s)
        || measure_expression(ctx, &mut s)
    {
        return s;
    }
    // With no alert and no problem there is no claim but the subject's own health.
    let unprompted = ctx.obs.alert.is_none() && ctx.obs.problem.is_none();
    // An informational alert (severity info or none) with nothing else to measure claims only
    // that its workload is in a state worth a look: its health is what can be measured.
    let informational = claim == Claim::Other
        && metrics::alert_expr(ctx).is_none()
        && ctx.obs.alert.as_ref().is_some_and(|a| {
            a.labels
                .get("severity")
                .is_some_and(|s| matches!(s.to_ascii_lowercase().as_str(), "info" | "none"))
        });
    if let Some(detail) = unresolved_problem(ctx) {
        s.state = SymptomState::Unmeasurable;
        s.detail = detail;
        s.evidence = ctx.ev(&["kubernetes/pods", "kubernetes/deployments"]);
        return s;
    }
    let k8s = match claim {
        _ if unprompted || informational => {
            measure_restarts(ctx, &mut s) || measure_availability(ctx, &mut s)
        }
        Claim::Restarts => measure_restarts(ctx, &mut s),
        Claim::Availability => measure_availability(ctx, &mut s),
        Claim::JobFailed => measure_job(ctx, &mut s),
        Claim::NodeReady => measure_nodes(ctx, &mut s),
        Claim::Latency => measure_logged_latency(ctx, &mut s),
        Claim::Events => measure_events(ctx, &mut s),
        Claim::Errors | Claim::Other => {
            measure_logged_errors(ctx, &mut s)
                || (claim == Claim::Other
                    && ctx.obs.alert.is_none()
                    && measure_episode(ctx, &mut s))
        }
        _ => false,
    };
    if k8s {
        return s;
    }
    s.state = SymptomState::Unmeasurable;
    s.detail = missing(ctx, claim);
    s
}

/// A problem whose words name no object that was read (no workload, pod or node, and no
/// namespace whose pods were listed): the state of whatever else was listed says nothing about
/// it, so the claim is unmeasured rather than measured on the whole cluster.
fn unresolved_problem(ctx: &Ctx) -> Option<String> {
    let problem = ctx.obs.problem.as_deref()?;
    if ctx.obs.alert.is_some() || ctx.subject.resolved {
        return None;
    }
    let pods = ctx.pods();
    if pods
        .iter()
        .any(|p| !p.namespace.is_empty() && crate::reason::subject::mentions(problem, &p.namespace))
    {
        return None;
    }
    let mut namespaces: Vec<&str> = pods.iter().map(|p| p.namespace.as_str()).collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    Some(format!(
        "nothing the problem names was found in what was read ({} pods and {} deployments in {} namespace(s)), so its state could not be measured",
        pods.len(),
        ctx.obs.deployments.len(),
        namespaces.len()
    ))
}

/// A problem that names a workload but no measurable condition ("is it still broken?"): its
/// warning events say whether an episode goes on (recent) or ended; ended, it has cleared only
/// when every pod of it is Ready and every replica available as well.
fn measure_episode(ctx: &Ctx, s: &mut Symptom) -> bool {
    let mut events = s.clone();
    if !measure_events(ctx, &mut events) {
        return false;
    }
    if events.state == SymptomState::Cleared {
        let mut now = s.clone();
        if !measure_availability(ctx, &mut now) || now.state != SymptomState::Cleared {
            return false;
        }
        events.detail = format!("{}; {}", events.detail, now.detail);
        events.evidence.extend(now.evidence);
    }
    *s = events;
    true
}

/// How recent the last warning event must be for a burst to be going on.
const EVENTS_ONGOING_MINUTES: i64 = 15;

/// A burst of warning events, measured from the events on the subject's objects: going on when
/// the latest is recent, ended (cleared, when) when none came for a while.
fn measure_events(ctx: &Ctx, s: &mut Symptom) -> bool {
    let warnings: Vec<_> = ctx
        .events()
        .into_iter()
        .filter(|e| e.event_type == "Warning")
        .filter(|e| {
            let name = crate::reason::object_name(&e.object);
            ctx.subject.covers(&e.object)
                || match ctx.pod_named(name) {
                    Some(p) => ctx.pod_in_scope(p),
                    // A pod no longer listed (few): by its controller's naming.
                    None => {
                        e.object.starts_with("Pod/")
                            && crate::reason::subject::unlisted_pod_of_subject(
                                ctx.obs,
                                &ctx.subject,
                                name,
                            )
                    }
                }
        })
        .collect();
    let Some(latest) = warnings
        .iter()
        .filter_map(|e| e.last_seen.or(e.first_seen))
        .max()
    else {
        return false;
    };
    let first = warnings
        .iter()
        .filter_map(|e| e.first_seen.or(e.last_seen))
        .min();
    let count: u32 = warnings.iter().map(|e| e.count.max(1)).sum();
    let mut reasons: Vec<&str> = warnings.iter().map(|e| e.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    let example = warnings
        .iter()
        .max_by_key(|e| e.last_seen)
        .map(|e| crate::reason::logs::short(&e.message))
        .unwrap_or_default();
    let quiet = (ctx.obs.now - latest).num_minutes();
    s.onset = first;
    s.evidence = ctx.ev(&["kubernetes/events"]);
    if quiet <= EVENTS_ONGOING_MINUTES {
        s.state = SymptomState::Confirmed;
        s.detail = format!(
            "{count} warning event(s) ({}) on {} since {}, the latest at {} (\"{example}\")",
            reasons.join(", "),
            scope_name(ctx),
            first.map(hhmm).unwrap_or_default(),
            hhmm(latest)
        );
    } else {
        s.state = SymptomState::Cleared;
        s.cleared_at = Some(latest);
        s.detail = format!(
            "the warning events on {} ended: {count} ({}) from {} to {}, none in the {quiet} minutes since",
            scope_name(ctx),
            reasons.join(", "),
            first.map(hhmm).unwrap_or_default(),
            hhmm(latest)
        );
    }
    true
}

/// A threshold in seconds the claim states ("longer than 3 seconds", "p99 > 500ms").
fn claimed_secs(claim: &str) -> Option<f64> {
    static LIMIT: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(?:than|over|above|exceeds?|>=?)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b").ok()
    });
    let c = LIMIT.as_ref()?.captures(claim)?;
    let v: f64 = c.get(1)?.as_str().parse().ok()?;
    Some(crate::reason::checks::slow_calls::secs_of(
        v,
        c.get(2)?.as_str(),
    ))
}

/// Latency from the subject's own log lines when no metric reads it: the requests it times
/// (the slowest kind of timed operation that is not a call out), over the claim's threshold (or
/// a second when it states none). Confirmed only on lines over it; otherwise still unmeasured.
fn measure_logged_latency(ctx: &Ctx, s: &mut Symptom) -> bool {
    use crate::reason::checks::slow_calls::{range_text, slow_operations};
    let lines = crate::reason::logs::scoped_lines(ctx);
    let ops = slow_operations(&lines);
    let Some(op) = ops
        .iter()
        .find(|t| t.outbound.is_none())
        .or_else(|| ops.first())
    else {
        return false;
    };
    let limit = claimed_secs(&s.claim).unwrap_or(1.0);
    if op.max < limit {
        return false;
    }
    s.state = SymptomState::Confirmed;
    s.onset = op.first;
    s.detail = format!(
        "{}'s own logs time its requests at {} ({} lines, e.g. \"{}\"), over the {} the claim allows",
        scope_name(ctx),
        range_text(op),
        op.count,
        op.example,
        if limit >= 1.0 {
            format!("{limit} s")
        } else {
            format!("{} ms", limit * 1000.0)
        },
    );
    s.evidence = ctx.ev(&["kubernetes/pod_logs", "logs"]);
    true
}

/// Errors from the subject's own dated log lines when no metric counts them: failure lines
/// logged in the last quiet window confirm the claim; failures that stopped longer ago, while
/// the same pods went on logging and every one of them is Ready, have cleared. Otherwise the
/// lines say nothing about now.
fn measure_logged_errors(ctx: &Ctx, s: &mut Symptom) -> bool {
    use crate::reason::checks::recovery::QUIET_MINUTES;
    use crate::reason::logs;
    let lines = logs::scoped_lines(ctx);
    // Each line classified once; the same line read from the pod and from a log store counts
    // once.
    let failing: std::collections::HashSet<(Option<chrono::DateTime<chrono::Utc>>, &str)> = lines
        .iter()
        .filter(|l| !logs::classify(&l.line).is_empty())
        .map(|l| (l.at, l.line.as_str()))
        .collect();
    let Some(last_failure) = failing.iter().filter_map(|(at, _)| *at).max() else {
        return false;
    };
    let first_failure = failing.iter().filter_map(|(at, _)| *at).min();
    let count = failing.len();
    let ago = ctx.minutes_ago(last_failure);
    if ago < QUIET_MINUTES {
        s.state = SymptomState::Confirmed;
        s.onset = first_failure;
        s.detail = format!(
            "{}'s own logs show {count} failure line(s), the latest at {}",
            scope_name(ctx),
            hhmm(last_failure)
        );
        s.evidence = ctx.ev(&["kubernetes/pod_logs", "logs"]);
        return true;
    }
    let logged_since = lines
        .iter()
        .filter_map(|l| l.at)
        .any(|t| t > last_failure + chrono::Duration::minutes(1));
    let pods = live_subject_pods(ctx);
    if !logged_since || pods.is_empty() || !pods.iter().all(|p| p.ready()) {
        return false;
    }
    s.state = SymptomState::Cleared;
    s.onset = first_failure;
    s.cleared_at = Some(last_failure);
    s.detail = format!(
        "{}'s own logs show {count} failure line(s) that stopped at {} ({ago:.0} min ago); its pods logged on without them since and are all Ready",
        scope_name(ctx),
        hhmm(last_failure)
    );
    s.evidence = ctx.ev(&["kubernetes/pod_logs", "logs", "kubernetes/pods"]);
    true
}

fn claim_text(ctx: &Ctx, claim: Claim) -> String {
    if let Some(a) = &ctx.obs.alert {
        let summary = a
            .annotations
            .get("summary")
            .or_else(|| a.annotations.get("description"))
            .or_else(|| a.annotations.get("message"))
            .map(|s| crate::reason::logs::short(s))
            .unwrap_or_default();
        if summary.is_empty() {
            format!("{}: {}", a.name(), claim.words())
        } else {
            format!("{}: {summary}", a.name())
        }
    } else if let Some(p) = &ctx.obs.problem {
        format!("\"{}\" ({})", crate::reason::logs::short(p), claim.words())
    } else {
        claim.words().to_string()
    }
}

/// Why nothing could measure the claim.
fn missing(ctx: &Ctx, claim: Claim) -> String {
    let what = match claim {
        Claim::Latency => "no latency metric",
        Claim::Errors => "no error metric",
        Claim::Saturation => "no saturation metric",
        Claim::Events => "no warning event of the subject was read",
        Claim::Restarts | Claim::Availability | Claim::JobFailed => {
            "no pod of the subject was seen"
        }
        Claim::NodeReady => "the node was not seen",
        Claim::Other => "nothing measured the alert's condition",
    };
    let source = match claim {
        Claim::Restarts
        | Claim::Availability
        | Claim::JobFailed
        | Claim::NodeReady
        | Claim::Events => "kubernetes",
        _ => "prometheus",
    };
    let why = match ctx.obs.coverage.get(source) {
        None => String::new(),
        Some(c) if !c.configured => format!("{source} is not configured"),
        Some(c) if c.status() == "failed" => {
            format!("{source} failed: {}", c.error.as_deref().unwrap_or("error"))
        }
        Some(c) if c.status() == "empty" => format!("{source} answered with no data"),
        Some(_) if source == "prometheus" && metrics::alert_expr(ctx).is_some() => {
            "the alert's expression returned no data".to_string()
        }
        Some(_) if source == "prometheus" => {
            "the alert carries no expression to measure".to_string()
        }
        Some(_) => String::new(),
    };
    if why.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {why}")
    }
}

/// When the alert's own series began breaching its threshold, when Prometheus returned it: the
/// incident's start, earlier than the alert's by its `for:` delay.
pub(crate) fn series_onset(ctx: &Ctx) -> Option<DateTime<Utc>> {
    let p = metrics::parsed_alert(ctx)?;
    let th = p.threshold?;
    metrics::own_series(ctx, &p)
        .iter()
        .filter(|x| x.points.last().is_some_and(|(_, v)| th.breached(*v)))
        .filter(|x| !ended_with_pod(ctx, x))
        .filter_map(|x| breach_onset(&x.points, |v| th.breached(v)))
        .min()
}

/// A series of a pod that no longer exists, silent for longer than Prometheus looks back: it
/// ended with its pod, whatever its last value.
fn ended_with_pod(ctx: &Ctx, x: &crate::model::Series) -> bool {
    let now = ctx.obs.now.timestamp() as f64;
    x.points.last().is_some_and(|(t, _)| now - t > 300.0)
        && x.labels
            .get("pod")
            .is_some_and(|p| ctx.pod_named(p).is_none())
}

/// The alert's own expression against its threshold, when Prometheus returned its series;
/// false when it could not be measured that way.
fn measure_expression(ctx: &Ctx, s: &mut Symptom) -> bool {
    let Some(p) = metrics::parsed_alert(ctx) else {
        return false;
    };
    let own = metrics::own_series(ctx, &p);
    if own.is_empty() {
        return false;
    }
    let evidence = ctx.ev(&["metrics", "alert_rules"]);
    let (what, ratio) = metrics::describe(&p);
    let label = |_: &str| what.clone();
    let fmt = |v: f64| metrics::show(v, ratio);
    match p.threshold {
        Some(th) => {
            let ended = |x: &crate::model::Series| ended_with_pod(ctx, x);
            let breaching: Vec<_> = own
                .iter()
                .filter(|x| x.points.last().is_some_and(|(_, v)| th.breached(*v)))
                .filter(|x| !ended(x))
                .collect();
            let gone = own
                .iter()
                .find(|x| ended(x) && x.points.last().is_some_and(|(_, v)| th.breached(*v)));
            if let (None, Some(x)) = (breaching.first(), gone) {
                let (t, last) = x.points.last().copied().unwrap_or_default();
                s.state = SymptomState::Cleared;
                s.cleared_at = from_secs(t);
                s.detail = format!(
                    "{} read {} at {} and nothing since: pod {} no longer exists, so its series ended with it",
                    label(&x.name),
                    fmt(last),
                    hhmm(from_secs(t).unwrap_or_default()),
                    x.labels.get("pod").map(String::as_str).unwrap_or_default()
                );
            } else if let Some(x) = breaching.first() {
                let (_, last) = x.points.last().copied().unwrap_or_default();
                let onset = breach_onset(&x.points, |v| th.breached(v));
                s.state = SymptomState::Confirmed;
                s.onset = onset;
                s.detail = format!(
                    "{} is {} against the alert's threshold {} {}{}",
                    label(&x.name),
                    fmt(last),
                    th.op,
                    fmt(th.value),
                    onset
                        .map(|t| format!(", breaching since {}", hhmm(t)))
                        .unwrap_or_default()
                );
            } else {
                let last_breach = own
                    .iter()
                    .flat_map(|x| x.points.iter())
                    .filter(|(_, v)| th.breached(*v))
                    .map(|(t, _)| *t)
                    .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
                let x = own[0];
                let (_, last) = x.points.last().copied().unwrap_or_default();
                s.state = SymptomState::Cleared;
                s.cleared_at = last_breach.and_then(from_secs);
                s.detail = match s.cleared_at {
                    Some(t) => format!(
                        "{} is back to {} within the threshold {} {}; last breach at {}",
                        label(&x.name),
                        fmt(last),
                        th.op,
                        fmt(th.value),
                        hhmm(t)
                    ),
                    None => format!(
                        "{} is {} within the threshold {} {} over the whole window",
                        label(&x.name),
                        fmt(last),
                        th.op,
                        fmt(th.value)
                    ),
                };
            }
        }
        None => {
            // A comparison between vectors filters: a series present at the end of the range
            // is the condition holding, one that stopped earlier cleared then. With no
            // comparison at all, presence says nothing.
            let filters = [
                " != ", " == ", " > ", " < ", " >= ", " <= ", " unless ", " and ",
            ]
            .iter()
            .any(|op| p.base.contains(op));
            if !filters {
                return false;
            }
            let now = ctx.obs.now.timestamp() as f64;
            let last_t = own
                .iter()
                .filter_map(|x| x.points.last().map(|(t, _)| *t))
                .fold(f64::MIN, f64::max);
            if now - last_t > 300.0 {
                s.state = SymptomState::Cleared;
                s.cleared_at = from_secs(last_t);
                s.detail = format!(
                    "the alert's condition ({what}) last held at {}; it returns nothing since",
                    s.cleared_at.map(hhmm).unwrap_or_default()
                );
                s.evidence = evidence;
                return true;
            }
            let x = own[0];
            s.state = SymptomState::Confirmed;
            s.onset = x.points.first().and_then(|(t, _)| from_secs(*t));
            s.detail = format!(
                "the alert's expression returns {} series now ({} = {})",
                own.len(),
                label(&x.name),
                fmt(x.points.last().map(|(_, v)| *v).unwrap_or_default())
            );
        }
    }
    s.evidence = evidence;
    true
}

/// The subject's pods that are still meant to run (not being deleted).
fn live_subject_pods<'a>(ctx: &Ctx<'a>) -> Vec<&'a PodFacts> {
    ctx.pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p) && !p.deleting)
        .collect()
}

fn scope_name(ctx: &Ctx) -> String {
    if let Some(app) = &ctx.subject.application {
        return format!("application {app}");
    }
    ctx.subject
        .workloads
        .first()
        .map(|(k, n)| format!("{} {n}", k.to_lowercase()))
        .or_else(|| ctx.subject.named_pods.first().map(|p| format!("pod {p}")))
        .unwrap_or_else(|| "the subject".to_string())
}

/// Restarts and crash loops, from the pods' container statuses.
fn measure_restarts(ctx: &Ctx, s: &mut Symptom) -> bool {
    let pods = live_subject_pods(ctx);
    let all: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p))
        .collect();
    if all.is_empty() {
        return false;
    }
    s.evidence = ctx.ev(&["kubernetes/pods", "kubernetes/events"]);
    let recent =
        |t: Option<DateTime<Utc>>| t.is_some_and(|t| ctx.minutes_ago(t) < RECENT_RESTART_MINUTES);
    let mut looping = Vec::new();
    let mut last_restart: Option<DateTime<Utc>> = None;
    for p in &pods {
        for c in &p.containers {
            if c.last_finished_at.is_some() {
                last_restart = last_restart.max(c.last_finished_at);
            }
            let waiting_bad = c.state == "waiting"
                && c.reason
                    .as_deref()
                    .is_some_and(|r| r != "ContainerCreating" && r != "PodInitializing");
            let failed = c.state == "terminated" && c.exit_code.is_some_and(|e| e != 0);
            if waiting_bad || failed || (c.restart_count > 0 && recent(c.last_finished_at)) {
                looping.push(format!(
                    "{}/{} {} ({} restarts{})",
                    p.name,
                    c.name,
                    c.reason
                        .as_deref()
                        .unwrap_or(if c.ready { "running" } else { "not ready" }),
                    c.restart_count,
                    c.last_finished_at
                        .map(|t| format!(", last exit {}", hhmm(t)))
                        .unwrap_or_default()
                ));
            }
        }
    }
    if !looping.is_empty() {
        s.state = SymptomState::Confirmed;
        s.onset = last_restart;
        s.detail = format!("restarting now: {}", crate::reason::list_names(&looping, 3));
        return true;
    }
    // Restarts that recur: a container restarted several times over its pod's life whose last
    // restart is more recent than twice its usual interval is not over, its next one is due.
    let mut recurring = Vec::new();
    for p in &pods {
        for c in &p.containers {
            if let Some(r) = crate::reason::checks::pods::restarts_recur(ctx, p, c) {
                recurring.push(format!(
                    "{}/{} ({} restarts since {}, about every {}; the last at {})",
                    p.name,
                    c.name,
                    c.restart_count,
                    hhmm(r.since),
                    crate::model::human_duration(r.every_minutes * 60.0),
                    hhmm(r.last)
                ));
            }
        }
    }
    if !recurring.is_empty() {
        s.state = SymptomState::Confirmed;
        s.onset = last_restart;
        s.detail = format!(
            "restarts recur, the quiet since the last is shorter than their interval: {}",
            crate::reason::list_names(&recurring, 3)
        );
        return true;
    }
    if pods.is_empty() {
        s.state = SymptomState::Cleared;
        s.detail = format!(
            "the pods the alert is about are being deleted ({}), and no live pod of {} is restarting",
            crate::reason::list_names(&all.iter().map(|p| p.name.clone()).collect::<Vec<_>>(), 3),
            scope_name(ctx)
        );
        return true;
    }
    if pods.iter().all(|p| p.ready()) {
        s.state = SymptomState::Cleared;
        s.cleared_at = last_restart;
        s.detail = match last_restart {
            Some(t) => format!(
                "all {} pods of {} are Ready; the last restart was at {} ({:.0} min ago), none since",
                pods.len(),
                scope_name(ctx),
                hhmm(t),
                ctx.minutes_ago(t)
            ),
            None => format!(
                "all {} pods of {} are Ready and no container has a recorded restart",
                pods.len(),
                scope_name(ctx)
            ),
        };
        return true;
    }
    false
}

/// Readiness and replica counts, from the pods and their controllers.
fn measure_availability(ctx: &Ctx, s: &mut Symptom) -> bool {
    let pods = live_subject_pods(ctx);
    let mut short: Vec<String> = Vec::new();
    for d in ctx
        .obs
        .deployments
        .iter()
        .filter(|d| ctx.subject.covers(&format!("deployment/{}", d.name)))
    {
        if d.ready_replicas < d.replicas || d.updated_replicas < d.replicas {
            short.push(format!(
                "deployment {} has {} of {} replicas ready ({} updated)",
                d.name, d.ready_replicas, d.replicas, d.updated_replicas
            ));
        }
    }
    for w in ctx
        .obs
        .workloads
        .iter()
        .filter(|w| ctx.subject.covers(&format!("{}/{}", w.kind, w.name)))
    {
        if matches!(w.kind.as_str(), "StatefulSet" | "DaemonSet")
            && (w.ready < w.desired || w.unavailable > 0)
        {
            short.push(format!(
                "{} {} has {} of {} pods ready",
                w.kind.to_lowercase(),
                w.name,
                w.ready,
                w.desired
            ));
        }
    }
    let not_ready: Vec<String> = pods
        .iter()
        .filter(|p| !p.ready() && p.phase != "Succeeded")
        .map(|p| crate::reason::not_ready_label(p))
        .collect();
    if pods.is_empty() && short.is_empty() {
        return false;
    }
    s.evidence = ctx.ev(&[
        "kubernetes/pods",
        "kubernetes/deployments",
        "kubernetes/workloads",
    ]);
    if !not_ready.is_empty() || !short.is_empty() {
        s.state = SymptomState::Confirmed;
        let mut parts = short;
        if !not_ready.is_empty() {
            parts.push(format!(
                "not ready: {}",
                crate::reason::list_names(&not_ready, 3)
            ));
        }
        s.onset = pods
            .iter()
            .filter(|p| !p.ready())
            .filter_map(|p| p.created_at)
            .min();
        s.detail = parts.join("; ");
        return true;
    }
    // Ready pods say every replica is there only when the controller's own count was read; a
    // claim about named pods is about those pods alone.
    let unread: Vec<String> = ctx
        .subject
        .workloads
        .iter()
        .filter(|_| ctx.subject.named_pods.is_empty())
        .filter(|(kind, name)| match kind.as_str() {
            "Deployment" => !ctx.obs.deployments.iter().any(|d| &d.name == name),
            "StatefulSet" | "DaemonSet" => !ctx
                .obs
                .workloads
                .iter()
                .any(|w| &w.kind == kind && &w.name == name),
            "ReplicaSet" => !ctx.obs.replica_sets.iter().any(|r| &r.name == name),
            _ => false,
        })
        .map(|(kind, name)| format!("{} {name}", kind.to_lowercase()))
        .collect();
    if !unread.is_empty() {
        s.state = SymptomState::Unmeasurable;
        s.detail = format!(
            "all {} listed pods of {} are Running and Ready, but {} could not be read, so how many replicas it wants is unknown",
            pods.len(),
            scope_name(ctx),
            crate::reason::list_names(&unread, 3)
        );
        return true;
    }
    // Ready is what the kubelet's probe sees; the subject's own lines failing minutes ago say
    // what its callers see, and a page about serving is about that.
    let mut logged = s.clone();
    if measure_logged_errors(ctx, &mut logged) && logged.state == SymptomState::Confirmed {
        logged.detail = format!(
            "all {} pods of {} are Running and Ready, but {}",
            pods.len(),
            scope_name(ctx),
            logged.detail
        );
        *s = logged;
        return true;
    }
    s.state = SymptomState::Cleared;
    s.detail = format!(
        "all {} pods of {} are Running and Ready and every replica is available",
        pods.len(),
        scope_name(ctx)
    );
    true
}

/// A Job's outcome, from its status, else its pods.
fn measure_job(ctx: &Ctx, s: &mut Symptom) -> bool {
    let jobs: Vec<_> = ctx
        .obs
        .workloads
        .iter()
        .filter(|w| w.kind == "Job" && ctx.subject.covers(&format!("job/{}", w.name)))
        .collect();
    let pods: Vec<&PodFacts> = ctx
        .pods()
        .into_iter()
        .filter(|p| ctx.pod_in_scope(p))
        .collect();
    s.evidence = ctx.ev(&["kubernetes/workloads", "kubernetes/pods"]);
    if let Some(j) = jobs
        .iter()
        .find(|j| j.conditions.get("Failed").is_some_and(|c| c.0 == "True"))
    {
        let (_, reason, message) = j.conditions.get("Failed").cloned().unwrap_or_default();
        s.state = SymptomState::Confirmed;
        s.onset = j.start_time;
        s.detail = format!(
            "job {} failed ({reason}{}): {} failed pod(s), {} succeeded",
            j.name,
            if message.is_empty() {
                String::new()
            } else {
                format!(": \"{}\"", crate::reason::logs::short(&message))
            },
            j.failed,
            j.succeeded
        );
        return true;
    }
    let failed: Vec<&str> = pods
        .iter()
        .filter(|p| {
            p.phase == "Failed"
                || p.containers.iter().any(|c| {
                    c.exit_code.is_some_and(|e| e != 0)
                        || c.reason.as_deref() == Some("CrashLoopBackOff")
                })
        })
        .map(|p| p.name.as_str())
        .collect();
    if !failed.is_empty() {
        s.state = SymptomState::Confirmed;
        s.detail = format!("job pods failed: {}", crate::reason::list_names(&failed, 3));
        return true;
    }
    if jobs
        .iter()
        .any(|j| j.succeeded > 0 && j.conditions.get("Complete").is_some_and(|c| c.0 == "True"))
    {
        s.state = SymptomState::Cleared;
        s.cleared_at = jobs.iter().filter_map(|j| j.completion_time).max();
        s.detail = "the job completed successfully".to_string();
        return true;
    }
    false
}

/// Node readiness.
fn measure_nodes(ctx: &Ctx, s: &mut Symptom) -> bool {
    let nodes: Vec<_> = ctx
        .obs
        .nodes
        .iter()
        .filter(|n| ctx.subject.nodes.is_empty() || ctx.subject.nodes.contains(&n.name))
        .collect();
    if nodes.is_empty() {
        return false;
    }
    s.evidence = ctx.ev(&["kubernetes/nodes"]);
    let bad: Vec<String> = nodes
        .iter()
        .filter(|n| !n.ready())
        .map(|n| {
            format!(
                "{} (Ready={})",
                n.name,
                n.conditions
                    .get("Ready")
                    .map(String::as_str)
                    .unwrap_or("unknown")
            )
        })
        .collect();
    if bad.is_empty() {
        s.state = SymptomState::Cleared;
        s.detail = format!(
            "node {} reports Ready",
            crate::reason::list_names(&nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>(), 3)
        );
    } else {
        s.state = SymptomState::Confirmed;
        s.detail = format!("not Ready: {}", crate::reason::list_names(&bad, 3));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, Category, ContainerFacts};
    use crate::reason::{Coverage, Observations, analyze};
    use std::collections::BTreeMap;

    fn alert(name: &str, expr: &str, extra: &[(&str, &str)]) -> Alert {
        let mut labels: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        labels.insert("alertname".into(), name.into());
        Alert {
            labels,
            generator_url: format!("http://prom/graph?g0.expr={}", expr.replace(' ', "+")),
            ..Alert::default()
        }
    }

    fn ready_pod(name: &str) -> PodFacts {
        PodFacts {
            name: name.into(),
            namespace: "shop".into(),
            phase: "Running".into(),
            owner: Some("ReplicaSet/web-7c9d8".into()),
            labels: BTreeMap::from([("pod-template-hash".into(), "7c9d8".into())]),
            conditions: BTreeMap::from([("Ready".into(), "True".into())]),
            containers: vec![ContainerFacts {
                name: "web".into(),
                ready: true,
                state: "running".into(),
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        }
    }

    fn k8s_only() -> BTreeMap<String, Coverage> {
        BTreeMap::from([
            (
                "kubernetes".into(),
                Coverage {
                    configured: true,
                    answered: 3,
                    ..Coverage::default()
                },
            ),
            ("prometheus".into(), Coverage::default()),
        ])
    }

    #[test]
    fn a_burst_of_warning_events_is_measured_from_the_events() {
        let now = chrono::Utc::now();
        let event = |minutes_ago: i64| crate::model::K8sEventFacts {
            event_type: "Warning".into(),
            reason: "BackOff".into(),
            message: "Back-off restarting failed container web".into(),
            object: "Pod/web-7c9d8-aaaaa".into(),
            namespace: "shop".into(),
            count: 4,
            first_seen: Some(now - chrono::Duration::minutes(minutes_ago + 5)),
            last_seen: Some(now - chrono::Duration::minutes(minutes_ago)),
        };
        let obs = |minutes_ago: i64| Observations {
            now,
            alert: Some(alert(
                "KubernetesWarningEvent",
                "",
                &[("namespace", "shop"), ("pod", "web-7c9d8-aaaaa")],
            )),
            pods: vec![ready_pod("web-7c9d8-aaaaa")],
            events: vec![event(minutes_ago)],
            coverage: k8s_only(),
            ..Observations::default()
        };
        // Stopped 40 minutes ago, every pod Ready since: ended, so healthy.
        let ended = analyze(&obs(40));
        assert_eq!(
            ended.symptom.state,
            SymptomState::Cleared,
            "{:?}",
            ended.symptom
        );
        assert!(
            ended.symptom.detail.contains("ended"),
            "{}",
            ended.symptom.detail
        );
        assert!(ended.symptom.cleared_at.is_some());
        assert_eq!(ended.category, Category::Healthy, "{}", ended.root_cause);
        // Still coming: confirmed, never healthy.
        let going = analyze(&obs(2));
        assert_eq!(
            going.symptom.state,
            SymptomState::Confirmed,
            "{:?}",
            going.symptom
        );
        assert_ne!(going.category, Category::Healthy, "{}", going.root_cause);
    }

    #[test]
    fn ready_pods_say_nothing_about_latency() {
        let obs = Observations {
            alert: Some(alert(
                "HighRequestLatency",
                "histogram_quantile(0.99, sum(rate(http_request_duration_seconds_bucket{service=\"web\"}[5m])) by (le)) > 0.5",
                &[("namespace", "shop"), ("deployment", "web")],
            )),
            pods: vec![ready_pod("web-7c9d8-aaaaa"), ready_pod("web-7c9d8-bbbbb")],
            coverage: k8s_only(),
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(
            a.symptom.state,
            SymptomState::Unmeasurable,
            "{:?}",
            a.symptom
        );
        assert!(
            a.symptom
                .detail
                .contains("no latency metric: prometheus is not configured"),
            "{}",
            a.symptom.detail
        );
        assert_eq!(a.category, Category::Unknown, "{}", a.root_cause);
        assert!(
            a.suggested_actions
                .iter()
                .all(|x| !x.kind.contains("silence"))
        );
    }

    #[test]
    fn errors_with_no_metric_are_measured_from_the_subjects_dated_lines() {
        let now = chrono::Utc::now();
        let line = |mins: i64, text: &str| crate::model::LogLine {
            at: Some(now - chrono::Duration::minutes(mins)),
            labels: BTreeMap::from([("pod".to_string(), "web-7c9d8-aaaaa".to_string())]),
            line: text.into(),
        };
        let refused = "ERROR dial tcp users:8086: connect: connection refused";
        let world = |lines: Vec<crate::model::LogLine>| Observations {
            now,
            problem: Some("web-7c9d8-aaaaa logins fail".into()),
            pods: vec![ready_pod("web-7c9d8-aaaaa")],
            pod_logs: lines,
            coverage: k8s_only(),
            ..Observations::default()
        };
        let measured = |lines| measure(&Ctx::new(&world(lines)));
        // Failures in the last minutes: present.
        let s = measured(vec![line(30, "INFO ok"), line(2, refused)]);
        assert_eq!(s.state, SymptomState::Confirmed, "{s:?}");
        // Failures that stopped long ago while the pod went on logging: cleared.
        let s = measured(vec![
            line(40, refused),
            line(35, refused),
            line(5, "INFO ok"),
        ]);
        assert_eq!(s.state, SymptomState::Cleared, "{s:?}");
        // Failures long ago and nothing logged since: the lines say nothing about now.
        let s = measured(vec![line(40, refused), line(35, refused)]);
        assert_eq!(s.state, SymptomState::Unmeasurable, "{s:?}");
    }

    #[test]
    fn a_watchdog_fires_by_design() {
        let obs = Observations {
            alert: Some(alert("Watchdog", "vector(1)", &[("severity", "none")])),
            coverage: k8s_only(),
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(a.symptom.state, SymptomState::ByDesign);
        assert_eq!(a.category, Category::Healthy);
        assert!(a.root_cause.contains("fires by design"), "{}", a.root_cause);
    }

    #[test]
    fn restarts_long_ago_with_every_pod_ready_are_cleared_and_recent_ones_are_not() {
        let now = chrono::Utc::now();
        let mut pod = ready_pod("web-7c9d8-aaaaa");
        pod.containers[0].restart_count = 1;
        pod.containers[0].last_finished_at = Some(now - chrono::Duration::minutes(40));
        let mut obs = Observations {
            now,
            alert: Some(alert(
                "KubePodCrashLooping",
                "",
                &[("namespace", "shop"), ("pod", "web-7c9d8-aaaaa")],
            )),
            pods: vec![pod],
            coverage: k8s_only(),
            ..Observations::default()
        };
        let a = analyze(&obs);
        assert_eq!(a.symptom.state, SymptomState::Cleared, "{:?}", a.symptom);
        assert_eq!(a.category, Category::Healthy, "{}", a.root_cause);
        obs.pods[0].containers[0].last_finished_at = Some(now - chrono::Duration::minutes(3));
        let a = analyze(&obs);
        assert_eq!(a.symptom.state, SymptomState::Confirmed, "{:?}", a.symptom);
        assert_ne!(a.category, Category::Healthy, "{}", a.root_cause);
    }
}
