//! The live transport: routes each request to its HTTP endpoint, kube client, PostgreSQL server or
//! AWS signer, with the credentials it needs and every response masked.

use super::{
    Body, BoxFuture, DEFAULT_MAX_BODY, Endpoint, LazyAuth, Request, Response, SecretHeader,
    Transport, encode_query,
};
use crate::config::ResolvedAuth;
use crate::integrations::error::{ErrorKind, IntegrationError};
use crate::policy::redact::Redactor;
use secrecy::ExposeSecret;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The live transport: reqwest for HTTP endpoints, kube's client (kubeconfig, in-cluster, exec plugins)
/// for a Kubernetes cluster that has no plain URL configured.
pub struct LiveTransport {
    pub(super) http: reqwest::Client,
    pub(super) endpoints: BTreeMap<String, Endpoint>,
    /// kube clients by integration (`kubernetes`, `kubernetes@<cluster>`).
    kube: BTreeMap<String, (kube::Client, Duration)>,
    postgres: Option<Arc<crate::integrations::postgres::PostgresBackend>>,
    aws: Option<Arc<crate::integrations::aws::AwsBackend>>,
    pub(super) keyring: Arc<crate::secrets::Keyring>,
    pub(super) redactor: Redactor,
    pub(super) max_body: usize,
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
    pub(super) async fn auth_of(
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
    pub fn with_aws(mut self, backend: crate::integrations::aws::AwsBackend) -> Self {
        self.aws = Some(Arc::new(backend));
        self
    }

    /// Routes `postgres` statements to this server.
    pub fn with_postgres(
        mut self,
        backend: crate::integrations::postgres::PostgresBackend,
    ) -> Self {
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

    /// The secret headers of an endpoint, read now or through the keyring.
    pub(super) async fn secret_headers_of(
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

    pub(super) fn finish(&self, status: u16, bytes: &[u8]) -> Response {
        let mut body = Body::from_bytes(bytes);
        body.redact(&self.redactor);
        Response { status, body }
    }

    pub(super) fn reqwest_error(
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
            if req.integration == crate::integrations::aws::NAME
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
            || (integration == crate::integrations::aws::NAME && self.aws.is_some())
    }
}
