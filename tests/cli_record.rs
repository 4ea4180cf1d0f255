//! `sitrep investigate --record DIR` against loopback fakes, then `--case DIR` offline: the same evidence.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use support::Cluster;

/// Runs the binary headless and returns the evidence it added, without the run-specific ids and
/// sorted, because specialists run concurrently and finish in any order.
fn evidence_of(args: &[&str], config: &Path, data: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "investigate", "--diagnosis-only", "--no-save"])
        .args(args)
        .env("SITREP_CONFIG", config)
        .env("SITREP_DATA_DIR", data)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("sitrep runs");
    assert!(
        out.status.success(),
        "sitrep {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut evidence: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"]["type"] == "evidence_added")
        .map(|r| {
            let mut evidence = r["event"]["evidence"].clone();
            if let Some(fields) = evidence.as_object_mut() {
                fields.remove("id");
                fields.remove("call_id");
            }
            evidence
        })
        .collect();
    evidence.sort_by_key(|v| v.to_string());
    evidence
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_live_investigation_replays_offline_to_the_same_evidence() {
    let k8s = support::kubernetes(Arc::new(Mutex::new(Cluster::payments()))).await;
    let loki = support::loki(Arc::new(Mutex::new(Vec::new()))).await;
    let github = support::github(Arc::new(Mutex::new(support::Repo::default()))).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.kubernetes]\nurl = \"{}\"\nnamespace = \"payments\"\n\
             [integrations.loki]\nurl = \"{}\"\n\
             [integrations.github]\nurl = \"{}\"\nrepo = \"acme/payments\"\n",
            k8s.url, loki.url, github.url
        ),
    )
    .expect("write config");
    let alert = tmp.path().join("alert.json");
    std::fs::write(
        &alert,
        json!({
            "version": "4", "status": "firing", "receiver": "sitrep",
            "alerts": [{"status": "firing",
                        "labels": {"alertname": "KubePodCrashLooping", "namespace": "payments",
                                   "pod": "payments-api-7f9dd8b6c4-x7gr9", "severity": "critical"},
                        "annotations": {"summary": "payments-api is restarting"}}]
        })
        .to_string(),
    )
    .expect("write alert");
    let case = tmp.path().join("recorded");
    let data = tmp.path().join("data");
    let (config_c, alert_c, case_c, data_c) =
        (config.clone(), alert.clone(), case.clone(), data.clone());
    let live = tokio::task::spawn_blocking(move || {
        evidence_of(
            &[
                "--alert",
                &alert_c.display().to_string(),
                "--record",
                &case_c.display().to_string(),
            ],
            &config_c,
            &data_c,
        )
    })
    .await
    .expect("live run");
    for kind in ["kubernetes/pods", "kubernetes/events", "logs", "changes"] {
        assert!(
            live.iter().any(|e| e["kind"] == kind),
            "the live run gathered {kind}: {live:?}"
        );
    }

    // Nothing live is left: the replay must need none of it.
    drop((k8s, loki, github));
    let (case_c, data_c) = (case.clone(), data.clone());
    let replayed = tokio::task::spawn_blocking(move || {
        evidence_of(&["--case", &case_c.display().to_string()], &config, &data_c)
    })
    .await
    .expect("replay run");
    assert_eq!(
        live, replayed,
        "the recorded case replays to the same evidence"
    );
    assert!(case.join("recordings.ndjson").exists());
    assert!(case.join("alert.json").exists());
}
