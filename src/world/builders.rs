//! The clients a live world is built from: each configured integration's endpoint and credential
//! (read now or by reference), the PostgreSQL and AWS backends, kube clients, MCP servers.

use super::{DEFAULT_NAMESPACE, WorldError, clients};
use crate::config::{Config, ResolvedAuth};
use crate::integrations::transport::{
    Endpoint, LazyAuth, LiveTransport, RetryPolicy, SecretHeader, Transport,
};
use crate::secrets::{Keyring, SecretRef};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn resolve_auth(
    config: &Config,
    key: &str,
    auth: Option<&crate::config::Auth>,
) -> Result<Option<ResolvedAuth>, WorldError> {
    let path = config
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.toml"));
    auth.map(|a| a.resolve(&path, key))
        .transpose()
        .map_err(|e| WorldError::Config(e.to_string()))
}

/// An `auth` whose secret is an `op://` or `vault://` reference: registered with the keyring and
/// read on first use, after approval. `None` for environment variables (read at start, as ever).
fn lazy_auth(
    key: &str,
    integration: &str,
    auth: Option<&crate::config::Auth>,
    keyring: &Keyring,
) -> Result<Option<LazyAuth>, WorldError> {
    use crate::config::Auth;
    let Some(auth) = auth else { return Ok(None) };
    let text = auth.secret_env();
    if !(text.starts_with("op://") || text.starts_with("vault://")) {
        return Ok(None);
    }
    let reference =
        SecretRef::parse(text).map_err(|e| WorldError::Config(format!("{key}.auth: {e}")))?;
    keyring.register(integration, &reference);
    let reference = reference.to_string();
    Ok(Some(match auth {
        Auth::Bearer { .. } => LazyAuth::Bearer { reference },
        Auth::Basic { username, .. } => LazyAuth::Basic {
            username: username.clone(),
            reference,
        },
        Auth::Header { header, .. } => LazyAuth::Header {
            name: header.clone(),
            reference,
        },
    }))
}

/// The auth an endpoint sends: read now (environment), or later by reference (keyring).
fn endpoint_auth(
    config: &Config,
    integration: &str,
    auth: Option<&crate::config::Auth>,
    keyring: &Keyring,
) -> Result<(Option<ResolvedAuth>, Option<LazyAuth>), WorldError> {
    let key = format!("integrations.{integration}");
    match lazy_auth(&key, integration, auth, keyring)? {
        Some(lazy) => Ok((None, Some(lazy))),
        None => Ok((resolve_auth(config, &key, auth)?, None)),
    }
}

pub(super) fn endpoint(
    url: &str,
    timeout_secs: u64,
    auth: Option<ResolvedAuth>,
    lazy: Option<LazyAuth>,
) -> Endpoint {
    let mut ep = Endpoint::new(url)
        .timeout(Duration::from_secs(timeout_secs.max(1)))
        .auth(auth);
    ep.lazy_auth = lazy;
    ep
}

/// The live transport with the configured MCP servers connected in front of it (integration `mcp`).
pub(super) async fn with_mcp(config: &Config, live: LiveTransport) -> Arc<dyn Transport> {
    if config.mcp.servers.is_empty() {
        return Arc::new(live);
    }
    let redactor = live.redactor().clone();
    Arc::new(
        crate::integrations::mcp::McpGateway::connect(
            &config.mcp.servers,
            Arc::new(live),
            redactor,
        )
        .await,
    )
}

pub(super) fn mcp_names(config: &Config) -> Vec<String> {
    config.mcp.servers.iter().map(|s| s.name.clone()).collect()
}

