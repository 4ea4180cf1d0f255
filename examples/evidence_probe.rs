//! Opens a session holding one large evidence item the way the replay console does and times what
//! the operator waits for: the first frame showing the item, a search to a match deep inside it,
//! and the frame time while scrolling it inside a long session. The input of `scripts/bench`'s
//! evidence figures, set beside lnav on the same lines.
//!
//! Usage:
//! - `evidence_probe gen LINES LOG SESSION`: LINES log lines into LOG (plain text, for lnav) and
//!   the same lines as one evidence item of SESSION; prints the needle, a token on one line three
//!   quarters of the way down.
//! - `evidence_probe open SESSION`: plays SESSION in record by record, as the console does, and
//!   prints `first_frame_ms=..`.
//! - `evidence_probe search SESSION NEEDLE`: prints `first_frame_ms=.. search_ms=.. line=..`.
//! - `evidence_probe frames SESSION`: opens SESSION at its end, shows its largest evidence item
//!   and presses `j` 2000 times at 200x50; prints `first_frame_ms=.. frame_p50_ms=..
//!   frame_p99_ms=.. frame_p99_cpu_ms=..`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sitrep::model::{Event, Evidence, EvidenceBody, Outcome, Record, RunMode, TimelineKind};
use sitrep::tui::app::{AppState, Msg, Pane, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

const W: u16 = 200;
const H: u16 = 50;
/// Seconds a search may take before the probe gives up.
const SEARCH_LIMIT: u64 = 60;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["gen", lines, log, session] => generate(lines.parse()?, log, session),
        ["open", session] => {
            let start = Instant::now();
            let (_state, _term) = open(session, Reach::Play)?;
            println!("first_frame_ms={:.1}", ms(start.elapsed()));
            Ok(())
        }
        ["search", session, needle] => search(session, needle),
        ["frames", session] => frames(session),
        _ => anyhow::bail!(
            "usage: evidence_probe gen LINES LOG SESSION | open SESSION | search SESSION NEEDLE | frames SESSION"
        ),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn log_line(i: usize) -> String {
    format!(
        "2026-11-22T09:{:02}:{:02}.{:03}Z ERROR payments-api-7d9f8-{:05} upstream ledger timed out after 2000ms path=/api/v1/pay req={i:09}",
        i / 60_000 % 60,
        i / 1000 % 60,
        i % 1000,
        i % 100_000
    )
}

fn generate(lines: usize, log: &str, session: &str) -> anyhow::Result<()> {
    let mut text = String::with_capacity(lines * 128);
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(log)?);
    for i in 0..lines {
        let line = log_line(i);
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        text.push_str(&line);
        text.push('\n');
    }
    out.flush()?;
    let started = chrono::DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")?.to_utc();
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(session)?);
    serde_json::to_writer(
        &mut out,
        &sitrep::session::header("evidence", started, "One large log"),
    )?;
    out.write_all(b"\n")?;
    let records = [
        Event::SessionStarted {
            id: "evidence".into(),
            title: "One large log".into(),
            started,
            mode: RunMode::Demo,
            alert: None,
            problem: Some("payments-api returns 5xx".into()),
            case: None,
            read_only: true,
            operator: "bench".into(),
        },
        Event::EvidenceAdded {
            evidence: Evidence {
                id: "big".into(),
                kind: "logs".into(),
                title: format!("payments-api logs, {lines} lines"),
                source: "loki.query_range".into(),
                call_id: None,
                body: EvidenceBody::Text {
                    language: "log".into(),
                    text,
                },
            },
        },
        Event::SessionEnded {
            outcome: Outcome::Diagnosed,
        },
    ];
    for (i, event) in records.into_iter().enumerate() {
        serde_json::to_writer(
            &mut out,
            &Record {
                t: i as f64 * 0.1,
                event,
            },
        )?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    // A token found on one line only, three quarters down: a search scans most of the item.
    println!("req={:09}", lines * 3 / 4);
    Ok(())
}

fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

/// How the replay reaches its end.
#[derive(Clone, Copy, PartialEq)]
enum Reach {
    /// Every record applied in turn, as `sitrep replay` plays a short session in.
    Play,
    /// A jump to the end, as the `9`/`0` keys do (a long session would take minutes to play).
    Seek,
}

