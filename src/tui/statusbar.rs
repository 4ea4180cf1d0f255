//! The transient status line and the bottom key-hint bar (hints follow the current context).

use super::app::{AppState, ApprovalStage, Overlay, Pane};
use super::keymap::Action;
use super::sanitize::sanitize;
use super::search::Mode;
use super::theme::Role;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn render_status(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    let th = &state.theme;
    let line = if let Some(input) = &state.filter_input {
        let prompt = match state.search_mode {
            Mode::Search => "/",
            Mode::Filter => "&",
        };
        Line::from(vec![
            Span::styled(prompt, th.get(Role::KeyhintKey)),
            Span::raw(sanitize(input).into_owned()),
            Span::styled("▏", th.get(Role::BorderFocus)),
            Span::styled("  enter applies · esc cancels", th.get(Role::Dim)),
        ])
    } else if let Some(s) = &state.status {
        let role = if s.error {
            Role::StatusError
        } else {
            Role::StatusInfo
        };
        Line::from(Span::styled(sanitize(&s.text).into_owned(), th.get(role)))
    } else if let Some(f) = &state.filter {
        // lnav's status: the query and where the operator is among its matches.
        let what = if f.hides() { "filter" } else { "search" };
        Line::from(vec![
            Span::styled(format!("{what} "), th.get(Role::Dim)),
            Span::styled(sanitize(&f.query).into_owned(), th.get(Role::Match)),
            Span::styled(format!(" {} ", f.position()), th.get(Role::StatusInfo)),
            Span::styled(
                if f.hides() {
                    " esc clears"
                } else {
                    " n/N jump · esc clears"
                },
                th.get(Role::Dim),
            ),
        ])
    } else {
        Line::raw("")
    };
    frame.render_widget(Paragraph::new(line), area);
}

pub fn render_keyhints(state: &AppState, frame: &mut Frame, area: Rect, with_status: bool) {
    if area.height == 0 {
        return;
    }
    let th = &state.theme;
    // One-line layouts: the status (or filter prompt) takes the key-hint row while it is shown.
    if with_status
        && (state.filter_input.is_some() || state.status.is_some() || state.filter.is_some())
    {
        render_status(state, frame, area);
        return;
    }
    let km = &state.keymap;
    let mut spans = Vec::new();
    let mut used = 0usize;
    let width = usize::from(area.width);
    for group in hints(state) {
        let (k, d) = (km.short_label(&group), group[0].spec().hint);
        let w = k.chars().count() + d.chars().count() + 3;
        if used + w > width {
            break;
        }
        used += w;
        spans.push(Span::styled(format!(" {k}"), th.get(Role::KeyhintKey)));
        spans.push(Span::styled(format!(" {d} "), th.get(Role::Dim)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The key-hint bar for the current context, most useful first: groups of commands from the
/// table, each shown as its keys and the first one's hint label.
pub fn hints(state: &AppState) -> Vec<Vec<Action>> {
    use Action as A;
    let mut hints: Vec<Vec<Action>> = Vec::new();
    match &state.overlay {
        Some(Overlay::Approval(ui)) => match ui.stage {
            ApprovalStage::Review => hints.extend([
                vec![A::Approve],
                vec![A::Deny],
                vec![A::Edit],
                vec![A::Back],
            ]),
            ApprovalStage::Confirm(_) => hints.extend([vec![A::Confirm], vec![A::Back]]),
            _ => hints.push(vec![A::Back]),
        },
        Some(Overlay::Credential { .. }) => {
            hints.extend([vec![A::Approve], vec![A::Deny], vec![A::Back]])
        }
        Some(Overlay::Help { .. }) => hints.extend([vec![A::Down, A::Up], vec![A::Back]]),
        Some(Overlay::Report(_)) => {
            hints.extend([vec![A::Down, A::Up], vec![A::Wrap], vec![A::Back]])
        }
        Some(Overlay::Palette(_)) => hints.extend([vec![A::Complete], vec![A::Run], vec![A::Back]]),
        None if state.focus == Pane::Chat && !state.is_replay() => {
            hints.extend([vec![A::Send], vec![A::Back], vec![A::NextPane]])
        }
        None => {
            if state.is_replay() {
                hints.extend([
                    vec![A::TogglePlay],
                    vec![A::Step],
                    vec![A::PrevStage, A::NextStage],
                    vec![A::Slower, A::Faster],
                    vec![A::Seek],
                ]);
            } else if state.pending().is_some() {
                hints.push(vec![A::OpenApproval]);
            }
            if state.skip_ahead.is_some() && !state.agent_done {
                hints.push(vec![A::SkipAhead]);
            }
            if state.incident().report.is_some() {
                hints.push(vec![A::Report]);
            }
            hints.extend([
                vec![A::Help],
                vec![A::Palette],
                vec![A::Search],
                vec![A::NextPane],
                vec![A::Down, A::Up],
            ]);
            if !state.is_replay() {
                hints.push(vec![A::PaneChat]);
            }
            hints.push(vec![A::Quit]);
        }
    }
    hints
}
