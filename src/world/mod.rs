//! What a run talks to: the live world built from config, or a recorded case directory.

pub mod case;
pub mod clients;
pub mod demo;
pub mod inflate;

pub use case::{Case, CaseError, Effect, Expect};

use crate::config::{Config, ResolvedAuth};
use crate::integrations::transport::{
    Endpoint, LazyAuth, LiveTransport, RecordingTransport, ReplayTransport, RetryPolicy,
    SecretHeader, Transport,
};
use crate::integrations::{
    AlertmanagerClient, DatadogClient, ErrorKind, GitHubClient, IntegrationError, JiraClient,
    KubernetesClient, LokiClient, NewIncident, NewIssue, PagerDutyClient, PostgresClient,
    PrometheusClient, ResourceChange, ServiceNowClient, SilenceSpec,
};
use crate::model::catalog::{self, ActionKind, Handler};
use crate::model::{Action, WebhookPayload};
use crate::secrets::{Keyring, SecretRef};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// Whether [`World::execute`] can carry out actions of `kind`: every mutating catalog entry has
/// an executor arm (the dispatch matches [`ActionKind`] exhaustively); anything else is answered
/// with an [`ErrorKind::Manual`] error saying what the operator should run instead.
pub fn is_executable(kind: &str) -> bool {
    executable(catalog::lookup(kind))
}

