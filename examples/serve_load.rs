//! Load driver for `sitrep serve`: starts the real binary on a free loopback port over a recorded
//! case (read-only, so each investigation ends on its own), fires an alert storm at its
//! Alertmanager webhook from concurrent workers (each alert delivered several times, shuffled,
//! resolves mixed in; a 503 is retried after its `Retry-After`, as Alertmanager does), and prints
//! deliveries per second accepted, p50/p99 webhook latency, investigations started against the
//! distinct firing fingerprints (exact), lost alerts, 503s seen, peak RSS and RSS after the storm.
//!
//! `cargo run --release --example serve_load -- [--bin PATH] [--alerts N] [--repeats N]
//! [--workers N] [--max-concurrent N] [--queue N]`; `scripts/bench serve` runs it.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    bin: PathBuf,
    alerts: usize,
    repeats: usize,
    workers: usize,
    max_concurrent: usize,
    queue: usize,
}

fn args() -> Args {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        bin: root.join("target/release/sitrep"),
        alerts: 1000,
        repeats: 5,
        workers: 16,
        max_concurrent: 8,
        queue: 256,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(k) = it.next() {
        let v = it.next().map(String::as_str).unwrap_or("");
        let n = v.parse::<usize>().unwrap_or(0);
        match k.as_str() {
            "--bin" => a.bin = PathBuf::from(v),
            "--alerts" => a.alerts = n.max(1),
            "--repeats" => a.repeats = n.max(1),
            "--workers" => a.workers = n.max(1),
            "--max-concurrent" => a.max_concurrent = n.max(1),
            "--queue" => a.queue = n,
            other => {
                eprintln!("serve_load: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    a
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// One delivery: alert `i`, firing or resolved.
fn payload(base: &Value, i: usize, firing: bool) -> Value {
    let mut v = base.clone();
    let status = if firing { "firing" } else { "resolved" };
    v["status"] = json!(status);
    v["groupKey"] = json!(format!(
        "{{}}:{{alertname=\"HighErrorRate\",instance=\"i-{i}\"}}"
    ));
    if let Some(alerts) = v["alerts"].as_array_mut() {
        alerts.truncate(1);
        for a in alerts {
            a["status"] = json!(status);
            a["labels"]["instance"] = json!(format!("i-{i}"));
            if let Some(o) = a.as_object_mut() {
                o.remove("fingerprint");
            }
        }
    }
    v
}

/// How long an idle server is left before its RSS is read: it hands freed memory back every 5 s
/// while idle, and idle threads of the runtimes' blocking pools exit after 10 s.
const SETTLE: Duration = Duration::from_secs(20);

/// Waits until no investigation runs or waits.
async fn wait_idle(http: &reqwest::Client, url: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let v: Value = http
            .get(format!("{url}/api/sessions"))
            .send()
            .await?
            .json()
            .await?;
        let busy = v["sessions"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter(|x| x["running"] == true || x["queued"] == true)
                    .count()
            })
            .unwrap_or(0);
        if busy == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "investigations still running after 600 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// One storm: each of `a.alerts` alerts (numbered from `offset`) delivered `a.repeats` times,
/// shuffled, every fifth delivery of an alert after its first a resolve, from `a.workers`
/// senders. Returns the tally, the deliveries made and the seconds it took.
async fn storm(
    a: &Args,
    url: &str,
    base: &Value,
    offset: usize,
) -> anyhow::Result<(Tally, usize, f64)> {
    let mut deliveries: Vec<(usize, bool)> = Vec::new();
    for i in 0..a.alerts {
        for r in 0..a.repeats {
            deliveries.push((i, !(r > 0 && (i + r) % 5 == 0)));
        }
    }
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for k in (1..deliveries.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        deliveries.swap(k, (seed % (k as u64 + 1)) as usize);
    }
    let total = deliveries.len();
    let work = Arc::new(Mutex::new(deliveries));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    // The storm's senders have their own connections, closed when it is over, as Alertmanager's
    // idle ones are: the server's memory afterwards is what the storm left, not open sockets.
    let senders = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut workers = Vec::new();
    for _ in 0..a.workers {
        let (work, tally, http, url, base) = (
            work.clone(),
            tally.clone(),
            senders.clone(),
            url.to_string(),
            base.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let next = work.lock().map(|mut w| w.pop()).unwrap_or(None);
                let Some((i, firing)) = next else { break };
                let body = payload(&base, offset + i, firing);
                loop {
                    let t0 = Instant::now();
                    let resp = http
                        .post(format!("{url}/webhook/alertmanager"))
                        .json(&body)
                        .send()
                        .await;
                    let ms = t0.elapsed().as_secs_f64() * 1000.0;
                    let Ok(resp) = resp else {
                        if let Ok(mut t) = tally.lock() {
                            t.failed += 1;
                        }
                        break;
                    };
                    let status = resp.status().as_u16();
                    let retry = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok());
                    let v: Value = resp.json().await.unwrap_or(Value::Null);
                    let retry_now = {
                        let Ok(mut t) = tally.lock() else { break };
                        t.latencies_ms.push(ms);
                        match status {
                            202 => {
                                t.accepted += 1;
                                t.firing.insert(i);
                                if v["joined"] != true
                                    && let Some(s) = v["session"].as_str()
                                {
                                    t.sessions.insert(s.to_string());
                                }
                                false
                            }
                            200 if v["duplicate"] == true => {
                                t.duplicates += 1;
                                t.firing.insert(i);
                                false
                            }
                            200 => {
                                t.other_ok += 1;
                                false
                            }
                            503 => {
                                t.unavailable += 1;
                                true
                            }
                            _ => {
                                t.failed += 1;
                                false
                            }
                        }
                    };
                    if retry_now {
                        // Alertmanager waits and retries; the bench waits less.
                        let wait = retry.unwrap_or(1).min(1);
                        tokio::time::sleep(Duration::from_millis(200 * wait)).await;
                        continue;
                    }
                    break;
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    let secs = started.elapsed().as_secs_f64();
    let t = std::mem::take(
        &mut *tally
            .lock()
            .map_err(|_| anyhow::anyhow!("tally poisoned"))?,
    );
    Ok((t, total, secs))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

#[derive(Default)]
struct Tally {
    latencies_ms: Vec<f64>,
    accepted: usize,
    duplicates: usize,
    other_ok: usize,
    unavailable: usize,
    failed: usize,
    sessions: BTreeSet<String>,
    firing: BTreeSet<usize>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let a = args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let case = root.join("cases/checkout-bad-deploy");
    let base: Value = serde_json::from_str(&std::fs::read_to_string(case.join("alert.json"))?)?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[policy]\nread_only = true\n[serve]\nmax_concurrent = {}\nqueue = {}\n",
            a.max_concurrent, a.queue
        ),
    )?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let listen = format!("127.0.0.1:{port}");
    let sessions = dir.path().join("sessions");
    let mut child = Command::new(&a.bin)
        .args(["serve", "--listen", &listen, "--case"])
        .arg(&case)
        .arg("--sessions-dir")
        .arg(&sessions)
        .env("SITREP_CONFIG", &config)
        .env("SITREP_DATA_DIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", a.bin.display()))?;
    let pid = child.id();
    let url = format!("http://{listen}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(&listen).await.is_err() {
        anyhow::ensure!(Instant::now() < deadline, "sitrep serve never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    // The cold baseline: a server that has answered requests but investigated nothing.
    for _ in 0..20 {
        let _ = http.get(format!("{url}/api/sessions")).send().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_cold = rss_kib(pid, "VmRSS:");
    // The baseline: a server that has investigated before, as one on call has. As many
    // investigations as may run at once, of alerts the storm does not repeat, bring in the code
    // and the per-thread caches every investigation needs; the storm is then measured against it.
    for k in 0..a.max_concurrent {
        let body = payload(&base, a.alerts + k, true);
        let _ = http
            .post(format!("{url}/webhook/alertmanager"))
            .json(&body)
            .send()
            .await;
    }
    wait_idle(&http, &url).await?;
    tokio::time::sleep(SETTLE).await;
    let rss_before = rss_kib(pid, "VmRSS:");
    // Heap and stacks apart from the binary's own pages.
    let (anon_before, file_before) = (rss_kib(pid, "RssAnon:"), rss_kib(pid, "RssFile:"));

    let (t, total, storm_secs) = storm(&a, &url, &base, 0).await?;
    wait_idle(&http, &url).await?;
    tokio::time::sleep(SETTLE / 2).await;
    let rss_settling = rss_kib(pid, "VmRSS:");
    let threads_settling = rss_kib(pid, "Threads:");
    tokio::time::sleep(SETTLE / 2).await;
    let rss_after = rss_kib(pid, "VmRSS:");
    let (anon_after, file_after) = (rss_kib(pid, "RssAnon:"), rss_kib(pid, "RssFile:"));
    let threads_after = rss_kib(pid, "Threads:");
    let rss_peak = rss_kib(pid, "VmHWM:");
    // A second storm of as many new alerts: what a storm leaves behind for good shows as growth
    // from one storm's aftermath to the next.
    let (t2, _, _) = storm(&a, &url, &base, a.alerts + a.max_concurrent).await?;
    wait_idle(&http, &url).await?;
    tokio::time::sleep(SETTLE).await;
    let rss_after_second = rss_kib(pid, "VmRSS:");
    let files = std::fs::read_dir(&sessions)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "ndjson"))
                .count()
        })
        .unwrap_or(0);
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();

    let mut lat = t.latencies_ms.clone();
    lat.sort_by(|x, y| x.total_cmp(y));
    // Every alert's first delivery fires: one investigation each, exactly.
    let expected = a.alerts;
    let answered_alerts = t.firing.len();
    let answered = t.accepted + t.duplicates + t.other_ok;
    println!(
        "serve load: {total} deliveries ({} alerts x {}, shuffled, resolves mixed in), {} workers, max_concurrent {}, queue {}",
        a.alerts, a.repeats, a.workers, a.max_concurrent, a.queue
    );
    println!("  storm wall time            {storm_secs:.2} s");
    println!(
        "  deliveries/s accepted      {:.0}",
        answered as f64 / storm_secs
    );
    println!(
        "  webhook latency p50 / p99  {:.1} ms / {:.1} ms",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    println!(
        "  answers                    {} started, {} duplicate, {} other 200, {} x 503 (retried), {} failed",
        t.accepted, t.duplicates, t.other_ok, t.unavailable, t.failed
    );
    println!(
        "  investigations             {} started, {} expected (distinct firing fingerprints), {} session files (with the {} before and the second storm's)",
        t.sessions.len(),
        expected,
        files,
        a.max_concurrent
    );
    println!(
        "  lost alerts                {} (alerts never answered 202 or duplicate: {})",
        expected.saturating_sub(t.sessions.len()) + t.failed,
        expected.saturating_sub(answered_alerts)
    );
    println!(
        "  RSS cold / before / peak / after  {} / {} / {} / {} MiB",
        rss_cold / 1024,
        rss_before / 1024,
        rss_peak / 1024,
        rss_after / 1024
    );
    println!(
        "  RSS / threads 10 s and 20 s after the storm  {} MiB, {} / {} MiB, {}",
        rss_settling / 1024,
        threads_settling,
        rss_after / 1024,
        threads_after
    );
    println!(
        "  of which anon / file       {} / {} MiB before, {} / {} MiB after",
        anon_before / 1024,
        file_before / 1024,
        anon_after / 1024,
        file_after / 1024
    );
    let warm = a.max_concurrent;
    let exact = t.sessions.len() == expected
        && t2.sessions.len() == expected
        && files == 2 * expected + warm
        && t.failed + t2.failed == 0;
    let flat = rss_after as f64 <= rss_before as f64 * 1.2;
    println!(
        "  second storm               {} started, {} expected; RSS after it {} MiB",
        t2.sessions.len(),
        expected,
        rss_after_second / 1024
    );
    let steady = rss_after_second as f64 <= rss_after as f64 * 1.2;
    println!(
        "  RSS after the second storm within 20% of after the first  {}",
        if steady { "PASS" } else { "FAIL" }
    );
    println!(
        "  exact dedup, 0 lost        {}",
        if exact { "PASS" } else { "FAIL" }
    );
    println!(
        "  RSS after within 20%       {}",
        if flat { "PASS" } else { "FAIL" }
    );
    Ok(())
}
