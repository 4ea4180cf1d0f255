//! The checks config.toml passes after it parses: ranges, references and combinations serde
//! cannot express, each error naming the file and the key. Each section checks itself beside its
//! schema with the checks here; [`Config::validate`] runs them in one fixed order, so a file with
//! several mistakes always reports the same one first.

use super::*;

/// The checks sections share; every error names the file `path` and the key.
pub(super) struct Check<'a> {
    path: &'a Path,
}

impl Check<'_> {
    pub(super) fn invalid(&self, key: &str, expected: &str, found: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            key: key.to_string(),
            expected: expected.to_string(),
            found,
        }
    }

    pub(super) fn url(&self, key: &str, url: &str) -> Result<(), ConfigError> {
        if url.starts_with("http://") || url.starts_with("https://") {
            Ok(())
        } else {
            Err(self.invalid(key, "an http:// or https:// URL", format!("{url:?}")))
        }
    }

    pub(super) fn timeout(&self, key: &str, secs: u64) -> Result<(), ConfigError> {
        if (1..=MAX_TIMEOUT_SECS).contains(&secs) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                "a timeout between 1 and 3600 seconds",
                secs.to_string(),
            ))
        }
    }

    /// An `auth` table of the section `key`: environment variable names, never secrets.
    pub(super) fn auth(&self, key: &str, auth: &Option<Auth>) -> Result<(), ConfigError> {
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
                Err(self.invalid(
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
                    return Err(self.invalid(
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
                    return Err(self.invalid(
                        &format!("{key}.auth.header"),
                        "an HTTP header name",
                        format!("{header:?}"),
                    ));
                }
                env_name("value_env", value_env)
            }
        }
    }

    /// A credential named by where it is, never written out; an `env:` reference must name a
    /// variable (cluster tokens, Datadog keys and webhook secrets).
    pub(super) fn credential(&self, key: &str, v: &str) -> Result<(), ConfigError> {
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
            Err(self.invalid(
                key,
                "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://mount/path#field\", not the secret itself",
                format!("a value of {} characters", v.chars().count()),
            ))
        }
    }

    /// A secret given by reference, never written out (ticket systems' credentials).
    pub(super) fn reference(&self, key: &str, v: &str) -> Result<(), ConfigError> {
        if is_secret_reference(v) && !v.contains(char::is_whitespace) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://secret/app#field\", not the secret itself",
                format!("a value of {} characters", v.chars().count()),
            ))
        }
    }

    /// Text that is neither blank nor holds control characters.
    pub(super) fn text(&self, key: &str, v: &str, expected: &str) -> Result<(), ConfigError> {
        if v.trim().is_empty() || v.chars().any(char::is_control) {
            Err(self.invalid(key, expected, format!("{v:?}")))
        } else {
            Ok(())
        }
    }
}

impl Config {
    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let c = Check { path };
        let i = &self.integrations;
        if let Some(k) = &i.kubernetes {
            k.validate(&c)?;
        }
        for (name, ep) in [
            ("prometheus", &i.prometheus),
            ("alertmanager", &i.alertmanager),
        ] {
            if let Some(ep) = ep {
                ep.validate(&c, name)?;
            }
        }
        if let Some(l) = &i.loki {
            l.validate(&c)?;
        }
        if let Some(g) = &i.github {
            g.validate(&c)?;
        }
        if let Some(p) = &i.pagerduty {
            p.validate(&c)?;
        }
        if let Some(d) = &i.datadog {
            d.validate(&c)?;
        }
        if let Some(d) = &self.serve.datadog {
            d.validate(&c)?;
        }
        if let Some(a) = &i.aws {
            a.validate(&c)?;
        }
        if let Some(pg) = &i.postgres {
            pg.validate(&c)?;
        }
        if let Some(j) = &i.jira {
            j.validate(&c)?;
        }
        if let Some(n) = &i.servicenow {
            n.validate(&c)?;
        }
        self.inbox.validate(&c)?;
        self.policy.validate(&c)?;
        self.ui.validate(&c)?;
        validate_keys(&self.keys, &c)?;
        if let Some(llm) = &self.llm {
            llm.validate(&c)?;
        }
        self.mcp.validate(&c)?;
        self.notify.validate(&c)
    }
}
