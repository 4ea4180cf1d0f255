//! The live side of the `aws` integration: turns logical requests (`POST /{service}/{Action}`)
//! into signed AWS calls (SigV4 by `aws-sigv4`) and their answers back into logical JSON.

use super::credentials::{self, AwsCredentials};
use super::wire;
use crate::integrations::error::{ErrorKind, IntegrationError};
use crate::integrations::transport::{Body, DEFAULT_MAX_BODY, Request, Response, encode_query};
use crate::policy::redact::{Redactor, learn_secret};
use crate::secrets::{Keyring, SecretRef};
use secrecy::ExposeSecret;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The integration name of every AWS request.
pub const NAME: &str = "aws";
const RDS_VERSION: &str = "2014-10-31";
const CLOUDWATCH_VERSION: &str = "2010-08-01";
const PI_TARGET_PREFIX: &str = "PerformanceInsightsv20180227";
const FORM_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";
const JSON_11_TYPE: &str = "application/x-amz-json-1.1";
/// Retries of a throttled or server-failed call (the whole read stays within its timeout).
const RETRIES: u32 = 2;
/// Pages followed per call (RDS `Marker`, CloudWatch `NextToken`) before the rest is left out.
const MAX_PAGES: usize = 50;

/// How to reach AWS and with which credentials.
#[derive(Clone, Debug, PartialEq)]
pub struct AwsSettings {
    pub region: String,
    /// One base URL for every service (a VPC endpoint, a local emulator); absent: the public
    /// `https://{service}.{region}.amazonaws.com`.
    pub endpoint_url: Option<String>,
    /// A profile of `~/.aws/credentials` / `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`,
    /// `AWS_CONFIG_FILE`).
    pub profile: Option<String>,
    /// The access key ID, written out or as a reference (`env:`, `op://`, `vault://`).
    pub access_key_id: Option<String>,
    /// The secret access key, as a reference; with `access_key_id`, it replaces the chain.
    pub secret_access_key: Option<String>,
    /// A session token, as a reference.
    pub session_token: Option<String>,
    pub timeout: Duration,
}

impl AwsSettings {
    pub fn new(region: impl Into<String>) -> Self {
        AwsSettings {
            region: region.into(),
            endpoint_url: None,
            profile: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            timeout: crate::integrations::transport::DEFAULT_TIMEOUT,
        }
    }
}

/// Where the key ID is.
#[derive(Clone, Debug)]
enum KeyId {
    Literal(String),
    Reference(String),
}

/// Credentials by reference, resolved through the keyring.
#[derive(Clone, Debug)]
struct References {
    key_id: KeyId,
    secret: String,
    token: Option<String>,
}

/// Signs and sends AWS calls for the live transport.
pub struct AwsBackend {
    settings: AwsSettings,
    references: Option<References>,
    keyring: Arc<Keyring>,
    http: reqwest::Client,
    chain: tokio::sync::Mutex<Option<AwsCredentials>>,
    redactor: Redactor,
}

impl std::fmt::Debug for AwsBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsBackend")
            .field("region", &self.settings.region)
            .field("endpoint_url", &self.settings.endpoint_url)
            .finish_non_exhaustive()
    }
}

fn reference(key: &str, text: &str, keyring: &Keyring) -> Result<String, String> {
    let r = SecretRef::parse(text).map_err(|e| format!("integrations.aws.{key}: {e}"))?;
    keyring.register(NAME, &r);
    Ok(r.to_string())
}

