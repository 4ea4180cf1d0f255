//! The model-driven investigation loop: after the analyzers, a model reads their findings, calls
//! read-only tools (mutating calls become proposals), and gives a validated, cited answer.

pub mod answer;
pub mod prompt;

use crate::config;
use crate::integrations::llm::{
    ChatRequest, Client, ClientConfig, Message, Provider, ToolCall, ToolSpec,
};
use crate::model::catalog::Catalog;
use crate::model::{Action, Event, EvidenceId, Finding, Hypothesis, RuledOut};
use futures::future::BoxFuture;
use secrecy::SecretString;
use std::collections::{BTreeMap, BTreeSet};

pub use answer::Answer;

/// Parameters of a tool call.
pub type Params = BTreeMap<String, serde_json::Value>;

/// Where a case directory keeps its recorded model exchanges.
pub const RECORDED_FILE: &str = "llm.ndjson";

/// A configured model and how far it may go.
#[derive(Clone, Debug)]
pub struct Model {
    pub client: Client,
    pub max_steps: u32,
    /// Tools beyond the catalog (MCP), offered as they are.
    pub extra_tools: Vec<ToolSpec>,
    /// Of those, the ones that change the world (proposals only).
    pub extra_mutating: BTreeSet<String>,
    pub tool_cap: usize,
    pub context_budget: usize,
    /// `[llm] api_key_env` as an `op://` or `vault://` reference.
    pub key_reference: Option<crate::secrets::SecretRef>,
}

/// Why `[llm]` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("[llm] api_key_env names {0}, which is not set in the environment")]
    MissingKey(String),
    #[error("[llm] provider {0:?} is not one of openai, anthropic, ollama")]
    Provider(String),
    #[error("cannot set up the model client: {0}")]
    Client(String),
    #[error("[llm] api_key_env: {0}")]
    Reference(String),
}

/// The integration name a model key by reference is approved under.
pub const KEY_INTEGRATION: &str = "llm";

impl Model {
    /// The model from `[llm]`; the key is read from the named variable and kept in memory.
    /// With `record`, every exchange is also appended to that file (`<case dir>/llm.ndjson`).
    pub fn from_config(
        llm: &config::Llm,
        record: Option<std::path::PathBuf>,
    ) -> Result<Model, SetupError> {
        let provider = match llm.provider.as_str() {
            "openai" => Provider::Openai,
            "anthropic" => Provider::Anthropic,
            "ollama" => Provider::Ollama,
            other => return Err(SetupError::Provider(other.to_string())),
        };
        let mut cfg = ClientConfig::new(provider, &llm.base_url, &llm.model);
        // `env:VAR` (or a bare name) is read now; `op://` and `vault://` only once the operator
        // approved the reference (see [`Model::use_keyring`]).
        let mut key_reference = None;
        if let Some(text) = &llm.api_key_env {
            if text.starts_with("op://") || text.starts_with("vault://") {
                let r = crate::secrets::SecretRef::parse(text)
                    .map_err(|e| SetupError::Reference(e.to_string()))?;
                key_reference = Some(r);
            } else {
                let var = text.strip_prefix("env:").unwrap_or(text);
                let value =
                    std::env::var(var).map_err(|_| SetupError::MissingKey(var.to_string()))?;
                cfg.api_key = Some(SecretString::from(value));
            }
        }
        cfg.record = record;
        let client = Client::new(cfg).map_err(|e| SetupError::Client(e.to_string()))?;
        let mut model = Model::new(client, llm.max_steps);
        model.key_reference = key_reference;
        Ok(model)
    }

    /// Reads a key given by reference through `keyring`, where it waits for the operator's
    /// approval like every other credential (integration `llm`).
    pub fn use_keyring(&mut self, keyring: &std::sync::Arc<crate::secrets::Keyring>) {
        if let Some(r) = &self.key_reference {
            keyring.register(KEY_INTEGRATION, r);
            self.client
                .set_key_reference(keyring.clone(), &r.to_string());
        }
    }

    /// A model that answers from a case directory's recorded exchanges (`llm.ndjson`), offline.
    pub fn replaying(case_dir: &std::path::Path, max_steps: u32) -> Result<Model, String> {
        let path = case_dir.join(RECORDED_FILE);
        let recorded = crate::integrations::llm::load_recorded(&path)?;
        Ok(Model::new(Client::replaying(recorded), max_steps))
    }

    pub fn new(client: Client, max_steps: u32) -> Model {
        Model {
            client,
            max_steps: max_steps.max(1),
            extra_tools: Vec::new(),
            extra_mutating: BTreeSet::new(),
            tool_cap: prompt::TOOL_CAP,
            context_budget: prompt::CONTEXT_BUDGET,
            key_reference: None,
        }
    }

    fn is_mutating(&self, catalog: &Catalog, tool: &str) -> bool {
        catalog.lookup(tool).is_some_and(|e| e.mutating) || self.extra_mutating.contains(tool)
    }

