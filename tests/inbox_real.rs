//! The inbox against a real Prometheus firing a real alert into a real Alertmanager (Debian packages),
//! on free loopback ports: `sitrep alerts --json`, and a silence proposed from the inbox, approved,
//! then expired. Skipped with a message when the binaries are missing.

mod support;

use chrono::Utc;
use serde_json::Value;
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::inbox::{self, AlertState, InboxAlert, Source, Sources};
use sitrep::integrations::{Endpoint, LiveTransport, Transport};
use sitrep::model::{Command, Event, Record, RunMode};
use sitrep::world::{Mode, World};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RULES: &str = "groups:
  - name: payments
    rules:
      - alert: PaymentsHighErrorRatio
        expr: http_errors_ratio{service=\"payments-api\"} > 0.1
        labels:
          severity: critical
        annotations:
          summary: payments-api error ratio above 10%
";

fn history_end() -> i64 {
    let now = Utc::now().timestamp();
    now - now % 60 - 60
}

/// A real Prometheus whose rule fires into a real Alertmanager configured with `am_config`.
async fn firing(am_config: &str) -> (support::Proc, support::Proc) {
    let am = support::alertmanager_with(am_config)
        .await
        .expect("alertmanager starts");
    let (openmetrics, _) = support::metric_history(history_end());
    let prom = support::prometheus_alerting(&openmetrics, RULES, Some(&am.url))
        .await
        .expect("prometheus starts");
    // Wait for the alert to travel rule -> Prometheus -> Alertmanager.
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let alerts: Value = match client.get(format!("{}/api/v2/alerts", am.url)).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if alerts.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the alert never reached Alertmanager"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    (prom, am)
}

fn sitrep(config: &Path, data: &Path, args: &[&str]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_CONFIG", config)
        .env("SITREP_DATA_DIR", data)
        .stdin(Stdio::null())
        .output()
        .expect("run sitrep")
}

fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_json_lists_the_firing_alert_once_and_survives_a_dead_source() {
    if !support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]) {
        return;
    }
    let (prom, am) =
        firing("route:\n  receiver: 'null'\n  group_wait: 1s\nreceivers:\n  - name: 'null'\n")
            .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.prometheus]\nurl = \"{}\"\n[integrations.alertmanager]\nurl = \"{}\"\n",
            prom.url, am.url
        ),
    )
    .expect("config");
    let out = sitrep(&config, dir.path(), &["alerts", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = lines(&out.stdout);
    let mine: Vec<&Value> = listed
        .iter()
        .filter(|a| a["alertname"] == "PaymentsHighErrorRatio")
        .collect();
    assert_eq!(mine.len(), 1, "one alert, seen by two sources: {listed:?}");
    let a = mine[0];
    assert_eq!(a["source"], "alertmanager");
    assert_eq!(a["also_in"], serde_json::json!(["prometheus"]));
    assert_eq!(a["state"], "firing");
    assert_eq!(a["labels"]["severity"], "critical");
    assert_eq!(a["labels"]["service"], "payments-api");
    assert_eq!(a["title"], "payments-api error ratio above 10%");
    assert!(
        a["starts_at"]
            .as_str()
            .is_some_and(|s| s.ends_with('Z') || s.contains('+'))
    );
    // The fingerprint is Alertmanager's own, and the one sitrep computes for Prometheus' copy.
    let am_alerts: Value = reqwest::get(format!("{}/api/v2/alerts", am.url))
        .await
        .expect("am")
        .json()
        .await
        .expect("json");
    assert_eq!(a["fingerprint"], am_alerts[0]["fingerprint"]);

    // The human table says the same.
    let out = sitrep(
        &config,
        dir.path(),
        &["alerts", "--filter", "severity=critical"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PaymentsHighErrorRatio") && text.contains("firing"),
        "{text}"
    );
    let out = sitrep(
        &config,
        dir.path(),
        &["alerts", "--filter", "severity=warning"],
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("PaymentsHighErrorRatio"));

    // Prometheus replaced by a server that accepts connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!("http://{}", silent.local_addr().expect("addr"));
    std::fs::write(
        &config,
        format!(
            "[integrations.prometheus]\nurl = \"{silent_url}\"\ntimeout_secs = 30\n[integrations.alertmanager]\nurl = \"{}\"\n",
            am.url
        ),
    )
    .expect("config");
    let started = Instant::now();
    let out = sitrep(&config, dir.path(), &["alerts", "--json"]);
    let took = started.elapsed();
    assert!(out.status.success(), "a dead source is not a failure");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("prometheus is unavailable"), "{stderr}");
    let listed = lines(&out.stdout);
    assert!(
        listed
            .iter()
            .any(|a| a["alertname"] == "PaymentsHighErrorRatio" && a["also_in"].is_null()),
        "{listed:?}"
    );
    drop(silent);
}

fn world(am: &str) -> Arc<World> {
    let live = LiveTransport::new()
        .expect("client")
        .with_endpoint("alertmanager", Endpoint::new(am));
    let transport: Arc<dyn Transport> = Arc::new(live);
    Arc::new(World::with_transport(
        transport,
        Mode::Live,
        "payments",
        None,
    ))
}

async fn inbox_alert(sources: &Sources, name: &str) -> InboxAlert {
    let snap = sources.poll().await;
    assert!(
        snap.health.iter().all(|h| h.error.is_none()),
        "{:?}",
        snap.health
    );
    snap.alerts
        .into_iter()
        .find(|a| a.alertname == name)
        .expect("the alert is in the inbox")
}

/// Runs an investigation with `proposal`, approves it when asked, and returns the records.
async fn propose_and_approve(
    world: Arc<World>,
    alert: &InboxAlert,
    proposal: sitrep::model::Action,
    session: &Path,
) -> Vec<Record> {
    let opts = AgentOptions {
        mode: RunMode::Live,
        veto_secs: 600.0,
        session_path: Some(session.to_path_buf()),
        proposals: vec![proposal.clone()],
        operator: "oncall-alice".into(),
        ..AgentOptions::default()
    };
    let payload = inbox::payload_for(&[alert], &alert.labels);
    let mut handle = agent::spawn(world, Trigger::Alert(payload), opts);
    let mut records = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(r)) = tokio::time::timeout_at(deadline, handle.records.recv()).await {
        if let Event::ApprovalRequested {
            action_id, digest, ..
        } = &r.event
        {
            let proposed = records.iter().any(|p: &Record| {
                matches!(&p.event, Event::ActionProposed { action }
                    if &action.id == action_id && action.kind == proposal.kind && action.target == proposal.target)
            });
            if proposed {
                handle
                    .commands
                    .send(Command::Approve {
                        action_id: action_id.clone(),
                        by: None,
                        params: None,
                        digest: Some(digest.clone()),
                    })
                    .expect("send approval");
            }
        }
        records.push(r);
    }
    handle.task.await.expect("join").expect("run");
    records
}

