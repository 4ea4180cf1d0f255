//! CloudWatch alarm notifications (the JSON SNS delivers, bare or in its envelope) read as an
//! Alertmanager payload: the alarm's name, state, metric, dimensions and threshold as labels.

use super::alert::{Alert, AlertStatus, PayloadError, WebhookPayload};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;

/// The alarm inside `value`: the notification itself, or the `Message` of an SNS envelope.
fn alarm_of(value: &Value) -> Option<Value> {
    if value.get("AlarmName").is_some() {
        return Some(value.clone());
    }
    let message = value.get("Message")?.as_str()?;
    let inner: Value = serde_json::from_str(message).ok()?;
    inner.get("AlarmName").is_some().then_some(inner)
}

/// Whether `text` is a CloudWatch alarm notification.
pub fn is_alarm(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .as_ref()
        .and_then(alarm_of)
        .is_some()
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads a CloudWatch alarm notification as a one-alert payload. `ALARM` fires; `OK` resolves;
/// `INSUFFICIENT_DATA` fires too, since no data is not health.
pub fn parse(text_in: &str) -> Result<WebhookPayload, PayloadError> {
    let value: Value = serde_json::from_str(text_in).map_err(|e| {
        PayloadError(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let alarm = alarm_of(&value).ok_or_else(|| {
        PayloadError("not a CloudWatch alarm notification: no `AlarmName`".into())
    })?;
    let name =
        text(alarm.get("AlarmName")).ok_or_else(|| PayloadError("`AlarmName` is empty".into()))?;
    let state = text(alarm.get("NewStateValue")).unwrap_or_else(|| "ALARM".into());
    let status = if state == "OK" {
        AlertStatus::Resolved
    } else {
        AlertStatus::Firing
    };
    let mut labels = BTreeMap::new();
    labels.insert("alertname".to_string(), name.clone());
    labels.insert("alarm_state".to_string(), state.clone());
    if let Some(r) = text(alarm.get("Region")) {
        labels.insert("region".into(), r);
    }
    let trigger = alarm.get("Trigger");
    if let Some(t) = trigger {
        for (key, label) in [
            ("MetricName", "metric_name"),
            ("Namespace", "namespace_aws"),
            ("Statistic", "statistic"),
            ("ComparisonOperator", "comparison"),
            ("Threshold", "threshold"),
        ] {
            if let Some(v) = text(t.get(key)) {
                labels.insert(label.into(), v);
            }
        }
        // Dimensions come as `{name, value}` (SNS) or `{Name, Value}` (the API).
        for d in t
            .get("Dimensions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let k = text(d.get("name").or_else(|| d.get("Name")));
            let v = text(d.get("value").or_else(|| d.get("Value")));
            if let (Some(k), Some(v)) = (k, v) {
                labels.insert(k, v);
            }
        }
    }
    let mut annotations = BTreeMap::new();
    if let Some(r) = text(alarm.get("NewStateReason")) {
        annotations.insert("summary".to_string(), r);
    }
    if let Some(d) = text(alarm.get("AlarmDescription")) {
        annotations.insert("description".to_string(), d);
    }
    let at = text(alarm.get("StateChangeTime"))
        .and_then(|t| DateTime::parse_from_rfc3339(&t.replace("+0000", "+00:00")).ok())
        .map(|t| t.with_timezone(&Utc));
    let alert = Alert {
        status,
        labels: labels.clone(),
        annotations: annotations.clone(),
        starts_at: at.filter(|_| status == AlertStatus::Firing),
        ends_at: at.filter(|_| status == AlertStatus::Resolved),
        ..Alert::default()
    };
    Ok(WebhookPayload {
        version: "4".into(),
        status,
        receiver: "cloudwatch".into(),
        group_labels: [("alertname".to_string(), name)].into_iter().collect(),
        common_labels: labels,
        common_annotations: annotations,
        alerts: vec![alert],
        ..WebhookPayload::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALARM: &str = r#"{"AlarmName":"orders-db-cpu","AlarmDescription":"CPU high","NewStateValue":"ALARM","NewStateReason":"Threshold Crossed: 3 datapoints [92.1, 95.0, 97.2] were greater than the threshold (80.0).","StateChangeTime":"2026-03-27T14:10:00.000+0000","Region":"US East (N. Virginia)","Trigger":{"MetricName":"CPUUtilization","Namespace":"AWS/RDS","Statistic":"AVERAGE","Dimensions":[{"value":"orders-db","name":"DBInstanceIdentifier"}],"Period":60,"EvaluationPeriods":3,"ComparisonOperator":"GreaterThanThreshold","Threshold":80.0}}"#;

    #[test]
    fn an_alarm_reads_as_one_firing_alert_naming_its_instance() {
        let p = parse(ALARM).unwrap_or_default();
        let a = p.primary();
        assert_eq!(a.status, AlertStatus::Firing);
        assert_eq!(a.name(), "orders-db-cpu");
        assert_eq!(a.label("DBInstanceIdentifier"), Some("orders-db"));
        assert_eq!(a.label("metric_name"), Some("CPUUtilization"));
        assert_eq!(a.label("threshold"), Some("80.0"));
        assert!(a.starts_at.is_some());
        assert!(
            a.annotation("summary")
                .is_some_and(|s| s.contains("Threshold Crossed"))
        );
    }

    #[test]
    fn the_sns_envelope_is_opened_and_ok_resolves() {
        let inner = ALARM.replace("\"ALARM\"", "\"OK\"");
        let envelope = serde_json::json!({"Type": "Notification", "Message": inner}).to_string();
        assert!(is_alarm(&envelope));
        let p = parse(&envelope).unwrap_or_default();
        assert_eq!(p.primary().status, AlertStatus::Resolved);
    }

    #[test]
    fn other_json_is_not_an_alarm() {
        assert!(!is_alarm(r#"{"alerts": []}"#));
        assert!(parse("{}").is_err());
        assert!(parse("nope").is_err());
    }
}
