//! A request's body and the stored object reduced to what the history analyses read: field
//! paths with a hash of each value, a Lease's holder, ownerReferences, the stored
//! resourceVersion and the writer's managedFields entry. Nothing else of either is kept, and
//! no value at all: at Request and RequestResponse level the log holds Secrets' data and
//! tokens, and only paths ever leave this module.

use std::hash::Hasher;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::snapshot::audit::{Body, BodyShape, Verb};
use crate::snapshot::fieldsv1::{self, Element, FieldPath};

/// What the writer sent, as the analyses read it. `apply`: the request named a field manager
/// and carried an object with apiVersion and kind (the log does not keep the Content-Type).
pub fn request_body(raw: &RawValue, verb: Verb, subresource: &str, named_manager: bool, lease: bool) -> Option<Body> {
    let value: Value = serde_json::from_str(raw.get()).ok()?;
    let mut body = Body::default();
    match &value {
        Value::Array(ops) if verb == Verb::Patch => {
            body.shape = BodyShape::JsonPatch;
            for op in ops {
                let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
                let hash = op.get("value").map_or(0, hash_value);
                body.fields.push((pointer_path(path).into(), hash));
            }
        }
        Value::Object(map) => {
            body.shape = match verb {
                Verb::Patch if named_manager && map.contains_key("apiVersion") && map.contains_key("kind") => {
                    BodyShape::Apply
                }
                Verb::Patch => BodyShape::Patch,
                _ => BodyShape::Object,
            };
            let mut fields = Vec::new();
            leaves(&value, &mut Vec::new(), &mut fields);
            body.fields = fields
                .into_iter()
                .filter(|(path, _)| kept(path, verb, subresource))
                .map(|(p, h)| (p.into(), h))
                .collect();
            if lease {
                body.holder = value.pointer("/spec/holderIdentity").and_then(Value::as_str).map(Into::into);
                body.lease_seconds =
                    value.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).and_then(|n| n.try_into().ok());
            }
            body.owners = owners(&value);
        }
        _ => return None,
    }
    Some(body)
}

/// What the stored object adds: its resourceVersion, the writer's managedFields entry (the
/// field paths it owns now), its owners and a Lease's holder when the request did not say.
pub fn response_body(raw: &RawValue, manager: &str, subresource: &str, apply: bool, body: &mut Body) -> Option<u64> {
    let value: Value = serde_json::from_str(raw.get()).ok()?;
    let stored = value.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
    let operation = if apply { "Apply" } else { "Update" };
    let entry = value.pointer("/metadata/managedFields").and_then(Value::as_array).and_then(|entries| {
        entries.iter().find(|e| {
            e.get("manager").and_then(Value::as_str) == Some(manager)
                && e.get("operation").and_then(Value::as_str) == Some(operation)
                && e.get("subresource").and_then(Value::as_str).unwrap_or_default() == subresource
        })
    });
    if let Some(fields) = entry.and_then(|e| e.get("fieldsV1"))
        && let Ok(paths) = fieldsv1::decode(fields)
    {
        body.managed = Some(paths.iter().map(ToString::to_string).collect());
    }
    if body.owners.is_empty() {
        body.owners = owners(&value);
    }
    if body.holder.is_none() {
        body.holder = value.pointer("/spec/holderIdentity").and_then(Value::as_str).map(Into::into);
    }
    if body.lease_seconds.is_none() {
        body.lease_seconds =
            value.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).and_then(|n| n.try_into().ok());
    }
    stored
}

