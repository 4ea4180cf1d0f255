//! Facts in the log: every built-in and shared case is investigated to a session file, then
//! diagnosed again from that file alone; the verdict must be the recorded one, and every evidence
//! id the diagnosis cites must resolve to an evidence item of the session.

use sitrep::agent::{self, AgentOptions, Trigger, Verdict};
use sitrep::model::{Event, Incident, RunMode};
use sitrep::session;
use sitrep::world::{World, demo};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Every case directory in `cases/` and in the shared external set.
fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = Vec::new();
    for set in [root.join("cases"), root.join("../shared/cases/opensre-eks")] {
        let Ok(entries) = std::fs::read_dir(&set) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("case.toml").is_file())
            .collect();
        found.sort();
        dirs.extend(found);
    }
    dirs
}

/// Every world to check: the case directories, then the embedded demo scenarios.
fn worlds() -> Vec<(String, World)> {
    let mut out: Vec<(String, World)> = case_dirs()
        .into_iter()
        .map(|d| {
            let w = World::from_case_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
            (d.display().to_string(), w)
        })
        .collect();
    for name in demo::names() {
        let w = demo::load(name).unwrap_or_else(|e| panic!("demo {name}: {e}"));
        out.push((format!("demo {name}"), w));
    }
    out
}

/// Investigate one world (diagnosis only) into `file` and read the file back.
async fn investigate(world: World, file: &Path) -> session::SessionLog {
    let case = world.case().cloned().expect("a case world");
    let trigger = match &case.alert {
        Some(payload) => Trigger::Alert(payload.clone()),
        None => Trigger::Problem(case.title.clone()),
    };
    let opts = AgentOptions {
        read_only: true,
        diagnosis_only: true,
        session_path: Some(file.to_path_buf()),
        mode: RunMode::Case,
        case: Some(case.id.clone()),
        approval_timeout: Some(Duration::ZERO),
        ..AgentOptions::default()
    };
    let mut handle = agent::spawn(Arc::new(world), trigger, opts);
    let drain = async { while handle.records.recv().await.is_some() {} };
    tokio::time::timeout(Duration::from_secs(60), drain)
        .await
        .expect("investigation finished in time");
    handle
        .task
        .await
        .expect("agent task")
        .expect("agent result");
    let log = session::read_file(file).expect("session file readable");
    assert!(
        log.tear.is_none(),
        "{}: torn: {:?}",
        file.display(),
        log.tear
    );
    log
}

