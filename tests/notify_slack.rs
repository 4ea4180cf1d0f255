//! `[notify.slack]` on `sitrep serve` (the real binary over a recorded case), against loopback fakes
//! of Slack's incoming webhook and `chat.postMessage` built from their documented wire formats: one
//! approval message per pending high action, its buttons deciding through the signed interactions
//! route under the mapped operator's name, forged / stale / unmapped presses deciding nothing, the
//! end message with the verdict, a failed send recorded as a warning, and no secret in any body.

mod support;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use sitrep::model::Event;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{ALL_CANARIES, Served, session_files, sitrep_serve, terminate};

const BOB: &str = "bob-token-4e7d1c";
const SLACK_TOKEN: &str = "xoxb-canary-slack-token-61f0e2";
const SIGNING_SECRET: &str = "canary-signing-secret-0b9a77c3";
const HOOK_PATH: &str = "/services/T0CANARY/B0CANARY/canary-hook-secret-d41f";

const ALICE: &str = "alice-token-93b0aa";
/// A recorded world whose investigation proposes a high-risk rollback.
const HIGH_CASE: &str = "checkout-bad-deploy";
/// One whose investigation proposes a critical pod deletion.
const CRITICAL_CASE: &str = "orders-db-node-lost";

fn case_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cases")
        .join(name)
}

/// The case's alert, its annotations salted with the Slack credentials and the canaries: none may
/// reach a message or the session.
fn alert_payload(case: &str) -> Value {
    let text = std::fs::read_to_string(case_dir(case).join("alert.json")).expect("alert.json");
    let mut payload: Value = serde_json::from_str(&text).expect("payload");
    let salt = |annotations: &mut Value| {
        if let Some(summary) = annotations["summary"].as_str() {
            annotations["summary"] = json!(format!("{summary} (seen with {SLACK_TOKEN})"));
        }
        annotations["description"] = json!(format!(
            "signing {SIGNING_SECRET}; Authorization: Bearer {}; aws {}; password={}; jwt {}",
            support::CANARY_TOKEN,
            support::CANARY_AWS,
            support::CANARY_PASSWORD,
            support::CANARY_JWT
        ));
    };
    salt(&mut payload["commonAnnotations"]);
    if let Some(alerts) = payload["alerts"].as_array_mut() {
        for a in alerts {
            salt(&mut a["annotations"]);
        }
    }
    payload
}

/// One request the fake Slack received.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: String,
    body: String,
}

/// How the fake answers `chat.postMessage`.
#[derive(Clone, Copy)]
enum Answer {
    Ok,
    /// `{"ok": false, "error": "channel_not_found"}`, as the Web API reports a failure.
    NotOk,
}

#[derive(Clone)]
struct Fake {
    seen: Arc<Mutex<Vec<Seen>>>,
    answer: Answer,
}

async fn chat_post_message(
    State(fake): State<Fake>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> axum::response::Response {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = String::from_utf8_lossy(&body).into_owned();
    fake.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_string(),
        authorization: authorization.clone(),
        body: text.clone(),
    });
    if authorization != format!("Bearer {SLACK_TOKEN}") {
        return axum::Json(json!({"ok": false, "error": "not_authed"})).into_response();
    }
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return axum::Json(json!({"ok": false, "error": "invalid_json"})).into_response();
    };
    if v.get("channel").and_then(Value::as_str).is_none() {
        return axum::Json(json!({"ok": false, "error": "channel_not_found"})).into_response();
    }
    match fake.answer {
        Answer::Ok => axum::Json(
            json!({"ok": true, "channel": v["channel"], "ts": "1764180000.000100",
                                         "message": {"text": v["text"]}}),
        )
        .into_response(),
        Answer::NotOk => {
            axum::Json(json!({"ok": false, "error": "channel_not_found"})).into_response()
        }
    }
}

