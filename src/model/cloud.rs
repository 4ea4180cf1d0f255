//! Facts read from AWS about managed databases: RDS instances and events, CloudWatch series,
//! Performance Insights load. Plain data; the AWS client fills it, the Cloud analyzers read it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One RDS instance, as `DescribeDBInstances` describes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct RdsInstance {
    pub id: String,
    pub class: Option<String>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub status: Option<String>,
    pub allocated_storage_gib: Option<f64>,
    pub max_allocated_storage_gib: Option<f64>,
    pub storage_type: Option<String>,
    pub iops: Option<f64>,
    pub multi_az: Option<bool>,
    pub availability_zone: Option<String>,
    pub secondary_availability_zone: Option<String>,
    pub replicas: Vec<String>,
    pub replica_source: Option<String>,
    pub resource_id: Option<String>,
    pub performance_insights: Option<bool>,
}

/// One RDS event (`DescribeEvents`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RdsEvent {
    pub at: DateTime<Utc>,
    pub source: String,
    #[serde(default)]
    pub source_type: String,
    pub message: String,
    #[serde(default)]
    pub categories: Vec<String>,
}

/// One CloudWatch metric of one instance to read.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct MetricQuery {
    pub instance: String,
    pub metric: String,
    pub stat: String,
}

/// One CloudWatch series (`GetMetricData`), oldest point first. An empty series is a metric the
/// service had no data for: absent, never zero.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct MetricSeries {
    pub instance: String,
    pub metric: String,
    pub stat: String,
    #[serde(default)]
    pub complete: bool,
    pub points: Vec<(DateTime<Utc>, f64)>,
}

/// Performance Insights' `db.load.avg` over time, for one dimension value (a wait event) or in total.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct PiSeries {
    #[serde(default)]
    pub dimensions: BTreeMap<String, String>,
    pub points: Vec<(DateTime<Utc>, f64)>,
}

/// One top key of `DescribeDimensionKeys`: a statement or a wait event, its average load, and
/// (when partitioned) its load per wait event.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct PiKey {
    #[serde(default)]
    pub dimensions: BTreeMap<String, String>,
    pub total: f64,
    #[serde(default)]
    pub partitions: Vec<(BTreeMap<String, String>, f64)>,
}

impl PiKey {
    /// The statement's text (`db.sql.statement`), or the wait event's name.
    pub fn label(&self) -> String {
        for k in [
            "db.sql.statement",
            "db.sql_tokenized.statement",
            "db.wait_event.name",
            "db.user.name",
        ] {
            if let Some(v) = self.dimensions.get(k) {
                return v.clone();
            }
        }
        self.dimensions.values().next().cloned().unwrap_or_default()
    }

    /// The wait event this key waits on most, with its load.
    pub fn top_wait(&self) -> Option<(String, f64)> {
        self.partitions
            .iter()
            .filter_map(|(d, v)| d.get("db.wait_event.name").map(|n| (n.clone(), *v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// What one AWS read returned.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CloudFact {
    Instance(Box<RdsInstance>),
    Event(RdsEvent),
    Metric(MetricSeries),
    /// `db.load.avg`, in total or by one wait event.
    Load(PiSeries),
    /// A top key, with the dimension group it was grouped by (`db.sql`, `db.wait_event`).
    Top {
        group: String,
        key: PiKey,
    },
    /// A kind this build does not know (written by a newer one).
    #[serde(other)]
    Other,
}
