//! The Cloud specialist: which RDS instance an investigation is about, the AWS reads it makes
//! (RDS, CloudWatch, Performance Insights), and how their answers read as evidence.

use super::evidence::Chart;
use super::specialists::{Caller, Scope};
use super::tools::{Params, ToolOutput, p_f64, p_list, p_str, p_time, params, s};
use crate::integrations::aws;
use crate::integrations::transport::Transport;
use crate::model::catalog::ReadTool;
use crate::model::{CloudFact, EvidenceBody, MetricQuery, RdsInstance, Series};
use crate::reason::Observations;
use crate::reason::cloud::{instance_label, replicas_named};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::sync::Mutex;

/// The instance's own CloudWatch metrics and the statistic each is read with.
pub const PRIMARY_METRICS: [(&str, &str); 16] = [
    ("CPUUtilization", "Average"),
    ("DatabaseConnections", "Maximum"),
    ("FreeStorageSpace", "Minimum"),
    ("FreeableMemory", "Minimum"),
    ("SwapUsage", "Maximum"),
    ("ReadIOPS", "Average"),
    ("WriteIOPS", "Average"),
    ("ReadLatency", "Average"),
    ("WriteLatency", "Average"),
    ("DiskQueueDepth", "Average"),
    ("ReadThroughput", "Average"),
    ("WriteThroughput", "Average"),
    ("TransactionLogsGeneration", "Average"),
    ("MaximumUsedTransactionIDs", "Maximum"),
    ("NetworkReceiveThroughput", "Average"),
    ("NetworkTransmitThroughput", "Average"),
];

/// What is read of each read replica.
pub const REPLICA_METRICS: [(&str, &str); 2] =
    [("ReplicaLag", "Maximum"), ("CPUUtilization", "Average")];

/// Seconds per CloudWatch point.
pub const PERIOD_SECS: u32 = 60;

/// The queries one `aws.cloudwatch.get_metric_data` call makes, in order (their Ids are `m0..`).
pub fn metric_queries(instance: &str, replicas: &[String], only: &[String]) -> Vec<MetricQuery> {
    let wanted = |m: &str| only.is_empty() || only.iter().any(|o| o == m);
    let mut out: Vec<MetricQuery> = PRIMARY_METRICS
        .iter()
        .filter(|(m, _)| wanted(m))
        .map(|(m, st)| MetricQuery {
            instance: instance.to_string(),
            metric: m.to_string(),
            stat: st.to_string(),
        })
        .collect();
    for r in replicas {
        out.extend(
            REPLICA_METRICS
                .iter()
                .filter(|(m, _)| wanted(m))
                .map(|(m, st)| MetricQuery {
                    instance: r.clone(),
                    metric: m.to_string(),
                    stat: st.to_string(),
                }),
        );
    }
    out
}

/// Runs one AWS read of the catalog against the world's transport.
pub async fn read(
    t: &dyn Transport,
    tool: ReadTool,
    params: &Params,
    now: DateTime<Utc>,
) -> Result<ToolOutput, String> {
    let e = |err: crate::integrations::IntegrationError| err.to_string();
    let end = p_time(params, "end").unwrap_or(now);
    let start = p_time(params, "start").unwrap_or(end - Duration::hours(1));
    let need = |k: &str| {
        p_str(params, k)
            .map(str::to_string)
            .ok_or_else(|| format!("missing parameter `{k}`"))
    };
    let facts: Vec<CloudFact> = match tool {
        ReadTool::RdsInstances => aws::describe_db_instances(t, p_str(params, "instance"))
            .await
            .map_err(e)?
            .into_iter()
            .map(|i| CloudFact::Instance(Box::new(i)))
            .collect(),
        ReadTool::RdsEvents => aws::describe_events(t, &need("instance")?, start, end)
            .await
            .map_err(e)?
            .into_iter()
            .map(CloudFact::Event)
            .collect(),
        ReadTool::CloudWatchMetrics => {
            let instance = need("instance")?;
            let queries = metric_queries(
                &instance,
                &p_list(params, "replicas"),
                &p_list(params, "metrics"),
            );
            let period = p_f64(params, "period")
                .map(|p| p.clamp(1.0, 86_400.0) as u32)
                .unwrap_or(PERIOD_SECS);
            aws::get_metric_data(t, &instance, &queries, start, end, period)
                .await
                .map_err(e)?
                .into_iter()
                .map(CloudFact::Metric)
                .collect()
        }
        ReadTool::PiLoad => {
            aws::pi_db_load(t, &need("resource_id")?, None, start, end, PERIOD_SECS)
                .await
                .map_err(e)?
                .into_iter()
                .map(CloudFact::Load)
                .collect()
        }
        ReadTool::PiTopKeys => {
            let group = p_str(params, "group").unwrap_or("db.sql").to_string();
            // Statements are split by what they wait on; wait events need no split.
            let partition = (group == "db.sql").then_some("db.wait_event");
            aws::pi_top_keys(t, &need("resource_id")?, &group, partition, start, end)
                .await
                .map_err(e)?
                .into_iter()
                .map(|key| CloudFact::Top {
                    group: group.clone(),
                    key,
                })
                .collect()
        }
        other => return Err(format!("{other:?} is not an AWS read")),
    };
    Ok(ToolOutput::Cloud(facts))
}

