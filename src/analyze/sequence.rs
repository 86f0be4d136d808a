//! Watch-driven sequencing reconstructed from live state: for an object and the
//! objects below it, the hops (creation, spec, status and metadata writes, events)
//! with the writer of each and the lag from the hop that caused it. Pure: the fetch
//! layer turns objects and Events into [`TraceObject`] and [`EventSnap`].
//!
//! What each time is worth: creationTimestamp and managedFields times have whole
//! seconds, and a managedFields time is per manager entry (the last time that manager
//! changed something), so a lag between two of them is only good to a second either
//! way. Events carry eventTime (microseconds) when the emitter used events.k8s.io,
//! otherwise whole-second first/last timestamps; they are rate-limited and expire.

use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::owner_graph::Object;

/// Annotations that carry a causal trace when a writer sets them (shown, not required).
pub const TRACE_ANNOTATIONS: &[&str] = &["tracing.k8s.io/traceparent", "kausality.io/trace"];

/// One managedFields entry, reduced to what sequencing needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Write {
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub time: Option<Timestamp>,
    /// Owns something under .spec (or is the pod binding).
    pub spec: bool,
    /// Owns something under .status, or wrote through /status.
    pub status: bool,
    /// The top-level fields it owns (metadata, spec, rules, data, ...), for naming other writes.
    #[serde(skip)]
    pub fields: Vec<String>,
}

impl Write {
    pub fn label(&self) -> String {
        super::fields::manager_label(&self.manager, &self.subresource)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub since: Option<Timestamp>,
}

/// An object of the traced subtree, from its full JSON (or metadata only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceObject {
    pub uid: String,
    // Shared, as the kind and namespace are (see crate::analyze::intern): `check` holds one
    // of these for every pod in scope.
    pub api_version: Arc<str>,
    pub kind: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Arc<str>>,
    pub name: String,
    /// uid of the controller ownerReference, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleting: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(skip)]
    pub writes: Vec<Write>,
    /// How many pods the object asks for (spec.replicas), for the replica-keeping kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    #[serde(skip)]
    pub conditions: Vec<Condition>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trace_annotations: Vec<(String, String)>,
    /// Whether the JSON had a status at all (a metadata-only read has none).
    #[serde(skip)]
    pub has_status: bool,
    /// The Date of the answer that carried the object: the server's clock its stalls are
    /// judged by (None: the run's `now`).
    #[serde(skip)]
    pub read_at: Option<Timestamp>,
}

impl TraceObject {
    /// What the owner graph's metadata knew of an object not read whole: trace's Secrets,
    /// ConfigMaps and objects that could not be read, check's unscheduled pods.
    pub fn from_metadata(o: &Object) -> TraceObject {
        TraceObject {
            uid: o.uid.to_string(),
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            controller_uid: o.owner_refs.iter().find(|r| r.is_controller()).map(|r| r.uid.to_string()),
            created: o.created,
            deleting: o.deleting_since(),
            read_at: o.deletion_read_at(),
            ..Default::default()
        }
    }

    pub fn group(&self) -> &str {
        super::owner_graph::group_of(&self.api_version)
    }

    /// "deployment.apps/web", "pod/web-abc": kubectl's TYPE/NAME with the kind lower-cased.
    pub fn label(&self) -> String {
        let kind = self.kind.to_lowercase();
        match self.group() {
            "" => format!("{kind}/{}", self.name),
            g => format!("{kind}.{g}/{}", self.name),
        }
    }

    /// The entry that created the object: the earliest write through the main resource. Of
    /// writes in the same second, one that owns spec: an operator that adds its finalizer and
    /// labels the moment an object appears (KEDA to a ScaledObject) did not create it, and the
    /// API server lists same-second entries by manager name, not by order.
    pub fn creator(&self) -> Option<&Write> {
        self.writes
            .iter()
            .filter(|w| w.subresource.is_empty())
            .min_by_key(|w| (w.time.map(|t| t.as_second()).unwrap_or(i64::MAX), !w.spec, w.operation != "Update"))
    }

    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.kind == kind)
    }

    /// The latest write to .spec by anyone, and when.
    pub fn last_spec_write(&self) -> Option<&Write> {
        self.writes.iter().filter(|w| w.spec && w.time.is_some()).max_by_key(|w| w.time)
    }

    pub fn last_status_write(&self) -> Option<&Write> {
        self.writes.iter().filter(|w| w.status && w.time.is_some()).max_by_key(|w| w.time)
    }
}

