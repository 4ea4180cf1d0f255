//! The shared store of a team's `sitrep serve` replicas (`[serve.store]`): PostgreSQL holds the
//! claims, every session's records, the decisions in flight and each replica's lease, so any
//! replica answers for all of them and a dead replica's work is taken over by a live one.

use crate::agent::{Attributed, Decider};
use crate::model::{Command, Outcome};
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use tokio_postgres::types::Type;

mod schema;
use schema::{MIGRATIONS, migrate};

/// How long a start may take to reach and migrate the store before `serve` gives up.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(9);
/// Each connection attempt's own limit.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);
/// A statement that takes longer than this counts as the store being down.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Where the lines a takeover adds to a dead replica's session are numbered from: after any
/// record the session wrote (which its replica, restarted on the same disk, may still bring to
/// the store from its file).
const TAKEOVER_SEQ: i64 = 1 << 40;
/// The channel a decision for another replica is announced on (payload: that replica's id).
pub const DECISIONS_CHANNEL: &str = "sitrep_decisions";

/// `[serve.store]` as the command line resolved it.
pub struct StoreSettings {
    /// `postgres://USER@HOST:PORT/DB`.
    pub url: String,
    /// The password, already read from its reference.
    pub password: Option<SecretString>,
    /// How long a replica's lease lasts without renewal.
    pub lease: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("[serve.store] url: {0}")]
    Url(String),
    #[error("the store {place} cannot be reached: {why}")]
    Unreachable { place: String, why: String },
    #[error("the store {place} did not answer within {secs} s")]
    Timeout { place: String, secs: u64 },
    #[error("the store's schema is version {found}, newer than this sitrep knows ({known})")]
    Newer { found: i32, known: i32 },
    #[error("the store: {0}")]
    Query(String),
}

fn query_error(e: tokio_postgres::Error) -> StoreError {
    StoreError::Query(crate::integrations::postgres::describe_error(&e))
}

/// What a claim in the store found.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The session is now recorded as investigating these alerts.
    New,
    /// Every alert is already investigated, by this session.
    Known(String),
    /// The group already has this session: the new alerts joined it.
    Joined(String),
}

/// A session as the store lists it.
#[derive(Debug, Clone)]
pub struct StoredSession {
    pub id: String,
    pub replica: String,
    pub title: String,
    pub started: chrono::DateTime<chrono::Utc>,
    /// `running`, `ended` or `interrupted`.
    pub status: String,
    pub outcome: Option<String>,
    pub takes_over: Option<String>,
}

/// A dead replica's session that a survivor investigates again.
#[derive(Debug)]
pub struct Orphan {
    pub id: String,
    /// The journal line the session was claimed with (its trigger), for the new session.
    pub trigger: String,
    /// Its alerts' fingerprints no resolve has arrived for.
    pub firing: Vec<String>,
}

/// One replica's handle on the store.
pub struct Store {
    pub replica: String,
    config: tokio_postgres::Config,
    place: String,
    pub lease: Duration,
    /// Reads and appends: one pipelined connection, reopened when it drops.
    shared: tokio::sync::Mutex<Option<Arc<Client>>>,
    /// Transactions (claims, takeovers) need a connection of their own.
    tx: tokio::sync::Mutex<Option<Client>>,
    /// The last round trip, in microseconds (0 before the first).
    pub round_trip_us: AtomicU64,
    appends: tokio::sync::mpsc::UnboundedSender<(String, i64, String)>,
    /// Records queued and not yet written.
    unwritten: AtomicU64,
    appends_rx:
        std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<(String, i64, String)>>>,
}

/// `host:port/db as user`, never the password.
fn place_of(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(s) => s.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{host}:{port}/{} as {}",
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or("")
    )
}

