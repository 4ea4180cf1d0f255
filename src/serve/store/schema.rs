//! The store's schema: its versions, in order, and the migration that brings a database to the
//! newest one (replicas starting together apply each version once).

use super::{StoreError, query_error};
use tokio_postgres::Client;

/// Serialises migrations: two replicas starting at once apply each version once.
const MIGRATE_LOCK: i64 = 0x5172_6570_0002;

/// The schema, one entry per version, applied in order and recorded in `sitrep_migrations`.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: replicas and their leases, sessions, their records, claims, decisions in flight.
    "CREATE TABLE sitrep_replicas (
        id text PRIMARY KEY,
        lease_until timestamptz NOT NULL,
        renewed_at timestamptz NOT NULL DEFAULT now()
     );
     CREATE TABLE sitrep_sessions (
        id text PRIMARY KEY,
        replica text NOT NULL,
        title text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        status text NOT NULL DEFAULT 'running',
        outcome text,
        ended_at timestamptz,
        trigger text NOT NULL,
        takes_over text
     );
     CREATE INDEX sitrep_sessions_replica ON sitrep_sessions (replica) WHERE status = 'running';
     CREATE TABLE sitrep_records (
        session text NOT NULL,
        seq bigint NOT NULL,
        line text NOT NULL,
        PRIMARY KEY (session, seq)
     );
     CREATE TABLE sitrep_claims (
        key text PRIMARY KEY,
        session text NOT NULL,
        resolved boolean NOT NULL DEFAULT false
     );
     CREATE INDEX sitrep_claims_session ON sitrep_claims (session);
     CREATE TABLE sitrep_decisions (
        id bigserial PRIMARY KEY,
        session text NOT NULL,
        replica text NOT NULL,
        decider text NOT NULL,
        via text NOT NULL,
        command text NOT NULL,
        taken_at timestamptz
     );
     CREATE INDEX sitrep_decisions_waiting ON sitrep_decisions (replica) WHERE taken_at IS NULL;",
    // 2: claims in one round trip, under a lock per alert, group and subject rather than one
    // for every claim; the subjects of running investigations, so a related alert joins the
    // investigation another replica runs.
    "CREATE TABLE sitrep_subjects (
        session text NOT NULL,
        subject text NOT NULL,
        name text NOT NULL,
        PRIMARY KEY (subject, session, name)
     );
     CREATE INDEX sitrep_subjects_session ON sitrep_subjects (session);
     -- Locks each key for the rest of the transaction, in one order everywhere (no deadlock).
     CREATE FUNCTION sitrep_lock(p_keys text[]) RETURNS void LANGUAGE plpgsql AS $f$
     DECLARE k text;
     BEGIN
        FOR k IN SELECT DISTINCT x FROM unnest(p_keys) x ORDER BY 1 LOOP
            PERFORM pg_advisory_xact_lock(1936290160, hashtext(k));
        END LOOP;
     END $f$;
     -- Claims alerts (keys 'f:FINGERPRINT') and a group ('g:KEY', or NULL) for a new session:
     -- 'known' when every alert is claimed by a session running or ended within p_ttl seconds;
     -- 'joined' when a running session has the group, or one of the subjects under another
     -- alert name (the new alerts are claimed for it); else 'new', the session recorded.
     CREATE FUNCTION sitrep_claim(p_session text, p_replica text, p_title text, p_trigger text,
            p_fps text[], p_group text, p_subjects text[], p_names text[], p_ttl float8)
        RETURNS TABLE (o_kind text, o_session text) LANGUAGE plpgsql AS $f$
     DECLARE v_new text[]; v_owner text; v_kind text := 'joined';
     BEGIN
        PERFORM sitrep_lock(p_fps || CASE WHEN p_group IS NULL THEN '{}'::text[] ELSE ARRAY[p_group] END
            || ARRAY(SELECT 's:' || x FROM unnest(p_subjects) x));
        v_new := ARRAY(SELECT f FROM unnest(p_fps) f WHERE NOT EXISTS (
            SELECT 1 FROM sitrep_claims c JOIN sitrep_sessions s ON s.id = c.session
             WHERE c.key = f AND (s.ended_at IS NULL OR s.ended_at > now() - make_interval(secs => p_ttl))));
        IF cardinality(p_fps) > 0 AND cardinality(v_new) = 0 THEN
            RETURN QUERY SELECT 'known'::text, c.session FROM unnest(p_fps) WITH ORDINALITY AS f(key, n)
                JOIN sitrep_claims c ON c.key = f.key ORDER BY f.n LIMIT 1;
            RETURN;
        END IF;
        IF p_group IS NOT NULL THEN
            SELECT c.session INTO v_owner FROM sitrep_claims c JOIN sitrep_sessions s ON s.id = c.session
             WHERE c.key = p_group AND s.status = 'running';
        END IF;
        IF v_owner IS NULL THEN
            SELECT x.session INTO v_owner
              FROM unnest(p_subjects, p_names) AS a(subject, name)
              JOIN sitrep_subjects x ON x.subject = a.subject
              JOIN sitrep_sessions s ON s.id = x.session AND s.status = 'running'
             WHERE NOT EXISTS (SELECT 1 FROM sitrep_subjects y
                                WHERE y.session = x.session AND y.subject = a.subject AND y.name = a.name)
             ORDER BY s.started_at, x.session LIMIT 1;
        END IF;
        IF v_owner IS NULL THEN
            INSERT INTO sitrep_sessions (id, replica, title, trigger)
                VALUES (p_session, p_replica, p_title, p_trigger);
            INSERT INTO sitrep_subjects (session, subject, name)
                SELECT p_session, a.subject, a.name FROM unnest(p_subjects, p_names) AS a(subject, name)
                ON CONFLICT DO NOTHING;
            v_owner := p_session;
            v_kind := 'new';
            IF p_group IS NOT NULL THEN
                v_new := v_new || p_group;
            END IF;
        END IF;
        INSERT INTO sitrep_claims (key, session) SELECT unnest(v_new), v_owner
            ON CONFLICT (key) DO UPDATE SET session = EXCLUDED.session, resolved = false;
        RETURN QUERY SELECT v_kind, v_owner;
     END $f$;",
];

/// Creates the schema or brings it to the newest version, under a lock so replicas starting
/// together apply each version once.
pub(super) async fn migrate(client: &Client) -> Result<(), StoreError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATE_LOCK])
        .await
        .map_err(query_error)?;
    let result = async {
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS sitrep_migrations (
                    version integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                 )",
            )
            .await
            .map_err(query_error)?;
        let current: i32 = client
            .query_one(
                "SELECT coalesce(max(version), 0) FROM sitrep_migrations",
                &[],
            )
            .await
            .and_then(|r| r.try_get(0))
            .map_err(query_error)?;
        let known = MIGRATIONS.len() as i32;
        if current > known {
            return Err(StoreError::Newer {
                found: current,
                known,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
            let version = i as i32 + 1;
            client
                .batch_execute(&format!(
                    "BEGIN; {sql}; INSERT INTO sitrep_migrations (version) VALUES ({version}); COMMIT;"
                ))
                .await
                .map_err(|e| StoreError::Query(format!("migration {version}: {}", crate::integrations::postgres::describe_error(&e))))?;
        }
        Ok(())
    }
    .await;
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATE_LOCK])
        .await;
    result
}
