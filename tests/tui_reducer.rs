//! The console's reducer: keys in, effects out. Approvals need the right keys and never Enter alone.

#[path = "tui_fixtures.rs"]
mod fixtures;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use sitrep::model::{Command, Event, Record, Risk};
use sitrep::tui::app::{AppState, ApprovalStage, Effect, Msg, Overlay, Pane, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn press(s: &mut AppState, msgs: impl IntoIterator<Item = Msg>) -> Vec<Effect> {
    msgs.into_iter().flat_map(|m| update(s, m)).collect()
}

fn approvals(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::SendCommand(Command::Approve { .. })))
        .count()
}

fn pending(risk: Risk) -> AppState {
    let mut s = fixtures::live(&fixtures::awaiting_approval(risk), 120, 40);
    // The 300 ms guard against stray typing has its own test; here keys act at once.
    s.approval_guard = std::time::Duration::ZERO;
    assert!(
        matches!(s.overlay, Some(Overlay::Approval(_))),
        "approval modal opens on request"
    );
    s
}

fn shown_digest(s: &AppState) -> Option<String> {
    s.pending().map(|a| a.digest.clone())
}

#[test]
fn high_risk_needs_the_confirm_chord() {
    let mut s = pending(Risk::High);
    let digest = shown_digest(&s);
    assert!(digest.as_ref().is_some_and(|d| d.len() == 64));
    let e = press(&mut s, [key('a')]);
    assert!(e.is_empty(), "a alone does not approve high risk: {e:?}");
    assert!(
        matches!(&s.overlay, Some(Overlay::Approval(ui)) if matches!(ui.stage, ApprovalStage::Confirm(_)))
    );
    let e = press(&mut s, [key('y')]);
    assert!(
        e.is_empty(),
        "a plain y is typing, not a confirmation: {e:?}"
    );
    let e = press(&mut s, [ctrl('y')]);
    assert_eq!(
        e,
        vec![Effect::SendCommand(Command::Approve {
            action_id: "act-1".into(),
            by: None,
            params: None,
            digest
        })]
    );
    assert!(
        s.overlay.is_none(),
        "modal closes once the approval is sent"
    );
}

#[test]
fn typing_the_target_name_and_enter_confirms_anything_else_does_not() {
    let mut s = pending(Risk::High);
    let target = s
        .pending()
        .map(|a| sitrep::tui::app::target_name(&a.action.target).to_string())
        .unwrap_or_default();
    assert!(!target.is_empty());
    let mut wrong = vec![key('a')];
    wrong.extend("not-the-name".chars().map(key));
    wrong.push(code(KeyCode::Enter));
    let e = press(&mut s, wrong);
    assert_eq!(approvals(&e), 0, "{e:?}");
    let e = press(&mut s, [key('a'), code(KeyCode::Esc), ctrl('y')]);
    assert_eq!(approvals(&e), 0, "esc left the confirmation: {e:?}");
    let mut right = vec![key('a')];
    right.extend(target.chars().map(key));
    right.push(code(KeyCode::Enter));
    let e = press(&mut s, right);
    assert_eq!(approvals(&e), 1, "{e:?}");
}

/// Stray typing: "papaya" and random printable strings never approve a high or critical
/// action, whatever they contain (no Enter, no ctrl chord can come from printable keys).
#[test]
fn stray_typing_never_approves_high_risk() {
    use proptest::prelude::*;
    for risk in [Risk::High, Risk::Critical] {
        let mut s = pending(risk);
        let e = press(&mut s, "papaya".chars().map(key));
        assert_eq!(approvals(&e), 0, "{risk}: papaya approved: {e:?}");
        let target = s
            .pending()
            .map(|a| a.action.target.clone())
            .unwrap_or_default();
        let e = press(&mut s, "a".chars().chain(target.chars()).map(key));
        assert_eq!(
            approvals(&e),
            0,
            "{risk}: the name without enter approved: {e:?}"
        );
    }
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 512,
        ..Default::default()
    });
    let result = runner.run(&"[ -~]{0,64}", |text| {
        let mut s = pending(Risk::High);
        let e = press(&mut s, text.chars().map(key));
        prop_assert_eq!(approvals(&e), 0, "{:?} approved: {:?}", text, e);
        Ok(())
    });
    assert!(result.is_ok(), "{result:?}");
}

