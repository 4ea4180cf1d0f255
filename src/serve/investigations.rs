//! The runtime served investigations run on, renewed once the server is quiet: the old one's
//! worker threads exit, and with them the allocator caches every thread that ran analyses keeps
//! (glibc's per-thread cache has no call that empties it; a thread's exit does).

use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::runtime::{Handle, Runtime};

/// A multi-thread runtime that can be swapped for a fresh one when nothing runs on it.
pub(super) struct Investigations {
    /// `None` only once the server shut it down.
    runtime: RwLock<Option<Runtime>>,
    threads: usize,
    /// Uses since the runtime was built: a runtime nothing ran on is not renewed.
    used: AtomicU64,
}

impl Investigations {
    pub(super) fn new(threads: usize) -> std::io::Result<Self> {
        Ok(Investigations {
            runtime: RwLock::new(Some(build(threads)?)),
            threads,
            used: AtomicU64::new(0),
        })
    }

    /// Runs `f` with the current runtime (to enter it or spawn on it); no renewal happens until
    /// `f` returns, so what it spawns lands on a runtime that stays. `None` after shutdown.
    pub(super) fn with<T>(&self, f: impl FnOnce(&Handle) -> T) -> Option<T> {
        let guard = self.runtime.read().unwrap_or_else(|e| e.into_inner());
        let rt = guard.as_ref()?;
        self.used.fetch_add(1, Ordering::Relaxed);
        Some(f(rt.handle()))
    }

    /// Swaps in a fresh runtime when the current one was used, has no task left and `quiet`
    /// still holds (checked while no start can slip in); the old one's threads then exit. True
    /// when it was renewed.
    pub(super) fn renew_if(&self, quiet: impl FnOnce() -> bool) -> std::io::Result<bool> {
        let mut guard = self.runtime.write().unwrap_or_else(|e| e.into_inner());
        let Some(rt) = guard.as_ref() else {
            return Ok(false);
        };
        if self.used.load(Ordering::Relaxed) == 0 || rt.metrics().num_alive_tasks() > 0 || !quiet()
        {
            return Ok(false);
        }
        let fresh = build(self.threads)?;
        self.used.store(0, Ordering::Relaxed);
        if let Some(old) = guard.replace(fresh) {
            // Nothing is left on it: its threads stop and exit in the background.
            old.shutdown_background();
        }
        Ok(true)
    }

    /// Drops whatever still runs (each is marked interrupted on the next start).
    pub(super) fn shutdown(&self) {
        let taken = self
            .runtime
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(rt) = taken {
            // A runtime cannot be dropped in place from async code.
            rt.shutdown_background();
        }
    }
}

fn build(threads: usize) -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("sitrep-investigation")
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The kernel's id of the thread running this.
    fn tid() -> i32 {
        // SAFETY: gettid takes nothing and cannot fail.
        unsafe { libc::gettid() }
    }

    fn alive(tid: i32) -> bool {
        std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
    }

    #[test]
    fn a_used_idle_runtime_is_renewed_and_its_threads_exit() {
        let inv = Investigations::new(2).expect("runtime");
        // Unused: nothing to give back.
        assert!(!inv.renew_if(|| true).expect("renew"));
        let (tx, rx) = std::sync::mpsc::channel();
        let first = inv
            .with(|h| {
                h.spawn(async move {
                    let _ = tx.send(tid());
                })
            })
            .expect("running");
        let ran_on = rx.recv_timeout(Duration::from_secs(5)).expect("task ran");
        // Wait until the task is gone from the runtime.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !first.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Not while the server says it is busy.
        assert!(!inv.renew_if(|| false).expect("renew"));
        assert!(alive(ran_on));
        assert!(inv.renew_if(|| true).expect("renew"));
        // The new runtime runs work on new threads; the old workers exit.
        let (tx, rx) = std::sync::mpsc::channel();
        inv.with(|h| {
            h.spawn(async move {
                let _ = tx.send(tid());
            })
        })
        .expect("running");
        let now_on = rx.recv_timeout(Duration::from_secs(5)).expect("task ran");
        assert_ne!(ran_on, now_on);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while alive(ran_on) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(ran_on), "the old worker {ran_on} is still running");
        inv.shutdown();
        assert!(inv.with(|_| ()).is_none());
    }

    #[test]
    fn a_runtime_with_a_task_left_is_not_renewed() {
        let inv = Investigations::new(1).expect("runtime");
        let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
        inv.with(|h| h.spawn(rx)).expect("running");
        assert!(!inv.renew_if(|| true).expect("renew"));
        inv.shutdown();
    }
}
