//! A real stdio MCP server (`mcp-server-time` from PyPI) through the rmcp client: its tools
//! become model tool schemas with provider-safe names, and a call returns the server's answer.

use serde_json::json;
use sitrep::integrations::llm::ToolNames;
use sitrep::integrations::mcp::McpServer;
use std::collections::BTreeMap;

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

#[tokio::test]
async fn time_server_tools_are_listed_and_called() {
    let Some(py) = python_with_server() else {
        eprintln!("skipped: mcp-server-time is not installed (pip install mcp-server-time)");
        return;
    };
    let args = vec![
        "-m".to_string(),
        "mcp_server_time".to_string(),
        "--local-timezone".to_string(),
        "UTC".to_string(),
    ];
    let server = McpServer::stdio("time", &py, &args, &BTreeMap::new())
        .await
        .expect("server starts");
    let tools = server.tools().await.expect("tools listed");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp.time.get_current_time"), "{names:?}");
    let spec = tools
        .iter()
        .find(|t| t.name == "mcp.time.get_current_time")
        .unwrap();
    assert_eq!(spec.parameters["type"], "object");
    assert!(spec.parameters["properties"]["timezone"].is_object());
    // Names providers accept, mapped back.
    let map = ToolNames::new(names.iter().copied());
    let wire = map.wire("mcp.time.get_current_time");
    assert!(
        wire.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    assert_eq!(map.catalog(&wire), "mcp.time.get_current_time");

    let text = server
        .call("get_current_time", json!({"timezone": "Europe/Paris"}))
        .await
        .expect("call answered");
    let v: serde_json::Value = serde_json::from_str(&text).expect("the server answers JSON text");
    assert_eq!(v["timezone"], "Europe/Paris");
    assert!(
        v["datetime"].as_str().is_some_and(|d| d.contains('T')),
        "{v}"
    );

    // A bad argument is the server's error, reported, not a panic.
    let err = server
        .call("get_current_time", json!({"timezone": "Not/AZone"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("time"), "{err}");
    server.close().await;
}

#[tokio::test]
async fn a_missing_server_command_is_a_clear_error() {
    let err = match McpServer::stdio("nope", "/nonexistent/mcp-server", &[], &BTreeMap::new()).await
    {
        Ok(_) => panic!("started a missing command"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("nope") && err.contains("/nonexistent/mcp-server"),
        "{err}"
    );
}