#[test]
fn keys_in_the_first_300ms_after_the_modal_opens_are_ignored() {
    let mut s = fixtures::live(&fixtures::awaiting_approval(Risk::Medium), 120, 40);
    assert_eq!(s.approval_guard, std::time::Duration::from_millis(300));
    let e = press(&mut s, [key('a'), key('d')]);
    assert!(e.is_empty(), "keys right after opening acted: {e:?}");
    assert!(
        matches!(&s.overlay, Some(Overlay::Approval(ui)) if matches!(ui.stage, ApprovalStage::Review))
    );
    std::thread::sleep(std::time::Duration::from_millis(320));
    let e = press(&mut s, [key('a')]);
    assert_eq!(approvals(&e), 1, "{e:?}");
}

#[test]
fn any_key_in_a_medium_modal_pauses_the_countdown_once() {
    let mut s = pending(Risk::Medium);
    let e = press(&mut s, [key('d'), key('w'), key('a')]);
    let pauses = e
        .iter()
        .filter(|e| matches!(e, Effect::SendCommand(Command::PauseVeto { action_id }) if action_id == "act-1"))
        .count();
    assert_eq!(pauses, 1, "{e:?}");
    assert_eq!(approvals(&e), 0, "typing a reason approves nothing: {e:?}");
    // The agent's VetoPaused stops the countdown on screen and the clock with it.
    update(
        &mut s,
        Msg::Record(Box::new(Record {
            t: 4.0,
            event: Event::VetoPaused {
                action_id: "act-1".into(),
                by: "alice".into(),
            },
        })),
    );
    assert_eq!(s.pending().and_then(|a| s.veto_left(a)), None);
    assert!(!s.needs_tick());
}

#[test]
fn enter_alone_never_approves() {
    for risk in [Risk::Low, Risk::Medium, Risk::High, Risk::Critical] {
        let mut s = pending(risk);
        let e = press(&mut s, (0..5).map(|_| code(KeyCode::Enter)));
        assert_eq!(approvals(&e), 0, "{risk}: {e:?}");
        let e = press(
            &mut s,
            [key('a'), code(KeyCode::Enter), code(KeyCode::Enter)],
        );
        let expected = usize::from(risk < Risk::High);
        assert_eq!(
            approvals(&e),
            expected,
            "{risk}: enter is not the confirm key: {e:?}"
        );
        assert!(matches!(s.overlay, Some(Overlay::Approval(_))) || risk < Risk::High);
    }
}

#[test]
fn medium_risk_approves_with_one_key_and_shows_the_countdown() {
    let mut s = pending(Risk::Medium);
    s.now_t = 10.8;
    let left = s.pending().and_then(|a| s.veto_left(a)).unwrap_or(-1.0);
    assert!((left - 23.0).abs() < 1e-6, "{left}");
    assert!(s.needs_tick(), "a countdown keeps the clock running");
    let e = press(&mut s, [key('a')]);
    assert_eq!(approvals(&e), 1);
}

#[test]
fn critical_sends_this_operators_approval_and_keeps_waiting() {
    let mut s = pending(Risk::Critical);
    let e = press(&mut s, [key('a'), ctrl('y')]);
    assert_eq!(approvals(&e), 1);
    assert!(
        matches!(s.overlay, Some(Overlay::Approval(_))),
        "stays visible: a second operator must approve"
    );
}

#[test]
fn deny_needs_a_reason() {
    let mut s = pending(Risk::High);
    let e = press(&mut s, [key('d'), code(KeyCode::Enter)]);
    assert!(e.is_empty());
    let mut msgs = vec![];
    msgs.extend("too risky now".chars().map(key));
    msgs.push(code(KeyCode::Enter));
    let e = press(&mut s, msgs);
    assert_eq!(
        e,
        vec![Effect::SendCommand(Command::Deny {
            action_id: "act-1".into(),
            reason: "too risky now".into(),
            by: None
        })]
    );
}

