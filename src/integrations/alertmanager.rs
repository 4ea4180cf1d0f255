//! Alertmanager API v2 client: alerts and alert groups (with silenced/inhibited state), silences.

use super::error::{ErrorKind, IntegrationError};
use super::prometheus::{parse_time, string_map};
use super::transport::{Request, RequestBody, Transport};
use crate::model::AlertInfo;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "alertmanager";

/// Which alerts to list. Matchers are Alertmanager filter expressions such as `alertname="X"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlertFilter {
    pub matchers: Vec<String>,
    pub active: Option<bool>,
    pub silenced: Option<bool>,
    pub inhibited: Option<bool>,
}

impl AlertFilter {
    /// Alerts whose label `name` equals `value`.
    pub fn label(mut self, name: &str, value: &str) -> Self {
        self.matchers
            .push(format!("{name}=\"{}\"", value.replace('"', "\\\"")));
        self
    }
}

/// A new silence: exact label matchers for a time window.
#[derive(Clone, Debug, PartialEq)]
pub struct SilenceSpec {
    pub matchers: Vec<(String, String)>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub created_by: String,
    pub comment: String,
}

/// One alert as `/api/v2/alerts/groups` reports it, with why it is suppressed.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GroupedAlert {
    pub fingerprint: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `active`, `suppressed` or `unprocessed`.
    pub state: String,
    pub silenced_by: Vec<String>,
    pub inhibited_by: Vec<String>,
    pub starts_at: Option<DateTime<Utc>>,
    pub generator_url: String,
}

/// An Alertmanager aggregation group: its group labels, receiver and alerts.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AlertGroup {
    pub labels: BTreeMap<String, String>,
    pub receiver: String,
    pub alerts: Vec<GroupedAlert>,
}

/// A silence as `/api/v2/silences` reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Silence {
    pub id: String,
    /// `active`, `pending` or `expired`.
    pub state: String,
    pub matchers: Vec<(String, String)>,
    pub created_by: String,
    pub comment: String,
    pub ends_at: Option<DateTime<Utc>>,
}

#[derive(Clone)]
pub struct AlertmanagerClient {
    transport: Arc<dyn Transport>,
}

