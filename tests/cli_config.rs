//! config.example.toml loads, and the console accepts its theme and key bindings.

use sitrep::config::Config;
use std::path::Path;

#[test]
fn example_config_is_accepted_end_to_end() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let config = match Config::load_from(&path) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(config.source.as_deref(), Some(path.as_path()));
    if let Err(e) = sitrep::tui::keymap::Keymap::with_overrides(&config.keys) {
        panic!("the console rejects the example [keys]: {e}");
    }
}

#[test]
fn a_broken_config_stops_the_cli_with_file_key_and_expectation() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let cfg = dir.path().join("config.toml");
    let _ = std::fs::write(&cfg, "[policy]\nveto_secs = \"soon\"\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "demo", "--no-save"])
        .env("SITREP_CONFIG", &cfg)
        .env("SITREP_DATA_DIR", dir.path())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains(&cfg.display().to_string()), "{stderr}");
    assert!(stderr.contains("policy.veto_secs"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
}

/// A table at `path` holding one key no section has: the error serde gives names every field the
/// table takes (`unknown field ..., expected one of ...`), or says it is no table of fields.
fn fields_at(path: &[String], array: bool) -> Option<Vec<String>> {
    let header = if array {
        format!("[[{}]]", path.join("."))
    } else {
        format!("[{}]", path.join("."))
    };
    let text = if path.is_empty() {
        "zz_not_a_key = 0\n".to_string()
    } else {
        format!("{header}\nzz_not_a_key = 0\n")
    };
    let err = match Config::parse(&text, Path::new("probe.toml")) {
        Ok(_) => return None,
        Err(e) => e.to_string(),
    };
    let list = err
        .split("unknown field `zz_not_a_key`, expected ")
        .nth(1)?;
    let names: Vec<String> = list
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    (!names.is_empty()).then_some(names)
}

/// Every key of every table, by walking the tables serde accepts: `(section, key)`, where a key
/// that is itself a table of fields yields its own keys instead.
fn every_key(path: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    let Some(fields) = fields_at(path, false).or_else(|| fields_at(path, true)) else {
        return;
    };
    for field in fields {
        path.push(field.clone());
        let nested = fields_at(path, false).is_some() || fields_at(path, true).is_some();
        if nested {
            every_key(path, out);
        } else {
            out.push((path[..path.len() - 1].join("."), field));
        }
        path.pop();
    }
}

/// `(section, key)` for every `key =` line of the example, commented out or not, under the
/// `[section]` or `[[section]]` header above it (commented out or not).
fn documented(example: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in example.lines() {
        let t = line.trim_start_matches(['#', ' ']).trim_end();
        if t.starts_with('[') && t.ends_with(']') {
            section = t.trim_matches(['[', ']']).to_string();
            out.push((section.clone(), String::new()));
            continue;
        }
        if let Some((key, _)) = t.split_once(" = ")
            && !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.push((section.clone(), key.to_string()));
        }
    }
    out
}

#[test]
fn the_example_names_every_key_a_config_can_set() {
    let mut keys = Vec::new();
    every_key(&mut Vec::new(), &mut keys);
    let sections: Vec<&str> = keys.iter().map(|(s, _)| s.as_str()).collect();
    // The walk itself reaches the nested and repeated tables.
    for s in [
        "serve",
        "policy",
        "integrations.jira",
        "mcp.servers",
        "notify.slack",
    ] {
        assert!(sections.contains(&s), "the walk missed [{s}]: {keys:?}");
    }
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml"))
            .unwrap_or_else(|e| panic!("config.example.toml: {e}"));
    let shown = documented(&text);
    // A key holding a free-form table (`[keys]`, `[notify.slack.users]`) is shown by its header.
    let headed = |(s, k): &(String, String)| {
        let name = if s.is_empty() {
            k.clone()
        } else {
            format!("{s}.{k}")
        };
        shown.iter().any(|(section, _)| *section == name)
    };
    let missing: Vec<String> = keys
        .iter()
        .filter(|k| !shown.contains(k) && !headed(k))
        .map(|(s, k)| format!("[{s}] {k}"))
        .collect();
    assert!(
        missing.is_empty(),
        "config.example.toml does not show these keys: {missing:?}"
    );
}
