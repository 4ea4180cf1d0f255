//! Reads a record line that adds one large text evidence item without copying its body: the JSON
//! string is unescaped in place inside the line's own buffer, which then becomes the text.
//!
//! The general path (serde's internally tagged enums) buffers a string, unescapes it into scratch
//! and copies it again: a 120 MB log held three times over while one line is parsed. Here the line
//! is held once and handed over.

use crate::model::{CallId, Event, Evidence, EvidenceBody, Record};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Lines shorter than this take the general path: the copies only matter for large bodies.
pub(crate) const LARGE_LINE: usize = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    t: f64,
    #[serde(borrow)]
    event: Added<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Added<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    evidence: AddedEvidence<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddedEvidence<'a> {
    id: String,
    kind: String,
    title: String,
    source: String,
    #[serde(default)]
    call_id: Option<CallId>,
    #[serde(borrow)]
    body: TextBody<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBody<'a> {
    format: &'a str,
    language: String,
    #[serde(borrow)]
    text: &'a RawValue,
}

/// The record of `line` when it is an `evidence_added` of a text body, taking `line`'s buffer as
/// the text. None, with `line` untouched, when the line has any other shape: the general path then
/// decides what it is. An error only for a body whose escapes are not valid Unicode (a corrupt
/// record either way); `line` is then spent.
pub(crate) fn take_text_evidence(line: &mut Vec<u8>) -> Option<serde_json::Result<Record>> {
    let parsed: Line = serde_json::from_slice(line).ok()?;
    if parsed.event.kind != "evidence_added" || parsed.event.evidence.body.format != "text" {
        return None;
    }
    let raw = parsed.event.evidence.body.text.get();
    // A JSON string: quotes around the escaped text.
    if raw.len() < 2 || !raw.starts_with('"') {
        return None;
    }
    let start = raw.as_ptr().addr().checked_sub(line.as_ptr().addr())?;
    let end = start + raw.len();
    let AddedEvidence {
        id,
        kind,
        title,
        source,
        call_id,
        body: TextBody { language, .. },
    } = parsed.event.evidence;
    let t = parsed.t;
    let text = match unescape_in_place(line, start + 1, end - 1) {
        Ok(()) => std::mem::take(line),
        Err(e) => return Some(Err(e)),
    };
    let text = match String::from_utf8(text) {
        // Unescaping shortened it, and the read grew the buffer by doubling: what is past the
        // text is given back rather than held as long as the item.
        Ok(mut text) => {
            text.shrink_to_fit();
            text
        }
        Err(e) => return Some(Err(serde::de::Error::custom(e))),
    };
    Some(Ok(Record {
        t,
        event: Event::EvidenceAdded {
            evidence: Evidence {
                id,
                kind,
                title,
                source,
                call_id,
                body: EvidenceBody::Text { language, text },
            },
        },
    }))
}

/// Unescape the JSON string content `buf[from..to]` into the front of `buf` and truncate it there.
/// Escapes never grow (`\n` is two bytes for one, `\uXXXX` six for at most three), so the write
/// position never passes the read position.
fn unescape_in_place(buf: &mut Vec<u8>, from: usize, to: usize) -> serde_json::Result<()> {
    let bad = |what: &str, at: usize| -> serde_json::Error {
        serde::de::Error::custom(format!("{what} at byte {at} of the evidence text"))
    };
    let (mut r, mut w) = (from, 0);
    while r < to {
        let Some(k) = buf[r..to].iter().position(|&b| b == b'\\') else {
            buf.copy_within(r..to, w);
            w += to - r;
            break;
        };
        buf.copy_within(r..r + k, w);
        w += k;
        r += k;
        let escape = *buf.get(r + 1).ok_or_else(|| bad("unfinished escape", r))?;
        r += 2;
        let byte = match escape {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (c, used) =
                    unicode_escape(&buf[r..to]).ok_or_else(|| bad("bad \\u escape", r))?;
                r += used;
                let mut utf8 = [0u8; 4];
                let bytes = c.encode_utf8(&mut utf8).as_bytes();
                buf[w..w + bytes.len()].copy_from_slice(bytes);
                w += bytes.len();
                continue;
            }
            _ => return Err(bad("unknown escape", r - 2)),
        };
        buf[w] = byte;
        w += 1;
    }
    buf.truncate(w);
    Ok(())
}

/// The character of the four hex digits at the start of `rest` (just after `\u`), reading the low
/// half of a surrogate pair from a following `\uXXXX`; and how many bytes of `rest` it used.
fn unicode_escape(rest: &[u8]) -> Option<(char, usize)> {
    let hex = |b: &[u8]| -> Option<u32> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    let first = hex(rest)?;
    match first {
        0xD800..=0xDBFF => {
            if rest.get(4..6)? != b"\\u" {
                return None;
            }
            let low = hex(&rest[6..])?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00);
            Some((char::from_u32(c)?, 10))
        }
        0xDC00..=0xDFFF => None,
        c => Some((char::from_u32(c)?, 4)),
    }
}

