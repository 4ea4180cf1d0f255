//! Canary test: one secret of each kind is planted in every input of an investigation (the alert,
//! every integration's responses, logs, pod environment variables, the operator's chat, the
//! `--problem` text, and the values of the configured credentials), and none may reach any sink:
//! session files, the recorded case, `export` (markdown and JSON), `sessions`, stdout/stderr of
//! every command, the log directory, and the console's screen rendered over the saved session.
//! A model is configured too (a loopback fake speaking the OpenAI streaming format): no canary
//! reaches any request body it receives, and its API key, which it echoes back in an error,
//! reaches no sink.

mod support;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::IntoResponse;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use sitrep::tui::app::{AppState, Msg, update};
use sitrep::tui::keymap::Keymap;
use sitrep::tui::theme::Theme;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use support::Cluster;

/// A planted secret: what kind it is, the text planted (with its non-secret context), and the
/// part that must never be seen again.
struct Canary {
    kind: &'static str,
    planted: String,
    secret: String,
}

/// The values of the configured credentials (read from the environment by the config).
const AUTH_K8S: &str = "k8s-auth-canary-value-61c2";
const AUTH_PROM: &str = "prom-auth-canary-value-7d03";
const AUTH_LOKI: &str = "loki-auth-canary-value-8e14";
const AUTH_AM: &str = "am-auth-canary-value-9f25";
const AUTH_GH: &str = "gh-auth-canary-value-a036";

fn canaries() -> Vec<Canary> {
    let c = |kind, planted: &str, secret: &str| Canary {
        kind,
        planted: planted.to_string(),
        secret: secret.to_string(),
    };
    vec![
        c(
            "github ghp_",
            "ghp_CanaryGhp0123456789abcdefghijklmnopqr",
            "CanaryGhp0123456789abcdef",
        ),
        c(
            "github gho_",
            "gho_CanaryGho0123456789abcdefghijklmnopqr",
            "CanaryGho0123456789abcdef",
        ),
        c(
            "github ghs_",
            "ghs_CanaryGhs0123456789abcdefghijklmnopqr",
            "CanaryGhs0123456789abcdef",
        ),
        c(
            "github github_pat_",
            "github_pat_11CANARYPAT0_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
            "11CANARYPAT0_abcdefghijklmnop",
        ),
        c(
            "slack xoxb-",
            "xoxb-111111111111-2222222222222-CanaryXoxbToken00000000",
            "CanaryXoxbToken",
        ),
        c(
            "slack xoxp-",
            "xoxp-111111111111-2222222222222-3333333333333-canaryxoxp0000",
            "canaryxoxp0000",
        ),
        c(
            "slack xapp-",
            "xapp-1-A0CANARY00-4444444444444-canaryxapp0123456789abcdef",
            "canaryxapp0123456789",
        ),
        c(
            "aws access key AKIA",
            "AKIACANARY0AKIA01234",
            "AKIACANARY0AKIA01234",
        ),
        c(
            "aws access key ASIA",
            "ASIACANARY0ASIA01234",
            "ASIACANARY0ASIA01234",
        ),
        c(
            "aws secret key",
            "aws_secret_access_key=Canary0AwsSecret0Key0000000000000000wxyz",
            "Canary0AwsSecret0Key0000000000000000wxyz",
        ),
        c(
            "aws secret key (prose)",
            "AWS secret key: Canary1AwsSecret1Key1111111111111111wxyz",
            "Canary1AwsSecret1Key1111111111111111wxyz",
        ),
        c(
            "bearer token",
            "Authorization: Bearer CanaryBearer0123456789xyz",
            "CanaryBearer0123456789xyz",
        ),
        c(
            "password in URL",
            "https://admin:CanaryUrlPass0987@db.internal:5432/pay",
            "CanaryUrlPass0987",
        ),
        c(
            "?token=",
            "https://hooks.example.com/notify?token=CanaryQueryTok4455&x=1",
            "CanaryQueryTok4455",
        ),
        c(
            "?access_token=",
            "https://api.example.com/v1?access_token=CanaryAccessTok6677",
            "CanaryAccessTok6677",
        ),
        c(
            "api_key=",
            "client api_key=CanaryApiKey8899 loaded",
            "CanaryApiKey8899",
        ),
        c(
            "password=",
            "db password=CanaryPassword1122 host=db",
            "CanaryPassword1122",
        ),
        c(
            "JWT",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnlqd3QifQ.Q2FuYXJ5Snd0U2lnbmF0dXJl",
            "eyJzdWIiOiJjYW5hcnlqd3QifQ",
        ),
        c(
            "private key block",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpCanaryPrivateKeyBody0123456789abcdef\n-----END RSA PRIVATE KEY-----",
            "MIIEpCanaryPrivateKeyBody",
        ),
        c("configured kubernetes credential", AUTH_K8S, AUTH_K8S),
        c("configured prometheus credential", AUTH_PROM, AUTH_PROM),
        c("configured loki credential", AUTH_LOKI, AUTH_LOKI),
        c("configured alertmanager credential", AUTH_AM, AUTH_AM),
        c("configured github credential", AUTH_GH, AUTH_GH),
    ]
}

