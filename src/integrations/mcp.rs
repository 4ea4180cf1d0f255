//! MCP servers through the official SDK (`rmcp`), over stdio or streamable HTTP, reached through
//! the one `Transport` seam (integration `mcp`) so their calls are recorded and replayed like
//! every other integration's.
//!
//! The gateway's own wire format, as `recordings.ndjson` holds it:
//! - `GET /<server>/tools` answers `{"tools":[{name, description, inputSchema, annotations}],
//!   "mutating":[names]}`; 503 with `{"message"}` when the server could not be started.
//! - `POST /<server>/tools/<tool>` (the arguments as the JSON body and, for replay matching, as
//!   query pairs) answers `{"content":[{"type":"text","text":...}], "isError":false}`; a tool's
//!   own error is 422 and a dead or failing server 502, each with `{"message"}`.

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Body, BoxFuture, Request, RequestBody, Response, Transport};
use crate::config;
use crate::integrations::llm::ToolSpec;
use crate::model::catalog::{self, ExternalTool};
use crate::policy::redact::Redactor;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The integration name MCP traffic travels under.
pub const INTEGRATION: &str = "mcp";

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

/// A connected MCP server.
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
        // Never the terminal's stderr: the console owns the screen. Its lines go to the log file.
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| start(e.to_string()))?;
        if let Some(stderr) = stderr {
            let server = name.to_string();
            tokio::spawn(async move {
                use tokio::io::AsyncBufReadExt;
                let redactor = Redactor::new();
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(server = %server, "mcp stderr: {}", redactor.redact(&line));
                }
            });
        }
        let service = ().serve(transport).await.map_err(|e| start(e.to_string()))?;
        Ok(McpServer {
            name: name.into(),
            service,
        })
    }

    /// Reach a streamable HTTP server at `url` and complete the MCP handshake.
    pub async fn http(name: &str, url: &str) -> Result<McpServer, McpError> {
        let transport = StreamableHttpClientTransport::from_uri(url.to_string());
        let service = ().serve(transport).await.map_err(|e| McpError::Start {
            name: name.into(),
            command: url.into(),
            message: e.to_string(),
        })?;
        Ok(McpServer {
            name: name.into(),
            service,
        })
    }

    /// Connect as `[[mcp.servers]]` says, within its timeout.
    pub async fn connect(cfg: &config::McpServer) -> Result<McpServer, McpError> {
        let what = cfg
            .url
            .clone()
            .or_else(|| cfg.command.clone())
            .unwrap_or_default();
        let fut = async {
            match (&cfg.url, &cfg.command) {
                (Some(url), _) => McpServer::http(&cfg.name, url).await,
                (None, Some(cmd)) => McpServer::stdio(&cfg.name, cmd, &cfg.args, &cfg.env).await,
                (None, None) => Err(McpError::Start {
                    name: cfg.name.clone(),
                    command: String::new(),
                    message: "neither command nor url".into(),
                }),
            }
        };
        tokio::time::timeout(Duration::from_secs(cfg.timeout_secs.max(1)), fut)
            .await
            .unwrap_or_else(|_| {
                Err(McpError::Start {
                    name: cfg.name.clone(),
                    command: what,
                    message: format!("no handshake within {}s", cfg.timeout_secs),
                })
            })
    }

    fn err(&self, message: impl ToString) -> McpError {
        McpError::Call {
            name: self.name.clone(),
            message: message.to_string(),
        }
    }

    /// The server's tools as it lists them (`name`, `description`, `inputSchema`, `annotations`).
    pub async fn list(&self) -> Result<Vec<Value>, McpError> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .map_err(|e| self.err(e))?;
        tools
            .into_iter()
            .map(|t| serde_json::to_value(&t).map_err(|e| self.err(e)))
            .collect()
    }

    /// The server's tools as model tool schemas, named `mcp.<server>.<tool>`.
    pub async fn tools(&self) -> Result<Vec<ToolSpec>, McpError> {
        Ok(self
            .list()
            .await?
            .iter()
            .filter_map(|t| spec_of(&self.name, t))
            .collect())
    }

    /// Call a tool by its server-side name: the raw result (`content`, `isError`).
    pub async fn call_raw(&self, tool: &str, arguments: Value) -> Result<Value, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(m) = arguments {
            params = params.with_arguments(m);
        }
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|e| self.err(e))?;
        serde_json::to_value(&result).map_err(|e| self.err(e))
    }

    /// Call a tool by its server-side name; the result's text content, or its error.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<String, McpError> {
        let v = self.call_raw(tool, arguments).await?;
        let text = result_text(&v);
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

