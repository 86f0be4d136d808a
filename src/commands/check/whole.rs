//! One pass over a controller's (or a PDB's) text for every analysis `check` runs on it: the
//! owner graph's metadata, the census's managedFields text, overlaps' selector and template
//! labels, the replicas leases shows, and trace's generations, conditions and writes. Each
//! analysis read the whole object itself before, three passes over the largest lists of whole
//! objects (the pod template, the biggest part, scanned each time).
//!
//! The read is as strict as the strictest of the reads it stands for, field by field: when
//! it succeeds, each of them would have read the same. When it fails (a field of a type one of
//! them rejects), the caller reads with each of them instead, so what an odd object gives is
//! unchanged.

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::analyze::intern::{Interner, ListNames};
use crate::analyze::overlap::Controller;
use crate::analyze::owner_graph::{self, Deletion, Object};
use crate::analyze::selector::LabelPairs;
use crate::analyze::sequence::TraceObject;
use crate::analyze::sequence_text::{
    self as trace, ConditionJson, ManagedEntry, Present, TraceAnnotations, list_item_from_text,
};
use crate::analyze::uid::Uid;
use crate::commands::fields::census::Digest;
use crate::commands::overlaps::fetch::{self as overlaps, Named, Template};

/// What the analyses asked for read from one object.
#[derive(Debug)]
pub(super) struct Read {
    /// None when the owner graph's read does not take the object.
    pub object: Option<Object>,
    /// The census's digest, when asked for and readable.
    pub digest: Option<Digest>,
    /// (uid, replicas).
    pub replicas: Option<(String, i32)>,
    /// overlaps' controller, or why its selector is not understood.
    pub controller: Option<Result<Controller, String>>,
    pub workload: Option<TraceObject>,
}

/// Which parts to read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wants {
    pub census: bool,
    pub replicas: bool,
    pub controller: bool,
    pub workload: bool,
}

/// Reads `text`, an item of a list whose `names` say its type, that overlaps compares as
/// `kind`; None when one of the reads it stands for would not take it.
pub(super) fn read(text: &str, names: &mut ListNames, kind: &str, wants: Wants) -> Option<Read> {
    let whole: Whole = serde_json::from_str(text).ok()?;
    // overlaps' read rejects a null spec or status; trace's takes it (there, and empty).
    if (whole.spec.0 && whole.spec.1.is_none()) || (whole.status.0 && whole.status.1.is_none()) {
        return None;
    }
    let (spec_present, has_status) = (whole.spec.0, whole.status.0);
    let (spec, status) = (whole.spec.1.unwrap_or_default(), whole.status.1.unwrap_or_default());
    let m = whole.metadata;
    let workload = if wants.workload {
        // trace's read takes only top-level keys of each fieldsV1: read apart from the
        // census's, from the same text.
        let managed_fields = match m.managed_fields {
            Some(raw) => serde_json::from_str::<Vec<ManagedEntry>>(raw.get()).ok()?,
            None => Vec::new(),
        };
        let object = trace::Object {
            api_version: names.api_version.clone(),
            kind: names.kind.clone(),
            metadata: trace::Meta {
                uid: m.uid.clone(),
                namespace: m.namespace.clone(),
                name: m.name.clone(),
                creation_timestamp: m.creation_timestamp,
                deletion_timestamp: m.deletion_timestamp,
                generation: m.generation,
                owner_references: Some(
                    m.owner_references
                        .iter()
                        .map(|o| trace::OwnerRef { uid: Some(o.uid.clone()), controller: o.controller })
                        .collect(),
                ),
                managed_fields: Some(managed_fields),
                annotations: m.annotations,
            },
            spec: Present(
                spec_present,
                Some(trace::Spec {
                    replicas: spec.replicas.map(i64::from),
                    node_name: spec.node_name,
                    scheduler_name: spec.scheduler_name,
                }),
            ),
            status: Present(
                has_status,
                Some(trace::Status {
                    observed_generation: status.observed_generation,
                    phase: status.phase,
                    conditions: status.conditions,
                }),
            ),
        };
        Some(object.into_trace())
    } else {
        None
    };
    let digest = wants
        .census
        .then(|| Digest::from_managed_fields(m.namespace.clone(), m.name.clone(), m.managed_fields).ok())
        .flatten();
    let replicas = overlaps::replicas(kind, spec.replicas, spec.parallelism, status.desired_number_scheduled)
        .filter(|_| wants.replicas)
        .map(|n| (m.uid.clone(), n));
    let owner_uid = m.owner_references.iter().find(|o| o.controller == Some(true)).map(|o| o.uid.clone());
    let controller = wants.controller.then(|| {
        let named = Named { namespace: m.namespace.clone(), name: m.name.clone(), uid: m.uid.clone(), owner_uid };
        overlaps::controller_from(
            kind,
            named,
            spec.selector.as_ref(),
            spec.template.as_ref().and_then(Template::labels),
        )
    });
    let object = Object {
        uid: Uid::new(&m.uid),
        api_version: names.api_version.clone(),
        kind: names.kind.clone(),
        namespace: names.namespace(Some(&m.namespace)),
        name: m.name,
        owner_refs: m.owner_references.into_iter().map(|o| o.into_graph(&mut names.strings)).collect(),
        created: m.creation_timestamp,
        deletion: Deletion::new(m.deletion_timestamp, m.finalizers),
    };
    Some(Read { object: Some(object), digest, replicas, controller, workload })
}

