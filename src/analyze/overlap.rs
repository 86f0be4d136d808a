//! Selector overlap between controllers, with live evidence. Pure.
//!
//! Pairs are only compared when they might overlap: controllers are partitioned
//! by the value they require for a common key (two controllers requiring
//! app=a and app=b can never overlap), recursively, so a namespace of thousands
//! of well-labelled controllers is far from quadratic.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use serde::Serialize;

use super::selector::{LabelPairs, Labels, Selector, Separation, overlap};

#[derive(Debug, Clone)]
pub struct Controller {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub selector: Selector,
    /// Pod template labels (None for PDBs).
    pub template_labels: Option<Labels>,
    /// uid of this object's own controller (a Deployment for a ReplicaSet).
    pub owner_uid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct PodMeta {
    /// Shared with the other pods of its namespace, as the controller's kind is.
    pub namespace: Arc<str>,
    pub name: String,
    pub labels: LabelPairs,
    /// (kind, name, uid) of the pod's controller reference.
    pub controller: Option<(Arc<str>, String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

// The findings borrow their names from the snapshot: a tier-wide budget overlaps every
// per-app budget, tens of thousands of pairs at the envelope, each with four names and a
// namespace that were copies. (A // comment: a doc comment would be published in the schema.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjRef<'a> {
    pub kind: &'a str,
    pub name: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SharedPod<'a> {
    pub name: &'a str,
    /// "a", "b", "other" or "none" (an orphan the first controller to notice adopts).
    pub owned_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<ObjRef<'a>>,
}

/// How many shared pods a finding names; all are counted.
pub const SHARED_SAMPLE: usize = 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SharedCounts {
    pub total: usize,
    /// Controlled by the pair's first controller (or its ReplicaSet).
    pub a: usize,
    pub b: usize,
    /// Controlled by someone else.
    pub other: usize,
    /// Orphans: the first controller to notice adopts them.
    pub none: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairFinding<'a> {
    /// The stable code of an overlap (CO301).
    pub code: &'static str,
    pub namespace: &'a str,
    pub a: ObjRef<'a>,
    pub b: ObjRef<'a>,
    pub severity: Severity,
    pub selector_a: String,
    pub selector_b: String,
    /// A label set both selectors select.
    // Pairs sorted by key rather than a map: a B-tree node per finding was most of its size.
    #[serde(serialize_with = "as_map")]
    #[schemars(with = "Labels")]
    pub witness: Box<[(String, String)]>,
    /// "a's template matches b's selector" and/or the reverse.
    pub template_hazards: Vec<String>,
    /// Pods both select right now, by who controls them.
    pub shared_pod_counts: SharedCounts,
    /// The first [`SHARED_SAMPLE`] of them.
    // None when Options::sample is false (the table and check, which only count them).
    pub shared_pods: Vec<SharedPod<'a>>,
}

impl PairFinding<'_> {
    /// The same finding told from `b`'s side (check -f names the object of the files first).
    pub fn swap(&mut self) {
        std::mem::swap(&mut self.a, &mut self.b);
        std::mem::swap(&mut self.selector_a, &mut self.selector_b);
        let counts = &mut self.shared_pod_counts;
        std::mem::swap(&mut counts.a, &mut counts.b);
        for pod in &mut self.shared_pods {
            pod.owned_by = match pod.owned_by {
                "a" => "b",
                "b" => "a",
                other => other,
            };
        }
    }
}

fn as_map<S: serde::Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DisjointPair<'a> {
    pub namespace: &'a str,
    pub a: ObjRef<'a>,
    pub b: ObjRef<'a>,
    pub separation: Separation,
}

// Borrowed from the snapshot, and the pods under the same budgets share one list of their
// names: at the envelope a budget over a whole tier puts tens of thousands of pods under the
// same eighteen budgets, and a copy of the names per pod was the largest thing `overlaps -A`
// held. (A // comment: a doc comment would be published in the schema.)
/// A pod matched by more than one PodDisruptionBudget.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PdbConflict<'a> {
    /// The stable code of pods under several budgets (CO302).
    pub code: &'static str,
    pub namespace: &'a str,
    pub pod: &'a str,
    /// The budgets' names, sorted.
    pub budgets: Rc<[&'a str]>,
}

