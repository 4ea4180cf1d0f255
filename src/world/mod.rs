//! What a run talks to: the world and its clients, live from config or replayed from a recorded
//! case; this file holds the type and what it answers about itself.

mod builders;
pub mod case;
pub mod clients;
pub mod demo;
mod execute;
pub mod inflate;
mod live;
mod replay;
mod tickets;

pub use case::{Case, CaseError, Effect, Expect};
pub use execute::is_executable;

use crate::integrations::transport::{ReplayTransport, Transport};
use crate::integrations::{
    AlertmanagerClient, DatadogClient, GitHubClient, JiraClient, KubernetesClient, LokiClient,
    PagerDutyClient, PostgresClient, PrometheusClient, ServiceNowClient,
};
use crate::model::catalog;
use crate::secrets::Keyring;
use chrono::{DateTime, Utc};
use execute::executable;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Why a world could not be built.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error(transparent)]
    Case(#[from] CaseError),
    #[error("{0}")]
    Config(String),
    #[error("kubernetes: {0}")]
    Kube(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How the world answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Live,
    /// Live, and every exchange written to a case directory.
    Recording,
    /// Answers from a case's recordings; actions are simulated and apply `effects.toml`.
    Replay,
}

/// A world: the clients an investigation uses, and in replay the case it comes from. `Send + Sync`.
pub struct World {
    mode: Mode,
    case: Option<Case>,
    transport: Arc<dyn Transport>,
    replay: Option<Arc<ReplayTransport>>,
    overlays: BTreeMap<String, Vec<crate::integrations::stored::RawRecording>>,
    applied: Mutex<Vec<usize>>,
    github_repo: Option<String>,
    kubernetes: KubernetesClient,
    /// Clusters by name when several are configured (or recorded), the default first; empty for
    /// one cluster configured the single way.
    clusters: Vec<String>,
    prometheus: PrometheusClient,
    loki: LokiClient,
    alertmanager: AlertmanagerClient,
    github: GitHubClient,
    pagerduty: PagerDutyClient,
    datadog: DatadogClient,
    mcp: crate::integrations::mcp::McpClient,
    /// MCP servers this world can reach: configured (live) or recorded (replay).
    mcp_servers: Vec<String>,
    postgres: PostgresClient,
    /// Credentials by reference this world may use, each once the operator approved it.
    keyring: Arc<Keyring>,
    /// Where tickets are filed (Jira, ServiceNow): live even when the rest of the world replays.
    tickets: Option<Arc<dyn Transport>>,
    jira: JiraClient,
    servicenow: ServiceNowClient,
    ticket_sinks: Vec<TicketSink>,
}

/// A configured place to file the investigation's ticket: the action kind, its target and the
/// params the configuration fixes (project, issue type, category, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct TicketSink {
    pub kind: String,
    pub target: String,
    pub params: catalog::Params,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("mode", &self.mode)
            .field("case", &self.case.as_ref().map(|c| &c.id))
            .finish_non_exhaustive()
    }
}

const DEFAULT_NAMESPACE: &str = "default";

impl World {
    /// A world over any transport (tests, embedders).
    pub fn with_transport(
        transport: Arc<dyn Transport>,
        mode: Mode,
        namespace: &str,
        github_repo: Option<String>,
    ) -> World {
        World {
            mode,
            case: None,
            replay: None,
            overlays: BTreeMap::new(),
            applied: Mutex::new(Vec::new()),
            github_repo,
            kubernetes: KubernetesClient::new(transport.clone(), namespace),
            clusters: Vec::new(),
            prometheus: PrometheusClient::new(transport.clone()),
            loki: LokiClient::new(transport.clone()),
            alertmanager: AlertmanagerClient::new(transport.clone()),
            github: GitHubClient::new(transport.clone()),
            pagerduty: PagerDutyClient::new(transport.clone()),
            datadog: DatadogClient::new(transport.clone()),
            mcp: crate::integrations::mcp::McpClient::new(transport.clone()),
            mcp_servers: Vec::new(),
            postgres: PostgresClient::new(transport.clone()),
            keyring: Arc::default(),
            tickets: None,
            jira: JiraClient::new(transport.clone()),
            servicenow: ServiceNowClient::new(transport.clone()),
            ticket_sinks: Vec::new(),
            transport,
        }
    }

