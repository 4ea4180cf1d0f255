//! The MCP check: each `[[mcp.servers]]` entry is started (or reached), completes the handshake
//! and lists its tools; the mutating tools the config names must exist.

use super::{Finding, Options, Planned, REQUEST_BUDGET};
use crate::config::Config;
use crate::integrations::mcp::McpServer;

/// One row per configured server, named `mcp.<name>`; one `mcp` row when there is none.
pub fn plan(config: &Config, _: &Options) -> Vec<Planned> {
    if config.mcp.servers.is_empty() {
        return vec![Planned::absent("mcp")];
    }
    config
        .mcp
        .servers
        .iter()
        .map(|server| {
            let mut cfg = server.clone();
            // The handshake must end inside the check's budget whatever the server's timeout.
            cfg.timeout_secs = cfg.timeout_secs.clamp(1, REQUEST_BUDGET.as_secs());
            Planned::run(
                &format!("mcp.{}", server.name),
                async move { check(&cfg).await },
            )
        })
        .collect()
}

async fn check(cfg: &crate::config::McpServer) -> Finding {
    let how = match (&cfg.url, &cfg.command) {
        (Some(url), _) => url.clone(),
        (None, Some(cmd)) => format!("`{cmd}`"),
        (None, None) => String::new(),
    };
    let server = match McpServer::connect(cfg).await {
        Ok(s) => s,
        Err(e) => {
            let fix = if cfg.url.is_some() {
                format!("check that the server at {how} runs and speaks streamable HTTP")
            } else {
                format!("check that {how} is installed and starts an MCP server on stdio")
            };
            return Finding::failed(e.to_string(), fix);
        }
    };
    let listed = tokio::time::timeout(REQUEST_BUDGET, server.list()).await;
    server.close().await;
    let tools = match listed {
        Err(_) => {
            return Finding::failed(
                format!(
                    "listing tools timed out after {}s",
                    REQUEST_BUDGET.as_secs()
                ),
                "check the server's logs",
            );
        }
        Ok(Err(e)) => return Finding::failed(e.to_string(), "check the server's logs"),
        Ok(Ok(t)) => t,
    };
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(serde_json::Value::as_str))
        .collect();
    let unknown: Vec<&str> = cfg
        .mutating
        .iter()
        .map(String::as_str)
        .filter(|m| !names.contains(m))
        .collect();
    if !unknown.is_empty() {
        return Finding::failed(
            format!(
                "{} tools, but `mutating` names unknown ones: {}",
                names.len(),
                unknown.join(", ")
            ),
            "correct `mutating` to the server's tool names",
        );
    }
    Finding::ok(None, format!("{} tools", names.len()))
}
