//! Log templates: Drain-style clustering of log lines by token structure (variable parts masked),
//! and the comparison of template counts before and after the onset.

use crate::model::LogLine;
use chrono::{DateTime, Utc};
use regex::Regex;
use std::sync::LazyLock;

/// The placeholder for a token that differs between lines of one template.
const WILD: &str = "<*>";

/// Lines of one template must agree on at least this share of their tokens.
const SIMILARITY: f64 = 0.5;

/// Masks, in order: what is variable in a log line and says nothing about its structure.
static MASKS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // A leading timestamp (RFC 3339 or `2026-08-14 03:30:00,123`).
        (
            r"^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*",
            "",
        ),
        (r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"#, "<STR>"),
        (
            r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "<ID>",
        ),
        (
            r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b|\[[0-9a-fA-F:]*:[0-9a-fA-F:]+\](?::\d{1,5})?",
            "<IP>",
        ),
        (r"(?i)\b0x[0-9a-f]+\b", "<HEX>"),
        (r"(?i)\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b", "<HEX>"),
        (r"(?i)\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b", "<HEX>"),
        (
            r"(?i)\b\d+(?:\.\d+)?(?:ms|us|µs|ns|s|m|h|kb|mb|gb|ki|mi|gi|b|%)?\b",
            "<NUM>",
        ),
    ]
    .into_iter()
    .filter_map(|(p, r)| Regex::new(p).ok().map(|re| (re, r)))
    .collect()
});

