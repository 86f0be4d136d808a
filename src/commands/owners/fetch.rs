//! I/O for `owners`: every listable resource type, metadata-only (ownerReferences,
//! finalizers and deletion state all live in metadata), paginated, a bounded number
//! at a time; then full objects only for the status of rows actually printed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::{StreamExt, stream};
use jiff::Timestamp;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::analyze::chunked::Chunked;
use crate::analyze::intern::ListNames;
use crate::analyze::object_status::{Health, status};
use crate::analyze::owner_graph::{Coverage, Deletion, Graph, KindMap, KindRef, Listed, Object, OwnerRef, group_of};
use crate::analyze::resource_ref::ApiResource;
use crate::analyze::uid::Uid;
use crate::connect::list::{METADATA_PAGE_SIZE, Pages, gather, list_all_digested, list_all_paged, page_size};
use crate::connect::pace::FAN_OUT;
use crate::connect::{Accept, Session};
use crate::output::counted;

/// Groups whose objects are never owners or dependents, or duplicate another group's.
const SKIPPED_GROUPS: &[&str] = &["events.k8s.io", "metrics.k8s.io"];
/// Deprecated, computed on every list, never owned.
const SKIPPED_RESOURCES: &[&str] = &["componentstatuses"];

/// Kinds with no status to show (and Conn never reads them in full anyway): read by
/// [`full_objects`] only when asked for their metadata (trace's writers).
const METADATA_ONLY_KINDS: &[(&str, &str)] = &[("", "Secret"), ("", "ConfigMap")];

/// Where namespaced types are listed; cluster-scoped types are always listed cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    AllNamespaces,
}

pub use crate::connect::Skipped;

pub struct Snapshot {
    pub objects: Chunked<Object>,
    pub coverage: Coverage,
    pub skipped: Vec<Skipped>,
    pub server_time: Option<Timestamp>,
}

/// A list item as the owner graph reads it: its metadata.
#[derive(Deserialize)]
pub(crate) struct Item<L = IgnoredAny, A = IgnoredAny, M = IgnoredAny> {
    #[serde(default)]
    pub metadata: Meta<L, A, M>,
}

/// The metadata the owner graph reads, from JSON or from the protobuf metadata decoder, and
/// what `check` reads beside it in the same pass. Labels, annotations and managedFields are
/// type parameters: a command that does not read one leaves it `IgnoredAny`, and the decoder
/// steps over it instead of building it (labels are most of a pod's metadata). Spelled out
/// rather than `#[serde(flatten)]`ed: flatten buffers every field before decoding it, which
/// made the largest lists (pods) cost twice as much to decode.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Meta<L = IgnoredAny, A = IgnoredAny, M = IgnoredAny> {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub owner_references: Vec<OwnerRef>,
    #[serde(default)]
    pub finalizers: Vec<String>,
    pub creation_timestamp: Option<Timestamp>,
    pub deletion_timestamp: Option<Timestamp>,
    #[serde(default)]
    pub labels: L,
    #[serde(default)]
    pub annotations: A,
    #[serde(default)]
    pub managed_fields: M,
}

impl<L, A, M> Meta<L, A, M> {
    /// The namespace, None for a cluster-scoped object.
    pub fn namespace(&self) -> Option<String> {
        self.namespace.clone().filter(|n| !n.is_empty())
    }

    /// The owner graph's node; what it does not keep (labels, annotations, managedFields) is
    /// dropped, so take those first. `read_at`: the Date of the answer that carried it.
    pub fn into_object(mut self, names: &mut ListNames, read_at: Option<Timestamp>) -> Object {
        for r in &mut self.owner_references {
            r.share_names(&mut names.strings);
        }
        Object {
            uid: Uid::new(&self.uid),
            api_version: names.api_version.clone(),
            kind: names.kind.clone(),
            namespace: names.namespace(self.namespace.as_deref()),
            name: self.name,
            // Boxed: a decoded Vec of one reference holds four (Rust's smallest capacity for
            // items of this size), unused room on nearly every pod and ReplicaSet.
            owner_refs: self.owner_references.into(),
            created: self.creation_timestamp,
            deletion: Deletion::new(self.deletion_timestamp, self.finalizers).read_at(read_at),
        }
    }
}

