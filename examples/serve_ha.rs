//! Load driver for `sitrep serve` replicas on a shared store: starts a real PostgreSQL on a free
//! loopback port and two `sitrep serve` processes on it over a recorded case (read-only, so each
//! investigation ends on its own), sends every alert several times (shuffled, resolves mixed in),
//! each delivery to a replica picked at random, and prints deliveries/s, p50/p99 webhook latency
//! and investigations per alert; then the same storm against one process with no store, for the
//! single-process figures beside them.
//!
//! `cargo run --release --example serve_ha -- [--bin PATH] [--alerts N] [--repeats N]
//! [--workers N]`; `scripts/bench serve-ha` runs it.

/// The tests' real PostgreSQL: Debian's binaries in a temp dir, on a free loopback port.
#[path = "../tests/support/postgres.rs"]
#[allow(dead_code)]
mod postgres;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    bin: PathBuf,
    alerts: usize,
    repeats: usize,
    workers: usize,
}

fn args() -> Args {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        bin: root.join("target/release/sitrep"),
        alerts: 1000,
        repeats: 5,
        workers: 16,
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
            other => {
                eprintln!("serve_ha: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    a
}

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

/// A port nothing listens on now (the one the OS hands out for port 0).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

struct Replica {
    url: String,
    child: Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(a: &Args, dir: &Path, config: &str) -> anyhow::Result<Replica> {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    std::fs::create_dir_all(dir)?;
    let config_path = dir.join("config.toml");
    std::fs::write(&config_path, config)?;
    let listen = format!("127.0.0.1:{}", free_port());
    let child = Command::new(&a.bin)
        .args(["serve", "--listen", &listen, "--case"])
        .arg(&case)
        .arg("--sessions-dir")
        .arg(dir.join("sessions"))
        .env("SITREP_CONFIG", &config_path)
        .env("SITREP_DATA_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", a.bin.display()))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(&listen).await.is_err() {
        anyhow::ensure!(Instant::now() < deadline, "sitrep serve never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Replica {
        url: format!("http://{listen}"),
        child,
    })
}

#[derive(Default)]
struct Tally {
    latencies_ms: Vec<f64>,
    unavailable: usize,
    failed: usize,
    /// Alert -> the sessions its deliveries were answered with.
    sessions: BTreeMap<usize, BTreeSet<String>>,
    /// Sessions answered `started`.
    started: BTreeSet<String>,
}

/// Every alert `a.repeats` times, shuffled, every fifth delivery after an alert's first a
/// resolve, each to one of `urls` (picked by the shuffle), from `a.workers` senders; a 503 is
/// retried, as Alertmanager does.
async fn storm(a: &Args, urls: &[String], base: &Value) -> anyhow::Result<(Tally, usize, f64)> {
    let mut deliveries: Vec<(usize, bool, usize)> = Vec::new();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..a.alerts {
        for r in 0..a.repeats {
            let to = (next() % urls.len() as u64) as usize;
            deliveries.push((i, !(r > 0 && (i + r) % 5 == 0), to));
        }
    }
    for k in (1..deliveries.len()).rev() {
        deliveries.swap(k, (next() % (k as u64 + 1)) as usize);
    }
    let total = deliveries.len();
    let work = Arc::new(Mutex::new(deliveries));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..a.workers {
        let (work, tally, http, urls, base) = (
            work.clone(),
            tally.clone(),
            http.clone(),
            urls.to_vec(),
            base.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let next = work.lock().map(|mut w| w.pop()).unwrap_or(None);
                let Some((i, firing, to)) = next else { break };
                let body = payload(&base, i, firing);
                loop {
                    let t0 = Instant::now();
                    let resp = http
                        .post(format!("{}/webhook/alertmanager", urls[to]))
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
                    let v: Value = resp.json().await.unwrap_or(Value::Null);
                    let retry = {
                        let Ok(mut t) = tally.lock() else { break };
                        t.latencies_ms.push(ms);
                        match status {
                            200 | 202 => {
                                if let Some(s) = v["session"].as_str() {
                                    t.sessions.entry(i).or_default().insert(s.to_string());
                                    if v["started"] == true {
                                        t.started.insert(s.to_string());
                                    }
                                }
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
                    if retry {
                        tokio::time::sleep(Duration::from_millis(200)).await;
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

/// Prints one run's figures; `true` when every alert got exactly one session.
fn report(label: &str, a: &Args, t: &Tally, total: usize, secs: f64) -> bool {
    let mut lat = t.latencies_ms.clone();
    lat.sort_by(|x, y| x.total_cmp(y));
    let per_alert: Vec<usize> = (0..a.alerts)
        .map(|i| t.sessions.get(&i).map_or(0, BTreeSet::len))
        .collect();
    let exact = per_alert.iter().all(|n| *n == 1) && t.started.len() == a.alerts;
    println!("{label}");
    println!(
        "  deliveries/s               {:.0} ({total} in {secs:.2} s)",
        total as f64 / secs
    );
    println!(
        "  webhook latency p50 / p99  {:.1} ms / {:.1} ms",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    println!(
        "  investigations per alert   {:.3} ({} started for {} alerts; most sessions answered for one alert: {})",
        t.started.len() as f64 / a.alerts as f64,
        t.started.len(),
        a.alerts,
        per_alert.iter().max().copied().unwrap_or(0)
    );
    println!(
        "  503 (retried) / failed     {} / {}",
        t.unavailable, t.failed
    );
    println!(
        "  one session per alert      {}",
        if exact { "PASS" } else { "FAIL" }
    );
    exact
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let a = args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base: Value = serde_json::from_str(&std::fs::read_to_string(
        root.join("cases/checkout-bad-deploy/alert.json"),
    )?)?;
    // Statements are not logged (the tests' default logs each): a store in service does not.
    let pg =
        postgres::Pg::start(&["log_statement = 'none'"], &[]).map_err(|e| anyhow::anyhow!(e))?;
    let dir = tempfile::tempdir()?;
    // Slots enough that no alert waits for a long queue: the figures are the receiver's.
    let limits = "[policy]\nread_only = true\n[serve]\nmax_concurrent = 16\nqueue = 4096\n";
    let store = format!(
        "{limits}[serve.store]\nurl = \"postgres://{}@127.0.0.1:{}/postgres?sslmode=disable\"\n",
        postgres::ADMIN,
        pg.port
    );
    let (dir_a, dir_b) = (dir.path().join("a"), dir.path().join("b"));
    let (ra, rb) = tokio::join!(start(&a, &dir_a, &store), start(&a, &dir_b, &store));
    let (ra, rb) = (ra?, rb?);
    let (t, total, secs) = storm(&a, &[ra.url.clone(), rb.url.clone()], &base).await?;
    println!(
        "serve-ha: {} alerts x {} deliveries, shuffled, resolves mixed in, {} workers",
        a.alerts, a.repeats, a.workers
    );
    let ha = report(
        "two replicas on one PostgreSQL store (each delivery to a random replica)",
        &a,
        &t,
        total,
        secs,
    );
    drop((ra, rb));
    let single = start(&a, &dir.path().join("single"), limits).await?;
    let (t, total, secs) = storm(&a, std::slice::from_ref(&single.url), &base).await?;
    let one = report("one process, no store", &a, &t, total, secs);
    drop(single);
    drop(pg);
    anyhow::ensure!(ha && one, "an alert did not get exactly one session");
    Ok(())
}
