//! The terminal console: event loop, keymap, theme and one file per view.

pub mod app;
pub use inbox_run::run_inbox;
pub mod approval;
pub mod approval_state;
pub mod chart;
pub mod chat;
pub mod chooser;
pub mod chooser_state;
pub mod colour;
pub mod details;
pub mod evidence;
mod export;
pub mod header;
pub mod help;
pub mod highlight;
pub mod inbox;
mod inbox_rows;
mod inbox_run;
pub mod inbox_state;
pub mod index;
pub mod keymap;
pub mod layout;
pub mod link;
pub mod list_screen;
pub mod palette;
pub mod palette_state;
pub mod reducer;
pub mod replay_bar;
pub mod replay_state;
pub mod report;
pub mod sanitize;
pub mod screen;
pub mod scroll;
pub mod search;
pub mod search_job;
pub mod seen_before;
pub mod state;
pub mod statusbar;
pub mod terminal;
pub mod text;
pub mod theme;
pub mod timeline;

use crate::model::{Command, Record};
use app::{AppState, Effect, Msg};
use crossterm::event::{Event as TermEvent, KeyEventKind};
use export::export_report;
pub use export::report_path;
use futures::StreamExt;
pub use link::{Carriers, Link, Reopened, SaveReport};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders};
pub use screen::draw;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use terminal::{Screen, draw_frame, draw_with};
use theme::{Role, Theme};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// At most one frame per this long, however fast events arrive.
const FRAME: Duration = Duration::from_millis(16);
/// Most wall time one tick accounts for, so a suspended process does not leap on waking.
const MAX_TICK: Duration = Duration::from_secs(5);

/// How the console is set up; the CLI fills it from flags and config.toml.
#[derive(Clone, Default)]
pub struct UiOptions {
    /// `--theme NAME|PATH` (or `[ui] theme`); None or "default" lets NO_COLOR pick mono.
    pub theme: Option<String>,
    /// `[keys]`: action name -> key(s).
    pub keys: BTreeMap<String, String>,
    pub read_only: bool,
    pub session_id: Option<String>,
    /// Override the NO_COLOR environment check (tests); None reads the environment.
    pub no_color: Option<bool>,
    /// A paced demo: drops the pacing so the rest answers at once (the skip-ahead key).
    pub skip_ahead: Option<state::SkipAhead>,
    /// Writes `:export`'s report; without it the console says it cannot.
    pub save_report: Option<SaveReport>,
}

impl UiOptions {
    /// Theme and keymap from the options, as clear errors when they are broken.
    pub fn build_state(&self) -> anyhow::Result<AppState> {
        let no_color = self
            .no_color
            .unwrap_or_else(|| std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()));
        let theme =
            Theme::resolve(self.theme.as_deref(), no_color)?.for_terminal(theme::truecolor_env());
        let keymap = keymap::Keymap::with_overrides(&self.keys)?;
        let mut state = AppState::new(theme, keymap);
        state.read_only = self.read_only;
        state.session_id = self.session_id.clone();
        state.skip_ahead = self.skip_ahead.clone();
        state.save_report = self.save_report.clone();
        Ok(state)
    }
}

