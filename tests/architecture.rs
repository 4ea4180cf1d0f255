//! Enforces the layer rules in `docs/layers.toml`: which top-level modules may import which, the
//! edges that must never exist, no cycle between top-level modules, and what pure folders may not do.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rules as `docs/layers.toml` states them.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules {
    imports: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    never: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pure: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pending: BTreeMap<String, Vec<String>>,
}

fn rules() -> Rules {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/layers.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One source file: its path under `src/` (with `/`) and its text.
struct Source {
    path: String,
    text: String,
}

/// The top-level module a source file belongs to: `agent/x.rs` -> `agent`, `cli.rs` -> `cli`.
fn module_of(path: &str) -> &str {
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Source with comments, string and char literals blanked out (newlines kept, so offsets still
/// map to lines): a `crate::` or `std::fs` inside a message or a doc is not a dependency.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !prev_is_ident(&chars, i)
            && raw_string_end(&chars, i).is_some()
        {
            let end = raw_string_end(&chars, i).unwrap_or(i);
            for &ch in &chars[i..end] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    out.push(' ');
                    i += 1;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            // `'x'` ends two on; an escape (`'\n'`, `'\u{..}'`) at the next quote after it.
            let end = if chars[i + 1] == '\\' {
                (i + 3..chars.len())
                    .find(|&k| chars[k] == '\'')
                    .map_or(chars.len(), |k| k + 1)
            } else {
                i + 3
            };
            for _ in i..end {
                out.push(' ');
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The end (exclusive) of a raw string starting at `i` (`r"..."`, `r#"..."#`), if it is one.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut k = i + 1;
    let mut hashes = 0;
    while chars.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    if chars.get(k) != Some(&'"') {
        return None;
    }
    k += 1;
    while k < chars.len() {
        if chars[k] == '"' && (0..hashes).all(|h| chars.get(k + 1 + h) == Some(&'#')) {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    None
}

/// `'x'`, `'\n'`, `'\u{1F600}'` are literals; `'a` in `&'a str` is a lifetime.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// The text before the file's test module (`#[cfg(test)]` followed by `mod`).
fn before_tests(code: &str) -> &str {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]" {
            let rest = code[offset + line.len()..].trim_start();
            if rest.starts_with("mod ") || rest.starts_with("pub mod ") {
                return &code[..offset];
            }
        }
        offset += line.len();
    }
    code
}

fn line_of(code: &str, offset: usize) -> usize {
    code[..offset].matches('\n').count() + 1
}

fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every first-party name reached through `crate::`, with its 1-based line, with
/// `use crate::{a, b::c}` groups (even over several lines) expanded.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
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
                out.push((line_of(code, i), name));
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
                out.push((line_of(code, group_offset + start + lead), name));
            }
        }
    }
    out
}

/// Whether `needle` occurs in `line` as a path or word of its own (not inside a longer name).
fn has_word(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + needle.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && (!ident(after) || needle.ends_with(':') || needle.ends_with('!'))
    })
}

