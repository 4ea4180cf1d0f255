//! Gather runs its specialists concurrently; a failed or slow call is an event, not the end.

use chrono::{TimeZone, Utc};
use futures::future::BoxFuture;
use sitrep::agent::{self, AgentOptions, Params, ToolOutput, Tools, Trigger};
use sitrep::model::{Action, Alert, Event, Outcome, Record, Stage, WebhookPayload};
use std::sync::Arc;
use std::time::Duration;

/// Every read takes 200 ms and returns nothing; `fail` names a tool that errors instead, and
/// every tool in `missing` errors the way a replayed case without a recording for it does.
struct Slow {
    fail: Option<&'static str>,
    hang: Option<&'static str>,
    missing: &'static [&'static str],
}

impl Tools for Slow {
    fn now(&self) -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 11, 14, 32, 0)
            .single()
            .expect("valid time")
    }
    fn has(&self, integration: &str) -> bool {
        matches!(integration, "kubernetes" | "prometheus" | "loki")
    }
    fn call<'a>(
        &'a self,
        tool: &'a str,
        _: &'a Params,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            if self.hang == Some(tool) {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            if self.fail == Some(tool) {
                return Err(format!("{tool}: connection refused"));
            }
            if self.missing.contains(&tool) {
                return Err(format!(
                    "kubernetes: GET {tool}: no recording matches this request in the case"
                ));
            }
            Ok(match tool {
                "kubernetes.pods" => ToolOutput::Pods(vec![]),
                "kubernetes.events" => ToolOutput::Events(vec![]),
                "kubernetes.deployments"
                | "kubernetes.replica_sets"
                | "kubernetes.controller_revisions" => ToolOutput::Deployments(vec![]),
                "kubernetes.nodes" => ToolOutput::Nodes(vec![]),
                "kubernetes.statefulsets"
                | "kubernetes.daemonsets"
                | "kubernetes.jobs"
                | "kubernetes.cronjobs" => ToolOutput::Workloads(vec![]),
                "prometheus.rules" => ToolOutput::Rules(vec![]),
                "prometheus.alerts" => ToolOutput::Alerts(vec![]),
                "prometheus.query_range" => ToolOutput::Series(vec![]),
                _ => ToolOutput::Logs(vec![]),
            })
        })
    }
    fn execute<'a>(&'a self, _: &'a Action) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async { Err("no actions in this world".to_string()) })
    }
}

fn trigger() -> Trigger {
    let mut alert = Alert::default();
    alert
        .labels
        .insert("alertname".into(), "SomethingOdd".into());
    alert.labels.insert("namespace".into(), "shop".into());
    Trigger::Alert(WebhookPayload {
        alerts: vec![alert],
        ..WebhookPayload::default()
    })
}

async fn collect(tools: Slow, opts: AgentOptions) -> (Outcome, Vec<Record>) {
    let mut h = agent::spawn_with(Arc::new(tools), trigger(), opts);
    let mut records = Vec::new();
    while let Some(r) = h.records.recv().await {
        records.push(r);
    }
    let outcome = h.task.await.expect("task").expect("result");
    (outcome, records)
}

fn stage_secs(records: &[Record], stage: Stage) -> f64 {
    let at = |f: &dyn Fn(&Event) -> bool| {
        records
            .iter()
            .find(|r| f(&r.event))
            .map(|r| r.t)
            .expect("stage event")
    };
    at(&|e| matches!(e, Event::StageFinished { stage: s, .. } if *s == stage))
        - at(&|e| matches!(e, Event::StageStarted { stage: s } if *s == stage))
}

