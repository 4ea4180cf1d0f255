//! The console's own layering: the UI core (state, reducer, search, scroll, overlays' state)
//! never calls a view, views never call the reducer, and no tui file grows past ~500 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Modules that hold state or handle keys; they must not reach into rendering.
const CORE: &[&str] = &[
    "app",
    "approval_state",
    "chooser_state",
    "colour",
    "export",
    "inbox_state",
    "index",
    "keymap",
    "layout",
    "link",
    "palette_state",
    "reducer",
    "replay_state",
    "sanitize",
    "scroll",
    "search",
    "search_job",
    "state",
    "theme",
];

/// Modules that draw.
const VIEWS: &[&str] = &[
    "approval",
    "chart",
    "chat",
    "chooser",
    "details",
    "evidence",
    "header",
    "help",
    "highlight",
    "inbox",
    "inbox_rows",
    "inbox_run",
    "list_screen",
    "palette",
    "replay_bar",
    "screen",
    "report",
    "seen_before",
    "statusbar",
    "terminal",
    "text",
    "timeline",
];

fn sources() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/tui") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.insert(name, std::fs::read_to_string(&path).expect("read"));
        }
    }
    out
}

/// Sibling modules a file names (`super::x`, `crate::tui::x`), comments left out.
fn refs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for prefix in ["super::", "crate::tui::"] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                rest = &rest[i + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
                // `super::{a, b}`: every name in the braces.
                if let Some(inner) = rest.strip_prefix('{') {
                    for part in inner.split('}').next().unwrap_or("").split(',') {
                        let n: String = part
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if !n.is_empty() {
                            out.insert(n);
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_tui_module_is_classified() {
    for name in sources().keys() {
        if name == "mod" {
            continue;
        }
        assert!(
            CORE.contains(&name.as_str()) || VIEWS.contains(&name.as_str()),
            "src/tui/{name}.rs is neither core nor view: add it to one list"
        );
    }
}

#[test]
fn the_core_never_calls_a_view_and_views_never_call_the_reducer() {
    let mut bad = Vec::new();
    for (name, text) in sources() {
        let r = refs(&text);
        if CORE.contains(&name.as_str()) {
            for v in VIEWS {
                if r.contains(*v) {
                    bad.push(format!("core {name} uses view {v}"));
                }
            }
        }
        if VIEWS.contains(&name.as_str()) {
            for c in ["reducer", "palette_state", "approval_state"] {
                // A view may read the overlay state types through `app`, never the key handling.
                if r.contains(c) {
                    bad.push(format!("view {name} uses {c}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_checker_sees_a_forbidden_edge() {
    let r = refs(
        "use super::{evidence, theme::Role};\nfn f() { crate::tui::reducer::update(); } // super::chat\n",
    );
    assert!(r.contains("evidence") && r.contains("theme") && r.contains("reducer"));
    assert!(!r.contains("chat"), "comments do not count");
}

#[test]
fn no_tui_file_is_over_500_lines() {
    for (name, text) in sources() {
        let n = text.lines().count();
        assert!(n <= 500, "src/tui/{name}.rs has {n} lines");
    }
}
