//! `[integrations.*]`: each vendor's section as config.toml spells it.

use super::*;

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

pub(super) fn default_timeout() -> u64 {
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

pub(super) fn default_github_url() -> String {
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

pub(super) fn default_application_name() -> String {
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

pub(super) fn default_pagerduty_url() -> String {
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

pub(super) fn default_issue_type() -> String {
    "Task".into()
}

pub(super) fn default_jira_labels() -> Vec<String> {
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

pub(super) fn default_datadog_site() -> String {
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

/// `[serve.datadog]`: Datadog webhooks `sitrep serve` accepts.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServeDatadog {
    /// Where the shared secret the webhook sends in `X-Sitrep-Secret` is (`env:VAR`, `op://...`,
    /// `vault://...`); never the secret itself.
    pub secret: String,
}

pub(super) fn default_servicenow_category() -> String {
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

impl Datadog {
    /// The API base URL.
    pub fn base_url(&self) -> String {
        match &self.url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => format!("https://api.{}", self.site.trim()),
        }
    }
}
