//! `sitrep serve`: the webhook receiver (Alertmanager v4, PagerDuty V3) and remote API over axum; each new
//! firing alert starts one headless investigation, saved as a session like any other.

use crate::agent::{AgentHandle, Attributed, Decider, Trigger};
use crate::inbox::{self, Claim, InboxAlert, Sources};
use crate::integrations::pagerduty;
use crate::model::{AlertStatus, Command, Outcome, WebhookPayload};
use crate::session;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Extension, Path as UrlPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

mod datadog;
mod investigations;
pub use datadog::read_webhook_secret;
use investigations::Investigations;

mod admission;
mod api;
mod auth;
mod health;
mod journal;
mod runner;
pub mod store;
mod takeover;
mod webhooks;

use admission::*;
use api::*;
use auth::*;
use health::*;
use journal::*;
use runner::*;
use takeover::*;
use webhooks::*;

pub use auth::{ApiToken, UNNAMED_TOKEN, parse_tokens, token_for};
pub use journal::JOURNAL_FILE;
pub use webhooks::SLACK_INTERACTIONS;

/// Bodies above this get 413 before any parsing.
pub const MAX_BODY: usize = 1024 * 1024;
/// How often an idle server hands freed memory back to the system.
const IDLE_TRIM_EVERY: Duration = Duration::from_secs(5);
/// How long shutdown waits for running investigations to write their end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Starts one investigation: the same entry point `sitrep investigate` uses. Arguments: the trigger,
/// and the session file to write.
pub type Starter = Arc<dyn Fn(Trigger, PathBuf) -> anyhow::Result<AgentHandle> + Send + Sync>;

/// Everything the server needs, prepared by the command line.
pub struct Setup {
    pub listen: SocketAddr,
    /// Bearer tokens, one of which every request must carry; empty only on a loopback address.
    pub tokens: Vec<ApiToken>,
    /// PagerDuty V3 webhook signing secret; without one PagerDuty webhooks are refused.
    pub pagerduty_secret: Option<SecretString>,
    /// `[serve.datadog] secret`: what Datadog webhooks send in `X-Sitrep-Secret`; without one
    /// `/webhook/datadog` answers 404.
    pub datadog_secret: Option<SecretString>,
    pub sessions_dir: PathBuf,
    pub starter: Starter,
    /// Alert sources polled for `GET /api/alerts`, if any are configured.
    pub sources: Option<Sources>,
    /// `[notify.slack]`: approval and end messages, and the buttons' route.
    pub slack: Option<crate::notify::Slack>,
    /// `[serve]`: how much work the server takes on, from the configuration the command line read.
    pub limits: Limits,
    /// `[serve.store]`: the store shared with other replicas; `None` for a server on its own.
    pub store: Option<store::StoreSettings>,
    /// `[serve] metrics_token`, read from its reference: what `GET /metrics` then needs.
    pub metrics_token: Option<SecretString>,
}

/// How much work the server takes on: `[serve]` in the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Investigations running at once (at least 1).
    pub max_concurrent: usize,
    /// Investigations waiting to start; past this a webhook answers 503 with `Retry-After`.
    pub queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::from(&crate::config::Serve::default())
    }
}

impl From<&crate::config::Serve> for Limits {
    fn from(c: &crate::config::Serve) -> Self {
        Limits {
            max_concurrent: c.max_concurrent.max(1),
            queue: c.queue,
        }
    }
}

/// Seconds a webhook sender is asked to wait when the queue is full (Alertmanager retries anyway).
const RETRY_AFTER_SECS: u64 = 15;
/// Why a setup is refused.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without a token: pass --token-env VAR (a variable holding the bearer token), or bind a loopback address"
    )]
    NoToken(SocketAddr),
    #[error("environment variable {0} (from --token-env) is not set or empty")]
    TokenUnset(String),
    #[error("environment variable {var} (from --token-env): {problem}")]
    TokenInvalid { var: String, problem: String },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// An investigation this server started.
struct Running {
    path: PathBuf,
    title: String,
    commands: mpsc::UnboundedSender<Command>,
    /// Decisions, recorded under the caller the API authenticated.
    decisions: mpsc::UnboundedSender<Attributed>,
    outcome: Option<Outcome>,
}

struct Shared {
    starter: Starter,
    tokens: Vec<ApiToken>,
    /// The address connections arrive at, to find a loopback caller's socket.
    local: SocketAddr,
    pagerduty_secret: Option<SecretString>,
    datadog_secret: Option<SecretString>,
    sessions_dir: PathBuf,
    sources: Option<Sources>,
    slack: Option<crate::notify::Slack>,
    limits: Limits,
    /// Claims, the running count and the queue: one lock, only ever held for bookkeeping in
    /// memory (never across I/O or a start).
    core: Mutex<Core>,
    /// Investigations running now; a finished one leaves.
    sessions: Mutex<BTreeMap<String, Running>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Alerts received by webhook (latest state per fingerprint), capped and aged.
    received: Mutex<Received>,
    /// Set once shutdown begins: nothing new starts.
    draining: std::sync::atomic::AtomicBool,
    /// The runtime investigations run on: their work (and their blocking writes) never takes the
    /// threads that answer requests, so the API answers however many run. Renewed when quiet.
    investigations: Investigations,
    /// Well-formed webhook deliveries so far (repeats included).
    deliveries: std::sync::atomic::AtomicU64,
    /// The store shared with other replicas, when configured.
    store: Option<Arc<store::Store>>,
    metrics_token: Option<SecretString>,
    /// Counters `GET /metrics` shows.
    metrics: Metrics,
}