#[tokio::test(start_paused = true)]
async fn four_specialists_run_side_by_side() {
    let (outcome, records) = collect(
        Slow {
            fail: None,
            hang: None,
            missing: &[],
        },
        AgentOptions::default(),
    )
    .await;
    assert_eq!(outcome, Outcome::Diagnosed);
    let triaged = records.iter().find_map(|r| match &r.event {
        Event::Triaged { specialists, .. } => Some(specialists.clone()),
        _ => None,
    });
    assert_eq!(triaged.map(|s| s.len()), Some(4));
    let calls = records
        .iter()
        .filter(|r| matches!(r.event, Event::ToolCalled { .. }))
        .count();
    assert!(calls >= 7, "{calls} calls");
    let gather = stage_secs(&records, Stage::Gather);
    // Four lanes of 200 ms reads side by side; the kubernetes lane lists first, then reads its
    // subject's logs and Services in a second round: about 400 ms together, not 1 s one after
    // another.
    assert!((0.39..0.5).contains(&gather), "gather took {gather}s");
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_is_an_event_and_the_investigation_goes_on() {
    let (outcome, records) = collect(
        Slow {
            fail: Some("kubernetes.nodes"),
            hang: None,
            missing: &[],
        },
        AgentOptions::default(),
    )
    .await;
    assert_eq!(outcome, Outcome::Diagnosed);
    let failed: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolFailed { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        vec!["kubernetes.nodes: connection refused".to_string()]
    );
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event, Event::Diagnosis { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_call_times_out() {
    let opts = AgentOptions {
        tool_timeout: Duration::from_secs(5),
        ..AgentOptions::default()
    };
    let (_, records) = collect(
        Slow {
            fail: None,
            hang: Some("prometheus.rules"),
            missing: &[],
        },
        opts,
    )
    .await;
    let failed = records.iter().find_map(|r| match &r.event {
        Event::ToolFailed {
            error, duration_ms, ..
        } => Some((error.clone(), *duration_ms)),
        _ => None,
    });
    let (error, ms) = failed.expect("a timeout");
    assert!(error.contains("timed out"), "{error}");
    assert_eq!(ms, 5000);
    let gather = stage_secs(&records, Stage::Gather);
    assert!((5.0..5.3).contains(&gather), "gather took {gather}s");
}

const WORKLOAD_READS: [&str; 4] = [
    "kubernetes.statefulsets",
    "kubernetes.daemonsets",
    "kubernetes.jobs",
    "kubernetes.cronjobs",
];

/// The tool each `ToolFailed` belongs to, from its `ToolCalled`.
fn failed_tools(records: &[Record]) -> Vec<String> {
    let mut names = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for r in records {
        match &r.event {
            Event::ToolCalled { call_id, tool, .. } => {
                names.insert(call_id.clone(), tool.clone());
            }
            Event::ToolFailed { call_id, .. } => {
                out.push(names.get(call_id).cloned().unwrap_or_default());
            }
            _ => {}
        }
    }
    out.sort();
    out
}

#[tokio::test(start_paused = true)]
async fn workload_reads_run_beside_the_others_in_the_alerts_namespace() {
    let (outcome, records) = collect(
        Slow {
            fail: None,
            hang: None,
            missing: &[],
        },
        AgentOptions::default(),
    )
    .await;
    assert_eq!(outcome, Outcome::Diagnosed);
    for tool in WORKLOAD_READS {
        let params = records.iter().find_map(|r| match &r.event {
            Event::ToolCalled {
                tool: t,
                params,
                specialist,
                ..
            } if t == tool => Some((params.clone(), specialist.clone())),
            _ => None,
        });
        let (params, specialist) = params.unwrap_or_else(|| panic!("{tool} was not called"));
        assert_eq!(
            params.get("namespace").and_then(|v| v.as_str()),
            Some("shop"),
            "{tool}"
        );
        assert_eq!(specialist.as_deref(), Some("kubernetes"), "{tool}");
    }
    let workloads = records
        .iter()
        .filter(
            |r| matches!(&r.event, Event::Observed { kind, .. } if kind == "kubernetes/workloads"),
        )
        .count();
    assert_eq!(workloads, 4);
    // In parallel with the pods, events and nodes: Gather still takes the kubernetes lane's two
    // rounds (list, then the subject's logs and Services).
    let gather = stage_secs(&records, Stage::Gather);
    assert!((0.39..0.5).contains(&gather), "gather took {gather}s");
}

#[tokio::test(start_paused = true)]
async fn workload_reads_a_case_has_no_recording_for_are_failed_steps_only() {
    let (outcome, records) = collect(
        Slow {
            fail: None,
            hang: None,
            missing: &WORKLOAD_READS,
        },
        AgentOptions::default(),
    )
    .await;
    assert_eq!(outcome, Outcome::Diagnosed);
    let mut expected: Vec<String> = WORKLOAD_READS.iter().map(|t| t.to_string()).collect();
    expected.sort();
    assert_eq!(failed_tools(&records), expected);
    // The other kubernetes reads, and the lanes after them, went on.
    for tool in ["kubernetes.pods", "kubernetes.events", "kubernetes.nodes"] {
        assert!(
            records
                .iter()
                .any(|r| matches!(&r.event, Event::ToolCalled { tool: t, .. } if t == tool)),
            "{tool}"
        );
    }
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event, Event::Diagnosis { .. }))
    );
    let gather = stage_secs(&records, Stage::Gather);
    assert!((0.39..0.5).contains(&gather), "gather took {gather}s");
}

