//! `kubectl coord fields -n NS` (no object): ownership across every object of the
//! common workload kinds, from metadata-only lists (managedFields live in metadata).

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::analyze::fields::{Contest, Entry, ManagedEntry, contests, lone_entry_contests};
use crate::analyze::fieldsv1::{DecodeError, Decoded, count};
use crate::analyze::resource_ref::ApiResource;
use crate::connect::{Accept, Session, Skipped, discovery};
use crate::error::usage;
use crate::output::table::{Grid, Table};
use crate::output::{Printer, serde_name};

/// The common workload kinds, at the versions the API has served them for years, so a
/// census without --kinds starts listing at once instead of after discovery (a kind
/// the server does not serve answers 404 and is left out).
pub const DEFAULT_KINDS: &[(&str, &str, &str, &str)] = &[
    ("apps", "v1", "deployments", "Deployment"),
    ("apps", "v1", "replicasets", "ReplicaSet"),
    ("apps", "v1", "statefulsets", "StatefulSet"),
    ("apps", "v1", "daemonsets", "DaemonSet"),
    ("batch", "v1", "jobs", "Job"),
    ("batch", "v1", "cronjobs", "CronJob"),
    ("", "v1", "services", "Service"),
];

#[derive(Serialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagerCensus {
    pub manager: String,
    pub objects: usize,
    pub fields: usize,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContestedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub contests: Vec<Contest>,
}

#[derive(Serialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Census {
    /// The server's clock at the first list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<jiff::Timestamp>,
    /// False when anything in scope could not be read (see skipped).
    pub complete: bool,
    pub objects: usize,
    pub managers: Vec<ManagerCensus>,
    pub contested: Vec<ContestedObject>,
    pub skipped: Vec<Skipped>,
    pub undecodable: Vec<String>,
}

#[derive(Deserialize)]
struct Item {
    metadata: Meta,
}

/// One object's managedFields reduced to what the census adds up. Done as part of
/// decoding its page (`serde(from)`), which runs on the blocking pool beside the other
/// lists, not after every list is in.
#[derive(Deserialize, Debug)]
#[serde(from = "Item")]
pub(crate) struct Digest {
    namespace: String,
    name: String,
    /// Each decodable entry's manager and how many fields it owns.
    entries: Vec<(String, usize)>,
    contests: Vec<Contest>,
    undecodable: Vec<DecodeError>,
}

impl From<Item> for Digest {
    fn from(item: Item) -> Digest {
        let Meta { name, namespace, managed_fields } = item.metadata;
        Digest::of(namespace, name, managed_fields)
    }
}

impl Digest {
    /// An object's digest from its JSON text (an item of a list `check` reads whole). Each
    /// fieldsV1 is first only delimited: an object with one entry, the common case for what
    /// controllers make, is judged by its counted paths when that leaves nothing to contest
    /// ([`lone_entry_contests`]), and only otherwise are the tries decoded into paths. The
    /// same digest as reading the object through [`Deserialize`], except that an entry whose
    /// time cannot be read no longer leaves the object out (the census shows no times).
    pub(crate) fn from_json(text: &str) -> serde_json::Result<Digest> {
        let TextItem { metadata: TextMeta { name, namespace, managed_fields } } = serde_json::from_str(text)?;
        Digest::from_text_entries(namespace, name, managed_fields)
    }

    /// [`Digest::from_json`] when the object's metadata has been read already: its
    /// managedFields' text (None: there are none).
    pub(crate) fn from_managed_fields(
        namespace: String,
        name: String,
        managed_fields: Option<&RawValue>,
    ) -> serde_json::Result<Digest> {
        let entries = match managed_fields {
            Some(raw) => serde_json::from_str(raw.get())?,
            None => Vec::new(),
        };
        Digest::from_text_entries(namespace, name, entries)
    }

    fn from_text_entries(
        namespace: String,
        name: String,
        managed_fields: Vec<TextEntry<'_>>,
    ) -> serde_json::Result<Digest> {
        if let [lone] = managed_fields.as_slice()
            && let Some(raw) = lone.fields_v1
            && let Ok(tops) = count(raw.get())
            && !lone_entry_contests(&lone.operation, &lone.subresource, &tops)
        {
            let entries = managed_fields.into_iter().map(|e| (e.manager, tops.paths)).collect();
            return Ok(Digest { namespace, name, entries, contests: Vec::new(), undecodable: Vec::new() });
        }
        let mut decoded = Vec::with_capacity(managed_fields.len());
        for e in managed_fields {
            let fields_v1 = e.fields_v1.map(|raw| serde_json::from_str::<Decoded>(raw.get())).transpose()?;
            decoded.push(ManagedEntry {
                manager: e.manager,
                operation: e.operation,
                subresource: e.subresource,
                api_version: String::new(),
                time: None,
                fields_v1,
            });
        }
        Ok(Digest::of(namespace, name, decoded))
    }

