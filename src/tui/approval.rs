//! The approval modal: action, target, exact operation, risk, rationale, evidence, blast radius,
//! and the keys; high risk asks for a second key, critical needs a second operator.

use super::app::{AppState, ApprovalStage, ApprovalUi};
use super::theme::Role;
use super::{centered, sanitize::sanitize};
use crate::model::Risk;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

pub fn render(state: &AppState, ui: &ApprovalUi, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let Some(a) = state.incident().action(&ui.action_id) else {
        return;
    };
    let act = &a.action;
    let width = area.width.saturating_sub(4).min(96);
    if width < 10 || area.height < 5 {
        return;
    }
    let key = th.get(Role::ApprovalKey);
    let dim = th.get(Role::Dim);
    let label = |k: &str| Span::styled(format!("{k:<10} "), dim);
    let mut lines: Vec<Line> = Vec::new();
    lines.push(Line::from(vec![
        label("action"),
        Span::styled(sanitize(&act.kind).into_owned(), th.get(Role::Title)),
    ]));
    lines.push(Line::from(vec![
        label("target"),
        Span::raw(sanitize(&act.target).into_owned()),
    ]));
    // The cluster the action runs against has its own line: with several clusters, approving
    // the right change in the wrong cluster is the mistake to rule out.
    if let Some(cluster) = act.params.get("cluster").and_then(|c| c.as_str()) {
        lines.push(Line::from(vec![
            label("cluster"),
            Span::styled(sanitize(cluster).into_owned(), th.get(Role::Title)),
        ]));
    }
    let op = if act.operation.is_empty() {
        "(not stated)".to_string()
    } else {
        sanitize(&act.operation).into_owned()
    };
    lines.push(Line::from(vec![
        label("operation"),
        Span::styled(
            op,
            th.get(Role::Text)
                .add_modifier(ratatui::style::Modifier::BOLD),
        ),
    ]));
    let params = ui.params.as_ref().unwrap_or(&act.params);
    if !params.is_empty() {
        let p = serde_json::to_string(params).unwrap_or_default();
        let mut spans = vec![label("params"), Span::raw(sanitize(&p).into_owned())];
        if ui.params.is_some() {
            spans.push(Span::styled(" (edited)", th.get(Role::Warn)));
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::from(vec![
        label("risk"),
        Span::styled(
            format!(" {} ", act.risk.name().to_uppercase()),
            th.get(Role::for_risk(act.risk)),
        ),
    ]));
    // What the risk means for this operator comes right under it, so a short terminal never
    // cuts it off (the `sitrep approve …` line a second operator needs, the countdown).
    match act.risk {
        Risk::Medium => {
            let text = match state.veto_left(a) {
                Some(left) => format!(
                    "runs automatically in {:.0}s unless you deny it (d); any key pauses it",
                    left.ceil()
                ),
                None if a.veto_paused => {
                    "countdown paused: runs only if you approve it (a); d denies".to_string()
                }
                None => "medium risk: runs after the veto countdown unless denied".to_string(),
            };
            lines.push(Line::from(Span::styled(text, th.get(Role::RiskMedium))));
        }
        Risk::Critical => {
            let session = state
                .session_id
                .clone()
                .unwrap_or_else(|| state.incident().id.clone());
            let have = a.approvals();
            let need = usize::from(a.approvals_needed.max(2));
            lines.push(Line::from(Span::styled(
                format!("critical: needs {need} distinct operators ({have} so far). A second operator must run:"),
                th.get(Role::RiskCritical),
            )));
            lines.push(Line::from(Span::styled(
                format!("  sitrep approve {session} {}", act.id),
                th.get(Role::Title),
            )));
        }
        _ => {}
    }
    lines.push(Line::from(vec![
        label("rationale"),
        Span::raw(sanitize(&act.rationale).into_owned()),
    ]));
    if !act.evidence.is_empty() {
        let refs: Vec<String> = act
            .evidence
            .iter()
            .map(|id| {
                state
                    .index
                    .evidence(state.incident(), id)
                    .map(|e| format!("{} [{}]", sanitize(&e.title), e.kind))
                    .unwrap_or_else(|| id.clone())
            })
            .collect();
        // The first few are enough to judge; the full list is on the timeline.
        let mut shown = refs.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
        if refs.len() > 3 {
            shown.push_str(&format!(" (+{} more)", refs.len() - 3));
        }
        lines.push(Line::from(vec![label("evidence"), Span::raw(shown)]));
    }
    let blast = if act.blast_radius.is_empty() {
        "(not stated)".to_string()
    } else {
        sanitize(&act.blast_radius).into_owned()
    };
    lines.push(Line::from(vec![label("blast"), Span::raw(blast)]));
    lines.push(Line::raw(""));
    if state.read_only || state.is_replay() {
        let why = if state.is_replay() {
            "replay: read-only, decisions cannot be made here"
        } else {
            "read-only session: approving is disabled"
        };
        lines.push(Line::from(Span::styled(why, th.get(Role::Warn))));
    }
    let mut input_area: Option<(Rect, &ratatui_textarea::TextArea)> = None;
    let hint_line: Line = match &ui.stage {
        ApprovalStage::Review => Line::from(vec![
            Span::styled(" a ", key),
            Span::raw(" approve  "),
            Span::styled(" d ", key),
            Span::raw(" deny  "),
            Span::styled(" e ", key),
            Span::raw(" edit params  "),
            Span::styled(" esc ", key),
            Span::raw(" look around   "),
            Span::styled("enter does not approve", dim),
        ]),
        ApprovalStage::Confirm(typed) => {
            lines.push(Line::from(vec![
                Span::styled(
                    format!(
                        "type {} to approve: ",
                        sanitize(super::app::target_name(&act.target))
                    ),
                    th.get(Role::Title),
                ),
                Span::styled(format!("{}▏", sanitize(typed)), th.get(Role::Text)),
            ]));
            Line::from(vec![
                Span::styled(
                    format!("{} RISK: ", act.risk.name().to_uppercase()),
                    th.get(Role::for_risk(act.risk)),
                ),
                Span::raw("type the name, then "),
                Span::styled(" enter ", key),
                Span::raw(", or "),
                Span::styled(
                    format!(" {} ", state.keymap.label(super::keymap::Action::Confirm)),
                    key,
                ),
                Span::raw(" to confirm the approval; esc cancels"),
            ])
        }
        ApprovalStage::Deny(ta) => {
            lines.push(Line::from(Span::styled(
                "reason for denying:",
                th.get(Role::Title),
            )));
            input_area = Some((Rect::default(), ta));
            Line::from(vec![
                Span::styled(" enter ", key),
                Span::raw(" send denial  "),
                Span::styled(" esc ", key),
                Span::raw(" back"),
            ])
        }
        ApprovalStage::Edit(ta, err) => {
            lines.push(Line::from(Span::styled(
                "parameters (JSON):",
                th.get(Role::Title),
            )));
            if let Some(e) = err {
                lines.push(Line::from(Span::styled(
                    sanitize(e).into_owned(),
                    th.get(Role::Error),
                )));
            }
            input_area = Some((Rect::default(), ta));
            Line::from(vec![
                Span::styled(" ctrl-s ", key),
                Span::raw(" save  "),
                Span::styled(" esc ", key),
                Span::raw(" discard"),
            ])
        }
    };
    let input_h: u16 = match &ui.stage {
        ApprovalStage::Deny(_) => 1,
        ApprovalStage::Edit(ta, _) => (ta.lines().len() as u16 + 1).clamp(2, 8),
        _ => 0,
    };
    // As tall as the wrapped text needs (plus input and key line), never taller than the screen.
    let text_w = usize::from(width.saturating_sub(4)).max(1);
    let wrapped: usize = lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(text_w))
        .sum();
    let want = (wrapped as u16).saturating_add(input_h + 4);
    let rect = centered(area, width, want.min(area.height.saturating_sub(2)).max(5));
    frame.render_widget(Clear, rect);
    let inner = Rect {
        x: rect.x + 2,
        y: rect.y + 1,
        width: rect.width.saturating_sub(4),
        height: rect.height.saturating_sub(2),
    };
    let title = Line::from(vec![
        Span::styled(" APPROVAL REQUIRED · ", th.get(Role::ApprovalBorder)),
        Span::styled(
            format!("{} RISK ", act.risk.name().to_uppercase()),
            th.get(Role::for_risk(act.risk)),
        ),
        Span::styled(
            format!("· {} · v{} ", act.id, crate::model::short_digest(&a.digest)),
            th.get(Role::ApprovalBorder),
        ),
    ]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Double)
        .border_style(th.get(Role::ApprovalBorder))
        .title(title)
        .style(th.get(Role::Text));
    frame.render_widget(block, rect);
    let text_h = inner.height.saturating_sub(input_h + 1);
    let text_area = Rect {
        height: text_h,
        ..inner
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text_area);
    if let Some((_, ta)) = input_area {
        let r = Rect {
            y: inner.y + text_h,
            height: input_h.min(inner.height.saturating_sub(text_h)),
            ..inner
        };
        frame.render_widget(Paragraph::new("").style(Style::default()), r);
        frame.render_widget(ta, r);
    }
    if inner.height > 0 {
        let hr = Rect {
            y: inner.y + inner.height - 1,
            height: 1,
            ..inner
        };
        frame.render_widget(Paragraph::new(hint_line), hr);
    }
}

