//! Field ownership from managedFields: who owns which field, and where managers
//! contend. Pure: entries come decoded from [`super::fieldsv1`].

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use super::fieldsv1::{Element, FieldPath};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    /// "" for the main resource, else status, scale, ...
    pub subresource: String,
    pub api_version: String,
    pub time: Option<Timestamp>,
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

/// "gitops", or "kubectl (scale)" for a write through a subresource.
pub fn manager_label(manager: &str, subresource: &str) -> String {
    if subresource.is_empty() { manager.to_string() } else { format!("{manager} ({subresource})") }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contest {
    pub path: String,
    pub kind: ContestKind,
    pub managers: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owned {
    pub path: String,
    /// Indices into the entry list.
    #[serde(skip)]
    pub entries: Vec<usize>,
    pub managers: Vec<String>,
}

/// Every owned path with its owners, sorted by path.
pub fn ownership(entries: &[Entry]) -> BTreeMap<&FieldPath, Vec<usize>> {
    let mut owners: BTreeMap<&FieldPath, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        for p in &e.paths {
            owners.entry(p).or_default().push(i);
        }
    }
    owners
}

pub fn contests(entries: &[Entry]) -> Vec<Contest> {
    let owners = ownership(entries);
    let mut out = Vec::new();
    let names = |ids: &[usize]| ids.iter().map(|&i| entries[i].label()).collect::<Vec<_>>();
    for (path, ids) in &owners {
        if ids.len() > 1 {
            let applies = ids.iter().filter(|&&i| entries[i].is_apply()).count();
            let kind = match (applies, ids.len() - applies) {
                (_, 0) => ContestKind::SharedApply,
                (0, _) => ContestKind::UpdateAndUpdate,
                _ => ContestKind::ApplyAndUpdate,
            };
            out.push(Contest { path: path.to_string(), kind, managers: names(ids) });
        }
        let top = match path.0.first() {
            Some(Element::Field(f)) => f.as_str(),
            _ => "",
        };
        for &i in ids {
            let e = &entries[i];
            if top == "status" && e.subresource.is_empty() && (e.is_apply() || bypasses_status(entries, e)) {
                out.push(Contest {
                    path: path.to_string(),
                    kind: ContestKind::StatusViaMainResource,
                    managers: vec![e.label()],
                });
            }
            if top != "status" && top != "metadata" && e.subresource == "status" {
                out.push(Contest {
                    path: path.to_string(),
                    kind: ContestKind::SpecViaStatus,
                    managers: vec![e.label()],
                });
            }
        }
        // Update-owned only, while an Apply manager owns a sibling under the same parent
        // below the top level (spec.replicas next to the applied spec.template).
        // Under .metadata only siblings inside one map count (labels, annotations): the
        // metadata fields themselves are independent.
        let parent = &path.0[..path.0.len().saturating_sub(1)];
        let metadata_root = matches!(parent, [Element::Field(f)] if f == "metadata");
        if path.0.len() >= 2 && top != "status" && !metadata_root && ids.iter().all(|&i| !entries[i].is_apply()) {
            let appliers: Vec<String> = entries
                .iter()
                .filter(|e| e.is_apply() && e.paths.iter().any(|p| p.0.starts_with(parent) && p != *path))
                .map(Entry::label)
                .collect();
            if !appliers.is_empty() {
                let mut managers = names(ids);
                managers.extend(appliers);
                out.push(Contest { path: path.to_string(), kind: ContestKind::UpdateInsideApply, managers });
            }
        }
    }
    out
}

/// Another manager writes status through the status subresource, so it exists and the
/// object's controller uses it: `e` writing status through the main resource is not the
/// controller. (A CRD without a status subresource leaves its controller no other way.)
fn bypasses_status(entries: &[Entry], e: &Entry) -> bool {
    entries.iter().any(|o| o.subresource == "status" && o.manager != e.manager)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fieldsv1::decode;
    use serde_json::json;

    fn entry(manager: &str, op: &str, sub: &str, fields: serde_json::Value) -> Entry {
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
