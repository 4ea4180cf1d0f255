//! `sitrep history`'s grouping: past incidents by alert and subject, with counts, verdicts, what
//! fixed them and how long they took.

use crate::model::{Category, PastIncident};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Which past incidents to show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The alert's name, exactly (case-insensitive).
    pub alert: Option<String>,
    /// Text anywhere in a subject object's `Kind/name`, its namespace, its cluster, or the title.
    pub subject: Option<String>,
    /// Only sessions started at or after this.
    pub since: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn admits(&self, s: &PastIncident) -> bool {
        if let Some(a) = &self.alert
            && !s.alertname.eq_ignore_ascii_case(a)
        {
            return false;
        }
        if let Some(text) = &self.subject {
            let t = text.to_lowercase();
            let hit = s.title.to_lowercase().contains(&t)
                || s.subject.iter().any(|o| {
                    o.reference().to_lowercase().contains(&t)
                        || o.namespace.to_lowercase().contains(&t)
                })
                || s.cluster
                    .as_ref()
                    .is_some_and(|c| c.to_lowercase().contains(&t));
            if !hit {
                return false;
            }
        }
        self.since.is_none_or(|since| s.started >= since)
    }
}

/// An action that fixed the group's incidents, and how often.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fix {
    pub action: String,
    pub times: usize,
    pub last_verified: Option<DateTime<Utc>>,
}

/// One alert on one subject, over its occurrences.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    /// The alert's name; for a described problem, empty.
    pub alert: String,
    /// The main subject object (`Deployment/checkout-api`), or empty.
    pub subject: String,
    /// The Kubernetes cluster the subject was read in, or empty when the sessions name none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    pub occurrences: usize,
    pub first: DateTime<Utc>,
    pub last: DateTime<Utc>,
    /// The newest verdict.
    pub last_category: Option<Category>,
    pub last_root_cause: String,
    /// Every verdict category with its count, most frequent first.
    pub verdicts: Vec<(Category, usize)>,
    pub fixes: Vec<Fix>,
    /// Mean seconds from start to end.
    pub mean_duration: f64,
    pub notes: Vec<String>,
    /// Newest first.
    pub sessions: Vec<String>,
}

/// The object a session is mainly about: its first workload, else its first object.
pub fn main_subject(s: &PastIncident) -> String {
    const WORKLOADS: [&str; 6] = [
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "CronJob",
        "Job",
        "Database",
    ];
    s.subject
        .iter()
        .find(|o| WORKLOADS.contains(&o.kind.as_str()))
        .or_else(|| s.subject.iter().find(|o| o.kind != "Namespace"))
        .or(s.subject.first())
        .map(|o| o.reference())
        .unwrap_or_default()
}

/// Group `sessions` (newest first) by alert, main subject and cluster (the same Deployment in
/// two clusters is two histories); groups with the newest
/// occurrence first.
pub fn group(sessions: &[PastIncident], filter: &Filter) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut at: std::collections::HashMap<(String, String, String), usize> = Default::default();
    let mut durations: Vec<f64> = Vec::new();
    for s in sessions.iter().filter(|s| filter.admits(s)) {
        let alert = if s.alertname.is_empty() && s.subject.is_empty() {
            // A described problem with no subject: its title is all there is to group by.
            s.title.clone()
        } else {
            s.alertname.clone()
        };
        let key = (
            alert,
            main_subject(s),
            s.cluster.clone().unwrap_or_default(),
        );
        let i = *at.entry(key.clone()).or_insert_with(|| {
            groups.push(Group {
                alert: key.0.clone(),
                subject: key.1.clone(),
                cluster: key.2.clone(),
                occurrences: 0,
                first: s.started,
                last: s.started,
                // Sessions come newest first: the first of a group holds its last verdict.
                last_category: s.category,
                last_root_cause: s.root_cause.clone(),
                verdicts: Vec::new(),
                fixes: Vec::new(),
                mean_duration: 0.0,
                notes: Vec::new(),
                sessions: Vec::new(),
            });
            durations.push(0.0);
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.occurrences += 1;
        durations[i] += s.duration;
        g.first = g.first.min(s.started);
        g.last = g.last.max(s.started);
        if let Some(c) = s.category {
            match g.verdicts.iter_mut().find(|v| v.0 == c) {
                Some(v) => v.1 += 1,
                None => g.verdicts.push((c, 1)),
            }
        }
        for a in s.fixes() {
            let action = format!("{} {}", a.kind, a.target);
            match g.fixes.iter_mut().find(|f| f.action == action) {
                Some(f) => {
                    f.times += 1;
                    f.last_verified = f.last_verified.max(a.verified_at);
                }
                None => g.fixes.push(Fix {
                    action,
                    times: 1,
                    last_verified: a.verified_at,
                }),
            }
        }
        g.notes.extend(s.notes.iter().map(|n| n.text.clone()));
        g.sessions.push(s.id.clone());
    }
    for (g, total) in groups.iter_mut().zip(durations) {
        g.mean_duration = total / g.occurrences.max(1) as f64;
        g.verdicts.sort_by_key(|v| std::cmp::Reverse(v.1));
        g.fixes.sort_by_key(|f| std::cmp::Reverse(f.times));
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.last));
    groups
}