/// A line's tokens with the variable parts masked.
pub(crate) fn tokens(line: &str) -> Vec<String> {
    let mut text = line.trim().to_string();
    for (re, with) in MASKS.iter() {
        // HEX masks must not eat a hex-looking word that is only letters (`cafe`, `added`):
        // the patterns themselves require a digit, so a plain replace is right.
        text = re.replace_all(&text, *with).into_owned();
    }
    text.split_whitespace()
        .map(|t| {
            // `id=<NUM>,` and `id=<NUM>` are one structure.
            t.trim_end_matches([',', ';']).to_string()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// One template and the lines that fit it.
#[derive(Clone, Debug)]
pub(crate) struct Template {
    pub tokens: Vec<String>,
    /// Indexes of the lines (in the slice given to [`cluster`]).
    pub lines: Vec<usize>,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
}

impl Template {
    pub(crate) fn text(&self) -> String {
        self.tokens.join(" ")
    }

    pub(crate) fn count(&self) -> usize {
        self.lines.len()
    }

    fn similarity(&self, other: &[String]) -> f64 {
        if self.tokens.len() != other.len() || other.is_empty() {
            return 0.0;
        }
        let same = self
            .tokens
            .iter()
            .zip(other)
            .filter(|(a, b)| a == b || a.as_str() == WILD)
            .count();
        same as f64 / other.len() as f64
    }

    fn absorb(&mut self, other: &[String]) {
        for (a, b) in self.tokens.iter_mut().zip(other) {
            if a != b {
                *a = WILD.to_string();
            }
        }
    }
}

/// Groups lines into templates: same token count, same first token (Drain's fixed-depth
/// prefix), and enough equal tokens; differing tokens become `<*>`. Most frequent first.
pub(crate) fn cluster(lines: &[&LogLine]) -> Vec<Template> {
    let mut out: Vec<Template> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let toks = tokens(&l.line);
        if toks.is_empty() {
            continue;
        }
        let best = out
            .iter_mut()
            .filter(|t| {
                t.tokens.first() == toks.first() || t.tokens.first().is_some_and(|f| f == WILD)
            })
            .map(|t| {
                let s = t.similarity(&toks);
                (t, s)
            })
            .filter(|(_, s)| *s >= SIMILARITY)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((t, _)) => {
                t.absorb(&toks);
                t.lines.push(i);
                t.first = min_time(t.first, l.at);
                t.last = max_time(t.last, l.at);
            }
            None => out.push(Template {
                tokens: toks,
                lines: vec![i],
                first: l.at,
                last: l.at,
            }),
        }
    }
    out.sort_by_key(|t| std::cmp::Reverse(t.count()));
    out
}

fn min_time(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_time(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// How a template's rate moved across the onset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shift {
    /// Never seen before the onset although the logs reach back before it.
    New { after: usize },
    /// Seen before, at least three times as often per minute after.
    Jump { before: usize, after: usize },
    /// Logged only in the minutes just before the onset, not since: a state set then (an alarm
    /// raised, a connection blocked) that the symptom followed.
    Lead { before: usize, minutes: i64 },
    /// Present on both sides at a similar rate.
    Steady,
    /// The logs do not reach back before the onset (or carry no timestamps): no comparison.
    Unknown,
}

/// How long before the onset a state logged once may have been set and still be what the
/// symptom followed.
const LEAD_MINUTES: i64 = 10;

/// Compare a template's lines before and after `onset`, against the span all `lines` cover.
pub(crate) fn shift(t: &Template, lines: &[&LogLine], onset: DateTime<Utc>) -> Shift {
    let times: Vec<DateTime<Utc>> = lines.iter().filter_map(|l| l.at).collect();
    let (Some(start), Some(end)) = (times.iter().min(), times.iter().max()) else {
        return Shift::Unknown;
    };
    if *start >= onset {
        return Shift::Unknown;
    }
    let (mut before, mut after) = (0usize, 0usize);
    for i in &t.lines {
        match lines.get(*i).and_then(|l| l.at) {
            Some(at) if at < onset => before += 1,
            Some(_) => after += 1,
            None => {}
        }
    }
    if after == 0 {
        let first = t.lines.iter().filter_map(|i| lines.get(*i)?.at).min();
        return match first.map(|f| (onset - f).num_minutes()) {
            Some(minutes) if before > 0 && minutes <= LEAD_MINUTES => {
                Shift::Lead { before, minutes }
            }
            _ => Shift::Steady,
        };
    }
    if before == 0 {
        return Shift::New { after };
    }
    let minutes =
        |a: DateTime<Utc>, b: DateTime<Utc>| ((b - a).num_seconds() as f64 / 60.0).max(1.0);
    let rate_before = before as f64 / minutes(*start, onset);
    let rate_after = after as f64 / minutes(onset, (*end).max(onset));
    if rate_after >= 3.0 * rate_before && after >= before + 2 {
        Shift::Jump { before, after }
    } else {
        Shift::Steady
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use std::collections::BTreeMap;

    fn at(line: &str, minute: i64) -> LogLine {
        let base = DateTime::parse_from_rfc3339("2026-05-02T10:00:00Z")
            .map(|d| d.to_utc())
            .unwrap_or_default();
        LogLine {
            at: Some(base + Duration::minutes(minute)),
            labels: BTreeMap::new(),
            line: line.into(),
        }
    }

    #[test]
    fn masks_numbers_ids_addresses_hex_and_quotes() {
        assert_eq!(
            tokens(
                "2026-05-02T10:00:01.5Z req 7f3a9c01 from 10.0.4.7:5512 took 35ms user=\"ana\" id=4e0c1d2b-aaaa-bbbb-cccc-0123456789ab"
            ),
            vec![
                "req",
                "<HEX>",
                "from",
                "<IP>",
                "took",
                "<NUM>",
                "user=<STR>",
                "id=<ID>"
            ]
        );
    }

    #[test]
    fn lines_of_one_structure_are_one_template() {
        let lines = [
            at("GET /orders/17 200 12ms", 0),
            at("GET /orders/9 200 8ms", 1),
            at("dial tcp 10.1.0.3:5432: connect: connection refused", 2),
            at("dial tcp 10.1.0.9:5432: connect: connection refused", 3),
            at("GET /orders/44 200 30ms", 4),
        ];
        let refs: Vec<&LogLine> = lines.iter().collect();
        let t = cluster(&refs);
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[0].count(), 3);
        assert_eq!(t[1].text(), "dial tcp <IP>: connect: connection refused");
    }

    #[test]
    fn new_and_jumping_templates_across_the_onset() {
        let mut lines = Vec::new();
        for m in 0..20 {
            lines.push(at(&format!("served request {m} in 5ms"), m));
        }
        lines.push(at("cache miss for key 3", 2));
        for m in 10..20 {
            lines.push(at(&format!("cache miss for key {m}"), m));
            lines.push(at(&format!("lookup db-{m}.svc: no such host"), m));
        }
        let refs: Vec<&LogLine> = lines.iter().collect();
        let onset = refs[10].at.unwrap_or_default();
        let ts = cluster(&refs);
        let find = |prefix: &str| {
            ts.iter()
                .find(|t| t.tokens[0] == prefix)
                .map(|t| shift(t, &refs, onset))
        };
        assert_eq!(find("served"), Some(Shift::Steady));
        assert_eq!(find("lookup"), Some(Shift::New { after: 10 }));
        assert_eq!(
            find("cache"),
            Some(Shift::Jump {
                before: 1,
                after: 10
            })
        );
        // Logs that start at the onset cannot say what is new.
        let late: Vec<&LogLine> = refs
            .iter()
            .copied()
            .filter(|l| l.at >= Some(onset))
            .collect();
        let lt = cluster(&late);
        assert!(lt.iter().all(|t| shift(t, &late, onset) == Shift::Unknown));
    }

    #[test]
    fn a_state_logged_just_before_the_onset_and_not_since_leads_it() {
        let mut lines = Vec::new();
        for m in 0..30 {
            lines.push(at(&format!("served request {m} in 5ms"), m));
        }
        // Set three minutes before the onset at minute 20, once per connection.
        for c in 0..3 {
            lines.push(at(
                &format!("connection {c} blocked by broker: low on memory"),
                17,
            ));
        }
        // Logged long before the onset and not since: background that stopped.
        lines.push(at("retrying flush of segment 4", 1));
        lines.push(at("retrying flush of segment 9", 2));
        let refs: Vec<&LogLine> = lines.iter().collect();
        let onset = refs[20].at.unwrap_or_default();
        let ts = cluster(&refs);
        let find = |prefix: &str| {
            ts.iter()
                .find(|t| t.tokens[0] == prefix)
                .map(|t| shift(t, &refs, onset))
        };
        assert_eq!(
            find("connection"),
            Some(Shift::Lead {
                before: 3,
                minutes: 3
            })
        );
        assert_eq!(find("retrying"), Some(Shift::Steady));
    }
}
