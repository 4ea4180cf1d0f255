//! A generator of RDS worlds in OpenSRE's scenario format: fault classes crossed with instance
//! names and classes, label conventions, alert wordings, distractor instances, missing metrics,
//! routine events and CPU blips. Each world is imported and investigated; the verdict must name
//! the right category and the subject's own cause, and never a distractor's.
//!
//! `SITREP_RDS_SEED` picks other draws; `SITREP_RDS_KEEP=1` keeps the worlds in target/rds-worlds.

use serde_json::{Value, json};
use sitrep::eval::{self, EvalOptions};
use sitrep::model::Category;
use std::path::Path;
use std::time::Duration;

/// A small deterministic generator (splitmix64), so a seed names one set of worlds.
struct Rng(std::cell::Cell<u64>);

impl Rng {
    fn next(&self) -> u64 {
        self.0.set(self.0.get().wrapping_add(0x9E37_79B9_7F4A_7C15));
        let mut z = self.0.get();
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn f(&self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() % 10_000) as f64 / 10_000.0 * (hi - lo)
    }
    fn chance(&self, p: f64) -> bool {
        self.f(0.0, 1.0) < p
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Cpu,
    Connections,
    Storage,
    ReplicationLag,
    Failover,
    NoisyHealthy,
    HealthCheck,
    /// CPU saturated for a while, back to its level before the end.
    Recovered,
    /// A CPU alert with no CPUUtilization in CloudWatch: Performance Insights' load tells.
    CpuFromInsights,
    /// A storage alert with neither FreeStorageSpace nor events nor insights: nothing measures it.
    Unmeasured,
    /// A connections alert whose connections pile up behind a saturated CPU (sessions busy on CPU).
    PileUp,
}

const CLASSES: [Class; 11] = [
    Class::Cpu,
    Class::Connections,
    Class::Storage,
    Class::ReplicationLag,
    Class::Failover,
    Class::NoisyHealthy,
    Class::HealthCheck,
    Class::Recovered,
    Class::CpuFromInsights,
    Class::Unmeasured,
    Class::PileUp,
];

impl Class {
    fn expected(self) -> Category {
        match self {
            Class::Failover => Category::Infrastructure,
            Class::NoisyHealthy | Class::HealthCheck | Class::Recovered => Category::Healthy,
            Class::Unmeasured => Category::Unknown,
            _ => Category::ResourceExhaustion,
        }
    }
    /// Words the root cause must hold.
    fn cause_words(self) -> &'static [&'static str] {
        match self {
            Class::Cpu => &["cpu saturation"],
            Class::Connections => &["connection exhaustion", "max_connections"],
            Class::Storage => &["storage", "freestoragespace"],
            Class::ReplicationLag => &["replication lag", "write-heavy workload"],
            Class::Failover => &["failover"],
            Class::NoisyHealthy | Class::HealthCheck => &["no failure"],
            Class::Recovered => &["recovered", "cpu saturation"],
            Class::CpuFromInsights => &["cpu saturation", "no data"],
            Class::PileUp => &["cpu saturation", "consequence of the cpu saturation"],
            Class::Unmeasured => &["freestoragespace"],
        }
    }
    /// Words the root cause must not hold.
    fn not_cause(self) -> &'static [&'static str] {
        match self {
            Class::Cpu | Class::CpuFromInsights | Class::Recovered => &["connection exhaustion"],
            Class::Unmeasured => &["no failure"],
            Class::PileUp => &["connection exhaustion on", "idle client sessions"],
            Class::Connections | Class::ReplicationLag | Class::Storage => &["cpu saturation"],
            _ => &["cpu saturation", "connection exhaustion"],
        }
    }
}

