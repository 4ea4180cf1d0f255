//! PostgreSQL analyzers: lock contention and its root blocker, connection exhaustion by one
//! application, long-running query saturation, replication lag, transaction-ID wraparound risk.

use super::{Basis, Decl, Role};
use crate::model::{
    Category, EvidenceId, PgBackend, PgConnections, PgFact, RuledOut, human_duration,
};
use crate::reason::{Ctx, Signal, actions};
use std::collections::{BTreeMap, BTreeSet};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "pg_lock_contention",
        title: "lock chains",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "pg_connection_exhaustion",
        title: "connections exhausted",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "pg_long_queries",
        title: "long-running queries",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "pg_replication_lag",
        title: "replication lag",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "pg_wraparound",
        title: "transaction ID wraparound",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "pg_unreachable",
        title: "database unreachable",
        concern: "database",
        role: Role::Failure,
        reads: &[],
    },
];

/// Connections in use, as a share of `max_connections`, from which the server is close to refusing.
const CONN_USAGE: f64 = 0.8;
/// Share of `max_connections` one application must hold to be the one exhausting them.
const CONN_SHARE: f64 = 0.5;
/// A statement running this long is "long-running".
const LONG_QUERY_SECS: f64 = 60.0;
/// Standby replay lag worth a finding.
const LAG_SECS: f64 = 30.0;
const LAG_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;
/// Transaction-ID age past which wraparound is a real risk (the hard stop is at ~2^31).
const WRAPAROUND_AGE: i64 = 1_000_000_000;

/// Every backend seen, by pid; rows from the lock view (with modes and relations) complete rows
/// from the activity view.
fn backends(ctx: &Ctx) -> BTreeMap<i64, PgBackend> {
    let mut out: BTreeMap<i64, PgBackend> = BTreeMap::new();
    for f in &ctx.obs.postgres {
        let PgFact::Backend(b) = f else { continue };
        match out.get_mut(&b.pid) {
            None => {
                out.insert(b.pid, (**b).clone());
            }
            Some(slot) => {
                let keep = slot.clone();
                *slot = (**b).clone();
                if slot.waiting_mode.is_none() {
                    slot.waiting_mode = keep.waiting_mode;
                }
                if slot.held_modes.is_empty() {
                    slot.held_modes = keep.held_modes;
                }
                if slot.relation.is_none() {
                    slot.relation = keep.relation;
                }
                if slot.blocked_by.is_empty() {
                    slot.blocked_by = keep.blocked_by;
                }
            }
        }
    }
    out
}

fn pg_evidence(ctx: &Ctx, kinds: &[&str]) -> Vec<EvidenceId> {
    ctx.ev(kinds)
}

fn describe(b: &PgBackend) -> String {
    let app = if b.application_name.is_empty() {
        "no application_name".to_string()
    } else {
        format!("application {}", b.application_name)
    };
    let user = if b.usename.is_empty() {
        String::new()
    } else {
        format!(", user {}", b.usename)
    };
    format!("backend {} ({app}{user})", b.pid)
}

/// What a blocker is doing, as an operator says it: "idle in transaction for 5m12s".
fn doing(b: &PgBackend) -> String {
    if b.idle_in_transaction() {
        let how_long = b
            .state_age_secs
            .or(b.xact_age_secs)
            .map(|s| format!(" for {}", human_duration(s)))
            .unwrap_or_default();
        // The transaction's age only when it says more than the state's.
        let tx = match (b.xact_age_secs, b.state_age_secs) {
            (Some(x), Some(st)) if x - st < 1.0 => String::new(),
            (Some(x), _) => format!(" (transaction open {})", human_duration(x)),
            _ => String::new(),
        };
        format!("{}{how_long}{tx}", b.state)
    } else {
        let how_long = b
            .query_age_secs
            .map(|s| format!(" for {}", human_duration(s)))
            .unwrap_or_default();
        format!(
            "{}{how_long}",
            if b.state.is_empty() {
                "unknown state"
            } else {
                &b.state
            }
        )
    }
}

fn short_query(q: &str) -> String {
    let q: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
    if q.chars().count() > 100 {
        format!("{}…", q.chars().take(100).collect::<String>())
    } else {
        q
    }
}

