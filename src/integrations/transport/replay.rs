//! The replaying transport: answers from recordings by the case-directory matching rule, with
//! overlays, repeats in order, and pacing like a live world.

use super::{Body, BoxFuture, Recording, Request, Response, Transport};
use crate::integrations::error::{ErrorKind, IntegrationError};
use crate::integrations::stored::{RawRecording, Stored};
use crate::policy::redact::Redactor;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
struct ReplayState {
    /// Base recordings first, then each applied overlay; later layers win.
    layers: Vec<Vec<Stored>>,
    /// How often each (layer, index) has answered, so repeated identical requests play back in order.
    used: HashMap<(usize, usize), usize>,
}

/// Longest recorded latency a paced replay waits.
const MAX_RECORDED_WAIT_MS: u64 = 10_000;

/// Answers from recordings, by the case-directory matching rule.
pub struct ReplayTransport {
    state: Mutex<ReplayState>,
    redactor: Redactor,
    /// Simulated latency range in ms (0, 0 = answer at once); the demo uses it so a recorded world
    /// unfolds at the pace of a live one.
    pace_ms: Mutex<(u64, u64)>,
    /// Wait the latency a recording carries (on whenever pacing is; alone for a watched case).
    recorded_pace: std::sync::atomic::AtomicBool,
    /// Requests answered and, once [`ReplayTransport::count_bytes`] is on, the bytes of the
    /// bodies they were answered with as the live API would send them (benchmarks).
    traffic: Traffic,
}

/// What a replay has served.
#[derive(Default)]
struct Traffic {
    requests: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
    count_bytes: std::sync::atomic::AtomicBool,
    /// Time spent counting, so a benchmark can leave it out of what it measures.
    counting_ns: std::sync::atomic::AtomicU64,
}

/// Counts what is written to it, keeping nothing.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of a body as sent on the wire (compact JSON, or the text).
fn wire_size(body: &Body) -> u64 {
    match body {
        Body::Text(t) => t.len() as u64,
        Body::Json(v) => {
            let mut c = ByteCounter(0);
            match serde_json::to_writer(&mut c, v) {
                Ok(()) => c.0,
                Err(_) => 0,
            }
        }
    }
}

impl ReplayTransport {
    pub fn new(recordings: Vec<Recording>) -> Self {
        Self::from_stored(recordings.into_iter().map(Stored::from).collect())
    }

    /// Answers from recordings whose bodies are still JSON text (a case directory as loaded):
    /// each body is parsed when it answers.
    pub fn from_raw(recordings: Vec<RawRecording>) -> Self {
        Self::from_stored(recordings.into_iter().map(Stored::from).collect())
    }

    fn from_stored(recordings: Vec<Stored>) -> Self {
        ReplayTransport {
            state: Mutex::new(ReplayState {
                layers: vec![recordings],
                used: HashMap::new(),
            }),
            redactor: Redactor::new(),
            pace_ms: Mutex::new((0, 0)),
            recorded_pace: std::sync::atomic::AtomicBool::new(false),
            traffic: Traffic::default(),
        }
    }

    /// Also count the bytes of every answer from now on (it costs a pass over each body).
    pub fn count_bytes(&self) {
        self.traffic
            .count_bytes
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Requests answered so far (matched or not), the bytes of the bodies answered since
    /// [`ReplayTransport::count_bytes`], and the time counting them took.
    pub fn traffic(&self) -> (u64, u64, Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.traffic.requests.load(Relaxed),
            self.traffic.bytes.load(Relaxed),
            Duration::from_nanos(self.traffic.counting_ns.load(Relaxed)),
        )
    }

