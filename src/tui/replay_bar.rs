//! The replay bar: play state, speed, time, and a progress bar marking where each stage began.

use super::app::AppState;
use super::fmt_t;
use super::theme::Role;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let Some(r) = &state.replay else { return };
    if area.height == 0 || area.width < 10 {
        return;
    }
    let th = &state.theme;
    let c = &r.clock;
    let icon = if c.is_finished() {
        "■ end"
    } else if !c.is_paused() {
        "▶ playing"
    } else {
        "⏸ paused"
    };
    let info = format!(
        " {icon} {}x  {} / {}  event {}/{} ",
        c.speed(),
        fmt_t(c.session_time()),
        fmt_t(c.duration()),
        c.position(),
        c.len()
    );
    let width = usize::from(area.width);
    let bar_w = if area.height >= 2 {
        width.saturating_sub(2)
    } else {
        width.saturating_sub(info.chars().count() + 1)
    };
    let filled = ((c.progress() * bar_w as f64).round() as usize).min(bar_w);
    let mut cells: Vec<char> = (0..bar_w)
        .map(|i| if i < filled { '━' } else { '─' })
        .collect();
    // Marks and the fill share one scale, play time, so a mark lights up as the replay passes it.
    for (frac, stage) in &r.marks {
        let pos = (frac * bar_w as f64) as usize;
        if let Some(cell) = cells.get_mut(pos.min(bar_w.saturating_sub(1))) {
            *cell = stage
                .name()
                .chars()
                .next()
                .unwrap_or('|')
                .to_ascii_uppercase();
        }
    }
    let done: String = cells[..filled].iter().collect();
    let rest: String = cells[filled..].iter().collect();
    let bar = vec![
        Span::raw(" "),
        Span::styled(done, th.get(Role::Progress)),
        Span::styled(rest, th.get(Role::Dim)),
    ];
    let lines = if area.height >= 2 {
        vec![
            Line::from(Span::styled(info, th.get(Role::Title))),
            Line::from(bar),
        ]
    } else {
        let mut spans = vec![Span::styled(info, th.get(Role::Title))];
        spans.extend(bar);
        vec![Line::from(spans)]
    };
    frame.render_widget(Paragraph::new(lines), area);
}
