//! Headless runs of every built-in demo scenario: approval through commands, to a verified fix,
//! and the policy's refusals (no approval, denial, read-only, two operators).

use sitrep::agent::{self, AgentHandle, AgentOptions, Trigger, approve};
use sitrep::model::{Command, Event, Outcome, Record};
use sitrep::world::demo;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn start(name: &str, opts: AgentOptions) -> AgentHandle {
    let world = demo::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let payload = world
        .case()
        .and_then(|c| c.alert.clone())
        .expect("scenario has an alert");
    agent::spawn(Arc::new(world), Trigger::Alert(payload), opts)
}

/// Read records to the end; on each approval request call `decide(kind, action_id, handle)`.
async fn run(
    mut h: AgentHandle,
    mut decide: impl FnMut(&str, &str, &AgentHandle),
) -> (Outcome, Vec<Record>) {
    let mut records = Vec::new();
    let mut kinds = BTreeMap::new();
    while let Some(r) = tokio::time::timeout(Duration::from_secs(30), h.records.recv())
        .await
        .expect("agent stalled")
    {
        match &r.event {
            Event::ActionProposed { action } => {
                kinds.insert(action.id.clone(), action.kind.clone());
            }
            Event::ApprovalRequested { action_id, .. } => {
                let kind = kinds.get(action_id).cloned().unwrap_or_default();
                decide(&kind, action_id, &h);
            }
            _ => {}
        }
        let end = matches!(r.event, Event::SessionEnded { .. });
        records.push(r);
        if end {
            break;
        }
    }
    let outcome = h.task.await.expect("agent task").expect("agent result");
    (outcome, records)
}

fn approve_only(kind: &'static str) -> impl FnMut(&str, &str, &AgentHandle) {
    move |k, id, h| {
        let cmd = if k == kind {
            Command::Approve {
                action_id: id.into(),
                by: None,
                params: None,
                digest: None,
            }
        } else {
            Command::Deny {
                action_id: id.into(),
                reason: "not the fix".into(),
                by: None,
            }
        };
        h.commands.send(cmd).expect("agent listening");
    }
}

fn executed(records: &[Record]) -> Vec<String> {
    let kinds: BTreeMap<String, String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ActionProposed { action } => Some((action.id.clone(), action.kind.clone())),
            _ => None,
        })
        .collect();
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ActionExecuted { action_id, .. } => kinds.get(action_id).cloned(),
            _ => None,
        })
        .collect()
}

fn verified(records: &[Record]) -> Vec<bool> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Verified { verification } => Some(verification.passed),
            _ => None,
        })
        .collect()
}

fn stages_in_order(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::StageStarted { stage } => Some(stage.name().to_string()),
            _ => None,
        })
        .collect()
}

fn quick() -> AgentOptions {
    AgentOptions {
        veto_secs: 0.05,
        approval_poll: Duration::from_millis(20),
        ..AgentOptions::default()
    }
}

#[tokio::test]
async fn each_scenario_is_fixed_and_verified_after_approval() {
    for (name, fix) in [
        ("checkout-bad-deploy", "kubernetes.rollout_undo"),
        ("search-cpu-saturation", "kubernetes.scale"),
        ("payments-fraud-check-down", "kubernetes.rollout_restart"),
        ("catalog-image-pull", "kubernetes.rollout_undo"),
        ("checkout-datadog-monitor", "kubernetes.rollout_undo"),
    ] {
        let (outcome, records) = run(start(name, quick()), approve_only(fix)).await;
        assert_eq!(outcome, Outcome::Resolved, "{name}");
        assert_eq!(executed(&records), vec![fix.to_string()], "{name}");
        assert_eq!(verified(&records), vec![true], "{name}");
        assert_eq!(
            stages_in_order(&records).len(),
            8,
            "{name}: every stage runs"
        );
        let verification = records.iter().find_map(|r| match &r.event {
            Event::Verified { verification } => Some(verification.clone()),
            _ => None,
        });
        let v = verification.expect("verified");
        assert!(
            v.before.is_some() && v.after.is_some(),
            "{name}: before/after evidence"
        );
    }
}

