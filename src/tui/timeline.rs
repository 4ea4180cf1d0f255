//! The incident timeline: stages, tool calls, findings, actions and decisions; visible rows only.

use super::app::{AppState, Pane};
use super::sanitize::{sanitize, sanitize_prefix};
use super::theme::Role;
use super::{fmt_t, pane_block};
use crate::model::{ActionStatus, Risk, TimelineItem, TimelineKind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use std::borrow::Cow;

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    let th = &state.theme;
    let len = state.timeline_len();
    let h = usize::from(area.height - 2);
    // The reducer keeps the offset; clamp again in case the terminal changed size since.
    let sel = state.timeline_sel.min(len.saturating_sub(1));
    let mut offset = state.timeline_offset.min(len.saturating_sub(h));
    if sel < offset {
        offset = sel;
    } else if sel >= offset + h {
        offset = sel + 1 - h;
    }
    let focused = state.focus == Pane::Timeline;
    let mut title = format!(" 1 timeline · {} ", state.incident().timeline.len());
    let search = state.filter.as_ref().filter(|f| f.pane == Pane::Timeline);
    if let Some(f) = search {
        title = if f.hides() {
            format!(
                " 1 timeline · &{} · {} of {} ",
                sanitize(&f.query),
                f.rows.len(),
                state.incident().timeline.len()
            )
        } else {
            format!(" 1 timeline · /{} {} ", sanitize(&f.query), f.position())
        };
    }
    let follow = if state.follow {
        " following "
    } else {
        " paused · G follows "
    };
    let block = pane_block(th, &title, focused)
        .title_bottom(Line::from(Span::styled(follow, th.get(Role::Dim))).right_aligned());
    let text_style = th.get(Role::Text);
    let buf = frame.buffer_mut();
    let inner = block.inner(area);
    buf.set_style(area, text_style);
    block.render(area, buf);
    let inner_w = usize::from(inner.width);
    // Rows go straight into the buffer: the cells are blank already, so padding (most of a
    // tool-call row) is never written, and the selection is a style over the whole row.
    for (y, vis) in (inner.y..inner.bottom()).zip(offset..(offset + h).min(len)) {
        let Some(item) = state
            .timeline_row(vis)
            .and_then(|i| state.incident().timeline.get(i))
        else {
            continue;
        };
        let (mut line, suffix) = row(state, item, inner_w);
        if let Some(f) = search.filter(|f| !f.hides()) {
            let marks = f.ranges(&line.to_string());
            line = super::text::mark(line, &marks, th.get(Role::Match));
        }
        let (end, _) = buf.set_line(inner.x, y, &line, inner.width);
        if let Some((text, style)) = suffix {
            let w = u16::try_from(text.chars().count()).unwrap_or(u16::MAX);
            let x = inner.right().saturating_sub(w).max(end + 1);
            if x < inner.right() {
                buf.set_stringn(x, y, &text, usize::from(inner.right() - x), style);
            }
        }
        if vis == sel {
            let sel_style = if focused {
                th.get(Role::Selection)
            } else {
                th.get(Role::Selection)
                    .add_modifier(ratatui::style::Modifier::DIM)
            };
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), sel_style);
        }
    }
    if len == 0 && !inner.is_empty() {
        buf.set_stringn(
            inner.x,
            inner.y,
            "no events yet",
            inner_w,
            th.get(Role::Dim),
        );
    }
}

/// A row's time and text, and its right-aligned status (duration, outcome) if it has one.
type Row<'a> = (Line<'a>, Option<(Cow<'static, str>, Style)>);

/// One visible row. Text is borrowed from the incident when it needs no sanitizing, and only
/// the part that fits is scanned, so a frame's cost does not grow with what is off screen.
fn row<'a>(state: &'a AppState, item: &'a TimelineItem, width: usize) -> Row<'a> {
    let th = &state.theme;
    let inc = state.incident();
    let mut style = th.get(Role::Text);
    let mut suffix: Option<(Cow<'static, str>, Style)> = None;
    match &item.kind {
        TimelineKind::Stage { .. } => style = th.get(Role::Title),
        TimelineKind::Session | TimelineKind::Chat => style = th.get(Role::Dim),
        TimelineKind::Tool { call_id } => {
            if let Some(call) = state.index.tool(inc, call_id)
                && !item.text.starts_with('✗')
            {
                suffix = Some(match (&call.outcome, call.duration_ms) {
                    (None, _) => ("running…".into(), th.get(Role::Running)),
                    (Some(Ok(_)), Some(ms)) => {
                        (format!("✓ {}", fmt_ms(ms)).into(), th.get(Role::Ok))
                    }
                    (Some(Ok(_)), None) => ("✓".into(), th.get(Role::Ok)),
                    (Some(Err(_)), ms) => (
                        format!("✗ {}", ms.map(fmt_ms).unwrap_or_default()).into(),
                        th.get(Role::Error),
                    ),
                });
            }
            if item.text.starts_with('✗') {
                style = th.get(Role::Error);
            }
        }
        TimelineKind::Evidence { .. } => style = th.get(Role::Dim),
        TimelineKind::Finding { .. } | TimelineKind::Warning => style = th.get(Role::Warn),
        TimelineKind::Hypotheses | TimelineKind::Diagnosis => style = th.get(Role::Title),
        TimelineKind::Action { action_id } | TimelineKind::Decision { action_id } => {
            if let Some(a) = inc.action(action_id) {
                style = match a.action.risk {
                    Risk::Low => th.get(Role::RiskLow),
                    Risk::Medium => th.get(Role::RiskMedium),
                    Risk::High => th.get(Role::RiskHigh),
                    Risk::Critical => th.get(Role::RiskCritical),
                };
                if matches!(item.kind, TimelineKind::Action { .. }) && item.text.starts_with('⚑')
                {
                    let st = match a.status {
                        ActionStatus::Executed => th.get(Role::Ok),
                        ActionStatus::Failed | ActionStatus::Denied => th.get(Role::Error),
                        _ => th.get(Role::Dim),
                    };
                    suffix = Some((a.status.name().into(), st));
                }
            }
        }
        TimelineKind::Verification { .. } => {
            style = if item.text.starts_with('✔') {
                th.get(Role::Ok)
            } else {
                th.get(Role::Error)
            };
        }
        TimelineKind::Report => style = th.get(Role::Ok),
        TimelineKind::Memory => style = th.get(Role::Title),
    }
    let time = format!("{:>6} ", fmt_t(item.t));
    let suffix_w = suffix
        .as_ref()
        .map(|(s, _)| s.chars().count() + 1)
        .unwrap_or(0);
    let avail = width.saturating_sub(time.len() + suffix_w);
    let (mut body, cut) = sanitize_prefix(&item.text, avail);
    let mut spans = Vec::with_capacity(5);
    spans.push(Span::styled(time, th.get(Role::Dim)));
    if cut {
        // Too long: the last character that fit gives way to an ellipsis.
        match &mut body {
            Cow::Borrowed(b) => *b = b.char_indices().last().map_or("", |(i, _)| &b[..i]),
            Cow::Owned(o) => {
                o.pop();
            }
        }
        spans.push(Span::styled(body, style));
        spans.push(Span::styled("…", style));
    } else {
        spans.push(Span::styled(body, style));
    }
    (Line::from(spans), suffix)
}

pub fn fmt_ms(ms: u64) -> String {
    if ms >= 10_000 {
        format!("{:.0}s", ms as f64 / 1000.0)
    } else if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}
