//! Replaying the fixture session: at 64x and after seeking to any stage, the replayed incident equals
//! the fold of the records up to that point.

use sitrep::model::{Incident, Record, Stage};
use sitrep::session::{self, Replay};
use std::path::Path;
use std::time::Duration;

fn records() -> Vec<Record> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-deploy.ndjson");
    match session::read_file(&path) {
        Ok(log) => {
            assert!(log.tear.is_none(), "fixture is damaged: {:?}", log.tear);
            log.records
        }
        Err(e) => panic!("{e}"),
    }
}

fn prefix(records: &[Record], n: usize) -> Incident {
    Incident::fold(records[..n].iter().map(|r| (r.t, &r.event)))
}

#[test]
fn plays_at_64x_and_every_point_matches_the_prefix_fold() {
    let records = records();
    let mut replay = Replay::new(records.clone());
    replay.set_speed(64.0);
    assert_eq!(replay.speed(), 64.0);
    // The 70 s approval wait and the 3 min verification wait are capped to 2 s of play time each.
    assert!(replay.duration() > 250.0);
    assert!(replay.play_duration() < 20.0, "{}", replay.play_duration());

    let tick = Duration::from_millis(5);
    let mut wall = Duration::ZERO;
    let mut seen_positions = vec![0];
    while !replay.is_finished() {
        let applied = replay.advance(tick);
        wall += tick;
        assert_eq!(replay.incident(), &prefix(&records, replay.position()));
        if applied > 0 {
            seen_positions.push(replay.position());
        }
        assert!(
            wall < Duration::from_secs(2),
            "replay at 64x did not finish"
        );
    }
    // At 64x, play time advances 64 times faster than the wall clock.
    let expected = replay.play_duration() / 64.0;
    assert!(
        (wall.as_secs_f64() - expected).abs() < 0.01,
        "{wall:?} vs {expected}"
    );
    assert!(
        seen_positions.len() > 10,
        "events arrived in too few bursts: {seen_positions:?}"
    );
    assert_eq!(replay.incident(), &prefix(&records, records.len()));
    assert!(replay.incident().is_finished());
}

#[test]
fn seeking_to_each_stage_matches_the_prefix_fold() {
    let records = records();
    let mut replay = Replay::new(records.clone());
    replay.set_speed(64.0);
    // Forward, then backward, so both the fold-forward and the keyframe paths are taken.
    let mut order: Vec<Stage> = Stage::ALL.to_vec();
    order.extend(Stage::ALL.iter().rev());
    for stage in order {
        let index = match replay.stage_index(stage) {
            Some(i) => i,
            None => panic!("fixture never reaches {stage}"),
        };
        assert!(replay.seek_stage(stage));
        assert_eq!(replay.position(), index + 1);
        assert_eq!(replay.incident(), &prefix(&records, index + 1), "{stage}");
        assert_eq!(replay.incident().current_stage, Some(stage));
        // Playing on from the stage keeps matching.
        replay.advance(Duration::from_millis(50));
        assert_eq!(
            replay.incident(),
            &prefix(&records, replay.position()),
            "{stage} +50ms"
        );
    }
}

#[test]
fn keyboard_style_navigation_matches_the_prefix_fold() {
    let records = records();
    let mut replay = Replay::with_gap_cap(records.clone(), 1.0);
    for tenth in (0..=10).rev() {
        replay.seek_fraction(f64::from(tenth) / 10.0);
        assert_eq!(replay.incident(), &prefix(&records, replay.position()));
    }
    replay.seek_index(0);
    let mut stages = 0;
    while replay.next_stage() {
        stages += 1;
        assert_eq!(replay.incident(), &prefix(&records, replay.position()));
    }
    assert_eq!(stages, Stage::ALL.len());
    while replay.prev_stage() {
        assert_eq!(replay.incident(), &prefix(&records, replay.position()));
    }
    assert_eq!(replay.position(), 0);
    for _ in 0..records.len() + 3 {
        replay.step();
        assert_eq!(replay.incident(), &prefix(&records, replay.position()));
    }
    assert!(replay.is_finished());
    replay.seek_time(72.418);
    assert_eq!(
        replay.incident().action("a1").map(|a| a.approvals()),
        Some(1),
        "the approval at t=72.418 is applied"
    );
    replay.seek_time(72.0);
    assert_eq!(
        replay.incident().action("a1").map(|a| a.approvals()),
        Some(0)
    );
}

#[test]
fn sessions_dir_agrees_with_the_config_data_dir() {
    assert_eq!(
        session::sessions_dir(),
        sitrep::config::data_dir().join("sessions")
    );
}
