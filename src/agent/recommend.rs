//! The Recommend stage: a runbook's actions and the analyzers' suggestions, one proposal per
//! kind and target, each with the exact operation it performs.

use super::journal::Journal;
use super::runbook_steps;
use super::specialists::lock;
use crate::model::{Action, Event, catalog};
use crate::reason::{Analysis, Observations};
use crate::runbook::Runbook;
use std::sync::Mutex;

/// Propose the actions: ids assigned, `ActionProposed` emitted, in proposal order.
pub fn propose(
    journal: &Mutex<Journal>,
    analysis: &Analysis,
    runbook: Option<&Runbook>,
    ctx: &serde_json::Value,
    obs: &Observations,
    proposals: &[Action],
) -> Vec<Action> {
    // The operator's own proposals (from the inbox) come first.
    let mut out: Vec<Action> = proposals.to_vec();
    if let Some(rb) = runbook {
        for step in runbook_steps::actions(rb, ctx, obs) {
            match step {
                Ok(a) => out.push(a),
                Err(message) => lock(journal).emit(Event::Warning { message }),
            }
        }
    }
    for a in &analysis.suggested_actions {
        let mut a = a.clone();
        match catalog::admit(&a.kind, &a.target, &mut a.params) {
            Ok(()) => out.push(a),
            Err(e) => lock(journal).emit(Event::Warning {
                message: format!("not proposing {} {}: {e}", a.kind, a.target),
            }),
        }
    }
    // One proposal per (kind, target): a runbook and an analyzer often agree.
    let mut seen = Vec::new();
    out.retain(|a| {
        let key = (a.kind.clone(), a.target.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    let mut j = lock(journal);
    for a in out.iter_mut() {
        a.id = j.next_id("act");
        // A runbook or an analyzer may raise an action's risk, never take it below the floor;
        // target and operation text are the catalog's reading of the params.
        catalog::settle(a);
        j.emit(Event::ActionProposed { action: a.clone() });
    }
    out
}
