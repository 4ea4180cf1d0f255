//! RDS analyzers: the instance an alert names, its symptom measured on its own CloudWatch metric,
//! and the cause checks (CPU and top SQL, connections, storage, replication lag, failover and
//! reboot, memory, I/O, transaction IDs) over CloudWatch, RDS events and Performance Insights.

use super::{Basis, Decl, Role};
use crate::model::{
    Category, CloudFact, EvidenceId, MetricSeries, PiKey, PiSeries, RdsEvent, RdsInstance,
    RuledOut, Symptom, SymptomState,
};
use crate::reason::{Ctx, Signal};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "rds_failover",
        title: "instance failover or reboot",
        concern: "cloud",
        role: Role::Failure,
        reads: &["DatabaseConnections<"],
    },
    Decl {
        id: "rds_storage",
        title: "storage running out",
        concern: "cloud",
        role: Role::Failure,
        reads: &["FreeStorageSpace"],
    },
    Decl {
        id: "rds_replication_lag",
        title: "replica lag",
        concern: "cloud",
        role: Role::Failure,
        reads: &["ReplicaLag"],
    },
    Decl {
        id: "rds_connections",
        title: "connections at the instance's limit",
        concern: "cloud",
        role: Role::Failure,
        reads: &["DatabaseConnections>"],
    },
    Decl {
        id: "rds_cpu",
        title: "CPU saturated",
        concern: "cloud",
        role: Role::Failure,
        reads: &["CPUUtilization"],
    },
    Decl {
        id: "rds_memory",
        title: "memory exhausted",
        concern: "cloud",
        role: Role::Failure,
        reads: &["FreeableMemory", "SwapUsage"],
    },
    Decl {
        id: "rds_io",
        title: "I/O saturated",
        concern: "cloud",
        role: Role::Failure,
        reads: &[
            "ReadLatency",
            "WriteLatency",
            "DiskQueueDepth",
            "ReadIOPS",
            "WriteIOPS",
        ],
    },
    Decl {
        id: "rds_wal_storm",
        title: "WAL or checkpoint storm",
        concern: "cloud",
        role: Role::Failure,
        reads: &["TransactionLogsGeneration"],
    },
    Decl {
        id: "rds_wraparound",
        title: "transaction ID wraparound",
        concern: "cloud",
        role: Role::Failure,
        reads: &["MaximumUsedTransactionIDs"],
    },
    Decl {
        id: "rds_gaps",
        title: "CloudWatch metrics without data",
        concern: "cloud",
        role: Role::Context,
        reads: &[],
    },
];

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

