//! The Anthropic Messages wire format (`POST {base}/v1/messages`, SSE with named events).

use super::stream::{Assembler, sse_data};
use super::{ChatRequest, LlmError, Reply, Role, Stop, ToolCall, ToolNames, parse_args};
use serde_json::{Value, json};

const P: &str = "anthropic";

pub(super) fn body(model: &str, req: &ChatRequest, names: &ToolNames) -> Value {
    // Anthropic wants alternating turns, with tool results as blocks of a user turn.
    let mut messages: Vec<Value> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = match m.role {
            Role::User => ("user", vec![json!({"type": "text", "text": m.content})]),
            Role::Assistant => {
                let mut b = Vec::new();
                if !m.content.is_empty() {
                    b.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    b.push(json!({"type": "tool_use", "id": c.id, "name": names.wire(&c.name), "input": c.arguments}));
                }
                ("assistant", b)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
        };
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(arr) = last["content"].as_array_mut() {
                    arr.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": if req.max_tokens > 0 { req.max_tokens } else { 4096 },
        "messages": messages,
        "stream": req.stream,
    });
    if !req.system.is_empty() {
        body["system"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| json!({"name": names.wire(&t.name), "description": t.description, "input_schema": t.parameters}))
                .collect(),
        );
    }
    body
}

enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

#[derive(Default)]
pub(super) struct Stream {
    text: String,
    blocks: std::collections::BTreeMap<u64, Block>,
    stop: Stop,
    tokens_in: u64,
    tokens_out: u64,
    done: bool,
}

fn stop_of(reason: &str) -> Stop {
    match reason {
        "tool_use" => Stop::ToolUse,
        "max_tokens" => Stop::MaxTokens,
        _ => Stop::End,
    }
}

fn malformed(detail: String) -> LlmError {
    LlmError::Malformed {
        provider: P,
        detail,
    }
}

impl Assembler for Stream {
    fn line(&mut self, line: &str) -> Result<Option<String>, LlmError> {
        // The `event:` line repeats the data's `type`; the data is what we read.
        let Some(data) = sse_data(line) else {
            return Ok(None);
        };
        let v: Value = serde_json::from_str(data).map_err(|e| {
            malformed(format!(
                "stream event is not JSON ({e}): {}",
                super::clip(data, 200)
            ))
        })?;
        let index = v["index"].as_u64().unwrap_or(0);
        match v["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let u = &v["message"]["usage"];
                self.tokens_in = u["input_tokens"].as_u64().unwrap_or(0);
                self.tokens_out = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let b = &v["content_block"];
                let block = match b["type"].as_str() {
                    Some("text") => {
                        let t = b["text"].as_str().unwrap_or_default();
                        if !t.is_empty() {
                            self.text.push_str(t);
                            self.blocks.insert(index, Block::Text);
                            return Ok(Some(t.to_string()));
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: b["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let d = &v["delta"];
                match (d["type"].as_str(), self.blocks.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        let t = d["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        return Ok((!t.is_empty()).then(|| t.to_string()));
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default());
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(malformed(format!(
                            "input_json_delta for block {index}, which is not a tool_use"
                        )));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.stop = stop_of(r);
                }
                if let Some(o) = v["usage"]["output_tokens"].as_u64() {
                    self.tokens_out = o;
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                return Err(LlmError::Provider {
                    provider: P,
                    message: format!(
                        "{}: {}",
                        v["error"]["type"].as_str().unwrap_or("error"),
                        v["error"]["message"].as_str().unwrap_or_default()
                    ),
                });
            }
            _ => {} // ping, content_block_stop, and event types added later
        }
        Ok(None)
    }

    fn finish(&mut self) -> Result<Reply, LlmError> {
        if !self.done {
            return Err(LlmError::Truncated {
                provider: P,
                detail: "no `message_stop` event".into(),
            });
        }
        let mut tool_calls = Vec::new();
        for (_, b) in std::mem::take(&mut self.blocks) {
            if let Block::Tool { id, name, json } = b {
                tool_calls.push(ToolCall {
                    arguments: parse_args(P, &name, &json)?,
                    id,
                    name,
                });
            }
        }
        Ok(Reply {
            text: std::mem::take(&mut self.text),
            stop: if tool_calls.is_empty() {
                self.stop
            } else {
                Stop::ToolUse
            },
            tool_calls,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
        })
    }

    fn whole(&mut self, v: &Value) -> Result<Reply, LlmError> {
        if v["type"] == "error" {
            return Err(LlmError::Provider {
                provider: P,
                message: v["error"]["message"]
                    .as_str()
                    .unwrap_or("unknown error")
                    .to_string(),
            });
        }
        let content = v["content"]
            .as_array()
            .ok_or_else(|| malformed("response has no content array".into()))?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for b in content {
            match b["type"].as_str() {
                Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
                Some("tool_use") => tool_calls.push(ToolCall {
                    id: b["id"].as_str().unwrap_or_default().to_string(),
                    name: b["name"]
                        .as_str()
                        .ok_or_else(|| malformed("tool_use block has no name".into()))?
                        .to_string(),
                    arguments: b["input"].clone(),
                }),
                _ => {}
            }
        }
        Ok(Reply {
            text,
            stop: if tool_calls.is_empty() {
                stop_of(v["stop_reason"].as_str().unwrap_or("end_turn"))
            } else {
                Stop::ToolUse
            },
            tool_calls,
            tokens_in: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
            tokens_out: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
        })
    }
}
