//! Generated worlds: failure class × subject kind × distractor × integrations, written as case
//! directories in the real APIs' JSON shapes (tests/worlds/), investigated as `sitrep eval` does
//! and scored with `sitrep::eval::score`, to show whether the diagnosis rules are general.
//!
//! Prints accuracy per class, subject kind, distractor and integrations, and one line per failed
//! world; asserts a per-class floor (raise it as the diagnosis improves) and that no world whose
//! symptom is present or unmeasurable is called healthy.
//!
//! `SITREP_WORLDS_KEEP=1` also writes the worlds to `target/worlds/`, so one replays with
//! `cargo run -- eval target/worlds/<id>`; `SITREP_WORLDS_FILTER=text` runs only the worlds whose
//! id contains it (the floors then apply to the classes that ran); `SITREP_WORLDS_SEED=text`
//! picks other names, literals, message forms and label conventions for the same plan (a
//! held-out set: the floors are set on the default seed).

#[path = "worlds/mod.rs"]
mod worlds;

use futures::StreamExt;
use sitrep::eval::{self, EvalOptions};
use sitrep::model::Category;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worlds::runner::Outcome;
use worlds::{Class, World};

/// The least share of each class's worlds that must pass, a little under what was measured.
/// What was measured (rules reasoner) is in the comment; each floor leaves about one world of slack.
const FLOORS: &[(&str, f64)] = &[
    ("oom", 0.95),                     // 32/32
    ("image_pull", 0.95),              // 26/26
    ("volume_missing", 0.95),          // 26/26
    ("env_ref_missing", 0.95),         // 26/26
    ("init_failure", 0.95),            // 16/16
    ("missing_executable", 0.95),      // 32/32
    ("crash_after_release", 0.90),     // 16/16
    ("crash_no_termination", 0.95),    // 32/32
    ("unschedulable_selector", 0.95),  // 27/27
    ("unschedulable_resources", 0.95), // 32/32
    ("probe_misconfigured", 0.95),     // 22/22
    ("dependency_refused", 0.95),      // 32/32
    ("not_ready_dependency", 0.95),    // 16/16
    ("quota_exceeded", 0.95),          // 16/16
    ("dns_unresolvable", 0.90),        // 16/16
    ("job_script_error", 0.90),        // 10/10
    ("node_not_ready", 0.95),          // 32/32
    ("recovered_flap", 0.95),          // 22/22
    ("latency_unmeasurable", 0.95),    // 22/22
    ("latency_slow_dependency", 0.95), // 22/22
    ("errors_after_release", 0.95),    // 16/16
    ("watchdog", 0.95),                // 32/32
];

/// Worlds investigated at once (the agent is async; two cores keep busy with four).
const PARALLEL: usize = 4;
const WORLD_TIMEOUT: Duration = Duration::from_secs(60);

fn floor(class: &str) -> f64 {
    FLOORS
        .iter()
        .find(|(c, _)| *c == class)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no floor for class {class}"))
}

fn root() -> (Option<tempfile::TempDir>, PathBuf) {
    if std::env::var("SITREP_WORLDS_KEEP").is_ok_and(|v| v == "1") {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/worlds");
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{}: {e}", dir.display()),
        }
        return (None, dir);
    }
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let path = tmp.path().to_path_buf();
    (Some(tmp), path)
}

fn cut(s: &str, n: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

fn got(o: &Outcome) -> &'static str {
    o.category.map(Category::name).unwrap_or("-")
}