/// Whether a path of a sent object says something about what the writer changed: the server
/// sets the bookkeeping, ignores status on the main resource of a type with a status
/// subresource, and takes only status from /status and only the replicas from /scale.
fn kept(path: &str, verb: Verb, subresource: &str) -> bool {
    const BOOKKEEPING: &[&str] = &[
        ".metadata.resourceVersion",
        ".metadata.managedFields",
        ".metadata.uid",
        ".metadata.creationTimestamp",
        ".metadata.generation",
        ".metadata.selfLink",
        ".apiVersion",
        ".kind",
    ];
    if BOOKKEEPING
        .iter()
        .any(|b| path == *b || path.starts_with(&format!("{b}.")) || path.starts_with(&format!("{b}[")))
    {
        return false;
    }
    let under = |top: &str| path == top || path.starts_with(&format!("{top}.")) || path.starts_with(&format!("{top}["));
    match subresource {
        "status" => under(".status"),
        "scale" => under(".spec"),
        "" if verb == Verb::Update => !under(".status"),
        _ => true,
    }
}

/// Every leaf of `value` as a field path and a hash of its value. A list of objects that all
/// have a string `name` is keyed by it (containers, env, ports with names), as server-side
/// apply keys them; any other list is one leaf. `$` keys (strategic merge directives) are not
/// fields.
fn leaves(value: &Value, path: &mut Vec<Element>, out: &mut Vec<(String, u64)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                if key.starts_with('$') {
                    continue;
                }
                path.push(Element::Field(key.as_str().into()));
                leaves(child, path, out);
                path.pop();
            }
        }
        Value::Array(items)
            if !items.is_empty() && items.iter().all(|i| i.get("name").is_some_and(Value::is_string)) =>
        {
            for item in items {
                let name = item.get("name").map(Value::to_string).unwrap_or_default();
                path.push(Element::Key(Arc::from(vec![("name".to_string(), name)])));
                leaves(item, path, out);
                path.pop();
            }
        }
        _ => out.push((FieldPath(path.clone()).to_string(), hash_value(value))),
    }
}

/// `/spec/template/spec/containers/0/image` (a JSON patch's path) as a field path.
fn pointer_path(pointer: &str) -> String {
    let elements = pointer
        .split('/')
        .skip(1)
        .map(|part| {
            let part = part.replace("~1", "/").replace("~0", "~");
            match part.parse::<u64>() {
                Ok(i) => Element::Index(i),
                Err(_) => Element::Field(part.as_str().into()),
            }
        })
        .collect();
    FieldPath(elements).to_string()
}

fn owners(value: &Value) -> Vec<(Arc<str>, Arc<str>, Box<str>)> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| (text(r, "kind").into(), text(r, "name").into(), text(r, "uid").into_boxed_str()))
                .collect()
        })
        .unwrap_or_default()
}

/// A hash of a JSON value that does not depend on the order of an object's keys: two writes
/// of the same value hash alike whoever serialized them.
pub fn hash_value(value: &Value) -> u64 {
    let mut h = Fnv::default();
    feed(value, &mut h);
    h.finish()
}

fn feed(value: &Value, h: &mut Fnv) {
    match value {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            h.write_u8(3);
            h.write(n.to_string().as_bytes());
        }
        Value::String(s) => {
            h.write_u8(4);
            h.write(s.as_bytes());
            h.write_u8(0xff);
        }
        Value::Array(items) => {
            h.write_u8(5);
            for i in items {
                feed(i, h);
            }
            h.write_u8(6);
        }
        Value::Object(map) => {
            h.write_u8(7);
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for k in keys {
                h.write(k.as_bytes());
                h.write_u8(0xfe);
                feed(&map[k], h);
            }
            h.write_u8(8);
        }
    }
}

