//! The journal: stamps each event with seconds since start, folds it, writes it and sends it on.

use super::observe::ObservationLog;
use crate::model::{Event, Incident, Record, SessionHeader};
use crate::policy::redact::Redactor;
use crate::session::Writer;
use std::io;
use std::path::Path;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Where records are persisted: the session file, or nowhere (tests, eval without a path).
pub enum Sink {
    None,
    File(Writer),
}

impl Sink {
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Sink> {
        Ok(Sink::File(Writer::create(path, header)?))
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        match self {
            Sink::None => Ok(()),
            Sink::File(w) => w.append(record),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        match self {
            Sink::None => Ok(()),
            Sink::File(w) => w.sync(),
        }
    }
}

/// Shared by every stage and specialist (behind a mutex; never held across an await).
pub struct Journal {
    start: Instant,
    sink: Sink,
    tx: mpsc::UnboundedSender<Record>,
    /// The fold of everything emitted so far, for chat answers and stage decisions.
    pub incident: Incident,
    /// The reasoning's inputs, folded from the same events: Diagnose reads them here, so a live
    /// verdict and `sitrep diagnose` on the saved file cannot drift apart.
    pub observations: ObservationLog,
    /// The first write error, reported once as a warning; the run goes on with the channel.
    write_failed: bool,
    next_id: u64,
    /// Masks secrets in every free-text field before the event is folded, written or sent.
    redactor: Redactor,
}

impl Journal {
    pub fn new(sink: Sink, tx: mpsc::UnboundedSender<Record>) -> Journal {
        Journal {
            start: Instant::now(),
            sink,
            tx,
            incident: Incident::new(),
            observations: ObservationLog::new(),
            write_failed: false,
            next_id: 0,
            redactor: Redactor::new(),
        }
    }

    /// Masks secrets (the patterns, and these credentials' exact values) in what is emitted.
    pub fn with_redactor(mut self, redactor: Redactor) -> Journal {
        self.redactor = redactor;
        self
    }

    /// Seconds since the run started (tokio's clock, so paused-clock tests are exact).
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// A fresh id with `prefix`, unique within the session.
    pub fn next_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}-{}", self.next_id)
    }

    pub fn emit(&mut self, mut event: Event) {
        redact_event(&self.redactor, &mut event);
        let t = (self.elapsed() * 1000.0).round() / 1000.0;
        self.incident.apply(t, &event);
        self.observations.apply(&event, &self.incident);
        let record = Record { t, event };
        if let Err(e) = self.sink.append(&record) {
            self.write_failure(e);
        }
        // A closed receiver means nobody watches (the UI quit); the run still completes.
        let _ = self.tx.send(record);
    }

    /// fsync the session file: decisions are durable before anything executes.
    pub fn sync(&mut self) -> io::Result<()> {
        self.sink.sync()
    }

    fn write_failure(&mut self, e: io::Error) {
        if self.write_failed {
            return;
        }
        self.write_failed = true;
        let t = self.elapsed();
        let mut event = Event::Warning {
            message: format!("session file write failed: {e}"),
        };
        redact_event(&self.redactor, &mut event);
        self.incident.apply(t, &event);
        let _ = self.tx.send(Record { t, event });
    }
}

