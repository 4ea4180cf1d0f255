//! Following a session `sitrep serve` runs: the tail the console reads sees it live, and an approval
//! sent from the follower (through the server's API) lets the waiting action run, recorded under
//! the follower's identity: its token's name, or with no token its OS user.

mod support;

use sitrep::agent::follow::{self, Remote};
use sitrep::model::{Command, Event, Risk};
use std::path::Path;
use std::time::Duration;
use support::{sitrep_serve, terminate, wait_for_sessions};

const TOKEN: &str = "follow-test-token-77aa";

/// Serves the checkout case (with `token`, or none on loopback), follows the session it starts
/// and approves the first high-risk request from the follower; the events seen and the action.
async fn follow_and_approve(token: Option<&str>) -> (Vec<Event>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let alert = std::fs::read(case.join("alert.json")).expect("alert.json");
    let case = case.to_string_lossy().to_string();
    let mut args = vec!["--case", case.as_str()];
    let mut env = Vec::new();
    if let Some(t) = token {
        args.extend(["--token-env", "SITREP_FOLLOW_TOKEN"]);
        env.push(("SITREP_FOLLOW_TOKEN", t));
    }
    let mut served = sitrep_serve(0, dir.path(), "", &args, &env).await;
    let mut req = reqwest::Client::new().post(format!("{}/webhook/alertmanager", served.url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req
        .header("Content-Type", "application/json")
        .body(alert)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    let started: serde_json::Value = resp.json().await.expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    let files = wait_for_sessions(&served.sessions, 1).await;
    assert_eq!(
        files[0]
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned()),
        Some(id.clone())
    );

    let (records_tx, mut records) = tokio::sync::mpsc::unbounded_channel();
    let (commands, commands_rx) = tokio::sync::mpsc::unbounded_channel();
    let tailer = follow::tail(
        files[0].clone(),
        records_tx.clone(),
        Duration::from_millis(50),
    );
    let remote = Remote {
        url: served.url.clone(),
        token: token.map(|t| t.to_string().into()),
        session_id: id,
    };
    let forwarder = tokio::spawn(follow::forward(
        commands_rx,
        files[0].clone(),
        Some(remote),
        records_tx,
    ));

    let mut seen = Vec::new();
    let mut approved = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(r)) = tokio::time::timeout_at(deadline, records.recv()).await {
        match &r.event {
            Event::ApprovalRequested {
                action_id,
                risk,
                digest,
                ..
            } if *risk >= Risk::High && approved.is_none() => {
                approved = Some(action_id.clone());
                commands
                    .send(Command::Approve {
                        action_id: action_id.clone(),
                        by: None,
                        params: None,
                        digest: Some(digest.clone()),
                    })
                    .expect("send");
            }
            Event::Warning { message } => assert!(!message.contains("refused"), "{message}"),
            _ => {}
        }
        let ended = matches!(r.event, Event::SessionEnded { .. });
        seen.push(r.event);
        if ended {
            break;
        }
    }
    let approved = approved.expect("a high-risk action waited for approval");
    assert!(
        matches!(seen.first(), Some(Event::SessionStarted { .. })),
        "the tail starts at the first record after the header"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, Event::ApprovalGiven { action_id, .. } if *action_id == approved)),
        "the approval reached the investigation"
    );
    assert!(
        seen.iter().any(
            |e| matches!(e, Event::ActionExecuted { action_id, .. } if *action_id == approved)
        ),
        "the approved action ran"
    );
    assert!(matches!(seen.last(), Some(Event::SessionEnded { .. })));
    tailer.abort();
    forwarder.abort();
    assert_eq!(terminate(&mut served).code(), Some(0));
    (seen, approved)
}

