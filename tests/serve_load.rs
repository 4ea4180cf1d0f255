//! `sitrep serve` (the real binary, loopback) under a burst: 40 alerts of one rule with one long
//! title arriving at once each get an answer within 2 s and a session of their own while the API
//! keeps answering; JSON that is not a webhook payload is refused with the reason; past
//! `[serve] queue` the webhook answers 503 with `Retry-After`, and an alert of a group still
//! waiting joins that group's investigation.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{sitrep_serve, terminate, wait_for_sessions};

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy")
}

const LONG_SUMMARY: &str = "checkout-api 5xx error rate is 18.7% (threshold 5%) across every \
     replica of the deployment for the last ten minutes, paging the on-call";

/// The case's alert as instance `i`: one rule, one title, its own labels and group.
fn alert(i: usize, group: &str) -> Value {
    let text = std::fs::read_to_string(case_dir().join("alert.json")).expect("alert.json");
    let mut v: Value = serde_json::from_str(&text).expect("payload");
    v["groupKey"] = json!(group);
    v["commonAnnotations"]["summary"] = json!(LONG_SUMMARY);
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["labels"]["instance"] = json!(format!("pod-{i}"));
            a["annotations"]["summary"] = json!(LONG_SUMMARY);
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

fn group_of(i: usize) -> String {
    format!("{{}}:{{alertname=\"HighErrorRate\",instance=\"pod-{i}\"}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_alerts_of_one_rule_at_once_each_get_a_session_and_the_api_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        // Default limits (8 at once, the rest queued); read-only, so each ends on its own and
        // the queue drains.
        "[policy]\nread_only = true\n",
        &["--case", &case],
        &[],
    )
    .await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("client");
    let hook = format!("{}/webhook/alertmanager", served.url);
    let sends = (0..40).map(|i| {
        let http = http.clone();
        let hook = hook.clone();
        async move {
            let resp = http
                .post(&hook)
                .json(&alert(i, &group_of(i)))
                .send()
                .await
                .unwrap_or_else(|e| panic!("delivery {i} unanswered within 2 s: {e}"));
            let status = resp.status().as_u16();
            let body: Value = resp.json().await.expect("json");
            (status, body)
        }
    });
    // The API keeps answering while the burst lands.
    let api = {
        let http = http.clone();
        let url = format!("{}/api/sessions", served.url);
        async move {
            for _ in 0..10 {
                let resp = http
                    .get(&url)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("/api/sessions unanswered within 2 s: {e:?}"));
                assert_eq!(resp.status(), 200);
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        }
    };
    let (answers, ()) = tokio::join!(futures::future::join_all(sends), api);
    let mut ids = BTreeSet::new();
    for (status, body) in &answers {
        assert_eq!(*status, 202, "{body}");
        assert_eq!(body["started"], true, "{body}");
        ids.insert(body["session"].as_str().expect("session").to_string());
    }
    assert_eq!(ids.len(), 40, "one session each");
    let files = wait_for_sessions(&served.sessions, 40).await;
    let stems: BTreeSet<String> = files
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(stems, ids);
    for f in &files {
        let name = f.file_name().map(|n| n.len()).unwrap_or(0);
        assert!(name <= 16 + 1 + 48 + ".ndjson".len(), "{}", f.display());
    }
    // Repeats of the same 40 start nothing.
    for i in 0..40 {
        let resp = http
            .post(&hook)
            .json(&alert(i, &group_of(i)))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["duplicate"], true, "{body}");
    }
    assert_eq!(support::session_files(&served.sessions).len(), 40);
    assert_eq!(terminate(&mut served).code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_that_is_not_a_webhook_payload_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let mut served = sitrep_serve(0, dir.path(), "", &["--case", &case], &[]).await;
    let http = reqwest::Client::new();
    let hook = format!("{}/webhook/alertmanager", served.url);
    for (body, reason) in [
        ("{}", "no `alerts` array"),
        ("{\"alerts\": 3}", "`alerts` is not an array"),
        ("[]", "`alerts` array"),
        ("42", "`alerts` array"),
        ("garbage", "expected"),
    ] {
        let resp = http
            .post(&hook)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 400, "{body}");
        let v: Value = resp.json().await.expect("json");
        let error = v["error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{body}: {error}");
    }
    assert!(support::session_files(&served.sessions).is_empty());
    assert_eq!(terminate(&mut served).code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_queue_the_webhook_answers_503_with_retry_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir();
    let case = case.to_string_lossy();
    let mut served = sitrep_serve(
        0,
        dir.path(),
        "[serve]\nmax_concurrent = 1\nqueue = 2\n",
        &["--case", &case],
        &[],
    )
    .await;
    let http = reqwest::Client::new();
    let hook = format!("{}/webhook/alertmanager", served.url);
    let post = |v: Value| http.post(&hook).json(&v).send();
    let mut ids = Vec::new();
    for i in 0..3 {
        let resp = post(alert(i, &group_of(i))).await.expect("send");
        assert_eq!(resp.status(), 202);
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["queued"].as_bool().unwrap_or(false), i > 0, "{body}");
        ids.push(body["session"].as_str().unwrap_or_default().to_string());
    }
    // One running (it waits for an approval nobody gives), two waiting: the fourth is refused
    // with a time to retry, and nothing is started for it.
    let resp = post(alert(3, &group_of(3))).await.expect("send");
    assert_eq!(resp.status(), 503);
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|s| s > 0), "{retry:?}");
    let body: Value = resp.json().await.expect("json");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("max_concurrent"),
        "{body}"
    );
    // Refused, not dropped: delivered again later it is a new alert, not a duplicate.
    let again = post(alert(3, &group_of(3))).await.expect("send");
    assert_eq!(again.status(), 503);
    // Another alert of a group still waiting joins that group's investigation.
    let resp = post(alert(10, &group_of(2))).await.expect("send");
    assert_eq!(resp.status(), 202);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["joined"], true, "{body}");
    assert_eq!(body["session"].as_str(), Some(ids[2].as_str()), "{body}");
    // The waiting ones are listed.
    let listed: Value = http
        .get(format!("{}/api/sessions", served.url))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let queued: BTreeSet<String> = listed["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|s| s["queued"] == true)
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(queued, ids[1..].iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(wait_for_sessions(&served.sessions, 1).await.len(), 1);
    // SIGTERM drains: the running one ends, the server exits cleanly within the stop timeout.
    assert_eq!(terminate(&mut served).code(), Some(0));
    let files = support::session_files(&served.sessions);
    assert_eq!(files.len(), 1);
    let log = sitrep::session::read_file(&files[0]).expect("readable");
    assert!(
        log.incident().outcome.is_some(),
        "the running one recorded its end"
    );
}
