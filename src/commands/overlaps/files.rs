//! `overlaps -f`: manifests laid over the live controllers and pods before they are applied.
//! An object of the files replaces the live one of the same kind, namespace and name (keeping
//! its uid, so that its live ReplicaSets stay its children), a new one is added; a namespaced
//! object without a namespace takes -n's or the context's. Only the findings that involve an
//! object from the files are reported, each object named with its file and document.

use std::collections::HashMap;

use serde::Serialize;

use super::fetch::{KINDS, Object, Snapshot, controller};
use crate::analyze::overlap::{Analysis, PodMeta};
use crate::analyze::selector::LabelPairs;
use crate::connect::Skipped;
use crate::source::files::{Manifest, Manifests};

/// An object of the files that overlaps compared, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub file: String,
    /// The document's number in the file, from 1.
    pub document: usize,
    /// A live object of the same kind, namespace and name exists: the file's replaces it.
    pub replaces: bool,
}

/// "from the files: Deployment shop/canary (release.yaml#1), ...": the line the tables of
/// overlaps -f and owners -f end with (no namespace shown for a cluster-scoped object).
pub fn files_line(laid: &[FileObject]) -> String {
    let objects: Vec<String> = laid
        .iter()
        .map(|f| {
            let replaces = if f.replaces { ", in place of the live one" } else { "" };
            let place = if f.namespace.is_empty() { String::new() } else { format!("{}/", f.namespace) };
            format!("{} {place}{} ({}#{}{replaces})", f.kind, f.name, f.file, f.document)
        })
        .collect();
    format!("from the files: {}", objects.join(", "))
}

/// (namespace, kind, name) -> the file object's index.
pub type FileIndex = HashMap<(String, String, String), usize>;

/// The objects of the files laid over `snap`. `default_namespace` is where an object without
/// a namespace goes; `in_scope` says whether a namespace's live objects were read. Returns the
/// file objects compared, and one line for each left out.
pub fn lay(
    snap: &mut Snapshot,
    manifests: &Manifests,
    default_namespace: &str,
    in_scope: impl Fn(&str) -> bool,
) -> (Vec<FileObject>, Vec<String>) {
    let mut laid = Vec::new();
    let mut notes = Vec::new();
    let mut out_of_scope: Vec<String> = Vec::new();
    for m in &manifests.objects {
        let namespace = m.namespace.clone().unwrap_or_else(|| default_namespace.to_string());
        let is_pod = m.kind == "Pod" && m.group().is_empty();
        let Some(&(_, _, kind)) = KINDS
            .iter()
            .find(|(gv, _, kind)| *kind == m.kind && group_of(gv) == m.group())
            .filter(|_| !is_pod)
            .or(is_pod.then_some(&("v1", "pods", "Pod")))
        else {
            continue; // not a kind overlaps compares
        };
        if !in_scope(&namespace) && !out_of_scope.contains(&namespace) {
            out_of_scope.push(namespace.clone());
        }
        let replaces =
            if is_pod { lay_pod(snap, m, &namespace) } else { lay_controller(snap, m, kind, &namespace, &mut notes) };
        let Some(replaces) = replaces else { continue };
        laid.push(FileObject {
            kind: kind.to_string(),
            namespace,
            name: m.name.clone(),
            file: m.origin.file.clone(),
            document: m.origin.document,
            replaces,
        });
    }
    // What the files name outside the namespace read: its live objects are missing from the
    // comparison, so the run is incomplete (exit 4 under --exit-code when nothing is found).
    for namespace in out_of_scope {
        snap.skipped.push(Skipped::new(
            "controllers and pods",
            Some(&namespace),
            format!("not read (outside -n; -n {namespace} or -A reads it): the files' objects there are compared with each other only"),
        ));
    }
    (laid, notes)
}

fn group_of(group_version: &str) -> &str {
    group_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// Some(whether it replaced a live one), None when it could not be read.
fn lay_controller(
    snap: &mut Snapshot,
    m: &Manifest,
    kind: &str,
    namespace: &str,
    notes: &mut Vec<String>,
) -> Option<bool> {
    let mut object: Object = match serde_json::from_value(m.object.clone()) {
        Ok(object) => object,
        Err(e) => {
            notes.push(format!("{}: {kind} {} left out: {e}", m.origin, m.name));
            return None;
        }
    };
    object.set_namespace(namespace);
    let live = snap.controllers.iter().position(|c| c.kind == kind && c.namespace == namespace && c.name == m.name);
    let mut laid = match controller(kind, object) {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("{}: {e}", m.origin));
            return None;
        }
    };
    match live {
        Some(at) => {
            let live = snap.controllers.remove(at);
            laid.uid = live.uid;
            laid.owner_uid = laid.owner_uid.or(live.owner_uid);
        }
        // No uid yet: one no live object can name as its owner.
        None => laid.uid = format!("file:{}", m.origin),
    }
    snap.controllers.push(laid);
    Some(live.is_some())
}

fn lay_pod(snap: &mut Snapshot, m: &Manifest, namespace: &str) -> Option<bool> {
    let labels: LabelPairs =
        m.object.pointer("/metadata/labels").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let controller = m
        .object
        .pointer("/metadata/ownerReferences")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("controller").and_then(serde_json::Value::as_bool) == Some(true))
        .map(|r| {
            let text = |k: &str| r.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
            (text("kind").as_str().into(), text("name"), text("uid"))
        });
    let live = snap.pods.iter().position(|p| &*p.namespace == namespace && p.name == m.name);
    if let Some(at) = live {
        snap.pods.remove(at);
    }
    snap.pods.push(PodMeta { namespace: namespace.into(), name: m.name.clone(), labels, controller });
    Some(live.is_some())
}

