//! Datadog against a loopback fake speaking its documented API (`DD-API-KEY` and
//! `DD-APPLICATION-KEY` headers; `/api/v1/query`, `/api/v1/monitor`, `/api/v1/events`,
//! `/api/v2/logs/events/search` paged by cursor; 429 with `X-RateLimit-Reset`): the client reads
//! every tool, waits out one rate limit, the inbox lists paging monitors, a recorded investigation
//! keeps the keys out, `sitrep serve` takes webhooks only with the shared secret, `doctor` names a
//! bad key, and a world told by Datadog reaches the verdicts one told by Prometheus and Loki does.

mod support;

use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sitrep::config::Config;
use sitrep::eval::{self, EvalOptions};
use sitrep::inbox::{Source, Sources};
use sitrep::world::World;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{session_files, sitrep_serve, terminate, wait_for_sessions};

const API_KEY: &str = "dd-api-key-0a1b2c3d4e5f";
const APP_KEY: &str = "dd-app-key-9f8e7d6c5b4a";
const SECRET: &str = "dd-webhook-shared-secret-77";

#[derive(Default)]
struct Fake {
    monitors: Vec<Value>,
    /// Series every query answers, with the query's own expression.
    series: Vec<Value>,
    events: Vec<Value>,
    /// Log events, newest first.
    logs: Vec<Value>,
    /// 429s still to answer before a query succeeds, and the reset they announce.
    throttle: u32,
    reset: String,
    /// 503s still to answer before a query succeeds.
    unavailable: u32,
    /// Every request: method, path, query and whether both keys were right.
    seen: Vec<(String, String, BTreeMap<String, String>, bool)>,
    /// Cursors logs searches sent.
    cursors: Vec<Option<String>>,
}

type Shared = Arc<Mutex<Fake>>;

fn pairs(q: Option<String>) -> BTreeMap<String, String> {
    let url = reqwest::Url::parse(&format!("http://x/?{}", q.unwrap_or_default())).expect("query");
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn dd_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"errors": [message]}))).into_response()
}

/// Records the request; the keys' check as the API makes it (403 `Forbidden` for either).
fn check(
    s: &Shared,
    h: &HeaderMap,
    method: &str,
    path: &str,
    q: &BTreeMap<String, String>,
) -> Option<Response> {
    let key = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let api_ok = key("dd-api-key") == API_KEY;
    let app_ok = key("dd-application-key") == APP_KEY;
    let needs_app = path != "/api/v1/validate";
    let ok = api_ok && (app_ok || !needs_app);
    s.lock()
        .expect("lock")
        .seen
        .push((method.into(), path.into(), q.clone(), ok));
    (!ok).then(|| dd_error(StatusCode::FORBIDDEN, "Forbidden"))
}

async fn validate(State(s): State<Shared>, h: HeaderMap) -> Response {
    if let Some(r) = check(&s, &h, "GET", "/api/v1/validate", &BTreeMap::new()) {
        return r;
    }
    axum::Json(json!({"valid": true})).into_response()
}

async fn query(State(s): State<Shared>, h: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    if let Some(r) = check(&s, &h, "GET", "/api/v1/query", &q) {
        return r;
    }
    let mut fake = s.lock().expect("lock");
    if fake.throttle > 0 {
        fake.throttle -= 1;
        let reset = fake.reset.clone();
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [
                ("X-RateLimit-Limit", "100".to_string()),
                ("X-RateLimit-Period", "10".to_string()),
                ("X-RateLimit-Remaining", "0".to_string()),
                ("X-RateLimit-Reset", reset),
            ],
            axum::Json(json!({"errors": ["Too many requests"]})),
        )
            .into_response();
    }
    if fake.unavailable > 0 {
        fake.unavailable -= 1;
        return dd_error(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable");
    }
    let (Some(from), Some(to), Some(expr)) = (q.get("from"), q.get("to"), q.get("query")) else {
        return dd_error(StatusCode::BAD_REQUEST, "from, to and query are required");
    };
    let (Ok(from), Ok(to)) = (from.parse::<i64>(), to.parse::<i64>()) else {
        return dd_error(StatusCode::BAD_REQUEST, "from and to are POSIX seconds");
    };
    let series: Vec<Value> = fake
        .series
        .iter()
        .map(|x| {
            let mut x = x.clone();
            x["expression"] = json!(expr);
            x
        })
        .collect();
    axum::Json(
        json!({"status": "ok", "res_type": "time_series", "query": expr,
        "from_date": from * 1000, "to_date": to * 1000, "series": series, "message": ""}),
    )
    .into_response()
}

