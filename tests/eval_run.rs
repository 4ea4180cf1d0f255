//! `sitrep eval`: the built-in scenarios all pass, bad input is a clear error, and external suites run.

use sitrep::eval::{self, EvalOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn quiet() -> EvalOptions {
    EvalOptions {
        case_timeout: Duration::from_secs(60),
        print: false,
        ..EvalOptions::default()
    }
}

#[tokio::test]
async fn builtin_scenarios_all_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    // The demo world ships with the binary; until its scenarios exist there is nothing to score.
    if eval::find_cases(std::slice::from_ref(&dir)).is_err() {
        return;
    }
    let summary = match eval::run(&[dir], &quiet()).await {
        Ok(s) => s,
        Err(e) => panic!("eval failed to run: {e:#}"),
    };
    assert!(!summary.results.is_empty());
    assert_eq!(summary.failed(), 0, "\n{summary}");
}

#[tokio::test]
async fn a_directory_without_cases_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let err = match eval::run(&[tmp.path().to_path_buf()], &quiet()).await {
        Ok(_) => panic!("an empty directory has no cases"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("no case directories"), "{err}");
    let missing = tmp.path().join("nope");
    let err = eval::run(&[missing], &quiet())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("not a directory"), "{err}");
}

#[tokio::test]
async fn a_broken_case_fails_with_its_reason_and_the_rest_still_run() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let bad = tmp.path().join("broken");
    std::fs::create_dir_all(&bad).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(bad.join("case.toml"), "this is = = not toml").unwrap_or_else(|e| panic!("{e}"));
    let summary = match eval::run(&[tmp.path().to_path_buf()], &quiet()).await {
        Ok(s) => s,
        Err(e) => panic!("a broken case must not abort the run: {e:#}"),
    };
    assert_eq!(summary.results.len(), 1);
    assert_eq!(summary.failed(), 1);
    assert!(summary.results[0].error.is_some());
    assert!(summary.to_string().ends_with("0 passed, 1 failed"));
}

/// The external benchmark suite, when present next to the project (`SITREP_EVAL_DIR` overrides).
#[tokio::test]
async fn external_suite_runs_to_the_end() {
    let dir = std::env::var_os("SITREP_EVAL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/cases/opensre-eks")
        });
    if !dir.is_dir() {
        return;
    }
    let summary = match eval::run(&[dir], &quiet()).await {
        Ok(s) => s,
        Err(e) => panic!("eval failed to run: {e:#}"),
    };
    println!("{summary}");
    assert!(!summary.results.is_empty());
    assert!(
        summary.results.iter().all(|r| r.error.is_none()),
        "\n{summary}"
    );
}
