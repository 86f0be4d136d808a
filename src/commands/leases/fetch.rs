//! I/O for `leases`: the Lease list (with the server's clock), the pods behind
//! holders and their controllers, node objects for expired heartbeats, and
//! LeaseCandidates when the server serves them.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use serde::Deserialize;

use crate::analyze::lease::LeaseSnapshot;
use crate::analyze::lease_report::{CandidateSnapshot, HolderPod, Workload};
use crate::connect::list::{encode, list_all, list_names};
use crate::connect::pace::FAN_OUT;
use crate::connect::{Accept, Fallback, RequestError, Session, Skipped};

pub fn collection_path(session: &Session) -> String {
    leases_in((!session.all_namespaces).then_some(session.namespace.as_str()))
}

/// The Lease collection in a namespace, or across all namespaces.
pub fn leases_in(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", encode(ns)),
        None => "/apis/coordination.k8s.io/v1/leases".to_string(),
    }
}

/// The Lease list, the server's clock at the time, and, when -A had to read
/// namespace by namespace, how.
pub async fn leases(
    session: &Session,
    selector: Option<&str>,
) -> Result<(Vec<LeaseSnapshot>, Option<Timestamp>, Option<Fallback>), RequestError> {
    let query = selector.map(|s| format!("labelSelector={}", encode(s))).unwrap_or_default();
    let (listed, fallback) = session.list_scoped::<LeaseItem>(session.scope(), leases_in, &query, Accept::Json).await?;
    let server_time = listed.server_time;
    Ok((listed.dated().map(|(item, read_at)| snapshot(item, read_at)).collect(), server_time, fallback))
}

/// The parts of a Lease the command reads. Decoding only these (not managedFields or
/// the rest of the metadata) is most of what makes a large list cheap to read.
#[derive(Deserialize)]
pub struct LeaseItem {
    #[serde(default)]
    metadata: LeaseMeta,
    #[serde(default)]
    spec: Option<LeaseSpec>,
}

#[derive(Deserialize, Default)]
struct LeaseMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LeaseSpec {
    holder_identity: Option<String>,
    lease_duration_seconds: Option<i32>,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    lease_transitions: Option<i32>,
    strategy: Option<String>,
    preferred_holder: Option<String>,
}

/// The lease as the analyses take it; `read_at` is the Date of the answer that carried it.
pub fn snapshot(lease: LeaseItem, read_at: Option<Timestamp>) -> LeaseSnapshot {
    let meta = lease.metadata;
    let spec = lease.spec.unwrap_or_default();
    LeaseSnapshot {
        namespace: meta.namespace,
        name: meta.name,
        labels: meta.labels.unwrap_or_default().into_iter().collect(),
        holder: spec.holder_identity,
        duration_seconds: spec.lease_duration_seconds,
        acquire_time: spec.acquire_time.map(|t| t.0),
        renew_time: spec.renew_time.map(|t| t.0),
        transitions: spec.lease_transitions,
        strategy: spec.strategy,
        preferred_holder: spec.preferred_holder,
        read_at,
    }
}

/// Looks up each (namespace, pod) and walks its controller chain to the top workload.
pub async fn holder_pods(
    session: &Session,
    wanted: BTreeSet<(String, String)>,
    skipped: &mut Vec<Skipped>,
) -> BTreeMap<(String, String), HolderPod> {
    let results: Vec<_> = stream::iter(wanted)
        .map(|(ns, name)| async move {
            let found = holder_pod(session, &ns, &name).await;
            ((ns, name), found)
        })
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    let mut out = BTreeMap::new();
    for ((ns, name), found) in results {
        match found {
            Ok(pod) => {
                out.insert((ns, name), pod);
            }
            Err(e) => {
                let note = if e.forbidden() {
                    Skipped::new("pods", Some(&ns), "forbidden")
                } else {
                    Skipped::new(format!("pod {name}"), Some(&ns), e.to_string())
                };
                if !skipped.contains(&note) {
                    skipped.push(note);
                }
                out.insert(
                    (ns, name.clone()),
                    HolderPod { name, exists: None, phase: None, ready: None, controller: None },
                );
            }
        }
    }
    out
}

