//! Starting an admitted investigation on the investigations runtime and watching it to its end.

use super::*;

/// Starts an investigation of `trigger` writing `path` (its slot already taken), registers it,
/// and drains its records in the background; when it ends it leaves memory and frees its slot.
/// No lock is held while the starter runs.
pub(super) fn start(
    state: &AppState,
    id: &str,
    path: PathBuf,
    title: &str,
    trigger: Trigger,
) -> anyhow::Result<()> {
    // The investigation's tasks and its watcher go on the same runtime, which is not renewed
    // while they are being placed (nor, by its count of tasks, while any of them runs).
    state
        .investigations
        .with(|rt| start_on(state, rt, id, path, title, trigger))
        .unwrap_or_else(|| Err(anyhow::anyhow!("the server is shutting down")))
}

pub(super) fn start_on(
    state: &AppState,
    rt: &tokio::runtime::Handle,
    id: &str,
    path: PathBuf,
    title: &str,
    trigger: Trigger,
) -> anyhow::Result<()> {
    let handle = {
        let _on = rt.enter();
        (state.starter)(trigger, path.clone())?
    };
    let AgentHandle {
        mut records,
        commands,
        attributed,
        task,
        ..
    } = handle;
    let commands_for_slack = commands.clone();
    let session_file = path.clone();
    lock(&state.sessions).insert(
        id.to_string(),
        Running {
            path,
            title: title.to_string(),
            commands,
            decisions: attributed,
            outcome: None,
        },
    );
    let shared = state.clone();
    let key = id.to_string();
    // With a store, every record goes there too (the header first), so any replica shows it.
    let store = state.store.clone();
    if let Some(store) = &store {
        let header = session::header(id, chrono::Utc::now(), title);
        if let Ok(line) = serde_json::to_string(&header) {
            store.append(id, 0, line);
        }
    }
    let watcher = rt.spawn(async move {
        // The session file is written by the investigation itself; the records only need draining.
        let mut watch = slack_watch(&shared, &key, &commands_for_slack);
        let drain = async {
            let mut seq = 0;
            while let Some(r) = records.recv().await {
                if let Some(w) = watch.as_mut() {
                    w.observe(&r.event);
                }
                if let Some(store) = &store
                    && let Ok(line) = serde_json::to_string(&r)
                {
                    seq += 1;
                    store.append(&key, seq, line);
                }
            }
        };
        let (_, result) = tokio::join!(drain, task);
        if let Some(w) = watch {
            w.ended(session_file.clone(), append_warning(session_file));
        }
        let outcome = match result {
            Ok(Ok(o)) => Some(o),
            Ok(Err(e)) => {
                tracing::warn!("investigation {key} failed: {e:#}");
                None
            }
            Err(e) => {
                tracing::warn!("investigation {key} panicked: {e}");
                None
            }
        };
        if let Some(store) = &shared.store
            && let Err(e) = store.ended(&key, outcome).await
        {
            tracing::warn!("cannot record the end of {key} in the store: {e}");
        }
        lock(&shared.sessions).remove(&key);
        let idle = {
            let mut core = lock(&shared.core);
            core.ended(&key);
            core.running = core.running.saturating_sub(1);
            core.running == 0 && core.queue.is_empty()
        };
        let pumping = shared.clone();
        let _ = off_thread(move || pump(&pumping)).await;
        if idle {
            release_memory();
        }
    });
    let mut tasks = lock(&state.tasks);
    tasks.retain(|t| !t.is_finished());
    tasks.push(watcher);
    Ok(())
}

/// The Slack watch of a session this server runs: its approval message when a high or critical
/// action waits; a message that cannot be sent is a warning in the session.
pub(super) fn slack_watch(
    state: &AppState,
    id: &str,
    commands: &mpsc::UnboundedSender<Command>,
) -> Option<crate::notify::Watch> {
    let slack = state.slack.as_ref()?;
    let commands = commands.clone();
    Some(slack.watch(
        id,
        Arc::new(move |message| {
            let _ = commands.send(Command::Warning { message });
        }),
    ))
}

/// Records a warning in a session that has ended: appended after its end record (readers allow
/// that), as nothing else writes the file any more.
pub(super) fn append_warning(path: PathBuf) -> crate::notify::slack::OnFailure {
    Box::new(move |message| {
        let write = || -> anyhow::Result<()> {
            use std::io::Write;
            let t = session::read_tail(&path)?.duration;
            let record = crate::model::Record {
                t,
                event: crate::model::Event::Warning { message },
            };
            let mut line = serde_json::to_vec(&record)?;
            line.push(b'\n');
            let mut file = std::fs::OpenOptions::new().append(true).open(&path)?;
            file.write_all(&line)?;
            file.sync_data()?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::warn!("cannot record a warning in {}: {e:#}", path.display());
        }
    })
}
