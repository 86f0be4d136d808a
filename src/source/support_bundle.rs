//! A troubleshoot.sh support bundle (replicatedhq/troubleshoot's `support-bundle`) as a source
//! for `check --from`: its .tar.gz, or the directory it unpacks to. Its clusterResources
//! collector writes, under cluster-resources/:
//!
//!   KIND/NAMESPACE.json           a typed List (kind and apiVersion set on it and its items)
//!   KIND.json                     the same for a cluster-scoped kind (nodes, namespaces)
//!   custom-resources/PLURAL.GROUP/NAMESPACE.json, or PLURAL.GROUP.json when cluster-scoped:
//!                                 a JSON array of objects, only where there are some
//!   custom-resource-definitions.json
//!   KIND-errors.json              what could not be read: {namespace: message} or [message]
//!
//! managedFields are kept. Read are the kinds in [KINDS] and every custom resource; the
//! bundle's logs, host collectors and analyzers are not. What the format lacks (other kinds,
//! so owners only in part; ReplicationControllers for overlaps) is said in `not_covered`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::dump::{Header, ListedKind, Page, Record, Trailer, Unscheduled};
use super::lists::{List, Notes};
use crate::snapshot::{ApiResource, Skipped};

/// A kind read: (directory or file stem, group, version, plural, kind, namespaced).
type Kind = (&'static str, &'static str, &'static str, &'static str, &'static str, bool);

const KINDS: &[Kind] = &[
    ("nodes", "", "v1", "nodes", "Node", false),
    ("namespaces", "", "v1", "namespaces", "Namespace", false),
    ("pods", "", "v1", "pods", "Pod", true),
    ("deployments", "apps", "v1", "deployments", "Deployment", true),
    ("replicasets", "apps", "v1", "replicasets", "ReplicaSet", true),
    ("statefulsets", "apps", "v1", "statefulsets", "StatefulSet", true),
    ("daemonsets", "apps", "v1", "daemonsets", "DaemonSet", true),
    ("jobs", "batch", "v1", "jobs", "Job", true),
    ("cronjobs", "batch", "v1", "cronjobs", "CronJob", true),
    ("pod-disruption-budgets", "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true),
    ("leases", "coordination.k8s.io", "v1", "leases", "Lease", true),
    ("services", "", "v1", "services", "Service", true),
    ("endpointslices", "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
    ("configmaps", "", "v1", "configmaps", "ConfigMap", true),
    ("serviceaccounts", "", "v1", "serviceaccounts", "ServiceAccount", true),
    ("pvcs", "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true),
    ("events", "", "v1", "events", "Event", true),
];

/// Kinds that often own objects though a bundle never holds them: served all the same (their
/// references are not judged: the bundle did not list them).
const OWNER_KINDS: &[(&str, &str, &str, bool)] = &[
    ("", "replicationcontrollers", "ReplicationController", true),
    ("", "secrets", "Secret", true),
    ("apps", "controllerrevisions", "ControllerRevision", true),
];

const ROOT: &str = "cluster-resources";

/// One file of the bundle under cluster-resources/: its path there, where to name it, when it
/// was written, and its text (or why it could not be read).
struct File {
    rel: String,
    place: String,
    modified: Option<Timestamp>,
    text: Result<String, String>,
}

type Files = Box<dyn Iterator<Item = Result<File, String>>>;

/// A support bundle being read, file by file.
pub struct Reader {
    files: Files,
    pending: VecDeque<Result<Record, String>>,
    notes: Notes,
    captured: Option<Timestamp>,
    /// Namespaces the bundle covers: its namespaces.json and every NAMESPACE.json seen.
    namespaces: BTreeSet<String>,
    /// Built-in kinds by where they were read (empty: a cluster-scoped kind).
    listed: BTreeMap<(&'static str, &'static str), BTreeSet<String>>,
    /// Custom resources from the bundle's CRDs: (resource, CRD name).
    custom: Vec<(ApiResource, String)>,
    /// CRD names (or NAME/NAMESPACE) whose resources could not be listed.
    custom_failed: BTreeSet<String>,
    skipped: Vec<Skipped>,
    done: bool,
}

/// Whether `path` is a bundle's directory: holding cluster-resources/, or holding one
/// directory that does (where a .tar.gz was unpacked).
pub fn is_directory(path: &Path) -> bool {
    root_in(path).is_some()
}

fn root_in(path: &Path) -> Option<PathBuf> {
    if path.join(ROOT).is_dir() {
        return Some(path.join(ROOT));
    }
    let mut inner = std::fs::read_dir(path).ok()?.flatten().filter(|e| e.path().is_dir());
    let only = inner.next()?;
    (inner.next().is_none() && only.path().join(ROOT).is_dir()).then(|| only.path().join(ROOT))
}

/// Whether `path` is a gzip'd tar archive (a bundle's .tar.gz, whatever its name).
pub fn is_archive(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut head = [0u8; 512];
    let mut gz = flate2::read::MultiGzDecoder::new(file);
    gz.read_exact(&mut head).is_ok() && &head[257..262] == b"ustar"
}

/// Opens a bundle's directory.
pub fn open_directory(path: &Path) -> Result<(Header, Reader), String> {
    let root = root_in(path).ok_or_else(|| format!("{}: no {ROOT} directory in it", path.display()))?;
    let mut found = Vec::new();
    walk(&root, &mut found, 0);
    found.sort();
    let files = found.into_iter().filter_map(move |full| {
        let rel = full.strip_prefix(&root).ok()?.to_string_lossy().replace('\\', "/");
        Wanted::of(&rel)?;
        let meta = std::fs::metadata(&full).ok();
        let modified = meta.and_then(|m| m.modified().ok()).and_then(|t| Timestamp::try_from(t).ok());
        let place = full.display().to_string();
        let text = std::fs::read_to_string(&full).map_err(|e| format!("{place}: {e}"));
        Some(Ok(File { rel, place, modified, text }))
    });
    Ok((header(), Reader::new(Box::new(files))))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            // custom-resources/PLURAL.GROUP/NAMESPACE.json is the deepest file read.
            if depth < 2 {
                walk(&path, out, depth + 1);
            }
        } else {
            out.push(path);
        }
    }
}

/// Opens a bundle's .tar.gz. Its entries are read on a thread of their own as they stream by,
/// a few files ahead of the analyses.
pub fn open_archive(path: &Path) -> Result<(Header, Reader), String> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<File, String>>(2);
    std::thread::spawn(move || {
        let gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(256 * 1024, file));
        let mut archive = tar::Archive::new(gz);
        let entries = match archive.entries() {
            Ok(e) => e,
            Err(e) => {
                let _ = tx.send(Err(format!("{shown}: {e}")));
                return;
            }
        };
        for entry in entries {
            let mut entry = match entry {
                Ok(e) => e,
                // A cut archive ends in an error: what came before it stands.
                Err(e) => {
                    let _ = tx.send(Err(format!("{shown}: {e}")));
                    return;
                }
            };
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let Ok(name) = entry.path().map(|p| p.to_string_lossy().replace('\\', "/")) else { continue };
            let Some(rel) = name.split_once(&format!("{ROOT}/")).map(|(_, r)| r.to_string()) else { continue };
            if Wanted::of(&rel).is_none() {
                continue;
            }
            let place = format!("{shown}:{name}");
            let modified = entry.header().mtime().ok().and_then(|s| Timestamp::from_second(s as i64).ok());
            let mut text = String::new();
            let text = match entry.read_to_string(&mut text) {
                Ok(_) => Ok(text),
                Err(e) => Err(format!("{place}: {e}")),
            };
            if tx.send(Ok(File { rel, place, modified, text })).is_err() {
                return; // the reader was dropped
            }
        }
    });
    Ok((header(), Reader::new(Box::new(rx.into_iter()))))
}

