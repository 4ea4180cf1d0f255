//! PostgreSQL: a read-only client (sessions, connections, lock chains, statements, replication,
//! databases) and the cancel/terminate actions, every statement going through the `Transport`.
//!
//! A statement is a request `{integration: "postgres", method: "SQL", path: <statement>}` whose
//! answer is the rows as a JSON array of objects (column -> text value, as PostgreSQL's text
//! format gives them, `null` for NULL). So `--record` writes SQL exchanges to `recordings.ndjson`
//! next to the HTTP ones and a replay answers them offline. The live side
//! ([`PostgresBackend`]) connects lazily with `default_transaction_read_only=on` and a
//! `statement_timeout`, and asks the [`Keyring`] for the password only when it first connects.

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Body, Request, Response, Transport};
use crate::model::{PgBackend, PgConnections, PgDatabase, PgFact, PgReplica, PgStatement};
use crate::policy::redact::Redactor;
use crate::secrets::Keyring;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "postgres";
/// The request method of a SQL statement in recordings.
pub const SQL_METHOD: &str = "SQL";
/// What sitrep calls itself on the server unless configured otherwise.
pub const DEFAULT_APPLICATION_NAME: &str = "sitrep";
/// Rows beyond this are cut (a server with thousands of idle connections).
const MAX_ROWS: usize = 2000;

/// One row: column -> text value (or null).
pub type Row = Map<String, Value>;

// The statements. One line each: they are the recordings' paths and appear in error messages.
const BACKEND_COLUMNS: &str = "a.pid, a.datname, a.usename, a.application_name, host(a.client_addr) AS client_addr, a.state, a.wait_event_type, a.wait_event, extract(epoch FROM now() - a.xact_start)::float8 AS xact_age_secs, extract(epoch FROM now() - a.query_start)::float8 AS query_age_secs, extract(epoch FROM now() - a.state_change)::float8 AS state_age_secs, left(a.query, 300) AS query, pg_blocking_pids(a.pid) AS blocked_by";

fn activity_sql() -> String {
    format!(
        "SELECT {BACKEND_COLUMNS} FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() ORDER BY a.xact_start NULLS LAST, a.pid LIMIT {MAX_ROWS}"
    )
}

fn locks_sql() -> String {
    format!(
        "SELECT {BACKEND_COLUMNS}, (SELECT l.mode FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1) AS waiting_mode, (SELECT string_agg(DISTINCT l.mode, ',') FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.locktype IN ('relation', 'tuple', 'transactionid')) AS held_modes, (SELECT l.relation::regclass::text FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.relation >= 16384 ORDER BY l.granted, l.relation LIMIT 1) AS relation FROM pg_stat_activity a WHERE a.pid <> pg_backend_pid() AND (cardinality(pg_blocking_pids(a.pid)) > 0 OR a.pid IN (SELECT unnest(pg_blocking_pids(b.pid)) FROM pg_stat_activity b)) ORDER BY a.xact_start NULLS LAST, a.pid LIMIT {MAX_ROWS}"
    )
}

fn long_queries_sql(min_secs: u64) -> String {
    format!(
        "SELECT {BACKEND_COLUMNS} FROM pg_stat_activity a WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.state = 'active' AND a.query_start < now() - interval '{min_secs} seconds' ORDER BY a.query_start, a.pid LIMIT {MAX_ROWS}"
    )
}

const CONNECTIONS_SQL: &str = "SELECT coalesce(a.application_name, '') AS application_name, coalesce(a.usename::text, '') AS usename, count(*) AS count, count(*) FILTER (WHERE a.state = 'active') AS active, count(*) FILTER (WHERE a.state = 'idle') AS idle, count(*) FILTER (WHERE a.state LIKE 'idle in transaction%') AS idle_in_transaction, current_setting('max_connections')::int AS max_connections, current_setting('superuser_reserved_connections')::int AS reserved, (SELECT count(*) FROM pg_stat_activity t WHERE t.backend_type = 'client backend') AS total FROM pg_stat_activity a WHERE a.backend_type = 'client backend' GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT 200";

const STATEMENTS_INSTALLED_SQL: &str =
    "SELECT extversion FROM pg_extension WHERE extname = 'pg_stat_statements'";
