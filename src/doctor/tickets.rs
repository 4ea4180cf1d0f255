//! The ticket trackers' checks: Jira (`GET /rest/api/3/myself`, then the project) and
//! ServiceNow (`GET /api/now/table/sys_user?sysparm_limit=1`), with basic auth.

use super::http::{Reach, Target};
use super::{Finding, Options, Planned};
use crate::config::{Auth, Config};
use serde_json::Value;

pub fn jira(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(j) = config.integrations.jira.clone() else {
        return vec![Planned::absent("jira")];
    };
    let config = config.clone();
    vec![Planned::run("jira", async move {
        let auth = Auth::Basic {
            username: j.email.clone(),
            password_env: j.api_token.clone(),
        };
        let target = Target::new("jira", &j.url, j.timeout_secs)
            .with_field("integrations.jira.api_token")
            .with_header("Accept", "application/json");
        let reach = match Reach::new(&config, target, Some(&auth)).await {
            Ok(r) => r,
            Err(f) => return f,
        };
        let me = match reach.get_json("/rest/api/3/myself").await {
            Ok(v) => v,
            Err(mut f) => {
                if f.detail.starts_with("401") {
                    f.fix = Some(format!(
                        "Jira refused {} with the API token: check `email` and `api_token`",
                        j.email
                    ));
                }
                return f;
            }
        };
        let who = me
            .get("displayName")
            .and_then(Value::as_str)
            .unwrap_or(&j.email)
            .to_string();
        let project = j.project.clone();
        match reach
            .get_json(&format!("/rest/api/3/project/{project}"))
            .await
        {
            Ok(_) => Finding::ok(
                None,
                format!("signed in as {who}, project {project} visible"),
            ),
            Err(f) if f.detail.starts_with("404") => Finding::failed(
                format!("signed in as {who}, but project {project} is not visible"),
                "check `project` and the account's Browse Projects permission",
            ),
            Err(f) => f,
        }
    })]
}

pub fn servicenow(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(n) = config.integrations.servicenow.clone() else {
        return vec![Planned::absent("servicenow")];
    };
    let config = config.clone();
    vec![Planned::run("servicenow", async move {
        let auth = Auth::Basic {
            username: n.username.clone(),
            password_env: n.password.clone(),
        };
        let target = Target::new("servicenow", &n.url, n.timeout_secs)
            .with_field("integrations.servicenow.password")
            .with_header("Accept", "application/json");
        let reach = match Reach::new(&config, target, Some(&auth)).await {
            Ok(r) => r,
            Err(f) => return f,
        };
        match reach
            .get_json_with("/api/now/table/sys_user", &[("sysparm_limit", "1")])
            .await
        {
            Ok(_) => Finding::ok(
                None,
                match reach.reference_note() {
                    Some(note) => format!("signed in as {}; {note}", n.username),
                    None => format!("signed in as {}", n.username),
                },
            ),
            Err(mut f) => {
                if f.detail.starts_with("401") {
                    f.fix = Some(format!(
                        "ServiceNow refused {}: check `username` and `password`",
                        n.username
                    ));
                }
                f
            }
        }
    })]
}
