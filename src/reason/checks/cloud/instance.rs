//! The RDS instance an alert names, and everything read about it indexed for the checks: its
//! class, replicas, CloudWatch series, RDS events and Performance Insights.

use super::stats::{Stats, mean, num};
use crate::model::{CloudFact, EvidenceId, MetricSeries, PiKey, PiSeries, RdsEvent, RdsInstance};
use crate::reason::Ctx;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Alert labels and annotations that name an RDS instance, in every convention seen.
pub const INSTANCE_KEYS: [&str; 6] = [
    "db_instance_identifier",
    "DBInstanceIdentifier",
    "dbinstance_identifier",
    "dbinstanceidentifier",
    "db_instance",
    "rds_instance",
];

/// Evidence kinds the Cloud specialist writes.
pub const EV_INSTANCES: &str = "aws/rds_instances";
pub const EV_EVENTS: &str = "aws/rds_events";
pub const EV_METRICS: &str = "aws/cloudwatch";
pub const EV_PI: &str = "aws/performance_insights";

/// PostgreSQL's default `max_connections` on RDS: LEAST(DBInstanceClassMemory / 9531392, 5000).
pub fn default_max_connections(class: &str) -> Option<f64> {
    let memory = class_memory_bytes(class)?;
    Some((memory / 9_531_392.0).floor().min(5000.0))
}

/// The memory of an instance class, from its family and size (GiB per vCPU by family).
pub fn class_memory_bytes(class: &str) -> Option<f64> {
    let rest = class.strip_prefix("db.")?;
    let (family, size) = rest.split_once('.')?;
    let gib_per_vcpu = match family.chars().next()? {
        'r' | 'x' | 'z' => 8.0,
        'm' => 4.0,
        'c' => 2.0,
        't' => {
            return Some(
                match size {
                    "micro" => 1.0,
                    "small" => 2.0,
                    "medium" => 4.0,
                    "large" => 8.0,
                    "xlarge" => 16.0,
                    "2xlarge" => 32.0,
                    _ => return None,
                } * GIB,
            );
        }
        _ => return None,
    };
    Some(vcpus(size)? * gib_per_vcpu * GIB)
}

/// vCPUs of an instance size (`large` 2, `xlarge` 4, `2xlarge` 8, ...).
pub fn vcpus(size: &str) -> Option<f64> {
    match size {
        // Burstable classes below large have two vCPUs too.
        "micro" | "small" | "medium" | "large" => Some(2.0),
        "xlarge" => Some(4.0),
        s => s
            .strip_suffix("xlarge")
            .and_then(|n| n.parse::<f64>().ok())
            .map(|n| n * 4.0),
    }
}

pub(super) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Everything read about the subject instance, indexed for the analyzers.
pub(crate) struct Rds<'a> {
    pub id: String,
    pub instance: Option<&'a RdsInstance>,
    pub replicas: Vec<String>,
    series: BTreeMap<(String, String), &'a MetricSeries>,
    pub events: Vec<&'a RdsEvent>,
    pub load: Option<&'a PiSeries>,
    pub waits: Vec<&'a PiSeries>,
    pub top_sql: Vec<&'a PiKey>,
    pub top_waits: Vec<&'a PiKey>,
    /// Whether any CloudWatch series was read at all.
    pub has_metrics: bool,
    /// Metrics asked for that CloudWatch had no data for (`instance Metric`): gaps, not zeros.
    pub missing: Vec<String>,
    /// When the symptom began: Performance Insights' load is averaged from then on.
    pub since: Option<DateTime<Utc>>,
    pub(super) ev_metrics: Vec<EvidenceId>,
    pub(super) ev_events: Vec<EvidenceId>,
    pub(super) ev_pi: Vec<EvidenceId>,
    pub(super) ev_instances: Vec<EvidenceId>,
}

