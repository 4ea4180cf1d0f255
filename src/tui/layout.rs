//! Screen layout: where the header, timeline, evidence, chat, replay bar and footer go at any size.

use ratatui::layout::Rect;

/// Below this the console shows only "terminal too small".
pub const MIN_WIDTH: u16 = 20;
pub const MIN_HEIGHT: u16 = 5;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Areas {
    pub header: Rect,
    pub timeline: Rect,
    pub evidence: Rect,
    /// The "seen before" panel, taken from the top of the evidence pane (height 0 when none).
    pub memory: Rect,
    pub chat: Rect,
    pub replay_bar: Rect,
    pub status: Rect,
    pub keyhints: Rect,
    pub too_small: bool,
}

fn take_top(r: &mut Rect, h: u16) -> Rect {
    let h = h.min(r.height);
    let out = Rect { height: h, ..*r };
    r.y += h;
    r.height -= h;
    out
}

fn take_bottom(r: &mut Rect, h: u16) -> Rect {
    let h = h.min(r.height);
    r.height -= h;
    Rect {
        y: r.y + r.height,
        height: h,
        ..*r
    }
}

/// `replay` adds the progress bar; `narrow_focus_evidence` decides which pane a very narrow
/// screen shows when there is room for only one.
pub fn compute(area: Rect, replay: bool, evidence_focused: bool) -> Areas {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return Areas {
            too_small: true,
            ..Areas::default()
        };
    }
    let mut rest = area;
    let h = area.height;
    let header = take_top(&mut rest, if h >= 12 { 2 } else { 1 });
    let keyhints = take_bottom(&mut rest, 1);
    let status = if h >= 16 {
        take_bottom(&mut rest, 1)
    } else {
        Rect {
            height: 0,
            ..keyhints
        }
    };
    let replay_bar = if replay {
        take_bottom(&mut rest, if h >= 16 { 2 } else { 1 })
    } else {
        Rect::default()
    };
    let chat_h = match h {
        0..=11 => 0,
        12..=19 => 4,
        20..=35 => 6,
        _ => 10,
    };
    let chat = take_bottom(&mut rest, chat_h);
    let (timeline, evidence) = if rest.width >= 60 {
        let left = rest.width * 11 / 20;
        (
            Rect {
                width: left,
                ..rest
            },
            Rect {
                x: rest.x + left,
                width: rest.width - left,
                ..rest
            },
        )
    } else if evidence_focused {
        (Rect { width: 0, ..rest }, rest)
    } else {
        (rest, Rect { width: 0, ..rest })
    };
    Areas {
        header,
        timeline,
        evidence,
        memory: Rect {
            height: 0,
            ..evidence
        },
        chat,
        replay_bar,
        status,
        keyhints,
        too_small: false,
    }
}

/// Which pane a zoom gives the whole body to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zoom {
    Timeline,
    Evidence,
    Chat,
}

/// The same screen with one pane filling the body (timeline, evidence and chat areas).
pub fn zoom(mut a: Areas, pane: Zoom) -> Areas {
    if a.too_small {
        return a;
    }
    let body = a.timeline.union(a.evidence).union(a.chat);
    let none = Rect {
        width: 0,
        height: 0,
        ..body
    };
    (a.timeline, a.evidence, a.chat) = match pane {
        Zoom::Timeline => (body, none, none),
        Zoom::Evidence => (none, body, none),
        Zoom::Chat => (none, none, body),
    };
    a
}

/// Give the "seen before" panel (`lines` rows of text) the top of the evidence pane: at most a
/// third of it, at least 2 rows of text, and only when the pane is tall and wide enough to share.
pub fn with_memory(mut a: Areas, lines: usize) -> Areas {
    let ev = a.evidence;
    if a.too_small || lines == 0 || ev.height < 10 || ev.width < 20 {
        return a;
    }
    let want = u16::try_from(lines).unwrap_or(u16::MAX).saturating_add(2);
    let h = want.min((ev.height / 3).max(4));
    a.memory = Rect { height: h, ..ev };
    a.evidence = Rect {
        y: ev.y + h,
        height: ev.height - h,
        ..ev
    };
    a
}

/// Rows inside a bordered block.
pub fn inner_height(r: Rect) -> usize {
    usize::from(r.height.saturating_sub(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_fits_or_says_too_small() {
        for w in 0..=260u16 {
            for h in 0..=72u16 {
                let area = Rect::new(0, 0, w, h);
                let a = compute(area, h % 2 == 0, w % 3 == 0);
                if a.too_small {
                    continue;
                }
                let a = with_memory(a, usize::from(w % 7));
                for r in [
                    a.header,
                    a.timeline,
                    a.evidence,
                    a.memory,
                    a.chat,
                    a.replay_bar,
                    a.status,
                    a.keyhints,
                ] {
                    assert!(
                        r.right() <= area.right() && r.bottom() <= area.bottom(),
                        "{w}x{h}: {r:?}"
                    );
                }
            }
        }
    }
}
