//! List, then watch a collection until a deadline or Ctrl-C. A watch the server
//! closes is reopened from the last resourceVersion seen; an expired one (410 Gone,
//! or an ERROR event) lists afresh, so the caller can report only what changed.
//!
//! A watch outlives the API server: when it is gone (restarted, unreachable, silent), the
//! watch says so once, asks again every few seconds until Ctrl-C or its deadline, and says
//! once when the server is back and whether it resumed where it stopped or had to list again
//! (the resourceVersion it had was compacted away, as after an etcd compaction or a restart
//! whose watch cache starts later). Every change made after the server came back is then seen
//! exactly once: a resumed watch replays from the last version seen, a new list is compared
//! by the caller with what it knew.

use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;

use super::list::{encode, list_all};
use super::request::{Accept, Conn, RequestError};

/// The longest wait between two attempts to reach a server that is gone: short, so that the
/// first changes after it comes back are seen one by one rather than summed up by a new list.
const LONGEST_REOPEN_WAIT: Duration = Duration::from_secs(1);

pub enum Event {
    /// A full list: at the start, and after the watch expired.
    Listed(Vec<Value>),
    Upsert(Value),
    Deleted(Value),
    /// Time passed (every `tick`), for callers that judge by elapsed time.
    Tick,
    /// The server was back after this long without it: the caller saw nothing in that time
    /// (sent before the list or events that follow the outage).
    Resumed(Duration),
}

pub struct Follow<'a> {
    /// Json for whole objects, or Metadata for PartialObjectMetadata (lists and watch events).
    pub accept: Accept,
    /// A collection path, e.g. /apis/apps/v1/namespaces/x/deployments.
    pub collection: &'a str,
    /// Extra query without `?` (labelSelector=..., fieldSelector=...).
    pub query: &'a str,
    /// End after this long; None: until Ctrl-C.
    pub timeout: Option<Duration>,
    /// The server is asked to close each watch after this many seconds; it is then reopened.
    pub server_timeout_seconds: u64,
    pub tick: Option<Duration>,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Value,
}

