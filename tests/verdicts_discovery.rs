//! Problem mode on a real Prometheus (Debian package) on loopback with no alert rule at all: the
//! services' metrics are found through Prometheus' own series API, under names nothing guesses,
//! and the verdict comes from the queries built out of them. Backfilled with promtool.
//! Skips (saying why) only when the binaries are not installed.

use sitrep::model::{Category, Event, Record};
use std::path::Path;
use std::process::{Command, Stdio};

mod support;

const SCRAPE: i64 = 15;

/// Two services over two hours: `ledger` fails 15% of its calls from `step` on, right after its
/// version changed at `change`; `quotes` runs out of database connections at `step` (nothing
/// changed) and gets slow. `vault` is a healthy neighbour.
fn history(end: i64, step: i64, change: i64) -> String {
    let start = end - 2 * 3600;
    let mut calls = String::from("# TYPE ledger_rpc_handled counter\n");
    let mut build = String::from("# TYPE ledger_build_info gauge\n");
    let mut active = String::from("# TYPE quotes_db_pool_active gauge\n");
    let mut max = String::from("# TYPE quotes_db_pool_max gauge\n");
    let mut hist = String::from("# TYPE quotes_fetch_seconds histogram\n");
    let (mut ok, mut bad, mut vault) = (0.0f64, 0.0f64, 0.0f64);
    let les = ["0.1", "0.5", "1", "2.5", "+Inf"];
    let mut buckets = [0.0f64; 5];
    let mut t = start;
    while t <= end {
        let after = t >= step;
        let (ok_rate, bad_rate) = if after { (85.0, 15.0) } else { (99.7, 0.3) };
        ok += ok_rate * SCRAPE as f64;
        bad += bad_rate * SCRAPE as f64;
        vault += 12.0 * SCRAPE as f64;
        calls.push_str(&format!(
            "ledger_rpc_handled_total{{job=\"ledger\",status_code=\"200\"}} {ok} {t}\n\
             ledger_rpc_handled_total{{job=\"ledger\",status_code=\"503\"}} {bad} {t}\n\
             ledger_rpc_handled_total{{job=\"vault\",status_code=\"200\"}} {vault} {t}\n"
        ));
        let version = if t < change { "3.1.0" } else { "3.2.0" };
        build.push_str(&format!(
            "ledger_build_info{{job=\"ledger\",version=\"{version}\"}} 1 {t}\n"
        ));
        active.push_str(&format!(
            "quotes_db_pool_active{{job=\"quotes\"}} {} {t}\n",
            if after { 50 } else { 6 }
        ));
        max.push_str(&format!("quotes_db_pool_max{{job=\"quotes\"}} 50 {t}\n"));
        let add: [f64; 5] = if after {
            [20.0, 30.0, 40.0, 300.0, 300.0]
        } else {
            [300.0; 5]
        };
        for (b, a) in buckets.iter_mut().zip(add) {
            *b += a;
        }
        for (le, v) in les.iter().zip(buckets) {
            hist.push_str(&format!(
                "quotes_fetch_seconds_bucket{{job=\"quotes\",le=\"{le}\"}} {v} {t}\n"
            ));
        }
        hist.push_str(&format!(
            "quotes_fetch_seconds_count{{job=\"quotes\"}} {} {t}\n",
            buckets[4]
        ));
        t += SCRAPE;
    }
    format!("{calls}{build}{active}{max}{hist}# EOF\n")
}

fn sitrep(data: &Path, config: &str, args: &[&str]) -> Vec<Record> {
    let cfg = data.join("config.toml");
    std::fs::write(&cfg, config).expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "--read-only"])
        .args(args)
        .env("SITREP_DATA_DIR", data)
        .env("SITREP_CONFIG", &cfg)
        .stdin(Stdio::null())
        .output()
        .expect("run sitrep");
    assert!(
        out.status.success(),
        "sitrep {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

fn diagnosis(records: &[Record]) -> (Category, String) {
    records
        .iter()
        .find_map(|r| match &r.event {
            Event::Diagnosis {
                category,
                root_cause,
                ..
            } => Some((*category, root_cause.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no diagnosis in {records:#?}"))
}

fn findings(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Finding { finding } => {
                Some(format!("{}: {}", finding.analyzer, finding.summary))
            }
            _ => None,
        })
        .collect()
}

fn queries(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolCalled { tool, params, .. } if tool == "prometheus.query_range" => params
                .get("query")
                .and_then(|q| q.as_str())
                .map(str::to_string),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_without_any_rule_is_found_through_its_own_series() {
    if !support::have_binaries(&["prometheus", "promtool"]) {
        return;
    }
    let now = chrono::Utc::now().timestamp();
    let end = now - now % SCRAPE - SCRAPE;
    let step = end - 20 * 60;
    let change = step - 50;
    let dir = tempfile::tempdir().expect("tempdir");
    // No rules: nothing here names these services but their own series.
    let prom = support::prometheus(&history(end, step, change), "groups: []\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let url = prom.url.clone();
    let config = format!("[integrations.prometheus]\nurl = \"{url}\"\n");

    let records = sitrep(
        dir.path(),
        &config,
        &[
            "investigate",
            "--problem",
            "ledger is returning errors",
            "--no-save",
            "--diagnosis-only",
        ],
    );
    let q = queries(&records);
    assert!(
        q.iter()
            .any(|x| x.contains("ledger_rpc_handled_total") && x.contains(r#"status_code=~"5..""#)),
        "the error ratio is built from the discovered counter and its status label: {q:#?}"
    );
    assert!(
        q.iter().any(|x| x.starts_with("ledger_build_info")),
        "the discovered build info is read: {q:#?}"
    );
    assert!(
        q.iter()
            .all(|x| !x.contains("vault") && !x.contains("quotes")),
        "only the named service is measured: {q:#?}"
    );
    let (category, root) = diagnosis(&records);
    let f = findings(&records);
    assert_eq!(category, Category::CodeDefect, "{root}\n{f:#?}");
    assert!(root.contains("5xx ratio"), "{root}");
    assert!(root.contains("3.1.0 → 3.2.0"), "{root}");
    assert!(root.contains("0.3%") && root.contains("15%"), "{root}");

    let records = sitrep(
        dir.path(),
        &config,
        &[
            "investigate",
            "--problem",
            "quotes is slow",
            "--no-save",
            "--diagnosis-only",
        ],
    );
    let (category, root) = diagnosis(&records);
    let f = findings(&records);
    assert_eq!(category, Category::ResourceExhaustion, "{root}\n{f:#?}");
    assert!(
        root.contains("quotes_db_pool_active saturation"),
        "{root}\n{f:#?}"
    );
    assert!(
        root.contains("12%") && root.contains("100%"),
        "{root}\n{f:#?}"
    );
    assert!(
        root.contains("used to capacity") && !root.contains("CPU"),
        "{root}"
    );
    assert!(
        f.iter().any(|x| x.contains("p99 latency")),
        "the discovered histogram's latency step is a finding too: {f:#?}"
    );

    // A service Prometheus has nothing about: nothing to measure, so no verdict of health.
    let records = sitrep(
        dir.path(),
        &config,
        &[
            "investigate",
            "--problem",
            "billing is returning errors",
            "--no-save",
            "--diagnosis-only",
        ],
    );
    let (category, root) = diagnosis(&records);
    assert_ne!(category, Category::Healthy, "{root}");
    assert!(queries(&records).is_empty(), "{:#?}", queries(&records));
}
