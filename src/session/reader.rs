//! Tolerant streaming reader: keeps every complete record before a torn or corrupt line and says
//! where and why it stopped. Never panics on any input.

use super::SessionError;
use crate::model::{Incident, Record, SessionHeader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
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

/// A streaming reader over a session file, its header checked.
pub fn open_file(path: &Path) -> Result<Reader<BufReader<File>>, SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(|e| e.with_path(path))
}

/// A session folded straight from its file, without keeping its records.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedSession {
    pub header: SessionHeader,
    pub incident: Incident,
    /// Records read (up to the tear, if any).
    pub records: usize,
    pub tear: Option<Tear>,
}

/// Read a session file record by record into its fold: memory holds the incident, never the
/// log, so a million-event file folds in the space of its result.
pub fn fold_file(path: &Path) -> Result<FoldedSession, SessionError> {
    fold_file_with(path, |event| event)
}

/// As [`fold_file`], with every event passed through `prepare` before it is folded (to fold
/// only what a consumer needs).
pub fn fold_file_with(
    path: &Path,
    mut prepare: impl FnMut(crate::model::Event) -> crate::model::Event,
) -> Result<FoldedSession, SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader =
        Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(|e| e.with_path(path))?;
    let mut incident = Incident::new();
    let mut records = 0;
    for record in reader.by_ref() {
        incident.apply_owned(record.t, prepare(record.event));
        records += 1;
    }
    Ok(FoldedSession {
        header: reader.header().clone(),
        incident,
        records,
        tear: reader.tear().cloned(),
    })
}

/// What a listing needs from a session file, read from its first line and its tail only.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTail {
    pub header: SessionHeader,
    /// The outcome of the last `session_ended` record near the end of the file.
    pub outcome: Option<crate::model::Outcome>,
    /// `t` of the last readable record (0 when there is none).
    pub duration: f64,
    /// Set when the file's last line is torn or corrupt.
    pub tear: Option<Tear>,
}

/// Bytes read from the end of a file at first; doubled until a whole record is found.
const TAIL_CHUNK: u64 = 4 * 1024;

/// Read a session file's header and its last records, seeking from the end: the cost does not
/// grow with the file's length.
pub fn read_tail(path: &Path) -> Result<SessionTail, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    // One read serves the header and, for a short file, the tail too: a listing opens thousands
    // of files, so system calls and allocations per file are what it costs.
    let mut first = vec![0u8; TAIL_CHUNK as usize];
    let got = read_full(&mut file, &mut first).map_err(io)?;
    first.truncate(got);
    let (header, body_start) = match first.iter().position(|b| *b == b'\n') {
        Some(nl) => {
            let line = &first[..nl];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let header = parse_header(line).map_err(|e| e.with_path(path))?;
            (header, nl as u64 + 1)
        }
        // A header longer than the first read, a file of one unterminated line, or an empty
        // file: the streaming reader's rules and messages apply.
        None => {
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            let reader = Reader::new(BufReader::with_capacity(1024, &mut file))
                .map_err(|e| e.with_path(path))?;
            (reader.header().clone(), reader.offset)
        }
    };
    let mut chunk = TAIL_CHUNK;
    loop {
        let from = size.saturating_sub(chunk).max(body_start);
        let buf = if got as u64 == size {
            // The whole file is already in hand.
            std::borrow::Cow::Borrowed(&first[from as usize..])
        } else {
            file.seek(SeekFrom::Start(from)).map_err(io)?;
            let mut buf = Vec::with_capacity((size - from) as usize);
            (&mut file)
                .take(size - from)
                .read_to_end(&mut buf)
                .map_err(io)?;
            std::borrow::Cow::Owned(buf)
        };
        let whole = from == body_start;
        if let Some(mut tail) = scan_tail(&buf, whole) {
            if let Some(tear) = &mut tail.tear {
                tear.byte_offset += from;
                tear.line = count_lines_before(path, tear.byte_offset).map_err(io)?;
            }
            return Ok(SessionTail {
                header,
                outcome: tail.outcome,
                duration: tail.duration,
                tear: tail.tear,
            });
        }
        chunk = chunk.saturating_mul(2);
    }
}

