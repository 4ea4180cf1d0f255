//! A scripted model behind a loopback server speaking the OpenAI chat-completions streaming
//! format (SSE `data:` chunks, tool calls split across chunks, `data: [DONE]`).

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

pub type Bodies = Arc<Mutex<Vec<Value>>>;

pub fn sse(events: Vec<Value>) -> String {
    let mut s: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
}

pub fn usage() -> Value {
    json!({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10}})
}

pub fn text_stream(text: &str) -> String {
    let mut ev: Vec<Value> = text
        .as_bytes()
        .chunks(7)
        .map(|c| chunk(json!({"content": String::from_utf8_lossy(c)}), None))
        .collect();
    ev.push(chunk(json!({}), Some("stop")));
    ev.push(usage());
    sse(ev)
}

/// Tool calls (wire name, arguments JSON), each call's arguments split across two chunks.
pub fn calls_stream(calls: &[(String, Value)]) -> String {
    let mut ev = vec![chunk(json!({"role":"assistant","content":""}), None)];
    for (i, (name, args)) in calls.iter().enumerate() {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        ev.push(chunk(
            json!({"tool_calls":[{"index":i,"id":format!("call_{i}"),"type":"function","function":{"name":name,"arguments":a}}]}),
            None,
        ));
        ev.push(chunk(
            json!({"tool_calls":[{"index":i,"function":{"arguments":b}}]}),
            None,
        ));
    }
    ev.push(chunk(json!({}), Some("tool_calls")));
    ev.push(usage());
    sse(ev)
}

/// The wire name of the offered tool whose name contains `part`.
pub fn offered(body: &Value, part: &str) -> Option<String> {
    body["tools"]
        .as_array()?
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .find(|n| n.contains(part))
        .map(str::to_string)
}

/// The evidence id a tool result starts with (`evidence ev-3\n...`).
pub fn cited(result: &str) -> String {
    result
        .strip_prefix("evidence ")
        .and_then(|r| r.split(['\n', ',']).next())
        .unwrap_or("ev-unknown")
        .to_string()
}

/// Serve `script` on loopback; every request body is kept, in order.
pub async fn serve(script: impl Fn(&Value) -> String + Send + Sync + 'static) -> (String, Bodies) {
    let bodies: Bodies = Arc::default();
    let b2 = bodies.clone();
    let script = Arc::new(script);
    let app = axum::Router::new().fallback(move |body: Bytes| {
        let bodies = b2.clone();
        let script = script.clone();
        async move {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            bodies.lock().unwrap().push(v.clone());
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from(script(&v)))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), bodies)
}

/// The tool results in a request, in order.
pub fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}
