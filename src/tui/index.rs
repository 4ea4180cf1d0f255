//! Lookups into the incident on screen: ids to positions, and byte offsets of text lines.

use crate::model::{EvidenceBody, Incident};
use std::collections::HashMap;
use std::sync::Arc;

/// Byte offsets of the lines of one text evidence item, so any line is found in O(1).
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    pub bytes: usize,
    pub starts: Vec<usize>,
}

impl LineIndex {
    pub fn extend(&mut self, text: &str) {
        if text.len() < self.bytes {
            *self = LineIndex::default();
        }
        let b = text.as_bytes();
        if self.bytes == 0 && !text.is_empty() {
            self.starts.push(0);
        } else if self.bytes > 0 && text.len() > self.bytes && b[self.bytes - 1] == b'\n' {
            self.starts.push(self.bytes);
        }
        for (i, c) in b.iter().enumerate().skip(self.bytes) {
            if *c == b'\n' && i + 1 < b.len() {
                self.starts.push(i + 1);
            }
        }
        self.bytes = text.len();
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// The line holding byte `at`.
    pub fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|s| *s <= at).saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    pub fn line<'t>(&self, text: &'t str, i: usize) -> &'t str {
        let Some(&start) = self.starts.get(i) else {
            return "";
        };
        let end = self
            .starts
            .get(i + 1)
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
