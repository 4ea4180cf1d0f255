//! The evidence panel: the selected timeline item's evidence (text and logs, JSON, tables,
//! charts) or its details. Only the visible rows are built; long lines wrap or pan.

use super::app::{AppState, Pane};
use super::index::Doc;
use super::search::Filter;
use super::theme::Role;
use super::{chart, details, pane_block, sanitize::sanitize, text};
use crate::model::{Evidence, EvidenceBody};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table};

/// Longest a table column grows to before it is truncated with `…`.
const MAX_COL: usize = 60;

/// The search of this evidence item, when one is applied.
fn search_of<'a>(state: &'a AppState, ev: &Evidence) -> Option<&'a Filter> {
    state
        .filter
        .as_ref()
        .filter(|f| f.pane == Pane::Evidence && f.target.as_deref() == Some(ev.id.as_str()))
}

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    if state.focus == Pane::Summary {
        details::render_summary(state, frame, area);
        return;
    }
    let th = &state.theme;
    let focused = state.focus == Pane::Evidence;
    let Some(ev) = state.displayed_evidence() else {
        let block = pane_block(th, " 2 details ", focused);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        details::render_rows(
            frame,
            inner,
            details::detail_lines(state),
            &state.evidence,
            true,
            th.get(Role::Text),
            state.search_of(Pane::Evidence).map(|f| (f, th)),
        );
        return;
    };
    match &ev.body {
        EvidenceBody::Text { .. } | EvidenceBody::Json { .. } => {
            match state.index.doc(state.incident(), &ev.id) {
                Some(doc) => render_doc(state, frame, area, ev, &doc, focused),
                None => frame.render_widget(
                    Paragraph::new("opening…").block(pane_block(th, " 2 evidence ", focused)),
                    area,
                ),
            }
        }
        EvidenceBody::Table { columns, rows } => {
            render_table(state, frame, area, ev, columns, rows, focused)
        }
        EvidenceBody::TimeSeries {
            series,
            threshold,
            unit,
            markers,
        } => chart::render(
            state,
            frame,
            area,
            ev,
            series,
            chart::Overlays {
                threshold: *threshold,
                unit: unit.as_deref(),
                markers,
            },
            focused,
        ),
    }
}

fn render_doc(
    state: &AppState,
    frame: &mut Frame,
    area: Rect,
    ev: &Evidence,
    doc: &Doc,
    focused: bool,
) {
    let th = &state.theme;
    let h = usize::from(area.height - 2);
    let w = usize::from(area.width - 2);
    let search = search_of(state, ev);
    let hides = search.is_some_and(|f| f.hides());
    let n = match search {
        Some(f) if hides => f.rows.len(),
        _ => doc.len(),
    };
    let source = |i: usize| match search {
        Some(f) if hides => f.rows.get(i).copied().unwrap_or(usize::MAX),
        _ => i,
    };
    let scroll = &state.evidence;
    scroll.report(n, h, w);
    let top = scroll.top_for(n, h);
    let is_log = matches!(doc.language, "log" | "logs");
    let current = search.and_then(|f| f.current.and_then(|c| f.rows.get(c)).copied());
    let mut rows: Vec<Line> = Vec::with_capacity(h);
    let mut i = top;
    while rows.len() < h && i < n {
        let line_no = source(i);
        let raw = doc.line(line_no);
        let (hms, lvl, body) = if is_log {
            text::split_log(raw)
        } else {
            (None, None, raw)
        };
        let avail = w.saturating_sub(if hms.is_some() { text::TIME_COL } else { 0 });
        // Cut before sanitizing and highlighting: a 1 MB line costs as much as a short one.
        // Twice the room: sanitizing drops control sequences, so the cut is made again after.
        let (col, room) = if scroll.wrap {
            (0, w * h)
        } else {
            (scroll.col, avail)
        };
        let clean = sanitize(text::window(body, 0, col + room * 2));
        let clean = text::window(&clean, col, room).to_string();
        let mut line = if is_log {
            text::log_line(hms, lvl, &clean, th)
        } else {
            super::highlight::line(doc.language, &clean, th.colour, th.get(Role::Text))
        };
        if let Some(f) = search {
            let marks = f.ranges(&line.to_string());
            let style = if current == Some(line_no) {
                th.get(Role::Selection)
            } else {
                th.get(Role::Match)
            };
            line = text::mark(line, &marks, style);
        }
        if scroll.wrap {
            rows.extend(text::wrap(line, w).into_iter().take(h - rows.len()));
        } else {
            rows.push(line);
        }
        i += 1;
    }
    let mut title = format!(
        " 2 {} [{}] · {} · {}-{}/{} ",
        sanitize(&ev.title),
        ev.kind,
        ev.source,
        if n == 0 { 0 } else { top + 1 },
        i,
        n
    );
    if scroll.wrap {
        title.push_str("· wrap ");
    } else if scroll.col > 0 {
        title.push_str(&format!("· col {} ", scroll.col + 1));
    }
    if let Some(f) = search {
        let what = if hides { "&" } else { "/" };
        title.push_str(&format!("· {what}{} {} ", sanitize(&f.query), f.position()));
    }
    frame.render_widget(
        Paragraph::new(rows)
            .block(pane_block(th, &title, focused))
            .style(th.get(Role::Text)),
        area,
    );
}

/// Display order of table columns: names first, then states, then the rest as given.
fn priority(column: &str) -> u8 {
    match column.to_ascii_lowercase().as_str() {
        "name" | "pod" | "deployment" | "alertname" => 0,
        "status" | "state" | "phase" | "reason" | "severity" => 1,
        "ready" | "restarts" | "type" | "message" | "title" | "when" => 2,
        "node" | "object" | "id" | "age" | "last seen" => 3,
        _ => 4,
    }
}

