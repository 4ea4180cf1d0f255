//! A signal that arrives while the analysis of a big world runs ends the real binary at once,
//! the session ended as `interrupted` and no verdict written: the analysis runs off the async
//! workers, so the signal is heard while it computes.

use sitrep::model::{Event, Outcome, Stage};
use sitrep::world::inflate::{Filler, inflate};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Filler pods (and events; nodes a fiftieth): enough that the analysis takes long enough, in a
/// debug build, for a signal to land in it, and no more, so the test stays quick.
const FILLER: usize = 3000;

fn big_case(dir: &std::path::Path) {
    let files: BTreeMap<String, String> = sitrep::world::demo::files("checkout-bad-deploy")
        .expect("the built-in case")
        .into_iter()
        .map(|(path, text)| (path.rsplit('/').next().unwrap_or(&path).to_string(), text))
        .collect();
    let grown = inflate(&files, Filler::standard(FILLER)).expect("the case grows");
    for (name, text) in grown {
        std::fs::write(dir.join(name), text).expect("the case is written");
    }
}

#[test]
fn sigterm_during_the_analysis_ends_the_run_within_a_second() {
    let data = tempfile::tempdir().expect("a temp dir");
    let case = data.path().join("case");
    std::fs::create_dir_all(&case).expect("a case dir");
    big_case(&case);
    std::fs::write(data.path().join("none.toml"), "").expect("a config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sitrep"))
        .args(["--headless", "investigate", "--case"])
        .arg(&case)
        .env("SITREP_DATA_DIR", data.path())
        .env("SITREP_CONFIG", data.path().join("none.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sitrep starts");
    let stdout = child.stdout.take().expect("stdout");
    let _stdin = child.stdin.take();
    let started = Instant::now();
    let mut lines = BufReader::new(stdout).lines();
    let mut diagnosing = false;
    for line in lines.by_ref() {
        let Ok(line) = line else { break };
        if line.contains("\"stage_started\"") && line.contains("\"diagnose\"") {
            diagnosing = true;
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no Diagnose stage"
        );
    }
    assert!(diagnosing, "the run ended before it diagnosed");
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let signalled = Instant::now();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("sitrep ends");
    let took = signalled.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(1),
        "ended {took:?} after SIGTERM"
    );
    assert!(
        rest.last()
            .is_some_and(|l| l.contains("\"session_ended\"") && l.contains("interrupted")),
        "stdout ends with {:?}",
        rest.last()
    );
    let (found, _) = sitrep::session::list_sessions(&data.path().join("sessions"));
    assert_eq!(found.len(), 1);
    let log = sitrep::session::read_file(&found[0].path).expect("the session reads");
    assert!(log.tear.is_none());
    let events: Vec<&Event> = log.records.iter().map(|r| &r.event).collect();
    assert!(
        matches!(
            events.last(),
            Some(Event::SessionEnded {
                outcome: Outcome::Interrupted
            })
        ),
        "ends with {:?}",
        events.last()
    );
    // Stopped inside the analysis: no verdict, and Diagnose is the stage that was interrupted.
    assert!(
        !events.iter().any(|e| matches!(e, Event::Diagnosis { .. })),
        "the analysis finished before the signal was heard"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::StageFinished { stage: Stage::Diagnose, summary } if summary.contains("interrupted")
    )));
}
