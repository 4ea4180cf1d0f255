//! Admission: claims (one investigation per alert or group), the queue and its slots, and the
//! answer a delivery gets.

use super::*;

/// How long a delivery waits for the store to confirm a claim it depends on before asking again.
const CONFIRM_WAIT: Duration = Duration::from_secs(10);
/// How long an ended investigation keeps its alerts claimed: a page re-sent within it (an
/// Alertmanager repeat) is a duplicate, one still or again firing after it is investigated anew.
pub(super) const CLAIM_TTL: Duration = Duration::from_secs(6 * 3600);
/// Which alerts (by fingerprint) and groups (by group key) have an investigation, running,
/// queued or finished: a repeated delivery claims nothing new. The inbox's deduper serves here.
pub(super) type Claims = crate::inbox::Deduper;

/// An investigation waiting for a free slot.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) id: String,
    pub(super) path: PathBuf,
    pub(super) title: String,
    pub(super) trigger: Trigger,
}

impl Queued {
    pub(super) fn group_key(&self) -> Option<&str> {
        match &self.trigger {
            Trigger::Alert(p) if !p.group_key.is_empty() => Some(&p.group_key),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Core {
    pub(super) claims: Claims,
    /// Investigations started and not yet finished.
    pub(super) running: usize,
    /// Waiting investigations, started in arrival order.
    pub(super) queue: VecDeque<Queued>,
    /// Group keys and subjects of investigations queued or running, to the session: a related
    /// alert arriving while one runs joins it rather than starting another.
    pub(super) live_groups: HashMap<String, String>,
    /// Subject -> (session, the alert names it investigates there).
    pub(super) live_subjects: HashMap<String, (String, std::collections::BTreeSet<String>)>,
    /// With a store: sessions admitted here whose claim the store has not confirmed yet, each
    /// with what wakes the deliveries waiting on it (dropped once the store answered). A
    /// repeat naming one, or a related alert that would join it, waits for the answer rather
    /// than being told of a session that may not be; unrelated alerts do not wait.
    pub(super) unconfirmed: HashMap<String, tokio::sync::watch::Sender<()>>,
}

impl Core {
    /// The queued or running investigation an alert of this group or subject belongs to.
    pub(super) fn related(&self, group_key: &str, trigger: &Trigger) -> Option<String> {
        if let Some(id) = self
            .live_groups
            .get(group_key)
            .filter(|_| !group_key.is_empty())
        {
            return Some(id.clone());
        }
        // Another rule about the same object is the same incident seen again; the same rule on
        // other labels is one Alertmanager deliberately kept apart (its own group).
        subjects_of(trigger).iter().find_map(|(k, name)| {
            self.live_subjects
                .get(k)
                .filter(|(_, names)| !names.contains(name))
                .map(|(id, _)| id.clone())
        })
    }

    /// Registers what a queued or started investigation is about.
    pub(super) fn live(&mut self, id: &str, group_key: &str, trigger: &Trigger) {
        if !group_key.is_empty() {
            self.live_groups
                .insert(group_key.to_string(), id.to_string());
        }
        for (k, name) in subjects_of(trigger) {
            let slot = self
                .live_subjects
                .entry(k)
                .or_insert_with(|| (id.to_string(), Default::default()));
            if slot.0 == id {
                slot.1.insert(name);
            }
        }
    }

    /// An admission withdrawn before it was recorded: its group and subjects are free.
    pub(super) fn unlive(&mut self, id: &str) {
        self.live_groups.retain(|_, s| s != id);
        self.live_subjects.retain(|_, (s, _)| s != id);
    }

    /// An investigation ended: its group and subjects are free, its claims start to age.
    pub(super) fn ended(&mut self, id: &str) {
        self.live_groups.retain(|_, s| s != id);
        self.live_subjects.retain(|_, (s, _)| s != id);
        self.claims.finish(id, Instant::now());
    }
}

/// What an alert is about, as a key shared by alerts of the same object: an RDS instance, a
/// workload in its namespace, or a node. Pods are left out: their names change with every restart.
pub(super) fn subject_of(a: &crate::model::Alert) -> Option<String> {
    let get = |k: &str| {
        a.labels
            .get(k)
            .or_else(|| a.annotations.get(k))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    };
    if let Some((_, id)) = crate::reason::cloud::instance_label(a) {
        return Some(format!("rds/{id}"));
    }
    let ns = get("namespace").unwrap_or("");
    for k in [
        "deployment",
        "statefulset",
        "daemonset",
        "job_name",
        "cronjob",
        "service",
    ] {
        if let Some(v) = get(k) {
            return Some(format!("{ns}/{k}/{v}"));
        }
    }
    get("node").map(|n| format!("node/{n}"))
}

/// The subjects of a trigger's alerts, each with the alert's name.
pub(super) fn subjects_of(trigger: &Trigger) -> Vec<(String, String)> {
    match trigger {
        Trigger::Alert(p) => {
            let mut out: Vec<(String, String)> = p
                .alerts
                .iter()
                .filter_map(|a| subject_of(a).map(|s| (s, a.name().to_string())))
                .collect();
            out.sort();
            out.dedup();
            out
        }
        Trigger::Problem(_) => Vec::new(),
    }
}

/// What admission decided for a delivery's new alerts.
pub(super) enum Admit {
    Duplicate(String),
    /// It depends on a session whose claim the store has not confirmed yet: ask again once
    /// this changes (or closes).
    Pending(tokio::sync::watch::Receiver<()>),
    Start(Box<Queued>),
    Queued(String),
    Joined(String),
    /// Joined an investigation already running: it is told which alerts joined.
    JoinedRunning(String, String),
    Full,
    Draining,
}

/// Claims `fingerprints` for a new investigation of `trigger` and admits it: started now when a
/// slot is free, queued when not, joined to a queued investigation of the same group, or refused
/// when the queue is full. One short lock, no I/O; the journal line follows outside it.
pub(super) fn admit(
    state: &AppState,
    group_key: &str,
    fingerprints: &[String],
    make: &impl Fn(&[String]) -> (String, Trigger),
) -> (Admit, Vec<String>, JournalEntry) {
    let none = JournalEntry::default;
    if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
        return (Admit::Draining, Vec::new(), none());
    }
    let mut core = lock(&state.core);
    core.claims.expire(Instant::now(), CLAIM_TTL);
    let pending = |core: &Core, id: &str| {
        core.unconfirmed
            .get(id)
            .map(|wake| (Admit::Pending(wake.subscribe()), Vec::new(), none()))
    };
    let new = match core.claims.check(group_key, fingerprints) {
        Claim::Known(session) => {
            return pending(&core, &session)
                .unwrap_or_else(|| (Admit::Duplicate(session), Vec::new(), none()));
        }
        Claim::New(new) => new,
    };
    let claimed = if new.is_empty() {
        fingerprints.to_vec()
    } else {
        new.clone()
    };
    let (title, trigger) = make(&new);
    let related = core.related(group_key, &trigger);
    let queued_group = core
        .queue
        .iter()
        .find(|q| !group_key.is_empty() && q.group_key() == Some(group_key))
        .map(|q| q.id.clone());
    if let Some(waiting) = related
        .iter()
        .chain(queued_group.iter())
        .find_map(|id| pending(&core, id))
    {
        return waiting;
    }
    // Related alerts (same group, same subject) arriving together join the investigation still
    // waiting for them, or the one running.
    if let Some(id) = &related
        && !core.queue.iter().any(|q| q.id == *id)
    {
        let entry = entry_for(id, group_key, &claimed, &title, &trigger, true);
        core.claims.record(group_key, &claimed, id);
        return (Admit::JoinedRunning(id.clone(), title), claimed, entry);
    }
    if let Some(q) = core.queue.iter_mut().find(|q| {
        (!group_key.is_empty() && q.group_key() == Some(group_key))
            || related.as_deref() == Some(q.id.as_str())
    }) {
        if let (Trigger::Alert(base), Trigger::Alert(more)) = (&mut q.trigger, &trigger) {
            base.alerts.extend(more.alerts.iter().cloned());
        }
        let id = q.id.clone();
        let entry = entry_for(&id, group_key, &claimed, &q.title, &trigger, true);
        core.claims.record(group_key, &claimed, &id);
        return (Admit::Joined(id), claimed, entry);
    }
    if core.running >= state.limits.max_concurrent && core.queue.len() >= state.limits.queue {
        return (Admit::Full, Vec::new(), none());
    }
    let path = session::unique_session_path_in(&state.sessions_dir, chrono::Utc::now(), &title);
    let id = session_id(&path);
    let entry = entry_for(&id, group_key, &claimed, &title, &trigger, false);
    core.claims.record(group_key, &claimed, &id);
    core.live(&id, group_key, &trigger);
    if state.store.is_some() {
        core.unconfirmed
            .insert(id.clone(), tokio::sync::watch::channel(()).0);
    }
    // A free slot goes to the longest waiting first: arrival order.
    if core.running < state.limits.max_concurrent && core.queue.is_empty() {
        core.running += 1;
        let admit = Admit::Start(Box::new(Queued {
            id,
            path,
            title,
            trigger,
        }));
        (admit, claimed, entry)
    } else {
        core.queue.push_back(Queued {
            id: id.clone(),
            path,
            title,
            trigger,
        });
        (Admit::Queued(id), claimed, entry)
    }
}

/// Undoes an admission the journal could not record.
pub(super) fn unadmit(state: &AppState, admit: &Admit, claimed: &[String]) {
    let mut core = lock(&state.core);
    match admit {
        Admit::Start(q) => {
            core.claims.forget(&q.id, None);
            core.running = core.running.saturating_sub(1);
        }
        Admit::Queued(id) => {
            core.claims.forget(id, None);
            core.queue.retain(|q| q.id != *id);
        }
        Admit::JoinedRunning(id, _) => core.claims.forget(id, Some(claimed)),
        Admit::Joined(id) => {
            core.claims.forget(id, Some(claimed));
            if let Some(q) = core.queue.iter_mut().find(|q| q.id == *id)
                && let Trigger::Alert(p) = &mut q.trigger
            {
                p.alerts
                    .retain(|a| !claimed.contains(&alert_fingerprint(a)));
            }
        }
        _ => {}
    }
}

/// Admits a new investigation, records it in the journal and starts it (or leaves it queued);
/// the answer to the delivery.
pub(super) async fn investigate(
    state: &AppState,
    group_key: &str,
    fingerprints: &[String],
    make: impl Fn(&[String]) -> (String, Trigger),
) -> Response {
    // Only a delivery that depends on a claim the store has not confirmed yet waits (for that
    // claim alone); every other is admitted at once, and claims in the store run side by side.
    let (admitted, claimed, entry) = loop {
        match admit(state, group_key, fingerprints, &make) {
            (Admit::Pending(mut confirmed), ..) => {
                let _ = tokio::time::timeout(CONFIRM_WAIT, confirmed.changed()).await;
            }
            decided => break decided,
        }
    };
    match &admitted {
        Admit::Duplicate(session) => {
            return (
                StatusCode::OK,
                axum::Json(json!({"started": false, "duplicate": true, "session": session})),
            )
                .into_response();
        }
        Admit::Draining => {
            return unavailable("the server is shutting down".into(), true);
        }
        Admit::Full => {
            return unavailable(
                format!(
                    "{} investigations running and {} waiting, the most this server takes \
                     ([serve] max_concurrent, queue): retry later",
                    state.limits.max_concurrent, state.limits.queue
                ),
                true,
            );
        }
        _ => {}
    }
    // Once admitted, the claim is settled to the end on a task of its own, whatever becomes of
    // this request (a sender that hangs up must not leave a claim unconfirmed for good).
    let state = state.clone();
    let settle = tokio::spawn(async move {
        if let Some(store) = state.store.clone()
            && let Some(answer) = claim_in_store(&state, &store, &admitted, &claimed, &entry).await
        {
            return answer;
        }
        off_thread(move || record_and_start(&state, admitted, claimed, entry))
            .await
            .unwrap_or_else(|r| r)
    });
    settle.await.unwrap_or_else(|e| {
        if e.is_panic() {
            std::panic::resume_unwind(e.into_panic());
        }
        unavailable("the server is shutting down".into(), true)
    })
}

/// Takes the claim this replica admitted in the shared store too, where every replica's claims
/// meet: `None` when the investigation goes ahead here, else the delivery's answer (a duplicate
/// of, or joined to, another replica's session; or 503 when the store cannot record it).
async fn claim_in_store(
    state: &AppState,
    store: &store::Store,
    admitted: &Admit,
    claimed: &[String],
    entry: &JournalEntry,
) -> Option<Response> {
    match admitted {
        Admit::Start(_) | Admit::Queued(_) => {}
        Admit::Joined(id) | Admit::JoinedRunning(id, _) => {
            match store.join(id, claimed).await {
                Ok(None) => {}
                // Another replica claimed them already: a duplicate of what they joined there.
                Ok(Some(owner)) => {
                    unadmit(state, admitted, claimed);
                    let runs_here = lock(&state.sessions).contains_key(&owner);
                    {
                        let mut core = lock(&state.core);
                        core.claims.record(&entry.group_key, claimed, &owner);
                        if !runs_here {
                            core.claims.finish(&owner, Instant::now());
                        }
                    }
                    return Some(
                        (
                            StatusCode::OK,
                            axum::Json(
                                json!({"started": false, "duplicate": true, "session": owner}),
                            ),
                        )
                            .into_response(),
                    );
                }
                Err(e) => {
                    tracing::warn!("cannot record joined alerts of {id} in the store: {e}")
                }
            }
            return None;
        }
        _ => return None,
    }
    let trigger = serde_json::to_string(entry).unwrap_or_default();
    let subjects = entry.trigger().map(|t| subjects_of(&t)).unwrap_or_default();
    let found = store
        .claim(
            &entry.session,
            &entry.title,
            &entry.group_key,
            claimed,
            &subjects,
            &trigger,
            CLAIM_TTL,
        )
        .await;
    let other = match found {
        Ok(store::Claimed::New) => {
            lock(&state.core).unconfirmed.remove(&entry.session);
            return None;
        }
        Ok(store::Claimed::Known(s)) => (s, false),
        Ok(store::Claimed::Joined(s)) => (s, true),
        Err(e) => {
            unadmit(state, admitted, claimed);
            {
                let mut core = lock(&state.core);
                core.unlive(&entry.session);
                core.unconfirmed.remove(&entry.session);
            }
            return Some(unavailable(
                format!("cannot record the claim in the store: {e}; not accepted"),
                true,
            ));
        }
    };
    unadmit(state, admitted, claimed);
    {
        // Known here from now on: a repeat is answered without the store; the claim ages as
        // an ended session's does (the store stays the judge once it has).
        let mut core = lock(&state.core);
        core.unlive(&entry.session);
        core.claims.record(&entry.group_key, claimed, &other.0);
        core.claims.finish(&other.0, Instant::now());
        core.unconfirmed.remove(&entry.session);
    }
    let (session, joined) = other;
    if joined {
        tell_joined(state, store, &session, claimed.len(), &entry.title).await;
    }
    Some(if joined {
        (
            StatusCode::ACCEPTED,
            axum::Json(
                json!({"started": false, "joined": true, "session": session, "alerts": claimed.len()}),
            ),
        )
            .into_response()
    } else {
        (
            StatusCode::OK,
            axum::Json(json!({"started": false, "duplicate": true, "session": session})),
        )
            .into_response()
    })
}

/// Tells the running investigation `session` (here, or on the replica the store says runs it)
/// that related alerts joined it: it hears of it on its timeline.
async fn tell_joined(
    state: &AppState,
    store: &store::Store,
    session: &str,
    alerts: usize,
    title: &str,
) {
    let message = format!("{alerts} related alert(s) joined this investigation: {title}");
    let here = lock(&state.sessions).get(session).map(|r| {
        let _ = r.commands.send(Command::Warning {
            message: message.clone(),
        });
    });
    if here.is_some() {
        return;
    }
    let relayed = Attributed {
        decider: Decider {
            name: "sitrep serve".into(),
            via: format!("replica {}", store.replica),
        },
        command: Command::Warning { message },
    };
    if let Err(e) = store.post_decision(session, &relayed).await {
        tracing::warn!("cannot tell {session} that related alerts joined it: {e}");
    }
}

/// The part of [`investigate`] that writes: the journal line, then the start.
pub(super) fn record_and_start(
    state: &AppState,
    admitted: Admit,
    claimed: Vec<String>,
    entry: JournalEntry,
) -> Response {
    if let Err(e) = journal_append(&state.sessions_dir, &entry) {
        unadmit(state, &admitted, &claimed);
        return unavailable(
            format!(
                "cannot record the alert in {}: {e}; not accepted",
                state.sessions_dir.display()
            ),
            true,
        );
    }
    match admitted {
        Admit::Start(q) => {
            let Queued {
                id,
                path,
                title,
                trigger,
            } = *q;
            match start(state, &id, path, &title, trigger) {
                Ok(()) => (
                    StatusCode::ACCEPTED,
                    axum::Json(json!({"started": true, "session": id, "alerts": claimed.len()})),
                )
                    .into_response(),
                Err(e) => {
                    {
                        let mut core = lock(&state.core);
                        core.claims.forget(&id, None);
                        core.running = core.running.saturating_sub(1);
                    }
                    forget_in_store(state, &id);
                    let _ = journal_append(
                        &state.sessions_dir,
                        &JournalEntry {
                            session: id,
                            forget: true,
                            ..JournalEntry::default()
                        },
                    );
                    pump(state);
                    error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("cannot start the investigation: {e:#}"),
                    )
                }
            }
        }
        Admit::Queued(id) => {
            // A slot may have freed since: the queue's head takes it.
            pump(state);
            let queued = lock(&state.core).queue.iter().any(|q| q.id == id);
            (
                StatusCode::ACCEPTED,
                axum::Json(
                    json!({"started": true, "queued": queued, "session": id, "alerts": claimed.len()}),
                ),
            )
                .into_response()
        }
        Admit::Joined(id) => (
            StatusCode::ACCEPTED,
            axum::Json(
                json!({"started": false, "joined": true, "session": id, "alerts": claimed.len()}),
            ),
        )
            .into_response(),
        Admit::JoinedRunning(id, title) => {
            // The running investigation hears of it on its timeline.
            if let Some(r) = lock(&state.sessions).get(&id) {
                let _ = r.commands.send(Command::Warning {
                    message: format!(
                        "{} related alert(s) joined this investigation: {title}",
                        claimed.len()
                    ),
                });
            }
            (
                StatusCode::ACCEPTED,
                axum::Json(
                    json!({"started": false, "joined": true, "session": id, "alerts": claimed.len()}),
                ),
            )
                .into_response()
        }
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "unreachable admission"),
    }
}

