//! A replica killed with SIGKILL while the store was away loses none of its sessions' records
//! in the store: what the kill kept from reaching it is still in the session files, and the
//! replica, started again on the same disk, brings every record the files held at the kill to
//! the store, in its place.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::postgres::{ADMIN, Pg};
use support::sitrep_serve;

const ALERTS: usize = 6;
/// Lines from here on are the ones a takeover adds, not the session's own.
const TAKEOVER_SEQ: i64 = 1 << 40;

fn alert(base: &Value, i: usize) -> Value {
    let mut v = base.clone();
    v["groupKey"] = json!(format!("{{}}:{{instance=\"tail-{i}\"}}"));
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["labels"]["instance"] = json!(format!("tail-{i}"));
            if let Some(obj) = a.as_object_mut() {
                obj.remove("fingerprint");
            }
        }
    }
    v
}

/// Each session file's whole lines, by session id.
fn files(dir: &Path) -> BTreeMap<String, Vec<String>> {
    support::session_files(dir)
        .into_iter()
        .filter_map(|p: PathBuf| {
            let id = p.file_stem()?.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).ok()?;
            // A last line the kill cut short was never written whole.
            let whole = &text[..text.rfind('\n').map_or(0, |n| n + 1)];
            Some((id, whole.lines().map(str::to_string).collect()))
        })
        .collect()
}

/// The session's own lines in the store, by their place.
async fn stored(db: &tokio_postgres::Client, id: &str) -> BTreeMap<i64, String> {
    db.query(
        "SELECT seq, line FROM sitrep_records WHERE session = $1 AND seq < $2",
        &[&id, &TAKEOVER_SEQ],
    )
    .await
    .expect("records")
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// Records (after the header) a file holds that the store lacks or holds otherwise.
fn missing(file: &[String], store: &BTreeMap<i64, String>) -> usize {
    file.iter()
        .enumerate()
        .skip(1)
        .filter(|(i, line)| store.get(&(*i as i64)) != Some(*line))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_a_kill_kept_from_the_store_reach_it_when_the_replica_comes_back() {
    let pg = match Pg::start(&[], &[]) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let (case, base) = support::checkout_case();
    let config = pg.store_config(
        &format!("[serve]\nmax_concurrent = {ALERTS}\n"),
        "lease_secs = 3\n",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = ["--case", case.as_str()];
    let mut a = sitrep_serve(0, dir.path(), &config, &extra, &[]).await;
    let http = reqwest::Client::new();
    for i in 0..ALERTS {
        let resp = http
            .post(format!("{}/webhook/alertmanager", a.url))
            .json(&alert(&base, i))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 202);
    }
    // The store goes away while the investigations write: their records reach the files only.
    pg.pause().expect("stop the store");
    // Until each waits for an approval (their files stop growing), then SIGKILL.
    let sessions = a.sessions.clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = files(&sessions);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = files(&sessions);
        if now.len() == ALERTS && now == last {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the investigations never settled"
        );
        last = now;
    }
    a.child.kill().expect("SIGKILL");
    let _ = a.child.wait();
    let at_kill = files(&sessions);
    assert_eq!(at_kill.len(), ALERTS);

    pg.resume().expect("start the store again");
    let db = pg.connect(ADMIN, None, "sitrep-test").await;
    let mut lacking = 0;
    for (id, lines) in &at_kill {
        lacking += missing(lines, &stored(&db, id).await);
    }
    eprintln!("at the kill the store lacked {lacking} record(s) the files held");
    assert!(lacking > 0, "the store went away and lacked nothing");

    // Started again on the same disk: every record the files held at the kill reaches the
    // store, each in its place.
    let _b = sitrep_serve(0, dir.path(), &config, &extra, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    for (id, lines) in &at_kill {
        loop {
            let store = stored(&db, id).await;
            let lacks = missing(lines, &store);
            if lacks == 0 {
                assert!(store.contains_key(&0), "{id} has no header in the store");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{id}: the store still lacks {lacks} of the {} record(s) its file held",
                lines.len() - 1
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    drop(pg);
}
