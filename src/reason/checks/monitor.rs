//! A vendor monitor's own query as the symptom: the series Datadog returned for it, measured
//! against the monitor's threshold, as an alert's PromQL expression is.

use crate::model::{Series, Symptom, SymptomState};
use crate::reason::Ctx;
use crate::reason::checks::metrics::parse_threshold;
use crate::reason::symptom::{breach_onset, from_secs};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::sync::LazyLock;

/// One metric query of a monitor: `metric.name{scope}`.
static METRIC: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"([A-Za-z_][\w.]*)\{([^}]*)\}").ok());

/// Scope tags that say where or by whom a series was measured, not what it is about.
const NOT_WHOM: &[&str] = &[
    "env",
    "team",
    "host",
    "region",
    "availability-zone",
    "datacenter",
    "version",
    "cluster",
    "cluster_name",
    "kube_cluster_name",
    "k8s_cluster_name",
];

/// A monitor's query (its left-hand side) in words, as an alert's expression is put: what it
/// measures (`error ratio`, `CPU throttling ratio`, or the metric it reads) and for whom (its
/// scope's values), and whether it is a ratio shown as a percentage. None when it names no metric.
pub(crate) fn describe(lhs: &str) -> Option<(String, bool)> {
    let metrics: Vec<(&str, &str)> = METRIC
        .as_ref()?
        .captures_iter(lhs)
        .filter_map(|c| Some((c.get(1)?.as_str(), c.get(2)?.as_str())))
        .collect();
    let &(first, _) = metrics.first()?;
    // A division between two metric queries, outside their scopes.
    let divided = metrics.len() == 2 && METRIC.as_ref()?.replace_all(lhs, "").contains('/');
    let m = first.to_ascii_lowercase();
    let (what, percent) = match divided {
        true if m.contains("throttled") => ("CPU throttling ratio".to_string(), true),
        true if ["error", "5xx", "fail", "exception"]
            .iter()
            .any(|w| m.contains(w)) =>
        {
            ("error ratio".to_string(), true)
        }
        true => (format!("{first} / {}", metrics[1].0), false),
        false => (first.to_string(), false),
    };
    let mut whom: Vec<&str> = Vec::new();
    for (_, scope) in &metrics {
        for tag in scope.split(',') {
            let Some((k, v)) = tag.trim().split_once(':') else {
                continue;
            };
            let vague = k.starts_with('!') || v.contains('*') || v.starts_with('$');
            if !vague && !NOT_WHOM.contains(&k) && !whom.contains(&v) {
                whom.push(v);
            }
        }
    }
    Some(if whom.is_empty() {
        (what, percent)
    } else {
        (format!("{what} of {}", whom.join("/")), percent)
    })
}

/// The words for `series` when it is the paging monitor's own query (see [`describe`]).
pub(crate) fn series_words(ctx: &Ctx, series: &Series) -> Option<(String, bool)> {
    let query = ctx.obs.alert.as_ref()?.monitor_query()?;
    let (lhs, _) = parse_threshold(query)?;
    if series.name.is_empty() || !lhs.contains(&series.name) {
        return None;
    }
    describe(&lhs)
}

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
    let (what, percent) =
        describe(&lhs).unwrap_or_else(|| ("the monitor's query".to_string(), false));
    let show = |v: f64| {
        if percent {
            crate::reason::checks::metrics::show(v, true)
        } else {
            show(v)
        }
    };
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

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn a_monitor_query_reads_as_what_it_measures_and_for_whom() {
        let errors = "avg(last_5m):sum:trace.http.request.errors{kube_namespace:shop,service:checkout-api}.as_rate() / sum:trace.http.request.hits{kube_namespace:shop,service:checkout-api}.as_rate()";
        assert_eq!(
            describe(errors),
            Some(("error ratio of shop/checkout-api".to_string(), true))
        );
        let throttled = "avg(last_5m):sum:kubernetes.cpu.cfs.throttled.periods{kube_namespace:search,kube_container_name:search-api}.as_rate() / sum:kubernetes.cpu.cfs.periods{kube_namespace:search,kube_container_name:search-api}.as_rate()";
        assert_eq!(
            describe(throttled),
            Some((
                "CPU throttling ratio of search/search-api".to_string(),
                true
            ))
        );
        // Where and by whom it was measured is not whom it is about; wildcards name nobody.
        let memory = "max(last_5m):max:kubernetes.memory.usage_pct{env:prod,kube_cluster_name:prod-eu,kube_deployment:payments-api,pod_name:*}";
        assert_eq!(
            describe(memory),
            Some((
                "kubernetes.memory.usage_pct of payments-api".to_string(),
                false
            ))
        );
        let other = "avg(last_1h):sum:orders.paid{*} / sum:orders.created{*}";
        assert_eq!(
            describe(other),
            Some(("orders.paid / orders.created".to_string(), false))
        );
        assert_eq!(describe("avg(last_5m):1"), None);
    }
}