impl AwsBackend {
    /// Checks the settings now and registers the credential references with the keyring (they
    /// are read on first use, once approved); connects later.
    pub fn new(settings: AwsSettings, keyring: Arc<Keyring>) -> Result<Self, String> {
        let region_ok = !settings.region.is_empty()
            && settings
                .region
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !region_ok {
            return Err(format!(
                "integrations.aws.region: {:?} is not a region",
                settings.region
            ));
        }
        if let Some(u) = &settings.endpoint_url {
            let url = reqwest::Url::parse(u)
                .map_err(|e| format!("integrations.aws.endpoint_url: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err("integrations.aws.endpoint_url: an http:// or https:// URL".into());
            }
        }
        let references = match (&settings.access_key_id, &settings.secret_access_key) {
            (None, None) => None,
            (Some(id), Some(secret)) => Some(References {
                key_id: if crate::secrets::is_reference(id) {
                    KeyId::Reference(reference("access_key_id", id, &keyring)?)
                } else {
                    KeyId::Literal(id.trim().to_string())
                },
                secret: reference("secret_access_key", secret, &keyring)?,
                token: settings
                    .session_token
                    .as_deref()
                    .map(|t| reference("session_token", t, &keyring))
                    .transpose()?,
            }),
            _ => {
                return Err(
                    "integrations.aws: access_key_id and secret_access_key go together".into(),
                );
            }
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("sitrep/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("integrations.aws: HTTP client: {e}"))?;
        Ok(AwsBackend {
            settings,
            references,
            keyring,
            http,
            chain: tokio::sync::Mutex::new(None),
            redactor: Redactor::new(),
        })
    }

    pub fn settings(&self) -> &AwsSettings {
        &self.settings
    }

    /// The credentials to sign with; their secret parts are taught to every redactor.
    async fn credentials(&self, req: &Request) -> Result<AwsCredentials, IntegrationError> {
        let creds = match &self.references {
            Some(refs) => {
                let get = |r: String| async move {
                    self.keyring
                        .get(&r)
                        .await
                        .map_err(|e| req.error(ErrorKind::Other(e.to_string())))
                };
                let secret = get(refs.secret.clone()).await?;
                let access_key_id = match &refs.key_id {
                    KeyId::Literal(id) => id.clone(),
                    KeyId::Reference(r) => get(r.clone()).await?.expose_secret().trim().to_string(),
                };
                let session_token = match &refs.token {
                    Some(r) => Some(get(r.clone()).await?),
                    None => None,
                };
                AwsCredentials {
                    access_key_id,
                    secret_access_key: secret,
                    session_token,
                }
            }
            None => {
                let mut cached = self.chain.lock().await;
                match &*cached {
                    Some(c) => c.clone(),
                    None => {
                        let c = credentials::from_chain(
                            &|k| std::env::var(k).ok(),
                            self.settings.profile.as_deref(),
                        )
                        .map_err(|e| req.error(ErrorKind::Other(e)))?;
                        *cached = Some(c.clone());
                        c
                    }
                }
            }
        };
        for s in creds.secrets() {
            learn_secret(&s);
        }
        Ok(creds)
    }

    /// The base URL of a service.
    fn url(&self, service: &str) -> String {
        match &self.settings.endpoint_url {
            Some(u) => format!("{}/", u.trim_end_matches('/')),
            None => {
                let suffix = if self.settings.region.starts_with("cn-") {
                    "amazonaws.com.cn"
                } else {
                    "amazonaws.com"
                };
                format!("https://{service}.{}.{suffix}/", self.settings.region)
            }
        }
    }

    /// Signs and sends one POST, again (signed anew) when AWS throttles or fails on its side;
    /// returns the status and body bytes.
    async fn post(
        &self,
        req: &Request,
        service: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), IntegrationError> {
        let mut attempt: u32 = 0;
        loop {
            let (status, bytes) = self.post_once(req, service, headers, body).await?;
            if attempt >= RETRIES || !retryable(status, &bytes) {
                return Ok((status, bytes));
            }
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(200 << attempt)).await;
        }
    }

    async fn post_once(
        &self,
        req: &Request,
        service: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), IntegrationError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let creds = self.credentials(req).await?;
        let url = self.url(service);
        let identity = aws_credential_types::Credentials::new(
            creds.access_key_id.clone(),
            creds.secret_access_key.expose_secret().to_string(),
            creds
                .session_token
                .as_ref()
                .map(|t| t.expose_secret().to_string()),
            None,
            "sitrep",
        )
        .into();
        let signing_err = |e: String| req.error(ErrorKind::Invalid(format!("cannot sign: {e}")));
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.settings.region)
            .name(service)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| signing_err(e.to_string()))?
            .into();
        let signable = SignableRequest::new(
            "POST",
            url.as_str(),
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| signing_err(e.to_string()))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| signing_err(e.to_string()))?
            .into_parts();
        let mut b = self
            .http
            .post(&url)
            .timeout(self.settings.timeout)
            .body(body.to_vec());
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        for (k, v) in instructions.headers() {
            b = b.header(k, v);
        }
        let mut resp = b.send().await.map_err(|e| self.http_error(req, e))?;
        let status = resp.status().as_u16();
        if resp
            .content_length()
            .is_some_and(|n| n > DEFAULT_MAX_BODY as u64)
        {
            return Err(req.error(ErrorKind::TooLarge {
                limit: DEFAULT_MAX_BODY,
            }));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.http_error(req, e))? {
            if bytes.len() + chunk.len() > DEFAULT_MAX_BODY {
                return Err(req.error(ErrorKind::TooLarge {
                    limit: DEFAULT_MAX_BODY,
                }));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((status, bytes))
    }

    fn http_error(&self, req: &Request, e: reqwest::Error) -> IntegrationError {
        if e.is_timeout() {
            return req.error(ErrorKind::Timeout(self.settings.timeout));
        }
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        let cause = self.redactor.redact(&cause).into_owned();
        if e.is_connect() {
            req.error(ErrorKind::Connect(cause))
        } else {
            req.error(ErrorKind::Other(cause))
        }
    }

    /// A raw signed Query-protocol call (`Action=…&Version=…&…`): the status and the XML text.
    /// Not a transport path: nothing here is recorded or replayed.
    pub async fn signed_query(
        &self,
        service: &str,
        version: &str,
        params: &[(String, String)],
    ) -> Result<(u16, String), IntegrationError> {
        let action = params
            .iter()
            .find(|(k, _)| k == "Action")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        let req = Request::new(NAME, "POST", format!("/{service}/{action}"));
        let mut all = vec![("Version".to_string(), version.to_string())];
        all.extend(params.iter().cloned());
        let body = encode_query(&all);
        let (status, bytes) = self
            .post(
                &req,
                service,
                &[("content-type", FORM_TYPE)],
                body.as_bytes(),
            )
            .await?;
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// One Query-protocol call: the XML of a 2xx answer, or the logical error response.
    async fn query(
        &self,
        req: &Request,
        service: &str,
        version: &str,
        action: &str,
        params: Vec<(String, String)>,
    ) -> Result<Result<String, Response>, IntegrationError> {
        let mut all = vec![
            ("Action".to_string(), action.to_string()),
            ("Version".to_string(), version.to_string()),
        ];
        all.extend(params);
        let body = encode_query(&all);
        let (status, bytes) = self
            .post(
                req,
                service,
                &[("content-type", FORM_TYPE)],
                body.as_bytes(),
            )
            .await?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if (200..300).contains(&status) {
            return Ok(Ok(text));
        }
        let (code, message) = wire::query_error(&text).unwrap_or_else(|| {
            (
                String::new(),
                text.lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect(),
            )
        });
        Ok(Err(error_response(status, &code, &message)))
    }

    /// Sends a logical request; the answer is logical JSON (or a logical error with the
    /// service's status, `{"Code", "Message"}`).
    pub async fn send(&self, req: &Request) -> Result<Response, IntegrationError> {
        let timeout = self.settings.timeout;
        tokio::time::timeout(timeout, self.dispatch(req))
            .await
            .map_err(|_| req.error(ErrorKind::Timeout(timeout)))?
    }

    async fn dispatch(&self, req: &Request) -> Result<Response, IntegrationError> {
        if !req.method.eq_ignore_ascii_case("POST") {
            return Err(req.error(ErrorKind::Invalid("AWS calls are POST".into())));
        }
        let mut parts = req.path.trim_start_matches('/').splitn(2, '/');
        let service = parts.next().unwrap_or("");
        let action = parts.next().unwrap_or("");
        match (service, action) {
            ("rds", "DescribeDBInstances") => {
                self.rds_paged(
                    req,
                    action,
                    &["DBInstanceIdentifier"],
                    "DBInstances",
                    wire::db_instances,
                )
                .await
            }
            ("rds", "DescribeEvents") => {
                self.rds_paged(
                    req,
                    action,
                    &["SourceIdentifier", "SourceType", "StartTime", "EndTime"],
                    "Events",
                    wire::events,
                )
                .await
            }
            ("monitoring", "GetMetricData") => self.metric_data(req).await,
            ("pi", "GetResourceMetrics" | "DescribeDimensionKeys") => self.pi(req, action).await,
            _ => Err(req.error(ErrorKind::Invalid(format!(
                "{service} {action} is not an AWS read sitrep makes"
            )))),
        }
    }

    async fn rds_paged(
        &self,
        req: &Request,
        action: &str,
        keys: &[&str],
        list: &str,
        parse: fn(&str) -> Result<wire::Page, wire::WireError>,
    ) -> Result<Response, IntegrationError> {
        let params = passed(req, keys);
        let mut items = Vec::new();
        let mut marker: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut p = params.clone();
            if let Some(m) = &marker {
                p.push(("Marker".into(), m.clone()));
            }
            let xml = match self.query(req, "rds", RDS_VERSION, action, p).await? {
                Ok(xml) => xml,
                Err(resp) => return Ok(resp),
            };
            let (page, next) = parse(&xml).map_err(|e| req.error(ErrorKind::Decode(e)))?;
            items.extend(page);
            marker = next;
            if marker.is_none() {
                break;
            }
        }
        let mut out = Map::new();
        out.insert(list.to_string(), Value::Array(items));
        Ok(ok(Value::Object(out)))
    }

    async fn metric_data(&self, req: &Request) -> Result<Response, IntegrationError> {
        let mut params = passed(req, &["StartTime", "EndTime"]);
        params.push(("ScanBy".into(), "TimestampAscending".into()));
        if let Some(body) = req.body.as_ref().map(body_value)
            && let Value::Object(m) = body
        {
            for (k, v) in m {
                if k != "ScanBy" && k != "NextToken" {
                    wire::flatten(k, v, &mut params);
                }
            }
        }
        let mut pages = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut p = params.clone();
            if let Some(t) = &next {
                p.push(("NextToken".into(), t.clone()));
            }
            let xml = match self
                .query(req, "monitoring", CLOUDWATCH_VERSION, "GetMetricData", p)
                .await?
            {
                Ok(xml) => xml,
                Err(resp) => return Ok(resp),
            };
            let (page, token) =
                wire::metric_data(&xml).map_err(|e| req.error(ErrorKind::Decode(e)))?;
            pages.extend(page);
            next = token;
            if next.is_none() {
                break;
            }
        }
        Ok(ok(wire::merge_metric_pages(pages)))
    }

    async fn pi(&self, req: &Request, action: &str) -> Result<Response, IntegrationError> {
        let mut body = match req.body.as_ref().map(body_value) {
            Some(Value::Object(m)) => m.clone(),
            None => Map::new(),
            Some(_) => {
                return Err(req.error(ErrorKind::Invalid(
                    "the body of a Performance Insights call is an object".into(),
                )));
            }
        };
        for (k, v) in &req.query {
            match k.as_str() {
                "Identifier" => {
                    body.insert(k.clone(), Value::String(v.clone()));
                }
                "StartTime" | "EndTime" => {
                    let t = wire::parse_time(v).ok_or_else(|| {
                        req.error(ErrorKind::Invalid(format!("{k} {v:?} is not RFC 3339")))
                    })?;
                    body.insert(k.clone(), json!(t.timestamp()));
                }
                _ => {}
            }
        }
        let target = format!("{PI_TARGET_PREFIX}.{action}");
        let bytes = Value::Object(body).to_string();
        let (status, answer) = self
            .post(
                req,
                "pi",
                &[
                    ("content-type", JSON_11_TYPE),
                    ("x-amz-target", target.as_str()),
                ],
                bytes.as_bytes(),
            )
            .await?;
        let parsed = Body::from_bytes(&answer);
        if (200..300).contains(&status) {
            return match parsed {
                Body::Json(v) => Ok(ok(v)),
                Body::Text(t) => Err(req.error(ErrorKind::Decode(format!(
                    "Performance Insights answered non-JSON: {}",
                    t.chars().take(80).collect::<String>()
                )))),
            };
        }
        let (code, message) = match &parsed {
            Body::Json(v) => (
                v.get("__type")
                    .and_then(Value::as_str)
                    .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
                    .unwrap_or_default(),
                ["message", "Message"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(Value::as_str))
                    .unwrap_or("")
                    .to_string(),
            ),
            Body::Text(t) => (
                String::new(),
                t.lines().next().unwrap_or("").chars().take(200).collect(),
            ),
        };
        Ok(error_response(status, &code, &message))
    }
}