/// The first thing on `line` that breaks `rule`, if any.
fn breach(rule: &str, line: &str) -> Option<&'static str> {
    const IO: &[&str] = &[
        "std::fs",
        "std::net",
        "std::process",
        "tokio::fs",
        "tokio::net",
        "tokio::process",
        "reqwest",
        "kube",
        "tokio_postgres",
        "File::",
        "fs::",
    ];
    const ASYNC: &[&str] = &["async", ".await", "tokio"];
    const GLOBAL_TYPES: &[&str] = &[
        "Mutex",
        "RwLock",
        "OnceLock",
        "OnceCell",
        "Cell",
        "RefCell",
        "AtomicBool",
        "AtomicUsize",
        "AtomicU64",
        "AtomicU32",
        "AtomicI64",
        "AtomicPtr",
    ];
    match rule {
        "io" => IO.iter().find(|p| has_word(line, p)).copied(),
        "async" => ASYNC
            .iter()
            .find(|p| {
                if **p == ".await" {
                    line.contains(".await")
                } else {
                    has_word(line, p)
                }
            })
            .copied(),
        "globals" => {
            let t = line.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub(super) "))
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            if t.starts_with("static mut ") {
                Some("static mut")
            } else if t.starts_with("static ") {
                GLOBAL_TYPES.iter().find(|p| has_word(t, p)).copied()
            } else if has_word(line, "thread_local!") {
                Some("thread_local!")
            } else if line.contains("Box::leak") {
                Some("Box::leak")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// What the checker found: rule breaches and how many first-party edges it read.
struct Report {
    problems: Vec<String>,
    edges: usize,
}

/// Check `sources` against `rules`. Breaches listed under `[pending]` are tolerated, but a
/// pending entry that matches nothing is itself a problem.
fn check(rules: &Rules, sources: &[Source]) -> Report {
    let mut problems = Vec::new();
    let mut edges = 0;
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut used_pending: BTreeSet<(String, String)> = BTreeSet::new();
    let pending = |path: &str, rule: &str| {
        rules
            .pending
            .get(path)
            .is_some_and(|r| r.iter().any(|x| x == rule))
    };

    for (module, allowed) in &rules.imports {
        for target in allowed {
            if !rules.imports.contains_key(target) {
                problems.push(format!(
                    "docs/layers.toml: `{module}` may import `{target}`, which has no row"
                ));
            }
            if rules.never.get(module).is_some_and(|n| n.contains(target)) {
                problems.push(format!(
                    "docs/layers.toml: `{module}` may import `{target}`, which [never] forbids"
                ));
            }
        }
    }

    for source in sources {
        let module = module_of(&source.path);
        let Some(allowed) = rules.imports.get(module) else {
            problems.push(format!(
                "{}: module `{module}` has no row in docs/layers.toml",
                source.path
            ));
            continue;
        };
        let code = code_only(&source.text);
        for (line, target) in crate_refs(&code) {
            edges += 1;
            // Names that are not modules are crate-root items (macros, re-exports).
            if target == module || !rules.imports.contains_key(&target) {
                continue;
            }
            graph
                .entry(module.to_string())
                .or_default()
                .entry(target.clone())
                .or_insert_with(|| format!("{}:{line}", source.path));
            if allowed.contains(&target) {
                continue;
            }
            if pending(&source.path, &target) {
                used_pending.insert((source.path.clone(), target.clone()));
                continue;
            }
            problems.push(format!(
                "{}:{line}: `{module}` may not import `{target}` (allowed: {})",
                source.path,
                if allowed.is_empty() {
                    "nothing first-party".to_string()
                } else {
                    allowed.join(", ")
                }
            ));
        }
        let Some(pure) = rules.pure.get(module) else {
            continue;
        };
        let checked = before_tests(&code);
        for rule in pure {
            for (n, line) in checked.lines().enumerate() {
                let Some(what) = breach(rule, line) else {
                    continue;
                };
                if pending(&source.path, rule) {
                    used_pending.insert((source.path.clone(), rule.clone()));
                    continue;
                }
                problems.push(format!(
                    "{}:{}: `{what}` breaks `{rule}` in `{module}`, which docs/layers.toml keeps pure",
                    source.path,
                    n + 1
                ));
            }
        }
    }

    for (path, rules_of) in &rules.pending {
        for rule in rules_of {
            if !used_pending.contains(&(path.clone(), rule.clone())) {
                problems.push(format!(
                    "docs/layers.toml: pending `{path}` = `{rule}` matches nothing; remove it"
                ));
            }
        }
    }

    for cycle in cycles(&graph) {
        let hops: Vec<String> = cycle
            .windows(2)
            .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
            .collect();
        problems.push(format!(
            "cycle between top-level modules: {}",
            hops.join(", ")
        ));
    }
    Report { problems, edges }
}

/// One cycle through each strongly connected group of modules, as a closed path `a, b, .., a`.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = graph
        .iter()
        .flat_map(|(a, to)| std::iter::once(a).chain(to.keys()))
        .collect();
    let reaches = |from: &str, to: &str| -> Option<Vec<String>> {
        // Breadth-first, so the path reported is a shortest one.
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from.to_string()]);
        while let Some(n) = queue.pop_front() {
            for next in graph.get(&n).into_iter().flat_map(|t| t.keys()) {
                if next == to {
                    let mut path = vec![to.to_string(), n.clone()];
                    let mut at = n.clone();
                    while let Some(p) = prev.get(&at) {
                        path.push(p.clone());
                        at = p.clone();
                    }
                    path.reverse();
                    return Some(path);
                }
                if next != from && !prev.contains_key(next) {
                    prev.insert(next.clone(), n.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        None
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if seen.contains(n.as_str()) {
            continue;
        }
        if let Some(path) = reaches(n, n) {
            seen.extend(path.iter().cloned());
            out.push(path);
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn tree() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| Source {
            path: f
                .strip_prefix(&src)
                .unwrap_or(f)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/"),
            text: std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display())),
        })
        .collect()
}

fn fixture(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            path: path.to_string(),
            text: text.to_string(),
        })
        .collect()
}

#[test]
fn the_tree_follows_the_layer_rules() {
    let report = check(&rules(), &tree());
    assert!(report.edges > 0, "no crate:: paths found under src/");
    assert!(
        report.problems.is_empty(),
        "layer rules broken:\n{}",
        report.problems.join("\n")
    );
}

#[test]
fn every_module_declared_in_lib_has_a_row() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(lib).unwrap_or_default();
    let declared: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').trim().to_string())
        .collect();
    assert!(declared.contains("model"));
    let rules = rules();
    for m in &declared {
        assert!(
            rules.imports.contains_key(m),
            "module `{m}` has no row in docs/layers.toml"
        );
    }
}

/// The real rules, without pending entries, so the fixtures see the rules as they will stand.
fn strict_rules() -> Rules {
    let mut rules = rules();
    rules.pending.clear();
    rules
}

