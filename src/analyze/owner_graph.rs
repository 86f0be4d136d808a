//! The ownerReferences graph, with every reference resolved the way the garbage
//! collector resolves it: by kind and name in the namespace the GC looks in (the
//! dependent's own, or none for a cluster-scoped owner kind), then compared by uid.
//! A uid match alone is not enough (kubectl-tree's mistake). Pure.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use super::chunked::Chunked;
use super::intern::Interner;
use super::uid::Uid;

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, Equivalent, HashMap as FastMap, HashTable};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One object, as a metadata-only list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub uid: Uid,
    /// group/version of the resource it was listed through ("v1" for the core group).
    /// Shared (see [`crate::analyze::intern`]), as are the kind and namespace: at the
    /// envelope a hundred thousand objects held their own copies of a few dozen strings.
    pub api_version: Arc<str>,
    pub kind: Arc<str>,
    pub namespace: Option<Arc<str>>,
    pub name: String,
    /// Boxed slices, not Vecs: 8 bytes fewer each, and never more room than items.
    pub owner_refs: Box<[OwnerRef]>,
    pub created: Option<Timestamp>,
    pub deletion: Deletion,
}

impl Object {
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    pub fn deleting_since(&self) -> Option<Timestamp> {
        self.deletion.0.as_ref().and_then(|d| d.since)
    }

    pub fn finalizers(&self) -> &[String] {
        self.deletion.0.as_ref().map_or(&[], |d| &d.finalizers)
    }

    /// The server's clock for how long its deletion has taken: the Date of the answer that
    /// carried it, else `now`.
    pub fn deletion_judged_at(&self, now: Timestamp) -> Timestamp {
        self.deletion_read_at().unwrap_or(now)
    }

    /// The Date of the answer that carried an object with a deletion state.
    pub fn deletion_read_at(&self) -> Option<Timestamp> {
        self.deletion.0.as_ref().and_then(|d| d.read_at)
    }

    /// Keeps the Date of the answer that carried the object, where an age will be judged
    /// (its deletion's).
    pub fn read_at(&mut self, read_at: Option<Timestamp>) {
        self.deletion = std::mem::take(&mut self.deletion).read_at(read_at);
    }
}

/// When the object's deletion began, and its finalizers (which may be set long before).
/// Boxed, and absent when there is neither: few objects have either, and inline they cost
/// every object 40 bytes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Deletion(Option<Box<Deleting>>);

#[derive(Debug, Clone, PartialEq)]
pub struct Deleting {
    since: Option<Timestamp>,
    finalizers: Vec<String>,
    /// The Date of the answer that carried the object (the only age the graph judges is a
    /// deletion's, so the clock is kept here rather than on every object).
    read_at: Option<Timestamp>,
}

impl Deletion {
    pub fn new(since: Option<Timestamp>, mut finalizers: Vec<String>) -> Deletion {
        if since.is_none() && finalizers.is_empty() {
            return Deletion(None);
        }
        finalizers.shrink_to_fit();
        Deletion(Some(Box::new(Deleting { since, finalizers, read_at: None })))
    }

    /// The deletion as read in an answer dated `read_at`.
    pub fn read_at(mut self, read_at: Option<Timestamp>) -> Deletion {
        if let Some(d) = &mut self.0 {
            d.read_at = read_at;
        }
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    #[serde(default)]
    pub api_version: Arc<str>,
    #[serde(default)]
    pub kind: Arc<str>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: Uid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    /// Points its kind and API version at `strings`' shared copies.
    pub fn share_names(&mut self, strings: &mut Interner) {
        self.api_version = strings.get(&self.api_version);
        self.kind = strings.get(&self.kind);
    }

    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
    pub fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }
}

/// "apps/v1" -> "apps"; "v1" -> "".
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// Which kinds the server serves and which of them were listed where: a reference
/// to a kind that was not listed cannot be judged (it may well be live).
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    /// (group, kind) -> namespaced, for every kind the server serves.
    pub served: KindMap<bool>,
    /// (group, kind) -> where it was listed.
    pub listed: KindMap<Listed>,
}

/// A map keyed by (group, kind), looked up with borrowed strings: every owner reference
/// is looked up, and building an owned key for each cost two allocations.
pub type KindMap<V> = FastMap<(String, String), V>;

/// (group, kind) borrowed, hashed as the owned pair is.
#[derive(Clone, Copy)]
pub struct KindRef<'a>(pub &'a str, pub &'a str);

impl Hash for KindRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0, self.1).hash(state);
    }
}

impl Equivalent<(String, String)> for KindRef<'_> {
    fn equivalent(&self, key: &(String, String)) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// Cluster-wide (a cluster-scoped kind, or a namespaced kind in all namespaces).
    Everywhere,
    In(BTreeSet<String>),
}

impl Coverage {
    pub fn covers(&self, group: &str, kind: &str, namespace: Option<&str>) -> bool {
        match (self.listed.get(&KindRef(group, kind)), namespace) {
            (Some(Listed::Everywhere), _) => true,
            (Some(Listed::In(set)), Some(ns)) => set.contains(ns),
            _ => false,
        }
    }
}

/// What a reference resolves to, in the garbage collector's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefState {
    /// The owner exists: same kind, name, namespace and uid.
    Live(usize),
    /// No object of that kind and name where the GC looks: dangling.
    Missing,
    /// An object of that kind and name exists with another uid: dangling.
    Recreated(usize),
    /// The uid is an object in another namespace: the GC treats the reference as absent.
    OtherNamespace(usize),
    /// A cluster-scoped dependent naming a namespaced kind: never resolved, never collected.
    NamespacedOwnerOfClusterScoped,
    /// The server no longer serves the owner's kind: the GC cannot resolve it and keeps retrying.
    KindNotServed,
    /// The owner's kind was not listed (forbidden, or outside the scope read): unknown.
    Unknown,
}

