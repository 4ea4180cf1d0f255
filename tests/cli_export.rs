//! `sitrep export`, `replay --headless` and `sessions` on the fixture session, run as the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson")
}

fn sitrep(args: &[&str], data_dir: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_DATA_DIR", data_dir)
        .env(
            "SITREP_CONFIG",
            data_dir.join("absent-config-is-an-error.toml"),
        )
        .env_remove("NO_COLOR")
        .output();
    match out {
        Ok(o) => o,
        Err(e) => panic!("cannot run sitrep: {e}"),
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn tempdir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn export_markdown_snapshot() {
    let data = tempdir();
    let file = fixture();
    let out = sitrep(&["export", &file.to_string_lossy()], data.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let markdown = stdout(&out);
    insta::with_settings!({ snapshot_path => "fixtures/snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("export_bad_deploy_markdown", markdown);
    });
}

#[test]
fn export_json_to_a_file() {
    let data = tempdir();
    let target = data.path().join("postmortem.json");
    let out = sitrep(
        &[
            "export",
            &fixture().to_string_lossy(),
            "--format",
            "json",
            "-o",
            &target.to_string_lossy(),
        ],
        data.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let text = std::fs::read_to_string(&target).unwrap_or_default();
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {text}"),
    };
    assert_eq!(value["outcome"], "resolved");
    assert_eq!(value["diagnosis"]["category"], "code_defect");
    assert_eq!(value["diagnosis"]["confidence"], 0.86);
    assert_eq!(
        value["incident"]["actions"][0]["decisions"][0]["by"],
        "alice"
    );
}

#[test]
fn replay_headless_prints_every_record() {
    let data = tempdir();
    let out = sitrep(
        &["replay", "--headless", &fixture().to_string_lossy()],
        data.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Vec<Option<sitrep::model::Record>> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).ok())
        .collect();
    let expected: Vec<Option<sitrep::model::Record>> = match sitrep::session::read_file(&fixture())
    {
        Ok(log) => log.records.into_iter().map(Some).collect(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(printed, expected);
}

#[test]
fn torn_files_replay_up_to_the_damage_and_say_where() {
    let data = tempdir();
    let original = std::fs::read(fixture()).unwrap_or_default();
    let torn = data.path().join("torn.ndjson");
    let cut = original.len() - 20;
    if let Err(e) = std::fs::write(&torn, &original[..cut]) {
        panic!("{e}");
    }
    let out = sitrep(
        &["--headless", "replay", &torn.to_string_lossy()],
        data.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = original.iter().filter(|b| **b == b'\n').count();
    assert_eq!(stdout(&out).lines().count(), lines - 2);
    assert!(
        stderr(&out).contains(&format!("line {lines}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sessions_lists_when_title_outcome_duration() {
    let data = tempdir();
    let dir = data.path().join("sessions");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::copy(fixture(), dir.join("20261122T090000Z-payments.ndjson"));
    let _ = std::fs::write(dir.join("broken.ndjson"), "not a session\n");
    let out = sitrep(&["sessions"], data.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("2026-11-22 09:00"), "{text}");
    assert!(text.contains("resolved"), "{text}");
    assert!(text.contains("4m15s"), "{text}");
    assert!(text.contains("PaymentsAPIHighErrorRate"), "{text}");
    assert!(stderr(&out).contains("broken.ndjson"), "{}", stderr(&out));

    let empty = tempdir();
    let out = sitrep(&["sessions"], empty.path());
    assert!(out.status.success());
    assert!(stdout(&out).contains("no sessions"));
}

#[test]
fn missing_and_bad_files_are_clear_errors() {
    let data = tempdir();
    let out = sitrep(&["export", "/nonexistent/x.ndjson"], data.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/nonexistent/x.ndjson"),
        "{}",
        stderr(&out)
    );
    let bad = data.path().join("bad.ndjson");
    let _ = std::fs::write(&bad, "hello\n");
    let out = sitrep(
        &["replay", "--headless", &bad.to_string_lossy()],
        data.path(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a sitrep session header"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn every_subcommand_has_help() {
    let data = tempdir();
    for args in [
        vec!["--help"],
        vec!["replay", "--help"],
        vec!["sessions", "--help"],
        vec!["export", "--help"],
    ] {
        let out = sitrep(&args, data.path());
        assert!(out.status.success(), "{args:?}");
        assert!(stdout(&out).contains("Usage: sitrep"), "{args:?}");
    }
}

/// Every listing ends quietly when its reader goes away (`sitrep sessions | head`).
#[test]
fn a_closed_stdout_ends_listings_quietly() {
    let data = tempdir();
    let dir = data.path().join("sessions");
    let _ = std::fs::create_dir_all(&dir);
    for i in 0..40 {
        let _ = std::fs::copy(
            fixture(),
            dir.join(format!("20261122T0900{i:02}Z-p.ndjson")),
        );
    }
    let file = fixture().to_string_lossy().into_owned();
    let runs: [&[&str]; 5] = [
        &["sessions"],
        &["export", &file],
        &["export", "--format", "json", &file],
        &["--headless", "replay", &file],
        &["demo", "--list"],
    ];
    for args in runs {
        let child = Command::new(env!("CARGO_BIN_EXE_sitrep"))
            .args(args)
            .env("SITREP_DATA_DIR", data.path())
            .env("SITREP_CONFIG", data.path().join("absent.toml"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => panic!("cannot run sitrep: {e}"),
        };
        // Close the read end before the child writes anything.
        drop(child.stdout.take());
        let out = match child.wait_with_output() {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

/// `sitrep --headless demo NAME` in `data`, approving the action of kind `fix` and denying the
/// rest; the outcome and the records it printed.
fn demo_approving(
    name: &str,
    fix: &str,
    data: &Path,
) -> (sitrep::model::Outcome, Vec<sitrep::model::Event>) {
    use sitrep::model::{Event, Record};
    use std::io::{BufRead, BufReader, Write};
    let config = data.join("config.toml");
    std::fs::write(&config, "").expect("an empty config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "demo", name])
        .env("SITREP_DATA_DIR", data)
        .env("SITREP_CONFIG", &config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run sitrep: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut events = Vec::new();
    let mut outcome = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        let record: Record = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Event::ApprovalRequested { action_id, .. } = &record.event {
            let kind = events.iter().find_map(|e| match e {
                Event::ActionProposed { action } if action.id == *action_id => {
                    Some(action.kind.clone())
                }
                _ => None,
            });
            let command = if kind.as_deref() == Some(fix) {
                serde_json::json!({"type": "approve", "action_id": action_id})
            } else {
                serde_json::json!({"type": "deny", "action_id": action_id, "reason": "not the fix"})
            };
            writeln!(stdin, "{command}").expect("command sent");
        }
        if let Event::SessionEnded { outcome: o } = &record.event {
            outcome = Some(*o);
        }
        events.push(record.event);
        if outcome.is_some() {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().expect("sitrep ends");
    assert!(status.success(), "{status}");
    (outcome.expect("the session ended"), events)
}

#[test]
fn a_resolved_demo_says_resolved_in_its_saved_report_the_export_and_the_console() {
    use sitrep::model::{Event, Outcome};
    let data = tempdir();
    let (outcome, events) = demo_approving(
        "payments-fraud-check-down",
        "kubernetes.rollout_restart",
        data.path(),
    );
    assert_eq!(outcome, Outcome::Resolved);
    let reports: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Report { markdown } => Some(markdown),
            _ => None,
        })
        .collect();
    assert_eq!(reports.len(), 1, "one report, written once");
    let (found, _) = sitrep::session::list_sessions(&data.path().join("sessions"));
    let session = found
        .first()
        .map(|s| s.path.clone())
        .expect("a session file");
    // The report record in the session file, as the console folds it and `r` shows it.
    let log = sitrep::session::read_file(&session).expect("the session reads back");
    let incident = sitrep::model::Incident::fold(log.records.iter().map(|r| (r.t, &r.event)));
    let saved = incident.report.clone().expect("a saved report");
    assert!(saved.contains("| Outcome | resolved |"), "{saved}");
    assert!(!saved.contains("| Outcome | in progress |"), "{saved}");
    // The report next to the session file.
    let md = std::fs::read_to_string(session.with_extension("md")).expect("the .md report");
    assert!(md.contains("| Outcome | resolved |"), "{md}");
    // The export.
    let out = sitrep(&["export", &session.to_string_lossy()], data.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let exported = stdout(&out);
    assert!(exported.contains("| Outcome | resolved |"), "{exported}");
    assert!(
        !exported.contains("| Outcome | in progress |"),
        "{exported}"
    );
    // The console's report view draws it.
    let theme = sitrep::tui::theme::Theme::resolve(Some("mono"), false).expect("theme");
    let lines: Vec<String> = sitrep::tui::report::markdown(&saved, &theme, 80)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("Outcome") && l.trim_end().ends_with("│ resolved")),
        "{lines:#?}"
    );
}
