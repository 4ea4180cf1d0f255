//! The demo chooser's state and reducer: which scenarios match the filter and which is highlighted.

use super::keymap::{Action, Key, Keymap, Scope};
use super::theme::Theme;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// One scenario as the chooser lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub title: String,
    /// What the scenario exercises (fault class and fix), empty when unknown.
    pub about: String,
    pub difficulty: Option<u32>,
}

/// What the chooser asks the event loop to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Start this scenario.
    Start(String),
    /// Leave without starting anything.
    Quit,
}

#[derive(Clone, Debug)]
pub enum ChooserMsg {
    Key(KeyEvent),
    Resize(u16, u16),
}

#[derive(Clone, Debug)]
pub struct ChooserState {
    pub theme: Theme,
    pub keymap: Keymap,
    pub entries: Vec<Entry>,
    /// The applied filter (lowercase match on name or title); empty shows everything.
    pub filter: String,
    /// The `/` prompt while it is being typed; the list follows it as it changes.
    pub filter_input: Option<String>,
    /// Index into `entries` of the highlighted scenario.
    pub selected: usize,
    pub help: bool,
    pub size: (u16, u16),
}

impl ChooserState {
    pub fn new(theme: Theme, keymap: Keymap, entries: Vec<Entry>) -> ChooserState {
        ChooserState {
            theme,
            keymap,
            entries,
            filter: String::new(),
            filter_input: None,
            selected: 0,
            help: false,
            size: (80, 24),
        }
    }

    /// The filter in force: the prompt while typing, else the applied one.
    pub fn active_filter(&self) -> &str {
        self.filter_input.as_deref().unwrap_or(&self.filter)
    }

    /// Indices into `entries` of the scenarios the filter lets through, in order.
    pub fn visible(&self) -> Vec<usize> {
        let needle = self.active_filter().trim().to_lowercase();
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                needle.is_empty()
                    || e.name.to_lowercase().contains(&needle)
                    || e.title.to_lowercase().contains(&needle)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The scenario Enter would start, if any matches the filter.
    pub fn highlighted(&self) -> Option<&Entry> {
        self.visible()
            .contains(&self.selected)
            .then(|| self.entries.get(self.selected))
            .flatten()
    }

    /// Keep the highlight on a visible scenario: the same one when it still matches, else the first.
    fn settle(&mut self) {
        let visible = self.visible();
        if !visible.contains(&self.selected)
            && let Some(first) = visible.first()
        {
            self.selected = *first;
        }
    }

    /// Move the highlight by `delta` visible rows, clamped at the ends.
    fn step(&mut self, delta: isize) {
        let visible = self.visible();
        let Some(pos) = visible.iter().position(|i| *i == self.selected) else {
            if let Some(first) = visible.first() {
                self.selected = *first;
            }
            return;
        };
        let last = visible.len().saturating_sub(1) as isize;
        let to = (pos as isize + delta).clamp(0, last) as usize;
        if let Some(i) = visible.get(to) {
            self.selected = *i;
        }
    }
}

pub fn update(state: &mut ChooserState, msg: ChooserMsg) -> Option<Choice> {
    match msg {
        ChooserMsg::Resize(w, h) => {
            state.size = (w, h);
            None
        }
        ChooserMsg::Key(key) if key.kind == KeyEventKind::Release => None,
        ChooserMsg::Key(key) => on_key(state, key),
    }
}

fn on_key(state: &mut ChooserState, key: KeyEvent) -> Option<Choice> {
    let k = Key::from_event(&key);
    if k == Key::new(KeyCode::Char('c'), KeyModifiers::CONTROL) {
        return Some(Choice::Quit);
    }
    if let Some(input) = &mut state.filter_input {
        match key.code {
            KeyCode::Esc => {
                // Cancelling the prompt restores the list as it was before `/`.
                state.filter_input = None;
            }
            KeyCode::Enter => {
                state.filter = input.trim().to_string();
                state.filter_input = None;
            }
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Down => state.step(1),
            KeyCode::Up => state.step(-1),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
            _ => {}
        }
        state.settle();
        return None;
    }
    let action = state.keymap.lookup(k, &[Scope::Navigation, Scope::Global]);
    if state.help {
        match action {
            Some(Action::Quit) => return Some(Choice::Quit),
            Some(Action::Back | Action::Help) => state.help = false,
            _ => {}
        }
        return None;
    }
    if key.code == KeyCode::Enter {
        return state.highlighted().map(|e| Choice::Start(e.name.clone()));
    }
    match action? {
        Action::Quit => return Some(Choice::Quit),
        Action::Back if !state.filter.is_empty() => {
            // Esc first clears a filter; on the bare list it leaves.
            state.filter.clear();
            state.settle();
        }
        Action::Back => return Some(Choice::Quit),
        Action::Help => state.help = true,
        Action::Search => state.filter_input = Some(state.filter.clone()),
        Action::Down => state.step(1),
        Action::Up => state.step(-1),
        Action::PageDown => state.step(3),
        Action::PageUp => state.step(-3),
        Action::Top => state.step(isize::MIN / 2),
        Action::Bottom => state.step(isize::MAX / 2),
        _ => {}
    }
    None
}