/// The last line of defence before the session file, the screen and stdout: every field that
/// carries free text (typed by the operator, quoted from the alert, an error message, a summary
/// built from evidence) is masked. Evidence bodies are masked where they enter, at the
/// integration boundary; actions are built from already-masked inputs and are left exactly as
/// proposed, since an approval binds to them.
fn redact_event(r: &Redactor, event: &mut Event) {
    use serde_json::Value;
    let params = |p: &mut std::collections::BTreeMap<String, Value>| {
        for v in p.values_mut() {
            r.redact_json(v);
        }
    };
    match event {
        Event::SessionStarted {
            title,
            alert,
            problem,
            ..
        } => {
            r.redact_string(title);
            if let Some(alert) = alert {
                r.redact_alert(alert);
            }
            if let Some(problem) = problem {
                r.redact_string(problem);
            }
        }
        Event::StageFinished { summary, .. }
        | Event::Triaged { summary, .. }
        | Event::ToolSucceeded { summary, .. } => r.redact_string(summary),
        Event::ToolCalled { params: p, .. } => params(p),
        Event::ToolFailed { error, .. } | Event::ActionFailed { error, .. } => {
            r.redact_string(error)
        }
        Event::EvidenceAppended { text, .. } | Event::ChatMessage { text, .. } => {
            r.redact_string(text)
        }
        Event::Finding { finding } => {
            r.redact_string(&mut finding.summary);
            r.redact_string(&mut finding.detail);
        }
        Event::Subject { objects, .. } => {
            for o in objects {
                r.redact_string(&mut o.name);
                r.redact_string(&mut o.how);
            }
        }
        Event::Symptom { symptom } => {
            r.redact_string(&mut symptom.claim);
            r.redact_string(&mut symptom.detail);
        }
        Event::Checks { checks } => {
            for c in checks {
                r.redact_string(&mut c.object);
                r.redact_string(&mut c.check);
                r.redact_string(&mut c.detail);
            }
        }
        Event::HypothesesRanked {
            hypotheses,
            ruled_out,
        } => {
            for h in hypotheses {
                r.redact_string(&mut h.statement);
            }
            for o in ruled_out {
                r.redact_string(&mut o.statement);
                r.redact_string(&mut o.reason);
            }
        }
        Event::Diagnosis { root_cause, .. } => r.redact_string(root_cause),
        Event::ApprovalDenied { reason, .. } | Event::ActionSkipped { reason, .. } => {
            r.redact_string(reason)
        }
        Event::ActionExecuted { result, .. } => r.redact_string(result),
        Event::Verified { verification } => r.redact_string(&mut verification.summary),
        Event::Report { markdown } => r.redact_string(markdown),
        Event::Warning { message } => r.redact_string(message),
        Event::Note { text, .. } => r.redact_string(text),
        // Recalled sessions were redacted when they were recorded.
        Event::Recalled { .. } => {}
        Event::CredentialDecided { reason, .. } => r.redact_string(reason),
        Event::ChatDelta { text } => r.redact_string(text),
        Event::ModelExchange {
            request,
            raw,
            error,
            ..
        } => {
            // Only the strings: key-name masking would hide the wire format's own fields
            // (`max_tokens`), which replay needs and which hold no secret.
            fn strings(r: &Redactor, v: &mut serde_json::Value) {
                match v {
                    serde_json::Value::String(s) => r.redact_string(s),
                    serde_json::Value::Array(a) => a.iter_mut().for_each(|v| strings(r, v)),
                    serde_json::Value::Object(o) => o.values_mut().for_each(|v| strings(r, v)),
                    _ => {}
                }
            }
            strings(r, request);
            // Line by line, a JSON chunk by its strings only: masking the text whole would take
            // `"prompt_tokens":100` for a token and break the stream a replay parses.
            let lines: Vec<String> = raw
                .split('\n')
                .map(|line| {
                    let (prefix, body) = match line.strip_prefix("data:") {
                        Some(rest) => ("data:", rest),
                        None => ("", line),
                    };
                    match serde_json::from_str::<serde_json::Value>(body) {
                        Ok(mut v) if v.is_object() || v.is_array() => {
                            let before = v.clone();
                            strings(r, &mut v);
                            if v == before {
                                line.to_string()
                            } else {
                                let sep = if body.starts_with(' ') { " " } else { "" };
                                format!("{prefix}{sep}{v}")
                            }
                        }
                        _ => r.redact(line).into_owned(),
                    }
                })
                .collect();
            *raw = lines.join("\n");
            if let Some(e) = error {
                r.redact_string(e);
            }
        }
        Event::Observed { facts, .. } => {
            // Facts are parsed from bodies already masked at the boundary; masking them again
            // costs a round trip through JSON and guards against a parser that un-escapes.
            if let Ok(mut v) = serde_json::to_value(&*facts)
                && r.mask_json(&mut v)
                && let Ok(masked) = serde_json::from_value(v)
            {
                *facts = masked;
            }
        }
        Event::SessionEnded { .. }
        | Event::ActionEdited { .. }
        | Event::VetoPaused { .. }
        | Event::StageStarted { .. }
        | Event::EvidenceAdded { .. }
        | Event::ActionProposed { .. }
        | Event::ApprovalRequested { .. }
        | Event::ApprovalGiven { .. }
        | Event::ApprovalExpired { .. }
        | Event::CredentialRequested { .. } => {}
    }
}