fn has_tags(item: &Value, tags: &str) -> bool {
    let own: Vec<&str> = item["tags"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    tags.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .all(|t| own.contains(&t))
}

async fn monitors(State(s): State<Shared>, h: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    if let Some(r) = check(&s, &h, "GET", "/api/v1/monitor", &q) {
        return r;
    }
    let fake = s.lock().expect("lock");
    let mut items: Vec<Value> = fake
        .monitors
        .iter()
        .filter(|m| q.get("monitor_tags").is_none_or(|t| has_tags(m, t)))
        .filter(|m| {
            q.get("name")
                .is_none_or(|n| m["name"].as_str().unwrap_or("").contains(n.as_str()))
        })
        .cloned()
        .collect();
    if let Some(n) = q.get("page_size").and_then(|n| n.parse::<usize>().ok()) {
        items.truncate(n);
    }
    axum::Json(Value::Array(items)).into_response()
}

async fn monitor(
    State(s): State<Shared>,
    h: HeaderMap,
    UrlPath(id): UrlPath<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = pairs(q);
    if let Some(r) = check(&s, &h, "GET", &format!("/api/v1/monitor/{id}"), &q) {
        return r;
    }
    let fake = s.lock().expect("lock");
    let wanted: Option<u64> = id.parse().ok();
    match fake
        .monitors
        .iter()
        .find(|m| wanted.is_some_and(|w| m["id"] == w))
    {
        Some(m) => axum::Json(m.clone()).into_response(),
        None => dd_error(StatusCode::NOT_FOUND, "Monitor not found"),
    }
}

async fn events(State(s): State<Shared>, h: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    if let Some(r) = check(&s, &h, "GET", "/api/v1/events", &q) {
        return r;
    }
    let window = (
        q.get("start").and_then(|v| v.parse::<i64>().ok()),
        q.get("end").and_then(|v| v.parse::<i64>().ok()),
    );
    let (Some(start), Some(end)) = window else {
        return dd_error(StatusCode::BAD_REQUEST, "start and end are required");
    };
    let fake = s.lock().expect("lock");
    let items: Vec<Value> = fake
        .events
        .iter()
        .filter(|e| q.get("tags").is_none_or(|t| has_tags(e, t)))
        .filter(|e| {
            let at = e["date_happened"].as_i64().unwrap_or(0);
            (start..=end).contains(&at)
        })
        .cloned()
        .collect();
    axum::Json(json!({"events": items})).into_response()
}

async fn logs(State(s): State<Shared>, h: HeaderMap, body: String) -> Response {
    if let Some(r) = check(
        &s,
        &h,
        "POST",
        "/api/v2/logs/events/search",
        &BTreeMap::new(),
    ) {
        return r;
    }
    let body: Value = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(e) => return dd_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    if !body["filter"]["query"].is_string() {
        return dd_error(StatusCode::BAD_REQUEST, "filter.query is required");
    }
    let limit = body["page"]["limit"].as_u64().unwrap_or(10).clamp(1, 1000) as usize;
    let cursor = body["page"]["cursor"].as_str().map(str::to_string);
    let mut fake = s.lock().expect("lock");
    fake.cursors.push(cursor.clone());
    let start = match &cursor {
        None => 0,
        Some(c) => match c
            .strip_prefix("after-")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => n,
            None => return dd_error(StatusCode::BAD_REQUEST, "invalid cursor"),
        },
    };
    let page: Vec<Value> = fake.logs.iter().skip(start).take(limit).cloned().collect();
    let next = start + page.len();
    let mut meta = json!({"elapsed": 12, "request_id": "req-1", "status": "done", "page": {}});
    if next < fake.logs.len() {
        meta["page"]["after"] = json!(format!("after-{next}"));
    }
    axum::Json(json!({"data": page, "meta": meta, "links": {}})).into_response()
}

async fn serve_fake(state: Shared) -> support::Server {
    let router = Router::new()
        .route("/api/v1/validate", get(validate))
        .route("/api/v1/query", get(query))
        .route("/api/v1/monitor", get(monitors))
        .route("/api/v1/monitor/{id}", get(monitor))
        .route("/api/v1/events", get(events))
        .route("/api/v2/logs/events/search", post(logs))
        .with_state(state);
    support::serve(router).await
}

const PAYMENTS_QUERY: &str = "avg(last_5m):max:kubernetes.memory.usage_pct{kube_namespace:payments,kube_deployment:payments-api} > 0.9";

