//! Themes: named UI roles mapped to styles, parsed from TOML (ANSI names, 0-255 or #rrggbb).

use ratatui::style::{Color, Modifier, Style};
use std::collections::BTreeMap;
use std::path::Path;

pub use super::colour::{parse_colour, to_256, truecolor_env};

/// A named place in the UI that a theme colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Text,
    Dim,
    Title,
    Border,
    BorderFocus,
    Selection,
    Statusbar,
    KeyhintKey,
    StatusInfo,
    StatusError,
    Ok,
    Error,
    Warn,
    Running,
    Pending,
    SeverityCritical,
    SeverityWarning,
    SeverityInfo,
    SeverityUnknown,
    ChatOperator,
    ChatAgent,
    ChatSystem,
    ApprovalBorder,
    ApprovalKey,
    RiskLow,
    RiskMedium,
    RiskHigh,
    RiskCritical,
    Match,
    Progress,
    ChartSeries,
    ChartThreshold,
    ChartMarker,
}

impl Role {
    /// The role that colours a risk level, wherever a risk is shown.
    pub fn for_risk(risk: crate::model::Risk) -> Role {
        use crate::model::Risk;
        match risk {
            Risk::Low => Role::RiskLow,
            Risk::Medium => Role::RiskMedium,
            Risk::High => Role::RiskHigh,
            Risk::Critical => Role::RiskCritical,
        }
    }

    pub const ALL: [Role; 33] = [
        Role::Text,
        Role::Dim,
        Role::Title,
        Role::Border,
        Role::BorderFocus,
        Role::Selection,
        Role::Statusbar,
        Role::KeyhintKey,
        Role::StatusInfo,
        Role::StatusError,
        Role::Ok,
        Role::Error,
        Role::Warn,
        Role::Running,
        Role::Pending,
        Role::SeverityCritical,
        Role::SeverityWarning,
        Role::SeverityInfo,
        Role::SeverityUnknown,
        Role::ChatOperator,
        Role::ChatAgent,
        Role::ChatSystem,
        Role::ApprovalBorder,
        Role::ApprovalKey,
        Role::RiskLow,
        Role::RiskMedium,
        Role::RiskHigh,
        Role::RiskCritical,
        Role::Match,
        Role::Progress,
        Role::ChartSeries,
        Role::ChartThreshold,
        Role::ChartMarker,
    ];

    /// The dotted key used in theme files.
    pub fn key(self) -> &'static str {
        match self {
            Role::Text => "text",
            Role::Dim => "dim",
            Role::Title => "title",
            Role::Border => "border",
            Role::BorderFocus => "border_focus",
            Role::Selection => "selection",
            Role::Statusbar => "statusbar",
            Role::KeyhintKey => "keyhint.key",
            Role::StatusInfo => "status.info",
            Role::StatusError => "status.error",
            Role::Ok => "ok",
            Role::Error => "error",
            Role::Warn => "warn",
            Role::Running => "running",
            Role::Pending => "pending",
            Role::SeverityCritical => "severity.critical",
            Role::SeverityWarning => "severity.warning",
            Role::SeverityInfo => "severity.info",
            Role::SeverityUnknown => "severity.unknown",
            Role::ChatOperator => "chat.operator",
            Role::ChatAgent => "chat.agent",
            Role::ChatSystem => "chat.system",
            Role::ApprovalBorder => "approval.border",
            Role::ApprovalKey => "approval.key",
            Role::RiskLow => "risk.low",
            Role::RiskMedium => "risk.medium",
            Role::RiskHigh => "risk.high",
            Role::RiskCritical => "risk.critical",
            Role::Match => "match",
            Role::Progress => "progress",
            Role::ChartSeries => "chart.series",
            Role::ChartThreshold => "chart.threshold",
            Role::ChartMarker => "chart.marker",
        }
    }

    fn from_key(key: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.key() == key)
    }
}

/// A theme file could not be used; names the file and the offending key.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("theme file {file}: cannot read: {cause}")]
    Read { file: String, cause: std::io::Error },
    #[error("theme file {file}: invalid TOML: {cause}")]
    Toml { file: String, cause: String },
    #[error("theme file {file}: key `{key}`: {message}")]
    Key {
        file: String,
        key: String,
        message: String,
    },
    #[error(
        "unknown theme `{0}` (built-in: default, light, high-contrast, mono; or a path to a .toml file)"
    )]
    Unknown(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    styles: Vec<Style>,
    /// False for monochrome themes: syntax highlighting and charts draw without colour.
    pub colour: bool,
}

