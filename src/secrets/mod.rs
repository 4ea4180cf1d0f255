//! Credentials by reference (`env:VAR`, `op://vault/item/field`, `vault://mount/path#field`),
//! resolved lazily and only once the operator approved their use for the session.
//!
//! A reference is not a secret (it is shown, recorded and approved); the value it resolves to is
//! held in a [`SecretString`] and never serialized. The [`Keyring`] is the gate: it refuses to
//! resolve a reference nobody approved, so an unapproved `op://` never even starts `op`.

use secrecy::SecretString;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// How long resolving one reference may take (a locked 1Password app, an unreachable Vault).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a credential could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SecretError {
    #[error("{reference:?} is not a credential reference: {why}")]
    Syntax { reference: String, why: String },
    #[error("credential {0} needs the operator's approval for this session first")]
    NotApproved(String),
    #[error("credential {reference} was denied for this session{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    Denied { reference: String, reason: String },
    #[error("credential {reference}: {why}")]
    Resolve { reference: String, why: String },
}

/// Where a credential lives.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretRef {
    /// An environment variable of this process.
    Env(String),
    /// A 1Password secret reference, read with `op read`.
    OnePassword(String),
    /// A Vault/OpenBao KV v2 secret: `vault://<mount>/<path>#<field>`.
    Vault {
        mount: String,
        path: String,
        field: String,
    },
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretRef::Env(v) => write!(f, "env:{v}"),
            SecretRef::OnePassword(r) => f.write_str(r),
            SecretRef::Vault { mount, path, field } => {
                write!(f, "vault://{mount}/{path}#{field}")
            }
        }
    }
}

impl fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretRef({self})")
    }
}

/// Whether `text` is written as a reference (rather than a bare environment variable name, as
/// the older `*_env` fields take).
pub fn is_reference(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("env:") || t.starts_with("op://") || t.starts_with("vault://")
}

impl SecretRef {
    pub fn parse(text: &str) -> Result<SecretRef, SecretError> {
        let t = text.trim();
        let bad = |why: &str| SecretError::Syntax {
            reference: t.chars().take(80).collect(),
            why: why.to_string(),
        };
        if let Some(var) = t.strip_prefix("env:") {
            let ok = !var.is_empty()
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !var.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(bad(
                    "env: takes an environment variable name (letters, digits, _)",
                ));
            }
            return Ok(SecretRef::Env(var.to_string()));
        }
        if let Some(rest) = t.strip_prefix("op://") {
            let parts: Vec<&str> = rest.split('/').collect();
            if parts.len() < 3 || parts.iter().any(|p| p.trim().is_empty()) {
                return Err(bad("op:// takes op://vault/item/field"));
            }
            if t.chars().any(|c| c.is_control()) {
                return Err(bad("control characters in an op:// reference"));
            }
            return Ok(SecretRef::OnePassword(t.to_string()));
        }
        if let Some(rest) = t.strip_prefix("vault://") {
            let (path, field) = rest
                .split_once('#')
                .ok_or_else(|| bad("vault:// takes vault://mount/path#field"))?;
            let path = path.trim_matches('/');
            let (mount, path) = path
                .split_once('/')
                .ok_or_else(|| bad("vault:// takes vault://mount/path#field"))?;
            // `vault://secret/data/app#f` (the API path, as `vault kv get -output-curl-string`
            // shows it) means the same as `vault://secret/app#f`.
            let path = path.strip_prefix("data/").unwrap_or(path);
            let ok = |s: &str| {
                !s.is_empty()
                    && s.split('/').all(|seg| !seg.is_empty() && seg != "..")
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./@".contains(c))
            };
            if !ok(mount) || !ok(path) || field.is_empty() || field.chars().any(char::is_control) {
                return Err(bad("vault:// takes vault://mount/path#field"));
            }
            return Ok(SecretRef::Vault {
                mount: mount.to_string(),
                path: path.to_string(),
                field: field.to_string(),
            });
        }
        Err(bad(
            "expected env:VAR, op://vault/item/field or vault://mount/path#field",
        ))
    }

    /// Reads the value from where it lives. Called only by the [`Keyring`], after approval.
    async fn fetch(&self) -> Result<SecretString, String> {
        match self {
            SecretRef::Env(var) => match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(SecretString::from(v)),
                _ => Err(format!("environment variable {var} is not set")),
            },
            SecretRef::OnePassword(reference) => op_read(reference).await,
            SecretRef::Vault { mount, path, field } => vault_read(mount, path, field).await,
        }
    }
}

