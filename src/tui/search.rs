//! Search and filter, lnav's way: `/` marks every match in the focused pane and `n`/`N` jump
//! between them; `&` (or `:filter`) hides what does not match. A large body is scanned on its
//! own thread (`search_job`) while the UI goes on; a new query drops, and so cancels, the old scan.

use super::keymap::Action;
use super::scroll::Move;
use super::state::{AppState, Pane, shown};
use crate::model::EvidenceBody;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Mark matches, keep every row.
    Search,
    /// Keep only the matching rows.
    Filter,
}

/// An applied query over one pane.
pub struct Filter {
    pub pane: Pane,
    pub mode: Mode,
    pub query: String,
    pub(crate) lowered: String,
    finder: Option<regex::bytes::Regex>,
    /// Matching timeline rows, evidence lines or table rows, ascending.
    pub rows: Vec<usize>,
    /// Rows (timeline, tables) or bytes (text) looked at so far.
    pub(crate) scanned: usize,
    /// The evidence item the rows belong to.
    pub target: Option<String>,
    /// Index into `rows` of the match the operator is on.
    pub current: Option<usize>,
    /// Every row has been looked at.
    pub done: bool,
    /// Jump to the first match once the scan finds one.
    jump: bool,
    /// The scan of a text body running beside the UI; dropped with the filter, which stops it.
    job: Option<super::search_job::Job>,
}

