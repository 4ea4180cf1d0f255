//! `[notify]`: where `sitrep serve` tells people about its investigations, and its checks.

use super::validate::Check;
use super::*;

/// `[notify]`: where `sitrep serve` tells people about its investigations.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<SlackNotify>,
}

pub(super) fn default_slack_api_url() -> String {
    "https://slack.com/api".into()
}

pub(super) fn default_slack_on() -> Vec<String> {
    SLACK_EVENTS.iter().map(|e| e.to_string()).collect()
}

/// What `[notify.slack] on` may choose.
pub const SLACK_EVENTS: &[&str] = &["approval", "end"];

/// `[notify.slack]`: an incoming webhook, or a bot token and a channel (`chat.postMessage`); the
/// signing secret lets the approval message's buttons decide. Every secret is a reference.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlackNotify {
    /// Where the incoming webhook URL is (`env:SLACK_WEBHOOK_URL`, `op://...`, `vault://...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Where the bot token (`xoxb-...`) is, for `chat.postMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The channel `chat.postMessage` posts to (an id such as `C0123ABC` or `#name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The Web API's base URL.
    #[serde(default = "default_slack_api_url")]
    pub api_url: String,
    /// Where the app's signing secret is: interactions (the approve and deny buttons) are
    /// verified with it; without one the buttons are not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
    /// Which messages are sent: `approval` (a high or critical action waits), `end`.
    #[serde(default = "default_slack_on")]
    pub on: Vec<String>,
    /// Slack user id -> operator name a button press is recorded under (`U123ABC = "alice"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub users: BTreeMap<String, String>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

impl Notify {
    pub fn is_empty(&self) -> bool {
        self.slack.is_none()
    }
}

impl Notify {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        let Some(s) = &self.slack else {
            return Ok(());
        };
        let invalid = |key: &str, expected: &str, found: String| {
            c.invalid(&format!("notify.slack.{key}"), expected, found)
        };
        let reference = |key: &str, v: &Option<String>| match v {
            Some(v) if !is_secret_reference(v) || v.contains(char::is_whitespace) => Err(invalid(
                key,
                "a reference such as \"env:VAR\", \"op://vault/item/field\" or \"vault://mount/path#field\", not the secret itself",
                format!("a value of {} characters", v.chars().count()),
            )),
            _ => Ok(()),
        };
        reference("webhook_url", &s.webhook_url)?;
        reference("token", &s.token)?;
        reference("signing_secret", &s.signing_secret)?;
        match (&s.webhook_url, &s.token) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "token",
                    "either `webhook_url` (an incoming webhook) or `token` and `channel`, not both",
                    "both".into(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "webhook_url",
                    "`webhook_url` (an incoming webhook) or `token` and `channel`",
                    "neither".into(),
                ));
            }
            (None, Some(_)) if s.channel.as_deref().is_none_or(|c| c.trim().is_empty()) => {
                return Err(invalid(
                    "channel",
                    "the channel `chat.postMessage` posts to",
                    "nothing".into(),
                ));
            }
            _ => {}
        }
        c.url("notify.slack.api_url", &s.api_url)?;
        if let Some(bad) = s.on.iter().find(|e| !SLACK_EVENTS.contains(&e.as_str())) {
            return Err(invalid(
                "on",
                "a list of \"approval\" and \"end\"",
                format!("{bad:?}"),
            ));
        }
        for (id, name) in &s.users {
            let id_ok =
                !id.is_empty() && id.len() <= 32 && id.chars().all(|c| c.is_ascii_alphanumeric());
            if !id_ok {
                return Err(invalid(
                    "users",
                    "Slack user ids such as U123ABC",
                    format!("{id:?}"),
                ));
            }
            let name_ok = (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
            if !name_ok {
                return Err(invalid(
                    &format!("users.{id}"),
                    "an operator name (letters, digits, . _ - @)",
                    format!("{name:?}"),
                ));
            }
        }
        c.timeout("notify.slack.timeout_secs", s.timeout_secs)
    }
}
