//! The stage driver: runs one investigation stage by stage, from the trigger to the report, and
//! hands each stage's work to its module (diagnose, recommend, approval, verify, report).

use super::journal::{Journal, Sink};
use super::specialists::{self, Caller, Scope, lock};
use super::tools::Tools;
use super::{
    AgentOptions, Trigger, approve, chat, diagnose, recommend, report, runbook_steps, verify,
};
use crate::model::{Action, Command, Event, Outcome, Record, Stage};
use crate::policy::{self, PolicyConfig, Rule};
use crate::reason::Observations;
use crate::runbook::{self, Runbook};
use chrono::Utc;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

/// The operator cancelled; the pipeline unwinds and records `Cancelled`.
struct Cancelled;

/// An operator decision forwarded from the command channel.
enum Decision {
    Approve {
        action_id: String,
        params: Option<BTreeMap<String, serde_json::Value>>,
    },
    Deny {
        action_id: String,
        reason: String,
    },
}

struct Run {
    tools: Arc<dyn Tools>,
    journal: Arc<Mutex<Journal>>,
    opts: AgentOptions,
    scope: Scope,
    runbooks: Arc<Vec<Runbook>>,
    token: CancellationToken,
    decisions: mpsc::UnboundedReceiver<Decision>,
    caller: Caller,
}

async fn guard<T>(token: &CancellationToken, fut: impl Future<Output = T>) -> Result<T, Cancelled> {
    tokio::select! {
        biased;
        _ = token.cancelled() => Err(Cancelled),
        v = fut => Ok(v),
    }
}

pub async fn run(
    tools: Arc<dyn Tools>,
    trigger: Trigger,
    opts: AgentOptions,
    rec_tx: mpsc::UnboundedSender<Record>,
    cmd_rx: mpsc::UnboundedReceiver<Command>,
) -> anyhow::Result<Outcome> {
    let world_now = tools.now();
    let (scope, alert, problem) = match &trigger {
        Trigger::Alert(payload) => {
            let alert = payload.primary();
            (Scope::from_alert(&alert, world_now), Some(alert), None)
        }
        Trigger::Problem(text) => (
            Scope::from_problem(text, world_now),
            None,
            Some(text.clone()),
        ),
    };
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| match (&alert, &problem) {
            (Some(a), _) => a.title(),
            (None, Some(p)) => p.chars().take(80).collect(),
            _ => "investigation".into(),
        });
    let started = Utc::now();
    let id = format!(
        "{}-{:08x}",
        started.format("%Y%m%dT%H%M%SZ"),
        started.timestamp_subsec_nanos() ^ std::process::id()
    );
    let sink = match &opts.session_path {
        Some(path) => Sink::create(path, &crate::session::header(&id, started, &title))
            .map_err(|e| anyhow::anyhow!("cannot create session file {}: {e}", path.display()))?,
        None => Sink::None,
    };
    let journal = Arc::new(Mutex::new(Journal::new(sink, rec_tx)));
    lock(&journal).emit(Event::SessionStarted {
        id,
        title,
        started,
        mode: opts.mode,
        alert,
        problem,
        case: opts.case.clone(),
        read_only: opts.read_only,
        operator: opts.operator.clone(),
    });
    let (books, book_errors) = runbook::load(opts.runbooks_dir.as_deref());
    for e in book_errors {
        lock(&journal).emit(Event::Warning {
            message: format!("runbook skipped: {e}"),
        });
    }
    let runbooks = Arc::new(books);
    let token = CancellationToken::new();
    let (dec_tx, decisions) = mpsc::unbounded_channel();
    let dispatcher = tokio::spawn(dispatch(
        cmd_rx,
        dec_tx,
        journal.clone(),
        runbooks.clone(),
        token.clone(),
    ));
    let caller = Caller {
        tools: tools.clone(),
        journal: journal.clone(),
        timeout: opts.tool_timeout,
        specialist: "agent".into(),
        seen: Arc::default(),
    };
    let mut run = Run {
        tools,
        journal: journal.clone(),
        opts,
        scope,
        runbooks,
        token,
        decisions,
        caller,
    };
    let outcome = match run.stages().await {
        Ok(o) => o,
        Err(Cancelled) => {
            let mut j = lock(&journal);
            if let Some(stage) = j.incident.current_stage
                && j.incident.stages[stage.index()].status == crate::model::StageStatus::Running
            {
                j.emit(Event::StageFinished {
                    stage,
                    summary: "cancelled by the operator".into(),
                });
            }
            Outcome::Cancelled
        }
    };
    {
        let mut j = lock(&journal);
        j.emit(Event::SessionEnded { outcome });
        let _ = j.sync();
    }
    dispatcher.abort();
    Ok(outcome)
}

