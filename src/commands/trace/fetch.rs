//! I/O for `trace`: the owner tree below the object (every listable type, metadata-only,
//! as `owners` reads it), full objects for the subtree only (observedGeneration, replicas,
//! nodeName and conditions live outside metadata), the Events of the scope, and the
//! leader leases of the controllers that stalls name.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Result, anyhow};
use futures::{StreamExt, stream};
use jiff::Timestamp;
use serde_json::Value;

use crate::analyze::lease::LeaseSnapshot;
use crate::analyze::owner_graph::{Graph, Walk, tree};
use crate::analyze::resource_ref::ApiResource;
use crate::analyze::sequence::{EventSnap, TraceObject, TraceSnapshot, event_from_json, object_from_json};
use crate::analyze::sequence_text::with_type;
use crate::analyze::stall::{LeaseKey, LeaseLookup, lease_for_manager};
use crate::commands::leases::fetch::{LeaseItem, leases_in, snapshot as lease_snapshot};
use crate::commands::owners::fetch::{self as owners_fetch, Reach, Scope, Skipped};
use crate::connect::list::encode;
use crate::connect::pace::FAN_OUT;
use crate::connect::{Accept, Session};

pub struct Fetched {
    pub snap: TraceSnapshot,
    /// The control-plane leases, read beside the subtree in case a stall names them.
    pub leases: BTreeMap<LeaseKey, LeaseLookup>,
    pub skipped: Vec<Skipped>,
    pub server_time: Option<Timestamp>,
    /// Where the subtree lives (the namespace, or every namespace for a cluster-scoped root).
    pub scope: Scope,
}

/// The object `resource`/`name` and everything below it in the owner tree.
pub async fn subtree(
    session: &Session,
    resources: &[ApiResource],
    resource: &ApiResource,
    name: &str,
) -> Result<Fetched> {
    // Dependents of a cluster-scoped object may live in any namespace.
    let scope = if session.all_namespaces || !resource.namespaced {
        Scope::AllNamespaces
    } else {
        Scope::Namespace(session.namespace.clone())
    };
    let events_ns = match &scope {
        Scope::Namespace(ns) => Some(ns.as_str()),
        Scope::AllNamespaces => None,
    };
    let listed = if scope == Scope::AllNamespaces {
        owners_fetch::snapshot(session, resources, &scope, Reach::Dependents).await?
    } else {
        // Down from a namespaced root: its namespace holds every dependent.
        session.checking_namespace(owners_fetch::snapshot(session, resources, &scope, Reach::Dependents)).await?
    };
    let mut skipped = listed.skipped;
    let graph = Graph::build(listed.objects, &listed.coverage);
    let ns = resource.namespaced.then_some(session.namespace.as_str());
    let root = graph.find(&resource.group, &resource.kind, ns, name).ok_or_else(|| {
        let place = ns.map(|n| format!(" in namespace {n:?}")).unwrap_or_default();
        match skipped.iter().find(|s| s.resource == resource.qualified_name()) {
            Some(s) => anyhow!("cannot list {}{place}: {}", s.resource, s.reason),
            None => anyhow!("{} {name:?} not found{place}", resource.plural),
        }
    })?;
    let rows: Vec<_> =
        tree(&graph, root, Walk { up: false, down: true, depth: None }).into_iter().filter(|r| !r.repeat).collect();
    let nodes: BTreeSet<usize> = rows.iter().map(|r| r.node).collect();
    // Full objects, their Events and the control-plane leases: independent, so side by side.
    let wanted: Vec<(String, Option<String>)> = nodes
        .iter()
        .map(|&n| (graph.objects[n].uid.to_string(), graph.objects[n].namespace.as_deref().map(str::to_string)))
        .collect();
    let control_plane = [LeaseKey::control_plane("kube-controller-manager"), LeaseKey::control_plane("kube-scheduler")];
    let (mut full, events, leases) = futures::join!(
        // Secrets and ConfigMaps too, as metadata (all Conn reads of them): their
        // managedFields name who wrote them.
        owners_fetch::full_objects(session, &graph, &nodes, resources, true),
        events(session, events_ns, &wanted),
        leases(session, control_plane.into())
    );
    let events = match events {
        Ok(e) => e,
        Err(reason) => {
            skipped.push(Skipped { resource: "events".into(), namespace: events_ns.map(str::to_string), reason });
            Vec::new()
        }
    };

    let mut snap = TraceSnapshot::default();
    // The parent of a row is the last row one level up (rows come depth first).
    let mut at_depth: Vec<usize> = Vec::new();
    for row in &rows {
        let depth = row.prefix.chars().count() / 2;
        at_depth.truncate(depth);
        let parent = depth.checked_sub(1).and_then(|d| at_depth.get(d).copied());
        let o = &graph.objects[row.node];
        let object = match full.remove(&row.node) {
            // Read from a list, whose items carry no type, or alone: the type is the list's.
            Some((mut v, read_at)) => {
                with_type(&mut v, &o.api_version, &o.kind);
                TraceObject { read_at, ..object_from_json(&v) }
            }
            None => TraceObject::from_metadata(o),
        };
        at_depth.push(snap.objects.len());
        snap.objects.push(object);
        snap.parent.push(parent);
        snap.prefix.push(row.prefix.clone());
    }
    let uids: BTreeSet<&str> = snap.objects.iter().map(|o| o.uid.as_str()).collect();
    snap.events = events.into_iter().filter(|e| uids.contains(e.object_uid.as_str())).collect();
    skipped.sort_by(|a, b| a.resource.cmp(&b.resource));
    Ok(Fetched { snap, leases, skipped, server_time: listed.server_time, scope })
}

