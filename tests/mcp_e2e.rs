//! `[[mcp.servers]]` end to end with a real stdio server (`mcp-server-time` from PyPI): its tools
//! join the catalog, the model is offered them and calls one, the operator runs one by hand, a
//! mutating one is only proposed and waits for approval, every call is recorded in the session
//! and in `--record` case dirs, and the case replays with no server running. A server that cannot
//! start is a failed step and the investigation goes on.

#[path = "support/fake_openai.rs"]
mod fake_openai;

use fake_openai::{calls_stream, cited, offered, text_stream, tool_results};
use serde_json::{Value, json};
use sitrep::agent::llm::Model;
use sitrep::agent::{self, AgentHandle, AgentOptions, Trigger};
use sitrep::config::{Config, McpServer};
use sitrep::integrations::llm::{Client, ClientConfig, Provider};
use sitrep::model::{Command, Event, Incident, Record, Risk};
use sitrep::world::World;
use std::sync::Arc;
use std::time::Duration;

fn python_with_server() -> Option<String> {
    for py in ["python3", "python"] {
        let ok = std::process::Command::new(py)
            .args(["-c", "import mcp_server_time"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return Some(py.to_string());
        }
    }
    None
}

fn time_server(py: &str, name: &str) -> McpServer {
    McpServer {
        name: name.into(),
        command: Some(py.into()),
        args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
            .map(String::from)
            .to_vec(),
        env: Default::default(),
        url: None,
        mutating: vec!["convert_time".into()],
        timeout_secs: 30,
    }
}

/// Reads the time in Paris and asks to convert a time (a tool the config calls mutating); then
/// answers citing the evidence the read produced.
fn script(body: &Value) -> String {
    if body.get("tools").is_none() {
        return text_stream("no tools offered");
    }
    let results = tool_results(body);
    if results.is_empty() {
        let (Some(read), Some(convert)) = (
            offered(body, "mcp__clock__get_current_time"),
            offered(body, "mcp__clock__convert_time"),
        ) else {
            return text_stream(
                "{\"category\":\"unknown\",\"root_cause\":\"no MCP tools offered\",\"confidence\":0.1,\"evidence\":[]}",
            );
        };
        return calls_stream(&[
            (read, json!({"timezone": "Europe/Paris"})),
            (
                convert,
                json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            ),
        ]);
    }
    let answer = json!({
        "category": "dependency_failure",
        "root_cause": "model: the clock server answered",
        "confidence": 0.6,
        "evidence": [cited(&results[0])],
        "ruled_out": [],
        "actions": [],
    });
    text_stream(&format!("```json\n{answer}\n```"))
}

fn model(base: &str) -> Model {
    let mut cfg = ClientConfig::new(Provider::Openai, base, "fake");
    cfg.backoff = Duration::from_millis(10);
    Model::new(Client::new(cfg).unwrap(), 6)
}

/// Drive a run: the operator runs `operator_tool` by hand once the server's tools are
/// registered, and denies every approval request once that answer is back.
async fn drive(mut h: AgentHandle, operator_tool: Option<&str>) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    let mut asked = operator_tool.is_none();
    let mut answered = operator_tool.is_none();
    let mut pending: Vec<String> = Vec::new();
    while let Some(r) = tokio::time::timeout(Duration::from_secs(60), h.records.recv())
        .await
        .expect("agent stalled")
    {
        match &r.event {
            Event::ToolSucceeded { summary, .. } if !asked && summary.contains("tools: ") => {
                h.commands
                    .send(Command::Chat {
                        text: operator_tool.unwrap_or_default().to_string(),
                    })
                    .unwrap();
                asked = true;
            }
            Event::ChatMessage { from, .. } if *from == sitrep::model::ChatRole::Agent => {
                answered = true;
            }
            Event::ApprovalRequested { action_id, .. } => pending.push(action_id.clone()),
            _ => {}
        }
        if answered {
            for action_id in pending.drain(..) {
                h.commands
                    .send(Command::Deny {
                        action_id,
                        reason: "test".into(),
                        by: None,
                    })
                    .unwrap();
            }
        }
        let end = matches!(r.event, Event::SessionEnded { .. });
        out.push(r);
        if end {
            break;
        }
    }
    out
}

fn fold(records: &[Record]) -> Incident {
    Incident::fold(records.iter().map(|r| (r.t, &r.event)))
}

