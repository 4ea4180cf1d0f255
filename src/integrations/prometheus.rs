//! Prometheus HTTP API client: instant and range queries, rules and alerts, parsed into model facts.

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Request, Transport};
use crate::model::{AlertInfo, RuleInfo, Series};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "prometheus";

#[derive(Clone)]
pub struct PrometheusClient {
    transport: Arc<dyn Transport>,
}

impl PrometheusClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        PrometheusClient { transport }
    }

    async fn data(&self, req: Request) -> Result<Value, IntegrationError> {
        let resp = self.transport.send(&req).await?;
        let v = resp.json(&req)?;
        if v.get("status").and_then(Value::as_str) != Some("success") {
            let msg = v
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("status is not success");
            return Err(req.error(ErrorKind::Decode(msg.to_string())));
        }
        v.get("data")
            .cloned()
            .ok_or_else(|| req.error(ErrorKind::Decode("no `data` in response".into())))
    }

    /// Instant query at `at`.
    pub async fn query(
        &self,
        expr: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<Series>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/query")
            .query("query", expr)
            .query("time", unix(at));
        let data = self.data(req.clone()).await?;
        parse_result(expr, &data).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// Range query over `[start, end]` with `step_secs` resolution.
    pub async fn query_range(
        &self,
        expr: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_secs: u64,
    ) -> Result<Vec<Series>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/query_range")
            .query("query", expr)
            .query("start", unix(start))
            .query("end", unix(end))
            .query("step", step_secs.max(1).to_string());
        let data = self.data(req.clone()).await?;
        parse_result(expr, &data).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// The series any of the selectors matches over `[start, end]`: metric names and label sets,
    /// no samples.
    pub async fn series(
        &self,
        selectors: &[&str],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Series>, IntegrationError> {
        let mut req = Request::get(NAME, "/api/v1/series");
        for sel in selectors.iter().filter(|s| !s.trim().is_empty()) {
            req = req.query("match[]", sel.trim());
        }
        if req.query.is_empty() {
            return Err(req.error(ErrorKind::Invalid("no series selector".into())));
        }
        let req = req.query("start", unix(start)).query("end", unix(end));
        let data = self.data(req.clone()).await?;
        parse_series(&data).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// Metric metadata (type, unit, help), of one metric or all. Each metric is a series with no
    /// samples whose labels are `type`, `unit` and `help`.
    pub async fn metadata(&self, metric: Option<&str>) -> Result<Vec<Series>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/metadata").query_opt("metric", metric);
        let data = self.data(req.clone()).await?;
        parse_metadata(&data).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// Alerting and recording rules.
    pub async fn rules(&self) -> Result<Vec<RuleInfo>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/rules");
        let data = self.data(req.clone()).await?;
        parse_rules(&data).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    /// Alerts Prometheus currently evaluates as pending or firing.
    pub async fn alerts(&self) -> Result<Vec<AlertInfo>, IntegrationError> {
        let req = Request::get(NAME, "/api/v1/alerts");
        let data = self.data(req.clone()).await?;
        let alerts = data
            .get("alerts")
            .and_then(Value::as_array)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `data.alerts` array".into())))?;
        Ok(alerts
            .iter()
            .map(|a| {
                let labels = string_map(a.get("labels"));
                AlertInfo {
                    name: labels.get("alertname").cloned().unwrap_or_default(),
                    state: str_of(a, "state"),
                    annotations: string_map(a.get("annotations")),
                    active_at: a
                        .get("activeAt")
                        .and_then(Value::as_str)
                        .and_then(parse_time),
                    value: a.get("value").map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    }),
                    labels,
                }
            })
            .collect())
    }
}

fn unix(t: DateTime<Utc>) -> String {
    let ms = t.timestamp_millis();
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        format!("{:.3}", ms as f64 / 1000.0)
    }
}

pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(crate) fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// A JSON object of strings as a map; non-string values are rendered.
pub(crate) fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), s)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One `[unix, "value"]` sample; non-finite values are dropped (they cannot round-trip through JSON).
fn sample(v: &Value) -> Option<(f64, f64)> {
    let pair = v.as_array()?;
    let t = pair.first()?.as_f64()?;
    let x: f64 = match pair.get(1)? {
        Value::String(s) => s.parse().ok()?,
        other => other.as_f64()?,
    };
    x.is_finite().then_some((t, x))
}

