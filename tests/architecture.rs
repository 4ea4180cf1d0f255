//! Enforces DESIGN.md's layer table: a module may only reach `crate::` modules its tier allows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Which first-party modules each module may import (itself is always allowed).
fn allowed_for(module: &str) -> Option<&'static [&'static str]> {
    const TIER2_IO: &[&str] = &[
        "model",
        "session",
        "policy",
        "runbook",
        "config",
        "secrets",
        "integrations",
        "world",
    ];
    const TIER2: &[&str] = &[
        "model",
        "session",
        "policy",
        "runbook",
        "config",
        "secrets",
        "integrations",
        "world",
        "agent",
        "reason",
        "eval",
    ];
    const ALL: &[&str] = &[
        "model",
        "session",
        "policy",
        "runbook",
        "config",
        "secrets",
        "integrations",
        "world",
        "agent",
        "reason",
        "eval",
        "inbox",
        "doctor",
        "notify",
        "tui",
        "cli",
        "serve",
    ];
    Some(match module {
        "model" => &[],
        "session" | "policy" | "runbook" | "config" | "secrets" => &["model"],
        "integrations" | "world" | "notify" => TIER2_IO,
        "agent" | "reason" | "eval" | "inbox" | "doctor" => TIER2,
        "tui" | "cli" | "serve" | "main" | "lib" => ALL,
        _ => return None,
    })
}

/// The top-level module a source file belongs to: `src/agent/x.rs` -> `agent`, `src/cli.rs` -> `cli`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

/// Source with comments blanked out (newlines kept, so offsets still map to lines).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut block = 0usize;
    let mut line_comment = false;
    while let Some(c) = chars.next() {
        if line_comment {
            if c == '\n' {
                line_comment = false;
                out.push('\n');
            } else {
                out.push(' ');
            }
        } else if block > 0 {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                block -= 1;
                out.push_str("  ");
            } else if c == '/' && chars.peek() == Some(&'*') {
                chars.next();
                block += 1;
                out.push_str("  ");
            } else {
                out.push(if c == '\n' { '\n' } else { ' ' });
            }
        } else if c == '/' && chars.peek() == Some(&'/') {
            line_comment = true;
            out.push(' ');
        } else if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            block = 1;
            out.push_str("  ");
        } else {
            out.push(c);
        }
    }
    out
}

/// Every first-party name reached through `crate::`, with its 1-based line, with
/// `use crate::{a, b::c}` groups (even over several lines) expanded.
fn crate_refs(text: &str) -> Vec<(usize, String)> {
    let code = strip_comments(text);
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        // `pub(crate)` has no `::`; `my_crate::` is some other path.
        if code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let after = &code[i + "crate::".len()..];
        let Some(group) = after.strip_prefix('{') else {
            let name = ident(after);
            if !name.is_empty() {
                out.push((line_of(i), name));
            }
            continue;
        };
        let mut depth = 0usize;
        let mut item_start = 0usize;
        let mut starts = Vec::new();
        for (k, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    starts.push(item_start);
                    item_start = k + 1;
                }
                _ => {}
            }
        }
        starts.push(item_start);
        let group_offset = i + "crate::{".len();
        for start in starts {
            let item = &group[start..];
            let name = ident(item);
            if !name.is_empty() && name != "self" {
                let lead = item.len() - item.trim_start().len();
                out.push((line_of(group_offset + start + lead), name));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn violations(src: &Path) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut edges = 0;
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let Some(allowed) = allowed_for(&module) else {
            problems.push(format!(
                "{}: module `{module}` is not in the layer table (tests/architecture.rs)",
                file.display()
            ));
            continue;
        };
        for (line, target) in crate_refs(&text) {
            edges += 1;
            // Names that are not modules are crate-root items (macros, re-exports).
            if target == module || allowed_for(&target).is_none() {
                continue;
            }
            if !allowed.contains(&target.as_str()) {
                problems.push(format!(
                    "{}:{line}: `{module}` may not import `{target}` (allowed: {})",
                    file.display(),
                    if allowed.is_empty() {
                        "nothing first-party".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
    }
    (problems, edges)
}

#[test]
fn layers_follow_the_tier_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (problems, edges) = violations(&src);
    assert!(
        edges > 0,
        "no crate:: imports found under {}",
        src.display()
    );
    assert!(
        problems.is_empty(),
        "forbidden imports:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_module_declared_in_lib_is_in_the_table() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(lib).unwrap_or_default();
    let declared: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').trim().to_string())
        .collect();
    assert!(declared.contains("model"));
    for m in &declared {
        assert!(
            allowed_for(m).is_some(),
            "module `{m}` is missing from the layer table"
        );
    }
}

#[test]
fn the_checker_catches_forbidden_edges() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
    };
    write("model/mod.rs", "use crate::session::Writer;\n");
    write(
        "session/mod.rs",
        "use crate::{model::Event, config};\nfn f() { crate::agent::spawn(); }\n// use crate::tui;\n/* crate::eval */\n",
    );
    write("config.rs", "pub(crate) fn x() {}\nuse crate::model;\n");
    write(
        "world/mod.rs",
        "use crate::{\n    agent::X,\n};\nuse crate::reason::analyze;\n",
    );
    write("tui/mod.rs", "use crate::agent::AgentHandle;\n");
    let (problems, _) = violations(src);
    let text = problems.join("\n");
    assert!(
        text.contains("model/mod.rs:1: `model` may not import `session`"),
        "{text}"
    );
    assert!(
        text.contains("session/mod.rs:2: `session` may not import `agent`"),
        "{text}"
    );
    assert!(
        text.contains("world/mod.rs:2: `world` may not import `agent`"),
        "{text}"
    );
    assert!(
        text.contains("world/mod.rs:4: `world` may not import `reason`"),
        "{text}"
    );
    assert!(!text.contains("tui"), "{text}");
    assert!(!text.contains("config.rs"), "{text}");
    assert!(
        text.contains("session/mod.rs:1: `session` may not import `config`"),
        "{text}"
    );
    assert_eq!(problems.len(), 5, "{text}");
}
