//! `check`: every mechanism's findings as one list sorted by severity, each with the
//! command that shows the detail, plus what each mechanism looked at. Pure: the
//! analyses' own results come in, [`Finding`]s go out.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde::Serialize;

use super::adoption;
use super::apply_takes::Taken;
use super::chunked::Chunked;
use super::codes;
use super::fields::{Contest, ContestKind};
use super::lease::{LeaseClass, LeaseState};
use super::lease_report::{self, FindingKind as LeaseFinding, HolderPod, LeaseRow, Workload};
use super::overlap::{self, Analysis};
use super::owner_graph::{self, FindingKind as OwnerFinding, Graph, Object};
use super::sequence::{TraceObject, TraceSnapshot};
use super::stall::{LeaseVerdict, Stall, StallKind, confirmed, sentence};
use super::uid::Uid;
use crate::text::{counted, serde_name};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is broken yet.
    Info,
    /// Will break, or breaks now and then (late renewals, overlapping selectors, fighting writers).
    Warning,
    /// Broken now: no leader, a chain that stalls, pods two controllers count, a cascade that will misfire.
    Error,
}

pub use super::codes::Mechanism;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub severity: Severity,
    pub mechanism: Mechanism,
    /// The stable code of this kind of finding (CO101...), what ignore rules name.
    pub code: &'static str,
    /// The analysis' own name for it: expired, dangling-reference, update-inside-apply...
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's kind (Lease, Deployment...): the class JUnit groups testcases by.
    pub object_kind: String,
    /// kubectl's TYPE/NAME: lease/kube-scheduler, deployment.apps/web.
    pub object: String,
    pub message: String,
    /// The command that shows the detail.
    pub detail: String,
    /// check -f: the file and document (release.yaml#2) of the object from the files this
    /// finding involves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A mechanism asked for that the input cannot feed (files have no lease holders; a
/// cluster-info dump has no Leases): the run is incomplete, never clean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotCovered {
    pub mechanism: Mechanism,
    pub why: String,
}

/// What one mechanism looked at and found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Objects checked, by kind.
    pub checked: BTreeMap<String, usize>,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

/// kubectl's TYPE/NAME for a kind of a group: pod/x, deployment.apps/web.
pub fn type_name(kind: &str, group: &str, name: &str) -> String {
    let kind = kind.to_lowercase();
    if group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{group}/{name}") }
}

pub fn command(sub: &str, target: &str, namespace: Option<&str>) -> String {
    let mut text = format!("kubectl coord {sub}");
    if !target.is_empty() {
        text.push(' ');
        text.push_str(target);
    }
    if let Some(ns) = namespace {
        text.push_str(" -n ");
        text.push_str(ns);
    }
    text
}

// ---- leases

fn lease_severity(kind: &LeaseFinding, class: LeaseClass) -> Severity {
    match kind {
        // An API server's identity lease outlives a removed server until it is collected.
        LeaseFinding::Expired if class == LeaseClass::ApiserverIdentity => Severity::Info,
        LeaseFinding::Expired | LeaseFinding::HolderPodMissing => Severity::Error,
        LeaseFinding::AtRisk
        | LeaseFinding::Skewed
        | LeaseFinding::HolderNotCandidate
        | LeaseFinding::CandidateUnanswered
        | LeaseFinding::StrategyDisagreement => Severity::Warning,
    }
}

pub fn leases(rows: &[LeaseRow], found: &[lease_report::Finding]) -> Vec<Finding> {
    let class: HashMap<(&str, &str), LeaseClass> =
        rows.iter().map(|r| ((r.namespace.as_str(), r.name.as_str()), r.class)).collect();
    found
        .iter()
        .map(|f| {
            let class = class.get(&(f.namespace.as_str(), f.name.as_str())).copied().unwrap_or(LeaseClass::Generic);
            Finding {
                severity: lease_severity(&f.kind, class),
                mechanism: Mechanism::Leases,
                code: f.kind.code(),
                reason: serde_name(&f.kind),
                namespace: Some(f.namespace.clone()),
                object_kind: "Lease".into(),
                object: format!("lease/{}", f.name),
                message: f.message.clone(),
                detail: command("leases", &f.name, Some(&f.namespace)),
                file: None,
            }
        })
        .collect()
}

