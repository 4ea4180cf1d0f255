//! Configuration: config.toml from the config dir (SITREP_CONFIG overrides), with strict validation.
//!
//! Secrets are never written in the file: an `auth` table names the environment variable that holds
//! the token or password, and [`Auth::resolve`] reads it into a [`SecretString`] that lives in memory
//! only. Nothing here implements `Serialize` for a resolved secret.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod inbox;
mod integrations;
mod llm;
mod mcp;
mod notify;
mod policy;
mod ui;
mod validate;

pub use inbox::*;
pub use integrations::*;
pub use llm::*;
pub use mcp::*;
pub use notify::*;
pub use policy::*;
pub use ui::*;

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

/// The longest timeout or interval a section may set, in seconds.
const MAX_TIMEOUT_SECS: u64 = 3600;

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
        let text = include_str!("../../config.example.toml");
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
