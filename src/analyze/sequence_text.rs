//! [`TraceObject`] decoded straight from an object's JSON text, for the lists of whole
//! objects `check` reads: building a `serde_json::Value` of each (every label, annotation
//! and template field allocated, then dropped) cost more than the rest of the object's use.
//! The same answer as [`object_from_json`]: anything the typed read cannot take (a field of
//! an unexpected type) goes the `Value` way instead.

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

use super::sequence::{Condition, TRACE_ANNOTATIONS, TraceObject, Write, object_from_json};

/// Reads an item of a list of `kind`. The API leaves apiVersion and kind out of a list's
/// items, and what an object asks for (`desired`) depends on its kind, so the list's type
/// goes in before the object is read, not after. Never fails, like [`object_from_json`].
pub fn list_item_from_text(text: &str, api_version: &str, kind: &str) -> TraceObject {
    read(text, Some((api_version, kind)))
}

/// Reads an object as the API returns it alone, with its own type.
#[cfg(test)]
fn object_from_text(text: &str) -> TraceObject {
    read(text, None)
}

/// The typed read, or the `Value` way when it cannot take the text; `list_type` (apiVersion,
/// kind) replaces the object's own.
fn read(text: &str, list_type: Option<(&str, &str)>) -> TraceObject {
    match serde_json::from_str::<Object>(text) {
        Ok(mut o) => {
            if let Some((api_version, kind)) = list_type {
                (o.api_version, o.kind) = (api_version.into(), kind.into());
            }
            o.into_trace()
        }
        Err(_) => {
            let mut v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            if let Some((api_version, kind)) = list_type {
                with_type(&mut v, api_version, kind);
            }
            object_from_json(&v)
        }
    }
}

/// Sets an object's apiVersion and kind (when it is an object at all).
pub fn with_type(v: &mut serde_json::Value, api_version: &str, kind: &str) {
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), api_version.into());
        o.insert("kind".into(), kind.into());
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Object {
    #[serde(default)]
    pub api_version: Arc<str>,
    #[serde(default)]
    pub kind: Arc<str>,
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: Present<Spec>,
    #[serde(default)]
    pub status: Present<Status>,
}

/// A field that may be there (even as null) or not: `spec` and `status` count as there
/// when the key is, whatever its value.
pub(crate) struct Present<T>(pub bool, pub Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Present(false, None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(d).map(|v| Present(true, v))
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Meta {
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    pub creation_timestamp: Option<Timestamp>,
    pub deletion_timestamp: Option<Timestamp>,
    pub generation: Option<i64>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerRef>>,
    #[serde(default)]
    pub managed_fields: Option<Vec<ManagedEntry>>,
    #[serde(default)]
    pub annotations: Option<TraceAnnotations>,
}

#[derive(Deserialize)]
pub(crate) struct OwnerRef {
    pub uid: Option<String>,
    pub controller: Option<bool>,
}

/// A managedFields entry with only its fieldsV1's top-level keys.
pub(crate) type ManagedEntry = super::fields::ManagedEntry<TopKeys>;

/// The keys of a JSON object, in order; the values are skipped.
pub(crate) struct TopKeys(Vec<String>);

impl<'de> Deserialize<'de> for TopKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = TopKeys;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(TopKeys(keys))
            }
        }
        d.deserialize_map(Keys)
    }
}

/// Only the annotations in [`TRACE_ANNOTATIONS`], in that order.
pub(crate) struct TraceAnnotations(Vec<(String, String)>);

