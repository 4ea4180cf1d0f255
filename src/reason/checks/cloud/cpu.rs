//! RDS CPU: saturation sustained long enough to be the problem, from CloudWatch or from
//! Performance Insights' load, with the SQL that burns it.

use super::stats::{Stats, hhmm, mean, num, pct, per_s};
use super::{CPU_SATURATED, Rds};
use crate::model::Category;
use crate::reason::Signal;
use crate::reason::checks::{Basis, Decl, Role};
use chrono::{DateTime, Utc};

/// The check this concern makes.
pub(super) const CHECK: Decl = Decl {
    id: "rds_cpu",
    title: "CPU saturated",
    concern: "cloud",
    role: Role::Failure,
    reads: &["CPUUtilization"],
};

/// CPU saturated for long enough to be the problem, with the SQL that burns it.
pub(super) fn cpu(rds: &Rds, onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>) -> Vec<Signal> {
    let Some(c) = rds.own("CPUUtilization") else {
        return cpu_from_load(rds);
    };
    let busy = c.count_past(CPU_SATURATED, true);
    if !cpu_sustained(&c) {
        return Vec::new();
    }
    let since = c.crossed(CPU_SATURATED, true).unwrap_or(c.start);
    let lines_up = onset.is_none_or(|(o, _)| (o - since).num_minutes().abs() <= 10);
    let top = rds.top_statement();
    let sql = top
        .as_ref()
        .map(|t| {
            format!(
                "; Performance Insights' top query by load: {}",
                t.describe()
            )
        })
        .unwrap_or_else(|| {
            "; which query burns it is a gap: Performance Insights was not read".into()
        });
    let reads = rds
        .own("ReadIOPS")
        .filter(|r| r.max >= 5000.0 || r.max >= 2.0 * r.base)
        .map(|r| {
            format!(
                "; ReadIOPS {} alongside, the pattern of repeated full scans",
                r.range(per_s)
            )
        })
        .unwrap_or_default();
    let vcpu = rds
        .vcpus()
        .and_then(|v| {
            rds.load_now().map(|l| {
                format!(
                    "; DB load {} average active sessions on {} vCPUs",
                    num(l),
                    num(v)
                )
            })
        })
        .unwrap_or_default();
    vec![Signal {
        analyzer: "rds_cpu",
        reads_symptom: true,
        summary: format!("{} CPU saturated: CPUUtilization {}", rds.id, c.range(pct)),
        detail: format!(
            "{busy} of {} points at or above {CPU_SATURATED}%",
            c.points.len()
        ),
        category: Category::ResourceExhaustion,
        basis: if lines_up {
            Basis::Stated
        } else {
            Basis::Observed
        },
        links: if lines_up { 1 } else { 0 },
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "CPU saturation on {}: CPUUtilization at or above {CPU_SATURATED}% since {} ({}){vcpu}{sql}{reads}",
            rds.id,
            hhmm(since),
            c.range(pct)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// Without CPUUtilization, Performance Insights still shows saturation: sessions waiting on CPU
/// at least as many as the class has vCPUs.
pub(super) fn cpu_from_load(rds: &Rds) -> Vec<Signal> {
    let vcpu = rds.vcpus();
    // The load as it stands: the last third of the window, when higher than since the onset.
    let recent = rds.load.map(|l| {
        let n = l.points.len();
        mean(&l.points[n - n.div_ceil(3)..])
    });
    let load = match (rds.load_now(), recent) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let (Some(v), Some(load), Some((wait, _))) = (vcpu, load, rds.top_wait()) else {
        return Vec::new();
    };
    if load < 0.9 * v || !wait.starts_with("CPU") {
        return Vec::new();
    }
    let sql = rds
        .top_statement()
        .map(|t| {
            format!(
                "; Performance Insights' top query by load: {}",
                t.describe()
            )
        })
        .unwrap_or_default();
    vec![Signal {
        analyzer: "rds_cpu",
        reads_symptom: true,
        summary: format!(
            "{} CPU saturated: DB load {} on {} vCPUs, mostly {wait}",
            rds.id,
            num(load),
            num(v)
        ),
        detail: "CPUUtilization: no data in CloudWatch".into(),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "CPU saturation on {}: Performance Insights shows DB load {} average active sessions on {} vCPUs, waiting mostly on {wait} (CPUUtilization: no data, not measured){sql}",
            rds.id,
            num(load),
            num(v)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// CPU at or above saturation for at least three points in a row: a blip is not saturation.
pub(super) fn cpu_sustained(c: &Stats) -> bool {
    let mut run = 0;
    let mut longest = 0;
    for p in &c.points {
        run = if p.1 >= CPU_SATURATED { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest >= 3
}