/// Only PostgreSQL is configured; its password is a credential reference the operator approves.
struct OnlyPostgres {
    approved: std::sync::Mutex<Option<bool>>,
}

impl Tools for OnlyPostgres {
    fn now(&self) -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 11, 14, 32, 0)
            .single()
            .expect("valid time")
    }
    fn has(&self, integration: &str) -> bool {
        integration == "postgres"
    }
    fn call<'a>(
        &'a self,
        tool: &'a str,
        _: &'a Params,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            if !tool.starts_with("postgres.") {
                return Err(format!("{tool}: not configured"));
            }
            Ok(ToolOutput::Postgres(vec![]))
        })
    }
    fn execute<'a>(&'a self, _: &'a Action) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async { Err("no actions in this world".to_string()) })
    }
    fn pending_credential(&self, integration: &str) -> Option<String> {
        let decided = self
            .approved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        (integration == "postgres" && !decided).then(|| "env:PGPASSWORD".to_string())
    }
    fn decide_credential(&self, _: &str, approved: bool, _: &str) {
        *self.approved.lock().unwrap_or_else(|e| e.into_inner()) = Some(approved);
    }
}

/// A described problem says little about where its cause sits: whatever its words, every
/// configured source is asked, so a configured database is consulted (after its credential is
/// approved) for "checkout requests hang" too.
#[tokio::test]
async fn a_described_problem_consults_a_configured_database_whatever_its_words() {
    use sitrep::model::Command;
    let tools = Arc::new(OnlyPostgres {
        approved: std::sync::Mutex::new(None),
    });
    let mut h = agent::spawn_with(
        tools.clone(),
        Trigger::Problem("checkout requests hang".into()),
        AgentOptions::default(),
    );
    let mut records = Vec::new();
    let run = async {
        while let Some(r) = h.records.recv().await {
            if let Event::CredentialRequested {
                reference,
                integration,
                ..
            } = &r.event
            {
                assert_eq!(
                    (reference.as_str(), integration.as_str()),
                    ("env:PGPASSWORD", "postgres")
                );
                let _ = h.commands.send(Command::ApproveCredential {
                    reference: reference.clone(),
                    by: None,
                });
            }
            records.push(r);
        }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the investigation finishes");
    let triaged = records.iter().find_map(|r| match &r.event {
        Event::Triaged { specialists, .. } => Some(specialists.clone()),
        _ => None,
    });
    assert_eq!(triaged, Some(vec!["database".to_string()]));
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event, Event::CredentialRequested { .. })),
        "the credential was not asked for"
    );
    let asked: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolCalled { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect();
    assert!(asked.contains(&"postgres.activity"), "{asked:?}");
    assert!(asked.contains(&"postgres.locks"), "{asked:?}");
    assert_eq!(
        *tools.approved.lock().unwrap_or_else(|e| e.into_inner()),
        Some(true)
    );
}
