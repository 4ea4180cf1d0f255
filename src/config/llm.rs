//! `[llm]`: the model that investigates and chats, and the checks its values pass.

use super::validate::Check;
use super::*;

fn default_max_steps() -> u32 {
    20
}

/// The providers `[llm] provider` accepts.
pub const LLM_PROVIDERS: [&str; 3] = ["openai", "anthropic", "ollama"];

/// `[llm]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Llm {
    /// `openai` (any OpenAI-compatible /v1), `anthropic`, or `ollama` (native /api/chat).
    pub provider: String,
    /// openai: POST {base_url}/chat/completions; anthropic: POST {base_url}/v1/messages;
    /// ollama: POST {base_url}/api/chat.
    pub base_url: String,
    pub model: String,
    /// The API key: an environment variable (`VAR` or `env:VAR`), or an `op://`/`vault://`
    /// reference read after approval; its value stays in memory only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Model turns per investigation.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
}

impl Llm {
    pub(super) fn validate(&self, c: &Check) -> Result<(), ConfigError> {
        if !LLM_PROVIDERS.contains(&self.provider.as_str()) {
            return Err(c.invalid(
                "llm.provider",
                "one of \"openai\", \"anthropic\", \"ollama\"",
                format!("{:?}", self.provider),
            ));
        }
        c.url("llm.base_url", &self.base_url)?;
        if self.model.trim().is_empty() {
            return Err(c.invalid("llm.model", "a model name", "\"\"".into()));
        }
        if self.max_steps == 0 || self.max_steps > 200 {
            return Err(c.invalid("llm.max_steps", "1 to 200", self.max_steps.to_string()));
        }
        Ok(())
    }
}
