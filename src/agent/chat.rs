//! Operator chat: answers from the current incident state (why, evidence, status, actions, runbooks).

use super::evidence::Chart;
use super::specialists::{Caller, lock};
use crate::model::commands::{self, Cmd};
use crate::model::{ActionStatus, ChatRole, Event, Incident, StageStatus};
use crate::reason::Observations;
use crate::runbook::{Runbook, Step};
use std::sync::Mutex;

/// What the operator can ask, from the command table (the same names the console's help lists).
pub fn help() -> String {
    let asks: Vec<String> = commands::agent()
        .map(|s| {
            if s.arg.is_empty() {
                format!("`{}` ({})", s.name, s.help)
            } else {
                format!("`/{}` ({})", commands::usage(s), s.help)
            }
        })
        .collect();
    format!(
        "Ask: {}. Approve or deny actions in the approval panel.",
        asks.join(", ")
    )
}

/// The rules' answer when no model is configured: a free question that the rules do not
/// recognise says so plainly, then gives the rules' own explanation.
pub fn answer_without_model(text: &str, incident: &Incident, runbooks: &[Runbook]) -> String {
    match command(text) {
        Some((cmd, arg)) => run(cmd, &arg, incident, runbooks),
        None if text.trim().starts_with('/') => help(),
        None => format!(
            "No model configured (add an [llm] section to the config to ask free questions). \
             From the rules: {}\n{}",
            why(incident),
            help()
        ),
    }
}

/// Which agent command a message asks for: `/name ARG` or `name` exactly, else the first
/// command one of whose words the question contains.
pub fn command(text: &str) -> Option<(Cmd, String)> {
    let q = text.trim().to_lowercase();
    let bare = q.strip_prefix('/').unwrap_or(&q);
    let (word, arg) = bare
        .split_once(char::is_whitespace)
        .map(|(w, a)| (w, a.trim()))
        .unwrap_or((bare, ""));
    let named = commands::agent().find(|s| s.name == word || s.aliases.contains(&word));
    if let Some(s) = named
        && (arg.is_empty() || !s.arg.is_empty())
    {
        return Some((s.cmd, arg.to_string()));
    }
    if q.starts_with('/') {
        return None;
    }
    commands::agent()
        .find(|s| s.words.iter().any(|w| q.contains(w)))
        .map(|s| (s.cmd, String::new()))
}

/// Answer one operator message from what the investigation knows so far.
pub fn answer(text: &str, incident: &Incident, runbooks: &[Runbook]) -> String {
    match command(text) {
        Some((cmd, arg)) => run(cmd, &arg, incident, runbooks),
        None => help(),
    }
}

fn run(cmd: Cmd, arg: &str, incident: &Incident, runbooks: &[Runbook]) -> String {
    match cmd {
        Cmd::Why => why(incident),
        Cmd::RuledOut => ruled_out(incident),
        Cmd::Evidence => evidence(incident),
        Cmd::Actions => actions(incident),
        Cmd::Status => status(incident),
        Cmd::Runbook => runbook(arg, runbooks),
        Cmd::Runbooks => runbooks
            .iter()
            .map(|r| format!("{}: {}", r.name, r.description))
            .collect::<Vec<_>>()
            .join("\n"),
        // Only agent commands come out of `command`.
        _ => help(),
    }
}

/// `/note TEXT`: the note's text, when `text` is such a line.
pub(super) fn note_line(text: &str) -> Option<&str> {
    let rest = text.trim().strip_prefix("/note")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(rest.trim())
}

/// `/tool KIND [JSON params]`: the kind and the params text, when `text` is such a line.
pub(super) fn tool_line(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim().strip_prefix("/tool")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    Some(rest.split_once(char::is_whitespace).unwrap_or((rest, "")))
}

