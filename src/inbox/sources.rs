//! Polling the sources: Alertmanager v2 groups, Prometheus alerts, PagerDuty incidents, Datadog
//! monitors; health and backoff per source.

use super::{AlertState, InboxAlert, Source, fingerprint};
use crate::integrations::{AlertGroup, IntegrationError, Monitor, PdIncident};
use crate::model::AlertInfo;
use crate::world::World;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How one source answered the last poll.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct SourceHealth {
    pub source: Source,
    /// `None` when it answered; else why not.
    pub error: Option<String>,
    /// Alerts it reported (0 on error).
    pub alerts: usize,
    pub checked_at: DateTime<Utc>,
    pub latency_ms: u64,
    /// Consecutive failed polls.
    pub failures: u32,
}

/// One poll of every source: alerts deduplicated by fingerprint (Alertmanager's view wins over
/// Prometheus', which lacks silences), and each source's health.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub alerts: Vec<InboxAlert>,
    pub health: Vec<SourceHealth>,
}

/// Exponential backoff per source: after `n` consecutive failures, wait `interval * 2^n` (at most `max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub interval: Duration,
    pub max: Duration,
}

impl Backoff {
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.min(8);
        self.interval
            .saturating_mul(factor)
            .min(self.max.max(self.interval))
    }
}

/// The configured sources, over a (live) world's clients.
#[derive(Clone)]
pub struct Sources {
    world: Arc<World>,
    /// PagerDuty services whose incidents are listed (all when empty).
    pub pagerduty_services: Vec<String>,
    /// Budget for one source's answer.
    pub timeout: Duration,
    /// Datadog monitors listed: only those with all of these tags (all when empty).
    pub datadog_tags: Vec<String>,
}

impl Sources {
    pub fn new(world: Arc<World>, pagerduty_services: Vec<String>, timeout: Duration) -> Self {
        Sources {
            world,
            pagerduty_services,
            timeout,
            datadog_tags: Vec::new(),
        }
    }

    /// Lists only the Datadog monitors with all of these tags.
    pub fn with_datadog_tags(mut self, tags: Vec<String>) -> Self {
        self.datadog_tags = tags;
        self
    }

    /// The alert sources this world can reach, in a fixed order.
    pub fn configured(&self) -> Vec<Source> {
        [
            Source::Alertmanager,
            Source::Prometheus,
            Source::PagerDuty,
            Source::Datadog,
        ]
        .into_iter()
        .filter(|s| self.world.has(s.name()))
        .collect()
    }

    /// Asks every configured source at once, each within `timeout`; a source that fails or is slow
    /// is reported in the health list, never an error for the whole poll.
    pub async fn poll(&self) -> Snapshot {
        self.poll_some(&self.configured(), &[]).await
    }

    /// Polls `which` sources; `previous` health carries failure counts forward.
    pub async fn poll_some(&self, which: &[Source], previous: &[SourceHealth]) -> Snapshot {
        let tasks = which.iter().map(|s| self.poll_one(*s));
        let results = futures::future::join_all(tasks).await;
        let mut snapshot = Snapshot::default();
        let mut by_source: Vec<(Source, Vec<InboxAlert>)> = Vec::new();
        for (source, started, result) in results {
            let prior = previous
                .iter()
                .find(|h| h.source == source)
                .map(|h| h.failures)
                .unwrap_or(0);
            let latency_ms = started.elapsed().as_millis() as u64;
            match result {
                Ok(alerts) => {
                    snapshot.health.push(SourceHealth {
                        source,
                        error: None,
                        alerts: alerts.len(),
                        checked_at: Utc::now(),
                        latency_ms,
                        failures: 0,
                    });
                    by_source.push((source, alerts));
                }
                Err(e) => snapshot.health.push(SourceHealth {
                    source,
                    error: Some(e),
                    alerts: 0,
                    checked_at: Utc::now(),
                    latency_ms,
                    failures: prior + 1,
                }),
            }
        }
        snapshot.alerts = merge(by_source);
        snapshot
    }

