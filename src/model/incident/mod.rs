//! The incident: a pure fold of events. Live mode and replay both build it with `Incident::apply`.

use super::alert::Alert;
use super::diagnosis::{Check, SubjectObject, Symptom};
use super::event::{Event, Outcome, RunMode};
use super::memory::{OperatorNote, PastIncident};
use super::types::{
    Action, ActionId, CallId, Category, ChatRole, Evidence, EvidenceBody, Finding, Hypothesis,
    RuledOut, Stage, Verification,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod fold;

use fold::When;

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

    /// Fold one event that happened `t` seconds after the session started. Each group of events
    /// has its own handler (`fold.rs`); this match names every event, so a new one cannot be
    /// left out.
    pub fn apply(&mut self, t: f64, event: &Event) {
        self.now = self.now.max(t);
        self.events += 1;
        let when = When {
            t,
            stage: self.current_stage,
        };
        match event {
            Event::SessionStarted { .. } | Event::SessionEnded { .. } => {
                self.on_session(when, event)
            }
            Event::StageStarted { .. } | Event::StageFinished { .. } | Event::Triaged { .. } => {
                self.on_stage(when, event)
            }
            Event::ToolCalled { .. } | Event::ToolSucceeded { .. } | Event::ToolFailed { .. } => {
                self.on_tool(when, event)
            }
            Event::EvidenceAdded { .. }
            | Event::EvidenceAppended { .. }
            | Event::Observed { .. } => self.on_evidence(when, event),
            Event::Finding { .. }
            | Event::Subject { .. }
            | Event::Symptom { .. }
            | Event::Checks { .. }
            | Event::HypothesesRanked { .. }
            | Event::Diagnosis { .. } => self.on_diagnosis(when, event),
            Event::ActionProposed { .. }
            | Event::ActionEdited { .. }
            | Event::ActionExecuted { .. }
            | Event::ActionFailed { .. }
            | Event::ActionSkipped { .. }
            | Event::Verified { .. } => self.on_action(when, event),
            Event::ApprovalRequested { .. }
            | Event::VetoPaused { .. }
            | Event::ApprovalGiven { .. }
            | Event::ApprovalDenied { .. }
            | Event::ApprovalExpired { .. } => self.on_approval(when, event),
            Event::ChatMessage { .. } | Event::ChatDelta { .. } | Event::ModelExchange { .. } => {
                self.on_chat(when, event)
            }
            Event::Report { .. }
            | Event::Warning { .. }
            | Event::Recalled { .. }
            | Event::Note { .. } => self.on_record(when, event),
            Event::CredentialRequested { .. } | Event::CredentialDecided { .. } => {
                self.on_credential(when, event)
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
    use crate::model::types::Risk;

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
