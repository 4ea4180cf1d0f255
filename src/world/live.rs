//! The live world built from config, and the recording one that writes a case as it goes.

use super::builders::{cluster_names, live_transport, mcp_names, with_mcp};
use super::{Mode, World, WorldError, case};
use crate::config::Config;
use crate::integrations::transport::RecordingTransport;
use crate::model::WebhookPayload;
use crate::secrets::Keyring;
use chrono::Utc;
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl World {
    /// The live world: one client per configured integration.
    pub async fn live(config: &Config) -> Result<World, WorldError> {
        let keyring = Arc::new(Keyring::new());
        let (transport, namespace, repo) = live_transport(config, &keyring).await?;
        let transport = with_mcp(config, transport).await;
        let mut world = World::with_transport(transport, Mode::Live, &namespace, repo)
            .with_clusters(cluster_names(config));
        world.mcp_servers = mcp_names(config);
        world.keyring = keyring;
        world.with_tickets(config)
    }

    /// The live world, recording every exchange into `dir` (`sitrep investigate --record DIR`), which then
    /// replays as a case. Writes case.toml (the clock is now) and alert.json when there is a trigger alert.
    pub async fn record(
        config: &Config,
        dir: &Path,
        title: &str,
        alert: Option<&WebhookPayload>,
    ) -> Result<World, WorldError> {
        let keyring = Arc::new(Keyring::new());
        let (live, namespace, repo) = live_transport(config, &keyring).await?;
        // Everything written to the case is masked like a response: it is shared with others.
        let redactor = live.redactor().clone();
        let io = |path: PathBuf| move |source| WorldError::Io { path, source };
        std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
        let now = Utc::now();
        let id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("recorded")
            .to_string();
        let meta = case::CaseMeta {
            id,
            title: redactor.redact(title).into_owned(),
            now,
            difficulty: None,
            source: Some("recorded with sitrep investigate --record".into()),
        };
        let meta_text = toml::to_string(&meta).map_err(|e| WorldError::Config(e.to_string()))?;
        let case_path = dir.join("case.toml");
        std::fs::write(&case_path, meta_text).map_err(io(case_path))?;
        if let Some(alert) = alert {
            let mut alert = alert.clone();
            redactor.redact_payload(&mut alert);
            let text = serde_json::to_string_pretty(&alert)
                .map_err(|e| WorldError::Config(e.to_string()))?;
            let alert_path = dir.join("alert.json");
            std::fs::write(&alert_path, text).map_err(io(alert_path))?;
        }
        let live = with_mcp(config, live).await;
        let recording = RecordingTransport::new(live, dir)
            .map_err(io(dir.join("recordings.ndjson")))?
            .with_redactor(redactor);
        let mut world =
            World::with_transport(Arc::new(recording), Mode::Recording, &namespace, repo)
                .with_clusters(cluster_names(config));
        world.mcp_servers = mcp_names(config);
        world.keyring = keyring;
        world.with_tickets(config)
    }
}
