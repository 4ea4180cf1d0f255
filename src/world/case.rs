//! A case directory: case.toml, alert.json, recordings.ndjson, expect.toml and effects.toml, parsed
//! with errors that name the file and line.

use crate::integrations::stored::{RawRecording, parse_raw_recordings};
use crate::model::{Category, WebhookPayload};
use chrono::{DateTime, Datelike, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why a case could not be loaded. Always names the file, and the line when there is one.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("{file}:{line}: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("{file}: missing (every case needs one)")]
    Missing { file: String },
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

/// `case.toml`: what the case is and the world's clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseMeta {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub title: String,
    #[serde(deserialize_with = "world_clock")]
    pub now: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// `now` as a quoted RFC 3339 string or a bare TOML datetime (`now = 2026-04-18T10:47:00Z`): both
/// read the same text the same way, so a datetime without an offset is refused either way.
fn world_clock<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    use serde::de::Error;
    let text = match toml::Value::deserialize(d)? {
        toml::Value::String(s) => s,
        toml::Value::Datetime(dt) => dt.to_string(),
        other => {
            return Err(D::Error::custom(format!(
                "`now` must be a date and time with an offset, e.g. 2026-04-18T10:47:00Z; found a {}",
                other.type_str()
            )));
        }
    };
    text.parse::<DateTime<chrono::FixedOffset>>()
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            D::Error::custom(format!(
                "`now` = {text:?}: {e}; expected a date and time with an offset, e.g. 2026-04-18T10:47:00Z"
            ))
        })
}

/// `expect.toml`: the rubric a finished investigation is scored against.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub category: Option<Category>,
    #[serde(default)]
    pub required_keywords: Vec<String>,
    #[serde(default)]
    pub forbidden_keywords: Vec<String>,
    #[serde(default)]
    pub forbidden_categories: Vec<Category>,
    /// Words the root cause must not state (a kind of cause finer than a category, such as
    /// `cpu saturation`); the rest of the report may name them, e.g. as ruled out.
    #[serde(default)]
    pub forbidden_cause_keywords: Vec<String>,
    #[serde(default)]
    pub required_evidence: Vec<String>,
    #[serde(default)]
    pub ruling_out_keywords: Vec<String>,
}

/// One `[[effect]]` of `effects.toml`: after `action` (on `target`), `recordings` win.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub action: String,
    #[serde(default)]
    pub target: Option<String>,
    pub recordings: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EffectsFile {
    #[serde(default)]
    effect: Vec<Effect>,
}

/// A loaded case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub id: String,
    pub title: String,
    pub now: DateTime<Utc>,
    pub difficulty: Option<u32>,
    pub source: Option<String>,
    /// The trigger, when the case has an alert.json.
    pub alert: Option<WebhookPayload>,
    pub expect: Option<Expect>,
    pub effects: Vec<Effect>,
    /// Where it was loaded from (None for embedded cases).
    pub dir: Option<PathBuf>,
}

/// A parsed case plus its recordings: the base set and each effect's replacement set.
#[derive(Clone, Debug)]
pub struct LoadedCase {
    pub case: Case,
    /// Bodies kept as JSON text, parsed when they answer.
    pub recordings: Vec<RawRecording>,
    /// Effect recordings file name -> its recordings.
    pub overlays: BTreeMap<String, Vec<RawRecording>>,
}

/// The years a case's clock may take.
const MIN_YEAR: i32 = 1970;
const MAX_YEAR: i32 = 2200;

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map(|s| s.matches('\n').count() + 1)
        .unwrap_or(1)
}

fn toml_parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, CaseError> {
    toml::from_str(text).map_err(|e| CaseError::Parse {
        file: file.to_string(),
        line: e.span().map(|s| line_of(text, s.start)).unwrap_or(1),
        message: e.message().to_string(),
    })
}

