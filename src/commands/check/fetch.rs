//! I/O for `check`: each list read once and handed to every analysis that needs it.
//! Controllers, PDBs, Leases and LeaseCandidates are read whole (selectors, templates,
//! lease specs and controller status live outside metadata); every other type, pods
//! included, metadata-only. One extra metadata list names the pods with no node.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::Plan;
use super::whole;
use crate::analyze::check::Unscheduled;
use crate::analyze::chunked::Chunked;
use crate::analyze::intern::ListNames;
use crate::analyze::lease::LeaseSnapshot;
use crate::analyze::lease_report::CandidateSnapshot;
use crate::analyze::overlap::{Controller, PodMeta};
use crate::analyze::owner_graph::{self, Coverage, KindMap, KindRef, Object};
use crate::analyze::resource_ref::ApiResource;
use crate::analyze::selector::LabelPairs;
use crate::analyze::sequence::TraceObject;
use crate::analyze::silence::{self, IgnoreAnnotations, Marks};
use crate::commands::fields::census::{Census, DEFAULT_KINDS, Digest, Tally};
use crate::commands::leases::fetch::{Candidate, LeaseItem, leases_in, snapshot as lease_snapshot};
use crate::commands::overlaps::fetch::KINDS as OVERLAP_KINDS;
use crate::commands::owners::fetch::{
    self as owners_fetch, Intake, Item, Lists, Progress, Scope, Skipped, list_types, served,
};
use crate::connect::list::gather;
pub use crate::connect::list::{Pages, flatten};
use crate::connect::pace::FAN_OUT;
use crate::connect::{Accept, RequestError, Session};
use crate::source::dump;

#[derive(Default)]
pub struct Snapshot {
    pub server_time: Option<Timestamp>,
    /// Every object listed, for the owner graph (and holder pods' controller chains).
    pub objects: Chunked<Object>,
    pub coverage: Coverage,
    pub skipped: Vec<Skipped>,
    pub controllers: Vec<Controller>,
    /// Controllers whose selector could not be understood.
    pub invalid: Vec<String>,
    /// A page at a time (see [`Pages`]), moved into one Vec on the thread that reads them.
    pub pods: Pages<PodMeta>,
    pub leases: Vec<LeaseSnapshot>,
    pub leases_listed: bool,
    pub candidates: Vec<CandidateSnapshot>,
    /// Controllers from their full objects: the forest stalls are found in, with the pods
    /// `check::stall_forest` takes from `objects`. Pages, like `pods`.
    pub workloads: Pages<TraceObject>,
    /// The pods the API lists with no spec.nodeName.
    pub unscheduled: Unscheduled,
    pub census: Census,
    /// Objects the census read, by kind.
    pub census_checked: BTreeMap<String, usize>,
    /// uid -> the replicas a workload asks for (shown beside a lease holder's controller).
    pub replicas: HashMap<String, i32>,
    /// kube-system's Leases, read beside the lists when the scope is another namespace and
    /// trace runs: the built-in controllers' leases, which its stalls are joined with, live
    /// there. None when not read or not readable (the stalls then read what they need).
    pub system_leases: Option<Vec<LeaseSnapshot>>,
    /// The objects that carry an ignore annotation (or, when an ignore rule has a selector,
    /// labels), keyed as findings name them.
    pub marks: HashMap<MarkKey, Marks>,
}

/// An object as a finding names it: (namespace, kubectl TYPE/NAME).
pub type MarkKey = (Option<String>, String);

/// What one list adds to the snapshot, digested on the blocking pool page by page as the
/// pages come in: after the last page of the last list (pods, paged) only that page is left
/// to digest.
#[derive(Default)]
struct Digested {
    objects: Pages<Object>,
    controllers: Vec<Controller>,
    invalid: Vec<String>,
    pods: Pages<PodMeta>,
    leases: Vec<LeaseSnapshot>,
    candidates: Vec<CandidateSnapshot>,
    workloads: Pages<TraceObject>,
    /// The census's digests, and how many objects it read (None: not a census kind).
    digests: Vec<Digest>,
    census_checked: Option<usize>,
    replicas: HashMap<String, i32>,
    marks: Vec<(MarkKey, Marks)>,
}

