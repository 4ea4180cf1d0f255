//! Log analyzers: failure signatures by error class (DNS, refused/reset, timeouts, TLS, auth,
//! panics, 5xx, OOM, configuration) over Drain-style templates, compared across the onset.

use super::{Basis, Decl, Role};
use crate::model::{Category, LogLine, PodFacts};
use crate::reason::templates::{self, Shift, Template};
use crate::reason::{Ctx, Signal, list_names};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::sync::LazyLock;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[
    Decl {
        id: "log_signature",
        title: "known failure in the logs",
        concern: "logs",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "log_error_burst",
        title: "burst of error lines",
        concern: "logs",
        role: Role::Failure,
        reads: &[],
    },
    Decl {
        id: "log_template",
        title: "new log template",
        concern: "logs",
        role: Role::Context,
        reads: &[],
    },
];

/// A family of log lines that points at a mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sig {
    Pool,
    Cert,
    /// A host name that does not exist (NXDOMAIN): the configuration names something nowhere.
    NoSuchName,
    Dns,
    ConnRefused,
    /// A peer the client could not reach at all (every host tried, no route, cannot connect).
    Unreachable,
    /// A peer that answers in a protocol or version its client library does not speak.
    Incompatible,
    Reset,
    Timeout,
    Auth,
    Panic,
    /// A script or program text that does not parse: the code shipped is broken.
    Syntax,
    Http5xx,
    /// A runtime or pool reporting that something taken was never given back (connections,
    /// memory): the code holding them is at fault.
    Leak,
    /// A token or signature rejected as issued in the future: the clocks of the issuer and the
    /// checker disagree.
    ClockSkew,
    /// A 5xx answer the process received from a peer it called (an HTTP client's error naming
    /// the status): the peer fails, not the caller.
    Upstream5xx,
    /// A peer refusing the rate of calls (HTTP 429, a cloud API's throttling code): the peer's
    /// limit, not the caller's code.
    Throttled,
    Oom,
    /// A store the process writes to refuses writes at its own memory limit (Redis at
    /// `maxmemory` with nothing it may evict): the store's capacity, not the caller's memory.
    StoreFull,
    /// A disk or volume with no room left: writes fail.
    DiskFull,
    /// The process's open-file limit is reached: new connections and files fail.
    FileDescriptors,
    /// A database that refuses writes because it is read-only: after a failover the client
    /// still holds the old writer, now a replica, or it was pointed at a reader.
    ReadOnly,
    Config,
}

impl Sig {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Sig::Pool => "connection pool exhaustion errors",
            Sig::Cert => "TLS certificate errors",
            Sig::NoSuchName => "host names that resolve nowhere",
            Sig::Dns => "DNS resolution failures",
            Sig::ConnRefused => "connection refused errors",
            Sig::Unreachable => "unreachable-host errors",
            Sig::Incompatible => "client/server incompatibility errors",
            Sig::Reset => "connection resets",
            Sig::Timeout => "timeouts",
            Sig::Auth => "authentication / authorization failures",
            Sig::Panic => "panics / stack traces",
            Sig::Syntax => "syntax errors",
            Sig::Http5xx => "HTTP 5xx responses",
            Sig::Upstream5xx => "HTTP 5xx answers from an upstream",
            Sig::Leak => "resource leak reports",
            Sig::ClockSkew => "tokens rejected as issued in the future (clock skew)",
            Sig::Oom => "out-of-memory messages",
            Sig::StoreFull => "writes refused by a store at its memory limit",
            Sig::DiskFull => "disk-full errors",
            Sig::FileDescriptors => "open-file limit errors",
            Sig::ReadOnly => "writes refused by a read-only database",
            Sig::Throttled => "rate-limit refusals",
            Sig::Config => "configuration errors",
        }
    }

    pub(crate) fn category(self) -> Category {
        match self {
            Sig::ConnRefused
            | Sig::Unreachable
            | Sig::Incompatible
            | Sig::Reset
            | Sig::Upstream5xx
            | Sig::ReadOnly
            | Sig::Throttled
            | Sig::Timeout => Category::DependencyFailure,
            // The cluster's resolver failing (SERVFAIL, lookups timing out) is the platform.
            Sig::ClockSkew | Sig::Dns => Category::Infrastructure,
            Sig::Auth => Category::ConfigurationError,
            Sig::Panic | Sig::Syntax | Sig::Http5xx | Sig::Leak => Category::CodeDefect,
            Sig::Oom | Sig::StoreFull => Category::ResourceExhaustion,
            Sig::Config | Sig::Cert | Sig::NoSuchName => Category::ConfigurationError,
            Sig::Pool | Sig::DiskFull | Sig::FileDescriptors => Category::ResourceExhaustion,
        }
    }
}

static PATTERNS: LazyLock<Vec<(Sig, Regex)>> = LazyLock::new(|| {
    let table: [(Sig, &str); 23] = [
        (
            Sig::Pool,
            r"(?i)pool (?:is )?exhausted|connection pool (?:is )?(?:full|exhausted)|too many (?:connections|clients)|remaining connection slots|could not acquire (?:a )?connection|connection is not available, request timed out|timeout acquiring (?:a )?connection|no available connections?|max_connections",
        ),
        (
            Sig::Cert,
            r"(?i)x509:|certificate (?:has )?expired|certificate_expired|certificateexpiredexception|\b(?:bad_certificate|certificate_unknown|unknown_ca)\b|pkix path (?:building|validation) failed|ssl handshake failed|sslhandshakeexception|certificate is not yet valid|certificate verify failed|unable to verify the first certificate|ssl certificate problem|tls: (?:bad|expired|unknown) certificate",
        ),
        (
            Sig::NoSuchName,
            r"(?i)no such host|nxdomain|enotfound|name or service not known|name does not resolve|could not resolve host|could not translate host name|unknown host|nodename nor servname provided",
        ),
        (
            Sig::Dns,
            r"(?i)could not resolve (?:name|address|dns|the name)|temporary failure in name resolution|getaddrinfo eai_again|eai_again|dns lookup failed|servfail|i/o timeout.*:53\b|server misbehaving|lookup \S+ on \S+:53: .*(?:timeout|refused|unreachable|no route)",
        ),
        (
            Sig::ConnRefused,
            r"(?i)connection refused|econnrefused|connection to \S+ refused|refused (?:the |our )?connection|delayed_connect_error:_?111\b",
        ),
        (
            Sig::Incompatible,
            r"(?i)unsupported (?:protocol|server|wire|api) version|protocol version mismatch|(?:server|protocol|wire) version \S+ (?:is )?not supported|not supported by (?:the )?(?:client|server|driver)|requires (?:libpq|server|client|driver) version|incompatible (?:server|client|protocol|wire|api) version|client does not support authentication protocol|authentication method \S+ (?:is )?not supported|reports (?:maximum|minimum) wire version|(?:driver|client|library) requires at (?:least|most) |not compatible with (?:the )?server",
        ),
        (
            Sig::Unreachable,
            r"(?i)all hosts? ?(?:\(s\) )?tried|nohostavailable|no hosts? (?:was |is )?available|(?:unable|failed|could not|couldn't|cannot|can't) (?:to )?(?:connect|establish a connection) to|no route to host|(?:network|host) is unreachable|ehostunreach|enetunreach|connection to node -?\d+ .{0,160}could not be established|broker may not be available|\bno healthy upstream\b|\bremote_connection_failure\b|(?:group )?coordinator \S+ .{0,80}is unavailable",
        ),
        (
            Sig::Reset,
            r"(?i)connection reset|econnreset|broken pipe|unexpected eof|connection closed by (?:peer|remote)",
        ),
        (
            Sig::Auth,
            r"(?i)(?:password )?authentication failed|access denied for|permission denied for|unauthori[sz]ed\b|invalid (?:credentials|api[ _-]?key|token|username or password)|401 unauthorized|403 forbidden|\bnot authorized\b|\b(?:code|status)[=:]? ?40[13]\b|command \S+ requires authentication|sasl authentication failed|noauth authentication required|wrongpass|token (?:has )?expired|signature (?:is )?invalid|is forbidden: user|cannot (?:get|list|watch|create|update|patch|delete) resource",
        ),
        (
            Sig::Timeout,
            r"(?i)timed out|deadline exceeded|i/o timeout|etimedout|read timeout|connect timeout|timeout (?:after|exceeded|waiting)|gateway timeout|timeout of \d+ ?m?s exceeded|econnaborted",
        ),
        (
            Sig::Panic,
            r"(?i)panic:|panicked at|panic recovered|goroutine \d+ \[|runtime error: |nil pointer dereference|traceback \(most recent call last\)|exception in thread|exception on /|unhandled exception|uncaught exception|nullpointerexception|\b(?:attribute|type|index|zerodivision|name|unboundlocal)error: |(?-i:KeyError: ['\x22][a-z_])|segmentation fault|sigsegv|fatal error:",
        ),
        (
            Sig::Syntax,
            r"(?i)syntax error|unexpected eof while looking for matching|unexpected end of file|SyntaxError|ParseError|unexpected token|command not found|unterminated (?:string|quoted)",
        ),
        (
            Sig::Http5xx,
            r"(?i)(?:HTTP/\d(?:\.\d)?\x22?\s+|status(?:code)?[=: ]+|\b(?:GET|POST|PUT|DELETE|PATCH)\s+\S+\s+)5\d\d\b|internal server error|bad gateway|service unavailable",
        ),
        (
            Sig::ClockSkew,
            r"(?i)prematurejwtexception|immaturesignatureerror|token used before issued|(?:token|jwt|signature) (?:is )?not (?:yet )?valid (?:yet|until|before)|not yet valid \((?:iat|nbf)\)|\bclock skew(?:ed)?\b|clock is (?:ahead|behind)",
        ),
        (
            Sig::Leak,
            r"(?i)\bleak detected\b|apparent connection leak|possible (?:memory|connection|resource|eventemitter memory) leak|\bleakdetection|connection leak|memory leak detected",
        ),
        (
            Sig::Upstream5xx,
            r"(?i)\b5\d\d (?:server error|service unavailable|bad gateway|gateway time-?out)\b.{0,40}\bfor url\b|(?:returned|responded with|answered with|received|got)(?: an?)?(?: http)?(?: status)?(?: code)?:? 5\d\d\b|request failed with status code 5\d\d|unexpected (?:http )?status(?: code)?:? 5\d\d|upstream\S* (?:returned|responded|answered)\D{0,20}5\d\d\b|httpservererrorexception",
        ),
        (
            Sig::Oom,
            r"(?i)out of memory|oomkilled|oom-kill|killed process \d+|outofmemoryerror|cannot allocate memory",
        ),
        (
            Sig::StoreFull,
            r"(?i)\boom command not allowed|used memory > 'maxmemory'|connection blocked by (?:the )?broker\b.{0,40}\bmemory|memory resource limit alarm set|\bmemory alarm (?:set|in effect)\b",
        ),
        (
            Sig::DiskFull,
            r"(?i)no space left on device|\benospc\b|\bdisk (?:is )?full\b|(?:file ?system|volume|partition|device) (?:is )?full\b|could not extend file|not enough (?:free )?(?:disk )?space|insufficient (?:disk|storage) space|disk quota exceeded|\bedquot\b|disk free space insufficient|disk (?:resource limit )?alarm (?:set|in effect)|blocked \(disk alarm\)|flood[ -]stage disk watermark \[[^\]]*\] exceeded",
        ),
        (
            Sig::Throttled,
            r"(?i)(?-i:\bSlowDown\b|\bThrottlingException\b|\bThrottling\b|\bRequestLimitExceeded\b|\bTooManyRequests(?:Exception|Error)?\b|\bProvisionedThroughputExceededException\b|\bRequestThrottled\b)|\brate limit(?:ed| exceeded| reached)\b|\brate exceeded\b|\b429 too many requests\b|\btoo many requests\b|reduce your request rate|request rate (?:is )?too (?:large|high)|\bstatus(?:code)?[=: ]+429\b",
        ),
        (
            Sig::ReadOnly,
            r"(?i)in a read-only transaction|readonly you can't write against a read only replica|running with the --read-only option|\bdatabase is (?:in )?read[- ]only\b|\bcannot execute \w+ in a read-only\b|\bread[- ]only replica\b|\bserver is in read[- ]only mode\b",
        ),
        (
            Sig::FileDescriptors,
            r"(?i)too many open files|\bemfile\b|file descriptor limit",
        ),
        (
            Sig::Config,
            r"(?i)missing (?:required )?(?:env|environment variable|config|key|setting)|no such file or directory|invalid (?:config|configuration)|could not load config|(?:variable|setting|key|option|field) \S+ (?:is )?(?:not set|not found|missing|undefined|not defined|required)|(?-i:KeyError: ['\x22][A-Z][A-Z0-9_]{2,}['\x22])|(?:configmaps?|secrets?) \S+ not found|undefined (?:variable|key|setting)|\b[A-Z][A-Z0-9_]{2,} (?:must be (?:set|provided|defined)|is (?:not set|required|missing|empty|unset))|flag provided but not defined|unknown (?:flag|option|shorthand flag|command line option)|unrecognized (?:option|argument|arguments)|invalid (?:option|argument|flag)|read-only file system|\berofs\b|\(13: permission denied\)|: permission denied$|\beacces\b|exec format error|operation not permitted|\byaml: (?:line \d+|unmarshal errors)|\btoml: line \d+|(?:error|failed|unable|cannot|could not) (?:to )?(?:parse|parsing|load|loading|read|reading|decode|decoding|unmarshal) (?:the )?config|(?:loading|parsing|reading|decoding) (?:the )?config(?:uration)?(?: file)?\b.{0,120}\berror|\bunknown directive\b|\[emerg\].{0,80}\b(?:directive|parameter|in /etc/)|invalid value for parameter|unrecognized configuration parameter|configuration file \S+ contains errors|\bnot (?:in|found in) the (?:peer|server|member|seed) list\b|invalid (?:maximum|initial|minimum) heap size|unrecognized vm option|could not create the java virtual machine|bootstrap checks? failed|\[[^\]]*\] is too low, increase to at least|failed to bind properties under|consumer poll timeout has expired",
        ),
    ];
    table
        .into_iter()
        .filter_map(|(s, p)| Regex::new(p).ok().map(|r| (s, r)))
        .collect()
});