impl Store {
    /// Connects, creates or migrates the schema and takes this replica's lease, all within
    /// [`OPEN_TIMEOUT`]; a store that cannot be reached or refuses is an error saying which.
    pub async fn open(settings: StoreSettings, replica: String) -> Result<Arc<Store>, StoreError> {
        let mut config: tokio_postgres::Config = settings
            .url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::Url(e.to_string()))?;
        if let Some(pw) = config.get_password() {
            crate::policy::redact::learn_secret(&String::from_utf8_lossy(pw));
        }
        if let Some(pw) = &settings.password {
            crate::policy::redact::learn_secret(pw.expose_secret());
            config.password(pw.expose_secret());
        }
        config.application_name("sitrep serve");
        config.connect_timeout(CONNECT_TIMEOUT);
        let place = place_of(&config);
        let (appends, rx) = tokio::sync::mpsc::unbounded_channel();
        let store = Arc::new(Store {
            replica,
            config,
            place: place.clone(),
            lease: settings.lease,
            shared: tokio::sync::Mutex::new(None),
            tx: tokio::sync::Mutex::new(None),
            round_trip_us: AtomicU64::new(0),
            appends,
            unwritten: AtomicU64::new(0),
            appends_rx: std::sync::Mutex::new(Some(rx)),
        });
        let opening = async {
            let client = store.connect().await?;
            migrate(&client).await?;
            *store.tx.lock().await = Some(client);
            store.renew().await
        };
        match tokio::time::timeout(OPEN_TIMEOUT, opening).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(StoreError::Timeout {
                    place,
                    secs: OPEN_TIMEOUT.as_secs(),
                });
            }
        }
        Ok(store)
    }

    /// Where the store is, for messages: `host:port/db as user`.
    pub fn place(&self) -> &str {
        &self.place
    }

    async fn connect(&self) -> Result<Client, StoreError> {
        let unreachable = |why: String| StoreError::Unreachable {
            place: self.place.clone(),
            why,
        };
        let tls = crate::integrations::postgres::tls_connector().map_err(unreachable)?;
        let (client, connection) = self
            .config
            .connect(tls)
            .await
            .map_err(|e| unreachable(crate::integrations::postgres::describe_error(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "store connection closed");
            }
        });
        Ok(client)
    }

    /// The shared connection, reopened if it dropped.
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut guard = self.shared.lock().await;
        if let Some(c) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let c = Arc::new(self.connect().await?);
        *guard = Some(c.clone());
        Ok(c)
    }

    /// Runs `f` on the shared connection within [`QUERY_TIMEOUT`], timing the round trip.
    async fn with<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(Arc<Client>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let work = async {
            let client = self.client().await?;
            let started = Instant::now();
            let out = f(client).await.map_err(query_error)?;
            self.round_trip_us
                .store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            Ok(out)
        };
        tokio::time::timeout(QUERY_TIMEOUT, work)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Timeout {
                    place: self.place.clone(),
                    secs: QUERY_TIMEOUT.as_secs(),
                })
            })
    }

    /// Runs `f` inside one transaction on the transaction connection (reopened if it dropped).
    async fn transaction<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: for<'a> FnOnce(
            &'a tokio_postgres::Transaction<'a>,
        )
            -> futures::future::BoxFuture<'a, Result<T, tokio_postgres::Error>>,
    {
        let work = async {
            let mut guard = self.tx.lock().await;
            if guard.as_ref().is_none_or(|c| c.is_closed()) {
                *guard = Some(self.connect().await?);
            }
            let Some(client) = guard.as_mut() else {
                return Err(StoreError::Query("no connection".into()));
            };
            let tx = client.transaction().await.map_err(query_error)?;
            let out = f(&tx).await.map_err(query_error)?;
            tx.commit().await.map_err(query_error)?;
            Ok(out)
        };
        tokio::time::timeout(QUERY_TIMEOUT, work)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Timeout {
                    place: self.place.clone(),
                    secs: QUERY_TIMEOUT.as_secs(),
                })
            })
    }

    /// Reachable and at this sitrep's schema version: what `/readyz` asks.
    pub async fn ready(&self) -> Result<(), StoreError> {
        let version: i32 = self
            .with(|c| async move {
                let row = c
                    .query_one(
                        "SELECT coalesce(max(version), 0) FROM sitrep_migrations",
                        &[],
                    )
                    .await?;
                row.try_get(0)
            })
            .await?;
        if version != MIGRATIONS.len() as i32 {
            return Err(StoreError::Query(format!(
                "schema version {version}, this sitrep needs {}",
                MIGRATIONS.len()
            )));
        }
        Ok(())
    }

    /// Extends this replica's lease by `lease` from now.
    pub async fn renew(&self) -> Result<(), StoreError> {
        let (id, secs) = (self.replica.clone(), self.lease.as_secs_f64());
        self.with(|c| async move {
            c.execute(
                "INSERT INTO sitrep_replicas (id, lease_until) VALUES ($1, now() + make_interval(secs => $2))
                 ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until, renewed_at = now()",
                &[&id, &secs],
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// Each replica's seconds since it last renewed its lease.
    pub async fn lease_ages(&self) -> Result<Vec<(String, f64)>, StoreError> {
        self.with(|c| async move {
            let rows = c
                .query(
                    "SELECT id, extract(epoch FROM now() - renewed_at)::float8 FROM sitrep_replicas ORDER BY id",
                    &[],
                )
                .await?;
            rows.iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect()
        })
        .await
    }

    /// Claims `fingerprints` (and `group_key`) for `session`, in one round trip: whichever
    /// replica's delivery comes first wins and every other is a duplicate; a running session of
    /// the same group, or of one of `subjects` (subject, alert name) under another alert name,
    /// takes the new alerts instead. Claims of sessions that ended more than `ttl` ago are free
    /// again. Claims of other alerts do not wait for this one (the locks are per alert).
    #[allow(clippy::too_many_arguments)]
    pub async fn claim(
        &self,
        session: &str,
        title: &str,
        group_key: &str,
        fingerprints: &[String],
        subjects: &[(String, String)],
        trigger: &str,
        ttl: Duration,
    ) -> Result<Claimed, StoreError> {
        let (session, title, trigger) =
            (session.to_string(), title.to_string(), trigger.to_string());
        let replica = self.replica.clone();
        let fps: Vec<String> = fingerprints.iter().map(|f| format!("f:{f}")).collect();
        let group = (!group_key.is_empty()).then(|| format!("g:{group_key}"));
        let (names, subjects): (Vec<String>, Vec<String>) = subjects
            .iter()
            .map(|(subject, name)| (name.clone(), subject.clone()))
            .unzip();
        let ttl = ttl.as_secs_f64();
        let row = self
            .with(|c| async move {
                c.query_typed_one(
                    "SELECT o_kind, o_session FROM sitrep_claim($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    &[
                        (&session, Type::TEXT),
                        (&replica, Type::TEXT),
                        (&title, Type::TEXT),
                        (&trigger, Type::TEXT),
                        (&fps, Type::TEXT_ARRAY),
                        (&group, Type::TEXT),
                        (&subjects, Type::TEXT_ARRAY),
                        (&names, Type::TEXT_ARRAY),
                        (&ttl, Type::FLOAT8),
                    ],
                )
                .await
                .and_then(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, String>(1)?)))
            })
            .await?;
        match row.0.as_str() {
            "new" => Ok(Claimed::New),
            "known" => Ok(Claimed::Known(row.1)),
            "joined" => Ok(Claimed::Joined(row.1)),
            other => Err(StoreError::Query(format!("a claim answered {other:?}"))),
        }
    }

    /// Alerts that joined `session` on this replica are claimed for it too (first claim wins).
    /// `Some(owner)` when every one of them was claimed already, by `owner`.
    pub async fn join(
        &self,
        session: &str,
        fingerprints: &[String],
    ) -> Result<Option<String>, StoreError> {
        let keys: Vec<String> = fingerprints.iter().map(|f| format!("f:{f}")).collect();
        let session = session.to_string();
        self.with(|c| async move {
            // The lock is taken first: the insert reads the row its statement returns.
            let added = c
                .execute(
                    "WITH locked AS (SELECT sitrep_lock($1::text[]))
                     INSERT INTO sitrep_claims (key, session) SELECT unnest($1::text[]), $2 FROM locked
                     ON CONFLICT (key) DO NOTHING",
                    &[&keys, &session],
                )
                .await?;
            if added > 0 || keys.is_empty() {
                return Ok(None);
            }
            c.query_opt(
                "SELECT session FROM sitrep_claims WHERE key = $1",
                &[&keys[0]],
            )
            .await?
            .map(|r| r.try_get(0))
            .transpose()
        })
        .await
    }

    /// A resolve arrived for these alerts: a takeover does not investigate them again.
    pub async fn resolved(&self, fingerprints: &[String]) -> Result<(), StoreError> {
        let keys: Vec<String> = fingerprints.iter().map(|f| format!("f:{f}")).collect();
        self.with(|c| async move {
            c.query_typed(
                "UPDATE sitrep_claims SET resolved = true WHERE key = ANY($1)",
                &[(&keys, Type::TEXT_ARRAY)],
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// Withdraws a claim whose investigation could not start.
    pub async fn forget(&self, session: &str) -> Result<(), StoreError> {
        let session = session.to_string();
        // One statement: the shared connection carries other callers' statements meanwhile.
        self.with(|c| async move {
            c.execute(
                "WITH claims AS (DELETE FROM sitrep_claims WHERE session = $1),
                      subjects AS (DELETE FROM sitrep_subjects WHERE session = $1)
                 DELETE FROM sitrep_sessions WHERE id = $1",
                &[&session],
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// A session this replica ran ended: its claims age from now.
    pub async fn ended(&self, session: &str, outcome: Option<Outcome>) -> Result<(), StoreError> {
        let session = session.to_string();
        let outcome = outcome.map(|o| o.name().to_string());
        self.with(|c| async move {
            c.query_typed(
                "UPDATE sitrep_sessions SET status = 'ended', outcome = $2, ended_at = now()
                 WHERE id = $1 AND status = 'running'",
                &[(&session, Type::TEXT), (&outcome, Type::TEXT)],
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// Queues one record line of `session` for the store; written in order, in batches, by
    /// [`Store::run_appends`].
    pub fn append(&self, session: &str, seq: i64, line: String) {
        if self.appends.send((session.to_string(), seq, line)).is_ok() {
            self.unwritten.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits (up to `grace`) for the queued records to be written: a clean stop loses none.
    pub async fn flush(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while self.unwritten.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Brings a session's records to the store from its file (`lines`, the header first, as
    /// the file held them when this replica came back after a stop): any the stop kept from
    /// reaching the store are added in their places; the session's end, if the file has one,
    /// too. Sessions the store does not know are left alone. Returns the records added.
    pub async fn reconcile(
        &self,
        session: &str,
        lines: Vec<String>,
        outcome: Option<Outcome>,
    ) -> Result<u64, StoreError> {
        let session = session.to_string();
        let seqs: Vec<i64> = (0..lines.len() as i64).collect();
        let added = {
            let session = session.clone();
            self.with(|c| async move {
                let present: i64 = c
                    .query_one(
                        "SELECT count(*) FROM sitrep_records WHERE session = $1 AND seq < $2",
                        &[&session, &TAKEOVER_SEQ],
                    )
                    .await?
                    .try_get(0)?;
                if present >= lines.len() as i64 {
                    return Ok(0);
                }
                c.execute(
                    "INSERT INTO sitrep_records (session, seq, line)
                     SELECT $1, s, l FROM unnest($2::bigint[], $3::text[]) AS r(s, l)
                     WHERE EXISTS (SELECT 1 FROM sitrep_sessions WHERE id = $1)
                     ON CONFLICT DO NOTHING",
                    &[&session, &seqs, &lines],
                )
                .await
            })
            .await?
        };
        if outcome.is_some() {
            self.ended(&session, outcome).await?;
        }
        Ok(added)
    }

    /// Records queued for the store and not yet written.
    pub fn unwritten(&self) -> u64 {
        self.unwritten.load(Ordering::SeqCst)
    }

    /// Sessions this process found still queued in its journal after a restart are its own
    /// again (they start here), so the takeover of its previous life's lease leaves them be.
    pub async fn reclaim(&self, sessions: &[String]) -> Result<(), StoreError> {
        let (ids, replica) = (sessions.to_vec(), self.replica.clone());
        self.with(|c| async move {
            c.execute(
                "UPDATE sitrep_sessions SET replica = $2 WHERE id = ANY($1) AND status = 'running'",
                &[&ids, &replica],
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// Writes queued records until the process ends; a batch the store refuses is retried.
    pub async fn run_appends(self: Arc<Self>) {
        let Some(mut rx) = self
            .appends_rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut batch: Vec<(String, i64, String)> = Vec::new();
        loop {
            if batch.is_empty() {
                match rx.recv().await {
                    Some(item) => batch.push(item),
                    None => return,
                }
            }
            while batch.len() < 1000 {
                match rx.try_recv() {
                    Ok(item) => batch.push(item),
                    Err(_) => break,
                }
            }
            let sessions: Vec<String> = batch.iter().map(|b| b.0.clone()).collect();
            let seqs: Vec<i64> = batch.iter().map(|b| b.1).collect();
            let lines: Vec<String> = batch.iter().map(|b| b.2.clone()).collect();
            let written = self
                .with(|c| async move {
                    c.query_typed(
                        "INSERT INTO sitrep_records (session, seq, line)
                         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ON CONFLICT DO NOTHING",
                        &[
                            (&sessions, Type::TEXT_ARRAY),
                            (&seqs, Type::INT8_ARRAY),
                            (&lines, Type::TEXT_ARRAY),
                        ],
                    )
                    .await
                })
                .await;
            match written {
                Ok(_) => {
                    self.unwritten
                        .fetch_sub(batch.len() as u64, Ordering::SeqCst);
                    batch.clear();
                }
                Err(e) => {
                    tracing::warn!("cannot append {} record(s) to the store: {e}", batch.len());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// Every session in the store, newest first.
    pub async fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        self.with(|c| async move {
            let rows = c
                .query(
                    "SELECT id, replica, title, started_at, status, outcome, takes_over FROM sitrep_sessions ORDER BY started_at DESC, id",
                    &[],
                )
                .await?;
            rows.iter().map(stored).collect()
        })
        .await
    }

    /// One session and its record lines, in order (the header first).
    pub async fn session(
        &self,
        id: &str,
    ) -> Result<Option<(StoredSession, Vec<String>)>, StoreError> {
        let id = id.to_string();
        self.with(|c| async move {
            let Some(row) = c
                .query_opt(
                    "SELECT id, replica, title, started_at, status, outcome, takes_over FROM sitrep_sessions WHERE id = $1",
                    &[&id],
                )
                .await?
            else {
                return Ok(None);
            };
            let lines = c
                .query(
                    "SELECT line FROM sitrep_records WHERE session = $1 ORDER BY seq",
                    &[&id],
                )
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<Vec<String>, _>>()?;
            Ok(Some((stored(&row)?, lines)))
        })
        .await
    }

    /// Hands a decision to the replica running `session`, and wakes it. `Ok(false)` when no
    /// replica runs that session.
    pub async fn post_decision(
        &self,
        session: &str,
        decision: &Attributed,
    ) -> Result<bool, StoreError> {
        let command = serde_json::to_string(&decision.command)
            .map_err(|e| StoreError::Query(e.to_string()))?;
        let (session, name, via) = (
            session.to_string(),
            decision.decider.name.clone(),
            decision.decider.via.clone(),
        );
        self.with(|c| async move {
            let Some(row) = c
                .query_opt(
                    "INSERT INTO sitrep_decisions (session, replica, decider, via, command)
                     SELECT id, replica, $2, $3, $4 FROM sitrep_sessions WHERE id = $1 AND status = 'running'
                     RETURNING replica",
                    &[&session, &name, &via, &command],
                )
                .await?
            else {
                return Ok(false);
            };
            let replica: String = row.try_get(0)?;
            c.execute("SELECT pg_notify($1, $2)", &[&DECISIONS_CHANNEL, &replica])
                .await?;
            Ok(true)
        })
        .await
    }

    /// Decisions other replicas posted for this replica's sessions, oldest first; each is
    /// handed out once.
    pub async fn take_decisions(&self) -> Result<Vec<(String, Attributed)>, StoreError> {
        let replica = self.replica.clone();
        let rows = self
            .with(|c| async move {
                let rows = c
                    .query(
                        "UPDATE sitrep_decisions SET taken_at = now() WHERE replica = $1 AND taken_at IS NULL
                         RETURNING id, session, decider, via, command",
                        &[&replica],
                    )
                    .await?;
                rows.iter()
                    .map(|r| {
                        Ok((
                            r.try_get::<_, i64>(0)?,
                            r.try_get::<_, String>(1)?,
                            r.try_get::<_, String>(2)?,
                            r.try_get::<_, String>(3)?,
                            r.try_get::<_, String>(4)?,
                        ))
                    })
                    .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            })
            .await?;
        let mut rows = rows;
        rows.sort_by_key(|r| r.0);
        Ok(rows
            .into_iter()
            .filter_map(|(_, session, name, via, command)| {
                let command: Command = serde_json::from_str(&command)
                    .ok()
                    .or_else(|| relayed_warning(&command))?;
                Some((
                    session,
                    Attributed {
                        decider: Decider { name, via },
                        command,
                    },
                ))
            })
            .collect())
    }

    /// Listens for decisions addressed to this replica and calls `wake` for each; reconnects
    /// when the connection drops. Polling covers what is missed meanwhile.
    pub async fn listen(self: Arc<Self>, wake: Arc<tokio::sync::Notify>) {
        use futures::StreamExt;
        loop {
            let tls = match crate::integrations::postgres::tls_connector() {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!("store listener: {e}");
                    return;
                }
            };
            match self.config.connect(tls).await {
                Ok((client, mut connection)) => {
                    // The connection delivers notifications only while polled: a task of its
                    // own polls it and passes each payload on.
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                    let driver = tokio::spawn(async move {
                        let mut messages =
                            futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                        while let Some(Ok(m)) = messages.next().await {
                            if let tokio_postgres::AsyncMessage::Notification(n) = m {
                                let _ = tx.send(n.payload().to_string());
                            }
                        }
                    });
                    match client
                        .batch_execute(&format!("LISTEN {DECISIONS_CHANNEL}"))
                        .await
                    {
                        Ok(()) => {
                            while let Some(payload) = rx.recv().await {
                                if payload == self.replica {
                                    wake.notify_one();
                                }
                            }
                        }
                        Err(e) => tracing::warn!("store listener: {e}"),
                    }
                    driver.abort();
                }
                Err(e) => tracing::debug!("store listener cannot connect: {e}"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Replicas whose lease lapsed.
    pub async fn lapsed(&self) -> Result<Vec<String>, StoreError> {
        self.with(|c| async move {
            c.query(
                "SELECT id FROM sitrep_replicas WHERE lease_until < now()",
                &[],
            )
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
        })
        .await
    }

    /// Takes over `dead`'s sessions if its lease is still lapsed and no other replica took them
    /// first (its lease row goes in the same transaction): each running session ends
    /// `interrupted` in the store, with nothing pending approved, and comes back as an orphan
    /// to investigate again. Empty when another replica won.
    pub async fn take_over(&self, dead: &str) -> Result<Vec<Orphan>, StoreError> {
        let dead = dead.to_string();
        self.transaction(move |tx| {
            Box::pin(async move {
                let gone = tx
                    .execute(
                        "DELETE FROM sitrep_replicas WHERE id = $1 AND lease_until < now()",
                        &[&dead],
                    )
                    .await?;
                if gone == 0 {
                    return Ok(Vec::new());
                }
                let rows = tx
                    .query(
                        "UPDATE sitrep_sessions SET status = 'interrupted', outcome = 'interrupted', ended_at = now()
                         WHERE replica = $1 AND status = 'running' RETURNING id, trigger",
                        &[&dead],
                    )
                    .await?;
                let mut out = Vec::new();
                for r in &rows {
                    let id: String = r.try_get(0)?;
                    let trigger: String = r.try_get(1)?;
                    let last = tx
                        .query_opt(
                            "SELECT line FROM sitrep_records WHERE session = $1 AND seq < $2 ORDER BY seq DESC LIMIT 1",
                            &[&id, &TAKEOVER_SEQ],
                        )
                        .await?;
                    let t = match &last {
                        Some(row) => {
                            let line: String = row.try_get(0)?;
                            serde_json::from_str::<serde_json::Value>(&line)
                                .ok()
                                .and_then(|v| v.get("t").and_then(serde_json::Value::as_f64))
                                .unwrap_or(0.0)
                        }
                        None => 0.0,
                    };
                    let lines = interrupted_lines(t, &dead);
                    for (i, line) in lines.iter().enumerate() {
                        tx.execute(
                            "INSERT INTO sitrep_records (session, seq, line) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                            &[&id, &(TAKEOVER_SEQ + i as i64), line],
                        )
                        .await?;
                    }
                    let firing: Vec<String> = tx
                        .query(
                            "SELECT substr(key, 3) FROM sitrep_claims WHERE session = $1 AND key LIKE 'f:%' AND NOT resolved ORDER BY key",
                            &[&id],
                        )
                        .await?
                        .iter()
                        .map(|r| r.try_get(0))
                        .collect::<Result<_, _>>()?;
                    out.push(Orphan { id, trigger, firing });
                }
                Ok(out)
            })
        })
        .await
    }

    /// Records that `session`, started here, takes over `orphan`: the orphan's still-firing
    /// alerts (and group) are claimed for it.
    pub async fn adopt(
        &self,
        session: &str,
        orphan: &str,
        title: &str,
        trigger: &str,
        fingerprints: &[String],
    ) -> Result<(), StoreError> {
        let (session, orphan, title, trigger) = (
            session.to_string(),
            orphan.to_string(),
            title.to_string(),
            trigger.to_string(),
        );
        let replica = self.replica.clone();
        let keys: Vec<String> = fingerprints.iter().map(|f| format!("f:{f}")).collect();
        self.transaction(move |tx| {
            Box::pin(async move {
                // The same locks a claim of these alerts and groups takes.
                let mut locks = keys.clone();
                for r in tx
                    .query(
                        "SELECT key FROM sitrep_claims WHERE session = $1 AND key LIKE 'g:%'",
                        &[&orphan],
                    )
                    .await?
                {
                    locks.push(r.try_get(0)?);
                }
                tx.execute("SELECT sitrep_lock($1)", &[&locks]).await?;
                tx.execute(
                    "INSERT INTO sitrep_sessions (id, replica, title, trigger, takes_over) VALUES ($1, $2, $3, $4, $5)",
                    &[&session, &replica, &title, &trigger, &orphan],
                )
                .await?;
                tx.execute(
                    "UPDATE sitrep_claims SET session = $1 WHERE session = $2 AND (key = ANY($3) OR key LIKE 'g:%')",
                    &[&session, &orphan, &keys],
                )
                .await?;
                Ok(())
            })
        })
        .await
    }
}

/// A warning one replica relayed to a session another runs (related alerts joined it). Warnings
/// are not read from outside the server, so the command's own parsing refuses them; the store
/// is written by replicas only.
fn relayed_warning(command: &str) -> Option<Command> {
    let v: serde_json::Value = serde_json::from_str(command).ok()?;
    (v.get("type")?.as_str()? == "warning").then(|| Command::Warning {
        message: v
            .get("message")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

/// The warning and end a taken-over session gets, as record lines at time `t`.
fn interrupted_lines(t: f64, dead: &str) -> Vec<String> {
    let events = [
        crate::model::Event::Warning {
            message: format!(
                "replica {dead} stopped renewing its lease while this investigation ran; marked \
                 interrupted by replica that took it over: nothing pending was approved"
            ),
        },
        crate::model::Event::SessionEnded {
            outcome: Outcome::Interrupted,
        },
    ];
    events
        .into_iter()
        .filter_map(|event| serde_json::to_string(&crate::model::Record { t, event }).ok())
        .collect()
}

fn stored(r: &tokio_postgres::Row) -> Result<StoredSession, tokio_postgres::Error> {
    Ok(StoredSession {
        id: r.try_get(0)?,
        replica: r.try_get(1)?,
        title: r.try_get(2)?,
        started: r.try_get(3)?,
        status: r.try_get(4)?,
        outcome: r.try_get(5)?,
        takes_over: r.try_get(6)?,
    })
}

/// This replica's name in the store: the host and a per-process tag, so a restarted process
/// is a new replica and its old lease lapses like any other.
pub fn replica_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{host}-{}-{nanos:08x}", std::process::id())
}
