//! Recordings: one exchange a line of a case's `recordings.ndjson`, parsed, and written by a
//! transport that records what a live one answers.

use super::{Body, BoxFuture, Request, Response, Transport, VOLATILE_QUERY_KEYS};
use crate::integrations::error::{ErrorKind, IntegrationError};
use crate::policy::redact::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One line of `recordings.ndjson`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub integration: String,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, Value>,
    pub status: u16,
    pub body: Body,
    /// How long the live system took to answer, written by `--record`; a watched replay waits
    /// this long. Older recordings have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Recording {
    /// The recorded query as string pairs (array values become one pair each).
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        Self::pairs_of(&self.query)
    }

    /// A recorded query as string pairs (array values become one pair each).
    pub fn pairs_of(query: &BTreeMap<String, Value>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in query {
            match v {
                Value::Array(items) => out.extend(items.iter().map(|i| (k.clone(), scalar(i)))),
                other => out.push((k.clone(), scalar(other))),
            }
        }
        out
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses a recordings file; errors name the file and line.
pub fn parse_recordings(file: &str, text: &str) -> Result<Vec<Recording>, String> {
    parse_recording_lines(file, text)
}

/// One recording a line, in whatever shape `T` keeps it; blank lines skipped, errors name the
/// file and line.
pub fn parse_recording_lines<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: T = serde_json::from_str(line)
            .map_err(|e| format!("{file}:{}: not a recording: {e}", i + 1))?;
        out.push(rec);
    }
    Ok(out)
}

/// Live, and every exchange appended to a case directory's `recordings.ndjson` (after redaction).
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    path: PathBuf,
    file: Mutex<std::fs::File>,
    /// Masks the request side (path and query carry alert values); bodies arrive masked.
    redactor: Redactor,
}

impl RecordingTransport {
    /// Appends to `dir/recordings.ndjson`, creating the directory and file as needed.
    pub fn new(inner: Arc<dyn Transport>, dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("recordings.ndjson");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(RecordingTransport {
            inner,
            path,
            file: Mutex::new(file),
            redactor: Redactor::new(),
        })
    }

    /// Masks with this redactor (the live transport's, which knows the credentials in use).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(
        &self,
        req: &Request,
        resp: &Response,
        latency: Duration,
    ) -> Result<(), IntegrationError> {
        let query: BTreeMap<String, Value> = req
            .query
            .iter()
            .filter(|(k, _)| !VOLATILE_QUERY_KEYS.contains(&k.as_str()))
            .map(|(k, v)| {
                let mut value = Value::String(v.clone());
                self.redactor.redact_json(&mut value);
                (k.clone(), value)
            })
            .collect();
        let mut body = resp.body.clone();
        // Already masked by a live transport; masked again in case the inner one is not.
        body.redact(&self.redactor);
        let rec = Recording {
            integration: req.integration.clone(),
            method: req.method.clone(),
            path: self.redactor.redact(&req.path).into_owned(),
            query,
            status: resp.status,
            body,
            latency_ms: Some(latency.as_millis().min(u128::from(u64::MAX)) as u64),
        };
        let write_err = |e: String| {
            req.error(ErrorKind::Other(format!(
                "cannot write recording {}: {e}",
                self.path.display()
            )))
        };
        let mut line = serde_json::to_string(&rec).map_err(|e| write_err(e.to_string()))?;
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| write_err("lock poisoned".to_string()))?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| write_err(e.to_string()))
    }
}

impl Transport for RecordingTransport {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let resp = self.inner.send(req).await?;
            self.append(req, &resp, started.elapsed())?;
            Ok(resp)
        })
    }

    fn has(&self, integration: &str) -> bool {
        self.inner.has(integration)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::integrations::transport::ReplayTransport;
    use serde_json::json;

    pub(in crate::integrations::transport) fn rec(
        path: &str,
        query: Value,
        body: Value,
    ) -> Recording {
        Recording {
            integration: "prometheus".into(),
            method: "GET".into(),
            path: path.into(),
            query: serde_json::from_value(query).unwrap_or_default(),
            status: 200,
            body: Body::Json(body),
            latency_ms: None,
        }
    }

    #[test]
    fn recordings_without_a_latency_still_load() {
        let old =
            r#"{"integration":"prometheus","method":"GET","path":"/x","status":200,"body":"ok"}"#;
        let r: Recording = serde_json::from_str(old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.latency_ms, None);
        let line = serde_json::to_string(&r).unwrap_or_default();
        assert!(!line.contains("latency_ms"), "{line}");
    }

    #[tokio::test]
    async fn recording_writes_how_long_the_answer_took() {
        let mut slow = rec("/api/v1/rules", json!({}), json!("r"));
        slow.latency_ms = Some(60);
        let inner = ReplayTransport::new(vec![slow]);
        inner.set_pace(Duration::from_millis(1), Duration::from_millis(1));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let t =
            RecordingTransport::new(Arc::new(inner), dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        assert!(t.send(&req).await.is_ok());
        let text = std::fs::read_to_string(t.path()).unwrap_or_default();
        let r: Recording = serde_json::from_str(text.lines().last().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(
            r.latency_ms.is_some_and(|ms| (60..5_000).contains(&ms)),
            "{r:?}"
        );
    }

    #[test]
    fn recordings_errors_name_file_and_line() {
        let text = "{\"integration\":\"loki\",\"method\":\"GET\",\"path\":\"/x\",\"query\":{},\"status\":200,\"body\":\"ok\"}\nnot json\n";
        let err = parse_recordings("recordings.ndjson", text)
            .err()
            .unwrap_or_default();
        assert!(err.starts_with("recordings.ndjson:2:"), "{err}");
    }
}
