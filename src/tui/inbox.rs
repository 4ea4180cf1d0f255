//! The inbox screen: source health, alerts grouped karma-style with severity, age and markers, a label
//! overview, the filter or action prompt, and key hints.

use super::inbox_rows::{alert_line, group_line};
use super::inbox_state::{InboxState, Prompt, Row};
use super::sanitize::sanitize;
use super::theme::Role;
use super::{centered, list_screen, pane_block};
use crate::inbox::{AlertState, Group, severity_rank};
use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// Width from which the label overview sits beside the list.
const OVERVIEW_MIN_WIDTH: u16 = 120;
const OVERVIEW_WIDTH: u16 = 36;

pub fn draw(state: &InboxState, frame: &mut Frame) {
    let Some(screen) = list_screen::frame(frame, &state.theme, (30, 8), 2) else {
        return;
    };
    let (area, body, status, hints) = (screen.area, screen.list, screen.status, screen.hints);
    let (header, sources) = (screen.header[0], screen.header[1]);
    render_header(state, frame, header);
    render_sources(state, frame, sources);
    let groups = state.groups();
    if state.show_labels && area.width >= OVERVIEW_MIN_WIDTH {
        let list = Rect {
            width: body.width - OVERVIEW_WIDTH,
            ..body
        };
        let side = Rect {
            x: body.x + body.width - OVERVIEW_WIDTH,
            width: OVERVIEW_WIDTH,
            ..body
        };
        render_list(state, &groups, frame, list);
        render_overview(state, frame, side);
    } else {
        render_list(state, &groups, frame, body);
    }
    render_status(state, frame, status);
    render_hints(state, frame, hints);
    if state.help {
        render_help(state, frame, area);
    }
}

pub(super) fn severity_role(severity: &str) -> Role {
    match severity_rank(severity) {
        3 => Role::SeverityCritical,
        2 => Role::SeverityWarning,
        1 => Role::SeverityInfo,
        _ => Role::SeverityUnknown,
    }
}