#[test]
fn an_edit_is_sent_to_be_shown_again_not_approved() {
    let mut s = pending(Risk::High);
    press(&mut s, [key('e')]);
    // Replace the JSON with a new object: select all, delete, type.
    if let Some(Overlay::Approval(ui)) = &mut s.overlay
        && let ApprovalStage::Edit(ta, _) = &mut ui.stage
    {
        ta.select_all();
        ta.cut();
        ta.insert_str(r#"{"namespace": "payments", "to_revision": 40}"#);
    }
    let digest = shown_digest(&s);
    let e = press(&mut s, [ctrl('s')]);
    let Some(Effect::SendCommand(Command::Approve {
        params: Some(p),
        digest: sent,
        ..
    })) = e.first()
    else {
        panic!("expected the edit to be sent, got {e:?}");
    };
    assert_eq!(p.get("to_revision"), Some(&serde_json::json!(40)));
    assert_eq!(sent, &digest, "the edit names the version it edits");
    // The agent answers with the edited action and a new request: the modal starts over.
    let mut edited = s.pending().map(|a| a.action.clone()).expect("pending");
    edited.params.extend(p.clone());
    let new_digest = edited.digest();
    for (t, event) in [
        (
            5.0,
            Event::ActionEdited {
                action: edited.clone(),
                by: "alice".into(),
            },
        ),
        (
            5.1,
            Event::ApprovalRequested {
                action_id: "act-1".into(),
                risk: Risk::High,
                veto_secs: None,
                approvals_needed: 1,
                digest: new_digest.clone(),
            },
        ),
    ] {
        update(&mut s, Msg::Record(Box::new(Record { t, event })));
    }
    let Some(Overlay::Approval(ui)) = &mut s.overlay else {
        panic!("the new version is shown");
    };
    assert_eq!(ui.digest, new_digest);
    assert!(matches!(ui.stage, ApprovalStage::Review));
    ui.opened = std::time::Instant::now() - std::time::Duration::from_secs(1);
    let e = press(&mut s, [key('a'), ctrl('y')]);
    assert!(
        matches!(e.first(), Some(Effect::SendCommand(Command::Approve { digest: Some(d), params: None, .. })) if *d == new_digest),
        "{e:?}"
    );
}

#[test]
fn bad_json_in_edit_is_an_error_not_a_change() {
    let mut s = pending(Risk::High);
    press(&mut s, [key('e')]);
    if let Some(Overlay::Approval(ui)) = &mut s.overlay
        && let ApprovalStage::Edit(ta, _) = &mut ui.stage
    {
        ta.insert_str("{oops");
    }
    press(&mut s, [ctrl('s')]);
    assert!(
        matches!(&s.overlay, Some(Overlay::Approval(ui)) if matches!(&ui.stage, ApprovalStage::Edit(_, Some(_))))
    );
}

#[test]
fn esc_looks_around_and_a_reopens() {
    let mut s = pending(Risk::High);
    press(&mut s, [code(KeyCode::Esc)]);
    assert!(s.overlay.is_none());
    assert!(s.pending().is_some(), "still pending");
    // New events do not force it open again.
    update(
        &mut s,
        Msg::Record(Box::new(Record {
            t: 5.0,
            event: Event::Warning {
                message: "slow".into(),
            },
        })),
    );
    assert!(s.overlay.is_none());
    press(&mut s, [key('j'), key('a')]);
    assert!(matches!(s.overlay, Some(Overlay::Approval(_))));
}

#[test]
fn typing_in_chat_never_lands_in_the_modal() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    press(&mut s, [key('3')]);
    assert_eq!(s.focus, Pane::Chat);
    for r in fixtures::awaiting_approval(Risk::High)
        .into_iter()
        .skip(fixtures::mid_gather().len())
    {
        update(&mut s, Msg::Record(Box::new(r)));
    }
    assert!(s.overlay.is_none(), "no modal while the operator is typing");
    let e = press(&mut s, "okay".chars().map(key));
    assert!(e.is_empty());
    let e = press(&mut s, [code(KeyCode::Enter)]);
    assert_eq!(
        e,
        vec![Effect::SendCommand(Command::Chat {
            text: "okay".into()
        })]
    );
    press(&mut s, [code(KeyCode::Esc)]);
    assert!(
        matches!(s.overlay, Some(Overlay::Approval(_))),
        "opens once the operator leaves the chat"
    );
}