/// Whether an answer is worth another try: the service failed or throttled the caller.
fn retryable(status: u16, body: &[u8]) -> bool {
    if matches!(status, 500 | 502 | 503 | 504) {
        return true;
    }
    if !matches!(status, 400 | 429) {
        return false;
    }
    let text = String::from_utf8_lossy(body);
    ["Throttling", "RequestLimitExceeded", "TooManyRequests"]
        .iter()
        .any(|code| text.contains(code))
}

/// The logical request's query pairs that are also wire parameters of this call.
fn passed(req: &Request, keys: &[&str]) -> Vec<(String, String)> {
    req.query
        .iter()
        .filter(|(k, v)| keys.contains(&k.as_str()) && !v.is_empty())
        .cloned()
        .collect()
}

fn body_value(b: &crate::integrations::transport::RequestBody) -> &Value {
    use crate::integrations::transport::RequestBody;
    match b {
        RequestBody::Json(v)
        | RequestBody::MergePatch(v)
        | RequestBody::JsonPatch(v)
        | RequestBody::StrategicMergePatch(v) => v,
    }
}

fn ok(v: Value) -> Response {
    Response {
        status: 200,
        body: Body::Json(v),
    }
}

/// The logical form of an AWS error: `{"Code", "Message"}` with the service's status.
fn error_response(status: u16, code: &str, message: &str) -> Response {
    let mut m = Map::new();
    if !code.is_empty() {
        m.insert("Code".into(), Value::String(code.to_string()));
    }
    m.insert(
        "Message".into(),
        Value::String(if message.is_empty() {
            "no message".into()
        } else {
            message.to_string()
        }),
    );
    Response {
        status,
        body: Body::Json(Value::Object(m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_and_server_failures_are_retried_client_errors_not() {
        let throttled = b"<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>";
        assert!(retryable(400, throttled));
        assert!(retryable(400, br#"{"__type":"ThrottlingException"}"#));
        assert!(retryable(503, b""));
        assert!(!retryable(404, b"<Code>DBInstanceNotFound</Code>"));
        assert!(!retryable(403, b"<Code>SignatureDoesNotMatch</Code>"));
        assert!(!retryable(200, b"Throttling"));
    }

    #[test]
    fn settings_are_checked_and_references_registered() {
        let keyring = Arc::new(Keyring::new());
        let mut s = AwsSettings::new("eu-west-1");
        s.access_key_id = Some("AKIAEXAMPLE".into());
        s.secret_access_key = Some("op://ops/aws/secret".into());
        s.session_token = Some("env:AWS_SESSION_TOKEN".into());
        let b = AwsBackend::new(s.clone(), keyring.clone());
        assert!(b.is_ok());
        let refs: Vec<String> = keyring.references().into_iter().map(|(r, _)| r).collect();
        assert_eq!(refs, vec!["env:AWS_SESSION_TOKEN", "op://ops/aws/secret"]);
        assert_eq!(
            b.map(|b| b.url("rds")).unwrap_or_default(),
            "https://rds.eu-west-1.amazonaws.com/"
        );
        let mut bad = s.clone();
        bad.secret_access_key = None;
        assert!(AwsBackend::new(bad, keyring.clone()).is_err());
        let mut bad = s.clone();
        bad.endpoint_url = Some("localhost:4566".into());
        assert!(AwsBackend::new(bad, keyring.clone()).is_err());
        let mut bad = s;
        bad.region = "eu west".into();
        assert!(AwsBackend::new(bad, keyring).is_err());
    }
}