    /// Pace the replay: each answer waits the latency it was recorded with, or, for recordings
    /// without one, a delay in `min..=max` that is the same for the same request on every run, so
    /// a replayed world keeps the rhythm of a live one. `(0, 0)` answers at once.
    pub fn set_pace(&self, min: Duration, max: Duration) {
        if let Ok(mut pace) = self.pace_ms.lock() {
            let lo = min.as_millis().min(u128::from(u64::MAX)) as u64;
            let hi = max.as_millis().min(u128::from(u64::MAX)) as u64;
            *pace = (lo.min(hi), hi.max(lo));
        }
        self.recorded_pace
            .store(!max.is_zero(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Wait only the latencies recordings carry; answer the others at once (a watched case:
    /// its rhythm is the one recorded, nothing is invented). `set_pace(0, 0)` turns it off.
    pub fn pace_recorded_only(&self) {
        if let Ok(mut pace) = self.pace_ms.lock() {
            *pace = (0, 0);
        }
        self.recorded_pace
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn delay_for(&self, req: &Request, recorded: Option<u64>) -> Duration {
        use std::hash::{Hash, Hasher};
        let (lo, hi) = self.pace_ms.lock().map(|p| *p).unwrap_or((0, 0));
        if let Some(ms) = recorded
            && self
                .recorded_pace
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            // A hung call in the recording must not stall a demo for minutes.
            return Duration::from_millis(ms.min(MAX_RECORDED_WAIT_MS));
        }
        if hi == 0 {
            return Duration::ZERO;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&req.integration, &req.method, &req.path, &req.query).hash(&mut hasher);
        Duration::from_millis(lo + hasher.finish() % (hi - lo + 1))
    }

    /// From now on these recordings win over everything loaded before (an effect of an action).
    pub fn overlay(&self, recordings: Vec<Recording>) {
        self.overlay_stored(recordings.into_iter().map(Stored::from).collect());
    }

    /// [`ReplayTransport::overlay`] with bodies still JSON text.
    pub fn overlay_raw(&self, recordings: Vec<RawRecording>) {
        self.overlay_stored(recordings.into_iter().map(Stored::from).collect());
    }

    fn overlay_stored(&self, recordings: Vec<Stored>) {
        if let Ok(mut st) = self.state.lock() {
            st.layers.push(recordings);
        }
    }

    /// Finds the answer: the newest layer with a match; in it the most specific recording (most query
    /// pairs); among equals the first not yet played, else the last.
    fn answer(&self, req: &Request) -> Option<Stored> {
        let mut st = self.state.lock().ok()?;
        let mut chosen: Option<(usize, usize)> = None;
        for (li, layer) in st.layers.iter().enumerate().rev() {
            let candidates: Vec<usize> = layer
                .iter()
                .enumerate()
                .filter(|(_, r)| r.matches(req))
                .map(|(i, _)| i)
                .collect();
            let Some(best) = candidates.iter().map(|&i| layer[i].pairs.len()).max() else {
                continue;
            };
            let top: Vec<usize> = candidates
                .into_iter()
                .filter(|&i| layer[i].pairs.len() == best)
                .collect();
            let pick = top
                .iter()
                .copied()
                .find(|&i| !st.used.contains_key(&(li, i)))
                .or_else(|| top.last().copied());
            chosen = pick.map(|i| (li, i));
            break;
        }
        let (li, i) = chosen?;
        *st.used.entry((li, i)).or_insert(0) += 1;
        st.layers.get(li).and_then(|l| l.get(i)).cloned()
    }
}

impl Transport for ReplayTransport {
    fn send<'a>(&'a self, req: &'a Request) -> BoxFuture<'a, Result<Response, IntegrationError>> {
        Box::pin(async move {
            let found = self.answer(req);
            {
                use std::sync::atomic::Ordering::Relaxed;
                self.traffic.requests.fetch_add(1, Relaxed);
                if let Some(rec) = &found
                    && self.traffic.count_bytes.load(Relaxed)
                {
                    let started = std::time::Instant::now();
                    let size = match rec.raw_len() {
                        Some(n) => n as u64,
                        None => wire_size(&rec.body()),
                    };
                    self.traffic.bytes.fetch_add(size, Relaxed);
                    let spent = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
                    self.traffic.counting_ns.fetch_add(spent, Relaxed);
                }
            }
            let delay = self.delay_for(req, found.as_ref().and_then(|r| r.latency_ms));
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let rec = found.ok_or_else(|| req.error(ErrorKind::NoRecording))?;
            let mut body = rec.body();
            // Cases come from elsewhere; mask them like any live answer.
            body.redact(&self.redactor);
            Ok(Response {
                status: rec.status,
                body,
            })
        })
    }

    fn has(&self, integration: &str) -> bool {
        self.state
            .lock()
            .map(|st| {
                st.layers.iter().flatten().any(|r| {
                    r.integration == integration
                        || r.integration
                            .strip_prefix(integration)
                            .is_some_and(|rest| rest.starts_with('@'))
                })
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::transport::recording::tests::rec;
    use serde_json::json;

    #[tokio::test(start_paused = true)]
    async fn paced_replay_answers_after_a_stable_delay_in_range() {
        let t = ReplayTransport::new(vec![rec("/api/v1/rules", json!({}), json!("r"))]);
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "unpaced replay must not wait"
        );

        t.set_pace(Duration::from_millis(150), Duration::from_millis(900));
        let delay = t.delay_for(&req, None);
        assert!((150..=900).contains(&delay.as_millis()), "{delay:?}");
        assert_eq!(
            delay,
            t.delay_for(&req, None),
            "the same request gets the same delay"
        );
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), delay);
    }

    #[tokio::test(start_paused = true)]
    async fn paced_replay_waits_the_recorded_latency_and_a_skip_drops_it() {
        let mut slow = rec("/api/v1/rules", json!({}), json!("r"));
        slow.latency_ms = Some(2_400);
        let t = ReplayTransport::new(vec![slow]);
        let req = Request::new("prometheus", "GET", "/api/v1/rules");
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO, "unpaced: at once");
        t.set_pace(Duration::from_millis(150), Duration::from_millis(900));
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::from_millis(2_400));
        // The skip-ahead key turns pacing off; recorded latencies no longer wait either.
        t.set_pace(Duration::ZERO, Duration::ZERO);
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO);
        // A watched case waits what was recorded, and invents nothing for the rest.
        t.pace_recorded_only();
        let started = tokio::time::Instant::now();
        assert!(t.send(&req).await.is_ok());
        assert_eq!(started.elapsed(), Duration::from_millis(2_400));
        let bare = Request::new("prometheus", "GET", "/api/v1/other");
        t.overlay(vec![rec("/api/v1/other", json!({}), json!("o"))]);
        let started = tokio::time::Instant::now();
        assert!(t.send(&bare).await.is_ok());
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn most_specific_recording_wins_and_extra_request_pairs_are_tolerated() {
        let t = ReplayTransport::new(vec![
            rec("/api/v1/query", json!({}), json!("generic")),
            rec("/api/v1/query", json!({"query": "up"}), json!("up")),
        ]);
        let req = Request::get("prometheus", "/api/v1/query")
            .query("query", "up")
            .query("time", "1");
        assert_eq!(
            t.send(&req).await.map(|r| r.body),
            Ok(Body::Json(json!("up")))
        );
        let other = Request::get("prometheus", "/api/v1/query").query("query", "x");
        assert_eq!(
            t.send(&other).await.map(|r| r.body),
            Ok(Body::Json(json!("generic")))
        );
        let missing = Request::get("prometheus", "/api/v1/rules");
        let err = t.send(&missing).await.err();
        assert!(err.is_some_and(|e| e.is_no_recording()));
    }

    #[tokio::test]
    async fn overlays_win_and_repeats_play_in_order() {
        let t = ReplayTransport::new(vec![
            rec("/a", json!({}), json!(1)),
            rec("/a", json!({}), json!(2)),
        ]);
        let req = Request::get("prometheus", "/a");
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(t.send(&req).await.map(|r| r.body).ok());
        }
        assert_eq!(
            seen,
            vec![
                Some(Body::Json(json!(1))),
                Some(Body::Json(json!(2))),
                Some(Body::Json(json!(2)))
            ]
        );
        t.overlay(vec![rec("/a", json!({}), json!("after"))]);
        assert_eq!(
            t.send(&req).await.map(|r| r.body),
            Ok(Body::Json(json!("after")))
        );
    }
}