fn events(log: &session::SessionLog) -> Vec<Event> {
    log.records.iter().map(|r| r.event.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnose_reproduces_the_recorded_verdict_of_every_builtin_and_shared_case() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runbooks = sitrep::runbook::builtin();
    let worlds = worlds();
    assert!(worlds.len() >= 12, "expected the built-in cases and demos");
    for (n, (name, world)) in worlds.into_iter().enumerate() {
        let file = dir.path().join(format!("{n}.ndjson"));
        let log = investigate(world, &file).await;
        let evs = events(&log);
        // Every evidence item a tool call produced before Diagnose carries its facts.
        let mut gathered = Vec::new();
        let mut facts = Vec::new();
        for e in &evs {
            match e {
                Event::StageStarted {
                    stage: sitrep::model::Stage::Diagnose,
                } => break,
                Event::EvidenceAdded { evidence } if evidence.call_id.is_some() => {
                    gathered.push(evidence.id.clone())
                }
                Event::Observed { evidence_id, .. } => facts.push(evidence_id.clone()),
                _ => {}
            }
        }
        assert!(!facts.is_empty(), "{name}: no facts recorded");
        assert_eq!(facts, gathered, "{name}: evidence without facts");
        let observed = facts.len();
        let re = agent::rediagnose(&evs, &runbooks)
            .unwrap_or_else(|e| panic!("{name}: cannot re-diagnose: {e}"));
        let recorded = re.recorded.clone().expect("the session recorded a verdict");
        assert_eq!(re.verdict, recorded, "{name}: re-diagnosis differs");
        assert!(re.matches_recorded());
        assert!(re.notes.is_empty(), "{name}: {:?}", re.notes);
        assert_eq!(re.facts, observed, "{name}");
    }
}

/// Everything wrong with a verdict's citations, one line each.
fn citation_problems(incident: &Incident) -> Vec<String> {
    let mut problems = Vec::new();
    let known = |id: &str| incident.evidence.iter().any(|e| e.id == id);
    let Some(verdict) = Verdict::recorded(incident) else {
        return vec!["no verdict recorded".into()];
    };
    for f in &verdict.findings {
        if f.evidence.is_empty() {
            problems.push(format!(
                "finding `{}` ({}) cites nothing",
                f.summary, f.analyzer
            ));
        }
    }
    for r in &verdict.ruled_out {
        if r.evidence.is_empty() {
            problems.push(format!(
                "ruled out `{}` without naming the evidence that ruled it out",
                r.statement
            ));
        }
    }
    let mut citations = verdict.citations();
    for a in &incident.actions {
        for id in &a.action.evidence {
            citations.push((format!("action {}", a.action.id), id.clone()));
        }
    }
    if citations.is_empty() {
        problems.push("the diagnosis cites nothing".into());
    }
    for (by, id) in &citations {
        if !known(id) {
            problems.push(format!("{by} cites {id}, which is not in the session"));
        }
    }
    // The root-cause statement is the top hypothesis', and that hypothesis cites its evidence.
    if let Some(top) = verdict.hypotheses.first() {
        if !(verdict.root_cause.contains(&top.statement)
            || top.statement.contains(&verdict.root_cause))
        {
            problems.push(format!(
                "root cause `{}` is not the top hypothesis `{}`",
                verdict.root_cause, top.statement
            ));
        }
        if top.evidence.is_empty() {
            problems.push(format!(
                "the root cause `{}` cites nothing",
                verdict.root_cause
            ));
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_citation_of_every_diagnosis_resolves_to_evidence_in_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut problems = Vec::new();
    for (n, (name, world)) in worlds().into_iter().enumerate() {
        let file = dir.path().join(format!("{n}.ndjson"));
        let log = investigate(world, &file).await;
        for p in citation_problems(&log.incident()) {
            problems.push(format!("{name}: {p}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_session_is_diagnosed_from_the_facts_before_the_tear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let world = demo::load("checkout-bad-deploy").expect("demo");
    let file = dir.path().join("whole.ndjson");
    let log = investigate(world, &file).await;
    let text = std::fs::read_to_string(&file).expect("read");
    // Tear the file in the middle of the line right after the third facts record.
    let mut seen = 0;
    let mut cut = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if seen == 3 {
            cut = Some(offset + line.len() / 2);
            break;
        }
        if line.contains("\"type\":\"observed\"") {
            seen += 1;
        }
        offset += line.len();
    }
    let cut = cut.expect("more than three facts records");
    let torn = dir.path().join("torn.ndjson");
    std::fs::write(&torn, &text.as_bytes()[..cut]).expect("write");
    let torn_log = session::read_file(&torn).expect("readable up to the tear");
    assert!(torn_log.tear.is_some());
    let re = agent::rediagnose(&events(&torn_log), &sitrep::runbook::builtin())
        .expect("diagnosable up to the tear");
    assert_eq!(re.facts, 3);
    assert!(re.recorded.is_none(), "the tear comes before Diagnose");
    // Fewer facts, so a verdict of its own, not the whole session's.
    let whole = agent::rediagnose(&events(&log), &sitrep::runbook::builtin()).expect("whole");
    assert!(whole.facts > re.facts);
}

#[test]
fn a_session_from_before_facts_were_recorded_says_it_cannot_be_rediagnosed() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson");
    let log = session::read_file(&fixture).expect("old sessions still read");
    assert!(log.incident().diagnosis.is_some());
    assert_eq!(
        agent::rediagnose(&events(&log), &sitrep::runbook::builtin()),
        Err(agent::RediagnoseError::NoFacts)
    );
    assert_eq!(
        agent::rediagnose(&events(&log)[..1], &sitrep::runbook::builtin()),
        Err(agent::RediagnoseError::NotTriaged)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_problem_session_is_rediagnosed_from_its_text_and_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("problem.ndjson");
    let world = demo::load("payments-fraud-check-down").expect("demo");
    let now = world.now();
    let opts = AgentOptions {
        read_only: true,
        diagnosis_only: true,
        session_path: Some(file.clone()),
        approval_timeout: Some(Duration::ZERO),
        ..AgentOptions::default()
    };
    let trigger = Trigger::Problem("service payments-api in namespace payments is failing".into());
    let mut handle = agent::spawn(Arc::new(world), trigger, opts);
    while handle.records.recv().await.is_some() {}
    handle.task.await.expect("task").expect("result");
    let log = session::read_file(&file).expect("readable");
    let evs = events(&log);
    let triaged_now = evs.iter().find_map(|e| match e {
        Event::Triaged { now, .. } => *now,
        _ => None,
    });
    assert_eq!(triaged_now, Some(now), "Triage records the world's clock");
    let re = agent::rediagnose(&evs, &sitrep::runbook::builtin()).expect("rediagnosable");
    assert!(re.facts > 0);
    assert_eq!(Some(re.verdict), re.recorded);
}
