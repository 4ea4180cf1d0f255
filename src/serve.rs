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

/// Bodies above this get 413 before any parsing.
pub const MAX_BODY: usize = 1024 * 1024;
/// How often an idle server hands freed memory back to the system.
const IDLE_TRIM_EVERY: Duration = Duration::from_secs(5);
/// How long shutdown waits for running investigations to write their end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Starts one investigation: the same entry point `sitrep investigate` uses. Arguments: the trigger,
/// and the session file to write.
pub type Starter = Arc<dyn Fn(Trigger, PathBuf) -> anyhow::Result<AgentHandle> + Send + Sync>;

/// One bearer token and the name its holder's decisions are recorded under.
pub struct ApiToken {
    pub name: String,
    pub secret: SecretString,
}

/// What a single unnamed token's callers are recorded as: whoever holds it, one operator.
pub const UNNAMED_TOKEN: &str = "api";

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
/// Alerts kept for `GET /api/alerts`: the newest this many, none older than [`RECEIVED_MAX_AGE`].
const RECEIVED_MAX: usize = 10_000;
const RECEIVED_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long an ended investigation keeps its alerts claimed: a page re-sent within it (an
/// Alertmanager repeat) is a duplicate, one still or again firing after it is investigated anew.
const CLAIM_TTL: Duration = Duration::from_secs(6 * 3600);
/// The server's own record of what it claimed and queued, inside the sessions directory (not a
/// session: no `.ndjson`), so a restart rebuilds dedup and starts what was waiting.
pub const JOURNAL_FILE: &str = ".sitrep-serve-journal";

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

/// Reads the bearer tokens named by `--token-env` and checks the address may go without one.
pub fn token_for(listen: SocketAddr, token_env: Option<&str>) -> Result<Vec<ApiToken>, ServeError> {
    match token_env {
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                parse_tokens(&v).map_err(|problem| ServeError::TokenInvalid {
                    var: var.to_string(),
                    problem,
                })
            }
            _ => Err(ServeError::TokenUnset(var.to_string())),
        },
        None if listen.ip().is_loopback() => Ok(Vec::new()),
        None => Err(ServeError::NoToken(listen)),
    }
}

fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

/// `name=token` entries separated by commas or whitespace, one per person (decisions are recorded
/// under the name); anything else is one unnamed token, whose callers are all [`UNNAMED_TOKEN`].
/// Errors never quote a token.
pub fn parse_tokens(value: &str) -> Result<Vec<ApiToken>, String> {
    let entries: Vec<&str> = value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .collect();
    let named: Option<Vec<(&str, &str)>> = entries
        .iter()
        .map(|e| {
            e.split_once('=')
                // A base64 token's `=` padding is not a name separator.
                .filter(|(n, t)| valid_token_name(n) && !t.chars().all(|c| c == '='))
        })
        .collect();
    let Some(named) = named else {
        return Ok(vec![ApiToken {
            name: UNNAMED_TOKEN.into(),
            secret: SecretString::from(value.trim().to_string()),
        }]);
    };
    let mut out: Vec<ApiToken> = Vec::new();
    for (name, token) in named {
        if out.iter().any(|t| t.name == name) {
            return Err(format!("the token name {name:?} appears twice"));
        }
        if out.iter().any(|t| t.secret.expose_secret() == token) {
            return Err(format!(
                "{name:?} has the same token as another name: each person needs their own"
            ));
        }
        out.push(ApiToken {
            name: name.to_string(),
            secret: SecretString::from(token.to_string()),
        });
    }
    Ok(out)
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

/// The authenticated caller of a request: the name of the token it carried.
#[derive(Clone, Debug)]
struct Caller(String);

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
    let recovered = recover(&setup.sessions_dir);
    if recovered.interrupted > 0 || !recovered.queue.is_empty() {
        eprintln!(
            "sitrep serve: recovered from an unclean stop: {} session(s) marked interrupted, {} queued alert group(s) to start",
            recovered.interrupted,
            recovered.queue.len()
        );
    }
    let local = listener.local_addr()?;
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
    });
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
        .route("/api/sessions/{id}/approve", post(approve))
        .route("/api/sessions/{id}/deny", post(deny))
        .route("/api/sessions/{id}/credentials", post(credentials))
        .route("/api/sessions/{id}/note", post(note))
        .route("/api/investigations", post(new_investigation))
        .route(SLACK_INTERACTIONS, post(slack_interactions))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route") })
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Slack sends no bearer token: that route is authenticated by Slack's signature alone, and
    // Datadog's by its shared secret.
    let own_auth = [SLACK_INTERACTIONS, datadog::ROUTE].contains(&req.uri().path());
    if !state.tokens.is_empty() && !own_auth {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or("");
        // Every token is compared, so the time taken does not tell which one nearly matched.
        let mut matched: Option<&str> = None;
        for t in &state.tokens {
            if constant_time_eq(given.as_bytes(), t.secret.expose_secret().as_bytes()) {
                matched = Some(&t.name);
            }
        }
        if let Some(name) = matched.filter(|_| !given.is_empty()) {
            req.extensions_mut().insert(Caller(name.to_string()));
        } else {
            let mut resp = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return resp;
        }
    }
    next.run(req).await
}

fn parse_json(body: &[u8]) -> Result<Value, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("malformed JSON: {e}"),
        ))
    })
}

/// Which alerts (by fingerprint) and groups (by group key) have an investigation, running,
/// queued or finished: a repeated delivery claims nothing new. The inbox's deduper serves here.
type Claims = crate::inbox::Deduper;

/// An investigation waiting for a free slot.
#[derive(Debug)]
struct Queued {
    id: String,
    path: PathBuf,
    title: String,
    trigger: Trigger,
}

