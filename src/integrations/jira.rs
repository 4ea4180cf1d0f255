//! Jira Cloud REST API v3 client: files an investigation's issue, its text as Atlassian Document Format.
//!
//! Basic authentication (`email:api_token`) is set on the endpoint, read through the keyring once
//! approved, so the token never appears in a request value that could be recorded or logged.

use super::error::{ErrorKind, IntegrationError, one_line, refusal_text};
use super::transport::{Body, Request, RequestBody, Transport};
use crate::policy::redact::Redactor;
use serde_json::{Value, json};
use std::sync::Arc;

pub const NAME: &str = "jira";

/// Jira refuses a summary longer than this.
pub const MAX_SUMMARY: usize = 255;
/// Jira refuses a description (a text field) longer than this, counted as characters.
pub const MAX_DESCRIPTION: usize = 32_000;

/// An issue to create.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct NewIssue {
    pub project: String,
    pub issue_type: String,
    pub summary: String,
    /// Plain text; each non-empty line becomes a paragraph.
    pub description: String,
    pub labels: Vec<String>,
}

/// What Jira created.
#[derive(Clone, Debug, PartialEq)]
pub struct CreatedIssue {
    pub id: String,
    /// e.g. `OPS-24`.
    pub key: String,
    /// Where people open it: `{site}/browse/{key}`.
    pub url: String,
}

#[derive(Clone)]
pub struct JiraClient {
    transport: Arc<dyn Transport>,
    /// The site (`https://example.atlassian.net`), for browse links.
    site: Option<String>,
    redactor: Redactor,
}

impl JiraClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        JiraClient {
            transport,
            site: None,
            redactor: Redactor::new(),
        }
    }

    /// The site browse links point at.
    pub fn with_site(mut self, site: impl Into<String>) -> Self {
        self.site = Some(site.into());
        self
    }

    /// Masks secrets in every text sent (on top of the patterns and learned values every
    /// redactor knows).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// `POST /rest/api/3/issue`; the created issue's key and browse link.
    pub async fn create_issue(&self, issue: &NewIssue) -> Result<CreatedIssue, IntegrationError> {
        let mut body = issue_body(issue);
        self.redactor.redact_json(&mut body);
        let req = Request::new(NAME, "POST", "/rest/api/3/issue").body(RequestBody::Json(body));
        let invalid = |m: &str| req.error(ErrorKind::Invalid(m.to_string()));
        if !is_project_key(&issue.project) {
            return Err(invalid(&format!(
                "{:?} is not a Jira project key",
                issue.project
            )));
        }
        if issue.issue_type.trim().is_empty() {
            return Err(invalid("an issue needs an issue type"));
        }
        if issue.summary.trim().is_empty() {
            return Err(invalid("an issue needs a summary"));
        }
        let resp = self.transport.send(&req).await?;
        if !resp.is_success() {
            return Err(req.error(ErrorKind::Status {
                status: resp.status,
                message: error_text(resp.status, &resp.body),
            }));
        }
        let v = match resp.body {
            Body::Json(v) => v,
            Body::Text(_) => {
                return Err(req.error(ErrorKind::Decode("the answer is not JSON".into())));
            }
        };
        let key = v
            .get("key")
            .and_then(Value::as_str)
            .filter(|k| is_issue_key(k))
            .ok_or_else(|| req.error(ErrorKind::Decode("no issue `key` in the answer".into())))?
            .to_string();
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let site = self.site.clone().or_else(|| {
            v.get("self")
                .and_then(Value::as_str)
                .and_then(|s| s.split_once("/rest/api/"))
                .map(|(site, _)| site.to_string())
        });
        let url = match site {
            Some(site) => format!("{}/browse/{key}", site.trim_end_matches('/')),
            None => String::new(),
        };
        Ok(CreatedIssue { id, key, url })
    }
}

/// The create request's body: `{"fields": {project, issuetype, summary, description, labels}}`.
pub fn issue_body(issue: &NewIssue) -> Value {
    let summary = one_line(&issue.summary);
    let summary: String = summary.chars().take(MAX_SUMMARY).collect();
    let labels: Vec<Value> = issue
        .labels
        .iter()
        // A Jira label is one word.
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join("-"))
        .filter(|l| !l.is_empty())
        .map(Value::from)
        .collect();
    let mut fields = json!({
        "project": {"key": issue.project},
        "issuetype": {"name": issue.issue_type},
        "summary": summary,
        "description": adf(&issue.description),
    });
    if !labels.is_empty() {
        fields["labels"] = Value::Array(labels);
    }
    json!({ "fields": fields })
}