/// Read into `buf` until it is full or the input ends; the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

struct Scanned {
    outcome: Option<crate::model::Outcome>,
    duration: f64,
    tear: Option<Tear>,
}

/// The last records in `buf` (the tail of a file). `whole` says `buf` starts on a line boundary;
/// otherwise its first, partial line is skipped. None when no complete record was seen and more
/// of the file could help.
fn scan_tail(buf: &[u8], whole: bool) -> Option<Scanned> {
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut start = 0;
    for (i, b) in buf.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, &buf[start..i]));
            start = i + 1;
        }
    }
    if !whole && lines.is_empty() {
        // Inside one long last line: only more of the file can tell.
        return None;
    }
    let unterminated = (start < buf.len()).then(|| (start, &buf[start..]));
    if !whole {
        lines.remove(0);
    }
    let parse = |l: &[u8]| -> Option<Record> {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        serde_json::from_slice::<Record>(l)
            .ok()
            .filter(|r| r.t.is_finite())
    };
    let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
    let mut tear = None;
    if let Some((at, l)) = unterminated
        && !blank(l)
        && parse(l).is_none()
    {
        tear = Some(Tear {
            line: 0,
            byte_offset: at as u64,
            reason: "torn line (the file ends mid-record)".into(),
        });
    }
    let mut records = lines.iter().rev().filter(|(_, l)| !blank(l));
    let last = match unterminated.and_then(|(_, l)| parse(l)) {
        Some(r) => Some(r),
        None => match records.next() {
            Some((at, l)) => match parse(l) {
                Some(r) => Some(r),
                None if tear.is_none() => {
                    tear = Some(Tear {
                        line: 0,
                        byte_offset: *at as u64,
                        reason: "corrupt record".into(),
                    });
                    // Anything before a corrupt line is what a reader keeps: find the last good one.
                    records.find_map(|(_, l)| parse(l))
                }
                None => None,
            },
            None => None,
        },
    };
    let Some(last) = last else {
        return whole.then_some(Scanned {
            outcome: None,
            duration: 0.0,
            tear,
        });
    };
    let ended = |r: &Record| match r.event {
        crate::model::Event::SessionEnded { outcome } => Some(outcome),
        _ => None,
    };
    // A note or warning can follow the end record; look back a few lines for it.
    let outcome = ended(&last).or_else(|| {
        lines
            .iter()
            .rev()
            .take(16)
            .filter_map(|(_, l)| parse(l))
            .find_map(|r| ended(&r))
    });
    Some(Scanned {
        outcome,
        duration: last.t.max(0.0),
        tear,
    })
}

/// 1-based number of the line starting at `offset` (only needed for a damaged file).
fn count_lines_before(path: &Path, offset: u64) -> std::io::Result<usize> {
    let mut input = BufReader::new(File::open(path)?).take(offset);
    let mut buf = [0u8; 1 << 16];
    let mut lines = 1;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += buf[..n].iter().filter(|b| **b == b'\n').count();
    }
}

/// Parse one record line. Lines appended to a streaming log are most of a long session and the
/// general path (an internally tagged enum) buffers every field before it knows the variant, so
/// they are read straight into their shape first; anything else, or anything that shape does not
/// accept, takes the general path, which decides what is valid.
pub(crate) fn parse_record(text: &str) -> serde_json::Result<Record> {
    #[derive(serde::Deserialize)]
    struct Appended<'a> {
        t: f64,
        #[serde(borrow)]
        event: AppendedEvent<'a>,
    }
    #[derive(serde::Deserialize)]
    struct AppendedEvent<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(borrow)]
        evidence_id: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        text: std::borrow::Cow<'a, str>,
    }
    // The writer puts the type first: other lines, a large evidence body among them, are not
    // parsed twice.
    let head = &text.as_bytes()[..text.len().min(64)];
    if head.windows(19).any(|w| w == b"\"evidence_appended\"")
        && let Ok(a) = serde_json::from_str::<Appended>(text)
        && a.event.kind == "evidence_appended"
    {
        return Ok(Record {
            t: a.t,
            event: crate::model::Event::EvidenceAppended {
                evidence_id: a.event.evidence_id.into_owned(),
                text: a.event.text.into_owned(),
            },
        });
    }
    serde_json::from_str::<Record>(text)
}

