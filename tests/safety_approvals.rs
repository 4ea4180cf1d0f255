//! Approval integrity end to end, through the real binary (`--headless`: records out on stdout,
//! JSON commands in on stdin) and `sitrep approve` run as other OS users: no pre-approval, the
//! digest binds a decision to the version shown, the last decision before execution wins, edits
//! merge and re-ask, the medium countdown pauses, and the critical two-person rule holds.

use sitrep::model::{Action, Event, Outcome, Record, Risk};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

/// A headless investigation of a demo scenario: records as they come, commands to stdin.
struct Headless {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Record>,
    seen: Vec<Record>,
    data: PathBuf,
}

fn write_config(data: &Path, policy: &str) -> PathBuf {
    let path = data.join("config.toml");
    std::fs::write(&path, format!("[policy]\n{policy}\n")).expect("config");
    path
}

impl Headless {
    fn start(scenario: &str, data: &Path, policy: &str, save: bool, env: &[(&str, &str)]) -> Self {
        let config = write_config(data, policy);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitrep"));
        cmd.args(["--headless", "demo", scenario]);
        if !save {
            cmd.arg("--no-save");
        }
        cmd.env("SITREP_DATA_DIR", data)
            .env("SITREP_CONFIG", &config)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("sitrep starts");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Record>(&line) {
                    Ok(r) => {
                        if tx.send(r).is_err() {
                            break;
                        }
                    }
                    Err(e) => panic!("stdout line is not a record ({e}): {line}"),
                }
            }
        });
        Headless {
            child,
            stdin,
            rx,
            seen: Vec::new(),
            data: data.to_path_buf(),
        }
    }

    fn send(&mut self, lines: &[String]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).expect("write command");
        stdin.flush().expect("flush");
    }

    /// The next record for which `pred` holds (everything read is kept in `seen`).
    fn until(&mut self, what: &str, pred: impl Fn(&Event) -> bool) -> Record {
        let start = Instant::now();
        loop {
            let left = WAIT.saturating_sub(start.elapsed());
            match self.rx.recv_timeout(left) {
                Ok(r) => {
                    self.seen.push(r.clone());
                    if pred(&r.event) {
                        return r;
                    }
                }
                Err(_) => panic!("no {what} within {WAIT:?}; saw {:#?}", self.events()),
            }
        }
    }

    /// Read whatever arrives within `d`.
    fn drain_for(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(r) => self.seen.push(r),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Read to the end of the session and wait for the process.
    fn finish(mut self) -> (Outcome, Vec<Event>) {
        let end = self.until("the end of the session", |e| {
            matches!(e, Event::SessionEnded { .. })
        });
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "sitrep exited with {status}");
        let Event::SessionEnded { outcome } = end.event else {
            unreachable!()
        };
        (outcome, self.events())
    }

    fn events(&self) -> Vec<Event> {
        self.seen.iter().map(|r| r.event.clone()).collect()
    }

    fn action(&self, id: &str) -> Option<Action> {
        self.seen.iter().rev().find_map(|r| match &r.event {
            Event::ActionProposed { action } | Event::ActionEdited { action, .. }
                if action.id == id =>
            {
                Some(action.clone())
            }
            _ => None,
        })
    }

    fn session_file(&self) -> PathBuf {
        let (found, _) = sitrep::session::list_sessions(&self.data.join("sessions"));
        found
            .first()
            .map(|s| s.path.clone())
            .expect("a session file")
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        // Only the child this test started.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn approve(id: &str) -> String {
    format!(r#"{{"type":"approve","action_id":"{id}"}}"#)
}

fn approve_digest(id: &str, digest: &str) -> String {
    format!(r#"{{"type":"approve","action_id":"{id}","digest":"{digest}"}}"#)
}

fn deny(id: &str, reason: &str) -> String {
    format!(r#"{{"type":"deny","action_id":"{id}","reason":"{reason}"}}"#)
}

fn executed(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ActionExecuted { action_id, .. } => Some(action_id.clone()),
            _ => None,
        })
        .collect()
}

fn given(events: &[Event], id: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::ApprovalGiven { action_id, .. } if action_id == id))
        .count()
}

