//! UI state as plain data and the reducer: `update(&mut AppState, Msg) -> Vec<Effect>`.

use super::keymap::{Action, Key, Keymap, Scope};
use super::layout::{self, Areas};
use super::theme::Theme;
use crate::model::{
    ActionStatus, Command, EvidenceBody, Incident, Record, Risk, Stage, TimelineKind,
};
use crate::session::replay::{MAX_SPEED, MIN_SPEED, Replay};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui_textarea::TextArea;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    Timeline,
    Evidence,
    Chat,
    Summary,
}

impl Pane {
    const ORDER: [Pane; 4] = [Pane::Timeline, Pane::Evidence, Pane::Chat, Pane::Summary];

    pub fn name(self) -> &'static str {
        match self {
            Pane::Timeline => "timeline",
            Pane::Evidence => "evidence",
            Pane::Chat => "chat",
            Pane::Summary => "summary",
        }
    }
}

/// Everything that can happen to the UI.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Record(Box<Record>),
    Resize(u16, u16),
    /// Live clock: seconds since the session started, for countdowns.
    Clock(f64),
    /// Replay: this much wall time passed.
    ReplayTick(f64),
    /// The agent task ended; the error, if it failed.
    AgentFinished(Option<String>),
    /// Syntax highlighting became available: redraw.
    SyntaxReady,
}

/// What the reducer asks the event loop to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    SendCommand(Command),
    Quit,
    ExportReport,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

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

#[derive(Default)]
pub struct PaletteState {
    pub input: String,
    pub selected: usize,
}

pub enum Overlay {
    Help { scroll: usize },
    Palette(PaletteState),
    Approval(Box<ApprovalUi>),
}

/// An applied `/` filter: matching rows in the timeline, or matching lines in the evidence.
pub struct Filter {
    pub pane: Pane,
    pub query: String,
    lowered: String,
    /// Timeline rows that match, in order.
    pub rows: Vec<usize>,
    scanned: usize,
}

impl Filter {
    pub fn matches(&self, text: &str) -> bool {
        contains_ci(text, &self.lowered)
    }
}

pub fn contains_ci(text: &str, lowered_query: &str) -> bool {
    if lowered_query.is_empty() {
        return true;
    }
    if text.is_ascii() && lowered_query.is_ascii() {
        let (h, n) = (text.as_bytes(), lowered_query.as_bytes());
        return h
            .windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b));
    }
    text.to_lowercase().contains(lowered_query)
}

/// Byte offsets of the lines of one text evidence item, so any line is found in O(1).
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    pub bytes: usize,
    pub starts: Vec<usize>,
}

impl LineIndex {
    fn extend(&mut self, text: &str) {
        if text.len() < self.bytes {
            *self = LineIndex::default();
        }
        let b = text.as_bytes();
        if self.bytes == 0 && !text.is_empty() {
            self.starts.push(0);
        } else if self.bytes > 0 && text.len() > self.bytes && b[self.bytes - 1] == b'\n' {
            self.starts.push(self.bytes);
        }
        for (i, c) in b.iter().enumerate().skip(self.bytes) {
            if *c == b'\n' && i + 1 < b.len() {
                self.starts.push(i + 1);
            }
        }
        self.bytes = text.len();
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    pub fn line<'t>(&self, text: &'t str, i: usize) -> &'t str {
        let Some(&start) = self.starts.get(i) else {
            return "";
        };
        let end = self
            .starts
            .get(i + 1)
            .map(|e| e - 1)
            .unwrap_or(self.bytes)
            .min(text.len());
        let s = text.get(start..end.max(start)).unwrap_or("");
        let s = s.strip_suffix('\n').unwrap_or(s);
        s.strip_suffix('\r').unwrap_or(s)
    }
}

/// Lookups from ids to positions in the incident, kept in step with the fold.
#[derive(Default)]
pub struct Index {
    events: usize,
    tools: HashMap<String, usize>,
    tools_len: usize,
    evidence: HashMap<String, usize>,
    evidence_len: usize,
    pub lines: HashMap<String, LineIndex>,
}

