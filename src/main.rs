//! The sitrep binary: restores the terminal on panic, logs to a file, and hands over to `cli`.

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    install_panic_hook();
    // Held until exit so buffered log lines are written.
    let _log_guard = init_tracing();
    match sitrep::cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        // `sitrep sessions | head`: the reader has what it wanted; that is not an error.
        Err(e) if is_closed_stdout(&e) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("sitrep: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The error is a write to a pipe whose reader went away.
fn is_closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A panic inside the console would otherwise leave the terminal raw, in the alternate screen,
/// with no cursor; undo all three before the panic message is printed.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::terminal::disable_raw_mode();
        if std::io::stdout().is_terminal() {
            let _ = crossterm::execute!(
                std::io::stdout(),
                crossterm::terminal::LeaveAlternateScreen,
                crossterm::cursor::Show
            );
        }
        default(info);
    }));
}

/// Logs go to `<data dir>/logs/sitrep.log`, never to stdout or stderr: the console owns the terminal
/// and headless mode owns stdout. `SITREP_LOG` sets the filter (default `info`).
fn init_tracing() -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = sitrep::config::data_dir().join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    // The builder reports an unwritable directory as an error, where `rolling::never` would panic.
    let appender = tracing_appender::rolling::RollingFileAppender::builder()
        .rotation(tracing_appender::rolling::Rotation::NEVER)
        .filename_prefix("sitrep.log")
        .build(&dir)
        .ok()?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITREP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
