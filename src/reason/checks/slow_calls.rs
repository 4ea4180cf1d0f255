//! Slow calls read from the subject's own log lines: many services log how long an operation
//! took ("Database call completed in 10.01 seconds", "query took 5200ms"); the slowest kind of
//! call to something else is where a latency symptom spends its time.

use super::{Basis, Decl, Role};
use crate::model::{Category, LogLine};
use crate::reason::{Ctx, Signal, logs};
use chrono::{DateTime, Utc};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The checks this concern makes.
pub(crate) const DECLARED: &[Decl] = &[Decl {
    id: "slow_calls",
    title: "slow calls logged by the subject",
    concern: "slow_calls",
    role: Role::Failure,
    reads: &[],
}];

/// Below this an operation is not what a latency page is about.
const SLOW_SECS: f64 = 1.0;

static DURATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:in|took|after|duration[=:]?|elapsed[=:]?|latency[=:]?|time[=:])\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|min|minutes?)\b",
    )
    .ok()
});

/// Words that say an operation waits on something else.
static OUTBOUND: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(database|db|query|queries|sql|stored procedure|redis|cache|memcached|upstream|downstream|backend|api call|call to|request to|http call|rpc|grpc|fetch(?:ing|ed)?|connect(?:ing|ion)? to|elasticsearch|kafka|s3|mongo(?:db)?|postgres(?:ql)?|mysql)\b",
    )
    .ok()
});

/// A line that says which request is being served (`GET /checkout`, `Received request for the
/// checkout page`): the context a slow call belongs to.
static REQUEST: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:GET|POST|PUT|DELETE|PATCH)\s+/[^\s\x22?]*|\breceived (?:a )?request (?:for|to) [^.;,\x22]+|\bhandling (?:a )?(?:request|call) (?:for|to) [^.;,\x22]+",
    )
    .ok()
});

static NUMBER: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"[0-9]+(?:\.[0-9]+)?").ok());

/// A duration a log line reports, in seconds.
pub(crate) fn duration_secs(line: &str) -> Option<f64> {
    DURATION.as_ref()?.captures_iter(line).find_map(|c| {
        let whole = c.get(0)?;
        if counts_before(&line[..whole.start()]) {
            return None;
        }
        let v: f64 = c.get(1)?.as_str().parse().ok()?;
        Some(secs_of(v, c.get(2)?.as_str()))
    })
}

/// Whether the words before "in 300 seconds" count things ("100 changes", "12 requests"): the
/// span is then a window the count was taken over (a save policy, a rate), not how long one
/// operation took.
fn counts_before(before: &str) -> bool {
    let mut words = before.split_whitespace().rev();
    let (Some(noun), Some(count)) = (words.next(), words.next()) else {
        return false;
    };
    noun.chars().all(|c| c.is_ascii_alphabetic())
        && noun.len() > 1
        && count.chars().all(|c| c.is_ascii_digit())
}

/// A value in `unit` (`ms`, `milliseconds`, `s`, `seconds`, `m`, `min`, `minutes`) in seconds.
pub(crate) fn secs_of(value: f64, unit: &str) -> f64 {
    let unit = unit.to_ascii_lowercase();
    match unit.as_str() {
        u if u.starts_with("ms") || u.starts_with("milli") => value / 1000.0,
        u if u.starts_with('m') => value * 60.0,
        _ => value,
    }
}

/// One kind of timed operation: lines of the same text but for their numbers.
#[derive(Clone, Debug)]
pub(crate) struct Timed {
    pub example: String,
    pub count: usize,
    pub min: f64,
    pub max: f64,
    /// The thing waited on, as the line names it (`database`, `redis`, ...), when it names one.
    pub outbound: Option<String>,
    pub first: Option<DateTime<Utc>>,
    /// The request most of its lines were served for (the last request line before each).
    pub serving: Option<String>,
}

