//! `sitrep diagnose` of a session a model reasoned in: the model's recorded exchanges are replayed
//! through the same loop, offline (its tool calls answered from the session's own evidence), so
//! the re-derived verdict is the recorded one, model finding included, and the output says so.

#[path = "support/fake_openai.rs"]
mod fake_openai;

use fake_openai::{calls_stream, cited, text_stream, tool_results};
use serde_json::{Value, json};
use sitrep::agent::llm::Model;
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::integrations::llm::{Client, ClientConfig, Provider};
use sitrep::model::Event;
use sitrep::world::demo;
use std::sync::Arc;
use std::time::Duration;

fn script(body: &Value) -> String {
    if body.get("tools").is_none() {
        return text_stream("chat");
    }
    let results = tool_results(body);
    if results.is_empty() {
        return calls_stream(&[
            ("kubernetes__pods".into(), json!({"namespace": "shop"})),
            ("kubernetes__events".into(), json!({"namespace": "shop"})),
        ]);
    }
    let answer = json!({
        "category": "code_defect",
        "root_cause": "model: checkout-api pods crash since the rollout",
        "confidence": 0.85,
        "evidence": [cited(&results[0]), cited(&results[1])],
        "ruled_out": [{"statement": "capacity", "reason": "nodes have room", "evidence": []}],
        "actions": [],
    });
    text_stream(&format!("```json\n{answer}\n```"))
}

async fn llm_session(dir: &std::path::Path) -> std::path::PathBuf {
    let (base, _) = fake_openai::serve(script).await;
    let mut cfg = ClientConfig::new(Provider::Openai, &base, "fake-model");
    cfg.backoff = Duration::from_millis(10);
    let world = demo::load("checkout-bad-deploy").unwrap();
    let payload = world.case().and_then(|c| c.alert.clone()).unwrap();
    let path = dir.join("llm-session.ndjson");
    let opts = AgentOptions {
        model: Some(Model::new(Client::new(cfg).unwrap(), 6)),
        diagnosis_only: true,
        session_path: Some(path.clone()),
        ..AgentOptions::default()
    };
    let mut h = agent::spawn(Arc::new(world), Trigger::Alert(payload), opts);
    while let Some(r) = tokio::time::timeout(Duration::from_secs(30), h.records.recv())
        .await
        .expect("agent stalled")
    {
        if matches!(r.event, Event::SessionEnded { .. }) {
            break;
        }
    }
    let _ = h.task.await;
    path
}

#[tokio::test]
async fn an_llm_session_is_rediagnosed_from_its_recorded_exchanges() {
    let tmp = tempfile::tempdir().unwrap();
    let path = llm_session(tmp.path()).await;
    let log = sitrep::session::read_file(&path).unwrap();
    let events: Vec<Event> = log.records.iter().map(|r| r.event.clone()).collect();
    let (books, _) = sitrep::runbook::load(None);
    let re = agent::rediagnose(&events, &books).unwrap();
    assert!(
        re.reasoner.contains("model fake-model (openai)")
            && re.reasoner.contains("2 recorded exchange"),
        "{}",
        re.reasoner
    );
    assert!(re.notes.is_empty(), "{:?}", re.notes);
    let model = re
        .verdict
        .findings
        .iter()
        .find(|f| f.analyzer == "model")
        .expect("the model's finding re-derived");
    assert_eq!(model.evidence.len(), 2);
    assert!(re.verdict.root_cause.starts_with("model:"));
    assert!(re.matches_recorded(), "{:#?}", re);

    // Tampering with the recorded answer changes the re-derived verdict: it is replayed, not copied.
    let other = json!({
        "category": "resource_exhaustion",
        "root_cause": "model: checkout-api has run out of memory",
        "confidence": 0.6,
        "evidence": model.evidence,
        "ruled_out": [],
        "actions": [],
    });
    let other_raw = text_stream(&other.to_string());
    let tampered: Vec<Event> = events
        .iter()
        .map(|e| match e {
            Event::ModelExchange {
                purpose,
                step: 2,
                provider,
                model,
                request,
                raw: _,
                error,
                tokens_in,
                tokens_out,
            } if purpose == "investigate" => Event::ModelExchange {
                purpose: purpose.clone(),
                step: 2,
                provider: provider.clone(),
                model: model.clone(),
                request: request.clone(),
                raw: other_raw.clone(),
                error: error.clone(),
                tokens_in: *tokens_in,
                tokens_out: *tokens_out,
            },
            other => other.clone(),
        })
        .collect();
    let re2 = agent::rediagnose(&tampered, &books).unwrap();
    assert!(
        re2.verdict.root_cause.contains("run out of memory"),
        "{}",
        re2.verdict.root_cause
    );
    assert!(!re2.matches_recorded());

    // The command line says which reasoner it used.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["diagnose", path.to_str().unwrap()])
        .env("SITREP_DATA_DIR", tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("reasoner:   rules, then the model fake-model (openai) replayed"),
        "{text}"
    );
    assert!(text.contains("same as the verdict recorded"), "{text}");
}

#[tokio::test]
async fn a_rules_session_says_it_was_rediagnosed_by_the_rules() {
    let world = demo::load("checkout-bad-deploy").unwrap();
    let payload = world.case().and_then(|c| c.alert.clone()).unwrap();
    let opts = AgentOptions {
        diagnosis_only: true,
        ..AgentOptions::default()
    };
    let mut h = agent::spawn(Arc::new(world), Trigger::Alert(payload), opts);
    let mut events = Vec::new();
    while let Some(r) = h.records.recv().await {
        let end = matches!(r.event, Event::SessionEnded { .. });
        events.push(r.event);
        if end {
            break;
        }
    }
    let (books, _) = sitrep::runbook::load(None);
    let re = agent::rediagnose(&events, &books).unwrap();
    assert_eq!(re.reasoner, "rules");
    assert!(re.matches_recorded());
}