static ERROR_LEVEL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"\b(?:ERROR|FATAL|CRITICAL|PANIC)\b|level=(?:error|fatal)|"level"\s*:\s*"(?:error|fatal)""#).ok()
});

static TARGET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:dial tcp|connect(?:ing)? to|connection to node -?\d+ \(|lookup|enotfound|could not resolve(?: host)?:?|unknown host:?|upstream(?: request to)?|host[=:]|\(host|->)\s*\x22?([a-z0-9][a-z0-9._-]*(?::\d+)?)").ok()
});

/// A `host:port` anywhere in a line (a name, not a time of day), when no verb introduces one.
static HOST_PORT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*:\d{2,5})\b").ok());

/// A configuration error that says something is absent, not wrong.
static MISSING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)missing|not set|not found|undefined|not defined|required|must be|unset|no such file",
    )
    .ok()
});

static CONFIG_KEY: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r#"(?i)missing (?:required )?(?:env(?:ironment)? variable|env var|config(?:uration)? key|key|setting|field|option)s?\s*[:=]?\s*["'`]?([A-Za-z_][\w.\-/]*)"#,
        r#"(?i)(?:env(?:ironment)? variable|config key|key|setting|variable|field|option)\s+["'`]?([A-Za-z_][\w.\-/]*)["'`]?\s+(?:is\s+)?(?:not set|not found|missing|required|undefined|not defined)"#,
        // An environment variable's name; a lowercase key is a code defect (a payload's field).
        r#"KeyError:\s*["']([A-Z][A-Z0-9_]{2,})["']"#,
        r#"\b([A-Z][A-Z0-9_]{2,}) (?:must be (?:set|provided|defined)|is (?:not set|required|missing|empty|unset))"#,
        r#"(?i)\b((?:configmaps?|secrets?)\s+["']?[a-z0-9][a-z0-9.\-]*)["']?\s+not found"#,
        // A JVM refusing its own options, Spring refusing a property, a server's bootstrap
        // check naming the kernel setting that is too low.
        r#"(?i)invalid (?:maximum|initial|minimum) heap size:?\s*(-X\w+)"#,
        r#"(?i)unrecognized vm option\s*'([^']+)'"#,
        r#"(?i)failed to bind properties under '([^']+)'"#,
        // A Kafka consumer dropped from its group for polling less often than it promised.
        r#"(?i)consumer poll timeout has expired.{0,200}?\b(max\.poll\.interval\.ms)\b"#,
        r#"\b([a-z_]+(?:\.[a-z_]+)+) \[[^\]]*\] is too low"#,
        // A server naming the setting of its own configuration it refuses.
        r#"(?i)(?:invalid value for parameter|unrecognized configuration parameter|unknown directive)\s+["'`]?([A-Za-z_][\w.\-/]*)"#,
    ]
    .into_iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// The configuration key (or ConfigMap/Secret) a configuration error names, if any.
pub(crate) fn config_key(line: &str) -> Option<String> {
    CONFIG_KEY.iter().find_map(|re| {
        re.captures(line)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().replace(['"', '\''], ""))
            .filter(|k| {
                !["is", "was", "not", "the", "a"].contains(&k.to_ascii_lowercase().as_str())
            })
    })
}

/// The decisive detail of a line of class `sig`: the host:port that fails, the key that is missing.
pub(crate) fn detail_of(sig: Sig, line: &str) -> Option<String> {
    match sig {
        Sig::Config => config_key(line),
        // The host of the URL the client called is the peer that answered.
        Sig::Upstream5xx | Sig::Throttled => url_host(line).or_else(|| target(line)),
        // A client that logs the URL it called rather than the socket names its peer by it.
        _ => target(line).or_else(|| url_host(line)),
    }
}

/// The nodes the pods logging a signature run on, as ` (from pods on node X)`, when the lines
/// name their pods.
fn skewed_nodes(ctx: &Ctx, lines: &[&LogLine], h: &Hits) -> String {
    let mut nodes: Vec<&str> = h
        .lines
        .iter()
        .filter_map(|&i| lines.get(i)?.labels.get("pod"))
        .filter_map(|pod| ctx.pod_named(pod)?.node.as_deref())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    if nodes.is_empty() {
        String::new()
    } else {
        format!(" (from pods on node {})", nodes.join(", "))
    }
}

/// Whether a line continues the record above it: indented, or a `|`-prefixed block.
fn continuation(line: &str) -> bool {
    line.starts_with([' ', '\t', '|'])
}

/// The host of the first http(s) URL in a line.
fn url_host(line: &str) -> Option<String> {
    static URL: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"https?://([A-Za-z0-9][A-Za-z0-9.-]*(?::\d+)?)").ok());
    let caps = URL.as_ref()?.captures(line)?;
    Some(caps.get(1)?.as_str().to_string())
}

/// Whether a failed lookup in a line is of an address's name (reverse DNS), not of a name.
fn reverse_lookup(line: &str) -> bool {
    static REVERSE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?i)ip address '[0-9a-f.:]+' could not be resolved|reverse (?:dns|lookup)|\.in-addr\.arpa\b").ok()
    });
    REVERSE.as_ref().is_some_and(|re| re.is_match(line))
}

/// The signatures a line shows.
pub(crate) fn classify(line: &str) -> Vec<Sig> {
    let mut sigs: Vec<Sig> = PATTERNS
        .iter()
        .filter(|(_, re)| re.is_match(line))
        .map(|(s, _)| *s)
        .collect();
    // A shell's "unexpected EOF while looking for matching" is its parser, not a peer's socket.
    if sigs.contains(&Sig::Syntax) {
        sigs.retain(|s| *s != Sig::Reset);
    }
    // A server that cannot name a client's address (MySQL's `IP address '10.1.2.31' could not
    // be resolved`) did a reverse lookup: no setting names anything that does not exist.
    if sigs.contains(&Sig::NoSuchName) && reverse_lookup(line) {
        sigs.retain(|s| *s != Sig::NoSuchName);
    }
    // A connection the peer refused is the more precise account of one that failed.
    if sigs.contains(&Sig::ConnRefused) {
        sigs.retain(|s| *s != Sig::Unreachable);
    }
    // A client's pool is empty because the peer cannot be reached: the peer is the cause.
    if sigs.contains(&Sig::Unreachable) {
        sigs.retain(|s| *s != Sig::Pool);
    }
    // A wait for a pooled connection that timed out is the pool running dry, not a peer's
    // silence.
    if sigs.contains(&Sig::Pool) {
        sigs.retain(|s| *s != Sig::Timeout);
    }
    sigs
}

