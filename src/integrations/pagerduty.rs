//! PagerDuty REST API v2 client (incidents, acknowledge, resolve, notes) and V3 webhook parsing and signatures.
//!
//! Authentication (`Authorization: Token token=...`) and the `From:` header writes require are set on
//! the endpoint, so they never appear in a request value that could be recorded or logged.

use super::error::{ErrorKind, IntegrationError};
use super::prometheus::parse_time;
use super::transport::{Request, RequestBody, Transport};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

const NAME: &str = "pagerduty";

/// One PagerDuty incident, as the inbox needs it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PdIncident {
    pub id: String,
    pub number: Option<u64>,
    pub title: String,
    /// `triggered`, `acknowledged` or `resolved`.
    pub status: String,
    /// `high` or `low`.
    pub urgency: String,
    pub service: String,
    pub service_id: String,
    pub assignees: Vec<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub html_url: String,
    pub incident_key: String,
}

/// A V3 webhook event (`{"event": {...}}`).
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookEvent {
    pub id: String,
    /// e.g. `incident.triggered`, `incident.acknowledged`, `incident.resolved`.
    pub event_type: String,
    pub resource_type: String,
    pub occurred_at: Option<DateTime<Utc>>,
    /// The incident, when the event is about one.
    pub incident: Option<PdIncident>,
}

#[derive(Clone)]
pub struct PagerDutyClient {
    transport: Arc<dyn Transport>,
}

impl PagerDutyClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        PagerDutyClient { transport }
    }

    /// Open (triggered or acknowledged) incidents, optionally of some services only.
    pub async fn open_incidents(
        &self,
        service_ids: &[String],
    ) -> Result<Vec<PdIncident>, IntegrationError> {
        let mut req = Request::get(NAME, "/incidents")
            .query("statuses[]", "triggered")
            .query("statuses[]", "acknowledged")
            .query("limit", "100");
        for s in service_ids {
            req = req.query("service_ids[]", s.clone());
        }
        let v = self.transport.send(&req).await?.json(&req)?;
        let items = v
            .get("incidents")
            .and_then(Value::as_array)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `incidents` array".into())))?;
        Ok(items.iter().map(parse_incident).collect())
    }

    /// Sets an incident's status (`acknowledged` or `resolved`); returns the status PagerDuty reports.
    pub async fn set_status(&self, id: &str, status: &str) -> Result<String, IntegrationError> {
        let req = Request::new(NAME, "PUT", format!("/incidents/{id}")).body(RequestBody::Json(
            json!({"incident": {"type": "incident_reference", "status": status}}),
        ));
        check_id(&req, id)?;
        if !matches!(status, "acknowledged" | "resolved") {
            return Err(req.error(ErrorKind::Invalid(format!(
                "an incident can be set to acknowledged or resolved, not {status:?}"
            ))));
        }
        let v = self.transport.send(&req).await?.json(&req)?;
        v.get("incident")
            .and_then(|i| i.get("status"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `incident.status` in answer".into())))
    }

    /// Adds a note to an incident; returns the note's id.
    pub async fn add_note(&self, id: &str, content: &str) -> Result<String, IntegrationError> {
        let req = Request::new(NAME, "POST", format!("/incidents/{id}/notes"))
            .body(RequestBody::Json(json!({"note": {"content": content}})));
        check_id(&req, id)?;
        if content.trim().is_empty() {
            return Err(req.error(ErrorKind::Invalid("a note needs some text".into())));
        }
        let v = self.transport.send(&req).await?.json(&req)?;
        v.get("note")
            .and_then(|n| n.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| req.error(ErrorKind::Decode("no `note.id` in answer".into())))
    }
}

fn check_id(req: &Request, id: &str) -> Result<(), IntegrationError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(req.error(ErrorKind::Invalid(format!("bad incident id {id:?}"))));
    }
    Ok(())
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// An incident object from the REST API or a V3 webhook's `event.data`.
pub fn parse_incident(v: &Value) -> PdIncident {
    // REST incidents carry `assignments[].assignee`; webhook data carries `assignees[]`.
    let mut assignees: Vec<String> = v
        .get("assignments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("assignee"))
                .map(|x| text(x, "summary"))
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if let Some(list) = v.get("assignees").and_then(Value::as_array) {
        assignees.extend(
            list.iter()
                .map(|x| text(x, "summary"))
                .filter(|s| !s.is_empty()),
        );
    }
    let service = v.get("service").cloned().unwrap_or(Value::Null);
    PdIncident {
        id: text(v, "id"),
        number: v
            .get("incident_number")
            .or_else(|| v.get("number"))
            .and_then(Value::as_u64),
        title: match text(v, "title") {
            t if t.is_empty() => text(v, "summary"),
            t => t,
        },
        status: text(v, "status"),
        urgency: text(v, "urgency"),
        service: text(&service, "summary"),
        service_id: text(&service, "id"),
        assignees,
        created_at: v
            .get("created_at")
            .and_then(Value::as_str)
            .and_then(parse_time),
        html_url: text(v, "html_url"),
        incident_key: text(v, "incident_key"),
    }
}

/// Reads a V3 webhook body.
pub fn parse_webhook(body: &Value) -> Result<WebhookEvent, String> {
    let event = body
        .get("event")
        .filter(|e| e.is_object())
        .ok_or("not a PagerDuty V3 webhook: no `event` object")?;
    let event_type = text(event, "event_type");
    if event_type.is_empty() {
        return Err("not a PagerDuty V3 webhook: no `event.event_type`".into());
    }
    let resource_type = text(event, "resource_type");
    let incident = match (resource_type.as_str(), event.get("data")) {
        ("incident", Some(data)) if data.is_object() => Some(parse_incident(data)),
        _ => None,
    };
    Ok(WebhookEvent {
        id: text(event, "id"),
        event_type,
        resource_type,
        occurred_at: event
            .get("occurred_at")
            .and_then(Value::as_str)
            .and_then(parse_time),
        incident,
    })
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Whether `header` (`X-PagerDuty-Signature: v1=<hex>[,v1=<hex>...]`, several while a secret
/// rotates) holds a valid signature of `body` under `secret`.
pub fn verify_signature(secret: &[u8], body: &[u8], header: &str) -> bool {
    let expected = hmac_sha256(secret, body);
    header
        .split(',')
        .filter_map(|s| s.trim().strip_prefix("v1="))
        .filter_map(|h| hex::decode(h).ok())
        .any(|sig| constant_time_eq(&sig, &expected))
}

/// The `X-PagerDuty-Signature` value for `body` under `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!("v1={}", hex::encode(hmac_sha256(secret, body)))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn hmac_hashes_long_keys_first() {
        // RFC 4231 case 6: a 131-byte key.
        let key = [0xaau8; 131];
        let mac = hmac_sha256(
            &key,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn signatures_verify_only_with_the_right_secret_and_body() {
        let body = br#"{"event":{}}"#;
        let sig = sign(b"s3cret", body);
        assert!(verify_signature(b"s3cret", body, &sig));
        assert!(verify_signature(
            b"s3cret",
            body,
            &format!("v1=00ff, {sig}")
        ));
        assert!(!verify_signature(b"other", body, &sig));
        assert!(!verify_signature(b"s3cret", b"{}", &sig));
        assert!(!verify_signature(b"s3cret", body, "v1=zz"));
        assert!(!verify_signature(b"s3cret", body, ""));
    }

    #[test]
    fn webhook_without_event_is_an_error() {
        assert!(parse_webhook(&json!({"messages": []})).is_err());
        assert!(parse_webhook(&json!({"event": {"id": "x"}})).is_err());
    }
}
