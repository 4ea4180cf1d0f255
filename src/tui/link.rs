//! The console's one link to a session: records in, commands out, and the few services it asks
//! of the process around it (saving a report). `cli` builds it over a local investigation, or
//! over a session another process runs (followed from its file or its server).

use crate::model::{Command, Record};
use futures::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// Writes `text` (the report) at `path`, off the UI thread; the error says why it could not.
pub type SaveReport =
    Arc<dyn Fn(PathBuf, String) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A session as the console sees it.
pub struct Link {
    pub records: UnboundedReceiver<Record>,
    pub commands: UnboundedSender<Command>,
    /// How the investigation ended (its outcome's name, or why it failed); None when it runs in
    /// another process and ends only by its records.
    pub finished: Option<JoinHandle<Result<String, String>>>,
    /// The session file, when there is one (reports are written next to it).
    pub session_path: Option<PathBuf>,
    /// Tasks that carry the link (a tailer, a forwarder): stopped when the console lets it go.
    pub carriers: Carriers,
}

/// Background tasks that live as long as the link does.
#[derive(Default)]
pub struct Carriers(pub Vec<JoinHandle<()>>);

impl Drop for Carriers {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What reopening an inbox row's session gives: still running elsewhere (followed live), or
/// ended (replayed read-only).
pub enum Reopened {
    Live(Link),
    Ended { id: String, records: Vec<Record> },
}
