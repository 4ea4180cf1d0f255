//! `sitrep serve` killed with SIGKILL while investigations wait for approvals, then restarted on
//! the same sessions directory: every session file is readable, each that was running ends
//! `interrupted`, nothing pending was approved, re-delivered alerts start no duplicates, and the
//! alerts that were waiting in the queue are started.

mod support;

use serde_json::{Value, json};
use sitrep::model::{Event, Outcome};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{sitrep_serve, terminate, wait_for_sessions};

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy")
}

fn alert(i: usize) -> Value {
    let text = std::fs::read_to_string(case_dir().join("alert.json")).expect("alert.json");
    let mut v: Value = serde_json::from_str(&text).expect("payload");
    v["groupKey"] = json!(format!("{{}}:{{instance=\"pod-{i}\"}}"));
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["labels"]["instance"] = json!(format!("pod-{i}"));
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

fn events(path: &Path) -> Vec<Event> {
    let log = sitrep::session::read_file(path)
        .unwrap_or_else(|e| panic!("{} unreadable: {e}", path.display()));
    assert!(
        log.tear.is_none(),
        "{} torn: {:?}",
        path.display(),
        log.tear
    );
    log.records.into_iter().map(|r| r.event).collect()
}

fn awaiting_approval(path: &Path) -> bool {
    sitrep::session::read_file(path).is_ok_and(|log| {
        log.records
            .iter()
            .any(|r| matches!(r.event, Event::ApprovalRequested { .. }))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_investigation_then_restart_duplicates_nothing_and_approves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy().to_string();
    let config = "[serve]\nmax_concurrent = 10\nqueue = 8\n";
    let mut served = sitrep_serve(0, dir.path(), config, &["--case", &case], &[]).await;
    let http = reqwest::Client::new();
    let deliver = |url: String, i: usize| {
        let http = http.clone();
        async move {
            let resp = http
                .post(format!("{url}/webhook/alertmanager"))
                .json(&alert(i))
                .send()
                .await
                .expect("send");
            let status = resp.status().as_u16();
            let body: Value = resp.json().await.expect("json");
            (status, body)
        }
    };
    let mut ids = Vec::new();
    for i in 0..12 {
        let (status, body) = deliver(served.url.clone(), i).await;
        assert_eq!(status, 202, "{body}");
        assert_eq!(body["queued"].as_bool().unwrap_or(false), i >= 10, "{body}");
        ids.push(body["session"].as_str().expect("id").to_string());
    }
    let files = wait_for_sessions(&served.sessions, 10).await;
    assert_eq!(files.len(), 10);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !files.iter().all(|f| awaiting_approval(f)) {
        assert!(Instant::now() < deadline, "not all 10 reached an approval");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    served.child.kill().expect("SIGKILL");
    let _ = served.child.wait();

    let mut served = sitrep_serve(0, dir.path(), config, &["--case", &case], &[]).await;
    // The two that were queued start now; the ten that were running do not start again.
    let files = wait_for_sessions(&served.sessions, 12).await;
    let stems: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(stems, expected);
    for id in &ids[..10] {
        let path = served.sessions.join(format!("{id}.ndjson"));
        let events = events(&path);
        assert!(
            matches!(
                events.last(),
                Some(Event::SessionEnded {
                    outcome: Outcome::Interrupted
                })
            ),
            "{id} not marked interrupted: {:?}",
            events.last()
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::ApprovalGiven { .. })),
            "{id}: a pending approval was carried over as given"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ApprovalRequested { .. })),
            "{id}: its records before the kill are intact"
        );
    }
    // Re-delivering all twelve starts nothing new.
    for (i, id) in ids.iter().enumerate() {
        let (status, body) = deliver(served.url.clone(), i).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["duplicate"], true, "{body}");
        assert_eq!(body["session"].as_str(), Some(id.as_str()), "{body}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(support::session_files(&served.sessions).len(), 12);
    // An interrupted session takes no decisions through the API.
    let resp = http
        .post(format!("{}/api/sessions/{}/approve", served.url, ids[0]))
        .json(&json!({"action_id": "a1"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 404);
    // And the API lists nothing of it as waiting for a decision.
    let view: Value = http
        .get(format!("{}/api/sessions/{}", served.url, ids[0]))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(view["running"], false, "{view}");
    assert_eq!(view["pending_approvals"], json!([]), "{view}");
    assert_eq!(terminate(&mut served).code(), Some(0));
    // A clean stop after the restart: every file readable, each with its end.
    for f in support::session_files(&served.sessions) {
        assert!(
            events(&f)
                .iter()
                .any(|e| matches!(e, Event::SessionEnded { .. })),
            "{}",
            f.display()
        );
    }
}

/// A sessions directory the server cannot record in (a full disk: its journal is `/dev/full`; or
/// a directory where the journal should be) answers 503 saying why, starts nothing, and keeps
/// answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_it_cannot_record_is_refused_with_503_and_the_reason() {
    for (what, reason) in [
        ("full", "No space left on device"),
        ("dir", "Is a directory"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).expect("sessions dir");
        let journal = sessions.join(sitrep::serve::JOURNAL_FILE);
        match what {
            "full" => {
                if !Path::new("/dev/full").exists() {
                    continue;
                }
                std::os::unix::fs::symlink("/dev/full", &journal).expect("symlink");
            }
            _ => std::fs::create_dir(&journal).expect("dir"),
        }
        let case = case_dir();
        let case = case.to_string_lossy().to_string();
        let mut served = sitrep_serve(0, dir.path(), "", &["--case", &case], &[]).await;
        let http = reqwest::Client::new();
        let resp = http
            .post(format!("{}/webhook/alertmanager", served.url))
            .json(&alert(1))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 503, "{what}");
        assert!(resp.headers().get("retry-after").is_some(), "{what}");
        let body: Value = resp.json().await.expect("json");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{what}: {error}");
        assert!(error.contains("not accepted"), "{what}: {error}");
        let listed = http
            .get(format!("{}/api/sessions", served.url))
            .send()
            .await
            .expect("send");
        assert_eq!(listed.status(), 200);
        assert!(
            support::session_files(&served.sessions).is_empty(),
            "{what}"
        );
        assert_eq!(terminate(&mut served).code(), Some(0));
    }
}
