//! HorizontalPodAutoscalers, joined to the workloads they scale: bounds, where each stands and
//! what its conditions say (unable to read its metric, held at its maximum).

use crate::model::{AutoscalerFacts, DeploymentFacts};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use std::collections::HashMap;

/// Attach each autoscaler to the Deployment it targets (same namespace and name), in one pass
/// over each list.
pub fn attach(deployments: &mut [DeploymentFacts], autoscalers: &[HorizontalPodAutoscaler]) {
    let mut by_target: HashMap<(&str, &str), AutoscalerFacts> = HashMap::new();
    for h in autoscalers {
        let Some(spec) = h.spec.as_ref() else {
            continue;
        };
        if spec.scale_target_ref.kind != "Deployment" {
            continue;
        }
        let ns = h.metadata.namespace.as_deref().unwrap_or_default();
        by_target.insert((ns, spec.scale_target_ref.name.as_str()), facts(h));
    }
    for d in deployments.iter_mut() {
        if let Some(a) = by_target.remove(&(d.namespace.as_str(), d.name.as_str())) {
            d.autoscaler = Some(a);
        }
    }
}

fn facts(h: &HorizontalPodAutoscaler) -> AutoscalerFacts {
    let count = |n: Option<i32>| n.and_then(|n| u32::try_from(n).ok()).unwrap_or_default();
    let status = h.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_ref());
    AutoscalerFacts {
        name: h.metadata.name.clone().unwrap_or_default(),
        min_replicas: count(h.spec.as_ref().and_then(|s| s.min_replicas)).max(1),
        max_replicas: count(h.spec.as_ref().map(|s| s.max_replicas)),
        current_replicas: count(status.and_then(|s| s.current_replicas)),
        desired_replicas: count(status.map(|s| s.desired_replicas)),
        conditions: conditions
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c.type_.clone(),
                    (
                        c.status.clone(),
                        c.reason.clone().unwrap_or_default(),
                        c.message.clone().unwrap_or_default(),
                    ),
                )
            })
            .collect(),
        since: conditions
            .into_iter()
            .flatten()
            .filter(|c| {
                (c.type_ == "ScalingActive" && c.status == "False")
                    || (c.type_ == "ScalingLimited" && c.status == "True")
            })
            .filter_map(|c| {
                c.last_transition_time
                    .as_ref()
                    .and_then(super::kubernetes::time)
            })
            .min(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_autoscaler_is_attached_to_the_deployment_it_scales() {
        let hpas: Vec<HorizontalPodAutoscaler> = serde_json::from_value(json!([
            {"metadata": {"name": "web", "namespace": "shop"},
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                      "minReplicas": 2, "maxReplicas": 5},
             "status": {"currentReplicas": 2, "desiredReplicas": 2, "conditions": [
                {"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric",
                 "message": "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container web of Pod web-1",
                 "lastTransitionTime": "2026-01-01T10:00:00Z"}]}}
        ]))
        .unwrap_or_else(|e| unreachable!("{e}"));
        let mut deps = vec![
            DeploymentFacts {
                name: "web".into(),
                namespace: "shop".into(),
                ..DeploymentFacts::default()
            },
            DeploymentFacts {
                name: "web".into(),
                namespace: "other".into(),
                ..DeploymentFacts::default()
            },
        ];
        attach(&mut deps, &hpas);
        let a = deps[0].autoscaler.clone().unwrap_or_default();
        assert_eq!((a.min_replicas, a.max_replicas), (2, 5));
        assert_eq!(
            a.conditions.get("ScalingActive").map(|c| c.1.as_str()),
            Some("FailedGetResourceMetric")
        );
        assert!(a.since.is_some());
        assert!(deps[1].autoscaler.is_none());
    }
}
