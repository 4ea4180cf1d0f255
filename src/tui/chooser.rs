//! The demo chooser screen: the scenario list, the filter prompt, its help and key hints.

use super::chooser_state::{ChooserState, Entry};
use super::keymap::Action;
use super::sanitize::sanitize;
use super::theme::Role;
use super::{centered, list_screen, pane_block};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// Rows one scenario takes: name, title, what it exercises.
const ROWS: usize = 3;

pub fn draw(state: &ChooserState, frame: &mut Frame) {
    let Some(screen) = list_screen::frame(frame, &state.theme, (24, 6), 1) else {
        return;
    };
    let (area, header, list) = (screen.area, screen.header[0], screen.list);
    let (status, hints) = (screen.status, screen.hints);
    render_header(state, frame, header);
    render_list(state, frame, list);
    render_status(state, frame, status);
    render_keyhints(state, frame, hints);
    if state.help {
        render_help(state, frame, area);
    }
}

fn render_header(state: &ChooserState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let left = vec![
        Span::styled(" sitrep demo ", th.get(Role::Statusbar)),
        Span::raw(" "),
        Span::styled("choose a scenario to investigate", th.get(Role::Title)),
    ];
    let right = format!("{} of {} ", state.visible().len(), state.entries.len());
    let used: usize = left.iter().map(|s| s.width()).sum::<usize>() + cols(&right);
    let mut spans = left;
    spans.push(Span::raw(
        " ".repeat(usize::from(area.width).saturating_sub(used)),
    ));
    spans.push(Span::styled(right, th.get(Role::Dim)));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_list(state: &ChooserState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let filter = state.active_filter();
    let title = if filter.is_empty() {
        " scenarios ".to_string()
    } else {
        format!(" scenarios · /{} ", sanitize(filter))
    };
    let block = pane_block(th, &title, true);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let visible = state.visible();
    if visible.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled(
                " no scenario matches the filter (esc clears it)",
                th.get(Role::Dim),
            )),
            inner,
        );
        return;
    }
    // Scroll just far enough that the highlighted scenario is whole on screen.
    let fits = (usize::from(inner.height) / ROWS).max(1);
    let pos = visible
        .iter()
        .position(|i| *i == state.selected)
        .unwrap_or(0);
    let top = (pos + 1).saturating_sub(fits);
    let width = usize::from(inner.width);
    let mut lines = Vec::new();
    for &i in visible.iter().skip(top).take(fits) {
        if let Some(e) = state.entries.get(i) {
            lines.extend(entry_lines(state, e, i == state.selected, width));
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn entry_lines(
    state: &ChooserState,
    e: &Entry,
    selected: bool,
    width: usize,
) -> Vec<Line<'static>> {
    let th = &state.theme;
    let base = if selected {
        th.get(Role::Selection)
    } else {
        Style::default()
    };
    let marker = if selected { " ▸ " } else { "   " };
    let level = e
        .difficulty
        .map(|d| {
            let d = d.min(5) as usize;
            format!(
                "difficulty {}{} ",
                "●".repeat(d),
                "○".repeat(3usize.saturating_sub(d))
            )
        })
        .unwrap_or_default();
    let name = fit(
        &sanitize(&e.name),
        width.saturating_sub(cols(marker) + cols(&level) + 1),
    );
    let pad = width.saturating_sub(cols(marker) + cols(&name) + cols(&level));
    let name_line = Line::from(vec![
        Span::styled(marker.to_string(), base.patch(th.get(Role::BorderFocus))),
        Span::styled(name, base.patch(th.get(Role::Title))),
        Span::styled(" ".repeat(pad), base),
        Span::styled(level, base.patch(th.get(Role::Dim))),
    ]);
    let indented = |text: &str, role: Role| {
        let text = fit(text, width.saturating_sub(3));
        let pad = width.saturating_sub(3 + cols(&text));
        Line::from(vec![
            Span::styled("   ", base),
            Span::styled(text, base.patch(th.get(role))),
            Span::styled(" ".repeat(pad), base),
        ])
    };
    vec![
        name_line,
        indented(&sanitize(&e.title), Role::Text),
        indented(&sanitize(&e.about), Role::Dim),
    ]
}

/// Display columns of `text`.
fn cols(text: &str) -> usize {
    Span::raw(text).width()
}

/// Cut `text` to `width` columns, marking the cut with an ellipsis.
fn fit(text: &str, width: usize) -> String {
    if cols(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = cols(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

fn render_status(state: &ChooserState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let line = match &state.filter_input {
        Some(input) => Line::from(vec![
            Span::styled("/", th.get(Role::KeyhintKey)),
            Span::raw(sanitize(input).into_owned()),
            Span::styled("▏", th.get(Role::BorderFocus)),
            Span::styled("  enter applies · esc cancels", th.get(Role::Dim)),
        ]),
        None => match state.highlighted() {
            Some(e) => Line::from(vec![
                Span::styled(" enter starts ", th.get(Role::Dim)),
                Span::styled(sanitize(&e.name).into_owned(), th.get(Role::StatusInfo)),
            ]),
            None => Line::raw(""),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn render_keyhints(state: &ChooserState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let km = &state.keymap;
    // The first key of each action: the label joins keys with '/', which is itself a key.
    let first = |a: Action| {
        km.keys(a)
            .first()
            .map(|k| k.to_string())
            .unwrap_or_default()
    };
    let hints: Vec<(String, &str)> = if state.filter_input.is_some() {
        vec![
            ("enter".into(), "apply"),
            ("esc".into(), "cancel"),
            ("↑/↓".into(), "move"),
        ]
    } else if state.help {
        vec![("esc".into(), "close"), (first(Action::Quit), "quit")]
    } else {
        vec![
            (
                format!("{}/{}", first(Action::Down), first(Action::Up)),
                "move",
            ),
            ("enter".into(), "start"),
            (first(Action::Search), "filter"),
            (first(Action::Help), "help"),
            (format!("{}/esc", first(Action::Quit)), "quit"),
        ]
    };
    let mut spans = Vec::new();
    let mut used = 0usize;
    for (k, d) in hints {
        let w = cols(&k) + cols(d) + 3;
        if used + w > usize::from(area.width) {
            break;
        }
        used += w;
        spans.push(Span::styled(format!(" {k}"), th.get(Role::KeyhintKey)));
        spans.push(Span::styled(format!(" {d} "), th.get(Role::Dim)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_help(state: &ChooserState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let km = &state.keymap;
    let rows: Vec<(String, &str)> = vec![
        (
            format!("{} {}", km.label(Action::Down), km.label(Action::Up)),
            "move",
        ),
        (
            format!("{} {}", km.label(Action::Top), km.label(Action::Bottom)),
            "first / last",
        ),
        ("enter".into(), "start the highlighted scenario"),
        (km.label(Action::Search), "filter by name or title"),
        (km.label(Action::Back), "clear the filter, else quit"),
        (km.label(Action::Quit), "quit without starting"),
        (km.label(Action::Help), "this help"),
    ];
    let lines: Vec<Line> = rows
        .into_iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!("  {k:<16}"), th.get(Role::KeyhintKey)),
                Span::raw(d),
            ])
        })
        .collect();
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(56),
        (lines.len() as u16 + 2).min(area.height.saturating_sub(2)),
    );
    if rect.width < 10 || rect.height < 3 {
        return;
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .block(pane_block(th, " chooser keys · esc closes ", true))
            .style(th.get(Role::Text)),
        rect,
    );
}
