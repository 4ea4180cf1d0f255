//! A usage series divided by its configured maximum (`threads_connected / max_connections`,
//! `used / limit`) read at that maximum: the limit is reached, whatever the alert's own
//! threshold was set to warn at.

use super::{own_series, parsed_alert};
use crate::model::Category;
use crate::reason::checks::Basis;
use crate::reason::{Ctx, Signal};

/// Words a configured maximum's metric name carries.
const MAXIMUM_WORDS: &[&str] = &["max", "limit", "capacity", "quota"];

/// Check: is the alert's usage-over-maximum ratio at its maximum now? Failing when its latest
/// sample is at 99% of the maximum or more; since when it first got there.
pub(crate) fn at_limit(ctx: &Ctx) -> Vec<Signal> {
    let Some(p) = parsed_alert(ctx) else {
        return Vec::new();
    };
    let names: Vec<&str> = p
        .selectors
        .iter()
        .filter_map(|s| s.metric.as_deref())
        .collect();
    let [used, maximum] = names.as_slice() else {
        return Vec::new();
    };
    let is_maximum = |n: &str| MAXIMUM_WORDS.iter().any(|w| n.contains(w));
    if !is_maximum(maximum) || is_maximum(used) {
        return Vec::new();
    }
    // A ratio written as a percentage (`* 100`) reaches its maximum at 100.
    let full = if p.base.contains("100") { 99.0 } else { 0.99 };
    let mut out = Vec::new();
    for s in own_series(ctx, &p) {
        let Some((t, last)) = s.points.last().copied() else {
            continue;
        };
        if last < full {
            continue;
        }
        let since = crate::reason::steps::symptom::breach_onset(&s.points, |v| v >= full);
        let at = chrono::DateTime::from_timestamp(t as i64, 0).unwrap_or_default();
        let summary = format!(
            "{used} has reached {maximum}: the ratio reads {} at {}",
            super::show(last, full < 1.0),
            at.format("%H:%M UTC")
        );
        out.push(Signal {
            analyzer: "limit_reached",
            summary: summary.clone(),
            detail: "usage divided by its configured maximum, read at that maximum".into(),
            category: Category::ResourceExhaustion,
            // A limit reached is capacity, not why it was reached: a cause only where nothing
            // deeper (a leak, a lock, a slow query) says why, as an autoscaler at its maximum.
            basis: Basis::Observed,
            links: 1,
            evidence: ctx.ev(&["metrics"]),
            cause: Some(format!(
                "{summary}; what it counts is refused beyond it until some is released or the limit is raised"
            )),
            since,
            ..Signal::default()
        });
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, Series};
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn world(expr: &str, values: &[f64]) -> Observations {
        let base = crate::reason::promql::parse(expr)
            .map(|e| e.base)
            .unwrap_or_default();
        Observations {
            alert: Some(Alert {
                labels: BTreeMap::from([("alertname".to_string(), "TooMany".to_string())]),
                generator_url: format!(
                    "http://prom/graph?g0.expr={}",
                    expr.replace(' ', "+").replace('/', "%2F")
                ),
                ..Alert::default()
            }),
            metrics: vec![Series {
                name: base,
                labels: BTreeMap::new(),
                points: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (1_780_000_000.0 + 60.0 * i as f64, *v))
                    .collect(),
            }],
            ..Observations::default()
        }
    }

    #[test]
    fn usage_read_at_its_configured_maximum_is_the_limit_reached() {
        let expr =
            "mysql_global_status_threads_connected / mysql_global_variables_max_connections > 0.9";
        let obs = world(expr, &[0.4, 0.95, 1.0, 1.0]);
        let sigs = at_limit(&Ctx::new(&obs));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ResourceExhaustion);
        assert!(
            sigs[0]
                .summary
                .contains("has reached mysql_global_variables_max_connections")
        );
        // Over the warning threshold but short of the maximum: nothing is reached yet.
        let obs = world(expr, &[0.4, 0.95, 0.93]);
        assert!(at_limit(&Ctx::new(&obs)).is_empty());
        // A ratio of two usages is no maximum.
        let obs = world("errors_total / requests_total > 0.5", &[1.0, 1.0]);
        assert!(at_limit(&Ctx::new(&obs)).is_empty());
    }
}