impl RefState {
    /// The GC counts the owner as gone (the reference is dangling or invalid).
    pub fn absent(self) -> bool {
        matches!(self, RefState::Missing | RefState::Recreated(_) | RefState::OtherNamespace(_))
    }
}

#[derive(Debug)]
pub struct Graph {
    /// By index, as every other table here names them (see [`Chunked`]).
    pub objects: Chunked<Object>,
    /// refs[i][k]: how object i's k-th reference resolves.
    pub refs: Rows<RefState>,
    /// links[i]: (dependent, reference index) of every reference naming object i's uid.
    links: Rows<(usize, usize)>,
    /// Indexes of `objects` by (group, kind, namespace, name), found by borrowed parts: a map
    /// keyed by owned strings cost four copies an object and four more a lookup.
    by_key: ByKey,
}

#[derive(Debug)]
struct ByKey {
    table: HashTable<usize>,
    hasher: DefaultHashBuilder,
}

/// An object's key as borrowed parts: (group, kind, namespace, name).
type Key<'a> = (&'a str, &'a str, Option<&'a str>, &'a str);

fn key_of(o: &Object) -> Key<'_> {
    (o.group(), &o.kind, o.namespace.as_deref(), &o.name)
}

impl ByKey {
    fn insert(&mut self, objects: &Chunked<Object>, i: usize) {
        let key = key_of(&objects[i]);
        let hasher = &self.hasher;
        let entry = self.table.entry(
            hasher.hash_one(key),
            |&j| key_of(&objects[j]) == key,
            |&j| hasher.hash_one(key_of(&objects[j])),
        );
        match entry {
            // Two objects of one key (a list read twice): the later one wins, as a map's insert.
            Entry::Occupied(mut e) => *e.get_mut() = i,
            Entry::Vacant(e) => {
                e.insert(i);
            }
        }
    }

    fn get(&self, objects: &Chunked<Object>, key: Key<'_>) -> Option<usize> {
        self.table.find(self.hasher.hash_one(key), |&j| key_of(&objects[j]) == key).copied()
    }
}

impl Graph {
    pub fn build(objects: impl Into<Chunked<Object>>, coverage: &Coverage) -> Graph {
        let objects = objects.into();
        let mut by_uid: FastMap<&Uid, usize> = FastMap::with_capacity(objects.len());
        let mut by_key =
            ByKey { table: HashTable::with_capacity(objects.len()), hasher: DefaultHashBuilder::default() };
        for (i, o) in objects.iter().enumerate() {
            by_uid.insert(&o.uid, i);
            by_key.insert(&objects, i);
        }
        let mut refs = Rows::with_capacity(objects.len(), objects.iter().map(|o| o.owner_refs.len()).sum());
        // (owner, (dependent, reference index)) of each reference naming a listed uid.
        let mut named = Vec::new();
        for (d, o) in objects.iter().enumerate() {
            for (k, r) in o.owner_refs.iter().enumerate() {
                if let Some(&owner) = by_uid.get(&r.uid) {
                    named.push((owner, (d, k)));
                }
                refs.items.push(resolve(o, r, &objects, &by_uid, &by_key, coverage));
            }
            refs.end_row();
        }
        drop(by_uid);
        let links = Rows::grouped(objects.len(), named);
        Graph { objects, refs, links, by_key }
    }

    /// How objects are ordered wherever order is shown: by namespace, kind and name. Indices
    /// follow the order the lists arrived in, which differs from run to run.
    fn name_order(&self, i: usize) -> (&Option<Arc<str>>, &str, &str, &Uid) {
        let o = &self.objects[i];
        (&o.namespace, &o.kind, &o.name, &o.uid)
    }

