//! Replay clock over a session's records: pause, speed, step and seek, over keyframes of the fold.
//!
//! Two time lines are involved. Session time is each record's `t`. Play time is session time with
//! every idle gap longer than [`Replay::gap_cap`] shortened to it, so a ten-minute wait for an
//! approval replays in two seconds. The clock runs in play time, scaled by the speed.
//!
//! Memory stays near one fold of the session, whatever its length. A replay opened from a file
//! keeps only each record's byte offset and time and reads records back as it plays or seeks.
//! Keyframes share what the fold only appends: each stores its lists as a difference from the
//! next keyframe's (the last from the final fold), so a million-event session keeps one copy of
//! its timeline, tool calls and evidence, and evidence bodies are shared behind `Arc`.

mod keyframes;
mod records;

use super::{SessionError, Tear};
use crate::model::{Incident, Record, SessionHeader, Stage};
use keyframes::{Builder, Keyframe, Lists, MAX_KEYFRAMES, MIN_KEYFRAME_EVERY};
use records::{FORWARD_BYTES, FileRecords, OFFSET_EVERY, SharedAdd, Source};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::Duration;

/// Slowest and fastest replay speeds.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 64.0;
/// Default cap on an idle gap, in play-time seconds.
pub const DEFAULT_GAP_CAP: f64 = 2.0;

/// A replay of recorded events with its own clock.
#[derive(Debug, Clone)]
pub struct Replay {
    source: Source,
    /// Session time of each record.
    times: Vec<f64>,
    /// Play time at which each record is applied.
    play_at: Vec<f64>,
    /// Records that start a stage, in order.
    stage_starts: Vec<(usize, Stage)>,
    gap_cap: f64,
    /// Keyframes in record order; the first is at 0.
    keyframes: Vec<Keyframe>,
    /// The fold of every record: the head every keyframe's difference chain starts from.
    last: Incident,
    /// The file lost records since it was opened: `last` is only a chain head now.
    truncated: bool,
    /// Records that add a large text item `last` holds unchanged: applying one shares that item
    /// instead of reading its line back, which would hold a second copy of the body.
    shared: Vec<SharedAdd>,
    /// Records applied so far.
    pos: usize,
    incident: Incident,
    /// Current play time.
    play: f64,
    speed: f64,
    paused: bool,
}

/// A session file opened for replay: the clock, and what the file's first line and any damage say.
#[derive(Debug)]
pub struct OpenedReplay {
    pub replay: Replay,
    pub header: SessionHeader,
    pub tear: Option<Tear>,
}

fn sanitize_gap_cap(gap_cap: f64) -> f64 {
    if gap_cap.is_finite() && gap_cap > 0.0 {
        gap_cap
    } else {
        DEFAULT_GAP_CAP
    }
}

impl From<Vec<Record>> for Replay {
    fn from(records: Vec<Record>) -> Replay {
        Replay::new(records)
    }
}

impl Replay {
    /// A replay with the default idle-gap cap, positioned at the start, playing at 1x.
    pub fn new(records: Vec<Record>) -> Replay {
        Replay::with_gap_cap(records, DEFAULT_GAP_CAP)
    }

    pub fn from_log(log: &super::SessionLog) -> Replay {
        Replay::new(log.records.clone())
    }

    /// A replay where idle gaps longer than `gap_cap` seconds are shortened to it.
    pub fn with_gap_cap(records: Vec<Record>, gap_cap: f64) -> Replay {
        let mut b = Builder::new(sanitize_gap_cap(gap_cap));
        let every = records.len().div_ceil(MAX_KEYFRAMES);
        for r in &records {
            b.push(
                r.t,
                std::borrow::Cow::Borrowed(&r.event),
                |n, _| n >= every,
                0,
            );
        }
        b.finish(Source::Memory(records))
    }

