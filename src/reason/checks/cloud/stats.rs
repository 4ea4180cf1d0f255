//! A CloudWatch series reduced to what the RDS checks compare, and how its values read in sentences.

use crate::model::MetricSeries;
use chrono::{DateTime, Utc};

/// A series reduced to what the checks compare.
#[derive(Clone, Debug)]
pub(super) struct Stats {
    pub(super) first: f64,
    /// The level at the start of the window (median of its first points).
    pub(super) base: f64,
    /// The level at the end (mean of its last points).
    pub(super) end: f64,
    pub(super) min: f64,
    pub(super) max: f64,
    pub(super) min_at: DateTime<Utc>,
    pub(super) max_at: DateTime<Utc>,
    pub(super) start: DateTime<Utc>,
    pub(super) last_at: DateTime<Utc>,
    pub(super) points: Vec<(DateTime<Utc>, f64)>,
}

impl Stats {
    pub(super) fn of(s: &MetricSeries) -> Stats {
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
    pub(super) fn crossed(&self, level: f64, above: bool) -> Option<DateTime<Utc>> {
        self.points
            .iter()
            .find(|p| if above { p.1 >= level } else { p.1 <= level })
            .map(|p| p.0)
    }

    /// Points at or past `level`.
    pub(super) fn count_past(&self, level: f64, above: bool) -> usize {
        self.points
            .iter()
            .filter(|p| if above { p.1 >= level } else { p.1 <= level })
            .count()
    }

    /// The range in words: `312 → 494 (peak 494 at 11:34 UTC)`.
    pub(super) fn range(&self, fmt: fn(f64) -> String) -> String {
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

pub(super) fn mean(points: &[(DateTime<Utc>, f64)]) -> f64 {
    if points.is_empty() {
        return 0.0;
    }
    points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64
}

pub(super) fn hhmm(t: DateTime<Utc>) -> String {
    t.format("%H:%M UTC").to_string()
}

pub(super) fn hms(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S UTC").to_string()
}

pub(super) fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub(super) fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

pub(super) fn gb(v: f64) -> String {
    format!("{:.1} GB", v / 1e9)
}

pub(super) fn mb_s(v: f64) -> String {
    format!("{:.1} MB/s", v / 1e6)
}

pub(super) fn per_s(v: f64) -> String {
    format!("{}/s", num(v))
}

pub(super) fn secs(v: f64) -> String {
    format!("{} s", num(v))
}

pub(super) fn count(v: f64) -> String {
    num(v)
}

pub(super) fn ms(v: f64) -> String {
    // CloudWatch reports latency in seconds; some exports use milliseconds.
    format!("{:.1} ms", v * 1000.0)
}

/// How a metric reads, for sentences.
pub(super) fn formatter(metric: &str) -> fn(f64) -> String {
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

/// The least absolute change that counts, so noise around zero is no departure.
pub(super) fn floor(metric: &str) -> f64 {
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
