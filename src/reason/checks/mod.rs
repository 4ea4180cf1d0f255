//! Checks per concern, in the manner of Coroot's inspections: each file declares what it checks
//! about the subject and returns, for each failure it finds, a signal with its onset and evidence.

pub(crate) mod changes;
pub mod cloud;
pub(crate) mod config;
pub(crate) mod cpu_limit;
pub(crate) mod create_refused;
pub(crate) mod database;
pub(crate) mod dependencies;
pub(crate) mod logs;
pub(crate) mod metrics;
pub(crate) mod monitor;
pub(crate) mod nodes;
pub(crate) mod pods;
pub(crate) mod recovery;
pub(crate) mod rollout;
pub(crate) mod scaled_to_zero;
pub(crate) mod scheduling;
pub(crate) mod service_endpoints;
pub(crate) mod slow_calls;
pub(crate) mod storm;