/// Controller leases (kube-system kube-controller-manager, kube-scheduler...) that no one
/// holds: released, or held by an empty identity. Expired ones are findings already.
pub fn leaderless(rows: &[LeaseRow]) -> Vec<Finding> {
    rows.iter()
        .filter(|r| r.class == LeaseClass::ControlPlane && r.state == LeaseState::Released)
        .map(|r| Finding {
            severity: Severity::Error,
            mechanism: Mechanism::Leases,
            code: codes::LEADERLESS,
            reason: "leaderless".into(),
            namespace: Some(r.namespace.clone()),
            object_kind: "Lease".into(),
            object: format!("lease/{}", r.name),
            message: format!("{} was released and no one took it: the controllers it elects have no leader", r.name),
            detail: command("leases", &r.name, Some(&r.namespace)),
            file: None,
        })
        .collect()
}

/// The pod a holder names, as the owner graph knows it: whether it exists (None when
/// pods in its namespace were not read) and the workload at the top of its controller chain.
pub fn holder_pod(
    graph: &Graph,
    namespace: &str,
    pod: &str,
    pods_read: bool,
    replicas: &dyn Fn(&str) -> Option<i32>,
) -> HolderPod {
    let Some(node) = graph.find("", "Pod", Some(namespace), pod) else {
        let exists = pods_read.then_some(false);
        return HolderPod { name: pod.into(), exists, phase: None, ready: None, controller: None };
    };
    let controller_of = |i: usize| {
        let o = &graph.objects[i];
        o.owner_refs.iter().enumerate().find(|(_, r)| r.is_controller())
    };
    let mut current = node;
    let mut top: Option<Workload> = None;
    for _ in 0..4 {
        let Some((k, r)) = controller_of(current) else { break };
        let owner = graph.owners(current).find(|&(_, ref_index)| ref_index == k).map(|(o, _)| o);
        let uid = owner.map_or(&r.uid, |o| &graph.objects[o].uid).to_string();
        top = Some(Workload {
            kind: r.kind.to_string(),
            name: r.name.clone(),
            namespace: namespace.into(),
            replicas: replicas(&uid),
        });
        match owner {
            Some(o) => current = o,
            None => break,
        }
    }
    HolderPod { name: pod.into(), exists: Some(true), phase: None, ready: None, controller: top }
}

// ---- owners

fn owner_severity(kind: OwnerFinding) -> Severity {
    match kind {
        OwnerFinding::OwnerKindNotServed => Severity::Warning,
        _ => Severity::Error,
    }
}

pub fn owners(graph: &Graph, found: &[owner_graph::Finding]) -> Vec<Finding> {
    found
        .iter()
        .map(|f| {
            let o = &graph.objects[f.object];
            let target = type_name(&o.kind, o.group(), &o.name);
            Finding {
                severity: owner_severity(f.kind),
                mechanism: Mechanism::Owners,
                code: f.kind.code(),
                reason: serde_name(&f.kind),
                namespace: o.namespace.as_deref().map(str::to_string),
                object_kind: o.kind.to_string(),
                detail: command("owners", &target, o.namespace.as_deref()),
                file: None,
                object: target,
                message: f.message.clone(),
            }
        })
        .collect()
}

// ---- overlaps

fn overlap_group(kind: &str) -> &'static str {
    match kind {
        "ReplicationController" | "Pod" => "",
        "Job" => "batch",
        "PodDisruptionBudget" => "policy",
        _ => "apps",
    }
}