/// Commands from the operator: chat is answered at once, decisions go to the Approve stage,
/// cancel stops the run.
async fn dispatch(
    mut cmds: mpsc::UnboundedReceiver<Command>,
    decisions: mpsc::UnboundedSender<Decision>,
    journal: Arc<Mutex<Journal>>,
    runbooks: Arc<Vec<Runbook>>,
    token: CancellationToken,
) {
    while let Some(cmd) = cmds.recv().await {
        match cmd {
            Command::Chat { text } => {
                let mut j = lock(&journal);
                j.emit(Event::ChatMessage {
                    from: crate::model::ChatRole::Operator,
                    text: text.clone(),
                });
                let reply = chat::answer(&text, &j.incident, &runbooks);
                j.emit(Event::ChatMessage {
                    from: crate::model::ChatRole::Agent,
                    text: reply,
                });
            }
            Command::Approve {
                action_id, params, ..
            } => {
                let _ = decisions.send(Decision::Approve { action_id, params });
            }
            Command::Deny {
                action_id, reason, ..
            } => {
                let _ = decisions.send(Decision::Deny { action_id, reason });
            }
            Command::Cancel => token.cancel(),
        }
    }
}

impl Run {
    fn emit(&self, event: Event) {
        lock(&self.journal).emit(event);
    }

    fn start(&self, stage: Stage) {
        self.emit(Event::StageStarted { stage });
    }

    fn finish(&self, stage: Stage, summary: impl Into<String>) {
        self.emit(Event::StageFinished {
            stage,
            summary: summary.into(),
        });
    }

