//! Operator chat: answers from the current incident state (why, evidence, status, actions, runbooks).

use crate::model::commands::{self, Cmd};
use crate::model::{ActionStatus, Incident, StageStatus};
use crate::runbook::{Runbook, Step};

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
