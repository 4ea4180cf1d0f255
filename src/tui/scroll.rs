//! One scroll model for every text pane: offset, follow-the-end, wrap and horizontal pan.
//! A view reports the length and viewport it drew, so the reducer never calls a view.

use std::cell::{Cell, RefCell};

/// A move the operator asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
}

/// Scroll position of one pane. Units are the view's rows (lines for large evidence, where
/// wrapping happens on the visible lines only; wrapped rows for small panes).
#[derive(Clone, Debug, Default)]
pub struct Scroll {
    offset: usize,
    /// Stay on the end as the content grows (streaming logs, chat).
    pub follow: bool,
    /// Wrap long lines instead of cutting them at the edge.
    pub wrap: bool,
    /// Columns panned to the right while not wrapping.
    pub col: usize,
    len: Cell<usize>,
    height: Cell<usize>,
    width: Cell<usize>,
    /// Plain text of every row as last drawn (prose panes only), what a search of the pane
    /// looks through: the view hands it back like its sizes.
    text: RefCell<Vec<String>>,
    /// The rows last built from a keyed source, so a view whose source did not change since
    /// the last frame draws its visible rows without building (and wrapping) every row again.
    rows: RefCell<Option<RowCache>>,
}

/// Rows built for one source state and one geometry.
#[derive(Clone, Debug)]
pub struct RowCache {
    /// The view's own key of its source (e.g. message count and last message), with the width,
    /// wrap and pan the rows were built for.
    pub key: (u64, usize, bool, usize),
    pub rows: Vec<ratatui::text::Line<'static>>,
}

/// How far one pan step moves, in columns.
pub const PAN_STEP: usize = 8;

impl Scroll {
    pub fn following() -> Scroll {
        Scroll {
            follow: true,
            ..Scroll::default()
        }
    }

    /// For prose panes (summary, chat, report), which wrap unless told not to.
    pub fn wrapped() -> Scroll {
        Scroll {
            wrap: true,
            ..Scroll::default()
        }
    }

    /// The same, staying on the end as content grows.
    pub fn and_follow(mut self) -> Scroll {
        self.follow = true;
        self
    }

    /// Called by the view while drawing: content rows, visible rows, visible columns.
    pub fn report(&self, len: usize, height: usize, width: usize) {
        self.len.set(len);
        self.height.set(height);
        self.width.set(width);
    }

    /// Called by a prose view while drawing: the plain text of each row, in order.
    pub fn report_text(&self, rows: Vec<String>) {
        *self.text.borrow_mut() = rows;
    }

    /// The rows cached for `key`, if the last build was for it.
    pub fn cached_rows(
        &self,
        key: (u64, usize, bool, usize),
    ) -> Option<std::cell::Ref<'_, [ratatui::text::Line<'static>]>> {
        std::cell::Ref::filter_map(self.rows.borrow(), |c| {
            c.as_ref()
                .filter(|c| c.key == key)
                .map(|c| c.rows.as_slice())
        })
        .ok()
    }

    /// Keep the rows built for `key` for the next frames.
    pub fn cache_rows(
        &self,
        key: (u64, usize, bool, usize),
        rows: Vec<ratatui::text::Line<'static>>,
    ) {
        *self.rows.borrow_mut() = Some(RowCache { key, rows });
    }

    /// The rows' text as last drawn.
    pub fn text(&self) -> std::cell::Ref<'_, Vec<String>> {
        self.text.borrow()
    }

    /// Content rows as last drawn.
    pub fn len(&self) -> usize {
        self.len.get()
    }

    pub fn is_empty(&self) -> bool {
        self.len.get() == 0
    }

    /// Visible rows as last drawn (at least 1).
    pub fn height(&self) -> usize {
        self.height.get().max(1)
    }

    /// Visible columns as last drawn.
    pub fn width(&self) -> usize {
        self.width.get()
    }

    /// The first row a view of `height` rows over `len` rows shows.
    pub fn top_for(&self, len: usize, height: usize) -> usize {
        let max = len.saturating_sub(height.max(1));
        if self.follow {
            max
        } else {
            self.offset.min(max)
        }
    }

    /// The first row shown, from the sizes last reported.
    pub fn top(&self) -> usize {
        self.top_for(self.len(), self.height())
    }

    /// Jump so that `row` is the first row shown (search hits).
    pub fn show(&mut self, row: usize) {
        self.follow = false;
        self.offset = row;
    }

    /// Back to the start: a new item was opened.
    pub fn reset(&mut self) {
        self.offset = 0;
        self.col = 0;
        self.follow = false;
    }

    pub fn apply(&mut self, m: Move) {
        let h = self.height();
        let known = self.len.get() > 0 || self.height.get() > 0;
        let max = if known {
            self.len().saturating_sub(h)
        } else {
            usize::MAX / 2
        };
        let cur = self.top_for(self.len(), h).min(max);
        let cur = if known { cur } else { self.offset };
        self.follow = false;
        self.offset = match m {
            Move::Down => (cur + 1).min(max),
            Move::Up => cur.saturating_sub(1),
            Move::Top => 0,
            Move::Bottom => {
                self.follow = true;
                max
            }
            Move::PageDown => (cur + (h / 2).max(1)).min(max),
            Move::PageUp => cur.saturating_sub((h / 2).max(1)),
        };
    }

    pub fn pan(&mut self, right: bool) {
        if self.wrap {
            return;
        }
        self.col = if right {
            self.col.saturating_add(PAN_STEP).min(1 << 20)
        } else {
            self.col.saturating_sub(PAN_STEP)
        };
    }

    pub fn toggle_wrap(&mut self) {
        self.wrap = !self.wrap;
        self.col = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_stay_inside_the_content_once_sizes_are_known() {
        let mut s = Scroll::default();
        s.report(100, 10, 40);
        s.apply(Move::Bottom);
        assert_eq!(s.top(), 90);
        s.apply(Move::Down);
        assert_eq!(s.top(), 90);
        s.apply(Move::PageUp);
        assert_eq!(s.top(), 85);
        s.apply(Move::Top);
        assert_eq!(s.top(), 0);
        s.apply(Move::Up);
        assert_eq!(s.top(), 0);
    }

    #[test]
    fn following_tracks_growth_until_the_operator_moves() {
        let mut s = Scroll::following();
        s.report(20, 10, 40);
        assert_eq!(s.top(), 10);
        s.report(30, 10, 40);
        assert_eq!(s.top(), 20);
        s.apply(Move::Up);
        s.report(40, 10, 40);
        assert_eq!(s.top(), 19);
    }

    #[test]
    fn pan_only_moves_while_not_wrapping() {
        let mut s = Scroll::default();
        s.pan(true);
        assert_eq!(s.col, PAN_STEP);
        s.toggle_wrap();
        assert_eq!(s.col, 0);
        s.pan(true);
        assert_eq!(s.col, 0);
    }
}
