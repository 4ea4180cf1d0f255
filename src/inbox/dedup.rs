//! Deduplication: Alertmanager-compatible label fingerprints, and which alerts already have an investigation.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The fingerprint Alertmanager gives a label set, so the same alert seen in Prometheus and in
/// Alertmanager is recognised as one (defined once, in the model, where sessions index it too).
pub use crate::model::label_fingerprint as fingerprint;

/// Whether a delivery needs a new investigation.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// These fingerprints are new: start one investigation for them.
    New(Vec<String>),
    /// Everything in the delivery is already under investigation in this session.
    Known(String),
}

/// Alerts (by fingerprint) and groups (by group key) already under investigation, and the session
/// investigating them. A repeated webhook delivery claims nothing new.
#[derive(Clone, Debug, Default)]
pub struct Deduper {
    by_fingerprint: HashMap<String, String>,
    by_group: HashMap<String, String>,
    /// Sessions that ended, and when: their claims expire (see [`Deduper::expire`]).
    finished: HashMap<String, Instant>,
}

impl Deduper {
    pub fn new() -> Self {
        Self::default()
    }

    /// Which of `fingerprints` (delivered under `group_key`) nobody investigates yet. An empty delivery
    /// counts as new only when its group is.
    pub fn check(&self, group_key: &str, fingerprints: &[String]) -> Claim {
        let new: Vec<String> = fingerprints
            .iter()
            .filter(|f| !self.by_fingerprint.contains_key(*f))
            .cloned()
            .collect();
        if !new.is_empty() {
            return Claim::New(new);
        }
        let known = fingerprints
            .iter()
            .find_map(|f| self.by_fingerprint.get(f))
            .or_else(|| self.by_group.get(group_key));
        match known {
            Some(session) => Claim::Known(session.clone()),
            None => Claim::New(Vec::new()),
        }
    }

    /// Records that `session` investigates these alerts and this group.
    pub fn record(&mut self, group_key: &str, fingerprints: &[String], session: &str) {
        for f in fingerprints {
            self.by_fingerprint.insert(f.clone(), session.to_string());
        }
        if !group_key.is_empty() {
            self.by_group
                .entry(group_key.to_string())
                .or_insert_with(|| session.to_string());
        }
    }

    /// Undo [`Deduper::record`] for these fingerprints (all of `session`'s when `None`).
    pub fn forget(&mut self, session: &str, fingerprints: Option<&[String]>) {
        match fingerprints {
            Some(fps) => {
                for f in fps {
                    if self.by_fingerprint.get(f).is_some_and(|s| s == session) {
                        self.by_fingerprint.remove(f);
                    }
                }
                if !self.by_fingerprint.values().any(|s| s == session) {
                    self.by_group.retain(|_, s| s != session);
                }
            }
            None => {
                self.by_fingerprint.retain(|_, s| s != session);
                self.by_group.retain(|_, s| s != session);
            }
        }
    }

    /// Marks `session` ended at `at`; its claims stay until [`Deduper::expire`] drops them.
    pub fn finish(&mut self, session: &str, at: Instant) {
        if self.by_fingerprint.values().any(|s| s == session)
            || self.by_group.values().any(|s| s == session)
        {
            self.finished.insert(session.to_string(), at);
        }
    }

    /// Forgets the claims of sessions that ended more than `ttl` before `now`: a page still or
    /// again firing after that is investigated anew, and a long run's claims stay bounded.
    /// Returns how many sessions were forgotten.
    pub fn expire(&mut self, now: Instant, ttl: Duration) -> usize {
        let old: Vec<String> = self
            .finished
            .iter()
            .filter(|(_, at)| now.saturating_duration_since(**at) >= ttl)
            .map(|(s, _)| s.clone())
            .collect();
        for s in &old {
            self.finished.remove(s);
            self.forget(s, None);
        }
        old.len()
    }

    /// The session investigating an alert, if any.
    pub fn session_of(&self, fingerprint: &str) -> Option<&str> {
        self.by_fingerprint.get(fingerprint).map(String::as_str)
    }

