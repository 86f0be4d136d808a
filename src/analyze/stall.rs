//! Where a chain of reactions stops, and why: stalls found in a [`TraceSnapshot`], each
//! naming the controller that should have reacted and joined with that controller's
//! leader-election Lease. Pure.

use jiff::Timestamp;
use serde::Serialize;

use super::lease::{LeaseSnapshot, LeaseState, renew_age_micros, state};
use super::sequence::{EventSnap, TraceObject, TraceSnapshot};
use crate::age::human_signed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StallKind {
    /// metadata.generation ahead of status.observedGeneration.
    GenerationNotObserved,
    /// Fewer pods than spec.replicas and no pod created for a while.
    ReplicasShort,
    /// A pod with no node.
    Unscheduled,
    /// A pod bound to a node whose kubelet never reported it running.
    NotStarted,
    /// The spec changed after the status was last written (kinds with no observedGeneration).
    StatusNotWritten,
}

/// Where the controller's leader lease is to be found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", tag = "by")]
pub enum LeaseKey {
    /// A lease of known name (kube-system/kube-controller-manager, kube-node-lease/NODE).
    Named { namespace: String, name: String },
    /// A custom controller's lease, found by its field manager's name.
    Manager { manager: String },
}

impl LeaseKey {
    /// kube-system/NAME: kube-controller-manager, kube-scheduler.
    pub fn control_plane(name: &str) -> LeaseKey {
        LeaseKey::Named { namespace: "kube-system".into(), name: name.into() }
    }
}

/// The controller that should react, and the process it runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Responsible {
    /// "the Deployment controller", "the scheduler", "the kubelet on node-1", "manager my-operator".
    pub controller: String,
    /// "kube-controller-manager", "kube-scheduler"; None for a custom status writer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_in: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseKey>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stall {
    /// Index into the snapshot's objects.
    #[serde(skip)]
    pub object: usize,
    pub kind: StallKind,
    /// The kind's stable code (CO5xx).
    pub code: &'static str,
    /// "generation 7 not observed (observed 6)".
    pub what: String,
    /// When the work it waits on was asked for (the spec write, the pod's creation).
    pub since: Option<Timestamp>,
    /// None when the write that asked for the work has no time (a write through /scale
    /// records none): then only a lease that is not fresh confirms the stall.
    pub stalled_seconds: Option<i64>,
    pub responsible: Responsible,
    /// The controller's own word on it, from Events (FailedCreate, FailedScheduling).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Built-in kinds whose controller runs in kube-controller-manager: (group, kind, controller).
const KCM_CONTROLLERS: &[(&str, &str, &str)] = &[
    ("apps", "Deployment", "the Deployment controller"),
    ("apps", "ReplicaSet", "the ReplicaSet controller"),
    ("apps", "StatefulSet", "the StatefulSet controller"),
    ("apps", "DaemonSet", "the DaemonSet controller"),
    ("batch", "Job", "the Job controller"),
    ("batch", "CronJob", "the CronJob controller"),
    ("", "ReplicationController", "the ReplicationController controller"),
];

/// Kinds whose controller writes observedGeneration even on its first status write.
const REPORTS_OBSERVED_GENERATION: &[&str] = &["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"];

fn kcm_lease() -> LeaseKey {
    LeaseKey::control_plane("kube-controller-manager")
}

/// Who should act on `o`'s spec: a built-in controller, else the manager that writes its status.
pub fn responsible_for(o: &TraceObject) -> Option<Responsible> {
    if let Some((_, _, name)) = KCM_CONTROLLERS.iter().find(|(g, k, _)| *g == o.group() && *k == &*o.kind) {
        return Some(Responsible {
            controller: name.to_string(),
            runs_in: Some("kube-controller-manager".into()),
            lease: Some(kcm_lease()),
        });
    }
    let writer = o.last_status_write()?;
    Some(Responsible {
        controller: format!("its status writer {}", writer.label()),
        runs_in: None,
        lease: Some(LeaseKey::Manager { manager: writer.manager.clone() }),
    })
}