/// `op read --no-newline <ref>`, as a child process (never a shell), its output captured.
async fn op_read(reference: &str) -> Result<SecretString, String> {
    let out = tokio::process::Command::new("op")
        .arg("read")
        .arg("--no-newline")
        .arg(reference)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RESOLVE_TIMEOUT, out)
        .await
        .map_err(|_| format!("`op read` gave no answer in {RESOLVE_TIMEOUT:?}"))?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "the 1Password CLI `op` is not installed (not on PATH)".to_string()
            }
            _ => format!("cannot run `op`: {e}"),
        })?;
    if !out.status.success() {
        // op's own message ("not signed in", "item not found"); it never holds the value.
        let msg = String::from_utf8_lossy(&out.stderr);
        let line = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "`op read` failed ({}): {}",
            out.status,
            line.chars().take(200).collect::<String>()
        ));
    }
    let value = String::from_utf8(out.stdout).map_err(|_| "`op read` answered non-UTF-8")?;
    let value = value.trim_end_matches(['\n', '\r']).to_string();
    if value.is_empty() {
        return Err("`op read` answered an empty value".into());
    }
    Ok(SecretString::from(value))
}

/// The Vault token: `VAULT_TOKEN`, else the file `vault login` writes (`~/.vault-token`).
fn vault_token() -> Result<SecretString, String> {
    if let Ok(t) = std::env::var("VAULT_TOKEN")
        && !t.trim().is_empty()
    {
        return Ok(SecretString::from(t.trim().to_string()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let path = home
        .map(|h| h.join(".vault-token"))
        .ok_or("no VAULT_TOKEN and no home directory for ~/.vault-token")?;
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => Ok(SecretString::from(t.trim().to_string())),
        _ => Err(format!(
            "no VAULT_TOKEN and no token in {} (run `vault login`)",
            path.display()
        )),
    }
}

/// `GET {VAULT_ADDR}/v1/<mount>/data/<path>` (KV version 2), the field from `data.data`.
async fn vault_read(mount: &str, path: &str, field: &str) -> Result<SecretString, String> {
    use secrecy::ExposeSecret;
    let addr = std::env::var("VAULT_ADDR")
        .ok()
        .filter(|a| !a.trim().is_empty())
        .ok_or("VAULT_ADDR is not set")?;
    let token = vault_token()?;
    let url = format!("{}/v1/{mount}/data/{path}", addr.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(RESOLVE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let mut req = client
        .get(&url)
        .header("X-Vault-Token", token.expose_secret());
    if let Ok(ns) = std::env::var("VAULT_NAMESPACE")
        && !ns.is_empty()
    {
        req = req.header("X-Vault-Namespace", ns);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| format!("GET {url}: {}", innermost(&e)))?;
    let status = resp.status();
    let body: serde_json::Value = resp
        .json()
        .await
        .map_err(|e| format!("GET {url}: answer is not JSON: {e}"))?;
    if !status.is_success() {
        let errors = body
            .get("errors")
            .and_then(|e| e.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default();
        return Err(format!("GET {url}: {status} {errors}"));
    }
    match body.pointer("/data/data").and_then(|d| d.get(field)) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => {
            Ok(SecretString::from(s.to_string()))
        }
        Some(serde_json::Value::Number(n)) => Ok(SecretString::from(n.to_string())),
        Some(_) => Err(format!(
            "field {field:?} of {mount}/{path} is empty or not text"
        )),
        None => Err(format!("{mount}/{path} has no field {field:?}")),
    }
}

fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    cause
}

/// The operator's decision on one reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Pending,
    Approved,
    Denied(String),
}

struct Slot {
    reference: SecretRef,
    /// The integrations that use it.
    integrations: Vec<String>,
    decision: Decision,
    value: Option<SecretString>,
}

/// The credentials a run may use, by reference; each resolves only once approved, then is kept
/// in memory for the rest of the session.
#[derive(Default)]
pub struct Keyring {
    slots: Mutex<BTreeMap<String, Slot>>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let refs: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("Keyring")
            .field("references", &refs)
            .finish()
    }
}

impl Keyring {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Declares that `integration` authenticates with `reference`.
    pub fn register(&self, integration: &str, reference: &SecretRef) {
        let mut slots = self.lock();
        let slot = slots.entry(reference.to_string()).or_insert_with(|| Slot {
            reference: reference.clone(),
            integrations: Vec::new(),
            decision: Decision::Pending,
            value: None,
        });
        if !slot.integrations.iter().any(|i| i == integration) {
            slot.integrations.push(integration.to_string());
        }
    }

    /// The first reference `integration` uses that nobody has decided on yet.
    pub fn pending_for(&self, integration: &str) -> Option<String> {
        self.lock()
            .iter()
            .find(|(_, s)| {
                s.decision == Decision::Pending && s.integrations.iter().any(|i| i == integration)
            })
            .map(|(k, _)| k.clone())
    }

    /// Every reference with the integrations that use it.
    pub fn references(&self) -> Vec<(String, Vec<String>)> {
        self.lock()
            .iter()
            .map(|(k, s)| (k.clone(), s.integrations.clone()))
            .collect()
    }

    pub fn decision(&self, reference: &str) -> Option<Decision> {
        self.lock().get(reference).map(|s| s.decision.clone())
    }

    /// Records the operator's decision; a denial also forgets any value already read.
    pub fn decide(&self, reference: &str, decision: Decision) -> bool {
        match self.lock().get_mut(reference) {
            Some(slot) => {
                if decision != Decision::Approved {
                    slot.value = None;
                }
                slot.decision = decision;
                true
            }
            None => false,
        }
    }

    /// The value of `reference`: read once (after approval), then from memory.
    pub async fn get(&self, reference: &str) -> Result<SecretString, SecretError> {
        let secret_ref = {
            let slots = self.lock();
            let slot = slots
                .get(reference)
                .ok_or_else(|| SecretError::NotApproved(reference.to_string()))?;
            match &slot.decision {
                Decision::Pending => return Err(SecretError::NotApproved(reference.to_string())),
                Decision::Denied(reason) => {
                    return Err(SecretError::Denied {
                        reference: reference.to_string(),
                        reason: reason.clone(),
                    });
                }
                Decision::Approved => {}
            }
            if let Some(v) = &slot.value {
                return Ok(v.clone());
            }
            slot.reference.clone()
        };
        let value = secret_ref
            .fetch()
            .await
            .map_err(|why| SecretError::Resolve {
                reference: reference.to_string(),
                why,
            })?;
        if let Some(slot) = self.lock().get_mut(reference)
            && slot.decision == Decision::Approved
        {
            slot.value = Some(value.clone());
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_print_back() {
        for text in [
            "env:PGPASS",
            "op://ops/db/password",
            "vault://secret/app#password",
        ] {
            let r = SecretRef::parse(text).unwrap();
            assert_eq!(r.to_string(), text);
        }
        let api = SecretRef::parse("vault://secret/data/app/db#pw").unwrap();
        assert_eq!(
            api,
            SecretRef::Vault {
                mount: "secret".into(),
                path: "app/db".into(),
                field: "pw".into()
            }
        );
    }

    #[test]
    fn bad_references_are_refused_with_a_reason() {
        for text in [
            "PGPASS",
            "env:",
            "env:1X",
            "op://vault/item",
            "op:///item/field",
            "vault://secret#x",
            "vault://secret/app",
            "vault://secret/../x#f",
            "hunter2",
        ] {
            let e = SecretRef::parse(text).unwrap_err();
            assert!(matches!(e, SecretError::Syntax { .. }), "{text}: {e}");
        }
    }

    #[tokio::test]
    async fn nothing_resolves_before_approval_and_a_denial_sticks() {
        let k = Keyring::new();
        let var = "SITREP_SECRETS_TEST_VALUE";
        // SAFETY: this test alone reads or writes this variable.
        unsafe { std::env::set_var(var, "s3cr3t-value") };
        let r = SecretRef::parse(&format!("env:{var}")).unwrap();
        k.register("postgres", &r);
        let key = r.to_string();
        assert_eq!(k.pending_for("postgres"), Some(key.clone()));
        assert_eq!(k.pending_for("loki"), None);
        assert!(matches!(
            k.get(&key).await,
            Err(SecretError::NotApproved(_))
        ));
        k.decide(&key, Decision::Approved);
        assert_eq!(k.pending_for("postgres"), None);
        let v = k.get(&key).await.unwrap();
        assert_eq!(secrecy::ExposeSecret::expose_secret(&v), "s3cr3t-value");
        k.decide(&key, Decision::Denied("no".into()));
        let e = k.get(&key).await.unwrap_err();
        assert!(e.to_string().contains("denied"), "{e}");
    }
}
