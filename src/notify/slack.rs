//! Slack: Block Kit messages about served investigations, and the checks on their buttons' presses.
//!
//! Two messages: a decision is needed (a high or critical action waits), and how an investigation
//! ended. They are sent in order by one task through a bounded queue, to an incoming webhook or
//! to `chat.postMessage`; the URL and the token are secrets, resolved once at start from their
//! references and masked everywhere after. A send that fails is handed back to the caller as a
//! warning (recorded in the session); nothing waits on it.

use crate::config::SlackNotify;
use crate::integrations::pagerduty::hmac_sha256;
use crate::model::{Action, Event, Incident, Risk};
use crate::policy::redact::Redactor;
use crate::secrets::{Decision, Keyring, SecretRef};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// `action_id` of the approve button.
pub const APPROVE: &str = "sitrep_approve";
/// `action_id` of the deny button.
pub const DENY: &str = "sitrep_deny";
/// How far a request's `X-Slack-Request-Timestamp` may be from this server's clock.
pub const MAX_SKEW_SECS: u64 = 300;
/// Messages waiting to be sent; past this a message is dropped (and the session says so).
const QUEUE: usize = 64;
/// Slack's limit on a section's text, with room to spare.
const SECTION_MAX: usize = 2900;

/// What to do with the reason a message was not sent (record it in the session).
pub type OnFailure = Box<dyn FnOnce(String) + Send>;

enum Dest {
    /// An incoming webhook: the URL is the credential.
    Webhook(SecretString),
    /// `chat.postMessage` with a bot token.
    Api {
        base: String,
        token: SecretString,
        channel: String,
    },
}

struct Inner {
    dest: Dest,
    signing_secret: Option<SecretString>,
    /// Slack user id -> the operator a button press is recorded under.
    users: BTreeMap<String, String>,
    on_approval: bool,
    on_end: bool,
    redactor: Redactor,
    http: reqwest::Client,
}

enum Job {
    Send {
        what: &'static str,
        message: Value,
        on_failure: OnFailure,
    },
    /// The end of a session: its file is read, summarised and sent.
    End {
        session: String,
        path: PathBuf,
        on_failure: OnFailure,
    },
    Flush(oneshot::Sender<()>),
}

/// The Slack notifier of a server: cheap to clone; one task sends, in order.
#[derive(Clone)]
pub struct Slack {
    inner: Arc<Inner>,
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Slack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slack")
            .field(
                "via",
                &match &self.inner.dest {
                    Dest::Webhook(_) => "incoming webhook",
                    Dest::Api { .. } => "chat.postMessage",
                },
            )
            .field("interactive", &self.inner.signing_secret.is_some())
            .field("users", &self.inner.users.len())
            .finish()
    }
}

/// Reads a credential the configuration names by reference; the server has no session to ask
/// for approval, so configuring it is the approval.
async fn resolve(reference: &str, key: &str, config_path: &Path) -> anyhow::Result<SecretString> {
    let fail =
        |why: String| anyhow::anyhow!("{}: key `notify.slack.{key}`: {why}", config_path.display());
    let r = SecretRef::parse(reference).map_err(|e| fail(e.to_string()))?;
    let keyring = Keyring::new();
    keyring.register("slack", &r);
    let name = r.to_string();
    keyring.decide(&name, Decision::Approved);
    let value = keyring.get(&name).await.map_err(|e| fail(e.to_string()))?;
    // Every redactor of this process masks it from now on.
    crate::policy::redact::learn_secret(value.expose_secret());
    Ok(value)
}

