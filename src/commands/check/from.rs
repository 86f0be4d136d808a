//! check --from: a dump read as the cluster was when it was taken, whatever its format
//! (src/source/any_dump.rs), through the same replay and analyses as a live read.

use anyhow::Result;
use jiff::Timestamp;

use super::{CheckArgs, Plan, Read, analyzed, fetch, render};
use crate::analyze::check::{self, Mechanism};
use crate::analyze::silence::Rules;
use crate::commands::owners::fetch::{Scope, Skipped};
use crate::error::usage;
use crate::output::Printer;
use crate::snapshot::ApiResource;
use crate::source::any_dump;
use crate::source::dump::{Page, Record, Trailer};
use serde::Deserialize;

/// `narrow`: -n NS, to check one namespace of a dump of several.
pub(super) async fn collect(
    path: &std::path::Path,
    narrow: Option<&str>,
    printer: &Printer,
    args: &CheckArgs,
    plan: Plan,
    rules: &Rules,
) -> Result<render::Report> {
    let (header, mut records) = any_dump::open(path).map_err(usage)?;
    if let (Some(ns), Some(dumped)) = (narrow, &header.namespace)
        && ns != dumped
    {
        return Err(usage(format!("{}: the dump holds namespace {dumped} alone, not {ns}", path.display())));
    }
    // A dump of that namespace alone needs no narrowing.
    let narrow = narrow.filter(|_| header.namespace.is_none());
    let mut replay = fetch::Replay::new(plan);
    let mut trailer = None;
    let mut cut = None;
    // A part of another tool's dump that cannot be read is skipped, the rest read; a coord
    // dump that cannot be read further was cut short.
    let mut bad_parts = Vec::new();
    let skips_bad_parts = records.skips_bad_parts();
    for record in records.by_ref() {
        match record {
            Ok(Record::Page(page)) => tokio::task::block_in_place(|| match narrow {
                Some(ns) => narrowed(page, ns, plan.trace).into_iter().for_each(|p| replay.page(p)),
                None => replay.page(page),
            }),
            Ok(Record::Trailer(t)) => trailer = Some(t),
            Ok(Record::Header(_)) => {}
            Err(e) if skips_bad_parts => bad_parts.push(e),
            Err(e) => {
                cut = Some(e);
                break;
            }
        }
    }
    let mut not_covered: Vec<check::NotCovered> = records
        .not_covered()
        .into_iter()
        .filter_map(|(name, why)| {
            let m = Mechanism::ALL.into_iter().find(|m| m.name() == name)?;
            plan.runs(m).then_some(check::NotCovered { mechanism: m, why })
        })
        .collect();
    not_covered.sort_by_key(|n| n.mechanism);
    let cut = cut.or_else(|| trailer.is_none().then(|| format!("{}: cut short (no trailer)", path.display())));
    let resources = records.resources(header.resources);
    let namespace = narrow.map(str::to_string).or_else(|| records.namespace(header.namespace));
    let mut trailer = trailer.unwrap_or_default();
    if let Some(ns) = narrow {
        narrow_trailer(&mut trailer, ns, &resources);
    }
    let mut snap = replay.finish(&resources, trailer);
    for why in bad_parts {
        snap.skipped.push(Skipped::new("a List of the dump", None, why));
    }
    if let Some(why) = cut {
        printer.warn(&format!("the dump is incomplete: {why}"));
        snap.skipped.push(Skipped::new("the dump", None, format!("{why}: what came before is checked")));
    }
    let now = snap.server_time.unwrap_or_else(|| {
        printer.warn("the dump has no server time; ages use the local clock");
        Timestamp::now()
    });
    let scope = match namespace {
        Some(ns) => Scope::Namespace(ns),
        None => Scope::AllNamespaces,
    };
    let read = Read { session: None, context: header.context, snap, scope, resources, now };
    analyzed(read, args, plan, rules, not_covered).await
}

/// A page of a dump of several namespaces as `check -n NS` would have read it: NS's objects
/// and the cluster-scoped ones; kube-system's Leases beside them, for trace's built-in
/// controllers, as the live read takes them when trace runs.
fn narrowed(page: Page, ns: &str, trace: bool) -> Vec<Page> {
    if page.system_leases || !page.resource.namespaced {
        return vec![page];
    }
    #[derive(Deserialize)]
    struct Item {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        namespace: String,
    }
    let lease = page.resource.kind == "Lease" && page.resource.group == "coordination.k8s.io";
    let (mut kept, mut system) = (Vec::new(), Vec::new());
    for item in page.items {
        let Ok(read) = serde_json::from_str::<Item>(item.get()) else { continue };
        if read.metadata.namespace == ns {
            kept.push(item);
        } else if lease && trace && read.metadata.namespace == fetch::SYSTEM {
            system.push(item);
        }
    }
    let mut out = vec![Page { items: kept, ..page }];
    if !system.is_empty() {
        let first = &out[0];
        out.push(Page {
            resource: first.resource.clone(),
            metadata_only: first.metadata_only,
            system_leases: true,
            read_at: first.read_at,
            items: system,
        });
    }
    out
}

/// The trailer of a dump of several namespaces as it would read for NS alone: each
/// namespaced kind listed there if it was listed there, what could not be read there.
fn narrow_trailer(trailer: &mut Trailer, ns: &str, resources: &[ApiResource]) {
    let namespaced =
        |group: &str, kind: &str| resources.iter().any(|r| r.group == group && r.kind == kind && r.namespaced);
    trailer.listed.retain_mut(|l| {
        if !namespaced(&l.group, &l.kind) {
            return true;
        }
        let there = l.namespaces.is_empty() || l.namespaces.iter().any(|n| n == ns);
        l.namespaces = vec![ns.to_string()];
        there
    });
    trailer.skipped.retain(|s| s.namespace.as_deref().is_none_or(|n| n == ns));
}