fn scheduler(o: &TraceObject) -> Responsible {
    let name = o.scheduler_name.as_deref().unwrap_or("default-scheduler");
    if name == "default-scheduler" {
        Responsible {
            controller: "the scheduler".into(),
            runs_in: Some("kube-scheduler".into()),
            lease: Some(LeaseKey::control_plane("kube-scheduler")),
        }
    } else {
        Responsible {
            controller: format!("the scheduler {name:?}"),
            runs_in: None,
            lease: Some(LeaseKey::Manager { manager: name.to_string() }),
        }
    }
}

fn secs_between(a: Timestamp, b: Timestamp) -> i64 {
    b.as_second() - a.as_second()
}

/// The newest events of `reasons` about object `i`, as evidence lines.
fn evidence(snap: &TraceSnapshot, i: usize, reasons: &[&str], now: Timestamp) -> Vec<String> {
    let mut found: Vec<&EventSnap> = snap.events_of(i).filter(|e| reasons.contains(&e.reason.as_str())).collect();
    found.sort_by_key(|e| std::cmp::Reverse(e.last));
    found
        .into_iter()
        .take(2)
        .map(|e| {
            let ago = e.last.map(|t| format!(", last {} ago", human_signed(secs_between(t, now)))).unwrap_or_default();
            let count = if e.count > 1 { format!(" x{}", e.count) } else { String::new() };
            format!("{} ({}{count}{ago}): {}", e.reason, e.reporter, e.message)
        })
        .collect()
}

fn latest_event(snap: &TraceSnapshot, i: usize, reasons: &[&str]) -> Option<Timestamp> {
    snap.events_of(i).filter(|e| reasons.contains(&e.reason.as_str())).filter_map(|e| e.last).max()
}

/// Every stall in the subtree at the server's `now`: work asked for longer than
/// `after_secs` ago that the responsible controller has not done.
pub fn stalls(snap: &TraceSnapshot, now: Timestamp, after_secs: i64) -> Vec<Stall> {
    stalls_kept(snap, &live_pods(snap), now, after_secs, |_, _| true)
}

/// The live pods under each object of the forest, counted in one pass.
pub fn live_pods(snap: &TraceSnapshot) -> Vec<i64> {
    let mut live = vec![0i64; snap.objects.len()];
    for (c, parent) in snap.parent.iter().enumerate() {
        let o = &snap.objects[c];
        if let Some(p) = parent
            && &*o.kind == "Pod"
            && o.deleting.is_none()
        {
            live[*p] += 1;
        }
    }
    live
}