    async fn poll_one(&self, source: Source) -> (Source, Instant, Result<Vec<InboxAlert>, String>) {
        let started = Instant::now();
        let fetch = async {
            let r: Result<Vec<InboxAlert>, IntegrationError> = match source {
                Source::Alertmanager => self
                    .world
                    .alertmanager()
                    .alert_groups()
                    .await
                    .map(|g| from_groups(&g)),
                Source::Prometheus => self
                    .world
                    .prometheus()
                    .alerts()
                    .await
                    .map(|a| a.iter().filter_map(from_prometheus).collect()),
                Source::PagerDuty => self
                    .world
                    .pagerduty()
                    .open_incidents(&self.pagerduty_services)
                    .await
                    .map(|i| i.iter().map(from_pagerduty).collect()),
                Source::Datadog => self
                    .world
                    .datadog()
                    .monitors(&self.datadog_tags, None)
                    .await
                    .map(|m| m.iter().flat_map(from_monitor).collect()),
            };
            r.map_err(|e| e.to_string())
        };
        let result = match tokio::time::timeout(self.timeout, fetch).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "{}: no answer within {:.1}s",
                source.name(),
                self.timeout.as_secs_f64()
            )),
        };
        (source, started, result)
    }
}

/// Polls each source on its own schedule: every `interval` while it answers, backing off while it
/// fails. Between polls a source's last answer stands, so one flapping source does not empty the inbox.
pub struct Poller {
    sources: Sources,
    backoff: Backoff,
    last: BTreeMap<Source, Vec<InboxAlert>>,
    health: BTreeMap<Source, SourceHealth>,
    next: BTreeMap<Source, Instant>,
}

impl Poller {
    pub fn new(sources: Sources, backoff: Backoff) -> Self {
        Poller {
            sources,
            backoff,
            last: BTreeMap::new(),
            health: BTreeMap::new(),
            next: BTreeMap::new(),
        }
    }

    /// When the next source is due.
    pub fn next_due(&self) -> Instant {
        let now = Instant::now();
        self.sources
            .configured()
            .iter()
            .map(|s| self.next.get(s).copied().unwrap_or(now))
            .min()
            .unwrap_or(now + self.backoff.interval)
    }

    /// Polls the sources that are due and returns the whole picture.
    pub async fn poll_due(&mut self) -> Snapshot {
        let now = Instant::now();
        let due: Vec<Source> = self
            .sources
            .configured()
            .into_iter()
            .filter(|s| self.next.get(s).is_none_or(|t| *t <= now))
            .collect();
        let results =
            futures::future::join_all(due.iter().map(|s| self.sources.poll_one(*s))).await;
        for (source, started, result) in results {
            let failures = match &result {
                Ok(_) => 0,
                Err(_) => self.health.get(&source).map_or(0, |h| h.failures) + 1,
            };
            let (error, count) = match result {
                Ok(alerts) => {
                    let n = alerts.len();
                    self.last.insert(source, alerts);
                    (None, n)
                }
                Err(e) => (Some(e), self.last.get(&source).map_or(0, Vec::len)),
            };
            self.health.insert(
                source,
                SourceHealth {
                    source,
                    error,
                    alerts: count,
                    checked_at: Utc::now(),
                    latency_ms: started.elapsed().as_millis() as u64,
                    failures,
                },
            );
            self.next
                .insert(source, Instant::now() + self.backoff.delay(failures));
        }
        Snapshot {
            alerts: merge(self.last.iter().map(|(s, a)| (*s, a.clone())).collect()),
            health: self.health.values().cloned().collect(),
        }
    }
}

