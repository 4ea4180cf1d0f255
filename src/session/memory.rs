//! Memory's index of past incidents and recall over it: one line a session in
//! `<sessions>/.sitrep-memory-index`, kept incrementally on the listing cache's stamps (a session
//! file that changed since is folded again), rebuilt from the files when missing or damaged, and
//! never the source of truth.

use super::cache::Stamp;
use super::fold_file_with;
use crate::model::{Category, Event, PastIncident};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The index's file name inside a sessions directory (not a session: no `.ndjson`).
pub const INDEX_FILE: &str = ".sitrep-memory-index";

const MAGIC: &str = "sitrep-memory-index 2";

/// How many matching sessions a recall keeps (the newest); the count covers them all.
pub const RECALL_LIMIT: usize = 10;

/// One index line: `[size,mtime]<TAB>"file name"<TAB>{entry}`. The stamp and name come first so
/// that an unchanged file's entry is parsed only when a recall's quick text test keeps it.
struct Line {
    name: String,
    stamp: Stamp,
    /// The [`Entry`] as JSON.
    body: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    /// `None` for a file that could not be read: remembered, so it is not read again until it
    /// changes, and reported each time.
    #[serde(default)]
    past: Option<PastIncident>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    error: String,
}

/// Every readable session in a directory, as memory holds it, and the files it skipped.
#[derive(Debug, Default, Clone)]
pub struct Index {
    /// Newest first.
    pub sessions: Vec<PastIncident>,
    /// One line per file that could not be read (damaged, unreadable): skipped, never fatal.
    pub warnings: Vec<String>,
}

/// The index of `dir`, brought up to date: files unchanged since the index was written are not
/// opened, changed and new ones are folded, gone ones dropped; the index file is rewritten
/// when anything changed (a directory the user cannot write is indexed the slow way each time).
pub fn index(dir: &Path) -> Index {
    index_where(dir, &|_| true)
}

/// As [`index`], with only the sessions whose index entry (its JSON text) passes `keep` parsed
/// and returned: a recall passes a cheap text test (the fingerprint, a subject's name), so it
/// parses the few entries that can match instead of all of them.
pub fn index_where(dir: &Path, keep: &dyn Fn(&str) -> bool) -> Index {
    let mut out = Index::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.warnings.push(format!("{}: {e}", dir.display()));
            return out;
        }
    };
    let index_path = dir.join(INDEX_FILE);
    let mut old = read(&index_path);
    let mut fresh: Vec<Line> = Vec::new();
    let mut missed: Vec<(String, PathBuf, Option<Stamp>)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("ndjson") {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let stamp = entry.metadata().ok().and_then(|m| Stamp::of(&m));
        match old.remove(&name) {
            Some(line) if Some(line.stamp) == stamp => fresh.push(line),
            _ => missed.push((name, path, stamp)),
        }
    }
    let changed = !missed.is_empty() || !old.is_empty();
    let results = super::par_map(&missed, 64, |(name, path, stamp)| {
        let line = match fold_file_with(path, lighten) {
            Ok(f) => (
                Some(PastIncident::from_incident(&f.incident)),
                String::new(),
            ),
            Err(e) => (None, format!("memory skipped {}: {e}", path.display())),
        };
        (name.clone(), *stamp, line)
    });
    let add = |out: &mut Index, entry: Entry| {
        if !entry.error.is_empty() {
            out.warnings.push(entry.error);
        }
        out.sessions.extend(entry.past);
    };
    for (name, stamp, (past, error)) in results {
        let entry = Entry { past, error };
        match stamp {
            // Added below with the unchanged ones.
            Some(stamp) => fresh.push(Line {
                name,
                stamp,
                body: serde_json::to_string(&entry).unwrap_or_default(),
            }),
            // No stamp: usable now, read again next time.
            None => add(&mut out, entry),
        }
    }
    if changed {
        let _ = write(&index_path, &fresh);
    }
    // A file that could not be read (`past` is null) is reported whatever the test says.
    let unreadable = |l: &Line| l.body.starts_with("{\"past\":null");
    let wanted: Vec<&str> = fresh
        .iter()
        .filter(|l| keep(&l.body) || unreadable(l))
        .map(|l| l.body.as_str())
        .collect();
    // Parsing thousands of entries is CPU work: spread over the cores in contiguous chunks.
    let parse = |chunk: &[&str]| -> Vec<Entry> {
        chunk
            .iter()
            .filter_map(|body| serde_json::from_str::<Entry>(body).ok())
            .collect()
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(wanted.len().div_ceil(1024))
        .max(1);
    let parsed: Vec<Vec<Entry>> = if threads == 1 {
        vec![parse(&wanted)]
    } else {
        let size = wanted.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = wanted
                .chunks(size)
                .map(|chunk| scope.spawn(move || parse(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(part) => part,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        })
    };
    for entry in parsed.into_iter().flatten() {
        add(&mut out, entry);
    }
    out.sessions
        .sort_by(|a, b| b.started.cmp(&a.started).then_with(|| a.id.cmp(&b.id)));
    out
}

/// What the index needs from an event: evidence bodies and model exchanges are dropped before
/// the fold, so indexing a long session costs little memory.
fn lighten(event: Event) -> Event {
    match event {
        Event::EvidenceAdded { mut evidence } => {
            evidence.body = crate::model::EvidenceBody::Text {
                language: String::new(),
                text: String::new(),
            };
            Event::EvidenceAdded { evidence }
        }
        Event::EvidenceAppended { evidence_id, .. } => Event::EvidenceAppended {
            evidence_id,
            text: String::new(),
        },
        Event::Report { .. } => Event::Report {
            markdown: String::new(),
        },
        Event::ModelExchange { .. } | Event::Observed { .. } | Event::ChatDelta { .. } => {
            Event::Warning {
                message: String::new(),
            }
        }
        other => other,
    }
}

fn read(path: &Path) -> HashMap<String, Line> {
    let mut out = HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return out;
    }
    for line in lines {
        // A damaged line only loses its own entry: that session is folded again.
        let mut parts = line.splitn(3, '\t');
        let (Some(stamp), Some(name), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(stamp), Ok(name)) = (
            serde_json::from_str::<Stamp>(stamp),
            serde_json::from_str::<String>(name),
        ) else {
            continue;
        };
        out.insert(
            name.clone(),
            Line {
                name,
                stamp,
                body: body.to_string(),
            },
        );
    }
    out
}

