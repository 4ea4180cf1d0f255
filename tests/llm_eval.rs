//! `sitrep eval --reasoner llm DIR` with no `[llm]`: each case answers from its own recorded
//! exchanges (`llm.ndjson`), offline, and the output reports per case the steps and tokens in/out,
//! then the pass rate and the totals.

#[path = "support/fake_openai.rs"]
mod fake_openai;

use fake_openai::{calls_stream, cited, text_stream, tool_results};
use serde_json::{Value, json};
use sitrep::agent::llm::{Model, RECORDED_FILE};
use sitrep::agent::{self, AgentOptions};
use sitrep::integrations::llm::{Client, ClientConfig, Provider};
use sitrep::model::Event;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn script(body: &Value) -> String {
    if body.get("tools").is_none() {
        return text_stream("chat");
    }
    let results = tool_results(body);
    if results.is_empty() {
        return calls_stream(&[("kubernetes__pods".into(), json!({"namespace": "shop"}))]);
    }
    let answer = json!({
        "category": "code_defect",
        "root_cause": "model: the checkout-api rollout introduced a crash",
        "confidence": 0.8,
        "evidence": [cited(&results[0])],
        "ruled_out": [],
        "actions": [],
    });
    text_stream(&format!("```json\n{answer}\n```"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[tokio::test]
async fn eval_with_recorded_exchanges_reports_steps_tokens_and_pass_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    let case = set.join("checkout-bad-deploy");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy"),
        &case,
    );
    // Record the model's exchanges into the case, as `investigate --record` does.
    let (base, bodies) = fake_openai::serve(script).await;
    let mut cfg = ClientConfig::new(Provider::Openai, &base, "fake");
    cfg.backoff = Duration::from_millis(10);
    cfg.record = Some(case.join(RECORDED_FILE));
    let world = sitrep::world::World::from_case_dir(&case).unwrap();
    let payload = world.case().and_then(|c| c.alert.clone()).unwrap();
    let opts = AgentOptions {
        model: Some(Model::new(Client::new(cfg).unwrap(), 6)),
        diagnosis_only: true,
        ..AgentOptions::default()
    };
    let mut h = agent::spawn(Arc::new(world), agent::Trigger::Alert(payload), opts);
    while let Some(r) = h.records.recv().await {
        if matches!(r.event, Event::SessionEnded { .. }) {
            break;
        }
    }
    let sent = bodies.lock().unwrap().len();
    assert_eq!(sent, 2);

    let config = tmp.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["eval", "--reasoner", "llm", set.to_str().unwrap()])
        .env("SITREP_CONFIG", &config)
        .env("SITREP_DATA_DIR", tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("model steps 2 tokens 200/20"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("pass rate "), "{text}");
    assert!(
        text.contains("model steps 2 tokens in/out 200/20 in all"),
        "{text}"
    );
    assert_eq!(bodies.lock().unwrap().len(), sent, "eval sent a request");
    // Passing or not follows the rubric; the exit status says which.
    let passed = text.contains("1 passed, 0 failed");
    assert_eq!(out.status.success(), passed, "{text}");
}
