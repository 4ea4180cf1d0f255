//! Tickets as actions, end to end through the real binary: a recorded case is investigated
//! headless with loopback fakes of Jira Cloud (REST v3) and ServiceNow (Table API) configured,
//! built from their documented wire formats. The ticket is proposed at the end, created only
//! after its approval (never when denied), carries the report in Atlassian Document Format, and
//! its key and link are in the export. No planted secret reaches a fake's request body, and an
//! error answer becomes a failed action with the reason.

mod support;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use sitrep::model::{Event, Outcome, Record, catalog};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(120);
const CASE: &str = "cases/checkout-bad-deploy";
const JIRA_TOKEN: &str = "jira-api-token-canary-4f1e9c";
const SNOW_PASSWORD: &str = "snow-password-canary-77ab3d";

/// One request a fake received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: String,
    content_type: String,
    raw: String,
    body: Value,
}

type Answer = Arc<dyn Fn(&str) -> (u16, Value) + Send + Sync>;

/// A fake that records every request and answers as `answer` says for the base URL it runs at.
struct Fake {
    seen: Arc<Mutex<Vec<Seen>>>,
    url: String,
    _server: support::Server,
}

impl Fake {
    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

async fn fake(answer: Answer) -> Fake {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let url: Arc<Mutex<String>> = Arc::default();
    let (s, u) = (seen.clone(), url.clone());
    let router = Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (seen, url, answer) = (s.clone(), u.clone(), answer.clone());
            async move {
                let h = |name: header::HeaderName| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string()
                };
                let raw = String::from_utf8_lossy(&body).into_owned();
                let request = Seen {
                    method: method.to_string(),
                    path: uri.path().to_string(),
                    authorization: h(header::AUTHORIZATION),
                    content_type: h(header::CONTENT_TYPE),
                    body: serde_json::from_str(&raw).unwrap_or(Value::Null),
                    raw,
                };
                let base = url.lock().map(|u| u.clone()).unwrap_or_default();
                let (status, v) = if request.method == "POST" {
                    answer(&base)
                } else {
                    (405, json!({"errorMessages": ["method not allowed"]}))
                };
                if let Ok(mut s) = seen.lock() {
                    s.push(request);
                }
                (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    [(header::CONTENT_TYPE, "application/json")],
                    v.to_string(),
                )
                    .into_response()
            }
        },
    );
    let server = support::serve(router).await;
    if let Ok(mut u) = url.lock() {
        *u = server.url.clone();
    }
    Fake {
        seen,
        url: server.url.clone(),
        _server: server,
    }
}

/// Jira Cloud's answer to `POST /rest/api/3/issue`.
fn jira_created() -> Answer {
    Arc::new(|base: &str| {
        (
            201,
            json!({"id": "10000", "key": "ED-24", "self": format!("{base}/rest/api/3/issue/10000")}),
        )
    })
}

/// ServiceNow's answer to `POST /api/now/table/incident`.
fn servicenow_created() -> Answer {
    Arc::new(|_: &str| {
        (
            201,
            json!({"result": {"sys_id": "9d385017c611228701d22104cc95c371",
                "number": "INC0010001", "state": "1", "short_description": "x"}}),
        )
    })
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CASE)
}

/// The case's own alert with secrets planted in its annotations.
fn alert_with_canaries(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(case_dir().join("alert.json")).expect("case alert");
    let mut v: Value = serde_json::from_str(&text).expect("alert json");
    let planted = format!(
        "More than 5% of checkout requests fail. password={} key {} bearer {} token={}",
        support::CANARY_PASSWORD,
        support::CANARY_AWS,
        support::CANARY_JWT,
        JIRA_TOKEN
    );
    if let Some(alerts) = v.get_mut("alerts").and_then(Value::as_array_mut) {
        for a in alerts {
            a["annotations"]["description"] = Value::String(planted.clone());
        }
    }
    v["commonAnnotations"]["description"] = Value::String(planted);
    let path = dir.join("alert.json");
    std::fs::write(&path, v.to_string()).expect("write alert");
    path
}

