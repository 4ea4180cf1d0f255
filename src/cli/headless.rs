//! Driving an investigation with no terminal UI: records out as NDJSON lines, commands in
//! from stdin, signals ending it as interrupted.

use super::*;

/// One record as one NDJSON line. Returns false when the reader went away (a closed pipe).
pub(super) fn write_record(out: &mut impl Write, record: &Record) -> anyhow::Result<bool> {
    let mut line = escape_json_controls(&serde_json::to_string(record)?).into_owned();
    line.push('\n');
    let line = line.into_bytes();
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Drive an investigation without a terminal UI: every record goes to stdout as one NDJSON line;
/// stdin is read as NDJSON `Command`s (a bad line is reported on stderr and skipped).
pub async fn run_headless(handle: AgentHandle) -> anyhow::Result<Outcome> {
    let AgentHandle {
        mut records,
        commands,
        task,
        ..
    } = handle;
    let signals = end_on_signals(commands.clone())?;
    // Blocking stdin reads live on their own thread so they never hold up the records.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for (n, line) in stdin.lock().lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("sitrep: stdin: {e}");
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match parse_command(&line) {
                Ok(cmd) => {
                    if commands.send(cmd).is_err() {
                        break;
                    }
                }
                // The message can quote the line, which may hold anything the operator pasted.
                Err(e) => eprintln!(
                    "sitrep: stdin line {}: {}",
                    n + 1,
                    sanitize(&crate::policy::redact::Redactor::new().redact(&e))
                ),
            }
        }
    });
    let stdout = std::io::stdout();
    let mut reader_gone = false;
    while let Some(record) = records.recv().await {
        if !reader_gone {
            let mut out = stdout.lock();
            reader_gone = !write_record(&mut out, &record)?;
        }
    }
    signals.abort();
    task.await.context("the investigation task panicked")?
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT (ctrl-c, a service stop, an SSH drop) end a headless run
/// as `interrupted`, its end record written and nothing pending decided, instead of killing the
/// process mid-session. Later signals are absorbed while it ends.
pub(super) fn end_on_signals(
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let on = |kind: SignalKind, name: &str| {
        signal(kind).with_context(|| format!("cannot listen for {name}"))
    };
    let mut int = on(SignalKind::interrupt(), "SIGINT")?;
    let mut term = on(SignalKind::terminate(), "SIGTERM")?;
    let mut hup = on(SignalKind::hangup(), "SIGHUP")?;
    let mut quit = on(SignalKind::quit(), "SIGQUIT")?;
    Ok(tokio::spawn(async move {
        let mut first = true;
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
                _ = hup.recv() => "SIGHUP",
                _ = quit.recv() => "SIGQUIT",
            };
            if std::mem::take(&mut first) {
                eprintln!("sitrep: {name}: ending the session as interrupted");
                let _ = commands.send(Command::Interrupt {
                    reason: name.into(),
                });
            }
        }
    }))
}

/// One NDJSON command line, with a message that says what a command looks like.
pub fn parse_command(line: &str) -> Result<Command, String> {
    serde_json::from_str::<Command>(line).map_err(|e| {
        format!(
            "not a command ({e}); expected e.g. {{\"type\":\"approve\",\"action_id\":\"a1\"}}, \
             {{\"type\":\"deny\",\"action_id\":\"a1\",\"reason\":\"...\"}}, \
             {{\"type\":\"approve_credential\",\"ref\":\"op://...\"}}, \
             {{\"type\":\"chat\",\"text\":\"...\"}} or {{\"type\":\"cancel\"}}"
        )
    })
}
