//! Whole-screen snapshots of the console (ratatui TestBackend) at 80x24, 160x48 and 200x50.

#[path = "tui_fixtures.rs"]
mod fixtures;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sitrep::model::Risk;
use sitrep::tui::app::{AppState, Msg, Overlay, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;

fn render(state: &AppState) -> String {
    let (w, h) = state.size;
    let mut term = match Terminal::new(TestBackend::new(w, h)) {
        Ok(t) => t,
        Err(e) => panic!("test backend: {e}"),
    };
    if let Err(e) = term.draw(|f| sitrep::tui::draw(state, f)) {
        panic!("draw: {e}");
    }
    term.backend().to_string()
}

const SIZES: [(u16, u16); 3] = [(80, 24), (160, 48), (200, 50)];

#[test]
fn live_mid_gather() {
    for (w, h) in SIZES {
        let mut s = fixtures::live(&fixtures::mid_gather(), w, h);
        s.now_t = 2.0;
        // Select the log evidence so the panel shows highlighted, sanitized log lines.
        s.follow = false;
        s.timeline_sel = s
            .incident()
            .timeline
            .iter()
            .position(|i| i.text.contains("logs payments-api"))
            .unwrap_or(0);
        let _ = update(&mut s, Msg::Resize(w, h));
        let _ = update(
            &mut s,
            Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('j'),
                crossterm::event::KeyModifiers::NONE,
            )),
        );
        let _ = update(
            &mut s,
            Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('k'),
                crossterm::event::KeyModifiers::NONE,
            )),
        );
        let screen = render(&s);
        assert!(
            !screen.contains('\u{1b}'),
            "escape sequences must not reach the screen"
        );
        assert!(screen.contains("FATAL exiting"), "{screen}");
        insta::assert_snapshot!(format!("live_mid_gather_{w}x{h}"), screen);
    }
}

#[test]
fn approval_modal() {
    for (w, h) in SIZES {
        let mut s = fixtures::live(&fixtures::awaiting_approval(Risk::High), w, h);
        s.now_t = 4.0;
        assert!(
            matches!(s.overlay, Some(Overlay::Approval(_))),
            "the modal opens by itself"
        );
        let screen = render(&s);
        assert!(screen.contains("APPROVAL REQUIRED"));
        assert!(screen.contains("kubectl -n payments rollout undo"));
        insta::assert_snapshot!(format!("approval_modal_{w}x{h}"), screen);
    }
}

#[test]
fn replay_paused_midway() {
    for (w, h) in SIZES {
        sitrep::tui::highlight::load_now();
        let mut s = AppState::new_replay(
            Theme::builtin("default").unwrap_or_default(),
            Keymap::default(),
            fixtures::full_session(),
        );
        s.session_id = Some("2026-11-22-payments".into());
        let _ = update(&mut s, Msg::Resize(w, h));
        // `5`: seek to 50% of the session's duration; the replay stays paused.
        let _ = update(
            &mut s,
            Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('5'),
                crossterm::event::KeyModifiers::NONE,
            )),
        );
        let screen = render(&s);
        assert!(screen.contains("paused"));
        assert!(screen.contains("REPLAY"));
        insta::assert_snapshot!(format!("replay_paused_{w}x{h}"), screen);
    }
}

#[test]
fn help_overlay() {
    for (w, h) in SIZES {
        let mut s = fixtures::live(&fixtures::mid_gather(), w, h);
        s.now_t = 2.0;
        let _ = update(
            &mut s,
            Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('?'),
                crossterm::event::KeyModifiers::NONE,
            )),
        );
        let screen = render(&s);
        assert!(screen.contains("help"));
        insta::assert_snapshot!(format!("help_overlay_{w}x{h}"), screen);
    }
}

#[test]
fn every_small_size_renders_without_panic() {
    let records = fixtures::awaiting_approval(Risk::Critical);
    for w in 0..=90u16 {
        for h in 0..=30u16 {
            let s = fixtures::live(&records, w, h);
            let mut term = match Terminal::new(TestBackend::new(w, h)) {
                Ok(t) => t,
                Err(e) => panic!("{e}"),
            };
            let res = term.draw(|f| sitrep::tui::draw(&s, f));
            assert!(res.is_ok());
            if (w < 20 || h < 5) && w >= 18 && h >= 1 {
                assert!(
                    term.backend().to_string().contains("terminal too"),
                    "{w}x{h}"
                );
            }
        }
    }
}

#[test]
fn selected_row_spans_the_pane_and_durations_sit_at_its_right_edge() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    s.theme = Theme::builtin("default").unwrap_or_default();
    s.follow = false;
    s.timeline_sel = s
        .incident()
        .timeline
        .iter()
        .position(|i| i.text.contains("kubernetes.pods"))
        .unwrap_or(0);
    let _ = update(&mut s, Msg::Resize(120, 40));
    let area = s.areas().timeline;
    let mut term = match Terminal::new(TestBackend::new(120, 40)) {
        Ok(t) => t,
        Err(e) => panic!("test backend: {e}"),
    };
    if let Err(e) = term.draw(|f| sitrep::tui::draw(&s, f)) {
        panic!("draw: {e}");
    }
    let buf = term.backend().buffer();
    let y = area.y + 1 + (s.timeline_sel - s.timeline_offset) as u16;
    let (left, right) = (area.x + 1, area.x + area.width - 2);
    let sel_bg = s
        .theme
        .get(sitrep::tui::theme::Role::Selection)
        .bg
        .unwrap_or_default();
    for x in left..=right {
        assert_eq!(buf[(x, y)].bg, sel_bg, "cell {x} of the selected row");
    }
    let row: String = (left..=right).map(|x| buf[(x, y)].symbol()).collect();
    assert!(row.contains("kubernetes.pods"), "{row}");
    assert!(row.trim_end().ends_with("✓ 412ms"), "{row}");
    assert_eq!(
        buf[(right, y)].symbol(),
        "s",
        "the duration ends at the pane's edge"
    );
    assert_ne!(buf[(left, y + 1)].bg, sel_bg, "only the selected row");
}

