//! karma-style grouping: alerts sharing the `group_by` labels form one group, worst first; and a label overview.

use super::{AlertState, InboxAlert, severity_rank};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Alerts sharing the values of the `group_by` labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The `group_by` labels and their values here (a missing label is left out).
    pub labels: BTreeMap<String, String>,
    /// Indices into the alert list, oldest first.
    pub alerts: Vec<usize>,
    /// The worst severity in the group.
    pub severity: String,
    pub oldest: Option<DateTime<Utc>>,
    /// How many alerts are in each state.
    pub states: BTreeMap<AlertState, usize>,
}

impl Group {
    /// A short name: the group labels' values, or `(no labels)`.
    pub fn title(&self) -> String {
        if self.labels.is_empty() {
            return "(no labels)".into();
        }
        self.labels
            .values()
            .cloned()
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Whether every alert in the group is muted or acknowledged.
    pub fn quiet(&self) -> bool {
        self.states.keys().all(|s| !s.needs_attention())
    }
}

/// Groups `alerts` (those at `visible` indices) by `group_by`; groups that need attention come first,
/// then by worst severity, size and name.
pub fn group_alerts(alerts: &[InboxAlert], visible: &[usize], group_by: &[String]) -> Vec<Group> {
    let mut groups: BTreeMap<Vec<(String, String)>, Group> = BTreeMap::new();
    for &i in visible {
        let Some(a) = alerts.get(i) else { continue };
        let key: Vec<(String, String)> = group_by
            .iter()
            .filter_map(|name| {
                let v = if name == "alertname" {
                    Some(a.alertname.clone())
                } else {
                    a.labels.get(name).cloned()
                };
                v.map(|v| (name.clone(), v))
            })
            .collect();
        let g = groups.entry(key.clone()).or_insert_with(|| Group {
            labels: key.into_iter().collect(),
            alerts: Vec::new(),
            severity: String::new(),
            oldest: None,
            states: BTreeMap::new(),
        });
        g.alerts.push(i);
        if severity_rank(&a.severity) > severity_rank(&g.severity) || g.severity.is_empty() {
            g.severity = a.severity.clone();
        }
        g.oldest = match (g.oldest, a.starts_at) {
            (Some(o), Some(s)) => Some(o.min(s)),
            (o, s) => o.or(s),
        };
        *g.states.entry(a.state).or_default() += 1;
    }
    let mut out: Vec<Group> = groups.into_values().collect();
    for g in &mut out {
        g.alerts.sort_by(|x, y| {
            let (a, b) = (&alerts[*x], &alerts[*y]);
            a.starts_at
                .cmp(&b.starts_at)
                .then_with(|| a.fingerprint.cmp(&b.fingerprint))
        });
    }
    out.sort_by(|a, b| {
        a.quiet()
            .cmp(&b.quiet())
            .then_with(|| severity_rank(&b.severity).cmp(&severity_rank(&a.severity)))
            .then_with(|| b.alerts.len().cmp(&a.alerts.len()))
            .then_with(|| a.title().cmp(&b.title()))
    });
    out
}

/// For each label name, its values and how many of the visible alerts carry each, most common first.
pub fn label_overview(
    alerts: &[InboxAlert],
    visible: &[usize],
) -> Vec<(String, Vec<(String, usize)>)> {
    let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for &i in visible {
        let Some(a) = alerts.get(i) else { continue };
        for (k, v) in &a.labels {
            *counts
                .entry(k.clone())
                .or_default()
                .entry(v.clone())
                .or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(k, values)| {
            let mut values: Vec<(String, usize)> = values.into_iter().collect();
            values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            (k, values)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Source;
    use super::*;

    fn alert(name: &str, sev: &str, ns: &str, state: AlertState, age_min: i64) -> InboxAlert {
        let mut labels = BTreeMap::new();
        labels.insert("alertname".to_string(), name.to_string());
        labels.insert("severity".to_string(), sev.to_string());
        labels.insert("namespace".to_string(), ns.to_string());
        InboxAlert {
            source: Source::Alertmanager,
            alertname: name.into(),
            title: name.into(),
            fingerprint: super::super::fingerprint(&labels),
            labels,
            annotations: BTreeMap::new(),
            state,
            starts_at: DateTime::from_timestamp(1_800_000_000 - age_min * 60, 0),
            severity: sev.into(),
            silenced_by: vec![],
            inhibited_by: vec![],
            url: String::new(),
            incident_id: None,
            assignees: vec![],
            also_in: vec![],
        }
    }

    #[test]
    fn groups_put_loud_severe_groups_first() {
        let alerts = vec![
            alert("DiskFull", "warning", "db", AlertState::Firing, 5),
            alert("ApiDown", "critical", "payments", AlertState::Firing, 3),
            alert("ApiDown", "critical", "checkout", AlertState::Firing, 9),
            alert("Noisy", "critical", "x", AlertState::Silenced, 1),
        ];
        let all: Vec<usize> = (0..alerts.len()).collect();
        let groups = group_alerts(&alerts, &all, &["alertname".to_string()]);
        let titles: Vec<String> = groups.iter().map(Group::title).collect();
        assert_eq!(titles, vec!["ApiDown", "DiskFull", "Noisy"]);
        assert_eq!(groups[0].alerts, vec![2, 1], "oldest first");
        assert_eq!(groups[0].oldest, alerts[2].starts_at);
        assert!(groups[2].quiet());
        let by_ns = group_alerts(&alerts, &[0, 1], &["namespace".to_string()]);
        assert_eq!(by_ns.len(), 2);
        let none = group_alerts(&alerts, &all, &["team".to_string()]);
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].title(), "(no labels)");
    }

    #[test]
    fn overview_counts_label_values() {
        let alerts = vec![
            alert("A", "critical", "p", AlertState::Firing, 1),
            alert("B", "critical", "q", AlertState::Firing, 1),
            alert("C", "warning", "p", AlertState::Firing, 1),
        ];
        let o = label_overview(&alerts, &[0, 1, 2]);
        let sev = o
            .iter()
            .find(|(k, _)| k == "severity")
            .map(|(_, v)| v.clone());
        assert_eq!(
            sev,
            Some(vec![
                ("critical".to_string(), 2),
                ("warning".to_string(), 1)
            ])
        );
    }
}