/// An Event about an object of the subtree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventSnap {
    /// The event object's own uid (to tell repeats from new events while watching).
    #[serde(skip)]
    pub uid: String,
    /// involvedObject.uid (regarding.uid).
    pub object_uid: String,
    pub reason: String,
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// reportingController, else source.component.
    pub reporter: String,
    pub count: i64,
    pub first: Option<Timestamp>,
    pub last: Option<Timestamp>,
    /// first/last came from eventTime or series (microseconds), not whole seconds.
    pub precise: bool,
}

fn time_at(v: &Value, pointer: &str) -> Option<Timestamp> {
    v.pointer(pointer).and_then(Value::as_str).and_then(|s| s.parse().ok())
}

fn str_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Reads an object as the API returns it (full or PartialObjectMetadata). Never fails:
/// a missing or malformed field is simply absent.
pub fn object_from_json(v: &Value) -> TraceObject {
    let int = |p: &str| v.pointer(p).and_then(Value::as_i64);
    let controller_uid = v
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| refs.iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true)))
        .map(|r| str_at(r, "/uid"));
    let writes = v
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().map(write_from_json).collect())
        .unwrap_or_default();
    let conditions = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| Condition {
                    kind: str_at(c, "/type"),
                    status: str_at(c, "/status"),
                    reason: str_at(c, "/reason"),
                    message: str_at(c, "/message"),
                    since: time_at(c, "/lastTransitionTime"),
                })
                .collect()
        })
        .unwrap_or_default();
    let annotations = v.pointer("/metadata/annotations").and_then(Value::as_object);
    let trace_annotations = TRACE_ANNOTATIONS
        .iter()
        .filter_map(|k| annotations?.get(*k)?.as_str().map(|a| (k.to_string(), a.to_string())))
        .collect();
    let kind = str_at(v, "/kind");
    let desired = match kind.as_str() {
        "ReplicaSet" | "StatefulSet" | "ReplicationController" => int("/spec/replicas").or(Some(1)),
        _ => None,
    }
    .filter(|_| v.get("spec").is_some());
    let nonempty = |s: String| (!s.is_empty()).then_some(s);
    TraceObject {
        uid: str_at(v, "/metadata/uid"),
        api_version: str_at(v, "/apiVersion").into(),
        kind: kind.into(),
        namespace: nonempty(str_at(v, "/metadata/namespace")).map(Arc::from),
        name: str_at(v, "/metadata/name"),
        controller_uid,
        created: time_at(v, "/metadata/creationTimestamp"),
        deleting: time_at(v, "/metadata/deletionTimestamp"),
        generation: int("/metadata/generation"),
        observed_generation: int("/status/observedGeneration"),
        writes,
        desired,
        node_name: nonempty(str_at(v, "/spec/nodeName")),
        phase: nonempty(str_at(v, "/status/phase")),
        scheduler_name: nonempty(str_at(v, "/spec/schedulerName")),
        conditions,
        trace_annotations,
        has_status: v.get("status").is_some(),
        read_at: None,
    }
}

fn write_from_json(e: &Value) -> Write {
    let fields = e.pointer("/fieldsV1").and_then(Value::as_object);
    let owns = |key: &str| fields.is_some_and(|f| f.contains_key(key));
    let subresource = str_at(e, "/subresource");
    Write {
        manager: str_at(e, "/manager"),
        operation: str_at(e, "/operation"),
        time: time_at(e, "/time"),
        spec: owns("f:spec") || subresource == "binding",
        status: owns("f:status") || subresource == "status",
        subresource,
        fields: fields
            .map(|f| f.keys().filter_map(|k| k.strip_prefix("f:")).map(str::to_string).collect())
            .unwrap_or_default(),
    }
}

