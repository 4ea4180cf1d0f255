//! Hand-made event sequences and state builders shared by the console tests and benches.
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use sitrep::model::{
    Action, Alert, Category, ChatRole, Event, Evidence, EvidenceBody, Finding, Hypothesis, Marker,
    Outcome, Record, Risk, RuledOut, RunMode, Series, Stage, Verification,
};
use sitrep::tui::app::AppState;
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;
use std::collections::BTreeMap;

pub fn at() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn alert() -> Alert {
    let mut labels = BTreeMap::new();
    labels.insert("alertname".to_string(), "KubePodCrashLooping".to_string());
    labels.insert("severity".to_string(), "critical".to_string());
    labels.insert("namespace".to_string(), "payments".to_string());
    let mut annotations = BTreeMap::new();
    annotations.insert(
        "summary".to_string(),
        "payments-api pods restarting".to_string(),
    );
    Alert {
        labels,
        annotations,
        starts_at: Some(at()),
        ..Alert::default()
    }
}

pub fn started() -> Event {
    Event::SessionStarted {
        id: "2026-11-22-payments".into(),
        title: "KubePodCrashLooping: payments-api pods restarting".into(),
        started: at(),
        mode: RunMode::Demo,
        alert: Some(alert()),
        problem: None,
        case: Some("crashloop".into()),
        read_only: false,
        operator: "alice".into(),
    }
}

fn tool(id: &str, tool: &str, spec: &str) -> Event {
    let mut params = BTreeMap::new();
    params.insert("namespace".to_string(), serde_json::json!("payments"));
    Event::ToolCalled {
        call_id: id.into(),
        tool: tool.into(),
        specialist: Some(spec.into()),
        params,
    }
}

pub fn log_text() -> String {
    [
        "2026-11-22T08:58:01Z INFO  starting payments-api v2.14.0",
        "2026-11-22T08:58:02Z INFO  connecting to postgres at db.payments:5432",
        "2026-11-22T08:58:03Z ERROR config: missing required key PAYMENTS_DB_POOL_SIZE",
        "2026-11-22T08:58:03Z \u{1b}[31mFATAL\u{1b}[0m exiting with status 1",
    ]
    .join("\n")
}

/// Triage done, gather half-way: two tools back with evidence, one running, one failed.
pub fn mid_gather() -> Vec<Record> {
    let ev = |t: f64, event: Event| Record { t, event };
    vec![
        ev(0.0, started()),
        ev(
            0.1,
            Event::StageStarted {
                stage: Stage::Triage,
            },
        ),
        ev(
            0.4,
            Event::Triaged {
                summary: "crash-looping pods in payments; runbook crashloop".into(),
                runbook: Some("crashloop".into()),
                specialists: vec![
                    "kubernetes".into(),
                    "metrics".into(),
                    "logs".into(),
                    "changes".into(),
                ],
                now: None,
                integrations: None,
            },
        ),
        ev(
            0.5,
            Event::StageFinished {
                stage: Stage::Triage,
                summary: "4 specialists".into(),
            },
        ),
        ev(
            0.6,
            Event::StageStarted {
                stage: Stage::Gather,
            },
        ),
        ev(0.7, tool("c1", "kubernetes.pods", "kubernetes")),
        ev(0.8, tool("c2", "kubernetes.pod_logs", "kubernetes")),
        ev(0.9, tool("c3", "prometheus.query_range", "metrics")),
        ev(1.0, tool("c4", "loki.query_range", "logs")),
        ev(
            1.2,
            Event::ToolSucceeded {
                call_id: "c1".into(),
                duration_ms: 412,
                summary: "3 pods, 2 crash-looping".into(),
            },
        ),
        ev(
            1.2,
            Event::EvidenceAdded {
                evidence: Evidence {
                    id: "e1".into(),
                    kind: "kubernetes/pods".into(),
                    title: "pods in payments".into(),
                    source: "kubernetes.pods".into(),
                    call_id: Some("c1".into()),
                    body: EvidenceBody::Table {
                        columns: vec![
                            "NAME".into(),
                            "READY".into(),
                            "STATUS".into(),
                            "RESTARTS".into(),
                        ],
                        rows: vec![
                            vec![
                                "payments-api-7f9dd8b6c4-abcde".into(),
                                "0/1".into(),
                                "CrashLoopBackOff".into(),
                                "14".into(),
                            ],
                            vec![
                                "payments-api-7f9dd8b6c4-fghij".into(),
                                "0/1".into(),
                                "CrashLoopBackOff".into(),
                                "13".into(),
                            ],
                            vec![
                                "payments-worker-5c7b9-klmno".into(),
                                "1/1".into(),
                                "Running".into(),
                                "0".into(),
                            ],
                        ],
                    },
                },
            },
        ),
        ev(
            1.5,
            Event::ToolSucceeded {
                call_id: "c2".into(),
                duration_ms: 640,
                summary: "4 lines".into(),
            },
        ),
        ev(
            1.5,
            Event::EvidenceAdded {
                evidence: Evidence {
                    id: "e2".into(),
                    kind: "kubernetes/pod_logs".into(),
                    title: "logs payments-api-7f9dd8b6c4-abcde (previous)".into(),
                    source: "kubernetes.pod_logs".into(),
                    call_id: Some("c2".into()),
                    body: EvidenceBody::Text {
                        language: "log".into(),
                        text: log_text(),
                    },
                },
            },
        ),
        ev(
            1.9,
            Event::ToolFailed {
                call_id: "c4".into(),
                duration_ms: 2003,
                error: "loki: GET /loki/api/v1/query_range: connection refused".into(),
            },
        ),
        ev(
            2.0,
            Event::ChatMessage {
                from: ChatRole::Agent,
                text: "Two of three payments-api pods are crash-looping; gathering metrics.".into(),
            },
        ),
    ]
}