/// Parses a case from its files (relative path -> contents). `label` prefixes file names in errors
/// (the directory, or the embedded case's name).
pub fn load(
    label: &str,
    files: &BTreeMap<String, String>,
    dir: Option<PathBuf>,
) -> Result<LoadedCase, CaseError> {
    let name = |f: &str| {
        if label.is_empty() {
            f.to_string()
        } else {
            format!("{}/{f}", label.trim_end_matches('/'))
        }
    };
    let meta_text = files.get("case.toml").ok_or_else(|| CaseError::Missing {
        file: name("case.toml"),
    })?;
    let meta: CaseMeta = toml_parse(&name("case.toml"), meta_text)?;
    // The clock feeds query windows, Loki's nanosecond timestamps and date arithmetic; a year
    // outside this range would overflow one of them.
    if !(MIN_YEAR..=MAX_YEAR).contains(&meta.now.year()) {
        return Err(CaseError::Invalid {
            file: name("case.toml"),
            message: format!(
                "`now` = {} is outside the years {MIN_YEAR}..={MAX_YEAR} a world clock may take",
                meta.now.to_rfc3339()
            ),
        });
    }

    let alert = match files.get("alert.json") {
        None => None,
        // A Datadog monitor notification (a world paged from Datadog).
        Some(text) if crate::model::monitor::is_webhook(text) => Some(
            crate::model::monitor::parse(text).map_err(|e| CaseError::Invalid {
                file: name("alert.json"),
                message: e.to_string(),
            })?,
        ),
        Some(text) => {
            let payload =
                serde_json::from_str::<WebhookPayload>(text).map_err(|e| CaseError::Parse {
                    file: name("alert.json"),
                    line: e.line().max(1),
                    message: e.to_string(),
                })?;
            // `{}` or `[]` deserialize (every field has a default); an alert file still needs alerts.
            if let Err(e) = WebhookPayload::parse(text) {
                return Err(CaseError::Invalid {
                    file: name("alert.json"),
                    message: e.to_string(),
                });
            }
            Some(payload)
        }
    };

    let expect = match files.get("expect.toml") {
        None => None,
        Some(text) => Some(toml_parse::<Expect>(&name("expect.toml"), text)?),
    };

    let rec_text = files
        .get("recordings.ndjson")
        .ok_or_else(|| CaseError::Missing {
            file: name("recordings.ndjson"),
        })?;
    let recordings =
        parse_raw_recordings(&name("recordings.ndjson"), rec_text).map_err(parse_err)?;

    let effects = match files.get("effects.toml") {
        None => Vec::new(),
        Some(text) => toml_parse::<EffectsFile>(&name("effects.toml"), text)?.effect,
    };
    let mut overlays = BTreeMap::new();
    for effect in &effects {
        if overlays.contains_key(&effect.recordings) {
            continue;
        }
        let text = files
            .get(&effect.recordings)
            .ok_or_else(|| CaseError::Invalid {
                file: name("effects.toml"),
                message: format!("recordings file {:?} is not in the case", effect.recordings),
            })?;
        let recs = parse_raw_recordings(&name(&effect.recordings), text).map_err(parse_err)?;
        overlays.insert(effect.recordings.clone(), recs);
    }

    let id = if meta.id.is_empty() {
        label
            .rsplit('/')
            .find(|s| !s.is_empty())
            .unwrap_or("case")
            .to_string()
    } else {
        meta.id
    };
    let title = if meta.title.is_empty() {
        alert
            .as_ref()
            .map(|a| a.primary().title())
            .unwrap_or_else(|| id.clone())
    } else {
        meta.title
    };
    Ok(LoadedCase {
        case: Case {
            id,
            title,
            now: meta.now,
            difficulty: meta.difficulty,
            source: meta.source,
            alert,
            expect,
            effects,
            dir,
        },
        recordings,
        overlays,
    })
}

/// `parse_raw_recordings` errors are already `file:line: message`.
fn parse_err(message: String) -> CaseError {
    let mut parts = message.splitn(3, ':');
    let file = parts.next().unwrap_or("").to_string();
    let line = parts.next().and_then(|l| l.parse().ok()).unwrap_or(1);
    let rest = parts.next().unwrap_or("").trim().to_string();
    CaseError::Parse {
        file,
        line,
        message: rest,
    }
}

/// Reads every regular file of a case directory (not recursive).
pub fn read_dir(dir: &std::path::Path) -> Result<BTreeMap<String, String>, CaseError> {
    let label = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|source| CaseError::Io {
        file: label.clone(),
        source,
    })?;
    let mut files = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|source| CaseError::Io {
            file: label.clone(),
            source,
        })?;
        let path = entry.path();
        let is_case_file = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "toml" | "json" | "ndjson"));
        if !path.is_file() || !is_case_file {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| CaseError::Io {
            file: path.display().to_string(),
            source,
        })?;
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            files.insert(name.to_string(), text);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn errors_name_file_and_line() {
        let f = files(&[
            ("case.toml", "id = \"x\"\nnow = \"not a time\"\n"),
            ("recordings.ndjson", ""),
        ]);
        let err = load("cases/x", &f, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("cases/x/case.toml:2:"), "{err}");

        let f = files(&[
            ("case.toml", "now = \"2026-04-18T10:47:00Z\"\n"),
            ("recordings.ndjson", "{}\n"),
        ]);
        let err = load("cases/x", &f, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("cases/x/recordings.ndjson:1:"), "{err}");

        let f = files(&[("case.toml", "now = \"2026-04-18T10:47:00Z\"\n")]);
        let err = load("c", &f, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(err, "c/recordings.ndjson: missing (every case needs one)");
    }

    #[test]
    fn an_unquoted_toml_datetime_is_the_same_clock_as_the_quoted_one() {
        let clock = |toml_now: &str| {
            let f = files(&[
                ("case.toml", &format!("id = \"x\"\nnow = {toml_now}\n")),
                ("recordings.ndjson", ""),
            ]);
            load("c", &f, None)
                .map(|c| c.case.now)
                .map_err(|e| e.to_string())
        };
        let quoted = clock("\"2026-04-18T10:47:00Z\"").expect("quoted");
        assert_eq!(clock("2026-04-18T10:47:00Z"), Ok(quoted));
        assert_eq!(clock("2026-04-18 10:47:00Z"), Ok(quoted));
        assert_eq!(clock("2026-04-18T12:47:00+02:00"), Ok(quoted));
        assert_eq!(
            clock("2026-04-18T10:47:00.250Z").map(|t| t.timestamp_millis()),
            Ok(quoted.timestamp_millis() + 250)
        );
        // No offset, no clock: refused as the quoted text would be, at the line.
        for bad in [
            "2026-04-18T10:47:00",
            "2026-04-18",
            "\"2026-04-18T10:47:00\"",
            "12",
        ] {
            let err = clock(bad).expect_err(bad);
            assert!(err.starts_with("c/case.toml:2:"), "{bad}: {err}");
            assert!(err.contains("offset"), "{bad}: {err}");
        }
    }

    #[test]
    fn effects_must_name_a_file_in_the_case() {
        let f = files(&[
            ("case.toml", "now = \"2026-04-18T10:47:00Z\"\n"),
            ("recordings.ndjson", ""),
            (
                "effects.toml",
                "[[effect]]\naction = \"kubernetes.rollout_undo\"\nrecordings = \"after.ndjson\"\n",
            ),
        ]);
        let err = load("c", &f, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("after.ndjson"), "{err}");
    }
}
