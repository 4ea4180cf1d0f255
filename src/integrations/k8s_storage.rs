//! The PersistentVolumeClaims a pod mounts and the StorageClasses they ask for: read only for
//! pods that are not running, whose claims may be what holds them (a claim that does not exist,
//! one Pending on a StorageClass the cluster lacks, one Lost), so a healthy cluster costs no
//! request.

use super::error::{ErrorKind, IntegrationError};
use super::kubernetes::{KubernetesClient, check_name, one};
use super::transport::Request;
use crate::model::{ClaimFacts, PodFacts};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, PodSpec};
use k8s_openapi::api::storage::v1::StorageClass;
use std::collections::{BTreeMap, BTreeSet};

/// The claims a pod's volumes name, not yet read.
pub(super) fn claim_names(spec: Option<&PodSpec>) -> Vec<ClaimFacts> {
    spec.and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| ClaimFacts {
            name: c.claim_name.clone(),
            ..ClaimFacts::default()
        })
        .collect()
}

/// Whether a pod's claims may be what holds it: it mounts one and is not running.
fn held(p: &PodFacts) -> bool {
    !p.claims.is_empty() && !matches!(p.phase.as_str(), "Running" | "Succeeded")
}

impl KubernetesClient {
    /// Fill in the claims of the pods that are held, one list of claims per namespace and one of
    /// StorageClasses; a list that cannot be read leaves those claims unread.
    pub(super) async fn read_claims(&self, pods: &mut [PodFacts]) {
        let namespaces: BTreeSet<String> = pods
            .iter()
            .filter(|p| held(p))
            .map(|p| p.namespace.clone())
            .collect();
        if namespaces.is_empty() {
            return;
        }
        let classes: Option<BTreeSet<String>> = self
            .list::<StorageClass>(
                None,
                "/apis/storage.k8s.io/v1",
                "storageclasses",
                "StorageClass",
            )
            .await
            .ok()
            .map(|v| v.into_iter().filter_map(|c| c.metadata.name).collect());
        let mut claims: BTreeMap<String, Vec<PersistentVolumeClaim>> = BTreeMap::new();
        for ns in namespaces {
            let listed = self
                .list::<PersistentVolumeClaim>(
                    Some(ns.as_str()),
                    "/api/v1",
                    "persistentvolumeclaims",
                    "PersistentVolumeClaim",
                )
                .await;
            if let Ok(v) = listed {
                claims.insert(ns, v);
            }
        }
        // Each bound volume once, however many pods share it.
        let mut volumes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in pods.iter_mut().filter(|p| held(p)) {
            let Some(listed) = claims.get(&p.namespace) else {
                continue;
            };
            for c in &mut p.claims {
                let found = listed
                    .iter()
                    .find(|pvc| pvc.metadata.name.as_deref() == Some(c.name.as_str()));
                *c = claim_facts(&c.name, found, classes.as_ref());
                let Some(volume) = c.volume.clone() else {
                    continue;
                };
                if !volumes.contains_key(&volume) {
                    let affinity = self.volume_affinity(&volume).await.unwrap_or_default();
                    volumes.insert(volume.clone(), affinity);
                }
                c.volume_affinity = volumes.get(&volume).cloned().unwrap_or_default();
            }
        }
    }

    /// A PersistentVolume's required node affinity, one `key in (values)` a term: where a pod
    /// that mounts it may run. A held pod's bound volume pinned where no node can take it is
    /// what the scheduler calls a "volume node affinity conflict".
    async fn volume_affinity(&self, name: &str) -> Result<Vec<String>, IntegrationError> {
        let req = Request::get(
            &self.integration,
            format!("/api/v1/persistentvolumes/{name}"),
        );
        check_name(&req, "persistentvolume", name)?;
        let (req, v) = self.get_json(req).await?;
        let pv: PersistentVolume =
            one(v, "PersistentVolume").map_err(|m| req.error(ErrorKind::Decode(m)))?;
        let terms = pv
            .spec
            .and_then(|s| s.node_affinity)
            .and_then(|a| a.required)
            .map(|r| r.node_selector_terms)
            .unwrap_or_default();
        Ok(terms
            .iter()
            .flat_map(|t| t.match_expressions.iter().flatten())
            .map(|e| {
                let values = e.values.clone().unwrap_or_default().join(", ");
                format!("{} {} ({values})", e.key, e.operator.to_lowercase())
            })
            .collect())
    }
}

fn claim_facts(
    name: &str,
    pvc: Option<&PersistentVolumeClaim>,
    classes: Option<&BTreeSet<String>>,
) -> ClaimFacts {
    let Some(pvc) = pvc else {
        return ClaimFacts {
            name: name.to_string(),
            read: true,
            missing: true,
            ..ClaimFacts::default()
        };
    };
    let storage_class = pvc
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.clone())
        .filter(|c| !c.is_empty());
    ClaimFacts {
        name: name.to_string(),
        read: true,
        missing: false,
        phase: pvc
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
        volume: pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .filter(|v| !v.is_empty()),
        volume_affinity: Vec::new(),
        class_exists: match (&storage_class, classes) {
            (Some(c), Some(all)) => Some(all.contains(c)),
            _ => None,
        },
        storage_class,
    }
}