#[tokio::test]
async fn mcp_tools_join_the_catalog_run_for_model_and_operator_and_replay_offline() {
    let Some(py) = python_with_server() else {
        eprintln!("skipped: mcp-server-time is not installed (pip install mcp-server-time)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let case_dir = tmp.path().join("clock-case");
    let session = tmp.path().join("live.ndjson");
    let mut config = Config::default();
    config.mcp.servers.push(time_server(&py, "clock"));
    let (base, bodies) = fake_openai::serve(script).await;

    let world = Arc::new(
        World::record(&config, &case_dir, "what time is it in Paris", None)
            .await
            .expect("world with the clock server"),
    );
    let opts = AgentOptions {
        model: Some(model(&base)),
        session_path: Some(session.clone()),
        approval_timeout: Some(Duration::from_secs(20)),
        ..AgentOptions::default()
    };
    let records = drive(
        agent::spawn(
            world.clone(),
            Trigger::Problem("what time is it in Paris".into()),
            opts,
        ),
        Some("/tool mcp.clock.get_current_time {\"timezone\": \"Asia/Tokyo\"}"),
    )
    .await;
    let incident = fold(&records);

    // Joined the catalog: read-only unless listed, a listed one mutating with a medium floor.
    let catalog = world.catalog();
    let read = catalog
        .lookup("mcp.clock.get_current_time")
        .expect("registered");
    assert!(!read.mutating);
    assert_eq!(read.integration, "mcp");
    assert_eq!(
        catalog.json_schema(read)["properties"]["timezone"]["type"],
        "string"
    );
    let convert = catalog
        .lookup("mcp.clock.convert_time")
        .expect("registered");
    assert!(convert.mutating && convert.floor >= Risk::Medium);
    assert!(
        catalog
            .reads()
            .any(|e| e.name == "mcp.clock.get_current_time")
    );
    assert!(
        catalog
            .actions()
            .any(|e| e.name == "mcp.clock.convert_time")
    );

    // The server is a step on the timeline.
    let step = incident
        .tools
        .iter()
        .find(|t| t.tool == "mcp.clock")
        .expect("server step");
    assert!(matches!(step.outcome, Some(Ok(_))), "{:?}", step.outcome);

    // Offered to the model, with provider-safe names and the server's own schema.
    let bodies = bodies.lock().unwrap().clone();
    let first = &bodies[0];
    let wire = offered(first, "mcp__clock__get_current_time").expect("offered to the model");
    assert!(
        wire.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    let schema = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == wire.as_str())
        .map(|t| t["function"]["parameters"].clone())
        .unwrap();
    assert!(schema["properties"]["timezone"].is_object(), "{schema}");

    // The model's read ran as a tool call and its result is evidence it was handed.
    let call = incident
        .tools
        .iter()
        .find(|t| {
            t.specialist.as_deref() == Some("model") && t.tool == "mcp.clock.get_current_time"
        })
        .expect("the model's MCP call");
    assert!(matches!(call.outcome, Some(Ok(_))), "{:?}", call.outcome);
    let ev = incident
        .evidence
        .iter()
        .find(|e| call.evidence.contains(&e.id))
        .expect("evidence");
    assert_eq!(ev.kind, "mcp");
    let body_text = serde_json::to_string(&ev.body).unwrap();
    assert!(body_text.contains("Europe/Paris"), "{body_text}");
    assert!(tool_results(&bodies[1])[0].contains("Europe/Paris"));
    let finding = incident
        .findings
        .iter()
        .find(|f| f.analyzer == "model")
        .expect("model finding");
    assert_eq!(finding.evidence, vec![ev.id.clone()]);

    // The operator's `/tool` ran through the same path and was answered in the chat.
    let by_hand = incident
        .tools
        .iter()
        .find(|t| t.specialist.as_deref() == Some("operator"))
        .expect("operator's call");
    assert_eq!(by_hand.tool, "mcp.clock.get_current_time");
    assert!(matches!(by_hand.outcome, Some(Ok(_))));
    assert!(
        incident
            .chat
            .iter()
            .any(|c| c.text.starts_with("mcp.clock.get_current_time: ")),
        "{:?}",
        incident.chat
    );

    // The mutating tool was proposed, asked for approval, was denied, and never ran.
    let proposal = incident
        .actions
        .iter()
        .find(|a| a.action.kind == "mcp.clock.convert_time")
        .expect("proposed");
    assert!(proposal.action.risk >= Risk::Medium);
    assert!(proposal.action.operation.contains("Asia/Tokyo"));
    let events: Vec<&Event> = records.iter().map(|r| &r.event).collect();
    assert!(events.iter().any(|e| matches!(e,
        Event::ApprovalRequested { action_id, .. } if *action_id == proposal.action.id)));
    assert!(!events.iter().any(|e| matches!(e,
        Event::ActionExecuted { action_id, .. } if *action_id == proposal.action.id)));
    assert!(tool_results(&bodies[1])[1].contains("NOT EXECUTED"));

    // Recorded: in the session file and in the case directory.
    let saved = std::fs::read_to_string(&session).unwrap();
    assert!(saved.contains("mcp.clock.get_current_time"));
    let recordings = std::fs::read_to_string(case_dir.join("recordings.ndjson")).unwrap();
    let lines: Vec<Value> = recordings
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v["integration"] == "mcp")
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["method"] == "GET" && l["path"] == "/clock/tools"),
        "{lines:?}"
    );
    let call_line = lines
        .iter()
        .find(|l| {
            l["path"] == "/clock/tools/get_current_time" && l["query"]["timezone"] == "Europe/Paris"
        })
        .expect("the call is recorded");
    assert_eq!(call_line["status"], 200);

    // Offline: the case replays the server's answers with nothing started.
    let replay = World::from_case_dir(&case_dir).unwrap();
    assert_eq!(replay.mcp_servers(), ["clock".to_string()]);
    let (base2, _) = fake_openai::serve(script).await;
    let opts = AgentOptions {
        model: Some(model(&base2)),
        diagnosis_only: true,
        ..AgentOptions::default()
    };
    let again = drive(
        agent::spawn(
            Arc::new(replay),
            Trigger::Problem("what time is it in Paris".into()),
            opts,
        ),
        None,
    )
    .await;
    let b = fold(&again);
    let call2 = b
        .tools
        .iter()
        .find(|t| {
            t.specialist.as_deref() == Some("model") && t.tool == "mcp.clock.get_current_time"
        })
        .unwrap_or_else(|| panic!("replayed call: {:?} {:?}", b.tools, b.warnings));
    assert!(matches!(call2.outcome, Some(Ok(_))), "{:?}", call2.outcome);
    let ev2 = b
        .evidence
        .iter()
        .find(|e| call2.evidence.contains(&e.id))
        .unwrap();
    assert_eq!(ev2.body, ev.body, "the recorded answer, replayed");
}

