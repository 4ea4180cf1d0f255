//! Metamorphic tests of the diagnosis on every recorded case: the built-in cases, every set under
//! `../shared/cases` and the imported `../shared/opensre-rds` scenarios when they are beside the
//! project, and a spread of the generators' worlds. Renaming every object, shifting every time by
//! a constant and adding an unrelated broken neighbour must leave the verdict the same (names
//! mapped back, clock times aside); the counts are printed.

#[path = "worlds/mod.rs"]
#[allow(dead_code)] // The generator's runner serves tests/worlds.rs; this file writes worlds only.
mod worlds;

use chrono::Duration;
use sitrep::eval::metamorphic::{Rewrite, recording_of_kind, rewrite_case};
use sitrep::eval::{self, CaseResult, EvalOptions};
use sitrep::model::Category;
use std::path::{Path, PathBuf};

fn opts() -> EvalOptions {
    EvalOptions {
        case_timeout: std::time::Duration::from_secs(60),
        print: false,
        ..EvalOptions::default()
    }
}

/// Every case directory to check: the project's own, then the shared sets that are present.
fn case_dirs(scratch: &Path) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sets = vec![root.join("cases")];
    let shared = root.join("../shared/cases");
    if let Ok(entries) = std::fs::read_dir(&shared) {
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        sets.extend(found);
    }
    let mut dirs: Vec<PathBuf> = sets
        .iter()
        .filter_map(|s| eval::find_cases(std::slice::from_ref(s)).ok())
        .flatten()
        .collect();
    if let Ok(entries) = std::fs::read_dir(root.join("../shared/opensre-rds")) {
        let out = scratch.join("rds");
        let mut raw: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        raw.sort();
        for dir in raw {
            if let Ok(case) = eval::opensre::import(&dir, &out) {
                dirs.push(case);
            }
        }
    }
    // A spread of generated worlds: every 16th of the plan covers every class.
    let generated = scratch.join("worlds");
    for combo in worlds::plan().into_iter().step_by(16) {
        dirs.push(worlds::generate(combo).write(&generated));
    }
    dirs
}