fn write_config(dir: &Path, jira: Option<&str>, servicenow: Option<&str>) -> PathBuf {
    let mut text = String::from("[policy]\nveto_secs = 600\n");
    if let Some(url) = jira {
        text.push_str(&format!(
            "\n[integrations.jira]\nurl = \"{url}\"\nemail = \"oncall@example.com\"\n\
             api_token = \"env:SITREP_TEST_JIRA_TOKEN\"\nproject = \"ED\"\nissue_type = \"Incident\"\n"
        ));
    }
    if let Some(url) = servicenow {
        text.push_str(&format!(
            "\n[integrations.servicenow]\nurl = \"{url}\"\nusername = \"sitrep\"\n\
             password = \"env:SITREP_TEST_SNOW_PASSWORD\"\n"
        ));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    path
}

/// What the operator does with a ticket when it is shown.
#[derive(Clone, Copy, PartialEq)]
enum Decide {
    Approve,
    Deny,
}

/// A headless `sitrep investigate --case` run: records out, commands in.
struct Run {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Record>,
    data: PathBuf,
}

impl Run {
    fn start(data: &Path, config: &Path, alert: &Path) -> Run {
        Run::spawn(data, config, alert, Some(&case_dir()))
    }

    /// A run of the live systems the config names (`case: None`) or of a recorded case.
    fn spawn(data: &Path, config: &Path, alert: &Path, case: Option<&Path>) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sitrep"));
        command.arg("--headless").arg("investigate");
        if let Some(case) = case {
            command.arg("--case").arg(case);
        }
        let mut child = command
            .arg("--alert")
            .arg(alert)
            .env("SITREP_DATA_DIR", data)
            .env("SITREP_CONFIG", config)
            .env("SITREP_TEST_JIRA_TOKEN", JIRA_TOKEN)
            .env("SITREP_TEST_SNOW_PASSWORD", SNOW_PASSWORD)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sitrep starts");
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
        Run {
            child,
            stdin,
            rx,
            data: data.to_path_buf(),
        }
    }

    fn send(&mut self, command: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .expect("write command");
        stdin.flush().expect("flush");
    }

    /// Drive the run to its end: every fix is denied, each ticket decided as `decide` says
    /// (checking first that nothing reached `fakes`), each credential approved.
    fn drive(mut self, decide: Decide, fakes: &[&Fake]) -> (Outcome, Vec<Event>) {
        let start = Instant::now();
        let mut events: Vec<Event> = Vec::new();
        loop {
            let left = WAIT.saturating_sub(start.elapsed());
            let record = match self.rx.recv_timeout(left) {
                Ok(r) => r,
                Err(_) => panic!("the session did not end within {WAIT:?}; saw {events:#?}"),
            };
            let event = record.event.clone();
            events.push(event.clone());
            match event {
                Event::ApprovalRequested {
                    action_id, digest, ..
                } => {
                    let kind = events
                        .iter()
                        .rev()
                        .find_map(|e| match e {
                            Event::ActionProposed { action } if action.id == action_id => {
                                Some(action.kind.clone())
                            }
                            _ => None,
                        })
                        .unwrap_or_default();
                    let ticket = catalog::is_ticket(&kind);
                    if ticket {
                        for f in fakes {
                            assert!(
                                f.requests().is_empty(),
                                "{kind} reached its tracker before anyone approved it"
                            );
                        }
                    }
                    if ticket && decide == Decide::Approve {
                        self.send(json!({"type": "approve", "action_id": action_id,
                                         "digest": digest}));
                    } else {
                        self.send(json!({"type": "deny", "action_id": action_id,
                                         "reason": "not in this test"}));
                    }
                }
                Event::CredentialRequested { reference, .. } => {
                    self.send(json!({"type": "approve_credential", "ref": reference}));
                }
                Event::SessionEnded { outcome } => {
                    drop(self.stdin.take());
                    let status = self.child.wait().expect("wait");
                    assert!(status.success(), "sitrep exited with {status}");
                    return (outcome, events);
                }
                _ => {}
            }
        }
    }

    fn session_file(data: &Path) -> PathBuf {
        let (found, _) = sitrep::session::list_sessions(&data.join("sessions"));
        found
            .first()
            .map(|s| s.path.clone())
            .expect("a session file")
    }
}

fn export(session: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .arg("export")
        .arg(session)
        .env(
            "SITREP_DATA_DIR",
            session.parent().unwrap_or(Path::new(".")),
        )
        .output()
        .expect("sitrep export");
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn secrets() -> Vec<&'static str> {
    let mut all = support::ALL_CANARIES.to_vec();
    all.extend([JIRA_TOKEN, SNOW_PASSWORD]);
    all
}

