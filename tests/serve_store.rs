//! Two `sitrep serve` replicas on one real PostgreSQL store: duplicate deliveries spread over both
//! start exactly one investigation per alert, each replica lists every session, a decision
//! posted to one reaches the session the other runs, and when one is killed with SIGKILL the
//! survivor marks its sessions interrupted (approving nothing) and investigates each still-firing
//! alert again exactly once. Also: an unreachable store stops `serve` with an error, in time.

mod support;

use serde_json::{Value, json};
use sitrep::model::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::postgres::{ADMIN, Pg};
use support::{Served, sitrep_serve};

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy")
}

/// The case's page about pod `i`, firing or resolved; its own group.
fn alert(i: usize, firing: bool) -> Value {
    let text = std::fs::read_to_string(case_dir().join("alert.json")).expect("alert.json");
    let mut v: Value = serde_json::from_str(&text).expect("payload");
    v["groupKey"] = json!(format!("{{}}:{{instance=\"pod-{i}\"}}"));
    v["status"] = json!(if firing { "firing" } else { "resolved" });
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["labels"]["instance"] = json!(format!("pod-{i}"));
            a["status"] = json!(if firing { "firing" } else { "resolved" });
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

fn store_config(pg: &Pg, lease_secs: u64) -> String {
    format!(
        "[serve]\nmax_concurrent = 64\nqueue = 64\n\n[serve.store]\nurl = \"postgres://{ADMIN}@127.0.0.1:{}/postgres?sslmode=disable\"\nlease_secs = {lease_secs}\n",
        pg.port
    )
}

async fn get(http: &reqwest::Client, url: String) -> Value {
    http.get(url)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

/// `(id, body)` of every session a replica lists.
async fn listed(http: &reqwest::Client, served: &Served) -> BTreeMap<String, Value> {
    let v = get(http, format!("{}/api/sessions", served.url)).await;
    v["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| Some((s["id"].as_str()?.to_string(), s)))
        .collect()
}

fn events(path: &Path) -> Vec<Event> {
    sitrep::session::read_file(path)
        .map(|log| log.records.into_iter().map(|r| r.event).collect())
        .unwrap_or_default()
}

/// A small deterministic shuffle (xorshift), so a failure replays.
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_claims_sessions_decisions_and_take_over_a_killed_one() {
    let pg = match Pg::start(&[], &[]) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let lease = 3;
    let config = store_config(&pg, lease);
    let case = case_dir().to_string_lossy().to_string();
    let (dir_a, dir_b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    // Both start at once: the migrations do not race.
    let extra = ["--case", case.as_str()];
    let (mut a, b) = tokio::join!(
        sitrep_serve(0, dir_a.path(), &config, &extra, &[]),
        sitrep_serve(0, dir_b.path(), &config, &extra, &[]),
    );
    let http = reqwest::Client::new();
    for r in [&a, &b] {
        let ready = http
            .get(format!("{}/readyz", r.url))
            .send()
            .await
            .expect("readyz");
        assert_eq!(ready.status(), 200);
    }

    // Alerts x deliveries, shuffled, each to a replica picked by the shuffle; resolves mixed in
    // for a few alerts (after which their firing repeats may still arrive).
    const ALERTS: usize = 24;
    const REPEATS: usize = 5;
    let mut deliveries: Vec<(usize, bool, bool)> = Vec::new();
    for i in 0..ALERTS {
        for k in 0..REPEATS {
            deliveries.push((i, true, k % 2 == 0));
        }
        if i % 6 == 0 {
            deliveries.push((i, false, i % 4 == 0));
        }
    }
    shuffle(&mut deliveries, 0x5eed_1234);
    let started = Instant::now();
    let sends = deliveries.iter().map(|&(i, firing, to_a)| {
        let http = http.clone();
        let url = if to_a { a.url.clone() } else { b.url.clone() };
        async move {
            let resp = http
                .post(format!("{url}/webhook/alertmanager"))
                .json(&alert(i, firing))
                .send()
                .await
                .expect("send");
            let status = resp.status().as_u16();
            let body: Value = resp.json().await.expect("json");
            (i, firing, status, body)
        }
    });
    let answers = futures::future::join_all(sends).await;
    eprintln!(
        "{} deliveries over two replicas in {:?}",
        answers.len(),
        started.elapsed()
    );
    let mut session_of: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut starts = 0;
    for (i, firing, status, body) in &answers {
        assert!(*status == 200 || *status == 202, "{status} {body}");
        if *firing {
            let id = body["session"].as_str().expect("session").to_string();
            session_of.entry(*i).or_default().insert(id);
            if body["started"] == true {
                starts += 1;
            }
        }
    }
    assert_eq!(starts, ALERTS, "one start per alert");
    for (i, ids) in &session_of {
        assert_eq!(ids.len(), 1, "alert {i} answered with sessions {ids:?}");
    }
    let ids: BTreeSet<String> = session_of.values().flatten().cloned().collect();
    assert_eq!(ids.len(), ALERTS);
    let on_disk: BTreeSet<String> = support::session_files(&a.sessions)
        .into_iter()
        .chain(support::session_files(&b.sessions))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    // Every replica lists every session, whichever ran it.
    for r in [&a, &b] {
        loop {
            let l = listed(&http, r).await;
            if ids.iter().all(|id| l.contains_key(id)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} lists {} of {ALERTS}",
                r.url,
                l.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let wait_disk = Instant::now() + Duration::from_secs(20);
    let mut on_disk = on_disk;
    while on_disk.len() < ALERTS {
        assert!(
            Instant::now() < wait_disk,
            "{} session files",
            on_disk.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        on_disk = support::session_files(&a.sessions)
            .into_iter()
            .chain(support::session_files(&b.sessions))
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
    }
    assert_eq!(on_disk, ids, "exactly the answered sessions, none twice");

    // Sessions A runs, once each waits for an approval.
    let on_a: Vec<String> = support::session_files(&a.sessions)
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    assert!(on_a.len() >= 2, "A runs {} sessions", on_a.len());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pending: BTreeMap<String, String> = BTreeMap::new();
    while pending.len() < on_a.len() {
        for id in &on_a {
            // Seen through B: the records reach the store and B folds them.
            let v = get(&http, format!("{}/api/sessions/{id}", b.url)).await;
            if let Some(action) = v["pending_approvals"][0].as_str() {
                pending.insert(id.clone(), action.to_string());
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} sessions on A reached an approval",
            pending.len(),
            on_a.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // What `sitrep follow --server` tails: B serves the records of a session A runs, from the
    // store, numbered as A's file numbers its lines (the header is line 0).
    let (some, _) = pending.iter().next().expect("one");
    let records = |url: String, from: usize| {
        let http = http.clone();
        async move {
            http.get(format!("{url}/api/sessions/{some}/records?from={from}"))
                .send()
                .await
                .expect("records")
                .text()
                .await
                .expect("text")
        }
    };
    let via_b = records(b.url.clone(), 0).await;
    let via_a = records(a.url.clone(), 0).await;
    let lines_b: Vec<&str> = via_b.lines().collect();
    assert!(lines_b.len() > 2, "{via_b}");
    assert!(lines_b[0].contains("sitrep_session"), "{}", lines_b[0]);
    // The same records, in the same order, from either replica.
    let events_of = |lines: &[&str]| -> Vec<Value> {
        lines[1..]
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["event"].clone())
            .collect()
    };
    let lines_a: Vec<&str> = via_a.lines().collect();
    let n = lines_a.len().min(lines_b.len());
    assert_eq!(events_of(&lines_a[..n]), events_of(&lines_b[..n]));
    let later = records(b.url.clone(), 2).await;
    assert_eq!(later.lines().next(), lines_b.get(2).copied());

    // An approval posted to B for a session A runs is recorded on A within 2 s.
    let (approved, action) = pending
        .iter()
        .next()
        .map(|(s, a)| (s.clone(), a.clone()))
        .expect("one");
    let posted = Instant::now();
    let resp = http
        .post(format!("{}/api/sessions/{approved}/approve", b.url))
        .json(&json!({"action_id": action}))
        .send()
        .await
        .expect("approve");
    assert_eq!(resp.status(), 202);
    let file = a.sessions.join(format!("{approved}.ndjson"));
    loop {
        if events(&file)
            .iter()
            .any(|e| matches!(e, Event::ApprovalGiven { action_id, .. } if *action_id == action))
        {
            break;
        }
        assert!(
            posted.elapsed() < Duration::from_secs(2),
            "the approval did not reach A within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "approval posted to B recorded on A after {:?}",
        posted.elapsed()
    );
    // ... and the action runs there, within the same 2 s.
    loop {
        let ran = events(&file)
            .iter()
            .any(|e| matches!(e, Event::ActionExecuted { action_id, .. } if *action_id == action));
        if ran {
            break;
        }
        assert!(
            posted.elapsed() < Duration::from_secs(2),
            "the approved action did not run on A within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "the approved action ran on A {:?} after the post",
        posted.elapsed()
    );
    // It runs to its end on A before A is killed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !events(&file)
        .iter()
        .any(|e| matches!(e, Event::SessionEnded { .. }))
    {
        assert!(Instant::now() < deadline, "{approved} never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ... and the store knows it ended (B lists its outcome) before A is killed.
    loop {
        let l = listed(&http, &b).await;
        if l.get(&approved).is_some_and(|s| s["outcome"].is_string()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{approved}'s end never reached the store"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waiting: Vec<String> = pending
        .keys()
        .filter(|s| **s != approved)
        .cloned()
        .collect();
    // Alerts resolved after their claim (Alertmanager's order; the storm's resolves may have come
    // first) are not investigated again: each to the replica that did not run it.
    let mut resolved: BTreeSet<String> = BTreeSet::new();
    for (i, ids) in &session_of {
        let Some(id) = ids.iter().next().filter(|_| i % 6 == 0) else {
            continue;
        };
        let to = if on_a.contains(id) { &b.url } else { &a.url };
        let resp = http
            .post(format!("{to}/webhook/alertmanager"))
            .json(&alert(*i, false))
            .send()
            .await
            .expect("resolve");
        assert_eq!(resp.status(), 200);
        resolved.insert(id.clone());
    }
    let still_firing: Vec<String> = waiting
        .iter()
        .filter(|id| !resolved.contains(*id))
        .cloned()
        .collect();
    assert!(!still_firing.is_empty());

    // kill -9 A: within the lease + 10 s B shows A's waiting sessions interrupted, nothing in
    // them approved, and each (its alert still firing) investigated again once, on B.
    a.child.kill().expect("SIGKILL");
    let _ = a.child.wait();
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(lease + 10);
    loop {
        let l = listed(&http, &b).await;
        let interrupted = waiting
            .iter()
            .all(|id| l.get(id).is_some_and(|s| s["outcome"] == "interrupted"));
        let successors: Vec<&Value> = l
            .values()
            .filter(|s| s["takes_over"].as_str().is_some())
            .collect();
        if interrupted && successors.len() >= still_firing.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} s after the kill: interrupted {interrupted}, {} successor(s) of {}",
            killed.elapsed().as_secs(),
            successors.len(),
            still_firing.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("takeover seen on B {:?} after the kill", killed.elapsed());
    // Settle, then count: exactly one successor per interrupted session, none for the rest.
    tokio::time::sleep(Duration::from_secs(lease)).await;
    let l = listed(&http, &b).await;
    let mut successors: BTreeMap<String, usize> = BTreeMap::new();
    for s in l.values() {
        if let Some(old) = s["takes_over"].as_str() {
            *successors.entry(old.to_string()).or_default() += 1;
            // Run by the survivor: its file is on B's disk.
            let id = s["id"].as_str().unwrap_or_default();
            assert!(b.sessions.join(format!("{id}.ndjson")).exists(), "{s}");
        }
    }
    let expected: BTreeMap<String, usize> = still_firing.iter().map(|id| (id.clone(), 1)).collect();
    assert_eq!(successors, expected);
    for id in &waiting {
        let v = get(&http, format!("{}/api/sessions/{id}", b.url)).await;
        assert_eq!(v["running"], false, "{v}");
        assert_eq!(v["pending_approvals"], json!([]), "{v}");
        let text = v.to_string();
        assert!(
            !text.contains("approval_given"),
            "{id}: something was approved: {text}"
        );
        // A's own file shows nothing approved either.
        let file = dir_a.path().join("sessions").join(format!("{id}.ndjson"));
        assert!(
            !events(&file)
                .iter()
                .any(|e| matches!(e, Event::ApprovalGiven { .. })),
            "{id} approved on A"
        );
    }
    // A relayed decision for an interrupted session is refused.
    let resp = http
        .post(format!("{}/api/sessions/{}/approve", b.url, waiting[0]))
        .json(&json!({"action_id": pending[&waiting[0]]}))
        .send()
        .await
        .expect("approve");
    assert_eq!(resp.status(), 404);
    drop(b);
    drop(pg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_store_and_metrics_parse() {
    let pg = match Pg::start(&[], &[]) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let case = case_dir().to_string_lossy().to_string();
    let served = sitrep_serve(
        0,
        dir.path(),
        &store_config(&pg, 15),
        &["--case", &case],
        &[],
    )
    .await;
    let http = reqwest::Client::new();
    let status = |path: &'static str| {
        let (http, url) = (http.clone(), served.url.clone());
        async move {
            http.get(format!("{url}{path}"))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0)
        }
    };
    assert_eq!(status("/healthz").await, 200);
    assert_eq!(status("/readyz").await, 200);
    let resp = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .json(&alert(1, true))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    let text = http
        .get(format!("{}/metrics", served.url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains("sitrep_serve_deliveries_total{source=\"alertmanager\",code=\"202\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("sitrep_serve_lease_age_seconds{replica="),
        "{text}"
    );
    if support::have_binaries(&["promtool"]) {
        let path = dir.path().join("metrics.txt");
        std::fs::write(&path, &text).expect("write");
        let out = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(&path).expect("open"))
            .output()
            .expect("promtool");
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The store stops: not ready, and deliveries are refused with 503 rather than lost.
    pg.pause().expect("stop the store");
    let deadline = Instant::now() + Duration::from_secs(15);
    while status("/readyz").await != 503 {
        assert!(
            Instant::now() < deadline,
            "readyz still 200 with the store down"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status("/healthz").await, 200);
    let resp = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .json(&alert(2, true))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 503);
    // It comes back: ready again, and the refused page is accepted when re-sent.
    pg.resume().expect("start the store again");
    let deadline = Instant::now() + Duration::from_secs(15);
    while status("/readyz").await != 200 {
        assert!(
            Instant::now() < deadline,
            "readyz still 503 with the store back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let resp = http
        .post(format!("{}/webhook/alertmanager", served.url))
        .json(&alert(2, true))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 202);
    let text = http
        .get(format!("{}/metrics", served.url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains("sitrep_serve_deliveries_total{source=\"alertmanager\",code=\"503\"} 1"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_stops_serve_with_an_error_within_10_s() {
    let port = support::free_port();
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("config.toml");
    std::fs::write(&config_path, "").expect("config");
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{}", support::free_port()),
            "--case",
            &case_dir().to_string_lossy(),
            "--store",
            &format!("postgres://nobody@127.0.0.1:{port}/sitrep"),
        ])
        .arg("--sessions-dir")
        .arg(dir.path().join("sessions"))
        .env("SITREP_CONFIG", &config_path)
        .env("SITREP_DATA_DIR", dir.path())
        .output()
        .expect("run");
    let took = started.elapsed();
    assert!(!out.status.success());
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("store") && err.contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}
