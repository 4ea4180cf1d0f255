//! Every entry point picks its reasoner the same way: `auto` uses the model when `[llm]` is
//! configured, `rules` never does, and `llm` without `[llm]` exits non-zero naming the section
//! (demo, serve, investigate, eval).

#[path = "support/fake_openai.rs"]
mod fake_openai;

use fake_openai::text_stream;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn script(body: &Value) -> String {
    if body.get("tools").is_none() {
        return text_stream("chat");
    }
    let answer = json!({
        "category": "code_defect",
        "root_cause": "model: the rollout broke checkout",
        "confidence": 0.7,
        "evidence": ["ev-0"],
        "ruled_out": [],
        "actions": [],
    });
    text_stream(&format!("```json\n{answer}\n```"))
}

fn sitrep(config: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_CONFIG", config)
        .env("SITREP_DATA_DIR", data)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn exchanges(out: &Output) -> usize {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"type\":\"model_exchange\""))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_uses_the_configured_model_unless_told_rules() {
    let (base, bodies) = fake_openai::serve(script).await;
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[llm]\nprovider = \"openai\"\nbase_url = \"{base}\"\nmodel = \"fake\"\n"),
    )
    .unwrap();
    let data = tmp.path().to_path_buf();
    let (c, d) = (config.clone(), data.clone());
    let auto = tokio::task::spawn_blocking(move || {
        sitrep(
            &c,
            &d,
            &[
                "--headless",
                "--read-only",
                "demo",
                "checkout-bad-deploy",
                "--no-save",
            ],
        )
    })
    .await
    .unwrap();
    assert!(
        auto.status.success(),
        "{}",
        String::from_utf8_lossy(&auto.stderr)
    );
    assert!(exchanges(&auto) >= 1, "the demo did not ask the model");
    let asked = bodies.lock().unwrap().len();
    assert!(asked >= 1);

    let (c, d) = (config.clone(), data.clone());
    let rules = tokio::task::spawn_blocking(move || {
        sitrep(
            &c,
            &d,
            &[
                "--headless",
                "--read-only",
                "demo",
                "checkout-bad-deploy",
                "--no-save",
                "--reasoner",
                "rules",
            ],
        )
    })
    .await
    .unwrap();
    assert!(rules.status.success());
    assert_eq!(exchanges(&rules), 0);
    assert_eq!(bodies.lock().unwrap().len(), asked, "rules asked the model");
}

#[test]
fn reasoner_llm_without_the_section_fails_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let case = case.to_str().unwrap();
    for args in [
        vec![
            "--headless",
            "demo",
            "checkout-bad-deploy",
            "--reasoner",
            "llm",
        ],
        vec!["serve", "--listen", "127.0.0.1:0", "--reasoner", "llm"],
        vec![
            "--headless",
            "investigate",
            "--problem",
            "x",
            "--reasoner",
            "llm",
        ],
        vec!["eval", "--reasoner", "llm", case],
    ] {
        let out = sitrep(&config, tmp.path(), &args);
        let err = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains("[llm]"), "{args:?}: {err}");
    }
}