/// Every canary, one per line.
fn all_planted() -> String {
    canaries()
        .iter()
        .map(|c| c.planted.replace('\n', "\\n"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every canary on one line (for label values and one-line fields).
fn all_one_line() -> String {
    canaries()
        .iter()
        .map(|c| c.planted.replace('\n', " "))
        .collect::<Vec<_>>()
        .join(" ; ")
}

/// The kinds whose secret part appears in `text`.
fn leaks(text: &str) -> Vec<&'static str> {
    canaries()
        .into_iter()
        .filter(|c| text.contains(&c.secret))
        .map(|c| c.kind)
        .collect()
}

fn json_response(v: &Value) -> axum::response::Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

type Hits = Arc<Mutex<Vec<String>>>;

/// The model's API key (read from the environment by the config).
const LLM_KEY: &str = "sk-canary-llm-key-0a1b2c3d4e5f6a7b";

fn sse(events: Vec<Value>) -> String {
    let mut s: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

fn delta(d: Value, finish: Option<&str>) -> Value {
    json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":d,"finish_reason":finish}]})
}

/// A fake model: in the investigation it reads from every integration, then answers; a chat
/// question gets a 401 whose message echoes the key, as some providers' do. Every request body
/// and the Authorization header it came with are kept.
async fn model(bodies: Arc<Mutex<Vec<(String, Value)>>>) -> support::Server {
    let router = Router::new().fallback(move |headers: HeaderMap, body: axum::body::Bytes| {
        let bodies = bodies.clone();
        async move {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let auth = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_string();
            bodies.lock().map(|mut b| b.push((auth.clone(), v.clone()))).ok();
            if v.get("tools").is_none() {
                return (
                    StatusCode::UNAUTHORIZED,
                    [(header::CONTENT_TYPE, "application/json")],
                    json!({"error": {"message": format!("Incorrect API key provided: {}", auth.trim_start_matches("Bearer ")), "type": "invalid_request_error"}}).to_string(),
                )
                    .into_response();
            }
            let answered_tools = v["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            let text = if answered_tools {
                let answer = json!({"category": "code_defect", "root_cause": "model: payments-api errors",
                    "confidence": 0.5, "evidence": ["ev-0"], "ruled_out": [], "actions": []});
                sse(vec![delta(json!({"content": answer.to_string()}), None), delta(json!({}), Some("stop"))])
            } else {
                let calls = [
                    ("kubernetes__pods", json!({"namespace": "payments"})),
                    ("kubernetes__events", json!({"namespace": "payments"})),
                    ("kubernetes__deployments", json!({"namespace": "payments"})),
                    ("kubernetes__pod_logs", json!({"namespace": "payments", "pod": "payments-api-7f9dd8b6c4-x7gr9"})),
                    ("loki__query_range", json!({"query": "{namespace=\"payments\"}"})),
                    ("prometheus__rules", json!({})),
                    ("prometheus__alerts", json!({})),
                    ("prometheus__query_range", json!({"query": "http_errors_ratio"})),
                    ("alertmanager__alerts", json!({})),
                    ("github__commits", json!({})),
                    ("github__merged_pulls", json!({})),
                    ("github__deployments", json!({})),
                ];
                let mut ev = vec![delta(json!({"role": "assistant", "content": ""}), None)];
                for (i, (name, args)) in calls.iter().enumerate() {
                    ev.push(delta(json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}), None));
                }
                ev.push(delta(json!({}), Some("tool_calls")));
                sse(ev)
            };
            (StatusCode::OK, [(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
        }
    });
    support::serve(router).await
}

/// A fake Prometheus HTTP API whose rules, alerts and series carry the canaries.
async fn prometheus(hits: Hits) -> support::Server {
    let router = Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let hits = hits.clone();
        async move {
            if let Ok(mut h) = hits.lock() {
                h.push(uri.to_string());
            }
            // A proxy that echoes the credential it was given, as misconfigured ones do.
            let echoed = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let all = all_one_line();
            let now = chrono::Utc::now().timestamp() as f64;
            let values: Vec<Value> = (0..30)
                .map(|i| json!([now - 60.0 * (30 - i) as f64, if i > 20 { "0.3" } else { "0.01" }]))
                .collect();
            let series = json!({"metric": {"__name__": "http_errors_ratio", "namespace": "payments",
                "service": "payments-api", "note": all, "echo": echoed}, "values": values});
            let body = match uri.path() {
                "/api/v1/rules" => json!({"status": "success", "data": {"groups": [{"name": "payments",
                    "file": "rules.yml", "rules": [{"type": "alerting", "name": "PaymentsHighErrorRate",
                    "query": "http_errors_ratio > 0.05", "duration": 60, "health": "ok", "state": "firing",
                    "labels": {"severity": "critical", "note": all},
                    "annotations": {"description": all_planted()}, "alerts": []}]}]}}),
                "/api/v1/alerts" => json!({"status": "success", "data": {"alerts": [{"labels":
                    {"alertname": "PaymentsHighErrorRate", "namespace": "payments", "note": all},
                    "annotations": {"description": all_planted()}, "state": "firing",
                    "activeAt": "2026-04-18T10:40:00Z", "value": "3e-01"}]}}),
                "/api/v1/query_range" => json!({"status": "success", "data": {"resultType": "matrix",
                    "result": [series]}}),
                "/api/v1/query" => json!({"status": "success", "data": {"resultType": "vector",
                    "result": [{"metric": series["metric"].clone(), "value": [now, "0.3"]}]}}),
                _ => json!({"status": "error", "errorType": "bad_data", "error": format!("unknown path; {all}")}),
            };
            json_response(&body)
        }
    });
    support::serve(router).await
}

/// A fake Loki whose log lines carry every canary, one a line.
async fn loki(hits: Hits) -> support::Server {
    let router = Router::new().fallback(move |uri: Uri| {
        let hits = hits.clone();
        async move {
            if let Ok(mut h) = hits.lock() {
                h.push(uri.to_string());
            }
            let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0);
            let values: Vec<Value> = canaries()
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!([
                        (now - (i as i64) * 1_000_000_000).to_string(),
                        format!("ERROR request failed: {}", c.planted.replace('\n', "\\n"))
                    ])
                })
                .collect();
            json_response(
                &json!({"status": "success", "data": {"resultType": "streams", "result": [
                {"stream": {"namespace": "payments", "app": "payments-api", "level": "error"},
                 "values": values}]}, "stats": {}}),
            )
        }
    });
    support::serve(router).await
}