    fn of(namespace: String, name: String, managed_fields: Vec<super::ManagedEntry>) -> Digest {
        let mut undecodable = Vec::new();
        let entries: Vec<Entry> = managed_fields
            .into_iter()
            .filter_map(|raw| match raw.into_entry() {
                (entry, None) => Some(entry),
                (_, Some(e)) => {
                    undecodable.push(e);
                    None
                }
            })
            .collect();
        Digest {
            namespace,
            name,
            contests: contests(&entries),
            entries: entries.into_iter().map(|e| (e.manager, e.paths.len())).collect(),
            undecodable,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    managed_fields: Vec<super::ManagedEntry>,
}

/// [`Item`] with each fieldsV1 left as its text.
#[derive(Deserialize)]
struct TextItem<'a> {
    #[serde(borrow)]
    metadata: TextMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TextMeta<'a> {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(borrow, default)]
    managed_fields: Vec<TextEntry<'a>>,
}

/// A managedFields entry with what the census reads of it: its writer, and its fieldsV1 as
/// text. Its time and apiVersion are skipped, not parsed: the census shows neither.
#[derive(Deserialize)]
struct TextEntry<'a> {
    #[serde(default)]
    manager: String,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    subresource: String,
    #[serde(borrow, rename = "fieldsV1")]
    fields_v1: Option<&'a RawValue>,
}

