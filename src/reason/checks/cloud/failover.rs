//! RDS failover and reboot: the availability stages in the RDS event timeline, and whether their
//! timing lines up with the symptom.

use super::Rds;
use super::stats::{floor, formatter, hhmm, hms};
use crate::model::{Category, RdsEvent, RuledOut};
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};
use chrono::{DateTime, Utc};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_failover",
    title: "instance failover or reboot",
    concern: "cloud",
    role: Role::Failure,
    reads: &["DatabaseConnections<"],
};

/// Stages of an availability event, in the words RDS operators use.
pub(super) fn stage(e: &RdsEvent) -> Option<&'static str> {
    let m = e.message.to_lowercase();
    let failover = m.contains("failover") || e.categories.iter().any(|c| c == "failover");
    if failover && (m.contains("in progress") || m.contains("restarting")) {
        return Some("failover in progress");
    }
    if failover && (m.contains("initiat") || m.contains("started") || m.contains("begin")) {
        return Some("failover initiated");
    }
    if failover && (m.contains("complete") || m.contains("finished")) {
        return Some("failover completed");
    }
    // "needs to be rebooted for the changes to take effect" announces nothing that happened.
    let pending = ["needs to be", "pending", "will be", "required", "scheduled"]
        .iter()
        .any(|w| m.contains(w));
    if !pending && (m.contains("reboot") || m.contains("restarted") || m.contains("restarting")) {
        return Some("reboot");
    }
    if m.contains("shutdown") || m.contains("stopped") || m.contains("crash") {
        return Some("instance down");
    }
    if (m.contains("is available")
        || m.contains("available again")
        || m.contains("accepting connections"))
        && !m.contains("not available")
        && !m.contains("no connections")
    {
        return Some("instance available");
    }
    None
}

/// A failover or a reboot whose timing lines up with the symptom.
pub(super) fn failover(
    rds: &Rds,
    onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
) -> Vec<Signal> {
    let staged: Vec<(&RdsEvent, &'static str)> = rds
        .events
        .iter()
        .filter_map(|e| stage(e).map(|s| (*e, s)))
        .collect();
    let outage: Vec<&(&RdsEvent, &'static str)> = staged
        .iter()
        .filter(|(_, s)| *s != "instance available")
        .collect();
    let Some(first) = outage.first() else {
        return Vec::new();
    };
    let started = first.0.at;
    // It explains the symptom only when the symptom began around it.
    let lines_up = match onset {
        Some((o, _)) => (o - started).num_minutes().abs() <= 10,
        None => true,
    };
    let is_failover = staged.iter().any(|(_, s)| s.starts_with("failover"));
    let multi_az = rds.instance.and_then(|i| i.multi_az) == Some(true)
        || rds.events.iter().any(|e| e.message.contains("Multi-AZ"));
    let what = match (is_failover, multi_az) {
        (true, true) => "Multi-AZ failover",
        (true, false) => "failover",
        _ => "reboot",
    };
    let timeline = staged
        .iter()
        .map(|(e, s)| format!("{s} at {} (\"{}\")", hms(e.at), e.message.trim()))
        .collect::<Vec<_>>()
        .join(" → ");
    let available = staged
        .iter()
        .find(|(e, s)| *s == "instance available" && e.at >= started)
        .map(|(e, _)| e.at);
    // Whether the workload came back: the metrics that fell during the event returned.
    let mut resumed = Vec::new();
    let mut dipped = Vec::new();
    for m in [
        "DatabaseConnections",
        "WriteIOPS",
        "CPUUtilization",
        "ReadIOPS",
    ] {
        if let Some(st) = rds.own(m) {
            let low = st.min <= st.base * 0.2 && st.base > floor(m).max(1.0);
            if low {
                dipped.push(format!(
                    "{m} fell to {} at {}",
                    formatter(m)(st.min),
                    hhmm(st.min_at)
                ));
                if st.end >= 0.8 * st.base {
                    resumed.push(format!("{m} back at {}", formatter(m)(st.end)));
                }
            }
        }
    }
    let recovered = !dipped.is_empty() && resumed.len() == dipped.len();
    let mut cause = format!(
        "{what} of {}: the RDS event timeline, the primary evidence source for a {what}, shows {timeline}",
        rds.id
    );
    if !dipped.is_empty() {
        cause.push_str(&format!("; during it {}", dipped.join(", ")));
    }
    if recovered {
        cause.push_str(&format!(
            "; afterwards the workload resumed normally ({}){}",
            resumed.join(", "),
            available
                .map(|t| format!(", the instance available from {}", hms(t)))
                .unwrap_or_default()
        ));
    }
    let mut s = Signal {
        analyzer: "rds_failover",
        reads_symptom: true,
        summary: format!("{what} of {} at {}", rds.id, hms(started)),
        detail: timeline.clone(),
        category: Category::Infrastructure,
        basis: if lines_up {
            Basis::Stated
        } else {
            Basis::Context
        },
        links: if lines_up { 2 } else { 1 },
        evidence: rds.with_events(rds.metric_evidence()),
        cause: Some(cause),
        objects: vec![rds.object()],
        ..Signal::default()
    };
    if !lines_up {
        let (o, _) = onset.unwrap_or((started, None));
        s.cause = None;
        s.summary = format!(
            "{what} of {} at {} does not line up with the symptom at {}",
            rds.id,
            hms(started),
            hhmm(o)
        );
        s.ruled_out.push(RuledOut {
            statement: format!("{what} caused it"),
            reason: format!(
                "the {what} at {} is {} min from the symptom's onset at {}",
                hms(started),
                (o - started).num_minutes().abs(),
                hhmm(o)
            ),
            evidence: rds.ev_events.clone(),
        });
    }
    vec![s]
}