fn monitor_json(id: u64, name: &str, state: &str, groups: Value, tags: &[&str]) -> Value {
    json!({
        "id": id, "name": name, "type": "query alert", "query": PAYMENTS_QUERY,
        "message": "Memory of payments-api near its limit @slack-payments",
        "tags": tags, "priority": 2, "overall_state": state,
        "options": {"thresholds": {"critical": 0.9, "warning": 0.8}},
        "state": {"groups": groups}
    })
}

/// A fake whose world is the payments cluster of the support fakes: memory near the limit, OOM
/// kills, a deploy event, error logs.
fn payments_fake(now: i64, log_lines: usize) -> Fake {
    let points: Vec<Value> = (0..40)
        .map(|i| {
            let t = now - (40 - i) * 60;
            let v = if i < 25 { 0.55 } else { 0.97 };
            json!([t as f64 * 1000.0, v])
        })
        .chain(std::iter::once(json!([(now as f64) * 1000.0, null])))
        .collect();
    let logs: Vec<Value> = (0..log_lines)
        .map(|i| {
            let at = chrono::DateTime::from_timestamp(now - i as i64, 0).expect("time");
            json!({"id": format!("AQAAA{i}"), "type": "log", "attributes": {
                "timestamp": at.to_rfc3339(), "service": "payments-api", "status": "error",
                "host": "ip-10-0-1-42",
                "message": format!("java.lang.OutOfMemoryError: Java heap space (request {i})"),
                "tags": ["kube_namespace:payments", "pod_name:payments-api-7c9d-abcde",
                         "kube_deployment:payments-api", "env:prod"]}})
        })
        .collect();
    Fake {
        monitors: vec![
            monitor_json(
                4242,
                "Payments API memory near limit",
                "Alert",
                json!({"kube_namespace:payments,kube_deployment:payments-api": {
                    "status": "Alert", "last_triggered_ts": now - 900, "last_nodata_ts": null}}),
                &["team:payments", "env:prod"],
            ),
            monitor_json(
                4243,
                "Payments API memory (quiet)",
                "OK",
                json!({"kube_namespace:payments": {"status": "OK", "last_triggered_ts": null}}),
                &["team:payments"],
            ),
            monitor_json(
                4244,
                "Search latency",
                "No Data",
                json!({}),
                &["team:search"],
            ),
        ],
        series: vec![json!({
            "metric": "kubernetes.memory.usage_pct", "display_name": "kubernetes.memory.usage_pct",
            "scope": "kube_deployment:payments-api,kube_namespace:payments",
            "tag_set": ["kube_namespace:payments", "kube_deployment:payments-api"],
            "pointlist": points, "unit": null, "length": 41, "aggr": "max"
        })],
        events: vec![json!({
            "id": 6_500_000_001_i64, "title": "Deployed payments-api v2", "text": "helm upgrade payments-api",
            "date_happened": now - 1800, "source_type_name": "my apps", "alert_type": "info",
            "priority": "normal", "url": "/event/event?id=6500000001",
            "tags": ["kube_namespace:payments", "kube_deployment:payments-api"]
        })],
        logs,
        reset: "1".into(),
        ..Fake::default()
    }
}

fn config_text(url: &str) -> String {
    format!(
        "[integrations.datadog]\nurl = \"{url}\"\napi_key = \"env:SITREP_TEST_DD_API\"\napp_key = \"env:SITREP_TEST_DD_APP\"\n"
    )
}

fn set_keys() {
    // SAFETY: set before any thread of these tests reads the environment; the values are the same
    // in every test, so tests running at once agree on them.
    unsafe {
        std::env::set_var("SITREP_TEST_DD_API", API_KEY);
        std::env::set_var("SITREP_TEST_DD_APP", APP_KEY);
    }
}