    /// Every (fingerprint, session) pair.
    pub fn sessions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_fingerprint
            .iter()
            .map(|(f, s)| (f.as_str(), s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn fingerprint_is_fnv1a_over_sorted_labels() {
        // The empty set hashes to the FNV-64 offset basis, as in Prometheus' common/model.
        assert_eq!(fingerprint(&BTreeMap::new()), "cbf29ce484222325");
        let a = fingerprint(&labels(&[("alertname", "X"), ("severity", "critical")]));
        let b = fingerprint(&labels(&[("severity", "critical"), ("alertname", "X")]));
        assert_eq!(a, b);
        assert_ne!(a, fingerprint(&labels(&[("alertname", "X")])));
        // The separator keeps `a=bc` and `ab=c` apart.
        assert_ne!(
            fingerprint(&labels(&[("a", "bc")])),
            fingerprint(&labels(&[("ab", "c")]))
        );
    }

    #[test]
    fn repeated_deliveries_claim_nothing() {
        let mut d = Deduper::new();
        let fps = vec!["f1".to_string(), "f2".to_string()];
        assert_eq!(d.check("g", &fps), Claim::New(fps.clone()));
        d.record("g", &fps, "s1");
        assert_eq!(d.check("g", &fps), Claim::Known("s1".into()));
        let grown = vec!["f1".to_string(), "f3".to_string()];
        assert_eq!(d.check("g", &grown), Claim::New(vec!["f3".into()]));
        assert_eq!(d.check("g", &[]), Claim::Known("s1".into()));
        assert_eq!(d.check("other", &[]), Claim::New(vec![]));
        assert_eq!(d.session_of("f2"), Some("s1"));
    }

    #[test]
    fn a_copy_of_the_claims_answers_as_the_originals() {
        let mut d = Deduper::new();
        let t0 = Instant::now();
        d.record("g1", &["a".to_string(), "b".to_string()], "s1");
        d.record("g2", &["c".to_string()], "s2");
        d.finish("s1", t0);
        let mut c = d.clone();
        for (group, fps) in [
            ("g1", vec!["a".to_string()]),
            ("g2", vec![]),
            ("g3", vec![]),
        ] {
            assert_eq!(c.check(group, &fps), d.check(group, &fps), "{group}");
        }
        let mut pairs: Vec<_> = c.sessions().collect();
        pairs.sort();
        assert_eq!(pairs, vec![("a", "s1"), ("b", "s1"), ("c", "s2")]);
        // The ended session's end time came along: its claims still expire.
        assert_eq!(
            c.expire(t0 + Duration::from_secs(120), Duration::from_secs(60)),
            1
        );
        assert_eq!(c.session_of("a"), None);
        assert_eq!(c.session_of("c"), Some("s2"));
    }

    #[test]
    fn claims_of_ended_sessions_expire_and_running_ones_never_do() {
        let mut d = Deduper::new();
        let t0 = Instant::now();
        d.record("g1", &["a".to_string(), "b".to_string()], "s1");
        d.record("g2", &["c".to_string()], "s2");
        // Running sessions never expire, however old.
        assert_eq!(
            d.expire(t0 + Duration::from_secs(86_400), Duration::from_secs(60)),
            0
        );
        d.finish("s1", t0);
        assert_eq!(
            d.expire(t0 + Duration::from_secs(30), Duration::from_secs(60)),
            0
        );
        assert_eq!(d.check("g1", &["a".to_string()]), Claim::Known("s1".into()));
        assert_eq!(
            d.expire(t0 + Duration::from_secs(61), Duration::from_secs(60)),
            1
        );
        assert_eq!(
            d.check("g1", &["a".to_string()]),
            Claim::New(vec!["a".into()])
        );
        assert_eq!(d.sessions().count(), 1);
        assert_eq!(d.session_of("c"), Some("s2"));
        d.finish("s2", t0 + Duration::from_secs(100));
        assert_eq!(
            d.expire(t0 + Duration::from_secs(120), Duration::from_secs(60)),
            0
        );
        assert_eq!(
            d.expire(t0 + Duration::from_secs(160), Duration::from_secs(60)),
            1
        );
        assert_eq!(d.sessions().count(), 0);
    }
}
