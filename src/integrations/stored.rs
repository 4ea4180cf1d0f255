//! Recordings as a replay keeps them: the request side parsed (to match requests against),
//! the body kept as the JSON text it was recorded as and parsed only when it answers. A case of
//! tens of thousands of pods then costs its file's size in memory, not a JSON tree several
//! times that, and a body never asked for is never parsed.

use super::transport::{Body, Recording};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A recording whose body is still JSON text.
#[derive(Clone, Debug, Deserialize)]
pub struct RawRecording {
    pub integration: String,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, Value>,
    pub status: u16,
    pub body: Box<RawValue>,
    #[serde(default)]
    pub latency_ms: Option<u64>,
}

/// Parses a recordings file, keeping each body as text; errors name the file and line.
pub fn parse_raw_recordings(file: &str, text: &str) -> Result<Vec<RawRecording>, String> {
    super::transport::parse_recording_lines(file, text)
}

/// One recording in a replay: what a request is matched against, and the answer (shared, so
/// answering never copies a body).
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub integration: String,
    pub method: String,
    pub path: String,
    /// The recorded query as string pairs (see [`Recording::query_pairs`]).
    pub pairs: Vec<(String, String)>,
    pub status: u16,
    pub latency_ms: Option<u64>,
    body: StoredBody,
}

#[derive(Clone, Debug)]
enum StoredBody {
    Parsed(Arc<Body>),
    Raw(Arc<RawValue>),
}

impl Stored {
    /// Whether a request is answered by this recording: integration, method and path equal,
    /// every recorded query pair in the request.
    pub fn matches(&self, req: &super::transport::Request) -> bool {
        self.integration == req.integration
            && self.method.eq_ignore_ascii_case(&req.method)
            && self.path == req.path
            && self.pairs.iter().all(|p| req.query.contains(p))
    }

    /// The body, parsed now if it was kept as text: a JSON string is a text body, anything else
    /// JSON (as [`Body`] reads a recording). Text that no longer parses answers as text.
    pub fn body(&self) -> Body {
        match &self.body {
            StoredBody::Parsed(b) => Body::clone(b),
            StoredBody::Raw(raw) => serde_json::from_str::<Body>(raw.get())
                .unwrap_or_else(|_| Body::Text(raw.get().to_string())),
        }
    }

    /// Bytes of the body as recorded (JSON text), without parsing it.
    pub fn raw_len(&self) -> Option<usize> {
        match &self.body {
            StoredBody::Raw(raw) => Some(raw.get().len()),
            StoredBody::Parsed(_) => None,
        }
    }
}

impl From<Recording> for Stored {
    fn from(r: Recording) -> Stored {
        Stored {
            pairs: r.query_pairs(),
            integration: r.integration,
            method: r.method,
            path: r.path,
            status: r.status,
            latency_ms: r.latency_ms,
            body: StoredBody::Parsed(Arc::new(r.body)),
        }
    }
}

impl From<RawRecording> for Stored {
    fn from(r: RawRecording) -> Stored {
        let pairs = Recording::pairs_of(&r.query);
        Stored {
            pairs,
            integration: r.integration,
            method: r.method,
            path: r.path,
            status: r.status,
            latency_ms: r.latency_ms,
            body: StoredBody::Raw(Arc::from(r.body)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_bodies_answer_as_parsed_ones_do() {
        let text = concat!(
            r#"{"integration":"kubernetes","method":"GET","path":"/p","query":{"limit":"2","x":[1,2]},"status":200,"body":{"items":[1]}}"#,
            "\n\n",
            r#"{"integration":"loki","method":"GET","path":"/l","status":200,"body":"plain text","latency_ms":5}"#,
        );
        let raw = parse_raw_recordings("r.ndjson", text).expect("parses");
        let parsed = super::super::transport::parse_recordings("r.ndjson", text).expect("parses");
        assert_eq!(raw.len(), 2);
        for (r, p) in raw.into_iter().zip(parsed) {
            let (a, b) = (Stored::from(r), Stored::from(p));
            assert_eq!(a.body(), b.body());
            assert_eq!(a.pairs, b.pairs);
            assert_eq!(a.latency_ms, b.latency_ms);
        }
    }

    #[test]
    fn a_bad_line_names_file_and_line() {
        let err = parse_raw_recordings("r.ndjson", "{}\n").expect_err("no fields");
        assert!(err.starts_with("r.ndjson:1: not a recording"), "{err}");
    }
}