pub fn overlaps(a: &Analysis) -> Vec<Finding> {
    let mut out: Vec<Finding> = a
        .findings
        .iter()
        .map(|f| {
            let shared = match f.shared_pod_counts.total {
                0 => String::new(),
                n => format!("; {} selected by both now", counted(n, "pod")),
            };
            let hazard = f.template_hazards.first().map(|h| format!("; {h}")).unwrap_or_default();
            let witness: Vec<String> = f.witness.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let witness = if witness.is_empty() { "<any>".to_string() } else { witness.join(",") };
            Finding {
                severity: match f.severity {
                    overlap::Severity::Error => Severity::Error,
                    overlap::Severity::Warning => Severity::Warning,
                },
                mechanism: Mechanism::Overlaps,
                code: codes::SELECTORS_OVERLAP,
                reason: "selectors-overlap".into(),
                namespace: Some(f.namespace.to_string()),
                object_kind: f.a.kind.to_string(),
                object: type_name(f.a.kind, overlap_group(f.a.kind), f.a.name),
                message: format!(
                    "selector {} overlaps {} {} ({}), both select {witness}{shared}{hazard}",
                    f.selector_a, f.b.kind, f.b.name, f.selector_b
                ),
                detail: command("overlaps", "", Some(f.namespace)),
                file: None,
            }
        })
        .collect();
    // The pods the same budgets match are one finding, on the first of those budgets: the
    // budgets are what to change, and one finding per pod made a namespace of pods under two
    // budgets a table of thousands of rows saying one thing.
    out.extend(overlap::pdb_groups(&a.pdb_conflicts).into_iter().map(|((namespace, budgets), pods)| Finding {
        severity: Severity::Error,
        mechanism: Mechanism::Overlaps,
        code: codes::SEVERAL_DISRUPTION_BUDGETS,
        reason: "several-disruption-budgets".into(),
        namespace: Some(namespace.to_string()),
        object_kind: "PodDisruptionBudget".into(),
        object: type_name("PodDisruptionBudget", "policy", budgets.first().copied().unwrap_or_default()),
        message: format!(
            "{} ({}) matched by {} PodDisruptionBudgets ({}): the eviction API refuses to evict {}",
            counted(pods.len(), "pod"),
            some_names(pods.iter().copied(), pods.len()),
            budgets.len(),
            budgets.join(", "),
            if pods.len() == 1 { "it" } else { "them" }
        ),
        detail: command("overlaps", "", Some(namespace)),
        file: None,
    }));
    out
}

/// check -f: the live orphan pods each controller of the files would adopt.
pub fn adoptions(found: &[adoption::Adoption]) -> Vec<Finding> {
    found
        .iter()
        .map(|a| {
            let c = a.controller;
            Finding {
                severity: Severity::Error,
                mechanism: Mechanism::Overlaps,
                code: codes::ADOPTS_LIVE_PODS,
                reason: "adopts-live-pods".into(),
                namespace: Some(c.namespace.clone()),
                object_kind: c.kind.clone(),
                object: type_name(&c.kind, overlap_group(&c.kind), &c.name),
                message: format!(
                    "selector {} matches {} no controller owns ({}): once applied, the {} adopts {them}, counts \
                     {them} among its replicas, and deleting the {} deletes {them}",
                    c.selector,
                    counted(a.pods.len(), "live pod"),
                    some_names(a.pods.iter().copied(), a.pods.len()),
                    c.kind,
                    c.kind,
                    them = if a.pods.len() == 1 { "it" } else { "them" },
                ),
                detail: command("overlaps", "", Some(&c.namespace)),
                file: None,
            }
        })
        .collect()
}

/// check -f: the fields applying an object of the files would take from other managers,
/// one finding per manager. `kind`, `group`, `namespace` and `name` are the object's.
pub fn apply_takes(kind: &str, group: &str, namespace: Option<&str>, name: &str, taken: &[Taken]) -> Vec<Finding> {
    let target = type_name(kind, group, name);
    taken
        .iter()
        .map(|t| {
            let shown: Vec<String> = t
                .fields
                .iter()
                .take(3)
                .map(|(path, live, mine)| match (live, mine) {
                    // A field the server named that managedFields did not locate.
                    (serde_json::Value::Null, serde_json::Value::Null) => path.clone(),
                    _ => format!("{path} from {live} to {mine}"),
                })
                .collect();
            let more = if t.fields.len() > 3 { format!(" and {} more", t.fields.len() - 3) } else { String::new() };
            Finding {
                severity: Severity::Warning,
                mechanism: Mechanism::Fields,
                code: codes::APPLY_TAKES_FIELDS,
                reason: "apply-takes-fields".into(),
                namespace: namespace.map(str::to_string),
                object_kind: kind.into(),
                object: target.clone(),
                message: format!(
                    "applying changes {}{more}, owned by {}: server-side apply refuses it as a \
                     conflict unless forced; client-side apply overwrites it, and its owner writes it back",
                    shown.join(", "),
                    t.manager,
                ),
                detail: command("fields", &target, namespace),
                file: None,
            }
        })
        .collect()
}

