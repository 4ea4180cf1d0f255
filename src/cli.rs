//! Command-line interface: clap subcommands and their dispatch.

use crate::agent::{self, AgentHandle, AgentOptions, Trigger};
use crate::config::Config;
use crate::model::text::{escape_json_controls, sanitize};
use crate::model::{Command, Outcome, Record, RunMode};
use crate::session;
use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod demo_list;
mod link;

/// A terminal incident console: investigates an alert stage by stage, asks before acting, keeps
/// every step in a replayable session file.
#[derive(Parser, Debug)]
#[command(name = "sitrep", version, about, long_about = None)]
pub struct Cli {
    /// No terminal UI: session records go to stdout as NDJSON, commands are read as NDJSON from stdin.
    #[arg(long, global = true)]
    pub headless: bool,
    /// Refuse every mutating action (replay is always read-only).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Colour theme (overrides `[ui] theme` in the config).
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,
    /// Without a command: the alert inbox when alert sources are configured.
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Investigate a built-in scenario (no network, no cluster needed).
    Demo {
        /// Scenario name (see --list); without it a chooser opens (with --headless: the first one).
        name: Option<String>,
        /// List the built-in scenarios and exit.
        #[arg(long)]
        list: bool,
        /// Do not write a session file.
        #[arg(long)]
        no_save: bool,
        /// Answer at once instead of at the pace of live systems (always so with --headless).
        #[arg(long)]
        fast: bool,
        /// Extra runbooks directory, on top of the built-in ones (overrides `[paths] runbooks`).
        #[arg(long, value_name = "DIR")]
        runbooks: Option<PathBuf>,
        /// Who reasons: the rules, the configured model after them, or the model when `[llm]` is
        /// configured (the scenario's systems stay recorded while the model is live).
        #[arg(long, value_enum, default_value_t = Reasoner::Auto)]
        reasoner: Reasoner,
    },
    /// Investigate a recorded case or the live systems from the config.
    Investigate(InvestigateArgs),
    /// Replay a saved session (pause, speed, step, seek); read-only.
    Replay {
        /// Session file (`.ndjson`).
        file: PathBuf,
    },
    /// List saved sessions: when, title, outcome, duration.
    Sessions {
        /// Sessions directory (default: `<data dir>/sessions`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Past incidents grouped by alert and subject: how often, the last verdict, what fixed them
    /// and how long they took.
    History {
        /// Only this alert (its alertname).
        #[arg(long, value_name = "NAME")]
        alert: Option<String>,
        /// Only subjects (or titles) containing this text, e.g. `checkout-api`.
        #[arg(long, value_name = "TEXT")]
        subject: Option<String>,
        /// Only sessions started within this long, e.g. `7d`, `24h`, `30m`.
        #[arg(long, value_name = "DURATION")]
        since: Option<String>,
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
        /// Sessions directory (default: `<data dir>/sessions`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Write a postmortem of a session: summary, timeline, evidence, hypotheses, actions, verification.
    Export {
        /// Session file (`.ndjson`).
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Markdown)]
        format: Format,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Re-run the reasoning on a saved session's recorded facts and print the verdict: category,
    /// confidence, root cause, findings with the evidence they cite, what was ruled out.
    Diagnose {
        /// Session file (`.ndjson`); a torn file is diagnosed up to the tear.
        file: PathBuf,
        /// Print the verdict as JSON.
        #[arg(long)]
        json: bool,
        /// Extra runbooks directory, on top of the built-in ones (to find the session's runbook).
        #[arg(long, value_name = "DIR")]
        runbooks: Option<PathBuf>,
    },
    /// Approve a pending critical action of a running session as the second operator (another OS
    /// user than the session's operator); exits non-zero when the approval is refused.
    Approve {
        /// Session file, or its id / file name from `sitrep sessions`.
        session: String,
        /// Action id, as shown in the approval modal.
        action: String,
    },
    /// Score investigations of case directories against their expect.toml.
    Eval {
        /// Case directories, or directories holding them.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Seconds one case may take.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// Who reasons: the rules, the configured model after them, or the model when `[llm]`
        /// is configured.
        #[arg(long, value_enum, default_value_t = Reasoner::Auto)]
        reasoner: Reasoner,
    },
    /// List what is firing in every configured source (Alertmanager, Prometheus, PagerDuty).
    Alerts {
        /// One JSON object a line (source, alertname, title, labels, state, starts_at, fingerprint, ...).
        #[arg(long)]
        json: bool,
        /// Only alerts matching these label matchers, e.g. 'severity=critical service=~"api.*"'.
        #[arg(long, value_name = "MATCHERS")]
        filter: Option<String>,
    },
    /// Receive Alertmanager and PagerDuty webhooks, investigate new alerts headless, serve the remote API.
    Serve(ServeArgs),
    /// Follow a session `sitrep serve` is running, live in the console, and approve or deny there.
    Follow {
        /// Session file, or its id / file name from `sitrep sessions`.
        session: String,
        /// The server running it (e.g. http://127.0.0.1:9095): approvals and denials go to its API.
        /// Without it, approvals of high and critical actions go through the approvals directory.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// Environment variable holding the server's bearer token.
        #[arg(long, value_name = "VAR", requires = "server")]
        token_env: Option<String>,
        /// Sessions directory (default: `<data dir>/sessions`).
        #[arg(long, value_name = "DIR")]
        sessions_dir: Option<PathBuf>,
    },
    /// Check every configured integration: reachable, authenticated, version, latency and the
    /// permissions sitrep needs; exits 1 when one is not ok.
    Doctor {
        /// One JSON object a line (integration, status, detail, version, latency_ms, fix).
        #[arg(long)]
        json: bool,
    },
    /// Runbook tools.
    Runbooks {
        #[command(subcommand)]
        command: RunbooksCmd,
    },
    /// Case tools.
    Cases {
        #[command(subcommand)]
        command: CasesCmd,
    },
}

#[derive(Subcommand, Debug)]
pub enum CasesCmd {
    /// Convert scenarios of another format into case directories for `sitrep eval`.
    Import {
        /// The scenarios' format: `opensre` (OpenSRE's synthetic RDS scenarios).
        #[arg(value_parser = ["opensre"])]
        format: String,
        /// Scenario directories.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Where the case directories are written (one per scenario).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum RunbooksCmd {
    /// Validate runbooks: a file, or every .yaml/.yml in a directory; errors give file:line:col.
    Check {
        /// Runbook file or directory.
        #[arg(default_value = "runbooks")]
        path: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
pub struct InvestigateArgs {
    /// A recorded case directory (case.toml, recordings.ndjson, ...) instead of the live systems.
    #[arg(long, value_name = "DIR")]
    pub case: Option<PathBuf>,
    /// An alert to investigate: an Alertmanager webhook payload (version 4), a Datadog monitor
    /// notification or a CloudWatch alarm notification (JSON).
    #[arg(long, value_name = "FILE", conflicts_with = "problem")]
    pub alert: Option<PathBuf>,
    /// The Kubernetes cluster to investigate, by its configured name, when several are configured
    /// (over the alert's `cluster` label).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// A description of the problem to investigate.
    #[arg(long, value_name = "TEXT")]
    pub problem: Option<String>,
    /// Propose actions but never run them.
    #[arg(long)]
    pub diagnosis_only: bool,
    /// Do not write a session file.
    #[arg(long)]
    pub no_save: bool,
    /// Record every exchange with the live systems into DIR, a case directory that
    /// `sitrep investigate --case DIR` replays offline to the same evidence.
    #[arg(long, value_name = "DIR", conflicts_with = "case")]
    pub record: Option<PathBuf>,
    /// Who reasons: the rules, the configured model after them, or the model when `[llm]` is
    /// configured. With `--case`, integrations answer from recordings while the model is live.
    #[arg(long, value_enum, default_value_t = Reasoner::Auto)]
    pub reasoner: Reasoner,
    /// Extra runbooks directory, on top of the built-in ones (overrides `[paths] runbooks`).
    #[arg(long, value_name = "DIR")]
    pub runbooks: Option<PathBuf>,
}

/// `--reasoner`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reasoner {
    Rules,
    Llm,
    Auto,
}

/// The model `--reasoner` asks for: `None` for the rules; `llm` without `[llm]` is an error
/// naming the missing section.
///
/// `--reasoner llm --case DIR` with no `[llm]` replays the model from `DIR/llm.ndjson` when the
/// case holds recorded exchanges; `record` appends live exchanges to a file.
pub fn pick_model(
    config: &Config,
    reasoner: Reasoner,
    case: Option<&Path>,
    record: Option<PathBuf>,
) -> anyhow::Result<Option<crate::agent::llm::Model>> {
    use crate::agent::llm::{Model, RECORDED_FILE};
    match (reasoner, &config.llm) {
        (Reasoner::Rules, _) | (Reasoner::Auto, None) => Ok(None),
        (Reasoner::Llm, None) if case.is_some_and(|d| d.join(RECORDED_FILE).is_file()) => {
            let dir = case.unwrap_or(Path::new("."));
            Ok(Some(
                Model::replaying(dir, 200).map_err(anyhow::Error::msg)?,
            ))
        }
        (Reasoner::Llm, None) => bail!(
            "--reasoner llm needs an [llm] section in the config ({}): provider, base_url, model",
            config
                .source
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| crate::config::default_config_path().display().to_string())
        ),
        (_, Some(llm)) => Ok(Some(Model::from_config(llm, record).context("[llm]")?)),
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9095")]
    pub listen: std::net::SocketAddr,
    /// Environment variable holding the bearer tokens, one of which every request must carry:
    /// `name=token` pairs (comma or whitespace separated), one per person, whose approvals and
    /// denials are recorded under that name; or a single token, recorded as `api`. Required unless
    /// the address is loopback (then decisions are recorded as the caller's OS user).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Sessions directory (default: `<data dir>/sessions`).
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// Investigate with recorded case DIR instead of the live systems (tests, demos).
    #[arg(long, value_name = "DIR")]
    pub case: Option<PathBuf>,
    /// The PostgreSQL store shared with other replicas, `postgres://USER@HOST:PORT/DB`
    /// (overrides `[serve.store] url`).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Who reasons: the rules, the configured model after them, or the model when `[llm]` is
    /// configured.
    #[arg(long, value_enum, default_value_t = Reasoner::Auto)]
    pub reasoner: Reasoner,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
}

/// Parse the command line and run it. An error is masked and sanitized before it is returned
/// for printing: it may quote a response, an alert or a file.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match dispatch(cli) {
        // `sitrep sessions | head`: the reader has what it wanted; that is not an error.
        Err(e) if is_closed_stdout(&e) => Ok(()),
        other => other,
    }
    .map_err(|e| {
        let text = format!("{e:#}");
        let text = redactor(Config::load().ok().as_ref())
            .redact(&text)
            .into_owned();
        anyhow::anyhow!(sanitize(&text).into_owned())
    })
}

/// The error is a write to a pipe whose reader went away.
fn is_closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Masks the known secret shapes and the current values of the configured credentials.
pub fn redactor(config: Option<&Config>) -> crate::policy::redact::Redactor {
    use secrecy::ExposeSecret;
    let values = config.map(Config::secret_values).unwrap_or_default();
    crate::policy::redact::Redactor::with_secrets(
        values.iter().map(|v| v.expose_secret().to_string()),
    )
}

/// Run an already-parsed command line.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let Some(command) = &cli.command else {
        return inbox(&cli);
    };
    match command {
        Cmd::Alerts { json, filter } => alerts(&cli, *json, filter.as_deref()),
        Cmd::Doctor { json } => doctor(&cli, *json),
        Cmd::Serve(args) => serve(&cli, args),
        Cmd::Follow {
            session,
            server,
            token_env,
            sessions_dir,
        } => follow(
            &cli,
            session,
            server.as_deref(),
            token_env.as_deref(),
            sessions_dir.as_deref(),
        ),
        Cmd::Replay { file } => replay(&cli, file),
        Cmd::Sessions { dir } => sessions(dir.as_deref()),
        Cmd::History {
            alert,
            subject,
            since,
            json,
            dir,
        } => history(
            alert.clone(),
            subject.clone(),
            since.as_deref(),
            *json,
            dir.as_deref(),
        ),
        Cmd::Export {
            file,
            format,
            output,
        } => export(file, *format, output.as_deref()),
        Cmd::Approve { session, action } => approve(session, action),
        Cmd::Diagnose {
            file,
            json,
            runbooks,
        } => diagnose(file, *json, runbooks.as_deref()),
        Cmd::Runbooks {
            command: RunbooksCmd::Check { path },
        } => runbooks_check(path),
        Cmd::Cases {
            command:
                CasesCmd::Import {
                    format: _,
                    scenarios,
                    out,
                },
        } => cases_import(scenarios, out),
        Cmd::Eval {
            dirs,
            timeout,
            reasoner,
        } => eval(&cli, dirs, *timeout, *reasoner),
        Cmd::Investigate(args) => investigate(&cli, args),
        Cmd::Demo {
            name,
            list,
            no_save,
            fast,
            runbooks,
            reasoner,
        } => demo(
            &cli,
            name.as_deref(),
            *list,
            (*no_save, *fast),
            runbooks.as_deref(),
            *reasoner,
        ),
    }
}