fn header() -> Header {
    Header {
        api_version: super::dump::API_VERSION.into(),
        kind: "SupportBundle".into(),
        context: None,
        namespace: None,
        resources: Vec::new(),
    }
}

fn builtin(stem: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.0 == stem)
}

/// What a file under cluster-resources/ is to this reader.
enum Wanted<'a> {
    /// KIND/NAMESPACE.json, or KIND.json for a cluster-scoped kind.
    Builtin(&'static Kind, Option<&'a str>),
    Crds,
    /// custom-resources/CRD/NAMESPACE.json or custom-resources/CRD.json.
    Custom(&'a str, Option<&'a str>),
    /// KIND-errors.json of a kind read (None: the custom resources').
    Errors(Option<&'static Kind>),
}

impl<'a> Wanted<'a> {
    fn of(rel: &'a str) -> Option<Wanted<'a>> {
        let stem = rel.strip_suffix(".json")?;
        if stem == "custom-resource-definitions" {
            return Some(Wanted::Crds);
        }
        if stem == "custom-resources/custom-resources-errors" {
            return Some(Wanted::Errors(None));
        }
        if let Some(kind) = stem.strip_suffix("-errors") {
            return builtin(kind).map(|k| Wanted::Errors(Some(k)));
        }
        match stem.split('/').collect::<Vec<_>>()[..] {
            ["custom-resources", crd] => Some(Wanted::Custom(crd, None)),
            ["custom-resources", crd, ns] => Some(Wanted::Custom(crd, Some(ns))),
            [kind] => builtin(kind).filter(|k| !k.5).map(|k| Wanted::Builtin(k, None)),
            [kind, ns] => builtin(kind).filter(|k| k.5).map(|k| Wanted::Builtin(k, Some(ns))),
            _ => None,
        }
    }
}

fn resource(k: &Kind) -> ApiResource {
    ApiResource::known(k.1, k.2, k.3, k.4, k.5)
}

impl Reader {
    fn new(files: Files) -> Reader {
        Reader {
            files,
            pending: VecDeque::new(),
            notes: Notes::default(),
            captured: None,
            namespaces: BTreeSet::new(),
            listed: BTreeMap::new(),
            custom: Vec::new(),
            custom_failed: BTreeSet::new(),
            skipped: Vec::new(),
            done: false,
        }
    }

