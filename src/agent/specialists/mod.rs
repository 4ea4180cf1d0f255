//! Gather specialists, one file each (kubernetes, metrics, alerts, logs, changes, database; cloud
//! and datadog live beside their tools): each plans its own tool calls from the scope and runs
//! them through a [`Caller`]. This file runs one by name.

mod alerts;
mod caller;
mod changes;
mod coverage;
mod database;
mod kubernetes;
mod logs;
mod metrics;
mod observations;
mod pick;
mod scope;
mod triage;

pub use caller::{Caller, lock, rollout_changes};
pub use coverage::{INTEGRATIONS, coverage};
pub use logs::log_selector;
pub use observations::{absorb, is_discovery, merge};
pub use pick::{pick, pick_for, points_at_database};
pub use scope::{CLUSTER_KEYS, Scope, Threshold, split_threshold};
pub use triage::{TRIAGE_LANE, match_problem, resolve_problem};

use super::tools::s;
use crate::model::Event;
use crate::reason::Observations;
use chrono::{DateTime, Utc};
use std::sync::Mutex;

/// Run one specialist by name.
pub async fn run(name: &str, caller: Caller, scope: &Scope) -> Observations {
    let obs = Mutex::new(Observations::default());
    let c = caller.for_specialist(name);
    match name {
        "kubernetes" => kubernetes::kubernetes(&c, scope, &obs).await,
        "metrics" => metrics::metrics(&c, scope, &obs).await,
        "logs" => logs::logs(&c, scope, &obs).await,
        "changes" => changes::changes(&c, scope, &obs).await,
        "alerts" => alerts::alerts(&c, scope, &obs).await,
        "database" => database::database(&c, &obs).await,
        "cloud" => super::cloud::specialist(&c, scope, &obs).await,
        "datadog" => super::datadog::specialist(&c, scope, &obs).await,
        other => c.emit(Event::Warning {
            message: format!("unknown specialist {other}"),
        }),
    }
    obs.into_inner().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn rfc3339(t: DateTime<Utc>) -> Option<serde_json::Value> {
    s(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}
