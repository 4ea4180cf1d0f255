//! Actions the inbox proposes (silence, expire a silence, PagerDuty acknowledge / resolve / note), as
//! ordinary proposals: the investigation they join puts them through policy and approval like any other.

use super::{InboxAlert, Source};
use crate::model::{Action, Risk, catalog};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Labels that identify an alert rather than describe its current value; a silence matches on these.
const VOLATILE: [&str; 2] = ["value", "instance_value"];

/// The labels all `alerts` share (what a silence of a group matches).
pub fn common_labels(alerts: &[&InboxAlert]) -> BTreeMap<String, String> {
    let mut common = alerts.first().map(|a| a.labels.clone()).unwrap_or_default();
    for a in alerts.iter().skip(1) {
        common.retain(|k, v| a.labels.get(k) == Some(v));
    }
    common.retain(|k, _| !VOLATILE.contains(&k.as_str()));
    common
}

/// Silences the Alertmanager alerts with exactly these labels for `minutes`. Medium risk: a silence
/// hides pages from everyone on call.
pub fn silence(
    matchers: &BTreeMap<String, String>,
    minutes: u64,
    comment: &str,
    by: &str,
) -> Option<Action> {
    if matchers.is_empty() {
        return None;
    }
    let target = matchers
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let matcher_args = matchers
        .iter()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut params = BTreeMap::new();
    params.insert(
        "matchers".to_string(),
        Value::Object(
            matchers
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
    );
    params.insert("duration_minutes".into(), json!(minutes));
    params.insert("created_by".into(), json!(by));
    Some(settled(Action {
        id: String::new(),
        kind: "alertmanager.silence".into(),
        operation: format!(
            "amtool silence add --duration={minutes}m --comment={comment:?} {matcher_args}"
        ),
        target,
        params,
        risk: Risk::Medium,
        rationale: if comment.trim().is_empty() {
            format!("silenced from the inbox by {by}")
        } else {
            comment.to_string()
        },
        blast_radius: "every alert matching these labels stops notifying until the silence ends"
            .into(),
        evidence: Vec::new(),
    }))
}

/// Expires a silence, so the alerts it muted notify again.
pub fn expire_silence(id: &str, by: &str) -> Action {
    let mut params = BTreeMap::new();
    params.insert("silence_id".to_string(), json!(id));
    settled(Action {
        id: String::new(),
        kind: "alertmanager.expire_silence".into(),
        target: format!("silence/{id}"),
        operation: format!("amtool silence expire {id}"),
        params,
        risk: Risk::Medium,
        rationale: format!("expire silence {id}, asked from the inbox by {by}"),
        blast_radius: "the alerts it muted notify again".into(),
        evidence: Vec::new(),
    })
}

/// What can be done to a PagerDuty incident from the inbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PdVerb {
    Acknowledge,
    Resolve,
}

/// Acknowledges (medium) or resolves (high: it stops the page for everyone) a PagerDuty incident.
pub fn pagerduty(alert: &InboxAlert, verb: PdVerb, by: &str) -> Option<Action> {
    if alert.source != Source::PagerDuty {
        return None;
    }
    let id = alert.incident_id.clone()?;
    let (kind, status, risk) = match verb {
        PdVerb::Acknowledge => ("pagerduty.acknowledge", "acknowledged", Risk::Medium),
        PdVerb::Resolve => ("pagerduty.resolve", "resolved", Risk::High),
    };
    let mut params = BTreeMap::new();
    params.insert("incident_id".to_string(), json!(id));
    Some(settled(Action {
        id: String::new(),
        kind: kind.into(),
        target: format!("incident/{id}"),
        operation: format!(
            "PUT /incidents/{id} {{\"status\": \"{status}\"}} (From: the configured email)"
        ),
        params,
        risk,
        rationale: format!("{status} from the inbox by {by}: {}", alert.title),
        blast_radius: "the incident's escalation and notifications".into(),
        evidence: Vec::new(),
    }))
}

/// Adds a note to a PagerDuty incident (low: it changes nothing but the incident's log).
pub fn pagerduty_note(alert: &InboxAlert, content: &str) -> Option<Action> {
    if alert.source != Source::PagerDuty || content.trim().is_empty() {
        return None;
    }
    let id = alert.incident_id.clone()?;
    let mut params = BTreeMap::new();
    params.insert("incident_id".to_string(), json!(id));
    params.insert("content".to_string(), json!(content));
    Some(settled(Action {
        id: String::new(),
        kind: "pagerduty.add_note".into(),
        target: format!("incident/{id}"),
        operation: format!("POST /incidents/{id}/notes"),
        params,
        risk: Risk::Low,
        rationale: "note from the inbox".into(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    }))
}

/// The proposal as the catalog reads it (target, risk floor, operation text), so what the
/// inbox offers is exactly what the approval modal will show.
fn settled(mut action: Action) -> Action {
    catalog::settle(&mut action);
    action
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_matches_exactly_the_given_labels_and_is_at_least_medium() {
        let mut m = BTreeMap::new();
        m.insert("alertname".to_string(), "X".to_string());
        m.insert("namespace".to_string(), "payments".to_string());
        let a = silence(&m, 120, "deploy in progress", "ops").expect("action");
        assert_eq!(a.kind, "alertmanager.silence");
        assert!(a.risk >= Risk::Medium);
        assert_eq!(a.target, "alert/X");
        assert!(
            a.operation.contains("namespace=\"payments\""),
            "{}",
            a.operation
        );
        assert_eq!(a.params["matchers"]["namespace"], "payments");
        assert_eq!(a.params["duration_minutes"], 120);
        assert!(silence(&BTreeMap::new(), 60, "", "ops").is_none());
    }
}