/// The text parts of a tool result, joined.
fn result_text(v: &Value) -> String {
    v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A listed tool as a model tool schema named `mcp.<server>.<tool>`.
fn spec_of(server: &str, t: &Value) -> Option<ToolSpec> {
    let name = t["name"].as_str()?;
    Some(ToolSpec {
        name: format!("{INTEGRATION}.{server}.{name}"),
        description: format!(
            "{} (MCP server {server})",
            t["description"].as_str().unwrap_or("")
        ),
        parameters: match &t["inputSchema"] {
            Value::Object(m) => Value::Object(m.clone()),
            _ => json!({"type": "object", "properties": {}}),
        },
    })
}

/// `mcp.<server>.<tool>` split into server and tool.
pub fn split_kind(kind: &str) -> Option<(&str, &str)> {
    let rest = kind.strip_prefix(INTEGRATION)?.strip_prefix('.')?;
    let (server, tool) = rest.split_once('.')?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The query pairs a call carries, so a recording matches the same arguments on replay.
fn query_of(arguments: &Value) -> Vec<(String, String)> {
    arguments
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// One configured server: connected, or why not.
enum Slot {
    Up(Arc<McpServer>),
    Down(String),
}

/// Routes integration `mcp` to the connected servers and everything else to `inner`; answers are
/// masked like any live response.
pub struct McpGateway {
    inner: Arc<dyn Transport>,
    servers: BTreeMap<String, (Slot, config::McpServer)>,
    redactor: Redactor,
}

impl McpGateway {
    /// Connect every configured server (side by side). One that fails stays listed with its
    /// error, so the investigation can show it as a failed step and go on.
    pub async fn connect(
        configs: &[config::McpServer],
        inner: Arc<dyn Transport>,
        redactor: Redactor,
    ) -> McpGateway {
        let results = futures::future::join_all(configs.iter().map(McpServer::connect)).await;
        let servers = configs
            .iter()
            .zip(results)
            .map(|(cfg, r)| {
                let slot = match r {
                    Ok(s) => Slot::Up(Arc::new(s)),
                    Err(e) => Slot::Down(redactor.redact(&e.to_string()).into_owned()),
                };
                (cfg.name.clone(), (slot, cfg.clone()))
            })
            .collect();
        McpGateway {
            inner,
            servers,
            redactor,
        }
    }

    fn answer(&self, status: u16, mut body: Value) -> Response {
        self.redactor.redact_json(&mut body);
        Response {
            status,
            body: Body::Json(body),
        }
    }

    async fn handle(&self, req: &Request) -> Result<Response, IntegrationError> {
        let path = req.path.trim_start_matches('/');
        let (server, rest) = path.split_once('/').unwrap_or((path, ""));
        let Some((slot, cfg)) = self.servers.get(server) else {
            return Ok(self.answer(
                404,
                json!({"message": format!("no MCP server named {server} is configured")}),
            ));
        };
        let srv = match slot {
            Slot::Up(s) => s,
            Slot::Down(e) => return Ok(self.answer(503, json!({ "message": e }))),
        };
        let timeout = Duration::from_secs(cfg.timeout_secs.max(1));
        let timed_out = || req.error(ErrorKind::Timeout(timeout));
        match (req.method.as_str(), rest) {
            ("GET", "tools") => {
                match tokio::time::timeout(timeout, srv.list())
                    .await
                    .map_err(|_| timed_out())?
                {
                    Ok(tools) => {
                        Ok(self.answer(200, json!({"tools": tools, "mutating": cfg.mutating})))
                    }
                    Err(e) => Ok(self.answer(502, json!({"message": e.to_string()}))),
                }
            }
            ("POST", r) if r.starts_with("tools/") => {
                let tool = &r["tools/".len()..];
                let args = match &req.body {
                    Some(RequestBody::Json(v)) => v.clone(),
                    _ => json!({}),
                };
                match tokio::time::timeout(timeout, srv.call_raw(tool, args))
                    .await
                    .map_err(|_| timed_out())?
                {
                    Ok(v) if v["isError"].as_bool() == Some(true) => Ok(self.answer(
                        422,
                        json!({"message": format!("{tool} failed: {}", result_text(&v))}),
                    )),
                    Ok(v) => Ok(self.answer(200, v)),
                    Err(e) => Ok(self.answer(502, json!({"message": e.to_string()}))),
                }
            }
            _ => Ok(self.answer(
                404,
                json!({"message": format!("no such MCP request {}", req.describe())}),
            )),
        }
    }

    /// Stop every server.
    pub async fn close(self) {
        for (_, (slot, _)) in self.servers {
            if let Slot::Up(s) = slot
                && let Ok(s) = Arc::try_unwrap(s)
            {
                s.close().await;
            }
        }
    }
}

impl Transport for McpGateway {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            if req.integration == INTEGRATION {
                self.handle(req).await
            } else {
                self.inner.send(req).await
            }
        })
    }

    fn has(&self, integration: &str) -> bool {
        (integration == INTEGRATION && !self.servers.is_empty()) || self.inner.has(integration)
    }
}