impl Slack {
    /// Resolves the configured credentials and starts the sending task (on the current runtime).
    /// `redactor` masks what every message carries, on top of the Slack credentials themselves.
    pub async fn start(
        c: &SlackNotify,
        config_path: &Path,
        redactor: Redactor,
    ) -> anyhow::Result<Slack> {
        let dest = match (&c.webhook_url, &c.token) {
            (Some(url), _) => Dest::Webhook(resolve(url, "webhook_url", config_path).await?),
            (None, Some(token)) => Dest::Api {
                base: c.api_url.trim_end_matches('/').to_string(),
                token: resolve(token, "token", config_path).await?,
                channel: c.channel.clone().unwrap_or_default(),
            },
            (None, None) => anyhow::bail!(
                "{}: key `notify.slack`: expected `webhook_url` or `token` and `channel`",
                config_path.display()
            ),
        };
        let signing_secret = match &c.signing_secret {
            Some(r) => Some(resolve(r, "signing_secret", config_path).await?),
            None => None,
        };
        let secrets = [
            match &dest {
                Dest::Webhook(u) => Some(u.expose_secret().to_string()),
                Dest::Api { token, .. } => Some(token.expose_secret().to_string()),
            },
            signing_secret
                .as_ref()
                .map(|s| s.expose_secret().to_string()),
        ];
        let http = reqwest::Client::builder()
            .user_agent(concat!("sitrep/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(c.timeout_secs.max(1)))
            // A redirect would carry the message (and a bearer token) somewhere not configured.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let inner = Arc::new(Inner {
            dest,
            signing_secret,
            users: c.users.clone(),
            on_approval: c.on.iter().any(|e| e == "approval"),
            on_end: c.on.iter().any(|e| e == "end"),
            redactor: redactor.and_secrets(secrets.into_iter().flatten()),
            http,
        });
        let (jobs, rx) = mpsc::channel(QUEUE);
        tokio::spawn(work(inner.clone(), rx));
        Ok(Slack { inner, jobs })
    }

    /// Whether the approve and deny buttons are offered (a signing secret is configured).
    pub fn interactive(&self) -> bool {
        self.inner.signing_secret.is_some()
    }

    /// A watch over one session's records, for the messages it calls for; `warn` records a
    /// warning in that session while it runs.
    pub fn watch(&self, session: &str, warn: Arc<dyn Fn(String) + Send + Sync>) -> Watch {
        Watch {
            slack: self.clone(),
            session: session.to_string(),
            title: String::new(),
            actions: HashMap::new(),
            sent: BTreeSet::new(),
            warn,
        }
    }

    /// Queues a message; never waits. A full queue or a failed send goes to `on_failure`.
    pub fn send(&self, what: &'static str, mut message: Value, on_failure: OnFailure) {
        self.inner.redactor.redact_json(&mut message);
        self.enqueue(Job::Send {
            what,
            message,
            on_failure,
        });
    }

    fn enqueue(&self, job: Job) {
        if let Err(e) = self.jobs.try_send(job) {
            let why = match &e {
                mpsc::error::TrySendError::Full(_) => {
                    format!(
                        "Slack message dropped: {QUEUE} messages are already waiting to be sent"
                    )
                }
                mpsc::error::TrySendError::Closed(_) => {
                    "Slack message dropped: the sender has stopped".to_string()
                }
            };
            tracing::warn!("{why}");
            let on_failure = match e.into_inner() {
                Job::Send { on_failure, .. } | Job::End { on_failure, .. } => on_failure,
                Job::Flush(_) => return,
            };
            on_failure(why);
        }
    }

    /// Waits (at most `within`) until what was queued so far has been sent or has failed.
    pub async fn flush(&self, within: Duration) {
        let (tx, rx) = oneshot::channel();
        if self.jobs.send_timeout(Job::Flush(tx), within).await.is_ok() {
            let _ = tokio::time::timeout(within, rx).await;
        }
    }

    /// The operator a Slack user's button presses are recorded under, if mapped.
    pub fn operator(&self, user: &str) -> Option<&str> {
        self.inner.users.get(user).map(String::as_str)
    }

    /// Checks an interaction request: `X-Slack-Signature` (`v0=` HMAC-SHA256 of
    /// `v0:<timestamp>:<body>` under the signing secret) and a timestamp within 5 minutes of `now`
    /// (Unix seconds). `Err` says why it is refused.
    pub fn verify(
        &self,
        timestamp: &str,
        signature: &str,
        body: &[u8],
        now: i64,
    ) -> Result<(), String> {
        let Some(secret) = &self.inner.signing_secret else {
            return Err(
                "this sitrep server has no Slack signing secret ([notify.slack] signing_secret): \
                 buttons decide nothing"
                    .into(),
            );
        };
        let timestamp = timestamp.trim();
        let expected = signature_for(secret.expose_secret().as_bytes(), timestamp, body);
        if !constant_time_eq(signature.trim().as_bytes(), expected.as_bytes()) {
            return Err("the request's Slack signature is not valid: nothing was decided".into());
        }
        let fresh = timestamp
            .parse::<i64>()
            .ok()
            .and_then(|ts| now.checked_sub(ts))
            .is_some_and(|d| d.unsigned_abs() <= MAX_SKEW_SECS);
        if !fresh {
            return Err(
                "the request's timestamp is more than 5 minutes from this server's clock: \
                 nothing was decided"
                    .into(),
            );
        }
        Ok(())
    }

