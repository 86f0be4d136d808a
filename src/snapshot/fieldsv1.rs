//! The FieldsV1 format of managedFields, decoded into readable field paths.
//! Pure and total: malformed input is an error value, never a panic.
//!
//! A FieldsV1 value is a trie of JSON objects whose keys are `f:<field>`,
//! `k:<json object>` (a list item by its key fields), `v:<json value>` (a set
//! item), `i:<index>` (a list position), and `.` (the node itself is owned,
//! besides children). An empty object is an owned leaf.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Nesting deeper than this is refused rather than followed (hostile input).
pub const MAX_DEPTH: usize = 64;

/// Shared (`Arc`), not owned: a decoded trie hands each owned path a copy of every element
/// above it, and copying the strings was most of what decoding a census cost.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Element {
    Field(Arc<str>),
    /// Associative list item by its key fields, e.g. containers by name.
    Key(Arc<[(String, String)]>),
    /// Set item (e.g. a finalizer), as its JSON text.
    Value(String),
    Index(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FieldPath(pub Vec<Element>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Where in the trie, as far as it was understood.
    pub at: String,
    pub problem: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.at.is_empty() { "." } else { &self.at };
        write!(f, "fieldsV1 at {at}: {}", self.problem)
    }
}

impl std::error::Error for DecodeError {}

/// Every owned path (leaves and `.`-marked nodes), sorted.
pub fn decode(fields: &Value) -> Result<Vec<FieldPath>, DecodeError> {
    match Decoded::deserialize(fields) {
        Ok(Decoded(result)) => result,
        // The walk turns every problem into a value; a JSON tree gives it no other.
        Err(e) => Err(err(&FieldPath::default(), e.to_string())),
    }
}

/// FieldsV1 decoded as it is read, with no JSON tree built first (lists of thousands
/// of objects carry one trie per manager entry). A malformed trie is a value, not a
/// deserialization error, so one bad entry does not fail the list it came in.
#[derive(Debug)]
pub struct Decoded(pub Result<Vec<FieldPath>, DecodeError>);

impl<'de> Deserialize<'de> for Decoded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Decoded(walk::<D, Vec<FieldPath>>(d)?.map(|mut out| {
            out.sort();
            out
        })))
    }
}

/// How many paths a FieldsV1 trie owns, by the field they lie under, counted as it is read
/// without keeping any: all that an object's lone managedFields entry is judged by (see
/// [`lone_entry_contests`](super::fields::lone_entry_contests)). Fails where [`Decoded`] fails,
/// with the same error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tops {
    pub paths: usize,
    /// Under `status`.
    pub status: usize,
    /// Under `metadata`.
    pub metadata: usize,
}

impl Tops {
    pub fn of(paths: &[FieldPath]) -> Tops {
        let mut tops = Tops::default();
        for path in paths {
            tops.owned(path);
        }
        tops
    }
}

#[derive(Debug)]
pub struct Counted(pub Result<Tops, DecodeError>);

/// [`Counted`] from a trie's text, without building the path of each key: the census
/// counts the trie of almost every object it reads, and building each path's elements
/// (a shared string per field name) was most of the cost. Keys are checked as the decoder
/// checks them; at the first problem the trie is walked again by [`Counted`], which says
/// where it is.
pub fn count(text: &str) -> Result<Tops, DecodeError> {
    let mut tally = Tally { tops: Tops::default(), sound: true };
    let read = CountNode { tally: &mut tally, depth: 0, top: Top::Other }
        .deserialize(&mut serde_json::Deserializer::from_str(text));
    match read {
        Ok(()) if tally.sound => Ok(tally.tops),
        _ => match serde_json::from_str::<Counted>(text) {
            Ok(Counted(counted)) => counted,
            Err(e) => Err(err(&FieldPath::default(), e.to_string())),
        },
    }
}

/// Which top-level field a path lies under, as [`Tops`] counts it.
#[derive(Clone, Copy)]
enum Top {
    Status,
    Metadata,
    Other,
}

impl Top {
    fn of_field(name: &str) -> Top {
        match name {
            "status" => Top::Status,
            "metadata" => Top::Metadata,
            _ => Top::Other,
        }
    }
}

impl Tops {
    fn add(&mut self, top: Top) {
        self.paths += 1;
        match top {
            Top::Status => self.status += 1,
            Top::Metadata => self.metadata += 1,
            Top::Other => {}
        }
    }
}

struct Tally {
    tops: Tops,
    /// False once anything the decoder would refuse was met.
    sound: bool,
}

