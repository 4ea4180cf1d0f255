//! Which specialists run for a world with these integrations and this scope.

use super::Scope;
use super::scope::regex;
use crate::agent::tools::Tools;
use regex::Regex;
use std::sync::OnceLock;

/// The specialists available for a world with these integrations: [`pick`], plus the database
/// specialist when PostgreSQL is configured and either the investigation started from a described
/// problem (whose words say little about where the cause sits, so every configured source is
/// asked) or the alert points at a database or at what a database in trouble looks like from
/// its clients.
pub fn pick_for(tools: &dyn Tools, scope: &Scope) -> Vec<&'static str> {
    let mut out = pick(tools);
    if tools.has("postgres") && (scope.problem.is_some() || points_at_database(scope)) {
        out.push("database");
    }
    if tools.has("aws") && crate::agent::cloud::points_at_rds(scope) {
        out.push("cloud");
    }
    out
}

/// Whether the alert or problem is about a database: a PostgreSQL exporter alert or metric, a
/// database word, a PostgreSQL port, or the symptoms clients of a stuck database show
/// (latency, timeouts, refused or exhausted connections).
pub fn points_at_database(scope: &Scope) -> bool {
    static WORDS: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &WORDS,
        r"(?ix)
        \b(postgres(ql)?|pg_[a-z_]+|pgbouncer|database|db|sql|deadlocks?|locks?|lock[_\ ]wait
          |replication|wraparound|vacuum|connection[_\ ]pool|too[_\ ]many[_\ ]connections|too\ many\ clients
          |latency|slow|timeouts?|timed\ out|time\ out|deadline\ exceeded|connection\ refused|connection\ reset
          |idle\ in\ transaction)\b
        | :(5432|6432)\b
        ",
    );
    let mut texts: Vec<String> = Vec::new();
    if let Some(a) = &scope.alert {
        for (k, v) in a.labels.iter().chain(a.annotations.iter()) {
            texts.push(k.clone());
            texts.push(v.clone());
        }
        texts.push(a.generator_url.clone());
    }
    if let Some(e) = &scope.expr {
        texts.push(e.clone());
    }
    if let Some(p) = &scope.problem {
        texts.push(p.clone());
    }
    texts.iter().any(|t| {
        // CamelCase alert names (`PostgreSQLTooManyConnections`, `HighLatency`) read as words.
        let spaced = crate::reason::conventions::camel_words(t);
        re.is_match(t) || re.is_match(&spaced)
    })
}

pub fn pick(tools: &dyn Tools) -> Vec<&'static str> {
    let mut out = Vec::new();
    if tools.has("kubernetes") {
        out.push("kubernetes");
    }
    if tools.has("prometheus") {
        out.push("metrics");
    }
    if tools.has("alertmanager") {
        out.push("alerts");
    }
    if tools.has("loki") {
        out.push("logs");
    }
    if tools.has("kubernetes") || tools.has("github") {
        out.push("changes");
    }
    if tools.has("datadog") {
        out.push("datadog");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::{Params, ToolOutput};
    use crate::model::Alert;
    use chrono::{DateTime, Utc};

    /// A world with these integrations configured; nothing is ever called.
    struct Configured(&'static [&'static str]);

    impl Tools for Configured {
        fn now(&self) -> DateTime<Utc> {
            Utc::now()
        }
        fn has(&self, integration: &str) -> bool {
            self.0.contains(&integration)
        }
        fn call<'a>(
            &'a self,
            tool: &'a str,
            _: &'a Params,
        ) -> futures::future::BoxFuture<'a, Result<ToolOutput, String>> {
            Box::pin(async move { Err(format!("{tool}: not in this test")) })
        }
        fn execute<'a>(
            &'a self,
            _: &'a crate::model::Action,
        ) -> futures::future::BoxFuture<'a, Result<String, String>> {
            Box::pin(async { Err("no actions".to_string()) })
        }
    }

    #[test]
    fn a_described_problem_asks_every_configured_source() {
        let now = Utc::now();
        let hang = Scope::from_problem("checkout requests hang", now);
        // The words say nothing of a database, and still the configured one is asked.
        assert!(!points_at_database(&hang));
        assert_eq!(
            pick_for(&Configured(&["postgres"]), &hang),
            vec!["database"]
        );
        assert_eq!(
            pick_for(
                &Configured(&[
                    "kubernetes",
                    "prometheus",
                    "alertmanager",
                    "loki",
                    "github",
                    "postgres"
                ]),
                &Scope::from_problem("pods crash after the deploy", now)
            ),
            vec![
                "kubernetes",
                "metrics",
                "alerts",
                "logs",
                "changes",
                "database"
            ]
        );
        // A problem matched to a firing alert is still a described problem.
        let mut alert = Alert::default();
        alert
            .labels
            .insert("alertname".into(), "KubePodCrashLooping".into());
        let mut matched = Scope::from_alert(&alert, now);
        matched.problem = Some("checkout requests hang".into());
        assert!(pick_for(&Configured(&["postgres"]), &matched).contains(&"database"));
        // An alert about something else leaves the database alone.
        let crash = Scope::from_alert(&alert, now);
        assert!(!pick_for(&Configured(&["kubernetes", "postgres"]), &crash).contains(&"database"));
        // No PostgreSQL configured, no database specialist.
        assert!(!pick_for(&Configured(&["kubernetes"]), &hang).contains(&"database"));
    }

    #[test]
    fn database_symptoms_and_exporter_alerts_point_at_a_database() {
        let now = Utc::now();
        for text in [
            "checkout requests time out",
            "api latency is high",
            "connection refused to 10.0.0.5:5432",
            "too many clients on the orders db",
            "idle in transaction sessions pile up",
        ] {
            assert!(
                points_at_database(&Scope::from_problem(text, now)),
                "{text}"
            );
        }
        assert!(!points_at_database(&Scope::from_problem(
            "pods crash after the deploy",
            now
        )));
        for (name, expr) in [
            (
                "PostgreSQLTooManyConnections",
                "sum(pg_stat_activity_count) > 90",
            ),
            ("PostgresqlDown", "pg_up == 0"),
        ] {
            let mut labels = std::collections::BTreeMap::new();
            labels.insert("alertname".to_string(), name.to_string());
            let alert = Alert {
                labels,
                generator_url: format!("http://prom/graph?g0.expr={}", expr.replace(' ', "%20")),
                ..Alert::default()
            };
            assert!(
                points_at_database(&Scope::from_alert(&alert, now)),
                "{name}"
            );
        }
        let mut labels = std::collections::BTreeMap::new();
        labels.insert("alertname".to_string(), "KubePodCrashLooping".to_string());
        let alert = Alert {
            labels,
            ..Alert::default()
        };
        assert!(!points_at_database(&Scope::from_alert(&alert, now)));
    }
}
