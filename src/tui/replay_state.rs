//! A replay on screen: the session's replay clock plus the progress bar's stage marks.

use crate::model::Stage;
use crate::session::replay::Replay;
use std::time::Duration;

/// A replay on screen: the project's replay clock plus what the progress bar needs from it.
pub struct ReplayUi {
    pub clock: Replay,
    /// Where each stage began, as a fraction of the play time (the progress bar's scale).
    pub marks: Vec<(f64, Stage)>,
}

impl ReplayUi {
    /// Positioned at the start and paused; the event loop starts playback.
    pub fn new(records: impl Into<Replay>) -> ReplayUi {
        let mut clock: Replay = records.into();
        clock.pause();
        let total = clock.play_duration();
        let marks = clock
            .stage_starts()
            .iter()
            .map(|&(i, stage)| {
                let at = clock.play_time_at(i).unwrap_or(0.0);
                let frac = if total > 0.0 { at / total } else { 0.0 };
                (frac.clamp(0.0, 1.0), stage)
            })
            .collect();
        ReplayUi { clock, marks }
    }

    pub fn is_playing(&self) -> bool {
        !self.clock.is_paused() && !self.clock.is_finished()
    }

    /// Wall time until the screen next changes while playing: the next record, or the next
    /// whole second on the clock shown, whichever is sooner. None when nothing will change.
    pub fn next_tick(&self) -> Option<Duration> {
        if !self.is_playing() {
            return None;
        }
        let due = self.clock.next_due()?;
        let t = self.clock.session_time();
        let to_second = (t.floor() + 1.0 - t).max(0.0) / self.clock.speed();
        let second = Duration::try_from_secs_f64(to_second).unwrap_or(Duration::ZERO);
        Some(due.min(second))
    }

    /// Play or pause; playing from the end starts over.
    pub(crate) fn toggle(&mut self) {
        if self.clock.is_finished() && !self.clock.is_empty() {
            self.clock.seek_index(0);
            self.clock.resume();
        } else {
            self.clock.toggle_pause();
        }
    }
}
