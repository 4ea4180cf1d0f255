//! The alert inbox: firing alerts from every configured source, deduplicated by fingerprint, grouped and filtered.

pub mod actions;
pub mod dedup;
pub mod filter;
pub mod group;
pub mod sessions;
pub mod sources;
pub mod watch;

pub use dedup::{Claim, Deduper, fingerprint};
pub use filter::{Filter, FilterError, Matcher};
pub use group::{Group, group_alerts, label_overview};
pub use sources::{Backoff, Snapshot, SourceHealth, Sources};

use crate::model::{Alert, AlertStatus, WebhookPayload};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where an alert comes from.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Alertmanager,
    Prometheus,
    PagerDuty,
    /// Datadog monitors in Alert, Warn or No Data.
    Datadog,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Alertmanager => "alertmanager",
            Source::Prometheus => "prometheus",
            Source::PagerDuty => "pagerduty",
            Source::Datadog => "datadog",
        }
    }
}

/// What state an alert is in, as its source reports it.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    /// Firing and not suppressed (Alertmanager `active`, Prometheus `firing`).
    Firing,
    /// Muted by a silence.
    Silenced,
    /// Muted by an inhibition rule.
    Inhibited,
    /// A PagerDuty incident nobody has acknowledged.
    Triggered,
    /// A PagerDuty incident someone acknowledged.
    Acknowledged,
}

impl AlertState {
    pub fn name(self) -> &'static str {
        match self {
            AlertState::Firing => "firing",
            AlertState::Silenced => "silenced",
            AlertState::Inhibited => "inhibited",
            AlertState::Triggered => "triggered",
            AlertState::Acknowledged => "acknowledged",
        }
    }

    /// Whether someone still has to look at it (not muted, not acknowledged).
    pub fn needs_attention(self) -> bool {
        matches!(self, AlertState::Firing | AlertState::Triggered)
    }
}

/// One alert in the inbox, whatever its source.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct InboxAlert {
    pub source: Source,
    /// The `alertname` label; for a PagerDuty incident, its title.
    pub alertname: String,
    /// One line for people: the summary annotation or the incident title.
    pub title: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub state: AlertState,
    pub starts_at: Option<DateTime<Utc>>,
    pub fingerprint: String,
    /// The `severity` label, or a PagerDuty incident's urgency; empty when the source says nothing.
    pub severity: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub silenced_by: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inhibited_by: Vec<String>,
    /// Prometheus graph link or PagerDuty incident page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// The PagerDuty incident id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incident_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assignees: Vec<String>,
    /// Other sources that reported the same alert (same fingerprint).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_in: Vec<Source>,
}

/// Severity rank for sorting and colour: higher is worse; unknown severities rank lowest.
pub fn severity_rank(severity: &str) -> u8 {
    match severity.to_ascii_lowercase().as_str() {
        "critical" | "page" | "high" | "error" => 3,
        "warning" | "warn" => 2,
        "info" | "low" | "none" => 1,
        _ => 0,
    }
}

impl InboxAlert {
    /// The alert as an Alertmanager webhook alert, which is what an investigation starts from.
    pub fn to_alert(&self) -> Alert {
        let mut labels = self.labels.clone();
        labels
            .entry("alertname".into())
            .or_insert_with(|| self.alertname.clone());
        let mut annotations = self.annotations.clone();
        if !self.title.is_empty() && self.title != self.alertname {
            annotations
                .entry("summary".into())
                .or_insert_with(|| self.title.clone());
        }
        Alert {
            status: AlertStatus::Firing,
            labels,
            annotations,
            starts_at: self.starts_at,
            ends_at: None,
            generator_url: if self.source == Source::PagerDuty {
                String::new()
            } else {
                self.url.clone()
            },
            fingerprint: self.fingerprint.clone(),
        }
    }
}

/// A webhook payload (version 4) over some alerts: what `enter` on an alert or a group investigates.
pub fn payload_for(
    alerts: &[&InboxAlert],
    group_labels: &BTreeMap<String, String>,
) -> WebhookPayload {
    let converted: Vec<Alert> = alerts.iter().map(|a| a.to_alert()).collect();
    let mut common: BTreeMap<String, String> = converted
        .first()
        .map(|a| a.labels.clone())
        .unwrap_or_default();
    for a in converted.iter().skip(1) {
        common.retain(|k, v| a.labels.get(k) == Some(v));
    }
    let group_key = format!(
        "{{}}:{{{}}}",
        group_labels
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    WebhookPayload {
        version: "4".into(),
        group_key,
        status: AlertStatus::Firing,
        receiver: "sitrep-inbox".into(),
        group_labels: group_labels.clone(),
        common_labels: common,
        common_annotations: BTreeMap::new(),
        external_url: String::new(),
        alerts: converted,
    }
}