/// Plain text as an Atlassian Document Format document: one paragraph per non-empty line (ADF
/// has no empty text nodes), consecutive `- ` lines as one bullet list, the whole cut to
/// [`MAX_DESCRIPTION`] characters.
pub fn adf(text: &str) -> Value {
    let paragraph = |text: String| {
        json!({
            "type": "paragraph",
            "content": [{"type": "text", "text": text}],
        })
    };
    let mut left = MAX_DESCRIPTION;
    let mut content: Vec<Value> = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    let flush = |items: &mut Vec<Value>, content: &mut Vec<Value>| {
        if !items.is_empty() {
            content.push(json!({"type": "bulletList", "content": std::mem::take(items)}));
        }
    };
    for line in text.lines() {
        let line: String = line
            .trim_end()
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        if line.trim().is_empty() || left == 0 {
            continue;
        }
        let n = line.chars().count();
        let line: String = if n > left {
            line.chars().take(left).collect()
        } else {
            line
        };
        left = left.saturating_sub(n);
        match line
            .strip_prefix("- ")
            .filter(|item| !item.trim().is_empty())
        {
            Some(item) => items.push(json!({
                "type": "listItem",
                "content": [paragraph(item.to_string())],
            })),
            None => {
                flush(&mut items, &mut content);
                content.push(paragraph(line));
            }
        }
    }
    flush(&mut items, &mut content);
    json!({"type": "doc", "version": 1, "content": content})
}

/// `OPS`, `ED2`: letters, digits and underscores.
pub fn is_project_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 64 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `OPS-24`.
fn is_issue_key(key: &str) -> bool {
    match key.rsplit_once('-') {
        Some((project, n)) => {
            is_project_key(project) && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Jira's reason for refusing: `errorMessages` and the per-field `errors`, else the status's
/// meaning.
pub fn error_text(status: u16, body: &Body) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Body::Json(v) = body {
        if let Some(list) = v.get("errorMessages").and_then(Value::as_array) {
            parts.extend(
                list.iter()
                    .filter_map(Value::as_str)
                    .map(one_line)
                    .filter(|m| !m.is_empty()),
            );
        }
        if let Some(errors) = v.get("errors").and_then(Value::as_object) {
            parts.extend(errors.iter().map(|(field, m)| match m.as_str() {
                Some(m) => format!("{field}: {}", one_line(m)),
                None => format!("{field}: {m}"),
            }));
        }
        if parts.is_empty()
            && let Some(m) = v.get("message").and_then(Value::as_str)
        {
            parts.push(one_line(m));
        }
    }
    refusal_text(status, body, parts, usual, "; ")
}

fn usual(status: u16) -> &'static str {
    match status {
        401 => "not authenticated: check the email and API token",
        403 => "the account may not create issues in this project",
        404 => "no such site or API",
        _ => "no reason given",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_become_one_paragraph_per_line() {
        let doc = adf("first line\n\n  \nsecond\u{1b}[31m line\n");
        assert_eq!(doc["type"], "doc");
        assert_eq!(doc["version"], 1);
        let content = doc["content"].as_array().map(Vec::len);
        assert_eq!(content, Some(2));
        assert_eq!(doc["content"][0]["content"][0]["text"], "first line");
        assert_eq!(doc["content"][1]["content"][0]["text"], "second[31m line");
        assert_eq!(adf("")["content"], json!([]));
        let doc = adf("Actions:\n- one\n- two\nafter");
        assert_eq!(doc["content"][1]["type"], "bulletList");
        assert_eq!(
            doc["content"][1]["content"][1],
            json!({"type": "listItem", "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": "two"}]}
            ]})
        );
        assert_eq!(doc["content"][2]["content"][0]["text"], "after");
    }

    #[test]
    fn the_body_has_the_documented_fields() {
        let body = issue_body(&NewIssue {
            project: "OPS".into(),
            issue_type: "Task".into(),
            summary: "a\nb".into(),
            description: "x".into(),
            labels: vec!["sitrep".into(), "two words".into(), " ".into()],
        });
        assert_eq!(body["fields"]["project"], json!({"key": "OPS"}));
        assert_eq!(body["fields"]["issuetype"], json!({"name": "Task"}));
        assert_eq!(body["fields"]["summary"], "a b");
        assert_eq!(body["fields"]["labels"], json!(["sitrep", "two-words"]));
    }

    #[test]
    fn errors_name_jiras_reasons() {
        let body = Body::Json(json!({"errorMessages": ["Bad"], "errors": {"summary": "too long"}}));
        assert_eq!(error_text(400, &body), "Bad; summary: too long");
        assert_eq!(
            error_text(401, &Body::Text(String::new())),
            "not authenticated: check the email and API token"
        );
        assert!(is_issue_key("ED-24"));
        assert!(!is_issue_key("ED-"));
        assert!(!is_issue_key("E D-1"));
    }
}