pub fn action(risk: Risk) -> Action {
    let mut params = BTreeMap::new();
    params.insert("namespace".to_string(), serde_json::json!("payments"));
    params.insert("to_revision".to_string(), serde_json::json!(41));
    Action {
        id: "act-1".into(),
        kind: "kubernetes.rollout_undo".into(),
        target: "deployment/payments-api".into(),
        params,
        risk,
        rationale: "revision 42 (deployed 08:57) removed PAYMENTS_DB_POOL_SIZE; revision 41 ran cleanly for 6 days".into(),
        operation: "kubectl -n payments rollout undo deployment/payments-api --to-revision=41".into(),
        blast_radius: "3 replicas of payments-api restart; checkout unavailable ~30s".into(),
        evidence: vec!["e1".into(), "e2".into()],
    }
}

/// Through diagnosis and recommendation to an approval request for an action of `risk`.
pub fn awaiting_approval(risk: Risk) -> Vec<Record> {
    let ev = |t: f64, event: Event| Record { t, event };
    let mut v = mid_gather();
    v.extend([
        ev(
            2.6,
            Event::ToolSucceeded {
                call_id: "c3".into(),
                duration_ms: 1700,
                summary: "1 series".into(),
            },
        ),
        ev(
            2.6,
            Event::EvidenceAdded {
                evidence: Evidence {
                    id: "e3".into(),
                    kind: "metrics".into(),
                    title: "restarts per minute".into(),
                    source: "prometheus.query_range".into(),
                    call_id: Some("c3".into()),
                    body: EvidenceBody::TimeSeries {
                        series: vec![Series {
                            name: "restarts".into(),
                            labels: BTreeMap::new(),
                            points: (0..30)
                                .map(|i| {
                                    (
                                        1_795_510_000.0 + f64::from(i) * 60.0,
                                        if i > 15 { 3.0 } else { 0.0 },
                                    )
                                })
                                .collect(),
                        }],
                        threshold: Some(1.0),
                        unit: None,
                        markers: vec![Marker {
                            at: 1_795_510_960.0,
                            label: "deploy r42".into(),
                        }],
                    },
                },
            },
        ),
        ev(
            2.7,
            Event::StageFinished {
                stage: Stage::Gather,
                summary: "3 of 4 tools ok".into(),
            },
        ),
        ev(
            2.8,
            Event::StageStarted {
                stage: Stage::Diagnose,
            },
        ),
        ev(
            3.0,
            Event::Finding {
                finding: Finding {
                    analyzer: "crash_loop".into(),
                    summary: "payments-api exits on a missing config key".into(),
                    detail: String::new(),
                    category: Category::ConfigurationError,
                    confidence: 0.9,
                    evidence: vec!["e2".into()],
                },
            },
        ),
        ev(
            3.1,
            Event::HypothesesRanked {
                hypotheses: vec![Hypothesis {
                    category: Category::ConfigurationError,
                    statement: "revision 42 dropped PAYMENTS_DB_POOL_SIZE".into(),
                    confidence: 0.86,
                    evidence: vec!["e2".into()],
                }],
                ruled_out: vec![RuledOut {
                    statement: "node pressure".into(),
                    reason: "all nodes Ready".into(),
                    evidence: vec![],
                }],
            },
        ),
        ev(
            3.2,
            Event::Diagnosis {
                category: Category::ConfigurationError,
                root_cause: "revision 42 dropped PAYMENTS_DB_POOL_SIZE".into(),
                confidence: 0.86,
            },
        ),
        ev(
            3.3,
            Event::StageFinished {
                stage: Stage::Diagnose,
                summary: String::new(),
            },
        ),
        ev(
            3.4,
            Event::StageStarted {
                stage: Stage::Recommend,
            },
        ),
        ev(
            3.5,
            Event::ActionProposed {
                action: action(risk),
            },
        ),
        ev(
            3.6,
            Event::StageFinished {
                stage: Stage::Recommend,
                summary: String::new(),
            },
        ),
        ev(
            3.7,
            Event::StageStarted {
                stage: Stage::Approve,
            },
        ),
        ev(
            3.8,
            Event::ApprovalRequested {
                action_id: "act-1".into(),
                risk,
                veto_secs: (risk == Risk::Medium).then_some(30.0),
                approvals_needed: if risk == Risk::Critical { 2 } else { 1 },
                digest: action(risk).digest(),
            },
        ),
    ]);
    v
}