/// A fake GitHub whose deployments, commits and pulls carry the canaries.
async fn github(hits: Hits) -> support::Server {
    let router = Router::new().fallback(move |uri: Uri| {
        let hits = hits.clone();
        async move {
            if let Ok(mut h) = hits.lock() {
                h.push(uri.to_string());
            }
            let all = all_planted();
            let recent = (chrono::Utc::now() - chrono::Duration::minutes(20)).to_rfc3339();
            let body = match uri.path() {
                "/repos/acme/payments/deployments" => json!([{"id": 11, "sha": support::MERGE_SHA,
                    "ref": "main", "environment": "production", "description": all,
                    "created_at": recent, "creator": {"login": "deploy-bot"}}]),
                "/repos/acme/payments/commits" => json!([{"sha": support::MERGE_SHA,
                    "html_url": "https://github.com/acme/payments/commit/a1b2c3d",
                    "commit": {"message": format!("Raise batch size (#42)\n\n{all}"),
                               "author": {"name": "Dana", "date": recent},
                               "committer": {"name": "GitHub", "date": recent}},
                    "author": {"login": "dana"}}]),
                "/repos/acme/payments/pulls" => json!([{"number": 42, "title": all_one_line(),
                    "merged_at": recent, "html_url": "https://github.com/acme/payments/pull/42",
                    "user": {"login": "dana"}, "merge_commit_sha": support::MERGE_SHA,
                    "base": {"ref": "main"}, "body": all}]),
                _ => json!({"message": format!("Not Found {all}")}),
            };
            json_response(&body)
        }
    });
    support::serve(router).await
}

