//! One command language: the palette, `?` help, chat slash commands, the agent's chat commands
//! and the key-hint bar all come from the command table, and no two commands clash.

#[path = "tui_fixtures.rs"]
mod fixtures;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sitrep::model::commands::{self, Scope, TABLE};
use sitrep::model::{Command, Risk};
use sitrep::tui::app::{AppState, Effect, Msg, Overlay, chat_command, palette_candidates, update};
use sitrep::tui::keymap::{Action, Keymap};
use std::collections::HashMap;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn no_two_commands_share_a_key_in_one_scope() {
    let km = Keymap::default();
    // Scopes looked up together must not clash either (live mode reads Global then Navigation).
    let groups: Vec<Vec<Scope>> = vec![
        vec![Scope::Global, Scope::Navigation],
        vec![Scope::Approval],
        vec![Scope::Replay],
        vec![Scope::Palette],
        vec![Scope::Chat],
    ];
    for group in groups {
        let mut seen = HashMap::new();
        for a in Action::all().filter(|a| group.contains(&a.scope())) {
            for k in km.keys(a) {
                if let Some(other) = seen.insert(*k, a) {
                    panic!("{k} is bound to both {} and {}", other.name(), a.name());
                }
            }
        }
    }
    // Every default key in the table parses.
    for spec in TABLE {
        assert_eq!(km.keys(spec.cmd).len(), spec.keys.len(), "{}", spec.name);
    }
}

#[test]
fn the_palette_lists_exactly_the_tables_palette_commands() {
    let listed: Vec<&str> = palette_candidates("").iter().map(|s| s.name).collect();
    let table: Vec<&str> = commands::palette().map(|s| s.name).collect();
    assert_eq!(listed, table);
    assert!(listed.contains(&"report") && listed.contains(&"runbook"));
    assert!(
        !listed.contains(&"down"),
        "plain moves are keys, not commands"
    );
}

#[test]
fn slash_commands_in_chat_are_the_palettes_and_the_rest_go_to_the_agent() {
    for spec in commands::palette() {
        let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
        let line = if spec.arg.is_empty() {
            format!("/{}", spec.name)
        } else {
            format!("/{} x", spec.name)
        };
        let effects = chat_command(&mut s, &line);
        let forwarded = effects
            .iter()
            .any(|e| matches!(e, Effect::SendCommand(Command::Chat { .. })));
        assert_eq!(
            forwarded,
            spec.scope == Scope::Agent,
            "{line}: only the agent's own commands are forwarded: {effects:?}"
        );
    }
    // The agent's commands that are not console commands, and free text, reach the agent.
    for text in ["/why", "/status", "what changed?"] {
        let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
        assert_eq!(
            chat_command(&mut s, text),
            vec![Effect::SendCommand(Command::Chat { text: text.into() })]
        );
    }
}

#[test]
fn help_lists_every_keyed_command_and_every_palette_and_agent_command() {
    let s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    let text: String = sitrep::tui::help::lines(&s)
        .iter()
        .map(|l| l.to_string() + "\n")
        .collect();
    for spec in TABLE {
        let shown = text.contains(spec.help);
        assert!(shown, "help misses {} ({})", spec.name, spec.help);
    }
    for spec in commands::palette().chain(commands::agent()) {
        assert!(text.contains(&commands::usage(spec)), "{}", spec.name);
    }
}

fn bar(s: &AppState) -> String {
    let mut term = Terminal::new(TestBackend::new(200, 1)).expect("terminal");
    term.draw(|f| sitrep::tui::statusbar::render_keyhints(s, f, f.area(), false))
        .expect("draw");
    let buf = term.backend().buffer().clone();
    (0..buf.area.width)
        .map(|x| buf[(x, 0)].symbol().to_string())
        .collect()
}

#[test]
fn every_hint_bar_entry_comes_from_the_table() {
    let mut states: Vec<AppState> = Vec::new();
    states.push(fixtures::live(&fixtures::mid_gather(), 200, 50));
    states.push(fixtures::live(
        &fixtures::awaiting_approval(Risk::High),
        200,
        50,
    ));
    let mut chat = fixtures::live(&fixtures::mid_gather(), 200, 50);
    update(
        &mut chat,
        Msg::Key(KeyEvent::new(KeyCode::Char('3'), KeyModifiers::NONE)),
    );
    states.push(chat);
    let mut palette = fixtures::live(&fixtures::mid_gather(), 200, 50);
    update(
        &mut palette,
        Msg::Key(KeyEvent::new(KeyCode::Char(':'), KeyModifiers::NONE)),
    );
    assert!(matches!(palette.overlay, Some(Overlay::Palette(_))));
    states.push(palette);
    let mut help = fixtures::live(&fixtures::full_session(), 200, 50);
    update(&mut help, key(KeyCode::Char('?')));
    states.push(help);
    for s in &states {
        let groups = sitrep::tui::statusbar::hints(s);
        assert!(!groups.is_empty());
        let shown = bar(s);
        for g in &groups {
            let spec = g[0].spec();
            assert!(!spec.hint.is_empty(), "{} has no hint label", spec.name);
            let label = format!("{} {}", s.keymap.short_label(g), spec.hint);
            assert!(shown.contains(&label), "{label:?} not in {shown:?}");
        }
        // Nothing on the bar that the table did not give.
        let expected: usize = groups
            .iter()
            .map(|g| s.keymap.short_label(g).chars().count() + g[0].spec().hint.chars().count() + 3)
            .sum();
        assert_eq!(shown.trim_end().chars().count(), expected - 1, "{shown:?}");
    }
}

#[test]
fn a_remapped_key_shows_in_the_hint_bar_and_help() {
    let mut o = std::collections::BTreeMap::new();
    o.insert("help".to_string(), "f1".to_string());
    let km = Keymap::with_overrides(&o).expect("valid override");
    let mut s = fixtures::live(&fixtures::mid_gather(), 200, 50);
    s.keymap = km;
    assert!(bar(&s).contains(" f1 help "));
    // The old key no longer opens help.
    update(&mut s, key(KeyCode::Char('?')));
    assert!(s.overlay.is_none());
    update(&mut s, key(KeyCode::F(1)));
    assert!(matches!(s.overlay, Some(Overlay::Help { .. })));
}

#[test]
fn a_key_bound_to_a_palette_command_runs_it() {
    let mut o = std::collections::BTreeMap::new();
    o.insert("export".to_string(), "x".to_string());
    let km = Keymap::with_overrides(&o).expect("valid override");
    let mut s = fixtures::live(&fixtures::mid_gather(), 120, 40);
    s.keymap = km;
    assert_eq!(
        update(&mut s, key(KeyCode::Char('x'))),
        vec![Effect::ExportReport]
    );
}
