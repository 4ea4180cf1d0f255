//! Checks per concern, in the manner of Coroot's inspections: each file declares what it checks
//! about the subject and returns, for each failure it finds, a signal with its onset and evidence.

pub(crate) mod autoscaler;
pub(crate) mod changes;
pub(crate) mod claims;
pub mod cloud;
pub(crate) mod cluster_dns;
pub(crate) mod config;
pub(crate) mod cpu_limit;
pub(crate) mod create_refused;
pub(crate) mod database;
pub(crate) mod dependencies;
pub(crate) mod eviction;
pub(crate) mod feature_flags;
pub(crate) mod ingress;
pub(crate) mod logs;
pub(crate) mod metrics;
pub(crate) mod monitor;
pub(crate) mod network;
pub(crate) mod nodes;
pub(crate) mod pods;
pub(crate) mod recovery;
pub(crate) mod rollout;
pub(crate) mod scaled_to_zero;
pub(crate) mod scheduling;
pub(crate) mod service_endpoints;
pub(crate) mod slow_calls;
pub(crate) mod storm;
pub(crate) mod volume;

/// How a check knows the failure it reports: the strength of its own evidence, before the verdict's
/// walk adds the links it finds between checks (an edge to the subject, an onset before the
/// symptom's, an independent check that agrees). Ordered weakest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Basis {
    /// True, and worth showing, but no failure of its own (a storm of alerts, a coverage gap).
    #[default]
    Context,
    /// The failure is seen (a container restarting, a pod not Ready) and nothing says why.
    Observed,
    /// Only timing ties it to the symptom: a change or a shift just before the onset.
    Timed,
    /// The subject's own log lines say what failed.
    Logged,
    /// Measured against a limit or a spec (a series over its limit, a selector matching no pod).
    Measured,
    /// The system names the failure and its reason (a termination reason, a scheduler, controller
    /// or provider event, a node condition).
    Stated,
}

impl Basis {
    /// The links this kind of evidence establishes by itself: that the failure happened, and
    /// (the stronger kinds) what it was.
    pub(crate) fn links(self) -> u8 {
        self as u8
    }
}

/// What part a check plays in the verdict's walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A failure of the subject or of something it depends on: a candidate link in the chain.
    Failure,
    /// The subject's own state failing (restarting, exiting, probes failing, a rollout that does
    /// not progress): the first link, which a deeper failure of the same kind explains.
    Effect,
    /// A change to the subject (a deploy, a config edit): a cause only by its timing.
    Change,
    /// The alert's own condition read on its own series: the symptom, never its cause.
    Symptom,
    /// A failure seen to end (a restart long past, a flap, a metric back within bounds, an alert
    /// resolved): it clears the failures it is about.
    Clearance,
    /// Nothing failing was found where it looked: it clears nothing by itself.
    Absence,
    /// Shown beside the checks, never a cause (alert storms, gaps in the evidence).
    Context,
}

/// One check a concern declares: its id (what its findings are filed under), a title, the
/// concern (its file), its part in the walk, and the provider series it measures (CloudWatch's
/// names; `<` when only a fall is its failure, `>` when only a rise is), which an alert's claim is
/// matched against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decl {
    pub id: &'static str,
    pub title: &'static str,
    pub concern: &'static str,
    pub role: Role,
    pub reads: &'static [&'static str],
}

impl Decl {
    /// Whether it is the alert's own condition or a failure read off a metric series (a level
    /// shift): what a state metric or the alert's own series restates rather than explains.
    pub(crate) fn reads_series(&self) -> bool {
        self.role == Role::Symptom || (self.concern == "metrics" && self.role == Role::Failure)
    }

    /// Whether this check measures the series a claim is about, in the direction it claims.
    pub(crate) fn reads(&self, metric: &str, falls: bool) -> bool {
        self.reads.iter().any(|r| {
            if let Some(m) = r.strip_suffix('<') {
                m == metric && falls
            } else if let Some(m) = r.strip_suffix('>') {
                m == metric && !falls
            } else {
                *r == metric
            }
        })
    }
}

/// Every concern's checks. A finding filed under an id not declared here is a failure check of
/// its own (the memory of past incidents, a model's analysis).
const ALL: &[&[Decl]] = &[
    pods::DECLARED,
    scheduling::DECLARED,
    nodes::DECLARED,
    rollout::DECLARED,
    config::DECLARED,
    recovery::DECLARED,
    metrics::DECLARED,
    logs::DECLARED,
    network::DECLARED,
    ingress::DECLARED,
    autoscaler::DECLARED,
    slow_calls::DECLARED,
    cpu_limit::DECLARED,
    create_refused::DECLARED,
    service_endpoints::DECLARED,
    scaled_to_zero::DECLARED,
    cluster_dns::DECLARED,
    volume::DECLARED,
    eviction::DECLARED,
    feature_flags::DECLARED,
    claims::DECLARED,
    dependencies::DECLARED,
    storm::DECLARED,
    database::DECLARED,
    cloud::DECLARED,
    &[Decl {
        id: "coverage",
        title: "what each integration gave",
        concern: "coverage",
        role: Role::Context,
        reads: &[],
    }],
];

/// The declaration of a check by its id; an undeclared id is a failure check of its own.
pub(crate) fn declared(id: &str) -> Decl {
    ALL.iter()
        .flat_map(|d| d.iter())
        .find(|d| d.id == id)
        .copied()
        .unwrap_or(Decl {
            id: "",
            title: "",
            concern: "",
            role: Role::Failure,
            reads: &[],
        })
}

/// Objects the checks' tests build their worlds from.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::model::{ContainerFacts, DeploymentFacts, PodFacts};
    use std::collections::BTreeMap;

    /// A Deployment `app` in `ns` with its one pod (ReplicaSet `app-7c9d8`), Running and Ready,
    /// its container listening on 8080.
    pub(crate) fn serving(app: &str, ns: &str) -> (PodFacts, DeploymentFacts) {
        let pod = PodFacts {
            name: format!("{app}-7c9d8-aaaaa"),
            namespace: ns.into(),
            phase: "Running".into(),
            owner: Some(format!("ReplicaSet/{app}-7c9d8")),
            labels: BTreeMap::from([
                ("app".to_string(), app.to_string()),
                ("pod-template-hash".to_string(), "7c9d8".to_string()),
            ]),
            conditions: BTreeMap::from([("Ready".into(), "True".into())]),
            containers: vec![ContainerFacts {
                name: "web".into(),
                ready: true,
                state: "running".into(),
                ports: vec![8080],
                ..ContainerFacts::default()
            }],
            ..PodFacts::default()
        };
        let deployment = DeploymentFacts {
            name: app.into(),
            namespace: ns.into(),
            replicas: 1,
            ready_replicas: 1,
            selector: BTreeMap::from([("app".into(), app.into())]),
            ..DeploymentFacts::default()
        };
        (pod, deployment)
    }
}
