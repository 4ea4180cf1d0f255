//! The terminal itself: raw mode and the alternate screen restored on any exit (panic and
//! signal included), synchronized frames, and the signals that end a console session.

use super::{AppState, draw};
use anyhow::Context;
use crossterm::event::EventStream;
use ratatui::{Frame, Terminal};
use std::io::IsTerminal;

/// Restores the terminal on drop: normal exit, error, unwinding panic or signal.
pub(super) struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> anyhow::Result<TerminalGuard> {
        if !std::io::stdout().is_terminal() {
            anyhow::bail!(
                "the console needs a terminal on stdout (use --headless to stream events instead)"
            );
        }
        crossterm::terminal::enable_raw_mode().context("cannot switch the terminal to raw mode")?;
        let guard = TerminalGuard;
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::cursor::Hide
        )
        .context("cannot enter the alternate screen")?;
        install_panic_hook();
        Ok(guard)
    }
}

fn restore_terminal() {
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::EndSynchronizedUpdate,
        crossterm::terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let ui_thread = std::thread::current().id();
    ONCE.call_once(move || {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Restore before the message prints, or it lands on the alternate screen and vanishes.
            if std::thread::current().id() == ui_thread {
                restore_terminal();
            }
            prev(info);
        }));
    });
}

pub(super) type Term = Terminal<ratatui::backend::CrosstermBackend<std::io::Stdout>>;

fn new_terminal() -> anyhow::Result<Term> {
    Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))
        .context("cannot open the terminal")
}

pub(super) fn draw_frame(terminal: &mut Term, state: &AppState) -> anyhow::Result<()> {
    draw_with(terminal, |f| draw(state, f))
}

pub(super) fn draw_with(
    terminal: &mut Term,
    render: impl FnOnce(&mut Frame),
) -> anyhow::Result<()> {
    use std::io::Write;
    // One synchronized update per frame: terminals that support it show no half-drawn screens.
    crossterm::queue!(
        terminal.backend_mut(),
        crossterm::terminal::BeginSynchronizedUpdate
    )?;
    terminal.draw(render)?;
    crossterm::queue!(
        terminal.backend_mut(),
        crossterm::terminal::EndSynchronizedUpdate
    )?;
    terminal.backend_mut().flush()?;
    Ok(())
}

/// The terminal for one console session: raw mode and the alternate screen until dropped, with
/// one input stream and the signal listeners, so successive views share it without flicker.
pub(super) struct Screen {
    pub(super) terminal: Term,
    pub(super) events: EventStream,
    pub(super) signals: Signals,
    // Dropped last: the terminal is restored after everything drawing on it is gone.
    _guard: TerminalGuard,
}

impl Screen {
    pub(super) fn enter() -> anyhow::Result<Screen> {
        let signals = Signals::listen()?;
        let guard = TerminalGuard::enter()?;
        Ok(Screen {
            terminal: new_terminal()?,
            events: EventStream::new(),
            signals,
            _guard: guard,
        })
    }
}

/// The signals that end the console: the terminal is restored and the session ends as
/// `interrupted` instead of the process dying in the alternate screen with no end record.
pub(super) struct Signals {
    int: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        let on = |kind: SignalKind, name: &str| {
            signal(kind).with_context(|| format!("cannot listen for {name}"))
        };
        Ok(Signals {
            int: on(SignalKind::interrupt(), "SIGINT")?,
            quit: on(SignalKind::quit(), "SIGQUIT")?,
            term: on(SignalKind::terminate(), "SIGTERM")?,
            hup: on(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// The name of the next signal received.
    pub(super) async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.quit.recv() => "SIGQUIT",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}
