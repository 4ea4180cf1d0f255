//! `[[mcp.servers]]`: the MCP servers whose tools join the catalog, and the checks they pass.

use super::validate::Check;
use super::*;

/// `[mcp]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mcp {
    #[serde(default)]
    pub servers: Vec<McpServer>,
}

impl Mcp {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

fn default_mcp_timeout() -> u64 {
    30
}

/// `[[mcp.servers]]`: one MCP server, started over stdio (`command`) or reached over streamable
/// HTTP (`url`). Its tools join the catalog as `mcp.<name>.<tool>`, read-only unless listed in
/// `mutating`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// Letters, digits, `-` and `_`: it becomes part of the tool names.
    pub name: String,
    /// stdio: the program to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: extra environment for the program.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP: the server's endpoint (e.g. `http://127.0.0.1:8000/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tools (by their server-side name) that change the world: the model can only propose them,
    /// and they run after approval like every action.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutating: Vec<String>,
    /// Seconds to start the server and per call.
    #[serde(default = "default_mcp_timeout")]
    pub timeout_secs: u64,
}

impl Mcp {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        let mut names = std::collections::BTreeSet::new();
        for (i, m) in self.servers.iter().enumerate() {
            let key = |k: &str| format!("mcp.servers[{i}].{k}");
            let name_ok = !m.name.is_empty()
                && m.name.len() <= 32
                && m.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                return Err(c.invalid(
                    &key("name"),
                    "1 to 32 letters, digits, - and _",
                    format!("{:?}", m.name),
                ));
            }
            if !names.insert(m.name.as_str()) {
                return Err(c.invalid(
                    &key("name"),
                    "a name no other server has",
                    format!("{:?}", m.name),
                ));
            }
            match (&m.command, &m.url) {
                (Some(command), None) if !command.trim().is_empty() => {}
                (None, Some(url)) => c.url(&key("url"), url)?,
                (Some(_), Some(_)) => {
                    return Err(c.invalid(
                        &key("url"),
                        "either `command` (stdio) or `url` (streamable HTTP), not both",
                        format!("{:?}", m.url.as_deref().unwrap_or("")),
                    ));
                }
                _ => {
                    return Err(c.invalid(
                        &key("command"),
                        "a program to start (stdio) or a `url` (streamable HTTP)",
                        "nothing".into(),
                    ));
                }
            }
            if m.timeout_secs == 0 || m.timeout_secs > 600 {
                return Err(c.invalid(
                    &key("timeout_secs"),
                    "1 to 600",
                    m.timeout_secs.to_string(),
                ));
            }
        }
        Ok(())
    }
}
