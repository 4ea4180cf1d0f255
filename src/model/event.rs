//! Events (everything that happens, the session log's lines) and Commands (what the operator asks).

use super::alert::Alert;
use super::diagnosis::{Check, SubjectObject, Symptom};
use super::facts::Facts;
use super::memory::PastIncident;
use super::types::{
    Action, ActionId, CallId, Category, ChatRole, Evidence, EvidenceId, Finding, Hypothesis, Risk,
    RuledOut, Stage, Verification,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a session's world came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    #[default]
    Live,
    Demo,
    Case,
}

/// How a session ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Diagnosed, and any approved fix verified.
    Resolved,
    /// Diagnosed; no action run (diagnosis only, denied or read-only).
    Diagnosed,
    /// An action ran but verification failed.
    Unresolved,
    Cancelled,
    /// The console was stopped by a signal (SIGINT, SIGQUIT, SIGTERM, SIGHUP); nothing pending
    /// was approved on the way out.
    Interrupted,
    Failed,
    #[default]
    Unknown,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::Diagnosed => "diagnosed",
            Outcome::Unresolved => "unresolved",
            Outcome::Cancelled => "cancelled",
            Outcome::Interrupted => "interrupted",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One thing that happened. The session file holds one per line (wrapped in a [`Record`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        id: String,
        title: String,
        started: DateTime<Utc>,
        mode: RunMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alert: Option<Alert>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        problem: Option<String>,
        /// Case or demo scenario name, when not live.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        case: Option<String>,
        #[serde(default)]
        read_only: bool,
        /// OS user running the session.
        #[serde(default)]
        operator: String,
    },
    SessionEnded {
        outcome: Outcome,
    },
    StageStarted {
        stage: Stage,
    },
    StageFinished {
        stage: Stage,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        summary: String,
    },
    /// Triage's classification: which runbook and specialists were picked, and why.
    Triaged {
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runbook: Option<String>,
        #[serde(default)]
        specialists: Vec<String>,
        /// The world's clock the investigation reasons against (a case's `now`, or the real
        /// time); absent in sessions written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now: Option<DateTime<Utc>>,
        /// The integrations this run had configured, so a saved session knows what was absent
        /// (missing evidence) from what answered; absent in sessions written before it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        integrations: Option<Vec<String>>,
    },
    ToolCalled {
        call_id: CallId,
        /// `<integration>.<verb>`.
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        specialist: Option<String>,
        #[serde(default)]
        params: BTreeMap<String, serde_json::Value>,
    },
    ToolSucceeded {
        call_id: CallId,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        summary: String,
    },
    ToolFailed {
        call_id: CallId,
        duration_ms: u64,
        error: String,
    },
    EvidenceAdded {
        evidence: Evidence,
    },
    /// The typed facts parsed from one evidence item, as the reasoning reads them: what makes a
    /// saved session re-diagnosable. Absent in sessions written before facts were recorded.
    Observed {
        evidence_id: EvidenceId,
        /// The evidence kind (`kubernetes/pods`, `metrics`, ...), as on the evidence item.
        kind: String,
        facts: Facts,
    },
    /// Extra lines appended to an existing text evidence item (streaming logs).
    EvidenceAppended {
        evidence_id: String,
        text: String,
    },
    Finding {
        finding: Finding,
    },
    /// Diagnosis step 1: the objects the alert or problem is about, and how each was found.
    Subject {
        objects: Vec<SubjectObject>,
        /// The Kubernetes cluster the objects were read in, when several are configured or the
        /// alert names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<String>,
    },
    /// Diagnosis step 2: what the alert claims, measured.
    Symptom {
        symptom: Symptom,
    },
    /// Diagnosis step 3: the checks on the subject and its neighbours, each with its status.
    Checks {
        checks: Vec<Check>,
    },
    HypothesesRanked {
        hypotheses: Vec<Hypothesis>,
        #[serde(default)]
        ruled_out: Vec<RuledOut>,
    },
    Diagnosis {
        category: Category,
        root_cause: String,
        confidence: f32,
    },
    ActionProposed {
        action: Action,
    },
    ApprovalRequested {
        action_id: ActionId,
        risk: Risk,
        /// Medium risk: seconds until the action runs unless vetoed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        veto_secs: Option<f64>,
        /// Distinct operators that must approve (2 for critical).
        approvals_needed: u8,
        /// [`Action::digest`] of the action as shown: a decision counts only for this version.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        digest: String,
    },
    /// The parameters were edited before approval: the action as it now stands (target, risk
    /// and operation recomputed). Earlier approvals lapse; a new request follows.
    ActionEdited {
        action: Action,
        by: String,
    },
    /// An operator is looking at a medium-risk action: its veto countdown stops until decided.
    VetoPaused {
        action_id: ActionId,
        by: String,
    },
    ApprovalGiven {
        action_id: ActionId,
        by: String,
        at: DateTime<Utc>,
        /// How the decision reached the session when it did not come from the session's own
        /// console or stdin: `api from ADDR`, `sitrep approve (uid N)`. Empty otherwise.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        via: String,
        /// The digest of the version approved.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        digest: String,
        /// Parameters as edited by the approver, when changed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<BTreeMap<String, serde_json::Value>>,
    },
    ApprovalDenied {
        action_id: ActionId,
        by: String,
        at: DateTime<Utc>,
        reason: String,
        /// How the decision reached the session when it did not come from the session's own
        /// console or stdin: `api from ADDR`, `sitrep approve (uid N)`. Empty otherwise.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        via: String,
    },
    /// The request lapsed with no decision; the action does not run.
    ApprovalExpired {
        action_id: ActionId,
        at: DateTime<Utc>,
    },
    ActionExecuted {
        action_id: ActionId,
        duration_ms: u64,
        result: String,
    },
    ActionFailed {
        action_id: ActionId,
        error: String,
    },
    /// Policy refused to run it (read-only, replay, denied).
    ActionSkipped {
        action_id: ActionId,
        reason: String,
    },
    Verified {
        verification: Verification,
    },
    ChatMessage {
        from: ChatRole,
        text: String,
    },
    Report {
        markdown: String,
    },
    /// Part of the agent's chat answer as a model streams it; the closing `ChatMessage` holds
    /// the whole answer.
    ChatDelta {
        text: String,
    },
    /// One request to a model and its raw answer, as sent and received (the body only: no
    /// headers, so no key), so an LLM investigation replays and evaluates with no model.
    ModelExchange {
        /// `investigate` or `chat`.
        purpose: String,
        step: u32,
        provider: String,
        model: String,
        request: serde_json::Value,
        /// The whole response text (the stream as it arrived).
        raw: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default)]
        tokens_in: u64,
        #[serde(default)]
        tokens_out: u64,
    },
    /// A specialist needs a credential by reference (`op://...`) before it can ask its
    /// integration anything: the operator decides whether it may be read for this session.
    CredentialRequested {
        /// The reference, never the value.
        reference: String,
        integration: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        specialist: Option<String>,
    },
    /// The operator's decision on a credential reference, for the rest of the session.
    CredentialDecided {
        reference: String,
        approved: bool,
        by: String,
        at: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// A non-fatal problem worth showing on the timeline.
    Warning {
        message: String,
    },
    /// Triage's look into memory: the past sessions for the same alert fingerprint, the same
    /// alert and subject, or the same subject and verdict, newest first, as they were then.
    Recalled {
        sessions: Vec<PastIncident>,
        /// How many past sessions matched (`sessions` keeps the newest of them).
        #[serde(default)]
        total: usize,
    },
    /// An operator's note on this session (`/note TEXT`), shown by every later recall.
    Note {
        text: String,
        #[serde(default)]
        by: String,
        at: DateTime<Utc>,
    },
}