const STATEMENTS_SQL: &str = "SELECT left(query, 300) AS query, calls, total_exec_time::float8 AS total_ms, mean_exec_time::float8 AS mean_ms, rows FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 10";

const REPLICATION_SQL: &str = "SELECT 'standby' AS role, coalesce(application_name, '') AS application_name, host(client_addr) AS client_addr, state, extract(epoch FROM replay_lag)::float8 AS replay_lag_secs, CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::float8 END AS lag_bytes FROM pg_stat_replication UNION ALL SELECT 'self', '', NULL, 'recovering', extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::float8 WHERE pg_is_in_recovery()";

const DATABASES_SQL: &str = "SELECT d.datname AS name, CASE WHEN has_database_privilege(d.oid, 'CONNECT') THEN pg_database_size(d.oid)::float8 END AS size_bytes, age(d.datfrozenxid)::bigint AS xid_age, current_setting('autovacuum_freeze_max_age')::bigint AS freeze_max_age, (SELECT count(*) FROM pg_stat_activity s WHERE s.datid = d.oid) AS backends FROM pg_database d WHERE d.datallowconn ORDER BY 3 DESC, 1";

/// The typed client: one method per catalog read, parsed into [`PgFact`]s.
#[derive(Clone)]
pub struct PostgresClient {
    transport: Arc<dyn Transport>,
}

