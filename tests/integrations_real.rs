//! The Prometheus and Alertmanager clients against the real servers (Debian packages), started on free
//! loopback ports with a known metric history; skipped with a message when the binaries are missing.

mod support;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use sitrep::integrations::{AlertFilter, Endpoint, LiveTransport, SilenceSpec, Transport};
use sitrep::world::{Mode, World};
use std::sync::Arc;

pub const RULES: &str = "groups:
  - name: payments
    rules:
      - alert: PaymentsHighErrorRatio
        expr: http_errors_ratio{service=\"payments-api\"} > 0.1
        labels:
          severity: critical
        annotations:
          summary: payments-api error ratio above 10%
      - record: payments:errors:max
        expr: max(http_errors_ratio)
";

fn world(name: &str, url: &str) -> World {
    let live = LiveTransport::new()
        .expect("client")
        .with_endpoint(name, Endpoint::new(url));
    let transport: Arc<dyn Transport> = Arc::new(live);
    World::with_transport(transport, Mode::Live, "payments", None)
}

/// The history ends a minute ago, minute-aligned, so the alert rule sees it within its lookback.
fn history_end() -> i64 {
    let now = Utc::now().timestamp();
    now - now % 60 - 60
}

#[tokio::test]
async fn prometheus_range_queries_return_the_known_history() {
    if !support::have_binaries(&["prometheus", "promtool"]) {
        return;
    }
    let end = history_end();
    let (openmetrics, points) = support::metric_history(end);
    let prom = support::prometheus(&openmetrics, RULES)
        .await
        .expect("prometheus starts");
    let w = world("prometheus", &prom.url);
    let p = w.prometheus();
    let at = |t: i64| DateTime::<Utc>::from_timestamp(t, 0).expect("timestamp");

    let series = p
        .query_range("http_errors_ratio", at(end - 3600), at(end), 60)
        .await
        .expect("query_range");
    assert_eq!(series.len(), 1);
    let s = &series[0];
    assert_eq!(s.name, "http_errors_ratio");
    assert_eq!(
        s.labels.get("service").map(String::as_str),
        Some("payments-api")
    );
    let expected: Vec<(f64, f64)> = points.iter().map(|(t, v)| (*t as f64, *v)).collect();
    assert_eq!(
        s.points, expected,
        "the range query returns exactly the history written by promtool"
    );

    let instant = p
        .query("max(http_errors_ratio)", at(end))
        .await
        .expect("query");
    assert_eq!(instant[0].points, vec![(end as f64, 0.25)]);

    let scalar = p
        .query("scalar(max(http_errors_ratio)) * 2", at(end))
        .await
        .expect("scalar");
    assert_eq!(scalar[0].points, vec![(end as f64, 0.5)]);

    let e = p.query("rate(", at(end)).await.expect_err("bad promql");
    assert_eq!(e.status(), Some(400));
    assert!(e.to_string().contains("parse error"), "{e}");

    // Rules load at start and are evaluated every second: wait for the alert to fire.
    let rules = p.rules().await.expect("rules");
    let alerting = rules
        .iter()
        .find(|r| r.rule_type == "alerting")
        .expect("alerting rule");
    assert_eq!(alerting.name, "PaymentsHighErrorRatio");
    assert_eq!(alerting.group, "payments");
    assert!(alerting.query.contains("http_errors_ratio"));
    assert_eq!(
        alerting.labels.get("severity").map(String::as_str),
        Some("critical")
    );
    assert!(
        rules
            .iter()
            .any(|r| r.rule_type == "recording" && r.name == "payments:errors:max")
    );

    let mut firing = Vec::new();
    for _ in 0..100 {
        firing = p.alerts().await.expect("alerts");
        if !firing.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let alert = firing.first().expect("the rule fires on the history");
    assert_eq!(alert.name, "PaymentsHighErrorRatio");
    assert_eq!(alert.state, "firing");
    assert_eq!(
        alert.value.as_deref().and_then(|v| v.parse::<f64>().ok()),
        Some(0.25)
    );
    assert_eq!(
        alert.annotations.get("summary").map(String::as_str),
        Some("payments-api error ratio above 10%")
    );
}

#[tokio::test]
async fn alertmanager_lists_silences_and_expires() {
    if !support::have_binaries(&["prometheus-alertmanager"]) {
        return;
    }
    let am = support::alertmanager().await.expect("alertmanager starts");
    let now = Utc::now();
    let posted = reqwest::Client::new()
        .post(format!("{}/api/v2/alerts", am.url))
        .json(&json!([{
            "labels": {"alertname": "PaymentsHighErrorRatio", "service": "payments-api", "severity": "critical"},
            "annotations": {"summary": "errors above 10%"},
            "startsAt": (now - Duration::minutes(5)).to_rfc3339(),
            "endsAt": (now + Duration::hours(1)).to_rfc3339(),
            "generatorURL": "http://prometheus/graph?g0.expr=http_errors_ratio+%3E+0.1"
        }]))
        .send()
        .await
        .expect("post alert");
    assert!(posted.status().is_success());

    let w = world("alertmanager", &am.url);
    let client = w.alertmanager();
    let mine = AlertFilter::default().label("alertname", "PaymentsHighErrorRatio");
    let alerts = client.alerts(&mine).await.expect("alerts");
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].state, "active");
    assert_eq!(
        alerts[0].labels.get("service").map(String::as_str),
        Some("payments-api")
    );
    assert!(
        client
            .alerts(&AlertFilter::default().label("alertname", "Other"))
            .await
            .expect("alerts")
            .is_empty()
    );

    let id = client
        .create_silence(&SilenceSpec {
            matchers: vec![("alertname".into(), "PaymentsHighErrorRatio".into())],
            starts_at: now,
            ends_at: now + Duration::hours(1),
            created_by: "sitrep-test".into(),
            comment: "silenced during incident response".into(),
        })
        .await
        .expect("silence");
    assert!(!id.is_empty());
    let alerts = client.alerts(&mine).await.expect("alerts");
    assert_eq!(alerts[0].state, "silenced");
    let unsilenced = AlertFilter {
        silenced: Some(false),
        ..mine.clone()
    };
    assert!(client.alerts(&unsilenced).await.expect("alerts").is_empty());

    client.expire_silence(&id).await.expect("expire");
    let alerts = client.alerts(&mine).await.expect("alerts");
    assert_eq!(alerts[0].state, "active");

    let e = client
        .expire_silence("00000000-0000-0000-0000-000000000000")
        .await
        .expect_err("unknown silence");
    assert!(e.status().is_some_and(|s| s >= 400), "{e}");
    assert!(
        e.to_string()
            .starts_with("alertmanager: DELETE /api/v2/silence/"),
        "{e}"
    );
}
