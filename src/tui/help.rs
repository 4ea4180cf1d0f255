//! The `?` overlay: every key, generated from the live keymap so remapped keys show correctly.

use super::app::AppState;
use super::theme::Role;
use super::{centered, pane_block};
use crate::model::{catalog, commands};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

pub fn lines(state: &AppState) -> Vec<Line<'static>> {
    let th = &state.theme;
    let mut out = Vec::new();
    for (title, rows) in state.keymap.help() {
        if !out.is_empty() {
            out.push(Line::raw(""));
        }
        out.push(Line::from(Span::styled(title, th.get(Role::Title))));
        for (keys, desc) in rows {
            out.push(Line::from(vec![
                Span::styled(format!("  {keys:<16}"), th.get(Role::KeyhintKey)),
                Span::raw(desc),
            ]));
        }
    }
    out.push(Line::raw(""));
    // One table of commands: the palette (`:`) and chat slash commands (`/`) both run it.
    out.push(Line::from(Span::styled(
        "Commands (: in the console, / in chat)",
        th.get(Role::Title),
    )));
    for spec in commands::palette() {
        out.push(Line::from(vec![
            Span::styled(
                format!("  {:<16}", commands::usage(spec)),
                th.get(Role::KeyhintKey),
            ),
            Span::raw(spec.help),
        ]));
    }
    out.push(Line::raw(""));
    out.push(Line::from(Span::styled(
        commands::Scope::Agent.title(),
        th.get(Role::Title),
    )));
    for spec in commands::agent() {
        out.push(Line::from(vec![
            Span::styled(
                format!("  {:<16}", commands::usage(spec)),
                th.get(Role::KeyhintKey),
            ),
            Span::raw(spec.help),
        ]));
    }
    // From the catalog, so the list and the floors are the ones policy enforces.
    out.push(Line::raw(""));
    out.push(Line::from(Span::styled(
        "Actions (lowest risk each runs at)",
        th.get(Role::Title),
    )));
    for e in catalog::actions() {
        out.push(Line::from(vec![
            Span::styled(format!("  {:<27}", e.name), th.get(Role::KeyhintKey)),
            Span::styled(
                format!("{:<9}", e.floor.name()),
                th.get(Role::for_risk(e.floor)),
            ),
            Span::raw(e.summary.as_ref()),
        ]));
    }
    out.push(Line::raw(""));
    out.push(Line::from(Span::styled(
        "Read tools (never ask)",
        th.get(Role::Title),
    )));
    for e in catalog::reads() {
        out.push(Line::from(vec![
            Span::styled(format!("  {:<27}", e.name), th.get(Role::KeyhintKey)),
            Span::raw(e.summary.as_ref()),
        ]));
    }
    out
}

pub fn render(state: &AppState, scroll: usize, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let all = lines(state);
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(72),
        area.height.saturating_sub(2).min(all.len() as u16 + 2),
    );
    if rect.width < 10 || rect.height < 3 {
        return;
    }
    let h = usize::from(rect.height - 2);
    let top = scroll.min(all.len().saturating_sub(h));
    frame.render_widget(Clear, rect);
    let more = if all.len() > h {
        format!(
            " help · {}-{}/{} · j/k scroll · esc closes ",
            top + 1,
            (top + h).min(all.len()),
            all.len()
        )
    } else {
        " help · esc closes ".to_string()
    };
    let p = Paragraph::new(all.into_iter().skip(top).take(h).collect::<Vec<_>>())
        .block(pane_block(th, &more, true))
        .style(th.get(Role::Text));
    frame.render_widget(p, rect);
}