    /// Where this world files tickets, as configured.
    pub fn ticket_sinks(&self) -> &[TicketSink] {
        &self.ticket_sinks
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn is_replay(&self) -> bool {
        self.mode == Mode::Replay
    }

    /// The case this world replays, if any.
    pub fn case(&self) -> Option<&Case> {
        self.case.as_ref()
    }

    /// The world's clock: the case's `now` in replay, the real time otherwise.
    pub fn now(&self) -> DateTime<Utc> {
        match &self.case {
            Some(c) if self.mode == Mode::Replay => c.now,
            _ => Utc::now(),
        }
    }

    /// Whether `integration` can be asked anything (configured live, or present in the recordings).
    pub fn has(&self, integration: &str) -> bool {
        self.transport.has(integration) || self.tickets.as_ref().is_some_and(|t| t.has(integration))
    }

    /// The configured GitHub repository (`owner/name`), if any.
    pub fn github_repo(&self) -> Option<&str> {
        self.github_repo.as_deref()
    }

    pub fn kubernetes(&self) -> &KubernetesClient {
        &self.kubernetes
    }

    /// The clusters by name, the default first; empty when one cluster is configured unnamed.
    pub fn clusters(&self) -> &[String] {
        &self.clusters
    }

    /// Asks the cluster of that name from now on by default (its requests name it).
    pub fn with_clusters(mut self, clusters: Vec<String>) -> World {
        if let Some(first) = clusters.first() {
            self.kubernetes = self.kubernetes.in_cluster(Some(first));
        }
        self.clusters = clusters;
        self
    }

    /// The client of the named cluster, or of the default one; an unknown name is an error that
    /// lists the configured ones.
    pub fn kubernetes_in(&self, cluster: Option<&str>) -> Result<KubernetesClient, String> {
        match cluster.filter(|c| !c.is_empty()) {
            None => Ok(self.kubernetes.clone()),
            Some(c) if self.clusters.iter().any(|n| n == c) => {
                Ok(self.kubernetes.in_cluster(Some(c)))
            }
            Some(c) if self.clusters.is_empty() => Err(format!(
                "no cluster named {c:?}: one cluster is configured, unnamed"
            )),
            Some(c) => Err(format!(
                "no cluster named {c:?}; configured: {}",
                self.clusters.join(", ")
            )),
        }
    }
    pub fn prometheus(&self) -> &PrometheusClient {
        &self.prometheus
    }
    pub fn loki(&self) -> &LokiClient {
        &self.loki
    }

    pub fn datadog(&self) -> &DatadogClient {
        &self.datadog
    }
    pub fn alertmanager(&self) -> &AlertmanagerClient {
        &self.alertmanager
    }
    pub fn github(&self) -> &GitHubClient {
        &self.github
    }
    pub fn pagerduty(&self) -> &PagerDutyClient {
        &self.pagerduty
    }
    pub fn mcp(&self) -> &crate::integrations::mcp::McpClient {
        &self.mcp
    }
    /// The kinds this world knows: the built-in table and the MCP tools registered so far.
    pub fn catalog(&self) -> catalog::Catalog {
        self.mcp.catalog()
    }
    /// [`is_executable`], knowing the MCP tools this world registered.
    pub fn is_executable(&self, kind: &str) -> bool {
        executable(self.catalog().lookup(kind))
    }
    /// The MCP servers this world reaches (configured, or recorded in the case).
    pub fn mcp_servers(&self) -> &[String] {
        &self.mcp_servers
    }

    /// The transport every request goes through (AWS reads are free functions over it).
    pub fn transport(&self) -> &dyn Transport {
        self.transport.as_ref()
    }

    pub fn postgres(&self) -> &PostgresClient {
        &self.postgres
    }

    /// The credentials by reference this world uses, and the operator's decisions on them.
    pub fn keyring(&self) -> &Arc<Keyring> {
        &self.keyring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_world_is_shared_across_tasks() {
        fn shareable<T: Send + Sync + 'static>() {}
        shareable::<World>();
        shareable::<Arc<World>>();
    }
}
