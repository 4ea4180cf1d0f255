//! How an HTTP check reaches its server (the live transport, the configured credential), and the
//! checks of Prometheus, Loki, Alertmanager, GitHub, PagerDuty and the model: one documented read
//! each, giving the version the server reports.

use super::credentials::{self, Credential};
use super::{Finding, Options, Planned, request_timeout};
use crate::config::{Auth, Config, ResolvedAuth};
use crate::integrations::error::IntegrationError;
use crate::integrations::transport::{Endpoint, LiveTransport, Request, Response, Transport};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

/// How to reach one HTTP integration for a check.
pub struct Target {
    /// The integration, as the transport and the config name it.
    pub name: &'static str,
    pub url: String,
    pub timeout_secs: u64,
    pub headers: Vec<(String, String)>,
    /// Turns a resolved credential into what the server wants (PagerDuty's `Token token=`).
    pub shape: fn(ResolvedAuth) -> ResolvedAuth,
    /// The config key naming the credential, for messages.
    pub field: String,
}

impl Target {
    pub fn new(name: &'static str, url: &str, timeout_secs: u64) -> Target {
        Target {
            name,
            url: url.trim_end_matches('/').to_string(),
            timeout_secs,
            headers: Vec::new(),
            shape: |a| a,
            field: format!("integrations.{name}.auth"),
        }
    }

