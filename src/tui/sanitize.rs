//! Strips control characters and terminal escape sequences from external text before it is drawn.

use std::borrow::Cow;

/// Tab stops are expanded to this many spaces; a raw tab would move the terminal cursor.
const TAB: &str = "    ";

fn is_unsafe(c: char) -> bool {
    // C0, DEL and C1 controls move the cursor or start sequences; bidi overrides can disguise text.
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// One line of external text made safe to draw: escape sequences (CSI, OSC, DCS, ...) removed,
/// tabs expanded, newlines and other control characters dropped.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' => out.push_str(TAB),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI/OSC/DCS introducers: skip like their ESC forms.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_unsafe(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text that may hold several lines, sanitized line by line.
pub fn sanitize_multiline(s: &str) -> Vec<String> {
    s.lines().map(|l| sanitize(l).into_owned()).collect()
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_escape(chars: &mut Chars<'_>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => {
            chars.next();
            skip_string(chars);
        }
        // Two-character sequences (ESC 7, ESC c, ESC ( B ...): drop the intermediates and final.
        Some(c) => {
            chars.next();
            if ('\u{20}'..='\u{2f}').contains(&c) {
                chars.next();
            }
        }
        None => {}
    }
}

fn skip_csi(chars: &mut Chars<'_>) {
    // Parameters and intermediates, then one final byte in 0x40..=0x7e.
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut Chars<'_>) {
    // Ends at BEL, ST (ESC \) or the C1 ST.
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(sanitize("hello world ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn strips_csi_osc_and_controls() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(sanitize("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(
            sanitize("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b"),
            "alinkb"
        );
        assert_eq!(sanitize("x\u{8}\u{8}y\rz\u{0}"), "xyz");
        assert_eq!(sanitize("a\tb"), "a    b");
        assert_eq!(sanitize("\u{9b}2Jcleared"), "cleared");
        assert_eq!(sanitize("evil\u{202E}txt"), "eviltxt");
        assert_eq!(sanitize("\u{1b}(Bok\u{1b}"), "ok");
    }
}
