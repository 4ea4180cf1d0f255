//! RDS health: each measured metric against its bounds, what the measurements rule out, and the
//! verdict when nothing fails.

use super::Rds;
use super::cpu::cpu_sustained;
use super::stats::{count, gb, hhmm, hms, num, pct, secs};
use super::storage::{storage_event, storage_failing};
use super::{CPU_SATURATED, LAG_SECS, NEAR_LIMIT, WRAPAROUND_XIDS};
use crate::model::{Category, RdsEvent, RuledOut, Symptom, SymptomState};
use crate::reason::Signal;
use crate::reason::checks::Basis;
use chrono::{DateTime, Utc};

/// What healthy looks like for each metric: (metric, bad direction, limit the value must stay
/// under or over, words).
pub(super) fn measure_health(rds: &Rds, s: &mut Symptom) -> bool {
    let checks = health_checks(rds);
    let failing: Vec<&HealthCheck> = checks.iter().filter(|c| !c.ok).collect();
    if checks.is_empty() {
        s.state = SymptomState::Unmeasurable;
        s.detail = format!("no CloudWatch metric of {} could be measured", rds.id);
        return true;
    }
    if failing.is_empty() {
        s.state = SymptomState::WithinLimits;
        s.detail = format!(
            "every measured metric of {} stayed within normal bounds: {}",
            rds.id,
            checks
                .iter()
                .map(|c| c.words.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    } else {
        s.state = SymptomState::Confirmed;
        s.detail = format!(
            "{} is out of bounds: {}",
            rds.id,
            failing
                .iter()
                .map(|c| c.words.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    true
}

pub(super) struct HealthCheck {
    ok: bool,
    words: String,
}

/// The instance's metrics against their limits or their own level at the start of the window.
pub(super) fn health_checks(rds: &Rds) -> Vec<HealthCheck> {
    let mut out = Vec::new();
    if let Some(c) = rds.own("CPUUtilization") {
        out.push(HealthCheck {
            ok: !cpu_sustained(&c),
            words: format!("CPU {}–{}", pct(c.min), pct(c.max)),
        });
    }
    if let Some(c) = rds.own("DatabaseConnections") {
        let lim = rds.max_connections();
        let ok = lim.as_ref().is_none_or(|(l, _)| c.max < NEAR_LIMIT * l);
        out.push(HealthCheck {
            ok,
            words: match lim {
                Some((l, why)) => format!(
                    "connections at most {} of max_connections {} ({why})",
                    count(c.max),
                    count(l)
                ),
                None => format!("connections {}–{}", count(c.min), count(c.max)),
            },
        });
    }
    if let Some(c) = rds.own("FreeStorageSpace") {
        // An event saying it ran out of storage is not ruled out by the series.
        let ok = !storage_failing(rds, &c) && storage_event(rds).is_none();
        out.push(HealthCheck {
            ok,
            words: format!("free storage {}–{}", gb(c.min), gb(c.max)),
        });
    }
    if let Some((r, c)) = rds.worst_replica("ReplicaLag") {
        out.push(HealthCheck {
            ok: c.max < LAG_SECS,
            words: format!("replica lag on {r} at most {}", secs(c.max)),
        });
    }
    if let Some(c) = rds.own("MaximumUsedTransactionIDs") {
        out.push(HealthCheck {
            ok: c.max < WRAPAROUND_XIDS,
            words: format!("transaction IDs used {}", count(c.max)),
        });
    }
    out
}

/// What the measurements rule out, each with its values: CPU, connections, storage, lag,
/// and RDS events that are routine or do not line up.
pub(super) fn ruled_out(
    rds: &Rds,
    onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
    found: &[Signal],
) -> Vec<RuledOut> {
    let mut out = Vec::new();
    let ev = rds.metric_evidence();
    // A failing check that measures `metric` (`falls`: a fall is its failure).
    let has = |metric: &str, falls: bool| {
        found
            .iter()
            .any(|s| s.decl().reads(metric, falls) && s.cause.is_some() && !s.benign)
    };
    if !has("CPUUtilization", false)
        && let Some(c) = rds.own("CPUUtilization")
    {
        let spike = c.count_past(CPU_SATURATED, true);
        let reason = if spike > 0 {
            let apart = onset
                .map(|(o, _)| {
                    format!(
                        ", {} min from the symptom at {}",
                        (c.max_at - o).num_minutes().abs(),
                        hhmm(o)
                    )
                })
                .unwrap_or_default();
            format!(
                "CPUUtilization reached {} at {} for only {spike} point(s){apart}: a blip, not sustained saturation",
                pct(c.max),
                hhmm(c.max_at)
            )
        } else {
            format!(
                "CPUUtilization stayed at {}–{}, below {CPU_SATURATED}%: no CPU saturation",
                pct(c.min),
                pct(c.max)
            )
        };
        out.push(RuledOut {
            statement: "CPU saturation".into(),
            reason,
            evidence: ev.clone(),
        });
    }
    if !has("DatabaseConnections", false)
        && let Some(c) = rds.own("DatabaseConnections")
    {
        let lim = rds
            .max_connections()
            .map(|(l, why)| {
                format!(
                    ", {} of max_connections {} ({why})",
                    pct(c.max / l * 100.0),
                    count(l)
                )
            })
            .unwrap_or_default();
        out.push(RuledOut {
            statement: "connection exhaustion".into(),
            reason: format!(
                "DatabaseConnections stayed at {}–{}{lim}: no connection limit reached",
                count(c.min),
                count(c.max)
            ),
            evidence: ev.clone(),
        });
    }
    if !has("FreeStorageSpace", true)
        && let Some(s) = rds.own("FreeStorageSpace")
    {
        out.push(RuledOut {
            statement: "storage full".into(),
            reason: format!("FreeStorageSpace stayed at {}–{}", gb(s.min), gb(s.max)),
            evidence: ev.clone(),
        });
    }
    if !has("ReplicaLag", false)
        && let Some((r, l)) = rds.worst_replica("ReplicaLag")
        && l.max < LAG_SECS
    {
        out.push(RuledOut {
            statement: "replication lag".into(),
            reason: format!("ReplicaLag on {r} at most {}", secs(l.max)),
            evidence: ev.clone(),
        });
    }
    if !has("DatabaseConnections", true) {
        for e in &rds.events {
            let m = e.message.to_lowercase();
            let routine = e.categories.iter().any(|c| {
                matches!(
                    c.as_str(),
                    "backup" | "maintenance" | "configuration change" | "notification"
                )
            }) || m.contains("backup")
                || m.contains("parameter group");
            let far = onset.is_some_and(|(o, _)| (e.at - o).num_minutes().abs() > 30);
            if routine && (far || !m.contains("fail")) {
                out.push(RuledOut {
                    statement: format!("RDS event \"{}\"", e.message.trim()),
                    reason: format!(
                        "routine {} at {}{}, not a failure",
                        e.categories.first().map(String::as_str).unwrap_or("event"),
                        hms(e.at),
                        onset
                            .map(|(o, _)| format!(
                                ", {} min from the symptom",
                                (e.at - o).num_minutes().abs()
                            ))
                            .unwrap_or_default()
                    ),
                    evidence: rds.ev_events.clone(),
                });
            }
        }
    }
    out
}

/// Nothing failing: the verdict of health, with what was measured and what was not an error.
pub(super) fn all_within_bounds(rds: &Rds, ruled: &mut Vec<RuledOut>) -> Signal {
    let checks = health_checks(rds);
    let errors: Vec<&&RdsEvent> = rds
        .events
        .iter()
        .filter(|e| {
            let m = e.message.to_lowercase();
            e.categories
                .iter()
                .any(|c| c == "failure" || c == "failover")
                || m.contains("error")
                || m.contains("fail")
        })
        .collect();
    let events = if rds.ev_events.is_empty() {
        "RDS events were not read".to_string()
    } else if errors.is_empty() {
        let routine: Vec<String> = rds
            .events
            .iter()
            .map(|e| {
                e.categories
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "event".into())
            })
            .collect();
        if routine.is_empty() {
            "no error or failure events in the RDS events".to_string()
        } else {
            format!(
                "no error or failure events in the RDS events (only routine: {})",
                routine.join(", ")
            )
        }
    } else {
        format!("{} failure event(s) in the RDS events", errors.len())
    };
    let pi = rds
        .top_wait()
        .map(|(w, l)| {
            format!(
                "; Performance Insights shows no dominant bottleneck (top wait {w} at {})",
                num(l)
            )
        })
        .unwrap_or_default();
    let mut s = Signal {
        analyzer: "metric_within_bounds",
        reads_symptom: true,
        summary: format!("{}: every measured metric within normal bounds", rds.id),
        detail: checks
            .iter()
            .map(|c| c.words.clone())
            .collect::<Vec<_>>()
            .join("; "),
        category: Category::Healthy,
        basis: Basis::Stated,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(format!(
            "No failure on {}: every measured metric stayed within normal bounds ({}); {events}{pi}{gaps}",
            rds.id,
            checks
                .iter()
                .map(|c| c.words.clone())
                .collect::<Vec<_>>()
                .join("; "),
            gaps = if rds.missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; not measured (no data): {}",
                    crate::reason::list_names(&rds.missing, 8)
                )
            },
        )),
        benign: true,
        objects: vec![rds.object()],
        ..Signal::default()
    };
    if !errors.is_empty() {
        s.benign = false;
        s.cause = None;
        s.category = Category::Unknown;
    }
    s.ruled_out.append(ruled);
    s
}