/// The three collections with an entry per object (per pod) are [`Pages`] until every list
/// is in. The objects are moved into one Vec before the analyses start; pods and workloads by
/// the analysis thread that reads them, the two side by side after the last page rather than
/// one after the other before.
#[derive(Default)]
struct Gathered {
    objects: Pages<Object>,
    pods: Pages<PodMeta>,
    workloads: Pages<TraceObject>,
}

impl Snapshot {
    fn absorb(&mut self, r: &ApiResource, part: Digested, gathered: &mut Gathered, tally: &mut Tally) {
        gathered.objects.extend(part.objects);
        join(&mut self.controllers, part.controllers);
        join(&mut self.invalid, part.invalid);
        gathered.pods.extend(part.pods);
        join(&mut self.leases, part.leases);
        join(&mut self.candidates, part.candidates);
        gathered.workloads.extend(part.workloads);
        self.replicas.extend(part.replicas);
        self.marks.extend(part.marks);
        if let Some(n) = part.census_checked {
            *self.census_checked.entry(r.kind.clone()).or_default() += n;
        }
        for digest in part.digests {
            tally.add(&r.kind, digest);
        }
    }
}

/// Appends `part` to `all`, copying the shorter of the two. Parts of different lists were
/// already in the order the lists happened to arrive in; each keeps its own order, and what
/// check shows is sorted by name.
pub(super) fn join<T>(all: &mut Vec<T>, mut part: Vec<T>) {
    if part.len() > all.len() {
        std::mem::swap(all, &mut part);
    }
    all.extend(part);
}

/// How a type is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// Whole objects, kept as JSON for every analysis to decode its part.
    Full,
    /// Metadata-only, kept as JSON (managedFields for the census).
    MetadataJson,
    /// Metadata-only, decoded straight into what the graph and the pod list need.
    Metadata,
}

fn is(r: &ApiResource, group: &str, plural: &str) -> bool {
    r.group == group && r.plural == plural
}

/// The kind name overlaps compares `r` as, when it is one of its kinds.
fn overlap_kind(r: &ApiResource) -> Option<&'static str> {
    OVERLAP_KINDS
        .iter()
        .find(|(gv, plural, _)| is(r, gv.rsplit_once('/').map(|(g, _)| g).unwrap_or(""), plural))
        .map(|(_, _, kind)| *kind)
}

pub(super) fn census_kind(r: &ApiResource) -> bool {
    DEFAULT_KINDS.iter().any(|(group, _, plural, _)| is(r, group, plural))
}

fn is_pods(r: &ApiResource) -> bool {
    is(r, "", "pods")
}

/// Whether `plan` reads `r` whole (else metadata-only, or not at all).
pub(super) fn reads_whole(r: &ApiResource, plan: &Plan) -> bool {
    read_for(r, plan) == Some(Read::Full)
}

fn read_for(r: &ApiResource, plan: &Plan) -> Option<Read> {
    let lease_kind = is(r, "coordination.k8s.io", "leases");
    if (lease_kind && (plan.leases || plan.trace))
        || (is(r, "coordination.k8s.io", "leasecandidates") && plan.leases)
        || (overlap_kind(r).is_some() && (plan.overlaps || plan.trace || plan.leases))
    {
        return Some(Read::Full);
    }
    if census_kind(r) && plan.fields {
        return Some(Read::MetadataJson);
    }
    if plan.owners || (is_pods(r) && (plan.overlaps || plan.trace || plan.leases)) {
        return Some(Read::Metadata);
    }
    None
}

/// A whole object's metadata as the owner graph reads it, with its managedFields left as text
/// for the census: one pass over the object for both.
type Whole<'a> = Item<IgnoredAny, IgnoredAny, Option<&'a RawValue>>;

/// A metadata-only item: what the owner graph reads, plus the labels overlaps compares and
/// the annotations that silence findings.
type MetaItem = Item<LabelPairs, IgnoreAnnotations>;

/// Whole-object lists handed to the gate at once: four, as when the envelope's memory was
/// measured, since a page of whole objects is megabytes. Metadata lists go as the gate allows.
pub(super) const FULL_CONCURRENCY: usize = 4;

