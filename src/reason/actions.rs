//! Builders for the remediation actions analyzers suggest; operation text and floors come from the catalog.

use crate::model::catalog;
use crate::model::{Action, EvidenceId, Risk};
use serde_json::json;
use std::collections::BTreeMap;

/// An action whose operation text is the catalog's and whose risk is never below the kind's floor.
fn action(
    kind: &str,
    target: String,
    risk: Risk,
    rationale: String,
    blast_radius: String,
    params: BTreeMap<String, serde_json::Value>,
    evidence: Vec<EvidenceId>,
) -> Action {
    Action {
        id: String::new(),
        kind: kind.to_string(),
        operation: catalog::operation(kind, &target, &params),
        risk: catalog::effective_risk(kind, risk, &params),
        target,
        params,
        rationale,
        blast_radius,
        evidence,
    }
}

fn params(pairs: &[(&str, serde_json::Value)]) -> BTreeMap<String, serde_json::Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub(crate) fn rollout_undo(
    ns: &str,
    deployment: &str,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    action(
        "kubernetes.rollout_undo",
        format!("deployment/{deployment}"),
        Risk::High,
        why,
        format!(
            "every pod of deployment/{deployment} is replaced by the previous revision; changes shipped since then are reverted"
        ),
        params(&[("namespace", json!(ns)), ("deployment", json!(deployment))]),
        evidence,
    )
}

pub(crate) fn rollout_restart(
    ns: &str,
    deployment: &str,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    action(
        "kubernetes.rollout_restart",
        format!("deployment/{deployment}"),
        Risk::Medium,
        why,
        format!(
            "pods of deployment/{deployment} are recreated one by one (rolling); in-flight requests on each old pod are drained"
        ),
        params(&[("namespace", json!(ns)), ("deployment", json!(deployment))]),
        evidence,
    )
}

pub(crate) fn set_memory_limit(
    ns: &str,
    deployment: &str,
    container: &str,
    limit: &str,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    action(
        "kubernetes.set_resources",
        format!("deployment/{deployment}"),
        Risk::Medium,
        why,
        format!(
            "triggers a rolling update of deployment/{deployment}; each pod may use up to {limit}, so nodes need that much allocatable memory"
        ),
        params(&[
            ("namespace", json!(ns)),
            ("deployment", json!(deployment)),
            ("container", json!(container)),
            ("memory_limit", json!(limit)),
        ]),
        evidence,
    )
}

pub(crate) fn delete_pod(ns: &str, pod: &str, why: String, evidence: Vec<EvidenceId>) -> Action {
    action(
        "kubernetes.delete_pod",
        format!("pod/{pod}"),
        Risk::Medium,
        why,
        format!("only pod/{pod}; its controller creates a replacement"),
        params(&[("namespace", json!(ns)), ("pod", json!(pod))]),
        evidence,
    )
}

pub(crate) fn cordon(node: &str, why: String, evidence: Vec<EvidenceId>) -> Action {
    action(
        "kubernetes.cordon",
        format!("node/{node}"),
        Risk::High,
        why,
        format!("no new pods are scheduled on node/{node}; the remaining nodes take the load"),
        params(&[("node", json!(node))]),
        evidence,
    )
}

pub(crate) fn drain(node: &str, why: String, evidence: Vec<EvidenceId>) -> Action {
    action(
        "kubernetes.drain",
        format!("node/{node}"),
        Risk::High,
        why,
        format!(
            "every pod on node/{node} is evicted and rescheduled elsewhere (emptyDir data is lost)"
        ),
        params(&[("node", json!(node))]),
        evidence,
    )
}

pub(crate) fn scale(
    ns: &str,
    deployment: &str,
    replicas: u32,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    action(
        "kubernetes.scale",
        format!("deployment/{deployment}"),
        Risk::Medium,
        why,
        format!("deployment/{deployment} runs {replicas} replicas"),
        params(&[
            ("namespace", json!(ns)),
            ("deployment", json!(deployment)),
            ("replicas", json!(replicas)),
        ]),
        evidence,
    )
}

/// How long a silence an analyzer proposes lasts: long enough to tune the rule, short enough
/// that a real recurrence pages again the same shift.
const SILENCE_MINUTES: u32 = 120;

/// Silencing a firing alert hides a page from everyone on call: at least medium risk (the
/// catalog's floor), with a rationale the caller computed from the evidence it cites.
pub(crate) fn silence(
    alertname: &str,
    matchers: &BTreeMap<String, String>,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    action(
        "alertmanager.silence",
        format!("alert/{alertname}"),
        Risk::Medium,
        why,
        format!(
            "notifications for {alertname} with these labels are muted for {SILENCE_MINUTES} minutes; other alerts are unaffected"
        ),
        params(&[
            ("matchers", json!(matchers)),
            ("duration_minutes", json!(SILENCE_MINUTES)),
        ]),
        evidence,
    )
}

/// `postgres.cancel_backend` / `postgres.terminate_backend` for one backend, showing its
/// application, state and statement in the operation text.
pub(crate) fn pg_signal(
    terminate: bool,
    backend: &crate::model::PgBackend,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    let (kind, risk, blast) = if terminate {
        (
            "postgres.terminate_backend",
            Risk::High,
            format!(
                "backend {} ({}) is disconnected and its open transaction rolls back: whatever it wrote in that transaction is lost; the application sees a dropped connection",
                backend.pid, backend.application_name
            ),
        )
    } else {
        (
            "postgres.cancel_backend",
            Risk::Medium,
            format!(
                "the statement running in backend {} ({}) fails with \"canceling statement due to user request\"; the session stays",
                backend.pid, backend.application_name
            ),
        )
    };
    action(
        kind,
        format!("backend/{}", backend.pid),
        risk,
        why,
        blast,
        params(&[
            ("pid", json!(backend.pid)),
            ("application_name", json!(backend.application_name)),
            ("state", json!(backend.state)),
            ("query", json!(backend.query)),
        ]),
        evidence,
    )
}
