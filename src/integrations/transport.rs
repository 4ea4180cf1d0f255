//! The seam to the outside world: one `Transport` that is live (HTTP), recording (live + a case file) or replaying.

use super::error::{ErrorKind, IntegrationError};
use super::stored::{RawRecording, Stored};
use crate::config::ResolvedAuth;
use crate::policy::redact::Redactor;
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A boxed future, so `Transport` can be a trait object.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Bodies larger than this are refused rather than buffered (a runaway log or a wrong URL must not eat memory).
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;
/// Used when an endpoint does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Query parameters that carry the wall clock. They are left out of recordings so a replay, which runs
/// at the case's clock rather than the recording's, still matches.
pub const VOLATILE_QUERY_KEYS: [&str; 9] = [
    "start",
    "end",
    "time",
    "since",
    "until",
    "StartTime",
    "EndTime",
    "from",
    "to",
];

/// A request body.
#[derive(Clone, Debug, PartialEq)]
pub enum RequestBody {
    Json(Value),
    /// A Kubernetes merge patch (`application/merge-patch+json`).
    MergePatch(Value),
    /// A JSON patch (`application/json-patch+json`).
    JsonPatch(Value),
    /// A Kubernetes strategic merge patch (`application/strategic-merge-patch+json`): lists such as
    /// `containers` merge by their `name` key instead of being replaced whole.
    StrategicMergePatch(Value),
}

impl RequestBody {
    fn content_type(&self) -> &'static str {
        match self {
            RequestBody::Json(_) => "application/json",
            RequestBody::MergePatch(_) => "application/merge-patch+json",
            RequestBody::JsonPatch(_) => "application/json-patch+json",
            RequestBody::StrategicMergePatch(_) => "application/strategic-merge-patch+json",
        }
    }
    fn value(&self) -> &Value {
        match self {
            RequestBody::Json(v)
            | RequestBody::MergePatch(v)
            | RequestBody::JsonPatch(v)
            | RequestBody::StrategicMergePatch(v) => v,
        }
    }
}

/// One request to one integration, relative to its base URL.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub integration: String,
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<RequestBody>,
    /// An `Accept` header, when the request needs a representation other than the default
    /// (Kubernetes' metadata-only lists, so Secret values never leave the cluster).
    pub accept: Option<String>,
}

impl Request {
    pub fn new(integration: &str, method: &str, path: impl Into<String>) -> Self {
        Request {
            integration: integration.to_string(),
            method: method.to_ascii_uppercase(),
            path: path.into(),
            query: Vec::new(),
            body: None,
            accept: None,
        }
    }

    pub fn accept(mut self, media_type: &str) -> Self {
        self.accept = Some(media_type.to_string());
        self
    }

    pub fn get(integration: &str, path: impl Into<String>) -> Self {
        Self::new(integration, "GET", path)
    }

    pub fn query(mut self, key: &str, value: impl Into<String>) -> Self {
        self.query.push((key.to_string(), value.into()));
        self
    }

    pub fn query_opt(self, key: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(v) => self.query(key, v),
            None => self,
        }
    }

    pub fn body(mut self, body: RequestBody) -> Self {
        self.body = Some(body);
        self
    }

    /// `GET /api/v1/nodes`, for errors and logs.
    pub fn describe(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// An error about this request.
    pub fn error(&self, kind: ErrorKind) -> IntegrationError {
        IntegrationError::new(&self.integration, self.describe(), kind)
    }
}

/// A response body: JSON when it parses as JSON, text otherwise (pod logs, error pages).
/// In a recording a text body is a JSON string and anything else is the JSON body itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Json(Value),
    Text(String),
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Body::Json(v) => v.serialize(s),
            Body::Text(t) => t.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(t) => Body::Text(t),
            v => Body::Json(v),
        })
    }
}

impl Body {
    /// Classifies raw bytes: JSON when they parse, otherwise lossy UTF-8 text.
    pub fn from_bytes(bytes: &[u8]) -> Body {
        let trimmed = bytes.trim_ascii_start();
        if (trimmed.starts_with(b"{") || trimmed.starts_with(b"["))
            && let Ok(v) = serde_json::from_slice::<Value>(bytes)
        {
            return Body::Json(v);
        }
        Body::Text(String::from_utf8_lossy(bytes).into_owned())
    }

    /// Masks secrets in place.
    pub fn redact(&mut self, redactor: &Redactor) {
        match self {
            Body::Json(v) => redactor.redact_json(v),
            Body::Text(t) => {
                if let std::borrow::Cow::Owned(r) = redactor.redact(t) {
                    *t = r;
                }
            }
        }
    }

    /// The body as text (JSON is serialized).
    pub fn text(&self) -> String {
        match self {
            Body::Json(v) => v.to_string(),
            Body::Text(t) => t.clone(),
        }
    }
}

/// A response: status and (already redacted) body.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    pub body: Body,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The JSON body of a successful response, or an error naming the request and the server's message.
    pub fn json(self, req: &Request) -> Result<Value, IntegrationError> {
        let body = self.success(req)?;
        match body {
            Body::Json(v) => Ok(v),
            Body::Text(t) => Err(req.error(ErrorKind::Decode(
                match serde_json::from_str::<Value>(&t) {
                    Err(e) => format!("malformed JSON: {e}"),
                    Ok(_) => "malformed JSON".to_string(),
                },
            ))),
        }
    }

    /// The body of a successful response as text.
    pub fn text(self, req: &Request) -> Result<String, IntegrationError> {
        Ok(self.success(req)?.text())
    }

    /// The body when the status is 2xx; otherwise an error with the server's own message.
    pub fn success(self, req: &Request) -> Result<Body, IntegrationError> {
        if self.is_success() {
            return Ok(self.body);
        }
        Err(req.error(ErrorKind::Status {
            status: self.status,
            message: error_message(&self.body),
        }))
    }
}