#[test]
fn chat_slash_commands() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let send = |s: &mut AppState, text: &str| {
        let mut msgs = vec![];
        if s.focus != Pane::Chat {
            msgs.push(key('3'));
        }
        msgs.extend(text.chars().map(key));
        msgs.push(code(KeyCode::Enter));
        press(s, msgs)
    };
    assert_eq!(send(&mut s, "/export"), vec![Effect::ExportReport]);
    assert!(send(&mut s, "/runbook").is_empty());
    assert!(
        s.status
            .as_ref()
            .is_some_and(|st| st.error && st.text.contains("/runbook NAME"))
    );
    assert_eq!(
        send(&mut s, "/runbook crashloop"),
        vec![Effect::SendCommand(Command::Chat {
            text: "/runbook crashloop".into()
        })]
    );
    send(&mut s, "/help");
    assert!(matches!(s.overlay, Some(Overlay::Help { .. })));
}

#[test]
fn quit_keys_and_releases() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let mut release = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    assert!(
        update(&mut s, Msg::Key(release)).is_empty(),
        "releases are ignored"
    );
    assert_eq!(press(&mut s, [key('q')]), vec![Effect::Quit]);
    assert_eq!(press(&mut s, [ctrl('c')]), vec![Effect::Quit]);
}

#[test]
fn palette_completes_and_runs() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let e = press(
        &mut s,
        [
            key(':'),
            key('e'),
            key('x'),
            code(KeyCode::Tab),
            code(KeyCode::Enter),
        ],
    );
    assert_eq!(e, vec![Effect::ExportReport]);
    press(&mut s, [key(':')]);
    press(&mut s, "theme mono".chars().map(key));
    press(&mut s, [code(KeyCode::Enter)]);
    assert_eq!(s.theme.name, "mono");
}

#[test]
fn filter_and_matches_on_the_timeline() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    press(&mut s, [key('&')]);
    press(&mut s, "kubernetes".chars().map(key));
    press(&mut s, [code(KeyCode::Enter)]);
    let n = s.timeline_len();
    assert!(n >= 3 && n < s.incident().timeline.len(), "{n}");
    let last = s.timeline_sel;
    press(&mut s, [key('N')]);
    assert_eq!(s.timeline_sel, last - 1);
    press(&mut s, [code(KeyCode::Esc)]);
    assert_eq!(s.timeline_len(), s.incident().timeline.len());
}

#[test]
fn search_on_the_timeline_keeps_every_row_and_jumps_between_matches() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let all = s.incident().timeline.len();
    press(&mut s, [key('/')]);
    press(&mut s, "kubernetes".chars().map(key));
    press(&mut s, [code(KeyCode::Enter)]);
    assert_eq!(s.timeline_len(), all, "a search hides nothing");
    let f = s.filter.as_ref().expect("search applied");
    let hits = f.rows.clone();
    assert!(hits.len() >= 3, "{hits:?}");
    let at = s.timeline_sel;
    assert!(hits.contains(&at), "lands on a match: {at} in {hits:?}");
    let pos = hits.iter().position(|h| *h == at).unwrap();
    press(&mut s, [key('N')]);
    let prev = hits[(pos + hits.len() - 1) % hits.len()];
    assert_eq!(s.timeline_sel, prev);
    press(&mut s, [key('n')]);
    assert_eq!(s.timeline_sel, at);
    let shown = s.filter.as_ref().unwrap().position();
    assert_eq!(shown, format!("{}/{}", pos + 1, hits.len()));
    for (i, item) in s.incident().timeline.iter().enumerate() {
        assert_eq!(
            hits.contains(&i),
            item.text.to_lowercase().contains("kubernetes"),
            "row {i}: {}",
            item.text
        );
    }
    press(&mut s, [code(KeyCode::Esc)]);
    assert!(s.filter.is_none());
}

