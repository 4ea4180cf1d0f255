//! End to end in tmux: bare `sitrep` with a real Alertmanager configured opens the inbox, `enter`
//! investigates the firing alert in the same terminal, quitting comes back to the inbox with the
//! alert marked as under investigation; and with nothing configured it says how to configure.

mod support;

use chrono::{Duration as D, Utc};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::tmux::{self, Tmux};

const PROMPT: &str = "inbox-e2e$";

fn start_shell(tag: &str, dir: &Path) -> Tmux {
    tmux::start_shell(
        format!("sitrep-inbox-{tag}-{}", std::process::id()),
        PROMPT,
        &[("SITREP_DATA_DIR", dir.join("data").display().to_string())],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_in_the_inbox_investigates_the_alert() {
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    if !support::have_binaries(&["prometheus-alertmanager"]) {
        return;
    }
    let am = support::alertmanager().await.expect("alertmanager starts");
    let now = Utc::now();
    let posted = reqwest::Client::new()
        .post(format!("{}/api/v2/alerts", am.url))
        .json(&json!([{
            "labels": {"alertname": "CheckoutErrorBurst", "service": "checkout-api", "severity": "critical", "namespace": "shop"},
            "annotations": {"summary": "checkout 5xx above 5%"},
            "startsAt": (now - D::minutes(7)).to_rfc3339(),
            "endsAt": (now + D::hours(1)).to_rfc3339(),
        }]))
        .send()
        .await
        .expect("post alert");
    assert!(posted.status().is_success());

    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.alertmanager]\nurl = \"{}\"\n[inbox]\nbell = false\n",
            am.url
        ),
    )
    .expect("config");
    let bin = env!("CARGO_BIN_EXE_sitrep");
    let tmux = start_shell("enter", dir.path());
    tmux.keys(&[
        &format!("SITREP_CONFIG={} {bin}", config.display()),
        "Enter",
    ]);
    let screen = tmux.wait_for("the inbox with the alert", Duration::from_secs(30), |s| {
        s.contains("sitrep inbox") && s.contains("CheckoutErrorBurst")
    });
    assert!(screen.contains("1 firing"), "{screen}");
    assert!(screen.contains("alertmanager 1"), "{screen}");

    // The group header is selected: enter investigates it in the same terminal.
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the investigation", Duration::from_secs(30), |s| {
        s.contains("timeline")
            && s.lines()
                .next()
                .is_some_and(|l| l.contains("CheckoutErrorBurst"))
    });
    assert!(!screen.contains("sitrep inbox"), "{screen}");
    assert!(
        !screen.contains(PROMPT),
        "still inside the console: {screen}"
    );

    // Quitting the investigation comes back to the inbox, which now shows its session.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the inbox again", Duration::from_secs(30), |s| {
        s.contains("sitrep inbox") && s.contains("▶")
    });
    assert!(screen.contains("CheckoutErrorBurst"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(15), |s| {
        let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        last.starts_with(PROMPT) && !s.contains("sitrep inbox")
    });
    let saved = support::session_files(&dir.path().join("data").join("sessions")).len();
    assert_eq!(saved, 1, "one investigation, saved as a session");
}

#[test]
fn bare_sitrep_without_sources_says_how_to_configure() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("c.toml"), "").expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .env("SITREP_CONFIG", dir.path().join("c.toml"))
        .env("SITREP_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[integrations.alertmanager]"), "{err}");
    assert!(err.contains("sitrep demo"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["alerts"])
        .env("SITREP_CONFIG", dir.path().join("c.toml"))
        .output()
        .expect("run");
    assert!(
        !out.status.success(),
        "listing alerts with no source is an error"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("sitrep demo"));
}

#[test]
fn without_sources_a_terminal_is_offered_the_demo() {
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let tmux = start_shell("offer", dir.path());
    tmux.keys(&[
        &format!(
            "SITREP_CONFIG={} {}",
            config.display(),
            env!("CARGO_BIN_EXE_sitrep")
        ),
        "Enter",
    ]);
    let screen = tmux.wait_for("the offer", Duration::from_secs(20), |s| {
        s.contains("Open the demo now? [y/N]")
    });
    assert!(screen.contains("[integrations.alertmanager]"), "{screen}");
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("the demo chooser", Duration::from_secs(20), |s| {
        s.contains("choose a scenario")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the shell", Duration::from_secs(15), |s| {
        let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        last.starts_with(PROMPT) && !s.contains("choose a scenario")
    });
}
