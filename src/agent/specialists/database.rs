//! The database specialist: PostgreSQL sessions, locks, connections, queries and replication.

use super::Caller;
use crate::agent::evidence::Chart;
use crate::agent::tools::Params;
use crate::reason::Observations;
use std::sync::Mutex;

/// The database specialist: PostgreSQL sessions first (which opens the connection, after the
/// credential is approved), then the other reads in parallel.
pub(super) async fn database(c: &Caller, obs: &Mutex<Observations>) {
    let none = Chart::default();
    if c.call("postgres.activity", Params::new(), &none, obs)
        .await
        .is_none()
    {
        // Not reachable (or not allowed): one clear failure, not seven.
        return;
    }
    futures::join!(
        c.call("postgres.locks", Params::new(), &none, obs),
        c.call("postgres.connections", Params::new(), &none, obs),
        c.call("postgres.long_queries", Params::new(), &none, obs),
        c.call("postgres.statements", Params::new(), &none, obs),
        c.call("postgres.replication", Params::new(), &none, obs),
        c.call("postgres.databases", Params::new(), &none, obs),
    );
}