/// FNV-1a: small, and enough to tell one value from another.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn paths(body: &Body) -> Vec<&str> {
        body.fields.iter().map(|(p, _)| &**p).collect()
    }

    #[test]
    fn an_update_names_its_fields_not_the_bookkeeping_or_status() {
        let text = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"12",
            "labels":{"app.kubernetes.io/name":"web"},"managedFields":[{"manager":"x"}]},
            "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"a:1"}]}}},"status":{"replicas":3}}"#;
        let body = request_body(&raw(text), Verb::Update, "", false, false).unwrap();
        assert_eq!(body.shape, BodyShape::Object);
        assert_eq!(
            paths(&body),
            [
                ".metadata.name",
                ".metadata.labels[\"app.kubernetes.io/name\"]",
                ".spec.replicas",
                ".spec.template.spec.containers[name=c].name",
                ".spec.template.spec.containers[name=c].image"
            ]
        );
    }

    #[test]
    fn scale_and_status_keep_their_own_part() {
        let scale = r#"{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web"},"spec":{"replicas":4},"status":{"replicas":2}}"#;
        let body = request_body(&raw(scale), Verb::Update, "scale", false, false).unwrap();
        assert_eq!(paths(&body), [".spec.replicas"]);
        let status = r#"{"metadata":{"name":"web"},"spec":{"replicas":4},"status":{"observedGeneration":2}}"#;
        assert_eq!(
            paths(&request_body(&raw(status), Verb::Update, "status", false, false).unwrap()),
            [".status.observedGeneration"]
        );
    }

    #[test]
    fn patches_json_patches_and_applies() {
        let merge = request_body(
            &raw(r#"{"spec":{"replicas":2},"$setElementOrder/containers":[]}"#),
            Verb::Patch,
            "",
            false,
            false,
        )
        .unwrap();
        assert_eq!((merge.shape, paths(&merge)), (BodyShape::Patch, vec![".spec.replicas"]));
        let json = request_body(
            &raw(r#"[{"op":"replace","path":"/metadata/labels/a~1b","value":"x"}]"#),
            Verb::Patch,
            "",
            false,
            false,
        )
        .unwrap();
        assert_eq!((json.shape, paths(&json)), (BodyShape::JsonPatch, vec![".metadata.labels[\"a/b\"]"]));
        let apply = request_body(
            &raw(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w"},"spec":{"replicas":1}}"#),
            Verb::Patch,
            "",
            true,
            false,
        )
        .unwrap();
        assert_eq!(apply.shape, BodyShape::Apply);
    }

    #[test]
    fn a_lease_says_its_holder_and_a_child_its_owner() {
        let lease = r#"{"metadata":{"name":"l"},"spec":{"holderIdentity":"a_1","leaseDurationSeconds":15}}"#;
        let body = request_body(&raw(lease), Verb::Update, "", false, true).unwrap();
        assert_eq!((body.holder.as_deref(), body.lease_seconds), (Some("a_1"), Some(15)));
        let rs = r#"{"metadata":{"ownerReferences":[{"kind":"Deployment","name":"web","uid":"u1"}]}}"#;
        let body = request_body(&raw(rs), Verb::Create, "", false, false).unwrap();
        assert_eq!(body.owners, vec![("Deployment".into(), "web".into(), "u1".into())]);
    }

    #[test]
    fn the_stored_object_gives_its_version_and_the_writers_entry() {
        let stored = r#"{"metadata":{"resourceVersion":"42","managedFields":[
            {"manager":"gitops","operation":"Apply","fieldsV1":{"f:spec":{"f:replicas":{}}}},
            {"manager":"kubectl","operation":"Update","subresource":"scale","fieldsV1":{"f:spec":{"f:replicas":{}}}}]}}"#;
        let mut body = Body::default();
        assert_eq!(response_body(&raw(stored), "gitops", "", true, &mut body), Some(42));
        assert_eq!(body.managed, Some(vec![".spec.replicas".to_string()]));
        let mut body = Body::default();
        response_body(&raw(stored), "kubectl", "", false, &mut body);
        assert_eq!(body.managed, None, "kubectl's entry is the scale subresource's");
    }

    #[test]
    fn value_hashes_ignore_key_order_and_tell_values_apart() {
        let a: Value = serde_json::from_str(r#"{"x":1,"y":[true,"s"]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"y":[true,"s"],"x":1}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"y":[true,"t"],"x":1}"#).unwrap();
        assert_eq!(hash_value(&a), hash_value(&b));
        assert_ne!(hash_value(&a), hash_value(&c));
    }
}
