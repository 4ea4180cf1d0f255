//! The three model clients against loopback fakes speaking each provider's wire format: streaming
//! and not, tool-call fragments, retry-after, truncated and malformed streams, key hygiene.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use secrecy::SecretString;
use serde_json::{Value, json};
use sitrep::integrations::llm::{
    ChatRequest, Client, ClientConfig, Message, Provider, Stop, ToolSpec,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One canned answer: status, extra headers, and body chunks sent as separate writes.
#[derive(Clone)]
struct Canned {
    status: u16,
    headers: Vec<(&'static str, String)>,
    chunks: Vec<String>,
}

fn ok(chunks: Vec<String>) -> Canned {
    Canned {
        status: 200,
        headers: vec![],
        chunks,
    }
}

#[derive(Clone, Default)]
struct Seen {
    requests: Arc<Mutex<Vec<(String, HeaderMap, Value)>>>,
}

/// A fake serving the canned answers in order (the last one repeats) on every path.
async fn fake(answers: Vec<Canned>) -> (String, Seen) {
    let seen = Seen::default();
    let queue = Arc::new(Mutex::new(answers));
    let s2 = seen.clone();
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
            let seen = s2.clone();
            let queue = queue.clone();
            async move {
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen.requests
                    .lock()
                    .unwrap()
                    .push((uri.path().to_string(), headers, v));
                let c = {
                    let mut q = queue.lock().unwrap();
                    if q.len() > 1 {
                        q.remove(0)
                    } else {
                        q[0].clone()
                    }
                };
                let stream = futures::stream::iter(
                    c.chunks
                        .into_iter()
                        .map(|s| Ok::<_, std::io::Error>(Bytes::from(s))),
                )
                .then(|b| async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    b
                });
                let mut r = Response::builder().status(StatusCode::from_u16(c.status).unwrap());
                for (k, v) in c.headers {
                    r = r.header(k, v);
                }
                r.body(Body::from_stream(stream)).unwrap()
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

use futures::StreamExt;

fn client(provider: Provider, base: &str, key: Option<&str>) -> Client {
    let mut cfg = ClientConfig::new(provider, base, "test-model");
    cfg.api_key = key.map(|k| SecretString::from(k.to_string()));
    cfg.backoff = Duration::from_millis(20);
    Client::new(cfg).unwrap()
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        system: "You investigate incidents.".into(),
        messages: vec![Message::user("Why is payments-api failing?")],
        tools: vec![ToolSpec {
            name: "kubernetes.pods".into(),
            description: "List pods".into(),
            parameters: json!({"type":"object","properties":{"namespace":{"type":"string"}},"required":[]}),
        }],
        stream,
        max_tokens: 512,
    }
}

fn sse(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// Cut the body into 37-byte writes, so SSE frames and JSON strings cross chunk boundaries
/// (the bodies are ASCII, so every cut is a valid string).
fn resplit(chunks: Vec<String>) -> Vec<String> {
    chunks
        .concat()
        .as_bytes()
        .chunks(37)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect()
}

fn openai_tool_stream() -> Vec<String> {
    let mut c = sse(&[
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking "},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"pods."},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"kubernetes__pods","arguments":""}}]},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"names"}}]},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"pace\": \"pay"}}]},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"kubernetes__pods","arguments":"{}"}}]},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ments\"}"}}]},"finish_reason":null}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":17,"total_tokens":137}}),
    ]);
    c.push("data: [DONE]\n\n".into());
    c
}

#[tokio::test]
async fn openai_stream_assembles_split_tool_calls_and_maps_names_back() {
    let (base, seen) = fake(vec![ok(resplit(openai_tool_stream()))]).await;
    let c = client(
        Provider::Openai,
        &format!("{base}/v1"),
        Some("sk-test-openai-123456"),
    );
    let mut shown = String::new();
    let ex = c.chat(&request(true), &mut |t| shown.push_str(t)).await;
    let reply = ex.reply.clone().unwrap();
    assert_eq!(shown, "Checking pods.");
    assert_eq!(reply.text, "Checking pods.");
    assert_eq!(reply.stop, Stop::ToolUse);
    assert_eq!(reply.tool_calls.len(), 2);
    assert_eq!(reply.tool_calls[0].name, "kubernetes.pods");
    assert_eq!(reply.tool_calls[0].id, "call_a");
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"namespace": "payments"})
    );
    assert_eq!(reply.tool_calls[1].arguments, json!({}));
    assert_eq!((reply.tokens_in, reply.tokens_out), (120, 17));
    let reqs = seen.requests.lock().unwrap();
    let (path, headers, body) = &reqs[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(headers["authorization"], "Bearer sk-test-openai-123456");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "kubernetes__pods");
    // The key is a header, never part of what is recorded.
    assert!(
        !serde_json::to_string(&ex)
            .unwrap()
            .contains("sk-test-openai-123456")
    );
}

