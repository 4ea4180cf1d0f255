//! Approvals from another terminal: `sitrep approve SESSION ACTION` drops a file the agent watches.
//!
//! The approver is the OS owner of the file (fstat on the opened descriptor), never anything
//! written inside it, so one operator cannot pose as a second one for a critical action. The
//! file says which action and which version (digest) it approves.

use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error("no session file at {0} (give the session file path, or an id from `sitrep sessions`)")]
    NoSession(String),
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What an approval file holds: which action, and which version of it. Who approved is never
/// read from here: it is the owner of the file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ApprovalFile {
    pub action_id: String,
    pub session: String,
    /// The digest of the version approved (kind + target + parameters).
    #[serde(default)]
    pub digest: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// What `sitrep approve` recorded, for its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub path: PathBuf,
    pub kind: String,
    pub target: String,
    pub operation: String,
    pub digest: String,
}

/// The directory next to a session file where approvals for it land.
pub fn approvals_dir(session_path: &Path) -> PathBuf {
    session_path.with_extension("approvals")
}

/// The environment variable naming the group whose members may drop approvals (a name or gid).
pub const APPROVERS_GROUP_ENV: &str = "SITREP_APPROVERS_GROUP";

/// Mode of the approvals directory: the operator owns it; the approvers group may create files
/// (write + search) but not list it; others have no access; sticky, so nobody but a file's owner
/// (and the operator) can remove or rename it.
pub const DIR_MODE: u32 = 0o1730;

/// Create (or check) the approvals directory of a session: a real directory owned by this user,
/// in the approvers group, mode [`DIR_MODE`].
pub fn prepare_dir(session_path: &Path) -> io::Result<PathBuf> {
    let dir = approvals_dir(session_path);
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(&dir)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a symlink or file was planted there)",
            dir.display()
        )));
    }
    if meta.uid() != current_uid() {
        return Err(io::Error::other(format!(
            "{} belongs to uid {}, not to the operator",
            dir.display(),
            meta.uid()
        )));
    }
    if let Some(gid) = approvers_gid()? {
        std::os::unix::fs::chown(&dir, None, Some(gid))?;
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(DIR_MODE))?;
    Ok(dir)
}

