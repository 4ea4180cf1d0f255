//! Credentials by reference in an HTTP integration's `auth`: a `vault://` token (from a fake Vault
//! KV v2 on loopback) is read only after approval, sent to its own endpoint, and masked.

mod support;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn an_auth_reference_is_read_after_approval_and_sent_as_the_token() {
    let secret = "prom-token-via-vault-8b21";
    let vault_reads = Arc::new(Mutex::new(0u32));
    let reads = vault_reads.clone();
    let vault = support::serve(axum::Router::new().route(
        "/v1/kv/data/monitoring/prometheus",
        get(move |h: HeaderMap| {
            let reads = reads.clone();
            async move {
                *reads.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                if h.get("X-Vault-Token").and_then(|v| v.to_str().ok()) != Some("root-vt") {
                    return (
                        StatusCode::FORBIDDEN,
                        axum::Json(json!({"errors": ["permission denied"]})),
                    );
                }
                (
                    StatusCode::OK,
                    axum::Json(
                        json!({"data": {"data": {"token": secret}, "metadata": {"version": 1}}}),
                    ),
                )
            }
        }),
    ))
    .await;
    // Prometheus answers only to the right bearer token, and echoes the bare token back: only the
    // value learned when it was read can mask it.
    let prom = support::serve(axum::Router::new().route(
        "/api/v1/rules",
        get(move |h: HeaderMap| async move {
            let auth = h
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            if auth != format!("Bearer {secret}") {
                return (StatusCode::UNAUTHORIZED, axum::Json(json!({"status": "error", "error": "unauthorized"})));
            }
            (
                StatusCode::OK,
                axum::Json(json!({"status": "success", "data": {"groups": [{"name": "g", "file": "f", "rules": [
                    {"type": "alerting", "name": "Echo", "query": "up == 0", "health": "ok", "state": "inactive",
                     "labels": {}, "annotations": {"summary": format!("client sent {}", auth.trim_start_matches("Bearer "))}}
                ]}]}})),
            )
        }),
    ))
    .await;
    // SAFETY: the variables are read only by this test's process-wide secrets lookups.
    unsafe {
        std::env::set_var("VAULT_ADDR", &vault.url);
        std::env::set_var("VAULT_TOKEN", "root-vt");
    }
    let reference = "vault://kv/monitoring/prometheus#token";
    let text = format!(
        "[integrations.prometheus]\nurl = \"{}\"\nauth = {{ kind = \"bearer\", token_env = \"{reference}\" }}\n",
        prom.url
    );
    let config = match sitrep::config::Config::parse(&text, Path::new("config.toml")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let world = match sitrep::world::World::live(&config).await {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        world.keyring().pending_for("prometheus").as_deref(),
        Some(reference)
    );
    let before = world.prometheus().rules().await;
    assert!(
        before
            .as_ref()
            .is_err_and(|e| e.to_string().contains("approval")),
        "{before:?}"
    );
    assert_eq!(
        *vault_reads.lock().unwrap_or_else(|e| e.into_inner()),
        0,
        "nothing read before approval"
    );
    world
        .keyring()
        .decide(reference, sitrep::secrets::Decision::Approved);
    let rules = match world.prometheus().rules().await {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let summary = rules
        .first()
        .and_then(|r| r.annotations.get("summary"))
        .cloned()
        .unwrap_or_default();
    assert!(
        !summary.contains(secret),
        "the echoed token is masked: {summary}"
    );
    assert!(summary.contains("[REDACTED]"), "{summary}");
    // Read once, then kept in memory for the session.
    let _ = world.prometheus().rules().await;
    assert_eq!(*vault_reads.lock().unwrap_or_else(|e| e.into_inner()), 1);
}

/// PagerDuty's key by `op://` reference: not read before approval (`op` never runs), then sent as
/// `Authorization: Token token=KEY`, and masked when an answer echoes it.
#[tokio::test]
async fn a_pagerduty_key_by_reference_is_sent_as_its_token_header_after_approval() {
    use std::os::unix::fs::PermissionsExt;
    let key = "pd-key-via-op-41c7";
    let reference = "op://ops/pagerduty/credential";
    let bin = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let marker = bin.path().join("op-ran");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nif [ \"$1\" = read ] && [ \"$3\" = '{reference}' ]; then printf '%s' '{key}'; exit 0; fi\necho \"[ERROR] could not read secret '$3'\" >&2\nexit 1\n",
        marker.display()
    );
    let op = bin.path().join("op");
    if let Err(e) = std::fs::write(&op, script)
        .and_then(|_| std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755)))
    {
        panic!("{e}");
    }
    let pd = support::serve(axum::Router::new().route(
        "/incidents",
        get(move |h: HeaderMap| async move {
            let auth = h
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            if auth != format!("Token token={key}") {
                return (
                    StatusCode::UNAUTHORIZED,
                    axum::Json(json!({"error": {"message": "Unauthorized", "code": 2006}})),
                );
            }
            (
                StatusCode::OK,
                axum::Json(json!({"incidents": [{
                    "id": "PABC123", "incident_number": 7, "status": "triggered",
                    "title": format!("client sent {}", auth.trim_start_matches("Token token=")),
                    "urgency": "high", "created_at": "2026-01-01T00:00:00Z",
                    "service": {"id": "PSVC1", "summary": "checkout"}
                }], "limit": 100, "offset": 0, "more": false})),
            )
        }),
    ))
    .await;
    // SAFETY: PATH gains a directory holding only the fake `op`; every other program is found as before.
    unsafe {
        std::env::set_var(
            "PATH",
            format!(
                "{}:{}",
                bin.path().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
    }
    let text = format!(
        "[integrations.pagerduty]\nurl = \"{}\"\nauth = {{ kind = \"bearer\", token_env = \"{reference}\" }}\n",
        pd.url
    );
    let config = match sitrep::config::Config::parse(&text, Path::new("config.toml")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let world = match sitrep::world::World::live(&config).await {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        world.keyring().pending_for("pagerduty").as_deref(),
        Some(reference)
    );
    let before = world.pagerduty().open_incidents(&[]).await;
    assert!(
        before
            .as_ref()
            .is_err_and(|e| e.to_string().contains("approval")),
        "{before:?}"
    );
    assert!(!marker.exists(), "op ran before approval");
    world
        .keyring()
        .decide(reference, sitrep::secrets::Decision::Approved);
    let incidents = match world.pagerduty().open_incidents(&[]).await {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    };
    assert!(marker.exists(), "op was asked once approved");
    let shown = format!("{incidents:?}");
    assert_eq!(incidents.len(), 1, "{shown}");
    assert!(!shown.contains(key), "the echoed key is masked: {shown}");
    assert!(shown.contains("[REDACTED]"), "{shown}");
}