fn executable(entry: Option<&catalog::Entry>) -> bool {
    match entry {
        Some(e) => {
            matches!(e.handler, Handler::Act(_)) || (e.handler == Handler::External && e.mutating)
        }
        None => false,
    }
}

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

    /// Loads a case directory and replays it.
    pub fn from_case_dir(dir: impl AsRef<Path>) -> Result<World, WorldError> {
        let dir = dir.as_ref();
        let files = case::read_dir(dir)?;
        let loaded = case::load(&dir.display().to_string(), &files, Some(dir.to_path_buf()))?;
        Ok(Self::from_loaded(loaded))
    }

    /// Loads a case from (relative path, contents) pairs, e.g. an embedded demo case.
    pub fn from_case_files(name: &str, files: Vec<(String, String)>) -> Result<World, WorldError> {
        let files: BTreeMap<String, String> = files
            .into_iter()
            .map(|(path, text)| {
                // Embedded cases may carry their directory in the path; only the file name matters.
                let file = path.rsplit('/').next().unwrap_or(&path).to_string();
                (file, text)
            })
            .collect();
        let loaded = case::load(name, &files, None)?;
        Ok(Self::from_loaded(loaded))
    }

    fn from_loaded(loaded: case::LoadedCase) -> World {
        let github_repo = recorded_github_repo(&loaded.recordings);
        let mcp_servers = recorded_mcp_servers(&loaded.recordings);
        let clusters = recorded_clusters(&loaded.recordings);
        let replay = Arc::new(ReplayTransport::from_raw(loaded.recordings));
        let namespace = loaded
            .case
            .alert
            .as_ref()
            .and_then(|a| a.primary().label("namespace").map(str::to_string))
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
        let transport: Arc<dyn Transport> = replay.clone();
        let mut world = World::with_transport(transport, Mode::Replay, &namespace, github_repo)
            .with_clusters(clusters);
        world.case = Some(loaded.case);
        world.replay = Some(replay);
        world.overlays = loaded.overlays;
        world.mcp_servers = mcp_servers;
        world
    }

    /// In a replaying world, answer each request after a delay in `min..=max` (see
    /// `ReplayTransport::set_pace`); no effect on a live world.
    pub fn set_pace(&self, min: std::time::Duration, max: std::time::Duration) {
        if let Some(replay) = &self.replay {
            replay.set_pace(min, max);
        }
    }

    /// In a replaying world, count the bytes of every answer too (see [`World::traffic`]).
    pub fn count_traffic(&self) {
        if let Some(replay) = &self.replay {
            replay.count_bytes();
        }
    }

    /// In a replaying world, the requests answered, the bytes counted since
    /// [`World::count_traffic`] and the time counting took; `None` for a live world.
    pub fn traffic(&self) -> Option<(u64, u64, Duration)> {
        self.replay.as_ref().map(|r| r.traffic())
    }

    /// In a replaying world, wait only the latencies the recordings carry (see
    /// `ReplayTransport::pace_recorded_only`); no effect on a live world.
    pub fn pace_recorded_only(&self) {
        if let Some(replay) = &self.replay {
            replay.pace_recorded_only();
        }
    }

    /// The live world: one client per configured integration.
    pub async fn live(config: &Config) -> Result<World, WorldError> {
        let keyring = Arc::new(Keyring::new());
        let (transport, namespace, repo) = live_transport(config, &keyring).await?;
        let transport = with_mcp(config, transport).await;
        let mut world = World::with_transport(transport, Mode::Live, &namespace, repo)
            .with_clusters(cluster_names(config));
        world.mcp_servers = mcp_names(config);
        world.keyring = keyring;
        world.with_tickets(config)
    }

    /// Files tickets where the configuration says (`[integrations.jira]`,
    /// `[integrations.servicenow]`), over HTTP whatever the rest of the world is: a replayed case
    /// is investigated again, but its ticket is a real one. Each credential is registered with
    /// the world's keyring and read only once the operator approves it.
    pub fn with_tickets(mut self, config: &Config) -> Result<World, WorldError> {
        let int = &config.integrations;
        if int.jira.is_none() && int.servicenow.is_none() {
            return Ok(self);
        }
        let mut t = LiveTransport::new()
            .map_err(|e| WorldError::Config(e.to_string()))?
            .with_keyring(self.keyring.clone());
        let mut sinks = Vec::new();
        let text = |s: &str| Value::String(s.to_string());
        let basic = |key: &str, integration: &str, user: &str, secret: &str| {
            let reference =
                SecretRef::parse(secret).map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
            self.keyring.register(integration, &reference);
            Ok::<_, WorldError>(LazyAuth::Basic {
                username: user.to_string(),
                reference: reference.to_string(),
            })
        };
        let jira_auth = match &int.jira {
            Some(j) => Some(basic(
                "integrations.jira.api_token",
                "jira",
                &j.email,
                &j.api_token,
            )?),
            None => None,
        };
        let servicenow_auth = match &int.servicenow {
            Some(n) => Some(basic(
                "integrations.servicenow.password",
                "servicenow",
                &n.username,
                &n.password,
            )?),
            None => None,
        };
        if let (Some(j), Some(auth)) = (&int.jira, jira_auth) {
            let mut ep = endpoint(&j.url, j.timeout_secs, None, Some(auth));
            ep.headers
                .push(("Accept".into(), "application/json".into()));
            t = t.with_endpoint("jira", ep);
            let mut params = catalog::Params::new();
            params.insert("project".into(), text(&j.project));
            params.insert("issue_type".into(), text(&j.issue_type));
            if !j.labels.is_empty() {
                params.insert("labels".into(), text(&j.labels.join(",")));
            }
            sinks.push(TicketSink {
                kind: "jira.create_issue".into(),
                target: format!("project/{}", j.project),
                params,
            });
        }
        if let (Some(n), Some(auth)) = (&int.servicenow, servicenow_auth) {
            let mut ep = endpoint(&n.url, n.timeout_secs, None, Some(auth));
            ep.headers
                .push(("Accept".into(), "application/json".into()));
            t = t.with_endpoint("servicenow", ep);
            let mut params = catalog::Params::new();
            params.insert("category".into(), text(&n.category));
            sinks.push(TicketSink {
                kind: "servicenow.create_incident".into(),
                target: format!("category/{}", n.category),
                params,
            });
        }
        let redactor = t.redactor().and_secrets(
            config
                .secret_values()
                .iter()
                .map(|s| secrecy::ExposeSecret::expose_secret(s).to_string()),
        );
        let t: Arc<dyn Transport> = Arc::new(t);
        let mut jira = JiraClient::new(t.clone()).with_redactor(redactor.clone());
        if let Some(j) = &int.jira {
            jira = jira.with_site(j.url.clone());
        }
        let mut servicenow = ServiceNowClient::new(t.clone()).with_redactor(redactor);
        if let Some(n) = &int.servicenow {
            servicenow = servicenow.with_instance(n.url.clone());
        }
        self.jira = jira;
        self.servicenow = servicenow;
        self.tickets = Some(t);
        self.ticket_sinks = sinks;
        Ok(self)
    }

    /// Where this world files tickets, as configured.
    pub fn ticket_sinks(&self) -> &[TicketSink] {
        &self.ticket_sinks
    }

    /// The live world, recording every exchange into `dir` (`sitrep investigate --record DIR`), which then
    /// replays as a case. Writes case.toml (the clock is now) and alert.json when there is a trigger alert.
    pub async fn record(
        config: &Config,
        dir: &Path,
        title: &str,
        alert: Option<&WebhookPayload>,
    ) -> Result<World, WorldError> {
        let keyring = Arc::new(Keyring::new());
        let (live, namespace, repo) = live_transport(config, &keyring).await?;
        // Everything written to the case is masked like a response: it is shared with others.
        let redactor = live.redactor().clone();
        let io = |path: PathBuf| move |source| WorldError::Io { path, source };
        std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
        let now = Utc::now();
        let id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("recorded")
            .to_string();
        let meta = case::CaseMeta {
            id,
            title: redactor.redact(title).into_owned(),
            now,
            difficulty: None,
            source: Some("recorded with sitrep investigate --record".into()),
        };
        let meta_text = toml::to_string(&meta).map_err(|e| WorldError::Config(e.to_string()))?;
        let case_path = dir.join("case.toml");
        std::fs::write(&case_path, meta_text).map_err(io(case_path))?;
        if let Some(alert) = alert {
            let mut alert = alert.clone();
            redactor.redact_payload(&mut alert);
            let text = serde_json::to_string_pretty(&alert)
                .map_err(|e| WorldError::Config(e.to_string()))?;
            let alert_path = dir.join("alert.json");
            std::fs::write(&alert_path, text).map_err(io(alert_path))?;
        }
        let live = with_mcp(config, live).await;
        let recording = RecordingTransport::new(live, dir)
            .map_err(io(dir.join("recordings.ndjson")))?
            .with_redactor(redactor);
        let mut world =
            World::with_transport(Arc::new(recording), Mode::Recording, &namespace, repo)
                .with_clusters(cluster_names(config));
        world.mcp_servers = mcp_names(config);
        world.keyring = keyring;
        world.with_tickets(config)
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

    /// Runs a mutating action. In replay the call is answered from the recordings when it can be, is
    /// otherwise simulated, and then `effects.toml` is applied so later reads see the world after it.
    pub async fn execute(&self, action: &Action) -> Result<String, IntegrationError> {
        let outcome = self.dispatch(action).await;
        if self.mode != Mode::Replay {
            return outcome;
        }
        let message = match outcome {
            Ok(m) => m,
            Err(e) if e.is_no_recording() => {
                format!("{} {}: simulated (replay)", action.kind, action.target)
            }
            Err(e) => return Err(e),
        };
        let applied = self.apply_effects(action);
        if !applied.is_empty() {
            // How the recorded world switches recordings is ours, not the operator's: it goes to
            // the log file, never into the action's result.
            tracing::debug!(action = %action.kind, recordings = %applied.join(", "), "effects applied");
        }
        Ok(message)
    }

    fn apply_effects(&self, action: &Action) -> Vec<String> {
        let (Some(case), Some(replay)) = (&self.case, &self.replay) else {
            return Vec::new();
        };
        let Ok(mut applied) = self.applied.lock() else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for (i, effect) in case.effects.iter().enumerate() {
            let target_ok = effect.target.as_deref().is_none_or(|t| t == action.target);
            if effect.action != action.kind || !target_ok || applied.contains(&i) {
                continue;
            }
            if let Some(recs) = self.overlays.get(&effect.recordings) {
                replay.overlay_raw(recs.clone());
                applied.push(i);
                names.push(effect.recordings.clone());
            }
        }
        names
    }

    async fn dispatch(&self, action: &Action) -> Result<String, IntegrationError> {
        let integration = action
            .kind
            .split_once('.')
            .map(|(i, _)| i)
            .unwrap_or(action.kind.as_str());
        let catalog = self.catalog();
        if catalog
            .lookup(&action.kind)
            .is_some_and(|e| e.handler == Handler::External && e.mutating)
        {
            let args = Value::Object(action.params.clone().into_iter().collect());
            return self.mcp.call(&action.kind, &args).await;
        }
        let Some(Handler::Act(kind)) = catalog::lookup(&action.kind).map(|e| e.handler) else {
            let what = if action.operation.trim().is_empty() {
                format!("carry out {} on {} by hand", action.kind, action.target)
            } else {
                action.operation.clone()
            };
            return Err(IntegrationError::new(
                integration,
                &action.kind,
                ErrorKind::Manual(what),
            ));
        };
        let invalid =
            |m: String| IntegrationError::new(integration, &action.kind, ErrorKind::Invalid(m));
        // Target and params must name the same object; a missing name param comes from the target.
        let mut params = action.params.clone();
        catalog::reconcile(&action.kind, &action.target, &mut params).map_err(invalid)?;
        let param = |k: &str| params.get(k);
        let param_str = |k: &str| param(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let param_u64 = |k: &str| match param(k) {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().trim_start_matches('#').parse().ok(),
            _ => None,
        };
        let default_u64 = |k: &str| {
            catalog::lookup(&action.kind)
                .and_then(|e| e.param(k))
                .and_then(|p| p.default)
                .and_then(|d| d.parse::<u64>().ok())
        };
        let kube = if integration == "kubernetes" {
            self.kubernetes_in(param_str("cluster")).map_err(invalid)?
        } else {
            self.kubernetes.clone()
        };
        let ns = param_str("namespace").unwrap_or(kube.default_namespace());
        let name =
            |k: &str| param_str(k).ok_or_else(|| invalid(format!("{} needs a `{k}`", action.kind)));
        match kind {
            ActionKind::RolloutRestart => {
                kube.rollout_restart(ns, name("deployment")?, self.now())
                    .await
            }
            ActionKind::RolloutUndo => kube.rollout_undo(ns, name("deployment")?).await,
            ActionKind::Scale => {
                let replicas = param_u64("replicas")
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| invalid("scale needs a `replicas` number".into()))?;
                kube.scale(ns, name("deployment")?, replicas).await
            }
            ActionKind::DeletePod => {
                let force = matches!(param("force"), Some(Value::Bool(true)))
                    || param_str("force") == Some("true");
                let grace = match param("grace_period_seconds") {
                    _ if force => Some(0),
                    None | Some(Value::Null) => None,
                    Some(_) => Some(
                        param_u64("grace_period_seconds")
                            .and_then(|g| u32::try_from(g).ok())
                            .ok_or_else(|| {
                                invalid("`grace_period_seconds` must be a whole number".into())
                            })?,
                    ),
                };
                kube.delete_pod_with_grace(ns, name("pod")?, grace).await
            }
            ActionKind::SetResources => {
                let change = resource_change(&params).map_err(invalid)?;
                kube.set_resources(ns, name("deployment")?, &change).await
            }
            ActionKind::Cordon => kube.cordon(name("node")?).await,
            ActionKind::Drain => {
                let node = name("node")?;
                let report = kube.drain(node).await?;
                if report.complete() {
                    Ok(report.summary())
                } else {
                    // The node is cordoned and the other pods have moved, but it is not empty yet.
                    Err(IntegrationError::new(
                        integration,
                        format!("drain node/{node}"),
                        ErrorKind::Other(format!("drain incomplete: {}", report.summary())),
                    ))
                }
            }
            ActionKind::Silence => {
                // Every matcher shown is sent: dropping one would silence more than was approved.
                let mut matchers: Vec<(String, String)> = Vec::new();
                if let Some(Value::Object(m)) = param("matchers") {
                    for (k, v) in m {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                return Err(invalid(format!(
                                    "silence matcher `{k}` must be a label value, not {v}"
                                )));
                            }
                        };
                        matchers.push((k.clone(), v));
                    }
                }
                if matchers.is_empty() {
                    return Err(invalid("silence needs at least one label matcher".into()));
                }
                const MAX_MINUTES: u64 = 7 * 24 * 60;
                let minutes = match param("duration_minutes") {
                    None | Some(Value::Null) => default_u64("duration_minutes").unwrap_or(60),
                    Some(_) => param_u64("duration_minutes")
                        .filter(|m| (1..=MAX_MINUTES).contains(m))
                        .ok_or_else(|| {
                            invalid(format!(
                                "`duration_minutes` must be a whole number from 1 to {MAX_MINUTES}"
                            ))
                        })?,
                };
                let starts_at = Utc::now();
                let spec = SilenceSpec {
                    matchers,
                    starts_at,
                    ends_at: starts_at + chrono::Duration::minutes(minutes as i64),
                    created_by: param_str("created_by").unwrap_or("sitrep").to_string(),
                    comment: if action.rationale.is_empty() {
                        "silenced during incident response".into()
                    } else {
                        action.rationale.clone()
                    },
                };
                let id = self.alertmanager.create_silence(&spec).await?;
                Ok(format!("silence {id} created for {minutes} minutes"))
            }
            ActionKind::ExpireSilence => {
                let id = name("silence_id")?;
                self.alertmanager.expire_silence(id).await?;
                Ok(format!("silence {id} expired"))
            }
            ActionKind::PagerDutyAcknowledge | ActionKind::PagerDutyResolve => {
                let id = name("incident_id")?;
                let wanted = if kind == ActionKind::PagerDutyAcknowledge {
                    "acknowledged"
                } else {
                    "resolved"
                };
                let status = self.pagerduty.set_status(id, wanted).await?;
                Ok(format!("incident {id} is now {status}"))
            }
            ActionKind::PagerDutyAddNote => {
                let id = name("incident_id")?;
                let note = self.pagerduty.add_note(id, name("content")?).await?;
                Ok(format!("note {note} added to incident {id}"))
            }
            ActionKind::PostgresCancelBackend | ActionKind::PostgresTerminateBackend => {
                let pid = param_u64("pid")
                    .and_then(|p| i64::try_from(p).ok())
                    .filter(|p| *p > 0)
                    .ok_or_else(|| invalid(format!("{} needs a backend `pid`", action.kind)))?;
                if kind == ActionKind::PostgresCancelBackend {
                    self.postgres.cancel_backend(pid).await
                } else {
                    self.postgres.terminate_backend(pid).await
                }
            }
            ActionKind::JiraCreateIssue => {
                let labels = param_str("labels")
                    .map(|l| {
                        l.split(',')
                            .map(|x| x.trim().to_string())
                            .filter(|x| !x.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                let issue = NewIssue {
                    project: name("project")?.to_string(),
                    issue_type: param_str("issue_type").unwrap_or("Task").to_string(),
                    summary: name("summary")?.to_string(),
                    description: param_str("description").unwrap_or_default().to_string(),
                    labels,
                };
                let created = self.jira.create_issue(&issue).await?;
                Ok(if created.url.is_empty() {
                    format!("Jira issue {} created", created.key)
                } else {
                    format!("Jira issue {} created: {}", created.key, created.url)
                })
            }
            ActionKind::ServiceNowCreateIncident => {
                let level = |k: &str| {
                    param_u64(k)
                        .or_else(|| default_u64(k))
                        .map(|v| u8::try_from(v).unwrap_or(u8::MAX))
                        .unwrap_or(2)
                };
                let incident = NewIncident {
                    short_description: name("short_description")?.to_string(),
                    description: param_str("description").unwrap_or_default().to_string(),
                    urgency: level("urgency"),
                    impact: level("impact"),
                    category: name("category")?.to_string(),
                };
                let created = self.servicenow.create_incident(&incident).await?;
                Ok(if created.url.is_empty() {
                    format!("ServiceNow incident {} created", created.number)
                } else {
                    format!(
                        "ServiceNow incident {} created: {}",
                        created.number, created.url
                    )
                })
            }
            ActionKind::RevertPr => {
                let repo = param_str("repo")
                    .or(self.github_repo.as_deref())
                    .ok_or_else(|| invalid("revert_pr needs a `repo`".into()))?;
                let number = param_u64("pull")
                    .or_else(|| param_u64("number"))
                    .ok_or_else(|| invalid("revert_pr needs a pull request number".into()))?;
                let url = self.github.revert_pr(repo, number).await?;
                Ok(format!("revert pull request opened: {url}"))
            }
        }
    }
}

/// The resource change an action asks for: flat `memory_limit`, `memory_request`, `cpu_limit`,
/// `cpu_request` params (as analyzers propose them) and/or `limits` / `requests` objects.
fn resource_change(params: &BTreeMap<String, Value>) -> Result<ResourceChange, String> {
    let text = |key: &str, v: &Value| match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(format!("`{key}` must be a quantity such as 1Gi or 500m")),
    };
    let mut change = ResourceChange {
        container: match params.get("container") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
            Some(_) => return Err("`container` must be a container name".into()),
        },
        ..ResourceChange::default()
    };
    for (key, resource, into_limits) in [
        ("memory_limit", "memory", true),
        ("memory_request", "memory", false),
        ("cpu_limit", "cpu", true),
        ("cpu_request", "cpu", false),
    ] {
        if let Some(v) = params.get(key) {
            let target = if into_limits {
                &mut change.limits
            } else {
                &mut change.requests
            };
            target.insert(resource.to_string(), text(key, v)?);
        }
    }
    for (key, into_limits) in [("limits", true), ("requests", false)] {
        match params.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (resource, v) in m {
                    let q = text(&format!("{key}.{resource}"), v)?;
                    let target = if into_limits {
                        &mut change.limits
                    } else {
                        &mut change.requests
                    };
                    target.insert(resource.clone(), q);
                }
            }
            Some(_) => {
                return Err(format!(
                    "`{key}` must be an object such as {{\"memory\": \"1Gi\"}}"
                ));
            }
        }
    }
    if change.limits.is_empty() && change.requests.is_empty() {
        return Err(
            "set_resources needs at least one of `memory_limit`, `memory_request`, `cpu_limit`, `cpu_request`, `limits`, `requests`".into(),
        );
    }
    Ok(change)
}