pub async fn snapshot(
    session: &Session,
    resources: &[ApiResource],
    scope: &Scope,
    plan: &Plan,
) -> anyhow::Result<Snapshot> {
    let types = plan_types(resources, plan);
    let (json_types, meta_types): (Planned, Planned) = types.into_iter().partition(|(_, read)| *read != Read::Metadata);
    let json_resources: Vec<ApiResource> = json_types.iter().map(|(r, _)| r.clone()).collect();
    let meta_resources: Vec<ApiResource> = meta_types.into_iter().map(|(r, _)| r).collect();
    let progress = Progress::new(json_resources.len() + meta_resources.len());
    let full_accept = |r: &ApiResource| {
        if json_types.iter().any(|(t, read)| t == r && *read == Read::Full) {
            Accept::Json
        } else {
            Accept::MetadataList
        }
    };
    let plan = *plan;
    // Each list is absorbed as soon as it is complete, while the others are still being read:
    // only the last one's share is left for after its last page.
    let absorbed = RefCell::new((Snapshot::default(), Gathered::default(), Tally::default()));
    let absorb = |r: &ApiResource, part: Digested| {
        let (snap, gathered, tally) = &mut *absorbed.borrow_mut();
        snap.absorb(r, part, gathered, tally);
    };
    let (json, meta, unscheduled, system_leases) = futures::join!(
        list_types(
            session,
            &json_resources,
            scope,
            full_accept,
            FULL_CONCURRENCY,
            &progress,
            Intake {
                page: move |part: &mut Digested, r: &ApiResource, items, at| read_json(&plan, part, r, items, at),
                list: absorb
            }
        ),
        list_types(
            session,
            &meta_resources,
            scope,
            |_| Accept::MetadataList,
            FAN_OUT,
            &progress,
            Intake {
                page: move |part: &mut Digested, r: &ApiResource, items, at| read_metadata(&plan, part, r, items, at),
                list: absorb
            }
        ),
        unscheduled_pods(session, scope, plan.trace),
        system_leases(session, scope, plan.trace)
    );
    progress.clear();
    let (json, meta) = (json?, meta?);
    let (mut snap, gathered, tally) = absorbed.into_inner();
    snap.objects = Chunked::from_pages(gathered.objects);
    snap.pods = gathered.pods;
    snap.workloads = gathered.workloads;
    snap.coverage = Coverage { served: served(resources), listed: KindMap::new() };
    snap.leases_listed = json.listed.contains_key(&KindRef("coordination.k8s.io", "Lease"));
    snap.system_leases = system_leases;
    match unscheduled {
        Ok(pods) => snap.unscheduled = pods,
        Err(skip) => snap.skipped.push(skip),
    }
    absorb_lists(&mut snap, &json, &meta);
    snap.census = tally.finish();
    snap.skipped.sort_by(|a, b| (&a.resource, &a.namespace).cmp(&(&b.resource, &b.namespace)));
    Ok(snap)
}

pub(super) type Planned = Vec<(ApiResource, Read)>;

/// A snapshot from a dump's pages (check --from), each page digested as a live list's page is.
pub(super) struct Replay {
    plan: Plan,
    snap: Snapshot,
    gathered: Gathered,
    tally: Tally,
}

impl Replay {
    pub fn new(plan: Plan) -> Replay {
        Replay { plan, snap: Snapshot::default(), gathered: Gathered::default(), tally: Tally::default() }
    }

    pub fn page(&mut self, page: dump::Page) {
        let r = &page.resource;
        if page.system_leases {
            let leases = page.items.iter().filter_map(|raw| serde_json::from_str::<LeaseItem>(raw.get()).ok());
            let system = self.snap.system_leases.get_or_insert_with(Vec::new);
            system.extend(leases.map(|item| lease_snapshot(item, page.read_at)));
            return;
        }
        // A list the mechanisms asked for do not read.
        let Some(read) = read_for(r, &self.plan) else { return };
        let mut part = Digested::default();
        if read == Read::Metadata {
            // Whole objects (a cluster-info dump's) read as their metadata, as metadata-only ones.
            let items = page.items.iter().filter_map(|raw| serde_json::from_str::<MetaItem>(raw.get()).ok()).collect();
            read_metadata(&self.plan, &mut part, r, items, page.read_at);
        } else {
            read_json(&self.plan, &mut part, r, page.items, page.read_at);
        }
        self.snap.absorb(r, part, &mut self.gathered, &mut self.tally);
    }

