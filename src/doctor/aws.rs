//! The AWS check: `sts:GetCallerIdentity` says who the credentials are, then
//! `rds:DescribeDBInstances` whether they may read what the cloud specialist reads.

use super::credentials;
use super::{Finding, Options, Planned, request_timeout};
use crate::config::{Aws, Config};
use crate::secrets::{Decision, Keyring, SecretRef};
use crate::world::clients;
use std::sync::Arc;

pub fn plan(config: &Config, _: &Options) -> Vec<Planned> {
    let Some(a) = config.integrations.aws.clone() else {
        return vec![Planned::absent("aws")];
    };
    vec![Planned::run("aws", async move {
        match check(&a).await {
            Ok(f) | Err(f) => f,
        }
    })]
}

/// The text of the first `<tag>` element of an XML answer.
fn element<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{tag}>"))?;
    Some(xml[start..start + len].trim())
}

async fn check(a: &Aws) -> Result<Finding, Finding> {
    let keyring = Arc::new(Keyring::new());
    // References in the environment are read as every run reads them; a stored key is not read
    // here, only its store checked.
    let mut stored = Vec::new();
    for text in [&a.access_key_id, &a.secret_access_key, &a.session_token]
        .into_iter()
        .flatten()
    {
        if !crate::secrets::is_reference(text) {
            continue;
        }
        let reference = SecretRef::parse(text)
            .map_err(|e| Finding::failed(e.to_string(), "correct [integrations.aws]"))?;
        let note = credentials::check_reference(&reference)
            .await
            .map_err(|mut f| {
                f.detail = format!("{} ({reference})", f.detail);
                f
            })?;
        match reference {
            SecretRef::Env(_) => {
                keyring.register("aws", &reference);
                keyring.decide(&reference.to_string(), Decision::Approved);
            }
            other => stored.push(format!("{note}, {other} not read")),
        }
    }
    if !stored.is_empty() {
        return Ok(Finding::ok(
            None,
            format!("credentials not tried, {}", stored.join("; ")),
        ));
    }
    let timeout = request_timeout(a.timeout_secs);
    let where_ = a
        .endpoint_url
        .clone()
        .unwrap_or_else(|| format!("AWS {}", a.region));
    let backend = clients::aws_backend(a, timeout, keyring)
        .map_err(|e| Finding::failed(e, "correct [integrations.aws]"))?;
    let call = |service: &'static str, version: &'static str, action: &'static str| {
        let backend = &backend;
        let where_ = where_.clone();
        async move {
            let params = vec![("Action".to_string(), action.to_string())];
            match tokio::time::timeout(timeout, backend.signed_query(service, version, &params))
                .await
            {
                Err(_) => Err(Finding::failed(
                    format!("timed out after {}s", timeout.as_secs()),
                    format!("{where_} does not answer: check the network path to it"),
                )),
                Ok(Err(e)) => Err(Finding::from_error(&e, &where_)),
                Ok(Ok(answer)) => Ok(answer),
            }
        }
    };
    let (status, xml) = call("sts", "2011-06-15", "GetCallerIdentity").await?;
    if !(200..300).contains(&status) {
        let code = element(&xml, "Code").unwrap_or("");
        let message = element(&xml, "Message").unwrap_or("");
        return Err(Finding::failed(
            format!("{status} {code}: {message}"),
            "check the access key (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the profile)",
        ));
    }
    let who = element(&xml, "Arn")
        .unwrap_or("an unnamed identity")
        .to_string();
    let (status, xml) = call("rds", "2014-10-31", "DescribeDBInstances").await?;
    if !(200..300).contains(&status) {
        let code = element(&xml, "Code").unwrap_or("");
        return Err(Finding::failed(
            format!("{who} cannot rds:DescribeDBInstances ({status} {code})"),
            "grant rds:Describe*, cloudwatch:GetMetricData and pi:GetResourceMetrics",
        ));
    }
    Ok(Finding::ok(
        None,
        format!("{who}, rds:DescribeDBInstances allowed in {}", a.region),
    ))
}