impl PostgresClient {
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        PostgresClient { transport }
    }

    /// Runs one statement; errors name what was asked (`postgres: query activity: ...`), not the
    /// whole statement.
    async fn rows(&self, what: &str, sql: &str) -> Result<Vec<Row>, IntegrationError> {
        let req = Request::new(NAME, SQL_METHOD, sql);
        let named = |e: IntegrationError| IntegrationError {
            request: format!("query {what}"),
            ..e
        };
        let resp = self.transport.send(&req).await.map_err(named)?;
        let body = resp.success(&req).map_err(named)?;
        match body {
            Body::Json(Value::Array(rows)) => Ok(rows
                .into_iter()
                .filter_map(|r| match r {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .collect()),
            other => Err(named(req.error(ErrorKind::Decode(format!(
                "expected rows, got {}",
                other.text().chars().take(80).collect::<String>()
            ))))),
        }
    }

    /// Every client backend but sitrep's own: state, ages, query, what it waits for.
    pub async fn activity(&self) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self.rows("activity", &activity_sql()).await?;
        Ok(rows
            .iter()
            .map(|r| PgFact::Backend(Box::new(backend(r))))
            .collect())
    }

    /// Backends in a lock chain (waiting or blocking), with lock modes and relations.
    pub async fn locks(&self) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self.rows("locks", &locks_sql()).await?;
        Ok(rows
            .iter()
            .map(|r| PgFact::Backend(Box::new(backend(r))))
            .collect())
    }

    /// Statements active for longer than `min_secs`.
    pub async fn long_queries(&self, min_secs: u64) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self
            .rows("long_queries", &long_queries_sql(min_secs))
            .await?;
        Ok(rows
            .iter()
            .map(|r| PgFact::Backend(Box::new(backend(r))))
            .collect())
    }

    /// Connections per application and user against `max_connections`.
    pub async fn connections(&self) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self.rows("connections", CONNECTIONS_SQL).await?;
        Ok(rows
            .iter()
            .map(|r| {
                PgFact::Connections(PgConnections {
                    application_name: text(r, "application_name"),
                    usename: text(r, "usename"),
                    count: int(r, "count").unwrap_or(0),
                    active: int(r, "active").unwrap_or(0),
                    idle: int(r, "idle").unwrap_or(0),
                    idle_in_transaction: int(r, "idle_in_transaction").unwrap_or(0),
                    max_connections: int(r, "max_connections").unwrap_or(0),
                    reserved: int(r, "reserved").unwrap_or(0),
                    total: int(r, "total").unwrap_or(0),
                })
            })
            .collect())
    }

    /// The statements with the most total execution time, when `pg_stat_statements` is installed
    /// (none otherwise).
    pub async fn statements(&self) -> Result<Vec<PgFact>, IntegrationError> {
        if self
            .rows("pg_stat_statements installed", STATEMENTS_INSTALLED_SQL)
            .await?
            .is_empty()
        {
            return Ok(Vec::new());
        }
        let rows = self.rows("statements", STATEMENTS_SQL).await?;
        Ok(rows
            .iter()
            .map(|r| {
                PgFact::Statement(PgStatement {
                    query: text(r, "query"),
                    calls: int(r, "calls").unwrap_or(0),
                    total_ms: num(r, "total_ms").unwrap_or(0.0),
                    mean_ms: num(r, "mean_ms").unwrap_or(0.0),
                    rows: int(r, "rows").unwrap_or(0),
                })
            })
            .collect())
    }

    /// Standbys and their lag (on a primary), or this server's own replay lag (on a standby).
    pub async fn replication(&self) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self.rows("replication", REPLICATION_SQL).await?;
        Ok(rows
            .iter()
            .map(|r| {
                PgFact::Replica(PgReplica {
                    role: text(r, "role"),
                    application_name: text(r, "application_name"),
                    client_addr: opt_text(r, "client_addr"),
                    state: text(r, "state"),
                    replay_lag_secs: num(r, "replay_lag_secs"),
                    lag_bytes: num(r, "lag_bytes"),
                })
            })
            .collect())
    }

    /// Databases: size, transaction-ID age against `autovacuum_freeze_max_age`, backends.
    pub async fn databases(&self) -> Result<Vec<PgFact>, IntegrationError> {
        let rows = self.rows("databases", DATABASES_SQL).await?;
        Ok(rows
            .iter()
            .map(|r| {
                PgFact::Database(PgDatabase {
                    name: text(r, "name"),
                    size_bytes: num(r, "size_bytes").unwrap_or(0.0),
                    xid_age: int(r, "xid_age").unwrap_or(0),
                    freeze_max_age: int(r, "freeze_max_age").unwrap_or(0),
                    backends: int(r, "backends").unwrap_or(0),
                })
            })
            .collect())
    }

    /// `pg_cancel_backend(pid)`: stops the backend's current statement, keeps its session.
    pub async fn cancel_backend(&self, pid: i64) -> Result<String, IntegrationError> {
        self.signal("pg_cancel_backend", pid, "statement cancelled")
            .await
    }

    /// `pg_terminate_backend(pid)`: ends the session, rolling back its open transaction.
    pub async fn terminate_backend(&self, pid: i64) -> Result<String, IntegrationError> {
        self.signal("pg_terminate_backend", pid, "session terminated")
            .await
    }

    async fn signal(&self, func: &str, pid: i64, done: &str) -> Result<String, IntegrationError> {
        if pid <= 0 {
            return Err(IntegrationError::new(
                NAME,
                func,
                ErrorKind::Invalid(format!("{pid} is not a backend pid")),
            ));
        }
        // The pid is an integer, formatted by us: nothing from outside reaches the statement text.
        let rows = self
            .rows(func, &format!("SELECT {func}({pid}) AS signalled"))
            .await?;
        match rows.first().map(|r| text(r, "signalled")).as_deref() {
            Some("t" | "true") => Ok(format!("backend {pid}: {done}")),
            _ => Err(IntegrationError::new(
                NAME,
                func,
                ErrorKind::Other(format!(
                    "backend {pid} was not signalled (gone already, or not ours to signal)"
                )),
            )),
        }
    }
}

fn text(r: &Row, k: &str) -> String {
    opt_text(r, k).unwrap_or_default()
}

fn opt_text(r: &Row, k: &str) -> Option<String> {
    match r.get(k)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn num(r: &Row, k: &str) -> Option<f64> {
    match r.get(k)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok().filter(|f: &f64| f.is_finite()),
        _ => None,
    }
}

fn int(r: &Row, k: &str) -> Option<i64> {
    match r.get(k)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A PostgreSQL array in text form (`{1,2,3}`) of integers.
fn int_list(r: &Row, k: &str) -> Vec<i64> {
    match r.get(k) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_i64).collect(),
        Some(Value::String(s)) => s
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .split(',')
            .filter_map(|p| p.trim().parse().ok())
            .collect(),
        _ => Vec::new(),
    }
}

