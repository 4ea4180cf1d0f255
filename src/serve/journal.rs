//! The serve journal: what the server claimed and queued, appended as it happens, and the
//! recovery that rebuilds claims and the queue from it after any stop.

use super::*;

/// The server's own record of what it claimed and queued, inside the sessions directory (not a
/// session: no `.ndjson`), so a restart rebuilds dedup and starts what was waiting.
pub const JOURNAL_FILE: &str = ".sitrep-serve-journal";

/// One line of the serve journal: a claim (with its trigger while it may still be waiting), more
/// alerts joining a queued claim, or a claim withdrawn.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct JournalEntry {
    pub(super) session: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) group_key: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) fingerprints: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) payload: Option<WebhookPayload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) problem: Option<String>,
    /// The payload's alerts join the (queued) claim `session`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) join: bool,
    /// The claim was withdrawn (it could not start).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) forget: bool,
}

impl JournalEntry {
    pub(super) fn trigger(&self) -> Option<Trigger> {
        match (&self.payload, &self.problem) {
            (Some(p), _) => Some(Trigger::Alert(p.clone())),
            (None, Some(t)) => Some(Trigger::Problem(t.clone())),
            (None, None) => None,
        }
    }
}

pub(super) fn journal_path(dir: &Path) -> PathBuf {
    dir.join(JOURNAL_FILE)
}

/// Appends one line to the journal (one `write` of a whole line, `O_APPEND`: lines from
/// concurrent handlers never interleave), flushed to disk: a claim the server cannot record is
/// not accepted.
pub(super) fn journal_append(dir: &Path, entry: &JournalEntry) -> std::io::Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(journal_path(dir))?;
    file.write_all(&line)?;
    file.sync_data()
}

/// What a restart found: the claims of every session the journal names, the investigations that
/// were still waiting, and how many running ones it marked interrupted.
#[derive(Debug, Default)]
pub(super) struct Recovered {
    pub(super) claims: Claims,
    pub(super) queue: VecDeque<Queued>,
    pub(super) interrupted: usize,
    /// Sessions that ran before the stop: what their files held when it came, for the store.
    pub(super) ran: Vec<Ran>,
}

/// A session that ran before a stop, as its file was when the server came back (before it was
/// marked interrupted).
#[derive(Debug)]
pub(super) struct Ran {
    pub(super) id: String,
    pub(super) path: PathBuf,
    /// The file's length then: the records written up to the stop.
    pub(super) len: u64,
    /// How it had ended, if it had.
    pub(super) outcome: Option<Outcome>,
}

impl Ran {
    /// The file's whole lines up to the stop (a torn last line left out).
    pub(super) fn lines(&self) -> std::io::Result<Vec<String>> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(&self.path)?
            .take(self.len)
            .read_to_end(&mut bytes)?;
        let whole = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(end) => &bytes[..end],
            None => &bytes[..0],
        };
        Ok(String::from_utf8_lossy(whole)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

/// Rebuilds the server's state from the sessions directory after any stop, clean or not: every
/// claim in the journal whose session file exists is restored (so a re-delivered alert is a
/// duplicate), a session of this server's that has no end (the server was killed) is marked
/// `interrupted` (nothing pending in it is approved), and a claim with no session file yet (it
/// was queued) is queued again, in its original order. The journal is then rewritten compactly.
pub(super) fn recover(dir: &Path) -> Recovered {
    let mut out = Recovered::default();
    let path = journal_path(dir);
    // Only a regular file is read (and later replaced): not a device or a directory in its place.
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        return out;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return out;
    };
    let mut order: Vec<String> = Vec::new();
    let mut entries: HashMap<String, JournalEntry> = HashMap::new();
    for line in text.lines() {
        // A torn last line (killed mid-write) was never acknowledged: skip it.
        let Ok(e) = serde_json::from_str::<JournalEntry>(line) else {
            continue;
        };
        if e.forget {
            entries.remove(&e.session);
            continue;
        }
        if e.join {
            if let Some(base) = entries.get_mut(&e.session) {
                base.fingerprints.extend(e.fingerprints);
                if let (Some(p), Some(more)) = (&mut base.payload, e.payload) {
                    p.alerts.extend(more.alerts);
                }
            }
            continue;
        }
        if !entries.contains_key(&e.session) {
            order.push(e.session.clone());
        }
        entries.insert(e.session.clone(), e);
    }
    let mut kept: Vec<JournalEntry> = Vec::new();
    for id in order {
        let Some(mut e) = entries.remove(&id) else {
            continue;
        };
        if id.contains(['/', '\\']) || id.starts_with('.') {
            continue;
        }
        let path = dir.join(format!("{id}.ndjson"));
        if path.exists() {
            out.claims.record(&e.group_key, &e.fingerprints, &id);
            // It ran before the restart and will not run again: its claims age from now.
            out.claims.finish(&id, Instant::now());
            out.ran.push(Ran {
                id: id.clone(),
                path: path.clone(),
                len: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                outcome: session::read_tail(&path).ok().and_then(|t| t.outcome),
            });
            match mark_interrupted(&path) {
                Ok(true) => out.interrupted += 1,
                Ok(false) => {}
                Err(err) => tracing::warn!("cannot mark {} interrupted: {err}", path.display()),
            }
            e.payload = None;
            e.problem = None;
            kept.push(e);
        } else if let Some(trigger) = e.trigger() {
            out.claims.record(&e.group_key, &e.fingerprints, &id);
            out.queue.push_back(Queued {
                id: id.clone(),
                path,
                title: e.title.clone(),
                trigger,
            });
            kept.push(e);
        }
    }
    if let Err(err) = rewrite_journal(dir, &kept) {
        tracing::warn!("cannot compact the serve journal: {err}");
    }
    out
}

