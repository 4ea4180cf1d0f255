//! Loki client: `query_range` over log streams, with limit and direction, parsed into log lines.

use super::error::{ErrorKind, IntegrationError};
use super::prometheus::string_map;
use super::transport::{Request, Transport};
use crate::model::LogLine;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use std::sync::Arc;

const NAME: &str = "loki";

/// Which end of the window comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Direction {
    /// Newest first (Loki's default).
    #[default]
    Backward,
    Forward,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Backward => "backward",
            Direction::Forward => "forward",
        }
    }
}

#[derive(Clone)]
pub struct LokiClient {
    transport: Arc<dyn Transport>,
}

impl LokiClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        LokiClient { transport }
    }

    /// Log lines matching `logql` in `[start, end]`, at most `limit`, ordered by `direction`.
    pub async fn query_range(
        &self,
        logql: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        limit: u32,
        direction: Direction,
    ) -> Result<Vec<LogLine>, IntegrationError> {
        let nanos = |t: DateTime<Utc>| {
            t.timestamp_nanos_opt()
                .unwrap_or(t.timestamp().saturating_mul(1_000_000_000))
                .to_string()
        };
        let req = Request::get(NAME, "/loki/api/v1/query_range")
            .query("query", logql)
            .query("start", nanos(start))
            .query("end", nanos(end))
            .query("limit", limit.to_string())
            .query("direction", direction.as_str());
        let v = self.transport.send(&req).await?.json(&req)?;
        parse_streams(&v, limit, direction).map_err(|m| req.error(ErrorKind::Decode(m)))
    }
}

/// Parses a `query_range` answer of `resultType: streams`; sorts by time and applies the limit
/// (a recorded answer may hold more lines than this request asked for).
pub fn parse_streams(v: &Value, limit: u32, direction: Direction) -> Result<Vec<LogLine>, String> {
    if let Some(status) = v.get("status").and_then(Value::as_str)
        && status != "success"
    {
        return Err(format!("status is {status:?}"));
    }
    let data = v.get("data").ok_or("no `data`")?;
    let kind = data.get("resultType").and_then(Value::as_str).unwrap_or("");
    if kind != "streams" {
        return Err(format!("expected resultType streams, got {kind:?}"));
    }
    let result = data
        .get("result")
        .and_then(Value::as_array)
        .ok_or("no `data.result` array")?;
    let mut lines: Vec<(i128, LogLine)> = Vec::new();
    for stream in result {
        let labels = string_map(stream.get("stream"));
        for entry in stream
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(pair) = entry.as_array() else {
                return Err("a stream value is not a [time, line] pair".into());
            };
            let ns: i128 = pair
                .first()
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .ok_or("a stream value has no nanosecond timestamp")?;
            let line = pair
                .get(1)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let secs = (ns / 1_000_000_000) as i64;
            let sub = (ns % 1_000_000_000) as u32;
            // A line that carries its own time was stamped by the process when it happened;
            // the entry's time is when it was shipped, which can be much later.
            let own = super::kubernetes::stamped_at(&line);
            lines.push((
                ns,
                LogLine {
                    at: own.or_else(|| Utc.timestamp_opt(secs, sub).single()),
                    labels: labels.clone(),
                    line,
                },
            ));
        }
    }
    // Stable sort keeps each stream's own order for equal timestamps.
    match direction {
        Direction::Forward => lines.sort_by_key(|(ns, _)| *ns),
        Direction::Backward => lines.sort_by_key(|(ns, _)| std::cmp::Reverse(*ns)),
    }
    Ok(lines
        .into_iter()
        .take(limit as usize)
        .map(|(_, l)| l)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn streams_are_merged_sorted_and_limited() {
        let v = json!({"status": "success", "data": {"resultType": "streams", "result": [
            {"stream": {"app": "a"}, "values": [["3000000000", "third"], ["1000000000", "first"]]},
            {"stream": {"app": "b"}, "values": [["2000000000", "second"]]}
        ]}});
        let fwd = parse_streams(&v, 10, Direction::Forward).unwrap_or_default();
        let texts: Vec<&str> = fwd.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(texts, ["first", "second", "third"]);
        let back = parse_streams(&v, 2, Direction::Backward).unwrap_or_default();
        let texts: Vec<&str> = back.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(texts, ["third", "second"]);
        assert_eq!(back[1].labels.get("app").map(String::as_str), Some("b"));
    }

    #[test]
    fn a_line_stamped_by_its_process_keeps_that_time() {
        // Shipped at 14:31:35, logged at 13:54:02.
        let v = json!({"status": "success", "data": {"resultType": "streams", "result": [
            {"stream": {"app": "a"}, "values": [
                ["1773239495000000000", "2026-03-11T13:54:02Z ERR dial tcp 10.1.1.70:8086: connect: connection refused"],
                ["1773239496000000000", "no time of its own"],
                ["1773239497000000000", "{\"ts\":\"2026-03-11T13:55:00Z\",\"msg\":\"retrying\"}"]
            ]}
        ]}});
        let lines = parse_streams(&v, 10, Direction::Forward).unwrap_or_default();
        let at: Vec<String> = lines
            .iter()
            .map(|l| l.at.map(|t| t.to_rfc3339()).unwrap_or_default())
            .collect();
        assert_eq!(
            at,
            [
                "2026-03-11T13:54:02+00:00",
                "2026-03-11T14:31:36+00:00",
                "2026-03-11T13:55:00+00:00"
            ]
        );
        assert!(lines[0].line.starts_with("2026-03-11T13:54:02Z ERR"));
    }
}