/// The RDS instance an alert's labels or annotations name, in any of [`INSTANCE_KEYS`]' spellings
/// (case-blind), with the key that named it.
pub fn instance_label(a: &crate::model::Alert) -> Option<(&'static str, String)> {
    INSTANCE_KEYS.iter().find_map(|k| {
        a.labels
            .iter()
            .chain(a.annotations.iter())
            .find(|(key, v)| key.eq_ignore_ascii_case(k) && !v.trim().is_empty())
            .map(|(_, v)| (*k, v.trim().to_string()))
    })
}

/// Read replicas an alert names (`read_replica`, `replica`, `replica_identifier`).
pub fn replicas_named(a: &crate::model::Alert) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in ["read_replica", "replica", "replica_identifier"] {
        if let Some(r) = a.labels.get(k).or_else(|| a.annotations.get(k))
            && !r.trim().is_empty()
            && !out.iter().any(|x| x == r.trim())
        {
            out.push(r.trim().to_string());
        }
    }
    out
}

/// The instance the alert or problem names: a label or annotation, else a described instance
/// whose identifier the alert's text or the problem names as a whole word.
pub(crate) fn named_instance(ctx_obs: &crate::reason::Observations) -> Option<(String, String)> {
    if let Some((k, v)) = ctx_obs.alert.as_ref().and_then(instance_label) {
        return Some((v, format!("label {k}")));
    }
    let mut text = String::new();
    if let Some(a) = &ctx_obs.alert {
        for v in a.labels.values().chain(a.annotations.values()) {
            text.push_str(v);
            text.push('\n');
        }
    }
    if let Some(p) = &ctx_obs.problem {
        text.push_str(p);
    }
    let text = text.to_lowercase();
    let mut ids: Vec<&str> = ctx_obs
        .cloud
        .iter()
        .filter_map(|f| match f {
            CloudFact::Instance(i) => Some(i.id.as_str()),
            _ => None,
        })
        .collect();
    // Longest first: `orders-prod-replica-1` before `orders-prod`.
    ids.sort_by_key(|i| std::cmp::Reverse(i.len()));
    ids.into_iter()
        .find(|id| crate::reason::subject::mentions(&text, &id.to_lowercase()))
        .map(|id| (id.to_string(), "named in the alert or problem".to_string()))
}