pub(super) fn rewrite_journal(dir: &Path, entries: &[JournalEntry]) -> std::io::Result<()> {
    use std::io::Write;
    crate::session::atomic::write(&journal_path(dir), |out| {
        for e in entries {
            serde_json::to_writer(&mut *out, e).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Ends a session that has no end record as `interrupted`, after a warning saying why; a torn
/// last line (half written when the process died) is cut first, so the end is readable. `false`
/// when the session had ended.
pub(super) fn mark_interrupted(path: &Path) -> anyhow::Result<bool> {
    use std::io::Write;
    let tail = session::read_tail(path)?;
    if tail.outcome.is_some() {
        return Ok(false);
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    if let Some(tear) = &tail.tear {
        file.set_len(tear.byte_offset)?;
    } else {
        // A last line cut exactly at its end still needs its newline.
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        let mut reader = std::fs::File::open(path)?;
        if reader.seek(SeekFrom::End(-1)).is_ok()
            && reader.read_exact(&mut last).is_ok()
            && last[0] != b'\n'
        {
            file.write_all(b"\n")?;
        }
    }
    let warning = crate::model::Event::Warning {
        message: "sitrep serve stopped while this investigation ran (killed); marked \
                  interrupted when it restarted: nothing pending was approved"
            .into(),
    };
    // A report written before the kill named the outcome it expected: it is written again
    // with the one the session ends with.
    let report = match session::fold_file(path) {
        Ok(mut folded) if folded.incident.report.is_some() => {
            folded.incident.apply(tail.duration, &warning);
            let markdown =
                session::export::markdown_ending(&folded.incident, Some(Outcome::Interrupted));
            let beside = path.with_extension("md");
            if let Err(e) = session::atomic::write_all(&beside, markdown.as_bytes()) {
                tracing::warn!("cannot rewrite the report {}: {e}", beside.display());
            }
            Some(crate::model::Event::Report { markdown })
        }
        _ => None,
    };
    let mut lines = Vec::new();
    let ended = crate::model::Event::SessionEnded {
        outcome: Outcome::Interrupted,
    };
    for event in std::iter::once(warning).chain(report).chain([ended]) {
        let record = crate::model::Record {
            t: tail.duration,
            event,
        };
        lines.extend(serde_json::to_vec(&record)?);
        lines.push(b'\n');
    }
    file.write_all(&lines)?;
    file.sync_data()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(fp: &str, group: &str) -> WebhookPayload {
        WebhookPayload {
            version: "4".into(),
            group_key: group.into(),
            alerts: vec![crate::model::Alert {
                fingerprint: fp.into(),
                ..crate::model::Alert::default()
            }],
            ..WebhookPayload::default()
        }
    }

    #[test]
    fn recovery_rebuilds_claims_marks_the_unended_and_requeues_the_waiting() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path();
        let h = session::header("x", chrono::Utc::now(), "t");
        let header = serde_json::to_string(&h).unwrap_or_default();
        let ended = "{\"t\":1.0,\"event\":{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}";
        let stage = "{\"t\":0.5,\"event\":{\"type\":\"stage_started\",\"stage\":\"triage\"}}";
        // s1 ended; s2 was killed mid-line; s3 never got its file (queued); s4 was withdrawn.
        let write = |name: &str, text: String| {
            std::fs::write(d.join(name), text).unwrap_or_else(|e| panic!("{e}"));
        };
        write("s1.ndjson", format!("{header}\n{ended}\n"));
        write("s2.ndjson", format!("{header}\n{stage}\n{{\"t\":0.7,\"ev"));
        let entries = [
            entry_for(
                "s1",
                "g1",
                &["f1".into()],
                "one",
                &Trigger::Alert(payload("f1", "g1")),
                false,
            ),
            entry_for(
                "s2",
                "g2",
                &["f2".into()],
                "two",
                &Trigger::Alert(payload("f2", "g2")),
                false,
            ),
            entry_for(
                "s3",
                "g3",
                &["f3".into()],
                "three",
                &Trigger::Alert(payload("f3", "g3")),
                false,
            ),
            entry_for(
                "s3",
                "g3",
                &["f5".into()],
                "three",
                &Trigger::Alert(payload("f5", "g3")),
                true,
            ),
            entry_for(
                "s4",
                "g4",
                &["f4".into()],
                "four",
                &Trigger::Problem("p".into()),
                false,
            ),
            JournalEntry {
                session: "s4".into(),
                forget: true,
                ..JournalEntry::default()
            },
        ];
        for e in &entries {
            journal_append(d, e).unwrap_or_else(|e| panic!("{e}"));
        }
        // A torn last journal line (killed mid-append) is skipped.
        let mut j = std::fs::read_to_string(journal_path(d)).unwrap_or_default();
        j.push_str("{\"session\":\"s9\",\"fing");
        std::fs::write(journal_path(d), j).unwrap_or_else(|e| panic!("{e}"));

        let r = recover(d);
        assert_eq!(r.interrupted, 1);
        assert_eq!(r.claims.session_of("f1"), Some("s1"));
        assert_eq!(r.claims.session_of("f2"), Some("s2"));
        assert_eq!(r.claims.session_of("f5"), Some("s3"));
        assert_eq!(r.claims.session_of("f4"), None);
        assert_eq!(r.queue.len(), 1);
        assert_eq!(r.queue[0].id, "s3");
        assert!(matches!(&r.queue[0].trigger, Trigger::Alert(p) if p.alerts.len() == 2));
        let log = session::read_file(&d.join("s2.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        assert!(log.tear.is_none());
        assert_eq!(log.incident().outcome, Some(Outcome::Interrupted));
        assert_eq!(log.records.len(), 3, "stage, warning, end");
        let log = session::read_file(&d.join("s1.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.incident().outcome, Some(Outcome::Resolved));
        // Recovering again changes nothing: the compacted journal says the same.
        let again = recover(d);
        assert_eq!(again.interrupted, 0);
        assert_eq!(again.queue.len(), 1);
        assert_eq!(again.claims.session_of("f2"), Some("s2"));
    }

    #[test]
    fn a_report_written_before_a_kill_is_written_again_as_interrupted() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s5.ndjson");
        let h = session::header("x", chrono::Utc::now(), "t");
        let mut text = serde_json::to_string(&h).unwrap_or_default();
        let report = crate::model::Record {
            t: 2.0,
            event: crate::model::Event::Report {
                markdown: "| | |\n|---|---|\n| Outcome | resolved |\n".into(),
            },
        };
        text.push('\n');
        text.push_str(&serde_json::to_string(&report).unwrap_or_default());
        text.push('\n');
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(mark_interrupted(&path).unwrap_or_else(|e| panic!("{e}")));
        let log = session::read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let incident = log.incident();
        assert_eq!(incident.outcome, Some(Outcome::Interrupted));
        let md = incident.report.unwrap_or_default();
        assert!(md.contains("| Outcome | interrupted |"), "{md}");
        let beside = std::fs::read_to_string(path.with_extension("md")).unwrap_or_default();
        assert!(beside.contains("| Outcome | interrupted |"), "{beside}");
    }
}
