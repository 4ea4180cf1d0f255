//! The clients a live world is built from (Kubernetes, PostgreSQL, AWS), made one way for every
//! caller: the world that investigates and `doctor` that checks the same settings.

use super::WorldError;
use crate::config::{Aws, Kubernetes, Postgres};
use crate::integrations::aws::{AwsBackend, AwsSettings};
use crate::integrations::{PostgresBackend, PostgresSettings};
use crate::secrets::Keyring;
use std::sync::Arc;
use std::time::Duration;

/// A kube client from the kubeconfig (file and context as configured) or, with neither given and no
/// kubeconfig found, the in-cluster service account. `timeout` bounds both connecting and each
/// read, so an unreachable API server fails in that time rather than the system's TCP timeout.
pub async fn kube_client(k: &Kubernetes, timeout: Duration) -> Result<kube::Client, WorldError> {
    let options = kube::config::KubeConfigOptions {
        context: k.context.clone(),
        ..Default::default()
    };
    let mut cfg = match &k.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| WorldError::Kube(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| WorldError::Kube(e.to_string()))?
        }
        None if k.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| WorldError::Kube(e.to_string()))?,
        None => kube::Config::infer()
            .await
            .map_err(|e| WorldError::Kube(e.to_string()))?,
    };
    cfg.read_timeout = Some(timeout);
    cfg.connect_timeout = Some(timeout);
    kube::Client::try_from(cfg).map_err(|e| WorldError::Kube(e.to_string()))
}

/// The PostgreSQL backend for `[integrations.postgres]`, with `password` the reference already
/// registered with `keyring` (or none) and `timeout` bounding both connecting and each statement.
pub fn postgres_backend(
    pg: &Postgres,
    password: Option<String>,
    timeout: Duration,
    keyring: Arc<Keyring>,
) -> Result<PostgresBackend, String> {
    PostgresBackend::new(
        PostgresSettings {
            url: pg.url.clone(),
            application_name: pg.application_name.clone(),
            password,
            statement_timeout: timeout,
            connect_timeout: timeout,
        },
        keyring,
    )
}

/// The AWS backend for `[integrations.aws]`; its credential references are registered with
/// `keyring` and read once approved.
pub fn aws_backend(
    a: &Aws,
    timeout: Duration,
    keyring: Arc<Keyring>,
) -> Result<AwsBackend, String> {
    AwsBackend::new(
        AwsSettings {
            region: a.region.clone(),
            endpoint_url: a.endpoint_url.clone(),
            profile: a.profile.clone(),
            access_key_id: a.access_key_id.clone(),
            secret_access_key: a.secret_access_key.clone(),
            session_token: a.session_token.clone(),
            timeout,
        },
        keyring,
    )
}