fn proposed_tickets(events: &[Event]) -> Vec<sitrep::model::Action> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ActionProposed { action } if catalog::is_ticket(&action.kind) => {
                Some(action.clone())
            }
            _ => None,
        })
        .collect()
}

/// The text nodes of an ADF document, in order; list items as `- item`. Only paragraphs and
/// bullet lists of paragraphs, never an empty text node.
fn adf_texts(doc: &Value) -> Vec<String> {
    fn paragraph(block: &Value, prefix: &str, out: &mut Vec<String>) {
        assert_eq!(block["type"], "paragraph", "{block}");
        for node in block["content"].as_array().into_iter().flatten() {
            assert_eq!(node["type"], "text", "{node}");
            let text = node["text"].as_str().unwrap_or_default();
            assert!(!text.is_empty(), "ADF has no empty text nodes");
            out.push(format!("{prefix}{text}"));
        }
    }
    let mut out = Vec::new();
    for block in doc["content"].as_array().into_iter().flatten() {
        if block["type"] == "bulletList" {
            for item in block["content"].as_array().into_iter().flatten() {
                assert_eq!(item["type"], "listItem", "{item}");
                for p in item["content"].as_array().into_iter().flatten() {
                    paragraph(p, "- ", &mut out);
                }
            }
        } else {
            paragraph(block, "", &mut out);
        }
    }
    out
}

#[test]
fn a_jira_issue_is_created_only_after_its_approval_and_its_key_is_in_the_export() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let jira = rt.block_on(fake(jira_created()));
    let snow = rt.block_on(fake(servicenow_created()));
    let dir = tempdir();
    let config = write_config(dir.path(), Some(&jira.url), Some(&snow.url));
    let alert = alert_with_canaries(dir.path());
    let run = Run::start(dir.path(), &config, &alert);
    let data = run.data.clone();
    let (outcome, events) = run.drive(Decide::Approve, &[&jira, &snow]);
    // Every fix was denied: the tickets were filed anyway, at the end.
    assert_eq!(outcome, Outcome::Diagnosed);
    let tickets = proposed_tickets(&events);
    let kinds: Vec<&str> = tickets.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["jira.create_issue", "servicenow.create_incident"]
    );
    for t in &tickets {
        assert_eq!(t.risk, sitrep::model::Risk::Medium, "{}", t.kind);
    }
    let last_report_stage = events
        .iter()
        .rposition(|e| matches!(e, Event::StageStarted { stage } if stage.name() == "report"));
    let first_ticket = events.iter().position(
        |e| matches!(e, Event::ActionProposed { action } if catalog::is_ticket(&action.kind)),
    );
    assert!(
        first_ticket > last_report_stage,
        "tickets are proposed at the end, from the report"
    );

    // Jira: one create, Basic auth, the documented body.
    let seen = jira.requests();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let req = &seen[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/rest/api/3/issue")
    );
    assert!(req.authorization.starts_with("Basic "), "{req:?}");
    assert!(req.content_type.starts_with("application/json"), "{req:?}");
    let fields = &req.body["fields"];
    assert_eq!(fields["project"], json!({"key": "ED"}));
    assert_eq!(fields["issuetype"], json!({"name": "Incident"}));
    assert_eq!(fields["labels"], json!(["sitrep"]));
    let summary = fields["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("HighErrorRate") || summary.contains("checkout"),
        "{summary}"
    );
    assert!(summary.chars().count() <= 255);
    let doc = &fields["description"];
    assert_eq!(doc["type"], "doc");
    assert_eq!(doc["version"], 1);
    let texts = adf_texts(doc);
    let joined = texts.join("\n");
    for part in ["Verdict: ", "Evidence (", "Actions:", "Outcome: diagnosed"] {
        assert!(joined.contains(part), "no {part:?} in {joined}");
    }
    assert!(
        joined.contains("denied"),
        "the denied fix is listed: {joined}"
    );

    // ServiceNow: one create, Basic auth, the Table API fields as text.
    let seen = snow.requests();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let req = &seen[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/api/now/table/incident")
    );
    assert!(req.authorization.starts_with("Basic "), "{req:?}");
    for k in [
        "short_description",
        "description",
        "urgency",
        "impact",
        "category",
    ] {
        assert!(req.body[k].is_string(), "{k} in {}", req.body);
    }
    // A critical alert is urgent.
    assert_eq!(req.body["urgency"], "1");
    assert_eq!(req.body["category"], "software");

    // No planted secret, and neither credential, reaches a request body.
    for f in [&jira, &snow] {
        for r in f.requests() {
            for secret in secrets() {
                assert!(!r.raw.contains(secret), "{secret} sent to {}", r.path);
            }
        }
    }

    // The created key and number, with their links, are recorded and exported.
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ActionExecuted { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    let browse = format!("{}/browse/ED-24", jira.url);
    let nav = format!(
        "{}/nav_to.do?uri=incident.do?sys_id=9d385017c611228701d22104cc95c371",
        snow.url
    );
    assert!(
        results
            .iter()
            .any(|r| r.contains("ED-24") && r.contains(&browse)),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|r| r.contains("INC0010001") && r.contains(&nav)),
        "{results:?}"
    );
    let session = Run::session_file(&data);
    let md = export(&session);
    assert!(md.contains("ED-24") && md.contains(&browse), "{md}");
    assert!(md.contains("INC0010001"), "{md}");
    let report = events.iter().rev().find_map(|e| match e {
        Event::Report { markdown } => Some(markdown.clone()),
        _ => None,
    });
    assert!(
        report.is_some_and(|r| r.contains("ED-24")),
        "the report lists the ticket"
    );
    let saved = std::fs::read_to_string(&session).expect("session");
    for secret in secrets() {
        assert!(!saved.contains(secret), "{secret} in the session file");
        assert!(!md.contains(secret), "{secret} in the export");
    }
}