type AppState = Arc<Shared>;

/// Binds and serves until `shutdown` resolves (or ctrl-c / SIGTERM when it is `None`), then cancels
/// running investigations and waits for them to record their end.
pub async fn run(setup: Setup) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(setup.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: setup.listen,
            source,
        })?;
    let addr = listener.local_addr()?;
    eprintln!(
        "sitrep serve: listening on http://{addr} ({}); sessions in {}",
        if !setup.tokens.is_empty() {
            "bearer token required"
        } else {
            "loopback, no token"
        },
        setup.sessions_dir.display()
    );
    let limits = setup.limits;
    tune_allocator();
    serve_with(listener, setup, limits, shutdown_signal()).await
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves on an already-bound listener until `shutdown` resolves, with the default limits.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    setup: Setup,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_with(listener, setup, Limits::default(), shutdown).await
}

/// Serves on an already-bound listener until `shutdown` resolves. First recovers from a previous
/// run that did not stop cleanly (see [`recover`]); on shutdown, takes no new work, cancels the
/// running investigations and waits (up to the stop timeout) for each to record its end; what was
/// still queued stays in the journal and starts on the next run.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    setup: Setup,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&setup.sessions_dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the sessions directory {}: {e}",
            setup.sessions_dir.display()
        )
    })?;
    let mut recovered = recover(&setup.sessions_dir);
    let ran = std::mem::take(&mut recovered.ran);
    if recovered.interrupted > 0 || !recovered.queue.is_empty() {
        eprintln!(
            "sitrep serve: recovered from an unclean stop: {} session(s) marked interrupted, {} queued alert group(s) to start",
            recovered.interrupted,
            recovered.queue.len()
        );
    }
    let local = listener.local_addr()?;
    let store = match setup.store {
        Some(settings) => {
            let store = store::Store::open(settings, store::replica_name())
                .await
                .map_err(|e| anyhow::anyhow!("sitrep serve: {e}"))?;
            eprintln!(
                "sitrep serve: replica {} on the store {}",
                store.replica,
                store.place()
            );
            let waiting: Vec<String> = recovered.queue.iter().map(|q| q.id.clone()).collect();
            if !waiting.is_empty() {
                store
                    .reclaim(&waiting)
                    .await
                    .map_err(|e| anyhow::anyhow!("sitrep serve: {e}"))?;
            }
            // What a kill kept from reaching the store is on this disk: it goes there now.
            if !ran.is_empty() {
                tokio::spawn(reconcile(store.clone(), ran));
            }
            Some(store)
        }
        None => None,
    };
    let investigations = Investigations::new(
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 8),
    )?;
    let state: AppState = Arc::new(Shared {
        starter: setup.starter,
        tokens: setup.tokens,
        local,
        pagerduty_secret: setup.pagerduty_secret,
        datadog_secret: setup.datadog_secret,
        sessions_dir: setup.sessions_dir,
        sources: setup.sources,
        slack: setup.slack,
        limits,
        core: Mutex::new({
            let mut core = Core {
                claims: recovered.claims,
                queue: recovered.queue,
                ..Core::default()
            };
            let waiting: Vec<(String, String, Trigger)> = core
                .queue
                .iter()
                .map(|q| {
                    let group = q.group_key().unwrap_or_default().to_string();
                    (q.id.clone(), group, q.trigger.clone())
                })
                .collect();
            for (id, group, trigger) in waiting {
                core.live(&id, &group, &trigger);
            }
            core
        }),
        sessions: Mutex::new(BTreeMap::new()),
        tasks: Mutex::new(Vec::new()),
        received: Mutex::new(Received::default()),
        draining: std::sync::atomic::AtomicBool::new(false),
        investigations,
        deliveries: std::sync::atomic::AtomicU64::new(0),
        store,
        metrics_token: setup.metrics_token,
        metrics: Metrics::default(),
    });
    // With a store: records are written to it, decisions for this replica arrive from it, and
    // the lease is renewed (and dead replicas' sessions taken over).
    let store_tasks: Vec<JoinHandle<()>> = match &state.store {
        Some(store) => {
            let wake = Arc::new(tokio::sync::Notify::new());
            vec![
                tokio::spawn(store.clone().run_appends()),
                tokio::spawn(store.clone().listen(wake.clone())),
                tokio::spawn(take_decisions(state.clone(), wake)),
                tokio::spawn(keep_lease(state.clone())),
            ]
        }
        None => Vec::new(),
    };
    {
        let state = state.clone();
        let _ = off_thread(move || pump(&state)).await;
    }
    // While idle, what a storm (or a listing of thousands of sessions) allocated goes back.
    let idle = state.clone();
    let trimmer = tokio::spawn(async move {
        let mut tick = tokio::time::interval(IDLE_TRIM_EVERY);
        let mut compacted_at = 0;
        loop {
            tick.tick().await;
            let quiet = {
                let core = lock(&idle.core);
                core.running == 0 && core.queue.is_empty()
            };
            if !quiet {
                continue;
            }
            // Once per quiet spell after deliveries, what outlives the storm (claims, received
            // alerts) is copied into fresh allocations: made one by one during the storm, its
            // pieces lie scattered among the memory investigations freed, each keeping its page
            // resident; copied together they pack into few pages and the old ones go back below.
            let deliveries = idle.deliveries.load(std::sync::atomic::Ordering::Relaxed);
            if deliveries != compacted_at {
                {
                    let mut core = lock(&idle.core);
                    core.claims = core.claims.clone();
                }
                let mut received = lock(&idle.received);
                *received = received.clone();
                compacted_at = deliveries;
            }
            // The threads that ran the analyses exit with their allocator caches; fresh ones
            // take the next investigation. Their caches go back on exit, so the trim below (or
            // the next tick's, once they are gone) returns the pages.
            let renewed = idle.investigations.renew_if(|| {
                let core = lock(&idle.core);
                core.running == 0 && core.queue.is_empty()
            });
            if let Err(e) = renewed {
                tracing::warn!("cannot renew the investigations runtime: {e}");
            }
            release_memory();
        }
    });
    let app = router(state.clone());
    let drain = state.clone();
    let shutdown = async move {
        shutdown.await;
        drain
            .draining
            .store(true, std::sync::atomic::Ordering::SeqCst);
    };
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    state
        .draining
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // End running sessions cleanly: cancel, then let each write its `session_ended`.
    for r in lock(&state.sessions).values() {
        if r.outcome.is_none() {
            let _ = r.commands.send(Command::Cancel);
        }
    }
    let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&state.tasks));
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, futures::future::join_all(tasks)).await;
    // Sessions that ended on the way out still get their end message, if Slack answers soon.
    if let Some(slack) = &state.slack {
        slack.flush(SLACK_FLUSH_GRACE).await;
    }
    // Whatever did not end within the grace period is dropped (it is marked interrupted on the
    // next start); a runtime cannot be dropped in place from async code.
    trimmer.abort();
    // What the ended sessions wrote reaches the store before its writer stops.
    if let Some(store) = &state.store {
        store.flush(SLACK_FLUSH_GRACE).await;
    }
    for t in store_tasks {
        t.abort();
    }
    state.investigations.shutdown();
    Ok(())
}