/// Rows of `label  worlds  passed  accuracy` for outcomes grouped by `key`.
fn table<K: Ord>(
    title: &str,
    rows: &[(&World, &Outcome)],
    key: impl Fn(&World) -> (K, String),
    extra: impl Fn(&str) -> String,
    extra_head: &str,
) -> String {
    let mut groups: BTreeMap<K, (String, usize, usize)> = BTreeMap::new();
    for (w, o) in rows {
        let (k, label) = key(w);
        let g = groups.entry(k).or_insert((label, 0, 0));
        g.1 += 1;
        g.2 += usize::from(o.passed());
    }
    let mut out = format!(
        "{title:<24} {:>6} {:>7} {:>9}  {extra_head}\n",
        "worlds", "passed", "accuracy"
    );
    for (label, n, passed) in groups.values() {
        out.push_str(&format!(
            "{label:<24} {n:>6} {passed:>7} {:>8.0}%  {}\n",
            100.0 * *passed as f64 / (*n).max(1) as f64,
            extra(label)
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnosis_generalises_over_generated_worlds() {
    let started = Instant::now();
    let (_tmp, root) = root();
    let only = std::env::var("SITREP_WORLDS_FILTER").unwrap_or_default();
    let worlds: Vec<World> = worlds::plan()
        .into_iter()
        .filter(|c| c.id().contains(&only))
        .map(worlds::generate)
        .collect();
    let dirs: Vec<PathBuf> = worlds.iter().map(|w| w.write(&root)).collect();
    let generated = started.elapsed();

    let outcomes: Vec<Outcome> = futures::stream::iter(worlds.iter().zip(&dirs))
        .map(|(w, d)| worlds::runner::run(w, d, WORLD_TIMEOUT))
        .buffered(PARALLEL)
        .collect()
        .await;
    let rows: Vec<(&World, &Outcome)> = worlds.iter().zip(&outcomes).collect();

    // The harness is `sitrep eval`'s: a spread sample (every 24th world, so every class and most
    // distractors and integrations) through eval::run itself must score the same.
    let sample_tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let sample_root = sample_tmp.path().to_path_buf();
    let sample: BTreeMap<String, (&World, &Outcome)> = rows
        .iter()
        .step_by(24)
        .map(|(w, o)| (w.id.clone(), (*w, *o)))
        .collect();
    for (w, _) in sample.values() {
        w.write(&sample_root);
    }
    let opts = EvalOptions {
        case_timeout: WORLD_TIMEOUT,
        print: false,
        ..EvalOptions::default()
    };
    let summary = if sample.is_empty() {
        eval::EvalSummary::default()
    } else {
        eval::run(std::slice::from_ref(&sample_root), &opts)
            .await
            .unwrap_or_else(|e| panic!("eval::run on the sample: {e:#}"))
    };
    let mut drift = Vec::new();
    for r in &summary.results {
        let Some((_, o)) = sample.get(&r.id) else {
            continue;
        };
        let mine: Vec<&String> = o
            .failures
            .iter()
            .filter(|f| !f.starts_with("verdict names"))
            .collect();
        if r.score.category != o.category || r.passed() != mine.is_empty() {
            drift.push(format!(
                "{}: eval::run {} ({:?}), this harness {} ({:?})",
                r.id,
                r.score.category.map(Category::name).unwrap_or("-"),
                r.score.failures,
                got(o),
                mine
            ));
        }
    }

    let mut report = String::new();
    report.push_str(&format!(
        "\n{} worlds generated in {:.1?}, investigated in {:.1?} (slowest {:.1?})\n\n",
        worlds.len(),
        generated,
        started.elapsed() - generated,
        outcomes.iter().map(|o| o.elapsed).max().unwrap_or_default()
    ));
    let detail = |class: &str| {
        let (n, q) = rows
            .iter()
            .filter(|(w, _)| w.combo.class.name() == class && !w.scenario.decisive.is_empty())
            .fold((0, 0), |(n, q), (_, o)| {
                (n + 1, q + usize::from(o.quotes_detail))
            });
        let floor = format!("{:>4.0}%", 100.0 * floor(class));
        if n == 0 {
            format!("{floor}   -")
        } else {
            format!("{floor}   {q}/{n}")
        }
    };
    report.push_str(&table(
        "class",
        &rows,
        |w| (w.combo.class, w.combo.class.name().to_string()),
        detail,
        "floor   verdict quotes the detail",
    ));
    report.push('\n');
    report.push_str(&table(
        "subject kind",
        &rows,
        |w| (w.combo.kind, w.combo.kind.name().to_string()),
        |_| String::new(),
        "",
    ));
    report.push('\n');
    report.push_str(&table(
        "distractor",
        &rows,
        |w| (w.combo.distractor, w.combo.distractor.name().to_string()),
        |_| String::new(),
        "",
    ));
    report.push('\n');
    report.push_str(&table(
        "integrations",
        &rows,
        |w| {
            (
                w.combo.integrations,
                w.combo.integrations.name().to_string(),
            )
        },
        |_| String::new(),
        "",
    ));

    let failed: Vec<&(&World, &Outcome)> = rows.iter().filter(|(_, o)| !o.passed()).collect();
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (w, o) in &failed {
        *confusion
            .entry((
                w.scenario.expect.category.name().to_string(),
                got(o).to_string(),
            ))
            .or_default() += 1;
    }
    report.push_str(&format!(
        "\nfailed worlds: {} of {}\n",
        failed.len(),
        rows.len()
    ));
    for ((want, got), n) in &confusion {
        report.push_str(&format!("  expected {want:<20} got {got:<20} {n}\n"));
    }
    report.push('\n');
    for (w, o) in &failed {
        report.push_str(&format!(
            "FAIL {:<58} expected {:<19} got {:<19} {} | verdict: {}\n",
            w.id,
            w.scenario.expect.category.name(),
            got(o),
            cut(&o.failures.join("; "), 200),
            cut(&o.root_cause, 320)
        ));
    }

    // Healthy verdicts where the symptom is present or cannot be measured: never.
    let false_healthy: Vec<&str> = rows
        .iter()
        .filter(|(w, o)| w.scenario.expect.symptom_present && o.category == Some(Category::Healthy))
        .map(|(w, _)| w.id.as_str())
        .collect();
    report.push_str(&format!(
        "\nhealthy verdicts on worlds whose symptom is present or unmeasured: {} of {}\n",
        false_healthy.len(),
        rows.iter()
            .filter(|(w, _)| w.scenario.expect.symptom_present)
            .count()
    ));
    if !drift.is_empty() {
        report.push_str(&format!(
            "\nharness drift from eval::run:\n  {}\n",
            drift.join("\n  ")
        ));
    }
    println!("{report}");

    assert!(
        drift.is_empty(),
        "this harness scored differently from eval::run: {drift:#?}"
    );
    assert!(
        false_healthy.is_empty(),
        "called healthy while the symptom is present or unmeasured: {false_healthy:?}"
    );
    let mut below = Vec::new();
    for class in Class::ALL {
        let of: Vec<&Outcome> = rows
            .iter()
            .filter(|(w, _)| w.combo.class == class)
            .map(|(_, o)| *o)
            .collect();
        let acc = of.iter().filter(|o| o.passed()).count() as f64 / of.len().max(1) as f64;
        if !of.is_empty() && acc + 1e-9 < floor(class.name()) {
            below.push(format!(
                "{} {:.0}% < floor {:.0}%",
                class.name(),
                100.0 * acc,
                100.0 * floor(class.name())
            ));
        }
    }
    assert!(below.is_empty(), "classes below their floor: {below:?}");
}

/// The generator is deterministic: the same plan writes the same bytes.
#[test]
fn worlds_are_deterministic() {
    let a = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let b = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for combo in worlds::plan().into_iter().step_by(7) {
        let da = worlds::generate(combo).write(a.path());
        let db = worlds::generate(combo).write(b.path());
        for f in [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "world.toml",
        ] {
            let x = std::fs::read_to_string(da.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            let y = std::fs::read_to_string(db.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            assert!(x == y, "{}/{f} differs between two generations", combo.id());
        }
    }
}

/// Every recorded Kubernetes object parses as the API type it claims to be, and every world
/// loads as a case.
#[test]
fn recorded_objects_parse_as_the_api_types() {
    use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
    fn items<T: serde::de::DeserializeOwned>(id: &str, path: &str, body: &serde_json::Value) {
        let list = body["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{id} {path}: no items"));
        for item in list {
            if let Err(e) = serde_json::from_value::<T>(item.clone()) {
                panic!("{id} {path}: {e}\n{item:#}");
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for combo in worlds::plan() {
        let w = worlds::generate(combo);
        for r in w.recordings() {
            let path = r["path"].as_str().unwrap_or_default();
            let (id, body) = (&w.id, &r["body"]);
            if r["integration"] != "kubernetes" || r["status"] != 200 || !body.is_object() {
                continue;
            }
            match path.rsplit('/').next().unwrap_or_default() {
                "pods" => items::<core::Pod>(id, path, body),
                "events" => items::<core::Event>(id, path, body),
                "nodes" => items::<core::Node>(id, path, body),
                "deployments" => items::<apps::Deployment>(id, path, body),
                "replicasets" => items::<apps::ReplicaSet>(id, path, body),
                "statefulsets" => items::<apps::StatefulSet>(id, path, body),
                "daemonsets" => items::<apps::DaemonSet>(id, path, body),
                "jobs" => items::<batch::Job>(id, path, body),
                "cronjobs" => items::<batch::CronJob>(id, path, body),
                _ => {}
            }
        }
        let dir = w.write(tmp.path());
        if let Err(e) = sitrep::world::World::from_case_dir(&dir) {
            panic!("{}: {e}", w.id);
        }
    }
}
