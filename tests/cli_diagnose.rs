//! `sitrep diagnose FILE`, run as the real binary: a saved session diagnosed again from its
//! recorded facts, as text and JSON; a torn file up to its tear; an old file refused clearly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn sitrep(args: &[&str], data_dir: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_DATA_DIR", data_dir)
        .env("SITREP_CONFIG", data_dir.join("none.toml"))
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => o,
        Err(e) => panic!("cannot run sitrep: {e}"),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Run a built-in scenario headless and read-only; the path of its session file.
fn saved_session(data: &Path, scenario: &str) -> PathBuf {
    std::fs::write(data.join("none.toml"), "").expect("config");
    let out = sitrep(&["--headless", "--read-only", "demo", scenario], data);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (found, errors) = sitrep::session::list_sessions(&data.join("sessions"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(found.len(), 1);
    found[0].path.clone()
}

fn recorded_diagnosis(file: &Path) -> (String, String) {
    let log = sitrep::session::read_file(file).expect("readable");
    let (category, root_cause, _) = log.incident().diagnosis.expect("a diagnosis");
    (category.name().to_string(), root_cause)
}

#[test]
fn diagnose_prints_the_recorded_verdict_again() {
    let data = tempfile::tempdir().expect("tempdir");
    let file = saved_session(data.path(), "catalog-image-pull");
    let (category, root_cause) = recorded_diagnosis(&file);
    let out = sitrep(&["diagnose", &file.to_string_lossy()], data.path());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("verdict:    {category} (")),
        "{stdout}"
    );
    assert!(stdout.contains(&root_cause), "{stdout}");
    assert!(
        stdout.contains("same as the verdict recorded in the session"),
        "{stdout}"
    );
    // Findings name the evidence they rest on, by id and title.
    assert!(stdout.contains("evidence: ev-"), "{stdout}");
    assert!(stdout.contains("ruled out:"), "{stdout}");

    let out = sitrep(
        &["diagnose", "--json", &file.to_string_lossy()],
        data.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["matches_recorded"], true);
    assert_eq!(v["verdict"]["category"], category.as_str());
    assert_eq!(v["verdict"]["root_cause"], root_cause.as_str());
    assert_eq!(v["verdict"], v["recorded"]);
    assert!(v["facts"].as_u64().is_some_and(|n| n > 0), "{v}");
    assert!(v["tear"].is_null());
}

#[test]
fn a_torn_session_is_diagnosed_up_to_the_tear_and_says_where() {
    let data = tempfile::tempdir().expect("tempdir");
    let file = saved_session(data.path(), "checkout-bad-deploy");
    let whole = std::fs::read_to_string(&file).expect("read");
    // Cut inside the line after the second facts record: the header is line 1.
    let lines: Vec<&str> = whole.split_inclusive('\n').collect();
    let second = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("\"type\":\"observed\""))
        .nth(1)
        .map(|(n, _)| n)
        .expect("facts records");
    let keep: String = lines[..=second].concat();
    let torn_line = &lines[second + 1];
    let torn_text = format!("{keep}{}", &torn_line[..torn_line.len() / 2]);
    let torn = data.path().join("torn.ndjson");
    std::fs::write(&torn, torn_text).expect("write");
    let tear_at = second + 2;

    let out = sitrep(&["diagnose", &torn.to_string_lossy()], data.path());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("the file is torn at line {tear_at} ")),
        "{stdout}"
    );
    assert!(stdout.contains("from 2 facts records"), "{stdout}");
    assert!(stdout.contains("stopped before Diagnose"), "{stdout}");

    let out = sitrep(
        &["diagnose", "--json", &torn.to_string_lossy()],
        data.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["tear"]["line"], tear_at);
    assert_eq!(v["facts"], 2);
    assert!(v["recorded"].is_null());
}

#[test]
fn an_old_session_without_facts_is_refused_with_the_reason() {
    let data = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson");
    let out = sitrep(&["diagnose", &fixture.to_string_lossy()], data.path());
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bad-deploy.ndjson"), "{stderr}");
    assert!(
        stderr.contains("written before sitrep recorded the facts"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let missing = data.path().join("nope.ndjson");
    let out = sitrep(&["diagnose", &missing.to_string_lossy()], data.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("nope.ndjson"));
}

/// The three steps are recorded in the session, folded back by replay, printed by `diagnose`
/// and listed in the export: the subject through the API's links, the symptom as measured, the
/// checks with the edge that links each to the subject.
#[test]
fn the_subject_symptom_and_checks_are_recorded_and_shown() {
    let data = tempfile::tempdir().expect("tempdir");
    let file = saved_session(data.path(), "payments-fraud-check-down");
    let log = sitrep::session::read_file(&file).expect("readable");
    let incident = log.incident();
    let subject: Vec<String> = incident.subject.iter().map(|o| o.reference()).collect();
    assert!(
        subject.contains(&"Deployment/payments-api".to_string()),
        "{subject:?}"
    );
    assert!(
        !subject.iter().any(|o| o.contains("fraud-check")),
        "the dependency is a neighbour, not the subject: {subject:?}"
    );
    let symptom = incident.symptom.clone().expect("a symptom step");
    assert_eq!(symptom.state, sitrep::model::SymptomState::Confirmed);
    assert!(symptom.onset.is_some(), "{symptom:?}");
    assert!(
        !symptom.detail.contains("sum(rate("),
        "no raw query: {}",
        symptom.detail
    );
    let failing = incident
        .checks
        .iter()
        .find(|c| c.status == sitrep::model::CheckStatus::Failing)
        .expect("a failing check");
    assert_eq!(failing.object, "deployment/fraud-check");
    assert_eq!(failing.relation, "dependency named in its logs");
    let (category, root_cause) = recorded_diagnosis(&file);
    assert_eq!(category, "dependency_failure");
    // Cause, then the symptom it explains: never the symptom as its own cause.
    let cause_at = root_cause
        .find("fraud-check has 0 of 2")
        .expect(&root_cause);
    let symptom_at = root_cause
        .find("upstream_request_errors_total")
        .expect(&root_cause);
    assert!(cause_at < symptom_at, "{root_cause}");

    let out = sitrep(&["diagnose", &file.to_string_lossy()], data.path());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("symptom: confirmed"), "{stdout}");
    assert!(stdout.contains("- Deployment/payments-api"), "{stdout}");
    assert!(
        stdout.contains("[failing] dependency down on deployment/fraud-check"),
        "{stdout}"
    );
    assert!(
        stdout.contains("same as the verdict recorded in the session"),
        "{stdout}"
    );

    let out = sitrep(&["export", &file.to_string_lossy()], data.path());
    let exported = text(&out.stdout);
    assert!(exported.contains("## Diagnosis steps"), "{exported}");
}
