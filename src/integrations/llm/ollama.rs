//! Ollama's native chat wire format (`POST {base}/api/chat`, NDJSON, `"done": true` at the end).

use super::stream::Assembler;
use super::{ChatRequest, LlmError, Reply, Role, Stop, ToolCall, ToolNames};
use serde_json::{Value, json};

const P: &str = "ollama";

pub(super) fn body(model: &str, req: &ChatRequest, names: &ToolNames) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        messages.push(match m.role {
            Role::User => json!({"role": "user", "content": m.content}),
            Role::Assistant => {
                let mut v = json!({"role": "assistant", "content": m.content});
                if !m.tool_calls.is_empty() {
                    v["tool_calls"] = Value::Array(
                        m.tool_calls
                            .iter()
                            .map(|c| json!({"function": {"name": names.wire(&c.name), "arguments": c.arguments}}))
                            .collect(),
                    );
                }
                v
            }
            Role::Tool => json!({
                "role": "tool",
                "content": m.content,
                "tool_name": m.tool_name.as_deref().map(|n| names.wire(n)).unwrap_or_default(),
            }),
        });
    }
    let mut body = json!({"model": model, "messages": messages, "stream": req.stream});
    if req.max_tokens > 0 {
        body["options"] = json!({"num_predict": req.max_tokens});
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": names.wire(&t.name), "description": t.description, "parameters": t.parameters}}))
                .collect(),
        );
    }
    body
}

#[derive(Default)]
pub(super) struct Stream {
    text: String,
    calls: Vec<ToolCall>,
    reply: Option<Reply>,
}

fn malformed(detail: String) -> LlmError {
    LlmError::Malformed {
        provider: P,
        detail,
    }
}

impl Stream {
    /// One object (a stream line or the whole body): text, whole tool calls, and the end.
    fn object(&mut self, v: &Value) -> Result<String, LlmError> {
        if let Some(e) = v["error"].as_str() {
            return Err(LlmError::Provider {
                provider: P,
                message: e.to_string(),
            });
        }
        let msg = &v["message"];
        let t = msg["content"].as_str().unwrap_or_default().to_string();
        self.text.push_str(&t);
        // Ollama sends each tool call whole (arguments as an object), never in fragments.
        for tc in msg["tool_calls"].as_array().into_iter().flatten() {
            let f = &tc["function"];
            let name = f["name"]
                .as_str()
                .ok_or_else(|| malformed("tool call has no name".into()))?;
            let arguments = match &f["arguments"] {
                Value::String(s) => super::parse_args(P, name, s)?,
                Value::Null => json!({}),
                other => other.clone(),
            };
            let n = self.calls.len();
            self.calls.push(ToolCall {
                id: tc["id"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{n}")),
                name: name.to_string(),
                arguments,
            });
        }
        if v["done"].as_bool() == Some(true) {
            let calls = std::mem::take(&mut self.calls);
            self.reply = Some(Reply {
                text: std::mem::take(&mut self.text),
                stop: if !calls.is_empty() {
                    Stop::ToolUse
                } else if v["done_reason"] == "length" {
                    Stop::MaxTokens
                } else {
                    Stop::End
                },
                tool_calls: calls,
                tokens_in: v["prompt_eval_count"].as_u64().unwrap_or(0),
                tokens_out: v["eval_count"].as_u64().unwrap_or(0),
            });
        }
        Ok(t)
    }
}

impl Assembler for Stream {
    fn line(&mut self, line: &str) -> Result<Option<String>, LlmError> {
        if line.trim().is_empty() {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            malformed(format!(
                "stream line is not JSON ({e}): {}",
                super::clip(line, 200)
            ))
        })?;
        let t = self.object(&v)?;
        Ok((!t.is_empty()).then_some(t))
    }

    fn finish(&mut self) -> Result<Reply, LlmError> {
        self.reply.take().ok_or_else(|| LlmError::Truncated {
            provider: P,
            detail: "no line with `\"done\": true`".into(),
        })
    }

    fn whole(&mut self, v: &Value) -> Result<Reply, LlmError> {
        self.object(v)?;
        self.finish()
    }
}
