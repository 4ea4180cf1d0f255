//! Distractors: what else a world holds to mislead a diagnosis that matches names, trusts the
//! loudest failure, or needs every endpoint to answer.

use super::alerts::LabelStyle;
use super::classes::lines;
use super::k8s::{self, Ev, NodeHealth, minutes, seconds, suffix};
use super::workload::{PodState, Revision, Style, Workload};
use super::{Class, Ctx, Distractor, Integrations, Kind, LogBody, PodLog, Scenario};
use chrono::Duration;

const LEGACY: [&str; 4] = ["storefront", "webshop", "frontdoor", "backoffice"];
const ONE_OFF: [&str; 3] = ["debug", "oneoff", "manual"];

/// Before the class builds the world: the labels and names the subject is built with.
pub fn prepare(ctx: &mut Ctx) {
    match ctx.combo.distractor {
        Distractor::Labels => {
            ctx.style = Style::Recommended;
            ctx.alert_style = [
                LabelStyle::Datadog,
                LabelStyle::Workload,
                LabelStyle::PodOnly,
            ][ctx.pick("label-style", 3)];
        }
        Distractor::Naming => match ctx.kind() {
            Kind::Deployment => {
                ctx.adopted_from = Some(LEGACY[ctx.pick("legacy", LEGACY.len())].to_string());
            }
            Kind::Pod => {
                ctx.pod_name = Some(format!(
                    "{}-{}",
                    ONE_OFF[ctx.pick("oneoff", ONE_OFF.len())],
                    suffix(&ctx.name, 5)
                ));
            }
            _ => {}
        },
        _ => {}
    }
}

/// After the class built the world: what the distractor adds or takes away.
pub fn apply(ctx: &Ctx, s: &mut Scenario) {
    match ctx.combo.distractor {
        Distractor::Neighbour => neighbour(ctx, s),
        Distractor::StaleEvents => stale_events(ctx, s),
        Distractor::MissingEndpoint => missing_endpoint(ctx, s),
        _ => {}
    }
}

/// Another Deployment in the namespace, broken differently: a rollout to a tag that does not
/// exist (or, when the subject's own failure is an image pull, a crash loop), with its Warning
/// events. Half the time its name starts with the subject's (`checkout-worker`).
fn neighbour(ctx: &Ctx, s: &mut Scenario) {
    let now = ctx.now;
    let ns = ctx.ns.as_str();
    let name = if ctx.pick("nb-name", 2) == 0 {
        format!("{}-worker", ctx.name)
    } else {
        "mailer".to_string()
    };
    let crash = ctx.combo.class == Class::ImagePull;
    let repo = format!("registry.example.com/{ns}/{name}");
    let (new_image, detail) = if crash {
        (format!("{repo}:2.0.0"), "nil map")
    } else {
        (format!("{repo}:2.14.0-rc3"), "2.14.0-rc3")
    };
    let rolled = now - minutes(50);
    let mut w = Workload::new(
        Kind::Deployment,
        ns,
        &name,
        vec![
            Revision::new(&new_image, rolled, 5),
            Revision::new(&format!("{repo}:1.9.4"), now - Duration::days(9), 4),
        ],
        now,
    );
    w.replicas = 2;
    // On nodes that answer: a node that stopped reporting sends no fresh events or states.
    let up: Vec<usize> = (0..s.nodes.len())
        .filter(|&n| !matches!(s.nodes[n], NodeHealth::Lost(_)))
        .collect();
    let on = |k: usize| up[k % up.len()];
    let since = now - Duration::days(9) + minutes(1);
    w.pods.push(PodState::healthy(1, on(0), since));
    w.pods.push(PodState::healthy(1, on(1), since));
    w.pods.push(PodState::failing(
        0,
        on(2),
        rolled + seconds(2),
        k8s::waiting("ContainerCreating", None),
    ));
    let i = 2;
    let pod = w.pod_name(i);
    let first = rolled + seconds(4);
    let mut events: Vec<(String, String, u32, bool)> = Vec::new();
    let (current, previous) = if crash {
        let msg = w.backoff_message(i);
        let started = now - seconds(200);
        let p = &mut w.pods[i];
        p.phase = "Running";
        p.restarts = 11;
        p.state = k8s::waiting("CrashLoopBackOff", Some(&msg));
        p.last_state = k8s::terminated("Error", 2, started, started + seconds(2), None);
        events.push((
            "BackOff".into(),
            format!(
                "Back-off restarting failed container {name} in pod {pod}_{ns}({})",
                w.pod_uid(i)
            ),
            44,
            true,
        ));
        let out = LogBody::Lines(lines(
            started,
            &[
                "panic: assignment to entry in nil map".to_string(),
                "goroutine 1 [running]:".to_string(),
                "main.registerHandlers(...)".to_string(),
                format!("\t/src/cmd/{name}/main.go:61 +0x1b4"),
            ],
        ));
        (out.clone(), out)
    } else {
        let p = &mut w.pods[i];
        p.phase = "Pending";
        p.pulled = false;
        p.state = k8s::waiting(
            "ImagePullBackOff",
            Some(&format!("Back-off pulling image \"{new_image}\"")),
        );
        let err = format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{new_image}\": failed to resolve reference \"{new_image}\": {new_image}: not found"
        );
        events.push((
            "Failed".into(),
            format!("Failed to pull image \"{new_image}\": {err}"),
            14,
            true,
        ));
        events.push(("Failed".into(), "Error: ErrImagePull".into(), 14, true));
        events.push((
            "BackOff".into(),
            format!("Back-off pulling image \"{new_image}\""),
            201,
            false,
        ));
        events.push(("Failed".into(), "Error: ImagePullBackOff".into(), 201, true));
        (
            LogBody::Error(
                400,
                format!(
                    "container \"{name}\" in pod \"{pod}\" is waiting to start: trying and failing to pull image"
                ),
            ),
            LogBody::Error(
                400,
                format!("previous terminated container \"{name}\" in pod \"{pod}\" not found"),
            ),
        )
    };
    for (reason, message, count, warning) in &events {
        s.events.push(
            Ev {
                ns,
                kind: "Pod",
                name: &pod,
                reason,
                message,
                first,
                last: now - seconds(25),
                count: *count,
                warning: *warning,
                component: "kubelet",
            }
            .json(),
        );
    }
    let rs = w.rs_name(0);
    s.events.push(
        Ev {
            ns,
            kind: "Deployment",
            name: &name,
            reason: "ScalingReplicaSet",
            message: &format!("Scaled up replica set {rs} from 0 to 1"),
            first: rolled,
            last: rolled,
            count: 1,
            warning: false,
            component: "deployment-controller",
        }
        .json(),
    );
    s.logs.push(PodLog {
        pod,
        app: name.clone(),
        container: name.clone(),
        current,
        previous,
    });
    for j in 0..2 {
        s.logs.push(PodLog {
            pod: w.pod_name(j),
            app: name.clone(),
            container: name.clone(),
            current: LogBody::Lines(super::classes::serving(now, &name)),
            previous: LogBody::Error(
                400,
                format!(
                    "previous terminated container \"{name}\" in pod \"{}\" not found",
                    w.pod_name(j)
                ),
            ),
        });
    }
    s.verdict_forbidden.push(name);
    s.verdict_forbidden.push(detail.to_string());
    s.others.push(w);
}

