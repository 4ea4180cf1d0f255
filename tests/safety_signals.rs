//! Signals to the console, in tmux: SIGINT, SIGQUIT, SIGTERM and SIGHUP each hand the terminal
//! back (out of the alternate screen, cursor shown) and end the session as `interrupted`, with
//! the pending approval left undecided. Also the modal in a real terminal: typing "papaya"
//! approves nothing, and typing a deny reason pauses a medium-risk countdown.

mod support;

use sitrep::model::{Event, Outcome};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::tmux::{self, Tmux};

const SCENARIO: &str = "checkout-bad-deploy";
const PROMPT: &str = "sig-prompt$";

fn start_shell(tag: &str, data: &Path) -> Tmux {
    tmux::start_shell(
        format!("sitrep-sig-{tag}-{}", std::process::id()),
        PROMPT,
        &[
            ("SITREP_DATA_DIR", data.display().to_string()),
            ("XDG_CONFIG_HOME", data.join("config").display().to_string()),
        ],
    )
}

/// The pid of the shell's child (the console), from /proc.
fn child_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn session_file(data: &Path) -> PathBuf {
    let (found, errors) = sitrep::session::list_sessions(&data.join("sessions"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(found.len(), 1, "one session");
    found[0].path.clone()
}

/// Start the demo, wait for the approval modal; the console's pid.
fn console_at_the_modal(tmux: &Tmux) -> u32 {
    console_at_the_modal_of(tmux, SCENARIO, None)
}

fn console_at_the_modal_of(tmux: &Tmux, scenario: &str, config: Option<&Path>) -> u32 {
    let bin = env!("CARGO_BIN_EXE_sitrep");
    let env = match config {
        Some(c) => format!("SITREP_CONFIG={}", c.display()),
        None => "unset SITREP_CONFIG;".to_string(),
    };
    tmux.keys(&[&format!("{env} {bin} demo {scenario}"), "Enter"]);
    tmux.wait_for("the approval modal", Duration::from_secs(60), |s| {
        s.contains("APPROVAL REQUIRED")
    });
    let shell: u32 = tmux.format("#{pane_pid}").parse().expect("pane pid");
    child_of(shell).expect("the console runs under the shell")
}

#[test]
fn each_signal_restores_the_terminal_and_ends_the_session_interrupted() {
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    for (sig, num) in [
        ("SIGINT", libc::SIGINT),
        ("SIGQUIT", libc::SIGQUIT),
        ("SIGTERM", libc::SIGTERM),
        ("SIGHUP", libc::SIGHUP),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let tmux = start_shell(&sig.to_lowercase(), &data);
        let pid = console_at_the_modal(&tmux);
        assert_eq!(tmux.format("#{alternate_on}"), "1", "{sig}: console is up");
        // SAFETY: kill(2) on the console process this test started, by its pid.
        let rc = unsafe { libc::kill(pid as libc::pid_t, num) };
        assert_eq!(rc, 0, "{sig}: kill");
        let screen = tmux.wait_for(
            &format!("the shell prompt after {sig}"),
            Duration::from_secs(15),
            |s| {
                let last = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                last.starts_with(PROMPT) && !s.contains("APPROVAL REQUIRED")
            },
        );
        assert_eq!(
            tmux.format("#{alternate_on}"),
            "0",
            "{sig}: still on the alternate screen:\n{screen}"
        );
        assert_eq!(
            tmux.format("#{cursor_flag}"),
            "1",
            "{sig}: the cursor is still hidden"
        );
        let log = sitrep::session::read_file(&session_file(&data)).expect("session reads");
        assert!(log.tear.is_none(), "{sig}: {:?}", log.tear);
        assert!(
            matches!(
                log.records.last().map(|r| &r.event),
                Some(Event::SessionEnded {
                    outcome: Outcome::Interrupted
                })
            ),
            "{sig}: last record {:?}",
            log.records.last()
        );
        // The pending approval was left undecided: never approved, never run.
        let decided = log.records.iter().any(|r| {
            matches!(
                r.event,
                Event::ApprovalGiven { .. }
                    | Event::ApprovalDenied { .. }
                    | Event::ActionExecuted { .. }
            )
        });
        assert!(!decided, "{sig}: a decision was recorded on the way out");
        let incident = log.incident();
        assert_eq!(
            incident.outcome.map(Outcome::name),
            Some("interrupted"),
            "{sig}"
        );
    }
}

#[test]
fn typing_papaya_into_the_modal_approves_nothing() {
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let tmux = start_shell("papaya", &data);
    console_at_the_modal(&tmux);
    // Right away (inside the 300 ms guard) and again later: ordinary typing.
    tmux.keys(&["-l", "papaya"]);
    std::thread::sleep(Duration::from_millis(500));
    tmux.keys(&["-l", "papaya"]);
    std::thread::sleep(Duration::from_millis(800));
    let screen = tmux.capture();
    assert!(
        screen.contains("APPROVAL REQUIRED"),
        "the modal went away:\n{screen}"
    );
    // Leave the confirmation, close the modal, quit.
    for k in ["Escape", "Escape", "q"] {
        tmux.keys(&[k]);
        std::thread::sleep(Duration::from_millis(400));
    }
    let _ = tmux.wait_for("the shell", Duration::from_secs(15), |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.starts_with(PROMPT))
    });
    let log = sitrep::session::read_file(&session_file(&data)).expect("session reads");
    let approved = log.records.iter().any(|r| {
        matches!(
            r.event,
            Event::ApprovalGiven { .. } | Event::ActionExecuted { .. }
        )
    });
    assert!(!approved, "typing approved the action");
}