    /// The snapshot, with what the dump's trailer says of the whole read.
    pub fn finish(self, resources: &[ApiResource], trailer: dump::Trailer) -> Snapshot {
        let Replay { mut snap, gathered, tally, .. } = self;
        snap.objects = Chunked::from_pages(gathered.objects);
        snap.pods = gathered.pods;
        snap.workloads = gathered.workloads;
        let mut listed = KindMap::new();
        for l in trailer.listed {
            let place = if l.namespaces.is_empty() {
                owner_graph::Listed::Everywhere
            } else {
                owner_graph::Listed::In(l.namespaces.into_iter().collect())
            };
            listed.insert((l.group, l.kind), place);
        }
        snap.leases_listed = listed.contains_key(&KindRef("coordination.k8s.io", "Lease"));
        snap.coverage = Coverage { served: served(resources), listed };
        snap.server_time = trailer.server_time;
        snap.skipped = trailer.skipped;
        if let Some(u) = trailer.unscheduled {
            let keys = u.keys.into_iter().collect();
            snap.unscheduled = match u.namespace {
                Some(ns) => Unscheduled::names(ns, keys),
                None => Unscheduled::uids(keys),
            }
            .read_at(u.read_at);
        }
        snap.census = tally.finish();
        snap.skipped.sort_by(|a, b| (&a.resource, &a.namespace).cmp(&(&b.resource, &b.namespace)));
        snap
    }
}

/// The types to list and how, by what the chosen mechanisms need.
pub(super) fn plan_types(resources: &[ApiResource], plan: &Plan) -> Planned {
    owners_fetch::plan(resources).into_iter().filter_map(|r| read_for(&r, plan).map(|read| (r, read))).collect()
}

fn absorb_lists(snap: &mut Snapshot, json: &Lists, meta: &Lists) {
    snap.server_time = json.server_time.or(meta.server_time);
    for lists in [(&json.listed, &json.skipped), (&meta.listed, &meta.skipped)] {
        snap.coverage.listed.extend(lists.0.iter().map(|(k, v)| (k.clone(), v.clone())));
        snap.skipped.extend(lists.1.iter().cloned());
    }
}

/// What the owner graph reads of an object's text (None: not what the API gives), and the
/// census's digest of its managedFields when `census`.
pub(super) fn graph_read(text: &str, names: &mut ListNames, census: bool) -> (Option<Object>, Option<Digest>) {
    match serde_json::from_str::<Whole>(text) {
        Ok(Item { metadata }) => {
            let digest = census
                .then(|| {
                    let (namespace, name) = (metadata.namespace.clone().unwrap_or_default(), metadata.name.clone());
                    Digest::from_managed_fields(namespace, name, metadata.managed_fields).ok()
                })
                .flatten();
            (Some(metadata.into_object(names, None)), digest)
        }
        // What the graph reads is not what the API gives: the census may still read it.
        Err(_) => (None, census.then(|| Digest::from_json(text).ok()).flatten()),
    }
}

/// The marks silencing reads of a whole object, in a second pass over its text taken only
/// when the text names the ignore annotation or a rule wants labels.
fn marks_read(text: &str, r: &ApiResource, labels: bool) -> Option<(MarkKey, Marks)> {
    #[derive(Deserialize)]
    struct Item<'a> {
        #[serde(borrow)]
        metadata: M<'a>,
    }
    #[derive(Deserialize)]
    struct M<'a> {
        #[serde(default)]
        name: String,
        #[serde(default)]
        namespace: Option<String>,
        #[serde(borrow, default)]
        labels: Option<&'a RawValue>,
        #[serde(default)]
        annotations: IgnoreAnnotations,
    }
    if !labels && !text.contains(silence::ANNOTATION) {
        return None;
    }
    let m = serde_json::from_str::<Item>(text).ok()?.metadata;
    let labels = labels.then(|| m.labels.and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or_default());
    mark(r, m.namespace, &m.name, m.annotations, labels)
}

fn mark(
    r: &ApiResource,
    namespace: Option<String>,
    name: &str,
    annotations: IgnoreAnnotations,
    labels: Option<LabelPairs>,
) -> Option<(MarkKey, Marks)> {
    let marks = annotations.marks(labels)?;
    let namespace = namespace.filter(|n| !n.is_empty());
    Some(((namespace, crate::analyze::check::type_name(&r.kind, &r.group, name)), marks))
}

