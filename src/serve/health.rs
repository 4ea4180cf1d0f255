//! Operating the server like any service: `GET /healthz` (alive), `GET /readyz` (the store
//! reachable and migrated) and `GET /metrics` in the Prometheus text exposition format.

use super::*;
use std::fmt::Write as _;

/// What `/metrics` counts beyond what the server's state already holds.
#[derive(Default)]
pub(super) struct Metrics {
    /// Webhook deliveries by source (the route's last segments) and answer status.
    deliveries: Mutex<BTreeMap<(String, u16), u64>>,
    /// Every 503 the server answered.
    unavailable: std::sync::atomic::AtomicU64,
}

/// Counts each answer: deliveries by source and status, and every 503.
pub(super) async fn count(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let source = req
        .uri()
        .path()
        .strip_prefix("/webhook/")
        .map(str::to_string);
    let resp = next.run(req).await;
    let status = resp.status().as_u16();
    if let Some(source) = source {
        *lock(&state.metrics.deliveries)
            .entry((source, status))
            .or_default() += 1;
    }
    if status == 503 {
        state
            .metrics
            .unavailable
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    resp
}

/// The process answers: nothing else is asked.
pub(super) async fn healthz() -> Response {
    (StatusCode::OK, "ok\n").into_response()
}

/// Ready when the store (if any) answers and has this sitrep's schema; 503 otherwise.
pub(super) async fn readyz(State(state): State<AppState>) -> Response {
    let Some(store) = &state.store else {
        return (StatusCode::OK, "ready: no store\n").into_response();
    };
    match store.ready().await {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}\n")).into_response(),
    }
}

/// A label value with `\`, `"` and newlines escaped, as the exposition format wants.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(super) async fn metrics(State(state): State<AppState>) -> Response {
    let mut out = String::new();
    family(
        &mut out,
        "sitrep_serve_deliveries_total",
        "counter",
        "Webhook deliveries, by source and the status answered.",
    );
    for ((source, code), n) in lock(&state.metrics.deliveries).iter() {
        let _ = writeln!(
            out,
            "sitrep_serve_deliveries_total{{source=\"{}\",code=\"{code}\"}} {n}",
            label(source)
        );
    }
    family(
        &mut out,
        "sitrep_serve_unavailable_total",
        "counter",
        "Answers 503 (queue full, shutting down, store unreachable).",
    );
    let _ = writeln!(
        out,
        "sitrep_serve_unavailable_total {}",
        state
            .metrics
            .unavailable
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    let (queued, running, claims) = {
        let core = lock(&state.core);
        (
            core.queue.len(),
            core.running,
            core.claims.sessions().count(),
        )
    };
    family(
        &mut out,
        "sitrep_serve_queue_depth",
        "gauge",
        "Investigations waiting for a slot on this replica.",
    );
    let _ = writeln!(out, "sitrep_serve_queue_depth {queued}");
    family(
        &mut out,
        "sitrep_serve_running_investigations",
        "gauge",
        "Investigations running on this replica.",
    );
    let _ = writeln!(out, "sitrep_serve_running_investigations {running}");
    family(
        &mut out,
        "sitrep_serve_claims_held",
        "gauge",
        "Alerts this replica knows to be claimed by an investigation.",
    );
    let _ = writeln!(out, "sitrep_serve_claims_held {claims}");
    if let Some(store) = &state.store {
        let ages = store.lease_ages().await;
        family(
            &mut out,
            "sitrep_serve_store_up",
            "gauge",
            "1 when the store answered this scrape.",
        );
        let _ = writeln!(out, "sitrep_serve_store_up {}", u8::from(ages.is_ok()));
        family(
            &mut out,
            "sitrep_serve_store_round_trip_seconds",
            "gauge",
            "The last statement's round trip to the store.",
        );
        let us = store
            .round_trip_us
            .load(std::sync::atomic::Ordering::Relaxed);
        let _ = writeln!(
            out,
            "sitrep_serve_store_round_trip_seconds {}",
            us as f64 / 1e6
        );
        family(
            &mut out,
            "sitrep_serve_store_unwritten_records",
            "gauge",
            "Session records written to this replica's disk and not yet to the store.",
        );
        let _ = writeln!(
            out,
            "sitrep_serve_store_unwritten_records {}",
            store.unwritten()
        );
        family(
            &mut out,
            "sitrep_serve_lease_age_seconds",
            "gauge",
            "Seconds since each replica last renewed its lease.",
        );
        for (replica, age) in ages.unwrap_or_default() {
            let _ = writeln!(
                out,
                "sitrep_serve_lease_age_seconds{{replica=\"{}\"}} {age}",
                label(&replica)
            );
        }
    }
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}
