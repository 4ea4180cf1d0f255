//! `[integrations.*]`: each vendor's section as config.toml spells it, and the checks its values pass.

use super::validate::Check;
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

impl Endpoint {
    /// `name` is the section (`prometheus`, `alertmanager`).
    pub(super) fn validate(&self, c: &Check, name: &str) -> Result<(), ConfigError> {
        c.url(&format!("integrations.{name}.url"), &self.url)?;
        c.timeout(
            &format!("integrations.{name}.timeout_secs"),
            self.timeout_secs,
        )?;
        c.auth(&format!("integrations.{name}"), &self.auth)
    }
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

impl Kubernetes {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        if let Some(url) = &self.url {
            c.url("integrations.kubernetes.url", url)?;
        }
        c.timeout("integrations.kubernetes.timeout_secs", self.timeout_secs)?;
        c.auth("integrations.kubernetes", &self.auth)?;
        let mut names: Vec<String> = Vec::new();
        for (i, cluster) in self.named_clusters().iter().enumerate() {
            let key = format!("integrations.kubernetes.clusters[{i}]");
            let ok = !cluster.name.is_empty()
                && cluster
                    .name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
            if !ok {
                return Err(c.invalid(
                    &format!("{key}.name"),
                    "a cluster name (letters, digits, -, _ and .)",
                    format!("{:?}", cluster.name),
                ));
            }
            if names.contains(&cluster.name) {
                return Err(c.invalid(
                    &format!("{key}.name"),
                    "a name no other cluster has",
                    format!("{:?} twice", cluster.name),
                ));
            }
            names.push(cluster.name.clone());
            match (&cluster.context, &cluster.server) {
                (Some(_), None) => {}
                (None, Some(url)) => c.url(&format!("{key}.server"), url)?,
                _ => {
                    return Err(c.invalid(
                        &key,
                        "either `context` or `server`",
                        format!("cluster {:?}", cluster.name),
                    ));
                }
            }
            if let Some(t) = &cluster.token {
                c.credential(&format!("{key}.token"), t)?;
            }
        }
        Ok(())
    }
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

impl Loki {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.url("integrations.loki.url", &self.url)?;
        c.timeout("integrations.loki.timeout_secs", self.timeout_secs)?;
        c.auth("integrations.loki", &self.auth)
    }
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

impl GitHub {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.url("integrations.github.url", &self.url)?;
        c.timeout("integrations.github.timeout_secs", self.timeout_secs)?;
        c.auth("integrations.github", &self.auth)?;
        let parts: Vec<&str> = self.repo.split('/').collect();
        if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
            return Err(c.invalid(
                "integrations.github.repo",
                "\"owner/name\"",
                format!("{:?}", self.repo),
            ));
        }
        Ok(())
    }
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

impl Postgres {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        if !(self.url.starts_with("postgres://") || self.url.starts_with("postgresql://")) {
            return Err(c.invalid(
                "integrations.postgres.url",
                "a postgres:// or postgresql:// URL",
                format!("a value of {} characters", self.url.chars().count()),
            ));
        }
        c.timeout("integrations.postgres.timeout_secs", self.timeout_secs)?;
        if let Some(pw) = &self.password
            && (!is_secret_reference(pw) || pw.contains(char::is_whitespace))
        {
            return Err(c.invalid(
                "integrations.postgres.password",
                "a reference such as \"env:PGPASSWORD\", \"op://vault/item/field\" or \"vault://secret/app#password\", not the password itself",
                format!("a value of {} characters", pw.chars().count()),
            ));
        }
        let name = &self.application_name;
        if name.is_empty()
            || name.len() > 63
            || !name.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        {
            return Err(c.invalid(
                "integrations.postgres.application_name",
                "1 to 63 printable ASCII characters",
                format!("{name:?}"),
            ));
        }
        Ok(())
    }
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

