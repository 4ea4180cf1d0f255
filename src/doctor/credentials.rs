//! Credentials as doctor uses them: environment variables are read, `op://` and `vault://`
//! references are checked where they live (`op` signed in, Vault's `lookup-self`) but never read.

use super::{Finding, REQUEST_BUDGET};
use crate::config::{Auth, Config, ResolvedAuth};
use crate::integrations::transport::{Endpoint, LiveTransport, Request, Transport};
use crate::secrets::SecretRef;
use secrecy::SecretString;
use std::path::PathBuf;

/// What an integration can authenticate with.
pub enum Credential {
    /// No `auth` configured.
    None,
    /// Read from the environment.
    Resolved(ResolvedAuth),
    /// A reference whose store is ready (what was checked), never read.
    Reference { reference: String, note: String },
}

/// The credential an `auth` table (or a credential field) names, or why it cannot be had (a
/// failed finding); `field` is its key in the config, for messages.
pub async fn of(config: &Config, field: &str, auth: Option<&Auth>) -> Result<Credential, Finding> {
    let Some(auth) = auth else {
        return Ok(Credential::None);
    };
    let text = auth.secret_env().trim();
    if text.starts_with("op://") || text.starts_with("vault://") {
        let reference = SecretRef::parse(text)
            .map_err(|e| Finding::failed(e.to_string(), format!("correct {field}")))?;
        let note = check_reference(&reference).await.map_err(|mut f| {
            f.detail = format!("{} ({reference})", f.detail);
            f
        })?;
        return Ok(Credential::Reference {
            reference: reference.to_string(),
            note,
        });
    }
    let path = config
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.toml"));
    let var = text.strip_prefix("env:").unwrap_or(text);
    auth.resolve(&path, field)
        .map(Credential::Resolved)
        .map_err(|_| {
            Finding::failed(
                format!("environment variable {var} (named by {field}) is not set"),
                format!("export {var} with the credential before running sitrep"),
            )
        })
}

/// Whether the store a reference lives in is usable now, without reading the value: what was
/// checked, or a failed finding saying what to do.
pub async fn check_reference(reference: &SecretRef) -> Result<String, Finding> {
    match reference {
        SecretRef::Env(var) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(format!("env:{var} is set")),
            _ => Err(Finding::failed(
                format!("environment variable {var} is not set"),
                format!("export {var} with the credential before running sitrep"),
            )),
        },
        SecretRef::OnePassword(_) => op_signed_in().await,
        SecretRef::Vault { .. } => vault_token_valid().await,
    }
}

/// `op whoami`: `op` is on PATH and signed in.
async fn op_signed_in() -> Result<String, Finding> {
    let out = tokio::process::Command::new("op")
        .arg("whoami")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(REQUEST_BUDGET, out).await {
        Err(_) => {
            return Err(Finding::failed(
                format!(
                    "`op whoami` gave no answer in {}s",
                    REQUEST_BUDGET.as_secs()
                ),
                "unlock the 1Password app or run `op signin`",
            ));
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Finding::failed(
                "the 1Password CLI `op` is not on PATH",
                "install the 1Password CLI (`op`) or use an env:VAR reference",
            ));
        }
        Ok(Err(e)) => {
            return Err(Finding::failed(
                format!("cannot run `op`: {e}"),
                "check the 1Password CLI installation",
            ));
        }
        Ok(Ok(out)) => out,
    };
    if out.status.success() {
        return Ok("op signed in".into());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line: String = stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .chars()
        .take(120)
        .collect();
    Err(Finding::failed(
        if line.is_empty() {
            "`op` is not signed in".to_string()
        } else {
            format!("`op` is not signed in: {line}")
        },
        "run `op signin` (or set OP_SERVICE_ACCOUNT_TOKEN)",
    ))
}

/// The Vault token (`VAULT_TOKEN`, else `~/.vault-token`); it authenticates to Vault, it is not
/// the referenced secret.
fn vault_token() -> Option<SecretString> {
    if let Ok(t) = std::env::var("VAULT_TOKEN")
        && !t.trim().is_empty()
    {
        return Some(SecretString::from(t.trim().to_string()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    match std::fs::read_to_string(home.join(".vault-token")) {
        Ok(t) if !t.trim().is_empty() => Some(SecretString::from(t.trim().to_string())),
        _ => None,
    }
}

/// `GET $VAULT_ADDR/v1/auth/token/lookup-self`: Vault answers and accepts the token.
async fn vault_token_valid() -> Result<String, Finding> {
    let Some(addr) = std::env::var("VAULT_ADDR")
        .ok()
        .filter(|a| !a.trim().is_empty())
    else {
        return Err(Finding::failed(
            "VAULT_ADDR is not set",
            "export VAULT_ADDR (e.g. https://vault.example.com:8200)",
        ));
    };
    let Some(token) = vault_token() else {
        return Err(Finding::failed(
            "no Vault token (VAULT_TOKEN or ~/.vault-token)",
            "run `vault login` or export VAULT_TOKEN",
        ));
    };
    let mut ep = Endpoint::new(addr.trim_end_matches('/'))
        .timeout(REQUEST_BUDGET)
        .auth(Some(ResolvedAuth::Header {
            name: "X-Vault-Token".into(),
            value: token,
        }));
    if let Ok(ns) = std::env::var("VAULT_NAMESPACE")
        && !ns.is_empty()
    {
        ep.headers.push(("X-Vault-Namespace".into(), ns));
    }
    let transport = LiveTransport::new()
        .map_err(|e| Finding::failed(e.to_string(), ""))?
        .with_endpoint("vault", ep);
    let req = Request::get("vault", "/v1/auth/token/lookup-self");
    let resp = transport
        .send(&req)
        .await
        .and_then(|r| r.success(&req))
        .map_err(|e| {
            let (reason, fix) = super::reason_and_fix(&e.kind, &addr);
            let fix = match e.status() {
                Some(401 | 403) => {
                    "the Vault token is expired or revoked: run `vault login`".into()
                }
                _ => fix,
            };
            Finding::failed(format!("Vault: {reason}"), fix)
        })?;
    drop(resp);
    Ok("Vault token valid".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unset_environment_variable_is_named() {
        let auth = Auth::Bearer {
            token_env: "SITREP_DOCTOR_SURELY_UNSET".into(),
        };
        let found = of(
            &Config::default(),
            "integrations.prometheus.auth",
            Some(&auth),
        )
        .await;
        let Err(f) = found else {
            panic!("an unset variable must fail");
        };
        assert!(f.detail.contains("SITREP_DOCTOR_SURELY_UNSET"), "{f:?}");
    }
}
