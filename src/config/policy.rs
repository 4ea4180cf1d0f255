//! `[policy]`: approval rules, and the checks their values pass.

use super::validate::Check;
use super::*;

fn default_veto_secs() -> u64 {
    30
}

fn default_approval_timeout() -> u64 {
    600
}

/// `[policy]`: approval rules. Risk levels themselves are fixed in code.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Medium-risk actions run after this many seconds unless vetoed.
    #[serde(default = "default_veto_secs")]
    pub veto_secs: u64,
    /// Refuse every mutating action (the `--read-only` flag sets this too).
    #[serde(default)]
    pub read_only: bool,
    /// A high or critical approval request lapses after this many seconds without a decision.
    #[serde(default = "default_approval_timeout")]
    pub approval_timeout_secs: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            veto_secs: default_veto_secs(),
            read_only: false,
            approval_timeout_secs: default_approval_timeout(),
        }
    }
}

/// An approval request lapses after at most a week: a larger value would leave a headless run
/// waiting for ever (and past ~2^63 overflow the clock it waits on).
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

impl Policy {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        if self.veto_secs > MAX_TIMEOUT_SECS {
            return Err(c.invalid(
                "policy.veto_secs",
                "a countdown between 0 and 3600 seconds",
                self.veto_secs.to_string(),
            ));
        }
        if !(1..=MAX_APPROVAL_TIMEOUT_SECS).contains(&self.approval_timeout_secs) {
            return Err(c.invalid(
                "policy.approval_timeout_secs",
                "a number of seconds between 1 and 604800 (one week)",
                self.approval_timeout_secs.to_string(),
            ));
        }
        Ok(())
    }
}
