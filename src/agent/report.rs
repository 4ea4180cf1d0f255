//! The Report stage: the markdown summary of the incident, saved next to the session file.

use super::journal::Journal;
use super::specialists::lock;
use crate::model::{Event, Outcome};
use std::path::Path;
use std::sync::Mutex;

/// The report of a session ending with `outcome`, recorded as its `report` event and written to
/// `<session>.md` when the session has a file. The end record comes after it, so the outcome is
/// the one given, never the fold's "in progress".
pub fn write(journal: &Mutex<Journal>, session_path: Option<&Path>, outcome: Outcome) {
    let mut j = lock(journal);
    let markdown = crate::session::export::markdown_ending(&j.incident, Some(outcome));
    if let Some(path) = session_path {
        let file = path.with_extension("md");
        if let Err(e) = crate::session::atomic::write_all(&file, markdown.as_bytes()) {
            j.emit(Event::Warning {
                message: format!("report not written to {}: {e}", file.display()),
            });
        }
    }
    j.emit(Event::Report { markdown });
}

/// The outcome the last report names, if a report was written: `| Outcome | NAME |`.
pub fn reported_outcome(journal: &Mutex<Journal>) -> Option<String> {
    let j = lock(journal);
    let md = j.incident.report.as_deref()?;
    md.lines().find_map(|l| {
        l.strip_prefix("| Outcome | ")
            .and_then(|rest| rest.strip_suffix(" |"))
            .map(str::to_string)
    })
}
