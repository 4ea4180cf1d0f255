//! Property tests: no input from outside the process makes a loader panic. Each target gets
//! arbitrary bytes, and valid seeds (a real session, alert, config, runbook, case) mutated by
//! byte edits and by splicing in values known to break naive code (huge numbers, NaN, extreme
//! dates, control characters, wrong JSON types).
//!
//! Every input is run under `catch_unwind`, so a run counts its panics instead of stopping at the
//! first: `PROPTEST_CASES` sets the iterations per target (256 by default, so CI stays fast;
//! `scripts/fuzz` runs 1M). Each target prints `fuzz-summary: <target> <iterations> iterations
//! <panics> panics` and fails when any input panicked, showing the first such input.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

const SESSION: &str = include_str!("fixtures/bad-deploy.ndjson");
const ALERT: &str = include_str!("../cases/checkout-bad-deploy/alert.json");
const CONFIG: &str = include_str!("../config.example.toml");
const RUNBOOKS: [&str; 3] = [
    include_str!("../runbooks/bad-deploy.yaml"),
    include_str!("../runbooks/crashloop-oom.yaml"),
    include_str!("../runbooks/node-not-ready.yaml"),
];
const CASE_TOML: &str = include_str!("../cases/checkout-bad-deploy/case.toml");
const CASE_EFFECTS: &str = include_str!("../cases/checkout-bad-deploy/effects.toml");
const CASE_EXPECT: &str = include_str!("../cases/checkout-bad-deploy/expect.toml");
const CASE_RECORDINGS: &str = include_str!("../cases/checkout-bad-deploy/recordings.ndjson");
const CASE_AFTER: &str = include_str!("../cases/checkout-bad-deploy/after-rollback.ndjson");

/// Values that break naive code, spliced into otherwise valid input.
const TOKENS: &[&str] = &[
    "1e300",
    "-1e300",
    "1e999",
    "-1",
    "0",
    "NaN",
    "\"NaN\"",
    "inf",
    "null",
    "[]",
    "{}",
    "\"\"",
    "true",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775808",
    "\"9999-12-31T23:59:59Z\"",
    "\"0000-01-01T00:00:00Z\"",
    "\"+262143-12-31T23:59:59Z\"",
    "9999-12-31T23:59:59Z",
    "\"\\u001b]0;x\\u0007\"",
    "\u{1b}[2J",
    "\u{9b}",
    "\u{0}",
    "\n",
    "\r\n",
    "\"",
    "'",
    "{{",
    "}}",
    "{{ alert.labels.x }}",
    "{% for x in y %}",
    "%",
    "%zz",
    "\\",
    "é",
    "🦀",
    "- ",
    ": ",
    "[[",
    "]]",
    "=",
    "&",
    "*a",
    "&a ",
    "!!binary",
    "~",
];

/// One edit to a seed.
#[derive(Clone, Debug)]
enum Edit {
    Delete(prop::sample::Index, u8),
    Replace(prop::sample::Index, u8),
    Insert(prop::sample::Index, String),
    Token(prop::sample::Index, &'static str),
    /// Replace from the index to the next delimiter with a token (swaps a value for a hostile one).
    Value(prop::sample::Index, &'static str),
    Duplicate(prop::sample::Index, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop::sample::select(TOKENS);
    prop_oneof![
        (any::<prop::sample::Index>(), 1u8..16).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Replace(i, b)),
        (any::<prop::sample::Index>(), ".{0,8}").prop_map(|(i, s)| Edit::Insert(i, s)),
        (any::<prop::sample::Index>(), token.clone()).prop_map(|(i, t)| Edit::Token(i, t)),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| Edit::Value(i, t)),
        (any::<prop::sample::Index>(), 1u8..64).prop_map(|(i, n)| Edit::Duplicate(i, n)),
    ]
}

fn apply(seed: &str, edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.as_bytes().to_vec();
    for e in edits {
        let at = |i: &prop::sample::Index, len: usize| if len == 0 { 0 } else { i.index(len) };
        match e {
            Edit::Delete(i, n) => {
                let s = at(i, b.len());
                let end = (s + *n as usize).min(b.len());
                b.drain(s..end);
            }
            Edit::Replace(i, byte) => {
                if !b.is_empty() {
                    let s = at(i, b.len());
                    b[s] = *byte;
                }
            }
            Edit::Insert(i, text) => {
                let s = at(i, b.len() + 1);
                b.splice(s..s, text.bytes());
            }
            Edit::Token(i, t) => {
                let s = at(i, b.len() + 1);
                b.splice(s..s, t.bytes());
            }
            Edit::Value(i, t) => {
                let s = at(i, b.len() + 1);
                let end = b[s..]
                    .iter()
                    .position(|c| b",}]\n".contains(c))
                    .map_or(b.len(), |p| s + p);
                b.splice(s..end, t.bytes());
            }
            Edit::Duplicate(i, n) => {
                let s = at(i, b.len());
                let end = (s + *n as usize).min(b.len());
                let chunk: Vec<u8> = b[s..end].to_vec();
                b.splice(end..end, chunk);
            }
        }
    }
    b
}

/// Arbitrary bytes, or one of `seeds` with edits.
fn input(seeds: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..256),
        4 => (prop::sample::select(seeds), prop::collection::vec(edit(), 1..6))
            .prop_map(|(seed, edits)| apply(seed, &edits)),
    ]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `target` on `PROPTEST_CASES` generated inputs, counting panics.
