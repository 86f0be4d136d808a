//! `check -f` / `-k`: manifests laid over the live state before they are applied. The live
//! lists are read as for `check` (the mechanisms the files can affect: overlaps, owners and
//! fields), the files' objects replace the live ones of the same kind, namespace and name or
//! join them (a namespaced object without a namespace takes -n's or the context's), and the
//! analyses report what involves an object of the files, each finding naming its file and
//! document. Leases and trace judge what runs, which files do not say: they are not run.

use std::collections::HashMap;
use std::path::Path;

use futures::StreamExt as _;
use serde_json::Value;

use super::{CheckArgs, Plan, count_by_kind, fetch};
use crate::analyze::adoption;
use crate::analyze::apply_takes::{self, KUBECTL_MANAGERS};
use crate::analyze::check::{self, Finding, Mechanism, NotCovered, type_name};
use crate::analyze::overlap::{self, Options};
use crate::analyze::owner_graph::{self, Graph};
use crate::analyze::resource_ref::ApiResource;
use crate::commands::overlaps::fetch::Snapshot as OverlapSnapshot;
use crate::commands::overlaps::files as overlap_files;
use crate::commands::owners::fetch::Snapshot as OwnerSnapshot;
use crate::commands::owners::files as owner_files;
use crate::connect::{Session, Skipped};
use crate::error::usage;
use crate::source::files::{Manifest, Manifests, parse_into};

/// The manifests of -f or -k; None without either.
pub fn read(args: &CheckArgs) -> anyhow::Result<Option<Manifests>> {
    if let Some(dir) = &args.kustomize {
        return kustomize(dir).map(Some);
    }
    if args.filename.is_empty() {
        return Ok(None);
    }
    crate::source::files::read(&args.filename, args.recursive).map(Some).map_err(|e| usage(e.to_string()))
}

/// `kubectl kustomize DIR`'s output, as `kubectl apply -k` builds it. Its documents are
/// named "DIR (kustomize)#N".
fn kustomize(dir: &Path) -> anyhow::Result<Manifests> {
    let kubectl = std::env::var_os("KUBECTL").unwrap_or_else(|| "kubectl".into());
    let out = std::process::Command::new(&kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(|e| usage(format!("-k {}: cannot run {}: {e}", dir.display(), Path::new(&kubectl).display())))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed").trim().to_string();
        return Err(usage(format!("-k {}: kubectl kustomize: {why}", dir.display())));
    }
    let mut manifests = Manifests::default();
    parse_into(&mut manifests, &format!("{} (kustomize)", dir.display()), &String::from_utf8_lossy(&out.stdout));
    if manifests.objects.is_empty() {
        return Err(usage(format!("-k {}: kubectl kustomize built no object", dir.display())));
    }
    Ok(manifests)
}

/// The mechanisms -f runs, of those asked for.
pub fn plan(asked: Plan, offline: bool) -> Plan {
    Plan {
        leases: false,
        trace: false,
        history: false,
        owners: asked.owners && !offline,
        fields: asked.fields && !offline,
        overlaps: asked.overlaps,
        marks_labels: asked.marks_labels,
    }
}

/// What the asked mechanisms -f cannot check, and why: offline, owners and fields need the
/// live objects. (Leases and trace judge what runs: nothing in the files runs yet, so they
/// have nothing to say of them and are not run; [`NOT_RUN`] says so.)
pub fn not_covered(asked: Plan, offline: bool) -> Vec<NotCovered> {
    let mut out = Vec::new();
    let mut say = |m: Mechanism, why: &str| out.push(NotCovered { mechanism: m, why: why.to_string() });
    if offline && asked.owners {
        say(Mechanism::Owners, "--offline: the owners the files name live in the cluster");
    }
    if offline && asked.fields {
        say(Mechanism::Fields, "--offline: who owns the fields is the live objects' managedFields");
    }
    out
}

/// Said on stderr when leases or trace were asked for (by default they are).
pub const NOT_RUN: &str = "leases and trace judge what runs: they are not run on files (run check without -f for them)";

/// What the files add to a report.
#[derive(Default)]
pub struct Laid {
    pub findings: Vec<Finding>,
    pub counts: super::Counts,
    pub notes: Vec<String>,
}