/// Merges per-source lists: one entry per fingerprint, the first source in `Source` order winning.
pub fn merge(mut by_source: Vec<(Source, Vec<InboxAlert>)>) -> Vec<InboxAlert> {
    by_source.sort_by_key(|(s, _)| *s);
    let mut out: Vec<InboxAlert> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (source, alerts) in by_source {
        for a in alerts {
            match index.get(&a.fingerprint) {
                Some(&i) => {
                    if out[i].source != source && !out[i].also_in.contains(&source) {
                        out[i].also_in.push(source);
                    }
                }
                None => {
                    index.insert(a.fingerprint.clone(), out.len());
                    out.push(a);
                }
            }
        }
    }
    out
}

fn title_of(name: &str, annotations: &BTreeMap<String, String>) -> String {
    match annotations.get("summary").filter(|s| !s.is_empty()) {
        Some(s) => s.clone(),
        None => name.to_string(),
    }
}

/// Alertmanager groups to inbox alerts: active ones fire; suppressed ones say by what.
pub fn from_groups(groups: &[AlertGroup]) -> Vec<InboxAlert> {
    let mut out = Vec::new();
    for g in groups {
        for a in &g.alerts {
            let state = if !a.silenced_by.is_empty() {
                AlertState::Silenced
            } else if !a.inhibited_by.is_empty() {
                AlertState::Inhibited
            } else {
                AlertState::Firing
            };
            let name = a.labels.get("alertname").cloned().unwrap_or_default();
            out.push(InboxAlert {
                source: Source::Alertmanager,
                title: title_of(&name, &a.annotations),
                alertname: name,
                severity: a.labels.get("severity").cloned().unwrap_or_default(),
                fingerprint: if a.fingerprint.is_empty() {
                    fingerprint(&a.labels)
                } else {
                    a.fingerprint.clone()
                },
                labels: a.labels.clone(),
                annotations: a.annotations.clone(),
                state,
                starts_at: a.starts_at,
                silenced_by: a.silenced_by.clone(),
                inhibited_by: a.inhibited_by.clone(),
                url: a.generator_url.clone(),
                incident_id: None,
                assignees: Vec::new(),
                also_in: Vec::new(),
            });
        }
    }
    out
}

/// A Prometheus alert; pending ones are not firing yet and are left out.
pub fn from_prometheus(a: &AlertInfo) -> Option<InboxAlert> {
    if a.state != "firing" {
        return None;
    }
    Some(InboxAlert {
        source: Source::Prometheus,
        alertname: a.name.clone(),
        title: title_of(&a.name, &a.annotations),
        severity: a.labels.get("severity").cloned().unwrap_or_default(),
        fingerprint: fingerprint(&a.labels),
        labels: a.labels.clone(),
        annotations: a.annotations.clone(),
        state: AlertState::Firing,
        starts_at: a.active_at,
        silenced_by: Vec::new(),
        inhibited_by: Vec::new(),
        url: String::new(),
        incident_id: None,
        assignees: Vec::new(),
        also_in: Vec::new(),
    })
}

/// A PagerDuty incident: labels carry its service and urgency; its severity is its urgency.
pub fn from_pagerduty(i: &PdIncident) -> InboxAlert {
    let mut labels = BTreeMap::new();
    if !i.service.is_empty() {
        labels.insert("service".to_string(), i.service.clone());
    }
    if !i.urgency.is_empty() {
        labels.insert("urgency".to_string(), i.urgency.clone());
    }
    InboxAlert {
        source: Source::PagerDuty,
        alertname: i.title.clone(),
        title: i.title.clone(),
        labels,
        annotations: BTreeMap::new(),
        state: if i.status == "acknowledged" {
            AlertState::Acknowledged
        } else {
            AlertState::Triggered
        },
        starts_at: i.created_at,
        fingerprint: format!("pagerduty/{}", i.id),
        severity: i.urgency.clone(),
        silenced_by: Vec::new(),
        inhibited_by: Vec::new(),
        url: i.html_url.clone(),
        incident_id: Some(i.id.clone()),
        assignees: i.assignees.clone(),
        also_in: Vec::new(),
    }
}

