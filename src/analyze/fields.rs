//! Field ownership from managedFields: who owns which field, and where managers
//! contend. Pure: entries come decoded from [`super::fieldsv1`].

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::fieldsv1::{Element, FieldPath, Tops};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    /// "" for the main resource, else status, scale, ...
    pub subresource: String,
    pub api_version: String,
    pub time: Option<Timestamp>,
    /// Sorted, as [`decode`](super::fieldsv1::decode) returns them.
    #[serde(skip)]
    pub paths: Vec<FieldPath>,
}

impl Entry {
    pub fn is_apply(&self) -> bool {
        self.operation == "Apply"
    }
    pub fn label(&self) -> String {
        manager_label(&self.manager, &self.subresource)
    }
}

/// One managedFields entry as the server writes it; `F` is what its fieldsV1 is read into
/// (the decoded trie for the fields analysis, only its top-level keys for sequencing).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedEntry<F> {
    #[serde(default)]
    pub manager: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub subresource: String,
    #[serde(default)]
    pub api_version: String,
    pub time: Option<Timestamp>,
    #[serde(rename = "fieldsV1")]
    pub fields_v1: Option<F>,
}

/// "gitops", or "kubectl (scale)" for a write through a subresource.
pub fn manager_label(manager: &str, subresource: &str) -> String {
    if subresource.is_empty() { manager.to_string() } else { format!("{manager} ({subresource})") }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ContestKind {
    /// Two Apply managers with equal values: the next differing apply conflicts.
    SharedApply,
    ApplyAndUpdate,
    UpdateAndUpdate,
    /// Owned by an Update manager inside an area an Apply manager declares (the
    /// classic spec.replicas fight: the next apply of that field conflicts or forces it back).
    UpdateInsideApply,
    /// A status field written through the main resource.
    StatusViaMainResource,
    /// A non-status field written through the status subresource.
    SpecViaStatus,
    /// Not a contest: one manager owns fields both through Apply and through Update. A
    /// later Apply by it does not give up what it owns through Update (the known
    /// server-side-apply pitfall). Said once per manager.
    SameManagerApplyAndUpdate,
}

impl ContestKind {
    /// Notes that are not a fight between writers: never counted by --exit-code or the census.
    pub fn is_note(self) -> bool {
        self == ContestKind::SameManagerApplyAndUpdate
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Contest {
    pub path: String,
    pub kind: ContestKind,
    /// The kind's stable code (CO4xx), what ignore rules name.
    pub code: &'static str,
    pub managers: Vec<String>,
}

impl Contest {
    pub fn new(path: String, kind: ContestKind, managers: Vec<String>) -> Contest {
        Contest { path, kind, code: kind.code(), managers }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Owned {
    pub path: String,
    /// Indices into the entry list.
    #[serde(skip)]
    pub entries: Vec<usize>,
    pub managers: Vec<String>,
}

/// Every owned path with its owners (in entry order), sorted by path. Each entry's paths
/// are sorted already, so one sort of them all merges a few runs; inserting each path into a
/// map compared paths element by element at every level of the tree, the larger part of
/// the census's cost.
pub fn ownership(entries: &[Entry]) -> Vec<(&FieldPath, Vec<usize>)> {
    let mut pairs: Vec<(&FieldPath, usize)> =
        entries.iter().enumerate().flat_map(|(i, e)| e.paths.iter().map(move |p| (p, i))).collect();
    pairs.sort();
    let mut owners: Vec<(&FieldPath, Vec<usize>)> = Vec::with_capacity(pairs.len());
    for (path, i) in pairs {
        match owners.last_mut() {
            Some((last, ids)) if *last == path => ids.push(i),
            _ => owners.push((path, vec![i])),
        }
    }
    owners
}

/// Contests are between writers: the entries of one manager name (Apply and Update, or
/// Update through several subresources) are one writer and never contest each other.
pub fn contests(entries: &[Entry]) -> Vec<Contest> {
    let owners = ownership(entries);
    let mut out = Vec::new();
    let mut noted: BTreeSet<String> = BTreeSet::new();
    let mut note = |out: &mut Vec<Contest>, path: &FieldPath, manager: &str| {
        if let Some(label) = mixed_label(entries, manager)
            && noted.insert(manager.to_string())
        {
            out.push(Contest::new(path.to_string(), ContestKind::SameManagerApplyAndUpdate, vec![label]));
        }
    };
    for (path, ids) in &owners {
        let writers = by_writer(entries, ids);
        if writers.len() > 1 {
            let applies = writers.values().filter(|w| w.iter().any(|&i| entries[i].is_apply())).count();
            let kind = match (applies, writers.len() - applies) {
                (_, 0) => ContestKind::SharedApply,
                (0, _) => ContestKind::UpdateAndUpdate,
                _ => ContestKind::ApplyAndUpdate,
            };
            let managers = writers.values().map(|w| writer_label(entries, w)).collect();
            out.push(Contest::new(path.to_string(), kind, managers));
        } else if let Some((manager, w)) = writers.iter().next()
            && w.len() > 1
        {
            note(&mut out, path, manager);
        }
        let top = match path.0.first() {
            Some(Element::Field(f)) => f,
            _ => "",
        };
        for &i in ids {
            let e = &entries[i];
            if top == "status" && e.subresource.is_empty() && (e.is_apply() || bypasses_status(entries, e)) {
                out.push(Contest::new(path.to_string(), ContestKind::StatusViaMainResource, vec![e.label()]));
            }
            if top != "status" && top != "metadata" && e.subresource == "status" {
                out.push(Contest::new(path.to_string(), ContestKind::SpecViaStatus, vec![e.label()]));
            }
        }
        // Update-owned only, while another writer's Apply owns a sibling under the same
        // parent below the top level (spec.replicas next to the applied spec.template).
        // Under .metadata only siblings inside one map count (labels, annotations): the
        // metadata fields themselves are independent.
        let parent = &path.0[..path.0.len().saturating_sub(1)];
        let metadata_root = matches!(parent, [Element::Field(f)] if &**f == "metadata");
        if path.0.len() >= 2 && top != "status" && !metadata_root && ids.iter().all(|&i| !entries[i].is_apply()) {
            let sibling_appliers: Vec<&Entry> =
                entries.iter().filter(|e| e.is_apply() && owns_sibling(e, parent, path)).collect();
            let (own, others): (Vec<&Entry>, Vec<&Entry>) =
                sibling_appliers.into_iter().partition(|e| writers.contains_key(e.manager.as_str()));
            if !others.is_empty() {
                let mut managers: Vec<String> = writers.values().map(|w| writer_label(entries, w)).collect();
                for e in others {
                    let label =
                        writer_label(entries, &by_writer(entries, &all_of(entries, &e.manager))[e.manager.as_str()]);
                    if !managers.contains(&label) {
                        managers.push(label);
                    }
                }
                out.push(Contest::new(path.to_string(), ContestKind::UpdateInsideApply, managers));
            } else if let Some(e) = own.first() {
                note(&mut out, path, &e.manager);
            }
        }
    }
    out
}

/// Whether an object's only managedFields entry, owning `tops`, gives [`contests`] anything
/// to say. Alone it has no other writer to contest with or to bypass, so only the way it
/// writes can be wrong: status applied through the main resource, or fields other than
/// status and metadata written through the status subresource. Most objects a controller
/// makes have one entry, and this spares them building every path.
pub fn lone_entry_contests(operation: &str, subresource: &str, tops: &Tops) -> bool {
    match subresource {
        "" => operation == "Apply" && tops.status > 0,
        "status" => tops.paths > tops.status + tops.metadata,
        _ => false,
    }
}

/// Whether `e` owns a path under `parent` other than `path`. Its paths are sorted (as
/// [`decode`](super::fieldsv1::decode) returns them), so those under `parent` are one run found
/// by binary search: a linear scan for every path of every object was quadratic in its paths.
fn owns_sibling(e: &Entry, parent: &[Element], path: &FieldPath) -> bool {
    let start = e.paths.partition_point(|p| p.0.as_slice() < parent);
    e.paths[start..].iter().take_while(|p| p.0.starts_with(parent)).any(|p| p != path)
}

/// The entry indices among `ids`, grouped by manager name.
fn by_writer<'a>(entries: &'a [Entry], ids: &[usize]) -> BTreeMap<&'a str, Vec<usize>> {
    let mut writers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &i in ids {
        writers.entry(entries[i].manager.as_str()).or_default().push(i);
    }
    writers
}

fn all_of(entries: &[Entry], manager: &str) -> Vec<usize> {
    (0..entries.len()).filter(|&i| entries[i].manager == manager).collect()
}

/// A writer's name, with its operations when it owns through several entries, so that
/// no line names the same string twice: "gitops", "kubectl (scale)", "gitops (Apply + Update)".
pub fn writer_label(entries: &[Entry], ids: &[usize]) -> String {
    match ids {
        [one] => entries[*one].label(),
        _ => {
            let parts: BTreeSet<String> = ids
                .iter()
                .map(|&i| {
                    let e = &entries[i];
                    if e.subresource.is_empty() {
                        e.operation.clone()
                    } else {
                        format!("{} via {}", e.operation, e.subresource)
                    }
                })
                .collect();
            let manager = ids.first().map(|&i| entries[i].manager.as_str()).unwrap_or_default();
            format!("{manager} ({})", parts.into_iter().collect::<Vec<_>>().join(" + "))
        }
    }
}

/// "gitops (Apply + Update)" when `manager` owns fields through both Apply and Update.
fn mixed_label(entries: &[Entry], manager: &str) -> Option<String> {
    let ids = all_of(entries, manager);
    let apply = ids.iter().any(|&i| entries[i].is_apply());
    let update = ids.iter().any(|&i| !entries[i].is_apply());
    (apply && update).then(|| writer_label(entries, &ids))
}

/// Whether `path` is `prefix` or lies below it, by whole segments: `.spec.replicas` is
/// within `.spec` but not within `.spec.rep`; list items (`[name=web]`) are segments too.
pub fn path_within(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || prefix.ends_with(['.', '[']) || rest.starts_with(['.', '[']),
        None => false,
    }
}

/// Another manager writes status through the status subresource, so it exists and the
/// object's controller uses it: `e` writing status through the main resource is not the
/// controller. (A CRD without a status subresource leaves its controller no other way.)
fn bypasses_status(entries: &[Entry], e: &Entry) -> bool {
    entries.iter().any(|o| o.subresource == "status" && o.manager != e.manager)
}

impl ContestKind {
    /// Its stable code (analyze/codes.rs lists them all).
    pub fn code(self) -> &'static str {
        match self {
            ContestKind::SharedApply => "CO401",
            ContestKind::ApplyAndUpdate => "CO402",
            ContestKind::UpdateAndUpdate => "CO403",
            ContestKind::UpdateInsideApply => "CO404",
            ContestKind::StatusViaMainResource => "CO405",
            ContestKind::SpecViaStatus => "CO406",
            ContestKind::SameManagerApplyAndUpdate => "CO407",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analyze::fieldsv1::decode;
    use serde_json::json;

    fn field_path(names: &[u8]) -> FieldPath {
        FieldPath(names.iter().map(|n| Element::Field(format!("f{n}").into())).collect())
    }

    proptest::proptest! {
        /// The binary search finds what a scan of every path finds.
        #[test]
        fn sibling_search_agrees_with_a_scan(
            owned in proptest::collection::vec(proptest::collection::vec(0u8..3, 1..4), 0..12),
            path in proptest::collection::vec(0u8..3, 1..4),
        ) {
            let mut paths: Vec<FieldPath> = owned.iter().map(|p| field_path(p)).collect();
            paths.sort();
            paths.dedup();
            let e = Entry { manager: "m".into(), operation: "Apply".into(), subresource: String::new(),
                api_version: "v1".into(), time: None, paths };
            let path = field_path(&path);
            let parent = &path.0[..path.0.len() - 1];
            let scanned = e.paths.iter().any(|p| p.0.starts_with(parent) && *p != path);
            proptest::prop_assert_eq!(owns_sibling(&e, parent, &path), scanned);
        }

        /// What a lone entry is judged by without its paths agrees with what [`contests`] finds
        /// in them, for every operation and route, with paths under status, metadata and others.
        #[test]
        fn a_lone_entry_is_judged_by_its_tops_as_by_its_paths(
            owned in proptest::collection::vec((0usize..4, proptest::collection::vec(0u8..3, 0..3)), 0..8),
            operation in proptest::sample::select(vec!["Apply", "Update"]),
            subresource in proptest::sample::select(vec!["", "status", "scale"]),
        ) {
            let tops = ["status", "metadata", "spec", "data"];
            let mut paths: Vec<FieldPath> = owned
                .iter()
                .map(|(top, rest)| {
                    let mut p = field_path(rest);
                    p.0.insert(0, Element::Field(tops[*top].into()));
                    p
                })
                .collect();
            paths.sort();
            paths.dedup();
            let e = Entry { manager: "m".into(), operation: operation.into(), subresource: subresource.into(),
                api_version: "v1".into(), time: None, paths };
            let found = !contests(std::slice::from_ref(&e)).is_empty();
            proptest::prop_assert_eq!(lone_entry_contests(operation, subresource, &Tops::of(&e.paths)), found);
        }

        /// The merged ownership lists what a map from each path to its owners holds, in order.
        #[test]
        fn ownership_agrees_with_a_map(
            owned in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(0u8..3, 1..4), 0..10), 0..5),
        ) {
            let entries: Vec<Entry> = owned
                .iter()
                .enumerate()
                .map(|(i, paths)| {
                    let mut paths: Vec<FieldPath> = paths.iter().map(|p| field_path(p)).collect();
                    paths.sort();
                    paths.dedup();
                    Entry { manager: format!("m{i}"), operation: "Update".into(), subresource: String::new(),
                        api_version: "v1".into(), time: None, paths }
                })
                .collect();
            let mut map: BTreeMap<&FieldPath, Vec<usize>> = BTreeMap::new();
            for (i, e) in entries.iter().enumerate() {
                for p in &e.paths {
                    map.entry(p).or_default().push(i);
                }
            }
            proptest::prop_assert_eq!(ownership(&entries), map.into_iter().collect::<Vec<_>>());
        }
    }

    /// A managedFields entry from its FieldsV1 JSON, for tests here and in the blame view.
    pub(crate) fn entry(manager: &str, op: &str, sub: &str, fields: serde_json::Value) -> Entry {
        Entry {
            manager: manager.into(),
            operation: op.into(),
            subresource: sub.into(),
            api_version: "apps/v1".into(),
            time: None,
            paths: decode(&fields).unwrap(),
        }
    }

    #[test]
    fn the_replicas_fight_and_co_ownership() {
        let entries = vec![
            entry(
                "gitops",
                "Apply",
                "",
                json!({"f:spec": {"f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}}}}),
            ),
            entry("kubectl", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
            entry("argocd", "Apply", "", json!({"f:spec": {"f:selector": {}}})),
            entry("hpa", "Update", "", json!({"f:spec": {"f:template": {"f:metadata": {"f:labels": {"f:app": {}}}}}})),
            entry("kube-controller-manager", "Update", "status", json!({"f:status": {"f:replicas": {}}})),
            entry("bad-writer", "Update", "", json!({"f:status": {"f:phase": {}}})),
            entry("bad-status", "Update", "status", json!({"f:spec": {"f:paused": {}}})),
            entry("gitops-labels", "Apply", "", json!({"f:metadata": {"f:labels": {"f:team": {}}}})),
            entry(
                "annotator",
                "Update",
                "",
                json!({"f:metadata": {"f:annotations": {"f:note": {}}, "f:labels": {"f:extra": {}}}}),
            ),
        ];
        let got: Vec<(String, ContestKind)> = contests(&entries).into_iter().map(|c| (c.path, c.kind)).collect();
        assert!(got.contains(&(".spec.replicas".into(), ContestKind::UpdateInsideApply)), "{got:#?}");
        assert!(got.contains(&(".spec.selector".into(), ContestKind::SharedApply)));
        assert!(got.contains(&(".spec.template.metadata.labels.app".into(), ContestKind::ApplyAndUpdate)));
        assert!(got.contains(&(".status.phase".into(), ContestKind::StatusViaMainResource)));
        assert!(got.contains(&(".spec.paused".into(), ContestKind::SpecViaStatus)));
        assert!(!got.iter().any(|(p, _)| p == ".status.replicas"), "status written through /status is fine");
        assert!(got.contains(&(".metadata.labels.extra".into(), ContestKind::UpdateInsideApply)));
        assert!(!got.iter().any(|(p, _)| p.starts_with(".metadata.annotations")), "{got:#?}");
    }

    #[test]
    fn path_filters_match_whole_segments() {
        assert!(path_within(".spec.replicas", ".spec.replicas"));
        assert!(path_within(".spec.replicas", ".spec"));
        assert!(path_within(".spec.replicas", ".spec."));
        assert!(!path_within(".spec.replicasX", ".spec.replicas"));
        assert!(!path_within(".spec.replicas", ".spec.rep"));
        assert!(path_within(".spec.containers[name=web].image", ".spec.containers"));
        assert!(path_within(".spec.containers[name=web].image", ".spec.containers[name=web]"));
        assert!(!path_within(".spec.containers[name=web2].image", ".spec.containers[name=web"));
        assert!(!path_within(".status", ".spec"));
    }

    #[test]
    fn one_writer_that_applies_and_updates_does_not_fight_itself() {
        // An election library: acquire with an apply, renew with updates, one manager name.
        let lock = |renewer: &str| {
            vec![
                entry(
                    "elector",
                    "Apply",
                    "",
                    json!({"f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}}}),
                ),
                entry(renewer, "Update", "", json!({"f:spec": {"f:renewTime": {}, "f:leaseTransitions": {}}})),
            ]
        };
        let found = contests(&lock("elector"));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].kind, ContestKind::SameManagerApplyAndUpdate);
        assert_eq!(found[0].managers, vec!["elector (Apply + Update)".to_string()]);
        assert!(found[0].kind.is_note());
        // A second writer updating the same fields is still a contest, and names both once.
        let found = contests(&lock("intruder"));
        let kinds: Vec<ContestKind> = found.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, vec![ContestKind::UpdateInsideApply, ContestKind::UpdateInsideApply], "{found:#?}");
        assert_eq!(found[0].managers, vec!["intruder".to_string(), "elector".to_string()]);
        // The same manager co-owning one field through Apply and Update: one writer.
        let shared = vec![
            entry("gitops", "Apply", "", json!({"f:spec": {"f:replicas": {}}})),
            entry("gitops", "Update", "", json!({"f:spec": {"f:replicas": {}}})),
            entry("kubectl", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
        ];
        let found = contests(&shared);
        assert_eq!(found[0].kind, ContestKind::ApplyAndUpdate);
        assert_eq!(found[0].managers, vec!["gitops (Apply + Update)".to_string(), "kubectl (scale)".to_string()]);
        let mut only_gitops = shared;
        only_gitops.pop();
        assert!(contests(&only_gitops).iter().all(|c| c.kind.is_note()));
        // Two entries of one manager through different subresources are one writer too, and no note.
        let subresources = vec![
            entry("kubectl", "Update", "", json!({"f:spec": {"f:replicas": {}}})),
            entry("kubectl", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
        ];
        assert!(contests(&subresources).is_empty());
    }

    #[test]
    fn status_through_the_main_resource_is_flagged_only_when_not_the_controller() {
        let status = |m: &str, op: &str, sub: &str| entry(m, op, sub, json!({"f:status": {"f:ready": {}}}));
        let flagged = |entries: &[Entry]| {
            contests(entries).iter().filter(|c| c.kind == ContestKind::StatusViaMainResource).count()
        };
        // A CRD without a status subresource: its controller can only write through the main resource.
        assert_eq!(flagged(&[status("widget-controller", "Update", "")]), 0);
        // A GitOps tool applying status is never the controller.
        assert_eq!(flagged(&[status("widget-controller", "Update", ""), status("gitops", "Apply", "")]), 1);
        // The controller uses /status; someone else writes status through the main resource.
        assert_eq!(flagged(&[status("widget-controller", "Update", "status"), status("script", "Update", "")]), 1);
    }
}
