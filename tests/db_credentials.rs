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

/// `[llm] api_key_env` as an `op://` reference: the model is not called and `op` does not run
/// until the operator approves the key (headless `approve_credential`); then the model endpoint
/// receives it as the bearer token, and the key (echoed back in an error) reaches no output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_key_by_reference_is_read_after_approval_and_never_shown() {
    model_key_run(true).await;
}

/// Denied, the key is never read, the model never called, and the rules' verdict stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_model_key_is_never_read_and_the_model_never_called() {
    model_key_run(false).await;
}

async fn model_key_run(approve: bool) {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let key = "sk-model-key-via-op-93ad";
    let reference = "op://ai/openai/key";
    let bin = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let marker = bin.path().join("op-ran");
    let op = bin.path().join("op");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nif [ \"$1\" = read ] && [ \"$3\" = '{reference}' ]; then printf '%s' '{key}'; exit 0; fi\nexit 1\n",
        marker.display()
    );
    if let Err(e) = std::fs::write(&op, script)
        .and_then(|_| std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755)))
    {
        panic!("{e}");
    }
    // The model endpoint remembers the Authorization headers it saw and refuses every request,
    // echoing the key as some providers do.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let headers = seen.clone();
    let model = support::serve(axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |h: HeaderMap| {
            let headers = headers.clone();
            async move {
                let auth = h
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                headers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(auth.clone());
                (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": {"message": format!("model not found for key {}", auth.trim_start_matches("Bearer "))}})),
                )
            }
        }),
    ))
    .await;
    let data = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let cfg = data.path().join("config.toml");
    let text = format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"m\"\napi_key_env = \"{reference}\"\nmax_steps = 2\n",
        model.url
    );
    if let Err(e) = std::fs::write(&cfg, text) {
        panic!("{e}");
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = match tokio::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "investigate", "--diagnosis-only"])
        .args(["--problem", "checkout requests time out"])
        .env("SITREP_DATA_DIR", data.path())
        .env("SITREP_CONFIG", &cfg)
        .env("PATH", &path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let mut stdin = child.stdin.take();
    let Some(stdout) = child.stdout.take() else {
        panic!("no stdout")
    };
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut out = String::new();
    let mut asked = false;
    let run = async {
        while let Ok(Some(line)) = lines.next_line().await {
            out.push_str(&line);
            out.push('\n');
            let Ok(rec) = serde_json::from_str::<sitrep::model::Record>(&line) else {
                continue;
            };
            if let sitrep::model::Event::CredentialRequested {
                reference: r,
                integration,
                ..
            } = &rec.event
            {
                assert_eq!((r.as_str(), integration.as_str()), (reference, "llm"));
                assert!(!marker.exists(), "op ran before approval");
                assert!(
                    seen.lock().unwrap_or_else(|e| e.into_inner()).is_empty(),
                    "the model was called before approval"
                );
                asked = true;
                if let Some(w) = stdin.as_mut() {
                    let cmd = if approve {
                        json!({"type": "approve_credential", "ref": r})
                    } else {
                        json!({"type": "deny_credential", "ref": r, "reason": "not for this incident"})
                    };
                    let _ = w.write_all(format!("{cmd}\n").as_bytes()).await;
                    let _ = w.flush().await;
                }
            }
            if matches!(rec.event, sitrep::model::Event::SessionEnded { .. }) {
                break;
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .is_err()
    {
        panic!("the investigation did not end in 120 s:\n{out}");
    }
    drop(stdin);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await;
    assert!(asked, "the key was never asked for:\n{out}");
    let sent = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if approve {
        assert!(marker.exists(), "op read the approved key");
        assert!(
            !sent.is_empty() && sent.iter().all(|a| *a == format!("Bearer {key}")),
            "{sent:?}"
        );
        // The refusal is reported, with the key it echoed masked.
        assert!(
            out.lines()
                .any(|l| l.contains("model investigation failed") && l.contains("[REDACTED]")),
            "{out}"
        );
    } else {
        assert!(!marker.exists(), "op ran although the key was denied");
        assert!(sent.is_empty(), "the model was called: {sent:?}");
        assert!(
            out.lines()
                .any(|l| l.contains("model investigation not run")
                    && l.contains("not for this incident")),
            "{out}"
        );
    }
    assert!(!out.contains(key), "the key reached the output:\n{out}");
    let sessions = support::session_files(&data.path().join("sessions"));
    assert!(!sessions.is_empty(), "no session file written");
    for f in sessions {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(!text.contains(key), "the key reached {}", f.display());
    }
}