/// `45s`, `12m`, `3h`, `2d`.
pub fn age(since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let Some(t) = since else {
        return "-".into();
    };
    let s = (now - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

fn render_header(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let count = |s: AlertState| state.alerts.iter().filter(|a| a.state == s).count();
    let firing = state.firing();
    let mut spans = vec![
        Span::styled(" sitrep inbox ", th.get(Role::Statusbar)),
        Span::raw(" "),
        Span::styled(
            format!("{firing} firing"),
            if firing > 0 {
                th.get(Role::SeverityCritical)
            } else {
                th.get(Role::Ok)
            },
        ),
    ];
    for (state_, label) in [
        (AlertState::Silenced, "silenced"),
        (AlertState::Inhibited, "inhibited"),
        (AlertState::Acknowledged, "acked"),
    ] {
        let n = count(state_);
        if n > 0 {
            spans.push(Span::styled(format!(" · {n} {label}"), th.get(Role::Dim)));
        }
    }
    let right = if state.loaded {
        format!("updated {} UTC ", state.now.format("%H:%M:%S"))
    } else {
        "polling… ".to_string()
    };
    let used: usize = spans.iter().map(|s| s.width()).sum::<usize>() + right.chars().count();
    spans.push(Span::raw(
        " ".repeat(usize::from(area.width).saturating_sub(used)),
    ));
    spans.push(Span::styled(right, th.get(Role::Dim)));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_sources(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let mut spans = vec![Span::raw(" ")];
    if state.health.is_empty() {
        spans.push(Span::styled(
            "waiting for the first poll",
            th.get(Role::Dim),
        ));
    }
    for h in &state.health {
        match &h.error {
            None => {
                spans.push(Span::styled("● ", th.get(Role::Ok)));
                spans.push(Span::raw(format!("{} {}", h.source.name(), h.alerts)));
                spans.push(Span::styled(
                    format!(" {}ms   ", h.latency_ms),
                    th.get(Role::Dim),
                ));
            }
            Some(e) => {
                spans.push(Span::styled("✗ ", th.get(Role::Error)));
                spans.push(Span::styled(
                    format!("{} down", h.source.name()),
                    th.get(Role::Error),
                ));
                // The reason only where there is room; narrow screens keep every source visible.
                let detail = if area.width >= OVERVIEW_MIN_WIDTH {
                    let short: String = sanitize(e).chars().take(60).collect();
                    format!(
                        " ({short}; retrying with backoff, failure {})   ",
                        h.failures
                    )
                } else {
                    format!(" ×{}   ", h.failures)
                };
                spans.push(Span::styled(detail, th.get(Role::Dim)));
            }
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_list(state: &InboxState, groups: &[Group], frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let filter = state.filter_input.as_deref().unwrap_or(&state.filter_text);
    let title = if filter.is_empty() {
        format!(" alerts by {} ", state.group_by.join(", "))
    } else {
        format!(
            " alerts by {} · {} ",
            state.group_by.join(", "),
            sanitize(filter)
        )
    };
    let block = pane_block(th, &title, true);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = state.rows(groups);
    if rows.is_empty() {
        let msg = if !state.loaded {
            "asking the sources…"
        } else if state.alerts.is_empty() {
            "nothing is firing"
        } else {
            "no alert matches the filter (esc clears it)"
        };
        frame.render_widget(
            Paragraph::new(Line::styled(msg, th.get(Role::Dim))).alignment(Alignment::Center),
            Rect {
                y: inner.y + inner.height / 2,
                height: inner.height.min(1),
                ..inner
            },
        );
        return;
    }
    let width = usize::from(inner.width);
    let height = usize::from(inner.height);
    let selected = state.selected.min(rows.len() - 1);
    // Keep the selection in view even when the stored offset is stale (a resize, a new poll).
    let offset = if selected < state.offset {
        selected
    } else if selected >= state.offset + height {
        selected + 1 - height
    } else {
        state.offset
    };
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, row)| match row {
            Row::Group(gi) => group_line(state, &groups[*gi], width, i == selected),
            Row::Alert(_, a) => alert_line(state, &state.alerts[*a], width, i == selected),
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn render_overview(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let block = pane_block(th, " labels ", false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let overview = crate::inbox::label_overview(&state.alerts, &state.visible());
    let width = usize::from(inner.width);
    let mut lines = Vec::new();
    for (name, values) in overview {
        if lines.len() >= usize::from(inner.height) {
            break;
        }
        lines.push(Line::styled(
            sanitize(&name).into_owned(),
            th.get(Role::Title),
        ));
        for (v, n) in values.iter().take(4) {
            let text: String = format!("  {n:>3} {}", sanitize(v))
                .chars()
                .take(width)
                .collect();
            lines.push(Line::styled(text, th.get(Role::Text)));
        }
        if values.len() > 4 {
            lines.push(Line::styled(
                format!("      +{} more", values.len() - 4),
                th.get(Role::Dim),
            ));
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn render_status(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let line = match (&state.prompt, &state.filter_input) {
        (Some(Prompt::Silence(t)), _) => Line::from(vec![
            Span::styled(
                format!(
                    " silence {}h, comment: ",
                    super::inbox_state::SILENCE_MINUTES / 60
                ),
                th.get(Role::KeyhintKey),
            ),
            Span::raw(format!("{}▏", sanitize(t))),
            Span::styled("  enter proposes · esc cancels", th.get(Role::Dim)),
        ]),
        (Some(Prompt::Note(t)), _) => Line::from(vec![
            Span::styled(" note: ", th.get(Role::KeyhintKey)),
            Span::raw(format!("{}▏", sanitize(t))),
            Span::styled("  enter proposes · esc cancels", th.get(Role::Dim)),
        ]),
        (None, Some(input)) => {
            let mut spans = vec![
                Span::styled(" / ", th.get(Role::KeyhintKey)),
                Span::raw(format!("{}▏", sanitize(input))),
            ];
            if let Some(e) = &state.filter_error {
                spans.push(Span::styled(
                    format!("  {}", sanitize(e)),
                    th.get(Role::StatusError),
                ));
            }
            Line::from(spans)
        }
        (None, None) => match &state.status {
            Some(s) => Line::styled(format!(" {}", sanitize(s)), th.get(Role::StatusInfo)),
            None => Line::raw(""),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn render_hints(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let hints: &[(&str, &str)] = &[
        ("enter", "investigate"),
        ("s", "silence"),
        ("x", "expire"),
        ("A", "ack"),
        ("R", "resolve"),
        ("m", "note"),
        ("/", "filter"),
        ("l", "labels"),
        ("?", "help"),
        ("q", "quit"),
    ];
    let mut spans = Vec::new();
    let mut used = 0usize;
    for (k, what) in hints {
        let w = k.chars().count() + what.chars().count() + 3;
        if used + w > usize::from(area.width) {
            break;
        }
        used += w;
        spans.push(Span::styled(format!(" {k}"), th.get(Role::KeyhintKey)));
        spans.push(Span::styled(format!(" {what} "), th.get(Role::Dim)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_help(state: &InboxState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let rows: &[(&str, &str)] = &[
        ("j/k g/G ctrl-d/u", "move"),
        (
            "enter",
            "investigate the alert or group (reopens its session)",
        ),
        ("s", "propose a silence (medium risk: veto countdown)"),
        ("x", "propose expiring its silences"),
        ("A / R", "propose PagerDuty acknowledge / resolve"),
        ("m", "propose a note on the PagerDuty incident"),
        ("/", "filter: severity=critical service=~\"api.*\" env!=dev"),
        ("esc", "clear the filter / close"),
        ("l", "label overview"),
        ("q", "quit"),
    ];
    let h = (rows.len() as u16 + 4).min(area.height);
    let w = 72.min(area.width);
    let r = centered(area, w, h);
    frame.render_widget(Clear, r);
    let block = pane_block(th, " inbox keys ", true);
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let lines: Vec<Line> = rows
        .iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!(" {k:<18}"), th.get(Role::KeyhintKey)),
                Span::raw(d.to_string()),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
