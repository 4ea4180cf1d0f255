//! The readable-evidence views and the search, at 80x24 and 200x50: snapshots of long log
//! lines wrapped and panned, a wide table, a search with highlighted matches, the report view
//! and a labelled chart; reducer behaviour of search, filter, scroll and zoom.

#[path = "tui_fixtures.rs"]
mod fixtures;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use sitrep::model::{Event, Evidence, EvidenceBody, Marker, Record, Series};
use sitrep::tui::app::{AppState, Msg, Overlay, Pane, update};
use sitrep::tui::theme::Role;
use std::collections::BTreeMap;

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 50)];

fn draw(state: &AppState) -> Buffer {
    let (w, h) = state.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| sitrep::tui::draw(state, f)).expect("draw");
    term.backend().buffer().clone()
}

fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn press(s: &mut AppState, msgs: impl IntoIterator<Item = Msg>) {
    for m in msgs {
        let _ = update(s, m);
    }
}

fn typed(s: &mut AppState, t: &str) {
    press(s, t.chars().map(key));
}

fn rec(t: f64, event: Event) -> Record {
    Record { t, event }
}

fn evidence(id: &str, kind: &str, title: &str, body: EvidenceBody) -> Record {
    rec(
        1.0,
        Event::EvidenceAdded {
            evidence: Evidence {
                id: id.into(),
                kind: kind.into(),
                title: title.into(),
                source: "test".into(),
                call_id: None,
                body,
            },
        },
    )
}

/// A console with one evidence item, selected and focused, drawn once so sizes are known.
fn open(body: EvidenceBody, kind: &str, w: u16, h: u16) -> AppState {
    let records = vec![
        rec(0.0, fixtures::started()),
        evidence("ev", kind, "the item", body),
    ];
    let mut s = fixtures::live(&records, w, h);
    s.follow = false;
    s.timeline_sel = s
        .incident()
        .timeline
        .iter()
        .position(|i| i.text.contains("the item"))
        .expect("evidence row");
    press(&mut s, [Msg::Resize(w, h), key('2')]);
    assert_eq!(s.focus, Pane::Evidence);
    let _ = draw(&s);
    s
}

fn long_log() -> EvidenceBody {
    let mut text = String::new();
    text.push_str("2026-11-22T08:58:01Z INFO  starting payments-api\n");
    text.push_str("2026-11-22T08:58:03Z ERROR ");
    for i in 0..40 {
        text.push_str(&format!("field{i:02}=value "));
    }
    text.push_str("END\n");
    text.push_str("2026-11-22T08:58:04Z WARN  retrying\n");
    EvidenceBody::Text {
        language: "log".into(),
        text,
    }
}

#[test]
fn a_400_character_log_line_wraps_and_pans() {
    for (w, h) in SIZES {
        let mut s = open(long_log(), "kubernetes/pod_logs", w, h);
        if w < 100 {
            // A narrow terminal reads a long line full screen.
            press(&mut s, [key('z')]);
        }
        let cut = text(&draw(&s));
        assert!(cut.contains("08:58:03 ERROR field00=value"), "{cut}");
        assert!(!cut.contains("END"), "cut at the edge: {cut}");
        press(&mut s, [key('w')]);
        let wrapped = text(&draw(&s));
        assert!(wrapped.contains("END"), "wrapped shows the end: {wrapped}");
        assert!(wrapped.contains("08:58:04 WARN  retrying"), "{wrapped}");
        insta::assert_snapshot!(format!("log_wrapped_{w}x{h}"), wrapped);
        press(&mut s, [key('w')]);
        press(&mut s, (0..4).map(|_| key('l')));
        let panned = text(&draw(&s));
        assert!(!panned.contains("field00"), "{panned}");
        assert!(panned.contains("col 33"), "the title says where: {panned}");
        insta::assert_snapshot!(format!("log_panned_{w}x{h}"), panned);
    }
}

