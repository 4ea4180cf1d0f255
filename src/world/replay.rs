//! The replaying world: a case loaded from its directory or embedded files, what its recordings
//! name (clusters, MCP servers, the GitHub repository), and how fast it answers.

use super::{DEFAULT_NAMESPACE, Mode, World, WorldError, case};
use crate::integrations::transport::{ReplayTransport, Transport};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

impl World {
    /// Loads a case directory and replays it.
    pub fn from_case_dir(dir: impl AsRef<Path>) -> Result<World, WorldError> {
        let dir = dir.as_ref();
        let files = case::read_dir(dir)?;
        let loaded = case::load(&dir.display().to_string(), &files, Some(dir.to_path_buf()))?;
        Ok(Self::from_loaded(loaded))
    }

    /// Loads a case from (relative path, contents) pairs, e.g. an embedded demo case.
    pub fn from_case_files(name: &str, files: Vec<(String, String)>) -> Result<World, WorldError> {
        let files: BTreeMap<String, String> = files
            .into_iter()
            .map(|(path, text)| {
                // Embedded cases may carry their directory in the path; only the file name matters.
                let file = path.rsplit('/').next().unwrap_or(&path).to_string();
                (file, text)
            })
            .collect();
        let loaded = case::load(name, &files, None)?;
        Ok(Self::from_loaded(loaded))
    }

    fn from_loaded(loaded: case::LoadedCase) -> World {
        let github_repo = recorded_github_repo(&loaded.recordings);
        let mcp_servers = recorded_mcp_servers(&loaded.recordings);
        let clusters = recorded_clusters(&loaded.recordings);
        let replay = Arc::new(ReplayTransport::from_raw(loaded.recordings));
        let namespace = loaded
            .case
            .alert
            .as_ref()
            .and_then(|a| a.primary().label("namespace").map(str::to_string))
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
        let transport: Arc<dyn Transport> = replay.clone();
        let mut world = World::with_transport(transport, Mode::Replay, &namespace, github_repo)
            .with_clusters(clusters);
        world.case = Some(loaded.case);
        world.replay = Some(replay);
        world.overlays = loaded.overlays;
        world.mcp_servers = mcp_servers;
        world
    }

    /// In a replaying world, answer each request after a delay in `min..=max` (see
    /// `ReplayTransport::set_pace`); no effect on a live world.
    pub fn set_pace(&self, min: std::time::Duration, max: std::time::Duration) {
        if let Some(replay) = &self.replay {
            replay.set_pace(min, max);
        }
    }

    /// In a replaying world, count the bytes of every answer too (see [`World::traffic`]).
    pub fn count_traffic(&self) {
        if let Some(replay) = &self.replay {
            replay.count_bytes();
        }
    }

    /// In a replaying world, the requests answered, the bytes counted since
    /// [`World::count_traffic`] and the time counting took; `None` for a live world.
    pub fn traffic(&self) -> Option<(u64, u64, Duration)> {
        self.replay.as_ref().map(|r| r.traffic())
    }

    /// In a replaying world, wait only the latencies the recordings carry (see
    /// `ReplayTransport::pace_recorded_only`); no effect on a live world.
    pub fn pace_recorded_only(&self) {
        if let Some(replay) = &self.replay {
            replay.pace_recorded_only();
        }
    }
}

/// Clusters a case recorded by name (`kubernetes@<cluster>`), in recording order.
fn recorded_clusters(recordings: &[crate::integrations::stored::RawRecording]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in recordings {
        if let Some(name) = r.integration.strip_prefix("kubernetes@")
            && !out.iter().any(|c| c == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// Servers whose tool lists a case recorded (`GET /<server>/tools`), in recording order.
fn recorded_mcp_servers(recordings: &[crate::integrations::stored::RawRecording]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in recordings {
        if r.integration == crate::integrations::mcp::INTEGRATION
            && r.method.eq_ignore_ascii_case("GET")
            && let Some(server) = r.path.trim_start_matches('/').strip_suffix("/tools")
            && !out.iter().any(|s| s == server)
        {
            out.push(server.to_string());
        }
    }
    out
}

/// The repository a recorded case talked to (`/repos/OWNER/NAME/...`), so a replay asks for the
/// same changes the live run did even though the config that named it is not part of the case.
fn recorded_github_repo(
    recordings: &[crate::integrations::stored::RawRecording],
) -> Option<String> {
    recordings
        .iter()
        .filter(|r| r.integration == "github")
        .find_map(|r| {
            let mut parts = r.path.strip_prefix("/repos/")?.split('/');
            let (owner, name) = (parts.next()?, parts.next()?);
            (!owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"))
        })
}
