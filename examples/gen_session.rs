//! Writes a large synthetic session file, the input of `scripts/bench`: a long investigation
//! whose log tails stream into evidence, with tool calls, findings and chat along the way.
//!
//! Usage: `gen_session EVENTS OUT.ndjson` (a session), or `gen_session --sessions N EVENTS DIR`
//! (N small session files in DIR, for `sitrep sessions`).

use chrono::{DateTime, Utc};
use sitrep::model::{
    Category, ChatRole, Event, Evidence, EvidenceBody, Finding, Outcome, Record, RunMode, Stage,
};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Events per tool call: the call, its evidence, its result and the log lines streamed into it.
const CYCLE: usize = 100;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, n, events, dir] if flag == "--sessions" => {
            let n: usize = n.parse()?;
            let events: usize = events.parse()?;
            std::fs::create_dir_all(dir)?;
            for i in 0..n {
                let path =
                    Path::new(dir).join(format!("20261122T{:06}Z-bench-{i}.ndjson", i % 240000));
                write_session(&path, events, i as u64)?;
            }
            Ok(())
        }
        [events, out] => write_session(Path::new(out), events.parse()?, 0),
        _ => anyhow::bail!("usage: gen_session EVENTS OUT | gen_session --sessions N EVENTS DIR"),
    }
}

fn write_session(path: &Path, events: usize, seed: u64) -> anyhow::Result<()> {
    let started: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")?.to_utc()
        + chrono::Duration::seconds(seed as i64 * 60);
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let header = sitrep::session::header(
        &format!("bench-{seed}"),
        started,
        "Synthetic load: payments-api 5xx",
    );
    serde_json::to_writer(&mut out, &header)?;
    out.write_all(b"\n")?;
    let mut t = 0.0_f64;
    let mut n = 0usize;
    let emit = |out: &mut BufWriter<std::fs::File>, t: f64, event: Event| -> anyhow::Result<()> {
        serde_json::to_writer(&mut *out, &Record { t, event })?;
        out.write_all(b"\n")?;
        Ok(())
    };
    emit(
        &mut out,
        t,
        Event::SessionStarted {
            id: format!("bench-{seed}"),
            title: "Synthetic load: payments-api 5xx".into(),
            started,
            mode: RunMode::Demo,
            alert: None,
            problem: Some("payments-api returns 5xx".into()),
            case: None,
            read_only: true,
            operator: "bench".into(),
        },
    )?;
    n += 1;
    let body_events = events.saturating_sub(2);
    let stages = Stage::ALL;
    let mut stage = 0usize;
    let mut evidence_id = String::new();
    while n < body_events + 1 {
        let i = n - 1;
        // Stages advance evenly over the session, so seeking by stage has somewhere to go.
        let due = (i * stages.len()) / body_events.max(1);
        if due >= stage && stage < stages.len() {
            if stage > 0 {
                emit(
                    &mut out,
                    t,
                    Event::StageFinished {
                        stage: stages[stage - 1],
                        summary: String::new(),
                    },
                )?;
                n += 1;
            }
            emit(
                &mut out,
                t,
                Event::StageStarted {
                    stage: stages[stage],
                },
            )?;
            n += 1;
            stage += 1;
            continue;
        }
        t += 0.01;
        let cycle = i / CYCLE;
        let call_id = format!("c{cycle}");
        match i % CYCLE {
            0 => {
                let mut params = BTreeMap::new();
                params.insert("namespace".into(), serde_json::json!("payments"));
                params.insert(
                    "query".into(),
                    serde_json::json!(format!("{{app=\"payments-api\"}} |= \"error\" #{cycle}")),
                );
                emit(
                    &mut out,
                    t,
                    Event::ToolCalled {
                        call_id,
                        tool: "loki.query_range".into(),
                        specialist: Some("logs".into()),
                        params,
                    },
                )?
            }
            1 => {
                evidence_id = format!("e{cycle}");
                emit(
                    &mut out,
                    t,
                    Event::EvidenceAdded {
                        evidence: Evidence {
                            id: evidence_id.clone(),
                            kind: "logs".into(),
                            title: format!("payments-api error logs, window {cycle}"),
                            source: "loki.query_range".into(),
                            call_id: Some(call_id),
                            body: EvidenceBody::Text {
                                language: "log".into(),
                                text: log_line(t, i),
                            },
                        },
                    },
                )?
            }
            2 => emit(
                &mut out,
                t,
                Event::ToolSucceeded {
                    call_id,
                    duration_ms: 40 + (i % 300) as u64,
                    summary: "120 lines".into(),
                },
            )?,
            50 if cycle.is_multiple_of(10) => emit(
                &mut out,
                t,
                Event::Finding {
                    finding: Finding {
                        analyzer: "error_burst".into(),
                        summary: format!("error burst in window {cycle}"),
                        detail: String::new(),
                        category: Category::DependencyFailure,
                        confidence: 0.6,
                        evidence: vec![evidence_id.clone()],
                    },
                },
            )?,
            60 | 61 => emit(
                &mut out,
                t,
                Event::ChatMessage {
                    from: if i.is_multiple_of(2) {
                        ChatRole::Operator
                    } else {
                        ChatRole::Agent
                    },
                    text: format!("looking at window {cycle}: upstream timeouts rising"),
                },
            )?,
            _ => emit(
                &mut out,
                t,
                Event::EvidenceAppended {
                    evidence_id: evidence_id.clone(),
                    text: log_line(t, i),
                },
            )?,
        }
        n += 1;
    }
    if stage > 0 {
        emit(
            &mut out,
            t,
            Event::StageFinished {
                stage: stages[stage - 1],
                summary: String::new(),
            },
        )?;
    }
    emit(
        &mut out,
        t + 0.01,
        Event::SessionEnded {
            outcome: Outcome::Diagnosed,
        },
    )?;
    out.flush()?;
    Ok(())
}

fn log_line(t: f64, i: usize) -> String {
    format!(
        "2026-11-22T09:{:02}:{:06.3}Z ERROR payments-api-7d9f8-{:05} upstream ledger timed out after 2000ms trace={i:012x}",
        (t / 60.0) as u64 % 60,
        t % 60.0,
        i % 100_000
    )
}
