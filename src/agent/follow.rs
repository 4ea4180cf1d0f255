//! Following a session another process writes (`sitrep serve`): its file is tailed into the live
//! console, and the operator's decisions go back through the server's API (or, without one, the
//! session's approvals directory, which the investigation watches for high and critical actions).

use crate::model::{Command, Event, Record};
use secrecy::{ExposeSecret, SecretString};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// The `sitrep serve` running the session: where to send decisions.
#[derive(Clone, Debug)]
pub struct Remote {
    /// Base URL, e.g. `http://127.0.0.1:9095`.
    pub url: String,
    pub token: Option<SecretString>,
    /// The session's id in the API (its file name without `.ndjson`).
    pub session_id: String,
}

/// Reads whole new lines of `path` every `poll` and sends them as records (the header line is
/// skipped), until the session's end record or until the receiver goes away. A torn last line waits
/// for the rest; a line that is not a record is reported once as a local warning and skipped.
pub fn tail(path: PathBuf, tx: UnboundedSender<Record>, poll: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut offset = 0u64;
        // Bytes, not text: a read can end in the middle of a multi-byte character.
        let mut pending: Vec<u8> = Vec::new();
        let mut header_seen = false;
        let mut last_t = 0.0;
        loop {
            let chunk = {
                let path = path.clone();
                tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
                    let mut f = std::fs::File::open(&path)?;
                    f.seek(SeekFrom::Start(offset))?;
                    let mut buf = Vec::new();
                    f.read_to_end(&mut buf)?;
                    Ok(buf)
                })
                .await
            };
            match chunk {
                Ok(Ok(bytes)) => {
                    offset += bytes.len() as u64;
                    pending.extend_from_slice(&bytes);
                }
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
                Ok(Err(e)) => {
                    let _ = tx.send(Record {
                        t: last_t,
                        event: Event::Warning {
                            message: format!("cannot read {}: {e}", path.display()),
                        },
                    });
                    return;
                }
                Err(_) => return,
            }
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let raw: Vec<u8> = pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&raw);
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                if !header_seen {
                    header_seen = true;
                    continue;
                }
                let record = match serde_json::from_str::<Record>(line) {
                    Ok(r) => r,
                    Err(e) => Record {
                        t: last_t,
                        event: Event::Warning {
                            message: format!(
                                "skipped a line of {} that is not a record: {e}",
                                path.display()
                            ),
                        },
                    },
                };
                last_t = record.t;
                let ended = matches!(record.event, Event::SessionEnded { .. });
                if tx.send(record).is_err() || ended {
                    return;
                }
            }
            tokio::time::sleep(poll).await;
        }
    })
}

/// Follows a session through the server's API instead of a file (it runs on another replica, or
/// another host): every `poll`, `GET /api/sessions/ID/records?from=N` answers the lines after
/// the N already read (the header first), sent on as records until the session's end. A server
/// that cannot be reached is a local warning, once, and is asked again.
pub fn tail_remote(remote: Remote, tx: UnboundedSender<Record>, poll: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        let mut read = 0usize;
        let mut last_t = 0.0;
        let mut warned = false;
        let url = format!(
            "{}/api/sessions/{}/records",
            remote.url.trim_end_matches('/'),
            remote.session_id
        );
        loop {
            let mut req = http
                .get(&url)
                .query(&[("from", read.to_string())])
                .timeout(Duration::from_secs(10));
            if let Some(t) = &remote.token {
                req = req.bearer_auth(t.expose_secret());
            }
            let text = match req.send().await {
                Ok(resp) if resp.status().is_success() => resp.text().await.ok(),
                Ok(resp) => {
                    if !warned {
                        warned = true;
                        let _ = tx.send(Record {
                            t: last_t,
                            event: Event::Warning {
                                message: format!("{url}: the server answered {}", resp.status()),
                            },
                        });
                    }
                    None
                }
                Err(e) => {
                    if !warned {
                        warned = true;
                        let _ = tx.send(Record {
                            t: last_t,
                            event: Event::Warning {
                                message: format!("cannot reach {}: {e}", remote.url),
                            },
                        });
                    }
                    None
                }
            };
            for line in text.as_deref().unwrap_or("").lines() {
                read += 1;
                // The header is line 0.
                if read == 1 || line.trim().is_empty() {
                    continue;
                }
                let record = match serde_json::from_str::<Record>(line) {
                    Ok(r) => r,
                    Err(e) => Record {
                        t: last_t,
                        event: Event::Warning {
                            message: format!("skipped a line from {url} that is not a record: {e}"),
                        },
                    },
                };
                last_t = record.t;
                let ended = matches!(record.event, Event::SessionEnded { .. });
                if tx.send(record).is_err() || ended {
                    return;
                }
            }
            tokio::time::sleep(poll).await;
        }
    })
}

