//! The domain model: events, commands, the incident fold and the plain data they carry. No I/O.

mod alarm;
mod alert;
pub mod catalog;
mod cloud;
pub mod commands;
mod diagnosis;
mod event;
mod facts;
mod incident;
mod memory;
pub mod monitor;
pub mod text;
mod types;

pub use alarm::{is_alarm as is_cloudwatch_alarm, parse as parse_cloudwatch_alarm};
pub use alert::{
    Alert, AlertStatus, CLUSTER_KEYS, PayloadError, WebhookPayload, label_fingerprint,
};
pub use cloud::{CloudFact, MetricQuery, MetricSeries, PiKey, PiSeries, RdsEvent, RdsInstance};
pub use diagnosis::{Check, CheckStatus, SubjectObject, Symptom, SymptomState, steps_text};
pub use event::{Command, Event, Outcome, Record, RunMode, SessionHeader};
pub use facts::{
    AlertInfo, AutoscalerFacts, Change, ChangeKind, ClaimFacts, ContainerFacts, DeploymentFacts,
    Facts, HEAP_FLAGS, IngressBackendRef, IngressClassFacts, IngressFacts, IngressList,
    IngressRoute, IngressRule, IngressTls, K8sEventFacts, LogLine, NodeFacts, PgBackend,
    PgConnections, PgDatabase, PgFact, PgReplica, PgStatement, PodFacts, RuleInfo, Series,
    ServiceFacts, WorkloadFacts, human_duration,
};
pub use incident::{
    ActionState, ActionStatus, Approval, ChatEntry, CredentialState, Incident, StageState,
    StageStatus, TimelineItem, TimelineKind, ToolCallState, via_note,
};
pub use memory::{OperatorNote, PastAction, PastIncident, recalled_line, seen_before};
pub use types::{
    Action, ActionId, CallId, Category, ChatRole, Evidence, EvidenceBody, EvidenceId, Finding,
    Hypothesis, Marker, Risk, RuledOut, Stage, Verification, action_digest, short_digest,
};