async fn incoming_webhook(
    State(fake): State<Fake>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> axum::response::Response {
    let text = String::from_utf8_lossy(&body).into_owned();
    fake.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_string(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
        body: text.clone(),
    });
    // Incoming webhooks answer a plain `ok`, or a 400 with a reason such as `invalid_payload`.
    match serde_json::from_str::<Value>(&text) {
        Ok(v) if v.get("text").is_some() || v.get("blocks").is_some() => "ok".into_response(),
        _ => (axum::http::StatusCode::BAD_REQUEST, "invalid_payload").into_response(),
    }
}

async fn fake_slack(answer: Answer) -> (support::Server, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let router = Router::new()
        .route("/api/chat.postMessage", post(chat_post_message))
        .route(HOOK_PATH, post(incoming_webhook))
        .with_state(Fake {
            seen: seen.clone(),
            answer,
        });
    (support::serve(router).await, seen)
}

fn bodies(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Value> {
    seen.lock()
        .expect("lock")
        .iter()
        .filter_map(|s| serde_json::from_str(&s.body).ok())
        .collect()
}

/// The approval messages received: those with the approve button or a "Decision needed" header.
fn approval_messages(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Value> {
    bodies(seen)
        .into_iter()
        .filter(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("decision needed"))
        })
        .collect()
}

fn end_messages(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Value> {
    bodies(seen)
        .into_iter()
        .filter(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("investigation ended"))
        })
        .collect()
}

/// The value of the approve button of an approval message.
fn button(message: &Value, action_id: &str) -> Option<Value> {
    message["blocks"]
        .as_array()?
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .find(|e| e["action_id"] == action_id)
        .and_then(|e| {
            e["value"]
                .as_str()
                .and_then(|v| serde_json::from_str(v).ok())
        })
}

async fn wait_until<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `block_actions` interaction body, as Slack posts it when a button is pressed.
fn press_body(user: &str, action_id: &str, value: &Value) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": {"id": user, "username": "someone", "team_id": "T0CANARY"},
        "api_app_id": "A0SITREP",
        "team": {"id": "T0CANARY", "domain": "example"},
        "container": {"type": "message", "message_ts": "1764180000.000100"},
        "trigger_id": "1.2.3",
        "response_url": "https://hooks.slack.com/actions/T0CANARY/1/2",
        "actions": [{
            "type": "button",
            "block_id": "sitrep_decision",
            "action_id": action_id,
            "value": value.to_string(),
            "action_ts": "1764180001.000200",
        }],
    });
    format!("payload={}", form_encode(&payload.to_string()))
}

/// `X-Slack-Signature` as Slack documents it: `v0=` + hex HMAC-SHA256 of `v0:<ts>:<body>`.
fn slack_signature(secret: &str, ts: &str, body: &str) -> String {
    let base = format!("v0:{ts}:{body}");
    let mac = sitrep::integrations::pagerduty::hmac_sha256(secret.as_bytes(), base.as_bytes());
    format!("v0={}", hex::encode(mac))
}

