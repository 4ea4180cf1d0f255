//! `sitrep serve` (the real binary) over a recorded case: token auth on every route, dedup of repeated
//! deliveries, 4xx for malformed and oversized bodies while it keeps serving, the session API, and a
//! shutdown that ends running sessions cleanly.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{session_files, sitrep_serve, terminate, wait_for_sessions};

const TOKEN: &str = "serve-test-token-5f1e";

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy")
}

fn alert_payload() -> Value {
    let text = std::fs::read_to_string(case_dir().join("alert.json")).expect("alert.json");
    serde_json::from_str(&text).expect("payload")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_nothing_is_served_and_nothing_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "",
        &["--case", &case, "--token-env", "SITREP_SERVE_TEST_TOKEN"],
        &[("SITREP_SERVE_TEST_TOKEN", TOKEN)],
    )
    .await;
    let http = reqwest::Client::new();
    let routes: [(&str, &str); 6] = [
        ("POST", "/webhook/alertmanager"),
        ("POST", "/webhook/pagerduty"),
        ("GET", "/api/alerts"),
        ("GET", "/api/sessions"),
        ("GET", "/api/sessions/x"),
        ("POST", "/api/investigations"),
    ];
    for (method, path) in routes {
        for auth in [None, Some("Bearer wrong-token"), Some(TOKEN)] {
            let mut req = match method {
                "GET" => http.get(format!("{}{path}", served.url)),
                _ => http
                    .post(format!("{}{path}", served.url))
                    .json(&alert_payload()),
            };
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            let resp = req.send().await.expect("send");
            assert_eq!(resp.status(), 401, "{method} {path} with {auth:?}");
            assert_eq!(
                resp.headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok()),
                Some("Bearer")
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        session_files(&served.sessions).is_empty(),
        "nothing started"
    );

    // With the token the same delivery starts one investigation; a repeat starts none.
    let bearer = format!("Bearer {TOKEN}");
    let post = |path: &str, body: Vec<u8>| {
        http.post(format!("{}{path}", served.url))
            .header("Authorization", bearer.clone())
            .header("Content-Type", "application/json")
            .body(body)
    };
    let body = serde_json::to_vec(&alert_payload()).expect("json");
    let first = post("/webhook/alertmanager", body.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.expect("json");
    let id = first["session"].as_str().expect("a session id").to_string();
    let again = post("/webhook/alertmanager", body.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.expect("json");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["session"], id.as_str());

    // Malformed and oversized bodies are refused, and the server keeps serving.
    let bad = post("/webhook/alertmanager", b"{not json".to_vec())
        .send()
        .await
        .expect("send");
    assert_eq!(bad.status(), 400);
    let msg: Value = bad.json().await.expect("json");
    assert!(
        msg["error"]
            .as_str()
            .is_some_and(|e| e.contains("webhook payload")),
        "{msg}"
    );
    // The server answers 413 without reading the rest and closes that connection: a client of its
    // own, so the pooled one above is not reused half-closed.
    let huge = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client")
        .post(format!("{}/webhook/alertmanager", served.url))
        .header("Authorization", bearer.clone())
        .header("Content-Type", "application/json")
        .body(vec![b' '; 2 * 1024 * 1024])
        .send()
        .await
        .expect("send");
    assert_eq!(huge.status(), 413);
    let wrong = post("/api/investigations", br#"{"what": 1}"#.to_vec())
        .send()
        .await
        .expect("send");
    assert_eq!(wrong.status(), 400);

    wait_for_sessions(&served.sessions, 1).await;
    let list: Value = http
        .get(format!("{}/api/sessions", served.url))
        .header("Authorization", bearer.clone())
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sessions = list["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{list}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(session_files(&served.sessions).len(), 1);

    let one = http
        .get(format!("{}/api/sessions/{id}", served.url))
        .header("Authorization", bearer.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(one.status(), 200);
    let one: Value = one.json().await.expect("json");
    assert_eq!(one["id"], id.as_str());
    let missing = http
        .get(format!(
            "{}/api/sessions/..%2F..%2Fetc%2Fpasswd",
            served.url
        ))
        .header("Authorization", bearer.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(missing.status(), 404);

    let problem = post(
        "/api/investigations",
        serde_json::to_vec(&json!({"problem": "checkout latency is up"})).expect("json"),
    )
    .send()
    .await
    .expect("send");
    assert_eq!(problem.status(), 202);
    wait_for_sessions(&served.sessions, 2).await;

    // Shutdown ends every session with its end record.
    let status = terminate(&mut served);
    assert!(status.success(), "{status}");
    for file in session_files(&served.sessions) {
        let log = sitrep::session::read_file(&file).expect("session");
        assert!(log.tear.is_none(), "{}", file.display());
        assert!(
            log.records
                .iter()
                .any(|r| matches!(r.event, sitrep::model::Event::SessionEnded { .. })),
            "{} has no end",
            file.display()
        );
    }
}

#[tokio::test]
async fn a_public_address_needs_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("c.toml"), "").expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("SITREP_CONFIG", dir.path().join("c.toml"))
        .env("SITREP_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token-env"), "{err}");
}

/// Issue 13.3: a decision through the API is recorded under the name of the token that carried
/// it (and the peer address), never under a name the request claims; every waiting action is
/// decided this way and the session ends. The export shows who decided and how.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_decision_is_recorded_under_the_token_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let tokens = "alice=alice-token-1b2c, bob=bob-token-9f8e";
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "",
        &["--case", &case, "--token-env", "SITREP_SERVE_NAMED_TOKENS"],
        &[("SITREP_SERVE_NAMED_TOKENS", tokens)],
    )
    .await;
    let http = reqwest::Client::new();
    let started: Value = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .bearer_auth("alice-token-1b2c")
        .json(&alert_payload())
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    let session = |token: &'static str| {
        let http = http.clone();
        let url = format!("{}/api/sessions/{id}", served.url);
        async move {
            http.get(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("send")
                .json::<Value>()
                .await
                .expect("json")
        }
    };
    // Unattended: every action above low waits. bob approves the first, alice denies the rest;
    // each request also claims to come from someone else.
    let mut approved: Option<String> = None;
    let mut denied: Vec<String> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = session("bob-token-9f8e").await;
        if now["running"] == false {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never finished: {now}"
        );
        let pending: Vec<String> = now["pending_approvals"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        for action in pending {
            if approved.as_ref().is_some_and(|a| *a == action) || denied.contains(&action) {
                continue;
            }
            let (route, token) = if approved.is_none() {
                approved = Some(action.clone());
                ("approve", "bob-token-9f8e")
            } else {
                denied.push(action.clone());
                ("deny", "alice-token-1b2c")
            };
            let resp = http
                .post(format!("{}/api/sessions/{id}/{route}", served.url))
                .bearer_auth(token)
                .json(&json!({"action_id": action, "by": "mallory", "operator": "mallory"}))
                .send()
                .await
                .expect("send");
            assert_eq!(resp.status(), 202, "{route} {action}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let approved = approved.expect("an action waited for a decision");
    let files = session_files(&served.sessions);
    let log = sitrep::session::read_file(&files[0]).expect("session");
    let decisions: Vec<(String, String, String, bool)> = log
        .records
        .iter()
        .filter_map(|r| match &r.event {
            sitrep::model::Event::ApprovalGiven {
                action_id, by, via, ..
            } => Some((action_id.clone(), by.clone(), via.clone(), true)),
            sitrep::model::Event::ApprovalDenied {
                action_id, by, via, ..
            } => Some((action_id.clone(), by.clone(), via.clone(), false)),
            _ => None,
        })
        .collect();
    assert!(
        decisions
            .iter()
            .any(|(a, by, _, yes)| *a == approved && by == "bob" && *yes),
        "{decisions:?}"
    );
    for (a, by, via, yes) in &decisions {
        assert!(by == "bob" || by == "alice", "{decisions:?}");
        assert!(via.starts_with("api from 127.0.0.1:"), "{via}");
        // The server sees its loopback caller's OS user too, from the kernel.
        let me = sitrep::agent::approve::current_user();
        assert!(via.ends_with(&format!("OS user {me}")), "{via}");
        assert_eq!(*yes, *a == approved, "{decisions:?}");
    }
    assert_eq!(decisions.len(), 1 + denied.len(), "{decisions:?}");
    // The API's view and the markdown export say who decided, and how.
    let view = session("alice-token-1b2c").await;
    let actions = view["incident"]["actions"].as_array().expect("actions");
    let ours = actions
        .iter()
        .find(|a| a["action"]["id"] == approved.as_str())
        .expect("the approved action");
    assert_eq!(ours["decisions"][0]["by"], "bob");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .arg("export")
        .arg(&files[0])
        .output()
        .expect("export");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("Approved by **bob** (api from 127.0.0.1:"),
        "{md}"
    );
    if !denied.is_empty() {
        assert!(md.contains("Denied by **alice** (api from"), "{md}");
    }
    assert!(!md.contains("mallory"), "{md}");
    assert!(terminate(&mut served).success());
}

/// One name twice in the named tokens is refused at start, and the message quotes no token.
#[tokio::test]
async fn named_tokens_must_be_distinct() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("c.toml"), "").expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["serve", "--listen", "127.0.0.1:0", "--token-env", "T"])
        .env("T", "alice=one-token,alice=two-token")
        .env("SITREP_CONFIG", dir.path().join("c.toml"))
        .env("SITREP_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"alice\" appears twice"), "{err}");
    assert!(
        !err.contains("one-token") && !err.contains("two-token"),
        "{err}"
    );
}

