//! The evidence panel: the selected timeline item's evidence (highlighted text, tables, charts)
//! or its details; and the diagnosis summary pane. Only visible lines are built.

use super::app::{AppState, Pane, contains_ci};
use super::theme::Role;
use super::{fmt_t, highlight, pane_block, sanitize::sanitize};
use crate::model::{Evidence, EvidenceBody, TimelineKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Row, Table, Wrap};

/// The evidence item the panel shows for the selected row, if the row has one.
pub fn displayed_evidence_id(state: &AppState) -> Option<String> {
    match &state.selected_item()?.kind {
        TimelineKind::Evidence { evidence_id } => Some(evidence_id.clone()),
        TimelineKind::Tool { call_id } => state
            .index
            .tool(state.incident(), call_id)?
            .evidence
            .first()
            .cloned(),
        _ => None,
    }
}

fn displayed(state: &AppState) -> Option<&Evidence> {
    let id = displayed_evidence_id(state)?;
    state.index.evidence(state.incident(), &id)
}

/// Scrollable lines in the panel, for the reducer's bounds.
pub fn line_count(state: &AppState) -> usize {
    match displayed(state) {
        Some(ev) => match &ev.body {
            EvidenceBody::Text { text, .. } => match state.index.lines.get(&ev.id) {
                Some(li) => li.len(),
                None => text.lines().count(),
            },
            EvidenceBody::Table { rows, .. } => rows.len(),
            EvidenceBody::Json { value } => serde_json::to_string_pretty(value)
                .map(|s| s.lines().count())
                .unwrap_or(1),
            EvidenceBody::TimeSeries { .. } => 0,
        },
        None => detail_lines(state).len(),
    }
}

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    if state.focus == Pane::Summary {
        render_summary(state, frame, area);
        return;
    }
    let th = &state.theme;
    let focused = state.focus == Pane::Evidence;
    let h = usize::from(area.height - 2);
    let w = usize::from(area.width - 2);
    let Some(ev) = displayed(state) else {
        let lines = detail_lines(state);
        let top = state.evidence_scroll.min(lines.len().saturating_sub(h));
        let block = pane_block(th, " 2 details ", focused);
        let p = Paragraph::new(lines.into_iter().skip(top).take(h).collect::<Vec<_>>())
            .block(block)
            .style(th.get(Role::Text))
            .wrap(Wrap { trim: false });
        frame.render_widget(p, area);
        return;
    };
    let title_text = sanitize(&ev.title);
    match &ev.body {
        EvidenceBody::Text { language, text } => {
            let li = state.index.lines.get(&ev.id);
            // Without an index (never built for this item yet) fall back to a full scan.
            let fallback: Vec<&str> = if li.is_none() {
                text.lines().collect()
            } else {
                Vec::new()
            };
            let n = li.map(|l| l.len()).unwrap_or(fallback.len());
            let get = |i: usize| match li {
                Some(l) => l.line(text, i),
                None => fallback.get(i).copied().unwrap_or(""),
            };
            let top = state.evidence_scroll.min(n.saturating_sub(h));
            let query = state
                .filter
                .as_ref()
                .filter(|f| f.pane == Pane::Evidence)
                .map(|f| f.query.to_lowercase());
            let mut lines = Vec::with_capacity(h);
            for i in top..(top + h).min(n) {
                let raw = get(i);
                // Cut before sanitizing and highlighting: a 1 MB line costs as much as a short one.
                let cut = match raw.char_indices().nth(w * 2) {
                    Some((b, _)) => &raw[..b],
                    None => raw,
                };
                let clean = sanitize(cut);
                let mut line = highlight::line(language, &clean, th.colour, th.get(Role::Text));
                if let Some(q) = &query
                    && contains_ci(&clean, q)
                {
                    line = line.patch_style(th.get(Role::Match));
                }
                lines.push(line);
            }
            let title = format!(
                " 2 {title_text} [{}] · {} · {}-{}/{} ",
                ev.kind,
                ev.source,
                if n == 0 { 0 } else { top + 1 },
                (top + h).min(n),
                n
            );
            frame.render_widget(
                Paragraph::new(lines)
                    .block(pane_block(th, &title, focused))
                    .style(th.get(Role::Text)),
                area,
            );
        }
        EvidenceBody::Json { value } => {
            let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
            let all: Vec<&str> = pretty.lines().collect();
            let top = state.evidence_scroll.min(all.len().saturating_sub(h));
            let lines: Vec<Line> = all
                .iter()
                .skip(top)
                .take(h)
                .map(|l| highlight::line("json", &sanitize(l), th.colour, th.get(Role::Text)))
                .collect();
            let title = format!(" 2 {title_text} [{}] · {} ", ev.kind, ev.source);
            frame.render_widget(
                Paragraph::new(lines)
                    .block(pane_block(th, &title, focused))
                    .style(th.get(Role::Text)),
                area,
            );
        }
        EvidenceBody::Table { columns, rows } => {
            let body_h = h.saturating_sub(1);
            let top = state.evidence_scroll.min(rows.len().saturating_sub(body_h));
            let visible = &rows[top.min(rows.len())..(top + body_h).min(rows.len())];
            let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
            for r in visible {
                for (i, c) in r.iter().enumerate() {
                    if let Some(wd) = widths.get_mut(i) {
                        *wd = (*wd).max(c.chars().count()).min(48);
                    }
                }
            }
            let header = Row::new(columns.iter().map(|c| sanitize(c).into_owned()))
                .style(th.get(Role::Title));
            let body: Vec<Row> = visible
                .iter()
                .map(|r| {
                    let style = row_style(state, r);
                    Row::new(r.iter().map(|c| sanitize(c).into_owned())).style(style)
                })
                .collect();
            let constraints: Vec<Constraint> = widths
                .iter()
                .map(|w| Constraint::Length(*w as u16))
                .collect();
            let title = format!(" 2 {title_text} [{}] · {} rows ", ev.kind, rows.len());
            let table = Table::new(body, constraints)
                .header(header)
                .column_spacing(2)
                .block(pane_block(th, &title, focused))
                .style(th.get(Role::Text));
            frame.render_widget(table, area);
        }
        EvidenceBody::TimeSeries {
            series,
            threshold,
            unit,
            markers,
        } => {
            render_chart(
                state,
                frame,
                area,
                &title_text,
                ev,
                series,
                *threshold,
                unit.as_deref(),
                markers,
                focused,
            );
        }
    }
}

