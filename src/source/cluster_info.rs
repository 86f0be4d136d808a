//! `kubectl cluster-info dump` as a source for `check --from`: its directory
//! (`--output-directory`: nodes.json, then NAMESPACE/{deployments,replicasets,daemonsets,
//! replication-controllers,services,pods,events}.json, pod logs beside them) or its standard
//! output (those Lists pretty-printed one after another, pod logs between `==== START logs`
//! and `==== END logs` lines). Each List becomes a page of a dump, read whole. What the format
//! lacks (Leases, PodDisruptionBudgets, StatefulSets, Jobs; managedFields unless dumped with
//! --show-managed-fields) is said in `not_covered`, by mechanism name.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::dump::{Header, ListedKind, Page, Record, Trailer, Unscheduled};
use super::lists::{List, Notes};
use crate::snapshot::ApiResource;

/// The Lists a cluster-info dump holds: (file stem, List kind, group, version, plural, kind, namespaced).
const LISTS: &[(&str, &str, &str, &str, &str, &str, bool)] = &[
    ("nodes", "NodeList", "", "v1", "nodes", "Node", false),
    ("deployments", "DeploymentList", "apps", "v1", "deployments", "Deployment", true),
    ("replicasets", "ReplicaSetList", "apps", "v1", "replicasets", "ReplicaSet", true),
    ("daemonsets", "DaemonSetList", "apps", "v1", "daemonsets", "DaemonSet", true),
    (
        "replication-controllers",
        "ReplicationControllerList",
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
    ),
    ("services", "ServiceList", "", "v1", "services", "Service", true),
    ("pods", "PodList", "", "v1", "pods", "Pod", true),
    ("events", "EventList", "", "v1", "events", "Event", true),
];

/// Kinds a dumped object may name as its owner though the dump has none of them: served
/// all the same (their references are not judged: the dump did not list them).
const OWNER_KINDS: &[(&str, &str, &str, bool)] = &[
    ("apps", "statefulsets", "StatefulSet", true),
    ("batch", "jobs", "Job", true),
    ("batch", "cronjobs", "CronJob", true),
    ("", "namespaces", "Namespace", false),
];

fn resource(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> ApiResource {
    ApiResource::known(group, version, plural, kind, namespaced)
}

/// Every resource the format can hold, or name as an owner.
pub fn resources() -> Vec<ApiResource> {
    let mut out: Vec<ApiResource> =
        LISTS.iter().map(|&(_, _, g, v, plural, kind, ns)| resource(g, v, plural, kind, ns)).collect();
    out.extend(OWNER_KINDS.iter().map(|&(g, plural, kind, ns)| resource(g, "v1", plural, kind, ns)));
    out
}

/// A cluster-info dump being read, List by List.
pub struct Reader {
    lists: Box<dyn Iterator<Item = Result<(String, String), String>>>,
    state: State,
}

/// What the Lists read so far say of the whole dump, for the trailer.
#[derive(Default)]
struct State {
    namespaces: Option<BTreeSet<String>>,
    captured: Option<Timestamp>,
    notes: Notes,
    listed: BTreeSet<(&'static str, &'static str)>,
    done: bool,
}

/// Whether `path` looks like a cluster-info dump: a directory with nodes.json (or NAMESPACE/pods.json),
/// or a stream starting with a NodeList.
pub fn is_directory_dump(path: &Path) -> bool {
    path.is_dir()
        && (path.join("nodes.json").is_file()
            || std::fs::read_dir(path).is_ok_and(|d| d.flatten().any(|e| e.path().join("pods.json").is_file())))
}

/// Opens a directory dump. The capture time is nodes.json's (written first) modification time.
pub fn open_directory(path: &Path) -> Result<(Header, Reader), String> {
    let shown = path.display().to_string();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut namespaces = BTreeSet::new();
    if path.join("nodes.json").is_file() {
        files.push(path.join("nodes.json"));
    }
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(path).map_err(|e| format!("{shown}: {e}"))?.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let found: Vec<PathBuf> =
            LISTS.iter().map(|(stem, ..)| dir.join(format!("{stem}.json"))).filter(|f| f.is_file()).collect();
        if found.is_empty() {
            continue; // not a namespace's directory
        }
        namespaces.insert(dir.file_name().unwrap_or_default().to_string_lossy().to_string());
        files.extend(found);
    }
    let captured = std::fs::metadata(files.first().ok_or_else(|| format!("{shown}: no List in it"))?)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| Timestamp::try_from(t).ok());
    let header = header(namespaces.iter().next().filter(|_| namespaces.len() == 1).cloned());
    let lists = files.into_iter().map(|f| {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        Ok((f.display().to_string(), text))
    });
    let state = State { namespaces: Some(namespaces), captured, ..State::default() };
    Ok((header, Reader { lists: Box::new(lists), state }))
}

