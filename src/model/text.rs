//! Strips control characters and terminal escape sequences from external text before it reaches a
//! terminal: the console, `sitrep export`, `sitrep sessions` and every other text output.

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
    emit(s, |c| {
        out.push(c);
        true
    });
    Cow::Owned(out)
}

/// The first `max` characters of [`sanitize`]`(s)`, and whether more would follow. Only what can
/// be shown is scanned, so a row holding a megabyte costs a frame no more than a short one, and
/// clean text (the usual case) is borrowed, not copied.
pub fn sanitize_prefix(s: &str, max: usize) -> (Cow<'_, str>, bool) {
    for (taken, (i, c)) in s.char_indices().enumerate() {
        if taken == max {
            // Whatever follows may be nothing but escapes: "more" means more to draw.
            return (Cow::Borrowed(&s[..i]), !emit(&s[i..], |_| false));
        }
        if is_unsafe(c) {
            return sanitize_prefix_slow(s, max);
        }
    }
    (Cow::Borrowed(s), false)
}

fn sanitize_prefix_slow(s: &str, max: usize) -> (Cow<'_, str>, bool) {
    let mut out = String::new();
    let mut count = 0;
    let mut more = false;
    emit(s, |c| {
        if count == max {
            more = true;
            return false;
        }
        out.push(c);
        count += 1;
        true
    });
    (Cow::Owned(out), more)
}

/// Run the sanitizer over `s`, handing each character to draw to `f` until it returns false.
/// True when the whole input was consumed.
fn emit(s: &str, mut f: impl FnMut(char) -> bool) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let go_on = match c {
            '\t' => TAB.chars().all(&mut f),
            '\u{1b}' => {
                skip_escape(&mut chars);
                true
            }
            // C1 CSI/OSC/DCS introducers: skip like their ESC forms.
            '\u{9b}' => {
                skip_csi(&mut chars);
                true
            }
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                skip_string(&mut chars);
                true
            }
            c if is_unsafe(c) => true,
            c => f(c),
        };
        if !go_on {
            return false;
        }
    }
    true
}

/// Text that may hold several lines, sanitized line by line.
pub fn sanitize_multiline(s: &str) -> Vec<String> {
    s.lines().map(|l| sanitize(l).into_owned()).collect()
}

/// Every line of `s` sanitized, the line breaks kept (`\n` only: a `\r` could rewrite a line).
pub fn sanitize_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&sanitize(line));
    }
    Cow::Owned(out)
}

/// Serialized JSON made safe for a terminal without changing what it means: the characters
/// serde_json leaves raw inside strings (DEL, C1 controls, bidi overrides) become `\uXXXX`
/// escapes. They can only occur inside strings, so the text stays valid, equal JSON.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_unsafe) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        // Line breaks and indentation of pretty-printed JSON are structure, not string content.
        if is_unsafe(c) && !matches!(c, '\n' | '\r' | '\t') {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

    #[test]
    fn prefix_matches_the_full_sanitize_cut_short() {
        let cases = [
            "",
            "hello",
            "hello world ✓ and more",
            "abc\u{1b}[0m",
            "ab\u{1b}[31mcdef\u{1b}[0m",
            "a\tb",
            "\u{1b}]0;title\u{7}",
            "x\u{8}\u{8}y\rz\u{0}tail",
        ];
        for s in cases {
            let full: Vec<char> = sanitize(s).chars().collect();
            for max in 0..full.len() + 2 {
                let (p, more) = sanitize_prefix(s, max);
                let want: String = full.iter().take(max).collect();
                assert_eq!(p, want, "{s:?} max {max}");
                assert_eq!(more, full.len() > max, "{s:?} max {max}");
            }
        }
        assert!(matches!(
            sanitize_prefix("plain text", 5).0,
            Cow::Borrowed("plain")
        ));
        let huge = "x".repeat(1 << 20);
        assert!(matches!(sanitize_prefix(&huge, 80), (Cow::Borrowed(p), true) if p.len() == 80));
    }

    #[test]
    fn lines_keep_their_breaks_and_lose_their_escapes() {
        assert_eq!(sanitize_lines("a\u{1b}[2J\nb\u{7}\r\n"), "a\nb\n");
        assert!(matches!(sanitize_lines("plain\ntext"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_stay_valid_and_equal() {
        let value = serde_json::json!({"t": "a\u{1b}]0;x\u{7}\u{9b}2J\u{202e}\u{7f}z", "n": 1});
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let clean = escape_json_controls(&text);
        assert!(!clean.chars().any(|c| is_unsafe(c) && c != '\n'), "{clean}");
        let back: serde_json::Value = serde_json::from_str(&clean).unwrap_or_default();
        assert_eq!(back, value);
    }
}
