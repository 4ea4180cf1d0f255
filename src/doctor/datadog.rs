//! The Datadog check: the API key by `GET /api/v1/validate`, the application key by a call that
//! needs it, each named when refused.

use super::credentials::check_reference;
use super::{Finding, Options, Planned, request_timeout};
use crate::config::Config;
use crate::integrations::DatadogClient;
use crate::integrations::transport::{Endpoint, LiveTransport, SecretHeader};
use crate::secrets::SecretRef;
use secrecy::SecretString;
use std::sync::Arc;

pub fn plan(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(d) = config.integrations.datadog.clone() else {
        return vec![Planned::absent("datadog")];
    };
    vec![Planned::run("datadog", async move {
        let url = d.base_url();
        let mut ep = Endpoint::new(url.clone()).timeout(request_timeout(d.timeout_secs));
        let mut unread = Vec::new();
        for (field, header, text) in [
            ("api_key", "DD-API-KEY", &d.api_key),
            ("app_key", "DD-APPLICATION-KEY", &d.app_key),
        ] {
            let key = format!("integrations.datadog.{field}");
            let reference = match SecretRef::parse(text) {
                Ok(r) => r,
                Err(e) => return Finding::failed(e.to_string(), format!("correct {key}")),
            };
            match &reference {
                SecretRef::Env(var) => match std::env::var(var) {
                    Ok(v) if !v.is_empty() => ep.secret_headers.push((
                        header.to_string(),
                        SecretHeader::Value(SecretString::from(v)),
                    )),
                    _ => {
                        return Finding::failed(
                            format!("environment variable {var} (named by {key}) is not set"),
                            format!("export {var} with the Datadog {field} before running sitrep"),
                        );
                    }
                },
                // Doctor never reads a reference: it checks the store is ready.
                other => match check_reference(other).await {
                    Ok(note) => unread.push(format!("{note}, {other} not read")),
                    Err(f) => return f,
                },
            }
        }
        let transport = match LiveTransport::new() {
            Ok(t) => t.with_endpoint("datadog", ep),
            Err(e) => return Finding::failed(e.to_string(), ""),
        };
        let client = DatadogClient::new(Arc::new(transport));
        let check = match client.check_keys().await {
            Ok(c) => c,
            Err(e) => return Finding::from_error(&e, &url),
        };
        if !unread.is_empty() {
            // Without the keys the answers say only that the site is reachable.
            return Finding::ok(None, format!("{url} reachable; {}", unread.join("; ")));
        }
        match (check.api_key, check.app_key) {
            (Ok(()), Ok(())) => Finding::ok(
                None,
                format!("API key valid, application key accepted ({url})"),
            ),
            (Err(why), _) => Finding::failed(
                format!("bad API key: {why}"),
                "set integrations.datadog.api_key to an API key of this site's organisation (Organization Settings > API Keys); check `site`",
            ),
            (Ok(()), Err(why)) => Finding::failed(
                format!("bad application key: {why}"),
                "set integrations.datadog.app_key to an application key with monitors_read, metrics_read, events_read and logs_read_data",
            ),
        }
    })]
}