#[test]
fn a_denied_ticket_is_never_created_and_its_credential_never_read() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let jira = rt.block_on(fake(jira_created()));
    let dir = tempdir();
    let config = write_config(dir.path(), Some(&jira.url), None);
    let alert = alert_with_canaries(dir.path());
    let run = Run::start(dir.path(), &config, &alert);
    let data = run.data.clone();
    let (_, events) = run.drive(Decide::Deny, &[&jira]);
    let tickets = proposed_tickets(&events);
    assert_eq!(tickets.len(), 1, "{events:#?}");
    let id = &tickets[0].id;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ApprovalDenied { action_id, .. } if action_id == id)),
        "the denial is recorded"
    );
    assert!(
        !events.iter().any(|e| matches!(e,
            Event::ActionExecuted { action_id, .. } | Event::ActionFailed { action_id, .. }
                if action_id == id)),
        "a denied ticket never runs"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::CredentialRequested { .. })),
        "the token is not asked for when nothing will use it"
    );
    // Give a stray request time to arrive, then check none did.
    std::thread::sleep(Duration::from_millis(200));
    assert!(jira.requests().is_empty(), "{:#?}", jira.requests());
    let md = export(&Run::session_file(&data));
    assert!(!md.contains("ED-24"), "{md}");
    assert!(md.contains("jira.create_issue"), "{md}");
}

#[test]
fn a_401_from_jira_is_a_failed_action_with_the_reason() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let answer: Answer = Arc::new(|_: &str| {
        (
            401,
            json!({"errorMessages": ["Client must be authenticated to access this resource."],
                   "errors": {}}),
        )
    });
    let jira = rt.block_on(fake(answer));
    let dir = tempdir();
    let config = write_config(dir.path(), Some(&jira.url), None);
    let alert = alert_with_canaries(dir.path());
    let run = Run::start(dir.path(), &config, &alert);
    let data = run.data.clone();
    let (outcome, events) = run.drive(Decide::Approve, &[&jira]);
    assert_eq!(outcome, Outcome::Diagnosed);
    assert_eq!(jira.requests().len(), 1);
    let id = proposed_tickets(&events)
        .first()
        .map(|a| a.id.clone())
        .expect("a ticket");
    let error = events
        .iter()
        .find_map(|e| match e {
            Event::ActionFailed { action_id, error } if *action_id == id => Some(error.clone()),
            _ => None,
        })
        .expect("the ticket failed");
    assert!(error.contains("401"), "{error}");
    assert!(
        error.contains("Client must be authenticated to access this resource."),
        "{error}"
    );
    let md = export(&Run::session_file(&data));
    assert!(md.contains("Client must be authenticated"), "{md}");
    for r in jira.requests() {
        for secret in secrets() {
            assert!(!r.raw.contains(secret), "{secret} sent to {}", r.path);
        }
    }
}