impl Index {
    fn sync(&mut self, inc: &Incident) {
        if inc.events < self.events
            || inc.tools.len() < self.tools_len
            || inc.evidence.len() < self.evidence_len
        {
            *self = Index::default();
        }
        self.events = inc.events;
        for (i, t) in inc.tools.iter().enumerate().skip(self.tools_len) {
            self.tools.insert(t.call_id.clone(), i);
        }
        self.tools_len = inc.tools.len();
        for (i, e) in inc.evidence.iter().enumerate().skip(self.evidence_len) {
            self.evidence.insert(e.id.clone(), i);
        }
        self.evidence_len = inc.evidence.len();
        for (id, li) in self.lines.iter_mut() {
            if let Some(&i) = self.evidence.get(id)
                && let Some(EvidenceBody::Text { text, .. }) = inc.evidence.get(i).map(|e| &e.body)
                && text.len() != li.bytes
            {
                li.extend(text);
            }
        }
    }

    pub fn tool<'a>(
        &self,
        inc: &'a Incident,
        call_id: &str,
    ) -> Option<&'a crate::model::ToolCallState> {
        self.tools
            .get(call_id)
            .and_then(|i| inc.tools.get(*i))
            .filter(|t| t.call_id == call_id)
            .or_else(|| inc.tool(call_id))
    }

    pub fn evidence<'a>(&self, inc: &'a Incident, id: &str) -> Option<&'a crate::model::Evidence> {
        self.evidence
            .get(id)
            .and_then(|i| inc.evidence.get(*i))
            .map(|e| &**e)
            .filter(|e| e.id == id)
            .or_else(|| inc.evidence(id))
    }

    fn ensure_lines(&mut self, inc: &Incident, id: &str) {
        if self.lines.contains_key(id) {
            return;
        }
        if let Some(EvidenceBody::Text { text, .. }) = self.evidence(inc, id).map(|e| &e.body) {
            let mut li = LineIndex::default();
            li.extend(text);
            // Only the item on screen is indexed; forget the others to bound memory.
            self.lines.clear();
            self.lines.insert(id.to_string(), li);
        }
    }
}

/// A replay on screen: the project's replay clock plus what the progress bar needs from it.
pub struct ReplayUi {
    pub clock: Replay,
    /// Where each stage began, as a fraction of the play time (the progress bar's scale).
    pub marks: Vec<(f64, Stage)>,
}

impl ReplayUi {
    /// Positioned at the start and paused; the event loop starts playback.
    pub fn new(records: impl Into<Replay>) -> ReplayUi {
        let mut clock: Replay = records.into();
        clock.pause();
        let total = clock.play_duration();
        let marks = clock
            .stage_starts()
            .iter()
            .map(|&(i, stage)| {
                let at = clock.play_time_at(i).unwrap_or(0.0);
                let frac = if total > 0.0 { at / total } else { 0.0 };
                (frac.clamp(0.0, 1.0), stage)
            })
            .collect();
        ReplayUi { clock, marks }
    }

    pub fn is_playing(&self) -> bool {
        !self.clock.is_paused() && !self.clock.is_finished()
    }

    /// Wall time until the screen next changes while playing: the next record, or the next
    /// whole second on the clock shown, whichever is sooner. None when nothing will change.
    pub fn next_tick(&self) -> Option<Duration> {
        if !self.is_playing() {
            return None;
        }
        let due = self.clock.next_due()?;
        let t = self.clock.session_time();
        let to_second = (t.floor() + 1.0 - t).max(0.0) / self.clock.speed();
        let second = Duration::try_from_secs_f64(to_second).unwrap_or(Duration::ZERO);
        Some(due.min(second))
    }

    /// Play or pause; playing from the end starts over.
    fn toggle(&mut self) {
        if self.clock.is_finished() && !self.clock.is_empty() {
            self.clock.seek_index(0);
            self.clock.resume();
        } else {
            self.clock.toggle_pause();
        }
    }
}

/// The fold on screen, borrowed field by field so callers can mutate the rest of the state.
fn shown<'a>(live: &'a Incident, replay: &'a Option<ReplayUi>) -> &'a Incident {
    match replay {
        Some(r) => r.clock.incident(),
        None => live,
    }
}

pub struct AppState {
    /// The live fold; a replay folds inside its own clock instead (see [`AppState::incident`]).
    live: Incident,
    pub index: Index,
    pub theme: Theme,
    pub keymap: Keymap,
    pub read_only: bool,
    pub session_id: Option<String>,
    pub session_path: Option<PathBuf>,
    pub size: (u16, u16),
    pub focus: Pane,
    pub timeline_sel: usize,
    pub timeline_offset: usize,
    pub follow: bool,
    /// Top line of the evidence view; `usize::MAX` follows the end (streaming logs).
    pub evidence_scroll: usize,
    pub summary_scroll: usize,
    pub filter: Option<Filter>,
    /// The `/` prompt while it is being typed.
    pub filter_input: Option<String>,
    pub chat_input: TextArea<'static>,
    pub overlay: Option<Overlay>,
    dismissed: HashSet<String>,
    submitted: HashSet<String>,
    /// How long keys are ignored after the approval modal opens ([`APPROVAL_GUARD`]).
    pub approval_guard: Duration,
    pub status: Option<Status>,
    pub now_t: f64,
    pub replay: Option<ReplayUi>,
    pub agent_done: bool,
}

