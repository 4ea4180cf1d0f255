//! Thin model clients over reqwest for three wire formats (OpenAI-compatible, Anthropic, Ollama
//! native): one request shape in, one reply out, streamed with tool calls assembled from fragments.

mod anthropic;
mod names;
mod ollama;
mod openai;
mod record;
mod stream;

pub use names::ToolNames;
pub use record::{Recorded, event, load_recorded};

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Which wire format a configured model speaks.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Any OpenAI-compatible `/v1` (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).
    #[default]
    Openai,
    Anthropic,
    /// Ollama's native `/api/chat` (NDJSON).
    Ollama,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
        }
    }
}

/// Who said a message.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// A tool's result, answering the assistant's call `tool_call_id`.
    Tool,
}

/// One tool call as the model asked for it (catalog name, parsed arguments).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    /// The catalog name (`kubernetes.pods`), mapped back from the wire name.
    pub name: String,
    pub arguments: Value,
}

/// One message of the conversation, provider-neutral.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: which call this answers, and the tool's catalog name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
        }
    }

    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            content: text.into(),
            tool_calls,
            tool_call_id: None,
            tool_name: None,
        }
    }

    pub fn tool(call: &ToolCall, result: impl Into<String>) -> Message {
        Message {
            role: Role::Tool,
            content: result.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
            tool_name: Some(call.name.clone()),
        }
    }
}

/// A tool offered to the model, named as in the catalog.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// What one request asks.
#[derive(Clone, Debug, Default)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub stream: bool,
    pub max_tokens: u32,
}

/// Why a model stopped.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    #[default]
    End,
    ToolUse,
    /// Hit the output token limit: the text may be cut.
    MaxTokens,
}

/// A model's complete reply to one request.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: Stop,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

/// One request and what came back, as recorded: the body sent (no headers, so no key) and the
/// raw response text (the whole stream), so an exchange can be replayed with no model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Exchange {
    pub provider: Provider,
    pub model: String,
    pub request: Value,
    pub raw: String,
    pub reply: Result<Reply, String>,
    /// Attempts made (1 when no retry was needed).
    pub attempts: u32,
}

/// Why a model request failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum LlmError {
    #[error("model request to {url} failed: {message}")]
    Transport { url: String, message: String },
    #[error("model endpoint {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("model stream was cut off before its end event ({provider}): {detail}")]
    Truncated {
        provider: &'static str,
        detail: String,
    },
    #[error("model sent malformed data ({provider}): {detail}")]
    Malformed {
        provider: &'static str,
        detail: String,
    },
    #[error("model reported an error ({provider}): {message}")]
    Provider {
        provider: &'static str,
        message: String,
    },
    #[error("the model's API key: {0}")]
    Credential(String),
}

impl LlmError {
    /// Whether a retry could help (rate limits and server errors; not bad requests).
    pub fn retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Transport { .. } => true,
            _ => false,
        }
    }
}

/// How a client is set up (from `[llm]`).
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub provider: Provider,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<SecretString>,
    /// The key by reference (`op://`, `vault://`), read through the keyring on first use once
    /// the operator approved it; used when `api_key` is None.
    pub api_key_ref: Option<KeyRef>,
    pub max_retries: u32,
    /// First backoff when the server gives no `retry-after`; doubles per attempt.
    pub backoff: Duration,
    /// Longest wait honoured from a `retry-after` header.
    pub max_wait: Duration,
    pub timeout: Duration,
    /// Applied to every request body before it leaves: nothing secret reaches a model.
    pub redactor: crate::policy::redact::Redactor,
    /// Append every exchange to this NDJSON file (a case directory's `llm.ndjson`).
    pub record: Option<std::path::PathBuf>,
}

impl ClientConfig {
    pub fn new(provider: Provider, base_url: &str, model: &str) -> ClientConfig {
        ClientConfig {
            provider,
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: None,
            api_key_ref: None,
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(30),
            timeout: Duration::from_secs(300),
            redactor: crate::policy::redact::Redactor::new(),
            record: None,
        }
    }
}

/// A model API key by reference and the keyring that reads it once approved.
#[derive(Clone, Debug)]
pub struct KeyRef {
    pub keyring: std::sync::Arc<crate::secrets::Keyring>,
    pub reference: String,
}

