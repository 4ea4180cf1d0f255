//! Configuration: config.toml from the config dir (SITREP_CONFIG overrides), with strict validation.
//!
//! Secrets are never written in the file: an `auth` table names the environment variable that holds
//! the token or password, and [`Auth::resolve`] reads it into a [`SecretString`] that lives in memory
//! only. Nothing here implements `Serialize` for a resolved secret.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable that points at the config file to use instead of the default one.
pub const CONFIG_ENV: &str = "SITREP_CONFIG";
/// Environment variable that replaces the data directory (sessions, logs).
pub const DATA_DIR_ENV: &str = "SITREP_DATA_DIR";

/// Why a configuration could not be loaded. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax errors, unknown keys and values of the wrong type.
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    /// Well-formed but unacceptable values (a URL without a scheme, a zero timeout, ...).
    #[error("{}: key `{key}`: expected {expected}, found {found}", path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        expected: String,
        found: String,
    },
    /// An `auth` table names an environment variable that is not set.
    #[error("{}: key `{key}`: environment variable {var} is not set (it should hold the secret)", path.display())]
    MissingSecret {
        path: PathBuf,
        key: String,
        var: String,
    },
}

/// The whole configuration. Every section is optional; a missing file means all defaults.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub integrations: Integrations,
    #[serde(default)]
    pub policy: Policy,
    #[serde(default)]
    pub ui: Ui,
    #[serde(default)]
    pub inbox: Inbox,
    #[serde(default)]
    pub paths: Paths,
    /// `[serve]`: limits of `sitrep serve`.
    #[serde(default)]
    pub serve: Serve,
    /// `[llm]`: the model that investigates and chats; absent means the rules alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<Llm>,
    /// `[[mcp.servers]]`: MCP servers whose tools join the catalog.
    #[serde(default, skip_serializing_if = "Mcp::is_empty")]
    pub mcp: Mcp,
    /// `[notify.slack]`: messages to Slack about investigations `sitrep serve` runs.
    #[serde(default, skip_serializing_if = "Notify::is_empty")]
    pub notify: Notify,
    /// Action name -> key, e.g. `approve = "a"`, `quit = "q"`, `half_page_down = "ctrl-d"`.
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
    /// Where this configuration was read from (None for built-in defaults).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// `[paths]`: files of sitrep's own beyond the built-in ones.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    /// Extra runbooks directory, on top of the built-in ones (`--runbooks DIR` overrides it);
    /// a relative path is read from the config file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runbooks: Option<PathBuf>,
}

/// `[integrations.<name>]`: each is present only when configured.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Integrations {
    pub kubernetes: Option<Kubernetes>,
    pub prometheus: Option<Endpoint>,
    pub loki: Option<Loki>,
    pub alertmanager: Option<Endpoint>,
    pub github: Option<GitHub>,
    pub pagerduty: Option<PagerDuty>,
    pub postgres: Option<Postgres>,
    /// `[integrations.aws]`: RDS, CloudWatch and Performance Insights.
    pub aws: Option<Aws>,
    /// `[integrations.jira]`: where investigations file their issue.
    pub jira: Option<Jira>,
    /// `[integrations.servicenow]`: where investigations file their incident.
    pub servicenow: Option<ServiceNow>,
    /// `[integrations.datadog]`: metrics, monitors, events and logs.
    pub datadog: Option<Datadog>,
}

impl Integrations {
    /// Names of the configured integrations, in a fixed order.
    pub fn configured(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.kubernetes.is_some() {
            out.push("kubernetes");
        }
        if self.prometheus.is_some() {
            out.push("prometheus");
        }
        if self.loki.is_some() {
            out.push("loki");
        }
        if self.alertmanager.is_some() {
            out.push("alertmanager");
        }
        if self.github.is_some() {
            out.push("github");
        }
        if self.pagerduty.is_some() {
            out.push("pagerduty");
        }
        if self.postgres.is_some() {
            out.push("postgres");
        }
        if self.aws.is_some() {
            out.push("aws");
        }
        if self.jira.is_some() {
            out.push("jira");
        }
        if self.servicenow.is_some() {
            out.push("servicenow");
        }
        if self.datadog.is_some() {
            out.push("datadog");
        }
        out
    }
}

fn default_timeout() -> u64 {
    10
}

/// A plain HTTP endpoint (Prometheus, Alertmanager).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub url: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub auth: Option<Auth>,
}

/// `[integrations.kubernetes]`: either a kubeconfig (and context) or an explicit API server URL.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// API server URL; when absent the kubeconfig's server is used.
    #[serde(default)]
    pub url: Option<String>,
    /// kubeconfig path; when absent `$KUBECONFIG` or `~/.kube/config`.
    #[serde(default)]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context; when absent the current context.
    #[serde(default)]
    pub context: Option<String>,
    /// Namespace used when an alert carries none.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub auth: Option<Auth>,
    /// Several clusters by kubeconfig context (`["prod-eu", "prod-us"]`), each named as its context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<String>,
    /// `[[integrations.kubernetes.clusters]]`: several clusters, each by context or by server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<KubeCluster>,
}

/// One cluster of several: a kubeconfig `context`, or a `server` URL with a `token` reference.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubeCluster {
    /// How alerts (`cluster`, `kube_cluster_name`, ... labels), `--context` and reports name it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The API server URL, instead of a context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Where the bearer token for `server` is (`env:VAR`, `op://...`, `vault://...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Namespace used when an alert carries none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Kubernetes {
    /// The clusters configured by name, in order (the first is the default); empty for one
    /// cluster configured the single way (`url` or `context`).
    pub fn named_clusters(&self) -> Vec<KubeCluster> {
        let mut out: Vec<KubeCluster> = self
            .contexts
            .iter()
            .map(|c| KubeCluster {
                name: c.clone(),
                context: Some(c.clone()),
                server: None,
                token: None,
                namespace: None,
            })
            .collect();
        out.extend(self.clusters.iter().cloned());
        out
    }
}

/// `[integrations.loki]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Loki {
    pub url: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub auth: Option<Auth>,
    /// Tenant sent as `X-Scope-OrgID` on multi-tenant Loki.
    #[serde(default)]
    pub org_id: Option<String>,
}

fn default_github_url() -> String {
    "https://api.github.com".into()
}

/// `[integrations.github]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GitHub {
    #[serde(default = "default_github_url")]
    pub url: String,
    /// `owner/name` of the repository whose deploys and merges are checked.
    pub repo: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub auth: Option<Auth>,
}

fn default_application_name() -> String {
    "sitrep".into()
}

/// `[integrations.postgres]`: a read-only look at one PostgreSQL server.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Postgres {
    /// `postgres://user@host:5432/db?sslmode=require`; TLS (rustls) as `sslmode` says.
    pub url: String,
    /// Where the password is: `env:VAR`, `op://vault/item/field` or `vault://mount/path#field`;
    /// read only once the operator approves its use for the session. Absent: no password
    /// (trust, peer or a `.pgpass`-less setup).
    #[serde(default)]
    pub password: Option<String>,
    /// How sitrep's session shows in `pg_stat_activity`.
    #[serde(default = "default_application_name")]
    pub application_name: String,
    /// Connect timeout and `statement_timeout`, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