/// Sessions waiting on locks, traced to the root blocker(s): a blocker that waits for nobody.
pub(crate) fn lock_contention(ctx: &Ctx) -> Vec<Signal> {
    let all = backends(ctx);
    let waiting: Vec<&PgBackend> = all.values().filter(|b| !b.blocked_by.is_empty()).collect();
    if waiting.is_empty() {
        return Vec::new();
    }
    // Root blockers of each waiter, following the chain (with a guard against cycles, which
    // PostgreSQL breaks as deadlocks but a snapshot can catch mid-way).
    let mut blocked_by_root: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for w in &waiting {
        let mut stack: Vec<i64> = w.blocked_by.clone();
        let mut seen: BTreeSet<i64> = BTreeSet::new();
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            match all.get(&p) {
                Some(b) if !b.blocked_by.is_empty() => stack.extend(b.blocked_by.iter().copied()),
                _ => {
                    blocked_by_root.entry(p).or_default().insert(w.pid);
                }
            }
        }
    }
    let Some((&root_pid, waiters)) = blocked_by_root
        .iter()
        .max_by_key(|(pid, w)| (w.len(), std::cmp::Reverse(**pid)))
    else {
        return Vec::new();
    };
    let evidence = pg_evidence(ctx, &["postgres/locks", "postgres/activity"]);
    let root = all.get(&root_pid).cloned().unwrap_or(PgBackend {
        pid: root_pid,
        ..PgBackend::default()
    });
    let longest_wait = waiters
        .iter()
        .filter_map(|p| all.get(p))
        .filter_map(|b| b.state_age_secs.or(b.query_age_secs))
        .fold(0.0_f64, f64::max);
    let modes: BTreeSet<String> = waiters
        .iter()
        .filter_map(|p| all.get(p))
        .filter_map(|b| b.waiting_mode.clone())
        .collect();
    let relation = waiters
        .iter()
        .filter_map(|p| all.get(p))
        .find_map(|b| b.relation.clone())
        .or_else(|| root.relation.clone());
    let apps: BTreeSet<String> = waiters
        .iter()
        .filter_map(|p| all.get(p))
        .map(|b| b.application_name.clone())
        .filter(|a| !a.is_empty())
        .collect();
    let on = relation
        .as_deref()
        .map(|r| format!(" on {r}"))
        .unwrap_or_default();
    let mode_text = if modes.is_empty() {
        String::new()
    } else {
        format!(
            " waiting for {}",
            modes.iter().cloned().collect::<Vec<_>>().join("/")
        )
    };
    let held = if root.held_modes.is_empty() {
        String::new()
    } else {
        format!(" (holding {})", root.held_modes.join(", "))
    };
    let last = if root.query.is_empty() {
        String::new()
    } else if root.idle_in_transaction() {
        format!("; its last statement: {}", short_query(&root.query))
    } else {
        format!("; running: {}", short_query(&root.query))
    };
    let cite = if evidence.is_empty() {
        String::new()
    } else {
        format!(" [{}]", evidence.join(", "))
    };
    let waiter_apps = if apps.is_empty() {
        String::new()
    } else {
        format!(
            " (of {})",
            apps.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    let cause = format!(
        "Lock contention: {} is {}{held} and blocks {} session(s){waiter_apps}{on}{mode_text}, the longest waiting {}{last}{cite}",
        describe(&root),
        doing(&root),
        waiters.len(),
        human_duration(longest_wait),
    );
    let summary = format!(
        "lock contention: root blocker {} {}; {} waiting{on}",
        describe(&root),
        doing(&root),
        waiters.len()
    );
    let mut detail = format!(
        "blocking chain from pg_blocking_pids: {} waits on {}",
        waiters
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        root_pid
    );
    let mut actions_out = Vec::new();
    let why_terminate = format!(
        "{} holds the locks {} session(s) wait for{on}; ending it rolls back its open transaction and releases them{cite}",
        describe(&root),
        waiters.len()
    );
    if root.idle_in_transaction() {
        detail.push_str(&format!(
            "; the blocker is {}: an application that opened a transaction and stopped talking (a missing COMMIT, an exception path, a pool that does not reset); cancelling has nothing to stop, only terminating releases the locks. Lasting fix: make {} commit or roll back, and set idle_in_transaction_session_timeout",
            root.state,
            if root.application_name.is_empty() { "the client" } else { &root.application_name }
        ));
        actions_out.push(actions::pg_signal(
            true,
            &root,
            why_terminate,
            evidence.clone(),
        ));
    } else {
        actions_out.push(actions::pg_signal(
            false,
            &root,
            format!(
                "{} runs the statement whose locks {} session(s) wait for{on}; cancelling it releases them and keeps its session{cite}",
                describe(&root),
                waiters.len()
            ),
            evidence.clone(),
        ));
        actions_out.push(actions::pg_signal(
            true,
            &root,
            why_terminate,
            evidence.clone(),
        ));
    }
    // Two or more sessions waiting, or one waiting long, is measured contention, not a blip.
    let contended = waiters.len() >= 2 || longest_wait >= 30.0;
    vec![Signal {
        analyzer: "pg_lock_contention",
        summary,
        detail,
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        links: u8::from(contended) * 2,
        evidence,
        cause: Some(cause),
        actions: actions_out,
        objects: vec![format!("backend/{root_pid}")],
        ..Signal::default()
    }]
}

/// Connections by application (summed over users), with the server's limit.
fn connections<'a>(ctx: &Ctx<'a>) -> Option<(BTreeMap<String, i64>, &'a PgConnections)> {
    let rows: Vec<&PgConnections> = ctx
        .obs
        .postgres
        .iter()
        .filter_map(|f| match f {
            PgFact::Connections(c) => Some(c),
            _ => None,
        })
        .collect();
    let first = *rows.first()?;
    let mut by_app: BTreeMap<String, i64> = BTreeMap::new();
    for c in &rows {
        *by_app.entry(c.application_name.clone()).or_default() += c.count;
    }
    Some((by_app, first))
}

