//! Memory end to end: three headless runs of the same demo into one data dir. The third recalls
//! the first two (ids, verdicts, actions, a note left in the second), proposes the fix verified
//! before first with its history in the rationale; `sitrep history --json` shows one group of 3,
//! and the export lists the previous occurrences.

use sitrep::model::{Event, Record};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

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

/// One headless run of the checkout demo: approves what asks for approval, leaves `note` when
/// given, and returns its records.
fn run(data: &std::path::Path, note: Option<&str>) -> Vec<Record> {
    let mut child = sitrep(&["--headless", "demo", "checkout-bad-deploy"], data)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let mut records = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap_or_else(|e| panic!("{e}"));
        let r: Record = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if let Event::ApprovalRequested { action_id, .. } = &r.event {
            let approve = serde_json::json!({"type": "approve", "action_id": action_id});
            let _ = writeln!(stdin, "{approve}");
            if let Some(text) = note {
                let _ = writeln!(
                    stdin,
                    "{}",
                    serde_json::json!({"type": "note", "text": text})
                );
            }
            let _ = stdin.flush();
        }
        let ended = matches!(r.event, Event::SessionEnded { .. });
        records.push(r);
        if ended {
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    records
}

fn id_of(records: &[Record]) -> String {
    records
        .iter()
        .find_map(|r| match &r.event {
            Event::SessionStarted { id, .. } => Some(id.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn the_third_run_recalls_the_first_two_and_proposes_the_verified_fix_first() {
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(data.path().join("none.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let first = run(data.path(), None);
    let second = run(data.path(), Some("it was the CDN, not us"));
    let third = run(data.path(), None);
    let (id1, id2) = (id_of(&first), id_of(&second));

    let recalled = third
        .iter()
        .find_map(|r| match &r.event {
            Event::Recalled { sessions, .. } => Some(sessions.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no recalled record"));
    let ids: Vec<&str> = recalled.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [id2.as_str(), id1.as_str()], "newest first");
    for s in &recalled {
        assert!(s.category.is_some(), "{s:?}");
        assert!(!s.root_cause.is_empty());
        let undo = s
            .actions
            .iter()
            .find(|a| a.kind == "kubernetes.rollout_undo")
            .unwrap_or_else(|| panic!("no rollback in {s:?}"));
        assert_eq!(undo.status, "executed");
        assert_eq!(undo.verified, Some(true));
        assert!(!undo.decided_by.is_empty());
    }
    assert_eq!(recalled[0].notes.len(), 1);
    assert_eq!(recalled[0].notes[0].text, "it was the CDN, not us");

    // The fix verified before is the first proposal, and its rationale says when it worked.
    let first_proposal = third
        .iter()
        .find_map(|r| match &r.event {
            Event::ActionProposed { action } => Some(action.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no proposal"));
    assert_eq!(first_proposal.kind, "kubernetes.rollout_undo");
    assert!(
        first_proposal.rationale.contains("verified as the fix")
            && first_proposal.rationale.contains(&id1)
            && first_proposal.rationale.contains(&id2),
        "{}",
        first_proposal.rationale
    );

    // History: one group, three occurrences.
    let out = sitrep(&["history", "--json"], data.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let groups: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(groups.len(), 1, "{text}");
    assert_eq!(groups[0]["occurrences"], 3, "{text}");
    assert_eq!(groups[0]["alert"], "HighErrorRate", "{text}");

    // The export of the third lists the previous occurrences.
    let (found, _) = sitrep::session::list_sessions(&data.path().join("sessions"));
    let newest = &found[0].path;
    let out = sitrep(&["export", &newest.display().to_string()], data.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("## Previous occurrences"), "{md}");
    assert!(md.contains(&id1) && md.contains(&id2));
    assert!(md.contains("it was the CDN, not us"));
}

#[test]
fn a_damaged_session_file_is_skipped_with_a_warning() {
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(data.path().join("none.toml"), "").unwrap_or_else(|e| panic!("{e}"));
    let sessions = data.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(sessions.join("broken.ndjson"), "{\"sitrep_session\":1,\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let records = run(data.path(), None);
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::Warning { message } if message.contains("memory skipped"))));
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event, Event::SessionEnded { .. }))
    );
    let out = sitrep(&["history"], data.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("memory skipped"));
}