impl Filter {
    pub fn new(pane: Pane, mode: Mode, query: &str) -> Filter {
        let lowered = query.to_lowercase();
        let finder = regex::bytes::RegexBuilder::new(&regex::escape(query))
            .case_insensitive(true)
            .unicode(true)
            .build()
            .ok();
        Filter {
            pane,
            mode,
            query: query.to_string(),
            lowered,
            finder,
            rows: Vec::new(),
            scanned: 0,
            target: None,
            current: None,
            done: false,
            jump: true,
            job: None,
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        contains_ci(text, &self.lowered)
    }

    /// Hides rows (a filter) rather than marking them (a search).
    pub fn hides(&self) -> bool {
        self.mode == Mode::Filter
    }

    /// Byte ranges of every match in `text`, for highlighting.
    pub fn ranges(&self, text: &str) -> Vec<(usize, usize)> {
        match &self.finder {
            Some(re) if !self.query.is_empty() => re
                .find_iter(text.as_bytes())
                .map(|m| (m.start(), m.end()))
                .filter(|(s, e)| text.is_char_boundary(*s) && text.is_char_boundary(*e))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The row the current match is on, in the rows the pane shows (all rows for a search,
    /// the matching ones for a filter).
    pub fn current_row(&self) -> Option<usize> {
        let c = self.current?;
        if self.hides() {
            Some(c)
        } else {
            self.rows.get(c).copied()
        }
    }

    /// Look through a prose pane's rows as last drawn; small, so each pass starts over.
    fn scan_rows(&mut self, rows: &[String]) {
        self.rows = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| contains_ci(r, &self.lowered))
            .map(|(i, _)| i)
            .collect();
        self.scanned = rows.len();
        self.done = true;
        if let Some(c) = self.current
            && c >= self.rows.len()
        {
            self.current = self.rows.len().checked_sub(1);
        }
    }

    /// "3/41" for the status bar; "3/41+" while still scanning.
    pub fn position(&self) -> String {
        let cur = self.current.map_or(0, |c| c + 1);
        let more = if self.done { "" } else { "+" };
        format!("{cur}/{}{more}", self.rows.len())
    }

    /// Take what the text scan found since the last look; start one (or resume after the
    /// body grew) when none runs.
    fn scan_text(
        &mut self,
        text_len: usize,
        source: impl FnOnce() -> Option<super::search_job::Source>,
        line_of: impl Fn(usize) -> usize,
    ) {
        let Some(re) = self.finder.clone() else {
            self.done = true;
            return;
        };
        if let Some(job) = &self.job
            && let Some(found) = job.poll()
        {
            self.rows.extend(found.rows);
            self.scanned = self.scanned.max(found.scanned);
            if found.done {
                self.job = None;
            }
        }
        if self.job.is_none() && self.scanned < text_len {
            match source() {
                Some(src) => {
                    let from = self.scanned;
                    self.job = Some(super::search_job::Job::spawn(src, re, from, line_of(from)));
                }
                None => self.scanned = text_len,
            }
        }
        self.done = self.job.is_none() && self.scanned >= text_len;
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

impl AppState {
    /// The search of a prose pane (details, summary, chat), when one is applied to it.
    pub fn search_of(&self, pane: Pane) -> Option<&Filter> {
        self.filter
            .as_ref()
            .filter(|f| f.pane == pane && f.target.is_none() && f.pane != Pane::Timeline)
    }

    /// The scroll of a pane that shows prose rows.
    pub(crate) fn prose_scroll(&mut self, pane: Pane) -> Option<&mut super::scroll::Scroll> {
        match pane {
            Pane::Evidence => Some(&mut self.evidence),
            Pane::Summary => Some(&mut self.summary),
            Pane::Chat => Some(&mut self.chat),
            Pane::Timeline => None,
        }
    }

    /// Bring the applied query up to date with the fold: new timeline rows, one more step of a
    /// long text scan. Called after every message.
    pub(crate) fn sync_filter(&mut self) {
        let inc = shown(&self.live, &self.replay);
        let Some(f) = &mut self.filter else {
            return;
        };
        match f.pane {
            Pane::Timeline => {
                let timeline = &inc.timeline;
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
                f.done = true;
            }
            Pane::Summary => f.scan_rows(&self.summary.text()),
            Pane::Chat => f.scan_rows(&self.chat.text()),
            Pane::Evidence if f.target.is_none() => f.scan_rows(&self.evidence.text()),
            _ => {
                let Some(id) = f.target.clone() else {
                    f.done = true;
                    return;
                };
                if let Some(doc) = self.index.doc(inc, &id) {
                    if f.scanned > doc.text.len() {
                        // Another body under the same id (a replay sought back): start over.
                        f.rows.clear();
                        f.scanned = 0;
                        f.job = None;
                    }
                    let index = &self.index;
                    // A streaming log that grew is scanned on from where the last scan ended.
                    f.scan_text(
                        doc.text.len(),
                        || index.source(inc, &id),
                        |at| doc.lines.line_of(at),
                    );
                } else if let Some(EvidenceBody::Table { rows, .. }) =
                    self.index.evidence(inc, &id).map(|e| &e.body)
                {
                    for (i, r) in rows.iter().enumerate().skip(f.scanned) {
                        if r.iter().any(|c| contains_ci(c, &f.lowered)) {
                            f.rows.push(i);
                        }
                    }
                    f.scanned = rows.len();
                    f.done = true;
                } else {
                    f.done = true;
                }
            }
        }
        if f.jump && !f.rows.is_empty() {
            f.jump = false;
            let pane = f.pane;
            let top = match pane {
                Pane::Evidence => self.evidence.top(),
                Pane::Summary => self.summary.top(),
                Pane::Chat => self.chat.top(),
                Pane::Timeline => return,
            };
            let i = f.rows.partition_point(|r| *r < top).min(f.rows.len() - 1);
            f.current = Some(i);
            let row = if f.hides() { i } else { f.rows[i] };
            if let Some(scroll) = self.prose_scroll(pane) {
                scroll.show(row);
            }
        }
    }

    /// A search scan still has work to do: the loop keeps ticking until it is done.
    pub fn searching(&self) -> bool {
        self.filter.as_ref().is_some_and(|f| !f.done)
    }
}

/// `n` / `N`: the next or previous match in the pane searched.
pub(crate) fn next_match(state: &mut AppState, forward: bool) {
    let Some(f) = &mut state.filter else {
        state.set_status("no search: press / first", false);
        return;
    };
    if f.rows.is_empty() {
        let msg = if f.done {
            format!("no match for {:?}", f.query)
        } else {
            format!("searching for {:?}…", f.query)
        };
        state.set_status(msg, false);
        return;
    }
    match f.pane {
        Pane::Timeline if f.hides() => {
            super::reducer::navigate(state, if forward { Action::Down } else { Action::Up });
        }
        Pane::Timeline => {
            let sel = state.timeline_sel;
            let n = f.rows.len();
            let i = if forward {
                f.rows.iter().position(|r| *r > sel).unwrap_or(0)
            } else {
                f.rows.iter().rposition(|r| *r < sel).unwrap_or(n - 1)
            };
            f.current = Some(i);
            state.timeline_sel = f.rows[i];
            state.follow = false;
            state.selection_changed();
        }
        _ => {
            let n = f.rows.len();
            let i = match f.current {
                Some(c) if forward => (c + 1) % n,
                Some(c) => (c + n - 1) % n,
                None => 0,
            };
            f.current = Some(i);
            let row = if f.hides() { i } else { f.rows[i] };
            let pane = f.pane;
            if let Some(scroll) = state.prose_scroll(pane) {
                scroll.show(row);
            }
        }
    }
}

/// Keys while the `/` or `&` prompt is open.
pub(crate) fn on_search_key(state: &mut AppState, key: KeyEvent) {
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
            apply(state, &query, state.search_mode);
        }
        KeyCode::Backspace => {
            input.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
        _ => {}
    }
}

/// Start a search or filter of the focused pane (the timeline when the pane has no rows).
pub(crate) fn apply(state: &mut AppState, query: &str, mode: Mode) {
    if query.is_empty() {
        state.filter = None;
        return;
    }
    let evidence = (state.focus == Pane::Evidence)
        .then(|| state.displayed_evidence_id())
        .flatten();
    let chart = evidence.as_ref().is_some_and(|id| {
        state
            .index
            .evidence(state.incident(), id)
            .is_none_or(|e| matches!(e.body, EvidenceBody::TimeSeries { .. }))
    });
    // An evidence body is searched through its line index; details, summary and chat through
    // their rows as last drawn; a chart has no text, so the timeline is searched instead.
    let (pane, target) = match (state.focus, evidence) {
        (Pane::Evidence, Some(_)) if chart => (Pane::Timeline, None),
        (Pane::Evidence, Some(id)) => (Pane::Evidence, Some(id)),
        (pane, _) => (pane, None),
    };
    let mut f = Filter::new(pane, mode, query);
    f.target = target.clone();
    if let Some(id) = &target {
        state
            .index
            .ensure_lines(shown(&state.live, &state.replay), id);
    }
    state.filter = Some(f);
    if pane == Pane::Timeline {
        state.follow = false;
        state.sync_filter();
        let Some(f) = &mut state.filter else { return };
        if f.rows.is_empty() {
            let q = f.query.clone();
            state.set_status(format!("no timeline rows match {q:?}"), false);
        } else if f.hides() {
            // Land on the match nearest the end: the newest activity matters most on call.
            state.timeline_sel = f.rows.len() - 1;
            f.current = Some(f.rows.len() - 1);
            state.timeline_offset = 0;
            state.selection_changed();
        } else {
            let sel = state.timeline_sel;
            let i = f
                .rows
                .iter()
                .rposition(|r| *r <= sel)
                .unwrap_or(f.rows.len() - 1);
            f.current = Some(i);
            state.timeline_sel = f.rows[i];
            state.selection_changed();
        }
    } else {
        if mode == Mode::Filter
            && let Some(scroll) = state.prose_scroll(pane)
        {
            scroll.apply(Move::Top);
        }
        state.sync_filter();
        if let Some(f) = &state.filter
            && f.done
            && f.rows.is_empty()
        {
            let q = f.query.clone();
            state.set_status(
                format!("no match for {q:?} in the {} pane", pane.name()),
                false,
            );
        }
    }
}
