//! The details of a timeline row without an evidence body (tool calls, findings, actions,
//! decisions, stages) and the diagnosis summary pane.

use super::app::{AppState, Pane};
use super::scroll::Scroll;
use super::search::Filter;
use super::theme::Role;
use super::{fmt_t, highlight, pane_block, sanitize::sanitize, text};
use crate::model::TimelineKind;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

fn kv(state: &AppState, k: &str, v: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<11}"), state.theme.get(Role::Dim)),
        Span::raw(sanitize(v).into_owned()),
    ])
}

/// Details for rows without an evidence body: tool calls, findings, actions, decisions, ...
pub fn detail_lines(state: &AppState) -> Vec<Line<'static>> {
    let th = &state.theme;
    let inc = state.incident();
    let Some(item) = state.selected_item() else {
        return vec![Line::from(Span::styled(
            "select a timeline row (j/k) to see its evidence",
            th.get(Role::Dim),
        ))];
    };
    let mut out = Vec::new();
    match &item.kind {
        TimelineKind::Tool { call_id } => {
            if let Some(c) = state.index.tool(inc, call_id) {
                out.push(kv(state, "tool", &c.tool));
                if let Some(s) = &c.specialist {
                    out.push(kv(state, "specialist", s));
                }
                for (k, v) in &c.params {
                    out.push(kv(state, "param", &format!("{k} = {v}")));
                }
                out.push(kv(state, "started", &fmt_t(c.started_at)));
                match &c.outcome {
                    None => out.push(kv(state, "status", "running")),
                    Some(Ok(s)) => {
                        out.push(kv(
                            state,
                            "status",
                            &format!("ok in {} ms", c.duration_ms.unwrap_or(0)),
                        ));
                        out.push(kv(state, "summary", s));
                    }
                    Some(Err(e)) => {
                        out.push(Line::from(Span::styled(
                            format!("failed after {} ms", c.duration_ms.unwrap_or(0)),
                            th.get(Role::Error),
                        )));
                        out.push(Line::raw(sanitize(e).into_owned()));
                    }
                }
            }
        }
        TimelineKind::Finding { index } => {
            if let Some(f) = inc.findings.get(*index) {
                out.push(kv(state, "finding", &f.summary));
                out.push(kv(state, "analyzer", &f.analyzer));
                out.push(kv(state, "category", f.category.name()));
                out.push(kv(
                    state,
                    "confidence",
                    &format!("{:.0}%", f.confidence * 100.0),
                ));
                if !f.detail.is_empty() {
                    out.push(Line::raw(""));
                    out.extend(
                        f.detail
                            .lines()
                            .map(|l| Line::raw(sanitize(l).into_owned())),
                    );
                }
                evidence_refs(state, &f.evidence, &mut out);
            }
        }
        TimelineKind::Hypotheses | TimelineKind::Diagnosis => out.extend(summary_lines(state)),
        TimelineKind::Action { action_id } | TimelineKind::Decision { action_id } => {
            if let Some(a) = inc.action(action_id) {
                out.push(Line::from(vec![
                    Span::styled(format!("{} ", a.action.kind), th.get(Role::Title)),
                    Span::styled(
                        format!("[{} risk]", a.action.risk),
                        th.get(Role::for_risk(a.action.risk)),
                    ),
                ]));
                out.push(kv(state, "target", &a.action.target));
                if !a.action.operation.is_empty() {
                    out.push(kv(state, "operation", &a.action.operation));
                }
                out.push(kv(state, "status", a.status.name()));
                out.push(kv(state, "rationale", &a.action.rationale));
                if !a.action.blast_radius.is_empty() {
                    out.push(kv(state, "blast", &a.action.blast_radius));
                }
                for d in &a.decisions {
                    let what = if d.approved {
                        "approved".to_string()
                    } else {
                        format!("denied: {}", d.reason)
                    };
                    out.push(kv(
                        state,
                        "decision",
                        &format!(
                            "{} by {}{} at {}",
                            what,
                            d.by,
                            crate::model::via_note(&d.via),
                            d.at.format("%H:%M:%S")
                        ),
                    ));
                }
                match &a.result {
                    Some(Ok(r)) => out.push(kv(state, "result", r)),
                    Some(Err(e)) => out.push(Line::from(Span::styled(
                        format!("not run / failed: {}", sanitize(e)),
                        th.get(Role::Error),
                    ))),
                    None => {}
                }
                if let Some(v) = &a.verification {
                    out.push(kv(
                        state,
                        "verified",
                        &format!("{} {}", if v.passed { "✔" } else { "✗" }, v.summary),
                    ));
                }
                evidence_refs(state, &a.action.evidence, &mut out);
            }
        }
        TimelineKind::Verification { action_id } => {
            if let Some(v) = inc
                .verifications
                .iter()
                .rev()
                .find(|v| &v.action_id == action_id)
            {
                let role = if v.passed { Role::Ok } else { Role::Error };
                out.push(Line::from(Span::styled(
                    if v.passed {
                        "verification passed"
                    } else {
                        "verification failed"
                    },
                    th.get(role),
                )));
                out.push(Line::raw(sanitize(&v.summary).into_owned()));
                let refs: Vec<String> = v.before.iter().chain(v.after.iter()).cloned().collect();
                evidence_refs(state, &refs, &mut out);
            }
        }
        TimelineKind::Stage { stage } => {
            let st = &inc.stages[stage.index()];
            out.push(kv(state, "stage", stage.name()));
            out.push(kv(
                state,
                "status",
                &format!("{:?}", st.status).to_lowercase(),
            ));
            if !st.summary.is_empty() {
                out.push(kv(state, "summary", &st.summary));
            }
            if *stage == crate::model::Stage::Triage {
                if let Some(t) = &inc.triage {
                    out.push(kv(state, "triage", t));
                }
                if let Some(r) = &inc.runbook {
                    out.push(kv(state, "runbook", r));
                }
                if !inc.specialists.is_empty() {
                    out.push(kv(state, "specialists", &inc.specialists.join(", ")));
                }
            }
        }
        TimelineKind::Report => {
            if let Some(md) = &inc.report {
                out.extend(md.lines().map(|l| {
                    highlight::line("markdown", &sanitize(l), th.colour, th.get(Role::Text))
                }));
            }
        }
        TimelineKind::Session => {
            if let Some(a) = &inc.alert {
                out.push(kv(state, "alert", &a.title()));
                for (k, v) in &a.labels {
                    out.push(kv(state, "label", &format!("{k}={v}")));
                }
                for (k, v) in &a.annotations {
                    out.push(kv(state, "annotation", &format!("{k}: {v}")));
                }
            }
            if let Some(p) = &inc.problem {
                out.push(kv(state, "problem", p));
            }
            out.push(kv(state, "operator", &inc.operator));
            out.push(kv(state, "session", &inc.id));
        }
        TimelineKind::Evidence { evidence_id } => {
            out.push(kv(state, "evidence", &format!("{evidence_id} (not found)")))
        }
        TimelineKind::Chat | TimelineKind::Warning => {
            out.push(Line::raw(sanitize(&item.text).into_owned()))
        }
        TimelineKind::Memory => {
            out.push(Line::raw(sanitize(&item.text).into_owned()));
            for s in &inc.recalled {
                out.push(Line::raw(format!(
                    "  {}",
                    sanitize(&crate::model::recalled_line(s))
                )));
            }
        }
    }
    out
}