#[test]
fn the_checker_catches_forbidden_edges() {
    let sources = fixture(&[
        ("model/mod.rs", "use crate::session::Writer;\n"),
        (
            "session/mod.rs",
            "use crate::{model::Event, config};\nfn f() { crate::agent::spawn(); }\n// use crate::tui;\n/* crate::eval */\nconst S: &str = \"crate::doctor\";\n",
        ),
        ("config.rs", "pub(crate) fn x() {}\nuse crate::model;\n"),
        (
            "world/mod.rs",
            "use crate::{\n    agent::X,\n};\nuse crate::reason::analyze;\n",
        ),
        (
            "tui/follow.rs",
            "use crate::model::Event;\nuse crate::agent::approve;\n",
        ),
    ]);
    let report = check(&strict_rules(), &sources);
    let text = report.problems.join("\n");
    for expected in [
        "model/mod.rs:1: `model` may not import `session`",
        "session/mod.rs:2: `session` may not import `agent`",
        "session/mod.rs:1: `session` may not import `config`",
        "world/mod.rs:2: `world` may not import `agent`",
        "world/mod.rs:4: `world` may not import `reason`",
        "tui/follow.rs:2: `tui` may not import `agent`",
        // The fixture's own edges close a loop too.
        "cycle between top-level modules: config -> model (config.rs:2), model -> session (model/mod.rs:1), session -> config (session/mod.rs:1)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !report.problems.iter().any(|p| p.starts_with("config.rs")),
        "`pub(crate)` is not an import:\n{text}"
    );
    assert!(
        !text.contains("doctor"),
        "a string literal is not an import:\n{text}"
    );
    assert_eq!(report.problems.len(), 7, "{text}");
}

#[test]
fn the_checker_catches_a_cycle() {
    // Each edge alone is one the table allows; together they close a loop.
    let mut rules = strict_rules();
    rules
        .imports
        .insert("session".into(), vec!["model".into(), "policy".into()]);
    rules
        .imports
        .insert("policy".into(), vec!["model".into(), "session".into()]);
    let sources = fixture(&[
        ("session/mod.rs", "use crate::policy::Rules;\n"),
        (
            "policy/mod.rs",
            "use crate::model::Risk;\nfn f() { crate::session::sessions_dir(); }\n",
        ),
        ("model/mod.rs", "pub struct Risk;\n"),
    ]);
    let report = check(&rules, &sources);
    let text = report.problems.join("\n");
    assert_eq!(report.problems.len(), 1, "{text}");
    assert!(
        text.starts_with("cycle between top-level modules: "),
        "{text}"
    );
    assert!(
        text.contains("policy -> session (policy/mod.rs:2)"),
        "{text}"
    );
    assert!(
        text.contains("session -> policy (session/mod.rs:1)"),
        "{text}"
    );
    // Without the back edge, no cycle.
    let acyclic = fixture(&[("session/mod.rs", "use crate::policy::Rules;\n")]);
    assert!(check(&rules, &acyclic).problems.is_empty());
}

#[test]
fn the_checker_keeps_the_model_pure() {
    let sources = fixture(&[
        (
            "model/store.rs",
            "fn load(p: &Path) -> String {\n    std::fs::read_to_string(p).unwrap_or_default()\n}\n",
        ),
        (
            "model/net.rs",
            "async fn get() { reqwest::get(\"x\").await; }\n",
        ),
        (
            "model/registry.rs",
            "use std::sync::RwLock;\nstatic REGISTRY: RwLock<Vec<u8>> = RwLock::new(Vec::new());\nfn name(s: &str) -> &'static str { Box::leak(s.into()) }\n",
        ),
        (
            "model/fine.rs",
            "// std::fs is named in a comment only\nconst DOC: &str = \"use tokio\";\nstatic RE: LazyLock<Regex> = LazyLock::new(|| todo());\nfn c(x: char) -> bool { x == '\\'' || x == '\"' }\nfn fsync_free(fs_name: &str) {}\n#[cfg(test)]\nmod tests {\n    fn t() { std::fs::write(\"a\", \"b\").ok(); }\n}\n",
        ),
        (
            "tui/export.rs",
            "fn save() { let _ = std::fs::write(\"r.md\", \"\"); }\n",
        ),
    ]);
    let report = check(&strict_rules(), &sources);
    let text = report.problems.join("\n");
    for expected in [
        "model/store.rs:2: `std::fs` breaks `io` in `model`",
        "model/net.rs:1: `reqwest` breaks `io` in `model`",
        "model/net.rs:1: `async` breaks `async` in `model`",
        "model/registry.rs:2: `RwLock` breaks `globals` in `model`",
        "model/registry.rs:3: `Box::leak` breaks `globals` in `model`",
        "tui/export.rs:1: `std::fs` breaks `io` in `tui`",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("model/fine.rs"), "{text}");
    assert_eq!(report.problems.len(), 6, "{text}");
}

#[test]
fn a_pending_entry_must_still_match_something() {
    let mut rules = strict_rules();
    rules
        .pending
        .insert("tui/follow.rs".into(), vec!["agent".into(), "io".into()]);
    let sources = fixture(&[("tui/follow.rs", "use crate::agent::approve;\n")]);
    let report = check(&rules, &sources);
    let text = report.problems.join("\n");
    assert_eq!(report.problems.len(), 1, "{text}");
    assert!(
        text.contains("pending `tui/follow.rs` = `io` matches nothing"),
        "{text}"
    );
}
