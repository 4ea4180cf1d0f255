//! The inbox screen's state and reducer: polled alerts, grouping, the label filter, selection, prompts.

use super::keymap::{Action, Key, Keymap, Scope};
use super::theme::Theme;
use crate::inbox::{self, Filter, Group, InboxAlert, Snapshot, SourceHealth};
use crate::model::{Action as Proposal, WebhookPayload};
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Default silence length from the inbox.
pub const SILENCE_MINUTES: u64 = 120;

/// One line of the list: a group header or one of its alerts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    Group(usize),
    Alert(usize, usize),
}

/// A question the inbox is asking in its bottom line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// The comment of a silence of the selected alert or group.
    Silence(String),
    /// A note for the selected PagerDuty incident.
    Note(String),
}

/// What the inbox asks its event loop to do.
#[derive(Clone, Debug, PartialEq)]
pub enum InboxChoice {
    /// Investigate these alerts, with the operator's proposed actions.
    Investigate {
        payload: Box<WebhookPayload>,
        proposals: Vec<Proposal>,
        fingerprints: Vec<String>,
    },
    /// Open the session already investigating the selected alert.
    Reopen(PathBuf),
    Quit,
}

#[derive(Clone, Debug)]
pub enum InboxMsg {
    Key(KeyEvent),
    Resize(u16, u16),
    /// A poll finished, at this time.
    Snapshot(Snapshot, DateTime<Utc>),
}

#[derive(Clone, Debug)]
pub struct InboxState {
    pub theme: Theme,
    pub keymap: Keymap,
    pub alerts: Vec<InboxAlert>,
    pub health: Vec<SourceHealth>,
    pub group_by: Vec<String>,
    pub filter: Filter,
    /// The applied filter text.
    pub filter_text: String,
    /// The `/` prompt while it is typed.
    pub filter_input: Option<String>,
    pub filter_error: Option<String>,
    pub prompt: Option<Prompt>,
    pub selected: usize,
    /// First visible row.
    pub offset: usize,
    /// Fingerprint -> session file of an investigation started from here.
    pub sessions: BTreeMap<String, PathBuf>,
    /// Fingerprints seen so far: a firing alert not among them is new.
    pub seen: BTreeSet<String>,
    /// Whether a first poll has come in (nothing is "new" in the first one).
    pub loaded: bool,
    pub show_labels: bool,
    pub help: bool,
    pub size: (u16, u16),
    pub now: DateTime<Utc>,
    pub status: Option<String>,
    /// Operator name put on proposals.
    pub operator: String,
}

impl InboxState {
    pub fn new(theme: Theme, keymap: Keymap, group_by: Vec<String>, operator: String) -> Self {
        InboxState {
            theme,
            keymap,
            alerts: Vec::new(),
            health: Vec::new(),
            group_by,
            filter: Filter::default(),
            filter_text: String::new(),
            filter_input: None,
            filter_error: None,
            prompt: None,
            selected: 0,
            offset: 0,
            sessions: BTreeMap::new(),
            seen: BTreeSet::new(),
            loaded: false,
            show_labels: true,
            help: false,
            size: (80, 24),
            now: Utc::now(),
            status: None,
            operator,
        }
    }

    /// Indices of the alerts the filter lets through.
    pub fn visible(&self) -> Vec<usize> {
        let live;
        let filter = match &self.filter_input {
            Some(text) => match Filter::parse(text) {
                Ok(f) => {
                    live = f;
                    &live
                }
                Err(_) => &self.filter,
            },
            None => &self.filter,
        };
        (0..self.alerts.len())
            .filter(|i| filter.matches(&self.alerts[*i]))
            .collect()
    }

    pub fn groups(&self) -> Vec<Group> {
        inbox::group_alerts(&self.alerts, &self.visible(), &self.group_by)
    }

