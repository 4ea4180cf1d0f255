//! RDS storage: free storage falling to nothing, from CloudWatch's series or the RDS event that
//! says it ran out.

use super::stats::{Stats, floor, gb, hhmm, hms, per_s};
use super::{DEPARTED, GIB, Rds, TopSql};
use crate::model::{Category, RdsEvent};
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_storage",
    title: "storage running out",
    concern: "cloud",
    role: Role::Failure,
    reads: &["FreeStorageSpace"],
};

/// Free storage falling to nothing.
pub(super) fn storage(rds: &Rds) -> Vec<Signal> {
    let Some(st) = rds.own("FreeStorageSpace") else {
        return storage_events_only(rds);
    };
    let allocated = rds
        .instance
        .and_then(|i| i.allocated_storage_gib)
        .map(|g| g * GIB);
    let slope = storage_slope(&st);
    let full_event = storage_event(rds);
    if !storage_failing(rds, &st) && full_event.is_none() {
        return Vec::new();
    }
    let eta = if slope > 0.0 && st.end > 0.0 {
        format!(
            "; at {:.2} GB/min it is full about {} min after {}",
            slope / 1e9,
            (st.end / slope).ceil(),
            hhmm(st.last_at)
        )
    } else {
        String::new()
    };
    let writes = rds
        .own("WriteIOPS")
        .filter(|w| w.max >= w.base * DEPARTED || w.max >= 2.0 * w.end)
        .map(|w| format!("; writes drove it: WriteIOPS {}", w.range(per_s)))
        .unwrap_or_default();
    let events: Vec<String> = rds
        .events
        .iter()
        .filter(|e| e.message.to_lowercase().contains("storage"))
        .map(|e| format!("{} \"{}\"", hms(e.at), e.message.trim()))
        .collect();
    let events = if events.is_empty() {
        String::new()
    } else {
        format!("; RDS events: {}", events.join("; "))
    };
    let top = rds
        .top_statement()
        .filter(TopSql::writes)
        .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
        .unwrap_or_default();
    let state = if full_event.is_some() || st.end <= 0.01 * allocated.unwrap_or(1e12) {
        "ran out of storage"
    } else {
        "is running out of storage"
    };
    vec![Signal {
        analyzer: "rds_storage",
        reads_symptom: true,
        summary: format!("{} {state}: FreeStorageSpace {}", rds.id, st.range(gb)),
        detail: format!("FreeStorageSpace {}{eta}", st.range(gb)),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        links: 2,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(if st.end < st.first {
            format!(
                "{} {state}: FreeStorageSpace fell {} to {} by {}{eta}{writes}{events}{top}",
                rds.id,
                gb(st.first),
                gb(st.end),
                hhmm(st.last_at),
            )
        } else {
            // Near empty all window long: it did not fall here, it was already full.
            format!(
                "{} {state}: FreeStorageSpace was {} at {}, near empty over the whole window{eta}{writes}{events}{top}",
                rds.id,
                gb(st.end),
                hhmm(st.last_at),
            )
        }),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

pub(super) fn storage_events_only(rds: &Rds) -> Vec<Signal> {
    let Some(e) = storage_event(rds) else {
        return Vec::new();
    };
    vec![Signal {
        analyzer: "rds_storage",
        reads_symptom: true,
        summary: format!("{}: \"{}\"", rds.id, e.message.trim()),
        detail: format!("RDS event at {}", hms(e.at)),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        evidence: rds.ev_events.clone(),
        cause: Some(format!(
            "{} ran out of storage: RDS event at {} \"{}\"; FreeStorageSpace was not read, so the trend is a gap",
            rds.id,
            hms(e.at),
            e.message.trim()
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// Free storage falling fast toward nothing: near-empty for the volume, or full within two hours
/// at the window's rate.
pub(super) fn storage_failing(rds: &Rds, st: &Stats) -> bool {
    let allocated = rds
        .instance
        .and_then(|i| i.allocated_storage_gib)
        .map(|g| g * GIB);
    let falling = st.end <= st.base / DEPARTED && st.base - st.end > floor("FreeStorageSpace");
    let soon = storage_slope(st) > 0.0 && st.end / storage_slope(st) <= 120.0;
    // Near-empty is failing whatever the level before: a disk full all window long is full.
    let near_empty = allocated.is_some_and(|a| st.end <= 0.1 * a) || st.end <= 1e9;
    near_empty || (falling && soon)
}

/// An RDS event that says the instance ran out of storage or is critically low on it.
pub(super) fn storage_event<'a>(rds: &Rds<'a>) -> Option<&'a RdsEvent> {
    rds.events.iter().copied().find(|e| {
        let m = e.message.to_lowercase();
        m.contains("storage")
            && [
                "ran out",
                "storage-full",
                "full",
                "insufficient",
                "critically low",
                "running low",
                "low on",
                "exhausted",
            ]
            .iter()
            .any(|w| m.contains(w))
    })
}

/// Bytes of free storage lost per minute over the window.
pub(super) fn storage_slope(st: &Stats) -> f64 {
    let minutes = (st.last_at - st.start).num_seconds() as f64 / 60.0;
    if minutes > 0.0 {
        (st.first - st.end) / minutes
    } else {
        0.0
    }
}
