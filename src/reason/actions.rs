//! Builders for the remediation actions analyzers suggest, with the exact operation each performs.

use crate::model::{Action, EvidenceId, Risk};
use serde_json::json;
use std::collections::BTreeMap;

// One flat constructor keeps each builder below a readable one-liner per field.
#[allow(clippy::too_many_arguments)]
fn action(
    kind: &str,
    target: String,
    risk: Risk,
    rationale: String,
    operation: String,
    blast_radius: String,
    params: BTreeMap<String, serde_json::Value>,
    evidence: Vec<EvidenceId>,
) -> Action {
    Action {
        id: String::new(),
        kind: kind.to_string(),
        target,
        params,
        risk,
        rationale,
        operation,
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
            "PATCH /apis/apps/v1/namespaces/{ns}/deployments/{deployment} (pod template of the previous revision); kubectl -n {ns} rollout undo deployment/{deployment}"
        ),
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
            "PATCH /apis/apps/v1/namespaces/{ns}/deployments/{deployment} (spec.template.metadata.annotations kubectl.kubernetes.io/restartedAt); kubectl -n {ns} rollout restart deployment/{deployment}"
        ),
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
            "PATCH /apis/apps/v1/namespaces/{ns}/deployments/{deployment} (containers[{container}].resources.limits.memory={limit}); kubectl -n {ns} set resources deployment/{deployment} -c {container} --limits=memory={limit}"
        ),
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
        format!("DELETE /api/v1/namespaces/{ns}/pods/{pod}; kubectl -n {ns} delete pod {pod}"),
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
        format!("PATCH /api/v1/nodes/{node} (spec.unschedulable=true); kubectl cordon {node}"),
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
            "POST /api/v1/namespaces/*/pods/*/eviction for every pod on the node; kubectl drain {node} --ignore-daemonsets --delete-emptydir-data"
        ),
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
        format!(
            "PATCH /apis/apps/v1/namespaces/{ns}/deployments/{deployment}/scale (spec.replicas={replicas}); kubectl -n {ns} scale deployment/{deployment} --replicas={replicas}"
        ),
        format!("deployment/{deployment} runs {replicas} replicas"),
        params(&[
            ("namespace", json!(ns)),
            ("deployment", json!(deployment)),
            ("replicas", json!(replicas)),
        ]),
        evidence,
    )
}

pub(crate) fn silence(
    alertname: &str,
    matchers: &BTreeMap<String, String>,
    why: String,
    evidence: Vec<EvidenceId>,
) -> Action {
    let m: Vec<String> = matchers
        .iter()
        .map(|(k, v)| format!("{k}=\"{v}\""))
        .collect();
    action(
        "alertmanager.silence",
        format!("alert/{alertname}"),
        Risk::Low,
        why,
        format!(
            "POST /api/v2/silences {{matchers: {}, duration: 2h}}; amtool silence add {} --duration=2h",
            m.join(", "),
            m.join(" ")
        ),
        format!(
            "notifications for {alertname} with these labels are muted for 2h; other alerts are unaffected"
        ),
        params(&[("matchers", json!(matchers)), ("duration", json!("2h"))]),
        evidence,
    )
}