fn wide_table() -> EvidenceBody {
    let columns = [
        "namespace",
        "age",
        "ip",
        "node",
        "restarts",
        "status",
        "ready",
        "image",
        "qos",
        "cpu",
        "memory",
        "name",
    ];
    let rows = (0..6)
        .map(|i| {
            vec![
                "payments".into(),
                format!("{i}d"),
                format!("10.0.0.{i}"),
                format!("node-{i}.eu-west-1.compute.internal"),
                format!("{}", i * 3),
                if i % 2 == 0 {
                    "CrashLoopBackOff"
                } else {
                    "Running"
                }
                .into(),
                "0/1".into(),
                "registry.example.com/payments/api:v2.14.0-rc1".into(),
                "Burstable".into(),
                "250m".into(),
                "512Mi".into(),
                format!("payments-api-7f9dd8b6c4-pod{i}"),
            ]
        })
        .collect();
    EvidenceBody::Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

#[test]
fn a_12_column_table_puts_name_and_status_first_and_truncates_the_rest() {
    for (w, h) in SIZES {
        let mut s = open(wide_table(), "kubernetes/pods", w, h);
        let side = text(&draw(&s));
        assert!(side.contains("payments-api-7f9"), "{side}");
        assert!(side.contains("CrashLoop"), "status beside the name: {side}");
        assert!(side.contains('…'), "truncated, not dropped: {side}");
        press(&mut s, [key('z')]);
        let screen = text(&draw(&s));
        assert!(screen.contains("payments-api-7f9dd8b6c4-pod0"), "{screen}");
        assert!(screen.contains("CrashLoopBackOff"), "{screen}");
        let header = screen
            .lines()
            .find(|l| l.contains("name") && l.contains("status"))
            .expect("header row");
        assert!(
            header.find("name") < header.find("status"),
            "name before status: {header}"
        );
        insta::assert_snapshot!(format!("table_12_columns_{w}x{h}"), screen);
    }
}

fn many_matches() -> EvidenceBody {
    let text: String = (0..200)
        .map(|i| {
            if i % 5 == 0 {
                format!(
                    "2026-11-22T09:00:{:02}Z ERROR timeout talking to postgres ({i})\n",
                    i % 60
                )
            } else {
                format!("2026-11-22T09:00:{:02}Z INFO  request ok ({i})\n", i % 60)
            }
        })
        .collect();
    EvidenceBody::Text {
        language: "log".into(),
        text,
    }
}

#[test]
fn search_marks_every_match_counts_them_and_n_jumps() {
    for (w, h) in SIZES {
        let mut s = open(many_matches(), "logs", w, h);
        if w < 100 {
            press(&mut s, [key('z')]);
        }
        press(&mut s, [key('/')]);
        typed(&mut s, "postgres");
        press(&mut s, [code(KeyCode::Enter)]);
        fixtures::settle(&mut s);
        let f = s.filter.as_ref().expect("search applied");
        assert_eq!(f.rows.len(), 40);
        assert_eq!(f.position(), "1/40");
        press(&mut s, [key('n'), key('n')]);
        assert_eq!(s.filter.as_ref().unwrap().position(), "3/40");
        assert_eq!(s.evidence.top(), 10, "third match is line 10");
        let buf = draw(&s);
        let screen = text(&buf);
        assert!(screen.contains("3/40"), "{screen}");
        // Every visible "postgres" is styled as a match (or as the current one).
        let th = &s.theme;
        let (mstyle, cur) = (th.get(Role::Match), th.get(Role::Selection));
        let mut marked = 0;
        for (y, line) in screen.lines().enumerate() {
            if !line.contains("talking to postgres") {
                continue;
            }
            let mut from = 0;
            while let Some(p) = line[from..].find("postgres") {
                let col = line[..from + p].chars().count() as u16;
                let cell = &buf[(col, y as u16)];
                let st = cell.style();
                let is = |m: ratatui::style::Style| {
                    (m.bg.is_some() && st.bg == m.bg)
                        || (!m.add_modifier.is_empty() && st.add_modifier.contains(m.add_modifier))
                };
                assert!(
                    is(mstyle) || is(cur),
                    "unmarked match at {col},{y}: {st:?} (match {mstyle:?}, current {cur:?})"
                );
                marked += 1;
                from += p + 8;
            }
        }
        assert!(marked >= 2, "{screen}");
        insta::assert_snapshot!(format!("search_highlighted_{w}x{h}"), screen);
        press(&mut s, [key('N')]);
        assert_eq!(s.filter.as_ref().unwrap().position(), "2/40");
        press(&mut s, [code(KeyCode::Esc)]);
        assert!(s.filter.is_none());
    }
}

#[test]
fn filter_keeps_only_the_matching_lines() {
    let mut s = open(many_matches(), "logs", 200, 50);
    press(&mut s, [key('&')]);
    typed(&mut s, "ERROR");
    press(&mut s, [code(KeyCode::Enter)]);
    fixtures::settle(&mut s);
    let screen = text(&draw(&s));
    let body: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("request ok") || l.contains("timeout"))
        .collect();
    assert!(!body.is_empty());
    assert!(body.iter().all(|l| l.contains("ERROR")), "{screen}");
    assert_eq!(s.evidence.len(), 40);
}