#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Analysis<'a> {
    pub findings: Vec<PairFinding<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disjoint: Vec<DisjointPair<'a>>,
    pub pdb_conflicts: Vec<PdbConflict<'a>>,
    /// How many pairs were decided exactly (the rest were proven disjoint by the index).
    pub pairs_compared: usize,
}

pub struct Options {
    pub cross_kind: bool,
    pub explain: bool,
    /// Name the first [`SHARED_SAMPLE`] shared pods of each pair (only machine output shows
    /// them; the pods are counted either way).
    pub sample: bool,
}

pub fn analyze<'a>(controllers: &'a [Controller], pods: &'a [PodMeta], opts: &Options) -> Analysis<'a> {
    let mut analysis = Analysis::default();
    let pod_index = PodIndex::new(pods);
    let mut groups: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, c) in controllers.iter().enumerate() {
        let group = if c.kind == "PodDisruptionBudget" || !opts.cross_kind { c.kind.as_str() } else { "*" };
        groups.entry((c.namespace.as_str(), group)).or_default().push(i);
    }
    let mut overlapping = Vec::new();
    for members in groups.values() {
        let mut pairs = Vec::new();
        candidate_pairs(controllers, members, &mut BTreeSet::new(), &mut pairs);
        for (i, j) in pairs {
            let (a, b) = (&controllers[i], &controllers[j]);
            if related(a, b) {
                continue;
            }
            analysis.pairs_compared += 1;
            match overlap(&a.selector, &b.selector) {
                Ok(witness) => overlapping.push((i, j, witness)),
                Err(separation) if opts.explain => {
                    analysis.disjoint.push(DisjointPair { namespace: &a.namespace, a: obj(a), b: obj(b), separation })
                }
                Err(_) => {}
            }
        }
    }
    // Each involved controller's pods, computed once (sorted pod indices).
    let mut matched: HashMap<usize, Vec<PodIx>> = HashMap::new();
    for &(i, j, _) in &overlapping {
        for k in [i, j] {
            matched.entry(k).or_insert_with(|| pod_index.matching(&controllers[k]));
        }
    }
    let owners = if overlapping.is_empty() { Vec::new() } else { owners(controllers, pods) };
    for (i, j, witness) in overlapping {
        let evidence = Evidence { pods, owners: &owners, sample: opts.sample };
        analysis.findings.push(finding(controllers, (i, j), witness, &matched[&i], &matched[&j], &evidence));
    }
    analysis.pdb_conflicts = pdb_conflicts(controllers, pods, &pod_index, &matched);
    analysis.findings.sort_by(|x, y| (&x.namespace, &x.a, &x.b).cmp(&(&y.namespace, &y.a, &y.b)));
    analysis
}

fn obj(c: &Controller) -> ObjRef<'_> {
    ObjRef { kind: &c.kind, name: &c.name }
}

/// Parent and child (a Deployment and its ReplicaSet), or siblings under one controller.
fn related(a: &Controller, b: &Controller) -> bool {
    a.owner_uid.as_deref() == Some(&b.uid)
        || b.owner_uid.as_deref() == Some(&a.uid)
        || (a.owner_uid.is_some() && a.owner_uid == b.owner_uid)
}

/// A pod's controller and that controller's own controller, as indices into the controllers
/// (None: not one of them). A pod of a Deployment is controlled by its ReplicaSet and counts as
/// the Deployment's too. Indices, so that the thousands of pods two broad selectors share are
/// attributed by comparing numbers rather than uids.
type Owners = (Option<usize>, Option<usize>);

/// A pod's index in the snapshot: u32, as the index holds several lists of them per pod.
type PodIx = u32;