impl Event {
    /// The snake_case tag, as written in the session file.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::SessionEnded { .. } => "session_ended",
            Event::StageStarted { .. } => "stage_started",
            Event::StageFinished { .. } => "stage_finished",
            Event::Triaged { .. } => "triaged",
            Event::ToolCalled { .. } => "tool_called",
            Event::ToolSucceeded { .. } => "tool_succeeded",
            Event::ToolFailed { .. } => "tool_failed",
            Event::EvidenceAdded { .. } => "evidence_added",
            Event::Observed { .. } => "observed",
            Event::EvidenceAppended { .. } => "evidence_appended",
            Event::Finding { .. } => "finding",
            Event::HypothesesRanked { .. } => "hypotheses_ranked",
            Event::Subject { .. } => "subject",
            Event::Symptom { .. } => "symptom",
            Event::Checks { .. } => "checks",
            Event::Diagnosis { .. } => "diagnosis",
            Event::ActionProposed { .. } => "action_proposed",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ActionEdited { .. } => "action_edited",
            Event::VetoPaused { .. } => "veto_paused",
            Event::ApprovalGiven { .. } => "approval_given",
            Event::ApprovalDenied { .. } => "approval_denied",
            Event::ApprovalExpired { .. } => "approval_expired",
            Event::ActionExecuted { .. } => "action_executed",
            Event::ActionFailed { .. } => "action_failed",
            Event::ActionSkipped { .. } => "action_skipped",
            Event::Verified { .. } => "verified",
            Event::ChatMessage { .. } => "chat_message",
            Event::Report { .. } => "report",
            Event::ChatDelta { .. } => "chat_delta",
            Event::ModelExchange { .. } => "model_exchange",
            Event::CredentialRequested { .. } => "credential_requested",
            Event::CredentialDecided { .. } => "credential_decided",
            Event::Warning { .. } => "warning",
            Event::Recalled { .. } => "recalled",
            Event::Note { .. } => "note",
        }
    }
}

