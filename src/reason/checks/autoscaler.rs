//! The autoscaler of the subject's workload, read from the HorizontalPodAutoscaler itself: one
//! that cannot read the metric it scales on stops scaling, and one held at its maximum cannot add
//! the capacity the load asks for.

use super::{Basis, Decl, Role};
use crate::model::Category;
use crate::reason::{Ctx, Signal, rollout};

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "autoscaler_blind",
        title: "autoscaler cannot read its metric",
        concern: "autoscaler",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "autoscaler_limited",
        title: "autoscaler held at its maximum",
        concern: "autoscaler",
        role: Role::Failure,
        reads: &[],
    },
];

/// Check: can the subject's autoscaler scale? Failing when its `ScalingActive` condition is False
/// (it cannot compute a replica count), or when `ScalingLimited` holds it at `maxReplicas` while
/// it wants more.
pub(crate) fn autoscaler(ctx: &Ctx) -> Vec<Signal> {
    let mut out = Vec::new();
    for d in rollout::deployments_in_scope(ctx) {
        let Some(a) = &d.autoscaler else {
            continue;
        };
        let evidence = ctx.ev(&["kubernetes/deployments"]);
        let object = format!("deployment/{}", d.name);
        let condition = |t: &str| a.conditions.get(t);
        if let Some((status, reason, message)) = condition("ScalingActive")
            && status == "False"
        {
            let lower = message.to_lowercase();
            // A container without the resource request its target is a percentage of is the
            // workload's own spec; a metrics API that does not answer is a dependency.
            let (category, why) = if lower.contains("missing request for") {
                (
                    Category::ConfigurationError,
                    "a container has no request for the resource its target is a percentage of, so no utilisation can be computed",
                )
            } else {
                (
                    Category::DependencyFailure,
                    "the metrics API it reads did not answer",
                )
            };
            let summary = format!(
                "HorizontalPodAutoscaler {} cannot scale deployment {}: ScalingActive=False ({reason}): \"{message}\"",
                a.name, d.name
            );
            out.push(Signal {
                analyzer: "autoscaler_blind",
                summary: summary.clone(),
                detail: format!(
                    "{} of {}..{} replicas; {why}",
                    a.current_replicas, a.min_replicas, a.max_replicas
                ),
                category,
                basis: Basis::Stated,
                since: a.since,
                evidence: evidence.clone(),
                cause: Some(format!(
                    "{summary}; {why}, so it stays at {} replicas whatever the load",
                    a.current_replicas
                )),
                objects: vec![object.clone()],
                ..Signal::default()
            });
            continue;
        }
        if let Some((status, reason, message)) = condition("ScalingLimited")
            && status == "True"
            && a.max_replicas > 0
            && a.current_replicas >= a.max_replicas
            && reason == "TooManyReplicas"
        {
            let summary = format!(
                "HorizontalPodAutoscaler {} holds deployment {} at its maximum of {} replicas: ScalingLimited ({reason}): \"{message}\"",
                a.name, d.name, a.max_replicas
            );
            out.push(Signal {
                analyzer: "autoscaler_limited",
                summary: summary.clone(),
                category: Category::ResourceExhaustion,
                // A ceiling is capacity, not a fault: a cause only where the load outgrows it.
                basis: Basis::Observed,
                links: 1,
                since: a.since,
                evidence,
                cause: Some(format!(
                    "Capacity ceiling: {summary}, so it cannot add pods; load beyond what {} replicas serve saturates them (raise maxReplicas or the per-pod capacity)",
                    a.max_replicas
                )),
                objects: vec![object],
                ..Signal::default()
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Alert, AutoscalerFacts, DeploymentFacts};
    use crate::reason::{Observations, analyze};
    use std::collections::BTreeMap;

    fn obs(conditions: &[(&str, &str, &str, &str)], current: u32) -> Observations {
        Observations {
            alert: Some(Alert {
                labels: BTreeMap::from([
                    ("alertname".to_string(), "HighLatency".to_string()),
                    ("namespace".to_string(), "shop".to_string()),
                    ("deployment".to_string(), "web".to_string()),
                ]),
                ..Alert::default()
            }),
            deployments: vec![DeploymentFacts {
                name: "web".into(),
                namespace: "shop".into(),
                replicas: current,
                ready_replicas: current,
                autoscaler: Some(AutoscalerFacts {
                    name: "web".into(),
                    min_replicas: 2,
                    max_replicas: 6,
                    current_replicas: current,
                    desired_replicas: current,
                    conditions: conditions
                        .iter()
                        .map(|(t, s, r, m)| {
                            (t.to_string(), (s.to_string(), r.to_string(), m.to_string()))
                        })
                        .collect(),
                    since: None,
                }),
                ..DeploymentFacts::default()
            }],
            evidence: BTreeMap::from([(
                "kubernetes/deployments".to_string(),
                vec!["ev-1".to_string()],
            )]),
            ..Observations::default()
        }
    }

    #[test]
    fn an_autoscaler_that_cannot_read_its_metric_is_named_with_its_reason() {
        let o = obs(
            &[(
                "ScalingActive",
                "False",
                "FailedGetResourceMetric",
                "failed to get cpu utilization: missing request for cpu in container web",
            )],
            2,
        );
        let sigs = autoscaler(&Ctx::new(&o));
        assert_eq!(sigs.len(), 1, "{sigs:?}");
        assert_eq!(sigs[0].category, Category::ConfigurationError);
        let a = analyze(&o);
        assert!(
            a.root_cause.contains("missing request for cpu"),
            "{}",
            a.root_cause
        );
        // Able to scale and below its maximum: nothing to say.
        let fine = obs(&[("ScalingActive", "True", "ValidMetricFound", "ok")], 3);
        assert!(autoscaler(&Ctx::new(&fine)).is_empty());
        // At its maximum and wanting more.
        let held = obs(
            &[(
                "ScalingLimited",
                "True",
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )],
            6,
        );
        let sigs = autoscaler(&Ctx::new(&held));
        assert_eq!(sigs[0].category, Category::ResourceExhaustion, "{sigs:?}");
    }
}
