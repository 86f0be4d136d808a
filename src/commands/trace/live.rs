//! `trace --watch` and `trace OBJECT -- COMMAND`: metadata-only watches on the subtree's
//! kinds and on Events, one line per reaction as it arrives, until nothing has changed
//! for --settle; then a summary per writer and the stalls that remain.

use crate::output::table::fit_lines;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::reorder::Reorder;
use super::{TraceArgs, fetch, render, trace_once};
use crate::analyze::reaction::{Reaction, Tracker, WriterSummary};
use crate::analyze::resource_ref::ApiResource;
use crate::analyze::sequence::{event_from_json, object_from_json};
use crate::cli::OutputFormat;
use crate::connect::watch::{Event, Follow, follow};
use crate::connect::{Accept, Session};
use crate::error::Outcome;
use crate::output::table::Tone;
use crate::output::{Printer, out, paint};

/// How long a watched change waits for changes committed before it on other streams.
const REORDER_WINDOW: Duration = Duration::from_millis(300);

/// How long a watched object (or Event) waits for its owner to join the chain: another
/// stream may deliver the owner a little after its dependent, never a minute after.
const WAITING_FOR_AN_OWNER: Duration = Duration::from_secs(60);
/// How often what waited longer is forgotten (a pass over everything waiting).
const FORGET_EVERY: Duration = Duration::from_secs(10);

pub struct Live<'a> {
    pub resource: &'a ApiResource,
    pub name: &'a str,
    pub timeout: Option<Duration>,
    pub command: &'a [String],
}

enum Arrival {
    /// A list of collection `source` (the state before tracing, or after a watch expired).
    Listed(usize, Vec<Value>),
    Upsert(usize, Value),
    Deleted(usize, Value),
    /// A watch ended for good (its error ends the trace).
    Failed(anyhow::Error),
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary<'a> {
    api_version: &'static str,
    kind: &'static str,
    writers: &'a [WriterSummary],
    trace: render::TraceWire<'a>,
}

