//! Related alerts join a running investigation across `sitrep serve` replicas sharing one real
//! PostgreSQL store, by the same rules as on one server: another alert of the same group, or
//! another rule about the same object, delivered to replica B joins the investigation replica A
//! runs (which hears of it on its timeline); the same rule about the same object in another
//! group is kept apart, as Alertmanager kept it.

mod support;

use serde_json::{Value, json};
use sitrep::model::Event;
use std::path::Path;
use std::time::{Duration, Instant};
use support::postgres::Pg;
use support::sitrep_serve;

/// The case's page renamed `name` in group `group`, with `extra` labels.
fn alert(base: &Value, name: &str, group: &str, extra: &[(&str, &str)]) -> Value {
    let mut v = base.clone();
    v["groupKey"] = json!(group);
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["labels"]["alertname"] = json!(name);
            for (k, val) in extra {
                a["labels"][*k] = json!(val);
            }
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

async fn deliver(http: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let resp = http
        .post(format!("{url}/webhook/alertmanager"))
        .json(body)
        .send()
        .await
        .expect("send");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("json"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn related_alerts_join_the_investigation_another_replica_runs() {
    let pg = match Pg::start(&[], &[]) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let (case, base) = support::checkout_case();
    let config = pg.store_config("", "");
    let (dir_a, dir_b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let extra = ["--case", case.as_str()];
    let (a, b) = tokio::join!(
        sitrep_serve(0, dir_a.path(), &config, &extra, &[]),
        sitrep_serve(0, dir_b.path(), &config, &extra, &[]),
    );
    let http = reqwest::Client::new();

    // A runs the investigation of the crash loop (it waits for an approval, so it runs on).
    let crash = alert(&base, "KubePodCrashLooping", "{}:{crash}", &[]);
    let (status, body) = deliver(&http, &a.url, &crash).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["started"], true, "{body}");
    let session = body["session"].as_str().expect("session").to_string();

    // Another alert of its group, delivered to B, joins it.
    let same_group = alert(
        &base,
        "KubePodCrashLooping",
        "{}:{crash}",
        &[("pod", "checkout-api-2")],
    );
    let (status, body) = deliver(&http, &b.url, &same_group).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["joined"], true, "{body}");
    assert_eq!(body["session"], json!(session), "{body}");

    // Another rule about the same deployment, in a group of its own, delivered to B: the same
    // incident seen again, it joins too.
    let mismatch = alert(
        &base,
        "KubeDeploymentReplicasMismatch",
        "{}:{mismatch}",
        &[],
    );
    let (status, body) = deliver(&http, &b.url, &mismatch).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["joined"], true, "{body}");
    assert_eq!(body["session"], json!(session), "{body}");
    // Delivered again to A, it is a duplicate of the same session.
    let (status, body) = deliver(&http, &a.url, &mismatch).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["session"], json!(session), "{body}");

    // The same rule about the same deployment, in another group: kept apart, its own session.
    let apart = alert(
        &base,
        "KubePodCrashLooping",
        "{}:{crash-canary}",
        &[("track", "canary")],
    );
    let (status, body) = deliver(&http, &b.url, &apart).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["started"], true, "{body}");
    assert_ne!(body["session"], json!(session), "{body}");

    // A's investigation hears on its timeline that related alerts joined it from B.
    let file = a.sessions.join(format!("{session}.ndjson"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let joined = sitrep::session::read_file(&file)
            .map(|log| {
                log.records
                    .iter()
                    .filter(|r| matches!(&r.event, Event::Warning { message } if message.contains("related alert(s) joined")))
                    .count()
            })
            .unwrap_or(0);
        if joined >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "A's session heard of {joined} of 2 joins"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // One session on A, one on B: no other started.
    support::wait_for_sessions(&b.sessions, 1).await;
    let on = |dir: &Path| support::session_files(&dir.join("sessions")).len();
    assert_eq!((on(dir_a.path()), on(dir_b.path())), (1, 1));
    drop((a, b));
    drop(pg);
}