    /// The approval message for a high or critical action waiting in `session`.
    pub fn approval_message(&self, session: &str, title: &str, req: &Requested<'_>) -> Value {
        approval_message(session, title, req, self.interactive())
    }
}

/// The `X-Slack-Signature` value of `body` sent at `timestamp` under `secret`.
pub fn signature_for(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let mut base = format!("v0:{timestamp}:").into_bytes();
    base.extend_from_slice(body);
    format!("v0={}", hex::encode(hmac_sha256(secret, &base)))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The answer to an interaction that only its presser sees.
pub fn ephemeral(text: &str) -> Value {
    json!({"response_type": "ephemeral", "replace_original": false, "text": text})
}

async fn work(inner: Arc<Inner>, mut jobs: mpsc::Receiver<Job>) {
    while let Some(job) = jobs.recv().await {
        let (what, message, on_failure) = match job {
            Job::Flush(done) => {
                let _ = done.send(());
                continue;
            }
            Job::Send {
                what,
                message,
                on_failure,
            } => (what, message, on_failure),
            Job::End {
                session,
                path,
                on_failure,
            } => {
                let read = tokio::task::spawn_blocking(move || {
                    crate::session::read_file(&path).map(|log| log.incident())
                })
                .await;
                match read {
                    Ok(Ok(incident)) => {
                        let mut message = end_message(&session, &incident);
                        inner.redactor.redact_json(&mut message);
                        ("end", message, on_failure)
                    }
                    Ok(Err(e)) => {
                        tracing::warn!("Slack end message for {session} not built: {e}");
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("Slack end message for {session} not built: {e}");
                        continue;
                    }
                }
            }
        };
        if let Err(e) = inner.post(&message).await {
            let why = inner
                .redactor
                .redact(&format!("Slack {what} message not sent: {e}"))
                .into_owned();
            tracing::warn!("{why}");
            let _ = tokio::task::spawn_blocking(move || on_failure(why)).await;
        }
    }
}

/// A transport error without the URL (an incoming webhook's URL is its credential).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        "no answer in time".into()
    } else if e.is_connect() {
        format!("cannot connect: {e}")
    } else {
        e.to_string()
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

impl Inner {
    async fn post(&self, message: &Value) -> Result<(), String> {
        match &self.dest {
            Dest::Webhook(url) => {
                let resp = self
                    .http
                    .post(url.expose_secret())
                    .json(message)
                    .send()
                    .await
                    .map_err(describe)?;
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                if status.is_success() {
                    Ok(())
                } else {
                    Err(format!(
                        "the incoming webhook answered {status}: {}",
                        clip(body.lines().next().unwrap_or(""), 200)
                    ))
                }
            }
            Dest::Api {
                base,
                token,
                channel,
            } => {
                let mut body = message.clone();
                if let Some(obj) = body.as_object_mut() {
                    obj.insert("channel".into(), json!(channel));
                }
                let resp = self
                    .http
                    .post(format!("{base}/chat.postMessage"))
                    .bearer_auth(token.expose_secret())
                    .json(&body)
                    .send()
                    .await
                    .map_err(describe)?;
                let status = resp.status();
                let answer: Value = resp.json().await.map_err(|e| {
                    format!(
                        "chat.postMessage answered {status}, not JSON: {}",
                        describe(e)
                    )
                })?;
                if answer.get("ok") == Some(&Value::Bool(true)) {
                    Ok(())
                } else {
                    Err(format!(
                        "chat.postMessage answered {status}: {}",
                        clip(
                            answer
                                .get("error")
                                .and_then(Value::as_str)
                                .unwrap_or("not ok"),
                            200
                        )
                    ))
                }
            }
        }
    }
}

/// Escapes text for Slack's `mrkdwn`.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn section(text: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": clip(&text, SECTION_MAX)}})
}

fn fields(items: &[(&str, String)]) -> Value {
    let fields: Vec<Value> = items
        .iter()
        .map(|(k, v)| json!({"type": "mrkdwn", "text": clip(&format!("*{k}*\n{v}"), 1900)}))
        .collect();
    json!({"type": "section", "fields": fields})
}

fn header(text: &str) -> Value {
    json!({"type": "header", "text": {"type": "plain_text", "text": clip(text, 150), "emoji": false}})
}

fn context(text: String) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "text": clip(&text, SECTION_MAX)}]})
}

/// A pending action as `approval_requested` showed it.
pub struct Requested<'a> {
    pub action: &'a Action,
    pub risk: Risk,
    pub approvals_needed: u8,
    pub digest: &'a str,
}