/// Lays the files over `snap` and runs overlaps and owners on the result (pure).
pub fn analyze(
    snap: &mut fetch::Snapshot,
    manifests: &Manifests,
    resources: &[ApiResource],
    default_namespace: &str,
    in_scope: &dyn Fn(&str) -> bool,
    plan: &Plan,
    stuck_after: i64,
) -> Laid {
    let mut laid = Laid::default();
    if plan.overlaps {
        let mut o = OverlapSnapshot {
            controllers: std::mem::take(&mut snap.controllers),
            pods: fetch::flatten(std::mem::take(&mut snap.pods)),
            skipped: Vec::new(),
            server_time: snap.server_time,
            invalid: Vec::new(),
        };
        let (objects, notes) = overlap_files::lay(&mut o, manifests, default_namespace, in_scope);
        laid.notes.extend(notes);
        snap.skipped.append(&mut o.skipped);
        let index = overlap_files::index(&objects);
        let ours = |ns: &str, kind: &str, name: &str| index.contains_key(&(ns.into(), kind.into(), name.into()));
        // Every kind against every kind: a StatefulSet of the files over a live Deployment's pods.
        let mut analysis =
            overlap::analyze(&o.controllers, &o.pods, &Options { cross_kind: true, explain: false, sample: false });
        overlap_files::only_theirs(&mut analysis, &index);
        // A Deployment over another's ReplicaSet says again what the pair of Deployments says.
        let owned_rs = |kind: &str, name: &str, ns: &str| {
            kind == "ReplicaSet"
                && o.controllers
                    .iter()
                    .any(|c| c.kind == kind && c.name == name && c.namespace == ns && c.owner_uid.is_some())
        };
        analysis.findings.retain(|f| !(f.a.kind == "Deployment" && owned_rs(f.b.kind, f.b.name, f.namespace)));
        // A group of pods under several budgets is named by its first budget: its file is
        // that of whichever budget or pod of the group came from the files.
        let groups: Vec<Option<(String, String, String)>> = overlap::pdb_groups(&analysis.pdb_conflicts)
            .into_iter()
            .map(|((ns, budgets), pods)| {
                let budget =
                    budgets.iter().find(|b| ours(ns, "PodDisruptionBudget", b)).map(|b| ("PodDisruptionBudget", *b));
                let pod = pods.iter().find(|p| ours(ns, "Pod", p)).map(|p| ("Pod", *p));
                budget.or(pod).map(|(kind, name)| (ns.to_string(), kind.to_string(), name.to_string()))
            })
            .collect();
        let mut found = check::overlaps(&analysis);
        let mut groups = groups.into_iter();
        for f in found.iter_mut().filter(|f| f.code == crate::analyze::codes::SEVERAL_DISRUPTION_BUDGETS) {
            if let Some(Some((ns, kind, name))) = groups.next() {
                f.file = index.get(&(ns, kind, name)).map(|&i| format!("{}#{}", objects[i].file, objects[i].document));
            }
        }
        let adopted = adoption::adoptions(&o.controllers, &o.pods, |c| ours(&c.namespace, &c.kind, &c.name));
        found.extend(check::adoptions(&adopted));
        laid.findings.extend(found);
        count_by_kind(&mut laid.counts, Mechanism::Overlaps, objects.iter().map(|f| f.kind.as_str()));
    }
    if plan.owners {
        let mut w = OwnerSnapshot {
            objects: std::mem::take(&mut snap.objects),
            coverage: std::mem::take(&mut snap.coverage),
            skipped: Vec::new(),
            server_time: snap.server_time,
        };
        let (objects, nodes, notes) = owner_files::lay(&mut w, manifests, resources, default_namespace, in_scope);
        laid.notes.extend(notes);
        snap.skipped.append(&mut w.skipped);
        let graph = Graph::build(w.objects, &w.coverage);
        let found = owner_graph::findings(&graph, &nodes, w.server_time, stuck_after);
        laid.findings.extend(check::owners(&graph, &found));
        count_by_kind(&mut laid.counts, Mechanism::Owners, objects.iter().map(|f| f.kind.as_str()));
    }
    name_files(&mut laid.findings, manifests, default_namespace);
    laid
}

/// Sets each finding's file from the object it names, where not set already.
fn name_files(findings: &mut [Finding], manifests: &Manifests, default_namespace: &str) {
    let mut origins: HashMap<(String, String), String> = HashMap::new();
    for m in &manifests.objects {
        let object = type_name(&m.kind, m.group(), &m.name);
        let ns = m.namespace.clone().unwrap_or_else(|| default_namespace.to_string());
        origins.entry((ns, object.clone())).or_insert_with(|| m.origin.to_string());
        // A cluster-scoped object's findings carry no namespace.
        origins.entry((String::new(), object)).or_insert_with(|| m.origin.to_string());
    }
    for f in findings.iter_mut().filter(|f| f.file.is_none()) {
        let key = (f.namespace.clone().unwrap_or_default(), f.object.clone());
        f.file = origins.get(&key).cloned();
    }
}

/// Objects a -f run reads live objects of concurrently, for their managedFields.
const GETS_AT_ONCE: usize = 8;

