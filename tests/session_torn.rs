//! Damaged session files: truncation at any byte and corrupt lines never panic the reader, which keeps
//! every complete record before the damage and names the line where it stopped.

use proptest::prelude::*;
use sitrep::session::{self, SessionLog};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson")
}

fn fixture_bytes() -> Vec<u8> {
    match std::fs::read(fixture()) {
        Ok(b) => b,
        Err(e) => panic!("fixture missing: {e}"),
    }
}

/// Small deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// (start, end-before-newline) byte ranges of each line.
fn line_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            spans.push((start, i));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        spans.push((start, bytes.len()));
    }
    spans
}

fn read(bytes: &[u8]) -> Result<SessionLog, session::SessionError> {
    SessionLog::from_reader(bytes)
}

#[test]
fn truncation_at_1000_random_offsets() {
    let bytes = fixture_bytes();
    let full = match read(&bytes) {
        Ok(log) => log,
        Err(e) => panic!("fixture unreadable: {e}"),
    };
    assert!(full.tear.is_none(), "fixture is damaged: {:?}", full.tear);
    let spans = line_spans(&bytes);
    assert_eq!(spans.len(), full.records.len() + 1);
    let header_end = spans[0].1;

    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    // Every line boundary, plus random offsets, 1,000 in all.
    let mut offsets: Vec<usize> = spans.iter().flat_map(|(s, e)| [*s, *e]).collect();
    while offsets.len() < 1000 {
        offsets.push(rng.below(bytes.len() + 1));
    }
    for cut in offsets {
        let result = read(&bytes[..cut]);
        if cut < header_end {
            let err = match result {
                Ok(log) => panic!("cut {cut}: a torn header was accepted: {:?}", log.header),
                Err(e) => e.to_string(),
            };
            assert!(!err.is_empty());
            continue;
        }
        let log = match result {
            Ok(log) => log,
            Err(e) => panic!("cut {cut}: header was intact but reading failed: {e}"),
        };
        // Record lines (index >= 1) whose content lies entirely before the cut are complete.
        let complete = spans[1..].iter().filter(|(_, end)| *end <= cut).count();
        assert_eq!(log.records.len(), complete, "cut {cut}");
        assert_eq!(log.records[..], full.records[..complete], "cut {cut}");
        let torn_line = spans
            .iter()
            .position(|(start, end)| *start < cut && cut < *end);
        match (torn_line, &log.tear) {
            (None, None) => {}
            (Some(i), Some(tear)) => {
                assert_eq!(tear.line, i + 1, "cut {cut}: {tear}");
                assert_eq!(tear.byte_offset, spans[i].0 as u64, "cut {cut}");
                assert!(tear.reason.contains("torn"), "cut {cut}: {tear}");
            }
            (expected, got) => panic!("cut {cut}: expected tear at {expected:?}, got {got:?}"),
        }
    }
}

#[test]
fn corrupt_lines_stop_the_reader_at_that_line() {
    let bytes = fixture_bytes();
    let full = match read(&bytes) {
        Ok(log) => log,
        Err(e) => panic!("fixture unreadable: {e}"),
    };
    let spans = line_spans(&bytes);
    let mut rng = Rng(0xC0FF_EE00_DEAD_BEEF);
    for round in 0..300 {
        let victim = 1 + rng.below(spans.len() - 1);
        let (start, end) = spans[victim];
        let line = &bytes[start..end];
        let pos = rng.below(line.len());
        let damaged: Vec<u8> = match round % 5 {
            // An invalid UTF-8 byte.
            0 => [&line[..pos], &[0xFF], &line[pos..]].concat(),
            // A raw NUL: never valid JSON, inside or outside a string.
            1 => [&line[..pos], &[0], &line[pos..]].concat(),
            // The line cut short, newline kept (a lost write in the middle of the file).
            2 => line[..pos].to_vec(),
            // Random garbage.
            3 => (0..1 + rng.below(40))
                .map(|_| match (rng.next() & 0xFF) as u8 {
                    b'\n' => b'x',
                    b => b,
                })
                .chain([b'x'])
                .collect(),
            // Valid JSON of the wrong shape.
            _ => br#"{"t":1.0}"#.to_vec(),
        };
        let mut file = bytes[..start].to_vec();
        file.extend_from_slice(&damaged);
        file.extend_from_slice(&bytes[end..]);
        let log = match read(&file) {
            Ok(log) => log,
            Err(e) => panic!("round {round}: header intact but reading failed: {e}"),
        };
        // A garbage line that only holds whitespace is skipped, like a blank line.
        if damaged.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let tear = match &log.tear {
            Some(t) => t,
            None => panic!("round {round}: corrupt line {} was accepted", victim + 1),
        };
        assert_eq!(tear.line, victim + 1, "round {round}: {tear}");
        assert_eq!(tear.byte_offset, start as u64, "round {round}");
        assert_eq!(log.records[..], full.records[..victim - 1], "round {round}");
        assert!(tear.to_string().contains(&format!("line {}", victim + 1)));
    }
}

#[test]
fn bad_headers_are_clear_errors() {
    let cases: [(&[u8], &str); 5] = [
        (b"", "empty"),
        (b"not json\n", "not a sitrep session header"),
        (
            br#"{"t":0.0,"event":{"type":"warning","message":"x"}}"#,
            "not a session header",
        ),
        (
            b"{\"sitrep_session\":9,\"id\":\"x\",\"started\":\"2026-11-22T09:00:00Z\",\"title\":\"t\"}\n",
            "version 9",
        ),
        (b"\xff\xfe\n", "UTF-8"),
    ];
    for (input, expect) in cases {
        match read(input) {
            Ok(log) => panic!("accepted {input:?}: {log:?}"),
            Err(e) => assert!(e.to_string().contains(expect), "{e}"),
        }
    }
    let missing = session::read_file(Path::new("/nonexistent/sitrep/session.ndjson"));
    match missing {
        Ok(_) => panic!("read a missing file"),
        Err(e) => assert!(
            e.to_string().contains("/nonexistent/sitrep/session.ndjson"),
            "{e}"
        ),
    }
}

#[test]
fn crlf_and_blank_lines_are_tolerated() {
    let text = "{\"sitrep_session\":1,\"id\":\"x\",\"started\":\"2026-11-22T09:00:00Z\",\"title\":\"t\"}\r\n\r\n{\"t\":0.5,\"event\":{\"type\":\"warning\",\"message\":\"w\"}}\r\n\n";
    let log = match read(text.as_bytes()) {
        Ok(log) => log,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(log.records.len(), 1);
    assert_eq!(log.tear, None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut file = br#"{"sitrep_session":1,"id":"x","started":"2026-11-22T09:00:00Z","title":"t"}"#.to_vec();
        file.push(b'\n');
        file.extend_from_slice(&tail);
        let log = read(&file);
        prop_assert!(log.is_ok());
        let _ = read(&tail);
    }
}