/// Waits up to `within` for `fake` to have received `n` requests; how long it took.
fn received(fake: &Fake, n: usize, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if fake.requests().len() >= n {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn in_a_live_investigation_each_approved_ticket_is_filed_at_once() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let jira = rt.block_on(fake(jira_created()));
    let snow = rt.block_on(fake(servicenow_created()));
    let dir = tempdir();
    let config = write_config(dir.path(), Some(&jira.url), Some(&snow.url));
    let alert = alert_with_canaries(dir.path());
    // The live systems the config names: only the two trackers, on loopback.
    let mut run = Run::spawn(dir.path(), &config, &alert, None);
    let start = Instant::now();
    let mut events: Vec<Event> = Vec::new();
    // (kind, action id, digest) of each ticket shown for approval.
    let mut shown: Vec<(String, String, String)> = Vec::new();
    let mut approved: Vec<String> = Vec::new();
    let outcome = loop {
        assert!(
            start.elapsed() < WAIT,
            "the session did not end within {WAIT:?}; saw {events:#?}"
        );
        let Ok(record) = run.rx.recv_timeout(Duration::from_millis(50)) else {
            continue;
        };
        events.push(record.event.clone());
        match record.event {
            Event::ActionProposed { action } => {
                assert!(catalog::is_ticket(&action.kind), "only tickets: {action:?}");
            }
            Event::ApprovalRequested {
                action_id, digest, ..
            } => {
                let kind = proposed_tickets(&events)
                    .into_iter()
                    .find(|a| a.id == action_id)
                    .map(|a| a.kind)
                    .unwrap_or_default();
                shown.push((kind, action_id, digest));
            }
            Event::SessionEnded { outcome } => break outcome,
            _ => {}
        }
        // Both tickets wait (a 600 s countdown); the operator approves one, then the other.
        // Nobody answers the credential questions: the approval is the operator's word for it.
        if shown.len() == 2 && approved.len() < 2 {
            for (kind, id, digest) in shown.clone() {
                if approved.contains(&id) {
                    continue;
                }
                let (this, other) = if kind == "jira.create_issue" {
                    (&jira, &snow)
                } else {
                    (&snow, &jira)
                };
                let before = other.requests().len();
                run.send(json!({"type": "approve", "action_id": id, "digest": digest}));
                approved.push(id.clone());
                let took = received(this, 1, Duration::from_secs(2));
                assert!(
                    took.is_some(),
                    "{kind} was not filed within 2 s of its approval; saw {events:#?}"
                );
                assert_eq!(this.requests().len(), 1, "{kind}: {:#?}", this.requests());
                assert_eq!(
                    other.requests().len(),
                    before,
                    "approving {kind} filed the other ticket too"
                );
            }
        }
    };
    drop(run.stdin.take());
    let status = run.child.wait().expect("wait");
    assert!(status.success(), "sitrep exited with {status}");
    assert_eq!(outcome, Outcome::Diagnosed);
    assert_eq!(shown.len(), 2, "{events:#?}");
    // Exactly one of each, ever.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(jira.requests().len(), 1);
    assert_eq!(snow.requests().len(), 1);
    for (_, id, _) in &shown {
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ActionExecuted { action_id, .. } if action_id == id)),
            "{id} ran: {events:#?}"
        );
    }
    // The approval decided each credential, as the operator who approved.
    let decided: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::CredentialDecided {
                reference,
                approved,
                ..
            } => Some((reference.clone(), *approved)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![
            ("env:SITREP_TEST_JIRA_TOKEN".to_string(), true),
            ("env:SITREP_TEST_SNOW_PASSWORD".to_string(), true)
        ]
    );
    let md = export(&Run::session_file(dir.path()));
    let browse = format!("{}/browse/ED-24", jira.url);
    assert!(md.contains("ED-24") && md.contains(&browse), "{md}");
    assert!(md.contains("INC0010001"), "{md}");
    assert!(md.contains("| Outcome | diagnosed |"), "{md}");
}

/// A world whose ticket clients talk to `jira` and `servicenow` directly (no keyring).
fn world_over(jira: &str, servicenow: &str) -> sitrep::world::World {
    use sitrep::integrations::{Endpoint, LiveTransport, Transport};
    let live = LiveTransport::new()
        .expect("client")
        .with_endpoint("jira", Endpoint::new(jira))
        .with_endpoint("servicenow", Endpoint::new(servicenow));
    let transport: Arc<dyn Transport> = Arc::new(live);
    sitrep::world::World::with_transport(transport, sitrep::world::Mode::Live, "default", None)
}