fn evidence_refs(state: &AppState, ids: &[String], out: &mut Vec<Line<'static>>) {
    for id in ids {
        let title = state
            .index
            .evidence(state.incident(), id)
            .map(|e| format!("{} [{}]", e.title, e.kind))
            .unwrap_or_default();
        out.push(kv(state, "evidence", &format!("{id} {title}")));
    }
}

/// Diagnosis, hypotheses, what was ruled out, and the actions with their status.
pub fn summary_lines(state: &AppState) -> Vec<Line<'static>> {
    let th = &state.theme;
    let inc = state.incident();
    let mut out = Vec::new();
    match &inc.diagnosis {
        Some((cat, root, conf)) => {
            out.push(Line::from(vec![
                Span::styled("diagnosis ", th.get(Role::Title)),
                Span::styled(format!("[{cat}] {:.0}%", conf * 100.0), th.get(Role::Warn)),
            ]));
            out.push(Line::raw(sanitize(root).into_owned()));
        }
        None => out.push(Line::from(Span::styled(
            "no diagnosis yet",
            th.get(Role::Dim),
        ))),
    }
    if !inc.hypotheses.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::from(Span::styled("hypotheses", th.get(Role::Title))));
        for (i, h) in inc.hypotheses.iter().enumerate() {
            out.push(Line::raw(format!(
                "{}. [{}] {:.0}% {}",
                i + 1,
                h.category,
                h.confidence * 100.0,
                sanitize(&h.statement)
            )));
        }
    }
    if !inc.ruled_out.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::from(Span::styled("ruled out", th.get(Role::Title))));
        for r in &inc.ruled_out {
            out.push(Line::raw(format!(
                "✗ {} — {}",
                sanitize(&r.statement),
                sanitize(&r.reason)
            )));
        }
    }
    if !inc.findings.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::from(Span::styled("findings", th.get(Role::Title))));
        for f in &inc.findings {
            out.push(Line::raw(format!(
                "● {} ({:.0}%)",
                sanitize(&f.summary),
                f.confidence * 100.0
            )));
        }
    }
    if !inc.actions.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::from(Span::styled("actions", th.get(Role::Title))));
        for a in &inc.actions {
            out.push(Line::from(vec![
                Span::styled(
                    format!("{:<8} ", a.action.risk.name()),
                    th.get(Role::for_risk(a.action.risk)),
                ),
                Span::raw(format!(
                    "{} {} — {}",
                    a.action.kind,
                    sanitize(&a.action.target),
                    a.status.name()
                )),
            ]));
        }
    }
    out
}

