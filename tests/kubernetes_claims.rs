//! The PersistentVolumeClaims a pod mounts are read only for pods that are not running: a Pending
//! pod's claim and the StorageClass it asks for come back with the pod, and a namespace whose pods
//! all run costs no request for them.

use serde_json::{Value, json};
use sitrep::integrations::kubernetes::KubernetesClient;
use sitrep::integrations::{
    Body, BoxFuture, ErrorKind, IntegrationError, Request, Response, Transport,
};
use std::sync::{Arc, Mutex};

/// Answers the pod, claim and StorageClass lists from fixed bodies and keeps every path asked.
struct Api {
    pods: Value,
    /// Whether the claims list answers (a role without the right to list them gets a 403).
    claims: bool,
    asked: Mutex<Vec<String>>,
}

impl Transport for Api {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            if let Ok(mut a) = self.asked.lock() {
                a.push(req.path.clone());
            }
            let body = match req.path.as_str() {
                "/api/v1/namespaces/vault/pods" => self.pods.clone(),
                "/api/v1/namespaces/vault/persistentvolumeclaims" if self.claims => {
                    json!({"kind": "PersistentVolumeClaimList", "items": [
                        {"metadata": {"name": "data-keys-0", "namespace": "vault"},
                         "spec": {"storageClassName": "premium-rwo"}, "status": {"phase": "Pending"}},
                        {"metadata": {"name": "data-keys-1", "namespace": "vault"},
                         "spec": {"storageClassName": "gp3"}, "status": {"phase": "Bound"}},
                        {"metadata": {"name": "data-keys-3", "namespace": "vault"},
                         "spec": {"storageClassName": "gp3", "volumeName": "pvc-0a1b"},
                         "status": {"phase": "Bound"}}
                    ]})
                }
                "/api/v1/persistentvolumes/pvc-0a1b" => json!({
                    "kind": "PersistentVolume", "metadata": {"name": "pvc-0a1b"},
                    "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}
                    ]}]}}}
                }),
                "/apis/storage.k8s.io/v1/storageclasses" => {
                    json!({"kind": "StorageClassList", "items": [
                        {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com"}
                    ]})
                }
                _ => {
                    return Err(req.error(ErrorKind::Status {
                        status: 403,
                        message: "forbidden".into(),
                    }));
                }
            };
            Ok(Response {
                status: 200,
                body: Body::Json(body),
            })
        })
    }

    fn has(&self, integration: &str) -> bool {
        integration == "kubernetes"
    }
}

fn pod(name: &str, phase: &str, claim: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "vault"},
        "spec": {"containers": [{"name": "keys", "image": "vault:1.17"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
        "status": {"phase": phase}
    })
}

fn api(pods: Vec<Value>, claims: bool) -> Arc<Api> {
    Arc::new(Api {
        pods: json!({"kind": "PodList", "metadata": {}, "items": pods}),
        claims,
        asked: Mutex::new(Vec::new()),
    })
}

#[tokio::test]
async fn a_pending_pods_claims_are_read_with_the_class_they_ask_for() {
    let api = api(
        vec![
            pod("keys-0", "Pending", "data-keys-0"),
            pod("keys-1", "Running", "data-keys-1"),
            pod("keys-2", "Pending", "data-keys-2"),
            pod("keys-3", "Pending", "data-keys-3"),
        ],
        true,
    );
    let client = KubernetesClient::new(api.clone(), "vault");
    let pods = client.list_pods("vault", None).await.expect("pods");
    let claims = |name: &str| {
        pods.iter()
            .find(|p| p.name == name)
            .map(|p| p.claims.clone())
            .unwrap_or_default()
    };
    let pending = claims("keys-0");
    assert_eq!(pending.len(), 1);
    assert!(pending[0].read && !pending[0].missing);
    assert_eq!(pending[0].phase, "Pending");
    assert_eq!(pending[0].storage_class.as_deref(), Some("premium-rwo"));
    assert_eq!(pending[0].class_exists, Some(false));
    // A claim its namespace does not list is missing; a running pod's claim is not read.
    assert!(claims("keys-2")[0].missing);
    assert!(!claims("keys-1")[0].read);
    // A held pod's bound volume is read for where it may be used (its zone).
    let bound = claims("keys-3");
    assert_eq!(bound[0].volume.as_deref(), Some("pvc-0a1b"));
    assert_eq!(
        bound[0].volume_affinity,
        vec!["topology.kubernetes.io/zone in (eu-west-1a)".to_string()]
    );
    let asked = api.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(
        asked
            .iter()
            .filter(|p| p.contains("persistentvolumes/"))
            .count(),
        1,
        "{asked:?}"
    );
}

#[tokio::test]
async fn running_pods_cost_no_request_for_their_claims() {
    let api = api(
        vec![
            pod("keys-0", "Running", "data-keys-0"),
            pod("keys-1", "Running", "data-keys-1"),
        ],
        true,
    );
    let client = KubernetesClient::new(api.clone(), "vault");
    let pods = client.list_pods("vault", None).await.expect("pods");
    assert_eq!(pods.len(), 2);
    let asked = api.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(asked, vec!["/api/v1/namespaces/vault/pods".to_string()]);
}

#[tokio::test]
async fn claims_that_cannot_be_read_stay_unread() {
    // The StorageClasses answer, the claims are refused.
    let api = api(vec![pod("keys-0", "Pending", "x")], false);
    let client = KubernetesClient::new(api, "vault");
    let pods = client.list_pods("vault", None).await.expect("pods");
    assert!(
        pods[0].claims.iter().all(|c| !c.read),
        "{:?}",
        pods[0].claims
    );
}