/// A credential a specialist of a served session asks for is decided through
/// `POST /api/sessions/{id}/credentials`: refused without a token or with a malformed body,
/// recorded under the token's name (never the name the request claims), and only then read and
/// sent to its integration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_is_decided_through_the_api_under_the_token_name() {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "prom-token-by-op-77d0";
    let reference = "op://ops/prometheus/token";
    let bin = tempfile::tempdir().expect("tempdir");
    let marker = bin.path().join("op-ran");
    let op = bin.path().join("op");
    std::fs::write(
        &op,
        format!(
            "#!/bin/sh\ntouch '{}'\nif [ \"$1\" = read ] && [ \"$3\" = '{reference}' ]; then printf '%s' '{secret}'; exit 0; fi\nexit 1\n",
            marker.display()
        ),
    )
    .expect("write op");
    std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Prometheus on loopback: remembers the Authorization headers it saw, answers empty results.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let headers = seen.clone();
    let prom = support::serve(axum::Router::new().fallback(
        move |h: axum::http::HeaderMap| {
            let headers = headers.clone();
            async move {
                if let Some(a) = h.get("authorization").and_then(|v| v.to_str().ok()) {
                    headers.lock().unwrap_or_else(|e| e.into_inner()).push(a.to_string());
                }
                axum::Json(json!({"status": "success", "data": {"resultType": "vector", "result": [], "groups": [], "alerts": []}}))
            }
        },
    ))
    .await;
    let config = format!(
        "[integrations.prometheus]\nurl = \"{}\"\nauth = {{ kind = \"bearer\", token_env = \"{reference}\" }}\n",
        prom.url
    );
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let tokens = "alice=alice-token-1b2c, bob=bob-token-9f8e";
    let mut served = sitrep_serve(
        0,
        dir.path(),
        &config,
        &["--token-env", "SITREP_SERVE_NAMED_TOKENS"],
        &[("SITREP_SERVE_NAMED_TOKENS", tokens), ("PATH", &path)],
    )
    .await;
    let http = reqwest::Client::new();
    let started: Value = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .bearer_auth("bob-token-9f8e")
        .json(&alert_payload())
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    let session_url = format!("{}/api/sessions/{id}", served.url);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now: Value = http
            .get(&session_url)
            .bearer_auth("bob-token-9f8e")
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        let asked = now["pending_credentials"]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["ref"] == reference));
        if asked {
            break;
        }
        assert!(now["running"] != false, "ended without asking: {now}");
        assert!(std::time::Instant::now() < deadline, "never asked: {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!marker.exists(), "op ran before the decision");
    let url = format!("{session_url}/credentials");
    let unauthenticated = http
        .post(&url)
        .json(&json!({"ref": reference, "approve": true}))
        .send()
        .await
        .expect("send");
    assert_eq!(unauthenticated.status(), 401);
    let malformed = http
        .post(&url)
        .bearer_auth("alice-token-1b2c")
        .json(&json!({"ref": reference}))
        .send()
        .await
        .expect("send");
    assert_eq!(malformed.status(), 400);
    assert!(!marker.exists(), "op ran before a valid decision");
    let resp = http
        .post(&url)
        .bearer_auth("alice-token-1b2c")
        .json(&json!({"ref": reference, "approve": true, "by": "mallory"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    wait_until_ended(&http, &session_url, "bob-token-9f8e").await;
    let files = session_files(&served.sessions);
    let log = sitrep::session::read_file(&files[0]).expect("session");
    let decided: Vec<(String, String, bool)> = log
        .records
        .iter()
        .filter_map(|r| match &r.event {
            sitrep::model::Event::CredentialDecided {
                reference,
                by,
                approved,
                ..
            } => Some((reference.clone(), by.clone(), *approved)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![(reference.to_string(), "alice".to_string(), true)]
    );
    assert!(marker.exists(), "op read the approved credential");
    let sent = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        sent.iter().any(|a| *a == format!("Bearer {secret}")),
        "{sent:?}"
    );
    let text = std::fs::read_to_string(&files[0]).expect("read session");
    assert!(
        !text.contains(secret),
        "the credential reached the session file"
    );
    assert!(!text.contains("mallory"));
    assert!(terminate(&mut served).success());
}

async fn wait_until_ended(http: &reqwest::Client, url: &str, token: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let now: Value = http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        if now["running"] == false {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never finished: {now}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A note through the API lands in the running session under the token's name; an empty one is
/// refused with the reason.
#[tokio::test]
async fn a_note_through_the_api_is_recorded_under_the_token_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let tokens = "alice=alice-token-1b2c, bob=bob-token-9f8e";
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "",
        &["--case", &case, "--token-env", "SITREP_SERVE_NAMED_TOKENS"],
        &[("SITREP_SERVE_NAMED_TOKENS", tokens)],
    )
    .await;
    let http = reqwest::Client::new();
    let started: Value = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .bearer_auth("alice-token-1b2c")
        .json(&alert_payload())
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    let url = format!("{}/api/sessions/{id}/note", served.url);
    let empty = http
        .post(&url)
        .bearer_auth("bob-token-9f8e")
        .json(&json!({"text": "  "}))
        .send()
        .await
        .expect("send");
    assert_eq!(empty.status(), 400);
    // The session waits for a decision (served sessions are unattended), so it is still running.
    let resp = http
        .post(&url)
        .bearer_auth("bob-token-9f8e")
        .json(&json!({"text": "it was the CDN, not us", "by": "mallory"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let files = session_files(&served.sessions);
        let notes: Vec<(String, String)> = files
            .first()
            .and_then(|f| sitrep::session::read_file(f).ok())
            .map(|log| {
                log.records
                    .iter()
                    .filter_map(|r| match &r.event {
                        sitrep::model::Event::Note { text, by, .. } => {
                            Some((text.clone(), by.clone()))
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !notes.is_empty() {
            assert_eq!(
                notes,
                vec![("it was the CDN, not us".to_string(), "bob".to_string())]
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the note never landed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(terminate(&mut served).success());
}