/// Rows that mention a bad state stand out (CrashLoopBackOff, Warning events, unavailable replicas).
fn row_style(state: &AppState, row: &[String]) -> Style {
    let th = &state.theme;
    const BAD: [&str; 8] = [
        "CrashLoopBackOff",
        "OOMKilled",
        "Error",
        "Failed",
        "Warning",
        "ImagePullBackOff",
        "NotReady",
        "Evicted",
    ];
    if row.iter().any(|c| BAD.iter().any(|b| c.contains(b))) {
        th.get(Role::Warn)
    } else {
        th.get(Role::Text)
    }
}

#[allow(clippy::too_many_arguments)]
fn render_chart(
    state: &AppState,
    frame: &mut Frame,
    area: Rect,
    title_text: &str,
    ev: &Evidence,
    series: &[crate::model::Series],
    threshold: Option<f64>,
    unit: Option<&str>,
    markers: &[crate::model::Marker],
    focused: bool,
) {
    let th = &state.theme;
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 > x1 {
        let p = Paragraph::new("no data points").block(pane_block(
            th,
            &format!(" 2 {title_text} "),
            focused,
        ));
        frame.render_widget(p, area);
        return;
    }
    if let Some(t) = threshold {
        y0 = y0.min(t);
        y1 = y1.max(t);
    }
    y0 = y0.min(0.0);
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = y1 * 1.05;
    let mut owned: Vec<ChartLine> = Vec::new();
    let palette = [
        Role::ChartSeries,
        Role::Ok,
        Role::Warn,
        Role::Title,
        Role::Running,
        Role::Dim,
    ];
    for (i, s) in series.iter().take(6).enumerate() {
        let name = if s.labels.is_empty() {
            s.name.clone()
        } else {
            s.labels
                .iter()
                .filter(|(k, _)| *k != "__name__")
                .map(|(k, v)| format!("{k}={v}"))
                .take(2)
                .collect::<Vec<_>>()
                .join(",")
        };
        owned.push((
            sanitize(&name).into_owned(),
            s.points.clone(),
            th.get(palette[i % palette.len()]),
        ));
    }
    if let Some(t) = threshold {
        owned.push((
            format!("threshold {t}"),
            vec![(x0, t), (x1, t)],
            th.get(Role::ChartThreshold),
        ));
    }
    for m in markers.iter().filter(|m| m.at >= x0 && m.at <= x1) {
        owned.push((
            sanitize(&m.label).into_owned(),
            vec![(m.at, y0), (m.at, y1)],
            th.get(Role::ChartMarker),
        ));
    }
    let datasets: Vec<Dataset> = owned
        .iter()
        .map(|(name, data, style)| {
            Dataset::default()
                .name(name.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(*style)
                .data(data)
        })
        .collect();
    let fmt_x = |x: f64| {
        chrono::DateTime::from_timestamp(x as i64, 0)
            .map(|d| d.format("%H:%M").to_string())
            .unwrap_or_default()
    };
    let u = unit.unwrap_or("");
    let title = format!(" 2 {title_text} [{}] ", ev.kind);
    let chart = Chart::new(datasets)
        .block(pane_block(th, &title, focused))
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels(vec![Span::raw(fmt_x(x0)), Span::raw(fmt_x(x1))])
                .style(th.get(Role::Dim)),
        )
        .y_axis(
            Axis::default()
                .bounds([y0, y1])
                .labels(vec![
                    Span::raw(format!("{}{u}", short_num(y0))),
                    Span::raw(format!("{}{u}", short_num(y1))),
                ])
                .style(th.get(Role::Dim)),
        )
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)));
    frame.render_widget(chart, area);
}

/// One drawn line of a chart: legend name, points, style.
type ChartLine = (String, Vec<(f64, f64)>, Style);

fn short_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

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
                        &format!("{} by {} at {}", what, d.by, d.at.format("%H:%M:%S")),
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

fn render_summary(state: &AppState, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let lines = summary_lines(state);
    let h = usize::from(area.height.saturating_sub(2));
    let top = state.summary_scroll.min(lines.len().saturating_sub(h));
    let p = Paragraph::new(lines.into_iter().skip(top).take(h).collect::<Vec<_>>())
        .block(pane_block(th, " 4 summary ", true))
        .style(th.get(Role::Text))
        .wrap(Wrap { trim: false });
    frame.render_widget(p, area);
}
