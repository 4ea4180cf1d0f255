//! The webhook routes: Alertmanager v4, PagerDuty V3 and Slack's buttons; alerts received are kept
//! for `GET /api/alerts`.

use super::*;

/// Alerts kept for `GET /api/alerts`: the newest this many, none older than [`RECEIVED_MAX_AGE`].
pub(super) const RECEIVED_MAX: usize = 10_000;
pub(super) const RECEIVED_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// Alerts received by webhook, latest per fingerprint, with when each was last seen. Each is kept
/// as its JSON text, one allocation where the struct takes dozens: a storm leaves thousands of
/// them, and every small allocation left among the memory an investigation freed keeps that page
/// resident after the storm.
#[derive(Clone, Default)]
pub(super) struct Received {
    pub(super) alerts: HashMap<Box<str>, (Box<str>, Instant)>,
}

impl Received {
    pub(super) fn insert(&mut self, a: &InboxAlert) {
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
    pub(super) fn age(&mut self) {
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

    pub(super) fn remove(&mut self, fingerprint: &str) {
        self.alerts.remove(fingerprint);
    }
}

pub(super) fn remember(state: &AppState, alerts: impl IntoIterator<Item = InboxAlert>) {
    let mut received = lock(&state.received);
    for a in alerts {
        received.insert(&a);
    }
}

/// A version 4 webhook payload, which has an `alerts` array; JSON that parses into the struct's
/// defaults (`{}`, `[]`, a number) is not one.
pub(super) fn webhook_payload(body: &[u8]) -> Result<WebhookPayload, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    match value.get("alerts") {
        Some(Value::Array(_)) => {}
        Some(_) => return Err("`alerts` is not an array".into()),
        None if value.is_object() => return Err("no `alerts` array".into()),
        None => return Err("expected a JSON object with an `alerts` array".into()),
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

pub(super) async fn alertmanager_webhook(State(state): State<AppState>, body: Bytes) -> Response {
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
    // A takeover investigates again only what is still firing: the store hears of resolves.
    if let Some(store) = &state.store {
        let resolved: Vec<String> = payload
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Resolved)
            .map(alert_fingerprint)
            .collect();
        if !resolved.is_empty()
            && let Err(e) = store.resolved(&resolved).await
        {
            tracing::warn!("cannot record resolved alerts in the store: {e}");
        }
    }
    investigate_payload(&state, payload).await
}

pub(super) fn from_webhook_alert(a: &crate::model::Alert) -> InboxAlert {
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

pub(super) async fn pagerduty_webhook(
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

/// Where Slack sends button presses (interactivity's request URL).
pub const SLACK_INTERACTIONS: &str = "/webhook/slack/interactions";

/// `POST /webhook/slack/interactions`: an approve or deny button of an approval message. Only
/// Slack's signature authenticates it; the decider is the operator `[notify.slack.users]` maps
/// the presser to, and the decision takes the API's path (same identity and two-person rules).
/// Whatever is refused decides nothing and is answered with a message only the presser sees.
pub(super) async fn slack_interactions(
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
    let sent = send_decision(&state, &press.session, by, cmd).await;
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