async fn live_world(url: &str) -> Arc<World> {
    set_keys();
    let config = Config::parse(&config_text(url), Path::new("test.toml")).expect("config");
    Arc::new(World::live(&config).await.expect("world"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_reads_every_tool_and_pages_logs_by_cursor() {
    let now = chrono::Utc::now().timestamp();
    let state: Shared = Arc::new(Mutex::new(payments_fake(now, 1200)));
    let server = serve_fake(state.clone()).await;
    let world = live_world(&server.url).await;
    let dd = world.datadog();
    let from = chrono::Utc::now() - chrono::Duration::hours(1);
    let to = chrono::Utc::now();

    let series = dd
        .query(
            "max:kubernetes.memory.usage_pct{kube_namespace:payments}",
            from,
            to,
        )
        .await
        .expect("query");
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].points.len(), 40, "the null bucket is dropped");
    assert_eq!(
        series[0].labels.get("kube_deployment").map(String::as_str),
        Some("payments-api")
    );
    assert_eq!(
        series[0].points[0].0,
        (now - 40 * 60) as f64,
        "milliseconds become seconds"
    );

    let listed = dd
        .monitors(&["team:payments".into()], None)
        .await
        .expect("monitors");
    assert_eq!(listed.len(), 2);
    let one = dd.monitor("4242").await.expect("monitor");
    assert_eq!(one.query, PAYMENTS_QUERY);
    assert_eq!(one.critical, Some(0.9));
    assert_eq!(one.groups[0].status, "Alert");
    assert!(
        dd.monitor("42; rm").await.is_err(),
        "a bad ID is refused before any request"
    );
    assert!(dd.monitor("999").await.is_err(), "404 is an error");

    let changes = dd
        .events(
            to - chrono::Duration::hours(2),
            to,
            &["kube_namespace:payments".into()],
        )
        .await
        .expect("events");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].target, "payments/payments-api");
    assert_eq!(changes[0].at.map(|t| t.timestamp()), Some(now - 1800));

    let lines = dd
        .logs_search("kube_namespace:payments", from, to, 1100)
        .await
        .expect("logs");
    assert_eq!(lines.len(), 1100, "three pages, cut at the limit");
    assert_eq!(
        lines[0].labels.get("pod").map(String::as_str),
        Some("payments-api-7c9d-abcde")
    );
    assert_eq!(
        lines[0].labels.get("namespace").map(String::as_str),
        Some("payments")
    );
    let cursors = state.lock().expect("lock").cursors.clone();
    assert_eq!(
        cursors,
        vec![None, Some("after-500".into()), Some("after-1000".into())]
    );

    // The inbox lists monitors in Alert, Warn or No Data, with the query an investigation reads.
    let sources = Sources::new(world.clone(), Vec::new(), Duration::from_secs(4));
    assert!(sources.configured().contains(&Source::Datadog));
    let snap = sources.poll().await;
    let names: Vec<&str> = snap.alerts.iter().map(|a| a.alertname.as_str()).collect();
    assert!(
        names.contains(&"Payments API memory near limit"),
        "{names:?}"
    );
    assert!(
        names.contains(&"Search latency"),
        "No Data pages too: {names:?}"
    );
    assert!(!names.contains(&"Payments API memory (quiet)"), "{names:?}");
    let row = snap
        .alerts
        .iter()
        .find(|a| a.alertname == "Payments API memory near limit")
        .expect("row");
    assert_eq!(row.source, Source::Datadog);
    assert_eq!(
        row.labels.get("kube_namespace").map(String::as_str),
        Some("payments")
    );
    assert_eq!(row.to_alert().monitor_query(), Some(PAYMENTS_QUERY));

    // Every request carried both keys.
    assert!(
        state
            .lock()
            .expect("lock")
            .seen
            .iter()
            .all(|(_, _, _, ok)| *ok)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_waited_out_once_then_fails_and_server_errors_are_retried() {
    let now = chrono::Utc::now().timestamp();
    let state: Shared = Arc::new(Mutex::new(payments_fake(now, 1)));
    let server = serve_fake(state.clone()).await;
    let world = live_world(&server.url).await;
    let dd = world.datadog();
    let to = chrono::Utc::now();
    let from = to - chrono::Duration::hours(1);
    let q = "max:kubernetes.memory.usage_pct{*}";

    // One 429 announcing a reset in 1 s: waited out, then answered.
    state.lock().expect("lock").throttle = 1;
    let started = std::time::Instant::now();
    let got = dd
        .query(q, from, to)
        .await
        .expect("answered after the reset");
    assert_eq!(got.len(), 1);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    // Two in a row: waited once, then a failed step that says so.
    state.lock().expect("lock").throttle = 2;
    let err = dd.query(q, from, to).await.expect_err("still limited");
    assert!(err.to_string().contains("rate limited"), "{err}");

    // A reset too far away is not waited for.
    {
        let mut f = state.lock().expect("lock");
        f.throttle = 1;
        f.reset = "3600".into();
    }
    let started = std::time::Instant::now();
    assert!(dd.query(q, from, to).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(5));

    // 503 twice: retried, then answered.
    state.lock().expect("lock").unavailable = 2;
    assert!(dd.query(q, from, to).await.is_ok());
    // Three times: the retries run out and the 503 is the error.
    state.lock().expect("lock").unavailable = 3;
    let err = dd.query(q, from, to).await.expect_err("unavailable");
    assert!(err.to_string().contains("503"), "{err}");
}

fn write_webhook(path: &Path, transition: &str, now: i64) {
    let hook = json!({
        "id": "7329123456789", "alert_id": "4242",
        "title": format!("[{transition} on {{kube_namespace:payments,kube_deployment:payments-api}}] Payments API memory near limit"),
        "alert_title": "Payments API memory near limit",
        "alert_transition": transition,
        "alert_status": "max:kubernetes.memory.usage_pct over kube_deployment:payments-api was > 0.9 on average during the last 5m",
        "alert_query": PAYMENTS_QUERY,
        "alert_scope": "kube_namespace:payments,kube_deployment:payments-api",
        "tags": "env:prod,team:payments,kube_namespace:payments,kube_deployment:payments-api",
        "date": format!("{}", (now - 900) * 1000),
        "body": "%%%\nMemory of payments-api near its limit\n%%%",
        "org_id": "123456", "priority": "P2",
        "link": "https://app.datadoghq.com/event/event?id=7329123456789"
    });
    std::fs::write(path, serde_json::to_vec_pretty(&hook).expect("json")).expect("write webhook");
}

fn all_files_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        if e.path().is_file() {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_investigation_from_a_datadog_page_keeps_the_keys_out() {
    let now = chrono::Utc::now().timestamp();
    let state: Shared = Arc::new(Mutex::new(payments_fake(now, 30)));
    let dd = serve_fake(state.clone()).await;
    let cluster = Arc::new(Mutex::new(support::Cluster::payments()));
    let k8s = support::kubernetes(cluster).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "{}[integrations.kubernetes]\nurl = \"{}\"\n",
            config_text(&dd.url),
            k8s.url
        ),
    )
    .expect("config");
    let hook = dir.path().join("datadog.json");
    write_webhook(&hook, "Triggered", now);
    let case = dir.path().join("case");
    let out = Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args([
            "investigate",
            "--headless",
            "--diagnosis-only",
            "--no-save",
            "--alert",
        ])
        .arg(&hook)
        .arg("--record")
        .arg(&case)
        .env("SITREP_CONFIG", &config)
        .env("SITREP_DATA_DIR", dir.path())
        .env("SITREP_TEST_DD_API", API_KEY)
        .env("SITREP_TEST_DD_APP", APP_KEY)
        .stdin(Stdio::null())
        .output()
        .expect("run sitrep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for text in [&*stdout, &*stderr, &all_files_text(&case)] {
        assert!(
            !text.contains(API_KEY) && !text.contains(APP_KEY),
            "a key leaked"
        );
    }
    let records: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let events: Vec<&Value> = records.iter().map(|r| &r["event"]).collect();
    // The monitor's own series is evidence, drawn against its threshold.
    let series = events
        .iter()
        .find(|e| {
            e["type"] == "evidence_added" && e["evidence"]["source"] == "datadog.metrics.query"
        })
        .unwrap_or_else(|| panic!("no Datadog series evidence: {stdout}"));
    assert_eq!(series["evidence"]["kind"], "metrics");
    let body = &series["evidence"]["body"];
    assert_eq!(
        body["threshold"],
        json!(0.9),
        "the chart carries the threshold: {body}"
    );
    assert_eq!(
        body["series"][0]["labels"]["kube_deployment"], "payments-api",
        "{body}"
    );
    assert!(
        body["series"][0]["points"]
            .as_array()
            .is_some_and(|p| p.len() >= 10),
        "{body}"
    );
    for tool in ["datadog.monitors", "datadog.events", "datadog.logs.search"] {
        assert!(
            events.iter().any(|e| e["type"] == "tool_succeeded"
                && events.iter().any(|c| c["type"] == "tool_called"
                    && c["tool"] == tool
                    && c["call_id"] == e["call_id"])),
            "{tool} did not answer: {stdout}"
        );
    }
    let diagnosis = events
        .iter()
        .find(|e| e["type"] == "diagnosis")
        .unwrap_or_else(|| panic!("no diagnosis: {stdout}"));
    assert_eq!(diagnosis["category"], "resource_exhaustion", "{diagnosis}");
    let steps = events
        .iter()
        .filter(|e| e.to_string().contains("against the monitor's threshold"))
        .count();
    assert!(
        steps > 0,
        "the symptom is the monitor's query against its threshold: {stdout}"
    );
    // The recorded case replays offline, no key needed, to the same verdict.
    let recordings = std::fs::read_to_string(case.join("recordings.ndjson")).expect("recordings");
    assert!(recordings.contains("\"integration\":\"datadog\""));
    let replay = Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args([
            "investigate",
            "--headless",
            "--diagnosis-only",
            "--no-save",
            "--case",
        ])
        .arg(&case)
        .env("SITREP_CONFIG", "/dev/null")
        .env("SITREP_DATA_DIR", dir.path())
        .env_remove("SITREP_TEST_DD_API")
        .env_remove("SITREP_TEST_DD_APP")
        .stdin(Stdio::null())
        .output()
        .expect("replay");
    let replayed = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let again = replayed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["event"]["type"] == "diagnosis")
        .expect("replayed diagnosis");
    assert_eq!(again["event"]["root_cause"], diagnosis["root_cause"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_datadog_webhooks_only_with_the_shared_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/search-cpu-saturation");
    let case = case.to_string_lossy().to_string();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "[serve.datadog]\nsecret = \"env:SITREP_TEST_DD_SECRET\"\n",
        &["--case", &case],
        &[("SITREP_TEST_DD_SECRET", SECRET)],
    )
    .await;
    let now = chrono::Utc::now().timestamp();
    let hook_path = dir.path().join("hook.json");
    write_webhook(&hook_path, "Triggered", now);
    let triggered = std::fs::read(&hook_path).expect("hook");
    write_webhook(&hook_path, "Recovered", now);
    let recovered = std::fs::read(&hook_path).expect("hook");
    let http = reqwest::Client::new();
    let send = |body: Vec<u8>, secret: Option<&str>| {
        let mut req = http
            .post(format!("{}/webhook/datadog", served.url))
            .header("Content-Type", "application/json")
            .body(body);
        if let Some(s) = secret {
            req = req.header("X-Sitrep-Secret", s);
        }
        req.send()
    };
    // Missing, wrong, or a prefix of the secret: 401 and nothing starts.
    for secret in [
        None,
        Some("wrong"),
        Some(&SECRET[..SECRET.len() - 1]),
        Some(""),
    ] {
        let r = send(triggered.clone(), secret).await.expect("send");
        assert_eq!(r.status(), 401, "{secret:?}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(session_files(&served.sessions).is_empty());

    // The right secret: one investigation; a redelivery is a duplicate.
    let r = send(triggered.clone(), Some(SECRET)).await.expect("send");
    assert_eq!(r.status(), 202);
    let first: Value = r.json().await.expect("json");
    let r = send(triggered.clone(), Some(SECRET)).await.expect("send");
    let again: Value = r.json().await.expect("json");
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["session"], first["session"]);
    let files = wait_for_sessions(&served.sessions, 1).await;
    let log = sitrep::session::read_file(&files[0]).expect("session");
    assert!(
        log.header.title.contains("Payments API memory near limit"),
        "{}",
        log.header.title
    );

    // Recovered resolves: nothing new starts.
    let r = send(recovered, Some(SECRET)).await.expect("send");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["reason"], "resolved", "{body}");
    // Not a Datadog notification: 400.
    let r = send(br#"{"alerts": []}"#.to_vec(), Some(SECRET))
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(session_files(&served.sessions).len(), 1);
    assert_eq!(terminate(&mut served).code(), Some(0));
}

fn doctor(config: &Path, api: &str, app: &str) -> (Value, String) {
    let out = Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["doctor", "--json"])
        .env("SITREP_CONFIG", config)
        .env("SITREP_TEST_DD_API", api)
        .env("SITREP_TEST_DD_APP", app)
        .stdin(Stdio::null())
        .output()
        .expect("doctor");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let row = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["integration"] == "datadog")
        .unwrap_or_else(|| panic!("no datadog row: {stdout}"));
    (
        row,
        format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_both_keys_and_names_a_bad_one() {
    let state: Shared = Arc::new(Mutex::new(payments_fake(chrono::Utc::now().timestamp(), 1)));
    let server = serve_fake(state).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, config_text(&server.url)).expect("config");
    let (row, _) = doctor(&config, API_KEY, APP_KEY);
    assert_eq!(row["status"], "ok", "{row}");
    assert!(row["latency_ms"].is_u64());
    let (row, all) = doctor(&config, "bad-api-key-1", APP_KEY);
    assert_eq!(row["status"], "failed", "{row}");
    assert!(
        row["detail"].as_str().unwrap_or("").contains("bad API key"),
        "{row}"
    );
    assert!(
        row["fix"].as_str().unwrap_or("").contains("api_key"),
        "{row}"
    );
    assert!(!all.contains("bad-api-key-1"), "the key is never printed");
    let (row, all) = doctor(&config, API_KEY, "bad-app-key-2");
    assert_eq!(row["status"], "failed", "{row}");
    assert!(
        row["detail"]
            .as_str()
            .unwrap_or("")
            .contains("bad application key"),
        "{row}"
    );
    assert!(!all.contains("bad-app-key-2") && !all.contains(API_KEY));
}

