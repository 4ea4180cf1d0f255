//! Replay clock over a session's records: pause, speed, step, seek, with keyframes of the fold.
//!
//! Two time lines are involved. Session time is each record's `t`. Play time is session time with
//! every idle gap longer than [`Replay::gap_cap`] shortened to it, so a ten-minute wait for an
//! approval replays in two seconds. The clock runs in play time, scaled by the speed.

use crate::model::{Event, Incident, Record, Stage};
use std::time::Duration;

/// Slowest and fastest replay speeds.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 64.0;
/// Default cap on an idle gap, in play-time seconds.
pub const DEFAULT_GAP_CAP: f64 = 2.0;
/// Fewest records between keyframes; long sessions space them wider to bound memory.
const MIN_KEYFRAME_EVERY: usize = 64;
/// Most keyframes kept, whatever the session length.
const MAX_KEYFRAMES: usize = 64;

/// A replay of recorded events with its own clock.
#[derive(Debug, Clone)]
pub struct Replay {
    records: Vec<Record>,
    /// Play time at which each record is applied.
    play_at: Vec<f64>,
    gap_cap: f64,
    /// `keyframes[i]` is the fold of the first `i * keyframe_every` records.
    keyframes: Vec<Incident>,
    keyframe_every: usize,
    /// Records applied so far.
    pos: usize,
    incident: Incident,
    /// Current play time.
    play: f64,
    speed: f64,
    paused: bool,
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
        let gap_cap = if gap_cap.is_finite() && gap_cap > 0.0 {
            gap_cap
        } else {
            DEFAULT_GAP_CAP
        };
        let mut play_at = Vec::with_capacity(records.len());
        let mut prev_t = 0.0_f64;
        let mut play = 0.0_f64;
        for r in &records {
            let t = if r.t.is_finite() { r.t } else { prev_t };
            // Out-of-order times replay as simultaneous rather than going backwards.
            play += (t - prev_t).clamp(0.0, gap_cap);
            prev_t = prev_t.max(t);
            play_at.push(play);
        }
        let keyframe_every = MIN_KEYFRAME_EVERY.max(records.len().div_ceil(MAX_KEYFRAMES));
        let mut keyframes = vec![Incident::new()];
        let mut fold = Incident::new();
        for (i, r) in records.iter().enumerate() {
            fold.apply(r.t, &r.event);
            if (i + 1) % keyframe_every == 0 {
                keyframes.push(fold.clone());
            }
        }
        Replay {
            records,
            play_at,
            gap_cap,
            keyframes,
            keyframe_every,
            pos: 0,
            incident: Incident::new(),
            play: 0.0,
            speed: 1.0,
            paused: false,
        }
    }

    /// The fold of every record applied so far.
    pub fn incident(&self) -> &Incident {
        &self.incident
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Records applied so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every record has been applied.
    pub fn is_finished(&self) -> bool {
        self.pos >= self.records.len()
    }

    pub fn gap_cap(&self) -> f64 {
        self.gap_cap
    }

    pub fn keyframe_every(&self) -> usize {
        self.keyframe_every
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
        self.records.iter().map(|r| r.t).fold(0.0, f64::max)
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
                let t = self.records[last].t;
                match self.records.get(self.pos) {
                    Some(next) => (t + since).min(next.t.max(t)),
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
        while self.pos < self.records.len() && self.play_at[self.pos] <= self.play {
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
        self.play = self.play_at[self.pos - 1];
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
        let r = &self.records[self.pos];
        self.incident.apply(r.t, &r.event);
        self.pos += 1;
    }

    /// Position the replay after the first `n` records (clamped), rebuilding the fold from the
    /// nearest keyframe at or before `n`.
    pub fn seek_index(&mut self, n: usize) {
        let n = n.min(self.records.len());
        let forward_cost = n.checked_sub(self.pos);
        let k = (n / self.keyframe_every).min(self.keyframes.len() - 1);
        let from_keyframe = n - k * self.keyframe_every;
        // Folding forward from here is cheaper than restarting from a keyframe when close by.
        if forward_cost.is_none_or(|c| c > from_keyframe) {
            self.incident = self.keyframes[k].clone();
            self.pos = k * self.keyframe_every;
        }
        while self.pos < n {
            self.apply_next();
        }
        self.play = match n.checked_sub(1) {
            Some(last) => self.play_at[last],
            None => 0.0,
        };
    }

    /// Position at session time `t`: every record with `r.t <= t` applied.
    pub fn seek_time(&mut self, t: f64) {
        let n = self.records.iter().take_while(|r| r.t <= t).count();
        self.seek_index(n);
        if let Some(last) = n.checked_sub(1) {
            let since = (t - self.records[last].t).clamp(0.0, self.gap_cap);
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
        let n = self.play_at.iter().take_while(|p| **p <= target).count();
        self.seek_index(n);
        self.play = target;
    }

    /// Index of the record that starts `stage` (its first start), if the session reached it.
    pub fn stage_index(&self, stage: Stage) -> Option<usize> {
        self.records
            .iter()
            .position(|r| matches!(r.event, Event::StageStarted { stage: s } if s == stage))
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
        let found = self.records[self.pos.min(self.records.len())..]
            .iter()
            .position(|r| matches!(r.event, Event::StageStarted { .. }));
        match found {
            Some(i) => {
                self.seek_index(self.pos + i + 1);
                true
            }
            None => false,
        }
    }

    /// Jump to the start of the current stage, or of the previous one when already at a start.
    pub fn prev_stage(&mut self) -> bool {
        // The stage start that produced the current position is at index pos - 1; skip it.
        let upto = self.pos.saturating_sub(1);
        let found = self.records[..upto]
            .iter()
            .rposition(|r| matches!(r.event, Event::StageStarted { .. }));
        match found {
            Some(i) => {
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
}
