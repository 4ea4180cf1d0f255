//! The inbox's background poll: every source at its pace, with the sessions already started from
//! each alert, sent on as one update per round until the receiver goes away.

use super::sessions::AlertSession;
use super::{Backoff, Snapshot, Sources};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;

/// One round: what the sources answered, when, and the sessions by alert fingerprint.
pub type Update = (
    Snapshot,
    chrono::DateTime<chrono::Utc>,
    BTreeMap<String, AlertSession>,
);

/// Polls `sources` every `poll_secs` (backing off up to five minutes on failures).
pub fn watch(sources: Sources, poll_secs: u64) -> (UnboundedReceiver<Update>, JoinHandle<()>) {
    let (tx, snapshots) = unbounded_channel();
    let backoff = Backoff {
        interval: Duration::from_secs(poll_secs.max(1)),
        max: Duration::from_secs(300),
    };
    let poller = tokio::spawn(async move {
        let mut poller = super::sources::Poller::new(sources, backoff);
        let dir = crate::session::sessions_dir();
        loop {
            let snap = poller.poll_due().await;
            // Sessions others run (`sitrep serve`) or ran, by the alert they started from.
            let dir = dir.clone();
            let sessions =
                tokio::task::spawn_blocking(move || super::sessions::by_fingerprint(&dir))
                    .await
                    .unwrap_or_default();
            if tx.send((snap, chrono::Utc::now(), sessions)).is_err() {
                break;
            }
            tokio::time::sleep_until(tokio::time::Instant::from_std(poller.next_due())).await;
        }
    });
    (snapshots, poller)
}
