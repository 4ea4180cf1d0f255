//! The record of a model exchange, kept one way wherever it goes: a line of a case directory's
//! `llm.ndjson`, or a `model_exchange` event in a session file, and back again for a replay.

use super::{Exchange, Provider};
use crate::model::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// One recorded exchange as a case directory's `llm.ndjson` holds it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Recorded {
    pub provider: Provider,
    pub model: String,
    pub request: Value,
    pub raw: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Recorded {
    /// What of `ex` a replay needs: the body sent, the raw answer, and the error if it failed.
    pub fn of(ex: &Exchange) -> Recorded {
        Recorded {
            provider: ex.provider,
            model: ex.model.clone(),
            request: ex.request.clone(),
            raw: ex.raw.clone(),
            error: ex.reply.as_ref().err().cloned(),
        }
    }

    /// The exchange a session's `model_exchange` event holds; `None` for any other event. A
    /// provider this build does not know replays with the default wire format.
    pub fn from_event(event: &Event) -> Option<Recorded> {
        let Event::ModelExchange {
            provider,
            model,
            request,
            raw,
            error,
            ..
        } = event
        else {
            return None;
        };
        Some(Recorded {
            provider: serde_json::from_value(Value::String(provider.clone())).unwrap_or_default(),
            model: model.clone(),
            request: request.clone(),
            raw: raw.clone(),
            error: error.clone(),
        })
    }
}

/// The session event recording `ex`, step `step` of what it was for (`investigate`, `chat`).
pub fn event(purpose: &str, step: u32, ex: &Exchange) -> Event {
    let (tokens_in, tokens_out) = ex
        .reply
        .as_ref()
        .map(|r| (r.tokens_in, r.tokens_out))
        .unwrap_or((0, 0));
    Event::ModelExchange {
        purpose: purpose.into(),
        step,
        provider: ex.provider.name().into(),
        model: ex.model.clone(),
        request: ex.request.clone(),
        raw: ex.raw.clone(),
        error: ex.reply.as_ref().err().cloned(),
        tokens_in,
        tokens_out,
    }
}

/// Read a `llm.ndjson` file.
pub fn load_recorded(path: &Path) -> Result<Vec<Recorded>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: not a recorded exchange: {e}", path.display(), n + 1))
        })
        .collect()
}

/// Append `ex` to the `llm.ndjson` at `path` as one line.
pub fn append(path: &Path, ex: &Exchange) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let text = serde_json::to_string(&Recorded::of(ex)).map_err(std::io::Error::other)?;
    writeln!(f, "{text}")
}