impl Queued {
    fn group_key(&self) -> Option<&str> {
        match &self.trigger {
            Trigger::Alert(p) if !p.group_key.is_empty() => Some(&p.group_key),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
struct Core {
    claims: Claims,
    /// Investigations started and not yet finished.
    running: usize,
    /// Waiting investigations, started in arrival order.
    queue: VecDeque<Queued>,
    /// Group keys and subjects of investigations queued or running, to the session: a related
    /// alert arriving while one runs joins it rather than starting another.
    live_groups: HashMap<String, String>,
    /// Subject -> (session, the alert names it investigates there).
    live_subjects: HashMap<String, (String, std::collections::BTreeSet<String>)>,
}

impl Core {
    /// The queued or running investigation an alert of this group or subject belongs to.
    fn related(&self, group_key: &str, trigger: &Trigger) -> Option<String> {
        if let Some(id) = self
            .live_groups
            .get(group_key)
            .filter(|_| !group_key.is_empty())
        {
            return Some(id.clone());
        }
        // Another rule about the same object is the same incident seen again; the same rule on
        // other labels is one Alertmanager deliberately kept apart (its own group).
        subjects_of(trigger).iter().find_map(|(k, name)| {
            self.live_subjects
                .get(k)
                .filter(|(_, names)| !names.contains(name))
                .map(|(id, _)| id.clone())
        })
    }

    /// Registers what a queued or started investigation is about.
    fn live(&mut self, id: &str, group_key: &str, trigger: &Trigger) {
        if !group_key.is_empty() {
            self.live_groups
                .insert(group_key.to_string(), id.to_string());
        }
        for (k, name) in subjects_of(trigger) {
            let slot = self
                .live_subjects
                .entry(k)
                .or_insert_with(|| (id.to_string(), Default::default()));
            if slot.0 == id {
                slot.1.insert(name);
            }
        }
    }

    /// An investigation ended: its group and subjects are free, its claims start to age.
    fn ended(&mut self, id: &str) {
        self.live_groups.retain(|_, s| s != id);
        self.live_subjects.retain(|_, (s, _)| s != id);
        self.claims.finish(id, Instant::now());
    }
}

/// What an alert is about, as a key shared by alerts of the same object: an RDS instance, a
/// workload in its namespace, or a node. Pods are left out: their names change with every restart.
fn subject_of(a: &crate::model::Alert) -> Option<String> {
    let get = |k: &str| {
        a.labels
            .get(k)
            .or_else(|| a.annotations.get(k))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    if let Some((_, id)) = crate::reason::cloud::instance_label(a) {
        return Some(format!("rds/{id}"));
    }
    let ns = get("namespace").unwrap_or("");
    for k in [
        "deployment",
        "statefulset",
        "daemonset",
        "job_name",
        "cronjob",
        "service",
    ] {
        if let Some(v) = get(k) {
            return Some(format!("{ns}/{k}/{v}"));
        }
    }
    get("node").map(|n| format!("node/{n}"))
}

/// The subjects of a trigger's alerts, each with the alert's name.
fn subjects_of(trigger: &Trigger) -> Vec<(String, String)> {
    match trigger {
        Trigger::Alert(p) => {
            let mut out: Vec<(String, String)> = p
                .alerts
                .iter()
                .filter_map(|a| subject_of(a).map(|s| (s, a.name().to_string())))
                .collect();
            out.sort();
            out.dedup();
            out
        }
        Trigger::Problem(_) => Vec::new(),
    }
}

/// Alerts received by webhook, latest per fingerprint, with when each was last seen. Each is kept
/// as its JSON text, one allocation where the struct takes dozens: a storm leaves thousands of
/// them, and every small allocation left among the memory an investigation freed keeps that page
/// resident after the storm.
#[derive(Clone, Default)]
struct Received {
    alerts: HashMap<Box<str>, (Box<str>, Instant)>,
}

impl Received {
    fn insert(&mut self, a: &InboxAlert) {
        let Ok(body) = serde_json::to_string(a) else {
            return;
        };
        self.alerts.insert(
            a.fingerprint.as_str().into(),
            (body.into_boxed_str(), Instant::now()),
        );
        if self.alerts.len() > RECEIVED_MAX {
            self.age();
        }
    }

    /// Drops what is older than the maximum age, then the oldest past the cap.
    fn age(&mut self) {
        let now = Instant::now();
        self.alerts
            .retain(|_, (_, seen)| now.duration_since(*seen) < RECEIVED_MAX_AGE);
        if self.alerts.len() > RECEIVED_MAX {
            let mut seen: Vec<Instant> = self.alerts.values().map(|(_, t)| *t).collect();
            seen.sort_unstable();
            let cut = seen[seen.len() - RECEIVED_MAX];
            self.alerts.retain(|_, (_, t)| *t >= cut);
        }
    }

    fn remove(&mut self, fingerprint: &str) {
        self.alerts.remove(fingerprint);
    }
}

/// One line of the serve journal: a claim (with its trigger while it may still be waiting), more
/// alerts joining a queued claim, or a claim withdrawn.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct JournalEntry {
    session: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    group_key: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    fingerprints: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    payload: Option<WebhookPayload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
    /// The payload's alerts join the (queued) claim `session`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    join: bool,
    /// The claim was withdrawn (it could not start).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    forget: bool,
}

impl JournalEntry {
    fn trigger(&self) -> Option<Trigger> {
        match (&self.payload, &self.problem) {
            (Some(p), _) => Some(Trigger::Alert(p.clone())),
            (None, Some(t)) => Some(Trigger::Problem(t.clone())),
            (None, None) => None,
        }
    }
}

fn journal_path(dir: &Path) -> PathBuf {
    dir.join(JOURNAL_FILE)
}

/// Appends one line to the journal (one `write` of a whole line, `O_APPEND`: lines from
/// concurrent handlers never interleave), flushed to disk: a claim the server cannot record is
/// not accepted.
fn journal_append(dir: &Path, entry: &JournalEntry) -> std::io::Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(journal_path(dir))?;
    file.write_all(&line)?;
    file.sync_data()
}

/// What a restart found: the claims of every session the journal names, the investigations that
/// were still waiting, and how many running ones it marked interrupted.
#[derive(Debug, Default)]
struct Recovered {
    claims: Claims,
    queue: VecDeque<Queued>,
    interrupted: usize,
}

/// Rebuilds the server's state from the sessions directory after any stop, clean or not: every
/// claim in the journal whose session file exists is restored (so a re-delivered alert is a
/// duplicate), a session of this server's that has no end (the server was killed) is marked
/// `interrupted` (nothing pending in it is approved), and a claim with no session file yet (it
/// was queued) is queued again, in its original order. The journal is then rewritten compactly.
fn recover(dir: &Path) -> Recovered {
    let mut out = Recovered::default();
    let path = journal_path(dir);
    // Only a regular file is read (and later replaced): not a device or a directory in its place.
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        return out;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return out;
    };
    let mut order: Vec<String> = Vec::new();
    let mut entries: HashMap<String, JournalEntry> = HashMap::new();
    for line in text.lines() {
        // A torn last line (killed mid-write) was never acknowledged: skip it.
        let Ok(e) = serde_json::from_str::<JournalEntry>(line) else {
            continue;
        };
        if e.forget {
            entries.remove(&e.session);
            continue;
        }
        if e.join {
            if let Some(base) = entries.get_mut(&e.session) {
                base.fingerprints.extend(e.fingerprints);
                if let (Some(p), Some(more)) = (&mut base.payload, e.payload) {
                    p.alerts.extend(more.alerts);
                }
            }
            continue;
        }
        if !entries.contains_key(&e.session) {
            order.push(e.session.clone());
        }
        entries.insert(e.session.clone(), e);
    }
    let mut kept: Vec<JournalEntry> = Vec::new();
    for id in order {
        let Some(mut e) = entries.remove(&id) else {
            continue;
        };
        if id.contains(['/', '\\']) || id.starts_with('.') {
            continue;
        }
        let path = dir.join(format!("{id}.ndjson"));
        if path.exists() {
            out.claims.record(&e.group_key, &e.fingerprints, &id);
            // It ran before the restart and will not run again: its claims age from now.
            out.claims.finish(&id, Instant::now());
            match mark_interrupted(&path) {
                Ok(true) => out.interrupted += 1,
                Ok(false) => {}
                Err(err) => tracing::warn!("cannot mark {} interrupted: {err}", path.display()),
            }
            e.payload = None;
            e.problem = None;
            kept.push(e);
        } else if let Some(trigger) = e.trigger() {
            out.claims.record(&e.group_key, &e.fingerprints, &id);
            out.queue.push_back(Queued {
                id: id.clone(),
                path,
                title: e.title.clone(),
                trigger,
            });
            kept.push(e);
        }
    }
    if let Err(err) = rewrite_journal(dir, &kept) {
        tracing::warn!("cannot compact the serve journal: {err}");
    }
    out
}

fn rewrite_journal(dir: &Path, entries: &[JournalEntry]) -> std::io::Result<()> {
    use std::io::Write;
    let path = journal_path(dir);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        for e in entries {
            serde_json::to_writer(&mut out, e).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        out.get_ref().sync_data()?;
        drop(out);
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Ends a session that has no end record as `interrupted`, after a warning saying why; a torn
/// last line (half written when the process died) is cut first, so the end is readable. `false`
/// when the session had ended.
fn mark_interrupted(path: &Path) -> anyhow::Result<bool> {
    use std::io::Write;
    let tail = session::read_tail(path)?;
    if tail.outcome.is_some() {
        return Ok(false);
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    if let Some(tear) = &tail.tear {
        file.set_len(tear.byte_offset)?;
    } else {
        // A last line cut exactly at its end still needs its newline.
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        let mut reader = std::fs::File::open(path)?;
        if reader.seek(SeekFrom::End(-1)).is_ok()
            && reader.read_exact(&mut last).is_ok()
            && last[0] != b'\n'
        {
            file.write_all(b"\n")?;
        }
    }
    let warning = crate::model::Event::Warning {
        message: "sitrep serve stopped while this investigation ran (killed); marked \
                  interrupted when it restarted: nothing pending was approved"
            .into(),
    };
    // A report written before the kill named the outcome it expected: it is written again
    // with the one the session ends with.
    let report = match session::fold_file(path) {
        Ok(mut folded) if folded.incident.report.is_some() => {
            folded.incident.apply(tail.duration, &warning);
            let markdown =
                session::export::markdown_ending(&folded.incident, Some(Outcome::Interrupted));
            let beside = path.with_extension("md");
            if let Err(e) = std::fs::write(&beside, &markdown) {
                tracing::warn!("cannot rewrite the report {}: {e}", beside.display());
            }
            Some(crate::model::Event::Report { markdown })
        }
        _ => None,
    };
    let mut lines = Vec::new();
    let ended = crate::model::Event::SessionEnded {
        outcome: Outcome::Interrupted,
    };
    for event in std::iter::once(warning).chain(report).chain([ended]) {
        let record = crate::model::Record {
            t: tail.duration,
            event,
        };
        lines.extend(serde_json::to_vec(&record)?);
        lines.push(b'\n');
    }
    file.write_all(&lines)?;
    file.sync_data()?;
    Ok(true)
}

/// What admission decided for a delivery's new alerts.
enum Admit {
    Duplicate(String),
    Start(Box<Queued>),
    Queued(String),
    Joined(String),
    /// Joined an investigation already running: it is told which alerts joined.
    JoinedRunning(String, String),
    Full,
    Draining,
}

/// Claims `fingerprints` for a new investigation of `trigger` and admits it: started now when a
/// slot is free, queued when not, joined to a queued investigation of the same group, or refused
/// when the queue is full. One short lock, no I/O; the journal line follows outside it.
fn admit(
    state: &AppState,
    group_key: &str,
    fingerprints: &[String],
    make: impl FnOnce(&[String]) -> (String, Trigger),
) -> (Admit, Vec<String>, JournalEntry) {
    let none = JournalEntry::default;
    if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
        return (Admit::Draining, Vec::new(), none());
    }
    let mut core = lock(&state.core);
    core.claims.expire(Instant::now(), CLAIM_TTL);
    let new = match core.claims.check(group_key, fingerprints) {
        Claim::Known(session) => return (Admit::Duplicate(session), Vec::new(), none()),
        Claim::New(new) => new,
    };
    let claimed = if new.is_empty() {
        fingerprints.to_vec()
    } else {
        new.clone()
    };
    let (title, trigger) = make(&new);
    let related = core.related(group_key, &trigger);
    // Related alerts (same group, same subject) arriving together join the investigation still
    // waiting for them, or the one running.
    if let Some(id) = &related
        && !core.queue.iter().any(|q| q.id == *id)
    {
        let entry = entry_for(id, group_key, &claimed, &title, &trigger, true);
        core.claims.record(group_key, &claimed, id);
        return (Admit::JoinedRunning(id.clone(), title), claimed, entry);
    }
    if let Some(q) = core.queue.iter_mut().find(|q| {
        (!group_key.is_empty() && q.group_key() == Some(group_key))
            || related.as_deref() == Some(q.id.as_str())
    }) {
        if let (Trigger::Alert(base), Trigger::Alert(more)) = (&mut q.trigger, &trigger) {
            base.alerts.extend(more.alerts.iter().cloned());
        }
        let id = q.id.clone();
        let entry = entry_for(&id, group_key, &claimed, &q.title, &trigger, true);
        core.claims.record(group_key, &claimed, &id);
        return (Admit::Joined(id), claimed, entry);
    }
    if core.running >= state.limits.max_concurrent && core.queue.len() >= state.limits.queue {
        return (Admit::Full, Vec::new(), none());
    }
    let path = session::unique_session_path_in(&state.sessions_dir, chrono::Utc::now(), &title);
    let id = session_id(&path);
    let entry = entry_for(&id, group_key, &claimed, &title, &trigger, false);
    core.claims.record(group_key, &claimed, &id);
    core.live(&id, group_key, &trigger);
    // A free slot goes to the longest waiting first: arrival order.
    if core.running < state.limits.max_concurrent && core.queue.is_empty() {
        core.running += 1;
        let admit = Admit::Start(Box::new(Queued {
            id,
            path,
            title,
            trigger,
        }));
        (admit, claimed, entry)
    } else {
        core.queue.push_back(Queued {
            id: id.clone(),
            path,
            title,
            trigger,
        });
        (Admit::Queued(id), claimed, entry)
    }
}

/// Undoes an admission the journal could not record.
fn unadmit(state: &AppState, admit: &Admit, claimed: &[String]) {
    let mut core = lock(&state.core);
    match admit {
        Admit::Start(q) => {
            core.claims.forget(&q.id, None);
            core.running = core.running.saturating_sub(1);
        }
        Admit::Queued(id) => {
            core.claims.forget(id, None);
            core.queue.retain(|q| q.id != *id);
        }
        Admit::JoinedRunning(id, _) => core.claims.forget(id, Some(claimed)),
        Admit::Joined(id) => {
            core.claims.forget(id, Some(claimed));
            if let Some(q) = core.queue.iter_mut().find(|q| q.id == *id)
                && let Trigger::Alert(p) = &mut q.trigger
            {
                p.alerts
                    .retain(|a| !claimed.contains(&alert_fingerprint(a)));
            }
        }
        _ => {}
    }
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

/// Admits a new investigation, records it in the journal and starts it (or leaves it queued);
/// the answer to the delivery.
async fn investigate(
    state: &AppState,
    group_key: &str,
    fingerprints: &[String],
    make: impl FnOnce(&[String]) -> (String, Trigger),
) -> Response {
    let (admitted, claimed, entry) = admit(state, group_key, fingerprints, make);
    match &admitted {
        Admit::Duplicate(session) => {
            return (
                StatusCode::OK,
                axum::Json(json!({"started": false, "duplicate": true, "session": session})),
            )
                .into_response();
        }
        Admit::Draining => {
            return unavailable("the server is shutting down".into(), true);
        }
        Admit::Full => {
            return unavailable(
                format!(
                    "{} investigations running and {} waiting, the most this server takes \
                     ([serve] max_concurrent, queue): retry later",
                    state.limits.max_concurrent, state.limits.queue
                ),
                true,
            );
        }
        _ => {}
    }
    let state = state.clone();
    off_thread(move || record_and_start(&state, admitted, claimed, entry))
        .await
        .unwrap_or_else(|r| r)
}

/// The part of [`investigate`] that writes: the journal line, then the start.
fn record_and_start(
    state: &AppState,
    admitted: Admit,
    claimed: Vec<String>,
    entry: JournalEntry,
) -> Response {
    if let Err(e) = journal_append(&state.sessions_dir, &entry) {
        unadmit(state, &admitted, &claimed);
        return unavailable(
            format!(
                "cannot record the alert in {}: {e}; not accepted",
                state.sessions_dir.display()
            ),
            true,
        );
    }
    match admitted {
        Admit::Start(q) => {
            let Queued {
                id,
                path,
                title,
                trigger,
            } = *q;
            match start(state, &id, path, &title, trigger) {
                Ok(()) => (
                    StatusCode::ACCEPTED,
                    axum::Json(json!({"started": true, "session": id, "alerts": claimed.len()})),
                )
                    .into_response(),
                Err(e) => {
                    {
                        let mut core = lock(&state.core);
                        core.claims.forget(&id, None);
                        core.running = core.running.saturating_sub(1);
                    }
                    let _ = journal_append(
                        &state.sessions_dir,
                        &JournalEntry {
                            session: id,
                            forget: true,
                            ..JournalEntry::default()
                        },
                    );
                    pump(state);
                    error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("cannot start the investigation: {e:#}"),
                    )
                }
            }
        }
        Admit::Queued(id) => {
            // A slot may have freed since: the queue's head takes it.
            pump(state);
            let queued = lock(&state.core).queue.iter().any(|q| q.id == id);
            (
                StatusCode::ACCEPTED,
                axum::Json(
                    json!({"started": true, "queued": queued, "session": id, "alerts": claimed.len()}),
                ),
            )
                .into_response()
        }
        Admit::Joined(id) => (
            StatusCode::ACCEPTED,
            axum::Json(
                json!({"started": false, "joined": true, "session": id, "alerts": claimed.len()}),
            ),
        )
            .into_response(),
        Admit::JoinedRunning(id, title) => {
            // The running investigation hears of it on its timeline.
            if let Some(r) = lock(&state.sessions).get(&id) {
                let _ = r.commands.send(Command::Warning {
                    message: format!(
                        "{} related alert(s) joined this investigation: {title}",
                        claimed.len()
                    ),
                });
            }
            (
                StatusCode::ACCEPTED,
                axum::Json(
                    json!({"started": false, "joined": true, "session": id, "alerts": claimed.len()}),
                ),
            )
                .into_response()
        }
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "unreachable admission"),
    }
}

fn entry_for(
    id: &str,
    group_key: &str,
    claimed: &[String],
    title: &str,
    trigger: &Trigger,
    join: bool,
) -> JournalEntry {
    let (payload, problem) = match trigger {
        Trigger::Alert(p) => (Some(p.clone()), None),
        Trigger::Problem(t) => (None, Some(t.clone())),
    };
    JournalEntry {
        session: id.to_string(),
        group_key: group_key.to_string(),
        fingerprints: claimed.to_vec(),
        title: title.to_string(),
        payload,
        problem,
        join,
        forget: false,
    }
}

/// Starts queued investigations while slots are free (not once shutdown began).
fn pump(state: &AppState) {
    loop {
        if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let next = {
            let mut core = lock(&state.core);
            if core.running >= state.limits.max_concurrent {
                return;
            }
            let Some(q) = core.queue.pop_front() else {
                return;
            };
            core.running += 1;
            q
        };
        if let Err(e) = start(state, &next.id, next.path, &next.title, next.trigger) {
            tracing::warn!("cannot start queued investigation {}: {e:#}", next.id);
            {
                let mut core = lock(&state.core);
                core.claims.forget(&next.id, None);
                core.running = core.running.saturating_sub(1);
            }
            let _ = journal_append(
                &state.sessions_dir,
                &JournalEntry {
                    session: next.id,
                    forget: true,
                    ..JournalEntry::default()
                },
            );
        }
    }
}

/// Starts an investigation of `trigger` writing `path` (its slot already taken), registers it,
/// and drains its records in the background; when it ends it leaves memory and frees its slot.
/// No lock is held while the starter runs.
fn start(
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

fn start_on(
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
    let watcher = rt.spawn(async move {
        // The session file is written by the investigation itself; the records only need draining.
        let mut watch = slack_watch(&shared, &key, &commands_for_slack);
        let drain = async {
            while let Some(r) = records.recv().await {
                if let Some(w) = watch.as_mut() {
                    w.observe(&r.event);
                }
            }
        };
        let (_, result) = tokio::join!(drain, task);
        if let Some(w) = watch {
            w.ended(session_file.clone(), append_warning(session_file));
        }
        match result {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("investigation {key} failed: {e:#}"),
            Err(e) => tracing::warn!("investigation {key} panicked: {e}"),
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
fn slack_watch(
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
fn append_warning(path: PathBuf) -> crate::notify::slack::OnFailure {
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

fn session_id(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn alert_fingerprint(a: &crate::model::Alert) -> String {
    if a.fingerprint.is_empty() {
        inbox::fingerprint(&a.labels)
    } else {
        a.fingerprint.clone()
    }
}

/// Claims the firing alerts of `payload` and starts one investigation for the new ones.
async fn investigate_payload(state: &AppState, mut payload: WebhookPayload) -> Response {
    payload.alerts.retain(|a| a.status == AlertStatus::Firing);
    if payload.alerts.is_empty() {
        return (
            StatusCode::OK,
            axum::Json(json!({"started": false, "reason": "no firing alerts"})),
        )
            .into_response();
    }
    let fingerprints: Vec<String> = payload.alerts.iter().map(alert_fingerprint).collect();
    let group_key = payload.group_key.clone();
    investigate(state, &group_key, &fingerprints, move |new| {
        if !new.is_empty() {
            payload
                .alerts
                .retain(|a| new.contains(&alert_fingerprint(a)));
        }
        (payload.primary().title(), Trigger::Alert(payload))
    })
    .await
}

fn remember(state: &AppState, alerts: impl IntoIterator<Item = InboxAlert>) {
    let mut received = lock(&state.received);
    for a in alerts {
        received.insert(&a);
    }
}

/// A version 4 webhook payload, which has an `alerts` array; JSON that parses into the struct's
/// defaults (`{}`, `[]`, a number) is not one.
fn webhook_payload(body: &[u8]) -> Result<WebhookPayload, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    match value.get("alerts") {
        Some(Value::Array(_)) => {}
        Some(_) => return Err("`alerts` is not an array".into()),
        None if value.is_object() => return Err("no `alerts` array".into()),
        None => return Err("expected a JSON object with an `alerts` array".into()),
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

async fn alertmanager_webhook(State(state): State<AppState>, body: Bytes) -> Response {
    let payload = match webhook_payload(&body) {
        Ok(p) => p,
        Err(reason) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not an Alertmanager webhook payload (version 4): {reason}"),
            );
        }
    };
    if !payload.version.is_empty() && payload.version != "4" {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "webhook payload version {:?}; this server reads version 4",
                payload.version
            ),
        );
    }
    state
        .deliveries
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    remember(
        &state,
        payload
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Firing)
            .map(from_webhook_alert),
    );
    {
        // Resolved alerts leave the received list. Their claims stay until they expire: however
        // deliveries interleave (a firing repeat after its resolve), one alert is investigated once.
        let mut received = lock(&state.received);
        for a in payload
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Resolved)
        {
            received.remove(&alert_fingerprint(a));
        }
    }
    investigate_payload(&state, payload).await
}

fn from_webhook_alert(a: &crate::model::Alert) -> InboxAlert {
    InboxAlert {
        source: inbox::Source::Alertmanager,
        alertname: a.name().to_string(),
        title: a
            .annotation("summary")
            .filter(|s| !s.is_empty())
            .unwrap_or(a.name())
            .to_string(),
        labels: a.labels.clone(),
        annotations: a.annotations.clone(),
        state: inbox::AlertState::Firing,
        starts_at: a.starts_at,
        fingerprint: alert_fingerprint(a),
        severity: a.label("severity").unwrap_or_default().to_string(),
        silenced_by: Vec::new(),
        inhibited_by: Vec::new(),
        url: a.generator_url.clone(),
        incident_id: None,
        assignees: Vec::new(),
        also_in: Vec::new(),
    }
}

async fn pagerduty_webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(secret) = &state.pagerduty_secret else {
        return error(
            StatusCode::FORBIDDEN,
            "PagerDuty webhooks need a signing secret: set [integrations.pagerduty] webhook_secret",
        );
    };
    let signature = headers
        .get("x-pagerduty-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !pagerduty::verify_signature(secret.expose_secret().as_bytes(), &body, signature) {
        return error(
            StatusCode::UNAUTHORIZED,
            "X-PagerDuty-Signature does not match the body under the configured secret",
        );
    }
    let value = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let event = match pagerduty::parse_webhook(&value) {
        Ok(e) => e,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    state
        .deliveries
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Some(incident) = event.incident else {
        return (
            StatusCode::OK,
            axum::Json(json!({"started": false, "reason": format!("{} is not about an incident", event.event_type)})),
        )
            .into_response();
    };
    let alert = inbox::sources::from_pagerduty(&incident);
    match event.event_type.as_str() {
        "incident.triggered" | "incident.reopened" | "incident.escalated" => {
            remember(&state, [alert.clone()]);
            let payload = inbox::payload_for(&[&alert], &BTreeMap::new());
            let mut payload = payload;
            payload.group_key = alert.fingerprint.clone();
            investigate_payload(&state, payload).await
        }
        "incident.resolved" => {
            lock(&state.received).remove(&alert.fingerprint);
            (
                StatusCode::OK,
                axum::Json(json!({"started": false, "reason": "resolved"})),
            )
                .into_response()
        }
        other => {
            if other == "incident.acknowledged" {
                remember(&state, [alert]);
            }
            (
                StatusCode::OK,
                axum::Json(json!({"started": false, "reason": format!("{other} noted")})),
            )
                .into_response()
        }
    }
}

async fn list_alerts(State(state): State<AppState>) -> Response {
    let mut health = Vec::new();
    // Polled alerts first: they carry silences and acknowledgements the webhooks do not.
    let mut polled = Vec::new();
    if let Some(sources) = &state.sources {
        let snap = sources.poll().await;
        health = snap.health;
        polled = snap.alerts;
    }
    let received: Vec<(Box<str>, Box<str>)> = {
        let mut r = lock(&state.received);
        r.age();
        r.alerts
            .iter()
            .map(|(fingerprint, (body, _))| (fingerprint.clone(), body.clone()))
            .collect()
    };
    let mut alerts: Vec<(String, Value)> = polled
        .iter()
        .map(|a| {
            let v = serde_json::to_value(a).unwrap_or(Value::Null);
            (a.fingerprint.clone(), v)
        })
        .collect();
    for (fingerprint, body) in received {
        if polled.iter().all(|m| *m.fingerprint != *fingerprint)
            && let Ok(v) = serde_json::from_str::<Value>(&body)
        {
            alerts.push((fingerprint.into(), v));
        }
    }
    let core = lock(&state.core);
    let alerts: Vec<Value> = alerts
        .into_iter()
        .map(|(fingerprint, mut v)| {
            if let (Some(obj), Some(s)) = (v.as_object_mut(), core.claims.session_of(&fingerprint))
            {
                obj.insert("session".into(), json!(s));
            }
            v
        })
        .collect();
    drop(core);
    let deliveries = state.deliveries.load(std::sync::atomic::Ordering::Relaxed);
    axum::Json(json!({"alerts": alerts, "sources": health, "webhook_deliveries": deliveries}))
        .into_response()
}

async fn list_sessions(State(state): State<AppState>) -> Response {
    // Reading the directory is blocking I/O: off the threads that answer requests.
    let dir = state.sessions_dir.clone();
    let (found, errors) = match off_thread(move || session::list_sessions(&dir)).await {
        Ok(listed) => listed,
        Err(r) => return r,
    };
    let queued: Vec<Value> = lock(&state.core)
        .queue
        .iter()
        .map(|q| json!({"id": q.id, "title": q.title, "queued": true, "running": false}))
        .collect();
    let running = lock(&state.sessions);
    let mut items: Vec<Value> = found
        .iter()
        .map(|s| {
            let id = session_id(&s.path);
            let live = running.get(&id);
            json!({
                "id": id,
                "title": live.map(|r| r.title.clone()).unwrap_or_else(|| s.title.clone()),
                "started": s.started,
                "outcome": s.outcome.map(|o| o.name()),
                "running": live.is_some_and(|r| r.outcome.is_none()),
            })
        })
        .collect();
    drop(running);
    items.extend(queued);
    let errors: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    axum::Json(json!({"sessions": items, "errors": errors})).into_response()
}

/// The session file of `id` (a file stem from `/api/sessions`); never a path from the request.
fn find_session(state: &AppState, id: &str) -> Option<PathBuf> {
    if let Some(r) = lock(&state.sessions).get(id) {
        return Some(r.path.clone());
    }
    let (found, _) = session::list_sessions(&state.sessions_dir);
    found
        .into_iter()
        .map(|s| s.path)
        .find(|p| session_id(p) == id)
}

async fn get_session(State(state): State<AppState>, UrlPath(id): UrlPath<String>) -> Response {
    if let Some(q) = lock(&state.core).queue.iter().find(|q| q.id == id) {
        return axum::Json(json!({"id": id, "title": q.title, "queued": true, "running": false}))
            .into_response();
    }
    let found = {
        let (state, id) = (state.clone(), id.clone());
        off_thread(move || {
            let path = find_session(&state, &id)?;
            Some(session::read_file(&path))
        })
        .await
    };
    let log = match found {
        Err(r) => return r,
        Ok(None) => return error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
        Ok(Some(Err(e))) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Ok(Some(Ok(l))) => l,
    };
    let incident = log.incident();
    let running = lock(&state.sessions)
        .get(&id)
        .is_some_and(|r| r.outcome.is_none());
    let mut body = session::export::json(&incident);
    if let Some(obj) = body.as_object_mut() {
        obj.insert("id".into(), json!(id));
        obj.insert("running".into(), json!(running));
        obj.insert(
            "pending_approvals".into(),
            json!(
                incident
                    .actions
                    .iter()
                    // An ended session (interrupted by a restart too) decides nothing more.
                    .filter(|a| {
                        running && a.status == crate::model::ActionStatus::AwaitingApproval
                    })
                    .map(|a| a.action.id.clone())
                    .collect::<Vec<_>>()
            ),
        );
        obj.insert(
            "pending_credentials".into(),
            json!(
                incident
                    .credentials
                    .iter()
                    .filter(|c| running && c.approved.is_none())
                    .map(|c| json!({"ref": c.reference, "integration": c.integration}))
                    .collect::<Vec<_>>()
            ),
        );
    }
    axum::Json(body).into_response()
}

/// Who is deciding: the name of the token the caller authenticated with; with no tokens (loopback
/// only), the OS user the kernel says owns the caller's end of the connection. Never a name the
/// request states.
fn decider(state: &AppState, caller: Option<&Caller>, peer: SocketAddr) -> Result<Decider, String> {
    let local_user = loopback_peer_uid(peer, state.local).map(crate::agent::approve::user_name);
    match (caller, local_user) {
        (Some(Caller(name)), Some(user)) => Ok(Decider {
            name: name.clone(),
            via: format!("api from {peer}, OS user {user}"),
        }),
        (Some(Caller(name)), None) => Ok(Decider {
            name: name.clone(),
            via: format!("api from {peer}"),
        }),
        (None, Some(user)) => Ok(Decider {
            name: user,
            via: format!("api from {peer}"),
        }),
        (None, None) => Err(format!(
            "cannot tell who is deciding: {peer} is not a local connection this host can attribute \
             to an OS user; start the server with --token-env and named tokens"
        )),
    }
}

/// The uid owning the client end of a loopback TCP connection to `server`, as the kernel lists it
/// in `/proc/net/tcp{,6}` (what identd answers). `None` off Linux, off loopback, or not found.
fn loopback_peer_uid(peer: SocketAddr, server: SocketAddr) -> Option<u32> {
    if !peer.ip().is_loopback() || !cfg!(target_os = "linux") {
        return None;
    }
    let table = match peer {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    let text = std::fs::read_to_string(table).ok()?;
    find_socket_uid(&text, peer, server.port())
}

/// In a `/proc/net/tcp` table, the uid of the established socket whose local end is `local` and
/// whose remote port is `remote_port`.
fn find_socket_uid(table: &str, local: SocketAddr, remote_port: u16) -> Option<u32> {
    // Addresses are the raw network-order bytes printed as native-endian 32-bit words.
    fn addr(field: &str) -> Option<(Vec<u8>, u16)> {
        let (ip, port) = field.split_once(':')?;
        if ip.len() % 8 != 0 {
            return None;
        }
        let mut bytes = Vec::with_capacity(ip.len() / 2);
        for i in (0..ip.len()).step_by(8) {
            let word = u32::from_str_radix(ip.get(i..i + 8)?, 16).ok()?;
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        Some((bytes, u16::from_str_radix(port, 16).ok()?))
    }
    let want: Vec<u8> = match local.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, st, uid) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(7)?);
        let (lip, lport) = addr(l)?;
        let (_, rport) = addr(r)?;
        // 01: established.
        (*st == "01" && lip == want && lport == local.port() && rport == remote_port)
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// The reason a denial through the API gives, or the API's own.
fn deny_reason(v: &Value) -> String {
    v.get("reason")
        .and_then(Value::as_str)
        .unwrap_or("denied through the API")
        .to_string()
}

/// Hand a decision to the running session `id`, attributed to the caller the server identified.
fn send_decision(state: &AppState, id: &str, by: Decider, cmd: Command) -> Response {
    let sessions = lock(&state.sessions);
    let Some(r) = sessions.get(id).filter(|r| r.outcome.is_none()) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no running session {id:?} started by this server"),
        );
    };
    let sent = r.decisions.send(Attributed {
        decider: by,
        command: cmd,
    });
    match sent {
        Ok(()) => (StatusCode::ACCEPTED, axum::Json(json!({"sent": true}))).into_response(),
        Err(_) => error(StatusCode::CONFLICT, "the session has ended"),
    }
}

fn decide(
    state: &AppState,
    id: &str,
    body: &[u8],
    approve: bool,
    by: Result<Decider, String>,
) -> Response {
    let v = match parse_json(body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let by = match by {
        Ok(by) => by,
        Err(e) => return error(StatusCode::FORBIDDEN, e),
    };
    let Some(action_id) = v
        .get("action_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return error(StatusCode::BAD_REQUEST, "expected {\"action_id\": \"...\"}");
    };
    let cmd = if approve {
        Command::Approve {
            action_id: action_id.to_string(),
            by: Some(by.name.clone()),
            params: None,
            // The version the approver saw; the agent refuses it if the action changed since.
            digest: v.get("digest").and_then(Value::as_str).map(str::to_string),
        }
    } else {
        Command::Deny {
            action_id: action_id.to_string(),
            reason: deny_reason(&v),
            by: Some(by.name.clone()),
        }
    };
    send_decision(state, id, by, cmd)
}

async fn approve(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let by = decider(&state, caller.as_deref(), peer);
    decide(&state, &id, &body, true, by)
}

async fn deny(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let by = decider(&state, caller.as_deref(), peer);
    decide(&state, &id, &body, false, by)
}

/// `{"ref": "op://...", "approve": true|false, "reason": "..."}`: the caller's decision on a
/// credential a specialist of that session asked for, recorded under the caller's identity.
async fn credentials(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let v = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let by = match decider(&state, caller.as_deref(), peer) {
        Ok(by) => by,
        Err(e) => return error(StatusCode::FORBIDDEN, e),
    };
    let expected = "expected {\"ref\": \"op://...\", \"approve\": true|false, \"reason\": \"...\"}";
    let (Some(reference), Some(approve)) = (
        v.get("ref")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty()),
        v.get("approve").and_then(Value::as_bool),
    ) else {
        return error(StatusCode::BAD_REQUEST, expected);
    };
    let cmd = if approve {
        Command::ApproveCredential {
            reference: reference.to_string(),
            by: Some(by.name.clone()),
        }
    } else {
        Command::DenyCredential {
            reference: reference.to_string(),
            reason: deny_reason(&v),
            by: Some(by.name.clone()),
        }
    };
    send_decision(&state, &id, by, cmd)
}

/// `POST /api/sessions/{id}/note` `{"text": "..."}`: an operator's note on a running session,
/// recorded under the caller's name; every later recall of this incident shows it.
async fn note(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let v = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let by = match decider(&state, caller.as_deref(), peer) {
        Ok(by) => by,
        Err(e) => return error(StatusCode::FORBIDDEN, e),
    };
    let Some(text) = v
        .get("text")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return error(StatusCode::BAD_REQUEST, "expected {\"text\": \"...\"}");
    };
    send_decision(
        &state,
        &id,
        by,
        Command::Note {
            text: text.to_string(),
        },
    )
}

async fn new_investigation(State(state): State<AppState>, body: Bytes) -> Response {
    let v = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    if let Some(alert) = v.get("alert") {
        return match serde_json::from_value::<WebhookPayload>(alert.clone()) {
            Ok(p) => investigate_payload(&state, p).await,
            Err(e) => error(
                StatusCode::BAD_REQUEST,
                format!("`alert` is not an Alertmanager webhook payload (version 4): {e}"),
            ),
        };
    }
    match v.get("problem").and_then(Value::as_str).map(str::trim) {
        Some(text) if !text.is_empty() => {
            let title: String = text.chars().take(80).collect();
            let problem = text.to_string();
            investigate(&state, "", &[], move |_| (title, Trigger::Problem(problem))).await
        }
        _ => error(
            StatusCode::BAD_REQUEST,
            "expected {\"alert\": <Alertmanager webhook payload>} or {\"problem\": \"text\"}",
        ),
    }
}

/// How long shutdown waits for Slack messages still queued.
const SLACK_FLUSH_GRACE: Duration = Duration::from_secs(5);

/// Where Slack sends button presses (interactivity's request URL).
pub const SLACK_INTERACTIONS: &str = "/webhook/slack/interactions";

/// `POST /webhook/slack/interactions`: an approve or deny button of an approval message. Only
/// Slack's signature authenticates it; the decider is the operator `[notify.slack.users]` maps
/// the presser to, and the decision takes the API's path (same identity and two-person rules).
/// Whatever is refused decides nothing and is answered with a message only the presser sees.
async fn slack_interactions(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = |text: String| axum::Json(crate::notify::slack::ephemeral(&text)).into_response();
    let Some(slack) = &state.slack else {
        return error(
            StatusCode::NOT_FOUND,
            "Slack is not configured on this server ([notify.slack])",
        );
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    if let Err(why) = slack.verify(
        &header("x-slack-request-timestamp"),
        &header("x-slack-signature"),
        &body,
        chrono::Utc::now().timestamp(),
    ) {
        tracing::warn!("Slack interaction refused: {why}");
        return answer(format!("sitrep: {why}"));
    }
    let press = match crate::notify::slack::parse_interaction(&body) {
        Ok(p) => p,
        Err(why) => return answer(format!("sitrep: {why}")),
    };
    let Some(name) = slack.operator(&press.user) else {
        return answer(format!(
            "sitrep: your Slack user {} is not mapped to an operator ([notify.slack.users]): \
             nothing was decided",
            press.user
        ));
    };
    let by = Decider {
        name: name.to_string(),
        via: format!("slack user {}", press.user),
    };
    let cmd = if press.approve {
        Command::Approve {
            action_id: press.action_id.clone(),
            by: Some(by.name.clone()),
            params: None,
            digest: press.digest.clone(),
        }
    } else {
        Command::Deny {
            action_id: press.action_id.clone(),
            reason: "denied in Slack".into(),
            by: Some(by.name.clone()),
        }
    };
    let verb = if press.approve { "approval" } else { "denial" };
    let sent = send_decision(&state, &press.session, by, cmd);
    if sent.status().is_success() {
        answer(format!(
            "sitrep: your {verb} of {} was sent to session {} as {name}",
            press.action_id, press.session
        ))
    } else {
        answer(format!(
            "sitrep: your {verb} of {} was not applied: session {} is not running on this server",
            press.action_id, press.session
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(fp: &str, group: &str) -> WebhookPayload {
        WebhookPayload {
            version: "4".into(),
            group_key: group.into(),
            alerts: vec![crate::model::Alert {
                fingerprint: fp.into(),
                ..crate::model::Alert::default()
            }],
            ..WebhookPayload::default()
        }
    }

    fn about(name: &str, labels: &[(&str, &str)]) -> Trigger {
        let mut l: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.insert("alertname".into(), name.into());
        Trigger::Alert(WebhookPayload {
            alerts: vec![crate::model::Alert {
                labels: l,
                ..crate::model::Alert::default()
            }],
            ..WebhookPayload::default()
        })
    }

    #[test]
    fn another_rule_on_the_same_subject_joins_and_the_same_rule_elsewhere_does_not() {
        let checkout = [("namespace", "shop"), ("deployment", "checkout")];
        let mut core = Core::default();
        core.live("s1", "g1", &about("KubePodCrashLooping", &checkout));
        // Another rule about the same deployment, in another group: the same incident.
        let mismatch = about("KubeDeploymentReplicasMismatch", &checkout);
        assert_eq!(core.related("g2", &mismatch).as_deref(), Some("s1"));
        // The same rule on the same deployment but another group: kept apart, as Alertmanager did.
        let again = about("KubePodCrashLooping", &checkout);
        assert_eq!(core.related("g3", &again), None);
        // Its own group joins, whatever the alert.
        assert_eq!(core.related("g1", &again).as_deref(), Some("s1"));
        // Another deployment, or the same name in another namespace, is another subject.
        let other = about(
            "KubeDeploymentReplicasMismatch",
            &[("namespace", "shop"), ("deployment", "cart")],
        );
        assert_eq!(core.related("g4", &other), None);
        let elsewhere = about(
            "KubeDeploymentReplicasMismatch",
            &[("namespace", "ops"), ("deployment", "checkout")],
        );
        assert_eq!(core.related("g5", &elsewhere), None);
        // An RDS instance, named in any convention, is one subject.
        core.live(
            "s2",
            "g6",
            &about(
                "RDSCPUUtilizationHigh",
                &[("DBInstanceIdentifier", "orders-db")],
            ),
        );
        let conns = about(
            "RDSDatabaseConnectionsHigh",
            &[("db_instance_identifier", "orders-db")],
        );
        assert_eq!(core.related("g7", &conns).as_deref(), Some("s2"));
        // Once it ended, nothing joins it.
        core.ended("s1");
        assert_eq!(core.related("g2", &mismatch), None);
        assert_eq!(core.related("g1", &again), None);
    }

    #[test]
    fn recovery_rebuilds_claims_marks_the_unended_and_requeues_the_waiting() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path();
        let h = session::header("x", chrono::Utc::now(), "t");
        let header = serde_json::to_string(&h).unwrap_or_default();
        let ended = "{\"t\":1.0,\"event\":{\"type\":\"session_ended\",\"outcome\":\"resolved\"}}";
        let stage = "{\"t\":0.5,\"event\":{\"type\":\"stage_started\",\"stage\":\"triage\"}}";
        // s1 ended; s2 was killed mid-line; s3 never got its file (queued); s4 was withdrawn.
        let write = |name: &str, text: String| {
            std::fs::write(d.join(name), text).unwrap_or_else(|e| panic!("{e}"));
        };
        write("s1.ndjson", format!("{header}\n{ended}\n"));
        write("s2.ndjson", format!("{header}\n{stage}\n{{\"t\":0.7,\"ev"));
        let entries = [
            entry_for(
                "s1",
                "g1",
                &["f1".into()],
                "one",
                &Trigger::Alert(payload("f1", "g1")),
                false,
            ),
            entry_for(
                "s2",
                "g2",
                &["f2".into()],
                "two",
                &Trigger::Alert(payload("f2", "g2")),
                false,
            ),
            entry_for(
                "s3",
                "g3",
                &["f3".into()],
                "three",
                &Trigger::Alert(payload("f3", "g3")),
                false,
            ),
            entry_for(
                "s3",
                "g3",
                &["f5".into()],
                "three",
                &Trigger::Alert(payload("f5", "g3")),
                true,
            ),
            entry_for(
                "s4",
                "g4",
                &["f4".into()],
                "four",
                &Trigger::Problem("p".into()),
                false,
            ),
            JournalEntry {
                session: "s4".into(),
                forget: true,
                ..JournalEntry::default()
            },
        ];
        for e in &entries {
            journal_append(d, e).unwrap_or_else(|e| panic!("{e}"));
        }
        // A torn last journal line (killed mid-append) is skipped.
        let mut j = std::fs::read_to_string(journal_path(d)).unwrap_or_default();
        j.push_str("{\"session\":\"s9\",\"fing");
        std::fs::write(journal_path(d), j).unwrap_or_else(|e| panic!("{e}"));

        let r = recover(d);
        assert_eq!(r.interrupted, 1);
        assert_eq!(r.claims.session_of("f1"), Some("s1"));
        assert_eq!(r.claims.session_of("f2"), Some("s2"));
        assert_eq!(r.claims.session_of("f5"), Some("s3"));
        assert_eq!(r.claims.session_of("f4"), None);
        assert_eq!(r.queue.len(), 1);
        assert_eq!(r.queue[0].id, "s3");
        assert!(matches!(&r.queue[0].trigger, Trigger::Alert(p) if p.alerts.len() == 2));
        let log = session::read_file(&d.join("s2.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        assert!(log.tear.is_none());
        assert_eq!(log.incident().outcome, Some(Outcome::Interrupted));
        assert_eq!(log.records.len(), 3, "stage, warning, end");
        let log = session::read_file(&d.join("s1.ndjson")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(log.incident().outcome, Some(Outcome::Resolved));
        // Recovering again changes nothing: the compacted journal says the same.
        let again = recover(d);
        assert_eq!(again.interrupted, 0);
        assert_eq!(again.queue.len(), 1);
        assert_eq!(again.claims.session_of("f2"), Some("s2"));
    }

    #[test]
    fn a_report_written_before_a_kill_is_written_again_as_interrupted() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s5.ndjson");
        let h = session::header("x", chrono::Utc::now(), "t");
        let mut text = serde_json::to_string(&h).unwrap_or_default();
        let report = crate::model::Record {
            t: 2.0,
            event: crate::model::Event::Report {
                markdown: "| | |\n|---|---|\n| Outcome | resolved |\n".into(),
            },
        };
        text.push('\n');
        text.push_str(&serde_json::to_string(&report).unwrap_or_default());
        text.push('\n');
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(mark_interrupted(&path).unwrap_or_else(|e| panic!("{e}")));
        let log = session::read_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let incident = log.incident();
        assert_eq!(incident.outcome, Some(Outcome::Interrupted));
        let md = incident.report.unwrap_or_default();
        assert!(md.contains("| Outcome | interrupted |"), "{md}");
        let beside = std::fs::read_to_string(path.with_extension("md")).unwrap_or_default();
        assert!(beside.contains("| Outcome | interrupted |"), "{beside}");
    }

    #[test]
    fn claims_are_exact_and_can_be_withdrawn() {
        let mut c = Claims::default();
        let fps = vec!["a".to_string(), "b".to_string()];
        assert_eq!(c.check("g", &fps), Claim::New(fps.clone()));
        c.record("g", &fps, "s1");
        assert_eq!(c.check("g", &fps), Claim::Known("s1".into()));
        c.forget("s1", Some(&["b".to_string()]));
        assert_eq!(c.check("g", &fps), Claim::New(vec!["b".into()]));
        c.forget("s1", None);
        assert_eq!(c.check("g", &[]), Claim::New(vec![]));
    }

    #[test]
    fn a_token_is_required_off_loopback() {
        let public: SocketAddr = "0.0.0.0:9095".parse().expect("addr");
        let local: SocketAddr = "127.0.0.1:9095".parse().expect("addr");
        assert!(matches!(
            token_for(public, None),
            Err(ServeError::NoToken(_))
        ));
        assert!(matches!(token_for(local, None), Ok(t) if t.is_empty()));
        assert!(matches!(
            token_for(local, Some("SITREP_TEST_SURELY_UNSET_TOKEN")),
            Err(ServeError::TokenUnset(_))
        ));
    }

    fn names(tokens: &[ApiToken]) -> Vec<&str> {
        tokens.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn tokens_are_named_per_person_or_one_unnamed() {
        let t = parse_tokens("alice=tok-a1, bob=tok-b2\ncarol=dG9rZW4=").expect("named");
        assert_eq!(names(&t), ["alice", "bob", "carol"]);
        assert_eq!(t[2].secret.expose_secret(), "dG9rZW4=");
        // A bare token, base64 padding included, is one token for everyone: `api`.
        for bare in ["s3cret-token", "dG9rZW4=", "abc=="] {
            let t = parse_tokens(bare).expect("bare");
            assert_eq!(names(&t), [UNNAMED_TOKEN]);
            assert_eq!(t[0].secret.expose_secret(), bare);
        }
        let dup = parse_tokens("alice=x1,alice=x2").err().unwrap_or_default();
        assert!(dup.contains("twice"), "{dup}");
        let shared = parse_tokens("alice=same,bob=same")
            .err()
            .unwrap_or_default();
        assert!(
            shared.contains("same token") && !shared.contains("=same"),
            "{shared}"
        );
    }

    #[test]
    fn a_loopback_socket_is_found_by_its_two_ends() {
        // /proc/net/tcp as Linux prints it: 127.0.0.1:41234 -> 127.0.0.1:9095, uid 1001.
        let lo = u32::from_ne_bytes([127, 0, 0, 1]);
        let table = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
             0: {lo:08X}:2383 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n   \
             1: {lo:08X}:A0D2 {lo:08X}:2383 01 00000000:00000000 00:00000000 00000000  1001        0 2 1\n   \
             2: {lo:08X}:2383 {lo:08X}:A0D2 01 00000000:00000000 00:00000000 00000000     0        0 3 1\n"
        );
        let peer: SocketAddr = "127.0.0.1:41170".parse().expect("addr");
        assert_eq!(find_socket_uid(&table, peer, 9091), Some(1001));
        // The server's own end of the same connection, or another port, is not the caller.
        assert_eq!(find_socket_uid(&table, peer, 9092), None);
        let other: SocketAddr = "127.0.0.1:41171".parse().expect("addr");
        assert_eq!(find_socket_uid(&table, other, 9091), None);
        assert_eq!(find_socket_uid("garbage\n0: zz", peer, 9091), None);
        // /proc/net/tcp6: ::1 as four native-endian words.
        let one: String = std::net::Ipv6Addr::LOCALHOST
            .octets()
            .chunks(4)
            .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        let table6 = format!(
            "  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
             0: {one}:A0D2 {one}:2383 01 00000000:00000000 00:00000000 00000000  1002        0 4 1\n"
        );
        let peer6: SocketAddr = "[::1]:41170".parse().expect("addr");
        assert_eq!(find_socket_uid(&table6, peer6, 9091), Some(1002));
        assert_eq!(find_socket_uid(&table6, peer, 9091), None);
    }
}