/// `[integrations.aws]`: RDS instances and events, CloudWatch metrics, Performance Insights.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Aws {
    /// `eu-west-1`, ...
    pub region: String,
    /// One base URL for every AWS service (a VPC endpoint, a local emulator); absent: the
    /// public `https://{service}.{region}.amazonaws.com`.
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// A profile of `~/.aws/credentials` / `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE` /
    /// `AWS_CONFIG_FILE`); given, it is used instead of the `AWS_*` environment variables.
    #[serde(default)]
    pub profile: Option<String>,
    /// The access key ID, written out or as a reference (`env:VAR`, `op://...`, `vault://...`).
    #[serde(default)]
    pub access_key_id: Option<String>,
    /// Where the secret access key is (a reference, never the key); read only once the operator
    /// approves it. With `access_key_id` it replaces the standard chain (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, then the profile).
    #[serde(default)]
    pub secret_access_key: Option<String>,
    /// Where a session token is (a reference).
    #[serde(default)]
    pub session_token: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

/// Whether a config value is written as a credential reference rather than a bare environment
/// variable name (the secrets module parses it fully when it is used).
pub fn is_secret_reference(v: &str) -> bool {
    v.starts_with("env:") || v.starts_with("op://") || v.starts_with("vault://")
}

fn default_pagerduty_url() -> String {
    "https://api.pagerduty.com".into()
}

/// `[integrations.pagerduty]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PagerDuty {
    #[serde(default = "default_pagerduty_url")]
    pub url: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub auth: Option<Auth>,
    /// PagerDuty service ID whose incidents are linked.
    #[serde(default)]
    pub service_id: Option<String>,
    /// Email sent as `From` on writes, as the PagerDuty API requires.
    #[serde(default)]
    pub from_email: Option<String>,
    /// Where the V3 webhook signing secret is: `env:VAR` (never the secret itself).
    #[serde(default)]
    pub webhook_secret: Option<String>,
}

impl PagerDuty {
    /// Reads the webhook signing secret from the environment variable `webhook_secret` names.
    pub fn resolve_webhook_secret(
        &self,
        config_path: &Path,
    ) -> Result<Option<SecretString>, ConfigError> {
        let Some(reference) = &self.webhook_secret else {
            return Ok(None);
        };
        let var = reference.strip_prefix("env:").unwrap_or(reference);
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(Some(SecretString::from(v))),
            _ => Err(ConfigError::MissingSecret {
                path: config_path.to_path_buf(),
                key: "integrations.pagerduty.webhook_secret".into(),
                var: var.to_string(),
            }),
        }
    }
}

fn default_issue_type() -> String {
    "Task".into()
}

fn default_jira_labels() -> Vec<String> {
    vec!["sitrep".into()]
}

/// `[integrations.jira]`: Jira Cloud (REST API v3), where an investigation's issue is filed.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Jira {
    /// The site, e.g. `https://example.atlassian.net`.
    pub url: String,
    /// The Atlassian account the API token belongs to (basic auth user).
    pub email: String,
    /// Where the API token is: `env:VAR`, `op://vault/item/field` or `vault://mount/path#field`;
    /// read only once the operator approves its use for the session.
    pub api_token: String,
    /// Project key issues are created in, e.g. `OPS`.
    pub project: String,
    /// Issue type name.
    #[serde(default = "default_issue_type")]
    pub issue_type: String,
    /// Labels every issue carries.
    #[serde(default = "default_jira_labels")]
    pub labels: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_datadog_site() -> String {
    "datadoghq.com".into()
}

/// `[integrations.datadog]`: the Datadog API of one site, read-only.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Datadog {
    /// The Datadog site: `datadoghq.com`, `datadoghq.eu`, `us3.datadoghq.com`, `us5.datadoghq.com`,
    /// `ap1.datadoghq.com`, `ddog-gov.com`; the API is `https://api.<site>`.
    #[serde(default = "default_datadog_site")]
    pub site: String,
    /// The API base URL, instead of the one `site` gives (a proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where the API key is (`env:VAR`, `op://...`, `vault://...`), sent as `DD-API-KEY`.
    pub api_key: String,
    /// Where the application key is, sent as `DD-APPLICATION-KEY`.
    pub app_key: String,
    /// Monitors the inbox lists: only those carrying all of these tags (`team:checkout`); empty, all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub monitor_tags: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

impl Datadog {
    /// The API base URL.
    pub fn base_url(&self) -> String {
        match &self.url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => format!("https://api.{}", self.site.trim()),
        }
    }
}

/// `[serve.datadog]`: Datadog webhooks `sitrep serve` accepts.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServeDatadog {
    /// Where the shared secret the webhook sends in `X-Sitrep-Secret` is (`env:VAR`, `op://...`,
    /// `vault://...`); never the secret itself.
    pub secret: String,
}

fn default_servicenow_category() -> String {
    "software".into()
}

/// `[integrations.servicenow]`: a ServiceNow instance (Table API), where an investigation's
/// incident is filed.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceNow {
    /// The instance, e.g. `https://example.service-now.com`.
    pub url: String,
    /// Basic auth user.
    pub username: String,
    /// Where the password is: `env:VAR`, `op://vault/item/field` or `vault://mount/path#field`;
    /// read only once the operator approves its use for the session.
    pub password: String,
    /// The incident's category.
    #[serde(default = "default_servicenow_category")]
    pub category: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_poll_secs() -> u64 {
    15
}

fn default_group_by() -> Vec<String> {
    vec!["alertname".into()]
}

fn default_true() -> bool {
    true
}

/// `[serve]`: how much work `sitrep serve` takes on at once.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Serve {
    /// Investigations running at once; the rest wait in the queue, started in arrival order.
    #[serde(default = "default_serve_max_concurrent")]
    pub max_concurrent: usize,
    /// Investigations waiting to start; past this the webhook answers 503 with `Retry-After`.
    #[serde(default = "default_serve_queue")]
    pub queue: usize,
    /// A reference (`env:`, `op://`, `vault://`) to the bearer token `GET /metrics` then needs;
    /// without one the route is open (it reveals no session data).
    #[serde(default)]
    pub metrics_token: Option<String>,
    /// `[serve.store]`: replicas sharing claims, sessions and decisions in PostgreSQL.
    #[serde(default)]
    pub store: Option<ServeStore>,
    /// `[serve.datadog]`: the shared secret of `POST /webhook/datadog`; absent, that route refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadog: Option<ServeDatadog>,
}

/// `[serve.store]`: the PostgreSQL database a team's `sitrep serve` replicas share.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServeStore {
    /// `postgres://USER@HOST:PORT/DB` (`?sslmode=require` for TLS); no password in it.
    pub url: String,
    /// A reference (`env:`, `op://`, `vault://`) to the password, never the password itself.
    #[serde(default)]
    pub password: Option<String>,
    /// Seconds a replica's lease lasts; a replica silent this long is taken over.
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u64,
}

fn default_lease_secs() -> u64 {
    15
}

fn default_serve_max_concurrent() -> usize {
    8
}

fn default_serve_queue() -> usize {
    256
}

