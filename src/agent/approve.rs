//! Approvals from another terminal: `sitrep approve SESSION ACTION` drops a file the agent watches.
//!
//! The approver is the OS owner of the file, never anything written inside it, so one operator
//! cannot pose as a second one for a critical action.

use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error("no session file at {0} (give the session file path, or an id from `sitrep sessions`)")]
    NoSession(String),
    #[error("session {session} has no pending action {action}")]
    NoAction { session: String, action: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What an approval file holds. Only `action_id` is checked; who approved comes from the owner.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ApprovalFile {
    pub action_id: String,
    pub session: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// The directory next to a session file where approvals for it land.
pub fn approvals_dir(session_path: &Path) -> PathBuf {
    session_path.with_extension("approvals")
}

/// Create the approvals directory so other operators can drop files in it but not remove each
/// other's (sticky and world-writable, like /tmp).
pub fn prepare_dir(session_path: &Path) -> io::Result<PathBuf> {
    let dir = approvals_dir(session_path);
    fs::create_dir_all(&dir)?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777))?;
    Ok(dir)
}

/// Resolve `session` (a session file path, or a session id / file stem in the sessions dir).
pub fn resolve_session(session: &str, sessions_dir: &Path) -> Result<PathBuf, ApproveError> {
    let direct = PathBuf::from(session);
    if direct.is_file() {
        return Ok(direct);
    }
    let entries =
        fs::read_dir(sessions_dir).map_err(|_| ApproveError::NoSession(session.into()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("ndjson") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if stem == session || header_id(&path).as_deref() == Some(session) {
            return Ok(path);
        }
    }
    Err(ApproveError::NoSession(session.into()))
}

fn header_id(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = fs::File::open(path).ok()?;
    let mut first = String::new();
    io::BufReader::new(f).read_line(&mut first).ok()?;
    let v: serde_json::Value = serde_json::from_str(&first).ok()?;
    v.get("id")?.as_str().map(str::to_string)
}

/// Whether the session file shows `action_id` waiting for approval.
fn action_pending(session_path: &Path, action_id: &str) -> bool {
    let Ok(text) = fs::read_to_string(session_path) else {
        return false;
    };
    text.lines().skip(1).any(|line| {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| {
                let ev = v.get("event")?;
                (ev.get("type")?.as_str()? == "approval_requested"
                    && ev.get("action_id")?.as_str()? == action_id)
                    .then_some(())
            })
            .is_some()
    })
}

/// `sitrep approve SESSION ACTION`: record this OS user's approval of `action_id`.
/// Returns the approval file written.
pub fn submit(session: &str, action_id: &str) -> Result<PathBuf, ApproveError> {
    submit_in(session, action_id, &crate::session::sessions_dir())
}

/// [`submit`] with an explicit sessions directory (for ids rather than paths).
pub fn submit_in(
    session: &str,
    action_id: &str,
    sessions_dir: &Path,
) -> Result<PathBuf, ApproveError> {
    let session_path = resolve_session(session, sessions_dir)?;
    if !action_pending(&session_path, action_id) {
        return Err(ApproveError::NoAction {
            session: session_path.display().to_string(),
            action: action_id.into(),
        });
    }
    let dir = approvals_dir(&session_path);
    let uid = current_uid();
    let path = dir.join(format!("{}-{uid}.json", safe_name(action_id)));
    let body = ApprovalFile {
        action_id: action_id.into(),
        session: session_path.display().to_string(),
        at: chrono::Utc::now(),
    };
    let io_err = |source| ApproveError::Io {
        path: path.clone(),
        source,
    };
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&path)
        .map_err(io_err)?;
    let text = serde_json::to_string(&body).map_err(|e| io_err(io::Error::other(e)))?;
    f.write_all(text.as_bytes()).map_err(io_err)?;
    f.sync_all().map_err(io_err)?;
    Ok(path)
}

fn safe_name(action_id: &str) -> String {
    action_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Operators who approved `action_id` by file: (uid, user name), one per file owner.
pub fn scan(dir: &Path, action_id: &str) -> Vec<(u32, String)> {
    let prefix = format!("{}-", safe_name(action_id));
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&prefix) || !name.ends_with(".json") {
            continue;
        }
        // symlink_metadata: a link to someone else's file must not borrow their identity.
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        let Ok(text) = fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(file) = serde_json::from_str::<ApprovalFile>(&text) else {
            continue;
        };
        if file.action_id != action_id {
            continue;
        }
        let uid = meta.uid();
        if !out.iter().any(|(u, _)| *u == uid) {
            out.push((uid, user_name(uid)));
        }
    }
    out.sort();
    out
}

pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The OS user running this process.
pub fn current_user() -> String {
    user_name(current_uid())
}

/// uid -> login name from the password database, or `uid:N` when there is no entry.
pub fn user_name(uid: u32) -> String {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer refers to a live local buffer of the stated size; getpwuid_r only
    // writes within them and sets `result` to `&pwd` or null.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return format!("uid:{uid}");
    }
    // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) };
    name.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe_for_file_names() {
        assert_eq!(safe_name("act-1"), "act-1");
        assert_eq!(safe_name("../x"), "___x");
    }

    #[test]
    fn current_user_has_a_name() {
        assert!(!current_user().is_empty());
    }

    #[test]
    fn unknown_session_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = submit_in("nope", "act-1", dir.path()).unwrap_err();
        assert!(err.to_string().contains("no session file"));
    }

    #[test]
    fn approval_needs_a_pending_action_and_is_owned_by_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.ndjson");
        fs::write(
            &session,
            "{\"sitrep_session\":1,\"id\":\"abc\",\"started\":\"2026-01-01T00:00:00Z\",\"title\":\"t\"}\n\
             {\"t\":1.0,\"event\":{\"type\":\"approval_requested\",\"action_id\":\"act-1\",\"risk\":\"critical\",\"approvals_needed\":2}}\n",
        )
        .unwrap();
        assert!(matches!(
            submit_in("abc", "act-2", dir.path()),
            Err(ApproveError::NoAction { .. })
        ));
        prepare_dir(&session).unwrap();
        let written = submit_in("abc", "act-1", dir.path()).unwrap();
        assert!(written.exists());
        let found = scan(&approvals_dir(&session), "act-1");
        assert_eq!(found, vec![(current_uid(), current_user())]);
        assert!(scan(&approvals_dir(&session), "act-2").is_empty());
    }
}
