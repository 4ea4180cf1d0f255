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

    /// The PromQL expression the alert was generated from (`g0.expr` in the generator URL), if any.
    pub fn expr(&self) -> Option<String> {
        let query = self.generator_url.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == "g0.expr").then(|| percent_decode(v))
        })
    }

    /// A one-line title: the summary annotation, else the alert name.
    pub fn title(&self) -> String {
        match self.annotation("summary") {
            Some(s) if !s.is_empty() => format!("{}: {}", self.name(), s),
            _ => self.name().to_string(),
        }
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

impl WebhookPayload {
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
    fn broken_percent_escape_is_kept() {
        assert_eq!(percent_decode("a%zzb%4"), "a%zzb%4");
    }
}
