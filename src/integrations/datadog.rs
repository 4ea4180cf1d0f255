//! Datadog API client (read-only): metric queries, monitors, events and logs search, parsed into
//! model facts; the key check `doctor` runs.
//!
//! The API and application keys are credential headers of the endpoint (`DD-API-KEY`,
//! `DD-APPLICATION-KEY`), so they never appear in a request value that is recorded or logged.

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Request, RequestBody, Response, Transport};
use crate::model::{Change, ChangeKind, LogLine, RuleInfo, Series};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const NAME: &str = "datadog";

/// Pages of logs read at most per search (a replayed or misbehaving cursor cannot loop).
const MAX_LOG_PAGES: usize = 10;
/// Lines per page the logs search asks for (Datadog's maximum is 1000).
const LOG_PAGE: u32 = 500;

/// One monitor: its query, thresholds and the state of each group.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Monitor {
    pub id: u64,
    pub name: String,
    /// `query alert`, `metric alert`, `log alert`, `service check`, ...
    pub kind: String,
    pub query: String,
    pub message: String,
    pub tags: Vec<String>,
    /// `OK`, `Alert`, `Warn`, `No Data`, `Ignored`, `Skipped`, `Unknown`.
    pub overall_state: String,
    pub critical: Option<f64>,
    pub warning: Option<f64>,
    pub priority: Option<u64>,
    /// Per group (`kube_namespace:shop,pod_name:x`, or `*` for an ungrouped monitor): its status
    /// and when it last triggered.
    pub groups: Vec<MonitorGroup>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct MonitorGroup {
    pub name: String,
    pub status: String,
    pub last_triggered: Option<DateTime<Utc>>,
}

impl Monitor {
    /// Whether the monitor (or one of its groups) is in a state that pages: Alert, Warn or No Data.
    pub fn is_firing(&self) -> bool {
        firing_state(&self.overall_state) || self.groups.iter().any(|g| firing_state(&g.status))
    }

    /// The monitor as an alerting rule: its query (threshold included) and state, tags as labels.
    pub fn to_rule(&self) -> RuleInfo {
        let (labels, _) = tag_labels(&self.tags);
        let mut annotations = BTreeMap::new();
        if !self.message.is_empty() {
            annotations.insert("message".into(), self.message.clone());
        }
        if let Some(c) = self.critical {
            annotations.insert("critical".into(), c.to_string());
        }
        if let Some(w) = self.warning {
            annotations.insert("warning".into(), w.to_string());
        }
        for g in self.groups.iter().filter(|g| g.name != "*") {
            annotations.insert(format!("group {}", g.name), g.status.clone());
        }
        RuleInfo {
            name: self.name.clone(),
            group: format!("datadog monitor {}", self.id),
            query: self.query.clone(),
            rule_type: "alerting".into(),
            state: Some(self.overall_state.clone()),
            duration_secs: None,
            labels,
            annotations,
            health: None,
        }
    }
}

/// A monitor state that pages.
pub fn firing_state(state: &str) -> bool {
    matches!(state, "Alert" | "Warn" | "No Data")
}

/// What `GET /api/v1/validate` and an application-key call said.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyCheck {
    pub api_key: Result<(), String>,
    pub app_key: Result<(), String>,
}

#[derive(Clone)]
pub struct DatadogClient {
    transport: Arc<dyn Transport>,
}

fn secs(t: DateTime<Utc>) -> String {
    t.timestamp().to_string()
}