#[test]
fn follow_stops_when_scrolled_and_resumes_with_g() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    press(&mut s, [key('k'), key('k')]);
    assert!(!s.follow);
    let sel = s.timeline_sel;
    update(
        &mut s,
        Msg::Record(Box::new(Record {
            t: 9.0,
            event: Event::Warning {
                message: "new".into(),
            },
        })),
    );
    assert_eq!(
        s.timeline_sel, sel,
        "scrolled back: the selection stays put"
    );
    press(&mut s, [key('G')]);
    assert!(s.follow);
    assert_eq!(s.timeline_sel, s.incident().timeline.len() - 1);
}

#[test]
fn replay_controls() {
    let records = fixtures::full_session();
    let n = records.len();
    let mut s = AppState::new_replay(Theme::default(), Keymap::default(), records);
    assert_eq!(s.replay.as_ref().map(|r| r.clock.position()), Some(0));
    press(&mut s, [key('9')]);
    let pos9 = s.replay.as_ref().map(|r| r.clock.position()).unwrap_or(0);
    assert!(pos9 > 0 && pos9 < n);
    press(&mut s, [key('0')]);
    assert!(s.incident().events <= 1, "0 seeks to the start");
    press(&mut s, [key(']'), key(']')]);
    assert_eq!(
        s.incident().current_stage,
        Some(sitrep::model::Stage::Gather)
    );
    press(&mut s, [key('.')]);
    press(&mut s, [key('>'), key('>')]);
    assert_eq!(s.replay.as_ref().map(|r| r.clock.speed()), Some(4.0));
    press(&mut s, [key(' ')]);
    assert!(s.needs_tick());
    update(&mut s, Msg::ReplayTick(100.0));
    // Replays never open the approval modal or send anything.
    let e = press(&mut s, [key('8'), key('a'), key('a'), key('y')]);
    assert!(e.is_empty(), "{e:?}");
}

#[test]
fn replay_plays_to_the_end_then_space_starts_over() {
    let records = fixtures::full_session();
    let n = records.len();
    let mut s = AppState::new_replay(Theme::default(), Keymap::default(), records);
    let r = s
        .replay
        .as_ref()
        .map(|r| (r.clock.is_paused(), r.next_tick()));
    assert_eq!(r, Some((true, None)), "a new replay waits, paused");
    press(&mut s, [key(' ')]);
    let due = s.replay.as_ref().and_then(|r| r.next_tick());
    assert!(due.is_some_and(|d| d <= std::time::Duration::from_secs(1)));
    // A long wall-clock tick plays everything; the 29 s wait for verification is capped.
    update(&mut s, Msg::ReplayTick(15.0));
    assert_eq!(s.replay.as_ref().map(|r| r.clock.position()), Some(n));
    assert!(!s.needs_tick(), "finished: no more ticks, no more frames");
    assert!(s.incident().is_finished());
    press(&mut s, [key(' ')]);
    assert_eq!(s.replay.as_ref().map(|r| r.clock.position()), Some(0));
    assert!(
        s.needs_tick(),
        "space at the end plays again from the start"
    );
    // Stage marks sit on the play-time scale the progress bar fills along, in order.
    let marks: Vec<f64> = s
        .replay
        .as_ref()
        .map(|r| r.marks.iter().map(|(f, _)| *f).collect())
        .unwrap_or_default();
    assert_eq!(marks.len(), 8);
    assert!(marks.windows(2).all(|w| w[0] <= w[1]) && marks[7] <= 1.0);
    assert!(
        marks[7] - marks[6] < 0.5,
        "the idle gap before report is capped"
    );
}