impl Default for Serve {
    fn default() -> Self {
        Serve {
            max_concurrent: default_serve_max_concurrent(),
            queue: default_serve_queue(),
            metrics_token: None,
            store: None,
            datadog: None,
        }
    }
}

/// `[inbox]`: the alert inbox.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Inbox {
    /// Seconds between polls of each source (a failing source backs off from there).
    #[serde(default = "default_poll_secs")]
    pub poll_secs: u64,
    /// Labels whose values form a group, karma-style.
    #[serde(default = "default_group_by")]
    pub group_by: Vec<String>,
    /// Ring the terminal bell when a new alert fires.
    #[serde(default = "default_true")]
    pub bell: bool,
    /// Show the number of firing alerts in the terminal title.
    #[serde(default = "default_true")]
    pub title: bool,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            poll_secs: default_poll_secs(),
            group_by: default_group_by(),
            bell: true,
            title: true,
        }
    }
}

/// How to authenticate. Only environment variable *names* appear here, never secrets.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer { token_env: String },
    /// HTTP basic auth.
    Basic {
        username: String,
        password_env: String,
    },
    /// A custom header whose value is a secret, e.g. `Authorization: Token ...` or `X-Api-Key`.
    Header { header: String, value_env: String },
}

/// Credentials read from the environment, held in memory only.
#[derive(Debug, Clone)]
pub enum ResolvedAuth {
    Bearer(SecretString),
    Basic {
        username: String,
        password: SecretString,
    },
    Header {
        name: String,
        value: SecretString,
    },
}

impl Auth {
    /// The environment variable holding this credential's secret.
    pub fn secret_env(&self) -> &str {
        match self {
            Auth::Bearer { token_env } => token_env,
            Auth::Basic { password_env, .. } => password_env,
            Auth::Header { value_env, .. } => value_env,
        }
    }

    /// Read the secret from the named environment variable. `key` names the table in messages.
    pub fn resolve(&self, config_path: &Path, key: &str) -> Result<ResolvedAuth, ConfigError> {
        let read = |var: &str, field: &str| -> Result<SecretString, ConfigError> {
            // `env:VAR` is the reference form of a bare name; op:// and vault:// references are
            // resolved later, through the session's approval (see `secrets`).
            let var = var.strip_prefix("env:").unwrap_or(var);
            match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(SecretString::from(v)),
                _ => Err(ConfigError::MissingSecret {
                    path: config_path.to_path_buf(),
                    key: format!("{key}.auth.{field}"),
                    var: var.to_string(),
                }),
            }
        };
        Ok(match self {
            Auth::Bearer { token_env } => ResolvedAuth::Bearer(read(token_env, "token_env")?),
            Auth::Basic {
                username,
                password_env,
            } => ResolvedAuth::Basic {
                username: username.clone(),
                password: read(password_env, "password_env")?,
            },
            Auth::Header { header, value_env } => ResolvedAuth::Header {
                name: header.clone(),
                value: read(value_env, "value_env")?,
            },
        })
    }
}

fn default_veto_secs() -> u64 {
    30
}

fn default_approval_timeout() -> u64 {
    600
}

/// `[policy]`: approval rules. Risk levels themselves are fixed in code.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Medium-risk actions run after this many seconds unless vetoed.
    #[serde(default = "default_veto_secs")]
    pub veto_secs: u64,
    /// Refuse every mutating action (the `--read-only` flag sets this too).
    #[serde(default)]
    pub read_only: bool,
    /// A high or critical approval request lapses after this many seconds without a decision.
    #[serde(default = "default_approval_timeout")]
    pub approval_timeout_secs: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            veto_secs: default_veto_secs(),
            read_only: false,
            approval_timeout_secs: default_approval_timeout(),
        }
    }
}

fn default_max_steps() -> u32 {
    20
}

/// The providers `[llm] provider` accepts.
pub const LLM_PROVIDERS: [&str; 3] = ["openai", "anthropic", "ollama"];

/// `[llm]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Llm {
    /// `openai` (any OpenAI-compatible /v1), `anthropic`, or `ollama` (native /api/chat).
    pub provider: String,
    /// openai: POST {base_url}/chat/completions; anthropic: POST {base_url}/v1/messages;
    /// ollama: POST {base_url}/api/chat.
    pub base_url: String,
    pub model: String,
    /// The API key: an environment variable (`VAR` or `env:VAR`), or an `op://`/`vault://`
    /// reference read after approval; its value stays in memory only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Model turns per investigation.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
}

/// `[mcp]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mcp {
    #[serde(default)]
    pub servers: Vec<McpServer>,
}

impl Mcp {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

fn default_mcp_timeout() -> u64 {
    30
}

/// `[[mcp.servers]]`: one MCP server, started over stdio (`command`) or reached over streamable
/// HTTP (`url`). Its tools join the catalog as `mcp.<name>.<tool>`, read-only unless listed in
/// `mutating`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// Letters, digits, `-` and `_`: it becomes part of the tool names.
    pub name: String,
    /// stdio: the program to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: extra environment for the program.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP: the server's endpoint (e.g. `http://127.0.0.1:8000/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tools (by their server-side name) that change the world: the model can only propose them,
    /// and they run after approval like every action.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutating: Vec<String>,
    /// Seconds to start the server and per call.
    #[serde(default = "default_mcp_timeout")]
    pub timeout_secs: u64,
}

fn default_theme() -> String {
    "default".into()
}

/// `[ui]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ui {
    /// Theme name (`themes/<name>.toml`); `NO_COLOR` forces `mono`.
    #[serde(default = "default_theme")]
    pub theme: String,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            theme: default_theme(),
        }
    }
}

const MAX_TIMEOUT_SECS: u64 = 3600;
/// An approval request lapses after at most a week: a larger value would leave a headless run
/// waiting for ever (and past ~2^63 overflow the clock it waits on).
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

impl Config {
    /// The current values of every configured credential (the environment variables the `auth`
    /// tables name), so they can be masked wherever they turn up. Unset variables are skipped.
    pub fn secret_values(&self) -> Vec<SecretString> {
        let i = &self.integrations;
        let auths = [
            i.kubernetes.as_ref().and_then(|k| k.auth.as_ref()),
            i.prometheus.as_ref().and_then(|p| p.auth.as_ref()),
            i.loki.as_ref().and_then(|l| l.auth.as_ref()),
            i.alertmanager.as_ref().and_then(|a| a.auth.as_ref()),
            i.github.as_ref().and_then(|g| g.auth.as_ref()),
            i.pagerduty.as_ref().and_then(|p| p.auth.as_ref()),
        ];
        // The model's API key too: a provider's error may echo it.
        let llm_key = self.llm.as_ref().and_then(|l| l.api_key_env.clone());
        // Ticket credentials given as `env:` references (others are learned once read).
        let tickets = [
            i.jira.as_ref().map(|j| j.api_token.clone()),
            i.servicenow.as_ref().map(|n| n.password.clone()),
            i.datadog.as_ref().map(|d| d.api_key.clone()),
            i.datadog.as_ref().map(|d| d.app_key.clone()),
            self.serve.datadog.as_ref().map(|d| d.secret.clone()),
        ]
        .into_iter()
        .flatten()
        .chain(
            i.kubernetes
                .iter()
                .flat_map(|k| k.clusters.iter().filter_map(|c| c.token.clone())),
        )
        .filter(|r| r.starts_with("env:"));
        auths
            .into_iter()
            .flatten()
            .map(|a| a.secret_env().to_string())
            .chain(llm_key)
            .chain(tickets)
            .filter_map(|var| std::env::var(var.strip_prefix("env:").unwrap_or(&var)).ok())
            .filter(|v| !v.is_empty())
            .map(SecretString::from)
            .collect()
    }

