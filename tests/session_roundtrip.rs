//! Property: any sequence of events written by the session writer and read back folds to the same incident.

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use sitrep::model::{
    Action, Alert, AlertStatus, Category, ChatRole, Event, Evidence, EvidenceBody, Finding,
    Hypothesis, Incident, Marker, Outcome, Record, Risk, RuledOut, RunMode, Series, Stage,
    Verification,
};
use sitrep::session::{self, Writer};
use std::collections::BTreeMap;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9 ._/-]{0,24}",
        1 => "(?s).{0,16}",
        1 => Just("quote \" backslash \\ newline \n tab \t nul \u{0} emoji 🚨".to_string()),
    ]
}

fn id(prefix: &'static str) -> impl Strategy<Value = String> {
    (0..4u8).prop_map(move |n| format!("{prefix}{n}"))
}

fn time() -> impl Strategy<Value = DateTime<Utc>> {
    (1_500_000_000i64..2_500_000_000, 0u32..1_000_000_000)
        .prop_map(|(s, ns)| Utc.timestamp_opt(s, ns).single().unwrap_or_default())
}

fn unit() -> impl Strategy<Value = f32> {
    0.0f32..=1.0
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (-1e12f64..1e12).prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn params() -> impl Strategy<Value = BTreeMap<String, serde_json::Value>> {
    prop::collection::btree_map("[a-z_]{1,10}", json_value(), 0..4)
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-z_]{1,10}", text(), 0..4)
}

fn stage() -> impl Strategy<Value = Stage> {
    prop::sample::select(Stage::ALL.to_vec())
}

fn category() -> impl Strategy<Value = Category> {
    prop::sample::select(Category::ALL.to_vec())
}

fn risk() -> impl Strategy<Value = Risk> {
    prop::sample::select(vec![Risk::Low, Risk::Medium, Risk::High, Risk::Critical])
}

fn ids(prefix: &'static str) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(id(prefix), 0..3)
}

fn alert() -> impl Strategy<Value = Alert> {
    (
        labels(),
        labels(),
        prop::option::of(time()),
        text(),
        any::<bool>(),
    )
        .prop_map(
            |(labels, annotations, starts_at, generator_url, firing)| Alert {
                status: if firing {
                    AlertStatus::Firing
                } else {
                    AlertStatus::Resolved
                },
                labels,
                annotations,
                starts_at,
                ends_at: None,
                generator_url,
                fingerprint: String::new(),
            },
        )
}

fn series() -> impl Strategy<Value = Series> {
    (
        text(),
        labels(),
        prop::collection::vec((0.0f64..3e9, -1e9f64..1e9), 0..6),
    )
        .prop_map(|(name, labels, points)| Series {
            name,
            labels,
            points,
        })
}

fn body() -> impl Strategy<Value = EvidenceBody> {
    prop_oneof![
        (
            prop::sample::select(vec!["log", "json", "yaml", "markdown", "text"]),
            text()
        )
            .prop_map(|(language, text)| EvidenceBody::Text {
                language: language.into(),
                text
            }),
        (
            prop::collection::vec(text(), 0..4),
            prop::collection::vec(prop::collection::vec(text(), 0..4), 0..4)
        )
            .prop_map(|(columns, rows)| EvidenceBody::Table { columns, rows }),
        (
            prop::collection::vec(series(), 0..3),
            prop::option::of(-1e6f64..1e6),
            prop::option::of(text()),
            prop::collection::vec(
                (0.0f64..3e9, text()).prop_map(|(at, label)| Marker { at, label }),
                0..3
            )
        )
            .prop_map(
                |(series, threshold, unit, markers)| EvidenceBody::TimeSeries {
                    series,
                    threshold,
                    unit,
                    markers
                }
            ),
        json_value().prop_map(|value| EvidenceBody::Json { value }),
    ]
}

fn evidence() -> impl Strategy<Value = Evidence> {
    (
        id("e"),
        prop::sample::select(vec![
            "kubernetes/pods",
            "kubernetes/events",
            "kubernetes/pod_logs",
            "metrics",
            "logs",
            "changes",
        ]),
        text(),
        text(),
        prop::option::of(id("c")),
        body(),
    )
        .prop_map(|(id, kind, title, source, call_id, body)| Evidence {
            id,
            kind: kind.into(),
            title,
            source,
            call_id,
            body,
        })
}

