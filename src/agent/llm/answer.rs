//! The model's final answer: parsed from its text, validated against the evidence ids and the
//! catalog, with what failed validation listed so it can be sent back once, then dropped.

use crate::model::catalog::Catalog;
use crate::model::{Action, Category, EvidenceId, Risk, RuledOut, catalog};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Deserialize, Debug, Default)]
struct RawAction {
    kind: String,
    #[serde(default)]
    params: serde_json::Map<String, Value>,
    #[serde(default)]
    rationale: String,
}

#[derive(Deserialize, Debug, Default)]
struct RawRuledOut {
    statement: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    evidence: Vec<String>,
}

#[derive(Deserialize, Debug)]
struct Raw {
    category: String,
    root_cause: String,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    ruled_out: Vec<RawRuledOut>,
    #[serde(default)]
    actions: Vec<RawAction>,
}

/// A validated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub category: Category,
    pub root_cause: String,
    pub confidence: f32,
    pub evidence: Vec<EvidenceId>,
    pub ruled_out: Vec<RuledOut>,
    /// Admitted by the catalog; ids empty (the agent assigns them).
    pub actions: Vec<Action>,
}

/// The answer with everything that did not validate removed, and what was removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub answer: Answer,
    pub problems: Vec<String>,
}

/// The JSON object in a model's text (bare, or in a ```json fence, or amid prose).
fn json_of(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

/// Parse the answer; a text that is no answer at all is an error to send back.
pub fn check(
    catalog: &Catalog,
    text: &str,
    known: &BTreeSet<EvidenceId>,
    extra_actions: &BTreeSet<String>,
) -> Result<Checked, String> {
    let json = json_of(text).ok_or("the answer holds no JSON object")?;
    let raw: Raw = serde_json::from_str(json)
        .map_err(|e| format!("the answer is not the JSON asked for: {e}"))?;
    let mut problems = Vec::new();
    let category = match serde_json::from_value::<Category>(Value::from(raw.category.trim())) {
        Ok(c) => c,
        Err(_) => {
            problems.push(format!(
                "category {:?} is not one of the categories",
                raw.category
            ));
            Category::Unknown
        }
    };
    let cite = |ids: Vec<String>, what: &str, problems: &mut Vec<String>| -> Vec<String> {
        ids.into_iter()
            .filter(|id| {
                let ok = known.contains(id);
                if !ok {
                    problems.push(format!("{what} cites evidence {id}, which does not exist"));
                }
                ok
            })
            .collect()
    };
    let evidence = cite(raw.evidence, "the root cause", &mut problems);
    let ruled_out = raw
        .ruled_out
        .into_iter()
        .enumerate()
        .map(|(n, r)| RuledOut {
            evidence: cite(r.evidence, &format!("ruled out {}", n + 1), &mut problems),
            statement: r.statement,
            reason: r.reason,
        })
        .collect();
    let mut actions = Vec::new();
    for a in raw.actions {
        let known_kind =
            catalog.lookup(&a.kind).is_some_and(|e| e.mutating) || extra_actions.contains(&a.kind);
        if !known_kind {
            problems.push(format!("action kind {} is not a catalog action", a.kind));
            continue;
        }
        let mut params: catalog::Params = a.params.into_iter().collect();
        if catalog.lookup(&a.kind).is_some()
            && let Err(e) = catalog.admit(&a.kind, "", &mut params)
        {
            problems.push(format!("action {}: {e}", a.kind));
            continue;
        }
        actions.push(Action {
            id: String::new(),
            kind: a.kind.clone(),
            target: catalog.target_of(&a.kind, &params).unwrap_or_default(),
            risk: if catalog.lookup(&a.kind).is_some() {
                catalog.risk_for(&a.kind, &params)
            } else {
                // Outside the catalog (an MCP tool listed as mutating): no floor known, so high.
                Risk::High
            },
            params,
            rationale: format!("model: {}", a.rationale),
            operation: String::new(),
            blast_radius: String::new(),
            evidence: evidence.clone(),
        });
    }
    Ok(Checked {
        answer: Answer {
            category,
            root_cause: raw.root_cause,
            confidence: raw.confidence.unwrap_or(0.5).clamp(0.0, 1.0) as f32,
            evidence,
            ruled_out,
            actions,
        },
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> BTreeSet<String> {
        ["ev-0", "ev-1"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fenced_answer_validates_and_bad_parts_are_listed() {
        let text = "Here:\n```json\n{\"category\":\"code_defect\",\"root_cause\":\"bad deploy\",\"confidence\":0.9,\
            \"evidence\":[\"ev-1\",\"ev-7\"],\"ruled_out\":[{\"statement\":\"node\",\"reason\":\"ready\",\"evidence\":[\"ev-0\"]}],\
            \"actions\":[{\"kind\":\"kubernetes.rollout_undo\",\"params\":{\"deployment\":\"api\",\"namespace\":\"p\"},\"rationale\":\"r\"},\
            {\"kind\":\"shell.nuke\",\"params\":{}}]}\n```";
        let c = check(&Catalog::default(), text, &known(), &BTreeSet::new()).unwrap();
        assert_eq!(c.answer.category, Category::CodeDefect);
        assert_eq!(c.answer.evidence, vec!["ev-1"]);
        assert_eq!(c.answer.ruled_out[0].evidence, vec!["ev-0"]);
        assert_eq!(c.answer.actions.len(), 1);
        assert_eq!(c.answer.actions[0].target, "deployment/api");
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert!(c.problems[0].contains("ev-7"));
        assert!(c.problems[1].contains("shell.nuke"));
    }

    #[test]
    fn no_json_or_wrong_shape_is_an_error() {
        assert!(
            check(
                &Catalog::default(),
                "I think it is the database.",
                &known(),
                &BTreeSet::new()
            )
            .is_err()
        );
        assert!(
            check(
                &Catalog::default(),
                "{\"cause\": 1}",
                &known(),
                &BTreeSet::new()
            )
            .is_err()
        );
        let c = check(
            &Catalog::default(),
            "{\"category\":\"bogus\",\"root_cause\":\"x\"}",
            &known(),
            &BTreeSet::new(),
        )
        .unwrap();
        assert_eq!(c.answer.category, Category::Unknown);
        assert_eq!(c.problems.len(), 1);
    }

    #[test]
    fn read_tools_are_not_actions() {
        let c = check(
            &Catalog::default(),
            "{\"category\":\"unknown\",\"root_cause\":\"x\",\"actions\":[{\"kind\":\"kubernetes.pods\"}]}",
            &known(),
            &BTreeSet::new(),
        )
        .unwrap();
        assert!(c.answer.actions.is_empty());
        assert_eq!(c.problems.len(), 1);
    }
}
