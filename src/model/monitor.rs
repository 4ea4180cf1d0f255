//! Datadog monitor notifications (the webhook integration's JSON, built from the payload template
//! the README shows) read as an Alertmanager payload: tags become labels, `Recovered` resolves.

use super::alert::{Alert, AlertStatus, PayloadError, WebhookPayload, label_fingerprint};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use std::collections::BTreeMap;

/// The annotation a Datadog alert carries its monitor's query in (`$ALERT_QUERY`).
pub const MONITOR_QUERY: &str = "monitor_query";
/// The label a Datadog alert carries its monitor's ID in (`$ALERT_ID`).
pub const MONITOR_ID: &str = "monitor_id";
/// The receiver a payload read from a Datadog notification names.
pub const RECEIVER: &str = "datadog";

/// Whether `text` is a Datadog monitor notification: a JSON object with the template's
/// `alert_transition`, or its `alert_id` together with `alert_query`.
pub fn is_webhook(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .is_some_and(|v| is_webhook_value(&v))
}

fn is_webhook_value(v: &Value) -> bool {
    v.get("alert_transition").is_some()
        || (v.get("alert_id").is_some() && v.get("alert_query").is_some())
}

/// A template variable's value: text, a number's text, or None when empty or left unrendered
/// (`$ALERT_SCOPE` arrives literally when the monitor has no group).
fn text(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!s.is_empty() && !s.starts_with('$')).then_some(s)
}

