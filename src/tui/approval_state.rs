//! The approval modal's state and keys: review, typed confirmation, deny with a reason, edit.
//! The safety rules (digest-bound decisions, key guard, veto pause) are enforced here.

use super::keymap::{Action, Key, Scope};
use super::state::{AppState, Effect, Overlay};
use crate::model::{Command, Risk};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;
use std::collections::BTreeMap;
use std::time::Duration;

pub enum ApprovalStage {
    Review,
    /// High or critical risk: `a` was pressed; approving needs the target's name typed and
    /// Enter, or the confirm chord (ctrl-y). Holds what was typed so far.
    Confirm(String),
    Deny(TextArea<'static>),
    Edit(TextArea<'static>, Option<String>),
}

pub struct ApprovalUi {
    pub action_id: String,
    pub stage: ApprovalStage,
    /// Parameters as edited in the modal, not yet sent.
    pub params: Option<BTreeMap<String, serde_json::Value>>,
    /// The version shown (digest from `ApprovalRequested`); decisions are sent for it.
    pub digest: String,
    /// When the modal (or this version of the action) appeared: keys in the first
    /// [`AppState::approval_guard`] are ignored, so typing meant for elsewhere lands nowhere.
    pub opened: std::time::Instant,
    /// A pause of the medium-risk countdown was asked for.
    pub paused: bool,
}

impl ApprovalUi {
    pub fn new(action_id: String, digest: String) -> ApprovalUi {
        ApprovalUi {
            action_id,
            stage: ApprovalStage::Review,
            params: None,
            digest,
            opened: std::time::Instant::now(),
            paused: false,
        }
    }
}

/// Keys pressed this soon after the approval modal opens are ignored.
pub const APPROVAL_GUARD: Duration = Duration::from_millis(300);

pub(crate) fn on_approval_key(
    state: &mut AppState,
    mut ui: ApprovalUi,
    key: KeyEvent,
    k: Key,
) -> Vec<Effect> {
    let Some(action) = state.incident().action(&ui.action_id).cloned() else {
        return Vec::new();
    };
    if ui.opened.elapsed() < state.approval_guard {
        // Typing meant for somewhere else when the modal popped up: dropped, not acted on.
        state.overlay = Some(Overlay::Approval(Box::new(ui)));
        return Vec::new();
    }
    let risk = action.action.risk;
    let mut effects = Vec::new();
    // Any interaction stops a medium-risk countdown: nothing runs while the operator reads,
    // types a reason or edits.
    if action.veto_secs.is_some()
        && !action.veto_paused
        && !ui.paused
        && !state.is_replay()
        && !state.read_only
    {
        ui.paused = true;
        effects.push(Effect::SendCommand(Command::PauseVeto {
            action_id: ui.action_id.clone(),
        }));
    }
    let stage = std::mem::replace(&mut ui.stage, ApprovalStage::Review);
    match stage {
        ApprovalStage::Deny(mut ta) => match key.code {
            KeyCode::Esc => ui.stage = ApprovalStage::Review,
            KeyCode::Enter => {
                let reason = ta.lines().join(" ").trim().to_string();
                if reason.is_empty() {
                    state.set_status(
                        "type a reason for denying, then enter (esc goes back)",
                        true,
                    );
                    ui.stage = ApprovalStage::Deny(ta);
                } else {
                    effects.push(Effect::SendCommand(Command::Deny {
                        action_id: ui.action_id.clone(),
                        reason,
                        by: None,
                    }));
                    state.submitted.insert(ui.action_id.clone());
                    state.set_status(format!("denial of {} sent", ui.action_id), false);
                    return effects;
                }
            }
            _ => {
                ta.input(key);
                ui.stage = ApprovalStage::Deny(ta);
            }
        },
        ApprovalStage::Edit(mut ta, _) => {
            if key.code == KeyCode::Esc {
                ui.stage = ApprovalStage::Review;
            } else if k == Key::new(KeyCode::Char('s'), KeyModifiers::CONTROL) {
                let src = ta.lines().join("\n");
                match serde_json::from_str::<BTreeMap<String, serde_json::Value>>(&src) {
                    Ok(p)
                        if p.iter()
                            .all(|(k, v)| action.action.params.get(k) == Some(v)) =>
                    {
                        state.set_status("parameters unchanged", false);
                        ui.stage = ApprovalStage::Review;
                    }
                    Ok(p) => {
                        // The agent merges the edit, recomputes target, risk and operation and
                        // shows the new version; it needs a fresh approval.
                        effects.push(Effect::SendCommand(Command::Approve {
                            action_id: ui.action_id.clone(),
                            by: None,
                            params: Some(p.clone()),
                            digest: Some(ui.digest.clone()),
                        }));
                        ui.params = Some(p);
                        state
                            .set_status("edit sent: the action is shown again for approval", false);
                        ui.stage = ApprovalStage::Review;
                    }
                    Err(e) => {
                        ui.stage = ApprovalStage::Edit(ta, Some(format!("not a JSON object: {e}")))
                    }
                }
            } else {
                ta.input(key);
                ui.stage = ApprovalStage::Edit(ta, None);
            }
        }
        ApprovalStage::Confirm(mut typed) => {
            let pressed = state.keymap.lookup(k, &[Scope::Approval]);
            let name = target_name(&action.action.target);
            if pressed == Some(Action::Confirm) {
                effects.push(approve(state, &ui));
                if risk == Risk::Critical {
                    state.overlay = Some(Overlay::Approval(Box::new(ui)));
                }
                return effects;
            }
            match key.code {
                KeyCode::Esc => ui.stage = ApprovalStage::Review,
                KeyCode::Enter
                    if !typed.is_empty() && (typed == name || typed == action.action.target) =>
                {
                    effects.push(approve(state, &ui));
                    if risk == Risk::Critical {
                        state.overlay = Some(Overlay::Approval(Box::new(ui)));
                    }
                    return effects;
                }
                KeyCode::Enter => {
                    state.set_status(
                        format!("not approved: type {name} exactly, then enter (esc goes back)"),
                        true,
                    );
                    ui.stage = ApprovalStage::Review;
                }
                KeyCode::Backspace => {
                    typed.pop();
                    ui.stage = ApprovalStage::Confirm(typed);
                }
                KeyCode::Char(c)
                    if key.modifiers.difference(KeyModifiers::SHIFT).is_empty()
                        && typed.chars().count() < 256 =>
                {
                    typed.push(c);
                    ui.stage = ApprovalStage::Confirm(typed);
                }
                _ => {
                    state.set_status("not approved", false);
                    ui.stage = ApprovalStage::Review;
                }
            }
        }
        ApprovalStage::Review => {
            if key.code == KeyCode::Enter {
                state.set_status(
                    "enter does not approve: press a to approve, d to deny, esc to look around",
                    false,
                );
                state.overlay = Some(Overlay::Approval(Box::new(ui)));
                return effects;
            }
            let pressed = state.keymap.lookup(k, &[Scope::Approval, Scope::Global]);
            match pressed {
                Some(Action::Approve) if state.is_replay() => {
                    state.set_status("replay is read-only", true);
                }
                Some(Action::Approve) if state.read_only => {
                    state.set_status("read-only session: actions cannot be approved", true);
                }
                Some(Action::Approve) if risk >= Risk::High => {
                    ui.stage = ApprovalStage::Confirm(String::new());
                }
                Some(Action::Approve) => {
                    effects.push(approve(state, &ui));
                    return effects;
                }
                Some(Action::Deny) if !state.is_replay() => {
                    let mut ta = TextArea::default();
                    ta.set_placeholder_text("reason (enter sends, esc goes back)");
                    ta.set_cursor_line_style(ratatui::style::Style::default());
                    ui.stage = ApprovalStage::Deny(ta);
                }
                Some(Action::Edit) if !state.is_replay() && !state.read_only => {
                    let params = ui
                        .params
                        .clone()
                        .unwrap_or_else(|| action.action.params.clone());
                    let text =
                        serde_json::to_string_pretty(&params).unwrap_or_else(|_| "{}".into());
                    let mut ta = TextArea::new(text.lines().map(str::to_string).collect());
                    ta.set_cursor_line_style(ratatui::style::Style::default());
                    ui.stage = ApprovalStage::Edit(ta, None);
                }
                Some(Action::Back) => {
                    state.dismissed.insert(ui.action_id.clone());
                    state.set_status(
                        format!(
                            "{} is still waiting for a decision: a reopens it",
                            ui.action_id
                        ),
                        false,
                    );
                    return effects;
                }
                Some(Action::Help) => {
                    state.overlay = Some(Overlay::Help { scroll: 0 });
                    state.dismissed.insert(ui.action_id.clone());
                    return effects;
                }
                _ => ui.stage = ApprovalStage::Review,
            }
        }
    }
    state.overlay = Some(Overlay::Approval(Box::new(ui)));
    effects
}

/// What the operator types to confirm a high-risk approval: the name part of the target.
pub fn target_name(target: &str) -> &str {
    target.rsplit_once('/').map_or(target, |(_, n)| n)
}

fn approve(state: &mut AppState, ui: &ApprovalUi) -> Effect {
    state.submitted.insert(ui.action_id.clone());
    let critical = state.is_critical(&ui.action_id);
    let msg = if critical {
        format!(
            "approval of {} sent; a second operator must approve it too",
            ui.action_id
        )
    } else {
        format!("approval of {} sent", ui.action_id)
    };
    state.set_status(msg, false);
    Effect::SendCommand(Command::Approve {
        action_id: ui.action_id.clone(),
        by: None,
        params: None,
        digest: Some(ui.digest.clone()),
    })
}