impl<'a> Rds<'a> {
    pub(crate) fn new(ctx: &Ctx<'a>) -> Option<Rds<'a>> {
        let obs = ctx.obs;
        let (id, _) = named_instance(obs)?;
        let instance = obs.cloud.iter().find_map(|f| match f {
            CloudFact::Instance(i) if i.id == id => Some(i.as_ref()),
            _ => None,
        });
        let mut replicas: Vec<String> = instance.map(|i| i.replicas.clone()).unwrap_or_default();
        // A replica the alert names belongs to the subject too.
        for r in obs.alert.iter().flat_map(replicas_named) {
            if !replicas.contains(&r) {
                replicas.push(r);
            }
        }
        let mut series = BTreeMap::new();
        let mut events = Vec::new();
        let mut load = None;
        let mut waits = Vec::new();
        let mut top_sql = Vec::new();
        let mut top_waits = Vec::new();
        let mut missing = Vec::new();
        let mine = |i: &str| i == id || replicas.iter().any(|r| r == i);
        for f in &obs.cloud {
            match f {
                CloudFact::Metric(m) if mine(&m.instance) && m.points.is_empty() => {
                    let gap = format!("{} {}", m.instance, m.metric);
                    if !missing.contains(&gap) {
                        missing.push(gap);
                    }
                }
                CloudFact::Metric(m) if mine(&m.instance) && !m.points.is_empty() => {
                    series.insert((m.instance.clone(), m.metric.clone()), m);
                }
                CloudFact::Event(e) if mine(&e.source) => events.push(e),
                CloudFact::Load(l) if l.dimensions.is_empty() => load = Some(l),
                CloudFact::Load(l) => waits.push(l),
                CloudFact::Top { group, key } if group == "db.sql" => top_sql.push(key),
                CloudFact::Top { key, .. } => top_waits.push(key),
                _ => {}
            }
        }
        events.sort_by_key(|e| e.at);
        top_sql.sort_by(|a, b| b.total.total_cmp(&a.total));
        top_waits.sort_by(|a, b| b.total.total_cmp(&a.total));
        let has_metrics = !series.is_empty();
        Some(Rds {
            id,
            instance,
            replicas,
            series,
            events,
            load,
            waits,
            top_sql,
            top_waits,
            has_metrics,
            missing,
            since: None,
            ev_metrics: ctx.ev(&[EV_METRICS]),
            ev_events: ctx.ev(&[EV_EVENTS]),
            ev_pi: ctx.ev(&[EV_PI]),
            ev_instances: ctx.ev(&[EV_INSTANCES]),
        })
    }

    pub(super) fn get(&self, instance: &str, metric: &str) -> Option<Stats> {
        self.series
            .get(&(instance.to_string(), metric.to_string()))
            .map(|s| Stats::of(s))
    }

    /// The subject's own series of a metric.
    pub(super) fn own(&self, metric: &str) -> Option<Stats> {
        self.get(&self.id, metric)
    }

    /// The worst replica's series of a metric (highest peak).
    pub(super) fn worst_replica(&self, metric: &str) -> Option<(String, Stats)> {
        self.replicas
            .iter()
            .filter_map(|r| self.get(r, metric).map(|s| (r.clone(), s)))
            .max_by(|a, b| a.1.max.total_cmp(&b.1.max))
    }

    pub(super) fn class(&self) -> Option<&str> {
        self.instance.and_then(|i| i.class.as_deref())
    }

    /// vCPUs of the instance's class (`db.r6g.xlarge` → 4).
    pub(super) fn vcpus(&self) -> Option<f64> {
        let (_, size) = self.class()?.strip_prefix("db.")?.split_once('.')?;
        vcpus(size)
    }

    /// The connection limit and where it comes from: an RDS event that states it, else the
    /// engine's default for the instance class.
    pub(super) fn max_connections(&self) -> Option<(f64, String)> {
        let stated = self.events.iter().find_map(|e| {
            let m = e.message.to_lowercase();
            if !m.contains("max_connections") && !m.contains("connection limit") {
                return None;
            }
            let re = regex::Regex::new(r"(\d+)\s+of\s+(\d+)").ok()?;
            let c = re.captures(&m)?;
            c.get(2)?.as_str().parse::<f64>().ok()
        });
        if let Some(n) = stated {
            return Some((n, "as the RDS event states".into()));
        }
        let class = self.class()?;
        let postgres = self
            .instance
            .and_then(|i| i.engine.as_deref())
            .is_none_or(|e| e.contains("postgres"));
        if !postgres {
            return None;
        }
        default_max_connections(class).map(|n| (n, format!("the default for {class}")))
    }

    pub(super) fn metric_evidence(&self) -> Vec<EvidenceId> {
        self.ev_metrics.clone()
    }

    pub(super) fn with_pi(&self, mut ev: Vec<EvidenceId>) -> Vec<EvidenceId> {
        for id in &self.ev_pi {
            if !ev.contains(id) {
                ev.push(id.clone());
            }
        }
        ev
    }

    pub(super) fn with_events(&self, mut ev: Vec<EvidenceId>) -> Vec<EvidenceId> {
        for id in &self.ev_events {
            if !ev.contains(id) {
                ev.push(id.clone());
            }
        }
        ev
    }

    pub(super) fn object(&self) -> String {
        format!("DBInstance/{}", self.id)
    }

    /// The top statement by load, with its share of the total load and its main wait.
    pub(super) fn top_statement(&self) -> Option<TopSql> {
        let top = self.top_sql.first()?;
        // The keys' loads are averages over the whole window read, so their share is of the
        // window's mean load; when they add up past it (sampled differently), their sum is the
        // better total.
        let keys: f64 = self.top_sql.iter().map(|k| k.total).sum();
        let total_load = self
            .load
            .filter(|l| !l.points.is_empty())
            .map(|l| mean(&l.points))
            .into_iter()
            .chain([keys])
            .fold(None, |acc: Option<f64>, t| {
                Some(acc.map_or(t, |a| a.max(t)))
            })
            .filter(|t| *t > 0.0);
        Some(TopSql {
            statement: top.label(),
            load: top.total,
            total_load,
            wait: top.top_wait(),
        })
    }

    /// The mean DB load since the symptom began (the whole window when its start is not known).
    pub(super) fn load_now(&self) -> Option<f64> {
        let l = self.load?;
        let since: Vec<(DateTime<Utc>, f64)> = l
            .points
            .iter()
            .filter(|p| self.since.is_none_or(|s| p.0 >= s))
            .cloned()
            .collect();
        let pts = if since.is_empty() { &l.points } else { &since };
        (!pts.is_empty()).then(|| mean(pts))
    }

    /// The wait event with the most load, and its load.
    pub(super) fn top_wait(&self) -> Option<(String, f64)> {
        if let Some(k) = self.top_waits.first() {
            return Some((k.label(), k.total));
        }
        self.waits
            .iter()
            .filter_map(|s| {
                s.dimensions
                    .get("db.wait_event.name")
                    .map(|n| (n.clone(), mean(&s.points)))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

pub(super) struct TopSql {
    pub(super) statement: String,
    pub(super) load: f64,
    pub(super) total_load: Option<f64>,
    pub(super) wait: Option<(String, f64)>,
}

impl TopSql {
    pub(super) fn describe(&self) -> String {
        let share = match self.total_load {
            Some(t) if t > 0.0 => format!(
                " accounts for {} of {} average active sessions of DB load over the window",
                num(self.load),
                num(t)
            ),
            _ => format!(" carries {} average active sessions", num(self.load)),
        };
        let wait = self
            .wait
            .as_ref()
            .map(|(w, l)| format!(", waiting mostly on {w} ({})", num(*l)))
            .unwrap_or_default();
        format!("`{}`{share}{wait}", short_sql(&self.statement))
    }

    pub(super) fn writes(&self) -> bool {
        let s = self.statement.trim_start().to_ascii_uppercase();
        ["UPDATE", "INSERT", "DELETE", "COPY", "MERGE"]
            .iter()
            .any(|w| s.starts_with(w))
    }
}

pub(super) fn short_sql(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 100 {
        format!("{}…", one.chars().take(100).collect::<String>())
    } else {
        one
    }
}

/// Whether `text` (lowercase) names `name` as a whole word.
pub fn names(text: &str, name: &str) -> bool {
    crate::reason::subject::mentions(text, name)
}

/// The subject object for the diagnosis' first step.
pub(crate) fn subject(obs: &crate::reason::Observations) -> Option<crate::model::SubjectObject> {
    let (id, how) = named_instance(obs)?;
    Some(crate::model::SubjectObject {
        kind: "DBInstance".into(),
        name: id,
        namespace: String::new(),
        how,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn default_connection_limits_follow_the_class_memory() {
        assert_eq!(default_max_connections("db.r6g.xlarge"), Some(3604.0));
        assert_eq!(default_max_connections("db.r6g.2xlarge"), Some(5000.0));
        assert_eq!(default_max_connections("db.t3.micro"), Some(112.0));
        assert_eq!(default_max_connections("nonsense"), None);
    }

    #[test]
    pub(super) fn sizes_give_vcpus() {
        assert_eq!(vcpus("large"), Some(2.0));
        assert_eq!(vcpus("2xlarge"), Some(8.0));
        assert_eq!(vcpus("12xlarge"), Some(48.0));
        assert_eq!(vcpus("medium"), Some(2.0));
        assert_eq!(vcpus("huge"), None);
    }
}
