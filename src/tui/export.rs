//! `:export`: the report as markdown, written next to the session file.

use super::app::AppState;
use super::sanitize;
use std::path::PathBuf;

/// Where `/export` writes: next to the session file, else under the data directory.
pub fn report_path(state: &AppState) -> PathBuf {
    match &state.session_path {
        Some(p) => p.with_extension("md"),
        None => {
            let id = if state.incident().id.is_empty() {
                "report".to_string()
            } else {
                state.incident().id.clone()
            };
            crate::config::data_dir().join("reports").join(format!(
                "{}.md",
                sanitize::sanitize(&id).replace(['/', '\\'], "_")
            ))
        }
    }
}

pub(crate) fn export_report(state: &mut AppState) {
    let path = report_path(state);
    let md = crate::session::export::markdown(state.incident());
    let res = path
        .parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| std::fs::write(&path, md));
    match res {
        Ok(()) => state.set_status(format!("report written to {}", path.display()), false),
        Err(e) => state.set_status(
            format!("cannot write the report to {}: {e}", path.display()),
            true,
        ),
    }
}