/// What a server offered, as registered in the catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    pub server: String,
    /// Catalog names (`mcp.<server>.<tool>`).
    pub tools: Vec<String>,
}

/// MCP through any transport: live (the gateway), recording, or replaying a case.
#[derive(Clone)]
pub struct McpClient {
    transport: Arc<dyn Transport>,
    /// The built-in kinds and the tools registered through this client, for the world it serves.
    catalog: Arc<std::sync::RwLock<catalog::Catalog>>,
}

impl McpClient {
    pub fn new(transport: Arc<dyn Transport>) -> McpClient {
        McpClient {
            transport,
            catalog: Arc::default(),
        }
    }

    /// The kinds this client's world knows: the built-in table and the tools registered so far.
    pub fn catalog(&self) -> catalog::Catalog {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// List a server's tools and register them in the catalog: read-only unless the config
    /// lists them as mutating or the server itself marks them destructive.
    pub async fn register(&self, server: &str) -> Result<Registered, IntegrationError> {
        let req = Request::get(INTEGRATION, format!("/{server}/tools"));
        let v = self.transport.send(&req).await?.json(&req)?;
        let mutating: Vec<&str> = v["mutating"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut tools = Vec::new();
        for t in v["tools"].as_array().into_iter().flatten() {
            let Some(spec) = spec_of(server, t) else {
                continue;
            };
            let Some(name) = t["name"].as_str() else {
                continue;
            };
            let destructive = t["annotations"]["destructiveHint"].as_bool() == Some(true)
                && t["annotations"]["readOnlyHint"].as_bool() != Some(true);
            self.catalog
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .register(ExternalTool {
                    name: spec.name.clone(),
                    integration: INTEGRATION.into(),
                    mutating: mutating.contains(&name) || destructive,
                    summary: spec.description,
                    schema: spec.parameters,
                });
            tools.push(spec.name);
        }
        Ok(Registered {
            server: server.to_string(),
            tools,
        })
    }

    /// Call `mcp.<server>.<tool>`: the result's text.
    pub async fn call(&self, kind: &str, arguments: &Value) -> Result<String, IntegrationError> {
        let Some((server, tool)) = split_kind(kind) else {
            return Err(IntegrationError::new(
                INTEGRATION,
                kind,
                ErrorKind::Invalid(format!("{kind} is not mcp.<server>.<tool>")),
            ));
        };
        let mut req = Request::new(INTEGRATION, "POST", format!("/{server}/tools/{tool}"))
            .body(RequestBody::Json(arguments.clone()));
        req.query = query_of(arguments);
        let v = self.transport.send(&req).await?.json(&req)?;
        Ok(result_text(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_split_into_server_and_tool() {
        assert_eq!(
            split_kind("mcp.time.get_current_time"),
            Some(("time", "get_current_time"))
        );
        assert_eq!(split_kind("mcp.time"), None);
        assert_eq!(split_kind("kubernetes.pods"), None);
    }

    #[test]
    fn arguments_become_query_pairs() {
        let q = query_of(&json!({"timezone": "UTC", "n": 3}));
        assert!(q.contains(&("timezone".into(), "UTC".into())));
        assert!(q.contains(&("n".into(), "3".into())));
    }
}