/// Opens the standard output of `kubectl cluster-info dump` (a file, or - for stdin). The
/// capture time is the file's modification time, or from stdin the latest time any object or
/// event carries.
pub fn open_stream(path: &Path, first: &str, rest: Box<dyn BufRead>) -> (Header, Reader) {
    let shown = if path == Path::new("-") { "stdin".to_string() } else { path.display().to_string() };
    let lists = Stream { lines: rest, pending: Some(first.to_string()), shown, line: 0 };
    // A file the output was redirected to was last written when the dump ended; stdin has
    // no such time, and the latest time an object carries stands in for it.
    let captured = (path != Path::new("-"))
        .then(|| std::fs::metadata(path).and_then(|m| m.modified()).ok())
        .flatten()
        .and_then(|t| Timestamp::try_from(t).ok());
    (header(None), Reader { lists: Box::new(lists), state: State { captured, ..State::default() } })
}

/// Whether a stream's first line opens a cluster-info dump.
pub fn starts_stream(first: &str) -> bool {
    first.trim_end() == "{"
}

fn header(namespace: Option<String>) -> Header {
    Header {
        api_version: super::dump::API_VERSION.into(),
        kind: "ClusterInfoDump".into(),
        context: None,
        namespace,
        resources: resources(),
    }
}

/// The top-level values of a cluster-info dump's standard output, log sections skipped.
struct Stream {
    lines: Box<dyn BufRead>,
    pending: Option<String>,
    shown: String,
    line: usize,
}

impl Iterator for Stream {
    type Item = Result<(String, String), String>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut text = String::new();
        let mut in_log = false;
        loop {
            let line = match self.pending.take() {
                Some(l) => l,
                None => {
                    let mut l = String::new();
                    match self.lines.read_line(&mut l) {
                        Ok(0) if text.is_empty() => return None,
                        Ok(0) => return Some(Err(format!("{}:{}: cut short inside a List", self.shown, self.line))),
                        Ok(_) => l,
                        Err(e) => return Some(Err(format!("{}:{}: {e}", self.shown, self.line))),
                    }
                }
            };
            self.line += 1;
            let bare = line.trim_end();
            if in_log {
                in_log = !bare.starts_with("==== END logs");
                continue;
            }
            if text.is_empty() && bare.starts_with("==== START logs") {
                in_log = true;
                continue;
            }
            if text.is_empty() && bare != "{" {
                continue; // between Lists: blank lines
            }
            text.push_str(&line);
            if bare == "}" {
                return Some(Ok((format!("{}:{}", self.shown, self.line), text)));
            }
        }
    }
}

impl Iterator for Reader {
    type Item = Result<Record, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.state.done {
            return None;
        }
        match self.lists.next() {
            Some(Ok((place, text))) => Some(self.page(&place, &text)),
            Some(Err(e)) => Some(Err(e)),
            None => {
                self.state.done = true;
                Some(Ok(Record::Trailer(self.trailer())))
            }
        }
    }
}

