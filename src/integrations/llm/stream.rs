//! Line framing for SSE and NDJSON bodies, and the per-provider assembler interface.

use super::{LlmError, Reply};
use serde_json::Value;

/// Splits a byte stream into lines, keeping a partial line (and a split UTF-8 sequence) until
/// the rest arrives.
#[derive(Default)]
pub(super) struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    pub(super) fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            out.push(text.trim_end_matches('\r').to_string());
        }
        out
    }

    /// What is left after the body ended without a final newline.
    pub(super) fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        let text = String::from_utf8_lossy(&rest).trim().to_string();
        (!text.is_empty()).then_some(text)
    }
}

/// Turns one provider's stream lines (or whole body) into a [`Reply`].
pub(super) trait Assembler: Send {
    /// One line of the stream; returns new answer text to show at once.
    fn line(&mut self, line: &str) -> Result<Option<String>, LlmError>;
    /// The stream ended: the reply, or `Truncated` when the end event never came.
    fn finish(&mut self) -> Result<Reply, LlmError>;
    /// A non-streaming response body.
    fn whole(&mut self, body: &Value) -> Result<Reply, LlmError>;
}

/// The payload of an SSE `data:` line (`None` for comments, `event:` lines and blanks).
pub(super) fn sse_data(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("data:")?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_survive_any_split() {
        let body = "data: {\"a\":\"é\"}\r\n\ndata: [DONE]\n";
        let bytes = body.as_bytes();
        for cut in 0..bytes.len() {
            let mut l = Lines::default();
            let mut got = l.push(&bytes[..cut]);
            got.extend(l.push(&bytes[cut..]));
            assert_eq!(
                got,
                vec!["data: {\"a\":\"é\"}", "", "data: [DONE]"],
                "cut {cut}"
            );
            assert_eq!(l.finish(), None);
        }
    }

    #[test]
    fn sse_data_prefix() {
        assert_eq!(sse_data("data: x"), Some("x"));
        assert_eq!(sse_data("data:x"), Some("x"));
        assert_eq!(sse_data("event: ping"), None);
        assert_eq!(sse_data(": comment"), None);
    }
}
