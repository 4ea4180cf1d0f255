//! Redaction of secrets: from anything an integration returns (before it becomes evidence or a
//! recording), from the trigger (alert, problem text), chat, warnings and errors.

use regex::{Captures, Regex, RegexSet};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// What every redacted secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Credentials shorter than this are not masked by exact value: masking every "ab" in a body would
/// destroy the evidence while protecting nothing a pattern would not.
const MIN_EXACT_LEN: usize = 4;

struct Rule {
    re: Regex,
    /// Replacement template; `${1}` etc. keep the non-secret prefix.
    with: &'static str,
}

/// The patterns every text is masked with, in order, and what each match becomes.
const SPEC: &[(&str, &str)] = &[
    // PEM private keys; `[^"]` keeps a match inside one JSON string.
    (
        r#"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"#,
        MASK,
    ),
    // A private key block cut short (no END line, e.g. a truncated log line): mask to the end
    // of the base64 run.
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\n|\\r)*",
        MASK,
    ),
    // GitHub tokens: personal, OAuth, user-to-server, server-to-server, refresh, fine-grained.
    (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,255}\b", MASK),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,255}", MASK),
    // Slack tokens: bot, user, workspace, refresh, legacy, app-level.
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", MASK),
    (r"\bxapp-[0-9]+-[A-Za-z0-9-]{10,}", MASK),
    // AWS secret access keys: 40 base64 characters after a name that says what they are,
    // in any of the forms configs, env dumps and logs use (`aws_secret_access_key = `,
    // `"SecretAccessKey": "`, `AWS secret key: `).
    (
        r#"(?i)((?:aws|secret)[A-Za-z0-9_ .\-]{0,24}?(?:secret|access)[A-Za-z0-9_ .\-]{0,12}?key[^A-Za-z0-9/+]{1,6})[A-Za-z0-9/+]{40}\b"#,
        "${1}[REDACTED]",
    ),
    // AWS access key ids.
    (
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        MASK,
    ),
    // JSON Web Tokens (header.payload.signature, base64url).
    (
        r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}",
        MASK,
    ),
    // Authorization headers: bearer/basic/token schemes.
    (
        r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9\-._~+/]{8,}=*",
        "${1}${2}[REDACTED]",
    ),
    // Passwords in URLs and DSNs: scheme://user:password@host.
    (
        r#"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@"'<>]*:)[^@\s/"'<>]+@"#,
        "${1}[REDACTED]@",
    ),
    // key=value and key: value pairs whose key names a secret (also AWS secret keys), and
    // the same keys in URL queries (`?token=`, `&access_token=`, `api_key=`, `password=`).
    (
        r#"(?i)\b([A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?)[A-Za-z0-9_.\-]*)("?'?\s*[=:]\s*"?'?)([^\s&"',;}{\]\[<>]{2,})"#,
        "${1}${2}[REDACTED]",
    ),
];

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        SPEC.iter()
            .filter_map(|(pattern, with)| {
                // The patterns are constants; a typo would show up in the unit tests below.
                Regex::new(pattern).ok().map(|re| Rule { re, with })
            })
            .collect()
    })
}

/// All the rules as one automaton: one pass over a text tells whether any rule matches it, so
/// the common text (no secret in it) is read once instead of once per rule.
fn any_rule() -> Option<&'static RegexSet> {
    static SET: OnceLock<Option<RegexSet>> = OnceLock::new();
    SET.get_or_init(|| RegexSet::new(SPEC.iter().map(|(pattern, _)| *pattern)).ok())
        .as_ref()
}

/// Whether the ASCII text `hay` contains `needle` (lowercase ASCII), ignoring case.
fn contains_ignoring_case(hay: &str, needle: &str) -> bool {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    needle.is_empty()
        || hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Whether `text` ends with `suffix` (lowercase ASCII), ignoring case.
fn ends_with_ignoring_case(text: &str, suffix: &str) -> bool {
    let (t, s) = (text.as_bytes(), suffix.as_bytes());
    t.len() >= s.len() && t[t.len() - s.len()..].eq_ignore_ascii_case(s)
}

/// Whether an environment variable name (`{"name": N, "value": V}` in a pod spec) says its value
/// is a secret. Connection strings (`DB_DSN`) are not masked whole: the URL rule takes their
/// password and leaves host and database, which are evidence.
pub(crate) fn is_secret_env_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "private_key",
        "credential",
        "webhook",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Names of JSON object keys whose values are always secret.
fn is_secret_key(key: &str) -> bool {
    const NAMES: [&str; 10] = [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "access_key",
        "private_key",
        "authorization",
    ];
    // Kubernetes objects name secrets by reference (`secretName`, `secretKeyRef`); those are not secrets.
    if ["name", "ref", "refs"]
        .iter()
        .any(|s| ends_with_ignoring_case(key, s))
    {
        return false;
    }
    NAMES.iter().any(|n| contains_ignoring_case(key, n))
}

/// Credentials resolved while the process runs (a password read from 1Password or Vault once the
/// operator approved it): every redactor masks them, whenever it was built.
fn learned() -> &'static std::sync::RwLock<Vec<String>> {
    static LEARNED: OnceLock<std::sync::RwLock<Vec<String>>> = OnceLock::new();
    LEARNED.get_or_init(Default::default)
}