/// What `apply_takes` found, could not read, counted, and has to say.
pub struct Takes {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    pub counts: super::Counts,
    pub warnings: Vec<String>,
}

/// The fields applying each object of the files would take from other managers: each
/// object that exists is read (a GET; Secrets and ConfigMaps are left out, their values are
/// never read) and its managedFields compared with the file. With `dry_run`, the server's own
/// answer instead, to a server-side apply of the file as a dry run (nothing persisted), where
/// the user may patch; where not, the managedFields' answer and a warning. What cannot be
/// read is skipped.
pub async fn apply_takes(
    session: &Session,
    manifests: &Manifests,
    resources: &[ApiResource],
    default_namespace: &str,
    in_scope: &dyn Fn(&str) -> bool,
    field_manager: Option<&str>,
    dry_run: bool,
) -> Takes {
    let appliers: Vec<&str> = field_manager.map_or_else(|| KUBECTL_MANAGERS.to_vec(), |m| vec![m]);
    let targets: Vec<(&Manifest, &ApiResource, Option<String>)> = manifests
        .objects
        .iter()
        .filter_map(|m| {
            let r = resources.iter().find(|r| r.kind == m.kind && r.group == m.group() && r.preferred)?;
            if r.group.is_empty() && crate::connect::request::METADATA_ONLY_RESOURCES.contains(&r.plural.as_str()) {
                return None;
            }
            let ns = r.namespaced.then(|| m.namespace.clone().unwrap_or_else(|| default_namespace.to_string()));
            ns.as_deref().is_none_or(in_scope).then_some((m, r, ns))
        })
        .collect();
    let mut read = Laid::default();
    count_by_kind(&mut read.counts, Mechanism::Fields, targets.iter().map(|(_, r, _)| r.kind.as_str()));
    let answers: Vec<_> = futures::stream::iter(targets)
        .map(|(m, r, ns)| async move {
            let path = format!("{}/{}", r.collection(ns.as_deref()), m.name);
            let live = session.get_json::<Value>(&path).await;
            // Only an object that exists can lose a field to the apply.
            let answer = match (&live, dry_run) {
                (Ok(_), true) => {
                    let body = serde_json::to_vec(&m.object).expect("JSON values serialize");
                    let manager = field_manager.unwrap_or(KUBECTL_MANAGERS[0]);
                    Some(session.conn.dry_run_apply(&path, manager, body).await.map(|_| ()))
                }
                _ => None,
            };
            (m, r, ns, live, answer)
        })
        .buffer_unordered(GETS_AT_ONCE)
        .collect()
        .await;
    let (mut findings, mut skipped, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    for (m, r, ns, answer, server) in answers {
        let live = match answer {
            Ok((live, _)) => live,
            Err(e) if e.not_found() => continue, // a new object: nobody owns its fields yet
            Err(e) => {
                skipped.push(Skipped::new(
                    format!("{} {} (its managedFields)", r.plural, m.name),
                    ns.as_deref(),
                    e.skip_reason(),
                ));
                continue;
            }
        };
        let (entries, _) = crate::commands::fields::entries_of(&live);
        // What managedFields predict, where the server did not answer for itself.
        let predicted = || apply_takes::taken(&entries, &live, &m.object, &appliers);
        let (taken, by_server) = match server {
            None => (predicted(), false),
            Some(Ok(())) => (Vec::new(), true),
            Some(Err(e)) if e.is(http::StatusCode::CONFLICT) => {
                (apply_takes::conflicts(&entries, &live, &m.object, &e.conflicts, &appliers), true)
            }
            Some(Err(e)) if e.forbidden() => {
                refused.push(format!("{} {}", r.kind, m.name));
                (predicted(), false)
            }
            Some(Err(e)) => {
                skipped.push(Skipped::new(
                    format!("{} {} (its server-side dry run)", r.plural, m.name),
                    ns.as_deref(),
                    e.skip_reason(),
                ));
                (predicted(), false)
            }
        };
        let mut found = check::apply_takes(&r.kind, &r.group, ns.as_deref(), &m.name, &taken);
        for f in &mut found {
            f.file = Some(m.origin.to_string());
            if by_server {
                f.message.push_str(" (the server's answer to a dry-run apply)");
            }
        }
        findings.extend(found);
    }
    findings.sort_by(|a, b| (&a.namespace, &a.object).cmp(&(&b.namespace, &b.object)));
    let warnings = if refused.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "--server-dry-run: not allowed to patch {}: predicted from managedFields instead",
            check::some_names(refused.iter().map(String::as_str), refused.len())
        )]
    };
    Takes { findings, skipped, counts: read.counts, warnings }
}