/// Runs until the timeout or Ctrl-C; `handle` sees every list and change in order.
/// `warn` reports an outage of the server, once when it starts and once when it ends.
pub async fn follow(
    conn: &Conn,
    f: &Follow<'_>,
    mut handle: impl FnMut(Event) -> Result<()>,
    warn: impl Fn(&str),
) -> Result<()> {
    // A watch waits for changes rather than reading: a progress line would only sit there.
    crate::output::progress::stop();
    let deadline = f.timeout.map(|t| tokio::time::Instant::now() + t);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut ticker = tokio::time::interval(f.tick.unwrap_or(Duration::from_secs(3600)));
    // Ticks missed while the server was gone are not made up in a burst.
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut rv = relist(conn, f, &mut handle).await?;
    // When this watch lost the server, and how many attempts to reach it failed since.
    let mut lost: Option<(std::time::Instant, u32)> = None;
    // Whether the next open must list first (the version expired while the server was gone).
    let mut must_list = false;
    loop {
        // Anything that fails in this block means the server is (still) gone.
        let attempt = async {
            if must_list {
                let listed = list(conn, f).await?;
                return Ok::<_, RequestError>(Reopened::Listed(listed.items, listed.resource_version));
            }
            let mut path = format!(
                "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                f.collection,
                encode(&rv),
                f.server_timeout_seconds
            );
            if !f.query.is_empty() {
                path.push('&');
                path.push_str(f.query);
            }
            conn.watch_as(&path, f.accept).await.map(Reopened::Watching)
        };
        let reopened = tokio::select! {
            _ = &mut ctrl_c => return Ok(()),
            _ = &mut sleep => return Ok(()),
            r = attempt => r,
        };
        let (mut stream, mut pending) = match reopened {
            Ok(Reopened::Watching(mut stream)) => {
                let mut pending = None;
                if let Some((since, _)) = lost {
                    // A version too old is refused inside the open stream, as its first event
                    // (ERROR, 410): wait briefly for it before saying the watch resumed.
                    let first = tokio::time::timeout(Duration::from_secs(1), stream.next_line()).await;
                    if let Ok(Ok(Some(bytes))) = first {
                        if is_error(&bytes) {
                            must_list = true;
                            continue;
                        }
                        pending = Some(bytes);
                    }
                    lost = None;
                    handle(Event::Resumed(since.elapsed()))?;
                    if let Some(gone) = conn.outage_ends() {
                        warn(&format!("{}; the watch resumed from resourceVersion {rv}", back_after(conn, gone)));
                    }
                }
                (stream, pending)
            }
            Ok(Reopened::Listed(items, version)) => {
                must_list = false;
                rv = version;
                if let Some((since, _)) = lost.take() {
                    handle(Event::Resumed(since.elapsed()))?;
                    if let Some(gone) = conn.outage_ends() {
                        warn(&format!(
                            "{}; listed again (the watch's resourceVersion had expired): only what changed meanwhile is shown",
                            back_after(conn, gone)
                        ));
                    }
                }
                handle(Event::Listed(items))?;
                continue;
            }
            Err(e) if e.expired() => {
                must_list = true;
                continue;
            }
            // Refused before the server was ever lost: this identity may not watch.
            Err(e) if lost.is_none() && (e.forbidden() || e.unauthorized()) => return Err(e.into()),
            Err(e) => {
                let (_, failures) = lost.get_or_insert_with(|| (std::time::Instant::now(), 0));
                *failures += 1;
                if conn.outage_begins() {
                    warn(&format!(
                        "lost the API server at {} ({}); watching again when it is back",
                        conn.server(),
                        e.why()
                    ));
                }
                let wait = (Duration::from_millis(250) * *failures).min(LONGEST_REOPEN_WAIT);
                tokio::select! {
                    _ = &mut ctrl_c => return Ok(()),
                    _ = &mut sleep => return Ok(()),
                    _ = tokio::time::sleep(wait) => {}
                }
                // Ask the server itself again, not the failure an earlier request met.
                conn.retry_server();
                continue;
            }
        };
        loop {
            let line = match pending.take() {
                Some(bytes) => Ok(Some(bytes)),
                None => tokio::select! {
                    _ = &mut ctrl_c => return Ok(()),
                    _ = &mut sleep => return Ok(()),
                    _ = ticker.tick(), if f.tick.is_some() => {
                        handle(Event::Tick)?;
                        continue;
                    }
                    line = stream.next_line() => line,
                },
            };
            match line {
                Ok(Some(bytes)) => {
                    let Ok(event) = serde_json::from_slice::<RawEvent>(&bytes) else { continue };
                    let version = event.object.pointer("/metadata/resourceVersion").and_then(Value::as_str);
                    match event.kind.as_str() {
                        "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" => {
                            if let Some(v) = version {
                                rv = v.to_string();
                            }
                        }
                        // ERROR: almost always 410 Gone for a too-old resourceVersion.
                        _ => {
                            must_list = true;
                            break;
                        }
                    }
                    match event.kind.as_str() {
                        "ADDED" | "MODIFIED" => handle(Event::Upsert(event.object))?,
                        "DELETED" => handle(Event::Deleted(event.object))?,
                        _ => {}
                    }
                }
                // Closed by the server (its timeoutSeconds, or shutting down), or broken:
                // reopened from the last version; an outage shows when that fails.
                Ok(None) | Err(_) => break,
            }
        }
    }
}

/// Whether a watch line is an ERROR event (the server refusing the watch's version).
fn is_error(line: &[u8]) -> bool {
    serde_json::from_slice::<RawEvent>(line).is_ok_and(|e| e.kind == "ERROR")
}

enum Reopened {
    Watching(super::request::WatchStream),
    Listed(Vec<Value>, String),
}

fn back_after(conn: &Conn, gone: Duration) -> String {
    format!("the API server at {} is back after {:.0}s", conn.server(), gone.as_secs_f64().max(1.0))
}

/// Lists afresh, hands the items over, and returns the resourceVersion to watch from.
async fn relist(conn: &Conn, f: &Follow<'_>, handle: &mut impl FnMut(Event) -> Result<()>) -> Result<String> {
    let listed = list(conn, f).await?;
    handle(Event::Listed(listed.items))?;
    Ok(listed.resource_version)
}

/// The collection as it is now, in the list form of what the watch asks for.
async fn list(conn: &Conn, f: &Follow<'_>) -> Result<super::list::Listed<Value>, RequestError> {
    let accept = if f.accept == Accept::Json { Accept::Json } else { Accept::MetadataList };
    list_all::<Value>(conn, f.collection, f.query, accept).await
}
