//! Memory at scale: writes N past sessions (default 10,000; a few alerts on a few subjects, each
//! with a subject, a verdict, an approved and verified action, a note now and then) plus one
//! damaged file, then times building the index from the files, recall at triage with the index
//! warm (what a new investigation pays), and `sitrep history`'s grouping, and prints each figure
//! beside its goal. Usage: memory_probe [DIR] [N]. `scripts/bench memory` runs it in release.

use chrono::{DateTime, Utc};
use sitrep::model::{
    Action, Alert, Category, Event, Outcome, Record, Risk, SubjectObject, Verification,
};
use sitrep::session::{history, memory};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn write_session(dir: &Path, i: usize) -> std::io::Result<()> {
    let started = DateTime::<Utc>::UNIX_EPOCH
        + chrono::Duration::days(20_000)
        + chrono::Duration::minutes(i as i64 * 7);
    let id = format!("{}-{i:08x}", started.format("%Y%m%dT%H%M%SZ"));
    let service = [
        "checkout-api",
        "payments-api",
        "search",
        "orders-db",
        "catalog",
    ][i % 5];
    let alertname = ["HighErrorRate", "KubePodCrashLooping", "HighLatency"][i % 3];
    let mut alert = Alert::default();
    alert.labels.insert("alertname".into(), alertname.into());
    alert.labels.insert("namespace".into(), "shop".into());
    alert.labels.insert("deployment".into(), service.into());
    let action = Action {
        id: "act-1".into(),
        kind: "kubernetes.rollout_undo".into(),
        target: format!("deployment/{service}"),
        params: [
            ("deployment".to_string(), serde_json::json!(service)),
            ("namespace".to_string(), serde_json::json!("shop")),
        ]
        .into_iter()
        .collect(),
        risk: Risk::High,
        rationale: "roll back the bad deploy".into(),
        operation: format!("kubectl -n shop rollout undo deployment/{service}"),
        blast_radius: String::new(),
        evidence: Vec::new(),
    };
    let mut events = vec![
        Event::SessionStarted {
            id: id.clone(),
            title: format!("{alertname}: {service}"),
            started,
            mode: Default::default(),
            alert: Some(alert),
            problem: None,
            case: None,
            read_only: false,
            operator: "alice".into(),
        },
        Event::Subject {
            objects: vec![SubjectObject {
                kind: "Deployment".into(),
                name: service.into(),
                namespace: "shop".into(),
                how: "label deployment".into(),
            }],
            cluster: None,
        },
        Event::Diagnosis {
            category: [Category::CodeDefect, Category::ResourceExhaustion][i % 2],
            root_cause: format!("regression from revision {} of {service}", i % 40),
            confidence: 0.8,
        },
        Event::ActionProposed { action },
        Event::ApprovalGiven {
            action_id: "act-1".into(),
            by: "alice".into(),
            at: started,
            via: String::new(),
            digest: String::new(),
            params: None,
        },
        Event::ActionExecuted {
            action_id: "act-1".into(),
            duration_ms: 900,
            result: "rolled back".into(),
        },
        Event::Verified {
            verification: Verification {
                action_id: Some("act-1".into()),
                passed: !i.is_multiple_of(4),
                unknown: false,
                summary: "error ratio back to 0.4%".into(),
                before: None,
                after: None,
            },
        },
    ];
    if i.is_multiple_of(10) {
        events.push(Event::Note {
            text: "it was the CDN, not us".into(),
            by: "bob".into(),
            at: started,
        });
    }
    events.push(Event::SessionEnded {
        outcome: Outcome::Resolved,
    });
    let path = dir.join(format!(
        "{}-{service}.ndjson",
        started.format("%Y%m%dT%H%M%SZ")
    ));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut out, &sitrep::session::header(&id, started, "t"))?;
    out.write_all(b"\n")?;
    for (n, event) in events.into_iter().enumerate() {
        serde_json::to_writer(
            &mut out,
            &Record {
                t: n as f64 * 30.0,
                event,
            },
        )?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sitrep-memory-probe"));
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    std::fs::create_dir_all(&dir)?;
    let have = std::fs::read_dir(&dir)?.count();
    if have < n {
        for i in 0..n {
            write_session(&dir, i)?;
        }
        std::fs::write(dir.join("damaged.ndjson"), "{\"sitrep_session\":1,\"id\"\n")?;
    }
    let _ = std::fs::remove_file(dir.join(memory::INDEX_FILE));
    let t = Instant::now();
    let cold = memory::index(&dir);
    let build = ms(t);
    // What triage pays: the index brought up to date (nothing changed), then the query.
    let mut recall_ms = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let q = memory::Query {
            exclude_id: String::new(),
            fingerprint: String::new(),
            alertname: "HighErrorRate".into(),
            subject: vec!["checkout-api".into()],
            category: None,
        };
        let warm = memory::index_for(&dir, &q);
        let (_, total) = memory::recall(&warm.sessions, &q);
        found = total;
        recall_ms.push(ms(t));
    }
    recall_ms.sort_by(f64::total_cmp);
    let mut hist_ms = Vec::new();
    let mut groups = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let warm = memory::index(&dir);
        groups = history::group(&warm.sessions, &history::Filter::default()).len();
        hist_ms.push(ms(t));
    }
    hist_ms.sort_by(f64::total_cmp);
    let verdict = |v: f64, goal: f64| if v < goal { "PASS" } else { "FAIL" };
    println!(
        "memory over {} sessions ({} skipped with a warning)",
        cold.sessions.len(),
        cold.warnings.len()
    );
    println!(
        "{:<44} {:>10}",
        "index built from the files (cold)",
        format!("{build:.0} ms")
    );
    println!(
        "{:<44} {:>10}   goal < 50 ms   {}   ({found} matched)",
        "recall at triage (index warm, median of 5)",
        format!("{:.1} ms", recall_ms[2]),
        verdict(recall_ms[2], 50.0)
    );
    println!(
        "{:<44} {:>10}   goal < 200 ms  {}   ({groups} groups)",
        "history grouping (index warm, median of 5)",
        format!("{:.1} ms", hist_ms[2]),
        verdict(hist_ms[2], 200.0)
    );
    Ok(())
}