impl<'de> Deserialize<'de> for TraceAnnotations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Wanted;
        impl<'de> Visitor<'de> for Wanted {
            type Value = TraceAnnotations;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("annotations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TraceAnnotations, A::Error> {
                let mut found: Vec<(usize, String, String)> = Vec::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match TRACE_ANNOTATIONS.iter().position(|k| *k == key) {
                        Some(i) => {
                            let value: String = map.next_value()?;
                            found.retain(|(j, ..)| *j != i);
                            found.push((i, key.into_owned(), value));
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                found.sort_by_key(|(i, ..)| *i);
                Ok(TraceAnnotations(found.into_iter().map(|(_, k, v)| (k, v)).collect()))
            }
        }
        d.deserialize_map(Wanted)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Spec {
    pub replicas: Option<i64>,
    pub node_name: Option<String>,
    pub scheduler_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    pub observed_generation: Option<i64>,
    pub phase: Option<String>,
    #[serde(default)]
    pub conditions: Option<Vec<ConditionJson>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConditionJson {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    message: String,
    last_transition_time: Option<Timestamp>,
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

impl Object {
    pub(crate) fn into_trace(self) -> TraceObject {
        let Object { api_version, kind, metadata: m, spec, status } = self;
        let spec_present = spec.0;
        let spec = spec.1.unwrap_or_default();
        let has_status = status.0;
        let status = status.1.unwrap_or_default();
        let desired = match &*kind {
            "ReplicaSet" | "StatefulSet" | "ReplicationController" => spec.replicas.or(Some(1)),
            _ => None,
        }
        .filter(|_| spec_present);
        TraceObject {
            uid: m.uid,
            api_version,
            kind,
            namespace: nonempty(Some(m.namespace)).map(Arc::from),
            name: m.name,
            controller_uid: m
                .owner_references
                .unwrap_or_default()
                .into_iter()
                .find(|r| r.controller == Some(true))
                .map(|r| r.uid.unwrap_or_default()),
            created: m.creation_timestamp,
            deleting: m.deletion_timestamp,
            generation: m.generation,
            observed_generation: status.observed_generation,
            writes: m.managed_fields.unwrap_or_default().into_iter().map(into_write).collect(),
            desired,
            node_name: nonempty(spec.node_name),
            phase: nonempty(status.phase),
            scheduler_name: nonempty(spec.scheduler_name),
            conditions: status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| Condition {
                    kind: c.kind,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                    since: c.last_transition_time,
                })
                .collect(),
            trace_annotations: m.annotations.map(|a| a.0).unwrap_or_default(),
            has_status,
            read_at: None,
        }
    }
}

fn into_write(e: ManagedEntry) -> Write {
    let keys = e.fields_v1.map(|k| k.0).unwrap_or_default();
    let owns = |key: &str| keys.iter().any(|k| k == key);
    Write {
        spec: owns("f:spec") || e.subresource == "binding",
        status: owns("f:status") || e.subresource == "status",
        manager: e.manager,
        operation: e.operation,
        time: e.time,
        fields: keys.iter().filter_map(|k| k.strip_prefix("f:")).map(str::to_string).collect(),
        subresource: e.subresource,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A value of the expected kind most of the time, sometimes of another (or absent).
    fn either(good: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
        let odd = prop_oneof![Just(Value::Null), Just(json!(5)), Just(json!("x")), Just(json!([])), Just(json!({}))];
        prop_oneof![6 => good, 1 => odd].boxed()
    }

    fn text() -> BoxedStrategy<Value> {
        either(prop_oneof![Just(json!("")), "[a-z./-]{1,8}".prop_map(Value::from)].boxed())
    }

    fn time() -> BoxedStrategy<Value> {
        either(
            prop_oneof![
                Just(json!("2026-01-01T10:00:00Z")),
                Just(json!("2026-01-01T10:00:00.5Z")),
                Just(json!("yesterday"))
            ]
            .boxed(),
        )
    }

    fn int() -> BoxedStrategy<Value> {
        either(prop_oneof![(0i64..5).prop_map(Value::from), Just(json!(1.5)), Just(json!(u64::MAX))].boxed())
    }

    fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
        let strategies: Vec<_> =
            fields.into_iter().map(|(k, s)| proptest::option::of(s).prop_map(move |v| v.map(|v| (k, v)))).collect();
        strategies
            .prop_map(|kv| Value::Object(kv.into_iter().flatten().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed()
    }

    fn list(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
        either(proptest::collection::vec(item, 0..3).prop_map(Value::Array).boxed())
    }

    fn k8s_object() -> BoxedStrategy<Value> {
        let fields_v1 = either(
            proptest::collection::vec(
                prop_oneof![Just("f:spec"), Just("f:status"), Just("f:metadata"), Just(".")],
                0..3,
            )
            .prop_map(|ks| Value::Object(ks.into_iter().map(|k| (k.to_string(), json!({}))).collect()))
            .boxed(),
        );
        let entry = either(object(vec![
            ("manager", text()),
            ("operation", text()),
            (
                "subresource",
                either(prop_oneof![Just(json!("status")), Just(json!("binding")), Just(json!(""))].boxed()),
            ),
            ("time", time()),
            ("fieldsV1", fields_v1),
        ]));
        let owner =
            either(object(vec![("uid", text()), ("controller", either(any::<bool>().prop_map(Value::from).boxed()))]));
        let annotations = either(
            proptest::collection::vec(
                (prop_oneof![Just("tracing.k8s.io/traceparent"), Just("kausality.io/trace"), Just("other")], text()),
                0..4,
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed(),
        );
        let meta = either(object(vec![
            ("uid", text()),
            ("namespace", text()),
            ("name", text()),
            ("creationTimestamp", time()),
            ("deletionTimestamp", time()),
            ("generation", int()),
            ("ownerReferences", list(owner)),
            ("managedFields", list(entry)),
            ("annotations", annotations),
        ]));
        let condition = either(object(vec![
            ("type", text()),
            ("status", text()),
            ("reason", text()),
            ("message", text()),
            ("lastTransitionTime", time()),
        ]));
        let spec = either(object(vec![("replicas", int()), ("nodeName", text()), ("schedulerName", text())]));
        let status =
            either(object(vec![("observedGeneration", int()), ("phase", text()), ("conditions", list(condition))]));
        let kind =
            either(prop_oneof![Just(json!("ReplicaSet")), Just(json!("StatefulSet")), Just(json!("Pod"))].boxed());
        object(vec![("apiVersion", text()), ("kind", kind), ("metadata", meta), ("spec", spec), ("status", status)])
    }

    proptest! {
        #[test]
        fn reads_as_the_value_walk_does(object in k8s_object()) {
            let text = object.to_string();
            prop_assert_eq!(object_from_text(&text), object_from_json(&object));
        }

        #[test]
        fn text_that_is_not_an_object_is_an_empty_one(text in "\\PC{0,40}") {
            let expected = object_from_json(&serde_json::from_str(&text).unwrap_or_default());
            prop_assert_eq!(object_from_text(&text), expected);
        }
    }

    #[test]
    fn a_full_replica_set_and_duplicate_annotations() {
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": "n", "uid": "u", "generation": 3,
                "ownerReferences": [{"uid": "d", "controller": true, "kind": "Deployment"}],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                    "time": "2026-01-01T10:00:03Z", "fieldsV1": {"f:status": {"f:replicas": {}}}}]},
            "spec": {"replicas": 3, "template": {"metadata": {"labels": {"a": "b"}}}},
            "status": {"observedGeneration": 2, "replicas": 3}});
        assert!(serde_json::from_str::<Object>(&rs.to_string()).is_ok(), "read typed, not the Value way");
        let o = object_from_text(&rs.to_string());
        assert_eq!(o, object_from_json(&rs));
        assert_eq!((o.desired, o.generation, o.observed_generation), (Some(3), Some(3), Some(2)));
        assert!(o.writes[0].status && o.has_status);
        let text = r#"{"metadata":{"annotations":{"kausality.io/trace":"a","tracing.k8s.io/traceparent":"b","kausality.io/trace":"c"}}}"#;
        assert_eq!(object_from_text(text), object_from_json(&serde_json::from_str(text).unwrap()));
        assert_eq!(object_from_text(text).trace_annotations[1], ("kausality.io/trace".to_string(), "c".to_string()));
    }

    #[test]
    fn a_list_item_is_read_as_its_list_type() {
        // As a list's items come: no apiVersion, no kind. What a ReplicaSet asks for was lost
        // when the type was set only after reading it.
        let item = json!({"metadata": {"name": "short", "uid": "u"}, "spec": {"replicas": 3}});
        let o = list_item_from_text(&item.to_string(), "apps/v1", "ReplicaSet");
        assert_eq!((&*o.api_version, &*o.kind, o.desired), ("apps/v1", "ReplicaSet", Some(3)));
        assert_eq!(object_from_text(&item.to_string()).desired, None, "untyped, nothing is asked for");
        // The Value way (a field of an unexpected type) reads it the same.
        let odd = json!({"metadata": {"name": "short", "uid": "u", "generation": "x"}, "spec": {"replicas": 2}});
        assert!(serde_json::from_str::<Object>(&odd.to_string()).is_err());
        let o = list_item_from_text(&odd.to_string(), "apps/v1", "StatefulSet");
        assert_eq!((&*o.kind, o.desired), ("StatefulSet", Some(2)));
        // A list's type wins over whatever an item says.
        let typed = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "spec": {}});
        assert_eq!(list_item_from_text(&typed.to_string(), "v1", "ReplicationController").desired, Some(1));
    }
}
