//! Risk floors from the one catalog: a runbook cannot declare a destructive action low, analyzers'
//! proposals never sit below their kind's floor, and a firing alert's silence is at least medium,
//! asks first, and is proposed only with a rationale computed from the evidence it cites.

mod support;

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use sitrep::agent::{self, AgentHandle, AgentOptions, Trigger};
use sitrep::model::catalog;
use sitrep::model::{
    Action, Alert, Category, Command, ContainerFacts, DeploymentFacts, Event, NodeFacts, PodFacts,
    Record, Risk,
};
use sitrep::reason::{Observations, analyze};
use sitrep::world::demo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Destructive actions a runbook declares `low`, one step each (line numbers matter below).
const LOW_RISK_DESTRUCTIVE: &str = r#"name: node-lost-fast
description: free the stuck pod and undo the last rollout, without asking
match:
  labels:
    alertname: [KubeStatefulSetReplicasMismatch]
    namespace: [orders]
steps:
  - action:
      tool: kubernetes.delete_pod
      target: "pod/{{ facts.stuck_pods[0] }}"
      params:
        namespace: "{{ facts.stuck_pod_namespaces[0] }}"
      risk: low
      when: "facts.stuck_pods | length > 0"
      rationale: free the stuck pod
  - action:
      tool: kubernetes.rollout_undo
      target: deployment/orders-api
      params:
        namespace: orders
      risk: low
      rationale: undo the last rollout
"#;

const LOW_RISK_DRAIN: &str = r#"name: drain-fast
match:
  keywords: [node down]
steps:
  - action:
      tool: kubernetes.drain
      target: "node/{{ facts.not_ready_nodes[0] }}"
      risk: low
      rationale: empty the lost node
"#;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn runbooks_check_reports_a_risk_below_the_floor_at_file_line_col() {
    let dir = tempdir();
    write(dir.path(), "fast.yaml", LOW_RISK_DESTRUCTIVE);
    write(dir.path(), "drain.yaml", LOW_RISK_DRAIN);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["runbooks", "check"])
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted: {stderr}");
    let fast = dir.path().join("fast.yaml").display().to_string();
    let drain = dir.path().join("drain.yaml").display().to_string();
    for (file, line, col) in [(&fast, 13, 13), (&fast, 21, 13), (&drain, 8, 13)] {
        let at = format!("{file}:{line}:{col}: a risk of at least high");
        assert!(stderr.contains(&at), "no `{at}` in:\n{stderr}");
    }
    // Raising a risk is fine: the same steps declared critical pass.
    let raised = tempdir();
    write(
        raised.path(),
        "fast.yaml",
        &LOW_RISK_DESTRUCTIVE.replace("risk: low", "risk: critical"),
    );
    write(
        raised.path(),
        "drain.yaml",
        &LOW_RISK_DRAIN.replace("risk: low", "risk: high"),
    );
    let names = sitrep::runbook::check(raised.path()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(names.len(), 2);
}

#[test]
fn a_runbook_can_propose_every_catalog_action() {
    let mut text = String::from("name: everything\nmatch:\n  keywords: [anything]\nsteps:\n");
    for e in catalog::actions() {
        let target = match e.target {
            catalog::Target::Named { prefix, .. } => format!("{prefix}/x1"),
            catalog::Target::Alert => "alertname=X".to_string(),
            catalog::Target::None => panic!("{} is an action without a target", e.name),
        };
        text.push_str(&format!(
            "  - action:\n      tool: {}\n      target: \"{target}\"\n      risk: {}\n      rationale: r\n",
            e.name, e.floor
        ));
        let required: Vec<&catalog::Param> = e
            .params
            .iter()
            .filter(|p| p.required && Some(p.name) != e.target_param())
            .collect();
        if !required.is_empty() {
            text.push_str("      params:\n");
            for p in required {
                text.push_str(&format!("        {}: \"3\"\n", p.name));
            }
        }
    }
    let dir = tempdir();
    write(dir.path(), "all.yaml", &text);
    let names = sitrep::runbook::check(dir.path()).unwrap_or_else(|e| panic!("{}\n{text}", e[0]));
    assert_eq!(names, vec!["everything".to_string()]);
}

