//! Following a session `sitrep serve` runs: the tail the console reads sees it live, and an approval
//! sent from the follower (through the server's API, token on) lets the waiting action run.

mod support;

use sitrep::model::{Command, Event, Risk};
use sitrep::tui::follow::{self, Remote};
use std::path::Path;
use std::time::Duration;
use support::{sitrep_serve, terminate, wait_for_sessions};

const TOKEN: &str = "follow-test-token-77aa";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_the_session_live_and_approves_through_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let alert = std::fs::read(case.join("alert.json")).expect("alert.json");
    let case = case.to_string_lossy().to_string();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "",
        &["--case", &case, "--token-env", "SITREP_FOLLOW_TOKEN"],
        &[("SITREP_FOLLOW_TOKEN", TOKEN)],
    )
    .await;
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
        token: Some(TOKEN.to_string().into()),
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
}
