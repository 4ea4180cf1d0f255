//! The keymap: UI actions, their default keys (k9s/lazygit conventions), overrides from `[keys]`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::fmt;

// The table of commands lives in the model so the agent reads the same names.
pub use crate::model::commands::{Cmd as Action, Scope, Spec};

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
        let bindings = Action::all()
            .map(|a| {
                (
                    a,
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
            let action = Action::from_name(name)
                // The agent's commands are asked in chat; a key cannot ask them.
                .filter(|a| a.scope() != Scope::Agent)
                .ok_or_else(|| KeymapError::UnknownAction(name.clone()))?;
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

    /// Display form of an action's keys, e.g. `j/↓`; a run of digits shows as `0-9`.
    pub fn label(&self, action: Action) -> String {
        let keys = self.keys(action);
        let digits: Vec<char> = keys
            .iter()
            .filter_map(|k| match k.code {
                KeyCode::Char(c) if c.is_ascii_digit() && k.mods.is_empty() => Some(c),
                _ => None,
            })
            .collect();
        if digits.len() > 2
            && digits.len() == keys.len()
            && digits.windows(2).all(|w| w[1] as u32 == w[0] as u32 + 1)
        {
            return format!("{}-{}", digits[0], digits[digits.len() - 1]);
        }
        keys.iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The first key of each action, joined: `j/k`, `[/]`, `q`; a run of digits stays `0-9`.
    pub fn short_label(&self, actions: &[Action]) -> String {
        if let [one] = actions {
            let full = self.label(*one);
            if !full.contains('/') {
                return full;
            }
        }
        actions
            .iter()
            .filter_map(|a| self.keys(*a).first().map(|k| k.to_string()))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Help lines grouped by key scope: (scope title, [(keys, description)]).
    pub fn help(&self) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
        [
            Scope::Global,
            Scope::Navigation,
            Scope::Approval,
            Scope::Replay,
            Scope::Palette,
            Scope::Chat,
        ]
        .into_iter()
        .map(|scope| {
            let rows = Action::all()
                .filter(|a| a.scope() == scope && !self.keys(*a).is_empty())
                .map(|a| (self.label(a), a.description()))
                .collect();
            (scope.title(), rows)
        })
        .collect()
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
        let mut agent = BTreeMap::new();
        agent.insert("why".to_string(), "y".to_string());
        assert!(Keymap::with_overrides(&agent).is_err());
        let mut unknown = BTreeMap::new();
        unknown.insert("fly".to_string(), "f".to_string());
        assert_eq!(
            Keymap::with_overrides(&unknown).err(),
            Some(KeymapError::UnknownAction("fly".into()))
        );
    }
}
