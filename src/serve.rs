//! `sitrep serve`: the webhook receiver (Alertmanager v4, PagerDuty V3) and remote API over axum; each new
//! firing alert starts one headless investigation, saved as a session like any other.

use crate::agent::{AgentHandle, Attributed, Decider, Trigger};
use crate::inbox::{self, Claim, Deduper, InboxAlert, Sources};
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
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Bodies above this get 413 before any parsing.
pub const MAX_BODY: usize = 1024 * 1024;
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
    pub sessions_dir: PathBuf,
    pub starter: Starter,
    /// Alert sources polled for `GET /api/alerts`, if any are configured.
    pub sources: Option<Sources>,
}

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
    sessions_dir: PathBuf,
    sources: Option<Sources>,
    dedup: Mutex<Deduper>,
    sessions: Mutex<BTreeMap<String, Running>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Alerts received by webhook (latest state per fingerprint).
    received: Mutex<BTreeMap<String, InboxAlert>>,
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
    serve_on(listener, setup, shutdown_signal()).await
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

/// Serves on an already-bound listener until `shutdown` resolves.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    setup: Setup,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&setup.sessions_dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the sessions directory {}: {e}",
            setup.sessions_dir.display()
        )
    })?;
    let local = listener.local_addr()?;
    let state: AppState = Arc::new(Shared {
        starter: setup.starter,
        tokens: setup.tokens,
        local,
        pagerduty_secret: setup.pagerduty_secret,
        sessions_dir: setup.sessions_dir,
        sources: setup.sources,
        dedup: Mutex::new(Deduper::new()),
        sessions: Mutex::new(BTreeMap::new()),
        tasks: Mutex::new(Vec::new()),
        received: Mutex::new(BTreeMap::new()),
        deliveries: std::sync::atomic::AtomicU64::new(0),
    });
    let app = router(state.clone());
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    // End running sessions cleanly: cancel, then let each write its `session_ended`.
    for r in lock(&state.sessions).values() {
        if r.outcome.is_none() {
            let _ = r.commands.send(Command::Cancel);
        }
    }
    let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&state.tasks));
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, futures::future::join_all(tasks)).await;
    Ok(())
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/webhook/alertmanager", post(alertmanager_webhook))
        .route("/webhook/pagerduty", post(pagerduty_webhook))
        .route("/api/alerts", get(list_alerts))
        .route("/api/sessions", get(list_sessions))
        .route("/api/sessions/{id}", get(get_session))
        .route("/api/sessions/{id}/approve", post(approve))
        .route("/api/sessions/{id}/deny", post(deny))
        .route("/api/sessions/{id}/credentials", post(credentials))
        .route("/api/investigations", post(new_investigation))
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
    if !state.tokens.is_empty() {
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

/// Starts an investigation of `trigger`, registers it, and drains its records in the background.
fn start(state: &AppState, trigger: Trigger, title: &str) -> anyhow::Result<String> {
    let mut sessions = lock(&state.sessions);
    let now = chrono::Utc::now();
    let mut path = session::new_session_path_in(&state.sessions_dir, now, title);
    let mut n = 2;
    while sessions.values().any(|r| r.path == path) {
        path = session::new_session_path_in(&state.sessions_dir, now, &format!("{title} {n}"));
        n += 1;
    }
    let id = session_id(&path);
    let handle = (state.starter)(trigger, path.clone())?;
    let AgentHandle {
        mut records,
        commands,
        attributed,
        task,
        ..
    } = handle;
    sessions.insert(
        id.clone(),
        Running {
            path,
            title: title.to_string(),
            commands,
            decisions: attributed,
            outcome: None,
        },
    );
    drop(sessions);
    let shared = state.clone();
    let key = id.clone();
    let watcher = tokio::spawn(async move {
        // The session file is written by the investigation itself; the records only need draining.
        let drain = async { while records.recv().await.is_some() {} };
        let (_, result) = tokio::join!(drain, task);
        let outcome = match result {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => {
                tracing::warn!("investigation {key} failed: {e:#}");
                Outcome::Failed
            }
            Err(e) => {
                tracing::warn!("investigation {key} panicked: {e}");
                Outcome::Failed
            }
        };
        if let Some(r) = lock(&shared.sessions).get_mut(&key) {
            r.outcome = Some(outcome);
        }
    });
    let mut tasks = lock(&state.tasks);
    tasks.retain(|t| !t.is_finished());
    tasks.push(watcher);
    Ok(id)
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
fn investigate_payload(state: &AppState, mut payload: WebhookPayload) -> Response {
    payload.alerts.retain(|a| a.status == AlertStatus::Firing);
    if payload.alerts.is_empty() {
        return (
            StatusCode::OK,
            axum::Json(json!({"started": false, "reason": "no firing alerts"})),
        )
            .into_response();
    }
    let fingerprints: Vec<String> = payload.alerts.iter().map(alert_fingerprint).collect();
    // Checking and recording under one lock: two deliveries racing start one investigation.
    let mut dedup = lock(&state.dedup);
    match dedup.check(&payload.group_key, &fingerprints) {
        Claim::Known(session) => (
            StatusCode::OK,
            axum::Json(json!({"started": false, "duplicate": true, "session": session})),
        )
            .into_response(),
        Claim::New(new) => {
            if !new.is_empty() {
                payload
                    .alerts
                    .retain(|a| new.contains(&alert_fingerprint(a)));
            }
            let title = payload.primary().title();
            let claimed: Vec<String> = payload.alerts.iter().map(alert_fingerprint).collect();
            match start(state, Trigger::Alert(payload.clone()), &title) {
                Ok(id) => {
                    dedup.record(&payload.group_key, &claimed, &id);
                    (
                        StatusCode::ACCEPTED,
                        axum::Json(
                            json!({"started": true, "session": id, "alerts": claimed.len()}),
                        ),
                    )
                        .into_response()
                }
                Err(e) => error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot start the investigation: {e:#}"),
                ),
            }
        }
    }
}

fn remember(state: &AppState, alerts: impl IntoIterator<Item = InboxAlert>) {
    let mut received = lock(&state.received);
    for a in alerts {
        received.insert(a.fingerprint.clone(), a);
    }
}

async fn alertmanager_webhook(State(state): State<AppState>, body: Bytes) -> Response {
    let payload: WebhookPayload = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not an Alertmanager webhook payload (version 4): {e}"),
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
        // Resolved alerts leave the received list.
        let mut received = lock(&state.received);
        for a in payload
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Resolved)
        {
            received.remove(&alert_fingerprint(a));
        }
    }
    investigate_payload(&state, payload)
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
            investigate_payload(&state, payload)
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
    let mut lists = Vec::new();
    if let Some(sources) = &state.sources {
        let snap = sources.poll().await;
        health = snap.health;
        lists.push((inbox::Source::Alertmanager, snap.alerts));
    }
    let received: Vec<InboxAlert> = lock(&state.received).values().cloned().collect();
    // Polled alerts first: they carry silences and acknowledgements the webhooks do not.
    let mut merged = lists.pop().map(|(_, a)| a).unwrap_or_default();
    for a in received {
        if !merged.iter().any(|m| m.fingerprint == a.fingerprint) {
            merged.push(a);
        }
    }
    let dedup = lock(&state.dedup);
    let alerts: Vec<Value> = merged
        .iter()
        .map(|a| {
            let mut v = serde_json::to_value(a).unwrap_or(Value::Null);
            if let (Some(obj), Some(s)) = (v.as_object_mut(), dedup.session_of(&a.fingerprint)) {
                obj.insert("session".into(), json!(s));
            }
            v
        })
        .collect();
    let deliveries = state.deliveries.load(std::sync::atomic::Ordering::Relaxed);
    axum::Json(json!({"alerts": alerts, "sources": health, "webhook_deliveries": deliveries}))
        .into_response()
}