fn warned(events: &[Event], needle: &str) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Warning { message } if message.contains(needle)))
}

/// The next approval request, as (action id, risk, digest).
fn next_request(h: &mut Headless) -> (String, Risk, String) {
    let r = h.until("an approval request", |e| {
        matches!(e, Event::ApprovalRequested { .. })
    });
    match r.event {
        Event::ApprovalRequested {
            action_id,
            risk,
            digest,
            ..
        } => (action_id, risk, digest),
        _ => unreachable!(),
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Issue 10.1: ids are predictable (act-1, ...); an approve sent before the action was shown is
/// refused with a warning and never used later.
#[test]
fn an_approval_sent_before_the_request_is_refused_and_forgotten() {
    let data = tempdir();
    let mut h = Headless::start("checkout-bad-deploy", data.path(), "", false, &[]);
    h.until("the start", |e| matches!(e, Event::SessionStarted { .. }));
    let early: Vec<String> = (1..=6).map(|n| approve(&format!("act-{n}"))).collect();
    h.send(&early);
    let (id, risk, _) = next_request(&mut h);
    assert!(risk >= Risk::High, "{risk}");
    // Time enough for a remembered approval to be applied.
    h.drain_for(Duration::from_millis(800));
    assert_eq!(given(&h.events(), &id), 0, "a pre-approval was used");
    h.send(&[deny(&id, "pre-approval test")]);
    let (outcome, events) = h.finish();
    assert!(executed(&events).is_empty(), "{events:#?}");
    assert!(warned(&events, "refused"), "{events:#?}");
    assert_eq!(outcome, Outcome::Diagnosed);
}

/// Issue 10.1: an approval names the version it approves; another digest does not count.
#[test]
fn an_approval_for_another_version_is_refused() {
    let data = tempdir();
    let mut h = Headless::start("checkout-bad-deploy", data.path(), "", false, &[]);
    let (id, _, digest) = next_request(&mut h);
    assert_eq!(digest.len(), 64, "the request carries the digest");
    assert_eq!(
        h.action(&id).map(|a| a.digest()),
        Some(digest.clone()),
        "the digest is that of the action shown"
    );
    h.send(&[approve_digest(&id, &"0".repeat(64))]);
    h.drain_for(Duration::from_millis(800));
    assert_eq!(given(&h.events(), &id), 0, "a wrong digest approved");
    assert!(executed(&h.events()).is_empty());
    h.send(&[approve_digest(&id, &digest)]);
    let (outcome, events) = h.finish();
    assert_eq!(executed(&events), vec![id.clone()]);
    assert!(warned(&events, "refused"), "{events:#?}");
    assert_eq!(outcome, Outcome::Resolved);
}

/// Issue 10.2: approve then deny, or approve then cancel, before execution: nothing runs.
#[test]
fn the_last_decision_before_execution_wins() {
    for last in ["deny", "cancel"] {
        let data = tempdir();
        let mut h = Headless::start("checkout-bad-deploy", data.path(), "", false, &[]);
        let (id, _, digest) = next_request(&mut h);
        let then = match last {
            "deny" => deny(&id, "changed my mind"),
            _ => r#"{"type":"cancel"}"#.to_string(),
        };
        h.send(&[approve_digest(&id, &digest), then]);
        let (outcome, events) = h.finish();
        assert!(
            executed(&events).is_empty(),
            "{last}: the action ran: {events:#?}"
        );
        match last {
            "deny" => {
                assert!(events.iter().any(
                    |e| matches!(e, Event::ApprovalDenied { action_id, .. } if *action_id == id)
                ));
                assert_eq!(outcome, Outcome::Diagnosed);
            }
            _ => assert_eq!(outcome, Outcome::Cancelled),
        }
    }
}

/// Issue 10.4: an edit merges into the parameters, recomputes target, risk and operation, is
/// shown again with a new digest and needs a fresh approval; a riskier edit needs the higher rule.
#[test]
fn an_edit_merges_is_shown_again_and_needs_a_fresh_approval() {
    let data = tempdir();
    let mut h = Headless::start("checkout-bad-deploy", data.path(), "", false, &[]);
    let (id, risk, digest) = next_request(&mut h);
    let before = h.action(&id).expect("proposed");
    assert_eq!(risk, Risk::High);
    let others: Vec<(String, serde_json::Value)> = before
        .params
        .iter()
        .filter(|(k, _)| k.as_str() != "namespace")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(!others.is_empty(), "{before:?}");
    h.send(&[format!(
        r#"{{"type":"approve","action_id":"{id}","digest":"{digest}","params":{{"namespace":"kube-system"}}}}"#
    )]);
    let edited = h.until("the edited action", |e| {
        matches!(e, Event::ActionEdited { .. })
    });
    let Event::ActionEdited { action, .. } = edited.event else {
        unreachable!()
    };
    for (k, v) in &others {
        assert_eq!(
            action.params.get(k),
            Some(v),
            "the edit merged, {k} stays: {action:?}"
        );
    }
    assert_eq!(action.target, before.target);
    assert_eq!(
        action.params.get("namespace").and_then(|v| v.as_str()),
        Some("kube-system")
    );
    assert!(
        action.operation.contains("kube-system"),
        "{}",
        action.operation
    );
    assert!(
        action.risk > before.risk,
        "retargeting to kube-system raises the risk"
    );
    let (id2, risk2, digest2) = next_request(&mut h);
    assert_eq!(id2, id);
    assert_eq!(risk2, action.risk);
    assert_ne!(digest2, digest, "a new version, a new digest");
    assert_eq!(digest2, action.digest());
    let approvals_needed = h.seen.iter().rev().find_map(|r| match &r.event {
        Event::ApprovalRequested {
            approvals_needed, ..
        } => Some(*approvals_needed),
        _ => None,
    });
    assert_eq!(approvals_needed, Some(2), "critical: the two-person rule");
    // The old version's approval does not carry over; an approval naming it is refused.
    h.send(&[approve_digest(&id, &digest)]);
    h.drain_for(Duration::from_millis(600));
    assert_eq!(given(&h.events(), &id), 0, "{:#?}", h.events());
    assert!(executed(&h.events()).is_empty());
    h.send(&[deny(&id, "not in kube-system")]);
    let (outcome, events) = h.finish();
    assert!(executed(&events).is_empty());
    assert_eq!(outcome, Outcome::Diagnosed);
}

/// Issue 10.7: pausing the countdown (what any key in the modal sends) stops the medium action
/// from running on its own; it is recorded for replay; a deny is final.
#[test]
fn a_paused_veto_never_runs_by_itself_and_a_deny_is_final() {
    let data = tempdir();
    let mut h = Headless::start(
        "search-cpu-saturation",
        data.path(),
        "veto_secs = 2",
        false,
        &[],
    );
    let (id, risk, digest) = next_request(&mut h);
    assert_eq!(risk, Risk::Medium);
    h.send(&[format!(r#"{{"type":"pause_veto","action_id":"{id}"}}"#)]);
    h.until("the pause", |e| matches!(e, Event::VetoPaused { .. }));
    // Well past the 2 s countdown.
    h.drain_for(Duration::from_secs(3));
    assert_eq!(given(&h.events(), &id), 0, "the countdown kept running");
    assert!(executed(&h.events()).is_empty());
    h.send(&[deny(&id, "looked, no"), approve_digest(&id, &digest)]);
    let (outcome, events) = h.finish();
    assert!(executed(&events).is_empty(), "{events:#?}");
    assert_eq!(given(&events, &id), 0);
    assert_eq!(outcome, Outcome::Diagnosed);
}

// ---------------------------------------------------------------------------------------------
// Issue 10.3: two OS users.

fn is_root() -> bool {
    sitrep::agent::approve::current_uid() == 0
}

/// A throwaway group with one member, and one user outside it; removed on drop.
struct Users {
    group: String,
    gid: u32,
    member: (String, u32),
    outsider: (String, u32, u32),
}

fn id_of(flag: &str, name: &str) -> u32 {
    let out = Command::new("id").args([flag, name]).output().expect("id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("id {flag} {name}"))
}

impl Users {
    fn create(tag: &str) -> Users {
        let n = std::process::id() % 100_000;
        let group = format!("srap{tag}{n}");
        let member = format!("srb{tag}{n}");
        let outsider = format!("src{tag}{n}");
        let ok = |args: &[&str], prog: &str| {
            let st = Command::new(prog).args(args).status().expect(prog);
            assert!(st.success(), "{prog} {args:?}");
        };
        ok(&[&group], "groupadd");
        ok(&["-M", "-N", "-g", &group, &member], "useradd");
        ok(&["-M", "-U", &outsider], "useradd");
        Users {
            gid: id_of("-g", &member),
            member: (member.clone(), id_of("-u", &member)),
            outsider: (
                outsider.clone(),
                id_of("-u", &outsider),
                id_of("-g", &outsider),
            ),
            group,
        }
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.member.0).status();
        let _ = Command::new("userdel").arg(&self.outsider.0).status();
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

/// `sitrep approve SESSION ACTION` as (uid, gid); (success, stdout + stderr).
fn approve_as(ids: Option<(u32, u32)>, data: &Path, session: &Path, id: &str) -> (bool, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitrep"));
    cmd.args(["approve", &session.display().to_string(), id])
        .env("SITREP_DATA_DIR", data)
        .env("SITREP_CONFIG", data.join("config.toml"))
        .stdin(Stdio::null());
    if let Some((uid, gid)) = ids {
        cmd.uid(uid).gid(gid);
    }
    let out = cmd.output().expect("sitrep approve runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn open_to_others(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn critical_needs_the_operator_and_another_os_user_proven_by_file_ownership() {
    if !is_root() {
        eprintln!("skipping: creating throwaway users needs root");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let users = Users::create("c");
    let data = tempdir();
    open_to_others(data.path());
    let mut h = Headless::start(
        "orders-db-node-lost",
        data.path(),
        "",
        true,
        &[("SITREP_APPROVERS_GROUP", &users.group)],
    );
    let member = Some((users.member.1, users.gid));
    let outsider = Some((users.outsider.1, users.outsider.2));
    // Deny everything but the critical action.
    let (id, digest) = loop {
        let (id, risk, digest) = next_request(&mut h);
        if risk == Risk::Critical {
            break (id, digest);
        }
    };
    h.drain_for(Duration::from_millis(300));
    let others: Vec<String> = h
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { action_id, .. } if *action_id != id => {
                Some(deny(action_id, "not this one"))
            }
            _ => None,
        })
        .collect();
    h.send(&others);
    let session = h.session_file();
    let dir = sitrep::agent::approve::approvals_dir(&session);
    let meta = std::fs::symlink_metadata(&dir).expect("approvals dir");
    assert!(meta.is_dir());
    assert_eq!(
        meta.mode() & 0o7777,
        0o1730,
        "not writable by others, sticky"
    );
    assert_eq!(meta.gid(), users.gid, "the approvers group");

    // Before the request nothing can be approved; an unknown action is refused too.
    let (ok, text) = approve_as(member, data.path(), &session, "act-999");
    assert!(!ok, "{text}");
    assert!(text.contains("no action act-999"), "{text}");
    // The operator's own uid is not a second operator.
    let (ok, text) = approve_as(None, data.path(), &session, &id);
    assert!(!ok, "{text}");
    assert!(text.contains("session's operator"), "{text}");
    // A user outside the approvers group cannot drop a file at all.
    let (ok, text) = approve_as(outsider, data.path(), &session, &id);
    assert!(!ok, "{text}");
    assert!(text.contains("may not approve"), "{text}");
    // A symlink planted in the directory is refused and reported.
    std::os::unix::fs::symlink(&session, dir.join(format!("{id}.0.planted.json"))).expect("ln");
    h.until(
        "the symlink warning",
        |e| matches!(e, Event::Warning { message } if message.contains("symlink")),
    );

    // The second operator approves: recorded, but the operator has not: nothing runs.
    let (ok, text) = approve_as(member, data.path(), &session, &id);
    assert!(ok, "{text}");
    assert!(
        text.contains(&digest),
        "the approver sees what version they approve: {text}"
    );
    let by = h.until("the second approval", |e| {
        matches!(e, Event::ApprovalGiven { .. })
    });
    assert!(
        matches!(&by.event, Event::ApprovalGiven { by, .. } if *by == users.member.0),
        "{by:?}"
    );
    // The file is theirs, created anew; a second try is refused.
    let (ok, text) = approve_as(member, data.path(), &session, &id);
    assert!(!ok, "{text}");
    assert!(text.contains("already"), "{text}");
    h.drain_for(Duration::from_millis(1200));
    assert!(executed(&h.events()).is_empty(), "ran without the operator");

    // The operator approves: now it runs.
    h.send(&[approve_digest(&id, &digest)]);
    let (_, events) = h.finish();
    assert_eq!(executed(&events), vec![id.clone()]);
    // A finished session accepts nothing.
    let (ok, text) = approve_as(member, data.path(), &session, &id);
    assert!(!ok, "{text}");
    assert!(text.contains("has ended"), "{text}");
}

#[test]
fn only_the_operator_approves_high_risk_another_users_file_is_ignored() {
    if !is_root() {
        eprintln!("skipping: creating throwaway users needs root");
        return;
    }
    use std::os::unix::process::CommandExt;
    let users = Users::create("h");
    let data = tempdir();
    open_to_others(data.path());
    let mut h = Headless::start(
        "checkout-bad-deploy",
        data.path(),
        "",
        true,
        &[("SITREP_APPROVERS_GROUP", &users.group)],
    );
    let (id, risk, digest) = next_request(&mut h);
    assert_eq!(risk, Risk::High);
    let session = h.session_file();
    let member = Some((users.member.1, users.gid));
    let (ok, text) = approve_as(member, data.path(), &session, &id);
    assert!(!ok, "{text}");
    assert!(text.contains("only the session's operator"), "{text}");
    // Written by hand as that user, the file is still only theirs, and ignored for HIGH.
    let dir = sitrep::agent::approve::approvals_dir(&session);
    let body = format!(
        r#"{{"action_id":"{id}","session":"x","digest":"{digest}","at":"2030-01-01T00:00:00Z"}}"#
    );
    let path = dir.join(format!("{id}.0.forged.json"));
    let st = Command::new("sh")
        .args(["-c", "cat > \"$1\"", "sh", &path.display().to_string()])
        .uid(users.member.1)
        .gid(users.gid)
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().map(|mut i| i.write_all(body.as_bytes()));
            c.wait()
        })
        .expect("write as the member");
    assert!(st.success());
    h.until("the ignored-file warning", |e| {
        matches!(e, Event::Warning { message } if message.contains("only the session's operator"))
    });
    h.drain_for(Duration::from_millis(600));
    assert_eq!(given(&h.events(), &id), 0);
    h.send(&[deny(&id, "done testing")]);
    let (_, events) = h.finish();
    assert!(executed(&events).is_empty());
}

/// An in-process investigation of a demo scenario: after each record, `decide(kind, id, events so
/// far, handle)` runs; `kind` and `id` name the action when the record is an approval request
/// and are empty otherwise.
async fn in_process(
    scenario: &str,
    opts: sitrep::agent::AgentOptions,
    mut decide: impl FnMut(&str, &str, &[Event], &sitrep::agent::AgentHandle),
) -> Vec<Event> {
    let world = sitrep::world::demo::load(scenario).expect("scenario");
    let payload = world.case().and_then(|c| c.alert.clone()).expect("alert");
    let mut h = sitrep::agent::spawn(
        std::sync::Arc::new(world),
        sitrep::agent::Trigger::Alert(payload),
        opts,
    );
    let mut kinds = std::collections::BTreeMap::new();
    let mut events = Vec::new();
    while let Some(r) = tokio::time::timeout(WAIT, h.records.recv())
        .await
        .expect("the investigation stalled")
    {
        if let Event::ActionProposed { action } = &r.event {
            kinds.insert(action.id.clone(), action.kind.clone());
        }
        let end = matches!(r.event, Event::SessionEnded { .. });
        events.push(r.event.clone());
        let (kind, id) = match &r.event {
            Event::ApprovalRequested { action_id, .. } => (
                kinds.get(action_id).cloned().unwrap_or_default(),
                action_id.clone(),
            ),
            _ => (String::new(), String::new()),
        };
        decide(&kind, &id, &events, &h);
        if end {
            break;
        }
    }
    h.task.await.expect("join").expect("run");
    events
}

fn api(name: &str, port: u16) -> sitrep::agent::Decider {
    sitrep::agent::Decider {
        name: name.into(),
        via: format!("api from 127.0.0.1:{port}"),
    }
}

fn attributed(
    h: &sitrep::agent::AgentHandle,
    by: sitrep::agent::Decider,
    command: sitrep::model::Command,
) {
    h.attributed
        .send(sitrep::agent::Attributed {
            decider: by,
            command,
        })
        .expect("listening");
}

fn approve_cmd(id: &str) -> sitrep::model::Command {
    sitrep::model::Command::Approve {
        action_id: id.into(),
        by: None,
        params: None,
        digest: None,
    }
}

fn deny_cmd(id: &str) -> sitrep::model::Command {
    sitrep::model::Command::Deny {
        action_id: id.into(),
        reason: "not this one".into(),
        by: None,
    }
}

fn decisions(events: &[Event]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalGiven {
                action_id, by, via, ..
            } => Some((action_id.clone(), by.clone(), via.clone())),
            _ => None,
        })
        .collect()
}

/// Issue 13.3 with issue 10's two-person rule: deciders are compared by identity whatever the
/// channel. The console operator and an API caller of the same name are one operator; an API
/// caller of another name is the second. Each decision is recorded under its decider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_counts_distinct_identities_across_the_console_and_the_api() {
    let data = tempdir();
    let opts = sitrep::agent::AgentOptions {
        operator: "alice".into(),
        veto_secs: 0.05,
        approval_poll: Duration::from_millis(20),
        session_path: Some(data.path().join("orders.ndjson")),
        ..Default::default()
    };
    let mut critical = String::new();
    let (mut again_sent, mut second_sent) = (false, false);
    let events = in_process("orders-db-node-lost", opts, |kind, id, seen, h| {
        if kind == "kubernetes.delete_pod" {
            critical = id.to_string();
            h.commands.send(approve_cmd(id)).expect("listening");
        } else if !again_sent
            && matches!(seen.last(), Some(Event::ApprovalGiven { by, .. }) if by == "alice")
        {
            // The console (alice) approved; alice again through the API is still one operator.
            again_sent = true;
            attributed(h, api("alice", 50000), approve_cmd(&critical));
        } else if !kind.is_empty() {
            attributed(h, api("carol", 50002), deny_cmd(id));
        } else if !second_sent && warned(seen, "alice already approved") {
            // Only now does someone else approve.
            second_sent = true;
            assert!(executed(seen).is_empty(), "ran on one operator");
            attributed(h, api("bob", 50001), approve_cmd(&critical));
        }
    })
    .await;
    assert_eq!(executed(&events), vec![critical.clone()]);
    assert_eq!(
        decisions(&events),
        vec![
            (critical.clone(), "alice".into(), String::new()),
            (
                critical.clone(),
                "bob".into(),
                "api from 127.0.0.1:50001".into()
            ),
        ]
    );
    // Denials are the API caller's too, and the export says how each decision came.
    assert!(events.iter().any(|e| matches!(e,
        Event::ApprovalDenied { by, via, .. } if by == "carol" && via == "api from 127.0.0.1:50002")));
    let log = sitrep::session::read_file(&data.path().join("orders.ndjson")).expect("session");
    let md = sitrep::session::export::markdown(&log.incident());
    assert!(
        md.contains("Approved by **bob** (api from 127.0.0.1:50001)"),
        "{md}"
    );
    assert!(md.contains("Approved by **alice** at"), "{md}");
}

/// The API caller and the OS user who runs `sitrep approve` are one operator when they share a
/// name: the file does not count as the second approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_caller_and_the_same_os_user_are_one_operator() {
    if !is_root() {
        eprintln!("skipping: a file owned by another user needs root");
        return;
    }
    let data = tempdir();
    let session = data.path().join("orders.ndjson");
    let opts = sitrep::agent::AgentOptions {
        operator: "root".into(),
        veto_secs: 0.05,
        approval_poll: Duration::from_millis(20),
        session_path: Some(session.clone()),
        ..Default::default()
    };
    let nobody = sitrep::agent::approve::user_name(65534);
    let mut critical = String::new();
    let (mut file_sent, mut console_sent) = (false, false);
    let events = in_process("orders-db-node-lost", opts, |kind, id, seen, h| {
        if kind == "kubernetes.delete_pod" {
            critical = id.to_string();
            attributed(h, api(&nobody, 50010), approve_cmd(id));
        } else if !file_sent
            && matches!(seen.last(), Some(Event::ApprovalGiven { by, .. }) if *by == nobody)
        {
            // The same person drops an approval file as their OS user (uid 65534).
            file_sent = true;
            let id = critical.as_str();
            let digest = sitrep::session::read_file(&session)
                .expect("session")
                .incident()
                .action(id)
                .map(|a| a.digest.clone())
                .expect("requested");
            let file =
                sitrep::agent::approve::approvals_dir(&session).join(format!("{id}.65534.json"));
            let body = sitrep::agent::approve::ApprovalFile {
                action_id: id.into(),
                session: session.display().to_string(),
                digest,
                at: chrono::Utc::now(),
            };
            std::fs::write(&file, serde_json::to_string(&body).expect("json")).expect("write");
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).expect("chown");
        } else if !kind.is_empty() {
            h.commands.send(deny_cmd(id)).expect("listening");
        } else if !console_sent && warned(seen, &format!("{nobody} already approved it")) {
            console_sent = true;
            assert!(executed(seen).is_empty(), "ran on one operator");
            // The session's operator is someone else: now it runs.
            h.commands.send(approve_cmd(&critical)).expect("listening");
        }
    })
    .await;
    assert!(console_sent, "the file was refused: {events:#?}");
    assert_eq!(executed(&events), vec![critical.clone()]);
    let by: Vec<String> = decisions(&events).into_iter().map(|d| d.1).collect();
    assert_eq!(by, vec![nobody.clone(), "root".to_string()]);
}