/// Run a read tool the operator asked for by name: a step on the timeline and evidence, like a
/// specialist's call. Mutating kinds only ever run as proposed actions under policy.
pub(super) async fn run_tool(caller: Caller, text: String) {
    let reply = match tool_line(&text) {
        Some((kind, args)) => run_tool_reply(&caller, kind, args).await,
        None => "usage: /tool KIND {\"param\": \"value\"}".into(),
    };
    lock(&caller.journal).emit(Event::ChatMessage {
        from: ChatRole::Agent,
        text: reply,
    });
}

async fn run_tool_reply(caller: &Caller, kind: &str, args: &str) -> String {
    let usage = "usage: /tool KIND {\"param\": \"value\"}";
    // The run's catalog: the built-in kinds and the tools its world registered.
    let catalog = caller.tools.catalog();
    if kind.is_empty() {
        let reads: Vec<&str> = catalog.reads().map(|e| e.name.as_ref()).collect();
        return format!("{usage}; read tools: {}", reads.join(", "));
    }
    let Some(entry) = catalog.lookup(kind) else {
        return format!("no tool named {kind} (`?` lists them)");
    };
    if entry.mutating {
        return format!(
            "{kind} changes the world: it runs only as a proposed action, through policy and approval"
        );
    }
    let params: crate::model::catalog::Params = if args.trim().is_empty() {
        Default::default()
    } else {
        match serde_json::from_str(args) {
            Ok(p) => p,
            Err(e) => return format!("{kind}: params must be a JSON object ({e}); {usage}"),
        }
    };
    let problems = catalog.check_params(kind, &params, false);
    if !problems.is_empty() {
        return format!("{kind}: {}", problems.join("; "));
    }
    let obs = Mutex::new(Observations::default());
    match caller.call(kind, params, &Chart::default(), &obs).await {
        Some((out, id)) => format!("{kind}: {} ({id})", out.summary()),
        None => {
            let j = lock(&caller.journal);
            let failed = j
                .incident
                .tools
                .iter()
                .rev()
                .find(|t| t.tool == kind)
                .and_then(|t| t.outcome.clone()?.err());
            match failed {
                Some(e) => format!("{kind} failed: {e}"),
                None => format!("{kind} gave nothing new (the same call was already made)"),
            }
        }
    }
}

fn why(i: &Incident) -> String {
    let Some((category, root, confidence)) = &i.diagnosis else {
        return format!(
            "No diagnosis yet: {} tool calls so far, {} evidence items. {}",
            i.tools.len(),
            i.evidence.len(),
            status(i)
        );
    };
    let mut out = format!(
        "{root} (category {category}, confidence {:.0}%).",
        confidence * 100.0
    );
    for h in i.hypotheses.iter().take(3) {
        let ev = titles(i, &h.evidence);
        out.push_str(&format!(
            "\n- {:.0}% {}{}",
            h.confidence * 100.0,
            h.statement,
            if ev.is_empty() {
                String::new()
            } else {
                format!(" [{ev}]")
            }
        ));
    }
    out
}