/// Above this many objects one list of the scope's Events beats one list per object.
const EVENT_LISTS_PER_OBJECT: usize = 64;

/// The Events about `objects` (uid, namespace), from core/v1 (it carries both APIs'
/// events): selected by involvedObject.uid for a small subtree (a namespace of thousands of
/// pods has thousands of scheduler events nobody asked about), else the scope's whole list.
async fn events(
    session: &Session,
    scope: Option<&str>,
    objects: &[(String, Option<String>)],
) -> Result<Vec<EventSnap>, String> {
    let collection = |ns: Option<&str>| match ns {
        Some(ns) => format!("/api/v1/namespaces/{}/events", encode(ns)),
        None => "/api/v1/events".to_string(),
    };
    let why = |e: crate::connect::RequestError| if e.forbidden() { "forbidden".to_string() } else { e.to_string() };
    if objects.len() > EVENT_LISTS_PER_OBJECT {
        let (listed, _) = session.list_scoped::<Value>(scope, collection, "", Accept::Json).await.map_err(why)?;
        return Ok(listed.items.iter().map(event_from_json).collect());
    }
    let lists: Vec<Result<Vec<EventSnap>, String>> = stream::iter(objects)
        .map(|(uid, ns)| async move {
            let query = format!("fieldSelector={}", encode(&format!("involvedObject.uid={uid}")));
            // Events about a cluster-scoped object may be in any namespace.
            let (listed, _) = session
                .list_scoped::<Value>(ns.as_deref().or(scope), collection, &query, Accept::Json)
                .await
                .map_err(why)?;
            Ok(listed.items.iter().map(event_from_json).collect())
        })
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    lists.into_iter().collect::<Result<Vec<_>, _>>().map(|l| l.into_iter().flatten().collect())
}

