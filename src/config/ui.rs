//! `[ui]` and `[keys]`: the console's theme and key bindings, and the checks they pass.

use super::validate::Check;
use super::*;

fn default_theme() -> String {
    "default".into()
}

/// `[ui]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ui {
    /// Theme name (`themes/<name>.toml`); `NO_COLOR` forces `mono`.
    #[serde(default = "default_theme")]
    pub theme: String,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            theme: default_theme(),
        }
    }
}

impl Ui {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        let theme_ok = !self.theme.is_empty()
            && self
                .theme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !theme_ok {
            return Err(c.invalid(
                "ui.theme",
                "a theme name (letters, digits, - and _)",
                format!("{:?}", self.theme),
            ));
        }
        Ok(())
    }
}

/// The text of a theme file the operator named (`[ui] theme`, `--theme`, `:theme`): settings,
/// like config.toml, so read here rather than by the console.
pub fn read_theme(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

/// Named keys accepted in `[keys]`, besides single characters and `f1`..`f12`.
pub const NAMED_KEYS: &[&str] = &[
    "enter",
    "return",
    "esc",
    "escape",
    "tab",
    "backtab",
    "space",
    "backspace",
    "delete",
    "del",
    "insert",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pgup",
    "pagedown",
    "pgdown",
];

/// Whether `spec` is a key the keymap understands: optional `ctrl-`/`alt-`/`shift-` (or `ctrl+`...) prefixes,
/// then one character, a named key or `f1`..`f12`.
pub fn is_key_spec(spec: &str) -> bool {
    let mut rest = spec;
    loop {
        let lower = rest.to_ascii_lowercase();
        let stripped = ["ctrl-", "alt-", "shift-", "ctrl+", "alt+", "shift+"]
            .iter()
            .find(|p| lower.starts_with(**p) && rest.len() > p.len());
        match stripped {
            Some(p) => rest = &rest[p.len()..],
            None => break,
        }
    }
    if rest.chars().count() == 1 {
        return !rest.chars().any(char::is_whitespace);
    }
    let lower = rest.to_ascii_lowercase();
    if NAMED_KEYS.contains(&lower.as_str()) {
        return true;
    }
    lower
        .strip_prefix('f')
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (1..=12).contains(&n))
}

/// `[keys]`: every binding one or more key specs.
pub(super) fn validate_keys(keys: &BTreeMap<String, String>, c: &Check) -> Result<(), ConfigError> {
    for (action, spec) in keys {
        let ok = spec.split_whitespace().count() > 0 && spec.split_whitespace().all(is_key_spec);
        if !ok {
            return Err(c.invalid(
                &format!("keys.{action}"),
                "one or more keys separated by spaces, such as \"a\", \"G\", \"ctrl-d\", \"j down\", \"enter\", \"f1\"",
                format!("{spec:?}"),
            ));
        }
    }
    Ok(())
}
