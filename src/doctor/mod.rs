//! `sitrep doctor`: one check per configured integration, run concurrently under one deadline,
//! each giving a row (status, version, latency, what is wrong and how to fix it).
//!
//! A check is one function from the config to the rows it plans (`Planned`); [`PLANNERS`] lists
//! them, so adding an integration is one function and one line. An integration that is not
//! configured is a row with status `absent`, which is not a failure.

mod aws;
mod credentials;
mod datadog;
mod http;
mod kubernetes;
mod mcp;
mod postgres;
pub mod report;
mod slack;
mod tickets;

use crate::config::Config;
use crate::integrations::error::{ErrorKind, IntegrationError};
use crate::integrations::transport::BoxFuture;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Time one check may take, all of them running at once: the whole run ends well within 10 s.
pub const CHECK_BUDGET: Duration = Duration::from_secs(7);
/// Time one request of a check may take (less than the configured `timeout_secs` when that is
/// longer), so a check of several requests still ends inside [`CHECK_BUDGET`].
pub const REQUEST_BUDGET: Duration = Duration::from_secs(5);

/// How one integration is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Absent,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Absent => "absent",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Named as its config section is: `prometheus`, `postgres`, `llm`, `mcp.<server>`.
    pub integration: String,
    pub status: Status,
    /// What the server says it is; for an ok server the detail carries it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How long the check took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// For an ok integration what was seen (version, permissions), for a failed one the reason.
    pub detail: String,
    /// What to do about a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// What a check found (the runner adds the name and the latency).
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub status: Status,
    pub version: Option<String>,
    pub detail: String,
    pub fix: Option<String>,
}

impl Finding {
    /// An ok server; the detail starts with its version when it has one.
    pub fn ok(version: Option<String>, detail: impl Into<String>) -> Finding {
        let detail = detail.into();
        let detail = match (&version, detail.is_empty()) {
            (Some(v), true) => v.clone(),
            (Some(v), false) => format!("{v}; {detail}"),
            (None, _) => detail,
        };
        Finding {
            status: Status::Ok,
            version,
            detail,
            fix: None,
        }
    }

    pub fn failed(reason: impl Into<String>, fix: impl Into<String>) -> Finding {
        let fix = fix.into();
        Finding {
            status: Status::Failed,
            version: None,
            detail: reason.into(),
            fix: (!fix.is_empty()).then_some(fix),
        }
    }

    /// A failed request, its reason in the words an operator searches for (`401 unauthorized`,
    /// `connection refused`, `timed out after 5s`) and what usually fixes it.
    pub fn from_error(e: &IntegrationError, url: &str) -> Finding {
        let (reason, fix) = reason_and_fix(&e.kind, url);
        Finding::failed(reason, fix)
    }

    pub fn with_version(mut self, version: Option<String>) -> Finding {
        self.version = version;
        self
    }
}