/// A fake Alertmanager whose alerts carry the canaries.
async fn alertmanager() -> support::Server {
    let router = Router::new().fallback(|| async {
        json_response(
            &json!([{"labels": {"alertname": "PaymentsHighErrorRate", "note": all_one_line()},
            "annotations": {"description": all_planted()}, "startsAt": "2026-04-18T10:40:00Z",
            "endsAt": "2026-04-18T11:40:00Z", "fingerprint": "f1", "receivers": [{"name": "null"}],
            "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
            "updatedAt": "2026-04-18T10:40:00Z", "generatorURL": "http://prom/graph"}]),
        )
    });
    support::serve(router).await
}

/// The payments cluster with canaries in pod environment variables, annotations, events and logs.
fn cluster() -> Cluster {
    let mut c = Cluster::payments();
    let env: Vec<Value> = canaries()
        .iter()
        .enumerate()
        .map(|(i, k)| json!({"name": format!("SETTING_{i}"), "value": k.planted}))
        .chain([
            json!({"name": "GITHUB_TOKEN", "value": "plain-github-token-canary-b147"}),
            json!({"name": "SLACK_BOT_TOKEN", "value": "plain-slack-token-canary-c258"}),
            json!({"name": "AWS_SECRET_ACCESS_KEY", "value": "plain-aws-secret-canary-d369"}),
            json!({"name": "DB_PASSWORD", "value": "plain-db-password-canary-e47a"}),
        ])
        .collect();
    for pod in &mut c.pods {
        if let Some(container) = pod.pointer_mut("/spec/containers/0") {
            container["env"] = Value::Array(env.clone());
        }
        pod["metadata"]["annotations"] = json!({"note": all_one_line()});
    }
    for event in &mut c.events {
        event["message"] =
            Value::String(format!("Container api exceeded memory; {}", all_one_line()));
    }
    for logs in c.logs.values_mut().chain(c.previous_logs.values_mut()) {
        for k in canaries() {
            logs.push_str(&format!(
                "2026-04-18T10:45:10Z ERROR upstream said {}\n",
                k.planted.replace('\n', "\\n")
            ));
        }
    }
    c
}

/// Environment-variable values that are secret by name (planted in the pod spec as plain text).
const PLAIN_ENV_SECRETS: [&str; 4] = [
    "plain-github-token-canary-b147",
    "plain-slack-token-canary-c258",
    "plain-aws-secret-canary-d369",
    "plain-db-password-canary-e47a",
];

fn all_leaks(text: &str) -> Vec<String> {
    let mut found: Vec<String> = leaks(text).into_iter().map(str::to_string).collect();
    found.extend(
        PLAIN_ENV_SECRETS
            .iter()
            .filter(|s| text.contains(*s))
            .map(|s| format!("pod env value {s}")),
    );
    found
}

