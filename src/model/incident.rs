//! The incident: a pure fold of events. Live mode and replay both build it with `Incident::apply`.

use super::alert::Alert;
use super::diagnosis::{Check, CheckStatus, SubjectObject, Symptom};
use super::event::{Event, Outcome, RunMode};
use super::memory::{OperatorNote, PastIncident, seen_before};
use super::types::{
    Action, ActionId, CallId, Category, ChatRole, Evidence, EvidenceBody, Finding, Hypothesis,
    Risk, RuledOut, Stage, Verification,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    #[default]
    Pending,
    Running,
    Done,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct StageState {
    pub status: StageStatus,
    pub started_at: Option<f64>,
    pub finished_at: Option<f64>,
    pub summary: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ToolCallState {
    pub call_id: CallId,
    pub tool: String,
    pub specialist: Option<String>,
    pub params: BTreeMap<String, serde_json::Value>,
    pub started_at: f64,
    pub duration_ms: Option<u64>,
    /// None while running; Some(Ok(summary)) or Some(Err(error)) when done.
    pub outcome: Option<Result<String, String>>,
    pub evidence: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    #[default]
    Proposed,
    AwaitingApproval,
    Approved,
    Denied,
    Expired,
    Executed,
    Failed,
    Skipped,
}

impl ActionStatus {
    pub fn name(self) -> &'static str {
        match self {
            ActionStatus::Proposed => "proposed",
            ActionStatus::AwaitingApproval => "awaiting approval",
            ActionStatus::Approved => "approved",
            ActionStatus::Denied => "denied",
            ActionStatus::Expired => "expired",
            ActionStatus::Executed => "executed",
            ActionStatus::Failed => "failed",
            ActionStatus::Skipped => "skipped",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Approval {
    pub by: String,
    /// How the decision arrived when not from the session's own console (`api from ADDR`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub via: String,
    pub at: DateTime<Utc>,
    pub approved: bool,
    pub reason: String,
}

/// ` (api from 10.0.0.5:41234)` after a decider's name, or nothing for the session's own console.
pub fn via_note(via: &str) -> String {
    if via.is_empty() {
        String::new()
    } else {
        format!(" ({via})")
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ActionState {
    pub action: Action,
    pub status: ActionStatus,
    pub proposed_at: f64,
    /// Set while an approval is pending.
    pub requested_at: Option<f64>,
    pub veto_secs: Option<f64>,
    pub approvals_needed: u8,
    /// The digest of the version last shown for approval (`ApprovalRequested`).
    #[serde(default)]
    pub digest: String,
    /// A medium-risk countdown an operator stopped by opening the action.
    #[serde(default)]
    pub veto_paused: bool,
    pub decisions: Vec<Approval>,
    pub result: Option<Result<String, String>>,
    pub duration_ms: Option<u64>,
    pub verification: Option<Verification>,
}

impl ActionState {
    pub fn approvals(&self) -> usize {
        self.decisions.iter().filter(|d| d.approved).count()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChatEntry {
    pub t: f64,
    pub from: ChatRole,
    pub text: String,
    /// An answer still streaming in (`ChatDelta`s); the closing `ChatMessage` replaces it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streaming: bool,
}

/// What a timeline row refers to, so the evidence panel can show the right thing.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TimelineKind {
    Session,
    Stage {
        stage: Stage,
    },
    Tool {
        call_id: CallId,
    },
    Evidence {
        evidence_id: String,
    },
    Finding {
        index: usize,
    },
    Hypotheses,
    Diagnosis,
    Action {
        action_id: ActionId,
    },
    Decision {
        action_id: ActionId,
    },
    Verification {
        action_id: Option<ActionId>,
    },
    Chat,
    Report,
    Warning,
    /// What memory recalled, or an operator's note.
    Memory,
}

/// One row on the incident timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TimelineItem {
    pub t: f64,
    pub stage: Option<Stage>,
    pub kind: TimelineKind,
    pub text: String,
}

/// A credential reference a specialist asked to use.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CredentialState {
    pub reference: String,
    pub integration: String,
    /// `None` while waiting for the operator; then approved or not.
    pub approved: Option<bool>,
    pub by: Option<String>,
}

impl Incident {
    /// The first credential reference still waiting for the operator's decision.
    pub fn pending_credential(&self) -> Option<&CredentialState> {
        self.credentials.iter().find(|c| c.approved.is_none())
    }
}

/// The incident as the operator sees it, folded from events.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Incident {
    pub id: String,
    pub title: String,
    pub started: Option<DateTime<Utc>>,
    pub mode: RunMode,
    pub case: Option<String>,
    pub read_only: bool,
    pub operator: String,
    pub alert: Option<Alert>,
    pub problem: Option<String>,
    /// Seconds since start of the last event folded.
    pub now: f64,
    pub events: usize,
    pub stages: [StageState; 8],
    pub current_stage: Option<Stage>,
    pub triage: Option<String>,
    pub runbook: Option<String>,
    pub specialists: Vec<String>,
    pub tools: Vec<ToolCallState>,
    /// Evidence items in arrival order. Bodies are immutable behind `Arc`: a copy of the fold
    /// (a replay keyframe) shares them instead of duplicating them; an append copies one body.
    #[serde(with = "shared_list")]
    pub evidence: Vec<Arc<Evidence>>,
    pub findings: Vec<Finding>,
    pub hypotheses: Vec<Hypothesis>,
    pub ruled_out: Vec<RuledOut>,
    /// Diagnosis step 1: what the alert or problem is about.
    #[serde(default)]
    pub subject: Vec<SubjectObject>,
    /// The Kubernetes cluster the subject was read in, when the session names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Diagnosis step 2: the symptom as measured.
    #[serde(default)]
    pub symptom: Option<Symptom>,
    /// Diagnosis step 3: the checks, failing first.
    #[serde(default)]
    pub checks: Vec<Check>,
    pub diagnosis: Option<(Category, String, f32)>,
    pub actions: Vec<ActionState>,
    pub verifications: Vec<Verification>,
    pub chat: Vec<ChatEntry>,
    /// Model tokens in and out over the session's exchanges.
    #[serde(default)]
    pub model_tokens: (u64, u64),
    /// Model requests made by the investigation (chat excluded).
    #[serde(default)]
    pub model_steps: u32,
    pub report: Option<String>,
    pub warnings: Vec<String>,
    /// Past sessions triage recalled (newest first), and how many matched in all.
    #[serde(default)]
    pub recalled: Vec<PastIncident>,
    #[serde(default)]
    pub recalled_total: usize,
    /// Operators' notes on this session.
    #[serde(default)]
    pub notes: Vec<OperatorNote>,
    pub outcome: Option<Outcome>,
    pub timeline: Vec<TimelineItem>,
    /// Credentials by reference the investigation asked to use, and the operator's decisions.
    #[serde(default)]
    pub credentials: Vec<CredentialState>,
    /// Evidence id -> position in `evidence`, so lookups stay O(1) on long sessions.
    #[serde(skip)]
    pub(crate) evidence_at: IdIndex,
    /// Call id -> position in `tools` of its latest call.
    #[serde(skip)]
    pub(crate) tool_at: IdIndex,
}

/// A list of shared items (de)serialized as the plain list it stands for.
mod shared_list {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub fn serialize<T: Serialize, S: Serializer>(
        items: &[Arc<T>],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(items.iter().map(|item| &**item))
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<Arc<T>>, D::Error> {
        Ok(Vec::<T>::deserialize(d)?
            .into_iter()
            .map(Arc::new)
            .collect())
    }
}

/// A lookup index derived from the fold's own lists. It is not part of the incident's value:
/// two incidents with equal lists are equal whatever their indexes hold, and an incident built
/// without the fold (deserialized, or by hand) falls back to a scan.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdIndex(HashMap<String, usize>);

impl PartialEq for IdIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl IdIndex {
    /// The position recorded for `id`, if `check` confirms it still holds that id.
    fn find(&self, id: &str, check: impl Fn(usize) -> bool) -> Option<usize> {
        self.0.get(id).copied().filter(|&i| check(i))
    }
}

impl Incident {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold one event that happened `t` seconds after the session started.
    pub fn apply(&mut self, t: f64, event: &Event) {
        self.now = self.now.max(t);
        self.events += 1;
        let stage = self.current_stage;
        let push = |this: &mut Self, kind: TimelineKind, text: String| {
            this.timeline.push(TimelineItem {
                t,
                stage,
                kind,
                text,
            });
        };
        match event {
            Event::SessionStarted {
                id,
                title,
                started,
                mode,
                alert,
                problem,
                case,
                read_only,
                operator,
            } => {
                self.id = id.clone();
                self.title = title.clone();
                self.started = Some(*started);
                self.mode = *mode;
                self.alert = alert.clone();
                self.problem = problem.clone();
                self.case = case.clone();
                self.read_only = *read_only;
                self.operator = operator.clone();
                push(
                    self,
                    TimelineKind::Session,
                    format!("session started: {title}"),
                );
            }
            Event::SessionEnded { outcome } => {
                self.outcome = Some(*outcome);
                self.current_stage = None;
                push(
                    self,
                    TimelineKind::Session,
                    format!("session ended: {}", outcome.name()),
                );
            }
            Event::StageStarted { stage } => {
                let st = &mut self.stages[stage.index()];
                st.status = StageStatus::Running;
                st.started_at = Some(t);
                self.current_stage = Some(*stage);
                self.timeline.push(TimelineItem {
                    t,
                    stage: Some(*stage),
                    kind: TimelineKind::Stage { stage: *stage },
                    text: format!("▶ {stage}"),
                });
            }
            Event::StageFinished { stage, summary } => {
                let st = &mut self.stages[stage.index()];
                st.status = StageStatus::Done;
                st.finished_at = Some(t);
                st.summary = summary.clone();
                if !summary.is_empty() {
                    self.timeline.push(TimelineItem {
                        t,
                        stage: Some(*stage),
                        kind: TimelineKind::Stage { stage: *stage },
                        text: format!("✓ {stage}: {summary}"),
                    });
                }
            }
            Event::Triaged {
                summary,
                runbook,
                specialists,
                ..
            } => {
                self.triage = Some(summary.clone());
                self.runbook = runbook.clone();
                self.specialists = specialists.clone();
                push(
                    self,
                    TimelineKind::Stage {
                        stage: Stage::Triage,
                    },
                    summary.clone(),
                );
            }
            Event::ToolCalled {
                call_id,
                tool,
                specialist,
                params,
            } => {
                self.tool_at.0.insert(call_id.clone(), self.tools.len());
                self.tools.push(ToolCallState {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    specialist: specialist.clone(),
                    params: params.clone(),
                    started_at: t,
                    duration_ms: None,
                    outcome: None,
                    evidence: Vec::new(),
                });
                push(
                    self,
                    TimelineKind::Tool {
                        call_id: call_id.clone(),
                    },
                    format!("→ {tool}"),
                );
            }
            Event::ToolSucceeded {
                call_id,
                duration_ms,
                summary,
            } => {
                if let Some(call) = self.tool_mut(call_id) {
                    call.duration_ms = Some(*duration_ms);
                    call.outcome = Some(Ok(summary.clone()));
                }
            }
            Event::ToolFailed {
                call_id,
                duration_ms,
                error,
            } => {
                let tool = match self.tool_mut(call_id) {
                    Some(call) => {
                        call.duration_ms = Some(*duration_ms);
                        call.outcome = Some(Err(error.clone()));
                        call.tool.clone()
                    }
                    None => call_id.clone(),
                };
                push(
                    self,
                    TimelineKind::Tool {
                        call_id: call_id.clone(),
                    },
                    format!("✗ {tool}: {error}"),
                );
            }
            Event::EvidenceAdded { evidence } => {
                if let Some(call_id) = &evidence.call_id
                    && let Some(call) = self.tool_mut(call_id)
                {
                    call.evidence.push(evidence.id.clone());
                }
                let text = format!("◆ {} [{}]", evidence.title, evidence.kind);
                // A repeated id replaces nothing: lookups keep answering with the first item.
                self.evidence_at
                    .0
                    .entry(evidence.id.clone())
                    .or_insert(self.evidence.len());
                self.evidence.push(Arc::new(evidence.clone()));
                push(
                    self,
                    TimelineKind::Evidence {
                        evidence_id: evidence.id.clone(),
                    },
                    text,
                );
            }
            // Facts feed the reasoning (`agent::observe`), not the screen: the evidence item
            // already shows what they were parsed from.
            Event::Observed { .. } => {}
            Event::EvidenceAppended { evidence_id, text } => {
                if let Some(i) = self.evidence_position(evidence_id)
                    && matches!(self.evidence[i].body, EvidenceBody::Text { .. })
                    && let EvidenceBody::Text { text: body, .. } =
                        &mut Arc::make_mut(&mut self.evidence[i]).body
                {
                    // A streamed log grows by many small appends: growing by half rather than
                    // doubling caps a long body's spare capacity at half its text rather than
                    // all of it, for a constant number of extra copies per byte.
                    let need = text.len() + 1;
                    if body.capacity() - body.len() < need {
                        body.reserve_exact(need.max(body.len() / 2));
                    }
                    if !body.is_empty() && !body.ends_with('\n') {
                        body.push('\n');
                    }
                    body.push_str(text);
                }
            }
            Event::Finding { finding } => {
                let index = self.findings.len();
                self.findings.push(finding.clone());
                push(
                    self,
                    TimelineKind::Finding { index },
                    format!("● {} ({:.0}%)", finding.summary, finding.confidence * 100.0),
                );
            }
            Event::Subject { objects, cluster } => {
                self.subject = objects.clone();
                self.cluster = cluster.clone();
                let named: Vec<String> = objects.iter().map(|o| o.reference()).collect();
                let mut text = if named.is_empty() {
                    "subject: nothing resolved from the alert's labels or the problem's words"
                        .to_string()
                } else {
                    format!("subject: {}", named.join(", "))
                };
                if let Some(c) = cluster {
                    text.push_str(&format!(" (cluster {c})"));
                }
                push(self, TimelineKind::Hypotheses, text);
            }
            Event::Symptom { symptom } => {
                self.symptom = Some(symptom.clone());
                let text = format!("symptom {}: {}", symptom.state.name(), symptom.detail);
                push(self, TimelineKind::Hypotheses, text);
            }
            Event::Checks { checks } => {
                self.checks = checks.clone();
                let count = |s: CheckStatus| checks.iter().filter(|c| c.status == s).count();
                let text = format!(
                    "checks: {} failing, {} history, {} ok, {} unknown",
                    count(CheckStatus::Failing),
                    count(CheckStatus::History),
                    count(CheckStatus::Ok),
                    count(CheckStatus::Unknown)
                );
                push(self, TimelineKind::Hypotheses, text);
            }
            Event::HypothesesRanked {
                hypotheses,
                ruled_out,
            } => {
                self.hypotheses = hypotheses.clone();
                self.ruled_out = ruled_out.clone();
                let top = hypotheses
                    .first()
                    .map(|h| format!("{} ({:.0}%)", h.statement, h.confidence * 100.0))
                    .unwrap_or_else(|| "no hypothesis".into());
                push(
                    self,
                    TimelineKind::Hypotheses,
                    format!(
                        "{} hypotheses, {} ruled out; top: {top}",
                        hypotheses.len(),
                        ruled_out.len()
                    ),
                );
            }
            Event::Diagnosis {
                category,
                root_cause,
                confidence,
            } => {
                self.diagnosis = Some((*category, root_cause.clone(), *confidence));
                push(
                    self,
                    TimelineKind::Diagnosis,
                    format!("diagnosis [{category}]: {root_cause}"),
                );
            }
            Event::ActionProposed { action } => {
                self.actions.push(ActionState {
                    action: action.clone(),
                    status: ActionStatus::Proposed,
                    proposed_at: t,
                    requested_at: None,
                    veto_secs: None,
                    approvals_needed: 0,
                    digest: String::new(),
                    veto_paused: false,
                    decisions: Vec::new(),
                    result: None,
                    duration_ms: None,
                    verification: None,
                });
                push(
                    self,
                    TimelineKind::Action {
                        action_id: action.id.clone(),
                    },
                    format!("⚑ {} {} [{} risk]", action.kind, action.target, action.risk),
                );
            }
            Event::ApprovalRequested {
                action_id,
                risk,
                veto_secs,
                approvals_needed,
                digest,
            } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::AwaitingApproval;
                    a.requested_at = Some(t);
                    a.veto_secs = *veto_secs;
                    a.veto_paused = false;
                    a.approvals_needed = *approvals_needed;
                    a.digest = digest.clone();
                }
                let how = match (risk, veto_secs) {
                    (Risk::Medium, Some(s)) => format!("runs in {s:.0}s unless vetoed"),
                    (Risk::Critical, _) => format!("needs {approvals_needed} distinct operators"),
                    _ => "needs explicit approval".into(),
                };
                push(
                    self,
                    TimelineKind::Decision {
                        action_id: action_id.clone(),
                    },
                    format!("? approval requested for {action_id} ({risk}): {how}"),
                );
            }
            Event::ActionEdited { action, by } => {
                if let Some(a) = self.action_mut(&action.id) {
                    a.action = action.clone();
                    a.status = ActionStatus::Proposed;
                    a.requested_at = None;
                    a.decisions.clear();
                    a.digest.clear();
                }
                push(
                    self,
                    TimelineKind::Action {
                        action_id: action.id.clone(),
                    },
                    format!(
                        "✎ {} edited by {by}: {} {} [{} risk]",
                        action.id, action.kind, action.target, action.risk
                    ),
                );
            }
            Event::VetoPaused { action_id, by } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.veto_paused = true;
                }
                push(
                    self,
                    TimelineKind::Decision {
                        action_id: action_id.clone(),
                    },
                    format!("⏸ {action_id}: countdown paused by {by} until decided"),
                );
            }
            Event::ApprovalGiven {
                action_id,
                by,
                at,
                via,
                ..
            } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.decisions.push(Approval {
                        by: by.clone(),
                        via: via.clone(),
                        at: *at,
                        approved: true,
                        reason: String::new(),
                    });
                    if a.approvals() >= usize::from(a.approvals_needed.max(1)) {
                        a.status = ActionStatus::Approved;
                        a.requested_at = None;
                    }
                }
                push(
                    self,
                    TimelineKind::Decision {
                        action_id: action_id.clone(),
                    },
                    format!("✔ {action_id} approved by {by}{}", via_note(via)),
                );
            }
            Event::ApprovalDenied {
                action_id,
                by,
                at,
                reason,
                via,
            } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.decisions.push(Approval {
                        by: by.clone(),
                        via: via.clone(),
                        at: *at,
                        approved: false,
                        reason: reason.clone(),
                    });
                    a.status = ActionStatus::Denied;
                    a.requested_at = None;
                }
                push(
                    self,
                    TimelineKind::Decision {
                        action_id: action_id.clone(),
                    },
                    format!("✘ {action_id} denied by {by}{}: {reason}", via_note(via)),
                );
            }
            Event::ApprovalExpired { action_id, .. } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Expired;
                    a.requested_at = None;
                }
                push(
                    self,
                    TimelineKind::Decision {
                        action_id: action_id.clone(),
                    },
                    format!("⌛ approval for {action_id} expired"),
                );
            }
            Event::ActionExecuted {
                action_id,
                duration_ms,
                result,
            } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Executed;
                    a.result = Some(Ok(result.clone()));
                    a.duration_ms = Some(*duration_ms);
                }
                push(
                    self,
                    TimelineKind::Action {
                        action_id: action_id.clone(),
                    },
                    format!("⚙ {action_id} executed: {result}"),
                );
            }
            Event::ActionFailed { action_id, error } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Failed;
                    a.result = Some(Err(error.clone()));
                }
                push(
                    self,
                    TimelineKind::Action {
                        action_id: action_id.clone(),
                    },
                    format!("✗ {action_id} failed: {error}"),
                );
            }
            Event::ActionSkipped { action_id, reason } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Skipped;
                    a.result = Some(Err(reason.clone()));
                    a.requested_at = None;
                }
                push(
                    self,
                    TimelineKind::Action {
                        action_id: action_id.clone(),
                    },
                    format!("⊘ {action_id} not run: {reason}"),
                );
            }
            Event::Verified { verification } => {
                if let Some(id) = &verification.action_id
                    && let Some(a) = self.action_mut(id)
                {
                    a.verification = Some(verification.clone());
                }
                self.verifications.push(verification.clone());
                let mark = if verification.passed {
                    "✔ verified"
                } else {
                    "✗ verification failed"
                };
                push(
                    self,
                    TimelineKind::Verification {
                        action_id: verification.action_id.clone(),
                    },
                    format!("{mark}: {}", verification.summary),
                );
            }
            Event::ChatMessage { from, text } => {
                if let Some(last) = self.chat.last_mut()
                    && last.streaming
                    && last.from == *from
                {
                    last.text = text.clone();
                    last.streaming = false;
                } else {
                    self.chat.push(ChatEntry {
                        t,
                        from: *from,
                        text: text.clone(),
                        streaming: false,
                    });
                }
            }
            Event::ChatDelta { text } => match self.chat.last_mut() {
                Some(last) if last.streaming => last.text.push_str(text),
                _ => self.chat.push(ChatEntry {
                    t,
                    from: ChatRole::Agent,
                    text: text.clone(),
                    streaming: true,
                }),
            },
            Event::ModelExchange {
                purpose,
                step,
                error,
                tokens_in,
                tokens_out,
                ..
            } => {
                if purpose == "investigate" {
                    self.model_steps += 1;
                }
                self.model_tokens.0 += tokens_in;
                self.model_tokens.1 += tokens_out;
                if let Some(e) = error {
                    push(
                        self,
                        TimelineKind::Warning,
                        format!("! model {purpose} step {step} failed: {e}"),
                    );
                }
            }
            Event::Report { markdown } => {
                self.report = Some(markdown.clone());
                push(self, TimelineKind::Report, "report written".into());
            }
            Event::Warning { message } => {
                self.warnings.push(message.clone());
                push(self, TimelineKind::Warning, format!("! {message}"));
            }
            Event::Recalled { sessions, total } => {
                // A second recall (after the verdict) adds what the first did not find.
                let first = self.recalled.is_empty();
                for s in sessions {
                    if !self.recalled.iter().any(|r| r.id == s.id) {
                        self.recalled.push(s.clone());
                    }
                }
                self.recalled.sort_by_key(|s| std::cmp::Reverse(s.started));
                self.recalled_total += (*total).max(sessions.len());
                let text = match (sessions.is_empty(), first) {
                    (true, _) => "memory: not seen before".to_string(),
                    (false, true) => format!(
                        "memory: seen before: {}",
                        seen_before(sessions, *total, self.started).join("; ")
                    ),
                    (false, false) => format!(
                        "memory: same subject and verdict before: {}",
                        sessions
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                push(self, TimelineKind::Memory, text);
            }
            Event::Note { text, by, at } => {
                self.notes.push(OperatorNote {
                    text: text.clone(),
                    by: by.clone(),
                    at: *at,
                });
                push(self, TimelineKind::Memory, format!("note by {by}: {text}"));
            }
            Event::CredentialRequested {
                reference,
                integration,
                ..
            } => {
                if !self.credentials.iter().any(|c| &c.reference == reference) {
                    self.credentials.push(CredentialState {
                        reference: reference.clone(),
                        integration: integration.clone(),
                        approved: None,
                        by: None,
                    });
                }
                push(
                    self,
                    TimelineKind::Warning,
                    format!(
                        "? {integration} needs credential {reference}: approve its use for this session?"
                    ),
                );
            }
            Event::CredentialDecided {
                reference,
                approved,
                by,
                reason,
                ..
            } => {
                match self
                    .credentials
                    .iter_mut()
                    .find(|c| &c.reference == reference)
                {
                    Some(c) => {
                        c.approved = Some(*approved);
                        c.by = Some(by.clone());
                    }
                    None => self.credentials.push(CredentialState {
                        reference: reference.clone(),
                        approved: Some(*approved),
                        by: Some(by.clone()),
                        ..CredentialState::default()
                    }),
                }
                let text = if *approved {
                    format!("credential {reference} approved by {by} for this session")
                } else if reason.is_empty() {
                    format!("credential {reference} denied by {by}")
                } else {
                    format!("credential {reference} denied by {by}: {reason}")
                };
                push(self, TimelineKind::Warning, text);
            }
        }
    }

    /// [`Incident::apply`] taking the event by value: an evidence body moves into the fold
    /// instead of being copied, which for a log of a million lines is a hundred megabytes.
    pub fn apply_owned(&mut self, t: f64, event: Event) {
        match event {
            Event::EvidenceAdded { mut evidence } => {
                let body = std::mem::replace(
                    &mut evidence.body,
                    EvidenceBody::Text {
                        language: String::new(),
                        text: String::new(),
                    },
                );
                let items = self.evidence.len();
                self.apply(t, &Event::EvidenceAdded { evidence });
                // The item just pushed is not shared yet.
                if self.evidence.len() > items
                    && let Some(added) = self.evidence.last_mut().and_then(Arc::get_mut)
                {
                    added.body = body;
                }
            }
            other => self.apply(t, &other),
        }
    }

    /// An `evidence_added` of `evidence`, an item another fold already holds: the fold shares it
    /// rather than holding a second copy of its body.
    pub fn apply_shared(&mut self, t: f64, evidence: Arc<Evidence>) {
        let bare = Evidence {
            id: evidence.id.clone(),
            kind: evidence.kind.clone(),
            title: evidence.title.clone(),
            source: evidence.source.clone(),
            call_id: evidence.call_id.clone(),
            body: EvidenceBody::Json {
                value: serde_json::Value::Null,
            },
        };
        let items = self.evidence.len();
        self.apply(t, &Event::EvidenceAdded { evidence: bare });
        if self.evidence.len() > items
            && let Some(added) = self.evidence.last_mut()
        {
            *added = evidence;
        }
    }

    /// Forget the lookup indexes (a stored copy of the fold need not carry them); lookups scan
    /// until [`Incident::reindex`].
    pub fn drop_index(&mut self) {
        self.evidence_at = IdIndex::default();
        self.tool_at = IdIndex::default();
    }

    /// Rebuild the lookup indexes from the lists, as the fold would have left them.
    pub fn reindex(&mut self) {
        let mut evidence = HashMap::with_capacity(self.evidence.len());
        for (i, e) in self.evidence.iter().enumerate() {
            evidence.entry(e.id.clone()).or_insert(i);
        }
        let mut tools = HashMap::with_capacity(self.tools.len());
        for (i, c) in self.tools.iter().enumerate() {
            tools.insert(c.call_id.clone(), i);
        }
        self.evidence_at = IdIndex(evidence);
        self.tool_at = IdIndex(tools);
    }

    /// Fold a whole sequence of (t, event).
    pub fn fold<'a>(records: impl IntoIterator<Item = (f64, &'a Event)>) -> Self {
        let mut incident = Self::new();
        for (t, e) in records {
            incident.apply(t, e);
        }
        incident
    }

    pub fn tool(&self, call_id: &str) -> Option<&ToolCallState> {
        self.tool_position(call_id).map(|i| &self.tools[i])
    }

    fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolCallState> {
        self.tool_position(call_id).map(|i| &mut self.tools[i])
    }

    /// The latest call with this id.
    fn tool_position(&self, call_id: &str) -> Option<usize> {
        let tools = &self.tools;
        self.tool_at
            .find(call_id, |i| {
                tools.get(i).is_some_and(|c| c.call_id == call_id)
            })
            .or_else(|| tools.iter().rposition(|c| c.call_id == call_id))
    }

    /// The first evidence item with this id.
    fn evidence_position(&self, id: &str) -> Option<usize> {
        let items = &self.evidence;
        self.evidence_at
            .find(id, |i| items.get(i).is_some_and(|e| e.id == id))
            .or_else(|| items.iter().position(|e| e.id == id))
    }

    pub fn action(&self, id: &str) -> Option<&ActionState> {
        self.actions.iter().find(|a| a.action.id == id)
    }

    fn action_mut(&mut self, id: &str) -> Option<&mut ActionState> {
        self.actions.iter_mut().find(|a| a.action.id == id)
    }

    /// Position in [`Incident::tools`] of the call an id names (the latest with it): the one
    /// a result or evidence for that id updates.
    pub fn tool_index(&self, call_id: &str) -> Option<usize> {
        self.tool_position(call_id)
    }

    /// Position in [`Incident::evidence`] of the item an id names (the first with it).
    pub fn evidence_index(&self, id: &str) -> Option<usize> {
        self.evidence_position(id)
    }

    pub fn evidence(&self, id: &str) -> Option<&Evidence> {
        self.evidence_position(id).map(|i| &*self.evidence[i])
    }

    /// The oldest action still waiting for a decision.
    pub fn pending_approval(&self) -> Option<&ActionState> {
        self.actions
            .iter()
            .find(|a| a.status == ActionStatus::AwaitingApproval)
    }

    /// Evidence kinds consulted, deduplicated, in first-seen order.
    pub fn evidence_kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = Vec::new();
        for e in &self.evidence {
            if !kinds.contains(&e.kind.as_str()) {
                kinds.push(&e.kind);
            }
        }
        kinds
    }

    pub fn severity(&self) -> &str {
        self.alert
            .as_ref()
            .map(|a| a.severity())
            .unwrap_or("unknown")
    }

    pub fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Event;

    fn started() -> Event {
        Event::SessionStarted {
            id: "s1".into(),
            title: "t".into(),
            started: DateTime::parse_from_rfc3339("2026-11-22T09:00:00Z")
                .map(|d| d.to_utc())
                .unwrap_or_default(),
            mode: RunMode::Demo,
            alert: None,
            problem: Some("p".into()),
            case: None,
            read_only: false,
            operator: "alice".into(),
        }
    }

    fn evidence(id: &str, text: &str) -> Event {
        Event::EvidenceAdded {
            evidence: Evidence {
                id: id.into(),
                kind: "logs".into(),
                title: id.into(),
                source: "loki.query_range".into(),
                call_id: None,
                body: EvidenceBody::Text {
                    language: "log".into(),
                    text: text.into(),
                },
            },
        }
    }

    fn body(inc: &Incident, id: &str) -> String {
        match inc.evidence(id).map(|e| &e.body) {
            Some(EvidenceBody::Text { text, .. }) => text.clone(),
            other => panic!("{id}: {other:?}"),
        }
    }

    #[test]
    fn copies_of_the_fold_share_evidence_until_one_appends() {
        let mut inc = Incident::new();
        inc.apply(0.0, &evidence("e1", "a"));
        inc.apply(0.1, &evidence("e2", "x"));
        let snapshot = inc.clone();
        assert!(Arc::ptr_eq(&inc.evidence[0], &snapshot.evidence[0]));
        inc.apply(
            0.2,
            &Event::EvidenceAppended {
                evidence_id: "e1".into(),
                text: "b".into(),
            },
        );
        assert_eq!(body(&inc, "e1"), "a\nb");
        assert_eq!(body(&snapshot, "e1"), "a", "the copy keeps what it saw");
        assert!(Arc::ptr_eq(&inc.evidence[1], &snapshot.evidence[1]));
    }

    #[test]
    fn lookups_work_with_and_without_the_index() {
        let mut inc = Incident::new();
        for i in 0..500 {
            inc.apply(i as f64, &evidence(&format!("e{i}"), &format!("line {i}")));
        }
        // A repeated id: lookups answer with the first item, as a scan would.
        inc.apply(600.0, &evidence("e7", "again"));
        assert_eq!(body(&inc, "e499"), "line 499");
        assert_eq!(body(&inc, "e7"), "line 7");
        assert!(inc.evidence("nope").is_none());
        let indexed = inc.clone();
        inc.drop_index();
        assert_eq!(body(&inc, "e7"), "line 7");
        assert_eq!(inc, indexed, "the index is not part of the value");
        inc.reindex();
        assert_eq!(body(&inc, "e250"), "line 250");
        // Deserialized incidents carry no index and still answer.
        let json = serde_json::to_string(&indexed).unwrap_or_default();
        let back: Incident = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(body(&back, "e499"), "line 499");
    }

    #[test]
    fn critical_action_needs_two_approvals() {
        let action = Action {
            id: "a1".into(),
            kind: "kubernetes.scale".into(),
            target: "deployment/x".into(),
            params: BTreeMap::new(),
            risk: Risk::Critical,
            rationale: "r".into(),
            operation: String::new(),
            blast_radius: String::new(),
            evidence: vec![],
        };
        let at = Utc::now();
        let events = [
            started(),
            Event::ActionProposed { action },
            Event::ApprovalRequested {
                action_id: "a1".into(),
                risk: Risk::Critical,
                veto_secs: None,
                approvals_needed: 2,
                digest: String::new(),
            },
            Event::ApprovalGiven {
                action_id: "a1".into(),
                by: "alice".into(),
                at,
                via: String::new(),
                digest: String::new(),
                params: None,
            },
        ];
        let mut inc = Incident::new();
        for (i, e) in events.iter().enumerate() {
            inc.apply(i as f64, e);
        }
        assert_eq!(
            inc.action("a1").map(|a| a.status),
            Some(ActionStatus::AwaitingApproval)
        );
        inc.apply(
            5.0,
            &Event::ApprovalGiven {
                action_id: "a1".into(),
                by: "bob".into(),
                at,
                via: "sitrep approve (uid 1001)".into(),
                digest: String::new(),
                params: None,
            },
        );
        assert_eq!(
            inc.action("a1").map(|a| a.status),
            Some(ActionStatus::Approved)
        );
        assert!(inc.pending_approval().is_none());
    }

    #[test]
    fn folding_owned_events_matches_folding_borrowed_ones() {
        let append = |id: &str, text: &str| Event::EvidenceAppended {
            evidence_id: id.into(),
            text: text.into(),
        };
        let events = [
            started(),
            evidence("e1", "a"),
            append("e1", "b"),
            evidence("e1", "shadowed"),
            evidence("e2", ""),
            append("e2", "c\n"),
            append("e2", "d"),
            append("missing", "x"),
        ];
        let (mut borrowed, mut owned) = (Incident::new(), Incident::new());
        for (i, e) in events.iter().enumerate() {
            borrowed.apply(i as f64, e);
            owned.apply_owned(i as f64, e.clone());
        }
        assert_eq!(owned, borrowed);
        assert_eq!(body(&owned, "e1"), "a\nb");
        assert_eq!(body(&owned, "e2"), "c\nd");
        assert_eq!(owned.evidence_index("e1"), Some(0));
        assert_eq!(owned.evidence_index("e2"), Some(2));
        assert_eq!(owned.evidence_index("missing"), None);
    }

    #[test]
    fn a_streamed_body_keeps_its_unused_capacity_under_half_its_length() {
        let mut inc = Incident::new();
        inc.apply(0.0, &evidence("log", "first line"));
        for i in 0..20_000 {
            inc.apply(
                i as f64,
                &Event::EvidenceAppended {
                    evidence_id: "log".into(),
                    text: format!("line {i} of a streamed log"),
                },
            );
            if let Some(EvidenceBody::Text { text, .. }) = inc.evidence("log").map(|e| &e.body)
                && text.len() > 4096
            {
                assert!(
                    text.capacity() <= text.len() * 3 / 2 + 64,
                    "{} / {}",
                    text.capacity(),
                    text.len()
                );
            }
        }
    }
}