/// Each pod's [`Owners`], looked up once rather than per pair.
fn owners(controllers: &[Controller], pods: &[PodMeta]) -> Vec<Owners> {
    let index: HashMap<&str, usize> = controllers.iter().enumerate().map(|(i, c)| (c.uid.as_str(), i)).collect();
    let parent: Vec<Option<usize>> = controllers.iter().map(|c| index.get(c.owner_uid.as_deref()?).copied()).collect();
    pods.iter()
        .map(|p| {
            let controller = p.controller.as_ref().and_then(|(_, _, uid)| index.get(uid.as_str()).copied());
            (controller, controller.and_then(|c| parent[c]))
        })
        .collect()
}

/// The indices both sorted lists hold, in order: a merge when they are of a size, a binary
/// search of the longer for each of the shorter when one is far shorter.
fn shared(pa: &[PodIx], pb: &[PodIx]) -> Vec<PodIx> {
    let (short, long) = if pa.len() <= pb.len() { (pa, pb) } else { (pb, pa) };
    if short.len() * 16 < long.len() {
        return short.iter().copied().filter(|p| long.binary_search(p).is_ok()).collect();
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < short.len() && j < long.len() {
        match short[i].cmp(&long[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(short[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// What a pair's shared pods are read from, and whether to name some.
struct Evidence<'a, 'o> {
    pods: &'a [PodMeta],
    owners: &'o [Owners],
    sample: bool,
}

fn finding<'a>(
    controllers: &'a [Controller],
    (i, j): (usize, usize),
    witness: Labels,
    pa: &[PodIx],
    pb: &[PodIx],
    evidence: &Evidence<'a, '_>,
) -> PairFinding<'a> {
    let Evidence { pods, owners, sample } = *evidence;
    let (a, b) = (&controllers[i], &controllers[j]);
    let owns = |c: usize, p: usize| {
        let (controller, parent) = owners[p];
        controller == Some(c) || parent == Some(c)
    };
    let mut template_hazards = Vec::new();
    if a.template_labels.as_ref().is_some_and(|t| b.selector.matches(t)) {
        template_hazards.push(format!("{}/{}'s pod template matches {}/{}'s selector", a.kind, a.name, b.kind, b.name));
    }
    if b.template_labels.as_ref().is_some_and(|t| a.selector.matches(t)) {
        template_hazards.push(format!("{}/{}'s pod template matches {}/{}'s selector", b.kind, b.name, a.kind, a.name));
    }
    let mut counts = SharedCounts::default();
    let both = shared(pa, pb);
    let mut shared_pods = Vec::with_capacity(if sample { both.len().min(SHARED_SAMPLE) } else { 0 });
    for p in both {
        let p = p as usize;
        let pod = &pods[p];
        let (owned_by, other) = match &pod.controller {
            None => ("none", None),
            Some(_) if owns(i, p) => ("a", None),
            Some(_) if owns(j, p) => ("b", None),
            Some((kind, name, _)) => ("other", Some((kind, name))),
        };
        counts.total += 1;
        *match owned_by {
            "a" => &mut counts.a,
            "b" => &mut counts.b,
            "other" => &mut counts.other,
            _ => &mut counts.none,
        } += 1;
        // Two broad selectors can share thousands of pods: count them all, copy the names of
        // a few.
        if sample && shared_pods.len() < SHARED_SAMPLE {
            let owner = other.map(|(kind, name)| ObjRef { kind, name });
            shared_pods.push(SharedPod { name: &pod.name, owned_by, owner });
        }
    }
    let severity = if template_hazards.is_empty() && counts.total == 0 { Severity::Warning } else { Severity::Error };
    PairFinding {
        code: super::codes::SELECTORS_OVERLAP,
        namespace: &a.namespace,
        a: obj(a),
        b: obj(b),
        severity,
        selector_a: a.selector.to_string(),
        selector_b: b.selector.to_string(),
        witness: witness.into_iter().collect(),
        template_hazards,
        shared_pod_counts: counts,
        shared_pods,
    }
}

/// All pairs among `members` that are not proven disjoint by a shared required key.
fn candidate_pairs(cs: &[Controller], members: &[usize], used: &mut BTreeSet<String>, out: &mut Vec<(usize, usize)>) {
    const SMALL: usize = 16;
    let all_pairs = |out: &mut Vec<(usize, usize)>| {
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                out.push((i, j));
            }
        }
    };
    if members.len() <= SMALL {
        return all_pairs(out);
    }
    // The key most members pin to one value.
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for &i in members {
        for (k, _) in cs[i].selector.required_pairs() {
            if !used.contains(k) {
                *counts.entry(k).or_default() += 1;
            }
        }
    }
    let Some((key, n)) = counts.into_iter().max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(x.0))) else {
        return all_pairs(out);
    };
    if n < 2 {
        return all_pairs(out);
    }
    let key = key.to_string();
    let mut buckets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut wild = Vec::new();
    for &i in members {
        match cs[i].selector.required_pairs().into_iter().find(|(k, _)| *k == key) {
            Some((_, v)) => buckets.entry(v.to_string()).or_default().push(i),
            None => wild.push(i),
        }
    }
    used.insert(key.clone());
    for bucket in buckets.values() {
        candidate_pairs(cs, bucket, used, out);
        // Unpinned members may overlap anything.
        for &i in bucket {
            for &w in &wild {
                out.push((i.min(w), i.max(w)));
            }
        }
    }
    candidate_pairs(cs, &wild, used, out);
    used.remove(&key);
}

/// Pods by namespace and by label pair, so a selector's pods are found from its
/// rarest required pair instead of by scanning the namespace. Borrows the pods: tens of
/// thousands of them, each with a few labels, were otherwise copied string by string.
struct PodIndex<'a> {
    by_ns: HashMap<&'a str, Vec<PodIx>>,
    by_pair: HashMap<(&'a str, &'a str, &'a str), Vec<PodIx>>,
    pods: &'a [PodMeta],
}

impl<'a> PodIndex<'a> {
    fn new(pods: &'a [PodMeta]) -> PodIndex<'a> {
        let mut idx = PodIndex { by_ns: HashMap::new(), by_pair: HashMap::new(), pods };
        for (i, p) in pods.iter().enumerate() {
            let i = i as PodIx;
            idx.by_ns.entry(&p.namespace).or_default().push(i);
            for (k, v) in p.labels.iter() {
                idx.by_pair.entry((&p.namespace, k, v)).or_default().push(i);
            }
        }
        idx
    }

    fn matching(&self, c: &Controller) -> Vec<PodIx> {
        let empty = Vec::new();
        let pairs = c.selector.required_pairs();
        let candidates = pairs
            .iter()
            .map(|&(k, v)| self.by_pair.get(&(c.namespace.as_str(), k, v)).unwrap_or(&empty))
            .min_by_key(|list| list.len())
            .unwrap_or_else(|| self.by_ns.get(c.namespace.as_str()).unwrap_or(&empty));
        // A selector of one key=value (most budgets, many workloads) selects exactly its list.
        if pairs.len() == 1 && c.selector.requirements.as_ref().is_some_and(|r| r.len() == 1) {
            return candidates.clone();
        }
        candidates.iter().copied().filter(|&i| c.selector.matches(&self.pods[i as usize].labels)).collect()
    }
}

fn pdb_conflicts<'a>(
    cs: &'a [Controller],
    pods: &'a [PodMeta],
    index: &PodIndex,
    matched: &HashMap<usize, Vec<PodIx>>,
) -> Vec<PdbConflict<'a>> {
    // Budget indices by pod index (u32: one list per pod); names are looked up only for the
    // pods under several. A budget's pods are computed here and dropped unless a pair finding
    // already holds them: a budget over a whole tier matches tens of thousands.
    let mut budgets_of: Vec<Vec<u32>> = vec![Vec::new(); pods.len()];
    for (i, c) in cs.iter().enumerate().filter(|(_, c)| c.kind == "PodDisruptionBudget") {
        let computed;
        let pods_of = match matched.get(&i) {
            Some(p) => p,
            None => {
                computed = index.matching(c);
                &computed
            }
        };
        for &p in pods_of {
            budgets_of[p as usize].push(i as u32);
        }
    }
    let mut sets: HashMap<Vec<u32>, Rc<[&'a str]>> = HashMap::new();
    let mut out = Vec::new();
    for (p, budgets) in budgets_of.into_iter().enumerate() {
        if budgets.len() < 2 {
            continue;
        }
        let names = sets
            .entry(budgets)
            .or_insert_with_key(|budgets| {
                let mut names: Vec<&str> = budgets.iter().map(|&i| cs[i as usize].name.as_str()).collect();
                names.sort_unstable();
                names.into()
            })
            .clone();
        out.push(PdbConflict {
            code: super::codes::SEVERAL_DISRUPTION_BUDGETS,
            namespace: &pods[p].namespace,
            pod: &pods[p].name,
            budgets: names,
        });
    }
    out
}

/// A namespace and the names of budgets in it.
pub type BudgetSet<'a> = (&'a str, Rc<[&'a str]>);

/// The pods under the same budgets in one namespace, in order of namespace and budgets: what
/// to change is the budgets, so a person reads one line per set rather than one per pod.
pub fn pdb_groups<'a>(conflicts: &[PdbConflict<'a>]) -> Vec<(BudgetSet<'a>, Vec<&'a str>)> {
    let mut groups: BTreeMap<BudgetSet, Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        groups.entry((c.namespace, c.budgets.clone())).or_default().push(c.pod);
    }
    groups.into_iter().collect()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::analyze::selector::parse;
    use proptest::prelude::*;

    /// A controller in `namespace` selecting `sel`; `template` is None for kinds without one (a PDB).
    pub fn ctl_in(namespace: &str, kind: &str, name: &str, sel: &str, template: Option<&[(&str, &str)]>) -> Controller {
        Controller {
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            selector: parse(sel).unwrap(),
            template_labels: template.map(|t| t.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            owner_uid: None,
        }
    }

    /// A pod in `namespace`, controlled by the ReplicaSet `owner` when there is one.
    pub fn pod_in(namespace: &str, name: &str, labels: &[(&str, &str)], owner: Option<&str>) -> PodMeta {
        PodMeta {
            namespace: namespace.into(),
            name: name.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            controller: owner.map(|o| ("ReplicaSet".into(), o.into(), format!("uid-{o}"))),
        }
    }

    fn ctl(kind: &str, name: &str, sel: &str, template: Option<&[(&str, &str)]>) -> Controller {
        ctl_in("ns", kind, name, sel, template)
    }

    fn pod(name: &str, labels: &[(&str, &str)], owner: Option<&str>) -> PodMeta {
        pod_in("ns", name, labels, owner)
    }

    const OPTS: Options = Options { cross_kind: false, explain: true, sample: true };

    #[test]
    fn severities_and_evidence() {
        let mut cs = vec![
            ctl("Deployment", "web", "app=web", Some(&[("app", "web"), ("tier", "fe")])),
            ctl("Deployment", "fe", "tier=fe", Some(&[("app", "fe"), ("tier", "fe")])),
            ctl("Deployment", "api", "app=api", Some(&[("app", "api")])),
            ctl("Deployment", "loose", "app in (api,other),tier notin (fe)", Some(&[("app", "other")])),
        ];
        let mut rs = ctl("ReplicaSet", "web-5d8f", "app=web,pod-template-hash=5d8f", None);
        rs.owner_uid = Some("uid-web".into());
        cs.push(rs);
        let pods = vec![
            pod("web-1", &[("app", "web"), ("tier", "fe")], Some("web-5d8f")),
            pod("orphan", &[("app", "web"), ("tier", "fe")], None),
            pod("stray", &[("app", "web"), ("tier", "fe")], Some("elsewhere")),
        ];
        let a = analyze(&cs, &pods, &OPTS);
        let pairs: Vec<(&str, &str, Severity)> = a.findings.iter().map(|f| (f.a.name, f.b.name, f.severity)).collect();
        // api's template {app: api} satisfies loose's selector (a missing tier passes NotIn):
        // a hazard even with no pods. fe and api only overlap logically (app=api,tier=fe).
        assert_eq!(
            pairs,
            vec![("api", "loose", Severity::Error), ("fe", "api", Severity::Warning), ("web", "fe", Severity::Error)]
        );
        let web_fe = &a.findings[2];
        assert_eq!(web_fe.template_hazards, vec!["Deployment/web's pod template matches Deployment/fe's selector"]);
        assert_eq!(
            web_fe.shared_pods.iter().map(|p| (p.name, p.owned_by)).collect::<Vec<_>>(),
            vec![("web-1", "a"), ("orphan", "none"), ("stray", "other")]
        );
        // Only a pod of a third controller names it.
        assert_eq!(
            web_fe.shared_pods.iter().map(|p| p.owner).collect::<Vec<_>>(),
            vec![None, None, Some(ObjRef { kind: "ReplicaSet", name: "elsewhere" })]
        );
        assert!(a.disjoint.iter().any(|d| d.a.name == "web" && d.b.name == "api" && d.separation.key == "app"));
    }

    /// Without samples the shared pods are counted the same and none is named.
    #[test]
    fn unsampled_pairs_count_what_sampled_ones_name() {
        let cs = vec![
            ctl("Deployment", "web", "app=web", Some(&[("app", "web")])),
            ctl("Deployment", "fe", "tier=fe", Some(&[("tier", "fe")])),
        ];
        let pods: Vec<PodMeta> =
            (0..25).map(|i| pod(&format!("p{i}"), &[("app", "web"), ("tier", "fe")], None)).collect();
        let sampled = analyze(&cs, &pods, &OPTS);
        let counted = analyze(&cs, &pods, &Options { sample: false, ..OPTS });
        let (s, c) = (&sampled.findings[0], &counted.findings[0]);
        assert_eq!((s.shared_pod_counts.total, s.shared_pods.len()), (25, SHARED_SAMPLE));
        assert_eq!((c.shared_pod_counts, c.shared_pods.len()), (s.shared_pod_counts, 0));
        assert_eq!((c.severity, &c.witness), (s.severity, &s.witness));
        assert_eq!(
            serde_json::to_value(s.witness.iter().cloned().collect::<Labels>()).unwrap(),
            serde_json::to_value(s).unwrap()["witness"]
        );
    }

    #[test]
    fn parents_siblings_and_kinds_are_not_compared() {
        let d = ctl("Deployment", "web", "app=web", None);
        let mut rs1 = ctl("ReplicaSet", "web-1", "app=web", None);
        rs1.owner_uid = Some(d.uid.clone());
        let mut rs2 = ctl("ReplicaSet", "web-2", "app=web", None);
        rs2.owner_uid = Some(d.uid.clone());
        let sts = ctl("StatefulSet", "db", "app=web", None);
        let all = [d, rs1, rs2, sts];
        let a = analyze(&all, &[], &OPTS);
        assert!(a.findings.is_empty(), "{:?}", a.findings);
        let cross = analyze(&all, &[], &Options { cross_kind: true, explain: false, sample: true });
        let pairs: Vec<(&str, &str)> = cross.findings.iter().map(|f| (f.a.name, f.b.name)).collect();
        assert_eq!(pairs.len(), 3, "{pairs:?}");
        assert!(pairs.iter().all(|(a, b)| *a == "db" || *b == "db"));
    }

    #[test]
    fn pods_under_several_budgets() {
        let cs = vec![
            ctl("PodDisruptionBudget", "pdb-a", "app=web", None),
            ctl("PodDisruptionBudget", "pdb-b", "tier=fe", None),
        ];
        let pods = vec![pod("p1", &[("app", "web"), ("tier", "fe")], None), pod("p2", &[("app", "web")], None)];
        let a = analyze(&cs, &pods, &OPTS);
        assert_eq!(a.pdb_conflicts.len(), 1);
        assert_eq!(a.pdb_conflicts[0].pod, "p1");
        assert_eq!(*a.pdb_conflicts[0].budgets, ["pdb-a", "pdb-b"]);
        assert_eq!(a.findings[0].severity, Severity::Error, "a shared pod makes the PDB pair an error");
    }

    proptest! {
        /// The index finds a selector's pods from one required pair: the same pods as testing
        /// the selector against every pod of its namespace.
        #[test]
        fn the_pod_index_finds_what_brute_force_does(
            sel in proptest::sample::select(vec!["a=x", "a=y,b=x", "a in (x,y)", "b", "!c", "a!=x", "a=x,c notin (y)", ""]),
            ns in proptest::sample::select(vec!["ns", "other"]),
            labels in proptest::collection::vec(
                (proptest::sample::select(vec!["ns", "other"]), proptest::collection::btree_map(
                    proptest::sample::select(vec!["a", "b", "c"]).prop_map(String::from),
                    proptest::sample::select(vec!["x", "y"]).prop_map(String::from),
                    0..3,
                )),
                0..12,
            ),
        ) {
            let mut c = ctl("Deployment", "d", sel, None);
            c.namespace = ns.into();
            let pods: Vec<PodMeta> = labels
                .into_iter()
                .enumerate()
                .map(|(i, (ns, labels))| PodMeta {
                    namespace: ns.into(),
                    name: format!("p{i}"),
                    labels: labels.into_iter().collect(),
                    controller: None,
                })
                .collect();
            let brute: Vec<PodIx> = (0..pods.len() as PodIx)
                .filter(|&i| &*pods[i as usize].namespace == ns && c.selector.matches(&pods[i as usize].labels))
                .collect();
            prop_assert_eq!(PodIndex::new(&pods).matching(&c), brute);
        }

        /// Both ways of intersecting two sorted lists (the merge and, when one list is far
        /// shorter, the binary search) give what testing every pair gives.
        #[test]
        fn shared_pods_are_what_both_lists_hold(
            a in proptest::collection::btree_set(0u32..400, 0..60),
            b in proptest::collection::btree_set(0u32..400, 0..300),
        ) {
            let (a, b): (Vec<PodIx>, Vec<PodIx>) = (a.into_iter().collect(), b.into_iter().collect());
            let brute: Vec<PodIx> = a.iter().copied().filter(|p| b.contains(p)).collect();
            prop_assert_eq!(shared(&a, &b), brute.clone());
            prop_assert_eq!(shared(&b, &a), brute);
        }
    }

    #[test]
    fn the_index_skips_only_disjoint_pairs() {
        // 200 controllers: 50 apps x 4 tiers, plus a few unpinned ones.
        let mut cs = Vec::new();
        for app in 0..50 {
            for tier in 0..4 {
                cs.push(ctl("Deployment", &format!("d-{app}-{tier}"), &format!("app=a{app},tier=t{tier}"), None));
            }
        }
        cs.push(ctl("Deployment", "wild-1", "tier=t1", None));
        cs.push(ctl("Deployment", "wild-2", "app notin (a1)", None));
        let fast = analyze(&cs, &[], &Options { cross_kind: false, explain: false, sample: true });
        let n = cs.len();
        assert!(fast.pairs_compared < n * (n - 1) / 2 / 4, "compared {} pairs", fast.pairs_compared);
        // Brute force over every pair gives the same findings.
        let mut brute = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                if overlap(&cs[i].selector, &cs[j].selector).is_ok() {
                    let (x, y) = (cs[i].name.clone(), cs[j].name.clone());
                    brute.push(if x < y { (x, y) } else { (y, x) });
                }
            }
        }
        let mut got: Vec<(String, String)> = fast
            .findings
            .iter()
            .map(|f| {
                if f.a.name < f.b.name {
                    (f.a.name.to_string(), f.b.name.to_string())
                } else {
                    (f.b.name.to_string(), f.a.name.to_string())
                }
            })
            .collect();
        brute.sort();
        got.sort();
        assert_eq!(got, brute);
    }
}