/// A trie node `depth` keys down, under `top`.
struct CountNode<'a> {
    tally: &'a mut Tally,
    depth: usize,
    top: Top,
}

impl<'de> DeserializeSeed<'de> for CountNode<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CountNode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a FieldsV1 object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let tally = self.tally;
        let mut empty = true;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            empty = false;
            if !tally.sound || self.depth > MAX_DEPTH {
                tally.sound = false;
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if key == "." {
                match map.next_value::<EmptyObject>()?.0 {
                    true => tally.tops.add(if self.depth == 0 { Top::Other } else { self.top }),
                    false => tally.sound = false,
                }
                continue;
            }
            let top = match key.split_once(':') {
                Some(("f", _)) if self.depth > 0 => Some(self.top),
                Some(("f", name)) => Some(Top::of_field(name)),
                _ if parse_element(&key).is_ok() => Some(if self.depth == 0 { Top::Other } else { self.top }),
                _ => None,
            };
            match top {
                Some(top) => map.next_value_seed(CountNode { tally: &mut *tally, depth: self.depth + 1, top })?,
                None => {
                    tally.sound = false;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if empty && self.depth > 0 {
            tally.tops.add(self.top);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.tally.sound = false;
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.tally.sound = false;
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Counted(walk::<D, Tops>(d)?))
    }
}

/// What a walk does with each owned path.
trait Sink: Default {
    fn owned(&mut self, path: &FieldPath);
}

impl Sink for Vec<FieldPath> {
    fn owned(&mut self, path: &FieldPath) {
        self.push(path.clone());
    }
}

impl Sink for Tops {
    fn owned(&mut self, path: &FieldPath) {
        self.add(match path.0.first() {
            Some(Element::Field(f)) => Top::of_field(f),
            _ => Top::Other,
        });
    }
}

fn walk<'de, D: Deserializer<'de>, S: Sink>(d: D) -> Result<Result<S, DecodeError>, D::Error> {
    let mut walk = Walk { path: FieldPath::default(), out: S::default(), error: None };
    Node { walk: &mut walk, key: None }.deserialize(d)?;
    Ok(match walk.error {
        Some(e) => Err(e),
        None => Ok(walk.out),
    })
}

fn err(path: &FieldPath, problem: impl Into<String>) -> DecodeError {
    DecodeError { at: path.to_string(), problem: problem.into() }
}

struct Walk<S> {
    path: FieldPath,
    out: S,
    /// The first problem met; the rest of the input is then only skipped.
    error: Option<DecodeError>,
}

impl<S> Walk<S> {
    /// Records the first problem, at the first `depth` elements of the current path.
    fn fail(&mut self, depth: usize, problem: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(err(&FieldPath(self.path.0[..depth].to_vec()), problem));
        }
    }
}

/// One trie node, at `walk.path`; `key` is the parent's key for it (None at the top).
struct Node<'a, 'k, S> {
    walk: &'a mut Walk<S>,
    key: Option<&'k str>,
}

impl<'de, S: Sink> DeserializeSeed<'de> for Node<'_, '_, S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<S> Node<'_, '_, S> {
    fn not_an_object(self) {
        let walk = self.walk;
        match self.key {
            None => walk.fail(0, "the top level is not an object"),
            // Said of the parent, which holds the key.
            Some(key) => walk.fail(walk.path.0.len() - 1, format!("{key:?} does not hold an object")),
        }
    }
}

