//! Kubernetes' protobuf encoding of metadata-only lists (and of the `Status` of a refusal),
//! read as if it were their JSON, so the serde types that decode the JSON decode it too.
//!
//! Asked for first in a metadata list's Accept (as client-go's metadata client does): the
//! API server skips JSON encoding, its costliest step for a large list, and sends fewer
//! bytes; here a field nobody asked for (managedFields, for most commands) is stepped over
//! by its length rather than scanned. Only the messages a PartialObjectMetadataList holds
//! are known. Their fields are shown under their JSON names with the JSON encoding's habits:
//! empty strings and zero numbers left out where Go's JSON omits them, times as RFC 3339
//! seconds (a zero time as null), fieldsV1 as the JSON text it carries.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, MapDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The media type of a protobuf answer (before its parameters).
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// Every protobuf body starts with this, then a `runtime.Unknown` envelope.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protobuf: {}", self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn bad(what: &str) -> Error {
    Error(what.to_string())
}

/// A field's value as it is on the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'de> {
    Varint(u64),
    Bytes(&'de [u8]),
    /// fixed32/fixed64: no field read here has one; kept only to be skipped.
    Fixed,
}

/// The fields of one message, in wire order.
struct Fields<'de> {
    buf: &'de [u8],
    pos: usize,
}

impl<'de> Fields<'de> {
    fn new(buf: &'de [u8]) -> Fields<'de> {
        Fields { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, Error> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos).ok_or_else(|| bad("truncated varint"))?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: u64) -> Result<&'de [u8], Error> {
        let end = usize::try_from(n).ok().and_then(|n| self.pos.checked_add(n)).filter(|&end| end <= self.buf.len());
        let end = end.ok_or_else(|| bad("field runs past the end of its message"))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }
}

impl<'de> Iterator for Fields<'de> {
    type Item = Result<(u32, Wire<'de>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let field = (|| {
            let key = self.varint()?;
            let number = u32::try_from(key >> 3).map_err(|_| bad("field number out of range"))?;
            let wire = match key & 7 {
                0 => Wire::Varint(self.varint()?),
                1 => self.take(8).map(|_| Wire::Fixed)?,
                2 => {
                    let n = self.varint()?;
                    Wire::Bytes(self.take(n)?)
                }
                5 => self.take(4).map(|_| Wire::Fixed)?,
                _ => return Err(bad("unsupported wire type")),
            };
            Ok((number, wire))
        })();
        if field.is_err() {
            self.pos = self.buf.len();
        }
        Some(field)
    }
}

