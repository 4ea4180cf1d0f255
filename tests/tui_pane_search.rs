//! `/` searches the pane in focus, whatever it shows: the details of a timeline row, the
//! diagnosis summary and the chat, like the evidence bodies: every match marked, `n`/`N` jump,
//! the status bar counts "3/41".

#[path = "tui_fixtures.rs"]
mod fixtures;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use sitrep::tui::app::{AppState, Msg, Pane, chat_command, update};
use sitrep::tui::theme::Role;

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

fn press(s: &mut AppState, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            c => KeyCode::Char(c),
        };
        let _ = update(s, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
}

/// Rows of the pane (as drawn) that hold `word`, ignoring case.
fn expected(rows: &[String], word: &str) -> Vec<usize> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.to_lowercase().contains(word))
        .map(|(i, _)| i)
        .collect()
}

/// Every visible `word` on screen rows that the pane drew is styled as a match.
fn marked(s: &AppState, buf: &Buffer, word: &str) -> usize {
    let screen = text(buf);
    let th = &s.theme;
    let (m, cur) = (th.get(Role::Match), th.get(Role::Selection));
    let mut n = 0;
    for (y, line) in screen
        .lines()
        .enumerate()
        .take(buf.area.height as usize - 2)
    {
        let lower = line.to_lowercase();
        let mut from = 0;
        while let Some(p) = lower[from..].find(word) {
            let col = lower[..from + p].chars().count() as u16;
            let st = buf[(col, y as u16)].style();
            let is = |x: ratatui::style::Style| {
                (x.bg.is_some() && st.bg == x.bg)
                    || (!x.add_modifier.is_empty() && st.add_modifier.contains(x.add_modifier))
            };
            if is(m) || is(cur) {
                n += 1;
            }
            from += p + word.len();
        }
    }
    n
}

#[test]
fn slash_searches_the_summary_pane_with_counts_marks_and_jumps() {
    for (w, h) in SIZES {
        let mut s = fixtures::live(&fixtures::full_session(), w, h);
        let _ = update(&mut s, Msg::Resize(w, h));
        press(&mut s, "4");
        assert_eq!(s.focus, Pane::Summary);
        let _ = draw(&s);
        let want = expected(&s.summary.text(), "payments");
        assert!(
            want.len() >= 2,
            "the summary names the service more than once"
        );
        press(&mut s, "/payments\n");
        let f = s.filter.as_ref().expect("search applied");
        assert_eq!(
            f.pane,
            Pane::Summary,
            "the summary is searched, not the timeline"
        );
        assert_eq!(f.rows, want);
        assert_eq!(f.position(), format!("1/{}", want.len()));
        press(&mut s, "n");
        assert_eq!(
            s.filter.as_ref().map(|f| f.position()),
            Some(format!("2/{}", want.len()))
        );
        let buf = draw(&s);
        let screen = text(&buf);
        assert!(screen.contains(&format!("2/{}", want.len())), "{screen}");
        assert!(marked(&s, &buf, "payments") >= 1, "{screen}");
        insta::assert_snapshot!(format!("search_summary_{w}x{h}"), screen);
        press(&mut s, "N");
        assert_eq!(
            s.filter.as_ref().map(|f| f.position()),
            Some(format!("1/{}", want.len()))
        );
    }
}

#[test]
fn slash_searches_a_rows_details_and_a_filter_keeps_the_matching_rows() {
    let mut s = fixtures::live(&fixtures::full_session(), 120, 40);
    let _ = update(&mut s, Msg::Resize(120, 40));
    // A row without an evidence body (a stage, the triage): its details are text.
    s.follow = false;
    press(&mut s, "2");
    let word = "payments";
    let found = (0..s.timeline_len()).find(|i| {
        s.timeline_sel = *i;
        if s.displayed_evidence_id().is_some() {
            return false;
        }
        let _ = draw(&s);
        s.evidence
            .text()
            .iter()
            .any(|r| r.to_lowercase().contains(word))
    });
    assert!(found.is_some(), "a details pane naming {word}");
    assert_eq!(s.focus, Pane::Evidence);
    let rows = s.evidence.text().clone();
    let want = expected(&rows, word);
    press(&mut s, "/payments\n");
    let f = s.filter.as_ref().expect("search applied");
    assert_eq!((f.pane, f.target.is_none()), (Pane::Evidence, true));
    assert_eq!(f.rows, want);
    let buf = draw(&s);
    assert!(marked(&s, &buf, word) >= 1, "{}", text(&buf));
    // `&` keeps only the matching rows of the details.
    press(&mut s, "&payments\n");
    let buf = draw(&s);
    assert_eq!(s.evidence.len(), want.len(), "only matching rows are drawn");
    assert!(text(&buf).contains(&format!("1/{}", want.len())));
}