/// Check and parse a header line (its newline stripped).
fn parse_header(line: &[u8]) -> Result<SessionHeader, SessionError> {
    let bad = |reason: String| SessionError::BadHeader { path: None, reason };
    let text = std::str::from_utf8(line).map_err(|e| bad(format!("line 1 is not UTF-8: {e}")))?;
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
    Ok(header)
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
        reader.header = parse_header(&reader.buf)?;
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

    /// Byte offset where the line of the record last returned starts.
    pub fn record_offset(&self) -> u64 {
        self.line_start
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn next_line(&mut self) -> Line {
        self.buf.clear();
        // One very long line (a large evidence body) must not pin its size for the rest.
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
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
            return match super::large_line::parse_record_line(&mut self.buf) {
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

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#;

    fn file(name: &str, body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{HEADER}\n{body}")).unwrap_or_else(|e| panic!("{e}"));
        (dir, path)
    }

    fn tail(path: &Path) -> SessionTail {
        read_tail(path).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn tail_finds_the_outcome_and_duration_without_reading_the_body() {
        // A body far larger than the first chunk read from the end, with a note after the end.
        let mut body = String::new();
        for i in 0..5000 {
            body.push_str(&format!(
                "{{\"t\":{i}.5,\"event\":{{\"type\":\"warning\",\"message\":\"w{i}\"}}}}\n"
            ));
        }
        body.push_str(r#"{"t":6000.0,"event":{"type":"session_ended","outcome":"resolved"}}"#);
        body.push('\n');
        body.push_str(
            r#"{"t":6001.0,"event":{"type":"chat_message","from":"operator","text":"bye"}}"#,
        );
        body.push('\n');
        let (_d, path) = file("a.ndjson", &body);
        let t = tail(&path);
        assert_eq!(t.outcome, Some(crate::model::Outcome::Resolved));
        assert_eq!(t.duration, 6001.0);
        assert_eq!(t.tear, None);
        let whole = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(whole.duration(), t.duration);
        assert_eq!(whole.incident().outcome, t.outcome);
    }

    #[test]
    fn tail_reports_a_torn_last_line_with_its_line_number() {
        let body = concat!(
            r#"{"t":1.0,"event":{"type":"stage_started","stage":"triage"}}"#,
            "\n",
            r#"{"t":2.0,"event":{"type":"warn"#
        );
        let (_d, path) = file("torn.ndjson", body);
        let t = tail(&path);
        assert_eq!(t.outcome, None);
        assert_eq!(t.duration, 1.0);
        let tear = t.tear.unwrap_or_else(|| panic!("no tear"));
        let whole = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let expected = whole.tear.unwrap_or_else(|| panic!("no tear"));
        assert_eq!(tear.line, expected.line);
        assert_eq!(tear.byte_offset, expected.byte_offset);
    }

    #[test]
    fn tail_reads_back_over_a_last_line_longer_than_a_chunk() {
        let text = "x".repeat(3 * TAIL_CHUNK as usize);
        let body = format!(
            "{}\n{}\n",
            r#"{"t":1.0,"event":{"type":"stage_started","stage":"triage"}}"#,
            serde_json::json!({"t": 7.25, "event": {"type": "warning", "message": text}})
        );
        let (_d, path) = file("long.ndjson", &body);
        let t = tail(&path);
        assert_eq!(t.duration, 7.25);
        assert_eq!(t.tear, None);
    }

    #[test]
    fn tail_of_a_header_only_file_and_of_garbage() {
        let (_d, path) = file("empty.ndjson", "");
        let t = tail(&path);
        assert_eq!((t.outcome, t.duration, t.tear), (None, 0.0, None));
        let (_d2, bad) = file("bad.ndjson", "");
        std::fs::write(&bad, "not a session\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(read_tail(&bad).is_err());
    }

    #[test]
    fn folding_a_file_matches_reading_then_folding() {
        let body = concat!(
            r#"{"t":1.0,"event":{"type":"stage_started","stage":"triage"}}"#,
            "\n",
            r#"{"t":2.0,"event":{"type":"session_ended","outcome":"diagnosed"}}"#,
            "\n"
        );
        let (_d, path) = file("f.ndjson", body);
        let folded = fold_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let log = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(folded.incident, log.incident());
        assert_eq!(folded.records, 2);
        assert_eq!(folded.tear, None);
    }

    #[test]
    fn appended_lines_parse_as_the_general_path_does() {
        let lines = [
            r#"{"t":1.5,"event":{"type":"evidence_appended","evidence_id":"e1","text":"plain"}}"#,
            r#"{"t":2,"event":{"type":"evidence_appended","evidence_id":"e\"1","text":"a\nb\u001b[31m\u00e9"}}"#,
            r#"{"t":3.0,"event":{"type":"evidence_appended","text":"x","evidence_id":"e2","extra":1}}"#,
            r#"{"event":{"type":"evidence_appended","evidence_id":"e3","text":"late t"},"t":4.0}"#,
            r#"{"t":5.0,"event":{"evidence_id":"e4","text":"type last","type":"evidence_appended"}}"#,
            r#"{"t":6.0,"event":{"type":"evidence_appended","evidence_id":"e5"}}"#,
            r#"{"t":7.0,"event":{"type":"evidence_appended","evidence_id":5,"text":"x"}}"#,
            r#"{"t":"8","event":{"type":"evidence_appended","evidence_id":"e","text":"x"}}"#,
            r#"{"t":9.0,"event":{"type":"evidence_appended_not","evidence_id":"e","text":"x"}}"#,
            r#"{"t":10.0,"event":{"type":"warning","message":"evidence_appended"}}"#,
            r#"{"t":11.0,"event":{"type":"evidence_appended","evidence_id":"e","text":"x"},"t":12.0}"#,
            r#"{"t":12.0,"event":{"type":"evidence_appended","evidence_id":"e","text":"x"}"#,
        ];
        for line in lines {
            let fast = parse_record(line).ok();
            let general = serde_json::from_str::<Record>(line).ok();
            assert_eq!(fast, general, "{line}");
        }
        assert!(parse_record(lines[0]).is_ok());
        assert!(parse_record(lines[1]).is_ok());
        assert!(parse_record(lines[5]).is_err());
    }

    #[test]
    fn tail_of_a_file_shorter_than_a_chunk_and_of_a_header_longer_than_one() {
        let (_d, path) = file(
            "short.ndjson",
            "{\"t\":1.0,\"event\":{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}\n",
        );
        let t = tail(&path);
        assert_eq!(t.outcome, Some(crate::model::Outcome::Resolved));
        assert_eq!(t.duration, 1.0);
        assert_eq!(t.header.id, "s");

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("long.ndjson");
        let title = "x".repeat(3 * TAIL_CHUNK as usize);
        let header = format!(
            r#"{{"sitrep_session":1,"id":"l","started":"2026-11-22T09:00:00Z","title":"{title}"}}"#
        );
        let body = r#"{"t":2.0,"event":{"type":"stage_started","stage":"triage"}}"#;
        std::fs::write(&path, format!("{header}\n{body}\n")).unwrap_or_else(|e| panic!("{e}"));
        let t = tail(&path);
        assert_eq!(t.header.title, title);
        assert_eq!(t.duration, 2.0);
        assert_eq!(t.outcome, None);
        // A header with nothing after it, not even a newline.
        std::fs::write(&path, &header).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tail(&path).duration, 0.0);
        // A file that is not a session at all says so, whichever path read its first line.
        std::fs::write(&path, "not json\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(read_tail(&path).is_err());
        std::fs::write(&path, "x".repeat(3 * TAIL_CHUNK as usize))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(read_tail(&path).is_err());
    }
}
