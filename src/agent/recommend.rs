//! The Recommend stage: a runbook's actions and the analyzers' suggestions, one proposal per
//! kind and target, each with the exact operation it performs.

use super::journal::Journal;
use super::runbook_steps;
use super::specialists::lock;
use crate::model::{Action, Event};
use crate::reason::{Analysis, Observations};
use crate::runbook::Runbook;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Propose the actions: ids assigned, `ActionProposed` emitted, in proposal order.
pub fn propose(
    journal: &Mutex<Journal>,
    analysis: &Analysis,
    runbook: Option<&Runbook>,
    ctx: &serde_json::Value,
    obs: &Observations,
) -> Vec<Action> {
    let mut out: Vec<Action> = Vec::new();
    if let Some(rb) = runbook {
        for step in runbook_steps::actions(rb, ctx, obs) {
            match step {
                Ok(a) => out.push(a),
                Err(message) => lock(journal).emit(Event::Warning { message }),
            }
        }
    }
    for a in &analysis.suggested_actions {
        out.push(a.clone());
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
        if a.operation.is_empty() {
            a.operation = operation(&a.kind, &a.target, &a.params);
        }
        j.emit(Event::ActionProposed { action: a.clone() });
    }
    out
}

/// The exact operation an action performs, shown in the approval modal.
pub fn operation(kind: &str, target: &str, params: &BTreeMap<String, serde_json::Value>) -> String {
    let p = |k: &str| {
        params
            .get(k)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_default()
    };
    let ns = p("namespace");
    let ns = if ns.is_empty() {
        String::new()
    } else {
        format!(" -n {ns}")
    };
    match kind {
        "kubernetes.rollout_undo" => format!("kubectl rollout undo {target}{ns}"),
        "kubernetes.rollout_restart" => format!("kubectl rollout restart {target}{ns}"),
        "kubernetes.scale" => format!("kubectl scale {target}{ns} --replicas={}", p("replicas")),
        "kubernetes.delete_pod" => {
            let force = if p("force") == "true" {
                " --force --grace-period=0"
            } else {
                ""
            };
            format!("kubectl delete {target}{ns}{force}")
        }
        "alertmanager.silence" => format!("amtool silence add {target}"),
        "github.revert_pr" => format!("gh pr revert {target}"),
        other => format!("{other} {target}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_read_like_the_commands() {
        let mut p = BTreeMap::new();
        p.insert("namespace".into(), json!("shop"));
        p.insert("replicas".into(), json!(6));
        assert_eq!(
            operation("kubernetes.scale", "deployment/web", &p),
            "kubectl scale deployment/web -n shop --replicas=6"
        );
        p.insert("force".into(), json!(true));
        assert_eq!(
            operation("kubernetes.delete_pod", "pod/db-0", &p),
            "kubectl delete pod/db-0 -n shop --force --grace-period=0"
        );
    }
}
