//! RDS memory: freeable memory nearly gone with swap growing.

use super::stats::{floor, gb};
use super::{Rds, class_memory_bytes};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_memory",
    title: "memory exhausted",
    concern: "cloud",
    role: Role::Failure,
    reads: &["FreeableMemory", "SwapUsage"],
};

/// Freeable memory nearly gone with swap growing.
pub(super) fn memory(rds: &Rds) -> Vec<Signal> {
    let (Some(m), Some(sw)) = (rds.own("FreeableMemory"), rds.own("SwapUsage")) else {
        return Vec::new();
    };
    let total = rds.class().and_then(class_memory_bytes);
    let low = total.map_or(m.min <= 256.0 * 1024.0 * 1024.0, |t| m.min <= 0.05 * t);
    let swapping = sw.max >= 2.0 * sw.base && sw.max - sw.base > floor("SwapUsage");
    if !(low && swapping) {
        return Vec::new();
    }
    vec![Signal {
        analyzer: "rds_memory",
        reads_symptom: true,
        summary: format!("{} under memory pressure", rds.id),
        detail: format!("FreeableMemory {}; SwapUsage {}", m.range(gb), sw.range(gb)),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        links: 1,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "Memory pressure on {}: FreeableMemory fell to {} and SwapUsage grew {}",
            rds.id,
            gb(m.min),
            sw.range(gb)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}
