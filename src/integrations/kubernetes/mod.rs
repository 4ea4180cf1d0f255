//! Kubernetes client: REST paths through the transport, parsed with k8s-openapi types into model facts.
//!
//! Requests go through [`Transport`] rather than `kube::Api` so that recording and replay see exactly the
//! paths a cluster serves; live, the transport hands them to a `kube::Client`, which brings kubeconfig,
//! contexts, in-cluster config and exec auth plugins.

use super::error::{ErrorKind, IntegrationError};
use super::transport::{Request, RequestBody, Transport};
use crate::model::{
    Change, ChangeKind, ContainerFacts, DeploymentFacts, K8sEventFacts, LogLine, NodeFacts,
    PodFacts, WorkloadFacts,
};
use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Container, Event, Node, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

mod drain;
mod facts;

pub use drain::*;
pub use facts::*;

const NAME: &str = "kubernetes";

/// The integration name requests to a cluster carry: `kubernetes` for the default one,
/// `kubernetes@<cluster>` for a named one (so recordings and replays keep clusters apart).
pub fn integration_of(cluster: Option<&str>) -> String {
    match cluster.filter(|c| !c.is_empty()) {
        Some(c) => format!("{NAME}@{c}"),
        None => NAME.to_string(),
    }
}

const REVISION: &str = "deployment.kubernetes.io/revision";

/// The API server's metadata-only list representation (what `kubectl get -o name` asks for). No
/// fallback to full objects: a server that cannot answer it fails the read rather than send values.
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

#[derive(Clone)]
pub struct KubernetesClient {
    transport: Arc<dyn Transport>,
    default_ns: String,
    /// The integration its requests name: `kubernetes`, or `kubernetes@<cluster>` when several
    /// clusters are configured.
    pub(super) integration: String,
}

/// Kubernetes names are DNS labels/subdomains; checking them keeps a bad parameter from becoming a
/// different path.
pub(super) fn check_name(req: &Request, what: &str, name: &str) -> Result<(), IntegrationError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(req.error(ErrorKind::Invalid(format!("bad {what} name {name:?}"))))
    }
}

pub(super) fn time(t: &Time) -> Option<DateTime<Utc>> {
    let nanos = u32::try_from(t.0.subsec_nanosecond()).unwrap_or(0);
    Utc.timestamp_opt(t.0.as_second(), nanos).single()
}

/// Parses `items` of a `*List` one by one, so one odd item names its index instead of failing opaquely.
fn items<T: DeserializeOwned>(v: Value, kind: &str) -> Result<Vec<T>, String> {
    let Value::Object(mut map) = v else {
        return Err(format!("expected a {kind}List object"));
    };
    let items = match map.remove("items") {
        Some(Value::Array(items)) => items,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err("`items` is not an array".into()),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| serde_json::from_value(item).map_err(|e| format!("{kind} item {i}: {e}")))
        .collect()
}

pub(super) fn one<T: DeserializeOwned>(v: Value, kind: &str) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("not a {kind}: {e}"))
}

/// New resource values for one container of a deployment's pod template, as
/// `kubectl set resources -c CONTAINER --limits=.. --requests=..` takes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceChange {
    /// The container; may be left out when the pod template has exactly one.
    pub container: Option<String>,
    /// Resource name (`memory`, `cpu`, ...) to quantity (`1Gi`, `500m`).
    pub limits: BTreeMap<String, String>,
    pub requests: BTreeMap<String, String>,
}

/// A Kubernetes resource quantity (`512Mi`, `1.5`, `250m`, `1e3`), checked before it reaches the API
/// server so a typo is reported against the parameter rather than as a 422.
pub fn is_quantity(q: &str) -> bool {
    let q = q.strip_prefix(['+', '-']).unwrap_or(q);
    let digits_end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number != "."
        && number.matches('.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = matches!(
        suffix,
        "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_digit()));
    number_ok && suffix_ok
}

/// Resource names are `cpu`, `memory`, `ephemeral-storage`, `hugepages-2Mi` or `vendor.io/name`.
fn is_resource_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'))
}

/// Items asked for per page of a list.
pub const PAGE_LIMIT: usize = 500;

/// Pages read of one list at most (5 million items).
const MAX_PAGES: usize = 10_000;

impl KubernetesClient {
    pub fn new(transport: Arc<dyn Transport>, default_ns: impl Into<String>) -> Self {
        KubernetesClient {
            transport,
            default_ns: default_ns.into(),
            integration: NAME.to_string(),
        }
    }

    /// The same client, asking the cluster of that name (`kubernetes@<cluster>`); `None` is the
    /// default cluster.
    pub fn in_cluster(&self, cluster: Option<&str>) -> KubernetesClient {
        KubernetesClient {
            integration: integration_of(cluster),
            ..self.clone()
        }
    }

    pub fn default_namespace(&self) -> &str {
        &self.default_ns
    }

    pub(super) async fn get_json(
        &self,
        req: Request,
    ) -> Result<(Request, Value), IntegrationError> {
        let v = self.transport.send(&req).await?.json(&req)?;
        Ok((req, v))
    }

