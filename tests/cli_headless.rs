//! Headless runs of the real binary: records out on stdout as NDJSON, commands in on stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sitrep(args: &[&str], data_dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitrep"));
    cmd.args(args)
        .env("SITREP_DATA_DIR", data_dir)
        .env("SITREP_CONFIG", data_dir.join("none.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn tempdir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    }
}

/// `SITREP_CONFIG` pointing at a missing file is an error that names it; make it exist.
fn empty_config(dir: &std::path::Path) {
    if let Err(e) = std::fs::write(dir.join("none.toml"), "") {
        panic!("{e}");
    }
}

#[test]
fn read_only_demo_runs_to_the_end_and_saves_the_session() {
    let data = tempdir();
    empty_config(data.path());
    let out = sitrep(
        &["--headless", "--read-only", "demo", "checkout-bad-deploy"],
        data.path(),
    )
    .stdin(Stdio::null())
    .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let records: Vec<sitrep::model::Record> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match serde_json::from_str(l) {
            Ok(r) => r,
            Err(e) => panic!("stdout line is not a record ({e}): {l}"),
        })
        .collect();
    assert!(matches!(
        records.first().map(|r| &r.event),
        Some(sitrep::model::Event::SessionStarted { .. })
    ));
    assert!(matches!(
        records.last().map(|r| &r.event),
        Some(sitrep::model::Event::SessionEnded { .. })
    ));
    // The same records are in the session file.
    let (found, errors) = sitrep::session::list_sessions(&data.path().join("sessions"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(found.len(), 1);
    let log = match sitrep::session::read_file(&found[0].path) {
        Ok(l) => l,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(log.records, records);
}

#[test]
fn commands_on_stdin_approve_and_bad_lines_are_reported() {
    let data = tempdir();
    empty_config(data.path());
    let child = sitrep(
        &["--headless", "demo", "checkout-bad-deploy", "--no-save"],
        data.path(),
    )
    .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        panic!("no pipes");
    };
    let started = Instant::now();
    let mut ended = false;
    let mut approved = false;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let record: sitrep::model::Record = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => panic!("{e}: {line}"),
        };
        match &record.event {
            sitrep::model::Event::ApprovalRequested { action_id, .. } => {
                let cmd = format!(
                    "this is not json\n{{\"type\":\"approve\",\"action_id\":\"{action_id}\"}}\n"
                );
                let _ = stdin.write_all(cmd.as_bytes());
                let _ = stdin.flush();
            }
            sitrep::model::Event::ApprovalGiven { .. } => approved = true,
            sitrep::model::Event::SessionEnded { .. } => ended = true,
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "headless run hung"
        );
    }
    drop(stdin);
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        approved,
        "the approve command was not applied; stderr: {stderr}"
    );
    assert!(ended);
    assert!(stderr.contains("stdin line 1: not a command"), "{stderr}");
}