/// `sitrep approve` refuses at once, with the reason, when its OS user already approved the
/// action under the same name through the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitrep_approve_refuses_who_already_approved_through_the_api() {
    let data = tempdir();
    let session = data.path().join("orders.ndjson");
    let opts = sitrep::agent::AgentOptions {
        operator: "alice".into(),
        veto_secs: 0.05,
        approval_poll: Duration::from_millis(20),
        session_path: Some(session.clone()),
        ..Default::default()
    };
    let me = sitrep::agent::approve::current_user();
    let mut refused: Option<String> = None;
    let events = in_process("orders-db-node-lost", opts, |kind, id, seen, h| {
        if kind == "kubernetes.delete_pod" {
            attributed(h, api(&me, 50020), approve_cmd(id));
        } else if !kind.is_empty() {
            h.commands.send(deny_cmd(id)).expect("listening");
        } else if refused.is_none()
            && let Some(Event::ApprovalGiven { action_id, by, .. }) = seen.last()
            && *by == me
        {
            let err = sitrep::agent::approve::submit_in(
                session.to_str().expect("utf-8"),
                action_id,
                data.path(),
            )
            .expect_err("the same person twice");
            refused = Some(err.to_string());
            h.commands.send(deny_cmd(action_id)).expect("listening");
        }
    })
    .await;
    let refused = refused.expect("the API approval was recorded");
    assert!(
        refused.contains(&format!("{me} already approved"))
            && refused.contains("api from 127.0.0.1:50020"),
        "{refused}"
    );
    assert!(executed(&events).is_empty());
}
