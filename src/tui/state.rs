//! UI state as plain data: what is focused, scrolled, open and searched, kept in step with
//! the fold. No rendering and no key handling live here.

use super::approval_state::{APPROVAL_GUARD, ApprovalUi};
use super::index::Index;
use super::keymap::Keymap;
use super::layout::{self, Areas};
use super::palette_state::PaletteState;
use super::replay_state::ReplayUi;
use super::scroll::Scroll;
use super::search::{Filter, Mode};
use super::theme::Theme;
use crate::model::{ActionStatus, Command, Incident, Record, Risk, TimelineKind};
use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui_textarea::TextArea;
use std::collections::HashSet;
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
    pub const ORDER: [Pane; 4] = [Pane::Timeline, Pane::Evidence, Pane::Chat, Pane::Summary];

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
    /// Drop a paced demo's pacing.
    SkipAhead,
}

/// Drops a paced demo's simulated latency (the world lives outside the console).
pub type SkipAhead = std::sync::Arc<dyn Fn() + Send + Sync>;

#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

pub enum Overlay {
    Help {
        scroll: usize,
    },
    Palette(PaletteState),
    Approval(Box<ApprovalUi>),
    /// A specialist asks to read a credential by reference for this session.
    Credential {
        reference: String,
        opened: std::time::Instant,
    },
    /// The investigation's report, rendered.
    Report(Scroll),
}

/// The fold on screen, borrowed field by field so callers can mutate the rest of the state.
pub(crate) fn shown<'a>(live: &'a Incident, replay: &'a Option<ReplayUi>) -> &'a Incident {
    match replay {
        Some(r) => r.clock.incident(),
        None => live,
    }
}

