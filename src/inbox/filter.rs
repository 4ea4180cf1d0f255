//! Label-matcher filters, as Alertmanager and karma write them: `severity=critical service=~"check.*"`.

use super::InboxAlert;
use regex::Regex;

/// Why a filter does not parse; says where and what a matcher looks like.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "filter {input:?}: {message} (matchers look like severity=critical, service=~\"api.*\", env!=dev)"
)]
pub struct FilterError {
    pub input: String,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Re,
    NotRe,
}

/// One matcher: a label, an operator and a value (a regex for `=~` and `!~`, anchored at both ends).
#[derive(Clone, Debug)]
pub struct Matcher {
    pub name: String,
    pub op: Op,
    pub value: String,
    regex: Option<Regex>,
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.op == other.op && self.value == other.value
    }
}

impl Matcher {
    pub fn matches(&self, alert: &InboxAlert) -> bool {
        let v = match self.name.as_str() {
            "alertname" => alert
                .labels
                .get("alertname")
                .map(String::as_str)
                .unwrap_or(&alert.alertname),
            "@state" => alert.state.name(),
            "@source" => alert.source.name(),
            name => alert.labels.get(name).map(String::as_str).unwrap_or(""),
        };
        match self.op {
            Op::Eq => v == self.value,
            Op::Ne => v != self.value,
            Op::Re => self.regex.as_ref().is_some_and(|r| r.is_match(v)),
            Op::NotRe => !self.regex.as_ref().is_some_and(|r| r.is_match(v)),
        }
    }
}

/// A conjunction of matchers; bare words match the alert name or title, case-insensitively.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub matchers: Vec<Matcher>,
    pub words: Vec<String>,
}

impl Filter {
    pub fn parse(input: &str) -> Result<Filter, FilterError> {
        let err = |message: String| FilterError {
            input: input.to_string(),
            message,
        };
        let mut filter = Filter::default();
        for token in tokens(input).map_err(err)? {
            let Some(pos) = token.find(['=', '!']) else {
                filter.words.push(token.to_lowercase());
                continue;
            };
            let name = token[..pos].trim();
            let rest = &token[pos..];
            let (op, value) = if let Some(v) = rest.strip_prefix("=~") {
                (Op::Re, v)
            } else if let Some(v) = rest.strip_prefix("!~") {
                (Op::NotRe, v)
            } else if let Some(v) = rest.strip_prefix("!=") {
                (Op::Ne, v)
            } else if let Some(v) = rest.strip_prefix('=') {
                (Op::Eq, v)
            } else {
                return Err(err(format!("{token:?}: expected =, !=, =~ or !~")));
            };
            let valid_name = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '@');
            if !valid_name {
                return Err(err(format!("{token:?}: {name:?} is not a label name")));
            }
            let value = unquote(value);
            let regex = match op {
                Op::Re | Op::NotRe => Some(
                    Regex::new(&format!("^(?:{value})$"))
                        .map_err(|e| err(format!("{token:?}: bad regex: {e}")))?,
                ),
                _ => None,
            };
            filter.matchers.push(Matcher {
                name: name.to_string(),
                op,
                value,
                regex,
            });
        }
        Ok(filter)
    }

    pub fn is_empty(&self) -> bool {
        self.matchers.is_empty() && self.words.is_empty()
    }

    pub fn matches(&self, alert: &InboxAlert) -> bool {
        self.matchers.iter().all(|m| m.matches(alert))
            && self.words.iter().all(|w| {
                alert.alertname.to_lowercase().contains(w) || alert.title.to_lowercase().contains(w)
            })
    }
}

/// Splits on whitespace outside double quotes; a backslash escapes the next character inside quotes.
fn tokens(input: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            '\\' if quoted => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            // Commas separate matchers too, as in `{a="b", c="d"}`.
            ',' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            '{' | '}' if !quoted => {}
            c => cur.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => {
            let mut out = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                } else {
                    out.push(c);
                }
            }
            out
        }
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AlertState, Source};
    use super::*;
    use std::collections::BTreeMap;

    fn alert(labels: &[(&str, &str)]) -> InboxAlert {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        InboxAlert {
            source: Source::Alertmanager,
            alertname: labels.get("alertname").cloned().unwrap_or_default(),
            title: "payments errors".into(),
            labels,
            annotations: BTreeMap::new(),
            state: AlertState::Firing,
            starts_at: None,
            fingerprint: String::new(),
            severity: String::new(),
            silenced_by: vec![],
            inhibited_by: vec![],
            url: String::new(),
            incident_id: None,
            assignees: vec![],
            also_in: vec![],
        }
    }

    #[test]
    fn matchers_follow_alertmanager_semantics() {
        let a = alert(&[
            ("alertname", "CheckoutDown"),
            ("severity", "critical"),
            ("service", "checkout-api"),
        ]);
        let yes = |f: &str| match Filter::parse(f) {
            Ok(f) => f.matches(&a),
            Err(e) => panic!("{e}"),
        };
        assert!(yes("severity=critical service=~\"check.*\""));
        assert!(yes("{severity=\"critical\", service!=\"web\"}"));
        assert!(!yes("service=~\"check\""), "regexes are anchored");
        assert!(yes("team!~\".+\""), "a missing label is the empty string");
        assert!(!yes("team=~\".+\""));
        assert!(yes("@state=firing @source=alertmanager"));
        assert!(yes("payments"), "bare words search the title");
        assert!(!yes("severity=warning"));
        assert!(yes(""));
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        for (bad, says) in [
            ("service=~\"(\"", "bad regex"),
            ("severity=\"crit", "unterminated"),
            ("=x", "not a label name"),
            ("a!b", "expected"),
        ] {
            let e = Filter::parse(bad).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(e.contains("severity=critical"), "{e}");
        }
    }
}
