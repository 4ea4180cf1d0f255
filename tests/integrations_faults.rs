//! Faults at the seam: each is one clear error within its timeout, never a panic or a hang.

mod support;

use sitrep::integrations::{Endpoint, ErrorKind, LiveTransport, Transport};
use sitrep::world::{Mode, World};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A Prometheus client whose base URL points at `base`, so each fault path is a request path.
fn prometheus_at(base: &str, timeout: Duration) -> World {
    let live = LiveTransport::new()
        .expect("client")
        .with_endpoint("prometheus", Endpoint::new(base).timeout(timeout));
    let transport: Arc<dyn Transport> = Arc::new(live);
    World::with_transport(transport, Mode::Live, "default", None)
}

#[tokio::test]
async fn a_slow_server_times_out_within_the_timeout() {
    let server = support::faults().await;
    let w = prometheus_at(&format!("{}/slow", server.url), Duration::from_millis(500));
    let started = Instant::now();
    let e = w.prometheus().rules().await.expect_err("timeout");
    let took = started.elapsed();
    assert_eq!(e.kind, ErrorKind::Timeout(Duration::from_millis(500)));
    assert_eq!(
        e.to_string(),
        "prometheus: GET /api/v1/rules: timed out after 0.5s"
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let port = support::free_port();
    let w = prometheus_at(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2));
    let started = Instant::now();
    let e = w.prometheus().rules().await.expect_err("refused");
    assert!(matches!(e.kind, ErrorKind::Connect(_)), "{e:?}");
    assert!(e.to_string().to_lowercase().contains("refused"), "{e}");
    assert!(!e.to_string().contains('\n'));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_500_carries_the_servers_message() {
    let server = support::faults().await;
    let w = prometheus_at(&format!("{}/500", server.url), Duration::from_secs(2));
    let e = w.prometheus().rules().await.expect_err("500");
    assert_eq!(e.status(), Some(500));
    assert_eq!(
        e.to_string(),
        "prometheus: GET /api/v1/rules: HTTP 500: internal failure in storage"
    );
}

#[tokio::test]
async fn malformed_json_through_a_client_is_a_decode_error() {
    let server = support::faults().await;
    let w = prometheus_at(&format!("{}/malformed", server.url), Duration::from_secs(2));
    let e = w
        .prometheus()
        .query_range("up", w.now(), w.now(), 60)
        .await
        .expect_err("malformed");
    assert!(matches!(e.kind, ErrorKind::Decode(_)), "{e:?}");
}

#[tokio::test]
async fn malformed_json_is_a_decode_error() {
    let server = support::faults().await;
    let transport = LiveTransport::new()
        .expect("client")
        .with_endpoint("prometheus", Endpoint::new(&server.url));
    let req = sitrep::integrations::Request::get("prometheus", "/malformed");
    let e = transport
        .send(&req)
        .await
        .expect("answered")
        .json(&req)
        .expect_err("malformed");
    assert!(matches!(e.kind, ErrorKind::Decode(_)), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("prometheus: GET /malformed: unexpected response: malformed JSON: EOF"),
        "{e}"
    );
}

#[tokio::test]
async fn a_50_mb_body_is_refused_not_buffered() {
    let server = support::faults().await;
    let transport = LiveTransport::new().expect("client").with_endpoint(
        "loki",
        Endpoint::new(&server.url).timeout(Duration::from_secs(20)),
    );
    for path in ["/huge", "/huge-declared"] {
        let req = sitrep::integrations::Request::get("loki", path);
        let started = Instant::now();
        let e = transport.send(&req).await.expect_err("too large");
        assert!(
            matches!(e.kind, ErrorKind::TooLarge { .. }),
            "{path}: {e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("loki: GET {path}: response larger than the 16777216 byte limit")
        );
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}

#[tokio::test]
async fn a_replay_without_a_recording_is_a_clean_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("case.toml"),
        "now = \"2026-04-18T10:47:00Z\"\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("recordings.ndjson"), "").expect("write");
    let w = World::from_case_dir(dir.path()).expect("empty case loads");
    let e = w.kubernetes().nodes().await.expect_err("no recording");
    assert!(e.is_no_recording());
    assert_eq!(
        e.to_string(),
        "kubernetes: GET /api/v1/nodes: no recording matches this request in the case"
    );
}