    /// Load from `$SITREP_CONFIG` if set (the file must exist), else from the platform config dir
    /// (a missing file there means defaults).
    pub fn load() -> Result<Config, ConfigError> {
        if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
            return Config::load_from(Path::new(&path));
        }
        let path = default_config_path();
        if !path.exists() {
            return Ok(Config::default());
        }
        Config::load_from(&path)
    }

    /// Load a specific file; a missing file is an error.
    pub fn load_from(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Config::parse(&text, path)?;
        if let (Some(dir), Some(base)) = (&mut config.paths.runbooks, path.parent())
            && dir.is_relative()
        {
            *dir = base.join(&*dir);
        }
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parse and validate TOML text; `path` is used in messages only.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: describe_toml_error(text, &e),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, expected: &str, found: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            expected: expected.to_string(),
            found,
        };
        let check_url = |key: &str, url: &str| {
            if url.starts_with("http://") || url.starts_with("https://") {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    "an http:// or https:// URL",
                    format!("{url:?}"),
                ))
            }
        };
        let check_timeout = |key: &str, secs: u64| {
            if (1..=MAX_TIMEOUT_SECS).contains(&secs) {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    "a timeout between 1 and 3600 seconds",
                    secs.to_string(),
                ))
            }
        };
        let check_auth = |key: &str, auth: &Option<Auth>| {
            let Some(auth) = auth else { return Ok(()) };
            let env_name = |field: &str, v: &str| {
                // A reference (`op://...`) names where the secret is, as a bare name does.
                if is_secret_reference(v) && !v.contains(char::is_whitespace) {
                    return Ok(());
                }
                let ok = !v.is_empty()
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !v.starts_with(|c: char| c.is_ascii_digit());
                if ok {
                    Ok(())
                } else {
                    Err(invalid(
                        &format!("{key}.auth.{field}"),
                        "the name of an environment variable (letters, digits, _), not the secret itself",
                        format!("a value of {} characters", v.chars().count()),
                    ))
                }
            };
            match auth {
                Auth::Bearer { token_env } => env_name("token_env", token_env),
                Auth::Basic {
                    username,
                    password_env,
                } => {
                    if username.is_empty() {
                        return Err(invalid(
                            &format!("{key}.auth.username"),
                            "a non-empty user name",
                            "\"\"".into(),
                        ));
                    }
                    env_name("password_env", password_env)
                }
                Auth::Header { header, value_env } => {
                    let ok = !header.is_empty()
                        && header
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                    if !ok {
                        return Err(invalid(
                            &format!("{key}.auth.header"),
                            "an HTTP header name",
                            format!("{header:?}"),
                        ));
                    }
                    env_name("value_env", value_env)
                }
            }
        };
        // A credential is named by where it is, never written out.
        let check_reference = |key: &str, v: &str| {
            let name_ok = |var: &str| {
                !var.is_empty()
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !var.starts_with(|c: char| c.is_ascii_digit())
            };
            let ok = match v.strip_prefix("env:") {
                Some(var) => name_ok(var),
                None => is_secret_reference(v) && !v.contains(char::is_whitespace),
            };
            if ok {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://mount/path#field\", not the secret itself",
                    format!("a value of {} characters", v.chars().count()),
                ))
            }
        };
        let i = &self.integrations;
        if let Some(k) = &i.kubernetes {
            if let Some(url) = &k.url {
                check_url("integrations.kubernetes.url", url)?;
            }
            check_timeout("integrations.kubernetes.timeout_secs", k.timeout_secs)?;
            check_auth("integrations.kubernetes", &k.auth)?;
            let mut names: Vec<String> = Vec::new();
            for (i, c) in k.named_clusters().iter().enumerate() {
                let key = format!("integrations.kubernetes.clusters[{i}]");
                let ok = !c.name.is_empty()
                    && c.name
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
                if !ok {
                    return Err(invalid(
                        &format!("{key}.name"),
                        "a cluster name (letters, digits, -, _ and .)",
                        format!("{:?}", c.name),
                    ));
                }
                if names.contains(&c.name) {
                    return Err(invalid(
                        &format!("{key}.name"),
                        "a name no other cluster has",
                        format!("{:?} twice", c.name),
                    ));
                }
                names.push(c.name.clone());
                match (&c.context, &c.server) {
                    (Some(_), None) => {}
                    (None, Some(url)) => check_url(&format!("{key}.server"), url)?,
                    _ => {
                        return Err(invalid(
                            &key,
                            "either `context` or `server`",
                            format!("cluster {:?}", c.name),
                        ));
                    }
                }
                if let Some(t) = &c.token {
                    check_reference(&format!("{key}.token"), t)?;
                }
            }
        }
        for (name, ep) in [
            ("prometheus", &i.prometheus),
            ("alertmanager", &i.alertmanager),
        ] {
            if let Some(ep) = ep {
                check_url(&format!("integrations.{name}.url"), &ep.url)?;
                check_timeout(
                    &format!("integrations.{name}.timeout_secs"),
                    ep.timeout_secs,
                )?;
                check_auth(&format!("integrations.{name}"), &ep.auth)?;
            }
        }
        if let Some(l) = &i.loki {
            check_url("integrations.loki.url", &l.url)?;
            check_timeout("integrations.loki.timeout_secs", l.timeout_secs)?;
            check_auth("integrations.loki", &l.auth)?;
        }
        if let Some(g) = &i.github {
            check_url("integrations.github.url", &g.url)?;
            check_timeout("integrations.github.timeout_secs", g.timeout_secs)?;
            check_auth("integrations.github", &g.auth)?;
            let parts: Vec<&str> = g.repo.split('/').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(invalid(
                    "integrations.github.repo",
                    "\"owner/name\"",
                    format!("{:?}", g.repo),
                ));
            }
        }
        if let Some(p) = &i.pagerduty {
            check_url("integrations.pagerduty.url", &p.url)?;
            check_timeout("integrations.pagerduty.timeout_secs", p.timeout_secs)?;
            check_auth("integrations.pagerduty", &p.auth)?;
            if let Some(reference) = &p.webhook_secret {
                let ok = reference.strip_prefix("env:").is_some_and(|v| {
                    !v.is_empty()
                        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !v.starts_with(|c: char| c.is_ascii_digit())
                });
                if !ok {
                    return Err(invalid(
                        "integrations.pagerduty.webhook_secret",
                        "a reference such as \"env:PAGERDUTY_WEBHOOK_SECRET\", not the secret itself",
                        format!("a value of {} characters", reference.chars().count()),
                    ));
                }
            }
        }
        if let Some(d) = &i.datadog {
            let site_ok = !d.site.is_empty()
                && d.site
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if !site_ok {
                return Err(invalid(
                    "integrations.datadog.site",
                    "a Datadog site such as \"datadoghq.com\" or \"datadoghq.eu\"",
                    format!("{:?}", d.site),
                ));
            }
            if let Some(url) = &d.url {
                check_url("integrations.datadog.url", url)?;
            }
            check_timeout("integrations.datadog.timeout_secs", d.timeout_secs)?;
            for (field, v) in [("api_key", &d.api_key), ("app_key", &d.app_key)] {
                check_reference(&format!("integrations.datadog.{field}"), v)?;
            }
        }
        if let Some(d) = &self.serve.datadog {
            check_reference("serve.datadog.secret", &d.secret)?;
        }
        if let Some(a) = &i.aws {
            let region_ok = !a.region.is_empty()
                && a.region
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !region_ok {
                return Err(invalid(
                    "integrations.aws.region",
                    "an AWS region such as \"eu-west-1\"",
                    format!("{:?}", a.region),
                ));
            }
            if let Some(url) = &a.endpoint_url {
                check_url("integrations.aws.endpoint_url", url)?;
            }
            check_timeout("integrations.aws.timeout_secs", a.timeout_secs)?;
            if let Some(p) = &a.profile
                && (p.is_empty() || p.contains(|c: char| c.is_whitespace() || c == ']'))
            {
                return Err(invalid(
                    "integrations.aws.profile",
                    "a profile name of ~/.aws/config",
                    format!("{p:?}"),
                ));
            }
            for (key, value) in [
                ("secret_access_key", &a.secret_access_key),
                ("session_token", &a.session_token),
            ] {
                if let Some(v) = value
                    && (!is_secret_reference(v) || v.contains(char::is_whitespace))
                {
                    return Err(invalid(
                        &format!("integrations.aws.{key}"),
                        "a reference such as \"env:AWS_SECRET_ACCESS_KEY\", \"op://vault/item/field\" or \"vault://secret/aws#key\", not the secret itself",
                        format!("a value of {} characters", v.chars().count()),
                    ));
                }
            }
            if let Some(id) = &a.access_key_id
                && (!is_secret_reference(id) || id.contains(char::is_whitespace))
                && (id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                return Err(invalid(
                    "integrations.aws.access_key_id",
                    "an access key ID (letters and digits) or a reference",
                    format!("a value of {} characters", id.chars().count()),
                ));
            }
            if a.access_key_id.is_some() != a.secret_access_key.is_some()
                || (a.session_token.is_some() && a.secret_access_key.is_none())
            {
                return Err(invalid(
                    "integrations.aws",
                    "access_key_id and secret_access_key together (session_token only with them)",
                    "one of them alone".into(),
                ));
            }
        }
        if let Some(pg) = &i.postgres {
            if !(pg.url.starts_with("postgres://") || pg.url.starts_with("postgresql://")) {
                return Err(invalid(
                    "integrations.postgres.url",
                    "a postgres:// or postgresql:// URL",
                    format!("a value of {} characters", pg.url.chars().count()),
                ));
            }
            check_timeout("integrations.postgres.timeout_secs", pg.timeout_secs)?;
            if let Some(pw) = &pg.password
                && (!is_secret_reference(pw) || pw.contains(char::is_whitespace))
            {
                return Err(invalid(
                    "integrations.postgres.password",
                    "a reference such as \"env:PGPASSWORD\", \"op://vault/item/field\" or \"vault://secret/app#password\", not the password itself",
                    format!("a value of {} characters", pw.chars().count()),
                ));
            }
            let name = &pg.application_name;
            if name.is_empty()
                || name.len() > 63
                || !name.chars().all(|c| c.is_ascii_graphic() || c == ' ')
            {
                return Err(invalid(
                    "integrations.postgres.application_name",
                    "1 to 63 printable ASCII characters",
                    format!("{name:?}"),
                ));
            }
        }
        let check_reference = |key: &str, v: &str| {
            if is_secret_reference(v) && !v.contains(char::is_whitespace) {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://secret/app#field\", not the secret itself",
                    format!("a value of {} characters", v.chars().count()),
                ))
            }
        };
        let check_text = |key: &str, v: &str, expected: &str| {
            if v.trim().is_empty() || v.chars().any(char::is_control) {
                Err(invalid(key, expected, format!("{v:?}")))
            } else {
                Ok(())
            }
        };
        if let Some(j) = &i.jira {
            check_url("integrations.jira.url", &j.url)?;
            check_timeout("integrations.jira.timeout_secs", j.timeout_secs)?;
            check_text(
                "integrations.jira.email",
                &j.email,
                "the Atlassian account's email",
            )?;
            check_reference("integrations.jira.api_token", &j.api_token)?;
            let key_ok = !j.project.is_empty()
                && j.project
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !key_ok {
                return Err(invalid(
                    "integrations.jira.project",
                    "a project key such as \"OPS\"",
                    format!("{:?}", j.project),
                ));
            }
            check_text(
                "integrations.jira.issue_type",
                &j.issue_type,
                "an issue type name",
            )?;
        }
        if let Some(n) = &i.servicenow {
            check_url("integrations.servicenow.url", &n.url)?;
            check_timeout("integrations.servicenow.timeout_secs", n.timeout_secs)?;
            check_text(
                "integrations.servicenow.username",
                &n.username,
                "a user name",
            )?;
            check_reference("integrations.servicenow.password", &n.password)?;
            check_text(
                "integrations.servicenow.category",
                &n.category,
                "a category",
            )?;
        }
        if !(1..=MAX_TIMEOUT_SECS).contains(&self.inbox.poll_secs) {
            return Err(invalid(
                "inbox.poll_secs",
                "a poll interval between 1 and 3600 seconds",
                self.inbox.poll_secs.to_string(),
            ));
        }
        if let Some(bad) = self
            .inbox
            .group_by
            .iter()
            .find(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(invalid(
                "inbox.group_by",
                "label names (letters, digits, _)",
                format!("{bad:?}"),
            ));
        }
        if self.policy.veto_secs > MAX_TIMEOUT_SECS {
            return Err(invalid(
                "policy.veto_secs",
                "a countdown between 0 and 3600 seconds",
                self.policy.veto_secs.to_string(),
            ));
        }
        if !(1..=MAX_APPROVAL_TIMEOUT_SECS).contains(&self.policy.approval_timeout_secs) {
            return Err(invalid(
                "policy.approval_timeout_secs",
                "a number of seconds between 1 and 604800 (one week)",
                self.policy.approval_timeout_secs.to_string(),
            ));
        }
        let theme_ok = !self.ui.theme.is_empty()
            && self
                .ui
                .theme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !theme_ok {
            return Err(invalid(
                "ui.theme",
                "a theme name (letters, digits, - and _)",
                format!("{:?}", self.ui.theme),
            ));
        }
        for (action, keys) in &self.keys {
            let ok =
                keys.split_whitespace().count() > 0 && keys.split_whitespace().all(is_key_spec);
            if !ok {
                return Err(invalid(
                    &format!("keys.{action}"),
                    "one or more keys separated by spaces, such as \"a\", \"G\", \"ctrl-d\", \"j down\", \"enter\", \"f1\"",
                    format!("{keys:?}"),
                ));
            }
        }
        if let Some(llm) = &self.llm {
            if !LLM_PROVIDERS.contains(&llm.provider.as_str()) {
                return Err(invalid(
                    "llm.provider",
                    "one of \"openai\", \"anthropic\", \"ollama\"",
                    format!("{:?}", llm.provider),
                ));
            }
            check_url("llm.base_url", &llm.base_url)?;
            if llm.model.trim().is_empty() {
                return Err(invalid("llm.model", "a model name", "\"\"".into()));
            }
            if llm.max_steps == 0 || llm.max_steps > 200 {
                return Err(invalid(
                    "llm.max_steps",
                    "1 to 200",
                    llm.max_steps.to_string(),
                ));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, m) in self.mcp.servers.iter().enumerate() {
            let key = |k: &str| format!("mcp.servers[{i}].{k}");
            let name_ok = !m.name.is_empty()
                && m.name.len() <= 32
                && m.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                return Err(invalid(
                    &key("name"),
                    "1 to 32 letters, digits, - and _",
                    format!("{:?}", m.name),
                ));
            }
            if !names.insert(m.name.as_str()) {
                return Err(invalid(
                    &key("name"),
                    "a name no other server has",
                    format!("{:?}", m.name),
                ));
            }
            match (&m.command, &m.url) {
                (Some(c), None) if !c.trim().is_empty() => {}
                (None, Some(url)) => check_url(&key("url"), url)?,
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        &key("url"),
                        "either `command` (stdio) or `url` (streamable HTTP), not both",
                        format!("{:?}", m.url.as_deref().unwrap_or("")),
                    ));
                }
                _ => {
                    return Err(invalid(
                        &key("command"),
                        "a program to start (stdio) or a `url` (streamable HTTP)",
                        "nothing".into(),
                    ));
                }
            }
            if m.timeout_secs == 0 || m.timeout_secs > 600 {
                return Err(invalid(
                    &key("timeout_secs"),
                    "1 to 600",
                    m.timeout_secs.to_string(),
                ));
            }
        }
        self.notify.validate(path)?;
        Ok(())
    }
}