fn write(path: &Path, lines: &[Line]) -> std::io::Result<()> {
    super::atomic::write(path, |out| {
        writeln!(out, "{MAGIC}")?;
        for l in lines {
            serde_json::to_writer(&mut *out, &l.stamp)?;
            out.write_all(b"\t")?;
            serde_json::to_writer(&mut *out, &l.name)?;
            writeln!(out, "\t{}", l.body)?;
        }
        Ok(())
    })
}

/// What a recall looks for.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// This session: never recalled by itself.
    pub exclude_id: String,
    pub fingerprint: String,
    pub alertname: String,
    /// Names of what this session is about (workload, pod, database, ...), as far as known.
    pub subject: Vec<String>,
    /// This session's verdict, once known.
    pub category: Option<Category>,
}

impl Query {
    /// Why `past` answers this query, if it does.
    pub fn matches(&self, past: &PastIncident) -> Option<&'static str> {
        if past.id == self.exclude_id {
            return None;
        }
        let about = self.subject.iter().any(|s| past.about(s));
        if !self.fingerprint.is_empty() && past.fingerprint == self.fingerprint {
            Some("same alert fingerprint")
        } else if !self.alertname.is_empty() && past.alertname == self.alertname && about {
            Some("same alert and subject")
        } else if about && self.category.is_some() && past.category == self.category {
            Some("same subject and verdict")
        } else {
            None
        }
    }
}

impl Query {
    /// A cheap test on an index entry's JSON text that every entry this query (or the same query
    /// with a verdict) can match passes: it names the fingerprint or a subject.
    pub fn may_match(&self, entry: &str) -> bool {
        (!self.fingerprint.is_empty() && entry.contains(self.fingerprint.as_str()))
            || self
                .subject
                .iter()
                .any(|s| !s.is_empty() && entry.contains(s.as_str()))
    }
}

/// The index of `dir` with only the entries `query` may match parsed: what triage loads.
pub fn index_for(dir: &Path, query: &Query) -> Index {
    index_where(dir, &|entry| query.may_match(entry))
}

