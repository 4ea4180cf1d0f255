//! The reducer: `update(&mut AppState, Msg) -> Vec<Effect>` routes keys and records to the
//! state, the overlays and the search; it never calls a view.

use super::approval_state::{ApprovalUi, on_approval_key};
use super::keymap::{Action, Key, Scope};
use super::layout;
use super::palette_state::{PaletteState, on_palette_key};
use super::scroll::Move;
use super::search::{Mode, next_match, on_search_key};
use super::state::{AppState, Effect, Msg, Overlay, Pane};
use crate::model::Command;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Duration;

/// The reducer: fold one message into the state and say what the loop should do.
pub fn update(state: &mut AppState, msg: Msg) -> Vec<Effect> {
    let effects = match msg {
        Msg::Key(key) => {
            if key.kind == crossterm::event::KeyEventKind::Release {
                return Vec::new();
            }
            state.status = None;
            on_key(state, key)
        }
        Msg::Record(r) => {
            let r = *r;
            state.now_t = state.now_t.max(r.t);
            state.live.apply(r.t, &r.event);
            Vec::new()
        }
        Msg::Resize(w, h) => {
            state.size = (w, h);
            Vec::new()
        }
        Msg::Clock(t) => {
            state.now_t = t;
            Vec::new()
        }
        Msg::ReplayTick(dt) => {
            if let Some(r) = &mut state.replay {
                let wall = Duration::try_from_secs_f64(dt).unwrap_or(Duration::ZERO);
                r.clock.advance(wall);
            }
            Vec::new()
        }
        Msg::AgentFinished(err) => {
            state.agent_done = true;
            match err {
                Some(e) => state.set_status(format!("investigation stopped: {e}"), true),
                None if state.incident().report.is_some() => {
                    state.set_status("investigation finished: r shows the report, q quits", false)
                }
                None => state.set_status("investigation finished; q quits", false),
            }
            Vec::new()
        }
        Msg::SyntaxReady => Vec::new(),
    };
    state.sync();
    effects
}

fn on_key(state: &mut AppState, key: KeyEvent) -> Vec<Effect> {
    let k = Key::from_event(&key);
    if k == Key::new(KeyCode::Char('c'), KeyModifiers::CONTROL) {
        return vec![Effect::Quit];
    }
    if state.filter_input.is_some() {
        on_search_key(state, key);
        return Vec::new();
    }
    match state.overlay.take() {
        Some(Overlay::Approval(ui)) => return on_approval_key(state, *ui, key, k),
        Some(Overlay::Credential { reference, opened }) => {
            if opened.elapsed() < state.approval_guard {
                state.overlay = Some(Overlay::Credential { reference, opened });
                return Vec::new();
            }
            let command = match state.keymap.lookup(k, &[Scope::Approval, Scope::Global]) {
                Some(Action::Approve) => Command::ApproveCredential {
                    reference: reference.clone(),
                    by: None,
                },
                Some(Action::Deny) => Command::DenyCredential {
                    reference: reference.clone(),
                    reason: "denied in the console".into(),
                    by: None,
                },
                Some(Action::Back | Action::Quit) => {
                    state.dismissed.insert(reference);
                    return Vec::new();
                }
                _ => {
                    state.overlay = Some(Overlay::Credential { reference, opened });
                    return Vec::new();
                }
            };
            state.submitted.insert(reference.clone());
            state.set_status(format!("decision on {reference} sent"), false);
            return vec![Effect::SendCommand(command)];
        }
        Some(Overlay::Help { scroll }) => {
            let action = state.keymap.lookup(k, &[Scope::Navigation, Scope::Global]);
            state.overlay = match action {
                Some(Action::Down) => Some(Overlay::Help { scroll: scroll + 1 }),
                Some(Action::Up) => Some(Overlay::Help {
                    scroll: scroll.saturating_sub(1),
                }),
                Some(Action::Top) => Some(Overlay::Help { scroll: 0 }),
                Some(Action::Quit) | Some(Action::Back) | Some(Action::Help) => None,
                _ => Some(Overlay::Help { scroll }),
            };
            return Vec::new();
        }
        Some(Overlay::Palette(p)) => return on_palette_key(state, p, key),
        Some(Overlay::Report(mut scroll)) => {
            let action = state.keymap.lookup(k, &[Scope::Navigation, Scope::Global]);
            state.overlay = match action {
                Some(Action::Quit | Action::Back | Action::Report) => None,
                Some(Action::Wrap) => {
                    scroll.toggle_wrap();
                    Some(Overlay::Report(scroll))
                }
                Some(
                    a @ (Action::Down
                    | Action::Up
                    | Action::Top
                    | Action::Bottom
                    | Action::PageDown
                    | Action::PageUp),
                ) => {
                    scroll.apply(to_move(a));
                    Some(Overlay::Report(scroll))
                }
                _ => Some(Overlay::Report(scroll)),
            };
            return Vec::new();
        }
        None => {}
    }
    if state.focus == Pane::Chat && !state.is_replay() {
        return on_chat_key(state, key, k);
    }
    let scopes: &[Scope] = if state.is_replay() {
        &[Scope::Replay, Scope::Global, Scope::Navigation]
    } else {
        &[Scope::Global, Scope::Navigation]
    };
    match state.keymap.lookup(k, scopes) {
        Some(Action::Seek) => {
            if let Some(r) = &mut state.replay
                && let KeyCode::Char(c) = key.code
                && let Some(tenths) = c.to_digit(10)
            {
                r.clock.seek_fraction(f64::from(tenths) / 10.0);
            }
            Vec::new()
        }
        Some(action) => run_action(state, action),
        None => {
            if key.code == KeyCode::Enter && state.focus == Pane::Timeline {
                state.focus = Pane::Evidence;
            }
            Vec::new()
        }
    }
}

