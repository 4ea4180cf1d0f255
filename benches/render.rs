//! Frame time at 200x50 over 100k events with a 1M-line evidence item, bytes written to the
//! terminal per frame when one line arrives, and searching the 1M-line item (time to the last
//! match, the longest frame meanwhile, `n` to the next match).

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use sitrep::model::{Event, Evidence, EvidenceBody, Record, RunMode};
use sitrep::tui::app::{AppState, Msg, Pane, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const W: u16 = 200;
const H: u16 = 50;

fn big_session() -> AppState {
    sitrep::tui::highlight::load_now();
    let mut s = AppState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
    );
    s.size = (W, H);
    let mut recs = vec![Record {
        t: 0.0,
        event: Event::SessionStarted {
            id: "bench".into(),
            title: "bench: 100k events".into(),
            started: chrono::Utc::now(),
            mode: RunMode::Demo,
            alert: None,
            problem: Some("load".into()),
            case: None,
            read_only: false,
            operator: "bench".into(),
        },
    }];
    let mut big = String::with_capacity(80 * 1_000_000);
    for i in 0..1_000_000 {
        big.push_str(&format!(
            "2026-11-22T09:{:02}:{:02}Z INFO  request {i} served in {}ms path=/api/v1/pay\n",
            i / 60 % 60,
            i % 60,
            i % 97
        ));
    }
    recs.push(Record {
        t: 0.1,
        event: Event::EvidenceAdded {
            evidence: Evidence {
                id: "big".into(),
                kind: "logs".into(),
                title: "1M log lines".into(),
                source: "loki.query_range".into(),
                call_id: None,
                body: EvidenceBody::Text {
                    language: "log".into(),
                    text: big,
                },
            },
        },
    });
    let mut t = 0.2;
    while recs.len() < 100_000 {
        let id = format!("c{}", recs.len());
        t += 0.01;
        recs.push(Record {
            t,
            event: Event::ToolCalled {
                call_id: id.clone(),
                tool: "kubernetes.pods".into(),
                specialist: None,
                params: BTreeMap::new(),
            },
        });
        recs.push(Record {
            t,
            event: Event::ToolSucceeded {
                call_id: id.clone(),
                duration_ms: 12,
                summary: "ok".into(),
            },
        });
        recs.push(Record {
            t,
            event: Event::Warning {
                message: format!("slow response from {id}"),
            },
        });
    }
    for r in recs {
        update(&mut s, Msg::Record(Box::new(r)));
    }
    // Look at the 1M-line item, in the middle of it.
    s.follow = false;
    s.timeline_sel = 1;
    update(&mut s, Msg::Resize(W, H));
    update(
        &mut s,
        Msg::Key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE)),
    );
    s.evidence.show(500_000);
    assert_eq!(s.focus, Pane::Evidence);
    s
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// CPU time this thread has used. Unlike wall time it leaves out the stretches when other
/// processes had the core, so on a busy machine it still shows what a frame costs.
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

/// Frame times of one scroll run, in milliseconds, wall clock and CPU.
struct Figures {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms (CPU time: p50 {:.3} ms, p99 {:.3} ms)",
            percentile(&self.wall, 0.5),
            percentile(&self.wall, 0.99),
            self.wall.last().copied().unwrap_or(0.0),
            percentile(&self.cpu, 0.5),
            percentile(&self.cpu, 0.99),
        )
    }
}

/// One line down in the focused pane.
fn j() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE))
}

/// Press `j` 2000 times, timing each frame drawn afterwards (the reducer is not timed).
fn scroll(
    state: &mut AppState,
    term: &mut Terminal<TestBackend>,
    draw: impl Fn(&AppState, &mut ratatui::Frame),
) -> Figures {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..2000 {
        update(state, j());
        let (start, start_cpu) = (Instant::now(), thread_cpu());
        let _ = term.draw(|f| draw(state, f));
        cpu.push((thread_cpu().saturating_sub(start_cpu)).as_secs_f64() * 1000.0);
        wall.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    Figures { wall, cpu }
}

#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.fetch_add(buf.len(), Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn counting_terminal() -> (Terminal<CrosstermBackend<Counter>>, Counter) {
    let counter = Counter::default();
    let backend = CrosstermBackend::new(counter.clone());
    let opts = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, W, H)),
    };
    match Terminal::with_options(backend, opts) {
        Ok(t) => (t, counter),
        Err(e) => panic!("terminal: {e}"),
    }
}

fn bytes_for(state: &mut AppState, msg: Msg) -> usize {
    let (mut term, counter) = counting_terminal();
    let _ = term.draw(|f| sitrep::tui::draw(state, f));
    counter.0.store(0, Ordering::Relaxed);
    update(state, msg);
    let _ = term.draw(|f| sitrep::tui::draw(state, f));
    counter.0.load(Ordering::Relaxed)
}

