//! The report view: the investigation's markdown report rendered for the terminal (headings,
//! lists, code blocks, tables), full screen, scrolled through one [`Scroll`].

use super::app::AppState;
use super::scroll::Scroll;
use super::theme::{Role, Theme};
use super::{details, highlight, pane_block, sanitize::sanitize};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Clear;

pub fn render(state: &AppState, scroll: &Scroll, frame: &mut Frame, area: Rect) {
    let th = &state.theme;
    let Some(md) = &state.incident().report else {
        return;
    };
    frame.render_widget(Clear, area);
    let block = pane_block(
        th,
        " report · j/k scroll · esc closes · :export writes it ",
        true,
    );
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines = markdown(md, th, usize::from(inner.width));
    details::render_rows(
        frame,
        inner,
        lines,
        scroll,
        scroll.wrap,
        th.get(Role::Text),
        None,
    );
}

/// Markdown to styled lines: enough of CommonMark for a report.
pub fn markdown(md: &str, th: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut code: Option<String> = None;
    let mut table: Vec<Vec<String>> = Vec::new();
    let flush_table = |table: &mut Vec<Vec<String>>, out: &mut Vec<Line<'static>>| {
        if table.is_empty() {
            return;
        }
        out.extend(render_table(table, th, width));
        table.clear();
    };
    for raw in md.lines() {
        let line = sanitize(raw).into_owned();
        if let Some(lang) = &code {
            if line.trim_start().starts_with("```") {
                code = None;
            } else {
                let mut l = highlight::line(lang, &line, th.colour, th.get(Role::Dim));
                l.spans
                    .insert(0, Span::styled("  │ ", th.get(Role::Border)));
                out.push(l);
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with('|') && t.ends_with('|') && t.len() > 1 {
            let cells: Vec<String> = t[1..t.len() - 1]
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            // The `|---|:--:|` separator row only says where the header ends.
            if !cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
            {
                table.push(cells);
            }
            continue;
        }
        flush_table(&mut table, &mut out);
        if let Some(lang) = t.strip_prefix("```") {
            code = Some(lang.trim().to_string());
            continue;
        }
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            let text = t[hashes..].trim().to_string();
            if out.last().is_some_and(|l| l.width() > 0) {
                out.push(Line::raw(""));
            }
            let style = th.get(Role::Title).add_modifier(Modifier::BOLD);
            let style = if hashes == 1 {
                style.add_modifier(Modifier::UNDERLINED)
            } else {
                style
            };
            out.push(Line::from(Span::styled(text, style)));
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(item) = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| t.strip_prefix("+ "))
        {
            out.push(Line::from(vec![
                Span::raw(" ".repeat(indent)),
                Span::styled("• ", th.get(Role::Dim)),
                inline(item, th),
            ]));
            continue;
        }
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && t[digits..].starts_with(". ") {
            out.push(Line::from(vec![
                Span::raw(" ".repeat(indent)),
                Span::styled(format!("{}. ", &t[..digits]), th.get(Role::Dim)),
                inline(&t[digits + 2..], th),
            ]));
            continue;
        }
        if let Some(q) = t.strip_prefix("> ") {
            out.push(Line::from(vec![
                Span::styled("▌ ", th.get(Role::Border)),
                inline(q, th),
            ]));
            continue;
        }
        out.push(Line::from(inline(t, th)));
    }
    flush_table(&mut table, &mut out);
    out
}

/// `**bold**` and `` `code` `` are dropped to plain text with a style for the whole run; the
/// report is short prose, so one style per line part is enough.
fn inline(text: &str, th: &Theme) -> Span<'static> {
    let plain: String = text.replace("**", "").replace('`', "");
    if text.starts_with("**") {
        Span::styled(plain, th.get(Role::Text).add_modifier(Modifier::BOLD))
    } else {
        Span::styled(plain, th.get(Role::Text))
    }
}

fn render_table(rows: &[Vec<String>], th: &Theme, width: usize) -> Vec<Line<'static>> {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; ncols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.replace('`', "").chars().count());
        }
    }
    // Shrink the widest column until the table fits.
    let total = |w: &[usize]| w.iter().sum::<usize>() + 3 * w.len().saturating_sub(1);
    while total(&widths) > width.max(10) {
        let Some((i, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
            break;
        };
        if widths[i] <= 4 {
            break;
        }
        widths[i] -= 1;
    }
    let mut out = Vec::new();
    for (ri, r) in rows.iter().enumerate() {
        let mut spans = Vec::new();
        for (i, wd) in widths.iter().enumerate() {
            let c = r.get(i).map(|c| c.replace('`', "")).unwrap_or_default();
            let mut c: String = if c.chars().count() > *wd {
                let mut t: String = c.chars().take(wd.saturating_sub(1)).collect();
                t.push('…');
                t
            } else {
                c
            };
            let pad = wd.saturating_sub(c.chars().count());
            c.push_str(&" ".repeat(pad));
            if i > 0 {
                spans.push(Span::styled(" │ ", th.get(Role::Border)));
            }
            let style = if ri == 0 {
                th.get(Role::Title).add_modifier(Modifier::BOLD)
            } else {
                th.get(Role::Text)
            };
            spans.push(Span::styled(c, style));
        }
        out.push(Line::from(spans));
        if ri == 0 {
            out.push(Line::from(Span::styled(
                "─".repeat(total(&widths)),
                th.get(Role::Border),
            )));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(md: &str) -> Vec<String> {
        let th = Theme::resolve(Some("mono"), false).unwrap();
        markdown(md, &th, 60)
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn headings_lists_code_and_tables() {
        let out = text(
            "# Title\n\n- one\n1. first\n```sh\nkubectl get pods\n```\n| a | bb |\n|---|---|\n| 1 | 2 |\n",
        );
        assert_eq!(out[0], "Title");
        assert!(out.contains(&"• one".to_string()), "{out:?}");
        assert!(out.contains(&"1. first".to_string()), "{out:?}");
        assert!(out.contains(&"  │ kubectl get pods".to_string()), "{out:?}");
        assert!(out.contains(&"a │ bb".to_string()), "{out:?}");
        assert!(out.contains(&"1 │ 2 ".to_string()), "{out:?}");
        assert!(!out.iter().any(|l| l.contains("---")), "{out:?}");
    }
}