/// How a field is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    Str,
    Int,
    Bool,
    /// `metav1.Time`: seconds and nanos.
    Time,
    /// `map<string, string>`: repeated key/value entries.
    StrMap,
    Msg(&'static [Field]),
    /// `FieldsV1`: JSON text in its field 1.
    Json,
    /// Not on the wire: the JSON encoding's kind and apiVersion.
    Const(&'static str),
}

#[derive(Debug, PartialEq)]
struct Field {
    number: u32,
    name: &'static str,
    ty: Ty,
    repeated: bool,
    /// Go's JSON leaves the empty string or zero number out (`omitempty` on a plain value).
    omit_zero: bool,
}

const fn one(number: u32, name: &'static str, ty: Ty) -> Field {
    Field { number, name, ty, repeated: false, omit_zero: true }
}

const fn many(number: u32, name: &'static str, ty: Ty) -> Field {
    Field { number, name, ty, repeated: true, omit_zero: true }
}

/// Always written by Go's JSON, even when empty or zero (required fields, pointers).
const fn kept(number: u32, name: &'static str, ty: Ty) -> Field {
    Field { number, name, ty, repeated: false, omit_zero: false }
}

const LIST: &[Field] = &[
    kept(0, "kind", Ty::Const("PartialObjectMetadataList")),
    kept(0, "apiVersion", Ty::Const("meta.k8s.io/v1")),
    one(1, "metadata", Ty::Msg(LIST_META)),
    many(2, "items", Ty::Msg(ITEM)),
];

const LIST_META: &[Field] =
    &[one(2, "resourceVersion", Ty::Str), one(3, "continue", Ty::Str), kept(4, "remainingItemCount", Ty::Int)];

const ITEM: &[Field] = &[
    kept(0, "kind", Ty::Const("PartialObjectMetadata")),
    kept(0, "apiVersion", Ty::Const("meta.k8s.io/v1")),
    one(1, "metadata", Ty::Msg(OBJECT_META)),
];

const OBJECT_META: &[Field] = &[
    one(1, "name", Ty::Str),
    one(2, "generateName", Ty::Str),
    one(3, "namespace", Ty::Str),
    one(4, "selfLink", Ty::Str),
    one(5, "uid", Ty::Str),
    one(6, "resourceVersion", Ty::Str),
    one(7, "generation", Ty::Int),
    kept(8, "creationTimestamp", Ty::Time),
    one(9, "deletionTimestamp", Ty::Time),
    kept(10, "deletionGracePeriodSeconds", Ty::Int),
    many(11, "labels", Ty::StrMap),
    many(12, "annotations", Ty::StrMap),
    many(13, "ownerReferences", Ty::Msg(OWNER_REFERENCE)),
    many(14, "finalizers", Ty::Str),
    many(17, "managedFields", Ty::Msg(MANAGED_FIELDS_ENTRY)),
];

const OWNER_REFERENCE: &[Field] = &[
    kept(5, "apiVersion", Ty::Str),
    kept(1, "kind", Ty::Str),
    kept(3, "name", Ty::Str),
    kept(4, "uid", Ty::Str),
    kept(6, "controller", Ty::Bool),
    kept(7, "blockOwnerDeletion", Ty::Bool),
];

const MANAGED_FIELDS_ENTRY: &[Field] = &[
    one(1, "manager", Ty::Str),
    one(2, "operation", Ty::Str),
    one(3, "apiVersion", Ty::Str),
    one(4, "time", Ty::Time),
    one(6, "fieldsType", Ty::Str),
    one(7, "fieldsV1", Ty::Json),
    one(8, "subresource", Ty::Str),
];

/// The most fields any message above has (a scan keeps one slot per field).
const MAX_FIELDS: usize = 15;
const _: () = {
    let schemas = [LIST, LIST_META, ITEM, OBJECT_META, OWNER_REFERENCE, MANAGED_FIELDS_ENTRY];
    let mut i = 0;
    while i < schemas.len() {
        assert!(schemas[i].len() <= MAX_FIELDS);
        i += 1;
    }
};

/// The message inside a protobuf body's envelope, and the kind the envelope names.
fn unwrap(body: &[u8]) -> Result<(&str, &[u8]), Error> {
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| bad("no k8s protobuf envelope"))?;
    let (mut kind, mut raw) = ("", None);
    for field in Fields::new(rest) {
        match field? {
            (1, Wire::Bytes(type_meta)) => {
                for f in Fields::new(type_meta) {
                    if let (2, Wire::Bytes(k)) = f? {
                        kind = std::str::from_utf8(k).map_err(|_| bad("kind is not UTF-8"))?;
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = Some(r),
            (3, Wire::Bytes(encoding)) if !encoding.is_empty() => return Err(bad("encoded envelope")),
            _ => {}
        }
    }
    Ok((kind, raw.unwrap_or_default()))
}

/// Decodes a protobuf `PartialObjectMetadataList` body into `T`, as its JSON would decode.
pub fn from_list<'de, T: de::Deserialize<'de>>(body: &'de [u8]) -> Result<T, Error> {
    let (kind, raw) = unwrap(body)?;
    if kind != "PartialObjectMetadataList" {
        return Err(Error(format!("expected a PartialObjectMetadataList, got {kind:?}")));
    }
    T::deserialize(Message { buf: raw, schema: LIST })
}

/// The reason and message of a protobuf `Status` body (a refusal), if it is one.
pub fn status(body: &[u8]) -> Option<(String, String)> {
    let (kind, raw) = unwrap(body).ok()?;
    if kind != "Status" {
        return None;
    }
    let (mut reason, mut message) = (String::new(), String::new());
    for field in Fields::new(raw) {
        match field.ok()? {
            (3, Wire::Bytes(m)) => message = String::from_utf8_lossy(m).into_owned(),
            (4, Wire::Bytes(r)) => reason = String::from_utf8_lossy(r).into_owned(),
            _ => {}
        }
    }
    Some((reason, message))
}

/// Where a field was seen in its message: the last value (the one protobuf keeps for a
/// singular field) and, for a repeated one, where its first value starts.
#[derive(Clone, Copy, Default)]
struct Seen<'de> {
    last: Option<Wire<'de>>,
    first_at: usize,
}

/// A known message, shown as a map of its fields.
struct Message<'de> {
    buf: &'de [u8],
    schema: &'static [Field],
}

impl<'de> Message<'de> {
    /// One pass over the message: where each known field is.
    fn scan(&self) -> Result<[Seen<'de>; MAX_FIELDS], Error> {
        let mut seen = [Seen::default(); MAX_FIELDS];
        let mut fields = Fields::new(self.buf);
        loop {
            let at = fields.pos;
            let Some(field) = fields.next() else { break };
            let (number, wire) = field?;
            if let Some(i) = self.schema.iter().position(|f| f.number == number && number != 0) {
                if seen[i].last.is_none() {
                    seen[i].first_at = at;
                }
                seen[i].last = Some(wire);
            }
        }
        Ok(seen)
    }
}

impl<'de> Deserializer<'de> for Message<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let seen = self.scan()?;
        visitor.visit_map(MessageMap { buf: self.buf, schema: self.schema, seen, next: 0, value: None })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        if name == RAW_VALUE {
            return as_raw_json(self, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct enum identifier
    }
}

/// serde_json's marker for a `RawValue`: asked of a message, it gets the message's JSON text.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The JSON text of what `de` shows, handed over the way serde_json hands a `RawValue`
/// (a one-entry map under its marker). Used for whole items kept as text (check's census kinds).
fn as_raw_json<'de, V: Visitor<'de>>(de: Message<'de>, visitor: V) -> Result<V::Value, Error> {
    let value: serde_json::Value = de::Deserialize::deserialize(de)?;
    let text = serde_json::to_string(&value).map_err(de::Error::custom)?;
    visitor.visit_map(MapDeserializer::new(std::iter::once((RAW_VALUE, text))))
}

struct MessageMap<'de> {
    buf: &'de [u8],
    schema: &'static [Field],
    seen: [Seen<'de>; MAX_FIELDS],
    next: usize,
    value: Option<Value<'de>>,
}

impl<'de> MessageMap<'de> {
    /// What field `i` shows, or None when the JSON would leave it out.
    fn shown(&self, i: usize) -> Option<Value<'de>> {
        let field = &self.schema[i];
        if let Ty::Const(text) = field.ty {
            return Some(Value::Const(text));
        }
        let last = self.seen[i].last?;
        if field.repeated {
            let from = &self.buf[self.seen[i].first_at..];
            return Some(Value::Repeated { buf: from, number: field.number, ty: field.ty });
        }
        let zero = match last {
            Wire::Varint(v) => v == 0,
            Wire::Bytes(b) => b.is_empty() && field.ty == Ty::Str,
            Wire::Fixed => true,
        };
        (!(field.omit_zero && zero)).then_some(Value::One { wire: last, ty: field.ty })
    }
}

