//! `leases --watch`: one line per change, judged by client-go's observed-time rule.
//! A watch the server closes is reopened from the last resourceVersion; an expired
//! resourceVersion (410) re-lists and reports only what changed meanwhile.

use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::api::coordination::v1::Lease;
use serde::{Deserialize, Serialize};

use super::fetch;
use crate::analyze::lease::{LeaseClass, LeaseSnapshot, classify};
use crate::analyze::lease_watch::{Keyed, Tracker, WatchEvent};
use crate::connect::Session;
use crate::connect::list::encode;
use crate::error::Outcome;
use crate::output::table::Tone;
use crate::output::{Printer, out, paint};

/// Consecutive failures to reopen a watch before giving up.
const MAX_REOPEN_FAILURES: u32 = 5;

pub struct WatchOptions<'a> {
    pub selector: Option<&'a str>,
    pub names: &'a [String],
    pub nodes: bool,
    pub timeout: Option<Duration>,
    /// Ask the server to close each watch after this many seconds (it is then reopened).
    pub server_timeout_seconds: u64,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: serde_json::Value,
}

#[derive(Serialize)]
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
    let deadline = opts.timeout.map(|t| tokio::time::Instant::from_std(start + t));
    let mut tracker = Tracker::default();
    let mut rv = relist(session, printer, opts, &mut tracker, start).await?;
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    let mut failures = 0;
    loop {
        let path = watch_path(session, opts, &rv);
        let mut stream = match session.conn.watch(&path).await {
            Ok(s) => {
                failures = 0;
                s
            }
            Err(e) if e.expired() => {
                rv = relist(session, printer, opts, &mut tracker, start).await?;
                continue;
            }
            Err(e) if failures < MAX_REOPEN_FAILURES && !e.forbidden() => {
                failures += 1;
                printer.warn(&format!("watch interrupted ({e}); reopening"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        loop {
            tokio::select! {
                _ = &mut ctrl_c => return Ok(Outcome::Clean),
                _ = &mut sleep => return Ok(Outcome::Clean),
                _ = ticker.tick() => emit(printer, opts, tracker.tick(start.elapsed()))?,
                line = stream.next_line() => match line {
                    Ok(Some(bytes)) => {
                        let Ok(event) = serde_json::from_slice::<RawEvent>(&bytes) else { continue };
                        match event.kind.as_str() {
                            "ADDED" | "MODIFIED" | "DELETED" => {
                                let Ok(lease) = serde_json::from_value::<Lease>(event.object) else { continue };
                                if let Some(v) = lease.metadata.resource_version.clone() {
                                    rv = v;
                                }
                                let snap = fetch::snapshot(lease);
                                if !wanted(opts, &snap) {
                                    continue;
                                }
                                let events = if event.kind == "DELETED" {
                                    tracker.delete(&snap.namespace, &snap.name)
                                } else {
                                    tracker.observe(snap, start.elapsed())
                                };
                                emit(printer, opts, events)?;
                            }
                            "BOOKMARK" => {
                                if let Some(v) = event.object.pointer("/metadata/resourceVersion").and_then(|v| v.as_str()) {
                                    rv = v.to_string();
                                }
                            }
                            // ERROR: almost always 410 Gone for a too-old resourceVersion.
                            _ => {
                                rv = relist(session, printer, opts, &mut tracker, start).await?;
                                break;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        printer.warn(&format!("watch stream broke ({e}); reopening"));
                        break;
                    }
                },
            }
        }
    }
}

/// Lists afresh, feeds every lease to the tracker (printing only real changes),
/// and returns the list's resourceVersion to watch from.
async fn relist(
    session: &Session,
    printer: &Printer,
    opts: &WatchOptions<'_>,
    tracker: &mut Tracker,
    start: Instant,
) -> Result<String> {
    let (leases, _, rv) = fetch::leases_with_version(session, opts.selector).await?;
    let mut events = Vec::new();
    let mut listed = Vec::new();
    for lease in leases.into_iter().filter(|l| wanted(opts, l)) {
        listed.push((lease.namespace.clone(), lease.name.clone()));
        events.extend(tracker.observe(lease, start.elapsed()));
    }
    events.extend(tracker.retain_listed(&listed));
    emit(printer, opts, events)?;
    Ok(rv)
}

fn wanted(opts: &WatchOptions<'_>, lease: &LeaseSnapshot) -> bool {
    (opts.names.is_empty() || opts.names.contains(&lease.name))
        && (opts.nodes
            || classify(lease) != LeaseClass::NodeHeartbeat
            || lease.namespace == "kube-node-lease" && !opts.names.is_empty())
}

fn watch_path(session: &Session, opts: &WatchOptions<'_>, rv: &str) -> String {
    let base = fetch::collection_path(session);
    let mut path = format!(
        "{base}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
        encode(rv),
        opts.server_timeout_seconds
    );
    if let Some(s) = opts.selector {
        path.push_str("&labelSelector=");
        path.push_str(&encode(s));
    }
    path
}

fn emit(printer: &Printer, _opts: &WatchOptions<'_>, events: Vec<Keyed>) -> Result<()> {
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
        out(&text)?;
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
