//! The stage driver: runs one investigation stage by stage, from the trigger to the report, and
//! hands each stage's work to its module (diagnose, recommend, approval, verify, report).

use super::approval::{self, Decision};
use super::journal::{Journal, Sink};
use super::specialists::{self, Caller, Scope, lock};
use super::tools::Tools;
use super::{
    AgentOptions, Attributed, Decider, Trigger, chat, diagnose, recommend, report, runbook_steps,
    verify,
};
use crate::model::{Action, Command, Event, Outcome, Record, Stage};
use crate::reason::Observations;
use crate::runbook::{self, Runbook};
use chrono::Utc;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a cleared action waits for a decision that was sent right behind its approval.
const DECISION_GRACE: std::time::Duration = std::time::Duration::from_millis(150);

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
    pub(super) caller: Caller,
    /// Inside the Approve loop (an action may run while others wait for decisions).
    pub(super) approving: bool,
    /// Decisions taken from the channel while an action ran, for actions still waiting.
    pub(super) deferred: std::collections::VecDeque<Decision>,
}

async fn guard<T>(token: &CancellationToken, fut: impl Future<Output = T>) -> Result<T, Cancelled> {
    tokio::select! {
        biased;
        _ = token.cancelled() => Err(Cancelled),
        v = fut => Ok(v),
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The threads analyses run on: a few long-lived ones rather than one per analysis, so a storm of
/// investigations leaves no allocator arena (and the memory it caches) behind for each thread it
/// would have started. `None` when no thread could be started.
fn analysis_pool() -> Option<&'static Mutex<std::sync::mpsc::Sender<Job>>> {
    static POOL: std::sync::OnceLock<Option<Mutex<std::sync::mpsc::Sender<Job>>>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 4);
        let mut started = 0;
        for i in 0..threads {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sitrep-analysis-{i}"))
                .spawn(move || {
                    loop {
                        // One job at a time: the lock is held only to take it.
                        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            match spawned {
                Ok(_) => started += 1,
                Err(e) => tracing::warn!("cannot start an analysis thread ({e})"),
            }
        }
        (started > 0).then(|| Mutex::new(tx))
    })
    .as_ref()
}

/// Runs CPU-heavy work (the analysis of a big world) off the async workers, on the analysis
/// threads, so they stay free to hear a signal, the operator or a drain. Cancelled, the run stops
/// waiting at once and whatever the work returns later is dropped; a panic in it is the caller's.
async fn off_thread<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
    token: &CancellationToken,
    work: F,
) -> Result<T, Cancelled> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let slot = Arc::new(Mutex::new(Some(work)));
    let theirs = slot.clone();
    let job: Job = Box::new(move || {
        let work = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(work) = work {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
        }
    });
    // Threads, not `spawn_blocking`: a runtime shutting down waits for its blocking tasks, which
    // would hold a cancelled run's process open until the analysis ends.
    let sent = analysis_pool().is_some_and(|pool| {
        pool.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .is_ok()
    });
    if !sent {
        tracing::warn!("no analysis thread; analysing in place");
        let work = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(work) = work {
            return Ok(work());
        }
    }
    match guard(token, rx).await? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // The job ended without answering: only a panic that escaped does that.
        Err(_) => panic!("the analysis thread ended without a result"),
    }
}

