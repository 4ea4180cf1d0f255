//! Several Kubernetes clusters: two fake API servers, an alert labelled with one of them. Every
//! Kubernetes request goes to that cluster's server and none to the other's; evidence titles and
//! proposed actions name it; with no label the investigation says which cluster it read.

mod support;

use serde_json::json;
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::config::Config;
use sitrep::model::{Action, Event, Incident, Record, RunMode, WebhookPayload};
use sitrep::world::World;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::Cluster;

const EU_TOKEN: &str = "eu-token-3b7c1d";
const US_TOKEN: &str = "us-token-9a2e4f";

fn cluster(token: &str) -> Arc<Mutex<Cluster>> {
    let mut c = Cluster::payments();
    c.token = Some(token.to_string());
    Arc::new(Mutex::new(c))
}

fn payload(cluster_label: Option<&str>) -> WebhookPayload {
    let mut labels = json!({"alertname": "KubePodCrashLooping", "severity": "critical",
        "namespace": "payments", "deployment": "payments-api"});
    if let Some(c) = cluster_label {
        labels["cluster"] = json!(c);
    }
    let text = json!({"version": "4", "status": "firing", "alerts": [{
        "status": "firing", "labels": labels,
        "annotations": {"summary": "payments-api is crash looping"},
        "startsAt": "2026-04-18T10:40:00Z"}]})
    .to_string();
    WebhookPayload::parse(&text).expect("payload")
}

async fn run(world: Arc<World>, trigger: Trigger, cluster: Option<&str>) -> Vec<Event> {
    let opts = AgentOptions {
        mode: RunMode::Live,
        diagnosis_only: true,
        approval_timeout: Some(Duration::from_secs(5)),
        cluster: cluster.map(str::to_string),
        ..AgentOptions::default()
    };
    let mut handle = agent::spawn(world, trigger, opts);
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(r)) = tokio::time::timeout_at(deadline, handle.records.recv()).await {
        events.push(r.event);
    }
    handle.task.await.expect("join").expect("run");
    events
}

/// The session folded from `events`, as the console and the report read it.
fn folded(events: &[Event]) -> Incident {
    let mut incident = Incident::new();
    for (i, e) in events.iter().enumerate() {
        incident.apply(i as f64 * 0.01, e);
    }
    incident
}