/// The credential modal: which integration wants which reference, and the two keys.
pub fn render_credential(state: &AppState, reference: &str, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let width = area.width.saturating_sub(4).min(80);
    if width < 10 || area.height < 7 {
        return;
    }
    let integration = state
        .incident()
        .credentials
        .iter()
        .find(|c| c.reference == reference)
        .map(|c| c.integration.clone())
        .unwrap_or_default();
    let key = th.get(Role::ApprovalKey);
    let dim = th.get(Role::Dim);
    let lines = vec![
        Line::from(vec![
            Span::styled("integration ", dim),
            Span::styled(sanitize(&integration).into_owned(), th.get(Role::Title)),
        ]),
        Line::from(vec![
            Span::styled("credential  ", dim),
            Span::raw(sanitize(reference).into_owned()),
        ]),
        Line::from(Span::raw(
            "sitrep reads it now and keeps it in memory for this session only; the decision is recorded",
        )),
        Line::from(vec![
            Span::styled(
                format!(" {} ", state.keymap.label(super::keymap::Action::Approve)),
                key,
            ),
            Span::raw(" allow  "),
            Span::styled(
                format!(" {} ", state.keymap.label(super::keymap::Action::Deny)),
                key,
            ),
            Span::raw(" deny (the specialist's reads fail)  "),
            Span::styled(" esc ", key),
            Span::raw(" later"),
        ]),
    ];
    let rect = centered(area, width, 8);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Double)
        .border_style(th.get(Role::ApprovalBorder))
        .title(Span::styled(
            " CREDENTIAL REQUESTED ",
            th.get(Role::ApprovalBorder),
        ))
        .style(th.get(Role::Text));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
