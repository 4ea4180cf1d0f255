//! The keymap: UI actions, their default keys (k9s/lazygit conventions), overrides from `[keys]`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::fmt;

/// Where a binding applies; the help overlay groups keys by scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Global,
    Navigation,
    Approval,
    Replay,
}

impl Scope {
    pub fn title(self) -> &'static str {
        match self {
            Scope::Global => "Global",
            Scope::Navigation => "Timeline & evidence",
            Scope::Approval => "Approval",
            Scope::Replay => "Replay",
        }
    }
}

macro_rules! actions {
    ($($variant:ident => $name:literal, $scope:ident, [$($key:literal),*], $desc:literal;)*) => {
        /// Something a key can do.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Action { $($variant),* }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];
            /// The name used in `[keys]` and in the palette.
            pub fn name(self) -> &'static str { match self { $(Action::$variant => $name),* } }
            pub fn scope(self) -> Scope { match self { $(Action::$variant => Scope::$scope),* } }
            pub fn description(self) -> &'static str { match self { $(Action::$variant => $desc),* } }
            fn default_keys(self) -> &'static [&'static str] { match self { $(Action::$variant => &[$($key),*]),* } }
            pub fn from_name(name: &str) -> Option<Action> {
                Action::ALL.iter().copied().find(|a| a.name() == name)
            }
        }
    };
}

actions! {
    Quit => "quit", Global, ["q", "ctrl-c"], "quit (the session file is kept)";
    Help => "help", Global, ["?"], "this help";
    Palette => "palette", Global, [":"], "command palette";
    Filter => "filter", Global, ["/"], "search the focused pane (n/N jump)";
    FilterRows => "filter_rows", Global, ["&"], "filter: keep only matching rows";
    NextMatch => "next_match", Global, ["n"], "next match";
    PrevMatch => "prev_match", Global, ["N"], "previous match";
    Back => "back", Global, ["esc"], "back / close / clear filter";
    NextPane => "next_pane", Global, ["tab"], "next pane";
    PrevPane => "prev_pane", Global, ["backtab"], "previous pane";
    PaneTimeline => "pane_timeline", Global, ["1"], "timeline pane";
    PaneEvidence => "pane_evidence", Global, ["2"], "evidence pane";
    PaneChat => "pane_chat", Global, ["3"], "chat pane (type, enter sends, esc leaves)";
    PaneSummary => "pane_summary", Global, ["4"], "diagnosis summary pane";
    OpenApproval => "open_approval", Global, ["a"], "open the pending approval";
    Down => "down", Navigation, ["j", "down"], "down";
    Up => "up", Navigation, ["k", "up"], "up";
    Top => "top", Navigation, ["g", "home"], "top";
    Bottom => "bottom", Navigation, ["G", "end"], "bottom (timeline: follow live)";
    PageDown => "half_page_down", Navigation, ["ctrl-d", "pagedown"], "half page down";
    PageUp => "half_page_up", Navigation, ["ctrl-u", "pageup"], "half page up";
    PanLeft => "pan_left", Navigation, ["h", "left"], "pan left (evidence)";
    PanRight => "pan_right", Navigation, ["l", "right"], "pan right (evidence)";
    Wrap => "wrap", Navigation, ["w"], "wrap long lines on/off";
    Zoom => "zoom", Navigation, ["z"], "zoom the focused pane to full screen";
    Report => "report", Global, ["r"], "show the report";
    SkipAhead => "skip_ahead", Global, ["f"], "demo: skip ahead (calls answer at once)";
    Approve => "approve", Approval, ["a"], "approve";
    Confirm => "confirm", Approval, ["ctrl-y"], "confirm high risk (or type the target name + enter)";
    Deny => "deny", Approval, ["d"], "deny, with a reason";
    Edit => "edit", Approval, ["e"], "edit parameters (ctrl-s saves)";
    TogglePlay => "toggle_play", Replay, ["space"], "play / pause";
    Step => "step", Replay, ["."], "step one event";
    PrevStage => "prev_stage", Replay, ["["], "previous stage";
    NextStage => "next_stage", Replay, ["]"], "next stage";
    Slower => "slower", Replay, ["<"], "slower";
    Faster => "faster", Replay, [">"], "faster";
}