pub struct AppState {
    /// The live fold; a replay folds inside its own clock instead (see [`AppState::incident`]).
    pub(crate) live: Incident,
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
    /// The evidence/details pane (lines of the item shown).
    pub evidence: Scroll,
    /// The summary pane (wrapped rows).
    pub summary: Scroll,
    /// The chat conversation (wrapped rows; follows new messages).
    pub chat: Scroll,
    /// The focused pane fills the body.
    pub zoom: bool,
    pub filter: Option<Filter>,
    /// The `/` or `&` prompt while it is being typed.
    pub filter_input: Option<String>,
    /// What the prompt being typed will do.
    pub search_mode: Mode,
    pub chat_input: TextArea<'static>,
    pub overlay: Option<Overlay>,
    pub(crate) dismissed: HashSet<String>,
    pub(crate) submitted: HashSet<String>,
    /// How long keys are ignored after the approval modal opens ([`APPROVAL_GUARD`]).
    pub approval_guard: Duration,
    pub status: Option<Status>,
    pub now_t: f64,
    pub replay: Option<ReplayUi>,
    pub agent_done: bool,
    /// Set in a paced demo until used.
    pub skip_ahead: Option<SkipAhead>,
    /// Writes `:export`'s report, off the UI thread.
    pub save_report: Option<super::link::SaveReport>,
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
            evidence: Scroll::default(),
            summary: Scroll::wrapped(),
            chat: Scroll::wrapped().and_follow(),
            zoom: false,
            filter: None,
            filter_input: None,
            search_mode: Mode::Search,
            chat_input,
            overlay: None,
            dismissed: HashSet::new(),
            submitted: HashSet::new(),
            approval_guard: APPROVAL_GUARD,
            status: None,
            now_t: 0.0,
            replay: None,
            agent_done: false,
            skip_ahead: None,
            save_report: None,
        }
    }

    /// A read-only replay over recorded events.
    pub fn new_replay(
        theme: Theme,
        keymap: Keymap,
        records: impl Into<crate::session::replay::Replay>,
    ) -> AppState {
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
        self.layout(Rect::new(0, 0, self.size.0, self.size.1))
    }

    /// Where every part goes on a screen of this size, the zoom included.
    pub fn layout(&self, area: Rect) -> Areas {
        let a = layout::compute(
            area,
            self.is_replay(),
            matches!(self.focus, Pane::Evidence | Pane::Summary),
        );
        if !self.zoom {
            let inc = self.incident();
            let memory = if inc.recalled.is_empty() {
                0
            } else {
                crate::model::seen_before(&inc.recalled, inc.recalled_total, inc.started).len()
            };
            return layout::with_memory(a, memory);
        }
        layout::zoom(
            a,
            match self.focus {
                Pane::Timeline => layout::Zoom::Timeline,
                Pane::Evidence | Pane::Summary => layout::Zoom::Evidence,
                Pane::Chat => layout::Zoom::Chat,
            },
        )
    }

    pub fn timeline_len(&self) -> usize {
        match &self.filter {
            Some(f) if f.pane == Pane::Timeline && f.hides() => f.rows.len(),
            _ => self.incident().timeline.len(),
        }
    }

    /// The timeline row index behind visible row `i`.
    pub fn timeline_row(&self, i: usize) -> Option<usize> {
        match &self.filter {
            Some(f) if f.pane == Pane::Timeline && f.hides() => f.rows.get(i).copied(),
            _ => (i < self.incident().timeline.len()).then_some(i),
        }
    }

    pub fn selected_item(&self) -> Option<&crate::model::TimelineItem> {
        self.timeline_row(self.timeline_sel)
            .and_then(|i| self.incident().timeline.get(i))
    }

    /// The action waiting for this operator's decision, if any.
    pub fn pending(&self) -> Option<&crate::model::ActionState> {
        // A session that ended (cancelled, interrupted) decides nothing more: what was
        // waiting is no longer pending, whatever the fold's last status for it says.
        if self.incident().is_finished() {
            return None;
        }
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
        if self.searching() {
            // A scan runs beside the UI: look at what it found often enough that the count
            // visibly grows.
            return Some(Duration::from_millis(30));
        }
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
        if let Some(id) = self.displayed_evidence_id() {
            self.index
                .ensure_lines(shown(&self.live, &self.replay), &id);
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
                .is_some_and(|a| a.status == ActionStatus::AwaitingApproval)
                && !self.incident().is_finished();
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
        if let Some(Overlay::Credential { reference, .. }) = &self.overlay {
            let still = self
                .incident()
                .pending_credential()
                .is_some_and(|c| &c.reference == reference)
                && !self.incident().is_finished()
                && !self.submitted.contains(reference);
            if !still {
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
        if self.incident().is_finished() {
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
        } else if self.overlay.is_none()
            && let Some(c) = self.incident().pending_credential()
            && !self.dismissed.contains(&c.reference)
            && !self.submitted.contains(&c.reference)
        {
            self.overlay = Some(Overlay::Credential {
                reference: c.reference.clone(),
                opened: std::time::Instant::now(),
            });
        }
    }

    pub(crate) fn is_critical(&self, id: &str) -> bool {
        self.incident()
            .action(id)
            .is_some_and(|a| a.action.risk == Risk::Critical)
    }

    /// The evidence item the panel shows for the selected row, if the row has one.
    pub fn displayed_evidence_id(&self) -> Option<String> {
        match &self.selected_item()?.kind {
            TimelineKind::Evidence { evidence_id } => Some(evidence_id.clone()),
            TimelineKind::Tool { call_id } => self
                .index
                .tool(self.incident(), call_id)?
                .evidence
                .first()
                .cloned(),
            _ => None,
        }
    }

    /// The evidence item on screen.
    pub fn displayed_evidence(&self) -> Option<&crate::model::Evidence> {
        let id = self.displayed_evidence_id()?;
        self.index.evidence(self.incident(), &id)
    }

    /// A different timeline row is selected: its item opens at the top, and a search of the
    /// previous item's body no longer applies.
    pub(crate) fn selection_changed(&mut self) {
        self.evidence.reset();
        let shown_id = self.displayed_evidence_id();
        if self
            .filter
            .as_ref()
            .is_some_and(|f| f.pane == Pane::Evidence && f.target != shown_id)
        {
            self.filter = None;
        }
        if let Some(id) = self.displayed_evidence_id() {
            self.index
                .ensure_lines(shown(&self.live, &self.replay), &id);
        }
    }
}

/// Which kind of detail a timeline row opens; shared by the evidence view and the reducer.
pub fn row_kind(state: &AppState) -> Option<&TimelineKind> {
    state.selected_item().map(|i| &i.kind)
}