fn approval_message(session: &str, title: &str, req: &Requested<'_>, buttons: bool) -> Value {
    let a = req.action;
    let risk = req.risk.name();
    let text = format!(
        "sitrep: decision needed: {} on {} ({risk} risk) in \"{}\", session {session}",
        a.kind, a.target, title
    );
    let mut blocks = vec![
        header(&format!("Decision needed: {risk}-risk action")),
        section(format!(
            "*{}* on `{}`\n{}",
            esc(&a.kind),
            esc(&a.target),
            esc(&a.rationale)
        )),
        fields(&[
            ("Risk", risk.to_string()),
            ("Action", format!("`{}`", esc(&a.id))),
            ("Investigation", esc(title)),
            ("Session", format!("`{}`", esc(session))),
        ]),
    ];
    if !a.operation.trim().is_empty() {
        blocks.push(section(format!("*Operation*\n```{}```", esc(&a.operation))));
    }
    if !a.blast_radius.trim().is_empty() {
        blocks.push(section(format!("*Blast radius*\n{}", esc(&a.blast_radius))));
    }
    let two = if req.approvals_needed >= 2 {
        "Critical: two different operators must approve. "
    } else {
        ""
    };
    let how = format!(
        "{two}{}`sitrep follow {session} --server URL`, or `POST /api/sessions/{session}/approve` \
         with `{{\"action_id\": \"{}\"}}`.",
        if buttons {
            "Approve or deny with the buttons below, "
        } else {
            "Approve or deny with "
        },
        esc(&a.id)
    );
    blocks.push(context(how));
    if buttons {
        let value = json!({"session": session, "action": a.id, "digest": req.digest}).to_string();
        blocks.push(json!({
            "type": "actions",
            "block_id": "sitrep_decision",
            "elements": [
                {
                    "type": "button",
                    "action_id": APPROVE,
                    "style": "primary",
                    "text": {"type": "plain_text", "text": "Approve"},
                    "value": value,
                    "confirm": {
                        "title": {"type": "plain_text", "text": "Approve this action?"},
                        "text": {"type": "mrkdwn", "text": clip(&format!("{} on `{}` ({risk} risk) will run.", esc(&a.kind), esc(&a.target)), 300)},
                        "confirm": {"type": "plain_text", "text": "Approve"},
                        "deny": {"type": "plain_text", "text": "Cancel"}
                    }
                },
                {
                    "type": "button",
                    "action_id": DENY,
                    "style": "danger",
                    "text": {"type": "plain_text", "text": "Deny"},
                    "value": value
                }
            ]
        }));
    }
    json!({"text": text, "blocks": blocks})
}

fn result_line(s: &crate::model::ActionState) -> String {
    let mut line = format!(
        "• *{}* on `{}`: {}",
        esc(&s.action.kind),
        esc(&s.action.target),
        s.status.name()
    );
    match &s.result {
        Some(Ok(r)) if !r.trim().is_empty() => {
            line.push_str(&format!(": {}", esc(&clip(r.trim(), 300))));
        }
        Some(Err(e)) => line.push_str(&format!(": {}", esc(&clip(e.trim(), 300)))),
        _ => {}
    }
    if let Some(v) = &s.verification {
        line.push_str(if v.passed {
            " (verified)"
        } else {
            " (verification failed)"
        });
    }
    let decided: Vec<String> = s
        .decisions
        .iter()
        .map(|d| {
            format!(
                "{} by {}",
                if d.approved { "approved" } else { "denied" },
                esc(&d.by)
            )
        })
        .collect();
    if !decided.is_empty() {
        line.push_str(&format!("; {}", decided.join(", ")));
    }
    line
}

