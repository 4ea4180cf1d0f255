//! Log signatures on synthetic worlds written for this file: lines clustered into templates,
//! classified by error class, compared before and after the onset, and the decisive detail
//! (host:port, missing key) named with the log evidence that shows it.

use chrono::{DateTime, Duration, Utc};
use sitrep::model::{Alert, Category, DeploymentFacts, LogLine, PodFacts};
use sitrep::reason::{Analysis, Observations, analyze};
use std::collections::BTreeMap;

const NS: &str = "fulfil";
const LOG_EV: &str = "ev-logs-7";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-09T16:40:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

fn onset() -> DateTime<Utc> {
    now() - Duration::minutes(15)
}

fn pod(name: &str) -> PodFacts {
    PodFacts {
        name: name.into(),
        namespace: NS.into(),
        phase: "Running".into(),
        owner: Some("ReplicaSet/picker-6c9d".into()),
        labels: BTreeMap::from([
            ("app".to_string(), "picker".to_string()),
            ("pod-template-hash".to_string(), "6c9d".to_string()),
        ]),
        conditions: BTreeMap::from([("Ready".to_string(), "True".to_string())]),
        created_at: Some(now() - Duration::hours(3)),
        ..PodFacts::default()
    }
}

/// `picker` with an alert that started at the onset; lines are (minutes after the onset, text).
fn world(lines: &[(i64, String)]) -> Observations {
    let mut labels = BTreeMap::from([
        ("alertname".to_string(), "PickerErrors".to_string()),
        ("namespace".to_string(), NS.to_string()),
        ("deployment".to_string(), "picker".to_string()),
    ]);
    labels.insert("severity".into(), "page".into());
    Observations {
        alert: Some(Alert {
            labels,
            starts_at: Some(onset()),
            ..Alert::default()
        }),
        now: now(),
        deployments: vec![DeploymentFacts {
            name: "picker".into(),
            namespace: NS.into(),
            replicas: 2,
            ready_replicas: 2,
            updated_replicas: 2,
            available_replicas: 2,
            ..DeploymentFacts::default()
        }],
        pods: vec![pod("picker-6c9d-x1"), pod("picker-6c9d-x2")],
        pod_logs: lines
            .iter()
            .enumerate()
            .map(|(i, (m, l))| LogLine {
                at: Some(onset() + Duration::minutes(*m)),
                labels: BTreeMap::from([(
                    "pod".to_string(),
                    if i % 2 == 0 {
                        "picker-6c9d-x1"
                    } else {
                        "picker-6c9d-x2"
                    }
                    .to_string(),
                )]),
                line: l.clone(),
            })
            .collect(),
        evidence: BTreeMap::from([
            ("kubernetes/pods".to_string(), vec!["ev-pods-1".to_string()]),
            ("kubernetes/pod_logs".to_string(), vec![LOG_EV.to_string()]),
        ]),
        ..Observations::default()
    }
}

/// Healthy traffic from 20 minutes before the onset to 10 after, plus `bad` lines after the onset.
fn with_failure(bad: &[&str]) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = (-20i64..10)
        .map(|m| {
            (
                m,
                format!(
                    "INFO picked order {} in {}ms",
                    4000 + m * 7,
                    20 + (m * 3).rem_euclid(17)
                ),
            )
        })
        .collect();
    for m in 1..8 {
        for b in bad {
            out.push((m, b.replace("{n}", &(m * 13).to_string())));
        }
    }
    out
}

