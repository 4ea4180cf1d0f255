//! `sitrep export`: a session as markdown or JSON, streamed to stdout or a file.

use super::*;

pub(super) fn export(file: &Path, format: Format, output: Option<&Path>) -> anyhow::Result<()> {
    // Folded while reading: the records are never all in memory at once, and markdown, which
    // shows a text body as its line count, folds only the bodies' line structure.
    // JSON keeps text bodies in the file, copying each out as it is written.
    let (folded, bodies) = match format {
        Format::Markdown => (
            session::fold_file_with(file, session::export::markdown_input)?,
            None,
        ),
        Format::Json => {
            let (folded, bodies) = session::export::fold_file_for_json(file)?;
            (folded, Some(bodies))
        }
    };
    if let Some(tear) = &folded.tear {
        // A crash leaves a torn last line, and the postmortem of everything before it is whole;
        // a damaged or invalid record elsewhere would make it silently incomplete.
        if !tear.is_torn_write() {
            bail!(
                "{}: cannot export: {}",
                sanitize(&file.display().to_string()),
                sanitize(&tear.to_string())
            );
        }
        eprintln!(
            "sitrep: {}: stopped reading at {}; showing the {} records before it",
            sanitize(&file.display().to_string()),
            sanitize(&tear.to_string()),
            folded.records
        );
    }
    let incident = folded.incident;
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        match format {
            Format::Markdown => out.write_all(session::export::markdown(&incident).as_bytes())?,
            Format::Json => {
                match &bodies {
                    Some(bodies) => {
                        session::export::write_json_streamed(&mut *out, &incident, bodies)?
                    }
                    None => session::export::write_json(&mut *out, &incident)?,
                }
                out.write_all(b"\n")?;
            }
        }
        out.flush()
    };
    match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            write(&mut std::io::BufWriter::new(f))
                .with_context(|| format!("cannot write {}", path.display()))?
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            quiet_on_closed_pipe(write(&mut out))?;
        }
    }
    Ok(())
}
