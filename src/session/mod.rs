//! Session files: append-only NDJSON writer, tolerant streaming reader, replay clock and keyframes.
//!
//! A session file is `<data dir>/sessions/<start>-<slug>.ndjson`: a [`SessionHeader`] line, then one
//! [`crate::model::Record`] a line (`t` is seconds since the start).

pub mod export;
mod reader;
pub mod replay;
mod writer;

pub use reader::{
    FORMAT_VERSION, FoldedSession, Reader, SessionLog, SessionTail, Tear, fold_file,
    fold_file_with, read_file, read_tail,
};
pub use replay::{OpenedReplay, Replay};
pub use writer::Writer;

use crate::model::{Outcome, SessionHeader};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

/// Why a session file could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read session file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "session".into()))]
    BadHeader {
        path: Option<PathBuf>,
        reason: String,
    },
}

impl SessionError {
    fn with_path(self, file: &Path) -> SessionError {
        match self {
            SessionError::BadHeader { reason, .. } => SessionError::BadHeader {
                path: Some(file.to_path_buf()),
                reason,
            },
            other => other,
        }
    }
}

/// A new header for a session starting now-ish.
pub fn header(id: &str, started: DateTime<Utc>, title: &str) -> SessionHeader {
    SessionHeader {
        sitrep_session: FORMAT_VERSION,
        id: id.to_string(),
        started,
        title: title.to_string(),
    }
}

/// `<data dir>/sessions`: `$SITREP_DATA_DIR/sessions`, else the platform data dir's.
pub fn sessions_dir() -> PathBuf {
    // Resolved here rather than through `config`, which sits on the same tier; a test checks
    // both agree.
    let data = match std::env::var_os("SITREP_DATA_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => directories::ProjectDirs::from("", "", "sitrep")
            .map(|d| d.data_dir().to_path_buf())
            .unwrap_or_else(|| PathBuf::from(".sitrep")),
    };
    data.join("sessions")
}

/// `<data dir>/sessions/<start>-<slug>.ndjson`, with a numeric suffix if that name is taken.
pub fn new_session_path(started: DateTime<Utc>, title: &str) -> PathBuf {
    new_session_path_in(&sessions_dir(), started, title)
}

/// As [`new_session_path`], inside `dir`.
pub fn new_session_path_in(dir: &Path, started: DateTime<Utc>, title: &str) -> PathBuf {
    let stem = format!("{}-{}", started.format("%Y%m%dT%H%M%SZ"), slug(title));
    let mut path = dir.join(format!("{stem}.ndjson"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}.ndjson"));
        n += 1;
    }
    path
}

/// A file-name-safe form of a title: lowercase ASCII letters and digits joined by `-`, at most 48 bytes.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if out.len() >= 48 {
                break;
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "session".into()
    } else {
        out
    }
}

/// One line of `sitrep sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub path: PathBuf,
    pub started: DateTime<Utc>,
    pub title: String,
    /// None while the session is still running (or it stopped without an end record).
    pub outcome: Option<Outcome>,
    pub duration: f64,
    /// Set when the file's last line is torn or corrupt.
    pub tear: Option<Tear>,
}

/// Summaries of every `*.ndjson` session in `dir`, newest first. Unreadable files are returned
/// as errors next to the good ones so one bad file never hides the rest. Each file is read at its
/// header and its tail only, so listing costs the same for short and million-event sessions.
pub fn list_sessions(dir: &Path) -> (Vec<SessionSummary>, Vec<SessionError>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (found, errors),
        Err(source) => {
            errors.push(SessionError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return (found, errors);
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("ndjson") {
            continue;
        }
        match read_tail(&path) {
            Ok(tail) => {
                found.push(SessionSummary {
                    started: tail.header.started,
                    title: tail.header.title,
                    outcome: tail.outcome,
                    duration: tail.duration,
                    tear: tail.tear,
                    path,
                });
            }
            Err(e) => errors.push(e),
        }
    }
    found.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| a.path.cmp(&b.path)));
    (found, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("PaymentsAPI: 5xx > 5%!"), "paymentsapi-5xx-5");
        assert_eq!(slug("  ..  "), "session");
        assert_eq!(slug("Ünïcode title"), "n-code-title");
        assert!(slug(&"x".repeat(200)).len() <= 48);
    }

    #[test]
    fn session_paths_never_collide() {
        let dir = std::env::temp_dir().join(format!("sitrep-paths-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let started = DateTime::<Utc>::UNIX_EPOCH;
        let a = new_session_path_in(&dir, started, "Bad deploy");
        assert!(
            a.ends_with("19700101T000000Z-bad-deploy.ndjson"),
            "{}",
            a.display()
        );
        let _ = std::fs::write(&a, "");
        let b = new_session_path_in(&dir, started, "Bad deploy");
        assert_ne!(a, b);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
