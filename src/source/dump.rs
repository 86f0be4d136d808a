//! The format of `kubectl coord dump`: what `check` reads of a cluster, for `check --from` to
//! read offline. gzip'd JSON Lines, one record per line: a header (the context, the scope,
//! what discovery served), a page per list page as it came (the resource, whether it was read
//! metadata-only, the Date of its answer, its items), and a trailer (the server's clock, where
//! each kind was listed, what could not be read and why, the pods with no node). Each list is
//! a gzip member of its own, written when complete: members concatenated are one gzip stream.
//! Items keep what the analyses read: whole controllers, PDBs, Leases and LeaseCandidates;
//! every other object's metadata with managedFields only for the kinds the fields census
//! reads, and no annotation but coord's own ignore annotations (a Secret keeps none at all:
//! no Secret data or annotation value is ever written).

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::snapshot::{ApiResource, Skipped};

pub const API_VERSION: &str = "kubectl-coord/v1";
pub const KIND: &str = "CoordDump";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub context: Option<String>,
    /// The namespace dumped; None: all namespaces.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Every resource discovery reported served.
    pub resources: Vec<ApiResource>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub resource: ApiResource,
    /// Read metadata-only (PartialObjectMetadata), else whole.
    #[serde(default)]
    pub metadata_only: bool,
    /// kube-system's Leases, read beside a one-namespace dump for trace's built-in controllers.
    #[serde(default)]
    pub system_leases: bool,
    #[serde(default)]
    pub read_at: Option<Timestamp>,
    pub items: Vec<Box<RawValue>>,
}

/// Where a kind was listed: everywhere, or in these namespaces.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedKind {
    pub group: String,
    pub kind: String,
    /// Empty: cluster-wide.
    #[serde(default)]
    pub namespaces: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unscheduled {
    /// Some: `keys` are pod names in it; None: uids.
    #[serde(default)]
    pub namespace: Option<String>,
    pub keys: Vec<String>,
    #[serde(default)]
    pub read_at: Option<Timestamp>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trailer {
    /// The server's clock when the dump was read: `check --from`'s now.
    pub server_time: Option<Timestamp>,
    pub listed: Vec<ListedKind>,
    pub skipped: Vec<Skipped>,
    /// None when it could not be read (then in `skipped`).
    pub unscheduled: Option<Unscheduled>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Record {
    Header(Header),
    Page(Page),
    Trailer(Trailer),
}

/// A dump being read, a record at a time.
pub struct Reader {
    lines: Box<dyn BufRead>,
    shown: String,
    line: usize,
    buf: String,
}

/// What a file turned out to be.
pub enum Opened {
    Dump(Header, Reader),
    /// Not a dump: its first line and a reader of the rest (decompressed), for other formats.
    Other {
        first: String,
        rest: Box<dyn BufRead>,
    },
}

/// Opens `path` (plain or gzip, told by its first bytes; - for stdin) and reads its first
/// line. Err: unreadable, in one line.
pub fn open(path: &Path) -> Result<Opened, String> {
    let shown = path.display().to_string();
    let raw: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?)
    };
    let mut raw = BufReader::with_capacity(256 * 1024, raw);
    let gzip = raw.fill_buf().map_err(|e| format!("{shown}: {e}"))?.starts_with(&[0x1f, 0x8b]);
    let mut lines: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::with_capacity(256 * 1024, flate2::bufread::MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let mut first = String::new();
    lines.read_line(&mut first).map_err(|e| format!("{shown}:1: {e}"))?;
    match serde_json::from_str::<Record>(&first) {
        Ok(Record::Header(h)) if h.kind == KIND => {
            Ok(Opened::Dump(h, Reader { lines, shown, line: 1, buf: String::new() }))
        }
        _ => Ok(Opened::Other { first, rest: lines }),
    }
}

impl Iterator for Reader {
    type Item = Result<Record, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.lines.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) if self.buf.trim().is_empty() => continue,
                Ok(_) => {
                    return Some(
                        serde_json::from_str(&self.buf)
                            .map_err(|e| format!("{}:{}: not a dump record: {e}", self.shown, self.line)),
                    );
                }
                // A truncated gzip ends in an error: what came before it stands.
                Err(e) => return Some(Err(format!("{}:{}: {e}", self.shown, self.line))),
            }
        }
    }
}

/// A JSON object's members in order, each value left as its text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Members<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    out.push((key, value));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

impl Members<'_> {
    /// `{"k":v,...}`, the values as they were.
    fn write(&self, out: &mut String) {
        out.push('{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(k).unwrap_or_default());
            out.push(':');
            out.push_str(v.get());
        }
        out.push('}');
    }
}

/// What a dump keeps of a metadata-only item: apiVersion, kind and its metadata, less
/// managedFields (unless `fields`) and every annotation but coord's own (all of them for a
/// Secret). The values kept are copied as their text: no tree of the item is built (which
/// cost the dump twice check's time).
pub fn trim_metadata(item: &RawValue, fields: bool, secret: bool) -> Option<Box<RawValue>> {
    let mut top: Members = serde_json::from_str(item.get()).ok()?;
    // A Secret's data is not in a metadata-only item; anything but these three is dropped all the same.
    top.0.retain(|(k, _)| matches!(&**k, "apiVersion" | "kind" | "metadata"));
    let trimmed = match top.0.iter().find(|(k, _)| k == "metadata") {
        Some((_, raw)) => Some(trimmed_metadata(raw, fields, secret)?),
        None => None,
    };
    if let (Some(t), Some(slot)) = (&trimmed, top.0.iter_mut().find(|(k, _)| k == "metadata")) {
        slot.1 = t;
    }
    let mut out = String::with_capacity(item.get().len() / 2);
    top.write(&mut out);
    RawValue::from_string(out).ok()
}