/// The index of the file objects, to tell which findings involve one.
pub fn index(laid: &[FileObject]) -> FileIndex {
    laid.iter().enumerate().map(|(i, f)| ((f.namespace.clone(), f.kind.clone(), f.name.clone()), i)).collect()
}

/// Keeps the findings that involve an object from the files: a pair with one, a pod under
/// several budgets when it or one of the budgets comes from the files.
pub fn only_theirs(analysis: &mut Analysis, files: &FileIndex) {
    let has =
        |ns: &str, kind: &str, name: &str| files.contains_key(&(ns.to_string(), kind.to_string(), name.to_string()));
    analysis.findings.retain(|f| has(f.namespace, f.a.kind, f.a.name) || has(f.namespace, f.b.kind, f.b.name));
    // Each pair told from the side of its object of the files.
    for f in &mut analysis.findings {
        if !has(f.namespace, f.a.kind, f.a.name) {
            f.swap();
        }
    }
    analysis.disjoint.retain(|d| has(d.namespace, d.a.kind, d.a.name) || has(d.namespace, d.b.kind, d.b.name));
    analysis.pdb_conflicts.retain(|c| {
        has(c.namespace, "Pod", c.pod) || c.budgets.iter().any(|b| has(c.namespace, "PodDisruptionBudget", b))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::overlap::tests::{ctl_in, pod_in};
    use crate::analyze::overlap::{Options, analyze};
    use crate::source::files::parse_into;

    fn manifests(text: &str) -> Manifests {
        let mut m = Manifests::default();
        parse_into(&mut m, "new.yaml", text);
        m
    }

    fn live() -> Snapshot {
        let stable = [("app", "shop"), ("track", "stable")];
        Snapshot {
            controllers: vec![ctl_in("shop", "Deployment", "stable", "app=shop,track=stable", Some(&stable))],
            pods: vec![
                pod_in("shop", "stable-1", &stable, Some("stable-rs")),
                pod_in("shop", "stable-2", &stable, Some("stable-rs")),
            ],
            skipped: Vec::new(),
            server_time: None,
            invalid: Vec::new(),
        }
    }

    const CANARY_AND_BUDGETS: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: canary}
spec:
  selector: {matchLabels: {app: shop}}
  template: {metadata: {labels: {app: shop, track: canary}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: shop}
spec: {selector: {matchLabels: {app: shop}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: stable}
spec: {selector: {matchLabels: {track: stable}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
";

    /// A canary whose selector takes the live stable pods, and two budgets over them: each
    /// finding names an object of the files; the live pair of budgets is not re-reported.
    #[test]
    fn the_files_findings_against_the_live_state() {
        let mut snap = live();
        let (laid, notes) = lay(&mut snap, &manifests(CANARY_AND_BUDGETS), "shop", |ns| ns == "shop");
        assert!(notes.is_empty(), "{notes:?}");
        let names: Vec<(&str, usize, bool)> = laid.iter().map(|f| (f.name.as_str(), f.document, f.replaces)).collect();
        assert_eq!(names, [("canary", 1, false), ("shop", 2, false), ("stable", 3, false)]);
        let mut analysis =
            analyze(&snap.controllers, &snap.pods, &Options { cross_kind: false, explain: false, sample: true });
        only_theirs(&mut analysis, &index(&laid));
        let pairs: Vec<(&str, &str)> = analysis.findings.iter().map(|f| (f.a.name, f.b.name)).collect();
        assert!(pairs.contains(&("canary", "stable")) || pairs.contains(&("stable", "canary")), "{pairs:?}");
        let canary = analysis.findings.iter().find(|f| f.a.name == "canary" || f.b.name == "canary").unwrap();
        assert_eq!(canary.severity, crate::analyze::overlap::Severity::Error);
        assert_eq!(canary.shared_pod_counts.total, 2, "the live stable pods");
        let pods: Vec<&str> = analysis.pdb_conflicts.iter().map(|c| c.pod).collect();
        assert_eq!(pods, ["stable-1", "stable-2"]);
    }

    /// The same name replaces the live object and keeps its uid; a namespace outside what
    /// was read makes the run incomplete.
    #[test]
    fn the_same_identity_replaces_and_other_namespaces_are_said() {
        let mut snap = live();
        let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: stable, namespace: shop}
spec:
  selector: {matchLabels: {app: shop, track: stable, v: '2'}}
  template: {metadata: {labels: {app: shop, track: stable, v: '2'}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: elsewhere, namespace: other}
spec:
  selector: {matchLabels: {app: x}}
  template: {metadata: {labels: {app: x}}}
";
        let (laid, notes) = lay(&mut snap, &manifests(text), "shop", |ns| ns == "shop");
        assert_eq!(snap.controllers.len(), 2);
        let stable = snap.controllers.iter().find(|c| c.name == "stable").unwrap();
        assert_eq!(
            (stable.uid.as_str(), stable.selector.to_string()),
            ("uid-stable", "app=shop,track=stable,v=2".into())
        );
        assert!(laid[0].replaces && !laid[1].replaces);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(snap.skipped.len(), 1, "the other namespace was not read: incomplete");
        assert_eq!(snap.skipped[0].namespace.as_deref(), Some("other"));
    }
}