#[test]
fn the_chat_is_searched_through_the_search_command() {
    let mut s = fixtures::live(&fixtures::full_session(), 200, 50);
    let _ = update(&mut s, Msg::Resize(200, 50));
    press(&mut s, "3");
    let _ = draw(&s);
    let rows = s.chat.text().clone();
    let want = expected(&rows, "agent");
    assert!(!want.is_empty(), "{rows:?}");
    // While typing in chat `/` is text; `/search WORD` is the command.
    assert!(chat_command(&mut s, "/search agent").is_empty());
    let f = s.filter.as_ref().expect("search applied");
    assert_eq!(f.pane, Pane::Chat);
    assert_eq!(f.rows, want);
    let buf = draw(&s);
    assert!(marked(&s, &buf, "agent") >= 1, "{}", text(&buf));
    // A message arriving while the search is on is searched too.
    let more = sitrep::model::Record {
        t: 99.0,
        event: sitrep::model::Event::ChatMessage {
            from: sitrep::model::ChatRole::Agent,
            text: "one more from the agent".into(),
        },
    };
    let _ = update(&mut s, Msg::Record(Box::new(more)));
    let _ = draw(&s);
    let _ = update(&mut s, Msg::Clock(100.0));
    let now = s.filter.as_ref().map(|f| f.rows.len()).unwrap_or(0);
    assert!(
        now > want.len(),
        "{now} after a new message, {} before",
        want.len()
    );
}

/// A console showing one large log item in the evidence pane, drawn once.
fn big_log(lines: usize) -> AppState {
    let mut text = String::with_capacity(lines * 40);
    for i in 0..lines {
        if i % 1000 == 0 {
            text.push_str(&format!("09:00:00 ERROR needle number {i}\n"));
        } else {
            text.push_str(&format!("09:00:00 INFO  request {i} ok\n"));
        }
    }
    let records = vec![
        sitrep::model::Record {
            t: 0.0,
            event: fixtures::started(),
        },
        sitrep::model::Record {
            t: 1.0,
            event: sitrep::model::Event::EvidenceAdded {
                evidence: sitrep::model::Evidence {
                    id: "big".into(),
                    kind: "logs".into(),
                    title: "big log".into(),
                    source: "test".into(),
                    call_id: None,
                    body: sitrep::model::EvidenceBody::Text {
                        language: "log".into(),
                        text,
                    },
                },
            },
        },
    ];
    let mut s = fixtures::live(&records, 200, 50);
    let _ = update(&mut s, Msg::Resize(200, 50));
    s.follow = false;
    s.timeline_sel = (0..s.timeline_len())
        .find(|i| {
            s.timeline_sel = *i;
            s.displayed_evidence_id().as_deref() == Some("big")
        })
        .expect("the big item's row");
    press(&mut s, "2");
    let _ = draw(&s);
    s
}

#[test]
fn a_large_body_is_searched_beside_the_ui_and_the_count_grows() {
    let mut s = big_log(2_000_000);
    let started = std::time::Instant::now();
    press(&mut s, "/needle\n");
    assert!(s.searching(), "the key returns before a 60 MB scan ends");
    // Counts seen while it runs only grow, and end at one match per thousand lines.
    let mut seen = vec![s.filter.as_ref().map_or(0, |f| f.rows.len())];
    while s.searching() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(2));
        let _ = update(&mut s, Msg::Clock(1.0));
        seen.push(s.filter.as_ref().map_or(0, |f| f.rows.len()));
    }
    assert!(!s.searching());
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(
        seen.iter().any(|n| *n > 0 && *n < 2_000),
        "partial counts were shown while scanning: {seen:?}"
    );
    let f = s.filter.as_ref().expect("search");
    assert_eq!(f.rows.len(), 2_000);
    assert!(f.rows.iter().all(|r| r % 1000 == 0));
    assert_eq!(f.position(), "1/2000");
}

#[test]
fn a_new_query_replaces_a_running_scan_and_esc_stops_it() {
    let mut s = big_log(2_000_000);
    press(&mut s, "/needle\n");
    assert!(s.searching());
    // A second query while the first still runs: only the new query's lines are listed.
    press(&mut s, "/request 1999999\n");
    fixtures::settle(&mut s);
    let f = s.filter.as_ref().expect("search");
    assert_eq!(f.query, "request 1999999");
    assert_eq!(f.rows, vec![1_999_999]);
    press(&mut s, "/needle\n");
    assert!(s.searching());
    let _ = update(
        &mut s,
        Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
    );
    assert!(s.filter.is_none() && !s.searching(), "esc drops the search");
}
