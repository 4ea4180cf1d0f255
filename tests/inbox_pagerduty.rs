//! PagerDuty against a loopback fake speaking its documented REST API v2 (token auth, `From:` on writes)
//! and V3 webhooks (HMAC-SHA256 `X-PagerDuty-Signature: v1=<hex>`): the inbox lists incidents,
//! acknowledge / note / resolve go through approval, and `sitrep serve` verifies signatures.

mod support;

use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Value, json};
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::config::Config;
use sitrep::inbox::{self, AlertState, Source, Sources};
use sitrep::model::{Command, Event, RunMode};
use sitrep::world::World;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{session_files, sitrep_serve, terminate, wait_for_sessions};

const KEY: &str = "pd-rest-key-4c1d0e";
const FROM: &str = "oncall@example.com";
const SECRET: &str = "pd-webhook-secret-9e7a";

#[derive(Default)]
struct Fake {
    incidents: Vec<Value>,
    notes: Vec<(String, String)>,
    /// `From` header of every write.
    from: Vec<String>,
}

type Shared = Arc<Mutex<Fake>>;

fn incident(id: &str, n: u64, title: &str, status: &str, urgency: &str) -> Value {
    json!({
        "id": id, "type": "incident", "summary": format!("[#{n}] {title}"),
        "self": format!("https://api.pagerduty.com/incidents/{id}"),
        "html_url": format!("https://acme.pagerduty.com/incidents/{id}"),
        "incident_number": n, "title": title, "status": status, "urgency": urgency,
        "incident_key": format!("key-{id}"),
        "created_at": "2026-11-25T09:00:00Z",
        "service": {"id": "PSVC001", "type": "service_reference", "summary": "payments-api"},
        "assignments": [{"at": "2026-11-25T09:00:00Z",
            "assignee": {"id": "PUSR01", "type": "user_reference", "summary": "Alice Oncall"}}],
        "escalation_policy": {"id": "PEP01", "type": "escalation_policy_reference"}
    })
}

fn pd_error(status: StatusCode, message: &str, code: u64, errors: &[&str]) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "code": code, "errors": errors}})),
    )
        .into_response()
}

fn authorized(h: &HeaderMap) -> Option<Response> {
    let auth = h.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Token token={KEY}")) {
        return Some(pd_error(
            StatusCode::UNAUTHORIZED,
            "Unauthenticated",
            2006,
            &[],
        ));
    }
    let accept = h.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("");
    if !accept.contains("application/vnd.pagerduty+json;version=2") {
        return Some(pd_error(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable",
            2000,
            &[],
        ));
    }
    None
}

fn from_header(h: &HeaderMap) -> Result<String, Box<Response>> {
    match h.get("from").and_then(|v| v.to_str().ok()) {
        Some(f) if f.contains('@') => Ok(f.to_string()),
        _ => Err(Box::new(pd_error(
            StatusCode::BAD_REQUEST,
            "Invalid Input Provided",
            2001,
            &["You must include a From header with the email address of a valid user."],
        ))),
    }
}

async fn list(State(s): State<Shared>, h: HeaderMap, RawQuery(q): RawQuery) -> Response {
    if let Some(r) = authorized(&h) {
        return r;
    }
    let url = reqwest::Url::parse(&format!("http://x/?{}", q.unwrap_or_default())).expect("query");
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let statuses: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "statuses[]")
        .map(|(_, v)| v.as_str())
        .collect();
    let services: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "service_ids[]")
        .map(|(_, v)| v.as_str())
        .collect();
    let fake = s.lock().expect("lock");
    let items: Vec<Value> = fake
        .incidents
        .iter()
        .filter(|i| statuses.is_empty() || statuses.contains(&i["status"].as_str().unwrap_or("")))
        .filter(|i| {
            services.is_empty() || services.contains(&i["service"]["id"].as_str().unwrap_or(""))
        })
        .cloned()
        .collect();
    axum::Json(json!({"incidents": items, "limit": 100, "offset": 0, "more": false, "total": null}))
        .into_response()
}

