//! The incident timeline: stages, tool calls, findings, actions and decisions; visible rows only.

use super::app::{AppState, Pane};
use super::theme::Role;
use super::{fmt_t, pane_block, sanitize::sanitize};
use crate::model::{ActionStatus, Risk, TimelineItem, TimelineKind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

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
    if let Some(f) = &state.filter
        && f.pane == Pane::Timeline
    {
        title = format!(
            " 1 timeline · /{} · {} of {} ",
            sanitize(&f.query),
            f.rows.len(),
            state.incident().timeline.len()
        );
    }
    let follow = if state.follow {
        " following "
    } else {
        " paused · G follows "
    };
    let block = pane_block(th, &title, focused)
        .title_bottom(Line::from(Span::styled(follow, th.get(Role::Dim))).right_aligned());
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut lines = Vec::with_capacity(h);
    for vis in offset..(offset + h).min(len) {
        let Some(item) = state
            .timeline_row(vis)
            .and_then(|i| state.incident().timeline.get(i))
        else {
            continue;
        };
        let mut line = row(state, item, inner_w);
        if vis == sel {
            let sel_style = if focused {
                th.get(Role::Selection)
            } else {
                th.get(Role::Selection)
                    .add_modifier(ratatui::style::Modifier::DIM)
            };
            let w: usize = line.spans.iter().map(|s| s.width()).sum();
            if w < inner_w {
                line.spans.push(Span::raw(" ".repeat(inner_w - w)));
            }
            line = line.patch_style(sel_style);
        }
        lines.push(line);
    }
    if len == 0 {
        lines.push(Line::from(Span::styled("no events yet", th.get(Role::Dim))));
    }
    frame.render_widget(
        Paragraph::new(lines).block(block).style(th.get(Role::Text)),
        area,
    );
}

fn row(state: &AppState, item: &TimelineItem, width: usize) -> Line<'static> {
    let th = &state.theme;
    let inc = state.incident();
    let mut style = th.get(Role::Text);
    let mut suffix: Option<(String, Style)> = None;
    match &item.kind {
        TimelineKind::Stage { .. } => style = th.get(Role::Title),
        TimelineKind::Session | TimelineKind::Chat => style = th.get(Role::Dim),
        TimelineKind::Tool { call_id } => {
            if let Some(call) = state.index.tool(inc, call_id)
                && !item.text.starts_with('✗')
            {
                suffix = Some(match (&call.outcome, call.duration_ms) {
                    (None, _) => ("running…".to_string(), th.get(Role::Running)),
                    (Some(Ok(_)), Some(ms)) => (format!("✓ {}", fmt_ms(ms)), th.get(Role::Ok)),
                    (Some(Ok(_)), None) => ("✓".to_string(), th.get(Role::Ok)),
                    (Some(Err(_)), ms) => (
                        format!("✗ {}", ms.map(fmt_ms).unwrap_or_default()),
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
                    suffix = Some((a.status.name().to_string(), st));
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
    }
    let time = format!("{:>6} ", fmt_t(item.t));
    let text = sanitize(&item.text);
    let suffix_w = suffix
        .as_ref()
        .map(|(s, _)| s.chars().count() + 1)
        .unwrap_or(0);
    let avail = width.saturating_sub(time.len() + suffix_w);
    let body: String = if text.chars().count() > avail {
        let mut s: String = text.chars().take(avail.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        text.into_owned()
    };
    let mut spans = vec![
        Span::styled(time, th.get(Role::Dim)),
        Span::styled(body, style),
    ];
    if let Some((s, st)) = suffix {
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let pad = width.saturating_sub(used + s.chars().count()).max(1);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(s, st));
    }
    Line::from(spans)
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