/// The human message inside an error body: Kubernetes `Status.message`, Prometheus `error`,
/// GitHub/Alertmanager `message`, or the first line of a text body.
fn error_message(body: &Body) -> String {
    const MAX: usize = 200;
    let msg = match body {
        Body::Json(v) => ["message", "error", "reason"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| v.to_string()),
        Body::Text(t) => t.lines().next().unwrap_or("").trim().to_string(),
    };
    let mut msg: String = msg.chars().take(MAX).collect();
    if msg.is_empty() {
        msg = "no message".to_string();
    }
    msg
}

/// The seam: every integration request goes through one of these.
pub trait Transport: Send + Sync {
    /// Sends a request. Non-2xx answers are `Ok` (so they can be recorded); clients turn them into errors.
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>>;

    /// Whether this transport can reach `integration` at all.
    fn has(&self, integration: &str) -> bool;
}

/// How to reach one HTTP integration.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub base_url: String,
    pub timeout: Duration,
    pub auth: Option<ResolvedAuth>,
    /// Extra non-secret headers (e.g. Loki's `X-Scope-OrgID`).
    pub headers: Vec<(String, String)>,
    /// A credential by reference (`op://`, `vault://`), read through the keyring on first use,
    /// once the operator approved it; used when `auth` is None.
    pub lazy_auth: Option<LazyAuth>,
    /// More credential headers, beside `auth` (Datadog sends an API key and an application key):
    /// read already, or by reference through the keyring once approved.
    pub secret_headers: Vec<(String, SecretHeader)>,
    /// Wait out one rate limit (429 with a reset header) and retry 5xx answers, for APIs that
    /// ask clients to.
    pub retry: Option<RetryPolicy>,
}

/// A credential header's value: read, or a reference read on first use.
#[derive(Clone, Debug)]
pub enum SecretHeader {
    Value(secrecy::SecretString),
    Reference(String),
}

/// How an endpoint retries: a 429 is waited out once (for as long as `X-RateLimit-Reset` or
/// `Retry-After` says, up to `max_wait`), a 5xx is retried `server_errors` times with a growing pause.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    pub max_wait: Duration,
    pub server_errors: u32,
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_wait: Duration::from_secs(60),
            server_errors: 2,
            backoff: Duration::from_millis(500),
        }
    }
}

/// The shape of an `auth` whose secret is a reference, not yet read.
#[derive(Clone, Debug)]
pub enum LazyAuth {
    Bearer {
        reference: String,
    },
    Basic {
        username: String,
        reference: String,
    },
    Header {
        name: String,
        reference: String,
    },
    /// A header whose value is a fixed prefix and the secret (PagerDuty's `Token token=`).
    Prefixed {
        name: String,
        prefix: String,
        reference: String,
    },
}

impl LazyAuth {
    pub fn reference(&self) -> &str {
        match self {
            LazyAuth::Bearer { reference }
            | LazyAuth::Basic { reference, .. }
            | LazyAuth::Header { reference, .. }
            | LazyAuth::Prefixed { reference, .. } => reference,
        }
    }
}