fn titles(i: &Incident, ids: &[String]) -> String {
    ids.iter()
        .filter_map(|id| i.evidence.iter().find(|e| &e.id == id))
        .map(|e| e.title.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

fn ruled_out(i: &Incident) -> String {
    if i.ruled_out.is_empty() {
        return "Nothing ruled out yet.".into();
    }
    i.ruled_out
        .iter()
        .map(|r| format!("- {}: {}", r.statement, r.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

fn evidence(i: &Incident) -> String {
    if i.evidence.is_empty() {
        return "No evidence gathered yet.".into();
    }
    i.evidence
        .iter()
        .map(|e| format!("{} [{}] {} ({})", e.id, e.kind, e.title, e.source))
        .collect::<Vec<_>>()
        .join("\n")
}

fn actions(i: &Incident) -> String {
    if i.actions.is_empty() {
        return "No actions proposed yet.".into();
    }
    i.actions
        .iter()
        .map(|a| {
            let hint = match a.status {
                ActionStatus::AwaitingApproval if a.approvals_needed >= 2 => format!(
                    " — needs {} distinct operators; a second one runs `sitrep approve <session> {}`",
                    a.approvals_needed, a.action.id
                ),
                _ => String::new(),
            };
            format!(
                "{} {} {} ({} risk): {}{hint}",
                a.action.id,
                a.action.kind,
                a.action.target,
                a.action.risk,
                a.status.name()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn status(i: &Incident) -> String {
    let done = i
        .stages
        .iter()
        .filter(|s| s.status == StageStatus::Done)
        .count();
    let stage = i
        .current_stage
        .map(|s| s.name().to_string())
        .unwrap_or_else(|| "starting".into());
    let running = i.tools.iter().filter(|t| t.outcome.is_none()).count();
    let failed = i
        .tools
        .iter()
        .filter(|t| matches!(t.outcome, Some(Err(_))))
        .count();
    let mut out = format!(
        "Stage {stage} ({done}/8 done); {} tool calls ({running} running, {failed} failed); {} evidence; {} actions.",
        i.tools.len(),
        i.evidence.len(),
        i.actions.len()
    );
    if let Some(o) = i.outcome {
        out.push_str(&format!(" Ended: {}.", o.name()));
    }
    out
}

fn runbook(name: &str, books: &[Runbook]) -> String {
    let Some(rb) = books.iter().find(|r| r.name.eq_ignore_ascii_case(name)) else {
        let names: Vec<&str> = books.iter().map(|r| r.name.as_str()).collect();
        return format!("No runbook `{name}`. Known: {}", names.join(", "));
    };
    let mut out = format!("{}: {}", rb.name, rb.description);
    for (n, step) in rb.steps.iter().enumerate() {
        let line = match step {
            Step::Gather(g) => format!("gather {}", g.tool.value),
            Step::Diagnose(d) => format!("diagnose {} when {}", d.category.value, d.when.value),
            Step::Action(a) => format!(
                "action {} {} ({} risk){}",
                a.tool.value,
                a.target.value,
                a.risk.value,
                a.when
                    .as_ref()
                    .map(|w| format!(" when {}", w.value))
                    .unwrap_or_default()
            ),
        };
        out.push_str(&format!("\n{}. {line}", n + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Category, Event};

    #[test]
    fn tool_lines_are_recognised() {
        assert_eq!(
            tool_line("/tool mcp.time.now {\"a\": 1}"),
            Some(("mcp.time.now", "{\"a\": 1}"))
        );
        assert_eq!(tool_line("/tool"), Some(("", "")));
        assert_eq!(tool_line("/tools"), None);
        assert_eq!(tool_line("why"), None);
    }

    #[test]
    fn why_before_and_after_diagnosis() {
        let mut i = Incident::new();
        assert!(answer("why?", &i, &[]).starts_with("No diagnosis yet"));
        i.apply(
            1.0,
            &Event::Diagnosis {
                category: Category::CodeDefect,
                root_cause: "bad deploy".into(),
                confidence: 0.8,
            },
        );
        let a = answer("Why", &i, &[]);
        assert!(a.contains("bad deploy") && a.contains("80%"), "{a}");
    }

    #[test]
    fn every_agent_command_is_reached_by_its_table_name() {
        let h = help();
        for spec in commands::agent() {
            assert!(h.contains(spec.name), "help misses {}", spec.name);
            let asked = format!("/{}", spec.name);
            assert_eq!(command(&asked).map(|c| c.0), Some(spec.cmd), "{asked}");
            assert_eq!(command(spec.name).map(|c| c.0), Some(spec.cmd));
        }
        assert_eq!(command("/nope"), None);
        assert_eq!(command("what caused this?").map(|c| c.0), Some(Cmd::Why));
        assert!(answer_without_model("/nope", &Incident::new(), &[]).starts_with("Ask:"));
    }

    #[test]
    fn unknown_runbook_lists_known_ones() {
        let books = crate::runbook::builtin();
        let a = answer("/runbook nope", &Incident::new(), &books);
        assert!(a.contains("bad-deploy"), "{a}");
        let a = answer("/runbook bad-deploy", &Incident::new(), &books);
        assert!(a.contains("kubernetes.rollout_undo"), "{a}");
    }
}