fn resolve_auth(
    config: &Config,
    key: &str,
    auth: Option<&crate::config::Auth>,
) -> Result<Option<ResolvedAuth>, WorldError> {
    let path = config
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.toml"));
    auth.map(|a| a.resolve(&path, key))
        .transpose()
        .map_err(|e| WorldError::Config(e.to_string()))
}

/// An `auth` whose secret is an `op://` or `vault://` reference: registered with the keyring and
/// read on first use, after approval. `None` for environment variables (read at start, as ever).
fn lazy_auth(
    key: &str,
    integration: &str,
    auth: Option<&crate::config::Auth>,
    keyring: &Keyring,
) -> Result<Option<LazyAuth>, WorldError> {
    use crate::config::Auth;
    let Some(auth) = auth else { return Ok(None) };
    let text = auth.secret_env();
    if !(text.starts_with("op://") || text.starts_with("vault://")) {
        return Ok(None);
    }
    let reference =
        SecretRef::parse(text).map_err(|e| WorldError::Config(format!("{key}.auth: {e}")))?;
    keyring.register(integration, &reference);
    let reference = reference.to_string();
    Ok(Some(match auth {
        Auth::Bearer { .. } => LazyAuth::Bearer { reference },
        Auth::Basic { username, .. } => LazyAuth::Basic {
            username: username.clone(),
            reference,
        },
        Auth::Header { header, .. } => LazyAuth::Header {
            name: header.clone(),
            reference,
        },
    }))
}