/// The timed operations in `lines` whose slowest run took a second or more, slowest first.
pub(crate) fn slow_operations(lines: &[&LogLine]) -> Vec<Timed> {
    let mut groups: BTreeMap<String, Timed> = BTreeMap::new();
    // Per group, how often each request context came before its lines.
    let mut contexts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    // The last request line of each source (pod, container), in the order lines are read.
    let mut last_request: BTreeMap<String, String> = BTreeMap::new();
    for l in lines {
        let source = l
            .labels
            .get("pod")
            .or_else(|| l.labels.get("app"))
            .cloned()
            .unwrap_or_default();
        // An access log line (`"GET /x HTTP/1.1" 200`) is written when a request ends: it
        // starts nothing that the lines after it belong to.
        let request = REQUEST
            .as_ref()
            .filter(|_| !l.line.contains("HTTP/"))
            .and_then(|re| re.find(&l.line))
            .map(|m| m.as_str().trim().to_string());
        let Some(secs) = duration_secs(&l.line) else {
            if let Some(r) = request {
                last_request.insert(source, r);
            }
            continue;
        };
        let key = NUMBER
            .as_ref()
            .map(|re| re.replace_all(l.line.trim(), "#").into_owned())
            .unwrap_or_else(|| l.line.clone());
        let t = groups.entry(key.clone()).or_insert_with(|| Timed {
            example: logs::short(&l.line),
            count: 0,
            min: secs,
            max: secs,
            outbound: OUTBOUND
                .as_ref()
                .and_then(|re| re.find(&l.line))
                .map(|m| m.as_str().to_lowercase()),
            first: l.at,
            serving: None,
        });
        t.count += 1;
        t.min = t.min.min(secs);
        if secs > t.max {
            t.max = secs;
            t.example = logs::short(&l.line);
        }
        t.first = match (t.first, l.at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(r) = last_request.get(&source) {
            *contexts
                .entry(key.clone())
                .or_default()
                .entry(r.clone())
                .or_default() += 1;
        }
    }
    for (key, t) in groups.iter_mut() {
        t.serving = contexts
            .get(key)
            .and_then(|c| c.iter().max_by_key(|(_, n)| **n))
            .map(|(r, _)| r.clone());
    }
    let mut out: Vec<Timed> = groups
        .into_values()
        .filter(|t| t.max >= SLOW_SECS)
        .collect();
    out.sort_by(|a, b| b.max.total_cmp(&a.max).then(b.count.cmp(&a.count)));
    out
}

fn secs_text(v: f64) -> String {
    format!("{v:.2} s")
}

/// The range of a timed operation, `5.00–10.01 s` or `10.01 s`.
pub(crate) fn range_text(t: &Timed) -> String {
    if (t.max - t.min).abs() < 0.005 {
        secs_text(t.max)
    } else {
        format!(
            "{}–{}",
            secs_text(t.min).trim_end_matches(" s"),
            secs_text(t.max)
        )
    }
}

/// Check: does the subject wait on something slow? Failing when its logs time calls to another
/// system at a second or more; the slowest such kind of call is named with its lines quoted.
pub(crate) fn slow_calls(ctx: &Ctx) -> Vec<Signal> {
    let lines = logs::scoped_lines(ctx);
    let ops = slow_operations(&lines);
    let Some(call) = ops.iter().find(|t| t.outbound.is_some()) else {
        return Vec::new();
    };
    let what = call.outbound.clone().unwrap_or_default();
    let scope = ctx.scope_name("the service");
    // What the caller's own requests take: another timed line as slow as the call, not about it.
    let whole = ops
        .iter()
        .find(|t| t.outbound.is_none() && t.max + 0.05 >= call.max)
        .map(|t| format!("; its own requests take as long (\"{}\")", t.example))
        .unwrap_or_default();
    let serving = call
        .serving
        .as_ref()
        .map(|r| format!(" while serving \"{r}\""))
        .unwrap_or_default();
    let summary = format!(
        "{scope}'s calls to its {what} are slow: {} of them took {} (\"{}\"){serving}",
        call.count,
        range_text(call),
        call.example
    );
    vec![Signal {
        analyzer: "slow_calls",
        summary: summary.clone(),
        detail: format!("the slowest timed operation in {scope}'s logs{whole}"),
        category: Category::DependencyFailure,
        basis: Basis::Logged,
        evidence: ctx.ev(&["kubernetes/pod_logs", "logs"]),
        cause: Some(format!(
            "{summary}{whole}: the latency is spent waiting on the {what}, not in {scope} itself"
        )),
        since: call.first,
        ..Signal::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> LogLine {
        LogLine {
            at: None,
            labels: Default::default(),
            line: s.to_string(),
        }
    }

    #[test]
    fn a_count_over_a_window_is_not_a_duration() {
        assert_eq!(
            duration_secs("1:M 11 Mar 2026 14:31:25.000 * 100 changes in 300 seconds. Saving..."),
            None
        );
        assert_eq!(duration_secs("served 12 requests in 10s"), None);
        assert_eq!(duration_secs("query finished in 2.5s"), Some(2.5));
        assert_eq!(
            duration_secs("100 changes in 300 seconds; flush took 1200ms"),
            Some(1.2)
        );
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(
            duration_secs("Database call completed in 10.01 seconds."),
            Some(10.01)
        );
        assert_eq!(duration_secs("query took 5200ms"), Some(5.2));
        assert_eq!(duration_secs("duration=2s path=/x"), Some(2.0));
        assert_eq!(duration_secs("elapsed: 1.5 min"), Some(90.0));
        assert_eq!(duration_secs("GET /metrics 200 OK"), None);
    }

    #[test]
    fn the_slowest_outbound_call_is_found_and_fast_ones_are_not() {
        let lines = [
            line("INFO:app:Received request for checkout page."),
            line("Database call completed in 10.01 seconds."),
            line("INFO:     172.31.1.249:37648 - \"GET /metrics HTTP/1.1\" 200 OK"),
            line("Database call completed in 5.00 seconds."),
            line("Page rendered in 10.01 seconds."),
            line("cache lookup took 3ms"),
        ];
        let refs: Vec<&LogLine> = lines.iter().collect();
        let ops = slow_operations(&refs);
        assert_eq!(ops.len(), 2, "{ops:?}");
        let db = ops
            .iter()
            .find(|t| t.outbound.is_some())
            .unwrap_or_else(|| unreachable!());
        assert_eq!(db.outbound.as_deref(), Some("database"));
        assert_eq!((db.count, range_text(db).as_str()), (2, "5.00–10.01 s"));
        assert_eq!(
            db.serving.as_deref(),
            Some("Received request for checkout page"),
            "the request each slow call was made for"
        );
        let fast = [line("cache lookup took 3ms")];
        let refs: Vec<&LogLine> = fast.iter().collect();
        assert!(slow_operations(&refs).is_empty());
    }
}