async fn list_sessions(State(state): State<AppState>) -> Response {
    let (found, errors) = session::list_sessions(&state.sessions_dir);
    let running = lock(&state.sessions);
    let items: Vec<Value> = found
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
    let Some(path) = find_session(&state, &id) else {
        return error(StatusCode::NOT_FOUND, format!("no session {id:?}"));
    };
    let log = match session::read_file(&path) {
        Ok(l) => l,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
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
                    .filter(|a| a.status == crate::model::ActionStatus::AwaitingApproval)
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
                    .filter(|c| c.approved.is_none())
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

async fn new_investigation(State(state): State<AppState>, body: Bytes) -> Response {
    let v = match parse_json(&body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    if let Some(alert) = v.get("alert") {
        return match serde_json::from_value::<WebhookPayload>(alert.clone()) {
            Ok(p) => investigate_payload(&state, p),
            Err(e) => error(
                StatusCode::BAD_REQUEST,
                format!("`alert` is not an Alertmanager webhook payload (version 4): {e}"),
            ),
        };
    }
    match v.get("problem").and_then(Value::as_str).map(str::trim) {
        Some(text) if !text.is_empty() => {
            let title: String = text.chars().take(80).collect();
            match start(&state, Trigger::Problem(text.to_string()), &title) {
                Ok(id) => (
                    StatusCode::ACCEPTED,
                    axum::Json(json!({"started": true, "session": id})),
                )
                    .into_response(),
                Err(e) => error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot start the investigation: {e:#}"),
                ),
            }
        }
        _ => error(
            StatusCode::BAD_REQUEST,
            "expected {\"alert\": <Alertmanager webhook payload>} or {\"problem\": \"text\"}",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
