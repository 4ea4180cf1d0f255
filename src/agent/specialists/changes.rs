//! The changes specialist: rollouts and config writes in the cluster, deployments and merged pulls
//! on GitHub.

use super::{Caller, Scope, rfc3339};
use crate::agent::evidence::Chart;
use crate::agent::tools::{ToolOutput, params, s};
use crate::model::DeploymentFacts;
use crate::reason::Observations;
use chrono::Duration as ChronoDuration;
use std::sync::Mutex;

pub(super) async fn changes(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let k8s = async {
        if let Some(ns) = &scope.namespace
            && c.tools.has("kubernetes")
        {
            // Deployments' history and StatefulSets' and DaemonSets' side by side.
            let (sets, revisions) = futures::join!(
                c.call(
                    "kubernetes.replica_sets",
                    params([("namespace", s(ns))]),
                    &none,
                    obs,
                ),
                c.call(
                    "kubernetes.controller_revisions",
                    params([("namespace", s(ns))]),
                    &none,
                    obs,
                ),
            );
            // When the workload reads ConfigMaps or Secrets, when each was last written.
            let refs: Vec<String> = [sets, revisions]
                .iter()
                .filter_map(|got| match got {
                    Some((ToolOutput::Deployments(rs), _)) => Some(rs),
                    _ => None,
                })
                .flatten()
                .filter(|r| scope.workload.as_ref().is_none_or(|w| of_workload(r, w)))
                .flat_map(|r| r.config_refs.iter().cloned())
                .collect();
            let wants = |kind: &str| refs.iter().any(|r| r.starts_with(&format!("{kind}/")));
            futures::join!(
                async {
                    if wants("configmap") {
                        c.call(
                            "kubernetes.config_maps",
                            params([("namespace", s(ns))]),
                            &none,
                            obs,
                        )
                        .await;
                    }
                },
                async {
                    if wants("secret") {
                        c.call(
                            "kubernetes.secrets",
                            params([("namespace", s(ns))]),
                            &none,
                            obs,
                        )
                        .await;
                    }
                },
            );
        }
    };
    let gh = async {
        // Without a repo in the alert, the world's configured repository is used.
        if !c.tools.has("github") {
            return;
        }
        let window = params([
            ("repo", scope.repo.clone().and_then(s)),
            ("since", rfc3339(scope.onset - ChronoDuration::hours(24))),
            ("until", rfc3339(scope.now)),
        ]);
        futures::join!(
            c.call("github.deployments", window.clone(), &none, obs),
            c.call("github.merged_pulls", window.clone(), &none, obs),
        );
    };
    futures::join!(k8s, gh);
}

/// Whether a ReplicaSet or ControllerRevision belongs to `workload`: by the name its controller
/// gives it (`<workload>-<hash>`), its `app` label, or its controlling owner.
fn of_workload(r: &DeploymentFacts, workload: &str) -> bool {
    r.name.starts_with(&format!("{workload}-"))
        || r.labels.get("app").is_some_and(|a| a == workload)
        || r.owner
            .as_deref()
            .and_then(|o| o.split_once('/'))
            .is_some_and(|(_, name)| name == workload)
}