pub(super) fn entry_for(
    id: &str,
    group_key: &str,
    claimed: &[String],
    title: &str,
    trigger: &Trigger,
    join: bool,
) -> JournalEntry {
    let (payload, problem) = match trigger {
        Trigger::Alert(p) => (Some(p.clone()), None),
        Trigger::Problem(t) => (None, Some(t.clone())),
    };
    JournalEntry {
        session: id.to_string(),
        group_key: group_key.to_string(),
        fingerprints: claimed.to_vec(),
        title: title.to_string(),
        payload,
        problem,
        join,
        forget: false,
    }
}

/// Starts queued investigations while slots are free (not once shutdown began).
pub(super) fn pump(state: &AppState) {
    loop {
        if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let next = {
            let mut core = lock(&state.core);
            if core.running >= state.limits.max_concurrent {
                return;
            }
            // A session whose claim the store has not confirmed waits (it may be a duplicate).
            let Some(q) = core
                .queue
                .iter()
                .position(|q| !core.unconfirmed.contains_key(&q.id))
                .and_then(|at| core.queue.remove(at))
            else {
                return;
            };
            core.running += 1;
            q
        };
        if let Err(e) = start(state, &next.id, next.path, &next.title, next.trigger) {
            tracing::warn!("cannot start queued investigation {}: {e:#}", next.id);
            {
                let mut core = lock(&state.core);
                core.claims.forget(&next.id, None);
                core.running = core.running.saturating_sub(1);
            }
            forget_in_store(state, &next.id);
            let _ = journal_append(
                &state.sessions_dir,
                &JournalEntry {
                    session: next.id,
                    forget: true,
                    ..JournalEntry::default()
                },
            );
        }
    }
}

