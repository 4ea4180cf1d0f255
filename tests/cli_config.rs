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