/// `[notify]`: where `sitrep serve` tells people about its investigations.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<SlackNotify>,
}

impl Notify {
    pub fn is_empty(&self) -> bool {
        self.slack.is_none()
    }
}

fn default_slack_api_url() -> String {
    "https://slack.com/api".into()
}

fn default_slack_on() -> Vec<String> {
    SLACK_EVENTS.iter().map(|e| e.to_string()).collect()
}

/// What `[notify.slack] on` may choose.
pub const SLACK_EVENTS: &[&str] = &["approval", "end"];

/// `[notify.slack]`: an incoming webhook, or a bot token and a channel (`chat.postMessage`); the
/// signing secret lets the approval message's buttons decide. Every secret is a reference.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlackNotify {
    /// Where the incoming webhook URL is (`env:SLACK_WEBHOOK_URL`, `op://...`, `vault://...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Where the bot token (`xoxb-...`) is, for `chat.postMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The channel `chat.postMessage` posts to (an id such as `C0123ABC` or `#name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The Web API's base URL.
    #[serde(default = "default_slack_api_url")]
    pub api_url: String,
    /// Where the app's signing secret is: interactions (the approve and deny buttons) are
    /// verified with it; without one the buttons are not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
    /// Which messages are sent: `approval` (a high or critical action waits), `end`.
    #[serde(default = "default_slack_on")]
    pub on: Vec<String>,
    /// Slack user id -> operator name a button press is recorded under (`U123ABC = "alice"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub users: BTreeMap<String, String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