impl Endpoint {
    pub fn new(base_url: impl Into<String>) -> Self {
        Endpoint {
            base_url: base_url.into(),
            timeout: DEFAULT_TIMEOUT,
            auth: None,
            headers: Vec::new(),
            lazy_auth: None,
            secret_headers: Vec::new(),
            retry: None,
        }
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn auth(mut self, auth: Option<ResolvedAuth>) -> Self {
        self.auth = auth;
        self
    }

    /// The secret values this endpoint sends, so responses echoing them can be masked.
    fn secrets(&self) -> Vec<String> {
        let mut out = match &self.auth {
            None => Vec::new(),
            Some(ResolvedAuth::Bearer(t)) => vec![t.expose_secret().to_string()],
            Some(ResolvedAuth::Basic { password, .. }) => {
                vec![password.expose_secret().to_string()]
            }
            Some(ResolvedAuth::Header { value, .. }) => vec![value.expose_secret().to_string()],
        };
        for (_, h) in &self.secret_headers {
            if let SecretHeader::Value(v) = h {
                out.push(v.expose_secret().to_string());
            }
        }
        out
    }
}

/// The live transport: reqwest for HTTP endpoints, kube's client (kubeconfig, in-cluster, exec plugins)
/// for a Kubernetes cluster that has no plain URL configured.
pub struct LiveTransport {
    http: reqwest::Client,
    endpoints: BTreeMap<String, Endpoint>,
    /// kube clients by integration (`kubernetes`, `kubernetes@<cluster>`).
    kube: BTreeMap<String, (kube::Client, Duration)>,
    postgres: Option<Arc<super::postgres::PostgresBackend>>,
    aws: Option<Arc<super::aws::AwsBackend>>,
    keyring: Arc<crate::secrets::Keyring>,
    redactor: Redactor,
    max_body: usize,
}

impl LiveTransport {
    pub fn new() -> Result<Self, IntegrationError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("sitrep/", env!("CARGO_PKG_VERSION")))
            // Redirects are followed in `send_http`, which decides per hop which headers may go:
            // reqwest's own policy keeps custom credential headers such as X-Api-Key.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| {
                IntegrationError::new("http", "client setup", ErrorKind::Other(e.to_string()))
            })?;
        Ok(LiveTransport {
            http,
            endpoints: BTreeMap::new(),
            kube: BTreeMap::new(),
            postgres: None,
            aws: None,
            keyring: Arc::default(),
            redactor: Redactor::new(),
            max_body: DEFAULT_MAX_BODY,
        })
    }

    /// Adds (or replaces) an HTTP endpoint; its credential becomes an exact value to redact.
    pub fn with_endpoint(mut self, integration: &str, endpoint: Endpoint) -> Self {
        self.redactor = self.redactor.and_secrets(endpoint.secrets());
        self.endpoints.insert(integration.to_string(), endpoint);
        self
    }

    /// Routes `kubernetes` requests through a kube client (used when no URL is configured).
    pub fn with_kube(self, client: kube::Client, timeout: Duration) -> Self {
        self.with_kube_for("kubernetes", client, timeout)
    }

    /// Routes requests of `integration` (`kubernetes@<cluster>`) through a kube client.
    pub fn with_kube_for(
        mut self,
        integration: &str,
        client: kube::Client,
        timeout: Duration,
    ) -> Self {
        self.kube.insert(integration.to_string(), (client, timeout));
        self
    }

    /// Where references in endpoints' `lazy_auth` are read, once approved.
    pub fn with_keyring(mut self, keyring: Arc<crate::secrets::Keyring>) -> Self {
        self.keyring = keyring;
        self
    }

    /// The credential an endpoint sends: configured, or read by reference through the keyring.
    async fn auth_of(
        &self,
        ep: &Endpoint,
        req: &Request,
    ) -> Result<Option<ResolvedAuth>, IntegrationError> {
        if ep.auth.is_some() {
            return Ok(ep.auth.clone());
        }
        let Some(lazy) = &ep.lazy_auth else {
            return Ok(None);
        };
        let value = self
            .keyring
            .get(lazy.reference())
            .await
            .map_err(|e| req.error(ErrorKind::Other(e.to_string())))?;
        crate::policy::redact::learn_secret(value.expose_secret());
        Ok(Some(match lazy {
            LazyAuth::Bearer { .. } => ResolvedAuth::Bearer(value),
            LazyAuth::Basic { username, .. } => ResolvedAuth::Basic {
                username: username.clone(),
                password: value,
            },
            LazyAuth::Header { name, .. } => ResolvedAuth::Header {
                name: name.clone(),
                value,
            },
            LazyAuth::Prefixed { name, prefix, .. } => ResolvedAuth::Header {
                name: name.clone(),
                value: secrecy::SecretString::from(format!("{prefix}{}", value.expose_secret())),
            },
        }))
    }

    /// Routes `aws` requests (`POST /{service}/{Action}`) to this signing backend.
    pub fn with_aws(mut self, backend: super::aws::AwsBackend) -> Self {
        self.aws = Some(Arc::new(backend));
        self
    }

    /// Routes `postgres` statements to this server.
    pub fn with_postgres(mut self, backend: super::postgres::PostgresBackend) -> Self {
        self.postgres = Some(Arc::new(backend));
        self
    }

    /// Also mask these exact values in every response.
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.redactor = self.redactor.and_secrets(secrets);
        self
    }

    pub fn with_max_body(mut self, max_body: usize) -> Self {
        self.max_body = max_body;
        self
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// An HTTP exchange, retried as the endpoint's policy says.
    async fn send_http(&self, ep: &Endpoint, req: &Request) -> Result<Response, IntegrationError> {
        let Some(policy) = ep.retry else {
            return self.send_http_once(ep, req).await.map(|(r, _)| r);
        };
        let mut waited = false;
        let mut server_errors = 0;
        loop {
            let (resp, reset) = self.send_http_once(ep, req).await?;
            match resp.status {
                429 if !waited => match reset.filter(|d| *d <= policy.max_wait) {
                    Some(wait) => {
                        waited = true;
                        tracing::info!(integration = %req.integration, ?wait, "rate limited; waiting for the reset");
                        tokio::time::sleep(wait).await;
                    }
                    None => return Ok(resp),
                },
                500..=599 if server_errors < policy.server_errors => {
                    server_errors += 1;
                    tokio::time::sleep(policy.backoff * server_errors).await;
                }
                _ => return Ok(resp),
            }
        }
    }

    /// The secret headers of an endpoint, read now or through the keyring.
    async fn secret_headers_of(
        &self,
        ep: &Endpoint,
        req: &Request,
    ) -> Result<Vec<(String, secrecy::SecretString)>, IntegrationError> {
        let mut out = Vec::new();
        for (name, h) in &ep.secret_headers {
            let value = match h {
                SecretHeader::Value(v) => v.clone(),
                SecretHeader::Reference(reference) => {
                    let v = self
                        .keyring
                        .get(reference)
                        .await
                        .map_err(|e| req.error(ErrorKind::Other(e.to_string())))?;
                    crate::policy::redact::learn_secret(v.expose_secret());
                    v
                }
            };
            out.push((name.clone(), value));
        }
        Ok(out)
    }

    /// One HTTP exchange (redirects followed) and, on a 429, how long the server asks to wait.
    async fn send_http_once(
        &self,
        ep: &Endpoint,
        req: &Request,
    ) -> Result<(Response, Option<Duration>), IntegrationError> {
        let invalid = |m: String| req.error(ErrorKind::Invalid(m));
        let mut url = reqwest::Url::parse(&format!(
            "{}{}",
            ep.base_url.trim_end_matches('/'),
            req.path
        ))
        .map_err(|e| invalid(format!("bad URL: {e}")))?;
        if !req.query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(req.query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        let mut method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| invalid(format!("bad method {}", req.method)))?;
        let mut body = req.body.as_ref();
        let origin = url.origin();
        // Credentials go only to the configured origin: once a redirect leaves it, no later hop gets
        // them, even one that comes back (the chain is no longer the one the operator configured).
        let mut trusted = true;
        let timeout = ep.timeout;
        let auth = self.auth_of(ep, req).await?;
        let secret_headers = self.secret_headers_of(ep, req).await?;
        let exchange = async {
            let mut hops = 0;
            loop {
                trusted &= url.origin() == origin;
                let mut b = self
                    .http
                    .request(method.clone(), url.clone())
                    .timeout(ep.timeout);
                for (k, v) in &ep.headers {
                    if trusted || !is_credential_header(k) {
                        b = b.header(k, v);
                    }
                }
                if trusted {
                    for (name, value) in &secret_headers {
                        b = b.header(name, value.expose_secret());
                    }
                    b = match &auth {
                        None => b,
                        Some(ResolvedAuth::Bearer(t)) => b.bearer_auth(t.expose_secret()),
                        Some(ResolvedAuth::Basic { username, password }) => {
                            b.basic_auth(username, Some(password.expose_secret()))
                        }
                        Some(ResolvedAuth::Header { name, value }) => {
                            b.header(name, value.expose_secret())
                        }
                    };
                }
                if let Some(accept) = &req.accept {
                    b = b.header(reqwest::header::ACCEPT, accept);
                }
                if let Some(body) = body {
                    b = b
                        .header(reqwest::header::CONTENT_TYPE, body.content_type())
                        .body(body.value().to_string());
                }
                let mut resp = b
                    .send()
                    .await
                    .map_err(|e| self.reqwest_error(req, e, timeout))?;
                let status = resp.status();
                if let Some(next) = redirect_target(&url, &resp) {
                    hops += 1;
                    if hops > MAX_REDIRECTS {
                        return Err(req.error(ErrorKind::Other(format!(
                            "more than {MAX_REDIRECTS} redirects"
                        ))));
                    }
                    let next = next.map_err(|m| req.error(ErrorKind::Other(m)))?;
                    // 301/302/303 turn a write into a GET without a body, as browsers and curl do;
                    // 307/308 repeat the request as it was.
                    if matches!(status.as_u16(), 301..=303)
                        && method != reqwest::Method::GET
                        && method != reqwest::Method::HEAD
                    {
                        method = reqwest::Method::GET;
                        body = None;
                    }
                    url = next;
                    continue;
                }
                let status = status.as_u16();
                let reset = (status == 429).then(|| rate_limit_reset(&resp)).flatten();
                if resp
                    .content_length()
                    .is_some_and(|n| n > self.max_body as u64)
                {
                    return Err(req.error(ErrorKind::TooLarge {
                        limit: self.max_body,
                    }));
                }
                let mut bytes: Vec<u8> = Vec::new();
                while let Some(chunk) = resp
                    .chunk()
                    .await
                    .map_err(|e| self.reqwest_error(req, e, timeout))?
                {
                    if bytes.len() + chunk.len() > self.max_body {
                        return Err(req.error(ErrorKind::TooLarge {
                            limit: self.max_body,
                        }));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                return Ok((status, bytes, reset));
            }
        };
        // reqwest's own timeout covers the exchange too; this one also bounds a slow trickling body
        // and the whole chain of redirects.
        let (status, bytes, reset) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| req.error(ErrorKind::Timeout(timeout)))??;
        Ok((self.finish(status, &bytes), reset))
    }

    async fn send_kube(
        &self,
        client: &kube::Client,
        timeout: Duration,
        req: &Request,
    ) -> Result<Response, IntegrationError> {
        let mut uri = req.path.clone();
        if !req.query.is_empty() {
            uri.push('?');
            uri.push_str(&encode_query(&req.query));
        }
        let mut builder = http::Request::builder()
            .method(req.method.as_str())
            .uri(uri);
        if let Some(accept) = &req.accept {
            builder = builder.header("accept", accept.as_str());
        }
        let body = match &req.body {
            Some(b) => {
                builder = builder.header("content-type", b.content_type());
                b.value().to_string().into_bytes()
            }
            None => Vec::new(),
        };
        let request = builder
            .body(kube::client::Body::from(body))
            .map_err(|e| req.error(ErrorKind::Invalid(e.to_string())))?;
        let max = self.max_body;
        let exchange = async {
            let resp = client.send(request).await.map_err(|e| {
                req.error(ErrorKind::Connect(
                    self.redactor.redact(&e.to_string()).into_owned(),
                ))
            })?;
            let status = resp.status().as_u16();
            let declared = resp
                .headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > max as u64) {
                return Err(req.error(ErrorKind::TooLarge { limit: max }));
            }
            let bytes = resp
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| req.error(ErrorKind::Connect(e.to_string())))?;
            if bytes.len() > max {
                return Err(req.error(ErrorKind::TooLarge { limit: max }));
            }
            Ok((status, bytes.to_vec()))
        };
        let (status, bytes) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| req.error(ErrorKind::Timeout(timeout)))??;
        Ok(self.finish(status, &bytes))
    }

    fn finish(&self, status: u16, bytes: &[u8]) -> Response {
        let mut body = Body::from_bytes(bytes);
        body.redact(&self.redactor);
        Response { status, body }
    }

    fn reqwest_error(
        &self,
        req: &Request,
        e: reqwest::Error,
        timeout: Duration,
    ) -> IntegrationError {
        if e.is_timeout() {
            return req.error(ErrorKind::Timeout(timeout));
        }
        // The innermost cause says what actually happened ("Connection refused"), the outer one only
        // "error sending request"; URLs never carry credentials here but are masked anyway.
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        let cause = self.redactor.redact(&cause).into_owned();
        if e.is_connect() {
            req.error(ErrorKind::Connect(cause))
        } else if e.is_decode() || e.is_body() {
            req.error(ErrorKind::Decode(cause))
        } else {
            req.error(ErrorKind::Other(cause))
        }
    }
}

