//! The "seen before" panel: what memory recalled at triage (how often this fired, what it was
//! diagnosed as, what fixed it, the operators' notes), above the evidence pane.

use super::app::AppState;
use super::pane_block;
use super::sanitize::sanitize;
use super::theme::Role;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

/// The panel's lines, most telling first: how often, what fixed it, the verdicts, the notes.
pub fn lines(state: &AppState) -> Vec<String> {
    let inc = state.incident();
    let mut all =
        crate::model::seen_before(&inc.recalled, inc.recalled_total, inc.started).into_iter();
    let head = all.next();
    let (fixes, rest): (Vec<String>, Vec<String>) = all.partition(|l| l.starts_with('`'));
    head.into_iter().chain(fixes).chain(rest).collect()
}

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.height < 3 || area.width < 3 {
        return;
    }
    let th = &state.theme;
    let inc = state.incident();
    let title = format!(
        " seen before ({}) ",
        inc.recalled_total.max(inc.recalled.len())
    );
    let text: Vec<Line> = lines(state)
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let role = if i == 0 {
                Role::Title
            } else if l.starts_with('`') {
                Role::Ok
            } else if l.starts_with("note") {
                Role::Warn
            } else {
                Role::Text
            };
            Line::styled(sanitize(l).into_owned(), th.get(role))
        })
        .collect();
    frame.render_widget(
        Paragraph::new(text).block(pane_block(th, &title, false)),
        area,
    );
}