    /// Group headers each followed by their alerts.
    pub fn rows(&self, groups: &[Group]) -> Vec<Row> {
        let mut rows = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            rows.push(Row::Group(gi));
            for &a in &g.alerts {
                rows.push(Row::Alert(gi, a));
            }
        }
        rows
    }

    /// The selected row, resolved.
    pub fn selection(&self) -> Option<(Vec<Group>, Row)> {
        let groups = self.groups();
        let rows = self.rows(&groups);
        let row = *rows.get(self.selected.min(rows.len().saturating_sub(1)))?;
        Some((groups, row))
    }

    /// The alerts the selection covers: one alert, or a whole group.
    fn selected_alerts(&self) -> Option<(Vec<&InboxAlert>, BTreeMap<String, String>)> {
        let (groups, row) = self.selection()?;
        match row {
            Row::Group(gi) => {
                let g = groups.get(gi)?;
                Some((
                    g.alerts
                        .iter()
                        .filter_map(|i| self.alerts.get(*i))
                        .collect(),
                    g.labels.clone(),
                ))
            }
            Row::Alert(gi, a) => Some((
                vec![self.alerts.get(a)?],
                groups.get(gi).map(|g| g.labels.clone()).unwrap_or_default(),
            )),
        }
    }

    /// How many alerts need attention (firing or triggered).
    pub fn firing(&self) -> usize {
        self.alerts
            .iter()
            .filter(|a| a.state.needs_attention())
            .count()
    }

    /// Rows the list shows at the current size.
    pub fn page(&self) -> usize {
        usize::from(self.size.1).saturating_sub(6).max(1)
    }

    fn clamp(&mut self) {
        let n = self.rows(&self.groups()).len();
        self.selected = self.selected.min(n.saturating_sub(1));
        let page = self.page();
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + page {
            self.offset = self.selected + 1 - page;
        }
    }

    fn step(&mut self, delta: isize) {
        let n = self.rows(&self.groups()).len() as isize;
        self.selected = (self.selected as isize + delta).clamp(0, (n - 1).max(0)) as usize;
        self.clamp();
    }

    /// Takes in a poll; returns how many alerts are new and need attention (for the bell).
    pub fn apply(&mut self, snapshot: Snapshot, now: DateTime<Utc>) -> usize {
        // Keep the selection on the same alert when the list reorders.
        let keep = self.selection().and_then(|(_, row)| match row {
            Row::Alert(_, a) => self.alerts.get(a).map(|a| a.fingerprint.clone()),
            Row::Group(_) => None,
        });
        let new = snapshot
            .alerts
            .iter()
            .filter(|a| a.state.needs_attention() && !self.seen.contains(&a.fingerprint))
            .count();
        for a in &snapshot.alerts {
            self.seen.insert(a.fingerprint.clone());
        }
        self.alerts = snapshot.alerts;
        self.health = snapshot.health;
        self.now = now;
        let first = !self.loaded;
        self.loaded = true;
        if let Some(fp) = keep {
            let groups = self.groups();
            if let Some(pos) = self
                .rows(&groups)
                .iter()
                .position(|r| matches!(r, Row::Alert(_, a) if self.alerts[*a].fingerprint == fp))
            {
                self.selected = pos;
            }
        }
        self.clamp();
        if first { 0 } else { new }
    }
}

pub fn update(state: &mut InboxState, msg: InboxMsg) -> Option<InboxChoice> {
    match msg {
        InboxMsg::Resize(w, h) => {
            state.size = (w, h);
            state.clamp();
            None
        }
        InboxMsg::Snapshot(s, now) => {
            state.apply(s, now);
            None
        }
        InboxMsg::Key(key) if key.kind == KeyEventKind::Release => None,
        InboxMsg::Key(key) => on_key(state, key),
    }
}

fn on_prompt(state: &mut InboxState, key: KeyEvent) -> Option<InboxChoice> {
    let Some(prompt) = &mut state.prompt else {
        return None;
    };
    let text = match prompt {
        Prompt::Silence(t) | Prompt::Note(t) => t,
    };
    match key.code {
        KeyCode::Esc => state.prompt = None,
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        KeyCode::Enter => {
            let prompt = state.prompt.take()?;
            let (alerts, group_labels) = state.selected_alerts()?;
            let proposal = match &prompt {
                Prompt::Silence(comment) => {
                    let matchers = inbox::actions::common_labels(&alerts);
                    inbox::actions::silence(&matchers, SILENCE_MINUTES, comment, &state.operator)
                }
                Prompt::Note(text) => alerts
                    .first()
                    .and_then(|a| inbox::actions::pagerduty_note(a, text)),
            };
            let Some(proposal) = proposal else {
                state.status = Some("nothing to do: no labels to match, or an empty note".into());
                return None;
            };
            return Some(investigate(&alerts, &group_labels, vec![proposal]));
        }
        _ => {}
    }
    None
}

fn investigate(
    alerts: &[&InboxAlert],
    group_labels: &BTreeMap<String, String>,
    proposals: Vec<Proposal>,
) -> InboxChoice {
    InboxChoice::Investigate {
        payload: Box::new(inbox::payload_for(alerts, group_labels)),
        proposals,
        fingerprints: alerts.iter().map(|a| a.fingerprint.clone()).collect(),
    }
}

