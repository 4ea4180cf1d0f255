//! `sitrep sessions` and `sitrep history`: the recorded sessions as a table, and an alert's or
//! a service's past incidents.

use super::*;

pub(super) fn sessions(dir: Option<&Path>) -> anyhow::Result<()> {
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(session::sessions_dir);
    let (found, errors) = session::list_sessions(&dir);
    for e in &errors {
        eprintln!("sitrep: skipped {}", sanitize(&e.to_string()));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if found.is_empty() {
        writeln!(
            out,
            "no sessions in {}",
            sanitize(&dir.display().to_string())
        )?;
        return Ok(());
    }
    let rows: Vec<[String; 5]> = found
        .iter()
        .map(|s| {
            let outcome = match (s.outcome, &s.tear) {
                (Some(o), _) => o.name().to_string(),
                (None, Some(_)) => "torn".to_string(),
                (None, None) => "unfinished".to_string(),
            };
            let file = s
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Titles come from alerts and file names from anyone who can write the directory:
            // neither may carry a terminal escape sequence to the reader's terminal.
            [
                s.started.format("%Y-%m-%d %H:%M").to_string(),
                outcome,
                format_duration(s.duration),
                sanitize(&s.title.replace(['\n', '\r'], " ")).into_owned(),
                sanitize(&file).into_owned(),
            ]
        })
        .collect();
    let headers = ["WHEN (UTC)", "OUTCOME", "DURATION", "TITLE", "FILE"];
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths[3] = widths[3].min(60);
    // Ten thousand rows: one line buffer, no string per cell.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let mut line = String::new();
    let mut print = |out: &mut dyn Write, cells: [&str; 5]| -> std::io::Result<()> {
        line.clear();
        for (i, cell) in cells.iter().enumerate() {
            let mut shown = 0;
            for c in cell.chars().take(widths[i]) {
                line.push(c);
                shown += 1;
            }
            if i + 1 < cells.len() {
                line.extend(std::iter::repeat_n(' ', widths[i] - shown + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())
    };
    if quiet_on_closed_pipe(print(&mut out, headers))?.is_none() {
        return Ok(());
    }
    for row in &rows {
        if quiet_on_closed_pipe(print(&mut out, row.each_ref().map(String::as_str)))?.is_none() {
            return Ok(());
        }
    }
    quiet_on_closed_pipe(out.flush())?;
    Ok(())
}

pub(super) fn history(
    alert: Option<String>,
    subject: Option<String>,
    since: Option<&str>,
    json: bool,
    dir: Option<&Path>,
) -> anyhow::Result<()> {
    use session::history::{Filter, group, parse_duration};
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(session::sessions_dir);
    let since = match since {
        Some(text) => Some(chrono::Utc::now() - parse_duration(text).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let index = session::memory::index(&dir);
    for w in &index.warnings {
        eprintln!("sitrep: {}", sanitize(w));
    }
    let filter = Filter {
        alert,
        subject,
        since,
    };
    let groups = group(&index.sessions, &filter);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if json {
        for g in &groups {
            serde_json::to_writer(&mut out, g)?;
            writeln!(out)?;
        }
        return Ok(out.flush()?);
    }
    if groups.is_empty() {
        writeln!(
            out,
            "no past incidents in {}",
            sanitize(&dir.display().to_string())
        )?;
        return Ok(out.flush()?);
    }
    for g in &groups {
        let mut what = match (g.alert.is_empty(), g.subject.is_empty()) {
            (false, false) => format!("{} on {}", g.alert, g.subject),
            (false, true) => g.alert.clone(),
            (true, _) => g.subject.clone(),
        };
        if !g.cluster.is_empty() {
            what.push_str(&format!(" in cluster {}", g.cluster));
        }
        writeln!(
            out,
            "{}: {} time(s), {} .. {}, mean {}",
            sanitize(&what),
            g.occurrences,
            g.first.format("%Y-%m-%d %H:%M"),
            g.last.format("%Y-%m-%d %H:%M"),
            format_duration(g.mean_duration)
        )?;
        let last = match g.last_category {
            Some(c) => format!("{c}: {}", g.last_root_cause),
            None => "no verdict".into(),
        };
        writeln!(out, "  last verdict: {}", sanitize(&last))?;
        if g.verdicts.len() > 1 {
            let all: Vec<String> = g
                .verdicts
                .iter()
                .map(|(c, n)| format!("{c} x{n}"))
                .collect();
            writeln!(out, "  verdicts: {}", all.join(", "))?;
        }
        for f in &g.fixes {
            let when = f
                .last_verified
                .map(|t| format!(", last verified {}", t.format("%Y-%m-%d %H:%M")))
                .unwrap_or_default();
            writeln!(
                out,
                "  fixed by {} ({} time(s){when})",
                sanitize(&f.action),
                f.times
            )?;
        }
        if g.fixes.is_empty() {
            writeln!(out, "  no verified fix")?;
        }
        for n in &g.notes {
            writeln!(out, "  note: {}", sanitize(n))?;
        }
    }
    Ok(out.flush()?)
}

pub(super) fn format_duration(secs: f64) -> String {
    let total = secs.max(0.0).round() as u64;
    if total < 60 {
        format!("{total}s")
    } else if total < 3600 {
        format!("{}m{:02}s", total / 60, total % 60)
    } else {
        format!("{}h{:02}m", total / 3600, (total % 3600) / 60)
    }
}