    fn check(&self) -> Result<(), Cancelled> {
        if self.token.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    async fn stages(&mut self) -> Result<Outcome, Cancelled> {
        // Triage
        self.start(Stage::Triage);
        if let Some(alert) = &self.scope.alert {
            let draft = super::evidence::trigger(alert);
            let mut j = lock(&self.journal);
            // Outside the id sequence: the trigger is always the first evidence of a session.
            j.emit(Event::EvidenceAdded {
                evidence: crate::model::Evidence {
                    id: "ev-0".into(),
                    kind: draft.kind,
                    title: draft.title,
                    source: "trigger".into(),
                    call_id: None,
                    body: draft.body,
                },
            });
        }
        let specialists = specialists::pick(self.tools.as_ref());
        let runbook = runbook::best(
            &self.runbooks,
            self.scope.alert.as_ref(),
            self.scope.problem.as_deref(),
        )
        .cloned();
        let summary = self.triage_summary(&specialists, runbook.as_ref());
        self.emit(Event::Triaged {
            summary: summary.clone(),
            runbook: runbook.as_ref().map(|r| r.name.clone()),
            specialists: specialists.iter().map(|s| s.to_string()).collect(),
            now: Some(self.scope.now),
        });
        self.finish(Stage::Triage, summary);
        self.check()?;

        // Gather
        self.start(Stage::Gather);
        guard(&self.token, self.gather(&specialists, runbook.as_ref())).await?;
        // What Diagnose reasons over is what the log holds, not what the lanes returned.
        let obs = lock(&self.journal).observations.observations();
        let (calls, failed) = {
            let j = lock(&self.journal);
            let tools = &j.incident.tools;
            (
                tools.len(),
                tools
                    .iter()
                    .filter(|t| matches!(t.outcome, Some(Err(_))))
                    .count(),
            )
        };
        let n_ev: usize = obs.evidence.values().map(Vec::len).sum();
        self.finish(
            Stage::Gather,
            format!("{calls} tool calls ({failed} failed), {n_ev} evidence items"),
        );
        self.check()?;

        // Diagnose
        self.start(Stage::Diagnose);
        let diagnosed = diagnose::diagnose(&obs, &self.scope, runbook.as_ref());
        for event in diagnosed.events() {
            self.emit(event);
        }
        let analysis = &diagnosed.analysis;
        self.finish(
            Stage::Diagnose,
            format!("{}: {}", analysis.category, analysis.root_cause),
        );
        self.check()?;

        // Recommend
        self.start(Stage::Recommend);
        let actions = recommend::propose(
            &self.journal,
            analysis,
            runbook.as_ref(),
            &diagnosed.ctx,
            &obs,
        );
        self.finish(
            Stage::Recommend,
            match actions.len() {
                0 => "no action proposed".to_string(),
                n => format!("{n} action(s) proposed"),
            },
        );
        self.check()?;

        // Approve
        self.start(Stage::Approve);
        let approved = self.approve(&actions).await?;
        self.finish(
            Stage::Approve,
            format!(
                "{} of {} action(s) cleared to run",
                approved.len(),
                actions.len()
            ),
        );

        // Execute
        self.start(Stage::Execute);
        let executed = self.execute(approved).await;
        self.finish(
            Stage::Execute,
            format!("{} action(s) executed", executed.len()),
        );
        self.check()?;

        // Verify
        self.start(Stage::Verify);
        let mut results = Vec::new();
        for action in &executed {
            let v = guard(
                &self.token,
                verify::verify(&self.caller, &self.scope, action, &obs),
            )
            .await?;
            results.push(v.passed);
            self.emit(Event::Verified { verification: v });
        }
        let outcome = if executed.is_empty() {
            Outcome::Diagnosed
        } else if results.iter().all(|p| *p) {
            Outcome::Resolved
        } else {
            Outcome::Unresolved
        };
        self.finish(
            Stage::Verify,
            match (executed.len(), outcome) {
                (0, _) => "nothing ran, nothing to verify".to_string(),
                (_, Outcome::Resolved) => "fix verified".to_string(),
                _ => "verification failed".to_string(),
            },
        );

        // Report
        self.start(Stage::Report);
        let markdown = report::write(&self.journal, self.opts.session_path.as_deref(), outcome);
        self.emit(Event::Report { markdown });
        self.finish(Stage::Report, format!("outcome: {}", outcome.name()));
        Ok(outcome)
    }

    fn triage_summary(&self, specialists: &[&str], runbook: Option<&Runbook>) -> String {
        let s = &self.scope;
        let what = match (&s.alert, &s.problem) {
            (Some(a), _) => format!("alert {} ({})", a.name(), a.severity()),
            (None, Some(_)) => "reported problem".to_string(),
            _ => "investigation".to_string(),
        };
        let mut parts = vec![what];
        if let Some(ns) = &s.namespace {
            parts.push(format!("namespace {ns}"));
        }
        if let Some(w) = &s.workload {
            parts.push(format!("workload {w}"));
        }
        if let Some(e) = &s.expr {
            parts.push(format!("expr {e}"));
        }
        parts.push(match runbook {
            Some(r) => format!("runbook {}", r.name),
            None => "no runbook matched; specialists decide from the alert".into(),
        });
        parts.push(format!("specialists: {}", specialists.join(", ")));
        parts.join("; ")
    }

    /// Run the specialists (and the runbook's gather steps) in parallel; what they learn reaches
    /// the log as `Observed` facts.
    async fn gather(&self, names: &[&str], runbook: Option<&Runbook>) {
        let mut lanes: Vec<futures::future::BoxFuture<'_, Observations>> = names
            .iter()
            .map(|name| {
                let caller = self.caller.clone();
                let scope = &self.scope;
                let name = name.to_string();
                Box::pin(async move { specialists::run(&name, caller, scope).await })
                    as futures::future::BoxFuture<'_, Observations>
            })
            .collect();
        if let Some(rb) = runbook {
            lanes.push(Box::pin(runbook_steps::gather(
                rb,
                &self.caller,
                &self.scope,
            )));
        }
        futures::future::join_all(lanes).await;
    }

    async fn approve(&mut self, actions: &[Action]) -> Result<Vec<Action>, Cancelled> {
        let cfg = PolicyConfig {
            read_only: self.opts.read_only,
            diagnosis_only: self.opts.diagnosis_only,
            veto_secs: self.opts.veto_secs,
        };
        let mut approved: Vec<(usize, Action)> = Vec::new();
        let mut pending: Vec<(usize, Action, Wait)> = Vec::new();
        let mut approvals_dir: Option<PathBuf> = None;
        for (n, a) in actions.iter().enumerate() {
            match policy::rule(&a.kind, a.risk, &cfg) {
                Rule::Refuse { reason } => self.emit(Event::ActionSkipped {
                    action_id: a.id.clone(),
                    reason,
                }),
                Rule::Run => approved.push((n, a.clone())),
                Rule::Veto { secs } => {
                    self.emit(Event::ApprovalRequested {
                        action_id: a.id.clone(),
                        risk: a.risk,
                        veto_secs: Some(secs),
                        approvals_needed: 0,
                    });
                    let deadline = Instant::now() + std::time::Duration::from_secs_f64(secs);
                    pending.push((n, a.clone(), Wait::Veto(deadline)));
                }
                Rule::Approve { approvals } => {
                    if approvals_dir.is_none()
                        && let Some(path) = &self.opts.session_path
                    {
                        match approve::prepare_dir(path) {
                            Ok(d) => approvals_dir = Some(d),
                            Err(e) => self.emit(Event::Warning {
                                message: format!(
                                    "approvals from other terminals are unavailable: {e}"
                                ),
                            }),
                        }
                    }
                    self.emit(Event::ApprovalRequested {
                        action_id: a.id.clone(),
                        risk: a.risk,
                        veto_secs: None,
                        approvals_needed: approvals,
                    });
                    pending.push((n, a.clone(), Wait::Approvals(Vec::new())));
                }
            }
        }
        if !pending.is_empty() {
            let _ = lock(&self.journal).sync();
        }
        let expires = self.opts.approval_timeout.map(|d| Instant::now() + d);
        let mut poll = tokio::time::interval(self.opts.approval_poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commands_open = true;
        while !pending.is_empty() {
            let next_deadline = pending
                .iter()
                .filter_map(|(_, _, w)| match w {
                    Wait::Veto(d) => Some(*d),
                    Wait::Approvals(_) => None,
                })
                .chain(expires)
                .min();
            let watch_files = approvals_dir.is_some()
                && pending
                    .iter()
                    .any(|(_, _, w)| matches!(w, Wait::Approvals(_)));
            let operator = self.opts.operator.clone();
            tokio::select! {
                _ = self.token.cancelled() => return Err(Cancelled),
                d = self.decisions.recv(), if commands_open => match d {
                    None => commands_open = false,
                    Some(Decision::Deny { action_id, reason }) => {
                        match pending.iter().position(|(_, a, _)| a.id == action_id) {
                            Some(i) => {
                                pending.remove(i);
                                self.emit(Event::ApprovalDenied {
                                    action_id,
                                    by: operator,
                                    at: Utc::now(),
                                    reason,
                                });
                            }
                            None => self.not_pending(&action_id),
                        }
                    }
                    Some(Decision::Approve { action_id, params }) => {
                        match pending.iter().position(|(_, a, _)| a.id == action_id) {
                            None => self.not_pending(&action_id),
                            Some(i) => {
                                if let Some(p) = &params {
                                    pending[i].1.params = p.clone();
                                }
                                let action = pending[i].1.clone();
                                let done = self.record_approval(&mut pending[i].2, &action, &operator, params);
                                if done {
                                    let (n, a, _) = pending.remove(i);
                                    approved.push((n, a));
                                }
                            }
                        }
                    }
                },
                _ = async {
                    match next_deadline {
                        Some(d) => sleep_until(d).await,
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    let now = Instant::now();
                    let mut i = 0;
                    while i < pending.len() {
                        let expired_veto = matches!(pending[i].2, Wait::Veto(d) if d <= now);
                        let expired_all = expires.is_some_and(|e| e <= now);
                        if expired_veto {
                            let (n, a, _) = pending.remove(i);
                            self.emit(Event::ApprovalGiven {
                                action_id: a.id.clone(),
                                by: "policy (veto window elapsed)".into(),
                                at: Utc::now(),
                                params: None,
                            });
                            approved.push((n, a));
                        } else if expired_all {
                            let (_, a, _) = pending.remove(i);
                            self.emit(Event::ApprovalExpired { action_id: a.id, at: Utc::now() });
                        } else {
                            i += 1;
                        }
                    }
                },
                _ = poll.tick(), if watch_files => {
                    let dir = approvals_dir.clone().unwrap_or_default();
                    let mut i = 0;
                    while i < pending.len() {
                        let found = approve::scan(&dir, &pending[i].1.id);
                        let mut done = false;
                        for (_, user) in found {
                            let action = pending[i].1.clone();
                            if let Wait::Approvals(by) = &pending[i].2
                                && by.contains(&user)
                            {
                                continue;
                            }
                            done = self.record_approval(&mut pending[i].2, &action, &user, None);
                        }
                        if done {
                            let (n, a, _) = pending.remove(i);
                            approved.push((n, a));
                        } else {
                            i += 1;
                        }
                    }
                }
            }
        }
        approved.sort_by_key(|(n, _)| *n);
        Ok(approved.into_iter().map(|(_, a)| a).collect())
    }

    fn not_pending(&self, action_id: &str) {
        self.emit(Event::Warning {
            message: format!("no action {action_id} is waiting for a decision"),
        });
    }

    /// Count one operator's approval; true when the action may now run.
    fn record_approval(
        &self,
        wait: &mut Wait,
        action: &Action,
        user: &str,
        params: Option<BTreeMap<String, serde_json::Value>>,
    ) -> bool {
        match wait.approvers() {
            None => {
                // Medium risk: an explicit approval ends the veto window early.
                self.emit(Event::ApprovalGiven {
                    action_id: action.id.clone(),
                    by: user.to_string(),
                    at: Utc::now(),
                    params,
                });
                true
            }
            Some(by) => {
                if by.iter().any(|b| b == user) {
                    self.emit(Event::Warning {
                        message: format!(
                            "{user} already approved {}: it needs {} distinct operators; \
                             another OS user runs `sitrep approve <session> {}`",
                            action.id,
                            policy::approvals_needed(action.risk),
                            action.id
                        ),
                    });
                    return false;
                }
                by.push(user.to_string());
                self.emit(Event::ApprovalGiven {
                    action_id: action.id.clone(),
                    by: user.to_string(),
                    at: Utc::now(),
                    params,
                });
                policy::satisfied(action.risk, by)
            }
        }
    }

    async fn execute(&self, approved: Vec<Action>) -> Vec<Action> {
        let mut done = Vec::new();
        for action in approved {
            if self.token.is_cancelled() {
                self.emit(Event::ActionSkipped {
                    action_id: action.id.clone(),
                    reason: "cancelled before it ran".into(),
                });
                continue;
            }
            // The decision must be on disk before the world changes.
            if let Err(e) = lock(&self.journal).sync() {
                self.emit(Event::ActionFailed {
                    action_id: action.id.clone(),
                    error: format!("not run: the decision could not be saved ({e})"),
                });
                continue;
            }
            let started = Instant::now();
            let result =
                tokio::time::timeout(self.opts.action_timeout, self.tools.execute(&action)).await;
            let duration_ms = started.elapsed().as_millis() as u64;
            match result {
                Ok(Ok(result)) => {
                    self.emit(Event::ActionExecuted {
                        action_id: action.id.clone(),
                        duration_ms,
                        result,
                    });
                    done.push(action);
                }
                Ok(Err(error)) => self.emit(Event::ActionFailed {
                    action_id: action.id.clone(),
                    error,
                }),
                Err(_) => self.emit(Event::ActionFailed {
                    action_id: action.id.clone(),
                    error: format!("timed out after {:.0?}", self.opts.action_timeout),
                }),
            }
            let _ = lock(&self.journal).sync();
        }
        done
    }
}

/// What a pending action waits for.
enum Wait {
    /// Medium risk: runs at this instant unless denied.
    Veto(Instant),
    /// High and critical: approvals from distinct operators so far.
    Approvals(Vec<String>),
}

impl Wait {
    /// `None` for a veto window, the approvers so far otherwise.
    fn approvers(&mut self) -> Option<&mut Vec<String>> {
        match self {
            Wait::Veto(_) => None,
            Wait::Approvals(by) => Some(by),
        }
    }
}
