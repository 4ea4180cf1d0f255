//! Lookups into the incident on screen: ids to positions, and byte offsets of text lines.

use crate::model::{EvidenceBody, Incident};
use std::collections::HashMap;
use std::sync::Arc;

/// Byte offsets of the lines of one text evidence item, so any line is found in O(1). Four bytes
/// a line, not eight: offsets are kept modulo 4 GiB, beside the few lines where a multiple of
/// 4 GiB is passed.
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    pub bytes: usize,
    starts: Vec<u32>,
    /// For each multiple of 4 GiB passed, the first line starting past it.
    wraps: Vec<usize>,
}

impl LineIndex {
    pub fn extend(&mut self, text: &str) {
        if text.len() < self.bytes || !text.is_char_boundary(self.bytes) {
            *self = LineIndex::default();
        }
        let b = text.as_bytes();
        if self.bytes == 0 && !text.is_empty() {
            self.push(0);
        } else if self.bytes > 0 && text.len() > self.bytes && b[self.bytes - 1] == b'\n' {
            self.push(self.bytes);
        }
        // `str::find` of a char searches a word at a time: several times faster than a byte
        // loop over a body of a hundred megabytes.
        let mut at = self.bytes;
        while let Some(p) = text.get(at..).and_then(|rest| rest.find('\n')) {
            let next = at + p + 1;
            if next < b.len() {
                self.push(next);
            }
            at = next;
        }
        self.bytes = text.len();
        // Growth by doubling leaves up to as much again spare.
        if self.starts.capacity() - self.starts.len() > self.starts.len() / 8 + 1024 {
            self.starts.shrink_to_fit();
        }
    }

    fn push(&mut self, at: usize) {
        let epoch = (at as u64 >> 32) as usize;
        while self.wraps.len() < epoch {
            self.wraps.push(self.starts.len());
        }
        // The low half; `wraps` holds the high one.
        self.starts.push(at as u32);
    }

    /// Byte offset where line `i` starts.
    fn start(&self, i: usize) -> Option<usize> {
        let low = u64::from(*self.starts.get(i)?);
        let epoch = self.wraps.partition_point(|w| *w <= i) as u64;
        usize::try_from(low | (epoch << 32)).ok()
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// The line holding byte `at`.
    pub fn line_of(&self, at: usize) -> usize {
        let (mut lo, mut hi) = (0, self.starts.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.start(mid).is_some_and(|s| s <= at) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    pub fn line<'t>(&self, text: &'t str, i: usize) -> &'t str {
        let Some(start) = self.start(i) else {
            return "";
        };
        let end = self
            .start(i + 1)
            .map(|e| e - 1)
            .unwrap_or(self.bytes)
            .min(text.len());
        let s = text.get(start..end.max(start)).unwrap_or("");
        let s = s.strip_suffix('\n').unwrap_or(s);
        s.strip_suffix('\r').unwrap_or(s)
    }
}

/// Lookups from ids to positions in the incident, kept in step with the fold.
#[derive(Default)]
pub struct Index {
    events: usize,
    tools: HashMap<String, usize>,
    tools_len: usize,
    evidence: HashMap<String, usize>,
    evidence_len: usize,
    /// Line offsets of the item on screen (text bodies, or JSON as pretty-printed once).
    pub lines: HashMap<String, LineIndex>,
    /// Pretty-printed JSON of the item on screen, built once when it is opened and shared
    /// with a search running beside the UI.
    pretty: HashMap<String, Arc<str>>,
}

/// A text view of one evidence item: the body held by the incident (or its pretty JSON, held
/// here once), and where its lines start.
pub struct Doc<'a> {
    pub text: &'a str,
    pub lines: &'a LineIndex,
    pub language: &'a str,
}

impl Doc<'_> {
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn line(&self, i: usize) -> &str {
        self.lines.line(self.text, i)
    }
}

impl Index {
    pub(crate) fn sync(&mut self, inc: &Incident) {
        if inc.events < self.events
            || inc.tools.len() < self.tools_len
            || inc.evidence.len() < self.evidence_len
        {
            *self = Index::default();
        }
        self.events = inc.events;
        for (i, t) in inc.tools.iter().enumerate().skip(self.tools_len) {
            self.tools.insert(t.call_id.clone(), i);
        }
        self.tools_len = inc.tools.len();
        for (i, e) in inc.evidence.iter().enumerate().skip(self.evidence_len) {
            self.evidence.insert(e.id.clone(), i);
        }
        self.evidence_len = inc.evidence.len();
        for (id, li) in self.lines.iter_mut() {
            if let Some(&i) = self.evidence.get(id)
                && let Some(EvidenceBody::Text { text, .. }) = inc.evidence.get(i).map(|e| &e.body)
                && text.len() != li.bytes
            {
                li.extend(text);
            }
        }
    }