pub async fn collect(session: &Session, extra_kinds: &[String]) -> Result<Census> {
    let mut targets: Vec<ApiResource> = DEFAULT_KINDS
        .iter()
        .map(|&(group, version, plural, kind)| ApiResource::known(group, version, plural, kind, true))
        .collect();
    if !extra_kinds.is_empty() {
        let resources = discovery::discover(&session.conn).await?;
        for kind in extra_kinds {
            let r = resources.resolve(kind).map_err(|e| match crate::error::exit_code_for(&e) {
                crate::error::EXIT_USAGE => usage(format!("--kinds: {e}")),
                _ => e,
            })?;
            if !targets.iter().any(|t| t.group == r.group && t.plural == r.plural) {
                targets.push(r.clone());
            }
        }
    }
    // All kinds at once: one at a time, the round trips added up.
    let lists =
        futures::future::join_all(targets.iter().map(|r| {
            session.list_scoped::<Digest>(session.scope(), move |ns| r.collection(ns), "", Accept::MetadataList)
        }))
        .await;
    let mut tally = Tally::default();
    for (resource, listed) in targets.into_iter().zip(lists) {
        let listed = match listed {
            Ok((l, fallback)) => {
                tally.census.skipped.extend(fallback.map(|f| f.note(&resource.plural)));
                tally.census.server_time = tally.census.server_time.or(l.server_time);
                l
            }
            Err(e) if e.forbidden() => {
                tally.census.skipped.push(Skipped::new(resource.plural.clone(), None, "forbidden"));
                continue;
            }
            Err(e) if e.not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for digest in listed.items {
            tally.add(&resource.kind, digest);
        }
    }
    Ok(tally.finish())
}

/// Adds objects up into a [`Census`], one digest at a time.
#[derive(Default)]
pub(crate) struct Tally {
    census: Census,
    managers: BTreeMap<String, ManagerCensus>,
}

impl Tally {
    pub(crate) fn add(&mut self, kind: &str, digest: Digest) {
        let census = &mut self.census;
        census.objects += 1;
        for e in &digest.undecodable {
            census.undecodable.push(format!("{kind} {}/{}: {e}", digest.namespace, digest.name));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (manager, fields) in &digest.entries {
            let m = self
                .managers
                .entry(manager.clone())
                .or_insert_with(|| ManagerCensus { manager: manager.clone(), ..Default::default() });
            m.fields += fields;
            if !seen.contains(&manager.as_str()) {
                m.objects += 1;
                seen.push(manager);
            }
        }
        // A note about one writer's own entries is not a contested object.
        if digest.contests.iter().any(|c| !c.kind.is_note()) {
            census.contested.push(ContestedObject {
                kind: kind.to_string(),
                namespace: digest.namespace,
                name: digest.name,
                contests: digest.contests,
            });
        }
    }

    pub(crate) fn finish(mut self) -> Census {
        self.census.managers = self.managers.into_values().collect();
        self.census.complete = self.census.skipped.is_empty();
        self.census
    }
}

pub fn table(c: &Census, _printer: &Printer) -> Table {
    let mut grid = Grid::new(vec!["MANAGER", "OBJECTS", "FIELDS"]);
    for m in &c.managers {
        grid.row(vec![m.manager.clone().into(), m.objects.to_string().into(), m.fields.to_string().into()]);
    }
    let mut lines = Vec::new();
    if !c.contested.is_empty() {
        lines.push(String::new());
    }
    for o in &c.contested {
        for k in &o.contests {
            lines.push(format!(
                "{}/{}/{}: {} {}: {}",
                o.namespace,
                o.kind.to_lowercase(),
                o.name,
                k.path,
                serde_name(&k.kind),
                k.managers.join(", ")
            ));
        }
    }
    lines.push(format!(
        "{} objects, {} managers, {} with contested fields",
        c.objects,
        c.managers.len(),
        c.contested.len()
    ));
    Table { grid, empty: None, lines }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fieldsv1::{Element, FieldPath, encode};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn object(entries: Vec<Value>) -> String {
        json!({"metadata": {"name": "x", "namespace": "ns", "managedFields": entries}}).to_string()
    }

    fn entry(manager: &str, operation: &str, subresource: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "subresource": subresource, "apiVersion": "apps/v1",
            "time": "2026-12-04T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    /// The digest read through `Deserialize`, and from the text: whole, and from the
    /// managedFields' text once the metadata is read (as check does).
    fn both(text: &str) -> (String, String) {
        let read = serde_json::from_str::<Digest>(text).unwrap();
        let from_text = Digest::from_json(text).unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        let managed = serde_json::value::to_raw_value(&v["metadata"]["managedFields"]).unwrap();
        let from_fields = Digest::from_managed_fields("ns".into(), "x".into(), Some(&managed)).unwrap();
        assert_eq!(format!("{from_text:?}"), format!("{from_fields:?}"));
        (format!("{read:?}"), format!("{from_text:?}"))
    }

    #[test]
    fn the_text_digest_is_the_read_digest_for_each_kind_of_entry() {
        let spec =
            json!({"f:spec": {"f:replicas": {}, "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}});
        let status = json!({"f:status": {"f:replicas": {}}});
        for entries in [
            vec![],
            vec![entry("kcm", "Update", "", spec.clone())],
            vec![entry("gitops", "Apply", "", spec.clone())],
            vec![entry("gitops", "Apply", "", status.clone())],
            vec![entry("kcm", "Update", "status", status.clone())],
            vec![entry("kcm", "Update", "status", spec.clone())],
            vec![entry("hpa", "Update", "scale", spec.clone())],
            vec![entry("gitops", "Apply", "", spec.clone()), entry("hpa", "Update", "scale", spec.clone())],
            vec![entry("kcm", "Update", "", json!({"f:a": {"i:-1": {}}}))],
            vec![entry("kcm", "Update", "", Value::Null)],
        ] {
            let (read, from_text) = both(&object(entries.clone()));
            assert_eq!(read, from_text, "{entries:?}");
        }
        // The two routes meet where they should: a lone applied status is contested.
        let lone_status = Digest::from_json(&object(vec![entry("gitops", "Apply", "", status)])).unwrap();
        assert_eq!(lone_status.contests.len(), 1);
        let lone_update = Digest::from_json(&object(vec![entry("kcm", "Update", "", spec)])).unwrap();
        assert_eq!((lone_update.entries, lone_update.contests.len()), (vec![("kcm".to_string(), 3)], 0));
    }

    fn trie() -> impl Strategy<Value = Value> {
        let path = (prop::sample::select(vec!["status", "metadata", "spec"]), prop::collection::vec("[a-c]", 0..3))
            .prop_map(|(top, rest)| {
                FieldPath(std::iter::once(top.to_string()).chain(rest).map(|f| Element::Field(f.into())).collect())
            });
        prop::collection::btree_set(path, 1..6).prop_map(|ps| encode(&ps.into_iter().collect::<Vec<_>>()))
    }

    proptest! {
        /// Whatever the entries, reading the text gives what reading the object gives.
        #[test]
        fn the_text_digest_is_the_read_digest(entries in prop::collection::vec((
            prop::sample::select(vec!["a", "b"]),
            prop::sample::select(vec!["Apply", "Update"]),
            prop::sample::select(vec!["", "status", "scale"]),
            trie(),
        ), 0..4)) {
            let entries = entries.into_iter().map(|(m, o, s, t)| entry(m, o, s, t)).collect();
            let (read, from_text) = both(&object(entries));
            prop_assert_eq!(read, from_text);
        }
    }
}