/// Posts a button press to the server; its ephemeral answer.
async fn press(served: &Served, body: &str, ts: i64, secret: &str) -> Value {
    let ts = ts.to_string();
    let resp = reqwest::Client::new()
        .post(format!("{}/webhook/slack/interactions", served.url))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("X-Slack-Request-Timestamp", &ts)
        .header("X-Slack-Signature", slack_signature(secret, &ts, body))
        .body(body.to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

async fn session_view(served: &Served, id: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{}/api/sessions/{id}", served.url))
        .bearer_auth(BOB)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

fn pending(view: &Value) -> Vec<String> {
    view["pending_approvals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

async fn start_served(config: &str, dir: &Path, env: &[(&str, &str)]) -> (Served, String) {
    start_case(HIGH_CASE, config, dir, env).await
}

/// `sitrep serve` over `case` with the tokens of bob and alice, and the case's alert delivered.
async fn start_case(
    name: &str,
    config: &str,
    dir: &Path,
    env: &[(&str, &str)],
) -> (Served, String) {
    let case = case_dir(name);
    let case = case.to_string_lossy();
    let token_env = format!("bob={BOB},alice={ALICE}");
    let mut all = vec![("SITREP_SLACK_TEST_TOKENS", token_env.as_str())];
    all.extend_from_slice(env);
    let served = sitrep_serve(
        0,
        dir,
        config,
        &["--case", &case, "--token-env", "SITREP_SLACK_TEST_TOKENS"],
        &all,
    )
    .await;
    let started: Value = reqwest::Client::new()
        .post(format!("{}/webhook/alertmanager", served.url))
        .bearer_auth(BOB)
        .json(&alert_payload(name))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    (served, id)
}

/// Denies (as bob, through the API) every pending action but `keep` until the session ends.
async fn deny_the_rest(served: &Served, id: &str, keep: &[String]) {
    let http = reqwest::Client::new();
    let mut denied: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let view = session_view(served, id).await;
        if view["running"] == false {
            return;
        }
        assert!(Instant::now() < deadline, "never finished: {view}");
        for action in pending(&view) {
            if keep.contains(&action) || denied.contains(&action) {
                continue;
            }
            let resp = http
                .post(format!("{}/api/sessions/{id}/deny", served.url))
                .bearer_auth(BOB)
                .json(&json!({"action_id": action, "reason": "not in this test"}))
                .send()
                .await
                .expect("send");
            assert_eq!(resp.status(), 202);
            denied.push(action);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn events(dir: &Path) -> Vec<Event> {
    let files = session_files(&dir.join("sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    sitrep::session::read_file(&files[0])
        .expect("session")
        .records
        .into_iter()
        .map(|r| r.event)
        .collect()
}

/// None of the server's Slack credentials and no canary in the session file.
fn assert_session_clean(dir: &Path, secrets: &[&str]) {
    for file in session_files(&dir.join("sessions")) {
        let text = std::fs::read_to_string(&file).expect("session");
        for secret in secrets.iter().chain(ALL_CANARIES.iter()) {
            assert!(!text.contains(secret), "{secret} in {}", file.display());
        }
    }
}

fn assert_no_secret(seen: &Arc<Mutex<Vec<Seen>>>, secrets: &[&str]) {
    for s in seen.lock().expect("lock").iter() {
        for secret in secrets.iter().chain(ALL_CANARIES.iter()) {
            assert!(
                !s.body.contains(secret),
                "{secret} reached the fake in a body to {}",
                s.path
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_button_press_from_a_mapped_user_approves_and_the_end_carries_the_verdict() {
    let (slack, seen) = fake_slack(Answer::Ok).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[notify.slack]\ntoken = \"env:SITREP_SLACK_TEST_BOT\"\nchannel = \"C0SITREP\"\n\
         api_url = \"{}/api\"\nsigning_secret = \"env:SITREP_SLACK_TEST_SIGNING\"\n\
         on = [\"approval\", \"end\"]\n\n[notify.slack.users]\nU123ABC = \"alice\"\n",
        slack.url
    );
    let (mut served, id) = start_served(
        &config,
        dir.path(),
        &[
            ("SITREP_SLACK_TEST_BOT", SLACK_TOKEN),
            ("SITREP_SLACK_TEST_SIGNING", SIGNING_SECRET),
        ],
    )
    .await;

    // One approval message for the pending high action, with its buttons.
    let message = wait_until("the approval message", 60, || {
        approval_messages(&seen).into_iter().next()
    })
    .await;
    let value = button(&message, "sitrep_approve").expect("an approve button");
    assert!(button(&message, "sitrep_deny").is_some(), "{message}");
    assert_eq!(value["session"], id.as_str());
    let action = value["action"].as_str().expect("action id").to_string();
    let text = message.to_string();
    assert!(text.contains("high"), "{text}");
    assert!(
        text.contains(&format!("/api/sessions/{id}/approve")),
        "{text}"
    );
    let view = session_view(&served, &id).await;
    assert!(pending(&view).contains(&action), "{view}");
    {
        let seen = seen.lock().expect("lock");
        assert!(
            seen.iter().all(|s| s.path == "/api/chat.postMessage"
                && s.authorization == format!("Bearer {SLACK_TOKEN}")),
            "{seen:?}"
        );
    }

    let now = chrono::Utc::now().timestamp();
    let approve = press_body("U123ABC", "sitrep_approve", &value);
    // A forged signature, a stale timestamp and an unmapped user decide nothing.
    let forged = press(&served, &approve, now, "not-the-signing-secret").await;
    assert_eq!(forged["response_type"], "ephemeral", "{forged}");
    let stale = press(&served, &approve, now - 600, SIGNING_SECRET).await;
    assert_eq!(stale["response_type"], "ephemeral", "{stale}");
    assert!(
        stale["text"]
            .as_str()
            .is_some_and(|t| t.contains("5 minutes")),
        "{stale}"
    );
    let stranger = press_body("U999ZZZ", "sitrep_approve", &value);
    let unmapped = press(&served, &stranger, now, SIGNING_SECRET).await;
    assert!(
        unmapped["text"]
            .as_str()
            .is_some_and(|t| t.contains("not mapped")),
        "{unmapped}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let view = session_view(&served, &id).await;
    assert!(pending(&view).contains(&action), "still pending: {view}");
    assert!(
        !events(dir.path())
            .iter()
            .any(|e| matches!(e, Event::ApprovalGiven { .. })),
        "nothing was approved"
    );

    // The mapped user's signed press approves, through the API's path, as alice.
    let ok = press(&served, &approve, now, SIGNING_SECRET).await;
    assert_eq!(ok["response_type"], "ephemeral", "{ok}");
    assert!(
        ok["text"].as_str().is_some_and(|t| t.contains("alice")),
        "{ok}"
    );
    deny_the_rest(&served, &id, std::slice::from_ref(&action)).await;

    let events = events(dir.path());
    assert!(
        events.iter().any(|e| matches!(e,
            Event::ApprovalGiven { action_id, by, via, .. }
                if *action_id == action && by == "alice" && via == "slack user U123ABC")),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ActionExecuted { action_id, .. } if *action_id == action)),
        "the approved action ran"
    );
    let category = events
        .iter()
        .find_map(|e| match e {
            Event::Diagnosis { category, .. } => Some(category.to_string()),
            _ => None,
        })
        .expect("a verdict");

    let end = wait_until("the end message", 30, || {
        end_messages(&seen).into_iter().next()
    })
    .await;
    let end_text = end.to_string();
    assert!(end_text.contains(&category), "{end_text}");
    assert!(end_text.contains(&id), "{end_text}");
    assert!(end_text.contains("alice"), "who approved: {end_text}");
    assert_eq!(approval_messages(&seen).len(), 1, "one approval message");
    assert_eq!(end_messages(&seen).len(), 1, "one end message");
    assert_no_secret(&seen, &[SLACK_TOKEN, SIGNING_SECRET]);
    assert_session_clean(dir.path(), &[SLACK_TOKEN, SIGNING_SECRET]);
    assert!(terminate(&mut served).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_webhook_gets_both_messages_and_a_failed_send_is_a_warning() {
    // Incoming webhook: no buttons without a signing secret; the API decides.
    let (slack, seen) = fake_slack(Answer::Ok).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = format!("{}{HOOK_PATH}", slack.url);
    let (mut served, id) = start_served(
        "[notify.slack]\nwebhook_url = \"env:SITREP_SLACK_TEST_HOOK\"\n",
        dir.path(),
        &[("SITREP_SLACK_TEST_HOOK", &hook)],
    )
    .await;
    let message = wait_until("the approval message", 60, || {
        approval_messages(&seen).into_iter().next()
    })
    .await;
    assert!(button(&message, "sitrep_approve").is_none(), "{message}");
    // A button press reaches nothing without a signing secret.
    let body = press_body(
        "U123ABC",
        "sitrep_approve",
        &json!({"session": id, "action": "a1"}),
    );
    let refused = press(&served, &body, chrono::Utc::now().timestamp(), "anything").await;
    assert_eq!(refused["response_type"], "ephemeral", "{refused}");
    deny_the_rest(&served, &id, &[]).await;
    wait_until("the end message", 30, || {
        end_messages(&seen).into_iter().next()
    })
    .await;
    assert!(
        seen.lock()
            .expect("lock")
            .iter()
            .all(|s| s.path == HOOK_PATH && s.authorization.is_empty())
    );
    assert_no_secret(&seen, &[HOOK_PATH]);
    assert_session_clean(dir.path(), &[HOOK_PATH]);
    assert!(terminate(&mut served).success());

    // `chat.postMessage` answering ok:false: warnings in the session, which runs on and ends.
    let (slack, seen) = fake_slack(Answer::NotOk).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[notify.slack]\ntoken = \"env:SITREP_SLACK_TEST_BOT\"\nchannel = \"C0SITREP\"\n\
         api_url = \"{}/api\"\n",
        slack.url
    );
    let (mut served, id) = start_served(
        &config,
        dir.path(),
        &[("SITREP_SLACK_TEST_BOT", SLACK_TOKEN)],
    )
    .await;
    wait_until("the approval message", 60, || {
        approval_messages(&seen).into_iter().next()
    })
    .await;
    let warned = |what: &str| {
        events(dir.path()).iter().any(|e| {
            matches!(e, Event::Warning { message }
                if message.contains(&format!("Slack {what} message not sent"))
                    && message.contains("channel_not_found"))
        })
    };
    // The failed send is recorded while the action still waits; nothing else is held up.
    wait_until("the approval warning", 10, || {
        warned("approval").then_some(())
    })
    .await;
    deny_the_rest(&served, &id, &[]).await;
    wait_until("the end message", 30, || {
        end_messages(&seen).into_iter().next()
    })
    .await;
    wait_until("the end warning", 10, || warned("end").then_some(())).await;
    let log = sitrep::session::read_file(&session_files(&dir.path().join("sessions"))[0])
        .expect("session");
    assert!(log.tear.is_none());
    assert!(
        log.incident().outcome.is_some(),
        "the session still reads as ended"
    );
    assert_no_secret(&seen, &[SLACK_TOKEN]);
    assert_session_clean(dir.path(), &[SLACK_TOKEN]);
    assert!(terminate(&mut served).success());
}

/// Slack's documented example request signs to Slack's documented signature.
#[test]
fn signatures_follow_slacks_documented_example() {
    let secret = b"8f742231b10e8888abcd99yyyzzz85a5";
    let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    assert_eq!(
        sitrep::notify::slack::signature_for(secret, "1531420618", body),
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    );
}

/// A button press parses out of its form body; anything else is refused with a reason.
#[test]
fn a_button_press_parses_and_anything_else_is_refused() {
    use sitrep::notify::slack::parse_interaction;
    let value = json!({"session": "s1", "action": "a1", "digest": "d0"});
    let i = parse_interaction(press_body("U1", "sitrep_deny", &value).as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(i.user, "U1");
    assert!(!i.approve);
    assert_eq!(
        (
            i.session.as_str(),
            i.action_id.as_str(),
            i.digest.as_deref()
        ),
        ("s1", "a1", Some("d0"))
    );
    // `+` is a space in a form body.
    let spaced = "payload=%7B%22type%22%3A+%22block_actions%22%7D";
    assert!(parse_interaction(spaced.as_bytes()).is_err_and(|e| e.contains("user")));
    for bad in [
        &b"payload=%7B%7D"[..],
        b"payload=%zz",
        b"nothing",
        &[0xff, 0xfe],
    ] {
        assert!(parse_interaction(bad).is_err());
    }
    let other = press_body("U1", "some_other_button", &value);
    assert!(parse_interaction(other.as_bytes()).is_err());
}

/// `[notify.slack]` is checked when the configuration loads: references only, one destination,
/// known messages, Slack user ids mapped to operator names.
#[test]
fn the_slack_section_is_validated() {
    use sitrep::config::Config;
    let parse = |text: &str| Config::parse(text, Path::new("c.toml"));
    let ok = parse(
        "[notify.slack]\nwebhook_url = \"env:SLACK_WEBHOOK_URL\"\n\
         signing_secret = \"op://ops/slack/signing\"\n[notify.slack.users]\nU123ABC = \"alice\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let slack = ok.notify.slack.expect("slack");
    // The documented example is valid as written.
    let example = parse(include_str!("../config.example.toml")).unwrap_or_else(|e| panic!("{e}"));
    let documented = example.notify.slack.expect("[notify.slack] documented");
    assert_eq!(
        documented.users.get("U123ABC").map(String::as_str),
        Some("alice")
    );
    assert_eq!(slack.on, ["approval", "end"]);
    assert_eq!(slack.api_url, "https://slack.com/api");
    assert_eq!(
        slack.users.get("U123ABC").map(String::as_str),
        Some("alice")
    );
    for (text, key) in [
        // The secret itself instead of a reference.
        (
            "[notify.slack]\nwebhook_url = \"https://hooks.slack.com/services/T/B/x\"\n",
            "notify.slack.webhook_url",
        ),
        (
            "[notify.slack]\ntoken = \"xoxb-1-2\"\nchannel = \"C1\"\n",
            "notify.slack.token",
        ),
        (
            "[notify.slack]\ntoken = \"env:T\"\n",
            "notify.slack.channel",
        ),
        (
            "[notify.slack]\ntoken = \"env:T\"\nchannel = \"C1\"\nwebhook_url = \"env:W\"\n",
            "notify.slack.token",
        ),
        ("[notify.slack]\n", "notify.slack.webhook_url"),
        (
            "[notify.slack]\nwebhook_url = \"env:W\"\non = [\"start\"]\n",
            "notify.slack.on",
        ),
        (
            "[notify.slack]\nwebhook_url = \"env:W\"\n[notify.slack.users]\n\"U 1\" = \"a\"\n",
            "notify.slack.users",
        ),
        (
            "[notify.slack]\nwebhook_url = \"env:W\"\n[notify.slack.users]\nU1 = \"a b\"\n",
            "notify.slack.users.U1",
        ),
    ] {
        let err = parse(text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains(&format!("`{key}`")), "{text}: {err}");
        assert!(
            !err.contains("xoxb-1-2") && !err.contains("/T/B/x"),
            "{err}"
        );
    }
}

/// A credential the section names but the environment lacks stops `sitrep serve` at start, with
/// the file and the key.
#[test]
fn a_missing_slack_credential_stops_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "[notify.slack]\nwebhook_url = \"env:SITREP_SLACK_TEST_SURELY_UNSET\"\n",
    )
    .expect("config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("SITREP_CONFIG", &config)
        .env("SITREP_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("notify.slack.webhook_url") && err.contains("SITREP_SLACK_TEST_SURELY_UNSET"),
        "{err}"
    );
}

/// The two-person rule holds across surfaces: alice approving a critical action in Slack and again
/// through the API (her own token) is one operator; bob through the API is the second, and only
/// then does it run. Both decisions are recorded under their names, with how each came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_critical_action_needs_a_second_operator_whatever_the_surface() {
    let (slack, seen) = fake_slack(Answer::Ok).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[notify.slack]\ntoken = \"env:SITREP_SLACK_TEST_BOT\"\nchannel = \"C0SITREP\"\n\
         api_url = \"{}/api\"\nsigning_secret = \"env:SITREP_SLACK_TEST_SIGNING\"\n\
         [notify.slack.users]\nU123ABC = \"alice\"\n",
        slack.url
    );
    let (mut served, id) = start_case(
        CRITICAL_CASE,
        &config,
        dir.path(),
        &[
            ("SITREP_SLACK_TEST_BOT", SLACK_TOKEN),
            ("SITREP_SLACK_TEST_SIGNING", SIGNING_SECRET),
        ],
    )
    .await;
    let message = wait_until("the critical approval message", 60, || {
        approval_messages(&seen).into_iter().find(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.contains("(critical risk)"))
        })
    })
    .await;
    assert!(
        message.to_string().contains("two different operators"),
        "{message}"
    );
    let value = button(&message, "sitrep_approve").expect("an approve button");
    let critical = value["action"].as_str().expect("action id").to_string();
    let body = press_body("U123ABC", "sitrep_approve", &value);
    let ok = press(
        &served,
        &body,
        chrono::Utc::now().timestamp(),
        SIGNING_SECRET,
    )
    .await;
    assert!(
        ok["text"].as_str().is_some_and(|t| t.contains("alice")),
        "{ok}"
    );
    let approve_as = |token: &'static str| {
        let url = format!("{}/api/sessions/{id}/approve", served.url);
        let critical = critical.clone();
        async move {
            let resp = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&json!({"action_id": critical}))
                .send()
                .await
                .expect("send");
            assert_eq!(resp.status(), 202);
        }
    };
    wait_until("alice's approval", 20, || {
        events(dir.path())
            .iter()
            .any(|e| matches!(e, Event::ApprovalGiven { by, .. } if by == "alice"))
            .then_some(())
    })
    .await;
    approve_as(ALICE).await;
    wait_until("the second approval by alice refused", 20, || {
        events(dir.path())
            .iter()
            .any(|e| matches!(e, Event::Warning { message } if message.contains("alice already approved")))
            .then_some(())
    })
    .await;
    let view = session_view(&served, &id).await;
    assert!(
        pending(&view).contains(&critical),
        "one operator is not two: {view}"
    );
    approve_as(BOB).await;
    // The other high-risk proposals are denied with their messages' deny buttons.
    let mut denied_in_slack = Vec::new();
    for m in approval_messages(&seen) {
        let Some(v) = button(&m, "sitrep_deny") else {
            continue;
        };
        if v["action"] == critical.as_str() {
            continue;
        }
        let body = press_body("U123ABC", "sitrep_deny", &v);
        let ok = press(
            &served,
            &body,
            chrono::Utc::now().timestamp(),
            SIGNING_SECRET,
        )
        .await;
        assert!(
            ok["text"].as_str().is_some_and(|t| t.contains("denial")),
            "{ok}"
        );
        denied_in_slack.push(v["action"].as_str().unwrap_or_default().to_string());
    }
    assert!(
        !denied_in_slack.is_empty(),
        "the case proposes other high actions"
    );
    deny_the_rest(&served, &id, std::slice::from_ref(&critical)).await;
    let events = events(dir.path());
    for action in &denied_in_slack {
        assert!(
            events.iter().any(|e| matches!(e,
                Event::ApprovalDenied { action_id, by, via, .. }
                    if action_id == action && by == "alice" && via == "slack user U123ABC")),
            "{action} denied in Slack: {events:?}"
        );
    }
    let approvals: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalGiven {
                action_id, by, via, ..
            } if *action_id == critical => Some((by.clone(), via.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2, "{approvals:?}");
    assert_eq!(
        approvals[0],
        ("alice".to_string(), "slack user U123ABC".to_string())
    );
    assert_eq!(approvals[1].0, "bob");
    assert!(
        approvals[1].1.starts_with("api from 127.0.0.1:"),
        "{approvals:?}"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, Event::ActionExecuted { action_id, .. } if *action_id == critical)
        ),
        "ran after the second operator"
    );
    assert_no_secret(&seen, &[SLACK_TOKEN, SIGNING_SECRET]);
    assert_session_clean(dir.path(), &[SLACK_TOKEN, SIGNING_SECRET]);
    assert!(terminate(&mut served).success());
}