/// One session-file line after the header: seconds since the start, and the event.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Record {
    pub t: f64,
    pub event: Event,
}

/// The session file's first line.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SessionHeader {
    pub sitrep_session: u32,
    pub id: String,
    pub started: DateTime<Utc>,
    pub title: String,
}

/// What the operator (UI, stdin in headless mode, or `sitrep approve`) asks the agent to do.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    Approve {
        action_id: ActionId,
        /// Never trusted: a decision is recorded under the decider its channel establishes (the
        /// session operator for the console and headless stdin; the authenticated caller for the
        /// API; the file's owner for `sitrep approve`), whatever this says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// Parameter edits, merged into the action's parameters. An edit that changes the
        /// action is shown again and needs a fresh approval; it never approves by itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<BTreeMap<String, serde_json::Value>>,
        /// The digest of the version being approved (from `approval_requested`); when given it
        /// must match the action as it stands.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// Stop a medium-risk veto countdown while the operator looks at the action.
    PauseVeto {
        action_id: ActionId,
    },
    Deny {
        action_id: ActionId,
        #[serde(default)]
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    Chat {
        text: String,
    },
    /// Allow the credential `ref` to be read for this session.
    ApproveCredential {
        #[serde(rename = "ref")]
        reference: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Refuse the credential `ref` for this session: the specialists that need it fail.
    DenyCredential {
        #[serde(rename = "ref")]
        reference: String,
        #[serde(default)]
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Attach a note to the session (`/note TEXT`): later recalls show it.
    Note {
        text: String,
    },
    Cancel,
    /// A problem outside the investigation worth recording in it (a notification that could not
    /// be sent), from the process running the session; never read from operator input.
    #[serde(skip_deserializing)]
    Warning {
        message: String,
    },
    /// The console is going away (a signal): stop, decide nothing, end as `interrupted`.
    Interrupt {
        #[serde(default)]
        reason: String,
    },
}
