//! Gather runs its specialists concurrently; a failed or slow call is an event, not the end.

use chrono::{TimeZone, Utc};
use futures::future::BoxFuture;
use sitrep::agent::{self, AgentOptions, Params, ToolOutput, Tools, Trigger};
use sitrep::model::{Action, Alert, Event, Outcome, Record, Stage, WebhookPayload};
use std::sync::Arc;
use std::time::Duration;

/// Every read takes 200 ms and returns nothing; `fail` names a tool that errors instead.
struct Slow {
    fail: Option<&'static str>,
    hang: Option<&'static str>,
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
            Ok(match tool {
                "kubernetes.pods" => ToolOutput::Pods(vec![]),
                "kubernetes.events" => ToolOutput::Events(vec![]),
                "kubernetes.deployments" | "kubernetes.replica_sets" => {
                    ToolOutput::Deployments(vec![])
                }
                "kubernetes.nodes" => ToolOutput::Nodes(vec![]),
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
    // Four lanes of 200 ms each: about 200 ms together, not 800 ms one after another.
    assert!((0.19..0.3).contains(&gather), "gather took {gather}s");
}

#[tokio::test(start_paused = true)]
async fn a_failed_call_is_an_event_and_the_investigation_goes_on() {
    let (outcome, records) = collect(
        Slow {
            fail: Some("kubernetes.nodes"),
            hang: None,
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