/// Fixed allocator thresholds for a long-running server, at glibc's own starting values. glibc
/// otherwise raises both after a large block is freed (up to 32 and 64 MiB), so after a storm
/// every thread's arena keeps that much of its free top resident, and `malloc_trim` gives back no
/// arena's top but the main one's.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's own tunables; it takes no pointers.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_TOP_PAD, 0);
    }
}

/// Hands memory freed by finished investigations back to the system once none runs: glibc keeps
/// freed memory in per-thread arenas otherwise, and a storm's peak would stay resident for good.
fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointers of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs blocking work (file reads and writes, starting an investigation) on the runtime's blocking
/// pool and waits for it, so the other tasks sharing this worker go on. Not `block_in_place`: that
/// hands the worker's place to another thread each time, and every thread that ever runs a
/// request or an analysis keeps its own allocator cache, arena share and regex caches, which a
/// storm would leave resident.
async fn off_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        if e.is_panic() {
            std::panic::resume_unwind(e.into_panic());
        }
        unavailable("the server is shutting down".into(), true)
    })
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/webhook/alertmanager", post(alertmanager_webhook))
        .route("/webhook/pagerduty", post(pagerduty_webhook))
        .route(datadog::ROUTE, post(datadog::webhook))
        .route("/api/alerts", get(list_alerts))
        .route("/api/sessions", get(list_sessions))
        .route("/api/sessions/{id}", get(get_session))
        .route("/api/sessions/{id}/records", get(session_records))
        .route("/api/sessions/{id}/approve", post(approve))
        .route("/api/sessions/{id}/deny", post(deny))
        .route("/api/sessions/{id}/credentials", post(credentials))
        .route("/api/sessions/{id}/note", post(note))
        .route("/api/investigations", post(new_investigation))
        .route(SLACK_INTERACTIONS, post(slack_interactions))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route") })
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another handler panicked mid-update; the data is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

fn parse_json(body: &[u8]) -> Result<Value, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("malformed JSON: {e}"),
        ))
    })
}

fn unavailable(message: String, retry: bool) -> Response {
    let mut resp = error(StatusCode::SERVICE_UNAVAILABLE, message);
    if retry {
        resp.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from(RETRY_AFTER_SECS),
        );
    }
    resp
}

/// How long shutdown waits for Slack messages still queued.
const SLACK_FLUSH_GRACE: Duration = Duration::from_secs(5);
