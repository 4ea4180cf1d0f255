//! The Datadog lane: the paging monitor, its own query around the onset (drawn against its
//! threshold), the events that changed the subject and its logs; and the catalog's Datadog reads.

use super::evidence::Chart;
use super::specialists::{Caller, Scope, split_threshold};
use super::tools::{Params, ToolOutput, p_f64, p_list, p_str, p_time, params, s};
use crate::integrations::datadog::{self, DatadogClient};
use crate::model::catalog::ReadTool;
use crate::model::{Marker, monitor};
use crate::reason::Observations;
use chrono::{DateTime, Duration, Utc};
use std::sync::Mutex;

/// Runs one Datadog read of the catalog with the world's client.
pub async fn read(
    client: &DatadogClient,
    tool: ReadTool,
    params: &Params,
    now: DateTime<Utc>,
) -> Result<ToolOutput, String> {
    let e = |err: crate::integrations::IntegrationError| err.to_string();
    let end = p_time(params, "end").unwrap_or(now);
    let start = p_time(params, "start").unwrap_or(end - Duration::hours(1));
    let need = |k: &str| {
        p_str(params, k)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| format!("missing parameter `{k}`"))
    };
    Ok(match tool {
        ReadTool::DatadogQuery => {
            ToolOutput::Series(client.query(need("query")?, start, end).await.map_err(e)?)
        }
        ReadTool::DatadogMonitors => {
            let monitors = match p_str(params, "id").filter(|i| !i.trim().is_empty()) {
                Some(id) => vec![client.monitor(id.trim()).await.map_err(e)?],
                None => client
                    .monitors(&p_list(params, "tags"), p_str(params, "name"))
                    .await
                    .map_err(e)?,
            };
            ToolOutput::Rules(monitors.iter().map(|m| m.to_rule()).collect())
        }
        ReadTool::DatadogEvents => ToolOutput::Changes(
            client
                .events(start, end, &p_list(params, "tags"))
                .await
                .map_err(e)?,
        ),
        ReadTool::DatadogLogs => {
            let limit = p_f64(params, "limit").unwrap_or(500.0).clamp(1.0, 5000.0) as u32;
            ToolOutput::Logs(
                client
                    .logs_search(need("query")?, start, end, limit)
                    .await
                    .map_err(e)?,
            )
        }
        other => return Err(format!("{other:?} is not a Datadog read")),
    })
}

fn rfc3339(t: DateTime<Utc>) -> Option<serde_json::Value> {
    s(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The tags that scope the subject in Datadog: the monitor query's own filter, else the scope's
/// namespace and workload as the Kubernetes integration tags them.
fn subject_tags(scope: &Scope, query: Option<&str>) -> Vec<String> {
    let from_query = query.map(datadog::query_tags).unwrap_or_default();
    if !from_query.is_empty() {
        return from_query;
    }
    let mut tags = Vec::new();
    if let Some(ns) = &scope.namespace {
        tags.push(format!("kube_namespace:{ns}"));
    }
    if let Some(w) = &scope.workload {
        tags.push(format!("kube_deployment:{w}"));
    }
    tags
}

/// A log search for the subject: its namespace and pod or workload (as service or deployment).
fn log_query(scope: &Scope, tags: &[String]) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(ns) = &scope.namespace {
        parts.push(format!("kube_namespace:{ns}"));
    } else if let Some(t) = tags.iter().find(|t| t.starts_with("kube_namespace:")) {
        parts.push(t.clone());
    }
    if let Some(pod) = &scope.pod {
        parts.push(format!("pod_name:{pod}"));
    } else if let Some(w) = &scope.workload {
        parts.push(format!("(service:{w} OR kube_deployment:{w})"));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The Datadog specialist.
pub async fn specialist(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let alert = scope.alert.as_ref();
    let monitor_id = alert.and_then(|a| a.label(monitor::MONITOR_ID).map(str::to_string));
    let mut query = alert.and_then(|a| a.monitor_query().map(str::to_string));
    if let Some(id) = &monitor_id {
        let got = c
            .call("datadog.monitors", params([("id", s(id))]), &none, obs)
            .await;
        if query.is_none()
            && let Some((ToolOutput::Rules(rules), _)) = &got
        {
            query = rules
                .first()
                .map(|r| r.query.clone())
                .filter(|q| !q.is_empty());
        }
    }
    let tags = subject_tags(scope, query.as_deref());
    let marker = vec![Marker {
        at: scope.onset.timestamp() as f64,
        label: "alert fired".into(),
    }];
    let metrics = async {
        let Some(full) = &query else { return };
        let Some(metric) = datadog::metric_query(full) else {
            return;
        };
        let chart = Chart {
            threshold: split_threshold(full).1.map(|t| t.value),
            markers: marker.clone(),
        };
        // The monitor's own query around the onset, then the wider picture.
        let start = scope.onset - Duration::minutes(30);
        let end = (scope.onset + Duration::minutes(30)).min(scope.now);
        let end = if end <= start { scope.now } else { end };
        for (from, to) in [(start, end), (scope.now - Duration::hours(6), scope.now)] {
            c.call(
                "datadog.metrics.query",
                params([
                    ("query", s(&metric)),
                    ("start", rfc3339(from)),
                    ("end", rfc3339(to)),
                ]),
                &chart,
                obs,
            )
            .await;
        }
    };
    let events = async {
        let mut p = params([
            ("start", rfc3339(scope.onset - Duration::hours(24))),
            ("end", rfc3339(scope.now)),
        ]);
        if !tags.is_empty() {
            p.insert("tags".into(), serde_json::Value::String(tags.join(",")));
        }
        c.call("datadog.events", p, &none, obs).await;
    };
    let logs = async {
        let Some(q) = log_query(scope, &tags) else {
            return;
        };
        c.call(
            "datadog.logs.search",
            params([
                ("query", s(q)),
                ("start", rfc3339(scope.onset - Duration::minutes(30))),
                ("end", rfc3339(scope.now)),
                ("limit", Some(serde_json::json!(500))),
            ]),
            &none,
            obs,
        )
        .await;
    };
    futures::join!(metrics, events, logs);
}