struct Env {
    config: PathBuf,
    data: PathBuf,
}

fn sitrep(env: &Env, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(args)
        .env("SITREP_CONFIG", &env.config)
        .env("SITREP_DATA_DIR", &env.data)
        .env("CANARY_K8S_TOKEN", AUTH_K8S)
        .env("CANARY_PROM_TOKEN", AUTH_PROM)
        .env("CANARY_LOKI_PASSWORD", AUTH_LOKI)
        .env("CANARY_AM_KEY", AUTH_AM)
        .env("CANARY_GH_AUTH", AUTH_GH)
        .env("CANARY_LLM_KEY", LLM_KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run sitrep: {e}"));
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("sitrep: {e}"))
}

/// Every file under `dir`, as (path, lossy text).
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            let text =
                String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
            out.push((path, text));
        }
    }
    out
}

/// The console drawn over a saved session, once per timeline row selected (so each evidence
/// item, finding and chat line is on screen at least once).
fn screens(session: &Path) -> Vec<String> {
    let log = sitrep::session::read_file(session).unwrap_or_else(|e| panic!("{e}"));
    let mut state = AppState::new(
        Theme::builtin("default").unwrap_or_default(),
        Keymap::default(),
    );
    state.size = (160, 48);
    for r in log.records {
        let _ = update(&mut state, Msg::Record(Box::new(r)));
    }
    let rows = state.incident().timeline.len();
    let mut out = Vec::new();
    for sel in 0..rows {
        state.follow = false;
        state.timeline_sel = sel;
        let _ = update(&mut state, Msg::Resize(160, 48));
        let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap_or_else(|e| panic!("{e}"));
        term.draw(|f| sitrep::tui::draw(&state, f))
            .unwrap_or_else(|e| panic!("{e}"));
        out.push(term.backend().to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_planted_secret_reaches_any_sink() {
    let k8s_cluster = Arc::new(Mutex::new(cluster()));
    let k8s = support::kubernetes(k8s_cluster.clone()).await;
    let (prom_hits, loki_hits, gh_hits): (Hits, Hits, Hits) = Default::default();
    let prom = prometheus(prom_hits.clone()).await;
    let loki = loki(loki_hits.clone()).await;
    let gh = github(gh_hits.clone()).await;
    let am = alertmanager().await;
    let model_bodies: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let llm = model(model_bodies.clone()).await;

    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[integrations.kubernetes]\nurl = \"{}\"\nnamespace = \"payments\"\n\
             auth = {{ kind = \"bearer\", token_env = \"CANARY_K8S_TOKEN\" }}\n\
             [integrations.prometheus]\nurl = \"{}\"\n\
             auth = {{ kind = \"bearer\", token_env = \"CANARY_PROM_TOKEN\" }}\n\
             [integrations.loki]\nurl = \"{}\"\n\
             auth = {{ kind = \"basic\", username = \"ops\", password_env = \"CANARY_LOKI_PASSWORD\" }}\n\
             [integrations.alertmanager]\nurl = \"{}\"\n\
             auth = {{ kind = \"header\", header = \"X-Api-Key\", value_env = \"CANARY_AM_KEY\" }}\n\
             [integrations.github]\nurl = \"{}\"\nrepo = \"acme/payments\"\n\
             auth = {{ kind = \"header\", header = \"Authorization\", value_env = \"CANARY_GH_AUTH\" }}\n\
             [llm]\nprovider = \"openai\"\nbase_url = \"{}/v1\"\nmodel = \"fake\"\n\
             api_key_env = \"CANARY_LLM_KEY\"\nmax_steps = 4\n",
            k8s.url, prom.url, loki.url, am.url, gh.url, llm.url
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let mut labels = json!({"alertname": "PaymentsHighErrorRate", "namespace": "payments",
        "service": "payments-api", "pod": "payments-api-7f9dd8b6c4-x7gr9", "severity": "critical",
        "api_token": "opaque-label-token-canary-f58b"});
    for (i, c) in canaries().iter().enumerate() {
        labels[format!("extra_{i}")] = Value::String(c.planted.replace('\n', " "));
    }
    let alert = tmp.path().join("alert.json");
    std::fs::write(
        &alert,
        json!({"version": "4", "status": "firing", "receiver": "sitrep",
               "externalURL": format!("https://am.example.com/?token={}", "CanaryQueryTok4455"),
               "commonAnnotations": {"description": all_planted()},
               "alerts": [{"status": "firing", "labels": labels,
                           "annotations": {"summary": format!("5xx above 5% {}", canaries()[0].planted),
                                           "description": all_planted(),
                                           "runbook_url": "https://admin:CanaryUrlPass0987@wiki.internal/rb"},
                           "startsAt": (chrono::Utc::now() - chrono::Duration::minutes(10)).to_rfc3339(),
                           "generatorURL": "http://prom:9090/graph?g0.expr=http_errors_ratio+%3E+0.05&access_token=CanaryAccessTok6677"}]})
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let data = tmp.path().join("data");
    let record = tmp.path().join("recorded");
    let env = Env {
        config,
        data: data.clone(),
    };
    let chat = format!(
        "{}\n{}\n",
        json!({"type": "chat", "text": format!("what about {}", all_one_line())}),
        json!({"type": "chat", "text": "why?"}),
    );
    let mut outputs: Vec<(String, String)> = Vec::new();
    fn keep(outputs: &mut Vec<(String, String)>, what: &str, out: &Output) {
        outputs.push((
            format!("{what} stdout"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ));
        outputs.push((
            format!("{what} stderr"),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }

    // 1. Live, recording the case.
    let (env_ref, alert_s, record_s, chat_s) = (
        Env {
            config: env.config.clone(),
            data: env.data.clone(),
        },
        alert.display().to_string(),
        record.display().to_string(),
        chat.clone(),
    );
    let live = tokio::task::spawn_blocking(move || {
        sitrep(
            &env_ref,
            &[
                "--headless",
                "--read-only",
                "investigate",
                "--alert",
                &alert_s,
                "--record",
                &record_s,
            ],
            &chat_s,
        )
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        live.status.success(),
        "live run: {}",
        String::from_utf8_lossy(&live.stderr)
    );
    keep(&mut outputs, "investigate --alert --record", &live);

    // The fakes were asked: the canaries were served, so their absence below means something.
    for (name, hits) in [
        ("prometheus", &prom_hits),
        ("loki", &loki_hits),
        ("github", &gh_hits),
    ] {
        let n = hits.lock().map(|h| h.len()).unwrap_or(0);
        assert!(n > 0, "{name} was never queried");
    }
    assert!(
        k8s_cluster.lock().map(|c| c.seen.len()).unwrap_or(0) > 0,
        "kubernetes was never queried"
    );
    let stdout = String::from_utf8_lossy(&live.stdout);
    for kind in [
        "kubernetes/pods",
        "kubernetes/events",
        "logs",
        "changes",
        "metrics",
    ] {
        assert!(
            stdout.contains(&format!("\"kind\":\"{kind}\"")),
            "no {kind} evidence gathered"
        );
    }
    assert!(stdout.contains("chat_message"), "the chat was answered");

    // 2. Offline, from the recording, with the canaries in the problem text.
    drop((k8s, prom, loki, gh, am));
    let (env_ref, record_s, chat_s) = (
        Env {
            config: env.config.clone(),
            data: env.data.clone(),
        },
        record.display().to_string(),
        chat.clone(),
    );
    let problem = all_one_line();
    let replayed = tokio::task::spawn_blocking(move || {
        sitrep(
            &env_ref,
            &[
                "--headless",
                "--read-only",
                "investigate",
                "--case",
                &record_s,
                "--problem",
                &problem,
            ],
            &chat_s,
        )
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        replayed.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    keep(&mut outputs, "investigate --case --problem", &replayed);

    // 3. Every session: export both ways, the listing, the console's screen.
    let sessions: Vec<PathBuf> = files_under(&data.join("sessions"))
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.extension().is_some_and(|e| e == "ndjson"))
        .collect();
    assert_eq!(sessions.len(), 2, "both runs saved a session: {sessions:?}");
    for s in &sessions {
        let file = s.display().to_string();
        keep(
            &mut outputs,
            "export markdown",
            &sitrep(&env, &["export", &file], ""),
        );
        keep(
            &mut outputs,
            "export json",
            &sitrep(&env, &["export", "--format", "json", &file], ""),
        );
        keep(
            &mut outputs,
            "replay --headless",
            &sitrep(&env, &["--headless", "replay", &file], ""),
        );
        for (i, screen) in screens(s).into_iter().enumerate() {
            outputs.push((format!("screen {i} of {file}"), screen));
        }
    }
    keep(&mut outputs, "sessions", &sitrep(&env, &["sessions"], ""));

    // 4. Every file written: session files, logs, the recorded case.
    for (path, text) in files_under(&data).into_iter().chain(files_under(&record)) {
        outputs.push((path.display().to_string(), text));
    }
    assert!(
        outputs
            .iter()
            .any(|(w, _)| w.ends_with("recordings.ndjson"))
    );
    assert!(outputs.iter().any(|(w, _)| w.ends_with("alert.json")));

    let screens_drawn = outputs
        .iter()
        .filter(|(w, _)| w.starts_with("screen"))
        .count();
    assert!(screens_drawn > 10, "only {screens_drawn} screens drawn");
    // The secrets were masked where they were, not merely absent.
    for s in &sessions {
        let text = std::fs::read_to_string(s).unwrap_or_default();
        assert!(
            text.contains("[REDACTED]"),
            "{}: nothing masked",
            s.display()
        );
    }

    // The model was asked, with the key, and read every integration's answers through its tools.
    let sent = model_bodies.lock().map(|b| b.clone()).unwrap_or_default();
    assert!(
        sent.iter()
            .all(|(auth, _)| auth == &format!("Bearer {LLM_KEY}")),
        "the key went out as a bearer header"
    );
    let investigations: Vec<&Value> = sent
        .iter()
        .map(|(_, b)| b)
        .filter(|b| b.get("tools").is_some())
        .collect();
    let with_results: Vec<&&Value> = investigations
        .iter()
        .filter(|b| b.to_string().contains("\"role\":\"tool\""))
        .collect();
    assert!(
        with_results.len() >= 2,
        "both runs fed tool results to the model ({} requests)",
        sent.len()
    );
    for b in &with_results {
        let tools: Vec<String> = b["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect();
        assert_eq!(tools.len(), 12, "one result per call");
        assert!(
            tools.iter().filter(|t| t.starts_with("evidence ")).count() >= 8,
            "most reads answered: {tools:?}"
        );
    }
    assert!(
        sent.iter().any(|(_, b)| b.get("tools").is_none()),
        "the chat went to the model"
    );
    // The provider's error that echoed the key was recorded (masked) and the rules answered.
    assert!(
        outputs
            .iter()
            .any(|(w, t)| w.ends_with("stdout") && t.contains("Incorrect API key provided")),
        "the echoing error was never seen"
    );
    for (i, (_, body)) in sent.iter().enumerate() {
        outputs.push((format!("model request body {i}"), body.to_string()));
    }
    assert!(
        outputs
            .iter()
            .any(|(w, t)| w.ends_with("stdout") && t.contains("model_exchange")),
        "exchanges recorded"
    );

    let mut failures = Vec::new();
    for (what, text) in &outputs {
        let mut found = all_leaks(text);
        if text.contains(LLM_KEY) {
            found.push("the model's API key".into());
        }
        if text.contains("opaque-label-token-canary-f58b") {
            found.push("secret-named alert label".into());
        }
        if !found.is_empty() {
            failures.push(format!("{what}: {}", found.join(", ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} sinks leak planted secrets:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