/// Why a record line could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    #[error("not UTF-8: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Parse one record line held in `line`, which a large text evidence body takes over. The line is
/// checked for UTF-8 once: by the JSON parser on the large path, here on the general one.
pub(crate) fn parse_record_line(line: &mut Vec<u8>) -> Result<Record, LineError> {
    if line.len() >= LARGE_LINE
        && let Some(record) = take_text_evidence(line)
    {
        return Ok(record?);
    }
    let text = std::str::from_utf8(line)?;
    Ok(super::reader::parse_record(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn general(line: &str) -> Option<Record> {
        serde_json::from_str::<Record>(line).ok()
    }

    fn fast(line: &str) -> Option<Option<Record>> {
        let mut buf = line.as_bytes().to_vec();
        take_text_evidence(&mut buf).map(|r| r.ok())
    }

    #[test]
    fn a_text_evidence_line_reads_as_the_general_path_reads_it() {
        let lines = [
            r#"{"t":1.5,"event":{"type":"evidence_added","evidence":{"id":"e1","kind":"logs","title":"t","source":"loki.query_range","body":{"format":"text","language":"log","text":"a\nb\tc \"q\" \\ \/ \b\f\r \u00e9 \u20ac \ud83d\ude00 end"}}}}"#,
            r#"{"event":{"evidence":{"body":{"text":"plain","language":"log","format":"text"},"source":"s","title":"t","kind":"k","id":"e2","call_id":"c1"},"type":"evidence_added"},"t":2}"#,
            r#"{"t":3,"event":{"type":"evidence_added","evidence":{"id":"e3","kind":"k","title":"t","source":"s","call_id":null,"body":{"format":"text","language":"log","text":""}}}}"#,
            r#"{"t":4,"event":{"type":"evidence_added","evidence":{"id":"e4","kind":"k","title":"t","source":"s","body":{"format":"text","language":"log","text":"\\n\\\\"}}}}"#,
        ];
        for line in lines {
            let g = general(line);
            assert!(g.is_some(), "{line}");
            assert_eq!(fast(line), Some(g), "{line}");
        }
    }

    #[test]
    fn other_shapes_are_left_to_the_general_path_untouched() {
        let lines = [
            // Another body format, another event, an unknown field, a field missing, a wrong type.
            r#"{"t":1,"event":{"type":"evidence_added","evidence":{"id":"e","kind":"k","title":"t","source":"s","body":{"format":"json","value":{"text":"x"}}}}}"#,
            r#"{"t":1,"event":{"type":"evidence_appended","evidence_id":"e","text":"x"}}"#,
            r#"{"t":1,"event":{"type":"evidence_added","evidence":{"id":"e","kind":"k","title":"t","source":"s","extra":1,"body":{"format":"text","language":"log","text":"x"}}}}"#,
            r#"{"t":1,"event":{"type":"evidence_added","evidence":{"id":"e","kind":"k","title":"t","body":{"format":"text","language":"log","text":"x"}}}}"#,
            r#"{"t":1,"event":{"type":"evidence_added","evidence":{"id":"e","kind":"k","title":"t","source":"s","body":{"format":"text","language":"log","text":5}}}}"#,
            r#"{"t":1,"event":{"type":"evidence_added","evidence":{"id":"e","kind":"k","title":"t","source":"s","body":{"format":"text","language":"log","text":"x"}}}"#,
            "not json",
        ];
        for line in lines {
            let mut buf = line.as_bytes().to_vec();
            assert!(take_text_evidence(&mut buf).is_none(), "{line}");
            assert_eq!(buf, line.as_bytes(), "the line is left as it was");
        }
    }

    #[test]
    fn a_lone_surrogate_is_an_error_on_both_paths() {
        for text in [r"\ud83d", r"\ude00", r"\ud83dx", r"\ud83d\u0041"] {
            let line = format!(
                r#"{{"t":1,"event":{{"type":"evidence_added","evidence":{{"id":"e","kind":"k","title":"t","source":"s","body":{{"format":"text","language":"log","text":"{text}"}}}}}}}}"#
            );
            assert_eq!(general(&line), None, "{line}");
            assert_eq!(fast(&line), Some(None), "{line}");
        }
    }

    #[test]
    fn a_large_line_is_taken_and_a_small_one_left() {
        let body = "2026-11-22T09:00:00Z ERROR upstream \"ledger\" timed out\n".repeat(2000);
        let record = Record {
            t: 1.0,
            event: Event::EvidenceAdded {
                evidence: Evidence {
                    id: "big".into(),
                    kind: "logs".into(),
                    title: "logs".into(),
                    source: "loki.query_range".into(),
                    call_id: None,
                    body: EvidenceBody::Text {
                        language: "log".into(),
                        text: body,
                    },
                },
            },
        };
        let mut line = serde_json::to_vec(&record).unwrap_or_else(|e| panic!("{e}"));
        assert!(line.len() >= LARGE_LINE);
        assert_eq!(parse_record_line(&mut line).ok(), Some(record.clone()));
        assert!(line.is_empty(), "the buffer became the text");

        // A byte that is not UTF-8 in a large body is reported as such, not as bad JSON.
        let mut broken = serde_json::to_vec(&record).unwrap_or_else(|e| panic!("{e}"));
        let at = broken.len() / 2;
        broken[at] = 0xff;
        assert!(matches!(
            parse_record_line(&mut broken),
            Err(LineError::NotUtf8(_))
        ));

        let mut small = br#"{"t":2,"event":{"type":"stage_started","stage":"triage"}}"#.to_vec();
        assert!(parse_record_line(&mut small).is_ok());
        assert!(!small.is_empty());
    }
}
