//! ServiceNow Table API client: files an investigation's incident (`POST /api/now/table/incident`).
//!
//! Basic authentication is set on the endpoint, read through the keyring once approved, so the
//! password never appears in a request value that could be recorded or logged.

use super::error::{ErrorKind, IntegrationError, one_line, refusal_text};
use super::transport::{Body, Request, RequestBody, Transport};
use crate::policy::redact::Redactor;
use serde_json::{Value, json};
use std::sync::Arc;

pub const NAME: &str = "servicenow";

/// The incident table's `short_description` holds this many characters.
pub const MAX_SHORT_DESCRIPTION: usize = 160;
/// Kept well under the instance's limit for `description`.
pub const MAX_DESCRIPTION: usize = 32_000;

/// An incident to create.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct NewIncident {
    pub short_description: String,
    pub description: String,
    /// 1 (high) to 3 (low).
    pub urgency: u8,
    /// 1 (high) to 3 (low).
    pub impact: u8,
    pub category: String,
}

/// What ServiceNow created.
#[derive(Clone, Debug, PartialEq)]
pub struct CreatedIncident {
    pub sys_id: String,
    /// e.g. `INC0010001`.
    pub number: String,
    /// Where people open it: `{instance}/nav_to.do?uri=incident.do?sys_id={sys_id}`.
    pub url: String,
}

#[derive(Clone)]
pub struct ServiceNowClient {
    transport: Arc<dyn Transport>,
    /// The instance (`https://example.service-now.com`), for links.
    instance: Option<String>,
    redactor: Redactor,
}

impl ServiceNowClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        ServiceNowClient {
            transport,
            instance: None,
            redactor: Redactor::new(),
        }
    }

    /// The instance links point at.
    pub fn with_instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// Masks secrets in every text sent.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// `POST /api/now/table/incident`; the created incident's number and link.
    pub async fn create_incident(
        &self,
        incident: &NewIncident,
    ) -> Result<CreatedIncident, IntegrationError> {
        let mut body = incident_body(incident);
        self.redactor.redact_json(&mut body);
        let req =
            Request::new(NAME, "POST", "/api/now/table/incident").body(RequestBody::Json(body));
        let invalid = |m: String| req.error(ErrorKind::Invalid(m));
        if incident.short_description.trim().is_empty() {
            return Err(invalid("an incident needs a short description".into()));
        }
        for (name, v) in [("urgency", incident.urgency), ("impact", incident.impact)] {
            if !(1..=3).contains(&v) {
                return Err(invalid(format!("{name} must be 1, 2 or 3, not {v}")));
            }
        }
        let resp = self.transport.send(&req).await?;
        if !resp.is_success() {
            return Err(req.error(ErrorKind::Status {
                status: resp.status,
                message: error_text(resp.status, &resp.body),
            }));
        }
        let result = match &resp.body {
            Body::Json(v) => v.get("result").cloned().unwrap_or(Value::Null),
            Body::Text(_) => {
                return Err(req.error(ErrorKind::Decode("the answer is not JSON".into())));
            }
        };
        let field = |k: &str| {
            result
                .get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
                .map(str::to_string)
        };
        let number = field("number").ok_or_else(|| {
            req.error(ErrorKind::Decode(
                "no incident `result.number` in the answer".into(),
            ))
        })?;
        let sys_id = field("sys_id").unwrap_or_default();
        let url = match (&self.instance, sys_id.is_empty()) {
            (Some(instance), false) => format!(
                "{}/nav_to.do?uri=incident.do?sys_id={sys_id}",
                instance.trim_end_matches('/')
            ),
            _ => String::new(),
        };
        Ok(CreatedIncident {
            sys_id,
            number,
            url,
        })
    }
}

/// The create request's body: the incident's fields, as the Table API takes them (text values).
pub fn incident_body(incident: &NewIncident) -> Value {
    let short = incident
        .short_description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let short: String = short.chars().take(MAX_SHORT_DESCRIPTION).collect();
    let description: String = incident
        .description
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .take(MAX_DESCRIPTION)
        .collect();
    json!({
        "short_description": short,
        "description": description,
        "urgency": incident.urgency.to_string(),
        "impact": incident.impact.to_string(),
        "category": incident.category,
    })
}

/// ServiceNow's reason for refusing: `error.message` and `error.detail`, else the status's meaning.
pub fn error_text(status: u16, body: &Body) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Body::Json(v) = body {
        let error = v.get("error").cloned().unwrap_or(Value::Null);
        for k in ["message", "detail"] {
            if let Some(m) = error.get(k).and_then(Value::as_str).map(one_line)
                && !m.is_empty()
                && !parts.contains(&m)
            {
                parts.push(m);
            }
        }
    }
    refusal_text(status, body, parts, usual, ": ")
}

fn usual(status: u16) -> &'static str {
    match status {
        401 => "not authenticated: check the user name and password",
        403 => "the account may not create incidents",
        404 => "no such instance or table",
        _ => "no reason given",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_documented_fields() {
        let body = incident_body(&NewIncident {
            short_description: "a\nb".into(),
            description: "x\ny".into(),
            urgency: 1,
            impact: 2,
            category: "software".into(),
        });
        assert_eq!(
            body,
            json!({"short_description": "a b", "description": "x\ny", "urgency": "1",
                   "impact": "2", "category": "software"})
        );
    }

    #[test]
    fn errors_name_servicenows_reasons() {
        let body = Body::Json(json!({"error": {"message": "User Not Authenticated",
            "detail": "Required to provide Auth information"}, "status": "failure"}));
        assert_eq!(
            error_text(401, &body),
            "User Not Authenticated: Required to provide Auth information"
        );
        assert_eq!(
            error_text(500, &Body::Text("<html>".into())),
            "no reason given"
        );
    }
}
