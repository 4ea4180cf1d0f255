//! The console's links to sessions, as `cli` hands them over: an investigation this process runs,
//! one another process runs (followed from its file, or through its server), and the writer of
//! `:export`'s reports.

use crate::agent::AgentHandle;
use crate::agent::follow::{self, Remote};
use crate::model::Event;
use crate::tui::{Carriers, Link, Reopened, SaveReport};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How often a followed session is read again.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// The console over an investigation this process runs.
pub fn local(handle: AgentHandle) -> Link {
    let AgentHandle {
        records,
        commands,
        task,
        session_path,
        ..
    } = handle;
    let finished = tokio::spawn(async move {
        match task.await {
            Ok(Ok(outcome)) => Ok(outcome.name().to_string()),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(e) => Err(format!("the investigation task stopped: {e}")),
        }
    });
    Link {
        records,
        commands,
        finished: Some(finished),
        session_path,
        carriers: Carriers::default(),
    }
}

/// The console over a session another process runs (`sitrep serve`): tailed from its file on this
/// host, or through the server's API when only the server has it; decisions go back through
/// `remote` (or the session's approvals directory without one).
pub fn followed(path: PathBuf, remote: Option<Remote>) -> Link {
    let (records_tx, records) = tokio::sync::mpsc::unbounded_channel();
    let (commands, commands_rx) = tokio::sync::mpsc::unbounded_channel();
    let tailer = match &remote {
        Some(r) if !path.is_file() => {
            follow::tail_remote(r.clone(), records_tx.clone(), FOLLOW_POLL)
        }
        _ => follow::tail(path.clone(), records_tx.clone(), FOLLOW_POLL),
    };
    let forwarder = tokio::spawn(follow::forward(
        commands_rx,
        path.clone(),
        remote,
        records_tx,
    ));
    Link {
        records,
        commands,
        finished: None,
        session_path: Some(path),
        carriers: Carriers(vec![tailer, forwarder]),
    }
}

/// An inbox row's session: followed live while it has no end record, else replayed.
pub fn reopen(path: &Path) -> anyhow::Result<Reopened> {
    let log = crate::session::read_file(path)?;
    if log
        .records
        .iter()
        .any(|r| matches!(r.event, Event::SessionEnded { .. }))
    {
        Ok(Reopened::Ended {
            id: log.header.id.clone(),
            records: log.records,
        })
    } else {
        Ok(Reopened::Live(followed(path.to_path_buf(), None)))
    }
}

/// Writes a report (creating its directory), on a blocking thread.
pub fn save_report() -> SaveReport {
    Arc::new(|path: PathBuf, text: String| {
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                crate::session::atomic::write_all(&path, text.as_bytes())
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
        })
    })
}