#[tokio::test]
async fn openai_non_streaming_reply() {
    let body = json!({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,
        "tool_calls":[{"id":"call_1","type":"function","function":{"name":"kubernetes__pods","arguments":"{\"namespace\":\"a\"}"}}]},
        "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}});
    let (base, _) = fake(vec![ok(vec![body.to_string()])]).await;
    let c = client(Provider::Openai, &base, None);
    let ex = c.chat(&request(false), &mut |_| {}).await;
    let r = ex.reply.unwrap();
    assert_eq!(r.tool_calls[0].name, "kubernetes.pods");
    assert_eq!(r.tool_calls[0].arguments, json!({"namespace":"a"}));
    assert_eq!((r.tokens_in, r.tokens_out), (9, 4));
    assert_eq!(ex.request["stream"], false);
}

fn anthropic_stream() -> Vec<String> {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    vec![
        ev(
            "message_start",
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":200,"output_tokens":1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        ),
        ev("ping", json!({"type":"ping"})),
        ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}),
        ),
        ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}}),
        ),
        ev(
            "content_block_stop",
            json!({"type":"content_block_stop","index":0}),
        ),
        ev(
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"kubernetes__pods","input":{}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"namespace\": \"pa"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"yments\"}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type":"content_block_stop","index":1}),
        ),
        ev(
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}),
        ),
        ev("message_stop", json!({"type":"message_stop"})),
    ]
}

#[tokio::test]
async fn anthropic_stream_assembles_input_json_deltas() {
    let (base, seen) = fake(vec![ok(resplit(anthropic_stream()))]).await;
    let c = client(Provider::Anthropic, &base, Some("sk-ant-test-abcdef123"));
    let mut shown = Vec::new();
    let ex = c
        .chat(&request(true), &mut |t| shown.push(t.to_string()))
        .await;
    let r = ex.reply.clone().unwrap();
    assert_eq!(shown.concat(), "Let me look.");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].name, "kubernetes.pods");
    assert_eq!(r.tool_calls[0].id, "toolu_01");
    assert_eq!(r.tool_calls[0].arguments, json!({"namespace":"payments"}));
    assert_eq!(r.stop, Stop::ToolUse);
    assert_eq!((r.tokens_in, r.tokens_out), (200, 42));
    let reqs = seen.requests.lock().unwrap();
    let (path, headers, body) = &reqs[0];
    assert_eq!(path, "/v1/messages");
    assert_eq!(headers["x-api-key"], "sk-ant-test-abcdef123");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    assert_eq!(body["system"], "You investigate incidents.");
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["tools"][0]["name"], "kubernetes__pods");
    assert!(body["tools"][0]["input_schema"].is_object());
    assert_eq!(body["messages"][0]["role"], "user");
}