/// The first three of `count` names, and how many more: "a, b, c and 7 more".
pub fn some_names<'a>(names: impl Iterator<Item = &'a str>, count: usize) -> String {
    let first: Vec<&str> = names.take(3).collect();
    let more = if count > 3 { format!(" and {} more", count - 3) } else { String::new() };
    format!("{}{more}", first.join(", "))
}

// ---- fields

fn contest_severity(kind: ContestKind) -> Severity {
    match kind {
        ContestKind::ApplyAndUpdate | ContestKind::UpdateAndUpdate | ContestKind::UpdateInsideApply => {
            Severity::Warning
        }
        ContestKind::SharedApply
        | ContestKind::StatusViaMainResource
        | ContestKind::SpecViaStatus
        | ContestKind::SameManagerApplyAndUpdate => Severity::Info,
    }
}

/// One finding per contested object: (kind, group, namespace, name, contests).
pub fn fields<'a>(
    contested: impl IntoIterator<Item = (&'a str, &'a str, &'a str, &'a str, &'a [Contest])>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (kind, group, namespace, name, contests) in contested {
        let fights: Vec<&Contest> = contests.iter().filter(|c| !c.kind.is_note()).collect();
        let Some(severity) = fights.iter().map(|c| contest_severity(c.kind)).max() else { continue };
        let mut worst: Vec<&&Contest> = fights.iter().filter(|c| contest_severity(c.kind) == severity).collect();
        worst.sort_by_key(|c| c.path.len());
        let first = worst[0];
        let more = match fights.len() - 1 {
            0 => String::new(),
            n => format!(" (+{n} more)"),
        };
        let target = type_name(kind, group, name);
        let ns = (!namespace.is_empty()).then(|| namespace.to_string());
        out.push(Finding {
            severity,
            mechanism: Mechanism::Fields,
            code: first.kind.code(),
            reason: serde_name(&first.kind),
            namespace: ns.clone(),
            object_kind: kind.into(),
            detail: command("fields", &target, ns.as_deref()),
            file: None,
            object: target,
            message: format!("{}: {}{more}", first.path, first.managers.join(", ")),
        });
    }
    out
}

// ---- trace

/// Workloads and pods as one forest: each object under its controller, by uid.
pub fn workload_snapshot(objects: Vec<TraceObject>) -> TraceSnapshot {
    let by_uid: hashbrown::HashMap<&str, usize> =
        objects.iter().enumerate().map(|(i, o)| (o.uid.as_str(), i)).collect();
    let parent = objects.iter().map(|o| o.controller_uid.as_deref().and_then(|u| by_uid.get(u).copied())).collect();
    drop(by_uid); // it borrows `objects`, moved below
    let prefix = vec![String::new(); objects.len()];
    TraceSnapshot { objects, parent, prefix, events: Vec::new() }
}

/// The pods the API lists with no spec.nodeName: by uid, or by name when read in one
/// namespace as a table (whose rows carry a pod's printed cells, its name first, and no uid).
#[derive(Debug, Default)]
pub struct Unscheduled {
    /// Some(namespace) when `keys` are names of pods in it; None when they are uids.
    namespace: Option<String>,
    keys: hashbrown::HashSet<String>,
    /// The Date of the answer that listed them: the clock their stalls are judged by.
    pub read_at: Option<Timestamp>,
}

impl Unscheduled {
    pub fn uids(uids: hashbrown::HashSet<String>) -> Unscheduled {
        Unscheduled { namespace: None, keys: uids, read_at: None }
    }

    pub fn names(namespace: String, names: hashbrown::HashSet<String>) -> Unscheduled {
        Unscheduled { namespace: Some(namespace), keys: names, read_at: None }
    }

    /// (namespace when the keys are names in it, the keys, read_at): what a dump keeps.
    pub fn parts(self) -> (Option<String>, Vec<String>, Option<Timestamp>) {
        let mut keys: Vec<String> = self.keys.into_iter().collect();
        keys.sort_unstable();
        (self.namespace, keys, self.read_at)
    }

    /// Listed in an answer dated `read_at`.
    pub fn read_at(self, read_at: Option<Timestamp>) -> Unscheduled {
        Unscheduled { read_at, ..self }
    }