/// Reads the leases `keys` name: a GET each for named leases, one list of every lease
/// for controllers known only by their field manager.
pub async fn leases(session: &Session, keys: BTreeSet<LeaseKey>) -> BTreeMap<LeaseKey, LeaseLookup> {
    let wants_list = keys.iter().any(|k| matches!(k, LeaseKey::Manager { .. }));
    let all = async {
        if !wants_list {
            return Ok(Vec::new());
        }
        session
            .list_scoped::<LeaseItem>(None, leases_in, "", Accept::Json)
            .await
            .map(|(l, _)| l.dated().map(|(item, at)| lease_snapshot(item, at)).collect::<Vec<LeaseSnapshot>>())
            .map_err(|e| if e.forbidden() { "forbidden".to_string() } else { e.to_string() })
    };
    let named: Vec<&LeaseKey> = keys.iter().filter(|k| matches!(k, LeaseKey::Named { .. })).collect();
    let gets = stream::iter(named)
        .map(|key| async move {
            let LeaseKey::Named { namespace, name } = key else { unreachable!("filtered to named keys") };
            let path = format!("{}/{}", leases_in(Some(namespace)), encode(name));
            let found = match session.get_json::<LeaseItem>(&path).await {
                Ok((item, reply)) => LeaseLookup::Found(Box::new(lease_snapshot(item, reply.server_time))),
                Err(e) if e.not_found() => LeaseLookup::Missing,
                Err(e) if e.forbidden() => LeaseLookup::Unreadable("forbidden".into()),
                Err(e) => LeaseLookup::Unreadable(e.to_string()),
            };
            (key.clone(), found)
        })
        .buffer_unordered(FAN_OUT)
        .collect::<Vec<_>>();
    let (all, gets) = futures::join!(all, gets);
    let mut out: BTreeMap<LeaseKey, LeaseLookup> = gets.into_iter().collect();
    for key in keys {
        if let LeaseKey::Manager { manager } = &key {
            let found = match &all {
                Ok(leases) => lease_for_manager(manager, leases)
                    .cloned()
                    .map_or(LeaseLookup::Missing, |l| LeaseLookup::Found(Box::new(l))),
                Err(why) => LeaseLookup::Unreadable(why.clone()),
            };
            out.insert(key, found);
        }
    }
    out
}

/// The resources to watch for a live trace: the kinds in the subtree and the kinds the
/// built-in controllers create below them (a Deployment's new ReplicaSet, its pods).
pub fn watched_kinds(snap: &TraceSnapshot, resources: &[ApiResource]) -> Vec<ApiResource> {
    /// (group, kind) of a controller, and the (group, kind)s it creates.
    type Creates = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
    const CREATES: &[Creates] = &[
        ("apps", "Deployment", &[("apps", "ReplicaSet")]),
        ("apps", "ReplicaSet", &[("", "Pod")]),
        ("apps", "StatefulSet", &[("", "Pod"), ("apps", "ControllerRevision")]),
        ("apps", "DaemonSet", &[("", "Pod"), ("apps", "ControllerRevision")]),
        ("batch", "CronJob", &[("batch", "Job")]),
        ("batch", "Job", &[("", "Pod")]),
        ("", "ReplicationController", &[("", "Pod")]),
    ];
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    let mut frontier: Vec<(String, String)> =
        snap.objects.iter().map(|o| (o.group().to_string(), o.kind.to_string())).collect();
    while let Some(k) = frontier.pop() {
        if !wanted.insert(k.clone()) {
            continue;
        }
        if let Some((_, _, children)) = CREATES.iter().find(|(g, kind, _)| (*g, *kind) == (k.0.as_str(), k.1.as_str()))
        {
            frontier.extend(children.iter().map(|(g, kind)| (g.to_string(), kind.to_string())));
        }
    }
    let by_kind: HashMap<(String, String), ApiResource> =
        owners_fetch::plan(resources).into_iter().map(|r| ((r.group.clone(), r.kind.clone()), r)).collect();
    wanted
        .into_iter()
        .filter_map(|k| by_kind.get(&k).cloned())
        .filter(|r| r.verbs.iter().any(|v| v == "watch"))
        .collect()
}