/// Each whole object is kept as its JSON text and decoded straight into the little the
/// analyses read (building a `Value` tree of every object first cost more than all of them): a
/// controller once for all of them ([`whole::read`]), any other object by the graph's read and
/// its own kind's.
fn read_json(plan: &Plan, part: &mut Digested, r: &ApiResource, items: Vec<Box<RawValue>>, read_at: Option<Timestamp>) {
    let overlap = overlap_kind(r);
    let census = plan.fields && census_kind(r);
    let (leases, candidates) =
        (is(r, "coordination.k8s.io", "leases"), is(r, "coordination.k8s.io", "leasecandidates"));
    if census {
        *part.census_checked.get_or_insert(0) += items.len();
    }
    let wants = overlap.map(|kind| whole::Wants {
        census,
        replicas: plan.leases,
        controller: plan.overlaps,
        workload: plan.trace && kind != "PodDisruptionBudget",
    });
    let (mut objects, mut workloads) = (Vec::with_capacity(items.len()), Vec::new());
    let mut names = ListNames::for_resource(r);
    for raw in items {
        let text = raw.get();
        part.marks.extend(marks_read(text, r, plan.marks_labels));
        if let (Some(kind), Some(wants)) = (overlap, wants) {
            let read = whole::read(text, &mut names, kind, wants)
                .unwrap_or_else(|| whole::apart(text, &mut names, kind, wants));
            part.digests.extend(read.digest);
            objects.extend(read.object);
            part.replicas.extend(read.replicas);
            match read.controller {
                Some(Ok(c)) => part.controllers.push(c),
                Some(Err(e)) => part.invalid.push(e),
                None => {}
            }
            workloads.extend(read.workload);
            continue;
        }
        let (object, digest) = graph_read(text, &mut names, census);
        objects.extend(object);
        part.digests.extend(digest);
        if leases {
            if let Ok(item) = serde_json::from_str::<LeaseItem>(text) {
                part.leases.push(lease_snapshot(item, read_at));
            }
        } else if candidates && let Ok(c) = serde_json::from_str::<Candidate>(text) {
            part.candidates.push(c.snapshot());
        }
    }
    // Ages are judged by the clock of the answer that carried each object.
    objects.iter_mut().for_each(|o: &mut Object| o.read_at(read_at));
    workloads.iter_mut().for_each(|w: &mut TraceObject| w.read_at = read_at);
    gather(&mut part.objects, objects);
    gather(&mut part.workloads, workloads);
}

fn read_metadata(plan: &Plan, part: &mut Digested, r: &ApiResource, items: Vec<MetaItem>, read_at: Option<Timestamp>) {
    let pods = is_pods(r);
    let n = items.len();
    let mut objects = Vec::with_capacity(n);
    let mut names = ListNames::for_resource(r);
    let mut pod_metas = Vec::with_capacity(if pods && plan.overlaps { n } else { 0 });
    for item in items {
        let mut m = item.metadata;
        let mut labels = std::mem::take(&mut m.labels);
        if pods && plan.overlaps {
            labels.share(&mut names.strings);
        }
        let namespace = m.namespace();
        let kept_labels = plan.marks_labels.then(|| labels.clone());
        part.marks.extend(mark(r, namespace.clone(), &m.name, std::mem::take(&mut m.annotations), kept_labels));
        let controller = m.owner_references.iter().find(|o| o.is_controller());
        if pods && plan.overlaps {
            pod_metas.push(PodMeta {
                namespace: names.namespace(namespace.as_deref()).unwrap_or_default(),
                name: m.name.clone(),
                labels,
                controller: controller.map(|c| (names.strings.get(&c.kind), c.name.clone(), c.uid.to_string())),
            });
        }
        objects.push(m.into_object(&mut names, read_at));
    }
    gather(&mut part.objects, objects);
    gather(&mut part.pods, pod_metas);
}

#[derive(Deserialize)]
struct UidOnly {
    #[serde(default)]
    uid: String,
}

/// Where the built-in controllers' leases are.
pub(super) const SYSTEM: &str = "kube-system";

