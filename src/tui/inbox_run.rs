//! The inbox screen's loop: polled alerts in, the chosen investigation out, and back.

use super::*;

/// Open the alert inbox: what is firing in every configured source, polled in the background.
/// `start` begins an investigation of the chosen alerts (with the operator's proposed actions); it
/// runs in the same terminal session, and quitting it comes back here.
pub async fn run_inbox<F>(
    sources: crate::inbox::Sources,
    config: crate::config::Inbox,
    opts: UiOptions,
    start: F,
) -> anyhow::Result<()>
where
    F: Fn(
        crate::model::WebhookPayload,
        Vec<crate::model::Action>,
    ) -> anyhow::Result<crate::agent::AgentHandle>,
{
    use inbox_state::{InboxChoice, InboxMsg, InboxState, update};
    let base = opts.build_state()?;
    let mut state = InboxState::new(
        base.theme.clone(),
        base.keymap.clone(),
        config.group_by.clone(),
        crate::agent::approve::current_user(),
    );
    let (tx, mut snapshots) = tokio::sync::mpsc::unbounded_channel();
    let backoff = crate::inbox::Backoff {
        interval: Duration::from_secs(config.poll_secs.max(1)),
        max: Duration::from_secs(300),
    };
    let poller = tokio::spawn(async move {
        let mut poller = crate::inbox::sources::Poller::new(sources, backoff);
        let dir = crate::session::sessions_dir();
        loop {
            let snap = poller.poll_due().await;
            // Sessions others run (`sitrep serve`) or ran, by the alert they started from.
            let dir = dir.clone();
            let sessions =
                tokio::task::spawn_blocking(move || crate::inbox::sessions::by_fingerprint(&dir))
                    .await
                    .unwrap_or_default();
            if tx.send((snap, chrono::Utc::now(), sessions)).is_err() {
                break;
            }
            tokio::time::sleep_until(tokio::time::Instant::from_std(poller.next_due())).await;
        }
    });
    let mut screen = Screen::enter()?;
    let result = async {
        loop {
            let size = screen.terminal.size()?;
            let _ = update(&mut state, InboxMsg::Resize(size.width, size.height));
            let choice = loop {
                draw_with(&mut screen.terminal, |f| inbox::draw(&state, f))?;
                let msg = tokio::select! {
                    biased;
                    _ = screen.signals.recv() => break InboxChoice::Quit,
                    Some((snap, now, sessions)) = snapshots.recv() => {
                        for (fp, found) in sessions {
                            state.sessions.entry(fp).or_insert(found.path);
                        }
                        let new = state.apply(snap, now);
                        announce(&config, new, state.firing());
                        continue;
                    }
                    ev = screen.events.next() => match ev {
                        Some(Ok(TermEvent::Key(k))) if k.kind == KeyEventKind::Press => InboxMsg::Key(k),
                        Some(Ok(TermEvent::Resize(w, h))) => InboxMsg::Resize(w, h),
                        Some(Ok(_)) => continue,
                        Some(Err(e)) => return Err(anyhow::Error::new(e).context("reading the terminal")),
                        None => break InboxChoice::Quit,
                    },
                };
                if let Some(choice) = update(&mut state, msg) {
                    break choice;
                }
            };
            match choice {
                InboxChoice::Quit => return Ok(()),
                InboxChoice::Investigate {
                    payload,
                    proposals,
                    fingerprints,
                } => {
                    let handle = match start(*payload, proposals) {
                        Ok(h) => h,
                        Err(e) => {
                            state.status = Some(format!("cannot start the investigation: {e:#}"));
                            continue;
                        }
                    };
                    if let Some(path) = &handle.session_path {
                        for fp in fingerprints {
                            state.sessions.insert(fp, path.clone());
                        }
                    }
                    live_on(&mut screen, opts.build_state()?, handle).await?;
                }
                InboxChoice::Reopen(path) => match crate::session::read_file(&path) {
                    // Still running elsewhere: follow it live; approvals go through its approvals directory.
                    Ok(log)
                        if !log
                            .records
                            .iter()
                            .any(|r| matches!(r.event, crate::model::Event::SessionEnded { .. })) =>
                    {
                        let mut app = opts.build_state()?;
                        app.session_path = Some(path.clone());
                        let (records_tx, records) = tokio::sync::mpsc::unbounded_channel();
                        let (commands, commands_rx) = tokio::sync::mpsc::unbounded_channel();
                        let tailer =
                            follow::tail(path.clone(), records_tx.clone(), Duration::from_millis(200));
                        let forwarder =
                            tokio::spawn(follow::forward(commands_rx, path, None, records_tx));
                        let r = event_loop(&mut screen, app, Some(records), Some(commands), None).await;
                        tailer.abort();
                        forwarder.abort();
                        r?;
                    }
                    Ok(log) => {
                        let mut app = AppState::new_replay(
                            state.theme.clone(),
                            state.keymap.clone(),
                            log.records,
                        );
                        app.session_id = Some(log.header.id.clone());
                        app.session_path = Some(path);
                        event_loop(&mut screen, app, None, None, None).await?;
                    }
                    Err(e) => state.status = Some(format!("cannot open the session: {e}")),
                },
            }
        }
    }
    .await;
    poller.abort();
    result
}

/// New firing alerts ring the bell; the terminal title carries the firing count (each can be turned off).
fn announce(config: &crate::config::Inbox, new: usize, firing: usize) {
    use std::io::Write;
    let mut out = std::io::stdout();
    if config.title {
        let _ = crossterm::execute!(
            out,
            crossterm::terminal::SetTitle(format!("sitrep: {firing} firing"))
        );
    }
    if config.bell && new > 0 {
        let _ = out.write_all(b"\x07");
        let _ = out.flush();
    }
}