const NAMES: [&str; 8] = [
    "payments",
    "orders",
    "ledger",
    "catalog",
    "users",
    "billing",
    "search",
    "inventory",
];
const SUFFIXES: [&str; 4] = ["prod", "primary", "db", "pg-main"];
const CLASSES_RDS: [(&str, f64, f64); 5] = [
    // class, vCPUs, default max_connections
    ("db.r6g.large", 2.0, 1802.0),
    ("db.r6g.xlarge", 4.0, 3604.0),
    ("db.r6g.2xlarge", 8.0, 5000.0),
    ("db.m5.xlarge", 4.0, 1802.0),
    ("db.t3.medium", 2.0, 450.0),
];
const KEYS: [&str; 3] = [
    "db_instance_identifier",
    "DBInstanceIdentifier",
    "dbinstance_identifier",
];

struct World {
    id: String,
    class: Class,
    instance: String,
    distractor: String,
    dir: std::path::PathBuf,
}

fn times(start: chrono::DateTime<chrono::Utc>, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            (start + chrono::Duration::minutes(i as i64))
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        })
        .collect()
}

fn series(
    metric: &str,
    instance: &str,
    stat: &str,
    unit: &str,
    stamps: &[String],
    values: Vec<f64>,
) -> Value {
    json!({
        "id": format!("m_{}", metric.to_lowercase()),
        "label": metric,
        "metric_name": metric,
        "dimensions": [{"Name": "DBInstanceIdentifier", "Value": instance}],
        "stat": stat,
        "unit": unit,
        "status_code": "Complete",
        "timestamps": stamps,
        "values": values,
    })
}

fn flat(r: &Rng, n: usize, level: f64, noise: f64) -> Vec<f64> {
    (0..n)
        .map(|_| (level + r.f(-noise, noise)).max(0.0))
        .collect()
}

/// From `lo` to `hi` starting at `at`, with noise.
fn ramp(r: &Rng, n: usize, lo: f64, hi: f64, at: usize, noise: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let v = if i < at {
                lo
            } else {
                let k = ((i - at + 1) as f64 / (n - at).max(1) as f64).min(1.0);
                lo + (hi - lo) * k.sqrt()
            };
            (v + r.f(-noise, noise)).max(0.0)
        })
        .collect()
}