/// The workload whose pod logged a line (the pod itself when it has no owner), when the line
/// names a listed pod.
pub(crate) fn line_owner(ctx: &Ctx, l: &LogLine) -> Option<String> {
    let p = ctx.pod_named(l.labels.get("pod")?)?;
    Some(ctx.workload_of(p).map_or(p.name.clone(), |(_, n)| n))
}

/// Lines of one failure logged by several workloads of an application, where one of them is the
/// server the others' lines speak to (a MongoDB refusing the client that says "MongoDB: not
/// authorized"): the caller with the most lines, and that server. `None` unless exactly one
/// workload serves what the others' lines speak.
fn caller_and_server(
    ctx: &Ctx,
    lines: &[&LogLine],
    h: &Hits,
    workloads: &[String],
) -> Option<(String, String)> {
    let of: Vec<(Option<String>, &LogLine)> = h
        .lines
        .iter()
        .filter_map(|&i| lines.get(i))
        .map(|l| (line_owner(ctx, l), *l))
        .collect();
    let servers: Vec<&String> = workloads
        .iter()
        .filter(|w| {
            let pods: Vec<&PodFacts> = ctx
                .pods()
                .into_iter()
                .filter(|p| ctx.workload_of(p).is_some_and(|(_, n)| &n == *w))
                .collect();
            of.iter().any(|(o, l)| {
                o.as_ref() != Some(*w)
                    && crate::reason::dependencies::shared_protocol(&l.line, w, &pods).is_some()
            })
        })
        .collect();
    let [server] = servers.as_slice() else {
        return None;
    };
    let caller = workloads
        .iter()
        .filter(|w| w != server)
        .max_by_key(|w| of.iter().filter(|(o, _)| o.as_ref() == Some(*w)).count())?;
    Some((caller.clone(), (*server).clone()))
}

/// Failures of a call to something else, as the caller sees them.
const TRANSPORT: &[Sig] = &[
    Sig::Dns,
    Sig::ConnRefused,
    Sig::Unreachable,
    Sig::Reset,
    Sig::Timeout,
    Sig::Upstream5xx,
    Sig::Throttled,
];

/// Failures a process reports of its own state: out of memory, disk, files or connections, or
/// refusing its own settings.
const OWN_STATE: &[Sig] = &[
    Sig::Oom,
    Sig::DiskFull,
    Sig::FileDescriptors,
    Sig::Pool,
    Sig::Config,
];

/// How deep a signature reaches: a name that resolves nowhere or a missing setting explains a
/// refused connection, which explains a pool that ran dry, which explains a stack trace.
fn depth(sig: Sig) -> u8 {
    match sig {
        Sig::NoSuchName | Sig::Config | Sig::Cert | Sig::Auth | Sig::ClockSkew => 0,
        Sig::Dns
        | Sig::ConnRefused
        | Sig::Unreachable
        | Sig::Incompatible
        | Sig::Reset
        | Sig::Upstream5xx
        | Sig::ReadOnly
        | Sig::Throttled
        | Sig::Timeout => 1,
        // A leak drains the pool it reports on.
        Sig::Leak => 1,
        Sig::Oom | Sig::StoreFull | Sig::DiskFull | Sig::FileDescriptors | Sig::Pool => 2,
        Sig::Syntax => 3,
        Sig::Panic => 4,
        Sig::Http5xx => 5,
    }
}

/// The hits that explain an exit: the signature of the last telling line before it (the
/// deepest one when that line shows several), as an expert reads a crash from its end; else the
/// most frequent.
pub(crate) fn decisive<'h>(lines: &[&LogLine], hits: &'h [Hits]) -> Option<&'h Hits> {
    lines
        .iter()
        .rev()
        .map(|l| classify(&l.line))
        .find(|sigs| !sigs.is_empty())
        .and_then(|sigs| sigs.into_iter().min_by_key(|s| depth(*s)))
        .and_then(|sig| hits.iter().find(|h| h.sig == sig))
        .or_else(|| hits.first())
}

/// Whether the line is logged at error level or worse.
pub(crate) fn is_error(l: &LogLine) -> bool {
    let by_label = l
        .labels
        .get("level")
        .or_else(|| l.labels.get("detected_level"))
        .is_some_and(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "error" | "err" | "fatal" | "critical"
            )
        });
    by_label || ERROR_LEVEL.as_ref().is_some_and(|re| re.is_match(&l.line))
}

