//! Line shaping shared by the text views: cut a window out of a long line, wrap styled lines,
//! mark search matches, and give log lines a time column and a level colour.

use super::theme::{Role, Theme};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Characters `col..col + w` of `raw`, found without touching the rest of a long line.
pub fn window(raw: &str, col: usize, w: usize) -> &str {
    let mut it = raw.char_indices();
    let start = if col == 0 {
        0
    } else {
        match it.nth(col - 1) {
            Some(_) => it.next().map_or(raw.len(), |(b, _)| b),
            None => return "",
        }
    };
    let rest = &raw[start..];
    match rest.char_indices().nth(w) {
        Some((b, _)) => &rest[..b],
        None => rest,
    }
}

/// Split a styled line into rows of at most `w` characters, breaking after a space when the
/// row has one (words stay whole), else mid-word.
pub fn wrap(line: Line<'_>, w: usize) -> Vec<Line<'static>> {
    let w = w.max(1);
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    let mut rows = Vec::new();
    let mut start = 0;
    while start < cells.len() || rows.is_empty() {
        let mut end = (start + w).min(cells.len());
        if end < cells.len()
            && cells[end].0 != ' '
            && let Some(sp) = cells[start..end].iter().rposition(|(c, _)| *c == ' ')
            && sp > 0
        {
            end = start + sp + 1;
        }
        rows.push(to_line(&cells[start..end]));
        start = end;
        // A break at a space: the space is not carried to the next row.
        if start < cells.len() && cells[start].0 == ' ' {
            start += 1;
        }
    }
    rows
}

fn to_line(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    for (c, st) in cells {
        match spans.last_mut() {
            Some(sp) if sp.style == *st => sp.content.to_mut().push(*c),
            _ => spans.push(Span::styled(c.to_string(), *st)),
        }
    }
    Line::from(spans)
}

/// Restyle the byte ranges `marks` (of the line's text) with `style`, keeping other styles.
pub fn mark(line: Line<'_>, marks: &[(usize, usize)], style: Style) -> Line<'static> {
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut at = 0usize;
    for span in line.spans {
        let text = span.content.as_ref();
        let end = at + text.len();
        let mut cuts: Vec<usize> = vec![0, text.len()];
        for (s, e) in marks {
            for b in [*s, *e] {
                if b > at && b < end && text.is_char_boundary(b - at) {
                    cuts.push(b - at);
                }
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        for pair in cuts.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a == b {
                continue;
            }
            let inside = marks.iter().any(|(s, e)| at + a >= *s && at + b <= *e);
            let st = if inside {
                span.style.patch(style)
            } else {
                span.style
            };
            out.push(Span::styled(text[a..b].to_string(), st));
        }
        at = end;
    }
    Line::from(out).style(line.style)
}

/// Severity of a log line, from the usual spellings (`ERROR`, `level=warn`, `"level":"info"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

pub fn level(line: &str) -> Option<Level> {
    // Only the head of the line: a message that mentions "error" later is not an error line.
    let head = super::text::window(line, 0, 120);
    for word in head
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(12)
    {
        let l = match word.to_ascii_lowercase().as_str() {
            "error" | "err" | "fatal" | "panic" | "critical" | "crit" | "emerg" | "alert" => {
                Level::Error
            }
            "warn" | "warning" => Level::Warn,
            "info" | "notice" => Level::Info,
            "debug" | "trace" => Level::Debug,
            _ => continue,
        };
        return Some(l);
    }
    None
}

/// Length in bytes of a leading RFC 3339 / ISO 8601 timestamp, and its `HH:MM:SS` part.
pub fn timestamp(line: &str) -> Option<(usize, &str)> {
    let b = line.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 19
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !(b[10] == b'T' || b[10] == b' ')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return None;
    }
    let mut end = 19;
    if b.get(end) == Some(&b'.') {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    match b.get(end) {
        Some(b'Z') => end += 1,
        Some(b'+' | b'-') if b.len() >= end + 6 && b[end + 3] == b':' => end += 6,
        _ => {}
    }
    Some((end, &line[11..19]))
}

/// A log line split for display: its `HH:MM:SS` (when it starts with a timestamp), its level
/// (read from the head of the line) and the message after the timestamp.
pub fn split_log(raw: &str) -> (Option<&str>, Option<Level>, &str) {
    match timestamp(raw) {
        Some((end, hms)) => {
            let msg = raw[end..].trim_start();
            (Some(hms), level(msg), msg)
        }
        None => (None, level(raw), raw),
    }
}

/// Columns the time column takes (`HH:MM:SS `).
pub const TIME_COL: usize = 9;

/// A log line: the time in a dim column, the (already cut and sanitized) message coloured by
/// its level.
pub fn log_line(hms: Option<&str>, lvl: Option<Level>, msg: &str, th: &Theme) -> Line<'static> {
    let style = match lvl {
        Some(Level::Error) => th.get(Role::Error),
        Some(Level::Warn) => th.get(Role::Warn),
        Some(Level::Debug) => th.get(Role::Dim),
        _ => th.get(Role::Text),
    };
    let mut spans = Vec::with_capacity(2);
    if let Some(t) = hms {
        spans.push(Span::styled(format!("{t} "), th.get(Role::Dim)));
    }
    spans.push(Span::styled(msg.to_string(), style));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_cuts_by_characters() {
        assert_eq!(window("héllo wörld", 1, 4), "éllo");
        assert_eq!(window("abc", 5, 2), "");
        assert_eq!(window("abc", 0, 10), "abc");
    }

    #[test]
    fn wrap_keeps_every_character_and_style() {
        let line = Line::from(vec![Span::raw("abcdef"), Span::raw("gh")]);
        let rows = wrap(line, 3);
        let text: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        assert_eq!(text, ["abc", "def", "gh"]);
    }

    #[test]
    fn wrap_breaks_between_words() {
        let rows = wrap(Line::raw("the quick brown fox"), 10);
        let text: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        assert_eq!(text, ["the quick ", "brown fox"]);
    }

    #[test]
    fn levels_and_timestamps_are_recognised() {
        assert_eq!(level("2026-11-22T09:00:01Z ERROR boom"), Some(Level::Error));
        assert_eq!(level("level=warn msg=slow"), Some(Level::Warn));
        assert_eq!(level(r#"{"level":"info","msg":"ok"}"#), Some(Level::Info));
        assert_eq!(level("GET /health 200"), None);
        let (end, hms) = timestamp("2026-11-22T09:00:01.123Z ERROR boom").unwrap();
        assert_eq!((end, hms), (24, "09:00:01"));
        assert!(timestamp("not a time").is_none());
    }

    #[test]
    fn marks_restyle_only_the_match() {
        let th = Theme::resolve(Some("default"), false).unwrap();
        let l = mark(Line::raw("say hello there"), &[(4, 9)], th.get(Role::Match));
        let styled: Vec<&str> = l
            .spans
            .iter()
            .filter(|s| s.style == Style::default().patch(th.get(Role::Match)))
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(styled, ["hello"]);
    }
}