    fn is_read(&self, catalog: &Catalog, tool: &str) -> bool {
        catalog.lookup(tool).is_some_and(|e| !e.mutating)
            || (self.extra_tools.iter().any(|t| t.name == tool)
                && !self.extra_mutating.contains(tool))
    }
}

/// A read tool's result as the loop sees it.
#[derive(Clone, Debug)]
pub struct ToolResult {
    pub evidence: Vec<EvidenceId>,
    /// The result as text (redacted by the toolbox), before capping.
    pub text: String,
}

/// What the loop needs from the agent: running reads (each a timeline event whose result is
/// evidence), recording, and the evidence ids that exist.
pub trait Toolbox: Send + Sync {
    fn read<'a>(
        &'a self,
        tool: &'a str,
        params: Params,
    ) -> BoxFuture<'a, Result<ToolResult, String>>;
    fn emit(&self, event: Event);
    fn evidence_ids(&self) -> BTreeSet<EvidenceId>;
    /// Mask secrets in text bound for the model.
    fn redact(&self, text: &str) -> String;
    /// The kinds this run knows, including those its world registered (MCP servers' tools).
    fn catalog(&self) -> Catalog {
        Catalog::default()
    }
}

/// What the analyzers already concluded, and the evidence so far.
pub struct Brief<'a> {
    pub trigger: String,
    pub findings: &'a [Finding],
    pub hypotheses: &'a [Hypothesis],
    pub ruled_out: &'a [RuledOut],
    pub evidence: &'a [crate::model::Evidence],
}

/// The loop's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub answer: Answer,
    /// Proposals from mutating tool calls (ids empty); they go through policy like any other.
    pub proposals: Vec<Action>,
    pub steps: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// What validation dropped after the one correction round.
    pub dropped: Vec<String>,
}

fn call_key(c: &ToolCall) -> String {
    format!("{} {}", c.name, c.arguments)
}

/// Run the loop. `Err` means the model could not give an answer (the rules stand).
pub async fn investigate(
    model: &Model,
    brief: &Brief<'_>,
    tb: &dyn Toolbox,
) -> Result<Outcome, String> {
    let catalog = tb.catalog();
    let tools = prompt::tool_specs(&catalog, &model.extra_tools);
    let opening = prompt::brief(
        &brief.trigger,
        brief.findings,
        brief.hypotheses,
        brief.ruled_out,
        brief.evidence,
    );
    let mut messages = vec![Message::user(tb.redact(&opening))];
    let mut cache: BTreeMap<String, String> = BTreeMap::new();
    let mut proposals: Vec<Action> = Vec::new();
    let mut spent = 0usize;
    let (mut tokens_in, mut tokens_out) = (0u64, 0u64);
    let mut corrected = false;
    let mut failures = 0;
    let mut step = 0;
    while step < model.max_steps + 1 {
        step += 1;
        let last = step >= model.max_steps;
        let req = ChatRequest {
            system: prompt::SYSTEM.into(),
            messages: messages.clone(),
            tools: if last { Vec::new() } else { tools.clone() },
            stream: true,
            max_tokens: 4096,
        };
        let ex = model.client.chat(&req, &mut |_| {}).await;
        tb.emit(crate::integrations::llm::event("investigate", step, &ex));
        let reply = match ex.reply {
            Ok(r) => r,
            Err(e) => {
                // A cut or garbled stream is survivable once; twice in a row ends the loop.
                failures += 1;
                tb.emit(Event::Warning {
                    message: format!("model step {step} failed: {e}"),
                });
                if failures >= 2 {
                    return Err(format!("the model failed twice in a row: {e}"));
                }
                continue;
            }
        };
        failures = 0;
        tokens_in += reply.tokens_in;
        tokens_out += reply.tokens_out;
        if reply.tool_calls.is_empty() || last {
            let known = tb.evidence_ids();
            match answer::check(&catalog, &reply.text, &known, &model.extra_mutating) {
                Ok(c) if c.problems.is_empty() || corrected || last => {
                    for p in &c.problems {
                        tb.emit(Event::Warning {
                            message: format!("model answer: dropped: {p}"),
                        });
                    }
                    return Ok(Outcome {
                        answer: c.answer,
                        proposals,
                        steps: step,
                        tokens_in,
                        tokens_out,
                        dropped: c.problems,
                    });
                }
                Ok(c) => {
                    corrected = true;
                    messages.push(Message::assistant(reply.text.clone(), Vec::new()));
                    messages.push(Message::user(format!(
                        "Your answer has problems; fix them and answer again with the JSON only \
                         (anything still wrong will be dropped):\n- {}\nValid evidence ids: {}",
                        c.problems.join("\n- "),
                        known.iter().cloned().collect::<Vec<_>>().join(", ")
                    )));
                }
                Err(e) if !corrected && !last => {
                    corrected = true;
                    messages.push(Message::assistant(reply.text.clone(), Vec::new()));
                    messages.push(Message::user(format!(
                        "{e}. Answer again with the JSON object only."
                    )));
                }
                Err(e) => return Err(format!("the model gave no usable answer: {e}")),
            }
            continue;
        }
        messages.push(Message::assistant(
            reply.text.clone(),
            reply.tool_calls.clone(),
        ));
        let results = run_calls(
            model,
            &catalog,
            tb,
            &reply.tool_calls,
            &mut cache,
            &mut proposals,
        )
        .await;
        for (call, text) in reply.tool_calls.iter().zip(results) {
            let text = tb.redact(&text);
            let remaining = model.context_budget.saturating_sub(spent);
            let shown = if remaining == 0 {
                "[context budget exhausted: result omitted; answer with what you have]".to_string()
            } else {
                prompt::cap(&text, model.tool_cap.min(remaining))
            };
            spent += shown.chars().count().min(remaining.max(1));
            messages.push(Message::tool(call, shown));
        }
    }
    Err(format!("no answer within {} steps", model.max_steps))
}

