//! Runs a generated world the way `sitrep eval` runs a case (`sitrep::eval::run` →
//! `run_case`: a replaying world, the agent in diagnosis-only read-only case mode, the session
//! folded into an `Incident`) and scores it with the same `sitrep::eval::score`. It keeps the
//! incident, so a failure can show the verdict, and it adds the checks `expect.toml` cannot
//! express: `eval::score` checks keywords against the whole report (findings, hypotheses,
//! ruled-out, timeline, tool summaries and the alert's labels), so the neighbour's detail, which
//! a correct report lists as "also noticed", is checked on the verdict sentence only.
//! `tests/worlds.rs` cross-checks a sample against `sitrep::eval::run` itself.

use super::World;
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::model::{Category, Incident, RunMode};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How one world went.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub category: Option<Category>,
    pub root_cause: String,
    /// Why it failed: eval's reasons, then the verdict checks; empty when it passed.
    pub failures: Vec<String>,
    /// The verdict sentence quotes one of the class's decisive literals.
    pub quotes_detail: bool,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

async fn investigate(dir: &Path, timeout: Duration) -> Result<Incident, String> {
    let world = sitrep::world::World::from_case_dir(dir).map_err(|e| format!("loading: {e}"))?;
    let case = world.case().cloned().ok_or("not a case directory")?;
    let trigger = match &case.alert {
        Some(payload) => Trigger::Alert(payload.clone()),
        None => Trigger::Problem(case.title.clone()),
    };
    let opts = AgentOptions {
        read_only: true,
        diagnosis_only: true,
        session_path: None,
        mode: RunMode::Case,
        case: Some(case.id.clone()),
        approval_timeout: Some(Duration::ZERO),
        ..AgentOptions::default()
    };
    let mut handle = agent::spawn(Arc::new(world), trigger, opts);
    let mut incident = Incident::new();
    let collect = async {
        while let Some(record) = handle.records.recv().await {
            incident.apply(record.t, &record.event);
        }
    };
    if tokio::time::timeout(timeout, collect).await.is_err() {
        handle.task.abort();
        return Err(format!("timed out after {timeout:?}"));
    }
    match handle.task.await {
        Ok(Ok(_)) => Ok(incident),
        Ok(Err(e)) => Err(format!("investigation failed: {e:#}")),
        Err(e) => Err(format!("investigation task ended abnormally: {e}")),
    }
}

/// Investigates the world written at `dir` and scores it.
pub async fn run(world: &World, dir: &Path, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let mut out = Outcome {
        category: None,
        root_cause: String::new(),
        failures: Vec::new(),
        quotes_detail: false,
        elapsed: Duration::ZERO,
    };
    match investigate(dir, timeout).await {
        Err(e) => out.failures.push(format!("error: {e}")),
        Ok(incident) => {
            let score = sitrep::eval::score(&world.expect(), &incident);
            out.failures = score.failures;
            out.failures.extend(
                sitrep::eval::invariants::violations(&incident)
                    .into_iter()
                    .map(|v| format!("invariant: {v}")),
            );
            if let Some((category, root_cause, _)) = &incident.diagnosis {
                out.category = Some(*category);
                out.root_cause = root_cause.clone();
            }
            let verdict = out.root_cause.to_lowercase();
            let named: Vec<&str> = world
                .scenario
                .verdict_forbidden
                .iter()
                .filter(|k| verdict.contains(&k.to_lowercase()))
                .map(String::as_str)
                .collect();
            if !named.is_empty() {
                out.failures.push(format!(
                    "verdict names the distractor: \"{}\"",
                    named.join("\", \"")
                ));
            }
            out.quotes_detail = world
                .scenario
                .decisive
                .iter()
                .any(|k| verdict.contains(&k.to_lowercase()));
        }
    }
    out.elapsed = started.elapsed();
    out
}
