//! `Incident::apply`'s handlers, one per group of events: each folds its events into the
//! incident's state and adds their rows to the timeline.

use super::{
    ActionState, ActionStatus, Approval, ChatEntry, CredentialState, Incident, StageStatus,
    TimelineItem, TimelineKind, ToolCallState, via_note,
};
use crate::model::diagnosis::CheckStatus;
use crate::model::event::Event;
use crate::model::memory::{OperatorNote, seen_before};
use crate::model::types::{ChatRole, EvidenceBody, Risk, Stage};
use std::sync::Arc;

/// When an event happened: seconds since start, and the stage that was running as it arrived
/// (the stage its timeline row belongs to, even when the event ends that stage).
#[derive(Clone, Copy, Debug)]
pub(super) struct When {
    pub(super) t: f64,
    pub(super) stage: Option<Stage>,
}

impl Incident {
    /// Add a timeline row for an event that arrived at `when`.
    fn mark(&mut self, when: When, kind: TimelineKind, text: String) {
        self.timeline.push(TimelineItem {
            t: when.t,
            stage: when.stage,
            kind,
            text,
        });
    }

    /// Add a timeline row about an action.
    fn mark_action(&mut self, when: When, action_id: &str, text: String) {
        let action_id = action_id.to_string();
        self.mark(when, TimelineKind::Action { action_id }, text);
    }

    /// Add a timeline row about a decision on an action.
    fn mark_decision(&mut self, when: When, action_id: &str, text: String) {
        let action_id = action_id.to_string();
        self.mark(when, TimelineKind::Decision { action_id }, text);
    }

