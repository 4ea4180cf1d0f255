//! The one seam to the outside world: the transport and a typed client per vendor.

pub mod alertmanager;
pub mod aws;
pub mod datadog;
pub mod error;
pub mod github;
pub mod jira;
mod k8s_autoscalers;
mod k8s_ingresses;
mod k8s_services;
mod k8s_storage;
pub mod kubernetes;
pub mod llm;
pub mod loki;
pub mod mcp;
pub mod pagerduty;
pub mod postgres;
pub mod prometheus;
pub mod servicenow;
pub mod stored;
pub mod transport;

pub use alertmanager::{
    AlertFilter, AlertGroup, AlertmanagerClient, GroupedAlert, Silence, SilenceSpec,
};
pub use datadog::{DatadogClient, Monitor};
pub use error::{ErrorKind, IntegrationError};
pub use github::GitHubClient;
pub use jira::{CreatedIssue, JiraClient, NewIssue};
pub use kubernetes::{DrainReport, KubernetesClient, ResourceChange};
pub use loki::{Direction, LokiClient};
pub use pagerduty::{PagerDutyClient, PdIncident};
pub use postgres::{PostgresBackend, PostgresClient, PostgresSettings};
pub use prometheus::PrometheusClient;
pub use servicenow::{CreatedIncident, NewIncident, ServiceNowClient};
pub use transport::{
    Body, BoxFuture, Endpoint, LiveTransport, Recording, RecordingTransport, ReplayTransport,
    Request, RequestBody, Response, Transport,
};
