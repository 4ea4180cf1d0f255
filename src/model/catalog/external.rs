//! Kinds that join the catalog at run time (tools of MCP servers): registered once when a server
//! is connected, then looked up, checked and offered exactly like the built-in entries.

use super::{Entry, Handler, Op, Param, ParamType, Params, Risk, Target};
use serde_json::Value;
use std::sync::RwLock;

/// One registered kind and the JSON Schema its server published for its arguments.
struct External {
    entry: &'static Entry,
    schema: Value,
}

/// Kinds registered so far. Entries are leaked: a handful per server, for the life of the process,
/// so lookups hand out `&'static Entry` like the static table does.
static REGISTRY: RwLock<Vec<External>> = RwLock::new(Vec::new());

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

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn param_type(schema: &Value) -> ParamType {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => ParamType::Integer,
        Some("boolean") => ParamType::Boolean,
        Some("object") => ParamType::Object,
        _ => ParamType::String,
    }
}

fn params_of(schema: &Value) -> &'static [Param] {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<Param> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| Param {
                    name: leak(name),
                    ty: param_type(p),
                    required: required.contains(&name.as_str()),
                    default: None,
                    description: leak(
                        p.get("description")
                            .and_then(Value::as_str)
                            .filter(|d| !d.trim().is_empty())
                            .unwrap_or("(no description)"),
                    ),
                })
                .collect()
        })
        .unwrap_or_default();
    Box::leak(params.into_boxed_slice())
}

fn render(op: &Op) -> String {
    let args = serde_json::to_string(op.params).unwrap_or_default();
    format!("{} {args}", op.entry.name)
}

/// Add (or replace) a kind. A mutating one carries a medium floor at least: the server's author,
/// not us, knows what it does, so the operator always gets the chance to veto it.
pub fn register(tool: ExternalTool) {
    let entry: &'static Entry = Box::leak(Box::new(Entry {
        name: leak(&tool.name),
        integration: leak(&tool.integration),
        mutating: tool.mutating,
        floor: if tool.mutating {
            Risk::Medium
        } else {
            Risk::Low
        },
        summary: leak(&tool.summary),
        params: params_of(&tool.schema),
        target: Target::None,
        usage: leak(&format!("{} tool call", tool.integration)),
        render,
        handler: Handler::External,
    }));
    let mut schema = tool.schema;
    if !schema.is_object() {
        schema = serde_json::json!({"type": "object", "properties": {}});
    }
    let mut reg = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    reg.retain(|x| x.entry.name != tool.name);
    reg.push(External { entry, schema });
}

pub(super) fn lookup(kind: &str) -> Option<&'static Entry> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|x| x.entry.name == kind)
        .map(|x| x.entry)
}

pub(super) fn schema(kind: &str) -> Option<Value> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|x| x.entry.name == kind)
        .map(|x| x.schema.clone())
}

/// Every registered kind, in registration order.
pub fn entries() -> Vec<&'static Entry> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|x| x.entry)
        .collect()
}

/// An external kind's arguments go to its server as given: the server validates them against
/// its own schema, so only names and required ones are checked here.
pub(super) fn check(entry: &Entry, params: &Params) -> Vec<String> {
    let mut out = Vec::new();
    if !entry.params.is_empty() {
        for k in params.keys() {
            if entry.param(k).is_none() {
                out.push(format!(
                    "{k} is not a parameter of {} (expected one of {})",
                    entry.name,
                    super::param_names(entry)
                ));
            }
        }
    }
    for p in entry.params.iter().filter(|p| p.required) {
        if !params.contains_key(p.name) {
            out.push(format!(
                "{} needs `{}` ({})",
                entry.name, p.name, p.description
            ));
        }
    }
    out
}
