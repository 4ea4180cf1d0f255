//! The database specialist against a real PostgreSQL server: the binary investigates headless with
//! its password given by reference (a fake `op` on PATH, a fake Vault KV v2 on loopback), the
//! operator approves or denies the credential on stdin, and the verdict, the outputs and the
//! server's own statement log are checked.

mod support;

use serde_json::json;
use sitrep::model::{Event, Record};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use support::postgres::{ADMIN, Pg};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What sitrep calls itself on the test server, to find its statements in the log.
const APP: &str = "sitrep-test";
const ROLE: &str = "sitrep_ro";

macro_rules! need_pg {
    ($conf:expr) => {
        match Pg::start($conf, &["host all all 127.0.0.1/32 scram-sha-256"]) {
            Ok(pg) => pg,
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        }
    };
}

/// The role sitrep logs in as: may read every session's activity, nothing more.
async fn create_role(pg: &Pg, password: &str) {
    let admin = pg.connect(ADMIN, None, "setup").await;
    let sql = format!("CREATE ROLE {ROLE} LOGIN PASSWORD '{password}' IN ROLE pg_monitor");
    if let Err(e) = admin.batch_execute(&sql).await {
        panic!("{e}");
    }
}

struct Run {
    stdout: String,
    stderr: String,
    records: Vec<Record>,
    data: tempfile::TempDir,
}

