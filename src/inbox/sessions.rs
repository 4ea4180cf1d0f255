//! Which saved sessions investigate which alert: the alert in each session's start record, by fingerprint.

use super::fingerprint;
use crate::model::{Event, Record};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A session investigating an alert.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertSession {
    pub path: PathBuf,
    /// No end record yet: someone (`sitrep serve`, another console) is still running it.
    pub running: bool,
}

/// Fingerprint of the alert each session in `dir` started from -> the newest such session.
pub fn by_fingerprint(dir: &Path) -> BTreeMap<String, AlertSession> {
    let (found, _) = crate::session::list_sessions(dir);
    let mut out = BTreeMap::new();
    // list_sessions is newest first: the first session seen for an alert wins.
    for s in found {
        let Some(fp) = started_from(&s.path) else {
            continue;
        };
        out.entry(fp).or_insert(AlertSession {
            running: s.outcome.is_none() && s.tear.is_none(),
            path: s.path,
        });
    }
    out
}

/// The fingerprint of the alert in the session's start record (the line after the header).
fn started_from(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut lines = BufReader::new(file).lines();
    let _header = lines.next()?.ok()?;
    let record: Record = serde_json::from_str(&lines.next()?.ok()?).ok()?;
    match record.event {
        Event::SessionStarted {
            alert: Some(alert), ..
        } => Some(if alert.fingerprint.is_empty() {
            fingerprint(&alert.labels)
        } else {
            alert.fingerprint
        }),
        _ => None,
    }
}