/// [`stalls`], only those `keep` takes, decided before each is made: `check` reads pods as
/// metadata, where every pod looks unscheduled, and keeps only those the API lists without a
/// node; made first and filtered after, the envelope's 150,000 pods were as many stalls.
/// `live_pods[i]`: the live pods under object i ([`live_pods`], or counted by the caller when
/// the forest does not hold every pod, as in `check`).
pub fn stalls_kept(
    snap: &TraceSnapshot,
    live_pods: &[i64],
    now: Timestamp,
    after_secs: i64,
    keep: impl Fn(&TraceObject, StallKind) -> bool,
) -> Vec<Stall> {
    let mut out = Vec::new();
    let run_now = now;
    for (i, o) in snap.objects.iter().enumerate() {
        if o.deleting.is_some() {
            continue;
        }
        // Judged by the clock of the answer that carried the object.
        let now = o.read_at.unwrap_or(run_now);
        // A spec entry without a time may be the newest write: then nobody knows when.
        let spec_time_unknown = o.writes.iter().any(|w| w.spec && w.time.is_none());
        let spec_at = o.last_spec_write().and_then(|w| w.time).or(o.created);
        let overdue = |since: Option<Timestamp>| since.map(|s| secs_between(s, now)).filter(|&s| s > after_secs);
        // Overdue by a known time: Some(Some(secs)); of unknown age: Some(None).
        let overdue_spec = || if spec_time_unknown { Some(None) } else { overdue(spec_at).map(Some) };
        let mut push = |kind, what: String, since: Option<Timestamp>, stalled, responsible, evidence| {
            if !keep(o, kind) {
                return;
            }
            out.push(Stall {
                object: i,
                kind,
                code: kind.code(),
                what,
                since,
                stalled_seconds: stalled,
                responsible,
                evidence,
            })
        };

        // Generation not observed.
        let observed = match (o.observed_generation, o.has_status) {
            (Some(seen), _) => Some(seen),
            // A built-in workload whose status was never written has observed nothing.
            (None, true) if REPORTS_OBSERVED_GENERATION.contains(&&*o.kind) => Some(0),
            _ => None,
        };
        if let (Some(g), Some(seen)) = (o.generation, observed)
            && seen < g
            && let Some(stalled) = overdue_spec()
            && let Some(r) = responsible_for(o)
        {
            let ev = evidence(snap, i, &["FailedCreate", "ReplicaSetCreateError", "FailedDelete"], now);
            let since = if spec_time_unknown { None } else { spec_at };
            push(
                StallKind::GenerationNotObserved,
                format!("generation {g} not observed (observed {seen})"),
                since,
                stalled,
                r,
                ev,
            );
        } else if observed.is_none()
            && let (Some(spec), Some(status)) = (o.last_spec_write(), o.last_status_write())
            && spec.time > status.time
            && let Some(stalled) = overdue(spec.time)
            && let Some(r) = responsible_for(o)
        {
            let what = format!(
                "status not written since the spec changed ({} wrote spec after {})",
                spec.label(),
                status.label()
            );
            push(StallKind::StatusNotWritten, what, spec.time, Some(stalled), r, Vec::new());
        }

        // Fewer pods than asked for.
        if let Some(desired) = o.desired {
            let pods = live_pods[i];
            let last_create = latest_event(snap, i, &["SuccessfulCreate"]);
            let since = spec_at.max(last_create);
            let stalled = if spec_time_unknown { Some(None) } else { overdue(since).map(Some) };
            if pods < desired
                && let Some(stalled) = stalled
                && let Some(r) = responsible_for(o)
            {
                let ev = evidence(snap, i, &["FailedCreate"], now);
                push(StallKind::ReplicasShort, format!("{pods} of {desired} pods"), since, stalled, r, ev);
            }
        }

        if &*o.kind == "Pod" && o.group().is_empty() && matches!(o.phase.as_deref(), Some("Pending") | None) {
            match &o.node_name {
                None => {
                    if let Some(stalled) = overdue(o.created) {
                        let mut ev = evidence(snap, i, &["FailedScheduling"], now);
                        if ev.is_empty()
                            && let Some(c) = o.condition("PodScheduled").filter(|c| c.status == "False")
                        {
                            ev.push(format!("PodScheduled=False {}: {}", c.reason, c.message));
                        }
                        push(
                            StallKind::Unscheduled,
                            "no node assigned".into(),
                            o.created,
                            Some(stalled),
                            scheduler(o),
                            ev,
                        );
                    }
                }
                Some(node) => {
                    let bound = o.condition("PodScheduled").and_then(|c| c.since).or(o.created);
                    let kubelet_wrote =
                        o.writes.iter().any(|w| w.manager == "kubelet" || w.manager.starts_with("kwok"));
                    if !kubelet_wrote && let Some(stalled) = overdue(bound) {
                        let r = Responsible {
                            controller: format!("the kubelet on node {node}"),
                            runs_in: Some(format!("node {node}")),
                            lease: Some(LeaseKey::Named { namespace: "kube-node-lease".into(), name: node.clone() }),
                        };
                        let ev = evidence(snap, i, &["FailedMount", "FailedCreatePodSandBox", "Failed"], now);
                        push(
                            StallKind::NotStarted,
                            format!("bound to {node}, no status from its kubelet"),
                            bound,
                            Some(stalled),
                            r,
                            ev,
                        );
                    }
                }
            }
        }
    }
    out
}