/// The replay console on SESSION, paused at its end, its largest evidence item shown in the
/// focused evidence pane, one frame drawn.
fn open(session: &str, reach: Reach) -> anyhow::Result<(AppState, Terminal<TestBackend>)> {
    let opened = sitrep::session::Replay::open(std::path::Path::new(session))?;
    let mut state = AppState::new_replay(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
        opened.replay,
    );
    if let Some(r) = &mut state.replay {
        match reach {
            Reach::Play => {
                r.clock.resume();
                r.clock.advance(Duration::from_secs(1 << 40));
                r.clock.pause();
            }
            Reach::Seek => {
                r.clock.pause();
                r.clock.seek_fraction(1.0);
            }
        }
    }
    update(&mut state, Msg::ReplayTick(0.0));
    let inc = state.incident();
    let largest = inc
        .evidence
        .iter()
        .max_by_key(|e| match &e.body {
            EvidenceBody::Text { text, .. } => text.len(),
            _ => 0,
        })
        .map(|e| e.id.clone())
        .ok_or_else(|| anyhow::anyhow!("{session}: no evidence to show"))?;
    let row = inc
        .timeline
        .iter()
        .position(|item| matches!(&item.kind, TimelineKind::Evidence { evidence_id } if *evidence_id == largest))
        .ok_or_else(|| anyhow::anyhow!("{session}: the evidence has no timeline row"))?;
    state.follow = false;
    state.timeline_sel = row;
    // Focused directly: in a replay the digit keys seek.
    state.focus = Pane::Evidence;
    update(&mut state, Msg::Resize(W, H));
    let mut term = Terminal::new(TestBackend::new(W, H))?;
    term.draw(|f| sitrep::tui::draw(&state, f))?;
    Ok((state, term))
}

fn search(session: &str, needle: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let (mut state, mut term) = open(session, Reach::Play)?;
    let first = start.elapsed();
    let top = state.evidence.top();
    update(&mut state, key(KeyCode::Char('/')));
    for c in needle.chars() {
        update(&mut state, key(KeyCode::Char(c)));
    }
    // Timed from the key that runs the search to the frame that shows its match, ticking as the
    // event loop does while a scan has work left.
    let start = Instant::now();
    update(&mut state, key(KeyCode::Enter));
    term.draw(|f| sitrep::tui::draw(&state, f))?;
    while state.evidence.top() == top {
        if start.elapsed() > Duration::from_secs(SEARCH_LIMIT) {
            let f = state
                .filter
                .as_ref()
                .map(|f| (f.pane, f.rows.len(), f.done, f.target.clone()));
            let status = state.status.as_ref().map(|s| s.text.clone());
            anyhow::bail!(
                "no match for {needle:?} after {SEARCH_LIMIT} s: filter {f:?}, status {status:?}"
            );
        }
        if state.tick_in().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        update(&mut state, Msg::ReplayTick(0.0));
        term.draw(|f| sitrep::tui::draw(&state, f))?;
    }
    println!(
        "first_frame_ms={:.1} search_ms={:.1} line={}",
        ms(first),
        ms(start.elapsed()),
        state.evidence.top()
    );
    Ok(())
}

/// CPU time this thread has used: on a shared machine it leaves out time others had the core.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

fn frames(session: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let (mut state, mut term) = open(session, Reach::Seek)?;
    let first = start.elapsed();
    sitrep::tui::highlight::load_now();
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    // From the middle of the item, one line a frame; the reducer is not timed.
    state.evidence.show(state.evidence.len() / 2);
    for _ in 0..2000 {
        update(&mut state, key(KeyCode::Char('j')));
        let (s, c) = (Instant::now(), thread_cpu());
        term.draw(|f| sitrep::tui::draw(&state, f))?;
        cpu.push(ms(thread_cpu().saturating_sub(c)));
        wall.push(ms(s.elapsed()));
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let p = |v: &[f64], q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "first_frame_ms={:.1} events={} frame_p50_ms={:.3} frame_p99_ms={:.3} frame_p99_cpu_ms={:.3}",
        ms(first),
        state.incident().events,
        p(&wall, 0.5),
        p(&wall, 0.99),
        p(&cpu, 0.99)
    );
    Ok(())
}