/// Widths for the columns in `order`: every column gets what it needs while there is room;
/// the lowest-priority ones shrink (to a floor of 4) and then drop out.
fn fit(needs: &[usize], order: &[usize], avail: usize, gap: usize) -> Vec<(usize, usize)> {
    // While others follow, no column takes more than half the width: the name must not
    // crowd out the status.
    let cap = if order.len() > 1 {
        (avail / 2).max(12)
    } else {
        avail
    };
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut used = 0usize;
    for &c in order {
        let need = needs[c].clamp(1, cap);
        let sep = if out.is_empty() { 0 } else { gap };
        let left = avail.saturating_sub(used + sep);
        if left == 0 || left < 4.min(need) {
            break;
        }
        let wd = need.min(left);
        out.push((c, wd));
        used += sep + wd;
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn render_table(
    state: &AppState,
    frame: &mut Frame,
    area: Rect,
    ev: &Evidence,
    columns: &[String],
    rows: &[Vec<String>],
    focused: bool,
) {
    let th = &state.theme;
    let h = usize::from(area.height - 2);
    let w = usize::from(area.width - 2);
    let search = search_of(state, ev);
    let hides = search.is_some_and(|f| f.hides());
    let n = match search {
        Some(f) if hides => f.rows.len(),
        _ => rows.len(),
    };
    let body_h = h.saturating_sub(1);
    let scroll = &state.evidence;
    scroll.report(n, body_h, w);
    let top = scroll.top_for(n, body_h);
    let visible: Vec<(usize, &Vec<String>)> = (top..(top + body_h).min(n))
        .filter_map(|i| {
            let r = match search {
                Some(f) if hides => *f.rows.get(i)?,
                _ => i,
            };
            rows.get(r).map(|row| (r, row))
        })
        .collect();
    let mut needs: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for (_, r) in &visible {
        for (i, c) in r.iter().enumerate() {
            if let Some(wd) = needs.get_mut(i) {
                *wd = (*wd).max(c.chars().count()).min(MAX_COL);
            }
        }
    }
    let mut order: Vec<usize> = (0..columns.len()).collect();
    order.sort_by_key(|c| priority(&columns[*c]));
    // Panning skips columns after the first (which keeps the row's name on screen).
    let skip = (scroll.col / super::scroll::PAN_STEP).min(order.len().saturating_sub(1));
    if skip > 0 && order.len() > 1 {
        order.drain(1..=skip.min(order.len() - 1));
    }
    let gap = 2;
    let shown = fit(&needs, &order, w, gap);
    let cell = |s: &str, wd: usize| -> String {
        let clean = sanitize(s);
        if clean.chars().count() > wd {
            let mut t: String = clean.chars().take(wd.saturating_sub(1)).collect();
            t.push('…');
            t
        } else {
            clean.into_owned()
        }
    };
    let header =
        Row::new(shown.iter().map(|(c, wd)| cell(&columns[*c], *wd))).style(th.get(Role::Title));
    let current = search.and_then(|f| f.current.and_then(|c| f.rows.get(c)).copied());
    let body: Vec<Row> = visible
        .iter()
        .map(|(ri, r)| {
            let mut style = row_style(state, r);
            if let Some(f) = search
                && !hides
                && r.iter().any(|c| f.matches(c))
            {
                style = style.patch(th.get(if current == Some(*ri) {
                    Role::Selection
                } else {
                    Role::Match
                }));
            }
            Row::new(
                shown
                    .iter()
                    .map(|(c, wd)| cell(r.get(*c).map_or("", String::as_str), *wd)),
            )
            .style(style)
        })
        .collect();
    let constraints: Vec<Constraint> = shown
        .iter()
        .map(|(_, wd)| Constraint::Length(*wd as u16))
        .collect();
    let hidden = columns.len() - shown.len();
    let mut title = format!(" 2 {} [{}] · {n} rows ", sanitize(&ev.title), ev.kind);
    if hidden > 0 {
        title.push_str(&format!("· +{hidden} cols (h/l, z) "));
    }
    if let Some(f) = search {
        let what = if hides { "&" } else { "/" };
        title.push_str(&format!("· {what}{} {} ", sanitize(&f.query), f.position()));
    }
    let table = Table::new(body, constraints)
        .header(header)
        .column_spacing(gap as u16)
        .block(pane_block(th, &title, focused))
        .style(th.get(Role::Text));
    frame.render_widget(table, area);
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

/// A span of dim text, for empty states.
pub fn dim(state: &AppState, s: &str) -> Line<'static> {
    Line::from(Span::styled(s.to_string(), state.theme.get(Role::Dim)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_states_come_first_and_the_rest_drop_out_when_narrow() {
        let cols = ["age", "node", "restarts", "status", "name", "ip"];
        let mut order: Vec<usize> = (0..cols.len()).collect();
        order.sort_by_key(|c| priority(cols[*c]));
        assert_eq!(&order[..3], &[4, 3, 2]);
        let needs = [3, 30, 8, 16, 50, 15];
        let shown = fit(&needs, &order, 60, 2);
        let names: Vec<&str> = shown.iter().map(|(c, _)| cols[*c]).collect();
        assert_eq!(&names[..2], &["name", "status"]);
        assert_eq!(shown[0].1, 30, "the name is capped at half the width");
        let total: usize =
            shown.iter().map(|(_, w)| w).sum::<usize>() + 2 * (shown.len().saturating_sub(1));
        assert!(total <= 60, "{total}");
    }
}
