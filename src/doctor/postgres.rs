//! The PostgreSQL check: connects as the database specialist does, then `version()`, membership
//! of `pg_monitor` and whether `pg_stat_statements` is installed.

use super::credentials;
use super::{Finding, Options, Planned, request_timeout};
use crate::config::{Config, Postgres};
use crate::integrations::postgres::SQL_METHOD;
use crate::integrations::transport::{Body, Request};
use crate::secrets::{Decision, Keyring, SecretRef};
use crate::world::clients;
use serde_json::Value;
use std::sync::Arc;

const CHECK_SQL: &str = "SELECT current_setting('server_version') AS version, current_user AS account, pg_has_role(current_user, 'pg_monitor', 'member') AS monitor, EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements') AS statements";

pub fn plan(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(pg) = config.integrations.postgres.clone() else {
        return vec![Planned::absent("postgres")];
    };
    vec![Planned::run("postgres", async move {
        match check(&pg).await {
            Ok(f) | Err(f) => f,
        }
    })]
}

/// `host:port/db` of the URL, for messages (never its password).
fn place(url: &str) -> String {
    match url.parse::<tokio_postgres::Config>() {
        Ok(c) => {
            let host = c
                .get_hosts()
                .first()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".into());
            let port = c.get_ports().first().copied().unwrap_or(5432);
            let db = c.get_dbname().unwrap_or("");
            format!("{host}:{port}/{db}")
        }
        Err(_) => "the configured server".into(),
    }
}

async fn check(pg: &Postgres) -> Result<Finding, Finding> {
    let keyring = Arc::new(Keyring::new());
    let mut reference_note = None;
    let password = match &pg.password {
        None => None,
        Some(text) => {
            let reference = SecretRef::parse(text).map_err(|e| {
                Finding::failed(e.to_string(), "correct integrations.postgres.password")
            })?;
            let note = credentials::check_reference(&reference)
                .await
                .map_err(|mut f| {
                    f.detail = format!("{} (password {reference})", f.detail);
                    f
                })?;
            match reference {
                // The environment is read as every run reads it.
                SecretRef::Env(_) => {
                    keyring.register("postgres", &reference);
                    keyring.decide(&reference.to_string(), Decision::Approved);
                    Some(reference.to_string())
                }
                // A stored password is never read here: the connection is not tried.
                other => {
                    reference_note = Some(format!("{note}, password {other} not read"));
                    None
                }
            }
        }
    };
    let place = place(&pg.url);
    if let Some(note) = reference_note {
        return Ok(Finding::ok(
            None,
            format!("{place}: connection not tried, {note}"),
        ));
    }
    let timeout = request_timeout(pg.timeout_secs);
    let backend = clients::postgres_backend(pg, password, timeout, keyring)
        .map_err(|e| Finding::failed(e, "correct integrations.postgres.url"))?;
    let req = Request::new("postgres", SQL_METHOD, CHECK_SQL);
    let resp = backend.send(&req).await.map_err(|e| {
        let mut f = Finding::from_error(&e, &place);
        let lower = f.detail.to_ascii_lowercase();
        if lower.contains("password authentication failed") || lower.contains("no password") {
            f.fix = Some("check the user in `url` and the password reference".into());
        } else if lower.contains("does not exist") {
            f.fix = Some("check the user and database names in `url`".into());
        }
        f
    })?;
    let row = match resp.body {
        Body::Json(Value::Array(rows)) => rows.into_iter().next(),
        _ => None,
    }
    .ok_or_else(|| Finding::failed("the server answered no row", ""))?;
    let text = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_string);
    let yes = |k: &str| text(k).as_deref() == Some("t");
    let version = text("version");
    let account = text("account").unwrap_or_default();
    let mut missing = Vec::new();
    if !yes("monitor") {
        missing.push(format!("{account} is not a member of pg_monitor"));
    }
    if !yes("statements") {
        missing.push("pg_stat_statements is not installed".to_string());
    }
    if missing.is_empty() {
        return Ok(Finding::ok(
            version,
            format!("{place} as {account}: pg_monitor, pg_stat_statements"),
        ));
    }
    let mut fixes = Vec::new();
    if !yes("monitor") {
        fixes.push(format!("GRANT pg_monitor TO {account};"));
    }
    if !yes("statements") {
        fixes.push("CREATE EXTENSION pg_stat_statements; (and shared_preload_libraries)".into());
    }
    Err(Finding::failed(missing.join("; "), fixes.join(" ")).with_version(version))
}