pub(crate) fn run_action(state: &mut AppState, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => return vec![Effect::Quit],
        Action::Help => state.overlay = Some(Overlay::Help { scroll: 0 }),
        Action::Palette => state.overlay = Some(Overlay::Palette(PaletteState::default())),
        Action::Search | Action::Filter => {
            state.search_mode = if action == Action::Search {
                Mode::Search
            } else {
                Mode::Filter
            };
            state.filter_input = Some(String::new());
        }
        Action::Wrap => match state.focus {
            Pane::Chat => state.chat.toggle_wrap(),
            Pane::Summary => state.summary.toggle_wrap(),
            _ => {
                state.evidence.toggle_wrap();
                let on = if state.evidence.wrap { "on" } else { "off" };
                state.set_status(format!("wrap {on}"), false);
            }
        },
        Action::PanLeft | Action::PanRight if state.focus == Pane::Evidence => {
            state.evidence.pan(action == Action::PanRight);
            if state.evidence.wrap {
                state.set_status("wrapping: w turns it off to pan", false);
            }
        }
        Action::Zoom => {
            state.zoom = !state.zoom;
            if state.zoom && state.focus == Pane::Timeline {
                state.focus = Pane::Evidence;
            }
        }
        Action::Report => super::palette_state::show_report(state),
        Action::SkipAhead if !state.is_replay() => return vec![Effect::SkipAhead],
        Action::SkipAhead => {}
        Action::NextMatch => next_match(state, true),
        Action::PrevMatch => next_match(state, false),
        Action::Back => {
            if state.filter.is_some() {
                state.filter = None;
                state.follow = false;
            } else if state.focus != Pane::Timeline {
                state.focus = Pane::Timeline;
            }
        }
        Action::NextPane | Action::PrevPane => {
            let i = Pane::ORDER
                .iter()
                .position(|p| *p == state.focus)
                .unwrap_or(0);
            let n = Pane::ORDER.len();
            let j = if action == Action::NextPane {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            state.focus = Pane::ORDER[j];
        }
        Action::PaneTimeline => state.focus = Pane::Timeline,
        Action::PaneEvidence => state.focus = Pane::Evidence,
        Action::PaneChat => state.focus = Pane::Chat,
        Action::PaneSummary => state.focus = Pane::Summary,
        Action::OpenApproval => open_approval(state),
        Action::Down
        | Action::Up
        | Action::Top
        | Action::Bottom
        | Action::PageDown
        | Action::PageUp => navigate(state, action),
        Action::TogglePlay
        | Action::Step
        | Action::PrevStage
        | Action::NextStage
        | Action::Slower
        | Action::Faster => {
            if let Some(r) = &mut state.replay {
                match action {
                    Action::TogglePlay => r.toggle(),
                    Action::Step => {
                        r.clock.step();
                    }
                    Action::PrevStage => {
                        r.clock.prev_stage();
                    }
                    Action::NextStage => {
                        r.clock.next_stage();
                    }
                    Action::Slower => r.clock.slower(),
                    _ => r.clock.faster(),
                }
            }
        }
        // Palette commands with an argument, the modal's keys, and the agent's commands are
        // run by the palette, the approval modal and the agent.
        // A key bound in `[keys]` to a palette command without an argument runs it.
        a if a.spec().palette && a.spec().arg.is_empty() => {
            return super::palette_state::run_command(state, a.name());
        }
        _ => {}
    }
    Vec::new()
}

