//! Where a replay reads its records back: kept in memory, or read from a session file by the
//! byte offsets of their lines.

use crate::model::Record;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;

/// Where records are read back from.
#[derive(Debug)]
pub(super) enum Source {
    Memory(Vec<Record>),
    File(FileRecords),
}

impl Clone for Source {
    fn clone(&self) -> Source {
        match self {
            Source::Memory(records) => Source::Memory(records.clone()),
            // The copy opens its own reader when it first needs one.
            Source::File(f) => Source::File(FileRecords::new(
                f.path.clone(),
                f.offsets.clone(),
                f.len,
                f.end,
            )),
        }
    }
}

/// A record adding a large text evidence item that nothing changes later.
#[derive(Debug, Clone, Copy)]
pub(super) struct SharedAdd {
    /// The record's index.
    pub(super) record: usize,
    /// The item's position in the final fold's evidence.
    pub(super) item: usize,
    /// Where the record's line ends in the file.
    pub(super) end: u64,
}

/// Records between two remembered offsets: reading record `i` starts at the offset of record
/// `i - i % OFFSET_EVERY` and skips the lines before it, a few kilobytes at most, while the
/// index costs an eighth of a byte a record rather than eight.
pub(super) const OFFSET_EVERY: usize = 64;

/// Bytes of records a seek to the end folds from the file rather than copying the final fold.
pub(super) const FORWARD_BYTES: u64 = 1 << 20;

/// Records of a session file, found by the byte offset of their line.
#[derive(Debug)]
pub(super) struct FileRecords {
    pub(super) path: PathBuf,
    /// Byte offset of every `OFFSET_EVERY`-th record's line.
    pub(super) offsets: Vec<u64>,
    /// Records in the file.
    pub(super) len: usize,
    /// Where the last record ends.
    pub(super) end: u64,
    pub(super) reader: Option<BufReader<File>>,
    /// Index of the record `reader` is positioned at.
    pub(super) next: usize,
    pub(super) line: Vec<u8>,
}

impl FileRecords {
    pub(super) fn new(path: PathBuf, offsets: Vec<u64>, len: usize, end: u64) -> FileRecords {
        FileRecords {
            path,
            offsets,
            len,
            end,
            reader: None,
            next: usize::MAX,
            line: Vec::new(),
        }
    }

    /// Record `i`, read from the file. None when the file no longer holds it (changed since).
    pub(super) fn read(&mut self, i: usize) -> Option<Record> {
        if i >= self.len {
            return None;
        }
        if self.reader.is_none() || self.next > i || i - self.next >= OFFSET_EVERY {
            let k = i / OFFSET_EVERY;
            let offset = *self.offsets.get(k)?;
            let reader = match self.reader.as_mut() {
                Some(r) => r,
                None => self.reader.insert(BufReader::with_capacity(
                    1 << 16,
                    File::open(&self.path).ok()?,
                )),
            };
            reader.seek(SeekFrom::Start(offset)).ok()?;
            self.next = k * OFFSET_EVERY;
        }
        while self.next < i {
            self.skip_line()?;
            self.next += 1;
        }
        self.next_line()?;
        self.next = i + 1;
        crate::session::large_line::parse_record_line(&mut self.line)
            .ok()
            .filter(|r| r.t.is_finite())
    }

    /// Record `i` was applied without reading it, its line ending at byte `end`: the next read
    /// starts after it rather than reading it only to skip it.
    pub(super) fn passed(&mut self, i: usize, end: u64) {
        let moved = self.next == i
            && self
                .reader
                .as_mut()
                .is_some_and(|r| r.seek(SeekFrom::Start(end)).is_ok());
        // Wherever the reader is otherwise, the next read seeks.
        self.next = if moved { i + 1 } else { usize::MAX };
    }

    /// Move past the next record's line (and blank lines before it) without keeping it: a line
    /// skipped on the way to another can be a whole log.
    fn skip_line(&mut self) -> Option<()> {
        let reader = self.reader.as_mut()?;
        loop {
            let mut blank = true;
            loop {
                let buf = reader.fill_buf().ok()?;
                if buf.is_empty() {
                    return (!blank).then_some(());
                }
                let (used, ended) = match buf.iter().position(|b| *b == b'\n') {
                    Some(p) => (p + 1, true),
                    None => (buf.len(), false),
                };
                blank = blank && buf[..used].iter().all(u8::is_ascii_whitespace);
                reader.consume(used);
                if ended {
                    break;
                }
            }
            if !blank {
                return Some(());
            }
        }
    }

    /// Read the next record's line into `line`, past blank lines as the reader skips them.
    fn next_line(&mut self) -> Option<()> {
        // One very long line must not pin its size for every later read.
        if self.line.capacity() > 1 << 20 {
            self.line = Vec::new();
        }
        let reader = self.reader.as_mut()?;
        loop {
            self.line.clear();
            if reader.read_until(b'\n', &mut self.line).ok()? == 0 {
                return None;
            }
            if !self.line.iter().all(u8::is_ascii_whitespace) {
                let end = self.line.trim_ascii_end().len();
                self.line.truncate(end);
                return Some(());
            }
        }
    }
}
