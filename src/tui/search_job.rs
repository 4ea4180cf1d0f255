//! A search of a large text body on its own thread, lnav's way: the body is shared (an `Arc`,
//! never copied), matching line numbers stream back in chunks so the count grows on screen,
//! and dropping the job (a new query, esc, another item) cancels it.

use crate::model::{Evidence, EvidenceBody};
use regex::bytes::Regex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};

/// Bytes scanned between two reports (and two looks at the cancel flag).
pub const CHUNK_BYTES: usize = 1 << 20;

/// The text a job scans, held by reference count.
#[derive(Clone)]
pub enum Source {
    /// A text evidence body, as the fold holds it.
    Evidence(Arc<Evidence>),
    /// JSON pretty-printed once for display.
    Pretty(Arc<str>),
}

impl Source {
    pub fn text(&self) -> &str {
        match self {
            Source::Evidence(e) => match &e.body {
                EvidenceBody::Text { text, .. } => text,
                _ => "",
            },
            Source::Pretty(s) => s,
        }
    }
}

/// What a job found since its last report.
pub struct Found {
    /// Lines with at least one match, ascending.
    pub rows: Vec<usize>,
    /// Bytes of the body looked at so far.
    pub scanned: usize,
    pub done: bool,
}

/// A running scan; dropping it stops the thread at its next chunk.
pub struct Job {
    cancel: Arc<AtomicBool>,
    rx: Receiver<Found>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Job {
    /// Scan `source` from byte `from` (the start of line `first_line`) to its end.
    pub fn spawn(source: Source, re: Regex, from: usize, first_line: usize) -> Job {
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = channel();
        let stop = cancel.clone();
        let len = source.text().len();
        let spawned = std::thread::Builder::new()
            .name("sitrep-search".into())
            .spawn(move || {
                scan(
                    source.text().as_bytes(),
                    &re,
                    from,
                    first_line,
                    &stop,
                    |f| tx.send(f).is_ok(),
                )
            });
        if spawned.is_err() {
            // No thread to be had: report the scan finished and empty rather than hang.
            let (tx, rx2) = channel();
            let _ = tx.send(Found {
                rows: Vec::new(),
                scanned: len,
                done: true,
            });
            return Job { cancel, rx: rx2 };
        }
        Job { cancel, rx }
    }

    /// Everything reported since the last call, merged; `None` when nothing new arrived.
    pub fn poll(&self) -> Option<Found> {
        let mut out: Option<Found> = None;
        loop {
            match self.rx.try_recv() {
                Ok(f) => match &mut out {
                    Some(o) => {
                        o.rows.extend(f.rows);
                        o.scanned = f.scanned;
                        o.done = f.done;
                    }
                    None => out = Some(f),
                },
                Err(TryRecvError::Empty) => return out,
                // The thread ended without saying it was done (it cannot panic on input, but a
                // lost thread must not leave the count spinning).
                Err(TryRecvError::Disconnected) => {
                    let mut o = out.unwrap_or(Found {
                        rows: Vec::new(),
                        scanned: 0,
                        done: true,
                    });
                    o.done = true;
                    return Some(o);
                }
            }
        }
    }
}

/// The scan itself, chunk by chunk; `report` returns false when no one listens any more.
pub fn scan(
    bytes: &[u8],
    re: &Regex,
    from: usize,
    first_line: usize,
    stop: &AtomicBool,
    mut report: impl FnMut(Found) -> bool,
) {
    let mut at = from.min(bytes.len());
    let mut line = first_line;
    let mut counted = at;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Chunks end on a line end so no line is split between two of them.
        let mut end = (at + CHUNK_BYTES).min(bytes.len());
        if end < bytes.len() {
            end = match memchr(b'\n', &bytes[end..]) {
                Some(p) => end + p + 1,
                None => bytes.len(),
            };
        }
        let mut rows = Vec::new();
        while at < end {
            let Some(m) = re.find_at(&bytes[..end], at) else {
                break;
            };
            line += bytes[counted..m.start()]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            counted = m.start();
            if rows.last() != Some(&line) {
                rows.push(line);
            }
            // One hit per line is enough to list it: go on from the next line.
            at = match memchr(b'\n', &bytes[m.start()..end]) {
                Some(p) => m.start() + p + 1,
                None => end,
            }
            .max(m.end());
        }
        at = end;
        let done = end >= bytes.len();
        if !report(Found {
            rows,
            scanned: end,
            done,
        }) || done
        {
            return;
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finder(q: &str) -> Regex {
        regex::bytes::RegexBuilder::new(&regex::escape(q))
            .case_insensitive(true)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn lists_each_matching_line_once_across_chunks() {
        let mut text = String::new();
        for i in 0..300_000 {
            text.push_str(if i % 1000 == 7 {
                "x ERROR y error\n"
            } else {
                "fine\n"
            });
        }
        let mut rows = Vec::new();
        let mut reports = 0;
        scan(
            text.as_bytes(),
            &finder("error"),
            0,
            0,
            &AtomicBool::new(false),
            |f| {
                rows.extend(f.rows);
                reports += 1;
                true
            },
        );
        let want: Vec<usize> = (0..300_000).filter(|i| i % 1000 == 7).collect();
        assert_eq!(rows, want);
        assert!(reports > 1, "streamed in chunks");
    }

    #[test]
    fn a_dropped_job_stops_and_a_resumed_scan_counts_lines_from_where_it_starts() {
        let text: Arc<str> = "a\nb match\nc\nd match\n".into();
        let mut rows = Vec::new();
        scan(
            text.as_bytes(),
            &finder("match"),
            4,
            1,
            &AtomicBool::new(false),
            |f| {
                rows.extend(f.rows);
                true
            },
        );
        assert_eq!(rows, vec![1, 3]);
        let stop = AtomicBool::new(true);
        let mut called = false;
        scan(text.as_bytes(), &finder("match"), 0, 0, &stop, |_| {
            called = true;
            true
        });
        assert!(!called, "a cancelled scan reports nothing");
        let job = Job::spawn(Source::Pretty(text), finder("match"), 0, 0);
        let mut got = Vec::new();
        let started = std::time::Instant::now();
        loop {
            if let Some(f) = job.poll() {
                got.extend(f.rows);
                if f.done {
                    break;
                }
            }
            assert!(started.elapsed().as_secs() < 10, "the job finishes");
            std::thread::yield_now();
        }
        assert_eq!(got, vec![1, 3]);
    }
}