    pub fn tool<'a>(
        &self,
        inc: &'a Incident,
        call_id: &str,
    ) -> Option<&'a crate::model::ToolCallState> {
        self.tools
            .get(call_id)
            .and_then(|i| inc.tools.get(*i))
            .filter(|t| t.call_id == call_id)
            .or_else(|| inc.tool(call_id))
    }

    pub fn evidence<'a>(&self, inc: &'a Incident, id: &str) -> Option<&'a crate::model::Evidence> {
        self.evidence
            .get(id)
            .and_then(|i| inc.evidence.get(*i))
            .map(|e| &**e)
            .filter(|e| e.id == id)
            .or_else(|| inc.evidence(id))
    }

    /// The shared text of an opened text or JSON item, for a search on another thread.
    pub fn source(&self, inc: &Incident, id: &str) -> Option<super::search_job::Source> {
        use super::search_job::Source;
        if let Some(p) = self.pretty.get(id) {
            return Some(Source::Pretty(p.clone()));
        }
        let i = *self.evidence.get(id)?;
        let e = inc.evidence.get(i).filter(|e| e.id == id)?;
        matches!(e.body, EvidenceBody::Text { .. }).then(|| Source::Evidence(e.clone()))
    }

    /// The item as lines of text, when it is text or JSON and has been opened.
    pub fn doc<'a>(&'a self, inc: &'a Incident, id: &str) -> Option<Doc<'a>> {
        let lines = self.lines.get(id)?;
        match &self.evidence(inc, id)?.body {
            EvidenceBody::Text { language, text } => Some(Doc {
                text,
                lines,
                language,
            }),
            EvidenceBody::Json { .. } => Some(Doc {
                text: self.pretty.get(id)?,
                lines,
                language: "json",
            }),
            _ => None,
        }
    }

    pub(crate) fn ensure_lines(&mut self, inc: &Incident, id: &str) {
        if self.lines.contains_key(id) {
            return;
        }
        let mut li = LineIndex::default();
        let pretty = match self.evidence(inc, id).map(|e| &e.body) {
            Some(EvidenceBody::Text { text, .. }) => {
                li.extend(text);
                None
            }
            Some(EvidenceBody::Json { value }) => {
                let p: Arc<str> = serde_json::to_string_pretty(value)
                    .unwrap_or_default()
                    .into();
                li.extend(&p);
                Some(p)
            }
            _ => return,
        };
        // Only the item on screen is indexed; forget the others to bound memory.
        self.lines.clear();
        self.pretty.clear();
        self.lines.insert(id.to_string(), li);
        if let Some(p) = pretty {
            self.pretty.insert(id.to_string(), p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_found_as_the_text_grows() {
        let mut li = LineIndex::default();
        li.extend("a\r\nbb\n");
        assert_eq!(li.len(), 2);
        let text = "a\r\nbb\nccc\nd";
        li.extend(text);
        let lines: Vec<&str> = (0..li.len()).map(|i| li.line(text, i)).collect();
        assert_eq!(lines, ["a", "bb", "ccc", "d"]);
        assert_eq!(li.line(text, 9), "");
        assert_eq!(
            (li.line_of(0), li.line_of(4), li.line_of(6), li.line_of(11)),
            (0, 1, 2, 3)
        );
        li.extend("x");
        assert_eq!(li.line("x", 0), "x", "a shorter text starts over");
    }

    #[test]
    fn offsets_past_four_gibibytes_keep_their_high_half() {
        let mut li = LineIndex::default();
        let far = [
            0usize,
            10,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 7,
            (3 << 32) + 1,
        ];
        for at in far {
            li.push(at);
        }
        let back: Vec<Option<usize>> = (0..far.len()).map(|i| li.start(i)).collect();
        assert_eq!(back, far.map(Some));
        assert_eq!(li.line_of((1 << 32) + 3), 3);
        assert_eq!(li.line_of(usize::MAX), 5);
    }
}