#[test]
fn scroll_stays_inside_the_item_and_zoom_gives_it_the_body() {
    let mut s = open(many_matches(), "logs", 80, 24);
    press(&mut s, [key('G')]);
    let _ = draw(&s);
    let bottom = s.evidence.top();
    assert_eq!(bottom, 200 - s.evidence.height());
    press(&mut s, [key('j'), key('j')]);
    assert_eq!(s.evidence.top(), bottom);
    press(&mut s, [key('g')]);
    assert_eq!(s.evidence.top(), 0);
    let before = s.areas().evidence;
    press(&mut s, [key('z')]);
    let zoomed = s.areas();
    assert!(zoomed.evidence.width > before.width && zoomed.evidence.height > before.height);
    assert_eq!(zoomed.timeline.width, 0);
    assert_eq!(zoomed.chat.height, 0);
    press(&mut s, [key('z')]);
    assert_eq!(s.areas().evidence, before);
}

#[test]
fn summary_and_details_scroll_to_their_end() {
    let mut s = fixtures::live(&fixtures::full_session(), 80, 24);
    press(&mut s, [key('4')]);
    let _ = draw(&s);
    press(&mut s, [key('G')]);
    let screen = text(&draw(&s));
    let last = s.summary.len();
    assert!(last > s.summary.height(), "summary longer than the pane");
    assert_eq!(s.summary.top(), last - s.summary.height(), "{screen}");
}

#[test]
fn report_view_renders_markdown() {
    for (w, h) in SIZES {
        let mut records = fixtures::full_session();
        records.push(rec(
            99.0,
            Event::Report {
                markdown: "# payments-api crash loop\n\n## Timeline\n\n- 08:57 revision 42 deployed\n- 09:00 alert fired\n\n## Evidence\n\n| kind | title |\n|---|---|\n| logs | FATAL exiting |\n| pods | 2 of 3 crash-looping |\n\n```sh\nkubectl -n payments rollout undo deployment/payments-api\n```\n".into(),
            },
        ));
        let mut s = fixtures::live(&records, w, h);
        press(&mut s, [key('r')]);
        assert!(matches!(s.overlay, Some(Overlay::Report(_))));
        let screen = text(&draw(&s));
        assert!(screen.contains("• 08:57 revision 42 deployed"), "{screen}");
        assert!(screen.contains("kind │ title"), "{screen}");
        assert!(!screen.contains("|---|"), "{screen}");
        assert!(!screen.contains("## "), "{screen}");
        insta::assert_snapshot!(format!("report_view_{w}x{h}"), screen);
        press(&mut s, [code(KeyCode::Esc)]);
        assert!(s.overlay.is_none());
    }
}

/// A report as the Report stage writes it: a key/value table under an empty header, and the
/// timeline with a cell holding escaped pipes (a LogQL pipeline) and one too long for a line.
const TABLE_REPORT: &str = "# Postmortem: HighErrorRate: checkout-api 5xx\n\n| | |\n|---|---|\n\
| Session | `20261128T090000Z-1` |\n| Outcome | resolved |\n\
| Alert | HighErrorRate (severity critical) |\n\n## Timeline\n\n\
| Time (UTC) | +t | Stage | Event |\n|---|---|---|---|\n\
| 09:00:00 | +0.0s | triage | session started |\n\
| 09:00:01 | +1.2s | gather | → loki.query_range {app=\"checkout\"} \\|= \"error\" \\| json |\n\
| 09:00:03 | +3.4s | diagnose | diagnosis [code_defect]: checkout-api 2.4.1 fails requests with \
'runtime error: invalid memory address or nil pointer dereference' in /cart/checkout since \
rollout revision 8, the regression to roll back |\n\
| 09:00:09 | +9.0s | report | report written |\n";

