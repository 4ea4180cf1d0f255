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
    let mut hints: Vec<(String, &str)> = Vec::new();
    match &state.overlay {
        Some(Overlay::Approval(ui)) => match ui.stage {
            ApprovalStage::Review => {
                hints.push((km.label(Action::Approve), "approve"));
                hints.push((km.label(Action::Deny), "deny"));
                hints.push((km.label(Action::Edit), "edit"));
                hints.push(("esc".into(), "look around"));
            }
            ApprovalStage::Confirm(_) => {
                hints.push(("name+enter".into(), "confirm"));
                hints.push((km.label(Action::Confirm), "confirm"));
                hints.push(("esc".into(), "cancel"));
            }
            _ => hints.push(("esc".into(), "back")),
        },
        Some(Overlay::Credential { .. }) => {
            hints.push((km.label(Action::Approve), "allow for this session"));
            hints.push((km.label(Action::Deny), "deny"));
            hints.push(("esc".into(), "later"));
        }
        Some(Overlay::Help { .. }) => hints.push(("esc".into(), "close")),
        Some(Overlay::Report(_)) => {
            hints.push(("j/k".into(), "scroll"));
            hints.push(("w".into(), "wrap"));
            hints.push(("esc".into(), "close"));
        }
        Some(Overlay::Palette(_)) => {
            hints.push(("tab".into(), "complete"));
            hints.push(("enter".into(), "run"));
            hints.push(("esc".into(), "close"));
        }
        None if state.focus == Pane::Chat && !state.is_replay() => {
            hints.push(("enter".into(), "send"));
            hints.push(("esc".into(), "leave chat"));
            hints.push(("tab".into(), "next pane"));
        }
        None => {
            if state.is_replay() {
                hints.push((km.label(Action::TogglePlay), "play"));
                hints.push((km.label(Action::Step), "step"));
                hints.push((
                    format!(
                        "{} {}",
                        km.label(Action::PrevStage),
                        km.label(Action::NextStage)
                    ),
                    "stage",
                ));
                hints.push((
                    format!("{} {}", km.label(Action::Slower), km.label(Action::Faster)),
                    "speed",
                ));
                hints.push(("0-9".into(), "seek"));
            } else if state.pending().is_some() {
                hints.push((km.label(Action::OpenApproval), "approval"));
            }
            if state.skip_ahead.is_some() && !state.agent_done {
                hints.push((km.label(Action::SkipAhead), "skip ahead"));
            }
            if state.incident().report.is_some() {
                hints.push((km.label(Action::Report), "report"));
            }
            hints.push((km.label(Action::Help), "help"));
            hints.push((km.label(Action::Palette), "cmd"));
            hints.push((km.label(Action::Filter), "filter"));
            hints.push((km.label(Action::NextPane), "pane"));
            hints.push(("j/k".into(), "move"));
            if !state.is_replay() {
                hints.push(("3".into(), "chat"));
            }
            hints.push((
                km.label(Action::Quit)
                    .split('/')
                    .next()
                    .unwrap_or("q")
                    .to_string(),
                "quit",
            ));
        }
    }
    let mut spans = Vec::new();
    let mut used = 0usize;
    let width = usize::from(area.width);
    for (k, d) in hints {
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