#[test]
fn runbook_params_outside_the_schema_point_at_their_line() {
    let dir = tempdir();
    let text = LOW_RISK_DESTRUCTIVE
        .replace("risk: low", "risk: critical")
        .replace("        namespace: orders\n", "        namespaec: orders\n");
    write(dir.path(), "typo.yaml", &text);
    let errors = sitrep::runbook::check(dir.path()).expect_err("a misspelt param");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|e| e.contains("typo.yaml:20:20: a parameter of kubernetes.rollout_undo")),
        "{text:?}"
    );
}

fn start(name: &str, opts: AgentOptions) -> AgentHandle {
    let world = demo::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let payload = world
        .case()
        .and_then(|c| c.alert.clone())
        .unwrap_or_else(|| panic!("{name} has an alert"));
    agent::spawn(Arc::new(world), Trigger::Alert(payload), opts)
}

/// Read records to the end; on each approval request call `decide(action, handle)`.
async fn run(mut h: AgentHandle, mut decide: impl FnMut(&Action, &AgentHandle)) -> Vec<Record> {
    let mut records = Vec::new();
    let mut proposed: BTreeMap<String, Action> = BTreeMap::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(30), h.records.recv()).await;
        let Ok(Some(r)) = next else {
            panic!("the investigation stalled or stopped without ending")
        };
        match &r.event {
            Event::ActionProposed { action } => {
                proposed.insert(action.id.clone(), action.clone());
            }
            Event::ApprovalRequested { action_id, .. } => {
                if let Some(a) = proposed.get(action_id) {
                    decide(a, &h);
                }
            }
            _ => {}
        }
        let end = matches!(r.event, Event::SessionEnded { .. });
        records.push(r);
        if end {
            break;
        }
    }
    records
}

fn proposals(records: &[Record]) -> Vec<Action> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ActionProposed { action } => Some(action.clone()),
            _ => None,
        })
        .collect()
}

/// Ids of actions that ran (or were attempted).
fn ran(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ActionExecuted { action_id, .. } | Event::ActionFailed { action_id, .. } => {
                Some(action_id.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_headless_investigation_never_runs_a_low_declared_destructive_action_unasked() {
    let dir = tempdir();
    write(dir.path(), "fast.yaml", LOW_RISK_DESTRUCTIVE);
    let opts = AgentOptions {
        runbooks_dir: Some(dir.path().to_path_buf()),
        // Long enough that nothing medium runs by itself before requests expire.
        veto_secs: 600.0,
        approval_timeout: Some(Duration::from_millis(500)),
        approval_poll: Duration::from_millis(20),
        ..AgentOptions::default()
    };
    let records = run(start("orders-db-node-lost", opts), |_, _| {}).await;
    assert!(ran(&records).is_empty(), "ran unasked: {:?}", ran(&records));
    let warned = records.iter().any(|r| match &r.event {
        Event::Warning { message } => {
            message.contains("fast.yaml:13:13") && message.contains("a risk of at least high")
        }
        _ => false,
    });
    assert!(
        warned,
        "the low-risk runbook was not reported as skipped with its position"
    );
    let proposed = proposals(&records);
    assert!(!proposed.is_empty(), "the scenario proposes a remedy");
    for a in &proposed {
        assert!(
            a.risk >= catalog::risk_floor(&a.kind),
            "{} {} proposed at {} below its floor {}",
            a.kind,
            a.target,
            a.risk,
            catalog::risk_floor(&a.kind)
        );
        assert_eq!(
            a.operation,
            catalog::operation(&a.kind, &a.target, &a.params)
        );
    }
    // The analyzers' own pod deletion is among them, and at its floor or above.
    assert!(
        proposed
            .iter()
            .any(|a| a.kind == "kubernetes.delete_pod" && a.risk >= Risk::High),
        "{proposed:#?}"
    );
}

#[tokio::test]
async fn a_firing_alerts_silence_is_medium_asks_first_and_a_deny_is_final() {
    let opts = AgentOptions {
        veto_secs: 600.0,
        approval_poll: Duration::from_millis(20),
        ..AgentOptions::default()
    };
    let deny = |a: &Action, h: &AgentHandle| {
        let cmd = Command::Deny {
            action_id: a.id.clone(),
            reason: "keep paging".into(),
            by: None,
        };
        let _ = h.commands.send(cmd);
    };
    let records = run(start("billing-false-alarm", opts), deny).await;
    let silences: Vec<Action> = proposals(&records)
        .into_iter()
        .filter(|a| a.kind == "alertmanager.silence")
        .collect();
    assert_eq!(silences.len(), 1, "{silences:#?}");
    let s = &silences[0];
    assert!(s.risk >= Risk::Medium, "silence proposed at {}", s.risk);
    let requested = records.iter().position(|r| {
        matches!(&r.event, Event::ApprovalRequested { action_id, risk, veto_secs, .. }
            if action_id == &s.id && *risk >= Risk::Medium && veto_secs.is_none_or(|v| v > 0.0))
    });
    assert!(requested.is_some(), "the silence never asked");
    assert!(!ran(&records).contains(&s.id), "a denied silence ran");

    // The rationale is computed from evidence: each id it cites is evidence of this session, and
    // it carries a clock time and a measured value.
    let evidence: BTreeSet<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::EvidenceAdded { evidence } => Some(evidence.id.clone()),
            _ => None,
        })
        .collect();
    let cited: Vec<&str> = s
        .rationale
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("ev-"))
        .collect();
    assert!(!cited.is_empty(), "cites nothing: {}", s.rationale);
    for id in &cited {
        assert!(
            evidence.contains(*id),
            "{id} is not evidence: {}",
            s.rationale
        );
        assert!(
            s.evidence.iter().any(|e| e == id),
            "{id} not in the action's evidence"
        );
    }
    let has_time = s
        .rationale
        .as_bytes()
        .windows(5)
        .any(|w| w[2] == b':' && [0, 1, 3, 4].iter().all(|&i| w[i].is_ascii_digit()));
    assert!(has_time, "no time in: {}", s.rationale);
    assert!(
        s.rationale.chars().any(|c| c.is_ascii_digit()) && s.rationale.contains('.'),
        "no value in: {}",
        s.rationale
    );
}