/// Parses `data` of a query answer (matrix, vector or scalar) into series.
pub fn parse_result(expr: &str, data: &Value) -> Result<Vec<Series>, String> {
    let kind = data
        .get("resultType")
        .and_then(Value::as_str)
        .ok_or("no `resultType`")?;
    let result = data.get("result").ok_or("no `result`")?;
    match kind {
        "matrix" | "vector" => {
            let items = result.as_array().ok_or("`result` is not an array")?;
            Ok(items
                .iter()
                .map(|item| {
                    let mut labels = string_map(item.get("metric"));
                    let name = labels
                        .remove("__name__")
                        .unwrap_or_else(|| expr.to_string());
                    let points = match (item.get("values"), item.get("value")) {
                        (Some(Value::Array(vals)), _) => vals.iter().filter_map(sample).collect(),
                        (_, Some(v)) => sample(v).into_iter().collect(),
                        _ => Vec::new(),
                    };
                    Series {
                        name,
                        labels,
                        points,
                    }
                })
                .collect())
        }
        "scalar" | "string" => Ok(vec![Series {
            name: expr.to_string(),
            labels: BTreeMap::new(),
            points: sample(result).into_iter().collect(),
        }]),
        other => Err(format!("unknown resultType {other:?}")),
    }
}

/// Parses `data` of `/api/v1/series`: an array of label sets.
pub fn parse_series(data: &Value) -> Result<Vec<Series>, String> {
    let items = data.as_array().ok_or("`data` is not an array")?;
    Ok(items
        .iter()
        .filter_map(|item| {
            let mut labels = string_map(Some(item));
            let name = labels.remove("__name__")?;
            Some(Series {
                name,
                labels,
                points: Vec::new(),
            })
        })
        .collect())
}

/// Parses `data` of `/api/v1/metadata`: metric -> [{type, help, unit}], the first entry kept.
pub fn parse_metadata(data: &Value) -> Result<Vec<Series>, String> {
    let map = data.as_object().ok_or("`data` is not an object")?;
    Ok(map
        .iter()
        .filter_map(|(name, entries)| {
            let first = entries.as_array()?.first()?;
            let labels = ["type", "unit", "help"]
                .iter()
                .filter_map(|k| {
                    first
                        .get(*k)
                        .and_then(Value::as_str)
                        .filter(|v| !v.is_empty())
                        .map(|v| (k.to_string(), v.to_string()))
                })
                .collect();
            Some(Series {
                name: name.clone(),
                labels,
                points: Vec::new(),
            })
        })
        .collect())
}

/// Parses `data` of `/api/v1/rules`.
pub fn parse_rules(data: &Value) -> Result<Vec<RuleInfo>, String> {
    let groups = data
        .get("groups")
        .and_then(Value::as_array)
        .ok_or("no `groups` array")?;
    let mut out = Vec::new();
    for g in groups {
        let group = str_of(g, "name");
        for r in g
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push(RuleInfo {
                name: str_of(r, "name"),
                group: group.clone(),
                query: str_of(r, "query"),
                rule_type: str_of(r, "type"),
                state: r.get("state").and_then(Value::as_str).map(str::to_string),
                duration_secs: r.get("duration").and_then(Value::as_f64),
                labels: string_map(r.get("labels")),
                annotations: string_map(r.get("annotations")),
                health: r.get("health").and_then(Value::as_str).map(str::to_string),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matrix_becomes_series_without_name_label() {
        let data = json!({"resultType": "matrix", "result": [
            {"metric": {"__name__": "up", "job": "api"}, "values": [[1.0, "1"], [2.0, "NaN"], [3.0, "0"]]}
        ]});
        let s = parse_result("up", &data).unwrap_or_default();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name, "up");
        assert_eq!(s[0].labels.get("job").map(String::as_str), Some("api"));
        assert_eq!(s[0].points, vec![(1.0, 1.0), (3.0, 0.0)]);
    }

    #[test]
    fn unknown_result_type_is_an_error() {
        assert!(parse_result("x", &json!({"resultType": "weird", "result": []})).is_err());
    }
}