    /// The session's start and end.
    pub(super) fn on_session(&mut self, when: When, event: &Event) {
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
                self.mark(
                    when,
                    TimelineKind::Session,
                    format!("session started: {title}"),
                );
            }
            Event::SessionEnded { outcome } => {
                self.outcome = Some(*outcome);
                self.current_stage = None;
                self.mark(
                    when,
                    TimelineKind::Session,
                    format!("session ended: {}", outcome.name()),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Stages and Triage's plan.
    pub(super) fn on_stage(&mut self, when: When, event: &Event) {
        match event {
            Event::StageStarted { stage } => {
                let st = &mut self.stages[stage.index()];
                st.status = StageStatus::Running;
                st.started_at = Some(when.t);
                self.current_stage = Some(*stage);
                self.timeline.push(TimelineItem {
                    t: when.t,
                    stage: Some(*stage),
                    kind: TimelineKind::Stage { stage: *stage },
                    text: format!("▶ {stage}"),
                });
            }
            Event::StageFinished { stage, summary } => {
                let st = &mut self.stages[stage.index()];
                st.status = StageStatus::Done;
                st.finished_at = Some(when.t);
                st.summary = summary.clone();
                if !summary.is_empty() {
                    self.timeline.push(TimelineItem {
                        t: when.t,
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
                self.mark(
                    when,
                    TimelineKind::Stage {
                        stage: Stage::Triage,
                    },
                    summary.clone(),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Tool calls and their outcomes.
    pub(super) fn on_tool(&mut self, when: When, event: &Event) {
        match event {
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
                    started_at: when.t,
                    duration_ms: None,
                    outcome: None,
                    evidence: Vec::new(),
                });
                self.mark(
                    when,
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
                self.mark(
                    when,
                    TimelineKind::Tool {
                        call_id: call_id.clone(),
                    },
                    format!("✗ {tool}: {error}"),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Evidence items and their streamed bodies; `Observed` facts feed the reasoning, not the incident.
    pub(super) fn on_evidence(&mut self, when: When, event: &Event) {
        match event {
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
                self.mark(
                    when,
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
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// The Diagnose stage's steps: findings, subject, symptom, checks, hypotheses, verdict.
    pub(super) fn on_diagnosis(&mut self, when: When, event: &Event) {
        match event {
            Event::Finding { finding } => {
                let index = self.findings.len();
                self.findings.push(finding.clone());
                self.mark(
                    when,
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
                self.mark(when, TimelineKind::Hypotheses, text);
            }
            Event::Symptom { symptom } => {
                self.symptom = Some(symptom.clone());
                let text = format!("symptom {}: {}", symptom.state.name(), symptom.detail);
                self.mark(when, TimelineKind::Hypotheses, text);
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
                self.mark(when, TimelineKind::Hypotheses, text);
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
                self.mark(
                    when,
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
                self.mark(
                    when,
                    TimelineKind::Diagnosis,
                    format!("diagnosis [{category}]: {root_cause}"),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Actions: proposed, edited, carried out, verified.
    pub(super) fn on_action(&mut self, when: When, event: &Event) {
        match event {
            Event::ActionProposed { action } => {
                self.actions.push(ActionState {
                    action: action.clone(),
                    status: ActionStatus::Proposed,
                    proposed_at: when.t,
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
                self.mark_action(
                    when,
                    &action.id,
                    format!("⚑ {} {} [{} risk]", action.kind, action.target, action.risk),
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
                self.mark_action(
                    when,
                    &action.id,
                    format!(
                        "✎ {} edited by {by}: {} {} [{} risk]",
                        action.id, action.kind, action.target, action.risk
                    ),
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
                self.mark_action(when, action_id, format!("⚙ {action_id} executed: {result}"));
            }
            Event::ActionFailed { action_id, error } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Failed;
                    a.result = Some(Err(error.clone()));
                }
                self.mark_action(when, action_id, format!("✗ {action_id} failed: {error}"));
            }
            Event::ActionSkipped { action_id, reason } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Skipped;
                    a.result = Some(Err(reason.clone()));
                    a.requested_at = None;
                }
                self.mark_action(when, action_id, format!("⊘ {action_id} not run: {reason}"));
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
                self.mark(
                    when,
                    TimelineKind::Verification {
                        action_id: verification.action_id.clone(),
                    },
                    format!("{mark}: {}", verification.summary),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Approval requests and the decisions on them.
    pub(super) fn on_approval(&mut self, when: When, event: &Event) {
        match event {
            Event::ApprovalRequested {
                action_id,
                risk,
                veto_secs,
                approvals_needed,
                digest,
            } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::AwaitingApproval;
                    a.requested_at = Some(when.t);
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
                self.mark_decision(
                    when,
                    action_id,
                    format!("? approval requested for {action_id} ({risk}): {how}"),
                );
            }
            Event::VetoPaused { action_id, by } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.veto_paused = true;
                }
                self.mark_decision(
                    when,
                    action_id,
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
                self.mark_decision(
                    when,
                    action_id,
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
                self.mark_decision(
                    when,
                    action_id,
                    format!("✘ {action_id} denied by {by}{}: {reason}", via_note(via)),
                );
            }
            Event::ApprovalExpired { action_id, .. } => {
                if let Some(a) = self.action_mut(action_id) {
                    a.status = ActionStatus::Expired;
                    a.requested_at = None;
                }
                self.mark_decision(
                    when,
                    action_id,
                    format!("⌛ approval for {action_id} expired"),
                );
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Chat with the operator and the model's exchanges.
    pub(super) fn on_chat(&mut self, when: When, event: &Event) {
        match event {
            Event::ChatMessage { from, text } => {
                if let Some(last) = self.chat.last_mut()
                    && last.streaming
                    && last.from == *from
                {
                    last.text = text.clone();
                    last.streaming = false;
                } else {
                    self.chat.push(ChatEntry {
                        t: when.t,
                        from: *from,
                        text: text.clone(),
                        streaming: false,
                    });
                }
            }
            Event::ChatDelta { text } => match self.chat.last_mut() {
                Some(last) if last.streaming => last.text.push_str(text),
                _ => self.chat.push(ChatEntry {
                    t: when.t,
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
                    self.mark(
                        when,
                        TimelineKind::Warning,
                        format!("! model {purpose} step {step} failed: {e}"),
                    );
                }
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// The report, warnings, what memory recalled and operators' notes.
    pub(super) fn on_record(&mut self, when: When, event: &Event) {
        match event {
            Event::Report { markdown } => {
                self.report = Some(markdown.clone());
                self.mark(when, TimelineKind::Report, "report written".into());
            }
            Event::Warning { message } => {
                self.warnings.push(message.clone());
                self.mark(when, TimelineKind::Warning, format!("! {message}"));
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
                self.mark(when, TimelineKind::Memory, text);
            }
            Event::Note { text, by, at } => {
                self.notes.push(OperatorNote {
                    text: text.clone(),
                    by: by.clone(),
                    at: *at,
                });
                self.mark(when, TimelineKind::Memory, format!("note by {by}: {text}"));
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }

    /// Credentials the investigation asked to use, and the operator's decisions.
    pub(super) fn on_credential(&mut self, when: When, event: &Event) {
        match event {
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
                self.mark(when, TimelineKind::Warning,
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
                self.mark(when, TimelineKind::Warning, text);
            }
            // `apply` routes only this group's events here.
            _ => {}
        }
    }
}
