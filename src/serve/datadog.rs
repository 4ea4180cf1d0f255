//! `POST /webhook/datadog`: Datadog monitor notifications, authenticated by a shared secret the
//! webhook sends in `X-Sitrep-Secret` (Datadog does not sign its webhooks).

use super::{
    AppState, alert_fingerprint, constant_time_eq, error, from_webhook_alert, investigate_payload,
    lock, remember,
};
use crate::model::{AlertStatus, monitor};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

pub const ROUTE: &str = "/webhook/datadog";
/// The header the webhook's custom headers set to the shared secret.
pub const SECRET_HEADER: &str = "x-sitrep-secret";

/// Reads the shared secret a reference names: an environment variable, or a 1Password or Vault
/// reference (approved by whoever starts the server with it configured).
pub async fn read_webhook_secret(reference: &str) -> anyhow::Result<SecretString> {
    let parsed = crate::secrets::SecretRef::parse(reference)?;
    let keyring = crate::secrets::Keyring::new();
    keyring.register("serve", &parsed);
    let name = parsed.to_string();
    keyring.decide(&name, crate::secrets::Decision::Approved);
    let value = keyring.get(&name).await?;
    if value.expose_secret().trim().is_empty() {
        anyhow::bail!("{name} is empty");
    }
    crate::policy::redact::learn_secret(value.expose_secret());
    Ok(value)
}

pub async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(secret) = &state.datadog_secret else {
        return error(
            StatusCode::NOT_FOUND,
            "Datadog webhooks are not accepted here: set [serve.datadog] secret",
        );
    };
    let given = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if given.is_empty() || !constant_time_eq(given, secret.expose_secret().as_bytes()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "X-Sitrep-Secret is missing or does not match [serve.datadog] secret",
        );
    }
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return error(StatusCode::BAD_REQUEST, "the body is not UTF-8 JSON"),
    };
    let payload = match monitor::parse(text) {
        Ok(p) => p,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    state
        .deliveries
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let recovered: Vec<String> = payload
        .alerts
        .iter()
        .filter(|a| a.status == AlertStatus::Resolved)
        .map(alert_fingerprint)
        .collect();
    if !recovered.is_empty() {
        let mut received = lock(&state.received);
        for f in &recovered {
            received.remove(f);
        }
        drop(received);
        return (
            StatusCode::OK,
            axum::Json(json!({"started": false, "reason": "resolved", "resolved": recovered})),
        )
            .into_response();
    }
    remember(
        &state,
        payload.alerts.iter().map(|a| {
            let mut row = from_webhook_alert(a);
            row.source = crate::inbox::Source::Datadog;
            row
        }),
    );
    investigate_payload(&state, payload).await
}
