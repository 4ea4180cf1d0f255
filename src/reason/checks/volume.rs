//! A PersistentVolumeClaim filling up, from the kubelet's volume stats: how much is free, how
//! fast it falls and when it is full; what writes to it fails then. The claim the alert names (or
//! one its pods mount) is the object, so the verdict stands on the volume, not on the alert.

use super::{Basis, Decl, Role};
use crate::model::{Category, Series};
use crate::reason::{Ctx, Signal};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "volume_filling",
    title: "volume has free space",
    concern: "volume",
    role: Role::Failure,
    reads: &[],
}];

/// Free space below this share of the volume is failing whatever the slope.
const LOW_FREE: f64 = 0.10;

/// The share of a volume left free, per sample: the available bytes over capacity when both are
/// read, or a series that already is that ratio (the alert's expression).
fn free_share<'a>(ctx: &Ctx<'a>, claim: &str) -> Option<(&'a Series, Vec<(f64, f64)>)> {
    let of_claim: Vec<&Series> = ctx
        .obs
        .metrics
        .iter()
        .filter(|s| {
            !s.points.is_empty()
                && s.labels.get("persistentvolumeclaim").map(String::as_str) == Some(claim)
        })
        .collect();
    let available = |s: &&&Series| s.name.contains("volume_stats_available_bytes");
    let capacity = |s: &&&Series| s.name.contains("volume_stats_capacity_bytes");
    // The alert's own ratio (available over capacity), already a share.
    if let Some(ratio) = of_claim.iter().find(|s| available(s) && capacity(s)) {
        return Some((ratio, ratio.points.clone()));
    }
    let free = of_claim.iter().find(|s| available(s))?;
    let whole = of_claim
        .iter()
        .find(|s| capacity(s) && !available(s))
        .and_then(|c| c.points.last())
        .map(|(_, v)| *v);
    let share: Vec<(f64, f64)> = match whole {
        Some(cap) if cap > 0.0 => free.points.iter().map(|(t, v)| (*t, v / cap)).collect(),
        // Without a capacity, only a ratio (at most 1) can be read as a share.
        _ if free.points.iter().all(|(_, v)| (0.0..=1.0).contains(v)) => free.points.clone(),
        _ => return None,
    };
    Some((free, share))
}

/// Check: does each claim of the subject have free space? Failing when less than 10% is free or
/// the share falls to zero within a day at its rate; since the first sample under 10%.
pub(crate) fn volume_filling(ctx: &Ctx) -> Vec<Signal> {
    let claims: Vec<&str> = ctx
        .subject
        .objects
        .iter()
        .filter(|o| o.kind == "PersistentVolumeClaim")
        .map(|o| o.name.as_str())
        .collect();
    let mut out = Vec::new();
    for claim in claims {
        let Some((series, share)) = free_share(ctx, claim) else {
            continue;
        };
        let (Some(&(t0, first)), Some(&(t1, last))) = (share.first(), share.last()) else {
            continue;
        };
        let hours = (t1 - t0) / 3600.0;
        let per_hour = if hours > 0.0 {
            (first - last) / hours
        } else {
            0.0
        };
        let full_in = (per_hour > 0.0).then(|| last / per_hour);
        if last >= LOW_FREE && full_in.is_none_or(|h| h > 24.0) {
            continue;
        }
        let rate = match full_in {
            Some(h) => format!(
                ", falling {:.1} points an hour: full in about {}",
                per_hour * 100.0,
                crate::model::human_duration(h * 3600.0)
            ),
            None => String::new(),
        };
        let mounted: Vec<String> = ctx
            .subject
            .objects
            .iter()
            .filter(|o| o.kind == "Pod" && o.how.starts_with("mounts claim"))
            .map(|o| o.name.clone())
            .collect();
        let by = if mounted.is_empty() {
            String::new()
        } else {
            format!(" (mounted by {})", crate::reason::list_names(&mounted, 3))
        };
        let summary = format!(
            "the volume of claim {claim}{by} has {:.1}% free{rate}",
            last * 100.0
        );
        out.push(Signal {
            analyzer: "volume_filling",
            summary: summary.clone(),
            detail: format!("{} over {} samples", series.name, share.len()),
            category: Category::ResourceExhaustion,
            basis: Basis::Measured,
            links: 1,
            evidence: ctx.ev(&["metrics"]),
            cause: Some(format!(
                "Storage exhaustion: {summary}; writes to it fail once it is full, so free or grow the volume (or expire what fills it)"
            )),
            since: share
                .iter()
                .find(|(_, v)| *v < LOW_FREE)
                .and_then(|(t, _)| chrono::DateTime::from_timestamp(*t as i64, 0)),
            objects: vec![format!("persistentvolumeclaim/{claim}")],
            ..Signal::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Alert;
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn series(name: &str, points: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            labels: BTreeMap::from([(
                "persistentvolumeclaim".to_string(),
                "data-es-2".to_string(),
            )]),
            points: points.to_vec(),
        }
    }

    fn obs(metrics: Vec<Series>) -> Observations {
        Observations {
            alert: Some(Alert {
                labels: BTreeMap::from([
                    (
                        "alertname".to_string(),
                        "KubePersistentVolumeFillingUp".to_string(),
                    ),
                    ("namespace".to_string(), "search".to_string()),
                    ("persistentvolumeclaim".to_string(), "data-es-2".to_string()),
                ]),
                ..Alert::default()
            }),
            metrics,
            ..Observations::default()
        }
    }

    #[test]
    fn a_claim_running_out_of_space_is_measured_with_its_rate() {
        let gi = 1024f64.powi(3);
        let o = obs(vec![
            series(
                "kubelet_volume_stats_available_bytes",
                &[(0.0, 30.0 * gi), (3600.0, 20.0 * gi), (7200.0, 5.0 * gi)],
            ),
            series(
                "kubelet_volume_stats_capacity_bytes",
                &[(7200.0, 100.0 * gi)],
            ),
        ]);
        let sigs = volume_filling(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
        let summary = &sigs[0].summary;
        assert!(
            summary.contains("data-es-2 has 5.0% free") && summary.contains("12.5 points an hour"),
            "{summary}"
        );
        assert_eq!(
            sigs[0].objects,
            vec!["persistentvolumeclaim/data-es-2".to_string()]
        );
        assert!(sigs[0].since.is_some());
        // Plenty free and steady: nothing to say.
        let o = obs(vec![
            series(
                "kubelet_volume_stats_available_bytes",
                &[(0.0, 60.0 * gi), (7200.0, 60.0 * gi)],
            ),
            series(
                "kubelet_volume_stats_capacity_bytes",
                &[(7200.0, 100.0 * gi)],
            ),
        ]);
        assert!(volume_filling(&Ctx::new(&o)).is_empty());
        // Bytes with no capacity to divide by are not a share.
        let o = obs(vec![series(
            "kubelet_volume_stats_available_bytes",
            &[(0.0, 5.0 * gi)],
        )]);
        assert!(volume_filling(&Ctx::new(&o)).is_empty());
    }
}