fn executed(records: &[Record], kind: &str, target: &str) -> Option<String> {
    let id = records.iter().find_map(|r| match &r.event {
        Event::ActionProposed { action } if action.kind == kind && action.target == target => {
            Some(action.id.clone())
        }
        _ => None,
    })?;
    records.iter().find_map(|r| match &r.event {
        Event::ActionExecuted {
            action_id, result, ..
        } if *action_id == id => Some(result.clone()),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_from_the_inbox_is_approved_then_expired() {
    if !support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]) {
        return;
    }
    let (_prom, am) =
        firing("route:\n  receiver: 'null'\n  group_wait: 1s\nreceivers:\n  - name: 'null'\n")
            .await;
    let w = world(&am.url);
    let sources = Sources::new(w.clone(), vec![], Duration::from_secs(4));
    assert_eq!(sources.configured(), vec![Source::Alertmanager]);
    let alert = inbox_alert(&sources, "PaymentsHighErrorRatio").await;
    assert_eq!(alert.state, AlertState::Firing);

    let dir = tempfile::tempdir().expect("tempdir");
    let matchers = inbox::actions::common_labels(&[&alert]);
    let silence =
        inbox::actions::silence(&matchers, 30, "deploy rollback in progress", "oncall-alice")
            .expect("a silence");
    let session = dir.path().join("silence.ndjson");
    let target = silence.target.clone();
    let records = propose_and_approve(w.clone(), &alert, silence, &session).await;
    let result = executed(&records, "alertmanager.silence", &target).expect("the silence ran");
    assert!(result.contains("created for 30 minutes"), "{result}");
    // Who decided is on record, in the session file too.
    let log = sitrep::session::read_file(&session).expect("session");
    assert!(log.records.iter().any(|r| matches!(&r.event,
        Event::ApprovalGiven { by, .. } if by == "oncall-alice")));

    // Alertmanager has it, and the inbox now shows the alert as silenced by it. (Other proposals of
    // the same investigation may add their own silences; only ours is looked at.)
    let silences = w.alertmanager().silences().await.expect("silences");
    let ours = silences
        .iter()
        .find(|s| s.created_by == "oncall-alice")
        .expect("our silence exists")
        .clone();
    assert_eq!(ours.state, "active");
    assert_eq!(ours.comment, "deploy rollback in progress");
    assert!(ours.matchers.contains(&(
        "alertname".to_string(),
        "PaymentsHighErrorRatio".to_string()
    )));
    let until = ours.ends_at.expect("an end");
    let minutes = (until - Utc::now()).num_minutes();
    assert!((28..=30).contains(&minutes), "ends in {minutes} min");
    let silenced = inbox_alert(&sources, "PaymentsHighErrorRatio").await;
    assert_eq!(silenced.state, AlertState::Silenced);
    assert!(
        silenced.silenced_by.contains(&ours.id),
        "{:?}",
        silenced.silenced_by
    );

    // Expire it from the inbox: same path; Alertmanager reports it expired and no longer muting.
    let expire = inbox::actions::expire_silence(&ours.id, "oncall-alice");
    let session = dir.path().join("expire.ndjson");
    let target = expire.target.clone();
    let records = propose_and_approve(w.clone(), &silenced, expire, &session).await;
    executed(&records, "alertmanager.expire_silence", &target).expect("the expiry ran");
    let silences = w.alertmanager().silences().await.expect("silences");
    let same = silences
        .iter()
        .find(|s| s.id == ours.id)
        .expect("still listed");
    assert_eq!(same.state, "expired");
    let again = inbox_alert(&sources, "PaymentsHighErrorRatio").await;
    assert!(
        !again.silenced_by.contains(&ours.id),
        "{:?}",
        again.silenced_by
    );
}