/// Warning events from two hours ago about the subject's pods of then (gone, or fine since).
fn stale_events(ctx: &Ctx, s: &mut Scenario) {
    let now = ctx.now;
    let w = &s.subject;
    let ns = ctx.ns.as_str();
    let old = |i: usize| suffix(&format!("{ns}/{}/stale/{i}", w.name), 5);
    let pods: Vec<String> = match w.kind {
        Kind::Deployment => {
            let rs = format!("{}-{}", w.name, suffix(&format!("{}/stale-rs", w.name), 10));
            (0..2).map(|i| format!("{rs}-{}", old(i))).collect()
        }
        Kind::StatefulSet => vec![format!("{}-1", w.name)],
        Kind::DaemonSet | Kind::Job => (0..2).map(|i| format!("{}-{}", w.name, old(i))).collect(),
        Kind::CronJob => {
            let job = format!("{}-{}", w.name, (now - Duration::hours(2)).timestamp() / 60);
            vec![format!("{job}-{}", old(0))]
        }
        Kind::Pod => vec![w.pod_name(0)],
    };
    let (end, start) = (
        now - Duration::hours(2),
        now - Duration::hours(2) - minutes(15),
    );
    let config = format!("{}-config", w.name);
    for p in &pods {
        let pod_uid = k8s::uid(&format!("pod/{ns}/{p}"));
        let items = [
            (
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {p}_{ns}({pod_uid})",
                    w.container
                ),
                14,
            ),
            (
                "Unhealthy",
                "Liveness probe failed: HTTP probe failed with statuscode: 500".to_string(),
                31,
            ),
            (
                "FailedMount",
                format!(
                    "MountVolume.SetUp failed for volume \"config\" : configmap \"{config}\" not found"
                ),
                6,
            ),
        ];
        for (reason, message, count) in &items {
            s.events.push(
                Ev {
                    ns,
                    kind: "Pod",
                    name: p,
                    reason,
                    message,
                    first: start - minutes(5),
                    last: end,
                    count: *count,
                    warning: true,
                    component: "kubelet",
                }
                .json(),
            );
        }
    }
    s.verdict_forbidden.push(config);
    s.verdict_forbidden.push("statuscode: 500".into());
}

/// A read that fails or has no recording, never the one the class's decisive evidence comes
/// from: the ReplicaSet list answers 403, the StatefulSet/DaemonSet/Job/CronJob lists are not
/// recorded, or Loki answers 503.
fn missing_endpoint(ctx: &Ctx, s: &mut Scenario) {
    let class = ctx.combo.class;
    let kind = ctx.kind();
    let mut options: Vec<fn(&mut Scenario)> = Vec::new();
    if !(class == Class::CrashAfterRelease && kind == Kind::Deployment) {
        options.push(|s| s.faults.replicasets_forbidden = true);
    }
    let lists_decisive = class == Class::CrashAfterRelease
        || (kind.is_batch() && matches!(class, Class::JobScriptError | Class::DnsUnresolvable));
    if !lists_decisive {
        options.push(|s| s.faults.no_workload_lists = true);
    }
    if ctx.combo.integrations == Integrations::KL {
        options.push(|s| s.faults.loki_down = true);
    }
    if !options.is_empty() {
        options[ctx.pick("fault", options.len())](s);
    }
}
