//! The metrics specialist: the alert's own PromQL around the onset and over hours, then the
//! series Prometheus has for the subject and the queries discovered from them.

use super::triage::problem_words;
use super::{Caller, Scope, rfc3339, split_threshold};
use crate::agent::evidence::Chart;
use crate::agent::tools::{Params, ToolOutput, params, s};
use crate::model::Marker;
use crate::reason::Observations;
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use serde_json::json;
use std::sync::Mutex;

pub(super) async fn metrics(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let (rules, _) = futures::join!(
        c.call("prometheus.rules", Params::new(), &none, obs),
        c.call("prometheus.alerts", Params::new(), &none, obs),
    );
    let alertname = scope.alert.as_ref().map(|a| a.name().to_string());
    // A Datadog monitor's query is the Datadog lane's to measure, not PromQL.
    let paged_by_monitor = scope
        .alert
        .as_ref()
        .is_some_and(|a| a.monitor_query().is_some());
    let scope_expr = scope.expr.clone().filter(|_| !paged_by_monitor);
    let expr = scope_expr.or_else(|| match (&rules, &alertname) {
        (Some((ToolOutput::Rules(rules), _)), Some(name)) => rules
            .iter()
            .find(|r| r.rule_type == "alerting" && &r.name == name && !r.query.is_empty())
            .map(|r| r.query.clone()),
        _ => None,
    });
    let Some(expr) = expr else {
        // No alert and no rule: what Prometheus has about the subject the problem names.
        discover(c, scope, None, obs).await;
        return;
    };
    if scope.alert.is_none() {
        obs.lock().unwrap_or_else(|e| e.into_inner()).expr = Some(expr.clone());
    }
    let (base, threshold) = split_threshold(&expr);
    let chart = Chart {
        threshold: threshold.map(|t| t.value),
        markers: vec![Marker {
            at: scope.onset.timestamp() as f64,
            label: "alert fired".into(),
        }],
    };
    // First the alert's own expression around the onset, then the wider picture.
    let start = scope.onset - ChronoDuration::minutes(30);
    let end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let end = if end <= start { scope.now } else { end };
    c.call(
        "prometheus.query_range",
        params([
            ("query", s(&base)),
            ("start", rfc3339(start)),
            ("end", rfc3339(end)),
            ("step", Some(json!(30))),
        ]),
        &chart,
        obs,
    )
    .await;
    c.call(
        "prometheus.query_range",
        params([
            ("query", s(&base)),
            ("start", rfc3339(scope.now - ChronoDuration::hours(6))),
            ("end", rfc3339(scope.now)),
            ("step", Some(json!(300))),
        ]),
        &chart,
        obs,
    )
    .await;
    // Its siblings for the same subject (error ratio, latency, throttling, versions), over a
    // window that starts well before the onset so a step and the change before it both show.
    let Ok(parsed) = crate::reason::promql::parse(&expr) else {
        return;
    };
    discover(c, scope, Some(&parsed), obs).await;
    let start = scope.onset - ChronoDuration::minutes(60);
    let end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let end = if end <= start { scope.now } else { end };
    let marker = Chart {
        threshold: None,
        markers: chart.markers.clone(),
    };
    let queries = crate::reason::promql::siblings(&parsed)
        .into_iter()
        .map(|(_, q)| q);
    range_queries(c, queries, (start, end), &marker, obs).await;
}

/// Run PromQL range queries in parallel at a 30 s step over `window`, each drawn with `chart`.
async fn range_queries(
    c: &Caller,
    queries: impl IntoIterator<Item = String>,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    chart: &Chart,
    obs: &Mutex<Observations>,
) {
    let calls = queries.into_iter().map(|query| async move {
        c.call(
            "prometheus.query_range",
            params([
                ("query", s(query)),
                ("start", rfc3339(start)),
                ("end", rfc3339(end)),
                ("step", Some(json!(30))),
            ]),
            chart,
            obs,
        )
        .await;
    });
    futures::future::join_all(calls).await;
}

/// Discovery: the series Prometheus lists for the subject (the alert expression's subject, else
/// the workload or the words of the problem) and their metadata, then the error-ratio, latency,
/// saturation and version queries built from what was found, over a window that starts well
/// before the onset so a step and the change before it both show.
async fn discover(
    c: &Caller,
    scope: &Scope,
    parsed: Option<&crate::reason::promql::AlertExpr>,
    obs: &Mutex<Observations>,
) {
    use crate::reason::discover;
    let none = Chart::default();
    let candidates: Vec<String> = match (&scope.workload, &scope.problem) {
        (Some(w), _) => vec![w.clone()],
        (None, Some(p)) => problem_words(p),
        (None, None) => Vec::new(),
    };
    let selectors = match parsed {
        Some(p) => discover::subject_selectors(
            &p.subject(),
            scope.namespace.as_deref(),
            scope.workload.as_deref(),
        ),
        None => discover::selectors(&candidates, scope.namespace.as_deref()),
    };
    if selectors.is_empty() {
        return;
    }
    let start = scope.onset - ChronoDuration::minutes(60);
    let end = scope.now;
    let found = c
        .call(
            "prometheus.series",
            params([
                ("match", s(selectors.join("\n"))),
                ("start", rfc3339(start)),
                ("end", rfc3339(end)),
            ]),
            &none,
            obs,
        )
        .await;
    let series = match found {
        Some((ToolOutput::Series(v), _)) if !v.is_empty() => v,
        _ => return,
    };
    let metadata = match c
        .call("prometheus.metadata", Params::new(), &none, obs)
        .await
    {
        Some((ToolOutput::Series(v), _)) => v,
        _ => Vec::new(),
    };
    let subjects = match parsed {
        Some(p) => {
            let mut out = vec![p.subject()];
            if let (Some(ns), Some(w)) = (&scope.namespace, &scope.workload) {
                out.extend(
                    discover::subject(&series, std::slice::from_ref(w), Some(ns))
                        .into_iter()
                        .filter(|m| m.iter().any(|x| x.name == "pod")),
                );
            }
            out
        }
        None => discover::subject(&series, &candidates, scope.namespace.as_deref()),
    };
    let marker = Chart {
        threshold: None,
        markers: vec![Marker {
            at: scope.onset.timestamp() as f64,
            label: if scope.alert.is_some() {
                "alert fired"
            } else {
                "reported"
            }
            .into(),
        }],
    };
    let q_end = (scope.onset + ChronoDuration::minutes(30)).min(scope.now);
    let q_end = if q_end <= start { scope.now } else { q_end };
    let queries = discover::plan(&series, &metadata, &subjects)
        .into_iter()
        .map(|(_, q)| q);
    range_queries(c, queries, (start, q_end), &marker, obs).await;
}