fn fuzz<S, F>(name: &str, strategy: S, target: F)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
    F: Fn(&S::Value),
{
    let config = Config::default();
    let iterations = config.cases;
    let mut runner = TestRunner::new(config);
    let mut panics = 0u64;
    let mut first: Option<String> = None;
    for _ in 0..iterations {
        let value = match strategy.new_tree(&mut runner) {
            Ok(tree) => tree.current(),
            Err(e) => panic!("{name}: cannot generate an input: {e}"),
        };
        if catch_unwind(AssertUnwindSafe(|| target(&value))).is_err() {
            panics += 1;
            if first.is_none() {
                first = Some(format!("{value:?}").chars().take(4000).collect());
            }
        }
    }
    println!("fuzz-summary: {name} {iterations} iterations {panics} panics");
    assert_eq!(
        panics,
        0,
        "{name}: {panics} of {iterations} inputs panicked; the first: {}",
        first.unwrap_or_default()
    );
}

#[test]
fn session_reader() {
    static SEEDS: [&str; 1] = [SESSION];
    fuzz("session_reader", input(&SEEDS), |bytes| {
        if let Ok(log) = sitrep::session::SessionLog::from_reader(bytes.as_slice()) {
            // Whatever was read folds and exports.
            let incident = log.incident();
            let _ = sitrep::session::export::markdown(&incident);
            let _ = sitrep::session::export::json(&incident);
            let _ = log.duration();
        }
    });
}

#[test]
fn alert_payload() {
    static SEEDS: [&str; 1] = [ALERT];
    fuzz("alert_payload", input(&SEEDS), |bytes| {
        if let Ok(payload) = sitrep::model::WebhookPayload::parse(&text(bytes)) {
            let alert = payload.primary();
            let _ = (alert.title(), alert.expr(), alert.name(), alert.severity());
        }
    });
}

#[test]
fn config_loader() {
    static SEEDS: [&str; 1] = [CONFIG];
    fuzz("config_loader", input(&SEEDS), |bytes| {
        let _ = sitrep::config::Config::parse(&text(bytes), Path::new("config.toml"));
    });
}

#[test]
fn runbook_parser() {
    fuzz("runbook_parser", input(&RUNBOOKS), |bytes| {
        let _ = sitrep::runbook::parse(Path::new("runbooks/x.yaml"), &text(bytes));
    });
}

/// A case's files, one of them (or none) replaced by a fuzzed version.
fn case_files() -> impl Strategy<Value = BTreeMap<String, String>> {
    const NAMES: [&str; 6] = [
        "case.toml",
        "alert.json",
        "recordings.ndjson",
        "effects.toml",
        "expect.toml",
        "after-rollback.ndjson",
    ];
    // The first recordings only: the whole files would make each iteration slow.
    fn head(text: &'static str, lines: usize) -> &'static str {
        let end = text
            .match_indices('\n')
            .nth(lines - 1)
            .map_or(text.len(), |(i, _)| i + 1);
        &text[..end]
    }
    let seeds: Vec<&'static str> = vec![
        CASE_TOML,
        ALERT,
        head(CASE_RECORDINGS, 3),
        CASE_EFFECTS,
        CASE_EXPECT,
        head(CASE_AFTER, 2),
    ];
    let which = 0..NAMES.len() + 1;
    (
        which,
        prop::collection::vec(edit(), 1..6),
        prop::collection::vec(any::<u8>(), 0..128),
        any::<bool>(),
    )
        .prop_map(move |(which, edits, raw, use_raw)| {
            let mut files: BTreeMap<String, String> = NAMES
                .iter()
                .zip(&seeds)
                .map(|(n, s)| (n.to_string(), s.to_string()))
                .collect();
            if let Some(name) = NAMES.get(which) {
                let bytes = if use_raw {
                    raw
                } else {
                    apply(seeds[which], &edits)
                };
                files.insert(name.to_string(), text(&bytes));
            } else {
                // Or a file missing altogether.
                files.remove(NAMES[edits.len() % NAMES.len()]);
            }
            files
        })
}

#[test]
fn case_loader() {
    fuzz("case_loader", case_files(), |files| {
        if let Ok(loaded) = sitrep::world::case::load("cases/x", files, None) {
            let world = sitrep::world::World::from_case_files(
                "x",
                files.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            );
            if let Ok(world) = world {
                let _ = world.now();
            }
            let _ = loaded.case.alert.map(|a| a.primary().title());
        }
    });
}

/// The harness itself: a target that panics on some inputs is reported, not passed.
#[test]
fn harness_counts_panics() {
    let outcome = catch_unwind(|| {
        fuzz("selftest", any::<u8>(), |b| {
            if *b > 127 {
                panic!("planted panic");
            }
        })
    });
    assert!(
        outcome.is_err(),
        "a panicking target must fail the property"
    );
}