/// The server is close to (or at) `max_connections`, and one application holds most of them; or
/// the server refused sitrep's own connection for want of slots.
pub(crate) fn connection_exhaustion(ctx: &Ctx) -> Vec<Signal> {
    let evidence = pg_evidence(ctx, &["postgres/connections", "postgres/activity"]);
    if let Some((by_app, server)) = connections(ctx) {
        let max = server.max_connections;
        let total = server.total.max(by_app.values().sum());
        if max <= 0 {
            return Vec::new();
        }
        let usage = total as f64 / max as f64;
        let Some((app, held)) = by_app
            .iter()
            .max_by_key(|(a, n)| (**n, std::cmp::Reverse((*a).clone())))
        else {
            return Vec::new();
        };
        let share = *held as f64 / max as f64;
        if usage < CONN_USAGE {
            return Vec::new();
        }
        let users: Vec<String> = ctx
            .obs
            .postgres
            .iter()
            .filter_map(|f| match f {
                PgFact::Connections(c) if &c.application_name == app => Some(c.usename.clone()),
                _ => None,
            })
            .collect();
        let idle_in_tx: i64 = ctx
            .obs
            .postgres
            .iter()
            .filter_map(|f| match f {
                PgFact::Connections(c) if &c.application_name == app => Some(c.idle_in_transaction),
                _ => None,
            })
            .sum();
        let idle: i64 = ctx
            .obs
            .postgres
            .iter()
            .filter_map(|f| match f {
                PgFact::Connections(c) if &c.application_name == app => Some(c.idle),
                _ => None,
            })
            .sum();
        let cite = if evidence.is_empty() {
            String::new()
        } else {
            format!(" [{}]", evidence.join(", "))
        };
        let app_name = if app.is_empty() {
            "clients without an application_name".to_string()
        } else {
            format!("application {app}")
        };
        let states = format!("{idle} idle, {idle_in_tx} idle in transaction");
        let (cause, basis, links) = if share >= CONN_SHARE {
            (
                format!(
                    "Connection exhaustion: {app_name} (user {}) holds {held} of {max} connections ({:.0}% of max_connections; {states}); the server has {total} of {max} in use and refuses new clients once the rest are gone{cite}",
                    users.join(", "),
                    share * 100.0,
                ),
                // One holder above its share is stated by the server's own rows; the pool's
                // owner is named, and a server nearly full is one more link.
                Basis::Measured,
                1 + 2 * u8::from(usage >= 0.9),
            )
        } else {
            (
                format!(
                    "Connection exhaustion: {total} of {max} connections in use ({:.0}%); the largest holder is {app_name} with {held}{cite}",
                    usage * 100.0
                ),
                Basis::Logged,
                0,
            )
        };
        let mut ruled_out = Vec::new();
        if share >= CONN_SHARE {
            let others: i64 = total - held;
            ruled_out.push(RuledOut {
                statement: "load spread across every client".into(),
                reason: format!("other applications hold only {others} of {max} connections"),
                evidence: evidence.clone(),
            });
        }
        return vec![Signal {
            analyzer: "pg_connection_exhaustion",
            summary: format!(
                "connections: {total} of {max} in use; {app_name} holds {held} ({:.0}%)",
                share * 100.0
            ),
            detail: format!(
                "per application: {}; a pool sized above what the server allows, or connections leaked (idle ones never returned), exhaust max_connections; fix the pool size of {app_name} or put a pooler (PgBouncer) in front",
                by_app
                    .iter()
                    .map(|(a, n)| format!("{}={n}", if a.is_empty() { "(none)" } else { a }))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            category: Category::ResourceExhaustion,
            basis,
            links,
            evidence,
            cause: Some(cause),
            ruled_out,
            objects: vec![format!("application/{app}")],
            ..Signal::default()
        }];
    }
    // No connection rows: the server may have refused sitrep itself.
    let refused = ctx
        .obs
        .coverage
        .get("postgres")
        .and_then(|c| c.error.clone());
    match refused {
        Some(e)
            if e.contains("too many clients")
                || e.contains("remaining connection slots are reserved") =>
        {
            vec![Signal {
                analyzer: "pg_connection_exhaustion",
                summary: "the PostgreSQL server refused a connection: no slots left".into(),
                detail: format!("the server answered: {e}"),
                category: Category::ResourceExhaustion,
                basis: Basis::Measured,
                evidence: ctx.obs.evidence.values().flatten().cloned().collect(),
                cause: Some(format!(
                    "Connection exhaustion: the PostgreSQL server has no connection slot left (it refused sitrep's own: {e}); which application holds them could not be read"
                )),
                ..Signal::default()
            }]
        }
        _ => Vec::new(),
    }
}

/// The server could not be reached at all (down, refusing, unresolvable): what a `pg_up == 0`
/// alert or "connection refused" from the clients looks like from sitrep's side.
pub(crate) fn unreachable(ctx: &Ctx) -> Vec<Signal> {
    let Some(cov) = ctx.obs.coverage.get("postgres") else {
        return Vec::new();
    };
    let Some(error) = cov.error.clone() else {
        return Vec::new();
    };
    let no_slots =
        error.contains("too many clients") || error.contains("remaining connection slots");
    let connect = error.contains("cannot connect") || error.contains("timed out");
    if cov.answered > 0 || no_slots || !connect {
        return Vec::new();
    }
    // The trigger is the only evidence there is: the failure itself is on the timeline.
    let evidence = ctx.ev(&["alert"]);
    vec![Signal {
        analyzer: "pg_unreachable",
        summary: format!("PostgreSQL did not accept sitrep's connection: {error}"),
        detail: "the server is down, not listening on that address, or a network path or firewall drops the connection; clients see the same".into(),
        category: Category::Infrastructure,
        basis: Basis::Logged,
        evidence,
        cause: Some(format!(
            "PostgreSQL is unreachable: the database server did not accept a connection ({error})"
        )),
        ..Signal::default()
    }]
}

/// Statements that have been running for long, enough of them to tie up the server.
pub(crate) fn long_queries(ctx: &Ctx) -> Vec<Signal> {
    let all = backends(ctx);
    let mut long: Vec<&PgBackend> = all
        .values()
        .filter(|b| b.state == "active" && b.query_age_secs.is_some_and(|s| s >= LONG_QUERY_SECS))
        .filter(|b| b.blocked_by.is_empty())
        .collect();
    if long.is_empty() {
        return Vec::new();
    }
    long.sort_by(|a, b| {
        b.query_age_secs
            .unwrap_or(0.0)
            .total_cmp(&a.query_age_secs.unwrap_or(0.0))
    });
    let active = all.values().filter(|b| b.state == "active").count().max(1);
    let share = long.len() as f64 / active as f64;
    let evidence = pg_evidence(ctx, &["postgres/activity"]);
    let top = long[0];
    let cite = if evidence.is_empty() {
        String::new()
    } else {
        format!(" [{}]", evidence.join(", "))
    };
    let saturated = long.len() >= 3 && share >= 0.5;
    let summary = format!(
        "{} statement(s) running longer than {}; the longest {} in {}: {}",
        long.len(),
        human_duration(LONG_QUERY_SECS),
        human_duration(top.query_age_secs.unwrap_or(0.0)),
        describe(top),
        short_query(&top.query)
    );
    vec![Signal {
        analyzer: "pg_long_queries",
        summary: summary.clone(),
        detail: format!(
            "{} of {active} active backends run long statements",
            long.len()
        ),
        category: Category::ResourceExhaustion,
        basis: if saturated { Basis::Measured } else { Basis::Observed },
        cause: saturated.then(|| {
            format!(
                "Long-running query saturation: {summary}; {} of {active} active backends are busy with them{cite}",
                long.len()
            )
        }),
        actions: vec![actions::pg_signal(
            false,
            top,
            format!(
                "{} has run one statement for {}{cite}",
                describe(top),
                human_duration(top.query_age_secs.unwrap_or(0.0))
            ),
            evidence.clone(),
        )],
        evidence,
        objects: vec![format!("backend/{}", top.pid)],
        ..Signal::default()
    }]
}

/// Standbys replaying far behind the primary (or this server, a standby, behind its primary).
pub(crate) fn replication_lag(ctx: &Ctx) -> Vec<Signal> {
    let lagging: Vec<_> = ctx
        .obs
        .postgres
        .iter()
        .filter_map(|f| match f {
            PgFact::Replica(r)
                if r.replay_lag_secs.is_some_and(|s| s >= LAG_SECS)
                    || r.lag_bytes.is_some_and(|b| b >= LAG_BYTES) =>
            {
                Some(r)
            }
            _ => None,
        })
        .collect();
    let Some(worst) = lagging.iter().max_by(|a, b| {
        a.replay_lag_secs
            .unwrap_or(0.0)
            .total_cmp(&b.replay_lag_secs.unwrap_or(0.0))
    }) else {
        return Vec::new();
    };
    let evidence = pg_evidence(ctx, &["postgres/replication"]);
    let who = if worst.role == "self" {
        "this server (a standby)".to_string()
    } else if worst.application_name.is_empty() {
        "a standby".to_string()
    } else {
        format!("standby {}", worst.application_name)
    };
    let lag = worst
        .replay_lag_secs
        .map(human_duration)
        .unwrap_or_else(|| "?".into());
    let bytes = worst
        .lag_bytes
        .map(|b| format!(", {:.0} MiB of WAL", b / (1024.0 * 1024.0)))
        .unwrap_or_default();
    let cite = if evidence.is_empty() {
        String::new()
    } else {
        format!(" [{}]", evidence.join(", "))
    };
    vec![Signal {
        analyzer: "pg_replication_lag",
        summary: format!("replication lag: {who} replays {lag} behind{bytes}"),
        detail: format!("{} standby(s) lagging", lagging.len()),
        category: Category::Infrastructure,
        basis: Basis::Logged,
        links: 1,
        cause: Some(format!(
            "Replication lag: {who} replays {lag} behind the primary{bytes}; reads from it are stale{cite}"
        )),
        evidence,
        ..Signal::default()
    }]
}

/// A database whose oldest unfrozen transaction ID is close to wraparound.
pub(crate) fn wraparound(ctx: &Ctx) -> Vec<Signal> {
    let Some(db) = ctx
        .obs
        .postgres
        .iter()
        .filter_map(|f| match f {
            PgFact::Database(d) => Some(d),
            _ => None,
        })
        .max_by_key(|d| d.xid_age)
    else {
        return Vec::new();
    };
    let over_freeze = db.freeze_max_age > 0 && db.xid_age > db.freeze_max_age;
    if db.xid_age < WRAPAROUND_AGE && !over_freeze {
        return Vec::new();
    }
    let evidence = pg_evidence(ctx, &["postgres/databases"]);
    let cite = if evidence.is_empty() {
        String::new()
    } else {
        format!(" [{}]", evidence.join(", "))
    };
    let pct = db.xid_age as f64 / 2_147_483_648.0 * 100.0;
    let risky = db.xid_age >= WRAPAROUND_AGE;
    let summary = format!(
        "database {}: transaction-ID age {} ({pct:.0}% of the way to wraparound; autovacuum_freeze_max_age {})",
        db.name, db.xid_age, db.freeze_max_age
    );
    vec![Signal {
        analyzer: "pg_wraparound",
        summary: summary.clone(),
        detail: "anti-wraparound autovacuum is not keeping up (a long transaction, an abandoned replication slot or prepared transaction holds back the horizon); at about 2^31 the server stops accepting writes".into(),
        category: Category::ResourceExhaustion,
        basis: if risky { Basis::Measured } else { Basis::Context },
        links: 1,
        cause: risky.then(|| format!("Transaction-ID wraparound risk: {summary}{cite}")),
        evidence,
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::Observations;

    fn backend(pid: i64, app: &str, state: &str, blocked_by: &[i64]) -> PgFact {
        PgFact::Backend(Box::new(PgBackend {
            pid,
            application_name: app.into(),
            usename: "app".into(),
            state: state.into(),
            xact_age_secs: Some(400.0),
            state_age_secs: Some(312.0),
            query_age_secs: Some(312.0),
            query: "UPDATE accounts SET balance = balance - 1 WHERE id = 1".into(),
            blocked_by: blocked_by.to_vec(),
            waiting_mode: (!blocked_by.is_empty()).then(|| "ShareLock".into()),
            ..PgBackend::default()
        }))
    }

    fn obs(facts: Vec<PgFact>) -> Observations {
        let mut o = Observations {
            postgres: facts,
            ..Observations::default()
        };
        o.evidence
            .insert("postgres/locks".into(), vec!["ev-3".into()]);
        o
    }

    #[test]
    fn the_root_of_a_chain_is_named_with_its_state() {
        // 30 waits on 20, which waits on 10; 11 also waits on 10.
        let o = obs(vec![
            backend(10, "billing", "idle in transaction", &[]),
            backend(20, "web", "active", &[10]),
            backend(30, "web", "active", &[20]),
            backend(11, "web", "active", &[10]),
        ]);
        let ctx = Ctx::new(&o);
        let s = lock_contention(&ctx);
        assert_eq!(s.len(), 1);
        let cause = s[0].cause.clone().unwrap();
        assert!(cause.contains("backend 10"), "{cause}");
        assert!(cause.contains("application billing"), "{cause}");
        assert!(cause.contains("idle in transaction for 5m12s"), "{cause}");
        assert!(cause.contains("blocks 3 session(s)"), "{cause}");
        assert!(cause.contains("[ev-3]"), "{cause}");
        assert_eq!(s[0].actions[0].kind, "postgres.terminate_backend");
        assert_eq!(s[0].actions[0].target, "backend/10");
    }

    #[test]
    fn a_refused_connection_is_an_unreachable_server() {
        let mut o = obs(Vec::new());
        o.coverage.insert(
            "postgres".into(),
            crate::reason::Coverage {
                configured: true,
                failed: 1,
                error: Some(
                    "postgres: query activity: cannot connect: Connection refused (os error 111)"
                        .into(),
                ),
                ..Default::default()
            },
        );
        let s = unreachable(&Ctx::new(&o));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].category, Category::Infrastructure);
        // A credential the operator denied is not an outage.
        o.coverage.get_mut("postgres").unwrap().error =
            Some("postgres: not asked: the credential op://a/b/c was not approved".into());
        assert!(unreachable(&Ctx::new(&o)).is_empty());
    }

    #[test]
    fn no_waiters_no_contention() {
        let o = obs(vec![backend(10, "billing", "idle in transaction", &[])]);
        assert!(lock_contention(&Ctx::new(&o)).is_empty());
    }

    fn conns(app: &str, n: i64, total: i64) -> PgFact {
        PgFact::Connections(PgConnections {
            application_name: app.into(),
            usename: "svc".into(),
            count: n,
            idle: n,
            max_connections: 20,
            reserved: 3,
            total,
            ..PgConnections::default()
        })
    }

    #[test]
    fn one_application_holding_most_connections_is_named() {
        let o = obs(vec![conns("report-worker", 18, 19), conns("sitrep", 1, 19)]);
        let s = connection_exhaustion(&Ctx::new(&o));
        let cause = s[0].cause.clone().unwrap();
        assert!(cause.contains("report-worker"), "{cause}");
        assert!(cause.contains("18 of 20"), "{cause}");
        let o = obs(vec![conns("a", 4, 8), conns("b", 4, 8)]);
        assert!(connection_exhaustion(&Ctx::new(&o)).is_empty());
    }
}
