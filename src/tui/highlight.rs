//! Syntax highlighting for evidence text: syntect + two-face to ratatui spans, loaded off the UI thread.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SynTheme};
use syntect::parsing::SyntaxSet;

struct Assets {
    syntaxes: SyntaxSet,
    theme: SynTheme,
}

static ASSETS: OnceLock<Assets> = OnceLock::new();

/// Highlighted lines by (language, line); bounded, since only visible lines are ever asked for.
static CACHE: OnceLock<Mutex<HashMap<(String, String), Line<'static>>>> = OnceLock::new();
const CACHE_CAP: usize = 4096;

fn load() -> Assets {
    let theme = two_face::theme::extra()
        .get(two_face::theme::EmbeddedThemeName::Ansi)
        .clone();
    Assets {
        syntaxes: two_face::syntax::extra_no_newlines(),
        theme,
    }
}

/// Start loading the syntax set on a background thread; `on_ready` runs when it is usable.
/// Until then lines are drawn plain, so the first frame never waits for ~1 MB of grammars.
pub fn preload(on_ready: impl FnOnce() + Send + 'static) {
    if ASSETS.get().is_some() {
        on_ready();
        return;
    }
    std::thread::spawn(move || {
        ASSETS.get_or_init(load);
        on_ready();
    });
}

/// Load synchronously (tests and benches want deterministic output).
pub fn load_now() {
    ASSETS.get_or_init(load);
}

pub fn ready() -> bool {
    ASSETS.get().is_some()
}

fn extension(language: &str) -> Option<&'static str> {
    match language.to_ascii_lowercase().as_str() {
        "json" => Some("json"),
        "yaml" | "yml" => Some("yaml"),
        "markdown" | "md" => Some("md"),
        "log" | "logs" => Some("log"),
        "toml" => Some("toml"),
        "sh" | "shell" | "bash" => Some("sh"),
        "promql" => None,
        _ => None,
    }
}

/// One already-sanitized line, highlighted for `language`; plain when highlighting is off,
/// the language is unknown or the syntax set is still loading.
pub fn line(language: &str, text: &str, colour: bool, base: Style) -> Line<'static> {
    let plain = || Line::from(Span::styled(text.to_string(), base));
    if !colour {
        return plain();
    }
    let Some(ext) = extension(language) else {
        return plain();
    };
    let Some(assets) = ASSETS.get() else {
        return plain();
    };
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (ext.to_string(), text.to_string());
    if let Ok(c) = cache.lock()
        && let Some(l) = c.get(&key)
    {
        return l.clone();
    }
    let Some(syntax) = assets.syntaxes.find_syntax_by_extension(ext) else {
        return plain();
    };
    let mut h = HighlightLines::new(syntax, &assets.theme);
    let Ok(ranges) = h.highlight_line(text, &assets.syntaxes) else {
        return plain();
    };
    let spans: Vec<Span<'static>> = ranges
        .into_iter()
        .map(|(style, piece)| Span::styled(piece.to_string(), convert(style, base)))
        .collect();
    let out = Line::from(spans);
    if let Ok(mut c) = cache.lock() {
        if c.len() >= CACHE_CAP {
            c.clear();
        }
        c.insert(key, out.clone());
    }
    out
}

/// bat's `ansi` theme encodes terminal palette indices in the red channel with alpha 0,
/// and "the terminal's default colour" as alpha 1.
fn convert(s: syntect::highlighting::Style, base: Style) -> Style {
    let fg = s.foreground;
    let mut style = base;
    match fg.a {
        0 => style = style.fg(ansi(fg.r)),
        1 => {}
        _ => style = style.fg(Color::Rgb(fg.r, fg.g, fg.b)),
    }
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::UNDERLINE) {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    style
}

fn ansi(n: u8) -> Color {
    match n {
        0 => Color::Black,
        1 => Color::Red,
        2 => Color::Green,
        3 => Color::Yellow,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        7 => Color::Gray,
        8 => Color::DarkGray,
        9 => Color::LightRed,
        10 => Color::LightGreen,
        11 => Color::LightYellow,
        12 => Color::LightBlue,
        13 => Color::LightMagenta,
        14 => Color::LightCyan,
        15 => Color::White,
        n => Color::Indexed(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_gets_colours_and_keeps_text() {
        load_now();
        let l = line("json", r#"{"a": 1, "b": "x"}"#, true, Style::default());
        let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, r#"{"a": 1, "b": "x"}"#);
        assert!(l.spans.len() > 1);
        assert!(l.spans.iter().any(|s| s.style.fg.is_some()));
    }

    #[test]
    fn mono_and_unknown_are_plain() {
        let l = line("json", "{}", false, Style::default());
        assert_eq!(l.spans.len(), 1);
        let l = line("klingon", "qapla", true, Style::default());
        assert_eq!(l.spans.len(), 1);
    }
}