/// The reason of a failed request and the usual fix.
pub fn reason_and_fix(kind: &ErrorKind, url: &str) -> (String, String) {
    match kind {
        ErrorKind::Timeout(d) => (
            format!("timed out after {}s", d.as_secs()),
            format!("{url} does not answer: check the host, the port and any firewall or VPN"),
        ),
        ErrorKind::Connect(cause) => {
            let lower = cause.to_ascii_lowercase();
            if lower.contains("connection refused") {
                (
                    "connection refused".into(),
                    format!("nothing listens at {url}: start the server or correct the URL"),
                )
            } else if lower.contains("dns")
                || lower.contains("lookup")
                || lower.contains("name or service not known")
            {
                (
                    format!("cannot resolve the host: {cause}"),
                    format!("correct the host name in the URL ({url})"),
                )
            } else if lower.contains("certificate") || lower.contains("tls") {
                (
                    format!("TLS: {cause}"),
                    "check the server's certificate and that the URL's scheme is right".into(),
                )
            } else {
                (
                    format!("cannot connect: {cause}"),
                    format!("check that {url} is reachable from here"),
                )
            }
        }
        ErrorKind::Status { status, message } => {
            let name = http_reason(*status);
            let message = &server_message(message);
            let reason = if message.is_empty()
                || message == "no message"
                || message.eq_ignore_ascii_case(name)
            {
                format!("{status} {name}")
            } else {
                format!("{status} {name}: {message}")
            };
            let fix = match status {
                401 => "the credential was refused: check the token the `auth` table names".into(),
                403 => "the credential lacks permission: grant it read access".into(),
                404 => format!("nothing there: check the URL ({url}) and the names in the config"),
                _ => format!("the server at {url} is in trouble: see its logs"),
            };
            (reason, fix)
        }
        ErrorKind::Decode(m) => (
            format!("unexpected answer: {m}"),
            format!("check that {url} is the right kind of server"),
        ),
        ErrorKind::TooLarge { limit } => (
            format!("answer larger than {limit} bytes"),
            format!("check that {url} is the right kind of server"),
        ),
        ErrorKind::Invalid(m) => (
            format!("invalid configuration: {m}"),
            "correct the integration's section in the config".into(),
        ),
        ErrorKind::NotConfigured => ("not configured".into(), String::new()),
        ErrorKind::NoRecording | ErrorKind::Manual(_) => (kind.to_string(), String::new()),
        ErrorKind::Other(m) => (m.clone(), String::new()),
    }
}

/// The human part of an error body the transport could only give whole: OpenAI's and
/// ServiceNow's `{"error": {"message"}}`, Vault's `{"errors": [...]}`, Jira's `errorMessages`.
fn server_message(message: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(message) else {
        return message.to_string();
    };
    let text = |p: &str| v.pointer(p).and_then(serde_json::Value::as_str);
    [
        "/error/message",
        "/errors/0",
        "/errorMessages/0",
        "/error_description",
        "/detail",
    ]
    .iter()
    .find_map(|p| text(p))
    .map(str::to_string)
    .unwrap_or_else(|| message.to_string())
}

/// The lower-case reason phrase of an HTTP status.
fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "bad request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not found",
        405 => "method not allowed",
        407 => "proxy authentication required",
        408 => "request timeout",
        429 => "too many requests",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        _ if status >= 500 => "server error",
        _ => "error",
    }
}

/// A check to run, or `None` when the integration is not configured.
pub struct Planned {
    pub integration: String,
    pub check: Option<BoxFuture<'static, Finding>>,
}

impl Planned {
    pub fn absent(integration: &str) -> Planned {
        Planned {
            integration: integration.to_string(),
            check: None,
        }
    }

    pub fn run(
        integration: &str,
        check: impl std::future::Future<Output = Finding> + Send + 'static,
    ) -> Planned {
        Planned {
            integration: integration.to_string(),
            check: Some(Box::pin(check)),
        }
    }
}

/// What a check may need beyond the config.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Mutating actions are off (`--read-only` or `[policy] read_only`): their permissions are
    /// not asked for.
    pub read_only: bool,
}

/// One planner per integration, in the order the report lists them.
type Planner = fn(&Config, &Options) -> Vec<Planned>;

const PLANNERS: &[Planner] = &[
    kubernetes::plan,
    http::prometheus,
    http::loki,
    http::alertmanager,
    http::github,
    http::pagerduty,
    datadog::plan,
    postgres::plan,
    aws::plan,
    http::llm,
    mcp::plan,
    slack::plan,
    tickets::jira,
    tickets::servicenow,
];

