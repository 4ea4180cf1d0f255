//! The RDS symptom: the metric an alert claims about, measured on the subject's own CloudWatch
//! series against its alarm, its limit or its level before.

use super::Rds;
use super::connections::refusal;
use super::health::measure_health;
use super::stats::{floor, formatter, hhmm, pct};
use super::storage::storage_failing;
use super::{CPU_SATURATED, DEPARTED, NEAR_LIMIT};
use crate::model::{Symptom, SymptomState};
use crate::reason::Ctx;
use chrono::{DateTime, Utc};

/// Which way a metric is bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bad {
    High,
    Low,
}

/// The metric an alert's condition is about, and which way is bad.
pub(super) fn claimed_metric(ctx: &Ctx) -> Option<(&'static str, Bad)> {
    let a = ctx.obs.alert.as_ref();
    let mut text = String::new();
    if let Some(a) = a {
        text.push_str(a.name());
        text.push(' ');
        for k in [
            "metric_name",
            "MetricName",
            "summary",
            "description",
            "message",
        ] {
            if let Some(v) = a.labels.get(k).or_else(|| a.annotations.get(k)) {
                text.push_str(v);
                text.push(' ');
            }
        }
    }
    if let Some(p) = &ctx.obs.problem {
        text.push_str(p);
    }
    let spaced = crate::reason::conventions::camel_words(&text).to_lowercase();
    let t = text.to_lowercase();
    let has = |w: &[&str]| w.iter().any(|x| t.contains(x) || spaced.contains(x));
    let falls = has(&[" drop", "dropped", " zero", " lost", " fell", "fall "]);
    // CloudWatch's own metric names, matched case-blind wherever the alert says them.
    let exact: [(&'static str, Bad); 13] = [
        ("ReplicaLag", Bad::High),
        ("FreeStorageSpace", Bad::Low),
        ("DatabaseConnections", Bad::High),
        ("CPUUtilization", Bad::High),
        ("FreeableMemory", Bad::Low),
        ("SwapUsage", Bad::High),
        ("ReadLatency", Bad::High),
        ("WriteLatency", Bad::High),
        ("DiskQueueDepth", Bad::High),
        ("MaximumUsedTransactionIDs", Bad::High),
        ("TransactionLogsGeneration", Bad::High),
        ("ReadIOPS", Bad::High),
        ("WriteIOPS", Bad::High),
    ];
    let flip = |b: Bad| if falls { Bad::Low } else { b };
    for (name, bad) in exact {
        if t.contains(&name.to_lowercase()) {
            return Some((name, flip(bad)));
        }
    }
    let words: [(&[&str], &'static str, Bad); 8] = [
        (
            &["replica lag", "replication lag", "replica_lag"],
            "ReplicaLag",
            Bad::High,
        ),
        (
            &["storage", "disk space", "out of space", "free space"],
            "FreeStorageSpace",
            Bad::Low,
        ),
        (&["connection"], "DatabaseConnections", Bad::High),
        (&["cpu"], "CPUUtilization", Bad::High),
        (&["swap"], "SwapUsage", Bad::High),
        (&["memory"], "FreeableMemory", Bad::Low),
        (&["write latency"], "WriteLatency", Bad::High),
        (&["latency", "slow quer"], "ReadLatency", Bad::High),
    ];
    for (w, metric, bad) in words {
        if has(w) {
            return Some((metric, flip(bad)));
        }
    }
    if has(&["transaction id", "wraparound", "xid"]) {
        return Some(("MaximumUsedTransactionIDs", Bad::High));
    }
    None
}

/// A hard limit of a metric on this instance, with where it comes from.
pub(super) fn limit(rds: &Rds, metric: &str) -> Option<(f64, String)> {
    match metric {
        "CPUUtilization" => Some((100.0, "100% of the instance's vCPUs".into())),
        "DatabaseConnections" => rds.max_connections(),
        "WriteIOPS" | "ReadIOPS" => rds
            .instance
            .and_then(|i| i.iops)
            .map(|n| (n, "the volume's provisioned IOPS".into())),
        _ => None,
    }
}

/// The symptom, measured on the subject's CloudWatch metric. False when this is not an RDS
/// subject or nothing was read to measure it with.
pub(crate) fn measure_symptom(ctx: &Ctx, s: &mut Symptom) -> bool {
    let Some(rds) = Rds::new(ctx) else {
        return false;
    };
    if !rds.has_metrics {
        if ctx.obs.coverage.get("aws").is_some_and(|c| c.configured) || !rds.ev_instances.is_empty()
        {
            s.state = SymptomState::Unmeasurable;
            s.detail = format!(
                "no CloudWatch data for {}: {}",
                rds.id,
                match ctx.obs.coverage.get("aws") {
                    Some(c) if c.status() == "failed" =>
                        format!("aws failed: {}", c.error.as_deref().unwrap_or("error")),
                    Some(c) if !c.configured => "aws is not configured".to_string(),
                    _ => "CloudWatch answered with no data".to_string(),
                }
            );
            return true;
        }
        return false;
    }
    s.evidence = rds.metric_evidence();
    let Some((metric, bad)) = claimed_metric(ctx) else {
        // No metric claimed (a scheduled check, an informational alert): the instance's health
        // is what can be measured.
        return measure_health(&rds, s);
    };
    let replica_metric = metric == "ReplicaLag";
    let got = if replica_metric {
        rds.worst_replica(metric)
            .or_else(|| rds.own(metric).map(|st| (rds.id.clone(), st)))
    } else {
        rds.own(metric).map(|st| (rds.id.clone(), st))
    };
    let Some((on, st)) = got else {
        s.state = SymptomState::Unmeasurable;
        s.detail = format!("no {metric} data for {} in CloudWatch", rds.id);
        return true;
    };
    let f = formatter(metric);
    let high = bad == Bad::High;
    let lim = limit(&rds, metric);
    let near = if metric == "CPUUtilization" {
        st.end >= CPU_SATURATED
    } else if metric == "FreeStorageSpace" {
        storage_failing(&rds, &st)
    } else {
        high && lim.as_ref().is_some_and(|(l, _)| st.end >= NEAR_LIMIT * l)
    };
    // CPU has a hard ceiling: only near it is it the problem, whatever its level before.
    let cpu = metric == "CPUUtilization";
    let departed_now = if cpu {
        st.end >= CPU_SATURATED
    } else if high {
        st.end >= st.base * DEPARTED && st.end - st.base > floor(metric)
    } else {
        st.end <= st.base / DEPARTED && st.base - st.end > floor(metric)
    };
    let departed_ever = if cpu {
        st.count_past(CPU_SATURATED, true) >= 2
    } else if high {
        st.max >= st.base * DEPARTED && st.max - st.base > floor(metric)
    } else {
        st.min <= st.base / DEPARTED && st.base - st.min > floor(metric)
    };
    let refused = refusal(ctx, &rds);
    let what = format!("{metric} on {on}");
    // A CloudWatch alarm carries its own threshold and comparison: they decide.
    let alarm = alarm_threshold(ctx).map(|(t, above)| {
        let above = above.unwrap_or(high);
        let last = st.points.last().map(|p| p.1).unwrap_or(st.end);
        (t, above, if above { last > t } else { last < t })
    });
    if let Some((t, above, breached)) = alarm {
        if breached {
            s.state = SymptomState::Confirmed;
            s.onset = st.crossed(t, above);
            s.detail = format!(
                "{what} {} against the alarm's threshold {}",
                st.range(f),
                f(t)
            );
            return true;
        }
        // Near its hard limit (a disk near empty) is never cleared, whatever the alarm says.
        if !departed_now && !near {
            s.state = SymptomState::Cleared;
            s.detail = format!(
                "{what} is back on the right side of the alarm's threshold {}: {}",
                f(t),
                st.range(f)
            );
            s.cleared_at = st.points.last().map(|p| p.0);
            return true;
        }
    }
    if departed_now || near || (refused.is_some() && metric == "DatabaseConnections") {
        s.state = SymptomState::Confirmed;
        let onset_level = if high {
            st.base + (st.end - st.base) / 2.0
        } else {
            st.base - (st.base - st.end) / 2.0
        };
        s.onset = st.crossed(onset_level, high);
        let limit_words = lim
            .as_ref()
            .map(|(l, why)| format!("; {} of {} ({why})", pct(st.max / l * 100.0), f(*l)))
            .unwrap_or_default();
        let refused_words = refused
            .map(|r| format!("; clients are refused: \"{r}\""))
            .unwrap_or_default();
        s.detail = format!("{what} {}{limit_words}{refused_words}", st.range(f));
        return true;
    }
    if departed_ever {
        // It went bad and came back within the window.
        s.state = SymptomState::Cleared;
        let worst_at = if high { st.max_at } else { st.min_at };
        let back = st
            .points
            .iter()
            .filter(|p| p.0 > worst_at)
            .find(|p| {
                if high {
                    p.1 <= st.base * 1.2 + floor(metric)
                } else {
                    p.1 >= st.base / 1.2 - floor(metric)
                }
            })
            .map(|p| p.0);
        s.onset = st.crossed(
            if high {
                st.base * DEPARTED
            } else {
                st.base / DEPARTED
            },
            high,
        );
        s.cleared_at = back;
        s.detail = format!(
            "{what} went from {} to {} at {} and was back at {}{}",
            f(st.base),
            f(if high { st.max } else { st.min }),
            hhmm(worst_at),
            f(st.end),
            back.map(|t| format!(" by {}", hhmm(t))).unwrap_or_default()
        );
        return true;
    }
    if let Some((l, why)) = lim {
        s.state = SymptomState::WithinLimits;
        s.detail = format!(
            "{what} ranged {}–{}, at most {} of its limit {} ({why}), with no departure from its level at {}; nothing at the limit",
            f(st.min),
            f(st.max),
            pct(st.max / l * 100.0),
            f(l),
            hhmm(st.start)
        );
        return true;
    }
    s.state = SymptomState::Unmeasurable;
    s.detail = format!(
        "{what} ranged {}–{} with no departure from its level at {}, and its limit is not known, so whether it is too {} cannot be told",
        f(st.min),
        f(st.max),
        hhmm(st.start),
        if high { "high" } else { "low" }
    );
    true
}

/// The threshold an alarm states (`threshold` and `comparison` labels), and whether above it is bad.
pub(super) fn alarm_threshold(ctx: &Ctx) -> Option<(f64, Option<bool>)> {
    let a = ctx.obs.alert.as_ref()?;
    let t: f64 = a.labels.get("threshold")?.trim().parse().ok()?;
    // The alarm's own comparison; without one, the metric's bad direction decides.
    let above = a.labels.get("comparison").map(|c| {
        let c = c.to_ascii_lowercase();
        !(c.contains("lessthan") || c.starts_with('<') || c == "lt" || c == "le")
    });
    Some((t, above))
}

/// When the symptom began (and ended), measured on the claimed metric, else the alert's start.
pub(super) fn symptom_window(
    ctx: &Ctx,
    symptom: Option<&Symptom>,
) -> Option<(DateTime<Utc>, Option<DateTime<Utc>>)> {
    if let Some(window) = symptom.and_then(|s| s.onset.map(|o| (o, s.cleared_at))) {
        return Some(window);
    }
    ctx.obs
        .alert
        .as_ref()
        .and_then(|a| a.starts_at)
        .filter(|t| t.timestamp() > 0)
        .map(|t| (t, None))
}
