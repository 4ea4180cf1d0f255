//! Redaction of secrets from anything an integration returns, before it becomes evidence or a recording.

use regex::{Captures, Regex};
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

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let spec: &[(&str, &'static str)] = &[
            // PEM private keys; `[^"]` keeps a match inside one JSON string.
            (
                r#"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"#,
                MASK,
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
            // key=value and key: value pairs whose key names a secret (also AWS secret keys).
            (
                r#"(?i)\b([A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?)[A-Za-z0-9_.\-]*)("?'?\s*[=:]\s*"?'?)([^\s&"',;}{\]\[<>]{2,})"#,
                "${1}${2}[REDACTED]",
            ),
        ];
        spec.iter()
            .filter_map(|(pattern, with)| {
                // The patterns are constants; a typo would show up in the unit tests below.
                Regex::new(pattern).ok().map(|re| Rule { re, with })
            })
            .collect()
    })
}

/// Names of JSON object keys whose values are always secret.
fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
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
    if k.ends_with("name") || k.ends_with("ref") || k.ends_with("refs") {
        return false;
    }
    NAMES.iter().any(|n| k.contains(n))
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
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if is_secret_key(key) && matches!(v, Value::String(_) | Value::Number(_)) {
                        *v = Value::String(MASK.to_string());
                    } else {
                        self.redact_json(v);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().len(), 6);
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
}