/// The past sessions (newest first, at most [`RECALL_LIMIT`]) that answer `query`, each with why,
/// and how many matched in all.
pub fn recall(sessions: &[PastIncident], query: &Query) -> (Vec<PastIncident>, usize) {
    let mut out = Vec::new();
    let mut total = 0;
    for s in sessions {
        if let Some(why) = query.matches(s) {
            total += 1;
            if out.len() < RECALL_LIMIT {
                let mut s = s.clone();
                s.matched = why.to_string();
                // The labels are in the index; a recall names the alert.
                s.labels.clear();
                out.push(s);
            }
        }
    }
    (out, total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, Outcome, SubjectObject};
    use chrono::{DateTime, Utc};

    fn session(dir: &Path, i: i64, alertname: &str, subject: &str) {
        let started = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::hours(i);
        let h = super::super::header(&format!("s{i}"), started, "t");
        let mut alert = Alert::default();
        alert.labels.insert("alertname".into(), alertname.into());
        let events = [
            Event::SessionStarted {
                id: format!("s{i}"),
                title: "t".into(),
                started,
                mode: Default::default(),
                alert: Some(alert),
                problem: None,
                case: None,
                read_only: false,
                operator: "op".into(),
            },
            Event::Subject {
                objects: vec![SubjectObject {
                    kind: "Deployment".into(),
                    name: subject.into(),
                    namespace: "shop".into(),
                    how: "test".into(),
                }],
                cluster: None,
            },
            Event::Diagnosis {
                category: Category::ConfigurationError,
                root_cause: "bad tag".into(),
                confidence: 0.9,
            },
            Event::SessionEnded {
                outcome: Outcome::Diagnosed,
            },
        ];
        let mut text = serde_json::to_string(&h).unwrap_or_default();
        text.push('\n');
        for (n, e) in events.into_iter().enumerate() {
            let r = crate::model::Record {
                t: n as f64,
                event: e,
            };
            text.push_str(&serde_json::to_string(&r).unwrap_or_default());
            text.push('\n');
        }
        std::fs::write(dir.join(format!("s{i:03}.ndjson")), text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_index_is_kept_incrementally_and_skips_damaged_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for i in 0..5 {
            session(dir.path(), i, "Down", "checkout");
        }
        std::fs::write(dir.path().join("bad.ndjson"), "garbage\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let first = index(dir.path());
        assert_eq!(first.sessions.len(), 5);
        assert_eq!(first.warnings.len(), 1, "{:?}", first.warnings);
        assert_eq!(first.sessions[0].id, "s4");
        assert!(dir.path().join(INDEX_FILE).exists());
        // From the index: the same answer; a new session is added, a gone one dropped.
        session(dir.path(), 9, "Other", "search");
        std::fs::remove_file(dir.path().join("s000.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        let second = index(dir.path());
        assert_eq!(second.sessions.len(), 5);
        assert_eq!(second.sessions[0].id, "s9");
        // A damaged index is only slower.
        std::fs::write(
            dir.path().join(INDEX_FILE),
            "sitrep-memory-index 1\n{oops\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let third = index(dir.path());
        assert_eq!(
            third.sessions.iter().map(|s| &s.id).collect::<Vec<_>>(),
            second.sessions.iter().map(|s| &s.id).collect::<Vec<_>>()
        );
    }

    #[test]
    fn recall_matches_by_fingerprint_alert_and_subject_or_subject_and_verdict() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        session(dir.path(), 1, "Down", "checkout");
        session(dir.path(), 2, "Slow", "checkout");
        session(dir.path(), 3, "Down", "search");
        let idx = index(dir.path());
        let q = Query {
            alertname: "Down".into(),
            subject: vec!["checkout".into()],
            ..Query::default()
        };
        let (found, total) = recall(&idx.sessions, &q);
        assert_eq!(total, 1);
        assert_eq!(found[0].id, "s1");
        assert_eq!(found[0].matched, "same alert and subject");
        let q = Query {
            category: Some(Category::ConfigurationError),
            ..q
        };
        let (found, _) = recall(&idx.sessions, &q);
        let ids: Vec<&str> = found.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["s2", "s1"]);
        let fp = idx.sessions[0].fingerprint.clone();
        let q = Query {
            fingerprint: fp,
            exclude_id: "s3".into(),
            ..Query::default()
        };
        let (found, total) = recall(&idx.sessions, &q);
        assert_eq!((found.len(), total), (1, 1));
        assert_eq!(found[0].id, "s1");
    }
}
