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

mod args;
mod demo_list;
mod export;
mod headless;
mod history;
mod link;
mod verdict;

pub use args::*;
use export::export;
pub use headless::{parse_command, run_headless};
use history::{format_duration, history, sessions};
use verdict::diagnose;

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