fn action() -> impl Strategy<Value = Action> {
    (
        id("a"),
        text(),
        text(),
        params(),
        risk(),
        text(),
        text(),
        text(),
        ids("e"),
    )
        .prop_map(
            |(id, kind, target, params, risk, rationale, operation, blast_radius, evidence)| {
                Action {
                    id,
                    kind,
                    target,
                    params,
                    risk,
                    rationale,
                    operation,
                    blast_radius,
                    evidence,
                }
            },
        )
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (
            text(),
            text(),
            time(),
            prop::sample::select(vec![RunMode::Live, RunMode::Demo, RunMode::Case]),
            prop::option::of(alert()),
            prop::option::of(text()),
            prop::option::of(text()),
            any::<bool>(),
            text()
        )
            .prop_map(
                |(id, title, started, mode, alert, problem, case, read_only, operator)| {
                    Event::SessionStarted {
                        id,
                        title,
                        started,
                        mode,
                        alert,
                        problem,
                        case,
                        read_only,
                        operator,
                    }
                }
            ),
        prop::sample::select(vec![
            Outcome::Resolved,
            Outcome::Diagnosed,
            Outcome::Unresolved,
            Outcome::Cancelled,
            Outcome::Failed,
            Outcome::Unknown
        ])
        .prop_map(|outcome| Event::SessionEnded { outcome }),
        stage().prop_map(|stage| Event::StageStarted { stage }),
        (stage(), text()).prop_map(|(stage, summary)| Event::StageFinished { stage, summary }),
        (
            text(),
            prop::option::of(text()),
            prop::collection::vec(text(), 0..3),
            prop::option::of(time()),
            prop::option::of(prop::collection::vec(text(), 0..3))
        )
            .prop_map(|(summary, runbook, specialists, now, integrations)| {
                Event::Triaged {
                    summary,
                    runbook,
                    specialists,
                    now,
                    integrations,
                }
            }),
        (id("c"), text(), prop::option::of(text()), params()).prop_map(
            |(call_id, tool, specialist, params)| Event::ToolCalled {
                call_id,
                tool,
                specialist,
                params
            }
        ),
        (id("c"), any::<u64>(), text()).prop_map(|(call_id, duration_ms, summary)| {
            Event::ToolSucceeded {
                call_id,
                duration_ms,
                summary,
            }
        }),
        (id("c"), any::<u64>(), text()).prop_map(|(call_id, duration_ms, error)| {
            Event::ToolFailed {
                call_id,
                duration_ms,
                error,
            }
        }),
        evidence().prop_map(|evidence| Event::EvidenceAdded { evidence }),
        (id("e"), text())
            .prop_map(|(evidence_id, text)| Event::EvidenceAppended { evidence_id, text }),
        (
            id("e"),
            text(),
            prop::collection::vec((text(), text(), any::<bool>()), 0..3)
        )
            .prop_map(|(evidence_id, kind, pods)| Event::Observed {
                evidence_id,
                kind,
                facts: sitrep::model::Facts::Pods(
                    pods.into_iter()
                        .map(|(name, phase, deleting)| sitrep::model::PodFacts {
                            name,
                            phase,
                            deleting,
                            ..Default::default()
                        })
                        .collect()
                ),
            }),
        (text(), text(), text(), category(), unit(), ids("e")).prop_map(
            |(analyzer, summary, detail, category, confidence, evidence)| Event::Finding {
                finding: Finding {
                    analyzer,
                    summary,
                    detail,
                    category,
                    confidence,
                    evidence,
                },
            }
        ),
        (
            prop::collection::vec(
                (category(), text(), unit(), ids("e")).prop_map(
                    |(category, statement, confidence, evidence)| Hypothesis {
                        category,
                        statement,
                        confidence,
                        evidence,
                    }
                ),
                0..3
            ),
            prop::collection::vec(
                (text(), text(), ids("e")).prop_map(|(statement, reason, evidence)| RuledOut {
                    statement,
                    reason,
                    evidence,
                }),
                0..3
            )
        )
            .prop_map(|(hypotheses, ruled_out)| Event::HypothesesRanked {
                hypotheses,
                ruled_out
            }),
        (category(), text(), unit()).prop_map(|(category, root_cause, confidence)| {
            Event::Diagnosis {
                category,
                root_cause,
                confidence,
            }
        }),
        action().prop_map(|action| Event::ActionProposed { action }),
        (
            id("a"),
            risk(),
            prop::option::of(0.0f64..600.0),
            0u8..3,
            "[0-9a-f]{0,64}"
        )
            .prop_map(|(action_id, risk, veto_secs, approvals_needed, digest)| {
                Event::ApprovalRequested {
                    action_id,
                    risk,
                    veto_secs,
                    approvals_needed,
                    digest,
                }
            }),
        (action(), text()).prop_map(|(action, by)| Event::ActionEdited { action, by }),
        (id("a"), text()).prop_map(|(action_id, by)| Event::VetoPaused { action_id, by }),
        (
            id("a"),
            text(),
            time(),
            prop::option::of(params()),
            "[0-9a-f]{0,64}",
            text()
        )
            .prop_map(
                |(action_id, by, at, params, digest, via)| Event::ApprovalGiven {
                    action_id,
                    by,
                    at,
                    via,
                    digest,
                    params
                }
            ),
        (id("a"), text(), time(), text(), text()).prop_map(|(action_id, by, at, reason, via)| {
            Event::ApprovalDenied {
                action_id,
                by,
                at,
                reason,
                via,
            }
        }),
        (id("a"), time()).prop_map(|(action_id, at)| Event::ApprovalExpired { action_id, at }),
        (id("a"), any::<u64>(), text()).prop_map(|(action_id, duration_ms, result)| {
            Event::ActionExecuted {
                action_id,
                duration_ms,
                result,
            }
        }),
        (id("a"), text()).prop_map(|(action_id, error)| Event::ActionFailed { action_id, error }),
        (id("a"), text())
            .prop_map(|(action_id, reason)| Event::ActionSkipped { action_id, reason }),
        (
            prop::option::of(id("a")),
            any::<bool>(),
            text(),
            prop::option::of(id("e")),
            prop::option::of(id("e"))
        )
            .prop_map(
                |(action_id, passed, summary, before, after)| Event::Verified {
                    verification: Verification {
                        action_id,
                        passed,
                        unknown: false,
                        summary,
                        before,
                        after,
                    },
                }
            ),
        (
            prop::sample::select(vec![ChatRole::Operator, ChatRole::Agent, ChatRole::System]),
            text()
        )
            .prop_map(|(from, text)| Event::ChatMessage { from, text }),
        text().prop_map(|markdown| Event::Report { markdown }),
        text().prop_map(|message| Event::Warning { message }),
    ]
}

/// Records with arbitrary (finite, non-negative) times, mostly increasing as a real session's are.
fn records() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec((0.0f64..1e5, event()), 0..40).prop_map(|pairs| {
        let mut t = 0.0;
        pairs
            .into_iter()
            .map(|(dt, event)| {
                t += dt / 1000.0;
                Record { t, event }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn written_sessions_read_back_to_the_same_incident(records in records(), title in text()) {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let started = Utc.timestamp_opt(1_795_338_000, 0).single().unwrap_or_default();
        let path = session::new_session_path_in(dir.path(), started, &title);
        let header = session::header("s1", started, &title);
        let mut writer = Writer::create(&path, &header).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for r in &records {
            writer.append(r).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        writer.sync().map_err(|e| TestCaseError::fail(e.to_string()))?;
        drop(writer);

        let log = session::read_file(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&log.tear, &None);
        prop_assert_eq!(&log.header, &header);
        prop_assert_eq!(&log.records, &records);
        let live = Incident::fold(records.iter().map(|r| (r.t, &r.event)));
        prop_assert_eq!(log.incident(), live);
    }
}
