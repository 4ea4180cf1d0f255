//! Where a world files tickets: Jira and ServiceNow as configured, live even in a replay.

use super::builders::endpoint;
use super::{TicketSink, World, WorldError};
use crate::config::Config;
use crate::integrations::transport::{LazyAuth, LiveTransport, Transport};
use crate::integrations::{JiraClient, ServiceNowClient};
use crate::model::catalog;
use crate::secrets::SecretRef;
use serde_json::Value;
use std::sync::Arc;

impl World {
    /// Files tickets where the configuration says (`[integrations.jira]`,
    /// `[integrations.servicenow]`), over HTTP whatever the rest of the world is: a replayed case
    /// is investigated again, but its ticket is a real one. Each credential is registered with
    /// the world's keyring and read only once the operator approves it.
    pub fn with_tickets(mut self, config: &Config) -> Result<World, WorldError> {
        let int = &config.integrations;
        if int.jira.is_none() && int.servicenow.is_none() {
            return Ok(self);
        }
        let mut t = LiveTransport::new()
            .map_err(|e| WorldError::Config(e.to_string()))?
            .with_keyring(self.keyring.clone());
        let mut sinks = Vec::new();
        let text = |s: &str| Value::String(s.to_string());
        let basic = |key: &str, integration: &str, user: &str, secret: &str| {
            let reference =
                SecretRef::parse(secret).map_err(|e| WorldError::Config(format!("{key}: {e}")))?;
            self.keyring.register(integration, &reference);
            Ok::<_, WorldError>(LazyAuth::Basic {
                username: user.to_string(),
                reference: reference.to_string(),
            })
        };
        let jira_auth = match &int.jira {
            Some(j) => Some(basic(
                "integrations.jira.api_token",
                "jira",
                &j.email,
                &j.api_token,
            )?),
            None => None,
        };
        let servicenow_auth = match &int.servicenow {
            Some(n) => Some(basic(
                "integrations.servicenow.password",
                "servicenow",
                &n.username,
                &n.password,
            )?),
            None => None,
        };
        if let (Some(j), Some(auth)) = (&int.jira, jira_auth) {
            let mut ep = endpoint(&j.url, j.timeout_secs, None, Some(auth));
            ep.headers
                .push(("Accept".into(), "application/json".into()));
            t = t.with_endpoint("jira", ep);
            let mut params = catalog::Params::new();
            params.insert("project".into(), text(&j.project));
            params.insert("issue_type".into(), text(&j.issue_type));
            if !j.labels.is_empty() {
                params.insert("labels".into(), text(&j.labels.join(",")));
            }
            sinks.push(TicketSink {
                kind: "jira.create_issue".into(),
                target: format!("project/{}", j.project),
                params,
            });
        }
        if let (Some(n), Some(auth)) = (&int.servicenow, servicenow_auth) {
            let mut ep = endpoint(&n.url, n.timeout_secs, None, Some(auth));
            ep.headers
                .push(("Accept".into(), "application/json".into()));
            t = t.with_endpoint("servicenow", ep);
            let mut params = catalog::Params::new();
            params.insert("category".into(), text(&n.category));
            sinks.push(TicketSink {
                kind: "servicenow.create_incident".into(),
                target: format!("category/{}", n.category),
                params,
            });
        }
        let redactor = t.redactor().and_secrets(
            config
                .secret_values()
                .iter()
                .map(|s| secrecy::ExposeSecret::expose_secret(s).to_string()),
        );
        let t: Arc<dyn Transport> = Arc::new(t);
        let mut jira = JiraClient::new(t.clone()).with_redactor(redactor.clone());
        if let Some(j) = &int.jira {
            jira = jira.with_site(j.url.clone());
        }
        let mut servicenow = ServiceNowClient::new(t.clone()).with_redactor(redactor);
        if let Some(n) = &int.servicenow {
            servicenow = servicenow.with_instance(n.url.clone());
        }
        self.jira = jira;
        self.servicenow = servicenow;
        self.tickets = Some(t);
        self.ticket_sinks = sinks;
        Ok(self)
    }
}