/// Clock times and durations differ after a shift; the rest of the sentence must not.
fn without_clock(text: &str) -> String {
    let re = regex::Regex::new(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(:\d{2})?( UTC)?|\d+ ?(s|min|h|m|seconds|minutes|hours|days?) (ago|before|after|later|earlier)")
        .unwrap_or_else(|e| panic!("{e}"));
    re.replace_all(text, "T").into_owned()
}

fn verdict(r: &CaseResult) -> String {
    format!(
        "{} | {}",
        r.score.category.map(|c| c.name()).unwrap_or("-"),
        r.root_cause.clone().unwrap_or_default()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_hold_under_renaming_time_shifts_and_bystanders() {
    let scratch = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let dirs = case_dirs(scratch.path());
    assert!(dirs.len() >= 8, "too few cases found: {dirs:?}");
    let rewrites = [
        ("rename", Rewrite::Rename),
        (
            "shift",
            Rewrite::ShiftTime(Duration::days(41) + Duration::hours(5) + Duration::minutes(17)),
        ),
        ("bystander", Rewrite::AddNeighbour),
    ];
    let mut failures: Vec<String> = Vec::new();
    let mut held = [0usize; 3];
    for (n, dir) in dirs.iter().enumerate() {
        let base = eval::run_case(dir, &opts()).await;
        if let Some(e) = &base.error
            && !e.contains("no expect.toml")
        {
            failures.push(format!("{}: does not run: {e}", dir.display()));
            continue;
        }
        for broken in &base.broken {
            failures.push(format!("{}: invariant: {broken}", dir.display()));
        }
        for (i, (name, how)) in rewrites.iter().enumerate() {
            let out = scratch.path().join(format!("m{n}-{name}"));
            let rewritten = match rewrite_case(dir, &out, how) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{} {name}: rewrite failed: {e:#}", dir.display()));
                    continue;
                }
            };
            let got = eval::run_case(&out, &opts()).await;
            let (a, b) = match how {
                Rewrite::Rename => (verdict(&base), rewritten.restore(&verdict(&got))),
                Rewrite::ShiftTime(_) => (
                    without_clock(&verdict(&base)),
                    without_clock(&verdict(&got)),
                ),
                Rewrite::AddNeighbour | Rewrite::DropKinds(_) => (verdict(&base), verdict(&got)),
            };
            let same_score = base.passed() == got.passed();
            if a == b && same_score {
                held[i] += 1;
            } else {
                failures.push(format!(
                    "{} under {name}:\n    before: {a}\n    after:  {b}\n    passed {} -> {} {:?} {:?}",
                    dir.display(),
                    base.passed(),
                    got.passed(),
                    got.score.failures,
                    got.broken
                ));
            }
        }
    }
    println!(
        "metamorphic: {} cases; verdict unchanged under rename {}/{n}, time shift {}/{n}, bystander {}/{n}",
        dirs.len(),
        held[0],
        held[1],
        held[2],
        n = dirs.len()
    );
    let (dropped, stood) = drop_decisive(&dirs, scratch.path(), &mut failures).await;
    println!(
        "metamorphic: decisive evidence removed from {dropped} cases; the verdict stopped claiming it and was not healthy in {stood}/{dropped}"
    );
    let (pruned, same) = drop_unused(&dirs, scratch.path(), &mut failures).await;
    println!(
        "metamorphic: evidence the diagnosis does not cite removed from {pruned} cases; verdict unchanged in {same}/{pruned}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Removing what a verdict stood on: for every case whose verdict names a cause, the recordings
/// behind the evidence kinds its leading hypothesis cites are removed; the verdict must stop
/// claiming that cause and must never become healthy.
async fn drop_decisive(
    dirs: &[PathBuf],
    scratch: &Path,
    failures: &mut Vec<String>,
) -> (usize, usize) {
    let (mut dropped, mut stood) = (0, 0);
    for (n, dir) in dirs.iter().enumerate() {
        let base = eval::run_case(dir, &opts()).await;
        let named_cause = base
            .score
            .category
            .is_some_and(|c| c != Category::Healthy && c != Category::Unknown);
        // Only kinds this rewrite can take out, and never the alert itself.
        let kinds: Vec<String> = base
            .cited_kinds
            .iter()
            .filter(|k| recording_of_kind(k, "", "").is_some())
            .cloned()
            .collect();
        if !named_cause || kinds.is_empty() || kinds.len() < base.cited_kinds.len() {
            continue;
        }
        let out = scratch.join(format!("d{n}"));
        if let Err(e) = rewrite_case(dir, &out, &Rewrite::DropKinds(kinds.clone())) {
            failures.push(format!("{} drop: rewrite failed: {e:#}", dir.display()));
            continue;
        }
        dropped += 1;
        let got = eval::run_case(&out, &opts()).await;
        let healthy = got.score.category == Some(Category::Healthy);
        let same = got.root_cause == base.root_cause;
        if healthy || same {
            failures.push(format!(
                "{} without {kinds:?}: {} | {}",
                dir.display(),
                got.score.category.map(|c| c.name()).unwrap_or("-"),
                got.root_cause.clone().unwrap_or_default()
            ));
        } else {
            stood += 1;
        }
    }
    (dropped, stood)
}

/// Removing what a verdict does not use: the recordings behind every evidence kind that no
/// hypothesis, ruled-out statement, check or symptom cites; the verdict must stay the same.
async fn drop_unused(
    dirs: &[PathBuf],
    scratch: &Path,
    failures: &mut Vec<String>,
) -> (usize, usize) {
    let (mut pruned, mut same) = (0, 0);
    for (n, dir) in dirs.iter().enumerate() {
        let base = eval::run_case(dir, &opts()).await;
        if base.error.is_some() {
            continue;
        }
        let kinds: Vec<String> = base
            .unused_kinds
            .iter()
            .filter(|k| recording_of_kind(k, "", "").is_some())
            .cloned()
            .collect();
        if kinds.is_empty() {
            continue;
        }
        let out = scratch.join(format!("u{n}"));
        if let Err(e) = rewrite_case(dir, &out, &Rewrite::DropKinds(kinds.clone())) {
            failures.push(format!("{} prune: rewrite failed: {e:#}", dir.display()));
            continue;
        }
        pruned += 1;
        let got = eval::run_case(&out, &opts()).await;
        if verdict(&got) == verdict(&base) {
            same += 1;
        } else {
            failures.push(format!(
                "{} without unused {kinds:?}:\n    before: {}\n    after:  {}",
                dir.display(),
                verdict(&base),
                verdict(&got)
            ));
        }
    }
    (pruned, same)
}
