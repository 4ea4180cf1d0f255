//! Session files: append-only NDJSON writer, tolerant streaming reader, replay clock and keyframes.
//!
//! A session file is `<data dir>/sessions/<start>-<slug>.ndjson`: a [`SessionHeader`] line, then one
//! [`crate::model::Record`] a line (`t` is seconds since the start).

pub mod atomic;
pub mod export;
pub mod history;
mod large_line;
pub mod memory;
mod reader;
pub mod replay;
mod writer;

pub use reader::{
    FORMAT_VERSION, FoldedSession, Reader, SessionLog, SessionTail, Tear, fold_file,
    fold_file_with, open_file, read_file, read_tail,
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

/// A new session path in `dir` that no other call in this process returns, and no other process
/// either (short of a 1-in-a-billion clash of their process tags): `<start>-<slug>-<tag>.ndjson`,
/// where the tag is a per-process counter and a per-process random part, kept inside the slug's
/// 48-byte budget (the title's slug is cut shorter to make room). Unique by construction: no
/// probing of the disk, so it costs no I/O and cannot loop whatever the titles.
pub fn unique_session_path_in(dir: &Path, started: DateTime<Utc>, title: &str) -> PathBuf {
    dir.join(format!("{}.ndjson", unique_stem(started, title)))
}

fn unique_stem(started: DateTime<Utc>, title: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tag = format!("{}{}", base36(n), process_tag());
    let budget = SLUG_MAX.saturating_sub(tag.len() + 1);
    let slug = slug_within(title, budget);
    format!("{}-{slug}-{tag}", started.format("%Y%m%dT%H%M%SZ"))
}

/// Six base-36 characters fixed for the life of this process: its pid and start time, mixed.
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        // splitmix64 of the two, so nearby pids and times give unrelated tags.
        let mut z = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let s = base36(z % 36u64.pow(6));
        format!("{s:0>6}")
    })
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

const SLUG_MAX: usize = 48;