impl Aws {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        let region_ok = !self.region.is_empty()
            && self
                .region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !region_ok {
            return Err(c.invalid(
                "integrations.aws.region",
                "an AWS region such as \"eu-west-1\"",
                format!("{:?}", self.region),
            ));
        }
        if let Some(url) = &self.endpoint_url {
            c.url("integrations.aws.endpoint_url", url)?;
        }
        c.timeout("integrations.aws.timeout_secs", self.timeout_secs)?;
        if let Some(p) = &self.profile
            && (p.is_empty() || p.contains(|c: char| c.is_whitespace() || c == ']'))
        {
            return Err(c.invalid(
                "integrations.aws.profile",
                "a profile name of ~/.aws/config",
                format!("{p:?}"),
            ));
        }
        for (key, value) in [
            ("secret_access_key", &self.secret_access_key),
            ("session_token", &self.session_token),
        ] {
            if let Some(v) = value
                && (!is_secret_reference(v) || v.contains(char::is_whitespace))
            {
                return Err(c.invalid(
                    &format!("integrations.aws.{key}"),
                    "a reference such as \"env:AWS_SECRET_ACCESS_KEY\", \"op://vault/item/field\" or \"vault://secret/aws#key\", not the secret itself",
                    format!("a value of {} characters", v.chars().count()),
                ));
            }
        }
        if let Some(id) = &self.access_key_id
            && (!is_secret_reference(id) || id.contains(char::is_whitespace))
            && (id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()))
        {
            return Err(c.invalid(
                "integrations.aws.access_key_id",
                "an access key ID (letters and digits) or a reference",
                format!("a value of {} characters", id.chars().count()),
            ));
        }
        if self.access_key_id.is_some() != self.secret_access_key.is_some()
            || (self.session_token.is_some() && self.secret_access_key.is_none())
        {
            return Err(c.invalid(
                "integrations.aws",
                "access_key_id and secret_access_key together (session_token only with them)",
                "one of them alone".into(),
            ));
        }
        Ok(())
    }
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

impl PagerDuty {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.url("integrations.pagerduty.url", &self.url)?;
        c.timeout("integrations.pagerduty.timeout_secs", self.timeout_secs)?;
        c.auth("integrations.pagerduty", &self.auth)?;
        if let Some(reference) = &self.webhook_secret {
            let ok = reference.strip_prefix("env:").is_some_and(|v| {
                !v.is_empty()
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !v.starts_with(|c: char| c.is_ascii_digit())
            });
            if !ok {
                return Err(c.invalid(
                    "integrations.pagerduty.webhook_secret",
                    "a reference such as \"env:PAGERDUTY_WEBHOOK_SECRET\", not the secret itself",
                    format!("a value of {} characters", reference.chars().count()),
                ));
            }
        }
        Ok(())
    }
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

impl Jira {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.url("integrations.jira.url", &self.url)?;
        c.timeout("integrations.jira.timeout_secs", self.timeout_secs)?;
        c.text(
            "integrations.jira.email",
            &self.email,
            "the Atlassian account's email",
        )?;
        c.reference("integrations.jira.api_token", &self.api_token)?;
        let key_ok = !self.project.is_empty()
            && self
                .project
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(c.invalid(
                "integrations.jira.project",
                "a project key such as \"OPS\"",
                format!("{:?}", self.project),
            ));
        }
        c.text(
            "integrations.jira.issue_type",
            &self.issue_type,
            "an issue type name",
        )
    }
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

impl Datadog {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        let site_ok = !self.site.is_empty()
            && self
                .site
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        if !site_ok {
            return Err(c.invalid(
                "integrations.datadog.site",
                "a Datadog site such as \"datadoghq.com\" or \"datadoghq.eu\"",
                format!("{:?}", self.site),
            ));
        }
        if let Some(url) = &self.url {
            c.url("integrations.datadog.url", url)?;
        }
        c.timeout("integrations.datadog.timeout_secs", self.timeout_secs)?;
        for (field, v) in [("api_key", &self.api_key), ("app_key", &self.app_key)] {
            c.credential(&format!("integrations.datadog.{field}"), v)?;
        }
        Ok(())
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

impl ServeDatadog {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.credential("serve.datadog.secret", &self.secret)
    }
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

impl ServiceNow {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        c.url("integrations.servicenow.url", &self.url)?;
        c.timeout("integrations.servicenow.timeout_secs", self.timeout_secs)?;
        c.text(
            "integrations.servicenow.username",
            &self.username,
            "a user name",
        )?;
        c.reference("integrations.servicenow.password", &self.password)?;
        c.text(
            "integrations.servicenow.category",
            &self.category,
            "a category",
        )
    }
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