pub async fn run(
    tools: Arc<dyn Tools>,
    trigger: Trigger,
    opts: AgentOptions,
    rec_tx: mpsc::UnboundedSender<Record>,
    cmd_rx: mpsc::UnboundedReceiver<Command>,
    att_rx: mpsc::UnboundedReceiver<Attributed>,
) -> anyhow::Result<Outcome> {
    let world_now = tools.now();
    // Masked before anything reads it: scope, title, runbook parameters and the session all
    // derive from the trigger.
    let trigger = redact_trigger(&opts.redactor, trigger);
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
        .as_deref()
        .map(|t| opts.redactor.redact(t).into_owned())
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
    let journal = Arc::new(Mutex::new(
        Journal::new(sink, rec_tx).with_redactor(opts.redactor.clone()),
    ));
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
    let operator = Decider {
        name: opts.operator.clone(),
        via: String::new(),
    };
    let credentials = Arc::new(super::credentials::CredentialGate::new(
        opts.approval_timeout
            .unwrap_or(super::credentials::DEFAULT_WAIT),
    ));
    let (cluster, cluster_note) = super::clusters::pick(
        &tools.clusters(),
        opts.cluster.as_deref(),
        scope.cluster.as_deref(),
    );
    if let Some(message) = cluster_note {
        lock(&journal).emit(Event::Warning { message });
    }
    let mut scope = scope;
    // One unnamed cluster is read as the cluster the alert names, if it names one.
    scope.cluster = cluster.clone().or(scope.cluster);
    let caller = Caller {
        tools: tools.clone(),
        journal: journal.clone(),
        timeout: opts.tool_timeout,
        specialist: "agent".into(),
        seen: Arc::default(),
        credentials: credentials.clone(),
        cluster,
    };
    let dispatcher = tokio::spawn(dispatch(
        (cmd_rx, att_rx),
        Dispatch {
            decisions: dec_tx,
            journal: journal.clone(),
            runbooks: runbooks.clone(),
            token: token.clone(),
            interrupted: interrupted.clone(),
            model: opts.model.clone(),
            hand: caller.fresh("operator"),
            redactor: opts.redactor.clone(),
            credentials,
            operator,
        },
    ));
    let mut run = Run {
        tools,
        journal: journal.clone(),
        opts,
        scope,
        runbooks,
        token,
        decisions,
        caller,
        approving: false,
        deferred: Default::default(),
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
    // A report names the outcome the session ends with: one written before a later change (a
    // cancel once it was written) is written again.
    if report::reported_outcome(&journal).is_some_and(|o| o != outcome.name()) {
        report::write(&journal, run.opts.session_path.as_deref(), outcome);
    }
    {
        let mut j = lock(&journal);
        j.emit(Event::SessionEnded { outcome });
        let _ = j.sync();
    }
    dispatcher.abort();
    Ok(outcome)
}

fn redact_trigger(redactor: &crate::policy::redact::Redactor, trigger: Trigger) -> Trigger {
    match trigger {
        Trigger::Alert(mut payload) => {
            redactor.redact_payload(&mut payload);
            Trigger::Alert(payload)
        }
        Trigger::Problem(text) => Trigger::Problem(redactor.redact(&text).into_owned()),
    }
}

/// Commands from the operator: chat is answered at once, decisions are checked against what
/// was shown and go to the Approve and Execute stages, cancel and interrupt stop the run.
/// What the command dispatcher works with.
struct Dispatch {
    decisions: mpsc::UnboundedSender<Decision>,
    journal: Arc<Mutex<Journal>>,
    runbooks: Arc<Vec<Runbook>>,
    token: CancellationToken,
    interrupted: Arc<AtomicBool>,
    model: Option<crate::agent::llm::Model>,
    hand: Caller,
    redactor: crate::policy::redact::Redactor,
    credentials: Arc<super::credentials::CredentialGate>,
    /// Who decides from this console or command stream.
    operator: Decider,
}

async fn dispatch(
    (mut cmds, mut attributed): (
        mpsc::UnboundedReceiver<Command>,
        mpsc::UnboundedReceiver<Attributed>,
    ),
    ctx: Dispatch,
) {
    let Dispatch {
        decisions,
        journal,
        runbooks,
        token,
        interrupted,
        model,
        hand,
        redactor,
        credentials,
        operator,
    } = ctx;
    let (mut cmds_open, mut attributed_open) = (true, true);
    loop {
        // The operator's own channel decides as the operator; the other as whoever its sender
        // authenticated.
        let (by, cmd) = tokio::select! {
            c = cmds.recv(), if cmds_open => match c {
                Some(c) => (operator.clone(), c),
                None => {
                    cmds_open = false;
                    continue;
                }
            },
            a = attributed.recv(), if attributed_open => match a {
                Some(a) => (a.decider, a.command),
                None => {
                    attributed_open = false;
                    continue;
                }
            },
            else => break,
        };
        match cmd {
            // `/tool KIND {json}` (the palette's `:tool`): the operator runs a read tool by hand.
            Command::Chat { text } if chat::tool_line(&text).is_some() => {
                lock(&journal).emit(Event::ChatMessage {
                    from: crate::model::ChatRole::Operator,
                    text: text.clone(),
                });
                tokio::spawn(chat::run_tool(hand.clone(), text));
            }
            Command::Chat { text } if chat::note_line(&text).is_some() => {
                let note = chat::note_line(&text).unwrap_or_default().to_string();
                let mut j = lock(&journal);
                j.emit(Event::ChatMessage {
                    from: crate::model::ChatRole::Operator,
                    text: text.clone(),
                });
                if note.is_empty() {
                    j.emit(Event::ChatMessage {
                        from: crate::model::ChatRole::Agent,
                        text: "usage: /note TEXT (attached to this session; later recalls show it)"
                            .into(),
                    });
                } else {
                    j.emit(Event::Note {
                        text: note,
                        by: by.name.clone(),
                        at: Utc::now(),
                    });
                    let _ = j.sync();
                }
            }
            Command::ApproveCredential { reference, .. }
            | Command::DenyCredential { reference, .. }
                if !credentials.was_asked(&reference) =>
            {
                lock(&journal).emit(Event::Warning {
                    message: format!(
                        "decision on credential {reference} not applied: no specialist asked for it"
                    ),
                });
            }
            Command::ApproveCredential { reference, .. } => {
                // Recorded before any lane may read the credential.
                let mut j = lock(&journal);
                j.emit(Event::CredentialDecided {
                    reference: reference.clone(),
                    approved: true,
                    by: by.name.clone(),
                    at: Utc::now(),
                    reason: String::new(),
                });
                let _ = j.sync();
                drop(j);
                credentials.decide(&reference, true, "");
            }
            Command::DenyCredential {
                reference, reason, ..
            } => {
                let who = &by.name;
                let reason = if reason.trim().is_empty() {
                    format!("denied by {who}")
                } else {
                    format!("denied by {who}: {reason}")
                };
                lock(&journal).emit(Event::CredentialDecided {
                    reference: reference.clone(),
                    approved: false,
                    by: who.clone(),
                    at: Utc::now(),
                    reason: reason.clone(),
                });
                credentials.decide(&reference, false, &reason);
            }
            Command::Chat { text } => {
                let mut j = lock(&journal);
                j.emit(Event::ChatMessage {
                    from: crate::model::ChatRole::Operator,
                    text: text.clone(),
                });
                match &model {
                    // Slash commands are the rules' own, model or not.
                    Some(m) if !text.trim().starts_with('/') => {
                        let rules = chat::answer(&text, &j.incident, &runbooks);
                        drop(j);
                        tokio::spawn(super::model::chat(
                            m.clone(),
                            journal.clone(),
                            text,
                            rules,
                            redactor.clone(),
                        ));
                    }
                    _ => {
                        let reply = chat::answer_without_model(&text, &j.incident, &runbooks);
                        j.emit(Event::ChatMessage {
                            from: crate::model::ChatRole::Agent,
                            text: reply,
                        });
                    }
                }
            }
            cmd @ (Command::Approve { .. } | Command::Deny { .. } | Command::PauseVeto { .. }) => {
                let mut j = lock(&journal);
                match approval::admit(cmd, by, &j.incident) {
                    Ok(d) => {
                        let _ = decisions.send(d);
                    }
                    Err(message) if !message.is_empty() => j.emit(Event::Warning { message }),
                    Err(_) => {}
                }
            }
            Command::Note { text } => {
                let text = text.trim().to_string();
                let mut j = lock(&journal);
                if text.is_empty() {
                    j.emit(Event::Warning {
                        message: "an empty note was not attached".into(),
                    });
                } else {
                    j.emit(Event::Note {
                        text,
                        by: by.name.clone(),
                        at: Utc::now(),
                    });
                    let _ = j.sync();
                }
            }
            Command::Cancel => token.cancel(),
            Command::Warning { message } => lock(&journal).emit(Event::Warning { message }),
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

    pub(super) fn check(&self) -> Result<(), Cancelled> {
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
        // A described problem is matched to the firing alert it describes, then investigated as that alert.
        self.scope = guard(
            &self.token,
            specialists::resolve_problem(&self.caller, &self.scope),
        )
        .await?;
        let specialists = specialists::pick_for(self.tools.as_ref(), &self.scope);
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
            integrations: Some(
                specialists::INTEGRATIONS
                    .iter()
                    .filter(|i| self.tools.has(i))
                    .map(|i| i.to_string())
                    .collect(),
            ),
        });
        // Memory: what past sessions of the same alert or subject found and what fixed them.
        let memory = guard(&self.token, self.recall()).await?;
        self.finish(Stage::Triage, summary);
        self.check()?;

        // Gather
        self.start(Stage::Gather);
        guard(&self.token, self.extend_catalog()).await?;
        guard(&self.token, self.gather(&specialists, runbook.as_ref())).await?;
        // What Diagnose reasons over is what the log holds, not what the lanes returned.
        let obs = {
            let j = lock(&self.journal);
            j.observations.observations(&j.incident)
        };
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
        let (obs, mut diagnosed) = {
            let (scope, book) = (self.scope.clone(), runbook.clone());
            off_thread(&self.token, move || {
                let diagnosed = diagnose::diagnose(&obs, &scope, book.as_ref());
                (obs, diagnosed)
            })
            .await?
        };
        if let Some(model) = self.opts.model.clone() {
            // The model reasons after the analyzers; its tool calls land in this stage.
            guard(
                &self.token,
                super::model::diagnose(
                    &model,
                    &self.caller,
                    obs.clone(),
                    &mut diagnosed.analysis,
                    self.opts.redactor.clone(),
                ),
            )
            .await?;
        }
        for event in diagnosed.events() {
            self.emit(event);
        }
        let analysis = &diagnosed.analysis;
        self.recall_by_verdict(&memory, analysis.category);
        self.finish(
            Stage::Diagnose,
            format!("{}: {}", analysis.category, analysis.root_cause),
        );
        self.check()?;

        // Recommend
        self.start(Stage::Recommend);
        let recalled = lock(&self.journal).incident.recalled.clone();
        let actions = recommend::propose(
            &self.journal,
            analysis,
            &recalled,
            runbook.as_ref(),
            &diagnosed.ctx,
            &obs,
            (
                &self.opts.proposals,
                self.caller.cluster.as_deref(),
                &self.tools.catalog(),
            ),
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
        let mut executed = approved.ran;
        executed.extend(self.execute(approved.cleared).await);
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
        // The ticket is filed from the report, whether or not a fix ran, and like every write
        // only once the operator lets it; what it created is in the report below.
        let tickets = recommend::tickets(&self.journal, &self.tools.ticket_sinks(), outcome);
        if !tickets.is_empty() {
            let approved = self.approve(&tickets).await?;
            self.execute(approved.cleared).await;
            self.check()?;
        }
        report::write(&self.journal, self.opts.session_path.as_deref(), outcome);
        self.finish(Stage::Report, format!("outcome: {}", outcome.name()));
        Ok(outcome)
    }

    /// The query memory answers for this session, as far as it is known.
    fn memory_query(&self) -> crate::session::memory::Query {
        let j = lock(&self.journal);
        let s = &self.scope;
        let mut subject: Vec<String> = [&s.workload, &s.pod, &s.node]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        subject.extend(j.incident.subject.iter().map(|o| o.name.clone()));
        let alert = s.alert.as_ref();
        crate::session::memory::Query {
            exclude_id: j.incident.id.clone(),
            fingerprint: alert
                .map(crate::model::Alert::fingerprint_or_computed)
                .unwrap_or_default(),
            alertname: alert
                .and_then(|a| a.labels.get("alertname").cloned())
                .unwrap_or_default(),
            subject,
            category: None,
        }
    }

    /// Triage's recall: the index of the sessions directory this session is written to (none
    /// when it is not saved), and a `Recalled` record of the past sessions for the same alert
    /// fingerprint or the same alert and subject. Returns the index for the later recall.
    async fn recall(&self) -> Arc<Vec<crate::model::PastIncident>> {
        let Some(dir) = self
            .opts
            .session_path
            .as_ref()
            .and_then(|p| p.parent())
            .map(|d| d.to_path_buf())
        else {
            return Arc::default();
        };
        let query = self.memory_query();
        let q = query.clone();
        // Only the entries naming this alert's fingerprint or its subject are parsed.
        let index =
            tokio::task::spawn_blocking(move || crate::session::memory::index_for(&dir, &q))
                .await
                .unwrap_or_default();
        for w in &index.warnings {
            self.emit(Event::Warning { message: w.clone() });
        }
        let (sessions, total) = crate::session::memory::recall(&index.sessions, &query);
        self.emit(Event::Recalled { sessions, total });
        Arc::new(index.sessions)
    }

    /// After the verdict: past sessions about the same subject with the same verdict that triage
    /// did not already recall.
    fn recall_by_verdict(
        &self,
        memory: &[crate::model::PastIncident],
        category: crate::model::Category,
    ) {
        if memory.is_empty() {
            return;
        }
        let query = crate::session::memory::Query {
            category: Some(category),
            ..self.memory_query()
        };
        let known: Vec<String> = lock(&self.journal)
            .incident
            .recalled
            .iter()
            .map(|s| s.id.clone())
            .collect();
        let (found, _) = crate::session::memory::recall(memory, &query);
        let sessions: Vec<_> = found
            .into_iter()
            .filter(|s| !known.contains(&s.id) && s.matched == "same subject and verdict")
            .collect();
        if !sessions.is_empty() {
            let total = sessions.len();
            self.emit(Event::Recalled { sessions, total });
        }
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
    /// Reach the MCP servers and register their tools; each server is a step on the timeline,
    /// and one that cannot be reached is a failed step the investigation goes past.
    async fn extend_catalog(&self) {
        let started = Instant::now();
        for (server, result) in self.tools.extend_catalog().await {
            let call_id = {
                let mut j = lock(&self.journal);
                let call_id = j.next_id("call");
                j.emit(Event::ToolCalled {
                    call_id: call_id.clone(),
                    tool: format!("{}.{server}", crate::integrations::mcp::INTEGRATION),
                    specialist: Some("mcp".into()),
                    params: Default::default(),
                });
                call_id
            };
            let duration_ms = started.elapsed().as_millis() as u64;
            self.emit(match result {
                Ok(tools) => Event::ToolSucceeded {
                    call_id,
                    duration_ms,
                    summary: format!("{} tools: {}", tools.len(), tools.join(", ")),
                },
                Err(error) => Event::ToolFailed {
                    call_id,
                    duration_ms,
                    error,
                },
            });
        }
    }

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

    pub(super) async fn execute(&mut self, approved: Vec<Action>) -> Vec<Action> {
        let mut done = Vec::new();
        let mut queue = approved;
        queue.reverse();
        while let Some(action) = queue.pop() {
            // A decision sent right behind the approval (a deny typed a moment later, a cancel)
            // must still win: give it a moment to reach the channel before anything runs.
            tokio::time::sleep(DECISION_GRACE).await;
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
            // A credential by reference is read only once the operator approved it, for an
            // action as for a read.
            let integration = self
                .tools
                .catalog()
                .lookup(&action.kind)
                .map(|e| e.integration.to_string())
                .unwrap_or_default();
            if let Err(error) = guard(&self.token, self.caller.credentials_for(&integration))
                .await
                .unwrap_or_else(|_| Err("cancelled before it ran".into()))
            {
                self.emit(Event::ActionFailed {
                    action_id: action.id.clone(),
                    error,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Analysis that never looks at the token still ends the wait for it at once when the run
    /// is cancelled: it runs on its own thread, not on the async workers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn cancelling_stops_waiting_for_busy_analysis() {
        let token = CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let got = off_thread(&token, || {
            // Busy, as the analysis of a big world is: no await, no token.
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            1
        })
        .await;
        assert!(got.is_err(), "a cancelled run gets no result");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "waited {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn finished_analysis_is_returned_and_its_panics_are_the_callers() {
        let token = CancellationToken::new();
        assert_eq!(off_thread(&token, || 41 + 1).await.ok(), Some(42));
        let caught = tokio::spawn(async move {
            let token = CancellationToken::new();
            off_thread(&token, || -> u8 { panic!("analysis bug") }).await
        })
        .await;
        assert!(caught.is_err_and(|e| e.is_panic()));
    }
}