#[tokio::test]
async fn the_false_alarm_is_called_healthy_and_nothing_risky_runs() {
    let (outcome, records) = run(start("billing-false-alarm", quick()), approve_only("none")).await;
    let category = records.iter().find_map(|r| match &r.event {
        Event::Diagnosis { category, .. } => Some(*category),
        _ => None,
    });
    assert_eq!(category, Some(sitrep::model::Category::Healthy));
    // The silence is medium risk: it asks like any action and is denied here, unless its 50 ms
    // veto window ends first. It is the only action that may run; nothing that changes workloads.
    assert!(
        executed(&records)
            .iter()
            .all(|k| k == "alertmanager.silence"),
        "{:?}",
        executed(&records)
    );
    assert_ne!(outcome, Outcome::Unresolved);
}

#[tokio::test]
async fn a_high_risk_action_does_not_run_without_approval() {
    let opts = AgentOptions {
        approval_timeout: Some(Duration::from_millis(300)),
        ..quick()
    };
    let (outcome, records) = run(start("checkout-bad-deploy", opts), |_, _, _| {}).await;
    assert_eq!(outcome, Outcome::Diagnosed);
    assert!(executed(&records).is_empty());
    assert!(
        records
            .iter()
            .any(|r| matches!(r.event, Event::ApprovalExpired { .. }))
    );
}

#[tokio::test]
async fn a_denied_action_never_runs() {
    let deny_all = |_: &str, id: &str, h: &AgentHandle| {
        let cmd = Command::Deny {
            action_id: id.into(),
            reason: "change freeze".into(),
            by: None,
        };
        h.commands.send(cmd).expect("agent listening");
    };
    let (outcome, records) = run(start("checkout-bad-deploy", quick()), deny_all).await;
    assert_eq!(outcome, Outcome::Diagnosed);
    assert!(executed(&records).is_empty());
    let denied = records.iter().find_map(|r| match &r.event {
        Event::ApprovalDenied { reason, .. } => Some(reason.clone()),
        _ => None,
    });
    assert_eq!(denied.as_deref(), Some("change freeze"));
}

#[tokio::test]
async fn read_only_runs_no_action_at_all() {
    for name in demo::names() {
        let opts = AgentOptions {
            read_only: true,
            ..quick()
        };
        let approve_all = |_: &str, id: &str, h: &AgentHandle| {
            let cmd = Command::Approve {
                action_id: id.into(),
                by: None,
                params: None,
                digest: None,
            };
            h.commands.send(cmd).expect("agent listening");
        };
        let (outcome, records) = run(start(name, opts), approve_all).await;
        assert!(executed(&records).is_empty(), "{name}");
        assert!(
            !records
                .iter()
                .any(|r| matches!(r.event, Event::ApprovalRequested { .. })),
            "{name}"
        );
        let proposed = records
            .iter()
            .filter(|r| matches!(r.event, Event::ActionProposed { .. }))
            .count();
        let skipped = records
            .iter()
            .filter(|r| matches!(r.event, Event::ActionSkipped { .. }))
            .count();
        assert_eq!(proposed, skipped, "{name}: every proposal is skipped");
        assert_eq!(outcome, Outcome::Diagnosed, "{name}");
    }
}

#[tokio::test]
async fn diagnosis_only_never_waits() {
    let opts = AgentOptions {
        diagnosis_only: true,
        ..quick()
    };
    let (outcome, records) = run(start("orders-db-node-lost", opts), |_, _, _| {}).await;
    assert_eq!(outcome, Outcome::Diagnosed);
    assert!(executed(&records).is_empty());
}

#[tokio::test]
async fn cancel_stops_the_run_cleanly() {
    let cancel = |_: &str, _: &str, h: &AgentHandle| {
        h.commands.send(Command::Cancel).expect("agent listening");
    };
    let (outcome, records) = run(start("checkout-bad-deploy", quick()), cancel).await;
    assert_eq!(outcome, Outcome::Cancelled);
    assert!(executed(&records).is_empty());
    assert!(matches!(
        records.last().map(|r| &r.event),
        Some(Event::SessionEnded {
            outcome: Outcome::Cancelled
        })
    ));
}

