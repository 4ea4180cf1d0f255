//! The header: incident title, severity, the stage pipeline with the current stage, elapsed time.

use super::app::AppState;
use super::theme::Role;
use super::{fmt_t, sanitize::sanitize};
use crate::model::{ActionStatus, Stage, StageStatus};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    let th = &state.theme;
    let inc = state.incident();
    let sev = inc.severity().to_string();
    let sev_role = match sev.as_str() {
        "critical" | "page" | "error" => Role::SeverityCritical,
        "warning" | "warn" => Role::SeverityWarning,
        "info" => Role::SeverityInfo,
        _ => Role::SeverityUnknown,
    };
    let title = if inc.title.is_empty() {
        "waiting for the investigation to start…".to_string()
    } else {
        sanitize(&inc.title).into_owned()
    };
    let elapsed = if inc.is_finished() || state.is_replay() {
        inc.now.max(state.now_t.min(inc.now))
    } else {
        state.now_t.max(inc.now)
    };
    let mut right: Vec<Span> = Vec::new();
    if let Some(p) = state.pending() {
        let text = match state.veto_left(p) {
            Some(left) => format!(" ⚑ {} runs in {:.0}s (a) ", p.action.id, left.ceil()),
            None => format!(" ⚑ approval pending: {} (a) ", p.action.id),
        };
        right.push(Span::styled(text, th.get(Role::ApprovalKey)));
        right.push(Span::raw(" "));
    } else if !inc.is_finished()
        && inc
            .actions
            .iter()
            .any(|a| a.status == ActionStatus::AwaitingApproval)
    {
        right.push(Span::styled(
            " ⚑ approval pending ",
            th.get(Role::ApprovalKey),
        ));
    }
    if state.is_replay() {
        right.push(Span::styled(" REPLAY ", th.get(Role::Statusbar)));
        right.push(Span::raw(" "));
    } else if state.read_only || inc.read_only {
        right.push(Span::styled(" READ-ONLY ", th.get(Role::Warn)));
        right.push(Span::raw(" "));
    }
    if let Some(o) = inc.outcome {
        right.push(Span::styled(format!("{} ", o.name()), th.get(Role::Ok)));
    }
    right.push(Span::styled(
        format!("⏱ {} ", fmt_t(elapsed)),
        th.get(Role::Dim),
    ));
    let right_w: usize = right.iter().map(|s| s.width()).sum();

    let mut left = vec![
        Span::styled(format!(" {} ", sev.to_uppercase()), th.get(sev_role)),
        Span::raw(" "),
        Span::styled(title, th.get(Role::Title)),
    ];
    let avail = usize::from(area.width).saturating_sub(right_w + 1);
    truncate_spans(&mut left, avail);
    let left_w: usize = left.iter().map(|s| s.width()).sum();
    let pad = usize::from(area.width).saturating_sub(left_w + right_w);
    let mut line1 = left;
    line1.push(Span::raw(" ".repeat(pad)));
    line1.extend(right);
    let pipeline = pipeline_line(state, usize::from(area.width));
    let lines = if area.height >= 2 {
        vec![Line::from(line1), pipeline]
    } else {
        vec![Line::from(line1)]
    };
    frame.render_widget(Paragraph::new(lines).style(th.get(Role::Text)), area);
}

fn truncate_spans(spans: &mut Vec<Span<'_>>, max: usize) {
    let mut used = 0;
    let mut out = Vec::new();
    for s in spans.drain(..) {
        let w = s.width();
        if used + w <= max {
            used += w;
            out.push(s);
        } else {
            let keep: String = s
                .content
                .chars()
                .take(max.saturating_sub(used + 1))
                .collect();
            if !keep.is_empty() {
                out.push(Span::styled(format!("{keep}…"), s.style));
            }
            break;
        }
    }
    *spans = out;
}

/// `triage ✓ › gather ● › diagnose › …`, shortened to initials when the screen is narrow.
fn pipeline_line(state: &AppState, width: usize) -> Line<'static> {
    let th = &state.theme;
    let inc = state.incident();
    let full: usize = Stage::ALL.iter().map(|s| s.name().len() + 5).sum();
    let short = full + 1 > width;
    let mut spans = vec![Span::raw(" ")];
    for (i, stage) in Stage::ALL.iter().enumerate() {
        let st = &inc.stages[stage.index()];
        let current = inc.current_stage == Some(*stage);
        // A stage that finished with a failure (a verification that did not pass, an action
        // that failed) is done, but not well: it shows a red cross, never a green tick.
        let failed = match stage {
            Stage::Verify => inc.verifications.iter().any(|v| !v.passed),
            Stage::Execute => inc
                .actions
                .iter()
                .any(|a| a.status == crate::model::ActionStatus::Failed),
            _ => false,
        };
        let (mark, role) = match st.status {
            StageStatus::Done if failed => ("✗", Role::Error),
            StageStatus::Done => ("✓", Role::Ok),
            StageStatus::Running if current => ("●", Role::Running),
            StageStatus::Running => ("●", Role::Running),
            StageStatus::Pending => ("", Role::Pending),
        };
        let name = if short {
            stage.name()[..1].to_uppercase()
        } else {
            stage.name().to_string()
        };
        let mut style = th.get(role);
        if current {
            style = style.add_modifier(
                ratatui::style::Modifier::BOLD | ratatui::style::Modifier::UNDERLINED,
            );
        }
        let text = if mark.is_empty() {
            name
        } else {
            format!("{name} {mark}")
        };
        spans.push(Span::styled(text, style));
        if i + 1 < Stage::ALL.len() {
            spans.push(Span::styled(
                if short { " " } else { " › " },
                th.get(Role::Dim),
            ));
        }
    }
    if let Some((cat, _, conf)) = &inc.diagnosis {
        let text = format!("   {cat} {:.0}%", conf * 100.0);
        if spans.iter().map(|s| s.width()).sum::<usize>() + text.len() < width {
            spans.push(Span::styled(text, th.get(Role::Warn)));
        }
    }
    Line::from(spans)
}
