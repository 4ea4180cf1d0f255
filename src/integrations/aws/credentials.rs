//! AWS credentials: by reference through the keyring (read once the operator approved them), or
//! from the standard chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, then
//! a profile of `~/.aws/credentials` and `~/.aws/config`).

use secrecy::{ExposeSecret, SecretString};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// A key pair and an optional session token; the secret parts are never printed.
#[derive(Clone)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: SecretString,
    pub session_token: Option<SecretString>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// The values no output may show: the secret key and the session token.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.secret_access_key.expose_secret().to_string()];
        if let Some(t) = &self.session_token {
            out.push(t.expose_secret().to_string());
        }
        out
    }
}

/// The standard chain. With a profile configured, that profile alone (as the AWS SDKs do for an
/// explicit profile); otherwise the environment's key pair, then the profile `AWS_PROFILE` names
/// (or `default`). `env` reads an environment variable.
pub fn from_chain(
    env: &dyn Fn(&str) -> Option<String>,
    profile: Option<&str>,
) -> Result<AwsCredentials, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if profile.is_none()
        && let (Some(id), Some(secret)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"))
    {
        return Ok(AwsCredentials {
            access_key_id: id.trim().to_string(),
            secret_access_key: SecretString::from(secret.trim().to_string()),
            session_token: get("AWS_SESSION_TOKEN")
                .map(|t| SecretString::from(t.trim().to_string())),
        });
    }
    let name = profile
        .map(str::to_string)
        .or_else(|| get("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    from_profile(env, &name)
}

fn aws_file(env: &dyn Fn(&str) -> Option<String>, var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = env(var).filter(|p| !p.trim().is_empty()) {
        return Some(PathBuf::from(p));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".aws").join(name))
}

/// The key pair of profile `name`: the credentials file's `[name]`, else the config file's
/// `[profile name]` (`[default]` for the default profile).
fn from_profile(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<AwsCredentials, String> {
    let creds_file = aws_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_file = aws_file(env, "AWS_CONFIG_FILE", "config");
    let read = |p: &Option<PathBuf>| {
        p.as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| parse_ini(&t))
            .unwrap_or_default()
    };
    let creds = read(&creds_file);
    let config = read(&config_file);
    let config_section = if name == "default" {
        config
            .get("default")
            .or_else(|| config.get("profile default"))
    } else {
        config.get(&format!("profile {name}"))
    };
    let sections: Vec<&BTreeMap<String, String>> = [creds.get(name), config_section]
        .into_iter()
        .flatten()
        .collect();
    if sections.is_empty() {
        return Err(format!(
            "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and profile {name:?} is in neither {} nor {}",
            shown(&creds_file),
            shown(&config_file)
        ));
    }
    for s in &sections {
        if let (Some(id), Some(secret)) =
            (s.get("aws_access_key_id"), s.get("aws_secret_access_key"))
        {
            return Ok(AwsCredentials {
                access_key_id: id.clone(),
                secret_access_key: SecretString::from(secret.clone()),
                session_token: s
                    .get("aws_session_token")
                    .map(|t| SecretString::from(t.clone())),
            });
        }
    }
    let unsupported: Vec<&str> = [
        "role_arn",
        "sso_session",
        "sso_start_url",
        "credential_process",
        "web_identity_token_file",
    ]
    .into_iter()
    .filter(|k| sections.iter().any(|s| s.contains_key(*k)))
    .collect();
    if unsupported.is_empty() {
        Err(format!(
            "profile {name:?} has no aws_access_key_id and aws_secret_access_key"
        ))
    } else {
        Err(format!(
            "profile {name:?} uses {}, which is not supported; give a key pair (e.g. the output of `aws configure export-credentials --profile {name} --format env`)",
            unsupported.join(", ")
        ))
    }
}

fn shown(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "~/.aws (no HOME)".to_string())
}

/// `[section]` -> key -> value, for the AWS shared files. Comments (`#`, `;`) and indented
/// sub-settings (`s3 =` blocks) are skipped.
fn parse_ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for raw in text.lines() {
        if raw.starts_with([' ', '\t']) {
            continue;
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        if let (Some(section), Some((k, v))) = (&current, line.split_once('=')) {
            let v = v.trim();
            if v.is_empty() {
                continue;
            }
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn environment_first_then_profiles() {
        let env = env_of(vec![
            ("AWS_ACCESS_KEY_ID", "AKIAENV".into()),
            ("AWS_SECRET_ACCESS_KEY", "env-secret-value".into()),
            ("AWS_SESSION_TOKEN", "env-token-value".into()),
        ]);
        let c = from_chain(&env, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIAENV");
        assert_eq!(c.secrets(), vec!["env-secret-value", "env-token-value"]);
        assert!(!format!("{c:?}").contains("env-secret-value"));

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        let write = |p: &PathBuf, t: &str| std::fs::write(p, t).unwrap_or_else(|e| panic!("{e}"));
        write(
            &creds,
            "# comment\n[default]\naws_access_key_id = AKIADEF\naws_secret_access_key = def-secret\n\n[ops]\naws_access_key_id=AKIAOPS\naws_secret_access_key=ops-secret\naws_session_token=ops-token\n",
        );
        write(
            &config,
            "[profile cfg]\nregion = eu-west-1\naws_access_key_id = AKIACFG\naws_secret_access_key = cfg-secret\ns3 =\n  max_concurrent_requests = 20\n[profile sso]\nsso_session = corp\n",
        );
        let files = vec![
            ("AWS_SHARED_CREDENTIALS_FILE", creds.display().to_string()),
            ("AWS_CONFIG_FILE", config.display().to_string()),
            ("AWS_ACCESS_KEY_ID", "AKIAENV".into()),
            ("AWS_SECRET_ACCESS_KEY", "env-secret-value".into()),
        ];
        // An explicit profile wins over the environment.
        let env = env_of(files.clone());
        let c = from_chain(&env, Some("ops")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIAOPS");
        assert_eq!(c.secrets(), vec!["ops-secret", "ops-token"]);
        let c = from_chain(&env, Some("cfg")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIACFG");
        let err = from_chain(&env, Some("sso")).err().unwrap_or_default();
        assert!(err.contains("sso_session"), "{err}");
        let err = from_chain(&env, Some("nope")).err().unwrap_or_default();
        assert!(err.contains("\"nope\""), "{err}");
        // Without one: the environment, else AWS_PROFILE, else default.
        let c = from_chain(&env, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIAENV");
        let mut no_env = files[..2].to_vec();
        let c = from_chain(&env_of(no_env.clone()), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIADEF");
        no_env.push(("AWS_PROFILE", "ops".into()));
        let c = from_chain(&env_of(no_env), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.access_key_id, "AKIAOPS");
    }
}