    /// The credential is named by another key than `integrations.<name>.auth`.
    pub fn with_field(mut self, field: &str) -> Target {
        self.field = field.to_string();
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Target {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// A transport reaching one integration, and the reference its credential is, when it is one
/// (then requests go without a credential: a reference is never read here).
pub struct Reach {
    pub transport: LiveTransport,
    pub reference: Option<(String, String)>,
    pub url: String,
    pub name: &'static str,
}

impl Reach {
    /// Builds the transport for `target` with the credential `auth` names.
    pub async fn new(
        config: &Config,
        target: Target,
        auth: Option<&Auth>,
    ) -> Result<Reach, Finding> {
        let credential = credentials::of(config, &target.field, auth).await?;
        let (resolved, reference) = match credential {
            Credential::None => (None, None),
            Credential::Resolved(a) => (Some((target.shape)(a)), None),
            Credential::Reference { reference, note } => (None, Some((reference, note))),
        };
        let mut ep = Endpoint::new(target.url.clone())
            .timeout(request_timeout(target.timeout_secs))
            .auth(resolved);
        ep.headers = target.headers;
        let transport = LiveTransport::new()
            .map_err(|e| Finding::failed(e.to_string(), ""))?
            .with_endpoint(target.name, ep);
        Ok(Reach {
            transport,
            reference,
            url: target.url,
            name: target.name,
        })
    }

    /// Sends a request; a transport error becomes a failed finding with its reason.
    pub async fn send(&self, req: &Request) -> Result<Response, Finding> {
        self.transport
            .send(req)
            .await
            .map_err(|e| Finding::from_error(&e, &self.url))
    }

    /// The JSON of a 2xx answer, else a failed finding (`401 unauthorized`); with a credential by
    /// reference a 401/403 is what an unauthenticated request gets, so the server is reachable
    /// and the finding is ok, saying what was not tested.
    pub async fn get_json(&self, path: &str) -> Result<Value, Finding> {
        self.get_json_with(path, &[]).await
    }

    /// As [`Reach::get_json`], with query pairs.
    pub async fn get_json_with(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Value, Finding> {
        let mut req = Request::get(self.name, path);
        for (k, v) in query {
            req = req.query(k, *v);
        }
        let resp = self.send(&req).await?;
        if let Some((reference, note)) = &self.reference
            && matches!(resp.status, 401 | 403)
        {
            return Err(Finding::ok(
                None,
                format!(
                    "reachable (HTTP {} without the credential); {note}, {reference} not read",
                    resp.status
                ),
            ));
        }
        resp.json(&req).map_err(|e| self.failed(&e))
    }

    fn failed(&self, e: &IntegrationError) -> Finding {
        Finding::from_error(e, &self.url)
    }

    /// The note to add to an ok detail when the credential is a reference.
    pub fn reference_note(&self) -> Option<String> {
        self.reference
            .as_ref()
            .map(|(r, n)| format!("{n}, {r} not read"))
    }
}

/// Joins the non-empty parts of a detail.
fn detail(parts: &[Option<String>]) -> String {
    parts
        .iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("; ")
}

fn text_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `GET path` and the version at `pointer` in its answer.
async fn version_check(reach: Result<Reach, Finding>, path: &str, pointer: &str) -> Finding {
    let reach = match reach {
        Ok(r) => r,
        Err(f) => return f,
    };
    match reach.get_json(path).await {
        Err(f) => f,
        Ok(v) => {
            let version = text_at(&v, pointer);
            let missing = version.is_none().then(|| format!("no version at {path}"));
            Finding::ok(version, detail(&[missing, reach.reference_note()]))
        }
    }
}

pub fn prometheus(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(p) = config.integrations.prometheus.clone() else {
        return vec![Planned::absent("prometheus")];
    };
    let config = config.clone();
    vec![Planned::run("prometheus", async move {
        let target = Target::new("prometheus", &p.url, p.timeout_secs);
        let reach = Reach::new(&config, target, p.auth.as_ref()).await;
        version_check(reach, "/api/v1/status/buildinfo", "/data/version").await
    })]
}

pub fn alertmanager(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(a) = config.integrations.alertmanager.clone() else {
        return vec![Planned::absent("alertmanager")];
    };
    let config = config.clone();
    vec![Planned::run("alertmanager", async move {
        let target = Target::new("alertmanager", &a.url, a.timeout_secs);
        let reach = Reach::new(&config, target, a.auth.as_ref()).await;
        version_check(reach, "/api/v2/status", "/versionInfo/version").await
    })]
}

pub fn loki(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(l) = config.integrations.loki.clone() else {
        return vec![Planned::absent("loki")];
    };
    let config = config.clone();
    vec![Planned::run("loki", async move {
        let mut target = Target::new("loki", &l.url, l.timeout_secs);
        if let Some(org) = &l.org_id {
            target = target.with_header("X-Scope-OrgID", org);
        }
        let reach = Reach::new(&config, target, l.auth.as_ref()).await;
        version_check(reach, "/loki/api/v1/status/buildinfo", "/version").await
    })]
}

pub fn github(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(g) = config.integrations.github.clone() else {
        return vec![Planned::absent("github")];
    };
    let config = config.clone();
    vec![Planned::run("github", async move {
        let target = Target::new("github", &g.url, g.timeout_secs)
            .with_header("Accept", "application/vnd.github+json");
        let reach = match Reach::new(&config, target, g.auth.as_ref()).await {
            Ok(r) => r,
            Err(f) => return f,
        };
        let repo = g.repo.trim_matches('/');
        let path = format!("/repos/{repo}");
        match reach.get_json(&path).await {
            Err(mut f) => {
                if f.detail.starts_with("404") {
                    f.fix = Some(format!(
                        "repository {repo} not found or not visible to the token: check `repo` and the token's repository access"
                    ));
                }
                f
            }
            Ok(v) => {
                let can =
                    |p: &str| v.pointer(&format!("/permissions/{p}")) == Some(&Value::Bool(true));
                let access = if v.get("permissions").is_none() {
                    None
                } else if can("push") {
                    Some("read and write".to_string())
                } else if can("pull") {
                    Some("read only: reverting a pull request needs write".to_string())
                } else {
                    Some("no read access".to_string())
                };
                Finding::ok(
                    None,
                    detail(&[
                        Some(format!("{repo} readable")),
                        access,
                        reach.reference_note(),
                    ]),
                )
            }
        }
    })]
}

/// PagerDuty wants `Authorization: Token token=KEY`; a bearer-kind secret is sent that way.
fn pagerduty_auth(auth: ResolvedAuth) -> ResolvedAuth {
    match auth {
        ResolvedAuth::Bearer(key) => ResolvedAuth::Header {
            name: "Authorization".into(),
            value: SecretString::from(format!("Token token={}", key.expose_secret())),
        },
        other => other,
    }
}

pub fn pagerduty(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(p) = config.integrations.pagerduty.clone() else {
        return vec![Planned::absent("pagerduty")];
    };
    let config = config.clone();
    vec![Planned::run("pagerduty", async move {
        let mut target = Target::new("pagerduty", &p.url, p.timeout_secs)
            .with_header("Accept", "application/vnd.pagerduty+json;version=2");
        target.shape = pagerduty_auth;
        let reach = match Reach::new(&config, target, p.auth.as_ref()).await {
            Ok(r) => r,
            Err(f) => return f,
        };
        // `GET /abilities` answers any valid REST key with what the account may do.
        match reach.get_json("/abilities").await {
            Err(f) => f,
            Ok(v) => {
                let n = v
                    .get("abilities")
                    .and_then(Value::as_array)
                    .map(Vec::len)
                    .unwrap_or(0);
                let from = p
                    .from_email
                    .is_none()
                    .then(|| "no from_email: acknowledging and resolving need it".to_string());
                Finding::ok(
                    None,
                    detail(&[
                        Some(format!("key accepted, {n} account abilities")),
                        from,
                        reach.reference_note(),
                    ]),
                )
            }
        }
    })]
}

/// The model: the server answers and knows the configured model.
pub fn llm(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(l) = config.llm.clone() else {
        return vec![Planned::absent("llm")];
    };
    let config = config.clone();
    vec![Planned::run("llm", async move {
        let provider = l.provider.to_ascii_lowercase();
        let auth = l.api_key_env.as_ref().map(|var| match provider.as_str() {
            "anthropic" => Auth::Header {
                header: "x-api-key".into(),
                value_env: var.clone(),
            },
            _ => Auth::Bearer {
                token_env: var.clone(),
            },
        });
        let mut target = Target::new("llm", &l.base_url, 10).with_field("llm.api_key_env");
        if provider == "anthropic" {
            target = target.with_header("anthropic-version", "2023-06-01");
        }
        let reach = match Reach::new(&config, target, auth.as_ref()).await {
            Ok(r) => r,
            Err(f) => return f,
        };
        let model = l.model.clone();
        let listed = match provider.as_str() {
            // Ollama's native API: every pulled model, as `name:tag`.
            "ollama" => reach.get_json("/api/tags").await.map(|v| {
                v.get("models")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|m| text_at(m, "/name").or_else(|| text_at(m, "/model")))
                    .collect::<Vec<_>>()
            }),
            // OpenAI-compatible servers and Anthropic both list their models under `data[].id`.
            "anthropic" => reach
                .get_json_with("/v1/models", &[("limit", "1000")])
                .await
                .map(|v| ids(&v)),
            _ => reach.get_json("/models").await.map(|v| ids(&v)),
        };
        let names = match listed {
            Err(f) => return f,
            Ok(n) => n,
        };
        let found = names.iter().any(|n| {
            n == &model || n.strip_suffix(":latest") == Some(model.as_str()) || {
                // OpenAI-compatible servers sometimes list `models/<id>` or `org/<id>`.
                n.rsplit('/').next() == Some(model.as_str())
            }
        });
        if found {
            Finding::ok(
                None,
                detail(&[
                    Some(format!("{provider}: model {model} available")),
                    reach.reference_note(),
                ]),
            )
        } else {
            let some: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
            Finding::failed(
                format!(
                    "model {model} not found at {} ({} models{})",
                    reach.url,
                    names.len(),
                    if some.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", some.join(", "))
                    }
                ),
                if provider == "ollama" {
                    format!("run `ollama pull {model}` or correct [llm] model")
                } else {
                    "correct [llm] model to one the server lists".to_string()
                },
            )
        }
    })]
}

fn ids(v: &Value) -> Vec<String> {
    v.get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| text_at(m, "/id"))
        .collect()
}
