//! Following a session `sitrep serve` runs: the tail the console reads sees it live, and an approval
//! sent from the follower (through the server's API) lets the waiting action run, recorded under
//! the follower's identity: its token's name, or with no token its OS user.

mod support;

use sitrep::model::{Command, Event, Risk};
use sitrep::tui::follow::{self, Remote};
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