    pub fn contains(&self, pod: &TraceObject) -> bool {
        self.holds(|| pod.uid.as_str().into(), pod.namespace.as_deref(), &pod.name)
    }

    /// [`Unscheduled::contains`] for the owner graph's node of a pod.
    pub fn contains_object(&self, pod: &Object) -> bool {
        self.holds(|| pod.uid.to_string().into(), pod.namespace.as_deref(), &pod.name)
    }

    /// The uid is spelled out only when asked, and then only when there is a key to find.
    fn holds<'a>(&self, uid: impl FnOnce() -> Cow<'a, str>, namespace: Option<&str>, name: &str) -> bool {
        match &self.namespace {
            None => !self.keys.is_empty() && self.keys.contains(&*uid()),
            Some(ns) => namespace == Some(ns.as_str()) && self.keys.contains(name),
        }
    }
}

/// What `check` searches for stalls in.
pub struct StallForest {
    pub forest: TraceSnapshot,
    /// The live pods under each object of the forest.
    pub live_pods: Vec<i64>,
    /// The pods in scope, all of them, in the forest or not.
    pub pods: usize,
}

/// The forest `check` searches for stalls: the workloads read whole, and of the pods (read as
/// metadata, into the owner graph's `objects`) only those the API lists with no node, the
/// only pods whose stalls check stands behind. Every other pod counts toward its controller's
/// live pods and is left out: a trace object for each of the envelope's 150,000 pods held
/// about 60 MB.
pub fn stall_forest(workloads: Vec<TraceObject>, objects: &Chunked<Object>, unscheduled: &Unscheduled) -> StallForest {
    let is_pod = |o: &&Object| &*o.kind == "Pod" && o.group().is_empty();
    let mut all = workloads;
    all.extend(
        objects
            .iter()
            .filter(is_pod)
            .filter(|p| unscheduled.contains_object(p))
            .map(|p| TraceObject { read_at: unscheduled.read_at, ..TraceObject::from_metadata(p) }),
    );
    let forest = workload_snapshot(all);
    let by_uid: hashbrown::HashMap<Uid, usize> =
        forest.objects.iter().enumerate().map(|(i, o)| (Uid::new(&o.uid), i)).collect();
    let mut live_pods = vec![0i64; forest.objects.len()];
    let mut pods = 0;
    for p in objects.iter().filter(is_pod) {
        pods += 1;
        let controller = p.owner_refs.iter().find(|r| r.is_controller());
        if p.deleting_since().is_none()
            && let Some(&i) = controller.and_then(|c| by_uid.get(&c.uid))
        {
            live_pods[i] += 1;
        }
    }
    StallForest { forest, live_pods, pods }
}

/// The stalls `check` can stand behind without each pod's spec and status: controller
/// stalls, and unscheduled pods only where the list of unscheduled pods names them.
pub fn keep_stall(object: &TraceObject, kind: StallKind, unscheduled: &Unscheduled) -> bool {
    match kind {
        StallKind::Unscheduled => unscheduled.contains(object),
        StallKind::NotStarted => false,
        _ => true,
    }
}

/// Stalls as findings; unscheduled pods of one controller are one finding on that controller.
pub fn stalls(snap: &TraceSnapshot, found: &[(&Stall, Option<&LeaseVerdict>)]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut pods_by_owner: BTreeMap<usize, Vec<&(&Stall, Option<&LeaseVerdict>)>> = BTreeMap::new();
    for pair @ (stall, verdict) in found {
        let o = &snap.objects[stall.object];
        if stall.kind == StallKind::Unscheduled
            && let Some(p) = snap.parent[stall.object]
        {
            pods_by_owner.entry(p).or_default().push(pair);
            continue;
        }
        out.push(stall_finding(o, stall, *verdict, sentence(stall, *verdict)));
    }
    for (owner, pods) in pods_by_owner {
        let &&(first, verdict) = pods.iter().max_by_key(|(s, _)| s.stalled_seconds).unwrap();
        let names = some_names(pods.iter().map(|(s, _)| snap.objects[s.object].name.as_str()), pods.len());
        let what = format!("{} with no node ({names})", counted(pods.len(), "pod"));
        let mut stall = first.clone();
        stall.what = what;
        let text = sentence(&stall, verdict);
        out.push(stall_finding(&snap.objects[owner], first, verdict, text));
    }
    out
}

