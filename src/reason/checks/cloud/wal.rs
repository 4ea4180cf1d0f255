//! RDS write-ahead log: a WAL or checkpoint storm and the writes slowing behind it.

use super::stats::{formatter, mb_s};
use super::{Rds, TopSql};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_wal_storm",
    title: "WAL or checkpoint storm",
    concern: "cloud",
    role: Role::Failure,
    reads: &["TransactionLogsGeneration"],
};

/// A WAL (and checkpoint) storm: transaction log generation many times its level before, with
/// commits or writes slowing behind it. Where a replica falls behind it, the lag check says so.
pub(super) fn wal_storm(rds: &Rds) -> Vec<Signal> {
    let Some(wal) = rds.own("TransactionLogsGeneration") else {
        return Vec::new();
    };
    let before = wal.first.min(wal.base);
    if !(wal.max >= 4.0 * before && wal.max >= 50e6) {
        return Vec::new();
    }
    let slowed: Vec<String> = ["CommitLatency", "WriteLatency", "DiskQueueDepth"]
        .iter()
        .filter_map(|m| {
            let st = rds.own(m)?;
            (st.max >= 3.0 * st.first.min(st.base).max(1e-9))
                .then(|| format!("{m} {}", st.range(formatter(m))))
        })
        .collect();
    let top = rds
        .top_statement()
        .filter(TopSql::writes)
        .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
        .unwrap_or_default();
    let behind = if slowed.is_empty() {
        String::new()
    } else {
        format!("; writes slow behind it: {}", slowed.join(", "))
    };
    vec![Signal {
        analyzer: "rds_wal_storm",
        reads_symptom: true,
        summary: format!(
            "{} WAL storm: TransactionLogsGeneration {}",
            rds.id,
            wal.range(mb_s)
        ),
        detail: "every write is logged before it is applied; checkpoints follow the log".into(),
        category: Category::ResourceExhaustion,
        basis: if slowed.is_empty() {
            Basis::Timed
        } else {
            Basis::Measured
        },
        links: 1,
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "WAL storm on {}: a write-heavy workload generates transaction log at {} (from {}){behind}{top}",
            rds.id,
            mb_s(wal.max),
            mb_s(before)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}