#[test]
fn replay_palette_speed_and_seek() {
    let mut s = AppState::new_replay(
        Theme::default(),
        Keymap::default(),
        fixtures::full_session(),
    );
    let palette = |s: &mut AppState, line: &str| {
        press(s, [key(':')]);
        press(s, line.chars().map(key));
        press(s, [code(KeyCode::Enter)]);
    };
    palette(&mut s, "speed 0.5");
    assert_eq!(s.replay.as_ref().map(|r| r.clock.speed()), Some(0.5));
    palette(&mut s, "speed 100");
    assert!(s.status.as_ref().is_some_and(|st| st.error));
    assert_eq!(s.replay.as_ref().map(|r| r.clock.speed()), Some(0.5));
    palette(&mut s, "seek 100%");
    assert!(s.replay.as_ref().is_some_and(|r| r.clock.is_finished()));
    assert_eq!(s.now_t, 51.1, "the clock shown follows the seek");
}

#[test]
fn idle_needs_no_clock() {
    let s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    assert!(
        !s.needs_tick(),
        "nothing counts down, so no ticks and no frames"
    );
}

mod chooser {
    use super::{code, ctrl, fixtures, key};
    use crossterm::event::KeyCode;
    use sitrep::tui::app::Msg;
    use sitrep::tui::chooser_state::{Choice, ChooserMsg, ChooserState, update};

    fn press(s: &mut ChooserState, msgs: impl IntoIterator<Item = Msg>) -> Option<Choice> {
        let mut last = None;
        for m in msgs {
            let Msg::Key(k) = m else { continue };
            if let Some(c) = update(s, ChooserMsg::Key(k)) {
                last = Some(c);
            }
        }
        last
    }

    fn typed(text: &str) -> Vec<Msg> {
        text.chars().map(key).collect()
    }

    fn start(name: &str) -> Option<Choice> {
        Some(Choice::Start(name.into()))
    }

    #[test]
    fn enter_starts_the_highlighted_scenario() {
        let mut s = fixtures::chooser(80, 24);
        assert_eq!(
            press(&mut s, [code(KeyCode::Enter)]),
            start("checkout-bad-deploy")
        );
        let mut s = fixtures::chooser(80, 24);
        assert_eq!(
            press(&mut s, [key('j'), code(KeyCode::Enter)]),
            start("search-cpu-saturation")
        );
    }

    #[test]
    fn moves_clamp_at_the_ends() {
        let mut s = fixtures::chooser(80, 24);
        let _ = press(&mut s, [key('k')]);
        assert_eq!(s.selected, 0, "k at the top stays");
        let _ = press(&mut s, [key('j'), key('j'), key('j'), key('j')]);
        assert_eq!(s.selected, 2, "j at the bottom stays");
        let _ = press(&mut s, [key('g')]);
        assert_eq!(s.selected, 0);
        let _ = press(&mut s, [key('G')]);
        assert_eq!(s.selected, 2);
        let _ = press(&mut s, [code(KeyCode::Up)]);
        assert_eq!(s.selected, 1);
        let _ = press(&mut s, [code(KeyCode::Down)]);
        assert_eq!(s.selected, 2);
    }

    #[test]
    fn filter_matches_name_or_title_and_enter_picks_from_the_matches() {
        let mut s = fixtures::chooser(80, 24);
        // "cpu" is in one name; "node" only in a title.
        let _ = press(&mut s, [key('/')]);
        let _ = press(&mut s, typed("CPU"));
        assert_eq!(
            s.visible(),
            vec![1],
            "the list follows the prompt as it is typed"
        );
        assert_eq!(
            s.highlighted().map(|e| e.name.as_str()),
            Some("search-cpu-saturation")
        );
        // While typing, letters are text: j went into the filter, and Enter only applies it.
        assert_eq!(press(&mut s, [code(KeyCode::Enter)]), None);
        assert_eq!(s.filter, "CPU");
        assert_eq!(
            press(&mut s, [code(KeyCode::Enter)]),
            start("search-cpu-saturation")
        );

        let mut s = fixtures::chooser(80, 24);
        let _ = press(&mut s, [key('/')]);
        let _ = press(&mut s, typed("node stopped"));
        assert_eq!(s.visible(), vec![2]);
        let _ = press(&mut s, [code(KeyCode::Enter)]);
        assert_eq!(
            press(&mut s, [code(KeyCode::Enter)]),
            start("orders-db-node-lost")
        );
    }

