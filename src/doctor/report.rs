//! The doctor's output: a table that fits 100 columns, or one JSON object a line.

use super::{Row, Status};
use std::io::Write;

/// The table's width.
pub const WIDTH: usize = 100;
const NAME: usize = 16;
const STATUS: usize = 7;
const LATENCY: usize = 8;

/// `--json`: one object a line (`integration`, `status`, `detail`, and `version`, `latency_ms`,
/// `fix` when known).
pub fn json(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    for row in rows {
        let line = serde_json::to_string(row).map_err(std::io::Error::other)?;
        writeln!(out, "{line}")?;
    }
    out.flush()
}

/// The table: one row per integration, the detail wrapped under its column and the fix below it.
pub fn table(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    let indent = NAME + 1 + STATUS + 1 + LATENCY + 2;
    let room = WIDTH - indent;
    writeln!(
        out,
        "{:<NAME$} {:<STATUS$} {:>LATENCY$}  DETAIL",
        "INTEGRATION", "STATUS", "LATENCY"
    )?;
    for row in rows {
        let latency = match (row.status, row.latency_ms) {
            (Status::Absent, _) | (_, None) => "-".to_string(),
            (_, Some(ms)) if ms < 10_000 => format!("{ms}ms"),
            (_, Some(ms)) => format!("{}s", ms / 1000),
        };
        let name = fit(&row.integration, NAME);
        let mut lines = wrap(&row.detail, room);
        if let Some(fix) = &row.fix {
            lines.extend(wrap(&format!("fix: {fix}"), room));
        }
        let first = lines.first().cloned().unwrap_or_default();
        writeln!(
            out,
            "{name:<NAME$} {:<STATUS$} {latency:>LATENCY$}  {first}",
            row.status.name()
        )?;
        for line in lines.iter().skip(1) {
            writeln!(out, "{:indent$}{line}", "")?;
        }
    }
    let failed = rows.iter().filter(|r| r.status == Status::Failed).count();
    let configured = rows.iter().filter(|r| r.status != Status::Absent).count();
    writeln!(out)?;
    if failed == 0 {
        writeln!(out, "{configured} configured, all ok")?;
    } else {
        writeln!(out, "{configured} configured, {failed} failed")?;
    }
    out.flush()
}

/// `text` cut to `width` characters, marked with `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Words of `text` in lines of at most `width` characters (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let word = fit(word, width);
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_fits_100_columns() {
        let rows = vec![
            Row {
                integration: "mcp.a-server-with-a-very-long-name".into(),
                status: Status::Failed,
                version: None,
                latency_ms: Some(7003),
                detail: "cannot list pods in namespace payments, cannot get pods/log, cannot list events, cannot list nodes and a-very-long-word-".repeat(2),
                fix: Some("bind the account a Role granting these verbs".into()),
            },
            Row {
                integration: "loki".into(),
                status: Status::Absent,
                version: None,
                latency_ms: None,
                detail: "not configured".into(),
                fix: None,
            },
        ];
        let mut out = Vec::new();
        assert!(table(&mut out, &rows).is_ok());
        let text = String::from_utf8_lossy(&out);
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?}");
        }
        assert!(text.contains("fix: bind"), "{text}");
        assert!(text.contains("1 configured, 1 failed"), "{text}");
    }
}