/// The types to list: listable, the preferred version of each, minus the skipped ones.
pub fn plan(resources: &[ApiResource]) -> Vec<ApiResource> {
    let mut best: BTreeMap<(String, String), &ApiResource> = BTreeMap::new();
    for r in resources.iter().filter(|r| r.listable()) {
        if SKIPPED_GROUPS.contains(&r.group.as_str())
            || (r.group.is_empty() && SKIPPED_RESOURCES.contains(&r.plural.as_str()))
        {
            continue;
        }
        let slot = best.entry((r.group.clone(), r.plural.clone())).or_insert(r);
        if r.preferred && !slot.preferred {
            *slot = r;
        }
    }
    let mut planned: Vec<ApiResource> = best.into_values().cloned().collect();
    // Pods first: nearly always the longest chain of pages, which every other list can be
    // read beside. In discovery's order they waited for eight core lists ahead of them.
    planned.sort_by_key(|r| !(r.group.is_empty() && r.plural == "pods"));
    planned
}

/// Every kind the server serves, namespaced or not (the preferred version decides).
pub fn served(resources: &[ApiResource]) -> KindMap<bool> {
    let mut out = KindMap::new();
    for r in resources {
        if r.preferred || !out.contains_key(&KindRef(&r.group, &r.kind)) {
            out.insert((r.group.clone(), r.kind.clone()), r.namespaced);
        }
    }
    out
}

/// Counts listed types on stderr when it is a terminal ("listing 12/48 resource types").
pub struct Progress {
    done: AtomicUsize,
    total: AtomicUsize,
    shown: bool,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        Progress { done: AtomicUsize::new(0), total: AtomicUsize::new(total), shown: std::io::stderr().is_terminal() }
    }

    /// More types to list than were planned at first (an owner tree's cluster-scoped owners).
    fn add(&self, more: usize) {
        self.total.fetch_add(more, Ordering::Relaxed);
    }

    fn tick(&self) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.shown {
            eprint!("\r\x1b[Klisting {n}/{} resource types", self.total.load(Ordering::Relaxed));
        }
    }

    pub fn clear(&self) {
        if self.shown {
            eprint!("\r\x1b[K");
        }
    }
}

/// Where each type was listed, what could not be, and the server's clock.
pub struct Lists {
    pub listed: KindMap<Listed>,
    pub skipped: Vec<Skipped>,
    pub server_time: Option<Timestamp>,
}

/// What becomes of the objects [`list_types`] reads: `page` folds each page into its list's
/// `P` on the blocking pool as soon as the page is in, while the later pages and the other
/// lists are still being read; `list` takes each list's `P` as soon as the list is complete
/// (one per namespace when read namespace by namespace).
pub struct Intake<D, A> {
    pub page: D,
    pub list: A,
}

