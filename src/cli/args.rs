//! The command line: flags, subcommands and their arguments, as clap parses them.

use super::*;

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
