//! Kinds that join the catalog at run time (tools of MCP servers): registered once when a server
//! is connected, then looked up, checked and offered exactly like the built-in entries.

use super::{Entry, Handler, Op, Params, Risk, Target};
use serde_json::Value;
use std::borrow::Cow;

/// One registered kind and the JSON Schema its server published for its arguments.
#[derive(Clone, Debug)]
pub(super) struct External {
    pub(super) entry: Entry,
    pub(super) schema: Value,
}

/// What a server says about one of its tools.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalTool {
    /// `<integration>.<server>.<tool>`, e.g. `mcp.time.get_current_time`.
    pub name: String,
    pub integration: String,
    pub mutating: bool,
    pub summary: String,
    /// JSON Schema of the arguments (`{"type":"object","properties":{...},"required":[...]}`).
    pub schema: Value,
}

fn render(op: &Op) -> String {
    let args = serde_json::to_string(op.params).unwrap_or_default();
    format!("{} {args}", op.entry.name)
}

impl External {
    /// The kind a server's tool becomes. A mutating one carries a medium floor at least: the
    /// server's author, not us, knows what it does, so the operator always gets the chance to
    /// veto it.
    pub(super) fn new(tool: ExternalTool) -> External {
        let entry = Entry {
            usage: Cow::Owned(format!("{} tool call", tool.integration)),
            name: Cow::Owned(tool.name),
            integration: Cow::Owned(tool.integration),
            mutating: tool.mutating,
            floor: if tool.mutating {
                Risk::Medium
            } else {
                Risk::Low
            },
            summary: Cow::Owned(tool.summary),
            // The server's schema, kept beside the entry, describes and checks the arguments.
            params: &[],
            target: Target::None,
            render,
            handler: Handler::External,
        };
        let mut schema = tool.schema;
        if !schema.is_object() {
            schema = serde_json::json!({"type": "object", "properties": {}});
        }
        External { entry, schema }
    }
}

impl External {
    /// An external kind's arguments go to its server as given: the server validates them
    /// against its own schema, so only names and required ones are checked here.
    pub(super) fn check(&self, params: &Params) -> Vec<String> {
        let properties: Vec<&str> = self
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        if !properties.is_empty() {
            for k in params.keys() {
                if !properties.contains(&k.as_str()) {
                    out.push(format!(
                        "{k} is not a parameter of {} (expected one of {})",
                        self.entry.name,
                        properties.join(", ")
                    ));
                }
            }
        }
        let required = self
            .schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        for name in required {
            if !params.contains_key(name) {
                let description = self.schema["properties"][name]["description"]
                    .as_str()
                    .filter(|d| !d.trim().is_empty())
                    .unwrap_or("(no description)");
                out.push(format!(
                    "{} needs `{name}` ({description})",
                    self.entry.name
                ));
            }
        }
        out
    }
}