impl DatadogClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        DatadogClient { transport }
    }

    /// Sends and reads JSON; a 429 that outlived the transport's one wait says so.
    async fn json(&self, req: &Request) -> Result<Value, IntegrationError> {
        let resp = self.transport.send(req).await?;
        if resp.status == 429 {
            return Err(req.error(ErrorKind::Other(
                "rate limited by Datadog (429) even after waiting for the reset; try again later"
                    .into(),
            )));
        }
        resp.json(req)
    }

    /// A metric query's timeseries over `[from, to]` (`GET /api/v1/query`). The series are named
    /// by the query asked, so they line up with the monitor's expression; tags become labels.
    pub async fn query(
        &self,
        query: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Series>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/query")
            .query("from", secs(from))
            .query("to", secs(to))
            .query("query", query);
        if query.trim().is_empty() {
            return Err(req.error(ErrorKind::Invalid("an empty metric query".into())));
        }
        let v = self.json(&req).await?;
        parse_query(query, &v).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// Monitors with all these tags and/or whose name contains `name` (`GET /api/v1/monitor`),
    /// with the state of every group.
    pub async fn monitors(
        &self,
        tags: &[String],
        name: Option<&str>,
    ) -> Result<Vec<Monitor>, IntegrationError> {
        let tags: Vec<&str> = tags
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        let req = Request::get(NAME, "/api/v1/monitor")
            .query("group_states", "all")
            .query_opt("monitor_tags", (!tags.is_empty()).then(|| tags.join(",")))
            .query_opt("name", name.filter(|n| !n.trim().is_empty()));
        let v = self.json(&req).await?;
        let items = v
            .as_array()
            .ok_or_else(|| req.error(ErrorKind::Decode("expected an array of monitors".into())))?;
        Ok(items.iter().map(parse_monitor).collect())
    }

    /// One monitor by ID (`GET /api/v1/monitor/{id}`).
    pub async fn monitor(&self, id: &str) -> Result<Monitor, IntegrationError> {
        let req = Request::get(NAME, format!("/api/v1/monitor/{id}")).query("group_states", "all");
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(req.error(ErrorKind::Invalid(format!(
                "a monitor ID is a number, not {id:?}"
            ))));
        }
        let v = self.json(&req).await?;
        if !v.is_object() || v.get("id").is_none() {
            return Err(req.error(ErrorKind::Decode("not a monitor object".into())));
        }
        Ok(parse_monitor(&v))
    }

    /// Events in `[start, end]` with all these tags (`GET /api/v1/events`): deploys, config
    /// changes, Kubernetes events the agent forwards.
    pub async fn events(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        tags: &[String],
    ) -> Result<Vec<Change>, IntegrationError> {
        let tags: Vec<&str> = tags
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        let req = Request::get(NAME, "/api/v1/events")
            .query("start", secs(start))
            .query("end", secs(end))
            .query_opt("tags", (!tags.is_empty()).then(|| tags.join(",")));
        let v = self.json(&req).await?;
        let items = v
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `events` array".into())))?;
        Ok(items.iter().filter_map(parse_event).collect())
    }

    /// Log events matching `query` in `[from, to]`, newest first, at most `limit`
    /// (`POST /api/v2/logs/events/search`, paged by cursor).
    pub async fn logs_search(
        &self,
        query: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<LogLine>, IntegrationError> {
        let limit = limit.clamp(1, 5000) as usize;
        let mut out: Vec<LogLine> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen: Vec<String> = Vec::new();
        for _ in 0..MAX_LOG_PAGES {
            let mut page = json!({"limit": LOG_PAGE.min(limit as u32)});
            if let Some(c) = &cursor {
                page["cursor"] = json!(c);
            }
            let body = json!({
                "filter": {
                    "query": query,
                    "from": from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    "to": to.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                },
                "sort": "-timestamp",
                "page": page,
            });
            let req = Request::new(NAME, "POST", "/api/v2/logs/events/search")
                .body(RequestBody::Json(body));
            let v = self.json(&req).await?;
            let (lines, next) = parse_logs(&v).map_err(|m| req.error(ErrorKind::Decode(m)))?;
            let empty = lines.is_empty();
            out.extend(lines);
            match next {
                Some(c) if out.len() < limit && !empty && !seen.contains(&c) => {
                    seen.push(c.clone());
                    cursor = Some(c);
                }
                _ => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// Whether the keys work: the API key by `GET /api/v1/validate`, the application key by a
    /// call that needs it (one monitor listed).
    pub async fn check_keys(&self) -> Result<KeyCheck, IntegrationError> {
        let validate = Request::get(NAME, "/api/v1/validate");
        let resp = self.transport.send(&validate).await?;
        let api_key = key_verdict(&resp, "API key", |v| {
            v.get("valid").and_then(Value::as_bool) == Some(true)
        });
        let app = Request::get(NAME, "/api/v1/monitor")
            .query("page", "0")
            .query("page_size", "1");
        let resp = self.transport.send(&app).await?;
        let app_key = if api_key.is_err() {
            Err("not checked: the API key is refused".into())
        } else {
            key_verdict(&resp, "application key", |v| v.is_array())
        };
        Ok(KeyCheck { api_key, app_key })
    }
}

fn key_verdict(resp: &Response, what: &str, ok: impl Fn(&Value) -> bool) -> Result<(), String> {
    let body = match &resp.body {
        super::transport::Body::Json(v) => Some(v),
        super::transport::Body::Text(_) => None,
    };
    match resp.status {
        200..=299 if body.is_some_and(&ok) => Ok(()),
        200..=299 => Err(format!("the {what} check answered something unexpected")),
        401 | 403 => Err(format!(
            "the {what} is refused (HTTP {}): check it belongs to this site's organisation",
            resp.status
        )),
        429 => Err("rate limited (429): try again later".into()),
        s => Err(format!("HTTP {s} checking the {what}")),
    }
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// `key:value` tags as labels; the rest (bare tags) apart.
pub fn tag_labels(tags: &[String]) -> (BTreeMap<String, String>, Vec<String>) {
    let mut labels = BTreeMap::new();
    let mut bare = Vec::new();
    for t in tags {
        match t.split_once(':') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                labels.insert(k.to_string(), v.to_string());
            }
            _ => bare.push(t.clone()),
        }
    }
    (labels, bare)
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses a `/api/v1/query` answer: each series' `pointlist` (`[ms, value|null]`) becomes
/// points in seconds, its `tag_set` (or `scope`) labels. Nulls (no data in a bucket) are dropped.
pub fn parse_query(query: &str, v: &Value) -> Result<Vec<Series>, String> {
    if v.get("status").and_then(Value::as_str) == Some("error") {
        let msg = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("status is error");
        return Err(msg.to_string());
    }
    let series = v
        .get("series")
        .and_then(Value::as_array)
        .ok_or("no `series` array")?;
    Ok(series
        .iter()
        .map(|s| {
            let mut tags = string_list(s.get("tag_set"));
            if tags.is_empty() {
                tags = text(s, "scope")
                    .split(',')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty() && t != "*")
                    .collect();
            }
            let (mut labels, _) = tag_labels(&tags);
            let metric = text(s, "metric");
            if !metric.is_empty() {
                labels.insert("datadog_metric".into(), metric);
            }
            let points = s
                .get("pointlist")
                .and_then(Value::as_array)
                .map(|pl| {
                    pl.iter()
                        .filter_map(|p| {
                            let p = p.as_array()?;
                            let t = p.first()?.as_f64()? / 1000.0;
                            let x = p.get(1)?.as_f64()?;
                            x.is_finite().then_some((t, x))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Series {
                name: query.to_string(),
                labels,
                points,
            }
        })
        .collect())
}

fn threshold(v: &Value, key: &str) -> Option<f64> {
    v.get("options")?.get("thresholds")?.get(key)?.as_f64()
}

fn unix_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let n = v?.as_f64()?;
    // Group timestamps are seconds, event dates too; milliseconds appear in some answers.
    let ms = if n.abs() < 1e11 { n * 1000.0 } else { n };
    Utc.timestamp_millis_opt(ms as i64).single()
}

/// One monitor object of `/api/v1/monitor`.
pub fn parse_monitor(v: &Value) -> Monitor {
    let mut groups: Vec<MonitorGroup> = v
        .get("state")
        .and_then(|s| s.get("groups"))
        .and_then(Value::as_object)
        .map(|g| {
            g.iter()
                .map(|(name, st)| MonitorGroup {
                    name: name.clone(),
                    status: text(st, "status"),
                    last_triggered: unix_time(st.get("last_triggered_ts")),
                })
                .collect()
        })
        .unwrap_or_default();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    Monitor {
        id: v.get("id").and_then(Value::as_u64).unwrap_or_default(),
        name: text(v, "name"),
        kind: text(v, "type"),
        query: text(v, "query"),
        message: text(v, "message"),
        tags: string_list(v.get("tags")),
        overall_state: text(v, "overall_state"),
        critical: threshold(v, "critical"),
        warning: threshold(v, "warning"),
        priority: v.get("priority").and_then(Value::as_u64),
        groups,
    }
}

/// One event of `/api/v1/events` as a change: what it touched (`kube_namespace/kube_deployment`,
/// else the service), when, and its kind from its source and words.
pub fn parse_event(v: &Value) -> Option<Change> {
    let title = text(v, "title");
    if title.is_empty() {
        return None;
    }
    let tags = string_list(v.get("tags"));
    let (labels, _) = tag_labels(&tags);
    let source = text(v, "source_type_name").to_ascii_lowercase();
    let words = format!("{} {}", title, text(v, "text")).to_ascii_lowercase();
    let kind = if words.contains("configmap")
        || words.contains("config change")
        || words.contains("secret")
    {
        ChangeKind::Config
    } else if source == "kubernetes"
        || words.contains("scalingreplicaset")
        || words.contains("rollout")
    {
        ChangeKind::Rollout
    } else {
        ChangeKind::Deployment
    };
    let workload = [
        "kube_deployment",
        "kube_stateful_set",
        "kube_daemon_set",
        "service",
    ]
    .iter()
    .find_map(|k| labels.get(*k))
    .cloned();
    let target = match (labels.get("kube_namespace"), workload) {
        (Some(ns), Some(w)) => format!("{ns}/{w}"),
        (None, Some(w)) => w,
        (Some(ns), None) => ns.clone(),
        (None, None) => String::new(),
    };
    Some(Change {
        kind,
        at: unix_time(v.get("date_happened")),
        id: format!("event {}", text(v, "id")),
        title,
        author: None,
        target,
        url: Some(text(v, "url")).filter(|u| !u.is_empty()),
    })
}

/// A logs search page: its lines (tags as labels, with the Kubernetes ones also under the names
/// pod logs and Loki streams use) and the cursor of the next page.
pub fn parse_logs(v: &Value) -> Result<(Vec<LogLine>, Option<String>), String> {
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("no `data` array")?;
    let lines = data
        .iter()
        .filter_map(|item| {
            let a = item.get("attributes")?;
            let (mut labels, _) = tag_labels(&string_list(a.get("tags")));
            for (from, to) in [
                ("kube_namespace", "namespace"),
                ("pod_name", "pod"),
                ("kube_container_name", "container"),
                ("kube_deployment", "deployment"),
            ] {
                if let Some(x) = labels.get(from).cloned() {
                    labels.entry(to.to_string()).or_insert(x);
                }
            }
            for key in ["service", "status", "host"] {
                let x = text(a, key);
                if !x.is_empty() {
                    labels.entry(key.to_string()).or_insert(x);
                }
            }
            if let Some(service) = labels.get("service").cloned() {
                labels.entry("app".into()).or_insert(service);
            }
            Some(LogLine {
                at: a
                    .get("timestamp")
                    .and_then(Value::as_str)
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&Utc)),
                labels,
                line: text(a, "message"),
            })
        })
        .collect();
    let next = v
        .get("meta")
        .and_then(|m| m.get("page"))
        .and_then(|p| p.get("after"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    Ok((lines, next))
}

/// The metric query a monitor's query evaluates: `avg(last_5m):avg:m{a:b} by {pod} > 80` ->
/// `avg:m{a:b} by {pod}` (the time aggregation and the comparison dropped). None for monitor
/// kinds that are not metric queries (logs, service checks, composites).
pub fn metric_query(monitor_query: &str) -> Option<String> {
    let q = monitor_query.trim();
    let (head, rest) = q.split_once("):")?;
    let window = head.split_once('(')?.1;
    if !window.starts_with("last_") || head.contains('"') {
        return None;
    }
    // The comparison is the last operator outside braces and parentheses.
    let bytes = rest.as_bytes();
    let mut depth = 0i32;
    let mut cut = rest.len();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'{' | b'(' => depth += 1,
            b'}' | b')' => depth -= 1,
            b'>' | b'<' | b'=' | b'!' if depth == 0 => {
                cut = i;
                break;
            }
            _ => {}
        }
    }
    let metric = rest[..cut].trim();
    (!metric.is_empty()).then(|| metric.to_string())
}

/// Tags a monitor's query filters on (`{kube_namespace:shop,kube_deployment:api}`), for scoping
/// events and logs.
pub fn query_tags(monitor_query: &str) -> Vec<String> {
    let Some(start) = monitor_query.find('{') else {
        return Vec::new();
    };
    let Some(len) = monitor_query[start..].find('}') else {
        return Vec::new();
    };
    monitor_query[start + 1..start + len]
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| t.contains(':') && !t.starts_with('!') && !t.contains('*'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_monitor_query_gives_its_metric_query_and_tags() {
        let q = "avg(last_5m):avg:kubernetes.cpu.usage.total{kube_namespace:shop,kube_deployment:api} by {pod_name} > 80";
        assert_eq!(
            metric_query(q).as_deref(),
            Some(
                "avg:kubernetes.cpu.usage.total{kube_namespace:shop,kube_deployment:api} by {pod_name}"
            )
        );
        assert_eq!(
            query_tags(q),
            vec!["kube_namespace:shop", "kube_deployment:api"]
        );
        assert_eq!(
            metric_query("logs(\"status:error\").index(\"*\").rollup(\"count\").last(\"5m\") > 10"),
            None
        );
        assert_eq!(
            metric_query("\"http.can_connect\".over(\"*\").last(2).count_by_status()"),
            None
        );
    }

    #[test]
    fn query_points_become_seconds_and_nulls_are_dropped() {
        let v = json!({"status": "ok", "series": [{
            "metric": "kubernetes.cpu.usage.total", "tag_set": ["pod_name:api-1"],
            "pointlist": [[1000.0, 1.5], [2000.0, null], [3000.0, 2.5]]
        }]});
        let s = parse_query("avg:kubernetes.cpu.usage.total{*}", &v).unwrap_or_default();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points, vec![(1.0, 1.5), (3.0, 2.5)]);
        assert_eq!(
            s[0].labels.get("pod_name").map(String::as_str),
            Some("api-1")
        );
        assert!(parse_query("q", &json!({"status": "error", "error": "bad query"})).is_err());
        assert!(parse_query("q", &json!({})).is_err());
    }
}