/// A whole session: approved, executed, verified, reported.
pub fn full_session() -> Vec<Record> {
    let ev = |t: f64, event: Event| Record { t, event };
    let mut v = awaiting_approval(Risk::High);
    v.extend([
        ev(
            20.0,
            Event::ApprovalGiven {
                action_id: "act-1".into(),
                by: "alice".into(),
                at: at(),
                via: String::new(),
                digest: action(Risk::High).digest(),
                params: None,
            },
        ),
        ev(
            20.1,
            Event::StageFinished {
                stage: Stage::Approve,
                summary: String::new(),
            },
        ),
        ev(
            20.2,
            Event::StageStarted {
                stage: Stage::Execute,
            },
        ),
        ev(
            21.0,
            Event::ActionExecuted {
                action_id: "act-1".into(),
                duration_ms: 800,
                result: "rolled back to revision 41".into(),
            },
        ),
        ev(
            21.1,
            Event::StageStarted {
                stage: Stage::Verify,
            },
        ),
        ev(
            50.0,
            Event::Verified {
                verification: Verification {
                    action_id: Some("act-1".into()),
                    passed: true,
                    unknown: false,
                    summary: "3/3 pods Ready, no restarts for 30s".into(),
                    before: None,
                    after: None,
                },
            },
        ),
        ev(
            50.1,
            Event::StageStarted {
                stage: Stage::Report,
            },
        ),
        ev(
            51.0,
            Event::Report {
                markdown: "# payments-api crash loop\n\nRolled back to revision 41.".into(),
            },
        ),
        ev(
            51.1,
            Event::SessionEnded {
                outcome: Outcome::Resolved,
            },
        ),
    ]);
    v
}

pub fn state(w: u16, h: u16) -> AppState {
    sitrep::tui::highlight::load_now();
    let mut s = AppState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
    );
    s.size = (w, h);
    s
}

pub fn live(records: &[Record], w: u16, h: u16) -> AppState {
    let mut s = state(w, h);
    for r in records {
        let _ =
            sitrep::tui::app::update(&mut s, sitrep::tui::app::Msg::Record(Box::new(r.clone())));
    }
    s
}

/// Three made-up scenarios for the demo chooser, independent of the built-in cases.
pub fn demo_entries() -> Vec<sitrep::tui::chooser_state::Entry> {
    use sitrep::tui::chooser_state::Entry;
    let entry = |name: &str, title: &str, about: &str, difficulty: u32| Entry {
        name: name.into(),
        title: title.into(),
        about: about.into(),
        difficulty: Some(difficulty),
    };
    vec![
        entry(
            "checkout-bad-deploy",
            "checkout-api 5xx after the v2.8.0 deploy",
            "code defect → rollout undo deployment/checkout-api",
            2,
        ),
        entry(
            "search-cpu-saturation",
            "search-api CPU throttled under a traffic surge",
            "resource exhaustion → scale deployment/search-api",
            2,
        ),
        entry(
            "orders-db-node-lost",
            "orders-db down: its node stopped reporting and the pod is stuck terminating",
            "infrastructure → delete pod pod/orders-db-0",
            3,
        ),
    ]
}

pub fn chooser(w: u16, h: u16) -> sitrep::tui::chooser_state::ChooserState {
    let mut s = sitrep::tui::chooser_state::ChooserState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
        demo_entries(),
    );
    s.size = (w, h);
    s
}

/// Let a search running beside the UI finish, as the event loop's ticks would (10 s at most).
pub fn settle(s: &mut AppState) {
    let started = std::time::Instant::now();
    while s.searching() && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let t = s.now_t;
        let _ = sitrep::tui::app::update(s, sitrep::tui::app::Msg::Clock(t));
    }
    assert!(!s.searching(), "the search finished within 10 s");
}