/// The console with the approval modal of `action` open as the run proposed it, as text.
fn approval_modal(events: &[Event], action: &Action) -> String {
    use sitrep::tui::app::{AppState, Msg, update};
    let mut state = AppState::new(
        sitrep::tui::theme::Theme::builtin("default").unwrap_or_default(),
        sitrep::tui::keymap::Keymap::default(),
    );
    state.size = (160, 48);
    let asked = Event::ApprovalRequested {
        action_id: action.id.clone(),
        risk: action.risk,
        veto_secs: None,
        approvals_needed: 1,
        digest: action.digest(),
    };
    // The run as far as the proposal, then the request that opens the modal.
    let upto = events
        .iter()
        .position(|e| matches!(e, Event::ActionProposed { action: a } if a.id == action.id))
        .expect("the action was proposed");
    for (i, event) in events[..=upto].iter().cloned().chain([asked]).enumerate() {
        let t = i as f64 * 0.01;
        let _ = update(&mut state, Msg::Record(Box::new(Record { t, event })));
    }
    let mut term =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).expect("backend");
    term.draw(|f| sitrep::tui::draw(&state, f)).expect("draw");
    term.backend().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_labelled_with_a_cluster_reads_and_acts_on_that_cluster_only() {
    let (eu, us) = (cluster(EU_TOKEN), cluster(US_TOKEN));
    let eu_server = support::kubernetes(eu.clone()).await;
    let us_server = support::kubernetes(us.clone()).await;
    // SAFETY: set before any thread of this test reads the environment; no other test uses these.
    unsafe {
        std::env::set_var("SITREP_TEST_EU_TOKEN", EU_TOKEN);
        std::env::set_var("SITREP_TEST_US_TOKEN", US_TOKEN);
    }
    let text = format!(
        "[integrations.kubernetes]\n\
         [[integrations.kubernetes.clusters]]\nname = \"prod-eu\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_EU_TOKEN\"\n\
         [[integrations.kubernetes.clusters]]\nname = \"prod-us\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_US_TOKEN\"\n",
        eu_server.url, us_server.url
    );
    let config = Config::parse(&text, Path::new("test.toml")).expect("config");
    let world = Arc::new(World::live(&config).await.expect("world"));
    assert_eq!(world.clusters(), ["prod-eu", "prod-us"]);

    let events = run(
        world.clone(),
        Trigger::Alert(payload(Some("prod-us"))),
        None,
    )
    .await;
    let eu_seen = eu.lock().expect("lock").seen.clone();
    let us_seen = us.lock().expect("lock").seen.clone();
    assert!(eu_seen.is_empty(), "prod-eu was asked: {eu_seen:?}");
    assert!(us_seen.len() >= 3, "{us_seen:?}");
    let mut k8s_calls = 0;
    let mut titles = Vec::new();
    let mut actions = Vec::new();
    for e in &events {
        match e {
            Event::ToolCalled { tool, params, .. } if tool.starts_with("kubernetes.") => {
                k8s_calls += 1;
                assert_eq!(params.get("cluster"), Some(&json!("prod-us")), "{tool}");
            }
            Event::EvidenceAdded { evidence } if evidence.kind.starts_with("kubernetes/") => {
                titles.push(evidence.title.clone());
            }
            Event::ActionProposed { action } if action.kind.starts_with("kubernetes.") => {
                actions.push(action.clone());
            }
            _ => {}
        }
    }
    assert!(k8s_calls >= 3);
    assert!(!titles.is_empty());
    assert!(
        titles.iter().all(|t| t.contains("prod-us")),
        "every Kubernetes evidence title names the cluster: {titles:?}"
    );
    assert!(!actions.is_empty(), "a Kubernetes action is proposed");
    for a in &actions {
        assert_eq!(a.params.get("cluster"), Some(&json!("prod-us")), "{a:?}");
        assert!(a.operation.contains("--context prod-us"), "{}", a.operation);
    }
    // The subject record, the report and the approval modal name the cluster too.
    assert!(
        events.iter().any(|e| matches!(e,
            Event::Subject { cluster, objects } if cluster.as_deref() == Some("prod-us")
                && !objects.is_empty())),
        "the subject names its cluster"
    );
    let report = sitrep::session::export::markdown(&folded(&events));
    assert!(report.contains("| Cluster | prod-us |"), "{report}");
    assert!(report.contains("| Clusters read | prod-us |"), "{report}");
    let modal = approval_modal(&events, &actions[0]);
    assert!(modal.contains("APPROVAL REQUIRED"), "{modal}");
    assert!(
        modal.contains(&format!("{:<10} prod-us", "cluster")),
        "the modal has a cluster line: {modal}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Warning { message } if message.contains("clusters are configured"))),
        "a labelled alert needs no note"
    );

    // No label and no --context: the first cluster, and the session says so.
    us.lock().expect("lock").seen.clear();
    let events = run(world.clone(), Trigger::Alert(payload(None)), None).await;
    let note = events.iter().find_map(|e| match e {
        Event::Warning { message } if message.contains("clusters are configured") => {
            Some(message.clone())
        }
        _ => None,
    });
    let note = note.expect("the investigation says which cluster it read");
    assert!(
        note.contains("prod-eu") && note.contains("prod-us"),
        "{note}"
    );
    assert!(!eu.lock().expect("lock").seen.is_empty());
    assert!(us.lock().expect("lock").seen.is_empty());
    // The report says which cluster was read, and why only that one.
    let report = sitrep::session::export::markdown(&folded(&events));
    assert!(report.contains("| Clusters read | prod-eu |"), "{report}");
    assert!(report.contains(&note), "{report}");

    // --context beats the label.
    eu.lock().expect("lock").seen.clear();
    run(
        world,
        Trigger::Alert(payload(Some("prod-eu"))),
        Some("prod-us"),
    )
    .await;
    assert!(eu.lock().expect("lock").seen.is_empty());
    assert!(!us.lock().expect("lock").seen.is_empty());
    // Recorded, each request names its cluster, and the case replays offline as that cluster.
    let dir = tempfile::tempdir().expect("tempdir");
    let case = dir.path().join("case");
    let alert = payload(Some("prod-us"));
    let recording = World::record(&config, &case, "recorded", Some(&alert))
        .await
        .expect("record");
    let live = run(Arc::new(recording), Trigger::Alert(alert.clone()), None).await;
    let text = std::fs::read_to_string(case.join("recordings.ndjson")).expect("recordings");
    assert!(text.contains("\"integration\":\"kubernetes@prod-us\""));
    assert!(
        !text.contains("kubernetes@prod-eu") && !text.contains("\"integration\":\"kubernetes\"")
    );
    assert!(!text.contains(US_TOKEN) && !text.contains(EU_TOKEN));
    let replayed = World::from_case_dir(&case).expect("case");
    assert_eq!(replayed.clusters(), ["prod-us"]);
    let again = run(Arc::new(replayed), Trigger::Alert(alert), None).await;
    let diagnosis = |events: &[Event]| {
        events.iter().find_map(|e| match e {
            Event::Diagnosis {
                category,
                root_cause,
                ..
            } => Some((*category, root_cause.clone())),
            _ => None,
        })
    };
    assert!(diagnosis(&live).is_some());
    assert_eq!(diagnosis(&again), diagnosis(&live));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_each_cluster_on_its_own_row() {
    let (eu, us) = (cluster(EU_TOKEN), cluster(US_TOKEN));
    let eu_server = support::kubernetes(eu).await;
    let us_server = support::kubernetes(us).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.kubernetes]\ncontexts = []\n\
             [[integrations.kubernetes.clusters]]\nname = \"prod-eu\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_EU_TOKEN\"\n\
             [[integrations.kubernetes.clusters]]\nname = \"prod-us\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_US_TOKEN\"\n",
            eu_server.url, us_server.url
        ),
    )
    .expect("config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["doctor", "--json", "--read-only"])
        .env("SITREP_CONFIG", &config)
        .env("SITREP_TEST_EU_TOKEN", EU_TOKEN)
        .env("SITREP_TEST_US_TOKEN", "not-the-us-token")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("doctor");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["integration"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} row: {stdout}"))
    };
    assert_eq!(row("kubernetes.prod-eu")["status"], "ok", "{stdout}");
    let us = row("kubernetes.prod-us");
    assert_eq!(us["status"], "failed", "{us}");
    assert!(us["detail"].as_str().unwrap_or("").contains("401"), "{us}");
    // The row names the key refused: this cluster's token, by its reference.
    assert!(us.to_string().contains("SITREP_TEST_US_TOKEN"), "{us}");
    assert!(!stdout.contains("not-the-us-token"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_saved_session_its_report_and_history_name_the_cluster() {
    let (eu, us) = (cluster(EU_TOKEN), cluster(US_TOKEN));
    let eu_server = support::kubernetes(eu.clone()).await;
    let us_server = support::kubernetes(us.clone()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.kubernetes]\n\
             [[integrations.kubernetes.clusters]]\nname = \"prod-eu\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_EU_TOKEN\"\n\
             [[integrations.kubernetes.clusters]]\nname = \"prod-us\"\nserver = \"{}\"\ntoken = \"env:SITREP_TEST_US_TOKEN\"\n",
            eu_server.url, us_server.url
        ),
    )
    .expect("config");
    let alert = dir.path().join("alert.json");
    let text = json!({"version": "4", "status": "firing", "alerts": [{
        "status": "firing",
        "labels": {"alertname": "KubePodCrashLooping", "severity": "critical",
            "namespace": "payments", "deployment": "payments-api", "cluster": "prod-us"},
        "annotations": {"summary": "payments-api is crash looping"},
        "startsAt": "2026-04-18T10:40:00Z"}]});
    std::fs::write(&alert, text.to_string()).expect("alert");
    let sitrep = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
            .args(args)
            .env("SITREP_CONFIG", &config)
            .env("SITREP_DATA_DIR", dir.path())
            .env("SITREP_TEST_EU_TOKEN", EU_TOKEN)
            .env("SITREP_TEST_US_TOKEN", US_TOKEN)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run sitrep");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let alert = alert.to_string_lossy().into_owned();
    sitrep(&[
        "investigate",
        "--headless",
        "--diagnosis-only",
        "--alert",
        &alert,
    ]);
    assert!(eu.lock().expect("lock").seen.is_empty());
    assert!(!us.lock().expect("lock").seen.is_empty());
    let sessions = dir.path().join("sessions");
    let files = support::session_files(&sessions);
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read_to_string(&files[0]).expect("session");
    assert!(!saved.contains(US_TOKEN) && !saved.contains(EU_TOKEN));

    let report = sitrep(&["export", &files[0].to_string_lossy()]);
    assert!(report.contains("| Cluster | prod-us |"), "{report}");
    assert!(report.contains("| Clusters read | prod-us |"), "{report}");
    assert!(
        report.contains("(cluster prod-us)"),
        "the timeline's subject: {report}"
    );

    let sessions = sessions.to_string_lossy().into_owned();
    let history = sitrep(&["history", "--dir", &sessions]);
    assert!(
        history.contains("KubePodCrashLooping on Deployment/payments-api in cluster prod-us"),
        "{history}"
    );
    let json = sitrep(&["history", "--json", "--dir", &sessions]);
    let group: serde_json::Value =
        serde_json::from_str(json.lines().next().unwrap_or_default()).expect("history json");
    assert_eq!(group["cluster"], "prod-us", "{group}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_unnamed_cluster_is_reported_as_the_cluster_the_alert_names() {
    let only = Arc::new(Mutex::new(Cluster::payments()));
    let server = support::kubernetes(only.clone()).await;
    let text = format!("[integrations.kubernetes]\nurl = \"{}\"\n", server.url);
    let config = Config::parse(&text, Path::new("test.toml")).expect("config");
    let world = Arc::new(World::live(&config).await.expect("world"));
    assert!(world.clusters().is_empty());
    let subject_cluster = |events: &[Event]| {
        events.iter().find_map(|e| match e {
            Event::Subject { cluster, .. } => Some(cluster.clone()),
            _ => None,
        })
    };
    let events = run(
        world.clone(),
        Trigger::Alert(payload(Some("prod-us"))),
        None,
    )
    .await;
    assert!(!only.lock().expect("lock").seen.is_empty());
    assert_eq!(subject_cluster(&events), Some(Some("prod-us".into())));
    let report = sitrep::session::export::markdown(&folded(&events));
    assert!(report.contains("| Cluster | prod-us |"), "{report}");
    // Nothing names a cluster: none is claimed.
    let events = run(world, Trigger::Alert(payload(None)), None).await;
    assert_eq!(subject_cluster(&events), Some(None));
    let report = sitrep::session::export::markdown(&folded(&events));
    assert!(!report.contains("| Cluster |"), "{report}");
}