fn render_chooser(state: &sitrep::tui::chooser_state::ChooserState) -> String {
    let (w, h) = state.size;
    let mut term = match Terminal::new(TestBackend::new(w, h)) {
        Ok(t) => t,
        Err(e) => panic!("test backend: {e}"),
    };
    if let Err(e) = term.draw(|f| sitrep::tui::chooser::draw(state, f)) {
        panic!("draw: {e}");
    }
    term.backend().to_string()
}

#[test]
fn demo_chooser() {
    use sitrep::tui::chooser_state::{ChooserMsg, update};
    for (w, h) in [(80, 24), (200, 50)] {
        let mut s = fixtures::chooser(w, h);
        let j = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('j'),
            crossterm::event::KeyModifiers::NONE,
        );
        let _ = update(&mut s, ChooserMsg::Key(j));
        let screen = render_chooser(&s);
        assert!(screen.contains("▸ search-cpu-saturation"), "{screen}");
        assert!(
            screen.contains("q/esc quit"),
            "the key hints are at the bottom: {screen}"
        );
        insta::assert_snapshot!(format!("demo_chooser_{w}x{h}"), screen);
    }
}

#[test]
fn demo_chooser_small_sizes_render_without_panic() {
    for w in 0..=60u16 {
        for h in 0..=20u16 {
            let mut s = fixtures::chooser(w, h);
            s.help = h % 2 == 0;
            let mut term = match Terminal::new(TestBackend::new(w, h)) {
                Ok(t) => t,
                Err(e) => panic!("{e}"),
            };
            assert!(
                term.draw(|f| sitrep::tui::chooser::draw(&s, f)).is_ok(),
                "{w}x{h}"
            );
        }
    }
}

/// Two past sessions of the same alert, one fixed by a rollback, one with an operator's note.
fn recalled() -> sitrep::model::Event {
    use sitrep::model::{Category, Event, OperatorNote, Outcome, PastAction, PastIncident};
    let past = |id: &str, hours: i64, fixed: bool, note: Option<&str>| PastIncident {
        id: id.into(),
        started: fixtures::at() - chrono::Duration::hours(hours),
        alertname: "KubePodCrashLooping".into(),
        category: Some(Category::ConfigurationError),
        root_cause: "payments-api v2.4.1 reads a DATABASE_URL that is not set".into(),
        actions: vec![PastAction {
            kind: "kubernetes.rollout_undo".into(),
            target: "deployment/payments-api".into(),
            status: "executed".into(),
            decided_by: vec!["alice".into()],
            verified: Some(fixed),
            verified_at: Some(
                fixtures::at() - chrono::Duration::hours(hours) + chrono::Duration::minutes(9),
            ),
            ..PastAction::default()
        }],
        verified: Some(fixed),
        outcome: Some(if fixed {
            Outcome::Resolved
        } else {
            Outcome::Unresolved
        }),
        notes: note
            .map(|text| OperatorNote {
                text: text.into(),
                by: "bob".into(),
                at: fixtures::at() - chrono::Duration::hours(hours),
            })
            .into_iter()
            .collect(),
        matched: "same alert fingerprint".into(),
        ..PastIncident::default()
    };
    Event::Recalled {
        sessions: vec![
            past(
                "20261120T140100Z-1a2b3c4d",
                50,
                true,
                Some("it was the CDN, not us"),
            ),
            past("20261118T090000Z-5e6f7a8b", 101, true, None),
        ],
        total: 2,
    }
}

fn with_recall() -> Vec<sitrep::model::Record> {
    let mut records = fixtures::mid_gather();
    // Right after triage's classification, as the pipeline records it.
    let at = records
        .iter()
        .position(|r| matches!(r.event, sitrep::model::Event::Triaged { .. }))
        .map_or(records.len(), |i| i + 1);
    records.insert(
        at,
        sitrep::model::Record {
            t: 0.45,
            event: recalled(),
        },
    );
    records
}

#[test]
fn seen_before_panel() {
    for (w, h) in [(80, 24), (200, 50)] {
        let mut s = fixtures::live(&with_recall(), w, h);
        s.now_t = 2.0;
        let screen = render(&s);
        assert!(screen.contains("seen before (2)"), "{screen}");
        assert!(screen.contains("fired twice before this one"), "{screen}");
        assert!(screen.contains("kubernetes.rollout_undo"), "{screen}");
        if h >= 50 {
            assert!(screen.contains("it was the CDN, not us"), "{screen}");
        }
        insta::assert_snapshot!(format!("seen_before_{w}x{h}"), screen);
    }
}

#[test]
fn replay_shows_what_was_recalled() {
    sitrep::tui::highlight::load_now();
    let mut s = AppState::new_replay(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
        with_recall(),
    );
    let _ = update(&mut s, Msg::Resize(200, 50));
    let _ = update(
        &mut s,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('9'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    let screen = render(&s);
    assert!(screen.contains("seen before (2)"), "{screen}");
    assert!(screen.contains("it was the CDN, not us"), "{screen}");
}
