//! The stages of one investigation, in order, from the trigger to the report.

use super::evidence::Chart;
use super::journal::{Journal, Sink};
use super::specialists::{self, Caller, Scope, lock, split_threshold};
use super::tools::{ToolOutput, Tools, params, s};
use super::{AgentOptions, Trigger, approve, chat};
use crate::model::{
    Action, Command, Event, Marker, Outcome, PodFacts, Record, Stage, Verification,
};
use crate::policy::{self, PolicyConfig, Rule};
use crate::reason::{self, Analysis, Observations};
use crate::runbook::{self, Runbook, Step};
use chrono::{Duration as ChronoDuration, Utc};
use serde_json::json;
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
        });
        self.finish(Stage::Triage, summary);
        self.check()?;

        // Gather
        self.start(Stage::Gather);
        let mut obs = guard(&self.token, self.gather(&specialists, runbook.as_ref())).await?;
        obs.alert = self.scope.alert.clone();
        obs.problem = self.scope.problem.clone();
        obs.now = self.scope.now;
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
        let analysis = reason::analyze(&obs);
        let ctx = self.context(&obs, Some(&analysis));
        for f in &analysis.findings {
            self.emit(Event::Finding { finding: f.clone() });
        }
        if let Some(rb) = &runbook {
            self.runbook_findings(rb, &ctx, &obs);
        }
        self.emit(Event::HypothesesRanked {
            hypotheses: analysis.hypotheses.clone(),
            ruled_out: analysis.ruled_out.clone(),
        });
        self.emit(Event::Diagnosis {
            category: analysis.category,
            root_cause: analysis.root_cause.clone(),
            confidence: analysis.confidence,
        });
        self.finish(
            Stage::Diagnose,
            format!("{}: {}", analysis.category, analysis.root_cause),
        );
        self.check()?;

        // Recommend
        self.start(Stage::Recommend);
        let actions = self.recommend(&analysis, runbook.as_ref(), &ctx, &obs);
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
            let v = guard(&self.token, self.verify(action, &obs)).await?;
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
        let markdown = self.report(outcome);
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

    async fn gather(&self, names: &[&str], runbook: Option<&Runbook>) -> Observations {
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
            lanes.push(Box::pin(self.runbook_gather(rb)));
        }
        let mut obs = Observations::default();
        for part in futures::future::join_all(lanes).await {
            specialists::merge(&mut obs, part);
        }
        obs
    }

    async fn runbook_gather(&self, rb: &Runbook) -> Observations {
        let obs = Mutex::new(Observations::default());
        let caller = self.caller.for_specialist(&format!("runbook:{}", rb.name));
        let ctx = self.context(&Observations::default(), None);
        for (n, step) in rb.steps.iter().enumerate() {
            let Step::Gather(g) = step else { continue };
            if let Some(w) = &g.when {
                match runbook::eval_when(&w.value, &ctx) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        self.step_warning(rb, n, &e);
                        continue;
                    }
                }
            }
            match runbook::render_params(&g.params, &ctx) {
                Ok(p) => {
                    caller.call(&g.tool.value, p, &Chart::default(), &obs).await;
                }
                Err(e) => self.step_warning(rb, n, &e),
            }
        }
        obs.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn step_warning(&self, rb: &Runbook, n: usize, e: &str) {
        self.emit(Event::Warning {
            message: format!("runbook {} step {} skipped: {e}", rb.name, n + 1),
        });
    }

    /// The template context for runbook steps.
    fn context(&self, obs: &Observations, analysis: Option<&Analysis>) -> serde_json::Value {
        let s = &self.scope;
        let mut scope = serde_json::Map::new();
        for (k, v) in [
            ("namespace", &s.namespace),
            ("workload", &s.workload),
            ("pod", &s.pod),
            ("node", &s.node),
            ("repo", &s.repo),
            ("expr", &s.expr),
        ] {
            if let Some(v) = v {
                scope.insert(k.into(), json!(v));
            }
        }
        scope.insert("now".into(), json!(s.now.to_rfc3339()));
        scope.insert("onset".into(), json!(s.onset.to_rfc3339()));
        let mut ctx = serde_json::Map::new();
        if let Some(a) = &s.alert {
            ctx.insert(
                "alert".into(),
                json!({"name": a.name(), "labels": a.labels, "annotations": a.annotations,
                       "status": a.status}),
            );
        }
        if let Some(p) = &s.problem {
            ctx.insert("problem".into(), json!(p));
        }
        ctx.insert("scope".into(), serde_json::Value::Object(scope));
        ctx.insert("facts".into(), facts(obs, s));
        if let Some(a) = analysis {
            ctx.insert(
                "diagnosis".into(),
                json!({"category": a.category.name(), "root_cause": a.root_cause,
                       "confidence": a.confidence}),
            );
            ctx.insert(
                "findings".into(),
                json!(
                    a.findings
                        .iter()
                        .map(|f| f.analyzer.clone())
                        .collect::<Vec<_>>()
                ),
            );
        }
        serde_json::Value::Object(ctx)
    }

    fn runbook_findings(&self, rb: &Runbook, ctx: &serde_json::Value, obs: &Observations) {
        for (n, step) in rb.steps.iter().enumerate() {
            let Step::Diagnose(d) = step else { continue };
            match runbook::eval_when(&d.when.value, ctx) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    self.step_warning(rb, n, &e);
                    continue;
                }
            }
            let summary = match runbook::render(&d.summary.value, ctx) {
                Ok(s) => s,
                Err(e) => {
                    self.step_warning(rb, n, &e);
                    continue;
                }
            };
            self.emit(Event::Finding {
                finding: crate::model::Finding {
                    analyzer: format!("runbook:{}", rb.name),
                    summary,
                    detail: String::new(),
                    category: crate::model::Category::parse(&d.category.value).unwrap_or_default(),
                    confidence: d.confidence.unwrap_or(0.6),
                    evidence: obs.evidence_of_kinds(&["kubernetes/pods", "kubernetes/nodes"]),
                },
            });
        }
    }

    fn recommend(
        &self,
        analysis: &Analysis,
        runbook: Option<&Runbook>,
        ctx: &serde_json::Value,
        obs: &Observations,
    ) -> Vec<Action> {
        // The operator's own proposals come first.
        let mut out: Vec<Action> = self.opts.proposals.clone();
        if let Some(rb) = runbook {
            for (n, step) in rb.steps.iter().enumerate() {
                let Step::Action(a) = step else { continue };
                if let Some(w) = &a.when {
                    match runbook::eval_when(&w.value, ctx) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            self.step_warning(rb, n, &e);
                            continue;
                        }
                    }
                }
                let rendered = (|| -> Result<Action, String> {
                    let params = runbook::render_params(&a.params, ctx)?;
                    let target = runbook::render(&a.target.value, ctx)?;
                    let rationale = runbook::render(&a.rationale.value, ctx)?;
                    let blast_radius = runbook::render(&a.blast_radius, ctx)?;
                    Ok(Action {
                        id: String::new(),
                        kind: a.tool.value.clone(),
                        operation: operation(&a.tool.value, &target, &params),
                        target,
                        params,
                        risk: Runbook::risk_of(a),
                        rationale: format!("{rationale} (runbook {})", rb.name),
                        blast_radius,
                        evidence: obs.evidence_of_kinds(&[
                            "kubernetes/pods",
                            "kubernetes/deployments",
                            "kubernetes/nodes",
                            "metrics",
                            "logs",
                            "changes",
                        ]),
                    })
                })();
                match rendered {
                    Ok(a) => out.push(a),
                    Err(e) => self.step_warning(rb, n, &e),
                }
            }
        }
        for a in &analysis.suggested_actions {
            out.push(a.clone());
        }
        // One proposal per (kind, target): a runbook and an analyzer often agree.
        let mut seen = Vec::new();
        out.retain(|a| {
            let key = (a.kind.clone(), a.target.clone());
            if seen.contains(&key) {
                false
            } else {
                seen.push(key);
                true
            }
        });
        let mut j = lock(&self.journal);
        for a in out.iter_mut() {
            a.id = j.next_id("act");
            if a.operation.is_empty() {
                a.operation = operation(&a.kind, &a.target, &a.params);
            }
            j.emit(Event::ActionProposed { action: a.clone() });
        }
        out
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

    /// Re-query what the action should have fixed and compare with before.
    async fn verify(&self, action: &Action, before: &Observations) -> Verification {
        let caller = self.caller.fresh("verify");
        let after = Mutex::new(Observations::default());
        let ns = action
            .params
            .get("namespace")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or_else(|| self.scope.namespace.clone());
        let (target_kind, target_name) = action
            .target
            .split_once('/')
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .unwrap_or_default();
        let mut checks: Vec<(bool, String)> = Vec::new();
        let mut before_id = None;
        let mut after_id = None;
        let action_marker = Marker {
            at: self.tools.now().timestamp() as f64,
            label: format!("{} ({})", action.kind, action.id),
        };

        if action.kind.starts_with("kubernetes.") && self.tools.has("kubernetes") {
            before_id = before.evidence_of("kubernetes/pods").last().cloned();
            let got = caller
                .call(
                    "kubernetes.pods",
                    params([("namespace", ns.clone().and_then(s))]),
                    &Chart::default(),
                    &after,
                )
                .await;
            if let Some((ToolOutput::Pods(pods), id)) = got {
                after_id = Some(id);
                let owner = if target_kind == "deployment" {
                    Some(target_name.clone())
                } else {
                    self.scope.workload.clone()
                };
                let scope = Scope {
                    workload: owner,
                    ..self.scope.clone()
                };
                let mine: Vec<&PodFacts> = pods
                    .iter()
                    .filter(|p| scope.owns_pod(p) && !p.deleting)
                    .collect();
                let mine: Vec<&PodFacts> = if target_kind == "pod" {
                    pods.iter()
                        .filter(|p| p.name == target_name && !p.deleting)
                        .collect()
                } else {
                    mine
                };
                let bad: Vec<String> = mine
                    .iter()
                    .filter(|p| !healthy_pod(p))
                    .map(|p| p.name.clone())
                    .collect();
                checks.push(match (mine.len(), bad.is_empty()) {
                    (0, _) => (false, format!("no running pod for {}", action.target)),
                    (n, true) => (
                        true,
                        format!("{n} pod(s) of {} running and ready", action.target),
                    ),
                    (n, false) => (
                        false,
                        format!(
                            "{} of {n} pod(s) still unhealthy: {}",
                            bad.len(),
                            bad.join(", ")
                        ),
                    ),
                });
            }
            if target_kind == "deployment"
                && let Some(ns) = &ns
            {
                let got = caller
                    .call(
                        "kubernetes.deployments",
                        params([("namespace", s(ns))]),
                        &Chart::default(),
                        &after,
                    )
                    .await;
                if let Some((ToolOutput::Deployments(deps), _)) = got
                    && let Some(d) = deps.iter().find(|d| d.name == target_name)
                {
                    let want = action
                        .params
                        .get("replicas")
                        .and_then(|v| v.as_u64())
                        .map(|r| r as u32)
                        .unwrap_or(d.replicas);
                    let ok = d.ready_replicas >= want && d.replicas >= want && want > 0;
                    checks.push((
                        ok,
                        format!(
                            "deployment {} {}/{} ready (want {want})",
                            d.name, d.ready_replicas, d.replicas
                        ),
                    ));
                }
            }
        }

        if let Some(expr) = &self.scope.expr
            && self.tools.has("prometheus")
        {
            let (base, threshold) = split_threshold(expr);
            let chart = Chart {
                threshold: threshold.map(|t| t.value),
                markers: vec![action_marker],
            };
            let now = self.tools.now();
            let got = caller
                .call(
                    "prometheus.query_range",
                    params([
                        ("query", s(&base)),
                        (
                            "start",
                            s((now - ChronoDuration::minutes(30))
                                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                        ),
                        (
                            "end",
                            s((now + ChronoDuration::minutes(15))
                                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                        ),
                        ("step", Some(json!(30))),
                    ]),
                    &chart,
                    &after,
                )
                .await;
            if let (Some((ToolOutput::Series(series), id)), Some(t)) = (got, threshold) {
                if before_id.is_none() {
                    before_id = before.evidence_of("metrics").first().cloned();
                }
                if after_id.is_none() {
                    after_id = Some(id);
                }
                let last: Vec<f64> = series
                    .iter()
                    .filter_map(|s| s.points.last().map(|p| p.1))
                    .collect();
                let firing: Vec<f64> = last.iter().copied().filter(|v| t.breached(*v)).collect();
                if !last.is_empty() {
                    checks.push(match firing.first() {
                        None => (
                            true,
                            format!(
                                "alert expression back within {} {} (now {})",
                                t.op,
                                t.value,
                                last.iter()
                                    .map(|v| format!("{v:.3}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ),
                        Some(v) => (
                            false,
                            format!("alert expression still firing: {v:.3} {} {}", t.op, t.value),
                        ),
                    });
                }
            }
        }

        if checks.is_empty() {
            checks.push((
                true,
                format!(
                    "{} reported success; nothing further to re-query",
                    action.kind
                ),
            ));
        }
        let passed = checks.iter().all(|(ok, _)| *ok);
        Verification {
            action_id: Some(action.id.clone()),
            passed,
            summary: checks
                .into_iter()
                .map(|(ok, s)| format!("{} {s}", if ok { "ok:" } else { "FAILED:" }))
                .collect::<Vec<_>>()
                .join("; "),
            before: before_id,
            after: after_id,
        }
    }

    fn report(&self, outcome: Outcome) -> String {
        let j = lock(&self.journal);
        let mut md = crate::session::export::markdown(&j.incident);
        // The export knows the incident; the outcome is not folded until SessionEnded.
        md.push_str(&format!("\n**Outcome:** {}\n", outcome.name()));
        if let Some(path) = &self.opts.session_path {
            let file = path.with_extension("md");
            if let Err(e) = std::fs::write(&file, &md) {
                drop(j);
                self.emit(Event::Warning {
                    message: format!("report not written to {}: {e}", file.display()),
                });
            }
        }
        md
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

/// The exact operation an action performs, shown in the approval modal.
pub fn operation(kind: &str, target: &str, params: &BTreeMap<String, serde_json::Value>) -> String {
    let p = |k: &str| {
        params
            .get(k)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_default()
    };
    let ns = p("namespace");
    let ns = if ns.is_empty() {
        String::new()
    } else {
        format!(" -n {ns}")
    };
    match kind {
        "kubernetes.rollout_undo" => format!("kubectl rollout undo {target}{ns}"),
        "kubernetes.rollout_restart" => format!("kubectl rollout restart {target}{ns}"),
        "kubernetes.scale" => format!("kubectl scale {target}{ns} --replicas={}", p("replicas")),
        "kubernetes.delete_pod" => {
            let force = if p("force") == "true" {
                " --force --grace-period=0"
            } else {
                ""
            };
            format!("kubectl delete {target}{ns}{force}")
        }
        "alertmanager.silence" => format!("amtool silence add {target}"),
        "github.revert_pr" => format!("gh pr revert {target}"),
        other => format!("{other} {target}"),
    }
}

fn healthy_pod(p: &PodFacts) -> bool {
    (p.phase == "Running" && p.ready())
        && p.containers
            .iter()
            .all(|c| c.ready && c.reason.is_none() && c.state == "running")
}

/// Facts runbook templates and conditions can use.
fn facts(obs: &Observations, scope: &Scope) -> serde_json::Value {
    let not_ready_nodes: Vec<String> = obs
        .nodes
        .iter()
        .filter(|n| !n.ready())
        .map(|n| n.name.clone())
        .collect();
    let on_lost_node = |p: &&PodFacts| p.node.as_ref().is_some_and(|n| not_ready_nodes.contains(n));
    let mut stuck: Vec<&PodFacts> = obs
        .pods
        .iter()
        .filter(on_lost_node)
        .filter(|p| p.deleting || p.phase == "Unknown")
        .collect();
    // A StatefulSet pod is the one that will not come back on its own.
    stuck.sort_by_key(|p| {
        !p.owner
            .as_deref()
            .is_some_and(|o| o.starts_with("StatefulSet/"))
    });
    let reason_pods = |reasons: &[&str]| -> Vec<String> {
        obs.pods
            .iter()
            .filter(|p| {
                p.containers.iter().any(|c| {
                    c.reason.as_deref().is_some_and(|r| reasons.contains(&r))
                        || c.last_reason
                            .as_deref()
                            .is_some_and(|r| reasons.contains(&r))
                })
            })
            .map(|p| p.name.clone())
            .collect()
    };
    let image_pull_deployments: Vec<String> = {
        let mut v: Vec<String> = obs
            .pods
            .iter()
            .filter(|p| {
                p.containers.iter().any(|c| {
                    matches!(
                        c.reason.as_deref(),
                        Some("ImagePullBackOff") | Some("ErrImagePull") | Some("InvalidImageName")
                    )
                })
            })
            .filter_map(|p| p.owner.as_deref()?.strip_prefix("ReplicaSet/"))
            .filter_map(|rs| rs.rsplit_once('-').map(|(d, _)| d.to_string()))
            .collect();
        v.dedup();
        v
    };
    let unready_deployments: Vec<String> = obs
        .deployments
        .iter()
        .filter(|d| d.replicas > 0 && d.ready_replicas == 0)
        .filter(|d| scope.workload.as_deref() != Some(d.name.as_str()))
        .map(|d| d.name.clone())
        .collect();
    let workload_replicas = scope
        .workload
        .as_ref()
        .and_then(|w| obs.deployments.iter().find(|d| &d.name == w))
        .map(|d| d.replicas)
        .unwrap_or(0);
    let mut rollouts: Vec<&crate::model::DeploymentFacts> = obs
        .replica_sets
        .iter()
        .filter(|r| {
            scope
                .workload
                .as_ref()
                .is_none_or(|w| r.name.starts_with(&format!("{w}-")))
        })
        .collect();
    rollouts.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    json!({
        "not_ready_nodes": not_ready_nodes,
        "stuck_pods": stuck.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        "stuck_pod_namespaces": stuck.iter().map(|p| p.namespace.clone()).collect::<Vec<_>>(),
        "oom_killed_pods": reason_pods(&["OOMKilled"]),
        "crashlooping_pods": reason_pods(&["CrashLoopBackOff"]),
        "image_pull_deployments": image_pull_deployments,
        "unready_deployments": unready_deployments,
        "workload_replicas": workload_replicas,
        "rollouts": rollouts.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        "evidence": obs.evidence.keys().collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_read_like_the_commands() {
        let mut p = BTreeMap::new();
        p.insert("namespace".into(), json!("shop"));
        p.insert("replicas".into(), json!(6));
        assert_eq!(
            operation("kubernetes.scale", "deployment/web", &p),
            "kubectl scale deployment/web -n shop --replicas=6"
        );
        p.insert("force".into(), json!(true));
        assert_eq!(
            operation("kubernetes.delete_pod", "pod/db-0", &p),
            "kubectl delete pod/db-0 -n shop --force --grace-period=0"
        );
    }
}