#[tokio::test]
async fn chat_answers_from_the_incident() {
    let ask = |_: &str, id: &str, h: &AgentHandle| {
        h.commands
            .send(Command::Chat {
                text: "why?".into(),
            })
            .expect("agent listening");
        h.commands
            .send(Command::Chat {
                text: "/runbook bad-deploy".into(),
            })
            .expect("agent listening");
        h.commands
            .send(Command::Deny {
                action_id: id.into(),
                reason: "asked only".into(),
                by: None,
            })
            .expect("agent listening");
    };
    let (_, records) = run(start("checkout-bad-deploy", quick()), ask).await;
    let answers: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ChatMessage {
                from: sitrep::model::ChatRole::Agent,
                text,
            } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers[0].contains("checkout-api") && answers[0].contains("code_defect"),
        "{}",
        answers[0]
    );
    assert!(
        answers[1].contains("kubernetes.rollout_undo"),
        "{}",
        answers[1]
    );
}

#[tokio::test]
async fn the_session_file_holds_every_record_and_the_decision_precedes_the_action() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.ndjson");
    let opts = AgentOptions {
        session_path: Some(path.clone()),
        ..quick()
    };
    let (outcome, records) = run(
        start("checkout-bad-deploy", opts),
        approve_only("kubernetes.rollout_undo"),
    )
    .await;
    assert_eq!(outcome, Outcome::Resolved);
    let log = sitrep::session::read_file(&path).expect("session file reads back");
    assert!(log.tear.is_none());
    assert_eq!(log.records.len(), records.len());
    let pos = |f: &dyn Fn(&Event) -> bool| log.records.iter().position(|r| f(&r.event));
    let given = pos(&|e| matches!(e, Event::ApprovalGiven { .. })).expect("approval");
    let ran = pos(&|e| matches!(e, Event::ActionExecuted { .. })).expect("executed");
    assert!(given < ran);
    assert!(
        path.with_extension("md").exists(),
        "report written next to the session"
    );
}

