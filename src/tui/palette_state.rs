//! The `:` command palette's state and keys: commands, completion and running a command line.

use super::reducer::open_approval;
use super::scroll::Scroll;
use super::search::{Mode, apply};
use super::state::{AppState, Effect, Overlay, Pane};
use super::theme::Theme;
use crate::model::Command;
use crate::session::replay::{MAX_SPEED, MIN_SPEED};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Default)]
pub struct PaletteState {
    pub input: String,
    pub selected: usize,
}

/// Palette commands: (name, argument hint, description).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("approve", "", "open the pending approval"),
    ("cancel", "", "cancel the investigation"),
    (
        "export",
        "",
        "write the report (markdown) next to the session file",
    ),
    (
        "filter",
        "TEXT",
        "keep only the rows of the focused pane that match",
    ),
    ("follow", "", "follow the live timeline"),
    ("help", "", "show the keys"),
    ("pane", "timeline|evidence|chat|summary", "focus a pane"),
    ("quit", "", "leave sitrep"),
    ("report", "", "show the report (rendered markdown)"),
    ("runbook", "NAME", "ask the agent to run a runbook"),
    (
        "search",
        "TEXT",
        "mark matches in the focused pane (n/N jump)",
    ),
    ("seek", "PERCENT", "replay: jump to a point"),
    ("speed", "0.25..64", "replay: playback speed"),
    (
        "theme",
        "default|light|high-contrast|mono",
        "switch the colour theme",
    ),
    (
        "tool",
        "KIND {JSON}",
        "run a read tool by hand (catalog or MCP)",
    ),
];

/// Commands whose name starts with what was typed (before the first space).
pub fn palette_candidates(input: &str) -> Vec<&'static (&'static str, &'static str, &'static str)> {
    let word = input.split_whitespace().next().unwrap_or("");
    let exact = input.contains(' ');
    COMMANDS
        .iter()
        .filter(|(n, _, _)| {
            if exact {
                *n == word
            } else {
                n.starts_with(word)
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
    match key.code {
        KeyCode::Esc => return Vec::new(),
        KeyCode::Up => p.selected = p.selected.saturating_sub(1),
        KeyCode::Down => p.selected = (p.selected + 1).min(cands.len().saturating_sub(1)),
        KeyCode::Tab => {
            if let Some((name, arg, _)) = cands.get(p.selected) {
                if !p.input.contains(' ') {
                    p.input = if arg.is_empty() {
                        name.to_string()
                    } else {
                        format!("{name} ")
                    };
                }
                p.selected = 0;
            }
        }
        KeyCode::Backspace => {
            p.input.pop();
            p.selected = 0;
        }
        KeyCode::Enter => {
            let line = if p.input.trim().is_empty() || !p.input.contains(' ') {
                match cands.get(p.selected) {
                    Some((name, _, _)) if !p.input.trim().is_empty() || !cands.is_empty() => {
                        if p.input.trim().is_empty() || name.starts_with(p.input.trim()) {
                            name.to_string()
                        } else {
                            p.input.clone()
                        }
                    }
                    _ => p.input.clone(),
                }
            } else {
                p.input.clone()
            };
            return run_command(state, line.trim());
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            p.input.push(c);
            p.selected = 0;
        }
        _ => {}
    }
    state.overlay = Some(Overlay::Palette(p));
    Vec::new()
}

/// Run one palette command line.
pub fn run_command(state: &mut AppState, line: &str) -> Vec<Effect> {
    let (cmd, arg) = line
        .split_once(' ')
        .map(|(c, a)| (c, a.trim()))
        .unwrap_or((line, ""));
    match cmd {
        "" => {}
        "approve" => open_approval(state),
        "cancel" if state.is_replay() => state.set_status("replay is read-only", true),
        "cancel" => return vec![Effect::SendCommand(Command::Cancel)],
        "export" => return vec![Effect::ExportReport],
        "quit" | "q" => return vec![Effect::Quit],
        "help" => state.overlay = Some(Overlay::Help { scroll: 0 }),
        "follow" => {
            state.follow = true;
            state.filter = None;
            state.focus = Pane::Timeline;
        }
        "filter" => apply(state, arg, Mode::Filter),
        "search" => apply(state, arg, Mode::Search),
        "report" => show_report(state),
        "pane" => match Pane::ORDER.iter().find(|p| p.name() == arg) {
            Some(p) => state.focus = *p,
            None => state.set_status(
                format!("unknown pane {arg:?}: timeline, evidence, chat or summary"),
                true,
            ),
        },
        "runbook" if arg.is_empty() => {
            state.set_status("usage: :runbook NAME, or /runbook NAME in chat", true)
        }
        // The agent reads runbook requests from the conversation.
        "runbook" if state.agent_done => state.set_status(
            "the investigation has ended; the agent no longer listens",
            true,
        ),
        "runbook" => {
            return vec![Effect::SendCommand(Command::Chat {
                text: format!("/runbook {arg}"),
            })];
        }
        "tool" if state.is_replay() => state.set_status("replay is read-only", true),
        "tool" if state.agent_done => state.set_status(
            "the investigation has ended; the agent no longer listens",
            true,
        ),
        // The agent runs it and answers in the chat pane; the call lands on the timeline.
        "tool" => {
            return vec![Effect::SendCommand(Command::Chat {
                text: format!("/tool {arg}"),
            })];
        }
        "theme" => match Theme::resolve(Some(arg), false) {
            Ok(t) => {
                let t = t.for_terminal(super::theme::truecolor_env());
                state.set_status(format!("theme {}", t.name), false);
                state.theme = t;
            }
            Err(e) => state.set_status(e.to_string(), true),
        },
        "speed" | "seek" => {
            let Some(r) = &mut state.replay else {
                state.set_status(format!("{cmd} works in replays only"), true);
                return Vec::new();
            };
            let n: Option<f64> = arg.trim_end_matches(['x', '%']).parse().ok();
            match (cmd, n) {
                ("speed", Some(s)) if (MIN_SPEED..=MAX_SPEED).contains(&s) => r.clock.set_speed(s),
                ("seek", Some(p)) if (0.0..=100.0).contains(&p) => r.clock.seek_fraction(p / 100.0),
                ("speed", _) => state.set_status("speed: 0.25 to 64 (times real time)", true),
                _ => state.set_status("seek: a percentage 0-100", true),
            }
        }
        other => state.set_status(
            format!("unknown command {other:?} (: then tab lists them)"),
            true,
        ),
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