fn backend(r: &Row) -> PgBackend {
    PgBackend {
        pid: int(r, "pid").unwrap_or(0),
        database: text(r, "datname"),
        usename: text(r, "usename"),
        application_name: text(r, "application_name"),
        client_addr: opt_text(r, "client_addr"),
        state: text(r, "state"),
        wait_event_type: opt_text(r, "wait_event_type"),
        wait_event: opt_text(r, "wait_event"),
        xact_age_secs: num(r, "xact_age_secs"),
        query_age_secs: num(r, "query_age_secs"),
        state_age_secs: num(r, "state_age_secs"),
        query: text(r, "query"),
        blocked_by: int_list(r, "blocked_by"),
        waiting_mode: opt_text(r, "waiting_mode"),
        held_modes: opt_text(r, "held_modes")
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        relation: opt_text(r, "relation"),
    }
}

/// Whether a statement only reads (or sets a session parameter): what the live backend accepts
/// besides the two signalling functions the actions call.
pub fn is_read_only_statement(sql: &str) -> bool {
    let first = sql
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    matches!(first.as_str(), "SELECT" | "SHOW" | "WITH" | "VALUES") && !sql.contains(';')
}

/// How to reach the server.
#[derive(Clone, Debug)]
pub struct PostgresSettings {
    /// `postgres://user@host:port/db?sslmode=...`; a password in it is allowed but discouraged.
    pub url: String,
    pub application_name: String,
    /// The reference the password comes from, resolved through the keyring on first connect.
    pub password: Option<String>,
    pub statement_timeout: Duration,
    pub connect_timeout: Duration,
}

/// The live side of the `postgres` integration: one connection, made on first use.
pub struct PostgresBackend {
    settings: PostgresSettings,
    keyring: Arc<Keyring>,
    client: tokio::sync::Mutex<Option<tokio_postgres::Client>>,
    redactor: Redactor,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("application_name", &self.settings.application_name)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Checks the URL now (a typo is a configuration error, not a failed investigation); connects
    /// later.
    pub fn new(settings: PostgresSettings, keyring: Arc<Keyring>) -> Result<Self, String> {
        settings
            .url
            .parse::<tokio_postgres::Config>()
            .map_err(|e| format!("integrations.postgres.url: {e}"))?;
        Ok(PostgresBackend {
            settings,
            keyring,
            client: tokio::sync::Mutex::new(None),
            redactor: Redactor::new(),
        })
    }

    fn error(&self, req: &Request, kind: ErrorKind) -> IntegrationError {
        req.error(kind)
    }