/// Maps `items` with `f` over up to one thread per core, a thread for every `per_thread` items
/// at least, each taking every n-th item (opening thousands of small files is system calls and
/// waiting on the disk). The results come thread by thread; a panic in a worker is raised again
/// here.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    per_thread: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().div_ceil(per_thread.max(1)))
        .max(1);
    let work = |k: usize| {
        items
            .iter()
            .skip(k)
            .step_by(threads)
            .map(&f)
            .collect::<Vec<R>>()
    };
    if threads == 1 {
        return work(0);
    }
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|k| scope.spawn(move || work(k))).collect();
        let mut all = work(0);
        for h in handles {
            match h.join() {
                Ok(part) => all.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

/// A file-name-safe form of a title: lowercase ASCII letters and digits joined by `-`, at most 48 bytes.
pub fn slug(title: &str) -> String {
    slug_within(title, SLUG_MAX)
}

fn slug_within(title: &str, max: usize) -> String {
    let max = max.max(1);
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if out.len() >= max {
                break;
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "session".chars().take(max).collect()
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
/// header and its tail only, so listing costs the same for short and million-event sessions, and
/// a file whose size and modification time match the directory's listing cache
/// ([`CACHE_FILE`]) is not opened at all.
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
    let cache_path = dir.join(CACHE_FILE);
    let mut cache = cache::read(&cache_path);
    let mut fresh = cache::Cache::default();
    let mut missed: Vec<(PathBuf, Option<cache::Stamp>)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("ndjson") {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let stamp = entry.metadata().ok().and_then(|m| cache::Stamp::of(&m));
        match stamp.and_then(|s| cache.take(&name, s)) {
            Some(hit) => {
                found.push(hit.summary(path));
                fresh.put(name, hit);
            }
            None => missed.push((path, stamp)),
        }
    }
    // Entries left over are files gone since.
    let changed = !missed.is_empty() || cache.len() > 0;
    let results = par_map(&missed, 256, |(path, stamp)| {
        read_tail(path).map(|tail| {
            let summary = SessionSummary {
                started: tail.header.started,
                title: tail.header.title,
                outcome: tail.outcome,
                duration: tail.duration,
                tear: tail.tear,
                path: path.clone(),
            };
            (summary, *stamp)
        })
    });
    for r in results {
        match r {
            Ok((summary, stamp)) => {
                if let Some(stamp) = stamp {
                    fresh.insert(&summary, stamp);
                }
                found.push(summary);
            }
            Err(e) => errors.push(e),
        }
    }
    if changed {
        // Only a speed-up: a directory the user cannot write is listed the slow way each time.
        let _ = cache::write(&cache_path, &fresh);
    }
    found.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| a.path.cmp(&b.path)));
    (found, errors)
}

/// The listing cache's file name inside a sessions directory (not a session: no `.ndjson`).
pub const CACHE_FILE: &str = ".sitrep-sessions-cache";

/// What `sitrep sessions` learnt from each file, keyed by name, size and modification time: a
/// file that changed in any way is read again.
mod cache {
    use super::{SessionSummary, Tear};
    use crate::model::Outcome;
    use chrono::{DateTime, Utc};
    use std::collections::HashMap;
    use std::io::{BufRead, Write};
    use std::path::{Path, PathBuf};

    const MAGIC: &str = "sitrep-sessions-cache 1";

    /// A file's size and modification time in nanoseconds.
    #[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
    pub struct Stamp(u64, i128);

    impl Stamp {
        pub fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
            let modified = meta.modified().ok()?;
            let ns = match modified.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            };
            Some(Stamp(meta.len(), ns))
        }
    }

    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    pub struct Entry {
        name: String,
        stamp: Stamp,
        started: DateTime<Utc>,
        title: String,
        outcome: Option<Outcome>,
        duration: f64,
        tear: Option<(usize, u64, String)>,
    }

    impl Entry {
        pub fn summary(&self, path: PathBuf) -> SessionSummary {
            SessionSummary {
                path,
                started: self.started,
                title: self.title.clone(),
                outcome: self.outcome,
                duration: self.duration,
                tear: self.tear.as_ref().map(|(line, byte_offset, reason)| Tear {
                    line: *line,
                    byte_offset: *byte_offset,
                    reason: reason.clone(),
                }),
            }
        }
    }

    #[derive(Default)]
    pub struct Cache(HashMap<String, Entry>);

    impl Cache {
        /// Take `name`'s entry out if it was made for a file with this stamp.
        pub fn take(&mut self, name: &str, stamp: Stamp) -> Option<Entry> {
            match self.0.get(name) {
                Some(e) if e.stamp == stamp => self.0.remove(name),
                _ => None,
            }
        }

        pub fn len(&self) -> usize {
            self.0.len()
        }

        pub fn put(&mut self, name: String, entry: Entry) {
            self.0.insert(name, entry);
        }

        pub fn insert(&mut self, s: &SessionSummary, stamp: Stamp) {
            let Some(name) = s.path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                return;
            };
            let entry = Entry {
                name: name.clone(),
                stamp,
                started: s.started,
                title: s.title.clone(),
                outcome: s.outcome,
                duration: s.duration,
                tear: s
                    .tear
                    .as_ref()
                    .map(|t| (t.line, t.byte_offset, t.reason.clone())),
            };
            self.0.insert(name, entry);
        }
    }

    /// The cache in `path`; empty when it is missing, of another version or damaged (a damaged
    /// line only loses its own entry).
    pub fn read(path: &Path) -> Cache {
        let mut cache = Cache::default();
        let Ok(file) = std::fs::File::open(path) else {
            return cache;
        };
        let mut lines = std::io::BufReader::with_capacity(1 << 16, file).lines();
        if !matches!(lines.next(), Some(Ok(l)) if l == MAGIC) {
            return cache;
        }
        for line in lines {
            let Ok(line) = line else { break };
            if let Ok(e) = serde_json::from_str::<Entry>(&line) {
                cache.0.insert(e.name.clone(), e);
            }
        }
        cache
    }

    /// Replace the cache in `path` whole (written aside, then renamed), so a reader never sees
    /// half of it.
    pub fn write(path: &Path, cache: &Cache) -> std::io::Result<()> {
        crate::session::atomic::write(path, |out| {
            writeln!(out, "{MAGIC}")?;
            for e in cache.0.values() {
                serde_json::to_writer(&mut *out, e)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        })
    }
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
    fn unique_paths_differ_for_one_long_title_and_keep_the_budget() {
        let dir = Path::new("/nonexistent-sitrep-dir");
        let started = DateTime::<Utc>::UNIX_EPOCH;
        let title =
            "HighErrorRate on payments-api: the error ratio is above five percent for ten minutes";
        let paths: std::collections::BTreeSet<PathBuf> = (0..2000)
            .map(|_| unique_session_path_in(dir, started, title))
            .collect();
        assert_eq!(paths.len(), 2000);
        for p in &paths {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let stem = stem.unwrap_or_default();
            let (time, rest) = stem.split_at(16);
            assert_eq!(time, "19700101T000000Z");
            assert!(rest.len() <= 49, "{stem}");
            assert!(rest.starts_with("-higherrorrate-on-payments-api"), "{stem}");
        }
        let short = unique_session_path_in(dir, started, "");
        assert!(
            short.to_string_lossy().contains("-session-"),
            "{}",
            short.display()
        );
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

    #[test]
    fn listing_many_sessions_finds_every_one_newest_first() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for i in 0..700 {
            let started = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::seconds(i);
            let h = header(&format!("s{i}"), started, &format!("session {i}"));
            let text = format!(
                "{}\n{{\"t\":{i}.0,\"event\":{{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}}}\n",
                serde_json::to_string(&h).unwrap_or_default()
            );
            std::fs::write(dir.path().join(format!("{i:04}.ndjson")), text)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(dir.path().join("bad.ndjson"), "garbage\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("notes.txt"), "not a session")
            .unwrap_or_else(|e| panic!("{e}"));
        let (found, errors) = list_sessions(dir.path());
        assert_eq!(found.len(), 700);
        assert_eq!(errors.len(), 1);
        assert_eq!(found[0].title, "session 699");
        assert_eq!(found[699].title, "session 0");
        assert!(found.windows(2).all(|w| w[0].started > w[1].started));
        assert_eq!(found[10].duration, 689.0);
        assert_eq!(found[10].outcome, Some(Outcome::Resolved));
    }

    #[test]
    fn the_listing_cache_is_used_only_for_files_that_did_not_change() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let write = |name: &str, title: &str, end: &str| {
            let h = header(name, DateTime::<Utc>::UNIX_EPOCH, title);
            let text = format!("{}\n{end}", serde_json::to_string(&h).unwrap_or_default());
            std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("{e}"));
        };
        let ended = "{\"t\":5.0,\"event\":{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}\n";
        write("a.ndjson", "first", "");
        write("b.ndjson", "second", ended);
        let (found, errors) = list_sessions(dir.path());
        assert!(errors.is_empty());
        assert_eq!(found.len(), 2);
        assert!(dir.path().join(CACHE_FILE).exists());
        // A session that ended since: its size changed, so it is read again.
        write("a.ndjson", "first", ended);
        std::fs::remove_file(dir.path().join("b.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        let (found, _) = list_sessions(dir.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].outcome, Some(Outcome::Resolved));
        assert_eq!(found[0].duration, 5.0);
        // What the cache says is what reading says, and a damaged cache is only slower.
        let (cached, _) = list_sessions(dir.path());
        assert_eq!(cached, found);
        std::fs::write(
            dir.path().join(CACHE_FILE),
            "sitrep-sessions-cache 1\n{not json\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (after, errors) = list_sessions(dir.path());
        assert_eq!(after, found);
        assert!(errors.is_empty());
    }
}