/// The auth an endpoint sends: read now (environment), or later by reference (keyring).
fn endpoint_auth(
    config: &Config,
    integration: &str,
    auth: Option<&crate::config::Auth>,
    keyring: &Keyring,
) -> Result<(Option<ResolvedAuth>, Option<LazyAuth>), WorldError> {
    let key = format!("integrations.{integration}");
    match lazy_auth(&key, integration, auth, keyring)? {
        Some(lazy) => Ok((None, Some(lazy))),
        None => Ok((resolve_auth(config, &key, auth)?, None)),
    }
}

fn endpoint(
    url: &str,
    timeout_secs: u64,
    auth: Option<ResolvedAuth>,
    lazy: Option<LazyAuth>,
) -> Endpoint {
    let mut ep = Endpoint::new(url)
        .timeout(Duration::from_secs(timeout_secs.max(1)))
        .auth(auth);
    ep.lazy_auth = lazy;
    ep
}

/// The live transport with the configured MCP servers connected in front of it (integration `mcp`).
async fn with_mcp(config: &Config, live: LiveTransport) -> Arc<dyn Transport> {
    if config.mcp.servers.is_empty() {
        return Arc::new(live);
    }
    let redactor = live.redactor().clone();
    Arc::new(
        crate::integrations::mcp::McpGateway::connect(
            &config.mcp.servers,
            Arc::new(live),
            redactor,
        )
        .await,
    )
}