async fn holder_pod(session: &Session, ns: &str, name: &str) -> Result<HolderPod, RequestError> {
    let pod: Pod = match session.get_json(&format!("/api/v1/namespaces/{ns}/pods/{name}")).await {
        Ok((pod, _)) => pod,
        Err(e) if e.not_found() => {
            return Ok(HolderPod {
                name: name.into(),
                exists: Some(false),
                phase: None,
                ready: None,
                controller: None,
            });
        }
        Err(e) => return Err(e),
    };
    let status = pod.status.unwrap_or_default();
    let ready = status.conditions.unwrap_or_default().iter().find(|c| c.type_ == "Ready").map(|c| c.status == "True");
    let controller = match controller_of(pod.metadata.owner_references.as_deref()) {
        Some(owner) => top_workload(session, ns, owner).await,
        None => None,
    };
    Ok(HolderPod { name: name.into(), exists: Some(true), phase: status.phase, ready, controller })
}

fn controller_of(refs: Option<&[OwnerReference]>) -> Option<&OwnerReference> {
    refs?.iter().find(|r| r.controller == Some(true))
}

/// Follows controller references upwards (Pod -> ReplicaSet -> Deployment) a few levels.
async fn top_workload(session: &Session, ns: &str, first: &OwnerReference) -> Option<Workload> {
    #[derive(Deserialize, Default)]
    struct Obj {
        #[serde(default)]
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        #[serde(default)]
        spec: Option<serde_json::Value>,
        #[serde(default)]
        status: Option<serde_json::Value>,
    }
    let mut current =
        Workload { kind: first.kind.clone(), name: first.name.clone(), namespace: ns.into(), replicas: None };
    let mut api_version = first.api_version.clone();
    for _ in 0..4 {
        let Some(plural) = plural_of(&current.kind) else {
            return Some(current);
        };
        let base =
            if api_version.contains('/') { format!("/apis/{api_version}") } else { format!("/api/{api_version}") };
        let path = format!("{base}/namespaces/{ns}/{plural}/{}", current.name);
        let Ok((obj, _)) = session.get_json::<Obj>(&path).await else {
            return Some(current);
        };
        current.replicas = replicas(&current.kind, obj.spec.as_ref(), obj.status.as_ref());
        match controller_of(obj.metadata.owner_references.as_deref()) {
            Some(owner) => {
                current = Workload {
                    kind: owner.kind.clone(),
                    name: owner.name.clone(),
                    namespace: ns.into(),
                    replicas: None,
                };
                api_version = owner.api_version.clone();
            }
            None => return Some(current),
        }
    }
    Some(current)
}

fn plural_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "ReplicaSet" => "replicasets",
        "Deployment" => "deployments",
        "StatefulSet" => "statefulsets",
        "DaemonSet" => "daemonsets",
        "Job" => "jobs",
        "CronJob" => "cronjobs",
        "ReplicationController" => "replicationcontrollers",
        _ => return None,
    })
}

fn replicas(kind: &str, spec: Option<&serde_json::Value>, status: Option<&serde_json::Value>) -> Option<i32> {
    let int = |v: Option<&serde_json::Value>, key: &str| v?.get(key)?.as_i64().map(|n| n as i32);
    match kind {
        "DaemonSet" => int(status, "desiredNumberScheduled"),
        "Job" => int(spec, "parallelism"),
        "CronJob" => None,
        // apps/v1 defaults replicas to 1 when unset.
        _ => int(spec, "replicas").or(Some(1)),
    }
}

/// Beyond this many names, one metadata-only list of Nodes beats a GET per node.
const NODE_GETS: usize = 20;

