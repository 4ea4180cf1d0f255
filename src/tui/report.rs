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
    let mut table = Table::default();
    let flush_table = |table: &mut Table, out: &mut Vec<Line<'static>>| {
        if table.rows.is_empty() {
            return;
        }
        out.extend(table.render(th, width));
        *table = Table::default();
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
            table.push(t);
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

/// A markdown table as read: the header (the row above the `|---|` separator, when it has any
/// text) and the body rows, cells unescaped.
#[derive(Default)]
struct Table {
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
    /// The separator row was seen (what came before it was the header).
    separated: bool,
}

/// Most rows a cell wraps to; the rest is cut with `…`.
const CELL_LINES: usize = 6;
/// Narrowest a column is squeezed to before the table is left wider than the pane.
const MIN_COLUMN: usize = 4;

impl Table {
    /// Takes one `| a | b |` line.
    fn push(&mut self, line: &str) {
        let cells = row_cells(line);
        let separator = cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')));
        if separator {
            // The `|---|:--:|` row only says where the header ends.
            if !self.separated && self.rows.len() == 1 {
                let header = self.rows.remove(0);
                // `| | |` over a key/value table: no header at all, not an empty one.
                self.header = header.iter().any(|c| !c.is_empty()).then_some(header);
            }
            self.separated = true;
            return;
        }
        self.rows.push(cells);
    }

    fn columns(&self) -> usize {
        match &self.header {
            Some(h) => h.len(),
            None => self.rows.iter().map(Vec::len).max().unwrap_or(0),
        }
    }

    /// The table drawn in `width` columns: each column as wide as its widest cell when the
    /// whole fits, else narrow columns keep their width and the wide ones share the rest; cells
    /// wrap at words inside their column.
    fn render(&self, th: &Theme, width: usize) -> Vec<Line<'static>> {
        let n = self.columns().max(1);
        let fit = |r: &[String]| -> Vec<String> {
            let mut r: Vec<String> = r.iter().map(|c| plain(c)).collect();
            if r.len() > n {
                let rest = r.split_off(n - 1).join(" | ");
                r.push(rest);
            }
            r.resize(n, String::new());
            r
        };
        let header = self.header.as_deref().map(fit);
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| fit(r)).collect();
        let mut natural = vec![0usize; n];
        for r in header.iter().chain(rows.iter()) {
            for (i, c) in r.iter().enumerate() {
                natural[i] = natural[i].max(c.chars().count());
            }
        }
        let widths = fit_widths(&natural, width.saturating_sub(3 * (n - 1)));
        let border = th.get(Role::Border);
        let mut out = Vec::new();
        if let Some(h) = &header {
            let bold = th.get(Role::Title).add_modifier(Modifier::BOLD);
            out.extend(row_lines(h, &widths, border, |_| bold));
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::from(Span::styled(rule.join("─┼─"), border)));
        }
        let (text, key) = (th.get(Role::Text), th.get(Role::Dim));
        let keyed = header.is_none() && n == 2;
        for r in &rows {
            out.extend(row_lines(r, &widths, border, |i| {
                if keyed && i == 0 { key } else { text }
            }));
        }
        out
    }
}

/// The cells of a `| a | b |` line: split at pipes not escaped as `\|`, which stand for `|`.
fn row_cells(line: &str) -> Vec<String> {
    let inner = &line[1..line.len() - 1];
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

/// A cell's text without its inline markup.
fn plain(cell: &str) -> String {
    cell.replace("**", "").replace('`', "")
}

/// Column widths for `natural` widths in `room` characters: all of them when they fit; else
/// every column narrower than an even share keeps its width and the others split what is left.
fn fit_widths(natural: &[usize], room: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut widths = vec![0usize; natural.len()];
    let mut open: Vec<usize> = (0..natural.len()).collect();
    let mut left = room;
    loop {
        let share = left / open.len().max(1);
        let (fits, wide): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| natural[i] <= share);
        if fits.is_empty() {
            // The wide columns split the rest evenly, the first ones taking the remainder.
            let extra = left % wide.len().max(1);
            for (k, i) in wide.iter().enumerate() {
                widths[*i] = (share + usize::from(k < extra)).max(MIN_COLUMN.min(natural[*i]));
            }
            return widths;
        }
        for i in fits {
            widths[i] = natural[i];
            left -= natural[i];
        }
        open = wide;
        if open.is_empty() {
            return widths;
        }
    }
}

/// One table row as screen lines: each cell wrapped to its column (at most [`CELL_LINES`]),
/// padded, the columns joined by `│`.
fn row_lines(
    cells: &[String],
    widths: &[usize],
    border: ratatui::style::Style,
    style: impl Fn(usize) -> ratatui::style::Style,
) -> Vec<Line<'static>> {
    let wrapped: Vec<Vec<String>> = cells
        .iter()
        .zip(widths)
        .map(|(c, w)| wrap_cell(c, *w))
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    let last = widths.len().saturating_sub(1);
    (0..height)
        .map(|k| {
            let mut spans = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │ ", border));
                }
                let mut text = wrapped[i].get(k).cloned().unwrap_or_default();
                if i < last {
                    let pad = w.saturating_sub(text.chars().count());
                    text.push_str(&" ".repeat(pad));
                }
                spans.push(Span::styled(text, style(i)));
            }
            Line::from(spans)
        })
        .collect()
}

/// A cell's text in rows of at most `w` characters, broken at spaces where it has them; past
/// [`CELL_LINES`] rows the last one ends with `…`.
fn wrap_cell(cell: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut rows: Vec<String> = super::text::wrap(Line::raw(cell.to_string()), w)
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect();
    if rows.len() > CELL_LINES {
        rows.truncate(CELL_LINES);
        if let Some(last) = rows.last_mut() {
            let mut t: String = last.chars().take(w.saturating_sub(1)).collect();
            t.push('…');
            *last = t;
        }
    }
    rows
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
        assert!(out.contains(&"1 │ 2".to_string()), "{out:?}");
        assert!(!out.iter().any(|l| l.contains("---")), "{out:?}");
    }

    #[test]
    fn escaped_pipes_stay_in_their_cell_and_an_empty_header_is_no_header() {
        assert_eq!(row_cells(r"| a \| b | c |"), vec!["a | b", "c"]);
        let out = text("| | |\n|---|---|\n| Outcome | resolved |\n| Mode | live |\n");
        assert_eq!(out, vec!["Outcome │ resolved", "Mode    │ live"]);
    }

    #[test]
    fn narrow_columns_keep_their_width_and_wide_ones_share_the_rest() {
        assert_eq!(fit_widths(&[3, 5], 20), vec![3, 5]);
        assert_eq!(fit_widths(&[8, 5, 6, 100], 40), vec![8, 5, 6, 21]);
        assert_eq!(fit_widths(&[50, 60], 41), vec![21, 20]);
        // Too narrow for anything: the minimum, and the view cuts the rest.
        assert_eq!(fit_widths(&[50, 60], 2), vec![4, 4]);
        let out = text(
            "| k | v |\n|---|---|\n| key | one two three four five six seven eight nine ten eleven twelve |\n",
        );
        assert!(out.iter().all(|l| l.chars().count() <= 60), "{out:?}");
        assert_eq!(
            out[2],
            "key │ one two three four five six seven eight nine ten"
        );
        assert_eq!(out[3], "    │ eleven twelve");
    }
}