pub(super) fn session_id(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(super) fn alert_fingerprint(a: &crate::model::Alert) -> String {
    if a.fingerprint.is_empty() {
        inbox::fingerprint(&a.labels)
    } else {
        a.fingerprint.clone()
    }
}

/// Claims the firing alerts of `payload` and starts one investigation for the new ones.
pub(super) async fn investigate_payload(state: &AppState, mut payload: WebhookPayload) -> Response {
    payload.alerts.retain(|a| a.status == AlertStatus::Firing);
    if payload.alerts.is_empty() {
        return (
            StatusCode::OK,
            axum::Json(json!({"started": false, "reason": "no firing alerts"})),
        )
            .into_response();
    }
    let fingerprints: Vec<String> = payload.alerts.iter().map(alert_fingerprint).collect();
    let group_key = payload.group_key.clone();
    investigate(state, &group_key, &fingerprints, move |new| {
        let mut payload = payload.clone();
        if !new.is_empty() {
            payload
                .alerts
                .retain(|a| new.contains(&alert_fingerprint(a)));
        }
        (payload.primary().title(), Trigger::Alert(payload))
    })
    .await
}

/// Withdraws a claim from the store in the background (called off the async threads).
fn forget_in_store(state: &AppState, id: &str) {
    if let (Some(store), Ok(rt)) = (state.store.clone(), tokio::runtime::Handle::try_current()) {
        let id = id.to_string();
        rt.spawn(async move {
            if let Err(e) = store.forget(&id).await {
                tracing::warn!("cannot withdraw the claim of {id} from the store: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn about(name: &str, labels: &[(&str, &str)]) -> Trigger {
        let mut l: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.insert("alertname".into(), name.into());
        Trigger::Alert(WebhookPayload {
            alerts: vec![crate::model::Alert {
                labels: l,
                ..crate::model::Alert::default()
            }],
            ..WebhookPayload::default()
        })
    }

    #[test]
    fn another_rule_on_the_same_subject_joins_and_the_same_rule_elsewhere_does_not() {
        let checkout = [("namespace", "shop"), ("deployment", "checkout")];
        let mut core = Core::default();
        core.live("s1", "g1", &about("KubePodCrashLooping", &checkout));
        // Another rule about the same deployment, in another group: the same incident.
        let mismatch = about("KubeDeploymentReplicasMismatch", &checkout);
        assert_eq!(core.related("g2", &mismatch).as_deref(), Some("s1"));
        // The same rule on the same deployment but another group: kept apart, as Alertmanager did.
        let again = about("KubePodCrashLooping", &checkout);
        assert_eq!(core.related("g3", &again), None);
        // Its own group joins, whatever the alert.
        assert_eq!(core.related("g1", &again).as_deref(), Some("s1"));
        // Another deployment, or the same name in another namespace, is another subject.
        let other = about(
            "KubeDeploymentReplicasMismatch",
            &[("namespace", "shop"), ("deployment", "cart")],
        );
        assert_eq!(core.related("g4", &other), None);
        let elsewhere = about(
            "KubeDeploymentReplicasMismatch",
            &[("namespace", "ops"), ("deployment", "checkout")],
        );
        assert_eq!(core.related("g5", &elsewhere), None);
        // An RDS instance, named in any convention, is one subject.
        core.live(
            "s2",
            "g6",
            &about(
                "RDSCPUUtilizationHigh",
                &[("DBInstanceIdentifier", "orders-db")],
            ),
        );
        let conns = about(
            "RDSDatabaseConnectionsHigh",
            &[("db_instance_identifier", "orders-db")],
        );
        assert_eq!(core.related("g7", &conns).as_deref(), Some("s2"));
        // Once it ended, nothing joins it.
        core.ended("s1");
        assert_eq!(core.related("g2", &mismatch), None);
        assert_eq!(core.related("g1", &again), None);
    }

    #[test]
    fn claims_are_exact_and_can_be_withdrawn() {
        let mut c = Claims::default();
        let fps = vec!["a".to_string(), "b".to_string()];
        assert_eq!(c.check("g", &fps), Claim::New(fps.clone()));
        c.record("g", &fps, "s1");
        assert_eq!(c.check("g", &fps), Claim::Known("s1".into()));
        c.forget("s1", Some(&["b".to_string()]));
        assert_eq!(c.check("g", &fps), Claim::New(vec!["b".into()]));
        c.forget("s1", None);
        assert_eq!(c.check("g", &[]), Claim::New(vec![]));
    }
}