    /// Every resource the bundle holds or names as an owner: the built-in kinds read, those
    /// that often own, and the custom resources of its CRDs.
    pub fn resources(&self) -> Vec<ApiResource> {
        let mut out: Vec<ApiResource> = KINDS.iter().map(resource).collect();
        out.extend(OWNER_KINDS.iter().map(|&(g, plural, kind, ns)| ApiResource::known(g, "v1", plural, kind, ns)));
        out.extend(self.custom.iter().map(|(r, _)| r.clone()));
        out
    }

    /// What the format cannot feed, by mechanism name, once every file was read.
    pub fn not_covered(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (
                "owners",
                "a support bundle holds some kinds and the custom resources: references to other kinds \
                 (ReplicationControllers, Secrets, ControllerRevisions and more) are not checked"
                    .to_string(),
            ),
            ("overlaps", "a support bundle has no ReplicationControllers: they are not compared".to_string()),
        ];
        if !self.listed.contains_key(&("coordination.k8s.io", "Lease")) {
            out.push(("leases", "the bundle has no Leases".to_string()));
        }
        if !self.notes.managed_fields {
            out.push(("fields", "no object in the bundle kept its managedFields".to_string()));
        }
        out
    }

    fn file(&mut self, file: File) {
        let Some(wanted) = Wanted::of(&file.rel) else { return };
        // The capture time: when nodes.json was written (the collector writes the lists one
        // after another within seconds).
        if file.rel == "nodes.json" {
            self.captured = file.modified;
        }
        let text = match file.text {
            Ok(t) => t,
            Err(e) => return self.pending.push_back(Err(e)),
        };
        let place = &file.place;
        match wanted {
            Wanted::Crds => self.crds(place, &text),
            Wanted::Errors(kind) => self.errors(place, kind, &text),
            Wanted::Builtin(kind, ns) => {
                // A List, or (namespaces.json of a bundle of some namespaces) an array.
                let parsed = if text.trim_start().starts_with('[') {
                    serde_json::from_str(&text).map(|items| List { kind: String::new(), items: Some(items) })
                } else {
                    serde_json::from_str::<List>(&text)
                };
                let list = match parsed {
                    Ok(l) => l,
                    Err(e) => return self.pending.push_back(Err(format!("{place}: not a List: {e}"))),
                };
                if !list.kind.is_empty() && list.kind != format!("{}List", kind.4) {
                    return self
                        .pending
                        .push_back(Err(format!("{place}: a {} where a {}List was expected", list.kind, kind.4)));
                }
                let read = self.listed.entry((kind.1, kind.4)).or_default();
                if let Some(ns) = ns {
                    read.insert(ns.to_string());
                    self.namespaces.insert(ns.to_string());
                }
                self.page(resource(kind), list.items.unwrap_or_default());
            }
            Wanted::Custom(crd, ns) => {
                let items: Vec<Box<RawValue>> = match serde_json::from_str(&text) {
                    Ok(i) => i,
                    Err(e) => return self.pending.push_back(Err(format!("{place}: not an array of objects: {e}"))),
                };
                if items.is_empty() {
                    return;
                }
                let Some(res) = self.custom_resource(crd, ns.is_some(), &items) else {
                    return self.pending.push_back(Err(format!("{place}: its objects name no apiVersion and kind")));
                };
                if let Some(ns) = ns {
                    self.namespaces.insert(ns.to_string());
                }
                self.page(res, items);
            }
        }
    }