/// `mm:ss` (or `h:mm:ss`) since the session started.
pub fn fmt_t(t: f64) -> String {
    let s = if t.is_finite() { t.max(0.0) as u64 } else { 0 };
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

pub(crate) fn pane_block<'a>(th: &Theme, title: &str, focused: bool) -> Block<'a> {
    let (border, bt) = if focused {
        (th.get(Role::BorderFocus), BorderType::Thick)
    } else {
        (th.get(Role::Border), BorderType::Plain)
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(bt)
        .border_style(border)
        .title(Line::styled(
            title.to_string(),
            if focused {
                th.get(Role::BorderFocus)
            } else {
                th.get(Role::Title)
            },
        ))
}

pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Run the console over a session until the operator quits or a signal arrives.
pub async fn run_live(link: Link, opts: UiOptions) -> anyhow::Result<()> {
    let state = opts.build_state()?;
    let mut screen = Screen::enter()?;
    live_on(&mut screen, state, link).await
}

async fn live_on(screen: &mut Screen, mut state: AppState, link: Link) -> anyhow::Result<()> {
    let Link {
        records,
        commands,
        finished,
        session_path,
        carriers,
    } = link;
    if session_path.is_some() {
        state.session_path = session_path;
    }
    let result = event_loop(screen, state, Some(records), Some(commands), finished).await;
    drop(carriers);
    result
}

/// Open the console on a scenario chooser; the chosen scenario is handed to `start` and its
/// investigation runs in the same terminal session. Quitting the chooser starts nothing.
pub async fn run_demo_chooser<F>(
    entries: Vec<chooser_state::Entry>,
    opts: UiOptions,
    start: F,
) -> anyhow::Result<()>
where
    F: FnOnce(&str) -> anyhow::Result<Link>,
{
    if entries.is_empty() {
        anyhow::bail!("this build has no demo scenarios");
    }
    let state = opts.build_state()?;
    let chooser =
        chooser_state::ChooserState::new(state.theme.clone(), state.keymap.clone(), entries);
    let mut screen = Screen::enter()?;
    let Some(name) = choose(&mut screen, chooser).await? else {
        return Ok(());
    };
    let link = start(&name)?;
    live_on(&mut screen, state, link).await
}

/// The chooser's loop: keys and resizes in, a frame after each; the chosen name out.
async fn choose(
    screen: &mut Screen,
    mut state: chooser_state::ChooserState,
) -> anyhow::Result<Option<String>> {
    use chooser_state::{Choice, ChooserMsg, update};
    let size = screen.terminal.size()?;
    let _ = update(&mut state, ChooserMsg::Resize(size.width, size.height));
    loop {
        draw_with(&mut screen.terminal, |f| chooser::draw(&state, f))?;
        let msg = tokio::select! {
            biased;
            _ = screen.signals.recv() => return Ok(None),
            ev = screen.events.next() => match ev {
                Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press => ChooserMsg::Key(k),
                Some(Ok(TermEvent::Resize(w, h))) => ChooserMsg::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(anyhow::Error::new(e).context("reading the terminal")),
                None => return Ok(None),
            },
        };
        match update(&mut state, msg) {
            Some(Choice::Start(name)) => return Ok(Some(name)),
            Some(Choice::Quit) => return Ok(None),
            None => {}
        }
    }
}

/// Replay a recorded session: the same views, read-only, with playback controls.
pub async fn run_replay(log: crate::session::OpenedReplay, opts: UiOptions) -> anyhow::Result<()> {
    let mut state = opts.build_state()?;
    let id = log.header.id.clone();
    let mut state_r = AppState::new_replay(state.theme.clone(), state.keymap.clone(), log.replay);
    state_r.session_id = state.session_id.take().or(Some(id));
    state_r.save_report = state.save_report.clone();
    if let Some(tear) = &log.tear {
        state_r.set_status(
            format!(
                "the session file is damaged at line {}: {}; replaying what came before",
                tear.line, tear.reason
            ),
            true,
        );
    }
    if let Some(r) = &mut state_r.replay {
        r.clock.resume();
    }
    run_loop(state_r, None, None, None).await
}

type TaskResult = tokio::task::JoinHandle<Result<String, String>>;

/// The event loop: terminal events, records, the agent's end, ticks and signals in; frames out.
/// Frames are drawn only when something changed, at most one per [`FRAME`].
pub async fn run_loop(
    state: AppState,
    records: Option<UnboundedReceiver<Record>>,
    commands: Option<UnboundedSender<Command>>,
    task: Option<TaskResult>,
) -> anyhow::Result<()> {
    let mut screen = Screen::enter()?;
    event_loop(&mut screen, state, records, commands, task).await
}

async fn event_loop(
    screen: &mut Screen,
    mut state: AppState,
    mut records: Option<UnboundedReceiver<Record>>,
    commands: Option<UnboundedSender<Command>>,
    mut task: Option<TaskResult>,
) -> anyhow::Result<()> {
    let Screen {
        terminal,
        events,
        signals,
        ..
    } = screen;
    let size = terminal.size()?;
    update_effects(&mut state, Msg::Resize(size.width, size.height));
    let (wake_tx, mut wake_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // Reports are written off the UI thread; how it went comes back here as a status line.
    let (saved_tx, mut saved_rx) = tokio::sync::mpsc::unbounded_channel::<(String, bool)>();
    highlight::preload(move || {
        let _ = wake_tx.send(());
    });
    let mut last_tick = Instant::now();
    let mut live_clock = (0.0f64, Instant::now());
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    let mut quit = false;
    let mut interrupted: Option<&'static str> = None;
    let mut result = Ok(());
    while !quit {
        let due = tokio::time::Instant::from_std(last_draw + FRAME);
        // Ticks come only when the screen will change: the next replayed record, the next
        // second on a clock shown, never while idle.
        let tick_in = state.tick_in();
        let tick_at = tokio::time::Instant::from_std(
            last_tick + tick_in.unwrap_or(MAX_TICK).clamp(FRAME, MAX_TICK),
        );
        let mut effects = Vec::new();
        tokio::select! {
            biased;
            sig = signals.recv() => {
                interrupted = Some(sig);
                break;
            }
            _ = tokio::time::sleep_until(due), if dirty => {
                if let Err(e) = draw_frame(terminal, &state) {
                    result = Err(e);
                    break;
                }
                dirty = false;
                last_draw = Instant::now();
                continue;
            }
            ev = events.next() => match ev {
                Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press => {
                    if state.is_replay() && tick_in.is_some() {
                        // Bring a playing replay up to now so the key acts at the moment shown.
                        let now = Instant::now();
                        let dt = now.duration_since(last_tick).min(MAX_TICK).as_secs_f64();
                        last_tick = now;
                        let _ = app::update(&mut state, Msg::ReplayTick(dt));
                    }
                    effects = app::update(&mut state, Msg::Key(k));
                }
                Some(Ok(TermEvent::Resize(w, h))) => effects = app::update(&mut state, Msg::Resize(w, h)),
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    result = Err(anyhow::Error::new(e).context("reading the terminal"));
                    break;
                }
                None => break,
            },
            rec = recv(&mut records) => match rec {
                Some(r) => {
                    live_clock = (r.t, Instant::now());
                    effects = app::update(&mut state, Msg::Record(Box::new(r)));
                    // Fold a burst in one go; the frame afterwards shows all of it.
                    if let Some(rx) = &mut records {
                        for _ in 0..4096 {
                            match rx.try_recv() {
                                Ok(r) => {
                                    live_clock = (r.t, Instant::now());
                                    effects.extend(app::update(&mut state, Msg::Record(Box::new(r))));
                                }
                                Err(_) => break,
                            }
                        }
                    }
                }
                None => records = None,
            },
            res = join(&mut task) => {
                task = None;
                effects = app::update(&mut state, Msg::AgentFinished(res.err()));
            }
            Some(()) = wake_rx.recv() => effects = app::update(&mut state, Msg::SyntaxReady),
            Some((status, error)) = saved_rx.recv() => state.set_status(status, error),
            _ = tokio::time::sleep_until(tick_at), if tick_in.is_some() => {
                let now = Instant::now();
                let dt = now.duration_since(last_tick).min(MAX_TICK).as_secs_f64();
                last_tick = now;
                let msg = if state.is_replay() { Msg::ReplayTick(dt) } else { Msg::Clock(live_clock.0 + live_clock.1.elapsed().as_secs_f64()) };
                effects = app::update(&mut state, msg);
            }
        }
        if tick_in.is_none() {
            // The clock was stopped while waiting: whatever starts it now starts from now.
            last_tick = Instant::now();
        }
        dirty = true;
        for effect in effects {
            match effect {
                Effect::Quit => quit = true,
                Effect::SendCommand(c) => match &commands {
                    Some(tx) if tx.send(c).is_ok() => {}
                    _ => {
                        state.set_status("the investigation has ended; nothing is listening", true)
                    }
                },
                Effect::ExportReport => export_report(&mut state, &saved_tx),
                Effect::SkipAhead => match &state.skip_ahead {
                    Some(skip) if !state.agent_done => {
                        skip();
                        state.skip_ahead = None;
                        state.set_status(
                            "skipping ahead: the remaining calls answer at once",
                            false,
                        );
                    }
                    _ => state.set_status("nothing to skip: calls already answer at once", false),
                },
            }
        }
    }
    if let (Some(task), Some(tx)) = (task, &commands) {
        // Leaving mid-investigation: ask the agent to stop so the session file ends cleanly.
        // A signal ends it as interrupted, deciding nothing that is pending (an SSH drop).
        let _ = tx.send(match interrupted {
            Some(sig) => Command::Interrupt { reason: sig.into() },
            None => Command::Cancel,
        });
        let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
    }
    result
}

async fn recv(rx: &mut Option<UnboundedReceiver<Record>>) -> Option<Record> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn join(task: &mut Option<TaskResult>) -> Result<String, String> {
    match task {
        Some(t) => t.await.unwrap_or_else(|e| Err(e.to_string())),
        None => std::future::pending().await,
    }
}

fn update_effects(state: &mut AppState, msg: Msg) {
    let _ = app::update(state, msg);
}
