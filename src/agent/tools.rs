//! The tool registry: one seam through which every read and every action reaches the world.
//!
//! Tools are named `<integration>.<verb>` and take JSON params, so runbook steps, specialists
//! and tests all speak the same language; tests swap in slow or failing fakes through [`Tools`].

use crate::model::Action;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use std::collections::BTreeMap;

/// Parameters of a tool call, as recorded in `ToolCalled`.
pub type Params = BTreeMap<String, serde_json::Value>;

/// What a tool returned, already parsed into model facts: the facts the session records.
pub use crate::model::Facts as ToolOutput;

/// Tool sources joined at run time: each source's name with the catalog names it added, or why
/// it could not be reached.
pub type Extensions = Vec<(String, Result<Vec<String>, String>)>;

/// Everything the agent asks of the outside world.
pub trait Tools: Send + Sync {
    /// The world's clock: a case's `now`, or the real time.
    fn now(&self) -> DateTime<Utc>;
    /// Whether an integration is configured (`kubernetes`, `prometheus`, `loki`, `github`, ...).
    fn has(&self, integration: &str) -> bool;
    /// The Kubernetes clusters by name, the default first; empty for one unnamed cluster.
    fn clusters(&self) -> Vec<String> {
        Vec::new()
    }
    /// Run a read tool. Errors are one clear line; they become `ToolFailed`, never a panic.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        params: &'a Params,
    ) -> BoxFuture<'a, Result<ToolOutput, String>>;
    /// Run a mutating action (only ever called after policy allowed it).
    fn execute<'a>(&'a self, action: &'a Action) -> BoxFuture<'a, Result<String, String>>;
    /// Reach the tool sources that join the catalog at run time (MCP servers) and register their
    /// tools: each source's name with the catalog names it added, or why it could not.
    fn extend_catalog(&self) -> BoxFuture<'_, Extensions> {
        Box::pin(async { Vec::new() })
    }
    /// The kinds this run knows: the built-in table, and the tools [`Tools::extend_catalog`]
    /// registered.
    fn catalog(&self) -> crate::model::catalog::Catalog {
        crate::model::catalog::Catalog::default()
    }
    /// The credential reference `integration` needs before it can be asked anything, when the
    /// operator has not decided on it yet.
    fn pending_credential(&self, _integration: &str) -> Option<String> {
        None
    }
    /// Passes the operator's decision on a credential reference to the world.
    fn decide_credential(&self, _reference: &str, _approved: bool, _reason: &str) {}

    /// Where the investigation's ticket may be filed (kind, target, configured params); none
    /// unless a tracker is configured.
    fn ticket_sinks(&self) -> Vec<crate::world::TicketSink> {
        Vec::new()
    }
}

/// Read a string param.
pub fn p_str<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params
        .get(key)
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
}

/// Read a comma-separated list param (`"a, b,c"`), empty items dropped.
pub fn p_list(params: &Params, key: &str) -> Vec<String> {
    p_str(params, key)
        .map(|v| {
            v.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Read a numeric param (numbers or numeric strings, as templated runbook params are strings).
pub fn p_f64(params: &Params, key: &str) -> Option<f64> {
    match params.get(key)? {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Read a boolean param (`true`/`false` or the strings).
pub fn p_bool(params: &Params, key: &str) -> Option<bool> {
    match params.get(key)? {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::String(s) => match s.trim() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Read a time param: RFC 3339 text or unix seconds.
pub fn p_time(params: &Params, key: &str) -> Option<DateTime<Utc>> {
    match params.get(key)? {
        serde_json::Value::String(s) => DateTime::parse_from_rfc3339(s.trim())
            .ok()
            .map(|d| d.with_timezone(&Utc))
            .or_else(|| {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|f| DateTime::from_timestamp(f as i64, 0))
            }),
        serde_json::Value::Number(n) => n
            .as_f64()
            .and_then(|f| DateTime::from_timestamp(f as i64, 0)),
        _ => None,
    }
}

/// Build params from pairs, skipping `None`s.
pub fn params<const N: usize>(pairs: [(&str, Option<serde_json::Value>); N]) -> Params {
    pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect()
}

/// `Some(json string)` for params builders.
pub fn s(v: impl Into<String>) -> Option<serde_json::Value> {
    Some(serde_json::Value::String(v.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_read_strings_and_numbers() {
        let p = params([
            ("namespace", s("payments")),
            ("tail", Some(serde_json::json!(50))),
            ("step", s("30")),
            ("previous", s("true")),
            ("start", s("2026-01-01T00:00:00Z")),
            ("missing", None),
        ]);
        assert_eq!(p_str(&p, "namespace"), Some("payments"));
        assert_eq!(p_f64(&p, "tail"), Some(50.0));
        assert_eq!(p_f64(&p, "step"), Some(30.0));
        assert_eq!(p_bool(&p, "previous"), Some(true));
        assert!(p_time(&p, "start").is_some());
        assert!(!p.contains_key("missing"));
    }
}