fn mcp_names(config: &Config) -> Vec<String> {
    config.mcp.servers.iter().map(|s| s.name.clone()).collect()
}

/// Clusters a case recorded by name (`kubernetes@<cluster>`), in recording order.
fn recorded_clusters(recordings: &[crate::integrations::stored::RawRecording]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in recordings {
        if let Some(name) = r.integration.strip_prefix("kubernetes@")
            && !out.iter().any(|c| c == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// Servers whose tool lists a case recorded (`GET /<server>/tools`), in recording order.
fn recorded_mcp_servers(recordings: &[crate::integrations::stored::RawRecording]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in recordings {
        if r.integration == crate::integrations::mcp::INTEGRATION
            && r.method.eq_ignore_ascii_case("GET")
            && let Some(server) = r.path.trim_start_matches('/').strip_suffix("/tools")
            && !out.iter().any(|s| s == server)
        {
            out.push(server.to_string());
        }
    }
    out
}

/// Builds the live transport from config: (transport, default namespace, GitHub repository).
async fn live_transport(
    config: &Config,
    keyring: &Arc<Keyring>,
) -> Result<(LiveTransport, String, Option<String>), WorldError> {
    let int = &config.integrations;
    let mut t = LiveTransport::new()
        .map_err(|e| WorldError::Config(e.to_string()))?
        .with_keyring(keyring.clone());
    let mut namespace = DEFAULT_NAMESPACE.to_string();
    if let Some(p) = &int.prometheus {
        let (auth, lazy) = endpoint_auth(config, "prometheus", p.auth.as_ref(), keyring)?;
        t = t.with_endpoint("prometheus", endpoint(&p.url, p.timeout_secs, auth, lazy));
    }
    if let Some(a) = &int.alertmanager {
        let (auth, lazy) = endpoint_auth(config, "alertmanager", a.auth.as_ref(), keyring)?;
        t = t.with_endpoint("alertmanager", endpoint(&a.url, a.timeout_secs, auth, lazy));
    }
    if let Some(l) = &int.loki {
        let (auth, lazy) = endpoint_auth(config, "loki", l.auth.as_ref(), keyring)?;
        let mut ep = endpoint(&l.url, l.timeout_secs, auth, lazy);
        if let Some(org) = &l.org_id {
            ep.headers.push(("X-Scope-OrgID".into(), org.clone()));
        }
        t = t.with_endpoint("loki", ep);
    }
    if let Some(p) = &int.pagerduty {
        // PagerDuty wants `Authorization: Token token=KEY`: a bearer-kind secret is sent that way,
        // read now (environment) or by reference once approved.
        let key = "integrations.pagerduty";
        let lazy = match lazy_auth(key, "pagerduty", p.auth.as_ref(), keyring)? {
            Some(LazyAuth::Bearer { reference }) => Some(LazyAuth::Prefixed {
                name: "Authorization".into(),
                prefix: "Token token=".into(),
                reference,
            }),
            other => other,
        };
        let resolved = match lazy {
            Some(_) => None,
            None => resolve_auth(config, key, p.auth.as_ref())?,
        };
        let auth = match resolved {
            Some(ResolvedAuth::Bearer(key)) => {
                let key = secrecy::ExposeSecret::expose_secret(&key).to_string();
                let value = secrecy::SecretString::from(format!("Token token={key}"));
                // The bare key is masked too, should an answer echo it.
                t = t.with_secrets(vec![key]);
                Some(ResolvedAuth::Header {
                    name: "Authorization".into(),
                    value,
                })
            }
            other => other,
        };
        let mut ep = endpoint(&p.url, p.timeout_secs, auth, lazy);
        ep.headers.push((
            "Accept".into(),
            "application/vnd.pagerduty+json;version=2".into(),
        ));
        if let Some(from) = &p.from_email {
            ep.headers.push(("From".into(), from.clone()));
        }
        t = t.with_endpoint("pagerduty", ep);
    }
    if let Some(d) = &int.datadog {
        let mut ep = endpoint(&d.base_url(), d.timeout_secs, None, None);
        for (field, header, reference) in [
            ("api_key", "DD-API-KEY", &d.api_key),
            ("app_key", "DD-APPLICATION-KEY", &d.app_key),
        ] {
            let key = format!("integrations.datadog.{field}");
            let parsed = SecretRef::parse(reference)
                .map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
            let value = match &parsed {
                // An environment variable is read now, as every `auth` is.
                SecretRef::Env(var) => match std::env::var(var) {
                    Ok(v) if !v.is_empty() => SecretHeader::Value(secrecy::SecretString::from(v)),
                    _ => {
                        return Err(WorldError::Config(format!(
                            "{key}: environment variable {var} is not set"
                        )));
                    }
                },
                other => {
                    keyring.register("datadog", other);
                    SecretHeader::Reference(other.to_string())
                }
            };
            ep.secret_headers.push((header.to_string(), value));
        }
        ep.headers
            .push(("Accept".into(), "application/json".into()));
        ep.retry = Some(RetryPolicy::default());
        t = t.with_endpoint("datadog", ep);
    }
    if let Some(pg) = &int.postgres {
        let password = match &pg.password {
            Some(text) => {
                let reference = SecretRef::parse(text).map_err(|e| {
                    WorldError::Config(format!("integrations.postgres.password: {e}"))
                })?;
                keyring.register("postgres", &reference);
                Some(reference.to_string())
            }
            None => None,
        };
        let timeout = Duration::from_secs(pg.timeout_secs.max(1));
        let backend = clients::postgres_backend(pg, password, timeout, keyring.clone())
            .map_err(WorldError::Config)?;
        t = t.with_postgres(backend);
    }
    if let Some(a) = &int.aws {
        // References are registered with the keyring here and read once approved.
        let timeout = Duration::from_secs(a.timeout_secs.max(1));
        let backend =
            clients::aws_backend(a, timeout, keyring.clone()).map_err(WorldError::Config)?;
        t = t.with_aws(backend);
    }
    let mut repo = None;
    if let Some(g) = &int.github {
        let (auth, lazy) = endpoint_auth(config, "github", g.auth.as_ref(), keyring)?;
        let mut ep = endpoint(&g.url, g.timeout_secs, auth, lazy);
        ep.headers
            .push(("Accept".into(), "application/vnd.github+json".into()));
        t = t.with_endpoint("github", ep);
        repo = Some(g.repo.clone());
    }
    if let Some(k) = &int.kubernetes
        && !k.named_clusters().is_empty()
    {
        let timeout = Duration::from_secs(k.timeout_secs.max(1));
        for c in k.named_clusters() {
            let integration = crate::integrations::kubernetes::integration_of(Some(&c.name));
            match (&c.server, &c.context) {
                (Some(url), _) => {
                    let mut ep = endpoint(url, k.timeout_secs, None, None);
                    if let Some(token) = &c.token {
                        let key = format!("integrations.kubernetes.clusters.{}.token", c.name);
                        let reference = SecretRef::parse(token)
                            .map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
                        match &reference {
                            SecretRef::Env(var) => match std::env::var(var) {
                                Ok(v) if !v.is_empty() => {
                                    ep.auth =
                                        Some(ResolvedAuth::Bearer(secrecy::SecretString::from(v)));
                                }
                                _ => {
                                    return Err(WorldError::Config(format!(
                                        "{key}: environment variable {var} is not set"
                                    )));
                                }
                            },
                            other => {
                                keyring.register("kubernetes", other);
                                ep.lazy_auth = Some(LazyAuth::Bearer {
                                    reference: other.to_string(),
                                });
                            }
                        }
                    }
                    t = t.with_endpoint(&integration, ep);
                }
                (None, context) => {
                    let mut one = k.clone();
                    one.context = context.clone();
                    let client = clients::kube_client(&one, timeout).await?;
                    t = t.with_kube_for(&integration, client, timeout);
                }
            }
        }
        if let Some(ns) = &k.namespace {
            namespace = ns.clone();
        }
    } else if let Some(k) = &int.kubernetes {
        let (auth, lazy) = endpoint_auth(config, "kubernetes", k.auth.as_ref(), keyring)?;
        let timeout = Duration::from_secs(k.timeout_secs.max(1));
        if let Some(url) = &k.url {
            t = t.with_endpoint("kubernetes", endpoint(url, k.timeout_secs, auth, lazy));
        } else {
            let client = clients::kube_client(k, timeout).await?;
            namespace = client.default_namespace().to_string();
            t = t.with_kube(client, timeout);
        }
        if let Some(ns) = &k.namespace {
            namespace = ns.clone();
        }
    }
    Ok((t, namespace, repo))
}

/// The configured clusters' names, the default first; empty for one unnamed cluster.
fn cluster_names(config: &Config) -> Vec<String> {
    config
        .integrations
        .kubernetes
        .as_ref()
        .map(|k| k.named_clusters().into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

/// The repository a recorded case talked to (`/repos/OWNER/NAME/...`), so a replay asks for the
/// same changes the live run did even though the config that named it is not part of the case.
fn recorded_github_repo(
    recordings: &[crate::integrations::stored::RawRecording],
) -> Option<String> {
    recordings
        .iter()
        .filter(|r| r.integration == "github")
        .find_map(|r| {
            let mut parts = r.path.strip_prefix("/repos/")?.split('/');
            let (owner, name) = (parts.next()?, parts.next()?);
            (!owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"))
        })
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
