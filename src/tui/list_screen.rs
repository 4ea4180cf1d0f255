//! The frame the full-screen list views share (inbox, scenario chooser): a notice when the
//! terminal is too small, the background, header rows, the list, a status line and key hints.

use super::theme::{Role, Theme};
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::widgets::{Block, Paragraph};

/// Where each part of a list screen goes.
pub struct ListScreen {
    /// The whole screen (for overlays such as help).
    pub area: Rect,
    /// One rect per header row, top to bottom.
    pub header: Vec<Rect>,
    pub list: Rect,
    pub status: Rect,
    pub hints: Rect,
}

/// Clear the screen to the theme and lay it out, or say the terminal is too small (`None`).
pub fn frame(
    frame: &mut Frame,
    theme: &Theme,
    min: (u16, u16),
    header_rows: u16,
) -> Option<ListScreen> {
    let area = frame.area();
    if area.width < min.0 || area.height < min.1.max(header_rows + 3) {
        let msg = Paragraph::new("terminal too small").alignment(Alignment::Center);
        frame.render_widget(
            msg,
            Rect {
                y: area.y + area.height / 2,
                height: area.height.min(1),
                ..area
            },
        );
        return None;
    }
    frame.render_widget(Block::default().style(theme.get(Role::Text)), area);
    let row = |y: u16| Rect {
        y: area.y + y,
        height: 1,
        ..area
    };
    Some(ListScreen {
        area,
        header: (0..header_rows).map(row).collect(),
        list: Rect {
            y: area.y + header_rows,
            height: area.height - header_rows - 2,
            ..area
        },
        status: row(area.height - 2),
        hints: row(area.height - 1),
    })
}
