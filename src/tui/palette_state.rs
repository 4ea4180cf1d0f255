//! The `:` command palette's state and keys: commands, completion and running a command line.

use super::keymap::{Action, Key, Scope, Spec};
use super::scroll::Scroll;
use super::search::{Mode, apply};
use super::state::{AppState, Effect, Overlay, Pane};
use super::theme::Theme;
use crate::model::{Command, commands};
use crate::session::replay::{MAX_SPEED, MIN_SPEED};
use crossterm::event::{KeyCode, KeyEvent};

#[derive(Default)]
pub struct PaletteState {
    pub input: String,
    pub selected: usize,
}

/// Palette commands whose name starts with what was typed (before the first space).
pub fn palette_candidates(input: &str) -> Vec<&'static Spec> {
    let word = input.split_whitespace().next().unwrap_or("");
    let exact = input.contains(' ');
    commands::palette()
        .filter(|s| {
            if exact {
                s.name == word || s.aliases.contains(&word)
            } else {
                s.name.starts_with(word)
            }
        })
        .collect()
}

pub(crate) fn on_palette_key(
    state: &mut AppState,
    mut p: PaletteState,
    key: KeyEvent,
) -> Vec<Effect> {
    let cands = palette_candidates(&p.input);
    let k = Key::from_event(&key);
    // Printable characters are the command line; other keys come from the table.
    let typed = super::reducer::is_text(&key);
    let action = super::reducer::input_key_action(state, &key, k, Scope::Palette);
    match (action, key.code) {
        (Some(Action::Back | Action::Quit), _) => return Vec::new(),
        (Some(Action::Up), _) => p.selected = p.selected.saturating_sub(1),
        (Some(Action::Down), _) => p.selected = (p.selected + 1).min(cands.len().saturating_sub(1)),
        (Some(Action::Complete), _) => {
            if let Some(spec) = cands.get(p.selected) {
                if !p.input.contains(' ') {
                    p.input = if spec.arg.is_empty() {
                        spec.name.to_string()
                    } else {
                        format!("{} ", spec.name)
                    };
                }
                p.selected = 0;
            }
        }
        (Some(Action::Run), _) => {
            let typed = p.input.trim();
            let line = if typed.is_empty() || !p.input.contains(' ') {
                match cands.get(p.selected) {
                    Some(spec) if typed.is_empty() || spec.name.starts_with(typed) => {
                        spec.name.to_string()
                    }
                    _ => p.input.clone(),
                }
            } else {
                p.input.clone()
            };
            return run_command(state, line.trim());
        }
        (_, KeyCode::Backspace) => {
            p.input.pop();
            p.selected = 0;
        }
        (None, KeyCode::Char(c)) if typed => {
            p.input.push(c);
            p.selected = 0;
        }
        _ => {}
    }
    state.overlay = Some(Overlay::Palette(p));
    Vec::new()
}

/// Run one command line (`:name ARG`, or `/name ARG` typed in chat).
pub fn run_command(state: &mut AppState, line: &str) -> Vec<Effect> {
    let (word, arg) = line
        .split_once(' ')
        .map(|(c, a)| (c, a.trim()))
        .unwrap_or((line, ""));
    if word.is_empty() {
        return Vec::new();
    }
    let Some(cmd) = Action::from_name(word).filter(|c| c.spec().palette) else {
        state.set_status(
            format!("unknown command {word:?} (: then tab lists them)"),
            true,
        );
        return Vec::new();
    };
    match cmd {
        Action::Cancel if state.is_replay() => state.set_status("replay is read-only", true),
        Action::Cancel => return vec![Effect::SendCommand(Command::Cancel)],
        Action::Export => return vec![Effect::ExportReport],
        Action::Follow => {
            state.follow = true;
            state.filter = None;
            state.focus = Pane::Timeline;
        }
        Action::Filter | Action::Search if !arg.is_empty() => {
            let mode = if cmd == Action::Filter {
                Mode::Filter
            } else {
                Mode::Search
            };
            apply(state, arg, mode);
        }
        Action::Pane => match Pane::ORDER.iter().find(|p| p.name() == arg) {
            Some(p) => state.focus = *p,
            None => state.set_status(
                format!("unknown pane {arg:?}: timeline, evidence, chat or summary"),
                true,
            ),
        },
        Action::Runbook if arg.is_empty() => {
            state.set_status("usage: :runbook NAME, or /runbook NAME in chat", true)
        }
        // The agent answers its own commands from the conversation.
        a if a.scope() == Scope::Agent && state.agent_done => state.set_status(
            "the investigation has ended; the agent no longer listens",
            true,
        ),
        a if a.scope() == Scope::Agent => {
            let text = if arg.is_empty() {
                format!("/{}", a.name())
            } else {
                format!("/{} {arg}", a.name())
            };
            return vec![Effect::SendCommand(Command::Chat { text })];
        }
        Action::Theme => match Theme::resolve(Some(arg), false) {
            Ok(t) => {
                let t = t.for_terminal(super::theme::truecolor_env());
                state.set_status(format!("theme {}", t.name), false);
                state.theme = t;
            }
            Err(e) => state.set_status(e.to_string(), true),
        },
        Action::Speed | Action::Seek if !arg.is_empty() || cmd == Action::Speed => {
            let Some(r) = &mut state.replay else {
                state.set_status(format!("{word} works in replays only"), true);
                return Vec::new();
            };
            let n: Option<f64> = arg.trim_end_matches(['x', '%']).parse().ok();
            match (cmd, n) {
                (Action::Speed, Some(s)) if (MIN_SPEED..=MAX_SPEED).contains(&s) => {
                    r.clock.set_speed(s)
                }
                (Action::Seek, Some(p)) if (0.0..=100.0).contains(&p) => {
                    r.clock.seek_fraction(p / 100.0)
                }
                (Action::Speed, _) => state.set_status("speed: 0.25 to 64 (times real time)", true),
                _ => state.set_status("seek: a percentage 0-100", true),
            }
        }
        Action::Seek => state.set_status("usage: :seek PERCENT", true),
        // Commands that are also keys run exactly as their key does.
        other => return super::reducer::run_action(state, other),
    }
    Vec::new()
}

/// Open the report view, or say why there is none yet.
pub fn show_report(state: &mut AppState) {
    if state.incident().report.is_some() {
        state.overlay = Some(Overlay::Report(Scroll::wrapped()));
    } else {
        state.set_status(
            "no report yet: it is written when the investigation ends",
            false,
        );
    }
}