/// `key:value` tags, comma separated (`$TAGS`, `$ALERT_SCOPE`) or a JSON array, as labels; a tag
/// without a value is returned apart.
fn tags(v: Option<&Value>) -> (BTreeMap<String, String>, Vec<String>) {
    let items: Vec<String> = match v {
        Some(Value::Array(a)) => a.iter().filter_map(|x| text(Some(x))).collect(),
        Some(other) => text(Some(other))
            .map(|s| s.split(',').map(|t| t.trim().to_string()).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut labels = BTreeMap::new();
    let mut bare = Vec::new();
    for tag in items.into_iter().filter(|t| !t.is_empty()) {
        match tag.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                labels.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => bare.push(tag),
        }
    }
    (labels, bare)
}

/// The monitor's name from a notification title: `[Triggered on {pod_name:x}] CPU high` -> `CPU high`.
fn monitor_name(title: &str) -> String {
    let t = title.trim();
    match t.strip_prefix('[').and_then(|rest| {
        // The prefix may itself hold brackets of a scope (`{...}`), never a `]` before its end.
        rest.find(']').map(|i| &rest[i + 1..])
    }) {
        Some(rest) if !rest.trim().is_empty() => rest.trim().to_string(),
        _ => t.to_string(),
    }
}

/// `$DATE`: milliseconds (or seconds) since the epoch, or RFC 3339 text.
fn date(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = text(v)?;
    if let Ok(n) = s.parse::<i64>() {
        // Datadog sends milliseconds; a 10-digit value is seconds.
        let ms = if n.abs() < 100_000_000_000 {
            n * 1000
        } else {
            n
        };
        return Utc.timestamp_millis_opt(ms).single();
    }
    DateTime::parse_from_rfc3339(&s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `$ALERT_PRIORITY` (P1..P5) as a severity; None when the monitor has no priority.
fn severity(priority: Option<&str>, transition: &str) -> Option<&'static str> {
    match priority.map(|p| p.trim().to_ascii_uppercase()) {
        Some(p) if p == "P1" || p == "P2" => Some("critical"),
        Some(p) if p == "P3" => Some("warning"),
        Some(p) if p == "P4" || p == "P5" => Some("info"),
        _ if transition.to_ascii_lowercase().contains("warn") => Some("warning"),
        _ => None,
    }
}

/// The fingerprint of a monitor's group (its scope tags as labels), whatever its transition, so a
/// recovery resolves the trigger and a polled monitor is the alert its webhook announced.
pub fn fingerprint(monitor_id: &str, mut scope: BTreeMap<String, String>) -> String {
    scope.insert(MONITOR_ID.into(), monitor_id.to_string());
    label_fingerprint(&scope)
}

/// Reads a Datadog monitor notification as a one-alert payload. `Recovered` (and `Warn
/// Recovered`) resolve; `Triggered`, `Warn`, `No Data` and their re-notifications fire (no data
/// is not health).
pub fn parse(text_in: &str) -> Result<WebhookPayload, PayloadError> {
    let v: Value = serde_json::from_str(text_in).map_err(|e| {
        PayloadError(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    if !v.is_object() || !is_webhook_value(&v) {
        return Err(PayloadError(
            "not a Datadog monitor notification: no `alert_transition` (see the README's webhook payload template)"
                .into(),
        ));
    }
    let transition = text(v.get("alert_transition")).unwrap_or_else(|| "Triggered".into());
    let title = text(v.get("alert_title"))
        .or_else(|| text(v.get("title")))
        .ok_or_else(|| {
            PayloadError(
                "the notification has no `alert_title` nor `title`: nothing names the monitor"
                    .into(),
            )
        })?;
    let name = monitor_name(&title);
    let status = if transition.to_ascii_lowercase().contains("recovered") {
        AlertStatus::Resolved
    } else {
        AlertStatus::Firing
    };
    let (mut labels, bare) = tags(v.get("tags"));
    // The group that triggered (`kube_namespace:shop,pod_name:x`) is more precise than the
    // monitor's tags.
    let (scope, _) = tags(v.get("alert_scope"));
    labels.extend(scope.clone());
    labels.insert("alertname".into(), name.clone());
    let monitor_id = text(v.get("alert_id"));
    if let Some(id) = &monitor_id {
        labels.insert(MONITOR_ID.into(), id.clone());
    }
    labels.insert("datadog_transition".into(), transition.clone());
    let priority = text(v.get("priority")).or_else(|| text(v.get("alert_priority")));
    if let Some(sev) = severity(priority.as_deref(), &transition) {
        labels
            .entry("severity".into())
            .or_insert_with(|| sev.into());
    }
    let mut annotations = BTreeMap::new();
    if let Some(s) = text(v.get("alert_status")) {
        annotations.insert("summary".into(), s);
    }
    if let Some(b) = text(v.get("body")).or_else(|| text(v.get("event_msg"))) {
        annotations.insert("description".into(), b.chars().take(4000).collect());
    }
    if let Some(q) = text(v.get("alert_query")) {
        annotations.insert(MONITOR_QUERY.into(), q);
    }
    for (key, ann) in [
        ("link", "link"),
        ("org_id", "datadog_org_id"),
        ("id", "event_id"),
    ] {
        if let Some(x) = text(v.get(key)) {
            annotations.insert(ann.into(), x);
        }
    }
    if !bare.is_empty() {
        annotations.insert("tags".into(), bare.join(","));
    }
    let at = date(v.get("date"));
    let identity = fingerprint(monitor_id.as_deref().unwrap_or(&name), scope);
    let alert = Alert {
        status,
        labels: labels.clone(),
        annotations: annotations.clone(),
        starts_at: at.filter(|_| status == AlertStatus::Firing),
        ends_at: at.filter(|_| status == AlertStatus::Resolved),
        generator_url: text(v.get("link")).unwrap_or_default(),
        fingerprint: identity,
    };
    Ok(WebhookPayload {
        version: "4".into(),
        group_key: format!("datadog:{}", monitor_id.unwrap_or(name.clone())),
        status,
        receiver: RECEIVER.into(),
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

    const TRIGGERED: &str = r#"{
        "id": "7329123456789",
        "alert_id": "4242",
        "title": "[Triggered on {kube_namespace:shop,kube_deployment:checkout-api}] Checkout 5xx ratio high",
        "alert_title": "[Triggered on {kube_namespace:shop,kube_deployment:checkout-api}] Checkout 5xx ratio high",
        "alert_transition": "Triggered",
        "alert_status": "checkout 5xx ratio was > 0.05 on average during the last 5m",
        "alert_query": "avg(last_5m):sum:trace.http.request.errors{kube_namespace:shop,kube_deployment:checkout-api}.as_rate() / sum:trace.http.request.hits{kube_namespace:shop,kube_deployment:checkout-api}.as_rate() > 0.05",
        "alert_scope": "kube_namespace:shop,kube_deployment:checkout-api",
        "tags": "env:prod,team:checkout,kube_cluster_name:prod-eu,monitor",
        "date": "1773238470000",
        "body": "%%%\nError ratio high\n%%%",
        "org_id": "123456",
        "link": "https://app.datadoghq.com/event/event?id=7329123456789",
        "priority": "P2"
    }"#;

    #[test]
    fn a_trigger_reads_as_one_firing_alert_with_tags_as_labels() {
        assert!(is_webhook(TRIGGERED));
        let p = parse(TRIGGERED).unwrap_or_default();
        let a = p.primary();
        assert_eq!(a.status, AlertStatus::Firing);
        assert_eq!(a.name(), "Checkout 5xx ratio high");
        assert_eq!(a.label("kube_namespace"), Some("shop"));
        assert_eq!(a.label("kube_deployment"), Some("checkout-api"));
        assert_eq!(a.label("kube_cluster_name"), Some("prod-eu"));
        assert_eq!(a.label("env"), Some("prod"));
        assert_eq!(a.label(MONITOR_ID), Some("4242"));
        assert_eq!(a.severity(), "critical");
        assert_eq!(a.annotation("tags"), Some("monitor"));
        assert!(
            a.annotation(MONITOR_QUERY)
                .is_some_and(|q| q.ends_with("> 0.05"))
        );
        assert_eq!(a.starts_at.map(|t| t.timestamp()), Some(1_773_238_470));
        assert!(p.validate().is_ok());
    }

    #[test]
    fn a_recovery_resolves_the_same_alert() {
        let recovered = TRIGGERED
            .replace("\"Triggered\"", "\"Recovered\"")
            .replace("[Triggered on", "[Recovered on");
        let fired = parse(TRIGGERED).unwrap_or_default().primary();
        let back = parse(&recovered).unwrap_or_default().primary();
        assert_eq!(back.status, AlertStatus::Resolved);
        assert_eq!(back.name(), fired.name());
        assert_eq!(back.fingerprint, fired.fingerprint);
        assert!(back.ends_at.is_some() && back.starts_at.is_none());
    }

    #[test]
    fn no_data_fires_and_unrendered_variables_are_absent() {
        let no_data = TRIGGERED.replace("\"Triggered\"", "\"No Data\"").replace(
            "\"kube_namespace:shop,kube_deployment:checkout-api\"",
            "\"$ALERT_SCOPE\"",
        );
        let a = parse(&no_data).unwrap_or_default().primary();
        assert_eq!(a.status, AlertStatus::Firing);
        assert!(!a.labels.values().any(|v| v.starts_with('$')));
    }

    #[test]
    fn other_json_is_refused_with_a_reason() {
        assert!(!is_webhook(r#"{"alerts": []}"#));
        for bad in ["{}", "[]", "nope", r#"{"alert_transition": "Triggered"}"#] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