    #[test]
    fn nothing_matching_starts_nothing_and_esc_clears_before_quitting() {
        let mut s = fixtures::chooser(80, 24);
        let _ = press(&mut s, [key('/')]);
        let _ = press(&mut s, typed("zzz"));
        let _ = press(&mut s, [code(KeyCode::Enter)]);
        assert!(s.visible().is_empty());
        assert_eq!(press(&mut s, [code(KeyCode::Enter)]), None);
        // The first esc clears the filter, the second leaves.
        assert_eq!(press(&mut s, [code(KeyCode::Esc)]), None);
        assert_eq!(s.visible().len(), 3);
        assert_eq!(press(&mut s, [code(KeyCode::Esc)]), Some(Choice::Quit));
    }

    #[test]
    fn esc_while_typing_cancels_the_prompt_only() {
        let mut s = fixtures::chooser(80, 24);
        let _ = press(&mut s, [key('/')]);
        let _ = press(&mut s, typed("q"));
        assert_eq!(
            s.filter_input.as_deref(),
            Some("q"),
            "q is text in the prompt"
        );
        assert_eq!(press(&mut s, [code(KeyCode::Esc)]), None);
        assert_eq!(s.filter_input, None);
        assert_eq!(s.visible().len(), 3);
    }

    #[test]
    fn q_and_esc_and_ctrl_c_pick_nothing() {
        for quit in [key('q'), code(KeyCode::Esc), ctrl('c')] {
            let mut s = fixtures::chooser(80, 24);
            let _ = press(&mut s, [key('j')]);
            assert_eq!(press(&mut s, [quit]), Some(Choice::Quit));
        }
    }

    #[test]
    fn help_opens_and_closes_without_moving() {
        let mut s = fixtures::chooser(80, 24);
        let _ = press(&mut s, [key('?')]);
        assert!(s.help);
        assert_eq!(
            press(&mut s, [key('j'), code(KeyCode::Enter)]),
            None,
            "help swallows keys"
        );
        assert_eq!(s.selected, 0);
        let _ = press(&mut s, [code(KeyCode::Esc)]);
        assert!(!s.help);
        assert_eq!(press(&mut s, [key('?'), key('q')]), Some(Choice::Quit));
    }
}

/// A session that asks to read a credential by reference.
fn credential_requested() -> AppState {
    let mut records = fixtures::mid_gather();
    let t = records.last().map(|r| r.t).unwrap_or(0.0) + 0.1;
    records.push(Record {
        t,
        event: Event::CredentialRequested {
            reference: "op://ops/app-db/password".into(),
            integration: "postgres".into(),
            specialist: Some("database".into()),
        },
    });
    let mut s = fixtures::live(&records, 120, 40);
    s.approval_guard = std::time::Duration::ZERO;
    s
}

#[test]
fn a_credential_request_opens_its_modal_and_a_approves_it() {
    let mut s = credential_requested();
    // The modal may open on the next record; a tick of the fold is enough.
    let _ = press(&mut s, [code(KeyCode::Null)]);
    assert!(
        matches!(&s.overlay, Some(Overlay::Credential { reference, .. }) if reference == "op://ops/app-db/password"),
        "credential modal opens on request"
    );
    let e = press(&mut s, [key('a')]);
    assert_eq!(
        e,
        vec![Effect::SendCommand(Command::ApproveCredential {
            reference: "op://ops/app-db/password".into(),
            by: None,
        })]
    );
}

#[test]
fn a_credential_can_be_denied_or_left_for_later() {
    let mut s = credential_requested();
    let _ = press(&mut s, [code(KeyCode::Null)]);
    let e = press(&mut s, [key('d')]);
    assert!(matches!(
        e.as_slice(),
        [Effect::SendCommand(Command::DenyCredential { reference, .. })] if reference == "op://ops/app-db/password"
    ));
    let mut s = credential_requested();
    let _ = press(&mut s, [code(KeyCode::Null)]);
    let e = press(&mut s, [code(KeyCode::Esc)]);
    assert!(e.is_empty(), "esc decides nothing: {e:?}");
    assert!(!matches!(s.overlay, Some(Overlay::Credential { .. })));
}
