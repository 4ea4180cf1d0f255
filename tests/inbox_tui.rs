//! The inbox screen: whole-screen snapshots at 80x24 and 200x50 (ratatui TestBackend), and the reducer:
//! filter, grouping, enter, silence prompt, expire, PagerDuty keys, new-alert detection.

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sitrep::inbox::{AlertState, InboxAlert, Snapshot, Source, SourceHealth, fingerprint};
use sitrep::model::Risk;
use sitrep::tui::inbox_state::{InboxChoice, InboxMsg, InboxState, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;
use std::collections::BTreeMap;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-25T09:30:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

fn alert(source: Source, labels: &[(&str, &str)], state: AlertState, age_min: i64) -> InboxAlert {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let name = labels.get("alertname").cloned().unwrap_or_default();
    InboxAlert {
        source,
        title: format!("{name} summary"),
        alertname: name,
        severity: labels.get("severity").cloned().unwrap_or_default(),
        fingerprint: fingerprint(&labels),
        annotations: BTreeMap::new(),
        state,
        starts_at: Some(now() - chrono::Duration::minutes(age_min)),
        silenced_by: if state == AlertState::Silenced {
            vec!["4f1e-silence".into()]
        } else {
            vec![]
        },
        inhibited_by: vec![],
        url: String::new(),
        incident_id: None,
        assignees: vec![],
        also_in: vec![],
        labels,
    }
}

fn snapshot() -> Snapshot {
    let mut pd = alert(
        Source::PagerDuty,
        &[("service", "payments-api"), ("urgency", "high")],
        AlertState::Triggered,
        4,
    );
    pd.alertname = "Payments API 5xx above 10%".into();
    pd.title = pd.alertname.clone();
    pd.severity = "high".into();
    pd.incident_id = Some("PT4KHLK".into());
    pd.assignees = vec!["Alice Oncall".into()];
    pd.fingerprint = "pagerduty/PT4KHLK".into();
    Snapshot {
        alerts: vec![
            alert(
                Source::Alertmanager,
                &[
                    ("alertname", "KubePodCrashLooping"),
                    ("severity", "critical"),
                    ("namespace", "payments"),
                    ("pod", "payments-api-7d9f-x2"),
                ],
                AlertState::Firing,
                12,
            ),
            alert(
                Source::Alertmanager,
                &[
                    ("alertname", "KubePodCrashLooping"),
                    ("severity", "critical"),
                    ("namespace", "payments"),
                    ("pod", "payments-api-7d9f-k8"),
                ],
                AlertState::Firing,
                11,
            ),
            alert(
                Source::Alertmanager,
                &[
                    ("alertname", "DiskAlmostFull"),
                    ("severity", "warning"),
                    ("namespace", "db"),
                    ("instance", "db-2"),
                ],
                AlertState::Firing,
                95,
            ),
            alert(
                Source::Alertmanager,
                &[("alertname", "Watchdog"), ("severity", "none")],
                AlertState::Silenced,
                3000,
            ),
            alert(
                Source::Prometheus,
                &[
                    ("alertname", "CheckoutLatencyHigh"),
                    ("severity", "warning"),
                    ("service", "checkout-api"),
                ],
                AlertState::Firing,
                2,
            ),
            pd,
        ],
        health: vec![
            SourceHealth {
                source: Source::Alertmanager,
                error: None,
                alerts: 4,
                checked_at: now(),
                latency_ms: 35,
                failures: 0,
            },
            SourceHealth {
                source: Source::Prometheus,
                error: Some("prometheus: GET /api/v1/alerts: connection refused".into()),
                alerts: 1,
                checked_at: now(),
                latency_ms: 2,
                failures: 3,
            },
            SourceHealth {
                source: Source::PagerDuty,
                error: None,
                alerts: 1,
                checked_at: now(),
                latency_ms: 210,
                failures: 0,
            },
        ],
    }
}

fn state(w: u16, h: u16) -> InboxState {
    let mut s = InboxState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
        vec!["alertname".into()],
        "alice".into(),
    );
    let _ = update(&mut s, InboxMsg::Resize(w, h));
    let _ = update(&mut s, InboxMsg::Snapshot(snapshot(), now()));
    s
}

fn render(s: &InboxState) -> String {
    let (w, h) = s.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("backend");
    term.draw(|f| sitrep::tui::inbox::draw(s, f)).expect("draw");
    term.backend().to_string()
}