fn ticket(kind: &str, target: &str, params: Value) -> sitrep::model::Action {
    sitrep::model::Action {
        id: "act-1".into(),
        kind: kind.into(),
        target: target.into(),
        params: serde_json::from_value(params).unwrap_or_default(),
        risk: sitrep::model::Risk::Medium,
        rationale: "test".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    }
}

#[tokio::test]
async fn refusals_in_each_vendors_error_format_name_the_reason() {
    let jira = fake(Arc::new(|_: &str| {
        (
            400,
            json!({"errorMessages": [], "errors": {"issuetype": "Specify a valid issue type"}}),
        )
    }))
    .await;
    let snow = fake(Arc::new(|_: &str| {
        (
            403,
            json!({"error": {"message": "Operation Failed",
                             "detail": "ACL Exception Insert Failed due to security constraints"},
                   "status": "failure"}),
        )
    }))
    .await;
    let world = world_over(&jira.url, &snow.url);
    let e = world
        .execute(&ticket(
            "jira.create_issue",
            "project/ED",
            json!({"summary": "s", "description": "d", "issue_type": "Nope"}),
        ))
        .await
        .expect_err("refused");
    assert_eq!(e.status(), Some(400), "{e}");
    assert!(
        e.to_string()
            .contains("issuetype: Specify a valid issue type"),
        "{e}"
    );
    let e = world
        .execute(&ticket(
            "servicenow.create_incident",
            "category/software",
            json!({"short_description": "s", "description": "d"}),
        ))
        .await
        .expect_err("refused");
    assert_eq!(e.status(), Some(403), "{e}");
    assert!(
        e.to_string()
            .contains("Operation Failed: ACL Exception Insert Failed due to security constraints"),
        "{e}"
    );
    // The defaults the catalog documents are what was sent.
    let sent = &snow.requests()[0].body;
    assert_eq!(sent["urgency"], "2");
    assert_eq!(sent["impact"], "2");
    assert_eq!(sent["category"], "software");
    assert_eq!(jira.requests()[0].body["fields"]["project"]["key"], "ED");

    // An answer without a key is a failed action too, never a panic.
    let odd = fake(Arc::new(|_: &str| (201, json!({"id": 7, "key": null})))).await;
    let world = world_over(&odd.url, &odd.url);
    let e = world
        .execute(&ticket(
            "jira.create_issue",
            "project/ED",
            json!({"summary": "s", "description": "d"}),
        ))
        .await
        .expect_err("no key");
    assert!(e.to_string().contains("no issue `key`"), "{e}");
}

#[test]
fn ticket_credentials_are_references_never_the_secret_itself() {
    let parse = |text: &str| sitrep::config::Config::parse(text, Path::new("c.toml"));
    let jira = |token: &str| {
        format!(
            "[integrations.jira]\nurl = \"https://example.atlassian.net\"\n\
             email = \"a@example.com\"\napi_token = \"{token}\"\nproject = \"OPS\"\n"
        )
    };
    let c = parse(&jira("op://ops/jira/token")).expect("a reference is accepted");
    let j = c.integrations.jira.clone().expect("jira");
    assert_eq!(
        (j.issue_type.as_str(), j.labels.clone()),
        ("Task", vec!["sitrep".to_string()])
    );
    assert!(c.integrations.configured().contains(&"jira"));
    let err = parse(&jira("ATATT3xFfGF0-plain-token")).expect_err("a bare token");
    let msg = err.to_string();
    assert!(msg.contains("integrations.jira.api_token"), "{msg}");
    assert!(
        !msg.contains("ATATT3xFfGF0"),
        "the message echoes the secret: {msg}"
    );
    let err = parse(
        "[integrations.servicenow]\nurl = \"https://example.service-now.com\"\n\
         username = \"sitrep\"\npassword = \"hunter2-plain\"\n",
    )
    .expect_err("a bare password");
    assert!(
        err.to_string().contains("integrations.servicenow.password"),
        "{err}"
    );
    let err = parse(&jira("env:JIRA_TOKEN").replace("OPS", "no key")).expect_err("bad key");
    assert!(
        err.to_string().contains("integrations.jira.project"),
        "{err}"
    );
}
