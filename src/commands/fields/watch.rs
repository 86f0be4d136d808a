//! `fields TYPE/NAME --watch`: one line each time a field's owners change, and at the
//! end the fields whose owner flipped back and forth (the fight, with its managers).

use crate::output::table::fit_lines;
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow};
use serde::Serialize;

use super::{FieldsArgs, analyze_object};
use crate::analyze::field_watch::{Change, FieldWatch, Fight, Owners};
use crate::analyze::fields::manager_label;
use crate::analyze::resource_ref::ApiResource;
use crate::connect::Session;
use crate::connect::list::encode;
use crate::connect::watch::{Event, Follow, follow};
use crate::error::Outcome;
use crate::output::table::Tone;
use crate::output::{Printer, out, paint};

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ChangeLine<'a> {
    time: jiff::Timestamp,
    #[serde(flatten)]
    change: &'a Change,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SummaryLine<'a> {
    time: jiff::Timestamp,
    fights: &'a [Fight],
}

pub async fn run(
    session: &Session,
    printer: &Printer,
    resource: &ApiResource,
    name: &str,
    args: &FieldsArgs,
    timeout: Option<Duration>,
) -> Result<Outcome> {
    let ns = resource.namespaced.then_some(session.namespace.as_str());
    if ns.is_some() {
        session.check_namespace().await?;
    }
    let collection = resource.collection(ns);
    let query = format!("fieldSelector={}", encode(&format!("metadata.name={name}")));
    let spec = Follow {
        accept: crate::connect::Accept::Json,
        collection: &collection,
        query: &query,
        timeout,
        server_timeout_seconds: 300,
        tick: None,
    };
    let mut tracker = FieldWatch::default();
    let mut seen = false;
    let handle = |event: Event| {
        let object = match event {
            Event::Listed(items) => match items.into_iter().next() {
                Some(o) => o,
                None if !seen => {
                    // (The namespace was checked before the watch started.)
                    let place = ns.map(|n| format!(" in namespace {n:?}")).unwrap_or_default();
                    return Err(anyhow!("{} {name:?} not found{place}", resource.plural));
                }
                None => return Ok(()),
            },
            Event::Upsert(o) => o,
            Event::Deleted(_) => {
                printer.warn(&format!("{} {name:?} was deleted", resource.kind));
                return Ok(());
            }
            Event::Tick | Event::Resumed(_) => return Ok(()),
        };
        seen = true;
        let fields = analyze_object(&resource.kind, ns, name, &object, None, args);
        let owners: BTreeMap<String, Owners> = fields
            .fields
            .into_iter()
            .map(|f| {
                let mut labels: Owners = f.owners.iter().map(|o| manager_label(&o.manager, &o.subresource)).collect();
                labels.sort();
                labels.dedup();
                (f.path, labels)
            })
            .collect();
        emit(printer, &tracker.observe(owners))
    };
    follow(&session.conn, &spec, handle, |m| printer.warn(m)).await?;
    let fights = tracker.fights();
    if printer.is_machine() {
        out(&(serde_json::to_string(&SummaryLine { time: jiff::Timestamp::now(), fights: &fights })? + "\n"))?;
    } else if fights.is_empty() {
        out("no field changed owner back and forth while watching\n")?;
    } else {
        let mut text = String::from("\n");
        for f in &fights {
            let line = format!("fight: {} changed owner {} times between {}", f.path, f.changes, f.managers.join(", "));
            text.push_str(&paint(&line, Tone::Bad, printer.color));
            text.push('\n');
        }
        out(&fit_lines(&text, printer.width))?;
    }
    Ok(if args.exit_code && !fights.is_empty() { Outcome::Findings } else { Outcome::Clean })
}

fn emit(printer: &Printer, changes: &[Change]) -> Result<()> {
    let mut text = String::new();
    let time = jiff::Timestamp::now();
    for change in changes {
        if printer.is_machine() {
            // One JSON object per line, also for -o yaml: a stream needs line framing.
            text.push_str(&serde_json::to_string(&ChangeLine { time, change })?);
            text.push('\n');
            continue;
        }
        let names = |o: &Owners| if o.is_empty() { "<none>".to_string() } else { o.join(", ") };
        let mut line = format!(
            "{}  {}  {} -> {}  (change {})",
            time.strftime("%H:%M:%S"),
            change.path,
            names(&change.from),
            names(&change.to),
            change.changes
        );
        if change.fight {
            line.push_str("  FIGHT");
        }
        text.push_str(&paint(&line, if change.fight { Tone::Warn } else { Tone::Plain }, printer.color));
        text.push('\n');
    }
    if !text.is_empty() {
        out(&fit_lines(&text, printer.width))?;
    }
    Ok(())
}