fn text(a: &Analysis) -> String {
    format!(
        "{:?} | {} | {}",
        a.category,
        a.root_cause,
        a.findings
            .iter()
            .map(|f| f.summary.clone())
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

fn cites_logs(a: &Analysis, word: &str) -> bool {
    a.findings
        .iter()
        .any(|f| f.summary.contains(word) && f.evidence.iter().any(|e| e == LOG_EV))
}

#[test]
fn each_error_class_names_its_decisive_detail() {
    let cases: [(&[&str], Category, &str); 8] = [
        (
            &["ERROR reserve failed: dial tcp 10.44.1.{n}:7443: connect: connection refused"],
            Category::DependencyFailure,
            "10.44.1.",
        ),
        (
            &[
                "ERROR read tcp 10.2.0.4:51{n}->stock-api.fulfil.svc:9090: read: connection reset by peer",
            ],
            Category::DependencyFailure,
            "stock-api.fulfil.svc:9090",
        ),
        (
            &[
                "ERROR dial tcp: lookup labels-svc.print.svc.cluster.local on 10.96.0.10:53: no such host",
            ],
            // A name that resolves nowhere is a configuration error (docs/diagnosis.md).
            Category::ConfigurationError,
            "labels-svc.print.svc.cluster.local",
        ),
        (
            &["WARN request {n} to carrier-gw:8080 failed: context deadline exceeded"],
            Category::DependencyFailure,
            "carrier-gw:8080",
        ),
        (
            &["ERROR startup: environment variable WAREHOUSE_ZONE_MAP is not set"],
            Category::ConfigurationError,
            "WAREHOUSE_ZONE_MAP",
        ),
        (
            &["ERROR config: required key \"bin_capacity\" not found in /etc/picker/config.yaml"],
            Category::ConfigurationError,
            "bin_capacity",
        ),
        (
            &["ERROR pq: password authentication failed for user \"picker\" (host orders-db:5432)"],
            Category::ConfigurationError,
            "orders-db:5432",
        ),
        (
            &[
                "ERROR Post https://labels.example:443/v2: x509: certificate signed by unknown authority (host labels.example:443)",
            ],
            Category::ConfigurationError,
            "labels.example:443",
        ),
    ];
    for (bad, category, detail) in cases {
        let a = analyze(&world(&with_failure(bad)));
        assert_eq!(a.category, category, "{bad:?}: {}", text(&a));
        assert!(
            a.root_cause.contains(detail),
            "{detail} missing: {}",
            text(&a)
        );
        assert!(
            a.root_cause.contains("new since the onset"),
            "onset comparison missing: {}",
            text(&a)
        );
        assert!(
            cites_logs(&a, detail),
            "no finding cites the logs: {}",
            text(&a)
        );
    }
}

#[test]
fn an_error_class_logged_as_much_before_the_onset_is_background() {
    // Timeouts to a metrics sink all along; a panic that only starts at the onset.
    let mut lines = with_failure(&[
        "panic: runtime error: invalid memory address or nil pointer dereference [order {n}]",
    ]);
    for m in -20..10 {
        lines.push((
            m,
            format!(
                "ERROR push to statsd-sink:8125 timed out after {}ms",
                500 + m
            ),
        ));
    }
    let a = analyze(&world(&lines));
    assert_eq!(a.category, Category::CodeDefect, "{}", text(&a));
    assert!(a.root_cause.contains("panic"), "{}", text(&a));
    let timeouts = a
        .findings
        .iter()
        .find(|f| f.summary.contains("timeouts"))
        .map(|f| f.summary.clone())
        .unwrap_or_default();
    assert!(
        timeouts.contains("already logged before the onset"),
        "{}",
        text(&a)
    );
}

#[test]
fn a_class_that_jumps_at_the_onset_says_so() {
    let mut lines = with_failure(&[]);
    // One refused connection an hour, then many after the onset.
    lines.push((
        -18,
        "ERROR dial tcp 10.9.9.9:6379: connect: connection refused".into(),
    ));
    for m in 0..9 {
        lines.push((
            m,
            format!("ERROR dial tcp 10.9.9.{m}:6379: connect: connection refused"),
        ));
        lines.push((
            m,
            format!("ERROR dial tcp 10.9.9.{m}:6379: connect: connection refused"),
        ));
    }
    let a = analyze(&world(&lines));
    assert_eq!(a.category, Category::DependencyFailure, "{}", text(&a));
    assert!(a.root_cause.contains("jumped at the onset"), "{}", text(&a));
}

#[test]
fn an_unclassified_new_error_template_is_context_not_a_cause() {
    let lines = with_failure(&["ERROR slot allocator returned {n} for wave {n}"]);
    let a = analyze(&world(&lines));
    let finding = a
        .findings
        .iter()
        .find(|f| f.analyzer == "log_template")
        .unwrap_or_else(|| panic!("no template finding: {}", text(&a)));
    assert!(
        finding
            .summary
            .contains("slot allocator returned <NUM> for wave <NUM>"),
        "{}",
        finding.summary
    );
    assert!(finding.evidence.iter().any(|e| e == LOG_EV));
    assert!(!a.root_cause.contains("slot allocator"), "{}", text(&a));
    assert_ne!(a.category, Category::Healthy, "{}", text(&a));
}

#[test]
fn failures_a_feature_flag_turned_on_name_the_flag_that_changed() {
    let mut obs = world(&with_failure(&[
        "ERROR pick {n} failed: rpc error: code = Internal desc = Error: Stock Fail Feature Flag Enabled",
    ]));
    // The flag service announced the change a minute before the failures began.
    obs.pod_logs.push(LogLine {
        at: Some(onset() - Duration::minutes(1)),
        labels: BTreeMap::from([("pod".to_string(), "flagd-7c5-q2".to_string())]),
        line: "configuration change (write) for flagKey stockFailure (file:/etc/flagd/flags.json)"
            .into(),
    });
    let a = analyze(&obs);
    assert_eq!(a.category, Category::ConfigurationError, "{}", text(&a));
    assert!(a.root_cause.contains("stockFailure"), "{}", text(&a));
    assert!(cites_logs(&a, "feature flag"), "{}", text(&a));

    // The same errors without a word of a flag are not laid at one.
    let obs = world(&with_failure(&[
        "ERROR pick {n} failed: rpc error: code = Internal desc = Error: stock lookup failed",
    ]));
    let a = analyze(&obs);
    assert!(
        !a.root_cause.to_lowercase().contains("flag"),
        "{}",
        text(&a)
    );
}
