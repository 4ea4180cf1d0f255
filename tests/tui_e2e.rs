//! End to end in tmux: `sitrep demo` with a high-risk fix, approved from the keyboard, verified,
//! and the terminal handed back to the shell when the operator quits; the scenario chooser;
//! search in the evidence and summary panes.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::tmux::{self, Tmux};

const SCENARIO: &str = "checkout-bad-deploy";
const PROMPT: &str = "e2e-prompt$";

fn demo_available(bin: &Path) -> bool {
    Command::new(bin)
        .args(["demo", "--list"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(SCENARIO))
}

/// A private tmux server running `sh` at a known prompt, with data and config directories under
/// `dir`.
fn start_shell(tag: &str, dir: &Path) -> Tmux {
    tmux::start_shell(
        format!("sitrep-e2e-{tag}-{}", std::process::id()),
        PROMPT,
        &[
            ("SITREP_DATA_DIR", dir.join("data").display().to_string()),
            ("XDG_CONFIG_HOME", dir.join("config").display().to_string()),
        ],
    )
}

/// Quit with q and check the shell got its screen back.
fn quit_to_shell(tmux: &Tmux) {
    tmux.keys(&["q"]);
    let screen = tmux.wait_for(
        "the shell prompt after quitting",
        Duration::from_secs(15),
        |s| {
            let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            last.starts_with(PROMPT) && !s.contains("timeline")
        },
    );
    let alt = tmux
        .run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"])
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(
        alt.as_deref(),
        Some("0"),
        "still on the alternate screen:\n{screen}"
    );
}

#[test]
fn demo_approve_verify_quit_in_tmux() {
    let bin = Path::new(env!("CARGO_BIN_EXE_sitrep"));
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    if !demo_available(bin) {
        eprintln!("skipping: `sitrep demo --list` does not offer {SCENARIO}");
        return;
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let data = dir.path().join("data");
    let tmux = start_shell("approve", dir.path());
    tmux.keys(&[
        &format!("unset SITREP_CONFIG; {} demo {SCENARIO}", bin.display()),
        "Enter",
    ]);

    let screen = tmux.wait_for("the approval modal", Duration::from_secs(60), |s| {
        s.contains("APPROVAL REQUIRED")
    });
    assert!(
        screen.contains("HIGH RISK") || screen.contains("CRITICAL RISK"),
        "{screen}"
    );
    // Enter alone must not approve.
    tmux.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        tmux.capture().contains("APPROVAL REQUIRED"),
        "enter closed or approved the modal"
    );
    tmux.keys(&["a"]);
    tmux.wait_for("the confirm prompt", Duration::from_secs(10), |s| {
        s.contains("to confirm the approval")
    });
    tmux.keys(&["C-y"]);
    tmux.wait_for("the verification", Duration::from_secs(120), |s| {
        s.contains("verified") || s.contains("verification failed")
    });
    quit_to_shell(&tmux);
    // The session was saved where SITREP_DATA_DIR points.
    let saved = std::fs::read_dir(data.join("sessions"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(saved >= 1, "no session file under {}", data.display());
}

/// The second scenario of `sitrep demo --list`, and a piece of the header its alert gives.
const SECOND: (&str, &str) = ("search-cpu-saturation", "CPUThrottlingHigh");

#[test]
fn demo_chooser_starts_the_second_scenario_in_tmux() {
    let bin = Path::new(env!("CARGO_BIN_EXE_sitrep"));
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let listed = Command::new(bin)
        .args(["demo", "--list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let second = listed
        .lines()
        .nth(1)
        .map(|l| l.split_whitespace().next().unwrap_or(""));
    assert_eq!(
        second,
        Some(SECOND.0),
        "the scenario order changed; update SECOND:\n{listed}"
    );
    let title = listed
        .lines()
        .nth(1)
        .map(|l| l.trim_start_matches(SECOND.0).trim().to_string())
        .unwrap_or_default();
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let tmux = start_shell("chooser", dir.path());
    tmux.keys(&[
        &format!("unset SITREP_CONFIG; {} demo --no-save", bin.display()),
        "Enter",
    ]);
    let screen = tmux.wait_for("the chooser", Duration::from_secs(30), |s| {
        s.contains("choose a scenario") && s.contains("▸ checkout-bad-deploy")
    });
    assert!(
        screen.contains(&title),
        "the chooser lists {title:?}:\n{screen}"
    );
    assert!(screen.contains("q/esc quit"), "{screen}");
    tmux.keys(&["j"]);
    tmux.wait_for("the highlight to move", Duration::from_secs(10), |s| {
        s.contains(&format!("▸ {}", SECOND.0))
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the investigation header", Duration::from_secs(30), |s| {
        s.lines().next().is_some_and(|l| l.contains(SECOND.1)) && s.contains("timeline")
    });
    assert!(!screen.contains("choose a scenario"), "{screen}");
    // Still inside the console: the shell has not come back between the chooser and the run.
    assert!(!screen.contains(PROMPT), "{screen}");
    quit_to_shell(&tmux);
}

#[test]
fn demo_chooser_quits_without_starting_anything() {
    let bin = Path::new(env!("CARGO_BIN_EXE_sitrep"));
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let tmux = start_shell("chooser-quit", dir.path());
    tmux.keys(&[
        &format!("unset SITREP_CONFIG; {} demo", bin.display()),
        "Enter",
    ]);
    tmux.wait_for("the chooser", Duration::from_secs(30), |s| {
        s.contains("choose a scenario")
    });
    quit_to_shell(&tmux);
    let saved = std::fs::read_dir(dir.path().join("data").join("sessions"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(saved, 0, "quitting the chooser started an investigation");
}

#[test]
fn search_in_the_evidence_pane_shows_the_match_count_in_tmux() {
    let bin = Path::new(env!("CARGO_BIN_EXE_sitrep"));
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    if !demo_available(bin) {
        eprintln!("skipping: `sitrep demo --list` does not offer {SCENARIO}");
        return;
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let tmux = start_shell("search", dir.path());
    tmux.keys(&[
        &format!(
            "unset SITREP_CONFIG; {} demo {SCENARIO} --fast --no-save",
            bin.display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the approval modal", Duration::from_secs(60), |s| {
        s.contains("APPROVAL REQUIRED")
    });
    // Past the modal's key guard, look around instead of deciding.
    std::thread::sleep(Duration::from_millis(600));
    tmux.keys(&["Escape"]);
    tmux.wait_for("the modal to close", Duration::from_secs(10), |s| {
        !s.contains("APPROVAL REQUIRED")
    });
    // Find the log call on the timeline, open its evidence, search it.
    tmux.keys(&["/", "[logs]", "Enter"]);
    tmux.wait_for("the timeline search", Duration::from_secs(10), |s| {
        s.contains("/[logs]")
    });
    tmux.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["/", "error", "Enter"]);
    let screen = tmux.wait_for("the match count", Duration::from_secs(10), |s| {
        s.lines().any(|l| {
            l.split("search error ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|n| {
                    n.split_once('/')
                        .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
                })
        })
    });
    assert!(
        screen.contains("┏ 2 Logs:"),
        "the search ran in the focused log evidence: {screen}"
    );
    quit_to_shell(&tmux);
}

#[test]
fn search_in_the_summary_pane_shows_the_match_count_in_tmux() {
    let bin = Path::new(env!("CARGO_BIN_EXE_sitrep"));
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    if !demo_available(bin) {
        eprintln!("skipping: `sitrep demo --list` does not offer {SCENARIO}");
        return;
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    };
    let tmux = start_shell("summary-search", dir.path());
    tmux.keys(&[
        &format!(
            "unset SITREP_CONFIG; {} demo {SCENARIO} --fast --no-save",
            bin.display()
        ),
        "Enter",
    ]);
    tmux.wait_for("the approval modal", Duration::from_secs(60), |s| {
        s.contains("APPROVAL REQUIRED")
    });
    std::thread::sleep(Duration::from_millis(600));
    tmux.keys(&["Escape"]);
    tmux.wait_for("the modal to close", Duration::from_secs(10), |s| {
        !s.contains("APPROVAL REQUIRED")
    });
    tmux.keys(&["4"]);
    tmux.wait_for("the summary pane", Duration::from_secs(10), |s| {
        s.contains("4 summary")
    });
    tmux.keys(&["/", "checkout", "Enter"]);
    let screen = tmux.wait_for("the match count", Duration::from_secs(10), |s| {
        s.lines().any(|l| {
            l.split("search checkout ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.split_once('/'))
                .is_some_and(|(a, b)| a == "1" && b.parse::<u32>().is_ok_and(|n| n >= 1))
        })
    });
    assert!(
        screen.contains("4 summary"),
        "the search ran in the summary pane: {screen}"
    );
    tmux.keys(&["n"]);
    quit_to_shell(&tmux);
}
