//! Finds case directories and runs each one headless through the agent (diagnosis only), then scores it.

use super::{CaseResult, EvalOptions, EvalSummary, Score, score};
use crate::agent::{self, AgentOptions, Trigger};
use crate::model::{Incident, RunMode};
use crate::world::World;
use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Case directories under `dirs`: each one that holds a case.toml, or its subdirectories that do.
pub fn find_cases(dirs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            bail!("{}: not a directory", dir.display());
        }
        if dir.join("case.toml").is_file() {
            out.push(dir.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("case.toml").is_file())
            .collect();
        if found.is_empty() {
            bail!(
                "{}: no case directories (a case directory holds case.toml)",
                dir.display()
            );
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Runs every case found under `dirs` and scores it; prints a row per case and the totals when `opts.print`.
pub async fn run(dirs: &[PathBuf], opts: &EvalOptions) -> anyhow::Result<EvalSummary> {
    // Every set is checked before any case runs, so a typo fails fast.
    let sets: Vec<(PathBuf, Vec<PathBuf>)> = dirs
        .iter()
        .map(|d| find_cases(std::slice::from_ref(d)).map(|c| (d.clone(), c)))
        .collect::<anyhow::Result<_>>()?;
    let mut summary = EvalSummary::default();
    let mut per_set: Vec<(PathBuf, usize, usize)> = Vec::new();
    for (set, cases) in sets {
        let mut passed = 0;
        let total = cases.len();
        for dir in cases {
            let result = run_case(&dir, opts).await;
            if opts.print {
                // A closed stdout (`sitrep eval ... | head`) stops the run; the caller ends quietly.
                writeln!(std::io::stdout().lock(), "{result}")?;
            }
            passed += usize::from(result.passed());
            summary.results.push(result);
        }
        per_set.push((set, passed, total));
    }
    if opts.print {
        let mut out = std::io::stdout().lock();
        if let Some(m) = summary.mean_recall() {
            writeln!(out, "mean ruling-out recall {:.0}%", m * 100.0)?;
        }
        if per_set.len() > 1 {
            for (set, passed, total) in &per_set {
                writeln!(
                    out,
                    "set {}: {passed}/{total} passed ({:.0}%)",
                    set.display(),
                    100.0 * *passed as f64 / (*total).max(1) as f64
                )?;
            }
        }
        for line in summary.rates() {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "{}", summary.totals())?;
    }
    Ok(summary)
}

/// Runs one case; never fails: a case that cannot run is a failed result with the reason.
pub async fn run_case(dir: &Path, opts: &EvalOptions) -> CaseResult {
    let started = Instant::now();
    let fallback_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let mut result = CaseResult {
        id: fallback_id,
        dir: dir.to_path_buf(),
        score: Score::default(),
        error: None,
        elapsed: Default::default(),
        model_steps: 0,
        tokens: (0, 0),
        root_cause: None,
        broken: Vec::new(),
        cited_kinds: Vec::new(),
        unused_kinds: Vec::new(),
    };
    match investigate(dir, opts).await {
        Ok((id, expect, incident)) => {
            result.id = id;
            result.model_steps = incident.model_steps;
            result.tokens = incident.model_tokens;
            result.root_cause = incident.diagnosis.as_ref().map(|d| d.1.clone());
            result.broken = super::invariants::violations(&incident);
            result.cited_kinds = cited_kinds(&incident);
            result.unused_kinds = unused_kinds(&incident);
            match expect {
                Some(expect) => result.score = score(&expect, &incident),
                None => result.error = Some("no expect.toml: nothing to score against".into()),
            }
        }
        Err(e) => result.error = Some(format!("{e:#}")),
    }
    result.elapsed = started.elapsed();
    result
}

/// The evidence kinds the leading hypothesis cites, in order, without repeats.
fn cited_kinds(incident: &Incident) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(top) = incident.hypotheses.first() else {
        return out;
    };
    for id in &top.evidence {
        if let Some(e) = incident.evidence.iter().find(|e| &e.id == id)
            && !out.contains(&e.kind)
        {
            out.push(e.kind.clone());
        }
    }
    out
}

/// The evidence kinds gathered that nothing the diagnosis concluded or checked cites.
fn unused_kinds(incident: &Incident) -> Vec<String> {
    let mut cited: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let ids = incident
        .hypotheses
        .iter()
        .flat_map(|h| h.evidence.iter())
        .chain(incident.ruled_out.iter().flat_map(|r| r.evidence.iter()))
        .chain(incident.checks.iter().flat_map(|c| c.evidence.iter()))
        .chain(incident.symptom.iter().flat_map(|s| s.evidence.iter()));
    for id in ids {
        if let Some(e) = incident.evidence.iter().find(|e| &e.id == id) {
            cited.insert(e.kind.as_str());
        }
    }
    let mut out: Vec<String> = Vec::new();
    for e in &incident.evidence {
        if !cited.contains(e.kind.as_str()) && !out.contains(&e.kind) {
            out.push(e.kind.clone());
        }
    }
    out
}

async fn investigate(
    dir: &Path,
    opts: &EvalOptions,
) -> anyhow::Result<(String, Option<crate::world::Expect>, Incident)> {
    let world =
        World::from_case_dir(dir).with_context(|| format!("loading case {}", dir.display()))?;
    let case = world
        .case()
        .cloned()
        .with_context(|| format!("{}: not a case directory", dir.display()))?;
    let trigger = match &case.alert {
        Some(payload) => Trigger::Alert(payload.clone()),
        None => Trigger::Problem(case.title.clone()),
    };
    let model = if opts.replay_llm {
        Some(crate::agent::llm::Model::replaying(dir, 200).map_err(|e| {
            anyhow::anyhow!(
                "--reasoner llm with no [llm] section replays each case's recorded exchanges: {e}"
            )
        })?)
    } else {
        opts.model.clone()
    };
    let agent_opts = AgentOptions {
        read_only: true,
        diagnosis_only: true,
        session_path: None,
        mode: RunMode::Case,
        case: Some(case.id.clone()),
        approval_timeout: Some(std::time::Duration::ZERO),
        model,
        ..AgentOptions::default()
    };
    let mut handle = agent::spawn(Arc::new(world), trigger, agent_opts);
    let mut incident = Incident::new();
    let collect = async {
        while let Some(record) = handle.records.recv().await {
            incident.apply(record.t, &record.event);
        }
    };
    if tokio::time::timeout(opts.case_timeout, collect)
        .await
        .is_err()
    {
        handle.task.abort();
        bail!("timed out after {:?}", opts.case_timeout);
    }
    match handle.task.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(e.context("investigation failed")),
        Err(e) => bail!("investigation task ended abnormally: {e}"),
    }
    Ok((case.id.clone(), case.expect.clone(), incident))
}
