//! The one error type every integration returns: which integration, which request, what went wrong.

use std::time::Duration;

/// What went wrong with a request, independent of which integration made it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    #[error("timed out after {}s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("unexpected response: {0}")]
    Decode(String),
    #[error("response larger than the {limit} byte limit")]
    TooLarge { limit: usize },
    #[error("no recording matches this request in the case")]
    NoRecording,
    #[error("not configured")]
    NotConfigured,
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The action is not carried out by this program; the text says what to run instead.
    #[error("manual step: {0}")]
    Manual(String),
    #[error("{0}")]
    Other(String),
}

/// An integration failure. Display is one line: `prometheus: GET /api/v1/query_range: timed out after 5s`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{integration}: {request}: {kind}")]
pub struct IntegrationError {
    pub integration: String,
    /// Method and path, e.g. `GET /api/v1/nodes`; never carries credentials.
    pub request: String,
    #[source]
    pub kind: ErrorKind,
}

impl IntegrationError {
    pub fn new(
        integration: impl Into<String>,
        request: impl Into<String>,
        kind: ErrorKind,
    ) -> Self {
        IntegrationError {
            integration: integration.into(),
            request: request.into(),
            kind,
        }
    }

    /// Whether the failure means "this case has no data for that", which replay treats as absent evidence.
    pub fn is_no_recording(&self) -> bool {
        matches!(self.kind, ErrorKind::NoRecording)
    }

    /// Whether the action was left for the operator to carry out by hand.
    pub fn is_manual(&self) -> bool {
        matches!(self.kind, ErrorKind::Manual(_))
    }

    /// The HTTP status, if the server answered with an error status.
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            ErrorKind::Status { status, .. } => Some(status),
            _ => None,
        }
    }
}

/// Text on one line: runs of whitespace become one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a service refused, on one line of at most 300 characters: the `reasons` read from its JSON
/// answer, else the first line of a text answer (not an HTML page), else what `usual` says the
/// status means.
pub fn refusal_text(
    status: u16,
    body: &super::transport::Body,
    mut reasons: Vec<String>,
    usual: fn(u16) -> &'static str,
    separator: &str,
) -> String {
    const MAX: usize = 300;
    if let super::transport::Body::Text(t) = body {
        let line = one_line(t.lines().find(|l| !l.trim().is_empty()).unwrap_or(""));
        if !line.is_empty() && !line.starts_with('<') {
            reasons.push(line);
        }
    }
    if reasons.is_empty() {
        reasons.push(usual(status).to_string());
    }
    let text = reasons.join(separator);
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_clear_line() {
        let e = IntegrationError::new(
            "prometheus",
            "GET /api/v1/query_range",
            ErrorKind::Timeout(Duration::from_millis(1500)),
        );
        assert_eq!(
            e.to_string(),
            "prometheus: GET /api/v1/query_range: timed out after 1.5s"
        );
        assert!(!e.to_string().contains('\n'));
    }
}