/// The message at the end of an investigation: alert, verdict, root cause, actions and their
/// results, the session id.
pub fn end_message(session: &str, incident: &Incident) -> Value {
    let outcome = incident.outcome.map(|o| o.name()).unwrap_or("unknown");
    let (verdict, root_cause) = match &incident.diagnosis {
        Some((category, cause, confidence)) => (
            format!("{category} ({:.0}% confidence)", confidence * 100.0),
            cause.clone(),
        ),
        None => ("none reached".to_string(), String::new()),
    };
    let trigger = match (&incident.alert, &incident.problem) {
        (Some(a), _) => format!("{} ({})", a.name(), a.severity()),
        (None, Some(p)) => clip(p, 200),
        _ => "-".to_string(),
    };
    let text = format!(
        "sitrep: investigation ended ({outcome}): {}; verdict {verdict}; session {session}",
        incident.title
    );
    let mut blocks = vec![
        header(&format!("Investigation ended: {outcome}")),
        section(format!("*{}*", esc(&incident.title))),
        fields(&[
            ("Alert", esc(&trigger)),
            ("Verdict", esc(&verdict)),
            ("Outcome", outcome.to_string()),
            ("Session", format!("`{}`", esc(session))),
        ]),
    ];
    if !root_cause.trim().is_empty() {
        blocks.push(section(format!("*Root cause*\n{}", esc(&root_cause))));
    }
    let actions: Vec<String> = incident.actions.iter().map(result_line).collect();
    blocks.push(section(if actions.is_empty() {
        "*Actions*\nnone proposed".to_string()
    } else {
        format!("*Actions*\n{}", actions.join("\n"))
    }));
    blocks.push(context(format!(
        "The whole session: `GET /api/sessions/{session}` on the server; `sitrep export` of its \
         file writes the postmortem."
    )));
    json!({"text": text, "blocks": blocks})
}

/// What one session's records call for: an approval message when a high or critical action
/// waits (once per version shown), the end message when it ends.
pub struct Watch {
    slack: Slack,
    session: String,
    title: String,
    /// Actions as last proposed or edited, by id.
    actions: HashMap<String, Action>,
    /// (action, digest) already announced.
    sent: BTreeSet<(String, String)>,
    warn: Arc<dyn Fn(String) + Send + Sync>,
}

impl Watch {
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::SessionStarted { title, .. } => self.title = title.clone(),
            Event::ActionProposed { action } | Event::ActionEdited { action, .. } => {
                self.actions.insert(action.id.clone(), action.clone());
            }
            Event::ApprovalRequested {
                action_id,
                risk,
                approvals_needed,
                digest,
                ..
            } if *risk >= Risk::High && self.slack.inner.on_approval => {
                let Some(action) = self.actions.get(action_id) else {
                    return;
                };
                if !self.sent.insert((action_id.clone(), digest.clone())) {
                    return;
                }
                let message = self.slack.approval_message(
                    &self.session,
                    &self.title,
                    &Requested {
                        action,
                        risk: *risk,
                        approvals_needed: *approvals_needed,
                        digest,
                    },
                );
                let warn = self.warn.clone();
                self.slack
                    .send("approval", message, Box::new(move |why| warn(why)));
            }
            _ => {}
        }
    }

    /// The session has ended and its file is complete: the end message, if chosen. A failure is
    /// handed to `on_failure` (the session can no longer record it itself).
    pub fn ended(self, path: PathBuf, on_failure: OnFailure) {
        if !self.slack.inner.on_end {
            return;
        }
        self.slack.enqueue(Job::End {
            session: self.session,
            path,
            on_failure,
        });
    }
}

/// A button press, as Slack sends it (`application/x-www-form-urlencoded`, `payload` = JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interaction {
    /// The Slack user id of who pressed.
    pub user: String,
    pub approve: bool,
    pub session: String,
    pub action_id: String,
    /// The version of the action the message showed.
    pub digest: Option<String>,
}

/// Decodes one `application/x-www-form-urlencoded` component.
fn form_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Reads a button press out of an interaction request's body.
pub fn parse_interaction(body: &[u8]) -> Result<Interaction, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the request body is not text")?;
    let payload = text
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "payload")
        .and_then(|(_, v)| form_decode(v))
        .ok_or("the request has no `payload` form field")?;
    let v: Value =
        serde_json::from_str(&payload).map_err(|e| format!("`payload` is not JSON: {e}"))?;
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "block_actions" {
        return Err(format!(
            "a {kind:?} interaction: only the approve and deny buttons act"
        ));
    }
    let user = v
        .pointer("/user/id")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or("the interaction names no user")?;
    let action = v
        .get("actions")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .ok_or("the interaction has no action")?;
    let approve = match action.get("action_id").and_then(Value::as_str) {
        Some(APPROVE) => true,
        Some(DENY) => false,
        _ => return Err("not a sitrep approve or deny button".into()),
    };
    let value: Value = action
        .get("value")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .ok_or("the button carries no sitrep action")?;
    let field = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (Some(session), Some(action_id)) = (field("session"), field("action")) else {
        return Err("the button carries no sitrep action".into());
    };
    Ok(Interaction {
        user: user.to_string(),
        approve,
        session,
        action_id,
        digest: field("digest"),
    })
}
