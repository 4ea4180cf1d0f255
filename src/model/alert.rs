//! Alerts: the Alertmanager webhook payload (version 4) and the alert an investigation starts from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    #[default]
    Firing,
    Resolved,
}

/// Labels (or Datadog tags) an alert names its Kubernetes cluster by.
pub const CLUSTER_KEYS: &[&str] = &[
    "cluster",
    "cluster_name",
    "kube_cluster_name",
    "k8s_cluster_name",
];

/// One alert, as carried in a webhook payload.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    #[serde(default)]
    pub status: AlertStatus,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<DateTime<Utc>>,
    #[serde(
        default,
        rename = "generatorURL",
        skip_serializing_if = "String::is_empty"
    )]
    pub generator_url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
}

impl Alert {
    /// Its Alertmanager fingerprint, or the one Alertmanager would give its labels.
    pub fn fingerprint_or_computed(&self) -> String {
        if self.fingerprint.is_empty() {
            label_fingerprint(&self.labels)
        } else {
            self.fingerprint.clone()
        }
    }

    pub fn name(&self) -> &str {
        self.labels
            .get("alertname")
            .map(String::as_str)
            .unwrap_or("alert")
    }

    pub fn severity(&self) -> &str {
        self.labels
            .get("severity")
            .map(String::as_str)
            .unwrap_or("unknown")
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// The expression the alert was generated from: PromQL (`g0.expr` in the generator URL), or a
    /// Datadog monitor's query (see [`Alert::monitor_query`]), if any.
    pub fn expr(&self) -> Option<String> {
        let from_url = self.generator_url.split_once('?').and_then(|(_, query)| {
            query.split('&').find_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                (k == "g0.expr").then(|| percent_decode(v))
            })
        });
        from_url.or_else(|| self.monitor_query().map(str::to_string))
    }

    /// The query of the Datadog monitor that raised the alert, when a monitor did.
    pub fn monitor_query(&self) -> Option<&str> {
        self.annotation(super::monitor::MONITOR_QUERY)
            .filter(|q| !q.trim().is_empty())
    }

    /// A one-line title: the summary annotation, else the alert name.
    pub fn title(&self) -> String {
        match self.annotation("summary") {
            Some(s) if !s.is_empty() => format!("{}: {}", self.name(), s),
            _ => self.name().to_string(),
        }
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Alertmanager webhook payload, version 4.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WebhookPayload {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub group_key: String,
    #[serde(default)]
    pub status: AlertStatus,
    #[serde(default)]
    pub receiver: String,
    #[serde(default)]
    pub group_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub common_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub common_annotations: BTreeMap<String, String>,
    #[serde(default, rename = "externalURL")]
    pub external_url: String,
    #[serde(default)]
    pub alerts: Vec<Alert>,
}

/// Why a webhook payload was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError(pub String);

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PayloadError {}

impl WebhookPayload {
    /// Parses and checks an Alertmanager webhook payload (version 4). `{}`, `[]` or a payload
    /// without alerts is refused: there would be nothing to investigate, and an investigation of
    /// a made-up empty alert would look like a real one.
    pub fn parse(text: &str) -> Result<WebhookPayload, PayloadError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            PayloadError(format!(
                "not JSON (line {}, column {}): {e}",
                e.line(),
                e.column()
            ))
        })?;
        if !value.is_object() {
            return Err(PayloadError(format!(
                "expected a JSON object with an `alerts` array, found {}",
                json_kind(&value)
            )));
        }
        let payload: WebhookPayload = serde_json::from_value(value)
            .map_err(|e| PayloadError(format!("not an Alertmanager webhook payload: {e}")))?;
        payload.validate()?;
        Ok(payload)
    }

    /// Checks what serde cannot: version 4 (when given), at least one alert, labels on each.
    pub fn validate(&self) -> Result<(), PayloadError> {
        if !self.version.is_empty() && self.version != "4" {
            return Err(PayloadError(format!(
                "webhook payload version {:?} is not supported (expected \"4\")",
                self.version.chars().take(20).collect::<String>()
            )));
        }
        if self.alerts.is_empty() {
            return Err(PayloadError(
                "the payload has no alerts: a version 4 webhook carries at least one in `alerts`"
                    .into(),
            ));
        }
        if let Some(i) = self.alerts.iter().position(|a| a.labels.is_empty()) {
            return Err(PayloadError(format!(
                "alerts[{i}] has no labels (an alert is identified by its labels, e.g. alertname)"
            )));
        }
        Ok(())
    }

    /// The alert to investigate: the first firing one, else the first, else one built from the common labels.
    pub fn primary(&self) -> Alert {
        self.alerts
            .iter()
            .find(|a| a.status == AlertStatus::Firing)
            .or_else(|| self.alerts.first())
            .cloned()
            .unwrap_or_else(|| Alert {
                status: self.status,
                labels: self.common_labels.clone(),
                annotations: self.common_annotations.clone(),
                ..Alert::default()
            })
    }
}

/// The fingerprint Alertmanager gives a label set (FNV-1a 64 over sorted `name 0xff value 0xff`).
pub fn label_fingerprint(labels: &BTreeMap<String, String>) -> String {
    const OFFSET: u64 = 14_695_981_039_346_656_037;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET;
    let mut add = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(PRIME);
        }
    };
    for (name, value) in labels {
        add(name.as_bytes());
        add(&[0xff]);
        add(value.as_bytes());
        add(&[0xff]);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expr_is_decoded_from_generator_url() {
        let alert = Alert {
            generator_url: "http://prom:9090/graph?g0.expr=rate%28http_errors_total%5B5m%5D%29+%3E+0.05&g0.tab=1".into(),
            ..Alert::default()
        };
        assert_eq!(
            alert.expr().as_deref(),
            Some("rate(http_errors_total[5m]) > 0.05")
        );
    }

    #[test]
    fn empty_and_non_object_payloads_are_refused() {
        for (text, want) in [
            ("{}", "no alerts"),
            ("[]", "found an array"),
            ("null", "found null"),
            (r#"{"alerts": []}"#, "no alerts"),
            (r#"{"alerts": [{}]}"#, "alerts[0] has no labels"),
            (
                r#"{"version": "3", "alerts": [{"labels": {"a": "b"}}]}"#,
                "version",
            ),
            ("{\"alerts\": [", "not JSON"),
        ] {
            let err = WebhookPayload::parse(text)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
        let ok =
            WebhookPayload::parse(r#"{"version":"4","alerts":[{"labels":{"alertname":"X"}}]}"#);
        assert_eq!(ok.map(|p| p.primary().name().to_string()), Ok("X".into()));
    }

    #[test]
    fn broken_percent_escape_is_kept() {
        assert_eq!(percent_decode("a%zzb%4"), "a%zzb%4");
    }
}
