//! Whole-file replacement that a crash or a concurrent reader never sees half done: the new
//! contents are written beside the file, synced, renamed over it, and the directory synced.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Replaces `path` with what `fill` writes. The temporary file sits in the same directory (a
/// rename is atomic only within one file system) under a name unique to this process and call,
/// since several threads may replace the same file at once; it is removed if anything fails.
pub fn write(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    let result = (|| {
        let mut out = BufWriter::new(File::create(&tmp)?);
        fill(&mut out)?;
        out.flush()?;
        // The data must be on disk before the name points at it, or a crash leaves an empty file.
        out.get_ref().sync_data()?;
        drop(out);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    // The rename itself lives in the directory; sync it so the new entry survives a crash.
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Replaces `path` with `bytes`, as [`write`] does.
pub fn write_all(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(path, |out| out.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("index.ndjson");
        std::fs::write(&path, "old contents that are longer than the new\n")
            .unwrap_or_else(|e| panic!("{e}"));
        write(&path, |out| out.write_all(b"new\n")).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "new\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("index.ndjson")]);
    }

    #[test]
    fn a_failed_fill_keeps_the_old_file_and_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("journal.ndjson");
        std::fs::write(&path, "kept\n").unwrap_or_else(|e| panic!("{e}"));
        let err = write(&path, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("serialising failed"))
        })
        .err()
        .unwrap_or_else(|| panic!("the failed fill was reported as written"));
        assert_eq!(err.to_string(), "serialising failed");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "kept\n");
        assert_eq!(
            std::fs::read_dir(dir.path())
                .map(|d| d.count())
                .unwrap_or(0),
            1
        );
    }
}