/// The critical action runs only once two different OS users approved it. The second approval
/// is a file in the session's approvals directory owned by another uid (as `sitrep approve`
/// run by another user would leave it); content cannot fake the owner.
#[tokio::test]
async fn a_critical_action_needs_two_distinct_operators() {
    if approve::current_uid() != 0 {
        eprintln!("skipped: creating a file owned by another user needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("orders.ndjson");
    let opts = AgentOptions {
        session_path: Some(path.clone()),
        ..quick()
    };
    let h = start("orders-db-node-lost", opts);
    let session = path.clone();
    let (outcome, records) = run(h, move |kind, id, h| {
        if kind != "kubernetes.delete_pod" {
            let cmd = Command::Deny {
                action_id: id.into(),
                reason: "not now".into(),
                by: None,
            };
            h.commands.send(cmd).expect("agent listening");
            return;
        }
        // First operator: the console (root).
        h.commands
            .send(Command::Approve {
                action_id: id.into(),
                by: None,
                params: None,
                digest: None,
            })
            .expect("listening");
        // Approving twice from the same console is still one operator.
        h.commands
            .send(Command::Approve {
                action_id: id.into(),
                by: Some("someone-else".into()),
                params: None,
                digest: None,
            })
            .expect("listening");
        // The same user again from another terminal does not count as a second operator.
        let refused = approve::submit_in(
            session.to_str().expect("utf-8 path"),
            id,
            session.parent().expect("dir"),
        )
        .expect_err("the operator cannot be the second approver");
        assert!(
            refused.to_string().contains("session's operator"),
            "{refused}"
        );
        // A second, different user (uid 65534) approves from another terminal: a file that
        // user owns, naming the version shown.
        let digest = sitrep::session::read_file(&session)
            .expect("session")
            .incident()
            .action(id)
            .map(|a| a.digest.clone())
            .expect("requested");
        let theirs = approve::approvals_dir(&session).join(format!("{id}.65534.json"));
        let body = approve::ApprovalFile {
            action_id: id.into(),
            session: session.display().to_string(),
            digest,
            at: chrono::Utc::now(),
        };
        std::fs::write(&theirs, serde_json::to_string(&body).expect("json")).expect("write");
        let delay = theirs.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            std::os::unix::fs::chown(&delay, Some(65534), Some(65534)).expect("chown");
        });
        std::os::unix::fs::chown(&theirs, Some(0), Some(0)).expect("chown root first");
    })
    .await;
    let kinds = executed(&records);
    assert_eq!(kinds, vec!["kubernetes.delete_pod".to_string()]);
    assert_eq!(outcome, Outcome::Resolved);
    let approvers: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ApprovalGiven { by, .. } => Some(by.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(approvers.len(), 2, "{approvers:?}");
    assert_ne!(approvers[0], approvers[1]);
    // Run only after the second approval.
    let second = records
        .iter()
        .rposition(|r| matches!(r.event, Event::ApprovalGiven { .. }))
        .expect("given");
    let ran = records
        .iter()
        .position(|r| matches!(r.event, Event::ActionExecuted { .. }))
        .expect("ran");
    assert!(second < ran);
    assert!(records.iter().any(
        |r| matches!(&r.event, Event::Warning { message } if message.contains("distinct operators"))
    ));
}

/// An action approved while others still wait runs at once, not after the last decision; a
/// denial of another sent right behind that approval still lands on the one it names.
#[tokio::test]
async fn an_approved_action_runs_while_others_still_wait() {
    let mut h = start("orders-db-node-lost", quick());
    let mut records: Vec<Record> = Vec::new();
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    let mut waiting: Vec<String> = Vec::new();
    let id_of = |kinds: &BTreeMap<String, String>, kind: &str| {
        kinds
            .iter()
            .find(|(_, k)| k.as_str() == kind)
            .map(|(id, _)| id.clone())
            .unwrap_or_default()
    };
    let approve = |id: String| Command::Approve {
        action_id: id,
        by: None,
        params: None,
        digest: None,
    };
    let deny = |id: String| Command::Deny {
        action_id: id,
        reason: "not now".into(),
        by: None,
    };
    while let Some(r) = tokio::time::timeout(Duration::from_secs(30), h.records.recv())
        .await
        .expect("agent stalled")
    {
        match &r.event {
            Event::ActionProposed { action } => {
                kinds.insert(action.id.clone(), action.kind.clone());
            }
            Event::ApprovalRequested { action_id, .. } => {
                waiting.push(action_id.clone());
                if waiting.len() == 3 {
                    // Cordon approved, drain denied right behind it; the critical delete waits.
                    for cmd in [
                        approve(id_of(&kinds, "kubernetes.cordon")),
                        deny(id_of(&kinds, "kubernetes.drain")),
                    ] {
                        h.commands.send(cmd).expect("agent listening");
                    }
                }
            }
            Event::ActionExecuted { .. } => {
                h.commands
                    .send(deny(id_of(&kinds, "kubernetes.delete_pod")))
                    .expect("agent listening");
            }
            _ => {}
        }
        let end = matches!(r.event, Event::SessionEnded { .. });
        records.push(r);
        if end {
            break;
        }
    }
    assert_eq!(waiting.len(), 3, "three actions asked for decisions");
    assert_eq!(executed(&records), vec!["kubernetes.cordon".to_string()]);
    let pos = |f: &dyn Fn(&Event) -> bool| records.iter().position(|r| f(&r.event));
    let ran = pos(&|e| matches!(e, Event::ActionExecuted { .. })).expect("cordon ran");
    let delete = id_of(&kinds, "kubernetes.delete_pod");
    let delete_denied =
        pos(&|e| matches!(e, Event::ApprovalDenied { action_id, .. } if *action_id == delete))
            .expect("the delete was denied");
    assert!(
        ran < delete_denied,
        "the cordon waited for the delete's decision"
    );
    let drain = id_of(&kinds, "kubernetes.drain");
    assert!(
        records.iter().any(|r| matches!(&r.event,
            Event::ApprovalDenied { action_id, .. } if *action_id == drain)),
        "the drain's denial, sent while the cordon ran, was applied"
    );
    let approve_done =
        pos(&|e| matches!(e, Event::StageFinished { stage, .. } if stage.name() == "approve"))
            .expect("approve finished");
    assert!(ran < approve_done);
    let outcome = h.task.await.expect("agent task").expect("agent result");
    assert_ne!(outcome, Outcome::Cancelled);
}
