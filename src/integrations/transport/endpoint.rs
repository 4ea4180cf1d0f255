//! How to reach one HTTP integration: its URL, timeout, credentials (read or by reference) and
//! retry policy.

use super::DEFAULT_TIMEOUT;
use crate::config::ResolvedAuth;
use secrecy::ExposeSecret;
use std::time::Duration;

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
    pub(super) fn secrets(&self) -> Vec<String> {
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