/// What the lease lookup for a stall found.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseLookup {
    /// Boxed: a lease is several times the size of the other answers.
    Found(Box<LeaseSnapshot>),
    /// No lease of that name, or none naming the manager.
    Missing,
    /// The lease could not be read: the reason.
    Unreadable(String),
}

/// The lease's side of a stall, as the machine output carries it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaseVerdict {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// fresh, at-risk, expired, released, skewed, unknown; missing or unreadable when not read.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renewed_seconds_ago: Option<i64>,
    /// Why the chain stalls, as far as the lease tells.
    pub cause: String,
}

/// Picks the lease a custom controller holds: named after its manager, or held by it.
pub fn lease_for_manager<'a>(manager: &str, leases: &'a [LeaseSnapshot]) -> Option<&'a LeaseSnapshot> {
    let holder_named = |l: &&LeaseSnapshot| {
        l.holder().is_some_and(|h| {
            h == manager || h.starts_with(&format!("{manager}_")) || h.starts_with(&format!("{manager}-"))
        })
    };
    leases.iter().find(|l| l.name == manager).or_else(|| leases.iter().find(holder_named))
}

/// Joins a stall with its controller's lease: the sentence that says why it stalls. Of the
/// stall it reads only the lease key and whether there is evidence (`check` judges each such
/// pair once for thousands of stalls).
pub fn judge(stall: &Stall, lookup: &LeaseLookup, now: Timestamp) -> LeaseVerdict {
    let key_text = match &stall.responsible.lease {
        Some(LeaseKey::Named { namespace, name }) => format!("{namespace}/{name}"),
        Some(LeaseKey::Manager { manager }) => format!("for {manager}"),
        None => String::new(),
    };
    let lease = match lookup {
        LeaseLookup::Found(l) => l,
        LeaseLookup::Missing => {
            let cause = match &stall.responsible.lease {
                Some(LeaseKey::Manager { manager }) => {
                    format!("no leader-election lease names {manager}: nothing shows whether it runs")
                }
                _ => format!("its lease {key_text} does not exist: it has not run with leader election here"),
            };
            return LeaseVerdict {
                namespace: None,
                name: None,
                state: "missing".into(),
                holder: None,
                renewed_seconds_ago: None,
                cause,
            };
        }
        LeaseLookup::Unreadable(why) => {
            let cause = format!("its lease {key_text} could not be read ({why})");
            return LeaseVerdict {
                namespace: None,
                name: None,
                state: "unreadable".into(),
                holder: None,
                renewed_seconds_ago: None,
                cause,
            };
        }
    };
    let lease_state = state(lease, now);
    // The Date header has whole seconds: a renewal a fraction ahead of it is "0s ago".
    let age = renew_age_micros(lease, now).map(|m| m.div_euclid(1_000_000).max(0));
    let duration = i64::from(lease.duration_seconds.unwrap_or(0));
    let name = format!("{}/{}", lease.namespace, lease.name);
    let holder = lease.holder().map(str::to_string);
    let ago = |s: i64| human_signed(s);
    let cause = match lease_state {
        LeaseState::Expired => {
            format!("whose lease {name} expired {} ago: no leader", ago(age.unwrap_or(0) - duration))
        }
        LeaseState::AtRisk => format!(
            "whose lease {name} is at risk (renewed {} ago, lasts {duration}s): its leader is missing renewals",
            ago(age.unwrap_or(0))
        ),
        LeaseState::Released => format!("whose lease {name} was released: no leader"),
        LeaseState::Skewed => format!("whose lease {name} was renewed in the future: the holder's clock runs ahead"),
        LeaseState::Unknown => format!("whose lease {name} has no renew time to judge"),
        LeaseState::Fresh => format!(
            "whose lease {name} is fresh (held by {}, renewed {} ago): {}",
            holder.as_deref().unwrap_or("?"),
            ago(age.unwrap_or(0)),
            if stall.evidence.is_empty() {
                "the leader runs but has not acted on this"
            } else {
                "the leader runs and says why it cannot proceed"
            }
        ),
    };
    LeaseVerdict {
        namespace: Some(lease.namespace.clone()),
        name: Some(lease.name.clone()),
        state: lease_state.as_str().to_string(),
        holder,
        renewed_seconds_ago: age,
        cause,
    }
}

