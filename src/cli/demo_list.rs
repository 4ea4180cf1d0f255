//! The demo chooser's rows, read from the built-in scenarios: name, title, difficulty and what
//! pages the operator.

use crate::tui::chooser_state::Entry;

impl Entry {
    /// The built-in scenarios, in `sitrep demo --list` order.
    pub fn builtin() -> Vec<Entry> {
        crate::world::demo::list()
            .into_iter()
            .map(|case| {
                let files = crate::world::demo::files(case.name).unwrap_or_default();
                let file = |name: &str| -> Option<toml::Table> {
                    files
                        .iter()
                        .find(|(f, _)| f == name)
                        .and_then(|(_, text)| toml::from_str(text).ok())
                };
                let difficulty = file("case.toml")
                    .and_then(|t| t.get("difficulty")?.as_integer())
                    .and_then(|d| u32::try_from(d).ok());
                Entry {
                    name: case.name.to_string(),
                    title: case.title,
                    about: about(
                        files
                            .iter()
                            .find(|(f, _)| f == "alert.json")
                            .and_then(|(_, t)| serde_json::from_str(t).ok()),
                    ),
                    difficulty,
                }
            })
            .collect()
    }
}

/// What the operator is paged with: the alert's name, severity and namespace, as the pager
/// would say it. Never the rubric or the fixes: choosing a scenario must not give its answer.
fn about(alert: Option<serde_json::Value>) -> String {
    let Some(alert) = alert else {
        return "no alert: starts from a problem description".into();
    };
    let first = alert
        .get("alerts")
        .and_then(|a| a.get(0))
        .unwrap_or(&serde_json::Value::Null);
    let label = |k: &str| {
        first
            .get("labels")
            .and_then(|l| l.get(k))
            .or_else(|| alert.get("commonLabels").and_then(|l| l.get(k)))
            .and_then(|v| v.as_str())
    };
    let mut parts = Vec::new();
    if let Some(n) = label("alertname") {
        parts.push(format!("alert {n}"));
    }
    if let Some(s) = label("severity") {
        parts.push(s.to_string());
    }
    if let Some(ns) = label("namespace") {
        parts.push(format!("namespace {ns}"));
    }
    if parts.is_empty() {
        "an alert fires".into()
    } else {
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_entries_say_what_they_exercise() {
        let entries = Entry::builtin();
        assert_eq!(entries.len(), crate::world::demo::list().len());
        for e in &entries {
            assert!(!e.about.is_empty(), "{} has no about line", e.name);
            assert_ne!(e.title, e.name);
        }
        // The line says what pages the operator, never the diagnosis or the fix.
        for e in &entries {
            let files = crate::world::demo::files(&e.name).unwrap_or_default();
            let expect = files
                .iter()
                .find(|(f, _)| f == "expect.toml")
                .and_then(|(_, t)| toml::from_str::<toml::Table>(t).ok());
            if let Some(cat) = expect
                .as_ref()
                .and_then(|t| t.get("category")?.as_str().map(|c| c.replace('_', " ")))
            {
                assert!(
                    !e.about.contains(&cat),
                    "{}: {} gives away {cat}",
                    e.name,
                    e.about
                );
            }
            for word in ["rollout undo", "restart", "scale", "→", "nothing to fix"] {
                assert!(!e.about.contains(word), "{}: {}", e.name, e.about);
            }
        }
        let about = |name: &str| {
            entries
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.about.clone())
        };
        assert!(
            about("checkout-bad-deploy").is_some_and(|a| a.contains("alert HighErrorRate")),
            "{:?}",
            about("checkout-bad-deploy")
        );
    }
}
