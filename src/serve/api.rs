//! The remote API: alerts, sessions, decisions (approve, deny, credentials, notes) and new
//! investigations.

use super::*;

pub(super) async fn list_alerts(State(state): State<AppState>) -> Response {
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

pub(super) async fn list_sessions(State(state): State<AppState>) -> Response {
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
    let mut items: Vec<Value> = {
        let running = lock(&state.sessions);
        found
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
            .collect()
    };
    items.extend(queued);
    let mut errors: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    // Every other replica's sessions, from the store; this replica's are listed from its disk.
    if let Some(store) = &state.store {
        match store.sessions().await {
            Ok(stored) => {
                let mine: std::collections::HashSet<String> = items
                    .iter()
                    .filter_map(|v| v["id"].as_str().map(str::to_string))
                    .collect();
                let mut by_id: HashMap<&str, &store::StoredSession> = HashMap::new();
                for s in &stored {
                    by_id.insert(s.id.as_str(), s);
                }
                for item in items.iter_mut() {
                    let found = item_id(item).and_then(|id| by_id.get(id.as_str()).copied());
                    if let (Some(obj), Some(s)) = (item.as_object_mut(), found) {
                        obj.insert("replica".into(), json!(s.replica));
                        if let Some(old) = &s.takes_over {
                            obj.insert("takes_over".into(), json!(old));
                        }
                    }
                }
                items.extend(
                    stored
                        .iter()
                        .filter(|s| !mine.contains(&s.id))
                        .map(stored_item),
                );
            }
            Err(e) => errors.push(format!("the other replicas' sessions: {e}")),
        }
    }
    axum::Json(json!({"sessions": items, "errors": errors})).into_response()
}

fn item_id(v: &Value) -> Option<String> {
    v.get("id").and_then(Value::as_str).map(str::to_string)
}

/// A session of another replica, as `/api/sessions` lists it.
fn stored_item(s: &store::StoredSession) -> Value {
    let mut v = json!({
        "id": s.id,
        "title": s.title,
        "started": s.started,
        "outcome": s.outcome,
        "running": s.status == "running",
        "replica": s.replica,
    });
    if let (Some(obj), Some(old)) = (v.as_object_mut(), &s.takes_over) {
        obj.insert("takes_over".into(), json!(old));
    }
    v
}

/// The session file of `id` (a file stem from `/api/sessions`); never a path from the request.
pub(super) fn find_session(state: &AppState, id: &str) -> Option<PathBuf> {
    if let Some(r) = lock(&state.sessions).get(id) {
        return Some(r.path.clone());
    }
    let (found, _) = session::list_sessions(&state.sessions_dir);
    found
        .into_iter()
        .map(|s| s.path)
        .find(|p| session_id(p) == id)
}

pub(super) async fn get_session(
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Response {
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
    let mut elsewhere: Option<store::StoredSession> = None;
    let log = match found {
        Err(r) => return r,
        Ok(None) => match &state.store {
            // Not on this replica's disk: another replica's, from the store.
            Some(store) => match store.session(&id).await {
                Ok(Some((s, lines))) => {
                    let text = lines.join("\n") + "\n";
                    match session::SessionLog::from_reader(text.as_bytes()) {
                        Ok(log) => {
                            elsewhere = Some(s);
                            log
                        }
                        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
                    }
                }
                Ok(None) => return error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
                Err(e) => return unavailable(format!("the other replicas' sessions: {e}"), true),
            },
            None => return error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
        },
        Ok(Some(Err(e))) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Ok(Some(Ok(l))) => l,
    };
    let incident = log.incident();
    let running = match &elsewhere {
        Some(s) => s.status == "running" && incident.outcome.is_none(),
        None => lock(&state.sessions)
            .get(&id)
            .is_some_and(|r| r.outcome.is_none()),
    };
    let mut body = session::export::json(&incident);
    if let Some(obj) = body.as_object_mut() {
        obj.insert("id".into(), json!(id));
        obj.insert("running".into(), json!(running));
        if let Some(s) = &elsewhere {
            obj.insert("replica".into(), json!(s.replica));
            obj.insert("status".into(), json!(s.status));
            if let Some(old) = &s.takes_over {
                obj.insert("takes_over".into(), json!(old));
            }
        }
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

/// The reason a denial through the API gives, or the API's own.
/// `GET /api/sessions/ID/records?from=N`: the session's lines after the first N (line 0 is the
/// header), as NDJSON; only whole lines. From this replica's disk, or the store for another
/// replica's session: what `sitrep follow --server` tails.
pub(super) async fn session_records(
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    axum::extract::Query(query): axum::extract::Query<HashMap<String, String>>,
) -> Response {
    let from: usize = match query.get("from").map(|f| f.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "`from` is a line count"),
    };
    let local = {
        let (state, id) = (state.clone(), id.clone());
        off_thread(move || {
            let path = find_session(&state, &id)?;
            Some(std::fs::read(&path))
        })
        .await
    };
    let lines: Vec<String> = match local {
        Err(r) => return r,
        Ok(Some(Ok(bytes))) => {
            // A last line still being written is left for the next call.
            let whole = match bytes.iter().rposition(|b| *b == b'\n') {
                Some(end) => &bytes[..=end],
                None => &bytes[..0],
            };
            String::from_utf8_lossy(whole)
                .lines()
                .map(str::to_string)
                .collect()
        }
        Ok(Some(Err(e))) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Ok(None) => match &state.store {
            Some(store) => match store.session(&id).await {
                Ok(Some((_, lines))) => lines,
                Ok(None) => return error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
                Err(e) => return unavailable(format!("the other replicas' sessions: {e}"), true),
            },
            None => return error(StatusCode::NOT_FOUND, format!("no session {id:?}")),
        },
    };
    let mut body = String::new();
    for line in lines.iter().skip(from) {
        body.push_str(line);
        body.push('\n');
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        body,
    )
        .into_response()
}

pub(super) fn deny_reason(v: &Value) -> String {
    v.get("reason")
        .and_then(Value::as_str)
        .unwrap_or("denied through the API")
        .to_string()
}

/// Hand a decision to the running session `id`, attributed to the caller the server identified.
pub(super) async fn send_decision(
    state: &AppState,
    id: &str,
    by: Decider,
    cmd: Command,
) -> Response {
    let decision = Attributed {
        decider: by,
        command: cmd,
    };
    let sent = {
        let sessions = lock(&state.sessions);
        sessions
            .get(id)
            .filter(|r| r.outcome.is_none())
            .map(|r| r.decisions.send(decision.clone()).is_ok())
    };
    let Some(sent) = sent else {
        // Another replica's session: the store relays the decision to the replica running it.
        if let Some(store) = &state.store {
            return match store.post_decision(id, &decision).await {
                Ok(true) => (
                    StatusCode::ACCEPTED,
                    axum::Json(json!({"sent": true, "relayed": true})),
                )
                    .into_response(),
                Ok(false) => error(
                    StatusCode::NOT_FOUND,
                    format!("no running session {id:?} on any replica"),
                ),
                Err(e) => unavailable(format!("cannot relay the decision: {e}"), true),
            };
        }
        return error(
            StatusCode::NOT_FOUND,
            format!("no running session {id:?} started by this server"),
        );
    };
    if sent {
        (StatusCode::ACCEPTED, axum::Json(json!({"sent": true}))).into_response()
    } else {
        error(StatusCode::CONFLICT, "the session has ended")
    }
}

pub(super) async fn decide(
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
    send_decision(state, id, by, cmd).await
}

pub(super) async fn approve(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let by = decider(&state, caller.as_deref(), peer);
    decide(&state, &id, &body, true, by).await
}

pub(super) async fn deny(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    caller: Option<Extension<Caller>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Response {
    let by = decider(&state, caller.as_deref(), peer);
    decide(&state, &id, &body, false, by).await
}

/// `{"ref": "op://...", "approve": true|false, "reason": "..."}`: the caller's decision on a
/// credential a specialist of that session asked for, recorded under the caller's identity.
pub(super) async fn credentials(
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
    send_decision(&state, &id, by, cmd).await
}

/// `POST /api/sessions/{id}/note` `{"text": "..."}`: an operator's note on a running session,
/// recorded under the caller's name; every later recall of this incident shows it.
pub(super) async fn note(
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
    .await
}

pub(super) async fn new_investigation(State(state): State<AppState>, body: Bytes) -> Response {
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
            investigate(&state, "", &[], move |_| {
                (title.clone(), Trigger::Problem(problem.clone()))
            })
            .await
        }
        _ => error(
            StatusCode::BAD_REQUEST,
            "expected {\"alert\": <Alertmanager webhook payload>} or {\"problem\": \"text\"}",
        ),
    }
}
