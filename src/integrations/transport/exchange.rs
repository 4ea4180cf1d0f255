//! One live HTTP exchange: rate limits waited out and server errors retried as the endpoint's
//! policy says, redirects followed with credentials kept to their origin, bodies bounded.

use super::{Endpoint, LiveTransport, Request, Response};
use crate::config::ResolvedAuth;
use crate::integrations::error::{ErrorKind, IntegrationError};
use secrecy::ExposeSecret;
use std::time::Duration;

impl LiveTransport {
    /// An HTTP exchange, retried as the endpoint's policy says.
    pub(super) async fn send_http(
        &self,
        ep: &Endpoint,
        req: &Request,
    ) -> Result<Response, IntegrationError> {
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