impl Notify {
    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let Some(s) = &self.slack else {
            return Ok(());
        };
        let invalid = |key: &str, expected: &str, found: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("notify.slack.{key}"),
            expected: expected.to_string(),
            found,
        };
        let reference = |key: &str, v: &Option<String>| match v {
            Some(v) if !is_secret_reference(v) || v.contains(char::is_whitespace) => Err(invalid(
                key,
                "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://mount/path#field\", not the secret itself",
                format!("a value of {} characters", v.chars().count()),
            )),
            _ => Ok(()),
        };
        reference("webhook_url", &s.webhook_url)?;
        reference("token", &s.token)?;
        reference("signing_secret", &s.signing_secret)?;
        match (&s.webhook_url, &s.token) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "token",
                    "either `webhook_url` (an incoming webhook) or `token` and `channel`, not both",
                    "both".into(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "webhook_url",
                    "`webhook_url` (an incoming webhook) or `token` and `channel`",
                    "neither".into(),
                ));
            }
            (None, Some(_)) if s.channel.as_deref().is_none_or(|c| c.trim().is_empty()) => {
                return Err(invalid(
                    "channel",
                    "the channel `chat.postMessage` posts to",
                    "nothing".into(),
                ));
            }
            _ => {}
        }
        if !(s.api_url.starts_with("http://") || s.api_url.starts_with("https://")) {
            return Err(invalid(
                "api_url",
                "an http:// or https:// URL",
                format!("{:?}", s.api_url),
            ));
        }
        if let Some(bad) = s.on.iter().find(|e| !SLACK_EVENTS.contains(&e.as_str())) {
            return Err(invalid(
                "on",
                "a list of \"approval\" and \"end\"",
                format!("{bad:?}"),
            ));
        }
        for (id, name) in &s.users {
            let id_ok =
                !id.is_empty() && id.len() <= 32 && id.chars().all(|c| c.is_ascii_alphanumeric());
            if !id_ok {
                return Err(invalid(
                    "users",
                    "Slack user ids such as U123ABC",
                    format!("{id:?}"),
                ));
            }
            let name_ok = (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
            if !name_ok {
                return Err(invalid(
                    &format!("users.{id}"),
                    "an operator name (letters, digits, . _ - @)",
                    format!("{name:?}"),
                ));
            }
        }
        if !(1..=MAX_TIMEOUT_SECS).contains(&s.timeout_secs) {
            return Err(invalid(
                "timeout_secs",
                "a timeout between 1 and 3600 seconds",
                s.timeout_secs.to_string(),
            ));
        }
        Ok(())
    }
}

/// Named keys accepted in `[keys]`, besides single characters and `f1`..`f12`.
pub const NAMED_KEYS: &[&str] = &[
    "enter",
    "return",
    "esc",
    "escape",
    "tab",
    "backtab",
    "space",
    "backspace",
    "delete",
    "del",
    "insert",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pgup",
    "pagedown",
    "pgdown",
];

/// Whether `spec` is a key the keymap understands: optional `ctrl-`/`alt-`/`shift-` (or `ctrl+`...) prefixes,
/// then one character, a named key or `f1`..`f12`.
pub fn is_key_spec(spec: &str) -> bool {
    let mut rest = spec;
    loop {
        let lower = rest.to_ascii_lowercase();
        let stripped = ["ctrl-", "alt-", "shift-", "ctrl+", "alt+", "shift+"]
            .iter()
            .find(|p| lower.starts_with(**p) && rest.len() > p.len());
        match stripped {
            Some(p) => rest = &rest[p.len()..],
            None => break,
        }
    }
    if rest.chars().count() == 1 {
        return !rest.chars().any(char::is_whitespace);
    }
    let lower = rest.to_ascii_lowercase();
    if NAMED_KEYS.contains(&lower.as_str()) {
        return true;
    }
    lower
        .strip_prefix('f')
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (1..=12).contains(&n))
}