impl Run {
    fn diagnosis(&self) -> (String, String) {
        self.records
            .iter()
            .find_map(|r| match &r.event {
                Event::Diagnosis {
                    category,
                    root_cause,
                    ..
                } => Some((category.to_string(), root_cause.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no diagnosis; stderr: {}", self.stderr))
    }

    /// Every byte sitrep wrote: stdout, stderr and every file under its data dir (sessions, logs).
    fn everything(&self) -> String {
        let mut all = format!("{}\n{}", self.stdout, self.stderr);
        fn walk(dir: &Path, out: &mut String) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if let Ok(bytes) = std::fs::read(&p) {
                    out.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
        }
        walk(self.data.path(), &mut all);
        all
    }
}

/// Runs `sitrep --headless investigate --problem ...` with `config`; answers each credential
/// request with `approve`.
async fn investigate(config: &str, problem: &str, env: &[(&str, String)], approve: bool) -> Run {
    investigate_with(config, &["--problem", problem], env, approve).await
}

async fn investigate_with(
    config: &str,
    args: &[&str],
    env: &[(&str, String)],
    approve: bool,
) -> Run {
    let data = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let cfg = data.path().join("config.toml");
    if let Err(e) = std::fs::write(&cfg, config) {
        panic!("{e}");
    }
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_sitrep"));
    cmd.args(["--headless", "investigate", "--diagnosis-only"])
        .args(args)
        .env("SITREP_DATA_DIR", data.path())
        .env("SITREP_CONFIG", &cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().map(BufReader::new);
    let mut stderr = child.stderr.take();
    let mut lines = match stdout {
        Some(s) => s.lines(),
        None => panic!("no stdout"),
    };
    let mut out = String::new();
    let mut records = Vec::new();
    let read = async {
        while let Ok(Some(line)) = lines.next_line().await {
            out.push_str(&line);
            out.push('\n');
            let Ok(rec) = serde_json::from_str::<Record>(&line) else {
                continue;
            };
            if let Event::CredentialRequested { reference, .. } = &rec.event
                && let Some(w) = stdin.as_mut()
            {
                let cmd = if approve {
                    json!({"type": "approve_credential", "ref": reference})
                } else {
                    json!({"type": "deny_credential", "ref": reference, "reason": "not for this incident"})
                };
                let _ = w.write_all(format!("{cmd}\n").as_bytes()).await;
                let _ = w.flush().await;
            }
            let ended = matches!(rec.event, Event::SessionEnded { .. });
            records.push(rec);
            if ended {
                break;
            }
        }
    };
    if tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .is_err()
    {
        panic!("the investigation did not end in 120 s; stdout so far:\n{out}");
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    let mut err = String::new();
    if let Some(e) = stderr.as_mut() {
        use tokio::io::AsyncReadExt;
        let _ = tokio::time::timeout(Duration::from_secs(5), e.read_to_string(&mut err)).await;
    }
    Run {
        stdout: out,
        stderr: err,
        records,
        data,
    }
}

/// `op` that answers one reference and leaves a marker that it ran.
fn fake_op(dir: &Path, reference: &str, value: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let marker = dir.join("op-ran");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nif [ \"$1\" = read ] && [ \"$3\" = '{reference}' ]; then printf '%s' '{value}'; exit 0; fi\necho \"[ERROR] could not read secret '$3'\" >&2\nexit 1\n",
        marker.display()
    );
    let path = dir.join("op");
    if let Err(e) = std::fs::write(&path, script)
        .and_then(|_| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)))
    {
        panic!("{e}");
    }
    marker
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn config(pg: &Pg, password_ref: &str) -> String {
    format!(
        "[integrations.postgres]\nurl = \"postgres://{ROLE}@127.0.0.1:{}/postgres\"\npassword = \"{password_ref}\"\napplication_name = \"{APP}\"\ntimeout_secs = 10\n",
        pg.port
    )
}

/// Every statement the server logged for sitrep's application_name only reads or sets.
fn assert_sitrep_statements_read_only(log: &str) {
    let mut seen = 0;
    for line in log.lines().filter(|l| l.contains(&format!("app={APP} "))) {
        let Some((_, stmt)) = line
            .split_once("LOG:  statement: ")
            .or_else(|| line.split_once("LOG:  execute <unnamed>: "))
        else {
            continue;
        };
        seen += 1;
        let first = stmt
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        assert!(
            matches!(first.as_str(), "SELECT" | "SHOW" | "SET"),
            "sitrep sent a statement that is not a read: {stmt}"
        );
    }
    assert!(
        seen >= 3,
        "the server logged no statements of sitrep's:\n{log}"
    );
}

fn tool_failures(run: &Run) -> Vec<String> {
    run.records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolFailed { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_chain_names_the_idle_in_transaction_blocker() {
    let pg = need_pg!(&[]);
    let password = "Pw-op-7f3a9c1e-canary";
    create_role(&pg, password).await;
    let admin = pg.connect(ADMIN, None, "setup").await;
    if let Err(e) = admin
        .batch_execute(
            "CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL); INSERT INTO accounts VALUES (1, 100), (2, 50);",
        )
        .await
    {
        panic!("{e}");
    }
    // The blocker: a transaction that updated a row and then stopped talking.
    let blocker = pg.connect(ADMIN, None, "billing-worker").await;
    let blocker_pid: i32 = match blocker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .and_then(|r| r.try_get(0))
    {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    if let Err(e) = blocker
        .batch_execute("BEGIN; UPDATE accounts SET balance = balance - 10 WHERE id = 1;")
        .await
    {
        panic!("{e}");
    }
    // Two requests of another application queue behind it.
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let c = pg.connect(ADMIN, None, "checkout-api").await;
        waiters.push(tokio::spawn(async move {
            let _ = c
                .batch_execute("UPDATE accounts SET balance = balance + 1 WHERE id = 1")
                .await;
            c
        }));
    }
    // Until both wait on the lock.
    for _ in 0..50 {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE cardinality(pg_blocking_pids(pid)) > 0",
                &[],
            )
            .await
            .and_then(|r| r.try_get(0))
            .unwrap_or(0);
        if n >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    let bin = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let reference = "op://ops/app-db/password";
    let marker = fake_op(bin.path(), reference, password);
    let case = bin.path().join("recorded-case");
    let case_arg = case.display().to_string();
    let run = investigate_with(
        &config(&pg, reference),
        &[
            "--problem",
            "checkout requests time out since 09:10",
            "--record",
            &case_arg,
        ],
        &[("PATH", path_with(bin.path()))],
        true,
    )
    .await;

    let (category, cause) = run.diagnosis();
    assert_eq!(category, "resource_exhaustion", "{cause}");
    assert!(cause.contains("Lock contention"), "{cause}");
    assert!(cause.contains(&format!("backend {blocker_pid}")), "{cause}");
    assert!(cause.contains("billing-worker"), "{cause}");
    assert!(cause.contains("idle in transaction"), "{cause}");
    assert!(
        run.records.iter().any(|r| matches!(&r.event,
            Event::CredentialDecided { reference: r, approved: true, .. } if r == reference)),
        "the approval is recorded"
    );
    assert!(marker.exists(), "op was asked for the password");
    assert!(tool_failures(&run).is_empty(), "{:?}", tool_failures(&run));
    // A terminate of the blocker is proposed, showing what it would end.
    let proposed = run.records.iter().find_map(|r| match &r.event {
        Event::ActionProposed { action } if action.kind == "postgres.terminate_backend" => {
            Some(action.clone())
        }
        _ => None,
    });
    match proposed {
        Some(a) => {
            assert_eq!(a.target, format!("backend/{blocker_pid}"));
            assert!(a.operation.contains("billing-worker"), "{}", a.operation);
        }
        None => panic!("no terminate_backend proposed"),
    }
    assert!(
        !run.everything().contains(password),
        "the password leaked into sitrep's output or files"
    );
    assert_sitrep_statements_read_only(&pg.log());
    // The recording holds the SQL exchanges, never the password, and replays offline to the
    // same verdict (no server, no credential asked).
    let recorded = std::fs::read_to_string(case.join("recordings.ndjson")).unwrap_or_default();
    assert!(
        recorded.contains("\"method\":\"SQL\"") && recorded.contains("pg_blocking_pids"),
        "{recorded}"
    );
    assert!(!recorded.contains(password));
    let replay = investigate_with(
        "",
        &[
            "--case",
            &case_arg,
            "--problem",
            "checkout requests time out since 09:10",
        ],
        &[],
        false,
    )
    .await;
    // Evidence ids follow the order parallel reads answer in; the statement is the same.
    let uncited = |c: &str| {
        c.rsplit_once(" [")
            .map(|(t, _)| t.to_string())
            .unwrap_or_default()
    };
    let (replay_category, replay_cause) = replay.diagnosis();
    assert_eq!(replay_category, category);
    assert_eq!(uncited(&replay_cause), uncited(&cause));
    assert!(!uncited(&cause).is_empty());
    assert!(
        !replay
            .records
            .iter()
            .any(|r| matches!(r.event, Event::CredentialRequested { .. })),
        "a replay needs no credential"
    );
    // Nor did sitrep's own lines in the server's log (SCRAM sends no password).
    assert!(
        pg.log()
            .lines()
            .filter(|l| l.contains(&format!("app={APP} ")))
            .all(|l| !l.contains(password))
    );
    drop(blocker);
    for w in waiters {
        w.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_application_holding_most_connections_is_named() {
    let pg = need_pg!(&["max_connections = 20", "superuser_reserved_connections = 1"]);
    let password = "Pw-vault-91b2c4d6-canary";
    create_role(&pg, password).await;
    let mut pool = Vec::new();
    for _ in 0..18 {
        pool.push(pg.connect(ADMIN, None, "report-worker").await);
    }
    // A Vault KV v2 answering the one secret, to the right token only.
    let token = "hvs.test-token-4c1d";
    let app = axum::Router::new().route(
        "/v1/secret/data/app-db",
        axum::routing::get(move |headers: axum::http::HeaderMap| async move {
            if headers.get("X-Vault-Token").and_then(|v| v.to_str().ok()) != Some(token) {
                return (
                    axum::http::StatusCode::FORBIDDEN,
                    axum::Json(json!({"errors": ["permission denied"]})),
                );
            }
            (
                axum::http::StatusCode::OK,
                axum::Json(json!({
                    "request_id": "5e1f", "lease_id": "", "renewable": false, "lease_duration": 0,
                    "data": {"data": {"password": password, "username": ROLE},
                             "metadata": {"created_time": "2026-11-25T09:00:00Z", "version": 3, "destroyed": false}},
                    "wrap_info": null, "warnings": null, "auth": null
                })),
            )
        }),
    );
    let vault = support::serve(app).await;
    let run = investigate(
        &config(&pg, "vault://secret/app-db#password"),
        "reports fail with connection errors and timeouts",
        &[
            ("VAULT_ADDR", vault.url.clone()),
            ("VAULT_TOKEN", token.to_string()),
        ],
        true,
    )
    .await;
    let (category, cause) = run.diagnosis();
    assert_eq!(category, "resource_exhaustion", "{cause}");
    assert!(cause.contains("Connection exhaustion"), "{cause}");
    assert!(cause.contains("report-worker"), "{cause}");
    assert!(cause.contains("18 of 20"), "{cause}");
    assert!(
        !run.everything().contains(password),
        "the password leaked into sitrep's output or files"
    );
    assert!(!run.everything().contains(token), "the Vault token leaked");
    assert_sitrep_statements_read_only(&pg.log());
    drop(pool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_credential_is_never_read_and_the_investigation_goes_on() {
    let pg = need_pg!(&[]);
    let password = "Pw-denied-3e8a-canary";
    create_role(&pg, password).await;
    let bin = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let reference = "op://ops/app-db/password";
    let marker = fake_op(bin.path(), reference, password);
    let run = investigate(
        &config(&pg, reference),
        "checkout latency is high",
        &[("PATH", path_with(bin.path()))],
        false,
    )
    .await;
    assert!(
        !marker.exists(),
        "op ran although the credential was denied"
    );
    assert!(run.records.iter().any(|r| matches!(&r.event,
        Event::CredentialDecided { approved: false, reference: r, .. } if r == reference)));
    let failures = tool_failures(&run);
    assert!(
        failures
            .iter()
            .any(|e| e.contains("not approved") && e.contains(reference)),
        "{failures:?}"
    );
    // The investigation still reaches a verdict and ends.
    let (category, _) = run.diagnosis();
    assert_eq!(category, "unknown");
    assert!(matches!(
        run.records.last().map(|r| &r.event),
        Some(Event::SessionEnded { .. })
    ));
    // Nothing of sitrep's reached the server.
    assert!(!pg.log().contains(&format!("app={APP} ")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_backend_ends_the_blocker_through_the_executor() {
    let pg = need_pg!(&[]);
    let password = "Pw-exec-55d0-canary";
    create_role(&pg, password).await;
    let admin = pg.connect(ADMIN, None, "setup").await;
    // sitrep may signal ordinary roles' backends (pg_signal_backend), never a superuser's.
    if let Err(e) = admin
        .batch_execute(&format!(
            "CREATE TABLE jobs (id int PRIMARY KEY, state text); INSERT INTO jobs VALUES (1, 'new');
             CREATE ROLE billing LOGIN PASSWORD 'billing-pw-1'; GRANT SELECT, UPDATE ON jobs TO billing;
             GRANT pg_signal_backend TO {ROLE};"
        ))
        .await
    {
        panic!("{e}");
    }
    let blocker = pg
        .connect("billing", Some("billing-pw-1"), "billing-worker")
        .await;
    let pid: i32 = match blocker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .and_then(|r| r.try_get(0))
    {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    if let Err(e) = blocker
        .batch_execute("BEGIN; UPDATE jobs SET state = 'taken' WHERE id = 1;")
        .await
    {
        panic!("{e}");
    }
    let waiter = pg.connect(ADMIN, None, "checkout-api").await;
    let waiting = tokio::spawn(async move {
        waiter
            .batch_execute("UPDATE jobs SET state = 'done' WHERE id = 1")
            .await
            .is_ok()
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the waiter waits on the blocker");

    // SAFETY: only this test reads this variable.
    unsafe { std::env::set_var("SITREP_DB_TEST_EXEC_PW", password) };
    let text = format!(
        "[integrations.postgres]\nurl = \"postgres://{ROLE}@127.0.0.1:{}/postgres\"\npassword = \"env:SITREP_DB_TEST_EXEC_PW\"\napplication_name = \"{APP}\"\n",
        pg.port
    );
    let config = match sitrep::config::Config::parse(&text, Path::new("config.toml")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let world = match sitrep::world::World::live(&config).await {
        Ok(w) => w,
        Err(e) => panic!("{e}"),
    };
    let mut params = std::collections::BTreeMap::new();
    params.insert("pid".to_string(), json!(pid));
    params.insert("application_name".to_string(), json!("billing-worker"));
    params.insert("state".to_string(), json!("idle in transaction"));
    let target = format!("backend/{pid}");
    let action = sitrep::model::Action {
        id: "act-1".into(),
        kind: "postgres.terminate_backend".into(),
        operation: sitrep::model::catalog::operation(
            "postgres.terminate_backend",
            &target,
            &params,
        ),
        target,
        params,
        risk: sitrep::model::Risk::High,
        rationale: "test".into(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    };
    assert_eq!(
        action.operation,
        format!(
            "SELECT pg_terminate_backend({pid}) -- application billing-worker, idle in transaction"
        )
    );
    // Nothing is read or sent before the operator approved the credential.
    let refused = world.execute(&action).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("approval")),
        "{refused:?}"
    );
    assert!(!pg.log().contains(&format!("app={APP} ")));
    world.keyring().decide(
        "env:SITREP_DB_TEST_EXEC_PW",
        sitrep::secrets::Decision::Approved,
    );
    match world.execute(&action).await {
        Ok(msg) => assert_eq!(msg, format!("backend {pid}: session terminated")),
        Err(e) => panic!("{e}"),
    }
    assert!(
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .is_ok_and(|r| r.is_ok_and(|ok| ok)),
        "the waiter went through once the blocker was gone"
    );
    // A second terminate finds nothing to end: a clear error.
    let again = world.execute(&action).await;
    assert!(
        again
            .as_ref()
            .is_err_and(|e| e.to_string().contains("not signalled")),
        "{again:?}"
    );
    let log = pg.log();
    let ours: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("app={APP} ")) && l.contains("statement: "))
        .collect();
    assert!(
        ours.iter()
            .any(|l| l.contains(&format!("SELECT pg_terminate_backend({pid})"))),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_connections_is_named_unreachable() {
    // Nothing listens on this port: what clients of a stopped server see.
    let port = support::free_port();
    let config = format!(
        "[integrations.postgres]\nurl = \"postgres://{ROLE}@127.0.0.1:{port}/postgres?sslmode=disable\"\napplication_name = \"{APP}\"\ntimeout_secs = 5\n"
    );
    let run = investigate(
        &config,
        "orders API: connection refused to the database",
        &[],
        true,
    )
    .await;
    let (category, cause) = run.diagnosis();
    assert_eq!(category, "infrastructure", "{cause}");
    assert!(cause.contains("PostgreSQL is unreachable"), "{cause}");
    assert!(cause.to_lowercase().contains("refused"), "{cause}");
    assert!(
        !run.records
            .iter()
            .any(|r| matches!(r.event, Event::CredentialRequested { .. })),
        "no password configured, nothing to approve"
    );
}