/// An object's metadata less managedFields (unless `fields`) and every annotation but coord's
/// own (all of them for a Secret); the annotations kept come last.
fn trimmed_metadata(raw: &RawValue, fields: bool, secret: bool) -> Option<Box<RawValue>> {
    let mut metadata: Members = serde_json::from_str(raw.get()).ok()?;
    metadata.0.retain(|(k, _)| fields || k != "managedFields");
    let mut kept = None;
    if let Some(at) = metadata.0.iter().position(|(k, _)| k == "annotations") {
        let (_, annotations) = metadata.0.remove(at);
        let mut ours: Members = serde_json::from_str(annotations.get()).unwrap_or(Members(Vec::new()));
        ours.0.retain(|(k, _)| !secret && k.starts_with("kubectl-coord/"));
        if !ours.0.is_empty() {
            let mut text = String::new();
            ours.write(&mut text);
            kept = RawValue::from_string(text).ok();
        }
    }
    if let Some(a) = &kept {
        metadata.0.push((Cow::Borrowed("annotations"), a));
    }
    let mut text = String::with_capacity(raw.get().len());
    metadata.write(&mut text);
    RawValue::from_string(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_keeps_no_annotation_and_others_only_coords_own() {
        let item = RawValue::from_string(
            r#"{"apiVersion":"v1","kind":"Secret","data":{"k":"c2VjcmV0"},"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"k\":\"c2VjcmV0\"}}","kubectl-coord/ignore":"CO201"},"managedFields":[{"manager":"kubectl"}]}}"#.into(),
        )
        .unwrap();
        let secret = trim_metadata(&item, false, true).unwrap();
        assert!(!secret.get().contains("c2VjcmV0") && !secret.get().contains("annotations"), "{}", secret.get());
        assert!(!secret.get().contains("managedFields"));
        let other = trim_metadata(&item, true, false).unwrap();
        // What is kept is what a tree of the item keeps, escapes and all.
        let odd = RawValue::from_string(
            r#"{"kind":"Pod","spec":{"x":1},"metadata":{"name":"a\"b\u00e9","annotations":{"kubectl-coord/ignore":"CO1\n","x":"y"},"labels":{"k":"v"}}}"#
                .into(),
        )
        .unwrap();
        let kept: serde_json::Value = serde_json::from_str(trim_metadata(&odd, false, false).unwrap().get()).unwrap();
        assert_eq!(
            kept,
            serde_json::json!({"kind": "Pod", "metadata": {"name": "a\"b\u{e9}", "labels": {"k": "v"},
                "annotations": {"kubectl-coord/ignore": "CO1\n"}}})
        );
        assert!(other.get().contains("kubectl-coord/ignore") && other.get().contains("managedFields"));
        assert!(!other.get().contains("last-applied") && !other.get().contains("c2VjcmV0"), "{}", other.get());
    }

    #[test]
    fn records_round_trip_and_a_foreign_file_is_not_a_dump() {
        let dir = std::env::temp_dir().join(format!("coord-dump-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = Record::Header(Header {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            context: Some("kind".into()),
            namespace: None,
            resources: Vec::new(),
        });
        let trailer = Record::Trailer(Trailer::default());
        let text =
            format!("{}\n{}\n", serde_json::to_string(&header).unwrap(), serde_json::to_string(&trailer).unwrap());
        let path = dir.join("d.jsonl");
        std::fs::write(&path, &text).unwrap();
        let Ok(Opened::Dump(h, reader)) = open(&path) else { panic!("not read as a dump") };
        assert_eq!(h.context.as_deref(), Some("kind"));
        assert!(matches!(reader.collect::<Vec<_>>()[..], [Ok(Record::Trailer(_))]));
        std::fs::write(&path, "{\"kind\":\"List\"}\n").unwrap();
        assert!(matches!(open(&path), Ok(Opened::Other { first, .. }) if first.contains("List")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest::proptest! {
        /// A dump is untrusted input: any bytes (plain, or gzip cut anywhere) are records, a
        /// line's error, or not a dump, never a panic.
        #[test]
        fn any_bytes_are_records_or_errors(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300), cut in 0usize..400) {
            let dir = std::env::temp_dir().join(format!("coord-dump-fuzz-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("d");
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let header = format!("{{\"header\":{{\"apiVersion\":\"v\",\"kind\":\"{KIND}\",\"resources\":[]}}}}\n");
            std::io::Write::write_all(&mut gz, header.as_bytes()).unwrap();
            std::io::Write::write_all(&mut gz, &bytes).unwrap();
            let zipped = gz.finish().unwrap();
            for body in [bytes.clone(), zipped[..cut.min(zipped.len())].to_vec()] {
                std::fs::write(&path, &body).unwrap();
                if let Ok(Opened::Dump(_, reader)) = open(&path) {
                    for _ in reader.take(1000) {}
                }
            }
        }
    }
}