impl<'de> MapAccess<'de> for MessageMap<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        while self.next < self.schema.len() {
            let i = self.next;
            self.next += 1;
            if let Some(value) = self.shown(i) {
                self.value = Some(value);
                return seed.deserialize(BorrowedStrDeserializer::new(self.schema[i].name)).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(self.value.take().ok_or_else(|| bad("value asked for before its key"))?)
    }
}

/// One field's value.
#[derive(Clone, Copy)]
enum Value<'de> {
    One {
        wire: Wire<'de>,
        ty: Ty,
    },
    /// Every value of field `number` in `buf` (which starts at its first).
    Repeated {
        buf: &'de [u8],
        number: u32,
        ty: Ty,
    },
    Const(&'static str),
}

fn text(b: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(b).map_err(|_| bad("string is not UTF-8"))
}

/// A `metav1.Time` as its JSON shows it: RFC 3339 in seconds, or None for the zero time.
fn time(b: &[u8]) -> Result<Option<String>, Error> {
    let (mut seconds, mut nanos) = (0i64, 0u64);
    for field in Fields::new(b) {
        match field? {
            (1, Wire::Varint(s)) => seconds = s as i64,
            (2, Wire::Varint(n)) => nanos = n,
            _ => {}
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(None);
    }
    let at = jiff::Timestamp::from_second(seconds).map_err(|_| bad("time out of range"))?;
    Ok(Some(at.to_string()))
}

/// The JSON inside a FieldsV1 message.
fn json(b: &[u8]) -> Result<&[u8], Error> {
    let mut raw: &[u8] = b"null";
    for field in Fields::new(b) {
        if let (1, Wire::Bytes(r)) = field? {
            raw = r;
        }
    }
    Ok(raw)
}

fn mismatch(ty: Ty) -> Error {
    Error(format!("unexpected wire type for a {ty:?} field"))
}

impl<'de> Deserializer<'de> for Value<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (wire, ty) = match self {
            Value::Const(text) => return visitor.visit_borrowed_str(text),
            Value::Repeated { buf, number, ty: Ty::StrMap } => {
                return visitor.visit_map(Entries { fields: Fields::new(buf), number, value: None });
            }
            Value::Repeated { buf, number, ty } => {
                return visitor.visit_seq(Repeated { fields: Fields::new(buf), number, ty });
            }
            Value::One { wire, ty } => (wire, ty),
        };
        match (ty, wire) {
            (Ty::Str, Wire::Bytes(b)) => visitor.visit_borrowed_str(text(b)?),
            (Ty::Int, Wire::Varint(v)) => visitor.visit_i64(v as i64),
            (Ty::Bool, Wire::Varint(v)) => visitor.visit_bool(v != 0),
            (Ty::Time, Wire::Bytes(b)) => match time(b)? {
                Some(t) => visitor.visit_string(t),
                None => visitor.visit_unit(),
            },
            (Ty::Msg(schema), Wire::Bytes(buf)) => Message { buf, schema }.deserialize_any(visitor),
            (Ty::Json, Wire::Bytes(b)) => {
                serde_json::Deserializer::from_slice(json(b)?).deserialize_any(visitor).map_err(de::Error::custom)
            }
            (ty, _) => Err(mismatch(ty)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            // Formatted once, here, rather than once to test for null and again to read.
            Value::One { wire: Wire::Bytes(b), ty: Ty::Time } => match time(b)? {
                Some(t) => visitor.visit_some(StringDeserializer::<Error>::new(t)),
                None => visitor.visit_none(),
            },
            Value::One { wire: Wire::Bytes(b), ty: Ty::Json } if json(b)? == b"null" => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::One { wire: Wire::Bytes(b), ty: Ty::Json } => serde_json::Deserializer::from_slice(json(b)?)
                .deserialize_newtype_struct(name, visitor)
                .map_err(de::Error::custom),
            Value::One { wire: Wire::Bytes(buf), ty: Ty::Msg(schema) } if name == RAW_VALUE => {
                as_raw_json(Message { buf, schema }, visitor)
            }
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Value::One { wire: Wire::Bytes(b), ty: Ty::Str } => {
                BorrowedStrDeserializer::<Error>::new(text(b)?).deserialize_enum(name, variants, visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The values of a repeated field, in order.
struct Repeated<'de> {
    fields: Fields<'de>,
    number: u32,
    ty: Ty,
}

impl<'de> SeqAccess<'de> for Repeated<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        for field in self.fields.by_ref() {
            let (number, wire) = field?;
            if number == self.number {
                return seed.deserialize(Value::One { wire, ty: self.ty }).map(Some);
            }
        }
        Ok(None)
    }
}

/// A `map<string, string>`: its entries are messages with the key in field 1, the value in 2.
struct Entries<'de> {
    fields: Fields<'de>,
    number: u32,
    value: Option<&'de str>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        for field in self.fields.by_ref() {
            let (number, wire) = field?;
            if number != self.number {
                continue;
            }
            let Wire::Bytes(entry) = wire else { return Err(mismatch(Ty::StrMap)) };
            let (mut key, mut value) = ("", "");
            for f in Fields::new(entry) {
                match f? {
                    (1, Wire::Bytes(k)) => key = text(k)?,
                    (2, Wire::Bytes(v)) => value = text(v)?,
                    _ => {}
                }
            }
            self.value = Some(value);
            return seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self.value.take().ok_or_else(|| bad("value asked for before its key"))?;
        seed.deserialize(BorrowedStrDeserializer::new(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    /// The same lists as the API server wrote them both ways (tests/fixtures/protobuf: pods
    /// with a continue token, ConfigMaps one of which is held by a finalizer, ReplicaSets).
    const RECORDED: &[(&str, &[u8], &str)] = &[
        (
            "pods",
            include_bytes!("../../tests/fixtures/protobuf/pods.pb"),
            include_str!("../../tests/fixtures/protobuf/pods.json"),
        ),
        (
            "configmaps",
            include_bytes!("../../tests/fixtures/protobuf/configmaps.pb"),
            include_str!("../../tests/fixtures/protobuf/configmaps.json"),
        ),
        (
            "replicasets",
            include_bytes!("../../tests/fixtures/protobuf/replicasets.pb"),
            include_str!("../../tests/fixtures/protobuf/replicasets.json"),
        ),
        (
            "a custom resource",
            include_bytes!("../../tests/fixtures/protobuf/gadgets.pb"),
            include_str!("../../tests/fixtures/protobuf/gadgets.json"),
        ),
    ];

    #[test]
    fn recorded_lists_read_as_their_json() {
        for (name, pb, json) in RECORDED {
            let from_pb: Json = from_list(pb).unwrap_or_else(|e| panic!("{name}: {e}"));
            let from_json: Json = serde_json::from_str(json).unwrap();
            assert_eq!(from_pb, from_json, "{name}");
        }
    }

    #[derive(serde::Deserialize)]
    struct Page<T> {
        items: Vec<T>,
    }

    #[test]
    fn items_kept_as_text_are_their_json() {
        for (name, pb, json) in RECORDED {
            let from_pb: Page<Box<serde_json::value::RawValue>> = from_list(pb).unwrap();
            let texts: Vec<Json> = from_pb.items.iter().map(|raw| serde_json::from_str(raw.get()).unwrap()).collect();
            let from_json: Page<Json> = serde_json::from_str(json).unwrap();
            assert_eq!(texts, from_json.items, "{name}");
        }
    }

    #[test]
    fn typed_fields_decode_as_from_json() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            name: String,
            namespace: Option<String>,
            creation_timestamp: Option<jiff::Timestamp>,
            deletion_timestamp: Option<jiff::Timestamp>,
            #[serde(default)]
            labels: std::collections::BTreeMap<String, String>,
            #[serde(default)]
            owner_references: Vec<crate::analyze::owner_graph::OwnerRef>,
            #[serde(default)]
            finalizers: Vec<String>,
            #[serde(default)]
            managed_fields: Vec<Entry>,
        }
        #[derive(serde::Deserialize, Debug)]
        struct Entry {
            manager: String,
            operation: Operation,
            time: Option<jiff::Timestamp>,
            #[serde(rename = "fieldsV1")]
            fields: Option<Box<serde_json::value::RawValue>>,
        }
        #[derive(serde::Deserialize, Debug, PartialEq)]
        enum Operation {
            Apply,
            Update,
        }
        #[derive(serde::Deserialize)]
        struct Item {
            metadata: Meta,
        }
        // Everything read, as comparable values (the JSON fixtures were re-indented, so
        // fieldsV1 is compared as a value, not as text).
        let comparable = |page: Page<Item>| {
            page.items
                .into_iter()
                .map(|Item { metadata: m }| {
                    let entries: Vec<_> = m
                        .managed_fields
                        .into_iter()
                        .map(|e| {
                            let fields: Json = serde_json::from_str(e.fields.unwrap().get()).unwrap();
                            (e.manager, e.operation, e.time, fields)
                        })
                        .collect();
                    let refs: Vec<_> = m.owner_references.iter().map(|o| format!("{o:?}")).collect();
                    let meta =
                        (m.name, m.namespace, m.creation_timestamp, m.deletion_timestamp, m.labels, m.finalizers);
                    (meta, refs, entries)
                })
                .collect::<Vec<_>>()
        };
        for (name, pb, json) in RECORDED {
            let from_pb = comparable(from_list(pb).unwrap());
            assert!(from_pb.iter().all(|(_, _, entries)| !entries.is_empty()), "{name}");
            assert_eq!(from_pb, comparable(serde_json::from_str(json).unwrap()), "{name}");
        }
    }

    /// A protobuf field: its key, then a varint or length-prefixed bytes.
    fn field(number: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, (u64::from(number) << 3) | 2);
        varint(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        out
    }

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, b"v1"), field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }

    #[test]
    fn a_protobuf_status_gives_its_reason_and_message() {
        let status = [field(2, b"Failure"), field(3, b"pods is forbidden"), field(4, b"Forbidden")].concat();
        assert_eq!(status_text(&envelope("Status", &status)), Some(("Forbidden".into(), "pods is forbidden".into())));
        assert_eq!(status_text(&envelope("PodList", &status)), None);
        assert_eq!(status_text(b"{\"kind\":\"Status\"}"), None);
    }

    fn status_text(body: &[u8]) -> Option<(String, String)> {
        status(body)
    }

    #[test]
    fn other_kinds_and_bodies_are_refused_with_a_reason() {
        let err = |body: &[u8]| from_list::<Json>(body).unwrap_err().to_string();
        assert_eq!(err(b"{}"), "protobuf: no k8s protobuf envelope");
        assert!(err(&envelope("PodList", b"")).contains("expected a PartialObjectMetadataList, got \"PodList\""));
        let item = field(2, &field(1, &field(1, &[0xff, 0xfe])));
        assert_eq!(err(&envelope("PartialObjectMetadataList", &item)), "protobuf: string is not UTF-8");
        let empty: Json = from_list(&envelope("PartialObjectMetadataList", b"")).unwrap();
        assert_eq!(empty, serde_json::json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1"}));
    }

    proptest::proptest! {
        /// Whatever arrives (random bytes, or a recorded list cut short or with bytes
        /// changed), decoding ends in a value or an error, never a panic.
        #[test]
        fn any_body_decodes_or_fails_cleanly(
            which in 0..RECORDED.len(),
            cut in proptest::num::usize::ANY,
            flips in proptest::collection::vec((proptest::num::usize::ANY, 0u8..=255), 0..6),
            noise in proptest::collection::vec(0u8..=255, 0..64),
        ) {
            let mut body = RECORDED[which].1.to_vec();
            for (at, byte) in flips {
                let at = MAGIC.len() + at % (body.len() - MAGIC.len());
                body[at] = byte;
            }
            body.truncate(MAGIC.len() + cut % (body.len() - MAGIC.len() + 1));
            let _ = from_list::<Json>(&body);
            let _ = from_list::<Page<Box<serde_json::value::RawValue>>>(&body);
            let _ = status(&body);
            let random = [MAGIC, &noise].concat();
            let _ = from_list::<Json>(&random);
            let _ = from_list::<Json>(&envelope("PartialObjectMetadataList", &noise));
        }
    }
}