/// Whether a stall stands: one of known age always does; one of unknown age only when the
/// lease shows its controller is not running (a fresh leader may be at work on it).
pub fn confirmed(stall: &Stall, verdict: Option<&LeaseVerdict>) -> bool {
    stall.stalled_seconds.is_some() || verdict.is_some_and(|v| v.state != "fresh")
}

/// The stall as one sentence: what, for how long, who, and what the lease says.
pub fn sentence(stall: &Stall, verdict: Option<&LeaseVerdict>) -> String {
    let who = match &stall.responsible.runs_in {
        Some(p) if p.starts_with("node ") => stall.responsible.controller.clone(),
        Some(p) => format!("{} runs in {p}", stall.responsible.controller),
        None => stall.responsible.controller.clone(),
    };
    let how_long = match stall.stalled_seconds {
        Some(s) => format!("for {}", human_signed(s)),
        None => "since a write that carries no time (managedFields of /scale writes have none)".into(),
    };
    let mut text = format!("{} {how_long}; {who}", stall.what);
    if let Some(v) = verdict {
        let joiner = if v.cause.starts_with("whose") { ", " } else { "; " };
        text.push_str(joiner);
        text.push_str(&v.cause);
    }
    text
}

impl StallKind {
    /// Its stable code (analyze/codes.rs lists them all).
    pub fn code(self) -> &'static str {
        match self {
            StallKind::GenerationNotObserved => "CO501",
            StallKind::ReplicasShort => "CO502",
            StallKind::Unscheduled => "CO503",
            StallKind::NotStarted => "CO504",
            StallKind::StatusNotWritten => "CO505",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::sequence::tests::{obj, rollout, ts, write};

    fn kcm_lease(renewed: &str) -> LeaseSnapshot {
        LeaseSnapshot {
            namespace: "kube-system".into(),
            name: "kube-controller-manager".into(),
            holder: Some("host_1234".into()),
            duration_seconds: Some(15),
            renew_time: Some(ts(renewed)),
            ..Default::default()
        }
    }

    #[test]
    fn a_generation_not_observed_names_the_deployment_controller_and_its_dead_lease() {
        let mut snap = rollout();
        snap.objects[0].generation = Some(7);
        snap.objects[0].observed_generation = Some(6);
        let now = ts("2026-01-01T10:05:00Z");
        // The rollout's spec write was at 10:01:00: 4 minutes.
        let found = stalls(&snap, now, 30);
        let s = found.iter().find(|s| s.kind == StallKind::GenerationNotObserved).expect("stall");
        assert_eq!(s.object, 0);
        assert_eq!(s.stalled_seconds, Some(240));
        assert_eq!(s.responsible.lease, Some(super::kcm_lease()));
        let verdict = judge(s, &LeaseLookup::Found(Box::new(kcm_lease("2026-01-01T10:01:55Z"))), now);
        assert_eq!(verdict.state, "expired");
        assert_eq!(
            sentence(s, Some(&verdict)),
            "generation 7 not observed (observed 6) for 4m; the Deployment controller runs in \
             kube-controller-manager, whose lease kube-system/kube-controller-manager expired 2m50s ago: no leader"
        );
        // Within the threshold it is not (yet) a stall.
        assert!(
            stalls(&snap, ts("2026-01-01T10:01:20Z"), 30).iter().all(|s| s.kind != StallKind::GenerationNotObserved)
        );
    }

    #[test]
    fn an_unscheduled_pod_quotes_the_scheduler_and_a_fresh_lease_says_the_leader_runs() {
        let snap = rollout();
        let now = ts("2026-01-01T10:03:00Z");
        let found = stalls(&snap, now, 30);
        let s = found.iter().find(|s| s.kind == StallKind::Unscheduled).expect("unscheduled");
        assert_eq!(snap.objects[s.object].name, "web-1-a");
        assert!(
            s.evidence[0].starts_with("FailedScheduling (default-scheduler x3, last 60s ago): 0/0 nodes"),
            "{:?}",
            s.evidence
        );
        let mut lease = kcm_lease("2026-01-01T10:02:59Z");
        lease.name = "kube-scheduler".into();
        let v = judge(s, &LeaseLookup::Found(Box::new(lease)), now);
        assert_eq!(v.state, "fresh");
        assert!(
            sentence(s, Some(&v))
                .contains("the scheduler runs in kube-scheduler, whose lease kube-system/kube-scheduler is fresh")
        );
        // The ReplicaSet has its one pod: no replica stall.
        assert!(found.iter().all(|s| s.kind != StallKind::ReplicasShort));
    }

    /// What `keep` refuses is never made; the rest is what `stalls` finds.
    #[test]
    fn kept_stalls_are_the_others_minus_the_refused() {
        let snap = rollout();
        let now = ts("2026-01-01T10:03:00Z");
        let all = stalls(&snap, now, 30);
        assert!(all.iter().any(|s| s.kind == StallKind::Unscheduled), "{all:?}");
        assert_eq!(stalls_kept(&snap, &live_pods(&snap), now, 30, |_, _| true), all);
        assert!(stalls_kept(&snap, &live_pods(&snap), now, 30, |_, kind| kind != StallKind::Unscheduled).is_empty());
        let by_name = stalls_kept(&snap, &live_pods(&snap), now, 30, |o, _| o.name != "web-1-a");
        let expected: Vec<Stall> = all.into_iter().filter(|s| snap.objects[s.object].name != "web-1-a").collect();
        assert_eq!(by_name, expected);
    }

    #[test]
    fn a_verdict_reads_only_the_lease_key_and_whether_there_is_evidence() {
        let snap = rollout();
        let now = ts("2026-01-01T10:03:00Z");
        let s = stalls(&snap, now, 30).into_iter().find(|s| s.kind == StallKind::Unscheduled).expect("unscheduled");
        let mut other = s.clone();
        other.object = 0;
        other.kind = StallKind::ReplicasShort;
        other.what = "something else".into();
        other.since = None;
        other.stalled_seconds = Some(1);
        other.responsible.controller = "another".into();
        other.responsible.runs_in = None;
        other.evidence = vec!["different evidence".into()];
        let mut lease = kcm_lease("2026-01-01T10:02:59Z");
        lease.name = "kube-scheduler".into();
        for lookup in
            [LeaseLookup::Found(Box::new(lease)), LeaseLookup::Missing, LeaseLookup::Unreadable("forbidden".into())]
        {
            assert_eq!(judge(&s, &lookup, now), judge(&other, &lookup, now));
            let mut bare = other.clone();
            bare.evidence.clear();
            if matches!(lookup, LeaseLookup::Found(_)) {
                assert_ne!(judge(&s, &lookup, now), judge(&bare, &lookup, now), "evidence changes a fresh verdict");
            }
        }
    }

    #[test]
    fn a_replicaset_short_of_pods_with_no_creations_stalls() {
        let mut snap = rollout();
        snap.objects[1].desired = Some(3);
        let now = ts("2026-01-01T10:03:00Z");
        let s = stalls(&snap, now, 30).into_iter().find(|s| s.kind == StallKind::ReplicasShort).expect("short");
        assert_eq!(s.what, "1 of 3 pods");
        // A recent SuccessfulCreate means the controller is still at work.
        snap.events.push(EventSnap {
            object_uid: snap.objects[1].uid.clone(),
            reason: "SuccessfulCreate".into(),
            last: Some(ts("2026-01-01T10:02:50Z")),
            ..Default::default()
        });
        assert!(stalls(&snap, now, 30).iter().all(|s| s.kind != StallKind::ReplicasShort));
    }

    #[test]
    fn a_custom_resource_whose_status_writer_went_quiet() {
        let mut cr = obj("Widget", "w", "2026-01-01T10:00:00Z");
        cr.api_version = "coord.test/v1".into();
        cr.generation = Some(2);
        cr.writes = vec![
            write("kubectl-edit", "", "2026-01-01T10:02:00Z", true, false),
            write("widget-operator", "status", "2026-01-01T10:00:01Z", false, true),
        ];
        let snap = TraceSnapshot { objects: vec![cr], parent: vec![None], prefix: vec![String::new()], events: vec![] };
        let now = ts("2026-01-01T10:03:00Z");
        let s = stalls(&snap, now, 30).pop().expect("stall");
        assert_eq!(s.kind, StallKind::StatusNotWritten);
        assert_eq!(s.responsible.lease, Some(LeaseKey::Manager { manager: "widget-operator".into() }));
        let v = judge(&s, &LeaseLookup::Missing, now);
        assert!(
            sentence(&s, Some(&v))
                .ends_with("no leader-election lease names widget-operator: nothing shows whether it runs")
        );
        let held =
            LeaseSnapshot { name: "other".into(), holder: Some("widget-operator_abc".into()), ..Default::default() };
        assert_eq!(lease_for_manager("widget-operator", std::slice::from_ref(&held)), Some(&held));
        assert_eq!(lease_for_manager("gadget", std::slice::from_ref(&held)), None);
    }

    #[test]
    fn a_pod_bound_but_never_started_points_at_the_node_heartbeat() {
        let mut snap = rollout();
        snap.objects[2].node_name = Some("node-1".into());
        let now = ts("2026-01-01T10:03:00Z");
        let s = stalls(&snap, now, 30).into_iter().find(|s| s.kind == StallKind::NotStarted).expect("not started");
        assert_eq!(
            s.responsible.lease,
            Some(LeaseKey::Named { namespace: "kube-node-lease".into(), name: "node-1".into() })
        );
        snap.objects[2].writes.push(write("kubelet", "status", "2026-01-01T10:01:05Z", false, true));
        assert!(stalls(&snap, now, 30).iter().all(|s| s.kind != StallKind::NotStarted));
    }

    #[test]
    fn a_scale_write_without_time_makes_the_age_unknown_and_the_lease_decides() {
        let mut snap = rollout();
        snap.objects[0].generation = Some(3);
        let mut scale = write("kubectl", "scale", "2026-01-01T10:00:00Z", true, false);
        scale.time = None;
        snap.objects[0].writes.push(scale);
        let now = ts("2026-01-01T10:05:00Z");
        let s = stalls(&snap, now, 30).into_iter().find(|s| s.kind == StallKind::GenerationNotObserved).expect("stall");
        assert_eq!((s.stalled_seconds, s.since), (None, None));
        let expired = judge(&s, &LeaseLookup::Found(Box::new(kcm_lease("2026-01-01T10:01:55Z"))), now);
        assert!(confirmed(&s, Some(&expired)));
        assert!(
            sentence(&s, Some(&expired))
                .starts_with("generation 3 not observed (observed 2) since a write that carries no time")
        );
        let fresh = judge(&s, &LeaseLookup::Found(Box::new(kcm_lease("2026-01-01T10:04:59Z"))), now);
        assert!(!confirmed(&s, Some(&fresh)), "a live leader may be reconciling it right now");
    }

    #[test]
    fn deleting_objects_do_not_stall() {
        let mut snap = rollout();
        for o in &mut snap.objects {
            o.deleting = Some(ts("2026-01-01T10:01:30Z"));
        }
        assert!(stalls(&snap, ts("2026-01-01T10:09:00Z"), 30).is_empty());
    }
}