#[test]
fn report_tables_keep_their_columns_and_have_no_empty_header() {
    for (w, h) in SIZES {
        let mut records = fixtures::full_session();
        records.push(rec(
            99.0,
            Event::Report {
                markdown: TABLE_REPORT.into(),
            },
        ));
        let mut s = fixtures::live(&records, w, h);
        press(&mut s, [key('r')]);
        let screen = text(&draw(&s));
        let rows: Vec<&str> = screen.lines().collect();
        // The key/value table starts right under the title: no blank header row, no rule.
        let session = rows
            .iter()
            .position(|l| l.contains("Session") && l.contains("│ 20261128T090000Z-1"))
            .unwrap_or_else(|| panic!("{screen}"));
        assert!(
            rows[session - 1].trim_matches(['┃', ' ']).is_empty(),
            "{screen}"
        );
        assert!(rows[session - 2].contains("Postmortem"), "{screen}");
        assert!(!rows[session - 1].contains('─'), "{screen}");
        assert!(screen.contains("Outcome │ resolved"), "{screen}");
        // The timeline: four columns, the header ruled, the pipes inside their cell.
        assert!(
            screen.contains("Time (UTC) │ +t    │ Stage    │ Event"),
            "{screen}"
        );
        let pipeline = rows
            .iter()
            .find(|l| l.contains("loki.query_range"))
            .unwrap_or_else(|| panic!("{screen}"));
        assert_eq!(pipeline.matches(" │ ").count(), 3, "{pipeline}");
        assert!(
            screen.contains(r#"{app="checkout"} |= "error" | json"#)
                || screen.contains(r#"{app="checkout"} |="#),
            "{screen}"
        );
        // Every row of the timeline has the same four columns, wrapped lines included.
        let bars: Vec<usize> = rows
            .iter()
            .skip_while(|l| !l.contains("Time (UTC)"))
            .take_while(|l| !l.trim_matches(['┃', ' ']).is_empty())
            .filter(|l| !l.contains('─'))
            .map(|l| l.matches('│').count())
            .collect();
        assert!(bars.len() >= 5, "{screen}");
        assert!(bars.iter().all(|n| *n == 3), "{bars:?}\n{screen}");
        // Nothing is drawn past the pane.
        assert!(
            rows.iter().all(|l| l.chars().count() == usize::from(w)),
            "{screen}"
        );
        insta::assert_snapshot!(format!("report_tables_{w}x{h}"), screen);
    }
}

#[test]
fn chart_has_axes_with_units_times_threshold_and_markers() {
    let t0 = fixtures::at().timestamp() as f64 - 1800.0;
    let points: Vec<(f64, f64)> = (0..60)
        .map(|i| (t0 + 60.0 * f64::from(i), if i > 30 { 9.0 } else { 0.5 }))
        .collect();
    let body = EvidenceBody::TimeSeries {
        series: vec![Series {
            name: "restarts".into(),
            labels: BTreeMap::new(),
            points,
        }],
        threshold: Some(3.0),
        unit: Some("/min".into()),
        markers: vec![Marker {
            at: t0 + 1500.0,
            label: "deploy r42".into(),
        }],
    };
    for (w, h) in SIZES {
        let s = open(body.clone(), "metrics", w, h);
        let screen = text(&draw(&s));
        assert!(screen.contains("08:30"), "start time: {screen}");
        assert!(screen.contains("/min"), "unit: {screen}");
        if w >= 200 {
            assert!(screen.contains("threshold 3.00/min"), "{screen}");
            assert!(screen.contains("deploy r42"), "{screen}");
            assert!(
                screen.contains("onset"),
                "alert onset from the incident: {screen}"
            );
        }
        insta::assert_snapshot!(format!("chart_labelled_{w}x{h}"), screen);
    }
}

#[test]
fn a_million_line_log_opens_and_searches_in_steps() {
    let mut text = String::with_capacity(60 << 20);
    for i in 0..1_000_000u32 {
        if i % 100_000 == 99_999 {
            text.push_str(&format!("2026-11-22T09:00:00Z ERROR needle {i}\n"));
        } else {
            text.push_str(&format!("2026-11-22T09:00:00Z INFO  line {i} ok\n"));
        }
    }
    let len = text.len();
    let started = std::time::Instant::now();
    let mut s = open(
        EvidenceBody::Text {
            language: "log".into(),
            text,
        },
        "logs",
        200,
        50,
    );
    eprintln!("open 1M lines: {:?}", started.elapsed());
    press(&mut s, [key('/')]);
    typed(&mut s, "needle");
    let t = std::time::Instant::now();
    press(&mut s, [code(KeyCode::Enter)]);
    eprintln!("first search step: {:?}", t.elapsed());
    let f = s.filter.as_ref().unwrap();
    // One key never scans the whole body: the rest runs between frames.
    assert!(f.rows.len() < 10 && !f.done, "{} {}", f.rows.len(), len);
    assert!(
        s.tick_in().is_some(),
        "the loop keeps ticking while a scan runs"
    );
    // A new query drops the old scan.
    press(&mut s, [key('/')]);
    typed(&mut s, "ERROR");
    press(&mut s, [code(KeyCode::Enter)]);
    assert_eq!(s.filter.as_ref().unwrap().query, "ERROR");
    let t = std::time::Instant::now();
    let mut steps = 0;
    while s.searching() {
        press(&mut s, [Msg::Clock(1.0)]);
        steps += 1;
    }
    eprintln!("full scan: {:?} in {steps} steps", t.elapsed());
    assert_eq!(s.filter.as_ref().unwrap().rows.len(), 10);
    assert!(steps > 1);
    let t = std::time::Instant::now();
    press(&mut s, [key('n')]);
    eprintln!("search-next: {:?}", t.elapsed());
    assert_eq!(s.evidence.top(), 199_999);
    let t = std::time::Instant::now();
    let _ = draw(&s);
    eprintln!("frame at line 199999: {:?}", t.elapsed());
}

#[test]
fn skip_ahead_is_asked_of_the_loop_live_and_ignored_in_replay() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 80, 24);
    let effects = update(&mut s, key('f'));
    assert_eq!(effects, vec![sitrep::tui::app::Effect::SkipAhead]);
    let mut r = AppState::new_replay(
        sitrep::tui::theme::Theme::default(),
        sitrep::tui::keymap::Keymap::default(),
        fixtures::full_session(),
    );
    assert!(update(&mut r, key('f')).is_empty());
}