    fn page(&mut self, resource: ApiResource, items: Vec<Box<RawValue>>) {
        for item in &items {
            self.notes.note(&resource.kind, item);
        }
        if resource.kind == "Namespace" {
            for item in &items {
                #[derive(Deserialize)]
                struct Named {
                    metadata: Meta,
                }
                #[derive(Deserialize)]
                struct Meta {
                    name: String,
                }
                if let Ok(n) = serde_json::from_str::<Named>(item.get()) {
                    self.namespaces.insert(n.metadata.name);
                }
            }
        }
        self.pending.push_back(Ok(Record::Page(Page {
            resource,
            metadata_only: false,
            system_leases: false,
            read_at: None,
            items,
        })));
    }

    /// The resource a custom-resources/ file holds: its CRD's, else told by its items.
    fn custom_resource(&mut self, crd: &str, namespaced: bool, items: &[Box<RawValue>]) -> Option<ApiResource> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Typed {
            api_version: String,
            kind: String,
        }
        let typed: Typed = items.iter().find_map(|i| serde_json::from_str(i.get()).ok())?;
        let (group, version) = typed.api_version.rsplit_once('/').unwrap_or(("", &typed.api_version));
        if let Some((r, _)) = self.custom.iter_mut().find(|(_, name)| name == crd) {
            // The version the collector listed, which the CRD does not say.
            r.version = version.to_string();
            return Some(r.clone());
        }
        let plural = crd.split_once('.').map_or(crd, |(p, _)| p);
        let r = ApiResource::known(group, version, plural, &typed.kind, namespaced);
        self.custom.push((r.clone(), crd.to_string()));
        Some(r)
    }

    fn crds(&mut self, place: &str, text: &str) {
        #[derive(Deserialize)]
        struct Crds {
            #[serde(default)]
            items: Option<Vec<Crd>>,
        }
        #[derive(Deserialize)]
        struct Crd {
            metadata: Meta,
            spec: Spec,
        }
        #[derive(Deserialize)]
        struct Meta {
            name: String,
        }
        #[derive(Deserialize)]
        struct Spec {
            group: String,
            names: Names,
            scope: String,
            #[serde(default)]
            versions: Vec<Version>,
        }
        #[derive(Deserialize)]
        struct Names {
            plural: String,
            kind: String,
        }
        #[derive(Deserialize)]
        struct Version {
            name: String,
            #[serde(default)]
            storage: bool,
        }
        let crds: Crds = match serde_json::from_str(text) {
            Ok(c) => c,
            Err(e) => return self.pending.push_back(Err(format!("{place}: not a CustomResourceDefinitionList: {e}"))),
        };
        for crd in crds.items.unwrap_or_default() {
            let s = crd.spec;
            let version = s.versions.iter().find(|v| v.storage).or(s.versions.first()).map(|v| v.name.clone());
            let r = ApiResource::known(
                &s.group,
                &version.unwrap_or_default(),
                &s.names.plural,
                &s.names.kind,
                s.scope == "Namespaced",
            );
            match self.custom.iter_mut().find(|(_, name)| *name == crd.metadata.name) {
                // Its objects came first: the version they were listed at stands.
                Some((known, _)) => known.namespaced = r.namespaced,
                None => self.custom.push((r, crd.metadata.name)),
            }
        }
    }

    /// KIND-errors.json: {namespace: message}, or [message] for a cluster-scoped kind.
    fn errors(&mut self, place: &str, kind: Option<&Kind>, text: &str) {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Errors {
            ByName(BTreeMap<String, String>),
            List(Vec<String>),
        }
        let errors = match serde_json::from_str::<Errors>(text) {
            Ok(Errors::ByName(m)) => m.into_iter().map(|(k, v)| (Some(k), v)).collect(),
            Ok(Errors::List(l)) => l.into_iter().map(|v| (None, v)).collect::<Vec<_>>(),
            Err(e) => return self.pending.push_back(Err(format!("{place}: not a list of errors: {e}"))),
        };
        for (key, why) in errors {
            let why = format!("the bundle could not read it: {why}");
            match (kind, key) {
                (Some(k), ns) => self.skipped.push(Skipped::new(k.3, ns.as_deref(), why)),
                // custom-resources-errors.json: by CRD name, or CRD/NAMESPACE.
                (None, Some(key)) => {
                    let (crd, ns) = key.split_once('/').map_or((key.as_str(), None), |(c, n)| (c, Some(n)));
                    self.skipped.push(Skipped::new(crd, ns, why));
                    self.custom_failed.insert(crd.to_string());
                }
                (None, None) => self.skipped.push(Skipped::new("custom resources", None, why)),
            }
        }
    }

    fn trailer(&mut self) -> Trailer {
        let all: Vec<String> = self.namespaces.iter().cloned().collect();
        let mut listed: Vec<ListedKind> = self
            .listed
            .iter()
            .map(|(&(group, kind), namespaces)| ListedKind {
                group: group.into(),
                kind: kind.into(),
                namespaces: namespaces.iter().cloned().collect(),
            })
            .collect();
        // A CRD's objects were listed wherever the bundle looked, unless that failed; the
        // collector writes no file where there were none.
        for (r, name) in &self.custom {
            if self.custom_failed.contains(name) {
                continue;
            }
            listed.push(ListedKind {
                group: r.group.clone(),
                kind: r.kind.clone(),
                namespaces: if r.namespaced { all.clone() } else { Vec::new() },
            });
        }
        Trailer {
            server_time: self.captured.or(self.notes.latest),
            listed,
            skipped: std::mem::take(&mut self.skipped),
            unscheduled: Some(Unscheduled {
                namespace: None,
                keys: std::mem::take(&mut self.notes.unscheduled),
                read_at: None,
            }),
        }
    }

    /// The namespace a bundle of one namespace covers.
    pub fn only_namespace(&self) -> Option<String> {
        (self.namespaces.len() == 1).then(|| self.namespaces.iter().next().cloned()).flatten()
    }
}