#[tokio::test]
async fn anthropic_tool_results_go_back_as_user_blocks() {
    let whole = json!({"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],
        "stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}});
    let (base, seen) = fake(vec![ok(vec![whole.to_string()])]).await;
    let c = client(Provider::Anthropic, &base, None);
    let mut req = request(false);
    let call = sitrep::integrations::llm::ToolCall {
        id: "toolu_9".into(),
        name: "kubernetes.pods".into(),
        arguments: json!({"namespace":"x"}),
    };
    req.messages
        .push(Message::assistant("", vec![call.clone()]));
    req.messages.push(Message::tool(&call, "3 pods"));
    let r = c.chat(&req, &mut |_| {}).await.reply.unwrap();
    assert_eq!(r.text, "Done.");
    assert_eq!(r.stop, Stop::End);
    let body = &seen.requests.lock().unwrap()[0].2;
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(
        body["messages"][1]["content"][0]["name"],
        "kubernetes__pods"
    );
    assert_eq!(body["messages"][2]["role"], "user");
    assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_9");
}

fn ollama_stream() -> Vec<String> {
    [
        json!({"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"Look"},"done":false}),
        json!({"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"ing"},"done":false}),
        json!({"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"kubernetes__pods","arguments":{"namespace":"payments"}}}]},"done":false}),
        json!({"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":33,"eval_count":7}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

#[tokio::test]
async fn ollama_native_ndjson_stream() {
    let (base, seen) = fake(vec![ok(resplit(ollama_stream()))]).await;
    let c = client(Provider::Ollama, &base, None);
    let mut shown = String::new();
    let ex = c.chat(&request(true), &mut |t| shown.push_str(t)).await;
    let r = ex.reply.unwrap();
    assert_eq!(shown, "Looking");
    assert_eq!(r.tool_calls[0].name, "kubernetes.pods");
    assert_eq!(r.tool_calls[0].arguments, json!({"namespace":"payments"}));
    assert_eq!((r.tokens_in, r.tokens_out), (33, 7));
    let reqs = seen.requests.lock().unwrap();
    assert_eq!(reqs[0].0, "/api/chat");
    assert_eq!(
        reqs[0].2["tools"][0]["function"]["name"],
        "kubernetes__pods"
    );
    assert_eq!(reqs[0].2["options"]["num_predict"], 512);
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_delay() {
    let limited = Canned {
        status: 429,
        headers: vec![("retry-after", "1".into())],
        chunks: vec![r#"{"error":{"message":"rate limited","type":"rate_limit"}}"#.into()],
    };
    let (base, seen) = fake(vec![limited, ok(openai_tool_stream())]).await;
    let c = client(Provider::Openai, &base, None);
    let started = std::time::Instant::now();
    let ex = c.chat(&request(true), &mut |_| {}).await;
    assert!(ex.reply.is_ok(), "{:?}", ex.reply);
    assert_eq!(ex.attempts, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn server_errors_give_up_after_the_retries_and_bad_requests_are_not_retried() {
    let down = Canned {
        status: 503,
        headers: vec![],
        chunks: vec!["overloaded".into()],
    };
    let (base, seen) = fake(vec![down]).await;
    let ex = client(Provider::Anthropic, &base, None)
        .chat(&request(true), &mut |_| {})
        .await;
    let err = ex.reply.unwrap_err();
    assert!(err.contains("503"), "{err}");
    assert_eq!(ex.attempts, 4);
    assert_eq!(seen.requests.lock().unwrap().len(), 4);

    let bad = Canned {
        status: 400,
        headers: vec![],
        chunks: vec!["bad".into()],
    };
    let (base, seen) = fake(vec![bad]).await;
    let ex = client(Provider::Openai, &base, None)
        .chat(&request(true), &mut |_| {})
        .await;
    assert!(ex.reply.unwrap_err().contains("400"));
    assert_eq!(seen.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_stream_without_its_end_event_is_truncated_for_every_provider() {
    let mut oa = openai_tool_stream();
    oa.pop(); // no [DONE]
    let mut an = anthropic_stream();
    an.pop(); // no message_stop
    let mut ol = ollama_stream();
    ol.pop(); // no done:true
    for (provider, chunks) in [
        (Provider::Openai, oa),
        (Provider::Anthropic, an),
        (Provider::Ollama, ol),
    ] {
        let (base, _) = fake(vec![ok(chunks)]).await;
        let ex = client(provider, &base, None)
            .chat(&request(true), &mut |_| {})
            .await;
        let err = ex.reply.unwrap_err();
        assert!(err.contains("cut off"), "{provider:?}: {err}");
        assert!(
            !ex.raw.is_empty(),
            "the partial stream is kept for the record"
        );
    }
}

#[tokio::test]
async fn malformed_chunks_and_arguments_are_errors_not_panics() {
    let cases = [
        (
            Provider::Openai,
            vec![
                "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n".to_string(),
                "data: [DONE]\n\n".into(),
            ],
        ),
        (Provider::Openai, {
            let mut c = sse(&[
                json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"kubernetes__pods","arguments":"{\"namespace\": "}}]},"finish_reason":"tool_calls"}]}),
            ]);
            c.push("data: [DONE]\n\n".into());
            c
        }),
        (
            Provider::Anthropic,
            vec!["event: message_start\ndata: {not json}\n\n".to_string()],
        ),
        (
            Provider::Ollama,
            vec!["{\"message\":{\"content\":\"a\"},\"done\":fal\n".to_string()],
        ),
    ];
    for (provider, chunks) in cases {
        let (base, _) = fake(vec![ok(chunks)]).await;
        let ex = client(provider, &base, None)
            .chat(&request(true), &mut |_| {})
            .await;
        let err = ex.reply.unwrap_err();
        assert!(err.contains("malformed"), "{provider:?}: {err}");
    }
}

#[tokio::test]
async fn provider_error_events_are_reported() {
    let chunks = vec![
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_string(),
    ];
    let (base, _) = fake(vec![ok(chunks)]).await;
    let err = client(Provider::Anthropic, &base, None)
        .chat(&request(true), &mut |_| {})
        .await
        .reply
        .unwrap_err();
    assert!(err.contains("overloaded_error"), "{err}");
}

#[tokio::test]
async fn the_api_key_never_reaches_errors_recordings_or_debug_output() {
    let key = "sk-live-canary-9f8e7d6c5b4a";
    // A server that echoes the credential back in its error body.
    let echo = Canned {
        status: 401,
        headers: vec![],
        chunks: vec![format!("{{\"error\":\"invalid key Bearer {key}\"}}")],
    };
    let (base, seen) = fake(vec![echo]).await;
    let c = client(Provider::Openai, &base, Some(key));
    let ex = c.chat(&request(true), &mut |_| {}).await;
    let err = ex.reply.clone().unwrap_err();
    assert!(err.contains("401"), "{err}");
    assert!(!err.contains(key), "{err}");
    assert!(!serde_json::to_string(&ex).unwrap().contains(key));
    assert!(!format!("{c:?}").contains(key));
    // It did go out, as a header.
    assert_eq!(
        seen.requests.lock().unwrap()[0].1["authorization"],
        format!("Bearer {key}")
    );
}