/// Teaches every [`Redactor`] (existing and future) an exact secret value.
pub fn learn_secret(value: &str) {
    if value.len() < MIN_EXACT_LEN {
        return;
    }
    let mut all = learned().write().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|v| v == value) {
        all.push(value.to_string());
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// Masks secrets in text and JSON. Cheap to clone; shared by every transport.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Exact values of credentials in use (tokens, passwords), longest first.
    exact: Arc<Vec<String>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the credentials themselves.
        f.debug_struct("Redactor")
            .field("exact_values", &self.exact.len())
            .finish()
    }
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// A redactor that also masks these exact values (the credentials the process holds).
    pub fn with_secrets<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut exact: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|s| s.len() >= MIN_EXACT_LEN)
            .collect();
        // Longest first, so a secret containing another is masked whole.
        exact.sort_by_key(|s| std::cmp::Reverse(s.len()));
        exact.dedup();
        Self {
            exact: Arc::new(exact),
        }
    }

    /// This redactor plus more exact values.
    pub fn and_secrets<I, S>(&self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let all: Vec<String> = self
            .exact
            .iter()
            .cloned()
            .chain(more.into_iter().map(Into::into))
            .collect();
        Self::with_secrets(all)
    }

    /// Masks every secret in `text`; borrows when there is nothing to mask.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for secret in self.exact.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        {
            let learned = learned().read().unwrap_or_else(|e| e.into_inner());
            for secret in learned.iter() {
                if out.contains(secret.as_str()) {
                    out = Cow::Owned(out.replace(secret.as_str(), MASK));
                }
            }
        }
        // Most text holds no secret: one pass of all the rules at once says so.
        if any_rule().is_some_and(|set| !set.is_match(&out)) {
            return out;
        }
        for rule in rules() {
            if rule.re.is_match(&out) {
                let replaced = rule
                    .re
                    .replace_all(&out, |caps: &Captures<'_>| {
                        let mut s = String::new();
                        caps.expand(rule.with, &mut s);
                        s
                    })
                    .into_owned();
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// Masks secrets inside a JSON value in place: every string, and every value under a secret-named key.
    /// Walking the value (rather than the serialized text) keeps the JSON valid whatever is masked.
    pub fn redact_json(&self, value: &mut Value) {
        self.mask_json(value);
    }

    /// [`Redactor::redact_json`], saying whether anything was masked.
    pub fn mask_json(&self, value: &mut Value) -> bool {
        let mut masked = false;
        self.walk_json(value, &mut masked);
        masked
    }

    fn walk_json(&self, value: &mut Value, masked: &mut bool) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                    *masked = true;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk_json(v, masked)),
            Value::Object(map) => {
                // `{"name": "DB_PASSWORD", "value": "..."}`: how Kubernetes (and most APIs) list
                // environment variables; the value is secret when the name says so.
                let secret_pair = map
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(is_secret_env_name);
                if secret_pair && let Some(v @ Value::String(_)) = map.get_mut("value") {
                    *v = Value::String(MASK.to_string());
                    *masked = true;
                }
                for (key, v) in map.iter_mut() {
                    if is_secret_key(key) && matches!(v, Value::String(_) | Value::Number(_)) {
                        *v = Value::String(MASK.to_string());
                        *masked = true;
                    } else {
                        self.walk_json(v, masked);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

impl Redactor {
    /// Masks secrets in an alert: every label and annotation (a value under a secret-named key
    /// whole), and the generator URL.
    pub fn redact_alert(&self, alert: &mut crate::model::Alert) {
        self.redact_map(&mut alert.labels);
        self.redact_map(&mut alert.annotations);
        self.redact_string(&mut alert.generator_url);
        self.redact_string(&mut alert.fingerprint);
    }

    /// Masks secrets in a whole webhook payload: every alert, the group and common labels and
    /// annotations, the external URL.
    pub fn redact_payload(&self, payload: &mut crate::model::WebhookPayload) {
        for alert in &mut payload.alerts {
            self.redact_alert(alert);
        }
        self.redact_map(&mut payload.group_labels);
        self.redact_map(&mut payload.common_labels);
        self.redact_map(&mut payload.common_annotations);
        self.redact_string(&mut payload.external_url);
        self.redact_string(&mut payload.group_key);
        self.redact_string(&mut payload.receiver);
    }

    /// Masks secrets in one string in place.
    pub fn redact_string(&self, text: &mut String) {
        if let Cow::Owned(r) = self.redact(text) {
            *text = r;
        }
    }

    fn redact_map(&self, map: &mut std::collections::BTreeMap<String, String>) {
        let taken = std::mem::take(map);
        for (key, mut value) in taken {
            if is_secret_key(&key) || is_secret_env_name(&key) {
                value = MASK.to_string();
            } else {
                self.redact_string(&mut value);
            }
            // A key can hold a secret too (`token=abc` pasted as a label name).
            let key = self.redact(&key).into_owned();
            map.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().len(), 12);
        assert_eq!(any_rule().map(RegexSet::len), Some(12));
    }

    #[test]
    fn masks_the_known_shapes() {
        let r = Redactor::new();
        let cases = [
            "key AKIAIOSFODNN7EXAMPLE used",
            "Authorization: Bearer abcdefghijklmnop.qrstu",
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "postgres://app:hunter22@db.internal:5432/payments",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "connect password=s3cr3tvalue host=db",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "using ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the api",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "gho_abcdefghijklmnopqrstuvwxyz0123456789 ghs_abcdefghijklmnopqrstuvwxyz0123456789",
            "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack xoxp-123456789012-1234567890123-1234567890123-abcdef",
            "app xapp-1-A0123456789-1234567890123-abcdef0123456789",
            "https://hooks.example.com/x?token=abc123secret&ok=1",
            "GET /api?access_token=abc123secret",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
        ];
        for c in cases {
            let out = r.redact(c);
            assert!(out.contains(MASK), "not masked: {c} -> {out}");
        }
        assert!(!r.redact(cases[3]).contains("hunter22"));
        assert!(r.redact(cases[3]).contains("db.internal"));
        assert!(!r.redact(cases[5]).contains("s3cr3tvalue"));
    }

    #[test]
    fn secret_parts_are_gone_and_context_stays() {
        let r = Redactor::new();
        for (text, secret, kept) in [
            (
                "AWS secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "wJalrXUtnFEMI",
                "AWS secret key",
            ),
            (
                "tok ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
                "abcdefghijklmnop",
                "tok",
            ),
            (
                "x xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrSt y",
                "AbCdEfGh",
                " y",
            ),
            (
                "https://h/x?token=abc123secret&ok=1",
                "abc123secret",
                "ok=1",
            ),
            ("ASIAABCDEFGHIJKLMNOP", "ASIAABCDEFGHIJKLMNOP", ""),
        ] {
            let out = r.redact(text);
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains(kept), "{text} -> {out}");
        }
    }

    #[test]
    fn secret_environment_pairs_are_masked() {
        let r = Redactor::new();
        let mut v = json!({"env": [{"name": "SLACK_WEBHOOK", "value": "plainvalue123"},
            {"name": "API_KEY", "value": "plainvalue456"}, {"name": "LOG_LEVEL", "value": "debug"}]});
        r.redact_json(&mut v);
        assert_eq!(v["env"][0]["value"], MASK);
        assert_eq!(v["env"][1]["value"], MASK);
        assert_eq!(v["env"][2]["value"], "debug");
    }

    #[test]
    fn alerts_are_masked_in_labels_annotations_and_urls() {
        let r = Redactor::with_secrets(["exact-canary-value"]);
        let mut alert = crate::model::Alert::default();
        alert.labels.insert("alertname".into(), "HighErrors".into());
        alert
            .labels
            .insert("db".into(), "postgres://u:pw12345@db/x".into());
        alert.labels.insert("api_token".into(), "opaque".into());
        alert
            .annotations
            .insert("description".into(), "saw exact-canary-value".into());
        alert.generator_url = "http://prom/graph?g0.expr=up&access_token=abcdef123".into();
        r.redact_alert(&mut alert);
        let text = format!("{alert:?}");
        for secret in ["pw12345", "opaque", "exact-canary-value", "abcdef123"] {
            assert!(!text.contains(secret), "{secret}: {text}");
        }
        assert_eq!(alert.name(), "HighErrors");
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        let r = Redactor::new();
        let text = "2026-04-18T10:45:02Z INFO processing payment batch exit code 137 OOMKilled";
        assert!(matches!(r.redact(text), Cow::Borrowed(_)));
    }

    #[test]
    fn exact_values_are_masked() {
        let r = Redactor::with_secrets(["canary-9f8e7d"]);
        assert_eq!(r.redact("x canary-9f8e7d y"), "x [REDACTED] y");
        assert!(!format!("{r:?}").contains("canary"));
    }

    #[test]
    fn json_stays_valid_and_masked() {
        let r = Redactor::new();
        let mut v = json!({"token": 12345, "password": "pw-123456", "secretName": "db-creds",
            "env": [{"name": "DSN", "value": "mysql://root:toor1234@db/x"}]});
        r.redact_json(&mut v);
        assert_eq!(v["token"], MASK);
        assert_eq!(v["password"], MASK);
        assert_eq!(v["secretName"], "db-creds");
        assert_eq!(v["env"][0]["value"], "mysql://root:[REDACTED]@db/x");
    }

    #[test]
    fn learned_secrets_are_masked_by_every_redactor() {
        let before = Redactor::new();
        let value = "learned-db-pass-93ac";
        assert_eq!(before.redact(value), value);
        learn_secret(value);
        assert_eq!(before.redact(&format!("pw {value} x")), "pw [REDACTED] x");
        assert_eq!(Redactor::new().redact(value), MASK);
    }
}