#[test]
fn in_replay_digits_seek_and_never_switch_panes() {
    let mut r = AppState::new_replay(
        sitrep::tui::theme::Theme::default(),
        sitrep::tui::keymap::Keymap::default(),
        fixtures::full_session(),
    );
    let before = r.focus;
    press(&mut r, [key('5')]);
    assert_eq!(r.focus, before);
    let frac = r
        .replay
        .as_ref()
        .map(|p| p.clock.play_time() / p.clock.play_duration());
    assert!(frac.is_some_and(|f| (0.4..=0.6).contains(&f)), "{frac:?}");
    press(&mut r, [code(KeyCode::Tab)]);
    assert_ne!(r.focus, before, "panes switch with tab");
}

#[test]
fn nothing_is_pending_after_the_session_is_cancelled() {
    let mut records = fixtures::awaiting_approval(sitrep::model::Risk::High);
    let mut s = fixtures::live(&records, 80, 24);
    assert!(s.pending().is_some());
    records.push(rec(
        9.0,
        Event::SessionEnded {
            outcome: sitrep::model::Outcome::Cancelled,
        },
    ));
    let mut s2 = fixtures::live(&records, 80, 24);
    assert!(s2.pending().is_none());
    assert!(!matches!(s2.overlay, Some(Overlay::Approval(_))));
    let screen = text(&draw(&s2));
    assert!(!screen.contains("approval pending"), "{screen}");
    // The same while it was still live: pending, and said so.
    press(&mut s, [code(KeyCode::Esc)]);
    assert!(text(&draw(&s)).contains("approval pending"));
    let _ = &mut s2;
}

#[test]
fn chat_slash_commands_are_the_palette_commands() {
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let effects = sitrep::tui::app::chat_command(&mut s, "/search kubernetes");
    assert!(effects.is_empty());
    assert_eq!(
        s.filter.as_ref().map(|f| f.query.as_str()),
        Some("kubernetes")
    );
    let _ = sitrep::tui::app::chat_command(&mut s, "/theme mono");
    assert_eq!(s.theme.name, "mono");
    // Anything else still goes to the agent.
    let effects = sitrep::tui::app::chat_command(&mut s, "/why");
    assert!(matches!(
        effects.as_slice(),
        [sitrep::tui::app::Effect::SendCommand(
            sitrep::model::Command::Chat { .. }
        )]
    ));
}

#[test]
fn chat_pane_draws_a_message_added_after_the_last_frame() {
    let mut s = fixtures::live(&fixtures::full_session(), 200, 50);
    let before = text(&draw(&s));
    assert!(!before.contains("zebra-canary-answer"), "{before}");
    let mut inc = s.incident().clone();
    inc.chat.push(sitrep::model::ChatEntry {
        t: inc.now,
        from: sitrep::model::ChatRole::Agent,
        text: "zebra-canary-answer".into(),
        streaming: false,
    });
    s.set_incident(inc);
    let after = text(&draw(&s));
    assert!(after.contains("zebra-canary-answer"), "{after}");
}