pub const BUILTIN: [(&str, &str); 4] = [
    ("default", include_str!("../../themes/default.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("mono", include_str!("../../themes/mono.toml")),
];

impl Default for Theme {
    fn default() -> Self {
        Self::fallback()
    }
}

impl Theme {
    pub fn get(&self, role: Role) -> Style {
        self.styles.get(role as usize).copied().unwrap_or_default()
    }

    /// Plain styles (no colour at all); the base every theme file is applied on.
    fn fallback() -> Self {
        let mut styles = vec![Style::default(); Role::ALL.len()];
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let rev = Style::default().add_modifier(Modifier::REVERSED);
        styles[Role::Title as usize] = bold;
        styles[Role::Selection as usize] = rev;
        styles[Role::Statusbar as usize] = rev;
        styles[Role::BorderFocus as usize] = bold;
        styles[Role::KeyhintKey as usize] = bold;
        styles[Role::Match as usize] = Style::default().add_modifier(Modifier::UNDERLINED);
        Self {
            name: "fallback".into(),
            styles,
            colour: false,
        }
    }

    pub fn builtin(name: &str) -> Option<Theme> {
        let (n, src) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        Theme::parse(src, &format!("<built-in {n}>")).ok()
    }

    /// The theme to use: an explicit name or path wins; otherwise NO_COLOR selects mono, else default.
    pub fn resolve(spec: Option<&str>, no_color: bool) -> Result<Theme, ThemeError> {
        match spec {
            // "default" is what an untouched config says; NO_COLOR still wins over it.
            Some("default") if no_color => {
                Ok(Theme::builtin("mono").unwrap_or_else(Theme::fallback))
            }
            Some(s) if looks_like_path(s) => Theme::from_file(Path::new(s)),
            Some(s) => Theme::builtin(s).ok_or_else(|| ThemeError::Unknown(s.to_string())),
            None if no_color => Ok(Theme::builtin("mono").unwrap_or_else(Theme::fallback)),
            None => Ok(Theme::builtin("default").unwrap_or_else(Theme::fallback)),
        }
    }

    /// The theme as this terminal can show it: without true colour (`COLORTERM` is not
    /// `truecolor`/`24bit`), every `#rrggbb` becomes the nearest of the 256 xterm colours.
    pub fn for_terminal(mut self, truecolor: bool) -> Theme {
        if truecolor {
            return self;
        }
        for st in &mut self.styles {
            st.fg = st.fg.map(to_256);
            st.bg = st.bg.map(to_256);
            st.underline_color = st.underline_color.map(to_256);
        }
        self
    }

    pub fn from_file(path: &Path) -> Result<Theme, ThemeError> {
        let file = path.display().to_string();
        let src = crate::config::read_theme(path).map_err(|cause| ThemeError::Read {
            file: file.clone(),
            cause,
        })?;
        Theme::parse(&src, &file)
    }

    /// Parse a theme file: `name`, optional `colour = false`, a `[palette]` of named colours and
    /// role styles (`text = "white"` or `border = { fg = "blue", bold = true }`, nested or dotted).
    pub fn parse(src: &str, file: &str) -> Result<Theme, ThemeError> {
        let table: toml::Table = toml::from_str(src).map_err(|e| ThemeError::Toml {
            file: file.to_string(),
            cause: e.to_string().lines().next().unwrap_or("").to_string(),
        })?;
        let err = |key: &str, message: String| ThemeError::Key {
            file: file.to_string(),
            key: key.to_string(),
            message,
        };
        let mut theme = Theme::fallback();
        let mut palette: BTreeMap<String, Color> = BTreeMap::new();
        if let Some(p) = table.get("palette") {
            let p = p
                .as_table()
                .ok_or_else(|| err("palette", "must be a table".into()))?;
            for (k, v) in p {
                let key = format!("palette.{k}");
                let s = colour_text(v)
                    .ok_or_else(|| err(&key, "must be a colour string or 0-255".into()))?;
                palette.insert(
                    k.clone(),
                    parse_colour(&s, &BTreeMap::new()).map_err(|m| err(&key, m))?,
                );
            }
        }
        theme.colour = true;
        for (k, v) in &table {
            match k.as_str() {
                "palette" => {}
                "name" => {
                    theme.name = v
                        .as_str()
                        .ok_or_else(|| err("name", "must be a string".into()))?
                        .to_string();
                }
                "colour" | "color" => {
                    theme.colour = v
                        .as_bool()
                        .ok_or_else(|| err(k, "must be true or false".into()))?;
                }
                _ => apply_roles(&mut theme, k, v, &palette, &err)?,
            }
        }
        Ok(theme)
    }
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.ends_with(".toml")
}

const STYLE_KEYS: [&str; 8] = [
    "fg",
    "bg",
    "bold",
    "dim",
    "italic",
    "underline",
    "reversed",
    "modifiers",
];

fn apply_roles(
    theme: &mut Theme,
    key: &str,
    value: &toml::Value,
    palette: &BTreeMap<String, Color>,
    err: &dyn Fn(&str, String) -> ThemeError,
) -> Result<(), ThemeError> {
    let is_style_table = value
        .as_table()
        .is_some_and(|t| t.keys().any(|k| STYLE_KEYS.contains(&k.as_str())));
    if let Some(t) = value.as_table()
        && !is_style_table
    {
        for (k, v) in t {
            apply_roles(theme, &format!("{key}.{k}"), v, palette, err)?;
        }
        return Ok(());
    }
    let role = Role::from_key(key).ok_or_else(|| err(key, "unknown role".into()))?;
    let style = parse_style(key, value, palette, err)?;
    theme.styles[role as usize] = style;
    Ok(())
}

fn parse_style(
    key: &str,
    value: &toml::Value,
    palette: &BTreeMap<String, Color>,
    err: &dyn Fn(&str, String) -> ThemeError,
) -> Result<Style, ThemeError> {
    if let Some(s) = colour_text(value) {
        return Ok(Style::default().fg(parse_colour(&s, palette).map_err(|m| err(key, m))?));
    }
    let t = value.as_table().ok_or_else(|| {
        err(
            key,
            "must be a colour or a table with fg/bg/bold/...".into(),
        )
    })?;
    let mut style = Style::default();
    for (k, v) in t {
        let sub = format!("{key}.{k}");
        match k.as_str() {
            "fg" | "bg" => {
                let s = colour_text(v)
                    .ok_or_else(|| err(&sub, "must be a colour string or 0-255".into()))?;
                let c = parse_colour(&s, palette).map_err(|m| err(&sub, m))?;
                style = if k == "fg" { style.fg(c) } else { style.bg(c) };
            }
            "bold" | "dim" | "italic" | "underline" | "reversed" => {
                let on = v
                    .as_bool()
                    .ok_or_else(|| err(&sub, "must be true or false".into()))?;
                let m = match k.as_str() {
                    "bold" => Modifier::BOLD,
                    "dim" => Modifier::DIM,
                    "italic" => Modifier::ITALIC,
                    "underline" => Modifier::UNDERLINED,
                    _ => Modifier::REVERSED,
                };
                if on {
                    style = style.add_modifier(m);
                }
            }
            _ => {
                return Err(err(
                    &sub,
                    "unknown style key (fg, bg, bold, dim, italic, underline, reversed)".into(),
                ));
            }
        }
    }
    Ok(style)
}

fn colour_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, src) in BUILTIN {
            let t = Theme::parse(src, name);
            assert!(t.is_ok(), "{name}: {t:?}");
        }
    }

    #[test]
    fn default_uses_only_the_16_ansi_colours() {
        let t = Theme::builtin("default").unwrap_or_default();
        for role in Role::ALL {
            let s = t.get(role);
            for c in [s.fg, s.bg].into_iter().flatten() {
                assert!(
                    !matches!(c, Color::Rgb(..) | Color::Indexed(_)),
                    "{}: {c:?}",
                    role.key()
                );
            }
        }
    }

    #[test]
    fn mono_has_no_colour() {
        let t = Theme::builtin("mono").unwrap_or_default();
        assert!(!t.colour);
        for role in Role::ALL {
            let s = t.get(role);
            assert!(
                s.fg.is_none_or(|c| c == Color::Reset) && s.bg.is_none_or(|c| c == Color::Reset),
                "{}",
                role.key()
            );
        }
    }

    #[test]
    fn broken_theme_names_file_and_key() {
        let e = Theme::parse("[severity]\ncritical = { fg = \"purpel\" }\n", "my.toml").err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("my.toml")
                && msg.contains("severity.critical.fg")
                && msg.contains("purpel"),
            "{msg}"
        );
        let e = Theme::parse("bordr = \"red\"\n", "x.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("`bordr`") && e.contains("unknown role"), "{e}");
        let e = Theme::parse("text = [", "y.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("y.toml") && e.contains("invalid TOML"), "{e}");
    }

    #[test]
    fn colours_parse() {
        let p = BTreeMap::new();
        assert_eq!(parse_colour("#ff8000", &p), Ok(Color::Rgb(255, 128, 0)));
        assert_eq!(parse_colour("208", &p), Ok(Color::Indexed(208)));
        assert_eq!(parse_colour("bright-blue", &p), Ok(Color::LightBlue));
        assert!(parse_colour("300", &p).is_err());
    }

    #[test]
    fn resolve_prefers_explicit_then_no_color() {
        assert_eq!(
            Theme::resolve(None, true).map(|t| t.name).ok().as_deref(),
            Some("mono")
        );
        assert_eq!(
            Theme::resolve(Some("light"), true)
                .map(|t| t.name)
                .ok()
                .as_deref(),
            Some("light")
        );
        assert!(matches!(
            Theme::resolve(Some("nope"), false),
            Err(ThemeError::Unknown(_))
        ));
    }
}