fn stall_finding(o: &TraceObject, stall: &Stall, verdict: Option<&LeaseVerdict>, message: String) -> Finding {
    let target = type_name(&o.kind, o.group(), &o.name);
    Finding {
        severity: if confirmed(stall, verdict) { Severity::Error } else { Severity::Warning },
        mechanism: Mechanism::Trace,
        code: stall.kind.code(),
        reason: serde_name(&stall.kind),
        namespace: o.namespace.as_deref().map(str::to_string),
        object_kind: o.kind.to_string(),
        detail: command("trace", &target, o.namespace.as_deref()),
        file: None,
        object: target,
        message,
    }
}

// ---- the whole list

/// Keeps findings at or above `min`, most severe first, then by mechanism, place and object.
pub fn select(mut findings: Vec<Finding>, min: Severity) -> Vec<Finding> {
    findings.retain(|f| f.severity >= min);
    // Every field is in the key, so no two findings that differ tie, and an unstable sort
    // (no buffer of half the findings, as a stable one takes) gives one order whatever order
    // the analyses' threads handed them over in.
    findings.sort_unstable_by(|a, b| {
        (b.severity, a.mechanism, &a.namespace, &a.object, &a.reason, &a.message, &a.object_kind, &a.detail).cmp(&(
            a.severity,
            b.mechanism,
            &b.namespace,
            &b.object,
            &b.reason,
            &b.message,
            &b.object_kind,
            &b.detail,
        ))
    });
    findings.dedup();
    findings
}

