//! Time-series evidence as a chart: time and value axes with units, the alert's threshold,
//! the onset and the changes the investigation found, as labelled vertical markers.

use super::app::AppState;
use super::pane_block;
use super::sanitize::sanitize;
use super::theme::Role;
use crate::model::{Evidence, EvidenceBody, Marker, Series};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::Span;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

/// One drawn line of a chart: legend name, points, style.
type ChartLine = (String, Vec<(f64, f64)>, Style);

/// What a chart draws besides its series.
pub struct Overlays<'a> {
    pub threshold: Option<f64>,
    pub unit: Option<&'a str>,
    pub markers: &'a [Marker],
}

pub fn render(
    state: &AppState,
    frame: &mut Frame,
    area: Rect,
    ev: &Evidence,
    series: &[Series],
    o: Overlays,
    focused: bool,
) {
    let th = &state.theme;
    let title_text = sanitize(&ev.title);
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
    if let Some(t) = o.threshold {
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
    let u = o.unit.unwrap_or("");
    if let Some(t) = o.threshold {
        owned.push((
            format!("threshold {}{u}", short_num(t)),
            vec![(x0, t), (x1, t)],
            th.get(Role::ChartThreshold),
        ));
    }
    let mut markers: Vec<Marker> = o.markers.to_vec();
    markers.extend(onset_and_changes(state, o.markers));
    for m in markers.iter().filter(|m| m.at >= x0 && m.at <= x1) {
        owned.push((
            format!("{} {}", fmt_x(m.at), sanitize(&m.label)),
            vec![(m.at, y0), (m.at, y1)],
            th.get(Role::ChartMarker),
        ));
    }
    let datasets: Vec<Dataset> = owned
        .iter()
        .map(|(name, data, style)| {
            Dataset::default()
                .name(name.clone())
                .marker(symbols::Marker::Braille)
                .graph_type(GraphType::Line)
                .style(*style)
                .data(data)
        })
        .collect();
    let xm = x0 + (x1 - x0) / 2.0;
    let ym = y0 + (y1 - y0) / 2.0;
    let title = format!(" 2 {title_text} [{}] ", ev.kind);
    let chart = Chart::new(datasets)
        .block(pane_block(th, &title, focused))
        .x_axis(
            Axis::default()
                .title(Span::styled("UTC", th.get(Role::Dim)))
                .bounds([x0, x1])
                .labels(vec![
                    Span::raw(fmt_x(x0)),
                    Span::raw(fmt_x(xm)),
                    Span::raw(fmt_x(x1)),
                ])
                .style(th.get(Role::Dim)),
        )
        .y_axis(
            Axis::default()
                .title(Span::styled(
                    if u.is_empty() { "value" } else { u }.to_string(),
                    th.get(Role::Dim),
                ))
                .bounds([y0, y1])
                .labels(vec![
                    Span::raw(format!("{}{u}", short_num(y0))),
                    Span::raw(format!("{}{u}", short_num(ym))),
                    Span::raw(format!("{}{u}", short_num(y1))),
                ])
                .style(th.get(Role::Dim)),
        )
        .hidden_legend_constraints((Constraint::Ratio(2, 3), Constraint::Ratio(2, 3)));
    frame.render_widget(chart, area);
}

/// The alert's onset (unless the evidence already marks it) and the changes found during the
/// investigation (the `when` column of a changes table), newest three.
fn onset_and_changes(state: &AppState, have: &[Marker]) -> Vec<Marker> {
    let inc = state.incident();
    let mut out = Vec::new();
    if let Some(at) = inc.alert.as_ref().and_then(|a| a.starts_at) {
        let at = at.timestamp() as f64;
        if !have.iter().any(|m| (m.at - at).abs() < 1.0) {
            out.push(Marker {
                at,
                label: "onset".into(),
            });
        }
    }
    for ev in inc.evidence.iter().filter(|e| e.kind == "changes") {
        let EvidenceBody::Table { columns, rows } = &ev.body else {
            continue;
        };
        let col = |name: &str| columns.iter().position(|c| c == name);
        let (Some(w), id) = (col("when"), col("id")) else {
            continue;
        };
        for r in rows.iter().take(3) {
            let Some(at) = r.get(w).and_then(|s| parse_when(s)) else {
                continue;
            };
            let label = id
                .and_then(|i| r.get(i))
                .map(|s| format!("change {s}"))
                .unwrap_or_else(|| "change".into());
            out.push(Marker {
                at: at.timestamp() as f64,
                label,
            });
        }
    }
    out
}

/// A changes table's `when`: `YYYY-MM-DD HH:MM:SS` in UTC, or RFC 3339.
fn parse_when(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
        .map(|n| n.and_utc())
        .ok()
        .or_else(|| {
            chrono::DateTime::parse_from_rfc3339(s)
                .ok()
                .map(|d| d.to_utc())
        })
}

fn fmt_x(x: f64) -> String {
    chrono::DateTime::from_timestamp(x as i64, 0)
        .map(|d| d.format("%H:%M").to_string())
        .unwrap_or_default()
}

pub fn short_num(v: f64) -> String {
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
