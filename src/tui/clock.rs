//! The replay clock: plays recorded events into the same fold as live mode, with pause, speed,
//! step and seek; keyframes of the fold keep seeking backwards cheap.

use crate::model::{Event, Incident, Record, Stage};

const KEYFRAME_EVERY: usize = 512;
/// Long idle stretches in a recording are shortened to this many seconds of replay time.
const MAX_GAP: f64 = 2.0;
pub const SPEEDS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

pub struct ReplayClock {
    records: Vec<Record>,
    /// How many records have been folded into the incident.
    pub pos: usize,
    /// Replay time, seconds since the session start.
    pub t: f64,
    pub playing: bool,
    speed_index: usize,
    keyframes: Vec<(usize, Incident)>,
    marks: Vec<(f64, Stage)>,
}

impl ReplayClock {
    pub fn new(records: Vec<Record>) -> ReplayClock {
        let marks = records
            .iter()
            .filter_map(|r| match r.event {
                Event::StageStarted { stage } => Some((r.t, stage)),
                _ => None,
            })
            .collect();
        ReplayClock {
            records,
            pos: 0,
            t: 0.0,
            playing: false,
            speed_index: 2,
            keyframes: vec![(0, Incident::new())],
            marks,
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn duration(&self) -> f64 {
        self.records.last().map(|r| r.t).unwrap_or(0.0).max(0.0)
    }

    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed_index.min(SPEEDS.len() - 1)]
    }

    /// Stage starts, for the progress bar.
    pub fn marks(&self) -> &[(f64, Stage)] {
        &self.marks
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.records.len()
    }

    /// Fold exactly the first `target` records into `incident`.
    pub fn apply_to(&mut self, incident: &mut Incident, target: usize) {
        let target = target.min(self.records.len());
        if target < self.pos {
            let (kpos, kinc) = self
                .keyframes
                .iter()
                .rev()
                .find(|(p, _)| *p <= target)
                .cloned()
                .unwrap_or_else(|| (0, Incident::new()));
            *incident = kinc;
            self.pos = kpos;
        }
        while self.pos < target {
            let r = &self.records[self.pos];
            incident.apply(r.t, &r.event);
            self.pos += 1;
            if self.pos.is_multiple_of(KEYFRAME_EVERY)
                && self.keyframes.last().is_some_and(|(p, _)| *p < self.pos)
            {
                self.keyframes.push((self.pos, incident.clone()));
            }
        }
    }

    /// Advance by `real_dt` seconds of wall time; true when anything on screen changed.
    pub fn tick(&mut self, incident: &mut Incident, real_dt: f64) -> bool {
        if !self.playing {
            return false;
        }
        let Some(next) = self.records.get(self.pos) else {
            self.playing = false;
            return true;
        };
        let mut t = self.t + real_dt.max(0.0) * self.speed();
        if next.t - t > MAX_GAP {
            t = next.t - MAX_GAP;
        }
        self.seek_time(incident, t);
        if self.at_end() {
            self.playing = false;
        }
        true
    }

    pub fn seek_time(&mut self, incident: &mut Incident, t: f64) {
        let t = t.clamp(0.0, self.duration());
        let target = self.records.partition_point(|r| r.t <= t);
        self.apply_to(incident, target);
        self.t = t;
    }

    /// Seek to `pct` percent of the session's duration.
    pub fn seek_percent(&mut self, incident: &mut Incident, pct: u32) {
        let t = self.duration() * f64::from(pct.min(100)) / 100.0;
        self.seek_time(incident, t);
    }

    /// One event forward; pauses.
    pub fn step(&mut self, incident: &mut Incident) {
        self.playing = false;
        if self.pos < self.records.len() {
            let target = self.pos + 1;
            self.apply_to(incident, target);
            self.t = self.records[target - 1].t.max(self.t);
        }
    }

    pub fn next_stage(&mut self, incident: &mut Incident) {
        let next = self
            .marks
            .iter()
            .find(|(t, _)| *t > self.t + 1e-9)
            .map(|(t, _)| *t);
        self.seek_time(incident, next.unwrap_or(self.duration()));
    }

    pub fn prev_stage(&mut self, incident: &mut Incident) {
        let prev = self
            .marks
            .iter()
            .rev()
            .find(|(t, _)| *t < self.t - 1e-9)
            .map(|(t, _)| *t);
        self.seek_time(incident, prev.unwrap_or(0.0));
    }

    pub fn faster(&mut self) {
        self.speed_index = (self.speed_index + 1).min(SPEEDS.len() - 1);
    }

    pub fn slower(&mut self) {
        self.speed_index = self.speed_index.saturating_sub(1);
    }

    pub fn set_speed(&mut self, speed: f64) -> bool {
        match SPEEDS.iter().position(|s| (*s - speed).abs() < 1e-9) {
            Some(i) => {
                self.speed_index = i;
                true
            }
            None => false,
        }
    }

    pub fn toggle(&mut self, incident: &mut Incident) {
        if self.playing {
            self.playing = false;
        } else {
            if self.at_end() {
                self.seek_time(incident, 0.0);
            }
            self.playing = true;
        }
    }

    /// 0.0 ..= 1.0
    pub fn progress(&self) -> f64 {
        let d = self.duration();
        if d <= 0.0 {
            if self.at_end() { 1.0 } else { 0.0 }
        } else {
            (self.t / d).clamp(0.0, 1.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs() -> Vec<Record> {
        let mut v = Vec::new();
        for (i, s) in Stage::ALL.iter().enumerate() {
            v.push(Record {
                t: i as f64 * 10.0,
                event: Event::StageStarted { stage: *s },
            });
            for j in 0..300 {
                v.push(Record {
                    t: i as f64 * 10.0 + 1.0 + j as f64 * 0.01,
                    event: Event::Warning {
                        message: format!("w{i}-{j}"),
                    },
                });
            }
        }
        v
    }

    #[test]
    fn seek_back_equals_fresh_fold() {
        let records = recs();
        let mut c = ReplayClock::new(records.clone());
        let mut inc = Incident::new();
        c.seek_percent(&mut inc, 90);
        c.seek_percent(&mut inc, 30);
        let fresh = Incident::fold(records.iter().take(c.pos).map(|r| (r.t, &r.event)));
        assert_eq!(inc, fresh);
        assert!(c.pos > 0 && c.pos < records.len());
    }

    #[test]
    fn stages_step_and_gaps() {
        let mut c = ReplayClock::new(recs());
        let mut inc = Incident::new();
        c.next_stage(&mut inc);
        assert_eq!(inc.current_stage, Some(Stage::Gather));
        c.next_stage(&mut inc);
        assert_eq!(inc.current_stage, Some(Stage::Diagnose));
        c.prev_stage(&mut inc);
        assert_eq!(inc.current_stage, Some(Stage::Gather));
        let before = c.pos;
        c.step(&mut inc);
        assert_eq!(c.pos, before + 1);
        // Playing across the 7 s idle gap at 1x takes one tick, not seven seconds.
        c.seek_time(&mut inc, 4.0);
        c.playing = true;
        let pos = c.pos;
        c.tick(&mut inc, 0.1);
        assert_eq!(c.pos, pos);
        assert!(c.t >= 8.0);
    }
}
