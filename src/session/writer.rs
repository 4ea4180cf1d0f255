//! Append-only session writer: the header line, then one record a line, flushed per event.

use crate::model::{Record, SessionHeader};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes one session file. Every `append` reaches the OS before it returns, so a crash loses at
/// most the line being written; `sync` additionally forces it to disk (before an action runs).
#[derive(Debug)]
pub struct Writer {
    out: BufWriter<File>,
    path: PathBuf,
    lines: usize,
}

/// One record as a whole line, serialized fully first, so a serialization error never leaves
/// half a line behind.
fn line_of<T: serde::Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

impl Writer {
    /// Create a new session file (never overwrites an existing one) and write its header.
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Writer> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        // The header is written and synced under a hidden name, then linked into place: a reader
        // listing the directory never sees a session file without its header, and `hard_link`
        // refuses an existing name as `create_new` would.
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let staging = path.with_file_name(format!(".{}.new", name.unwrap_or_default()));
        let line = line_of(header)?;
        {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&staging)?;
            file.write_all(&line)?;
            file.sync_data()?;
        }
        let linked = std::fs::hard_link(&staging, path);
        let _ = std::fs::remove_file(&staging);
        linked?;
        let file = OpenOptions::new().append(true).open(path)?;
        let writer = Writer {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            lines: 1,
        };
        // The new directory entry must survive a crash too, or the fsynced file is unreachable.
        #[cfg(unix)]
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        Ok(writer)
    }

    /// Append one record as a line and flush it to the OS.
    pub fn append(&mut self, record: &Record) -> io::Result<()> {
        self.write_line(record)
    }

    fn write_line<T: serde::Serialize>(&mut self, value: &T) -> io::Result<()> {
        let line = line_of(value)?;
        self.out.write_all(&line)?;
        self.out.flush()?;
        self.lines += 1;
        Ok(())
    }

    /// Flush and fsync: everything appended so far is on disk when this returns.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines written, the header included.
    pub fn lines(&self) -> usize {
        self.lines
    }
}