/// Adds the findings' severities to each mechanism's summary.
pub fn tally(summaries: &mut BTreeMap<Mechanism, Summary>, findings: &[Finding]) {
    for f in findings {
        let s = summaries.entry(f.mechanism).or_default();
        match f.severity {
            Severity::Error => s.errors += 1,
            Severity::Warning => s.warnings += 1,
            Severity::Info => s.infos += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::owner_graph::tests::{coverage, obj};

    #[test]
    fn pods_under_the_same_budgets_are_one_finding_on_the_first_budget() {
        let conflict = |namespace: &'static str, pod: &'static str, budgets: &[&'static str]| overlap::PdbConflict {
            code: codes::SEVERAL_DISRUPTION_BUDGETS,
            namespace,
            pod,
            budgets: budgets.into(),
        };
        let a = overlap::Analysis {
            pdb_conflicts: vec![
                conflict("n", "web-1", &["a", "b"]),
                conflict("n", "web-2", &["a", "b"]),
                conflict("n", "db-1", &["a", "c"]),
                conflict("m", "web-1", &["a", "b"]),
                conflict("n", "web-3", &["a", "b"]),
                conflict("n", "web-4", &["a", "b"]),
            ],
            ..Default::default()
        };
        let found = overlaps(&a);
        let rows: Vec<(&str, &str, &str)> =
            found.iter().map(|f| (f.namespace.as_deref().unwrap(), f.object.as_str(), f.message.as_str())).collect();
        assert_eq!(
            rows,
            [
                (
                    "m",
                    "poddisruptionbudget.policy/a",
                    "1 pod (web-1) matched by 2 PodDisruptionBudgets (a, b): the eviction API refuses to evict it"
                ),
                (
                    "n",
                    "poddisruptionbudget.policy/a",
                    "4 pods (web-1, web-2, web-3 and 1 more) matched by 2 PodDisruptionBudgets (a, b): the eviction API refuses to evict them"
                ),
                (
                    "n",
                    "poddisruptionbudget.policy/a",
                    "1 pod (db-1) matched by 2 PodDisruptionBudgets (a, c): the eviction API refuses to evict it"
                ),
            ]
        );
        assert!(found.iter().all(|f| f.severity == Severity::Error && f.reason == "several-disruption-budgets"));
        assert_eq!(found[1].detail, "kubectl coord overlaps -n n");
    }

    #[test]
    fn unscheduled_by_uid_or_by_name_in_one_namespace() {
        let pod = |ns: &str, name: &str, uid: &str| TraceObject {
            namespace: Some(ns.into()),
            name: name.into(),
            uid: uid.into(),
            ..Default::default()
        };
        let set = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<hashbrown::HashSet<_>>();
        let by_uid = Unscheduled::uids(set(&["u1"]));
        assert!(by_uid.contains(&pod("a", "web", "u1")) && !by_uid.contains(&pod("a", "u1", "u2")));
        let by_name = Unscheduled::names("a".into(), set(&["web"]));
        assert!(by_name.contains(&pod("a", "web", "u9")));
        assert!(!by_name.contains(&pod("b", "web", "u9")), "a name in another namespace");
        assert!(!by_name.contains(&pod("a", "u9", "web")), "names, not uids");
        assert!(!Unscheduled::default().contains(&pod("a", "web", "u1")));
    }

    /// Pods outside the forest still count: the same live pods as a forest of every pod.
    #[test]
    fn the_stall_forest_holds_unscheduled_pods_and_counts_the_rest() {
        use super::super::owner_graph::{Deletion, tests::obj};
        use super::super::stall::live_pods;
        let rs_uid = "0b3c2a8e-8d5f-4c41-9d0e-0a1b2c3d4e5f";
        let rs =
            || TraceObject { uid: rs_uid.into(), kind: "ReplicaSet".into(), desired: Some(3), ..Default::default() };
        let under =
            |uid: &str, name: &str| obj(uid, "Pod", Some("a"), name, &[("ReplicaSet", "web", rs_uid, true, true)]);
        let mut deleting = under("p3", "web-3");
        deleting.deletion = Deletion::new(Some("2026-01-01T00:00:00Z".parse().unwrap()), Vec::new());
        let objects: Chunked<Object> = Chunked::from(vec![
            under("p1", "web-1"),
            under("p2", "web-2"),
            deleting,
            obj("p4", "Pod", Some("a"), "lone", &[]),
            obj(rs_uid, "ReplicaSet", Some("a"), "web", &[]),
            obj("p5", "Pod", Some("a"), "other", &[("ReplicaSet", "x", "not-listed", true, true)]),
        ]);
        let set = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<hashbrown::HashSet<_>>();

        let f = stall_forest(vec![rs()], &objects, &Unscheduled::uids(set(&["p2", "p9"])));
        let names: Vec<&str> = f.forest.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["", "web-2"]);
        assert_eq!(f.forest.parent, [None, Some(0)]);
        assert_eq!(f.forest.objects[1].controller_uid.as_deref(), Some(rs_uid));
        assert_eq!((f.live_pods.as_slice(), f.pods), ([2, 0].as_slice(), 5));
        let every_pod: Vec<TraceObject> = std::iter::once(rs())
            .chain(objects.iter().filter(|o| &*o.kind == "Pod").map(TraceObject::from_metadata))
            .collect();
        assert_eq!(live_pods(&workload_snapshot(every_pod))[0], f.live_pods[0]);

        let by_name = stall_forest(vec![rs()], &objects, &Unscheduled::names("a".into(), set(&["lone", "web-1"])));
        let names: Vec<&str> = by_name.forest.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["", "web-1", "lone"]);
        assert_eq!(by_name.forest.parent, [None, Some(0), None]);
        assert_eq!(stall_forest(vec![rs()], &objects, &Unscheduled::default()).forest.objects.len(), 1);
    }

    fn finding(severity: Severity, mechanism: Mechanism, object: &str) -> Finding {
        Finding {
            severity,
            mechanism,
            code: "CO000",
            reason: "r".into(),
            namespace: Some("ns".into()),
            object_kind: "Pod".into(),
            object: object.into(),
            message: "m".into(),
            detail: "d".into(),
            file: None,
        }
    }

    #[test]
    fn select_orders_by_severity_then_mechanism_and_applies_the_floor() {
        let all = vec![
            finding(Severity::Warning, Mechanism::Owners, "pod/b"),
            finding(Severity::Info, Mechanism::Leases, "pod/a"),
            finding(Severity::Error, Mechanism::Trace, "pod/c"),
            finding(Severity::Error, Mechanism::Leases, "pod/d"),
            finding(Severity::Error, Mechanism::Leases, "pod/d"),
        ];
        let got: Vec<(Severity, &str)> =
            select(all.clone(), Severity::Info).iter().map(|f| (f.severity, f.mechanism.name())).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (Severity::Error, "leases"),
                (Severity::Error, "trace"),
                (Severity::Warning, "owners"),
                (Severity::Info, "leases")
            ]
        );
        assert_eq!(select(all, Severity::Error).len(), 2);
    }

    proptest::proptest! {
        /// The analyses hand their findings over in whatever order their threads finish; what
        /// is shown is one order all the same, down to findings that differ in one field only.
        #[test]
        fn select_gives_one_order_whatever_order_findings_come_in(
            fields in proptest::collection::vec((0u8..2, 0u8..2, 0u8..2, 0u8..2), 1..12),
            rotation in 0usize..12,
        ) {
            let all: Vec<Finding> = fields
                .iter()
                .map(|&(object, message, kind, detail)| Finding {
                    object_kind: format!("k{kind}"),
                    detail: format!("d{detail}"),
                    file: None,
                    message: format!("m{message}"),
                    ..finding(Severity::Error, Mechanism::Owners, &format!("pod/{object}"))
                })
                .collect();
            let mut turned = all.clone();
            turned.rotate_left(rotation % all.len());
            turned.reverse();
            proptest::prop_assert_eq!(select(turned, Severity::Info), select(all, Severity::Info));
        }
    }

    #[test]
    fn type_names_and_commands_are_what_kubectl_accepts() {
        assert_eq!(type_name("Deployment", "apps", "web"), "deployment.apps/web");
        assert_eq!(type_name("ConfigMap", "", "x"), "configmap/x");
        assert_eq!(command("owners", "configmap/x", Some("ns")), "kubectl coord owners configmap/x -n ns");
        assert_eq!(command("overlaps", "", Some("ns")), "kubectl coord overlaps -n ns");
        assert_eq!(command("owners", "node/n1", None), "kubectl coord owners node/n1");
    }

    #[test]
    fn holder_pod_walks_the_controller_chain_in_the_graph() {
        let dep = obj("d1", "Deployment", Some("ns"), "web", &[]);
        let rs = obj("r1", "ReplicaSet", Some("ns"), "web-5d", &[("Deployment", "web", "d1", true, true)]);
        let pod = obj("p1", "Pod", Some("ns"), "web-5d-x", &[("ReplicaSet", "web-5d", "r1", true, true)]);
        let graph = Graph::build(vec![dep, rs, pod], &coverage());
        let replicas = |uid: &str| (uid == "d1").then_some(3);
        let found = holder_pod(&graph, "ns", "web-5d-x", true, &replicas);
        assert_eq!(found.exists, Some(true));
        let w = found.controller.unwrap();
        assert_eq!((w.kind.as_str(), w.name.as_str(), w.replicas), ("Deployment", "web", Some(3)));
        assert_eq!(holder_pod(&graph, "ns", "gone", true, &replicas).exists, Some(false));
        assert_eq!(holder_pod(&graph, "ns", "gone", false, &replicas).exists, None);
    }

    #[test]
    fn contested_objects_become_one_finding_at_their_worst_contest() {
        let contests = vec![
            Contest::new(".status.x".into(), ContestKind::StatusViaMainResource, vec!["a".into()]),
            Contest::new(".spec.replicas".into(), ContestKind::UpdateInsideApply, vec!["kubectl".into(), "hpa".into()]),
            Contest::new(".spec".into(), ContestKind::SameManagerApplyAndUpdate, vec!["x".into()]),
        ];
        let notes_only = vec![contests[2].clone()];
        let got = fields([
            ("Deployment", "apps", "ns", "web", contests.as_slice()),
            ("Deployment", "apps", "ns", "quiet", notes_only.as_slice()),
        ]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].severity, Severity::Warning);
        assert_eq!(got[0].reason, "update-inside-apply");
        assert_eq!(got[0].message, ".spec.replicas: kubectl, hpa (+1 more)");
        assert_eq!(got[0].detail, "kubectl coord fields deployment.apps/web -n ns");
    }

    #[test]
    fn workload_forest_links_by_controller_uid() {
        let mut rs = TraceObject { uid: "r".into(), kind: "ReplicaSet".into(), ..Default::default() };
        rs.controller_uid = Some("missing".into());
        let pod =
            TraceObject { uid: "p".into(), kind: "Pod".into(), controller_uid: Some("r".into()), ..Default::default() };
        let snap = workload_snapshot(vec![rs, pod]);
        assert_eq!(snap.parent, vec![None, Some(0)]);
    }
}