#[tokio::test]
async fn a_mutating_mcp_tool_runs_through_the_world_after_approval_only() {
    let Some(py) = python_with_server() else {
        eprintln!("skipped: mcp-server-time is not installed");
        return;
    };
    let mut config = Config::default();
    config.mcp.servers.push(time_server(&py, "clock2"));
    let world = World::live(&config).await.unwrap();
    let reg = world.mcp().register("clock2").await.unwrap();
    assert!(reg.tools.contains(&"mcp.clock2.convert_time".to_string()));
    assert!(world.is_executable("mcp.clock2.convert_time"));
    assert!(!world.is_executable("mcp.clock2.get_current_time"));
    // A read is refused as an action; the approved action is carried out by the server.
    let tools = sitrep::agent::WorldTools(Arc::new(world));
    use sitrep::agent::Tools;
    let params: sitrep::agent::Params = serde_json::from_value(
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    )
    .unwrap();
    let err = tools
        .call("mcp.clock2.convert_time", &params)
        .await
        .unwrap_err();
    assert!(err.contains("propose it as an action"), "{err}");
    let mut action = sitrep::model::Action {
        id: "act-1".into(),
        kind: "mcp.clock2.convert_time".into(),
        target: String::new(),
        risk: Risk::Low,
        params,
        rationale: String::new(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    };
    tools.catalog().settle(&mut action);
    assert_eq!(action.risk, Risk::Medium, "raised to the floor");
    let out = tools.execute(&action).await.expect("executed");
    assert!(out.contains("Asia/Tokyo"), "{out}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_failed_step_and_the_investigation_goes_on() {
    let mut config = Config::default();
    config.mcp.servers.push(McpServer {
        name: "broken".into(),
        command: Some("/nonexistent/mcp-server".into()),
        args: Vec::new(),
        env: Default::default(),
        url: None,
        mutating: Vec::new(),
        timeout_secs: 5,
    });
    let world = World::live(&config)
        .await
        .expect("a dead server does not stop the world");
    let opts = AgentOptions {
        diagnosis_only: true,
        ..AgentOptions::default()
    };
    let records = drive(
        agent::spawn(
            Arc::new(world),
            Trigger::Problem("checkout is slow".into()),
            opts,
        ),
        None,
    )
    .await;
    let incident = fold(&records);
    let step = incident
        .tools
        .iter()
        .find(|t| t.tool == "mcp.broken")
        .expect("the server is a step");
    let err = step.outcome.clone().unwrap().unwrap_err();
    assert!(err.contains("/nonexistent/mcp-server"), "{err}");
    assert!(incident.diagnosis.is_some(), "the investigation went on");
    assert!(matches!(
        records.last().map(|r| &r.event),
        Some(Event::SessionEnded { .. })
    ));
}

#[test]
fn the_palette_and_chat_send_tool_runs_to_the_agent() {
    use sitrep::tui::app::{AppState, Effect};
    let mut state = AppState::new(
        sitrep::tui::theme::Theme::builtin("default").unwrap_or_default(),
        sitrep::tui::keymap::Keymap::default(),
    );
    let line = "mcp.clock.get_current_time {\"timezone\": \"UTC\"}";
    for effects in [
        sitrep::tui::app::run_command(&mut state, &format!("tool {line}")),
        sitrep::tui::app::chat_command(&mut state, &format!("/tool {line}")),
    ] {
        assert!(
            matches!(effects.as_slice(),
                [Effect::SendCommand(Command::Chat { text })] if *text == format!("/tool {line}")),
            "{effects:?}"
        );
    }
    assert!(sitrep::model::commands::palette().any(|spec| spec.name == "tool"));
}