    pub fn find(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<usize> {
        self.by_key.get(&self.objects, (group, kind, namespace, name))
    }

    /// References naming `owner` by uid: (dependent, reference index). Includes invalid ones
    /// (another namespace, a cluster-scoped dependent), which the tree shows and the findings explain.
    pub fn dependents(&self, owner: usize) -> &[(usize, usize)] {
        &self.links[owner]
    }

    /// Objects that `dependent` names by uid: (owner, reference index).
    pub fn owners(&self, dependent: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.refs[dependent].iter().enumerate().filter_map(|(k, s)| match s {
            RefState::Live(o) | RefState::OtherNamespace(o) => Some((*o, k)),
            _ => None,
        })
    }
}

fn resolve(
    dependent: &Object,
    r: &OwnerRef,
    objects: &Chunked<Object>,
    by_uid: &FastMap<&Uid, usize>,
    by_key: &ByKey,
    coverage: &Coverage,
) -> RefState {
    let group = group_of(&r.api_version);
    let Some(&namespaced) = coverage.served.get(&KindRef(group, &r.kind)) else {
        return RefState::KindNotServed;
    };
    if namespaced && dependent.namespace.is_none() {
        return RefState::NamespacedOwnerOfClusterScoped;
    }
    let ns = if namespaced { dependent.namespace.as_deref() } else { None };
    if let Some(&i) = by_uid.get(&r.uid) {
        let o = &objects[i];
        if o.kind == r.kind && o.group() == group && o.name == r.name {
            if o.namespace.as_deref() == ns {
                return RefState::Live(i);
            }
            if o.namespace.is_some() {
                return RefState::OtherNamespace(i);
            }
        }
    }
    if !coverage.covers(group, &r.kind, ns) {
        return RefState::Unknown;
    }
    match by_key.get(objects, (group, &r.kind, ns, &r.name)) {
        Some(i) => RefState::Recreated(i),
        None => RefState::Missing,
    }
}

/// One row of items per object, all rows in one Vec: a Vec per object cost its 24 bytes
/// and an allocation each, for rows of one or two items (most objects have one owner
/// reference; most owners a handful of dependents). Indexing gives the row as a slice.
#[derive(Debug)]
pub struct Rows<T> {
    /// Row i is items[starts[i]..starts[i + 1]].
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Rows<T> {
    fn with_capacity(rows: usize, items: usize) -> Rows<T> {
        let mut starts = Vec::with_capacity(rows + 1);
        starts.push(0);
        Rows { starts, items: Vec::with_capacity(items) }
    }

    /// Ends the row being filled (its items are those pushed since the last row ended).
    fn end_row(&mut self) {
        self.starts.push(u32::try_from(self.items.len()).expect("fewer than 2^32 references"));
    }

    /// `rows` rows from (row, item) pairs in any row order; a row keeps its items' order.
    fn grouped(rows: usize, mut pairs: Vec<(usize, T)>) -> Rows<T> {
        let mut starts = vec![0u32; rows + 1];
        for (row, _) in &pairs {
            starts[row + 1] += 1;
        }
        for i in 0..rows {
            starts[i + 1] += starts[i];
        }
        pairs.sort_by_key(|&(row, _)| row); // stable
        Rows { starts, items: pairs.into_iter().map(|(_, item)| item).collect() }
    }

    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> std::ops::Index<usize> for Rows<T> {
    type Output = [T];
    fn index(&self, row: usize) -> &[T] {
        &self.items[self.starts[row] as usize..self.starts[row + 1] as usize]
    }
}

/// One printed line of a tree: which object, how deep, and through which reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    pub node: usize,
    /// Box-drawing prefix, e.g. "│ └─".
    pub prefix: String,
    /// The reference (dependent, index) linking this row to the row it hangs under.
    pub via: Option<(usize, usize)>,
    /// Already printed higher up (an object with several owners): not expanded again.
    pub repeat: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Walk {
    pub up: bool,
    pub down: bool,
    /// Levels in each direction; None: unbounded.
    pub depth: Option<usize>,
}

/// The target's owners up to the roots and its dependents down to the leaves, as one
/// tree drawn from the roots. Shared parts of the DAG are printed once and marked after.
pub fn tree(graph: &Graph, target: usize, walk: Walk) -> Vec<TreeRow> {
    let mut keep = vec![false; graph.objects.len()];
    keep[target] = true;
    if walk.up {
        reach(target, walk.depth, &mut keep, |n| graph.owners(n).map(|(o, _)| o).collect());
    }
    if walk.down {
        reach(target, walk.depth, &mut keep, |n| graph.dependents(n).iter().map(|&(d, _)| d).collect());
    }
    let children = |n: usize| -> Vec<(usize, usize)> {
        let mut c: Vec<(usize, usize)> =
            graph.dependents(n).iter().copied().filter(|&(d, _)| keep[d] && d != n).collect();
        c.sort_by(|a, b| order_key(graph, a.0).cmp(&order_key(graph, b.0)));
        c.dedup_by_key(|c| c.0);
        c
    };
    let has_parent = |n: usize| graph.owners(n).any(|(o, _)| keep[o] && o != n);
    let mut kept: Vec<usize> = (0..graph.objects.len()).filter(|&n| keep[n]).collect();
    kept.sort_by(|&a, &b| order_key(graph, a).cmp(&order_key(graph, b)));
    // Parentless objects first; then, for parts that hang on a cycle and so have no
    // parentless object above them, any object not printed yet.
    let starts = kept.iter().copied().filter(|&n| !has_parent(n)).chain(kept.iter().copied());
    let mut printed = vec![false; graph.objects.len()];
    let mut rows = Vec::new();
    for root in starts {
        if !printed[root] {
            walk_from(root, &children, &mut printed, &mut rows);
        }
    }
    rows
}

/// Depth-first from `root`, printing each object once and marking it where it recurs.
fn walk_from(
    root: usize,
    children: &dyn Fn(usize) -> Vec<(usize, usize)>,
    printed: &mut [bool],
    rows: &mut Vec<TreeRow>,
) {
    // Iterative depth-first walk.
    struct Pending {
        node: usize,
        via: Option<(usize, usize)>,
        prefix: String,
        child_prefix: String,
    }
    let mut stack = vec![Pending { node: root, via: None, prefix: String::new(), child_prefix: String::new() }];
    while let Some(Pending { node, via, prefix, child_prefix }) = stack.pop() {
        if printed[node] {
            rows.push(TreeRow { node, prefix, via, repeat: true });
            continue;
        }
        printed[node] = true;
        rows.push(TreeRow { node, prefix, via, repeat: false });
        let kids = children(node);
        let last = kids.len().saturating_sub(1);
        for (i, (d, k)) in kids.into_iter().enumerate().rev() {
            let (branch, cont) = if i == last { ("└─", "  ") } else { ("├─", "│ ") };
            stack.push(Pending {
                node: d,
                via: Some((d, k)),
                prefix: format!("{child_prefix}{branch}"),
                child_prefix: format!("{child_prefix}{cont}"),
            });
        }
    }
}

fn order_key(graph: &Graph, n: usize) -> (&str, Option<&str>, &str) {
    let o = &graph.objects[n];
    (&*o.kind, o.namespace.as_deref(), o.name.as_str())
}

/// Marks everything reachable from `start` through `next` within `depth` levels.
fn reach(start: usize, depth: Option<usize>, keep: &mut [bool], next: impl Fn(usize) -> Vec<usize>) {
    let mut seen = vec![false; keep.len()];
    seen[start] = true;
    let mut frontier = vec![start];
    let mut level = 0;
    while !frontier.is_empty() && depth.is_none_or(|d| level < d) {
        let mut following = Vec::new();
        for n in frontier {
            for m in next(n) {
                if !seen[m] {
                    seen[m] = true;
                    keep[m] = true;
                    following.push(m);
                }
            }
        }
        frontier = following;
        level += 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    DanglingReference,
    CrossNamespaceReference,
    ClusterScopedDependent,
    OwnerKindNotServed,
    MultipleControllers,
    ReferenceCycle,
    StuckInDeletion,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub object: usize,
    /// Index of the reference concerned, when one is.
    pub reference: Option<usize>,
    pub message: String,
}

/// Every finding about the objects in `scope` (indices), by the object's namespace, kind and name.
/// `now` is the server's clock; deletions older than `stuck_after` with finalizers left are stuck.
pub fn findings(graph: &Graph, scope: &[usize], now: Option<Timestamp>, stuck_after_secs: i64) -> Vec<Finding> {
    let mut out = Vec::new();
    let in_scope = {
        let mut v = vec![false; graph.objects.len()];
        scope.iter().for_each(|&i| v[i] = true);
        v
    };
    for &i in scope {
        let o = &graph.objects[i];
        let live_owner = graph.refs[i].iter().any(|s| !s.absent());
        for (k, state) in graph.refs[i].iter().enumerate() {
            let r = &o.owner_refs[k];
            // Formatted only for a reference reported: most are live.
            let owner = || format!("{} {:?}", r.kind, r.name);
            let fate = if live_owner {
                "the garbage collector removes this reference"
            } else {
                "no owner is left, so the garbage collector will delete this object"
            };
            let (kind, message) = match *state {
                RefState::Missing => (
                    FindingKind::DanglingReference,
                    format!("owner {} does not exist (uid {}); {fate}", owner(), r.uid),
                ),
                RefState::Recreated(other) => (
                    FindingKind::DanglingReference,
                    format!(
                        "owner {} exists with another uid ({}, not {}): it was recreated; {fate}",
                        owner(),
                        graph.objects[other].uid,
                        r.uid
                    ),
                ),
                RefState::OtherNamespace(other) => (
                    FindingKind::CrossNamespaceReference,
                    format!(
                        "owner {} is in namespace {:?}; references across namespaces are treated as absent: {fate}",
                        owner(),
                        graph.objects[other].namespace.as_deref().unwrap_or_default()
                    ),
                ),
                RefState::NamespacedOwnerOfClusterScoped => (
                    FindingKind::ClusterScopedDependent,
                    format!(
                        "a cluster-scoped object names the namespaced {} as owner: the reference can never resolve, so this object is never collected",
                        owner()
                    ),
                ),
                RefState::KindNotServed => (
                    FindingKind::OwnerKindNotServed,
                    format!(
                        "owner kind {} ({}) is not served by this server: the garbage collector cannot resolve the reference and never collects this object",
                        r.kind, r.api_version
                    ),
                ),
                RefState::Live(_) | RefState::Unknown => continue,
            };
            out.push(Finding { kind, object: i, reference: Some(k), message });
        }
        let controllers = o.owner_refs.iter().filter(|r| r.is_controller()).count();
        if controllers > 1 {
            let names: Vec<String> =
                o.owner_refs.iter().filter(|r| r.is_controller()).map(|r| format!("{} {:?}", r.kind, r.name)).collect();
            out.push(Finding {
                kind: FindingKind::MultipleControllers,
                object: i,
                reference: None,
                message: format!("{controllers} references claim to be its controller: {}", names.join(", ")),
            });
        }
        if let (Some(since), Some(now)) = (o.deleting_since(), now)
            && !o.finalizers().is_empty()
        {
            let secs = o.deletion_judged_at(now).as_second() - since.as_second();
            if secs >= stuck_after_secs {
                out.push(Finding {
                    kind: FindingKind::StuckInDeletion,
                    object: i,
                    reference: None,
                    message: format!(
                        "deleting for {}, still waiting on finalizers: {}",
                        crate::age::human(std::time::Duration::from_secs(secs.max(0) as u64)),
                        o.finalizers().join(", ")
                    ),
                });
            }
        }
    }
    for cycle in cycles(graph) {
        let Some(&first) = cycle.iter().find(|&&n| in_scope[n]) else { continue };
        let names: Vec<String> =
            cycle.iter().map(|&n| format!("{} {:?}", graph.objects[n].kind, graph.objects[n].name)).collect();
        out.push(Finding {
            kind: FindingKind::ReferenceCycle,
            object: first,
            reference: None,
            message: format!(
                "ownerReferences form a cycle ({}): each keeps the others alive, and foreground deletion of any of them can wait forever",
                names.join(" -> ")
            ),
        });
    }
    out.sort_by(|a, b| {
        let key = |f: &Finding| (graph.name_order(f.object), f.kind, f.reference);
        key(a).cmp(&key(b))
    });
    out
}

/// Strongly connected components of the live-reference graph with more than one object,
/// or an object owning itself (Tarjan's algorithm, iterative).
pub fn cycles(graph: &Graph) -> Vec<Vec<usize>> {
    let n = graph.objects.len();
    // The live owner at or after edge `pos` of `v`, with the position after it: walked in
    // place, since collecting each vertex's edges cost an allocation per object.
    let next_edge = |v: usize, mut pos: usize| -> Option<(usize, usize)> {
        while let Some(r) = graph.refs[v].get(pos) {
            pos += 1;
            if let RefState::Live(o) = r {
                return Some((*o, pos));
            }
        }
        None
    };
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut work: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for start in 0..n {
        if index[start] != usize::MAX || graph.refs[start].is_empty() {
            continue;
        }
        work.push((start, 0));
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some((v, pos)) = work.last_mut() {
            let v = *v;
            if let Some((w, after)) = next_edge(v, *pos) {
                *pos = after;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] != index[v] {
                continue;
            }
            // Almost every object is a component of its own: no Vec for those.
            if stack.last() == Some(&v) {
                stack.pop();
                on_stack[v] = false;
                if graph.refs[v].iter().any(|r| matches!(r, RefState::Live(o) if *o == v)) {
                    out.push(vec![v]);
                }
                continue;
            }
            let mut component = Vec::new();
            while let Some(w) = stack.pop() {
                on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            // The finding names the first.
            component.sort_by(|&a, &b| graph.name_order(a).cmp(&graph.name_order(b)));
            out.push(component);
        }
    }
    out
}

impl FindingKind {
    /// Its stable code (analyze/codes.rs lists them all).
    pub fn code(self) -> &'static str {
        match self {
            FindingKind::DanglingReference => "CO201",
            FindingKind::CrossNamespaceReference => "CO202",
            FindingKind::ClusterScopedDependent => "CO203",
            FindingKind::OwnerKindNotServed => "CO204",
            FindingKind::MultipleControllers => "CO205",
            FindingKind::ReferenceCycle => "CO206",
            FindingKind::StuckInDeletion => "CO207",
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::collections::HashMap;

    pub fn obj(
        uid: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
        owners: &[(&str, &str, &str, bool, bool)],
    ) -> Object {
        let api_version = match kind {
            "Deployment" | "ReplicaSet" => "apps/v1",
            "Widget" | "Stack" => "example.com/v1",
            "Node" | "Pod" | "ConfigMap" | "Namespace" => "v1",
            _ => "other.io/v1",
        };
        let group_version = |k: &str| match k {
            "Deployment" | "ReplicaSet" => "apps/v1",
            "Widget" | "Stack" => "example.com/v1",
            "Gone" => "gone.io/v1",
            _ => "v1",
        };
        Object {
            uid: uid.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: ns.map(Arc::from),
            name: name.into(),
            owner_refs: owners
                .iter()
                .map(|&(kind, name, uid, controller, block)| OwnerRef {
                    api_version: group_version(kind).into(),
                    kind: kind.into(),
                    name: name.into(),
                    uid: uid.into(),
                    controller: Some(controller),
                    block_owner_deletion: Some(block),
                })
                .collect(),
            created: None,
            deletion: Deletion::default(),
        }
    }

    pub fn coverage() -> Coverage {
        let mut c = Coverage::default();
        for (g, k, namespaced) in [
            ("apps", "Deployment", true),
            ("apps", "ReplicaSet", true),
            ("", "Pod", true),
            ("", "ConfigMap", true),
            ("", "Node", false),
            ("example.com", "Widget", true),
            ("example.com", "Stack", false),
        ] {
            c.served.insert((g.into(), k.into()), namespaced);
            c.listed.insert((g.into(), k.into()), Listed::Everywhere);
        }
        c
    }

    fn deployment_tree() -> Graph {
        Graph::build(
            vec![
                obj("d", "Deployment", Some("a"), "web", &[]),
                obj("rs1", "ReplicaSet", Some("a"), "web-1", &[("Deployment", "web", "d", true, true)]),
                obj("rs2", "ReplicaSet", Some("a"), "web-2", &[("Deployment", "web", "d", true, true)]),
                obj("p1", "Pod", Some("a"), "web-1-x", &[("ReplicaSet", "web-1", "rs1", true, true)]),
                obj("p2", "Pod", Some("a"), "web-2-y", &[("ReplicaSet", "web-2", "rs2", true, true)]),
                obj("other", "Pod", Some("a"), "lonely", &[]),
            ],
            &coverage(),
        )
    }

    #[test]
    fn rows_grouped_keep_each_rows_order_and_empty_rows() {
        let pairs = vec![(2, 'a'), (0, 'b'), (2, 'c'), (0, 'd'), (3, 'e')];
        let rows = Rows::grouped(5, pairs);
        assert_eq!(rows.len(), 5);
        let got: Vec<Vec<char>> = (0..rows.len()).map(|i| rows[i].to_vec()).collect();
        assert_eq!(got, vec![vec!['b', 'd'], vec![], vec!['a', 'c'], vec!['e'], vec![]]);
        let mut filled = Rows::with_capacity(3, 2);
        filled.items.push(1);
        filled.end_row();
        filled.end_row();
        filled.items.push(2);
        filled.end_row();
        assert_eq!((filled.len(), &filled[0], &filled[1], &filled[2]), (3, &[1][..], &[][..], &[2][..]));
    }

    fn names(g: &Graph, rows: &[TreeRow]) -> Vec<String> {
        rows.iter()
            .map(|r| format!("{}{}{}", r.prefix, g.objects[r.node].name, if r.repeat { " (again)" } else { "" }))
            .collect()
    }

    #[test]
    fn tree_from_the_middle_walks_up_and_down() {
        let g = deployment_tree();
        let rs1 = g.find("apps", "ReplicaSet", Some("a"), "web-1").unwrap();
        let rows = tree(&g, rs1, Walk { up: true, down: true, depth: None });
        assert_eq!(names(&g, &rows), vec!["web", "└─web-1", "  └─web-1-x"]);
        let d = g.find("apps", "Deployment", Some("a"), "web").unwrap();
        let rows = tree(&g, d, Walk { up: true, down: true, depth: None });
        assert_eq!(names(&g, &rows), vec!["web", "├─web-1", "│ └─web-1-x", "└─web-2", "  └─web-2-y"]);
        let rows = tree(&g, d, Walk { up: false, down: true, depth: Some(1) });
        assert_eq!(names(&g, &rows), vec!["web", "├─web-1", "└─web-2"]);
        let p = g.find("", "Pod", Some("a"), "web-2-y").unwrap();
        let rows = tree(&g, p, Walk { up: true, down: false, depth: None });
        assert_eq!(names(&g, &rows), vec!["web", "└─web-2", "  └─web-2-y"]);
    }

    #[test]
    fn shared_dependents_print_once_then_marked() {
        let g = Graph::build(
            vec![
                obj("w1", "Widget", Some("a"), "one", &[]),
                obj("w2", "Widget", Some("a"), "two", &[]),
                obj(
                    "c",
                    "ConfigMap",
                    Some("a"),
                    "shared",
                    &[("Widget", "one", "w1", false, false), ("Widget", "two", "w2", false, true)],
                ),
                obj("p", "Pod", Some("a"), "below", &[("ConfigMap", "shared", "c", false, false)]),
            ],
            &coverage(),
        );
        let c = g.find("", "ConfigMap", Some("a"), "shared").unwrap();
        let rows = tree(&g, c, Walk { up: true, down: true, depth: None });
        assert_eq!(names(&g, &rows), vec!["one", "└─shared", "  └─below", "two", "└─shared (again)"]);
        // The repeated row hangs under "two" through the reference that blocks.
        let last = rows.last().unwrap();
        assert!(g.objects[last.via.unwrap().0].owner_refs[last.via.unwrap().1].blocks());
    }

    #[test]
    fn references_resolve_like_the_garbage_collector() {
        let g = Graph::build(
            vec![
                obj("cm-a", "ConfigMap", Some("a"), "owner", &[]),
                obj("cm-b", "ConfigMap", Some("b"), "owner", &[]),
                obj("n1", "Node", None, "node-1", &[]),
                obj("x1", "Pod", Some("a"), "live", &[("ConfigMap", "owner", "cm-a", false, false)]),
                obj("x2", "Pod", Some("a"), "gone", &[("ConfigMap", "nobody", "zzz", false, false)]),
                obj("x3", "Pod", Some("a"), "recreated", &[("ConfigMap", "owner", "old-uid", false, false)]),
                obj("x4", "Pod", Some("a"), "cross", &[("ConfigMap", "owner", "cm-b", false, false)]),
                obj("x5", "Node", None, "clusterwide", &[("ConfigMap", "owner", "cm-a", false, false)]),
                obj("x6", "Pod", Some("a"), "unserved", &[("Gone", "g", "g-uid", false, false)]),
                obj("x7", "Pod", Some("a"), "mirror", &[("Node", "node-1", "n1", true, false)]),
            ],
            &coverage(),
        );
        let state = |name: &str| g.refs[g.objects.iter().position(|o| o.name == name).unwrap()][0];
        assert_eq!(state("live"), RefState::Live(0));
        assert_eq!(state("gone"), RefState::Missing);
        assert_eq!(state("recreated"), RefState::Recreated(0));
        assert_eq!(state("cross"), RefState::OtherNamespace(1));
        assert_eq!(state("clusterwide"), RefState::NamespacedOwnerOfClusterScoped);
        assert_eq!(state("unserved"), RefState::KindNotServed);
        assert_eq!(state("mirror"), RefState::Live(2), "namespaced dependents may have cluster-scoped owners");
        let all: Vec<usize> = (0..g.objects.len()).collect();
        let kinds: Vec<(String, FindingKind)> =
            findings(&g, &all, None, 300).into_iter().map(|f| (g.objects[f.object].name.clone(), f.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("clusterwide".into(), FindingKind::ClusterScopedDependent),
                ("cross".into(), FindingKind::CrossNamespaceReference),
                ("gone".into(), FindingKind::DanglingReference),
                ("recreated".into(), FindingKind::DanglingReference),
                ("unserved".into(), FindingKind::OwnerKindNotServed),
            ]
        );
    }

    /// Found by the tree property test: o0 and o2 own each other and o0 owns o1. From o1
    /// no parentless object exists above, and the walk printed o1 alone.
    #[test]
    fn ancestors_on_a_cycle_are_printed() {
        let g = Graph::build(
            vec![
                obj("u0", "ConfigMap", Some("a"), "o0", &[("ConfigMap", "o2", "u2", false, false)]),
                obj("u1", "ConfigMap", Some("a"), "o1", &[("ConfigMap", "o0", "u0", false, false)]),
                obj("u2", "ConfigMap", Some("a"), "o2", &[("ConfigMap", "o0", "u0", false, false)]),
            ],
            &coverage(),
        );
        let rows = tree(&g, 1, Walk { up: true, down: true, depth: None });
        assert_eq!(names(&g, &rows), vec!["o0", "├─o1", "└─o2", "  └─o0 (again)"]);
    }

    #[test]
    fn an_unlisted_owner_kind_is_unknown_not_dangling() {
        let mut cov = coverage();
        cov.listed.insert(("".into(), "ConfigMap".into()), Listed::In(["b".to_string()].into()));
        let g = Graph::build(vec![obj("x", "Pod", Some("a"), "p", &[("ConfigMap", "c", "u", false, false)])], &cov);
        assert_eq!(g.refs[0][0], RefState::Unknown);
        assert!(findings(&g, &[0], None, 0).is_empty());
    }

    #[test]
    fn cycles_multiple_controllers_and_stuck_deletions() {
        let mut objects = vec![
            obj("a", "ConfigMap", Some("n"), "a", &[("ConfigMap", "b", "b", false, false)]),
            obj("b", "ConfigMap", Some("n"), "b", &[("ConfigMap", "a", "a", false, false)]),
            obj("s", "ConfigMap", Some("n"), "self", &[("ConfigMap", "self", "s", false, false)]),
            obj(
                "m",
                "Pod",
                Some("n"),
                "two-bosses",
                &[("ConfigMap", "a", "a", true, false), ("ConfigMap", "b", "b", true, false)],
            ),
            obj("t", "ConfigMap", Some("n"), "stuck", &[]),
        ];
        let now: Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        objects[4].deletion =
            Deletion::new(Some("2026-01-01T00:00:00Z".parse().unwrap()), vec!["example.com/hold".into()]);
        let g = Graph::build(objects, &coverage());
        assert_eq!(cycles(&g), vec![vec![0, 1], vec![2]]);
        let all: Vec<usize> = (0..g.objects.len()).collect();
        let f = findings(&g, &all, Some(now), 300);
        let kinds: Vec<FindingKind> = f.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                FindingKind::ReferenceCycle,
                FindingKind::ReferenceCycle,
                FindingKind::StuckInDeletion,
                FindingKind::MultipleControllers
            ]
        );
        assert!(f[2].message.contains("60m") && f[2].message.contains("example.com/hold"), "{}", f[2].message);
        assert!(findings(&g, &[4], Some(now), 7200).is_empty(), "younger than the threshold");
        // The tree of a cycle still terminates and prints each object once.
        let rows = tree(&g, 0, Walk { up: true, down: true, depth: None });
        assert_eq!(rows.iter().filter(|r| !r.repeat).count(), 3);
    }

    /// The graph of `objects` listed in `order`, and every finding in it.
    fn listed_in(objects: &[Object; 3], order: [usize; 3]) -> (Graph, Vec<Finding>) {
        let g = Graph::build(order.iter().map(|&i| objects[i].clone()).collect::<Vec<_>>(), &coverage());
        let f = findings(&g, &[0, 1, 2], None, 300);
        (g, f)
    }

    #[test]
    fn findings_come_by_name_whatever_order_the_objects_were_listed_in() {
        let objects = [
            obj("z", "ConfigMap", Some("n"), "z", &[("ConfigMap", "gone", "gone-1", false, false)]),
            obj("b", "ConfigMap", Some("n"), "b", &[("ConfigMap", "gone", "gone-2", false, false)]),
            obj("p", "Pod", Some("a"), "p", &[("ConfigMap", "gone", "gone-3", false, false)]),
        ];
        for order in [[0, 1, 2], [2, 1, 0], [1, 0, 2]] {
            let (g, f) = listed_in(&objects, order);
            let names: Vec<&str> = f.iter().map(|f| g.objects[f.object].name.as_str()).collect();
            assert_eq!(names, ["p", "b", "z"], "{f:?}");
        }
    }

    #[test]
    fn a_cycle_is_named_the_same_whatever_order_its_objects_were_listed_in() {
        let cycle = [
            obj("c", "ConfigMap", Some("n"), "c", &[("ConfigMap", "a", "a", false, false)]),
            obj("a", "ConfigMap", Some("n"), "a", &[("ConfigMap", "b", "b", false, false)]),
            obj("b", "ConfigMap", Some("n"), "b", &[("ConfigMap", "c", "c", false, false)]),
        ];
        let messages: Vec<(String, String)> = [[0, 1, 2], [2, 0, 1], [1, 2, 0]]
            .into_iter()
            .map(|order| {
                let (g, f) = listed_in(&cycle, order);
                assert_eq!(f.len(), 1);
                (g.objects[f[0].object].name.clone(), f[0].message.clone())
            })
            .collect();
        assert_eq!(messages[0].0, "a");
        assert!(messages[0].1.contains(r#"ConfigMap "a" -> ConfigMap "b" -> ConfigMap "c""#), "{}", messages[0].1);
        assert!(messages.iter().all(|m| *m == messages[0]), "{messages:?}");
    }

    #[test]
    fn a_kind_is_found_by_borrowed_strings() {
        let c = coverage();
        assert_eq!(c.served.get(&KindRef("apps", "Deployment")), Some(&true));
        assert_eq!(c.served.get(&KindRef("", "Deployment")), None);
        assert_eq!(c.served.get(&KindRef("apps", "ReplicaSe")), None);
        assert!(c.covers("", "Pod", Some("any")));
    }

    use proptest::prelude::*;

    fn arb_graph() -> impl Strategy<Value = Graph> {
        (1usize..9)
            .prop_flat_map(|n| (Just(n), proptest::collection::vec(proptest::collection::vec(0..n + 1, 0..3), n)))
            .prop_map(|(n, refs)| {
                let objects: Vec<Object> = refs
                    .into_iter()
                    .enumerate()
                    .map(|(i, rs)| {
                        let named: Vec<(String, String)> =
                            rs.into_iter()
                                .map(|t| {
                                    if t < n { (format!("o{t}"), format!("u{t}")) } else { ("gone".into(), "x".into()) }
                                })
                                .collect();
                        let owners: Vec<(&str, &str, &str, bool, bool)> =
                            named.iter().map(|(nm, u)| ("ConfigMap", nm.as_str(), u.as_str(), false, false)).collect();
                        obj(&format!("u{i}"), "ConfigMap", Some("a"), &format!("o{i}"), &owners)
                    })
                    .collect();
                Graph::build(objects, &coverage())
            })
    }

    /// Everything reachable from `start` through `next`, by repeated expansion.
    fn closure(n: usize, start: usize, next: impl Fn(usize) -> Vec<usize>) -> Vec<bool> {
        let mut seen = vec![false; n];
        seen[start] = true;
        loop {
            let before = seen.clone();
            for (i, _) in before.iter().enumerate().filter(|(_, s)| **s) {
                for j in next(i) {
                    seen[j] = true;
                }
            }
            if seen == before {
                return seen;
            }
        }
    }

    proptest! {
        #[test]
        fn the_tree_prints_exactly_the_ancestors_and_descendants_once(g in arb_graph(), pick in 0usize..9) {
            let n = g.objects.len();
            let target = pick % n;
            let up = closure(n, target, |i| g.owners(i).map(|(o, _)| o).collect());
            let down = closure(n, target, |i| g.dependents(i).iter().map(|&(d, _)| d).collect());
            let rows = tree(&g, target, Walk { up: true, down: true, depth: None });
            let mut printed = vec![0usize; n];
            for r in rows.iter().filter(|r| !r.repeat) {
                printed[r.node] += 1;
            }
            for i in 0..n {
                prop_assert_eq!(printed[i], usize::from(up[i] || down[i]), "object {}", i);
            }
            for r in &rows {
                prop_assert!(up[r.node] || down[r.node]);
                // A row hangs under a reference of the row's own object.
                if let Some((d, k)) = r.via {
                    prop_assert_eq!(d, r.node);
                    prop_assert!(k < g.objects[d].owner_refs.len());
                }
            }
            // Findings never panic and only name objects asked about.
            let scope: Vec<usize> = (0..n).filter(|&i| up[i] || down[i]).collect();
            for f in findings(&g, &scope, None, 0) {
                prop_assert!(scope.contains(&f.object));
            }
        }

        /// The cycles are the sets of objects that reach each other through live owners (and
        /// objects that own themselves), each once.
        #[test]
        fn cycles_are_the_objects_that_reach_each_other(g in arb_graph()) {
            let n = g.objects.len();
            let live = |i: usize| -> Vec<usize> {
                g.refs[i].iter().filter_map(|r| match r { RefState::Live(o) => Some(*o), _ => None }).collect()
            };
            // Reachable in one step or more.
            let reach: Vec<Vec<bool>> = (0..n)
                .map(|i| {
                    let mut seen = vec![false; n];
                    for j in live(i) {
                        for (k, r) in closure(n, j, live).into_iter().enumerate() {
                            seen[k] |= r;
                        }
                    }
                    seen
                })
                .collect();
            let mut expected: Vec<Vec<usize>> = Vec::new();
            for i in (0..n).filter(|&i| reach[i][i]) {
                let mut component: Vec<usize> = (0..n).filter(|&j| reach[i][j] && reach[j][i]).collect();
                component.sort_by(|&a, &b| g.name_order(a).cmp(&g.name_order(b)));
                if !expected.contains(&component) {
                    expected.push(component);
                }
            }
            let mut found = cycles(&g);
            found.sort();
            expected.sort();
            prop_assert_eq!(found, expected);
        }

        /// The borrowed-key index answers as a map keyed by owned strings, the later of two
        /// objects of one key winning, for keys present and absent.
        #[test]
        fn find_answers_as_a_map_of_owned_keys(
            picks in proptest::collection::vec((0usize..3, 0usize..3, 0usize..3, 0usize..4), 0..40),
            asks in proptest::collection::vec((0usize..3, 0usize..3, 0usize..3, 0usize..4), 1..20),
        ) {
            const KINDS: [&str; 3] = ["Deployment", "Widget", "ConfigMap"];
            const NAMESPACES: [Option<&str>; 3] = [None, Some("a"), Some("b")];
            const NAMES: [&str; 3] = ["x", "y", "xy"];
            let objects: Vec<Object> = picks
                .iter()
                .enumerate()
                .map(|(i, &(k, ns, nm, _))| obj(&format!("u{i}"), KINDS[k], NAMESPACES[ns], NAMES[nm], &[]))
                .collect();
            let mut expected: HashMap<(String, String, Option<String>, String), usize> = HashMap::new();
            for (i, o) in objects.iter().enumerate() {
                let ns = o.namespace.as_deref().map(str::to_string);
                expected.insert((o.group().to_string(), o.kind.to_string(), ns, o.name.clone()), i);
            }
            let g = Graph::build(objects, &coverage());
            for (k, ns, nm, wrong_group) in asks {
                let group = ["apps", "example.com", "", "other.io"][if wrong_group == 3 { 3 } else { k }];
                let key = (group.to_string(), KINDS[k].to_string(), NAMESPACES[ns].map(str::to_string), NAMES[nm].to_string());
                prop_assert_eq!(g.find(group, KINDS[k], NAMESPACES[ns], NAMES[nm]), expected.get(&key).copied());
            }
        }
    }
}
#[cfg(test)]
mod size {
    // The graph holds one Object per object in scope (186,000 at the envelope), twice over
    // for a moment when the pages are flattened: a field added inline costs that much.
    #[test]
    fn an_object_stays_small() {
        assert!(std::mem::size_of::<super::Object>() <= 144, "{}", std::mem::size_of::<super::Object>());
        assert!(std::mem::size_of::<super::super::uid::Uid>() <= 24);
    }
}
