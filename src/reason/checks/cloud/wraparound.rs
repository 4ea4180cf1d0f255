//! RDS transaction IDs: how near the instance is to wraparound protection.

use super::stats::count;
use super::{Rds, WRAPAROUND_XIDS};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_wraparound",
    title: "transaction ID wraparound",
    concern: "cloud",
    role: Role::Failure,
    reads: &["MaximumUsedTransactionIDs"],
};

/// Transaction IDs near wraparound protection.
pub(super) fn wraparound(rds: &Rds) -> Vec<Signal> {
    let Some(x) = rds
        .own("MaximumUsedTransactionIDs")
        .filter(|x| x.max >= WRAPAROUND_XIDS)
    else {
        return Vec::new();
    };
    vec![Signal {
        analyzer: "rds_wraparound",
        reads_symptom: true,
        summary: format!(
            "{} transaction IDs near wraparound: {}",
            rds.id,
            count(x.max)
        ),
        detail: "PostgreSQL stops accepting writes at about 2.1 billion unfrozen transaction IDs"
            .into(),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "Transaction-ID wraparound risk on {}: MaximumUsedTransactionIDs {} (vacuum is not freezing rows fast enough)",
            rds.id,
            count(x.max)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}
