//! The whole console screen: the panes in their layout, then the open overlay on top.

use super::app::{self, AppState, Overlay};
use super::theme::Role;
use super::{
    approval, chat, evidence, header, help, layout, palette, replay_bar, report, seen_before,
    statusbar, timeline,
};
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

/// Draw the whole screen from the state.
pub fn draw(state: &AppState, frame: &mut Frame) {
    let area = frame.area();
    let a = state.layout(area);
    if a.too_small {
        let msg = Paragraph::new(vec![
            Line::raw("terminal too small"),
            Line::raw(format!("need {}x{}", layout::MIN_WIDTH, layout::MIN_HEIGHT)),
        ])
        .alignment(Alignment::Center);
        let y = area.height.saturating_sub(2) / 2;
        frame.render_widget(
            msg,
            Rect {
                y: area.y + y,
                height: area.height.saturating_sub(y).min(2),
                ..area
            },
        );
        return;
    }
    frame.render_widget(Block::default().style(state.theme.get(Role::Text)), area);
    header::render(state, frame, a.header);
    timeline::render(state, frame, a.timeline);
    seen_before::render(state, frame, a.memory);
    evidence::render(state, frame, a.evidence);
    chat::render(state, frame, a.chat);
    replay_bar::render(state, frame, a.replay_bar);
    statusbar::render_status(state, frame, a.status);
    statusbar::render_keyhints(state, frame, a.keyhints, a.status.height == 0);
    match &state.overlay {
        Some(Overlay::Approval(ui)) => approval::render(state, ui, frame, area),
        Some(Overlay::Credential { reference, .. }) => {
            approval::render_credential(state, reference, frame, area)
        }
        Some(Overlay::Help { scroll }) => help::render(state, *scroll, frame, area),
        Some(Overlay::Palette(p)) => palette::render(state, p, frame, area),
        Some(Overlay::Report(scroll)) => report::render(state, scroll, frame, area),
        None => {}
    }
    if state.focus == app::Pane::Chat && state.overlay.is_none() && !state.is_replay() {
        // The textarea draws its own cursor cell; the terminal cursor stays hidden.
    }
}
