//! `sitrep doctor` run as the real binary: against Debian's Prometheus and Alertmanager, a closed
//! port, a server refusing the token, a Kubernetes API answering `SelfSubjectAccessReview`s, and a
//! host that accepts connections but never answers. Everything listens on loopback.

mod support;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Run {
    /// The `--json` lines, parsed.
    fn rows(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}\n{}", self.stdout))
            })
            .collect()
    }

    fn row(&self, integration: &str) -> Value {
        self.rows()
            .into_iter()
            .find(|r| r["integration"] == integration)
            .unwrap_or_else(|| panic!("no {integration} row in {}", self.stdout))
    }

    /// The integration's row, checked to have `status` and a detail containing `detail`.
    fn expect_row(&self, integration: &str, status: &str, detail: &str) -> Value {
        let row = self.row(integration);
        assert_eq!(row["status"], status, "{row}");
        assert!(
            row["detail"].as_str().unwrap_or("").contains(detail),
            "{row}"
        );
        row
    }
}

/// Runs `sitrep doctor ARGS` with `config` (TOML text) and `env`.
async fn doctor(config: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config).unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .arg("doctor")
        .args(args)
        .env("SITREP_CONFIG", &path)
        .env("SITREP_DATA_DIR", dir.path().join("data"))
        .env_remove("VAULT_ADDR")
        .env_remove("VAULT_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .unwrap_or_else(|_| panic!("sitrep doctor did not end within 60s"))
        .unwrap_or_else(|e| panic!("run sitrep: {e}"));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// `2.42.0` from `prometheus, version 2.42.0+ds (branch: ...)`.
fn installed_version(bin: &str) -> String {
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{bin} --version: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .map(|v| v.split(['+', '-']).next().unwrap_or(v).to_string())
        .unwrap_or_else(|| panic!("no version in {text}"))
}

fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_prometheus_and_alertmanager_are_ok_with_their_versions() {
    if !support::have_binaries(&["prometheus", "promtool", "prometheus-alertmanager"]) {
        return;
    }
    let now = chrono::Utc::now().timestamp();
    let (history, _) = support::metric_history(now - now % 60 - 60);
    let prom = support::prometheus(&history, "groups: []\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let am = support::alertmanager()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let config = format!(
        "[integrations.prometheus]\nurl = {}\n\n[integrations.alertmanager]\nurl = {}\n",
        toml_str(&prom.url),
        toml_str(&am.url)
    );
    let run = doctor(&config, &["--json"], &[]).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let p = run.row("prometheus");
    assert_eq!(p["status"], "ok", "{p}");
    let version = installed_version("prometheus");
    assert!(
        p["detail"].as_str().unwrap_or("").contains(&version),
        "{p} should carry {version}"
    );
    let a = run.row("alertmanager");
    assert_eq!(a["status"], "ok", "{a}");
    let version = installed_version("prometheus-alertmanager");
    assert!(
        a["detail"].as_str().unwrap_or("").contains(&version),
        "{a} should carry {version}"
    );
    // What is not configured is absent, and absent is not a failure.
    for name in [
        "kubernetes",
        "loki",
        "github",
        "pagerduty",
        "postgres",
        "llm",
    ] {
        assert_eq!(run.row(name)["status"], "absent", "{}", run.stdout);
    }

    // The table: one row per integration, within 100 columns.
    let table = doctor(&config, &[], &[]).await;
    assert_eq!(table.code, Some(0), "{}\n{}", table.stdout, table.stderr);
    for line in table.stdout.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line:?}");
    }
    let line = table
        .stdout
        .lines()
        .find(|l| l.starts_with("prometheus "))
        .unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(line.contains(" ok "), "{line}");

    // Alertmanager stopped: the same config now fails with the reason, exit 1.
    am.stop();
    let run = doctor(&config, &["--json"], &[]).await;
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let a = run.row("alertmanager");
    assert_eq!(a["status"], "failed", "{a}");
    assert_eq!(a["detail"], "connection refused", "{a}");
    assert_eq!(run.row("prometheus")["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_is_connection_refused_and_exit_1() {
    let port = support::free_port();
    let config = format!("[integrations.prometheus]\nurl = \"http://127.0.0.1:{port}\"\n");
    let run = doctor(&config, &["--json"], &[]).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let p = run.row("prometheus");
    assert_eq!(p["status"], "failed", "{p}");
    assert_eq!(p["detail"], "connection refused", "{p}");
    assert!(p["fix"].as_str().is_some_and(|f| !f.is_empty()), "{p}");
    assert!(run.stderr.contains("prometheus"), "{}", run.stderr);
}

const WRONG_TOKEN: &str = "wrong-token-4f1c9e2ab7";

/// Answers 401 to every request, as a server does to a token it does not know.
async fn refusing_server() -> support::Server {
    let router = Router::new().fallback(any(|| async {
        (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"message": "Bad credentials"}).to_string(),
        )
    }));
    support::serve(router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_401_unauthorized_and_never_shown() {
    let server = refusing_server().await;
    let config = format!(
        "[integrations.alertmanager]\nurl = {url}\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_TEST_TOKEN\" }}\n\n\
         [integrations.github]\nurl = {url}\nrepo = \"acme/payments\"\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_TEST_TOKEN\" }}\n\n\
         [integrations.pagerduty]\nurl = {url}\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_TEST_TOKEN\" }}\n",
        url = toml_str(&server.url)
    );
    let env = [("DOCTOR_TEST_TOKEN", WRONG_TOKEN)];
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    for name in ["alertmanager", "github", "pagerduty"] {
        let row = run.row(name);
        assert_eq!(row["status"], "failed", "{row}");
        assert!(
            row["detail"]
                .as_str()
                .unwrap_or("")
                .starts_with("401 unauthorized"),
            "{row}"
        );
    }
    let table = doctor(&config, &[], &env).await;
    for text in [&run.stdout, &run.stderr, &table.stdout, &table.stderr] {
        assert!(!text.contains(WRONG_TOKEN), "the token leaked: {text}");
    }

    // An unset variable is named, with what to do.
    let run = doctor(&config, &["--json"], &[]).await;
    run.expect_row("alertmanager", "failed", "DOCTOR_TEST_TOKEN");
}

/// A Kubernetes API server answering `GET /version` and `SelfSubjectAccessReview`s as the API
/// reference describes them: the review comes back with `status.allowed`, here false for `list
/// pods` and true for everything else. Every review asked is kept.
async fn kubernetes(
    seen: Arc<Mutex<Vec<Value>>>,
    token: &'static str,
    deny_list: &'static [&'static str],
) -> support::Server {
    let authorized = move |headers: &HeaderMap| {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            == Some(&format!("Bearer {token}"))
    };
    let router = Router::new()
        .route(
            "/version",
            get(move |headers: HeaderMap| async move {
                if !authorized(&headers) {
                    return (
                        StatusCode::UNAUTHORIZED,
                        support::k8s_status(401, "Unauthorized", "Unauthorized").to_string(),
                    )
                        .into_response();
                }
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    json!({
                        "major": "1", "minor": "30", "gitVersion": "v1.30.2",
                        "gitCommit": "39683505b630ff2121012f3c5b16215a1449d5ed",
                        "gitTreeState": "clean", "buildDate": "2024-06-11T20:21:00Z",
                        "goVersion": "go1.22.4", "compiler": "gc", "platform": "linux/amd64"
                    })
                    .to_string(),
                )
                    .into_response()
            }),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen.clone();
                async move {
                    if !authorized(&headers) {
                        return (
                            StatusCode::UNAUTHORIZED,
                            support::k8s_status(401, "Unauthorized", "Unauthorized").to_string(),
                        )
                            .into_response();
                    }
                    let review: Value = match serde_json::from_slice(&body) {
                        Ok(v) => v,
                        Err(e) => {
                            return (
                                StatusCode::BAD_REQUEST,
                                support::k8s_status(400, "BadRequest", &e.to_string())
                                    .to_string(),
                            )
                                .into_response();
                        }
                    };
                    if review["kind"] != "SelfSubjectAccessReview"
                        || review["apiVersion"] != "authorization.k8s.io/v1"
                    {
                        return (
                            StatusCode::BAD_REQUEST,
                            support::k8s_status(400, "BadRequest", "not a review").to_string(),
                        )
                            .into_response();
                    }
                    let attrs = &review["spec"]["resourceAttributes"];
                    let denied = attrs["verb"] == "list"
                        && deny_list.iter().any(|r| attrs["resource"] == *r)
                        && attrs["subresource"].as_str().unwrap_or("").is_empty();
                    if let Ok(mut s) = seen.lock() {
                        s.push(attrs.clone());
                    }
                    let mut status = json!({"allowed": !denied});
                    if denied {
                        status["reason"] = json!("");
                    } else {
                        status["reason"] = json!(
                            "RBAC: allowed by ClusterRoleBinding \"sitrep\" of ClusterRole \"sitrep\" to ServiceAccount \"sitrep/sitrep\""
                        );
                    }
                    let answer = json!({
                        "kind": "SelfSubjectAccessReview",
                        "apiVersion": "authorization.k8s.io/v1",
                        "metadata": {"creationTimestamp": null},
                        "spec": review["spec"],
                        "status": status,
                    });
                    (
                        StatusCode::CREATED,
                        [(header::CONTENT_TYPE, "application/json")],
                        answer.to_string(),
                    )
                        .into_response()
                }
            }),
        );
    support::serve(router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_account_missing_list_pods_is_named() {
    const TOKEN: &str = "k8s-doctor-token-81c2f0";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = kubernetes(seen.clone(), TOKEN, &["pods"]).await;
    let config = format!(
        "[integrations.kubernetes]\nurl = {}\nnamespace = \"payments\"\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_K8S_TOKEN\" }}\n",
        toml_str(&server.url)
    );
    let env = [("DOCTOR_K8S_TOKEN", TOKEN)];
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let k = run.row("kubernetes");
    assert_eq!(k["status"], "failed", "{k}");
    let detail = k["detail"].as_str().unwrap_or("");
    assert!(detail.contains("list pods"), "{k}");
    assert!(detail.contains("payments"), "{k}");
    assert!(!detail.contains("get pods/log"), "only the denied one: {k}");
    assert_eq!(k["version"], "v1.30.2", "{k}");
    let asked = |verb: &str, resource: &str| {
        seen.lock()
            .map(|s| {
                s.iter()
                    .any(|a| a["verb"] == verb && a["resource"] == resource)
            })
            .unwrap_or(false)
    };
    for (verb, resource) in [
        ("get", "pods"),
        ("list", "pods"),
        ("list", "events"),
        ("list", "deployments"),
        ("list", "replicasets"),
        ("list", "nodes"),
        ("patch", "deployments"),
        ("delete", "pods"),
    ] {
        assert!(asked(verb, resource), "{verb} {resource} not reviewed");
    }
    let reviews = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let log = reviews
        .iter()
        .find(|a| a["subresource"] == "log")
        .unwrap_or_else(|| panic!("pods/log not reviewed: {reviews:?}"));
    assert_eq!(log["namespace"], "payments");
    let nodes = reviews
        .iter()
        .find(|a| a["resource"] == "nodes")
        .unwrap_or_else(|| panic!("{reviews:?}"));
    assert!(
        nodes.get("namespace").is_none(),
        "nodes are cluster-wide: {nodes}"
    );

    // With actions off, their permissions are not asked for.
    if let Ok(mut s) = seen.lock() {
        s.clear();
    }
    let run = doctor(&config, &["--json", "--read-only"], &env).await;
    assert_eq!(run.row("kubernetes")["status"], "failed");
    assert!(asked("list", "pods"));
    assert!(!asked("patch", "deployments"), "read-only asked for writes");
    assert!(!run.stdout.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_token_the_server_refuses_is_401_unauthorized() {
    const TOKEN: &str = "k8s-doctor-token-ok-77";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = kubernetes(seen, TOKEN, &["pods"]).await;
    let config = format!(
        "[integrations.kubernetes]\nurl = {}\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_K8S_TOKEN\" }}\n",
        toml_str(&server.url)
    );
    let run = doctor(
        &config,
        &["--json"],
        &[("DOCTOR_K8S_TOKEN", "not-the-token")],
    )
    .await;
    let k = run.row("kubernetes");
    assert_eq!(k["status"], "failed", "{k}");
    assert!(
        k["detail"]
            .as_str()
            .unwrap_or("")
            .starts_with("401 unauthorized"),
        "{k}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_never_answers_still_ends_within_10_seconds() {
    // Accepts connections and holds them open without a byte in answer.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let url = format!("http://{addr}");
    let config = format!(
        "[integrations.prometheus]\nurl = {u}\ntimeout_secs = 60\n\n\
         [integrations.loki]\nurl = {u}\ntimeout_secs = 60\n\n\
         [integrations.kubernetes]\nurl = {u}\ntimeout_secs = 60\n",
        u = toml_str(&url)
    );
    let run = doctor(&config, &["--json"], &[]).await;
    held.abort();
    assert!(
        run.took < Duration::from_secs(10),
        "took {:?}: {}",
        run.took,
        run.stdout
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    for name in ["prometheus", "loki", "kubernetes"] {
        let row = run.row(name);
        assert_eq!(row["status"], "failed", "{row}");
        assert!(
            row["detail"].as_str().unwrap_or("").contains("timed out"),
            "{row}"
        );
    }
}

const JIRA_BASIC: &str = "Basic Ym90QGFjbWUudGVzdDpqaXJhLXRva2VuLXJpZ2h0LTE=";
const SERVICENOW_BASIC: &str = "Basic c2l0cmVwOnNuLXBhc3N3b3JkLXJpZ2h0LTI=";
const SLACK_TOKEN: &str = "xoxb-doctor-token-right-3";

/// Jira (`/rest/api/3/myself`, `/rest/api/3/project/OPS`), ServiceNow's Table API and Slack's
/// `auth.test` on one loopback server, each refusing any other credential as the vendor does.
async fn trackers() -> support::Server {
    fn auth(headers: &HeaderMap) -> String {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }
    fn answer(status: StatusCode, v: Value) -> axum::response::Response {
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            v.to_string(),
        )
            .into_response()
    }
    let router = Router::new()
        .route(
            "/rest/api/3/myself",
            get(|headers: HeaderMap| async move {
                if auth(&headers) != JIRA_BASIC {
                    return answer(StatusCode::UNAUTHORIZED, json!({"errorMessages": [], "message": "Client must be authenticated to access this resource."}));
                }
                answer(
                    StatusCode::OK,
                    json!({"accountId": "5b10a2844c20165700ede21g", "displayName": "Doctor Bot", "active": true}),
                )
            }),
        )
        .route(
            "/rest/api/3/project/{key}",
            get(
                |headers: HeaderMap, axum::extract::Path(key): axum::extract::Path<String>| async move {
                    if auth(&headers) != JIRA_BASIC {
                        return answer(StatusCode::UNAUTHORIZED, json!({}));
                    }
                    if key != "OPS" {
                        return answer(
                            StatusCode::NOT_FOUND,
                            json!({"errorMessages": ["No project could be found with key '{key}'."]}),
                        );
                    }
                    answer(StatusCode::OK, json!({"key": "OPS", "name": "Operations"}))
                },
            ),
        )
        .route(
            "/api/now/table/sys_user",
            get(|headers: HeaderMap| async move {
                if auth(&headers) != SERVICENOW_BASIC {
                    return answer(
                        StatusCode::UNAUTHORIZED,
                        json!({"error": {"message": "User Not Authenticated", "detail": "Required to provide Auth information"}, "status": "failure"}),
                    );
                }
                answer(
                    StatusCode::OK,
                    json!({"result": [{"sys_id": "6816f79cc0a8016401c5a33be04be441", "user_name": "sitrep"}]}),
                )
            }),
        )
        .route(
            "/api/auth.test",
            post(|headers: HeaderMap| async move {
                if auth(&headers) != format!("Bearer {SLACK_TOKEN}") {
                    return answer(StatusCode::OK, json!({"ok": false, "error": "invalid_auth"}));
                }
                answer(
                    StatusCode::OK,
                    json!({"ok": true, "url": "https://acme.slack.com/", "team": "Acme", "user": "sitrep", "team_id": "T12345", "user_id": "U12345"}),
                )
            }),
        );
    support::serve(router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jira_servicenow_and_slack_say_whether_their_credentials_are_accepted() {
    let server = trackers().await;
    let url = toml_str(&server.url);
    let config = format!(
        "[integrations.jira]\nurl = {url}\nemail = \"bot@acme.test\"\napi_token = \"env:DOCTOR_JIRA_TOKEN\"\nproject = \"OPS\"\n\n\
         [integrations.servicenow]\nurl = {url}\nusername = \"sitrep\"\npassword = \"env:DOCTOR_SN_PASSWORD\"\n\n\
         [notify.slack]\ntoken = \"env:DOCTOR_SLACK_TOKEN\"\nchannel = \"#incidents\"\napi_url = {}\n",
        toml_str(&format!("{}/api", server.url))
    );
    let right = [
        ("DOCTOR_JIRA_TOKEN", "jira-token-right-1"),
        ("DOCTOR_SN_PASSWORD", "sn-password-right-2"),
        ("DOCTOR_SLACK_TOKEN", SLACK_TOKEN),
    ];
    let run = doctor(&config, &["--json"], &right).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    run.expect_row("jira", "ok", "OPS");
    assert_eq!(run.row("servicenow")["status"], "ok", "{}", run.stdout);
    run.expect_row("slack", "ok", "Acme");

    let wrong = [
        ("DOCTOR_JIRA_TOKEN", "jira-token-wrong-9"),
        ("DOCTOR_SN_PASSWORD", "sn-password-wrong-9"),
        ("DOCTOR_SLACK_TOKEN", "xoxb-doctor-token-wrong-9"),
    ];
    let run = doctor(&config, &["--json"], &wrong).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    for name in ["jira", "servicenow"] {
        let row = run.row(name);
        assert_eq!(row["status"], "failed", "{row}");
        assert!(
            row["detail"]
                .as_str()
                .unwrap_or("")
                .starts_with("401 unauthorized"),
            "{row}"
        );
    }
    run.expect_row("slack", "failed", "invalid_auth");
    for (_, secret) in wrong {
        assert!(
            !run.stdout.contains(secret),
            "{secret} leaked: {}",
            run.stdout
        );
    }
}

/// A stand-in for the 1Password CLI: `op whoami` answers as signed in (or, with
/// `OP_STUB_SIGNED_OUT` set, as `op` does when signed out); any other use is logged, so a test
/// can prove the secret was never read.
fn op_stub(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
    let op = bin.join("op");
    std::fs::write(
        &op,
        "#!/bin/sh\n\
         if [ \"$1\" = whoami ]; then\n\
           if [ -n \"$OP_STUB_SIGNED_OUT\" ]; then echo '[ERROR] 2026/11/26 09:00:00 account is not signed in' >&2; exit 1; fi\n\
           echo 'URL: https://acme.1password.com'; exit 0\n\
         fi\n\
         echo \"$@\" >> \"$OP_STUB_LOG\"\n\
         echo op-secret-never-read\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    bin
}

/// Vault answering `lookup-self` for one token; every other path asked is kept (none should be).
async fn vault(token: &'static str, other: Arc<Mutex<Vec<String>>>) -> support::Server {
    let router = Router::new()
        .route(
            "/v1/auth/token/lookup-self",
            get(move |headers: HeaderMap| async move {
                let given = headers
                    .get("x-vault-token")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                if given != token {
                    return (
                        StatusCode::FORBIDDEN,
                        [(header::CONTENT_TYPE, "application/json")],
                        json!({"errors": ["permission denied"]}).to_string(),
                    );
                }
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    json!({"data": {"display_name": "token", "policies": ["sitrep"], "ttl": 3600}})
                        .to_string(),
                )
            }),
        )
        .fallback(any(move |uri: axum::http::Uri| {
            let other = other.clone();
            async move {
                if let Ok(mut o) = other.lock() {
                    o.push(uri.path().to_string());
                }
                StatusCode::NOT_FOUND
            }
        }));
    support::serve(router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_by_reference_are_checked_where_they_live_never_read() {
    const VAULT_TOKEN: &str = "vault-doctor-token-5e1";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let bin = op_stub(dir.path());
    let log = dir.path().join("op-reads.log");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let vault = vault(VAULT_TOKEN, asked.clone()).await;
    let server = refusing_server().await;
    let config = format!(
        "[integrations.prometheus]\nurl = {url}\nauth = {{ kind = \"bearer\", token_env = \"op://ops/prometheus/token\" }}\n\n\
         [integrations.loki]\nurl = {url}\nauth = {{ kind = \"bearer\", token_env = \"vault://kv/loki#token\" }}\n",
        url = toml_str(&server.url)
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log_text = log.display().to_string();
    let env = [
        ("PATH", path.as_str()),
        ("OP_STUB_LOG", log_text.as_str()),
        ("VAULT_ADDR", vault.url.as_str()),
        ("VAULT_TOKEN", VAULT_TOKEN),
    ];
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    run.expect_row("prometheus", "ok", "op signed in");
    run.expect_row("loki", "ok", "Vault token valid");
    assert!(
        !log.exists(),
        "op was asked for the secret: {}",
        support::read(&log)
    );
    assert!(
        asked.lock().map(|a| a.is_empty()).unwrap_or(false),
        "Vault was asked for more than lookup-self: {asked:?}"
    );

    // Signed out of 1Password, a Vault token Vault refuses: both fail, saying so.
    let env = [
        ("PATH", path.as_str()),
        ("OP_STUB_LOG", log_text.as_str()),
        ("OP_STUB_SIGNED_OUT", "1"),
        ("VAULT_ADDR", vault.url.as_str()),
        ("VAULT_TOKEN", "expired-vault-token"),
    ];
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    run.expect_row("prometheus", "failed", "not signed in");
    run.expect_row("loki", "failed", "403 forbidden");
    assert!(!run.stdout.contains("expired-vault-token"));
    assert!(!log.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_account_with_every_permission_is_ok_with_the_version() {
    const TOKEN: &str = "k8s-doctor-token-all-31";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = kubernetes(seen.clone(), TOKEN, &[]).await;
    let config = format!(
        "[integrations.kubernetes]\nurl = {}\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_K8S_TOKEN\" }}\n",
        toml_str(&server.url)
    );
    let run = doctor(&config, &["--json"], &[("DOCTOR_K8S_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let k = run.row("kubernetes");
    assert_eq!(k["status"], "ok", "{k}");
    assert!(
        k["detail"].as_str().unwrap_or("").starts_with("v1.30.2"),
        "{k}"
    );
    let reviews = seen.lock().map(|s| s.len()).unwrap_or(0);
    assert_eq!(reviews, 22, "8 reads, 10 further reads and 4 writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_missing_a_further_read_is_ok_and_names_what_the_checks_will_lack() {
    const TOKEN: &str = "k8s-doctor-token-view-77";
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = kubernetes(
        seen.clone(),
        TOKEN,
        &["ingressclasses", "controllerrevisions"],
    )
    .await;
    let config = format!(
        "[integrations.kubernetes]\nurl = {}\nnamespace = \"payments\"\nauth = {{ kind = \"bearer\", token_env = \"DOCTOR_K8S_TOKEN\" }}\n",
        toml_str(&server.url)
    );
    let run = doctor(&config, &["--json"], &[("DOCTOR_K8S_TOKEN", TOKEN)]).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let k = run.row("kubernetes");
    assert_eq!(k["status"], "ok", "{k}");
    let detail = k["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("list ingressclasses.networking.k8s.io")
            && detail.contains("list controllerrevisions.apps")
            && !detail.contains("list ingresses"),
        "{k}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_names_a_missing_pg_monitor_and_pg_stat_statements() {
    use support::postgres::{ADMIN, Pg};
    const ROLE: &str = "doctor_ro";
    const PASSWORD: &str = "doctor-pg-pw-6d2e";
    let pg = match Pg::start(
        &["shared_preload_libraries = 'pg_stat_statements'"],
        &["host all all 127.0.0.1/32 scram-sha-256"],
    ) {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("SKIP: {why}");
            return;
        }
    };
    let admin = pg.connect(ADMIN, None, "setup").await;
    if let Err(e) = admin
        .batch_execute(&format!("CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'"))
        .await
    {
        panic!("{e}");
    }
    let config = format!(
        "[integrations.postgres]\nurl = \"postgres://{ROLE}@127.0.0.1:{}/postgres?sslmode=disable\"\npassword = \"env:DOCTOR_PG_PASSWORD\"\n",
        pg.port
    );
    let env = [("DOCTOR_PG_PASSWORD", PASSWORD)];
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let row = run.row("postgres");
    assert_eq!(row["status"], "failed", "{row}");
    let detail = row["detail"].as_str().unwrap_or("");
    assert!(detail.contains("not a member of pg_monitor"), "{row}");
    assert!(detail.contains("pg_stat_statements"), "{row}");
    assert!(
        row["fix"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("GRANT pg_monitor TO {ROLE}")),
        "{row}"
    );

    if let Err(e) = admin
        .batch_execute(&format!(
            "GRANT pg_monitor TO {ROLE}; CREATE EXTENSION pg_stat_statements"
        ))
        .await
    {
        panic!("{e}");
    }
    let run = doctor(&config, &["--json"], &env).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let row = run.row("postgres");
    assert_eq!(row["status"], "ok", "{row}");
    let version = row["version"].as_str().unwrap_or("").to_string();
    assert!(
        version.chars().next().is_some_and(|c| c.is_ascii_digit()),
        "{row}"
    );
    assert!(
        row["detail"].as_str().unwrap_or("").starts_with(&version),
        "{row}"
    );

    let run = doctor(
        &config,
        &["--json"],
        &[("DOCTOR_PG_PASSWORD", "not-the-password")],
    )
    .await;
    assert_eq!(run.code, Some(1));
    run.expect_row("postgres", "failed", "password authentication failed");
    assert!(!run.stdout.contains("not-the-password"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mcp_server_is_a_row_with_its_tools() {
    let python_has_server = std::process::Command::new("python3")
        .args(["-c", "import mcp_server_time"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !python_has_server {
        eprintln!("SKIP: mcp-server-time is not installed (pip install mcp-server-time)");
        return;
    }
    let config = "[[mcp.servers]]\nname = \"time\"\ncommand = \"python3\"\n\
                  args = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n\n\
                  [[mcp.servers]]\nname = \"gone\"\ncommand = \"sitrep-doctor-no-such-server\"\n";
    let run = doctor(config, &["--json"], &[]).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    run.expect_row("mcp.time", "ok", "tools");
    run.expect_row("mcp.gone", "failed", "sitrep-doctor-no-such-server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_must_exist_on_its_server() {
    // An OpenAI-compatible `GET /v1/models`, as vLLM and llama.cpp serve it.
    let router = Router::new().route(
        "/v1/models",
        get(|headers: HeaderMap| async move {
            let bearer = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                == Some("Bearer model-key-8c1");
            if !bearer {
                return (
                    StatusCode::UNAUTHORIZED,
                    json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                        .to_string(),
                );
            }
            (
                StatusCode::OK,
                json!({"object": "list", "data": [
                    {"id": "qwen2.5-14b-instruct", "object": "model", "owned_by": "vllm"},
                    {"id": "gpt-4o-mini", "object": "model", "owned_by": "system"}
                ]})
                .to_string(),
            )
        }),
    );
    let server = support::serve(router).await;
    let config = |model: &str| {
        format!(
            "[llm]\nprovider = \"openai\"\nbase_url = {}\nmodel = \"{model}\"\napi_key_env = \"DOCTOR_MODEL_KEY\"\n",
            toml_str(&format!("{}/v1", server.url))
        )
    };
    let env = [("DOCTOR_MODEL_KEY", "model-key-8c1")];
    let run = doctor(&config("gpt-4o-mini"), &["--json"], &env).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.row("llm")["status"], "ok", "{}", run.stdout);

    let run = doctor(&config("gpt-5-imaginary"), &["--json"], &env).await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    run.expect_row("llm", "failed", "model gpt-5-imaginary not found");

    let run = doctor(
        &config("gpt-4o-mini"),
        &["--json"],
        &[("DOCTOR_MODEL_KEY", "wrong-model-key")],
    )
    .await;
    let row = run.row("llm");
    assert_eq!(row["status"], "failed", "{row}");
    assert!(
        row["detail"]
            .as_str()
            .unwrap_or("")
            .starts_with("401 unauthorized"),
        "{row}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_says_who_the_credentials_are_through_moto() {
    let installed = std::process::Command::new("moto_server")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("SKIP: moto_server is not installed (pip install 'moto[server]')");
        return;
    }
    let port = support::free_port();
    let mut moto = tokio::process::Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start moto_server: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "moto_server did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = format!(
        "[integrations.aws]\nregion = \"us-east-1\"\nendpoint_url = \"http://127.0.0.1:{port}\"\n\
         access_key_id = \"env:DOCTOR_AWS_KEY_ID\"\nsecret_access_key = \"env:DOCTOR_AWS_SECRET\"\n"
    );
    let secret = "doctorSecretKey0000000000000000000000000";
    let env = [
        ("DOCTOR_AWS_KEY_ID", "AKIADOCTORTEST000001"),
        ("DOCTOR_AWS_SECRET", secret),
    ];
    let run = doctor(&config, &["--json"], &env).await;
    let _ = moto.kill().await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let row = run.row("aws");
    assert_eq!(row["status"], "ok", "{row}");
    let detail = row["detail"].as_str().unwrap_or("");
    assert!(detail.contains("arn:aws:"), "{row}");
    assert!(detail.contains("rds:DescribeDBInstances"), "{row}");
    assert!(!run.stdout.contains(secret));
}