fn key(s: &mut InboxState, code: KeyCode) -> Option<InboxChoice> {
    update(s, InboxMsg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut InboxState, text: &str) {
    for c in text.chars() {
        let _ = key(s, KeyCode::Char(c));
    }
}

#[test]
fn inbox_snapshots() {
    for (w, h) in [(80, 24), (200, 50)] {
        let s = state(w, h);
        let screen = render(&s);
        assert!(screen.contains("5 firing"), "{screen}");
        assert!(
            screen.contains("pagerduty 1"),
            "every source shows: {screen}"
        );
        assert!(screen.contains("prometheus down"), "{screen}");
        assert!(screen.contains("KubePodCrashLooping"), "{screen}");
        assert!(screen.contains("@Alice Oncall"), "{screen}");
        if w >= 120 {
            assert!(
                screen.contains("labels"),
                "the label overview shows when wide: {screen}"
            );
        }
        insta::assert_snapshot!(format!("inbox_{w}x{h}"), screen);
    }
}

#[test]
fn inbox_filtered_with_prompt_snapshot() {
    let mut s = state(80, 24);
    let _ = key(&mut s, KeyCode::Char('/'));
    typed(&mut s, "severity=~\"crit.*\"");
    let _ = key(&mut s, KeyCode::Enter);
    let _ = key(&mut s, KeyCode::Char('j'));
    let _ = key(&mut s, KeyCode::Char('s'));
    typed(&mut s, "rollback running");
    let screen = render(&s);
    assert!(!screen.contains("DiskAlmostFull"), "{screen}");
    assert!(
        screen.contains("silence 2h, comment: rollback running"),
        "{screen}"
    );
    insta::assert_snapshot!("inbox_filtered_prompt_80x24", screen);
}

#[test]
fn groups_are_worst_first_and_enter_investigates_the_group() {
    let mut s = state(120, 40);
    let groups = s.groups();
    assert_eq!(groups[0].title(), "KubePodCrashLooping");
    assert_eq!(groups[0].alerts.len(), 2);
    assert_eq!(
        groups.last().map(|g| g.title()),
        Some("Watchdog".to_string()),
        "quiet groups last"
    );
    match key(&mut s, KeyCode::Enter) {
        Some(InboxChoice::Investigate {
            payload,
            proposals,
            fingerprints,
        }) => {
            assert_eq!(payload.alerts.len(), 2);
            assert_eq!(
                payload.common_labels.get("namespace").map(String::as_str),
                Some("payments")
            );
            assert!(proposals.is_empty());
            assert_eq!(fingerprints.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    // Once investigated, enter on that alert reopens its session.
    let fp = s.alerts[s.groups()[0].alerts[0]].fingerprint.clone();
    s.sessions.insert(fp, "/tmp/s.ndjson".into());
    let _ = key(&mut s, KeyCode::Char('j'));
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        Some(InboxChoice::Reopen("/tmp/s.ndjson".into()))
    );
}

#[test]
fn silence_prompt_proposes_a_medium_silence_of_the_common_labels() {
    let mut s = state(120, 40);
    let _ = key(&mut s, KeyCode::Char('s'));
    typed(&mut s, "known issue");
    match key(&mut s, KeyCode::Enter) {
        Some(InboxChoice::Investigate { proposals, .. }) => {
            assert_eq!(proposals.len(), 1);
            let p = &proposals[0];
            assert_eq!(p.kind, "alertmanager.silence");
            assert!(p.risk >= Risk::Medium);
            assert_eq!(p.rationale, "known issue");
            let m = &p.params["matchers"];
            assert_eq!(m["alertname"], "KubePodCrashLooping");
            assert_eq!(m["namespace"], "payments");
            assert!(
                m.get("pod").is_none(),
                "pods differ: only common labels match"
            );
            assert_eq!(p.params["created_by"], "alice");
        }
        other => panic!("{other:?}"),
    }
    // Esc abandons a prompt without proposing anything.
    let _ = key(&mut s, KeyCode::Char('s'));
    assert_eq!(key(&mut s, KeyCode::Esc), None);
    assert!(s.prompt.is_none());
}

#[test]
fn expire_and_pagerduty_keys_apply_only_where_they_make_sense() {
    let mut s = state(120, 40);
    // The first group is firing, not silenced: nothing to expire.
    assert_eq!(key(&mut s, KeyCode::Char('x')), None);
    assert!(
        s.status
            .as_deref()
            .is_some_and(|m| m.contains("not silenced"))
    );
    assert_eq!(key(&mut s, KeyCode::Char('A')), None);
    // The silenced Watchdog is last.
    let _ = key(&mut s, KeyCode::Char('G'));
    match key(&mut s, KeyCode::Char('x')) {
        Some(InboxChoice::Investigate { proposals, .. }) => {
            assert_eq!(proposals[0].kind, "alertmanager.expire_silence");
            assert_eq!(proposals[0].params["silence_id"], "4f1e-silence");
        }
        other => panic!("{other:?}"),
    }
    let _ = key(&mut s, KeyCode::Char('/'));
    typed(&mut s, "@source=pagerduty");
    let _ = key(&mut s, KeyCode::Enter);
    let _ = key(&mut s, KeyCode::Char('g'));
    assert_eq!(
        key(&mut s, KeyCode::Char('s')),
        None,
        "PagerDuty incidents are not silenced"
    );
    match key(&mut s, KeyCode::Char('A')) {
        Some(InboxChoice::Investigate { proposals, .. }) => {
            assert_eq!(proposals[0].kind, "pagerduty.acknowledge");
            assert_eq!(proposals[0].target, "incident/PT4KHLK");
        }
        other => panic!("{other:?}"),
    }
    match key(&mut s, KeyCode::Char('R')) {
        Some(InboxChoice::Investigate { proposals, .. }) => {
            assert_eq!(proposals[0].kind, "pagerduty.resolve");
            assert!(proposals[0].risk >= Risk::High);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bad_filter_says_why_and_keeps_the_old_one() {
    let mut s = state(80, 24);
    let _ = key(&mut s, KeyCode::Char('/'));
    typed(&mut s, "service=~\"(\"");
    let _ = key(&mut s, KeyCode::Enter);
    assert!(s.filter_input.is_some(), "the prompt stays open");
    assert!(
        s.filter_error
            .as_deref()
            .is_some_and(|e| e.contains("bad regex"))
    );
    let _ = key(&mut s, KeyCode::Esc);
    assert!(s.filter.is_empty());
    assert_eq!(s.visible().len(), 6);
}

#[test]
fn only_new_firing_alerts_count_as_new() {
    let mut s = state(80, 24);
    assert_eq!(s.apply(snapshot(), now()), 0, "a repeat brings nothing new");
    let mut next = snapshot();
    next.alerts.push(alert(
        Source::Alertmanager,
        &[("alertname", "NodeDown"), ("severity", "critical")],
        AlertState::Firing,
        0,
    ));
    next.alerts.push(alert(
        Source::Alertmanager,
        &[("alertname", "Muted"), ("severity", "critical")],
        AlertState::Silenced,
        0,
    ));
    assert_eq!(s.apply(next, now()), 1);
}

#[test]
fn each_row_leads_with_the_cluster_its_alert_names() {
    let crash = |cluster_key: &str, cluster: &str, pod: &str| {
        alert(
            Source::Alertmanager,
            &[
                ("alertname", "KubePodCrashLooping"),
                ("severity", "critical"),
                ("namespace", "payments"),
                ("pod", pod),
                (cluster_key, cluster),
            ],
            AlertState::Firing,
            5,
        )
    };
    let snapshot = Snapshot {
        alerts: vec![
            crash("cluster", "prod-eu", "payments-api-eu"),
            crash("kube_cluster_name", "prod-us", "payments-api-us"),
        ],
        health: vec![],
    };
    let mut s = state(200, 24);
    let _ = update(&mut s, InboxMsg::Snapshot(snapshot.clone(), now()));
    let screen = render(&s);
    for (cluster, label, pod) in [
        ("prod-eu", "cluster=prod-eu", "payments-api-eu"),
        ("prod-us", "kube_cluster_name=prod-us", "payments-api-us"),
    ] {
        let row = screen
            .lines()
            .find(|l| l.contains('●') && l.contains(pod))
            .unwrap_or_else(|| panic!("no row for {pod}: {screen}"));
        assert!(row.contains(&format!("[{cluster}]")), "{row}");
        assert!(!row.contains(label), "the cluster is not repeated: {row}");
    }
    // Grouped by cluster, the group's header names it and the rows do not repeat it.
    let mut s = InboxState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
        vec!["cluster".into()],
        "alice".into(),
    );
    let _ = update(&mut s, InboxMsg::Resize(200, 24));
    let _ = update(&mut s, InboxMsg::Snapshot(snapshot, now()));
    let screen = render(&s);
    let row = screen
        .lines()
        .find(|l| l.contains('●') && l.contains("payments-api-eu"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(!row.contains("[prod-eu]"), "{row}");
}