/// `30m`, `24h`, `7d`, `2w` (a number and a unit: s, m, h, d, w).
pub fn parse_duration(text: &str) -> Result<chrono::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{t:?}: add a unit (s, m, h, d, w), e.g. 7d"))?;
    let (n, unit) = t.split_at(split);
    let n: i64 = n
        .parse()
        .map_err(|_| format!("{t:?}: expected a number then a unit, e.g. 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        other => return Err(format!("{t:?}: unknown unit {other:?} (s, m, h, d, w)")),
    };
    n.checked_mul(secs)
        .and_then(chrono::Duration::try_seconds)
        .ok_or_else(|| format!("{t:?}: too long"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PastAction, SubjectObject};

    fn past(id: &str, hours: i64, alert: &str, subject: &str, fixed: bool) -> PastIncident {
        PastIncident {
            id: id.into(),
            started: DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::hours(hours),
            alertname: alert.into(),
            subject: vec![SubjectObject {
                kind: "Deployment".into(),
                name: subject.into(),
                namespace: "shop".into(),
                how: String::new(),
            }],
            category: Some(Category::CodeDefect),
            root_cause: format!("cause {id}"),
            actions: vec![PastAction {
                kind: "kubernetes.rollout_undo".into(),
                target: format!("deployment/{subject}"),
                status: "executed".into(),
                verified: fixed.then_some(true),
                ..PastAction::default()
            }],
            duration: 60.0,
            ..PastIncident::default()
        }
    }

    #[test]
    fn groups_by_alert_and_subject_with_counts_and_fixes() {
        let all = vec![
            past("c", 3, "Down", "checkout", true),
            past("x", 2, "Down", "search", false),
            past("b", 1, "Down", "checkout", false),
            past("a", 0, "Down", "checkout", true),
        ];
        let groups = group(&all, &Filter::default());
        assert_eq!(groups.len(), 2);
        let g = &groups[0];
        assert_eq!(
            (g.alert.as_str(), g.subject.as_str(), g.occurrences),
            ("Down", "Deployment/checkout", 3)
        );
        assert_eq!(g.last_root_cause, "cause c");
        assert_eq!(g.fixes[0].times, 2);
        assert_eq!(g.sessions, ["c", "b", "a"]);
        let only = Filter {
            subject: Some("search".into()),
            ..Filter::default()
        };
        assert_eq!(group(&all, &only).len(), 1);
        let recent = Filter {
            since: Some(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::hours(2)),
            ..Filter::default()
        };
        assert_eq!(
            group(&all, &recent)
                .iter()
                .map(|g| g.occurrences)
                .sum::<usize>(),
            2
        );
    }

    #[test]
    fn the_same_subject_in_two_clusters_is_two_groups_each_naming_its_cluster() {
        let in_cluster = |id: &str, hours: i64, cluster: &str| PastIncident {
            cluster: Some(cluster.into()),
            ..past(id, hours, "Down", "checkout", false)
        };
        let all = vec![
            in_cluster("u2", 2, "prod-us"),
            in_cluster("e", 1, "prod-eu"),
            in_cluster("u1", 0, "prod-us"),
        ];
        let groups = group(&all, &Filter::default());
        let named: Vec<(&str, usize)> = groups
            .iter()
            .map(|g| (g.cluster.as_str(), g.occurrences))
            .collect();
        assert_eq!(named, [("prod-us", 2), ("prod-eu", 1)]);
        let json = serde_json::to_string(&groups[0]).expect("json");
        assert!(json.contains("\"cluster\":\"prod-us\""), "{json}");
        let only = Filter {
            subject: Some("prod-eu".into()),
            ..Filter::default()
        };
        assert_eq!(group(&all, &only)[0].sessions, ["e"]);
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("7d"), Ok(chrono::Duration::days(7)));
        assert_eq!(parse_duration("90m"), Ok(chrono::Duration::minutes(90)));
        assert!(parse_duration("7").is_err());
        assert!(parse_duration("7y").is_err());
    }
}