fn press(state: &mut AppState, keys: &str) {
    for ch in keys.chars() {
        let code = if ch == '\n' {
            KeyCode::Enter
        } else {
            KeyCode::Char(ch)
        };
        update(state, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
}

/// Search the 1M-line item as the event loop would run it: a frame per tick until the scan is
/// done. Reports the time to the last match, the longest frame (update + draw) meanwhile, and
/// `n` (update + draw) over the matches found.
fn search(state: &mut AppState, term: &mut Terminal<TestBackend>) {
    let started = Instant::now();
    press(state, "/served in 96ms\n");
    let key = started.elapsed();
    let mut longest = key;
    let mut frames = 0;
    while state.searching() && started.elapsed() < Duration::from_secs(120) {
        if let Some(wait) = state.tick_in() {
            std::thread::sleep(wait);
        }
        let t = Instant::now();
        let now = state.now_t;
        update(state, Msg::Clock(now));
        let _ = term.draw(|f| sitrep::tui::draw(state, f));
        longest = longest.max(t.elapsed());
        frames += 1;
    }
    let total = started.elapsed();
    let found = state.filter.as_ref().map_or(0, |f| f.rows.len());
    eprintln!(
        "search 1M lines (80 MB) for a 1-in-97 line: {found} matches, last found after {:.1} ms \
         over {frames} frames; enter took {:.3} ms; longest frame meanwhile {:.3} ms",
        total.as_secs_f64() * 1000.0,
        key.as_secs_f64() * 1000.0,
        longest.as_secs_f64() * 1000.0
    );
    let mut times = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        press(state, "n");
        let _ = term.draw(|f| sitrep::tui::draw(state, f));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "search-next (n, then a frame): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().copied().unwrap_or(0.0)
    );
}

fn bench(c: &mut Criterion) {
    let t0 = Instant::now();
    let mut state = big_session();
    eprintln!(
        "setup: {} events folded in {:.2}s",
        state.incident().events,
        t0.elapsed().as_secs_f64()
    );
    let mut term = match Terminal::new(TestBackend::new(W, H)) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };

    // Scrolling the 1M-line evidence one line per frame.
    let f = scroll(&mut state, &mut term, sitrep::tui::draw);
    eprintln!("frame 200x50, 100k events, 1M-line evidence, scrolling: {f}");
    // Scrolling the 100k-row timeline.
    state.focus = Pane::Timeline;
    state.timeline_sel = 50_000;
    let f = scroll(&mut state, &mut term, sitrep::tui::draw);
    let rows = state.incident().timeline.len();
    eprintln!("frame 200x50, timeline of {rows} rows, scrolling: {f}");
    // The timeline pane alone, to tell its share of the frame from the rest of the screen.
    let area = state.areas().timeline;
    let f = scroll(&mut state, &mut term, |s, f| {
        sitrep::tui::timeline::render(s, f, area)
    });
    eprintln!(
        "timeline pane alone ({}x{}), scrolling: {f}",
        area.width, area.height
    );

    // Bytes to the terminal when one line arrives.
    state.timeline_sel = 1;
    state.focus = Pane::Evidence;
    state.evidence.follow = true;
    let line = |n: usize| {
        Msg::Record(Box::new(Record {
            t: 2000.0 + n as f64,
            event: Event::EvidenceAppended {
                evidence_id: "big".into(),
                text: format!("2026-11-22T10:00:00Z WARN  new line {n}"),
            },
        }))
    };
    let following = bytes_for(&mut state, line(1));
    state.evidence.show(10);
    let elsewhere = bytes_for(&mut state, line(2));
    state.follow = true;
    state.focus = Pane::Timeline;
    let timeline = bytes_for(
        &mut state,
        Msg::Record(Box::new(Record {
            t: 3000.0,
            event: Event::Warning {
                message: "one more".into(),
            },
        })),
    );
    eprintln!("bytes per frame, one log line appended to the evidence being followed: {following}");
    eprintln!("bytes per frame, one log line appended to evidence scrolled elsewhere: {elsewhere}");
    eprintln!("bytes per frame, one timeline row while following: {timeline}");

    state.follow = false;
    state.timeline_sel = 1;
    state.focus = Pane::Evidence;
    state.evidence.show(500_000);
    search(&mut state, &mut term);
    state.filter = None;
    state.evidence.show(500_000);
    c.bench_function("frame_200x50_100k_events_1M_lines", |b| {
        b.iter(|| {
            update(&mut state, j());
            let _ = term.draw(|f| sitrep::tui::draw(&state, f));
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
