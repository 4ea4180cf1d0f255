//! The stages of one investigation, in order, from the trigger to the report.

use super::approval::{self, Decision};
use super::evidence::Chart;
use super::journal::{Journal, Sink};
use super::specialists::{self, Caller, Scope, lock, split_threshold};
use super::tools::{ToolOutput, Tools, params, s};
use super::{AgentOptions, Trigger, chat};
use crate::model::catalog;
use crate::model::{
    Action, Command, Event, Marker, Outcome, PodFacts, Record, Stage, Verification,
};
use crate::reason::{self, Analysis, Observations};
use crate::runbook::{self, Runbook, Step};
use chrono::{Duration as ChronoDuration, Utc};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The operator cancelled (or a signal stopped the console); the pipeline unwinds and records
/// `Cancelled` or `Interrupted`.
pub(super) struct Cancelled;

pub(super) struct Run {
    tools: Arc<dyn Tools>,
    pub(super) journal: Arc<Mutex<Journal>>,
    pub(super) opts: AgentOptions,
    scope: Scope,
    runbooks: Arc<Vec<Runbook>>,
    pub(super) token: CancellationToken,
    pub(super) decisions: mpsc::UnboundedReceiver<Decision>,
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
    let interrupted = Arc::new(AtomicBool::new(false));
    let (dec_tx, decisions) = mpsc::unbounded_channel();
    let dispatcher = tokio::spawn(dispatch(
        cmd_rx,
        dec_tx,
        journal.clone(),
        runbooks.clone(),
        token.clone(),
        interrupted.clone(),
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
            let signalled = interrupted.load(Ordering::SeqCst);
            if let Some(stage) = j.incident.current_stage
                && j.incident.stages[stage.index()].status == crate::model::StageStatus::Running
            {
                j.emit(Event::StageFinished {
                    stage,
                    summary: if signalled {
                        "interrupted: the console was stopped".into()
                    } else {
                        "cancelled by the operator".into()
                    },
                });
            }
            if signalled {
                Outcome::Interrupted
            } else {
                Outcome::Cancelled
            }
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

/// Commands from the operator: chat is answered at once, decisions are checked against what
/// was shown and go to the Approve and Execute stages, cancel and interrupt stop the run.
async fn dispatch(
    mut cmds: mpsc::UnboundedReceiver<Command>,
    decisions: mpsc::UnboundedSender<Decision>,
    journal: Arc<Mutex<Journal>>,
    runbooks: Arc<Vec<Runbook>>,
    token: CancellationToken,
    interrupted: Arc<AtomicBool>,
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
            cmd @ (Command::Approve { .. } | Command::Deny { .. } | Command::PauseVeto { .. }) => {
                let mut j = lock(&journal);
                match approval::admit(cmd, &j.incident) {
                    Ok(d) => {
                        let _ = decisions.send(d);
                    }
                    Err(message) if !message.is_empty() => j.emit(Event::Warning { message }),
                    Err(_) => {}
                }
            }
            Command::Cancel => token.cancel(),
            Command::Interrupt { reason } => {
                interrupted.store(true, Ordering::SeqCst);
                let mut j = lock(&journal);
                j.emit(Event::Warning {
                    message: format!(
                        "interrupted ({}): nothing pending was decided",
                        if reason.is_empty() { "signal" } else { &reason }
                    ),
                });
                let _ = j.sync();
                drop(j);
                token.cancel();
            }
        }
    }
}

impl Run {
    pub(super) fn emit(&self, event: Event) {
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
        let mut out: Vec<Action> = Vec::new();
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
                    let mut params = runbook::render_params(&a.params, ctx)?;
                    let target = runbook::render(&a.target.value, ctx)?;
                    catalog::admit(&a.tool.value, &target, &mut params)?;
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
            let mut a = a.clone();
            match catalog::admit(&a.kind, &a.target, &mut a.params) {
                Ok(()) => out.push(a),
                Err(e) => self.emit(Event::Warning {
                    message: format!("not proposing {} {}: {e}", a.kind, a.target),
                }),
            }
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
            // A runbook or an analyzer may raise an action's risk, never take it below the floor;
            // target and operation text are the catalog's reading of the params.
            catalog::settle(a);
            j.emit(Event::ActionProposed { action: a.clone() });
        }
        out
    }

    async fn execute(&mut self, approved: Vec<Action>) -> Vec<Action> {
        let mut done = Vec::new();
        let mut queue = approved;
        queue.reverse();
        while let Some(action) = queue.pop() {
            // Let a decision sent together with the approval reach the channel first.
            tokio::task::yield_now().await;
            if !self.still_cleared(&action, &mut queue) {
                continue;
            }
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

/// The exact operation an action performs, shown in the approval modal (from the catalog).
pub use crate::model::catalog::operation;

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