/// `sitrep cases import opensre`: one case directory per scenario; a malformed scenario is
/// reported with its file and field and the others are still imported.
fn cases_import(scenarios: &[PathBuf], out: &std::path::Path) -> anyhow::Result<()> {
    let mut failed = 0;
    for dir in scenarios {
        // The format's own files (a NOTICE, a README) sit beside the scenarios.
        if !dir.is_dir() {
            continue;
        }
        match crate::eval::opensre::import(dir, out) {
            Ok(case) => println!("{}", case.display()),
            Err(e) => {
                failed += 1;
                eprintln!("sitrep: {e}");
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} scenario(s) could not be imported");
    }
    Ok(())
}

/// The alert sources of the config and nothing else: listing alerts must not wait on a cluster login.
pub fn alert_sources_config(config: &Config) -> Config {
    let mut c = config.clone();
    c.integrations.kubernetes = None;
    c.integrations.loki = None;
    c.integrations.github = None;
    c
}

/// Whether any alert source (Alertmanager, Prometheus, PagerDuty, Datadog) is configured.
pub fn has_alert_sources(config: &Config) -> bool {
    let i = &config.integrations;
    i.alertmanager.is_some()
        || i.prometheus.is_some()
        || i.pagerduty.is_some()
        || i.datadog.is_some()
}

const HOW_TO_CONFIGURE: &str = "no alert source is configured. Add [integrations.alertmanager], \
[integrations.prometheus], [integrations.pagerduty] or [integrations.datadog] to the config (see config.example.toml; \
SITREP_CONFIG points at another file), or try `sitrep demo`.";

/// Time `sitrep alerts` gives each source: the whole command ends within 5 s.
const ALERTS_BUDGET: Duration = Duration::from_secs(4);

/// The inbox's sources over a live world made of the alert sources only.
pub async fn inbox_sources(
    config: &Config,
    budget: Duration,
) -> anyhow::Result<crate::inbox::Sources> {
    let world = crate::world::World::live(&alert_sources_config(config)).await?;
    let services = config
        .integrations
        .pagerduty
        .as_ref()
        .and_then(|p| p.service_id.clone())
        .into_iter()
        .collect();
    let datadog_tags = config
        .integrations
        .datadog
        .as_ref()
        .map(|d| d.monitor_tags.clone())
        .unwrap_or_default();
    Ok(
        crate::inbox::Sources::new(Arc::new(world), services, budget)
            .with_datadog_tags(datadog_tags),
    )
}

fn alerts(cli: &Cli, json: bool, filter: Option<&str>) -> anyhow::Result<()> {
    let config = load_config(cli)?;
    if !has_alert_sources(&config) {
        bail!("{HOW_TO_CONFIGURE}");
    }
    let filter = crate::inbox::Filter::parse(filter.unwrap_or(""))?;
    let snapshot = runtime()?.block_on(async {
        let sources = inbox_sources(&config, ALERTS_BUDGET).await?;
        anyhow::Ok(sources.poll().await)
    })?;
    for h in &snapshot.health {
        if let Some(e) = &h.error {
            eprintln!("sitrep: {} is unavailable: {e}", h.source.name());
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let shown: Vec<&crate::inbox::InboxAlert> = snapshot
        .alerts
        .iter()
        .filter(|a| filter.matches(a))
        .collect();
    let result = (|| -> std::io::Result<()> {
        if json {
            for a in &shown {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string(a).map_err(std::io::Error::other)?
                )?;
            }
            return out.flush();
        }
        let now = chrono::Utc::now();
        writeln!(
            out,
            "{:<12} {:<9} {:>6}  {:<12} {:<32} LABELS",
            "STATE", "SEVERITY", "AGE", "SOURCE", "ALERT"
        )?;
        for a in &shown {
            let age = a
                .starts_at
                .map(|t| format_duration((now - t).num_seconds() as f64))
                .unwrap_or_else(|| "-".into());
            let labels = a
                .labels
                .iter()
                .filter(|(k, _)| k.as_str() != "alertname")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let name: String = a.alertname.chars().take(32).collect();
            writeln!(
                out,
                "{:<12} {:<9} {:>6}  {:<12} {:<32} {}",
                a.state.name(),
                if a.severity.is_empty() {
                    "-"
                } else {
                    &a.severity
                },
                age,
                a.source.name(),
                name.replace(['\n', '\r'], " "),
                labels.replace(['\n', '\r'], " ")
            )?;
        }
        out.flush()
    })();
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `sitrep doctor`: every check at once, within 10 s whatever the hosts do; exit 1 when a
/// configured integration is not ok.
fn doctor(cli: &Cli, json: bool) -> anyhow::Result<()> {
    let config = load_config(cli)?;
    let options = crate::doctor::Options {
        read_only: cli.read_only,
    };
    let rt = runtime()?;
    let rows = rt.block_on(crate::doctor::run(&config, &options));
    // A check cut short may leave a blocking lookup behind: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    let mut out = std::io::stdout().lock();
    let written = if json {
        crate::doctor::report::json(&mut out, &rows)
    } else {
        crate::doctor::report::table(&mut out, &rows)
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    if !crate::doctor::all_ok(&rows) {
        let failed: Vec<&str> = rows
            .iter()
            .filter(|r| r.status == crate::doctor::Status::Failed)
            .map(|r| r.integration.as_str())
            .collect();
        bail!("not ok: {}", failed.join(", "));
    }
    Ok(())
}

fn follow(
    cli: &Cli,
    session_ref: &str,
    server: Option<&str>,
    token_env: Option<&str>,
    sessions_dir: Option<&Path>,
) -> anyhow::Result<()> {
    let config = load_config(cli)?;
    let dir = sessions_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(session::sessions_dir);
    // With a server, a session not on this host (another replica's) is followed through it.
    let path = match agent::approve::resolve_session(session_ref, &dir) {
        Ok(p) => p,
        Err(_) if server.is_some() && !session_ref.contains(['/', '\\']) => {
            dir.join(format!("{session_ref}.ndjson"))
        }
        Err(e) => return Err(e.into()),
    };
    let token = match token_env {
        // Your own token: bare, or as `name=token` (the form the server's list uses).
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => match crate::serve::parse_tokens(&v) {
                Ok(mut one) if one.len() == 1 => one.pop().map(|t| t.secret),
                Ok(_) => bail!(
                    "environment variable {var} (from --token-env) holds several tokens: give only yours"
                ),
                Err(e) => bail!("environment variable {var} (from --token-env): {e}"),
            },
            _ => bail!("environment variable {var} (from --token-env) is not set or empty"),
        },
        None => None,
    };
    let remote = server.map(|url| crate::agent::follow::Remote {
        url: url.to_string(),
        token,
        session_id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    });
    runtime()?.block_on(async {
        crate::tui::run_live(link::followed(path, remote), ui_options(&config)).await
    })
}

fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<()> {
    let mut config = load_config(cli)?;
    use_runbooks(&mut config, None)?;
    let tokens = crate::serve::token_for(args.listen, args.token_env.as_deref())?;
    let config_path = config
        .source
        .clone()
        .unwrap_or_else(crate::config::default_config_path);
    let pagerduty_secret = match &config.integrations.pagerduty {
        Some(p) => p.resolve_webhook_secret(&config_path)?,
        None => None,
    };
    let sessions_dir = args
        .sessions_dir
        .clone()
        .unwrap_or_else(session::sessions_dir);
    let model = pick_model(&config, args.reasoner, args.case.as_deref(), None)?;
    runtime()?.block_on(async {
        // Starting the server with `[serve.datadog]` configured is the operator's approval to
        // read its secret.
        let datadog_secret = match &config.serve.datadog {
            Some(d) => Some(
                crate::serve::read_webhook_secret(&d.secret)
                    .await
                    .with_context(|| format!("{}: serve.datadog.secret", config_path.display()))?,
            ),
            None => None,
        };
        let sources = if has_alert_sources(&config) {
            Some(inbox_sources(&config, ALERTS_BUDGET).await?)
        } else {
            None
        };
        // One live world for every investigation; a case is loaded afresh for each (its effects are per run).
        let live = match &args.case {
            Some(_) => None,
            None => Some(Arc::new(crate::world::World::live(&config).await?)),
        };
        // `[notify.slack]`: its credentials are read now, so a missing one stops the start.
        let slack = match &config.notify.slack {
            Some(s) => {
                Some(crate::notify::Slack::start(s, &config_path, redactor(Some(&config))).await?)
            }
            None => None,
        };
        let case = args.case.clone();
        let limits = crate::serve::Limits::from(&config.serve);
        let store = serve_store(&config.serve, args.store.as_deref(), &config_path).await?;
        let metrics_token = match &config.serve.metrics_token {
            Some(r) => Some(read_reference(r, "serve.metrics_token", &config_path).await?),
            None => None,
        };
        let config = config.clone();
        let starter: crate::serve::Starter = Arc::new(move |trigger, path| {
            let (world, mode, case_name) = match (&live, &case) {
                (Some(w), _) => (w.clone(), RunMode::Live, None),
                (None, Some(dir)) => {
                    let w = crate::world::World::from_case_dir(dir)?.with_tickets(&config)?;
                    let name = w.case().map(|c| c.id.clone());
                    (Arc::new(w), RunMode::Case, name)
                }
                (None, None) => bail!("no world to investigate"),
            };
            let mut opts = agent_options(&config, mode, case_name, false, false);
            opts.session_path = Some(path);
            opts.unattended = true;
            opts.model = model.clone();
            Ok(agent::spawn(world, trigger, opts))
        });
        crate::serve::run(crate::serve::Setup {
            listen: args.listen,
            tokens,
            pagerduty_secret,
            datadog_secret,
            sessions_dir,
            starter,
            sources,
            slack,
            limits,
            store,
            metrics_token,
        })
        .await
    })
}

/// `[serve.store]` (or `--store URL`) with its password read from its reference.
async fn serve_store(
    serve: &crate::config::Serve,
    url: Option<&str>,
    config_path: &Path,
) -> anyhow::Result<Option<crate::serve::store::StoreSettings>> {
    let configured = serve.store.as_ref();
    let Some(url) = url.or(configured.map(|s| s.url.as_str())) else {
        return Ok(None);
    };
    let password = match configured.and_then(|s| s.password.as_deref()) {
        Some(r) => Some(read_reference(r, "serve.store.password", config_path).await?),
        None => None,
    };
    let lease_secs = configured.map(|s| s.lease_secs).unwrap_or(15);
    if lease_secs == 0 {
        bail!(
            "{}: key `serve.store.lease_secs`: must be at least 1",
            config_path.display()
        );
    }
    Ok(Some(crate::serve::store::StoreSettings {
        url: url.to_string(),
        password,
        lease: Duration::from_secs(lease_secs),
    }))
}

/// A credential the configuration names by reference (`env:`, `op://`, `vault://`); configuring
/// it for the server is its approval. A value that is not a reference is refused.
async fn read_reference(
    reference: &str,
    key: &str,
    config_path: &Path,
) -> anyhow::Result<secrecy::SecretString> {
    use crate::secrets::{Decision, Keyring, SecretRef};
    let fail = |why: String| anyhow::anyhow!("{}: key `{key}`: {why}", config_path.display());
    let r = SecretRef::parse(reference).map_err(|e| fail(e.to_string()))?;
    let keyring = Keyring::new();
    keyring.register("serve", &r);
    let name = r.to_string();
    keyring.decide(&name, Decision::Approved);
    let value = keyring.get(&name).await.map_err(|e| fail(e.to_string()))?;
    crate::policy::redact::learn_secret(secrecy::ExposeSecret::expose_secret(&value));
    Ok(value)
}

/// Bare `sitrep`: the inbox when alert sources are configured; otherwise how to configure them.
fn inbox(cli: &Cli) -> anyhow::Result<()> {
    let mut config = load_config(cli)?;
    use_runbooks(&mut config, None)?;
    if !has_alert_sources(&config) {
        eprintln!("sitrep: {HOW_TO_CONFIGURE}");
        eprintln!(
            "        `sitrep demo` investigates a built-in scenario with no setup; `sitrep --help` lists the commands."
        );
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && !cli.headless {
            eprint!("Open the demo now? [y/N] ");
            let mut answer = String::new();
            if std::io::stdin().lock().read_line(&mut answer).is_ok()
                && matches!(answer.trim(), "y" | "Y" | "yes")
            {
                return demo(cli, None, false, (false, false), None, Reasoner::Auto);
            }
        }
        return Ok(());
    }
    if cli.headless {
        return alerts(cli, true, None);
    }
    let model = pick_model(&config, Reasoner::Auto, None, None)?;
    let rt = runtime()?;
    rt.block_on(async {
        let sources = inbox_sources(&config, Duration::from_secs(10)).await?;
        let live = Arc::new(crate::world::World::live(&config).await?);
        let start = |payload: crate::model::WebhookPayload,
                     proposals: Vec<crate::model::Action>|
         -> anyhow::Result<crate::tui::Link> {
            let mut opts = agent_options(&config, RunMode::Live, None, true, false);
            opts.proposals = proposals;
            opts.model = model.clone();
            Ok(link::local(agent::spawn(
                live.clone(),
                Trigger::Alert(payload),
                opts,
            )))
        };
        let (updates, poller) = crate::inbox::watch::watch(sources, config.inbox.poll_secs);
        let result = crate::tui::run_inbox(
            updates,
            config.inbox.clone(),
            crate::agent::approve::current_user(),
            ui_options(&config),
            start,
            link::reopen,
        )
        .await;
        poller.abort();
        result
    })
}

fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::load()?;
    if cli.read_only {
        config.policy.read_only = true;
    }
    if let Some(theme) = &cli.theme {
        config.ui.theme = theme.clone();
    }
    Ok(config)
}

fn replay(cli: &Cli, file: &Path) -> anyhow::Result<()> {
    if cli.headless {
        return replay_headless(file);
    }
    // Opened from the file: the records stay on disk, read back as the replay plays or seeks.
    let log = session::Replay::open(file)?;
    let config = load_config(cli)?;
    if let Some(tear) = &log.tear {
        eprintln!(
            "sitrep: {}: stopped reading at {}; showing the {} records before it",
            sanitize(&file.display().to_string()),
            sanitize(&tear.to_string()),
            log.replay.len()
        );
    }
    let mut opts = ui_options(&config);
    // Replay never acts, whatever the config says.
    opts.read_only = true;
    runtime()?.block_on(crate::tui::run_replay(log, opts))
}

/// Copy a session's records to stdout as NDJSON, one at a time: memory stays flat whatever the
/// file's length, and a reader that goes away ends it quietly.
fn replay_headless(file: &Path) -> anyhow::Result<()> {
    let input = std::fs::File::open(file)
        .with_context(|| format!("cannot read session file {}", file.display()))?;
    let mut reader = session::Reader::new(std::io::BufReader::with_capacity(1 << 16, input))
        .map_err(|e| anyhow::anyhow!(e).context(format!("cannot replay {}", file.display())))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut written = 0usize;
    for record in reader.by_ref() {
        let mut line = escape_json_controls(&serde_json::to_string(&record)?).into_owned();
        line.push('\n');
        if quiet_on_closed_pipe(out.write_all(line.as_bytes()))?.is_none() {
            return Ok(());
        }
        written += 1;
    }
    if quiet_on_closed_pipe(out.flush())?.is_none() {
        return Ok(());
    }
    if let Some(tear) = reader.tear() {
        eprintln!(
            "sitrep: {}: stopped reading at {}; replayed the {written} records before it",
            sanitize(&file.display().to_string()),
            sanitize(&tear.to_string())
        );
    }
    Ok(())
}

/// A write's result, with a closed stdout (the reader went away) turned into `None`.
fn quiet_on_closed_pipe<T>(r: std::io::Result<T>) -> anyhow::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn ui_options(config: &Config) -> crate::tui::UiOptions {
    crate::tui::UiOptions {
        theme: Some(config.ui.theme.clone()),
        keys: config.keys.clone(),
        read_only: config.policy.read_only,
        save_report: Some(link::save_report()),
        ..crate::tui::UiOptions::default()
    }
}

/// Run an investigation in the console, or headless, until it ends.
async fn drive_with(
    cli: &Cli,
    handle: AgentHandle,
    opts: crate::tui::UiOptions,
) -> anyhow::Result<()> {
    if cli.headless {
        let outcome = run_headless(handle).await?;
        eprintln!("sitrep: session ended: {}", outcome.name());
        Ok(())
    } else {
        crate::tui::run_live(link::local(handle), opts).await
    }
}

/// Simulated latency of each call in a watched demo whose recording carries no `latency_ms`
/// (recordings made with `--record` do, and are replayed at their own pace): what Kubernetes,
/// Prometheus and Loki take over a VPN from a bastion under load. About ten calls follow one another in a run
/// (specialists run side by side), so a demo takes 20-40 s; `f` in the console skips ahead.
const DEMO_PACE: (std::time::Duration, std::time::Duration) = (
    std::time::Duration::from_millis(1200),
    std::time::Duration::from_millis(3800),
);

fn demo(
    cli: &Cli,
    name: Option<&str>,
    list: bool,
    (no_save, fast): (bool, bool),
    runbooks: Option<&Path>,
    reasoner: Reasoner,
) -> anyhow::Result<()> {
    if list {
        let mut out = std::io::stdout().lock();
        for case in crate::world::demo::list() {
            writeln!(out, "{:<24} {}", case.name, case.title)?;
        }
        return Ok(());
    }
    let mut config = load_config(cli)?;
    use_runbooks(&mut config, runbooks)?;
    let model = pick_model(&config, reasoner, None, None)?;
    // The paced world, once started, so the console's skip-ahead key can drop the pacing.
    let paced: Arc<std::sync::Mutex<Option<Arc<crate::world::World>>>> = Arc::default();
    let mut opts = ui_options(&config);
    if !fast && !cli.headless {
        let paced = paced.clone();
        opts.skip_ahead = Some(Arc::new(move || {
            if let Some(w) = paced.lock().ok().and_then(|g| g.clone()) {
                w.set_pace(std::time::Duration::ZERO, std::time::Duration::ZERO);
            }
        }));
    }
    let start = |name: &str| -> anyhow::Result<AgentHandle> {
        let world = Arc::new(crate::world::demo::load(name)?);
        if !fast && !cli.headless {
            // Recorded answers arrive in microseconds; someone watching needs the rhythm of live calls.
            world.set_pace(DEMO_PACE.0, DEMO_PACE.1);
            if let Ok(mut p) = paced.lock() {
                *p = Some(world.clone());
            }
        }
        let trigger = match world.case().and_then(|c| c.alert.clone()) {
            Some(payload) => Trigger::Alert(payload),
            None => Trigger::Problem(
                world
                    .case()
                    .map(|c| c.title.clone())
                    .unwrap_or_else(|| name.to_string()),
            ),
        };
        let mut agent_opts = agent_options(
            &config,
            RunMode::Demo,
            Some(name.to_string()),
            !no_save,
            false,
        );
        agent_opts.model = model.clone();
        Ok(agent::spawn(world, trigger, agent_opts))
    };
    let name = match name {
        Some(n) => n.to_string(),
        None if !cli.headless => {
            // No name at a terminal: let the operator pick, in the console session that then runs it.
            let entries = crate::tui::chooser_state::Entry::builtin();
            return runtime()?.block_on(crate::tui::run_demo_chooser(entries, opts, |name| {
                start(name).map(link::local)
            }));
        }
        None => match crate::world::demo::names().first() {
            Some(n) => {
                eprintln!(
                    "sitrep: no scenario named; running the first, {n} (see `sitrep demo --list`)"
                );
                n.to_string()
            }
            None => bail!("this build has no demo scenarios"),
        },
    };
    runtime()?.block_on(async {
        let handle = start(&name)?;
        drive_with(cli, handle, opts).await
    })
}

/// One record as one NDJSON line. Returns false when the reader went away (a closed pipe).
fn write_record(out: &mut impl Write, record: &Record) -> anyhow::Result<bool> {
    let mut line = escape_json_controls(&serde_json::to_string(record)?).into_owned();
    line.push('\n');
    let line = line.into_bytes();
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn sessions(dir: Option<&Path>) -> anyhow::Result<()> {
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(session::sessions_dir);
    let (found, errors) = session::list_sessions(&dir);
    for e in &errors {
        eprintln!("sitrep: skipped {}", sanitize(&e.to_string()));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if found.is_empty() {
        writeln!(
            out,
            "no sessions in {}",
            sanitize(&dir.display().to_string())
        )?;
        return Ok(());
    }
    let rows: Vec<[String; 5]> = found
        .iter()
        .map(|s| {
            let outcome = match (s.outcome, &s.tear) {
                (Some(o), _) => o.name().to_string(),
                (None, Some(_)) => "torn".to_string(),
                (None, None) => "unfinished".to_string(),
            };
            let file = s
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Titles come from alerts and file names from anyone who can write the directory:
            // neither may carry a terminal escape sequence to the reader's terminal.
            [
                s.started.format("%Y-%m-%d %H:%M").to_string(),
                outcome,
                format_duration(s.duration),
                sanitize(&s.title.replace(['\n', '\r'], " ")).into_owned(),
                sanitize(&file).into_owned(),
            ]
        })
        .collect();
    let headers = ["WHEN (UTC)", "OUTCOME", "DURATION", "TITLE", "FILE"];
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths[3] = widths[3].min(60);
    // Ten thousand rows: one line buffer, no string per cell.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let mut line = String::new();
    let mut print = |out: &mut dyn Write, cells: [&str; 5]| -> std::io::Result<()> {
        line.clear();
        for (i, cell) in cells.iter().enumerate() {
            let mut shown = 0;
            for c in cell.chars().take(widths[i]) {
                line.push(c);
                shown += 1;
            }
            if i + 1 < cells.len() {
                line.extend(std::iter::repeat_n(' ', widths[i] - shown + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())
    };
    if quiet_on_closed_pipe(print(&mut out, headers))?.is_none() {
        return Ok(());
    }
    for row in &rows {
        if quiet_on_closed_pipe(print(&mut out, row.each_ref().map(String::as_str)))?.is_none() {
            return Ok(());
        }
    }
    quiet_on_closed_pipe(out.flush())?;
    Ok(())
}

fn history(
    alert: Option<String>,
    subject: Option<String>,
    since: Option<&str>,
    json: bool,
    dir: Option<&Path>,
) -> anyhow::Result<()> {
    use session::history::{Filter, group, parse_duration};
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(session::sessions_dir);
    let since = match since {
        Some(text) => Some(chrono::Utc::now() - parse_duration(text).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let index = session::memory::index(&dir);
    for w in &index.warnings {
        eprintln!("sitrep: {}", sanitize(w));
    }
    let filter = Filter {
        alert,
        subject,
        since,
    };
    let groups = group(&index.sessions, &filter);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if json {
        for g in &groups {
            serde_json::to_writer(&mut out, g)?;
            writeln!(out)?;
        }
        return Ok(out.flush()?);
    }
    if groups.is_empty() {
        writeln!(
            out,
            "no past incidents in {}",
            sanitize(&dir.display().to_string())
        )?;
        return Ok(out.flush()?);
    }
    for g in &groups {
        let what = match (g.alert.is_empty(), g.subject.is_empty()) {
            (false, false) => format!("{} on {}", g.alert, g.subject),
            (false, true) => g.alert.clone(),
            (true, _) => g.subject.clone(),
        };
        writeln!(
            out,
            "{}: {} time(s), {} .. {}, mean {}",
            sanitize(&what),
            g.occurrences,
            g.first.format("%Y-%m-%d %H:%M"),
            g.last.format("%Y-%m-%d %H:%M"),
            format_duration(g.mean_duration)
        )?;
        let last = match g.last_category {
            Some(c) => format!("{c}: {}", g.last_root_cause),
            None => "no verdict".into(),
        };
        writeln!(out, "  last verdict: {}", sanitize(&last))?;
        if g.verdicts.len() > 1 {
            let all: Vec<String> = g
                .verdicts
                .iter()
                .map(|(c, n)| format!("{c} x{n}"))
                .collect();
            writeln!(out, "  verdicts: {}", all.join(", "))?;
        }
        for f in &g.fixes {
            let when = f
                .last_verified
                .map(|t| format!(", last verified {}", t.format("%Y-%m-%d %H:%M")))
                .unwrap_or_default();
            writeln!(
                out,
                "  fixed by {} ({} time(s){when})",
                sanitize(&f.action),
                f.times
            )?;
        }
        if g.fixes.is_empty() {
            writeln!(out, "  no verified fix")?;
        }
        for n in &g.notes {
            writeln!(out, "  note: {}", sanitize(n))?;
        }
    }
    Ok(out.flush()?)
}

fn format_duration(secs: f64) -> String {
    let total = secs.max(0.0).round() as u64;
    if total < 60 {
        format!("{total}s")
    } else if total < 3600 {
        format!("{}m{:02}s", total / 60, total % 60)
    } else {
        format!("{}h{:02}m", total / 3600, (total % 3600) / 60)
    }
}

fn export(file: &Path, format: Format, output: Option<&Path>) -> anyhow::Result<()> {
    // Folded while reading: the records are never all in memory at once, and markdown, which
    // shows a text body as its line count, folds only the bodies' line structure.
    // JSON keeps text bodies in the file, copying each out as it is written.
    let (folded, bodies) = match format {
        Format::Markdown => (
            session::fold_file_with(file, session::export::markdown_input)?,
            None,
        ),
        Format::Json => {
            let (folded, bodies) = session::export::fold_file_for_json(file)?;
            (folded, Some(bodies))
        }
    };
    if let Some(tear) = &folded.tear {
        // A crash leaves a torn last line, and the postmortem of everything before it is whole;
        // a damaged or invalid record elsewhere would make it silently incomplete.
        if !tear.is_torn_write() {
            bail!(
                "{}: cannot export: {}",
                sanitize(&file.display().to_string()),
                sanitize(&tear.to_string())
            );
        }
        eprintln!(
            "sitrep: {}: stopped reading at {}; showing the {} records before it",
            sanitize(&file.display().to_string()),
            sanitize(&tear.to_string()),
            folded.records
        );
    }
    let incident = folded.incident;
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        match format {
            Format::Markdown => out.write_all(session::export::markdown(&incident).as_bytes())?,
            Format::Json => {
                match &bodies {
                    Some(bodies) => {
                        session::export::write_json_streamed(&mut *out, &incident, bodies)?
                    }
                    None => session::export::write_json(&mut *out, &incident)?,
                }
                out.write_all(b"\n")?;
            }
        }
        out.flush()
    };
    match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            write(&mut std::io::BufWriter::new(f))
                .with_context(|| format!("cannot write {}", path.display()))?
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            quiet_on_closed_pipe(write(&mut out))?;
        }
    }
    Ok(())
}

fn diagnose(file: &Path, json: bool, runbooks: Option<&Path>) -> anyhow::Result<()> {
    let mut reader = session::open_file(file)?;
    let (books, book_errors) = crate::runbook::load(runbooks);
    for e in &book_errors {
        eprintln!("sitrep: runbook skipped: {e}");
    }
    // Read, diagnosed and folded in one pass; evidence bodies, which neither the reasoning nor
    // the verdict reads, are folded as their line structure only.
    let mut incident = crate::model::Incident::new();
    let mut records = 0usize;
    let events = reader.by_ref().map(|r| {
        let event = session::export::markdown_input(r.event);
        incident.apply(r.t, &event);
        records += 1;
        event
    });
    let re = agent::rediagnose_stream(events, &books);
    let tear = reader.tear().cloned();
    let torn = tear.as_ref().map(|t| {
        format!("the file is torn at {t}: diagnosed from the {records} records before it")
    });
    let re = re.map_err(|e| match &torn {
        Some(t) => anyhow::anyhow!("{}: {e} ({t})", file.display()),
        None => anyhow::anyhow!("{}: {e}", file.display()),
    })?;
    let text = if json {
        let mut s = serde_json::to_string_pretty(&serde_json::json!({
            "file": file.display().to_string(),
            "verdict": re.verdict,
            "matches_recorded": re.matches_recorded(),
            "recorded": re.recorded,
            "facts": re.facts,
            "evidence": re.evidence,
            "notes": re.notes,
            "reasoner": re.reasoner,
            "tear": tear.as_ref().map(|t| serde_json::json!({
                "line": t.line, "byte_offset": t.byte_offset, "reason": t.reason,
            })),
        }))?;
        s.push('\n');
        s
    } else {
        verdict_text(&re, &incident, torn.as_deref())
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    Ok(())
}

/// The re-diagnosis as an engineer reads it: every citation resolved to the evidence's title.
fn verdict_text(
    re: &agent::Rediagnosis,
    incident: &crate::model::Incident,
    torn: Option<&str>,
) -> String {
    let v = &re.verdict;
    let cite = |ids: &[String]| -> String {
        ids.iter()
            .map(|id| match incident.evidence.iter().find(|e| &e.id == id) {
                Some(e) => format!("{id} {} [{}]", e.title, e.kind),
                None => format!("{id} (not in this session)"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = String::new();
    if let Some(t) = torn {
        out.push_str(&format!("note: {t}\n"));
    }
    out.push_str(&format!(
        "verdict:    {} ({:.0}% confidence)\nroot cause: {}\n",
        v.category,
        v.confidence * 100.0,
        v.root_cause
    ));
    out.push_str(&format!(
        "from {} facts records over {} evidence items\nreasoner:   {}\n",
        re.facts, re.evidence, re.reasoner
    ));
    out.push_str(&crate::model::steps_text(
        &v.subject,
        v.symptom.as_ref(),
        &v.checks,
    ));
    out.push_str("\nfindings:\n");
    if v.findings.is_empty() {
        out.push_str("  (none)\n");
    }
    for f in &v.findings {
        out.push_str(&format!(
            "  - {} [{} {}, {:.0}%]\n",
            f.summary,
            f.analyzer,
            f.category,
            f.confidence * 100.0
        ));
        if !f.detail.is_empty() {
            out.push_str(&format!("    {}\n", f.detail));
        }
        out.push_str(&format!(
            "    evidence: {}\n",
            if f.evidence.is_empty() {
                "none cited".to_string()
            } else {
                cite(&f.evidence)
            }
        ));
    }
    if !v.hypotheses.is_empty() {
        out.push_str("\nhypotheses:\n");
        for (n, h) in v.hypotheses.iter().enumerate() {
            out.push_str(&format!(
                "  {}. {} [{}, {:.0}%]\n",
                n + 1,
                h.statement,
                h.category,
                h.confidence * 100.0
            ));
        }
    }
    out.push_str("\nruled out:\n");
    if v.ruled_out.is_empty() {
        out.push_str("  (nothing)\n");
    }
    for r in &v.ruled_out {
        out.push_str(&format!("  - {}: {}\n", r.statement, r.reason));
        if !r.evidence.is_empty() {
            out.push_str(&format!("    evidence: {}\n", cite(&r.evidence)));
        }
    }
    out.push('\n');
    out.push_str(match (&re.recorded, re.matches_recorded()) {
        (_, true) => "same as the verdict recorded in the session\n",
        (Some(_), false) => "DIFFERS from the verdict recorded in the session\n",
        (None, _) => "the session recorded no verdict (it stopped before Diagnose)\n",
    });
    if let Some(r) = re.recorded.as_ref().filter(|_| !re.matches_recorded()) {
        out.push_str(&format!(
            "recorded:   {} ({:.0}% confidence): {}\n",
            r.category,
            r.confidence * 100.0,
            r.root_cause
        ));
    }
    for n in &re.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Exits non-zero with the reason when the approval is refused (same user as the operator, an
/// unknown, finished, already decided or not critical action).
fn approve(session_ref: &str, action: &str) -> anyhow::Result<()> {
    let done = agent::approve::submit_in(session_ref, action, &session::sessions_dir())
        .with_context(|| format!("approval of {action} refused"))?;
    writeln!(
        std::io::stdout().lock(),
        "approval of {action} by {} recorded ({})\n  {} {}\n  {}\n  version {}",
        agent::approve::current_user(),
        done.path.display(),
        crate::tui::sanitize::sanitize(&done.kind),
        crate::tui::sanitize::sanitize(&done.target),
        crate::tui::sanitize::sanitize(&done.operation),
        done.digest
    )?;
    Ok(())
}

fn runbooks_check(path: &Path) -> anyhow::Result<()> {
    match crate::runbook::check(path) {
        Ok(names) => {
            let mut out = std::io::stdout().lock();
            for name in &names {
                writeln!(out, "ok  {name}")?;
            }
            writeln!(out, "{} runbooks valid", names.len())?;
            Ok(())
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            bail!("{} problems in {}", errors.len(), path.display())
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn eval(cli: &Cli, dirs: &[PathBuf], timeout: u64, reasoner: Reasoner) -> anyhow::Result<()> {
    let config = match reasoner {
        Reasoner::Rules => Config::default(),
        _ => load_config(cli)?,
    };
    // No [llm] with --reasoner llm: each case answers from its own recorded exchanges.
    let replay_llm = reasoner == Reasoner::Llm && config.llm.is_none();
    let model = if replay_llm {
        None
    } else {
        pick_model(&config, reasoner, None, None)?
    };
    let opts = crate::eval::EvalOptions {
        case_timeout: Duration::from_secs(timeout.max(1)),
        print: true,
        model,
        replay_llm,
    };
    let summary = runtime()?.block_on(crate::eval::run(dirs, &opts))?;
    if summary.failed() > 0 {
        bail!("{}", summary.totals());
    }
    Ok(())
}

fn investigate(cli: &Cli, args: &InvestigateArgs) -> anyhow::Result<()> {
    let mut config = load_config(cli)?;
    use_runbooks(&mut config, args.runbooks.as_deref())?;
    let model = pick_model(
        &config,
        args.reasoner,
        args.case.as_deref(),
        args.record
            .as_ref()
            .map(|d| d.join(crate::agent::llm::RECORDED_FILE)),
    )?;
    let rt = runtime()?;
    rt.block_on(async {
        let alert = args.alert.as_deref().map(read_alert).transpose()?;
        let world = match (&args.case, &args.record) {
            // The case answers every question; a configured tracker still gets a real ticket.
            (Some(dir), _) => crate::world::World::from_case_dir(dir)?.with_tickets(&config)?,
            (None, Some(dir)) => {
                let title = match (&alert, &args.problem) {
                    (Some(payload), _) => payload.primary().title(),
                    (None, Some(text)) => text.clone(),
                    (None, None) => "recorded investigation".to_string(),
                };
                crate::world::World::record(&config, dir, &title, alert.as_ref()).await?
            }
            (None, None) => crate::world::World::live(&config).await?,
        };
        let trigger = match (alert, &args.problem) {
            (Some(payload), _) => Trigger::Alert(payload),
            (None, Some(text)) => Trigger::Problem(text.clone()),
            (None, None) => match world.case().and_then(|c| c.alert.clone()) {
                Some(payload) => Trigger::Alert(payload),
                None => bail!("nothing to investigate: give --alert FILE or --problem TEXT"),
            },
        };
        let mode = if args.case.is_some() {
            RunMode::Case
        } else {
            RunMode::Live
        };
        let case = world.case().map(|c| c.id.clone());
        let mut opts = agent_options(&config, mode, case, !args.no_save, args.diagnosis_only);
        opts.model = model;
        opts.cluster = args.context.clone();
        let world = Arc::new(world);
        let mut ui = ui_options(&config);
        if args.case.is_some() && !cli.headless {
            // Watched, a recorded case keeps the rhythm it was recorded with; `f` skips ahead.
            world.pace_recorded_only();
            let paced = world.clone();
            ui.skip_ahead = Some(Arc::new(move || {
                paced.set_pace(std::time::Duration::ZERO, std::time::Duration::ZERO)
            }));
        }
        let handle = agent::spawn(world, trigger, opts);
        drive_with(cli, handle, ui).await
    })
}

fn read_alert(file: &Path) -> anyhow::Result<crate::model::WebhookPayload> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    if crate::model::is_cloudwatch_alarm(&text) {
        return crate::model::parse_cloudwatch_alarm(&text)
            .with_context(|| format!("{}: not a CloudWatch alarm notification", file.display()));
    }
    if crate::model::monitor::is_webhook(&text) {
        return crate::model::monitor::parse(&text)
            .with_context(|| format!("{}: not a Datadog monitor notification", file.display()));
    }
    crate::model::WebhookPayload::parse(&text).with_context(|| {
        format!(
            "{}: not an Alertmanager webhook payload (version 4), a Datadog monitor notification nor a CloudWatch alarm notification",
            file.display()
        )
    })
}

/// Agent options from the config; `save` picks a new session file in the sessions dir.
pub fn agent_options(
    config: &Config,
    mode: RunMode,
    case: Option<String>,
    save: bool,
    diagnosis_only: bool,
) -> AgentOptions {
    AgentOptions {
        read_only: config.policy.read_only,
        diagnosis_only,
        veto_secs: config.policy.veto_secs as f64,
        approval_timeout: Some(Duration::from_secs(config.policy.approval_timeout_secs)),
        // The agent names the file from its own start time and title when it is a directory.
        session_path: save.then(|| {
            session::new_session_path(chrono::Utc::now(), case.as_deref().unwrap_or("session"))
        }),
        mode,
        case,
        redactor: redactor(Some(config)),
        runbooks_dir: config.paths.runbooks.clone(),
        ..AgentOptions::default()
    }
}

/// `--runbooks DIR` over `[paths] runbooks`; the directory must exist, or the run would quietly
/// go without the runbooks it was pointed at.
fn use_runbooks(config: &mut Config, flag: Option<&Path>) -> anyhow::Result<()> {
    if let Some(dir) = flag {
        config.paths.runbooks = Some(dir.to_path_buf());
    }
    if let Some(dir) = &config.paths.runbooks
        && !dir.is_dir()
    {
        bail!(
            "runbooks directory {}: not a directory (from {})",
            dir.display(),
            if flag.is_some() {
                "--runbooks"
            } else {
                "[paths] runbooks"
            }
        );
    }
    Ok(())
}

/// Drive an investigation without a terminal UI: every record goes to stdout as one NDJSON line;
/// stdin is read as NDJSON `Command`s (a bad line is reported on stderr and skipped).
pub async fn run_headless(handle: AgentHandle) -> anyhow::Result<Outcome> {
    let AgentHandle {
        mut records,
        commands,
        task,
        ..
    } = handle;
    let signals = end_on_signals(commands.clone())?;
    // Blocking stdin reads live on their own thread so they never hold up the records.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for (n, line) in stdin.lock().lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("sitrep: stdin: {e}");
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match parse_command(&line) {
                Ok(cmd) => {
                    if commands.send(cmd).is_err() {
                        break;
                    }
                }
                // The message can quote the line, which may hold anything the operator pasted.
                Err(e) => eprintln!(
                    "sitrep: stdin line {}: {}",
                    n + 1,
                    sanitize(&crate::policy::redact::Redactor::new().redact(&e))
                ),
            }
        }
    });
    let stdout = std::io::stdout();
    let mut reader_gone = false;
    while let Some(record) = records.recv().await {
        if !reader_gone {
            let mut out = stdout.lock();
            reader_gone = !write_record(&mut out, &record)?;
        }
    }
    signals.abort();
    task.await.context("the investigation task panicked")?
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT (ctrl-c, a service stop, an SSH drop) end a headless run
/// as `interrupted`, its end record written and nothing pending decided, instead of killing the
/// process mid-session. Later signals are absorbed while it ends.
fn end_on_signals(
    commands: tokio::sync::mpsc::UnboundedSender<Command>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let on = |kind: SignalKind, name: &str| {
        signal(kind).with_context(|| format!("cannot listen for {name}"))
    };
    let mut int = on(SignalKind::interrupt(), "SIGINT")?;
    let mut term = on(SignalKind::terminate(), "SIGTERM")?;
    let mut hup = on(SignalKind::hangup(), "SIGHUP")?;
    let mut quit = on(SignalKind::quit(), "SIGQUIT")?;
    Ok(tokio::spawn(async move {
        let mut first = true;
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
                _ = hup.recv() => "SIGHUP",
                _ = quit.recv() => "SIGQUIT",
            };
            if std::mem::take(&mut first) {
                eprintln!("sitrep: {name}: ending the session as interrupted");
                let _ = commands.send(Command::Interrupt {
                    reason: name.into(),
                });
            }
        }
    }))
}

/// One NDJSON command line, with a message that says what a command looks like.
pub fn parse_command(line: &str) -> Result<Command, String> {
    serde_json::from_str::<Command>(line).map_err(|e| {
        format!(
            "not a command ({e}); expected e.g. {{\"type\":\"approve\",\"action_id\":\"a1\"}}, \
             {{\"type\":\"deny\",\"action_id\":\"a1\",\"reason\":\"...\"}}, \
             {{\"type\":\"approve_credential\",\"ref\":\"op://...\"}}, \
             {{\"type\":\"chat\",\"text\":\"...\"}} or {{\"type\":\"cancel\"}}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn commands_parse_and_bad_lines_explain() {
        assert_eq!(parse_command(r#"{"type":"cancel"}"#), Ok(Command::Cancel));
        let err = parse_command("approve a1").unwrap_err();
        assert!(err.contains("\"type\":\"approve\""), "{err}");
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(5.4), "5s");
        assert_eq!(format_duration(254.7), "4m15s");
        assert_eq!(format_duration(7300.0), "2h01m");
    }
}