impl<'de, S: Sink> Visitor<'de> for Node<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a FieldsV1 object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let walk = self.walk;
        let mut empty = true;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if empty && walk.error.is_none() && walk.path.0.len() > MAX_DEPTH {
                walk.fail(walk.path.0.len(), format!("nested deeper than {MAX_DEPTH}"));
            }
            empty = false;
            if walk.error.is_some() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if key == "." {
                if map.next_value::<EmptyObject>()?.0 {
                    walk.out.owned(&walk.path);
                } else {
                    walk.fail(walk.path.0.len(), "the \".\" marker must hold {}");
                }
                continue;
            }
            match parse_element(&key) {
                Ok(element) => {
                    walk.path.0.push(element);
                    map.next_value_seed(Node { walk: &mut *walk, key: Some(&key) })?;
                    walk.path.0.pop();
                }
                Err(problem) => {
                    walk.fail(walk.path.0.len(), problem);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if empty && self.key.is_some() && walk.error.is_none() {
            walk.out.owned(&walk.path);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.not_an_object();
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.not_an_object();
        Ok(())
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Whether a value is `{}` (what the "." marker must hold); read to its end either way.
struct EmptyObject(bool);

impl<'de> Deserialize<'de> for EmptyObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EmptyVisitor;
        impl<'de> Visitor<'de> for EmptyVisitor {
            type Value = EmptyObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EmptyObject, A::Error> {
                let mut empty = true;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    empty = false;
                }
                Ok(EmptyObject(empty))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<EmptyObject, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(EmptyObject(false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<EmptyObject, E> {
                Ok(EmptyObject(false))
            }
        }
        d.deserialize_any(EmptyVisitor)
    }
}

fn parse_element(key: &str) -> Result<Element, String> {
    let (prefix, rest) = key.split_once(':').ok_or_else(|| format!("{key:?} has no f:, k:, v: or i: prefix"))?;
    match prefix {
        "f" => Ok(Element::Field(rest.into())),
        "i" => rest.parse::<u64>().map(Element::Index).map_err(|_| format!("{key:?}: not a list index")),
        "v" => {
            let value: Value = serde_json::from_str(rest).map_err(|e| format!("{key:?}: not JSON ({e})"))?;
            Ok(Element::Value(value.to_string()))
        }
        "k" => {
            let value: Value = serde_json::from_str(rest).map_err(|e| format!("{key:?}: not JSON ({e})"))?;
            let object = value.as_object().ok_or_else(|| format!("{key:?}: a list key must be a JSON object"))?;
            if object.is_empty() {
                return Err(format!("{key:?}: a list key needs at least one field"));
            }
            let fields: BTreeMap<String, String> = object.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
            Ok(Element::Key(fields.into_iter().collect()))
        }
        other => Err(format!("{key:?}: unknown prefix {other:?}")),
    }
}

/// Builds the FieldsV1 trie for a set of owned paths (the inverse of [`decode`]).
pub fn encode(paths: &[FieldPath]) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for element in &path.0 {
            node = node
                .entry(element_key(element))
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("encode only inserts objects");
        }
        if !node.is_empty() || path.0.is_empty() {
            node.insert(".".into(), Value::Object(Map::new()));
        }
    }
    // A node first inserted as a leaf and later given children needs its "." marker.
    mark_owned_parents(&mut root, paths, &mut Vec::new());
    Value::Object(root)
}

fn mark_owned_parents(node: &mut Map<String, Value>, owned: &[FieldPath], prefix: &mut Vec<Element>) {
    let keys: Vec<String> = node.keys().filter(|k| *k != ".").cloned().collect();
    for key in keys {
        let Ok(element) = parse_element(&key) else {
            continue;
        };
        prefix.push(element);
        if let Some(Value::Object(child)) = node.get_mut(&key) {
            if !child.is_empty() && owned.iter().any(|p| p.0 == *prefix) {
                child.insert(".".into(), Value::Object(Map::new()));
            }
            mark_owned_parents(child, owned, prefix);
        }
        prefix.pop();
    }
}

fn element_key(e: &Element) -> String {
    match e {
        Element::Field(name) => format!("f:{name}"),
        Element::Index(i) => format!("i:{i}"),
        Element::Value(json) => format!("v:{json}"),
        Element::Key(fields) => {
            let object: Map<String, Value> = fields
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::from_str(v).unwrap_or(Value::String(v.clone()))))
                .collect();
            format!("k:{}", Value::Object(object))
        }
    }
}

impl fmt::Display for FieldPath {
    /// `.spec.template.spec.containers[name=web].image`, `.spec.ports[port=80,protocol=TCP]`,
    /// `.metadata.finalizers[="x"]`, `.metadata.labels["app.kubernetes.io/name"]`, `.args[2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.0 {
            match e {
                Element::Field(name) if is_plain(name) => write!(f, ".{name}")?,
                Element::Field(name) => write!(f, "[{}]", Value::String(name.to_string()))?,
                Element::Index(i) => write!(f, "[{i}]")?,
                Element::Value(json) => write!(f, "[={json}]")?,
                Element::Key(fields) => {
                    let parts: Vec<String> = fields
                        .iter()
                        .map(|(k, v)| match serde_json::from_str::<Value>(v) {
                            Ok(Value::String(s)) if is_plain(&s) => format!("{k}={s}"),
                            _ => format!("{k}={v}"),
                        })
                        .collect();
                    write!(f, "[{}]", parts.join(","))?
                }
            }
        }
        Ok(())
    }
}

