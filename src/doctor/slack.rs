//! The Slack check: a bot token through `auth.test`; an incoming webhook only by the syntax of
//! its URL (a check must not post).

use super::credentials;
use super::http::{Reach, Target};
use super::{Finding, Options, Planned};
use crate::config::{Auth, Config, SlackNotify};
use crate::integrations::transport::Request;
use crate::secrets::SecretRef;
use serde_json::Value;

pub fn plan(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(s) = config.notify.slack.clone() else {
        return vec![Planned::absent("slack")];
    };
    let config = config.clone();
    vec![Planned::run("slack", async move {
        match (&s.token, &s.webhook_url) {
            (Some(token), _) => token_check(&config, &s, token).await,
            (None, Some(webhook)) => webhook_check(webhook).await,
            (None, None) => Finding::failed(
                "neither `token` nor `webhook_url` is set",
                "set [notify.slack] webhook_url, or token and channel",
            ),
        }
    })]
}

/// `POST auth.test`: Slack says whether the token is good, and for which workspace.
async fn token_check(config: &Config, s: &SlackNotify, token: &str) -> Finding {
    let auth = Auth::Bearer {
        token_env: token.to_string(),
    };
    let target = Target::new("slack", &s.api_url, s.timeout_secs).with_field("notify.slack.token");
    let reach = match Reach::new(config, target, Some(&auth)).await {
        Ok(r) => r,
        Err(f) => return f,
    };
    let req = Request::new("slack", "POST", "/auth.test");
    let v = match reach.send(&req).await {
        Err(f) => return f,
        Ok(resp) => match resp.json(&req) {
            Ok(v) => v,
            Err(e) => return Finding::from_error(&e, &reach.url),
        },
    };
    if v.get("ok") == Some(&Value::Bool(true)) {
        let team = v.get("team").and_then(Value::as_str).unwrap_or("?");
        let user = v.get("user").and_then(Value::as_str).unwrap_or("?");
        let channel = match &s.channel {
            Some(c) => format!(", posts to {c}"),
            None => String::new(),
        };
        return Finding::ok(None, format!("token of {user} in {team}{channel}"));
    }
    let error = v.get("error").and_then(Value::as_str).unwrap_or("not ok");
    if let Some(note) = reach.reference_note()
        && error == "not_authed"
    {
        return Finding::ok(None, format!("reachable; {note}"));
    }
    Finding::failed(
        format!("auth.test: {error}"),
        "check the bot token (xoxb-...) `token` names",
    )
}

/// The webhook URL is a secret itself: read from the environment it is only parsed, never shown;
/// by reference only its store is checked.
async fn webhook_check(webhook: &str) -> Finding {
    let reference = match SecretRef::parse(webhook) {
        Ok(r) => r,
        Err(e) => {
            return Finding::failed(e.to_string(), "correct [notify.slack] webhook_url");
        }
    };
    let SecretRef::Env(var) = &reference else {
        return match credentials::check_reference(&reference).await {
            Ok(note) => Finding::ok(
                None,
                format!("incoming webhook; {note}, {reference} not read"),
            ),
            Err(mut f) => {
                f.detail = format!("{} ({reference})", f.detail);
                f
            }
        };
    };
    let Ok(url) = std::env::var(var) else {
        return Finding::failed(
            format!("environment variable {var} is not set"),
            format!("export {var} with the incoming webhook URL"),
        );
    };
    match reqwest::Url::parse(url.trim()) {
        Ok(u) if u.scheme() == "https" && u.host_str().is_some() => Finding::ok(
            None,
            format!(
                "incoming webhook to {} (not posted to)",
                u.host_str().unwrap_or("?")
            ),
        ),
        Ok(u) => Finding::failed(
            format!("the webhook URL in {var} is not https ({})", u.scheme()),
            "use the https URL Slack gave for the incoming webhook",
        ),
        Err(e) => Finding::failed(
            format!("the webhook URL in {var} does not parse: {e}"),
            "use the URL Slack gave for the incoming webhook",
        ),
    }
}