/// Whether the investigation is about an RDS instance: a label or annotation names one, or the
/// alert comes from CloudWatch or speaks of RDS.
pub fn points_at_rds(scope: &Scope) -> bool {
    if let Some(a) = &scope.alert {
        let named = instance_label(a).is_some();
        let rds_words = a.labels.values().chain(a.annotations.values()).any(|v| {
            let v = v.to_lowercase();
            v == "rds" || v.contains("aws/rds") || v.contains("cloudwatch")
        });
        return named || rds_words || a.name().to_lowercase().starts_with("rds");
    }
    scope.problem.is_some()
}

fn named_in_problem<'a>(scope: &Scope, instances: &'a [RdsInstance]) -> Option<&'a RdsInstance> {
    let text = scope.problem.as_deref()?.to_lowercase();
    let mut by_length: Vec<&RdsInstance> = instances.iter().collect();
    by_length.sort_by_key(|i| std::cmp::Reverse(i.id.len()));
    by_length
        .into_iter()
        .find(|i| crate::reason::cloud::names(&text, &i.id.to_lowercase()))
}

/// The Cloud specialist: the instance first (its class, replicas and Performance Insights id
/// plan the rest), then its events, metrics and database load in parallel.
pub async fn specialist(c: &Caller, scope: &Scope, obs: &Mutex<Observations>) {
    let none = Chart::default();
    let start = scope.onset - Duration::minutes(30);
    let end = scope.now;
    let window = |mut p: Params| {
        p.insert("start".into(), Value::String(start.to_rfc3339()));
        p.insert("end".into(), Value::String(end.to_rfc3339()));
        p
    };
    let named = scope
        .alert
        .as_ref()
        .and_then(instance_label)
        .map(|(_, id)| id);
    let described = c
        .call(
            "aws.rds.describe_db_instances",
            params([("instance", named.clone().and_then(s))]),
            &none,
            obs,
        )
        .await;
    let instances: Vec<RdsInstance> = match &described {
        Some((ToolOutput::Cloud(facts), _)) => facts
            .iter()
            .filter_map(|f| match f {
                CloudFact::Instance(i) => Some((**i).clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let instance = match &named {
        Some(id) => instances.iter().find(|i| &i.id == id).cloned(),
        None => named_in_problem(scope, &instances).cloned(),
    };
    let Some(id) = named.or_else(|| instance.as_ref().map(|i| i.id.clone())) else {
        return;
    };
    let mut replicas: Vec<String> = instance
        .as_ref()
        .map(|i| i.replicas.clone())
        .unwrap_or_default();
    for r in scope.alert.iter().flat_map(replicas_named) {
        if !replicas.contains(&r) {
            replicas.push(r);
        }
    }
    let metrics = window(params([
        ("instance", s(id.clone())),
        (
            "replicas",
            (!replicas.is_empty()).then(|| Value::String(replicas.join(","))),
        ),
    ]));
    // Each instance's own events: a replica's lag events are its own.
    let events = futures::future::join_all(
        std::iter::once(id.clone())
            .chain(replicas.iter().cloned())
            .map(|i| {
                let p = window(params([("instance", s(i))]));
                let none = &none;
                async move { c.call("aws.rds.describe_events", p, none, obs).await }
            }),
    );
    let resource = instance
        .as_ref()
        .filter(|i| i.performance_insights != Some(false))
        .and_then(|i| i.resource_id.clone());
    let pi = async {
        let Some(r) = &resource else { return };
        let one = |group: Option<&str>| {
            let mut p = window(params([("resource_id", s(r.clone()))]));
            if let Some(g) = group {
                p.insert("group".into(), Value::String(g.into()));
            }
            p
        };
        futures::join!(
            c.call("aws.pi.get_resource_metrics", one(None), &none, obs),
            c.call(
                "aws.pi.describe_dimension_keys",
                one(Some("db.sql")),
                &none,
                obs
            ),
            c.call(
                "aws.pi.describe_dimension_keys",
                one(Some("db.wait_event")),
                &none,
                obs
            ),
        );
    };
    futures::join!(
        events,
        c.call("aws.cloudwatch.get_metric_data", metrics, &none, obs),
        pi,
    );
}

/// The evidence kind of an AWS read.
pub fn kind_of(tool: &str) -> &'static str {
    use crate::reason::cloud::{EV_EVENTS, EV_INSTANCES, EV_METRICS, EV_PI};
    match tool {
        "aws.rds.describe_db_instances" => EV_INSTANCES,
        "aws.rds.describe_events" => EV_EVENTS,
        "aws.cloudwatch.get_metric_data" => EV_METRICS,
        _ => EV_PI,
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

/// An AWS read as evidence: instances and events as tables, metrics and load as charts, top
/// keys as a table. Metrics CloudWatch had no data for are listed by name, never drawn as zero.
pub fn evidence(tool: &str, params: &Params, facts: &[CloudFact]) -> (String, EvidenceBody) {
    let about = p_str(params, "instance")
        .or_else(|| p_str(params, "resource_id"))
        .map(|i| format!(" of {i}"))
        .unwrap_or_default();
    let table = |columns: &[&str], rows: Vec<Vec<String>>| EvidenceBody::Table {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
    };
    match tool {
        "aws.rds.describe_db_instances" => {
            let rows = facts
                .iter()
                .filter_map(|f| match f {
                    CloudFact::Instance(i) => Some(vec![
                        i.id.clone(),
                        opt(&i.class),
                        format!("{} {}", opt(&i.engine), opt(&i.engine_version))
                            .trim()
                            .to_string(),
                        opt(&i.status),
                        i.allocated_storage_gib
                            .map(|g| format!("{g} GiB {}", opt(&i.storage_type)))
                            .unwrap_or_default(),
                        opt(&i.multi_az),
                        i.replicas.join(", "),
                        opt(&i.performance_insights),
                    ]),
                    _ => None,
                })
                .collect();
            (
                format!("RDS instances{about}"),
                table(
                    &[
                        "instance", "class", "engine", "status", "storage", "multi-az", "replicas",
                        "insights",
                    ],
                    rows,
                ),
            )
        }
        "aws.rds.describe_events" => {
            let rows = facts
                .iter()
                .filter_map(|f| match f {
                    CloudFact::Event(e) => Some(vec![
                        e.at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        e.source.clone(),
                        e.categories.join(", "),
                        e.message.clone(),
                    ]),
                    _ => None,
                })
                .collect();
            (
                format!("RDS events{about}"),
                table(&["time (UTC)", "source", "categories", "message"], rows),
            )
        }
        "aws.cloudwatch.get_metric_data" => {
            let mut series = Vec::new();
            let mut missing = Vec::new();
            for f in facts {
                let CloudFact::Metric(m) = f else { continue };
                if m.points.is_empty() {
                    missing.push(format!("{} {}", m.instance, m.metric));
                    continue;
                }
                series.push(Series {
                    name: m.metric.clone(),
                    labels: [
                        ("instance".to_string(), m.instance.clone()),
                        ("stat".to_string(), m.stat.clone()),
                    ]
                    .into_iter()
                    .collect(),
                    points: m
                        .points
                        .iter()
                        .map(|(t, v)| (t.timestamp() as f64, *v))
                        .collect(),
                });
            }
            let title = if missing.is_empty() {
                format!("CloudWatch AWS/RDS{about}")
            } else {
                format!(
                    "CloudWatch AWS/RDS{about} (no data: {})",
                    crate::reason::list_names(&missing, 6)
                )
            };
            (
                title,
                EvidenceBody::TimeSeries {
                    series,
                    threshold: None,
                    unit: None,
                    markers: Vec::new(),
                },
            )
        }
        "aws.pi.get_resource_metrics" => {
            let series = facts
                .iter()
                .filter_map(|f| match f {
                    CloudFact::Load(l) => Some(Series {
                        name: "db.load.avg".into(),
                        labels: l.dimensions.clone(),
                        points: l
                            .points
                            .iter()
                            .map(|(t, v)| (t.timestamp() as f64, *v))
                            .collect(),
                    }),
                    _ => None,
                })
                .collect();
            (
                format!("Performance Insights DB load{about}"),
                EvidenceBody::TimeSeries {
                    series,
                    threshold: None,
                    unit: Some("average active sessions".into()),
                    markers: Vec::new(),
                },
            )
        }
        _ => {
            let group = p_str(params, "group").unwrap_or("db.sql");
            let rows = facts
                .iter()
                .filter_map(|f| match f {
                    CloudFact::Top { key, .. } => Some(vec![
                        key.label(),
                        format!("{:.2}", key.total),
                        key.partitions
                            .iter()
                            .map(|(d, v)| {
                                format!("{} {v:.2}", d.values().next().cloned().unwrap_or_default())
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]),
                    _ => None,
                })
                .collect();
            (
                format!("Performance Insights top {group} by load{about}"),
                table(&[group, "db load (AAS)", "by wait event"], rows),
            )
        }
    }
}
