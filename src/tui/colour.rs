//! Colours: parsing theme colour names, and the 256-colour fallback for terminals without
//! true colour.

use ratatui::style::Color;
use std::collections::BTreeMap;

/// ANSI names, `0`-`255`, `#rrggbb`, `reset`, or a palette entry.
pub fn parse_colour(s: &str, palette: &BTreeMap<String, Color>) -> Result<Color, String> {
    if let Some(c) = palette.get(s) {
        return Ok(*c);
    }
    let lower = s.trim().to_ascii_lowercase().replace(['_', '-', ' '], "");
    let named = match lower.as_str() {
        "reset" | "default" | "none" => Some(Color::Reset),
        "black" => Some(Color::Black),
        "red" => Some(Color::Red),
        "green" => Some(Color::Green),
        "yellow" => Some(Color::Yellow),
        "blue" => Some(Color::Blue),
        "magenta" => Some(Color::Magenta),
        "cyan" => Some(Color::Cyan),
        // ANSI 7 is called white by terminals and gray by ratatui.
        "gray" | "grey" | "white" => Some(Color::Gray),
        "darkgray" | "darkgrey" | "brightblack" => Some(Color::DarkGray),
        "lightred" | "brightred" => Some(Color::LightRed),
        "lightgreen" | "brightgreen" => Some(Color::LightGreen),
        "lightyellow" | "brightyellow" => Some(Color::LightYellow),
        "lightblue" | "brightblue" => Some(Color::LightBlue),
        "lightmagenta" | "brightmagenta" => Some(Color::LightMagenta),
        "lightcyan" | "brightcyan" => Some(Color::LightCyan),
        "brightwhite" | "lightwhite" => Some(Color::White),
        _ => None,
    };
    if let Some(c) = named {
        return Ok(c);
    }
    if let Ok(n) = lower.parse::<u16>() {
        return u8::try_from(n)
            .map(Color::Indexed)
            .map_err(|_| format!("colour index {n} is out of range 0-255"));
    }
    if let Some(hex) = lower.strip_prefix('#')
        && hex.len() == 6
        && let Ok(v) = u32::from_str_radix(hex, 16)
    {
        return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
    }
    Err(format!(
        "unknown colour {s:?} (expected an ANSI name like \"red\" or \"bright-blue\", 0-255, #rrggbb, or a palette name)"
    ))
}

/// Whether the terminal says it shows 24-bit colour.
pub fn truecolor_env() -> bool {
    std::env::var("COLORTERM")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "truecolor" | "24bit"))
}

/// The nearest xterm-256 colour: the 6x6x6 cube or the grey ramp, whichever is closer.
pub fn to_256(c: Color) -> Color {
    let Color::Rgb(r, g, b) = c else {
        return c;
    };
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let near = |v: u8| {
        LEVELS
            .iter()
            .enumerate()
            .min_by_key(|(_, l)| (i32::from(**l) - i32::from(v)).abs())
            .map_or(0, |(i, _)| i)
    };
    let (ri, gi, bi) = (near(r), near(g), near(b));
    let cube = (LEVELS[ri], LEVELS[gi], LEVELS[bi]);
    let avg = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let gi_ramp = ((avg.saturating_sub(8)) / 10).min(23) as u8;
    let grey = 8 + 10 * gi_ramp;
    let dist = |(x, y, z): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(x, r) + d(y, g) + d(z, b)
    };
    if dist((grey, grey, grey)) < dist(cube) {
        Color::Indexed(232 + gi_ramp)
    } else {
        Color::Indexed(16 + 36 * ri as u8 + 6 * gi as u8 + bi as u8)
    }
}

#[cfg(test)]
mod downsample_tests {
    use super::*;
    use crate::tui::theme::{Role, Theme};

    #[test]
    fn light_without_truecolor_has_no_rgb_left() {
        let th = Theme::resolve(Some("light"), false).unwrap();
        let has_rgb = |t: &Theme| {
            Role::ALL.iter().any(|r| {
                let st = t.get(*r);
                [st.fg, st.bg]
                    .iter()
                    .any(|c| matches!(c, Some(Color::Rgb(..))))
            })
        };
        assert!(has_rgb(&th), "the light theme uses #rrggbb colours");
        let down = th.clone().for_terminal(false);
        assert!(!has_rgb(&down));
        assert_eq!(th.clone().for_terminal(true), th);
        assert_eq!(to_256(Color::Rgb(255, 0, 0)), Color::Indexed(196));
        assert_eq!(to_256(Color::Rgb(128, 128, 128)), Color::Indexed(244));
        assert_eq!(to_256(Color::Red), Color::Red);
    }
}
