//! An alert storm over two `sitrep serve` replicas on one real PostgreSQL store: 400 alerts
//! delivered 5 times each (resolves mixed in), shuffled, every delivery to a replica picked at
//! random (seeded, so a failure replays). Exactly one session per alert across both replicas,
//! none lost, and each replica's `GET /api/sessions` lists every one of them.

mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::postgres::Pg;
use support::sitrep_serve;

const ALERTS: usize = 400;
const REPEATS: usize = 5;
const SENDERS: usize = 16;

/// A small deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The case's page about instance `i`, firing or resolved, in a group of its own.
fn alert(base: &Value, i: usize, firing: bool) -> Value {
    let status = if firing { "firing" } else { "resolved" };
    let mut v = base.clone();
    v["status"] = json!(status);
    v["groupKey"] = json!(format!("{{}}:{{instance=\"storm-{i}\"}}"));
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["status"] = json!(status);
            a["labels"]["instance"] = json!(format!("storm-{i}"));
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

/// Every session id a replica lists, each as many times as it is listed.
async fn listed(http: &reqwest::Client, url: &str) -> Vec<String> {
    let v: Value = http
        .get(format!("{url}/api/sessions"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(v["errors"], json!([]), "{url}: {}", v["errors"]);
    v["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_split_over_two_replicas_starts_one_session_per_alert_listed_by_both() {
    // Not every statement in the server's log, as the tests' default has it: the storm's
    // figures are the replicas' and the store's, not the logging's.
    let pg = match Pg::start(&["log_statement = 'none'"], &[]) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let (case, base) = support::checkout_case();
    // Read-only, so each investigation ends on its own; few slots, so the receivers keep the
    // CPU, and a queue long enough that no delivery is refused.
    let config = pg.store_config(
        "[policy]\nread_only = true\n[serve]\nmax_concurrent = 2\nqueue = 4096\n",
        "",
    );
    let (dir_a, dir_b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let extra = ["--case", case.as_str()];
    let (a, b) = tokio::join!(
        sitrep_serve(0, dir_a.path(), &config, &extra, &[]),
        sitrep_serve(0, dir_b.path(), &config, &extra, &[]),
    );
    let urls = [a.url.clone(), b.url.clone()];

    // Each alert's first delivery fires; of the others, one in five is its resolve (which may
    // arrive before any firing one). Shuffled, each to a replica picked at random.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut deliveries: Vec<(usize, bool, usize)> = Vec::new();
    for i in 0..ALERTS {
        for r in 0..REPEATS {
            let firing = r == 0 || (i + r) % 5 != 0;
            deliveries.push((i, firing, (rng.next() % 2) as usize));
        }
    }
    for k in (1..deliveries.len()).rev() {
        deliveries.swap(k, (rng.next() % (k as u64 + 1)) as usize);
    }
    assert_eq!(deliveries.len(), ALERTS * REPEATS);
    let resolves = deliveries.iter().filter(|d| !d.1).count();
    assert!(resolves > 0);
    let per_replica = [0, 1].map(|r| deliveries.iter().filter(|d| d.2 == r).count());
    assert!(per_replica.iter().all(|n| *n > ALERTS), "{per_replica:?}");

    // Answers: alert -> the sessions named, and the sessions answered `started`.
    type Answers = (BTreeMap<usize, BTreeSet<String>>, Vec<String>);
    let work = Arc::new(Mutex::new(deliveries));
    let answers: Arc<Mutex<Answers>> = Arc::default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let started = Instant::now();
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (work, answers, http, urls, base) = (
            work.clone(),
            answers.clone(),
            http.clone(),
            urls.clone(),
            base.clone(),
        );
        senders.push(tokio::spawn(async move {
            loop {
                let next = work.lock().expect("work").pop();
                let Some((i, firing, to)) = next else { break };
                let resp = http
                    .post(format!("{}/webhook/alertmanager", urls[to]))
                    .json(&alert(&base, i, firing))
                    .send()
                    .await
                    .expect("send");
                let status = resp.status().as_u16();
                let body: Value = resp.json().await.expect("json");
                assert!(status == 200 || status == 202, "{status} {body}");
                if !firing {
                    continue;
                }
                let id = body["session"].as_str().expect("a session").to_string();
                let mut answers = answers.lock().expect("answers");
                if body["started"] == true {
                    answers.1.push(id.clone());
                }
                answers.0.entry(i).or_default().insert(id);
            }
        }));
    }
    for s in senders {
        s.await.expect("sender");
    }
    eprintln!(
        "{} deliveries over two replicas in {:?}",
        ALERTS * REPEATS,
        started.elapsed()
    );
    let (session_of, starts) = std::mem::take(&mut *answers.lock().expect("answers"));
    // None lost, exactly one session per alert, and each started once.
    assert_eq!(session_of.len(), ALERTS, "alerts answered with a session");
    for (i, ids) in &session_of {
        assert_eq!(ids.len(), 1, "alert {i} answered with sessions {ids:?}");
    }
    let ids: BTreeSet<String> = session_of.values().flatten().cloned().collect();
    assert_eq!(ids.len(), ALERTS, "a session of its own for each alert");
    let mut started_ids = starts.clone();
    started_ids.sort();
    started_ids.dedup();
    assert_eq!(starts.len(), ALERTS, "one start per alert");
    assert_eq!(started_ids.into_iter().collect::<BTreeSet<_>>(), ids);

    // Each replica lists every session, once, and nothing else: its own and the other's.
    for url in &urls {
        let list = listed(&http, url).await;
        let set: BTreeSet<String> = list.iter().cloned().collect();
        assert_eq!(set.len(), list.len(), "{url} lists a session twice");
        assert_eq!(
            set, ids,
            "{url} lists other sessions than the answered ones"
        );
    }
    // Both replicas ran some of them (their session files are on their own disks).
    let running_on = |dir: &Path| {
        support::session_files(&dir.join("sessions"))
            .iter()
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect::<BTreeSet<String>>()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (on_a, on_b) = (running_on(dir_a.path()), running_on(dir_b.path()));
        assert!(on_a.is_disjoint(&on_b), "a session ran on both replicas");
        assert!(on_a.union(&on_b).all(|id| ids.contains(id)));
        if !on_a.is_empty() && !on_b.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "A ran {on_a:?}, B ran {on_b:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop((a, b));
    drop(pg);
}