/// Lists `types` in `scope`, `concurrency` at a time, each with `accept(type)`, into
/// `intake`. A type that is forbidden or fails is a [`Skipped`] row; an unreachable server
/// or refused credentials end the whole read.
pub async fn list_types<T, P, D>(
    session: &Session,
    types: &[ApiResource],
    scope: &Scope,
    accept: impl Fn(&ApiResource) -> Accept,
    concurrency: usize,
    progress: &Progress,
    intake: Intake<D, impl FnMut(&ApiResource, P)>,
) -> anyhow::Result<Lists>
where
    T: DeserializeOwned + Send + 'static,
    P: Default + Send + 'static,
    D: Fn(&mut P, &ApiResource, Vec<T>, Option<Timestamp>) + Clone + Send + 'static,
{
    let mut lists = stream::iter(types.iter())
        .map(|r| {
            let ns = match scope {
                Scope::Namespace(ns) if r.namespaced => Some(ns.as_str()),
                _ => None,
            };
            let accept = accept(r);
            let (digest, resource) = (intake.page.clone(), r.clone());
            let page = move |part: &mut P, items: Vec<T>, read_at| digest(part, &resource, items, read_at);
            async move {
                let listed = if r.namespaced {
                    session.list_scoped_digested(ns, |ns| r.collection(ns), "", accept, page).await
                } else {
                    list_all_digested(&session.conn, &r.collection(None), "", accept, page_size(accept), page)
                        .await
                        .map(|l| (l, None))
                };
                progress.tick();
                (r, ns, listed)
            }
        })
        .buffer_unordered(concurrency);
    let mut absorb = intake.list;
    let mut out = Lists { listed: KindMap::new(), skipped: Vec::new(), server_time: None };
    while let Some((r, ns, listed)) = lists.next().await {
        let (listed, fallback) = match listed {
            Ok(l) => l,
            // The server cannot be reached, or refuses the credentials: nothing else will work either.
            Err(e) if !e.answered() || e.unauthorized() => return Err(e.into()),
            Err(e) => {
                let reason = e.skip_reason();
                out.skipped.push(Skipped { resource: r.qualified_name(), namespace: ns.map(str::to_string), reason });
                continue;
            }
        };
        out.server_time = out.server_time.or(listed.server_time);
        let place = match (ns, &fallback) {
            (Some(ns), _) => Listed::In(BTreeSet::from([ns.to_string()])),
            (None, Some(f)) => {
                out.skipped.push(Skipped {
                    resource: r.qualified_name(),
                    namespace: None,
                    reason: format!(
                        "forbidden across all namespaces, read in {} only ({})",
                        counted(f.read.len(), "namespace"),
                        f.source
                    ),
                });
                Listed::In(f.read.iter().cloned().collect())
            }
            (None, None) => Listed::Everywhere,
        };
        out.listed.insert((r.group.clone(), r.kind.clone()), place);
        for part in listed.items {
            absorb(r, part);
        }
    }
    out.skipped.sort_by(|a, b| a.resource.cmp(&b.resource));
    Ok(out)
}

/// Which types a snapshot lists, for a scope of one namespace. Every answer also lists the
/// namespaced types in it; cluster-scoped types are what the choice is about (there are
/// tens of them, and a CRD-heavy cluster has many more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every type: a scan's findings are about cluster-scoped objects too.
    Everything,
    /// What can depend on a namespaced object: its namespace's objects only. The garbage
    /// collector resolves a namespaced owner in the dependent's own namespace, and never for
    /// a cluster-scoped dependent (`owners --all -A` and `check -A` report that one).
    Dependents,
    /// [`Reach::Dependents`], then the cluster-scoped kinds those objects name as owners
    /// (and the kinds those name, and so on): an object's owners, up to its roots.
    Tree,
}

pub async fn snapshot(session: &Session, all: &[ApiResource], scope: &Scope, reach: Reach) -> anyhow::Result<Snapshot> {
    let planned = plan(all);
    let (mut types, mut later): (Vec<ApiResource>, Vec<ApiResource>) = match (scope, reach) {
        (Scope::Namespace(_), Reach::Dependents | Reach::Tree) => planned.into_iter().partition(|r| r.namespaced),
        _ => (planned, Vec::new()),
    };
    let served = served(all);
    let progress = Progress::new(0);
    let mut pages = Vec::new();
    let mut lists = Lists { listed: KindMap::new(), skipped: Vec::new(), server_time: None };
    while !types.is_empty() {
        let read = read_objects(session, &types, scope, &progress, &mut pages).await;
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                progress.clear();
                return Err(e);
            }
        };
        lists.listed.extend(read.listed);
        lists.skipped.extend(read.skipped);
        lists.server_time = lists.server_time.or(read.server_time);
        if reach != Reach::Tree {
            break;
        }
        let wanted = owner_kinds_unlisted(pages.iter().flatten(), &served, &lists.listed);
        (types, later) = later.into_iter().partition(|r| wanted.contains(&(r.group.clone(), r.kind.clone())));
    }
    progress.clear();
    lists.skipped.sort_by(|a, b| a.resource.cmp(&b.resource));
    Ok(Snapshot {
        objects: Chunked::from_pages(pages),
        coverage: Coverage { served, listed: lists.listed },
        skipped: lists.skipped,
        server_time: lists.server_time,
    })
}

