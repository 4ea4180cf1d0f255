//! The `:` command palette: an input line with completion candidates below it.

use super::app::{AppState, PaletteState, palette_candidates};
use super::theme::Role;
use super::{centered, pane_block, sanitize::sanitize};
use crate::model::commands;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

pub fn render(state: &AppState, p: &PaletteState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let cands = palette_candidates(&p.input);
    let h = (cands.len() as u16 + 3)
        .min(area.height.saturating_sub(2))
        .max(3);
    let mut rect = centered(area, area.width.saturating_sub(4).min(70), h);
    rect.y = area.y + area.height.min(3).min(area.height.saturating_sub(h));
    if rect.width < 10 || rect.height < 3 {
        return;
    }
    frame.render_widget(Clear, rect);
    let mut lines = vec![Line::from(vec![
        Span::styled(":", th.get(Role::KeyhintKey)),
        Span::raw(sanitize(&p.input).into_owned()),
        Span::styled("▏", th.get(Role::BorderFocus)),
    ])];
    for (i, spec) in cands.iter().enumerate() {
        let text = format!(" {:<28} {}", commands::usage(spec), spec.help);
        let style = if i == p.selected {
            th.get(Role::Selection)
        } else {
            th.get(Role::Text)
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if cands.is_empty() {
        lines.push(Line::from(Span::styled(
            " no such command",
            th.get(Role::Dim),
        )));
    }
    let block = pane_block(
        th,
        " command · tab completes · enter runs · esc closes ",
        true,
    );
    frame.render_widget(
        Paragraph::new(lines).block(block).style(th.get(Role::Text)),
        rect,
    );
}
