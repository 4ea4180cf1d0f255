//! Postmortem export of a folded incident: markdown for people, JSON for tools.

use crate::model::text::{sanitize, sanitize_lines};
use crate::model::{ActionStatus, ChatRole, EvidenceBody, Incident, Outcome, StageStatus};
use chrono::{DateTime, Duration, Utc};
use std::fmt::Write;

/// A markdown postmortem: summary, timeline with times, evidence consulted, hypotheses and what
/// was ruled out, actions with who decided and what happened, verification.
pub fn markdown(incident: &Incident) -> String {
    markdown_ending(incident, None)
}

/// The postmortem of a session that ends with `outcome`, written before its end record is (the
/// Report stage): the outcome it ends with instead of "in progress". `None`: the folded outcome.
pub fn markdown_ending(incident: &Incident, outcome: Option<Outcome>) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = write_markdown(&mut out, incident, outcome.or(incident.outcome));
    // Every value went through `one_line`/`cell`, which sanitize; this pass also covers anything
    // written without them, so no escape sequence from alert or evidence text reaches a terminal.
    match sanitize_lines(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

fn write_markdown(out: &mut String, inc: &Incident, outcome: Option<Outcome>) -> std::fmt::Result {
    let title = if inc.title.is_empty() {
        "Untitled incident"
    } else {
        &inc.title
    };
    writeln!(out, "# Postmortem: {}", one_line(title))?;
    writeln!(out)?;

    writeln!(out, "| | |")?;
    writeln!(out, "|---|---|")?;
    if !inc.id.is_empty() {
        writeln!(out, "| Session | `{}` |", cell(&inc.id))?;
    }
    if let Some(started) = inc.started {
        writeln!(
            out,
            "| Started | {} |",
            started.format("%Y-%m-%d %H:%M:%S UTC")
        )?;
    }
    writeln!(out, "| Duration | {} |", human_duration(inc.now))?;
    let outcome = outcome.map(Outcome::name).unwrap_or("in progress");
    writeln!(out, "| Outcome | {outcome} |")?;
    let mode = match inc.mode {
        crate::model::RunMode::Live => "live",
        crate::model::RunMode::Demo => "demo",
        crate::model::RunMode::Case => "case",
    };
    match &inc.case {
        Some(case) => writeln!(out, "| Mode | {mode} (`{}`) |", cell(case))?,
        None => writeln!(out, "| Mode | {mode} |")?,
    }
    if inc.read_only {
        writeln!(out, "| Read-only | yes |")?;
    }
    if !inc.operator.is_empty() {
        writeln!(out, "| Operator | {} |", cell(&inc.operator))?;
    }
    if let Some(alert) = &inc.alert {
        writeln!(
            out,
            "| Alert | {} (severity {}) |",
            cell(alert.name()),
            cell(alert.severity())
        )?;
        let labels: Vec<String> = alert
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != "alertname" && k.as_str() != "severity")
            .map(|(k, v)| format!("`{}={}`", cell(k), cell(v)))
            .collect();
        if !labels.is_empty() {
            writeln!(out, "| Labels | {} |", labels.join(" "))?;
        }
        if let Some(starts) = alert.starts_at {
            writeln!(
                out,
                "| Firing since | {} |",
                starts.format("%Y-%m-%d %H:%M:%S UTC")
            )?;
        }
    }
    if let Some(problem) = &inc.problem {
        writeln!(out, "| Problem | {} |", cell(problem))?;
    }
    if let Some(cluster) = &inc.cluster {
        writeln!(out, "| Cluster | {} |", cell(cluster))?;
    }
    let read = clusters_read(inc);
    if !read.is_empty() {
        writeln!(out, "| Clusters read | {} |", cell(&read.join(", ")))?;
    }
    writeln!(out)?;

    writeln!(out, "## Summary")?;
    writeln!(out)?;
    match &inc.diagnosis {
        Some((category, root_cause, confidence)) => {
            writeln!(
                out,
                "**Root cause** ({category}, {:.0}% confidence): {}",
                confidence * 100.0,
                one_line(root_cause)
            )?;
        }
        None => writeln!(out, "No diagnosis was reached.")?,
    }
    writeln!(out)?;
    if let Some(triage) = &inc.triage {
        writeln!(out, "- Triage: {}", one_line(triage))?;
    }
    if let Some(runbook) = &inc.runbook {
        writeln!(out, "- Runbook: `{}`", one_line(runbook))?;
    }
    let failed_tools = inc
        .tools
        .iter()
        .filter(|c| matches!(c.outcome, Some(Err(_))))
        .count();
    writeln!(
        out,
        "- Evidence: {} items from {} tool calls ({} failed)",
        inc.evidence.len(),
        inc.tools.len(),
        failed_tools
    )?;
    for a in &inc.actions {
        writeln!(
            out,
            "- Action `{}` {} on {}: {}",
            cell(&a.action.id),
            one_line(&a.action.kind),
            one_line(&a.action.target),
            a.status.name()
        )?;
    }
    // What a ticket action created (key or number, and its link), where people look first.
    for a in &inc.actions {
        if let (true, ActionStatus::Executed, Some(Ok(result))) = (
            crate::model::catalog::is_ticket(&a.action.kind),
            &a.status,
            &a.result,
        ) {
            writeln!(out, "- Ticket: {}", one_line(result))?;
        }
    }
    for v in &inc.verifications {
        let mark = if v.passed { "passed" } else { "failed" };
        writeln!(out, "- Verification {mark}: {}", one_line(&v.summary))?;
    }
    writeln!(out)?;

    previous_occurrences(out, inc)?;

    writeln!(out, "## Timeline")?;
    writeln!(out)?;
    let stages: Vec<String> = crate::model::Stage::ALL
        .iter()
        .filter_map(|s| {
            let st = &inc.stages[s.index()];
            match (st.status, st.started_at, st.finished_at) {
                (StageStatus::Pending, ..) => None,
                (_, Some(a), Some(b)) => Some(format!("{s} {}", human_duration(b - a))),
                _ => Some(format!("{s} (unfinished)")),
            }
        })
        .collect();
    if !stages.is_empty() {
        writeln!(out, "Stages: {}.", stages.join(" → "))?;
        writeln!(out)?;
    }
    writeln!(out, "| Time (UTC) | +t | Stage | Event |")?;
    writeln!(out, "|---|---|---|---|")?;
    for item in &inc.timeline {
        let stage = item.stage.map(|s| s.name()).unwrap_or("");
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            clock(inc.started, item.t),
            offset(item.t),
            stage,
            cell(&item.text)
        )?;
    }
    writeln!(out)?;

    writeln!(out, "## Evidence consulted")?;
    writeln!(out)?;
    if inc.evidence.is_empty() && inc.tools.is_empty() {
        writeln!(out, "None.")?;
        writeln!(out)?;
    }
    if !inc.evidence.is_empty() {
        let kinds: Vec<String> = inc
            .evidence_kinds()
            .iter()
            .map(|k| format!("`{k}`"))
            .collect();
        writeln!(out, "Kinds: {}.", kinds.join(", "))?;
        writeln!(out)?;
        writeln!(out, "| Id | Kind | Title | Source | Size |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for e in &inc.evidence {
            writeln!(
                out,
                "| `{}` | {} | {} | `{}` | {} |",
                cell(&e.id),
                cell(&e.kind),
                cell(&e.title),
                cell(&e.source),
                body_size(&e.body)
            )?;
        }
        writeln!(out)?;
    }
    if !inc.tools.is_empty() {
        writeln!(out, "Tool calls:")?;
        writeln!(out)?;
        writeln!(out, "| +t | Tool | Specialist | Took | Result |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for c in &inc.tools {
            let took = c
                .duration_ms
                .map(|ms| format!("{ms} ms"))
                .unwrap_or_else(|| "-".into());
            let result = match &c.outcome {
                None => "did not finish".to_string(),
                Some(Ok(summary)) if summary.is_empty() => "ok".to_string(),
                Some(Ok(summary)) => format!("ok: {}", cell(summary)),
                Some(Err(error)) => format!("**failed**: {}", cell(error)),
            };
            writeln!(
                out,
                "| {} | `{}` | {} | {} | {} |",
                offset(c.started_at),
                cell(&c.tool),
                cell(c.specialist.as_deref().unwrap_or("")),
                took,
                result
            )?;
        }
        writeln!(out)?;
    }

    writeln!(out, "## Findings")?;
    writeln!(out)?;
    if inc.findings.is_empty() {
        writeln!(out, "None.")?;
    }
    for f in &inc.findings {
        write!(
            out,
            "- **{}** ({}, {:.0}%, `{}`)",
            one_line(&f.summary),
            f.category,
            f.confidence * 100.0,
            one_line(&f.analyzer)
        )?;
        if !f.evidence.is_empty() {
            write!(out, " — evidence {}", ids(&f.evidence))?;
        }
        writeln!(out)?;
        if !f.detail.is_empty() {
            writeln!(out, "  {}", one_line(&f.detail))?;
        }
    }
    writeln!(out)?;

    // Sessions written before the steps were recorded have none to show.
    if inc.symptom.is_some() || !inc.subject.is_empty() {
        writeln!(out, "## Diagnosis steps")?;
        let steps = crate::model::steps_text(&inc.subject, inc.symptom.as_ref(), &inc.checks);
        for line in steps.lines() {
            match line.strip_suffix(':') {
                Some(heading) => writeln!(out, "**{heading}**")?,
                None => writeln!(out, "{}", one_line(line))?,
            }
        }
        writeln!(out)?;
    }

    writeln!(out, "## Hypotheses")?;
    writeln!(out)?;
    if inc.hypotheses.is_empty() {
        writeln!(out, "None ranked.")?;
    }
    for (i, h) in inc.hypotheses.iter().enumerate() {
        write!(
            out,
            "{}. {} ({}, {:.0}%)",
            i + 1,
            one_line(&h.statement),
            h.category,
            h.confidence * 100.0
        )?;
        if !h.evidence.is_empty() {
            write!(out, " — evidence {}", ids(&h.evidence))?;
        }
        writeln!(out)?;
    }
    writeln!(out)?;
    writeln!(out, "### Ruled out")?;
    writeln!(out)?;
    if inc.ruled_out.is_empty() {
        writeln!(out, "Nothing was ruled out.")?;
    }
    for r in &inc.ruled_out {
        write!(
            out,
            "- ~~{}~~: {}",
            one_line(&r.statement),
            one_line(&r.reason)
        )?;
        if !r.evidence.is_empty() {
            write!(out, " (evidence {})", ids(&r.evidence))?;
        }
        writeln!(out)?;
    }
    writeln!(out)?;

    writeln!(out, "## Actions")?;
    writeln!(out)?;
    if inc.actions.is_empty() {
        writeln!(out, "No action was proposed.")?;
        writeln!(out)?;
    }
    for a in &inc.actions {
        let act = &a.action;
        writeln!(
            out,
            "### `{}` {} {} ({} risk)",
            cell(&act.id),
            one_line(&act.kind),
            one_line(&act.target),
            act.risk
        )?;
        writeln!(out)?;
        writeln!(out, "- Proposed at {}", clock(inc.started, a.proposed_at))?;
        writeln!(out, "- Rationale: {}", one_line(&act.rationale))?;
        if !act.operation.is_empty() {
            writeln!(out, "- Operation: `{}`", one_line(&act.operation))?;
        }
        if !act.blast_radius.is_empty() {
            writeln!(out, "- Blast radius: {}", one_line(&act.blast_radius))?;
        }
        if !act.params.is_empty() {
            let params: Vec<String> = act
                .params
                .iter()
                .map(|(k, v)| format!("`{}={}`", cell(k), cell(&v.to_string())))
                .collect();
            writeln!(out, "- Parameters: {}", params.join(" "))?;
        }
        if a.approvals_needed > 1 {
            writeln!(out, "- Required {} distinct approvers", a.approvals_needed)?;
        }
        for d in &a.decisions {
            let when = d.at.format("%H:%M:%S UTC");
            let via = crate::model::via_note(&one_line(&d.via));
            if d.approved {
                writeln!(out, "- Approved by **{}**{via} at {when}", one_line(&d.by))?;
            } else if d.reason.is_empty() {
                writeln!(out, "- Denied by **{}**{via} at {when}", one_line(&d.by))?;
            } else {
                writeln!(
                    out,
                    "- Denied by **{}**{via} at {when}: {}",
                    one_line(&d.by),
                    one_line(&d.reason)
                )?;
            }
        }
        let took = a
            .duration_ms
            .map(|ms| format!(" in {ms} ms"))
            .unwrap_or_default();
        match (&a.status, &a.result) {
            (ActionStatus::Executed, Some(Ok(result))) => {
                writeln!(out, "- Executed{took}: {}", one_line(result))?
            }
            (ActionStatus::Failed, Some(Err(error))) => {
                writeln!(out, "- **Failed**{took}: {}", one_line(error))?
            }
            (ActionStatus::Skipped, Some(Err(reason))) => {
                writeln!(out, "- Not run: {}", one_line(reason))?
            }
            (status, _) => writeln!(out, "- Status: {}", status.name())?,
        }
        if let Some(v) = &a.verification {
            let mark = if v.passed { "passed" } else { "**failed**" };
            writeln!(out, "- Verification {mark}: {}", one_line(&v.summary))?;
        }
        writeln!(out)?;
    }

    writeln!(out, "## Verification")?;
    writeln!(out)?;
    if inc.verifications.is_empty() {
        writeln!(out, "Nothing was verified.")?;
    }
    for v in &inc.verifications {
        let mark = if v.passed { "✔ passed" } else { "✗ failed" };
        write!(out, "- {mark}: {}", one_line(&v.summary))?;
        let mut refs = Vec::new();
        if let Some(b) = &v.before {
            refs.push(format!("before `{}`", cell(b)));
        }
        if let Some(a) = &v.after {
            refs.push(format!("after `{}`", cell(a)));
        }
        if !refs.is_empty() {
            write!(out, " ({})", refs.join(", "))?;
        }
        writeln!(out)?;
    }
    writeln!(out)?;

    let notes: Vec<_> = inc
        .chat
        .iter()
        .filter(|c| c.from == ChatRole::Operator)
        .collect();
    if !notes.is_empty() || !inc.notes.is_empty() {
        writeln!(out, "## Operator notes")?;
        writeln!(out)?;
        for n in &inc.notes {
            writeln!(
                out,
                "- {} note by {}: {}",
                n.at.format("%H:%M:%S"),
                one_line(&n.by),
                one_line(&n.text)
            )?;
        }
        for c in notes {
            writeln!(out, "- {} {}", clock(inc.started, c.t), one_line(&c.text))?;
        }
        writeln!(out)?;
    }

    if !inc.warnings.is_empty() {
        writeln!(out, "## Warnings")?;
        writeln!(out)?;
        for w in &inc.warnings {
            writeln!(out, "- {}", one_line(w))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// What memory recalled when the session ran: the "seen before" summary, then one line per
/// past session. Nothing when the session recalled nothing (or predates memory).
fn previous_occurrences(out: &mut String, inc: &Incident) -> std::fmt::Result {
    if inc.recalled.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Previous occurrences")?;
    writeln!(out)?;
    for line in crate::model::seen_before(&inc.recalled, inc.recalled_total, inc.started) {
        writeln!(out, "- {}", one_line(&line))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| started | session | matched | verdict | actions | outcome |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    for s in &inc.recalled {
        let verdict = match s.category {
            Some(c) => format!("{c}: {}", s.root_cause),
            None => "none".into(),
        };
        let actions: Vec<String> = s
            .actions
            .iter()
            .map(|a| {
                let by = if a.decided_by.is_empty() {
                    String::new()
                } else {
                    format!(" by {}", a.decided_by.join(", "))
                };
                let v = match a.verified {
                    Some(true) => ", verified",
                    Some(false) => ", verification failed",
                    None => "",
                };
                format!("{} {} ({}{by}{v})", a.kind, a.target, a.status)
            })
            .collect();
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            s.started.format("%Y-%m-%d %H:%M"),
            cell(&s.id),
            cell(&s.matched),
            cell(&verdict),
            cell(&actions.join("; ")),
            s.outcome.map(|o| o.name()).unwrap_or("unfinished")
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The incident as JSON: a few summary fields up front, then the whole fold.
pub fn json(incident: &Incident) -> serde_json::Value {
    let diagnosis = incident.diagnosis.as_ref().map(|(c, r, conf)| {
        // Through the shortest decimal form, so 0.86f32 exports as 0.86 rather than 0.8600000143.
        let confidence = conf.to_string().parse::<f64>().unwrap_or(f64::from(*conf));
        serde_json::json!({ "category": c, "root_cause": r, "confidence": confidence })
    });
    serde_json::json!({
        "sitrep_postmortem": 1,
        "id": incident.id,
        "title": incident.title,
        "started": incident.started,
        "duration_secs": incident.now,
        "outcome": incident.outcome,
        "diagnosis": diagnosis,
        "evidence_kinds": incident.evidence_kinds(),
        "incident": serde_json::to_value(incident).unwrap_or(serde_json::Value::Null),
    })
}

/// [`json`], pretty-printed straight into `out`: the same document, without first copying the
/// incident (evidence bodies included) into a JSON tree.
pub fn write_json(out: &mut dyn std::io::Write, incident: &Incident) -> std::io::Result<()> {
    write_json_with(out, incident, TerminalSafe::default())
}

fn write_json_with(
    out: &mut dyn std::io::Write,
    incident: &Incident,
    formatter: impl serde_json::ser::Formatter,
) -> std::io::Result<()> {
    #[derive(serde::Serialize)]
    struct Diagnosis<'a> {
        category: crate::model::Category,
        confidence: f64,
        root_cause: &'a str,
    }
    // Fields in the order `json` prints them (a JSON object's keys sorted).
    #[derive(serde::Serialize)]
    struct Postmortem<'a> {
        diagnosis: Option<Diagnosis<'a>>,
        duration_secs: f64,
        evidence_kinds: Vec<&'a str>,
        id: &'a str,
        incident: &'a Incident,
        outcome: Option<Outcome>,
        sitrep_postmortem: u32,
        started: Option<DateTime<Utc>>,
        title: &'a str,
    }
    let doc = Postmortem {
        diagnosis: incident
            .diagnosis
            .as_ref()
            .map(|(category, root_cause, conf)| Diagnosis {
                category: *category,
                confidence: shortest(*conf),
                root_cause,
            }),
        duration_secs: incident.now,
        evidence_kinds: incident.evidence_kinds(),
        id: &incident.id,
        incident,
        outcome: incident.outcome,
        sitrep_postmortem: 1,
        started: incident.started,
        title: &incident.title,
    };
    let mut ser = serde_json::Serializer::with_formatter(out, formatter);
    serde::Serialize::serialize(&doc, &mut ser).map_err(std::io::Error::other)
}

/// A session folded for the JSON postmortem with its text evidence bodies left in the file: the
/// fold holds a marker in place of each body, and [`write_json_streamed`] copies the body from
/// the records that built it. Memory holds the incident's structure and one offset per body
/// record, never the bodies, so a million log lines export in a few tens of megabytes.
pub struct FileBodies {
    path: std::path::PathBuf,
    /// Starts every marker, followed by the item's position and a newline (which keeps the fold
    /// from adding one of its own when text is appended). Random per export, so no evidence
    /// text can pass for a marker.
    marker: String,
    /// Per evidence item (by position), the byte offsets of the records whose text makes its
    /// body, in order: the one that added it, then each append that reached it.
    sources: Vec<Vec<u64>>,
}

/// Fold a session file for [`write_json_streamed`].
pub fn fold_file_for_json(
    path: &std::path::Path,
) -> Result<(super::FoldedSession, FileBodies), super::SessionError> {
    use crate::model::Event;
    use std::hash::{BuildHasher, Hasher};
    let file = std::fs::File::open(path).map_err(|source| super::SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = super::Reader::new(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| e.with_path(path))?;
    let nonce = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let marker = format!("\u{FDD0}sitrep-body-{nonce:016x}-");
    let mut incident = Incident::new();
    let mut sources: Vec<Vec<u64>> = Vec::new();
    let mut records = 0;
    while let Some(record) = reader.next() {
        let at = reader.record_offset();
        let mut event = record.event;
        match &mut event {
            Event::EvidenceAdded { evidence } => {
                let i = incident.evidence.len();
                sources.resize_with(i + 1, Vec::new);
                if let EvidenceBody::Text { text, .. } = &mut evidence.body {
                    *text = format!("{marker}{i}\n");
                    sources[i].push(at);
                }
            }
            Event::EvidenceAppended { evidence_id, text } => {
                // Only an append the fold would make to a text body belongs to one.
                if let Some(i) = incident.evidence_index(evidence_id)
                    && matches!(incident.evidence[i].body, EvidenceBody::Text { .. })
                    && let Some(list) = sources.get_mut(i)
                {
                    list.push(at);
                }
                text.clear();
            }
            _ => {}
        }
        incident.apply(record.t, &event);
        records += 1;
    }
    for list in &mut sources {
        list.shrink_to_fit();
    }
    let folded = super::FoldedSession {
        header: reader.header().clone(),
        incident,
        records,
        tear: reader.tear().cloned(),
    };
    Ok((
        folded,
        FileBodies {
            path: path.to_path_buf(),
            marker,
            sources,
        },
    ))
}

/// [`write_json`] of a fold from [`fold_file_for_json`]: the same document, each text body copied
/// from the session file as it is written.
pub fn write_json_streamed(
    out: &mut dyn std::io::Write,
    incident: &Incident,
    bodies: &FileBodies,
) -> std::io::Result<()> {
    let formatter = Streamed {
        inner: TerminalSafe::default(),
        bodies,
        reader: None,
        pos: 0,
        swallow_escape: false,
    };
    write_json_with(out, incident, formatter)
}

/// The postmortem's formatter, writing a body from the file where the fold holds its marker.
struct Streamed<'a> {
    inner: TerminalSafe,
    bodies: &'a FileBodies,
    reader: Option<std::io::BufReader<std::fs::File>>,
    /// Where `reader` stands in the file.
    pos: u64,
    /// The marker's newline is the next escape serde writes: it is not part of the body.
    swallow_escape: bool,
}

impl Streamed<'_> {
    /// The text record `at` contributes to a body.
    fn text_at(&mut self, at: u64) -> std::io::Result<String> {
        use crate::model::{Event, Record};
        use std::io::BufRead;
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(std::io::BufReader::with_capacity(
                1 << 16,
                std::fs::File::open(&self.bodies.path)?,
            )),
        };
        // Relative, so a record already in the buffer is not read again.
        reader.seek_relative(at as i64 - self.pos as i64)?;
        let mut line = Vec::new();
        let n = reader.read_until(b'\n', &mut line)?;
        self.pos = at + n as u64;
        let changed = || std::io::Error::other("the session file changed while it was exported");
        let record: Record =
            serde_json::from_slice(line.trim_ascii_end()).map_err(|_| changed())?;
        match record.event {
            Event::EvidenceAdded { evidence } => match evidence.body {
                EvidenceBody::Text { text, .. } => Ok(text),
                _ => Err(changed()),
            },
            Event::EvidenceAppended { text, .. } => Ok(text),
            _ => Err(changed()),
        }
    }

    /// Write body `i`'s escaped contents, joining appends as the fold does.
    fn copy_body<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        i: usize,
    ) -> std::io::Result<()> {
        let bodies = self.bodies;
        let Some(list) = bodies.sources.get(i) else {
            return Err(std::io::Error::other("evidence body marker out of range"));
        };
        let (mut empty, mut newline_last) = (true, false);
        for (k, &at) in list.iter().enumerate() {
            let text = self.text_at(at)?;
            if k > 0 && !empty && !newline_last {
                w.write_all(b"\\n")?;
                newline_last = true;
            }
            if text.is_empty() {
                continue;
            }
            empty = false;
            newline_last = text.ends_with('\n');
            let quoted = serde_json::to_string(&text).map_err(std::io::Error::other)?;
            let inner = &quoted[1..quoted.len() - 1];
            w.write_all(crate::model::text::escape_json_controls(inner).as_bytes())?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for Streamed<'_> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if let Some(i) = fragment
            .strip_prefix(self.bodies.marker.as_str())
            .and_then(|rest| rest.parse::<usize>().ok())
        {
            self.swallow_escape = true;
            return self.copy_body(w, i);
        }
        self.inner.write_string_fragment(w, fragment)
    }
    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        if std::mem::take(&mut self.swallow_escape) {
            return Ok(());
        }
        serde_json::ser::CompactFormatter.write_char_escape(w, escape)
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.inner.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.inner.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.inner.end_object_value(w)
    }
}