pub(crate) fn open_approval(state: &mut AppState) {
    match state
        .pending()
        .map(|a| (a.action.id.clone(), a.digest.clone()))
    {
        Some((id, digest)) => {
            state.dismissed.remove(&id);
            state.submitted.remove(&id);
            state.overlay = Some(Overlay::Approval(Box::new(ApprovalUi::new(id, digest))));
        }
        None => state.set_status("nothing is waiting for approval", false),
    }
}

pub(crate) fn navigate(state: &mut AppState, action: Action) {
    let areas = state.areas();
    match state.focus {
        Pane::Timeline | Pane::Chat => {
            let len = state.timeline_len();
            let half = (layout::inner_height(areas.timeline) / 2).max(1);
            let sel = state.timeline_sel;
            let new = match action {
                Action::Down => sel + 1,
                Action::Up => sel.saturating_sub(1),
                Action::Top => 0,
                Action::Bottom => len.saturating_sub(1),
                Action::PageDown => sel + half,
                _ => sel.saturating_sub(half),
            }
            .min(len.saturating_sub(1));
            // Following resumes only when the operator goes back to the newest row.
            state.follow = action == Action::Bottom
                || (new + 1 >= len
                    && action != Action::Up
                    && action != Action::PageUp
                    && action != Action::Top);
            if new != sel {
                state.timeline_sel = new;
                state.selection_changed();
            }
        }
        Pane::Evidence => state.evidence.apply(to_move(action)),
        Pane::Summary => state.summary.apply(to_move(action)),
    }
}

fn to_move(action: Action) -> Move {
    match action {
        Action::Down => Move::Down,
        Action::Up => Move::Up,
        Action::Top => Move::Top,
        Action::Bottom => Move::Bottom,
        Action::PageDown => Move::PageDown,
        _ => Move::PageUp,
    }
}

/// A printable character typed into an input (no ctrl or alt held).
pub(super) fn is_text(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::Char(_))
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// The command a key runs while a text input has focus (`scope` first, then the global and
/// navigation keys); `None` for a printable character, which is text, not a command.
pub(super) fn input_key_action(
    state: &AppState,
    key: &KeyEvent,
    k: Key,
    scope: Scope,
) -> Option<Action> {
    if is_text(key) {
        None
    } else {
        state
            .keymap
            .lookup(k, &[scope, Scope::Global, Scope::Navigation])
    }
}

fn on_chat_key(state: &mut AppState, key: KeyEvent, k: Key) -> Vec<Effect> {
    // Typing goes to the input; keys without text come from the table.
    let action = input_key_action(state, &key, k, Scope::Chat);
    match action {
        Some(a @ (Action::PageUp | Action::PageDown)) if key.modifiers.is_empty() => {
            state.chat.apply(to_move(a));
            if state.chat.top() + state.chat.height() >= state.chat.len() {
                state.chat.follow = true;
            }
            Vec::new()
        }
        Some(Action::Back) => {
            state.focus = Pane::Timeline;
            Vec::new()
        }
        Some(a @ (Action::NextPane | Action::PrevPane)) => run_action(state, a),
        Some(Action::Send) => {
            let text = state.chat_input.lines().join(" ").trim().to_string();
            state.chat_input.select_all();
            state.chat_input.cut();
            if text.is_empty() {
                return Vec::new();
            }
            chat_command(state, &text)
        }
        _ => {
            state.chat_input.input(key);
            Vec::new()
        }
    }
}

/// A line typed in the chat pane: slash commands are handled here, the rest goes to the agent.
pub fn chat_command(state: &mut AppState, text: &str) -> Vec<Effect> {
    // `/name args` runs the palette's command of that name: one table for both.
    if let Some(line) = text.strip_prefix('/') {
        let word = line.split_whitespace().next().unwrap_or("");
        if Action::from_name(word).is_some_and(|c| c.spec().palette) {
            return super::palette_state::run_command(state, line.trim());
        }
    }
    if state.agent_done {
        state.set_status(
            "the investigation has ended; the agent no longer listens",
            true,
        );
        return Vec::new();
    }
    vec![Effect::SendCommand(Command::Chat {
        text: text.to_string(),
    })]
}