/// The dependency a failing line names (`db.svc:5432`), if any. A line that names the service
/// without its port and then the address the client dialled (`host=db.svc ... dial tcp
/// 10.0.0.7:5432`) gives both, `db.svc (10.0.0.7:5432)`: the name says which service, the address
/// which socket refused.
pub(crate) fn target(line: &str) -> Option<String> {
    // libpq names the address apart from its port: `connection to server at "db" (10.0.0.5),
    // port 5432 failed`.
    static LIBPQ: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#"server at "([^"]+)"(?: \([^)]*\))?, port (\d+)"#).ok());
    if let Some(c) = LIBPQ.as_ref().and_then(|re| re.captures(line))
        && let (Some(host), Some(port)) = (c.get(1), c.get(2))
    {
        return Some(format!("{}:{}", host.as_str(), port.as_str()));
    }
    // An Envoy access log line names the upstream cluster it failed on: Istio's
    // `outbound|8080||inventory-svc.inventory.svc.cluster.local`, or a cluster named after the
    // service with underscores (`inventory_svc`, a Kubernetes name cannot hold one) after the
    // upstream host it never reached (`"-"`).
    static ENVOY: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r#"outbound\|\d+\|[^|]*\|([a-z0-9][a-z0-9.-]*)|^\[[^\]]+\] "[A-Z]+ .*" 5\d\d .*"-" ([a-z0-9][a-z0-9_]*)\s*$"#).ok()
    });
    if let Some(c) = ENVOY.as_ref().and_then(|re| re.captures(line))
        && let Some(m) = c.get(1).or_else(|| c.get(2))
    {
        return Some(m.as_str().replace('_', "-"));
    }
    let all = |re: &Option<Regex>| -> Vec<String> {
        re.as_ref()
            .map(|re| {
                re.captures_iter(line)
                    .filter_map(|c| c.get(1))
                    .map(|m| m.as_str().trim_end_matches(['.', ',']).to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let has_port = |t: &str| {
        t.rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    // "failed to connect to all addresses" names no peer.
    let named: Vec<String> = all(&TARGET)
        .into_iter()
        .filter(|t| {
            ![
                "all",
                "any",
                "the",
                "server",
                "host",
                "remote",
                "connection",
                // `A record lookup error: lookup paymentservice on …`
                "error",
                "failed",
            ]
            .contains(&t.to_ascii_lowercase().as_str())
        })
        .collect();
    let first = named
        .first()
        .cloned()
        .or_else(|| host_ports(line).into_iter().next())?;
    if !has_port(&first)
        && let Some(addr) = named
            .iter()
            .skip(1)
            .find(|t| has_port(t) && !t.starts_with(first.as_str()))
    {
        return Some(format!("{first} ({addr})"));
    }
    Some(first)
}

/// Source files a stack frame names (`main.go:42`, `app.py:123`): a place in code, not an address.
const SOURCE_EXTENSIONS: &[&str] = &[
    "go", "py", "js", "mjs", "cjs", "ts", "java", "kt", "scala", "rb", "rs", "cs", "php", "c",
    "cc", "cpp", "h", "hpp", "swift", "ex", "exs", "erl", "clj", "groovy", "lua", "pl", "sh",
];

/// The `host:port` addresses a line names, without stack frames: a module spec's tail
/// (`node:dns:71` is not `dns:71`), a source file's line (`app.py:123`), a `line:column` pair.
fn host_ports(line: &str) -> Vec<String> {
    let Some(re) = HOST_PORT.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(line)
        .filter_map(|c| c.get(1))
        .filter(|m| {
            let before = line[..m.start()].chars().next_back();
            let after = line[m.end()..].chars().next();
            let host = m
                .as_str()
                .rsplit_once(':')
                .map(|(h, _)| h)
                .unwrap_or_default();
            let ext = host.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
            // `node:dns:71`: the tail of a module spec (a URL's `://` is not one).
            let module_tail = before == Some(':') && !line[..m.start()].ends_with("://");
            // `ipv4:10.96.8.190:3550` (gRPC's address form): the scheme and the first octet.
            let octet = after == Some('.')
                && line[m.end() + 1..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit());
            !module_tail
                && !octet
                && !matches!(after, Some(':'))
                && !ext.is_some_and(|e| SOURCE_EXTENSIONS.contains(&e.as_str()))
        })
        .map(|m| m.as_str().trim_end_matches(['.', ',']).to_string())
        .collect()
}

/// One signature's hits in a set of lines.
#[derive(Clone, Debug)]
pub(crate) struct Hits {
    pub sig: Sig,
    pub count: usize,
    pub example: String,
    pub targets: Vec<String>,
    /// Indexes (in the scanned lines) of the lines of this signature.
    pub lines: Vec<usize>,
    /// Where the lines came from (app, service, container or pod label), to group services failing alike.
    pub sources: Vec<String>,
}

/// Counts each signature over the lines, most frequent first.
pub(crate) fn scan<'a>(lines: impl IntoIterator<Item = &'a LogLine>) -> Vec<Hits> {
    let mut hits: Vec<Hits> = Vec::new();
    // A Python traceback states its exception on the first unindented line after its frames:
    // that line, not the "Traceback (most recent call last):" header, is the one to quote.
    let mut in_traceback = false;
    // The lines of the record being read, its head first, for continuations' peers.
    let mut record: Vec<&str> = Vec::new();
    // The configuration key last named, and on which line: a report that goes on to state the
    // value it refused on an indented `Value:` line (Spring Boot's failure analysis) gives it.
    let mut last_key: Option<(usize, usize)> = None;
    // A store a line reports at its memory limit (`redis db:6379 used_memory=6G maxmemory=6G`):
    // the peer of writes refused for it that name none.
    let mut store: Option<String> = None;
    for (i, l) in lines.into_iter().enumerate() {
        if store.is_none() && l.line.contains("maxmemory") {
            store = HOST_PORT
                .as_ref()
                .and_then(|re| re.captures(&l.line))
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string());
        }
        if let Some((slot, at)) = last_key
            && i <= at + 6
            && let Some(v) = l
                .line
                .strip_prefix(char::is_whitespace)
                .and_then(|rest| rest.trim_start().strip_prefix("Value:").map(str::trim))
            && !v.is_empty()
            && let Some(key) = hits.get_mut(slot).and_then(|h| h.targets.last_mut())
            && !key.contains(" = ")
        {
            *key = format!("{key} = {}", short(v));
            last_key = None;
        }
        if !continuation(&l.line) {
            record.clear();
        }
        if record.len() < 8 {
            record.push(l.line.as_str());
        }
        let text = l.line.trim_end();
        if text
            .trim_start()
            .starts_with("Traceback (most recent call last)")
        {
            in_traceback = true;
        } else if in_traceback && !text.is_empty() && !text.starts_with([' ', '\t']) {
            in_traceback = false;
            if let Some(h) = hits.iter_mut().find(|h| h.sig == Sig::Panic)
                && h.example.starts_with("Traceback")
                && exception_line(text)
            {
                h.example = short(text);
            }
        }
        for sig in classify(&l.line) {
            let slot = match hits.iter_mut().position(|h| h.sig == sig) {
                Some(i) => &mut hits[i],
                None => {
                    hits.push(Hits {
                        sig,
                        count: 0,
                        example: short(&l.line),
                        targets: Vec::new(),
                        lines: Vec::new(),
                        sources: Vec::new(),
                    });
                    let last = hits.len() - 1;
                    &mut hits[last]
                }
            };
            slot.count += 1;
            slot.lines.push(i);
            if let Some(src) = [
                "app",
                "service",
                "app_kubernetes_io_name",
                "container",
                "pod",
            ]
            .iter()
            .find_map(|k| l.labels.get(*k))
                && !slot.sources.contains(src)
            {
                slot.sources.push(src.clone());
            }
            // A record that spans lines (an indented or `|`-prefixed continuation) names its
            // peer on an earlier line of the same record.
            let target = detail_of(sig, &l.line).or_else(|| {
                continuation(&l.line)
                    .then(|| record.iter().rev().find_map(|prev| detail_of(sig, prev)))
                    .flatten()
            });
            // A peer named once with its port and once without is one peer: keep the port.
            let target = target.filter(|t| {
                match slot.targets.iter().position(|k| {
                    k == t
                        || k.starts_with(&format!("{t} = "))
                        || k.starts_with(&format!("{t}:"))
                        || t.starts_with(&format!("{k}:"))
                }) {
                    Some(i) => {
                        if t.starts_with(&format!("{}:", slot.targets[i])) {
                            slot.targets[i] = t.clone();
                        }
                        false
                    }
                    None => true,
                }
            });
            if let Some(t) = target {
                slot.targets.push(t);
                if sig == Sig::Config {
                    last_key = hits
                        .iter()
                        .position(|h| h.sig == Sig::Config)
                        .map(|h| (h, i));
                }
            }
        }
    }
    if let Some(store) = store {
        for h in hits
            .iter_mut()
            .filter(|h| h.sig == Sig::StoreFull && h.targets.is_empty())
        {
            h.targets.push(store.clone());
        }
    }
    hits.sort_by(|a, b| b.count.cmp(&a.count).then(a.sig.cmp(&b.sig)));
    hits
}

/// The workload (not the subject) running the software a client's line speaks, and that
/// software, when exactly one does.
fn speaking(ctx: &Ctx, line: &str) -> Option<(String, &'static str)> {
    let pods = ctx.pods();
    let mut found: Vec<(String, &'static str)> = Vec::new();
    for p in &pods {
        let Some((_, name)) = ctx.workload_of(p) else {
            continue;
        };
        if ctx.subject.has_pod(p) || found.iter().any(|(n, _)| *n == name) {
            continue;
        }
        if let Some(software) = super::dependencies::shared_protocol(line, &name, &[*p]) {
            found.push((name, software));
        }
    }
    // Its pods unlisted, the lines read from it still carry its name (a Loki stream's `app`).
    if found.is_empty() {
        let home = ctx.subject.namespace.as_deref().unwrap_or_default();
        for l in ctx.obs.pod_logs.iter().chain(&ctx.obs.logs) {
            let Some(app) = l.labels.get("app").or_else(|| l.labels.get("container")) else {
                continue;
            };
            let elsewhere = l.labels.get("namespace").is_some_and(|n| n != home);
            if elsewhere
                && !found.iter().any(|(n, _)| n == app)
                && let Some(software) = super::dependencies::shared_protocol(line, app, &[])
            {
                found.push((app.clone(), software));
            }
        }
    }
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `ZeroDivisionError: division by zero`, `requests.exceptions.HTTPError: 503`, `KeyboardInterrupt`:
/// a dotted name ending the way exception classes do, then its message.
fn exception_line(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or_default().trim();
    !name.is_empty()
        && !name.contains(' ')
        && [
            "Error",
            "Exception",
            "Exit",
            "Interrupt",
            "Warning",
            "Failure",
        ]
        .iter()
        .any(|end| name.ends_with(end))
}

/// Keys of a structured log line that say when, where and how loud, not what happened.
const BOOKKEEPING: &[&str] = &[
    "level",
    "lvl",
    "severity",
    "time",
    "ts",
    "timestamp",
    "@timestamp",
    "pid",
    "hostname",
    "caller",
    "logger",
    "logger_name",
    "thread",
    "thread_name",
    "v",
    "@version",
    "source",
];

/// A JSON log line as its `key=value` leaves, without the bookkeeping keys: what it says fits a
/// quote where its envelope would have filled it.
fn json_gist(s: &str) -> Option<String> {
    fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                // The message first, the way the line's author meant it to be read.
                let mut keys: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                keys.sort_by_key(|(k, _)| match k.as_str() {
                    "msg" | "message" => 0,
                    "error" | "err" => 1,
                    _ => 2,
                });
                for (k, v) in keys {
                    if prefix.is_empty() && BOOKKEEPING.contains(&k.to_ascii_lowercase().as_str()) {
                        continue;
                    }
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    leaves(&key, v, out);
                }
            }
            serde_json::Value::String(t) if t.contains(' ') => {
                out.push(format!("{prefix}=\"{t}\""))
            }
            serde_json::Value::String(t) => out.push(format!("{prefix}={t}")),
            serde_json::Value::Null => {}
            other => out.push(format!("{prefix}={other}")),
        }
    }
    if !s.starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(s).ok()?;
    let mut out = Vec::new();
    leaves("", &value, &mut out);
    (!out.is_empty()).then(|| out.join(" "))
}

pub(crate) fn short(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 200 {
        return s.to_string();
    }
    // A long JSON line is quoted by what it says, its envelope left out.
    let gist = json_gist(s);
    let s = gist.as_deref().unwrap_or(s);
    let n = s.chars().count();
    if n <= 200 {
        return s.to_string();
    }
    // An error chain ("pull: resolve: authorize: 401 Unauthorized") ends on its deepest cause:
    // keep its head and its last link, cut the middle.
    if let Some((_, last)) = s.rsplit_once(": ") {
        let tail = last.trim();
        let len = tail.chars().count();
        if (2..=90).contains(&len) {
            if n <= 250 {
                return s.to_string();
            }
            let head: String = s.chars().take(250 - len - 5).collect();
            return format!("{head} ... {tail}");
        }
    }
    // The words that make the line a known failure, when they lie past the cut: keep the head
    // and the window around the deepest of them (a chain ends on its cause), so the quote keeps
    // its decisive detail.
    let at = PATTERNS
        .iter()
        .filter_map(|(_, re)| re.find(s))
        .max_by_key(|m| m.start());
    if let Some(m) = at.filter(|m| s[..m.start()].chars().count() > 150) {
        let boundary = |mut i: usize| {
            while i > 0 && !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let from = boundary(m.start().saturating_sub(50));
        let to = boundary((m.end() + 110).min(s.len()));
        let head: String = s.chars().take(90).collect();
        let tail = if to < s.len() { "..." } else { "" };
        return format!("{head} ... {}{tail}", &s[from..to]);
    }
    let cut: String = s.chars().take(197).collect();
    format!("{cut}...")
}

/// Log lines that concern the alert's scope: a pod in scope, or any line when its source is unlabelled.
pub(crate) fn scoped_lines<'a>(ctx: &Ctx<'a>) -> Vec<&'a LogLine> {
    // A line from another namespace than the subject's is another application's, even when
    // its pod was never listed.
    let home = ctx
        .subject
        .namespace
        .as_deref()
        .filter(|_| ctx.subject.resolved);
    let out_of_scope = |l: &LogLine| {
        let elsewhere = match (home, l.labels.get("namespace")) {
            (Some(home), Some(ns)) => !crate::reason::subject::same_ns(home, ns),
            _ => false,
        };
        elsewhere
            || l.labels
                .get("pod")
                .and_then(|name| ctx.pod_named(name))
                .is_some_and(|p| !ctx.pod_in_scope(p) || p.deleting)
    };
    ctx.obs
        .pod_logs
        .iter()
        .chain(ctx.obs.logs.iter())
        .filter(|l| !out_of_scope(l))
        .collect()
}

/// Lines from one pod's own logs (container logs labelled with it, or Loki streams naming it).
pub(crate) fn pod_lines<'a>(ctx: &Ctx<'a>, pod: &str) -> Vec<&'a LogLine> {
    let unlabelled = ctx
        .obs
        .pod_logs
        .iter()
        .all(|l| !l.labels.contains_key("pod"));
    let single = ctx.focus_pods.len() <= 1 && ctx.focus_pods.first().is_none_or(|p| p == pod);
    ctx.obs
        .pod_logs
        .iter()
        .filter(|l| {
            l.labels
                .get("pod")
                .map(|p| p == pod)
                .unwrap_or(unlabelled && single)
        })
        .chain(
            ctx.obs
                .logs
                .iter()
                .filter(|l| l.labels.values().any(|v| v == pod)),
        )
        .collect()
}

