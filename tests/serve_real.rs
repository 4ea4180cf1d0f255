//! A real Prometheus fires a real alert into a real Alertmanager whose webhook receiver is `sitrep serve`
//! (the binary, bearer token on): exactly one investigation starts however often Alertmanager repeats
//! the notification, and its session file appears. Skipped with a message when the binaries are missing.

mod support;

use chrono::Utc;
use serde_json::Value;
use std::time::{Duration, Instant};
use support::{session_files, sitrep_serve, terminate, wait_for_sessions};

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

const TOKEN: &str = "am-to-sitrep-token-81c2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alertmanager_webhooks_start_exactly_one_investigation() {
    if !support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]) {
        return;
    }
    let port = support::free_port();
    let hook = format!("http://127.0.0.1:{port}/webhook/alertmanager");
    let am = support::alertmanager_with(&support::webhook_config(&hook, Some(TOKEN)))
        .await
        .expect("alertmanager starts");
    let now = Utc::now().timestamp();
    let (openmetrics, _) = support::metric_history(now - now % 60 - 60);
    let prom = support::prometheus_alerting(&openmetrics, RULES, Some(&am.url))
        .await
        .expect("prometheus starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[integrations.prometheus]\nurl = \"{}\"\n[integrations.alertmanager]\nurl = \"{}\"\n[policy]\nveto_secs = 600\n",
        prom.url, am.url
    );
    let mut served = sitrep_serve(
        port,
        dir.path(),
        &config,
        &["--token-env", "SITREP_SERVE_REAL_TOKEN"],
        &[("SITREP_SERVE_REAL_TOKEN", TOKEN)],
    )
    .await;

    let files = wait_for_sessions(&served.sessions, 1).await;
    assert_eq!(files.len(), 1);

    // Alertmanager repeats the group every 2 s and Prometheus re-sends every second: wait for repeats.
    let http = reqwest::Client::new();
    let api = |path: &str| {
        http.get(format!("{}{path}", served.url))
            .header("Authorization", format!("Bearer {TOKEN}"))
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    let alerts: Value = loop {
        let v: Value = api("/api/alerts")
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        if v["webhook_deliveries"].as_u64().unwrap_or(0) >= 3 {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "Alertmanager never repeated: {v}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        session_files(&served.sessions).len(),
        1,
        "repeats start nothing"
    );
    let sessions: Value = api("/api/sessions")
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let list = sessions["sessions"].as_array().expect("sessions");
    assert_eq!(list.len(), 1, "{sessions}");
    let id = list[0]["id"].as_str().expect("id").to_string();
    assert!(
        list[0]["title"]
            .as_str()
            .is_some_and(|t| t.contains("PaymentsHighErrorRatio")),
        "{sessions}"
    );
    // The alert list (polled from both sources and received by webhook) names the session.
    let mine: Vec<&Value> = alerts["alerts"]
        .as_array()
        .expect("alerts")
        .iter()
        .filter(|a| a["alertname"] == "PaymentsHighErrorRatio")
        .collect();
    assert_eq!(mine.len(), 1, "{alerts}");
    assert_eq!(mine[0]["session"], id.as_str());
    // The inbox finds the running session from the alert it started from.
    let fp = mine[0]["fingerprint"].as_str().expect("fingerprint");
    let found = sitrep::inbox::sessions::by_fingerprint(&served.sessions);
    let s = found
        .get(fp)
        .expect("the session is known by the alert's fingerprint");
    assert_eq!(s.path, files[0]);

    // The session is an ordinary one: it started from the alert and gathered from Prometheus.
    let log = sitrep::session::read_file(&files[0]).expect("session");
    let started = log.records.iter().find_map(|r| match &r.event {
        sitrep::model::Event::SessionStarted { alert, .. } => alert.clone(),
        _ => None,
    });
    assert_eq!(
        started.as_ref().map(|a| a.name().to_string()).as_deref(),
        Some("PaymentsHighErrorRatio")
    );
    assert_eq!(terminate(&mut served).code(), Some(0));
    drop(prom);
}

/// Issue 13, done-when: with `--token-env` set, Alertmanager's own deliveries carrying a wrong
/// token get 401 (Alertmanager counts them as failed notifications) and start nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alertmanager_with_the_wrong_token_is_refused_and_starts_nothing() {
    if !support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]) {
        return;
    }
    let port = support::free_port();
    let hook = format!("http://127.0.0.1:{port}/webhook/alertmanager");
    let am = support::alertmanager_with(&support::webhook_config(&hook, Some("not-the-token")))
        .await
        .expect("alertmanager starts");
    let now = Utc::now().timestamp();
    let (openmetrics, _) = support::metric_history(now - now % 60 - 60);
    let prom = support::prometheus_alerting(&openmetrics, RULES, Some(&am.url))
        .await
        .expect("prometheus starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut served = sitrep_serve(
        port,
        dir.path(),
        "",
        &["--token-env", "SITREP_SERVE_REAL_TOKEN"],
        &[("SITREP_SERVE_REAL_TOKEN", TOKEN)],
    )
    .await;
    // Alertmanager's own count of webhook notifications that failed (sitrep answered 401).
    let http = reqwest::Client::new();
    let failed = || async {
        let text = http
            .get(format!("{}/metrics", am.url))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        text.lines()
            .filter(|l| {
                l.starts_with("alertmanager_notifications_failed_total")
                    && l.contains("integration=\"webhook\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    while failed().await < 2.0 {
        assert!(
            Instant::now() < deadline,
            "Alertmanager never tried to deliver"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        session_files(&served.sessions).is_empty(),
        "nothing started"
    );
    let alerts: Value = http
        .get(format!("{}/api/alerts", served.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(alerts["webhook_deliveries"], 0, "{alerts}");
    assert_eq!(terminate(&mut served).code(), Some(0));
    drop(prom);
}
