//! Investigations at cluster size: writes the built-in `checkout-bad-deploy` case grown with N
//! healthy filler pods of other Deployments, N normal events and N/50 nodes (paged by 500 as a
//! server would, the unpaged answers kept), and measures an investigation of such a case.
//!
//! Usage:
//!   bigworld gen DIR N [--unpaged]
//!                          write the inflated case directory (`--unpaged`: every list whole,
//!                          as a server that does not page answers; what older builds ask for)
//!   bigworld run DIR       investigate it (rules, diagnosis only, nothing saved) and print one
//!                          JSON line: seconds to the verdict (wall clock and CPU), the verdict,
//!                          peak RSS, requests made and bytes read
//!
//! `scripts/bench bigworld` runs both at 1k, 10k and 50k in release builds, each run in its own
//! process so each peak RSS is its own.

use anyhow::{Context, bail};
use sitrep::model::{Event, Stage};
use sitrep::world::inflate::{Filler, inflate};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const CASE: &str = "checkout-bad-deploy";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen", dir, n, rest @ ..] => {
            let n: usize = n.parse().with_context(|| format!("not a count: {n}"))?;
            let unpaged = match rest {
                [] => false,
                ["--unpaged"] => true,
                _ => bail!("usage: bigworld gen DIR N [--unpaged]"),
            };
            generate(Path::new(dir), n, unpaged)
        }
        ["run", dir] => run(Path::new(dir)),
        _ => bail!("usage: bigworld gen DIR N [--unpaged] | bigworld run DIR"),
    }
}

fn generate(dir: &Path, n: usize, unpaged: bool) -> anyhow::Result<()> {
    let files = sitrep::world::demo::files(CASE).context("the built-in case is missing")?;
    let files: BTreeMap<String, String> = files
        .into_iter()
        .map(|(path, text)| {
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            (name, text)
        })
        .collect();
    let mut filler = Filler::standard(n);
    if unpaged {
        filler.page = None;
    }
    let grown = inflate(&files, filler).map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in grown {
        let path = dir.join(&name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// CPU time this process has used so far, all threads (user + system), in seconds: on a busy
/// machine it says more than the wall clock does.
fn cpu_secs() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return f64::NAN;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Peak resident set of this process, from /proc (MiB).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn run(dir: &Path) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = Instant::now();
    let cpu_at_start = cpu_secs();
    let line = rt.block_on(async {
        let world = sitrep::world::World::from_case_dir(dir)
            .with_context(|| format!("cannot load {}", dir.display()))?;
        world.count_traffic();
        if std::env::var_os("BIGWORLD_DEBUG_RSS").is_some() {
            eprintln!("loaded: {:?} MiB", peak_rss_mib());
        }
        let trigger = match world.case().and_then(|c| c.alert.clone()) {
            Some(payload) => sitrep::agent::Trigger::Alert(payload),
            None => bail!("{}: the case has no alert", dir.display()),
        };
        let world = Arc::new(world);
        let opts = sitrep::agent::AgentOptions {
            diagnosis_only: true,
            mode: sitrep::model::RunMode::Case,
            ..Default::default()
        };
        let mut handle = sitrep::agent::spawn(world.clone(), trigger, opts);
        let mut verdict = None;
        let trace = std::env::var_os("BIGWORLD_DEBUG_RSS").is_some();
        while let Some(record) = handle.records.recv().await {
            if trace {
                let what = match &record.event {
                    Event::ToolCalled { tool, .. } => format!("call {tool}"),
                    Event::StageStarted { stage } => format!("start {stage:?}"),
                    Event::StageFinished { stage, .. } => format!("finish {stage:?}"),
                    Event::ToolSucceeded { call_id, .. } => format!("ok {call_id}"),
                    _ => String::new(),
                };
                if !what.is_empty() {
                    eprintln!("{:8.3} {what}", record.t);
                }
            }
            match record.event {
                Event::Diagnosis {
                    category,
                    root_cause,
                    ..
                } => verdict = Some((category, root_cause)),
                Event::StageFinished {
                    stage: Stage::Diagnose,
                    ..
                } => break,
                _ => {}
            }
        }
        let (requests, bytes, counting) = world.traffic().unwrap_or_default();
        let secs = started.elapsed().saturating_sub(counting).as_secs_f64();
        let cpu = cpu_secs() - cpu_at_start - counting.as_secs_f64();
        let (category, root_cause) = verdict.context("the run ended with no verdict")?;
        Ok(serde_json::json!({
            "secs": secs,
            "cpu_secs": cpu,
            "category": category,
            "root_cause": root_cause,
            "peak_rss_mib": peak_rss_mib(),
            "requests": requests,
            "bytes": bytes,
        }))
    })?;
    println!("{line}");
    // The rest of the run (recommend, teardown) is not measured.
    std::process::exit(0);
}
