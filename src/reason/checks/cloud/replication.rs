//! RDS replication: a read replica falling behind its primary, and why.

use super::stats::{formatter, pct, secs};
use super::{CPU_SATURATED, LAG_SECS, Rds};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_replication_lag",
    title: "replica lag",
    concern: "cloud",
    role: Role::Failure,
    reads: &["ReplicaLag"],
};

/// A replica falling behind, and why: a write spike on the primary, the replica's own CPU, or a
/// long transaction.
pub(super) fn replication_lag(rds: &Rds) -> Vec<Signal> {
    let Some((replica, lag)) = rds.worst_replica("ReplicaLag") else {
        return Vec::new();
    };
    if lag.end < LAG_SECS && lag.max < LAG_SECS {
        return Vec::new();
    }
    let recovered = lag.end < LAG_SECS;
    let write_spike: Vec<String> = ["WriteIOPS", "TransactionLogsGeneration", "WriteThroughput"]
        .iter()
        .filter_map(|m| {
            let st = rds.own(m)?;
            // Against the lowest early level: a ramp that starts in the window is the spike.
            let before = st.first.min(st.base);
            (st.max >= 2.0 * before && st.max - before > 0.0)
                .then(|| format!("{m} {}", st.range(formatter(m))))
        })
        .collect();
    let replica_cpu = rds
        .get(&replica, "CPUUtilization")
        .filter(|c| c.count_past(CPU_SATURATED, true) >= 3);
    let top = rds.top_statement();
    let (why, category) = if !write_spike.is_empty() {
        let wal_top = top
            .as_ref()
            .filter(|t| t.writes() || t.wait.as_ref().is_some_and(|w| w.0.contains("WAL")))
            .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
            .unwrap_or_default();
        (
            format!(
                "a write-heavy workload on the primary {} generated WAL faster than the replica could replay it: {}{wal_top}",
                rds.id,
                write_spike.join(", ")
            ),
            Category::ResourceExhaustion,
        )
    } else if let Some(c) = replica_cpu {
        (
            format!(
                "the replica's own CPU is saturated (CPUUtilization {}), so it replays WAL slower than the primary writes it",
                c.range(pct)
            ),
            Category::ResourceExhaustion,
        )
    } else {
        (
            "no write spike on the primary and no saturated replica CPU was measured; a long transaction or a replay conflict on the replica is what remains to check".to_string(),
            Category::Unknown,
        )
    };
    let state = if recovered { "recovered from" } else { "has" };
    vec![Signal {
        analyzer: "rds_replication_lag",
        reads_symptom: true,
        summary: format!(
            "{replica} {state} replication lag: ReplicaLag {}",
            lag.range(secs)
        ),
        detail: why.clone(),
        category,
        basis: if category == Category::Unknown {
            Basis::Observed
        } else {
            Basis::Stated
        },
        links: if category == Category::Unknown { 0 } else { 1 },
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "Replication lag on read replica {replica} reached {} ({}): {why}",
            secs(lag.max),
            lag.range(secs)
        )),
        objects: vec![rds.object(), format!("DBInstance/{replica}")],
        benign: recovered,
        ..Signal::default()
    }]
}