/// Reads a core/v1 or events.k8s.io/v1 Event.
pub fn event_from_json(v: &Value) -> EventSnap {
    let first_str = |ps: &[&str]| ps.iter().map(|p| str_at(v, p)).find(|s| !s.is_empty()).unwrap_or_default();
    let event_time = time_at(v, "/eventTime");
    let series_last = time_at(v, "/series/lastObservedTime");
    let series_count = v.pointer("/series/count").and_then(Value::as_i64);
    let count = v
        .pointer("/count")
        .and_then(Value::as_i64)
        .or(v.pointer("/deprecatedCount").and_then(Value::as_i64))
        .or(series_count)
        .unwrap_or(1)
        .max(1);
    let first = event_time
        .or_else(|| time_at(v, "/firstTimestamp"))
        .or_else(|| time_at(v, "/deprecatedFirstTimestamp"))
        .or_else(|| time_at(v, "/metadata/creationTimestamp"));
    let last = series_last
        .or_else(|| time_at(v, "/lastTimestamp"))
        .or_else(|| time_at(v, "/deprecatedLastTimestamp"))
        .or(first);
    EventSnap {
        uid: str_at(v, "/metadata/uid"),
        object_uid: first_str(&["/involvedObject/uid", "/regarding/uid"]),
        reason: str_at(v, "/reason"),
        message: first_str(&["/message", "/note"]).replace('\n', " "),
        kind: str_at(v, "/type"),
        reporter: first_str(&["/reportingController", "/reportingComponent", "/source/component"]),
        count,
        first,
        last,
        precise: event_time.is_some() && (series_count.is_none() || series_last.is_some()),
    }
}

/// The subtree to trace: objects in tree order (the root first), each with the index
/// of the object it hangs under, plus the Events about them.
#[derive(Debug, Clone, Default)]
pub struct TraceSnapshot {
    pub objects: Vec<TraceObject>,
    pub parent: Vec<Option<usize>>,
    /// Box-drawing prefix of each object in the tree ("├─", "│ └─").
    pub prefix: Vec<String>,
    pub events: Vec<EventSnap>,
}

impl TraceSnapshot {
    pub fn children(&self, of: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.objects.len()).filter(move |&i| self.parent[i] == Some(of))
    }

    pub fn events_of(&self, of: usize) -> impl Iterator<Item = &EventSnap> + '_ {
        let uid = self.objects[of].uid.as_str();
        self.events.iter().filter(move |e| e.object_uid == uid)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HopKind {
    Created,
    Spec,
    Status,
    /// A write that owns neither spec nor status: metadata, or the content of kinds without
    /// a spec (a ClusterRole's rules, a ConfigMap's data).
    Write,
    Event,
    Deleting,
}

/// How precise a hop's time is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Whole seconds (creationTimestamp, managedFields, core/v1 event timestamps).
    Second,
    Microsecond,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hop {
    /// Index into the snapshot's objects.
    pub object: usize,
    pub kind: HopKind,
    pub time: Option<Timestamp>,
    pub precision: Precision,
    /// The manager (with its subresource) or the event's reporter.
    pub writer: String,
    pub what: String,
    /// Where the time comes from: creationTimestamp, managedFields, event.
    pub source: &'static str,
    /// Index into the hop list of the hop that caused this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag: Option<Lag>,
}

/// A lag between two hop times, with how far it can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lag {
    pub millis: i64,
    /// The true lag lies within millis ± this (1000 when either time has whole seconds).
    pub plus_minus_millis: i64,
}

impl Lag {
    pub fn text(&self) -> String {
        let ms = self.millis;
        if self.plus_minus_millis >= 1000 {
            let secs = ms.div_euclid(1000);
            return if secs == 0 { "<1s".into() } else { format!("{}±1s", crate::age::human_signed(secs)) };
        }
        if ms.abs() < 1000 { format!("{ms}ms") } else { format!("{:.1}s", ms as f64 / 1000.0) }
    }
}

fn lag_between(cause: &Hop, effect: &Hop) -> Option<Lag> {
    let (a, b) = (cause.time?, effect.time?);
    let coarse = cause.precision == Precision::Second || effect.precision == Precision::Second;
    let millis = if coarse { (b.as_second() - a.as_second()) * 1000 } else { b.as_millisecond() - a.as_millisecond() };
    Some(Lag { millis, plus_minus_millis: if coarse { 1000 } else { 0 } })
}