fn approver(seen: &[Event], id: &str) -> Option<(String, String)> {
    seen.iter().find_map(|e| match e {
        Event::ApprovalGiven {
            action_id, by, via, ..
        } if action_id == id => Some((by.clone(), via.clone())),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_the_session_live_and_approves_through_the_server() {
    let (seen, approved) = follow_and_approve(Some(TOKEN)).await;
    // One unnamed token: whoever holds it is the one operator `api`.
    let (by, via) = approver(&seen, &approved).expect("approved");
    assert_eq!(by, "api");
    assert!(via.starts_with("api from 127.0.0.1:"), "{via}");
}

/// Issue 13.3: with no token (loopback), the follower's approval is its OS user, as the kernel
/// reports the owner of the connection, not the session's operator field or a claimed name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_approval_is_recorded_as_its_os_user() {
    let (seen, approved) = follow_and_approve(None).await;
    let (by, via) = approver(&seen, &approved).expect("approved");
    assert_eq!(by, sitrep::agent::approve::current_user());
    assert!(via.starts_with("api from 127.0.0.1:"), "{via}");
    // The timeline line the console shows says who and how.
    let incident =
        sitrep::model::Incident::fold(seen.iter().enumerate().map(|(i, e)| (i as f64, e)));
    assert!(
        incident.timeline.iter().any(|t| t
            .text
            .contains(&format!("approved by {by} (api from 127.0.0.1:"))),
        "{:?}",
        incident
            .timeline
            .iter()
            .map(|t| &t.text)
            .collect::<Vec<_>>()
    );
}

/// The follower's credential modal decides through the server: a denial sent from the follower
/// is recorded under the follower's token, and the credential is never read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_denies_a_credential_through_the_server() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = "op://ops/prometheus/token";
    let bin = tempfile::tempdir().expect("tempdir");
    let marker = bin.path().join("op-ran");
    let op = bin.path().join("op");
    std::fs::write(
        &op,
        format!(
            "#!/bin/sh\ntouch '{}'\nprintf '%s' 'prom-token-never-read'\n",
            marker.display()
        ),
    )
    .expect("write op");
    std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let prom = support::serve(axum::Router::new().fallback(|| async {
        axum::Json(serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": []}}))
    }))
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
    let mut served = sitrep_serve(
        0,
        dir.path(),
        &config,
        &["--token-env", "SITREP_FOLLOW_TOKEN"],
        &[("SITREP_FOLLOW_TOKEN", TOKEN), ("PATH", &path)],
    )
    .await;
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let alert = std::fs::read(case.join("alert.json")).expect("alert.json");
    let resp = reqwest::Client::new()
        .post(format!("{}/webhook/alertmanager", served.url))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .body(alert)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    let started: serde_json::Value = resp.json().await.expect("json");
    let id = started["session"].as_str().expect("session id").to_string();
    let files = wait_for_sessions(&served.sessions, 1).await;
    let (records_tx, mut records) = tokio::sync::mpsc::unbounded_channel();
    let (commands, commands_rx) = tokio::sync::mpsc::unbounded_channel();
    let tailer = follow::tail(
        files[0].clone(),
        records_tx.clone(),
        Duration::from_millis(50),
    );
    let forwarder = tokio::spawn(follow::forward(
        commands_rx,
        files[0].clone(),
        Some(Remote {
            url: served.url.clone(),
            token: Some(TOKEN.to_string().into()),
            session_id: id,
        }),
        records_tx,
    ));
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(r)) = tokio::time::timeout_at(deadline, records.recv()).await {
        match &r.event {
            Event::CredentialRequested {
                reference: asked, ..
            } => {
                assert_eq!(asked, reference);
                commands
                    .send(Command::DenyCredential {
                        reference: asked.clone(),
                        reason: "not for this incident".into(),
                        by: None,
                    })
                    .expect("send");
            }
            Event::Warning { message } => assert!(!message.contains("refused"), "{message}"),
            _ => {}
        }
        let ended = matches!(r.event, Event::SessionEnded { .. });
        seen.push(r.event);
        if ended {
            break;
        }
    }
    let decided: Vec<(String, bool, String)> = seen
        .iter()
        .filter_map(|e| match e {
            Event::CredentialDecided {
                reference,
                approved,
                by,
                ..
            } => Some((reference.clone(), *approved, by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![(reference.to_string(), false, "api".to_string())],
        "{seen:?}"
    );
    assert!(matches!(seen.last(), Some(Event::SessionEnded { .. })));
    assert!(
        !marker.exists(),
        "op ran although the credential was denied"
    );
    tailer.abort();
    forwarder.abort();
    assert_eq!(terminate(&mut served).code(), Some(0));
}
