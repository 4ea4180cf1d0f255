//! The Cloud specialist end to end: an investigation of an RDS alert against moto's server (the
//! real signing client, the credential by reference approved first), against a closed port (failed
//! steps, never healthy), and OpenSRE's scenarios imported as cases and scored.

use chrono::{Duration as ChronoDuration, DurationRound, Utc};
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::integrations::aws::{AwsBackend, AwsSettings};
use sitrep::model::{Alert, AlertStatus, Category, Incident, RunMode, WebhookPayload};
use sitrep::secrets::{Decision, Keyring};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

#[path = "support/moto.rs"]
mod moto;

use moto::free_port;

const CANARY: &str = "canary-rds-secret-Hq3vL8pW2xZ7";
const KEY_ID: &str = "AKIASITREPRDS0001";

fn set_env() {
    // SAFETY: every test of this binary sets the same values before reading them.
    unsafe {
        std::env::set_var("SITREP_RDS_TEST_SECRET", CANARY);
        std::env::set_var("SITREP_RDS_TEST_KEY", KEY_ID);
    }
}

fn config(endpoint: &str) -> sitrep::config::Config {
    let text = format!(
        "[integrations.aws]\nregion = \"eu-west-1\"\nendpoint_url = \"{endpoint}\"\naccess_key_id = \"env:SITREP_RDS_TEST_KEY\"\nsecret_access_key = \"env:SITREP_RDS_TEST_SECRET\"\ntimeout_secs = 5\n"
    );
    sitrep::config::Config::parse(&text, Path::new("config.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn alert(instance: &str, name: &str, summary: &str) -> WebhookPayload {
    let a = Alert {
        status: AlertStatus::Firing,
        labels: [
            ("alertname".to_string(), name.to_string()),
            ("severity".to_string(), "critical".to_string()),
            ("DBInstanceIdentifier".to_string(), instance.to_string()),
        ]
        .into_iter()
        .collect(),
        annotations: [("summary".to_string(), summary.to_string())]
            .into_iter()
            .collect(),
        starts_at: Some(Utc::now() - ChronoDuration::minutes(10)),
        ..Alert::default()
    };
    WebhookPayload {
        version: "4".into(),
        status: AlertStatus::Firing,
        alerts: vec![a],
        ..WebhookPayload::default()
    }
}

/// Runs one investigation to its end; the incident and the session file's text.
async fn investigate(world: sitrep::world::World, payload: WebhookPayload) -> (Incident, String) {
    run(world, Trigger::Alert(payload)).await
}

/// Runs one investigation of any trigger to its end.
async fn run(world: sitrep::world::World, trigger: Trigger) -> (Incident, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let session = dir.path().join("s.ndjson");
    let opts = AgentOptions {
        read_only: true,
        diagnosis_only: true,
        session_path: Some(session.clone()),
        mode: RunMode::Live,
        approval_timeout: Some(Duration::ZERO),
        ..AgentOptions::default()
    };
    let mut handle = agent::spawn(Arc::new(world), trigger, opts);
    let mut incident = Incident::new();
    let collect = async {
        while let Some(r) = handle.records.recv().await {
            incident.apply(r.t, &r.event);
        }
    };
    if tokio::time::timeout(Duration::from_secs(120), collect)
        .await
        .is_err()
    {
        panic!("the investigation did not end");
    }
    let _ = handle.task.await;
    let text = std::fs::read_to_string(&session).unwrap_or_default();
    (incident, text)
}

fn tool_outcomes(incident: &Incident, prefix: &str) -> (usize, usize) {
    let mut ok = 0;
    let mut failed = 0;
    for c in incident.tools.iter().filter(|c| c.tool.starts_with(prefix)) {
        match &c.outcome {
            Some(Ok(_)) => ok += 1,
            Some(Err(_)) => failed += 1,
            None => {}
        }
    }
    (ok, failed)
}

#[tokio::test]
async fn an_rds_cpu_alert_is_diagnosed_from_moto_through_the_signing_client() {
    set_env();
    let Some(moto) = moto::start() else { return };
    let instance = "orders-db";
    // Set up the world moto serves: the instance, then a CPU that climbs to saturation.
    let keyring = Arc::new(Keyring::new());
    let mut settings = AwsSettings::new("eu-west-1");
    settings.endpoint_url = Some(moto.url.clone());
    settings.access_key_id = Some(KEY_ID.into());
    settings.secret_access_key = Some("env:SITREP_RDS_TEST_SECRET".into());
    let setup = AwsBackend::new(settings, keyring.clone()).unwrap_or_else(|e| panic!("{e}"));
    keyring.decide("env:SITREP_RDS_TEST_SECRET", Decision::Approved);
    let call = |service: &'static str, version: &'static str, params: Vec<(String, String)>| {
        let setup = &setup;
        async move {
            let (status, body) = setup
                .signed_query(service, version, &params)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert!((200..300).contains(&status), "{status}: {body}");
        }
    };
    let p = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    call(
        "rds",
        "2014-10-31",
        p(&[
            ("Action", "CreateDBInstance"),
            ("DBInstanceIdentifier", instance),
            ("DBInstanceClass", "db.r6g.xlarge"),
            ("Engine", "postgres"),
            ("AllocatedStorage", "100"),
            ("MasterUsername", "admin"),
            ("MasterUserPassword", "not-a-real-password-1"),
        ]),
    )
    .await;
    let now = Utc::now()
        .duration_trunc(ChronoDuration::minutes(1))
        .unwrap_or_else(|_| Utc::now());
    for i in 0..20i64 {
        let at = now - ChronoDuration::minutes(20 - i);
        let cpu = if i < 6 {
            20.0 + i as f64
        } else {
            93.0 + (i % 3) as f64
        };
        let at_text = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        for (metric, value) in [("CPUUtilization", cpu), ("DatabaseConnections", 120.0)] {
            call(
                "monitoring",
                "2010-08-01",
                p(&[
                    ("Action", "PutMetricData"),
                    ("Namespace", "AWS/RDS"),
                    ("MetricData.member.1.MetricName", metric),
                    ("MetricData.member.1.Value", &value.to_string()),
                    ("MetricData.member.1.Timestamp", &at_text),
                    (
                        "MetricData.member.1.Dimensions.member.1.Name",
                        "DBInstanceIdentifier",
                    ),
                    ("MetricData.member.1.Dimensions.member.1.Value", instance),
                ]),
            )
            .await;
        }
    }

    let world = sitrep::world::World::live(&config(&moto.url))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The key is a reference: nothing is read until the operator approves it.
    let mut asked = Vec::new();
    while let Some(r) = world.keyring().pending_for("aws") {
        world.keyring().decide(&r, Decision::Approved);
        asked.push(r);
    }
    assert!(
        asked.iter().any(|r| r == "env:SITREP_RDS_TEST_SECRET"),
        "{asked:?}"
    );
    let (incident, session) = investigate(
        world,
        alert(
            instance,
            "RDSCPUUtilizationHigh",
            "CPU above 85% on orders-db",
        ),
    )
    .await;
    let (ok, _) = tool_outcomes(&incident, "aws.");
    assert!(
        ok >= 3,
        "instances, events and metrics answered: {:?}",
        incident.tools
    );
    let (category, cause, _) = incident.diagnosis.clone().unwrap_or_default();
    assert_eq!(category, Category::ResourceExhaustion, "{cause}");
    let cause_l = cause.to_lowercase();
    assert!(cause_l.contains("cpu saturation on orders-db"), "{cause}");
    // Performance Insights is off on this instance: which query burns the CPU is a named gap.
    assert!(
        cause_l.contains("performance insights was not read"),
        "{cause}"
    );
    assert!(
        !session.contains(CANARY),
        "the secret key reached the session file"
    );
    assert!(!format!("{incident:?}").contains(CANARY));
    assert!(
        !session.contains(KEY_ID),
        "the key ID reached the session file"
    );
    let export = sitrep::session::export::markdown(&incident);
    assert!(export.contains("orders-db"));
    assert!(
        !export.contains(CANARY),
        "the secret key reached the export"
    );

    // A problem that names the instance: it is found among the instances the account lists.
    let world = sitrep::world::World::live(&config(&moto.url))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    while let Some(r) = world.keyring().pending_for("aws") {
        world.keyring().decide(&r, Decision::Approved);
    }
    let (incident, _) = run(
        world,
        Trigger::Problem("queries on orders-db are slow since ten minutes ago".into()),
    )
    .await;
    let (category, cause, _) = incident.diagnosis.clone().unwrap_or_default();
    assert_eq!(category, Category::ResourceExhaustion, "{cause}");
    assert!(
        cause.to_lowercase().contains("cpu saturation on orders-db"),
        "{cause}"
    );
}

#[tokio::test]
async fn a_closed_aws_endpoint_gives_failed_steps_and_no_healthy_verdict() {
    set_env();
    let closed = format!("http://127.0.0.1:{}", free_port());
    let world = sitrep::world::World::live(&config(&closed))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    while let Some(r) = world.keyring().pending_for("aws") {
        world.keyring().decide(&r, Decision::Approved);
    }
    let (incident, session) = investigate(
        world,
        alert(
            "ledger-db",
            "RDSFreeStorageSpaceLow",
            "Free storage low on ledger-db",
        ),
    )
    .await;
    let (_, failed) = tool_outcomes(&incident, "aws.");
    assert!(
        failed >= 1,
        "the AWS reads failed as steps: {:?}",
        incident.tools
    );
    let (category, cause, _) = incident.diagnosis.clone().unwrap_or_default();
    assert_ne!(category, Category::Healthy, "{cause}");
    assert!(!session.contains(CANARY));
}

fn shared_scenarios() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/opensre-rds");
    dir.is_dir().then_some(dir)
}

fn sitrep(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run sitrep: {e}"))
}

#[test]
fn opensre_scenarios_import_and_every_one_passes_eval() {
    let Some(src) = shared_scenarios() else {
        println!("skipped: no ../shared/opensre-rds");
        return;
    };
    let out = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut args: Vec<String> = vec!["cases".into(), "import".into(), "opensre".into()];
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&src)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    scenarios.sort();
    args.extend(scenarios.iter().map(|p| p.display().to_string()));
    args.push("--out".into());
    args.push(out.path().display().to_string());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let imported = sitrep(&argv);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    // What states the answer stays out of the case's world: the failure mode and the model answer.
    for dir in scenarios.iter().filter(|d| d.is_dir()) {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let scenario = std::fs::read_to_string(dir.join("scenario.yml")).unwrap_or_default();
        let mode = scenario
            .lines()
            .find_map(|l| l.strip_prefix("failure_mode:"))
            .map(|m| m.trim().to_string())
            .unwrap_or_default();
        let case = out.path().join(&id);
        for file in ["alert.json", "recordings.ndjson", "case.toml"] {
            let text = std::fs::read_to_string(case.join(file)).unwrap_or_default();
            assert!(!text.is_empty(), "{id}/{file} written");
            assert!(
                !text.contains("ROOT_CAUSE"),
                "{id}/{file} carries the model answer"
            );
            assert!(
                !text.contains("failure_mode"),
                "{id}/{file} names the failure mode"
            );
            // A compound mode (`replication_lag`) is the scenario's label, never RDS's own words.
            assert!(
                !mode.contains('_') || !text.contains(&mode),
                "{id}/{file} carries the failure mode {mode}"
            );
        }
    }
    let eval = sitrep(&["eval", &out.path().display().to_string()]);
    let text = String::from_utf8_lossy(&eval.stdout);
    assert!(
        eval.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&eval.stderr)
    );
    assert!(text.contains("0 failed"), "{text}");
}

#[test]
fn a_malformed_scenario_names_its_file_and_field() {
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = root.path().join("bad");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let write = |f: &str, t: &str| std::fs::write(dir.join(f), t).unwrap_or_else(|e| panic!("{e}"));
    write(
        "scenario.yml",
        "scenario_id: bad\ninstance_class: db.r6g.large\n",
    );
    write(
        "alert.json",
        r#"{"title": "x", "state": "alerting", "commonLabels": {"alertname": "RDSCPUUtilizationHigh"}, "commonAnnotations": {"db_instance_identifier": "db1"}}"#,
    );
    write(
        "aws_cloudwatch_metrics.json",
        r#"{"metric_data_results": [{"metric_name": "CPUUtilization", "dimensions": [{"Name": "DBInstanceIdentifier", "Value": "db1"}], "timestamps": ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"], "values": [10]}]}"#,
    );
    let out = root.path().join("out");
    let r = sitrep(&[
        "cases",
        "import",
        "opensre",
        &dir.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(
            "aws_cloudwatch_metrics.json: metric_data_results[0].values: 1 values for 2 timestamps"
        ),
        "{err}"
    );
}
