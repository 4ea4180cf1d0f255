//! The Approve stage: who may decide what, bound to the version of the action that was shown.
//!
//! A decision counts only for an action that is waiting and was shown (`ApprovalRequested`),
//! and only for the digest of kind + target + parameters shown then. An edit re-asks. The last
//! decision before execution wins: denials are re-checked right before each action runs.

use super::Decider;
use super::approve;
use super::pipeline::{Cancelled, Run};
use crate::model::{Action, ActionStatus, Command, Event, Incident, Risk};
use crate::policy::{self, PolicyConfig, Rule};
use chrono::Utc;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::SystemTime;
use tokio::time::{Instant, sleep_until};

type Params = BTreeMap<String, serde_json::Value>;

/// How much earlier than the request an approval file's change time may read.
const CTIME_SLACK: std::time::Duration = std::time::Duration::from_millis(50);

/// An operator decision the dispatcher admitted, forwarded to the Approve and Execute stages.
pub(super) enum Decision {
    Approve {
        action_id: String,
        /// The version approved: the digest given, or the one shown when the command arrived.
        digest: String,
        params: Option<Params>,
        by: Decider,
    },
    Deny {
        action_id: String,
        reason: String,
        by: Decider,
    },
    PauseVeto {
        action_id: String,
        by: Decider,
    },
}

/// Check a decision command against what has been shown so far; `by` is who the channel it came
/// on says decided (the command's own `by` is never trusted). `Err` is the warning to record
/// instead; nothing refused here is remembered for later.
pub(super) fn admit(cmd: Command, by: Decider, incident: &Incident) -> Result<Decision, String> {
    match cmd {
        Command::Approve {
            action_id,
            params,
            digest,
            ..
        } => {
            let Some(a) = incident.action(&action_id) else {
                return Err(format!(
                    "approval of {action_id} refused: no such action has been proposed"
                ));
            };
            if a.status != ActionStatus::AwaitingApproval {
                return Err(format!(
                    "approval of {action_id} refused: it is not waiting for a decision ({})",
                    a.status.name()
                ));
            }
            let shown = a.digest.clone();
            match digest {
                Some(d) if d != shown => Err(format!(
                    "approval of {action_id} refused: it was given for version {} but the action \
                     shown is version {}",
                    short(&d),
                    short(&shown)
                )),
                _ => Ok(Decision::Approve {
                    action_id,
                    digest: shown,
                    params,
                    by,
                }),
            }
        }
        Command::Deny {
            action_id, reason, ..
        } => match incident.action(&action_id).map(|a| a.status) {
            Some(
                ActionStatus::Proposed | ActionStatus::AwaitingApproval | ActionStatus::Approved,
            ) => Ok(Decision::Deny {
                action_id,
                reason,
                by,
            }),
            Some(status) => Err(format!(
                "denial of {action_id} not applied: it is already {}",
                status.name()
            )),
            None => Err(format!(
                "denial of {action_id} not applied: no such action has been proposed"
            )),
        },
        Command::PauseVeto { action_id } => match incident.action(&action_id) {
            Some(a)
                if a.status == ActionStatus::AwaitingApproval
                    && a.veto_secs.is_some()
                    && !a.veto_paused =>
            {
                Ok(Decision::PauseVeto { action_id, by })
            }
            // Pausing what has no running countdown is a no-op, not a problem worth a warning.
            _ => Err(String::new()),
        },
        other => Err(format!("not a decision: {other:?}")),
    }
}

pub(super) use crate::model::short_digest as short;

/// Who gave the last approval an action counted.
fn last_approver(p: &Pending) -> Option<String> {
    match &p.wait {
        Wait::Approvals { approvers, .. } => approvers.last().cloned(),
        Wait::Veto(_) => None,
    }
}

/// Distinct approvers an action of `risk` needs (at least one once it asks).
fn enough(risk: Risk) -> usize {
    usize::from(policy::approvals_needed(risk).max(1))
}

/// What a pending action waits for.
enum Wait {
    /// Medium risk: runs at this instant unless denied; `None` once an operator paused it.
    Veto(Option<Instant>),
    /// High and critical risk.
    Approvals {
        /// Distinct deciders who approved so far (console, API caller, `sitrep approve`).
        approvers: Vec<String>,
        /// Critical: an approval file from another OS user already counted.
        file_counted: bool,
    },
}

struct Pending {
    order: usize,
    action: Action,
    wait: Wait,
    /// When the current version was shown; files older than this do not count.
    shown_at: SystemTime,
}