impl AppState {
    pub fn new(theme: Theme, keymap: Keymap) -> AppState {
        let mut chat_input = TextArea::default();
        chat_input.set_placeholder_text("ask the agent, or /help /export /runbook NAME");
        chat_input.set_cursor_line_style(ratatui::style::Style::default());
        AppState {
            live: Incident::new(),
            index: Index::default(),
            theme,
            keymap,
            read_only: false,
            session_id: None,
            session_path: None,
            size: (80, 24),
            focus: Pane::Timeline,
            timeline_sel: 0,
            timeline_offset: 0,
            follow: true,
            evidence_scroll: 0,
            summary_scroll: 0,
            filter: None,
            filter_input: None,
            chat_input,
            overlay: None,
            dismissed: HashSet::new(),
            submitted: HashSet::new(),
            approval_guard: APPROVAL_GUARD,
            status: None,
            now_t: 0.0,
            replay: None,
            agent_done: false,
        }
    }

    /// A read-only replay over recorded events.
    pub fn new_replay(theme: Theme, keymap: Keymap, records: impl Into<Replay>) -> AppState {
        let mut s = AppState::new(theme, keymap);
        s.read_only = true;
        s.replay = Some(ReplayUi::new(records));
        s.sync();
        s
    }

    pub fn is_replay(&self) -> bool {
        self.replay.is_some()
    }

    /// The fold on screen: the replay's position in a replay, else everything received live.
    pub fn incident(&self) -> &Incident {
        shown(&self.live, &self.replay)
    }

    /// Replace the live incident wholesale (tests, benches) and bring derived state up to date.
    pub fn set_incident(&mut self, incident: Incident) {
        self.live = incident;
        self.now_t = self.now_t.max(self.live.now);
        self.sync();
    }

    pub fn set_status(&mut self, text: impl Into<String>, error: bool) {
        self.status = Some(Status {
            text: text.into(),
            error,
        });
    }

    pub fn areas(&self) -> Areas {
        let area = Rect::new(0, 0, self.size.0, self.size.1);
        layout::compute(
            area,
            self.is_replay(),
            matches!(self.focus, Pane::Evidence | Pane::Summary),
        )
    }

    pub fn timeline_len(&self) -> usize {
        match &self.filter {
            Some(f) if f.pane == Pane::Timeline => f.rows.len(),
            _ => self.incident().timeline.len(),
        }
    }

    /// The timeline row index behind visible row `i`.
    pub fn timeline_row(&self, i: usize) -> Option<usize> {
        match &self.filter {
            Some(f) if f.pane == Pane::Timeline => f.rows.get(i).copied(),
            _ => (i < self.incident().timeline.len()).then_some(i),
        }
    }

    pub fn selected_item(&self) -> Option<&crate::model::TimelineItem> {
        self.timeline_row(self.timeline_sel)
            .and_then(|i| self.incident().timeline.get(i))
    }

    /// The action waiting for this operator's decision, if any.
    pub fn pending(&self) -> Option<&crate::model::ActionState> {
        self.incident()
            .actions
            .iter()
            .find(|a| a.status == ActionStatus::AwaitingApproval)
    }

    /// Seconds left on a medium-risk veto countdown.
    pub fn veto_left(&self, a: &crate::model::ActionState) -> Option<f64> {
        if a.veto_paused {
            return None;
        }
        let (req, secs) = (a.requested_at?, a.veto_secs?);
        Some((req + secs - self.now_t).max(0.0))
    }

    /// Whether the loop needs a clock: a countdown is on screen or a replay is playing.
    pub fn needs_tick(&self) -> bool {
        if let Some(r) = &self.replay {
            return r.is_playing();
        }
        !self.agent_done
            && self.live.actions.iter().any(|a| {
                a.status == ActionStatus::AwaitingApproval
                    && a.veto_secs.is_some()
                    && !a.veto_paused
            })
    }

