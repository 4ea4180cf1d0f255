//! Tolerant streaming reader: keeps every complete record before a torn or corrupt line and says
//! where and why it stopped. Never panics on any input.

use super::SessionError;
use crate::model::{Incident, Record, SessionHeader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The session format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Lines longer than this are treated as corrupt rather than buffered without bound.
const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// The largest `t` a record may carry (about 31 years): the writer stamps seconds since the start,
/// so anything larger (or negative) is damage, and would overflow date arithmetic downstream.
pub const MAX_T: f64 = 1e9;

/// Where a session file stopped being readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tear {
    /// 1-based line number of the first unreadable line (the header is line 1).
    pub line: usize,
    /// Byte offset where that line starts.
    pub byte_offset: u64,
    pub reason: String,
}

impl Tear {
    /// Whether reading stopped at a last line cut short by a crash (expected after one), rather
    /// than at a damaged or invalid record in the file.
    pub fn is_torn_write(&self) -> bool {
        self.reason.starts_with(TORN)
    }
}

/// How the reason of a tear at a write cut short begins.
const TORN: &str = "torn line";

impl std::fmt::Display for Tear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} (byte {}): {}",
            self.line, self.byte_offset, self.reason
        )
    }
}

/// A whole session file read into memory.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLog {
    pub header: SessionHeader,
    pub records: Vec<Record>,
    /// Set when reading stopped before the end of the file.
    pub tear: Option<Tear>,
}

impl SessionLog {
    /// Read everything from `input`, stopping at the first damaged line.
    pub fn from_reader<R: Read>(input: R) -> Result<SessionLog, SessionError> {
        let mut reader = Reader::new(BufReader::new(input))?;
        let records: Vec<Record> = reader.by_ref().collect();
        Ok(SessionLog {
            header: reader.header().clone(),
            records,
            tear: reader.tear().cloned(),
        })
    }

    /// The incident as it stood after the last readable record.
    pub fn incident(&self) -> Incident {
        Incident::fold(self.records.iter().map(|r| (r.t, &r.event)))
    }

    /// Seconds from the first to the last record.
    pub fn duration(&self) -> f64 {
        self.records.last().map(|r| r.t.max(0.0)).unwrap_or(0.0)
    }
}

/// Read a session file. Errors only when the file cannot be opened or has no valid header;
/// damage after the header is reported in [`SessionLog::tear`].
pub fn read_file(path: &Path) -> Result<SessionLog, SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    SessionLog::from_reader(file).map_err(|e| e.with_path(path))
}

/// Streaming reader: yields records one at a time; after the iterator ends, [`Reader::tear`]
/// says whether it stopped early.
pub struct Reader<R> {
    input: R,
    header: SessionHeader,
    line: usize,
    offset: u64,
    line_start: u64,
    tear: Option<Tear>,
    done: bool,
    buf: Vec<u8>,
}

enum Line {
    Eof,
    /// A complete line (newline stripped) and whether it ended with a newline.
    Full {
        terminated: bool,
    },
    Failed(String),
}

impl<R: BufRead> Reader<R> {
    /// Read and check the header line.
    pub fn new(input: R) -> Result<Reader<R>, SessionError> {
        let mut reader = Reader {
            input,
            header: SessionHeader {
                sitrep_session: FORMAT_VERSION,
                id: String::new(),
                started: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                title: String::new(),
            },
            line: 0,
            offset: 0,
            line_start: 0,
            tear: None,
            done: false,
            buf: Vec::new(),
        };
        let bad = |reason: String| SessionError::BadHeader { path: None, reason };
        match reader.next_line() {
            Line::Eof => return Err(bad("the file is empty".into())),
            Line::Failed(reason) => return Err(bad(reason)),
            Line::Full { .. } => {}
        }
        let text = std::str::from_utf8(&reader.buf)
            .map_err(|e| bad(format!("line 1 is not UTF-8: {e}")))?;
        let header: SessionHeader = serde_json::from_str(text).map_err(|e| {
            if text.contains("\"event\"") {
                bad("line 1 is an event, not a session header".into())
            } else {
                bad(format!("line 1 is not a sitrep session header: {e}"))
            }
        })?;
        if header.sitrep_session != FORMAT_VERSION {
            return Err(bad(format!(
                "session format version {} is not supported (this build reads version {FORMAT_VERSION})",
                header.sitrep_session
            )));
        }
        reader.header = header;
        Ok(reader)
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Where reading stopped early, once the iterator has ended.
    pub fn tear(&self) -> Option<&Tear> {
        self.tear.as_ref()
    }

    /// 1-based number of the last line read.
    pub fn line(&self) -> usize {
        self.line
    }

    fn next_line(&mut self) -> Line {
        self.buf.clear();
        self.line_start = self.offset;
        let mut limited = (&mut self.input).take(MAX_LINE_BYTES as u64 + 1);
        match limited.read_until(b'\n', &mut self.buf) {
            Ok(0) => Line::Eof,
            Ok(n) => {
                self.line += 1;
                self.offset += n as u64;
                let terminated = self.buf.last() == Some(&b'\n');
                if !terminated && self.buf.len() > MAX_LINE_BYTES {
                    return Line::Failed(format!("line longer than {MAX_LINE_BYTES} bytes"));
                }
                if terminated {
                    self.buf.pop();
                    if self.buf.last() == Some(&b'\r') {
                        self.buf.pop();
                    }
                }
                Line::Full { terminated }
            }
            Err(e) => {
                self.line += 1;
                Line::Failed(format!("read error: {e}"))
            }
        }
    }

    fn stop(&mut self, reason: String) -> Option<Record> {
        self.done = true;
        self.tear = Some(Tear {
            line: self.line,
            byte_offset: self.line_start,
            reason,
        });
        None
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        while !self.done {
            let terminated = match self.next_line() {
                Line::Eof => {
                    self.done = true;
                    return None;
                }
                Line::Failed(reason) => return self.stop(reason),
                Line::Full { terminated } => terminated,
            };
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                if terminated {
                    continue;
                }
                self.done = true;
                return None;
            }
            // The writer ends every line with a newline, so a last line without one that does not
            // parse is a write cut short by a crash, not corruption.
            let torn = |detail: String| format!("{TORN} (the file ends mid-record): {detail}");
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t,
                Err(e) if !terminated => return self.stop(torn(format!("not UTF-8: {e}"))),
                Err(e) => return self.stop(format!("corrupt record: not UTF-8: {e}")),
            };
            return match serde_json::from_str::<Record>(text) {
                Ok(record) if (0.0..=MAX_T).contains(&record.t) => Some(record),
                Ok(record) => self.stop(format!(
                    "corrupt record: the time `t` = {} is not between 0 and {MAX_T:e} seconds",
                    record.t
                )),
                Err(e) if !terminated => self.stop(torn(e.to_string())),
                Err(e) => self.stop(format!("corrupt record: {e}")),
            };
        }
        None
    }
}
