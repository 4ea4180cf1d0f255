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

/// A signal to a headless run (a service stop, ctrl-c) ends the session as `interrupted`: the
/// session file ends with its end record, replays, and the pending approval stays undecided.
#[test]
fn a_signal_to_a_headless_run_writes_the_end_record() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let data = tempdir();
        empty_config(data.path());
        let child = sitrep(&["--headless", "demo", "checkout-bad-deploy"], data.path()).spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        // stdin stays open: the run waits for a decision until the signal.
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("no pipes");
        };
        let started = Instant::now();
        let mut lines = BufReader::new(stdout).lines();
        let mut waiting = false;
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            if line.contains("\"approval_requested\"") {
                waiting = true;
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "no request");
        }
        assert!(waiting, "the run never asked for a decision");
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let out = match child.wait_with_output() {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {} {stderr}", out.status);
        assert!(stderr.contains("interrupted"), "{name}: {stderr}");
        assert!(
            rest.last()
                .is_some_and(|l| l.contains("\"session_ended\"") && l.contains("interrupted")),
            "{name}: stdout ends with {:?}",
            rest.last()
        );
        let (found, _) = sitrep::session::list_sessions(&data.path().join("sessions"));
        assert_eq!(found.len(), 1, "{name}");
        let log = match sitrep::session::read_file(&found[0].path) {
            Ok(l) => l,
            Err(e) => panic!("{e}"),
        };
        assert!(log.tear.is_none(), "{name}");
        assert!(
            matches!(
                log.records.last().map(|r| &r.event),
                Some(sitrep::model::Event::SessionEnded {
                    outcome: sitrep::model::Outcome::Interrupted
                })
            ),
            "{name}: {:?}",
            log.records.last()
        );
        assert!(
            !log.records
                .iter()
                .any(|r| matches!(r.event, sitrep::model::Event::ApprovalGiven { .. })),
            "{name}: nothing pending is approved"
        );
        // And it replays.
        let replay = sitrep(
            &["--headless", "replay", &found[0].path.display().to_string()],
            data.path(),
        )
        .stdin(Stdio::null())
        .output();
        let replay = match replay {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        assert!(replay.status.success(), "{name}");
        let replayed = String::from_utf8_lossy(&replay.stdout);
        assert_eq!(replayed.lines().count(), log.records.len(), "{name}");
    }
}

/// A runbook that matches the checkout alert more closely than the built-in one.
const CUSTOM_RUNBOOK: &str = r#"name: checkout-team-errors
description: The checkout team's own steps for checkout-api errors.
match:
  labels:
    alertname: [HighErrorRate]
    service: [checkout-api]
    namespace: [shop]
steps:
  - gather:
      tool: kubernetes.pods
      params:
        namespace: "{{ scope.namespace }}"
"#;

/// The runbook triage picked, from a headless read-only run of the checkout demo.
fn triaged_runbook(args: &[&str], data: &std::path::Path) -> Result<Option<String>, String> {
    let mut all = vec![
        "--headless",
        "--read-only",
        "demo",
        "checkout-bad-deploy",
        "--no-save",
    ];
    all.extend_from_slice(args);
    let out = match sitrep(&all, data).stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        match serde_json::from_str::<sitrep::model::Record>(l).map(|r| r.event) {
            Ok(sitrep::model::Event::Triaged { runbook, .. }) => runbook,
            _ => None,
        }
    }))
}

/// `--runbooks DIR` on demo (and investigate) and `[paths] runbooks` in the config add a runbooks
/// directory; a missing one is a clear error, not a run without it.
#[test]
fn runbooks_come_from_the_flag_or_the_config() {
    let data = tempdir();
    empty_config(data.path());
    let books = data.path().join("team-runbooks");
    if let Err(e) = std::fs::create_dir(&books)
        .and_then(|()| std::fs::write(books.join("checkout.yaml"), CUSTOM_RUNBOOK))
    {
        panic!("{e}");
    }
    let books_arg = books.display().to_string();
    assert_eq!(
        triaged_runbook(&[], data.path()),
        Ok(Some("bad-deploy".to_string())),
        "the built-in one without a directory"
    );
    assert_eq!(
        triaged_runbook(&["--runbooks", &books_arg], data.path()),
        Ok(Some("checkout-team-errors".to_string()))
    );
    // From the config, relative to the config file.
    if let Err(e) = std::fs::write(
        data.path().join("none.toml"),
        "[paths]\nrunbooks = \"team-runbooks\"\n",
    ) {
        panic!("{e}");
    }
    assert_eq!(
        triaged_runbook(&[], data.path()),
        Ok(Some("checkout-team-errors".to_string()))
    );
    let missing = data.path().join("nowhere").display().to_string();
    let err = triaged_runbook(&["--runbooks", &missing], data.path());
    assert!(
        err.as_ref()
            .is_err_and(|e| e.contains("runbooks directory") && e.contains("--runbooks")),
        "{err:?}"
    );
}