/// Run one turn's tool calls: reads in parallel, repeats from the cache, mutating calls turned
/// into proposals; one result text per call, in order.
async fn run_calls(
    model: &Model,
    catalog: &Catalog,
    tb: &dyn Toolbox,
    calls: &[ToolCall],
    cache: &mut BTreeMap<String, String>,
    proposals: &mut Vec<Action>,
) -> Vec<String> {
    enum Plan {
        Done(String),
        Run(usize),
    }
    let mut plans = Vec::new();
    let mut runs: Vec<BoxFuture<'_, Result<ToolResult, String>>> = Vec::new();
    let mut run_keys = Vec::new();
    for c in calls {
        let key = call_key(c);
        let params: Params = match &c.arguments {
            serde_json::Value::Object(m) => m.clone().into_iter().collect(),
            _ => {
                plans.push(Plan::Done("error: arguments must be a JSON object".into()));
                continue;
            }
        };
        if model.is_mutating(catalog, &c.name) {
            plans.push(Plan::Done(propose(catalog, c, params, proposals)));
        } else if !model.is_read(catalog, &c.name) {
            plans.push(Plan::Done(format!("error: no tool named {}", c.name)));
        } else if let Some(earlier) = cache.get(&key) {
            plans.push(Plan::Done(format!(
                "(identical to an earlier call; its result again)\n{earlier}"
            )));
        } else if let Some(n) = run_keys.iter().position(|k| k == &key) {
            plans.push(Plan::Run(n));
        } else {
            plans.push(Plan::Run(runs.len()));
            run_keys.push(key);
            runs.push(tb.read(&c.name, params));
        }
    }
    let results = futures::future::join_all(runs).await;
    let texts: Vec<String> = results
        .into_iter()
        .map(|r| match r {
            Ok(r) => format!("evidence {}\n{}", r.evidence.join(", "), r.text),
            Err(e) => format!("error: {e}"),
        })
        .collect();
    for (k, t) in run_keys.iter().zip(&texts) {
        cache.insert(k.clone(), t.clone());
    }
    plans
        .into_iter()
        .map(|p| match p {
            Plan::Done(s) => s,
            Plan::Run(n) => texts[n].clone(),
        })
        .collect()
}

/// A mutating call: admitted by the catalog and kept as a proposal; the model is told it did
/// not run.
fn propose(
    catalog: &Catalog,
    c: &ToolCall,
    mut params: Params,
    proposals: &mut Vec<Action>,
) -> String {
    let in_catalog = catalog.lookup(&c.name).is_some();
    if in_catalog && let Err(e) = catalog.admit(&c.name, "", &mut params) {
        return format!("error: {e}");
    }
    let action = Action {
        id: String::new(),
        kind: c.name.clone(),
        target: catalog.target_of(&c.name, &params).unwrap_or_else(|| {
            // A tool of an MCP server names no object of ours: its arguments tell proposals apart.
            if catalog.is_external(&c.name) {
                params
                    .iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => format!("{k}={s}"),
                        other => format!("{k}={other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                String::new()
            }
        }),
        risk: if in_catalog {
            catalog.risk_for(&c.name, &params)
        } else {
            crate::model::Risk::High
        },
        params,
        rationale: "model: requested during the investigation".into(),
        operation: String::new(),
        blast_radius: String::new(),
        evidence: Vec::new(),
    };
    let what = format!("{} {}", action.kind, action.target);
    if !proposals
        .iter()
        .any(|p| p.kind == action.kind && p.params == action.params)
    {
        proposals.push(action);
    }
    format!(
        "NOT EXECUTED: {what} was proposed to the operator, who approves or denies it under policy. \
         Do not assume it ran."
    )
}