/// The hops of every object, in time order, each linked to its cause.
///
/// Causes, from what the API conventions say a controller reacts to:
/// - a creation and a spec write of a dependent: the latest creation or spec write of
///   the object it hangs under, at or before it (the owner's controller reacted);
/// - a status write: the latest creation or spec write of the object itself, or change
///   of one of its dependents, at or before it (its controller observed them);
/// - an Event: the latest change of the object it is about, at or before it.
pub fn timeline(snap: &TraceSnapshot) -> Vec<Hop> {
    link(snap, state_hops(snap))
}

/// The hops live state shows: creations, managedFields entries, deletions, Events.
pub fn state_hops(snap: &TraceSnapshot) -> Vec<Hop> {
    let mut hops = Vec::new();
    for (i, o) in snap.objects.iter().enumerate() {
        let creator_entry = o.creator();
        let mut creator = creator_entry.map(Write::label).unwrap_or_default();
        // Built-in controllers share one manager name; the owner's Event naming this object
        // says which of them created it (SuccessfulCreate "Created pod: x", ScalingReplicaSet).
        if let Some(p) = snap.parent[i]
            && let Some(e) = snap.events_of(p).find(|e| !e.reporter.is_empty() && mentions(&e.message, &o.name))
        {
            creator = if creator.is_empty() { e.reporter.clone() } else { format!("{creator} [{}]", e.reporter) };
        }
        hops.push(hop(i, HopKind::Created, o.created, Precision::Second, creator, String::new(), "creationTimestamp"));
        let latest_spec = o.last_spec_write().and_then(|w| w.time);
        for w in &o.writes {
            let (kind, what) = if w.spec {
                // managedFields keep each manager's last write only: just the latest spec
                // write is known to have produced the current generation.
                let generation = match o.generation {
                    Some(g) if w.time == latest_spec => format!("generation {g}"),
                    _ => "spec, an earlier generation".into(),
                };
                (HopKind::Spec, format!("{generation} ({})", w.operation))
            } else if w.status {
                let what = match (o.observed_generation, o.generation) {
                    (Some(seen), Some(g)) if seen >= g => format!("observed generation {seen}"),
                    (Some(seen), Some(g)) => format!("observed generation {seen} of {g}"),
                    _ => o.phase.clone().map(|p| format!("phase {p}")).unwrap_or_else(|| "status".into()),
                };
                (HopKind::Status, what)
            } else {
                let fields = if w.fields.is_empty() { "fields".to_string() } else { w.fields.join(", ") };
                (HopKind::Write, format!("{fields} ({})", w.operation))
            };
            // The entry that created the object and wrote nothing since is its creation.
            let at_creation = w.time.map(|t| t.as_second()) == o.created.map(|t| t.as_second());
            if at_creation && (kind == HopKind::Write || (kind == HopKind::Spec && creator_entry == Some(w))) {
                continue;
            }
            hops.push(hop(i, kind, w.time, Precision::Second, w.label(), what, "managedFields"));
        }
        if let Some(d) = o.deleting {
            hops.push(hop(
                i,
                HopKind::Deleting,
                Some(d),
                Precision::Second,
                String::new(),
                String::new(),
                "deletionTimestamp",
            ));
        }
        for e in snap.events_of(i) {
            let precision = if e.precise { Precision::Microsecond } else { Precision::Second };
            let mut what = format!("{}: {}", e.reason, e.message);
            if e.count > 1 {
                let last = e.last.map(|t| t.strftime("%H:%M:%S").to_string()).unwrap_or_default();
                what.push_str(&format!(" (x{}, last {last})", e.count));
            }
            hops.push(hop(i, HopKind::Event, e.first, precision, e.reporter.clone(), what, "event"));
        }
    }
    hops
}

/// The hops in time order, each linked to the hop that caused it, with the lag between them.
pub fn link(snap: &TraceSnapshot, mut hops: Vec<Hop>) -> Vec<Hop> {
    hops.sort_by(|a, b| {
        (a.time.is_none(), a.time, a.object, a.kind).cmp(&(b.time.is_none(), b.time, b.object, b.kind))
    });
    let causes: Vec<Option<usize>> = (0..hops.len()).map(|h| cause_of(snap, &hops, h)).collect();
    for (h, cause) in causes.into_iter().enumerate() {
        hops[h].cause = cause;
        hops[h].lag = cause.and_then(|c| lag_between(&hops[c], &hops[h]));
    }
    hops
}

