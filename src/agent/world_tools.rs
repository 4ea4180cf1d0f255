//! The world as a tool registry: tool names and JSON params mapped onto the typed clients.

use super::tools::{Params, ToolOutput, Tools, p_bool, p_f64, p_str, p_time};
use crate::integrations::{AlertFilter, Direction};
use crate::model::Action;
use crate::model::catalog::{self, Handler, ReadTool};
use crate::world::World;
use chrono::{DateTime, Duration, Utc};
use futures::future::BoxFuture;
use std::sync::Arc;

/// Adapts an `Arc<World>` to [`Tools`].
pub struct WorldTools(pub Arc<World>);

fn need<'a>(params: &'a Params, key: &str, tool: &str) -> Result<&'a str, String> {
    p_str(params, key).ok_or_else(|| format!("{tool}: missing parameter `{key}`"))
}

impl WorldTools {
    fn window(&self, params: &Params) -> (DateTime<Utc>, DateTime<Utc>) {
        let now = self.0.now();
        let end = p_time(params, "end").unwrap_or(now);
        let start = p_time(params, "start").unwrap_or(end - Duration::hours(1));
        (start, end)
    }

    async fn run(&self, tool: &str, params: &Params) -> Result<ToolOutput, String> {
        let w = &self.0;
        let e = |err: crate::integrations::IntegrationError| err.to_string();
        let ns = p_str(params, "namespace");
        // The cluster a Kubernetes read names, else the default one.
        let kube = || w.kubernetes_in(p_str(params, "cluster"));
        // Only catalog reads run here; actions go through policy and `execute`.
        let catalog = w.catalog();
        let read = match catalog.lookup(tool).map(|entry| entry.handler) {
            Some(Handler::Read(r)) => r,
            Some(Handler::Act(_)) => {
                return Err(format!("{tool} changes the world: propose it as an action"));
            }
            Some(Handler::External) if catalog.is_mutating(tool) => {
                return Err(format!("{tool} changes the world: propose it as an action"));
            }
            Some(Handler::External) => {
                let args = serde_json::Value::Object(params.clone().into_iter().collect());
                return w
                    .mcp()
                    .call(tool, &args)
                    .await
                    .map(ToolOutput::Text)
                    .map_err(e);
            }
            None => return Err(format!("unknown tool {tool}")),
        };
        Ok(match read {
            ReadTool::RdsInstances
            | ReadTool::RdsEvents
            | ReadTool::CloudWatchMetrics
            | ReadTool::PiLoad
            | ReadTool::PiTopKeys => {
                return super::cloud::read(w.transport(), read, params, w.now()).await;
            }
            ReadTool::DatadogQuery
            | ReadTool::DatadogMonitors
            | ReadTool::DatadogEvents
            | ReadTool::DatadogLogs => {
                return super::datadog::read(w.datadog(), read, params, w.now()).await;
            }
            ReadTool::Pods => ToolOutput::Pods(
                kube()?
                    .list_pods_on(ns, p_str(params, "label_selector"), p_str(params, "node"))
                    .await
                    .map_err(e)?,
            ),
            ReadTool::Events => ToolOutput::Events(
                kube()?
                    .events(ns, p_str(params, "involved"), p_str(params, "type"))
                    .await
                    .map_err(e)?,
            ),
            ReadTool::Deployments => {
                ToolOutput::Deployments(kube()?.deployments(ns).await.map_err(e)?)
            }
            ReadTool::ReplicaSets => {
                ToolOutput::Deployments(kube()?.replica_sets(ns).await.map_err(e)?)
            }
            ReadTool::ControllerRevisions => {
                ToolOutput::Deployments(kube()?.controller_revisions(ns).await.map_err(e)?)
            }
            ReadTool::StatefulSets => {
                ToolOutput::Workloads(kube()?.statefulsets(ns).await.map_err(e)?)
            }
            ReadTool::DaemonSets => ToolOutput::Workloads(kube()?.daemonsets(ns).await.map_err(e)?),
            ReadTool::Jobs => ToolOutput::Workloads(kube()?.jobs(ns).await.map_err(e)?),
            ReadTool::CronJobs => ToolOutput::Workloads(kube()?.cronjobs(ns).await.map_err(e)?),
            ReadTool::Nodes => ToolOutput::Nodes(kube()?.nodes().await.map_err(e)?),
            // A recorded world without Services has none to report: absent, not a failure.
            ReadTool::Services => match kube()?.services(ns).await {
                Ok(v) => ToolOutput::Services(v),
                Err(err) if err.is_no_recording() => ToolOutput::Services(Vec::new()),
                Err(err) => return Err(e(err)),
            },
            // Like Services: a recorded world without Ingresses has none to report.
            ReadTool::Ingresses => match kube()?.ingresses(ns).await {
                Ok(v) => ToolOutput::Ingresses(v),
                Err(err) if err.is_no_recording() => {
                    ToolOutput::Ingresses(crate::model::IngressList::default())
                }
                Err(err) => return Err(e(err)),
            },
            // A recorded world without these objects has none to report: absent, not a failure.
            ReadTool::ConfigMaps | ReadTool::Secrets => {
                let ns = need(params, "namespace", tool)?;
                let k = kube()?;
                let got = if read == ReadTool::ConfigMaps {
                    k.config_maps(ns).await
                } else {
                    k.secrets(ns).await
                };
                match got {
                    Ok(v) => ToolOutput::Changes(v),
                    Err(err) if err.is_no_recording() => ToolOutput::Changes(Vec::new()),
                    Err(err) => return Err(e(err)),
                }
            }
            // Discovery is optional too: a recorded world without it answers nothing discovered.
            ReadTool::PromSeries | ReadTool::PromMetadata => {
                let p = w.prometheus();
                let got = if read == ReadTool::PromSeries {
                    let (start, end) = self.window(params);
                    let selectors: Vec<&str> = need(params, "match", tool)?.lines().collect();
                    p.series(&selectors, start, end).await
                } else {
                    p.metadata(p_str(params, "metric")).await
                };
                match got {
                    Ok(v) => ToolOutput::Series(v),
                    Err(err) if err.is_no_recording() => ToolOutput::Series(Vec::new()),
                    Err(err) => return Err(e(err)),
                }
            }
            ReadTool::PodLogs => ToolOutput::Logs(
                kube()?
                    .pod_logs(
                        need(params, "namespace", tool)?,
                        need(params, "pod", tool)?,
                        p_str(params, "container"),
                        p_bool(params, "previous").unwrap_or(false),
                        p_f64(params, "tail").map(|t| t.clamp(1.0, 10_000.0) as u32),
                    )
                    .await
                    .map_err(e)?,
            ),
            ReadTool::PromQuery => ToolOutput::Series(
                w.prometheus()
                    .query(
                        need(params, "query", tool)?,
                        p_time(params, "time").unwrap_or(w.now()),
                    )
                    .await
                    .map_err(e)?,
            ),
            ReadTool::PromQueryRange => {
                let (start, end) = self.window(params);
                let step = p_f64(params, "step").unwrap_or(60.0).clamp(1.0, 86_400.0) as u64;
                ToolOutput::Series(
                    w.prometheus()
                        .query_range(need(params, "query", tool)?, start, end, step)
                        .await
                        .map_err(e)?,
                )
            }
            ReadTool::PromRules => ToolOutput::Rules(w.prometheus().rules().await.map_err(e)?),
            ReadTool::PromAlerts => ToolOutput::Alerts(w.prometheus().alerts().await.map_err(e)?),
            ReadTool::AlertmanagerAlerts => {
                let mut filter = AlertFilter::default();
                if let Some(name) = p_str(params, "alertname") {
                    filter = filter.label("alertname", name);
                }
                ToolOutput::Alerts(w.alertmanager().alerts(&filter).await.map_err(e)?)
            }
            ReadTool::LokiQueryRange => {
                let (start, end) = self.window(params);
                let limit = p_f64(params, "limit").unwrap_or(500.0).clamp(1.0, 5000.0) as u32;
                let direction = match p_str(params, "direction") {
                    Some("forward") => Direction::Forward,
                    _ => Direction::Backward,
                };
                ToolOutput::Logs(
                    w.loki()
                        .query_range(need(params, "query", tool)?, start, end, limit, direction)
                        .await
                        .map_err(e)?,
                )
            }
            ReadTool::PgActivity => ToolOutput::Postgres(w.postgres().activity().await.map_err(e)?),
            ReadTool::PgConnections => {
                ToolOutput::Postgres(w.postgres().connections().await.map_err(e)?)
            }
            ReadTool::PgLocks => ToolOutput::Postgres(w.postgres().locks().await.map_err(e)?),
            ReadTool::PgLongQueries => {
                let min = p_f64(params, "min_secs")
                    .unwrap_or(30.0)
                    .clamp(1.0, 86_400.0) as u64;
                ToolOutput::Postgres(w.postgres().long_queries(min).await.map_err(e)?)
            }
            ReadTool::PgStatements => {
                ToolOutput::Postgres(w.postgres().statements().await.map_err(e)?)
            }
            ReadTool::PgReplication => {
                ToolOutput::Postgres(w.postgres().replication().await.map_err(e)?)
            }
            ReadTool::PgDatabases => {
                ToolOutput::Postgres(w.postgres().databases().await.map_err(e)?)
            }
            ReadTool::GitHubDeployments | ReadTool::GitHubCommits | ReadTool::GitHubMergedPulls => {
                let repo = p_str(params, "repo")
                    .or(w.github_repo())
                    .ok_or_else(|| format!("{tool}: no repository configured or given"))?;
                let now = w.now();
                let since = p_time(params, "since").unwrap_or(now - Duration::days(1));
                let until = p_time(params, "until").unwrap_or(now);
                let gh = w.github();
                ToolOutput::Changes(
                    match read {
                        ReadTool::GitHubDeployments => gh.deployments(repo, since, until).await,
                        ReadTool::GitHubCommits => gh.commits(repo, since, until).await,
                        _ => gh.merged_pulls(repo, since, until).await,
                    }
                    .map_err(e)?,
                )
            }
        })
    }
}