fn on_key(state: &mut InboxState, key: KeyEvent) -> Option<InboxChoice> {
    let k = Key::from_event(&key);
    if k == Key::new(KeyCode::Char('c'), KeyModifiers::CONTROL) {
        return Some(InboxChoice::Quit);
    }
    if state.prompt.is_some() {
        return on_prompt(state, key);
    }
    if let Some(input) = &mut state.filter_input {
        match key.code {
            KeyCode::Esc => state.filter_input = None,
            KeyCode::Enter => match Filter::parse(input) {
                Ok(f) => {
                    state.filter = f;
                    state.filter_text = input.trim().to_string();
                    state.filter_input = None;
                    state.filter_error = None;
                }
                Err(e) => state.filter_error = Some(e.to_string()),
            },
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
            _ => {}
        }
        if let Some(text) = &state.filter_input {
            state.filter_error = Filter::parse(text).err().map(|e| e.message);
        }
        state.clamp();
        return None;
    }
    let action = state.keymap.lookup(k, &[Scope::Navigation, Scope::Global]);
    if state.help {
        match action {
            Some(Action::Quit) => return Some(InboxChoice::Quit),
            Some(Action::Back | Action::Help) => state.help = false,
            _ => {}
        }
        return None;
    }
    state.status = None;
    match key.code {
        KeyCode::Enter => {
            let (alerts, labels) = state.selected_alerts()?;
            // An alert someone here already investigates opens that session.
            if let [one] = alerts.as_slice()
                && let Some(path) = state.sessions.get(&one.fingerprint)
            {
                return Some(InboxChoice::Reopen(path.clone()));
            }
            return Some(investigate(&alerts, &labels, Vec::new()));
        }
        KeyCode::Char('s') => {
            let (alerts, _) = state.selected_alerts()?;
            if alerts.iter().any(|a| a.source == inbox::Source::PagerDuty) {
                state.status =
                    Some("PagerDuty incidents are acknowledged (A), not silenced".into());
            } else {
                state.prompt = Some(Prompt::Silence(String::new()));
            }
            return None;
        }
        KeyCode::Char('x') => {
            let (alerts, labels) = state.selected_alerts()?;
            let by = state.operator.clone();
            let ids: BTreeSet<&String> = alerts.iter().flat_map(|a| &a.silenced_by).collect();
            if ids.is_empty() {
                state.status = Some("not silenced: nothing to expire".into());
                return None;
            }
            let proposals = ids
                .into_iter()
                .map(|id| inbox::actions::expire_silence(id, &by))
                .collect();
            return Some(investigate(&alerts, &labels, proposals));
        }
        KeyCode::Char(c @ ('A' | 'R')) => {
            let (alerts, labels) = state.selected_alerts()?;
            let verb = if c == 'A' {
                inbox::actions::PdVerb::Acknowledge
            } else {
                inbox::actions::PdVerb::Resolve
            };
            let proposals: Vec<Proposal> = alerts
                .iter()
                .filter_map(|a| inbox::actions::pagerduty(a, verb, &state.operator))
                .collect();
            if proposals.is_empty() {
                state.status = Some("not a PagerDuty incident".into());
                return None;
            }
            return Some(investigate(&alerts, &labels, proposals));
        }
        KeyCode::Char('m') => {
            let (alerts, _) = state.selected_alerts()?;
            if alerts.iter().any(|a| a.incident_id.is_some()) {
                state.prompt = Some(Prompt::Note(String::new()));
            } else {
                state.status = Some("notes go on PagerDuty incidents".into());
            }
            return None;
        }
        KeyCode::Char('l') => {
            state.show_labels = !state.show_labels;
            return None;
        }
        _ => {}
    }
    let half = (state.page() / 2).max(1) as isize;
    match action? {
        Action::Quit => return Some(InboxChoice::Quit),
        Action::Back if !state.filter_text.is_empty() => {
            state.filter = Filter::default();
            state.filter_text.clear();
            state.clamp();
        }
        Action::Back => {}
        Action::Help => state.help = true,
        Action::Search => state.filter_input = Some(state.filter_text.clone()),
        Action::Down => state.step(1),
        Action::Up => state.step(-1),
        Action::PageDown => state.step(half),
        Action::PageUp => state.step(-half),
        Action::Top => state.step(isize::MIN / 2),
        Action::Bottom => state.step(isize::MAX / 2),
        _ => {}
    }
    None
}