/// Turn a toml error into one readable message that names the key (as a dotted path) and
/// the line, followed by what was expected.
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let reason = err.message().trim().to_string();
    let Some(span) = err.span() else {
        return reason;
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    match key_path_at(text, start) {
        Some(key) => format!("line {line_no}: key `{key}`: {reason}"),
        None => format!("line {line_no}: {reason}"),
    }
}

/// The dotted key path of the `key = value` line containing byte `offset`, using the nearest
/// `[table]` header above it.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[offset..]
        .find('\n')
        .map(|i| offset + i)
        .unwrap_or(text.len());
    let line = text[line_start..line_end].trim();
    let header_of = |l: &str| -> Option<String> {
        let l = l.trim();
        let inner = l
            .strip_prefix("[[")
            .and_then(|s| s.split("]]").next())
            .or_else(|| l.strip_prefix('[').and_then(|s| s.split(']').next()))?;
        Some(inner.trim().replace(' ', ""))
    };
    if let Some(h) = header_of(line) {
        return Some(h);
    }
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())?;
    if key.is_empty() {
        return None;
    }
    let table = text[..line_start].lines().rev().find_map(header_of);
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key,
    })
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "sitrep")
}

/// The config file used when `SITREP_CONFIG` is not set.
pub fn default_config_path() -> PathBuf {
    project_dirs()
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from("sitrep-config.toml"))
}

/// Where sessions and logs live: `$SITREP_DATA_DIR`, else the platform data dir.
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    project_dirs()
        .map(|d| d.data_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from(".sitrep"))
}

