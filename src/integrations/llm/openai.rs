//! The OpenAI-compatible chat completions wire format (`POST {base}/chat/completions`, SSE).

use super::stream::{Assembler, sse_data};
use super::{ChatRequest, LlmError, Reply, Role, Stop, ToolCall, ToolNames, parse_args};
use serde_json::{Value, json};

const P: &str = "openai";

pub(super) fn body(model: &str, req: &ChatRequest, names: &ToolNames) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        messages.push(match m.role {
            Role::User => json!({"role": "user", "content": m.content}),
            Role::Assistant if m.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": m.content})
            }
            Role::Assistant => json!({
                "role": "assistant",
                "content": if m.content.is_empty() { Value::Null } else { Value::from(m.content.clone()) },
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": names.wire(&c.name), "arguments": c.arguments.to_string()},
                })).collect::<Vec<_>>(),
            }),
            Role::Tool => json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": m.content,
            }),
        });
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": req.stream,
    });
    if req.max_tokens > 0 {
        body["max_tokens"] = json!(req.max_tokens);
    }
    if req.stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": names.wire(&t.name),
                        "description": t.description,
                        "parameters": t.parameters,
                    }})
                })
                .collect(),
        );
    }
    body
}

/// A tool call being assembled from `delta.tool_calls[]` fragments, keyed by `index`.
#[derive(Default)]
struct Partial {
    id: String,
    name: String,
    args: String,
}

#[derive(Default)]
pub(super) struct Stream {
    text: String,
    calls: std::collections::BTreeMap<u64, Partial>,
    stop: Option<Stop>,
    tokens_in: u64,
    tokens_out: u64,
    done: bool,
}

fn stop_of(reason: &str) -> Stop {
    match reason {
        "tool_calls" | "function_call" => Stop::ToolUse,
        "length" => Stop::MaxTokens,
        _ => Stop::End,
    }
}

fn usage(v: &Value) -> (u64, u64) {
    let u = &v["usage"];
    (
        u["prompt_tokens"].as_u64().unwrap_or(0),
        u["completion_tokens"].as_u64().unwrap_or(0),
    )
}

fn malformed(detail: String) -> LlmError {
    LlmError::Malformed {
        provider: P,
        detail,
    }
}

impl Assembler for Stream {
    fn line(&mut self, line: &str) -> Result<Option<String>, LlmError> {
        let Some(data) = sse_data(line) else {
            return Ok(None);
        };
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            malformed(format!(
                "stream chunk is not JSON ({e}): {}",
                super::clip(data, 200)
            ))
        })?;
        if let Some(err) = v.get("error") {
            return Err(LlmError::Provider {
                provider: P,
                message: err["message"]
                    .as_str()
                    .unwrap_or("unknown error")
                    .to_string(),
            });
        }
        if v.get("usage").is_some_and(|u| !u.is_null()) {
            (self.tokens_in, self.tokens_out) = usage(&v);
        }
        let mut out = String::new();
        for choice in v["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str() {
                out.push_str(t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = tc["index"].as_u64().unwrap_or(0);
                let p = self.calls.entry(index).or_default();
                if let Some(id) = tc["id"].as_str() {
                    p.id = id.to_string();
                }
                if let Some(n) = tc["function"]["name"].as_str() {
                    p.name.push_str(n);
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    p.args.push_str(a);
                }
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                self.stop = Some(stop_of(r));
            }
        }
        self.text.push_str(&out);
        Ok((!out.is_empty()).then_some(out))
    }

    fn finish(&mut self) -> Result<Reply, LlmError> {
        if !self.done {
            return Err(LlmError::Truncated {
                provider: P,
                detail: "no `data: [DONE]`".into(),
            });
        }
        let mut tool_calls = Vec::new();
        for (i, p) in std::mem::take(&mut self.calls) {
            if p.name.is_empty() {
                return Err(malformed(format!("tool call {i} has no name")));
            }
            tool_calls.push(ToolCall {
                id: if p.id.is_empty() {
                    format!("call_{i}")
                } else {
                    p.id
                },
                arguments: parse_args(P, &p.name, &p.args)?,
                name: p.name,
            });
        }
        Ok(Reply {
            text: std::mem::take(&mut self.text),
            stop: if tool_calls.is_empty() {
                self.stop.unwrap_or_default()
            } else {
                Stop::ToolUse
            },
            tool_calls,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
        })
    }

    fn whole(&mut self, v: &Value) -> Result<Reply, LlmError> {
        if let Some(err) = v.get("error") {
            return Err(LlmError::Provider {
                provider: P,
                message: err["message"]
                    .as_str()
                    .unwrap_or("unknown error")
                    .to_string(),
            });
        }
        let choice = v["choices"]
            .get(0)
            .ok_or_else(|| malformed("response has no choices".into()))?;
        let msg = &choice["message"];
        let mut tool_calls = Vec::new();
        for (i, tc) in msg["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = tc["function"]["name"]
                .as_str()
                .ok_or_else(|| malformed(format!("tool call {i} has no name")))?;
            // Arguments are a JSON text; some servers send an object instead.
            let arguments = match &tc["function"]["arguments"] {
                Value::String(s) => parse_args(P, name, s)?,
                Value::Null => json!({}),
                other => other.clone(),
            };
            tool_calls.push(ToolCall {
                id: tc["id"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{i}")),
                name: name.to_string(),
                arguments,
            });
        }
        let (tokens_in, tokens_out) = usage(v);
        Ok(Reply {
            text: msg["content"].as_str().unwrap_or_default().to_string(),
            stop: if tool_calls.is_empty() {
                stop_of(choice["finish_reason"].as_str().unwrap_or("stop"))
            } else {
                Stop::ToolUse
            },
            tool_calls,
            tokens_in,
            tokens_out,
        })
    }
}