/// The approvers group from [`APPROVERS_GROUP_ENV`]; `None` keeps the operator's own group.
fn approvers_gid() -> io::Result<Option<u32>> {
    let Ok(name) = std::env::var(APPROVERS_GROUP_ENV) else {
        return Ok(None);
    };
    let name = name.trim();
    if name.is_empty() {
        return Ok(None);
    }
    if let Ok(gid) = name.parse::<u32>() {
        return Ok(Some(gid));
    }
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::other(format!("{APPROVERS_GROUP_ENV}: not a group name")))?;
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer refers to a live local buffer of the stated size; getgrnam_r only
    // writes within them and sets `result` to `&grp` or null.
    let rc = unsafe {
        libc::getgrnam_r(
            c.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return Err(io::Error::other(format!(
            "{APPROVERS_GROUP_ENV}={name}: no such group"
        )));
    }
    Ok(Some(grp.gr_gid))
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

/// `sitrep approve SESSION ACTION`: record this OS user's approval of `action_id`, as the
/// second operator of a critical action.
pub fn submit(session: &str, action_id: &str) -> Result<Submitted, ApproveError> {
    submit_in(session, action_id, &crate::session::sessions_dir())
}

/// [`submit`] with an explicit sessions directory (for ids rather than paths).
pub fn submit_in(
    session: &str,
    action_id: &str,
    sessions_dir: &Path,
) -> Result<Submitted, ApproveError> {
    let refuse = |m: String| Err(ApproveError::Refused(m));
    let session_path = resolve_session(session, sessions_dir)?;
    let log = crate::session::read_file(&session_path)
        .map_err(|e| ApproveError::Refused(format!("cannot read the session: {e}")))?;
    let incident = log.incident();
    let shown = session_path.display().to_string();
    if let Some(outcome) = incident.outcome {
        return refuse(format!(
            "session {shown} has ended ({}): nothing is waiting for approval",
            outcome.name()
        ));
    }
    let Some(a) = incident.action(action_id) else {
        return refuse(format!("session {shown} has no action {action_id}"));
    };
    if a.status != crate::model::ActionStatus::AwaitingApproval {
        return refuse(format!(
            "{action_id} is not waiting for approval: it is {}",
            a.status.name()
        ));
    }
    if a.action.risk != crate::model::Risk::Critical {
        return refuse(format!(
            "{action_id} is {} risk: only the session's operator ({}) approves it, in their console",
            a.action.risk, incident.operator
        ));
    }
    // The same person through another channel (an API token of their name) is not a second one.
    // (The operator's own uid is refused below, with that reason.)
    let me_name = user_name(current_uid());
    if let Some(d) = a
        .decisions
        .iter()
        .find(|d| d.approved && d.by == me_name && me_name != incident.operator)
    {
        return refuse(format!(
            "{me_name} already approved {action_id}{}: a critical action needs two distinct \
             operators",
            crate::model::via_note(&d.via)
        ));
    }
    let dir = approvals_dir(&session_path);
    let dir_meta = fs::symlink_metadata(&dir).map_err(|source| ApproveError::Io {
        path: dir.clone(),
        source,
    })?;
    if !dir_meta.file_type().is_dir() {
        return refuse(format!("{} is not a directory", dir.display()));
    }
    let me = current_uid();
    if dir_meta.uid() == me {
        return refuse(format!(
            "you ({}) are the session's operator: the second approval of a critical action must \
             come from another OS user",
            user_name(me)
        ));
    }
    let digest = a.digest.clone();
    let path = dir.join(format!(
        "{}.{me}.{}.json",
        safe_name(action_id),
        super::approval::short(&digest)
    ));
    let body = ApprovalFile {
        action_id: action_id.into(),
        session: shown,
        digest: digest.clone(),
        at: chrono::Utc::now(),
    };
    let io_err = |source| ApproveError::Io {
        path: path.clone(),
        source,
    };
    // O_EXCL: never reuse or follow what is already there; the new file is ours alone.
    let mut f = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return refuse(format!(
                "{action_id} (version {}) already has your approval ({})",
                super::approval::short(&digest),
                path.display()
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return refuse(format!(
                "you may not approve in {}: ask the operator to add you to the approvers group \
                 ({APPROVERS_GROUP_ENV})",
                dir.display()
            ));
        }
        Err(e) => return Err(io_err(e)),
    };
    let text = serde_json::to_string(&body).map_err(|e| io_err(io::Error::other(e)))?;
    f.write_all(text.as_bytes()).map_err(io_err)?;
    f.sync_all().map_err(io_err)?;
    Ok(Submitted {
        path,
        kind: a.action.kind.clone(),
        target: a.action.target.clone(),
        operation: a.action.operation.clone(),
        digest,
    })
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

/// One approval file found in the approvals directory, with its owner as the approver.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundApproval {
    pub name: String,
    pub uid: u32,
    pub user: String,
    /// The inode change time: when the file was last created or touched.
    pub created: SystemTime,
    pub file: ApprovalFile,
}

/// What a look at the approvals directory found: approvals, and files refused (with why).
#[derive(Debug, Default)]
pub struct Scan {
    pub approvals: Vec<FoundApproval>,
    pub problems: Vec<String>,
}

/// Read the approvals directory. Each file is opened without following symlinks and its owner
/// taken from the open descriptor (fstat), so nothing can be swapped between check and use.
pub fn scan(dir: &Path) -> Scan {
    let mut out = Scan::default();
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() && m.uid() == current_uid() => {
            if m.mode() & 0o002 != 0 {
                out.problems.push(format!(
                    "approvals directory {} is writable by every user: approvals from it are \
                     ignored",
                    dir.display()
                ));
                return out;
            }
        }
        Ok(_) => {
            out.problems.push(format!(
                "approvals directory {} is not a directory owned by the operator: ignored",
                dir.display()
            ));
            return out;
        }
        Err(_) => return out,
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let opened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path);
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                out.problems.push(format!(
                    "symlink {name} in the approvals directory refused: approvals are files \
                     their approver created"
                ));
                continue;
            }
            Err(e) => {
                out.problems
                    .push(format!("approval file {name} cannot be opened: {e}"));
                continue;
            }
        };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.file_type().is_file() {
            out.problems.push(format!(
                "{name} in the approvals directory is not a file: refused"
            ));
            continue;
        }
        if meta.nlink() != 1 {
            out.problems.push(format!(
                "approval file {name} has {} links: a hard link to someone else's file is refused",
                meta.nlink()
            ));
            continue;
        }
        let mut text = String::new();
        if io::Read::read_to_string(&mut io::Read::take(&file, 64 * 1024), &mut text).is_err() {
            continue;
        }
        let Ok(body) = serde_json::from_str::<ApprovalFile>(&text) else {
            out.problems
                .push(format!("approval file {name} is not an approval: refused"));
            continue;
        };
        let created = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
        let uid = meta.uid();
        out.approvals.push(FoundApproval {
            name,
            uid,
            user: user_name(uid),
            created,
            file: body,
        });
    }
    out.approvals.sort_by(|a, b| a.name.cmp(&b.name));
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
    fn the_operator_cannot_be_the_second_approver_and_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.ndjson");
        fs::write(
            &session,
            "{\"sitrep_session\":1,\"id\":\"abc\",\"started\":\"2026-01-01T00:00:00Z\",\"title\":\"t\"}\n\
             {\"t\":0.5,\"event\":{\"type\":\"action_proposed\",\"action\":{\"id\":\"act-1\",\"kind\":\"kubernetes.delete_pod\",\"target\":\"pod/db-0\",\"risk\":\"critical\",\"rationale\":\"r\"}}}\n\
             {\"t\":1.0,\"event\":{\"type\":\"approval_requested\",\"action_id\":\"act-1\",\"risk\":\"critical\",\"approvals_needed\":2,\"digest\":\"abc\"}}\n",
        )
        .unwrap();
        assert!(matches!(
            submit_in("abc", "act-2", dir.path()),
            Err(ApproveError::Refused(m)) if m.contains("no action act-2")
        ));
        let d = prepare_dir(&session).unwrap();
        let mode = fs::symlink_metadata(&d).unwrap().mode() & 0o7777;
        assert_eq!(mode, DIR_MODE);
        let err = submit_in("abc", "act-1", dir.path()).unwrap_err();
        assert!(err.to_string().contains("session's operator"), "{err}");
        std::os::unix::fs::symlink(&session, d.join("act-1.0.abc.json")).unwrap();
        let found = scan(&d);
        assert!(found.approvals.is_empty());
        assert!(
            found.problems.iter().any(|p| p.contains("symlink")),
            "{:?}",
            found.problems
        );
    }
}