fn generate(r: &Rng, class: Class, n_world: usize, root: &Path) -> World {
    let name = format!("{}-{}", r.pick(&NAMES), r.pick(&SUFFIXES));
    let distractor = loop {
        let d = format!("{}-{}", r.pick(&NAMES), r.pick(&SUFFIXES));
        if d != name && !d.starts_with(&name) && !name.starts_with(&d) {
            break d;
        }
    };
    let (rds_class, vcpus, max_conn) = *r.pick(&CLASSES_RDS);
    let n = 15 + r.below(8);
    let start = chrono::DateTime::parse_from_rfc3339("2026-05-04T09:00:00Z")
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_default()
        + chrono::Duration::hours(r.below(200) as i64);
    let stamps = times(start, n);
    let at = 2 + r.below(n / 3);
    let replica = format!("{name}-replica-1");
    let has_replica = class == Class::ReplicationLag || r.chance(0.4);

    // Baselines, then the fault on top.
    let mut cpu = flat(r, n, r.f(12.0, 35.0), 3.0);
    let base_conn = (max_conn * r.f(0.05, 0.25)).round();
    let mut conns = flat(r, n, base_conn, base_conn * 0.03);
    let free0 = r.f(50.0, 400.0) * 1e9;
    let mut free = flat(r, n, free0, 0.0);
    let mut write_iops = flat(r, n, r.f(500.0, 2000.0), 60.0);
    let mut txlogs = flat(r, n, r.f(2.0, 6.0) * 1e6, 2e5);
    let mut read_iops = flat(r, n, r.f(500.0, 2500.0), 80.0);
    let mut lag = flat(r, n, 1.3, 0.3);
    let mut events: Vec<Value> = Vec::new();
    let mut top_sql: Vec<Value> = vec![json!({
        "statement": "SELECT id, status FROM accounts WHERE id = $1",
        "db_load_avg": 0.6,
        "wait_events": [{"name": "CPU", "type": "CPU", "db_load_avg": 0.4}, {"name": "IO:DataFileRead", "type": "IO", "db_load_avg": 0.2}],
    })];
    let mut top_waits = vec![
        json!({"name": "CPU", "type": "CPU", "db_load_avg": 0.5}),
        json!({"name": "IO:DataFileRead", "type": "IO", "db_load_avg": 0.3}),
    ];
    let mut load = flat(r, n, r.f(0.5, 2.0), 0.2);
    let mut severity = "critical";
    let (alertname, summary): (String, String);
    let event_at = |i: usize| stamps[i.min(n - 1)].clone();
    match class {
        Class::Cpu => {
            cpu = ramp(r, n, cpu[0], r.f(88.0, 98.0), at, 1.5);
            read_iops = ramp(r, n, read_iops[0], r.f(9000.0, 18000.0), at, 200.0);
            load = ramp(r, n, load[0], vcpus * r.f(0.9, 1.2), at, 0.1);
            top_sql.insert(0, json!({
                "statement": "SELECT * FROM orders WHERE status = $1",
                "db_load_avg": vcpus * 0.85,
                "wait_events": [{"name": "CPU:user", "type": "CPU", "db_load_avg": vcpus * 0.7}, {"name": "IO:DataFileRead", "type": "IO", "db_load_avg": vcpus * 0.15}],
            }));
            top_waits.insert(
                0,
                json!({"name": "CPU:user", "type": "CPU", "db_load_avg": vcpus * 0.75}),
            );
            alertname = r
                .pick(&["RDSCPUUtilizationHigh", "DatabaseCPUHigh", "HighCPUOnRDS"])
                .to_string();
            summary = format!("CPU on {name} above 85% for 15 minutes.");
        }
        Class::Connections => {
            let limit = if r.chance(0.5) {
                // A parameter group below the class default, stated by an RDS notification.
                let l = (max_conn * r.f(0.1, 0.5)).round();
                events.push(json!({"date": event_at(n - 4), "message": format!("DB instance {name} is approaching max_connections limit. Current connections: {} of {}.", (l * 0.94).round(), l), "source_identifier": name, "source_type": "db-instance", "event_categories": ["notification"]}));
                l
            } else {
                max_conn
            };
            conns = ramp(
                r,
                n,
                (limit * 0.3).round(),
                (limit * r.f(0.95, 0.99)).round(),
                at,
                2.0,
            );
            cpu = ramp(r, n, cpu[0], r.f(40.0, 60.0), at, 2.0);
            top_sql.insert(0, json!({
                "statement": "BEGIN; SELECT * FROM invoices WHERE account_id = $1",
                "db_load_avg": 5.5,
                "wait_events": [{"name": "Client:ClientRead", "type": "Client", "db_load_avg": 5.1}, {"name": "CPU", "type": "CPU", "db_load_avg": 0.4}],
            }));
            top_waits.insert(
                0,
                json!({"name": "Client:ClientRead", "type": "Client", "db_load_avg": 5.2}),
            );
            alertname = r
                .pick(&[
                    "RDSDatabaseConnectionsHigh",
                    "PostgresTooManyConnections",
                    "DBConnectionsExhausted",
                ])
                .to_string();
            summary = format!(
                "Connections on {name} near max_connections; clients report: remaining connection slots are reserved for non-replication superuser connections."
            );
        }
        Class::Storage => {
            let full = r.f(0.002, 0.03) * free0;
            free = ramp(r, n, free0 * r.f(0.05, 0.1), full, at, 0.0);
            free.iter_mut().enumerate().for_each(|(i, v)| {
                if i < at {
                    *v = free0 * 0.08
                }
            });
            // A disk already near empty before the window: it does not fall here, it is full,
            // and RDS says so (with no allocated size recorded, the series alone cannot).
            let flat = r.chance(0.3);
            if flat {
                free.iter_mut().for_each(|v| *v = full);
            }
            write_iops = ramp(r, n, write_iops[0], r.f(5000.0, 9000.0), at, 100.0);
            if flat || r.chance(0.6) {
                events.push(json!({"date": event_at(n - 2), "message": "DB instance ran out of storage space.", "source_identifier": name, "source_type": "db-instance", "event_categories": ["failure"]}));
            }
            top_sql.insert(
                0,
                json!({
                    "statement": "INSERT INTO archive SELECT * FROM orders WHERE created_at < $1",
                    "db_load_avg": 4.0,
                    "wait_events": [{"name": "IO:DataFileWrite", "type": "IO", "db_load_avg": 3.4}],
                }),
            );
            alertname = r
                .pick(&[
                    "RDSFreeStorageSpaceLow",
                    "DatabaseDiskAlmostFull",
                    "RDSStorageCritical",
                ])
                .to_string();
            summary = format!("Free storage on {name} is critically low.");
        }
        Class::ReplicationLag => {
            lag = ramp(r, n, 1.2, r.f(600.0, 1800.0), at, 5.0);
            write_iops = ramp(
                r,
                n,
                write_iops[0],
                write_iops[0] * r.f(4.0, 9.0),
                at,
                100.0,
            );
            txlogs = ramp(r, n, txlogs[0], txlogs[0] * r.f(10.0, 40.0), at, 1e5);
            top_sql.insert(0, json!({
                "statement": "UPDATE orders SET status = 'settled' WHERE batch_id = $1",
                "db_load_avg": 6.0,
                "wait_events": [{"name": "IO:WALWrite", "type": "IO", "db_load_avg": 4.5}, {"name": "CPU", "type": "CPU", "db_load_avg": 1.5}],
            }));
            alertname = r
                .pick(&["RDSReplicationLagHigh", "ReplicaLagging", "RDSReplicaLag"])
                .to_string();
            summary = format!("Read replica {replica} is far behind its primary {name}.");
        }
        Class::Failover => {
            let down = at + 1;
            for v in [&mut conns, &mut write_iops] {
                v[down] = 0.0;
                if down + 1 < n {
                    v[down + 1] = 0.0;
                }
            }
            cpu[down] = r.f(0.5, 3.0);
            let t0 = start + chrono::Duration::minutes(down as i64) - chrono::Duration::seconds(40);
            let ts = |s: i64| {
                (t0 + chrono::Duration::seconds(s))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            };
            events.push(json!({"date": ts(0), "message": "Multi-AZ instance failover started.", "source_identifier": name, "source_type": "db-instance", "event_categories": ["failover"]}));
            events.push(json!({"date": ts(35), "message": "Multi-AZ instance failover completed.", "source_identifier": name, "source_type": "db-instance", "event_categories": ["failover"]}));
            events.push(json!({"date": ts(50), "message": "DB instance is available.", "source_identifier": name, "source_type": "db-instance", "event_categories": ["availability"]}));
            alertname = r
                .pick(&["RDSDatabaseConnectionsDrop", "DatabaseConnectionsLost"])
                .to_string();
            summary = format!("DatabaseConnections on {name} dropped to 0 for about a minute.");
        }
        Class::NoisyHealthy => {
            severity = "warning";
            conns = (0..n)
                .map(|i| (max_conn * (0.55 + 0.07 * ((i as f64) / 2.0).sin())).round())
                .collect();
            cpu = (0..n)
                .map(|i| 55.0 + 15.0 * ((i as f64) / 3.0).sin())
                .collect();
            alertname = r
                .pick(&["RDSDatabaseConnectionsHigh", "DBConnectionsWarning"])
                .to_string();
            summary = format!(
                "DatabaseConnections on {name} above the warning threshold. No errors reported."
            );
        }
        Class::Recovered | Class::CpuFromInsights => {
            let peak = r.f(90.0, 98.0);
            cpu = ramp(r, n, cpu[0], peak, at, 1.0);
            if class == Class::Recovered {
                // Saturated from the onset, back to its level for the last third of the window.
                let back = n - n / 3;
                let level = r.f(15.0, 30.0);
                for (i, v) in cpu.iter_mut().enumerate() {
                    if i >= back {
                        *v = level + r.f(-2.0, 2.0);
                    } else if i >= at {
                        *v = peak + r.f(-1.5, 1.5);
                    }
                }
            }
            load = ramp(r, n, load[0], vcpus * r.f(1.0, 1.3), at, 0.05);
            top_sql.insert(
                0,
                json!({
                    "statement": "SELECT * FROM orders WHERE status = $1",
                    "db_load_avg": vcpus * 0.9,
                    "wait_events": [{"name": "CPU", "type": "CPU", "db_load_avg": vcpus * 0.8}],
                }),
            );
            top_waits.insert(
                0,
                json!({"name": "CPU", "type": "CPU", "db_load_avg": vcpus * 0.85}),
            );
            alertname = r
                .pick(&["RDSCPUUtilizationHigh", "DatabaseCPUHigh"])
                .to_string();
            summary = format!("CPU on {name} above 85%.");
        }
        Class::PileUp => {
            cpu = ramp(r, n, cpu[0], r.f(90.0, 98.0), at, 1.0);
            conns = ramp(
                r,
                n,
                base_conn,
                (max_conn * r.f(0.93, 0.98)).round(),
                at + 1,
                2.0,
            );
            load = ramp(r, n, load[0], vcpus * r.f(1.5, 3.0), at, 0.1);
            top_sql.insert(0, json!({
                "statement": "SELECT * FROM orders o JOIN items i ON i.order_id = o.id WHERE o.status = $1",
                "db_load_avg": vcpus * 1.5,
                "wait_events": [{"name": "CPU", "type": "CPU", "db_load_avg": vcpus * 1.3}, {"name": "IO:DataFileRead", "type": "IO", "db_load_avg": vcpus * 0.2}],
            }));
            top_waits.insert(
                0,
                json!({"name": "CPU", "type": "CPU", "db_load_avg": vcpus * 1.4}),
            );
            alertname = r
                .pick(&["RDSDatabaseConnectionsHigh", "DBConnectionsExhausted"])
                .to_string();
            summary = format!(
                "Connections on {name} near max_connections; clients report: sorry, too many clients already."
            );
        }
        Class::Unmeasured => {
            alertname = r
                .pick(&["RDSFreeStorageSpaceLow", "DatabaseDiskAlmostFull"])
                .to_string();
            summary = format!("Free storage on {name} is low.");
        }
        Class::HealthCheck => {
            severity = "info";
            alertname = r
                .pick(&["RDSScheduledHealthCheck", "DatabaseHealthReport"])
                .to_string();
            summary = format!("Periodic check of {name}.");
        }
    }
    // A CPU blip far from the symptom: a red herring, never the cause.
    if matches!(
        class,
        Class::Connections | Class::Storage | Class::ReplicationLag
    ) && r.chance(0.5)
    {
        cpu[0] = r.f(85.0, 95.0);
    }
    if r.chance(0.5) && class != Class::Unmeasured {
        events.push(json!({"date": stamps[0].clone(), "message": format!("Automated backup finished for DB instance {name}."), "source_identifier": name, "source_type": "db-instance", "event_categories": ["backup"]}));
    }
    // A misleading event at the onset: a change that waits for a reboot that never happened.
    if matches!(class, Class::Cpu | Class::Connections | Class::Storage) && r.chance(0.5) {
        events.push(json!({"date": stamps[at].clone(), "message": format!("DB parameter group {name}-pg applied. The DB instance needs to be rebooted for the changes to take effect."), "source_identifier": name, "source_type": "db-instance", "event_categories": ["configuration change"]}));
    }

    let mut results = vec![
        series("CPUUtilization", &name, "Average", "Percent", &stamps, cpu),
        series(
            "DatabaseConnections",
            &name,
            "Maximum",
            "Count",
            &stamps,
            conns,
        ),
        series("FreeStorageSpace", &name, "Minimum", "Bytes", &stamps, free),
        series(
            "WriteIOPS",
            &name,
            "Average",
            "Count/Second",
            &stamps,
            write_iops,
        ),
        series(
            "TransactionLogsGeneration",
            &name,
            "Average",
            "Bytes/Second",
            &stamps,
            txlogs,
        ),
        series(
            "ReadIOPS",
            &name,
            "Average",
            "Count/Second",
            &stamps,
            read_iops,
        ),
    ];
    // Metrics a world may lack: each one missing is a gap, never a zero.
    let essential = match class {
        Class::Cpu => "CPUUtilization",
        Class::Connections | Class::Failover | Class::NoisyHealthy => "DatabaseConnections",
        Class::Storage => "FreeStorageSpace",
        Class::ReplicationLag => "WriteIOPS",
        Class::HealthCheck | Class::Recovered => "CPUUtilization",
        Class::CpuFromInsights | Class::Unmeasured => "",
        Class::PileUp => "DatabaseConnections",
    };
    results.retain(|s| {
        let m = s["metric_name"].as_str().unwrap_or("");
        if (class == Class::CpuFromInsights && m == "CPUUtilization")
            || (class == Class::Unmeasured && m == "FreeStorageSpace")
        {
            return false;
        }
        m == essential
            || (m == "TransactionLogsGeneration" && class == Class::ReplicationLag)
            || !r.chance(0.15)
    });
    if has_replica {
        results.push(series(
            "ReplicaLag",
            &replica,
            "Maximum",
            "Seconds",
            &stamps,
            lag,
        ));
    }
    // A broken neighbour in the same account: its failure is not the subject's.
    let distract = flat(r, n, 97.0, 1.0);
    results.push(series(
        "CPUUtilization",
        &distractor,
        "Average",
        "Percent",
        &stamps,
        distract,
    ));
    let distract_conn = flat(r, n, 4990.0, 5.0);
    results.push(series(
        "DatabaseConnections",
        &distractor,
        "Maximum",
        "Count",
        &stamps,
        distract_conn,
    ));
    events.push(json!({"date": stamps[n / 2].clone(), "message": format!("Multi-AZ instance failover started for {distractor}."), "source_identifier": distractor, "source_type": "db-instance", "event_categories": ["failover"]}));

    let key = r.pick(&KEYS).to_string();
    let mut annotations = json!({"summary": summary});
    let mut labels = json!({"alertname": alertname, "severity": severity, "service": "rds"});
    if r.chance(0.5) {
        labels[&key] = json!(name);
    } else {
        annotations[&key] = json!(name);
    }
    if has_replica {
        annotations["read_replica"] = json!(replica);
    }
    let id = format!("{n_world:03}-{class:?}").to_lowercase();
    let dir = root.join(&id);
    let write = |file: &str, v: &Value| {
        std::fs::write(
            dir.join(file),
            serde_json::to_string_pretty(v).unwrap_or_default(),
        )
        .unwrap_or_else(|e| panic!("write {file}: {e}"))
    };
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
    write(
        "alert.json",
        &json!({
            "title": format!("{alertname} on {name}"),
            "state": "alerting",
            "commonLabels": labels,
            "commonAnnotations": annotations,
        }),
    );
    write(
        "aws_cloudwatch_metrics.json",
        &json!({
            "namespace": "AWS/RDS", "period": 60,
            "start_time": stamps[0], "end_time": stamps[n - 1],
            "metric_data_results": results,
        }),
    );
    write("aws_rds_events.json", &json!({"events": events}));
    // Some exports give keys' loads in percent of the total rather than in sessions.
    if r.chance(0.3) {
        let total: f64 = top_sql
            .iter()
            .filter_map(|s| s["db_load_avg"].as_f64())
            .sum();
        for s in top_sql.iter_mut() {
            let share = s["db_load_avg"].as_f64().unwrap_or(0.0) / total.max(1e-9) * 100.0;
            let scale = share / s["db_load_avg"].as_f64().unwrap_or(1.0).max(1e-9);
            s["db_load_avg"] = json!(share);
            if let Some(ws) = s["wait_events"].as_array_mut() {
                for w in ws {
                    w["db_load_avg"] = json!(w["db_load_avg"].as_f64().unwrap_or(0.0) * scale);
                }
            }
        }
    }
    if !(class == Class::Failover && r.chance(0.5)) && class != Class::Unmeasured {
        write(
            "aws_performance_insights.json",
            &json!({
                "db_instance_identifier": name,
                "db_load": {"timestamps": stamps, "values": load, "unit": "db_load|avg"},
                "top_sql": top_sql,
                "top_wait_events": top_waits,
            }),
        );
    }
    std::fs::write(
        dir.join("scenario.yml"),
        format!(
            "scenario_id: {id}\nengine: postgres\ninstance_class: {rds_class}\ndb_instance_identifier: {name}\nfailure_mode: {class:?}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("scenario.yml: {e}"));
    let required: Vec<&str> = Vec::new();
    std::fs::write(
        dir.join("answer.yml"),
        format!(
            "root_cause_category: {}\nrequired_keywords: {:?}\n",
            class.expected().name(),
            required
        ),
    )
    .unwrap_or_else(|e| panic!("answer.yml: {e}"));
    World {
        id,
        class,
        instance: name,
        distractor,
        dir,
    }
}

#[tokio::test]
async fn rds_worlds_name_the_subjects_own_cause() {
    let seed = std::env::var("SITREP_RDS_SEED").unwrap_or_default();
    let rng = Rng(std::cell::Cell::new(
        seed.bytes().fold(0x5157_7265_7000, |a, b| {
            a.wrapping_mul(31).wrapping_add(b as u64)
        }),
    ));
    let keep = std::env::var("SITREP_RDS_KEEP").is_ok_and(|v| v == "1");
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let root = if keep {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/rds-worlds")
    } else {
        tmp.path().to_path_buf()
    };
    let scenarios = root.join("scenarios");
    let cases = root.join("cases");
    let opts = EvalOptions {
        case_timeout: Duration::from_secs(60),
        print: false,
        ..EvalOptions::default()
    };
    let mut failures = Vec::new();
    let mut per_class: Vec<(Class, usize, usize)> = CLASSES.iter().map(|c| (*c, 0, 0)).collect();
    let per = 8;
    for (ci, class) in CLASSES.iter().enumerate() {
        for k in 0..per {
            let w = generate(&rng, *class, ci * per + k, &scenarios);
            let case = match eval::opensre::import(&w.dir, &cases) {
                Ok(c) => c,
                Err(e) => panic!("{}: import failed: {e}", w.id),
            };
            let result = eval::run_case(&case, &opts).await;
            let got = result.score.category;
            let cause = result.root_cause.clone().unwrap_or_default().to_lowercase();
            let mut why = Vec::new();
            if let Some(e) = &result.error {
                why.push(format!("error {e}"));
            }
            if got != Some(w.class.expected()) {
                why.push(format!(
                    "category {got:?}, expected {:?}",
                    w.class.expected()
                ));
            }
            for word in w.class.cause_words() {
                if !cause.contains(word) {
                    why.push(format!("root cause lacks {word:?}"));
                }
            }
            for word in w.class.not_cause() {
                if cause.contains(word) {
                    why.push(format!("root cause states {word:?}"));
                }
            }
            if !cause.contains(&w.instance.to_lowercase())
                && w.class.expected() != Category::Healthy
            {
                why.push(format!("root cause does not name {}", w.instance));
            }
            if cause.contains(&w.distractor.to_lowercase()) {
                why.push(format!("root cause names the distractor {}", w.distractor));
            }
            let slot = &mut per_class[ci];
            slot.2 += 1;
            if why.is_empty() {
                slot.1 += 1;
            } else {
                failures.push(format!("{}: {}\n    cause: {cause}", w.id, why.join("; ")));
            }
        }
    }
    let table: Vec<String> = per_class
        .iter()
        .map(|(c, ok, all)| format!("{c:?} {ok}/{all}"))
        .collect();
    eprintln!("rds worlds: {}", table.join(", "));
    assert!(
        failures.is_empty(),
        "{} of {} worlds failed:\n{}",
        failures.len(),
        CLASSES.len() * per,
        failures.join("\n")
    );
}