/// kube-system's Leases when the lists do not cover them. Read beside the lists rather than
/// after the analyses: a stalled built-in controller is joined with its lease there, and
/// asking for it only once a stall is found put a whole list after everything else.
async fn system_leases(session: &Session, scope: &Scope, wanted: bool) -> Option<Vec<LeaseSnapshot>> {
    match scope {
        Scope::Namespace(ns) if wanted && ns != SYSTEM => {
            let (listed, _) = session.list_scoped::<LeaseItem>(Some(SYSTEM), leases_in, "", Accept::Json).await.ok()?;
            Some(listed.dated().map(|(item, at)| lease_snapshot(item, at)).collect())
        }
        _ => None,
    }
}

/// The pods with no node, from a list with a field selector. In one namespace, a table of
/// their names: its rows (a pod's printed cells) are a third the size of a metadata list's
/// items, which carry every managedFields entry, and compress ten times better. Across
/// namespaces, where a table's rows would not say whose a name is, their uids from a metadata
/// list. Either is cheap when most pods are running, and when most are not (a cluster with no
/// nodes) the table answers a list of every pod in a tenth of the bytes. A server that
/// cannot print pods as a table (406) is asked for the metadata list instead.
pub(super) async fn unscheduled_pods(session: &Session, scope: &Scope, wanted: bool) -> Result<Unscheduled, Skipped> {
    if !wanted {
        return Ok(Unscheduled::default());
    }
    let (ns, read) = match scope {
        Scope::Namespace(ns) => {
            let query = format!("{NO_NODE}&includeObject=None");
            let read = match session.list_scoped::<Row>(Some(ns), pods_in, &query, Accept::Table).await {
                Err(e) if e.not_acceptable() => unscheduled_uids(session, Some(ns)).await,
                read => read.map(|(listed, _)| {
                    let read_at = listed.server_time;
                    Unscheduled::names(ns.clone(), listed.items.into_iter().map(|r| r.name).collect()).read_at(read_at)
                }),
            };
            (Some(ns.as_str()), read)
        }
        Scope::AllNamespaces => (None, unscheduled_uids(session, None).await),
    };
    read.map_err(|e| Skipped {
        resource: "pods (with no node)".into(),
        namespace: ns.map(str::to_string),
        reason: if e.forbidden() { "forbidden".into() } else { e.to_string() },
    })
}

const NO_NODE: &str = "fieldSelector=spec.nodeName%3D";

fn pods_in(ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_string(),
    }
}

/// The uids of the pods with no node, from a metadata list.
async fn unscheduled_uids(session: &Session, ns: Option<&str>) -> Result<Unscheduled, RequestError> {
    #[derive(Deserialize)]
    struct Item {
        metadata: UidOnly,
    }
    let (listed, _) = session.list_scoped::<Item>(ns, pods_in, NO_NODE, Accept::MetadataList).await?;
    let read_at = listed.server_time;
    Ok(Unscheduled::uids(listed.items.into_iter().map(|i| i.metadata.uid).collect()).read_at(read_at))
}

/// A row of a Table: the name, its first cell; the other cells are skipped.
struct Row {
    name: String,
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct FirstCell;
        impl<'de> Visitor<'de> for FirstCell {
            type Value = String;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table row's cells, a name first")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
                let name: String = seq.next_element()?.ok_or_else(|| A::Error::custom("a row with no cells"))?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(name)
            }
        }
        struct Cells;
        impl<'de> serde::de::DeserializeSeed<'de> for Cells {
            type Value = String;
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
                d.deserialize_seq(FirstCell)
            }
        }
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Row;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table row")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
                let mut name = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "cells" {
                        name = Some(map.next_value_seed(Cells)?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Row { name: name.ok_or_else(|| A::Error::missing_field("cells"))? })
            }
        }
        d.deserialize_map(Fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_its_first_cell() {
        let rows: Vec<Row> = serde_json::from_str(
            r#"[{"cells":["web-1","0/1","Pending",0,"5m"],"object":null},{"object":null,"cells":["web-\u0032"]}]"#,
        )
        .unwrap();
        assert_eq!(rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["web-1", "web-2"]);
        for odd in [r#"[{"object":null}]"#, r#"[{"cells":[]}]"#, r#"[{"cells":[5]}]"#, r#"[{"cells":"web"}]"#, "[5]"] {
            assert!(serde_json::from_str::<Vec<Row>>(odd).is_err(), "{odd}");
        }
    }
}
