//! `owners -f`: manifests' ownerReferences checked against the live objects before they are
//! applied. The files' objects join the live graph (the same kind, namespace and name replaces
//! the live object, keeping its uid; a new one gets a placeholder uid no reference can name)
//! and the scan's findings are reported for them alone: a reference to an owner that does not
//! exist, or whose uid is not the live one's (the garbage collector deletes such a dependent
//! right after it is created), across namespaces, from a cluster-scoped object, to a kind not
//! served, several controllers.

use std::sync::Arc;

use super::fetch::Snapshot;
use crate::analyze::owner_graph::{Deletion, Object, OwnerRef};
use crate::analyze::resource_ref::ApiResource;
use crate::analyze::uid::Uid;
use crate::commands::overlaps::files::FileObject;
use crate::connect::Skipped;
use crate::source::files::Manifests;

/// Lays the files' objects over `snap`; returns them (in the order of `snap.objects` after
/// the live ones), the index each has in `snap.objects`, and a line for each left out.
/// `in_scope` says whether a namespace's live objects were read: an object of the files in
/// another namespace is not checked (its owners were not read, it would look dangling) and the
/// run is incomplete.
pub fn lay(
    snap: &mut Snapshot,
    manifests: &Manifests,
    resources: &[ApiResource],
    default_namespace: &str,
    in_scope: impl Fn(&str) -> bool,
) -> (Vec<FileObject>, Vec<usize>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out_of_scope: Vec<String> = Vec::new();
    let mut laid = Vec::new();
    let mut objects: Vec<Object> = Vec::new();
    for m in &manifests.objects {
        // Namespaced unless discovery says the kind is cluster-scoped; a kind not served is
        // kept (its references still point somewhere), in the namespace the document gives.
        let served = resources.iter().find(|r| r.kind == m.kind && r.group == m.group());
        let namespace = match served {
            Some(r) if !r.namespaced => None,
            _ => Some(m.namespace.clone().unwrap_or_else(|| default_namespace.to_string())),
        };
        if let Some(ns) = namespace.as_deref().filter(|ns| !in_scope(ns)) {
            if !out_of_scope.iter().any(|o| o == ns) {
                out_of_scope.push(ns.to_string());
            }
            continue;
        }
        if served.is_none() {
            notes.push(format!("{}: {} {} is of a kind the cluster does not serve", m.origin, m.kind, m.name));
        }
        let refs: Vec<OwnerRef> = match m.object.pointer("/metadata/ownerReferences") {
            None => Vec::new(),
            Some(v) => match serde_json::from_value(v.clone()) {
                Ok(refs) => refs,
                Err(e) => {
                    notes.push(format!("{}: {} {} left out: ownerReferences: {e}", m.origin, m.kind, m.name));
                    continue;
                }
            },
        };
        let uid = m
            .object
            .pointer("/metadata/uid")
            .and_then(serde_json::Value::as_str)
            .map(Uid::new)
            .unwrap_or_else(|| Uid::new(&format!("file:{}", m.origin)));
        laid.push(FileObject {
            kind: m.kind.clone(),
            namespace: namespace.clone().unwrap_or_default(),
            name: m.name.clone(),
            file: m.origin.file.clone(),
            document: m.origin.document,
            replaces: false,
        });
        objects.push(Object {
            uid,
            api_version: Arc::from(m.api_version.as_str()),
            kind: Arc::from(m.kind.as_str()),
            namespace: namespace.map(|n| Arc::from(n.as_str())),
            name: m.name.clone(),
            owner_refs: refs.into(),
            created: None,
            deletion: Deletion::default(),
        });
    }
    // The live objects, less those the files replace (whose uid the file's object takes).
    let same = |a: &Object, b: &Object| {
        a.kind == b.kind && a.group() == b.group() && a.namespace == b.namespace && a.name == b.name
    };
    let mut kept = crate::analyze::chunked::Chunked::default();
    for live in snap.objects.iter() {
        match objects.iter().position(|o| same(o, live)) {
            Some(at) => {
                if objects[at].uid.to_string().starts_with("file:") {
                    objects[at].uid = live.uid.clone();
                }
                laid[at].replaces = true;
            }
            None => kept.push(live.clone()),
        }
    }
    for namespace in out_of_scope {
        snap.skipped.push(Skipped::new(
            "objects",
            Some(&namespace),
            format!("not read (outside -n; -n {namespace} or -A reads it): the files' objects there are not checked"),
        ));
    }
    let first = kept.len();
    kept.extend(objects);
    snap.objects = kept;
    let nodes = (first..first + laid.len()).collect();
    (laid, nodes, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::owner_graph::tests::{coverage, obj};
    use crate::analyze::owner_graph::{FindingKind, Graph, findings};
    use crate::source::files::parse_into;

    fn served(group: &str, kind: &str, namespaced: bool) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: "v1".into(),
            plural: format!("{}s", kind.to_lowercase()),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            short_names: Vec::new(),
            namespaced,
            verbs: vec!["list".into()],
            preferred: true,
        }
    }

    const LIVE_UID: &str = "11111111-1111-1111-1111-111111111111";

    /// A ReplicaSet naming the live Deployment's uid is fine; one naming an old uid, and a
    /// ConfigMap naming a Deployment that does not exist, are dangling: the garbage collector
    /// deletes them once created. Only the files' objects are reported; one in a namespace
    /// that was not read is not judged.
    #[test]
    fn references_to_missing_owners_and_old_uids_are_found_before_apply() {
        let text = format!(
            "\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-1
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: {LIVE_UID}, controller: true}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-2
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: 22222222-2222-2222-2222-222222222222, controller: true}}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: gone, uid: 33333333-3333-3333-3333-333333333333}}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: far
  namespace: elsewhere
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: gone, uid: 33333333-3333-3333-3333-333333333333}}]
"
        );
        let mut manifests = Manifests::default();
        parse_into(&mut manifests, "release.yaml", &text);
        let mut snap = Snapshot {
            objects: vec![
                obj(LIVE_UID, "Deployment", Some("shop"), "web", &[]),
                obj("44444444-4444-4444-4444-444444444444", "ConfigMap", Some("shop"), "settings", &[]),
            ]
            .into(),
            coverage: coverage(),
            skipped: Vec::new(),
            server_time: None,
        };
        let resources =
            [served("apps", "Deployment", true), served("apps", "ReplicaSet", true), served("", "ConfigMap", true)];
        let (laid, nodes, notes) = lay(&mut snap, &manifests, &resources, "shop", |ns| ns == "shop");
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            laid.iter().map(|f| (f.name.as_str(), f.replaces)).collect::<Vec<_>>(),
            [("web-1", false), ("web-2", false), ("settings", true)]
        );
        assert_eq!(snap.objects.len(), 4, "the live ConfigMap replaced, the one outside -n left out");
        assert_eq!(snap.skipped.len(), 1, "its namespace was not read: incomplete, not dangling");
        assert_eq!(snap.skipped[0].namespace.as_deref(), Some("elsewhere"));
        let graph = Graph::build(snap.objects, &snap.coverage);
        let settings = &graph.objects[nodes[2]];
        assert_eq!(settings.uid.to_string(), "44444444-4444-4444-4444-444444444444", "keeps the live uid");
        let found = findings(&graph, &nodes, None, 300);
        let dangling: Vec<&str> = found
            .iter()
            .filter(|f| f.kind == FindingKind::DanglingReference)
            .map(|f| graph.objects[f.object].name.as_str())
            .collect();
        assert_eq!(dangling, ["settings", "web-2"], "{found:?}");
    }
}