/// What [`read`] stands for: each analysis's own read of the text.
pub(super) fn apart(text: &str, names: &mut ListNames, kind: &str, wants: Wants) -> Read {
    let (object, digest) = super::fetch::graph_read(text, names, wants.census);
    let mut read = Read { object, digest, replicas: None, controller: None, workload: None };
    if (wants.controller || wants.replicas)
        && let Ok(obj) = serde_json::from_str::<overlaps::Object>(text)
    {
        if wants.replicas {
            read.replicas = obj.replicas(kind).map(|n| (obj.uid().to_string(), n));
        }
        if wants.controller {
            read.controller = Some(overlaps::controller(kind, obj));
        }
    }
    if wants.workload {
        read.workload = Some(list_item_from_text(text, &names.api_version, &names.kind));
    }
    read
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Whole<'a> {
    // Read by trace's read only (a list's items have neither): here so that a value it
    // rejects fails this read too.
    #[serde(default)]
    #[allow(dead_code)]
    api_version: String,
    #[serde(default)]
    #[allow(dead_code)]
    kind: String,
    /// Required, as overlaps' read requires it.
    #[serde(borrow)]
    metadata: Meta<'a>,
    #[serde(default)]
    spec: Present<Spec>,
    #[serde(default)]
    status: Present<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    uid: String,
    /// Not used for a controller, but overlaps' read rejects labels that are not strings.
    #[serde(default)]
    #[allow(dead_code)]
    labels: LabelPairs,
    #[serde(default)]
    owner_references: Vec<OwnerRef>,
    #[serde(default)]
    finalizers: Vec<String>,
    creation_timestamp: Option<Timestamp>,
    deletion_timestamp: Option<Timestamp>,
    generation: Option<i64>,
    #[serde(borrow, default)]
    managed_fields: Option<&'a RawValue>,
    #[serde(default)]
    annotations: Option<TraceAnnotations>,
}

