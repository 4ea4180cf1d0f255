//! A real streamable-HTTP MCP server (the Python SDK's `MCPServer`, tests/fixtures/mcp_tickets.py,
//! started on a loopback port) through rmcp's streamable HTTP client: its tools join the catalog,
//! the model reads one, and the one the config calls mutating runs only after the approval flow
//! (a medium veto countdown), carried out by the server.

#[path = "support/fake_openai.rs"]
mod fake_openai;

use fake_openai::{calls_stream, cited, offered, text_stream, tool_results};
use serde_json::{Value, json};
use sitrep::agent::llm::Model;
use sitrep::agent::{self, AgentOptions, Trigger};
use sitrep::config::{Config, McpServer};
use sitrep::integrations::llm::{Client, ClientConfig, Provider};
use sitrep::model::{Event, Incident, Risk};
use sitrep::world::World;
use std::sync::Arc;
use std::time::Duration;

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the fixture on a free loopback port; `None` when the Python SDK is not installed.
fn start_server() -> Option<(Server, u16)> {
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.server.mcpserver"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_sdk {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_tickets.py");
    let child = std::process::Command::new("python3")
        .arg(script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let server = Server(child);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((server, port));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the MCP fixture did not listen on {port}");
}

fn script(body: &Value) -> String {
    if body.get("tools").is_none() {
        return text_stream("no tools offered");
    }
    let results = tool_results(body);
    if results.is_empty() {
        let (Some(read), Some(close)) = (
            offered(body, "mcp__tickets__ticket_status"),
            offered(body, "mcp__tickets__close_ticket"),
        ) else {
            return text_stream("no MCP tools offered");
        };
        return calls_stream(&[
            (read, json!({"ticket": "T-42"})),
            (close, json!({"ticket": "T-42"})),
        ]);
    }
    let answer = json!({
        "category": "dependency_failure",
        "root_cause": "model: ticket T-42 is open",
        "confidence": 0.5,
        "evidence": [cited(&results[0])],
        "ruled_out": [],
        "actions": [],
    });
    text_stream(&format!("```json\n{answer}\n```"))
}

#[tokio::test]
async fn streamable_http_server_tools_are_read_and_a_mutating_one_runs_after_its_countdown() {
    let Some((server, port)) = start_server() else {
        eprintln!("skipped: the Python MCP SDK is not installed (pip install mcp)");
        return;
    };
    let mut config = Config::default();
    config.mcp.servers.push(McpServer {
        name: "tickets".into(),
        command: None,
        args: Vec::new(),
        env: Default::default(),
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        mutating: vec!["close_ticket".into()],
        timeout_secs: 20,
    });
    let world = Arc::new(World::live(&config).await.unwrap());
    let (base, bodies) = fake_openai::serve(script).await;
    let mut cfg = ClientConfig::new(Provider::Openai, &base, "fake");
    cfg.backoff = Duration::from_millis(10);
    let opts = AgentOptions {
        model: Some(Model::new(Client::new(cfg).unwrap(), 6)),
        veto_secs: 0.3,
        ..AgentOptions::default()
    };
    let mut h = agent::spawn(
        world.clone(),
        Trigger::Problem("is ticket T-42 still open?".into()),
        opts,
    );
    let mut records = Vec::new();
    while let Some(r) = tokio::time::timeout(Duration::from_secs(60), h.records.recv())
        .await
        .expect("agent stalled")
    {
        let end = matches!(r.event, Event::SessionEnded { .. });
        records.push(r);
        if end {
            break;
        }
    }
    let incident = Incident::fold(records.iter().map(|r| (r.t, &r.event)));
    let step = incident
        .tools
        .iter()
        .find(|t| t.tool == "mcp.tickets")
        .expect("server step");
    assert!(matches!(step.outcome, Some(Ok(_))), "{:?}", step.outcome);

    // The read went to the server; the model got its answer as evidence.
    let read = incident
        .tools
        .iter()
        .find(|t| t.tool == "mcp.tickets.ticket_status")
        .expect("the model's read");
    assert!(matches!(read.outcome, Some(Ok(_))), "{:?}", read.outcome);
    let bodies = bodies.lock().unwrap().clone();
    assert!(
        tool_results(&bodies[1])[0].contains("ticket T-42: open"),
        "{:?}",
        tool_results(&bodies[1])
    );
    assert!(tool_results(&bodies[1])[1].contains("NOT EXECUTED"));

    // The close was a proposal: medium risk, a veto countdown, then carried out by the server.
    let close = incident
        .actions
        .iter()
        .find(|a| a.action.kind == "mcp.tickets.close_ticket")
        .expect("proposed");
    assert_eq!(close.action.risk, Risk::Medium);
    assert_eq!(close.action.target, "ticket=T-42");
    let pos = |f: &dyn Fn(&Event) -> bool| records.iter().position(|r| f(&r.event));
    let asked = pos(&|e| {
        matches!(e, Event::ApprovalRequested { action_id, veto_secs: Some(_), .. } if *action_id == close.action.id)
    })
    .expect("veto countdown shown");
    let ran = pos(&|e| {
        matches!(e, Event::ActionExecuted { action_id, result, .. }
            if *action_id == close.action.id && result.contains("ticket T-42 closed"))
    })
    .expect("carried out by the server");
    assert!(asked < ran);
    // It really reached the server.
    let now = world
        .mcp()
        .call("mcp.tickets.ticket_status", &json!({"ticket": "T-42"}))
        .await
        .unwrap();
    assert_eq!(now, "ticket T-42: closed");

    // The server dies: a call is a clear error (a failed step in a run), not a hang or a panic.
    drop(server);
    use sitrep::agent::Tools;
    let tools = sitrep::agent::WorldTools(world.clone());
    let params: sitrep::agent::Params = serde_json::from_value(json!({"ticket": "T-42"})).unwrap();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        tools.call("mcp.tickets.ticket_status", &params),
    )
    .await
    .expect("a dead server answers within its timeout")
    .unwrap_err();
    assert!(err.contains("mcp"), "{err}");
}