/// The subject's latest release (a rollout, deploy, commit or pull request; configuration is
/// judged apart) within the hour before `at`, with how long before it came.
fn release_before<'c>(
    ctx: &'c Ctx,
    at: DateTime<Utc>,
    subject: &str,
) -> Option<(&'c crate::model::Change, f64)> {
    ctx.changes
        .iter()
        .filter(|c| c.kind != crate::model::ChangeKind::Config)
        .filter(|c| {
            c.target == subject
                || c.target.ends_with(&format!("/{subject}"))
                || crate::reason::subject::mentions(&c.title, subject)
        })
        .filter_map(|c| Some((c, (at - c.at?).num_seconds() as f64)))
        .filter(|(_, lead)| (-120.0..=3600.0).contains(lead))
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
}

/// What a signature says about a failure: its category and the words that quote it.
pub(crate) fn mechanism(h: &Hits) -> (Category, String) {
    (
        h.sig.category(),
        format!("its logs show {} (\"{}\")", h.sig.label(), h.example),
    )
}

/// Signature and error-burst findings over the scoped logs.
pub(crate) fn signatures(ctx: &Ctx) -> Vec<Signal> {
    let lines = scoped_lines(ctx);
    if lines.is_empty() {
        return Vec::new();
    }
    let evidence = ctx.ev(&["kubernetes/pod_logs", "logs"]);
    let scope = ctx.scope_name("the service");
    let mut out = Vec::new();
    let onset = onset(ctx);
    let clusters = templates::cluster(&lines);
    let restarted = ctx
        .pods()
        .iter()
        .any(|p| ctx.pod_in_scope(p) && p.restarts() > 0);
    let hits = ctx.subject_hits();
    // A stack trace whose every line also states a deeper failure (the OutOfMemoryError it
    // reports, a refused connection) is that failure's report, not a defect of its own.
    // A Python traceback's header states nothing: the exception line closing it does.
    let stated = |i: usize| -> Option<&str> {
        let line = lines.get(i)?.line.as_str();
        if !line
            .trim_start()
            .starts_with("Traceback (most recent call last)")
        {
            return Some(line);
        }
        lines[i + 1..]
            .iter()
            .map(|l| l.line.as_str())
            .find(|l| !l.is_empty() && !l.starts_with([' ', '\t']))
    };
    let restates_deeper = |h: &Hits| {
        h.lines.iter().all(|&i| {
            stated(i).is_some_and(|l| classify(l).into_iter().any(|s| depth(s) < depth(h.sig)))
        })
    };
    // With no subject named, or a whole application named, lines that all come from one
    // workload's pods speak for it.
    let spread = !ctx.subject.resolved || ctx.subject.application.is_some();
    let who: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            if !spread {
                return Vec::new();
            }
            let mut who: Vec<String> = h
                .lines
                .iter()
                .filter_map(|&i| line_owner(ctx, lines.get(i)?))
                .collect();
            who.sort();
            who.dedup();
            who
        })
        .collect();
    // Across an application's workloads, calls that time out or are refused are what one
    // service failing on its own (out of disk, memory or its settings) looks like to its
    // callers: that failure, logged by a workload of its own, explains them.
    let own_failure_elsewhere = |k: usize| -> Option<Category> {
        if !spread || !TRANSPORT.contains(&hits[k].sig) {
            return None;
        }
        hits.iter()
            .zip(&who)
            .filter(|(h, w)| OWN_STATE.contains(&h.sig) && w.len() == 1 && !who[k].contains(&w[0]))
            .map(|(h, _)| h.sig.category())
            .next()
    };
    for (k, h) in hits.iter().enumerate() {
        let (scope, server) = match who[k].as_slice() {
            [one] if spread => (one.clone(), None),
            many if spread && many.len() >= 2 => caller_and_server(ctx, &lines, h, many)
                .map_or((scope.clone(), None), |(c, s)| (c, Some(s))),
            _ => (scope.clone(), None),
        };
        let dep = match (h.sig, h.targets.as_slice()) {
            _ if server.is_some() => format!(" ({})", server.as_deref().unwrap_or_default()),
            // A store that refuses naming no address: the workload that runs the software its
            // client speaks (AMQP: the one running RabbitMQ).
            (Sig::StoreFull, []) => speaking(ctx, &h.example)
                .map(|(name, software)| format!(" ({name}, running {software})"))
                .unwrap_or_default(),
            (_, []) => String::new(),
            (Sig::Config, t) if MISSING.as_ref().is_some_and(|re| re.is_match(&h.example)) => {
                format!(" (missing {})", list_names(t, 3))
            }
            (Sig::Config, t) => format!(" (at {})", list_names(t, 3)),
            (_, t) => format!(" (to {})", list_names(t, 3)),
        };
        let shift = onset.map(|at| templates::shift(&of_lines(&h.lines), &lines, at));
        let when = shift_text(shift, onset);
        // Several workloads failing the same way on the same dependency: one cause, named first.
        let services: Vec<&String> = h
            .sources
            .iter()
            .filter(|s| ctx.obs.deployments.iter().any(|d| &d.name == *s))
            .collect();
        let (cause, (basis, links)) = match h.sig {
            Sig::Dns
            | Sig::ConnRefused
            | Sig::Unreachable
            | Sig::Incompatible
            | Sig::Reset
            | Sig::Timeout
                if h.count >= 2 && services.len() >= 2 =>
            {
                (
                    Some(format!(
                        "One dependency{dep} fails {} services at once ({}): {} {} in their logs, e.g. \"{}\"; the services are symptoms, the unreachable dependency is the cause",
                        services.len(),
                        list_names(&services, 5),
                        h.count,
                        h.sig.label(),
                        h.example
                    )),
                    // Each further service failing the same way is one more link.
                    (Basis::Logged, (services.len().min(4) - 1) as u8),
                )
            }
            Sig::Incompatible => (
                Some(format!(
                    "{scope} and a dependency{dep} do not speak the same version: {} {} in its logs, e.g. \"{}\"; the dependency (or the client library {scope} talks to it with) is what changed, not {scope}'s own logic",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Dns if h.count >= 2 => (
                Some(format!(
                    "{scope}'s lookups{dep} fail at the resolver: {} {} in its logs, e.g. \"{}\"; the cluster's DNS (or the network path to it) does not answer, so the names exist but cannot be resolved",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::ConnRefused | Sig::Unreachable | Sig::Reset | Sig::Timeout if h.count >= 2 => {
                (
                    Some(format!(
                        "{scope} cannot reach a dependency{dep}: {} {} in its logs, e.g. \"{}\"; requests fail because the downstream service is unreachable, not because of {scope}'s own code",
                        h.count,
                        h.sig.label(),
                        h.example
                    )),
                    // Repeated lines are more than a one-off.
                    if h.count >= 3 {
                        (Basis::Logged, (h.count.min(5) - 3) as u8)
                    } else {
                        (Basis::Observed, h.count as u8)
                    },
                )
            }
            Sig::ClockSkew => (
                Some(format!(
                    "{scope}'s clock disagrees with its peers': {} {} in its logs, e.g. \"{}\"{}; a token is rejected as issued in the future, so the time of the node it runs on is off (NTP/chrony), not the credentials",
                    h.count,
                    h.sig.label(),
                    h.example,
                    skewed_nodes(ctx, &lines, h)
                )),
                (Basis::Logged, 1),
            ),
            Sig::Leak => (
                Some(format!(
                    "{scope} leaks what it takes: {} {} in its logs, e.g. \"{}\"; connections or memory its code takes are never given back, so the pool or heap runs dry",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Upstream5xx if h.count >= 2 => (
                Some(format!(
                    "{scope}'s calls to a dependency{dep} fail with server errors: {} {} in its logs, e.g. \"{}\"; the dependency answers 5xx, so the failure is the dependency's, not {scope}'s own code",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Syntax => (
                Some(format!(
                    "{scope}'s own code does not parse: {} {} in its logs, e.g. \"{}\"",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 0),
            ),
            Sig::StoreFull => (
                Some(format!(
                    "{scope}'s writes are refused by a store at its memory limit{dep}: {} {} in its logs, e.g. \"{}\"; the store is full and may evict nothing, so writes fail until it is given memory, allowed to evict, or holds less",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Oom => (
                Some(format!(
                    "{scope} runs out of memory: {} {} in its logs, e.g. \"{}\"; the process needs more memory than its heap or its container's limit allows",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Panic if restates_deeper(h) => (None, (Basis::Context, 1)),
            Sig::Panic => (
                Some(format!(
                    "{scope} {} on a code defect: {} {} in its logs, e.g. \"{}\"",
                    if restarted {
                        "crashes"
                    } else {
                        "fails requests"
                    },
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Timed, 1),
            ),
            Sig::NoSuchName => (
                Some(format!(
                    "{scope} is configured with a host name that resolves nowhere{dep}: {} {} in its logs, e.g. \"{}\"; no such name exists in DNS, so the setting that names it is wrong (or the service it meant was never created)",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Measured, 0),
            ),
            Sig::Cert if h.count >= 2 => (
                Some(format!(
                    "{scope}'s TLS connections fail on a certificate{dep}: {} {} in its logs, e.g. \"{}\"; the certificate has expired or is not trusted and must be renewed or its CA configured",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Pool if h.count >= 2 => (
                Some(format!(
                    "{scope} runs out of database/client connections{dep}: {} {} in its logs, e.g. \"{}\"; requests wait for or are refused a connection from the pool",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 0),
            ),
            Sig::DiskFull => (
                Some(format!(
                    "{scope} has run out of disk space: {} {} in its logs, e.g. \"{}\"; writes fail until space is freed or the volume is grown",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::FileDescriptors if h.count >= 2 => (
                Some(format!(
                    "{scope} has reached its open-file limit: {} {} in its logs, e.g. \"{}\"; new connections and files are refused until descriptors are released or the limit is raised",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Timed, 1),
            ),
            Sig::Throttled if h.count >= 2 => (
                Some(format!(
                    "{scope}'s calls to a dependency{dep} are throttled: {} {} in its logs, e.g. \"{}\"; the dependency refuses the rate of calls it is sent, so they fail until the rate drops or its limit is raised",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::ReadOnly => (
                Some(format!(
                    "{scope}'s writes are refused by a read-only database{dep}: {} {} in its logs, e.g. \"{}\"; the database it writes to no longer accepts writes (a failover left it holding a replica, or it points at a reader)",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Logged, 1),
            ),
            Sig::Config => (
                Some(format!(
                    "{scope} is misconfigured{dep}: {} {} in its logs, e.g. \"{}\"",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Observed, 1),
            ),
            Sig::Auth if h.count >= 2 => (
                Some(format!(
                    "{scope} is refused by a dependency{dep} on its credentials, with {} {} in its logs, e.g. \"{}\"; the credentials it uses are wrong, expired or rotated",
                    h.count,
                    h.sig.label(),
                    h.example
                )),
                (Basis::Timed, 1),
            ),
            _ => (None, (Basis::Context, 1)),
        };
        // A configuration-shaped failure right after the workload's configuration changed: that
        // change is the first thing to look at.
        // Without an alert's start, the first of these lines is when the failure began.
        let first_line = h.lines.iter().filter_map(|&i| lines.get(i)?.at).min();
        let change = match (h.sig, onset.or(first_line)) {
            (Sig::Config | Sig::Auth | Sig::Cert | Sig::ReadOnly, Some(at)) => {
                crate::reason::config::before(ctx, at).into_iter().next()
            }
            _ => None,
        };
        let cause = match &change {
            Some((c, lead)) => {
                cause.map(|text| format!("{text}; {}", crate::reason::config::describe(c, *lead)))
            }
            None => cause,
        };
        // Writes refused by a reader right after the configuration changed: the change pointed
        // the workload at it. With no change, the database itself moved (a failover).
        let category = match (h.sig, &change) {
            (Sig::ReadOnly, Some(_)) => Category::ConfigurationError,
            _ => h.sig.category(),
        };
        // A code defect that is new since the onset, shortly after the subject's own release:
        // that release is the regression to roll back.
        let cause = match (h.sig.category(), shift, onset) {
            (
                Category::CodeDefect,
                Some(Shift::New { .. } | Shift::Jump { .. } | Shift::Lead { .. }),
                Some(at),
            ) => match release_before(ctx, at, &scope) {
                Some((c, lead)) => cause.map(|text| {
                    format!(
                        "{text}; they began {} {} {} \"{}\" on {} (at {}), the regression to roll back",
                        crate::reason::metrics::lag_text(lead),
                        c.kind.noun(),
                        c.id,
                        c.title,
                        c.target,
                        c.at.map(|t| t.format("%H:%M UTC").to_string())
                            .unwrap_or_default()
                    )
                }),
                None => cause,
            },
            _ => cause,
        };
        // Errors that were there at the same rate before the onset did not start the incident;
        // a class that is new since the onset (or jumped) did.
        // New since the onset: its start lines up with the symptom's, one more link. Steady
        // before it: background, seen but not what changed, two links fewer.
        let (cause, (basis, links)) = match shift {
            Some(Shift::New { .. } | Shift::Jump { .. } | Shift::Lead { .. }) => {
                (cause.map(|c| format!("{c}; {when}")), (basis, links + 1))
            }
            Some(Shift::Steady) => (
                cause.map(|c| format!("{c} ({when}, so it may be background)")),
                (Basis::Observed, (basis.links() + links).saturating_sub(3)),
            ),
            _ => (cause, (basis, links)),
        };
        let template = clusters
            .iter()
            .filter(|t| t.lines.iter().any(|i| h.lines.contains(i)))
            .max_by_key(|t| t.lines.iter().filter(|i| h.lines.contains(i)).count())
            .map(|t| t.text())
            .unwrap_or_default();
        let when = if when.is_empty() {
            String::new()
        } else {
            format!(", {when}")
        };
        let times = || {
            h.lines
                .iter()
                .filter_map(|&i| lines.get(i).and_then(|l| l.at))
        };
        out.push(Signal {
            analyzer: "log_signature",
            summary: format!("{} {} in logs{dep}{when}", h.count, h.sig.label()),
            detail: format!("template: {template}; example: {}", h.example),
            category,
            // Lookups that time out are what a resolver down looks like from its clients.
            symptom_of: own_failure_elsewhere(k)
                .or((h.sig == Sig::Dns).then_some(Category::Infrastructure))
                // Timeouts that name no peer are what a saturated workload looks like from
                // inside: a capacity reached beside them explains them.
                .or((h.sig == Sig::Timeout && h.targets.is_empty())
                    .then_some(Category::ResourceExhaustion)),
            basis,
            links,
            since: times().min(),
            until: times().max(),
            evidence: evidence.clone(),
            cause,
            ..Signal::default()
        });
    }
    out.extend(new_templates(&lines, &clusters, onset, &evidence));
    let errors: Vec<&&LogLine> = lines.iter().filter(|l| is_error(l)).collect();
    if errors.len() >= 5 {
        let first = errors.iter().filter_map(|l| l.at).min();
        let last = errors.iter().filter_map(|l| l.at).max();
        let span = match (first, last) {
            (Some(a), Some(b)) => {
                format!(" between {} and {}", a.format("%H:%M"), b.format("%H:%M"))
            }
            _ => String::new(),
        };
        out.push(Signal {
            analyzer: "log_error_burst",
            summary: format!(
                "error burst: {} error lines{span} in {scope} logs",
                errors.len()
            ),
            detail: format!("e.g. \"{}\"", short(&errors[0].line)),
            category: Category::CodeDefect,
            basis: Basis::Context,
            links: 1,
            since: first,
            until: last,
            evidence: evidence.clone(),
            ..Signal::default()
        });
    }
    out
}

/// When the incident started: the alert's start, when it has one that the logs can be compared
/// to, or the breach of its own series when that came first (the alert waits out its `for:`).
fn onset(ctx: &Ctx) -> Option<DateTime<Utc>> {
    let fired = ctx
        .obs
        .alert
        .as_ref()
        .and_then(|a| a.starts_at)
        .filter(|t| t.timestamp() > 0 && *t <= ctx.obs.now)?;
    Some(
        crate::reason::steps::symptom::series_onset(ctx)
            .filter(|t| *t < fired)
            .unwrap_or(fired),
    )
}

/// Error-level log templates of the alert's subject that are new since the onset or jumped at
/// it: the failure is still speaking in the logs, so the subject is not all clear.
pub(crate) fn errors_since_onset(ctx: &Ctx) -> usize {
    let Some(at) = onset(ctx) else {
        return 0;
    };
    let lines = scoped_lines(ctx);
    templates::cluster(&lines)
        .iter()
        .filter(|t| {
            t.lines
                .first()
                .and_then(|i| lines.get(*i))
                .is_some_and(|l| is_error(l))
        })
        .filter(|t| {
            matches!(
                templates::shift(t, &lines, at),
                Shift::New { .. } | Shift::Jump { .. }
            )
        })
        .map(|t| t.count())
        .sum()
}

/// A pseudo-template of some lines, to compare their counts across the onset.
fn of_lines(lines: &[usize]) -> Template {
    Template {
        tokens: Vec::new(),
        lines: lines.to_vec(),
        first: None,
        last: None,
    }
}

fn shift_text(shift: Option<Shift>, onset: Option<DateTime<Utc>>) -> String {
    let at = onset
        .map(|t| t.format("%H:%M").to_string())
        .unwrap_or_default();
    match shift {
        Some(Shift::New { after }) => {
            format!("new since the onset at {at} (0 before, {after} after)")
        }
        Some(Shift::Jump { before, after }) => {
            format!("jumped at the onset {at} ({before} before, {after} after)")
        }
        Some(Shift::Lead { before, minutes }) => format!(
            "set {minutes} min before the onset at {at} ({before} line(s)) and not logged since"
        ),
        Some(Shift::Steady) => format!("already logged before the onset at {at} at a similar rate"),
        _ => String::new(),
    }
}

/// Error-level templates no class explains that appeared or jumped at the onset: context that
/// points at where to look, never a cause on their own.
fn new_templates(
    lines: &[&LogLine],
    clusters: &[Template],
    onset: Option<DateTime<Utc>>,
    evidence: &[crate::model::EvidenceId],
) -> Vec<Signal> {
    let Some(at) = onset else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in clusters {
        let Some(first) = t.lines.first().and_then(|i| lines.get(*i)) else {
            continue;
        };
        if !is_error(first) || !classify(&first.line).is_empty() {
            continue;
        }
        let shift = templates::shift(t, lines, at);
        if !matches!(shift, Shift::New { .. } | Shift::Jump { .. }) {
            continue;
        }
        out.push(Signal {
            analyzer: "log_template",
            summary: format!(
                "log template {}: \"{}\"",
                shift_text(Some(shift), onset),
                short(&t.text())
            ),
            detail: format!("e.g. \"{}\"", short(&first.line)),
            category: Category::Unknown,
            basis: Basis::Context,
            evidence: evidence.to_vec(),
            ..Signal::default()
        });
        if out.len() >= 3 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_signature_pattern_compiles() {
        // A pattern the regex crate refuses would be dropped silently.
        assert_eq!(PATTERNS.len(), 23);
        assert_eq!(
            classify("FATAL: unsupported protocol version 3.2 (server requires 3.0)"),
            vec![Sig::Incompatible]
        );
        assert_eq!(
            classify("getaddrinfo EAI_AGAIN db.shop.svc"),
            vec![Sig::Dns]
        );
        assert_eq!(
            classify("curl: (6) Could not resolve host: api.example.invalid"),
            vec![Sig::NoSuchName]
        );
        assert!(classify(r#"pods is forbidden: User "system:serviceaccount:shop:runner" cannot list resource "pods""#).contains(&Sig::Auth));
    }

    #[test]
    fn stack_frames_are_not_addresses() {
        assert_eq!(
            target(
                "Error: getaddrinfo ENOTFOUND payments-db.shop.svc\n    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:71:26)"
            ),
            Some("payments-db.shop.svc".to_string())
        );
        assert_eq!(
            target("    at GetAddrInfoReqWrap.onlookup (node:dns:71:26)"),
            None
        );
        assert_eq!(target("panic at main.go:42 while serving"), None);
        assert_eq!(
            target("could not reach postgres://app@orders-db.shop.svc:5432/orders"),
            Some("orders-db.shop.svc:5432".to_string())
        );
        assert_eq!(
            target("request failed: inventory-api:9090 answered 503"),
            Some("inventory-api:9090".to_string())
        );
        assert_eq!(
            target(
                r#"psycopg2.OperationalError: connection to server at "accounts-pg.accounts.svc" (10.96.88.14), port 5432 failed: Connection timed out"#
            ),
            Some("accounts-pg.accounts.svc:5432".to_string())
        );
    }

    use super::*;

    #[test]
    fn a_long_error_chain_keeps_its_deepest_cause() {
        let chain = format!(
            "Failed to pull image \"ghcr.io/acme/app:2.4.0\": {}: failed to authorize: 401 Unauthorized",
            "failed to resolve reference \"ghcr.io/acme/app:2.4.0\"".repeat(6)
        );
        let s = short(&chain);
        assert!(s.starts_with("Failed to pull image"), "{s}");
        assert!(s.ends_with("401 Unauthorized"), "{s}");
        assert!(s.chars().count() <= 250, "{s}");
        let plain = "x".repeat(400);
        assert_eq!(short(&plain).chars().count(), 200);
    }

    #[test]
    fn a_traceback_is_quoted_by_its_exception() {
        let lines: Vec<LogLine> = [
            "Traceback (most recent call last):",
            "  File \"/app/main.py\", line 9, in <module>",
            "    total = a / b",
            "ZeroDivisionError: division by zero",
        ]
        .iter()
        .map(|l| LogLine {
            line: (*l).to_string(),
            ..LogLine::default()
        })
        .collect();
        let hits = scan(lines.iter());
        let panic = hits.iter().find(|h| h.sig == Sig::Panic).expect("a panic");
        assert_eq!(panic.example, "ZeroDivisionError: division by zero");
    }

    #[test]
    fn what_the_pod_spec_gets_wrong_reads_as_configuration() {
        for line in [
            "flag provided but not defined: -listen-port",
            "open /var/cache/thumbs/index.db: read-only file system",
            "nginx: [emerg] open() \"/var/run/nginx.pid\" failed (13: Permission denied)",
            "exec /usr/local/bin/sweeper: exec format error",
            "error: unrecognized arguments: --workers=4",
            r#"{"level":"fatal","msg":"loading config","file":"/etc/app/config.yaml","error":"yaml: line 42: mapping values are not allowed in this context"}"#,
            "Error: failed to parse config file /etc/app/settings.toml: toml: line 7: expected key",
            "level=fatal msg=\"could not load config\" err=\"yaml: unmarshal errors: cannot unmarshal !!str into int\"",
        ] {
            assert!(classify(line).contains(&Sig::Config), "{line}");
        }
        for line in [
            "(Unauthorized) not authorized on geo-db to execute command { find: \"geo\" }",
            "MongoError: command find requires authentication",
            "NOAUTH Authentication required.",
        ] {
            assert!(classify(line).contains(&Sig::Auth), "{line}");
        }
    }

    #[test]
    fn a_driver_too_old_for_its_server_is_an_incompatibility() {
        for line in [
            "MongoServerSelectionError: Server at db:27017 reports maximum wire version 21, but this version of the Node.js Driver requires at most 13",
            "org.postgresql.util.PSQLException: Connection to pg:5432 refused.",
        ] {
            assert!(!classify(line).is_empty(), "{line}");
        }
        assert!(classify(
            "Server at db:27017 reports maximum wire version 21, but this version of the driver requires at most 13"
        )
        .contains(&Sig::Incompatible));
        assert!(classify("Connection to pg:5432 refused.").contains(&Sig::ConnRefused));
    }
    use crate::reason::Observations;
    use std::collections::BTreeMap;

    fn line(s: &str) -> LogLine {
        LogLine {
            at: None,
            labels: BTreeMap::new(),
            line: s.into(),
        }
    }

    #[test]
    fn classifies_common_signatures() {
        assert_eq!(
            classify("dial tcp: lookup db.internal on 10.0.0.10:53: no such host"),
            vec![Sig::NoSuchName]
        );
        assert_eq!(
            classify("dial tcp 10.0.3.4:5432: connect: connection refused"),
            vec![Sig::ConnRefused]
        );
        assert_eq!(
            classify("upstream request timed out after 30s"),
            vec![Sig::Timeout]
        );
        assert_eq!(
            classify("panic: runtime error: index out of range [3] with length 3"),
            vec![Sig::Panic]
        );
        assert_eq!(
            classify("10.1.2.3 - POST /api/v1/charge 503 12ms"),
            vec![Sig::Http5xx]
        );
        assert_eq!(
            classify("java.lang.OutOfMemoryError: Java heap space"),
            vec![Sig::Oom]
        );
        assert_eq!(
            classify("ERROR: could not extend file \"base/16384/2619\": No space left on device"),
            vec![Sig::DiskFull]
        );
        assert_eq!(
            classify("accept4: too many open files; retrying in 5ms"),
            vec![Sig::FileDescriptors]
        );
        // A handler's exception, caught and answered with a 500, is still a code defect.
        assert_eq!(
            classify(
                "level=error msg=\"panic recovered\" err=\"runtime error: invalid memory address or nil pointer dereference\""
            ),
            vec![Sig::Panic]
        );
        assert_eq!(
            classify("ERROR in app: Exception on /api/v1/quote [POST] KeyError: 'currency'"),
            vec![Sig::Panic]
        );
        // A missing environment variable is configuration.
        assert_eq!(classify("KeyError: 'DATABASE_URL'"), vec![Sig::Config]);
        assert!(classify("disk usage 41% of 100Gi, 59Gi free").is_empty());
        assert!(classify("GET /metrics 200 4ms").is_empty());
        assert!(classify("processed 500 requests, zero errors").is_empty());
    }

    #[test]
    fn names_the_dependency() {
        assert_eq!(
            target("dial tcp postgres.db.svc:5432: connect: connection refused").as_deref(),
            Some("postgres.db.svc:5432")
        );
        // The service by name, then the socket the client dialled: both.
        assert_eq!(
            target("failed to connect to `host=pg-main.shop.svc user=app`: dial error (dial tcp 10.96.4.20:5432: connect: connection refused)").as_deref(),
            Some("pg-main.shop.svc (10.96.4.20:5432)")
        );
        // A name that carries its port already is enough.
        assert_eq!(
            target("host=db.svc:5432 dial tcp 10.0.0.7:5432: connection refused").as_deref(),
            Some("db.svc:5432")
        );
    }

    #[test]
    fn connection_refused_burst_is_a_dependency_failure() {
        let obs = Observations {
            pod_logs: (0..4)
                .map(|i| {
                    line(&format!(
                        "ERROR {i} dial tcp cache.svc:6379: connect: connection refused"
                    ))
                })
                .collect(),
            evidence: BTreeMap::from([(
                "kubernetes/pod_logs".to_string(),
                vec!["ev-3".to_string()],
            )]),
            ..Observations::default()
        };
        let ctx = Ctx::new(&obs);
        let sigs = signatures(&ctx);
        let dep = sigs
            .iter()
            .find(|s| s.cause.is_some())
            .map(|s| (s.category, s.cause.clone(), s.evidence.clone()));
        let Some((category, Some(cause), evidence)) = dep else {
            panic!("no dependency signal: {sigs:?}")
        };
        assert_eq!(category, Category::DependencyFailure);
        assert!(cause.contains("cache.svc:6379"), "{cause}");
        assert_eq!(evidence, vec!["ev-3".to_string()]);
    }

    #[test]
    fn a_full_disk_is_resource_exhaustion() {
        let obs = Observations {
            pod_logs: vec![
                line("INFO checkpoint starting"),
                line("ERROR write /data/wal/000123.log: no space left on device"),
            ],
            ..Observations::default()
        };
        let sigs = signatures(&Ctx::new(&obs));
        let Some(s) = sigs.iter().find(|s| s.cause.is_some()) else {
            panic!("no disk signal: {sigs:?}")
        };
        assert_eq!(s.category, Category::ResourceExhaustion);
        let cause = s.cause.as_deref().unwrap_or_default();
        assert!(cause.contains("no space left on device"), "{cause}");
    }

    #[test]
    fn what_a_peer_answered_is_told_apart_from_what_the_process_served() {
        // A 5xx the client received names the peer that failed.
        for l in [
            "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://api.carrier.example/v2/rates",
            "Error: Request failed with status code 502",
            "upstream returned 504 after 30s",
            "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable: 503",
        ] {
            assert!(classify(l).contains(&Sig::Upstream5xx), "{l}");
        }
        assert_eq!(
            detail_of(
                Sig::Upstream5xx,
                "503 Server Error: Service Unavailable for url: https://api.carrier.example/v2/rates"
            )
            .as_deref(),
            Some("api.carrier.example")
        );
        // A 5xx the process served is its own.
        let served = classify("10.1.1.40 - \"POST /v1/quote HTTP/1.1\" 500 12ms");
        assert!(
            served.contains(&Sig::Http5xx) && !served.contains(&Sig::Upstream5xx),
            "{served:?}"
        );
        // A traceback that reports a peer's 5xx is that peer's failure, not a defect.
        let obs = Observations {
            pod_logs: [
                "Traceback (most recent call last):",
                "  File \"/app/rates.py\", line 77, in get_rates",
                "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://api.carrier.example/v2/rates",
                "Traceback (most recent call last):",
                "  File \"/app/rates.py\", line 77, in get_rates",
                "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: https://api.carrier.example/v2/rates",
            ]
            .into_iter()
            .map(line)
            .collect(),
            ..Observations::default()
        };
        let sigs = signatures(&Ctx::new(&obs));
        let causes: Vec<(Category, String)> = sigs
            .iter()
            .filter_map(|s| Some((s.category, s.cause.clone()?)))
            .collect();
        assert!(
            causes
                .iter()
                .all(|(c, _)| *c == Category::DependencyFailure)
                && causes
                    .iter()
                    .any(|(_, t)| t.contains("api.carrier.example")),
            "{causes:?}"
        );
    }

    #[test]
    fn tokens_from_the_future_are_clock_skew_and_writes_to_a_replica_are_refused_by_it() {
        for l in [
            "io.jsonwebtoken.PrematureJwtException: JWT must not be accepted before 2026-03-11T14:27:08Z. Current time: 2026-03-11T14:25:40Z, a difference of 88000 milliseconds.",
            "jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)",
        ] {
            assert_eq!(classify(l), vec![Sig::ClockSkew], "{l}");
        }
        assert_eq!(Sig::ClockSkew.category(), Category::Infrastructure);
        for l in [
            "ERROR: cannot execute UPDATE in a read-only transaction",
            "READONLY You can't write against a read only replica.",
            "redis.exceptions.ReadOnlyError: You can't write against a read only replica.",
            "ERROR 1290 (HY000): The MySQL server is running with the --read-only option so it cannot execute this statement",
        ] {
            assert_eq!(classify(l), vec![Sig::ReadOnly], "{l}");
        }
        // The database refuses: without a change pointing the client at it, a failover moved it.
        assert_eq!(Sig::ReadOnly.category(), Category::DependencyFailure);
    }

    #[test]
    fn a_peer_refusing_the_rate_of_calls_is_throttling_not_the_callers_code() {
        for l in [
            "upload failed: An error occurred (SlowDown) when calling the PutObject operation (reached max retries: 4): Please reduce your request rate.",
            "botocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the PutRecord operation: Rate exceeded",
            "stripe.error.RateLimitError: Request rate limit exceeded",
            "POST https://api.partner.example/v1/quotes -> 429 Too Many Requests",
        ] {
            assert!(classify(l).contains(&Sig::Throttled), "{l}");
        }
        // A word that merely contains the code, and a slow request, are not throttling.
        for l in ["slowdown detected in GC pauses", "request took 4.2s (slow)"] {
            assert!(!classify(l).contains(&Sig::Throttled), "{l}");
        }
        assert_eq!(Sig::Throttled.category(), Category::DependencyFailure);
    }

    #[test]
    fn a_reverse_lookup_that_fails_names_no_missing_host() {
        let l = "2026-03-11T14:06:00.402113Z 0 [Warning] [MY-010055] [Server] IP address '10.1.2.31' could not be resolved: Name or service not known";
        assert!(!classify(l).contains(&Sig::NoSuchName), "{l}");
        let l = "getaddrinfo ENOTFOUND orders-db.internal";
        assert_eq!(classify(l), vec![Sig::NoSuchName]);
    }

    #[test]
    fn a_kafka_client_that_cannot_reach_a_broker_names_the_broker() {
        let l = "WARN org.apache.kafka.clients.NetworkClient : [Consumer clientId=c-1, groupId=g] Connection to node 2 (b-2.events.example.net/10.30.12.5:9094) could not be established. Broker may not be available.";
        assert!(classify(l).contains(&Sig::Unreachable), "{l}");
        assert_eq!(target(l).as_deref(), Some("b-2.events.example.net"));
        let l = "Group coordinator b-2.events.example.net:9094 (id: 2147483645 rack: null) is unavailable or invalid due to cause: coordinator unavailable.";
        assert!(classify(l).contains(&Sig::Unreachable), "{l}");
    }

    #[test]
    fn an_envoy_access_line_names_the_upstream_cluster_it_failed_on() {
        let l = r#"[2026-03-16T14:45:07.148Z] "POST /api/inventory/reserve HTTP/1.1" 503 UF,URX upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111} 91 0 2 - "10.164.0.148" "Mozilla/5.0" "b2f57bec" "api.example.com" "-" inventory_svc"#;
        assert_eq!(classify(l), vec![Sig::ConnRefused, Sig::Http5xx]);
        assert_eq!(target(l).as_deref(), Some("inventory-svc"));
        let l = r#"[2026-03-16T14:45:07.148Z] "GET /cart HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "curl" "x" "cart:80" "-" outbound|80||cart.shop.svc.cluster.local"#;
        assert_eq!(target(l).as_deref(), Some("cart.shop.svc.cluster.local"));
    }

    #[test]
    fn a_json_line_is_quoted_by_what_it_says_not_its_envelope() {
        let line = format!(
            r#"{{"level":50,"time":1769107098000,"pid":1,"hostname":"payment-service-ghlkc9h5lz-smqmj","orderId":"ord_{}","msg":"charge failed","err":{{"type":"StripeConnectionError","message":"An error occurred with our connection to Stripe.","detail":"connect ETIMEDOUT 54.187.216.72:443"}}}}"#,
            "7".repeat(40)
        );
        let quote = short(&line);
        assert!(quote.starts_with("msg=\"charge failed\""), "{quote}");
        assert!(quote.contains("connection to Stripe"), "{quote}");
        assert!(quote.contains("ETIMEDOUT 54.187.216.72:443"), "{quote}");
        assert!(!quote.contains("hostname"), "{quote}");
        // A line that is not JSON is quoted as written.
        assert_eq!(short("{not json: at all}"), "{not json: at all}");
    }

    #[test]
    fn a_runtime_refusing_its_own_options_names_the_option_and_its_value() {
        for (l, key) in [
            ("Invalid maximum heap size: -Xmx512", "-Xmx512"),
            (
                "[Consumer clientId=c-1, groupId=g] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages.",
                "max.poll.interval.ms",
            ),
            (
                "Unrecognized VM option 'UseConcMarkSweepGC'",
                "UseConcMarkSweepGC",
            ),
            (
                "bootstrap check failure [1] of [1]: max virtual memory areas vm.max_map_count [65530] is too low, increase to at least [262144]",
                "vm.max_map_count",
            ),
        ] {
            assert_eq!(classify(l), vec![Sig::Config], "{l}");
            assert_eq!(config_key(l).as_deref(), Some(key), "{l}");
        }
        // A word that merely contains an error's name is not that error.
        assert!(
            classify("\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)")
                .is_empty()
        );
        let lines: Vec<LogLine> = [
            "***************************",
            "APPLICATION FAILED TO START",
            "Description:",
            "Failed to bind properties under 'spring.datasource.hikari.maximum-pool-size' to int:",
            "",
            "    Property: spring.datasource.hikari.maximum-pool-size",
            "    Value: \"twenty\"",
            "    Origin: System Environment Property \"SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE\"",
        ]
        .into_iter()
        .map(line)
        .collect();
        let hits = scan(&lines);
        let config = hits.iter().find(|h| h.sig == Sig::Config).expect("config");
        assert_eq!(
            config.targets,
            vec!["spring.datasource.hikari.maximum-pool-size = \"twenty\"".to_string()]
        );
    }

    #[test]
    fn a_record_spanning_lines_names_its_peer_on_its_head() {
        let lines: Vec<LogLine> = [
            "2026-03-11T14:26:40.009Z [ERROR] agent.auth.handler: error authenticating:",
            "  | URL: PUT http://vault.vault.svc:8200/v1/auth/kubernetes/login",
            "  | Code: 403. Errors:",
            "  | * service account name not authorized",
            "2026-03-11T14:26:44.100Z [INFO]  agent.auth.handler: authenticating",
        ]
        .into_iter()
        .map(line)
        .collect();
        let hits = scan(lines.iter());
        let auth = hits.iter().find(|h| h.sig == Sig::Auth).expect("auth hits");
        assert_eq!(auth.targets, vec!["vault.vault.svc:8200".to_string()]);
    }

    #[test]
    fn a_pool_that_leaks_is_the_code_and_a_pool_wait_is_no_network_timeout() {
        let wait = "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=10, active=10, idle=0, waiting=37)";
        assert_eq!(classify(wait), vec![Sig::Pool]);
        assert_eq!(
            classify(
                "ProxyLeakTask: Connection leak detection triggered for PgConnection@4f2a on thread http-nio-8080-exec-3"
            ),
            vec![Sig::Leak]
        );
        assert_eq!(Sig::Leak.category(), Category::CodeDefect);
        assert!(depth(Sig::Leak) < depth(Sig::Pool));
    }

    #[test]
    fn servers_refusing_their_own_settings_or_memory_read_as_such() {
        for l in [
            "2026/03/11 14:31:02 [emerg] 1#1: unknown directive \"proxy_pas\" in /etc/nginx/conf.d/default.conf:14",
            "FATAL:  invalid value for parameter \"shared_buffers\": \"2GBB\"",
            "LOG:  unrecognized configuration parameter \"max_conections\" in file \"/etc/postgresql/postgresql.conf\" line 12",
            "java.lang.RuntimeException: My id 0 not in the peer list",
        ] {
            assert_eq!(classify(l), vec![Sig::Config], "{l}");
        }
        assert_eq!(
            config_key("FATAL:  invalid value for parameter \"shared_buffers\": \"2GBB\"")
                .as_deref(),
            Some("shared_buffers")
        );
        assert_eq!(
            classify(
                "redis.exceptions.ResponseError: OOM command not allowed when used memory > 'maxmemory'."
            ),
            vec![Sig::StoreFull]
        );
        for l in [
            "warn: AMQP connection blocked by broker: low on memory",
            "memory resource limit alarm set on node 'rabbit@rabbitmq-0'.",
        ] {
            assert_eq!(classify(l), vec![Sig::StoreFull], "{l}");
        }
        // The store's own report names it as the peer of the refused writes.
        let lines: Vec<LogLine> = [
            "redis.exceptions.ResponseError: OOM command not allowed when used memory > 'maxmemory'.",
            "INFO health redis sessions.cache.example.net:6379 used_memory=6.38G maxmemory=6.38G",
        ]
        .iter()
        .map(|l| LogLine {
            line: l.to_string(),
            ..LogLine::default()
        })
        .collect();
        let hits = scan(lines.iter());
        let full = hits.iter().find(|h| h.sig == Sig::StoreFull);
        assert_eq!(
            full.map(|h| h.targets.clone()),
            Some(vec!["sessions.cache.example.net:6379".to_string()])
        );
    }

    #[test]
    fn clean_logs_say_nothing() {
        let obs = Observations {
            pod_logs: vec![
                line("INFO POST /api/v1/charge 200 74ms"),
                line("INFO received SIGTERM, shutting down"),
            ],
            ..Observations::default()
        };
        assert!(signatures(&Ctx::new(&obs)).is_empty());
    }
}
