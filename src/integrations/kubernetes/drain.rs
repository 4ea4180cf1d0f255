//! What a drain did: which pods it evicted, which it left and why (DaemonSet, mirror or bare pods),
//! and how an eviction's refusal reads.

use super::*;

/// What a drain did to each pod on the node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrainReport {
    pub node: String,
    /// `namespace/name` of each pod evicted (or already gone).
    pub evicted: Vec<String>,
    /// Pods a drain leaves in place on purpose (DaemonSet-managed, mirror pods), with why.
    pub skipped: Vec<(String, String)>,
    /// Pods a PodDisruptionBudget kept from eviction for now (HTTP 429), with the budget's message.
    pub blocked: Vec<(String, String)>,
    /// Pods that could not be evicted for any other reason, with the reason.
    pub failed: Vec<(String, String)>,
}

/// Why `kubectl drain --ignore-daemonsets` leaves a pod on the node, or `None` when it is evicted.
/// Pods no controller would recreate are refused, as kubectl does without `--force`, unless finished.
pub(super) fn drain_exemption(pod: &Pod) -> Option<(bool, String)> {
    let meta = &pod.metadata;
    if meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
    {
        return Some((true, "mirror pod (managed by the kubelet)".into()));
    }
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .or_else(|| meta.owner_references.iter().flatten().next());
    match controller {
        Some(o) if o.kind == "DaemonSet" => {
            Some((true, format!("managed by DaemonSet/{}", o.name)))
        }
        Some(_) => None,
        None => {
            let finished = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|p| p == "Succeeded" || p == "Failed");
            if finished {
                None
            } else {
                Some((
                    false,
                    "not managed by a controller, so nothing would recreate it; delete it by hand if that is intended".into(),
                ))
            }
        }
    }
}

/// The most specific message in an eviction refusal: the budget's own cause when given.
pub(super) fn eviction_message(body: &super::super::transport::Body) -> String {
    if let super::super::transport::Body::Json(v) = body {
        let causes: Vec<&str> = v
            .pointer("/details/causes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("message").and_then(Value::as_str))
            .collect();
        if !causes.is_empty() {
            return causes.join("; ");
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.to_string();
        }
    }
    let text = body.text();
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        "no message".into()
    } else {
        line.chars().take(200).collect()
    }
}

impl DrainReport {
    /// Whether every pod that had to leave the node has left.
    pub fn complete(&self) -> bool {
        self.blocked.is_empty() && self.failed.is_empty()
    }

    /// One line: what was evicted, skipped, blocked and failed.
    pub fn summary(&self) -> String {
        let pairs = |v: &[(String, String)]| {
            v.iter()
                .map(|(p, why)| format!("{p}: {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let mut parts = vec![format!("node/{} cordoned", self.node)];
        parts.push(if self.evicted.is_empty() {
            "no pods evicted".to_string()
        } else {
            format!(
                "{} pod(s) evicted ({})",
                self.evicted.len(),
                self.evicted.join(", ")
            )
        });
        if !self.skipped.is_empty() {
            parts.push(format!(
                "{} skipped ({})",
                self.skipped.len(),
                pairs(&self.skipped)
            ));
        }
        if !self.blocked.is_empty() {
            parts.push(format!(
                "{} blocked by a PodDisruptionBudget ({}); retry once their replacements are ready",
                self.blocked.len(),
                pairs(&self.blocked)
            ));
        }
        if !self.failed.is_empty() {
            parts.push(format!(
                "{} not evicted ({})",
                self.failed.len(),
                pairs(&self.failed)
            ));
        }
        parts.join(", ")
    }
}
