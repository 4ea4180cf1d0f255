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