/// A Datadog monitor as inbox rows: one per group in Alert, Warn or No Data (the monitor itself
/// when it has no groups), carrying the monitor's query and ID so an investigation reads them.
pub fn from_monitor(m: &Monitor) -> Vec<InboxAlert> {
    use crate::integrations::datadog::{firing_state, tag_labels};
    use crate::model::monitor::{MONITOR_ID, MONITOR_QUERY, fingerprint as monitor_fingerprint};
    let groups: Vec<(String, String, Option<DateTime<Utc>>)> = if m.groups.is_empty() {
        vec![("*".into(), m.overall_state.clone(), None)]
    } else {
        m.groups
            .iter()
            .map(|g| (g.name.clone(), g.status.clone(), g.last_triggered))
            .collect()
    };
    let (monitor_labels, _) = tag_labels(&m.tags);
    groups
        .into_iter()
        .filter(|(_, status, _)| firing_state(status))
        .map(|(group, status, at)| {
            let scope: Vec<String> = group
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| t != "*")
                .collect();
            let (scope, _) = tag_labels(&scope);
            let mut labels = monitor_labels.clone();
            labels.extend(scope.clone());
            labels.insert("alertname".into(), m.name.clone());
            labels.insert(MONITOR_ID.into(), m.id.to_string());
            let severity = match (status.as_str(), m.priority) {
                (_, Some(1 | 2)) => "critical",
                ("Warn", _) | (_, Some(3)) => "warning",
                (_, Some(_)) => "info",
                _ => "",
            };
            if !severity.is_empty() {
                labels
                    .entry("severity".into())
                    .or_insert_with(|| severity.into());
            }
            let mut annotations = BTreeMap::new();
            if !m.query.is_empty() {
                annotations.insert(MONITOR_QUERY.to_string(), m.query.clone());
            }
            let title = if group == "*" {
                format!("{} ({status})", m.name)
            } else {
                format!("{} on {group} ({status})", m.name)
            };
            annotations.insert("summary".into(), title.clone());
            InboxAlert {
                source: Source::Datadog,
                alertname: m.name.clone(),
                title,
                labels,
                annotations,
                state: AlertState::Firing,
                starts_at: at,
                fingerprint: monitor_fingerprint(&m.id.to_string(), scope),
                severity: severity.to_string(),
                silenced_by: Vec::new(),
                inhibited_by: Vec::new(),
                url: String::new(),
                incident_id: None,
                assignees: Vec::new(),
                also_in: Vec::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = Backoff {
            interval: Duration::from_secs(15),
            max: Duration::from_secs(300),
        };
        assert_eq!(b.delay(0), Duration::from_secs(15));
        assert_eq!(b.delay(2), Duration::from_secs(60));
        assert_eq!(b.delay(30), Duration::from_secs(300));
    }

    #[test]
    fn merge_keeps_one_alert_per_fingerprint() {
        let mut labels = BTreeMap::new();
        labels.insert("alertname".to_string(), "X".to_string());
        let info = AlertInfo {
            name: "X".into(),
            state: "firing".into(),
            labels: labels.clone(),
            ..AlertInfo::default()
        };
        let prom = from_prometheus(&info).map(|a| vec![a]).unwrap_or_default();
        let group = AlertGroup {
            alerts: vec![crate::integrations::GroupedAlert {
                fingerprint: fingerprint(&labels),
                labels,
                silenced_by: vec!["s1".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        let am = from_groups(&[group]);
        let merged = merge(vec![(Source::Prometheus, prom), (Source::Alertmanager, am)]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].source, Source::Alertmanager);
        assert_eq!(merged[0].state, AlertState::Silenced);
        assert_eq!(merged[0].also_in, vec![Source::Prometheus]);
        let pending = AlertInfo {
            state: "pending".into(),
            ..info
        };
        assert!(from_prometheus(&pending).is_none());
    }
}