pub async fn run(
    session: &Session,
    printer: &Printer,
    resources: &[ApiResource],
    args: &TraceArgs,
    live: Live<'_>,
) -> Result<Outcome> {
    // The subtree as it is now: who belongs, and which kinds to watch.
    let fetched = fetch::subtree(session, resources, live.resource, live.name).await?;
    let kinds = fetch::watched_kinds(&fetched.snap, resources);
    let namespace = match &fetched.scope {
        crate::commands::owners::fetch::Scope::Namespace(ns) => Some(ns.clone()),
        crate::commands::owners::fetch::Scope::AllNamespaces => None,
    };
    // Every reaction is kept only for a Chrome trace, which draws them all; the other forms
    // print each as it comes and keep what the summary needs.
    let mut tracker = if printer.format == OutputFormat::Chrome {
        Tracker::keeping_reactions(&fetched.snap.objects[0])
    } else {
        Tracker::new(&fetched.snap.objects[0])
    };
    for o in &fetched.snap.objects[1..] {
        tracker.observe(o, None);
    }
    let mut collections: Vec<String> = kinds.iter().map(|r| r.collection(namespace.as_deref())).collect();
    let events_source = collections.len();
    collections.push(match &namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/events"),
        None => "/api/v1/events".into(),
    });

    let (tx, mut rx) = mpsc::unbounded_channel::<Arrival>();
    let mut watches = tokio::task::JoinSet::new();
    for (source, collection) in collections.iter().enumerate() {
        let (conn, tx, collection) = (session.conn.clone(), tx.clone(), collection.clone());
        let accept = if source == events_source { Accept::Json } else { Accept::Metadata };
        let warn_printer = *printer;
        watches.spawn(async move {
            let spec = Follow {
                accept,
                collection: &collection,
                query: "",
                timeout: None,
                server_timeout_seconds: 300,
                tick: None,
            };
            let sent = |event: Event| {
                let arrival = match event {
                    Event::Listed(items) => Arrival::Listed(source, items),
                    Event::Upsert(o) => Arrival::Upsert(source, o),
                    Event::Deleted(o) => Arrival::Deleted(source, o),
                    Event::Tick | Event::Resumed(_) => return Ok(()),
                };
                tx.send(arrival).map_err(|_| anyhow!("trace ended"))
            };
            if let Err(e) = follow(&conn, &spec, sent, |w| warn_printer.warn(w)).await {
                let _ = tx.send(Arrival::Failed(e.context(format!("watching {collection}"))));
            }
        });
    }
    drop(tx);

    let deadline = live.timeout.map(|t| Instant::now() + t);
    let mut listed = vec![false; collections.len()];
    let mut child: Option<tokio::process::Child> = None;
    let mut command_done = live.command.is_empty();
    let mut command_failed: Option<String> = None;
    let mut last_activity = Instant::now();
    let mut printed_header = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let settle = args.settle;
    let mut reorder: Reorder<(usize, Value, bool)> = Reorder::new(REORDER_WINDOW);
    let mut last_forget = Instant::now();
    loop {
        // Watched changes whose window closed, in commit order.
        let flush = deadline.is_some_and(|d| Instant::now() >= d);
        let released = reorder.release(Instant::now(), flush);
        if emit(released, &mut tracker, &kinds, events_source, printer, &mut printed_header)? {
            last_activity = Instant::now();
        }
        if listed.iter().all(|&l| l) && last_forget.elapsed() >= FORGET_EVERY {
            last_forget = Instant::now();
            tracker.forget_waiting(Timestamp::now() - WAITING_FOR_AN_OWNER);
        }
        let settled = reorder.is_empty()
            && command_done
            && listed.iter().all(|&l| l)
            && (!live.command.is_empty() || tracker.reaction_count() > 0)
            && last_activity.elapsed() >= settle;
        if settled || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let wake = [Some(last_activity + settle), deadline, reorder.next_due()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(last_activity + settle);
        let wait_child = async {
            match child.as_mut() {
                Some(c) => c.wait().await.ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = tokio::time::sleep_until(wake.max(Instant::now() + Duration::from_millis(10))) => {}
            status = wait_child => {
                child = None;
                command_done = true;
                last_activity = Instant::now();
                if let Some(s) = status.filter(|s| !s.success()) {
                    command_failed = Some(format!("{} exited with {s}", live.command.join(" ")));
                    printer.warn(command_failed.as_deref().unwrap_or_default());
                }
            }
            arrival = rx.recv() => {
                let Some(arrival) = arrival else { break };
                let rv = |item: &Value| item.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string();
                match arrival {
                    Arrival::Failed(e) => return Err(e),
                    // A new list after the watch expired (its version compacted away while the
                    // server was gone): what changed meanwhile is seen now, as watched changes are.
                    Arrival::Listed(source, items) if listed[source] => {
                        for item in items {
                            reorder.push(&rv(&item), Instant::now(), Timestamp::now(), (source, item, false));
                        }
                    }
                    Arrival::Listed(source, items) => {
                        listed[source] = true;
                        for item in &items {
                            take(&mut tracker, &kinds, source, events_source, item, None);
                        }
                        // Every watch is open from its list's version on: nothing from now is missed.
                        if listed.iter().all(|&l| l) && !live.command.is_empty() && child.is_none() && !command_done {
                            child = Some(spawn(live.command)?);
                            last_activity = Instant::now();
                        }
                    }
                    Arrival::Upsert(source, item) => reorder.push(&rv(&item), Instant::now(), Timestamp::now(), (source, item, false)),
                    Arrival::Deleted(source, item) => reorder.push(&rv(&item), Instant::now(), Timestamp::now(), (source, item, true)),
                }
            }
        }
    }
    // Ctrl-C or the watches' end: what is still waiting is printed, in order.
    let released = reorder.release(Instant::now(), true);
    emit(released, &mut tracker, &kinds, events_source, printer, &mut printed_header)?;
    watches.abort_all();
    if let Some(mut c) = child {
        let _ = c.start_kill();
    }

    // The state the chain settled in: reconstructed once more, for its stalls.
    let report = trace_once(session, printer, resources, live.resource, live.name, args).await?;
    let summary = tracker.summary();
    match printer.format {
        OutputFormat::Chrome => out(&render::chrome(&spans(tracker.reactions())))?,
        OutputFormat::Json | OutputFormat::Yaml => {
            let wire = Summary {
                api_version: crate::output::SCHEMA_VERSION,
                kind: "TraceSummary",
                writers: &summary,
                trace: report.machine(),
            };
            if printer.format == OutputFormat::Json {
                out(&(serde_json::to_string(&wire)? + "\n"))?;
            } else {
                printer.machine(&wire)?;
            }
        }
        _ => out(&fit_lines(&summary_text(printer, &summary, &report), printer.width))?,
    }
    render::footer(printer, &report.skipped);
    if let Some(failed) = command_failed {
        return Err(anyhow!(failed));
    }
    Ok(if args.exit_code && !report.stalls.is_empty() { Outcome::Findings } else { Outcome::Clean })
}

/// Feeds released watch changes to the tracker and prints their reactions; whether there were any.
fn emit(
    released: Vec<(Timestamp, (usize, Value, bool))>,
    tracker: &mut Tracker,
    kinds: &[ApiResource],
    events_source: usize,
    printer: &Printer,
    printed_header: &mut bool,
) -> Result<bool> {
    let mut any = false;
    for (at, (source, item, deleted)) in released {
        let reactions = if deleted {
            let uid = item.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
            if source == events_source {
                tracker.event_removed(uid);
                Vec::new()
            } else {
                tracker.removed(uid, at)
            }
        } else {
            take(tracker, kinds, source, events_source, &item, Some(at))
        };
        if reactions.is_empty() {
            continue;
        }
        any = true;
        if !*printed_header && !printer.is_machine() && printer.format != OutputFormat::Chrome {
            *printed_header = true;
            out(&header(printer))?;
        }
        for r in &reactions {
            print_reaction(printer, r)?;
        }
    }
    Ok(any)
}

/// Feeds one listed or watched item to the tracker.
fn take(
    tracker: &mut Tracker,
    kinds: &[ApiResource],
    source: usize,
    events_source: usize,
    item: &Value,
    at: Option<Timestamp>,
) -> Vec<Reaction> {
    if source == events_source {
        return tracker.event(&event_from_json(item), at);
    }
    // Metadata-only items say PartialObjectMetadata: the collection says what they are.
    let r = &kinds[source];
    let mut o = object_from_json(item);
    o.api_version = r.group_version().into();
    o.kind = r.kind.as_str().into();
    tracker.observe(&o, at)
}

/// Starts the user's command; its output goes to stderr so stdout stays the trace's.
fn spawn(command: &[String]) -> Result<tokio::process::Child> {
    let (program, rest) = command.split_first().expect("a command was given");
    // A duplicate of our stderr handle for each stream (std does the dup, on every platform).
    let to_stderr = || -> Result<Stdio> { Ok(Stdio::from(std::io::stderr())) };
    tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(to_stderr()?)
        .stderr(to_stderr()?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {program:?}"))
        .map_err(|e| crate::error::usage(crate::error::one_line(&e)))
}

fn header(printer: &Printer) -> String {
    let line = format!("{:<12}  {:<10}  {:<36}  {:<40}  {}\n", "SEEN", "LAG", "WHO", "OBJECT", "WHAT");
    if printer.no_headers { String::new() } else { paint(&line, Tone::Dim, printer.color) }
}

fn print_reaction(printer: &Printer, r: &Reaction) -> Result<()> {
    match printer.format {
        OutputFormat::Json => out(&(serde_json::to_string(r)? + "\n")),
        OutputFormat::Yaml => out(&format!("---\n{}", serde_saphyr::to_string(r)?)),
        OutputFormat::Chrome => Ok(()),
        _ => {
            let lag = r.lag_ms.map(|ms| format!("+{ms}ms")).unwrap_or_else(|| "-".into());
            let who = if r.who.is_empty() { "?" } else { r.who.as_str() };
            let mut line = format!(
                "{:<12}  {:<10}  {:<36}  {:<40}  {}",
                r.time.strftime("%H:%M:%S%.3f"),
                lag,
                who,
                r.object,
                r.what
            );
            if printer.wide()
                && let Some(c) = &r.cause
            {
                line.push_str(&format!("  (after {c})"));
            }
            let tone = if r.what.contains("event Failed") { Tone::Warn } else { Tone::Plain };
            out(&fit_lines(&paint(&line, tone, printer.color), printer.width))
        }
    }
}

fn summary_text(printer: &Printer, summary: &[WriterSummary], report: &render::Report) -> String {
    let mut text = String::from("\n");
    let mut grid = crate::output::table::Grid::new(vec!["WRITER", "REACTIONS", "MEDIAN LAG", "MAX LAG"]);
    let ms = |v: Option<i64>| v.map(|m| format!("{m}ms")).unwrap_or_else(|| "-".into());
    for s in summary {
        grid.row(vec![
            s.who.clone().into(),
            s.reactions.to_string().into(),
            ms(s.median_lag_ms).into(),
            ms(s.max_lag_ms).into(),
        ]);
    }
    if grid.is_empty() {
        text.push_str("No reactions seen.\n");
    } else {
        text.push_str(&grid.render(printer));
    }
    text.push('\n');
    text.push_str(&report.stall_text(printer));
    text
}

/// Reactions as Chrome spans: from the change each answers to the reaction, per writer.
fn spans(reactions: &[Reaction]) -> Vec<render::Span> {
    reactions
        .iter()
        .map(|r| {
            let start = r
                .lag_ms
                .and_then(|l| Timestamp::from_millisecond(r.time.as_millisecond() - l.max(0)).ok())
                .unwrap_or(r.time);
            render::Span {
                track: if r.who.is_empty() { "(unknown writer)".into() } else { r.who.clone() },
                name: format!("{} {}", r.what, r.object),
                start,
                end: r.time,
                args: serde_json::json!({"cause": r.cause, "lagMs": r.lag_ms}),
            }
        })
        .collect()
}
