//! The seam to the outside world: the `Transport` every integration request goes through (live over
//! HTTP, recording live answers into a case, or replaying them) and the request and response it
//! carries.

mod endpoint;
mod exchange;
mod live;
mod recording;
mod replay;

pub use endpoint::{Endpoint, LazyAuth, RetryPolicy, SecretHeader};
pub use live::LiveTransport;
pub use recording::{Recording, RecordingTransport, parse_recording_lines, parse_recordings};
pub use replay::ReplayTransport;

use super::error::{ErrorKind, IntegrationError};
use crate::policy::redact::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future, so `Transport` can be a trait object.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Bodies larger than this are refused rather than buffered (a runaway log or a wrong URL must not eat memory).
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;
/// Used when an endpoint does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Query parameters that carry the wall clock. They are left out of recordings so a replay, which runs
/// at the case's clock rather than the recording's, still matches.
pub const VOLATILE_QUERY_KEYS: [&str; 9] = [
    "start",
    "end",
    "time",
    "since",
    "until",
    "StartTime",
    "EndTime",
    "from",
    "to",
];

/// A request body.
#[derive(Clone, Debug, PartialEq)]
pub enum RequestBody {
    Json(Value),
    /// A Kubernetes merge patch (`application/merge-patch+json`).
    MergePatch(Value),
    /// A JSON patch (`application/json-patch+json`).
    JsonPatch(Value),
    /// A Kubernetes strategic merge patch (`application/strategic-merge-patch+json`): lists such as
    /// `containers` merge by their `name` key instead of being replaced whole.
    StrategicMergePatch(Value),
}

impl RequestBody {
    fn content_type(&self) -> &'static str {
        match self {
            RequestBody::Json(_) => "application/json",
            RequestBody::MergePatch(_) => "application/merge-patch+json",
            RequestBody::JsonPatch(_) => "application/json-patch+json",
            RequestBody::StrategicMergePatch(_) => "application/strategic-merge-patch+json",
        }
    }
    fn value(&self) -> &Value {
        match self {
            RequestBody::Json(v)
            | RequestBody::MergePatch(v)
            | RequestBody::JsonPatch(v)
            | RequestBody::StrategicMergePatch(v) => v,
        }
    }
}

/// One request to one integration, relative to its base URL.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub integration: String,
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<RequestBody>,
    /// An `Accept` header, when the request needs a representation other than the default
    /// (Kubernetes' metadata-only lists, so Secret values never leave the cluster).
    pub accept: Option<String>,
}

impl Request {
    pub fn new(integration: &str, method: &str, path: impl Into<String>) -> Self {
        Request {
            integration: integration.to_string(),
            method: method.to_ascii_uppercase(),
            path: path.into(),
            query: Vec::new(),
            body: None,
            accept: None,
        }
    }

    pub fn accept(mut self, media_type: &str) -> Self {
        self.accept = Some(media_type.to_string());
        self
    }

    pub fn get(integration: &str, path: impl Into<String>) -> Self {
        Self::new(integration, "GET", path)
    }

    pub fn query(mut self, key: &str, value: impl Into<String>) -> Self {
        self.query.push((key.to_string(), value.into()));
        self
    }

    pub fn query_opt(self, key: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(v) => self.query(key, v),
            None => self,
        }
    }

    pub fn body(mut self, body: RequestBody) -> Self {
        self.body = Some(body);
        self
    }

    /// `GET /api/v1/nodes`, for errors and logs.
    pub fn describe(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// An error about this request.
    pub fn error(&self, kind: ErrorKind) -> IntegrationError {
        IntegrationError::new(&self.integration, self.describe(), kind)
    }
}

/// A response body: JSON when it parses as JSON, text otherwise (pod logs, error pages).
/// In a recording a text body is a JSON string and anything else is the JSON body itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Json(Value),
    Text(String),
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Body::Json(v) => v.serialize(s),
            Body::Text(t) => t.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(t) => Body::Text(t),
            v => Body::Json(v),
        })
    }
}

impl Body {
    /// Classifies raw bytes: JSON when they parse, otherwise lossy UTF-8 text.
    pub fn from_bytes(bytes: &[u8]) -> Body {
        let trimmed = bytes.trim_ascii_start();
        if (trimmed.starts_with(b"{") || trimmed.starts_with(b"["))
            && let Ok(v) = serde_json::from_slice::<Value>(bytes)
        {
            return Body::Json(v);
        }
        Body::Text(String::from_utf8_lossy(bytes).into_owned())
    }

    /// Masks secrets in place.
    pub fn redact(&mut self, redactor: &Redactor) {
        match self {
            Body::Json(v) => redactor.redact_json(v),
            Body::Text(t) => {
                if let std::borrow::Cow::Owned(r) = redactor.redact(t) {
                    *t = r;
                }
            }
        }
    }

    /// The body as text (JSON is serialized).
    pub fn text(&self) -> String {
        match self {
            Body::Json(v) => v.to_string(),
            Body::Text(t) => t.clone(),
        }
    }
}

/// A response: status and (already redacted) body.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    pub body: Body,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The JSON body of a successful response, or an error naming the request and the server's message.
    pub fn json(self, req: &Request) -> Result<Value, IntegrationError> {
        let body = self.success(req)?;
        match body {
            Body::Json(v) => Ok(v),
            Body::Text(t) => Err(req.error(ErrorKind::Decode(
                match serde_json::from_str::<Value>(&t) {
                    Err(e) => format!("malformed JSON: {e}"),
                    Ok(_) => "malformed JSON".to_string(),
                },
            ))),
        }
    }

    /// The body of a successful response as text.
    pub fn text(self, req: &Request) -> Result<String, IntegrationError> {
        Ok(self.success(req)?.text())
    }

    /// The body when the status is 2xx; otherwise an error with the server's own message.
    pub fn success(self, req: &Request) -> Result<Body, IntegrationError> {
        if self.is_success() {
            return Ok(self.body);
        }
        Err(req.error(ErrorKind::Status {
            status: self.status,
            message: error_message(&self.body),
        }))
    }
}

/// The human message inside an error body: Kubernetes `Status.message`, Prometheus `error`,
/// GitHub/Alertmanager `message`, or the first line of a text body.
fn error_message(body: &Body) -> String {
    const MAX: usize = 200;
    let msg = match body {
        Body::Json(v) => ["message", "error", "reason"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| v.to_string()),
        Body::Text(t) => t.lines().next().unwrap_or("").trim().to_string(),
    };
    let mut msg: String = msg.chars().take(MAX).collect();
    if msg.is_empty() {
        msg = "no message".to_string();
    }
    msg
}

/// The seam: every integration request goes through one of these.
pub trait Transport: Send + Sync {
    /// Sends a request. Non-2xx answers are `Ok` (so they can be recorded); clients turn them into errors.
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>>;

    /// Whether this transport can reach `integration` at all.
    fn has(&self, integration: &str) -> bool;
}

/// Percent-encodes query pairs (`application/x-www-form-urlencoded`).
pub fn encode_query(pairs: &[(String, String)]) -> String {
    let mut url = match reqwest::Url::parse("http://localhost/") {
        Ok(u) => u,
        Err(_) => return String::new(),
    };
    url.query_pairs_mut()
        .extend_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    url.query().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_are_json_or_text() {
        assert_eq!(Body::from_bytes(b" {\"a\":1}"), Body::Json(json!({"a": 1})));
        assert_eq!(Body::from_bytes(b"{broken"), Body::Text("{broken".into()));
        assert_eq!(
            Body::from_bytes(b"log line\n"),
            Body::Text("log line\n".into())
        );
    }
}
