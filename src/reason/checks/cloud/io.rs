//! RDS I/O: the volume at its limit, latency up with a deep queue or IOPS at the provisioned rate.

use super::stats::{count, ms, num};
use super::{NEAR_LIMIT, Rds};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_io",
    title: "I/O saturated",
    concern: "cloud",
    role: Role::Failure,
    reads: &[
        "ReadLatency",
        "WriteLatency",
        "DiskQueueDepth",
        "ReadIOPS",
        "WriteIOPS",
    ],
};

/// I/O at the volume's limit: latency up with a deep queue, or IOPS at the provisioned rate.
pub(super) fn io(rds: &Rds) -> Vec<Signal> {
    let queue = rds
        .own("DiskQueueDepth")
        .filter(|q| q.max >= 10.0 && q.max >= 3.0 * q.base.max(1.0));
    let latency = ["WriteLatency", "ReadLatency"].iter().find_map(|m| {
        rds.own(m)
            .filter(|l| l.max >= 0.02 && l.max >= 5.0 * l.base.max(0.001))
            .map(|l| (*m, l))
    });
    let iops_cap = rds.instance.and_then(|i| i.iops).and_then(|cap| {
        let r = rds.own("ReadIOPS").map(|s| s.max).unwrap_or(0.0);
        let w = rds.own("WriteIOPS").map(|s| s.max).unwrap_or(0.0);
        (r + w >= NEAR_LIMIT * cap).then_some((r + w, cap))
    });
    if queue.is_none() && iops_cap.is_none() {
        return Vec::new();
    }
    let Some((metric, lat)) = latency else {
        return Vec::new();
    };
    let mut why = Vec::new();
    if let Some(q) = &queue {
        why.push(format!("DiskQueueDepth {}", q.range(count)));
    }
    if let Some((used, cap)) = iops_cap {
        why.push(format!("IOPS {} of {} provisioned", num(used), num(cap)));
    }
    vec![Signal {
        analyzer: "rds_io",
        reads_symptom: true,
        summary: format!("{} I/O saturated: {metric} {}", rds.id, lat.range(ms)),
        detail: why.join("; "),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "I/O saturation on {}: {metric} {} with {}",
            rds.id,
            lat.range(ms),
            why.join(" and ")
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}