fn is_plain(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl FieldPath {
    /// Whether `self` lies at or below `prefix`.
    pub fn starts_with(&self, prefix: &FieldPath) -> bool {
        self.0.starts_with(&prefix.0)
    }

    /// Looks the path up in a live object: fields by name, list items by their key
    /// fields, set items by value, indices by position.
    pub fn lookup<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        let mut here = object;
        for e in &self.0 {
            here = match e {
                Element::Field(name) => here.get(&**name)?,
                Element::Index(i) => here.get(usize::try_from(*i).ok()?)?,
                Element::Value(json) => {
                    let want: Value = serde_json::from_str(json).ok()?;
                    here.as_array()?.iter().find(|item| **item == want)?
                }
                Element::Key(fields) => here.as_array()?.iter().find(|item| {
                    fields.iter().all(|(k, v)| {
                        item.get(k).is_some_and(|have| serde_json::from_str::<Value>(v).is_ok_and(|want| *have == want))
                    })
                })?,
            };
        }
        Some(here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn paths(v: Value) -> Vec<String> {
        decode(&v).unwrap().iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn golden_deployment_apply() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:app.kubernetes.io/name": {}}, "f:finalizers": {"v:\"coord.example/x\"": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
                        "f:args": {"i:2": {}}}
                }}}
            }
        });
        assert_eq!(
            paths(fields),
            vec![
                ".metadata.finalizers[=\"coord.example/x\"]",
                ".metadata.labels",
                ".metadata.labels.app",
                ".metadata.labels[\"app.kubernetes.io/name\"]",
                ".spec.replicas",
                ".spec.template.spec.containers[name=web]",
                ".spec.template.spec.containers[name=web].args[2]",
                ".spec.template.spec.containers[name=web].image",
                ".spec.template.spec.containers[name=web].name",
                ".spec.template.spec.containers[name=web].ports[containerPort=80,protocol=TCP]",
                ".spec.template.spec.containers[name=web].ports[containerPort=80,protocol=TCP].containerPort",
            ]
        );
    }

    #[test]
    fn malformed_input_is_an_error() {
        for (bad, want) in [
            (json!([]), "the top level is not an object"),
            (json!({"x:y": {}}), "unknown prefix"),
            (json!({"spec": {}}), "has no f:, k:, v: or i: prefix"),
            (json!({"f:spec": 3}), "does not hold an object"),
            (json!({"f:a": {"k:[1]": {}}}), "a list key must be a JSON object"),
            (json!({"f:a": {"k:{}": {}}}), "needs at least one field"),
            (json!({"f:a": {"k:{bad": {}}}), "not JSON"),
            (json!({"f:a": {"i:-1": {}}}), "not a list index"),
            (json!({"f:a": {".": {"f:b": {}}}}), "must hold {}"),
        ] {
            let e = decode(&bad).unwrap_err();
            assert!(e.to_string().contains(want), "{bad}: {e}");
        }
        let mut deep = json!({});
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!({"f:a": deep});
        }
        assert!(decode(&deep).unwrap_err().problem.contains("deeper"));
        let Counted(counted) = serde_json::from_value(deep.clone()).unwrap();
        assert_eq!(count(&deep.to_string()), counted);
    }

    #[test]
    fn counting_sorts_paths_by_their_top_field() {
        let fields = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}},
            "f:status": {"f:replicas": {}, "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}});
        let Counted(counted) = serde_json::from_value(fields.clone()).unwrap();
        assert_eq!(counted.unwrap(), Tops { paths: 6, status: 3, metadata: 2 });
        let Counted(bad) = serde_json::from_value(json!({"f:a": {"i:-1": {}}})).unwrap();
        assert!(bad.unwrap_err().problem.contains("not a list index"));
        // Without building paths, and still saying where a problem is.
        assert_eq!(count(&fields.to_string()), Ok(Tops { paths: 6, status: 3, metadata: 2 }));
        for (bad, at) in [
            (json!({"f:a": {"f:b": {"i:-1": {}}}}), ".a.b"),
            (json!({"f:a": {".": {"f:x": {}}}}), ".a"),
            (json!({"f:status": 3}), "."),
            (json!([1]), "."),
        ] {
            let Counted(want) = serde_json::from_value(bad.clone()).unwrap();
            assert_eq!(count(&bad.to_string()), want.clone(), "{bad}");
            assert_eq!(want.unwrap_err().to_string().split(':').next().unwrap(), format!("fieldsV1 at {at}"), "{bad}");
        }
    }

    #[test]
    fn lookup_maps_paths_to_live_values() {
        let object = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "side", "image": "busybox"},
            {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}], "args": ["a", "b", "c"]}
        ]}}}, "metadata": {"finalizers": ["coord.example/x"]}});
        let fields = json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
            "f:image": {}, "f:args": {"i:2": {}}, "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {"f:protocol": {}}}}}}}},
            "f:metadata": {"f:finalizers": {"v:\"coord.example/x\"": {}}}});
        let got: Vec<(String, Value)> = decode(&fields)
            .unwrap()
            .iter()
            .map(|p| (p.to_string(), p.lookup(&object).cloned().unwrap_or(Value::Null)))
            .collect();
        assert!(
            got.contains(&(".spec.template.spec.containers[name=web].image".into(), json!("nginx:1.27"))),
            "{got:?}"
        );
        assert!(got.contains(&(".spec.template.spec.containers[name=web].args[2]".into(), json!("c"))));
        assert!(got.contains(&(
            ".spec.template.spec.containers[name=web].ports[containerPort=80,protocol=TCP].protocol".into(),
            json!("TCP")
        )));
        assert!(got.contains(&(".metadata.finalizers[=\"coord.example/x\"]".into(), json!("coord.example/x"))));
    }

    fn element() -> impl Strategy<Value = Element> {
        let name = "[a-z][a-zA-Z0-9.]{0,6}";
        prop_oneof![
            name.prop_map(|n| Element::Field(n.into())),
            (0u64..5).prop_map(Element::Index),
            name.prop_map(|v| Element::Value(Value::String(v).to_string())),
            (name, 0i64..100).prop_map(|(n, p)| Element::Key(
                vec![("name".into(), Value::String(n).to_string()), ("port".into(), p.to_string())].into()
            )),
        ]
    }

    proptest! {
        #[test]
        fn encode_then_decode_round_trips(ps in proptest::collection::btree_set(proptest::collection::vec(element(), 1..5).prop_map(FieldPath), 0..12)) {
            let ps: Vec<FieldPath> = ps.into_iter().collect();
            let trie = encode(&ps);
            let back = decode(&trie).unwrap();
            prop_assert_eq!(back, ps.clone());
            // Read as text (as a list page is), with k: and v: keys full of escapes.
            let from_text = serde_json::from_str::<Decoded>(&trie.to_string()).unwrap().0.unwrap();
            prop_assert_eq!(from_text, ps.clone());
            // And the trie itself is stable.
            prop_assert_eq!(encode(&decode(&trie).unwrap()), trie);
        }

        #[test]
        fn decoding_text_agrees_with_decoding_a_tree(text in "[{}\":fkvi.0-9a-z,\\[\\]]{0,60}") {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                let from_text = serde_json::from_str::<Decoded>(&text).expect("a trie problem is a value").0;
                let from_tree = decode(&v);
                // Key order differs (text order, sorted tree), so the first problem may too.
                prop_assert_eq!(from_text.is_ok(), from_tree.is_ok(), "{}", text);
                if let (Ok(a), Ok(b)) = (from_text, from_tree) {
                    prop_assert_eq!(a, b);
                }
            }
        }

        /// Counting a trie gives its paths' tops, some under status or metadata.
        #[test]
        fn counting_agrees_with_the_paths(ps in proptest::collection::btree_set(
            (proptest::sample::select(vec!["status", "metadata", "spec"]), proptest::collection::vec(element(), 0..4))
                .prop_map(|(top, rest)| FieldPath([vec![Element::Field(top.into())], rest].concat())), 0..12)) {
            let ps: Vec<FieldPath> = ps.into_iter().collect();
            let text = encode(&ps).to_string();
            let Counted(counted) = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(counted, Ok(Tops::of(&ps)));
            prop_assert_eq!(count(&text), Ok(Tops::of(&ps)));
        }

        /// Counting gives the decoded paths' tops, or the decoder's own error.
        #[test]
        fn counting_agrees_with_decoding(text in "[{}\":fkvi.0-9a-z,\\[\\]]{0,60}") {
            if let (Ok(Decoded(decoded)), Ok(Counted(counted))) =
                (serde_json::from_str::<Decoded>(&text), serde_json::from_str::<Counted>(&text))
            {
                prop_assert_eq!(&counted, &decoded.map(|paths| Tops::of(&paths)), "{}", text);
                prop_assert_eq!(count(&text), counted, "{}", text);
            }
        }

        #[test]
        fn decoder_is_total_on_arbitrary_json(text in "[{}\":fkvi.0-9a-z,\\[\\]]{0,60}") {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                let _ = decode(&v);
            }
        }
    }
}
