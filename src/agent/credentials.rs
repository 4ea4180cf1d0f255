//! The session's credential approvals: a specialist that needs a credential by reference waits
//! here for the operator's recorded decision; the dispatcher delivers decisions.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// How long a specialist waits for a credential decision when no approval timeout is set.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, PartialEq)]
enum State {
    Asked,
    Decided { approved: bool, reason: String },
}

/// Shared by every lane of one run and its command dispatcher.
#[derive(Debug)]
pub struct CredentialGate {
    state: Mutex<BTreeMap<String, State>>,
    version: watch::Sender<u64>,
    wait: Duration,
}

impl Default for CredentialGate {
    fn default() -> Self {
        Self::new(DEFAULT_WAIT)
    }
}

/// What a lane must do about a reference.
pub enum Ask {
    /// Nobody asked yet: record the request, then wait.
    First,
    /// Already asked by another lane: wait.
    Wait,
    Decided {
        approved: bool,
        reason: String,
    },
}

impl CredentialGate {
    pub fn new(wait: Duration) -> Self {
        CredentialGate {
            state: Mutex::new(BTreeMap::new()),
            version: watch::channel(0).0,
            wait,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, State>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers interest in `reference`: whether this caller is the first to ask.
    pub fn ask(&self, reference: &str) -> Ask {
        let mut st = self.lock();
        match st.get(reference) {
            None => {
                st.insert(reference.to_string(), State::Asked);
                Ask::First
            }
            Some(State::Asked) => Ask::Wait,
            Some(State::Decided { approved, reason }) => Ask::Decided {
                approved: *approved,
                reason: reason.clone(),
            },
        }
    }

    /// Whether a lane asked for `reference` (a decision on anything else is refused).
    pub fn was_asked(&self, reference: &str) -> bool {
        self.lock().contains_key(reference)
    }

    /// Records a decision and wakes the waiting lanes.
    pub fn decide(&self, reference: &str, approved: bool, reason: &str) {
        self.lock().insert(
            reference.to_string(),
            State::Decided {
                approved,
                reason: reason.to_string(),
            },
        );
        self.version.send_modify(|v| *v += 1);
    }

    /// Waits for the decision on `reference`: `Ok(())` approved, `Err(reason)` denied or no
    /// decision in time.
    pub async fn wait(&self, reference: &str) -> Result<(), String> {
        let mut rx = self.version.subscribe();
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            if let Some(State::Decided { approved, reason }) = self.lock().get(reference).cloned() {
                return if approved { Ok(()) } else { Err(reason) };
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    let why = format!("no decision within {:.0?}", self.wait);
                    self.decide(reference, false, &why);
                    return Err(why);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn lanes_wait_for_one_decision() {
        let g = Arc::new(CredentialGate::new(Duration::from_secs(5)));
        assert!(matches!(g.ask("op://a/b/c"), Ask::First));
        assert!(matches!(g.ask("op://a/b/c"), Ask::Wait));
        let g2 = g.clone();
        let waiter = tokio::spawn(async move { g2.wait("op://a/b/c").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        g.decide("op://a/b/c", false, "not today");
        assert_eq!(waiter.await.unwrap(), Err("not today".to_string()));
        assert!(matches!(
            g.ask("op://a/b/c"),
            Ask::Decided {
                approved: false,
                ..
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn no_decision_in_time_is_a_denial() {
        let g = CredentialGate::new(Duration::from_secs(1));
        g.ask("env:X");
        let e = g.wait("env:X").await.unwrap_err();
        assert!(e.contains("no decision"), "{e}");
    }
}