    /// Every item of a list, read in pages of [`PAGE_LIMIT`] (`limit`, then `continue` with the
    /// token each page ends with) and turned into `U` page by page, so a namespace of thousands
    /// of pods never sits in memory as one JSON document. A server or recording that does not
    /// page answers everything at once, with no token, and that is the last page.
    async fn list_paged<T: DeserializeOwned, U>(
        &self,
        req: Request,
        kind: &str,
        mut each: impl FnMut(T) -> Option<U>,
    ) -> Result<(Request, Vec<U>), IntegrationError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for page in 0.. {
            let mut paged = req.clone().query("limit", PAGE_LIMIT.to_string());
            if let Some(t) = &token {
                paged = paged.query("continue", t.clone());
            }
            let (paged, v) = self.get_json(paged).await?;
            let next = v
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let list: Vec<T> = items(v, kind).map_err(|m| {
                paged.error(ErrorKind::Decode(if page == 0 {
                    m
                } else {
                    format!("page {}: {m}", page + 1)
                }))
            })?;
            out.extend(list.into_iter().filter_map(&mut each));
            match next {
                // A server that hands back the token it was given would never end.
                Some(t) if token.as_deref() != Some(t.as_str()) && page + 1 < MAX_PAGES => {
                    token = Some(t)
                }
                Some(_) => {
                    return Err(paged.error(ErrorKind::Decode(format!(
                        "the {kind} list did not end after {} pages",
                        page + 1
                    ))));
                }
                None => return Ok((paged, out)),
            }
        }
        unreachable!("the page loop returns")
    }

    fn scoped(ns: Option<&str>, group: &str, resource: &str) -> String {
        match ns {
            Some(ns) => format!("{group}/namespaces/{ns}/{resource}"),
            None => format!("{group}/{resource}"),
        }
    }

    fn check_ns(req: &Request, ns: Option<&str>) -> Result<(), IntegrationError> {
        ns.map_or(Ok(()), |ns| check_name(req, "namespace", ns))
    }

    /// Pods in `ns` (all namespaces when `None`), optionally by label selector.
    pub async fn list_pods<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
        label_selector: Option<&str>,
    ) -> Result<Vec<PodFacts>, IntegrationError> {
        self.list_pods_on(ns, label_selector, None).await
    }

    /// Pods in `ns` (all namespaces when `None`), optionally by label selector and only those
    /// scheduled on `node` (`fieldSelector=spec.nodeName=NODE`). Both are checked again here,
    /// so a recording made without them answers what the server would have.
    pub async fn list_pods_on<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
        label_selector: Option<&str>,
        node: Option<&str>,
    ) -> Result<Vec<PodFacts>, IntegrationError> {
        let ns = ns.into();
        let label_selector = label_selector.filter(|s| !s.is_empty());
        let node = node.filter(|n| !n.is_empty());
        let req = Request::get(&self.integration, Self::scoped(ns, "/api/v1", "pods"))
            .query_opt("labelSelector", label_selector)
            .query_opt("fieldSelector", node.map(|n| format!("spec.nodeName={n}")));
        Self::check_ns(&req, ns)?;
        if let Some(n) = node {
            check_name(&req, "node", n)?;
        }
        let (_, pods) = self
            .list_paged(req, "Pod", |pod: Pod| {
                let p = pod_facts(&pod);
                (label_selector.is_none_or(|s| selector_matches(s, &p.labels))
                    && node.is_none_or(|n| p.node.as_deref() == Some(n))
                    && ns.is_none_or(|ns| p.namespace.is_empty() || p.namespace == ns))
                .then_some(p)
            })
            .await?;
        let mut pods = pods;
        self.read_claims(&mut pods).await;
        Ok(pods)
    }

    pub async fn get_pod(&self, ns: &str, name: &str) -> Result<PodFacts, IntegrationError> {
        let req = Request::get(
            &self.integration,
            format!("/api/v1/namespaces/{ns}/pods/{name}"),
        );
        check_name(&req, "namespace", ns)?;
        check_name(&req, "pod", name)?;
        let (req, v) = self.get_json(req).await?;
        let pod: Pod = one(v, "Pod").map_err(|m| req.error(ErrorKind::Decode(m)))?;
        Ok(pod_facts(&pod))
    }

    /// Log lines of a pod's container (`previous`: the last terminated instance), the last `tail` lines.
    pub async fn pod_logs(
        &self,
        ns: &str,
        name: &str,
        container: Option<&str>,
        previous: bool,
        tail: Option<u32>,
    ) -> Result<Vec<LogLine>, IntegrationError> {
        let mut req = Request::get(
            &self.integration,
            format!("/api/v1/namespaces/{ns}/pods/{name}/log"),
        )
        .query_opt("container", container)
        .query_opt("tailLines", tail.map(|t| t.to_string()))
        .query("timestamps", "true");
        if previous {
            req = req.query("previous", "true");
        }
        check_name(&req, "namespace", ns)?;
        check_name(&req, "pod", name)?;
        if let Some(c) = container {
            check_name(&req, "container", c)?;
        }
        let text = self.transport.send(&req).await?.text(&req)?;
        let mut labels = BTreeMap::from([
            ("namespace".to_string(), ns.to_string()),
            ("pod".to_string(), name.to_string()),
        ]);
        if let Some(c) = container {
            labels.insert("container".into(), c.to_string());
        }
        let mut lines = parse_log_text(&text, &labels);
        if let Some(t) = tail {
            // A recorded log may be longer than this request's tail.
            let skip = lines.len().saturating_sub(t as usize);
            lines.drain(..skip);
        }
        Ok(lines)
    }

    /// Events in `ns` (all when `None`), optionally only those about the object named `involved`
    /// and only those of one `event_type` (`Warning`, `Normal`), asked of the server as a field
    /// selector and checked again here, so a recording made without the selector answers the same.
    pub async fn events<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
        involved: Option<&str>,
        event_type: Option<&str>,
    ) -> Result<Vec<K8sEventFacts>, IntegrationError> {
        let ns = ns.into();
        let involved = involved.filter(|n| !n.is_empty());
        let event_type = event_type.filter(|t| !t.is_empty());
        let fields: Vec<String> = involved
            .map(|n| format!("involvedObject.name={n}"))
            .into_iter()
            .chain(event_type.map(|t| format!("type={t}")))
            .collect();
        let req = Request::get(&self.integration, Self::scoped(ns, "/api/v1", "events")).query_opt(
            "fieldSelector",
            (!fields.is_empty()).then(|| fields.join(",")),
        );
        Self::check_ns(&req, ns)?;
        if let Some(n) = involved {
            check_name(&req, "involved object", n)?;
        }
        if let Some(t) = event_type
            && !t.bytes().all(|b| b.is_ascii_alphabetic())
        {
            return Err(req.error(ErrorKind::Invalid(format!(
                "event type {t:?} is not a word (Warning, Normal)"
            ))));
        }
        let (_, mut out) = self
            .list_paged(req, "Event", |e: Event| {
                if involved.is_some_and(|n| e.involved_object.name.as_deref() != Some(n)) {
                    return None;
                }
                let e = event_facts(&e);
                if event_type.is_some_and(|t| !e.event_type.eq_ignore_ascii_case(t)) {
                    return None;
                }
                ns.is_none_or(|ns| e.namespace.is_empty() || e.namespace == ns)
                    .then_some(e)
            })
            .await?;
        out.sort_by_key(|e| e.last_seen);
        Ok(out)
    }

    pub async fn deployments<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<DeploymentFacts>, IntegrationError> {
        let ns = ns.into();
        let req = Request::get(
            &self.integration,
            Self::scoped(ns, "/apis/apps/v1", "deployments"),
        );
        Self::check_ns(&req, ns)?;
        let (_, mut list) = self
            .list_paged(req, "Deployment", |d: Deployment| {
                Some(deployment_facts(&d))
            })
            .await?;
        // The autoscalers that scale them; a cluster (or a recording) without any still gives
        // the Deployments.
        if let Ok(hpas) = self
            .list::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(
                ns,
                "/apis/autoscaling/v2",
                "horizontalpodautoscalers",
                "HorizontalPodAutoscaler",
            )
            .await
        {
            super::k8s_autoscalers::attach(&mut list, &hpas);
        }
        Ok(list)
    }

    pub async fn get_deployment(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<DeploymentFacts, IntegrationError> {
        let (_, d) = self.deployment_raw(ns, name).await?;
        Ok(deployment_facts(&d))
    }

    async fn deployment_raw(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<(Request, Deployment), IntegrationError> {
        let req = Request::get(
            &self.integration,
            format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
        );
        check_name(&req, "namespace", ns)?;
        check_name(&req, "deployment", name)?;
        let (req, v) = self.get_json(req).await?;
        let d: Deployment = one(v, "Deployment").map_err(|m| req.error(ErrorKind::Decode(m)))?;
        Ok((req, d))
    }

    pub async fn replica_sets<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<DeploymentFacts>, IntegrationError> {
        let ns = ns.into();
        let (_, list) = self.replica_sets_raw(ns).await?;
        Ok(list.iter().map(replica_set_facts).collect())
    }

    async fn replica_sets_raw(
        &self,
        ns: Option<&str>,
    ) -> Result<(Request, Vec<ReplicaSet>), IntegrationError> {
        let req = Request::get(
            &self.integration,
            Self::scoped(ns, "/apis/apps/v1", "replicasets"),
        );
        Self::check_ns(&req, ns)?;
        self.list_paged(req, "ReplicaSet", Some).await
    }

    /// ControllerRevisions in `ns` (all namespaces when `None`): the rollout history of
    /// StatefulSets and DaemonSets, in the shape ReplicaSets are read in. Each revision's stored
    /// template is read for its images, config references and annotations only.
    pub async fn controller_revisions<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<DeploymentFacts>, IntegrationError> {
        let ns = ns.into();
        let req = Request::get(
            &self.integration,
            Self::scoped(ns, "/apis/apps/v1", "controllerrevisions"),
        );
        Self::check_ns(&req, ns)?;
        // Each revision is reduced as it is parsed, so no stored template outlives its page.
        let (_, list) = self
            .list_paged(req, "ControllerRevision", |r: ControllerRevision| {
                Some(controller_revision_facts(&r))
            })
            .await?;
        Ok(list)
    }

    /// A list of one kind in `ns` (all namespaces when `None`), each item parsed on its own.
    pub(super) async fn list<T: DeserializeOwned>(
        &self,
        ns: Option<&str>,
        group: &str,
        resource: &str,
        kind: &str,
    ) -> Result<Vec<T>, IntegrationError> {
        let req = Request::get(&self.integration, Self::scoped(ns, group, resource));
        Self::check_ns(&req, ns)?;
        let (_, list) = self.list_paged(req, kind, Some).await?;
        Ok(list)
    }

    /// Services in `ns` (all namespaces when `None`) with what their Endpoints list, the Ingress
    /// rules routing to them and the NetworkPolicies denying their pods all ingress. A world
    /// whose Endpoints cannot be read still gives the Services, marked unread.
    pub async fn services<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<crate::model::ServiceFacts>, IntegrationError> {
        let ns = ns.into();
        let services: Vec<k8s_openapi::api::core::v1::Service> =
            self.list(ns, "/api/v1", "services", "Service").await?;
        let endpoints: Option<Vec<k8s_openapi::api::core::v1::Endpoints>> = self
            .list(ns, "/api/v1", "endpoints", "Endpoints")
            .await
            .ok();
        // What routes to them and what shuts their pods off; a cluster (or a recording) without
        // them still gives the Services.
        let ingresses: Option<Vec<k8s_openapi::api::networking::v1::Ingress>> = self
            .list(ns, "/apis/networking.k8s.io/v1", "ingresses", "Ingress")
            .await
            .ok();
        let policies: Option<Vec<k8s_openapi::api::networking::v1::NetworkPolicy>> = self
            .list(
                ns,
                "/apis/networking.k8s.io/v1",
                "networkpolicies",
                "NetworkPolicy",
            )
            .await
            .ok();
        // The classes Ingresses name, read only when there is an Ingress to judge.
        let classes: Option<Vec<String>> = match ingresses.as_deref() {
            Some([_, ..]) => self
                .list::<k8s_openapi::api::networking::v1::IngressClass>(
                    None,
                    "/apis/networking.k8s.io/v1",
                    "ingressclasses",
                    "IngressClass",
                )
                .await
                .ok()
                .map(|v| v.into_iter().filter_map(|c| c.metadata.name).collect()),
            _ => None,
        };
        Ok(super::k8s_services::network_facts(
            &services,
            &super::k8s_services::Around {
                endpoints: endpoints.as_deref(),
                ingresses: ingresses.as_deref(),
                policies: policies.as_deref(),
                classes: classes.as_deref(),
            },
        ))
    }

    /// Ingresses in `ns` (all namespaces when `None`) and the cluster's IngressClasses. The
    /// classes are cluster-scoped and optional: a cluster (or a recording) without them still
    /// gives the Ingresses, with the classes unknown.
    pub async fn ingresses<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<crate::model::IngressList, IntegrationError> {
        use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
        let list: Vec<Ingress> = self
            .list(
                ns.into(),
                "/apis/networking.k8s.io/v1",
                "ingresses",
                "Ingress",
            )
            .await?;
        let classes: Option<Vec<IngressClass>> = self
            .list(
                None,
                "/apis/networking.k8s.io/v1",
                "ingressclasses",
                "IngressClass",
            )
            .await
            .ok();
        Ok(crate::model::IngressList {
            ingresses: list
                .iter()
                .map(super::k8s_ingresses::ingress_facts)
                .collect(),
            classes: classes.map(|c| c.iter().map(super::k8s_ingresses::class_facts).collect()),
        })
    }

    /// StatefulSets in `ns` (all namespaces when `None`).
    pub async fn statefulsets<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<WorkloadFacts>, IntegrationError> {
        let list: Vec<StatefulSet> = self
            .list(ns.into(), "/apis/apps/v1", "statefulsets", "StatefulSet")
            .await?;
        Ok(list.iter().map(stateful_set_facts).collect())
    }

    /// DaemonSets in `ns` (all namespaces when `None`).
    pub async fn daemonsets<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<WorkloadFacts>, IntegrationError> {
        let list: Vec<DaemonSet> = self
            .list(ns.into(), "/apis/apps/v1", "daemonsets", "DaemonSet")
            .await?;
        Ok(list.iter().map(daemon_set_facts).collect())
    }

    /// Jobs in `ns` (all namespaces when `None`).
    pub async fn jobs<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<WorkloadFacts>, IntegrationError> {
        let list: Vec<Job> = self
            .list(ns.into(), "/apis/batch/v1", "jobs", "Job")
            .await?;
        Ok(list.iter().map(job_facts).collect())
    }

    /// CronJobs in `ns` (all namespaces when `None`).
    pub async fn cronjobs<'a>(
        &self,
        ns: impl Into<Option<&'a str>>,
    ) -> Result<Vec<WorkloadFacts>, IntegrationError> {
        let list: Vec<CronJob> = self
            .list(ns.into(), "/apis/batch/v1", "cronjobs", "CronJob")
            .await?;
        Ok(list.iter().map(cron_job_facts).collect())
    }

    /// ConfigMaps in `ns` as changes (when each was last written), metadata only.
    pub async fn config_maps(&self, ns: &str) -> Result<Vec<Change>, IntegrationError> {
        self.metadata_changes(ns, "configmaps", "config-map").await
    }

    /// Secrets in `ns` as changes, from a metadata-only list: the server never sends their values.
    pub async fn secrets(&self, ns: &str) -> Result<Vec<Change>, IntegrationError> {
        self.metadata_changes(ns, "secrets", "secret").await
    }

    async fn metadata_changes(
        &self,
        ns: &str,
        resource: &str,
        kind: &str,
    ) -> Result<Vec<Change>, IntegrationError> {
        let req = Request::get(
            &self.integration,
            Self::scoped(Some(ns), "/api/v1", resource),
        )
        .accept(METADATA_LIST);
        check_name(&req, "namespace", ns)?;
        let (req, v) = self.get_json(req).await?;
        config_changes(&v, kind).map_err(|m| req.error(ErrorKind::Decode(m)))
    }

    pub async fn nodes(&self) -> Result<Vec<NodeFacts>, IntegrationError> {
        let req = Request::get(&self.integration, "/api/v1/nodes");
        let (_, list) = self
            .list_paged(req, "Node", |n: Node| Some(node_facts(&n)))
            .await?;
        Ok(list)
    }

    async fn patch(&self, req: Request) -> Result<Value, IntegrationError> {
        self.transport.send(&req).await?.json(&req)
    }

    /// `kubectl rollout restart`: stamps the pod template so the controller replaces every pod.
    pub async fn rollout_restart(
        &self,
        ns: &str,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<String, IntegrationError> {
        let patch = json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": at.to_rfc3339()
        }}}}});
        let req = Request::new(
            &self.integration,
            "PATCH",
            format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
        )
        .body(RequestBody::MergePatch(patch));
        check_name(&req, "namespace", ns)?;
        check_name(&req, "deployment", name)?;
        self.patch(req).await?;
        Ok(format!("deployment/{name} in {ns} restarted"))
    }

    /// `kubectl rollout undo`: puts back the pod template of the previous revision's ReplicaSet.
    pub async fn rollout_undo(&self, ns: &str, name: &str) -> Result<String, IntegrationError> {
        let (dreq, deployment) = self.deployment_raw(ns, name).await?;
        let revision_of = |meta: &ObjectMeta| -> Option<u64> {
            meta.annotations.as_ref()?.get(REVISION)?.parse().ok()
        };
        let current = revision_of(&deployment.metadata).ok_or_else(|| {
            dreq.error(ErrorKind::Invalid(format!(
                "deployment/{name} has no revision annotation"
            )))
        })?;
        let (rreq, sets) = self.replica_sets_raw(Some(ns)).await?;
        let owned = |rs: &ReplicaSet| {
            rs.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "Deployment" && o.name == name)
        };
        let previous = sets
            .iter()
            .filter(|rs| owned(rs))
            .filter_map(|rs| revision_of(&rs.metadata).map(|r| (r, rs)))
            .filter(|(r, _)| *r < current)
            .max_by_key(|(r, _)| *r);
        let Some((revision, rs)) = previous else {
            return Err(rreq.error(ErrorKind::Invalid(format!(
                "deployment/{name} has no revision before {current} to roll back to"
            ))));
        };
        let mut template = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.clone())
            .ok_or_else(|| {
                rreq.error(ErrorKind::Decode(
                    "previous ReplicaSet has no template".into(),
                ))
            })?;
        // The hash label belongs to the ReplicaSet; the controller adds the right one back.
        if let Some(l) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            l.remove("pod-template-hash");
        }
        let value = serde_json::to_value(&template)
            .map_err(|e| rreq.error(ErrorKind::Other(e.to_string())))?;
        let req = Request::new(
            &self.integration,
            "PATCH",
            format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
        )
        .body(RequestBody::JsonPatch(
            json!([{"op": "replace", "path": "/spec/template", "value": value}]),
        ));
        self.patch(req).await?;
        let images = template_images(Some(&template)).join(", ");
        Ok(format!(
            "deployment/{name} in {ns} rolled back to revision {revision} ({images})"
        ))
    }

    /// `kubectl set resources`: a strategic merge patch of one container's resources in the pod
    /// template (containers merge by name, so other containers and other resource keys stay as they are).
    pub async fn set_resources(
        &self,
        ns: &str,
        name: &str,
        change: &ResourceChange,
    ) -> Result<String, IntegrationError> {
        let path = format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}");
        let probe = Request::new(&self.integration, "PATCH", path.clone());
        check_name(&probe, "namespace", ns)?;
        check_name(&probe, "deployment", name)?;
        if change.limits.is_empty() && change.requests.is_empty() {
            return Err(probe.error(ErrorKind::Invalid(
                "set_resources needs at least one limit or request (memory_limit, memory_request, cpu_limit, cpu_request)".into(),
            )));
        }
        for (what, map) in [("limit", &change.limits), ("request", &change.requests)] {
            for (resource, quantity) in map {
                if !is_resource_name(resource) {
                    return Err(probe.error(ErrorKind::Invalid(format!(
                        "bad resource name {resource:?}"
                    ))));
                }
                if !is_quantity(quantity) {
                    return Err(probe.error(ErrorKind::Invalid(format!(
                        "{resource} {what} {quantity:?} is not a Kubernetes quantity (e.g. 512Mi, 1Gi, 250m, 2)"
                    ))));
                }
            }
        }
        if let Some(c) = &change.container {
            check_name(&probe, "container", c)?;
        }
        let (dreq, deployment) = self.deployment_raw(ns, name).await?;
        let names: Vec<String> = deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default();
        let container = match &change.container {
            Some(c) if names.contains(c) => c.clone(),
            Some(c) => {
                return Err(dreq.error(ErrorKind::Invalid(format!(
                    "deployment/{name} has no container {c:?} (containers: {})",
                    names.join(", ")
                ))));
            }
            None if names.len() == 1 => names[0].clone(),
            None => {
                return Err(dreq.error(ErrorKind::Invalid(format!(
                    "deployment/{name} has {} containers ({}); say which with `container`",
                    names.len(),
                    names.join(", ")
                ))));
            }
        };
        let mut resources = serde_json::Map::new();
        if !change.limits.is_empty() {
            resources.insert("limits".into(), json!(change.limits));
        }
        if !change.requests.is_empty() {
            resources.insert("requests".into(), json!(change.requests));
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": container, "resources": resources}
        ]}}}});
        let req = Request::new(&self.integration, "PATCH", path)
            .body(RequestBody::StrategicMergePatch(patch));
        self.patch(req).await?;
        let list = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut what = Vec::new();
        if !change.limits.is_empty() {
            what.push(format!("limits {}", list(&change.limits)));
        }
        if !change.requests.is_empty() {
            what.push(format!("requests {}", list(&change.requests)));
        }
        Ok(format!(
            "deployment/{name} in {ns}: container {container} {}; pods roll to the new template",
            what.join(", ")
        ))
    }

    /// `kubectl cordon`: marks the node unschedulable; pods already on it keep running.
    pub async fn cordon(&self, node: &str) -> Result<String, IntegrationError> {
        let req = Request::new(&self.integration, "PATCH", format!("/api/v1/nodes/{node}")).body(
            RequestBody::MergePatch(json!({"spec": {"unschedulable": true}})),
        );
        check_name(&req, "node", node)?;
        self.patch(req).await?;
        Ok(format!("node/{node} cordoned"))
    }

    /// `kubectl drain --ignore-daemonsets --delete-emptydir-data`: cordons the node, then asks the
    /// Eviction API to move every pod off it, so PodDisruptionBudgets are honoured. A pod a budget
    /// holds back (429) is reported and the others still go. Errs only when the node cannot be
    /// cordoned or its pods cannot be listed.
    pub async fn drain(&self, node: &str) -> Result<DrainReport, IntegrationError> {
        self.cordon(node).await?;
        let req = Request::get(&self.integration, "/api/v1/pods")
            .query("fieldSelector", format!("spec.nodeName={node}"));
        let (req, v) = self.get_json(req).await?;
        let pods: Vec<Pod> = items(v, "Pod").map_err(|m| req.error(ErrorKind::Decode(m)))?;
        let mut report = DrainReport {
            node: node.to_string(),
            ..DrainReport::default()
        };
        // The selector is the server's job, but a replayed list may hold the whole cluster.
        let on_node = pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node));
        for pod in on_node {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let id = format!("{ns}/{name}");
            match drain_exemption(pod) {
                Some((true, why)) => {
                    report.skipped.push((id, why));
                    continue;
                }
                Some((false, why)) => {
                    report.failed.push((id, why));
                    continue;
                }
                None => {}
            }
            match self.evict(&ns, &name).await {
                Ok(()) => report.evicted.push(id),
                Err(e) if e.status() == Some(429) => {
                    let why = match &e.kind {
                        ErrorKind::Status { message, .. } => message.clone(),
                        other => other.to_string(),
                    };
                    report.blocked.push((id, why));
                }
                Err(e) => report.failed.push((id, e.kind.to_string())),
            }
        }
        Ok(report)
    }

    /// Posts a `policy/v1` Eviction for one pod. A pod already gone counts as evicted.
    pub async fn evict(&self, ns: &str, name: &str) -> Result<(), IntegrationError> {
        let body = json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns}
        });
        let req = Request::new(
            &self.integration,
            "POST",
            format!("/api/v1/namespaces/{ns}/pods/{name}/eviction"),
        )
        .body(RequestBody::Json(body));
        check_name(&req, "namespace", ns)?;
        check_name(&req, "pod", name)?;
        let resp = self.transport.send(&req).await?;
        match resp.status {
            s if (200..300).contains(&s) || s == 404 => Ok(()),
            status => Err(req.error(ErrorKind::Status {
                status,
                message: eviction_message(&resp.body),
            })),
        }
    }

    pub async fn scale(
        &self,
        ns: &str,
        name: &str,
        replicas: u32,
    ) -> Result<String, IntegrationError> {
        let req = Request::new(
            &self.integration,
            "PATCH",
            format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
        )
        .body(RequestBody::MergePatch(
            json!({"spec": {"replicas": replicas}}),
        ));
        check_name(&req, "namespace", ns)?;
        check_name(&req, "deployment", name)?;
        self.patch(req).await?;
        Ok(format!("deployment/{name} in {ns} scaled to {replicas}"))
    }

    pub async fn delete_pod(&self, ns: &str, name: &str) -> Result<String, IntegrationError> {
        self.delete_pod_with_grace(ns, name, None).await
    }

    /// `kubectl delete pod [--grace-period=N]`; `Some(0)` with `--force` is how a pod stuck
    /// terminating on a lost node is removed from the API.
    pub async fn delete_pod_with_grace(
        &self,
        ns: &str,
        name: &str,
        grace_period_seconds: Option<u32>,
    ) -> Result<String, IntegrationError> {
        let req = Request::new(
            &self.integration,
            "DELETE",
            format!("/api/v1/namespaces/{ns}/pods/{name}"),
        )
        .query_opt(
            "gracePeriodSeconds",
            grace_period_seconds.map(|g| g.to_string()),
        );
        check_name(&req, "namespace", ns)?;
        check_name(&req, "pod", name)?;
        self.transport.send(&req).await?.success(&req)?;
        Ok(format!("pod/{name} in {ns} deleted"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_filter_labels() {
        let l = BTreeMap::from([
            ("app".to_string(), "api".to_string()),
            ("tier".to_string(), "web".to_string()),
        ]);
        assert!(selector_matches("app=api", &l));
        assert!(selector_matches("app==api,tier", &l));
        assert!(!selector_matches("app=db", &l));
        assert!(!selector_matches("app!=api", &l));
        assert!(selector_matches("!missing", &l));
        assert!(!selector_matches("env in (prod)", &l));
        assert!(selector_matches("env notin (prod)", &l));
        assert!(selector_matches("app=api,tier in (web, batch)", &l));
        assert!(!selector_matches("tier in (batch,db),app=api", &l));
        assert!(!selector_matches("tier notin (web)", &l));
    }

    #[test]
    fn workload_selectors_are_written_as_the_api_reads_them() {
        let labels = BTreeMap::from([("app".to_string(), "api".to_string())]);
        let exprs = vec![
            "tier In (web,batch)".to_string(),
            "env NotIn (dev)".to_string(),
            "canary DoesNotExist".to_string(),
            "track Exists".to_string(),
        ];
        let sel = label_selector(&labels, &exprs).expect("a selector");
        assert_eq!(
            sel,
            "app=api,tier in (web,batch),env notin (dev),!canary,track"
        );
        let pod = BTreeMap::from([
            ("app".to_string(), "api".to_string()),
            ("tier".to_string(), "web".to_string()),
            ("track".to_string(), "stable".to_string()),
        ]);
        assert!(selector_matches(&sel, &pod));
        let mut canary = pod.clone();
        canary.insert("canary".into(), "yes".into());
        assert!(!selector_matches(&sel, &canary));
        assert_eq!(label_selector(&BTreeMap::new(), &[]), None);
        assert_eq!(label_selector(&labels, &["x Gt (1)".to_string()]), None);
    }

    #[test]
    fn log_lines_take_leading_timestamps() {
        let lines = parse_log_text(
            "2026-04-18T10:44:58Z INFO up\nplain line\n",
            &BTreeMap::new(),
        );
        assert_eq!(lines.len(), 2);
        assert!(lines[0].at.is_some());
        assert_eq!(lines[0].line, "INFO up");
        assert_eq!(lines[1].at, None);
        assert_eq!(lines[1].line, "plain line");
    }

    #[test]
    fn quantities_are_checked_like_the_api_server_does() {
        for ok in [
            "1Gi", "512Mi", "250m", "2", "1.5", "0.5Gi", "1e3", "100k", "+1G",
        ] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "lots", "1GB", "Gi", ".", "1..5", "1 Gi", "1e", "1Gi;rm"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn drain_summaries_name_every_pod() {
        let r = DrainReport {
            node: "n1".into(),
            evicted: vec!["a/p1".into()],
            skipped: vec![("kube-system/ds".into(), "managed by DaemonSet/x".into())],
            blocked: vec![("a/p2".into(), "budget".into())],
            failed: Vec::new(),
        };
        assert!(!r.complete());
        assert_eq!(
            r.summary(),
            "node/n1 cordoned, 1 pod(s) evicted (a/p1), 1 skipped (kube-system/ds: managed by DaemonSet/x), \
             1 blocked by a PodDisruptionBudget (a/p2: budget); retry once their replacements are ready"
        );
    }

    #[test]
    fn names_cannot_become_other_paths() {
        let req = Request::get(NAME, "/x");
        assert!(check_name(&req, "pod", "payments-api-7f9dd8b6c4-x7gr9").is_ok());
        assert!(check_name(&req, "pod", "../secrets").is_err());
        assert!(check_name(&req, "pod", "a/b").is_err());
        assert!(check_name(&req, "pod", "").is_err());
    }

    #[test]
    fn templates_name_every_config_map_and_secret_they_read() {
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {}, "template": {
                "metadata": {"annotations": {"checksum/config": "abc"}},
                "spec": {
                    "initContainers": [{"name": "migrate", "envFrom": [{"secretRef": {"name": "db-admin"}}]}],
                    "containers": [{"name": "web", "env": [
                        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "web-env", "key": "a"}}},
                        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "web-token", "key": "b"}}},
                        {"name": "C", "value": "plain"}
                    ], "envFrom": [{"configMapRef": {"name": "web-flags"}}]}],
                    "volumes": [
                        {"name": "cfg", "configMap": {"name": "web-files"}},
                        {"name": "tls", "secret": {"secretName": "web-tls"}},
                        {"name": "p", "projected": {"sources": [
                            {"configMap": {"name": "ca-bundle"}}, {"secret": {"name": "sidecar-key"}}
                        ]}}
                    ]
                }
            }}
        }))
        .unwrap_or_else(|e| panic!("deployment: {e}"));
        let f = deployment_facts(&d);
        assert_eq!(
            f.config_refs,
            vec![
                "configmap/ca-bundle",
                "configmap/web-env",
                "configmap/web-files",
                "configmap/web-flags",
                "secret/db-admin",
                "secret/sidecar-key",
                "secret/web-tls",
                "secret/web-token",
            ]
        );
        assert_eq!(
            f.template_annotations
                .get("checksum/config")
                .map(String::as_str),
            Some("abc")
        );
    }

    fn parse<T: DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_pods_owner_is_its_controller_and_its_uid_and_node_selector_are_kept() {
        let pod: Pod = parse(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nightly-report-28991520-x2k9q", "namespace": "batch",
                "uid": "6c1f4c1e-2a41-4d0c-9f43-0d2b8c9a1f10",
                "labels": {"batch.kubernetes.io/controller-uid": "0f6e-job-uid", "job-name": "nightly-report-28991520"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller", "uid": "1"},
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "nightly-report-28991520",
                     "uid": "0f6e-job-uid", "controller": true, "blockOwnerDeletion": true}
                ]},
            "spec": {"nodeSelector": {"kubernetes.io/os": "linux", "pool": "batch"},
                "containers": [{"name": "report", "image": "registry/report:1.4"}]},
            "status": {"phase": "Failed"}
        }));
        let f = pod_facts(&pod);
        assert_eq!(f.owner.as_deref(), Some("Job/nightly-report-28991520"));
        assert_eq!(f.uid, "6c1f4c1e-2a41-4d0c-9f43-0d2b8c9a1f10");
        assert_eq!(
            f.node_selector.get("pool").map(String::as_str),
            Some("batch")
        );
        // Without the controller flag, the first reference still names an owner.
        let bare: Pod = parse(json!({"metadata": {"name": "p", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": "2"}]}}));
        assert_eq!(
            pod_facts(&bare).owner.as_deref(),
            Some("ReplicaSet/web-5d9c")
        );
        assert_eq!(
            pod_facts(&parse::<Pod>(json!({"metadata": {"name": "q"}}))).owner,
            None
        );
    }

    #[test]
    fn memory_flags_are_kept_and_nothing_else_of_the_environment() {
        let pod: Pod = parse(json!({
            "metadata": {"name": "bff-1"},
            "spec": {"containers": [{"name": "bff", "image": "bff:9",
                "command": ["java", "-Xmx3g", "-jar", "app.jar"],
                "args": ["--max-old-space-size=1024 --trace-warnings"],
                "env": [
                    {"name": "NODE_OPTIONS", "value": "--enable-source-maps --max-old-space-size=4096"},
                    {"name": "DB_PASSWORD", "value": "hunter2 -Xmx"},
                    {"name": "GOMEMLIMIT", "value": "3GiB"},
                    {"name": "JAVA_OPTS", "valueFrom": {"configMapKeyRef": {"name": "jvm", "key": "opts"}}}
                ]}]}
        }));
        let f = pod_facts(&pod);
        assert_eq!(
            f.containers[0].memory_flags,
            vec![
                "NODE_OPTIONS: --max-old-space-size=4096",
                "GOMEMLIMIT=3GiB",
                "command: -Xmx3g",
                "args: --max-old-space-size=1024",
            ]
        );
        let text = serde_json::to_string(&f).unwrap_or_default();
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn deployments_and_replica_sets_keep_their_selectors_owner_and_node_selector() {
        let d: Deployment = parse(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "checkout", "namespace": "shop", "generation": 4},
            "spec": {
                "replicas": 3,
                "selector": {
                    "matchLabels": {"app": "checkout"},
                    "matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["web", "edge"]},
                        {"key": "canary", "operator": "NotIn", "values": ["true"]},
                        {"key": "team", "operator": "Exists"},
                        {"key": "legacy", "operator": "DoesNotExist", "values": []}
                    ]
                },
                "template": {
                    "metadata": {"labels": {"app": "checkout", "tier": "web", "team": "pay"}},
                    "spec": {"nodeSelector": {"pool": "general"},
                        "containers": [{"name": "checkout", "image": "registry/checkout:2.1"}]}
                }
            },
            "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 4}
        }));
        let f = deployment_facts(&d);
        assert_eq!(f.selector.get("app").map(String::as_str), Some("checkout"));
        assert_eq!(
            f.selector_expressions,
            vec![
                "tier In (web,edge)",
                "canary NotIn (true)",
                "team Exists",
                "legacy DoesNotExist"
            ]
        );
        assert_eq!(
            f.node_selector.get("pool").map(String::as_str),
            Some("general")
        );
        assert_eq!(f.owner, None);

        let rs: ReplicaSet = parse(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "checkout-6f7b9c8d5", "namespace": "shop",
                "annotations": {"deployment.kubernetes.io/revision": "7"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout",
                    "uid": "d-uid", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"replicas": 3,
                "selector": {"matchLabels": {"app": "checkout", "pod-template-hash": "6f7b9c8d5"}},
                "template": {"metadata": {"labels": {"app": "checkout", "pod-template-hash": "6f7b9c8d5"}},
                    "spec": {"nodeSelector": {"pool": "general"},
                        "containers": [{"name": "checkout", "image": "registry/checkout:2.1"}]}}},
            "status": {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2}
        }));
        let f = replica_set_facts(&rs);
        assert_eq!(f.owner.as_deref(), Some("Deployment/checkout"));
        assert_eq!(
            f.selector.get("pod-template-hash").map(String::as_str),
            Some("6f7b9c8d5")
        );
        assert!(f.selector_expressions.is_empty());
        assert_eq!(
            f.node_selector.get("pool").map(String::as_str),
            Some("general")
        );
        assert_eq!(f.revision.as_deref(), Some("7"));
    }

    #[test]
    fn stateful_sets_show_a_rollout_stuck_between_revisions() {
        let s: StatefulSet = parse(json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "orders-db", "namespace": "orders", "uid": "ss-uid", "generation": 3,
                "labels": {"app": "orders-db"}, "creationTimestamp": "2026-01-10T08:00:00Z"},
            "spec": {"replicas": 3, "serviceName": "orders-db",
                "selector": {"matchLabels": {"app": "orders-db"}},
                "template": {"metadata": {"labels": {"app": "orders-db"}},
                    "spec": {"nodeSelector": {"disk": "ssd"},
                        "containers": [{"name": "postgres", "image": "postgres:16.2"}]}}},
            "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 2, "currentReplicas": 2,
                "updatedReplicas": 1, "availableReplicas": 2,
                "currentRevision": "orders-db-5c8d7b9f6", "updateRevision": "orders-db-7d9f8c6b5",
                "collisionCount": 0}
        }));
        let w = stateful_set_facts(&s);
        assert_eq!(w.kind, "StatefulSet");
        assert_eq!(
            (w.name.as_str(), w.namespace.as_str(), w.uid.as_str()),
            ("orders-db", "orders", "ss-uid")
        );
        assert_eq!(
            (w.desired, w.ready, w.updated, w.available, w.unavailable),
            (3, 2, 1, 2, 1)
        );
        assert_eq!(w.current_revision.as_deref(), Some("orders-db-5c8d7b9f6"));
        assert_eq!(w.update_revision.as_deref(), Some("orders-db-7d9f8c6b5"));
        assert_eq!(w.images, vec!["postgres:16.2"]);
        assert_eq!(w.node_selector.get("disk").map(String::as_str), Some("ssd"));
        assert_eq!(w.selector.get("app").map(String::as_str), Some("orders-db"));
        assert_eq!((w.generation, w.observed_generation), (3, 3));
        assert!(w.created_at.is_some());
        // A StatefulSet created without `replicas` runs one.
        let bare: StatefulSet = parse(json!({"metadata": {"name": "x"}, "spec": {
            "selector": {}, "serviceName": "x", "template": {}}}));
        assert_eq!(stateful_set_facts(&bare).desired, 1);
    }

    #[test]
    fn daemon_sets_count_nodes_scheduled_ready_and_misscheduled() {
        let d: DaemonSet = parse(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node-exporter", "namespace": "monitoring", "uid": "ds-uid", "generation": 2},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "node-exporter"}},
                "template": {"metadata": {"labels": {"app.kubernetes.io/name": "node-exporter"}},
                    "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                        "containers": [{"name": "node-exporter", "image": "quay.io/prometheus/node-exporter:v1.8.1"}]}}},
            "status": {"currentNumberScheduled": 5, "desiredNumberScheduled": 5, "numberMisscheduled": 1,
                "numberReady": 3, "observedGeneration": 2, "updatedNumberScheduled": 4,
                "numberAvailable": 3, "numberUnavailable": 2}
        }));
        let w = daemon_set_facts(&d);
        assert_eq!(w.kind, "DaemonSet");
        assert_eq!(
            (
                w.desired,
                w.ready,
                w.updated,
                w.available,
                w.unavailable,
                w.misscheduled
            ),
            (5, 3, 4, 3, 2, 1)
        );
        assert_eq!(w.current_revision.as_deref(), Some("2"));
        assert_eq!(
            w.node_selector.get("kubernetes.io/os").map(String::as_str),
            Some("linux")
        );
        // A DaemonSet the controller has not looked at yet has no status.
        let fresh: DaemonSet =
            parse(json!({"metadata": {"name": "y"}, "spec": {"selector": {}, "template": {}}}));
        let w = daemon_set_facts(&fresh);
        assert_eq!((w.desired, w.ready, w.unavailable), (0, 0, 0));
    }

    #[test]
    fn jobs_say_why_they_failed() {
        let j: Job = parse(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "nightly-report-28991520", "namespace": "batch", "uid": "0f6e-job-uid",
                "labels": {"batch.kubernetes.io/controller-uid": "0f6e-job-uid", "job-name": "nightly-report-28991520"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly-report",
                    "uid": "cj-uid", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "0f6e-job-uid"}},
                "template": {"metadata": {"labels": {"job-name": "nightly-report-28991520"}},
                    "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "report", "image": "registry/report:1.4"}]}}},
            "status": {
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit",
                     "lastProbeTime": "2026-03-11T02:07:41Z", "lastTransitionTime": "2026-03-11T02:07:41Z"},
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit",
                     "lastProbeTime": "2026-03-11T02:07:41Z", "lastTransitionTime": "2026-03-11T02:07:41Z"}
                ],
                "startTime": "2026-03-11T02:00:00Z", "failed": 7, "ready": 0, "terminating": 0,
                "uncountedTerminatedPods": {}
            }
        }));
        let w = job_facts(&j);
        assert_eq!(w.kind, "Job");
        assert_eq!(w.owner.as_deref(), Some("CronJob/nightly-report"));
        assert_eq!(
            w.selector
                .get("batch.kubernetes.io/controller-uid")
                .map(String::as_str),
            Some("0f6e-job-uid")
        );
        assert_eq!((w.desired, w.active, w.succeeded, w.failed), (1, 0, 0, 7));
        assert_eq!(w.backoff_limit, Some(6));
        assert!(w.start_time.is_some() && w.completion_time.is_none());
        let (status, reason, message) = &w.conditions["Failed"];
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "BackoffLimitExceeded")
        );
        assert!(message.contains("backoff limit"), "{message}");

        let done: Job = parse(json!({
            "metadata": {"name": "migrate", "namespace": "shop"},
            "spec": {"activeDeadlineSeconds": 600, "template": {"spec": {"containers": [{"name": "m"}]}}},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                "message": "Job was active longer than specified deadline"}],
                "startTime": "2026-03-11T02:00:00Z", "active": 0, "failed": 1}
        }));
        let w = job_facts(&done);
        assert_eq!(w.conditions["Failed"].1, "DeadlineExceeded");
        assert_eq!(w.desired, 1);

        let ok: Job = parse(json!({
            "metadata": {"name": "backfill", "namespace": "shop"},
            "spec": {"completions": 5, "parallelism": 2, "template": {}},
            "status": {"conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached"}],
                "startTime": "2026-03-11T01:00:00Z", "completionTime": "2026-03-11T01:05:00Z",
                "succeeded": 5, "ready": 0}
        }));
        let w = job_facts(&ok);
        assert_eq!((w.desired, w.succeeded), (5, 5));
        assert_eq!(w.conditions["Complete"].0, "True");
        assert!(w.completion_time.is_some());
    }

    #[test]
    fn cron_jobs_keep_schedule_last_runs_and_active_jobs() {
        let c: CronJob = parse(json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly-report", "namespace": "batch", "uid": "cj-uid"},
            "spec": {"schedule": "0 2 * * *", "concurrencyPolicy": "Forbid", "suspend": false,
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"spec": {"backoffLimit": 6, "template": {"spec": {
                    "nodeSelector": {"pool": "batch"}, "restartPolicy": "Never",
                    "containers": [{"name": "report", "image": "registry/report:1.4"}]}}}}},
            "status": {
                "active": [{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly-report-28991520",
                    "namespace": "batch", "uid": "0f6e-job-uid", "resourceVersion": "991"}],
                "lastScheduleTime": "2026-03-11T02:00:00Z",
                "lastSuccessfulTime": "2026-03-09T02:04:12Z"
            }
        }));
        let w = cron_job_facts(&c);
        assert_eq!(w.kind, "CronJob");
        assert_eq!(w.schedule.as_deref(), Some("0 2 * * *"));
        assert!(!w.suspend);
        assert_eq!(w.active_jobs, vec!["nightly-report-28991520"]);
        assert_eq!(w.active, 1);
        assert!(w.last_schedule > w.last_success);
        assert_eq!(w.images, vec!["registry/report:1.4"]);
        assert_eq!(
            w.node_selector.get("pool").map(String::as_str),
            Some("batch")
        );
        assert_eq!(w.backoff_limit, Some(6));
        let paused: CronJob = parse(json!({"metadata": {"name": "p"},
            "spec": {"schedule": "*/5 * * * *", "suspend": true, "jobTemplate": {}}}));
        let w = cron_job_facts(&paused);
        assert!(w.suspend && w.last_schedule.is_none() && w.active_jobs.is_empty());
    }

    #[test]
    fn secret_values_a_server_sends_anyway_are_never_read() {
        // A server that ignores the metadata-only Accept header sends whole Secrets.
        let v = json!({"items": [{"metadata": {"name": "db", "namespace": "shop",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "vault-sync", "operation": "Update", "time": "2026-02-01T10:00:00Z"}]},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "s3cr3t-value"}}]});
        let changes = config_changes(&v, "secret").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(changes.len(), 1);
        let text = format!("{changes:?}");
        assert!(
            !text.contains("aHVudGVyMg") && !text.contains("s3cr3t"),
            "{text}"
        );
        assert_eq!(changes[0].title, "secret db updated");
        assert_eq!(changes[0].author.as_deref(), Some("vault-sync"));
        assert_eq!(changes[0].target, "shop/secret/db");
        assert!(config_changes(&json!({"items": 3}), "secret").is_err());
    }

    /// A revision as the StatefulSet controller writes it: the whole template as a patch with
    /// `$patch: replace`, env values among it.
    fn billing_pg_revision(revision: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": format!("billing-pg-7c9d8f{revision}b5"), "namespace": "billing",
                "creationTimestamp": "2026-04-18T10:12:00Z",
                "labels": {"app": "billing-pg", "controller.kubernetes.io/hash": "7c9d8fb5"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "billing-pg",
                    "uid": "s-uid", "controller": true, "blockOwnerDeletion": true}]},
            "revision": revision,
            "data": {"spec": {"template": {"$patch": "replace",
                "metadata": {"labels": {"app": "billing-pg"},
                    "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-04-18T10:11:58Z"}},
                "spec": {
                    "initContainers": [{"name": "init-perms", "image": "busybox:1.36"}],
                    "containers": [{"name": "postgres", "image": image,
                        "env": [{"name": "POSTGRES_PASSWORD", "value": "hunter2"},
                                {"name": "PGHOST", "valueFrom": {"configMapKeyRef": {"name": "pg-env", "key": "host"}}}],
                        "envFrom": [{"secretRef": {"name": "pg-admin"}}]}],
                    "volumes": [{"name": "conf", "configMap": {"name": "pg-conf"}}]}}}}
        })
    }

    #[test]
    fn a_controller_revision_is_read_as_its_owners_template() {
        let r: ControllerRevision = parse(billing_pg_revision(4, "postgres:16.3"));
        let f = controller_revision_facts(&r);
        assert_eq!(f.name, "billing-pg-7c9d8f4b5");
        assert_eq!(f.namespace, "billing");
        assert_eq!(f.revision.as_deref(), Some("4"));
        assert_eq!(f.owner.as_deref(), Some("StatefulSet/billing-pg"));
        assert_eq!(f.images, vec!["postgres:16.3", "busybox:1.36"]);
        assert_eq!(
            f.config_refs,
            vec!["configmap/pg-conf", "configmap/pg-env", "secret/pg-admin"]
        );
        assert_eq!(
            f.template_annotations
                .get("kubectl.kubernetes.io/restartedAt")
                .map(String::as_str),
            Some("2026-04-18T10:11:58Z")
        );
        assert_eq!(
            f.created_at.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-04-18T10:12:00+00:00")
        );
        assert_eq!(f.labels.get("app").map(String::as_str), Some("billing-pg"));
        // The template's env values are not kept.
        let text = serde_json::to_string(&f).unwrap_or_default();
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn a_controller_revision_without_a_template_gives_fewer_facts() {
        let mut v = billing_pg_revision(2, "postgres:16.2");
        v["data"] = json!({});
        let f = controller_revision_facts(&parse(v.clone()));
        assert_eq!(f.revision.as_deref(), Some("2"));
        assert_eq!(f.owner.as_deref(), Some("StatefulSet/billing-pg"));
        assert!(f.images.is_empty() && f.config_refs.is_empty());
        assert!(f.template_annotations.is_empty());
        // No data at all, or data that is not an object, is the same.
        for data in [
            Value::Null,
            json!("opaque"),
            json!({"spec": {"template": 3}}),
        ] {
            v["data"] = data;
            let f = controller_revision_facts(&parse(v.clone()));
            assert!(f.images.is_empty(), "{:?}", f.images);
        }
        // A template that does not parse whole (a container without its name) still gives its
        // images and annotations.
        v["data"] = json!({"spec": {"template": {
            "metadata": {"annotations": {"checksum/config": "ab12"}},
            "spec": {"containers": [{"image": "postgres:16.2"}]}}}});
        let f = controller_revision_facts(&parse(v));
        assert_eq!(f.images, vec!["postgres:16.2"]);
        assert_eq!(
            f.template_annotations
                .get("checksum/config")
                .map(String::as_str),
            Some("ab12")
        );
    }
}