/// Issue 10.7 in a real terminal: typing a deny reason pauses the medium countdown (recorded as
/// `veto_paused`), the action does not run while the operator types, and the deny is final.
#[test]
fn typing_a_deny_reason_pauses_the_medium_countdown() {
    if !tmux::available() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[policy]\nveto_secs = 3\n").expect("config");
    let tmux = start_shell("veto", &data);
    console_at_the_modal_of(&tmux, "search-cpu-saturation", Some(&config));
    let screen = tmux.capture();
    assert!(screen.contains("MEDIUM RISK"), "{screen}");
    // Past the 300 ms guard, open the deny reason and type slowly, well past the 3 s countdown.
    std::thread::sleep(Duration::from_millis(400));
    tmux.keys(&["d"]);
    for word in ["not ", "during ", "the ", "sale ", "window"] {
        std::thread::sleep(Duration::from_millis(1000));
        tmux.keys(&["-l", word]);
    }
    let screen = tmux.capture();
    assert!(
        screen.contains("APPROVAL REQUIRED") && screen.contains("countdown paused"),
        "{screen}"
    );
    let log = sitrep::session::read_file(&session_file(&data)).expect("session reads");
    let events: Vec<&Event> = log.records.iter().map(|r| &r.event).collect();
    assert!(
        events.iter().any(|e| matches!(e, Event::VetoPaused { .. })),
        "the pause is recorded"
    );
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::ApprovalGiven { .. } | Event::ActionExecuted { .. }
        )),
        "the action ran while the operator typed"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_for("the denial", Duration::from_secs(30), |s| {
        s.contains("denied")
    });
    std::thread::sleep(Duration::from_millis(500));
    tmux.keys(&["q"]);
    let _ = tmux.wait_for("the shell", Duration::from_secs(15), |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.starts_with(PROMPT))
    });
    let log = sitrep::session::read_file(&session_file(&data)).expect("session reads");
    let denied = log.records.iter().any(|r| {
        matches!(&r.event, Event::ApprovalDenied { reason, .. } if reason.contains("sale window"))
    });
    assert!(denied, "the deny with its reason is recorded");
    assert!(
        !log.records
            .iter()
            .any(|r| matches!(r.event, Event::ActionExecuted { .. })),
        "a denied action ran"
    );
}
