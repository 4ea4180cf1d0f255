//! `[inbox]`: how the alert inbox polls and groups, and the checks its values pass.

use super::validate::Check;
use super::*;

fn default_poll_secs() -> u64 {
    15
}

fn default_group_by() -> Vec<String> {
    vec!["alertname".into()]
}

fn default_true() -> bool {
    true
}

/// `[inbox]`: the alert inbox.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Inbox {
    /// Seconds between polls of each source (a failing source backs off from there).
    #[serde(default = "default_poll_secs")]
    pub poll_secs: u64,
    /// Labels whose values form a group, karma-style.
    #[serde(default = "default_group_by")]
    pub group_by: Vec<String>,
    /// Ring the terminal bell when a new alert fires.
    #[serde(default = "default_true")]
    pub bell: bool,
    /// Show the number of firing alerts in the terminal title.
    #[serde(default = "default_true")]
    pub title: bool,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            poll_secs: default_poll_secs(),
            group_by: default_group_by(),
            bell: true,
            title: true,
        }
    }
}

impl Inbox {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        if !(1..=MAX_TIMEOUT_SECS).contains(&self.poll_secs) {
            return Err(c.invalid(
                "inbox.poll_secs",
                "a poll interval between 1 and 3600 seconds",
                self.poll_secs.to_string(),
            ));
        }
        if let Some(bad) = self
            .group_by
            .iter()
            .find(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(c.invalid(
                "inbox.group_by",
                "label names (letters, digits, _)",
                format!("{bad:?}"),
            ));
        }
        Ok(())
    }
}