impl Transport for LiveTransport {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            if let Some(ep) = self.endpoints.get(&req.integration) {
                return self.send_http(ep, req).await;
            }
            if let Some((client, timeout)) = self.kube.get(&req.integration) {
                return self.send_kube(client, *timeout, req).await;
            }
            if req.integration == "postgres"
                && let Some(pg) = &self.postgres
            {
                let mut resp = pg.send(req).await?;
                resp.body.redact(&self.redactor);
                return Ok(resp);
            }
            if req.integration == super::aws::NAME
                && let Some(aws) = &self.aws
            {
                let mut resp = aws.send(req).await?;
                resp.body.redact(&self.redactor);
                return Ok(resp);
            }
            Err(req.error(ErrorKind::NotConfigured))
        })
    }

    fn has(&self, integration: &str) -> bool {
        self.endpoints.contains_key(integration)
            || self.kube.contains_key(integration)
            || (integration == "kubernetes"
                && (self.kube.keys().chain(self.endpoints.keys()))
                    .any(|k| k.starts_with("kubernetes@")))
            || (integration == "postgres" && self.postgres.is_some())
            || (integration == super::aws::NAME && self.aws.is_some())
    }
}

/// How long a 429 asks to wait: `X-RateLimit-Reset` (seconds until the window resets, Datadog's
/// and GitHub's convention for small values) or `Retry-After` (seconds).
fn rate_limit_reset(resp: &reqwest::Response) -> Option<Duration> {
    let secs = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    secs("x-ratelimit-reset")
        .or_else(|| secs("retry-after"))
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// Redirects followed per request before giving up.
const MAX_REDIRECTS: usize = 10;

/// Headers that carry a credential and so never follow a redirect to another origin.
fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "cookie2"
    ) || ["token", "key", "secret", "auth", "password"]
        .iter()
        .any(|w| n.contains(w))
}