/// A key with modifiers, normalised so `G` and `shift-g` are the same binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    pub fn new(code: KeyCode, mods: KeyModifiers) -> Key {
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match code {
            KeyCode::Char(c) => {
                // The character already carries the shift.
                mods.remove(KeyModifiers::SHIFT);
                if mods.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        Key { code, mods }
    }

    pub fn from_event(e: &KeyEvent) -> Key {
        Key::new(e.code, e.modifiers)
    }

    pub fn parse(s: &str) -> Result<Key, String> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.len() > 1 && (lower.starts_with("ctrl-") || lower.starts_with("ctrl+")) {
                mods |= KeyModifiers::CONTROL;
                rest = &rest[5..];
            } else if rest.len() > 1 && (lower.starts_with("alt-") || lower.starts_with("alt+")) {
                mods |= KeyModifiers::ALT;
                rest = &rest[4..];
            } else if rest.len() > 1 && (lower.starts_with("shift-") || lower.starts_with("shift+"))
            {
                mods |= KeyModifiers::SHIFT;
                rest = &rest[6..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            _ => match rest.to_ascii_lowercase().as_str() {
                "esc" | "escape" => KeyCode::Esc,
                "enter" | "return" => KeyCode::Enter,
                "tab" if mods.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "space" => KeyCode::Char(' '),
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdown" => KeyCode::PageDown,
                f if f.len() > 1
                    && f.starts_with('f')
                    && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
                {
                    KeyCode::F(f[1..].parse().unwrap_or(1))
                }
                _ => return Err(format!("unknown key {s:?}")),
            },
        };
        if let KeyCode::Char(c) = code
            && mods.contains(KeyModifiers::SHIFT)
            && c.is_ascii_alphabetic()
        {
            return Ok(Key::new(KeyCode::Char(c.to_ascii_uppercase()), mods));
        }
        Ok(Key::new(code, mods))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A `[keys]` section that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KeymapError {
    #[error("[keys]: unknown action `{0}`")]
    UnknownAction(String),
    #[error("[keys] {action}: {message}")]
    BadKey { action: String, message: String },
}

#[derive(Clone, Debug)]
pub struct Keymap {
    bindings: Vec<(Action, Vec<Key>)>,
}

impl Default for Keymap {
    fn default() -> Self {
        let bindings = Action::ALL
            .iter()
            .map(|a| {
                (
                    *a,
                    a.default_keys()
                        .iter()
                        .filter_map(|k| Key::parse(k).ok())
                        .collect(),
                )
            })
            .collect();
        Keymap { bindings }
    }
}

impl Keymap {
    /// Defaults with `[keys]` overrides applied: `action = "key"` (or several keys separated by
    /// spaces) replaces that action's keys.
    pub fn with_overrides(overrides: &BTreeMap<String, String>) -> Result<Keymap, KeymapError> {
        let mut map = Keymap::default();
        for (name, keys) in overrides {
            let action =
                Action::from_name(name).ok_or_else(|| KeymapError::UnknownAction(name.clone()))?;
            let parsed = keys
                .split_whitespace()
                .map(|k| {
                    Key::parse(k).map_err(|message| KeymapError::BadKey {
                        action: name.clone(),
                        message,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if parsed.is_empty() {
                return Err(KeymapError::BadKey {
                    action: name.clone(),
                    message: "needs at least one key".into(),
                });
            }
            if let Some(slot) = map.bindings.iter_mut().find(|(a, _)| *a == action) {
                slot.1 = parsed;
            }
        }
        map.check_approval_keys()?;
        Ok(map)
    }

    /// Enter never approves, and the high-risk confirm key differs from the approve key.
    fn check_approval_keys(&self) -> Result<(), KeymapError> {
        let enter = Key::new(KeyCode::Enter, KeyModifiers::NONE);
        for action in [Action::Approve, Action::Confirm] {
            if self.keys(action).contains(&enter) {
                return Err(KeymapError::BadKey {
                    action: action.name().into(),
                    message: "enter may never approve".into(),
                });
            }
        }
        // Ordinary typing must not be able to produce the confirmation.
        if let Some(k) = self.keys(Action::Confirm).iter().find(|k| {
            matches!(k.code, KeyCode::Char(_))
                && !k.mods.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        }) {
            return Err(KeymapError::BadKey {
                action: "confirm".into(),
                message: format!(
                    "{k:?} can be typed by accident; use a ctrl- or alt- chord (default ctrl-y)"
                ),
            });
        }
        if self
            .keys(Action::Confirm)
            .iter()
            .any(|k| self.keys(Action::Approve).contains(k))
        {
            return Err(KeymapError::BadKey {
                action: "confirm".into(),
                message: "the confirm key must differ from the approve key".into(),
            });
        }
        Ok(())
    }

    pub fn keys(&self, action: Action) -> &[Key] {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, k)| k.as_slice())
            .unwrap_or(&[])
    }

    /// The first action, in the given scopes (in order), that `key` is bound to.
    pub fn lookup(&self, key: Key, scopes: &[Scope]) -> Option<Action> {
        scopes.iter().find_map(|scope| {
            self.bindings
                .iter()
                .find(|(a, keys)| a.scope() == *scope && keys.contains(&key))
                .map(|(a, _)| *a)
        })
    }

    /// Display form of an action's keys, e.g. `j/↓`.
    pub fn label(&self, action: Action) -> String {
        self.keys(action)
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Help lines grouped by scope: (scope title, [(keys, description)]).
    pub fn help(&self) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
        let mut out = Vec::new();
        for scope in [
            Scope::Global,
            Scope::Navigation,
            Scope::Approval,
            Scope::Replay,
        ] {
            let rows: Vec<_> = Action::ALL
                .iter()
                .filter(|a| a.scope() == scope)
                .map(|a| (self.label(*a), a.description()))
                .collect();
            out.push((scope.title(), rows));
        }
        if let Some((_, rows)) = out.iter_mut().find(|(t, _)| *t == Scope::Replay.title()) {
            rows.push(("0-9".into(), "seek to 0%-90%"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys() {
        assert_eq!(
            Key::parse("ctrl-d"),
            Ok(Key::new(KeyCode::Char('d'), KeyModifiers::CONTROL))
        );
        assert_eq!(
            Key::parse("G"),
            Ok(Key::new(KeyCode::Char('G'), KeyModifiers::SHIFT))
        );
        assert_eq!(Key::parse("shift-g"), Key::parse("G"));
        assert_eq!(
            Key::parse("space"),
            Ok(Key::new(KeyCode::Char(' '), KeyModifiers::NONE))
        );
        assert_eq!(Key::parse("shift-tab"), Key::parse("backtab"));
        assert!(Key::parse("hyper-x").is_err());
    }

    #[test]
    fn overrides_replace_and_validate() {
        let mut o = BTreeMap::new();
        o.insert("down".to_string(), "ctrl-n".to_string());
        let km = Keymap::with_overrides(&o);
        assert!(km.is_ok());
        let km = km.unwrap_or_default();
        assert_eq!(
            km.lookup(
                Key::parse("ctrl-n").unwrap_or(Key::new(KeyCode::Null, KeyModifiers::NONE)),
                &[Scope::Navigation]
            ),
            Some(Action::Down)
        );
        let mut bad = BTreeMap::new();
        bad.insert("approve".to_string(), "enter".to_string());
        assert!(matches!(
            Keymap::with_overrides(&bad),
            Err(KeymapError::BadKey { .. })
        ));
        let mut same = BTreeMap::new();
        same.insert("confirm".to_string(), "a".to_string());
        assert!(Keymap::with_overrides(&same).is_err());
        let mut unknown = BTreeMap::new();
        unknown.insert("fly".to_string(), "f".to_string());
        assert_eq!(
            Keymap::with_overrides(&unknown).err(),
            Some(KeymapError::UnknownAction("fly".into()))
        );
    }
}
