//! `sitrep diagnose`: a recorded session's verdict, found again and told as text.

use super::*;

pub(super) fn diagnose(file: &Path, json: bool, runbooks: Option<&Path>) -> anyhow::Result<()> {
    let mut reader = session::open_file(file)?;
    let (books, book_errors) = crate::runbook::load(runbooks);
    for e in &book_errors {
        eprintln!("sitrep: runbook skipped: {e}");
    }
    // Read, diagnosed and folded in one pass; evidence bodies, which neither the reasoning nor
    // the verdict reads, are folded as their line structure only.
    let mut incident = crate::model::Incident::new();
    let mut records = 0usize;
    let events = reader.by_ref().map(|r| {
        let event = session::export::markdown_input(r.event);
        incident.apply(r.t, &event);
        records += 1;
        event
    });
    let re = agent::rediagnose_stream(events, &books);
    let tear = reader.tear().cloned();
    let torn = tear.as_ref().map(|t| {
        format!("the file is torn at {t}: diagnosed from the {records} records before it")
    });
    let re = re.map_err(|e| match &torn {
        Some(t) => anyhow::anyhow!("{}: {e} ({t})", file.display()),
        None => anyhow::anyhow!("{}: {e}", file.display()),
    })?;
    let text = if json {
        let mut s = serde_json::to_string_pretty(&serde_json::json!({
            "file": file.display().to_string(),
            "verdict": re.verdict,
            "matches_recorded": re.matches_recorded(),
            "recorded": re.recorded,
            "facts": re.facts,
            "evidence": re.evidence,
            "notes": re.notes,
            "reasoner": re.reasoner,
            "tear": tear.as_ref().map(|t| serde_json::json!({
                "line": t.line, "byte_offset": t.byte_offset, "reason": t.reason,
            })),
        }))?;
        s.push('\n');
        s
    } else {
        verdict_text(&re, &incident, torn.as_deref())
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    Ok(())
}

/// The re-diagnosis as an engineer reads it: every citation resolved to the evidence's title.
pub(super) fn verdict_text(
    re: &agent::Rediagnosis,
    incident: &crate::model::Incident,
    torn: Option<&str>,
) -> String {
    let v = &re.verdict;
    let cite = |ids: &[String]| -> String {
        ids.iter()
            .map(|id| match incident.evidence.iter().find(|e| &e.id == id) {
                Some(e) => format!("{id} {} [{}]", e.title, e.kind),
                None => format!("{id} (not in this session)"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = String::new();
    if let Some(t) = torn {
        out.push_str(&format!("note: {t}\n"));
    }
    out.push_str(&format!(
        "verdict:    {} ({:.0}% confidence)\nroot cause: {}\n",
        v.category,
        v.confidence * 100.0,
        v.root_cause
    ));
    out.push_str(&format!(
        "from {} facts records over {} evidence items\nreasoner:   {}\n",
        re.facts, re.evidence, re.reasoner
    ));
    out.push_str(&crate::model::steps_text(
        &v.subject,
        v.symptom.as_ref(),
        &v.checks,
    ));
    out.push_str("\nfindings:\n");
    if v.findings.is_empty() {
        out.push_str("  (none)\n");
    }
    for f in &v.findings {
        out.push_str(&format!(
            "  - {} [{} {}, {:.0}%]\n",
            f.summary,
            f.analyzer,
            f.category,
            f.confidence * 100.0
        ));
        if !f.detail.is_empty() {
            out.push_str(&format!("    {}\n", f.detail));
        }
        out.push_str(&format!(
            "    evidence: {}\n",
            if f.evidence.is_empty() {
                "none cited".to_string()
            } else {
                cite(&f.evidence)
            }
        ));
    }
    if !v.hypotheses.is_empty() {
        out.push_str("\nhypotheses:\n");
        for (n, h) in v.hypotheses.iter().enumerate() {
            out.push_str(&format!(
                "  {}. {} [{}, {:.0}%]\n",
                n + 1,
                h.statement,
                h.category,
                h.confidence * 100.0
            ));
        }
    }
    out.push_str("\nruled out:\n");
    if v.ruled_out.is_empty() {
        out.push_str("  (nothing)\n");
    }
    for r in &v.ruled_out {
        out.push_str(&format!("  - {}: {}\n", r.statement, r.reason));
        if !r.evidence.is_empty() {
            out.push_str(&format!("    evidence: {}\n", cite(&r.evidence)));
        }
    }
    out.push('\n');
    out.push_str(match (&re.recorded, re.matches_recorded()) {
        (_, true) => "same as the verdict recorded in the session\n",
        (Some(_), false) => "DIFFERS from the verdict recorded in the session\n",
        (None, _) => "the session recorded no verdict (it stopped before Diagnose)\n",
    });
    if let Some(r) = re.recorded.as_ref().filter(|_| !re.matches_recorded()) {
        out.push_str(&format!(
            "recorded:   {} ({:.0}% confidence): {}\n",
            r.category,
            r.confidence * 100.0,
            r.root_cause
        ));
    }
    for n in &re.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}