pub fn render_summary(state: &AppState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let block = pane_block(th, " 4 summary ", true);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines = summary_lines(state);
    render_rows(
        frame,
        inner,
        lines,
        &state.summary,
        state.summary.wrap,
        th.get(Role::Text),
        state.search_of(Pane::Summary).map(|f| (f, th)),
    );
}

/// Draw small content through a [`Scroll`]: wrapped to the width when `wrap`, with the
/// sizes and the rows' text handed back to the scroll. A search of the pane marks its matches
/// (the current one in the selection colour); a filter keeps only the matching rows.
pub fn render_rows(
    frame: &mut Frame,
    inner: Rect,
    lines: Vec<Line<'static>>,
    scroll: &Scroll,
    wrap: bool,
    style: ratatui::style::Style,
    search: Option<(&Filter, &super::theme::Theme)>,
) {
    render_rows_keyed(frame, inner, None, || lines, scroll, wrap, style, search);
}

/// [`render_rows`] for content that grows over a session (chat): `key` names the state of the
/// source, and while it, the width, wrap and pan are those of the last frame, the rows built
/// then are drawn again, so a frame costs the visible rows, not the whole conversation.
#[allow(clippy::too_many_arguments)]
pub fn render_rows_keyed(
    frame: &mut Frame,
    inner: Rect,
    key: Option<u64>,
    lines: impl FnOnce() -> Vec<Line<'static>>,
    scroll: &Scroll,
    wrap: bool,
    style: ratatui::style::Style,
    search: Option<(&Filter, &super::theme::Theme)>,
) {
    let (h, w) = (usize::from(inner.height), usize::from(inner.width));
    if h == 0 || w == 0 {
        return;
    }
    let col = if wrap { 0 } else { scroll.col };
    let key = key.map(|k| (k, w, wrap, col));
    if let Some(k) = key
        && let Some(rows) = scroll.cached_rows(k)
    {
        let plain = scroll.text();
        draw_rows(frame, inner, &rows, &plain, scroll, style, search);
        return;
    }
    let rows: Vec<Line<'static>> = if wrap {
        lines().into_iter().flat_map(|l| text::wrap(l, w)).collect()
    } else {
        lines().into_iter().map(|l| cut_line(l, col, w)).collect()
    };
    let plain: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
    match key {
        Some(k) => {
            scroll.cache_rows(k, rows);
            scroll.report_text(plain);
            if let Some(rows) = scroll.cached_rows(k) {
                let plain = scroll.text();
                draw_rows(frame, inner, &rows, &plain, scroll, style, search);
            }
        }
        None => {
            draw_rows(frame, inner, &rows, &plain, scroll, style, search);
            scroll.report_text(plain);
        }
    }
}

/// The visible part of built rows: only the rows on screen are cloned and marked.
fn draw_rows(
    frame: &mut Frame,
    inner: Rect,
    rows: &[Line<'static>],
    plain: &[String],
    scroll: &Scroll,
    style: ratatui::style::Style,
    search: Option<(&Filter, &super::theme::Theme)>,
) {
    let (h, w) = (usize::from(inner.height), usize::from(inner.width));
    // A filter keeps only the matching rows; without one the rows are used in place.
    let kept: Option<Vec<usize>> = match search {
        Some((f, _)) if f.hides() => Some(
            plain
                .iter()
                .enumerate()
                .filter(|(_, t)| f.matches(t))
                .map(|(i, _)| i)
                .collect(),
        ),
        _ => None,
    };
    let len = kept.as_ref().map_or(rows.len(), Vec::len);
    scroll.report(len, h, w);
    let top = scroll.top_for(len, h);
    let current = search.and_then(|(f, _)| f.current_row());
    let visible: Vec<Line> = (top..len.min(top + h))
        .map(|i| {
            let line = rows[kept.as_ref().map_or(i, |k| k[i])].clone();
            match search {
                Some((f, th)) => {
                    let marks = f.ranges(&line.to_string());
                    let role = if current == Some(i) {
                        Role::Selection
                    } else {
                        Role::Match
                    };
                    text::mark(line, &marks, th.get(role))
                }
                None => line,
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(visible).style(style), inner);
}

/// Columns `col..col + w` of a styled line.
fn cut_line(line: Line<'static>, col: usize, w: usize) -> Line<'static> {
    let mut rows = text::wrap(line, col.max(1) + w);
    let first = if rows.is_empty() {
        Line::default()
    } else {
        rows.swap_remove(0)
    };
    if col == 0 {
        return first;
    }
    let mut out = text::wrap(first, col);
    if out.len() > 1 {
        out.swap_remove(1)
    } else {
        Line::default()
    }
}
