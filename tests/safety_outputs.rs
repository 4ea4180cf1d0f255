//! What the text outputs do with hostile or broken input, run as the real binary: `export` and
//! `sessions` neutralise terminal escape sequences from alert and evidence text, and bad input
//! (absurd times, absurd timeouts, extreme clocks, empty alert payloads) is a clear error with a
//! non-zero exit, never a panic.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Hostile text: an OSC title change, a clear screen, a C1 CSI, a bell, backspaces, a carriage
/// return rewriting the line, and a bidi override.
const OSC: &str = "\u{1b}]0;pwned\u{7}";
const CLEAR: &str = "\u{1b}[2J";
const HOSTILE: &str =
    "evil\u{1b}]0;pwned\u{7} title\u{1b}[2J \u{9b}31m c1\u{8}\u{8} bs\r\u{7}rewrite \u{202e}bidi";

fn sitrep(args: &[&str], data: &Path, config: Option<&Path>) -> Output {
    let empty = data.join("empty-config.toml");
    if config.is_none() {
        let _ = std::fs::write(&empty, "");
    }
    Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_DATA_DIR", data)
        .env("SITREP_CONFIG", config.unwrap_or(&empty))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run sitrep: {e}"))
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

/// Every terminal control a reader's terminal would act on: C0 except newline, DEL, C1.
fn controls(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.char_indices()
        .filter(|(_, c)| (c.is_control() && *c != '\n') || ('\u{202a}'..='\u{202e}').contains(c))
        .map(|(i, c)| {
            let around: String = text[i.saturating_sub(20)..].chars().take(40).collect();
            format!("U+{:04X} near {around:?}", c as u32)
        })
        .collect()
}

fn assert_clean(what: &str, out: &Output) {
    let found = controls(&out.stdout);
    assert!(
        found.is_empty(),
        "{what}: stdout carries controls: {found:?}"
    );
    let found = controls(&out.stderr);
    assert!(
        found.is_empty(),
        "{what}: stderr carries controls: {found:?}"
    );
    assert!(
        !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
        "{what}"
    );
}

fn line(t: f64, event: Value) -> String {
    json!({"t": t, "event": event}).to_string()
}

/// A finished session whose alert, evidence, tool errors, chat, actions and warnings all carry
/// hostile text.
fn hostile_session(path: &Path) {
    let header = json!({"sitrep_session": 1, "id": format!("id-{HOSTILE}"),
        "started": "2026-11-22T09:00:00Z", "title": format!("Alert {HOSTILE}")});
    let alert = json!({"status": "firing",
        "labels": {"alertname": format!("Evil{OSC}"), "namespace": format!("pay{CLEAR}"),
                   "severity": "critical", format!("k{OSC}"): HOSTILE},
        "annotations": {"summary": format!("summary {HOSTILE}"), "description": HOSTILE}});
    let lines = [
        header.to_string(),
        line(
            0.0,
            json!({"type": "session_started", "id": "x", "title": format!("Alert {HOSTILE}"),
            "started": "2026-11-22T09:00:00Z", "mode": "live", "alert": alert,
            "problem": HOSTILE, "case": HOSTILE, "operator": HOSTILE}),
        ),
        line(0.1, json!({"type": "stage_started", "stage": "triage"})),
        line(
            0.2,
            json!({"type": "triaged", "summary": HOSTILE, "runbook": HOSTILE, "specialists": [HOSTILE]}),
        ),
        line(
            0.3,
            json!({"type": "stage_finished", "stage": "triage", "summary": HOSTILE}),
        ),
        line(
            0.4,
            json!({"type": "tool_called", "call_id": "c1", "tool": format!("k8s{CLEAR}"),
            "specialist": HOSTILE, "params": {"q": HOSTILE}}),
        ),
        line(
            0.5,
            json!({"type": "tool_failed", "call_id": "c1", "duration_ms": 5, "error": HOSTILE}),
        ),
        line(
            0.6,
            json!({"type": "evidence_added", "evidence": {"id": format!("e1{OSC}"), "kind": HOSTILE,
            "title": HOSTILE, "source": HOSTILE,
            "body": {"format": "text", "language": HOSTILE, "text": HOSTILE}}}),
        ),
        line(
            0.7,
            json!({"type": "finding", "finding": {"analyzer": HOSTILE, "summary": HOSTILE,
            "detail": HOSTILE, "category": "code_defect", "confidence": 0.5, "evidence": [HOSTILE]}}),
        ),
        line(
            0.8,
            json!({"type": "hypotheses_ranked", "hypotheses": [{"statement": HOSTILE,
            "category": "code_defect", "confidence": 0.5, "evidence": [HOSTILE]}],
            "ruled_out": [{"statement": HOSTILE, "reason": HOSTILE, "evidence": [HOSTILE]}]}),
        ),
        line(
            0.9,
            json!({"type": "diagnosis", "category": "code_defect", "root_cause": HOSTILE, "confidence": 0.5}),
        ),
        line(
            1.0,
            json!({"type": "action_proposed", "action": {"id": "a1", "kind": HOSTILE,
            "target": HOSTILE, "params": {format!("p{OSC}"): HOSTILE}, "risk": "high",
            "rationale": HOSTILE, "operation": HOSTILE, "blast_radius": HOSTILE}}),
        ),
        line(
            1.1,
            json!({"type": "approval_denied", "action_id": "a1", "by": HOSTILE,
            "at": "2026-11-22T09:00:01Z", "reason": HOSTILE}),
        ),
        line(
            1.2,
            json!({"type": "chat_message", "from": "operator", "text": HOSTILE}),
        ),
        line(
            1.3,
            json!({"type": "chat_message", "from": "agent", "text": HOSTILE}),
        ),
        line(1.4, json!({"type": "warning", "message": HOSTILE})),
        line(
            1.5,
            json!({"type": "verified", "verification": {"action_id": "a1", "passed": false,
            "summary": HOSTILE, "before": HOSTILE, "after": HOSTILE}}),
        ),
        line(1.6, json!({"type": "report", "markdown": HOSTILE})),
        line(1.7, json!({"type": "session_ended", "outcome": "resolved"})),
    ];
    std::fs::write(path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
}

fn sessions_dir(data: &Path) -> PathBuf {
    let dir = data.join("sessions");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

#[test]
fn export_neutralises_escape_sequences_from_alert_and_evidence_text() {
    let data = tempdir();
    let file = sessions_dir(data.path()).join("20261122T090000Z-evil.ndjson");
    hostile_session(&file);
    let file = file.to_string_lossy().to_string();

    let md = sitrep(&["export", &file], data.path(), None);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    assert_clean("export markdown", &md);
    let text = String::from_utf8_lossy(&md.stdout);
    // The words around the escapes survive: the text is neutralised, not dropped.
    assert!(text.contains("# Postmortem: Alert evil title"), "{text}");
    assert!(text.contains("rewrite"), "{text}");

    let js = sitrep(&["export", "--format", "json", &file], data.path(), None);
    assert!(
        js.status.success(),
        "{}",
        String::from_utf8_lossy(&js.stderr)
    );
    assert_clean("export json", &js);
    let v: Value = serde_json::from_slice(&js.stdout).unwrap_or_else(|e| panic!("JSON: {e}"));
    // JSON keeps the exact text, escaped: a tool reading it gets what the alert said.
    assert_eq!(v["title"], format!("Alert {HOSTILE}"));
    assert_eq!(
        v["incident"]["alert"]["annotations"]["description"],
        HOSTILE
    );

    let to_file = data.path().join("postmortem.md");
    let out = sitrep(
        &["export", &file, "-o", &to_file.to_string_lossy()],
        data.path(),
        None,
    );
    assert!(out.status.success());
    let found = controls(&std::fs::read(&to_file).unwrap_or_default());
    assert!(found.is_empty(), "export -o: {found:?}");

    let replay = sitrep(&["--headless", "replay", &file], data.path(), None);
    assert!(replay.status.success());
    assert_clean("replay --headless", &replay);
    for l in String::from_utf8_lossy(&replay.stdout).lines() {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}

#[test]
fn sessions_listing_neutralises_titles_and_file_names() {
    let data = tempdir();
    let dir = sessions_dir(data.path());
    hostile_session(&dir.join("20261122T090000Z-evil.ndjson"));
    // Anyone who can write the directory picks file names; a name is text printed to a terminal.
    hostile_session(&dir.join(format!("x{CLEAR}{OSC}.ndjson")));
    let _ = std::fs::write(
        dir.join(format!("broken{OSC}.ndjson")),
        format!("{HOSTILE}\n"),
    );
    let out = sitrep(&["sessions"], data.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean("sessions", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Alert evil title"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped"));
}

#[test]
fn export_of_absurd_times_is_a_clear_error() {
    let data = tempdir();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson");
    let original = std::fs::read_to_string(fixture).unwrap_or_default();
    let head: Vec<&str> = original.lines().take(3).collect();
    for t in [
        "1e300",
        "-1",
        "1.7976931348623157e308",
        "-1e300",
        "1e999",
        "\"NaN\"",
        "null",
    ] {
        let file = data.path().join("absurd.ndjson");
        let text = format!(
            "{}\n{{\"t\":{t},\"event\":{{\"type\":\"warning\",\"message\":\"w\"}}}}\n{{\"t\":2,\"event\":{{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}}}\n",
            head.join("\n")
        );
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
        for format in ["markdown", "json"] {
            let out = sitrep(
                &["export", "--format", format, &file.to_string_lossy()],
                data.path(),
                None,
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "t = {t} ({format}): {err}");
            assert!(err.contains("line 4"), "t = {t}: {err}");
            assert!(err.contains("cannot export"), "t = {t}: {err}");
            assert!(!err.contains("panicked"), "t = {t}: {err}");
        }
        // Listing and replay still show what is readable, without panicking.
        let out = sitrep(
            &["--headless", "replay", &file.to_string_lossy()],
            data.path(),
            None,
        );
        assert!(
            out.status.success(),
            "t = {t}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn absurd_approval_timeouts_are_refused_at_load() {
    let data = tempdir();
    for value in [
        "0",
        "604801",
        "4611686018427387904",
        "9223372036854775807",
        "9223372036854775808",
        "-1",
    ] {
        let config = data.path().join("config.toml");
        std::fs::write(
            &config,
            format!("[policy]\napproval_timeout_secs = {value}\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let out = sitrep(
            &["--headless", "demo", "--no-save"],
            data.path(),
            Some(&config),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{value}: {err}");
        assert!(
            err.contains("policy.approval_timeout_secs"),
            "{value}: {err}"
        );
        assert!(!err.contains("panicked"), "{value}: {err}");
        assert!(out.stdout.is_empty(), "{value}: nothing ran");
    }
    let config = data.path().join("config.toml");
    std::fs::write(&config, "[policy]\napproval_timeout_secs = 604800\n")
        .unwrap_or_else(|e| panic!("{e}"));
    // Read-only, so the run proposes but never waits the week for a decision.
    let out = sitrep(
        &["--headless", "--read-only", "demo", "--no-save"],
        data.path(),
        Some(&config),
    );
    assert!(
        out.status.success(),
        "a week is accepted: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn case_dir(root: &Path, now: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases/checkout-bad-deploy");
    let dir = root.join("case");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        let _ = std::fs::copy(entry.path(), dir.join(entry.file_name()));
    }
    let meta = std::fs::read_to_string(dir.join("case.toml")).unwrap_or_default();
    let meta: Vec<String> = meta
        .lines()
        .map(|l| {
            if l.starts_with("now") {
                format!("now = \"{now}\"")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(dir.join("case.toml"), meta.join("\n")).unwrap_or_else(|e| panic!("{e}"));
    dir
}

#[test]
fn a_case_with_an_extreme_clock_is_refused() {
    let data = tempdir();
    for now in [
        "9999-12-31T23:59:59Z",
        "2263-01-01T00:00:00Z",
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
    ] {
        let dir = case_dir(data.path(), now);
        let out = sitrep(
            &[
                "--headless",
                "investigate",
                "--diagnosis-only",
                "--no-save",
                "--case",
                &dir.to_string_lossy(),
            ],
            data.path(),
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{now}: {err}");
        assert!(
            err.contains("case.toml") && err.contains("now"),
            "{now}: {err}"
        );
        assert!(!err.contains("panicked"), "{now}: {err}");
    }
    let dir = case_dir(data.path(), "2026-04-18T10:47:00Z");
    let out = sitrep(
        &[
            "--headless",
            "investigate",
            "--diagnosis-only",
            "--no-save",
            "--case",
            &dir.to_string_lossy(),
        ],
        data.path(),
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn empty_alert_payloads_are_refused() {
    let data = tempdir();
    for payload in [
        "{}",
        "[]",
        "null",
        "42",
        "{\"alerts\": []}",
        "{\"version\":\"4\",\"alerts\":[{}]}",
    ] {
        let file = data.path().join("alert.json");
        std::fs::write(&file, payload).unwrap_or_else(|e| panic!("{e}"));
        let out = sitrep(
            &[
                "--headless",
                "investigate",
                "--no-save",
                "--alert",
                &file.to_string_lossy(),
            ],
            data.path(),
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{payload}: {err}");
        assert!(
            err.contains("alert.json") && err.contains("webhook"),
            "{payload}: {err}"
        );
        assert!(out.stdout.is_empty(), "{payload}: no investigation started");
        // The same payload as a case's alert.json.
        let dir = case_dir(data.path(), "2026-04-18T10:47:00Z");
        std::fs::write(dir.join("alert.json"), payload).unwrap_or_else(|e| panic!("{e}"));
        let out = sitrep(
            &[
                "--headless",
                "investigate",
                "--diagnosis-only",
                "--no-save",
                "--case",
                &dir.to_string_lossy(),
            ],
            data.path(),
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "case {payload}: {err}");
        assert!(err.contains("alert.json"), "case {payload}: {err}");
    }
}
