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
use crate::source::any_dump;
use crate::source::dump::Record;

pub(super) async fn collect(
    path: &std::path::Path,
    printer: &Printer,
    args: &CheckArgs,
    plan: Plan,
    rules: &Rules,
) -> Result<render::Report> {
    let (header, mut records) = any_dump::open(path).map_err(usage)?;
    let mut replay = fetch::Replay::new(plan);
    let mut trailer = None;
    let mut cut = None;
    // A part of another tool's dump that cannot be read is skipped, the rest read; a coord
    // dump that cannot be read further was cut short.
    let mut bad_parts = Vec::new();
    let skips_bad_parts = records.skips_bad_parts();
    for record in records.by_ref() {
        match record {
            Ok(Record::Page(page)) => tokio::task::block_in_place(|| replay.page(page)),
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
    let namespace = records.namespace(header.namespace);
    let mut snap = replay.finish(&resources, trailer.unwrap_or_default());
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