/// Builds the live transport from config: (transport, default namespace, GitHub repository).
pub(super) async fn live_transport(
    config: &Config,
    keyring: &Arc<Keyring>,
) -> Result<(LiveTransport, String, Option<String>), WorldError> {
    let int = &config.integrations;
    let mut t = LiveTransport::new()
        .map_err(|e| WorldError::Config(e.to_string()))?
        .with_keyring(keyring.clone());
    let mut namespace = DEFAULT_NAMESPACE.to_string();
    if let Some(p) = &int.prometheus {
        let (auth, lazy) = endpoint_auth(config, "prometheus", p.auth.as_ref(), keyring)?;
        t = t.with_endpoint("prometheus", endpoint(&p.url, p.timeout_secs, auth, lazy));
    }
    if let Some(a) = &int.alertmanager {
        let (auth, lazy) = endpoint_auth(config, "alertmanager", a.auth.as_ref(), keyring)?;
        t = t.with_endpoint("alertmanager", endpoint(&a.url, a.timeout_secs, auth, lazy));
    }
    if let Some(l) = &int.loki {
        let (auth, lazy) = endpoint_auth(config, "loki", l.auth.as_ref(), keyring)?;
        let mut ep = endpoint(&l.url, l.timeout_secs, auth, lazy);
        if let Some(org) = &l.org_id {
            ep.headers.push(("X-Scope-OrgID".into(), org.clone()));
        }
        t = t.with_endpoint("loki", ep);
    }
    if let Some(p) = &int.pagerduty {
        // PagerDuty wants `Authorization: Token token=KEY`: a bearer-kind secret is sent that way,
        // read now (environment) or by reference once approved.
        let key = "integrations.pagerduty";
        let lazy = match lazy_auth(key, "pagerduty", p.auth.as_ref(), keyring)? {
            Some(LazyAuth::Bearer { reference }) => Some(LazyAuth::Prefixed {
                name: "Authorization".into(),
                prefix: "Token token=".into(),
                reference,
            }),
            other => other,
        };
        let resolved = match lazy {
            Some(_) => None,
            None => resolve_auth(config, key, p.auth.as_ref())?,
        };
        let auth = match resolved {
            Some(ResolvedAuth::Bearer(key)) => {
                let key = secrecy::ExposeSecret::expose_secret(&key).to_string();
                let value = secrecy::SecretString::from(format!("Token token={key}"));
                // The bare key is masked too, should an answer echo it.
                t = t.with_secrets(vec![key]);
                Some(ResolvedAuth::Header {
                    name: "Authorization".into(),
                    value,
                })
            }
            other => other,
        };
        let mut ep = endpoint(&p.url, p.timeout_secs, auth, lazy);
        ep.headers.push((
            "Accept".into(),
            "application/vnd.pagerduty+json;version=2".into(),
        ));
        if let Some(from) = &p.from_email {
            ep.headers.push(("From".into(), from.clone()));
        }
        t = t.with_endpoint("pagerduty", ep);
    }
    if let Some(d) = &int.datadog {
        let mut ep = endpoint(&d.base_url(), d.timeout_secs, None, None);
        for (field, header, reference) in [
            ("api_key", "DD-API-KEY", &d.api_key),
            ("app_key", "DD-APPLICATION-KEY", &d.app_key),
        ] {
            let key = format!("integrations.datadog.{field}");
            let parsed = SecretRef::parse(reference)
                .map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
            let value = match &parsed {
                // An environment variable is read now, as every `auth` is.
                SecretRef::Env(var) => match std::env::var(var) {
                    Ok(v) if !v.is_empty() => SecretHeader::Value(secrecy::SecretString::from(v)),
                    _ => {
                        return Err(WorldError::Config(format!(
                            "{key}: environment variable {var} is not set"
                        )));
                    }
                },
                other => {
                    keyring.register("datadog", other);
                    SecretHeader::Reference(other.to_string())
                }
            };
            ep.secret_headers.push((header.to_string(), value));
        }
        ep.headers
            .push(("Accept".into(), "application/json".into()));
        ep.retry = Some(RetryPolicy::default());
        t = t.with_endpoint("datadog", ep);
    }
    if let Some(pg) = &int.postgres {
        let password = match &pg.password {
            Some(text) => {
                let reference = SecretRef::parse(text).map_err(|e| {
                    WorldError::Config(format!("integrations.postgres.password: {e}"))
                })?;
                keyring.register("postgres", &reference);
                Some(reference.to_string())
            }
            None => None,
        };
        let timeout = Duration::from_secs(pg.timeout_secs.max(1));
        let backend = clients::postgres_backend(pg, password, timeout, keyring.clone())
            .map_err(WorldError::Config)?;
        t = t.with_postgres(backend);
    }
    if let Some(a) = &int.aws {
        // References are registered with the keyring here and read once approved.
        let timeout = Duration::from_secs(a.timeout_secs.max(1));
        let backend =
            clients::aws_backend(a, timeout, keyring.clone()).map_err(WorldError::Config)?;
        t = t.with_aws(backend);
    }
    let mut repo = None;
    if let Some(g) = &int.github {
        let (auth, lazy) = endpoint_auth(config, "github", g.auth.as_ref(), keyring)?;
        let mut ep = endpoint(&g.url, g.timeout_secs, auth, lazy);
        ep.headers
            .push(("Accept".into(), "application/vnd.github+json".into()));
        t = t.with_endpoint("github", ep);
        repo = Some(g.repo.clone());
    }
    if let Some(k) = &int.kubernetes
        && !k.named_clusters().is_empty()
    {
        let timeout = Duration::from_secs(k.timeout_secs.max(1));
        for c in k.named_clusters() {
            let integration = crate::integrations::kubernetes::integration_of(Some(&c.name));
            match (&c.server, &c.context) {
                (Some(url), _) => {
                    let mut ep = endpoint(url, k.timeout_secs, None, None);
                    if let Some(token) = &c.token {
                        let key = format!("integrations.kubernetes.clusters.{}.token", c.name);
                        let reference = SecretRef::parse(token)
                            .map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
                        match &reference {
                            SecretRef::Env(var) => match std::env::var(var) {
                                Ok(v) if !v.is_empty() => {
                                    ep.auth =
                                        Some(ResolvedAuth::Bearer(secrecy::SecretString::from(v)));
                                }
                                _ => {
                                    return Err(WorldError::Config(format!(
                                        "{key}: environment variable {var} is not set"
                                    )));
                                }
                            },
                            other => {
                                keyring.register("kubernetes", other);
                                ep.lazy_auth = Some(LazyAuth::Bearer {
                                    reference: other.to_string(),
                                });
                            }
                        }
                    }
                    t = t.with_endpoint(&integration, ep);
                }
                (None, context) => {
                    let mut one = k.clone();
                    one.context = context.clone();
                    let client = clients::kube_client(&one, timeout).await?;
                    t = t.with_kube_for(&integration, client, timeout);
                }
            }
        }
        if let Some(ns) = &k.namespace {
            namespace = ns.clone();
        }
    } else if let Some(k) = &int.kubernetes {
        let (auth, lazy) = endpoint_auth(config, "kubernetes", k.auth.as_ref(), keyring)?;
        let timeout = Duration::from_secs(k.timeout_secs.max(1));
        if let Some(url) = &k.url {
            t = t.with_endpoint("kubernetes", endpoint(url, k.timeout_secs, auth, lazy));
        } else {
            let client = clients::kube_client(k, timeout).await?;
            namespace = client.default_namespace().to_string();
            t = t.with_kube(client, timeout);
        }
        if let Some(ns) = &k.namespace {
            namespace = ns.clone();
        }
    }
    Ok((t, namespace, repo))
}

/// The configured clusters' names, the default first; empty for one unnamed cluster.
pub(super) fn cluster_names(config: &Config) -> Vec<String> {
    config
        .integrations
        .kubernetes
        .as_ref()
        .map(|k| k.named_clusters().into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}