    /// Open a session file for replay without holding its records: one pass reads the file,
    /// keeping each record's offset and time, and folds it to build the keyframes. Damage after
    /// the header ends the replay there, as [`super::read_file`] does.
    pub fn open(path: &Path) -> Result<OpenedReplay, SessionError> {
        let io = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let mut reader = super::Reader::new(BufReader::with_capacity(1 << 16, file))
            .map_err(|e| e.with_path(path))?;
        let mut b = Builder::new(DEFAULT_GAP_CAP);
        let step = size.div_ceil(MAX_KEYFRAMES as u64).max(1);
        let mut offsets = Vec::new();
        let mut len = 0;
        let mut end = 0;
        while let Some(r) = reader.next() {
            if len % OFFSET_EVERY == 0 {
                offsets.push(reader.record_offset());
            }
            len += 1;
            let bytes = reader.offset();
            end = bytes;
            b.push(
                r.t,
                std::borrow::Cow::Owned(r.event),
                |_, b| b >= step,
                bytes,
            );
        }
        offsets.shrink_to_fit();
        let header = reader.header().clone();
        let tear = reader.tear().cloned();
        let replay = b.finish(Source::File(FileRecords::new(
            path.to_path_buf(),
            offsets,
            len,
            end,
        )));
        Ok(OpenedReplay {
            replay,
            header,
            tear,
        })
    }

    /// The fold of every record applied so far.
    pub fn incident(&self) -> &Incident {
        &self.incident
    }

    /// Record `index`, read back from where the replay keeps it.
    pub fn record(&mut self, index: usize) -> Option<Record> {
        match &mut self.source {
            Source::Memory(records) => records.get(index).cloned(),
            Source::File(f) => f.read(index),
        }
    }

    /// Where each stage began (record index and stage), in order.
    pub fn stage_starts(&self) -> &[(usize, Stage)] {
        &self.stage_starts
    }

    /// Records applied so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Every record has been applied.
    pub fn is_finished(&self) -> bool {
        self.pos >= self.len()
    }

    pub fn gap_cap(&self) -> f64 {
        self.gap_cap
    }