impl Iterator for Reader {
    type Item = Result<Record, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            match self.files.next() {
                Some(Ok(file)) => self.file(file),
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.done = true;
                    return Some(Ok(Record::Trailer(self.trailer())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = r#"{"kind":"NodeList","apiVersion":"v1","items":[{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","uid":"n"}}]}"#;
    const PODS: &str = r#"{"kind":"PodList","apiVersion":"v1","items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"a","uid":"u1","creationTimestamp":"2026-12-01T00:00:00Z","managedFields":[{"manager":"m"}]},"spec":{}}]}"#;
    const CRDS: &str = r#"{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced","versions":[{"name":"v1","storage":true}]}},{"metadata":{"name":"gadgets.example.com"},"spec":{"group":"example.com","names":{"plural":"gadgets","kind":"Gadget"},"scope":"Cluster","versions":[{"name":"v2","storage":true}]}}]}"#;
    const WIDGETS: &str =
        r#"[{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"w","namespace":"a","uid":"w1"}}]"#;

    /// A bundle's files: (path under cluster-resources/, text).
    fn bundle() -> Vec<(&'static str, &'static str)> {
        vec![
            ("nodes.json", NODES),
            ("namespaces.json", r#"[{"metadata":{"name":"a","uid":"ns-a"}}]"#),
            ("pods/a.json", PODS),
            ("pods-errors.json", r#"{"b": "pods is forbidden"}"#),
            ("pods/logs/a/p/c.log", "not read"),
            ("custom-resource-definitions.json", CRDS),
            ("custom-resources/widgets.example.com/a.json", WIDGETS),
            ("custom-resources/custom-resources-errors.json", r#"{"gadgets.example.com": "the server is down"}"#),
            ("storage-classes.json", "{ not read"),
            ("deployments/a.json", "{ not json"),
        ]
    }

    fn read_all(reader: Reader) -> (Vec<Page>, Vec<String>, Trailer, Reader) {
        let mut reader = reader;
        let (mut pages, mut errors, mut trailer) = (Vec::new(), Vec::new(), None);
        for r in reader.by_ref() {
            match r {
                Ok(Record::Page(p)) => pages.push(p),
                Ok(Record::Trailer(t)) => trailer = Some(t),
                Ok(Record::Header(_)) => panic!("no header record in a bundle"),
                Err(e) => errors.push(e),
            }
        }
        (pages, errors, trailer.expect("a trailer"), reader)
    }

    fn check(pages: &[Page], errors: &[String], trailer: &Trailer, reader: &Reader) {
        let mut kinds: Vec<(&str, &str)> =
            pages.iter().map(|p| (p.resource.kind.as_str(), p.resource.version.as_str())).collect();
        kinds.sort();
        assert_eq!(kinds, [("Namespace", "v1"), ("Node", "v1"), ("Pod", "v1"), ("Widget", "v1beta1")], "{errors:?}");
        assert_eq!(errors.len(), 1, "the broken List alone: {errors:?}");
        assert!(errors[0].contains("deployments/a.json: not a List"), "{errors:?}");
        let mut skipped: Vec<String> = trailer.skipped.iter().map(|s| s.to_string()).collect();
        skipped.sort();
        assert_eq!(
            skipped,
            [
                "gadgets.example.com: the bundle could not read it: the server is down",
                "pods in b: the bundle could not read it: pods is forbidden",
            ]
        );
        let listed: Vec<(&str, &[String])> =
            trailer.listed.iter().map(|l| (l.kind.as_str(), l.namespaces.as_slice())).collect();
        let a = ["a".to_string()];
        assert_eq!(
            listed,
            [("Namespace", &[][..]), ("Node", &[][..]), ("Pod", &a[..]), ("Widget", &a[..])],
            "a failed CRD is not listed"
        );
        assert_eq!(trailer.unscheduled.as_ref().unwrap().keys, ["u1"]);
        let resources = reader.resources();
        assert!(resources.iter().any(|r| r.kind == "Gadget" && !r.namespaced && r.version == "v2"));
        assert!(resources.iter().any(|r| r.kind == "Widget" && r.namespaced && r.version == "v1beta1"));
        assert!(resources.iter().any(|r| r.kind == "ReplicationController"));
        let uncovered: Vec<&str> = reader.not_covered().iter().map(|n| n.0).collect();
        assert_eq!(uncovered, ["owners", "overlaps", "leases"], "managedFields are kept, Leases are not here");
        assert_eq!(reader.only_namespace().as_deref(), Some("a"));
    }

    #[test]
    fn a_bundle_directory_is_its_lists_errors_and_custom_resources() {
        let dir = std::env::temp_dir().join(format!("coord-bundle-dir-{}", std::process::id()));
        let root = dir.join("support-bundle-2026-12-08T02_00_00").join(ROOT);
        for (rel, text) in bundle() {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        assert!(is_directory(&dir), "the directory a .tar.gz unpacks into");
        assert!(is_directory(root.parent().unwrap()));
        assert!(!is_directory(&root));
        let (_, reader) = open_directory(&dir).unwrap();
        let (pages, errors, trailer, reader) = read_all(reader);
        check(&pages, &errors, &trailer, &reader);
        assert!(trailer.server_time.is_some(), "nodes.json's modification time");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn archive(files: &[(&str, &str)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (rel, text) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(text.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(1_796_000_000);
            h.set_cksum();
            let path = format!("support-bundle-2026-12-08T02_00_00/{ROOT}/{rel}");
            tar.append_data(&mut h, path, text.as_bytes()).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_bundle_archive_reads_as_its_directory_does() {
        let path = std::env::temp_dir().join(format!("coord-bundle-{}.tar.gz", std::process::id()));
        std::fs::write(&path, archive(&bundle())).unwrap();
        assert!(is_archive(&path));
        let (_, reader) = open_archive(&path).unwrap();
        let (pages, errors, trailer, reader) = read_all(reader);
        check(&pages, &errors, &trailer, &reader);
        assert_eq!(trailer.server_time, Some(Timestamp::from_second(1_796_000_000).unwrap()), "nodes.json's mtime");
        // Cut short: what came before is read, then one error.
        let bytes = archive(&bundle());
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let (_, reader) = open_archive(&path).unwrap();
        let (_, errors, _, _) = read_all(reader);
        assert!(!errors.is_empty());
        // A gzip file that is not a tar is not an archive.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &[b'{'; 600]).unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        assert!(!is_archive(&path));
        std::fs::remove_file(&path).unwrap();
    }

    proptest::proptest! {
        /// A bundle's files are untrusted: any text in any file read gives pages, errors and
        /// one trailer, never a panic.
        #[test]
        fn any_file_text_is_pages_or_errors(
            texts in proptest::collection::vec("[{}\\[\\]\":,a-zA-Z0-9/ .-]{0,200}", 1..8),
            which in proptest::collection::vec(0usize..10, 1..8),
        ) {
            let paths = bundle();
            let files: Vec<File> = texts
                .into_iter()
                .zip(which)
                .map(|(text, i)| File {
                    rel: paths[i].0.to_string(),
                    place: paths[i].0.to_string(),
                    modified: None,
                    text: Ok(text),
                })
                .collect();
            let reader = Reader::new(Box::new(files.into_iter().map(Ok)));
            let trailers = reader.filter(|r| matches!(r, Ok(Record::Trailer(_)))).count();
            proptest::prop_assert_eq!(trailers, 1);
        }
    }
}
