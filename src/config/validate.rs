//! The checks config.toml passes after it parses: ranges, references and combinations serde
//! cannot express, each error naming the file and the key.

use super::*;

impl Config {
    pub(super) fn validate(&self, path: &Path) -> Result<(), ConfigError> {
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