    /// How long after the last tick the loop should tick again; None while nothing moves.
    pub fn tick_in(&self) -> Option<Duration> {
        match &self.replay {
            Some(r) => r.next_tick(),
            // A veto countdown shows whole seconds; a tenth keeps it from lagging visibly.
            None => self.needs_tick().then_some(Duration::from_millis(100)),
        }
    }

    pub fn sync(&mut self) {
        if let Some(r) = &self.replay {
            self.now_t = r.clock.session_time();
        }
        self.index.sync(shown(&self.live, &self.replay));
        self.sync_filter();
        let len = self.timeline_len();
        if self.follow || self.timeline_sel >= len {
            self.timeline_sel = len.saturating_sub(1);
        }
        self.fix_offset();
        self.sync_approval();
        if let Some(id) = super::evidence::displayed_evidence_id(self) {
            self.index
                .ensure_lines(shown(&self.live, &self.replay), &id);
        }
    }

    fn sync_filter(&mut self) {
        let timeline = &shown(&self.live, &self.replay).timeline;
        if let Some(f) = &mut self.filter
            && f.pane == Pane::Timeline
        {
            if f.scanned > timeline.len() {
                f.rows.clear();
                f.scanned = 0;
            }
            for (i, item) in timeline.iter().enumerate().skip(f.scanned) {
                if contains_ci(&item.text, &f.lowered) {
                    f.rows.push(i);
                }
            }
            f.scanned = timeline.len();
        }
    }

    fn timeline_height(&self) -> usize {
        layout::inner_height(self.areas().timeline).max(1)
    }

    fn fix_offset(&mut self) {
        let h = self.timeline_height();
        let len = self.timeline_len();
        if self.timeline_sel < self.timeline_offset {
            self.timeline_offset = self.timeline_sel;
        }
        if self.timeline_sel >= self.timeline_offset + h {
            self.timeline_offset = self.timeline_sel + 1 - h;
        }
        self.timeline_offset = self.timeline_offset.min(len.saturating_sub(h));
    }

    fn sync_approval(&mut self) {
        if let Some(Overlay::Approval(ui)) = &mut self.overlay {
            let shown = shown(&self.live, &self.replay);
            if let Some(a) = shown.action(&ui.action_id)
                && a.status == ActionStatus::AwaitingApproval
                && a.digest != ui.digest
            {
                // A new version (an edit): show it from the start, guard and all.
                let id = ui.action_id.clone();
                **ui = ApprovalUi::new(id.clone(), a.digest.clone());
                self.submitted.remove(&id);
                self.status = Some(Status {
                    text: format!("{id} changed: review the new version before deciding"),
                    error: false,
                });
            }
        }
        if let Some(Overlay::Approval(ui)) = &self.overlay {
            let still = self
                .incident()
                .action(&ui.action_id)
                .is_some_and(|a| a.status == ActionStatus::AwaitingApproval);
            let mine_done =
                self.submitted.contains(&ui.action_id) && !self.is_critical(&ui.action_id);
            if !still || mine_done {
                if let Some(a) = self.incident().action(&ui.action_id)
                    && !still
                {
                    let text = format!("{} {}", a.action.id, a.status.name());
                    self.set_status(text, false);
                }
                self.overlay = None;
            }
            return;
        }
        if self.is_replay()
            || self.focus == Pane::Chat
            || matches!(self.overlay, Some(Overlay::Palette(_)))
        {
            return;
        }
        let candidate = self
            .incident()
            .actions
            .iter()
            .find(|a| {
                a.status == ActionStatus::AwaitingApproval
                    && !self.dismissed.contains(&a.action.id)
                    && !self.submitted.contains(&a.action.id)
            })
            .map(|a| (a.action.id.clone(), a.digest.clone()));
        if let Some((id, digest)) = candidate {
            self.overlay = Some(Overlay::Approval(Box::new(ApprovalUi::new(id, digest))));
        }
    }

    fn is_critical(&self, id: &str) -> bool {
        self.incident()
            .action(id)
            .is_some_and(|a| a.action.risk == Risk::Critical)
    }

