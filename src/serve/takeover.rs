//! The replica's side of the shared store that runs in the background: decisions other replicas
//! relayed for this replica's sessions, the lease, taking over a dead replica's sessions, and
//! bringing to the store what a kill kept from reaching it.

use super::*;

/// How often decisions are fetched when no notification came (the fallback to `LISTEN`).
const DECISION_POLL: Duration = Duration::from_secs(1);

/// Hands each decision relayed through the store to the session it is for, when woken by a
/// notification or every [`DECISION_POLL`].
pub(super) async fn take_decisions(state: AppState, wake: Arc<tokio::sync::Notify>) {
    let Some(store) = state.store.clone() else {
        return;
    };
    loop {
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(DECISION_POLL) => {}
        }
        match store.take_decisions().await {
            Ok(list) => {
                let sessions = lock(&state.sessions);
                for (id, decision) in list {
                    match sessions.get(&id).filter(|r| r.outcome.is_none()) {
                        Some(r) => {
                            let _ = r.decisions.send(decision);
                        }
                        None => {
                            tracing::warn!("a relayed decision for {id}, which no longer runs here")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!("cannot fetch relayed decisions: {e}"),
        }
    }
}

/// Renews this replica's lease every third of it, and takes over the sessions of any replica
/// whose lease lapsed.
pub(super) async fn keep_lease(state: AppState) {
    let Some(store) = state.store.clone() else {
        return;
    };
    let every = (store.lease / 3).max(Duration::from_millis(500));
    loop {
        tokio::time::sleep(every).await;
        if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Err(e) = store.renew().await {
            tracing::warn!("cannot renew the lease: {e}");
            continue;
        }
        let lapsed = match store.lapsed().await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cannot read the leases: {e}");
                continue;
            }
        };
        for dead in lapsed.into_iter().filter(|r| *r != store.replica) {
            match store.take_over(&dead).await {
                Ok(orphans) => {
                    if !orphans.is_empty() {
                        eprintln!(
                            "sitrep serve: replica {dead} stopped renewing its lease: {} session(s) marked interrupted",
                            orphans.len()
                        );
                    }
                    for orphan in orphans {
                        adopt(&state, &store, orphan).await;
                    }
                }
                Err(e) => tracing::warn!("cannot take over replica {dead}: {e}"),
            }
        }
    }
}

/// Investigates again the still-firing alerts of a session a dead replica ran, as a new session
/// here that names the interrupted one.
async fn adopt(state: &AppState, store: &Arc<store::Store>, orphan: store::Orphan) {
    let Ok(mut entry) = serde_json::from_str::<JournalEntry>(&orphan.trigger) else {
        tracing::warn!(
            "the interrupted session {} has no readable trigger",
            orphan.id
        );
        return;
    };
    // Only alerts are investigated again, and only those no resolve arrived for.
    let Some(payload) = entry.payload.as_mut() else {
        return;
    };
    payload
        .alerts
        .retain(|a| orphan.firing.contains(&alert_fingerprint(a)));
    if payload.alerts.is_empty() {
        return;
    }
    let Some(trigger) = entry.trigger() else {
        return;
    };
    let title = entry.title.clone();
    let path = session::unique_session_path_in(&state.sessions_dir, chrono::Utc::now(), &title);
    let id = session_id(&path);
    let fingerprints = orphan.firing.clone();
    let new_entry = entry_for(
        &id,
        &entry.group_key,
        &fingerprints,
        &title,
        &trigger,
        false,
    );
    let text = serde_json::to_string(&new_entry).unwrap_or_default();
    if let Err(e) = store
        .adopt(&id, &orphan.id, &title, &text, &fingerprints)
        .await
    {
        tracing::warn!("cannot take over {}: {e}", orphan.id);
        return;
    }
    {
        let mut core = lock(&state.core);
        core.claims.record(&entry.group_key, &fingerprints, &id);
        core.live(&id, &entry.group_key, &trigger);
        core.queue.push_back(Queued {
            id: id.clone(),
            path,
            title,
            trigger,
        });
    }
    let (st, new_id, old) = (state.clone(), id.clone(), orphan.id.clone());
    let _ = off_thread(move || {
        if let Err(e) = journal_append(&st.sessions_dir, &new_entry) {
            tracing::warn!("cannot record {new_id} in the journal: {e}");
        }
        pump(&st);
        if let Some(r) = lock(&st.sessions).get(&new_id) {
            let _ = r.commands.send(Command::Warning {
                message: format!(
                    "takes over session {old}, interrupted when its replica stopped renewing its lease"
                ),
            });
        }
    })
    .await;
}

/// Brings to the store the records of sessions that ran here before a stop which never reached
/// it (a kill takes the records still queued for it), from their files as the stop left them.
pub(super) async fn reconcile(store: Arc<store::Store>, ran: Vec<Ran>) {
    let (mut added, mut sessions) = (0, 0);
    for session in ran {
        let read = tokio::task::spawn_blocking(move || {
            let lines = session.lines();
            (session, lines)
        })
        .await;
        let Ok((session, lines)) = read else {
            continue;
        };
        let lines = match lines {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", session.path.display());
                continue;
            }
        };
        match store.reconcile(&session.id, lines, session.outcome).await {
            Ok(0) => {}
            Ok(n) => {
                added += n;
                sessions += 1;
            }
            Err(e) => tracing::warn!("cannot bring {} to the store: {e}", session.id),
        }
    }
    if added > 0 {
        eprintln!(
            "sitrep serve: {added} record(s) of {sessions} session(s) that had not reached the store before the stop were added to it"
        );
    }
}