/// Pretty JSON whose strings are safe to print to a terminal: the characters serde_json leaves
/// raw inside strings (DEL, C1 controls, bidi overrides) are written as `\uXXXX`, so the
/// document parses to the same values and cannot drive the reader's terminal.
#[derive(Default)]
struct TerminalSafe(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for TerminalSafe {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        writer.write_all(crate::model::text::escape_json_controls(fragment).as_bytes())
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// Through the shortest decimal form, so 0.86f32 exports as 0.86 rather than 0.8600000143.
fn shortest(conf: f32) -> f64 {
    conf.to_string().parse::<f64>().unwrap_or(f64::from(conf))
}

/// `event` with every text evidence body reduced to its line structure: one byte a line. The
/// markdown postmortem shows a text body only as its line count, so folding this instead keeps
/// a million log lines in a few megabytes and gives the same document.
pub fn markdown_input(event: crate::model::Event) -> crate::model::Event {
    use crate::model::Event;
    match event {
        Event::EvidenceAdded { mut evidence } => {
            if let EvidenceBody::Text { text, .. } = &mut evidence.body {
                *text = line_skeleton(text);
            }
            Event::EvidenceAdded { evidence }
        }
        Event::EvidenceAppended { evidence_id, text } => Event::EvidenceAppended {
            evidence_id,
            text: line_skeleton(&text),
        },
        other => other,
    }
}

/// A text with the same `lines()` count, and the same ending, as `text`, in a byte a line.
fn line_skeleton(text: &str) -> String {
    let mut out = String::new();
    let mut segments = text.split('\n').peekable();
    let mut first = true;
    while let Some(segment) = segments.next() {
        if !first {
            out.push('\n');
        }
        first = false;
        // `lines()` drops a `\r` before each newline; a line that held only that is empty.
        let content = match segments.peek() {
            Some(_) => segment.strip_suffix('\r').unwrap_or(segment),
            None => segment,
        };
        if !content.is_empty() {
            out.push('x');
        }
    }
    out
}

/// The Kubernetes clusters the session's reads named, in the order first asked.
fn clusters_read(inc: &Incident) -> Vec<&str> {
    let mut read: Vec<&str> = Vec::new();
    let named = inc
        .tools
        .iter()
        .filter(|t| t.tool.starts_with("kubernetes."))
        .filter_map(|t| t.params.get("cluster").and_then(|c| c.as_str()));
    for c in named {
        if !read.contains(&c) {
            read.push(c);
        }
    }
    read
}

fn clock(started: Option<DateTime<Utc>>, t: f64) -> String {
    // A damaged or hostile file can hold any `t`; past chrono's range the offset is shown instead.
    let at = started.filter(|_| t.is_finite()).and_then(|s| {
        Duration::try_milliseconds((t * 1000.0).round() as i64)
            .and_then(|d| s.checked_add_signed(d))
    });
    match at {
        Some(at) => at.format("%H:%M:%S").to_string(),
        None => offset(t),
    }
}

fn offset(t: f64) -> String {
    format!("+{t:.1}s")
}

fn human_duration(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "-".into();
    }
    let total = secs.round() as u64;
    match total {
        0..60 => format!("{secs:.1}s"),
        60..3600 => format!("{}m {:02}s", total / 60, total % 60),
        _ => format!("{}h {:02}m", total / 3600, (total % 3600) / 60),
    }
}

fn body_size(body: &EvidenceBody) -> String {
    match body {
        EvidenceBody::Text { language, text } => {
            format!("{} lines of {}", text.lines().count(), cell(language))
        }
        EvidenceBody::Table { rows, .. } => format!("{} rows", rows.len()),
        EvidenceBody::TimeSeries { series, .. } => format!("{} series", series.len()),
        EvidenceBody::Json { .. } => "JSON".into(),
    }
}

fn ids(list: &[String]) -> String {
    list.iter()
        .map(|e| format!("`{}`", cell(e)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Collapse line breaks so one value stays one markdown line, without control characters or
/// terminal escape sequences (a hostile alert must not rewrite the reader's terminal).
fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(sanitize)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value safe inside a table cell.
fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|").replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_incident_exports_without_panicking() {
        let md = markdown(&Incident::new());
        assert!(md.starts_with("# Postmortem: Untitled incident"));
        assert!(md.contains("No diagnosis was reached."));
        assert_eq!(json(&Incident::new())["sitrep_postmortem"], 1);
    }

    #[test]
    fn written_json_is_the_json_document() {
        use crate::model::{Category, Event, Evidence, EvidenceBody};
        let mut inc = Incident::new();
        inc.apply(
            0.5,
            &Event::EvidenceAdded {
                evidence: Evidence {
                    id: "e1".into(),
                    kind: "logs".into(),
                    title: "tail".into(),
                    source: "loki.query_range".into(),
                    call_id: None,
                    body: EvidenceBody::Text {
                        language: "log".into(),
                        text: "a\nb".into(),
                    },
                },
            },
        );
        inc.apply(
            1.0,
            &Event::Diagnosis {
                category: Category::CodeDefect,
                root_cause: "bad deploy".into(),
                confidence: 0.86,
            },
        );
        let mut out = Vec::new();
        assert!(write_json(&mut out, &inc).is_ok());
        let mut written: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
        assert_eq!(written["diagnosis"]["confidence"], 0.86);
        // Written directly, the fold's f32 keeps its shortest form; through a JSON tree it
        // widens to 0.8600000143051147. Everything else is the same document.
        assert_eq!(written["incident"]["diagnosis"][2], 0.86);
        let mut tree = json(&inc);
        written["incident"]["diagnosis"] = serde_json::Value::Null;
        tree["incident"]["diagnosis"] = serde_json::Value::Null;
        assert_eq!(written, tree);
    }

    #[test]
    fn markdown_from_line_skeletons_is_the_same_document() {
        use crate::model::{Event, Evidence};
        let texts = [
            "",
            "a",
            "a\n",
            "a\nb",
            "\n\n",
            "a\r\nb\r\n",
            "\r",
            "x\r\n\r\ny",
            "\n",
        ];
        for first in texts {
            for more in texts {
                let events = [
                    Event::EvidenceAdded {
                        evidence: Evidence {
                            id: "e1".into(),
                            kind: "logs".into(),
                            title: "tail".into(),
                            source: "loki.query_range".into(),
                            call_id: None,
                            body: EvidenceBody::Text {
                                language: "log".into(),
                                text: first.into(),
                            },
                        },
                    },
                    Event::EvidenceAppended {
                        evidence_id: "e1".into(),
                        text: more.into(),
                    },
                    Event::EvidenceAppended {
                        evidence_id: "e1".into(),
                        text: first.into(),
                    },
                ];
                let full = Incident::fold(events.iter().map(|e| (1.0, e)));
                let light: Vec<Event> = events.iter().cloned().map(markdown_input).collect();
                let light = Incident::fold(light.iter().map(|e| (1.0, e)));
                assert_eq!(markdown(&full), markdown(&light), "{first:?} + {more:?}");
            }
        }
    }

    #[test]
    fn cells_escape_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(human_duration(75.0), "1m 15s");
        assert_eq!(human_duration(7300.0), "2h 01m");
    }

    #[test]
    fn json_streamed_from_the_file_is_the_json_of_the_whole_fold() {
        use crate::model::{Event, Evidence, EvidenceBody, Record};
        let added = |id: &str, body: EvidenceBody| Event::EvidenceAdded {
            evidence: Evidence {
                id: id.into(),
                kind: "logs".into(),
                title: format!("about {id}"),
                source: "loki.query_range".into(),
                call_id: None,
                body,
            },
        };
        let text = |t: &str| EvidenceBody::Text {
            language: "log".into(),
            text: t.into(),
        };
        let append = |id: &str, t: &str| Event::EvidenceAppended {
            evidence_id: id.into(),
            text: t.into(),
        };
        let events = vec![
            added("e1", text("first\n")),
            append("e1", "second"),
            append("e1", ""),
            append(
                "e1",
                "quote \" slash \\ esc \u{1b}[31m del \u{7f} c1 \u{85} bidi \u{202e} tab\t",
            ),
            added("e2", text("")),
            append("e2", "into an empty body"),
            append("e2", "line\r\n"),
            append("nope", "lost"),
            added(
                "j",
                EvidenceBody::Json {
                    value: serde_json::json!({"a": "\u{202e}"}),
                },
            ),
            append("j", "not text"),
            added("e1", text("a second item with the same id")),
            append("e1", "goes to the first"),
            // Text that looks like a marker stays text.
            Event::Warning {
                message: "\u{FDD0}sitrep-body-0000000000000000-0\n".into(),
            },
        ];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut file = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        file.push('\n');
        for (i, event) in events.into_iter().enumerate() {
            let r = Record { t: i as f64, event };
            file.push_str(&serde_json::to_string(&r).unwrap_or_default());
            file.push('\n');
        }
        std::fs::write(&path, &file).unwrap_or_else(|e| panic!("{e}"));
        let (folded, bodies) = fold_file_for_json(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut streamed = Vec::new();
        assert!(write_json_streamed(&mut streamed, &folded.incident, &bodies).is_ok());
        let whole = crate::session::fold_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut direct = Vec::new();
        assert!(write_json(&mut direct, &whole.incident).is_ok());
        let (streamed, direct) = (
            String::from_utf8_lossy(&streamed),
            String::from_utf8_lossy(&direct),
        );
        assert_eq!(streamed, direct);
        assert!(direct.contains("goes to the first"));
        assert!(direct.contains("\\u202e"));
        // The fold held markers, not bodies.
        assert!(!format!("{:?}", folded.incident).contains("second"));
    }
}