    fn selection_changed(&mut self) {
        self.evidence_scroll = 0;
        if let Some(id) = super::evidence::displayed_evidence_id(self) {
            self.index
                .ensure_lines(shown(&self.live, &self.replay), &id);
        }
    }
}

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
        on_filter_key(state, key);
        return Vec::new();
    }
    match state.overlay.take() {
        Some(Overlay::Approval(ui)) => return on_approval_key(state, *ui, key, k),
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
        None => {}
    }
    if state.focus == Pane::Chat && !state.is_replay() {
        return on_chat_key(state, key, k);
    }
    if let Some(r) = &mut state.replay
        && let KeyCode::Char(c @ '0'..='9') = key.code
        && key.modifiers.difference(KeyModifiers::SHIFT).is_empty()
    {
        let tenths = c.to_digit(10).unwrap_or(0);
        r.clock.seek_fraction(f64::from(tenths) / 10.0);
        return Vec::new();
    }
    let scopes: &[Scope] = if state.is_replay() {
        &[Scope::Replay, Scope::Global, Scope::Navigation]
    } else {
        &[Scope::Global, Scope::Navigation]
    };
    match state.keymap.lookup(k, scopes) {
        Some(action) => run_action(state, action),
        None => {
            if key.code == KeyCode::Enter && state.focus == Pane::Timeline {
                state.focus = Pane::Evidence;
            }
            Vec::new()
        }
    }
}

fn run_action(state: &mut AppState, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => return vec![Effect::Quit],
        Action::Help => state.overlay = Some(Overlay::Help { scroll: 0 }),
        Action::Palette => state.overlay = Some(Overlay::Palette(PaletteState::default())),
        Action::Filter => state.filter_input = Some(String::new()),
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
        Action::Approve | Action::Confirm | Action::Deny | Action::Edit => {}
    }
    Vec::new()
}

fn open_approval(state: &mut AppState) {
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

fn navigate(state: &mut AppState, action: Action) {
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
        Pane::Evidence => {
            let h = layout::inner_height(areas.evidence).max(1);
            let len = super::evidence::line_count(state);
            let max = len.saturating_sub(h);
            let cur = state.evidence_scroll.min(max);
            state.evidence_scroll = match action {
                Action::Down => (cur + 1).min(max),
                Action::Up => cur.saturating_sub(1),
                Action::Top => 0,
                Action::Bottom => usize::MAX,
                Action::PageDown => (cur + h / 2).min(max),
                _ => cur.saturating_sub(h / 2),
            };
        }
        Pane::Summary => {
            let h = layout::inner_height(areas.evidence).max(1);
            let cur = state.summary_scroll;
            state.summary_scroll = match action {
                Action::Down => cur + 1,
                Action::Up => cur.saturating_sub(1),
                Action::Top => 0,
                Action::Bottom => usize::MAX / 2,
                Action::PageDown => cur + h / 2,
                _ => cur.saturating_sub(h / 2),
            };
        }
    }
}

fn next_match(state: &mut AppState, forward: bool) {
    let Some(f) = &state.filter else {
        state.set_status("no filter: press / first", false);
        return;
    };
    match f.pane {
        Pane::Timeline => {
            navigate(state, if forward { Action::Down } else { Action::Up });
        }
        _ => {
            let lowered = f.lowered.clone();
            let Some(id) = super::evidence::displayed_evidence_id(state) else {
                return;
            };
            state
                .index
                .ensure_lines(shown(&state.live, &state.replay), &id);
            let (Some(li), Some(EvidenceBody::Text { text, .. })) = (
                state.index.lines.get(&id),
                state.index.evidence(state.incident(), &id).map(|e| &e.body),
            ) else {
                return;
            };
            let n = li.len();
            if n == 0 {
                return;
            }
            let h = layout::inner_height(state.areas().evidence).max(1);
            let cur = state.evidence_scroll.min(n.saturating_sub(h));
            let found = (1..=n)
                .map(|d| {
                    if forward {
                        (cur + d) % n
                    } else {
                        (cur + n - d % n) % n
                    }
                })
                .find(|i| contains_ci(li.line(text, *i), &lowered));
            match found {
                Some(i) => state.evidence_scroll = i,
                None => state.set_status(format!("no match for {:?}", f_query(state)), false),
            }
        }
    }
}

fn f_query(state: &AppState) -> String {
    state
        .filter
        .as_ref()
        .map(|f| f.query.clone())
        .unwrap_or_default()
}