/// What the Approve stage settled: the actions that already ran (each cleared while others
/// still waited, run at once) and the ones cleared last, in order, for the Execute stage.
#[derive(Default)]
pub(super) struct Approved {
    pub(super) ran: Vec<Action>,
    pub(super) cleared: Vec<Action>,
}

impl Approved {
    /// How many were cleared to run, run or not yet.
    pub(super) fn len(&self) -> usize {
        self.ran.len() + self.cleared.len()
    }
}

impl Run {
    /// Ask for decisions on `actions` and wait for them. An action cleared while others still
    /// wait runs at once, not after the last decision; what is cleared last is returned to run.
    pub(super) async fn approve(&mut self, actions: &[Action]) -> Result<Approved, Cancelled> {
        self.approving = true;
        let result = self.approve_and_run(actions).await;
        self.approving = false;
        // A decision that arrived while an action ran but concerns none still waiting.
        while let Some(d) = self.deferred.pop_front() {
            self.stray(d);
        }
        result
    }

    async fn approve_and_run(&mut self, actions: &[Action]) -> Result<Approved, Cancelled> {
        let cfg = PolicyConfig {
            read_only: self.opts.read_only,
            diagnosis_only: self.opts.diagnosis_only,
            veto_secs: self.opts.veto_secs,
            unattended: self.opts.unattended,
        };
        let mut approved: Vec<(usize, Action)> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut approvals_dir: Option<PathBuf> = None;
        let catalog = self.caller.tools.catalog();
        for (n, a) in actions.iter().enumerate() {
            let rule = policy::rule_in(&catalog, &a.kind, a.risk, &cfg);
            if matches!(rule, Rule::Approve { .. }) && approvals_dir.is_none() {
                approvals_dir = self.prepare_approvals_dir();
            }
            match rule {
                Rule::Refuse { reason } => self.emit(Event::ActionSkipped {
                    action_id: a.id.clone(),
                    reason,
                }),
                Rule::Run => approved.push((n, a.clone())),
                rule => {
                    if let Some(p) = self.request(n, a.clone(), &rule) {
                        pending.push(p);
                    }
                }
            }
        }
        if !pending.is_empty() {
            let _ = crate::agent::specialists::lock(&self.journal).sync();
        }
        let expires = self.opts.approval_timeout.map(|d| Instant::now() + d);
        let mut poll = tokio::time::interval(self.opts.approval_poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reported: BTreeSet<String> = BTreeSet::new();
        let mut commands_open = true;
        let mut ran: Vec<Action> = Vec::new();
        while !pending.is_empty() {
            if !approved.is_empty() {
                // Cleared while others wait: it runs now, not once the last one is decided.
                approved.sort_by_key(|(n, _)| *n);
                let now: Vec<Action> = approved.drain(..).map(|(_, a)| a).collect();
                ran.extend(self.execute(now).await);
                self.check()?;
                continue;
            }
            if let Some(d) = self.deferred.pop_front() {
                self.decide(d, &mut pending, &mut approved, &cfg);
                continue;
            }
            let next_deadline = pending
                .iter()
                .filter_map(|p| match p.wait {
                    Wait::Veto(d) => d,
                    Wait::Approvals { .. } => None,
                })
                .chain(expires)
                .min();
            let watch_files = approvals_dir.is_some()
                && pending
                    .iter()
                    .any(|p| matches!(p.wait, Wait::Approvals { .. }));
            tokio::select! {
                _ = self.token.cancelled() => return Err(Cancelled),
                d = self.decisions.recv(), if commands_open => match d {
                    None => commands_open = false,
                    Some(d) => self.decide(d, &mut pending, &mut approved, &cfg),
                },
                _ = async {
                    match next_deadline {
                        Some(d) => sleep_until(d).await,
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    let now = Instant::now();
                    let expired_all = expires.is_some_and(|e| e <= now);
                    let mut i = 0;
                    while i < pending.len() {
                        let elapsed = matches!(pending[i].wait, Wait::Veto(Some(d)) if d <= now);
                        if elapsed {
                            let p = pending.remove(i);
                            self.emit(Event::ApprovalGiven {
                                action_id: p.action.id.clone(),
                                by: "policy (veto window elapsed)".into(),
                                at: Utc::now(),
                                via: String::new(),
                                digest: p.action.digest(),
                                params: None,
                            });
                            approved.push((p.order, p.action));
                        } else if expired_all {
                            let p = pending.remove(i);
                            self.emit(Event::ApprovalExpired { action_id: p.action.id, at: Utc::now() });
                        } else {
                            i += 1;
                        }
                    }
                },
                _ = poll.tick(), if watch_files => {
                    if let Some(dir) = &approvals_dir {
                        self.poll_files(dir, &mut pending, &mut approved, &mut reported);
                    }
                }
            }
        }
        approved.sort_by_key(|(n, _)| *n);
        Ok(Approved {
            ran,
            cleared: approved.into_iter().map(|(_, a)| a).collect(),
        })
    }

    /// A decision about no action waiting or about to run.
    fn stray(&self, d: Decision) {
        match d {
            Decision::Approve { action_id, .. } => self.emit(Event::Warning {
                message: format!("approval of {action_id} not needed: already decided"),
            }),
            Decision::Deny { action_id, .. } => self.not_pending(&action_id),
            Decision::PauseVeto { .. } => {}
        }
    }

    fn prepare_approvals_dir(&self) -> Option<PathBuf> {
        let path = self.opts.session_path.as_ref()?;
        match approve::prepare_dir(path) {
            Ok(d) => Some(d),
            Err(e) => {
                self.emit(Event::Warning {
                    message: format!("approvals from other terminals are unavailable: {e}"),
                });
                None
            }
        }
    }

    /// Show `action` for a decision under `rule`; `None` when the rule lets it run at once.
    fn request(&self, order: usize, action: Action, rule: &Rule) -> Option<Pending> {
        let digest = action.digest();
        let (veto_secs, approvals_needed, wait) = match rule {
            Rule::Veto { secs } => (
                Some(*secs),
                0,
                Wait::Veto(Some(
                    Instant::now() + std::time::Duration::from_secs_f64(secs.clamp(0.0, 1e9)),
                )),
            ),
            Rule::Approve { approvals } => (
                None,
                *approvals,
                Wait::Approvals {
                    approvers: Vec::new(),
                    file_counted: false,
                },
            ),
            Rule::Run | Rule::Refuse { .. } => return None,
        };
        let shown_at = SystemTime::now();
        self.emit(Event::ApprovalRequested {
            action_id: action.id.clone(),
            risk: action.risk,
            veto_secs,
            approvals_needed,
            digest,
        });
        Some(Pending {
            order,
            action,
            wait,
            shown_at,
        })
    }

    fn decide(
        &self,
        d: Decision,
        pending: &mut Vec<Pending>,
        approved: &mut Vec<(usize, Action)>,
        cfg: &PolicyConfig,
    ) {
        match d {
            Decision::Deny {
                action_id,
                reason,
                by,
            } => {
                match pending.iter().position(|p| p.action.id == action_id) {
                    Some(i) => {
                        pending.remove(i);
                        self.emit(Event::ApprovalDenied {
                            action_id,
                            by: by.name,
                            at: Utc::now(),
                            reason,
                            via: by.via,
                        });
                    }
                    None => match approved.iter().position(|(_, a)| a.id == action_id) {
                        // Cleared by the policy (low risk) but not run yet: a denial still wins.
                        Some(i) => {
                            approved.remove(i);
                            self.emit(Event::ApprovalDenied {
                                action_id,
                                by: by.name,
                                at: Utc::now(),
                                reason,
                                via: by.via,
                            });
                        }
                        None => self.not_pending(&action_id),
                    },
                }
            }
            Decision::PauseVeto { action_id, by } => {
                if let Some(p) = pending.iter_mut().find(|p| p.action.id == action_id)
                    && matches!(p.wait, Wait::Veto(Some(_)))
                {
                    p.wait = Wait::Veto(None);
                    self.emit(Event::VetoPaused {
                        action_id,
                        by: by.name,
                    });
                }
            }
            Decision::Approve {
                action_id,
                digest,
                params,
                by,
            } => {
                let Some(i) = pending.iter().position(|p| p.action.id == action_id) else {
                    self.not_pending(&action_id);
                    return;
                };
                let current = pending[i].action.digest();
                if digest != current {
                    self.emit(Event::Warning {
                        message: format!(
                            "approval of {action_id} ignored: it was given for version {} but the \
                             action now is version {}; decide again on what is shown",
                            short(&digest),
                            short(&current)
                        ),
                    });
                    return;
                }
                if let Some(edits) = params {
                    let mut edited = pending[i].action.clone();
                    edited.params.extend(edits);
                    let catalog = self.caller.tools.catalog();
                    let problems = catalog.check_params(&edited.kind, &edited.params, true);
                    if !problems.is_empty() {
                        self.emit(Event::Warning {
                            message: format!(
                                "edit of {action_id} refused: {}; the action stays as shown",
                                problems.join("; ")
                            ),
                        });
                        return;
                    }
                    catalog.settle(&mut edited);
                    if edited.digest() != current || edited.risk != pending[i].action.risk {
                        self.edit(i, edited, &by, pending, cfg);
                        return;
                    }
                }
                let p = &mut pending[i];
                if self.record_approval(p, &by) {
                    let p = pending.remove(i);
                    self.allow_credentials(&p.action, &by.name);
                    approved.push((p.order, p.action));
                }
            }
        }
    }

    /// Replace a pending action by its edited version and ask again under the rule it now has.
    fn edit(
        &self,
        i: usize,
        edited: Action,
        by: &Decider,
        pending: &mut Vec<Pending>,
        cfg: &PolicyConfig,
    ) {
        let order = pending[i].order;
        // Approvals of the earlier version lapse with it.
        pending.remove(i);
        self.emit(Event::ActionEdited {
            action: edited.clone(),
            by: by.name.clone(),
        });
        let mut rule =
            policy::rule_in(&self.caller.tools.catalog(), &edited.kind, edited.risk, cfg);
        if matches!(rule, Rule::Run) {
            // An edit is a change the operator has not yet seen approved: never run unasked.
            rule = Rule::Approve { approvals: 1 };
        }
        if let Rule::Refuse { reason } = &rule {
            self.emit(Event::ActionSkipped {
                action_id: edited.id.clone(),
                reason: reason.clone(),
            });
            return;
        }
        let id = edited.id.clone();
        if let Some(mut p) = self.request(order, edited, &rule) {
            // The operator is already looking at it: a medium edit waits for an explicit decision.
            if matches!(p.wait, Wait::Veto(_)) {
                p.wait = Wait::Veto(None);
                self.emit(Event::VetoPaused {
                    action_id: id,
                    by: by.name.clone(),
                });
            }
            pending.insert(i.min(pending.len()), p);
        }
    }

    /// An operator's approval of an action also decides the credential its integration still
    /// waits for: the action runs at once instead of stopping at a second question. Recorded as
    /// that operator's decision, before the credential is read.
    fn allow_credentials(&self, action: &Action, by: &str) {
        use super::credentials::Ask;
        let tools = &self.caller.tools;
        let Some(integration) = tools
            .catalog()
            .lookup(&action.kind)
            .map(|e| e.integration.to_string())
        else {
            return;
        };
        let gate = &self.caller.credentials;
        let mut seen: Vec<String> = Vec::new();
        while let Some(reference) = tools.pending_credential(&integration) {
            if seen.contains(&reference) {
                return;
            }
            match gate.ask(&reference) {
                // Decided already (a denial stands): the executor applies it.
                Ask::Decided { .. } => return,
                Ask::First => self.emit(Event::CredentialRequested {
                    reference: reference.clone(),
                    integration: integration.to_string(),
                    specialist: None,
                }),
                Ask::Wait => {}
            }
            let mut j = super::specialists::lock(&self.journal);
            j.emit(Event::CredentialDecided {
                reference: reference.clone(),
                approved: true,
                by: by.to_string(),
                at: Utc::now(),
                reason: String::new(),
            });
            let _ = j.sync();
            drop(j);
            gate.decide(&reference, true, "");
            tools.decide_credential(&reference, true, "");
            seen.push(reference);
        }
    }

    fn not_pending(&self, action_id: &str) {
        self.emit(Event::Warning {
            message: format!("no action {action_id} is waiting for a decision"),
        });
    }

    /// Count an approval that came through the command channels; true when the action may now run.
    fn record_approval(&self, p: &mut Pending, by: &Decider) -> bool {
        let action = &p.action;
        let given = || Event::ApprovalGiven {
            action_id: action.id.clone(),
            by: by.name.clone(),
            at: Utc::now(),
            via: by.via.clone(),
            digest: action.digest(),
            params: None,
        };
        match &mut p.wait {
            Wait::Veto(_) => {
                // Medium risk: an explicit approval ends the veto window early.
                self.emit(given());
                true
            }
            Wait::Approvals { approvers, .. } => {
                // Distinct people, by identity: the same name through two channels is one operator.
                if approvers.contains(&by.name) {
                    self.emit(Event::Warning {
                        message: format!(
                            "{} already approved {}: a critical action needs {} distinct \
                             operators; another OS user runs `sitrep approve <session> {}`",
                            by.name,
                            action.id,
                            policy::approvals_needed(action.risk),
                            action.id
                        ),
                    });
                    return false;
                }
                approvers.push(by.name.clone());
                self.emit(given());
                action.risk < Risk::Critical || approvers.len() >= enough(action.risk)
            }
        }
    }

    /// Approvals other OS users dropped in the approvals directory, for the version shown.
    fn poll_files(
        &self,
        dir: &std::path::Path,
        pending: &mut Vec<Pending>,
        approved: &mut Vec<(usize, Action)>,
        reported: &mut BTreeSet<String>,
    ) {
        let me = approve::current_uid();
        let scan = approve::scan(dir);
        for problem in scan.problems {
            if reported.insert(problem.clone()) {
                self.emit(Event::Warning { message: problem });
            }
        }
        let mut i = 0;
        while i < pending.len() {
            let p = &mut pending[i];
            let digest = p.action.digest();
            let mut done = false;
            for f in scan
                .approvals
                .iter()
                .filter(|f| f.file.action_id == p.action.id)
            {
                let key = format!("{}:{}:{}", f.name, f.uid, f.file.digest);
                let mut refuse = |why: String| {
                    if reported.insert(key.clone()) {
                        self.emit(Event::Warning {
                            message: format!("approval file {} ignored: {why}", f.name),
                        });
                    }
                };
                if f.file.digest != digest {
                    refuse(format!(
                        "it approves version {}, the action shown is version {}",
                        short(&f.file.digest),
                        short(&digest)
                    ));
                    continue;
                }
                // File times are coarse (a few ms): a little slack, so a file written just
                // after the request is not mistaken for one written before it.
                if f.created + CTIME_SLACK < p.shown_at {
                    refuse("it was written before the action was shown".into());
                    continue;
                }
                if f.uid == me {
                    refuse(format!(
                        "it belongs to the session's operator ({}); the second approval must \
                         come from another OS user",
                        f.user
                    ));
                    continue;
                }
                let Wait::Approvals {
                    approvers,
                    file_counted,
                } = &mut p.wait
                else {
                    refuse("a medium-risk action is decided in the console".into());
                    continue;
                };
                if p.action.risk < Risk::Critical {
                    refuse(format!(
                        "{} risk: only the session's operator approves it, {} cannot",
                        p.action.risk, f.user
                    ));
                    continue;
                }
                if *file_counted {
                    continue;
                }
                if approvers.contains(&f.user) {
                    refuse(format!(
                        "{} already approved it: a critical action needs two distinct operators",
                        f.user
                    ));
                    continue;
                }
                *file_counted = true;
                approvers.push(f.user.clone());
                self.emit(Event::ApprovalGiven {
                    action_id: p.action.id.clone(),
                    by: f.user.clone(),
                    at: Utc::now(),
                    via: format!("sitrep approve, uid {}", f.uid),
                    digest: digest.clone(),
                    params: None,
                });
                done = approvers.len() >= enough(p.action.risk);
            }
            if done {
                let p = pending.remove(i);
                if let Some(last) = last_approver(&p) {
                    self.allow_credentials(&p.action, &last);
                }
                approved.push((p.order, p.action));
            } else {
                i += 1;
            }
        }
    }

    /// Right before an action runs: apply decisions that arrived since it was cleared. A denial
    /// wins over an earlier approval; false means it must not run.
    pub(super) fn still_cleared(&mut self, action: &Action, queued: &mut Vec<Action>) -> bool {
        let mut run_it = true;
        let mut denied: Vec<(String, String, Decider)> = Vec::new();
        while let Ok(d) = self.decisions.try_recv() {
            let about = match &d {
                Decision::Approve { action_id, .. }
                | Decision::Deny { action_id, .. }
                | Decision::PauseVeto { action_id, .. } => action_id.clone(),
            };
            let here = action.id == about || queued.iter().any(|a| a.id == about);
            if self.approving && !here {
                // For an action still waiting in the Approve loop this one runs inside.
                self.deferred.push_back(d);
                continue;
            }
            match d {
                Decision::Deny {
                    action_id,
                    reason,
                    by,
                } => denied.push((action_id, reason, by)),
                Decision::Approve { action_id, .. } => self.emit(Event::Warning {
                    message: format!("approval of {action_id} not needed: already decided"),
                }),
                Decision::PauseVeto { .. } => {}
            }
        }
        for (action_id, reason, by) in denied {
            let known = action.id == action_id || queued.iter().any(|a| a.id == action_id);
            if !known {
                self.not_pending(&action_id);
                continue;
            }
            self.emit(Event::ApprovalDenied {
                action_id: action_id.clone(),
                by: by.name,
                at: Utc::now(),
                reason,
                via: by.via,
            });
            self.emit(Event::ActionSkipped {
                action_id: action_id.clone(),
                reason: "denied after approval, before it ran: the last decision wins".into(),
            });
            queued.retain(|a| a.id != action_id);
            if action.id == action_id {
                run_it = false;
            }
        }
        run_it
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action() -> Action {
        let mut params = BTreeMap::new();
        params.insert("namespace".into(), json!("shop"));
        params.insert("deployment".into(), json!("web"));
        Action {
            id: "act-1".into(),
            kind: "kubernetes.rollout_undo".into(),
            target: "deployment/web".into(),
            params,
            risk: Risk::High,
            rationale: "r".into(),
            operation: "x".into(),
            blast_radius: String::new(),
            evidence: vec![],
        }
    }

    #[test]
    fn an_edit_merges_retargets_and_never_lowers_risk() {
        let mut a = action();
        a.params.insert("namespace".into(), json!("kube-system"));
        a.params.insert("deployment".into(), json!("coredns"));
        crate::model::catalog::settle(&mut a);
        assert_eq!(a.target, "deployment/coredns");
        assert_eq!(a.risk, Risk::Critical);
        assert!(a.operation.contains("-n kube-system"), "{}", a.operation);
        let mut low = action();
        low.risk = Risk::Critical;
        crate::model::catalog::settle(&mut low);
        assert_eq!(low.risk, Risk::Critical);
    }

    fn incident_with(events: &[Event]) -> Incident {
        Incident::fold(events.iter().enumerate().map(|(i, e)| (i as f64, e)))
    }

    fn op() -> Decider {
        Decider {
            name: "alice".into(),
            via: String::new(),
        }
    }

    fn approve_cmd(digest: Option<String>) -> Command {
        Command::Approve {
            action_id: "act-1".into(),
            by: None,
            params: None,
            digest,
        }
    }

    #[test]
    fn only_a_shown_pending_action_can_be_approved_and_only_its_version() {
        let a = action();
        let proposed = Event::ActionProposed { action: a.clone() };
        let requested = Event::ApprovalRequested {
            action_id: a.id.clone(),
            risk: a.risk,
            veto_secs: None,
            approvals_needed: 1,
            digest: a.digest(),
        };
        // Proposed but not yet shown: refused.
        let inc = incident_with(std::slice::from_ref(&proposed));
        assert!(admit(approve_cmd(None), op(), &inc).is_err());
        // Unknown id: refused.
        assert!(admit(approve_cmd(None), op(), &Incident::new()).is_err());
        let inc = incident_with(&[proposed.clone(), requested.clone()]);
        // Shown: bound to the digest shown when none is given.
        match admit(approve_cmd(None), op(), &inc) {
            Ok(Decision::Approve { digest, .. }) => assert_eq!(digest, a.digest()),
            _ => panic!("a shown action is approvable"),
        }
        assert!(admit(approve_cmd(Some("f".repeat(64))), op(), &inc).is_err());
        assert!(admit(approve_cmd(Some(a.digest())), op(), &inc).is_ok());
        // A deny is accepted for anything not yet run; a pause only for a running countdown.
        let deny = Command::Deny {
            action_id: "act-1".into(),
            reason: "no".into(),
            by: None,
        };
        assert!(admit(deny, op(), &inc).is_ok());
        let pause = Command::PauseVeto {
            action_id: "act-1".into(),
        };
        assert!(matches!(admit(pause, op(), &inc), Err(m) if m.is_empty()));
    }

    #[test]
    fn the_digest_follows_kind_target_and_params() {
        let a = action();
        let mut b = action();
        assert_eq!(a.digest(), b.digest());
        b.params.insert("namespace".into(), json!("other"));
        assert_ne!(a.digest(), b.digest());
        let mut c = action();
        c.target = "deployment/else".into();
        assert_ne!(a.digest(), c.digest());
        assert_eq!(a.digest().len(), 64);
    }
}