/// Whether an Event message names `name` as a word ("Created pod: web-abc", "replica set web-5d to 3").
fn mentions(message: &str, name: &str) -> bool {
    message.split(|c: char| c.is_whitespace() || c == ',' || c == ':').any(|w| w == name)
}

pub(crate) fn hop(
    object: usize,
    kind: HopKind,
    time: Option<Timestamp>,
    precision: Precision,
    writer: String,
    what: String,
    source: &'static str,
) -> Hop {
    Hop { object, kind, time, precision, writer, what, source, cause: None, lag: None }
}

/// Compares at the coarser of the two precisions: a whole-second time is "at or before"
/// anything within the same second.
fn at_or_before(a: &Hop, b: &Hop) -> bool {
    match (a.time, b.time) {
        (Some(x), Some(y)) if a.precision == Precision::Second || b.precision == Precision::Second => {
            x.as_second() <= y.as_second()
        }
        (Some(x), Some(y)) => x <= y,
        _ => false,
    }
}

fn cause_of(snap: &TraceSnapshot, hops: &[Hop], h: usize) -> Option<usize> {
    let me = &hops[h];
    let is_input = |c: &Hop| matches!(c.kind, HopKind::Created | HopKind::Spec);
    let candidates: Box<dyn Fn(&Hop) -> bool> = match me.kind {
        HopKind::Created | HopKind::Spec | HopKind::Deleting => {
            let parent = snap.parent[me.object]?;
            Box::new(move |c: &Hop| c.object == parent && is_input(c))
        }
        HopKind::Status => {
            let object = me.object;
            Box::new(move |c: &Hop| {
                (c.object == object && is_input(c))
                    || (snap.parent[c.object] == Some(object) && c.kind != HopKind::Event)
            })
        }
        HopKind::Event => {
            let object = me.object;
            Box::new(move |c: &Hop| c.object == object && c.kind != HopKind::Event)
        }
        HopKind::Write => return None,
    };
    // The latest candidate at or before this hop; among equal times, the last in order.
    let mut best: Option<usize> = None;
    for (c, hop) in hops.iter().enumerate() {
        if c == h || !candidates(hop) || !at_or_before(hop, me) {
            continue;
        }
        if best.is_none_or(|b| hops[b].time <= hop.time) {
            best = Some(c);
        }
    }
    best
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    pub fn write(manager: &str, sub: &str, time: &str, spec: bool, status: bool) -> Write {
        Write {
            manager: manager.into(),
            operation: "Update".into(),
            subresource: sub.into(),
            time: Some(ts(time)),
            spec,
            status,
            fields: Vec::new(),
        }
    }

    pub fn obj(kind: &str, name: &str, created: &str) -> TraceObject {
        TraceObject {
            uid: format!("uid-{name}"),
            api_version: if kind == "Pod" { "v1".into() } else { "apps/v1".into() },
            kind: kind.into(),
            namespace: Some("ns".into()),
            name: name.into(),
            created: Some(ts(created)),
            has_status: true,
            ..Default::default()
        }
    }

    /// deploy/web -> rs/web-1 -> pod/web-1-a, as the real controllers write them.
    pub fn rollout() -> TraceSnapshot {
        let mut d = obj("Deployment", "web", "2026-01-01T10:00:00Z");
        d.generation = Some(2);
        d.observed_generation = Some(2);
        d.writes = vec![
            write("kubectl-client-side-apply", "", "2026-01-01T10:00:00Z", true, false),
            write("kubectl-rollout", "", "2026-01-01T10:01:00Z", true, false),
            write("kube-controller-manager", "status", "2026-01-01T10:01:02Z", false, true),
        ];
        let mut rs = obj("ReplicaSet", "web-1", "2026-01-01T10:01:01Z");
        rs.controller_uid = Some(d.uid.clone());
        rs.generation = Some(1);
        rs.observed_generation = Some(1);
        rs.desired = Some(1);
        rs.writes = vec![
            write("kube-controller-manager", "", "2026-01-01T10:01:01Z", true, false),
            write("kube-controller-manager", "status", "2026-01-01T10:01:02Z", false, true),
        ];
        let mut pod = obj("Pod", "web-1-a", "2026-01-01T10:01:01Z");
        pod.controller_uid = Some(rs.uid.clone());
        pod.phase = Some("Pending".into());
        pod.writes = vec![write("kube-controller-manager", "", "2026-01-01T10:01:01Z", false, false)];
        let events = vec![
            EventSnap {
                object_uid: d.uid.clone(),
                reason: "ScalingReplicaSet".into(),
                message: "Scaled up replica set web-1 from 0 to 1".into(),
                reporter: "deployment-controller".into(),
                count: 1,
                first: Some(ts("2026-01-01T10:01:01Z")),
                last: Some(ts("2026-01-01T10:01:01Z")),
                ..Default::default()
            },
            EventSnap {
                object_uid: pod.uid.clone(),
                reason: "FailedScheduling".into(),
                message: "0/0 nodes are available".into(),
                reporter: "default-scheduler".into(),
                count: 3,
                first: Some(ts("2026-01-01T10:01:01.250Z")),
                last: Some(ts("2026-01-01T10:02:00Z")),
                precise: true,
                ..Default::default()
            },
        ];
        TraceSnapshot {
            objects: vec![d, rs, pod],
            parent: vec![None, Some(0), Some(1)],
            prefix: vec![String::new(), "└─".into(), "  └─".into()],
            events,
        }
    }

    fn find<'a>(hops: &'a [Hop], snap: &TraceSnapshot, name: &str, kind: HopKind, writer: &str) -> (usize, &'a Hop) {
        hops.iter()
            .enumerate()
            .find(|(_, h)| snap.objects[h.object].name == name && h.kind == kind && h.writer.starts_with(writer))
            .unwrap_or_else(|| panic!("no {kind:?} hop of {name} by {writer}: {hops:#?}"))
    }

    #[test]
    fn each_hop_is_linked_to_what_its_controller_reacted_to() {
        let snap = rollout();
        let hops = timeline(&snap);
        let (spec, _) = find(&hops, &snap, "web", HopKind::Spec, "kubectl-rollout");
        let (rs_created, rs) = find(&hops, &snap, "web-1", HopKind::Created, "kube-controller-manager");
        assert_eq!(rs.cause, Some(spec), "the ReplicaSet was created after the rollout's spec write");
        assert_eq!(rs.lag, Some(Lag { millis: 1000, plus_minus_millis: 1000 }));
        let (_, pod) = find(&hops, &snap, "web-1-a", HopKind::Created, "kube-controller-manager");
        assert!(pod.cause == Some(rs_created) || hops[pod.cause.unwrap()].kind == HopKind::Spec);
        assert_eq!(hops[pod.cause.unwrap()].object, 1, "a pod is caused by its ReplicaSet");
        let (_, status) = find(&hops, &snap, "web", HopKind::Status, "kube-controller-manager (status)");
        assert_eq!(status.what, "observed generation 2");
        let cause = &hops[status.cause.unwrap()];
        assert!(cause.object == 0 || snap.parent[cause.object] == Some(0), "{cause:?}");
        let (_, sched) = find(&hops, &snap, "web-1-a", HopKind::Event, "default-scheduler");
        assert_eq!(hops[sched.cause.unwrap()].kind, HopKind::Created);
        assert!(sched.what.contains("(x3, last"), "{}", sched.what);
        // The pod's creating entry is its creation, not a separate metadata write.
        assert!(!hops.iter().any(|h| h.object == 2 && h.kind == HopKind::Write));
    }

    #[test]
    fn hops_are_in_time_order_and_never_caused_by_a_later_hop() {
        let snap = rollout();
        let hops = timeline(&snap);
        for pair in hops.windows(2) {
            assert!(pair[0].time <= pair[1].time, "{pair:?}");
        }
        for h in &hops {
            if let Some(c) = h.cause {
                assert!(hops[c].time.unwrap().as_second() <= h.time.unwrap().as_second());
            }
        }
    }

    #[test]
    fn second_resolution_lags_say_so() {
        assert_eq!(Lag { millis: 0, plus_minus_millis: 1000 }.text(), "<1s");
        assert_eq!(Lag { millis: 3000, plus_minus_millis: 1000 }.text(), "3s±1s");
        assert_eq!(Lag { millis: 250, plus_minus_millis: 0 }.text(), "250ms");
        assert_eq!(Lag { millis: 2500, plus_minus_millis: 0 }.text(), "2.5s");
    }

    #[test]
    fn reads_objects_and_both_event_apis() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "uid": "u1", "creationTimestamp": "2026-01-01T10:00:00Z",
                "annotations": {"tracing.k8s.io/traceparent": "00-abc-def-01", "other": "x"},
                "ownerReferences": [{"uid": "o1"}, {"uid": "rs", "controller": true}],
                "managedFields": [
                    {"manager": "kube-controller-manager", "operation": "Update", "time": "2026-01-01T10:00:00Z",
                     "fieldsV1": {"f:metadata": {}, "f:spec": {}}},
                    {"manager": "kubelet", "operation": "Update", "subresource": "status", "time": "2026-01-01T10:00:03Z",
                     "fieldsV1": {"f:status": {}}}]},
            "spec": {"schedulerName": "default-scheduler"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": "0/0 nodes", "lastTransitionTime": "2026-01-01T10:00:01Z"}]}
        });
        let o = object_from_json(&pod);
        assert_eq!(o.controller_uid.as_deref(), Some("rs"));
        assert_eq!(o.label(), "pod/p");
        assert_eq!(o.writes.len(), 2);
        assert!(o.writes[0].spec && o.writes[1].status);
        assert_eq!(o.writes[0].fields, vec!["metadata".to_string(), "spec".to_string()]);
        assert_eq!(o.creator().unwrap().manager, "kube-controller-manager");
        // KEDA adds its finalizer and label in the second a ScaledObject is applied: sorted
        // first by name, but the applier wrote the spec.
        let scaled = json!({"kind": "ScaledObject", "apiVersion": "keda.sh/v1alpha1",
            "metadata": {"uid": "s", "name": "worker", "managedFields": [
                {"manager": "keda-operator", "operation": "Update", "time": "2026-01-01T10:00:00Z",
                 "fieldsV1": {"f:metadata": {"f:finalizers": {}}}},
                {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-01-01T10:00:00Z",
                 "fieldsV1": {"f:metadata": {}, "f:spec": {}}},
                {"manager": "keda-operator", "operation": "Update", "subresource": "status",
                 "time": "2026-01-01T10:00:01Z", "fieldsV1": {"f:status": {}}}]}});
        assert_eq!(object_from_json(&scaled).creator().unwrap().manager, "kubectl-client-side-apply");
        assert_eq!(o.condition("PodScheduled").unwrap().reason, "Unschedulable");
        assert_eq!(o.trace_annotations, vec![("tracing.k8s.io/traceparent".into(), "00-abc-def-01".into())]);
        assert_eq!(o.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(object_from_json(&json!({"kind": 5, "metadata": []})), TraceObject::default());

        let core = json!({"metadata": {"uid": "e1"}, "involvedObject": {"uid": "u1"}, "reason": "Scheduled",
            "message": "ok", "source": {"component": "default-scheduler"}, "count": 2,
            "firstTimestamp": "2026-01-01T10:00:00Z", "lastTimestamp": "2026-01-01T10:00:05Z"});
        let e = event_from_json(&core);
        assert_eq!((e.reporter.as_str(), e.count, e.precise), ("default-scheduler", 2, false));
        let new = json!({"metadata": {"uid": "e2"}, "regarding": {"uid": "u1"}, "reason": "Scheduled",
            "note": "ok", "reportingController": "default-scheduler", "eventTime": "2026-01-01T10:00:00.123456Z"});
        let e = event_from_json(&new);
        assert_eq!((e.object_uid.as_str(), e.message.as_str(), e.precise), ("u1", "ok", true));
        assert_eq!(e.first, Some(ts("2026-01-01T10:00:00.123456Z")));
    }
}
