//! The investigation pipeline: stages, parallel specialists, tools, executor and verification.

mod approval;
pub mod approve;
mod chat;
pub mod cloud;
pub mod clusters;
pub mod credentials;
pub mod datadog;
pub mod diagnose;
pub mod evidence;
pub mod follow;
mod journal;
pub mod llm;
mod model;
pub mod observe;
mod pipeline;
mod recommend;
mod report;
mod runbook_steps;
pub mod selection;
pub mod specialists;
pub mod tools;
mod verify;
mod world_tools;

use crate::model::{Command, Outcome, Record, RunMode, WebhookPayload};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use diagnose::{RediagnoseError, Rediagnosis, Verdict, rediagnose, rediagnose_stream};
pub use tools::{Params, ToolOutput, Tools};
pub use world_tools::WorldTools;

/// What starts an investigation.
#[derive(Clone, Debug, PartialEq)]
pub enum Trigger {
    /// An Alertmanager webhook payload (version 4).
    Alert(WebhookPayload),
    /// An engineer's description of the problem.
    Problem(String),
}

/// How the agent runs.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// Refuse every mutating action (`--read-only`).
    pub read_only: bool,
    /// Propose actions but never execute them and never wait for a decision (eval).
    pub diagnosis_only: bool,
    /// OS user running the session; approvals from the console are theirs.
    pub operator: String,
    /// Medium risk: seconds before the action runs unless vetoed.
    pub veto_secs: f64,
    /// How long an approval request waits before it expires; `None` waits until cancelled.
    pub approval_timeout: Option<Duration>,
    /// Session file to write (NDJSON); `None` keeps the session in memory only.
    pub session_path: Option<PathBuf>,
    /// Per tool call.
    pub tool_timeout: Duration,
    /// Per action.
    pub action_timeout: Duration,
    /// Extra runbooks directory, on top of the built-in ones.
    pub runbooks_dir: Option<PathBuf>,
    pub mode: RunMode,
    /// Case or demo scenario name.
    pub case: Option<String>,
    /// Session title; derived from the trigger when `None`.
    pub title: Option<String>,
    /// How often the approvals directory is checked for a second operator's approval.
    pub approval_poll: Duration,
    /// Masks secrets in the trigger and in everything the session records; knows the exact
    /// values of the configured credentials.
    pub redactor: crate::policy::redact::Redactor,
    /// Actions the operator proposed up front (from the inbox: silence, acknowledge, ...). They are
    /// proposed at Recommend with the others and go through the same policy and approval.
    pub proposals: Vec<crate::model::Action>,
    /// Nobody watches this run (`sitrep serve`): medium risk waits for an approval instead of
    /// running when its veto countdown ends.
    pub unattended: bool,
    /// The model that reasons after the analyzers and answers chat; `None` is the rules alone.
    pub model: Option<crate::agent::llm::Model>,
    /// The Kubernetes cluster to read and act on (`--context NAME`), over the alert's own label.
    pub cluster: Option<String>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            read_only: false,
            diagnosis_only: false,
            operator: approve::current_user(),
            veto_secs: crate::policy::DEFAULT_VETO_SECS,
            approval_timeout: None,
            session_path: None,
            tool_timeout: Duration::from_secs(20),
            action_timeout: Duration::from_secs(60),
            runbooks_dir: None,
            mode: RunMode::Live,
            case: None,
            title: None,
            approval_poll: Duration::from_millis(500),
            redactor: crate::policy::redact::Redactor::new(),
            proposals: Vec::new(),
            unattended: false,
            model: None,
            cluster: None,
        }
    }
}

/// Who made a decision, as the process that received it established it (never a name the
/// decision itself claims).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decider {
    /// The identity the two-person rule compares: an OS user, or the name of an API token.
    pub name: String,
    /// How the decision arrived (`api from 10.0.0.5:41234`); empty for the session's own console.
    pub via: String,
}

/// A decision together with the decider the receiving process authenticated (`sitrep serve`).
#[derive(Clone, Debug)]
pub struct Attributed {
    pub decider: Decider,
    pub command: Command,
}

/// A running investigation: its records, a way to steer it, and its task.
pub struct AgentHandle {
    /// Every record, in order, as it is written to the session file.
    pub records: mpsc::UnboundedReceiver<Record>,
    /// Approve, deny, chat, cancel: decisions sent here are the session operator's, whatever
    /// their `by` says.
    pub commands: mpsc::UnboundedSender<Command>,
    /// Decisions by someone the sender authenticated; each is recorded under its decider.
    pub attributed: mpsc::UnboundedSender<Attributed>,
    pub task: JoinHandle<anyhow::Result<Outcome>>,
    pub session_path: Option<PathBuf>,
}

/// Start an investigation against a world (live, a case, or a built-in demo).
pub fn spawn(
    world: Arc<crate::world::World>,
    trigger: Trigger,
    mut opts: AgentOptions,
) -> AgentHandle {
    // A model key by reference waits in the world's keyring for approval like the others.
    if let Some(model) = opts.model.as_mut() {
        model.use_keyring(world.keyring());
    }
    spawn_with(Arc::new(WorldTools(world)), trigger, opts)
}

/// Start an investigation against any [`Tools`] implementation (the world, or a test fake).
pub fn spawn_with(tools: Arc<dyn Tools>, trigger: Trigger, opts: AgentOptions) -> AgentHandle {
    let (rec_tx, records) = mpsc::unbounded_channel();
    let (commands, cmd_rx) = mpsc::unbounded_channel();
    let (attributed, att_rx) = mpsc::unbounded_channel();
    let session_path = opts.session_path.clone();
    let task = tokio::spawn(pipeline::run(tools, trigger, opts, rec_tx, cmd_rx, att_rx));
    AgentHandle {
        records,
        commands,
        attributed,
        task,
        session_path,
    }
}