fn at(minutes_ago: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-01T12:00:00Z")
        .map(|d| d.to_utc())
        .unwrap_or_default()
        - ChronoDuration::minutes(minutes_ago)
}

fn ready_pod(name: &str) -> PodFacts {
    PodFacts {
        name: name.into(),
        namespace: "shop".into(),
        phase: "Running".into(),
        node: Some("n1".into()),
        created_at: Some(at(2 * 24 * 60)),
        owner: Some("ReplicaSet/cart-5f6d7".into()),
        conditions: BTreeMap::from([("Ready".into(), "True".into())]),
        containers: vec![ContainerFacts {
            name: "app".into(),
            image: "shop:1.4".into(),
            ready: true,
            state: "running".into(),
            ..ContainerFacts::default()
        }],
        ..PodFacts::default()
    }
}

fn firing(name: &str, labels: &[(&str, &str)]) -> Observations {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert("alertname".into(), name.into());
    let evidence = [
        ("kubernetes/pods", "ev-1"),
        ("kubernetes/events", "ev-2"),
        ("kubernetes/nodes", "ev-3"),
        ("kubernetes/deployments", "ev-4"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
    .collect();
    Observations {
        alert: Some(Alert {
            labels: l,
            starts_at: Some(at(10)),
            ..Alert::default()
        }),
        now: at(0),
        pods: vec![ready_pod("cart-5f6d7-a"), ready_pod("cart-5f6d7-b")],
        nodes: vec![NodeFacts {
            name: "n1".into(),
            conditions: BTreeMap::from([("Ready".into(), "True".into())]),
            ..NodeFacts::default()
        }],
        deployments: vec![DeploymentFacts {
            name: "cart".into(),
            namespace: "shop".into(),
            replicas: 2,
            ready_replicas: 2,
            updated_replicas: 2,
            available_replicas: 2,
            ..DeploymentFacts::default()
        }],
        evidence,
        ..Observations::default()
    }
}

#[test]
fn no_silence_when_nothing_checked_the_alerts_condition() {
    // A latency alert while every pod is Ready: nothing measured latency, so nothing says the
    // condition cleared (the verdict is unknown, not healthy), and hiding the page has no grounds.
    let obs = firing("CartLatencyHigh", &[("deployment", "cart")]);
    let a = analyze(&obs);
    assert_eq!(a.category, Category::Unknown, "{a:#?}");
    assert!(
        a.suggested_actions
            .iter()
            .all(|x| x.kind != "alertmanager.silence"),
        "{:#?}",
        a.suggested_actions
    );
}

#[test]
fn a_recovered_pods_silence_cites_the_check_and_is_medium() {
    let mut obs = firing(
        "KubePodRestarted",
        &[("pod", "cart-5f6d7-a"), ("namespace", "shop")],
    );
    obs.pods[0].containers[0].restart_count = 1;
    obs.pods[0].containers[0].last_finished_at = Some(at(90));
    let a = analyze(&obs);
    let s = a
        .suggested_actions
        .iter()
        .find(|x| x.kind == "alertmanager.silence")
        .unwrap_or_else(|| panic!("{a:#?}"));
    assert_eq!(s.risk, Risk::Medium);
    assert!(s.rationale.contains("pod/cart-5f6d7-a"), "{}", s.rationale);
    assert!(
        s.rationale.contains("10:30"),
        "the restart time: {}",
        s.rationale
    );
    assert!(s.rationale.contains("ev-1"), "{}", s.rationale);
    assert!(!s.rationale.contains("already cleared"), "{}", s.rationale);
    assert_eq!(
        s.operation,
        catalog::operation(&s.kind, &s.target, &s.params)
    );
}

/// A world whose only integration is the Alertmanager at `url`.
fn alertmanager_world(url: &str) -> sitrep::world::World {
    let live = sitrep::integrations::LiveTransport::new()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_endpoint("alertmanager", sitrep::integrations::Endpoint::new(url));
    sitrep::world::World::with_transport(Arc::new(live), sitrep::world::Mode::Live, "default", None)
}

fn silence_action(params: serde_json::Value) -> Action {
    let mut a = Action {
        id: "act-1".into(),
        kind: "alertmanager.silence".into(),
        target: String::new(),
        params: serde_json::from_value(params).unwrap_or_else(|e| panic!("{e}")),
        risk: Risk::Medium,
        rationale: "test".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    };
    catalog::settle(&mut a);
    a
}

async fn silences(url: &str) -> Vec<serde_json::Value> {
    let body: serde_json::Value = reqwest::get(format!("{url}/api/v2/silences"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    body.as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn the_silence_created_on_a_real_alertmanager_is_the_one_shown() {
    if !support::have_binaries(&["prometheus-alertmanager"]) {
        return;
    }
    let am = support::alertmanager()
        .await
        .unwrap_or_else(|e| panic!("alertmanager starts: {e}"));
    let world = alertmanager_world(&am.url);

    // A numeric label value is part of what the operator saw; it must not be dropped (that would
    // silence every HighErrorRate, not just code 500).
    let a = silence_action(serde_json::json!({
        "matchers": {"alertname": "HighErrorRate", "code": 500},
        "duration_minutes": 30
    }));
    assert_eq!(a.target, "alert/HighErrorRate");
    assert_eq!(
        a.operation,
        "amtool silence add alertname=\"HighErrorRate\" code=\"500\" --duration=30m"
    );
    world
        .execute(&a)
        .await
        .unwrap_or_else(|e| panic!("silence: {e}"));
    let made = silences(&am.url).await;
    assert_eq!(made.len(), 1, "{made:#?}");
    let matchers: BTreeMap<String, String> = made[0]["matchers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default().to_string(),
                m["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        matchers,
        BTreeMap::from([
            ("alertname".to_string(), "HighErrorRate".to_string()),
            ("code".to_string(), "500".to_string())
        ])
    );
    let span = |k: &str| {
        made[0][k]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .unwrap_or_else(|| panic!("{k}: {:?}", made[0][k]))
    };
    let minutes = (span("endsAt") - span("startsAt")).num_minutes();
    assert!((29..=30).contains(&minutes), "{minutes} minutes");

    // A duration outside what the operation can honour is refused, not quietly clamped.
    let too_long = silence_action(serde_json::json!({
        "matchers": {"alertname": "HighErrorRate"},
        "duration_minutes": 999_999
    }));
    let e = world.execute(&too_long).await.expect_err("out of range");
    assert!(e.to_string().contains("duration_minutes"), "{e}");
    assert_eq!(silences(&am.url).await.len(), 1);
}

/// `"kubernetes.pods"`-shaped literals in a source text.
fn kind_literals(text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|piece| {
            piece.split_once('.').is_some_and(|(i, v)| {
                ["kubernetes", "alertmanager", "github", "prometheus", "loki"].contains(&i)
                    && !v.is_empty()
                    && v.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            })
        })
        .map(str::to_string)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_kind_named_in_the_source_is_in_the_catalog() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut named = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{e}"));
        for kind in kind_literals(&text) {
            named += 1;
            assert!(
                catalog::lookup(&kind).is_some(),
                "{} names {kind}, which the catalog does not list",
                file.display()
            );
        }
    }
    assert!(named > 20, "the scan found only {named} kind names");
}