// ---------------------------------------------------------------------------------------------
// The same world told by Datadog instead of Prometheus and Loki.

/// Kubernetes label -> the tag the Datadog agent puts on the same thing.
fn tag_of(label: &str) -> String {
    match label {
        "namespace" => "kube_namespace",
        "deployment" => "kube_deployment",
        "container" => "kube_container_name",
        "pod" => "pod_name",
        "app" => "service",
        other => other,
    }
    .to_string()
}

fn tags_of(labels: &serde_json::Map<String, Value>) -> Vec<String> {
    labels
        .iter()
        .filter(|(k, _)| !["alertname", "severity", "level", "__name__"].contains(&k.as_str()))
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{}:{v}", tag_of(k))))
        .collect()
}

/// Rewrites a case: its alert as a Datadog monitor notification whose query is `query` (the same
/// threshold), the alert expression's Prometheus series as the monitor's Datadog series, Loki's
/// streams as Datadog log events; Prometheus, Loki and Alertmanager are gone.
fn as_datadog(src: &Path, dst: &Path, query: &str, metric: &str) {
    std::fs::create_dir_all(dst).expect("dst");
    for f in ["case.toml", "expect.toml"] {
        std::fs::copy(src.join(f), dst.join(f)).expect("copy");
    }
    let alert: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("alert.json")).expect("alert"))
            .expect("alert json");
    let a = &alert["alerts"][0];
    let labels = a["labels"].as_object().expect("labels");
    let tags = tags_of(labels);
    let scope: Vec<&String> = tags.iter().filter(|t| t.starts_with("kube_")).collect();
    let name = labels["alertname"].as_str().expect("alertname");
    let hook = json!({
        "id": "1", "alert_id": "4242", "alert_title": name, "alert_transition": "Triggered",
        "alert_status": a["annotations"]["summary"], "alert_query": query,
        "alert_scope": scope.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","),
        "tags": tags.join(","), "date": a["startsAt"], "body": a["annotations"]["description"],
        "org_id": "1",
        "priority": if labels.get("severity") == Some(&json!("critical")) { "P2" } else { "P3" }
    });
    std::fs::write(dst.join("alert.json"), hook.to_string()).expect("write alert");
    let mut out: Vec<Value> = Vec::new();
    for line in std::fs::read_to_string(src.join("recordings.ndjson"))
        .expect("recordings")
        .lines()
    {
        let r: Value = serde_json::from_str(line).expect("recording");
        let integration = r["integration"].as_str().unwrap_or("");
        let generic = r["query"].as_object().is_none_or(|q| q.is_empty());
        match integration {
            "prometheus" if r["path"] == "/api/v1/query_range" && generic => {
                let series: Vec<Value> = r["body"]["data"]["result"]
                    .as_array()
                    .expect("matrix")
                    .iter()
                    .map(|s| {
                        let points: Vec<Value> = s["values"]
                            .as_array()
                            .expect("values")
                            .iter()
                            .map(|p| {
                                let t = p[0].as_f64().expect("t");
                                let v: f64 = p[1].as_str().expect("v").parse().expect("number");
                                json!([t * 1000.0, v])
                            })
                            .collect();
                        json!({"metric": metric, "tag_set": tags_of(s["metric"].as_object().expect("metric")),
                               "pointlist": points})
                    })
                    .collect();
                out.push(
                    json!({"integration": "datadog", "method": "GET", "path": "/api/v1/query",
                    "query": {}, "status": 200, "body": {"status": "ok", "series": series}}),
                );
            }
            "loki" => {
                let mut data = Vec::new();
                for stream in r["body"]["data"]["result"].as_array().expect("streams") {
                    let labels = stream["stream"].as_object().expect("stream");
                    for v in stream["values"].as_array().expect("values") {
                        let ns: i64 = v[0].as_str().expect("ns").parse().expect("ns number");
                        let at = chrono::DateTime::from_timestamp(
                            ns / 1_000_000_000,
                            (ns % 1_000_000_000) as u32,
                        )
                        .expect("time");
                        data.push(json!({"id": ns.to_string(), "type": "log", "attributes": {
                            "timestamp": at.to_rfc3339(), "message": v[1],
                            "service": labels.get("app").cloned().unwrap_or(json!("")),
                            "status": labels.get("level").cloned().unwrap_or(json!("info")),
                            "tags": tags_of(labels)}}));
                    }
                }
                out.push(json!({"integration": "datadog", "method": "POST",
                    "path": "/api/v2/logs/events/search", "query": {}, "status": 200,
                    "body": {"data": data, "meta": {"page": {}}}}));
            }
            "prometheus" | "alertmanager" => {}
            _ => out.push(r),
        }
    }
    out.push(
        json!({"integration": "datadog", "method": "GET", "path": "/api/v1/monitor/4242",
        "query": {}, "status": 200, "body": {"id": 4242, "name": name, "type": "query alert",
        "query": query, "overall_state": "Alert", "tags": [], "options": {"thresholds": {}},
        "state": {"groups": {}}}}),
    );
    out.push(
        json!({"integration": "datadog", "method": "GET", "path": "/api/v1/events",
        "query": {}, "status": 200, "body": {"events": []}}),
    );
    let text: String = out.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dst.join("recordings.ndjson"), text).expect("write recordings");
}