/// The text of a theme file the operator named (`[ui] theme`, `--theme`, `:theme`): settings,
/// like config.toml, so read here rather than by the console.
pub fn read_theme(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/sitrep/config.toml"))
    }

    #[test]
    fn empty_file_is_defaults() {
        let c = parse("").map_err(|e| e.to_string());
        assert_eq!(c.as_ref().map(|c| c.policy.veto_secs), Ok(30));
        assert_eq!(c.map(|c| c.ui.theme), Ok("default".to_string()));
    }

    #[test]
    fn full_sections_parse() {
        let text = r#"
[integrations.kubernetes]
context = "prod"
namespace = "payments"

[integrations.prometheus]
url = "http://127.0.0.1:9090"
timeout_secs = 5
auth = { kind = "bearer", token_env = "PROM_TOKEN" }

[integrations.loki]
url = "http://127.0.0.1:3100"
org_id = "tenant-a"
auth = { kind = "basic", username = "ops", password_env = "LOKI_PASSWORD" }

[integrations.github]
repo = "acme/payments"
auth = { kind = "header", header = "Authorization", value_env = "GITHUB_TOKEN" }

[policy]
veto_secs = 10
read_only = true

[ui]
theme = "mono"

[keys]
approve = "a"
half_page_down = "ctrl-d"
"#;
        let c = match parse(text) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            c.integrations.prometheus.as_ref().map(|p| p.timeout_secs),
            Some(5)
        );
        assert_eq!(
            c.integrations.github.as_ref().map(|g| g.url.as_str()),
            Some("https://api.github.com")
        );
        assert_eq!(
            c.integrations.configured(),
            vec!["kubernetes", "prometheus", "loki", "github"]
        );
        assert!(c.policy.read_only);
        assert_eq!(c.policy.approval_timeout_secs, 600);
        assert_eq!(
            c.keys.get("half_page_down").map(String::as_str),
            Some("ctrl-d")
        );
    }

    #[test]
    fn unknown_key_names_file_key_and_expectation() {
        let err = parse("[policy]\nveto_secs = 5\nveto = 3\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("/etc/sitrep/config.toml"), "{err}");
        assert!(err.contains("policy.veto"), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("veto_secs"), "{err}");
    }

    #[test]
    fn wrong_type_names_key_and_expectation() {
        let err = parse("[policy]\nveto_secs = \"thirty\"\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("policy.veto_secs"), "{err}");
        assert!(err.contains("integer") || err.contains("u64"), "{err}");
    }

    #[test]
    fn unknown_integration_is_rejected() {
        let err = parse("[integrations.datadog]\nurl = \"http://x\"\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("datadog"), "{err}");
    }

    #[test]
    fn bad_values_are_errors() {
        let cases = [
            (
                "[integrations.prometheus]\nurl = \"localhost:9090\"\n",
                "integrations.prometheus.url",
            ),
            (
                "[integrations.prometheus]\nurl = \"http://x\"\ntimeout_secs = 0\n",
                "integrations.prometheus.timeout_secs",
            ),
            (
                "[integrations.github]\nrepo = \"acme\"\n",
                "integrations.github.repo",
            ),
            (
                "[integrations.alertmanager]\nurl = \"http://x\"\nauth = { kind = \"bearer\", token_env = \"ghp_abc123 secret\" }\n",
                "integrations.alertmanager.auth.token_env",
            ),
            ("[ui]\ntheme = \"../../etc\"\n", "ui.theme"),
            ("[keys]\napprove = \"ctrl-\"\n", "keys.approve"),
            ("[keys]\ndown = \"j hello\"\n", "keys.down"),
            ("[keys]\ndown = \" \"\n", "keys.down"),
            ("[policy]\nveto_secs = 99999\n", "policy.veto_secs"),
            (
                "[policy]\napproval_timeout_secs = 0\n",
                "policy.approval_timeout_secs",
            ),
            (
                "[policy]\napproval_timeout_secs = 604801\n",
                "policy.approval_timeout_secs",
            ),
            (
                "[policy]\napproval_timeout_secs = 9223372036854775807\n",
                "policy.approval_timeout_secs",
            ),
            ("[inbox]\npoll_secs = 0\n", "inbox.poll_secs"),
            ("[inbox]\ngroup_by = [\"a b\"]\n", "inbox.group_by"),
            (
                "[integrations.pagerduty]\nwebhook_secret = \"whsec-abc\"\n",
                "integrations.pagerduty.webhook_secret",
            ),
        ];
        for (text, key) in cases {
            let err = parse(text).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
            assert!(err.contains("expected"), "{text}: {err}");
        }
    }

    #[test]
    fn secret_value_never_appears_in_errors() {
        let err = parse("[integrations.alertmanager]\nurl = \"http://x\"\nauth = { kind = \"bearer\", token_env = \"hunter2 hunter2\" }\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn unknown_auth_kind_is_rejected() {
        let err = parse("[integrations.prometheus]\nurl = \"http://x\"\nauth = { kind = \"oauth\", token_env = \"T\" }\n")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("oauth"), "{err}");
    }

    #[test]
    fn missing_secret_env_is_a_clear_error() {
        let auth = Auth::Bearer {
            token_env: "SITREP_TEST_SURELY_UNSET_VAR".into(),
        };
        let err = auth
            .resolve(Path::new("c.toml"), "integrations.prometheus")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("SITREP_TEST_SURELY_UNSET_VAR"), "{err}");
        assert!(
            err.contains("integrations.prometheus.auth.token_env"),
            "{err}"
        );
    }

    #[test]
    fn the_example_config_loads_and_sets_every_section() {
        let text = include_str!("../config.example.toml");
        let c = match Config::parse(text, Path::new("config.example.toml")) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            c.integrations.configured(),
            vec![
                "kubernetes",
                "prometheus",
                "loki",
                "alertmanager",
                "github",
                "pagerduty",
                "postgres",
                "aws",
                "jira",
                "servicenow"
            ]
        );
        assert_eq!(c.policy, Policy::default());
        assert_eq!(c.ui, Ui::default());
        assert_eq!(c.inbox, Inbox::default());
        assert_eq!(c.keys.get("approve").map(String::as_str), Some("a"));
        // Every key the example documents parses back to the same value it serializes to.
        let again: Config = match toml::to_string(&c).map(|t| toml::from_str(&t)) {
            Ok(Ok(c)) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(again.integrations, c.integrations);
        assert_eq!(again.llm, c.llm);
        let llm = c.llm.as_ref().map(|l| (l.provider.as_str(), l.max_steps));
        assert_eq!(llm, Some(("openai", 20)));
    }

    #[test]
    fn llm_section_is_checked() {
        let ok = parse(
            "[llm]\nprovider = \"anthropic\"\nbase_url = \"https://api.anthropic.com\"\nmodel = \"m\"\n",
        );
        assert_eq!(
            ok.map(|c| c.llm.map(|l| l.max_steps)).ok().flatten(),
            Some(20)
        );
        for (bad, key) in [
            (
                "provider = \"gemini\"\nbase_url = \"http://x\"\nmodel = \"m\"",
                "llm.provider",
            ),
            (
                "provider = \"openai\"\nbase_url = \"x\"\nmodel = \"m\"",
                "llm.base_url",
            ),
            (
                "provider = \"openai\"\nbase_url = \"http://x\"\nmodel = \"m\"\nmax_steps = 0",
                "llm.max_steps",
            ),
        ] {
            let err = parse(&format!("[llm]\n{bad}\n"))
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn mcp_servers_are_checked() {
        let ok = parse(
            "[[mcp.servers]]\nname = \"time\"\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n\
             [[mcp.servers]]\nname = \"t2\"\nurl = \"http://127.0.0.1:8000/mcp\"\nmutating = [\"close\"]\n",
        )
        .unwrap();
        assert_eq!(ok.mcp.servers.len(), 2);
        assert_eq!(ok.mcp.servers[0].timeout_secs, 30);
        assert_eq!(ok.mcp.servers[1].mutating, vec!["close".to_string()]);
        for (bad, key) in [
            ("name = \"a.b\"\ncommand = \"x\"", "mcp.servers[0].name"),
            ("name = \"a\"", "mcp.servers[0].command"),
            (
                "name = \"a\"\ncommand = \"x\"\nurl = \"http://h\"",
                "mcp.servers[0].url",
            ),
            ("name = \"a\"\nurl = \"ftp://h\"", "mcp.servers[0].url"),
            ("name = \"a\"\ncommand = \"x\"\nbogus = 1", "bogus"),
        ] {
            let err = parse(&format!("[[mcp.servers]]\n{bad}\n"))
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
        }
        let twice = parse(
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\n",
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(twice.contains("mcp.servers[1].name"), "{twice}");
    }

    #[test]
    fn key_specs() {
        for ok in [
            "a",
            "G",
            "?",
            "ctrl-d",
            "CTRL-U",
            "alt-shift-x",
            "enter",
            "f5",
            "space",
            "[",
        ] {
            assert!(is_key_spec(ok), "{ok}");
        }
        for bad in ["", "ctrl-", "hello", "f13", " ", "ctrl-foo"] {
            assert!(!is_key_spec(bad), "{bad}");
        }
    }

    #[test]
    fn postgres_takes_a_url_and_a_password_reference() {
        let c = parse(
            "[integrations.postgres]\nurl = \"postgres://sitrep@db.internal:5432/app?sslmode=require\"\npassword = \"op://ops/app-db/password\"\napplication_name = \"sitrep\"\n",
        )
        .unwrap();
        let pg = c.integrations.postgres.clone().unwrap();
        assert_eq!(pg.password.as_deref(), Some("op://ops/app-db/password"));
        assert!(c.integrations.configured().contains(&"postgres"));
        // The password itself, a wrong scheme and unknown keys are refused with the key named.
        for (text, key) in [
            (
                "url = \"postgres://x@h/db\"\npassword = \"hunter2hunter2\"",
                "integrations.postgres.password",
            ),
            ("url = \"mysql://x@h/db\"", "integrations.postgres.url"),
            (
                "url = \"postgres://x@h/db\"\napplication_name = \"\"",
                "integrations.postgres.application_name",
            ),
        ] {
            let err = parse(&format!("[integrations.postgres]\n{text}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
        assert!(
            parse("[integrations.postgres]\nurl = \"postgres://x@h/db\"\nuser = \"x\"\n").is_err()
        );
        // Every integration's auth also takes a reference.
        parse("[integrations.prometheus]\nurl = \"http://p\"\nauth = { kind = \"bearer\", token_env = \"vault://secret/prom#token\" }\n").unwrap();
    }

    #[test]
    fn datadog_and_clusters_are_checked_with_the_key_named() {
        let c = parse(
            "[integrations.datadog]\nsite = \"datadoghq.eu\"\napi_key = \"env:DD_API_KEY\"\napp_key = \"op://ops/dd/app\"\n\
             [serve.datadog]\nsecret = \"env:DD_HOOK\"\n\
             [integrations.kubernetes]\ncontexts = [\"prod-eu\"]\n\
             [[integrations.kubernetes.clusters]]\nname = \"prod-us\"\nserver = \"https://k.us\"\ntoken = \"env:US\"\n",
        )
        .unwrap();
        let dd = c.integrations.datadog.clone().unwrap();
        assert_eq!(dd.base_url(), "https://api.datadoghq.eu");
        let names: Vec<String> = c
            .integrations
            .kubernetes
            .as_ref()
            .map(|k| k.named_clusters().into_iter().map(|c| c.name).collect())
            .unwrap_or_default();
        assert_eq!(names, ["prod-eu", "prod-us"]);
        for (text, key) in [
            (
                "[integrations.datadog]\napi_key = \"0123456789abcdef\"\napp_key = \"env:A\"",
                "integrations.datadog.api_key",
            ),
            (
                "[integrations.datadog]\nsite = \"datadog hq\"\napi_key = \"env:A\"\napp_key = \"env:B\"",
                "integrations.datadog.site",
            ),
            (
                "[serve.datadog]\nsecret = \"s3cr3t-value\"",
                "serve.datadog.secret",
            ),
            (
                "[integrations.kubernetes]\ncontexts = [\"a\", \"a\"]",
                "integrations.kubernetes.clusters[1].name",
            ),
            (
                "[integrations.kubernetes]\n[[integrations.kubernetes.clusters]]\nname = \"x\"",
                "integrations.kubernetes.clusters[0]",
            ),
        ] {
            let err = parse(&format!("{text}\n")).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
            assert!(
                !err.contains("0123456789abcdef") && !err.contains("s3cr3t"),
                "{err}"
            );
        }
    }
}