/// Carries the console's commands to the process running the session. Failures come back to the
/// console as local warnings on `notes`.
pub async fn forward(
    mut commands: UnboundedReceiver<Command>,
    session_path: PathBuf,
    remote: Option<Remote>,
    notes: UnboundedSender<Record>,
) {
    let http = reqwest::Client::new();
    let warn = |message: String| {
        let _ = notes.send(Record {
            t: 0.0,
            event: Event::Warning { message },
        });
    };
    while let Some(cmd) = commands.recv().await {
        let (route, body) = match &cmd {
            Command::Approve {
                action_id, digest, ..
            } => (
                "approve",
                serde_json::json!({"action_id": action_id, "digest": digest}),
            ),
            Command::Deny {
                action_id, reason, ..
            } => (
                "deny",
                serde_json::json!({"action_id": action_id, "reason": reason}),
            ),
            Command::ApproveCredential { reference, .. } => (
                "credentials",
                serde_json::json!({"ref": reference, "approve": true}),
            ),
            Command::DenyCredential {
                reference, reason, ..
            } => (
                "credentials",
                serde_json::json!({"ref": reference, "approve": false, "reason": reason}),
            ),
            // A follower that is stopped leaves the served session running, undecided.
            Command::Interrupt { .. } | Command::Warning { .. } => continue,
            Command::Chat { .. }
            | Command::Note { .. }
            | Command::Cancel
            | Command::PauseVeto { .. } => {
                warn("a followed session takes approvals and denials only".into());
                continue;
            }
        };
        match &remote {
            Some(r) => {
                let mut req = http
                    .post(format!(
                        "{}/api/sessions/{}/{route}",
                        r.url.trim_end_matches('/'),
                        r.session_id
                    ))
                    .json(&body)
                    .timeout(Duration::from_secs(10));
                if let Some(t) = &r.token {
                    req = req.bearer_auth(t.expose_secret());
                }
                match req.send().await {
                    Ok(resp) if resp.status().is_success() => {}
                    Ok(resp) => {
                        let status = resp.status();
                        let text: String = resp.text().await.unwrap_or_default().chars().take(200).collect();
                        warn(format!("the server refused the {route}: {status} {text}"));
                    }
                    Err(e) => warn(format!("cannot reach {}: {e}", r.url)),
                }
            }
            None => match &cmd {
                Command::Approve { action_id, .. } => {
                    let path = session_path.to_string_lossy().into_owned();
                    if let Err(e) = super::approve::submit(&path, action_id) {
                        warn(format!("approval not recorded: {e}"));
                    }
                }
                Command::ApproveCredential { .. } | Command::DenyCredential { .. } => warn(
                    "deciding on a credential of a followed session needs its server: \
                     sitrep follow SESSION --server URL"
                        .into(),
                ),
                _ => warn(
                    "denying a followed session needs its server: sitrep follow SESSION --server URL"
                        .into(),
                ),
            },
        }
    }
}