    /// Records between keyframes, on average.
    pub fn keyframe_every(&self) -> usize {
        self.len().div_ceil(self.keyframes.len().max(1)).max(1)
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Set the speed, clamped to 0.25x..64x.
    pub fn set_speed(&mut self, speed: f64) {
        self.speed = if speed.is_finite() {
            speed.clamp(MIN_SPEED, MAX_SPEED)
        } else {
            1.0
        };
    }

    /// Double the speed (up to 64x).
    pub fn faster(&mut self) {
        self.set_speed(self.speed * 2.0);
    }

    /// Halve the speed (down to 0.25x).
    pub fn slower(&mut self) {
        self.set_speed(self.speed / 2.0);
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    pub fn pause(&mut self) {
        self.paused = true;
    }

    pub fn resume(&mut self) {
        self.paused = false;
    }

    pub fn toggle_pause(&mut self) {
        self.paused = !self.paused;
    }

    /// Total play time, in seconds at 1x.
    pub fn play_duration(&self) -> f64 {
        self.play_at.last().copied().unwrap_or(0.0)
    }

    /// Session time of the last record.
    pub fn duration(&self) -> f64 {
        self.times.iter().copied().fold(0.0, f64::max)
    }

    /// Current play time.
    pub fn play_time(&self) -> f64 {
        self.play
    }

    /// Play time at which record `index` is applied (marks on a progress bar use this scale).
    pub fn play_time_at(&self, index: usize) -> Option<f64> {
        self.play_at.get(index).copied()
    }

    /// Current position in session time (what the clock on screen shows).
    pub fn session_time(&self) -> f64 {
        match self.pos.checked_sub(1) {
            None => 0.0,
            Some(last) => {
                let since = (self.play - self.play_at[last]).max(0.0);
                let t = self.times[last];
                match self.times.get(self.pos) {
                    Some(next) => (t + since).min(next.max(t)),
                    None => t,
                }
            }
        }
    }

    /// Fraction of play time elapsed, 0.0..=1.0.
    pub fn progress(&self) -> f64 {
        let total = self.play_duration();
        if total <= 0.0 {
            if self.is_finished() { 1.0 } else { 0.0 }
        } else {
            (self.play / total).clamp(0.0, 1.0)
        }
    }

    /// Advance the clock by `wall` of real time (ignored while paused) and apply every record now
    /// due. Returns how many records were applied, so the caller redraws only when it changed.
    pub fn advance(&mut self, wall: Duration) -> usize {
        if self.paused || self.is_finished() {
            return 0;
        }
        self.play = (self.play + wall.as_secs_f64() * self.speed).min(self.play_duration());
        let before = self.pos;
        while self.pos < self.len() && self.play_at[self.pos] <= self.play {
            self.apply_next();
        }
        self.pos - before
    }

    /// Real time until the next record is due at the current speed; None when paused or finished.
    pub fn next_due(&self) -> Option<Duration> {
        if self.paused {
            return None;
        }
        let next = self.play_at.get(self.pos)?;
        let secs = ((next - self.play) / self.speed).max(0.0);
        Some(Duration::from_secs_f64(secs))
    }

    /// Apply exactly one record and pause there. Returns false at the end.
    pub fn step(&mut self) -> bool {
        self.paused = true;
        if self.is_finished() {
            return false;
        }
        self.apply_next();
        if let Some(last) = self.pos.checked_sub(1) {
            self.play = self.play_at[last];
        }
        true
    }

    /// Go back one record and pause there. Returns false at the start.
    pub fn step_back(&mut self) -> bool {
        self.paused = true;
        match self.pos.checked_sub(1) {
            Some(k) => {
                self.seek_index(k);
                true
            }
            None => false,
        }
    }

    fn apply_next(&mut self) {
        let record = match &mut self.source {
            Source::Memory(records) => {
                if let Some(r) = records.get(self.pos) {
                    self.incident.apply(r.t, &r.event);
                    self.pos += 1;
                }
                return;
            }
            Source::File(f) => {
                if !self.truncated
                    && let Ok(k) = self.shared.binary_search_by_key(&self.pos, |s| s.record)
                    && let Some(item) = self.last.evidence.get(self.shared[k].item)
                    && let Some(&t) = self.times.get(self.pos)
                {
                    self.incident.apply_shared(t, item.clone());
                    f.passed(self.pos, self.shared[k].end);
                    self.pos += 1;
                    return;
                }
                f.read(self.pos)
            }
        };
        match record {
            Some(r) => {
                // Moved, not copied: the record was read for this fold alone.
                self.incident.apply_owned(r.t, r.event);
                self.pos += 1;
            }
            // The file changed under the replay: it ends where the file stopped making sense.
            None => self.truncate(self.pos),
        }
    }

    /// Forget records from `n` on. Keyframes stay: those past `n` are never chosen again but
    /// still link the earlier ones to `last`, which no longer describes the end.
    fn truncate(&mut self, n: usize) {
        self.times.truncate(n);
        self.play_at.truncate(n);
        self.stage_starts.retain(|(i, _)| *i < n);
        if let Source::File(f) = &mut self.source {
            f.len = f.len.min(n);
        }
        self.truncated = true;
        self.pos = self.pos.min(n);
    }

    /// The fold after the first `keyframes[k].at` records.
    fn keyframe(&self, k: usize) -> Incident {
        let Some(kf) = self.keyframes.get(k) else {
            return Incident::new();
        };
        let mut inc = kf.base.clone();
        let chain: Vec<&Lists> = self.keyframes[k..]
            .iter()
            .rev()
            .map(|kf| &kf.lists)
            .collect();
        Lists::restore(&mut inc, &self.last, &chain);
        inc.reindex();
        inc
    }

    /// At most how many bytes of the file hold records `from..` (0 for a replay in memory).
    fn bytes_from(&self, from: usize) -> u64 {
        match &self.source {
            Source::Memory(_) => 0,
            Source::File(f) => f
                .offsets
                .get(from / OFFSET_EVERY)
                .map_or(0, |start| f.end.saturating_sub(*start)),
        }
    }

    /// Position the replay after the first `n` records (clamped), rebuilding the fold from the
    /// nearest keyframe at or before `n`.
    pub fn seek_index(&mut self, n: usize) {
        let n = n.min(self.len());
        // The end is kept whole: jumping there is a copy, not a fold. Folding the last few
        // records is cheaper, unless reading them back is not (one can hold a large log).
        if n == self.len()
            && !self.truncated
            && (self.pos > n
                || n - self.pos > MIN_KEYFRAME_EVERY
                || self.bytes_from(self.pos) > FORWARD_BYTES)
        {
            self.incident = self.last.clone();
            self.pos = n;
        } else {
            let forward_cost = n.checked_sub(self.pos);
            let k = self
                .keyframes
                .partition_point(|kf| kf.at <= n)
                .saturating_sub(1);
            let at = self.keyframes.get(k).map(|kf| kf.at).unwrap_or(0);
            // Folding forward from here is cheaper than restarting from a keyframe when close by.
            if forward_cost.is_none_or(|c| c > n - at) {
                self.incident = self.keyframe(k);
                self.pos = at;
            }
            while self.pos < n {
                let before = self.pos;
                self.apply_next();
                if self.pos == before {
                    break;
                }
            }
        }
        self.play = match self.pos.checked_sub(1) {
            Some(last) => self.play_at[last],
            None => 0.0,
        };
    }

    /// Position at session time `t`: every record with `r.t <= t` applied.
    pub fn seek_time(&mut self, t: f64) {
        let n = self.times.iter().take_while(|rt| **rt <= t).count();
        self.seek_index(n);
        let n = self.pos;
        if let Some(last) = n.checked_sub(1) {
            let since = (t - self.times[last]).clamp(0.0, self.gap_cap);
            let limit = self.play_at.get(n).copied().unwrap_or(self.play_at[last]);
            self.play = (self.play_at[last] + since).min(limit);
        }
    }

    /// Position at a fraction (0.0..=1.0) of the play time, as the `0`-`9` keys do.
    pub fn seek_fraction(&mut self, fraction: f64) {
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let target = fraction * self.play_duration();
        let n = self.play_at.partition_point(|p| *p <= target);
        self.seek_index(n);
        self.play = target.min(self.play_duration());
    }

    /// Index of the record that starts `stage` (its first start), if the session reached it.
    pub fn stage_index(&self, stage: Stage) -> Option<usize> {
        self.stage_starts
            .iter()
            .find(|(_, s)| *s == stage)
            .map(|(i, _)| *i)
    }

    /// Position just after `stage` started. Returns false when the session never reached it.
    pub fn seek_stage(&mut self, stage: Stage) -> bool {
        match self.stage_index(stage) {
            Some(i) => {
                self.seek_index(i + 1);
                true
            }
            None => false,
        }
    }

    /// Jump to the start of the next stage after the current position.
    pub fn next_stage(&mut self) -> bool {
        let from = self.pos;
        match self.stage_starts.iter().find(|(i, _)| *i >= from) {
            Some(&(i, _)) => {
                self.seek_index(i + 1);
                true
            }
            None => false,
        }
    }

    /// Jump to the start of the current stage, or of the previous one when already at a start.
    pub fn prev_stage(&mut self) -> bool {
        // The stage start that produced the current position is at index pos - 1; skip it.
        let upto = self.pos.saturating_sub(1);
        match self.stage_starts.iter().rev().find(|(i, _)| *i < upto) {
            Some(&(i, _)) => {
                self.seek_index(i + 1);
                true
            }
            None => {
                self.seek_index(0);
                upto > 0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Event;
    use std::sync::Arc;

    fn rec(t: f64, stage: Stage) -> Record {
        Record {
            t,
            event: Event::StageStarted { stage },
        }
    }

    fn warn(t: f64, n: usize) -> Record {
        Record {
            t,
            event: Event::Warning {
                message: format!("w{n}"),
            },
        }
    }

    #[test]
    fn idle_gaps_are_capped() {
        let r = Replay::new(vec![
            rec(0.0, Stage::Triage),
            rec(1.0, Stage::Gather),
            rec(601.0, Stage::Approve),
        ]);
        assert_eq!(r.play_duration(), 1.0 + DEFAULT_GAP_CAP);
        assert_eq!(r.duration(), 601.0);
    }

    #[test]
    fn advance_applies_due_records_and_respects_pause_and_speed() {
        let mut r = Replay::new(vec![rec(0.0, Stage::Triage), rec(1.0, Stage::Gather)]);
        assert_eq!(r.advance(Duration::ZERO), 1);
        r.set_speed(1000.0);
        assert_eq!(r.speed(), MAX_SPEED);
        r.set_speed(0.0);
        assert_eq!(r.speed(), MIN_SPEED);
        r.set_speed(2.0);
        r.pause();
        assert_eq!(r.advance(Duration::from_secs(5)), 0);
        assert_eq!(r.next_due(), None);
        r.resume();
        assert_eq!(r.next_due(), Some(Duration::from_millis(500)));
        assert_eq!(r.advance(Duration::from_millis(400)), 0);
        assert_eq!(r.advance(Duration::from_millis(100)), 1);
        assert!(r.is_finished());
        assert_eq!(r.progress(), 1.0);
    }

    #[test]
    fn seeking_uses_keyframes_and_matches_prefix_folds() {
        let records: Vec<Record> = (0..1000).map(|i| warn(i as f64 * 0.1, i)).collect();
        let mut r = Replay::new(records.clone());
        for n in [999, 0, 500, 64, 63, 65, 1000, 3, 700] {
            r.seek_index(n);
            let expect = Incident::fold(records[..n].iter().map(|r| (r.t, &r.event)));
            assert_eq!(r.incident(), &expect, "n = {n}");
        }
        r.seek_time(50.05);
        assert_eq!(r.position(), 501);
        r.seek_fraction(0.0);
        assert_eq!(r.position(), 1);
        r.seek_fraction(1.0);
        assert!(r.is_finished());
    }

    #[test]
    fn step_and_stage_navigation() {
        let mut r = Replay::new(vec![
            rec(0.0, Stage::Triage),
            warn(0.5, 0),
            rec(1.0, Stage::Gather),
            warn(1.5, 1),
            rec(2.0, Stage::Diagnose),
        ]);
        assert!(r.step());
        assert!(r.is_paused());
        assert_eq!(r.position(), 1);
        assert!(r.next_stage());
        assert_eq!(r.position(), 3);
        assert!(r.next_stage());
        assert_eq!(r.position(), 5);
        assert!(!r.next_stage());
        assert!(r.prev_stage());
        assert_eq!(r.position(), 3);
        assert!(r.seek_stage(Stage::Triage));
        assert_eq!(r.position(), 1);
        assert!(!r.seek_stage(Stage::Report));
        assert!(r.step_back());
        assert_eq!(r.position(), 0);
        assert!(!r.step_back());
    }

    #[test]
    fn empty_replay_is_harmless() {
        let mut r = Replay::new(Vec::new());
        assert!(r.is_finished());
        assert_eq!(r.advance(Duration::from_secs(1)), 0);
        assert!(!r.step());
        assert!(!r.next_stage());
        assert!(!r.prev_stage());
        r.seek_fraction(0.5);
        r.seek_time(10.0);
        assert_eq!(r.session_time(), 0.0);
    }

    /// Tool calls that finish long after they start, evidence that grows while keyframes are
    /// taken, warnings and stages: every list of the fold changes between keyframes.
    fn busy_session(n: usize) -> Vec<Record> {
        use crate::model::{Evidence, EvidenceBody};
        let mut out = Vec::new();
        let mut i = 0;
        while out.len() < n {
            let t = out.len() as f64 * 0.05;
            let call = format!("c{}", i % 37);
            let event = match i % 9 {
                0 => Event::ToolCalled {
                    call_id: call,
                    tool: "loki.query_range".into(),
                    specialist: None,
                    params: Default::default(),
                },
                1 => Event::EvidenceAdded {
                    evidence: Evidence {
                        id: format!("e{}", i % 53),
                        kind: "logs".into(),
                        title: format!("logs {i}"),
                        source: "loki.query_range".into(),
                        call_id: Some(format!("c{}", (i + 11) % 37)),
                        body: EvidenceBody::Text {
                            language: "log".into(),
                            text: format!("first {i}"),
                        },
                    },
                },
                2 | 4 | 5 => Event::EvidenceAppended {
                    evidence_id: format!("e{}", (i * 7) % 53),
                    text: format!("line {i}"),
                },
                3 => Event::ToolSucceeded {
                    call_id: format!("c{}", (i * 5) % 37),
                    duration_ms: i as u64,
                    summary: format!("done {i}"),
                },
                6 => Event::StageStarted {
                    stage: Stage::ALL[(i / 9) % 8],
                },
                _ => Event::Warning {
                    message: format!("w{i}"),
                },
            };
            out.push(Record { t, event });
            i += 1;
        }
        out
    }

    fn check_seeks(r: &mut Replay, records: &[Record]) {
        let len = records.len();
        let mut targets: Vec<usize> = (0..=len).step_by(13).collect();
        targets.extend([len, 0, len - 1, 64, 63, 65, 128, len / 2, 1, len]);
        for n in targets {
            r.seek_index(n);
            let expect = Incident::fold(records[..n].iter().map(|r| (r.t, &r.event)));
            assert_eq!(r.incident(), &expect, "n = {n}");
            for e in &expect.evidence {
                assert_eq!(
                    r.incident().evidence(&e.id),
                    expect.evidence(&e.id),
                    "n = {n}"
                );
            }
        }
        r.seek_fraction(1.0);
        assert!(r.is_finished());
    }

    #[test]
    fn keyframes_rebuild_every_list_of_the_fold() {
        let records = busy_session(5000);
        let mut r = Replay::new(records.clone());
        assert!(r.keyframes.len() > 20, "{}", r.keyframes.len());
        check_seeks(&mut r, &records);
    }

    #[test]
    fn a_replay_opened_from_a_file_matches_one_in_memory() {
        let records = busy_session(3000);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut text = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        text.push('\n');
        for r in &records {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push('\n');
        }
        // A torn last line: the replay ends before it.
        text.push_str(r#"{"t":999.0,"event":{"type":"warn"#);
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let opened = Replay::open(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(opened.header.id, "s");
        assert!(opened.tear.is_some());
        let mut r = opened.replay;
        assert_eq!(r.len(), records.len());
        let memory = Replay::new(records.clone());
        assert_eq!(r.stage_starts(), memory.stage_starts());
        assert_eq!(r.play_duration(), memory.play_duration());
        assert_eq!(r.record(17).as_ref(), records.get(17));
        check_seeks(&mut r, &records);
        // Playing through reads the records in order.
        r.seek_index(0);
        r.resume();
        r.set_speed(MAX_SPEED);
        while !r.is_finished() {
            r.advance(Duration::from_secs(60));
        }
        let all = Incident::fold(records.iter().map(|r| (r.t, &r.event)));
        assert_eq!(r.incident(), &all);
    }

    #[test]
    fn a_replay_survives_its_file_shrinking() {
        let records = busy_session(400);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut text = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        text.push('\n');
        for r in &records {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let mut r = Replay::open(&path)
            .map(|o| o.replay)
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, &text[..text.len() / 2]).unwrap_or_else(|e| panic!("{e}"));
        r.seek_index(r.len() - 1);
        assert!(r.len() < records.len());
        assert!(r.position() <= r.len());
        let expect = Incident::fold(records[..r.position()].iter().map(|r| (r.t, &r.event)));
        assert_eq!(r.incident(), &expect);
    }

    #[test]
    fn a_replay_reads_its_file_past_blank_lines_and_from_sparse_offsets() {
        let records = busy_session(1000);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut text = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        text.push('\n');
        for (i, r) in records.iter().enumerate() {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            // Blank lines and CRLF endings, which the reader passes over, in between.
            text.push_str(match i % 7 {
                0 => "\n\n",
                3 => "\r\n",
                5 => "\n  \n",
                _ => "\n",
            });
        }
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let mut r = Replay::open(&path)
            .map(|o| o.replay)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.len(), records.len());
        for i in [0, 1, 63, 64, 65, 127, 128, 500, 999, 3, 2] {
            assert_eq!(r.record(i).as_ref(), records.get(i), "record {i}");
        }
        assert_eq!(r.record(1000), None);
        check_seeks(&mut r, &records);
    }

    #[test]
    fn keyframes_keep_tool_calls_as_they_were_before_later_results() {
        let mut records = Vec::new();
        let mut t = 0.0;
        let mut next = |event: Event| {
            t += 0.1;
            Record { t, event }
        };
        for i in 0..400 {
            records.push(next(Event::ToolCalled {
                call_id: format!("c{}", i % 150),
                tool: "kubernetes.pods".into(),
                specialist: None,
                params: Default::default(),
            }));
            // Results for calls made long before, some failing, some for ids called again.
            if i >= 100 {
                let old = (i * 37) % 97;
                records.push(next(if i % 3 == 0 {
                    Event::ToolFailed {
                        call_id: format!("c{}", old % 150),
                        duration_ms: i as u64,
                        error: format!("failed {i}"),
                    }
                } else {
                    Event::ToolSucceeded {
                        call_id: format!("c{}", old % 150),
                        duration_ms: i as u64,
                        summary: format!("done {i}"),
                    }
                }));
            }
        }
        let mut r = Replay::new(records.clone());
        assert!(r.keyframes.len() > 5, "{}", r.keyframes.len());
        check_seeks(&mut r, &records);
    }

    #[test]
    fn seeking_to_the_end_past_a_large_record_copies_the_final_fold() {
        use crate::model::{Evidence, EvidenceBody};
        let records = vec![
            rec(0.0, Stage::Gather),
            Record {
                t: 1.0,
                event: Event::EvidenceAdded {
                    evidence: Evidence {
                        id: "big".into(),
                        kind: "logs".into(),
                        title: "a large log".into(),
                        source: "loki.query_range".into(),
                        call_id: None,
                        body: EvidenceBody::Text {
                            language: "log".into(),
                            text: "a log line\n".repeat(200_000),
                        },
                    },
                },
            },
            warn(2.0, 1),
        ];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut text = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        text.push('\n');
        for r in &records {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let mut r = Replay::open(&path)
            .map(|o| o.replay)
            .unwrap_or_else(|e| panic!("{e}"));
        // With the file gone, only the kept fold can show the end.
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        r.seek_fraction(1.0);
        assert_eq!(r.position(), records.len());
        let expect = Incident::fold(records.iter().map(|r| (r.t, &r.event)));
        assert_eq!(r.incident(), &expect);
    }
    #[test]
    fn a_large_item_nothing_changes_is_shared_with_the_final_fold_not_read_again() {
        use crate::model::{Evidence, EvidenceBody};
        let big = |id: &str, t: f64| Record {
            t,
            event: Event::EvidenceAdded {
                evidence: Evidence {
                    id: id.into(),
                    kind: "logs".into(),
                    title: format!("log {id}"),
                    source: "loki.query_range".into(),
                    call_id: None,
                    body: EvidenceBody::Text {
                        language: "log".into(),
                        text: format!("{id} \"line\"\n").repeat(20_000),
                    },
                },
            },
        };
        let records = vec![
            rec(0.0, Stage::Gather),
            big("kept", 1.0),
            warn(2.0, 1),
            big("grown", 3.0),
            Record {
                t: 4.0,
                event: Event::EvidenceAppended {
                    evidence_id: "grown".into(),
                    text: "one more".into(),
                },
            },
            warn(5.0, 2),
        ];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("s.ndjson");
        let mut text = String::from(
            r#"{"sitrep_session":1,"id":"s","started":"2026-11-22T09:00:00Z","title":"t"}"#,
        );
        text.push_str("\n\n");
        for r in &records {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push_str("\n \n");
        }
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let mut r = Replay::open(&path)
            .map(|o| o.replay)
            .unwrap_or_else(|e| panic!("{e}"));
        let shared: Vec<usize> = r.shared.iter().map(|s| s.record).collect();
        assert_eq!(shared, [1], "the item appended to later is read back");
        for round in 0..2 {
            r.seek_index(0);
            for n in 1..=records.len() {
                assert!(r.step());
                let expect = Incident::fold(records[..n].iter().map(|r| (r.t, &r.event)));
                assert_eq!(r.incident(), &expect, "round {round}, n = {n}");
            }
        }
        let (played, last) = (&r.incident().evidence[0], &r.last.evidence[0]);
        assert!(Arc::ptr_eq(played, last), "one copy of the body");
        // Reading a record behind a large line passes over it without holding it.
        assert_eq!(r.record(2).as_ref(), records.get(2));
        assert_eq!(r.record(5).as_ref(), records.get(5));
        match &r.source {
            Source::File(f) => assert!(f.line.capacity() <= 1 << 20, "{}", f.line.capacity()),
            Source::Memory(_) => panic!("opened from a file"),
        }
    }
}