/// A model client for one provider, live or answering from recorded exchanges in order.
#[derive(Clone)]
pub struct Client {
    cfg: ClientConfig,
    http: reqwest::Client,
    replay: Option<std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<Recorded>>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Client")
            .field("provider", &self.cfg.provider)
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .field("api_key", &self.cfg.api_key.as_ref().map(|_| "[set]"))
            .field(
                "api_key_ref",
                &self.cfg.api_key_ref.as_ref().map(|k| &k.reference),
            )
            .finish()
    }
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Result<Client, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .build()
            .map_err(|e| LlmError::Transport {
                url: cfg.base_url.clone(),
                message: e.to_string(),
            })?;
        Ok(Client {
            cfg,
            http,
            replay: None,
        })
    }

    /// A client that sends nothing: each request is answered by the next recorded exchange,
    /// parsed by the same code as a live stream.
    pub fn replaying(recorded: Vec<Recorded>) -> Client {
        let first = recorded.first();
        let cfg = ClientConfig::new(
            first.map(|r| r.provider).unwrap_or_default(),
            "http://replay.invalid",
            first.map(|r| r.model.as_str()).unwrap_or("recorded"),
        );
        Client {
            cfg,
            http: reqwest::Client::new(),
            replay: Some(std::sync::Arc::new(std::sync::Mutex::new(recorded.into()))),
        }
    }

    /// Whether this client answers from recordings.
    pub fn is_replay(&self) -> bool {
        self.replay.is_some()
    }

    pub fn provider(&self) -> Provider {
        self.cfg.provider
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// Reads the API key by `reference` through `keyring` (after approval) instead of a value.
    pub fn set_key_reference(
        &mut self,
        keyring: std::sync::Arc<crate::secrets::Keyring>,
        reference: &str,
    ) {
        self.cfg.api_key = None;
        self.cfg.api_key_ref = Some(KeyRef {
            keyring,
            reference: reference.to_string(),
        });
    }

    /// The key this client sends: configured, or read by reference once approved.
    async fn key(&self) -> Result<Option<SecretString>, LlmError> {
        if let Some(k) = &self.cfg.api_key {
            return Ok(Some(k.clone()));
        }
        let Some(r) = &self.cfg.api_key_ref else {
            return Ok(None);
        };
        let value = r
            .keyring
            .get(&r.reference)
            .await
            .map_err(|e| LlmError::Credential(e.to_string()))?;
        // Every redactor (requests, recordings, errors) masks it from now on.
        crate::policy::redact::learn_secret(value.expose_secret());
        Ok(Some(value))
    }

    fn url(&self) -> String {
        let base = &self.cfg.base_url;
        match self.cfg.provider {
            Provider::Openai => format!("{base}/chat/completions"),
            Provider::Anthropic => format!("{base}/v1/messages"),
            Provider::Ollama => format!("{base}/api/chat"),
        }
    }

    /// Remove the key from any text that leaves this client (errors, recordings).
    fn scrub(&self, text: &str) -> String {
        let text = match &self.cfg.api_key {
            Some(k) if !k.expose_secret().is_empty() => {
                text.replace(k.expose_secret(), "[REDACTED]")
            }
            _ => text.to_string(),
        };
        // A key read by reference was learned by every redactor when it was read.
        match &self.cfg.api_key_ref {
            Some(_) => self.cfg.redactor.redact(&text).into_owned(),
            None => text,
        }
    }

    /// Send one request; `on_text` sees the answer's text as it streams. Retries 429 and 5xx
    /// (honouring `retry-after`) before any byte of the answer arrived; never after.
    pub async fn chat(
        &self,
        req: &ChatRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Exchange {
        let names = ToolNames::new(req.tools.iter().map(|t| t.name.as_str()));
        let mut body = match self.cfg.provider {
            Provider::Openai => openai::body(&self.cfg.model, req, &names),
            Provider::Anthropic => anthropic::body(&self.cfg.model, req, &names),
            Provider::Ollama => ollama::body(&self.cfg.model, req, &names),
        };
        redact_strings(&self.cfg.redactor, &mut body);
        if let Some(queue) = &self.replay {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            let (raw, reply) = match next {
                Some(r) => {
                    let reply = match &r.error {
                        Some(e) => Err(e.clone()),
                        None => self.parse_raw(&r.raw, req.stream, &names, on_text),
                    };
                    (r.raw, reply)
                }
                None => (
                    String::new(),
                    Err("no recorded model exchange left to replay".into()),
                ),
            };
            return Exchange {
                provider: self.cfg.provider,
                model: self.cfg.model.clone(),
                request: body,
                raw,
                reply,
                attempts: 1,
            };
        }
        let mut attempts = 0;
        let mut raw = String::new();
        let reply = loop {
            attempts += 1;
            raw.clear();
            match self
                .attempt(&body, req.stream, &names, &mut raw, on_text)
                .await
            {
                Ok(r) => break Ok(r),
                Err((e, wait)) if e.retryable() && attempts <= self.cfg.max_retries => {
                    let backoff = self.cfg.backoff * 2u32.saturating_pow(attempts - 1);
                    let wait = wait.map(|w| w.min(self.cfg.max_wait)).unwrap_or(backoff);
                    tracing::warn!(attempt = attempts, ?wait, "model request retried: {e}");
                    tokio::time::sleep(wait).await;
                }
                Err((e, _)) => break Err(self.scrub(&e.to_string())),
            }
        };
        let ex = Exchange {
            provider: self.cfg.provider,
            model: self.cfg.model.clone(),
            request: body,
            raw: self.scrub(&raw),
            reply,
            attempts,
        };
        if let Some(path) = &self.cfg.record
            && let Err(e) = record::append(path, &ex)
        {
            tracing::warn!(
                "cannot record the model exchange to {}: {e}",
                path.display()
            );
        }
        ex
    }

    /// A recorded response text through the provider's parser.
    fn parse_raw(
        &self,
        raw: &str,
        stream: bool,
        names: &ToolNames,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, String> {
        let mut asm = self.assembler();
        let mut reply = if stream {
            let mut lines = stream::Lines::default();
            let mut all = lines.push(raw.as_bytes());
            all.extend(lines.finish());
            for line in all {
                if let Some(d) = asm.line(&line).map_err(|e| e.to_string())? {
                    on_text(&d);
                }
            }
            asm.finish().map_err(|e| e.to_string())?
        } else {
            let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
            asm.whole(&v).map_err(|e| e.to_string())?
        };
        names.map_back(&mut reply.tool_calls);
        Ok(reply)
    }

    fn assembler(&self) -> Box<dyn stream::Assembler> {
        match self.cfg.provider {
            Provider::Openai => Box::new(openai::Stream::default()),
            Provider::Anthropic => Box::new(anthropic::Stream::default()),
            Provider::Ollama => Box::new(ollama::Stream::default()),
        }
    }

    async fn attempt(
        &self,
        body: &Value,
        stream: bool,
        names: &ToolNames,
        raw: &mut String,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, (LlmError, Option<Duration>)> {
        let url = self.url();
        let mut rb = self.http.post(&url).json(body);
        let key = self.key().await.map_err(|e| (e, None))?;
        if let Some(key) = &key {
            rb = match self.cfg.provider {
                Provider::Anthropic => rb.header("x-api-key", key.expose_secret()),
                _ => rb.bearer_auth(key.expose_secret()),
            };
        }
        if self.cfg.provider == Provider::Anthropic {
            rb = rb.header("anthropic-version", "2023-06-01");
        }
        let transport = |e: reqwest::Error| {
            (
                LlmError::Transport {
                    url: url.clone(),
                    message: e.to_string(),
                },
                None,
            )
        };
        let resp = rb.send().await.map_err(transport)?;
        let status = resp.status();
        if !status.is_success() {
            let wait = retry_after(resp.headers());
            let text = resp.text().await.unwrap_or_default();
            return Err((
                LlmError::Status {
                    url,
                    status: status.as_u16(),
                    body: text.chars().take(500).collect(),
                },
                wait,
            ));
        }
        let provider = self.cfg.provider;
        let mut asm = self.assembler();
        if !stream {
            let text = resp.text().await.map_err(transport)?;
            raw.push_str(&text);
            let v: Value = serde_json::from_str(&text).map_err(|e| {
                (
                    LlmError::Malformed {
                        provider: provider.name(),
                        detail: format!("response is not JSON: {e}"),
                    },
                    None,
                )
            })?;
            let mut reply = asm.whole(&v).map_err(|e| (e, None))?;
            names.map_back(&mut reply.tool_calls);
            if !reply.text.is_empty() {
                on_text(&reply.text);
            }
            return Ok(reply);
        }
        let mut lines = stream::Lines::default();
        let mut bytes = resp.bytes_stream();
        use futures::StreamExt;
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk.map_err(|e| {
                (
                    LlmError::Truncated {
                        provider: provider.name(),
                        detail: format!("the connection failed mid-stream: {e}"),
                    },
                    None,
                )
            })?;
            raw.push_str(&String::from_utf8_lossy(&chunk));
            for line in lines.push(&chunk) {
                if let Some(delta) = asm.line(&line).map_err(|e| (e, None))? {
                    on_text(&delta);
                }
            }
        }
        if let Some(line) = lines.finish()
            && let Some(delta) = asm.line(&line).map_err(|e| (e, None))?
        {
            on_text(&delta);
        }
        let mut reply = asm.finish().map_err(|e| (e, None))?;
        names.map_back(&mut reply.tool_calls);
        Ok(reply)
    }
}

/// Mask secrets in every string of a request body. Key-based masking would hit the wire
/// format's own fields (`max_tokens`), so only the text is scanned.
fn redact_strings(r: &crate::policy::redact::Redactor, v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(masked) = r.redact(s) {
                *s = masked;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(r, x)),
        Value::Object(o) => o.values_mut().for_each(|x| redact_strings(r, x)),
        _ => {}
    }
}

/// `retry-after` as seconds (the form rate limiters send) or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let secs = (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds();
    Some(Duration::from_millis(secs.max(0) as u64))
}

/// Parse the arguments text a model streamed for one call; empty text is `{}`.
fn parse_args(provider: &'static str, name: &str, text: &str) -> Result<Value, LlmError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|e| LlmError::Malformed {
        provider,
        detail: format!(
            "arguments of tool call {name} are not JSON ({e}): {}",
            clip(text, 200)
        ),
    })
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}
