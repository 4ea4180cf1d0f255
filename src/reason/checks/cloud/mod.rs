//! RDS analyzers: every cause check over the instance an alert names, one file per concern, and
//! how their findings settle against the symptom measured on its own CloudWatch metric.

mod connections;
mod cpu;
mod failover;
mod health;
mod instance;
mod io;
mod memory;
mod replication;
mod stats;
mod storage;
mod symptom;
mod wal;
mod wraparound;

pub(crate) use instance::subject;
pub use instance::{
    EV_EVENTS, EV_INSTANCES, EV_METRICS, EV_PI, INSTANCE_KEYS, class_memory_bytes,
    default_max_connections, instance_label, names, replicas_named, vcpus,
};
pub(crate) use symptom::measure_symptom;

use super::{Basis, Decl, Role};
use crate::model::{Category, Symptom, SymptomState};
use crate::reason::{Ctx, Signal};
use instance::{GIB, Rds, TopSql};
use symptom::{Bad, claimed_metric, symptom_window};

/// The checks this concern makes, in the order the analyzers run.
pub(crate) const DECLARED: &[Decl] = &[
    failover::CHECK,
    storage::CHECK,
    replication::CHECK,
    connections::CHECK,
    cpu::CHECK,
    memory::CHECK,
    io::CHECK,
    wal::CHECK,
    wraparound::CHECK,
    Decl {
        id: "rds_gaps",
        title: "CloudWatch metrics without data",
        concern: "cloud",
        role: Role::Context,
        reads: &[],
    },
];

/// CPU busy from which queries queue for it.
const CPU_SATURATED: f64 = 80.0;
/// Share of a hard limit from which it is "near" it.
const NEAR_LIMIT: f64 = 0.9;
/// Replica lag worth a finding, in seconds.
const LAG_SECS: f64 = 60.0;
/// A metric this many times its level at the start of the window has departed from it.
const DEPARTED: f64 = 1.5;
/// Transaction IDs used past which wraparound protection is near (the hard stop is at ~2^31).
const WRAPAROUND_XIDS: f64 = 1.0e9;

/// Every Cloud analyzer, over the subject instance.
pub(crate) fn analyze(ctx: &Ctx) -> Vec<Signal> {
    let Some(mut rds) = Rds::new(ctx) else {
        return Vec::new();
    };
    if !rds.has_metrics && rds.events.is_empty() && rds.top_sql.is_empty() {
        return Vec::new();
    }
    // Measured once: its onset lines the checks up, its state settles them.
    let mut measured = Symptom::default();
    let symptom = measure_symptom(ctx, &mut measured).then_some(&measured);
    let onset = symptom_window(ctx, symptom);
    rds.since = onset.map(|o| o.0);
    let rds = rds;
    let mut out = Vec::new();
    out.extend(failover::failover(&rds, onset));
    out.extend(storage::storage(&rds));
    out.extend(replication::replication_lag(&rds));
    out.extend(connections::connections(ctx, &rds));
    out.extend(cpu::cpu(&rds, onset));
    out.extend(memory::memory(&rds));
    out.extend(io::io(&rds));
    out.extend(wraparound::wraparound(&rds));
    if !out
        .iter()
        .any(|s| measures(s, "ReplicaLag") && s.cause.is_some())
    {
        out.extend(wal::wal_storm(&rds));
    }
    settle_signals(ctx, &rds, symptom, &mut out);
    let failing = out.iter().any(|s| s.cause.is_some() && !s.benign);
    let recovered = out.iter().any(|s| s.cause.is_some() && s.benign);
    let mut ruled = health::ruled_out(&rds, onset, &out);
    if !failing && !recovered {
        out.push(health::all_within_bounds(&rds, &mut ruled));
    }
    if !rds.missing.is_empty() {
        out.push(Signal {
            analyzer: "rds_gaps",
            reads_symptom: true,
            summary: format!(
                "CloudWatch had no data for {}: not measured, not zero",
                crate::reason::list_names(&rds.missing, 8)
            ),
            detail: "checks that need these metrics could not be made".into(),
            category: Category::Unknown,
            basis: Basis::Context,
            evidence: rds.metric_evidence(),
            objects: vec![rds.object()],
            ..Signal::default()
        });
    }
    if let Some(first) = out.first_mut() {
        first.ruled_out.extend(ruled);
    }
    out
}

/// Whether a signal's check measures `metric` (either way).
fn measures(s: &Signal, metric: &str) -> bool {
    let decl = s.decl();
    decl.reads(metric, false) || decl.reads(metric, true)
}

/// Ties the checks to the symptom: the check of the alert's own metric ranks first among equals;
/// a symptom measured back to normal makes every cause but a failover history ("recovered");
/// a second failure at the same time is named in the first's root cause.
fn settle_signals(ctx: &Ctx, rds: &Rds, symptom: Option<&Symptom>, out: &mut [Signal]) {
    if let Some((metric, bad)) = claimed_metric(ctx) {
        let falls = matches!(bad, Bad::Low);
        for s in out
            .iter_mut()
            .filter(|s| s.decl().reads(metric, falls) && s.cause.is_some())
        {
            // It reads the very metric the alert claims about: a link to the symptom.
            s.links += 1;
        }
    }
    // Sessions busy on CPU are queries that cannot finish: connections pile up behind a saturated
    // CPU, they are its consequence, not a second cause.
    let busy_on_cpu = rds.top_wait().is_some_and(|(w, _)| w.starts_with("CPU"));
    let failing =
        |s: &Signal, metric: &str| s.decl().reads(metric, false) && s.cause.is_some() && !s.benign;
    if busy_on_cpu && out.iter().any(|s| failing(s, "CPUUtilization")) {
        let mut piled = Vec::new();
        for s in out.iter_mut().filter(|s| failing(s, "DatabaseConnections")) {
            s.symptom_of = Some(Category::ResourceExhaustion);
            s.summary = format!(
                "{}, a consequence of the CPU saturation: the sessions are busy on CPU, not idle",
                s.summary
            );
            piled.push(s.summary.clone());
        }
        if let Some(c) = out
            .iter_mut()
            .find(|s| failing(s, "CPUUtilization"))
            .and_then(|s| s.cause.as_mut())
        {
            for p in piled {
                c.push_str(&format!("; so connections pile up: {p}"));
            }
        }
    }
    if let Some(symptom) = symptom.filter(|s| s.state == SymptomState::Cleared) {
        for s in out
            .iter_mut()
            // A failover (connections falling to none) happened and stays in the record.
            .filter(|s| {
                s.cause.is_some() && !s.benign && !s.decl().reads("DatabaseConnections", true)
            })
        {
            let cause = s.cause.take().unwrap_or_default();
            s.cause = Some(format!(
                "Recovered: {}; while it lasted: {cause}",
                symptom.detail
            ));
            s.benign = true;
            s.category = Category::Healthy;
        }
        return;
    }
    let mut failing: Vec<usize> = (0..out.len())
        .filter(|&i| {
            out[i].cause.is_some()
                && !out[i].benign
                && out[i].symptom_of.is_none()
                && out[i].own_links() >= Basis::Stated.links()
        })
        .collect();
    failing.sort_by_key(|&i| std::cmp::Reverse(out[i].own_links()));
    if let [first, second, ..] = failing[..] {
        let also = out[second].summary.clone();
        if let Some(c) = out[first].cause.as_mut() {
            c.push_str(&format!("; at the same time on {}: {also}", rds.id));
        }
    }
}