/// Lists `types` metadata-only into `pages`, as owner-graph objects.
async fn read_objects(
    session: &Session,
    types: &[ApiResource],
    scope: &Scope,
    progress: &Progress,
    pages: &mut Vec<Vec<Object>>,
) -> anyhow::Result<Lists> {
    progress.add(types.len());
    // Page by page, moved into chunks at the end (see [`Chunked`]).
    let to_objects = |pages: &mut Pages<Object>, r: &ApiResource, items: Vec<Item>, read_at: Option<Timestamp>| {
        let mut names = ListNames::for_resource(r);
        gather(pages, items.into_iter().map(|i| i.metadata.into_object(&mut names, read_at)).collect());
    };
    let absorb = |_: &ApiResource, part: Pages<Object>| pages.extend(part);
    let intake = Intake { page: to_objects, list: absorb };
    list_types(session, types, scope, |_| Accept::MetadataList, FAN_OUT, progress, intake).await
}

/// The kinds `objects` name as owners that are served and not listed yet: what an owner
/// tree has still to read to reach its roots.
pub fn owner_kinds_unlisted<'a>(
    objects: impl Iterator<Item = &'a Object>,
    served: &KindMap<bool>,
    listed: &KindMap<Listed>,
) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for r in objects.flat_map(|o| o.owner_refs.iter()) {
        let group = group_of(&r.api_version);
        let kind = KindRef(group, &r.kind);
        if served.contains_key(&kind) && !listed.contains_key(&kind) {
            out.insert((group.to_string(), r.kind.to_string()));
        }
    }
    out
}

/// Status text for the printed `nodes`, from their full objects.
pub async fn statuses(
    session: &Session,
    graph: &Graph,
    nodes: &BTreeSet<usize>,
    resources: &[ApiResource],
) -> HashMap<usize, (String, Health)> {
    let found = full_objects(session, graph, nodes, resources, false).await;
    found.into_iter().filter_map(|(n, (v, _))| status(&graph.objects[n].kind, &v).map(|s| (n, s))).collect()
}

/// A whole object and the Date of the answer that carried it.
type Dated = (Value, Option<Timestamp>);