/// Where a redirect response points: None when it is not a redirect to follow (not 301, 302, 303,
/// 307 or 308, or no Location), else the absolute next URL or why it cannot be followed.
fn redirect_target(
    current: &reqwest::Url,
    resp: &reqwest::Response,
) -> Option<Result<reqwest::Url, String>> {
    if !matches!(resp.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = resp.headers().get(reqwest::header::LOCATION)?;
    let next = location
        .to_str()
        .map_err(|_| "redirect with a Location that is not text".to_string())
        .and_then(|l| {
            current
                .join(l)
                .map_err(|e| format!("redirect to a bad Location: {e}"))
        })
        .and_then(|u| match u.scheme() {
            "http" | "https" => Ok(u),
            other => Err(format!("redirect to a {other}: URL refused")),
        });
    Some(next)
}

/// Percent-encodes query pairs (`application/x-www-form-urlencoded`).
pub fn encode_query(pairs: &[(String, String)]) -> String {
    let mut url = match reqwest::Url::parse("http://localhost/") {
        Ok(u) => u,
        Err(_) => return String::new(),
    };
    url.query_pairs_mut()
        .extend_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    url.query().unwrap_or("").to_string()
}

/// One line of `recordings.ndjson`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub integration: String,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, Value>,
    pub status: u16,
    pub body: Body,
    /// How long the live system took to answer, written by `--record`; a watched replay waits
    /// this long. Older recordings have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Recording {
    /// The recorded query as string pairs (array values become one pair each).
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        Self::pairs_of(&self.query)
    }

    /// A recorded query as string pairs (array values become one pair each).
    pub fn pairs_of(query: &BTreeMap<String, Value>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in query {
            match v {
                Value::Array(items) => out.extend(items.iter().map(|i| (k.clone(), scalar(i)))),
                other => out.push((k.clone(), scalar(other))),
            }
        }
        out
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses a recordings file; errors name the file and line.
pub fn parse_recordings(file: &str, text: &str) -> Result<Vec<Recording>, String> {
    parse_recording_lines(file, text)
}

/// One recording a line, in whatever shape `T` keeps it; blank lines skipped, errors name the
/// file and line.
pub fn parse_recording_lines<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: T = serde_json::from_str(line)
            .map_err(|e| format!("{file}:{}: not a recording: {e}", i + 1))?;
        out.push(rec);
    }
    Ok(out)
}

