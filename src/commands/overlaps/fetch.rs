//! I/O for `overlaps`: controllers with their selectors and pod templates (full
//! objects: the selector lives in the spec), pods metadata-only (labels and
//! ownerReferences are all that is needed).

use std::collections::BTreeMap;

use futures::future::join_all;
use serde::Deserialize;
use serde_json::Value;

use crate::analyze::intern::Interner;
use crate::analyze::overlap::{Controller, PodMeta};
use crate::analyze::selector::{LabelPairs, Selector};
use crate::connect::list::{Pages, encode, gather};
use crate::connect::{Accept, Session, Skipped};

/// (group/version, plural, kind) of every kind whose selectors are compared.
pub const KINDS: &[(&str, &str, &str)] = &[
    ("apps/v1", "deployments", "Deployment"),
    ("apps/v1", "replicasets", "ReplicaSet"),
    ("apps/v1", "statefulsets", "StatefulSet"),
    ("apps/v1", "daemonsets", "DaemonSet"),
    ("v1", "replicationcontrollers", "ReplicationController"),
    ("batch/v1", "jobs", "Job"),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget"),
];

#[derive(Default)]
pub struct Snapshot {
    pub controllers: Vec<Controller>,
    pub pods: Vec<PodMeta>,
    /// Kinds (or pods) that could not be listed, with why.
    pub skipped: Vec<Skipped>,
    /// The server's clock at the first list.
    pub server_time: Option<jiff::Timestamp>,
    /// Objects whose selector could not be understood.
    pub invalid: Vec<String>,
}

fn collection(group_version: &str, plural: &str, namespace: Option<&str>) -> String {
    let root =
        if group_version.contains('/') { format!("/apis/{group_version}") } else { format!("/api/{group_version}") };
    match namespace {
        Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
        None => format!("{root}/{plural}"),
    }
}

/// A controller (or pod) as `overlaps` reads it.
#[derive(Deserialize)]
pub(crate) struct Object {
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

/// The two parts of a controller's spec that are compared; the rest of the pod
/// template (containers, volumes...) is skipped while decoding, not built. And how many
/// pods it asks for, which `check` shows beside a lease holder's controller: read in the
/// same pass rather than in one more over the whole object.
#[derive(Deserialize, Default)]
struct Spec {
    #[serde(default)]
    selector: Option<Value>,
    #[serde(default)]
    template: Option<Template>,
    replicas: Option<i32>,
    parallelism: Option<i32>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status {
    desired_number_scheduled: Option<i32>,
}

impl Object {
    pub(crate) fn uid(&self) -> &str {
        &self.metadata.uid
    }

    /// For a manifest's object: the namespace it will be created in.
    pub(crate) fn set_namespace(&mut self, namespace: &str) {
        self.metadata.namespace = namespace.to_string();
    }

