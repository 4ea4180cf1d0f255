//! The Report stage: the markdown summary of the incident, saved next to the session file.

use super::journal::Journal;
use super::specialists::lock;
use crate::model::{Event, Outcome};
use std::path::Path;
use std::sync::Mutex;

/// The report for `outcome`; written to `<session>.md` when the session has a file.
pub fn write(journal: &Mutex<Journal>, session_path: Option<&Path>, outcome: Outcome) -> String {
    let mut j = lock(journal);
    let mut md = crate::session::export::markdown(&j.incident);
    // The export knows the incident; the outcome is not folded until SessionEnded.
    md.push_str(&format!("\n**Outcome:** {}\n", outcome.name()));
    if let Some(path) = session_path {
        let file = path.with_extension("md");
        if let Err(e) = std::fs::write(&file, &md) {
            j.emit(Event::Warning {
                message: format!("report not written to {}: {e}", file.display()),
            });
        }
    }
    md
}
