//! A vendor monitor's own query as the symptom: the series Datadog returned for it, measured
//! against the monitor's threshold, as an alert's PromQL expression is.

use crate::model::{Symptom, SymptomState};
use crate::reason::Ctx;
use crate::reason::checks::metrics::parse_threshold;
use crate::reason::symptom::{breach_onset, from_secs};
use chrono::{DateTime, Utc};

fn hhmm(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

fn show(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// Measures the symptom of an alert a Datadog monitor raised; false when the alert carries no
/// monitor query (or one without a threshold) or Datadog returned none of its series, so other
/// measures run.
pub(crate) fn measure_symptom(ctx: &Ctx, s: &mut Symptom) -> bool {
    let Some(query) = ctx.obs.alert.as_ref().and_then(|a| a.monitor_query()) else {
        return false;
    };
    let Some((lhs, th)) = parse_threshold(query) else {
        return false;
    };
    // The series asked for with the monitor's metric query (its query minus the time
    // aggregation and the comparison): their name is a part of the monitor's left-hand side.
    let own: Vec<_> = ctx
        .obs
        .metrics
        .iter()
        .filter(|x| !x.points.is_empty() && !x.name.is_empty() && lhs.contains(&x.name))
        .collect();
    let what = own
        .first()
        .and_then(|x| x.labels.get("datadog_metric").cloned())
        .unwrap_or_else(|| "the monitor's query".to_string());
    let evidence = ctx.ev(&["metrics", "alert_rules"]);
    // Nothing returned: the pods' own state may still measure the claim.
    if own.is_empty() {
        return false;
    }
    let breaching = own
        .iter()
        .find(|x| x.points.last().is_some_and(|(_, v)| th.breached(*v)));
    match breaching {
        Some(x) => {
            let (_, last) = x.points.last().copied().unwrap_or_default();
            let onset = breach_onset(&x.points, |v| th.breached(v));
            s.state = SymptomState::Confirmed;
            s.onset = onset;
            s.detail = format!(
                "{what} is {} against the monitor's threshold {} {}{}",
                show(last),
                th.op,
                show(th.value),
                onset
                    .map(|t| format!(", breaching since {}", hhmm(t)))
                    .unwrap_or_default()
            );
        }
        None => {
            let last_breach = own
                .iter()
                .flat_map(|x| x.points.iter())
                .filter(|(_, v)| th.breached(*v))
                .map(|(t, _)| *t)
                .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
            let (_, last) = own[0].points.last().copied().unwrap_or_default();
            s.state = SymptomState::Cleared;
            s.cleared_at = last_breach.and_then(from_secs);
            s.detail = match s.cleared_at {
                Some(t) => format!(
                    "{what} is back to {} within the monitor's threshold {} {}; last breach at {}",
                    show(last),
                    th.op,
                    show(th.value),
                    hhmm(t)
                ),
                None => format!(
                    "{what} is {} within the monitor's threshold {} {} over the whole window",
                    show(last),
                    th.op,
                    show(th.value)
                ),
            };
        }
    }
    s.evidence = evidence;
    true
}