/// Live, and every exchange appended to a case directory's `recordings.ndjson` (after redaction).
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    path: PathBuf,
    file: Mutex<std::fs::File>,
    /// Masks the request side (path and query carry alert values); bodies arrive masked.
    redactor: Redactor,
}

impl RecordingTransport {
    /// Appends to `dir/recordings.ndjson`, creating the directory and file as needed.
    pub fn new(inner: Arc<dyn Transport>, dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("recordings.ndjson");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(RecordingTransport {
            inner,
            path,
            file: Mutex::new(file),
            redactor: Redactor::new(),
        })
    }

    /// Masks with this redactor (the live transport's, which knows the credentials in use).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(
        &self,
        req: &Request,
        resp: &Response,
        latency: Duration,
    ) -> Result<(), IntegrationError> {
        let query: BTreeMap<String, Value> = req
            .query
            .iter()
            .filter(|(k, _)| !VOLATILE_QUERY_KEYS.contains(&k.as_str()))
            .map(|(k, v)| {
                let mut value = Value::String(v.clone());
                self.redactor.redact_json(&mut value);
                (k.clone(), value)
            })
            .collect();
        let mut body = resp.body.clone();
        // Already masked by a live transport; masked again in case the inner one is not.
        body.redact(&self.redactor);
        let rec = Recording {
            integration: req.integration.clone(),
            method: req.method.clone(),
            path: self.redactor.redact(&req.path).into_owned(),
            query,
            status: resp.status,
            body,
            latency_ms: Some(latency.as_millis().min(u128::from(u64::MAX)) as u64),
        };
        let write_err = |e: String| {
            req.error(ErrorKind::Other(format!(
                "cannot write recording {}: {e}",
                self.path.display()
            )))
        };
        let mut line = serde_json::to_string(&rec).map_err(|e| write_err(e.to_string()))?;
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| write_err("lock poisoned".to_string()))?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| write_err(e.to_string()))
    }
}

impl Transport for RecordingTransport {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let resp = self.inner.send(req).await?;
            self.append(req, &resp, started.elapsed())?;
            Ok(resp)
        })
    }

    fn has(&self, integration: &str) -> bool {
        self.inner.has(integration)
    }
}

#[derive(Default)]
struct ReplayState {
    /// Base recordings first, then each applied overlay; later layers win.
    layers: Vec<Vec<Stored>>,
    /// How often each (layer, index) has answered, so repeated identical requests play back in order.
    used: HashMap<(usize, usize), usize>,
}

/// Longest recorded latency a paced replay waits.
const MAX_RECORDED_WAIT_MS: u64 = 10_000;

/// Answers from recordings, by the case-directory matching rule.
pub struct ReplayTransport {
    state: Mutex<ReplayState>,
    redactor: Redactor,
    /// Simulated latency range in ms (0, 0 = answer at once); the demo uses it so a recorded world
    /// unfolds at the pace of a live one.
    pace_ms: Mutex<(u64, u64)>,
    /// Wait the latency a recording carries (on whenever pacing is; alone for a watched case).
    recorded_pace: std::sync::atomic::AtomicBool,
    /// Requests answered and, once [`ReplayTransport::count_bytes`] is on, the bytes of the
    /// bodies they were answered with as the live API would send them (benchmarks).
    traffic: Traffic,
}

/// What a replay has served.
#[derive(Default)]
struct Traffic {
    requests: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
    count_bytes: std::sync::atomic::AtomicBool,
    /// Time spent counting, so a benchmark can leave it out of what it measures.
    counting_ns: std::sync::atomic::AtomicU64,
}

/// Counts what is written to it, keeping nothing.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of a body as sent on the wire (compact JSON, or the text).
fn wire_size(body: &Body) -> u64 {
    match body {
        Body::Text(t) => t.len() as u64,
        Body::Json(v) => {
            let mut c = ByteCounter(0);
            match serde_json::to_writer(&mut c, v) {
                Ok(()) => c.0,
                Err(_) => 0,
            }
        }
    }
}

impl ReplayTransport {
    pub fn new(recordings: Vec<Recording>) -> Self {
        Self::from_stored(recordings.into_iter().map(Stored::from).collect())
    }

    /// Answers from recordings whose bodies are still JSON text (a case directory as loaded):
    /// each body is parsed when it answers.
    pub fn from_raw(recordings: Vec<RawRecording>) -> Self {
        Self::from_stored(recordings.into_iter().map(Stored::from).collect())
    }

    fn from_stored(recordings: Vec<Stored>) -> Self {
        ReplayTransport {
            state: Mutex::new(ReplayState {
                layers: vec![recordings],
                used: HashMap::new(),
            }),
            redactor: Redactor::new(),
            pace_ms: Mutex::new((0, 0)),
            recorded_pace: std::sync::atomic::AtomicBool::new(false),
            traffic: Traffic::default(),
        }
    }