    /// How many pods a controller of `kind` asks for (None for a PodDisruptionBudget).
    pub(crate) fn replicas(&self, kind: &str) -> Option<i32> {
        replicas(kind, self.spec.replicas, self.spec.parallelism, self.status.desired_number_scheduled)
    }
}

/// How many pods a controller of `kind` asks for, from spec.replicas, spec.parallelism and
/// status.desiredNumberScheduled (None for a PodDisruptionBudget).
pub(crate) fn replicas(
    kind: &str,
    replicas: Option<i32>,
    parallelism: Option<i32>,
    scheduled: Option<i32>,
) -> Option<i32> {
    match kind {
        "DaemonSet" => scheduled,
        "Job" => parallelism,
        "PodDisruptionBudget" => None,
        _ => replicas.or(Some(1)),
    }
}

#[derive(Deserialize)]
pub(crate) struct Template {
    #[serde(default)]
    metadata: Option<TemplateMeta>,
}

impl Template {
    pub(crate) fn labels(&self) -> Option<&Value> {
        self.metadata.as_ref().and_then(|m| m.labels.as_ref())
    }
}

#[derive(Deserialize)]
struct TemplateMeta {
    #[serde(default)]
    labels: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    labels: LabelPairs,
    #[serde(default)]
    owner_references: Vec<OwnerRef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRef {
    kind: String,
    name: String,
    uid: String,
    #[serde(default)]
    controller: Option<bool>,
}

pub async fn snapshot(session: &Session, selector: Option<&str>) -> anyhow::Result<Snapshot> {
    let query = selector.map(|s| format!("labelSelector={}", encode(s))).unwrap_or_default();
    let lists = KINDS.iter().map(|(gv, plural, kind)| {
        let query = query.clone();
        async move {
            let listed = session
                .list_scoped::<Object>(session.scope(), |ns| collection(gv, plural, ns), &query, Accept::Json)
                .await;
            (*plural, *kind, listed)
        }
    });
    // Pods are made PodMetas page by page as they arrive, each page's decoded objects freed
    // as it is done, rather than all of them held until the last page.
    let to_pods = |pages: &mut Pages<PodMeta>, items: Vec<Object>, _read_at| {
        let mut names = Interner::default();
        gather(pages, items.into_iter().map(|p| pod_meta(p, &mut names)).collect());
    };
    let (lists, pods) = futures::join!(
        join_all(lists),
        session.list_scoped_digested(
            session.scope(),
            |ns| collection("v1", "pods", ns),
            "",
            Accept::MetadataList,
            to_pods
        )
    );
    let mut snap = Snapshot {
        controllers: Vec::new(),
        pods: Vec::new(),
        skipped: Vec::new(),
        invalid: Vec::new(),
        server_time: None,
    };
    for (plural, kind, listed) in lists {
        match listed {
            Ok((listed, fallback)) => {
                snap.skipped.extend(fallback.map(|f| f.note(plural)));
                snap.server_time = snap.server_time.or(listed.server_time);
                for obj in listed.items {
                    match controller(kind, obj) {
                        Ok(c) => snap.controllers.push(c),
                        Err(e) => snap.invalid.push(e),
                    }
                }
            }
            Err(e) if e.forbidden() => snap.skipped.push(Skipped::new(plural, None, "forbidden")),
            // The first error that is not about rights ends the command (exit 1).
            Err(e) => return Err(e.into()),
        }
    }
    match pods {
        Ok((listed, fallback)) => {
            snap.skipped.extend(fallback.map(|f| f.note("pods")));
            snap.server_time = snap.server_time.or(listed.server_time);
            snap.pods = listed.flattened().items;
        }
        Err(e) if e.forbidden() => snap.skipped.push(Skipped::new("pods", None, "forbidden (no live evidence)")),
        Err(e) => return Err(e.into()),
    }
    Ok(snap)
}

fn pod_meta(pod: Object, names: &mut Interner) -> PodMeta {
    let mut m = pod.metadata;
    let controller = m.owner_references.into_iter().find(|r| r.controller == Some(true));
    m.labels.share(names);
    PodMeta {
        namespace: names.get(&m.namespace),
        name: m.name,
        labels: m.labels,
        controller: controller.map(|r| (names.get(&r.kind), r.name, r.uid)),
    }
}

fn controller_ref(meta: &Meta) -> Option<(String, String, String)> {
    meta.owner_references
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| (r.kind.clone(), r.name.clone(), r.uid.clone()))
}

pub(crate) fn controller(kind: &str, obj: Object) -> Result<Controller, String> {
    let owner_uid = controller_ref(&obj.metadata).map(|(_, _, uid)| uid);
    let Meta { namespace, name, uid, .. } = obj.metadata;
    let template_labels = obj.spec.template.as_ref().and_then(Template::labels);
    controller_from(kind, Named { namespace, name, uid, owner_uid }, obj.spec.selector.as_ref(), template_labels)
}

/// Who a controller is: its namespace, name and uid, and its own controller's uid.
pub(crate) struct Named {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub owner_uid: Option<String>,
}

/// A controller of `kind` from its selector and its pod template's labels, however they were read.
pub(crate) fn controller_from(
    kind: &str,
    named: Named,
    selector: Option<&Value>,
    template_labels: Option<&Value>,
) -> Result<Controller, String> {
    let Named { namespace, name, uid, owner_uid } = named;
    let selector = match kind {
        // A plain map; the API defaults an empty one to the template's labels.
        "ReplicationController" => match selector {
            Some(selector @ Value::Object(_)) => Selector::from_map(&string_map(Some(selector))),
            _ => Selector::nothing(),
        },
        _ => label_selector(selector).map_err(|e| format!("{kind} {namespace}/{name}: {e}"))?,
    };
    let template_labels = match kind {
        "PodDisruptionBudget" => None,
        _ => Some(string_map(template_labels)),
    };
    Ok(Controller { kind: kind.to_string(), owner_uid, namespace, name, uid, selector, template_labels })
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

/// A metav1.LabelSelector: null selects nothing, {} everything.
pub fn label_selector(v: Option<&Value>) -> Result<Selector, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Selector::nothing());
    };
    let labels = v.get("matchLabels").map(|m| string_map(Some(m)));
    let mut expressions = Vec::new();
    for e in v.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default().to_string();
        let op = e.get("operator").and_then(Value::as_str).unwrap_or_default().to_string();
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        expressions.push((key, op, values));
    }
    Selector::from_parts(labels.as_ref(), &expressions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replicas_by_kind_from_the_same_read() {
        let obj: Object = serde_json::from_value(json!({
            "metadata": {"name": "x", "uid": "u1"},
            "spec": {"replicas": 3, "parallelism": 2, "selector": {"matchLabels": {"app": "x"}}},
            "status": {"desiredNumberScheduled": 5}
        }))
        .unwrap();
        let by_kind: Vec<Option<i32>> =
            ["Deployment", "Job", "DaemonSet", "PodDisruptionBudget"].iter().map(|k| obj.replicas(k)).collect();
        assert_eq!((obj.uid(), by_kind), ("u1", vec![Some(3), Some(2), Some(5), None]));
        let bare: Object = serde_json::from_value(json!({"metadata": {"name": "y"}})).unwrap();
        assert_eq!(bare.replicas("StatefulSet"), Some(1));
    }

    #[test]
    fn label_selector_null_empty_and_full() {
        assert_eq!(label_selector(None).unwrap(), Selector::nothing());
        assert_eq!(label_selector(Some(&Value::Null)).unwrap(), Selector::nothing());
        assert_eq!(label_selector(Some(&json!({}))).unwrap(), Selector::everything());
        let s = label_selector(Some(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]
        })))
        .unwrap();
        assert_eq!(s.to_string(), "app=web,tier!=db");
        assert!(label_selector(Some(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))).is_err());
    }
}