async fn update(
    State(s): State<Shared>,
    UrlPath(id): UrlPath<String>,
    h: HeaderMap,
    body: String,
) -> Response {
    if let Some(r) = authorized(&h) {
        return r;
    }
    let from = match from_header(&h) {
        Ok(f) => f,
        Err(r) => return *r,
    };
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let status = body["incident"]["status"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if body["incident"]["type"] != "incident_reference"
        || !["acknowledged", "resolved"].contains(&status.as_str())
    {
        return pd_error(
            StatusCode::BAD_REQUEST,
            "Invalid Input Provided",
            2001,
            &["bad incident"],
        );
    }
    let mut fake = s.lock().expect("lock");
    fake.from.push(from);
    match fake.incidents.iter_mut().find(|i| i["id"] == id.as_str()) {
        Some(i) => {
            i["status"] = json!(status);
            axum::Json(json!({"incident": i.clone()})).into_response()
        }
        None => pd_error(StatusCode::NOT_FOUND, "Not Found", 2100, &[]),
    }
}

async fn note(
    State(s): State<Shared>,
    UrlPath(id): UrlPath<String>,
    h: HeaderMap,
    body: String,
) -> Response {
    if let Some(r) = authorized(&h) {
        return r;
    }
    let from = match from_header(&h) {
        Ok(f) => f,
        Err(r) => return *r,
    };
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let Some(content) = body["note"]["content"].as_str() else {
        return pd_error(
            StatusCode::BAD_REQUEST,
            "Invalid Input Provided",
            2001,
            &["note content"],
        );
    };
    let mut fake = s.lock().expect("lock");
    fake.from.push(from);
    fake.notes.push((id, content.to_string()));
    let n = fake.notes.len();
    (
        StatusCode::CREATED,
        axum::Json(
            json!({"note": {"id": format!("PNOTE{n}"), "content": content,
            "created_at": "2026-11-25T09:05:00Z",
            "user": {"id": "PUSR01", "type": "user_reference", "summary": "Alice Oncall"}}}),
        ),
    )
        .into_response()
}

async fn fake_pagerduty() -> (support::Server, Shared) {
    let state: Shared = Arc::new(Mutex::new(Fake {
        incidents: vec![
            incident(
                "PT4KHLK",
                1234,
                "Payments API 5xx above 10%",
                "triggered",
                "high",
            ),
            incident("PX9ACK1", 1235, "Disk 85% on db-2", "acknowledged", "low"),
            incident("PRESLVD", 1200, "Old one", "resolved", "low"),
        ],
        ..Fake::default()
    }));
    let router = Router::new()
        .route("/incidents", get(list))
        .route("/incidents/{id}", put(update))
        .route("/incidents/{id}/notes", post(note))
        .with_state(state.clone());
    (support::serve(router).await, state)
}

fn config_text(url: &str) -> String {
    format!(
        "[integrations.pagerduty]\nurl = \"{url}\"\nfrom_email = \"{FROM}\"\nservice_id = \"PSVC001\"\n\
auth = {{ kind = \"bearer\", token_env = \"SITREP_TEST_PD_KEY\" }}\nwebhook_secret = \"env:SITREP_TEST_PD_SECRET\"\n"
    )
}

fn sitrep(config: &Path, args: &[&str]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_CONFIG", config)
        .env("SITREP_TEST_PD_KEY", KEY)
        .env("SITREP_TEST_PD_SECRET", SECRET)
        .stdin(Stdio::null())
        .output()
        .expect("run sitrep")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_json_lists_open_incidents() {
    let (server, _state) = fake_pagerduty().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, config_text(&server.url)).expect("config");
    let out = sitrep(&config, &["alerts", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let listed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(
        listed.len(),
        2,
        "resolved incidents are not listed: {listed:?}"
    );
    let first = listed
        .iter()
        .find(|a| a["incident_id"] == "PT4KHLK")
        .expect("the triggered incident");
    assert_eq!(first["source"], "pagerduty");
    assert_eq!(first["alertname"], "Payments API 5xx above 10%");
    assert_eq!(first["state"], "triggered");
    assert_eq!(first["labels"]["service"], "payments-api");
    assert_eq!(first["labels"]["urgency"], "high");
    assert_eq!(first["assignees"], json!(["Alice Oncall"]));
    assert_eq!(first["starts_at"], "2026-11-25T09:00:00Z");
    assert_eq!(first["fingerprint"], "pagerduty/PT4KHLK");
    assert!(listed.iter().any(|a| a["state"] == "acknowledged"));

    // A wrong key: the source is reported down on stderr, the command still succeeds.
    let out = Process::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["alerts", "--json"])
        .env("SITREP_CONFIG", &config)
        .env("SITREP_TEST_PD_KEY", "wrong")
        .env("SITREP_TEST_PD_SECRET", SECRET)
        .output()
        .expect("run");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pagerduty is unavailable") && stderr.contains("401"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("wrong"),
        "the key never reaches the screen: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledge_and_note_from_the_inbox_send_from_and_need_approval() {
    let (server, state) = fake_pagerduty().await;
    // SAFETY: set before any thread of this test reads the environment; no other test uses this name.
    unsafe {
        std::env::set_var("SITREP_TEST_PD_KEY", KEY);
    }
    let config = Config::parse(&config_text(&server.url), Path::new("test.toml")).expect("config");
    let world = Arc::new(World::live(&config).await.expect("world"));
    let sources = Sources::new(
        world.clone(),
        vec!["PSVC001".into()],
        Duration::from_secs(4),
    );
    let snap = sources.poll().await;
    assert_eq!(snap.health.len(), 1);
    assert_eq!(snap.health[0].source, Source::PagerDuty);
    assert!(snap.health[0].error.is_none(), "{:?}", snap.health);
    let alert = snap
        .alerts
        .iter()
        .find(|a| a.state == AlertState::Triggered)
        .expect("triggered incident")
        .clone();

    let ack = inbox::actions::pagerduty(&alert, inbox::actions::PdVerb::Acknowledge, "alice")
        .expect("ack");
    let note = inbox::actions::pagerduty_note(&alert, "rolling back deploy 42").expect("note");
    let resolve = inbox::actions::pagerduty(&alert, inbox::actions::PdVerb::Resolve, "alice")
        .expect("resolve");
    let opts = AgentOptions {
        mode: RunMode::Live,
        veto_secs: 600.0,
        approval_timeout: Some(Duration::from_secs(30)),
        proposals: vec![ack.clone(), note.clone(), resolve.clone()],
        operator: "alice".into(),
        ..AgentOptions::default()
    };
    let payload = inbox::payload_for(&[&alert], &alert.labels);
    let mut handle = agent::spawn(world, Trigger::Alert(payload), opts);
    let mut ids: Vec<(String, String)> = Vec::new();
    let mut asked: Vec<String> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    let mut decided: Vec<(String, String, String)> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(r)) = tokio::time::timeout_at(deadline, handle.records.recv()).await {
        match &r.event {
            Event::ActionProposed { action } => ids.push((action.id.clone(), action.kind.clone())),
            Event::ApprovalRequested {
                action_id, digest, ..
            } => {
                let kind = ids
                    .iter()
                    .find(|(i, _)| i == action_id)
                    .map(|(_, k)| k.clone())
                    .unwrap_or_default();
                asked.push(kind.clone());
                let cmd = if kind == "pagerduty.acknowledge" || kind == "pagerduty.add_note" {
                    Command::Approve {
                        action_id: action_id.clone(),
                        by: None,
                        params: None,
                        digest: Some(digest.clone()),
                    }
                } else {
                    Command::Deny {
                        action_id: action_id.clone(),
                        reason: "not yet".into(),
                        by: None,
                    }
                };
                // The acknowledge is decided in the console (alice, the operator); the note and
                // the resolve by people the API authenticated.
                let api = |name: &str| agent::Decider {
                    name: name.into(),
                    via: "api from 127.0.0.1:40000".into(),
                };
                match kind.as_str() {
                    "pagerduty.acknowledge" => handle.commands.send(cmd).expect("send"),
                    "pagerduty.add_note" => handle
                        .attributed
                        .send(agent::Attributed {
                            decider: api("carol"),
                            command: cmd,
                        })
                        .expect("send"),
                    _ => handle
                        .attributed
                        .send(agent::Attributed {
                            decider: api("bob"),
                            command: cmd,
                        })
                        .expect("send"),
                }
            }
            Event::ApprovalGiven {
                action_id, by, via, ..
            }
            | Event::ApprovalDenied {
                action_id, by, via, ..
            } => decided.push((action_id.clone(), by.clone(), via.clone())),
            Event::ActionExecuted {
                action_id, result, ..
            } => {
                let kind = ids
                    .iter()
                    .find(|(i, _)| i == action_id)
                    .map(|(_, k)| k.clone())
                    .unwrap_or_default();
                results.push((kind, result.clone()));
            }
            _ => {}
        }
    }
    handle.task.await.expect("join").expect("run");
    // Every write to PagerDuty was asked about: the note and acknowledge (medium) were approved
    // and ran, resolve (high) was denied and did not.
    assert!(
        asked.contains(&"pagerduty.acknowledge".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"pagerduty.resolve".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"pagerduty.add_note".to_string()),
        "{asked:?}"
    );
    let kinds: Vec<&str> = results.iter().map(|(k, _)| k.as_str()).collect();
    assert!(kinds.contains(&"pagerduty.acknowledge"), "{results:?}");
    assert!(kinds.contains(&"pagerduty.add_note"), "{results:?}");
    assert!(!kinds.contains(&"pagerduty.resolve"), "denied: {results:?}");
    // Each decision is recorded with who made it, not with the session's operator.
    let decider = |kind: &str| {
        let id = ids.iter().find(|(_, k)| k == kind).map(|(i, _)| i.clone());
        decided
            .iter()
            .find(|(a, _, _)| Some(a) == id.as_ref())
            .map(|(_, by, via)| (by.as_str(), via.as_str()))
    };
    assert_eq!(decider("pagerduty.acknowledge"), Some(("alice", "")));
    assert_eq!(
        decider("pagerduty.add_note"),
        Some(("carol", "api from 127.0.0.1:40000"))
    );
    assert_eq!(
        decider("pagerduty.resolve"),
        Some(("bob", "api from 127.0.0.1:40000"))
    );

    let fake = state.lock().expect("lock");
    let status = |id: &str| {
        fake.incidents
            .iter()
            .find(|i| i["id"] == id)
            .map(|i| i["status"].clone())
    };
    assert_eq!(status("PT4KHLK"), Some(json!("acknowledged")));
    assert_eq!(
        fake.notes,
        vec![("PT4KHLK".to_string(), "rolling back deploy 42".to_string())]
    );
    assert_eq!(fake.from, vec![FROM.to_string(), FROM.to_string()]);
}

fn webhook_event(event_type: &str, id: &str) -> Value {
    // The documented V3 shape: an `event` envelope with the incident as `data`.
    json!({"event": {
        "id": "01DEN2HVW5B9RJVQ7Y7YK7QN9F",
        "event_type": event_type,
        "resource_type": "incident",
        "occurred_at": "2026-11-25T09:00:05.000Z",
        "agent": {"html_url": "https://acme.pagerduty.com/users/PUSR01", "id": "PUSR01",
                  "self": "https://api.pagerduty.com/users/PUSR01", "summary": "Alice Oncall", "type": "user_reference"},
        "client": null,
        "data": {
            "id": id, "type": "incident", "self": format!("https://api.pagerduty.com/incidents/{id}"),
            "html_url": format!("https://acme.pagerduty.com/incidents/{id}"),
            "number": 1234, "status": "triggered", "incident_key": "payments-5xx",
            "created_at": "2026-11-25T09:00:00Z", "title": "Payments API 5xx above 10%",
            "service": {"html_url": "https://acme.pagerduty.com/services/PSVC001", "id": "PSVC001",
                        "self": "https://api.pagerduty.com/services/PSVC001", "summary": "payments-api", "type": "service_reference"},
            "assignees": [{"id": "PUSR01", "summary": "Alice Oncall", "type": "user_reference"}],
            "escalation_policy": {"id": "PEP01", "summary": "payments", "type": "escalation_policy_reference"},
            "teams": [], "priority": null, "urgency": "high", "conference_bridge": null, "resolve_reason": null
        }
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_verifies_v3_webhook_signatures() {
    let (server, _state) = fake_pagerduty().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let case = case.to_string_lossy().to_string();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        &config_text(&server.url),
        &["--case", &case],
        &[
            ("SITREP_TEST_PD_KEY", KEY),
            ("SITREP_TEST_PD_SECRET", SECRET),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    let send = |body: &Value, signature: Option<String>| {
        let bytes = serde_json::to_vec(body).expect("json");
        let mut req = http
            .post(format!("{}/webhook/pagerduty", served.url))
            .header("Content-Type", "application/json")
            .body(bytes);
        if let Some(s) = signature {
            req = req.header("X-PagerDuty-Signature", s);
        }
        req.send()
    };
    let sign = |body: &Value| {
        sitrep::integrations::pagerduty::sign(
            SECRET.as_bytes(),
            &serde_json::to_vec(body).expect("json"),
        )
    };
    let triggered = webhook_event("incident.triggered", "PT4KHLK");

    // Unsigned, signed with another secret, or a body changed after signing: 401, nothing starts.
    let r = send(&triggered, None).await.expect("send");
    assert_eq!(r.status(), 401);
    let forged = sitrep::integrations::pagerduty::sign(
        b"other",
        &serde_json::to_vec(&triggered).expect("json"),
    );
    assert_eq!(
        send(&triggered, Some(forged)).await.expect("send").status(),
        401
    );
    let mut tampered = triggered.clone();
    tampered["event"]["data"]["title"] = json!("something else");
    assert_eq!(
        send(&tampered, Some(sign(&triggered)))
            .await
            .expect("send")
            .status(),
        401
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(session_files(&served.sessions).is_empty());

    // Signed (a rotating secret sends two signatures): one investigation, and a redelivery is a duplicate.
    let sig = format!("v1=deadbeef,{}", sign(&triggered));
    let r = send(&triggered, Some(sig.clone())).await.expect("send");
    assert_eq!(r.status(), 202);
    let first: Value = r.json().await.expect("json");
    let r = send(&triggered, Some(sig)).await.expect("send");
    assert_eq!(r.status(), 200);
    let again: Value = r.json().await.expect("json");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["session"], first["session"]);
    let files = wait_for_sessions(&served.sessions, 1).await;
    assert_eq!(files.len(), 1);
    let log = sitrep::session::read_file(&files[0]).expect("session");
    assert!(
        log.header.title.contains("Payments API 5xx above 10%"),
        "{}",
        log.header.title
    );

    // An acknowledgement is noted, not investigated; a non-webhook body is a 400.
    let acked = webhook_event("incident.acknowledged", "PT4KHLK");
    let r = send(&acked, Some(sign(&acked))).await.expect("send");
    assert_eq!(r.status(), 200);
    let junk = json!({"messages": []});
    assert_eq!(
        send(&junk, Some(sign(&junk))).await.expect("send").status(),
        400
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(session_files(&served.sessions).len(), 1);
    assert_eq!(terminate(&mut served).code(), Some(0));
}