fn on_filter_key(state: &mut AppState, key: KeyEvent) {
    let Some(input) = &mut state.filter_input else {
        return;
    };
    match key.code {
        KeyCode::Esc => {
            state.filter_input = None;
        }
        KeyCode::Enter => {
            let query = std::mem::take(input);
            state.filter_input = None;
            if query.is_empty() {
                state.filter = None;
                return;
            }
            let pane = if state.focus == Pane::Evidence {
                Pane::Evidence
            } else {
                Pane::Timeline
            };
            state.filter = Some(Filter {
                pane,
                lowered: query.to_lowercase(),
                query,
                rows: Vec::new(),
                scanned: 0,
            });
            state.follow = false;
            state.timeline_sel = 0;
            state.timeline_offset = 0;
            state.sync_filter();
            if pane == Pane::Timeline {
                // Land on the match nearest the end: the newest activity matters most on call.
                state.timeline_sel = state.timeline_len().saturating_sub(1);
                if state.timeline_len() == 0 {
                    let q = f_query(state);
                    state.set_status(format!("no timeline rows match {q:?}"), false);
                }
            } else {
                state.evidence_scroll = 0;
                next_match(state, true);
            }
            state.selection_changed();
        }
        KeyCode::Backspace => {
            input.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
        _ => {}
    }
}

fn on_chat_key(state: &mut AppState, key: KeyEvent, k: Key) -> Vec<Effect> {
    match key.code {
        KeyCode::Esc => {
            state.focus = Pane::Timeline;
            Vec::new()
        }
        KeyCode::Tab | KeyCode::BackTab => {
            let action = if key.code == KeyCode::Tab {
                Action::NextPane
            } else {
                Action::PrevPane
            };
            run_action(state, action)
        }
        KeyCode::Enter => {
            let text = state.chat_input.lines().join(" ").trim().to_string();
            state.chat_input.select_all();
            state.chat_input.cut();
            if text.is_empty() {
                return Vec::new();
            }
            chat_command(state, &text)
        }
        _ => {
            let _ = k;
            state.chat_input.input(key);
            Vec::new()
        }
    }
}

/// A line typed in the chat pane: slash commands are handled here, the rest goes to the agent.
pub fn chat_command(state: &mut AppState, text: &str) -> Vec<Effect> {
    let mut words = text.split_whitespace();
    match words.next() {
        Some("/help") => {
            state.overlay = Some(Overlay::Help { scroll: 0 });
            Vec::new()
        }
        Some("/export") => vec![Effect::ExportReport],
        Some("/quit") => vec![Effect::Quit],
        Some("/cancel") => vec![Effect::SendCommand(Command::Cancel)],
        Some("/runbook") if words.next().is_none() => {
            state.set_status("usage: /runbook NAME", true);
            Vec::new()
        }
        _ if state.agent_done => {
            state.set_status(
                "the investigation has ended; the agent no longer listens",
                true,
            );
            Vec::new()
        }
        _ => vec![Effect::SendCommand(Command::Chat {
            text: text.to_string(),
        })],
    }
}

fn on_approval_key(state: &mut AppState, mut ui: ApprovalUi, key: KeyEvent, k: Key) -> Vec<Effect> {
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

/// Palette commands: (name, argument hint, description).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("approve", "", "open the pending approval"),
    ("cancel", "", "cancel the investigation"),
    (
        "export",
        "",
        "write the report (markdown) next to the session file",
    ),
    ("filter", "TEXT", "filter the focused pane"),
    ("follow", "", "follow the live timeline"),
    ("help", "", "show the keys"),
    ("pane", "timeline|evidence|chat|summary", "focus a pane"),
    ("quit", "", "leave sitrep"),
    ("runbook", "NAME", "ask the agent to run a runbook"),
    ("seek", "PERCENT", "replay: jump to a point"),
    ("speed", "0.25..64", "replay: playback speed"),
    (
        "theme",
        "default|light|high-contrast|mono",
        "switch the colour theme",
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

fn on_palette_key(state: &mut AppState, mut p: PaletteState, key: KeyEvent) -> Vec<Effect> {
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
        "filter" => {
            state.filter_input = Some(arg.to_string());
            on_filter_key(state, KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        }
        "pane" => match Pane::ORDER.iter().find(|p| p.name() == arg) {
            Some(p) => state.focus = *p,
            None => state.set_status(
                format!("unknown pane {arg:?}: timeline, evidence, chat or summary"),
                true,
            ),
        },
        "runbook" if arg.is_empty() => state.set_status("usage: runbook NAME", true),
        "runbook" => return chat_command(state, &format!("/runbook {arg}")),
        "theme" => match Theme::resolve(Some(arg), false) {
            Ok(t) => {
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

/// Which kind of detail a timeline row opens; shared by the evidence view and the reducer.
pub fn row_kind(state: &AppState) -> Option<&TimelineKind> {
    state.selected_item().map(|i| &i.kind)
}
