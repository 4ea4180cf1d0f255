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

/// Hands the report to the writer the console was given; how it went arrives on `done` as a
/// status line (and whether it is an error).
pub(crate) fn export_report(
    state: &mut AppState,
    done: &tokio::sync::mpsc::UnboundedSender<(String, bool)>,
) {
    let path = report_path(state);
    let Some(save) = state.save_report.clone() else {
        state.set_status(
            "this console cannot write files; `sitrep export SESSION` writes the report",
            true,
        );
        return;
    };
    let md = crate::session::export::markdown(state.incident());
    let done = done.clone();
    tokio::spawn(async move {
        let status = match save(path.clone(), md).await {
            Ok(()) => (format!("report written to {}", path.display()), false),
            Err(e) => (
                format!("cannot write the report to {}: {e}", path.display()),
                true,
            ),
        };
        let _ = done.send(status);
    });
}