/// CPU busy from which queries queue for it.
const CPU_SATURATED: f64 = 80.0;
/// Share of a hard limit from which it is "near" it.
const NEAR_LIMIT: f64 = 0.9;
/// Replica lag worth a finding, in seconds.
const LAG_SECS: f64 = 60.0;
/// A metric this many times its level at the start of the window has departed from it.
const DEPARTED: f64 = 1.5;
/// Transaction IDs used past which wraparound protection is near (the hard stop is at ~2^31).
const WRAPAROUND_XIDS: f64 = 1.0e9;

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

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

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
    ev_metrics: Vec<EvidenceId>,
    ev_events: Vec<EvidenceId>,
    ev_pi: Vec<EvidenceId>,
    ev_instances: Vec<EvidenceId>,
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

    fn get(&self, instance: &str, metric: &str) -> Option<Stats> {
        self.series
            .get(&(instance.to_string(), metric.to_string()))
            .map(|s| Stats::of(s))
    }

    /// The subject's own series of a metric.
    fn own(&self, metric: &str) -> Option<Stats> {
        self.get(&self.id, metric)
    }

    /// The worst replica's series of a metric (highest peak).
    fn worst_replica(&self, metric: &str) -> Option<(String, Stats)> {
        self.replicas
            .iter()
            .filter_map(|r| self.get(r, metric).map(|s| (r.clone(), s)))
            .max_by(|a, b| a.1.max.total_cmp(&b.1.max))
    }

    fn class(&self) -> Option<&str> {
        self.instance.and_then(|i| i.class.as_deref())
    }

    /// vCPUs of the instance's class (`db.r6g.xlarge` → 4).
    fn vcpus(&self) -> Option<f64> {
        let (_, size) = self.class()?.strip_prefix("db.")?.split_once('.')?;
        vcpus(size)
    }

    /// The connection limit and where it comes from: an RDS event that states it, else the
    /// engine's default for the instance class.
    fn max_connections(&self) -> Option<(f64, String)> {
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

    fn metric_evidence(&self) -> Vec<EvidenceId> {
        self.ev_metrics.clone()
    }

    fn with_pi(&self, mut ev: Vec<EvidenceId>) -> Vec<EvidenceId> {
        for id in &self.ev_pi {
            if !ev.contains(id) {
                ev.push(id.clone());
            }
        }
        ev
    }

    fn with_events(&self, mut ev: Vec<EvidenceId>) -> Vec<EvidenceId> {
        for id in &self.ev_events {
            if !ev.contains(id) {
                ev.push(id.clone());
            }
        }
        ev
    }

    fn object(&self) -> String {
        format!("DBInstance/{}", self.id)
    }

    /// The top statement by load, with its share of the total load and its main wait.
    fn top_statement(&self) -> Option<TopSql> {
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
    fn load_now(&self) -> Option<f64> {
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
    fn top_wait(&self) -> Option<(String, f64)> {
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

struct TopSql {
    statement: String,
    load: f64,
    total_load: Option<f64>,
    wait: Option<(String, f64)>,
}

impl TopSql {
    fn describe(&self) -> String {
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

    fn writes(&self) -> bool {
        let s = self.statement.trim_start().to_ascii_uppercase();
        ["UPDATE", "INSERT", "DELETE", "COPY", "MERGE"]
            .iter()
            .any(|w| s.starts_with(w))
    }
}

fn short_sql(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 100 {
        format!("{}…", one.chars().take(100).collect::<String>())
    } else {
        one
    }
}

/// A series reduced to what the checks compare.
#[derive(Clone, Debug)]
struct Stats {
    first: f64,
    /// The level at the start of the window (median of its first points).
    base: f64,
    /// The level at the end (mean of its last points).
    end: f64,
    min: f64,
    max: f64,
    min_at: DateTime<Utc>,
    max_at: DateTime<Utc>,
    start: DateTime<Utc>,
    last_at: DateTime<Utc>,
    points: Vec<(DateTime<Utc>, f64)>,
}

impl Stats {
    fn of(s: &MetricSeries) -> Stats {
        let pts: Vec<(DateTime<Utc>, f64)> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .cloned()
            .collect();
        let n = pts.len().max(1);
        let head = (n / 5).clamp(1, 3);
        let mut first: Vec<f64> = pts.iter().take(head).map(|p| p.1).collect();
        first.sort_by(f64::total_cmp);
        let base = first.get(first.len() / 2).copied().unwrap_or(0.0);
        let tail: Vec<f64> = pts.iter().rev().take(head).map(|p| p.1).collect();
        let end = if tail.is_empty() {
            0.0
        } else {
            tail.iter().sum::<f64>() / tail.len() as f64
        };
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        let max = pts
            .iter()
            .cloned()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((epoch, 0.0));
        let min = pts
            .iter()
            .cloned()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((epoch, 0.0));
        Stats {
            first: pts.first().map(|p| p.1).unwrap_or(0.0),
            base,
            end,
            min: min.1,
            max: max.1,
            min_at: min.0,
            max_at: max.0,
            start: pts.first().map(|p| p.0).unwrap_or(epoch),
            last_at: pts.last().map(|p| p.0).unwrap_or(epoch),
            points: pts,
        }
    }

    /// First point past `level` in the given direction, after the start.
    fn crossed(&self, level: f64, above: bool) -> Option<DateTime<Utc>> {
        self.points
            .iter()
            .find(|p| if above { p.1 >= level } else { p.1 <= level })
            .map(|p| p.0)
    }

    /// Points at or past `level`.
    fn count_past(&self, level: f64, above: bool) -> usize {
        self.points
            .iter()
            .filter(|p| if above { p.1 >= level } else { p.1 <= level })
            .count()
    }

    /// The range in words: `312 → 494 (peak 494 at 11:34 UTC)`.
    fn range(&self, fmt: fn(f64) -> String) -> String {
        format!(
            "{} at {} → {} at {} (peak {} at {})",
            fmt(self.first),
            hhmm(self.start),
            fmt(self.points.last().map(|p| p.1).unwrap_or(self.end)),
            hhmm(self.last_at),
            fmt(self.max),
            hhmm(self.max_at)
        )
    }
}

fn mean(points: &[(DateTime<Utc>, f64)]) -> f64 {
    if points.is_empty() {
        return 0.0;
    }
    points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64
}

fn hhmm(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

fn hms(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S UTC").to_string()
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

fn gb(v: f64) -> String {
    format!("{:.1} GB", v / 1e9)
}

fn mb_s(v: f64) -> String {
    format!("{:.1} MB/s", v / 1e6)
}

fn per_s(v: f64) -> String {
    format!("{}/s", num(v))
}

fn secs(v: f64) -> String {
    format!("{} s", num(v))
}

fn count(v: f64) -> String {
    num(v)
}

fn ms(v: f64) -> String {
    // CloudWatch reports latency in seconds; some exports use milliseconds.
    format!("{:.1} ms", v * 1000.0)
}

/// How a metric reads, for sentences.
fn formatter(metric: &str) -> fn(f64) -> String {
    match metric {
        "CPUUtilization" => pct,
        "FreeStorageSpace" | "FreeableMemory" | "SwapUsage" => gb,
        "TransactionLogsGeneration"
        | "NetworkReceiveThroughput"
        | "NetworkTransmitThroughput"
        | "ReadThroughput"
        | "WriteThroughput" => mb_s,
        "ReadIOPS" | "WriteIOPS" => per_s,
        "ReplicaLag" => secs,
        "ReadLatency" | "WriteLatency" => ms,
        _ => count,
    }
}

/// Which way a metric is bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bad {
    High,
    Low,
}

/// The metric an alert's condition is about, and which way is bad.
fn claimed_metric(ctx: &Ctx) -> Option<(&'static str, Bad)> {
    let a = ctx.obs.alert.as_ref();
    let mut text = String::new();
    if let Some(a) = a {
        text.push_str(a.name());
        text.push(' ');
        for k in [
            "metric_name",
            "MetricName",
            "summary",
            "description",
            "message",
        ] {
            if let Some(v) = a.labels.get(k).or_else(|| a.annotations.get(k)) {
                text.push_str(v);
                text.push(' ');
            }
        }
    }
    if let Some(p) = &ctx.obs.problem {
        text.push_str(p);
    }
    let spaced = crate::reason::conventions::camel_words(&text).to_lowercase();
    let t = text.to_lowercase();
    let has = |w: &[&str]| w.iter().any(|x| t.contains(x) || spaced.contains(x));
    let falls = has(&[" drop", "dropped", " zero", " lost", " fell", "fall "]);
    // CloudWatch's own metric names, matched case-blind wherever the alert says them.
    let exact: [(&'static str, Bad); 13] = [
        ("ReplicaLag", Bad::High),
        ("FreeStorageSpace", Bad::Low),
        ("DatabaseConnections", Bad::High),
        ("CPUUtilization", Bad::High),
        ("FreeableMemory", Bad::Low),
        ("SwapUsage", Bad::High),
        ("ReadLatency", Bad::High),
        ("WriteLatency", Bad::High),
        ("DiskQueueDepth", Bad::High),
        ("MaximumUsedTransactionIDs", Bad::High),
        ("TransactionLogsGeneration", Bad::High),
        ("ReadIOPS", Bad::High),
        ("WriteIOPS", Bad::High),
    ];
    let flip = |b: Bad| if falls { Bad::Low } else { b };
    for (name, bad) in exact {
        if t.contains(&name.to_lowercase()) {
            return Some((name, flip(bad)));
        }
    }
    let words: [(&[&str], &'static str, Bad); 8] = [
        (
            &["replica lag", "replication lag", "replica_lag"],
            "ReplicaLag",
            Bad::High,
        ),
        (
            &["storage", "disk space", "out of space", "free space"],
            "FreeStorageSpace",
            Bad::Low,
        ),
        (&["connection"], "DatabaseConnections", Bad::High),
        (&["cpu"], "CPUUtilization", Bad::High),
        (&["swap"], "SwapUsage", Bad::High),
        (&["memory"], "FreeableMemory", Bad::Low),
        (&["write latency"], "WriteLatency", Bad::High),
        (&["latency", "slow quer"], "ReadLatency", Bad::High),
    ];
    for (w, metric, bad) in words {
        if has(w) {
            return Some((metric, flip(bad)));
        }
    }
    if has(&["transaction id", "wraparound", "xid"]) {
        return Some(("MaximumUsedTransactionIDs", Bad::High));
    }
    None
}

/// A hard limit of a metric on this instance, with where it comes from.
fn limit(rds: &Rds, metric: &str) -> Option<(f64, String)> {
    match metric {
        "CPUUtilization" => Some((100.0, "100% of the instance's vCPUs".into())),
        "DatabaseConnections" => rds.max_connections(),
        "WriteIOPS" | "ReadIOPS" => rds
            .instance
            .and_then(|i| i.iops)
            .map(|n| (n, "the volume's provisioned IOPS".into())),
        _ => None,
    }
}

/// The symptom, measured on the subject's CloudWatch metric. False when this is not an RDS
/// subject or nothing was read to measure it with.
pub(crate) fn measure_symptom(ctx: &Ctx, s: &mut Symptom) -> bool {
    let Some(rds) = Rds::new(ctx) else {
        return false;
    };
    if !rds.has_metrics {
        if ctx.obs.coverage.get("aws").is_some_and(|c| c.configured) || !rds.ev_instances.is_empty()
        {
            s.state = SymptomState::Unmeasurable;
            s.detail = format!(
                "no CloudWatch data for {}: {}",
                rds.id,
                match ctx.obs.coverage.get("aws") {
                    Some(c) if c.status() == "failed" =>
                        format!("aws failed: {}", c.error.as_deref().unwrap_or("error")),
                    Some(c) if !c.configured => "aws is not configured".to_string(),
                    _ => "CloudWatch answered with no data".to_string(),
                }
            );
            return true;
        }
        return false;
    }
    s.evidence = rds.metric_evidence();
    let Some((metric, bad)) = claimed_metric(ctx) else {
        // No metric claimed (a scheduled check, an informational alert): the instance's health
        // is what can be measured.
        return measure_health(&rds, s);
    };
    let replica_metric = metric == "ReplicaLag";
    let got = if replica_metric {
        rds.worst_replica(metric)
            .or_else(|| rds.own(metric).map(|st| (rds.id.clone(), st)))
    } else {
        rds.own(metric).map(|st| (rds.id.clone(), st))
    };
    let Some((on, st)) = got else {
        s.state = SymptomState::Unmeasurable;
        s.detail = format!("no {metric} data for {} in CloudWatch", rds.id);
        return true;
    };
    let f = formatter(metric);
    let high = bad == Bad::High;
    let lim = limit(&rds, metric);
    let near = if metric == "CPUUtilization" {
        st.end >= CPU_SATURATED
    } else if metric == "FreeStorageSpace" {
        storage_failing(&rds, &st)
    } else {
        high && lim.as_ref().is_some_and(|(l, _)| st.end >= NEAR_LIMIT * l)
    };
    // CPU has a hard ceiling: only near it is it the problem, whatever its level before.
    let cpu = metric == "CPUUtilization";
    let departed_now = if cpu {
        st.end >= CPU_SATURATED
    } else if high {
        st.end >= st.base * DEPARTED && st.end - st.base > floor(metric)
    } else {
        st.end <= st.base / DEPARTED && st.base - st.end > floor(metric)
    };
    let departed_ever = if cpu {
        st.count_past(CPU_SATURATED, true) >= 2
    } else if high {
        st.max >= st.base * DEPARTED && st.max - st.base > floor(metric)
    } else {
        st.min <= st.base / DEPARTED && st.base - st.min > floor(metric)
    };
    let refused = refusal(ctx, &rds);
    let what = format!("{metric} on {on}");
    // A CloudWatch alarm carries its own threshold and comparison: they decide.
    let alarm = alarm_threshold(ctx).map(|(t, above)| {
        let above = above.unwrap_or(high);
        let last = st.points.last().map(|p| p.1).unwrap_or(st.end);
        (t, above, if above { last > t } else { last < t })
    });
    if let Some((t, above, breached)) = alarm {
        if breached {
            s.state = SymptomState::Confirmed;
            s.onset = st.crossed(t, above);
            s.detail = format!(
                "{what} {} against the alarm's threshold {}",
                st.range(f),
                f(t)
            );
            return true;
        }
        // Near its hard limit (a disk near empty) is never cleared, whatever the alarm says.
        if !departed_now && !near {
            s.state = SymptomState::Cleared;
            s.detail = format!(
                "{what} is back on the right side of the alarm's threshold {}: {}",
                f(t),
                st.range(f)
            );
            s.cleared_at = st.points.last().map(|p| p.0);
            return true;
        }
    }
    if departed_now || near || (refused.is_some() && metric == "DatabaseConnections") {
        s.state = SymptomState::Confirmed;
        let onset_level = if high {
            st.base + (st.end - st.base) / 2.0
        } else {
            st.base - (st.base - st.end) / 2.0
        };
        s.onset = st.crossed(onset_level, high);
        let limit_words = lim
            .as_ref()
            .map(|(l, why)| format!("; {} of {} ({why})", pct(st.max / l * 100.0), f(*l)))
            .unwrap_or_default();
        let refused_words = refused
            .map(|r| format!("; clients are refused: \"{r}\""))
            .unwrap_or_default();
        s.detail = format!("{what} {}{limit_words}{refused_words}", st.range(f));
        return true;
    }
    if departed_ever {
        // It went bad and came back within the window.
        s.state = SymptomState::Cleared;
        let worst_at = if high { st.max_at } else { st.min_at };
        let back = st
            .points
            .iter()
            .filter(|p| p.0 > worst_at)
            .find(|p| {
                if high {
                    p.1 <= st.base * 1.2 + floor(metric)
                } else {
                    p.1 >= st.base / 1.2 - floor(metric)
                }
            })
            .map(|p| p.0);
        s.onset = st.crossed(
            if high {
                st.base * DEPARTED
            } else {
                st.base / DEPARTED
            },
            high,
        );
        s.cleared_at = back;
        s.detail = format!(
            "{what} went from {} to {} at {} and was back at {}{}",
            f(st.base),
            f(if high { st.max } else { st.min }),
            hhmm(worst_at),
            f(st.end),
            back.map(|t| format!(" by {}", hhmm(t))).unwrap_or_default()
        );
        return true;
    }
    if let Some((l, why)) = lim {
        s.state = SymptomState::WithinLimits;
        s.detail = format!(
            "{what} ranged {}–{}, at most {} of its limit {} ({why}), with no departure from its level at {}; nothing at the limit",
            f(st.min),
            f(st.max),
            pct(st.max / l * 100.0),
            f(l),
            hhmm(st.start)
        );
        return true;
    }
    s.state = SymptomState::Unmeasurable;
    s.detail = format!(
        "{what} ranged {}–{} with no departure from its level at {}, and its limit is not known, so whether it is too {} cannot be told",
        f(st.min),
        f(st.max),
        hhmm(st.start),
        if high { "high" } else { "low" }
    );
    true
}

/// The threshold an alarm states (`threshold` and `comparison` labels), and whether above it is bad.
fn alarm_threshold(ctx: &Ctx) -> Option<(f64, Option<bool>)> {
    let a = ctx.obs.alert.as_ref()?;
    let t: f64 = a.labels.get("threshold")?.trim().parse().ok()?;
    // The alarm's own comparison; without one, the metric's bad direction decides.
    let above = a.labels.get("comparison").map(|c| {
        let c = c.to_ascii_lowercase();
        !(c.contains("lessthan") || c.starts_with('<') || c == "lt" || c == "le")
    });
    Some((t, above))
}

/// The least absolute change that counts, so noise around zero is no departure.
fn floor(metric: &str) -> f64 {
    match metric {
        "CPUUtilization" => 10.0,
        "ReplicaLag" => 30.0,
        "DatabaseConnections" => 10.0,
        "FreeStorageSpace" | "FreeableMemory" => 512.0 * 1024.0 * 1024.0,
        "SwapUsage" => 256.0 * 1024.0 * 1024.0,
        "ReadLatency" | "WriteLatency" => 0.005,
        "DiskQueueDepth" => 5.0,
        _ => 0.0,
    }
}

/// What healthy looks like for each metric: (metric, bad direction, limit the value must stay
/// under or over, words).
fn measure_health(rds: &Rds, s: &mut Symptom) -> bool {
    let checks = health_checks(rds);
    let failing: Vec<&HealthCheck> = checks.iter().filter(|c| !c.ok).collect();
    if checks.is_empty() {
        s.state = SymptomState::Unmeasurable;
        s.detail = format!("no CloudWatch metric of {} could be measured", rds.id);
        return true;
    }
    if failing.is_empty() {
        s.state = SymptomState::WithinLimits;
        s.detail = format!(
            "every measured metric of {} stayed within normal bounds: {}",
            rds.id,
            checks
                .iter()
                .map(|c| c.words.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    } else {
        s.state = SymptomState::Confirmed;
        s.detail = format!(
            "{} is out of bounds: {}",
            rds.id,
            failing
                .iter()
                .map(|c| c.words.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    true
}

struct HealthCheck {
    ok: bool,
    words: String,
}

/// The instance's metrics against their limits or their own level at the start of the window.
fn health_checks(rds: &Rds) -> Vec<HealthCheck> {
    let mut out = Vec::new();
    if let Some(c) = rds.own("CPUUtilization") {
        out.push(HealthCheck {
            ok: !cpu_sustained(&c),
            words: format!("CPU {}–{}", pct(c.min), pct(c.max)),
        });
    }
    if let Some(c) = rds.own("DatabaseConnections") {
        let lim = rds.max_connections();
        let ok = lim.as_ref().is_none_or(|(l, _)| c.max < NEAR_LIMIT * l);
        out.push(HealthCheck {
            ok,
            words: match lim {
                Some((l, why)) => format!(
                    "connections at most {} of max_connections {} ({why})",
                    count(c.max),
                    count(l)
                ),
                None => format!("connections {}–{}", count(c.min), count(c.max)),
            },
        });
    }
    if let Some(c) = rds.own("FreeStorageSpace") {
        // An event saying it ran out of storage is not ruled out by the series.
        let ok = !storage_failing(rds, &c) && storage_event(rds).is_none();
        out.push(HealthCheck {
            ok,
            words: format!("free storage {}–{}", gb(c.min), gb(c.max)),
        });
    }
    if let Some((r, c)) = rds.worst_replica("ReplicaLag") {
        out.push(HealthCheck {
            ok: c.max < LAG_SECS,
            words: format!("replica lag on {r} at most {}", secs(c.max)),
        });
    }
    if let Some(c) = rds.own("MaximumUsedTransactionIDs") {
        out.push(HealthCheck {
            ok: c.max < WRAPAROUND_XIDS,
            words: format!("transaction IDs used {}", count(c.max)),
        });
    }
    out
}

/// A client-side refusal quoted by the alert or an RDS event (`too many clients`, `remaining
/// connection slots are reserved`).
fn refusal(ctx: &Ctx, rds: &Rds) -> Option<String> {
    const SIGNS: [&str; 5] = [
        "remaining connection slots are reserved",
        "too many clients",
        "too many connections",
        "connection limit exceeded",
        "sorry, too many clients",
    ];
    let mut texts: Vec<String> = Vec::new();
    if let Some(a) = &ctx.obs.alert {
        texts.extend(a.annotations.values().cloned());
    }
    texts.extend(rds.events.iter().map(|e| e.message.clone()));
    texts.into_iter().find_map(|t| {
        let l = t.to_lowercase();
        SIGNS
            .iter()
            .find(|s| l.contains(*s))
            .map(|s| (*s).to_string())
    })
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

/// Every Cloud analyzer, over the subject instance.
pub(crate) fn analyze(ctx: &Ctx) -> Vec<Signal> {
    let Some(mut rds) = Rds::new(ctx) else {
        return Vec::new();
    };
    if !rds.has_metrics && rds.events.is_empty() && rds.top_sql.is_empty() {
        return Vec::new();
    }
    // Measured once: its onset lines the checks up, its state settles them.
    let mut measured = Symptom::default();
    let symptom = measure_symptom(ctx, &mut measured).then_some(&measured);
    let onset = symptom_window(ctx, symptom);
    rds.since = onset.map(|o| o.0);
    let rds = rds;
    let mut out = Vec::new();
    out.extend(failover(&rds, onset));
    out.extend(storage(&rds));
    out.extend(replication_lag(&rds));
    out.extend(connections(ctx, &rds));
    out.extend(cpu(&rds, onset));
    out.extend(memory(&rds));
    out.extend(io(&rds));
    out.extend(wraparound(&rds));
    if !out
        .iter()
        .any(|s| measures(s, "ReplicaLag") && s.cause.is_some())
    {
        out.extend(wal_storm(&rds));
    }
    settle_signals(ctx, &rds, symptom, &mut out);
    let failing = out.iter().any(|s| s.cause.is_some() && !s.benign);
    let recovered = out.iter().any(|s| s.cause.is_some() && s.benign);
    let mut ruled = ruled_out(&rds, onset, &out);
    if !failing && !recovered {
        out.push(all_within_bounds(&rds, &mut ruled));
    }
    if !rds.missing.is_empty() {
        out.push(Signal {
            analyzer: "rds_gaps",
            reads_symptom: true,
            summary: format!(
                "CloudWatch had no data for {}: not measured, not zero",
                crate::reason::list_names(&rds.missing, 8)
            ),
            detail: "checks that need these metrics could not be made".into(),
            category: Category::Unknown,
            basis: Basis::Context,
            evidence: rds.metric_evidence(),
            objects: vec![rds.object()],
            ..Signal::default()
        });
    }
    if let Some(first) = out.first_mut() {
        first.ruled_out.extend(ruled);
    }
    out
}

/// Whether a signal's check measures `metric` (either way).
fn measures(s: &Signal, metric: &str) -> bool {
    let decl = s.decl();
    decl.reads(metric, false) || decl.reads(metric, true)
}

/// Ties the checks to the symptom: the check of the alert's own metric ranks first among equals;
/// a symptom measured back to normal makes every cause but a failover history ("recovered");
/// a second failure at the same time is named in the first's root cause.
fn settle_signals(ctx: &Ctx, rds: &Rds, symptom: Option<&Symptom>, out: &mut [Signal]) {
    if let Some((metric, bad)) = claimed_metric(ctx) {
        let falls = matches!(bad, Bad::Low);
        for s in out
            .iter_mut()
            .filter(|s| s.decl().reads(metric, falls) && s.cause.is_some())
        {
            // It reads the very metric the alert claims about: a link to the symptom.
            s.links += 1;
        }
    }
    // Sessions busy on CPU are queries that cannot finish: connections pile up behind a saturated
    // CPU, they are its consequence, not a second cause.
    let busy_on_cpu = rds.top_wait().is_some_and(|(w, _)| w.starts_with("CPU"));
    let failing =
        |s: &Signal, metric: &str| s.decl().reads(metric, false) && s.cause.is_some() && !s.benign;
    if busy_on_cpu && out.iter().any(|s| failing(s, "CPUUtilization")) {
        let mut piled = Vec::new();
        for s in out.iter_mut().filter(|s| failing(s, "DatabaseConnections")) {
            s.symptom_of = Some(Category::ResourceExhaustion);
            s.summary = format!(
                "{}, a consequence of the CPU saturation: the sessions are busy on CPU, not idle",
                s.summary
            );
            piled.push(s.summary.clone());
        }
        if let Some(c) = out
            .iter_mut()
            .find(|s| failing(s, "CPUUtilization"))
            .and_then(|s| s.cause.as_mut())
        {
            for p in piled {
                c.push_str(&format!("; so connections pile up: {p}"));
            }
        }
    }
    if let Some(symptom) = symptom.filter(|s| s.state == SymptomState::Cleared) {
        for s in out
            .iter_mut()
            // A failover (connections falling to none) happened and stays in the record.
            .filter(|s| {
                s.cause.is_some() && !s.benign && !s.decl().reads("DatabaseConnections", true)
            })
        {
            let cause = s.cause.take().unwrap_or_default();
            s.cause = Some(format!(
                "Recovered: {}; while it lasted: {cause}",
                symptom.detail
            ));
            s.benign = true;
            s.category = Category::Healthy;
        }
        return;
    }
    let mut failing: Vec<usize> = (0..out.len())
        .filter(|&i| {
            out[i].cause.is_some()
                && !out[i].benign
                && out[i].symptom_of.is_none()
                && out[i].own_links() >= Basis::Stated.links()
        })
        .collect();
    failing.sort_by_key(|&i| std::cmp::Reverse(out[i].own_links()));
    if let [first, second, ..] = failing[..] {
        let also = out[second].summary.clone();
        if let Some(c) = out[first].cause.as_mut() {
            c.push_str(&format!("; at the same time on {}: {also}", rds.id));
        }
    }
}

/// When the symptom began (and ended), measured on the claimed metric, else the alert's start.
fn symptom_window(
    ctx: &Ctx,
    symptom: Option<&Symptom>,
) -> Option<(DateTime<Utc>, Option<DateTime<Utc>>)> {
    if let Some(window) = symptom.and_then(|s| s.onset.map(|o| (o, s.cleared_at))) {
        return Some(window);
    }
    ctx.obs
        .alert
        .as_ref()
        .and_then(|a| a.starts_at)
        .filter(|t| t.timestamp() > 0)
        .map(|t| (t, None))
}

/// Stages of an availability event, in the words RDS operators use.
fn stage(e: &RdsEvent) -> Option<&'static str> {
    let m = e.message.to_lowercase();
    let failover = m.contains("failover") || e.categories.iter().any(|c| c == "failover");
    if failover && (m.contains("in progress") || m.contains("restarting")) {
        return Some("failover in progress");
    }
    if failover && (m.contains("initiat") || m.contains("started") || m.contains("begin")) {
        return Some("failover initiated");
    }
    if failover && (m.contains("complete") || m.contains("finished")) {
        return Some("failover completed");
    }
    // "needs to be rebooted for the changes to take effect" announces nothing that happened.
    let pending = ["needs to be", "pending", "will be", "required", "scheduled"]
        .iter()
        .any(|w| m.contains(w));
    if !pending && (m.contains("reboot") || m.contains("restarted") || m.contains("restarting")) {
        return Some("reboot");
    }
    if m.contains("shutdown") || m.contains("stopped") || m.contains("crash") {
        return Some("instance down");
    }
    if (m.contains("is available")
        || m.contains("available again")
        || m.contains("accepting connections"))
        && !m.contains("not available")
        && !m.contains("no connections")
    {
        return Some("instance available");
    }
    None
}

/// A failover or a reboot whose timing lines up with the symptom.
fn failover(rds: &Rds, onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>) -> Vec<Signal> {
    let staged: Vec<(&RdsEvent, &'static str)> = rds
        .events
        .iter()
        .filter_map(|e| stage(e).map(|s| (*e, s)))
        .collect();
    let outage: Vec<&(&RdsEvent, &'static str)> = staged
        .iter()
        .filter(|(_, s)| *s != "instance available")
        .collect();
    let Some(first) = outage.first() else {
        return Vec::new();
    };
    let started = first.0.at;
    // It explains the symptom only when the symptom began around it.
    let lines_up = match onset {
        Some((o, _)) => (o - started).num_minutes().abs() <= 10,
        None => true,
    };
    let is_failover = staged.iter().any(|(_, s)| s.starts_with("failover"));
    let multi_az = rds.instance.and_then(|i| i.multi_az) == Some(true)
        || rds.events.iter().any(|e| e.message.contains("Multi-AZ"));
    let what = match (is_failover, multi_az) {
        (true, true) => "Multi-AZ failover",
        (true, false) => "failover",
        _ => "reboot",
    };
    let timeline = staged
        .iter()
        .map(|(e, s)| format!("{s} at {} (\"{}\")", hms(e.at), e.message.trim()))
        .collect::<Vec<_>>()
        .join(" → ");
    let available = staged
        .iter()
        .find(|(e, s)| *s == "instance available" && e.at >= started)
        .map(|(e, _)| e.at);
    // Whether the workload came back: the metrics that fell during the event returned.
    let mut resumed = Vec::new();
    let mut dipped = Vec::new();
    for m in [
        "DatabaseConnections",
        "WriteIOPS",
        "CPUUtilization",
        "ReadIOPS",
    ] {
        if let Some(st) = rds.own(m) {
            let low = st.min <= st.base * 0.2 && st.base > floor(m).max(1.0);
            if low {
                dipped.push(format!(
                    "{m} fell to {} at {}",
                    formatter(m)(st.min),
                    hhmm(st.min_at)
                ));
                if st.end >= 0.8 * st.base {
                    resumed.push(format!("{m} back at {}", formatter(m)(st.end)));
                }
            }
        }
    }
    let recovered = !dipped.is_empty() && resumed.len() == dipped.len();
    let mut cause = format!(
        "{what} of {}: the RDS event timeline, the primary evidence source for a {what}, shows {timeline}",
        rds.id
    );
    if !dipped.is_empty() {
        cause.push_str(&format!("; during it {}", dipped.join(", ")));
    }
    if recovered {
        cause.push_str(&format!(
            "; afterwards the workload resumed normally ({}){}",
            resumed.join(", "),
            available
                .map(|t| format!(", the instance available from {}", hms(t)))
                .unwrap_or_default()
        ));
    }
    let mut s = Signal {
        analyzer: "rds_failover",
        reads_symptom: true,
        summary: format!("{what} of {} at {}", rds.id, hms(started)),
        detail: timeline.clone(),
        category: Category::Infrastructure,
        basis: if lines_up {
            Basis::Stated
        } else {
            Basis::Context
        },
        links: if lines_up { 2 } else { 1 },
        evidence: rds.with_events(rds.metric_evidence()),
        cause: Some(cause),
        objects: vec![rds.object()],
        ..Signal::default()
    };
    if !lines_up {
        let (o, _) = onset.unwrap_or((started, None));
        s.cause = None;
        s.summary = format!(
            "{what} of {} at {} does not line up with the symptom at {}",
            rds.id,
            hms(started),
            hhmm(o)
        );
        s.ruled_out.push(RuledOut {
            statement: format!("{what} caused it"),
            reason: format!(
                "the {what} at {} is {} min from the symptom's onset at {}",
                hms(started),
                (o - started).num_minutes().abs(),
                hhmm(o)
            ),
            evidence: rds.ev_events.clone(),
        });
    }
    vec![s]
}

/// Free storage falling to nothing.
fn storage(rds: &Rds) -> Vec<Signal> {
    let Some(st) = rds.own("FreeStorageSpace") else {
        return storage_events_only(rds);
    };
    let allocated = rds
        .instance
        .and_then(|i| i.allocated_storage_gib)
        .map(|g| g * GIB);
    let slope = storage_slope(&st);
    let full_event = storage_event(rds);
    if !storage_failing(rds, &st) && full_event.is_none() {
        return Vec::new();
    }
    let eta = if slope > 0.0 && st.end > 0.0 {
        format!(
            "; at {:.2} GB/min it is full about {} min after {}",
            slope / 1e9,
            (st.end / slope).ceil(),
            hhmm(st.last_at)
        )
    } else {
        String::new()
    };
    let writes = rds
        .own("WriteIOPS")
        .filter(|w| w.max >= w.base * DEPARTED || w.max >= 2.0 * w.end)
        .map(|w| format!("; writes drove it: WriteIOPS {}", w.range(per_s)))
        .unwrap_or_default();
    let events: Vec<String> = rds
        .events
        .iter()
        .filter(|e| e.message.to_lowercase().contains("storage"))
        .map(|e| format!("{} \"{}\"", hms(e.at), e.message.trim()))
        .collect();
    let events = if events.is_empty() {
        String::new()
    } else {
        format!("; RDS events: {}", events.join("; "))
    };
    let top = rds
        .top_statement()
        .filter(TopSql::writes)
        .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
        .unwrap_or_default();
    let state = if full_event.is_some() || st.end <= 0.01 * allocated.unwrap_or(1e12) {
        "ran out of storage"
    } else {
        "is running out of storage"
    };
    vec![Signal {
        analyzer: "rds_storage",
        reads_symptom: true,
        summary: format!("{} {state}: FreeStorageSpace {}", rds.id, st.range(gb)),
        detail: format!("FreeStorageSpace {}{eta}", st.range(gb)),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        links: 2,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(if st.end < st.first {
            format!(
                "{} {state}: FreeStorageSpace fell {} to {} by {}{eta}{writes}{events}{top}",
                rds.id,
                gb(st.first),
                gb(st.end),
                hhmm(st.last_at),
            )
        } else {
            // Near empty all window long: it did not fall here, it was already full.
            format!(
                "{} {state}: FreeStorageSpace was {} at {}, near empty over the whole window{eta}{writes}{events}{top}",
                rds.id,
                gb(st.end),
                hhmm(st.last_at),
            )
        }),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

fn storage_events_only(rds: &Rds) -> Vec<Signal> {
    let Some(e) = storage_event(rds) else {
        return Vec::new();
    };
    vec![Signal {
        analyzer: "rds_storage",
        reads_symptom: true,
        summary: format!("{}: \"{}\"", rds.id, e.message.trim()),
        detail: format!("RDS event at {}", hms(e.at)),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        evidence: rds.ev_events.clone(),
        cause: Some(format!(
            "{} ran out of storage: RDS event at {} \"{}\"; FreeStorageSpace was not read, so the trend is a gap",
            rds.id,
            hms(e.at),
            e.message.trim()
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// A replica falling behind, and why: a write spike on the primary, the replica's own CPU, or a
/// long transaction.
fn replication_lag(rds: &Rds) -> Vec<Signal> {
    let Some((replica, lag)) = rds.worst_replica("ReplicaLag") else {
        return Vec::new();
    };
    if lag.end < LAG_SECS && lag.max < LAG_SECS {
        return Vec::new();
    }
    let recovered = lag.end < LAG_SECS;
    let write_spike: Vec<String> = ["WriteIOPS", "TransactionLogsGeneration", "WriteThroughput"]
        .iter()
        .filter_map(|m| {
            let st = rds.own(m)?;
            // Against the lowest early level: a ramp that starts in the window is the spike.
            let before = st.first.min(st.base);
            (st.max >= 2.0 * before && st.max - before > 0.0)
                .then(|| format!("{m} {}", st.range(formatter(m))))
        })
        .collect();
    let replica_cpu = rds
        .get(&replica, "CPUUtilization")
        .filter(|c| c.count_past(CPU_SATURATED, true) >= 3);
    let top = rds.top_statement();
    let (why, category) = if !write_spike.is_empty() {
        let wal_top = top
            .as_ref()
            .filter(|t| t.writes() || t.wait.as_ref().is_some_and(|w| w.0.contains("WAL")))
            .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
            .unwrap_or_default();
        (
            format!(
                "a write-heavy workload on the primary {} generated WAL faster than the replica could replay it: {}{wal_top}",
                rds.id,
                write_spike.join(", ")
            ),
            Category::ResourceExhaustion,
        )
    } else if let Some(c) = replica_cpu {
        (
            format!(
                "the replica's own CPU is saturated (CPUUtilization {}), so it replays WAL slower than the primary writes it",
                c.range(pct)
            ),
            Category::ResourceExhaustion,
        )
    } else {
        (
            "no write spike on the primary and no saturated replica CPU was measured; a long transaction or a replay conflict on the replica is what remains to check".to_string(),
            Category::Unknown,
        )
    };
    let state = if recovered { "recovered from" } else { "has" };
    vec![Signal {
        analyzer: "rds_replication_lag",
        reads_symptom: true,
        summary: format!(
            "{replica} {state} replication lag: ReplicaLag {}",
            lag.range(secs)
        ),
        detail: why.clone(),
        category,
        basis: if category == Category::Unknown {
            Basis::Observed
        } else {
            Basis::Stated
        },
        links: if category == Category::Unknown { 0 } else { 1 },
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "Replication lag on read replica {replica} reached {} ({}): {why}",
            secs(lag.max),
            lag.range(secs)
        )),
        objects: vec![rds.object(), format!("DBInstance/{replica}")],
        benign: recovered,
        ..Signal::default()
    }]
}

/// Connections at the limit, and who holds them.
fn connections(ctx: &Ctx, rds: &Rds) -> Vec<Signal> {
    let Some(st) = rds.own("DatabaseConnections") else {
        // The refusal itself proves the limit was reached, whatever CloudWatch lacks.
        let Some(r) = refusal(ctx, rds) else {
            return Vec::new();
        };
        return vec![Signal {
            analyzer: "rds_connections",
            reads_symptom: true,
            summary: format!("{}: clients refused with \"{r}\"", rds.id),
            detail: "DatabaseConnections: no data in CloudWatch".into(),
            category: Category::ResourceExhaustion,
            basis: Basis::Measured,
            links: 1,
            evidence: rds.with_events(rds.metric_evidence()),
            cause: Some(format!(
                "Connection exhaustion on {}: clients are refused with \"{r}\", PostgreSQL's answer once max_connections is reached (DatabaseConnections: no data, not measured)",
                rds.id
            )),
            objects: vec![rds.object()],
            ..Signal::default()
        }];
    };
    let lim = rds.max_connections();
    let refused = refusal(ctx, rds);
    let near = lim.as_ref().is_some_and(|(l, _)| st.max >= NEAR_LIMIT * l);
    if !near && refused.is_none() {
        return Vec::new();
    }
    let limit_words = lim
        .as_ref()
        .map(|(l, why)| {
            format!(
                " of max_connections {} ({why}; {} used)",
                count(*l),
                pct(st.max / l * 100.0)
            )
        })
        .unwrap_or_else(|| " (max_connections not read)".to_string());
    let refused_words = refused
        .as_ref()
        .map(|r| format!("; clients are refused with \"{r}\""))
        .unwrap_or_default();
    let holders = match rds.top_wait() {
        Some((w, l)) if w.starts_with("Client:") => {
            let sql = rds
                .top_statement()
                .map(|t| format!("; top SQL {}", t.describe()))
                .unwrap_or_default();
            format!(
                "; the sessions are idle client sessions: Performance Insights' top wait is {w} ({}), the server waiting for clients that hold their connection open without sending work — a client pool that leaks or never returns its sessions{sql}",
                num(l)
            )
        }
        Some((w, l)) => format!(
            "; Performance Insights' top wait is {w} ({}): the sessions are busy, not idle",
            num(l)
        ),
        None => "; who holds them was not measured (no Performance Insights)".to_string(),
    };
    vec![Signal {
        analyzer: "rds_connections",
        reads_symptom: true,
        summary: format!(
            "{} connections at the limit: DatabaseConnections {}",
            rds.id,
            st.range(count)
        ),
        detail: format!("{limit_words}{refused_words}"),
        category: Category::ResourceExhaustion,
        basis: Basis::Stated,
        links: 1,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(format!(
            "Connection exhaustion on {}: DatabaseConnections reached {}{limit_words}{refused_words}{holders}",
            rds.id,
            count(st.max)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// CPU saturated for long enough to be the problem, with the SQL that burns it.
fn cpu(rds: &Rds, onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>) -> Vec<Signal> {
    let Some(c) = rds.own("CPUUtilization") else {
        return cpu_from_load(rds);
    };
    let busy = c.count_past(CPU_SATURATED, true);
    if !cpu_sustained(&c) {
        return Vec::new();
    }
    let since = c.crossed(CPU_SATURATED, true).unwrap_or(c.start);
    let lines_up = onset.is_none_or(|(o, _)| (o - since).num_minutes().abs() <= 10);
    let top = rds.top_statement();
    let sql = top
        .as_ref()
        .map(|t| {
            format!(
                "; Performance Insights' top query by load: {}",
                t.describe()
            )
        })
        .unwrap_or_else(|| {
            "; which query burns it is a gap: Performance Insights was not read".into()
        });
    let reads = rds
        .own("ReadIOPS")
        .filter(|r| r.max >= 5000.0 || r.max >= 2.0 * r.base)
        .map(|r| {
            format!(
                "; ReadIOPS {} alongside, the pattern of repeated full scans",
                r.range(per_s)
            )
        })
        .unwrap_or_default();
    let vcpu = rds
        .vcpus()
        .and_then(|v| {
            rds.load_now().map(|l| {
                format!(
                    "; DB load {} average active sessions on {} vCPUs",
                    num(l),
                    num(v)
                )
            })
        })
        .unwrap_or_default();
    vec![Signal {
        analyzer: "rds_cpu",
        reads_symptom: true,
        summary: format!("{} CPU saturated: CPUUtilization {}", rds.id, c.range(pct)),
        detail: format!(
            "{busy} of {} points at or above {CPU_SATURATED}%",
            c.points.len()
        ),
        category: Category::ResourceExhaustion,
        basis: if lines_up {
            Basis::Stated
        } else {
            Basis::Observed
        },
        links: if lines_up { 1 } else { 0 },
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "CPU saturation on {}: CPUUtilization at or above {CPU_SATURATED}% since {} ({}){vcpu}{sql}{reads}",
            rds.id,
            hhmm(since),
            c.range(pct)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// Without CPUUtilization, Performance Insights still shows saturation: sessions waiting on CPU
/// at least as many as the class has vCPUs.
fn cpu_from_load(rds: &Rds) -> Vec<Signal> {
    let vcpu = rds.vcpus();
    // The load as it stands: the last third of the window, when higher than since the onset.
    let recent = rds.load.map(|l| {
        let n = l.points.len();
        mean(&l.points[n - n.div_ceil(3)..])
    });
    let load = match (rds.load_now(), recent) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let (Some(v), Some(load), Some((wait, _))) = (vcpu, load, rds.top_wait()) else {
        return Vec::new();
    };
    if load < 0.9 * v || !wait.starts_with("CPU") {
        return Vec::new();
    }
    let sql = rds
        .top_statement()
        .map(|t| {
            format!(
                "; Performance Insights' top query by load: {}",
                t.describe()
            )
        })
        .unwrap_or_default();
    vec![Signal {
        analyzer: "rds_cpu",
        reads_symptom: true,
        summary: format!(
            "{} CPU saturated: DB load {} on {} vCPUs, mostly {wait}",
            rds.id,
            num(load),
            num(v)
        ),
        detail: "CPUUtilization: no data in CloudWatch".into(),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "CPU saturation on {}: Performance Insights shows DB load {} average active sessions on {} vCPUs, waiting mostly on {wait} (CPUUtilization: no data, not measured){sql}",
            rds.id,
            num(load),
            num(v)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// CPU at or above saturation for at least three points in a row: a blip is not saturation.
fn cpu_sustained(c: &Stats) -> bool {
    let mut run = 0;
    let mut longest = 0;
    for p in &c.points {
        run = if p.1 >= CPU_SATURATED { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest >= 3
}

/// Free storage falling fast toward nothing: near-empty for the volume, or full within two hours
/// at the window's rate.
fn storage_failing(rds: &Rds, st: &Stats) -> bool {
    let allocated = rds
        .instance
        .and_then(|i| i.allocated_storage_gib)
        .map(|g| g * GIB);
    let falling = st.end <= st.base / DEPARTED && st.base - st.end > floor("FreeStorageSpace");
    let soon = storage_slope(st) > 0.0 && st.end / storage_slope(st) <= 120.0;
    // Near-empty is failing whatever the level before: a disk full all window long is full.
    let near_empty = allocated.is_some_and(|a| st.end <= 0.1 * a) || st.end <= 1e9;
    near_empty || (falling && soon)
}

/// An RDS event that says the instance ran out of storage or is critically low on it.
fn storage_event<'a>(rds: &Rds<'a>) -> Option<&'a RdsEvent> {
    rds.events.iter().copied().find(|e| {
        let m = e.message.to_lowercase();
        m.contains("storage")
            && [
                "ran out",
                "storage-full",
                "full",
                "insufficient",
                "critically low",
                "running low",
                "low on",
                "exhausted",
            ]
            .iter()
            .any(|w| m.contains(w))
    })
}

/// Bytes of free storage lost per minute over the window.
fn storage_slope(st: &Stats) -> f64 {
    let minutes = (st.last_at - st.start).num_seconds() as f64 / 60.0;
    if minutes > 0.0 {
        (st.first - st.end) / minutes
    } else {
        0.0
    }
}

/// Freeable memory nearly gone with swap growing.
fn memory(rds: &Rds) -> Vec<Signal> {
    let (Some(m), Some(sw)) = (rds.own("FreeableMemory"), rds.own("SwapUsage")) else {
        return Vec::new();
    };
    let total = rds.class().and_then(class_memory_bytes);
    let low = total.map_or(m.min <= 256.0 * 1024.0 * 1024.0, |t| m.min <= 0.05 * t);
    let swapping = sw.max >= 2.0 * sw.base && sw.max - sw.base > floor("SwapUsage");
    if !(low && swapping) {
        return Vec::new();
    }
    vec![Signal {
        analyzer: "rds_memory",
        reads_symptom: true,
        summary: format!("{} under memory pressure", rds.id),
        detail: format!("FreeableMemory {}; SwapUsage {}", m.range(gb), sw.range(gb)),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        links: 1,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "Memory pressure on {}: FreeableMemory fell to {} and SwapUsage grew {}",
            rds.id,
            gb(m.min),
            sw.range(gb)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// I/O at the volume's limit: latency up with a deep queue, or IOPS at the provisioned rate.
fn io(rds: &Rds) -> Vec<Signal> {
    let queue = rds
        .own("DiskQueueDepth")
        .filter(|q| q.max >= 10.0 && q.max >= 3.0 * q.base.max(1.0));
    let latency = ["WriteLatency", "ReadLatency"].iter().find_map(|m| {
        rds.own(m)
            .filter(|l| l.max >= 0.02 && l.max >= 5.0 * l.base.max(0.001))
            .map(|l| (*m, l))
    });
    let iops_cap = rds.instance.and_then(|i| i.iops).and_then(|cap| {
        let r = rds.own("ReadIOPS").map(|s| s.max).unwrap_or(0.0);
        let w = rds.own("WriteIOPS").map(|s| s.max).unwrap_or(0.0);
        (r + w >= NEAR_LIMIT * cap).then_some((r + w, cap))
    });
    if queue.is_none() && iops_cap.is_none() {
        return Vec::new();
    }
    let Some((metric, lat)) = latency else {
        return Vec::new();
    };
    let mut why = Vec::new();
    if let Some(q) = &queue {
        why.push(format!("DiskQueueDepth {}", q.range(count)));
    }
    if let Some((used, cap)) = iops_cap {
        why.push(format!("IOPS {} of {} provisioned", num(used), num(cap)));
    }
    vec![Signal {
        analyzer: "rds_io",
        reads_symptom: true,
        summary: format!("{} I/O saturated: {metric} {}", rds.id, lat.range(ms)),
        detail: why.join("; "),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "I/O saturation on {}: {metric} {} with {}",
            rds.id,
            lat.range(ms),
            why.join(" and ")
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// A WAL (and checkpoint) storm: transaction log generation many times its level before, with
/// commits or writes slowing behind it. Where a replica falls behind it, the lag check says so.
fn wal_storm(rds: &Rds) -> Vec<Signal> {
    let Some(wal) = rds.own("TransactionLogsGeneration") else {
        return Vec::new();
    };
    let before = wal.first.min(wal.base);
    if !(wal.max >= 4.0 * before && wal.max >= 50e6) {
        return Vec::new();
    }
    let slowed: Vec<String> = ["CommitLatency", "WriteLatency", "DiskQueueDepth"]
        .iter()
        .filter_map(|m| {
            let st = rds.own(m)?;
            (st.max >= 3.0 * st.first.min(st.base).max(1e-9))
                .then(|| format!("{m} {}", st.range(formatter(m))))
        })
        .collect();
    let top = rds
        .top_statement()
        .filter(TopSql::writes)
        .map(|t| format!("; Performance Insights' top SQL: {}", t.describe()))
        .unwrap_or_default();
    let behind = if slowed.is_empty() {
        String::new()
    } else {
        format!("; writes slow behind it: {}", slowed.join(", "))
    };
    vec![Signal {
        analyzer: "rds_wal_storm",
        reads_symptom: true,
        summary: format!(
            "{} WAL storm: TransactionLogsGeneration {}",
            rds.id,
            wal.range(mb_s)
        ),
        detail: "every write is logged before it is applied; checkpoints follow the log".into(),
        category: Category::ResourceExhaustion,
        basis: if slowed.is_empty() {
            Basis::Timed
        } else {
            Basis::Measured
        },
        links: 1,
        evidence: rds.with_pi(rds.metric_evidence()),
        cause: Some(format!(
            "WAL storm on {}: a write-heavy workload generates transaction log at {} (from {}){behind}{top}",
            rds.id,
            mb_s(wal.max),
            mb_s(before)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// Transaction IDs near wraparound protection.
fn wraparound(rds: &Rds) -> Vec<Signal> {
    let Some(x) = rds
        .own("MaximumUsedTransactionIDs")
        .filter(|x| x.max >= WRAPAROUND_XIDS)
    else {
        return Vec::new();
    };
    vec![Signal {
        analyzer: "rds_wraparound",
        reads_symptom: true,
        summary: format!(
            "{} transaction IDs near wraparound: {}",
            rds.id,
            count(x.max)
        ),
        detail: "PostgreSQL stops accepting writes at about 2.1 billion unfrozen transaction IDs"
            .into(),
        category: Category::ResourceExhaustion,
        basis: Basis::Measured,
        evidence: rds.metric_evidence(),
        cause: Some(format!(
            "Transaction-ID wraparound risk on {}: MaximumUsedTransactionIDs {} (vacuum is not freezing rows fast enough)",
            rds.id,
            count(x.max)
        )),
        objects: vec![rds.object()],
        ..Signal::default()
    }]
}

/// What the measurements rule out, each with its values: CPU, connections, storage, lag,
/// and RDS events that are routine or do not line up.
fn ruled_out(
    rds: &Rds,
    onset: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
    found: &[Signal],
) -> Vec<RuledOut> {
    let mut out = Vec::new();
    let ev = rds.metric_evidence();
    // A failing check that measures `metric` (`falls`: a fall is its failure).
    let has = |metric: &str, falls: bool| {
        found
            .iter()
            .any(|s| s.decl().reads(metric, falls) && s.cause.is_some() && !s.benign)
    };
    if !has("CPUUtilization", false)
        && let Some(c) = rds.own("CPUUtilization")
    {
        let spike = c.count_past(CPU_SATURATED, true);
        let reason = if spike > 0 {
            let apart = onset
                .map(|(o, _)| {
                    format!(
                        ", {} min from the symptom at {}",
                        (c.max_at - o).num_minutes().abs(),
                        hhmm(o)
                    )
                })
                .unwrap_or_default();
            format!(
                "CPUUtilization reached {} at {} for only {spike} point(s){apart}: a blip, not sustained saturation",
                pct(c.max),
                hhmm(c.max_at)
            )
        } else {
            format!(
                "CPUUtilization stayed at {}–{}, below {CPU_SATURATED}%: no CPU saturation",
                pct(c.min),
                pct(c.max)
            )
        };
        out.push(RuledOut {
            statement: "CPU saturation".into(),
            reason,
            evidence: ev.clone(),
        });
    }
    if !has("DatabaseConnections", false)
        && let Some(c) = rds.own("DatabaseConnections")
    {
        let lim = rds
            .max_connections()
            .map(|(l, why)| {
                format!(
                    ", {} of max_connections {} ({why})",
                    pct(c.max / l * 100.0),
                    count(l)
                )
            })
            .unwrap_or_default();
        out.push(RuledOut {
            statement: "connection exhaustion".into(),
            reason: format!(
                "DatabaseConnections stayed at {}–{}{lim}: no connection limit reached",
                count(c.min),
                count(c.max)
            ),
            evidence: ev.clone(),
        });
    }
    if !has("FreeStorageSpace", true)
        && let Some(s) = rds.own("FreeStorageSpace")
    {
        out.push(RuledOut {
            statement: "storage full".into(),
            reason: format!("FreeStorageSpace stayed at {}–{}", gb(s.min), gb(s.max)),
            evidence: ev.clone(),
        });
    }
    if !has("ReplicaLag", false)
        && let Some((r, l)) = rds.worst_replica("ReplicaLag")
        && l.max < LAG_SECS
    {
        out.push(RuledOut {
            statement: "replication lag".into(),
            reason: format!("ReplicaLag on {r} at most {}", secs(l.max)),
            evidence: ev.clone(),
        });
    }
    if !has("DatabaseConnections", true) {
        for e in &rds.events {
            let m = e.message.to_lowercase();
            let routine = e.categories.iter().any(|c| {
                matches!(
                    c.as_str(),
                    "backup" | "maintenance" | "configuration change" | "notification"
                )
            }) || m.contains("backup")
                || m.contains("parameter group");
            let far = onset.is_some_and(|(o, _)| (e.at - o).num_minutes().abs() > 30);
            if routine && (far || !m.contains("fail")) {
                out.push(RuledOut {
                    statement: format!("RDS event \"{}\"", e.message.trim()),
                    reason: format!(
                        "routine {} at {}{}, not a failure",
                        e.categories.first().map(String::as_str).unwrap_or("event"),
                        hms(e.at),
                        onset
                            .map(|(o, _)| format!(
                                ", {} min from the symptom",
                                (e.at - o).num_minutes().abs()
                            ))
                            .unwrap_or_default()
                    ),
                    evidence: rds.ev_events.clone(),
                });
            }
        }
    }
    out
}

/// Nothing failing: the verdict of health, with what was measured and what was not an error.
fn all_within_bounds(rds: &Rds, ruled: &mut Vec<RuledOut>) -> Signal {
    let checks = health_checks(rds);
    let errors: Vec<&&RdsEvent> = rds
        .events
        .iter()
        .filter(|e| {
            let m = e.message.to_lowercase();
            e.categories
                .iter()
                .any(|c| c == "failure" || c == "failover")
                || m.contains("error")
                || m.contains("fail")
        })
        .collect();
    let events = if rds.ev_events.is_empty() {
        "RDS events were not read".to_string()
    } else if errors.is_empty() {
        let routine: Vec<String> = rds
            .events
            .iter()
            .map(|e| {
                e.categories
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "event".into())
            })
            .collect();
        if routine.is_empty() {
            "no error or failure events in the RDS events".to_string()
        } else {
            format!(
                "no error or failure events in the RDS events (only routine: {})",
                routine.join(", ")
            )
        }
    } else {
        format!("{} failure event(s) in the RDS events", errors.len())
    };
    let pi = rds
        .top_wait()
        .map(|(w, l)| {
            format!(
                "; Performance Insights shows no dominant bottleneck (top wait {w} at {})",
                num(l)
            )
        })
        .unwrap_or_default();
    let mut s = Signal {
        analyzer: "metric_within_bounds",
        reads_symptom: true,
        summary: format!("{}: every measured metric within normal bounds", rds.id),
        detail: checks
            .iter()
            .map(|c| c.words.clone())
            .collect::<Vec<_>>()
            .join("; "),
        category: Category::Healthy,
        basis: Basis::Stated,
        evidence: rds.with_pi(rds.with_events(rds.metric_evidence())),
        cause: Some(format!(
            "No failure on {}: every measured metric stayed within normal bounds ({}); {events}{pi}{gaps}",
            rds.id,
            checks
                .iter()
                .map(|c| c.words.clone())
                .collect::<Vec<_>>()
                .join("; "),
            gaps = if rds.missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; not measured (no data): {}",
                    crate::reason::list_names(&rds.missing, 8)
                )
            },
        )),
        benign: true,
        objects: vec![rds.object()],
        ..Signal::default()
    };
    if !errors.is_empty() {
        s.benign = false;
        s.cause = None;
        s.category = Category::Unknown;
    }
    s.ruled_out.append(ruled);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_connection_limits_follow_the_class_memory() {
        assert_eq!(default_max_connections("db.r6g.xlarge"), Some(3604.0));
        assert_eq!(default_max_connections("db.r6g.2xlarge"), Some(5000.0));
        assert_eq!(default_max_connections("db.t3.micro"), Some(112.0));
        assert_eq!(default_max_connections("nonsense"), None);
    }

    #[test]
    fn sizes_give_vcpus() {
        assert_eq!(vcpus("large"), Some(2.0));
        assert_eq!(vcpus("2xlarge"), Some(8.0));
        assert_eq!(vcpus("12xlarge"), Some(48.0));
        assert_eq!(vcpus("medium"), Some(2.0));
        assert_eq!(vcpus("huge"), None);
    }
}