/// kind, name and uid required, as overlaps' read requires them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRef {
    #[serde(default)]
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    #[serde(default)]
    controller: Option<bool>,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    fn into_graph(self, strings: &mut Interner) -> owner_graph::OwnerRef {
        owner_graph::OwnerRef {
            api_version: strings.get(&self.api_version),
            kind: strings.get(&self.kind),
            name: self.name,
            uid: Uid::new(&self.uid),
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    selector: Option<Value>,
    #[serde(default)]
    template: Option<Template>,
    /// i32 as overlaps reads it (trace's i64 takes more).
    replicas: Option<i32>,
    parallelism: Option<i32>,
    node_name: Option<String>,
    scheduler_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status {
    desired_number_scheduled: Option<i32>,
    observed_generation: Option<i64>,
    phase: Option<String>,
    #[serde(default)]
    conditions: Option<Vec<ConditionJson>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::resource_ref::ApiResource;
    use crate::commands::overlaps::fetch::KINDS;
    use proptest::prelude::*;
    use serde_json::json;

    fn resource(kind: &str) -> ApiResource {
        let (gv, plural, _) = KINDS.iter().find(|(_, _, k)| *k == kind).unwrap();
        let (group, version) = gv.rsplit_once('/').unwrap_or(("", gv));
        ApiResource {
            group: group.into(),
            version: version.into(),
            plural: plural.to_string(),
            singular: String::new(),
            kind: kind.into(),
            short_names: Vec::new(),
            namespaced: true,
            verbs: Vec::new(),
            preferred: true,
        }
    }

    const ALL: Wants = Wants { census: true, replicas: true, controller: true, workload: true };

    /// A good value most of the time; `odd` in 20 times some value of another type.
    fn pick(good: BoxedStrategy<Value>, odd: u32) -> BoxedStrategy<Value> {
        if odd == 0 {
            return good;
        }
        let bad = prop_oneof![
            Just(Value::Null),
            Just(json!(5)),
            Just(json!("x")),
            Just(json!([])),
            Just(json!({})),
            Just(json!(1u64 << 40)),
            Just(json!(1.5)),
        ];
        prop_oneof![20 => good, odd => bad].boxed()
    }

    /// An object with some of `fields`, and always those in `required`.
    fn object_with(fields: Vec<(&'static str, BoxedStrategy<Value>)>, required: &[&str]) -> BoxedStrategy<Value> {
        let strategies: Vec<_> = fields
            .into_iter()
            .map(|(k, s)| {
                let s = if required.contains(&k) {
                    s.prop_map(Some).boxed()
                } else {
                    proptest::option::weighted(0.8, s).boxed()
                };
                s.prop_map(move |v| v.map(|v| (k, v)))
            })
            .collect();
        strategies
            .prop_map(|kv| Value::Object(kv.into_iter().flatten().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed()
    }

    fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
        object_with(fields, &[])
    }

    fn list(item: BoxedStrategy<Value>, odd: u32) -> BoxedStrategy<Value> {
        pick(proptest::collection::vec(item, 0..3).prop_map(Value::Array).boxed(), odd)
    }

    fn controller(odd: u32) -> BoxedStrategy<Value> {
        let text = || pick(prop_oneof![Just(json!("")), "[a-z]{1,4}".prop_map(Value::from)].boxed(), odd);
        let int = || pick((0i64..6).prop_map(Value::from).boxed(), odd);
        let flag = || pick(any::<bool>().prop_map(Value::from).boxed(), odd);
        let time =
            || pick(prop_oneof![Just(json!("2026-01-01T10:00:00Z")), Just(json!("2026-01-01T10:00:05Z"))].boxed(), odd);
        let labels = || {
            pick(
                proptest::collection::btree_map("[ab]", prop_oneof![Just(json!("x")), Just(json!("y"))], 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect()))
                    .boxed(),
                odd,
            )
        };
        // The API requires an owner's kind, name and uid.
        let owner = pick(
            object_with(
                vec![
                    ("apiVersion", text()),
                    ("kind", text()),
                    ("name", text()),
                    ("uid", text()),
                    ("controller", flag()),
                    ("blockOwnerDeletion", flag()),
                ],
                if odd == 0 { &["kind", "name", "uid"] } else { &[] },
            ),
            odd,
        );
        let fields_v1 = pick(
            proptest::collection::btree_map(
                prop_oneof![Just("f:spec"), Just("f:status"), Just("f:metadata"), Just("f:data")],
                prop_oneof![Just(json!({})), Just(json!({"f:replicas": {}})), Just(json!({".": {}, "f:a": {}}))],
                0..3,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed(),
            odd,
        );
        let entry = pick(
            object(vec![
                ("manager", text()),
                ("operation", pick(prop_oneof![Just(json!("Apply")), Just(json!("Update"))].boxed(), odd)),
                (
                    "subresource",
                    pick(prop_oneof![Just(json!("status")), Just(json!("scale")), Just(json!(""))].boxed(), odd),
                ),
                ("apiVersion", text()),
                ("time", time()),
                ("fieldsV1", fields_v1),
            ]),
            odd,
        );
        let annotations = pick(
            proptest::collection::btree_map(prop_oneof![Just("kausality.io/trace"), Just("other")], text(), 0..3)
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
                .boxed(),
            odd,
        );
        let meta = pick(
            object(vec![
                ("name", text()),
                ("namespace", text()),
                ("uid", text()),
                ("labels", labels()),
                ("ownerReferences", list(owner, odd)),
                ("finalizers", list(text(), odd)),
                ("creationTimestamp", time()),
                ("deletionTimestamp", time()),
                ("generation", int()),
                ("managedFields", list(entry, odd)),
                ("annotations", annotations),
            ]),
            odd,
        );
        let expression = object(vec![
            ("key", text()),
            ("operator", pick(prop_oneof![Just(json!("In")), Just(json!("Exists")), Just(json!("Bad"))].boxed(), odd)),
            ("values", list(text(), odd)),
        ]);
        let selector = pick(object(vec![("matchLabels", labels()), ("matchExpressions", list(expression, odd))]), odd);
        let template = pick(object(vec![("metadata", pick(object(vec![("labels", labels())]), odd))]), odd);
        let spec = pick(
            object(vec![
                ("selector", selector),
                ("template", template),
                ("replicas", int()),
                ("parallelism", int()),
                ("nodeName", text()),
                ("schedulerName", text()),
            ]),
            odd,
        );
        let condition = pick(
            object(vec![("type", text()), ("status", text()), ("reason", text()), ("lastTransitionTime", time())]),
            odd,
        );
        let status = pick(
            object(vec![
                ("desiredNumberScheduled", int()),
                ("observedGeneration", int()),
                ("phase", text()),
                ("conditions", list(condition, odd)),
            ]),
            odd,
        );
        object_with(
            vec![("apiVersion", text()), ("kind", text()), ("metadata", meta), ("spec", spec), ("status", status)],
            if odd == 0 { &["metadata"] } else { &[] },
        )
    }

    fn kind() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(KINDS.iter().map(|(_, _, k)| *k).collect::<Vec<_>>())
    }

    fn wants() -> impl Strategy<Value = Wants> {
        any::<[bool; 4]>().prop_map(|[census, replicas, controller, workload]| Wants {
            census,
            replicas,
            controller,
            workload,
        })
    }

    proptest! {
        /// Objects as the API writes them: the one pass takes each, and reads what each
        /// analysis's own read does.
        #[test]
        fn one_pass_reads_what_each_read_does(object in controller(0), kind in kind(), wants in wants()) {
            let (text, r) = (object.to_string(), resource(kind));
            let read = read(&text, &mut ListNames::for_resource(&r), kind, wants);
            prop_assert!(read.is_some(), "{}", text);
            prop_assert_eq!(format!("{:?}", read.unwrap()), format!("{:?}", apart(&text, &mut ListNames::for_resource(&r), kind, wants)));
        }

        /// With values of unexpected types, it reads the same or declines (and the caller then
        /// reads apart).
        #[test]
        fn one_pass_reads_the_same_or_declines(object in controller(1), kind in kind()) {
            let (text, r) = (object.to_string(), resource(kind));
            if let Some(read) = read(&text, &mut ListNames::for_resource(&r), kind, ALL) {
                prop_assert_eq!(format!("{:?}", read), format!("{:?}", apart(&text, &mut ListNames::for_resource(&r), kind, ALL)));
            }
        }

        #[test]
        fn any_text_never_panics(text in "\\PC{0,60}", kind in kind()) {
            let r = resource(kind);
            let _ = read(&text, &mut ListNames::for_resource(&r), kind, ALL);
        }
    }

    #[test]
    fn declines_what_a_stricter_read_rejects() {
        let r = resource("Deployment");
        let base = json!({"metadata": {"name": "d", "namespace": "n", "uid": "u"}, "spec": {"replicas": 2}});
        assert!(read(&base.to_string(), &mut ListNames::for_resource(&r), "Deployment", ALL).is_some());
        for odd in [
            // overlaps' read: metadata required, a null spec rejected, replicas an i32, owner kinds required
            json!({"spec": {}}),
            json!({"metadata": {"name": "d"}, "spec": null}),
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 1u64 << 40}}),
            json!({"metadata": {"name": "d", "ownerReferences": [{"uid": "o", "name": "x"}]}}),
            // trace's read: a namespace of null, a generation that is not a number
            json!({"metadata": {"name": "d", "namespace": null}}),
            json!({"metadata": {"name": "d", "generation": "x"}}),
            // the graph's read: finalizers that are not strings
            json!({"metadata": {"name": "d", "finalizers": [1]}}),
        ] {
            let text = odd.to_string();
            assert!(read(&text, &mut ListNames::for_resource(&r), "Deployment", ALL).is_none(), "{text}");
        }
    }

    #[test]
    fn a_deployment_read_once_for_every_analysis() {
        let text = json!({
            "metadata": {"name": "web", "namespace": "n", "uid": "u1", "generation": 3,
                "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": "x/v1", "kind": "App", "name": "a", "uid": "o1", "controller": true}],
                "managedFields": [{"manager": "gitops", "operation": "Apply", "time": "2026-01-01T10:00:00Z",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}},
            "status": {"observedGeneration": 2}
        })
        .to_string();
        let r = resource("Deployment");
        let read = read(&text, &mut ListNames::for_resource(&r), "Deployment", ALL).unwrap();
        let object = read.object.as_ref().unwrap();
        assert_eq!((&*object.kind, object.owner_refs[0].uid.to_string().as_str()), ("Deployment", "o1"));
        assert_eq!(read.replicas, Some(("u1".to_string(), 4)));
        let controller = read.controller.as_ref().unwrap().as_ref().unwrap();
        assert_eq!((controller.selector.to_string(), controller.owner_uid.as_deref()), ("app=web".into(), Some("o1")));
        let workload = read.workload.as_ref().unwrap();
        assert_eq!((workload.generation, workload.observed_generation), (Some(3), Some(2)));
        assert_eq!(workload.writes[0].manager, "gitops");
        assert!(read.digest.is_some());
        assert_eq!(
            format!("{read:?}"),
            format!("{:?}", apart(&text, &mut ListNames::for_resource(&r), "Deployment", ALL))
        );
    }
}