pub async fn nodes_exist(
    session: &Session,
    names: Vec<String>,
    skipped: &mut Vec<Skipped>,
) -> BTreeMap<String, Option<bool>> {
    if names.len() > NODE_GETS {
        match list_names(&session.conn, "/api/v1/nodes").await {
            Ok(listed) => {
                let present: BTreeSet<String> = listed.into_iter().collect();
                return names.into_iter().map(|n| (n.clone(), Some(present.contains(&n)))).collect();
            }
            // Listing may be forbidden where a GET is not: ask one by one.
            Err(e) if e.forbidden() => {}
            Err(e) => {
                skipped.push(Skipped::new("nodes", None, e.to_string()));
                return names.into_iter().map(|n| (n, None)).collect();
            }
        }
    }
    let results: Vec<_> = stream::iter(names)
        .map(|name| async move {
            let r = session.conn.get(&format!("/api/v1/nodes/{name}"), Accept::Metadata).await;
            (name, r)
        })
        .buffer_unordered(FAN_OUT)
        .collect()
        .await;
    let mut out = BTreeMap::new();
    for (name, r) in results {
        let exists = match r {
            Ok(_) => Some(true),
            Err(e) if e.not_found() => Some(false),
            Err(e) => {
                let note = if e.forbidden() {
                    Skipped::new("nodes", None, "forbidden")
                } else {
                    Skipped::new(format!("node {name}"), None, e.to_string())
                };
                if !skipped.contains(&note) {
                    skipped.push(note);
                }
                None
            }
        };
        out.insert(name, exists);
    }
    out
}

/// A LeaseCandidate (coordination.k8s.io v1beta1 or v1alpha2: the same fields).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default)]
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    #[serde(default)]
    spec: CandidateSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CandidateSpec {
    #[serde(default)]
    lease_name: String,
    binary_version: Option<String>,
    emulation_version: Option<String>,
    strategy: Option<String>,
    ping_time: Option<Timestamp>,
    renew_time: Option<Timestamp>,
}

impl Candidate {
    pub(crate) fn snapshot(self) -> CandidateSnapshot {
        CandidateSnapshot {
            namespace: self.metadata.namespace.unwrap_or_default(),
            name: self.metadata.name.unwrap_or_default(),
            lease_name: self.spec.lease_name,
            binary_version: self.spec.binary_version,
            emulation_version: self.spec.emulation_version,
            strategy: self.spec.strategy,
            ping_time: self.spec.ping_time,
            renew_time: self.spec.renew_time,
        }
    }
}

/// LeaseCandidates from whichever version the server serves (v1, else v1beta1, else v1alpha2);
/// empty, silently, when it serves neither.
pub async fn candidates(session: &Session, skipped: &mut Vec<Skipped>) -> Vec<CandidateSnapshot> {
    #[derive(Deserialize)]
    struct ResourceList {
        #[serde(default)]
        resources: Vec<Resource>,
    }
    #[derive(Deserialize)]
    struct Resource {
        name: String,
    }
    for version in ["v1", "v1beta1", "v1alpha2"] {
        let base = format!("/apis/coordination.k8s.io/{version}");
        let Ok((list, _)) = session.get_json::<ResourceList>(&base).await else {
            continue;
        };
        if !list.resources.iter().any(|r| r.name == "leasecandidates") {
            continue;
        }
        let path = if session.all_namespaces {
            format!("{base}/leasecandidates")
        } else {
            format!("{base}/namespaces/{}/leasecandidates", session.namespace)
        };
        return match list_all::<Candidate>(&session.conn, &path, "", Accept::Json).await {
            Ok(listed) => listed.items.into_iter().map(Candidate::snapshot).collect(),
            Err(e) => {
                skipped.push(Skipped::new(
                    "leasecandidates",
                    None,
                    if e.forbidden() { "forbidden".into() } else { e.to_string() },
                ));
                Vec::new()
            }
        };
    }
    Vec::new()
}
