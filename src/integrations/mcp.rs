//! MCP servers over stdio through the official SDK (`rmcp`): list their tools as model tool
//! schemas and call them, results as text.

use crate::integrations::llm::ToolSpec;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use std::collections::BTreeMap;

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot start MCP server {name} ({command}): {message}")]
    Start {
        name: String,
        command: String,
        message: String,
    },
    #[error("MCP server {name}: {message}")]
    Call { name: String, message: String },
}

/// A connected stdio MCP server.
pub struct McpServer {
    pub name: String,
    service: RunningService<RoleClient, ()>,
}

impl McpServer {
    /// Start `command args` with `env` and complete the MCP handshake.
    pub async fn stdio(
        name: &str,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<McpServer, McpError> {
        let start = |message: String| McpError::Start {
            name: name.into(),
            command: command.into(),
            message,
        };
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).envs(env);
        let transport = TokioChildProcess::new(cmd).map_err(|e| start(e.to_string()))?;
        let service = ().serve(transport).await.map_err(|e| start(e.to_string()))?;
        Ok(McpServer {
            name: name.into(),
            service,
        })
    }

    fn err(&self, message: impl ToString) -> McpError {
        McpError::Call {
            name: self.name.clone(),
            message: message.to_string(),
        }
    }

    /// The server's tools as model tool schemas, named `mcp.<server>.<tool>`.
    pub async fn tools(&self) -> Result<Vec<ToolSpec>, McpError> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .map_err(|e| self.err(e))?;
        Ok(tools
            .into_iter()
            .map(|t| ToolSpec {
                name: format!("mcp.{}.{}", self.name, t.name),
                description: format!(
                    "{} (MCP server {})",
                    t.description.as_deref().unwrap_or(""),
                    self.name
                ),
                parameters: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Call a tool by its server-side name; the result's text content, or its error.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<String, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(m) = arguments {
            params = params.with_arguments(m);
        }
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|e| self.err(e))?;
        let v = serde_json::to_value(&result).map_err(|e| self.err(e))?;
        let text: Vec<String> = v["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str().map(str::to_string))
            .collect();
        let text = text.join("\n");
        if v["isError"].as_bool() == Some(true) {
            return Err(self.err(format!("{tool} failed: {text}")));
        }
        Ok(text)
    }

    /// Stop the server.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
