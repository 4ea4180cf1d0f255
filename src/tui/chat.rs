//! The chat pane: the conversation with the agent above a ratatui-textarea input line.

use super::app::{AppState, Pane};
use super::theme::Role;
use super::{fmt_t, pane_block, sanitize::sanitize};
use crate::model::{ChatEntry, ChatRole};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use std::hash::{DefaultHasher, Hash, Hasher};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    if area.height < 3 || area.width < 10 {
        return;
    }
    let th = &state.theme;
    let focused = state.focus == Pane::Chat;
    let block = pane_block(th, " 3 chat ", focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let input_h = if inner.height >= 2 { 1 } else { 0 };
    let convo = Rect {
        height: inner.height - input_h,
        ..inner
    };
    let input = Rect {
        y: inner.y + inner.height - input_h,
        height: input_h,
        ..inner
    };

    // Newest messages at the bottom, wrapped to the width; the scroll follows new ones until
    // the operator pages up (pgup/pgdn while typing).
    let chat = &state.incident().chat;
    let build = || {
        let mut lines: Vec<Line<'static>> = Vec::new();
        for e in chat {
            let (who, role) = match e.from {
                ChatRole::Operator => ("you", Role::ChatOperator),
                ChatRole::Agent => ("agent", Role::ChatAgent),
                ChatRole::System => ("system", Role::ChatSystem),
            };
            for (i, l) in e.text.lines().enumerate() {
                let head = if i == 0 {
                    vec![
                        Span::styled(format!("{} ", fmt_t(e.t)), th.get(Role::Dim)),
                        Span::styled(format!("{who}: "), th.get(role)),
                    ]
                } else {
                    vec![Span::raw("  ")]
                };
                let mut spans = head;
                spans.push(Span::raw(sanitize(l).into_owned()));
                lines.push(Line::from(spans));
            }
        }
        if chat.is_empty() && convo.height > 0 {
            lines.push(Line::from(Span::styled(
                "no messages yet",
                th.get(Role::Dim),
            )));
        }
        lines
    };
    super::details::render_rows_keyed(
        frame,
        convo,
        Some(source_key(chat, &th.name)),
        build,
        &state.chat,
        state.chat.wrap,
        th.get(Role::Text),
        state.search_of(Pane::Chat).map(|f| (f, th)),
    );
    if input_h == 0 {
        return;
    }
    if state.is_replay() {
        frame.render_widget(
            Paragraph::new(Span::styled("read-only replay", th.get(Role::Dim))),
            input,
        );
        return;
    }
    let prompt = Rect {
        width: 2.min(input.width),
        ..input
    };
    let field = Rect {
        x: input.x + prompt.width,
        width: input.width - prompt.width,
        ..input
    };
    frame.render_widget(
        Paragraph::new(Span::styled(
            "› ",
            th.get(if focused {
                Role::BorderFocus
            } else {
                Role::Dim
            }),
        )),
        prompt,
    );
    if focused {
        frame.render_widget(&state.chat_input, field);
    } else {
        let typed = state.chat_input.lines().join(" ");
        let text = if typed.is_empty() {
            "press 3 (or tab) to talk to the agent".to_string()
        } else {
            typed
        };
        frame.render_widget(Paragraph::new(Span::styled(text, th.get(Role::Dim))), field);
    }
}

/// What the conversation's rows depend on: messages are only appended, and only the last one
/// changes in place (a streaming answer), so its count and the last message stand for all.
fn source_key(chat: &[ChatEntry], theme: &str) -> u64 {
    let mut h = DefaultHasher::new();
    chat.len().hash(&mut h);
    if let Some(last) = chat.last() {
        last.t.to_bits().hash(&mut h);
        last.text.hash(&mut h);
        last.streaming.hash(&mut h);
    }
    theme.hash(&mut h);
    h.finish()
}
