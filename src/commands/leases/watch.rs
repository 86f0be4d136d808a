//! `leases --watch`: one line per change, judged by client-go's observed-time rule.
//! A watch the server closes is reopened from the last resourceVersion; an expired
//! resourceVersion (410) re-lists and reports only what changed meanwhile.

use crate::output::table::fit_lines;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::fetch;
use crate::analyze::lease::{LeaseClass, LeaseSnapshot, classify};
use crate::analyze::lease_watch::{Keyed, Tracker, WatchEvent};
use crate::connect::Session;
use crate::connect::list::encode;
use crate::connect::watch::{self, Event, Follow};
use crate::error::Outcome;
use crate::output::table::Tone;
use crate::output::{Printer, out, paint};

pub struct WatchOptions<'a> {
    pub selector: Option<&'a str>,
    pub names: &'a [String],
    pub nodes: bool,
    pub timeout: Option<Duration>,
    /// Ask the server to close each watch after this many seconds (it is then reopened).
    pub server_timeout_seconds: u64,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    time: jiff::Timestamp,
    namespace: &'a str,
    name: &'a str,
    #[serde(flatten)]
    event: &'a WatchEvent,
}

pub async fn run(session: &Session, printer: &Printer, opts: &WatchOptions<'_>) -> Result<Outcome> {
    let start = Instant::now();
    let mut tracker = Tracker::default();
    let collection = fetch::collection_path(session);
    let query = opts.selector.map(|s| format!("labelSelector={}", encode(s))).unwrap_or_default();
    let follow = Follow {
        accept: crate::connect::Accept::Json,
        collection: &collection,
        query: &query,
        timeout: opts.timeout,
        server_timeout_seconds: opts.server_timeout_seconds,
        // Leases go at-risk and expire with time alone, not only on events.
        tick: Some(Duration::from_millis(250)),
    };
    let lease =
        |v: serde_json::Value| serde_json::from_value::<fetch::LeaseItem>(v).ok().map(|l| fetch::snapshot(l, None));
    let handle = |event: Event| {
        let events = match event {
            Event::Listed(items) => {
                // Only what changed since the last list is reported.
                let mut events = Vec::new();
                let mut listed = Vec::new();
                for l in items.into_iter().filter_map(lease).filter(|l| wanted(opts, l)) {
                    listed.push((l.namespace.clone(), l.name.clone()));
                    events.extend(tracker.observe(l, start.elapsed()));
                }
                events.extend(tracker.retain_listed(&listed));
                events
            }
            Event::Upsert(v) => match lease(v).filter(|l| wanted(opts, l)) {
                Some(l) => tracker.observe(l, start.elapsed()),
                None => Vec::new(),
            },
            Event::Deleted(v) => match lease(v).filter(|l| wanted(opts, l)) {
                Some(l) => tracker.delete(&l.namespace, &l.name),
                None => Vec::new(),
            },
            Event::Tick => tracker.tick(start.elapsed()),
            Event::Resumed(blind) => {
                let now = start.elapsed();
                tracker.forgive(now.saturating_sub(blind), now);
                Vec::new()
            }
        };
        emit(printer, events)
    };
    watch::follow(&session.conn, &follow, handle, |m| printer.warn(m)).await?;
    Ok(Outcome::Clean)
}

fn wanted(opts: &WatchOptions<'_>, lease: &LeaseSnapshot) -> bool {
    (opts.names.is_empty() || opts.names.contains(&lease.name))
        && (opts.nodes
            || classify(lease) != LeaseClass::NodeHeartbeat
            || lease.namespace == "kube-node-lease" && !opts.names.is_empty())
}

fn emit(printer: &Printer, events: Vec<Keyed>) -> Result<()> {
    let mut text = String::new();
    for ((namespace, name), event) in &events {
        let time = jiff::Timestamp::now();
        if printer.is_machine() {
            // One JSON object per line, also for -o yaml: a stream needs line framing.
            let line = Line { time, namespace, name, event };
            text.push_str(&serde_json::to_string(&line)?);
            text.push('\n');
            continue;
        }
        let (label, detail, tone) = describe(event);
        let clock = time.strftime("%H:%M:%S");
        let line = format!("{clock}  {namespace}/{name}  {label}  {detail}");
        text.push_str(&paint(&line, tone, printer.color));
        text.push('\n');
    }
    if !text.is_empty() {
        out(&fit_lines(&text, printer.width))?;
    }
    Ok(())
}

fn describe(event: &WatchEvent) -> (&'static str, String, Tone) {
    let none = || "<none>".to_string();
    match event {
        WatchEvent::Added { holder, transitions } => (
            "present",
            format!(
                "holder={} transitions={}",
                holder.clone().unwrap_or_else(none),
                transitions.map(|t| t.to_string()).unwrap_or_else(none)
            ),
            Tone::Plain,
        ),
        WatchEvent::Renewed { holder, interval_seconds } => (
            "renewed",
            match interval_seconds {
                Some(s) => format!("by {holder} after {s:.1}s"),
                None => format!("by {holder}"),
            },
            Tone::Dim,
        ),
        WatchEvent::LeaderChanged { from, to, transitions } => (
            "LEADER-CHANGED",
            format!(
                "{} -> {} (transitions={})",
                from.clone().unwrap_or_else(none),
                to.clone().unwrap_or_else(none),
                transitions.map(|t| t.to_string()).unwrap_or_else(none)
            ),
            Tone::Warn,
        ),
        WatchEvent::AtRisk { holder, unobserved_seconds, duration_seconds } => {
            ("at-risk", format!("{holder} not renewed for {unobserved_seconds:.1}s of {duration_seconds}s"), Tone::Warn)
        }
        WatchEvent::Expired { holder, unobserved_seconds, duration_seconds } => (
            "expired",
            format!("{holder} not renewed for {unobserved_seconds:.1}s, past {duration_seconds}s"),
            Tone::Bad,
        ),
        WatchEvent::Deleted => ("deleted", String::new(), Tone::Warn),
    }
}
