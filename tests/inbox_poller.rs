//! The inbox poller over a transport whose Prometheus goes down after one answer: the source is shown
//! down with a failure count, its last alerts stay, and it is retried later and later (backoff) while
//! Alertmanager keeps its own interval.

use serde_json::json;
use sitrep::inbox::sources::Poller;
use sitrep::inbox::{Backoff, Source, Sources};
use sitrep::integrations::{
    Body, BoxFuture, ErrorKind, IntegrationError, Request, Response, Transport,
};
use sitrep::world::{Mode, World};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Flaky {
    prometheus_calls: AtomicUsize,
    alertmanager_calls: AtomicUsize,
}

impl Transport for Flaky {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            match req.integration.as_str() {
                "prometheus" => {
                    let n = self.prometheus_calls.fetch_add(1, Ordering::SeqCst);
                    if n > 0 {
                        return Err(req.error(ErrorKind::Connect("connection refused".into())));
                    }
                    Ok(Response {
                        status: 200,
                        body: Body::Json(json!({"status": "success", "data": {"alerts": [
                            {"labels": {"alertname": "HighLatency", "severity": "warning"},
                             "annotations": {}, "state": "firing",
                             "activeAt": "2026-11-25T09:00:00Z", "value": "1.5e+00"}]}})),
                    })
                }
                "alertmanager" => {
                    self.alertmanager_calls.fetch_add(1, Ordering::SeqCst);
                    Ok(Response {
                        status: 200,
                        body: Body::Json(json!([])),
                    })
                }
                _ => Err(req.error(ErrorKind::NotConfigured)),
            }
        })
    }

    fn has(&self, integration: &str) -> bool {
        matches!(integration, "prometheus" | "alertmanager")
    }
}

#[tokio::test]
async fn a_failing_source_keeps_its_last_alerts_and_backs_off() {
    let flaky = Arc::new(Flaky::default());
    let transport: Arc<dyn Transport> = flaky.clone();
    let world = Arc::new(World::with_transport(
        transport,
        Mode::Live,
        "default",
        None,
    ));
    let sources = Sources::new(world, vec![], Duration::from_secs(2));
    let interval = Duration::from_millis(500);
    let mut poller = Poller::new(
        sources,
        Backoff {
            interval,
            max: Duration::from_secs(60),
        },
    );

    let first = poller.poll_due().await;
    assert_eq!(first.alerts.len(), 1);
    assert!(first.health.iter().all(|h| h.error.is_none()));

    tokio::time::sleep(interval).await;
    let second = poller.poll_due().await;
    let prom = second
        .health
        .iter()
        .find(|h| h.source == Source::Prometheus)
        .expect("prometheus health");
    assert!(
        prom.error
            .as_deref()
            .is_some_and(|e| e.contains("connection refused"))
    );
    assert_eq!(prom.failures, 1);
    assert_eq!(
        second.alerts.len(),
        1,
        "the last answer stands while the source is down"
    );
    assert_eq!(second.alerts[0].alertname, "HighLatency");

    // After a failure Prometheus waits twice the interval; Alertmanager is due again first.
    let due = poller.next_due();
    let wait = due.saturating_duration_since(Instant::now());
    assert!(wait <= interval, "{wait:?}");
    tokio::time::sleep(wait).await;
    let before = flaky.prometheus_calls.load(Ordering::SeqCst);
    let _ = poller.poll_due().await;
    assert_eq!(
        flaky.prometheus_calls.load(Ordering::SeqCst),
        before,
        "prometheus is backing off"
    );
    assert_eq!(flaky.alertmanager_calls.load(Ordering::SeqCst), 3);
    tokio::time::sleep(2 * interval).await;
    let third = poller.poll_due().await;
    let prom = third
        .health
        .iter()
        .find(|h| h.source == Source::Prometheus)
        .expect("prometheus health");
    assert_eq!(prom.failures, 2);
    assert_eq!(flaky.prometheus_calls.load(Ordering::SeqCst), before + 1);
}
