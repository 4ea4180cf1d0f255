//! The inbox screen's loop: polled alerts in, the chosen investigation out, and back.

use super::*;

/// Open the alert inbox: what is firing in every configured source, as `updates` bring it.
/// `start` begins an investigation of the chosen alerts (with the operator's proposed actions) and
/// `reopen` opens a session an alert already has; either runs in the same terminal session, and
/// quitting it comes back here.
pub async fn run_inbox<F, R>(
    mut snapshots: UnboundedReceiver<crate::inbox::watch::Update>,
    config: crate::config::Inbox,
    user: String,
    opts: UiOptions,
    start: F,
    reopen: R,
) -> anyhow::Result<()>
where
    F: Fn(crate::model::WebhookPayload, Vec<crate::model::Action>) -> anyhow::Result<Link>,
    R: Fn(&std::path::Path) -> anyhow::Result<Reopened>,
{
    use inbox_state::{InboxChoice, InboxMsg, InboxState, update};
    let base = opts.build_state()?;
    let mut state = InboxState::new(
        base.theme.clone(),
        base.keymap.clone(),
        config.group_by.clone(),
        user,
    );
    let mut screen = Screen::enter()?;
    async {
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
                    let link = match start(*payload, proposals) {
                        Ok(l) => l,
                        Err(e) => {
                            state.status = Some(format!("cannot start the investigation: {e:#}"));
                            continue;
                        }
                    };
                    if let Some(path) = &link.session_path {
                        for fp in fingerprints {
                            state.sessions.insert(fp, path.clone());
                        }
                    }
                    live_on(&mut screen, opts.build_state()?, link).await?;
                }
                InboxChoice::Reopen(path) => match reopen(&path) {
                    // Still running elsewhere: followed live.
                    Ok(Reopened::Live(link)) => {
                        let mut app = opts.build_state()?;
                        app.session_path = Some(path.clone());
                        live_on(&mut screen, app, link).await?;
                    }
                    Ok(Reopened::Ended { id, records }) => {
                        let mut app =
                            AppState::new_replay(state.theme.clone(), state.keymap.clone(), records);
                        app.session_id = Some(id);
                        app.session_path = Some(path);
                        app.save_report = opts.save_report.clone();
                        event_loop(&mut screen, app, None, None, None).await?;
                    }
                    Err(e) => state.status = Some(format!("cannot open the session: {e}")),
                },
            }
        }
    }
    .await
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