impl AlertmanagerClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        AlertmanagerClient { transport }
    }

    pub async fn alerts(&self, filter: &AlertFilter) -> Result<Vec<AlertInfo>, IntegrationError> {
        let mut req = Request::get(NAME, "/api/v2/alerts");
        for m in &filter.matchers {
            req = req.query("filter", m.clone());
        }
        let flag = |b: Option<bool>| b.map(|b| b.to_string());
        req = req
            .query_opt("active", flag(filter.active))
            .query_opt("silenced", flag(filter.silenced))
            .query_opt("inhibited", flag(filter.inhibited));
        let v = self.transport.send(&req).await?.json(&req)?;
        let items = v
            .as_array()
            .ok_or_else(|| req.error(ErrorKind::Decode("expected an array of alerts".into())))?;
        Ok(items.iter().map(parse_alert).collect())
    }

    /// Alert groups as Alertmanager aggregates them for its receivers, suppressed alerts included.
    pub async fn alert_groups(&self) -> Result<Vec<AlertGroup>, IntegrationError> {
        let req = Request::get(NAME, "/api/v2/alerts/groups");
        let v = self.transport.send(&req).await?.json(&req)?;
        let groups = v
            .as_array()
            .ok_or_else(|| req.error(ErrorKind::Decode("expected an array of groups".into())))?;
        Ok(groups
            .iter()
            .map(|g| AlertGroup {
                labels: string_map(g.get("labels")),
                receiver: g
                    .get("receiver")
                    .and_then(|r| r.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                alerts: g
                    .get("alerts")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(parse_grouped).collect())
                    .unwrap_or_default(),
            })
            .collect())
    }

    /// Every silence Alertmanager knows, expired ones included.
    pub async fn silences(&self) -> Result<Vec<Silence>, IntegrationError> {
        let req = Request::get(NAME, "/api/v2/silences");
        let v = self.transport.send(&req).await?.json(&req)?;
        let items = v
            .as_array()
            .ok_or_else(|| req.error(ErrorKind::Decode("expected an array of silences".into())))?;
        Ok(items
            .iter()
            .map(|s| Silence {
                id: str_at(s, "id"),
                state: s
                    .get("status")
                    .map(|st| str_at(st, "state"))
                    .unwrap_or_default(),
                matchers: s
                    .get("matchers")
                    .and_then(Value::as_array)
                    .map(|ms| {
                        ms.iter()
                            .map(|m| (str_at(m, "name"), str_at(m, "value")))
                            .collect()
                    })
                    .unwrap_or_default(),
                created_by: str_at(s, "createdBy"),
                comment: str_at(s, "comment"),
                ends_at: s.get("endsAt").and_then(Value::as_str).and_then(parse_time),
            })
            .collect())
    }

    /// Creates a silence and returns its id.
    pub async fn create_silence(&self, spec: &SilenceSpec) -> Result<String, IntegrationError> {
        let matchers: Vec<Value> = spec
            .matchers
            .iter()
            .map(|(n, v)| json!({"name": n, "value": v, "isRegex": false, "isEqual": true}))
            .collect();
        let body = json!({
            "matchers": matchers,
            "startsAt": spec.starts_at.to_rfc3339(),
            "endsAt": spec.ends_at.to_rfc3339(),
            "createdBy": spec.created_by,
            "comment": spec.comment,
        });
        let req = Request::new(NAME, "POST", "/api/v2/silences").body(RequestBody::Json(body));
        if spec.matchers.is_empty() {
            return Err(req.error(ErrorKind::Invalid(
                "a silence needs at least one matcher".into(),
            )));
        }
        let v = self.transport.send(&req).await?.json(&req)?;
        v.get("silenceID")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `silenceID` in answer".into())))
    }

    /// Expires (deletes) a silence.
    pub async fn expire_silence(&self, id: &str) -> Result<(), IntegrationError> {
        let req = Request::new(NAME, "DELETE", format!("/api/v2/silence/{id}"));
        if id.is_empty() || id.contains('/') {
            return Err(req.error(ErrorKind::Invalid(format!("bad silence id {id:?}"))));
        }
        self.transport.send(&req).await?.success(&req).map(|_| ())
    }
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings_at(v: Option<&Value>, key: &str) -> Vec<String> {
    v.and_then(|s| s.get(key))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn parse_grouped(a: &Value) -> GroupedAlert {
    let status = a.get("status");
    GroupedAlert {
        fingerprint: str_at(a, "fingerprint"),
        labels: string_map(a.get("labels")),
        annotations: string_map(a.get("annotations")),
        state: status.map(|s| str_at(s, "state")).unwrap_or_default(),
        silenced_by: strings_at(status, "silencedBy"),
        inhibited_by: strings_at(status, "inhibitedBy"),
        starts_at: a
            .get("startsAt")
            .and_then(Value::as_str)
            .and_then(parse_time),
        generator_url: str_at(a, "generatorURL"),
    }
}

fn parse_alert(a: &Value) -> AlertInfo {
    let labels = string_map(a.get("labels"));
    let status = a.get("status");
    let mut state = status
        .and_then(|s| s.get("state"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    if state == "suppressed" {
        // Say why, since silenced and inhibited call for different reactions.
        let nonempty = |k: &str| {
            status
                .and_then(|s| s.get(k))
                .and_then(Value::as_array)
                .is_some_and(|v| !v.is_empty())
        };
        if nonempty("silencedBy") {
            state = "silenced".into();
        } else if nonempty("inhibitedBy") {
            state = "inhibited".into();
        }
    }
    AlertInfo {
        name: labels.get("alertname").cloned().unwrap_or_default(),
        state,
        annotations: string_map(a.get("annotations")),
        active_at: a
            .get("startsAt")
            .and_then(Value::as_str)
            .and_then(parse_time),
        value: None,
        labels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppressed_alerts_say_why() {
        let a = json!({"labels": {"alertname": "X"}, "status": {"state": "suppressed", "silencedBy": ["id"], "inhibitedBy": []},
            "startsAt": "2026-04-18T10:00:00Z"});
        let info = parse_alert(&a);
        assert_eq!(info.state, "silenced");
        assert_eq!(info.name, "X");
        assert!(info.active_at.is_some());
    }

    #[test]
    fn grouped_alerts_keep_fingerprint_and_suppressors() {
        let a = json!({"fingerprint": "abc", "labels": {"alertname": "X"},
            "status": {"state": "suppressed", "silencedBy": ["s1"], "inhibitedBy": ["i1", 3]},
            "startsAt": "bad time"});
        let g = parse_grouped(&a);
        assert_eq!(g.fingerprint, "abc");
        assert_eq!(g.silenced_by, vec!["s1"]);
        assert_eq!(g.inhibited_by, vec!["i1"]);
        assert_eq!(g.starts_at, None);
    }
}
