//! The alerts specialist: the firing alerts Alertmanager holds.

use super::{Caller, Scope};
use crate::agent::evidence::Chart;
use crate::agent::tools::Params;
use crate::reason::Observations;
use std::sync::Mutex;

/// Firing alerts from Alertmanager: the trigger's own state (still firing, resolved, silenced) and its neighbours.
pub(super) async fn alerts(c: &Caller, _scope: &Scope, obs: &Mutex<Observations>) {
    c.call("alertmanager.alerts", Params::new(), &Chart::default(), obs)
        .await;
}