    /// Also count the bytes of every answer from now on (it costs a pass over each body).
    pub fn count_bytes(&self) {
        self.traffic
            .count_bytes
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Requests answered so far (matched or not), the bytes of the bodies answered since
    /// [`ReplayTransport::count_bytes`], and the time counting them took.
    pub fn traffic(&self) -> (u64, u64, Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.traffic.requests.load(Relaxed),
            self.traffic.bytes.load(Relaxed),
            Duration::from_nanos(self.traffic.counting_ns.load(Relaxed)),
        )
    }

    /// Pace the replay: each answer waits the latency it was recorded with, or, for recordings
    /// without one, a delay in `min..=max` that is the same for the same request on every run, so
    /// a replayed world keeps the rhythm of a live one. `(0, 0)` answers at once.
    pub fn set_pace(&self, min: Duration, max: Duration) {
        if let Ok(mut pace) = self.pace_ms.lock() {
            let lo = min.as_millis().min(u128::from(u64::MAX)) as u64;
            let hi = max.as_millis().min(u128::from(u64::MAX)) as u64;
            *pace = (lo.min(hi), hi.max(lo));
        }
        self.recorded_pace
            .store(!max.is_zero(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Wait only the latencies recordings carry; answer the others at once (a watched case:
    /// its rhythm is the one recorded, nothing is invented). `set_pace(0, 0)` turns it off.
    pub fn pace_recorded_only(&self) {
        if let Ok(mut pace) = self.pace_ms.lock() {
            *pace = (0, 0);
        }
        self.recorded_pace
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn delay_for(&self, req: &Request, recorded: Option<u64>) -> Duration {
        use std::hash::{Hash, Hasher};
        let (lo, hi) = self.pace_ms.lock().map(|p| *p).unwrap_or((0, 0));
        if let Some(ms) = recorded
            && self
                .recorded_pace
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            // A hung call in the recording must not stall a demo for minutes.
            return Duration::from_millis(ms.min(MAX_RECORDED_WAIT_MS));
        }
        if hi == 0 {
            return Duration::ZERO;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&req.integration, &req.method, &req.path, &req.query).hash(&mut hasher);
        Duration::from_millis(lo + hasher.finish() % (hi - lo + 1))
    }

    /// From now on these recordings win over everything loaded before (an effect of an action).
    pub fn overlay(&self, recordings: Vec<Recording>) {
        self.overlay_stored(recordings.into_iter().map(Stored::from).collect());
    }

    /// [`ReplayTransport::overlay`] with bodies still JSON text.
    pub fn overlay_raw(&self, recordings: Vec<RawRecording>) {
        self.overlay_stored(recordings.into_iter().map(Stored::from).collect());
    }

    fn overlay_stored(&self, recordings: Vec<Stored>) {
        if let Ok(mut st) = self.state.lock() {
            st.layers.push(recordings);
        }
    }

    /// Finds the answer: the newest layer with a match; in it the most specific recording (most query
    /// pairs); among equals the first not yet played, else the last.
    fn answer(&self, req: &Request) -> Option<Stored> {
        let mut st = self.state.lock().ok()?;
        let mut chosen: Option<(usize, usize)> = None;
        for (li, layer) in st.layers.iter().enumerate().rev() {
            let candidates: Vec<usize> = layer
                .iter()
                .enumerate()
                .filter(|(_, r)| r.matches(req))
                .map(|(i, _)| i)
                .collect();
            let Some(best) = candidates.iter().map(|&i| layer[i].pairs.len()).max() else {
                continue;
            };
            let top: Vec<usize> = candidates
                .into_iter()
                .filter(|&i| layer[i].pairs.len() == best)
                .collect();
            let pick = top
                .iter()
                .copied()
                .find(|&i| !st.used.contains_key(&(li, i)))
                .or_else(|| top.last().copied());
            chosen = pick.map(|i| (li, i));
            break;
        }
        let (li, i) = chosen?;
        *st.used.entry((li, i)).or_insert(0) += 1;
        st.layers.get(li).and_then(|l| l.get(i)).cloned()
    }
}

impl Transport for ReplayTransport {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            let found = self.answer(req);
            {
                use std::sync::atomic::Ordering::Relaxed;
                self.traffic.requests.fetch_add(1, Relaxed);
                if let Some(rec) = &found
                    && self.traffic.count_bytes.load(Relaxed)
                {
                    let started = std::time::Instant::now();
                    let size = match rec.raw_len() {
                        Some(n) => n as u64,
                        None => wire_size(&rec.body()),
                    };
                    self.traffic.bytes.fetch_add(size, Relaxed);
                    let spent = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
                    self.traffic.counting_ns.fetch_add(spent, Relaxed);
                }
            }
            let delay = self.delay_for(req, found.as_ref().and_then(|r| r.latency_ms));
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let rec = found.ok_or_else(|| req.error(ErrorKind::NoRecording))?;
            let mut body = rec.body();
            // Cases come from elsewhere; mask them like any live answer.
            body.redact(&self.redactor);
            Ok(Response {
                status: rec.status,
                body,
            })
        })
    }

    fn has(&self, integration: &str) -> bool {
        self.state
            .lock()
            .map(|st| {
                st.layers.iter().flatten().any(|r| {
                    r.integration == integration
                        || r.integration
                            .strip_prefix(integration)
                            .is_some_and(|rest| rest.starts_with('@'))
                })
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(path: &str, query: Value, body: Value) -> Recording {
        Recording {
            integration: "prometheus".into(),
            method: "GET".into(),
            path: path.into(),
            query: serde_json::from_value(query).unwrap_or_default(),
            status: 200,
            body: Body::Json(body),
            latency_ms: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn paced_replay_answers_after_a_stable_delay_in_range() {
        let t = ReplayTransport::new(vec![rec("/api/v1/rules", json!({}), json!("r"))]);
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "unpaced replay must not wait"
        );

        t.set_pace(Duration::from_millis(150), Duration::from_millis(900));
        let delay = t.delay_for(&req, None);
        assert!((150..=900).contains(&delay.as_millis()), "{delay:?}");
        assert_eq!(
            delay,
            t.delay_for(&req, None),
            "the same request gets the same delay"
        );
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), delay);
    }

    #[tokio::test(start_paused = true)]
    async fn paced_replay_waits_the_recorded_latency_and_a_skip_drops_it() {
        let mut slow = rec("/api/v1/rules", json!({}), json!("r"));
        slow.latency_ms = Some(2_400);
        let t = ReplayTransport::new(vec![slow]);
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO, "unpaced: at once");
        t.set_pace(Duration::from_millis(150), Duration::from_millis(900));
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::from_millis(2_400));
        // The skip-ahead key turns pacing off; recorded latencies no longer wait either.
        t.set_pace(Duration::ZERO, Duration::ZERO);
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO);
        // A watched case waits what was recorded, and invents nothing for the rest.
        t.pace_recorded_only();
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::from_millis(2_400));
        let bare = Request::new("prometheus", "GET", "/api/v1/other");
        t.overlay(vec![rec("/api/v1/other", json!({}), json!("o"))]);
        let started = tokio::time::Instant::now();
        assert!(t.send(&bare).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[test]
    fn recordings_without_a_latency_still_load() {
        let old =
            r#"{"integration":"prometheus","method":"GET","path":"/x","status":200,"body":"ok"}"#;
        let r: Recording = serde_json::from_str(old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.latency_ms, None);
        let line = serde_json::to_string(&r).unwrap_or_default();
        assert!(!line.contains("latency_ms"), "{line}");
    }

    #[tokio::test]
    async fn recording_writes_how_long_the_answer_took() {
        let mut slow = rec("/api/v1/rules", json!({}), json!("r"));
        slow.latency_ms = Some(60);
        let inner = ReplayTransport::new(vec![slow]);
        inner.set_pace(Duration::from_millis(1), Duration::from_millis(1));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let t =
            RecordingTransport::new(Arc::new(inner), dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        assert!(t.send(&req).await.is_ok());
        let text = std::fs::read_to_string(t.path()).unwrap_or_default();
        let r: Recording = serde_json::from_str(text.lines().last().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(
            r.latency_ms.is_some_and(|ms| (60..5_000).contains(&ms)),
            "{r:?}"
        );
    }

    #[tokio::test]
    async fn most_specific_recording_wins_and_extra_request_pairs_are_tolerated() {
        let t = ReplayTransport::new(vec![
            rec("/api/v1/query", json!({}), json!("generic")),
            rec("/api/v1/query", json!({"query": "up"}), json!("up")),
        ]);
        let req = Request::get("prometheus", "/api/v1/query")
            .query("query", "up")
            .query("time", "1");
        assert_eq!(
            t.send(&req).await.map(|r| r.body),
            Ok(Body::Json(json!("up")))
        );
        let other = Request::get("prometheus", "/api/v1/query").query("query", "x");
        assert_eq!(
            t.send(&other).await.map(|r| r.body),
            Ok(Body::Json(json!("generic")))
        );
        let missing = Request::get("prometheus", "/api/v1/rules");
        let err = t.send(&missing).await.err();
        assert!(err.is_some_and(|e| e.is_no_recording()));
    }

    #[tokio::test]
    async fn overlays_win_and_repeats_play_in_order() {
        let t = ReplayTransport::new(vec![
            rec("/a", json!({}), json!(1)),
            rec("/a", json!({}), json!(2)),
        ]);
        let req = Request::get("prometheus", "/a");
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(t.send(&req).await.map(|r| r.body).ok());
        }
        assert_eq!(
            seen,
            vec![
                Some(Body::Json(json!(1))),
                Some(Body::Json(json!(2))),
                Some(Body::Json(json!(2)))
            ]
        );
        t.overlay(vec![rec("/a", json!({}), json!("after"))]);
        assert_eq!(
            t.send(&req).await.map(|r| r.body),
            Ok(Body::Json(json!("after")))
        );
    }

    #[test]
    fn bodies_are_json_or_text() {
        assert_eq!(Body::from_bytes(b" {\"a\":1}"), Body::Json(json!({"a": 1})));
        assert_eq!(Body::from_bytes(b"{broken"), Body::Text("{broken".into()));
        assert_eq!(
            Body::from_bytes(b"log line\n"),
            Body::Text("log line\n".into())
        );
    }

    #[test]
    fn recordings_errors_name_file_and_line() {
        let text = "{\"integration\":\"loki\",\"method\":\"GET\",\"path\":\"/x\",\"query\":{},\"status\":200,\"body\":\"ok\"}\nnot json\n";
        let err = parse_recordings("recordings.ndjson", text)
            .err()
            .unwrap_or_default();
        assert!(err.starts_with("recordings.ndjson:2:"), "{err}");
    }
}