/// The clause naming the cause (before the first `: `), and the clock time it breaches since.
fn decisive(root: &str) -> (String, Option<String>) {
    let head = root
        .split_once(": ")
        .map(|(h, _)| h)
        .unwrap_or(root)
        .to_string();
    let since = regex::Regex::new(r"since (\d{1,2}:\d{2})")
        .expect("regex")
        .captures(root)
        .map(|c| c[1].to_string());
    (head, since)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datadog_and_kubernetes_reach_the_verdicts_of_prometheus_and_loki() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    let scratch = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "checkout-bad-deploy",
            "avg(last_5m):sum:trace.http.request.errors{kube_namespace:shop,service:checkout-api}.as_rate() / sum:trace.http.request.hits{kube_namespace:shop,service:checkout-api}.as_rate() > 0.05",
            "trace.http.request.errors",
        ),
        (
            "search-cpu-saturation",
            "avg(last_5m):sum:kubernetes.cpu.cfs.throttled.periods{kube_namespace:search,kube_container_name:search-api}.as_rate() / sum:kubernetes.cpu.cfs.periods{kube_namespace:search,kube_container_name:search-api}.as_rate() > 0.25",
            "kubernetes.cpu.cfs.throttled.periods",
        ),
    ];
    let opts = EvalOptions {
        case_timeout: Duration::from_secs(60),
        print: false,
        ..EvalOptions::default()
    };
    for (name, query, metric) in cases {
        let src = root.join(name);
        let dst = scratch.path().join(name);
        as_datadog(&src, &dst, query, metric);
        let prom = eval::run_case(&src, &opts).await;
        let dd = eval::run_case(&dst, &opts).await;
        assert!(prom.passed(), "{name}: {prom}");
        assert!(
            dd.passed(),
            "{name} told by Datadog: {dd} {:?} {:?}",
            dd.error,
            dd.broken
        );
        assert_eq!(dd.score.category, prom.score.category, "{name}");
        let (p, d) = (
            prom.root_cause.clone().unwrap_or_default(),
            dd.root_cause.clone().unwrap_or_default(),
        );
        assert_eq!(
            decisive(&d),
            decisive(&p),
            "{name}:\n  prometheus: {p}\n  datadog:    {d}"
        );
        assert!(
            dd.cited_kinds.iter().all(|k| prom.cited_kinds.contains(k)),
            "{name}: {:?} vs {:?}",
            dd.cited_kinds,
            prom.cited_kinds
        );
    }
}

#[test]
fn a_datadog_page_is_diagnosed_in_the_words_of_its_monitor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-datadog-monitor");
    let out = Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args([
            "investigate",
            "--headless",
            "--diagnosis-only",
            "--no-save",
            "--case",
        ])
        .arg(&case)
        .env("SITREP_CONFIG", "/dev/null")
        .env("SITREP_DATA_DIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run sitrep");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let event = |kind: &str| {
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|r| r["event"].clone())
            .find(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {stdout}"))
    };
    let symptom = event("symptom")["symptom"]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        symptom.starts_with(
            "error ratio of shop/checkout-api is 17% against the monitor's threshold > 5%"
        ),
        "{symptom}"
    );
    let diagnosis = event("diagnosis");
    let root = diagnosis["root_cause"].as_str().unwrap_or_default();
    assert_eq!(diagnosis["category"], "code_defect", "{root}");
    assert!(root.contains("revision 14"), "{root}");
    assert!(
        root.contains("error ratio of shop/checkout-api 0.35% → 19%"),
        "{root}"
    );
    // The monitor's raw query and the series' tags stay in the evidence, not in the sentence.
    assert!(
        !root.contains("as_rate()") && !root.contains("datadog_metric"),
        "{root}"
    );
}