impl Reader {
    fn page(&mut self, place: &str, text: &str) -> Result<Record, String> {
        let list: List = serde_json::from_str(text).map_err(|e| format!("{place}: not a List: {e}"))?;
        let Some(&(_, _, g, v, plural, kind, ns)) = LISTS.iter().find(|l| l.1 == list.kind) else {
            return Err(format!("{place}: a {} is not what cluster-info dump writes", list.kind));
        };
        self.state.listed.insert((g, kind));
        let items = list.items.unwrap_or_default();
        for item in &items {
            self.state.notes.note(kind, item);
        }
        Ok(Record::Page(Page {
            resource: resource(g, v, plural, kind, ns),
            metadata_only: false,
            system_leases: false,
            read_at: None,
            items,
        }))
    }

    fn trailer(&mut self) -> Trailer {
        let namespaces: Vec<String> = self.state.namespaces.clone().unwrap_or_default().into_iter().collect();
        let listed = self
            .state
            .listed
            .iter()
            .map(|&(group, kind)| {
                let cluster = LISTS.iter().any(|l| l.5 == kind && !l.6);
                ListedKind {
                    group: group.into(),
                    kind: kind.into(),
                    // A stream does not say which namespaces it covers: taken as all.
                    namespaces: if cluster { Vec::new() } else { namespaces.clone() },
                }
            })
            .collect();
        Trailer {
            server_time: self.state.captured.or(self.state.notes.latest),
            listed,
            skipped: Vec::new(),
            unscheduled: Some(Unscheduled {
                namespace: None,
                keys: std::mem::take(&mut self.state.notes.unscheduled),
                read_at: None,
            }),
        }
    }

    /// What the format cannot feed, by mechanism name, once every List was read.
    pub fn not_covered(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("leases", "a cluster-info dump has no Leases".to_string()),
            (
                "overlaps",
                "a cluster-info dump has no PodDisruptionBudgets, StatefulSets or Jobs: only Deployments, \
                 ReplicaSets, DaemonSets and ReplicationControllers are compared"
                    .to_string(),
            ),
            ("owners", "a cluster-info dump holds eight kinds: references to other kinds are not checked".to_string()),
        ];
        if !self.state.notes.managed_fields {
            out.push(("fields", "dumped without --show-managed-fields: no managedFields".to_string()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream's Lists are found between log sections, a log holding a lone "}" included.
    #[test]
    fn a_stream_is_its_lists_with_logs_skipped() {
        let text = "{\n    \"kind\": \"NodeList\",\n    \"items\": []\n}\n{\n    \"kind\": \"PodList\",\n    \"items\": [\n        {\"metadata\": {\"name\": \"p\", \"uid\": \"u1\", \"namespace\": \"a\"}, \"spec\": {}}\n    ]\n}\n==== START logs for container c of pod a/p ====\n}\n{\n==== END logs for container c of pod a/p ====\n";
        let mut rest: Box<dyn BufRead> = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        let mut first = String::new();
        rest.read_line(&mut first).unwrap();
        assert!(starts_stream(&first));
        let (_, reader) = open_stream(Path::new("-"), &first, rest);
        let records: Vec<Record> = reader.map(Result::unwrap).collect();
        assert_eq!(records.len(), 3, "two Lists and the trailer");
        let Record::Trailer(t) = &records[2] else { panic!("no trailer") };
        assert_eq!(t.unscheduled.as_ref().unwrap().keys, ["u1"], "a pod with no node");
        assert_eq!(t.listed.len(), 2);
    }

    proptest::proptest! {
        /// A cluster-info dump's stream is untrusted: any text after an opening brace is Lists,
        /// a List's error, or the trailer, never a panic.
        #[test]
        fn any_stream_is_lists_or_errors(text in "[{}\\[\\]\":,a-z0-9 \n=]{0,300}") {
            let rest: Box<dyn BufRead> = Box::new(std::io::Cursor::new(text.into_bytes()));
            let (_, reader) = open_stream(Path::new("-"), "{\n", rest);
            for _ in reader.take(1000) {}
        }
    }
}
