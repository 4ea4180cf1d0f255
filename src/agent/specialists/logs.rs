//! The logs specialist: Loki queries for errors around the onset and the workload's recent lines.

use super::triage::problem_words;
use super::{Caller, Scope, rfc3339};
use crate::agent::evidence::Chart;
use crate::agent::tools::{params, s};
use crate::model::Event;
use crate::reason::Observations;
use chrono::Duration as ChronoDuration;
use serde_json::json;
use std::sync::Mutex;

/// The LogQL stream selector for the scope.
pub fn log_selector(scope: &Scope) -> Option<String> {
    let ns = scope.namespace.as_ref()?;
    Some(match &scope.workload {
        Some(w) => format!("{{namespace=\"{ns}\", app=\"{w}\"}}"),
        None => format!("{{namespace=\"{ns}\"}}"),
    })
}

/// The stream selector for the subject when no namespace is known: the names the alert or
/// problem gives (a workload, a pod, or the problem's words), matched against the labels log
/// shippers set (`app`, `container`, `pod`). None when nothing names anything.
fn subject_stream_selector(scope: &Scope) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    names.extend(scope.workload.iter().cloned());
    names.extend(scope.pod.iter().cloned());
    if names.is_empty()
        && let Some(p) = &scope.problem
    {
        names.extend(
            problem_words(p)
                .into_iter()
                .filter(|w| w.contains('-'))
                .take(3),
        );
    }
    names.retain(|n| {
        n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    });
    if names.is_empty() {
        return None;
    }
    let alternatives = names.join("|");
    Some(format!("{{app=~\"{alternatives}\"}}"))
}

pub(super) async fn logs(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let selector = match (&scope.namespace, subject_stream_selector(scope)) {
        (Some(ns), _) => format!("{{namespace=\"{ns}\"}}"),
        (None, Some(sel)) => sel,
        (None, None) => {
            c.emit(Event::Warning {
                message: "logs: the alert or problem names no namespace and nothing its logs are labelled with, so no log query".into(),
            });
            return;
        }
    };
    let none = Chart::default();
    let around = params([
        (
            "query",
            s(format!(
                "{selector} |~ \"(?i)(error|exception|fatal|panic|timeout|refused|failed)\""
            )),
        ),
        ("start", rfc3339(scope.onset - ChronoDuration::minutes(30))),
        ("end", rfc3339(scope.now)),
        ("limit", Some(json!(500))),
        ("direction", s("backward")),
    ]);
    c.call("loki.query_range", around, &none, obs).await;
    if let Some(sel) = log_selector(scope).filter(|_| scope.workload.is_some()) {
        let wide = params([
            ("query", s(sel)),
            ("start", rfc3339(scope.now - ChronoDuration::hours(2))),
            ("end", rfc3339(scope.now)),
            ("limit", Some(json!(300))),
            ("direction", s("backward")),
        ]);
        c.call("loki.query_range", wide, &none, obs).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    #[test]
    fn logs_are_asked_for_by_the_subjects_names_when_no_namespace_is_known() {
        let s = Scope::from_problem(
            "Why is there high latency with the customer-orders deployment?",
            Utc::now(),
        );
        assert_eq!(s.namespace, None);
        assert_eq!(
            subject_stream_selector(&s).as_deref(),
            Some("{app=~\"customer-orders\"}")
        );
        assert_eq!(
            subject_stream_selector(&Scope::from_problem("everything is slow", Utc::now())),
            None
        );
    }
}
