//! One inbox row as a line: a group's header, or an alert with its severity, age, source and
//! markers, padded to the list's width.

use super::inbox::{age, severity_role};
use super::inbox_state::InboxState;
use super::sanitize::sanitize;
use super::theme::Role;
use crate::inbox::{AlertState, Group, InboxAlert};
use crate::model::CLUSTER_KEYS;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

fn markers(a: &InboxAlert) -> Vec<(String, Role)> {
    let mut out = Vec::new();
    match a.state {
        AlertState::Silenced => out.push(("silenced".to_string(), Role::Dim)),
        AlertState::Inhibited => out.push(("inhibited".to_string(), Role::Dim)),
        AlertState::Acknowledged => out.push(("acked".to_string(), Role::Dim)),
        AlertState::Triggered => out.push(("triggered".to_string(), Role::Warn)),
        AlertState::Firing => {}
    }
    out
}

pub(super) fn group_line(
    state: &InboxState,
    g: &Group,
    width: usize,
    selected: bool,
) -> Line<'static> {
    let th = &state.theme;
    let sel = |s: Style| {
        if selected {
            s.patch(th.get(Role::Selection))
        } else {
            s
        }
    };
    let title = sanitize(&g.title()).into_owned();
    let mut spans = vec![
        Span::styled("▾ ", sel(th.get(Role::Dim))),
        Span::styled(
            title,
            sel(th
                .get(severity_role(&g.severity))
                .add_modifier(Modifier::BOLD)),
        ),
        Span::styled(format!("  ×{}", g.alerts.len()), sel(th.get(Role::Text))),
        Span::styled(
            format!("  {}", age(g.oldest, state.now)),
            sel(th.get(Role::Dim)),
        ),
    ];
    let states: Vec<String> = g
        .states
        .iter()
        .map(|(s, n)| format!("{n} {}", s.name()))
        .collect();
    spans.push(Span::styled(
        format!("  [{}]", states.join(", ")),
        sel(th.get(Role::Dim)),
    ));
    pad(
        spans,
        width,
        if selected {
            Some(th.get(Role::Selection))
        } else {
            None
        },
    )
}

pub(super) fn alert_line(
    state: &InboxState,
    a: &InboxAlert,
    width: usize,
    selected: bool,
) -> Line<'static> {
    let th = &state.theme;
    let sel = |s: Style| {
        if selected {
            s.patch(th.get(Role::Selection))
        } else {
            s
        }
    };
    let quiet = !a.state.needs_attention();
    let sev = if a.severity.is_empty() {
        "-".to_string()
    } else {
        a.severity.clone()
    };
    let sev_style = if quiet {
        th.get(Role::Dim)
    } else {
        th.get(severity_role(&a.severity))
    };
    let mut spans = vec![
        Span::styled(if quiet { "  ○ " } else { "  ● " }, sel(sev_style)),
        Span::styled(format!("{:<8.8} ", sanitize(&sev)), sel(sev_style)),
        Span::styled(
            format!("{:>4} ", age(a.starts_at, state.now)),
            sel(th.get(Role::Dim)),
        ),
        Span::styled(format!("{:<4} ", short_source(a)), sel(th.get(Role::Dim))),
    ];
    // "Which cluster?" is the first question on a page: the cluster leads the row (unless the
    // rows are grouped by it), before the markers, and is not repeated among the labels.
    let cluster_key = CLUSTER_KEYS
        .iter()
        .find(|k| a.labels.get(**k).is_some_and(|v| !v.is_empty()))
        .filter(|k| !state.group_by.iter().any(|g| g == **k));
    if let Some(c) = cluster_key.and_then(|k| a.labels.get(*k)) {
        spans.push(Span::styled(
            format!("[{}] ", sanitize(c)),
            sel(th.get(Role::Title)),
        ));
    }
    for (m, role) in markers(a) {
        spans.push(Span::styled(format!("[{m}] "), sel(th.get(role))));
    }
    if !a.assignees.is_empty() {
        spans.push(Span::styled(
            format!("@{} ", sanitize(&a.assignees.join(", @"))),
            sel(th.get(Role::Title)),
        ));
    }
    if let Some(path) = state.sessions.get(&a.fingerprint) {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        spans.push(Span::styled(
            format!("▶ {} ", sanitize(&name)),
            sel(th.get(Role::Running)),
        ));
    }
    let labels: Vec<String> = a
        .labels
        .iter()
        // Name and severity have their own columns; group labels are in the group's header.
        .filter(|(k, _)| {
            !matches!(k.as_str(), "alertname" | "severity")
                && !state.group_by.contains(k)
                && cluster_key != Some(&k.as_str())
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let title = if a.title != a.alertname || state.group_by.iter().all(|g| g != "alertname") {
        format!("{}  ", a.title)
    } else {
        String::new()
    };
    spans.push(Span::styled(
        sanitize(&title).into_owned(),
        sel(if quiet {
            th.get(Role::Dim)
        } else {
            th.get(Role::Text)
        }),
    ));
    spans.push(Span::styled(
        sanitize(&labels.join(" ")).into_owned(),
        sel(th.get(Role::Dim)),
    ));
    pad(
        spans,
        width,
        if selected {
            Some(th.get(Role::Selection))
        } else {
            None
        },
    )
}

fn short_source(a: &InboxAlert) -> &'static str {
    match a.source {
        crate::inbox::Source::Alertmanager => "am",
        crate::inbox::Source::Prometheus => "prom",
        crate::inbox::Source::PagerDuty => "pd",
        crate::inbox::Source::Datadog => "dd",
    }
}

/// Cuts the spans at `width` columns and fills the rest (with the selection colour when selected).
fn pad(spans: Vec<Span<'static>>, width: usize, fill: Option<Style>) -> Line<'static> {
    let mut out = Vec::new();
    let mut used = 0usize;
    for s in spans {
        let w = s.width();
        if used + w <= width {
            used += w;
            out.push(s);
        } else {
            let room = width.saturating_sub(used);
            if room > 1 {
                let cut: String = s.content.chars().take(room - 1).collect();
                used += cut.chars().count() + 1;
                out.push(Span::styled(format!("{cut}…"), s.style));
            }
            break;
        }
    }
    if let Some(style) = fill {
        out.push(Span::styled(" ".repeat(width.saturating_sub(used)), style));
    }
    Line::from(out)
}