impl Tools for WorldTools {
    fn now(&self) -> DateTime<Utc> {
        self.0.now()
    }

    fn has(&self, integration: &str) -> bool {
        self.0.has(integration)
    }

    fn clusters(&self) -> Vec<String> {
        self.0.clusters().to_vec()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        params: &'a Params,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(self.run(tool, params))
    }

    fn execute<'a>(&'a self, action: &'a Action) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move { self.0.execute(action).await.map_err(|e| e.to_string()) })
    }

    fn extend_catalog(&self) -> BoxFuture<'_, super::tools::Extensions> {
        Box::pin(async move {
            let mut out = Vec::new();
            for server in self.0.mcp_servers() {
                let r = self.0.mcp().register(server).await;
                out.push((
                    server.clone(),
                    r.map(|r| r.tools).map_err(|e| e.to_string()),
                ));
            }
            out
        })
    }

    fn catalog(&self) -> catalog::Catalog {
        self.0.catalog()
    }

    fn pending_credential(&self, integration: &str) -> Option<String> {
        self.0.keyring().pending_for(integration)
    }

    fn ticket_sinks(&self) -> Vec<crate::world::TicketSink> {
        self.0.ticket_sinks().to_vec()
    }

    fn decide_credential(&self, reference: &str, approved: bool, reason: &str) {
        let decision = if approved {
            crate::secrets::Decision::Approved
        } else {
            crate::secrets::Decision::Denied(reason.to_string())
        };
        self.0.keyring().decide(reference, decision);
    }
}