/// Full objects for `nodes`, each with the Date of the answer that carried it: one GET per
/// object, or one list of the kind in its namespace when many of its objects are wanted.
/// Secrets and ConfigMaps are never read whole; an object that cannot be read (or was
/// recreated since the list) is left out.
pub async fn full_objects(
    session: &Session,
    graph: &Graph,
    nodes: &BTreeSet<usize>,
    resources: &[ApiResource],
    metadata_only_kinds: bool,
) -> HashMap<usize, Dated> {
    let planned = plan(resources);
    let by_kind: HashMap<(&str, &str), &ApiResource> =
        planned.iter().map(|r| ((r.group.as_str(), r.kind.as_str()), r)).collect();
    let mut groups: BTreeMap<(&str, &str, Option<&str>), Vec<usize>> = BTreeMap::new();
    for &n in nodes {
        let o = &graph.objects[n];
        if !metadata_only_kinds && METADATA_ONLY_KINDS.contains(&(o.group(), &*o.kind)) {
            continue;
        }
        groups.entry((o.group(), &*o.kind, o.namespace.as_deref())).or_default().push(n);
    }
    let mut counts: HashMap<(&str, &str, Option<&str>), usize> = HashMap::new();
    for o in &graph.objects {
        *counts.entry((o.group(), &*o.kind, o.namespace.as_deref())).or_default() += 1;
    }
    let mut jobs: Vec<(String, Vec<usize>, bool)> = Vec::new();
    for (key @ (group, kind, ns), members) in groups {
        let Some(r) = by_kind.get(&(group, kind)) else { continue };
        let collection = r.collection(ns);
        // A list costs one request but reads every object of the kind there.
        if members.len() > 20 && members.len() * 4 >= counts.get(&key).copied().unwrap_or(0) {
            jobs.push((collection, members, true));
        } else {
            jobs.extend(
                members.into_iter().map(|n| (format!("{collection}/{}", graph.objects[n].name), vec![n], false)),
            );
        }
    }
    let found: Vec<Vec<(usize, Dated)>> = stream::iter(jobs)
        .map(|(path, members, is_list)| async move {
            if is_list {
                // Read whole for status only, and only when many of its objects are printed:
                // large pages keep the chain of round trips short.
                let listed = list_all_paged::<Value>(&session.conn, &path, "", Accept::Json, METADATA_PAGE_SIZE).await;
                let Ok(listed) = listed else {
                    return Vec::new();
                };
                let want: HashMap<&Uid, usize> = members.iter().map(|&n| (&graph.objects[n].uid, n)).collect();
                listed
                    .dated()
                    .filter_map(|(v, read_at)| {
                        let uid = v.pointer("/metadata/uid").and_then(Value::as_str)?;
                        want.get(&Uid::new(uid)).map(|&n| (n, (v, read_at)))
                    })
                    .collect()
            } else {
                match session.get_json::<Value>(&path).await {
                    // The same name may have been recreated since the list: check the uid.
                    Ok((v, reply))
                        if v.pointer("/metadata/uid")
                            .and_then(Value::as_str)
                            .is_some_and(|u| graph.objects[members[0]].uid == *u) =>
                    {
                        vec![(members[0], (v, reply.server_time))]
                    }
                    _ => Vec::new(),
                }
            }
        })
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    found.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::owner_graph::tests::{coverage, obj};

    #[test]
    fn an_owner_tree_reads_only_the_cluster_scoped_kinds_named_as_owners() {
        let mut listed = KindMap::new();
        for kind in ["Deployment", "ReplicaSet"] {
            listed.insert(("apps".to_string(), kind.to_string()), Listed::In(BTreeSet::from(["ns".to_string()])));
        }
        listed.insert(("".into(), "Pod".into()), Listed::In(BTreeSet::from(["ns".to_string()])));
        let served = coverage().served;
        let objects = [
            obj("p1", "Pod", Some("ns"), "mirror", &[("Node", "n1", "n1", true, false)]),
            obj("p2", "Pod", Some("ns"), "web-1", &[("ReplicaSet", "web", "rs", true, true)]),
            obj(
                "w1",
                "Widget",
                Some("ns"),
                "w",
                &[("Stack", "s", "s1", true, false), ("Gone", "g", "g1", false, false)],
            ),
        ];
        let wanted = owner_kinds_unlisted(objects.iter(), &served, &listed);
        // Node and Stack are cluster-scoped owners to read; ReplicaSet is read already and
        // Gone is not served (the graph reports it as such).
        let want: BTreeSet<(String, String)> =
            [("", "Node"), ("example.com", "Stack")].iter().map(|(g, k)| (g.to_string(), k.to_string())).collect();
        assert_eq!(wanted, want);
        listed.insert(("".into(), "Node".into()), Listed::Everywhere);
        listed.insert(("example.com".into(), "Stack".into()), Listed::Everywhere);
        assert!(owner_kinds_unlisted(objects.iter(), &served, &listed).is_empty(), "nothing left to read");
    }
}