/// Runs every check at once; each ends within [`CHECK_BUDGET`], a late one as `timed out`.
pub async fn run(config: &Config, options: &Options) -> Vec<Row> {
    let planned: Vec<Planned> = PLANNERS
        .iter()
        .flat_map(|plan| plan(config, options))
        .collect();
    let mut tasks = Vec::with_capacity(planned.len());
    for p in planned {
        let task = p.check.map(|check| {
            tokio::spawn(async move {
                let started = Instant::now();
                let finding = tokio::time::timeout(CHECK_BUDGET, check)
                    .await
                    .unwrap_or_else(|_| {
                        Finding::failed(
                            format!("timed out after {}s", CHECK_BUDGET.as_secs()),
                            "the server does not answer: check the host, the port and any firewall or VPN",
                        )
                    });
                (finding, started.elapsed())
            })
        });
        tasks.push((p.integration, task));
    }
    let redactor = crate::policy::redact::Redactor::with_secrets(
        config
            .secret_values()
            .iter()
            .map(|s| secrecy::ExposeSecret::expose_secret(s).to_string()),
    );
    let mut rows = Vec::with_capacity(tasks.len());
    for (integration, task) in tasks {
        let row = match task {
            None => Row {
                integration,
                status: Status::Absent,
                version: None,
                latency_ms: None,
                detail: "not configured".into(),
                fix: None,
            },
            Some(handle) => {
                let (finding, took) = handle.await.unwrap_or_else(|e| {
                    (
                        Finding::failed(format!("the check failed: {e}"), ""),
                        Duration::ZERO,
                    )
                });
                Row {
                    integration,
                    status: finding.status,
                    version: finding.version,
                    latency_ms: Some(took.as_millis().min(u128::from(u64::MAX)) as u64),
                    detail: finding.detail,
                    fix: finding.fix,
                }
            }
        };
        rows.push(clean(row, &redactor));
    }
    rows
}

/// No secret and no control character reaches the terminal.
fn clean(mut row: Row, redactor: &crate::policy::redact::Redactor) -> Row {
    row.detail = clean_text(&row.detail, redactor);
    row.fix = row.fix.map(|f| clean_text(&f, redactor));
    row.version = row.version.map(|v| clean_text(&v, redactor));
    row
}

fn clean_text(s: &str, redactor: &crate::policy::redact::Redactor) -> String {
    let masked = redactor.redact(s);
    crate::model::text::sanitize(&masked)
        .replace(['\n', '\r', '\t'], " ")
        .trim()
        .to_string()
}

/// Whether every configured integration is ok (absent ones do not count).
pub fn all_ok(rows: &[Row]) -> bool {
    rows.iter().all(|r| r.status != Status::Failed)
}

/// The request timeout for an integration configured with `timeout_secs`.
pub fn request_timeout(timeout_secs: u64) -> Duration {
    Duration::from_secs(timeout_secs.max(1)).min(REQUEST_BUDGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_operators_search_for_them() {
        let refused = ErrorKind::Connect("Connection refused (os error 111)".into());
        assert_eq!(
            reason_and_fix(&refused, "http://h:1").0,
            "connection refused"
        );
        let unauthorized = ErrorKind::Status {
            status: 401,
            message: "Unauthorized".into(),
        };
        assert_eq!(
            reason_and_fix(&unauthorized, "http://h:1").0,
            "401 unauthorized"
        );
        let timeout = ErrorKind::Timeout(Duration::from_secs(5));
        assert_eq!(
            reason_and_fix(&timeout, "http://h:1").0,
            "timed out after 5s"
        );
    }

    #[test]
    fn nested_error_messages_are_unwrapped() {
        let kind = ErrorKind::Status {
            status: 401,
            message: r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        };
        assert_eq!(
            reason_and_fix(&kind, "http://h:1").0,
            "401 unauthorized: Incorrect API key provided"
        );
    }

    #[test]
    fn an_ok_detail_carries_the_version() {
        let f = Finding::ok(Some("2.42.0".into()), "");
        assert_eq!(f.detail, "2.42.0");
        let f = Finding::ok(Some("2.42.0".into()), "3 rules");
        assert_eq!(f.detail, "2.42.0; 3 rules");
    }

    #[test]
    fn absent_rows_are_not_failures() {
        let row = |status| Row {
            integration: "x".into(),
            status,
            version: None,
            latency_ms: None,
            detail: String::new(),
            fix: None,
        };
        assert!(all_ok(&[row(Status::Ok), row(Status::Absent)]));
        assert!(!all_ok(&[row(Status::Ok), row(Status::Failed)]));
    }
}