    async fn connect(&self, req: &Request) -> Result<tokio_postgres::Client, IntegrationError> {
        let mut config: tokio_postgres::Config = self
            .settings
            .url
            .parse()
            .map_err(|e| self.error(req, ErrorKind::Invalid(format!("url: {e}"))))?;
        if let Some(pw) = config.get_password() {
            crate::policy::redact::learn_secret(&String::from_utf8_lossy(pw));
        }
        config.application_name(&self.settings.application_name);
        config.connect_timeout(self.settings.connect_timeout);
        // Read-only by default for every transaction of this session, and no statement may run
        // long: sitrep looks at a database in trouble and must not add to it.
        config.options(format!(
            "-c default_transaction_read_only=on -c statement_timeout={} -c lock_timeout={} -c idle_in_transaction_session_timeout=60000",
            self.settings.statement_timeout.as_millis().max(1),
            self.settings.statement_timeout.as_millis().max(1),
        ));
        if let Some(reference) = &self.settings.password {
            let value = self
                .keyring
                .get(reference)
                .await
                .map_err(|e| self.error(req, ErrorKind::Other(e.to_string())))?;
            let value = secrecy::ExposeSecret::expose_secret(&value).to_string();
            crate::policy::redact::learn_secret(&value);
            config.password(value);
        }
        let tls = tls_connector().map_err(|e| self.error(req, ErrorKind::Connect(e)))?;
        let (client, connection) = config.connect(tls).await.map_err(|e| {
            let msg = self.redactor.redact(&pg_error(&e)).into_owned();
            self.error(req, ErrorKind::Connect(msg))
        })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "postgres connection closed");
            }
        });
        Ok(client)
    }

    /// Runs one statement and returns its rows as JSON (text values).
    pub async fn send(&self, req: &Request) -> Result<Response, IntegrationError> {
        if req.method != SQL_METHOD {
            return Err(self.error(
                req,
                ErrorKind::Invalid(format!("postgres takes SQL, not {}", req.method)),
            ));
        }
        let sql = req.path.as_str();
        let signal = sql.starts_with("SELECT pg_cancel_backend(")
            || sql.starts_with("SELECT pg_terminate_backend(");
        if !is_read_only_statement(sql) && !signal {
            return Err(self.error(
                req,
                ErrorKind::Invalid("only read-only statements are sent".into()),
            ));
        }
        let timeout = self.settings.statement_timeout + self.settings.connect_timeout;
        let exchange = async {
            let mut guard = self.client.lock().await;
            if guard.as_ref().is_none_or(|c| c.is_closed()) {
                *guard = Some(self.connect(req).await?);
            }
            let Some(client) = guard.as_ref() else {
                return Err(self.error(req, ErrorKind::Connect("no connection".into())));
            };
            let messages = client.simple_query(sql).await.map_err(|e| {
                let msg = self.redactor.redact(&pg_error(&e)).into_owned();
                if e.is_closed() {
                    self.error(req, ErrorKind::Connect(msg))
                } else {
                    self.error(req, ErrorKind::Other(msg))
                }
            })?;
            let mut rows = Vec::new();
            for m in messages {
                if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
                    let mut obj = Map::new();
                    for (i, col) in row.columns().iter().enumerate() {
                        let v = match row.try_get(i) {
                            Ok(Some(s)) => Value::String(s.to_string()),
                            _ => Value::Null,
                        };
                        obj.insert(col.name().to_string(), v);
                    }
                    rows.push(Value::Object(obj));
                    if rows.len() >= MAX_ROWS {
                        break;
                    }
                }
            }
            Ok(rows)
        };
        let rows = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| self.error(req, ErrorKind::Timeout(timeout)))??;
        let mut body = Body::Json(Value::Array(rows));
        body.redact(&self.redactor);
        Ok(Response { status: 200, body })
    }
}

/// The server's own message (`FATAL: password authentication failed for user "x"`), or the
/// connection error's innermost cause.
pub fn describe_error(e: &tokio_postgres::Error) -> String {
    pg_error(e)
}

fn pg_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut cause = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    cause
}

/// TLS through rustls with the platform's trust store; used when the URL's `sslmode` asks for it
/// (`prefer`, the default, falls back to plain text when the server has no TLS).
pub fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let config = builder
        .with_platform_verifier()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_parse_from_text_values() {
        let r: Row = serde_json::from_value(json!({
            "pid": "4242", "state": "idle in transaction", "application_name": "billing",
            "xact_age_secs": "312.5", "blocked_by": "{}", "held_modes": "RowExclusiveLock,ExclusiveLock",
            "client_addr": null
        }))
        .unwrap();
        let b = backend(&r);
        assert_eq!(b.pid, 4242);
        assert!(b.idle_in_transaction());
        assert_eq!(b.xact_age_secs, Some(312.5));
        assert!(b.blocked_by.is_empty());
        assert_eq!(b.held_modes, vec!["RowExclusiveLock", "ExclusiveLock"]);
        assert_eq!(b.client_addr, None);
        let r: Row = serde_json::from_value(json!({"blocked_by": "{17,23}"})).unwrap();
        assert_eq!(int_list(&r, "blocked_by"), vec![17, 23]);
    }

    #[test]
    fn only_reads_are_read_only() {
        assert!(is_read_only_statement(&activity_sql()));
        assert!(is_read_only_statement(&locks_sql()));
        assert!(is_read_only_statement(CONNECTIONS_SQL));
        assert!(is_read_only_statement(REPLICATION_SQL));
        assert!(is_read_only_statement(DATABASES_SQL));
        assert!(!is_read_only_statement("UPDATE t SET x = 1"));
        assert!(!is_read_only_statement("SELECT 1; DROP TABLE t"));
        assert!(!is_read_only_statement("delete from t"));
    }
}
